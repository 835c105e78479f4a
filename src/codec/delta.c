/* delta.c — numcodecs "delta": stored values are differences of adjacent elements (the first
 * element as is). Decoding is numcodecs' np.cumsum(enc, out=dec): NumPy 1.24 accumulates in
 * promote_types(astype, dtype) — integers wrap around, float32 sums in float32, booleans
 * or — and casts each running sum to dtype.
 *
 * Encoding is numcodecs' enc[0] = arr[0]; enc[1:] = np.diff(arr): differences computed in dtype
 * (integers wrap, floats at dtype's precision, booleans not_equal, timedeltas keep NaT), each
 * cast to astype. An empty chunk encodes to nothing (numcodecs itself fails on arr[0]). */
#include <string.h>

#include "codec_impl.h"

typedef struct delta_codec {
    zf_dtype_filter f; /* dec = dtype, enc = astype */
    zf_dtype loop;     /* the accumulator's type */
    bool fast;         /* astype == dtype, native byte order: typed loops */
} delta_codec;

static zf_num add(const zf_dtype *t, zf_num a, zf_num b)
{
    zf_num r = a;
    switch (t->kind) {
    case 'b': r.v.i = a.v.i || b.v.i; break;
    case 'f':
        if (t->itemsize == 2)
            r.v.f = zf_half_to_float(zf_float_to_half((float)a.v.f + (float)b.v.f));
        else if (t->itemsize == 4)
            r.v.f = (float)((float)a.v.f + (float)b.v.f);
        else
            r.v.f = a.v.f + b.v.f;
        break;
    case 'u': r.v.u = a.v.u + b.v.u; break;
    default: r.v.i = (int64_t)((uint64_t)a.v.i + (uint64_t)b.v.i); break;
    }
    /* Bring integers back into the loop type's range (wraparound). */
    return t->kind == 'f' || t->kind == 'b' ? r : zf_num_cast(t, r);
}

#define CUMSUM(T)                                                                                 \
    do {                                                                                          \
        T acc = 0, x;                                                                             \
        for (size_t i = 0; i < n; i++) {                                                          \
            memcpy(&x, in + i * sizeof(T), sizeof(T));                                            \
            acc = i ? (T)(acc + x) : x;                                                           \
            memcpy(out + i * sizeof(T), &acc, sizeof(T));                                         \
        }                                                                                         \
    } while (0)

static zf_status delta_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                              size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    (void)decoded;
    const delta_codec *d = (const delta_codec *)c;
    size_t n;
    zf_status st = zf_dtype_filter_count(c, in_len, out_len, &n, err);
    if (st != ZF_OK)
        return st;
    if (d->fast) {
        switch (d->f.dec.kind == 'f' ? d->f.dec.itemsize * 10 : d->f.dec.itemsize) {
        case 1: CUMSUM(uint8_t); return ZF_OK;
        case 2: CUMSUM(uint16_t); return ZF_OK;
        case 4: CUMSUM(uint32_t); return ZF_OK;
        case 8: CUMSUM(uint64_t); return ZF_OK;
        case 40: CUMSUM(float); return ZF_OK;
        case 80: CUMSUM(double); return ZF_OK;
        default: break;
        }
    }
    zf_num acc = {.kind = 'i'};
    for (size_t i = 0; i < n; i++) {
        zf_num x = zf_num_cast(&d->loop, zf_dtype_load(&d->f.enc, in, i));
        acc = i ? add(&d->loop, acc, x) : x;
        zf_dtype_store(&d->f.dec, out, i, acc);
    }
    return ZF_OK;
}

#define DIFF(T)                                                                                   \
    do {                                                                                          \
        T prev = 0, x;                                                                            \
        for (size_t i = 0; i < n; i++) {                                                          \
            memcpy(&x, in + i * sizeof(T), sizeof(T));                                            \
            T d = i ? (T)(x - prev) : x;                                                          \
            memcpy(o + i * sizeof(T), &d, sizeof(T));                                             \
            prev = x;                                                                             \
        }                                                                                         \
    } while (0)

