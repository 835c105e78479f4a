/* quantize.c — numcodecs "quantize": a lossy filter whose encoding rounds floating-point values
 * to `digits` decimal digits (in binary); decoding only casts astype back to dtype. */
#include "codec_impl.h"

typedef struct quantize_codec {
    zf_dtype_filter f; /* dec = dtype, enc = astype */
    int digits;        /* for encoding */
} quantize_codec;

static const zf_codec_ops quantize_ops = {
    .name = "quantize",
    .kind = ZF_CODEC_ARRAY_TO_ARRAY,
    .resolve = zf_dtype_filter_resolve,
    .decode = zf_dtype_filter_cast_decode,
    .destroy = zf_codec_destroy_plain,
    .decoded_size = zf_dtype_filter_decoded_size,
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
