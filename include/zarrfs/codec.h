/* codec.h — the Zarr codec pipeline (decode direction).
 *
 * Zarr v3 core, "Codecs": a chain of zero or more array -> array codecs, exactly one
 * array -> bytes codec, then zero or more bytes -> bytes codecs. Zarr v2 ("Metadata": order,
 * filters, compressor) maps onto the same chain: `order: "F"` is a transpose (array -> array),
 * each filter is an array -> array codec on the flat element buffer, the raw element bytes are
 * the array -> bytes step (identity), and the compressor is a bytes -> bytes codec.
 *
 * Decoding runs the chain backwards. Where the size of a step's output is known (computed
 * forwards from the chunk's decoded representation with zf_codec_ops.resolve) the step is told
 * it exactly; a codec whose input would decode to any other size fails with ZF_ERR_CORRUPT, and
 * decompressors write into a buffer of exactly that size, so a decompression bomb is rejected
 * without allocating the excess. The final step always knows its size (the chunk's).
 *
 * Some intermediate byte strings have a size only the data can tell: the input of a codec that
 * follows a compressor or a sharding codec in encode order (v3 `bytes -> zstd -> gzip`,
 * `sharding_indexed -> gzip`, the 2022 draft's `endian -> gzip -> blosc`, a v2 compressor used
 * as a filter). There the codec says the size from its data where its format states it
 * (zf_codec_ops.decoded_size: checksums, blosc's header, lz4's size prefix, zstd frames with a
 * content size), or else decodes into a buffer of a bounded size and reports how much it wrote
 * (zf_codec_ops.decode_bounded: zlib, gzip, bz2, lzma, zstd frames without a content size). The
 * bound is zf_chain_unknown_bound's: output beyond it is ZF_ERR_CORRUPT, found without
 * producing or allocating more. */
#ifndef ZARRFS_CODEC_H
#define ZARRFS_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_tree.h>

#include "zarrfs/dtype.h"
#include "zarrfs/status.h"

#define ZF_MAX_DIMS 32

typedef enum zf_codec_kind {
    ZF_CODEC_ARRAY_TO_ARRAY,
    ZF_CODEC_ARRAY_TO_BYTES,
    ZF_CODEC_BYTES_TO_BYTES,
} zf_codec_kind;

/* What flows between two codecs: an array of ndim dims with `shape` elements of `dtype`, or for
 * bytes -> bytes codecs just a byte string. nbytes is the byte size, or ZF_SIZE_UNKNOWN where only
 * the stored data can tell (the output of a compressor). */
#define ZF_SIZE_UNKNOWN SIZE_MAX
typedef struct zf_chunk_repr {
    unsigned ndim;
    uint64_t shape[ZF_MAX_DIMS]; /* elements per dimension */
    zf_dtype dtype;
    size_t nbytes;               /* bytes, or ZF_SIZE_UNKNOWN */
} zf_chunk_repr;

typedef struct zf_codec zf_codec;
struct zf_text_chunk;

