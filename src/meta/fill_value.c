/* fill_value.c — Zarr v2 "Fill value encoding": JSON fill values to element bytes.
 *
 * Integers are parsed from the number's text, so 64-bit values are exact; floats accept the
 * spec's "NaN", "Infinity", "-Infinity"; complex numbers are [real, imag]; S, V and structured
 * types are base64 of the raw bytes; U is the string itself (zarr-python 2 writes it so);
 * null means no fill value and reads as zero bytes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta_impl.h"
#include "zarrfs/json.h"

static zf_status bad(zf_err *err, const zf_dtype *dt, const char *what)
{
    char ts[32];
    zf_dtype_format(dt, ts, sizeof ts);
    return zf_fail(err, ZF_ERR_INVALID, "\"fill_value\": %s for data type \"%s\"", what, ts);
}

/* A float from a JSON number or one of the spec's special strings. */
static int float_value(yajl_val v, double *out)
{
    if (YAJL_IS_NUMBER(v)) {
        *out = strtod(v->u.number.r, NULL);
        return 1;
    }
    if (YAJL_IS_STRING(v)) {
        const char *s = zf_json_special(v) ? zf_json_special(v) : v->u.string;
        if (strcmp(s, "NaN") == 0)
            *out = NAN;
        else if (strcmp(s, "Infinity") == 0 || strcmp(s, "+Infinity") == 0)
            *out = INFINITY;
        else if (strcmp(s, "-Infinity") == 0)
            *out = -INFINITY;
        else
            return 0;
        return 1;
    }
    return 0;
}

static zf_status integer_fill(yajl_val v, const zf_dtype *dt, uint8_t *out, zf_err *err)
{
    unsigned bits = (unsigned)(8 * dt->itemsize);
    zf_num num;
    if (YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v)) {
        num.kind = 'i';
        num.v.i = YAJL_IS_TRUE(v);
    } else if (YAJL_IS_STRING(v) && strchr("mM", dt->kind) && strcmp(v->u.string, "NaT") == 0) {
        num.kind = 'i';
        num.v.i = INT64_MIN;
    } else if (dt->kind == 'u' && zf_json_uint64(v, &num.v.u)) {
        num.kind = 'u';
        if (bits < 64 && num.v.u >> bits)
            return bad(err, dt, "integer out of range");
    } else if (zf_json_int64(v, &num.v.i)) {
        num.kind = 'i';
        if (dt->kind == 'u' ? num.v.i < 0
                            : bits < 64 && (num.v.i < -((int64_t)1 << (bits - 1)) ||
                                            num.v.i >= ((int64_t)1 << (bits - 1))))
            return bad(err, dt, "integer out of range");
    } else if (YAJL_IS_NUMBER(v) && !strpbrk(v->u.number.r, ".eE")) {
        return bad(err, dt, "integer out of range"); /* NumPy refuses it too */
    } else if (YAJL_IS_NUMBER(v)) { /* 1.0 or 1e3: NumPy casts it */
        num.kind = 'f';
        num.v.f = strtod(v->u.number.r, NULL);
    } else {
        return bad(err, dt, "expected an integer");
    }
    zf_dtype_store(dt, out, 0, num);
    return ZF_OK;
}

/* Python's str() of a JSON number or boolean: zarr-python 2 stores e.g. `0` as the fill value
 * of a "<U4" array, and NumPy turns it into the string "0". */
