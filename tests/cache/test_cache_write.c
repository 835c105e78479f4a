/* Unit tests for the chunk cache's write side (cache.h, "writing"): dirty entries are pinned past
 * the capacity, flushes call the owner's writeback for exactly the selected entries (array id,
 * idle, max_age, max_bytes oldest first), failures keep entries dirty, peek and drop, set_data,
 * flushes on a worker pool, write-behind, flushes waiting for writes in progress. The owner here
 * records which chunks it was asked to store. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zarrfs/cache.h"

#include "../check_main.h"

#define CHUNK 100 /* bytes of every loaded entry */

static _Atomic int loads;

static zf_status load_ok(void *ctx, uint64_t chunk, void **data, size_t *size,
                         void **record, zf_err *err)
{
    (void)record;
    (void)ctx, (void)err;
    loads++;
    *size = CHUNK;
    *data = malloc(CHUNK);
    memset(*data, (int)(chunk & 0x7f), CHUNK);
    return ZF_OK;
}

static zf_status load_absent(void *ctx, uint64_t chunk, void **data, size_t *size,
                             void **record, zf_err *err)
{
    (void)record;
    (void)ctx, (void)chunk, (void)data, (void)size, (void)err;
    loads++;
    return ZF_ERR_NOT_FOUND;
}

/* ---------- an owner that records its writebacks ---------- */

#define MAXREC 1024

typedef struct rec_owner {
    zf_cache_owner owner;
    zf_cache *c;
    pthread_mutex_t mu;
    uint64_t stored[MAXREC]; /* chunks stored, in call order */
    size_t nstored;
    uint64_t tried[MAXREC]; /* every writeback call, failed ones too */
    size_t ntried;
    uint8_t stored_byte[MAXREC]; /* first data byte of each stored chunk */
    uint64_t fail[4];            /* chunks whose writeback fails (UINT64_MAX: none) */
    unsigned delay_us;           /* sleep in each writeback (pool tests) */
} rec_owner;

static zf_status rec_writeback(void *ctx, zf_cache_entry *e, zf_err *err)
{
    rec_owner *o = ctx;
    if (o->delay_us)
        usleep(o->delay_us);
    zf_cache_entry_lock_settled(o->c, e); /* as the array's writeback: never mid-write */
    uint64_t chunk = zf_cache_entry_chunk(e);
    pthread_mutex_lock(&o->mu);
    if (o->ntried < MAXREC)
        o->tried[o->ntried++] = chunk;
    pthread_mutex_unlock(&o->mu);
    zf_status st = ZF_OK;
    for (int i = 0; i < 4; i++)
        if (o->fail[i] == chunk)
            st = zf_fail(err, ZF_ERR_IO, "disk full storing %llu", (unsigned long long)chunk);
    if (st == ZF_OK && zf_cache_entry_is_dirty(e) && !zf_cache_entry_behind_stale(e)) {
        pthread_mutex_lock(&o->mu);
        if (o->nstored < MAXREC) {
            o->stored_byte[o->nstored] = ((const uint8_t *)zf_cache_entry_data(e))[0];
            o->stored[o->nstored++] = chunk;
        }
        pthread_mutex_unlock(&o->mu);
        zf_cache_mark_clean(o->c, e);
    }
    zf_cache_entry_unlock(e);
    return st;
}

static void owner_init(rec_owner *o, zf_cache *c)
{
    memset(o, 0, sizeof *o);
    o->owner = (zf_cache_owner){.writeback = rec_writeback, .ctx = o};
    o->c = c;
    pthread_mutex_init(&o->mu, NULL);
    for (int i = 0; i < 4; i++)
        o->fail[i] = UINT64_MAX;
}

static void owner_reset(rec_owner *o)
{
    o->nstored = o->ntried = 0;
}

/* Load (array_id, chunk), overwrite its first byte with `byte`, mark it dirty, release it. */
static void write_entry(zf_cache *c, uint64_t array_id, uint64_t chunk, uint8_t byte,
                        rec_owner *o)
{
    zf_cache_entry *e;
    ck_assert_int_eq(zf_cache_get(c, array_id, chunk, load_ok, NULL, &e, NULL), ZF_OK);
    zf_cache_entry_lock(e);
    uint8_t *d = zf_cache_entry_wdata(e);
    ck_assert_ptr_nonnull(d);
    d[0] = byte;
    zf_cache_mark_dirty(c, e, &o->owner);
    ck_assert(zf_cache_entry_is_dirty(e));
    zf_cache_entry_unlock(e);
    zf_cache_release(c, e);
}

