/* meta_v2.c — Zarr v2 storage spec: "Metadata" (.zarray), "Groups" (.zgroup), "Attributes"
 * (.zattrs) and "Data type encoding", parsed into the dialect-independent zf_node_meta.
 *
 * Errors name the key and the field: `.zarray: "shape": expected a list of non-negative
 * integers`. What the spec allows but zarrfs cannot serve (object dtype, unknown codecs) is not
 * an error: it marks the node unsupported, so it is still listed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta_impl.h"
#include "zarrfs/json.h"

#define FIELD_FAIL ZF_FIELD_FAIL

static zf_status mark_unsupported(zf_node_meta *m, const char *why)
{
    return zf_meta_unsupported(m, "%s", why);
}

/* shape / chunks: a list of integers, each >= min. */
static zf_status parse_dims(const char *key, const char *field, yajl_val v, uint64_t min,
                            unsigned *ndim, uint64_t *dims, zf_err *err)
{
    const char *what = min ? "expected a list of positive integers"
                           : "expected a list of non-negative integers";
    if (!v)
        return FIELD_FAIL(err, key, field, "missing");
    if (YAJL_IS_ARRAY(v) && v->u.array.len > ZF_MAX_DIMS)
        return FIELD_FAIL(err, key, field, "more than %d dimensions", ZF_MAX_DIMS);
    if (!zf_meta_dims(v, min, ndim, dims))
        return FIELD_FAIL(err, key, field, "%s", what);
    return ZF_OK;
}

#define dup_text zf_meta_dup_text

static zf_status common_fields(const char *key, const char *text, size_t len,
                               const char *attrs_json, zf_node_meta *m, yajl_val doc,
                               zf_err *err)
{
    int64_t fmt;
    yajl_val zf = zf_json_get(doc, "zarr_format");
    if (!zf)
        return FIELD_FAIL(err, key, "zarr_format", "missing");
    if (!zf_json_int64(zf, &fmt) || fmt != 2)
        return FIELD_FAIL(err, key, "zarr_format", "expected 2");
    m->format = ZF_FORMAT_V2;
    if (dup_text(&m->metadata_json, text, len) || !(m->metadata_key = strdup(key)) ||
        !(m->attributes_json = strdup(attrs_json ? attrs_json : "{}")))
        return ZF_ERR_NOMEM;
    return ZF_OK;
}

#define open_doc zf_meta_open_doc

/* xarray's convention: dimension names in the "_ARRAY_DIMENSIONS" attribute. */
static zf_status dims_of(yajl_val attrs, unsigned ndim, char **out)
{
    *out = NULL;
    yajl_val dims = zf_json_get(attrs, "_ARRAY_DIMENSIONS");
    if (!YAJL_IS_ARRAY(dims) || dims->u.array.len != ndim)
        return ZF_OK;
    *out = zf_json_dump(dims);
    return *out ? ZF_OK : ZF_ERR_NOMEM;
}

static zf_status dimension_names(zf_node_meta *m, yajl_val attrs)
{
    return dims_of(attrs, m->array.ndim, &m->array.dimension_names_json);
}

zf_status zf_meta_v2_dimension_names(const char *attrs_json, size_t len, unsigned ndim,
                                     char **out)
{
    *out = NULL;
    yajl_val attrs;
    zf_status st = zf_json_parse(".zattrs", attrs_json, len, &attrs, NULL);
    if (st != ZF_OK)
        return st == ZF_ERR_NOMEM ? st : ZF_OK;
    st = dims_of(attrs, ndim, out);
    yajl_tree_free(attrs);
    return st;
}

