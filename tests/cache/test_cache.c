/* Unit tests for the chunk cache: LRU bound, pins, absent entries, failed loads, single flight. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zarrfs/cache.h"

#include "../check_main.h"

static _Atomic int loads;

static zf_status load_ok(void *ctx, uint64_t chunk, void **data, size_t *size,
                         void **record, zf_err *err)
{
    (void)record;
    (void)ctx, (void)err;
    loads++;
    *size = 100;
    *data = malloc(100);
    memset(*data, (int)chunk, 100);
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

static zf_status load_fail(void *ctx, uint64_t chunk, void **data, size_t *size,
                           void **record, zf_err *err)
{
    (void)record;
    (void)ctx, (void)chunk, (void)data, (void)size;
    loads++;
    return zf_fail(err, ZF_ERR_CORRUPT, "bad chunk");
}

START_TEST(lru_bound_and_pins)
{
    zf_cache *c;
    ck_assert_int_eq(zf_cache_new(350, &c), ZF_OK);
    loads = 0;
    zf_cache_entry *e, *pinned;
    ck_assert_int_eq(zf_cache_get(c, 1, 0, load_ok, NULL, &pinned, NULL), ZF_OK);
    for (uint64_t k = 1; k <= 5; k++) {
        ck_assert_int_eq(zf_cache_get(c, 1, k, load_ok, NULL, &e, NULL), ZF_OK);
        ck_assert_uint_eq(((const uint8_t *)zf_cache_entry_data(e))[99], k);
        zf_cache_release(c, e);
    }
    zf_cache_stats s;
    zf_cache_get_stats(c, &s);
    ck_assert_uint_le(s.bytes, 350);
    ck_assert_uint_eq(s.evictions, 3);
    ck_assert(zf_cache_contains(c, 1, 0)); /* pinned: never evicted */
    ck_assert(!zf_cache_contains(c, 1, 1)); /* least recently used went first */
    ck_assert(zf_cache_contains(c, 1, 5));
    ck_assert(!zf_cache_contains(c, 2, 5)); /* other array id */
    zf_cache_release(c, pinned);
    ck_assert_int_eq(zf_cache_get(c, 1, 5, load_ok, NULL, &e, NULL), ZF_OK);
    zf_cache_release(c, e);
    zf_cache_get_stats(c, &s);
    ck_assert_uint_eq(s.hits, 1);
    ck_assert_int_eq(loads, 6);
    zf_cache_free(c);
}
END_TEST

START_TEST(absent_and_failed)
{
    zf_cache *c;
    ck_assert_int_eq(zf_cache_new(1000, &c), ZF_OK);
    loads = 0;
    zf_cache_entry *e;
    ck_assert_int_eq(zf_cache_get(c, 1, 9, load_absent, NULL, &e, NULL), ZF_OK);
    ck_assert_ptr_null(zf_cache_entry_data(e));
    zf_cache_release(c, e);
    ck_assert_int_eq(zf_cache_get(c, 1, 9, load_absent, NULL, &e, NULL), ZF_OK);
    zf_cache_release(c, e);
    ck_assert_int_eq(loads, 1); /* absence is cached */
    zf_err err = {""};
    ck_assert_int_eq(zf_cache_get(c, 1, 10, load_fail, NULL, &e, &err), ZF_ERR_CORRUPT);
    ck_assert_str_eq(err.msg, "bad chunk");
    ck_assert_int_eq(zf_cache_get(c, 1, 10, load_fail, NULL, &e, &err), ZF_ERR_CORRUPT);
    ck_assert_int_eq(loads, 3); /* failures are not cached */
    ck_assert(!zf_cache_contains(c, 1, 10));
    zf_cache_free(c);
}
END_TEST

static zf_status load_slow(void *ctx, uint64_t chunk, void **data, size_t *size,
                           void **record, zf_err *err)
{
    usleep(50000);
    return (chunk & 1 ? load_fail : load_ok)(ctx, chunk, data, size, record, err);
}

typedef struct worker_arg {
    zf_cache *c;
    int ok, failed;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *w = p;
    for (uint64_t k = 0; k < 4; k++) {
        zf_cache_entry *e;
        zf_status st = zf_cache_get(w->c, 3, k, load_slow, NULL, &e, NULL);
        if (st == ZF_OK) {
            ck_assert_uint_eq(((const uint8_t *)zf_cache_entry_data(e))[0], k);
            zf_cache_release(w->c, e);
            w->ok++;
        } else {
            w->failed++;
        }
    }
    return NULL;
}

START_TEST(single_flight)
{
    zf_cache *c;
    ck_assert_int_eq(zf_cache_new(1 << 20, &c), ZF_OK);
    loads = 0;
    pthread_t t[8];
    worker_arg w[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (worker_arg){c, 0, 0};
        pthread_create(&t[i], NULL, worker, &w[i]);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(w[i].ok, 2);
        ck_assert_int_eq(w[i].failed, 2);
    }
    /* Chunks 0 and 2 load once each; the failing 1 and 3 at most once per waiter wave. */
    ck_assert_int_le(loads, 2 + 2 * 8);
    zf_cache_stats s;
    zf_cache_get_stats(c, &s);
    ck_assert_uint_eq(s.entries, 2);
    /* The two good chunks were each loaded once although 8 threads read them at once. */
    ck_assert_uint_eq(s.misses - s.loads_failed, 2);
    zf_cache_free(c);
}
END_TEST

ZF_CHECK_MAIN("cache", lru_bound_and_pins, absent_and_failed, single_flight)
