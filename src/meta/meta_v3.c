/* meta_v3.c — final Zarr v3 core ("Metadata": "Array metadata", "Group metadata", "Additional
 * fields", "Extensions"), and dialect detection of a store's root zarr.json (DESIGN.md "Dialect
 * detection": the final spec, or the entry point of the 2020 and 2022 drafts).
 *
 * Errors name the key and the field: `zarr.json: "shape": expected a list of non-negative
 * integers`. What the spec allows but zarrfs cannot serve (extension data types, chunk grids,
 * chunk key encodings, codecs, storage transformers or fields it does not know) is not an error:
 * it marks the node unsupported, naming what, so the node is still listed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta_impl.h"
#include "zarrfs/json.h"

#define URI_DRAFT_2020 "https://purl.org/zarr/spec/protocol/core/3.0"
#define URI_DRAFT_2022 "https://purl.org/zarr/spec/core/3.0"

bool zf_meta_may_ignore(yajl_val v)
{
    return YAJL_IS_FALSE(zf_json_get(v, "must_understand"));
}

/* ----- dialect detection ----- */

/* Entry point "extensions" (both drafts): objects {"extension": URI, "must_understand": bool,
 * "configuration"}; zarrfs knows none, so one that must be understood refuses the store. */
static zf_status entry_extensions(const char *key, yajl_val exts, zf_err *err)
{
    if (!exts || YAJL_IS_NULL(exts))
        return ZF_OK;
    if (!YAJL_IS_ARRAY(exts))
        return ZF_FIELD_FAIL(err, key, "extensions", "expected a list of extension objects");
    for (size_t i = 0; i < exts->u.array.len; i++) {
        yajl_val e = exts->u.array.values[i], uri = zf_json_get(e, "extension");
        if (!YAJL_IS_OBJECT(e) || !YAJL_IS_STRING(uri))
            return ZF_FIELD_FAIL(err, key, "extensions",
                                 "expected objects with \"extension\" and \"must_understand\"");
        if (!zf_meta_may_ignore(e)) {
            zf_fail(err, ZF_ERR_UNSUPPORTED,
                    "extension \"%s\" is not supported (its \"must_understand\" is not false)",
                    uri->u.string);
            zf_err_prefix(err, "%s: \"extensions\"", key);
            return ZF_ERR_UNSUPPORTED;
        }
    }
    return ZF_OK;
}

static zf_status unsupported_field(zf_err *err, const char *key, const char *field,
                                   const char *fmt, const char *value)
{
    zf_fail(err, ZF_ERR_UNSUPPORTED, fmt, value);
    zf_err_prefix(err, "%s: \"%s\"", key, field);
    return ZF_ERR_UNSUPPORTED;
}

/* Draft entry points: 2020 "Entry point metadata" (metadata_encoding the core URI,
 * metadata_key_suffix ".json") and 2022 "Entry point metadata" (metadata_encoding
 * {"type": "json", "metadata_key_suffix": ".json"}). Absent members take those defaults. */
static zf_status entry_point(const char *key, yajl_val doc, zf_format f, zf_err *err)
{
    yajl_val enc = zf_json_get(doc, "metadata_encoding");
    yajl_val suffix = zf_json_get(doc, "metadata_key_suffix");
    if (f == ZF_FORMAT_V3_DRAFT_2020) {
        if (enc && !YAJL_IS_STRING(enc))
            return ZF_FIELD_FAIL(err, key, "metadata_encoding", "expected a URI string");
        if (enc && strcmp(enc->u.string, URI_DRAFT_2020))
            return unsupported_field(err, key, "metadata_encoding",
                                     "metadata encoding \"%s\" is not supported", enc->u.string);
    } else if (enc) {
        yajl_val type = zf_json_get(enc, "type");
        if (!YAJL_IS_OBJECT(enc) || !YAJL_IS_STRING(type))
            return ZF_FIELD_FAIL(err, key, "metadata_encoding",
                                 "expected an object with \"type\" and \"metadata_key_suffix\"");
        if (zf_json_get(enc, "extension") || strcmp(type->u.string, "json"))
            return unsupported_field(err, key, "metadata_encoding",
                                     "metadata encoding \"%s\" is not supported", type->u.string);
        suffix = zf_json_get(enc, "metadata_key_suffix");
    }
    if (suffix && !YAJL_IS_STRING(suffix))
        return ZF_FIELD_FAIL(err, key, "metadata_key_suffix", "expected a string");
    if (suffix && strcmp(suffix->u.string, ".json"))
        return unsupported_field(err, key,
                                 f == ZF_FORMAT_V3_DRAFT_2020 ? "metadata_key_suffix"
                                                              : "metadata_encoding",
                                 "metadata key suffix \"%s\" is not supported (only \".json\")",
                                 suffix->u.string);
    return entry_extensions(key, zf_json_get(doc, "extensions"), err);
}

