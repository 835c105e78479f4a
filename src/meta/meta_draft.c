/* meta_draft.c — array and group metadata of the two Zarr v3 drafts zarrfs reads:
 *
 * - the core protocol draft of October 2020 (seeds/zarr-v3-core-protocol-draft-2020-10.rst,
 *   "Array metadata", "Group metadata"), as zarr-python 2.11-2.18 writes it under
 *   ZARR_V3_EXPERIMENTAL_API: NumPy typestr data types ("bool", "i1", "u1", "<f8", or an
 *   extension object whose "type" is a typestr or a structured descr), whose byte order the
 *   flat encoding keeps as in Zarr v2; "chunk_grid" with "separator"; "chunk_memory_layout";
 *   "compressor"; "extensions"; and zarr-python's own additions "dimension_separator" and the
 *   v2 filters kept in "attributes"."filters";
 * - the core specification draft of May 2022 (seeds/zarr-v3-core-spec-draft-2022-05.txt):
 *   named data types (little-endian flat encoding), a required "fill_value", "codecs",
 *   "storage_transformers"; any other field makes the array unsupported.
 *
 * Chunk keys of both: "c" followed by the coordinates joined by the separator ("c1/23/45"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta_impl.h"
#include "zarrfs/json.h"

static bool is_draft(zf_format f)
{
    return f == ZF_FORMAT_V3_DRAFT_2020 || f == ZF_FORMAT_V3_DRAFT_2022;
}

/* Name of an extension object ({"extension": URI, "type": ...}) for messages. */
static const char *extension_name(yajl_val v)
{
    yajl_val t = zf_json_get(v, "type"), e = zf_json_get(v, "extension");
    if (YAJL_IS_STRING(t))
        return t->u.string;
    return YAJL_IS_STRING(e) ? e->u.string : "?";
}

static zf_status common(zf_format format, const char *key, const char *text, size_t len,
                        yajl_val doc, zf_node_meta *m, zf_err *err)
{
    m->format = format;
    yajl_val attrs = zf_json_get(doc, "attributes");
    if (attrs && !YAJL_IS_OBJECT(attrs))
        return ZF_FIELD_FAIL(err, key, "attributes", "expected a JSON object");
    if (zf_meta_dup_text(&m->metadata_json, text, len) || !(m->metadata_key = strdup(key)) ||
        !(m->attributes_json = attrs ? zf_json_dump(attrs) : strdup("{}")))
        return ZF_ERR_NOMEM;
    return ZF_OK;
}

/* "chunk_grid": {"type": "regular", "chunk_shape": [...], "separator": "/" or "."} (both
 * drafts, "Regular grids": the separator defaults to "/"); an extension grid
 * {"extension", "type"} is not served. */
