/* quantize.c — numcodecs "quantize": a lossy filter whose encoding rounds floating-point values
 * to `digits` decimal digits (in binary); decoding only casts astype back to dtype.
 *
 * Encoding, as numcodecs computes it: precision = 10.0 ** -digits; exp = log(precision) /
 * log(10) (Python's math.log(x, 10)), floored when negative, else ceiled; bits =
 * ceil(log(10.0 ** -exp) / log(2)); scale = 2.0 ** bits; enc = np.around(scale * arr) / scale
 * in the type NumPy 1.24 gives `dtype array * Python float scale` (float16 data stays float16
 * while scale < 65000), then astype. */
#include <math.h>

#include "codec_impl.h"

typedef struct quantize_codec {
    zf_dtype_filter f; /* dec = dtype, enc = astype */
    int digits;        /* for encoding */
} quantize_codec;

/* numcodecs' scale for `digits`; false where Python fails (10.0 ** -digits overflows, or is 0 so
 * the logarithm is undefined). */
static bool quantize_scale(int digits, double *scale)
{
    double precision = pow(10.0, -(double)digits);
    if (!isfinite(precision) || precision <= 0)
        return false;
    double e = log(precision) / log(10.0);
    double exp10 = e < 0 ? floor(e) : ceil(e);
    double p2 = pow(10.0, -exp10);
    if (!isfinite(p2) || p2 <= 0)
        return false;
    double bits = ceil(log(p2) / log(2.0));
    *scale = pow(2.0, bits);
    return isfinite(*scale) && *scale > 0;
}

static zf_status quantize_encode(const zf_codec *c, const zf_chunk_repr *decoded,
                                 const uint8_t *in, size_t in_len, unsigned flags, uint8_t **out,
                                 size_t *out_len, zf_err *err)
{
    (void)decoded;
    (void)flags;
    const quantize_codec *q = (const quantize_codec *)c;
    double scale;
    if (!quantize_scale(q->digits, &scale))
        return zf_fail(err, ZF_ERR_INVALID, "quantize: \"digits\": %d is out of range",
                       q->digits);
    size_t n;
    zf_status st = zf_dtype_filter_encode_count(c, in_len, &n, err);
    if (st != ZF_OK)
        return st;
    uint8_t *o = zf_enc_alloc(n * q->f.enc.itemsize);
    if (!o)
        return ZF_ERR_NOMEM;
    zf_dtype t;
    zf_dtype_promote_scalar(&q->f.dec, scale, false, &t);
    zf_num s = zf_num_cast(&t, (zf_num){.kind = 'f', .v.f = scale});
    for (size_t i = 0; i < n; i++) {
        zf_num x = zf_num_cast(&t, zf_dtype_load(&q->f.dec, in, i));
        zf_num v = zf_num_rint(&t, zf_num_arith(&t, '*', s, x));
        zf_dtype_store(&q->f.enc, o, i, zf_num_arith(&t, '/', v, s));
    }
    *out = o;
    *out_len = n * q->f.enc.itemsize;
    return ZF_OK;
}

static const zf_codec_ops quantize_ops = {
    .name = "quantize",
    .kind = ZF_CODEC_ARRAY_TO_ARRAY,
    .resolve = zf_dtype_filter_resolve,
    .decode = zf_dtype_filter_cast_decode,
    .destroy = zf_codec_destroy_plain,
    .decoded_size = zf_dtype_filter_decoded_size,
    .encode = quantize_encode,
};

zf_status zf_codec_quantize_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    long long digits;
    zf_dtype dtype, astype;
    zf_status st;
    if ((st = zf_cfg_int(cfg, "quantize", "digits", true, false, 0, -1000, 1000, &digits, err)) ||
        (st = zf_cfg_dtype(cfg, "quantize", "dtype", true, NULL, &dtype, err)) ||
        (st = zf_cfg_dtype(cfg, "quantize", "astype", false, &dtype, &astype, err)))
        return st;
    if (dtype.kind != 'f' || astype.kind != 'f')
        return zf_fail(err, ZF_ERR_INVALID,
                       "quantize: \"%s\": only floating-point data types are supported",
                       dtype.kind != 'f' ? "dtype" : "astype");
    quantize_codec *q = zf_codec_alloc(sizeof *q, &quantize_ops);
    if (!q)
        return ZF_ERR_NOMEM;
    q->f.dec = dtype;
    q->f.enc = astype;
    q->digits = (int)digits;
    *out = &q->f.base;
    return ZF_OK;
}
