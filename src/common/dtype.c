/* dtype.c — NumPy typestr parsing, element loads/stores with NumPy's casts, half floats, the
 * zarr-extensions registry's float formats (one bit-level implementation driven by a
 * descriptor per format) and cast_value's value casts with their rounding modes. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarrfs/dtype.h"
#include "zarrfs/json.h"

static bool size_ok(char kind, size_t n)
{
    switch (kind) {
    case 'b': return n == 1;
    case 'i':
    case 'u': return n == 1 || n == 2 || n == 4 || n == 8;
    case 'f': return n == 2 || n == 4 || n == 8;
    case 'c': return n == 8 || n == 16;
    case 'm':
    case 'M': return n == 8;
    case 'S':
    case 'V': return true;
    case 'U': return n % 4 == 0;
    case 'O': return n == 8 || n == 0;
    }
    return false;
}

zf_status zf_dtype_parse(const char *s, zf_dtype *out, zf_err *err)
{
    memset(out, 0, sizeof *out);
    const char *p = s;
    if (!s || (p[0] != '<' && p[0] != '>' && p[0] != '|' && p[0] != '='))
        return zf_fail(err, ZF_ERR_INVALID, "\"%s\": expected a NumPy typestr such as \"<f8\"",
                       s ? s : "");
    out->byteorder = p[0] == '=' ? '<' : p[0];
    out->kind = p[1];
    if (!strchr("biufcmMSUVO", out->kind) || out->kind == '\0')
        return zf_fail(err, ZF_ERR_INVALID, "\"%s\": unknown data type kind", s);
    p += 2;
    size_t n = 0;
    if (out->kind == 'O' && *p == '\0') {
        n = 8;
    } else {
        if (!isdigit((unsigned char)*p))
            return zf_fail(err, ZF_ERR_INVALID, "\"%s\": expected an item size", s);
        while (isdigit((unsigned char)*p)) {
            if (n > (SIZE_MAX >> 4))
                return zf_fail(err, ZF_ERR_INVALID, "\"%s\": item size too large", s);
            n = n * 10 + (size_t)(*p++ - '0');
        }
    }
    if (out->kind == 'U') {
        if (n > SIZE_MAX / 4)
            return zf_fail(err, ZF_ERR_INVALID, "\"%s\": item size too large", s);
        n *= 4;
    }
    if (*p == '[') {
        const char *close = strchr(p, ']');
        size_t ulen = close ? (size_t)(close - p - 1) : 0;
        if ((out->kind != 'm' && out->kind != 'M') || !close || close[1] != '\0' || ulen == 0 ||
            ulen >= sizeof out->unit)
            return zf_fail(err, ZF_ERR_INVALID, "\"%s\": malformed unit", s);
        memcpy(out->unit, p + 1, ulen);
        p = close + 1;
    } else if (*p != '\0') {
        return zf_fail(err, ZF_ERR_INVALID, "\"%s\": trailing characters", s);
    } else if (out->kind == 'm' || out->kind == 'M') {
        /* NumPy writes "<M8" for generic units only; accept it. */
    }
    if (!size_ok(out->kind, n))
        return zf_fail(err, ZF_ERR_INVALID, "\"%s\": invalid item size for kind '%c'", s,
                       out->kind);
    if (n > (size_t)1 << 31)
        return zf_fail(err, ZF_ERR_INVALID, "\"%s\": item size too large", s);
    out->itemsize = n;
    return ZF_OK;
}

void zf_dtype_format(const zf_dtype *dt, char *buf, size_t bufsize)
{
    if (!zf_dtype_has_typestr(dt) && dt->kind != 'O') {
        const char *name = zf_dtype_ext_name(dt);
        if (name) {
            snprintf(buf, bufsize, "%s", name);
            return;
        }
    }
    size_t n = dt->kind == 'U' ? dt->itemsize / 4 : dt->itemsize;
    if (dt->unit[0])
        snprintf(buf, bufsize, "%c%c%zu[%s]", dt->byteorder, dt->kind, n, dt->unit);
    else
        snprintf(buf, bufsize, "%c%c%zu", dt->byteorder, dt->kind, n);
}

bool zf_dtype_is_swapped(const zf_dtype *dt)
{
    return dt->byteorder == '>' && dt->itemsize > 1;
}

bool zf_dtype_is_numeric(const zf_dtype *dt)
{
    return dt->kind && strchr("biufmM", dt->kind) != NULL;
}

bool zf_dtype_has_typestr(const zf_dtype *dt)
{
    return dt->ext == ZF_DT_NUMPY && size_ok(dt->kind, dt->itemsize);
}

/* ----- the registry's float formats (data-types/<name>/README.md) ----- */

static const zf_float_format F16 = {"float16", 16, 5, 10, 15, true, true, true, ZF_NAN_IEEE,
                                     0x7e00};
static const zf_float_format F32 = {"float32", 32, 8, 23, 127, true, true, true, ZF_NAN_IEEE,
                                     0x7fc00000};
static const zf_float_format F64 = {"float64", 64, 11, 52, 1023, true, true, true, ZF_NAN_IEEE,
                                     0x7ff8000000000000ull};

