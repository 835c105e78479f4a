/* base64.c — numcodecs "base64": standard base64 text, decoded as Python's
 * base64.standard_b64decode (binascii.a2b_base64, non-strict): characters outside the alphabet
 * are skipped, a complete pad ends the data, an incomplete final group is an error. Encoding is
 * base64.standard_b64encode: one line, '=' padding. */
#include "codec_impl.h"
#include "zarrfs/json.h"

/* Decode with the shared Python-compatible decoder, saying what went wrong. */
static zf_status b64_run(const uint8_t *in, size_t in_len, uint8_t *out, size_t cap,
                         size_t *produced, zf_err *err)
{
    zf_status st = zf_base64_decode_into(in, in_len, out, cap, produced);
    if (st == ZF_ERR_CORRUPT)
        return zf_codec_too_long(err, "base64", cap);
    if (st != ZF_OK)
        return zf_fail(err, ZF_ERR_CORRUPT, "base64: incomplete final group or padding");
    return ZF_OK;
}

static zf_status base64_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                                zf_chunk_repr *encoded, zf_err *err)
{
    (void)c;
    size_t n = decoded->nbytes;
    if (n == ZF_SIZE_UNKNOWN) {
        zf_repr_bytes(encoded, n);
        return ZF_OK;
    }
    if (n / 3 >= SIZE_MAX / 4 - 1)
        return zf_fail(err, ZF_ERR_INVALID, "base64: chunk too large");
    zf_repr_bytes(encoded, (n + 2) / 3 * 4);
    return ZF_OK;
}

static zf_status base64_size(const zf_codec *c, const uint8_t *in, size_t in_len,
                             size_t *out_len, zf_err *err)
{
    (void)c;
    return b64_run(in, in_len, NULL, 0, out_len, err);
}

static zf_status base64_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                               size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    (void)c;
    (void)decoded;
    size_t n;
    zf_status st = b64_run(in, in_len, out, out_len, &n, err);
    if (st != ZF_OK)
        return st;
    if (n != out_len)
        return zf_codec_too_short(err, "base64", n, out_len);
    return ZF_OK;
}

static zf_status base64_encode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                               size_t in_len, unsigned flags, uint8_t **out, size_t *out_len,
                               zf_err *err)
{
    (void)c;
    (void)decoded;
    (void)flags;
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (in_len / 3 >= SIZE_MAX / 4 - 1)
        return zf_fail(err, ZF_ERR_INVALID, "base64: chunk too large");
    size_t n = (in_len + 2) / 3 * 4;
    uint8_t *o = zf_enc_alloc(n);
    if (!o)
        return ZF_ERR_NOMEM;
    uint8_t *p = o;
    size_t i = 0;
    for (; i + 3 <= in_len; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        *p++ = (uint8_t)alphabet[v >> 18];
        *p++ = (uint8_t)alphabet[(v >> 12) & 63];
        *p++ = (uint8_t)alphabet[(v >> 6) & 63];
        *p++ = (uint8_t)alphabet[v & 63];
    }
    if (i < in_len) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < in_len ? (uint32_t)in[i + 1] << 8 : 0);
        *p++ = (uint8_t)alphabet[v >> 18];
        *p++ = (uint8_t)alphabet[(v >> 12) & 63];
        *p++ = i + 1 < in_len ? (uint8_t)alphabet[(v >> 6) & 63] : '=';
        *p++ = '=';
    }
    *out = o;
    *out_len = n;
    return ZF_OK;
}

static const zf_codec_ops base64_ops = {
    .name = "base64",
    .kind = ZF_CODEC_BYTES_TO_BYTES,
    .resolve = base64_resolve,
    .decode = base64_decode,
    .destroy = zf_codec_destroy_plain,
    .decoded_size = base64_size,
    .encode = base64_encode,
};

zf_status zf_codec_base64_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    (void)cfg;
    (void)err;
    zf_codec *c = zf_codec_alloc(sizeof *c, &base64_ops);
    if (!c)
        return ZF_ERR_NOMEM;
    *out = c;
    return ZF_OK;
}
