/* config.c — reading numcodecs configuration objects (the `compressor` and `filters` entries of
 * a .zarray), and the small helpers every codec file uses to allocate itself and describe its
 * encoded representation. Field errors name the codec and the field. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "codec_impl.h"

yajl_val zf_cfg_get(yajl_val cfg, const char *key)
{
    if (!YAJL_IS_OBJECT(cfg))
        return NULL;
    for (size_t i = 0; i < cfg->u.object.len; i++)
        if (strcmp(cfg->u.object.keys[i], key) == 0)
            return cfg->u.object.values[i];
    return NULL;
}

/* A JSON number written as an integer (no fraction or exponent): Python reads it as an int. */
static bool written_as_int(yajl_val v)
{
    const char *r = v->u.number.r;
    return r && !strpbrk(r, ".eE");
}

zf_status zf_cfg_int(yajl_val cfg, const char *codec, const char *key, bool required,
                     bool null_ok, long long def, long long min, long long max, long long *out,
                     zf_err *err)
{
    yajl_val v = zf_cfg_get(cfg, key);
    if (!v || (null_ok && YAJL_IS_NULL(v))) {
        if (required)
            return zf_fail(err, ZF_ERR_INVALID, "%s: \"%s\": missing", codec, key);
        *out = def;
        return ZF_OK;
    }
    if (!YAJL_IS_INTEGER(v) || !written_as_int(v))
        return zf_fail(err, ZF_ERR_INVALID, "%s: \"%s\": expected an integer%s", codec, key,
                       null_ok ? " or null" : "");
    long long i = v->u.number.i;
    if (i < min || i > max)
        return zf_fail(err, ZF_ERR_INVALID, "%s: \"%s\": %lld is out of range [%lld, %lld]",
                       codec, key, i, min, max);
    *out = i;
    return ZF_OK;
}

zf_status zf_cfg_number(yajl_val cfg, const char *codec, const char *key, bool required,
                        double def, double *out, bool *is_int, zf_err *err)
{
    yajl_val v = zf_cfg_get(cfg, key);
    if (!v) {
        if (required)
            return zf_fail(err, ZF_ERR_INVALID, "%s: \"%s\": missing", codec, key);
        *out = def;
        if (is_int)
            *is_int = def == floor(def);
        return ZF_OK;
    }
    if (!YAJL_IS_NUMBER(v) || !(v->u.number.flags & YAJL_NUMBER_DOUBLE_VALID))
        return zf_fail(err, ZF_ERR_INVALID, "%s: \"%s\": expected a number", codec, key);
    bool as_int = written_as_int(v);
    /* Prefer the exact integer when there is one (integers beyond 2^53 round once, here). */
    *out = as_int && YAJL_IS_INTEGER(v) ? (double)v->u.number.i : v->u.number.d;
    if (is_int)
        *is_int = as_int;
    return ZF_OK;
}

zf_status zf_cfg_bool(yajl_val cfg, const char *codec, const char *key, bool def, bool *out,
                      zf_err *err)
{
    yajl_val v = zf_cfg_get(cfg, key);
    if (!v || YAJL_IS_NULL(v)) {
        *out = def;
        return ZF_OK;
    }
    if (YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v)) {
        *out = YAJL_IS_TRUE(v);
        return ZF_OK;
    }
    if (YAJL_IS_INTEGER(v) && written_as_int(v) && (v->u.number.i == 0 || v->u.number.i == 1)) {
        *out = v->u.number.i == 1;
        return ZF_OK;
    }
    return zf_fail(err, ZF_ERR_INVALID, "%s: \"%s\": expected true or false", codec, key);
}

zf_status zf_cfg_string(yajl_val cfg, const char *codec, const char *key, bool required,
                        const char **out, zf_err *err)
{
    yajl_val v = zf_cfg_get(cfg, key);
    if (!v || (!required && YAJL_IS_NULL(v))) {
        if (required)
            return zf_fail(err, ZF_ERR_INVALID, "%s: \"%s\": missing", codec, key);
        *out = NULL;
        return ZF_OK;
    }
    if (!YAJL_IS_STRING(v))
        return zf_fail(err, ZF_ERR_INVALID, "%s: \"%s\": expected a string", codec, key);
    *out = v->u.string;
    return ZF_OK;
}

/* NumPy also accepts type names and typestrs without a byte order; numcodecs writes typestrs,
 * but hand-written metadata may not. */
static const struct {
    const char *name, *typestr;
} dtype_names[] = {
    {"bool", "|b1"},     {"int8", "|i1"},     {"uint8", "|u1"},    {"int16", "<i2"},
    {"uint16", "<u2"},   {"int32", "<i4"},    {"uint32", "<u4"},   {"int64", "<i8"},
    {"uint64", "<u8"},   {"float16", "<f2"},  {"float32", "<f4"},  {"float64", "<f8"},
    {"complex64", "<c8"}, {"complex128", "<c16"},
};

