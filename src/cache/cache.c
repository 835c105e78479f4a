/* cache.c — LRU chunk cache with single-flight loads (see include/zarrfs/cache.h).
 *
 * One mutex guards a chained hash table and an LRU list of unpinned, loaded entries. An entry
 * being loaded sits in the table in state LOADING; other getters wait on the cache's condition
 * variable, holding a reference, until the loader marks it READY or FAILED. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zarrfs/cache.h"
#include "zarrfs/mem.h"

#define ABSENT_COST 64

enum entry_state { LOADING, READY, FAILED };

struct zf_cache_entry {
    uint64_t array_id, chunk;
    void *data;
    size_t size;
    enum entry_state state;
    zf_status status; /* FAILED: the load's status */
    char *msg;        /* FAILED: the load's message */
    unsigned refs;    /* pins: holders and waiters (and the cache's own while dirty) */
    bool orphan;      /* dropped from the table while pinned: freed by the last unpin */
    zf_cache_entry *hnext;            /* hash chain */
    zf_cache_entry *lru_prev, *lru_next; /* only while refs == 0 and READY */
    /* writing */
    pthread_mutex_t lock;             /* guards data while it can change */
    bool dirty;
    bool behind;                      /* queued for a write-behind (zf_cache_write_behind) */
    uint64_t writes;                  /* zf_cache_mark_dirty calls (under the entry's lock) */
    unsigned writing;                 /* writes in progress (zf_cache_write_begin), under mu */
    const zf_cache_owner *owner;      /* while dirty */
    void *record;                     /* the owner's record of the entry (malloc'd) */
    double dirtied, touched;          /* first and last write while dirty (monotonic s) */
    zf_cache_entry *dprev, *dnext;    /* the dirty list, oldest first */
};

struct zf_cache {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t capacity, bytes, entries;
    zf_cache_entry **buckets;
    size_t nbuckets; /* power of two */
    zf_cache_entry *lru_head, *lru_tail; /* head = most recently used */
    zf_cache_entry *dirty_head, *dirty_tail;
    zf_cache_stats stats;
    _Atomic(zf_pool *) pool; /* writebacks of a flush, and write-behinds, run here when set */
};

static double mono_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static size_t cost(const zf_cache_entry *e) { return e->data ? e->size : ABSENT_COST; }

/* The cache's bytes change (mu held): the memory account (mem.h) holds them too. */
static void add_bytes(zf_cache *c, size_t n)
{
    c->bytes += n;
    zf_mem_charge(n);
}

static void sub_bytes(zf_cache *c, size_t n)
{
    c->bytes -= n;
    zf_mem_uncharge(n);
}

static size_t bucket_of(const zf_cache *c, uint64_t array_id, uint64_t chunk)
{
    uint64_t h = array_id * 0x9e3779b97f4a7c15ull ^ (chunk + 0x632be59bd9b4e019ull);
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return (size_t)h & (c->nbuckets - 1);
}

static void lru_unlink(zf_cache *c, zf_cache_entry *e)
{
    if (e->lru_prev)
        e->lru_prev->lru_next = e->lru_next;
    else
        c->lru_head = e->lru_next;
    if (e->lru_next)
        e->lru_next->lru_prev = e->lru_prev;
    else
        c->lru_tail = e->lru_prev;
    e->lru_prev = e->lru_next = NULL;
}

static void lru_push(zf_cache *c, zf_cache_entry *e)
{
    e->lru_prev = NULL;
    e->lru_next = c->lru_head;
    if (c->lru_head)
        c->lru_head->lru_prev = e;
    c->lru_head = e;
    if (!c->lru_tail)
        c->lru_tail = e;
}

static void table_remove(zf_cache *c, zf_cache_entry *e)
{
    zf_cache_entry **pp = &c->buckets[bucket_of(c, e->array_id, e->chunk)];
    while (*pp && *pp != e)
        pp = &(*pp)->hnext;
    if (*pp)
        *pp = e->hnext;
    c->entries--;
}

