/* dtype_v3.c — named data types and their fill values: final Zarr v3 ("Data Types", "Permitted
 * fill values" of data-types.rst, plus the zarr-extensions registry's types: numpy.datetime64,
 * numpy.timedelta64, fixed_length_utf32, struct, and the numeric ones zf_dtype_from_v3_name
 * knows: bfloat16, float8/6/4, int2/int4/uint2/uint4, complex_*) and the May 2022 draft
 * ("Core data types", "fill_value": also "0x…"/"0b…" bit strings and "+Infinity").
 *
 * The flat encoding of these dialects is little-endian whatever the codecs store (DESIGN.md), so
 * every multi-byte type here has byte order '<'. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta_impl.h"
#include "zarrfs/json.h"
#include "zarrfs/sbuf.h"

/* Variable-length types zarr-python 3 writes ("string" and "bytes" in 3.0; 3.1 also spells them
 * "variable_length_utf8" and "variable_length_bytes"): elements have no fixed size, so they have
 * no flat encoding; the strings read as text (type kind 'O', typestr the name). */
static const char *const VLEN[] = {"string", "variable_length_utf8", "bytes",
                                   "variable_length_bytes"};

/* NumPy's datetime units (zarr-extensions numpy.datetime64 "Unit"); "μs" is NumPy's "us". */
static const char *const TIME_UNITS[] = {"Y", "M",  "W",  "D",  "h",  "m",  "s",      "ms",
                                         "us", "μs", "ns", "ps", "fs", "as", "generic"};

static void set_simple(zf_v3_dtype *out, const char *name, char kind, size_t size)
{
    out->dt = (zf_dtype){.kind = kind, .byteorder = size > 1 && kind != 'V' ? '<' : '|',
                         .itemsize = size};
    snprintf(out->name, sizeof out->name, "%s", name);
    zf_dtype_format(&out->dt, out->typestr, sizeof out->typestr);
}

/* Core and registry numeric types (zf_dtype_from_v3_name); typestr "<c8" for complex_float32,
 * the Zarr name for types NumPy lacks. */
static bool core_type(const char *name, zf_v3_dtype *out)
{
    if (!zf_dtype_from_v3_name(name, &out->dt))
        return false;
    snprintf(out->name, sizeof out->name, "%s", name);
    zf_dtype_format(&out->dt, out->typestr, sizeof out->typestr);
    return true;
}

/* "r<N>": raw bits, N a positive multiple of 8 (data-types.rst "r*"). Returns 0 when name is
 * not of that form, 1 when parsed, -1 when malformed (an error is set). */
static int raw_type(const char *name, zf_v3_dtype *out, zf_err *err)
{
    if (name[0] != 'r' || name[1] < '0' || name[1] > '9')
        return 0;
    uint64_t bits = 0;
    const char *p = name + 1;
    for (; *p >= '0' && *p <= '9'; p++) {
        bits = bits * 10 + (uint64_t)(*p - '0');
        if (bits > ((uint64_t)8 << 31))
            break;
    }
    if (*p && (*p < '0' || *p > '9'))
        return 0; /* "r8x": some other name */
    if (bits == 0 || bits % 8 || bits > ((uint64_t)8 << 31)) {
        zf_fail(err, ZF_ERR_INVALID,
                "data type \"%s\": the number of bits must be a positive multiple of 8", name);
        return -1;
    }
    set_simple(out, name, 'V', (size_t)(bits / 8));
    return 1;
}

static zf_status named(const char *name, zf_v3_dtype *out, zf_err *err)
{
    if (core_type(name, out))
        return ZF_OK;
    int r = raw_type(name, out, err);
    if (r)
        return r > 0 ? ZF_OK : ZF_ERR_INVALID;
    if (strcmp(name, "string") == 0 || strcmp(name, "variable_length_utf8") == 0 ||
        strcmp(name, "bytes") == 0 || strcmp(name, "variable_length_bytes") == 0) {
        /* Variable-length UTF-8 or bytes: no item size; read as text (zf_meta_text_finish). */
        out->dt = (zf_dtype){.kind = 'O', .byteorder = '|', .itemsize = 0};
        snprintf(out->name, sizeof out->name, "%s", name);
        snprintf(out->typestr, sizeof out->typestr, "%s", name);
        return ZF_OK;
    }
    for (size_t i = 0; i < sizeof VLEN / sizeof *VLEN; i++)
        if (strcmp(name, VLEN[i]) == 0)
            return zf_fail(err, ZF_ERR_UNSUPPORTED,
                           "variable-length data type \"%s\" is not supported", name);
    return zf_fail(err, ZF_ERR_UNSUPPORTED, "data type \"%s\" is not supported", name);
}

