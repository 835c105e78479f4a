/* mem.h — allocation of chunk-sized buffers. */
#ifndef ZARRFS_MEM_H
#define ZARRFS_MEM_H

#include <stddef.h>
#include <stdint.h>

/* n bytes for a chunk-sized buffer, freed with free(). From 2 MiB up the buffer is 2 MiB-aligned
 * and advised for transparent huge pages (MADV_HUGEPAGE, as NumPy does for its large arrays), so
 * that filling it costs one page fault per 2 MiB instead of one per 4 KiB — on a virtual machine
 * that is most of the cost of decoding into fresh memory. NULL when out of memory. */
void *zf_alloc_bulk(size_t n);

/* A chunk's buffer of at least n bytes: as zf_alloc_bulk, or — from 2 MiB up, n rounded up to
 * whole 2 MiB (its class) — a buffer of that class that zf_free_chunk kept, which costs no page
 * fault (its contents are undefined, not zeroed). Free it with zf_free_chunk (or free(), which
 * only forgoes the reuse). */
void *zf_alloc_chunk(size_t n);

/* Give back a buffer p of which n bytes were used (any malloc'd buffer; n at most its size): one
 * that zf_alloc_chunk made, of 2 MiB or more, is kept for the next zf_alloc_chunk of its class
 * (at most 32 MiB kept, the oldest freed first); anything else is freed. NULL is ignored. */
void zf_free_chunk(void *p, size_t n);

/* Free every kept buffer (and forget the registry of zf_alloc_chunk's buffers). */
void zf_mem_trim(void);

typedef struct zf_mem_stats {
    uint64_t fresh;      /* zf_alloc_chunk buffers of 2 MiB or more allocated anew */
    uint64_t reused;     /* ... served from the kept ones */
    uint64_t pooled;     /* buffers kept by zf_free_chunk */
    size_t pooled_bytes; /* bytes kept now */
} zf_mem_stats;

zf_mem_stats zf_mem_get_stats(void);

#endif
