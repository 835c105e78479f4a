/* common.c — pieces every metadata parser shares: documents, dimension lists, size bounds,
 * unsupported nodes, Zarr v2 data types (also those of the October 2020 v3 draft) and the
 * "0x…"/"0b…" bit strings of the v3 drafts' fill values. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta_impl.h"
#include "zarrfs/json.h"

zf_status zf_meta_unsupported(zf_node_meta *m, const char *fmt, ...)
{
    if (m->unsupported != ZF_OK)
        return ZF_OK;
    char why[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    m->unsupported_why = strdup(why);
    if (!m->unsupported_why)
        return ZF_ERR_NOMEM;
    m->unsupported = ZF_ERR_UNSUPPORTED;
    m->refuse_open = strstr(why, ZF_CODEC_NO_LIBRARY) != NULL; /* e.g. pcodec */
    return ZF_OK;
}

zf_status zf_meta_open_doc(const char *key, const char *text, size_t len, yajl_val *doc,
                           zf_err *err)
{
    zf_status st = zf_json_parse(key, text, len, doc, err);
    if (st != ZF_OK)
        return st;
    if (!YAJL_IS_OBJECT(*doc)) {
        yajl_tree_free(*doc);
        *doc = NULL;
        return zf_fail(err, ZF_ERR_INVALID, "%s: expected a JSON object", key);
    }
    return ZF_OK;
}

zf_status zf_meta_dup_text(char **dst, const char *text, size_t len)
{
    *dst = malloc(len + 1);
    if (!*dst)
        return ZF_ERR_NOMEM;
    memcpy(*dst, text, len);
    (*dst)[len] = '\0';
    return ZF_OK;
}

bool zf_meta_dims(yajl_val v, uint64_t min, unsigned *ndim, uint64_t *dims)
{
    if (!YAJL_IS_ARRAY(v) || v->u.array.len > ZF_MAX_DIMS)
        return false;
    for (size_t i = 0; i < v->u.array.len; i++) {
        int64_t x;
        if (!zf_json_int64(v->u.array.values[i], &x) || x < (int64_t)min)
            return false;
        dims[i] = (uint64_t)x;
    }
    *ndim = (unsigned)v->u.array.len;
    return true;
}

zf_status zf_meta_check_sizes(const char *key, const char *shape_field, const zf_array_meta *a,
                              uint64_t *chunk_bytes, zf_err *err)
{
    /* The flat file's size must be an off_t; each chunk must fit in memory. */
    uint64_t bytes = a->dtype.itemsize, cbytes = a->dtype.itemsize;
    if (cbytes > ZF_MAX_CHUNK_BYTES)
        cbytes = ZF_MAX_CHUNK_BYTES + 1;
    for (unsigned d = 0; d < a->ndim; d++) {
        if (a->shape[d] && bytes > (uint64_t)INT64_MAX / a->shape[d])
            return ZF_FIELD_FAIL(err, key, shape_field, "the array holds more than 2^63 bytes");
        bytes *= a->shape[d] ? a->shape[d] : 1; /* a zero dimension makes it empty, not small */
        /* cbytes <= 2^31 + 1 and chunks[d] <= 2^31 here, so the product cannot overflow */
        cbytes = a->chunks[d] > ZF_MAX_CHUNK_BYTES ? ZF_MAX_CHUNK_BYTES + 1 : cbytes * a->chunks[d];
        if (cbytes > ZF_MAX_CHUNK_BYTES)
            cbytes = ZF_MAX_CHUNK_BYTES + 1;
    }
    *chunk_bytes = cbytes;
    return ZF_OK;
}

zf_chunk_repr zf_meta_chunk_repr(const zf_array_meta *a)
{
    zf_chunk_repr r = {.ndim = a->ndim, .dtype = a->dtype};
    memcpy(r.shape, a->chunks, sizeof(uint64_t) * a->ndim);
    r.nbytes = (size_t)(zf_array_meta_chunk_elems(a) * a->dtype.itemsize);
    return r;
}

/* Item size of a v2 data type: a typestr or a structured descr list (recursively). Sets
 * *has_object when an object field appears anywhere. */
