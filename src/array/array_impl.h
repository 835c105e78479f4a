/* array_impl.h — what array.c (reading) and array_write.c (writing) share: the array object
 * and the chunk loader. */
#ifndef ZARRFS_ARRAY_IMPL_H
#define ZARRFS_ARRAY_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "zarrfs/array.h"

/* Sharded arrays (v3 codecs "Sharding codec"): when the chain is a lone sharding_indexed codec,
 * the array reads inner chunks one by one instead of whole shards. Level 0 is the store's shards
 * (the array's chunk grid); when a shard's inner chain is itself a lone sharding_indexed codec,
 * its inner chunks are shards again (level 1), and so on. The cached "chunks" of the flat view are
 * then the innermost chunks; each level's shard indexes are cached too, under their own id. */
#define MAX_SHARD_LEVELS 8

/* One shard shape of a rectilinear grid's shards: its own sharding codec (zf_sharding_reshaped:
 * the index has that shape's chunks_per_shard). */
typedef struct shard_variant {
    uint64_t shape[ZF_MAX_DIMS];
    zf_codec *codec;
    zf_sharding info;
} shard_variant;

typedef struct shard_level {
    struct zf_array *a;
    unsigned level;
    const zf_codec *codec;
    zf_sharding info;
    zf_grid grid;      /* this level's shards over the whole array (level 0 of a rectilinear
                          grid: rectilinear; its inner chunks are still a regular grid, since
                          the inner chunk shape divides every shard edge) */
    uint64_t cache_id; /* cache id of this level's decoded indexes */
    shard_variant *variants; /* rectilinear level 0: one per distinct shard shape */
    size_t nvariants;
} shard_level;

struct zf_array {
    zf_store *store;
    char *prefix;
    const zf_array_meta *meta;
    zf_cache *cache;
    zf_pool *pool;
    uint64_t id;
    zf_grid grid;
    size_t itemsize;
    uint64_t nbytes;       /* flat view */
    size_t chunk_nbytes;   /* one decoded chunk (rectilinear grid: the bounding chunk; each
                              chunk's own is zf_array_chunk_nbytes) */
    zf_chunk_repr decoded; /* one decoded chunk's representation */
    const zf_codec_chain *chain; /* decodes one cached chunk (the innermost, when sharded) */
    unsigned nlevels;            /* sharding levels read by byte range (0: not sharded) */
    shard_level levels[MAX_SHARD_LEVELS];
    bool fill_is_zero;
    /* Views over part of each decoded chunk (zarrs' optional data types: a chunk decodes to its
     * data, then one validity-depth byte per element): the array's own view starts at byte 0 of
     * a chunk; its mask view (zf_array_mask) is a second zf_array over the same cached chunks
     * (same id, same loader), of one-byte elements starting plane_off bytes in. */
    size_t plane_off;      /* where this view's elements start in a decoded chunk */
    const uint8_t *fill;   /* this view's fill value, itemsize bytes */
    struct zf_array *mask; /* the mask view of an optional array (owned by it), else NULL */
    uint64_t band_chunks;  /* chunks per band: product of grid[1..] */
    uint64_t band_elems;   /* elements of the flat view per band: chunks[0] * product(shape[1..])
                              (rectilinear first dimension: the largest band's) */
    uint64_t row_elems;    /* elements per index of the first dimension: product(shape[1..]) */
    uint64_t band_bytes;   /* decoded bytes of one band (saturated) */
    unsigned readahead;            /* bands to keep a sequential reader ahead by (>= 1) */
    unsigned readahead_chunks;     /* ... and chunks, at least (0: none) */
    _Atomic uint64_t last_end;     /* byte just past the previous read, to spot sequential reads */
    _Atomic uint64_t next_band;    /* bands below this are already queued for readahead */
    _Atomic size_t load_peak;      /* the most one load of a chunk held at once (raw + decoded,
                                      bytes): the next loads' estimate for the memory account */
    /* writing (array_write.c) */
    bool writable;                 /* zf_array_enable_write was called: readers lock entries */
    bool write_empty_chunks;       /* store chunks equal to the fill value everywhere */
    bool fill_defined;             /* a fill value to leave out (v2 null: none) */
    pthread_mutex_t shard_mu;      /* one shard rewrite at a time */
    pthread_rwlock_t shard_rw;     /* loading an inner chunk (read) vs replacing its shard and
                                      dropping the shard's cached index (write) */
    zf_cache_owner owner;          /* writeback of this array's dirty chunks */
    _Atomic uint64_t last_write_end; /* byte just past the previous write: sequential writers */
    /* the text view of variable-length elements (text.c); the rest under text_mu */
    bool text;
    _Atomic bool text_known;       /* every band's length is known: the text's size */
    pthread_mutex_t text_mu;
    uint64_t text_row;             /* elements per index of the first dimension */
    uint64_t text_nbands;          /* bands of the text view */
    uint64_t *text_band_start;     /* text offset of bands 0..text_nknown */
    uint64_t text_nknown;          /* bands whose length is known */
    size_t text_cap;               /* entries of text_band_start */
    uint64_t text_cursor_pos, text_cursor_elem; /* where the last read's last run began */
};

