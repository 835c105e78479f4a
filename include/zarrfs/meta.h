/* meta.h — the in-memory model of a Zarr node, the same for every dialect.
 *
 * One parser per dialect turns stored metadata documents into a zf_node_meta: node kind,
 * attributes, and for arrays shape, data type, chunk grid, chunk key encoding, fill value bytes
 * and a codec chain. Zarr v2: "Metadata" (.zarray), "Groups" (.zgroup), "Attributes" (.zattrs),
 * "Data type encoding", "Fill value encoding", "Chunk storage" — plus consolidated metadata
 * (.zmetadata) as zarr-python writes it. */
#ifndef ZARRFS_META_H
#define ZARRFS_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "zarrfs/codec.h"
#include "zarrfs/dtype.h"
#include "zarrfs/status.h"

typedef enum zf_format {
    ZF_FORMAT_V2,
    ZF_FORMAT_V3,
    ZF_FORMAT_V3_DRAFT_2020,
    ZF_FORMAT_V3_DRAFT_2022,
} zf_format;

/* "2", "3", "3-draft-2020", "3-draft-2022" (the user.zarr.format xattr). */
const char *zf_format_name(zf_format f);

typedef enum zf_node_kind { ZF_NODE_GROUP, ZF_NODE_ARRAY } zf_node_kind;

/* How chunk coordinates become a key below the array's prefix. */
/* Chunk key of coords (1, 2): v2 and v3 "v2" encoding "1.2" (0-d: "0"); v3 "default" encoding
 * "c/1/2" (0-d: "c"); both v3 drafts "c1/2", i.e. prefix_joined (0-d: "c" in the 2022 draft;
 * "c0" as zarr-python 2.13 writes the 2020 draft, which the parser sets as the prefix). */
typedef struct zf_chunk_key_encoding {
    char separator;      /* '.' or '/' */
    char prefix[8];      /* "" for v2; "c" for v3 default encoding and the drafts */
    bool prefix_joined;  /* no separator between prefix and the first coordinate (drafts) */
} zf_chunk_key_encoding;

/* One dimension of a rectilinear chunk grid (zarr-extensions chunk-grids/rectilinear: chunk
 * edge lengths that vary along a dimension), kept run-length: run r is a sequence of chunks of
 * equal edge length edge[r] elements. Only the chunks that reach into the array are kept (those
 * a declared list places wholly past the end are dropped), so the memory is one run per distinct
 * stretch of the declaration, whatever its counts: `[[4, 1152921504606846976]]` is one run.
 * Chunk c with first[r] <= c < first[r + 1] begins at element start[r] + (c - first[r]) *
 * edge[r] and holds edge[r] elements (the last may reach past the array's end, as a regular
 * grid's edge chunks do). Cumulative values fit in uint64: they are bounded by shape + edge. */
typedef struct zf_chunk_edges {
    size_t nruns;    /* 0 only for a dimension of length 0 */
    uint64_t *edge;  /* nruns entries, each >= 1 */
    uint64_t *first; /* nruns + 1: index of run r's first chunk; first[nruns] = chunks along the
                        dimension (ceil-like: every chunk holding an element of the array) */
    uint64_t *start; /* nruns + 1: element where run r begins; start[nruns] = end of the last
                        chunk (>= the dimension's length) */
    uint64_t extent; /* elements the declaration covers: the sum of every declared edge length,
                        UINT64_MAX for a single integer (a regular dimension, unbounded) or when
                        the sum overflows — how far the dimension may grow (resize) */
} zf_chunk_edges;

