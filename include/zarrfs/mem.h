/* mem.h — allocation of chunk-sized buffers, and the daemon's one memory account. */
#ifndef ZARRFS_MEM_H
#define ZARRFS_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* n bytes for a chunk-sized buffer, freed with free(). From 2 MiB up the buffer is 2 MiB-aligned
 * and advised for transparent huge pages (MADV_HUGEPAGE, as NumPy does for its large arrays), so
 * that filling it costs one page fault per 2 MiB instead of one per 4 KiB — on a virtual machine
 * that is most of the cost of decoding into fresh memory. NULL when out of memory. */
void *zf_alloc_bulk(size_t n);

/* A chunk's buffer of at least n bytes: as zf_alloc_bulk, or — from 2 MiB up, n rounded up to
 * whole 2 MiB (its class) — the buffer the thread's load claimed (zf_mem_admit) or another of
 * that class that zf_free_chunk kept, which costs no page fault (its contents are undefined, not
 * zeroed). Free it with zf_free_chunk (or free(), which
 * only forgoes the reuse). */
void *zf_alloc_chunk(size_t n);

/* The memory a buffer of n bytes from zf_alloc_chunk may hold once written: from 2 MiB up its
 * class (whole 2 MiB, backed by huge pages), else n. */
size_t zf_mem_footprint(size_t n);

/* Give back a buffer p of which n bytes were used (any malloc'd buffer; n at most its size): one
 * that zf_alloc_chunk made, of 2 MiB or more, is kept for the next zf_alloc_chunk of its class
 * (at most 32 MiB kept, the oldest freed first, and only while the memory account below has room
 * for it); anything else is freed. NULL is ignored. */
void zf_free_chunk(void *p, size_t n);

/* Free every kept buffer (and forget the registry of zf_alloc_chunk's buffers). */
void zf_mem_trim(void);

typedef struct zf_mem_stats {
    uint64_t fresh;      /* zf_alloc_chunk buffers of 2 MiB or more allocated anew */
    uint64_t reused;     /* ... served from the kept ones */
    uint64_t pooled;     /* buffers kept by zf_free_chunk */
    size_t pooled_bytes; /* bytes kept now */
    /* the account (below); bytes */
    size_t limit;        /* the process's bound, -o memory_limit (0: no limit) */
    size_t reserve;      /* of it, held outside the account (code, metadata, threads) */
    size_t used, peak;   /* charged now, and the most ever charged at once */
    size_t loads;        /* admitted loads in progress now */
    uint64_t waits;      /* admissions that had to wait for memory */
    uint64_t wait_ns;    /* ... and their time waiting, in nanoseconds */
    uint64_t reclaimed;  /* bytes the reclaimers (the caches, the kept buffers) gave back */
    uint64_t heap_trims; /* times malloc's heaps were given back to the kernel (malloc_trim) */
} zf_mem_stats;

zf_mem_stats zf_mem_get_stats(void);

/* ----- The memory account -----
 * One budget for what grows with load: the chunk caches' decoded chunks (charged by the cache
 * while it holds them), the buffers zf_free_chunk keeps, and every chunk load in progress — its
 * raw bytes from the store (an HTTP body included), its decoded buffer, a codec's scratch —
 * charged by the loader as a "ticket" before it fetches anything.
 *
 * Backpressure, not failure: a load that does not fit waits (zf_mem_admit) until loads in
 * progress end or the reclaimers (the caches' least recently used unpinned chunks, the kept
 * buffers) give memory back. Progress: a load is admitted whenever no other load is in progress
 * (so one chunk larger than the whole limit still reads), and a load admitted inside another on
 * the same thread (a shard index while loading an inner chunk) never waits: every admitted load
 * can finish, so waiting cannot deadlock. Charges other than admissions (zf_mem_charge,
 * zf_mem_grow) never wait; they may take the account past its limit, which then holds the next
 * admissions back until it is below again. */

