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
 * block, is then just forgotten). Anything else given to zf_free_chunk is freed.
 *
 * The memory account (mem.h) is the second half: one budget, charged by the caches for the
 * chunks they hold, by the pool for the buffers it keeps, and by every chunk load in progress for
 * its estimate; loads that do not fit wait (backpressure) after asking the reclaimers. Lock order:
 * a cache's lock, then the pool's (mu), then the account's (amu); reclaimers are called holding
 * none of the account's. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

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

/* the account (guarded by amu) */
static pthread_mutex_t amu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t acv = PTHREAD_COND_INITIALIZER;
static size_t a_limit, a_used, a_peak, a_loads; /* a_limit: the account's (0: none) */
static size_t p_limit, p_reserve;                /* the process's, and what is outside */
static atomic_uint a_waiting; /* admissions waiting now */
static uint64_t a_waits, a_wait_ns, a_reclaimed;
static atomic_uint_fast64_t heap_trims;
static _Thread_local zf_mem_ticket *current;
static _Thread_local size_t handoff; /* charged for the chunk a load just returned (zf_mem_leave) */

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

/* Take pool slot i out (mu held), the later ones moving up. Its charge stays: the caller
 * uncharges it once the buffer is freed (never before: another load could be admitted into
 * memory not yet given back), or passes it on to a load's ticket. */
static slot pool_take(size_t i)
{
    slot s = pool[i];
    for (size_t j = i; j + 1 < npool; j++)
        pool[j] = pool[j + 1];
    npool--;
    pool_bytes -= s.n;
    return s;
}

/* Take pool slot i out to be freed (mu held): forget its registration too. */
static slot pool_evict(size_t i)
{
    slot s = pool_take(i);
    size_t k = reg_find(s.p);
    if (k != SIZE_MAX)
        reg_remove(k);
    return s;
}

/* Free a slot pool_evict took out, and only then uncharge it (mu not held). */
static void slot_free(slot s)
{
    free(s.p);
    zf_mem_uncharge(s.n);
}

void *zf_alloc_bulk(size_t n)
{
    return n < HUGE_PAGE ? malloc(n ? n : 1) : alloc_huge(n);
}

static size_t class_of(size_t n) { return (n + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1); }

size_t zf_mem_footprint(size_t n) { return n < HUGE_PAGE ? n : class_of(n); }