/* Indexed by zf_dtype_ext (the float entries). */
static const zf_float_format EXT_FLOATS[] = {
    [ZF_DT_BFLOAT16] = {"bfloat16", 16, 8, 7, 127, true, true, true, ZF_NAN_IEEE, 0x7fc0},
    [ZF_DT_FLOAT8_E3M4] = {"float8_e3m4", 8, 3, 4, 3, true, true, true, ZF_NAN_IEEE, 0x78},
    [ZF_DT_FLOAT8_E4M3] = {"float8_e4m3", 8, 4, 3, 7, true, true, true, ZF_NAN_IEEE, 0x7c},
    [ZF_DT_FLOAT8_E4M3B11FNUZ] = {"float8_e4m3b11fnuz", 8, 4, 3, 11, true, false, true,
                                  ZF_NAN_NEG_ZERO, 0x80},
    [ZF_DT_FLOAT8_E4M3FNUZ] = {"float8_e4m3fnuz", 8, 4, 3, 8, true, false, true,
                               ZF_NAN_NEG_ZERO, 0x80},
    [ZF_DT_FLOAT8_E5M2] = {"float8_e5m2", 8, 5, 2, 15, true, true, true, ZF_NAN_IEEE, 0x7e},
    [ZF_DT_FLOAT8_E5M2FNUZ] = {"float8_e5m2fnuz", 8, 5, 2, 16, true, false, true,
                               ZF_NAN_NEG_ZERO, 0x80},
    [ZF_DT_FLOAT8_E8M0FNU] = {"float8_e8m0fnu", 8, 8, 0, 127, false, false, false,
                              ZF_NAN_ALL_ONES, 0xff},
    [ZF_DT_FLOAT6_E2M3FN] = {"float6_e2m3fn", 6, 2, 3, 1, true, false, true, ZF_NAN_NONE, 0},
    [ZF_DT_FLOAT6_E3M2FN] = {"float6_e3m2fn", 6, 3, 2, 3, true, false, true, ZF_NAN_NONE, 0},
    [ZF_DT_FLOAT4_E2M1FN] = {"float4_e2m1fn", 4, 2, 1, 1, true, false, true, ZF_NAN_NONE, 0},
};

static bool ext_is_float(unsigned ext)
{
    return ext >= ZF_DT_BFLOAT16 && ext <= ZF_DT_FLOAT4_E2M1FN;
}

const zf_float_format *zf_dtype_float_format(const zf_dtype *dt)
{
    if (dt->kind != 'f' && dt->kind != 'c')
        return NULL;
    size_t n = dt->kind == 'c' ? dt->itemsize / 2 : dt->itemsize;
    if (ext_is_float(dt->ext)) {
        const zf_float_format *f = &EXT_FLOATS[dt->ext];
        return n == (f->bits + 7u) / 8 ? f : NULL;
    }
    if (dt->ext != ZF_DT_NUMPY)
        return NULL;
    return n == 2 ? &F16 : n == 4 ? &F32 : n == 8 ? &F64 : NULL;
}

const char *zf_dtype_ext_name(const zf_dtype *dt)
{
    static const char *const INTS[] = {[ZF_DT_INT2] = "int2", [ZF_DT_INT4] = "int4",
                                       [ZF_DT_UINT2] = "uint2", [ZF_DT_UINT4] = "uint4"};
    static const char *const COMPLEX[] = {
        [ZF_DT_BFLOAT16] = "complex_bfloat16",
        [ZF_DT_FLOAT8_E3M4] = "complex_float8_e3m4",
        [ZF_DT_FLOAT8_E4M3] = "complex_float8_e4m3",
        [ZF_DT_FLOAT8_E4M3B11FNUZ] = "complex_float8_e4m3b11fnuz",
        [ZF_DT_FLOAT8_E4M3FNUZ] = "complex_float8_e4m3fnuz",
        [ZF_DT_FLOAT8_E5M2] = "complex_float8_e5m2",
        [ZF_DT_FLOAT8_E5M2FNUZ] = "complex_float8_e5m2fnuz",
        [ZF_DT_FLOAT8_E8M0FNU] = "complex_float8_e8m0fnu",
        [ZF_DT_FLOAT6_E2M3FN] = "complex_float6_e2m3fn",
        [ZF_DT_FLOAT6_E3M2FN] = "complex_float6_e3m2fn",
        [ZF_DT_FLOAT4_E2M1FN] = "complex_float4_e2m1fn",
    };
    if (dt->ext == ZF_DT_NUMPY)
        return dt->kind == 'c' && dt->itemsize == 4 ? "complex_float16" : NULL;
    if (ext_is_float(dt->ext))
        return dt->kind == 'c' ? COMPLEX[dt->ext] : EXT_FLOATS[dt->ext].name;
    if (dt->ext >= ZF_DT_INT2 && dt->ext <= ZF_DT_UINT4)
        return INTS[dt->ext];
    if (dt->ext == ZF_DT_STRUCT || dt->ext == ZF_DT_STRUCT_BYTES)
        return "struct";
    if (dt->ext == ZF_DT_STRUCTURED)
        return "structured";
    return NULL;
}

unsigned zf_dtype_component_bits(const zf_dtype *dt)
{
    switch (dt->ext) {
    case ZF_DT_INT2:
    case ZF_DT_UINT2: return 2;
    case ZF_DT_INT4:
    case ZF_DT_UINT4: return 4;
    default: break;
    }
    if (dt->kind == 'b')
        return 1;
    const zf_float_format *f = zf_dtype_float_format(dt);
    if (f)
        return f->bits;
    return (unsigned)(8 * (dt->kind == 'c' ? dt->itemsize / 2 : dt->itemsize));
}