/* Bound the process to `limit` bytes (0: no bound; the default), of which `reserve` are held
 * outside the account (code, libraries, metadata, threads, the FUSE layer's buffers): the account
 * may hold limit - reserve (at least 1 byte). */
void zf_mem_set_limit(size_t limit, size_t reserve);

/* The process's resident memory (VmRSS) in bytes; 0 when /proc does not say. */
size_t zf_mem_resident(void);

/* Tune glibc's malloc for a bounded daemon: blocks from 2 MiB up (chunk buffers) are mapped on
 * their own and unmapped when freed; smaller ones (codec scratch, text buffers) stay in the heaps
 * for reuse, and what the heaps keep free is given back to the kernel when it would not fit in the
 * account's room (checked at admission, zf_mem_admit). At most `arenas` malloc arenas (0: glibc's
 * default of 8 per core), so that memory one thread freed is reused by the others. Call before any
 * thread starts. */
void zf_mem_tune_malloc(unsigned arenas);

/* Charge / uncharge n bytes without waiting (the caches' chunks, the kept buffers). A charge
 * first takes over what the thread's last load handed off (zf_mem_leave). */
void zf_mem_charge(size_t n);
void zf_mem_uncharge(size_t n);

/* One load's charge. Admit it with zf_mem_admit, end it with zf_mem_leave on the same thread. */
typedef struct zf_mem_ticket {
    size_t bytes;                  /* charged for this load */
    bool gated;                    /* counted among the loads in progress (outermost) */
    void *claimed[2];              /* kept buffers set aside for the load (raw and decoded) */
    size_t claimed_n;              /* ... their size class */
    struct zf_mem_ticket *outer;   /* the thread's ticket before this one */
} zf_mem_ticket;

/* Admit a load that expects to need n bytes at most at once (raw + decoded, an estimate): wait
 * while it does not fit and other loads are in progress, first asking the reclaimers for the
 * difference. A ticket admitted while the thread holds another one does not wait. claim: the
 * bytes of the chunk buffer the load will ask zf_alloc_chunk for (0: none): kept buffers of
 * that class — as many as n holds, at most two (the raw and the decoded chunk) — are set aside
 * for it, at once and when the caches give chunks back, so that their memory is not counted
 * twice (kept, and in n) and is not freed only to be allocated again. */
void zf_mem_admit(zf_mem_ticket *t, size_t n, size_t claim);
/* The thread's current load needs n bytes at once after all (its raw size is known now): charge
 * the difference, without waiting. No-op outside a load or when n is no more than charged. */
void zf_mem_grow(size_t n);
/* End the load: its charge goes but for `keep` bytes (at most its charge; 0 for a nested
 * ticket), the chunk it returns, which stay charged for the next zf_mem_charge on this thread to
 * take over — the cache's, when it keeps the chunk — so that no other load is admitted into
 * memory the chunk still holds. A hand-off no charge took is given back at the thread's next
 * outermost zf_mem_admit. Wakes the waiters. */
void zf_mem_leave(zf_mem_ticket *t, size_t keep);

/* Give memory back to the account when asked: free up to `want` bytes of what the account holds
 * (e.g. evict unpinned cache entries, which uncharge themselves); return the bytes freed. Called
 * on an admitting thread holding no lock of the account. */
typedef size_t (*zf_mem_reclaim_fn)(void *ctx, size_t want);
/* Register / remove a reclaimer (remove waits for a call of it in progress). Errors: false when
 * out of memory (the reclaimer is then not called). */
bool zf_mem_add_reclaimer(zf_mem_reclaim_fn fn, void *ctx);
void zf_mem_remove_reclaimer(zf_mem_reclaim_fn fn, void *ctx);
/* Something became reclaimable without an uncharge (a cache entry was unpinned): waiting
 * admissions ask the reclaimers again now. Cheap when none waits. */
void zf_mem_poke(void);

#endif
