/* numeric.c — NumPy's type promotion and astype casting over flat element buffers, for the
 * filters that change data types (astype, quantize, delta, fixedscaleoffset, categorize).
 * Element values go through zf_dtype_load/zf_dtype_store so every filter casts exactly as the
 * metadata layer does; complex numbers are handled here as pairs of floats. */
#include <math.h>
#include <string.h>

#include "codec_impl.h"

static bool is_int_kind(char k)
{
    return k == 'i' || k == 'u';
}

static void set_native(zf_dtype *d, char kind, size_t size)
{
    memset(d, 0, sizeof *d);
    d->kind = kind;
    d->itemsize = size;
    d->byteorder = size > 1 ? '<' : '|';
}

/* The smallest float NumPy uses to hold every value of an integer of `size` bytes. */
static size_t float_for_int(size_t size)
{
    return size == 1 ? 2 : size == 2 ? 4 : 8;
}

bool zf_dtype_promote(const zf_dtype *a, const zf_dtype *b, zf_dtype *out)
{
    char ka = a->kind == 'm' ? 'i' : a->kind, kb = b->kind == 'm' ? 'i' : b->kind;
    if (!strchr("biuf", ka) || !strchr("biuf", kb))
        return false;
    bool timedelta = a->kind == 'm' || b->kind == 'm';
    if (timedelta && (ka == 'f' || kb == 'f'))
        return false;
    if (ka == 'b' || kb == 'b') {
        const zf_dtype *o = ka == 'b' ? b : a;
        set_native(out, o->kind, o->itemsize);
    } else if (ka == kb) {
        set_native(out, ka, a->itemsize > b->itemsize ? a->itemsize : b->itemsize);
    } else if (ka == 'f' || kb == 'f') {
        const zf_dtype *f = ka == 'f' ? a : b, *i = ka == 'f' ? b : a;
        size_t need = float_for_int(i->itemsize);
        set_native(out, 'f', f->itemsize > need ? f->itemsize : need);
    } else { /* one signed, one unsigned */
        const zf_dtype *s = ka == 'i' ? a : b, *u = ka == 'i' ? b : a;
        if (u->itemsize < s->itemsize)
            set_native(out, 'i', s->itemsize);
        else if (u->itemsize < 8)
            set_native(out, 'i', 2 * u->itemsize);
        else
            set_native(out, 'f', 8);
    }
    if (timedelta) {
        set_native(out, 'm', 8);
        const zf_dtype *m = a->kind == 'm' ? a : b;
        memcpy(out->unit, m->unit, sizeof out->unit);
    }
    return true;
}

zf_num zf_num_cast(const zf_dtype *dt, zf_num v)
{
    zf_dtype nat = *dt;
    nat.byteorder = '<';
    uint8_t tmp[8];
    zf_dtype_store(&nat, tmp, 0, v);
    return zf_dtype_load(&nat, tmp, 0);
}

/* The float type of one component of a complex type. */
static zf_dtype component(const zf_dtype *c)
{
    zf_dtype f = *c;
    f.kind = 'f';
    f.itemsize = c->itemsize / 2;
    return f;
}

static bool numeric_or_complex(const zf_dtype *d)
{
    return zf_dtype_is_numeric(d) || d->kind == 'c';
}

bool zf_dtype_castable(const zf_dtype *from, const zf_dtype *to)
{
    bool fdt = from->kind == 'm' || from->kind == 'M', tdt = to->kind == 'm' || to->kind == 'M';
    if (fdt || tdt) {
        /* Between date/time types only the same kind and unit (no unit conversion here);
         * to and from integers as plain 64-bit counts. */
        if (fdt && tdt)
            return from->kind == to->kind && strcmp(from->unit, to->unit) == 0;
        const zf_dtype *o = fdt ? to : from;
        return is_int_kind(o->kind) || o->kind == 'b';
    }
    if (numeric_or_complex(from) && numeric_or_complex(to))
        return true;
    /* Non-numeric: the same type, possibly in the other byte order. */
    return from->kind == to->kind && from->itemsize == to->itemsize && from->kind != 'O';
}

static bool same_type(const zf_dtype *a, const zf_dtype *b)
{
    return a->kind == b->kind && a->itemsize == b->itemsize && strcmp(a->unit, b->unit) == 0;
}

/* Size of the units byte order applies to, for a type whose values are copied unchanged. */
static size_t swap_unit(const zf_dtype *d)
{
    switch (d->kind) {
    case 'U': return 4;
    case 'c': return d->itemsize / 2;
    case 'S':
    case 'V':
    case 'O': return 1;
    default: return d->itemsize;
    }
}

static bool swapped(const zf_dtype *d)
{
    return d->byteorder == '>';
}

