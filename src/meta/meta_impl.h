/* meta_impl.h — internal to src/meta/. */
#ifndef ZARRFS_META_IMPL_H
#define ZARRFS_META_IMPL_H

#include <stdbool.h>
#include <yajl/yajl_tree.h>

#include "zarrfs/meta.h"

/* zf_meta_v2_fill_value on an already parsed value (NULL = absent = null). */
zf_status zf_meta_v2_fill_value_val(yajl_val v, const zf_dtype *dt, uint8_t *out, zf_err *err);

/* Largest decoded chunk zarrfs serves (bytes); larger chunks make the array unsupported. */
#define ZF_MAX_CHUNK_BYTES ((uint64_t)1 << 31)

/* ----- shared by the parsers (common.c) ----- */

/* Fail with `<key>: "<field>": <what>` (ZF_ERR_INVALID). */
#define ZF_FIELD_FAIL(err, key, field, ...)                                                  \
    (zf_fail(err, ZF_ERR_INVALID, __VA_ARGS__), zf_err_prefix(err, "%s: \"%s\"", key, field), \
     ZF_ERR_INVALID)

/* Finish a variable-length array (a->dtype kind 'O', a->chain built for chunks of that type):
 * its chunks must hold at most 2^31 elements and its chain must be a text chain (else m is
 * marked unsupported naming the reason); a->text_fill is the line of the fill value `fill`
 * (JSON). Errors: ZF_ERR_INVALID (`<key>: "fill_value": ...`), ZF_ERR_NOMEM. */
zf_status zf_meta_text_finish(const char *key, zf_node_meta *m, yajl_val fill, zf_err *err);