typedef struct zf_codec_ops {
    const char *name; /* the codec id, e.g. "zlib", "delta", "transpose" */
    zf_codec_kind kind;
    /* Representation after encoding `decoded`. Errors: ZF_ERR_INVALID (e.g. the byte size is
     * not a multiple of the codec's element size), with a message. */
    zf_status (*resolve)(const zf_codec *c, const zf_chunk_repr *decoded, zf_chunk_repr *encoded,
                         zf_err *err);
    /* Decode in[0..in_len) into exactly out_len bytes (out_len == decoded->nbytes).
     * `decoded` is the representation the output must have. Errors: ZF_ERR_CORRUPT when the
     * input is malformed or would decode to any size but out_len; ZF_ERR_NOMEM. */
    zf_status (*decode)(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                        size_t in_len, uint8_t *out, size_t out_len, zf_err *err);
    void (*destroy)(zf_codec *c);
    /* Optional (NULL when only decoding can tell, as for zlib): the exact size decode will
     * produce from in[0..in_len), for codecs whose decoded size follows from the encoded one
     * (checksums, dtype filters, shuffle, base64) or that their format states (blosc's header,
     * lz4's size prefix, zstd's frame content sizes). zf_chain_decode uses it where resolve
     * could not know the size, e.g. a crc32c after a compressor. Errors: ZF_ERR_CORRUPT;
     * ZF_ERR_UNSUPPORTED when the data does not say (zstd frames without a content size; the
     * codec then has decode_bounded). */
    zf_status (*decoded_size)(const zf_codec *c, const uint8_t *in, size_t in_len,
                              size_t *out_len, zf_err *err);
    /* Encode in[0..in_len) (in_len == decoded->nbytes; `decoded` is the representation of the
     * input, exactly as zf_chain_resolve gives it, except that a byte string of unknown size
     * gets its actual size) into *out (malloc'd, owned by the caller) of *out_len bytes, as the
     * reference implementation writes it (numcodecs for v2 ids, zarr-python 3 for v3 names), so
     * that decode(encode(x)) == x; the lossy filters (quantize, bitround) decode to the rounded
     * values numcodecs stores. flags: ZF_ENCODE_*. NULL: the codec cannot encode
     * (zf_chain_encode then fails with ZF_ERR_UNSUPPORTED naming it).
     * Errors: ZF_ERR_INVALID (a configuration or input the codec cannot encode, e.g. bitround
     * of integers; the message names the codec), ZF_ERR_NOMEM. (A categorize value outside
     * its labels encodes as 0, as numcodecs does.) */
    zf_status (*encode)(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                        size_t in_len, unsigned flags, uint8_t **out, size_t *out_len,
                        zf_err *err);
    /* Optional, for bytes -> bytes codecs whose decoded size neither resolve nor the data's own
     * header tells (zlib, gzip, bz2, lzma; zstd frames without a content size): decode
     * in[0..in_len) into out[0..cap), *produced (<= cap) bytes. zf_chain_decode uses it where
     * resolve could not know the size and decoded_size is NULL or fails with
     * ZF_ERR_UNSUPPORTED (zstd: "the frames do not say"). Errors: ZF_ERR_CORRUPT when the
     * input is malformed, or when it would decode to more than cap bytes: then *produced is
     * SIZE_MAX, and nothing past out[cap) was written or decoded; ZF_ERR_NOMEM. */
    zf_status (*decode_bounded)(const zf_codec *c, const uint8_t *in, size_t in_len,
                                uint8_t *out, size_t cap, size_t *produced, zf_err *err);
    /* Object codecs only (array -> bytes codecs of variable-length elements: vlen-utf8, ...;
     * NULL for every other codec): decode in[0..in_len), the byte string of one chunk of
     * `decoded` (shape in elements, C order of the stored layout), into its text form
     * (zf_text_chunk, below). Errors: ZF_ERR_CORRUPT (a count that is negative or not the
     * chunk's element count, a length past the end, invalid UTF-8 for vlen-utf8, a chunk whose
     * text would reach 4 GiB; the message names the codec), ZF_ERR_NOMEM. */
    zf_status (*decode_text)(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                             size_t in_len, struct zf_text_chunk **out, zf_err *err);
    /* Object codecs only: the line (escaped, '\n'-terminated, malloc'd, *len bytes) that an
     * element equal to the array's fill value (JSON `fill`) reads as. Errors: ZF_ERR_INVALID
     * (a fill value the codec's elements cannot be), ZF_ERR_UNSUPPORTED (one whose meaning
     * writers disagree on: vlen-bytes' string fill values), ZF_ERR_NOMEM. */
    zf_status (*fill_text)(const zf_codec *c, yajl_val fill, char **line, size_t *len,
                           zf_err *err);
    /* Optional, array -> array codecs whose specification transforms the fill value as it
     * transforms elements (zarr-extensions scale_offset, "Fill value handling"; NULL for the
     * others, whose encoded representation keeps the array's fill value): encode one element,
     * fill (one item of the decoded data type, flat encoding), into out (one item of the encoded
     * data type). zf_chain_from_v3 hands the result to the codecs after it (sharding_indexed's
     * empty inner chunks). Errors: ZF_ERR_INVALID (a fill value the codec cannot encode; the
     * message names the codec). */
    zf_status (*encode_fill)(const zf_codec *c, const uint8_t *fill, uint8_t *out, zf_err *err);
} zf_codec_ops;

/* zf_codec_ops.encode flags. */
enum {
    /* sharding_indexed: store inner chunks equal to the fill value everywhere (by default they
     * are left out of the shard: an empty index entry, as zarr-python 3 does without
     * write_empty_chunks). */
    ZF_ENCODE_WRITE_EMPTY = 1u << 0,
};

/* Every codec object starts with a pointer to its ops; implementations embed it first. */
struct zf_codec {
    const zf_codec_ops *ops;
};