/* Codec chain of Zarr v2 "Chunks": order (a transpose), filters, then the compressor. */
static zf_status build_chain(const char *key, yajl_val doc, zf_node_meta *m, zf_err *err)
{
    zf_array_meta *a = &m->array;
    yajl_val order = zf_json_get(doc, "order");
    bool fortran = false;
    if (order) {
        if (!YAJL_IS_STRING(order) ||
            (strcmp(order->u.string, "C") && strcmp(order->u.string, "F")))
            return FIELD_FAIL(err, key, "order", "expected \"C\" or \"F\"");
        fortran = order->u.string[0] == 'F';
    }
    zf_status st;
    if (fortran && a->ndim > 1) {
        unsigned perm[ZF_MAX_DIMS];
        for (unsigned d = 0; d < a->ndim; d++)
            perm[d] = a->ndim - 1 - d;
        zf_codec *t;
        if ((st = zf_codec_transpose_new(a->ndim, perm, &t, err)) != ZF_OK)
            return st;
        if ((st = zf_chain_append(&a->chain, t)) != ZF_OK) {
            zf_codec_free(t);
            return st;
        }
    }
    yajl_val filters = zf_json_get(doc, "filters");
    if (filters && !YAJL_IS_NULL(filters) && !YAJL_IS_ARRAY(filters))
        return FIELD_FAIL(err, key, "filters", "expected null or a list of codec objects");
    size_t nf = YAJL_IS_ARRAY(filters) ? filters->u.array.len : 0;
    yajl_val comp = zf_json_get(doc, "compressor");
    if (comp && !YAJL_IS_NULL(comp) && !YAJL_IS_OBJECT(comp))
        return FIELD_FAIL(err, key, "compressor", "expected null or a codec object");
    for (size_t i = 0; i <= nf; i++) {
        yajl_val cfg = i < nf ? filters->u.array.values[i] : comp;
        const char *field = i < nf ? "filters" : "compressor";
        if (!cfg || YAJL_IS_NULL(cfg))
            continue;
        zf_codec *c = NULL;
        zf_err cerr = {""};
        st = zf_codec_from_v2(cfg, &c, &cerr);
        if (st == ZF_ERR_UNSUPPORTED) {
            char why[600];
            snprintf(why, sizeof why, "%s: \"%s\": %s", key, field, cerr.msg);
            if ((st = mark_unsupported(m, why)) != ZF_OK)
                return st;
            continue;
        }
        if (st != ZF_OK)
            return FIELD_FAIL(err, key, field, "%s", cerr.msg[0] ? cerr.msg : zf_status_str(st));
        if ((st = zf_chain_append(&a->chain, c)) != ZF_OK) {
            zf_codec_free(c);
            return st;
        }
    }
    if (m->unsupported != ZF_OK)
        return ZF_OK;
    /* The chain must fit this array's chunks (e.g. a delta filter's element size). */
    zf_chunk_repr *reprs = calloc(a->chain.n + 1, sizeof *reprs);
    if (!reprs)
        return ZF_ERR_NOMEM;
    zf_chunk_repr dec = {.ndim = a->ndim, .dtype = a->dtype,
                         .nbytes = (size_t)(zf_array_meta_chunk_elems(a) * a->dtype.itemsize)};
    memcpy(dec.shape, a->chunks, sizeof(uint64_t) * a->ndim);
    zf_err cerr = {""};
    st = zf_chain_resolve(&a->chain, &dec, reprs, &cerr);
    free(reprs);
    if (st == ZF_ERR_NOMEM)
        return st;
    if (st == ZF_ERR_UNSUPPORTED) { /* a codec that does not serve this data type (zfpy, <f2) */
        char why[600];
        snprintf(why, sizeof why, "%s: \"%s\": %s", key, nf ? "filters" : "compressor",
                 cerr.msg);
        return mark_unsupported(m, why);
    }
    if (st != ZF_OK)
        return FIELD_FAIL(err, key, nf ? "filters" : "compressor", "%s", cerr.msg);
    return ZF_OK;
}

