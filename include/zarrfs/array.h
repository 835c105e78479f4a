/* array.h — chunk-grid arithmetic and the flat byte view of an array.
 *
 * The flat view (DESIGN.md, "The file-system view") is every element of the array in C order,
 * each in the flat encoding; its size is product(shape) * itemsize bytes. A byte offset maps to
 * element index offset / itemsize, then to coordinates, then (Zarr v2 "Chunks", v3 "regular chunk
 * grid") to chunk coordinates coords[d] / chunks[d] and an element inside that chunk — or, for
 * a rectilinear chunk grid, the chunk whose edges hold coords[d]. Chunks are always whole (edge
 * chunks are padded), decoded in C order, each in its own shape. */
#ifndef ZARRFS_ARRAY_H
#define ZARRFS_ARRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "zarrfs/cache.h"
#include "zarrfs/codec.h"
#include "zarrfs/meta.h"
#include "zarrfs/pool.h"
#include "zarrfs/store.h"

/* --- chunk-grid arithmetic (no I/O) --- */

/* A chunk grid over an array of `ndim` dims (ndim 0 is one element in one chunk): regular
 * (v3 "regular chunk grid", v2 "chunks") or rectilinear (zarr-extensions "rectilinear": edge
 * lengths varying along some dimensions, zf_chunk_edges in meta.h). Along a dimension d with
 * edges[d] == NULL the chunks are regular, chunks[d] elements each; along one with edges[d]
 * set (a rectilinear dimension of several runs) chunk c spans the elements the runs give it,
 * found by binary search over the runs (once per chunk a run of elements enters, never per
 * element). Chunks are whole: those at the end may reach past the array (padding). */
typedef struct zf_grid {
    unsigned ndim;
    uint64_t shape[ZF_MAX_DIMS];  /* elements */
    uint64_t chunks[ZF_MAX_DIMS]; /* elements per chunk, >= 1 (rectilinear dimensions: the
                                     largest edge length) */
    uint64_t grid[ZF_MAX_DIMS];   /* chunks per dimension: ceil(shape / chunks), or the
                                     rectilinear dimension's chunks reaching into the array */
    const zf_chunk_edges *edges[ZF_MAX_DIMS]; /* borrowed; NULL: regular along d */
    bool rect;                    /* some edges[d] is set */
} zf_grid;

/* Fill grid from shape and chunk shape (chunks[d] >= 1): a regular grid. */
void zf_grid_init(zf_grid *g, unsigned ndim, const uint64_t *shape, const uint64_t *chunks);
/* The grid of an array's metadata: regular, or rectilinear when a->rect is set (the grid
 * borrows a->rect: a must outlive it). */
void zf_grid_init_meta(zf_grid *g, const zf_array_meta *a);
/* Elements in the array (0 when any dimension is 0). */
uint64_t zf_grid_nelems(const zf_grid *g);
/* Chunks in the grid. */
uint64_t zf_grid_nchunks(const zf_grid *g);
/* C-order element index -> coordinates (elem < nelems). */
void zf_grid_unravel(const zf_grid *g, uint64_t elem, uint64_t *coords);
/* Coordinates of an element -> its chunk's coordinates and its C-order index inside the chunk
 * (of that chunk's own shape). */
void zf_grid_locate(const zf_grid *g, const uint64_t *coords, uint64_t *chunk_coords,
                    uint64_t *in_chunk);
/* Chunk coordinates -> C-order linear chunk index, and back. */
uint64_t zf_grid_chunk_index(const zf_grid *g, const uint64_t *chunk_coords);
void zf_grid_chunk_coords(const zf_grid *g, uint64_t index, uint64_t *chunk_coords);
/* The chunk at chunk_coords: its first element's coordinates (origin, may be NULL) and its
 * shape in elements (shape, may be NULL; the whole chunk, padding past the array's end
 * included — what its stored form decodes to). Returns its element count. */
uint64_t zf_grid_chunk_box(const zf_grid *g, const uint64_t *chunk_coords, uint64_t *origin,
                           uint64_t *shape);
/* Along dimension d: the chunk index holding element x, its first element *lo and edge length
 * *edge (x < shape[d]; any x for a regular dimension). */
void zf_grid_chunk_along(const zf_grid *g, unsigned d, uint64_t x, uint64_t *chunk, uint64_t *lo,
                         uint64_t *edge);