/* numpy.datetime64 / numpy.timedelta64: {"unit": U, "scale_factor": K} (zarr-extensions
 * "Configuration"); the flat encoding is NumPy's little-endian int64, typestr "<M8[U]" or
 * "<M8[KU]" ("<M8" for the generic unit). */
static zf_status time_type(const char *name, char kind, yajl_val cfg, zf_v3_dtype *out,
                           zf_err *err)
{
    yajl_val unit = zf_json_get(cfg, "unit"), scale = zf_json_get(cfg, "scale_factor");
    const char *u = YAJL_IS_STRING(unit) ? unit->u.string : NULL;
    bool known = false;
    for (size_t i = 0; u && i < sizeof TIME_UNITS / sizeof *TIME_UNITS; i++)
        known |= strcmp(u, TIME_UNITS[i]) == 0;
    if (!known)
        return zf_fail(err, ZF_ERR_INVALID,
                       "data type \"%s\": \"unit\" must be one of Y, M, W, D, h, m, s, ms, us, "
                       "μs, ns, ps, fs, as, generic",
                       name);
    int64_t k = 1;
    if (scale && (!zf_json_int64(scale, &k) || k < 1 || k > INT32_MAX))
        return zf_fail(err, ZF_ERR_INVALID,
                       "data type \"%s\": \"scale_factor\" must be an integer in [1, 2147483647]",
                       name);
    if (strcmp(u, "μs") == 0)
        u = "us";
    out->dt = (zf_dtype){.kind = kind, .byteorder = '<', .itemsize = 8};
    if (strcmp(u, "generic") == 0) {
        if (k != 1)
            return zf_fail(err, ZF_ERR_INVALID,
                           "data type \"%s\": the generic unit takes no \"scale_factor\"", name);
    } else if (k == 1) {
        snprintf(out->dt.unit, sizeof out->dt.unit, "%s", u);
    } else {
        snprintf(out->dt.unit, sizeof out->dt.unit, "%lld%s", (long long)k, u);
    }
    snprintf(out->name, sizeof out->name, "%s", name);
    if (out->dt.unit[0])
        snprintf(out->typestr, sizeof out->typestr, "<%c8[%s]", kind, out->dt.unit);
    else
        snprintf(out->typestr, sizeof out->typestr, "<%c8", kind);
    return ZF_OK;
}

/* fixed_length_utf32: {"length_bytes": N}, N a multiple of 4 in [0, 2147483644]
 * (zarr-extensions fixed_length_utf32 "Configuration"); flat encoding UTF-32LE, "<U(N/4)". */
static zf_status utf32_type(const char *name, yajl_val cfg, zf_v3_dtype *out, zf_err *err)
{
    int64_t n;
    if (!zf_json_int64(zf_json_get(cfg, "length_bytes"), &n) || n < 0 || n % 4 ||
        n > 2147483644)
        return zf_fail(err, ZF_ERR_INVALID,
                       "data type \"%s\": \"length_bytes\" must be a multiple of 4 in "
                       "[0, 2147483644]",
                       name);
    out->dt = (zf_dtype){.kind = 'U', .byteorder = '<', .itemsize = (size_t)n};
    snprintf(out->name, sizeof out->name, "%s", name);
    zf_dtype_format(&out->dt, out->typestr, sizeof out->typestr);
    return ZF_OK;
}

/* Does the bytes codec's "endian" apply to a field of this type (a multi-byte component)? */
static bool has_byte_order(const zf_dtype *dt)
{
    switch (dt->kind) {
    case 'c': return dt->itemsize / 2 > 1;
    case 'i':
    case 'u':
    case 'f':
    case 'm':
    case 'M': return dt->itemsize > 1;
    case 'U': return true;
    case 'V': return dt->ext == ZF_DT_STRUCT || dt->ext == ZF_DT_STRUCTURED;
    default: return false;
    }
}