static void entry_free(zf_cache_entry *e)
{
    pthread_mutex_destroy(&e->lock);
    zf_free_chunk(e->data, e->size); /* a decoded chunk's buffer serves the next decode */
    free(e->record);
    free(e->msg);
    free(e);
}

static void grow(zf_cache *c)
{
    size_t n = c->nbuckets * 2;
    zf_cache_entry **nb = calloc(n, sizeof *nb);
    if (!nb)
        return; /* keep the old table: only slower */
    zf_cache_entry **old = c->buckets;
    size_t oldn = c->nbuckets;
    c->buckets = nb;
    c->nbuckets = n;
    for (size_t i = 0; i < oldn; i++)
        for (zf_cache_entry *e = old[i], *next; e; e = next) {
            next = e->hnext;
            size_t b = bucket_of(c, e->array_id, e->chunk);
            e->hnext = nb[b];
            nb[b] = e;
        }
    free(old);
}

/* Evict the least recently used unpinned entry (mu held; there is one); its cost. */
static size_t evict_one(zf_cache *c)
{
    zf_cache_entry *e = c->lru_tail;
    size_t n = cost(e);
    lru_unlink(c, e);
    table_remove(c, e);
    c->stats.evictions++;
    entry_free(e);
    sub_bytes(c, n); /* after: no load is admitted into memory not yet given back */
    return n;
}

/* Evict least recently used unpinned entries until the cache fits its capacity. */
static void evict(zf_cache *c)
{
    while (c->bytes > c->capacity && c->lru_tail)
        evict_one(c);
}

/* The memory account's reclaimer: evict unpinned entries, the least recently used first, until
 * `want` bytes went. */
static size_t reclaim(void *ctx, size_t want)
{
    zf_cache *c = ctx;
    size_t freed = 0;
    pthread_mutex_lock(&c->mu);
    while (c->lru_tail && freed < want)
        freed += evict_one(c);
    pthread_mutex_unlock(&c->mu);
    return freed;
}