/* Bits of a sub-byte component (1..7), 0 when the type has none. */
static unsigned sub_byte_bits(const zf_dtype *dt)
{
    unsigned b = zf_dtype_component_bits(dt);
    return dt->kind != 'b' && b < 8 ? b : 0;
}

static uint8_t normal_byte(uint8_t v, unsigned bits, bool sign)
{
    uint8_t low = (uint8_t)(v & ((1u << bits) - 1));
    if (sign && (low >> (bits - 1)) & 1)
        low |= (uint8_t)(0xffu << bits);
    return low;
}

void zf_dtype_normalize(const zf_dtype *dt, void *buf, size_t n)
{
    unsigned bits = sub_byte_bits(dt);
    if (!bits)
        return;
    uint8_t *p = buf;
    size_t nbytes = n * dt->itemsize;
    for (size_t i = 0; i < nbytes; i++)
        p[i] = normal_byte(p[i], bits, dt->kind == 'i');
}

bool zf_dtype_check_flat(const zf_dtype *dt, const void *buf, size_t n, size_t *bad)
{
    unsigned bits = sub_byte_bits(dt);
    if (!bits)
        return true;
    const uint8_t *p = buf;
    size_t nbytes = n * dt->itemsize;
    for (size_t i = 0; i < nbytes; i++)
        if (p[i] != normal_byte(p[i], bits, dt->kind == 'i')) {
            *bad = i / dt->itemsize;
            return false;
        }
    return true;
}

static uint64_t mask_bits(unsigned bits)
{
    return bits >= 64 ? ~0ull : (1ull << bits) - 1;
}

static bool float_is_nan(const zf_float_format *f, uint64_t b)
{
    uint64_t emax = mask_bits(f->ebits);
    switch (f->nan) {
    case ZF_NAN_IEEE: return ((b >> f->mbits) & emax) == emax && (b & mask_bits(f->mbits));
    case ZF_NAN_NEG_ZERO: return b == 1ull << (f->bits - 1);
    case ZF_NAN_ALL_ONES: return b == mask_bits(f->bits);
    default: return false;
    }
}

double zf_float_decode(const zf_float_format *f, uint64_t b)
{
    b &= mask_bits(f->bits);
    if (float_is_nan(f, b))
        return NAN;
    uint64_t man = b & mask_bits(f->mbits), emax = mask_bits(f->ebits);
    uint64_t e = (b >> f->mbits) & emax;
    bool neg = f->has_sign && (b >> (f->bits - 1)) & 1;
    double v;
    if (f->has_inf && e == emax)
        v = INFINITY;
    else if (e == 0 && f->has_subnormal)
        v = ldexp((double)man, 1 - f->bias - f->mbits);
    else
        v = ldexp((double)(man | (1ull << f->mbits)), (int)e - f->bias - f->mbits);
    return neg ? -v : v;
}

/* The largest finite magnitude's encoding (exponent and mantissa bits). */
static uint64_t max_mag(const zf_float_format *f)
{
    uint64_t all = mask_bits(f->bits - (f->has_sign ? 1 : 0));
    if (f->has_inf)
        return all - mask_bits(f->mbits) - 1; /* exponent all ones minus one, mantissa ones */
    if (f->nan == ZF_NAN_ALL_ONES)
        return all - 1;
    return all;
}

double zf_float_max(const zf_float_format *f)
{
    return zf_float_decode(f, max_mag(f));
}

double zf_float_lowest(const zf_float_format *f)
{
    return f->has_sign ? -zf_float_max(f) : zf_float_decode(f, 0);
}

/* Round the non-negative q to an integer by `mode` (neg: the sign of the value q is the
 * magnitude of); ties to even look at the parity of base + floor(q). */
static double round_mag(double q, zf_rounding mode, bool neg, int64_t base)
{
    double fl = floor(q), r = q - fl;
    if (r == 0)
        return fl;
    switch (mode) {
    case ZF_ROUND_TOWARDS_ZERO: return fl;
    case ZF_ROUND_TOWARDS_POSITIVE: return neg ? fl : fl + 1;
    case ZF_ROUND_TOWARDS_NEGATIVE: return neg ? fl + 1 : fl;
    case ZF_ROUND_NEAREST_AWAY: return r >= 0.5 ? fl + 1 : fl;
    case ZF_ROUND_NEAREST_EVEN:
    default:
        if (r > 0.5)
            return fl + 1;
        if (r < 0.5)
            return fl;
        return ((int64_t)fmod(fl, 2.0) + base) & 1 ? fl + 1 : fl;
    }
}

