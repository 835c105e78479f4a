/* bitround.c — numcodecs "bitround": a lossy filter whose encoding rounds floating-point
 * mantissas to `keepbits` bits in place; decoding is the identity. */
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

static const zf_codec_ops bitround_ops = {
    .name = "bitround",
    .kind = ZF_CODEC_ARRAY_TO_ARRAY,
    .resolve = bitround_resolve,
    .decode = bitround_decode,
    .destroy = zf_codec_destroy_plain,
    .decoded_size = bitround_size,
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