static bool python_str(yajl_val v, char *buf, size_t n)
{
    if (YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v)) {
        snprintf(buf, n, "%s", YAJL_IS_TRUE(v) ? "True" : "False");
        return true;
    }
    if (!YAJL_IS_NUMBER(v))
        return false;
    int64_t i;
    if (zf_json_int64(v, &i) || strspn(v->u.number.r, "-0123456789") == strlen(v->u.number.r)) {
        snprintf(buf, n, "%s", v->u.number.r); /* integers: exact, any size */
        return true;
    }
    double d = strtod(v->u.number.r, NULL);
    if (isinf(d)) {
        snprintf(buf, n, "%s", d > 0 ? "inf" : "-inf");
        return true;
    }
    for (int prec = 1; prec <= 17; prec++) { /* repr(): the shortest text that round-trips */
        snprintf(buf, n, "%.*g", prec, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    if (!strpbrk(buf, ".en")) /* 1000.0, not 1000 */
        strncat(buf, ".0", n - strlen(buf) - 1);
    return true;
}

/* S and V: base64 of the bytes. For S, zarr-python 2 is lenient: a value that is not base64
 * (e.g. the number 0) becomes NumPy's bytes of its text, b"0". */
static zf_status bytes_fill(yajl_val v, const zf_dtype *dt, uint8_t *out, zf_err *err)
{
    char text[64];
    if (!YAJL_IS_STRING(v)) {
        if (dt->kind != 'S' || !python_str(v, text, sizeof text))
            return bad(err, dt, "expected a base64 string");
        size_t n = strlen(text);
        memcpy(out, text, n < dt->itemsize ? n : dt->itemsize);
        return ZF_OK;
    }
    uint8_t *raw;
    size_t n;
    zf_status st = zf_base64_decode(v->u.string, &raw, &n);
    if (st == ZF_ERR_NOMEM)
        return st;
    if (st != ZF_OK) {
        if (dt->kind != 'S')
            return bad(err, dt, "not valid base64");
        n = strlen(v->u.string);
        memcpy(out, v->u.string, n < dt->itemsize ? n : dt->itemsize);
        return ZF_OK;
    }
    memcpy(out, raw, n < dt->itemsize ? n : dt->itemsize); /* NumPy pads or truncates */
    free(raw);
    return ZF_OK;
}

zf_status zf_meta_v2_fill_value_val(yajl_val v, const zf_dtype *dt, uint8_t *out, zf_err *err)
{
    memset(out, 0, dt->itemsize);
    if (v == NULL || YAJL_IS_NULL(v))
        return ZF_OK;
    switch (dt->kind) {
    case 'b':
        if (YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v)) {
            out[0] = YAJL_IS_TRUE(v);
            return ZF_OK;
        }
        if (YAJL_IS_NUMBER(v)) {
            out[0] = strtod(v->u.number.r, NULL) != 0;
            return ZF_OK;
        }
        return bad(err, dt, "expected true or false");
    case 'i':
    case 'u':
    case 'm':
    case 'M': return integer_fill(v, dt, out, err);
    case 'f': {
        double d;
        if (!float_value(v, &d))
            return bad(err, dt, "expected a number, \"NaN\", \"Infinity\" or \"-Infinity\"");
        zf_dtype_store(dt, out, 0, (zf_num){.kind = 'f', .v.f = d});
        return ZF_OK;
    }
    case 'c': {
        zf_dtype part = *dt;
        part.kind = 'f';
        part.itemsize = dt->itemsize / 2;
        double re, im = 0;
        if (YAJL_IS_ARRAY(v) && v->u.array.len == 2) {
            if (!float_value(v->u.array.values[0], &re) || !float_value(v->u.array.values[1], &im))
                return bad(err, dt, "expected [real, imag] numbers");
        } else if (!float_value(v, &re)) {
            return bad(err, dt, "expected [real, imag]");
        }
        zf_dtype_store(&part, out, 0, (zf_num){.kind = 'f', .v.f = re});
        zf_dtype_store(&part, out, 1, (zf_num){.kind = 'f', .v.f = im});
        return ZF_OK;
    }
    case 'U': {
        char text[64];
        const char *s = text;
        if (YAJL_IS_STRING(v))
            s = v->u.string;
        else if (!python_str(v, text, sizeof text))
            return bad(err, dt, "expected a string");
        if (zf_utf8_to_utf32(s, strlen(s), out, dt->itemsize / 4, dt->byteorder == '>') != ZF_OK)
            return bad(err, dt, "not valid UTF-8");
        return ZF_OK;
    }
    case 'S':
    case 'V': return bytes_fill(v, dt, out, err);
    }
    return bad(err, dt, "unsupported data type");
}

zf_status zf_meta_v2_fill_value(const char *json, const zf_dtype *dt, uint8_t *out, zf_err *err)
{
    yajl_val v;
    zf_status st = zf_json_parse("fill_value", json, strlen(json), &v, err);
    if (st != ZF_OK)
        return st;
    st = zf_meta_v2_fill_value_val(v, dt, out, err);
    yajl_tree_free(v);
    return st;
}