/* A codec chain in encode order (first = applied first when encoding, last when decoding). */
typedef struct zf_codec_chain {
    size_t n;
    zf_codec **codecs;
} zf_codec_chain;

/* Build one codec from a Zarr v2 / numcodecs configuration object such as
 * {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1}. Used for both `compressor` and
 * each entry of `filters`. Errors: ZF_ERR_UNSUPPORTED for an id zarrfs does not serve (the message
 * names it: object codecs such as pickle, msgpack; pcodec);
 * ZF_ERR_INVALID for a malformed configuration (message names the field). */
zf_status zf_codec_from_v2(yajl_val config, zf_codec **out, zf_err *err);

/* Part of the ZF_ERR_UNSUPPORTED message of zf_codec_from_v2, zf_chain_from_v3 and
 * zf_codec_from_draft2020 for a codec zarrfs knows but that no library on this system decodes
 * (pcodec: v2 "pcodec", v3 "numcodecs.pcodec"): `codec "pcodec" is not supported (pcodec
 * compression: no library on this system provides it)`. The metadata layer marks such arrays
 * so that they fail to open (EOPNOTSUPP) instead of opening and failing every read (meta.h,
 * zf_node_meta.refuse_open; docs/formats.md). */
#define ZF_CODEC_NO_LIBRARY "no library on this system provides it"

/* A transpose (array -> array) whose encoded array has axes `order` of the decoded one (Zarr v3
 * "transpose" codec; Zarr v2 `order: "F"` is order = [ndim-1, ..., 0]). order is a permutation
 * of 0..ndim-1. Errors: ZF_ERR_INVALID when it is not. */
zf_status zf_codec_transpose_new(unsigned ndim, const unsigned *order, zf_codec **out,
                                 zf_err *err);

/* Which metadata dialect names the codecs of a chain (zf_chain_from_v3):
 * - ZF_CODECS_V3: Zarr v3 core "Codecs": objects {"name": N, "configuration": {...}} with the
 *   names of the Zarr v3 specification's codecs (bytes, transpose, gzip, zstd, blosc, crc32c,
 *   sharding_indexed) and zarr-python 3's "numcodecs.<id>" names for the numcodecs codecs zarrfs
 *   serves (configuration as numcodecs' own, without "id");
 * - ZF_CODECS_DRAFT_2022: the May 2022 draft's "codecs": objects {"codec": URI,
 *   "configuration": {...}} with URIs https://purl.org/zarr/spec/codec/<name>/1.0 (gzip, blosc,
 *   endian, transpose). */
typedef enum zf_codec_dialect {
    ZF_CODECS_V3,
    ZF_CODECS_DRAFT_2022,
} zf_codec_dialect;

/* Build the chain of a v3 "codecs" list (a JSON array) for chunks whose decoded representation
 * is `decoded` (shape = chunk shape in elements, dtype = the flat encoding's data type, which is
 * little-endian for v3 and the 2022 draft; nbytes = the chunk's bytes). fill_value holds
 * decoded->dtype.itemsize bytes in the flat encoding (copied; sharding fills empty inner chunks
 * with it). The list must be zero or more array -> array codecs, exactly one array -> bytes
 * codec, then zero or more bytes -> bytes codecs (v3 core "Codecs"); the chain is resolved
 * against `decoded` before it is returned. On failure *out is left empty.
 * Errors: ZF_ERR_UNSUPPORTED for a codec zarrfs does not know (message names it, e.g.
 * `codec "zarrs.gdeflate" is not supported`), or of a data type or chunk dimensionality a codec
 * does not serve (zfp: float16, more than 4 dimensions); ZF_ERR_INVALID for a malformed list or configuration, codecs
 * in the wrong order, or a configuration that does not fit the chunk (message names the codec
 * and field).
 * Details (src/codec/v3.c): a codec zarrfs does not know but marked "must_understand": false is
 * left out of the chain (v3 core "must_understand"); v3.1 short-hand names ("crc32c") are
 * accepted. ZF_CODECS_DRAFT_2022: codecs may be NULL (member absent: an empty list), and a list
 * without an endian codec gets the draft's default binary representation, little endian (an
 * implicit little-endian bytes codec before the first bytes -> bytes codec or at the end). */
zf_status zf_chain_from_v3(yajl_val codecs, zf_codec_dialect dialect,
                           const zf_chunk_repr *decoded, const uint8_t *fill_value,
                           zf_codec_chain *out, zf_err *err);