/* Mark m unsupported with a formatted reason (the first reason wins). Errors: ZF_ERR_NOMEM. */
zf_status zf_meta_unsupported(zf_node_meta *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Parse text as JSON that must be an object. Errors: ZF_ERR_INVALID
 * (`<key>: not valid JSON (...)`, `<key>: expected a JSON object`), ZF_ERR_NOMEM. */
zf_status zf_meta_open_doc(const char *key, const char *text, size_t len, yajl_val *doc,
                           zf_err *err);

/* A malloc'd NUL-terminated copy of len bytes of text. Errors: ZF_ERR_NOMEM. */
zf_status zf_meta_dup_text(char **dst, const char *text, size_t len);

/* v is a list of at most ZF_MAX_DIMS integers, each >= min: store them and return true. */
bool zf_meta_dims(yajl_val v, uint64_t min, unsigned *ndim, uint64_t *dims);

/* Bounds of an array whose shape, chunks and dtype are set: the flat file must hold fewer than
 * 2^63 bytes (else ZF_ERR_INVALID `<key>: "<shape_field>": the array holds more than 2^63
 * bytes`); *chunk_bytes receives the bytes of one chunk, saturated at ZF_MAX_CHUNK_BYTES + 1. */
zf_status zf_meta_check_sizes(const char *key, const char *shape_field, const zf_array_meta *a,
                              uint64_t *chunk_bytes, zf_err *err);

/* The "configuration" cfg of a "rectilinear" chunk grid (rectilinear.c) for m->array, whose
 * ndim and shape are set: fills chunks (the bounding chunk), rect (NULL when every dimension is
 * one run: a regular grid) and chunk_shapes_json. Errors: ZF_ERR_INVALID
 * (`<key>: "chunk_grid": ...`: not the schema's form, an edge length or count below 1 or past
 * 2^63 - 1, a list whose sum is below the dimension's length), ZF_ERR_NOMEM; a "kind" other
 * than "inline" makes the array unsupported. */
zf_status zf_meta_rectilinear(const char *key, yajl_val cfg, zf_node_meta *m, zf_err *err);
/* Free a's rect and chunk_shapes_json. */
void zf_meta_free_rect(zf_array_meta *a);

/* The decoded representation of one whole chunk of a (chunk shape, flat dtype). */
zf_chunk_repr zf_meta_chunk_repr(const zf_array_meta *a);

/* A Zarr v2 data type (v2 "Data type encoding": a typestr or a structured descr list, also the
 * draft-2020 data types, which are the same). On success *dt is the element type (kind 'V' with
 * the packed size for structured types), *typestr a malloc'd typestr (a JSON descr for
 * structured types) and *has_object tells whether an object field appears anywhere.
 * Errors: ZF_ERR_INVALID (message without key or field), ZF_ERR_NOMEM. */
zf_status zf_meta_v2_dtype(yajl_val v, zf_dtype *dt, char **typestr, bool *has_object,
                           zf_err *err);

/* "0x…" (hex) or, when allow_binary, "0b…" (binary) text of an unsigned integer of itemsize
 * bytes (at most 8), written into out in the given byte order. Returns false when s is not such
 * a string or the value does not fit. */
bool zf_meta_bits_string(const char *s, size_t itemsize, bool allow_binary, bool big_endian,
                         uint8_t *out);

/* ----- named data types: final v3 and the May 2022 draft (dtype_v3.c) ----- */

typedef struct zf_v3_dtype {
    zf_dtype dt;      /* the flat encoding's element type (little-endian) */
    char name[64];    /* the data type's name, for messages: "int32", "numpy.datetime64" */
    char typestr[48]; /* NumPy typestr of the flat encoding: "<i4", "|V3", "<M8[10s]", "<U5";
                         the Zarr name for types NumPy lacks: "bfloat16", "int4" */
    yajl_val fields;  /* "struct": its "fields" list (borrowed from the parsed document) */
    char *descr;      /* "struct": malloc'd user.zarr.dtype text (a NumPy descr as JSON, or the
                         data type's JSON when a field has no NumPy type); the caller frees */
    unsigned optional; /* zarrs' optional data type: levels of optional around dt (0: none) */
} zf_v3_dtype;

/* The "data_type" value v of format ZF_FORMAT_V3 (v3 "data-types" and the zarr-extensions
 * registry's types: a name or an extension object; out->descr set for "struct", which the
 * caller frees) or ZF_FORMAT_V3_DRAFT_2022 (a name, or an
 * extension object {"extension", "type", "fallback"}). Errors: ZF_ERR_INVALID for a malformed
 * value (message without key or field); ZF_ERR_UNSUPPORTED for data types zarrfs does not
 * serve (message names the data type). */
zf_status zf_meta_v3_dtype(yajl_val v, zf_format format, zf_v3_dtype *out, zf_err *err);

/* The fill value v of a named data type into t->dt.itemsize bytes (flat encoding). Errors:
 * ZF_ERR_INVALID with err = `"fill_value": <what> for data type "<name>"`. */
zf_status zf_meta_v3_fill_value(yajl_val v, const zf_v3_dtype *t, zf_format format, uint8_t *out,
                                zf_err *err);

/* zarrs' optional data type (dtype_v3.c): {"name": "optional" (or "zarrs.optional"),
 * "configuration": <the inner data type, itself a name/configuration object>}, nested up to 8
 * levels. *out is the innermost type with out->optional the levels (its typestr the innermost
 * one: the flat file holds the inner values). Errors: as zf_meta_v3_dtype; variable-length inner
 * types are ZF_ERR_UNSUPPORTED. */
zf_status zf_meta_v3_optional_dtype(const char *name, yajl_val cfg, zf_format format,
                                    zf_v3_dtype *out, zf_err *err);
/* The fill value v of an optional type t (t->optional > 0; zarrs "Fill Value Encoding"): null
 * is missing (depth 0, zero bytes), [x] one level present with x the next level's fill value,
 * so that [[42]] is Some(Some(42)). out gets the innermost value (t->dt.itemsize bytes, zeros
 * when missing), *depth the levels present. Errors: ZF_ERR_INVALID as zf_meta_v3_fill_value. */
zf_status zf_meta_v3_optional_fill(yajl_val v, const zf_v3_dtype *t, zf_format format,
                                   uint8_t *out, uint8_t *depth, zf_err *err);

/* The "data_type" and "fill_value" members of an array document with named data types (final v3,
 * format ZF_FORMAT_V3, or the 2022 draft): a->dtype_json, a->dtype and a->dtype_typestr (*t
 * filled) when the type is served, else m marked unsupported naming it; a->fill_value_json, the
 * fill value in *fill (required; its bytes come in zf_meta_v3_finish). Errors: ZF_ERR_INVALID
 * `<key>: "data_type"|"fill_value": <what>`. */
zf_status zf_meta_v3_type_and_fill(const char *key, yajl_val doc, zf_format format,
                                   zf_node_meta *m, zf_v3_dtype *t, yajl_val *fill, zf_err *err);

/* The rest of an array with a named data type (final v3 and the 2022 draft) once m->array has
 * its shape, chunks and dtype: the fill value (fill, required), size bounds and the codec chain
 * of `codecs` (a JSON list) in `dialect`. fortran: the 2022 draft's chunk_memory_layout "F"
 * (a transpose before the codecs). Errors: ZF_ERR_INVALID `<key>: "<field>": <what>`;
 * unsupported codecs or too large chunks mark m unsupported (meta_v3.c). */
zf_status zf_meta_v3_finish(const char *key, zf_node_meta *m, const zf_v3_dtype *t,
                            yajl_val fill, yajl_val codecs, zf_codec_dialect dialect,
                            bool fortran, zf_err *err);

/* "dimension_names" (v3 core): absent or null, or a list of ndim strings or nulls, kept as
 * a->dimension_names_json. Errors: ZF_ERR_INVALID. */
zf_status zf_meta_v3_dim_names(const char *key, yajl_val v, zf_array_meta *a, zf_err *err);

/* "storage_transformers": absent or empty is none; one that may not be ignored marks m
 * unsupported naming it. Errors: ZF_ERR_INVALID when not a list. */
zf_status zf_meta_v3_storage_transformers(const char *key, yajl_val v, zf_node_meta *m,
                                          zf_err *err);

/* True when v is an object whose "must_understand" is false (v3 core "must_understand"). */
bool zf_meta_may_ignore(yajl_val v);

#endif