static zf_status delta_encode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                              size_t in_len, unsigned flags, uint8_t **out, size_t *out_len,
                              zf_err *err)
{
    (void)decoded;
    (void)flags;
    const delta_codec *d = (const delta_codec *)c;
    size_t n;
    zf_status st = zf_dtype_filter_encode_count(c, in_len, &n, err);
    if (st != ZF_OK)
        return st;
    uint8_t *o = zf_enc_alloc(n * d->f.enc.itemsize);
    if (!o)
        return ZF_ERR_NOMEM;
    *out = o;
    *out_len = n * d->f.enc.itemsize;
    if (d->fast) {
        switch (d->f.dec.kind == 'f' ? d->f.dec.itemsize * 10 : d->f.dec.itemsize) {
        case 1: DIFF(uint8_t); return ZF_OK;
        case 2: DIFF(uint16_t); return ZF_OK;
        case 4: DIFF(uint32_t); return ZF_OK;
        case 8:
            if (d->f.dec.kind == 'm') /* NaT arithmetic below */
                break;
            DIFF(uint64_t);
            return ZF_OK;
        case 40: DIFF(float); return ZF_OK;
        case 80: DIFF(double); return ZF_OK;
        default: break;
        }
    }
    /* np.diff's type: dtype in native byte order. */
    zf_dtype t = d->f.dec;
    t.byteorder = t.itemsize > 1 ? '<' : '|';
    zf_num prev = {.kind = 'i'};
    for (size_t i = 0; i < n; i++) {
        zf_num x = zf_dtype_load(&d->f.dec, in, i), v = x;
        if (i) {
            if (t.kind == 'm' && (x.v.i == INT64_MIN || prev.v.i == INT64_MIN))
                v.v.i = INT64_MIN; /* NaT - x, x - NaT: NaT */
            else
                v = zf_num_arith(&t, '-', x, prev);
        }
        zf_dtype_store(&d->f.enc, o, i, v);
        prev = x;
    }
    return ZF_OK;
}

static const zf_codec_ops delta_ops = {
    .name = "delta",
    .kind = ZF_CODEC_ARRAY_TO_ARRAY,
    .resolve = zf_dtype_filter_resolve,
    .decode = delta_decode,
    .destroy = zf_codec_destroy_plain,
    .decoded_size = zf_dtype_filter_decoded_size,
    .encode = delta_encode,
};

static bool summable(const zf_dtype *t)
{
    return t->kind && strchr("biufm", t->kind) != NULL;
}

zf_status zf_codec_delta_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    zf_dtype dtype, astype;
    zf_status st;
    if ((st = zf_cfg_dtype(cfg, "delta", "dtype", true, NULL, &dtype, err)) ||
        (st = zf_cfg_dtype(cfg, "delta", "astype", false, &dtype, &astype, err)))
        return st;
    char a[32], b[32];
    if (dtype.kind == 'O' || astype.kind == 'O')
        return zf_fail(err, ZF_ERR_UNSUPPORTED, "delta: object arrays are not supported");
    zf_dtype loop;
    if (!summable(&dtype) || !summable(&astype) || !zf_dtype_promote(&astype, &dtype, &loop) ||
        (dtype.kind == 'm' && astype.kind == 'm' && strcmp(dtype.unit, astype.unit)))
        return zf_fail(err, ZF_ERR_UNSUPPORTED, "delta: cannot sum %s values into %s",
                       zf_dtype_str(&astype, a), zf_dtype_str(&dtype, b));
    delta_codec *d = zf_codec_alloc(sizeof *d, &delta_ops);
    if (!d)
        return ZF_ERR_NOMEM;
    d->f.dec = dtype;
    d->f.enc = astype;
    d->loop = loop;
    d->fast = dtype.kind == astype.kind && dtype.itemsize == astype.itemsize &&
              dtype.kind != 'b' && !zf_dtype_is_swapped(&dtype) &&
              !zf_dtype_is_swapped(&astype) && (dtype.kind != 'f' || dtype.itemsize != 2);
    *out = &d->f.base;
    return ZF_OK;
}