/* zarr-extensions data-types/struct: {"fields": [{"name": N, "data_type": T}, ...]}, at least
 * one field, names non-empty and unique, each type of fixed size; the element is the fields'
 * flat encodings packed in order ("Bytes codec encoding": no padding). */
/* One field of a struct: {"name": N, "data_type": T} (data-types/struct), or for the legacy
 * alias "structured" also the tuple [N, T] (data-types/structured "Tuple-based field
 * definitions"). False when f is neither, or N is not a non-empty string. */
static bool field_parts(yajl_val f, bool legacy, const char **name, yajl_val *type)
{
    yajl_val n = NULL;
    *type = NULL;
    if (YAJL_IS_OBJECT(f) && f->u.object.len == 2) {
        n = zf_json_get(f, "name");
        *type = zf_json_get(f, "data_type");
    } else if (legacy && YAJL_IS_ARRAY(f) && f->u.array.len == 2) {
        n = f->u.array.values[0];
        *type = f->u.array.values[1];
    }
    if (!YAJL_IS_STRING(n) || !n->u.string[0] || !*type)
        return false;
    *name = n->u.string;
    return true;
}

static zf_status struct_type(yajl_val v, yajl_val cfg, bool legacy, zf_v3_dtype *out,
                             zf_err *err)
{
    const char *tname = legacy ? "structured" : "struct";
    static const char *const keys[] = {"fields"};
    for (size_t k = 0; cfg && k < cfg->u.object.len; k++)
        if (strcmp(cfg->u.object.keys[k], keys[0]) != 0)
            return zf_fail(err, ZF_ERR_INVALID, "data type \"%s\": \"%.100s\": unknown "
                           "configuration field", tname, cfg->u.object.keys[k]);
    yajl_val fields = zf_json_get(cfg, "fields");
    if (!YAJL_IS_ARRAY(fields) || fields->u.array.len == 0)
        return zf_fail(err, ZF_ERR_INVALID,
                       "data type \"%s\": \"fields\": expected a list of at least one field",
                       tname);
    zf_sbuf d = {0};
    bool numpy = true, multi = false;
    uint64_t size = 0;
    zf_status st = ZF_OK;
    zf_sbuf_printf(&d, "[");
    for (size_t i = 0; i < fields->u.array.len && st == ZF_OK; i++) {
        const char *fname, *other;
        yajl_val ftype, unused;
        if (!field_parts(fields->u.array.values[i], legacy, &fname, &ftype)) {
            st = zf_fail(err, ZF_ERR_INVALID, "data type \"%s\": fields[%zu]: expected "
                         "{\"name\": a non-empty string, \"data_type\": a data type}%s", tname,
                         i, legacy ? " or [name, data type]" : "");
            break;
        }
        for (size_t j = 0; j < i && st == ZF_OK; j++)
            if (field_parts(fields->u.array.values[j], legacy, &other, &unused) &&
                strcmp(other, fname) == 0)
                st = zf_fail(err, ZF_ERR_INVALID,
                             "data type \"%s\": field name \"%.100s\" appears twice", tname,
                             fname);
        zf_v3_dtype ft;
        zf_err fe = {""};
        if (st != ZF_OK)
            break;
        if ((st = zf_meta_v3_dtype(ftype, ZF_FORMAT_V3, &ft, &fe)) != ZF_OK) {
            st = zf_fail(err, st, "data type \"%s\": field \"%.100s\": %s", tname, fname,
                         fe.msg);
            break;
        }
        unsigned bits = zf_dtype_component_bits(&ft.dt);
        if (ft.dt.kind == 'O')
            st = zf_fail(err, ZF_ERR_INVALID, "data type \"%s\": field \"%.100s\": a "
                         "variable-length type", tname, fname);
        else if (ft.dt.kind != 'b' && bits < 8)
            st = zf_fail(err, ZF_ERR_UNSUPPORTED, "data type \"%s\": field \"%.100s\": "
                         "sub-byte type \"%s\" inside a struct is not supported", tname, fname,
                         ft.name);
        size += ft.dt.itemsize;
        if (st == ZF_OK && size > ((uint64_t)1 << 31))
            st = zf_fail(err, ZF_ERR_INVALID, "data type \"%s\": larger than 2^31 bytes", tname);
        multi |= has_byte_order(&ft.dt);
        const char *ts = ft.descr ? ft.descr : ft.typestr;
        numpy &= ft.descr ? ts[0] == '[' : zf_dtype_has_typestr(&ft.dt);
        zf_sbuf_printf(&d, i ? ",[" : "[");
        zf_sbuf_json_string(&d, fname);
        zf_sbuf_printf(&d, ",");
        if (ft.descr)
            zf_sbuf_printf(&d, "%s", ts);
        else
            zf_sbuf_json_string(&d, ts);
        zf_sbuf_printf(&d, "]");
        free(ft.descr);
    }
    zf_sbuf_printf(&d, "]");
    if (st == ZF_OK && d.oom)
        st = ZF_ERR_NOMEM;
    if (st == ZF_OK && !numpy) { /* a field NumPy cannot describe: the Zarr type itself */
        free(d.s);
        d.s = zf_json_dump(v);
        if (!d.s)
            st = ZF_ERR_NOMEM;
    }
    if (st != ZF_OK) {
        free(d.s);
        return st;
    }
    out->dt = (zf_dtype){.kind = 'V', .byteorder = '|', .itemsize = (size_t)size,
                         .ext = !multi ? ZF_DT_STRUCT_BYTES
                                 : legacy ? ZF_DT_STRUCTURED
                                          : ZF_DT_STRUCT};
    snprintf(out->name, sizeof out->name, "%s", tname);
    snprintf(out->typestr, sizeof out->typestr, "%s", tname);
    out->fields = fields;
    out->descr = d.s;
    return ZF_OK;
}