void zf_dtype_cast_n(const zf_dtype *from, const void *in, const zf_dtype *to, void *out,
                     size_t n)
{
    if (same_type(from, to)) {
        memcpy(out, in, n * to->itemsize);
        size_t unit = swap_unit(to);
        if (unit > 1 && swapped(from) != swapped(to))
            zf_byteswap(out, n * to->itemsize / unit, unit);
        return;
    }
    if (from->kind == 'c' || to->kind == 'c') {
        zf_dtype fc = from->kind == 'c' ? component(from) : *from;
        zf_dtype tc = to->kind == 'c' ? component(to) : *to;
        const uint8_t *ip = in;
        uint8_t *op = out;
        for (size_t i = 0; i < n; i++, ip += from->itemsize, op += to->itemsize) {
            zf_dtype_store(&tc, op, 0, zf_dtype_load(&fc, ip, 0)); /* real part */
            if (to->kind == 'c') {
                zf_num im = {.kind = 'f', .v.f = 0};
                if (from->kind == 'c')
                    im = zf_dtype_load(&fc, ip + fc.itemsize, 0);
                zf_dtype_store(&tc, op + tc.itemsize, 0, im);
            }
        }
        return;
    }
    for (size_t i = 0; i < n; i++)
        zf_dtype_store(to, out, i, zf_dtype_load(from, in, i));
}

/* --- the dtype filters' shared ops --- */

zf_status zf_dtype_filter_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                                  zf_chunk_repr *encoded, zf_err *err)
{
    const zf_dtype_filter *f = (const zf_dtype_filter *)c;
    if (decoded->nbytes == ZF_SIZE_UNKNOWN) {
        zf_repr_flat(encoded, &f->enc, 0);
        encoded->nbytes = ZF_SIZE_UNKNOWN;
        return ZF_OK;
    }
    char ts[32];
    size_t n;
    zf_status st = zf_repr_count(c->ops->name, decoded->nbytes, f->dec.itemsize,
                                 zf_dtype_str(&f->dec, ts), &n, err);
    if (st != ZF_OK)
        return st;
    if (f->enc.itemsize && n > SIZE_MAX / f->enc.itemsize)
        return zf_fail(err, ZF_ERR_INVALID, "%s: chunk too large", c->ops->name);
    zf_repr_flat(encoded, &f->enc, n);
    return ZF_OK;
}

zf_status zf_dtype_filter_decoded_size(const zf_codec *c, const uint8_t *in, size_t in_len,
                                       size_t *out_len, zf_err *err)
{
    (void)in;
    const zf_dtype_filter *f = (const zf_dtype_filter *)c;
    char ts[32];
    size_t n;
    zf_status st = zf_repr_count(c->ops->name, in_len, f->enc.itemsize,
                                 zf_dtype_str(&f->enc, ts), &n, err);
    if (st != ZF_OK)
        return st == ZF_ERR_INVALID ? ZF_ERR_CORRUPT : st;
    if (f->dec.itemsize && n > SIZE_MAX / f->dec.itemsize)
        return zf_fail(err, ZF_ERR_CORRUPT, "%s: chunk too large", c->ops->name);
    *out_len = n * f->dec.itemsize;
    return ZF_OK;
}

zf_status zf_dtype_filter_count(const zf_codec *c, size_t in_len, size_t out_len, size_t *n,
                                zf_err *err)
{
    const zf_dtype_filter *f = (const zf_dtype_filter *)c;
    char ts[32];
    zf_status st = zf_repr_count(c->ops->name, out_len, f->dec.itemsize,
                                 zf_dtype_str(&f->dec, ts), n, err);
    if (st != ZF_OK)
        return st;
    size_t es = f->enc.itemsize;
    if (es == 0 ? in_len != 0 : (in_len % es || in_len / es != *n))
        return zf_fail(err, ZF_ERR_CORRUPT, "%s: %zu bytes of %s, expected %zu elements",
                       c->ops->name, in_len, zf_dtype_str(&f->enc, ts), *n);
    return ZF_OK;
}

zf_status zf_dtype_filter_cast_decode(const zf_codec *c, const zf_chunk_repr *decoded,
                                      const uint8_t *in, size_t in_len, uint8_t *out,
                                      size_t out_len, zf_err *err)
{
    (void)decoded;
    const zf_dtype_filter *f = (const zf_dtype_filter *)c;
    size_t n;
    zf_status st = zf_dtype_filter_count(c, in_len, out_len, &n, err);
    if (st != ZF_OK)
        return st;
    zf_dtype_cast_n(&f->enc, in, &f->dec, out, n);
    return ZF_OK;
}

/* --- encoding --- */

uint8_t *zf_enc_alloc(size_t n)
{
    return malloc(n ? n : 1);
}

zf_status zf_dtype_filter_encode_count(const zf_codec *c, size_t in_len, size_t *n, zf_err *err)
{
    const zf_dtype_filter *f = (const zf_dtype_filter *)c;
    char ts[32];
    zf_status st =
        zf_repr_count(c->ops->name, in_len, f->dec.itemsize, zf_dtype_str(&f->dec, ts), n, err);
    if (st != ZF_OK)
        return st;
    if (f->enc.itemsize && *n > SIZE_MAX / f->enc.itemsize)
        return zf_fail(err, ZF_ERR_INVALID, "%s: chunk too large", c->ops->name);
    return ZF_OK;
}