static zf_status chunk_grid(const char *key, yajl_val v, zf_node_meta *m, bool *have, zf_err *err)
{
    zf_array_meta *a = &m->array;
    *have = false;
    if (!v)
        return ZF_FIELD_FAIL(err, key, "chunk_grid", "missing");
    yajl_val type = zf_json_get(v, "type");
    if (!YAJL_IS_OBJECT(v) || !YAJL_IS_STRING(type))
        return ZF_FIELD_FAIL(err, key, "chunk_grid",
                             "expected an object with \"type\", \"chunk_shape\" and \"separator\"");
    if (zf_json_get(v, "extension") || strcmp(type->u.string, "regular"))
        return zf_meta_unsupported(m, "%s: \"chunk_grid\": chunk grid \"%s\" is not supported",
                                   key, extension_name(v));
    unsigned n;
    if (!zf_meta_dims(zf_json_get(v, "chunk_shape"), 1, &n, a->chunks))
        return ZF_FIELD_FAIL(err, key, "chunk_grid",
                             "\"chunk_shape\" must be a list of positive integers");
    if (n != a->ndim)
        return ZF_FIELD_FAIL(err, key, "chunk_grid",
                             "\"chunk_shape\" must have as many entries as \"shape\" (%u)",
                             a->ndim);
    yajl_val sep = zf_json_get(v, "separator");
    a->key_encoding.separator = '/';
    if (sep) {
        if (!YAJL_IS_STRING(sep) || (strcmp(sep->u.string, "/") && strcmp(sep->u.string, ".")))
            return ZF_FIELD_FAIL(err, key, "chunk_grid", "\"separator\" must be \"/\" or \".\"");
        a->key_encoding.separator = sep->u.string[0];
    }
    /* "c" joined to the first coordinate: "c0/0" (2020 "Regular grids"; 2022 likewise). */
    snprintf(a->key_encoding.prefix, sizeof a->key_encoding.prefix, "c");
    a->key_encoding.prefix_joined = true;
    /* A 0-d array: both drafts say its key is "c", but zarr-python 2.11-2.18, the writer of
     * the 2020 draft, stores its one chunk as "c0" (core.py _chunk_key((0,)): "c" + "0"). */
    if (m->format == ZF_FORMAT_V3_DRAFT_2020 && a->ndim == 0)
        snprintf(a->key_encoding.prefix, sizeof a->key_encoding.prefix, "c0");
    *have = true;
    return ZF_OK;
}

/* "chunk_memory_layout": "C" or "F" (an extension layout is not served). */
static zf_status memory_layout(const char *key, yajl_val v, zf_node_meta *m, bool *fortran,
                               zf_err *err)
{
    *fortran = false;
    if (!v)
        return ZF_FIELD_FAIL(err, key, "chunk_memory_layout", "missing");
    if (YAJL_IS_OBJECT(v))
        return zf_meta_unsupported(
            m, "%s: \"chunk_memory_layout\": chunk memory layout \"%s\" is not supported", key,
            extension_name(v));
    if (!YAJL_IS_STRING(v) || (strcmp(v->u.string, "C") && strcmp(v->u.string, "F")))
        return ZF_FIELD_FAIL(err, key, "chunk_memory_layout", "expected \"C\" or \"F\"");
    *fortran = v->u.string[0] == 'F';
    return ZF_OK;
}

/* Array "extensions" (both drafts: "See the top level metadata extension section"): objects
 * {"extension": URI, "must_understand": bool}; one that must be understood is not served. */
static zf_status array_extensions(const char *key, yajl_val v, zf_node_meta *m, zf_err *err)
{
    if (!v || YAJL_IS_NULL(v))
        return ZF_OK;
    if (!YAJL_IS_ARRAY(v))
        return ZF_FIELD_FAIL(err, key, "extensions", "expected a list of extension objects");
    for (size_t i = 0; i < v->u.array.len; i++) {
        yajl_val e = v->u.array.values[i], uri = zf_json_get(e, "extension");
        if (!YAJL_IS_OBJECT(e) || !YAJL_IS_STRING(uri))
            return ZF_FIELD_FAIL(err, key, "extensions",
                                 "expected objects with \"extension\" and \"must_understand\"");
        if (!zf_meta_may_ignore(e))
            return zf_meta_unsupported(m,
                                       "%s: \"extensions\": extension \"%s\" is not supported "
                                       "(its \"must_understand\" is not false)",
                                       key, uri->u.string);
    }
    return ZF_OK;
}

static zf_status shape(const char *key, yajl_val doc, zf_array_meta *a, zf_err *err)
{
    yajl_val v = zf_json_get(doc, "shape");
    if (!v)
        return ZF_FIELD_FAIL(err, key, "shape", "missing");
    if (YAJL_IS_ARRAY(v) && v->u.array.len > ZF_MAX_DIMS)
        return ZF_FIELD_FAIL(err, key, "shape", "more than %d dimensions", ZF_MAX_DIMS);
    if (!zf_meta_dims(v, 0, &a->ndim, a->shape))
        return ZF_FIELD_FAIL(err, key, "shape", "expected a list of non-negative integers");
    return ZF_OK;
}