typedef struct zf_array_meta {
    unsigned ndim;
    uint64_t shape[ZF_MAX_DIMS];  /* elements */
    uint64_t chunks[ZF_MAX_DIMS]; /* elements per chunk, each >= 1; for a rectilinear grid the
                                     largest edge length of each dimension's chunks (the
                                     bounding chunk: size limits, the chain's resolution) */
    /* Rectilinear chunk grid (v3 "chunk_grid" "rectilinear"): ndim entries, one per dimension
     * (a dimension of one run is regular along it), or NULL for a regular grid. A rectilinear
     * declaration whose every dimension is one run (`[4, [[2, 3]]]`) is a regular grid and is
     * kept as one (rect NULL, chunks the edges). */
    zf_chunk_edges *rect;
    char *chunk_shapes_json;      /* a "rectilinear" declaration's "chunk_shapes" as stored
                                     (user.zarr.chunks), also when kept as a regular grid;
                                     NULL for a grid declared "regular" */
    zf_dtype dtype;               /* the flat encoding's element type (its itemsize) */
    char *dtype_json;             /* data type as stored: "\"<f8\"" or a structured descr list */
    char *dtype_typestr;          /* NumPy typestr of the flat encoding; a JSON descr for
                                     structured dtypes (user.zarr.dtype) */
    uint8_t *fill_value;          /* dtype.itemsize bytes, flat encoding (zeros for null) */
    char *fill_value_json;        /* fill value as stored, e.g. "\"NaN\"", "0", "null" */
    char *dimension_names_json;   /* JSON list, or NULL when the node has none */
    bool dimension_separator_given; /* v2: .zarray had "dimension_separator" */
    bool variable_length;         /* the data type has object (variable-length) elements */
    /* zarrs' optional data type (final v3): levels of optional around dtype (0: not optional;
     * 2 for optional(optional(T))). dtype, dtype_typestr and fill_value are the innermost type's
     * (the array's file holds those values, zero where missing); its chunks decode to data
     * followed by one validity-depth byte per element (codec.h zf_codec_optional_levels), and
     * mask_fill is the fill value's depth (0 for null, 1 for [x], ...). */
    unsigned optional_levels;
    uint8_t mask_fill;
    /* Variable-length arrays read as text (chain is a text chain, zf_chain_is_text; codec.h
     * "variable-length elements as text"): the line an element equal to the fill value reads
     * as, escaped and '\n'-terminated, text_fill_len bytes. NULL for every other array. */
    char *text_fill;
    size_t text_fill_len;
    zf_chunk_key_encoding key_encoding;
    zf_codec_chain chain;         /* decode pipeline; its decoded repr is one whole chunk */
} zf_array_meta;

typedef struct zf_node_meta {
    zf_format format;
    zf_node_kind kind;
    char *metadata_json;   /* the stored document (user.zarr.metadata) */
    char *attributes_json; /* JSON object text (user.zarr.attributes), "{}" when none */
    char *metadata_key;    /* key of the document, for timestamps and messages */
    /* Arrays only. When the node is an array zarrfs cannot serve (object dtype, unknown codec),
     * `unsupported` is ZF_ERR_UNSUPPORTED and `unsupported_why` names the dtype or codec; the
     * node is still listed but opening it fails. */
    zf_array_meta array;
    zf_status unsupported;
    char *unsupported_why;
    /* Unsupported because a codec needs a library this system lacks (unsupported_why holds
     * ZF_CODEC_NO_LIBRARY, codec.h: pcodec): the array fails to open (EOPNOTSUPP) rather than
     * opening with its size and failing every read as other undecodable arrays do. */
    bool refuse_open;
    /* v3 groups: the document has inline "consolidated_metadata" with entries (the hierarchy
     * lists the group and its descendants from it). */
    bool consolidated;
} zf_node_meta;

/* Parse a v2 .zarray document (text, len bytes) into meta (kind ARRAY). attrs_json may be NULL.
 * key is used in messages: errors are ZF_ERR_INVALID with err = `<key>: "<field>": <what>`,
 * e.g. `.zarray: "shape": expected a list of non-negative integers`. Unsupported dtypes and codecs
 * are not errors: they set meta->unsupported. */
zf_status zf_meta_parse_v2_array(const char *key, const char *text, size_t len,
                                 const char *attrs_json, zf_node_meta *meta, zf_err *err);