zf_status zf_dtype_filter_cast_encode(const zf_codec *c, const zf_chunk_repr *decoded,
                                      const uint8_t *in, size_t in_len, unsigned flags,
                                      uint8_t **out, size_t *out_len, zf_err *err)
{
    (void)decoded;
    (void)flags;
    const zf_dtype_filter *f = (const zf_dtype_filter *)c;
    size_t n;
    zf_status st = zf_dtype_filter_encode_count(c, in_len, &n, err);
    if (st != ZF_OK)
        return st;
    uint8_t *o = zf_enc_alloc(n * f->enc.itemsize);
    if (!o)
        return ZF_ERR_NOMEM;
    zf_dtype_cast_n(&f->dec, in, &f->enc, o, n);
    *out = o;
    *out_len = n * f->enc.itemsize;
    return ZF_OK;
}

/* np.min_scalar_type of a Python scalar; *small_unsigned: a non-negative integer that also fits
 * the signed type of the same size. */
static void min_scalar_type(double v, bool is_int, zf_dtype *out, bool *small_unsigned)
{
    *small_unsigned = false;
    if (!is_int) {
        size_t size = (v > -65000 && v < 65000) || isnan(v) || isinf(v) ? 2
                      : v > -3.4e38 && v < 3.4e38                        ? 4
                                                                         : 8;
        set_native(out, 'f', size);
        return;
    }
    if (v >= 0) {
        size_t size = v < 256.0 ? 1 : v < 65536.0 ? 2 : v < 4294967296.0 ? 4 : 8;
        set_native(out, 'u', size);
        *small_unsigned = v < ldexp(1.0, (int)(8 * size - 1));
    } else {
        size_t size = v >= -128.0           ? 1
                      : v >= -32768.0       ? 2
                      : v >= -2147483648.0 ? 4
                                            : 8;
        set_native(out, 'i', size);
    }
}

void zf_dtype_promote_scalar(const zf_dtype *a, double v, bool is_int, zf_dtype *out)
{
    int acat = a->kind == 'b' ? 0 : a->kind == 'f' ? 2 : 1, vcat = is_int ? 1 : 2;
    if (vcat > acat) { /* the scalar's own type: Python int -> int64 (uint64 above), float */
        if (!is_int)
            set_native(out, 'f', 8);
        else
            set_native(out, v >= 9223372036854775808.0 ? 'u' : 'i', 8);
        return;
    }
    zf_dtype s;
    bool small;
    min_scalar_type(v, is_int, &s, &small);
    if (small && (a->kind == 'i' || a->kind == 'f'))
        s.kind = 'i';
    if (!zf_dtype_promote(a, &s, out))
        set_native(out, 'f', 8);
}

static double as_double(zf_num v)
{
    return v.kind == 'f' ? v.v.f : v.kind == 'u' ? (double)v.v.u : (double)v.v.i;
}

zf_num zf_num_arith(const zf_dtype *t, char op, zf_num a, zf_num b)
{
    zf_num r = {.kind = 'i'};
    switch (t->kind) {
    case 'f': {
        r.kind = 'f';
        double x = as_double(a), y = as_double(b);
        if (t->itemsize <= 4) {
            float fx = (float)x, fy = (float)y, fr;
            switch (op) {
            case '-': fr = fx - fy; break;
            case '+': fr = fx + fy; break;
            case '*': fr = fx * fy; break;
            default: fr = fx / fy; break;
            }
            r.v.f = t->itemsize == 2 ? zf_half_to_float(zf_float_to_half(fr)) : fr;
        } else {
            switch (op) {
            case '-': r.v.f = x - y; break;
            case '+': r.v.f = x + y; break;
            case '*': r.v.f = x * y; break;
            default: r.v.f = x / y; break;
            }
        }
        return r;
    }
    case 'b': {
        bool x = a.v.i != 0, y = b.v.i != 0;
        r.v.i = op == '*' ? (x && y) : op == '+' ? (x || y) : (x != y);
        return r;
    }
    default: {
        uint64_t x = a.kind == 'u' ? a.v.u : (uint64_t)a.v.i;
        uint64_t y = b.kind == 'u' ? b.v.u : (uint64_t)b.v.i, z;
        switch (op) {
        case '-': z = x - y; break;
        case '+': z = x + y; break;
        case '*': z = x * y; break;
        default: z = y ? x / y : 0; break; /* not used: true division is float */
        }
        if (t->kind == 'u') {
            r.kind = 'u';
            r.v.u = z;
        } else {
            r.v.i = (int64_t)z;
        }
        return zf_num_cast(t, r); /* wrap to t's width */
    }
    }
}

zf_num zf_num_rint(const zf_dtype *t, zf_num a)
{
    if (t->kind != 'f')
        return a;
    zf_num r = {.kind = 'f', .v.f = rint(as_double(a))};
    return r;
}