zf_status zf_meta_detect_doc(const char *key, yajl_val doc, zf_format *format, zf_err *err)
{
    if (!YAJL_IS_OBJECT(doc))
        return zf_fail(err, ZF_ERR_INVALID, "%s: expected a JSON object", key);
    yajl_val zf = zf_json_get(doc, "zarr_format");
    int64_t n;
    if (!zf)
        return ZF_FIELD_FAIL(err, key, "zarr_format", "missing");
    if (zf_json_int64(zf, &n) && n == 3) {
        *format = ZF_FORMAT_V3;
        return ZF_OK;
    }
    if (YAJL_IS_STRING(zf) && strcmp(zf->u.string, URI_DRAFT_2020) == 0) {
        *format = ZF_FORMAT_V3_DRAFT_2020;
        return entry_point(key, doc, *format, err);
    }
    if (YAJL_IS_STRING(zf) && strcmp(zf->u.string, URI_DRAFT_2022) == 0) {
        *format = ZF_FORMAT_V3_DRAFT_2022;
        return entry_point(key, doc, *format, err);
    }
    return ZF_FIELD_FAIL(err, key, "zarr_format",
                         "expected 3, \"" URI_DRAFT_2020 "\" or \"" URI_DRAFT_2022 "\"");
}

zf_status zf_meta_detect(const char *key, const char *text, size_t len, zf_format *format,
                         zf_err *err)
{
    yajl_val doc;
    zf_status st = zf_meta_open_doc(key, text, len, &doc, err);
    if (st != ZF_OK)
        return st;
    st = zf_meta_detect_doc(key, doc, format, err);
    yajl_tree_free(doc);
    return st;
}

/* ----- the parts of an array with a named data type (final v3 and the 2022 draft) ----- */

/* Bytes of one chunk, exactly, or false when that exceeds 2^63. */
static bool exact_chunk_bytes(const zf_array_meta *a, uint64_t *out)
{
    uint64_t b = a->dtype.itemsize;
    for (unsigned d = 0; d < a->ndim; d++) {
        if (a->chunks[d] && b > (uint64_t)INT64_MAX / a->chunks[d])
            return false;
        b *= a->chunks[d];
    }
    *out = b;
    return true;
}

/* zf_codec_chain in front of which a transpose to reversed axes is put (2022 draft
 * "chunk_memory_layout" "F": the initial decoded representation is the chunk with its
 * dimension order reversed). */
static zf_status prepend_reversal(zf_codec_chain *chain, unsigned ndim, zf_err *err)
{
    unsigned perm[ZF_MAX_DIMS];
    for (unsigned d = 0; d < ndim; d++)
        perm[d] = ndim - 1 - d;
    zf_codec *t;
    zf_status st = zf_codec_transpose_new(ndim, perm, &t, err);
    if (st != ZF_OK)
        return st;
    if ((st = zf_chain_append(chain, t)) != ZF_OK) {
        zf_codec_free(t);
        return st;
    }
    memmove(chain->codecs + 1, chain->codecs, (chain->n - 1) * sizeof *chain->codecs);
    chain->codecs[0] = t;
    return ZF_OK;
}

#define TOO_BIG "%s: \"chunk_grid\": a chunk holds more than %llu bytes, zarrfs's limit"

/* An absent "codecs" (2022 draft: "equivalent to specifying an empty list"). */
static struct yajl_val_s empty_list = {.type = yajl_t_array};