/* One codec of the October 2020 draft's "compressor" ({"codec": URI, "configuration": {...}},
 * URIs https://purl.org/zarr/spec/codec/<id>/1.0 as zarr-python 2.13 and GDAL 3.4-3.7 write
 * them; configuration as numcodecs'). A bytes -> bytes codec. Errors as zf_codec_from_v2
 * (ZF_ERR_UNSUPPORTED names the URI); JSON null (no compressor) is the caller's to handle: it is
 * ZF_ERR_INVALID here. */
zf_status zf_codec_from_draft2020(yajl_val compressor, zf_codec **out, zf_err *err);

/* ----- sharding_indexed (v3 codecs "Sharding codec") ----- */

/* What the array layer needs to read single inner chunks of a shard by byte range. */
typedef struct zf_sharding {
    unsigned ndim;
    uint64_t chunk_shape[ZF_MAX_DIMS];      /* inner chunk, elements per dimension */
    uint64_t chunks_per_shard[ZF_MAX_DIMS]; /* shard shape / inner chunk shape */
    uint64_t nchunks;                       /* inner chunks per shard (index entries) */
    const zf_codec_chain *codecs;           /* chain of one inner chunk */
    const zf_chunk_repr *inner;             /* decoded representation of one inner chunk */
    bool index_at_end;                      /* index_location "end" (else "start") */
    size_t index_nbytes;                    /* encoded index, bytes (fixed by index_codecs) */
} zf_sharding;

/* When c is a sharding_indexed codec, fill *out (pointers borrowed from c) and return true. */
bool zf_codec_sharding(const zf_codec *c, zf_sharding *out);

/* Decode and check the encoded index of one shard: in holds exactly index_nbytes bytes, taken
 * from the start or end of a shard of shard_len bytes. out receives 2 * nchunks uint64 values,
 * (offset, nbytes) per inner chunk in C order of the chunks-per-shard grid, offsets in bytes from
 * the start of the shard; an empty inner chunk is the pair (UINT64_MAX, UINT64_MAX).
 * Errors: ZF_ERR_CORRUPT when the index codecs fail (e.g. crc32c mismatch), or a pair is half
 * empty, ends past the shard's end (or overflows), overlaps the index, or overlaps another
 * chunk's bytes; the message names the inner chunk. */
zf_status zf_sharding_decode_index(const zf_codec *c, const uint8_t *in, size_t in_len,
                                   uint64_t shard_len, uint64_t *out, zf_err *err);

/* zarrs' "optional" codec (array -> bytes, for zarrs' optional data types; src/codec/optional.c):
 * the number of optional levels c decodes (1 for optional(T), 2 for optional(optional(T)), ...),
 * 0 when c is not an optional codec. A chunk it decodes is n * itemsize bytes of data (the
 * innermost type; zero where missing) followed by n bytes of validity depth (0: missing, up to
 * the level count: present at every level), for n elements; its `decoded` representation says
 * so with nbytes = n * (itemsize + 1). */
unsigned zf_codec_optional_levels(const zf_codec *c);

/* A sharding_indexed codec like c for shards of another shape (decoded: the shard's
 * representation, same dimensions and data type; each edge a multiple of c's inner chunk
 * shape): the same inner codecs, index codecs and fill value (borrowed from c, which must
 * outlive it), an index of that shard's chunks_per_shard. For chunk grids whose chunks differ in
 * shape (zarr-extensions "rectilinear"; zarrs requires the same divisibility). Free it with
 * zf_codec_free. Errors: ZF_ERR_INVALID (not a sharding codec, an edge the inner chunk shape
 * does not divide, more inner chunks than a shard may hold, index codecs that do not fit the
 * index of that shape), ZF_ERR_NOMEM. */
zf_status zf_sharding_reshaped(const zf_codec *c, const zf_chunk_repr *decoded, zf_codec **out,
                               zf_err *err);

void zf_codec_free(zf_codec *c);

/* Append a codec (ownership passes to the chain on success; on failure the caller still owns
 * c). Errors: ZF_ERR_NOMEM. */
zf_status zf_chain_append(zf_codec_chain *chain, zf_codec *c);
void zf_chain_clear(zf_codec_chain *chain);

/* Representation after each codec: reprs[0] = *decoded, reprs[i+1] = encoding of reprs[i] by
 * codec i. reprs must hold chain->n + 1 entries. Errors: as zf_codec_ops.resolve. */
zf_status zf_chain_resolve(const zf_codec_chain *chain, const zf_chunk_repr *decoded,
                           zf_chunk_repr *reprs, zf_err *err);