zf_status zf_cache_new(size_t capacity, zf_cache **out)
{
    zf_cache *c = calloc(1, sizeof *c);
    if (!c)
        return ZF_ERR_NOMEM;
    c->nbuckets = 1024;
    c->buckets = calloc(c->nbuckets, sizeof *c->buckets);
    if (!c->buckets) {
        free(c);
        return ZF_ERR_NOMEM;
    }
    c->capacity = capacity;
    if (!zf_mem_add_reclaimer(reclaim, c)) {
        free(c->buckets);
        free(c);
        return ZF_ERR_NOMEM;
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    *out = c;
    return ZF_OK;
}

size_t zf_cache_capacity(const zf_cache *c) { return c->capacity; }

static zf_cache_entry *find(zf_cache *c, uint64_t array_id, uint64_t chunk)
{
    for (zf_cache_entry *e = c->buckets[bucket_of(c, array_id, chunk)]; e; e = e->hnext)
        if (e->array_id == array_id && e->chunk == chunk)
            return e;
    return NULL;
}

/* Drop one pin (mu held); the last pin of a loaded entry puts it on the LRU list, of a failed
 * one frees it. */
static void unpin_locked(zf_cache *c, zf_cache_entry *e)
{
    if (--e->refs > 0)
        return;
    if (e->state == FAILED) {
        entry_free(e);
        return;
    }
    if (e->orphan) {
        size_t n = cost(e);
        entry_free(e);
        sub_bytes(c, n);
        return;
    }
    lru_push(c, e);
    evict(c);
    zf_mem_poke(); /* evictable now: loads waiting for memory may take it */
}

zf_status zf_cache_get(zf_cache *c, uint64_t array_id, uint64_t chunk, zf_cache_load_fn load,
                       void *ctx, zf_cache_entry **out, zf_err *err)
{
    pthread_mutex_lock(&c->mu);
    zf_cache_entry *e = find(c, array_id, chunk);
    if (e) {
        if (e->refs++ == 0 && e->state == READY)
            lru_unlink(c, e);
        if (e->state == READY)
            c->stats.hits++;
        while (e->state == LOADING)
            pthread_cond_wait(&c->cv, &c->mu);
        if (e->state == FAILED) {
            zf_status st = e->status;
            zf_fail(err, st, "%s", e->msg ? e->msg : zf_status_str(st));
            unpin_locked(c, e);
            pthread_mutex_unlock(&c->mu);
            return st;
        }
        pthread_mutex_unlock(&c->mu);
        *out = e;
        return ZF_OK;
    }

    /* Miss: insert a LOADING entry and load outside the lock. */
    e = calloc(1, sizeof *e);
    if (!e) {
        pthread_mutex_unlock(&c->mu);
        return ZF_ERR_NOMEM;
    }
    e->array_id = array_id;
    e->chunk = chunk;
    pthread_mutex_init(&e->lock, NULL);
    e->state = LOADING;
    e->refs = 1;
    size_t b = bucket_of(c, array_id, chunk);
    e->hnext = c->buckets[b];
    c->buckets[b] = e;
    c->entries++;
    c->stats.misses++;
    if (c->entries > c->nbuckets)
        grow(c);
    pthread_mutex_unlock(&c->mu);

    void *data = NULL, *record = NULL;
    size_t size = 0;
    zf_err lerr = {""};
    zf_status st = load(ctx, chunk, &data, &size, &record, &lerr);

    pthread_mutex_lock(&c->mu);
    if (st == ZF_OK || st == ZF_ERR_NOT_FOUND) {
        e->data = st == ZF_OK ? data : NULL;
        e->size = st == ZF_OK ? size : 0;
        e->record = record;
        e->state = READY;
        add_bytes(c, cost(e));
        st = ZF_OK;
    } else {
        zf_free_chunk(data, size);
        free(record);
        e->state = FAILED;
        e->status = st;
        e->msg = strdup(lerr.msg[0] ? lerr.msg : zf_status_str(st));
        table_remove(c, e);
        c->stats.loads_failed++;
        zf_fail(err, st, "%s", e->msg ? e->msg : zf_status_str(st));
    }
    pthread_cond_broadcast(&c->cv);
    if (st != ZF_OK) {
        unpin_locked(c, e);
        pthread_mutex_unlock(&c->mu);
        return st;
    }
    evict(c); /* make room now that this entry counts */
    pthread_mutex_unlock(&c->mu);
    *out = e;
    return ZF_OK;
}

bool zf_cache_contains(zf_cache *c, uint64_t array_id, uint64_t chunk)
{
    pthread_mutex_lock(&c->mu);
    zf_cache_entry *e = find(c, array_id, chunk);
    bool r = e && e->state != FAILED;
    pthread_mutex_unlock(&c->mu);
    return r;
}

const void *zf_cache_entry_data(const zf_cache_entry *e) { return e->data; }
size_t zf_cache_entry_size(const zf_cache_entry *e) { return e->size; }

void zf_cache_release(zf_cache *c, zf_cache_entry *e)
{
    pthread_mutex_lock(&c->mu);
    unpin_locked(c, e);
    pthread_mutex_unlock(&c->mu);
}

void zf_cache_get_stats(zf_cache *c, zf_cache_stats *out)
{
    pthread_mutex_lock(&c->mu);
    size_t db = c->stats.dirty_bytes, de = c->stats.dirty_entries;
    *out = c->stats;
    out->bytes = c->bytes;
    out->entries = c->entries;
    out->dirty_bytes = db;
    out->dirty_entries = de;
    pthread_mutex_unlock(&c->mu);
}

void zf_cache_free(zf_cache *c)
{
    if (!c)
        return;
    zf_mem_remove_reclaimer(reclaim, c);
    zf_mem_uncharge(c->bytes);
    for (size_t i = 0; i < c->nbuckets; i++)
        for (zf_cache_entry *e = c->buckets[i], *next; e; e = next) {
            next = e->hnext;
            entry_free(e);
        }
    free(c->buckets);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}

/* ----- writing ----- */

void zf_cache_entry_lock(zf_cache_entry *e) { pthread_mutex_lock(&e->lock); }
void zf_cache_entry_unlock(zf_cache_entry *e) { pthread_mutex_unlock(&e->lock); }
uint64_t zf_cache_entry_chunk(const zf_cache_entry *e) { return e->chunk; }
void *zf_cache_entry_wdata(zf_cache_entry *e) { return e->data; }
bool zf_cache_entry_is_dirty(const zf_cache_entry *e) { return e->dirty; }
void *zf_cache_entry_record(zf_cache_entry *e) { return e->record; }

void zf_cache_entry_set_record(zf_cache_entry *e, void *record)
{
    if (e->record != record)
        free(e->record);
    e->record = record;
}

void zf_cache_entry_set_data(zf_cache *c, zf_cache_entry *e, void *data, size_t size)
{
    pthread_mutex_lock(&c->mu);
    size_t old = cost(e); /* an orphan still counts until its last pin goes */
    zf_free_chunk(e->data, e->size);
    e->data = data;
    e->size = size;
    add_bytes(c, cost(e));
    sub_bytes(c, old);
    pthread_mutex_unlock(&c->mu);
}

void zf_cache_mark_dirty(zf_cache *c, zf_cache_entry *e, const zf_cache_owner *owner)
{
    double now = mono_now();
    pthread_mutex_lock(&c->mu);
    e->touched = now;
    e->writes++;
    e->owner = owner;
    if (!e->dirty) {
        e->dirty = true;
        e->dirtied = now;
        e->refs++; /* the cache's own pin: never evicted while dirty */
        e->dnext = NULL;
        e->dprev = c->dirty_tail;
        if (c->dirty_tail)
            c->dirty_tail->dnext = e;
        else
            c->dirty_head = e;
        c->dirty_tail = e;
        c->stats.dirty_bytes += e->size;
        c->stats.dirty_entries++;
    }
    pthread_mutex_unlock(&c->mu);
}

void zf_cache_write_begin(zf_cache *c, zf_cache_entry *e)
{
    pthread_mutex_lock(&c->mu);
    e->writing++;
    pthread_mutex_unlock(&c->mu);
}

void zf_cache_write_end(zf_cache *c, zf_cache_entry *e)
{
    pthread_mutex_lock(&c->mu);
    if (--e->writing == 0)
        pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

void zf_cache_entry_lock_settled(zf_cache *c, zf_cache_entry *e)
{
    for (;;) {
        pthread_mutex_lock(&e->lock);
        pthread_mutex_lock(&c->mu);
        if (e->writing == 0) {
            pthread_mutex_unlock(&c->mu);
            return; /* a write starting now waits for this lock before it changes anything */
        }
        pthread_mutex_unlock(&e->lock);
        while (e->writing > 0)
            pthread_cond_wait(&c->cv, &c->mu);
        pthread_mutex_unlock(&c->mu);
    }
}

void zf_cache_mark_clean(zf_cache *c, zf_cache_entry *e)
{
    zf_cache_entry_set_record(e, NULL);
    pthread_mutex_lock(&c->mu);
    if (e->dirty) {
        e->dirty = false;
        if (e->dprev)
            e->dprev->dnext = e->dnext;
        else
            c->dirty_head = e->dnext;
        if (e->dnext)
            e->dnext->dprev = e->dprev;
        else
            c->dirty_tail = e->dprev;
        e->dprev = e->dnext = NULL;
        c->stats.dirty_bytes -= e->size;
        c->stats.dirty_entries--;
        unpin_locked(c, e); /* the caller still pins it */
    }
    pthread_mutex_unlock(&c->mu);
}

zf_status zf_cache_peek(zf_cache *c, uint64_t array_id, uint64_t chunk, zf_cache_entry **out)
{
    pthread_mutex_lock(&c->mu);
    zf_cache_entry *e = find(c, array_id, chunk);
    if (!e || e->state != READY) {
        pthread_mutex_unlock(&c->mu);
        return ZF_ERR_NOT_FOUND;
    }
    if (e->refs++ == 0)
        lru_unlink(c, e);
    pthread_mutex_unlock(&c->mu);
    *out = e;
    return ZF_OK;
}

void zf_cache_drop(zf_cache *c, uint64_t array_id, uint64_t chunk)
{
    pthread_mutex_lock(&c->mu);
    zf_cache_entry *e = find(c, array_id, chunk);
    if (e && e->state == READY && !e->dirty) {
        table_remove(c, e);
        if (e->refs == 0) {
            lru_unlink(c, e);
            size_t n = cost(e);
            entry_free(e);
            sub_bytes(c, n);
        } else {
            e->orphan = true;
        }
    }
    pthread_mutex_unlock(&c->mu);
}

void zf_cache_set_writeback_pool(zf_cache *c, zf_pool *pool) { atomic_store(&c->pool, pool); }

/* The writebacks of one flush, run on the pool: a latch counts those not finished. */
typedef struct flush_job {
    zf_cache *c;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t left;
    zf_status first;
    zf_err err;
} flush_job;

typedef struct flush_task {
    flush_job *job;
    zf_cache_entry *e;
    const zf_cache_owner *owner;
} flush_task;

/* One writeback, then unpin; the first failure is kept. behind: a write-behind's (counted as
 * such; stored, not written again meanwhile and held by nobody else, the entry then leaves the
 * cache — drop-behind — so that its buffer serves the writer's next chunk rather than fresh
 * memory. Never while pinned elsewhere: a writer holding it would write into an entry the table
 * no longer has while the next writer loads another copy). */
static zf_status writeback_one(zf_cache *c, zf_cache_entry *e, const zf_cache_owner *owner,
                               bool behind, zf_err *err)
{
    zf_err werr = {""};
    zf_status st = owner->writeback(owner->ctx, e, &werr);
    pthread_mutex_lock(&c->mu);
    c->stats.writebacks++;
    c->stats.write_behinds += behind;
    if (st != ZF_OK)
        c->stats.writeback_failures++;
    if (behind && st == ZF_OK && !e->dirty && !e->orphan && e->state == READY && e->refs == 1) {
        table_remove(c, e);
        e->orphan = true;
    }
    unpin_locked(c, e);
    pthread_mutex_unlock(&c->mu);
    if (st != ZF_OK)
        zf_fail(err, st, "%s", werr.msg[0] ? werr.msg : zf_status_str(st));
    return st;
}

static void flush_task_run(void *arg)
{
    flush_task *t = arg;
    flush_job *j = t->job;
    zf_err err = {""};
    zf_status st = writeback_one(j->c, t->e, t->owner, false, &err);
    pthread_mutex_lock(&j->mu);
    if (st != ZF_OK && j->first == ZF_OK) {
        j->first = st;
        j->err = err;
    }
    if (--j->left == 0)
        pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

/* A write-behind: one entry's writeback on the pool, nobody waiting for it. */
typedef struct behind_task {
    zf_cache *c;
    zf_cache_entry *e;
    uint64_t writes; /* e->writes when queued: the state to store */
} behind_task;

static _Thread_local const behind_task *running_behind; /* the write-behind of this thread */

bool zf_cache_entry_behind_stale(const zf_cache_entry *e)
{
    const behind_task *t = running_behind;
    return t && t->e == e && e->writes != t->writes;
}

static void behind_run(void *arg)
{
    behind_task *t = arg;
    zf_cache *c = t->c;
    zf_cache_entry *e = t->e;
    pthread_mutex_lock(&c->mu);
    e->behind = false; /* a write from now on may queue it again */
    const zf_cache_owner *owner = e->owner;
    pthread_mutex_unlock(&c->mu);
    /* A failure leaves the entry dirty: the next flush (fsync, close, the timer) tries again
     * and reports it. */
    zf_err err = {""};
    running_behind = t;
    writeback_one(c, e, owner, true, &err);
    running_behind = NULL;
    free(t);
}

bool zf_cache_write_behind(zf_cache *c, zf_cache_entry *e)
{
    zf_pool *pool = atomic_load(&c->pool);
    behind_task *t = pool ? malloc(sizeof *t) : NULL;
    if (!t)
        return false;
    *t = (behind_task){.c = c, .e = e, .writes = e->writes}; /* the caller holds the lock */
    pthread_mutex_lock(&c->mu);
    bool queue = e->dirty && !e->behind;
    if (queue) {
        e->behind = true;
        e->refs++; /* the task's pin */
    }
    pthread_mutex_unlock(&c->mu);
    if (queue && zf_pool_submit(pool, behind_run, t) == ZF_OK)
        return true;
    if (queue) { /* cannot queue: the next flush stores it */
        pthread_mutex_lock(&c->mu);
        e->behind = false;
        unpin_locked(c, e);
        pthread_mutex_unlock(&c->mu);
    }
    free(t);
    return false;
}

zf_status zf_cache_flush(zf_cache *c, uint64_t array_id, double idle, double max_age,
                         size_t max_bytes, zf_err *err)
{
    double now = mono_now();
    bool all = idle <= 0 && max_age <= 0;
    /* Pin the selected entries in dirty-list order, then write them back without the lock. */
    pthread_mutex_lock(&c->mu);
    size_t n = 0, cap = c->stats.dirty_entries, budget = 0;
    zf_cache_entry **sel = cap ? malloc(cap * sizeof *sel) : NULL;
    const zf_cache_owner **owners = cap ? malloc(cap * sizeof *owners) : NULL;
    if (cap && (!sel || !owners)) {
        pthread_mutex_unlock(&c->mu);
        free(sel);
        free(owners);
        return ZF_ERR_NOMEM;
    }
    for (zf_cache_entry *e = c->dirty_head; e && n < cap; e = e->dnext) {
        if (array_id != ZF_CACHE_ALL && e->array_id != array_id)
            continue;
        if (!all && !(idle > 0 && now - e->touched >= idle) &&
            !(max_age > 0 && now - e->dirtied >= max_age))
            continue;
        if (max_bytes && budget >= max_bytes)
            break;
        budget += e->size;
        e->refs++;
        owners[n] = e->owner;
        sel[n++] = e;
    }
    pthread_mutex_unlock(&c->mu);

    zf_status first = ZF_OK;
    zf_pool *pool = atomic_load(&c->pool);
    flush_task *tasks = pool && n > 1 ? calloc(n, sizeof *tasks) : NULL;
    if (tasks) {
        flush_job j = {.c = c, .left = n, .first = ZF_OK};
        pthread_mutex_init(&j.mu, NULL);
        pthread_cond_init(&j.cv, NULL);
        for (size_t i = 0; i < n; i++) {
            tasks[i] = (flush_task){.job = &j, .e = sel[i], .owner = owners[i]};
            if (zf_pool_submit(pool, flush_task_run, &tasks[i]) != ZF_OK)
                flush_task_run(&tasks[i]); /* cannot queue: here */
        }
        pthread_mutex_lock(&j.mu);
        while (j.left > 0)
            pthread_cond_wait(&j.cv, &j.mu);
        pthread_mutex_unlock(&j.mu);
        pthread_mutex_destroy(&j.mu);
        pthread_cond_destroy(&j.cv);
        first = j.first;
        if (first != ZF_OK)
            zf_fail(err, first, "%s", j.err.msg);
        free(tasks);
    } else {
        for (size_t i = 0; i < n; i++) {
            zf_err werr = {""};
            zf_status st = writeback_one(c, sel[i], owners[i], false, &werr);
            if (st != ZF_OK && first == ZF_OK) {
                first = st;
                zf_fail(err, st, "%s", werr.msg);
            }
        }
    }
    free(sel);
    free(owners);
    return first;
}
