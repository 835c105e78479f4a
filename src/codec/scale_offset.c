/* scale_offset.c — the zarr-extensions "scale_offset" codec (array -> array; registry document
 * codecs/scale_offset/README.md).
 *
 * Encoding is out = (in - offset) * scale, decoding out = (in / scale) + offset, "performed
 * using the arithmetic semantics of the input array's data type"; "if any intermediate or final
 * value produced during encoding or decoding is not representable in that data type,
 * implementations MUST treat this as an error". offset and scale (defaults 0 and 1) are written
 * in the fill value encoding of the array's data type; other configuration keys are invalid.
 * The data type is the same on both sides. The fill value is transformed as the elements are
 * ("Fill value handling": encode_fill).
 *
 * zarrfs reads that as follows (docs/formats.md "scale_offset"):
 * - floating-point types: each operation is done exactly and rounded once to the array's own
 *   type (float32 data in float32, float64 in double; float16 and the types zf_dtype_store
 *   knows by rounding the exact double result, which for +, -, *, / equals the type's own
 *   arithmetic). A result that is not finite although both operands are (an overflow, a
 *   division by zero, 0/0) is not representable; NaN and infinite elements pass through as IEEE
 *   arithmetic makes them (a "NaN" fill value stays NaN);
 * - integer types: exact integer arithmetic; a result outside the type's range (a negative
 *   difference for unsigned types) is not representable, and so is a quotient with a remainder
 *   (7 / 2 has no integer value; zarr-python 3 floors it, zarrita.js truncates it: reading
 *   neither way would be a guess). scale 0 is refused when the codec is built (nothing could
 *   be decoded).
 * Not representable is ZF_ERR_CORRUPT when decoding, ZF_ERR_INVALID when encoding, naming the
 * codec and the element. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_impl.h"
#include "zarrfs/json.h"

#define NAME "scale_offset"

typedef struct scale_offset {
    zf_codec base;
    zf_dtype dt;    /* the array's data type (both sides) */
    char num_kind;  /* 'f', 'i' or 'u': how zf_dtype_load gives its values */
    zf_num offset;  /* of num_kind */
    zf_num scale;
} scale_offset;

/* --- the configuration: values in the fill value encoding of the data type --- */

/* "0x" followed by at most 2 * itemsize hex digits: the element's bits as an integer. */
static bool hex_bits(const char *s, size_t itemsize, uint8_t *out)
{
    if (s[0] != '0' || s[1] != 'x' || !s[2] || strlen(s + 2) > 2 * itemsize || itemsize > 8)
        return false;
    uint64_t v = 0;
    for (const char *p = s + 2; *p; p++) {
        int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
              : *p >= 'A' && *p <= 'F' ? *p - 'A' + 10 : -1;
        if (d < 0)
            return false;
        v = v << 4 | (uint64_t)d;
    }
    for (size_t i = 0; i < itemsize; i++)
        out[i] = (uint8_t)(v >> (8 * i)); /* the flat encoding is little-endian */
    return true;
}

/* One element of s->dt from the JSON value v (Zarr v3 "fill_value": integers exact and in
 * range; floats a number, "NaN", "Infinity", "-Infinity" or "0x..." bits). */
static zf_status parse_value(const scale_offset *s, yajl_val v, const char *key, zf_num def,
                             zf_num *out, zf_err *err)
{
    uint8_t elem[16] = {0};
    char ts[32];
    if (!v) {
        *out = def;
        return ZF_OK;
    }
    if (s->num_kind == 'f') {
        const char *str = zf_json_special(v) ? zf_json_special(v)
                          : YAJL_IS_STRING(v)  ? v->u.string
                                               : NULL;
        double d = 0;
        bool ok = true;
        if (YAJL_IS_NUMBER(v) && v->u.number.r)
            d = strtod(v->u.number.r, NULL);
        else if (str && strcmp(str, "NaN") == 0)
            d = NAN;
        else if (str && strcmp(str, "Infinity") == 0)
            d = INFINITY;
        else if (str && strcmp(str, "-Infinity") == 0)
            d = -INFINITY;
        else if (str && s->dt.itemsize <= sizeof elem && hex_bits(str, s->dt.itemsize, elem)) {
            *out = zf_dtype_load(&s->dt, elem, 0);
            return ZF_OK;
        } else
            ok = false;
        if (!ok)
            return zf_fail(err, ZF_ERR_INVALID,
                           NAME ": \"%s\": expected a number, \"NaN\", \"Infinity\", "
                                "\"-Infinity\" or \"0x...\" for data type %s",
                           key, zf_dtype_str(&s->dt, ts));
        zf_dtype_store(&s->dt, elem, 0, (zf_num){.kind = 'f', .v.f = d});
        *out = zf_dtype_load(&s->dt, elem, 0);
        return ZF_OK;
    }
    zf_num n = {.kind = s->num_kind};
    bool ok = s->num_kind == 'u' ? zf_json_uint64(v, &n.v.u) : zf_json_int64(v, &n.v.i);
    if (ok && YAJL_IS_NUMBER(v) && strpbrk(v->u.number.r, ".eE"))
        ok = false; /* "a JSON number with no fraction or exponent part" */
    if (ok) {
        zf_dtype_store(&s->dt, elem, 0, n);
        zf_num back = zf_dtype_load(&s->dt, elem, 0);
        ok = back.v.u == n.v.u;
    }
    if (!ok)
        return zf_fail(err, ZF_ERR_INVALID,
                       NAME ": \"%s\": expected an integer within the range of data type %s", key,
                       zf_dtype_str(&s->dt, ts));
    *out = n;
    return ZF_OK;
}

