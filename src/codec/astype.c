/* astype.c — numcodecs "astype": elements stored as encode_dtype, decoded with NumPy's
 * enc.astype(decode_dtype) and encoded with dec.astype(encode_dtype) (numeric casts as
 * zf_dtype_store does them). */
#include "codec_impl.h"

static const zf_codec_ops astype_ops = {
    .name = "astype",
    .kind = ZF_CODEC_ARRAY_TO_ARRAY,
    .resolve = zf_dtype_filter_resolve,
    .decode = zf_dtype_filter_cast_decode,
    .destroy = zf_codec_destroy_plain,
    .decoded_size = zf_dtype_filter_decoded_size,
    .encode = zf_dtype_filter_cast_encode,
};

zf_status zf_codec_astype_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    zf_dtype enc, dec;
    zf_status st;
    if ((st = zf_cfg_dtype(cfg, "astype", "encode_dtype", true, NULL, &enc, err)) ||
        (st = zf_cfg_dtype(cfg, "astype", "decode_dtype", true, NULL, &dec, err)))
        return st;
    char a[32], b[32];
    if (enc.kind == 'O' || dec.kind == 'O')
        return zf_fail(err, ZF_ERR_UNSUPPORTED, "astype: object arrays are not supported");
    if (!zf_dtype_castable(&enc, &dec) || enc.itemsize == 0 || dec.itemsize == 0)
        return zf_fail(err, ZF_ERR_UNSUPPORTED, "astype: cannot convert %s to %s",
                       zf_dtype_str(&enc, a), zf_dtype_str(&dec, b));
    zf_dtype_filter *f = zf_codec_alloc(sizeof *f, &astype_ops);
    if (!f)
        return ZF_ERR_NOMEM;
    f->enc = enc;
    f->dec = dec;
    *out = &f->base;
    return ZF_OK;
}
