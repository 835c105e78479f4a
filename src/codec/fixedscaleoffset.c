/* fixedscaleoffset.c — numcodecs "fixedscaleoffset": stored = round((x - offset) * scale) as
 * astype; decoding is numcodecs' (enc / scale + offset).astype(dtype) under NumPy 1.24's
 * value-based casting:
 *   - integer or bool astype: true division gives float64, so all arithmetic is float64;
 *   - float astype: a Python scalar only widens the array's type by the smallest type holding
 *     its value (np.min_scalar_type: ints by range as u1/i1..u8/i8, floats as f2 below 65000,
 *     f4 below 3.4e38, else f8), so float16 data divided by 10 stays float16, by 300 becomes
 *     float32. The division and the addition are promoted separately, in that order.
 *
 * Encoding is numcodecs' np.around((arr - offset) * scale).astype(astype), arr of dtype, under
 * the same rules (zf_dtype_promote_scalar): the subtraction happens in the type of `dtype
 * array - offset`, the multiplication in the type of `that - scale` — so an integer dtype with
 * integer offset and scale stays integer and wraps, a bool or integer one meeting a float
 * becomes float64, float16 data stays float16 with small scalars; np.around rounds half to even
 * (integers unchanged) and astype casts. */
#include <math.h>
#include <string.h>

#include "codec_impl.h"

typedef struct fso_codec {
    zf_dtype_filter f;      /* dec = dtype, enc = astype */
    bool scale_int, offset_int; /* written as integers (NumPy's value-based casting) */
    zf_dtype sub_t, mul_t;  /* encoding: types of arr - offset and of (...) * scale */
    double scale, offset;   /* as configured, for encoding */
    int div_size, add_size; /* float size (2, 4, 8) of the division and of the addition */
    double scale_r, offset_r; /* scale rounded to div_size, offset to add_size */
} fso_codec;

static double round_to(int size, double v)
{
    if (size == 2)
        return zf_half_to_float(zf_double_to_half(v));
    if (size == 4)
        return (float)v;
    return v;
}

/* Float size NumPy 1.24 gives `float array of size s` OP `Python scalar v`. */
static int promote_scalar(int s, double v, bool is_int)
{
    int need;
    if (!is_int) {
        if ((v > -65000 && v < 65000) || !isfinite(v))
            need = 2;
        else if (v > -3.4e38 && v < 3.4e38)
            need = 4;
        else
            need = 8;
    } else {
        double a = v < 0 ? -v - 1 : v; /* magnitude the integer type must hold */
        int bytes = a < 128 || (v >= 0 && a < 256)        ? 1
                    : a < 32768 || (v >= 0 && a < 65536) ? 2
                    : a < 2147483648.0 || (v >= 0 && a < 4294967296.0) ? 4
                                                                        : 8;
        need = bytes == 1 ? 2 : bytes == 2 ? 4 : 8;
    }
    return need > s ? need : s;
}

static zf_status fso_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                            size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    (void)decoded;
    const fso_codec *k = (const fso_codec *)c;
    size_t n;
    zf_status st = zf_dtype_filter_count(c, in_len, out_len, &n, err);
    if (st != ZF_OK)
        return st;
    for (size_t i = 0; i < n; i++) {
        zf_num v = zf_dtype_load(&k->f.enc, in, i);
        double x = v.kind == 'f' ? v.v.f : v.kind == 'u' ? (double)v.v.u : (double)v.v.i;
        double q, r;
        switch (k->div_size) {
        case 2: q = round_to(2, (float)x / (float)k->scale_r); break;
        case 4: q = (float)((float)x / (float)k->scale_r); break;
        default: q = x / k->scale_r; break;
        }
        switch (k->add_size) {
        case 2: r = round_to(2, (float)q + (float)k->offset_r); break;
        case 4: r = (float)((float)q + (float)k->offset_r); break;
        default: r = q + k->offset_r; break;
        }
        zf_dtype_store(&k->f.dec, out, i, (zf_num){.kind = 'f', .v.f = r});
    }
    return ZF_OK;
}

