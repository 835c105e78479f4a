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

#include "zarrfs/pool.h"
#include "zarrfs/status.h"

typedef struct zf_cache zf_cache;
typedef struct zf_cache_entry zf_cache_entry;

/* Load one chunk: on ZF_OK set *data (malloc'd, owned by the cache afterwards) and *size bytes;
 * ZF_ERR_NOT_FOUND caches an absent chunk; any other status fails the get. With either the
 * loader may set *record (malloc'd; NULL before the call): the owner's record of the entry
 * (zf_cache_entry_record; e.g. the stored version the data came from). */
typedef zf_status (*zf_cache_load_fn)(void *ctx, uint64_t chunk, void **data, size_t *size,
                                      void **record, zf_err *err);

typedef struct zf_cache_stats {
    uint64_t hits, misses, evictions, loads_failed;
    size_t bytes, entries;
    size_t dirty_bytes, dirty_entries;        /* written, not yet stored */
    uint64_t writebacks, writeback_failures;  /* writeback calls and their failures */
    uint64_t write_behinds;                   /* of them, write-behinds (zf_cache_write_behind) */
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

/* ----- writing -----
 * A written entry is "dirty": its data is newer than the store. The cache holds a pin on every
 * dirty entry, so it is never evicted; it stays until its owner's writeback stores it and marks
 * it clean (then it is an ordinary cached entry). Writebacks happen when zf_cache_flush asks:
 * on fsync and close, from a timer, on unmount, and when dirty data takes too much of the cache
 * (the writer flushes the oldest first, as the kernel throttles writers of dirty pages).
 *
 * Entry data may change only under the entry's lock (zf_cache_entry_lock); readers of a cache
 * whose entries can be written take it too while they copy. Lock order: an owner's own locks,
 * then entry locks in ascending chunk order, then the cache's internal lock. */

typedef struct zf_cache_owner {
    /* Store the dirty entry e (pinned by the caller, not locked): lock it, and unless it is
     * clean by now (a writeback of a neighbour stored it too), store it and zf_cache_mark_clean
     * it. Errors: whatever storing failed with (e stays dirty, to be tried again). */
    zf_status (*writeback)(void *ctx, zf_cache_entry *e, zf_err *err);
    void *ctx;
} zf_cache_owner;

void zf_cache_entry_lock(zf_cache_entry *e);
void zf_cache_entry_unlock(zf_cache_entry *e);
/* The chunk index of an entry. */
uint64_t zf_cache_entry_chunk(const zf_cache_entry *e);
/* Writable data of a pinned, locked entry (NULL for an absent chunk). */
void *zf_cache_entry_wdata(zf_cache_entry *e);
/* Give a pinned, locked absent entry data (malloc'd, size bytes; owned by the cache now). */
void zf_cache_entry_set_data(zf_cache *c, zf_cache_entry *e, void *data, size_t size);
/* Mark a pinned, locked entry with data dirty, to be stored by owner (which must stay valid
 * until the entry is clean: flush before the owner goes away). */
void zf_cache_mark_dirty(zf_cache *c, zf_cache_entry *e, const zf_cache_owner *owner);
bool zf_cache_entry_is_dirty(const zf_cache_entry *e); /* entry locked */
/* The owner's record of a pinned, locked entry — where its data came from, what was written
 * into it since it was last stored — (NULL: none; set by the loader or here), and setting it
 * (malloc'd; the cache frees the one it replaces, and frees it when the entry is marked clean
 * or freed). */
void *zf_cache_entry_record(zf_cache_entry *e);
void zf_cache_entry_set_record(zf_cache_entry *e, void *record);
/* A write of several runs into the pinned entry e begins / ends: between the two, writebacks
 * that lock e with zf_cache_entry_lock_settled wait, so that none stores part of the write.
 * Calls nest (several writers); every begin needs its end. */
void zf_cache_write_begin(zf_cache *c, zf_cache_entry *e);
void zf_cache_write_end(zf_cache *c, zf_cache_entry *e);
/* Lock the pinned entry e when no write is in progress in it (zf_cache_write_begin): for an
 * owner's writeback, which then stores a state some whole write left. Waits for the writes in
 * progress (not holding the entry's lock meanwhile); the caller must not have a write of its own
 * in progress in e. */
void zf_cache_entry_lock_settled(zf_cache *c, zf_cache_entry *e);
/* The locked entry's data is stored: drop its dirty mark and its record (stale now). */
void zf_cache_mark_clean(zf_cache *c, zf_cache_entry *e);
/* Pin (array_id, chunk) if it is cached and loaded, without loading: ZF_OK and *out, else
 * ZF_ERR_NOT_FOUND. */
zf_status zf_cache_peek(zf_cache *c, uint64_t array_id, uint64_t chunk, zf_cache_entry **out);
/* Forget a clean entry (e.g. a shard index the owner just rewrote); a pinned one is forgotten
 * when its last pin goes. Dirty entries are kept. */
void zf_cache_drop(zf_cache *c, uint64_t array_id, uint64_t chunk);

/* Run the writebacks of one flush on pool's workers, several at a time (a local store syncs each
 * chunk file: done one by one, the syncs add up). NULL: on the flushing thread. */
void zf_cache_set_writeback_pool(zf_cache *c, zf_pool *pool);

/* Write-behind: queue the writeback of the pinned, locked, dirty entry e on the writeback pool
 * and return at once (the writer does not wait; the entry is pinned until the writeback ran).
 * For an entry a write has just completed (every element written since it was last stored), so
 * that storing it overlaps the writes that follow instead of waiting for the next fsync. It
 * stores the entry as it is now or not at all: written again before the writeback runs, the
 * writeback leaves it to the next flush (zf_cache_entry_behind_stale). Stored, and held by
 * nobody else, the entry then leaves the cache (its buffer goes to the next chunk: a streaming
 * writer touches no fresh memory). A failed write-behind leaves the entry dirty: the next flush
 * tries again and reports the failure. False (nothing queued) when there is no pool, the entry
 * is clean, already queued, or the queue refuses (memory). */
bool zf_cache_write_behind(zf_cache *c, zf_cache_entry *e);
/* For the owner's writeback, the entry locked: true when this thread runs a write-behind of e
 * and e was written since it was queued (store nothing: a later flush stores it). */
bool zf_cache_entry_behind_stale(const zf_cache_entry *e);

#define ZF_CACHE_ALL UINT64_MAX
/* Write back dirty entries of array_id (ZF_CACHE_ALL: every array), oldest first: those last
 * written at least `idle` seconds ago or first dirtied at least `max_age` seconds ago (0, 0:
 * all), stopping once `max_bytes` bytes were written back (0: no limit). Every selected entry is
 * tried; the first failure is returned (err says which), the failed entries stay dirty. */
zf_status zf_cache_flush(zf_cache *c, uint64_t array_id, double idle, double max_age,
                         size_t max_bytes, zf_err *err);
/* Free the cache; every entry must have been released. */
void zf_cache_free(zf_cache *c);

#endif
