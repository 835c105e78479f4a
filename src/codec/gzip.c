/* gzip.c — numcodecs "gzip": gzip-format (RFC 1952) data as Python's GzipFile reads it: one or
 * more members back to back, each checked against its CRC-32 and length, optionally followed
 * by zero padding; anything else after a member is an error.
 *
 * Encoding writes one member as numcodecs' GzipFile(fileobj=BytesIO(), compresslevel=level)
 * does (Python 3.11): header 1f 8b 08, no flags (a BytesIO has no file name), mtime, XFL 2 at
 * level 9 and 4 at level 1 (else 0), OS 255; raw deflate (compressobj's compress() then
 * flush()); CRC-32 and size modulo 2^32, little-endian. The one difference: mtime is 0, where
 * GzipFile writes the current time, so equal chunks give equal bytes. */
#include <limits.h>
#include <string.h>
#include <zlib.h>

#include "codec_impl.h"

typedef struct gzip_codec {
    zf_codec base;
    int level; /* for encoding */
} gzip_codec;

/* Every member into out[0..cap), *done bytes; total: out_len for messages, or
 * ZF_SIZE_UNKNOWN (decode_bounded). On "more than cap" *done is SIZE_MAX. */
static zf_status gzip_members(const uint8_t *in, size_t in_len, uint8_t *out, size_t cap,
                              size_t total, size_t *done, zf_err *err)
{
    size_t pos = 0;
    *done = 0;
    if (in_len == 0)
        return zf_codec_too_short(err, "gzip", 0, total);
    while (pos < in_len) {
        size_t used = 0, produced = 0;
        zf_status st = zf_inflate_stream("gzip", 31, in + pos, in_len - pos, out + *done,
                                         cap - *done, *done, total, &used, &produced, err);
        if (st != ZF_OK) {
            if (produced == SIZE_MAX)
                *done = SIZE_MAX;
            return st;
        }
        if (used == 0) /* cannot happen with a real member; never loop forever */
            return zf_fail(err, ZF_ERR_CORRUPT, "gzip: empty member");
        pos += used;
        *done += produced;
        while (pos < in_len && in[pos] == 0) /* zero padding after a member */
            pos++;
    }
    return ZF_OK;
}

static zf_status gzip_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                             size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    (void)c;
    (void)decoded;
    if (zf_fast_inflate(true, in, in_len, out, out_len))
        return ZF_OK;
    size_t done;
    zf_status st = gzip_members(in, in_len, out, out_len, out_len, &done, err);
    if (st == ZF_OK && done != out_len)
        return zf_codec_too_short(err, "gzip", done, out_len);
    return st;
}

static zf_status gzip_decode_bounded(const zf_codec *c, const uint8_t *in, size_t in_len,
                                     uint8_t *out, size_t cap, size_t *produced, zf_err *err)
{
    (void)c;
    return gzip_members(in, in_len, out, cap, ZF_SIZE_UNKNOWN, produced, err);
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static zf_status gzip_encode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                             size_t in_len, unsigned flags, uint8_t **out, size_t *out_len,
                             zf_err *err)
{
    (void)decoded;
    (void)flags;
    const gzip_codec *g = (const gzip_codec *)c;
    uint8_t *buf;
    size_t n;
    zf_status st = zf_deflate_stream("gzip", g->level, -15, false, in, in_len, 10, 8, &buf, &n,
                                     err);
    if (st != ZF_OK)
        return st;
    static const uint8_t head[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
    memcpy(buf, head, sizeof head);
    buf[8] = g->level == 9 ? 2 : g->level == 1 ? 4 : 0;
    uLong crc = crc32(0, Z_NULL, 0);
    for (size_t done = 0; done < in_len;) {
        uInt k = in_len - done < UINT_MAX ? (uInt)(in_len - done) : UINT_MAX;
        crc = crc32(crc, in + done, k);
        done += k;
    }
    put_le32(buf + 10 + n, (uint32_t)crc);
    put_le32(buf + 14 + n, (uint32_t)in_len);
    *out = buf;
    *out_len = n + 18;
    return ZF_OK;
}

static const zf_codec_ops gzip_ops = {
    .name = "gzip",
    .kind = ZF_CODEC_BYTES_TO_BYTES,
    .resolve = zf_resolve_compressed,
    .decode = gzip_decode,
    .destroy = zf_codec_destroy_plain,
    .encode = gzip_encode,
    .decode_bounded = gzip_decode_bounded,
};

zf_status zf_codec_gzip_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    long long level;
    zf_status st = zf_cfg_int(cfg, "gzip", "level", false, true, 1, -1, 9, &level, err);
    if (st != ZF_OK)
        return st;
    gzip_codec *g = zf_codec_alloc(sizeof *g, &gzip_ops);
    if (!g)
        return ZF_ERR_NOMEM;
    g->level = (int)level;
    *out = &g->base;
    return ZF_OK;
}
