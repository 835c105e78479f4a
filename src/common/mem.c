/* mem.c — chunk-sized buffers backed by transparent huge pages where the kernel allows, and a
 * small pool that hands the buffers of evicted chunks (and of read chunk files) to the next
 * allocation of their size class.
 *
 * Why the pool: a chunk of a few MiB in fresh memory costs the kernel a zeroed page for every
 * page the decoder (or a read) then overwrites; in a read through -o direct_io that zeroing was a
 * fifth of the daemon's time (docs/benchmarks-history.md, "Profile of a direct read"). Chunks of one
 * array all have one size, so a buffer given back by zf_free_chunk serves the next
 * zf_alloc_chunk of its class (sizes from 2 MiB up rounded up to whole 2 MiB) without a fault.
 *
 * Which buffers may be pooled: only those zf_alloc_chunk made, known by a registry of their
 * addresses and classes, and only while malloc_usable_size confirms the class (an entry left
 * behind by a buffer released with free(), its address later reused by malloc for a smaller
 * block, is then just forgotten). Anything else given to zf_free_chunk is freed. */
#include <pthread.h>
#include <stdint.h>
#include <malloc.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "zarrfs/mem.h"

#define HUGE_PAGE ((size_t)2 << 20)
#define POOL_BYTES ((size_t)32 << 20) /* pooled buffers at most (outside the cache's bound) */
#define POOL_SLOTS 64
#define REGISTRY_MAX 1024 /* addresses remembered; beyond it one is forgotten (then just freed) */

typedef struct slot {
    void *p;
    size_t n;
} slot;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static slot pool[POOL_SLOTS]; /* oldest first */
static size_t npool, pool_bytes;
static slot *reg; /* live buffers of zf_alloc_chunk (unordered) */
static size_t nreg, capreg;
static zf_mem_stats stats;

static size_t reg_find(const void *p)
{
    for (size_t i = nreg; i-- > 0;) /* the newest are the likeliest */
        if (reg[i].p == p)
            return i;
    return SIZE_MAX;
}

static void reg_remove(size_t i)
{
    reg[i] = reg[--nreg];
}

static void reg_add(void *p, size_t n)
{
    size_t i = reg_find(p); /* an address freed with free() and allocated again */
    if (i != SIZE_MAX) {
        reg[i].n = n;
        return;
    }
    if (nreg == REGISTRY_MAX) /* forget the oldest: its buffer is then just freed */
        reg_remove(0);
    if (nreg == capreg) {
        size_t cap = capreg ? 2 * capreg : 64;
        slot *r = realloc(reg, cap * sizeof *r);
        if (!r)
            return; /* not remembered: freed, not pooled, when it goes */
        reg = r, capreg = cap;
    }
    reg[nreg++] = (slot){p, n};
}

static void *alloc_huge(size_t n)
{
    void *p;
    if (posix_memalign(&p, HUGE_PAGE, n) != 0)
        return NULL;
    /* Advice only: without THP (or with it "never") the buffer simply uses small pages. */
    madvise(p, n & ~(HUGE_PAGE - 1), MADV_HUGEPAGE);
    return p;
}

/* Take pool slot i out (mu held), the later ones moving up. */
static slot pool_take(size_t i)
{
    slot s = pool[i];
    for (size_t j = i; j + 1 < npool; j++)
        pool[j] = pool[j + 1];
    npool--;
    pool_bytes -= s.n;
    return s;
}

void *zf_alloc_bulk(size_t n)
{
    return n < HUGE_PAGE ? malloc(n ? n : 1) : alloc_huge(n);
}

void *zf_alloc_chunk(size_t n)
{
    if (n < HUGE_PAGE)
        return malloc(n ? n : 1);
    n = (n + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1); /* the class: whole huge pages */
    pthread_mutex_lock(&mu);
    for (size_t i = npool; i-- > 0;) {
        if (pool[i].n != n)
            continue;
        void *p = pool_take(i).p;
        stats.reused++;
        pthread_mutex_unlock(&mu);
        return p;
    }
    pthread_mutex_unlock(&mu);
    void *p = alloc_huge(n);
    if (!p)
        return NULL;
    pthread_mutex_lock(&mu);
    reg_add(p, n);
    stats.fresh++;
    pthread_mutex_unlock(&mu);
    return p;
}

void zf_free_chunk(void *p, size_t n)
{
    if (!p)
        return;
    if (n < HUGE_PAGE) { /* never a class of the pool (n: at most what p holds) */
        free(p);
        return;
    }
    void *drop[POOL_SLOTS];
    size_t ndrop = 0;
    pthread_mutex_lock(&mu);
    size_t i = reg_find(p);
    if (i != SIZE_MAX && malloc_usable_size(p) < reg[i].n) { /* a stale entry: not ours */
        reg_remove(i);
        i = SIZE_MAX;
    }
    if (i == SIZE_MAX || reg[i].n > POOL_BYTES) {
        if (i != SIZE_MAX)
            reg_remove(i);
        pthread_mutex_unlock(&mu);
        free(p);
        return;
    }
    n = reg[i].n;
    while (npool > 0 && (npool == POOL_SLOTS || pool_bytes + n > POOL_BYTES)) {
        slot old = pool_take(0); /* make room: the oldest goes */
        size_t k = reg_find(old.p);
        if (k != SIZE_MAX)
            reg_remove(k);
        drop[ndrop++] = old.p;
    }
    pool[npool++] = (slot){p, n};
    pool_bytes += n;
    stats.pooled++;
    pthread_mutex_unlock(&mu);
    for (size_t k = 0; k < ndrop; k++)
        free(drop[k]);
}

void zf_mem_trim(void)
{
    pthread_mutex_lock(&mu);
    while (npool > 0) {
        slot s = pool_take(npool - 1);
        size_t k = reg_find(s.p);
        if (k != SIZE_MAX)
            reg_remove(k);
        free(s.p);
    }
    free(reg);
    reg = NULL;
    nreg = capreg = 0;
    pthread_mutex_unlock(&mu);
}

zf_mem_stats zf_mem_get_stats(void)
{
    pthread_mutex_lock(&mu);
    zf_mem_stats s = stats;
    s.pooled_bytes = pool_bytes;
    pthread_mutex_unlock(&mu);
    return s;
}