zf_status zf_meta_v3_dtype(yajl_val v, zf_format format, zf_v3_dtype *out, zf_err *err)
{
    memset(out, 0, sizeof *out);
    if (YAJL_IS_STRING(v) && !zf_json_special(v)) {
        zf_status st = named(v->u.string, out, err);
        /* the registry's types are final v3's; the 2022 draft has its core types only */
        if (st == ZF_OK && format == ZF_FORMAT_V3_DRAFT_2022 &&
            (out->dt.ext != ZF_DT_NUMPY || strncmp(out->name, "complex_", 8) == 0))
            return zf_fail(err, ZF_ERR_UNSUPPORTED, "data type \"%s\" is not supported",
                           out->name);
        return st;
    }
    if (format == ZF_FORMAT_V3_DRAFT_2022) {
        /* 2022 draft "data_type": an extension object {"extension", "type", "fallback"}; zarrfs
         * knows no data type extension, and does not fall back silently. */
        yajl_val ext = zf_json_get(v, "extension");
        if (!YAJL_IS_STRING(ext) || !zf_json_get(v, "type"))
            return zf_fail(err, ZF_ERR_INVALID,
                           "expected a data type name or an extension object with \"extension\" "
                           "and \"type\"");
        return zf_fail(err, ZF_ERR_UNSUPPORTED, "data type extension \"%s\" is not supported",
                       ext->u.string);
    }
    /* v3 core "Extension definition": an object with a "name" and an optional
     * "configuration" object. */
    yajl_val name = zf_json_get(v, "name"), cfg = zf_json_get(v, "configuration");
    if (!YAJL_IS_STRING(name))
        return zf_fail(err, ZF_ERR_INVALID,
                       "expected a data type name or an object with \"name\"");
    if (cfg && !YAJL_IS_OBJECT(cfg))
        return zf_fail(err, ZF_ERR_INVALID, "data type \"%s\": \"configuration\" must be an object",
                       name->u.string);
    const char *n = name->u.string;
    if (strcmp(n, "numpy.datetime64") == 0 || strcmp(n, "datetime64") == 0)
        return time_type(n, 'M', cfg, out, err);
    if (strcmp(n, "numpy.timedelta64") == 0 || strcmp(n, "timedelta64") == 0)
        return time_type(n, 'm', cfg, out, err);
    if (strcmp(n, "fixed_length_utf32") == 0)
        return utf32_type(n, cfg, out, err);
    if (strcmp(n, "struct") == 0 || strcmp(n, "structured") == 0)
        return struct_type(v, cfg, n[6] == 'u', out, err);
    if (strcmp(n, "optional") == 0 || strcmp(n, "zarrs.optional") == 0)
        return zf_meta_v3_optional_dtype(n, cfg, format, out, err);
    return named(n, out, err);
}