/* ----- October 2020 ----- */

/* 2020 "Core data types": "bool", "i1", "u1", the other typestrs as in Zarr v2, and "r<N>"
 * raw bits; an extension object {"extension", "type", "fallback"} whose "type" zarr-python
 * writes as a NumPy typestr or structured descr ("<c16", "<M8[ns]", "<U3", "|S3", [...]). */
static zf_status dtype_2020(const char *key, yajl_val v, zf_node_meta *m, zf_err *err)
{
    zf_array_meta *a = &m->array;
    yajl_val typ = v;
    bool extension = YAJL_IS_OBJECT(v);
    if (extension) {
        typ = zf_json_get(v, "type");
        if (!typ || !YAJL_IS_STRING(zf_json_get(v, "extension")))
            return ZF_FIELD_FAIL(err, key, "data_type",
                                 "expected a data type or an object with \"extension\" and "
                                 "\"type\"");
    }
    char buf[48];
    yajl_val use = typ;
    struct yajl_val_s mapped = {.type = yajl_t_string};
    if (YAJL_IS_STRING(typ)) {
        const char *s = typ->u.string, *alias = NULL;
        if (strcmp(s, "bool") == 0)
            alias = "|b1";
        else if (strcmp(s, "i1") == 0)
            alias = "|i1";
        else if (strcmp(s, "u1") == 0)
            alias = "|u1";
        if (s[0] == 'r' && s[1] >= '1' && s[1] <= '9' && strspn(s + 1, "0123456789") ==
                                                             strlen(s + 1)) {
            unsigned long long bits = strtoull(s + 1, NULL, 10);
            if (bits % 8 || bits > ((unsigned long long)8 << 31))
                return ZF_FIELD_FAIL(err, key, "data_type",
                                     "data type \"%s\": the number of bits must be a positive "
                                     "multiple of 8",
                                     s);
            snprintf(buf, sizeof buf, "|V%llu", bits / 8);
            alias = buf;
        }
        if (alias) {
            mapped.u.string = (char *)alias;
            use = &mapped;
        }
    }
    bool has_object;
    zf_err derr = {""};
    zf_status st = zf_meta_v2_dtype(use, &a->dtype, &a->dtype_typestr, &has_object, &derr);
    if (st == ZF_ERR_NOMEM)
        return st;
    if (st != ZF_OK && extension) /* a "type" only its extension understands */
        return zf_meta_unsupported(m, "%s: \"data_type\": data type extension \"%s\" is not "
                                      "supported",
                                   key, zf_json_get(v, "extension")->u.string);
    if (st != ZF_OK)
        return ZF_FIELD_FAIL(err, key, "data_type", "%s", derr.msg);
    a->variable_length = has_object;
    if (has_object)
        return zf_meta_unsupported(m, "%s: \"data_type\": %s: object data types are not supported",
                                   key, a->dtype_json);
    return ZF_OK;
}

/* 2020 "fill_value": as Zarr v2 (null, numbers, "NaN", "Infinity", base64 for S/V, ...) and
 * the draft's "0x…"/"0b…" bit strings for numeric types, in the data type's byte order. */
static zf_status fill_2020(const char *key, yajl_val fv, zf_array_meta *a, zf_err *err)
{
    a->fill_value = calloc(1, a->dtype.itemsize ? a->dtype.itemsize : 1);
    if (!a->fill_value)
        return ZF_ERR_NOMEM;
    if (YAJL_IS_STRING(fv) && !zf_json_special(fv) && strchr("biufmM", a->dtype.kind) &&
        zf_meta_bits_string(fv->u.string, a->dtype.itemsize, true, a->dtype.byteorder == '>',
                            a->fill_value))
        return ZF_OK;
    zf_err ferr = {""};
    zf_status st = zf_meta_v2_fill_value_val(fv, &a->dtype, a->fill_value, &ferr);
    if (st == ZF_ERR_NOMEM || st == ZF_OK)
        return st;
    return zf_fail(err, st, "%s: %s", key, ferr.msg);
}