/* A maximal run of elements contiguous both in the flat view and inside one chunk. */
typedef struct zf_run {
    uint64_t elem;     /* first element, C-order index in the array */
    uint64_t count;    /* elements */
    uint64_t chunk;    /* linear chunk index */
    uint64_t in_chunk; /* C-order element index of the first element inside the chunk */
} zf_run;

/* Call fn for each run covering elements [elem_begin, elem_end) in order; stops early and returns
 * fn's status when it is not ZF_OK. Trailing dimensions that a chunk spans whole are merged, so a
 * run can cover many rows. */
typedef zf_status (*zf_run_fn)(void *ctx, const zf_run *run);
zf_status zf_grid_runs(const zf_grid *g, uint64_t elem_begin, uint64_t elem_end, zf_run_fn fn,
                       void *ctx);

/* --- the flat view of one array --- */

typedef struct zf_array zf_array;

/* Open the array whose metadata is meta (borrowed: it must outlive the array) stored below
 * prefix ("" or "group/array"). Chunks go through cache under array_id; pool (may be NULL)
 * decodes the chunks of a large read in parallel. Errors: ZF_ERR_UNSUPPORTED (meta says so),
 * ZF_ERR_INVALID (the codec chain does not fit), ZF_ERR_NOMEM. */
zf_status zf_array_open(zf_store *store, const char *prefix, const zf_array_meta *meta,
                        zf_cache *cache, zf_pool *pool, uint64_t array_id, zf_array **out,
                        zf_err *err);
/* Keep a sequential reader `bands` bands of chunks ahead (default 1; at least 1), and at least
 * `chunks` chunks ahead (0: no such bound) — for a remote store, enough requests in flight to
 * cover its latency even where a band is one chunk — as far as a quarter of the cache allows. */
void zf_array_set_readahead(zf_array *a, unsigned bands, unsigned chunks);
/* Size of the flat view in bytes: product(shape) * itemsize. */
uint64_t zf_array_nbytes(const zf_array *a);
/* The bytes a zero-copy read hands out: pieces of pinned cache entries (and of a shared zero
 * buffer for absent chunks whose fill value is zero bytes), in order; release with
 * zf_array_view_release once the bytes were delivered (e.g. after fuse_reply_iov). */
#define ZF_VIEW_MAX_PIECES 1023 /* IOV_MAX less the reply header */
#define ZF_VIEW_MAX_PINS 256
typedef struct zf_array_view {
    size_t npieces, npins, len;             /* len: bytes in all pieces */
    struct iovec pieces[ZF_VIEW_MAX_PIECES]; /* iov_base is read-only memory */
    zf_cache_entry *pins[ZF_VIEW_MAX_PINS];
} zf_array_view;

/* Like zf_array_read, but without copying: v describes the bytes [offset, offset + *nread) as
 * pieces of cached chunks, pinned until zf_array_view_release. ZF_ERR_UNSUPPORTED when the read
 * cannot be described so (an array open for writing, whose chunks may change — and a caller
 * must not use views of an array that may become writable while one is held; a fill value
 * other than zero bytes; more pieces or chunks than v holds): the caller then copies with
 * zf_array_read. Other errors as zf_array_read (nothing stays pinned then). */
zf_status zf_array_read_view(zf_array *a, uint64_t offset, size_t len, zf_array_view *v,
                             size_t *nread, zf_err *err);
void zf_array_view_release(zf_array *a, zf_array_view *v);

/* Read up to len bytes of the flat view at byte offset into buf; *nread is short only at the end
 * of the array (0 at or past it). Absent chunks read as the fill value. Errors: ZF_ERR_IO (store
 * failure), ZF_ERR_CORRUPT (a chunk failed to decode; err names the chunk key), ZF_ERR_NOMEM. */
zf_status zf_array_read(zf_array *a, uint64_t offset, void *buf, size_t len, size_t *nread,
                        zf_err *err);
/* --- the text view: arrays of variable-length elements (zf_array_meta_is_text) ---
 * Their file is text, one line per element in C order over the whole array (codec.h, "variable-
 * length elements as text"; docs/formats.md), produced chunk by chunk as it is read: each cached
 * chunk holds its lines and a line index, and the text offset of each band of chunks is learned
 * as readers reach it. zf_array_read serves it (offset and len in bytes of text;
 * *nread short only at the end of the text); zf_array_read_view declines it; zf_array_nbytes is
 * 0 for it; zf_array_write and zf_array_enable_write refuse it (ZF_ERR_PERMISSION). */

