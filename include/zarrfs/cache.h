/* cache.h — the chunk cache: decoded chunks keyed by (array id, chunk index), LRU bounded in
 * bytes, thread-safe, with one load for concurrent readers of the same chunk ("single flight").
 *
 * A chunk absent from the store is cached too, as an entry without data, so that reading the fill
 * value does not ask the store again. Failed loads are not cached: every waiter of that load gets
 * its status, and the next get tries again.
 *
 * Sizing: a sequential read of an array's flat file sweeps a whole band of chunks (all chunks
 * sharing the leading chunk index) once per element row, so a cache smaller than one band decodes
 * each chunk over and over. zf_cache_capacity lets the array layer warn about that. */
#ifndef ZARRFS_CACHE_H
#define ZARRFS_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarrfs/status.h"

typedef struct zf_cache zf_cache;
typedef struct zf_cache_entry zf_cache_entry;

/* Load one chunk: on ZF_OK set *data (malloc'd, owned by the cache afterwards) and *size bytes;
 * ZF_ERR_NOT_FOUND caches an absent chunk; any other status fails the get. */
typedef zf_status (*zf_cache_load_fn)(void *ctx, uint64_t chunk, void **data, size_t *size,
                                      zf_err *err);

typedef struct zf_cache_stats {
    uint64_t hits, misses, evictions, loads_failed;
    size_t bytes, entries;
} zf_cache_stats;

/* capacity in bytes of decoded data (absent entries count 64 bytes). Errors: ZF_ERR_NOMEM. */
zf_status zf_cache_new(size_t capacity, zf_cache **out);
size_t zf_cache_capacity(const zf_cache *c);

/* The entry for (array_id, chunk), loading it with load(ctx, ...) on a miss. Concurrent gets of
 * one missing chunk run one load; the others wait for it. On ZF_OK *out is pinned (never evicted)
 * until zf_cache_release. Errors: whatever the load returned (not cached). */
zf_status zf_cache_get(zf_cache *c, uint64_t array_id, uint64_t chunk, zf_cache_load_fn load,
                       void *ctx, zf_cache_entry **out, zf_err *err);
/* True when (array_id, chunk) is cached (loaded or absent) right now; no pin, no load. */
bool zf_cache_contains(zf_cache *c, uint64_t array_id, uint64_t chunk);

/* Decoded bytes of a pinned entry, or NULL for a chunk absent from the store. */
const void *zf_cache_entry_data(const zf_cache_entry *e);
size_t zf_cache_entry_size(const zf_cache_entry *e);
void zf_cache_release(zf_cache *c, zf_cache_entry *e);

void zf_cache_get_stats(zf_cache *c, zf_cache_stats *out);
/* Free the cache; every entry must have been released. */
void zf_cache_free(zf_cache *c);

#endif