void *zf_alloc_chunk(size_t n)
{
    if (n < HUGE_PAGE)
        return malloc(n ? n : 1);
    n = class_of(n); /* the class: whole huge pages */
    for (zf_mem_ticket *t = current; t; t = t->outer)
        for (int k = 0; k < 2; k++)
            if (t->claimed[k] && t->claimed_n == n) { /* set aside for this load */
                void *p = t->claimed[k];
                t->claimed[k] = NULL;
                return p;
            }
    pthread_mutex_lock(&mu);
    for (size_t i = npool; i-- > 0;) {
        if (pool[i].n != n)
            continue;
        void *p = pool_take(i).p;
        stats.reused++;
        pthread_mutex_unlock(&mu);
        zf_mem_uncharge(n); /* the load's ticket covers it now */
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

static bool account_has_room(size_t n);

void zf_free_chunk(void *p, size_t n)
{
    if (!p)
        return;
    if (n < HUGE_PAGE) { /* never a class of the pool (n: at most what p holds) */
        free(p);
        return;
    }
    slot drop[POOL_SLOTS];
    size_t ndrop = 0;
    pthread_mutex_lock(&mu);
    size_t i = reg_find(p);
    if (i != SIZE_MAX && malloc_usable_size(p) < reg[i].n) { /* a stale entry: not ours */
        reg_remove(i);
        i = SIZE_MAX;
    }
    /* Freed during a load (its raw bytes, decoded): set aside for the load again, which is
     * charged for it still, instead of kept twice over or freed for want of room. */
    zf_mem_ticket *t = current;
    for (int k = 0; i != SIZE_MAX && t && k < 2; k++)
        if (!t->claimed[k] && t->claimed_n == reg[i].n) {
            t->claimed[k] = p;
            pthread_mutex_unlock(&mu);
            return;
        }
    if (i == SIZE_MAX || reg[i].n > POOL_BYTES || !account_has_room(reg[i].n)) {
        if (i != SIZE_MAX)
            reg_remove(i);
        pthread_mutex_unlock(&mu);
        free(p);
        return;
    }
    n = reg[i].n;
    while (npool > 0 && (npool == POOL_SLOTS || pool_bytes + n > POOL_BYTES)) {
        drop[ndrop++] = pool_evict(0); /* make room: the oldest goes */
    }
    pool[npool++] = (slot){p, n};
    pool_bytes += n;
    stats.pooled++;
    zf_mem_charge(n);
    pthread_mutex_unlock(&mu);
    for (size_t k = 0; k < ndrop; k++)
        slot_free(drop[k]);
}

void zf_mem_trim(void)
{
    pthread_mutex_lock(&mu);
    while (npool > 0)
        slot_free(pool_evict(npool - 1));
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
    pthread_mutex_lock(&amu);
    s.limit = p_limit;
    s.reserve = p_reserve;
    s.used = a_used;
    s.peak = a_peak;
    s.loads = a_loads;
    s.waits = a_waits;
    s.wait_ns = a_wait_ns;
    s.reclaimed = a_reclaimed;
    s.heap_trims = atomic_load(&heap_trims);
    pthread_mutex_unlock(&amu);
    return s;
}

/* Free kept buffers, the oldest first, until `want` bytes went (or none is left): the pool's
 * reclaimer. */
static size_t pool_reclaim(size_t want)
{
    size_t freed = 0;
    for (;;) {
        pthread_mutex_lock(&mu);
        if (npool == 0 || freed >= want) {
            pthread_mutex_unlock(&mu);
            return freed;
        }
        slot s = pool_evict(0);
        pthread_mutex_unlock(&mu);
        slot_free(s);
        freed += s.n;
    }
}

/* ----- the account ----- */


typedef struct reclaimer {
    zf_mem_reclaim_fn fn;
    void *ctx;
} reclaimer;
static pthread_rwlock_t rlock = PTHREAD_RWLOCK_INITIALIZER;
static reclaimer *recl;
static size_t nrecl;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

void zf_mem_set_limit(size_t limit, size_t reserve)
{
    pthread_mutex_lock(&amu);
    p_limit = limit;
    p_reserve = limit ? reserve : 0;
    a_limit = !limit ? 0 : limit > reserve ? limit - reserve : 1;
    pthread_cond_broadcast(&acv);
    pthread_mutex_unlock(&amu);
}

size_t zf_mem_resident(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    bool ok = f && fscanf(f, "%ld %ld", &pages, &resident) == 2 && resident > 0;
    if (f)
        fclose(f);
    return ok ? (size_t)resident * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

void zf_mem_tune_malloc(unsigned arenas)
{
    /* below a chunk buffer's class: codec scratch and text buffers (1-2 MiB) stay in the heaps,
     * reused without a page fault; fixed, so glibc does not raise it as buffers are freed */
    mallopt(M_MMAP_THRESHOLD, (int)HUGE_PAGE);
    if (arenas)
        mallopt(M_ARENA_MAX, (int)arenas);
}

/* ----- what malloc's heaps keep ----- */

/* Free bytes the heaps held when they were last given back to the kernel (their pages then
 * left, though glibc still counts them free): what they keep now is what they hold over that. */
static size_t heap_trimmed;
static _Atomic uint64_t heap_checked_ns; /* read unlocked first: no lock taken in vain */
static pthread_mutex_t hmu = PTHREAD_MUTEX_INITIALIZER;

static size_t heap_free_bytes(void)
{
    struct mallinfo2 mi = mallinfo2(); /* every arena's free chunks, the tops included */
    return mi.fordblks + mi.fsmblks;
}

/* After an admission (amu not held): if the heaps keep more freed memory than the account has
 * room left (`room` of `limit` bytes), give it back to the kernel (malloc_trim). Memory a heap
 * keeps is outside the account, so without this a bound well within the account's limit could
 * still be passed by what arenas freed and kept. Looked at every 5 ms at most while the room is
 * under a quarter of the limit, else every 100 ms (mallinfo2 walks every arena's free lists
 * under its lock: 0.3% of a random-read load's time when done every 5 ms). */
static void heap_check(size_t room, size_t limit)
{
    uint64_t now = now_ns();
    uint64_t every = room < limit / 4 ? 5 * 1000000u : 100 * 1000000u;
    if (now - atomic_load(&heap_checked_ns) < every || pthread_mutex_trylock(&hmu) != 0)
        return; /* looked at lately, or another thread is at it */
    if (now - atomic_load(&heap_checked_ns) >= every) {
        atomic_store(&heap_checked_ns, now);
        size_t held = heap_free_bytes();
        if (held < heap_trimmed) /* freed chunks reused since: resident again, charged */
            heap_trimmed = held;
        if (held - heap_trimmed > room) {
            malloc_trim(0);
            heap_trimmed = heap_free_bytes();
            heap_trims++;
        }
    }
    pthread_mutex_unlock(&hmu);
}

/* amu held */
static void add_used(size_t n)
{
    a_used += n;
    if (a_used > a_peak)
        a_peak = a_used;
}

void zf_mem_charge(size_t n)
{
    size_t taken = n < handoff ? n : handoff; /* the load's chunk, already charged */
    handoff -= taken;
    n -= taken;
    if (!n)
        return;
    pthread_mutex_lock(&amu);
    add_used(n);
    pthread_mutex_unlock(&amu);
}

void zf_mem_uncharge(size_t n)
{
    if (!n)
        return;
    pthread_mutex_lock(&amu);
    a_used = n < a_used ? a_used - n : 0;
    if (atomic_load(&a_waiting))
        pthread_cond_broadcast(&acv);
    pthread_mutex_unlock(&amu);
}

/* The pool may keep n bytes more: the account has room for them (mu held). */
static bool account_has_room(size_t n)
{
    pthread_mutex_lock(&amu);
    bool room = !a_limit || a_used + n <= a_limit;
    pthread_mutex_unlock(&amu);
    return room;
}

void zf_mem_poke(void)
{
    if (!atomic_load(&a_waiting))
        return;
    pthread_mutex_lock(&amu);
    pthread_cond_broadcast(&acv);
    pthread_mutex_unlock(&amu);
}

/* Set kept buffers of t's class aside for t, as many as its empty slots and `room` bytes hold
 * (the pool's charge for them is t's now); the bytes set aside. */
static size_t pool_claim(zf_mem_ticket *t, size_t room)
{
    size_t got = 0;
    pthread_mutex_lock(&mu);
    for (int k = 0; k < 2; k++) {
        if (t->claimed[k] || room < got + t->claimed_n)
            continue;
        for (size_t i = npool; i-- > 0;)
            if (pool[i].n == t->claimed_n) {
                t->claimed[k] = pool_take(i).p;
                stats.reused++;
                got += t->claimed_n;
                break;
            }
    }
    pthread_mutex_unlock(&mu);
    return got;
}

/* amu held: n bytes more would pass the account's limit */
static bool over(size_t n)
{
    return a_limit && a_used + n > a_limit;
}

/* amu held: the admission of n bytes must wait (no room, and other loads in progress) */
static bool must_wait(size_t n)
{
    return a_loads > 0 && over(n);
}

/* Set kept buffers aside for t (a claim) within what it still needs (*need, amu held): their
 * charge moves from the pool to t. */
static void claim_more(zf_mem_ticket *t, size_t *need)
{
    if (!t->claimed_n || *need == 0)
        return;
    pthread_mutex_unlock(&amu); /* order: mu, then amu */
    size_t got = pool_claim(t, *need); /* their charge passes from the pool to t */
    pthread_mutex_lock(&amu);
    *need -= got;
}

void zf_mem_admit(zf_mem_ticket *t, size_t n, size_t claim)
{
    if (handoff && !current) { /* an earlier load's chunk nobody took: not charged twice */
        zf_mem_uncharge(handoff);
        handoff = 0;
    }
    t->gated = current == NULL;
    t->outer = current;
    t->claimed[0] = t->claimed[1] = NULL;
    t->claimed_n = claim >= HUGE_PAGE ? class_of(claim) : 0;
    size_t need = n;
    pthread_mutex_lock(&amu);
    claim_more(t, &need);
    bool waited = false;
    uint64_t t0 = 0;
    while (t->gated && over(need)) {
        /* the caches' least recently used chunks first: their buffers, kept, are claimed;
         * then the kept buffers no load claimed (for a load admitted alone, too) */
        size_t want = a_used + need - a_limit;
        pthread_mutex_unlock(&amu);
        size_t got = 0;
        pthread_rwlock_rdlock(&rlock);
        for (size_t i = 0; i < nrecl && got < want; i++)
            got += recl[i].fn(recl[i].ctx, want - got);
        pthread_rwlock_unlock(&rlock);
        pthread_mutex_lock(&amu);
        claim_more(t, &need);
        if (over(need)) {
            want = a_used + need - a_limit; /* read under amu */
            pthread_mutex_unlock(&amu);
            got += pool_reclaim(want);
            pthread_mutex_lock(&amu);
        }
        a_reclaimed += got;
        if (!must_wait(need))
            break;
        if (!waited) {
            waited = true;
            a_waits++;
            t0 = now_ns();
        }
        /* woken by every uncharge and every unpinned cache entry (zf_mem_poke), and every
         * 50 ms in any case, to ask the reclaimers again */
        atomic_fetch_add(&a_waiting, 1);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 50 * 1000000L;
        if (until.tv_nsec >= 1000000000L)
            until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&acv, &amu, &until);
        atomic_fetch_sub(&a_waiting, 1);
    }
    if (waited)
        a_wait_ns += now_ns() - t0;
    if (t->gated)
        a_loads++;
    add_used(need);
    t->bytes = n; /* claimed + need: claims never exceed what was needed */
    /* only now the thread's: the chunks the reclaimers evicted above for this load are not set
     * aside for it uncharged (zf_free_chunk), which let waiting loads hoard them */
    current = t;
    size_t room = a_limit && a_used < a_limit ? a_limit - a_used : 0, limit = a_limit;
    bool check = t->gated && a_limit;
    pthread_mutex_unlock(&amu);
    if (check) /* admitted (so no other load is admitted on a stale count meanwhile): what the
                * heaps keep freed must fit in the room left */
        heap_check(room, limit);
}

void zf_mem_grow(size_t n)
{
    zf_mem_ticket *t = current;
    if (!t || n <= t->bytes)
        return;
    zf_mem_charge(n - t->bytes);
    t->bytes = n;
}

void zf_mem_leave(zf_mem_ticket *t, size_t keep)
{
    current = NULL; /* the buffers below are kept (charged) or freed, not set aside again */
    for (int k = 0; k < 2; k++) /* not used after all: kept again, if room; then uncharged */
        zf_free_chunk(t->claimed[k], t->claimed_n);
    current = t->outer;
    if (keep > t->bytes)
        keep = t->bytes;
    if (!current)
        handoff += keep;
    else
        keep = 0;
    pthread_mutex_lock(&amu);
    size_t drop = t->bytes - keep;
    a_used = drop < a_used ? a_used - drop : 0;
    if (t->gated)
        a_loads--;
    if (atomic_load(&a_waiting))
        pthread_cond_broadcast(&acv);
    pthread_mutex_unlock(&amu);
}

bool zf_mem_add_reclaimer(zf_mem_reclaim_fn fn, void *ctx)
{
    pthread_rwlock_wrlock(&rlock);
    reclaimer *r = realloc(recl, (nrecl + 1) * sizeof *r);
    if (r) {
        recl = r;
        recl[nrecl++] = (reclaimer){fn, ctx};
    }
    pthread_rwlock_unlock(&rlock);
    return r != NULL;
}

void zf_mem_remove_reclaimer(zf_mem_reclaim_fn fn, void *ctx)
{
    pthread_rwlock_wrlock(&rlock);
    for (size_t i = 0; i < nrecl; i++)
        if (recl[i].fn == fn && recl[i].ctx == ctx) {
            recl[i] = recl[--nrecl];
            break;
        }
    if (nrecl == 0) {
        free(recl);
        recl = NULL;
    }
    pthread_rwlock_unlock(&rlock);
}