bool zf_float_round(const zf_float_format *f, double x, zf_rounding mode, uint64_t *bits)
{
    bool neg = signbit(x) != 0;
    double a = fabs(x);
    uint64_t sign = f->has_sign && neg ? 1ull << (f->bits - 1) : 0;
    bool neg_zero = f->has_sign && f->nan != ZF_NAN_NEG_ZERO;
    if (!isfinite(x) || (!f->has_sign && neg && a != 0))
        return false;
    int mb = f->mbits, sub = f->has_subnormal ? 1 : 0;
    int emin = sub - f->bias; /* exponent of the smallest normal value */
    int e;
    (void)frexp(a, &e);
    int E = a == 0 ? emin : e - 1;
    if (E < emin)
        E = emin;
    /* a = q * 2^(E - mb): q's integer part is the encoding's magnitude less `base`. */
    int64_t base = ((int64_t)(E + f->bias - sub) << mb) - (sub ? 0 : (int64_t)1 << mb);
    double q = ldexp(a, -(E - mb));
    double n = round_mag(q, mode, neg, base);
    if (!f->has_subnormal && n < ldexp(1, mb)) { /* below the smallest value; no zero */
        bool up = mode == ZF_ROUND_NEAREST_EVEN || mode == ZF_ROUND_NEAREST_AWAY ||
                  (mode == ZF_ROUND_TOWARDS_POSITIVE && !neg);
        if (!up)
            return false;
        n = ldexp(1, mb);
    }
    uint64_t mag = (uint64_t)(base + (int64_t)n);
    if (mag > max_mag(f))
        return false;
    if (mag == 0 && !neg_zero)
        sign = 0;
    *bits = sign | mag;
    return true;
}

static uint64_t inf_or_limit(const zf_float_format *f, bool neg)
{
    uint64_t sign = f->has_sign && neg ? 1ull << (f->bits - 1) : 0;
    if (f->has_inf)
        return sign | (mask_bits(f->ebits) << f->mbits);
    if (f->nan != ZF_NAN_NONE)
        return f->nan_bits;
    return sign | max_mag(f);
}

uint64_t zf_float_from_double(const zf_float_format *f, double x)
{
    if (isnan(x))
        return f->nan != ZF_NAN_NONE ? f->nan_bits : 0;
    if (!f->has_sign && signbit(x) && x != 0)
        return f->nan_bits; /* e8m0fnu: no negative values */
    uint64_t b;
    if (isinf(x) || !zf_float_round(f, x, ZF_ROUND_NEAREST_EVEN, &b))
        return inf_or_limit(f, signbit(x) != 0);
    return b;
}

/* --- half precision (IEEE binary16), round to nearest even, as NumPy's halffloat.c --- */

float zf_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Round a double-precision value to binary16 directly (no double rounding through float). */
uint16_t zf_double_to_half(double d)
{
    uint64_t b;
    memcpy(&b, &d, 8);
    uint16_t sign = (uint16_t)((b >> 48) & 0x8000);
    uint64_t exp = (b >> 52) & 0x7ff, man = b & 0xfffffffffffffull;
    if (exp == 0x7ff) {
        if (man == 0)
            return sign | 0x7c00;
        uint16_t m = (uint16_t)(man >> 42);
        return sign | 0x7c00 | (m ? m : 1); /* keep NaN a NaN */
    }
    int e = (int)exp - 1023;
    if (e > 15)
        return sign | 0x7c00; /* overflow to infinity */
    if (e < -25)
        return sign; /* underflow to zero */
    uint64_t full = man | (exp ? (1ull << 52) : 0); /* 53-bit significand */
    int shift;                                      /* bits to drop */
    uint16_t hexp;
    if (e < -14) { /* subnormal half: value = full * 2^(e-52), unit 2^-24 */
        shift = (int)(-(e - 52) - 24);
        hexp = 0;
    } else {
        shift = 42;
        hexp = (uint16_t)(e + 15);
        full &= (1ull << 52) - 1;
    }
    uint64_t kept = full >> shift, rem = full & ((1ull << shift) - 1), half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (kept & 1)))
        kept++;
    uint32_t out = ((uint32_t)hexp << 10) + (uint32_t)kept; /* carry may bump the exponent */
    if (out >= 0x7c00)
        return sign | 0x7c00;
    return (uint16_t)(sign | out);
}

uint16_t zf_float_to_half(float f)
{
    /* Every float is exactly a double, so rounding the double is rounding the float. */
    return zf_double_to_half((double)f);
}

/* --- element loads and stores --- */

static uint64_t load_bits(const uint8_t *p, size_t n, bool swapped)
{
    uint64_t v = 0;
    if (!swapped) {
        memcpy(&v, p, n); /* little-endian host */
    } else {
        for (size_t i = 0; i < n; i++)
            v |= (uint64_t)p[i] << (8 * (n - 1 - i));
    }
    return v;
}

static void store_bits(uint8_t *p, size_t n, bool swapped, uint64_t v)
{
    if (!swapped) {
        memcpy(p, &v, n);
    } else {
        for (size_t i = 0; i < n; i++)
            p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
    }
}

zf_num zf_dtype_load(const zf_dtype *dt, const void *buf, size_t idx)
{
    size_t n = dt->itemsize;
    uint64_t bits = load_bits((const uint8_t *)buf + idx * n, n, zf_dtype_is_swapped(dt));
    zf_num r;
    switch (dt->kind) {
    case 'u':
        r.kind = 'u';
        r.v.u = dt->ext != ZF_DT_NUMPY ? bits & mask_bits(zf_dtype_component_bits(dt)) : bits;
        break;
    case 'f':
        r.kind = 'f';
        if (dt->ext != ZF_DT_NUMPY) {
            const zf_float_format *f = zf_dtype_float_format(dt);
            r.v.f = f ? zf_float_decode(f, bits) : 0;
        } else if (n == 2) {
            r.v.f = zf_half_to_float((uint16_t)bits);
        } else if (n == 4) {
            uint32_t b32 = (uint32_t)bits;
            float f;
            memcpy(&f, &b32, 4);
            r.v.f = f;
        } else {
            memcpy(&r.v.f, &bits, 8);
        }
        break;
    case 'b':
        r.kind = 'i';
        r.v.i = bits != 0;
        break;
    default: /* i, m, M: sign-extend */
        r.kind = 'i';
        if (dt->ext != ZF_DT_NUMPY) { /* int2, int4: from their low bits */
            r.v.i = (int8_t)normal_byte((uint8_t)bits, zf_dtype_component_bits(dt), true);
            break;
        }
        if (n < 8 && (bits >> (8 * n - 1)) & 1)
            bits |= ~0ull << (8 * n);
        r.v.i = (int64_t)bits;
        break;
    }
    return r;
}