/* Parse a v2 .zgroup document. Errors as above ("zarr_format" must be 2). */
zf_status zf_meta_parse_v2_group(const char *key, const char *text, size_t len,
                                 const char *attrs_json, zf_node_meta *meta, zf_err *err);
/* Either of the above (kind ZF_NODE_ARRAY or ZF_NODE_GROUP) with the document parsed already:
 * doc (zf_json_parse's tree, not freed here) is the JSON of text (len bytes, kept as the
 * metadata's text). For consolidated metadata, parsed once whole: its entries are not parsed
 * again. Errors as above; ZF_ERR_INVALID when doc is not an object. */
zf_status zf_meta_parse_v2_parsed(zf_node_kind kind, const char *key, const char *text,
                                  size_t len, yajl_val doc, const char *attrs_json,
                                  zf_node_meta *meta, zf_err *err);

/* The dimension names of a v2 array of ndim dimensions: xarray's "_ARRAY_DIMENSIONS" member of
 * the attributes (JSON object text, len bytes) when it is a list of ndim entries, as JSON list
 * text (malloc'd; what zf_meta_parse_v2_array puts in dimension_names_json), else NULL in *out
 * (also for text that is not JSON). Errors: ZF_ERR_NOMEM. */
zf_status zf_meta_v2_dimension_names(const char *attrs_json, size_t len, unsigned ndim,
                                     char **out);

/* Fill value bytes for a v2 "fill_value" (JSON text) of dtype dt: numbers (64-bit integers
 * exact), "NaN", "Infinity", "-Infinity", [re, im] for complex, base64 for S/V/structured, a
 * string for U, null (zeros). out holds dt->itemsize bytes. Errors: ZF_ERR_INVALID. */
zf_status zf_meta_v2_fill_value(const char *json, const zf_dtype *dt, uint8_t *out, zf_err *err);

/* ----- Zarr v3 and its drafts ----- */

/* Which dialect a zarr.json at the store root belongs to (DESIGN.md "Dialect detection"):
 * "zarr_format": 3 -> ZF_FORMAT_V3 (the document is the root node's metadata);
 * "https://purl.org/zarr/spec/protocol/core/3.0" -> ZF_FORMAT_V3_DRAFT_2020 and
 * "https://purl.org/zarr/spec/core/3.0" -> ZF_FORMAT_V3_DRAFT_2022 (the document is the entry
 * point: its metadata_encoding, metadata_key_suffix and extensions are checked here; an
 * extension with must_understand true is ZF_ERR_UNSUPPORTED naming it). Errors: ZF_ERR_INVALID
 * (`zarr.json: "zarr_format": ...`), ZF_ERR_UNSUPPORTED. */
zf_status zf_meta_detect(const char *key, const char *text, size_t len, zf_format *format,
                         zf_err *err);

/* zf_meta_detect of a document already parsed (doc: its JSON tree, left to the caller), so that
 * a reader that needs the tree afterwards (the root zarr.json's consolidated metadata) parses
 * it once. Same results and errors; a doc that is not an object is ZF_ERR_INVALID. */
zf_status zf_meta_detect_doc(const char *key, yajl_val doc, zf_format *format, zf_err *err);

/* Parse a final Zarr v3 zarr.json (v3 core "Metadata": node_type group or array) into meta.
 * Data types are the flat encoding's (little-endian); fill_value in every form of v3
 * "data-types" (and the zarr-python 3 extension types); chunk_grid "regular" or
 * "rectilinear" (zarr-extensions; zf_array_meta.rect);
 * chunk_key_encoding "default" or "v2"; codecs via zf_chain_from_v3. Invalid documents are
 * ZF_ERR_INVALID with err = `<key>: "<field>": <what>`. Unknown data types, codecs, chunk grids,
 * storage transformers, extension fields with must_understand true, and variable-length data
 * types are not errors: they set meta->unsupported naming them. */
