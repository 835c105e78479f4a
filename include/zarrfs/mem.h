/* mem.h — allocation of chunk-sized buffers. */
#ifndef ZARRFS_MEM_H
#define ZARRFS_MEM_H

#include <stddef.h>

/* n bytes for a chunk-sized buffer, freed with free(). From 2 MiB up the buffer is 2 MiB-aligned
 * and advised for transparent huge pages (MADV_HUGEPAGE, as NumPy does for its large arrays), so
 * that filling it costs one page fault per 2 MiB instead of one per 4 KiB — on a virtual machine
 * that is most of the cost of decoding into fresh memory. NULL when out of memory. */
void *zf_alloc_bulk(size_t n);

#endif