static zf_status append(zf_codec_chain *chain, zf_codec *c)
{
    zf_status st = zf_chain_append(chain, c);
    if (st != ZF_OK)
        zf_codec_free(c);
    return st;
}

/* The chain of a 2020 array: chunk_memory_layout "F" as a transpose (as Zarr v2 order "F"),
 * the v2 filters zarr-python keeps in "attributes"."filters", then the "compressor". */
static zf_status chain_2020(const char *key, yajl_val doc, bool fortran, zf_node_meta *m,
                            zf_err *err)
{
    zf_array_meta *a = &m->array;
    zf_status st;
    zf_err cerr = {""};
    if (fortran && a->ndim > 1) {
        unsigned perm[ZF_MAX_DIMS];
        for (unsigned d = 0; d < a->ndim; d++)
            perm[d] = a->ndim - 1 - d;
        zf_codec *t;
        if ((st = zf_codec_transpose_new(a->ndim, perm, &t, &cerr)) != ZF_OK)
            return st == ZF_ERR_NOMEM ? st
                                      : ZF_FIELD_FAIL(err, key, "chunk_memory_layout", "%s",
                                                      cerr.msg);
        if ((st = append(&a->chain, t)) != ZF_OK)
            return st;
    }
    /* zarr-python 2.13 core.py: "storing filters under attributes for now since the v3 array
     * metadata does not have a 'filters' attribute". */
    yajl_val filters = zf_json_get(zf_json_get(doc, "attributes"), "filters");
    size_t nf = YAJL_IS_ARRAY(filters) ? filters->u.array.len : 0;
    for (size_t i = 0; i < nf; i++)
        if (!YAJL_IS_STRING(zf_json_get(filters->u.array.values[i], "id")))
            nf = 0; /* not a list of codec configurations: an ordinary attribute */
    for (size_t i = 0; i < nf; i++) {
        zf_codec *c = NULL;
        cerr.msg[0] = '\0';
        st = zf_codec_from_v2(filters->u.array.values[i], &c, &cerr);
        if (st == ZF_ERR_UNSUPPORTED)
            return zf_meta_unsupported(m, "%s: \"attributes\": \"filters\": %s", key, cerr.msg);
        if (st != ZF_OK)
            return st == ZF_ERR_NOMEM ? st
                                      : ZF_FIELD_FAIL(err, key, "attributes", "\"filters\": %s",
                                                      cerr.msg);
        if ((st = append(&a->chain, c)) != ZF_OK)
            return st;
    }
    yajl_val comp = zf_json_get(doc, "compressor");
    if (comp && !YAJL_IS_NULL(comp)) {
        if (!YAJL_IS_OBJECT(comp))
            return ZF_FIELD_FAIL(err, key, "compressor", "expected null or a codec object");
        zf_codec *c = NULL;
        cerr.msg[0] = '\0';
        st = zf_codec_from_draft2020(comp, &c, &cerr);
        if (st == ZF_ERR_UNSUPPORTED)
            return zf_meta_unsupported(m, "%s: \"compressor\": %s", key, cerr.msg);
        if (st != ZF_OK)
            return st == ZF_ERR_NOMEM ? st
                                      : ZF_FIELD_FAIL(err, key, "compressor", "%s",
                                                      cerr.msg[0] ? cerr.msg : zf_status_str(st));
        if ((st = append(&a->chain, c)) != ZF_OK)
            return st;
    }
    /* The chain must fit this array's chunks (e.g. a delta filter's element size). */
    zf_chunk_repr *reprs = calloc(a->chain.n + 1, sizeof *reprs);
    if (!reprs)
        return ZF_ERR_NOMEM;
    zf_chunk_repr dec = zf_meta_chunk_repr(a);
    cerr.msg[0] = '\0';
    st = zf_chain_resolve(&a->chain, &dec, reprs, &cerr);
    free(reprs);
    if (st == ZF_ERR_NOMEM || st == ZF_OK)
        return st;
    const char *field = comp && !YAJL_IS_NULL(comp) ? "compressor" : "attributes";
    if (st == ZF_ERR_UNSUPPORTED) /* a codec that does not serve this data type (zfpy, <f2) */
        return zf_meta_unsupported(m, "%s: \"%s\": %s", key, field, cerr.msg);
    return ZF_FIELD_FAIL(err, key, field, "%s", cerr.msg);
}