zf_status zf_meta_v3_type_and_fill(const char *key, yajl_val doc, zf_format format,
                                   zf_node_meta *m, zf_v3_dtype *t, yajl_val *fill, zf_err *err)
{
    zf_array_meta *a = &m->array;
    yajl_val dtv = zf_json_get(doc, "data_type");
    if (!dtv)
        return ZF_FIELD_FAIL(err, key, "data_type", "missing");
    if (!(a->dtype_json = zf_json_dump(dtv)))
        return ZF_ERR_NOMEM;
    zf_err derr = {""};
    zf_status st = zf_meta_v3_dtype(dtv, format, t, &derr);
    if (st == ZF_ERR_INVALID)
        return ZF_FIELD_FAIL(err, key, "data_type", "%s", derr.msg);
    if (st == ZF_ERR_UNSUPPORTED) {
        if ((st = zf_meta_unsupported(m, "%s: \"data_type\": %s", key, derr.msg)) != ZF_OK)
            return st;
    } else if (st == ZF_OK) {
        a->dtype = t->dt;
        a->dtype_typestr = t->descr ? t->descr : strdup(t->typestr); /* struct: its descr */
        t->descr = NULL;
        if (!a->dtype_typestr)
            return ZF_ERR_NOMEM;
    } else {
        return st;
    }
    if (!(*fill = zf_json_get(doc, "fill_value")))
        return ZF_FIELD_FAIL(err, key, "fill_value", "missing");
    if (!(a->fill_value_json = zf_json_dump(*fill)))
        return ZF_ERR_NOMEM;
    return ZF_OK;
}

/* Shards of a rectilinear grid: one sharding codec per distinct shard shape (built and
 * dropped here to check them; the array layer builds its own). */
#define MAX_SHARD_SHAPES 64

typedef struct shape_check {
    const zf_codec *sharding;
    zf_dtype dtype;
    unsigned ndim;
    zf_err *err;
} shape_check;

static int check_shard_shape(void *ctx, const uint64_t *shape)
{
    shape_check *c = ctx;
    zf_chunk_repr r = {.ndim = c->ndim, .dtype = c->dtype, .nbytes = c->dtype.itemsize};
    for (unsigned d = 0; d < c->ndim; d++) {
        r.shape[d] = shape[d];
        r.nbytes *= (size_t)shape[d]; /* within the bounding chunk, checked already */
    }
    zf_codec *v;
    zf_status st = zf_sharding_reshaped(c->sharding, &r, &v, c->err);
    zf_codec_free(v);
    return (int)st;
}

/* A rectilinear grid's chunks differ in shape: each is decoded with its own (the chain was
 * built for the bounding chunk `dec`). The chain must also fit the smallest chunk (the least
 * edge length of every dimension; a reshape codec with fixed sizes would not). Sharding: a lone
 * sharding_indexed codec whose inner chunk shape divides every shard edge (as zarrs requires),
 * with at most MAX_SHARD_SHAPES distinct shard shapes. */
