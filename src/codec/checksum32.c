/* checksum32.c — numcodecs' Checksum32 codecs "crc32" and "adler32" (zlib's checksums), and the
 * machinery they share with crc32c.c, fletcher32.c and jenkins_lookup3.c: the payload with a
 * 4-byte little-endian checksum before it (numcodecs' default for crc32/adler32, "location":
 * "start") or after it ("end"). A mismatch is ZF_ERR_CORRUPT. Encoding writes the same layout. */
#include <string.h>
#include <zlib.h>

#include "codec_impl.h"

zf_status zf_checksum_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                              zf_chunk_repr *encoded, zf_err *err)
{
    size_t n = decoded->nbytes;
    if (n != ZF_SIZE_UNKNOWN && n > SIZE_MAX - 5)
        return zf_fail(err, ZF_ERR_INVALID, "%s: chunk too large", c->ops->name);
    zf_repr_bytes(encoded, n == ZF_SIZE_UNKNOWN ? n : n + 4);
    return ZF_OK;
}

zf_status zf_checksum_decoded_size(const zf_codec *c, const uint8_t *in, size_t in_len,
                                   size_t *out_len, zf_err *err)
{
    (void)in;
    if (in_len < 4)
        return zf_fail(err, ZF_ERR_CORRUPT, "%s: %zu bytes, too short for a checksum",
                       c->ops->name, in_len);
    *out_len = in_len - 4;
    return ZF_OK;
}

zf_status zf_checksum_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                             size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    (void)decoded;
    const zf_checksum_codec *k = (const zf_checksum_codec *)c;
    const char *name = c->ops->name;
    if (in_len < 4)
        return zf_fail(err, ZF_ERR_CORRUPT, "%s: %zu bytes, too short for a checksum", name,
                       in_len);
    if (in_len - 4 != out_len)
        return zf_fail(err, ZF_ERR_CORRUPT, "%s: payload of %zu bytes, expected %zu", name,
                       in_len - 4, out_len);
    const uint8_t *sum = k->at_end ? in + out_len : in, *payload = k->at_end ? in : in + 4;
    uint32_t stored = (uint32_t)sum[0] | (uint32_t)sum[1] << 8 | (uint32_t)sum[2] << 16 |
                      (uint32_t)sum[3] << 24;
    uint32_t computed = k->fn(c, payload, out_len);
    if (stored != computed)
        return zf_fail(err, ZF_ERR_CORRUPT,
                       "%s: checksum mismatch (stored 0x%08x, computed 0x%08x)", name, stored,
                       computed);
    if (out_len)
        memcpy(out, payload, out_len);
    return ZF_OK;
}

zf_status zf_checksum_encode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                             size_t in_len, unsigned flags, uint8_t **out, size_t *out_len,
                             zf_err *err)
{
    (void)decoded;
    (void)flags;
    const zf_checksum_codec *k = (const zf_checksum_codec *)c;
    if (in_len > SIZE_MAX - 5)
        return zf_fail(err, ZF_ERR_INVALID, "%s: chunk too large", c->ops->name);
    uint8_t *o = malloc(in_len + 4);
    if (!o)
        return ZF_ERR_NOMEM;
    uint8_t *sum = k->at_end ? o + in_len : o, *payload = k->at_end ? o : o + 4;
    uint32_t v = k->fn(c, in, in_len);
    for (int i = 0; i < 4; i++)
        sum[i] = (uint8_t)(v >> (8 * i));
    if (in_len)
        memcpy(payload, in, in_len);
    *out = o;
    *out_len = in_len + 4;
    return ZF_OK;
}

zf_status zf_checksum_codec_new(yajl_val cfg, const zf_codec_ops *ops, zf_checksum_fn fn,
                                bool at_end, zf_codec **out, zf_err *err)
{
    const char *loc;
    zf_status st = zf_cfg_string(cfg, ops->name, "location", false, &loc, err);
    if (st != ZF_OK)
        return st;
    if (loc) {
        if (strcmp(loc, "start") && strcmp(loc, "end"))
            return zf_fail(err, ZF_ERR_INVALID, "%s: \"location\": expected \"start\" or \"end\"",
                           ops->name);
        at_end = loc[0] == 'e';
    }
    zf_checksum_codec *k = zf_checksum_codec_alloc(sizeof *k, ops, fn, at_end);
    if (!k)
        return ZF_ERR_NOMEM;
    *out = &k->base;
    return ZF_OK;
}

zf_checksum_codec *zf_checksum_codec_alloc(size_t size, const zf_codec_ops *ops,
                                           zf_checksum_fn fn, bool at_end)
{
    zf_checksum_codec *k = zf_codec_alloc(size, ops);
    if (k) {
        k->fn = fn;
        k->at_end = at_end;
    }
    return k;
}

static uint32_t crc32_fn(const zf_codec *c, const uint8_t *buf, size_t len)
{
    (void)c;
    return (uint32_t)crc32_z(0, buf, len);
}

static uint32_t adler32_fn(const zf_codec *c, const uint8_t *buf, size_t len)
{
    (void)c;
    return (uint32_t)adler32_z(1, buf, len);
}

static const zf_codec_ops crc32_ops = {
    .name = "crc32",
    .kind = ZF_CODEC_BYTES_TO_BYTES,
    .resolve = zf_checksum_resolve,
    .decode = zf_checksum_decode,
    .destroy = zf_codec_destroy_plain,
    .decoded_size = zf_checksum_decoded_size,
    .encode = zf_checksum_encode,
};

static const zf_codec_ops adler32_ops = {
    .name = "adler32",
    .kind = ZF_CODEC_BYTES_TO_BYTES,
    .resolve = zf_checksum_resolve,
    .decode = zf_checksum_decode,
    .destroy = zf_codec_destroy_plain,
    .decoded_size = zf_checksum_decoded_size,
    .encode = zf_checksum_encode,
};

zf_status zf_codec_crc32_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    return zf_checksum_codec_new(cfg, &crc32_ops, crc32_fn, false, out, err);
}

zf_status zf_codec_adler32_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    return zf_checksum_codec_new(cfg, &adler32_ops, adler32_fn, false, out, err);
}