/* --- the arithmetic --- */

/* v rounded to the data type (a value it can hold), through an element of it. */
static zf_num to_type(const scale_offset *s, zf_num v)
{
    uint8_t elem[16];
    zf_dtype_store(&s->dt, elem, 0, v);
    return zf_dtype_load(&s->dt, elem, 0);
}

/* a op b in the data type's arithmetic ('-', '*', '/', '+'); false when a value is not
 * representable (see the top of the file). */
static bool arith(const scale_offset *s, char op, zf_num a, zf_num b, zf_num *r)
{
    if (s->num_kind == 'f') {
        double x = a.v.f, y = b.v.f;
        double e = op == '-' ? x - y : op == '*' ? x * y : op == '/' ? x / y : x + y;
        *r = to_type(s, (zf_num){.kind = 'f', .v.f = e});
        return isfinite(r->v.f) || !isfinite(x) || !isfinite(y);
    }
    bool ovf;
    if (s->num_kind == 'u') {
        uint64_t x = a.v.u, y = b.v.u, e = 0;
        switch (op) {
        case '-': ovf = __builtin_sub_overflow(x, y, &e); break;
        case '*': ovf = __builtin_mul_overflow(x, y, &e); break;
        case '+': ovf = __builtin_add_overflow(x, y, &e); break;
        default: ovf = y == 0 || x % y != 0; e = ovf ? 0 : x / y; break;
        }
        r->kind = 'u';
        r->v.u = e;
    } else {
        int64_t x = a.v.i, y = b.v.i, e = 0;
        switch (op) {
        case '-': ovf = __builtin_sub_overflow(x, y, &e); break;
        case '*': ovf = __builtin_mul_overflow(x, y, &e); break;
        case '+': ovf = __builtin_add_overflow(x, y, &e); break;
        default:
            ovf = y == 0 || (x == INT64_MIN && y == -1) || x % y != 0;
            e = ovf ? 0 : x / y;
            break;
        }
        r->kind = 'i';
        r->v.i = e;
    }
    return !ovf && to_type(s, *r).v.u == r->v.u; /* within the type's own width */
}

/* One element: encode (in - offset) * scale, or decode (in / scale) + offset. */
static bool transform(const scale_offset *s, bool encode, zf_num in, zf_num *out)
{
    zf_num t;
    if (encode)
        return arith(s, '-', in, s->offset, &t) && arith(s, '*', t, s->scale, out);
    return arith(s, '/', in, s->scale, &t) && arith(s, '+', t, s->offset, out);
}

static void num_text(const zf_num *v, char *buf, size_t n)
{
    if (v->kind == 'f')
        snprintf(buf, n, "%.17g", v->v.f);
    else if (v->kind == 'u')
        snprintf(buf, n, "%llu", (unsigned long long)v->v.u);
    else
        snprintf(buf, n, "%lld", (long long)v->v.i);
}

static zf_status run(const scale_offset *s, bool encode, const uint8_t *in, size_t count,
                     uint8_t *out, zf_err *err)
{
    for (size_t i = 0; i < count; i++) {
        zf_num v = zf_dtype_load(&s->dt, in, i), r;
        if (!transform(s, encode, v, &r)) {
            char vt[40], ts[32];
            num_text(&v, vt, sizeof vt);
            return zf_fail(err, encode ? ZF_ERR_INVALID : ZF_ERR_CORRUPT,
                           NAME ": element %zu (%s): %s is not representable in data type %s",
                           i, vt, encode ? "(value - offset) * scale" : "value / scale + offset",
                           zf_dtype_str(&s->dt, ts));
        }
        zf_dtype_store(&s->dt, out, i, r);
    }
    return ZF_OK;
}

/* --- the codec --- */

static bool same_type(const zf_dtype *a, const zf_dtype *b)
{
    return a->kind == b->kind && a->itemsize == b->itemsize && a->byteorder == b->byteorder;
}