static zf_status rect_chain(const char *key, zf_node_meta *m, const zf_chunk_repr *dec,
                            zf_err *err)
{
    zf_array_meta *a = &m->array;
    zf_sharding sh;
    for (size_t i = 0; i < a->chain.n; i++) {
        if (!zf_codec_sharding(a->chain.codecs[i], &sh))
            continue;
        if (a->chain.n != 1)
            return zf_meta_unsupported(m, "%s: \"codecs\": sharding_indexed inside a "
                                       "\"rectilinear\" chunk grid must be the only codec",
                                       key);
        for (unsigned d = 0; d < a->ndim; d++)
            for (size_t r = 0; r < a->rect[d].nruns; r++)
                if (a->rect[d].edge[r] % sh.chunk_shape[d])
                    return ZF_FIELD_FAIL(err, key, "codecs",
                                         "sharding_indexed: \"chunk_shape\": %llu does not "
                                         "divide the shard edge %llu along dimension %u of the "
                                         "rectilinear grid",
                                         (unsigned long long)sh.chunk_shape[d],
                                         (unsigned long long)a->rect[d].edge[r], d);
        zf_err cerr = {""};
        shape_check c = {a->chain.codecs[0], a->dtype, a->ndim, &cerr};
        bool too_many;
        zf_status st = (zf_status)zf_array_meta_chunk_shapes(a, MAX_SHARD_SHAPES,
                                                            check_shard_shape, &c, &too_many);
        if (too_many)
            return zf_meta_unsupported(m, "%s: \"codecs\": sharding_indexed inside a "
                                       "\"rectilinear\" chunk grid of more than %d shard "
                                       "shapes is not supported", key, MAX_SHARD_SHAPES);
        if (st == ZF_OK || st == ZF_ERR_NOMEM)
            return st;
        return ZF_FIELD_FAIL(err, key, "codecs", "%s", cerr.msg);
    }
    zf_chunk_repr small = *dec;
    size_t n = a->dtype.itemsize;
    for (unsigned d = 0; d < a->ndim; d++) {
        const zf_chunk_edges *e = &a->rect[d];
        uint64_t least = a->chunks[d];
        for (size_t k = 0; k < e->nruns; k++)
            if (e->edge[k] < least)
                least = e->edge[k];
        small.shape[d] = least;
        n *= (size_t)least; /* <= the bounding chunk's bytes */
    }
    small.nbytes = n;
    zf_chunk_repr *reprs = calloc(a->chain.n + 1, sizeof *reprs);
    if (!reprs)
        return ZF_ERR_NOMEM;
    zf_err cerr = {""};
    zf_status st = zf_chain_resolve(&a->chain, &small, reprs, &cerr);
    free(reprs);
    if (st == ZF_ERR_NOMEM || st == ZF_OK)
        return st;
    return ZF_FIELD_FAIL(err, key, "codecs", "%s (for the smallest chunk of the rectilinear "
                         "grid)", cerr.msg);
}