/* A configuration number as a value: integers as such where 64 bits hold them. */
static zf_num scalar(double v, bool is_int)
{
    if (is_int && v >= -9223372036854775808.0 && v < 9223372036854775808.0)
        return (zf_num){.kind = 'i', .v.i = (int64_t)v};
    if (is_int && v >= 0 && v < 18446744073709551616.0)
        return (zf_num){.kind = 'u', .v.u = (uint64_t)v};
    return (zf_num){.kind = 'f', .v.f = v};
}

static zf_status fso_encode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                            size_t in_len, unsigned flags, uint8_t **out, size_t *out_len,
                            zf_err *err)
{
    (void)decoded;
    (void)flags;
    const fso_codec *k = (const fso_codec *)c;
    size_t n;
    zf_status st = zf_dtype_filter_encode_count(c, in_len, &n, err);
    if (st != ZF_OK)
        return st;
    uint8_t *o = zf_enc_alloc(n * k->f.enc.itemsize);
    if (!o)
        return ZF_ERR_NOMEM;
    /* The scalars as NumPy converts them to each loop's type. */
    zf_num off = scalar(k->offset, k->offset_int), scl = scalar(k->scale, k->scale_int);
    off = zf_num_cast(&k->sub_t, off);
    scl = zf_num_cast(&k->mul_t, scl);
    for (size_t i = 0; i < n; i++) {
        zf_num x = zf_num_cast(&k->sub_t, zf_dtype_load(&k->f.dec, in, i));
        zf_num v = zf_num_cast(&k->mul_t, zf_num_arith(&k->sub_t, '-', x, off));
        v = zf_num_rint(&k->mul_t, zf_num_arith(&k->mul_t, '*', v, scl));
        zf_dtype_store(&k->f.enc, o, i, v);
    }
    *out = o;
    *out_len = n * k->f.enc.itemsize;
    return ZF_OK;
}

static const zf_codec_ops fso_ops = {
    .name = "fixedscaleoffset",
    .kind = ZF_CODEC_ARRAY_TO_ARRAY,
    .resolve = zf_dtype_filter_resolve,
    .decode = fso_decode,
    .destroy = zf_codec_destroy_plain,
    .decoded_size = zf_dtype_filter_decoded_size,
    .encode = fso_encode,
};

zf_status zf_codec_fixedscaleoffset_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    const char *name = "fixedscaleoffset";
    double scale, offset;
    bool scale_int, offset_int;
    zf_dtype dtype, astype;
    zf_status st;
    if ((st = zf_cfg_number(cfg, name, "offset", true, 0, &offset, &offset_int, err)) ||
        (st = zf_cfg_number(cfg, name, "scale", true, 1, &scale, &scale_int, err)) ||
        (st = zf_cfg_dtype(cfg, name, "dtype", true, NULL, &dtype, err)) ||
        (st = zf_cfg_dtype(cfg, name, "astype", false, &dtype, &astype, err)))
        return st;
    char a[32], b[32];
    if (dtype.kind == 'O' || astype.kind == 'O')
        return zf_fail(err, ZF_ERR_UNSUPPORTED, "%s: object arrays are not supported", name);
    if (!strchr("biuf", dtype.kind) || !strchr("biuf", astype.kind))
        return zf_fail(err, ZF_ERR_UNSUPPORTED, "%s: cannot scale %s values into %s", name,
                       zf_dtype_str(&astype, a), zf_dtype_str(&dtype, b));
    fso_codec *k = zf_codec_alloc(sizeof *k, &fso_ops);
    if (!k)
        return ZF_ERR_NOMEM;
    k->f.dec = dtype;
    k->f.enc = astype;
    k->scale = scale;
    k->offset = offset;
    k->scale_int = scale_int;
    k->offset_int = offset_int;
    zf_dtype_promote_scalar(&dtype, offset, offset_int, &k->sub_t);
    zf_dtype_promote_scalar(&k->sub_t, scale, scale_int, &k->mul_t);
    if (astype.kind == 'f') {
        k->div_size = promote_scalar((int)astype.itemsize, scale, scale_int);
        k->add_size = promote_scalar(k->div_size, offset, offset_int);
    } else {
        k->div_size = k->add_size = 8;
    }
    k->scale_r = round_to(k->div_size, scale);
    k->offset_r = round_to(k->add_size, offset);
    *out = &k->f.base;
    return ZF_OK;
}
