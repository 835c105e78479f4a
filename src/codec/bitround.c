/* bitround.c — numcodecs "bitround": a lossy filter whose encoding rounds floating-point
 * mantissas to `keepbits` bits in place; decoding is the identity.
 *
 * Encoding follows numcodecs: the array (float16/32/64, either byte order) is viewed as signed
 * integers b of its width; with m = mantissa bits - keepbits, b += ((b >> m) & 1) +
 * (1 << (m - 1)) - 1, then b &= -1 << m (round to nearest, ties to even, carrying into the
 * exponent; integer addition wraps). keepbits equal to the mantissa bits leaves the data as is,
 * more is an error. */
#include <limits.h>
#include <string.h>

#include "codec_impl.h"

typedef struct bitround_codec {
    zf_codec base;
    int keepbits; /* for encoding */
} bitround_codec;

static zf_status bitround_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                                  zf_chunk_repr *encoded, zf_err *err)
{
    (void)c;
    (void)err;
    *encoded = *decoded;
    return ZF_OK;
}

static zf_status bitround_size(const zf_codec *c, const uint8_t *in, size_t in_len,
                               size_t *out_len, zf_err *err)
{
    (void)c;
    (void)in;
    (void)err;
    *out_len = in_len;
    return ZF_OK;
}

static zf_status bitround_decode(const zf_codec *c, const zf_chunk_repr *decoded,
                                 const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len,
                                 zf_err *err)
{
    (void)c;
    (void)decoded;
    if (in_len != out_len)
        return zf_fail(err, ZF_ERR_CORRUPT, "bitround: %zu bytes, expected %zu", in_len,
                       out_len);
    if (out_len)
        memcpy(out, in, out_len);
    return ZF_OK;
}

static zf_status bitround_encode(const zf_codec *c, const zf_chunk_repr *decoded,
                                 const uint8_t *in, size_t in_len, unsigned flags, uint8_t **out,
                                 size_t *out_len, zf_err *err)
{
    (void)flags;
    const bitround_codec *b = (const bitround_codec *)c;
    const zf_dtype *dt = &decoded->dtype;
    size_t w = dt->itemsize;
    if (dt->kind != 'f' || (w != 2 && w != 4 && w != 8)) {
        char ts[32];
        return zf_fail(err, ZF_ERR_INVALID,
                       "bitround: only float arrays (16-64 bit) can be bit-rounded, not %s",
                       zf_dtype_str(dt, ts));
    }
    int bits = w == 2 ? 10 : w == 4 ? 23 : 52;
    if (b->keepbits > bits)
        return zf_fail(err, ZF_ERR_INVALID,
                       "bitround: \"keepbits\": %d is too large for float%zu (at most %d)",
                       b->keepbits, w * 8, bits);
    if (in_len % w)
        return zf_fail(err, ZF_ERR_INVALID,
                       "bitround: %zu bytes is not a whole number of %zu-byte elements", in_len,
                       w);
    uint8_t *o = zf_enc_alloc(in_len);
    if (!o)
        return ZF_ERR_NOMEM;
    if (in_len)
        memcpy(o, in, in_len);
    if (b->keepbits < bits) {
        unsigned m = (unsigned)(bits - b->keepbits);
        uint64_t width_mask = w == 8 ? UINT64_MAX : (UINT64_C(1) << (8 * w)) - 1;
        uint64_t mask = (UINT64_MAX << m) & width_mask;
        uint64_t half_quantum1 = (UINT64_C(1) << (m - 1)) - 1;
        bool big = dt->byteorder == '>';
        for (size_t i = 0; i < in_len / w; i++) {
            uint8_t *p = o + i * w;
            uint64_t v = 0;
            for (size_t k = 0; k < w; k++)
                v |= (uint64_t)p[big ? w - 1 - k : k] << (8 * k);
            v = (v + ((v >> m) & 1) + half_quantum1) & mask; /* wraps at the width: masked */
            for (size_t k = 0; k < w; k++)
                p[big ? w - 1 - k : k] = (uint8_t)(v >> (8 * k));
        }
    }
    *out = o;
    *out_len = in_len;
    return ZF_OK;
}

static const zf_codec_ops bitround_ops = {
    .name = "bitround",
    .kind = ZF_CODEC_ARRAY_TO_ARRAY,
    .resolve = bitround_resolve,
    .decode = bitround_decode,
    .destroy = zf_codec_destroy_plain,
    .decoded_size = bitround_size,
    .encode = bitround_encode,
};

zf_status zf_codec_bitround_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    long long keepbits;
    zf_status st =
        zf_cfg_int(cfg, "bitround", "keepbits", true, false, 0, 0, INT_MAX, &keepbits, err);
    if (st != ZF_OK)
        return st;
    bitround_codec *b = zf_codec_alloc(sizeof *b, &bitround_ops);
    if (!b)
        return ZF_ERR_NOMEM;
    b->keepbits = (int)keepbits;
    *out = &b->base;
    return ZF_OK;
}