zf_status zf_meta_v3_finish(const char *key, zf_node_meta *m, const zf_v3_dtype *t,
                            yajl_val fill, yajl_val codecs, zf_codec_dialect dialect,
                            bool fortran, zf_err *err)
{
    zf_array_meta *a = &m->array;
    zf_status st;
    a->fill_value = calloc(1, a->dtype.itemsize ? a->dtype.itemsize : 1);
    if (!a->fill_value)
        return ZF_ERR_NOMEM;
    if (a->dtype.kind == 'O') { /* variable-length strings (final v3 only): text */
        if (m->format != ZF_FORMAT_V3)
            return zf_meta_unsupported(m, "%s: \"data_type\": \"%s\" is not a type of this "
                                       "dialect", key, t->name);
        zf_chunk_repr dec = zf_meta_chunk_repr(a);
        /* Which kind of elements, for codecs that serve both (zarrs.vlen, zarrs.vlen_v2:
         * zf_vlen_dtype_utf8). */
        bool text = strcmp(t->name, "string") == 0 || strcmp(t->name, "variable_length_utf8") == 0;
        snprintf(dec.dtype.unit, sizeof dec.dtype.unit, "%s", text ? "string" : "bytes");
        zf_err cerr = {""};
        st = zf_chain_from_v3(codecs, dialect, &dec, NULL, &a->chain, &cerr);
        const char *cm = strncmp(cerr.msg, "codecs: ", 8) ? cerr.msg : cerr.msg + 8;
        if (st == ZF_ERR_UNSUPPORTED)
            return zf_meta_unsupported(m, "%s: \"codecs\": %s", key, cm);
        if (st != ZF_OK)
            return st == ZF_ERR_NOMEM ? st : ZF_FIELD_FAIL(err, key, "codecs", "%s", cm);
        return zf_meta_text_finish(key, m, fill, err);
    }
    zf_err ferr = {""};
    a->optional_levels = t->optional;
    st = t->optional ? zf_meta_v3_optional_fill(fill, t, m->format, a->fill_value, &a->mask_fill,
                                                &ferr)
                     : zf_meta_v3_fill_value(fill, t, m->format, a->fill_value, &ferr);
    if (st != ZF_OK)
        return st == ZF_ERR_NOMEM ? st : zf_fail(err, st, "%s: %s", key, ferr.msg);

    uint64_t cbytes;
    if ((st = zf_meta_check_sizes(key, "shape", a, &cbytes, err)) != ZF_OK)
        return st;
    uint64_t exact;
    bool fits = exact_chunk_bytes(a, &exact);
    if (fits && a->optional_levels) { /* and the validity depth of each element */
        fits = !__builtin_add_overflow(exact, zf_array_meta_chunk_elems(a), &exact);
        cbytes = exact; /* a decoded chunk holds both (checked against the limit below) */
    }
    if (fits && exact > SIZE_MAX)
        fits = false;
    if (!fits)
        return zf_meta_unsupported(m, TOO_BIG, key, (unsigned long long)ZF_MAX_CHUNK_BYTES);

    /* v3 core "Determination of encoded representations": decoded_representation[0] is the
     * chunk (reversed for the 2022 draft's "F" layout, which the transpose then produces). */
    zf_chunk_repr dec = zf_meta_chunk_repr(a);
    dec.nbytes = (size_t)exact;
    bool reverse = fortran && a->ndim > 1;
    zf_chunk_repr first = dec;
    if (reverse)
        for (unsigned d = 0; d < a->ndim; d++)
            first.shape[d] = dec.shape[a->ndim - 1 - d];
    zf_err cerr = {""};
    st = zf_chain_from_v3(codecs ? codecs : &empty_list, dialect, &first,
                          a->fill_value, &a->chain, &cerr);
    const char *cm = strncmp(cerr.msg, "codecs: ", 8) ? cerr.msg : cerr.msg + 8;
    if (st == ZF_ERR_NOMEM)
        return st;
    if (st == ZF_ERR_UNSUPPORTED)
        return zf_meta_unsupported(m, "%s: \"codecs\": %s", key, cm);
    if (st != ZF_OK)
        return ZF_FIELD_FAIL(err, key, "codecs", "%s", cm[0] ? cm : zf_status_str(st));
    if (a->optional_levels &&
        (a->chain.n == 0 || zf_codec_optional_levels(a->chain.codecs[0]) != a->optional_levels)) {
        zf_chain_clear(&a->chain); /* (another layout: the chain must decode the mask too) */
        return zf_meta_unsupported(m, "%s: \"codecs\": data type \"%s\" needs zarrs' optional "
                                   "codec, nested %u deep, as its first codec", key, t->name,
                                   a->optional_levels);
    }
    if (a->optional_levels && a->rect) {
        /* a chunk's mask follows its data, at an offset that would differ chunk by chunk */
        zf_chain_clear(&a->chain);
        return zf_meta_unsupported(m, "%s: zarrs' optional data type \"%s\" in a rectilinear "
                                   "chunk grid is not supported", key, t->name);
    }
    if (reverse) {
        if ((st = prepend_reversal(&a->chain, a->ndim, &cerr)) != ZF_OK)
            return st == ZF_ERR_NOMEM ? st
                                      : ZF_FIELD_FAIL(err, key, "chunk_memory_layout", "%s",
                                                      cerr.msg);
        zf_chunk_repr *reprs = calloc(a->chain.n + 1, sizeof *reprs);
        if (!reprs)
            return ZF_ERR_NOMEM;
        st = zf_chain_resolve(&a->chain, &dec, reprs, &cerr);
        free(reprs);
        if (st == ZF_ERR_NOMEM)
            return st;
        if (st != ZF_OK)
            return ZF_FIELD_FAIL(err, key, "codecs", "%s", cerr.msg);
    }

    if (a->rect && (st = rect_chain(key, m, &dec, err)) != ZF_OK) {
        zf_chain_clear(&a->chain);
        return st;
    }
    /* Chunks past zarrfs's limit: a shard is read by inner chunk, so only those must fit. */
    if (cbytes > ZF_MAX_CHUNK_BYTES) {
        zf_sharding sh;
        bool inner_fits = false;
        for (size_t i = 0; i < a->chain.n; i++)
            if (zf_codec_sharding(a->chain.codecs[i], &sh))
                inner_fits = sh.inner && sh.inner->nbytes <= ZF_MAX_CHUNK_BYTES;
        if (!inner_fits) {
            zf_chain_clear(&a->chain);
            return zf_meta_unsupported(m, TOO_BIG, key, (unsigned long long)ZF_MAX_CHUNK_BYTES);
        }
    }
    return ZF_OK;
}