static zf_status array_2020(const char *key, yajl_val doc, zf_node_meta *m, zf_err *err)
{
    zf_array_meta *a = &m->array;
    zf_status st;
    bool have_grid, fortran;
    if ((st = shape(key, doc, a, err)) ||
        (st = chunk_grid(key, zf_json_get(doc, "chunk_grid"), m, &have_grid, err)) ||
        (st = memory_layout(key, zf_json_get(doc, "chunk_memory_layout"), m, &fortran, err)))
        return st;
    yajl_val dtv = zf_json_get(doc, "data_type"), fv = zf_json_get(doc, "fill_value");
    if (!dtv)
        return ZF_FIELD_FAIL(err, key, "data_type", "missing");
    if (!(a->dtype_json = zf_json_dump(dtv)))
        return ZF_ERR_NOMEM;
    if ((st = dtype_2020(key, dtv, m, err)) != ZF_OK)
        return st;
    if (!fv)
        return ZF_FIELD_FAIL(err, key, "fill_value", "missing");
    if (!(a->fill_value_json = zf_json_dump(fv)))
        return ZF_ERR_NOMEM;
    /* zarr-python writes "dimension_separator" beside chunk_grid's "separator" (and uses the
     * latter); it must still be one. */
    yajl_val dsep = zf_json_get(doc, "dimension_separator");
    if (dsep && !YAJL_IS_NULL(dsep) &&
        (!YAJL_IS_STRING(dsep) || (strcmp(dsep->u.string, "/") && strcmp(dsep->u.string, "."))))
        return ZF_FIELD_FAIL(err, key, "dimension_separator", "expected \".\" or \"/\"");
    if ((st = array_extensions(key, zf_json_get(doc, "extensions"), m, err)) != ZF_OK)
        return st;
    /* The draft has no dimension names; xarray keeps them in "_ARRAY_DIMENSIONS", as in v2. */
    yajl_val dims = zf_json_get(zf_json_get(doc, "attributes"), "_ARRAY_DIMENSIONS");
    if (YAJL_IS_ARRAY(dims) && dims->u.array.len == a->ndim &&
        !(a->dimension_names_json = zf_json_dump(dims)))
        return ZF_ERR_NOMEM;
    if (m->unsupported != ZF_OK || !have_grid)
        return ZF_OK;

    uint64_t cbytes;
    if ((st = zf_meta_check_sizes(key, "shape", a, &cbytes, err)) != ZF_OK)
        return st;
    if (cbytes > ZF_MAX_CHUNK_BYTES)
        return zf_meta_unsupported(m, "%s: \"chunk_grid\": a chunk holds more than %llu bytes, "
                                      "zarrfs's limit",
                                   key, (unsigned long long)ZF_MAX_CHUNK_BYTES);
    if ((st = fill_2020(key, fv, a, err)) != ZF_OK)
        return st;
    return chain_2020(key, doc, fortran, m, err);
}

/* ----- May 2022 ----- */