/* ----- fill values ----- */

static zf_status bad(zf_err *err, const zf_v3_dtype *t, const char *what)
{
    return zf_fail(err, ZF_ERR_INVALID, "\"fill_value\": %s for data type \"%s\"", what, t->name);
}

/* The text of a JSON string, or of Python's bare NaN/Infinity tokens. */
static const char *string_of(yajl_val v)
{
    if (!YAJL_IS_STRING(v))
        return NULL;
    return zf_json_special(v) ? zf_json_special(v) : v->u.string;
}

/* A fill value of a struct: an object with one member per field (data-types/struct "Fill
 * value representation": every field MUST have an entry), each the field's fill value, packed
 * in field order. The legacy "structured" also takes base64 of the packed bytes
 * (data-types/structured "Base64-encoded fill values"), little-endian: zarrfs reads no
 * big-endian struct, whose fields the bytes codec would have to swap one by one. */
static zf_status struct_fill(yajl_val v, const zf_v3_dtype *t, zf_format format, uint8_t *out,
                             zf_err *err)
{
    yajl_val fields = t->fields;
    bool legacy = strcmp(t->name, "structured") == 0;
    const char *fname;
    yajl_val ftype;
    if (legacy && YAJL_IS_STRING(v) && !zf_json_special(v)) {
        uint8_t *raw = NULL;
        size_t n = 0;
        zf_status st = zf_base64_decode(v->u.string, &raw, &n);
        if (st == ZF_ERR_NOMEM)
            return st;
        if (st == ZF_OK && n == t->dt.itemsize)
            memcpy(out, raw, n);
        free(raw);
        if (st == ZF_OK && n == t->dt.itemsize)
            return ZF_OK;
        char what[96];
        snprintf(what, sizeof what, "expected base64 of %zu bytes", t->dt.itemsize);
        return bad(err, t, what);
    }
    if (!YAJL_IS_OBJECT(v))
        return bad(err, t, legacy ? "expected an object with one member per field, or base64"
                                  : "expected an object with one member per field");
    size_t off = 0, nf = fields ? fields->u.array.len : 0;
    for (size_t k = 0; k < v->u.object.len; k++) {
        bool known = false;
        for (size_t i = 0; i < nf && !known; i++)
            known = field_parts(fields->u.array.values[i], legacy, &fname, &ftype) &&
                    strcmp(fname, v->u.object.keys[k]) == 0;
        if (!known) {
            char what[160];
            snprintf(what, sizeof what, "\"%.100s\" is not a field", v->u.object.keys[k]);
            return bad(err, t, what);
        }
    }
    for (size_t i = 0; i < nf; i++) {
        if (!field_parts(fields->u.array.values[i], legacy, &fname, &ftype))
            return bad(err, t, "a malformed field"); /* struct_type refused it already */
        yajl_val fv = zf_json_get(v, fname);
        zf_v3_dtype ft;
        zf_err fe = {""};
        zf_status st = zf_meta_v3_dtype(ftype, ZF_FORMAT_V3, &ft, &fe);
        if (st == ZF_OK && !fv)
            st = zf_fail(&fe, ZF_ERR_INVALID, "missing");
        if (st == ZF_OK)
            st = zf_meta_v3_fill_value(fv, &ft, format, out + off, &fe);
        free(ft.descr);
        if (st != ZF_OK)
            return zf_fail(err, st, "\"fill_value\": field \"%.100s\": %s", fname,
                           strncmp(fe.msg, "\"fill_value\": ", 14) ? fe.msg : fe.msg + 14);
        off += ft.dt.itemsize;
    }
    return ZF_OK;
}

/* The 2022 draft's "0x…"/"0b…" fill value of a raw type r<N>: "all leading or trailing zeroes
 * necessary to match the given type size", i.e. exactly 2N/8 hex or N binary digits. The draft
 * gives raw bits no byte order; zarrfs reads the digits as the bytes in order, first byte
 * first. */
