/* cache.c — LRU chunk cache with single-flight loads (see include/zarrfs/cache.h).
 *
 * One mutex guards a chained hash table and an LRU list of unpinned, loaded entries. An entry
 * being loaded sits in the table in state LOADING; other getters wait on the cache's condition
 * variable, holding a reference, until the loader marks it READY or FAILED. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "zarrfs/cache.h"

#define ABSENT_COST 64

enum entry_state { LOADING, READY, FAILED };

struct zf_cache_entry {
    uint64_t array_id, chunk;
    void *data;
    size_t size;
    enum entry_state state;
    zf_status status; /* FAILED: the load's status */
    char *msg;        /* FAILED: the load's message */
    unsigned refs;    /* pins: holders and waiters */
    zf_cache_entry *hnext;            /* hash chain */
    zf_cache_entry *lru_prev, *lru_next; /* only while refs == 0 and READY */
};

struct zf_cache {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t capacity, bytes, entries;
    zf_cache_entry **buckets;
    size_t nbuckets; /* power of two */
    zf_cache_entry *lru_head, *lru_tail; /* head = most recently used */
    zf_cache_stats stats;
};

static size_t cost(const zf_cache_entry *e) { return e->data ? e->size : ABSENT_COST; }

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
    free(e->data);
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

/* Evict least recently used unpinned entries until the cache fits its capacity. */
static void evict(zf_cache *c)
{
    while (c->bytes > c->capacity && c->lru_tail) {
        zf_cache_entry *e = c->lru_tail;
        lru_unlink(c, e);
        table_remove(c, e);
        c->bytes -= cost(e);
        c->stats.evictions++;
        entry_free(e);
    }
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
    lru_push(c, e);
    evict(c);
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

    void *data = NULL;
    size_t size = 0;
    zf_err lerr = {""};
    zf_status st = load(ctx, chunk, &data, &size, &lerr);

    pthread_mutex_lock(&c->mu);
    if (st == ZF_OK || st == ZF_ERR_NOT_FOUND) {
        e->data = st == ZF_OK ? data : NULL;
        e->size = st == ZF_OK ? size : 0;
        e->state = READY;
        c->bytes += cost(e);
        st = ZF_OK;
    } else {
        free(data);
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
    *out = c->stats;
    out->bytes = c->bytes;
    out->entries = c->entries;
    pthread_mutex_unlock(&c->mu);
}

void zf_cache_free(zf_cache *c)
{
    if (!c)
        return;
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