static zf_status so_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                            zf_chunk_repr *encoded, zf_err *err)
{
    const scale_offset *s = (const scale_offset *)c;
    char ts[32];
    if (!same_type(&decoded->dtype, &s->dt))
        return zf_fail(err, ZF_ERR_INVALID, NAME ": built for data type %s, applied to another",
                       zf_dtype_str(&s->dt, ts));
    *encoded = *decoded;
    return ZF_OK;
}

static zf_status so_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                           size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    const scale_offset *s = (const scale_offset *)c;
    (void)decoded;
    if (in_len != out_len || out_len % s->dt.itemsize)
        return zf_fail(err, ZF_ERR_CORRUPT, NAME ": %zu bytes in, %zu expected", in_len,
                       out_len);
    return run(s, false, in, out_len / s->dt.itemsize, out, err);
}

static zf_status so_decoded_size(const zf_codec *c, const uint8_t *in, size_t in_len,
                                 size_t *out_len, zf_err *err)
{
    (void)c, (void)in, (void)err;
    *out_len = in_len;
    return ZF_OK;
}

static zf_status so_encode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                           size_t in_len, unsigned flags, uint8_t **out, size_t *out_len,
                           zf_err *err)
{
    const scale_offset *s = (const scale_offset *)c;
    (void)decoded, (void)flags;
    if (in_len % s->dt.itemsize)
        return zf_fail(err, ZF_ERR_INVALID, NAME ": %zu bytes is not a whole number of elements",
                       in_len);
    uint8_t *o = zf_enc_alloc(in_len);
    if (!o)
        return ZF_ERR_NOMEM;
    zf_status st = run(s, true, in, in_len / s->dt.itemsize, o, err);
    if (st != ZF_OK) {
        free(o);
        return st;
    }
    *out = o;
    *out_len = in_len;
    return ZF_OK;
}

static zf_status so_encode_fill(const zf_codec *c, const uint8_t *fill, uint8_t *out,
                                zf_err *err)
{
    const scale_offset *s = (const scale_offset *)c;
    zf_err e = {""};
    if (run(s, true, fill, 1, out, &e) != ZF_OK)
        return zf_fail(err, ZF_ERR_INVALID, NAME ": the fill value: %s",
                       strstr(e.msg, "): ") ? strstr(e.msg, "): ") + 3 : e.msg);
    return ZF_OK;
}

static const zf_codec_ops scale_offset_ops = {
    .name = NAME,
    .kind = ZF_CODEC_ARRAY_TO_ARRAY,
    .resolve = so_resolve,
    .decode = so_decode,
    .destroy = zf_codec_destroy_plain,
    .decoded_size = so_decoded_size,
    .encode = so_encode,
    .encode_fill = so_encode_fill,
};

zf_status zf_codec_scale_offset_new(yajl_val cfg, const zf_chunk_repr *decoded, zf_codec **out,
                                    zf_err *err)
{
    static const char *const keys[] = {"offset", "scale", NULL};
    *out = NULL;
    zf_status st = zf_v3_check_keys(cfg, NAME, keys, err);
    if (st != ZF_OK)
        return st;
    const zf_dtype *dt = &decoded->dtype;
    char ts[32];
    /* "only defined for data types where multiplication, division, addition, and subtraction
     * are well-defined": the integer and floating-point types. */
    if (!zf_dtype_is_numeric(dt) || strchr("bmM", dt->kind) || dt->itemsize == 0 ||
        dt->itemsize > 8)
        return zf_fail(err, ZF_ERR_INVALID, NAME ": data type %s is not an integer or "
                       "floating-point type", zf_dtype_str(dt, ts));
    uint8_t zero[16] = {0};
    zf_num z = zf_dtype_load(dt, zero, 0);
    if (!strchr("fiu", z.kind))
        return zf_fail(err, ZF_ERR_UNSUPPORTED, NAME ": data type %s is not supported",
                       zf_dtype_str(dt, ts));
    scale_offset *s = zf_codec_alloc(sizeof *s, &scale_offset_ops);
    if (!s)
        return ZF_ERR_NOMEM;
    s->dt = *dt;
    s->num_kind = z.kind;
    zf_num zero_v = {.kind = z.kind}, one = {.kind = z.kind};
    if (z.kind == 'f')
        one.v.f = 1;
    else
        one.v.u = 1; /* 1 as int64 or uint64 alike */
    if ((st = parse_value(s, zf_cfg_get(cfg, "offset"), "offset", zero_v, &s->offset, err)) ||
        (st = parse_value(s, zf_cfg_get(cfg, "scale"), "scale", one, &s->scale, err))) {
        free(s);
        return st;
    }
    if (z.kind == 'f' ? s->scale.v.f == 0 : s->scale.v.u == 0) {
        free(s);
        return zf_fail(err, ZF_ERR_INVALID, NAME ": \"scale\": 0 cannot be decoded (it divides)");
    }
    *out = &s->base;
    return ZF_OK;
}