/* ----- final v3 documents ----- */

/* chunk_grid (v3 core "chunk_grid"; seeds/zarr-v3-regular-chunk-grid.txt): "regular" with
 * {"chunk_shape": [...]}, or the zarr-extensions "rectilinear" grid (rectilinear.c); other
 * grids are extensions zarrfs does not serve. */
static zf_status chunk_grid(const char *key, yajl_val v, zf_node_meta *m, bool *have, zf_err *err)
{
    zf_array_meta *a = &m->array;
    yajl_val name = YAJL_IS_STRING(v) ? v : zf_json_get(v, "name");
    yajl_val cfg = zf_json_get(v, "configuration");
    *have = false;
    if (!v)
        return ZF_FIELD_FAIL(err, key, "chunk_grid", "missing");
    if (!YAJL_IS_STRING(name) || (cfg && !YAJL_IS_OBJECT(cfg)))
        return ZF_FIELD_FAIL(err, key, "chunk_grid",
                             "expected an object with \"name\" and \"configuration\"");
    if (strcmp(name->u.string, "rectilinear") == 0) {
        zf_status st = zf_meta_rectilinear(key, cfg, m, err);
        *have = st == ZF_OK && m->unsupported == ZF_OK;
        return st;
    }
    if (strcmp(name->u.string, "regular"))
        return zf_meta_unsupported(m, "%s: \"chunk_grid\": chunk grid \"%s\" is not supported",
                                   key, name->u.string);
    unsigned n;
    if (!zf_meta_dims(zf_json_get(cfg, "chunk_shape"), 1, &n, a->chunks))
        return ZF_FIELD_FAIL(err, key, "chunk_grid",
                             "\"chunk_shape\" must be a list of positive integers");
    if (n != a->ndim)
        return ZF_FIELD_FAIL(err, key, "chunk_grid",
                             "\"chunk_shape\" must have as many entries as \"shape\" (%u)",
                             a->ndim);
    *have = true;
    return ZF_OK;
}

/* chunk_key_encoding: "default" (chunk-key-encoding-default.rst: "c" and the separator, "/"
 * by default) or "v2" (chunk-key-encoding-v2.rst: no prefix, "." by default). */
static zf_status key_encoding(const char *key, yajl_val v, zf_node_meta *m, zf_err *err)
{
    zf_chunk_key_encoding *e = &m->array.key_encoding;
    yajl_val name = YAJL_IS_STRING(v) ? v : zf_json_get(v, "name");
    yajl_val cfg = zf_json_get(v, "configuration");
    if (!v)
        return ZF_FIELD_FAIL(err, key, "chunk_key_encoding", "missing");
    if (!YAJL_IS_STRING(name) || (cfg && !YAJL_IS_OBJECT(cfg)))
        return ZF_FIELD_FAIL(err, key, "chunk_key_encoding",
                             "expected an object with \"name\" and \"configuration\"");
    if (strcmp(name->u.string, "default") == 0) {
        e->separator = '/';
        snprintf(e->prefix, sizeof e->prefix, "c");
    } else if (strcmp(name->u.string, "v2") == 0) {
        e->separator = '.';
        e->prefix[0] = '\0';
    } else {
        return zf_meta_unsupported(
            m, "%s: \"chunk_key_encoding\": chunk key encoding \"%s\" is not supported", key,
            name->u.string);
    }
    e->prefix_joined = false;
    yajl_val sep = zf_json_get(cfg, "separator");
    if (sep) {
        if (!YAJL_IS_STRING(sep) || (strcmp(sep->u.string, "/") && strcmp(sep->u.string, ".")))
            return ZF_FIELD_FAIL(err, key, "chunk_key_encoding",
                                 "\"separator\" must be \"/\" or \".\"");
        e->separator = sep->u.string[0];
    }
    return ZF_OK;
}

/* dimension_names: null, or one string or null per dimension (v3 core "dimension_names"; the
 * 2022 draft's arrays may carry it too). */