static bool raw_bits_string(const char *s, size_t n, uint8_t *out)
{
    bool bin = s[0] == '0' && s[1] == 'b';
    if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X' && !bin))
        return false;
    const char *p = s + 2;
    unsigned per_digit = bin ? 1 : 4;
    if (strlen(p) != n * 8 / per_digit)
        return false;
    memset(out, 0, n);
    for (size_t i = 0; p[i]; i++) {
        char c = p[i];
        unsigned d;
        if (c >= '0' && c <= (bin ? '1' : '9'))
            d = (unsigned)(c - '0');
        else if (!bin && c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (!bin && c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return false;
        size_t bit = i * per_digit; /* of the first bit of this digit, from the start */
        out[bit / 8] |= (uint8_t)(d << (8 - per_digit - bit % 8));
    }
    return true;
}

zf_status zf_meta_v3_fill_value(yajl_val v, const zf_v3_dtype *t, zf_format format, uint8_t *out,
                                zf_err *err)
{
    size_t n = t->dt.itemsize;
    memset(out, 0, n);
    const char *s = string_of(v);
    /* 2022 draft "fill_value": any core type may be given as "0x…"/"0b…" bits. */
    bool draft = format == ZF_FORMAT_V3_DRAFT_2022;
    if (draft && s && strchr("biuf", t->dt.kind) && zf_meta_bits_string(s, n, true, false, out))
        return ZF_OK;
    switch (t->dt.kind) {
    case 'b':
        if (YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v)) {
            out[0] = YAJL_IS_TRUE(v);
            return ZF_OK;
        }
        /* The integers 0 and 1, as zarrita.js 0.7 writes them and zarr-python 3 reads them;
         * nothing else (2, 0.5, "0") can be meant as a bool. */
        if (YAJL_IS_INTEGER(v) && (YAJL_GET_INTEGER(v) == 0 || YAJL_GET_INTEGER(v) == 1)) {
            out[0] = (uint8_t)YAJL_GET_INTEGER(v);
            return ZF_OK;
        }
        return bad(err, t, "expected true or false (or the integers 0 and 1)");
    case 'i':
    case 'u':
    case 'f':
    case 'c': {
        /* numbers, "NaN", "Infinity", "-Infinity", "0x…" bits (zf_dtype_v3_scalar); the 2022
         * draft also writes "+Infinity" (accepted there too). */
        zf_err se = {""};
        if (zf_dtype_v3_scalar(v, &t->dt, out, &se) == ZF_OK)
            return ZF_OK;
        if (draft && t->dt.kind == 'c' && YAJL_IS_ARRAY(v) && v->u.array.len == 2) {
            /* the 2022 draft's [real, imag] with "0b…" (or "0x…") components */
            zf_dtype half = t->dt;
            half.kind = 'f';
            half.itemsize = n / 2;
            bool ok = true;
            for (size_t i = 0; i < 2 && ok; i++) {
                const char *c = string_of(v->u.array.values[i]);
                zf_err ce = {""};
                ok = (c && zf_meta_bits_string(c, n / 2, true, false, out + i * (n / 2))) ||
                     zf_dtype_v3_scalar(v->u.array.values[i], &half, out + i * (n / 2), &ce) ==
                         ZF_OK;
            }
            if (ok)
                return ZF_OK;
        }
        if (draft && t->dt.kind == 'f' && strncmp(se.msg, "expected a number", 17) == 0)
            return bad(err, t, "expected a number, \"NaN\", \"+Infinity\", \"-Infinity\", "
                               "\"0x...\" or \"0b...\"");
        return bad(err, t, se.msg);
    }
    case 'V':
        if (t->dt.ext == ZF_DT_STRUCT || t->dt.ext == ZF_DT_STRUCT_BYTES ||
            t->dt.ext == ZF_DT_STRUCTURED)
            return struct_fill(v, t, format, out, err);
        /* "Raw data types": a list of N/8 integers in [0, 255]; the 2022 draft: bit strings. */
        if (draft && s && raw_bits_string(s, n, out))
            return ZF_OK;
        for (size_t i = 0; YAJL_IS_ARRAY(v) && v->u.array.len == n && i <= n; i++) {
            int64_t x;
            if (i == n)
                return ZF_OK;
            if (!zf_json_int64(v->u.array.values[i], &x) || x < 0 || x > 255)
                break;
            out[i] = (uint8_t)x;
        }
        char what[128];
        if (draft)
            snprintf(what, sizeof what,
                     "expected \"0x...\" or \"0b...\" with all %zu bits, or a list of %zu "
                     "integers in [0, 255]",
                     8 * n, n);
        else
            snprintf(what, sizeof what, "expected a list of %zu integers in [0, 255]", n);
        return bad(err, t, what);
    case 'M':
    case 'm': {
        /* numpy.datetime64 "Fill value representation": an int64, or "NaT" (= -2^63). */
        int64_t x;
        if (s && strcmp(s, "NaT") == 0)
            x = INT64_MIN;
        else if (!zf_json_int64(v, &x))
            return bad(err, t, "expected a 64-bit integer or \"NaT\"");
        for (size_t i = 0; i < 8; i++)
            out[i] = (uint8_t)((uint64_t)x >> (8 * i));
        return ZF_OK;
    }
    case 'U':
        /* fixed_length_utf32: a string, UTF-32LE, zero-padded (NumPy truncates longer ones). */
        if (!s || zf_json_special(v))
            return bad(err, t, "expected a string");
        if (zf_utf8_to_utf32(s, strlen(s), out, n / 4, 0) != ZF_OK)
            return bad(err, t, "not valid UTF-8");
        return ZF_OK;
    }
    return bad(err, t, "unsupported data type");
}

/* ----- zarrs' optional data type ----- */

#define MAX_OPTIONAL_LEVELS 8

zf_status zf_meta_v3_optional_dtype(const char *name, yajl_val cfg, zf_format format,
                                    zf_v3_dtype *out, zf_err *err)
{
    unsigned levels = 1;
    /* The configuration is the inner data type's object: unwrap nested optionals here (not by
     * recursion, so that a hostile document cannot nest deeply). */
    while (cfg && YAJL_IS_STRING(zf_json_get(cfg, "name")) &&
           (strcmp(zf_json_get(cfg, "name")->u.string, "optional") == 0 ||
            strcmp(zf_json_get(cfg, "name")->u.string, "zarrs.optional") == 0)) {
        if (++levels > MAX_OPTIONAL_LEVELS)
            return zf_fail(err, ZF_ERR_UNSUPPORTED,
                           "data type \"%s\": more than %d nested optional levels", name,
                           MAX_OPTIONAL_LEVELS);
        cfg = zf_json_get(cfg, "configuration");
    }
    if (!YAJL_IS_OBJECT(cfg))
        return zf_fail(err, ZF_ERR_INVALID,
                       "data type \"%s\": \"configuration\" must be the inner data type's "
                       "object", name);
    zf_status st = zf_meta_v3_dtype(cfg, format, out, err);
    if (st != ZF_OK)
        return st;
    if (out->dt.kind == 'O' || out->dt.itemsize == 0)
        return zf_fail(err, ZF_ERR_UNSUPPORTED,
                       "data type \"%s\" of variable-length \"%s\" is not supported", name,
                       out->name);
    char inner[40];
    snprintf(inner, sizeof inner, "%.39s", out->name);
    snprintf(out->name, sizeof out->name, "%s %s", levels > 1 ? "nested optional" : "optional",
             inner);
    out->optional = levels;
    return ZF_OK;
}

zf_status zf_meta_v3_optional_fill(yajl_val v, const zf_v3_dtype *t, zf_format format,
                                   uint8_t *out, uint8_t *depth, zf_err *err)
{
    memset(out, 0, t->dt.itemsize);
    for (unsigned level = 0; level < t->optional; level++) {
        if (!v || YAJL_IS_NULL(v)) {
            *depth = (uint8_t)level;
            return ZF_OK;
        }
        if (!YAJL_IS_ARRAY(v) || v->u.array.len != 1)
            return bad(err, t, "expected null or a list of one (inner) fill value");
        v = v->u.array.values[0];
    }
    zf_v3_dtype inner = *t;
    inner.optional = 0;
    *depth = (uint8_t)t->optional;
    return zf_meta_v3_fill_value(v, &inner, format, out, err);
}