/* float -> int64 as x86 does it (cvttsd2si): truncate, INT64_MIN for NaN or out of range. */
static int64_t f_to_i64(double f)
{
    if (!(f >= -9223372036854775808.0 && f < 9223372036854775808.0))
        return INT64_MIN;
    return (int64_t)f;
}

static uint64_t f_to_u64(double f)
{
    if (f >= 0 && f < 18446744073709551616.0)
        return (uint64_t)f;
    return (uint64_t)f_to_i64(f);
}

void zf_dtype_store(const zf_dtype *dt, void *buf, size_t idx, zf_num v)
{
    size_t n = dt->itemsize;
    uint8_t *p = (uint8_t *)buf + idx * n;
    bool sw = zf_dtype_is_swapped(dt);
    uint64_t bits;
    if (dt->kind == 'f') {
        double d = v.kind == 'f' ? v.v.f : v.kind == 'u' ? (double)v.v.u : (double)v.v.i;
        if (dt->ext != ZF_DT_NUMPY) {
            const zf_float_format *f = zf_dtype_float_format(dt);
            bits = f ? zf_float_from_double(f, d) : 0;
        } else if (n == 2) {
            bits = v.kind == 'f' ? zf_double_to_half(d) : zf_float_to_half((float)d);
        } else if (n == 4) {
            float f = (float)d;
            uint32_t b32;
            memcpy(&b32, &f, 4);
            bits = b32;
        } else {
            memcpy(&bits, &d, 8);
        }
    } else if (dt->kind == 'b') {
        bits = v.kind == 'f' ? (v.v.f != 0) : v.kind == 'u' ? (v.v.u != 0) : (v.v.i != 0);
    } else if (v.kind == 'f') {
        bits = dt->kind == 'u' ? f_to_u64(v.v.f) : (uint64_t)f_to_i64(v.v.f);
    } else {
        bits = v.kind == 'u' ? v.v.u : (uint64_t)v.v.i; /* integers wrap, as C and NumPy do */
    }
    if (dt->ext != ZF_DT_NUMPY && (dt->kind == 'i' || dt->kind == 'u')) /* int2/4, uint2/4 */
        bits = normal_byte((uint8_t)bits, zf_dtype_component_bits(dt), dt->kind == 'i');
    store_bits(p, n, sw, bits);
}