static zf_status array_2022(const char *key, yajl_val doc, zf_node_meta *m, zf_err *err)
{
    /* "Array metadata": "The array metadata object must not contain any other names ... An
     * implementation must fail to open zarr hierarchies, groups or arrays with unknown metadata
     * fields." (dimension_names, from the drafts that followed, is read too.) */
    static const char *const known[] = {"shape",      "data_type",  "chunk_grid",
                                        "chunk_memory_layout", "fill_value", "extensions",
                                        "attributes", "codecs",     "storage_transformers",
                                        "dimension_names",     NULL};
    zf_array_meta *a = &m->array;
    zf_status st;
    bool have_grid, fortran;
    if ((st = shape(key, doc, a, err)) ||
        (st = chunk_grid(key, zf_json_get(doc, "chunk_grid"), m, &have_grid, err)) ||
        (st = memory_layout(key, zf_json_get(doc, "chunk_memory_layout"), m, &fortran, err)))
        return st;
    zf_v3_dtype t;
    yajl_val fv, codecs = zf_json_get(doc, "codecs");
    if ((st = zf_meta_v3_type_and_fill(key, doc, ZF_FORMAT_V3_DRAFT_2022, m, &t, &fv, err)) !=
        ZF_OK)
        return st;
    /* "fill_value": "For any data type, the fill_value is required. The literal null is not
     * permitted." */
    if (YAJL_IS_NULL(fv) && m->unsupported == ZF_OK) /* else its extension interprets it */
        return ZF_FIELD_FAIL(err, key, "fill_value", "required, null is not permitted");
    if (codecs && !YAJL_IS_ARRAY(codecs))
        return ZF_FIELD_FAIL(err, key, "codecs", "expected a list of codecs");
    if ((st = zf_meta_v3_dim_names(key, zf_json_get(doc, "dimension_names"), a, err)) ||
        (st = array_extensions(key, zf_json_get(doc, "extensions"), m, err)) ||
        (st = zf_meta_v3_storage_transformers(key, zf_json_get(doc, "storage_transformers"), m,
                                              err)))
        return st;
    for (size_t i = 0; i < doc->u.object.len; i++) {
        const char *f = doc->u.object.keys[i];
        bool k = false;
        for (const char *const *p = known; *p && !k; p++)
            k = strcmp(f, *p) == 0;
        if (!k && (st = zf_meta_unsupported(m, "%s: \"%s\": unknown metadata field is not "
                                               "supported",
                                            key, f)) != ZF_OK)
            return st;
    }
    if (m->unsupported != ZF_OK || !have_grid)
        return ZF_OK;
    return zf_meta_v3_finish(key, m, &t, fv, codecs, ZF_CODECS_DRAFT_2022, fortran, err);
}

static zf_status parse(zf_node_kind kind, zf_format format, const char *key, const char *text,
                       size_t len, zf_node_meta *m, zf_err *err)
{
    memset(m, 0, sizeof *m);
    if (!is_draft(format))
        return zf_fail(err, ZF_ERR_INVALID, "%s: not a v3 draft format", key);
    yajl_val doc;
    zf_status st = zf_meta_open_doc(key, text, len, &doc, err);
    if (st != ZF_OK)
        return st;
    m->kind = kind;
    if ((st = common(format, key, text, len, doc, m, err)) == ZF_OK && kind == ZF_NODE_ARRAY)
        st = format == ZF_FORMAT_V3_DRAFT_2020 ? array_2020(key, doc, m, err)
                                               : array_2022(key, doc, m, err);
    yajl_tree_free(doc);
    if (st != ZF_OK)
        zf_node_meta_free(m);
    return st;
}

zf_status zf_meta_parse_draft_array(zf_format format, const char *key, const char *text,
                                    size_t len, zf_node_meta *m, zf_err *err)
{
    return parse(ZF_NODE_ARRAY, format, key, text, len, m, err);
}

/* "Group metadata" (both drafts): an object with "attributes"; other names are reserved and,
 * as the 2020 draft's "zarr_format" allows, ignored. */
zf_status zf_meta_parse_draft_group(zf_format format, const char *key, const char *text,
                                    size_t len, zf_node_meta *m, zf_err *err)
{
    return parse(ZF_NODE_GROUP, format, key, text, len, m, err);
}