zf_status zf_meta_parse_v3(const char *key, const char *text, size_t len, zf_node_meta *meta,
                           zf_err *err);

/* Parse a draft array (".array.json") or group (".group.json") metadata document of format
 * ZF_FORMAT_V3_DRAFT_2020 (NumPy typestr data types with byte order kept, chunk_grid separator,
 * chunk_memory_layout, compressor, extensions) or ZF_FORMAT_V3_DRAFT_2022 (named data types,
 * little-endian flat encoding, codecs, required fill_value, storage_transformers; unknown
 * fields make the array unsupported). Errors and unsupported nodes as zf_meta_parse_v3. */
zf_status zf_meta_parse_draft_array(zf_format format, const char *key, const char *text,
                                    size_t len, zf_node_meta *meta, zf_err *err);
zf_status zf_meta_parse_draft_group(zf_format format, const char *key, const char *text,
                                    size_t len, zf_node_meta *meta, zf_err *err);

/* True when the array is one of variable-length elements that reads as text (text_fill set):
 * its file is one line per element, its size known only once read (docs/formats.md). */
bool zf_array_meta_is_text(const zf_array_meta *a);

/* True when the array's file is read-only whatever the mount allows: text of variable-length
 * elements, and arrays of zarrs' optional data types (their file cannot say which elements are
 * missing; docs/formats.md). Opening it for writing is EACCES on a -o rw mount. */
bool zf_array_meta_read_only(const zf_array_meta *a);

/* The bytes of an array's flat file, product(shape) * itemsize, when its shape and a
 * fixed-size data type are known: true also for an array zarrfs cannot decode (an unknown
 * codec, chunk grid or storage transformer, a chunk over the size limit), which keeps its real
 * size and fails its reads with EIO (DESIGN.md "Errors users see"). False when the data type is
 * variable-length or not known, or the size reaches 2^63 bytes. */
bool zf_array_meta_flat_size(const zf_array_meta *a, uint64_t *bytes);

/* Number of elements in one chunk (product of chunks); bytes = that * itemsize. For a
 * rectilinear grid: of the bounding chunk (the largest edge length of each dimension). */
uint64_t zf_array_meta_chunk_elems(const zf_array_meta *a);

/* A rectilinear dimension's chunk holding element x (x < e->start[e->nruns]): its index
 * *chunk, first element *lo and edge length *edge — a binary search over the runs,
 * O(log nruns). Returns the index of the run holding it. */
size_t zf_chunk_edges_find(const zf_chunk_edges *e, uint64_t x, uint64_t *chunk, uint64_t *lo,
                         uint64_t *edge);
/* Chunk c (c < e->first[e->nruns]) of a rectilinear dimension: its first element *lo and edge
 * length *edge, O(log nruns). */
void zf_chunk_edges_chunk(const zf_chunk_edges *e, uint64_t c, uint64_t *lo, uint64_t *edge);

/* The distinct chunk shapes of a rectilinear grid (a->rect set): fn(ctx, shape) for each
 * combination of the distinct edge lengths of each dimension's runs (shape: ndim entries,
 * elements), in no particular order, stopping at the first non-zero return, which is returned.
 * When there are more than `max` combinations nothing is called and *too_many is set. */
int zf_array_meta_chunk_shapes(const zf_array_meta *a, size_t max,
                               int (*fn)(void *ctx, const uint64_t *shape), void *ctx,
                               bool *too_many);

/* The store key of chunk `coords` below prefix ("" or "group/array"), as a->key_encoding says
 * (see zf_chunk_key_encoding): v2 "0.0" / "0/0" ("0" for a 0-d array), v3 "c/0/0", drafts
 * "c0/0". buf holds at least bufsize bytes. Errors: ZF_ERR_INVALID when too long. */
zf_status zf_array_meta_chunk_key(const zf_array_meta *a, const char *prefix,
                                  const uint64_t *coords, char *buf, size_t bufsize);

void zf_node_meta_free(zf_node_meta *meta);

#endif