/* True, with the text's size in bytes, once every band's length is known (a reader reached the
 * end); false before, and for arrays that are not text. */
bool zf_array_text_size(zf_array *a, uint64_t *size);
/* True for an array read as text. */
bool zf_array_is_text(const zf_array *a);

/* --- the mask view: arrays of zarrs' optional data types (zf_array_meta.optional_levels) ---
 * Their flat view holds the innermost type's values, zero where an element is missing; the
 * mask view is one byte per element in the same C order, product(shape) bytes: the number of
 * optional levels present (0: missing; for optional(T) 1: valid). Both read the same cached
 * chunks (one decode serves both). The mask view is a zf_array of its own for reading
 * (zf_array_read, zf_array_read_view, zf_array_nbytes), owned by a: valid while a is, never
 * closed or written by the caller. NULL for every other array. */
zf_array *zf_array_mask(zf_array *a);

/* Close an array; its dirty chunks must have been flushed (zf_array_flush). */
void zf_array_close(zf_array *a);

/* ----- writing (the encode direction of DESIGN.md's pipeline) -----
 * Writes go into the chunk cache (dirty chunks, see cache.h) and reach the store when flushed:
 * each dirty chunk is encoded with the codec chain (zf_chain_encode) and stored with
 * zf_store_set, or erased with zf_store_erase when it equals the fill value everywhere (unless
 * write_empty_chunks; never for a v2 array whose fill value is null). A chunk the write covers
 * whole (every element of it inside the array) is not read from the store first; a partly covered
 * one is. Sharded arrays (a lone sharding_indexed codec): the dirty inner chunks of a shard are
 * encoded and the shard rewritten with a new index (v3 codecs "Sharding codec"), the old shard
 * read only when some of its inner chunks were not written. */

/* Make the array writable. Errors: ZF_ERR_UNSUPPORTED (nested sharding; a codec without an
 * encoder is found when flushing instead), ZF_ERR_READONLY (the store cannot write). */
zf_status zf_array_enable_write(zf_array *a, bool write_empty_chunks, zf_err *err);
/* Write len bytes of buf at byte offset of the flat view; offset + len <= zf_array_nbytes.
 * Errors: ZF_ERR_IO (the old chunk could not be read, or written data the store refuses would
 * outgrow the cache), ZF_ERR_NO_SPACE (that, because the store is full), ZF_ERR_CORRUPT (an
 * old chunk cannot be decoded: err names it), ZF_ERR_INVALID (past the end, or not writable),
 * ZF_ERR_NOMEM. */
zf_status zf_array_write(zf_array *a, uint64_t offset, const void *buf, size_t len,
                         zf_err *err);
/* Store every dirty chunk of the array. Errors: the first failure (err names the chunk key);
 * failed chunks stay dirty. */
zf_status zf_array_flush(zf_array *a, zf_err *err);
/* Erase the stored chunks (shards) whose first coordinate is >= first_row (in chunks of the
 * array's chunk grid), up to the grid's end: what a shrink along the first dimension leaves
 * outside the array. Errors: as zf_store_erase. */
zf_status zf_array_erase_chunk_rows(zf_array *a, uint64_t first_row, zf_err *err);

/* Chunk decoding in this process, over all arrays: chunks loaded (decoded, or adopted when
 * stored raw), failures (corrupt chunks and shard indexes), and seconds spent in codec chains. */
typedef struct zf_decode_stats {
    uint64_t chunks, failures;
    double seconds;
    uint64_t encoded, encode_failures; /* chunks encoded for writing (and failures) */
    double encode_seconds;
    uint64_t shard_conflicts; /* shard writes retried: another writer changed the shard between
                                 its read and the conditional write (zf_store_set_if) */
    uint64_t chunk_conflicts; /* chunks written in part whose merge was retried: the chunk
                                 changed in the store between its read and the conditional write */
} zf_decode_stats;
void zf_array_get_decode_stats(zf_decode_stats *out);

/* Drop the readahead loads queued on pool that have not started (a mount going away: they
 * would only delay its exit, by a stalled remote store's timeouts too); returns how many. */
size_t zf_array_cancel_prefetch(zf_pool *pool);

#endif
