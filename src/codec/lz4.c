/* lz4.c — numcodecs "lz4": a 4-byte little-endian decoded size, then one LZ4 block. The size
 * must be the expected one; LZ4_decompress_safe never writes past the buffer it is given.
 * Encoding is numcodecs' LZ4_compress_fast with the acceleration (<= 0 meaning 1). */
#include <limits.h>
#include <lz4.h>

#include "codec_impl.h"

typedef struct lz4_codec {
    zf_codec base;
    int acceleration; /* for encoding */
} lz4_codec;

static zf_status lz4_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                            size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    (void)c;
    (void)decoded;
    if (in_len < 4)
        return zf_fail(err, ZF_ERR_CORRUPT, "lz4: %zu bytes, too short for the size header",
                       in_len);
    uint32_t size = (uint32_t)in[0] | (uint32_t)in[1] << 8 | (uint32_t)in[2] << 16 |
                    (uint32_t)in[3] << 24;
    if (size != out_len)
        return zf_fail(err, ZF_ERR_CORRUPT, "lz4: header says %u decoded bytes, expected %zu",
                       size, out_len);
    if (size > INT_MAX || in_len - 4 > INT_MAX)
        return zf_fail(err, ZF_ERR_CORRUPT, "lz4: block too large");
    int r = LZ4_decompress_safe((const char *)in + 4, (char *)out, (int)(in_len - 4), (int)size);
    if (r < 0)
        return zf_fail(err, ZF_ERR_CORRUPT,
                       "lz4: corrupt block (truncated, malformed or longer than %zu bytes)",
                       out_len);
    if ((size_t)r != out_len)
        return zf_codec_too_short(err, "lz4", (size_t)r, out_len);
    return ZF_OK;
}

/* The 4-byte size prefix (where the chain does not know the size, e.g. after gzip). */
static zf_status lz4_decoded_size(const zf_codec *c, const uint8_t *in, size_t in_len,
                                  size_t *out_len, zf_err *err)
{
    (void)c;
    if (in_len < 4)
        return zf_fail(err, ZF_ERR_CORRUPT, "lz4: %zu bytes, too short for the size header",
                       in_len);
    *out_len = (size_t)in[0] | (size_t)in[1] << 8 | (size_t)in[2] << 16 | (size_t)in[3] << 24;
    return ZF_OK;
}

static zf_status lz4_encode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                            size_t in_len, unsigned flags, uint8_t **out, size_t *out_len,
                            zf_err *err)
{
    (void)decoded;
    (void)flags;
    const lz4_codec *l = (const lz4_codec *)c;
    if (in_len > LZ4_MAX_INPUT_SIZE)
        return zf_fail(err, ZF_ERR_INVALID, "lz4: %zu bytes is more than one block can hold",
                       in_len);
    int bound = LZ4_compressBound((int)in_len);
    uint8_t *buf = zf_enc_alloc(4 + (size_t)bound);
    if (!buf)
        return ZF_ERR_NOMEM;
    for (int i = 0; i < 4; i++)
        buf[i] = (uint8_t)(in_len >> (8 * i));
    int r = LZ4_compress_fast((const char *)in, (char *)buf + 4, (int)in_len, bound,
                              l->acceleration <= 0 ? 1 : l->acceleration);
    /* An empty input compresses to one byte (a token for no literals). */
    if (r <= 0) {
        free(buf);
        return zf_fail(err, ZF_ERR_INVALID, "lz4: compression failed (%d)", r);
    }
    *out = buf;
    *out_len = 4 + (size_t)r;
    return ZF_OK;
}

static const zf_codec_ops lz4_ops = {
    .name = "lz4",
    .kind = ZF_CODEC_BYTES_TO_BYTES,
    .resolve = zf_resolve_compressed,
    .decode = lz4_decode,
    .destroy = zf_codec_destroy_plain,
    .encode = lz4_encode,
    .decoded_size = lz4_decoded_size,
};

zf_status zf_codec_lz4_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    long long accel;
    zf_status st = zf_cfg_int(cfg, "lz4", "acceleration", false, true, 1, INT_MIN, INT_MAX,
                              &accel, err);
    if (st != ZF_OK)
        return st;
    lz4_codec *l = zf_codec_alloc(sizeof *l, &lz4_ops);
    if (!l)
        return ZF_ERR_NOMEM;
    l->acceleration = (int)accel;
    *out = &l->base;
    return ZF_OK;
}