static void expect_stored(const rec_owner *o, const uint64_t *want, size_t n)
{
    ck_assert_uint_eq(o->nstored, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(o->stored[i] == want[i], "writeback %zu: chunk %llu, expected %llu", i,
                      (unsigned long long)o->stored[i], (unsigned long long)want[i]);
}

/* True when (array_id, chunk) is cached and dirty (pinned and unpinned by peek). */
static bool is_dirty(zf_cache *c, uint64_t array_id, uint64_t chunk)
{
    zf_cache_entry *e;
    if (zf_cache_peek(c, array_id, chunk, &e) != ZF_OK)
        return false;
    zf_cache_entry_lock(e);
    bool d = zf_cache_entry_is_dirty(e);
    zf_cache_entry_unlock(e);
    zf_cache_release(c, e);
    return d;
}

static zf_cache_stats stats(zf_cache *c)
{
    zf_cache_stats s;
    zf_cache_get_stats(c, &s);
    return s;
}

/* A writeback pool of `threads` workers for c. */
static zf_pool *use_pool(zf_cache *c, unsigned threads)
{
    zf_pool *pool;
    ck_assert_int_eq(zf_pool_new(threads, &pool), ZF_OK);
    zf_cache_set_writeback_pool(c, pool);
    return pool;
}

/* Take the pool from c and free it (its queued tasks run first). */
static void stop_pool(zf_cache *c, zf_pool *pool)
{
    zf_cache_set_writeback_pool(c, NULL);
    zf_pool_free(pool);
}

/* ---------- tests ---------- */

/* Five dirty entries of 100 bytes in a 250-byte cache all stay; clean ones loaded meanwhile are
 * evicted; once flushed (clean) the dirty ones are evictable again, oldest stored first. */
START_TEST(dirty_entries_outlive_the_capacity)
{
    zf_cache *c;
    ck_assert_int_eq(zf_cache_new(250, &c), ZF_OK);
    rec_owner o;
    owner_init(&o, c);
    for (uint64_t k = 0; k < 5; k++)
        write_entry(c, 1, k, (uint8_t)(0xa0 + k), &o);
    zf_cache_stats s = stats(c);
    ck_assert_uint_eq(s.entries, 5);
    ck_assert_uint_eq(s.bytes, 500);
    ck_assert_uint_eq(s.evictions, 0);
    ck_assert_uint_eq(s.dirty_entries, 5);
    ck_assert_uint_eq(s.dirty_bytes, 500);
    /* Writing an entry again does not count it twice. */
    write_entry(c, 1, 2, 0xb2, &o);
    s = stats(c);
    ck_assert_uint_eq(s.dirty_entries, 5);
    ck_assert_uint_eq(s.dirty_bytes, 500);
    /* Clean entries loaded now are evicted at once: the cache is over its capacity. */
    zf_cache_entry *e;
    for (uint64_t k = 10; k < 12; k++) {
        ck_assert_int_eq(zf_cache_get(c, 1, k, load_ok, NULL, &e, NULL), ZF_OK);
        zf_cache_release(c, e);
    }
    s = stats(c);
    ck_assert_uint_eq(s.evictions, 2);
    ck_assert(!zf_cache_contains(c, 1, 10));
    ck_assert(!zf_cache_contains(c, 1, 11));
    for (uint64_t k = 0; k < 5; k++) {
        ck_assert(zf_cache_contains(c, 1, k));
        ck_assert(is_dirty(c, 1, k));
    }
    ck_assert_uint_eq(o.ntried, 0); /* nothing written back by itself */

    zf_err err = {""};
    ck_assert_int_eq(zf_cache_flush(c, 1, 0, 0, 0, &err), ZF_OK);
    uint64_t want[] = {0, 1, 2, 3, 4};
    expect_stored(&o, want, 5);
    ck_assert_uint_eq(o.stored_byte[2], 0xb2); /* the latest data */
    ck_assert_uint_eq(o.stored_byte[4], 0xa4);
    s = stats(c);
    ck_assert_uint_eq(s.dirty_entries, 0);
    ck_assert_uint_eq(s.dirty_bytes, 0);
    ck_assert_uint_eq(s.writebacks, 5);
    ck_assert_uint_eq(s.writeback_failures, 0);
    /* Clean now: evicted down to the capacity, the first stored first (500 -> 200 bytes). */
    ck_assert_uint_eq(s.evictions, 2 + 3);
    ck_assert_uint_eq(s.bytes, 200);
    ck_assert_uint_eq(s.entries, 2);
    ck_assert(!zf_cache_contains(c, 1, 0));
    ck_assert(!zf_cache_contains(c, 1, 2));
    ck_assert(zf_cache_contains(c, 1, 3));
    ck_assert(zf_cache_contains(c, 1, 4));
    ck_assert(!is_dirty(c, 1, 4));
    /* A second flush has nothing to do. */
    ck_assert_int_eq(zf_cache_flush(c, ZF_CACHE_ALL, 0, 0, 0, &err), ZF_OK);
    ck_assert_uint_eq(o.ntried, 5);
    ck_assert_uint_eq(stats(c).writebacks, 5);
    zf_cache_free(c);
}
END_TEST

/* A flush of one array id stores only that array's entries, through its own owner. */
START_TEST(flush_selects_by_array_id)
{
    zf_cache *c;
    ck_assert_int_eq(zf_cache_new(1 << 20, &c), ZF_OK);
    rec_owner o1, o2;
    owner_init(&o1, c);
    owner_init(&o2, c);
    write_entry(c, 1, 0, 1, &o1);
    write_entry(c, 2, 0, 2, &o2); /* same chunk index, other array */
    write_entry(c, 1, 1, 1, &o1);
    write_entry(c, 2, 5, 2, &o2);
    write_entry(c, 1, 2, 1, &o1);
    zf_err err = {""};
    ck_assert_int_eq(zf_cache_flush(c, 2, 0, 0, 0, &err), ZF_OK);
    uint64_t want2[] = {0, 5};
    expect_stored(&o2, want2, 2);
    ck_assert_uint_eq(o1.ntried, 0);
    zf_cache_stats s = stats(c);
    ck_assert_uint_eq(s.dirty_entries, 3);
    ck_assert_uint_eq(s.dirty_bytes, 300);
    ck_assert(is_dirty(c, 1, 0));
    ck_assert(!is_dirty(c, 2, 0));
    ck_assert_int_eq(zf_cache_flush(c, 3, 0, 0, 0, &err), ZF_OK); /* no such array */
    ck_assert_uint_eq(stats(c).writebacks, 2);
    ck_assert_int_eq(zf_cache_flush(c, ZF_CACHE_ALL, 0, 0, 0, &err), ZF_OK);
    uint64_t want1[] = {0, 1, 2};
    expect_stored(&o1, want1, 3);
    ck_assert_uint_eq(o2.ntried, 2);
    ck_assert_uint_eq(stats(c).dirty_entries, 0);
    zf_cache_free(c);
}
END_TEST

/* max_bytes: oldest first (by first write, not by chunk index), stopping once that many bytes
 * were written back. */
START_TEST(flush_max_bytes_oldest_first)
{
    zf_cache *c;
    ck_assert_int_eq(zf_cache_new(1 << 20, &c), ZF_OK);
    rec_owner o;
    owner_init(&o, c);
    uint64_t order[] = {3, 1, 4, 0, 2};
    for (int i = 0; i < 5; i++)
        write_entry(c, 1, order[i], 9, &o);
    write_entry(c, 1, 3, 10, &o); /* written again: still the oldest */
    zf_err err = {""};
    ck_assert_int_eq(zf_cache_flush(c, ZF_CACHE_ALL, 0, 0, 150, &err), ZF_OK);
    uint64_t w1[] = {3, 1}; /* 100 < 150: one more; 200 >= 150: stop */
    expect_stored(&o, w1, 2);
    owner_reset(&o);
    ck_assert_int_eq(zf_cache_flush(c, ZF_CACHE_ALL, 0, 0, 100, &err), ZF_OK);
    uint64_t w2[] = {4};
    expect_stored(&o, w2, 1);
    owner_reset(&o);
    ck_assert_int_eq(zf_cache_flush(c, 1, 0, 0, 1, &err), ZF_OK);
    uint64_t w3[] = {0};
    expect_stored(&o, w3, 1);
    zf_cache_stats s = stats(c);
    ck_assert_uint_eq(s.dirty_entries, 1);
    ck_assert_uint_eq(s.dirty_bytes, 100);
    ck_assert(is_dirty(c, 1, 2));
    owner_reset(&o);
    ck_assert_int_eq(zf_cache_flush(c, ZF_CACHE_ALL, 0, 0, 0, &err), ZF_OK);
    uint64_t w4[] = {2};
    expect_stored(&o, w4, 1);
    zf_cache_free(c);
}
END_TEST

/* idle: last written at least that long ago; max_age: first written at least that long ago.
 * A (chunk 1) and C (chunk 3) are written, 0.5 s pass, C is written again and B (chunk 2) is
 * new: idle 0.25 selects A only, max_age 0.25 selects C (and A, already clean), neither B. */
START_TEST(flush_idle_and_max_age)
{
    zf_cache *c;
    ck_assert_int_eq(zf_cache_new(1 << 20, &c), ZF_OK);
    rec_owner o;
    owner_init(&o, c);
    write_entry(c, 1, 1, 1, &o);
    write_entry(c, 1, 3, 1, &o);
    usleep(500000);
    write_entry(c, 1, 3, 2, &o);
    write_entry(c, 1, 2, 1, &o);
    zf_err err = {""};
    ck_assert_int_eq(zf_cache_flush(c, ZF_CACHE_ALL, 0.25, 0, 0, &err), ZF_OK);
    uint64_t w1[] = {1};
    expect_stored(&o, w1, 1);
    owner_reset(&o);
    ck_assert_int_eq(zf_cache_flush(c, ZF_CACHE_ALL, 0, 0.25, 0, &err), ZF_OK);
    uint64_t w2[] = {3};
    expect_stored(&o, w2, 1);
    ck_assert_uint_eq(o.stored_byte[0], 2);
    owner_reset(&o);
    ck_assert_int_eq(zf_cache_flush(c, ZF_CACHE_ALL, 30, 30, 0, &err), ZF_OK); /* B is young */
    ck_assert_uint_eq(o.ntried, 0);
    ck_assert(is_dirty(c, 1, 2));
    ck_assert_int_eq(zf_cache_flush(c, 1, 0, 0, 0, &err), ZF_OK);
    uint64_t w3[] = {2};
    expect_stored(&o, w3, 1);
    ck_assert_uint_eq(stats(c).writebacks, 3);
    zf_cache_free(c);
}
END_TEST

/* A failing writeback: the entry stays dirty (and pinned), every selected entry is still tried,
 * the first failure is returned with its message, failures are counted, a later flush retries. */
START_TEST(failed_writeback_stays_dirty)
{
    zf_cache *c;
    ck_assert_int_eq(zf_cache_new(150, &c), ZF_OK); /* room for one clean entry */
    rec_owner o;
    owner_init(&o, c);
    for (uint64_t k = 1; k <= 4; k++)
        write_entry(c, 1, k, (uint8_t)(0x40 + k), &o);
    o.fail[0] = 2;
    o.fail[1] = 3;
    zf_err err = {""};
    ck_assert_int_eq(zf_cache_flush(c, ZF_CACHE_ALL, 0, 0, 0, &err), ZF_ERR_IO);
    ck_assert_str_eq(err.msg, "disk full storing 2");
    ck_assert_uint_eq(o.ntried, 4);
    uint64_t w1[] = {1, 4};
    expect_stored(&o, w1, 2);
    zf_cache_stats s = stats(c);
    ck_assert_uint_eq(s.writebacks, 4);
    ck_assert_uint_eq(s.writeback_failures, 2);
    ck_assert_uint_eq(s.dirty_entries, 2);
    ck_assert_uint_eq(s.dirty_bytes, 200);
    /* The failed ones keep their data and stay although the cache is over its capacity. */
    for (uint64_t k = 2; k <= 3; k++) {
        zf_cache_entry *e;
        ck_assert_int_eq(zf_cache_peek(c, 1, k, &e), ZF_OK);
        zf_cache_entry_lock(e);
        ck_assert(zf_cache_entry_is_dirty(e));
        ck_assert_uint_eq(((const uint8_t *)zf_cache_entry_data(e))[0], 0x40 + k);
        zf_cache_entry_unlock(e);
        zf_cache_release(c, e);
    }
    ck_assert_uint_le(s.bytes - s.dirty_bytes, 150); /* the clean ones were evicted to fit */
    /* Still failing for 3: retried, the message is 3's now. */
    o.fail[0] = UINT64_MAX;
    owner_reset(&o);
    err.msg[0] = '\0';
    ck_assert_int_eq(zf_cache_flush(c, ZF_CACHE_ALL, 0, 0, 0, &err), ZF_ERR_IO);
    ck_assert_str_eq(err.msg, "disk full storing 3");
    uint64_t w2[] = {2};
    expect_stored(&o, w2, 1);
    ck_assert_uint_eq(stats(c).writeback_failures, 3);
    /* Fixed: the last one goes. */
    o.fail[1] = UINT64_MAX;
    owner_reset(&o);
    ck_assert_int_eq(zf_cache_flush(c, ZF_CACHE_ALL, 0, 0, 0, &err), ZF_OK);
    uint64_t w3[] = {3};
    expect_stored(&o, w3, 1);
    s = stats(c);
    ck_assert_uint_eq(s.dirty_entries, 0);
    ck_assert_uint_eq(s.dirty_bytes, 0);
    ck_assert_uint_eq(s.writebacks, 4 + 2 + 1);
    ck_assert_uint_le(s.bytes, 150);
    zf_cache_free(c);
}
END_TEST

/* mark_clean by hand: the entry is an ordinary cached entry again, evictable. */
START_TEST(mark_clean_makes_evictable)
{
    zf_cache *c;
    ck_assert_int_eq(zf_cache_new(100, &c), ZF_OK);
    rec_owner o;
    owner_init(&o, c);
    write_entry(c, 1, 7, 1, &o);
    write_entry(c, 1, 8, 1, &o);
    ck_assert_uint_eq(stats(c).bytes, 200);
    zf_cache_entry *e;
    ck_assert_int_eq(zf_cache_peek(c, 1, 7, &e), ZF_OK);
    zf_cache_entry_lock(e);
    zf_cache_mark_clean(c, e);
    ck_assert(!zf_cache_entry_is_dirty(e));
    zf_cache_entry_unlock(e);
    ck_assert(zf_cache_contains(c, 1, 7)); /* still pinned by the peek */
    zf_cache_stats s = stats(c);
    ck_assert_uint_eq(s.dirty_entries, 1);
    ck_assert_uint_eq(s.dirty_bytes, 100);
    zf_cache_release(c, e); /* last pin: over capacity, evicted */
    ck_assert(!zf_cache_contains(c, 1, 7));
    ck_assert(zf_cache_contains(c, 1, 8));
    s = stats(c);
    ck_assert_uint_eq(s.bytes, 100);
    ck_assert_uint_eq(s.evictions, 1);
    /* mark_clean of a clean entry changes nothing. */
    ck_assert_int_eq(zf_cache_get(c, 1, 9, load_ok, NULL, &e, NULL), ZF_OK);
    zf_cache_entry_lock(e);
    zf_cache_mark_clean(c, e);
    zf_cache_entry_unlock(e);
    s = stats(c);
    ck_assert_uint_eq(s.dirty_entries, 1);
    ck_assert_uint_eq(s.dirty_bytes, 100);
    zf_cache_release(c, e);
    ck_assert(!zf_cache_contains(c, 1, 9));
    zf_err err = {""};
    ck_assert_int_eq(zf_cache_flush(c, ZF_CACHE_ALL, 0, 0, 0, &err), ZF_OK);
    uint64_t w[] = {8};
    expect_stored(&o, w, 1);
    zf_cache_free(c);
}
END_TEST

/* A loader that blocks until released, to catch an entry in its LOADING state. */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_open, gate_entered;

static zf_status load_gated(void *ctx, uint64_t chunk, void **data, size_t *size,
                            void **record, zf_err *err)
{
    pthread_mutex_lock(&gate_mu);
    gate_entered = 1;
    pthread_cond_broadcast(&gate_cv);
    while (!gate_open)
        pthread_cond_wait(&gate_cv, &gate_mu);
    pthread_mutex_unlock(&gate_mu);
    return load_ok(ctx, chunk, data, size, record, err);
}

static void *gated_getter(void *p)
{
    zf_cache *c = p;
    zf_cache_entry *e;
    ck_assert_int_eq(zf_cache_get(c, 1, 42, load_gated, NULL, &e, NULL), ZF_OK);
    zf_cache_release(c, e);
    return NULL;
}

/* peek pins a loaded entry without loading anything; a missing or still loading one is
 * NOT_FOUND. */
START_TEST(peek_pins_without_loading)
{
    zf_cache *c;
    ck_assert_int_eq(zf_cache_new(100, &c), ZF_OK);
    loads = 0;
    zf_cache_entry *e = NULL;
    ck_assert_int_eq(zf_cache_peek(c, 1, 0, &e), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(loads, 0);
    zf_cache_stats s = stats(c);
    ck_assert_uint_eq(s.entries, 0);
    ck_assert_uint_eq(s.misses, 0);
    ck_assert_int_eq(zf_cache_get(c, 1, 0, load_ok, NULL, &e, NULL), ZF_OK);
    zf_cache_release(c, e);
    ck_assert_int_eq(zf_cache_peek(c, 2, 0, &e), ZF_ERR_NOT_FOUND); /* other array */
    ck_assert_int_eq(zf_cache_peek(c, 1, 0, &e), ZF_OK);
    ck_assert_uint_eq(((const uint8_t *)zf_cache_entry_data(e))[50], 0);
    /* Pinned by the peek: another entry does not evict it, it is evicted itself. */
    zf_cache_entry *f;
    ck_assert_int_eq(zf_cache_get(c, 1, 1, load_ok, NULL, &f, NULL), ZF_OK);
    zf_cache_release(c, f);
    ck_assert(zf_cache_contains(c, 1, 0));
    ck_assert(!zf_cache_contains(c, 1, 1));
    zf_cache_release(c, e);
    ck_assert(zf_cache_contains(c, 1, 0));
    ck_assert_int_eq(loads, 2);

    /* An entry being loaded is not "cached and loaded". */
    pthread_t t;
    pthread_create(&t, NULL, gated_getter, c);
    pthread_mutex_lock(&gate_mu);
    while (!gate_entered)
        pthread_cond_wait(&gate_cv, &gate_mu);
    pthread_mutex_unlock(&gate_mu);
    ck_assert_int_eq(zf_cache_peek(c, 1, 42, &e), ZF_ERR_NOT_FOUND);
    pthread_mutex_lock(&gate_mu);
    gate_open = 1;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
    pthread_join(t, NULL);
    ck_assert_int_eq(zf_cache_peek(c, 1, 42, &e), ZF_OK);
    ck_assert_uint_eq(((const uint8_t *)zf_cache_entry_data(e))[0], 42);
    zf_cache_release(c, e);
    ck_assert_int_eq(loads, 3);
    zf_cache_free(c);
}
END_TEST

/* drop forgets clean entries (a pinned one once released; a new get loads afresh meanwhile),
 * keeps dirty ones; the byte count returns to 0. */
START_TEST(drop_clean_keep_dirty)
{
    zf_cache *c;
    ck_assert_int_eq(zf_cache_new(1 << 20, &c), ZF_OK);
    loads = 0;
    rec_owner o;
    owner_init(&o, c);
    zf_cache_entry *e, *pinned, *fresh;
    ck_assert_int_eq(zf_cache_get(c, 1, 0, load_ok, NULL, &e, NULL), ZF_OK);
    zf_cache_release(c, e);
    zf_cache_drop(c, 1, 0);
    ck_assert(!zf_cache_contains(c, 1, 0));
    zf_cache_stats s = stats(c);
    ck_assert_uint_eq(s.entries, 0);
    ck_assert_uint_eq(s.bytes, 0);
    zf_cache_drop(c, 1, 0); /* absent: nothing */
    zf_cache_drop(c, 5, 5);

    ck_assert_int_eq(zf_cache_get(c, 1, 1, load_ok, NULL, &pinned, NULL), ZF_OK);
    zf_cache_drop(c, 1, 1);
    ck_assert(!zf_cache_contains(c, 1, 1));
    ck_assert_uint_eq(((const uint8_t *)zf_cache_entry_data(pinned))[10], 1); /* still valid */
    s = stats(c);
    ck_assert_uint_eq(s.entries, 0);
    ck_assert_uint_eq(s.bytes, 100); /* until released */
    ck_assert_int_eq(loads, 2);
    ck_assert_int_eq(zf_cache_get(c, 1, 1, load_ok, NULL, &fresh, NULL), ZF_OK);
    ck_assert_int_eq(loads, 3); /* loaded again */
    ck_assert_ptr_ne(fresh, pinned);
    zf_cache_release(c, pinned);
    s = stats(c);
    ck_assert_uint_eq(s.entries, 1);
    ck_assert_uint_eq(s.bytes, 100);
    zf_cache_release(c, fresh);
    ck_assert(zf_cache_contains(c, 1, 1));
    zf_cache_drop(c, 1, 1);
    s = stats(c);
    ck_assert_uint_eq(s.entries, 0);
    ck_assert_uint_eq(s.bytes, 0);

    /* Absent entries are dropped too (64 bytes each). */
    ck_assert_int_eq(zf_cache_get(c, 1, 2, load_absent, NULL, &e, NULL), ZF_OK);
    zf_cache_release(c, e);
    ck_assert_uint_eq(stats(c).bytes, 64);
    zf_cache_drop(c, 1, 2);
    ck_assert_uint_eq(stats(c).bytes, 0);

    /* Dirty: kept, data intact. */
    write_entry(c, 1, 3, 0xdd, &o);
    zf_cache_drop(c, 1, 3);
    ck_assert(zf_cache_contains(c, 1, 3));
    ck_assert(is_dirty(c, 1, 3));
    s = stats(c);
    ck_assert_uint_eq(s.entries, 1);
    ck_assert_uint_eq(s.dirty_entries, 1);
    ck_assert_uint_eq(s.bytes, 100);
    zf_err err = {""};
    ck_assert_int_eq(zf_cache_flush(c, ZF_CACHE_ALL, 0, 0, 0, &err), ZF_OK);
    ck_assert_uint_eq(o.stored_byte[0], 0xdd);
    zf_cache_drop(c, 1, 3); /* clean now */
    s = stats(c);
    ck_assert_uint_eq(s.entries, 0);
    ck_assert_uint_eq(s.bytes, 0);
    zf_cache_free(c);
}
END_TEST

/* set_data gives an absent entry data: bytes go from 64 to the data's size; dirty_bytes counts
 * it when marked dirty. */
START_TEST(set_data_on_absent_entry)
{
    zf_cache *c;
    ck_assert_int_eq(zf_cache_new(1 << 20, &c), ZF_OK);
    rec_owner o;
    owner_init(&o, c);
    zf_cache_entry *e;
    ck_assert_int_eq(zf_cache_get(c, 1, 0, load_absent, NULL, &e, NULL), ZF_OK);
    ck_assert_ptr_null(zf_cache_entry_data(e));
    ck_assert_uint_eq(stats(c).bytes, 64);
    zf_cache_entry_lock(e);
    ck_assert_ptr_null(zf_cache_entry_wdata(e));
    uint8_t *d = malloc(300);
    memset(d, 0x5a, 300);
    zf_cache_entry_set_data(c, e, d, 300);
    ck_assert_ptr_eq(zf_cache_entry_data(e), d);
    ck_assert_uint_eq(zf_cache_entry_size(e), 300);
    zf_cache_mark_dirty(c, e, &o.owner);
    zf_cache_entry_unlock(e);
    zf_cache_release(c, e);
    zf_cache_stats s = stats(c);
    ck_assert_uint_eq(s.bytes, 300);
    ck_assert_uint_eq(s.dirty_bytes, 300);
    ck_assert_uint_eq(s.dirty_entries, 1);
    zf_err err = {""};
    ck_assert_int_eq(zf_cache_flush(c, ZF_CACHE_ALL, 0, 0, 0, &err), ZF_OK);
    ck_assert_uint_eq(o.stored_byte[0], 0x5a);
    s = stats(c);
    ck_assert_uint_eq(s.bytes, 300);
    ck_assert_uint_eq(s.dirty_bytes, 0);
    /* The entry now has data: a get returns it without loading. */
    loads = 0;
    ck_assert_int_eq(zf_cache_get(c, 1, 0, load_absent, NULL, &e, NULL), ZF_OK);
    ck_assert_uint_eq(((const uint8_t *)zf_cache_entry_data(e))[299], 0x5a);
    zf_cache_release(c, e);
    ck_assert_int_eq(loads, 0);
    zf_cache_drop(c, 1, 0);
    ck_assert_uint_eq(stats(c).bytes, 0);
    zf_cache_free(c);
}
END_TEST

/* An absent entry dropped while pinned, then given data by its holder (a writer that got it
 * before the drop): when the last pin goes, the cache's byte count must be back to what it was
 * before the entry existed (a bug once made it wrap below zero: set_data skipped orphans while
 * the last unpin subtracted the new cost). */
START_TEST(set_data_on_dropped_entry_keeps_bytes_right)
{
    zf_cache *c;
    ck_assert_int_eq(zf_cache_new(1 << 20, &c), ZF_OK);
    zf_cache_entry *keep, *e;
    ck_assert_int_eq(zf_cache_get(c, 1, 9, load_ok, NULL, &keep, NULL), ZF_OK); /* 100 bytes */
    zf_cache_release(c, keep);
    ck_assert_int_eq(zf_cache_get(c, 1, 0, load_absent, NULL, &e, NULL), ZF_OK);
    ck_assert_uint_eq(stats(c).bytes, 164);
    zf_cache_drop(c, 1, 0);
    zf_cache_entry_lock(e);
    zf_cache_entry_set_data(c, e, calloc(1, 300), 300);
    zf_cache_entry_unlock(e);
    zf_cache_release(c, e);
    zf_cache_stats s = stats(c);
    ck_assert_uint_eq(s.entries, 1);
    ck_assert_msg(s.bytes == 100, "bytes %zu after the dropped entry went, expected 100",
                  s.bytes);
    zf_cache_free(c);
}
END_TEST

/* Flushes on a worker pool: every selected entry written back exactly once, failures as on the
 * flushing thread, the array filter honoured. */
START_TEST(flush_on_pool)
{
    zf_cache *c;
    ck_assert_int_eq(zf_cache_new(1000, &c), ZF_OK);
    zf_pool *pool = use_pool(c, 4);
    rec_owner o1, o2;
    owner_init(&o1, c);
    owner_init(&o2, c);
    o1.delay_us = o2.delay_us = 2000;
    enum { NE = 64 };
    for (uint64_t k = 0; k < NE; k++) {
        write_entry(c, 1, k, (uint8_t)k, &o1);
        write_entry(c, 2, 1000 + k, (uint8_t)k, &o2);
    }
    zf_cache_stats s = stats(c);
    ck_assert_uint_eq(s.dirty_entries, 2 * NE);
    ck_assert_uint_eq(s.dirty_bytes, 2 * NE * CHUNK);
    o1.fail[0] = 5;
    o1.fail[1] = 6;
    zf_err err = {""};
    ck_assert_int_eq(zf_cache_flush(c, 1, 0, 0, 0, &err), ZF_ERR_IO);
    ck_assert_msg(!strcmp(err.msg, "disk full storing 5") || !strcmp(err.msg, "disk full storing 6"),
                  "%s", err.msg);
    ck_assert_uint_eq(o2.ntried, 0);
    ck_assert_uint_eq(o1.ntried, NE);
    ck_assert_uint_eq(o1.nstored, NE - 2);
    int seen[NE] = {0};
    for (size_t i = 0; i < o1.nstored; i++) {
        ck_assert_uint_lt(o1.stored[i], NE);
        seen[o1.stored[i]]++;
        ck_assert_uint_eq(o1.stored_byte[i], o1.stored[i]);
    }
    for (int k = 0; k < NE; k++)
        ck_assert_int_eq(seen[k], k == 5 || k == 6 ? 0 : 1);
    s = stats(c);
    ck_assert_uint_eq(s.writebacks, NE);
    ck_assert_uint_eq(s.writeback_failures, 2);
    ck_assert_uint_eq(s.dirty_entries, NE + 2);
    ck_assert(is_dirty(c, 1, 5));
    ck_assert(is_dirty(c, 1, 6));
    ck_assert(!is_dirty(c, 1, 7));

    o1.fail[0] = o1.fail[1] = UINT64_MAX;
    owner_reset(&o1);
    ck_assert_int_eq(zf_cache_flush(c, ZF_CACHE_ALL, 0, 0, 0, &err), ZF_OK);
    ck_assert_uint_eq(o1.nstored, 2);
    ck_assert_uint_eq(o1.stored[0] + o1.stored[1], 5 + 6);
    ck_assert_uint_eq(o2.nstored, NE);
    int seen2[NE] = {0};
    for (size_t i = 0; i < o2.nstored; i++) {
        ck_assert(o2.stored[i] >= 1000 && o2.stored[i] < 1000 + NE);
        seen2[o2.stored[i] - 1000]++;
    }
    for (int k = 0; k < NE; k++)
        ck_assert_int_eq(seen2[k], 1);
    s = stats(c);
    ck_assert_uint_eq(s.dirty_entries, 0);
    ck_assert_uint_eq(s.dirty_bytes, 0);
    ck_assert_uint_eq(s.writebacks, NE + 2 + NE);
    ck_assert_uint_le(s.bytes, 1000);
    stop_pool(c, pool);
    zf_cache_free(c);
}
END_TEST

/* Many threads writing and flushing at once (flush with max_bytes as the array layer's throttle
 * does): in the end every entry holds its last write and was stored with it. */
typedef struct stress_arg {
    zf_cache *c;
    rec_owner *o;
    unsigned id;
} stress_arg;

static void *stress_writer(void *p)
{
    stress_arg *a = p;
    for (unsigned round = 0; round < 20; round++) {
        for (uint64_t k = 0; k < 8; k++)
            write_entry(a->c, 1, a->id * 8 + k, (uint8_t)(round + 1), a->o);
        zf_err err = {""};
        ck_assert_int_eq(zf_cache_flush(a->c, ZF_CACHE_ALL, 0, 0, 300, &err), ZF_OK);
    }
    return NULL;
}

START_TEST(concurrent_writes_and_flushes)
{
    zf_cache *c;
    ck_assert_int_eq(zf_cache_new(2000, &c), ZF_OK);
    zf_pool *pool = use_pool(c, 3);
    rec_owner o;
    owner_init(&o, c);
    pthread_t t[6];
    stress_arg a[6];
    for (unsigned i = 0; i < 6; i++) {
        a[i] = (stress_arg){c, &o, i};
        pthread_create(&t[i], NULL, stress_writer, &a[i]);
    }
    for (unsigned i = 0; i < 6; i++)
        pthread_join(t[i], NULL);
    zf_err err = {""};
    ck_assert_int_eq(zf_cache_flush(c, ZF_CACHE_ALL, 0, 0, 0, &err), ZF_OK);
    zf_cache_stats s = stats(c);
    ck_assert_uint_eq(s.dirty_entries, 0);
    ck_assert_uint_eq(s.dirty_bytes, 0);
    ck_assert_uint_le(s.bytes, 2000);
    /* The last stored version of each chunk is the last round's. */
    uint8_t last[48] = {0};
    for (size_t i = 0; i < o.nstored && i < MAXREC; i++)
        last[o.stored[i]] = o.stored_byte[i];
    ck_assert_uint_lt(o.nstored, MAXREC);
    for (int k = 0; k < 48; k++)
        ck_assert_msg(last[k] == 20, "chunk %d last stored with %u", k, last[k]);
    stop_pool(c, pool);
    zf_cache_free(c);
}
END_TEST

/* ---------- write-behind ---------- */

/* Pin and lock (array_id, chunk), set its first byte, mark it dirty; left pinned and locked. */
static zf_cache_entry *write_locked(zf_cache *c, uint64_t chunk, uint8_t byte, rec_owner *o)
{
    zf_cache_entry *e;
    ck_assert_int_eq(zf_cache_get(c, 1, chunk, load_ok, NULL, &e, NULL), ZF_OK);
    zf_cache_entry_lock(e);
    ((uint8_t *)zf_cache_entry_wdata(e))[0] = byte;
    zf_cache_mark_dirty(c, e, &o->owner);
    return e;
}

/* Wait (up to 5 s) until the cache counted n writebacks. */
static void wait_writebacks(zf_cache *c, uint64_t n)
{
    for (int i = 0; i < 5000 && stats(c).writebacks < n; i++)
        usleep(1000);
    ck_assert_uint_eq(stats(c).writebacks, n);
}

/* A pool task that holds its worker until `open` is set. */
typedef struct blocker {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool open;
} blocker;

static void blocker_run(void *arg)
{
    blocker *b = arg;
    pthread_mutex_lock(&b->mu);
    while (!b->open)
        pthread_cond_wait(&b->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
}

static void blocker_open(blocker *b)
{
    pthread_mutex_lock(&b->mu);
    b->open = true;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

/* A write-behind stores the entry on the pool without anyone waiting, once; queueing it again
 * while queued, or a clean entry, does nothing; stored and held by nobody, it leaves the cache
 * (its bytes no longer counted). Without a pool nothing is queued. */
START_TEST(write_behind_stores_then_drops)
{
    zf_cache *c;
    ck_assert_int_eq(zf_cache_new(1000, &c), ZF_OK);
    rec_owner o;
    owner_init(&o, c);
    zf_cache_entry *e = write_locked(c, 7, 42, &o);
    ck_assert(!zf_cache_write_behind(c, e)); /* no pool */
    zf_cache_entry_unlock(e);
    zf_cache_release(c, e);
    zf_pool *pool = use_pool(c, 1);
    blocker b = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};
    ck_assert_int_eq(zf_pool_submit(pool, blocker_run, &b), ZF_OK); /* the worker waits */
    e = write_locked(c, 7, 43, &o);
    ck_assert(zf_cache_write_behind(c, e));
    ck_assert(!zf_cache_write_behind(c, e)); /* already queued */
    zf_cache_entry_unlock(e);
    zf_cache_release(c, e); /* the task stores after the writer let go of the entry */
    blocker_open(&b);
    wait_writebacks(c, 1);
    stop_pool(c, pool); /* drained: the task has finished */
    ck_assert_uint_eq(o.nstored, 1);
    ck_assert_uint_eq(o.stored[0], 7);
    ck_assert_uint_eq(o.stored_byte[0], 43);
    zf_cache_stats s = stats(c);
    ck_assert_uint_eq(s.write_behinds, 1);
    ck_assert_uint_eq(s.dirty_entries, 0);
    ck_assert_uint_eq(s.entries, 0); /* dropped behind the writer */
    ck_assert_uint_eq(s.bytes, 0);
    zf_cache_entry *p;
    ck_assert_int_eq(zf_cache_peek(c, 1, 7, &p), ZF_ERR_NOT_FOUND);
    zf_cache_free(c);
}
END_TEST

/* Written again before its write-behind ran, an entry is not stored by it (that would store the
 * later state, which a write may have left half done): it stays dirty, and the next flush stores
 * the last state. */
START_TEST(write_behind_leaves_a_later_state_to_the_flush)
{
    zf_cache *c;
    ck_assert_int_eq(zf_cache_new(1000, &c), ZF_OK);
    zf_pool *pool = use_pool(c, 2);
    rec_owner o;
    owner_init(&o, c);
    o.delay_us = 20000;
    zf_cache_entry *e = write_locked(c, 3, 1, &o);
    ck_assert(zf_cache_write_behind(c, e));
    ((uint8_t *)zf_cache_entry_wdata(e))[0] = 2; /* a second write, before the task runs */
    zf_cache_mark_dirty(c, e, &o.owner);
    zf_cache_entry_unlock(e);
    zf_cache_release(c, e);
    wait_writebacks(c, 1);
    ck_assert_uint_eq(o.nstored, 0);
    ck_assert(is_dirty(c, 1, 3));
    o.delay_us = 0;
    zf_err err = {""};
    ck_assert_int_eq(zf_cache_flush(c, ZF_CACHE_ALL, 0, 0, 0, &err), ZF_OK);
    ck_assert_uint_eq(o.nstored, 1);
    ck_assert_uint_eq(o.stored_byte[0], 2);
    ck_assert(!is_dirty(c, 1, 3));
    stop_pool(c, pool);
    zf_cache_free(c);
}
END_TEST

typedef struct flush_arg {
    zf_cache *c;
    zf_status st;
} flush_arg;

static void *flusher(void *p)
{
    flush_arg *a = p;
    zf_err err = {""};
    a->st = zf_cache_flush(a->c, ZF_CACHE_ALL, 0, 0, 0, &err);
    return NULL;
}

/* A flush meeting an entry in the middle of a write (zf_cache_write_begin .. _end) waits for the
 * write's end and stores what the whole write left, never a part of it. */
START_TEST(flush_waits_for_a_write_in_progress)
{
    zf_cache *c;
    ck_assert_int_eq(zf_cache_new(1000, &c), ZF_OK);
    rec_owner o;
    owner_init(&o, c);
    zf_cache_entry *e = write_locked(c, 9, 1, &o); /* the write's first run */
    zf_cache_write_begin(c, e);
    zf_cache_entry_unlock(e);
    flush_arg a = {c, ZF_ERR_IO};
    pthread_t t;
    pthread_create(&t, NULL, flusher, &a);
    usleep(30000);
    ck_assert_uint_eq(o.nstored, 0); /* waiting */
    zf_cache_entry_lock(e); /* the write's second run */
    ((uint8_t *)zf_cache_entry_wdata(e))[0] = 5;
    zf_cache_mark_dirty(c, e, &o.owner);
    zf_cache_write_end(c, e);
    zf_cache_entry_unlock(e);
    pthread_join(t, NULL);
    ck_assert_int_eq(a.st, ZF_OK);
    ck_assert_uint_eq(o.nstored, 1);
    ck_assert_uint_eq(o.stored_byte[0], 5);
    zf_cache_release(c, e);
    zf_cache_free(c);
}
END_TEST

ZF_CHECK_MAIN("cache-write", dirty_entries_outlive_the_capacity, flush_selects_by_array_id,
              flush_max_bytes_oldest_first, flush_idle_and_max_age, failed_writeback_stays_dirty,
              mark_clean_makes_evictable, peek_pins_without_loading, drop_clean_keep_dirty,
              set_data_on_absent_entry, set_data_on_dropped_entry_keeps_bytes_right,
              flush_on_pool, concurrent_writes_and_flushes, write_behind_stores_then_drops,
              write_behind_leaves_a_later_state_to_the_flush, flush_waits_for_a_write_in_progress)