static zf_status dtype_size(yajl_val v, size_t *size, bool *has_object, zf_dtype *simple,
                            zf_err *err)
{
    if (YAJL_IS_STRING(v)) {
        zf_dtype dt;
        zf_status st = zf_dtype_parse(v->u.string, &dt, err);
        if (st != ZF_OK)
            return st;
        if (dt.kind == 'O')
            *has_object = true;
        if (simple)
            *simple = dt;
        *size = dt.itemsize;
        return ZF_OK;
    }
    if (!YAJL_IS_ARRAY(v) || v->u.array.len == 0)
        return zf_fail(err, ZF_ERR_INVALID,
                       "expected a typestr or a list of [name, type(, shape)] fields");
    size_t total = 0;
    for (size_t i = 0; i < v->u.array.len; i++) {
        yajl_val f = v->u.array.values[i];
        if (!YAJL_IS_ARRAY(f) || f->u.array.len < 2 || f->u.array.len > 3 ||
            !YAJL_IS_STRING(f->u.array.values[0]))
            return zf_fail(err, ZF_ERR_INVALID, "field %zu: expected [name, type(, shape)]", i);
        size_t fsize;
        zf_status st = dtype_size(f->u.array.values[1], &fsize, has_object, NULL, err);
        if (st != ZF_OK)
            return st;
        if (f->u.array.len == 3) {
            yajl_val shp = f->u.array.values[2];
            if (!YAJL_IS_ARRAY(shp))
                return zf_fail(err, ZF_ERR_INVALID, "field %zu: shape must be a list", i);
            for (size_t k = 0; k < shp->u.array.len; k++) {
                int64_t x;
                if (!zf_json_int64(shp->u.array.values[k], &x) || x < 0 ||
                    (x && fsize > ((size_t)1 << 31) / (uint64_t)x))
                    return zf_fail(err, ZF_ERR_INVALID, "field %zu: bad subarray shape", i);
                fsize *= (size_t)x;
            }
        }
        total += fsize;
        if (total > ((size_t)1 << 31))
            return zf_fail(err, ZF_ERR_INVALID, "structured type too large");
    }
    *size = total;
    return ZF_OK;
}

zf_status zf_meta_v2_dtype(yajl_val v, zf_dtype *dt, char **typestr, bool *has_object,
                           zf_err *err)
{
    size_t itemsize;
    zf_dtype simple = {0};
    *has_object = false;
    *typestr = NULL;
    zf_status st = dtype_size(v, &itemsize, has_object, &simple, err);
    if (st != ZF_OK)
        return st;
    if (YAJL_IS_STRING(v)) {
        *dt = simple;
        char ts[48];
        zf_dtype_format(&simple, ts, sizeof ts);
        *typestr = strdup(simple.kind == 'O' ? "|O" : ts);
    } else {
        *dt = (zf_dtype){.kind = 'V', .byteorder = '|', .itemsize = itemsize};
        *typestr = zf_json_dump(v);
    }
    return *typestr ? ZF_OK : ZF_ERR_NOMEM;
}

bool zf_meta_bits_string(const char *s, size_t itemsize, bool allow_binary, bool big_endian,
                         uint8_t *out)
{
    if (itemsize == 0 || itemsize > 8 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X' &&
                                                         !(allow_binary && s[1] == 'b')))
        return false;
    unsigned base_bits = s[1] == 'b' ? 1 : 4;
    const char *p = s + 2;
    size_t ndigits = strlen(p);
    if (ndigits == 0 || ndigits * base_bits > 8 * itemsize)
        return false; /* at most the type's own width: "0x7fc00000" for float32 */
    uint64_t v = 0;
    for (; *p; p++) {
        unsigned d;
        if (*p >= '0' && *p <= '9')
            d = (unsigned)(*p - '0');
        else if (base_bits == 4 && *p >= 'a' && *p <= 'f')
            d = (unsigned)(*p - 'a' + 10);
        else if (base_bits == 4 && *p >= 'A' && *p <= 'F')
            d = (unsigned)(*p - 'A' + 10);
        else
            return false;
        if (d >= (1u << base_bits))
            return false;
        v = (v << base_bits) | d;
    }
    for (size_t i = 0; i < itemsize; i++)
        out[big_endian ? itemsize - 1 - i : i] = (uint8_t)(v >> (8 * i));
    return true;
}

/* Elements per chunk of a variable-length array: a chunk's count is a 32-bit number in every
 * object codec (numcodecs), so more cannot be stored; zarrfs keeps a line index per element. */
#define MAX_TEXT_CHUNK_ELEMS ((uint64_t)1 << 31)

zf_status zf_meta_text_finish(const char *key, zf_node_meta *m, yajl_val fill, zf_err *err)
{
    zf_array_meta *a = &m->array;
    a->variable_length = true;
    uint64_t n = 1;
    for (unsigned d = 0; d < a->ndim; d++) {
        if (a->chunks[d] > MAX_TEXT_CHUNK_ELEMS || n * a->chunks[d] > MAX_TEXT_CHUNK_ELEMS)
            return zf_meta_unsupported(m, "%s: a chunk holds more than 2^31 elements, zarrfs's "
                                       "limit for variable-length elements", key);
        n *= a->chunks[d];
    }
    if (m->unsupported != ZF_OK)
        return ZF_OK;
    if (!zf_chain_is_text(&a->chain))
        return zf_meta_unsupported(m, "%s: variable-length data type %s without an object codec "
                                   "zarrfs reads (vlen-utf8, vlen-bytes, vlen-array, json2)", key, a->dtype_json);
    zf_err ferr = {""};
    zf_status st = zf_chain_text_fill(&a->chain, fill, &a->text_fill, &a->text_fill_len, &ferr);
    if (st == ZF_ERR_UNSUPPORTED)
        return zf_meta_unsupported(m, "%s: \"fill_value\": %s", key, ferr.msg);
    if (st == ZF_ERR_INVALID)
        return ZF_FIELD_FAIL(err, key, "fill_value", "%s", ferr.msg);
    return st;
}
