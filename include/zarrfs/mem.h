/* mem.h — allocation of chunk-sized buffers. */
#ifndef ZARRFS_MEM_H
#define ZARRFS_MEM_H

#include <stddef.h>
#include <stdint.h>

/* n bytes for a chunk-sized buffer, freed with zf_free_bulk (or free()). From 2 MiB up the buffer
 * is 2 MiB-aligned and advised for transparent huge pages (MADV_HUGEPAGE, as NumPy does for its
 * large arrays), so that filling it costs one page fault per 2 MiB instead of one per 4 KiB — on
 * a virtual machine that is most of the cost of decoding into fresh memory — or it is a buffer
 * of the same size given back by zf_free_bulk, which costs none. Its contents are undefined
 * (not zeroed). NULL when out of memory. */
void *zf_alloc_bulk(size_t n);

/* Give back a buffer of n bytes: a buffer zf_alloc_bulk(n) made, of 2 MiB or more, is kept for
 * the next zf_alloc_bulk(n) (at most 32 MiB kept, the oldest freed first); anything else is
 * freed. p must have at least n bytes (any malloc'd buffer may be given, with its size or
 * less); NULL is ignored. A buffer of zf_alloc_bulk may also simply be freed with free(). */
void zf_free_bulk(void *p, size_t n);

/* Free every kept buffer (and forget the registry of zf_alloc_bulk's buffers). */
void zf_mem_trim(void);

typedef struct zf_mem_stats {
    uint64_t fresh;      /* buffers of 2 MiB or more allocated anew */
    uint64_t reused;     /* ... served from the kept ones */
    uint64_t pooled;     /* buffers kept by zf_free_bulk */
    size_t pooled_bytes; /* bytes kept now */
} zf_mem_stats;

zf_mem_stats zf_mem_get_stats(void);

#endif
