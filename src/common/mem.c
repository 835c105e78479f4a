/* mem.c — chunk-sized buffers backed by transparent huge pages where the kernel allows. */
#include <stdlib.h>
#include <sys/mman.h>

#include "zarrfs/mem.h"

#define HUGE_PAGE ((size_t)2 << 20)

void *zf_alloc_bulk(size_t n)
{
    if (n < HUGE_PAGE)
        return malloc(n ? n : 1);
    void *p;
    if (posix_memalign(&p, HUGE_PAGE, n) != 0)
        return NULL;
    /* Advice only: without THP (or with it "never") the buffer simply uses small pages. */
    madvise(p, n & ~(HUGE_PAGE - 1), MADV_HUGEPAGE);
    return p;
}