zf_status zf_cfg_dtype(yajl_val cfg, const char *codec, const char *key, bool required,
                       const zf_dtype *def, zf_dtype *out, zf_err *err)
{
    yajl_val v = zf_cfg_get(cfg, key);
    if (!v || YAJL_IS_NULL(v)) {
        if (def) {
            *out = *def;
            return ZF_OK;
        }
        if (required)
            return zf_fail(err, ZF_ERR_INVALID, "%s: \"%s\": missing", codec, key);
        memset(out, 0, sizeof *out);
        return ZF_OK;
    }
    if (!YAJL_IS_STRING(v))
        return zf_fail(err, ZF_ERR_INVALID, "%s: \"%s\": expected a NumPy data type string",
                       codec, key);
    const char *s = v->u.string;
    char buf[64];
    for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
        if (strcmp(s, dtype_names[i].name) == 0)
            s = dtype_names[i].typestr;
    if (s[0] && strchr("biufcmMSUVO", s[0]) && strlen(s) < sizeof buf - 1) {
        snprintf(buf, sizeof buf, "%c%s", s[0] == 'b' || s[0] == 'S' || s[0] == 'V' ? '|' : '<',
                 s);
        s = buf;
    }
    zf_err derr = {""};
    if (zf_dtype_parse(s, out, &derr) != ZF_OK)
        return zf_fail(err, ZF_ERR_INVALID, "%s: \"%s\": %s", codec, key, derr.msg);
    /* NumPy ignores the byte order of single-byte types. */
    if (out->itemsize <= 1 && out->kind != 'U')
        out->byteorder = '|';
    return ZF_OK;
}

/* --- representations --- */

void zf_repr_bytes(zf_chunk_repr *r, size_t nbytes)
{
    memset(r, 0, sizeof *r);
    r->ndim = 1;
    r->shape[0] = nbytes == ZF_SIZE_UNKNOWN ? 0 : nbytes;
    r->dtype.kind = 'u';
    r->dtype.byteorder = '|';
    r->dtype.itemsize = 1;
    r->nbytes = nbytes;
}

void zf_repr_flat(zf_chunk_repr *r, const zf_dtype *dt, size_t n)
{
    memset(r, 0, sizeof *r);
    r->ndim = 1;
    r->shape[0] = n;
    r->dtype = *dt;
    r->nbytes = n * dt->itemsize;
}

zf_status zf_repr_count(const char *codec, size_t nbytes, size_t itemsize, const char *typestr,
                        size_t *n, zf_err *err)
{
    if (itemsize == 0) {
        if (nbytes != 0)
            return zf_fail(err, ZF_ERR_INVALID, "%s: %zu bytes cannot hold elements of %s",
                           codec, nbytes, typestr);
        *n = 0;
        return ZF_OK;
    }
    if (nbytes % itemsize)
        return zf_fail(err, ZF_ERR_INVALID,
                       "%s: %zu bytes is not a whole number of %s elements (%zu bytes each)",
                       codec, nbytes, typestr, itemsize);
    *n = nbytes / itemsize;
    return ZF_OK;
}

zf_status zf_resolve_compressed(const zf_codec *c, const zf_chunk_repr *decoded,
                                zf_chunk_repr *encoded, zf_err *err)
{
    (void)c;
    (void)decoded;
    (void)err;
    zf_repr_bytes(encoded, ZF_SIZE_UNKNOWN);
    return ZF_OK;
}

void *zf_codec_alloc(size_t size, const zf_codec_ops *ops)
{
    zf_codec *c = calloc(1, size);
    if (c)
        c->ops = ops;
    return c;
}

void zf_codec_destroy_plain(zf_codec *c)
{
    free(c);
}

const char *zf_dtype_str(const zf_dtype *dt, char *buf)
{
    zf_dtype d = *dt;
    if (d.kind == 'O')
        d.unit[0] = '\0'; /* "string"/"bytes" (zf_vlen_dtype_utf8) is no NumPy unit */
    zf_dtype_format(&d, buf, 32);
    return buf;
}

zf_status zf_codec_too_long(zf_err *err, const char *codec, size_t out_len)
{
    if (out_len == ZF_SIZE_UNKNOWN)
        return zf_fail(err, ZF_ERR_CORRUPT, "%s: data decodes to more than the buffer holds",
                       codec);
    return zf_fail(err, ZF_ERR_CORRUPT, "%s: data decodes to more than the expected %zu bytes",
                   codec, out_len);
}

zf_status zf_codec_too_short(zf_err *err, const char *codec, size_t got, size_t out_len)
{
    if (out_len == ZF_SIZE_UNKNOWN)
        return zf_fail(err, ZF_ERR_CORRUPT, "%s: stream ends early (after %zu decoded bytes)",
                       codec, got);
    return zf_fail(err, ZF_ERR_CORRUPT, "%s: stream ends early (decoded %zu of %zu bytes)", codec,
                   got, out_len);
}
