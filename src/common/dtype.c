/* dtype.c — NumPy typestr parsing, element loads/stores with NumPy's casts, half floats. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarrfs/dtype.h"

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
        r.v.u = bits;
        break;
    case 'f':
        r.kind = 'f';
        if (n == 2) {
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
        if (n == 2) {
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