/* Decode one stored chunk (in, in_len bytes) into out, which holds exactly decoded->nbytes
 * bytes (the chunk's elements in C order in decoded->dtype). Errors: ZF_ERR_CORRUPT (message
 * names the codec), ZF_ERR_NOMEM, ZF_ERR_INVALID. Intermediate results of unknown size are
 * bounded by zf_chain_unknown_bound. */
zf_status zf_chain_decode(const zf_codec_chain *chain, const zf_chunk_repr *decoded,
                          const uint8_t *in, size_t in_len, uint8_t *out, zf_err *err);

/* Decode a chain of bytes -> bytes codecs whose decoded size nothing states (the codecs a
 * conditional codec wraps, when it follows a compressor): in[0..in_len) into out[0..cap),
 * *produced bytes, each step's output bounded by cap (zf_codec_ops.decode_bounded's contract:
 * more is ZF_ERR_CORRUPT with *produced SIZE_MAX). An empty chain copies. Errors:
 * ZF_ERR_CORRUPT (message names the codec), ZF_ERR_INVALID (a codec of another kind),
 * ZF_ERR_UNSUPPORTED, ZF_ERR_NOMEM. */
zf_status zf_chain_decode_bounded(const zf_codec_chain *chain, const uint8_t *in, size_t in_len,
                                  uint8_t *out, size_t cap, size_t *produced, zf_err *err);

/* The decompression-bomb limit for an intermediate byte string of unknown size in the decode
 * of `chain` for chunks of `decoded` (see the top of this file): 2 * M + 1 MiB + S bytes
 * (saturating at SIZE_MAX), where M is the largest known representation of the chain (the
 * chunk's decoded bytes, or more after a widening filter such as astype <f4 -> <f8), and S is,
 * for each sharding_indexed codec of the chain, its encoded index bytes plus 256 bytes per
 * inner chunk plus, recursively, S of its inner chain (the framing a compressor adds to each
 * small inner chunk). That holds whatever the codecs write from such data (compressors and
 * checksums add far less than M, one base64 a third of it) and bounds what a hostile chunk can
 * make zarrfs produce: for chunks within zarrfs's 2 GiB limit, 4 GiB + 1 MiB plus the sharding
 * terms. A step that would produce more, or whose data states a larger size, fails with
 * ZF_ERR_CORRUPT naming the codec. The step's buffer is first sized M + M/8 + S + 64 KiB (what
 * any compressor makes of incompressible data fits) and the step is decoded again into one of
 * the full bound only when that is too small; untouched pages of it are never backed.
 * Errors: as zf_chain_resolve (then *bound is 0). */
#define ZF_UNKNOWN_SLACK ((size_t)1 << 20)
#define ZF_UNKNOWN_PER_INNER_CHUNK ((size_t)256)
zf_status zf_chain_unknown_bound(const zf_codec_chain *chain, const zf_chunk_repr *decoded,
                                 size_t *bound, zf_err *err);

/* Encode one chunk: in holds exactly decoded->nbytes bytes (the chunk's elements in C order in
 * decoded->dtype); the codecs run first to last. *out (malloc'd, the caller frees it) receives
 * the bytes to store, *out_len long. flags: ZF_ENCODE_*. Errors: ZF_ERR_UNSUPPORTED (a codec
 * without an encoder; message names it), ZF_ERR_INVALID (a value a codec cannot represent),
 * ZF_ERR_NOMEM. Zarr v3 core "Codecs" (encoding runs the list in order); Zarr v2 "Metadata"
 * (filters in order, then the compressor). */
zf_status zf_chain_encode(const zf_codec_chain *chain, const zf_chunk_repr *decoded,
                          const uint8_t *in, unsigned flags, uint8_t **out, size_t *out_len,
                          zf_err *err);

/* Build one shard (v3 codecs "Sharding codec", "Binary shard format") from its inner chunks,
 * for a sharding_indexed codec c (zf_codec_sharding(c) true). For inner chunk i (C order of the
 * chunks-per-shard grid):
 * - chunks[i] != NULL: its decoded bytes (exactly inner->nbytes), encoded with the inner chain;
 *   left out (an empty index entry) when it equals the fill value everywhere, unless flags has
 *   ZF_ENCODE_WRITE_EMPTY;
 * - chunks[i] == NULL: kept as stored: old_index's pair for i (from zf_sharding_decode_index of
 *   old_shard, old_len bytes) is copied over byte for byte; empty when old_shard is NULL.
 * The inner chunks are laid out in C order after (index "start") or before (index "end") the
 * encoded index. *out (malloc'd) gets the shard, *out_len bytes; *empty is set when every inner
 * chunk is empty (the caller erases the shard rather than storing it; *out is still valid).
 * Errors: as zf_chain_encode; ZF_ERR_CORRUPT when old_index points outside old_shard. */