zf_status zf_meta_v3_dim_names(const char *key, yajl_val v, zf_array_meta *a, zf_err *err)
{
    if (!v || YAJL_IS_NULL(v))
        return ZF_OK;
    bool ok = YAJL_IS_ARRAY(v) && v->u.array.len == a->ndim;
    for (size_t i = 0; ok && i < v->u.array.len; i++)
        ok = YAJL_IS_NULL(v->u.array.values[i]) ||
             (YAJL_IS_STRING(v->u.array.values[i]) && !zf_json_special(v->u.array.values[i]));
    if (!ok)
        return ZF_FIELD_FAIL(err, key, "dimension_names",
                             "expected null or a list of %u strings or nulls, one per dimension "
                             "of \"shape\"",
                             a->ndim);
    a->dimension_names_json = zf_json_dump(v);
    return a->dimension_names_json ? ZF_OK : ZF_ERR_NOMEM;
}

/* storage_transformers: absent or empty means none; zarrfs serves none, so any that must be
 * understood makes the array unsupported (names from objects' "name", or the 2022 draft's
 * "type" and "extension"). */
zf_status zf_meta_v3_storage_transformers(const char *key, yajl_val v, zf_node_meta *m,
                                          zf_err *err)
{
    if (!v || YAJL_IS_NULL(v))
        return ZF_OK;
    if (!YAJL_IS_ARRAY(v))
        return ZF_FIELD_FAIL(err, key, "storage_transformers",
                             "expected a list of storage transformers");
    for (size_t i = 0; i < v->u.array.len; i++) {
        yajl_val t = v->u.array.values[i];
        if (zf_meta_may_ignore(t))
            continue;
        yajl_val name = YAJL_IS_STRING(t) ? t : zf_json_get(t, "name");
        if (!YAJL_IS_STRING(name))
            name = zf_json_get(t, "type");
        if (!YAJL_IS_STRING(name))
            name = zf_json_get(t, "extension");
        return zf_meta_unsupported(
            m, "%s: \"storage_transformers\": storage transformer \"%s\" is not supported", key,
            YAJL_IS_STRING(name) ? name->u.string : "?");
    }
    return ZF_OK;
}

/* Fields of the document that are not among `known`: v3 core "must_understand": one whose
 * value is an object with "must_understand": false is ignored, any other makes the node
 * unsupported. */
static zf_status unknown_fields(const char *key, yajl_val doc, const char *const *known,
                                zf_node_meta *m)
{
    for (size_t i = 0; i < doc->u.object.len; i++) {
        const char *f = doc->u.object.keys[i];
        bool k = false;
        for (const char *const *p = known; *p && !k; p++)
            k = strcmp(f, *p) == 0;
        if (k || zf_meta_may_ignore(doc->u.object.values[i]))
            continue;
        return zf_meta_unsupported(m,
                                   "%s: \"%s\": unknown metadata field (not marked "
                                   "\"must_understand\": false) is not supported",
                                   key, f);
    }
    return ZF_OK;
}

