/* packbits.c — numcodecs "packbits": booleans packed eight to a byte, most significant bit
 * first (np.packbits), after one byte giving the number of padding bits in the last byte.
 * Decodes to bytes 0/1; encodes any non-zero byte as a set bit, as np.packbits does. */
#include "codec_impl.h"

static zf_status packbits_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                                  zf_chunk_repr *encoded, zf_err *err)
{
    (void)c;
    (void)err;
    size_t n = decoded->nbytes;
    zf_repr_bytes(encoded, n == ZF_SIZE_UNKNOWN ? n : 1 + n / 8 + (n % 8 != 0));
    return ZF_OK;
}

/* Booleans in in[0..in_len), as NumPy computes dec[:-pad] (never negative). */
static size_t unpacked_count(const uint8_t *in, size_t in_len)
{
    size_t bits = (in_len - 1) * 8, pad = in[0];
    return bits > pad ? bits - pad : 0;
}

static zf_status packbits_size(const zf_codec *c, const uint8_t *in, size_t in_len,
                               size_t *out_len, zf_err *err)
{
    (void)c;
    if (in_len == 0 || in_len - 1 > SIZE_MAX / 8)
        return zf_fail(err, ZF_ERR_CORRUPT, "packbits: %zu bytes is not packed data", in_len);
    *out_len = unpacked_count(in, in_len);
    return ZF_OK;
}

static zf_status packbits_decode(const zf_codec *c, const zf_chunk_repr *decoded,
                                 const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len,
                                 zf_err *err)
{
    (void)c;
    (void)decoded;
    if (in_len == 0 || in_len - 1 > SIZE_MAX / 8)
        return zf_fail(err, ZF_ERR_CORRUPT, "packbits: %zu bytes is not packed data", in_len);
    size_t n = unpacked_count(in, in_len);
    if (n != out_len)
        return zf_fail(err, ZF_ERR_CORRUPT, "packbits: data holds %zu booleans, expected %zu", n,
                       out_len);
    const uint8_t *p = in + 1;
    size_t k = 0;
    for (; k + 8 <= n; k += 8) {
        uint8_t b = p[k / 8];
        for (int j = 0; j < 8; j++)
            out[k + (size_t)j] = (b >> (7 - j)) & 1;
    }
    for (; k < n; k++)
        out[k] = (p[k / 8] >> (7 - k % 8)) & 1;
    return ZF_OK;
}

static zf_status packbits_encode(const zf_codec *c, const zf_chunk_repr *decoded,
                                 const uint8_t *in, size_t in_len, unsigned flags, uint8_t **out,
                                 size_t *out_len, zf_err *err)
{
    (void)c;
    (void)decoded;
    (void)flags;
    (void)err;
    size_t nbytes = in_len / 8 + (in_len % 8 != 0);
    uint8_t *o = zf_enc_alloc(1 + nbytes);
    if (!o)
        return ZF_ERR_NOMEM;
    o[0] = (uint8_t)(in_len % 8 ? 8 - in_len % 8 : 0);
    for (size_t k = 0; k < nbytes; k++) {
        uint8_t v = 0;
        for (size_t j = 0; j < 8 && 8 * k + j < in_len; j++)
            v |= (uint8_t)((in[8 * k + j] != 0) << (7 - j));
        o[1 + k] = v;
    }
    *out = o;
    *out_len = 1 + nbytes;
    return ZF_OK;
}

static const zf_codec_ops packbits_ops = {
    .name = "packbits",
    .kind = ZF_CODEC_ARRAY_TO_ARRAY,
    .resolve = packbits_resolve,
    .decode = packbits_decode,
    .destroy = zf_codec_destroy_plain,
    .decoded_size = packbits_size,
    .encode = packbits_encode,
};

zf_status zf_codec_packbits_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    (void)cfg;
    (void)err;
    zf_codec *c = zf_codec_alloc(sizeof *c, &packbits_ops);
    if (!c)
        return ZF_ERR_NOMEM;
    *out = c;
    return ZF_OK;
}