zf_status zf_sharding_encode_shard(const zf_codec *c, const uint8_t *const *chunks,
                                   const uint8_t *old_shard, uint64_t old_len,
                                   const uint64_t *old_index, unsigned flags, uint8_t **out,
                                   size_t *out_len, bool *empty, zf_err *err);

/* ----- variable-length elements as text (object codecs) -----
 *
 * An array of variable-length elements (Zarr v2 object arrays: `"dtype": "|O"` with an object
 * codec among the filters; Zarr v3 `string` and `bytes`) reads as text, one element per line
 * in C order, each line ending in '\n' (docs/formats.md "Variable-length arrays as text").
 * Escaping is PostgreSQL COPY's text format: backslash, newline, carriage return and tab are
 * written `\\`, `\n`, `\r`, `\t`; a missing element (None, null) is `\N`; an empty string is
 * an empty line; for byte strings (vlen-bytes) also `\xHH` for each byte that is not printable
 * UTF-8 (zf_text_escape_bytes in src/codec/codec_impl.h). So `wc -l` counts the elements and
 * no element spans two lines. */

/* One decoded chunk in text form, in a single allocation (free() it whole): element i (C order
 * of the chunk) is text[starts[i] .. starts[i + 1]), its line including the '\n'. */
typedef struct zf_text_chunk {
    uint64_t nelems;  /* elements (the chunk's, padding of edge chunks included) */
    uint64_t len;     /* bytes of text, < 2^32 */
    uint32_t *starts; /* nelems + 1 offsets into text, bytes */
    char *text;
} zf_text_chunk;

/* Allocate a text chunk of nelems elements and len bytes of text (starts and text uninitialised
 * but for starts[0] = 0). NULL when out of memory or len >= 2^32. */
zf_text_chunk *zf_text_chunk_alloc(uint64_t nelems, uint64_t len);

/* Bytes of s[0..n) escaped as above (without the line's '\n'), and the escaping itself into
 * out (which holds that many bytes); returns the bytes written. */
size_t zf_text_escaped_len(const uint8_t *s, size_t n);
size_t zf_text_escape(const uint8_t *s, size_t n, char *out);

/* True when the chain decodes chunks of variable-length elements: it holds an object codec
 * (zf_codec_ops.decode_text), with only transposes before it and bytes -> bytes codecs after. */
bool zf_chain_is_text(const zf_codec_chain *chain);

/* Decode one stored chunk (in, in_len bytes) of a text chain (zf_chain_is_text) for chunks of
 * `decoded` (shape in elements): the bytes -> bytes codecs backwards (their output bounded by
 * 2 GiB: more is ZF_ERR_CORRUPT), the object codec, then the transposes, into *out (malloc'd,
 * free() it), the chunk's elements in C order. Errors: ZF_ERR_CORRUPT (message names the codec),
 * ZF_ERR_INVALID (not a text chain), ZF_ERR_NOMEM. */
zf_status zf_chain_decode_text(const zf_codec_chain *chain, const zf_chunk_repr *decoded,
                               const uint8_t *in, size_t in_len, zf_text_chunk **out,
                               zf_err *err);

/* The line of an element equal to the fill value (JSON `fill`) in a text chain's object codec's
 * convention (zf_codec_ops.fill_text). Errors: ZF_ERR_INVALID, ZF_ERR_UNSUPPORTED,
 * ZF_ERR_NOMEM. */
zf_status zf_chain_text_fill(const zf_codec_chain *chain, yajl_val fill, char **line,
                             size_t *len, zf_err *err);

/* The name of a text chain's object codec ("vlen-utf8", "vlen-bytes"), NULL when the chain has
 * none. */
const char *zf_chain_text_codec(const zf_codec_chain *chain);

/* Checksums used by codecs (exposed for tests). CRC-32C (Castagnoli) with zlib's crc32()
 * convention: start with crc = 0, pass the previous result to continue; "123456789" gives
 * 0xE3069283. */
uint32_t zf_crc32c(uint32_t crc, const void *buf, size_t len);

#endif