static zf_status v3_array(const char *key, yajl_val doc, zf_node_meta *m, zf_err *err)
{
    static const char *const known[] = {
        "zarr_format", "node_type",  "shape",      "data_type",            "chunk_grid",
        "chunk_key_encoding", "fill_value", "codecs", "attributes", "storage_transformers",
        "dimension_names",    NULL};
    zf_array_meta *a = &m->array;
    zf_status st;
    yajl_val shape = zf_json_get(doc, "shape");
    if (!shape)
        return ZF_FIELD_FAIL(err, key, "shape", "missing");
    if (YAJL_IS_ARRAY(shape) && shape->u.array.len > ZF_MAX_DIMS)
        return ZF_FIELD_FAIL(err, key, "shape", "more than %d dimensions", ZF_MAX_DIMS);
    if (!zf_meta_dims(shape, 0, &a->ndim, a->shape))
        return ZF_FIELD_FAIL(err, key, "shape", "expected a list of non-negative integers");

    bool have_grid;
    if ((st = chunk_grid(key, zf_json_get(doc, "chunk_grid"), m, &have_grid, err)) ||
        (st = key_encoding(key, zf_json_get(doc, "chunk_key_encoding"), m, err)))
        return st;

    zf_v3_dtype t;
    yajl_val fv, codecs = zf_json_get(doc, "codecs");
    if ((st = zf_meta_v3_type_and_fill(key, doc, ZF_FORMAT_V3, m, &t, &fv, err)) != ZF_OK)
        return st;
    if (!codecs)
        return ZF_FIELD_FAIL(err, key, "codecs", "missing");
    if (!YAJL_IS_ARRAY(codecs))
        return ZF_FIELD_FAIL(err, key, "codecs", "expected a list of codecs");
    if ((st = zf_meta_v3_dim_names(key, zf_json_get(doc, "dimension_names"), a, err)) ||
        (st = zf_meta_v3_storage_transformers(key, zf_json_get(doc, "storage_transformers"), m,
                                              err)) ||
        (st = unknown_fields(key, doc, known, m)))
        return st;
    if (m->unsupported != ZF_OK || !have_grid)
        return ZF_OK;
    /* zarrita.js 0.7 writes "codecs": [] for arrays created without codecs and stores their
     * chunks as raw little-endian bytes, which is what its readers (and zarrfs) take an empty
     * list to mean; v3 core wants exactly one array -> bytes codec, so lists with codecs but
     * without one stay invalid. */
    yajl_val implicit = NULL;
    if (codecs->u.array.len == 0) {
        static const char bytes_le[] =
            "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]";
        if (!(implicit = yajl_tree_parse(bytes_le, NULL, 0)))
            return ZF_ERR_NOMEM;
        codecs = implicit;
    }
    st = zf_meta_v3_finish(key, m, &t, fv, codecs, ZF_CODECS_V3, false, err);
    yajl_tree_free(implicit);
    return st;
}

zf_status zf_meta_parse_v3(const char *key, const char *text, size_t len, zf_node_meta *m,
                           zf_err *err)
{
    static const char *const group_known[] = {"zarr_format", "node_type", "attributes",
                                              "consolidated_metadata", NULL};
    memset(m, 0, sizeof *m);
    yajl_val doc;
    zf_status st = zf_meta_open_doc(key, text, len, &doc, err);
    if (st != ZF_OK)
        return st;
    m->format = ZF_FORMAT_V3;
    yajl_val zf = zf_json_get(doc, "zarr_format"), nt = zf_json_get(doc, "node_type");
    yajl_val attrs = zf_json_get(doc, "attributes");
    int64_t n;
    if (!zf)
        st = ZF_FIELD_FAIL(err, key, "zarr_format", "missing");
    else if (!zf_json_int64(zf, &n) || n != 3)
        st = ZF_FIELD_FAIL(err, key, "zarr_format", "expected 3");
    else if (!nt)
        st = ZF_FIELD_FAIL(err, key, "node_type", "missing");
    else if (!YAJL_IS_STRING(nt) ||
             (strcmp(nt->u.string, "group") && strcmp(nt->u.string, "array")))
        st = ZF_FIELD_FAIL(err, key, "node_type", "expected \"group\" or \"array\"");
    else if (attrs && !YAJL_IS_OBJECT(attrs))
        st = ZF_FIELD_FAIL(err, key, "attributes", "expected a JSON object");
    else if (zf_meta_dup_text(&m->metadata_json, text, len) || !(m->metadata_key = strdup(key)) ||
             !(m->attributes_json = attrs ? zf_json_dump(attrs) : strdup("{}")))
        st = ZF_ERR_NOMEM;
    else if (strcmp(nt->u.string, "array") == 0) {
        m->kind = ZF_NODE_ARRAY;
        st = v3_array(key, doc, m, err);
    } else {
        /* "Group metadata"; "consolidated_metadata" is the historical exception of
         * "Additional fields" (null or an inline object): zarrfs reads nodes' own documents. */
        m->kind = ZF_NODE_GROUP;
        yajl_val cm = zf_json_get(doc, "consolidated_metadata");
        yajl_val kind = zf_json_get(cm, "kind"), md = zf_json_get(cm, "metadata");
        m->consolidated = YAJL_IS_STRING(kind) && strcmp(kind->u.string, "inline") == 0 &&
                          YAJL_IS_OBJECT(md) && md->u.object.len > 0;
        st = unknown_fields(key, doc, group_known, m);
    }
    yajl_tree_free(doc);
    if (st != ZF_OK)
        zf_node_meta_free(m);
    return st;
}