static zf_status parse_array(const char *key, yajl_val doc, zf_node_meta *m, zf_err *err)
{
    zf_array_meta *a = &m->array;
    zf_status st;
    unsigned cnd;
    if ((st = parse_dims(key, "shape", zf_json_get(doc, "shape"), 0, &a->ndim, a->shape, err)) ||
        (st = parse_dims(key, "chunks", zf_json_get(doc, "chunks"), 1, &cnd, a->chunks, err)))
        return st;
    if (cnd != a->ndim)
        return FIELD_FAIL(err, key, "chunks", "expected %u lengths, one per dimension of \"shape\"",
                          a->ndim);

    yajl_val dtv = zf_json_get(doc, "dtype");
    if (!dtv)
        return FIELD_FAIL(err, key, "dtype", "missing");
    bool has_object = false;
    zf_err derr = {""};
    if ((st = zf_meta_v2_dtype(dtv, &a->dtype, &a->dtype_typestr, &has_object, &derr)) != ZF_OK)
        return st == ZF_ERR_NOMEM ? st : FIELD_FAIL(err, key, "dtype", "%s", derr.msg);
    a->dtype_json = zf_json_dump(dtv);
    yajl_val fv = zf_json_get(doc, "fill_value");
    a->fill_value_json = fv ? zf_json_dump(fv) : strdup("null");
    if (!a->dtype_typestr || !a->dtype_json || !a->fill_value_json)
        return ZF_ERR_NOMEM;
    if (has_object && YAJL_IS_STRING(dtv) && strcmp(dtv->u.string, "|O") == 0) {
        /* An object array: read as text when its object codec is one zarrfs reads. */
        a->dtype.itemsize = 0;
        if (!(a->fill_value = calloc(1, 1)))
            return ZF_ERR_NOMEM;
        if ((st = build_chain(key, doc, m, err)) != ZF_OK)
            return st;
        a->key_encoding.separator = '.';
        yajl_val sep = zf_json_get(doc, "dimension_separator");
        if (sep && YAJL_IS_STRING(sep) &&
            (!strcmp(sep->u.string, "/") || !strcmp(sep->u.string, "."))) {
            a->key_encoding.separator = sep->u.string[0];
            a->dimension_separator_given = true;
        }
        return zf_meta_text_finish(key, m, fv, err);
    }
    if (has_object) {
        a->variable_length = true;
        char why[300];
        snprintf(why, sizeof why, "%s: \"dtype\": %s: object data types are not supported", key,
                 a->dtype_json);
        return mark_unsupported(m, why);
    }

    uint64_t cbytes;
    if ((st = zf_meta_check_sizes(key, "shape", a, &cbytes, err)) != ZF_OK)
        return st;
    if (cbytes > ZF_MAX_CHUNK_BYTES) {
        char why[300];
        snprintf(why, sizeof why, "%s: \"chunks\": a chunk holds more than %llu bytes, zarrfs's limit",
                 key, (unsigned long long)ZF_MAX_CHUNK_BYTES);
        return mark_unsupported(m, why);
    }

    yajl_val sep = zf_json_get(doc, "dimension_separator");
    a->key_encoding.separator = '.';
    if (sep && !YAJL_IS_NULL(sep)) {
        if (!YAJL_IS_STRING(sep) || (strcmp(sep->u.string, ".") && strcmp(sep->u.string, "/")))
            return FIELD_FAIL(err, key, "dimension_separator", "expected \".\" or \"/\"");
        a->key_encoding.separator = sep->u.string[0];
        a->dimension_separator_given = true;
    }

    a->fill_value = calloc(1, a->dtype.itemsize ? a->dtype.itemsize : 1);
    if (!a->fill_value)
        return ZF_ERR_NOMEM;
    zf_err ferr = {""};
    if ((st = zf_meta_v2_fill_value_val(fv, &a->dtype, a->fill_value, &ferr)) != ZF_OK) {
        if (st == ZF_ERR_NOMEM)
            return st;
        zf_fail(err, st, "%s: %s", key, ferr.msg);
        return st;
    }
    return build_chain(key, doc, m, err);
}

zf_status zf_meta_parse_v2_parsed(zf_node_kind kind, const char *key, const char *text,
                                  size_t len, yajl_val doc, const char *attrs_json,
                                  zf_node_meta *m, zf_err *err)
{
    memset(m, 0, sizeof *m);
    if (!YAJL_IS_OBJECT(doc))
        return zf_fail(err, ZF_ERR_INVALID, "%s: expected a JSON object", key);
    yajl_val attrs = NULL;
    zf_status st;
    if (attrs_json) { /* .zattrs beside the document: it must be a JSON object too */
        char akey[1024];
        const char *slash = strrchr(key, '/');
        snprintf(akey, sizeof akey, "%.*s.zattrs", slash ? (int)(slash - key + 1) : 0, key);
        if ((st = open_doc(akey, attrs_json, strlen(attrs_json), &attrs, err)) != ZF_OK)
            return st;
    }
    m->kind = kind;
    if ((st = common_fields(key, text, len, attrs_json, m, doc, err)) == ZF_OK &&
        kind == ZF_NODE_ARRAY && (st = parse_array(key, doc, m, err)) == ZF_OK)
        st = dimension_names(m, attrs);
    yajl_tree_free(attrs);
    if (st != ZF_OK)
        zf_node_meta_free(m);
    return st;
}

/* Both documents: a JSON object with "zarr_format": 2; arrays carry the rest of .zarray. */
static zf_status parse_node(zf_node_kind kind, const char *key, const char *text, size_t len,
                            const char *attrs_json, zf_node_meta *m, zf_err *err)
{
    memset(m, 0, sizeof *m);
    yajl_val doc;
    zf_status st = open_doc(key, text, len, &doc, err);
    if (st != ZF_OK)
        return st;
    st = zf_meta_parse_v2_parsed(kind, key, text, len, doc, attrs_json, m, err);
    yajl_tree_free(doc);
    return st;
}

zf_status zf_meta_parse_v2_group(const char *key, const char *text, size_t len,
                                 const char *attrs_json, zf_node_meta *m, zf_err *err)
{
    return parse_node(ZF_NODE_GROUP, key, text, len, attrs_json, m, err);
}

zf_status zf_meta_parse_v2_array(const char *key, const char *text, size_t len,
                                 const char *attrs_json, zf_node_meta *m, zf_err *err)
{
    return parse_node(ZF_NODE_ARRAY, key, text, len, attrs_json, m, err);
}