void zf_byteswap(void *buf, size_t n, size_t itemsize)
{
    uint8_t *p = buf;
    if (itemsize <= 1)
        return;
    for (size_t i = 0; i < n; i++, p += itemsize)
        for (size_t a = 0, b = itemsize - 1; a < b; a++, b--) {
            uint8_t t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

/* ----- cast_value (zarr-extensions codecs/cast_value "Procedure") ----- */

typedef __int128 i128;

static zf_status not_representable(zf_err *err, const zf_dtype *to, zf_num v, const char *why)
{
    char ts[48], val[48];
    zf_dtype_format(to, ts, sizeof ts);
    if (v.kind == 'f')
        snprintf(val, sizeof val, "%.17g", v.v.f);
    else if (v.kind == 'u')
        snprintf(val, sizeof val, "%llu", (unsigned long long)v.v.u);
    else
        snprintf(val, sizeof val, "%lld", (long long)v.v.i);
    return zf_fail(err, ZF_ERR_INVALID, "the value %s cannot be cast to %s: %s", val, ts, why);
}

/* A finite integer-valued double modulo 2^64, as the bits of a two's complement integer
 * (exact: beyond 2^63 in magnitude a double is a multiple of 2^11). */
static uint64_t wrap_double(double r)
{
    if (fabs(r) < 0x1p63)
        return (uint64_t)(int64_t)r;
    double w = fmod(r, 0x1p64);
    if (w < 0)
        w += 0x1p64;
    return w >= 0x1p64 ? 0 : (uint64_t)w;
}

static zf_status cast_to_int(const zf_dtype *to, void *buf, size_t idx, zf_num v,
                             zf_rounding mode, zf_out_of_range oor, zf_err *err)
{
    unsigned bits = zf_dtype_component_bits(to);
    bool sgn = to->kind != 'u';
    i128 lo = sgn ? -((i128)1 << (bits - 1)) : 0;
    i128 hi = sgn ? ((i128)1 << (bits - 1)) - 1 : ((i128)1 << bits) - 1;
    i128 val;
    uint64_t wrapped;
    if (v.kind == 'u') {
        val = v.v.u;
        wrapped = v.v.u;
    } else if (v.kind == 'i') {
        val = v.v.i;
        wrapped = (uint64_t)v.v.i;
    } else {
        if (isnan(v.v.f))
            return not_representable(err, to, v, "NaN");
        if (isinf(v.v.f))
            return not_representable(err, to, v, "infinite");
        double r = round_mag(fabs(v.v.f), mode, signbit(v.v.f) != 0, 0);
        r = signbit(v.v.f) ? -r : r;
        if (fabs(r) >= 0x1p64) { /* beyond any integer type: out of range */
            if (oor == ZF_OOR_ERROR)
                return not_representable(err, to, v, "out of range");
            val = r < 0 ? lo - 1 : hi + 1;
        } else {
            val = (i128)r;
        }
        wrapped = wrap_double(r);
    }
    if (val < lo || val > hi) {
        if (oor == ZF_OOR_ERROR)
            return not_representable(err, to, v, "out of range");
        if (oor == ZF_OOR_CLAMP) {
            val = val < lo ? lo : hi;
        } else {
            uint64_t w = wrapped & mask_bits(bits);
            val = sgn && bits < 64 && (w >> (bits - 1)) ? (i128)w - ((i128)1 << bits)
                  : sgn && bits == 64                    ? (i128)(int64_t)w
                                                         : (i128)w;
        }
    }
    zf_num out = sgn ? (zf_num){.kind = 'i', .v.i = (int64_t)val}
                     : (zf_num){.kind = 'u', .v.u = (uint64_t)val};
    zf_dtype_store(to, buf, idx, out);
    return ZF_OK;
}

/* An integer magnitude rounded to p significant bits by `mode` (exact as a double for
 * p <= 53). */
static double int_to_precision(uint64_t mag, bool neg, unsigned p, zf_rounding mode)
{
    unsigned sig = mag ? 64 - (unsigned)__builtin_clzll(mag) : 0;
    if (sig <= p)
        return (double)mag;
    unsigned shift = sig - p;
    uint64_t unit = 1ull << shift, rem = mag & (unit - 1), kept = mag >> shift;
    bool up;
    switch (mode) {
    case ZF_ROUND_TOWARDS_ZERO: up = false; break;
    case ZF_ROUND_TOWARDS_POSITIVE: up = !neg && rem; break;
    case ZF_ROUND_TOWARDS_NEGATIVE: up = neg && rem; break;
    case ZF_ROUND_NEAREST_AWAY: up = rem >= unit / 2; break;
    default: up = rem > unit / 2 || (rem == unit / 2 && (kept & 1)); break;
    }
    return ldexp((double)(kept + up), (int)shift); /* kept + 1 may be 2^p: still exact */
}

static void store_float_bits(const zf_dtype *to, void *buf, size_t idx, uint64_t b)
{
    store_bits((uint8_t *)buf + idx * to->itemsize, to->itemsize, zf_dtype_is_swapped(to), b);
}

static zf_status cast_to_float(const zf_dtype *to, void *buf, size_t idx, zf_num v,
                               zf_rounding mode, zf_out_of_range oor, zf_err *err)
{
    const zf_float_format *f = zf_dtype_float_format(to);
    if (!f)
        return not_representable(err, to, v, "not a numeric type");
    bool is_int = v.kind != 'f';
    bool neg = v.kind == 'i' && v.v.i < 0;
    uint64_t mag = v.kind == 'u' ? v.v.u : v.kind == 'i' ? (neg ? 0 - (uint64_t)v.v.i : (uint64_t)v.v.i) : 0;
    double x = is_int ? int_to_precision(mag, neg, 53, mode) : v.v.f;
    if (is_int && neg)
        x = -x;
    uint64_t sign = f->has_sign ? 1ull << (f->bits - 1) : 0;
    uint64_t inf = mask_bits(f->ebits) << f->mbits;
    if (isnan(x)) {
        if (f->nan == ZF_NAN_NONE)
            return not_representable(err, to, v, "the type has no NaN");
        store_float_bits(to, buf, idx, f->nan_bits);
        return ZF_OK;
    }
    double lo = zf_float_lowest(f), hi = zf_float_max(f);
    if (isinf(x) && f->has_inf) {
        store_float_bits(to, buf, idx, (x < 0 ? sign : 0) | inf);
        return ZF_OK;
    }
    if (x < lo || x > hi) {
        bool below = x < lo;
        if (oor == ZF_OOR_ERROR)
            return not_representable(err, to, v, isinf(x) ? "the type has no infinities"
                                                           : "out of range");
        if (oor == ZF_OOR_WRAP && (!f->has_inf || isinf(x)))
            return not_representable(err, to, v, "\"wrap\" applies to integer types only");
        bool to_inf;
        if (oor == ZF_OOR_CLAMP) {
            to_inf = f->has_inf;
        } else { /* wrap into a float type with infinities: overflow rounding, as zarrs */
            to_inf = !(mode == ZF_ROUND_TOWARDS_ZERO ||
                       mode == (below ? ZF_ROUND_TOWARDS_POSITIVE : ZF_ROUND_TOWARDS_NEGATIVE));
        }
        uint64_t b;
        if (to_inf)
            b = (below ? sign : 0) | inf;
        else
            (void)zf_float_round(f, below ? lo : hi, ZF_ROUND_NEAREST_EVEN, &b);
        store_float_bits(to, buf, idx, b);
        return ZF_OK;
    }
    if (is_int) { /* round the integer to the type's precision directly (no double rounding) */
        x = int_to_precision(mag, neg, (unsigned)f->mbits + 1, mode);
        if (neg)
            x = -x;
    }
    uint64_t b;
    if (!zf_float_round(f, x, mode, &b))
        return not_representable(err, to, v, "out of range");
    store_float_bits(to, buf, idx, b);
    return ZF_OK;
}

zf_status zf_dtype_cast_value(const zf_dtype *to, void *buf, size_t idx, zf_num v,
                              zf_rounding mode, zf_out_of_range oor, zf_err *err)
{
    if (to->kind == 'i' || to->kind == 'u')
        return cast_to_int(to, buf, idx, v, mode, oor, err);
    if (to->kind == 'f')
        return cast_to_float(to, buf, idx, v, mode, oor, err);
    return not_representable(err, to, v, "not an integer or floating-point type");
}

/* ----- Zarr v3 names and scalars ----- */

static const struct {
    const char *name;
    char kind;
    uint8_t size, ext;
} V3_NAMES[] = {
    /* v3 core "Data Types" */
    {"bool", 'b', 1, 0},
    {"int8", 'i', 1, 0},
    {"int16", 'i', 2, 0},
    {"int32", 'i', 4, 0},
    {"int64", 'i', 8, 0},
    {"uint8", 'u', 1, 0},
    {"uint16", 'u', 2, 0},
    {"uint32", 'u', 4, 0},
    {"uint64", 'u', 8, 0},
    {"float16", 'f', 2, 0},
    {"float32", 'f', 4, 0},
    {"float64", 'f', 8, 0},
    {"complex64", 'c', 8, 0},
    {"complex128", 'c', 16, 0},
    /* zarr-extensions data-types/ */
    {"bfloat16", 'f', 2, ZF_DT_BFLOAT16},
    {"float8_e3m4", 'f', 1, ZF_DT_FLOAT8_E3M4},
    {"float8_e4m3", 'f', 1, ZF_DT_FLOAT8_E4M3},
    {"float8_e4m3b11fnuz", 'f', 1, ZF_DT_FLOAT8_E4M3B11FNUZ},
    {"float8_e4m3fnuz", 'f', 1, ZF_DT_FLOAT8_E4M3FNUZ},
    {"float8_e5m2", 'f', 1, ZF_DT_FLOAT8_E5M2},
    {"float8_e5m2fnuz", 'f', 1, ZF_DT_FLOAT8_E5M2FNUZ},
    {"float8_e8m0fnu", 'f', 1, ZF_DT_FLOAT8_E8M0FNU},
    {"float6_e2m3fn", 'f', 1, ZF_DT_FLOAT6_E2M3FN},
    {"float6_e3m2fn", 'f', 1, ZF_DT_FLOAT6_E3M2FN},
    {"float4_e2m1fn", 'f', 1, ZF_DT_FLOAT4_E2M1FN},
    {"int2", 'i', 1, ZF_DT_INT2},
    {"int4", 'i', 1, ZF_DT_INT4},
    {"uint2", 'u', 1, ZF_DT_UINT2},
    {"uint4", 'u', 1, ZF_DT_UINT4},
    {"complex_bfloat16", 'c', 4, ZF_DT_BFLOAT16},
    {"complex_float16", 'c', 4, 0},
    {"complex_float32", 'c', 8, 0},
    {"complex_float64", 'c', 16, 0},
    {"complex_float8_e3m4", 'c', 2, ZF_DT_FLOAT8_E3M4},
    {"complex_float8_e4m3", 'c', 2, ZF_DT_FLOAT8_E4M3},
    {"complex_float8_e4m3b11fnuz", 'c', 2, ZF_DT_FLOAT8_E4M3B11FNUZ},
    {"complex_float8_e4m3fnuz", 'c', 2, ZF_DT_FLOAT8_E4M3FNUZ},
    {"complex_float8_e5m2", 'c', 2, ZF_DT_FLOAT8_E5M2},
    {"complex_float8_e5m2fnuz", 'c', 2, ZF_DT_FLOAT8_E5M2FNUZ},
    {"complex_float8_e8m0fnu", 'c', 2, ZF_DT_FLOAT8_E8M0FNU},
    {"complex_float6_e2m3fn", 'c', 2, ZF_DT_FLOAT6_E2M3FN},
    {"complex_float6_e3m2fn", 'c', 2, ZF_DT_FLOAT6_E3M2FN},
    {"complex_float4_e2m1fn", 'c', 2, ZF_DT_FLOAT4_E2M1FN},
};

bool zf_dtype_from_v3_name(const char *name, zf_dtype *out)
{
    for (size_t i = 0; i < sizeof V3_NAMES / sizeof *V3_NAMES; i++)
        if (strcmp(name, V3_NAMES[i].name) == 0) {
            size_t unit = V3_NAMES[i].kind == 'c' ? V3_NAMES[i].size / 2u : V3_NAMES[i].size;
            *out = (zf_dtype){.kind = V3_NAMES[i].kind, .byteorder = unit > 1 ? '<' : '|',
                              .ext = V3_NAMES[i].ext, .itemsize = V3_NAMES[i].size};
            return true;
        }
    return false;
}

/* "0x…": at most two hex digits per byte of the element ("0x7fc00000" for float32, "0x07" or
 * "0x7" for float4_e2m1fn), whose value fits in `bits` bits. */
static bool hex_bits(const char *s, unsigned bits, uint64_t *out)
{
    if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || !s[2] ||
        strlen(s + 2) > (bits + 7) / 8 * 2)
        return false;
    uint64_t v = 0;
    for (const char *p = s + 2; *p; p++) {
        if (!isxdigit((unsigned char)*p))
            return false;
        v = v << 4 | (uint64_t)(isdigit((unsigned char)*p) ? *p - '0'
                                                           : tolower((unsigned char)*p) - 'a' + 10);
    }
    if (bits < 64 && v >> bits)
        return false;
    *out = v;
    return true;
}

/* One float component of format f (flat encoding at out, little-endian). */
static bool float_scalar(yajl_val v, const zf_dtype *dt, const zf_float_format *f, uint8_t *out,
                         const char **why)
{
    const char *s = zf_json_special(v) ? zf_json_special(v) : YAJL_IS_STRING(v) ? v->u.string
                                                                                : NULL;
    uint64_t b;
    *why = NULL;
    if (YAJL_IS_NUMBER(v)) {
        double d = strtod(v->u.number.r, NULL);
        if (!f->has_sign && d < 0) {
            *why = "a negative number for a type without sign";
            return false;
        }
        if (!zf_float_round(f, d, ZF_ROUND_NEAREST_EVEN, &b)) {
            if (!f->has_inf) {
                *why = "a number beyond the type's range";
                return false;
            }
            b = zf_float_from_double(f, d); /* an infinity, as IEEE rounding overflows */
        }
    } else if (s && strcmp(s, "NaN") == 0) {
        if (f->nan == ZF_NAN_NONE) {
            *why = "\"NaN\" (the type has no NaN)";
            return false;
        }
        b = f->nan_bits;
    } else if (s && (strcmp(s, "Infinity") == 0 || strcmp(s, "+Infinity") == 0 ||
                     strcmp(s, "-Infinity") == 0)) {
        if (!f->has_inf) {
            *why = "an infinity (the type has none)";
            return false;
        }
        b = zf_float_from_double(f, s[0] == '-' ? -INFINITY : INFINITY);
    } else if (!s || !hex_bits(s, f->bits, &b)) {
        return false;
    }
    store_bits(out, dt->itemsize, false, b);
    return true;
}

zf_status zf_dtype_v3_scalar(yajl_val v, const zf_dtype *dt, uint8_t *out, zf_err *err)
{
    memset(out, 0, dt->itemsize);
    const char *why = NULL;
    switch (dt->kind) {
    case 'b':
        if (YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v)) {
            out[0] = YAJL_IS_TRUE(v);
            return ZF_OK;
        }
        return zf_fail(err, ZF_ERR_INVALID, "expected true or false");
    case 'i':
    case 'u': {
        unsigned bits = zf_dtype_component_bits(dt);
        int64_t i;
        uint64_t u;
        bool ok;
        zf_num n;
        if (dt->kind == 'u' && zf_json_uint64(v, &u)) {
            ok = bits == 64 || u >> bits == 0;
            n = (zf_num){.kind = 'u', .v.u = u};
        } else if (zf_json_int64(v, &i)) {
            ok = dt->kind == 'u' ? i >= 0 && (bits == 64 || (uint64_t)i >> bits == 0)
                                 : bits == 64 || (i >= -((int64_t)1 << (bits - 1)) &&
                                                  i < ((int64_t)1 << (bits - 1)));
            n = (zf_num){.kind = 'i', .v.i = i};
        } else if (YAJL_IS_NUMBER(v) && !strpbrk(v->u.number.r, ".eE")) {
            ok = false;
            n = (zf_num){.kind = 'i'};
        } else {
            return zf_fail(err, ZF_ERR_INVALID, "expected an integer");
        }
        if (!ok)
            return zf_fail(err, ZF_ERR_INVALID, "integer out of range");
        zf_dtype_store(dt, out, 0, n);
        return ZF_OK;
    }
    case 'f': {
        const zf_float_format *f = zf_dtype_float_format(dt);
        if (f && float_scalar(v, dt, f, out, &why))
            return ZF_OK;
        break;
    }
    case 'c': {
        const zf_float_format *f = zf_dtype_float_format(dt);
        zf_dtype part = *dt;
        part.kind = 'f';
        part.itemsize = dt->itemsize / 2;
        if (f && YAJL_IS_ARRAY(v) && v->u.array.len == 2 &&
            float_scalar(v->u.array.values[0], &part, f, out, &why) &&
            float_scalar(v->u.array.values[1], &part, f, out + part.itemsize, &why))
            return ZF_OK;
        if (why)
            return zf_fail(err, ZF_ERR_INVALID, "[real, imag]: %s", why);
        return zf_fail(err, ZF_ERR_INVALID,
                       "expected [real, imag] with each a number, \"NaN\", \"Infinity\", "
                       "\"-Infinity\" or \"0x...\"");
    }
    default: return zf_fail(err, ZF_ERR_INVALID, "not a numeric type");
    }
    if (why)
        return zf_fail(err, ZF_ERR_INVALID, "%s", why);
    return zf_fail(err, ZF_ERR_INVALID,
                   "expected a number, \"NaN\", \"Infinity\", \"-Infinity\" or \"0x...\"");
}