/* The sharding codec and layout of level l's shard at coordinates sc (in l->grid): the
 * level's, or for a rectilinear grid's shards the variant of that shard's shape. */
void zf_array_level_shard(const shard_level *l, const uint64_t *sc, const zf_codec **codec,
                          const zf_sharding **info);

/* The text view (text.c). */
void zf_array_text_init(zf_array *a);
void zf_array_text_free(zf_array *a);
/* Queue a load of chunk on the pool (array.c). False when it could not be queued. */
bool zf_array_queue_load(zf_array *a, uint64_t chunk);
/* zf_array_read of a text array. */
zf_status zf_array_text_read(zf_array *a, uint64_t offset, void *buf, size_t len,
                             size_t *nread, zf_err *err);

/* The cache record (zf_cache_entry_record) of a chunk of a writable array: which version of
 * the store its cached copy came from, and which elements were written into it since it was
 * last stored (array_write.c, "what a write changed"). */
typedef struct zf_chunk_record {
    bool stored_known;       /* the cached copy is the store's version `stored`, or, when
                                stored_absent, the store had no such chunk */
    bool stored_absent;
    zf_store_version stored;
    bool whole;              /* every element written */
    bool has_bits;           /* bits[] is there */
    uint64_t nset, ninside;  /* bits set; elements of the chunk inside the array */
    uint64_t bits[];         /* one per element of the chunk, C order */
} zf_chunk_record;

/* Cache loader of one chunk of the flat view (ctx: the zf_array); for a writable array's plain
 * chunks it also records the version read (*record: a zf_chunk_record). */
zf_status zf_array_load_chunk(void *ctx, uint64_t chunk, void **data, size_t *size,
                              void **record, zf_err *err);
/* The decoded representation of the chunk at coordinates cc of a->grid: a->decoded, or for a
 * rectilinear grid the chunk's own shape and bytes. */
void zf_array_chunk_repr(const zf_array *a, const uint64_t *cc, zf_chunk_repr *r);
/* Bytes of chunk `chunk` (linear index in a->grid) decoded: chunk_nbytes, or a rectilinear
 * grid's chunk's own. */
size_t zf_array_chunk_nbytes(const zf_array *a, uint64_t chunk);
/* The chunk stored at key, coordinates cc in a->grid (not sharded: a whole chunk), decoded
 * into a new buffer (*data, *size = its bytes, zf_array_chunk_repr), with the version read in *ver unless ver is NULL. Errors:
 * ZF_ERR_NOT_FOUND (no such chunk), ZF_ERR_IO (the store failed), ZF_ERR_CORRUPT (it does not
 * decode), ZF_ERR_NOMEM. */
zf_status zf_array_read_stored_chunk(zf_array *a, const char *key, const uint64_t *cc,
                                     void **data, size_t *size, zf_store_version *ver,
                                     zf_err *err);
/* Store key of the stored chunk (the level-0 shard when sharded) holding the cached chunk whose
 * coordinates in grid g are cc. */
zf_status zf_array_stored_key(zf_array *a, const zf_grid *g, const uint64_t *cc, char *key,
                              size_t keysize, zf_err *err);
/* n bytes of the fill value's repeating pattern, as at byte first_byte of the flat view. */
void zf_array_fill_pattern(uint8_t *dst, uint64_t first_byte, size_t n, const uint8_t *fill,
                           size_t isz);
/* Count one chunk encoded in `ns` nanoseconds (or failed), for zf_array_get_decode_stats. */
void zf_array_count_encode(uint64_t ns, bool ok);
void zf_array_count_shard_conflict(void);
void zf_array_count_chunk_conflict(void);
uint64_t zf_array_now_ns(void);

/* The bytes [*rb, *rb + return) of the flat view that a run covers within [begin, end). */
size_t zf_run_bytes(const zf_array *a, const zf_run *run, uint64_t begin, uint64_t end,
                    uint64_t *rb);

#endif
