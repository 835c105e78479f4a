/* Unit tests for src/common: typestrs, element casts, half floats, JSON helpers, base64. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarrfs/dtype.h"
#include "zarrfs/json.h"
#include "zarrfs/mem.h"
#include "zarrfs/pool.h"

#include "../check_main.h"

START_TEST(typestr_parse)
{
    zf_dtype dt;
    zf_err err = {""};
    ck_assert_int_eq(zf_dtype_parse("<f8", &dt, &err), ZF_OK);
    ck_assert_int_eq(dt.kind, 'f');
    ck_assert_int_eq(dt.byteorder, '<');
    ck_assert_uint_eq(dt.itemsize, 8);
    ck_assert_int_eq(zf_dtype_parse(">M8[ns]", &dt, &err), ZF_OK);
    ck_assert_str_eq(dt.unit, "ns");
    ck_assert(zf_dtype_is_swapped(&dt));
    ck_assert_int_eq(zf_dtype_parse("<U5", &dt, &err), ZF_OK);
    ck_assert_uint_eq(dt.itemsize, 20);
    ck_assert_int_eq(zf_dtype_parse("|S0", &dt, &err), ZF_OK);
    ck_assert_uint_eq(dt.itemsize, 0);
    char buf[32];
    zf_dtype_parse("<m8[10s]", &dt, &err);
    zf_dtype_format(&dt, buf, sizeof buf);
    ck_assert_str_eq(buf, "<m8[10s]");
    zf_dtype_parse("<U5", &dt, &err);
    zf_dtype_format(&dt, buf, sizeof buf);
    ck_assert_str_eq(buf, "<U5");
    const char *bad[] = {"f8", "<x4", "<f3", "<i", "<i4x", "<M8[", "<f8[s]", "<b2", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err.msg[0] = '\0';
        ck_assert_int_eq(zf_dtype_parse(bad[i], &dt, &err), ZF_ERR_INVALID);
        ck_assert(err.msg[0] != '\0');
    }
}
END_TEST

START_TEST(half_conversions)
{
    /* Values and bit patterns from IEEE 754 binary16. */
    ck_assert_uint_eq(zf_double_to_half(1.0), 0x3c00);
    ck_assert_uint_eq(zf_double_to_half(-2.0), 0xc000);
    ck_assert_uint_eq(zf_double_to_half(65504.0), 0x7bff);
    ck_assert_uint_eq(zf_double_to_half(65520.0), 0x7c00); /* rounds to infinity */
    ck_assert_uint_eq(zf_double_to_half(5.960464477539063e-08), 0x0001); /* smallest subnormal */
    ck_assert_uint_eq(zf_double_to_half(2.9802322387695312e-08), 0x0000); /* tie to even: 0 */
    ck_assert_uint_eq(zf_double_to_half(1.0 + 1.0 / 2048), 0x3c00);     /* tie to even */
    ck_assert_uint_eq(zf_double_to_half(1.0 + 3.0 / 2048), 0x3c02);     /* tie to even up */
    ck_assert_uint_eq(zf_double_to_half(NAN) & 0x7e00, 0x7e00);
    ck_assert_uint_eq(zf_double_to_half(-INFINITY), 0xfc00);
    ck_assert(zf_half_to_float(0x3555) > 0.333f && zf_half_to_float(0x3555) < 0.3334f);
    ck_assert(zf_half_to_float(0x0001) == 5.960464477539063e-08f);
    for (uint32_t h = 0; h < 0x10000; h++) { /* every finite half round-trips */
        if ((h & 0x7c00) == 0x7c00)
            continue;
        ck_assert_uint_eq(zf_float_to_half(zf_half_to_float((uint16_t)h)), h);
    }
}
END_TEST

START_TEST(element_casts)
{
    zf_dtype i2, u1, f4, be8;
    zf_dtype_parse("<i2", &i2, NULL);
    zf_dtype_parse("|u1", &u1, NULL);
    zf_dtype_parse("<f4", &f4, NULL);
    zf_dtype_parse(">u8", &be8, NULL);
    uint8_t buf[16] = {0};
    zf_dtype_store(&i2, buf, 0, (zf_num){.kind = 'f', .v.f = -3.9});
    ck_assert_int_eq(zf_dtype_load(&i2, buf, 0).v.i, -3); /* truncation toward zero */
    zf_dtype_store(&u1, buf, 0, (zf_num){.kind = 'i', .v.i = 257});
    ck_assert_uint_eq(buf[0], 1); /* integers wrap */
    zf_dtype_store(&f4, buf, 1, (zf_num){.kind = 'i', .v.i = 3});
    ck_assert(zf_dtype_load(&f4, buf, 1).v.f == 3.0);
    zf_dtype_store(&be8, buf, 1, (zf_num){.kind = 'u', .v.u = 0x0102030405060708ull});
    ck_assert_uint_eq(buf[8], 1);
    ck_assert_uint_eq(buf[15], 8);
    ck_assert_uint_eq(zf_dtype_load(&be8, buf, 1).v.u, 0x0102030405060708ull);
    zf_dtype_store(&i2, buf, 0, (zf_num){.kind = 'f', .v.f = NAN}); /* defined, no UB */
}
END_TEST

START_TEST(json_helpers)
{
    yajl_val v;
    zf_err err = {""};
    const char *doc = "{\"a\": 18446744073709551615, \"b\": -9223372036854775808, \"c\": 1.5}";
    ck_assert_int_eq(zf_json_parse("k", doc, strlen(doc), &v, &err), ZF_OK);
    uint64_t u;
    int64_t i;
    ck_assert(zf_json_uint64(zf_json_get(v, "a"), &u));
    ck_assert_uint_eq(u, UINT64_MAX);
    ck_assert(zf_json_int64(zf_json_get(v, "b"), &i));
    ck_assert(i == INT64_MIN);
    ck_assert(!zf_json_int64(zf_json_get(v, "c"), &i));
    ck_assert(!zf_json_int64(zf_json_get(v, "a"), &i));
    char *s = zf_json_dump(v);
    ck_assert_str_eq(s, "{\"a\":18446744073709551615,\"b\":-9223372036854775808,\"c\":1.5}");
    free(s);
    yajl_tree_free(v);
    /* Python's bare tokens parse, are named, and are written back bare; not inside strings */
    const char *py = "{\"f\": NaN, \"g\": [-Infinity, Infinity], \"s\": \"NaN, \\\"Infinity\"}";
    ck_assert_int_eq(zf_json_parse("k", py, strlen(py), &v, &err), ZF_OK);
    ck_assert_str_eq(zf_json_special(zf_json_get(v, "f")), "NaN");
    ck_assert_str_eq(zf_json_special(zf_json_get(v, "g")->u.array.values[0]), "-Infinity");
    ck_assert_ptr_null(zf_json_special(zf_json_get(v, "s")));
    ck_assert_str_eq(zf_json_get(v, "s")->u.string, "NaN, \"Infinity");
    s = zf_json_dump(v);
    ck_assert_str_eq(s, "{\"f\":NaN,\"g\":[-Infinity,Infinity],\"s\":\"NaN, \\\"Infinity\"}");
    free(s);
    yajl_tree_free(v);
    ck_assert_int_eq(zf_json_parse(".zarray", "{\"a\": ", 6, &v, &err), ZF_ERR_INVALID);
    ck_assert_msg(strncmp(err.msg, ".zarray: not valid JSON", 23) == 0, "%s", err.msg);
}
END_TEST

START_TEST(base64_and_utf32)
{
    uint8_t *out;
    size_t n;
    ck_assert_int_eq(zf_base64_decode("AAECAw==", &out, &n), ZF_OK);
    ck_assert_uint_eq(n, 4);
    ck_assert_uint_eq(out[3], 3);
    free(out);
    ck_assert_int_eq(zf_base64_decode("aGVsbG8", &out, &n), ZF_ERR_INVALID); /* Python too */
    ck_assert_int_eq(zf_base64_decode("YW$Jj", &out, &n), ZF_OK); /* Python skips the $ */
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(memcmp(out, "abc", 3), 0);
    free(out);
    ck_assert_int_eq(zf_base64_decode("YWJjZ", &out, &n), ZF_ERR_INVALID); /* incomplete group */
    ck_assert_int_eq(zf_base64_decode("YQ==YWJj", &out, &n), ZF_OK); /* a pad ends the data */
    ck_assert_uint_eq(n, 1);
    free(out);
    uint8_t small[2];
    ck_assert_int_eq(zf_base64_decode_into((const uint8_t *)"YWJj", 4, small, 2, &n),
                     ZF_ERR_CORRUPT);
    /* groups of four decoded at once and byte by byte, mixed: Python's binascii.a2b_base64 */
    static const struct {
        const char *in, *want; /* want NULL: Python raises */
    } py[] = {{"QUJD\nREVG", "ABCDEF"},
              {"QUJDREVGR0g=", "ABCDEFGH"},
              {"QU JDR\tEVGR0hJ", "ABCDEFGHI"},
              {"QUJDREVG=QUJD", "ABCDEFABC"},
              {"QUJDR===REVG", NULL}};
    for (size_t i = 0; i < sizeof py / sizeof py[0]; i++) {
        zf_status st = zf_base64_decode(py[i].in, &out, &n);
        ck_assert_int_eq(st, py[i].want ? ZF_OK : ZF_ERR_INVALID);
        if (py[i].want) {
            ck_assert_uint_eq(n, strlen(py[i].want));
            ck_assert_int_eq(memcmp(out, py[i].want, n), 0);
            free(out);
        }
    }
    uint8_t six[6]; /* room for two groups of a longer text: the third does not fit */
    ck_assert_int_eq(zf_base64_decode_into((const uint8_t *)"QUJDREVGR0hJ", 12, six, 6, &n),
                     ZF_ERR_CORRUPT);
    uint8_t u[12];
    ck_assert_int_eq(zf_utf8_to_utf32("\xc3\xa9x", 3, u, 3, 0), ZF_OK); /* é x */
    ck_assert_uint_eq(u[0], 0xe9);
    ck_assert_uint_eq(u[4], 'x');
    ck_assert_uint_eq(u[8], 0);
    ck_assert_int_eq(zf_utf8_to_utf32("\xe3\x81", 2, u, 3, 1), ZF_ERR_INVALID); /* truncated */
    ck_assert_int_eq(zf_utf8_to_utf32("\xe3\x81\x9f", 3, u, 1, 1), ZF_OK); /* た, big-endian */
    ck_assert_uint_eq(u[2], 0x30);
    ck_assert_uint_eq(u[3], 0x5f);
}
END_TEST

/* Hostile JSON (docs/security.md): nesting deeper than ZF_JSON_MAX_DEPTH is refused before yajl
 * builds a tree (whose free, and the walks over it, recurse once per level), brackets inside
 * strings do not count; documents over ZF_JSON_MAX_TEXT are refused unread. */
START_TEST(json_bounds)
{
    size_t n = 1000000;
    char *doc = malloc(6 * n + 16);
    ck_assert_ptr_nonnull(doc);
    for (size_t depth = ZF_JSON_MAX_DEPTH; depth <= n; depth = depth == n ? n + 1 : n) {
        for (int obj = 0; obj < 2; obj++) {
            size_t k = 0;
            for (size_t i = 0; i < depth; i++) /* [[[...]]] or {"a":{"a":...}} */
                k += (size_t)sprintf(doc + k, "%s", obj ? (i + 1 < depth ? "{\"a\":" : "{") : "[");
            for (size_t i = 0; i < depth; i++)
                doc[k++] = obj ? '}' : ']';
            yajl_val v = NULL;
            zf_err err = {""};
            zf_status st = zf_json_parse("deep", doc, k, &v, &err);
            if (depth == ZF_JSON_MAX_DEPTH) {
                ck_assert_msg(st == ZF_OK, "%s", err.msg);
                yajl_tree_free(v);
            } else {
                ck_assert_int_eq(st, ZF_ERR_INVALID);
                ck_assert_str_eq(err.msg, "deep: JSON nested deeper than 512 levels");
            }
        }
    }
    /* brackets in strings, escaped quotes included, are not nesting */
    size_t k = (size_t)sprintf(doc, "{\"s\": \"\\\"");
    for (size_t i = 0; i < 10000; i++)
        doc[k++] = '[';
    k += (size_t)sprintf(doc + k, "\"}");
    yajl_val v = NULL;
    zf_err err = {""};
    ck_assert_msg(zf_json_parse("str", doc, k, &v, &err) == ZF_OK, "%s", err.msg);
    yajl_tree_free(v);
    free(doc);
    /* the size bound is checked before the text is read: a length past it, any text */
    ck_assert_int_eq(zf_json_parse("big", "{}", ZF_JSON_MAX_TEXT + 1, &v, &err), ZF_ERR_INVALID);
    ck_assert_str_eq(err.msg, "big: JSON document larger than 512 MiB");
}
END_TEST

/* zf_pool_cancel: the queued tasks of one function go without running (their arguments to
 * drop), a task already running and those of other functions run. */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_open, gate_entered, ran_a, ran_b, dropped;

static void gate_task(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&gate_mu);
    gate_entered = 1;
    pthread_cond_broadcast(&gate_cv);
    while (!gate_open)
        pthread_cond_wait(&gate_cv, &gate_mu);
    pthread_mutex_unlock(&gate_mu);
}

static void task_a(void *arg) { free(arg), ran_a++; }
static void task_b(void *arg) { (void)arg, ran_b++; }
static void drop_a(void *arg) { free(arg), dropped++; }

START_TEST(pool_cancel)
{
    zf_pool *p;
    ck_assert_int_eq(zf_pool_new(1, &p), ZF_OK);
    ck_assert_int_eq(zf_pool_submit(p, gate_task, NULL), ZF_OK);
    pthread_mutex_lock(&gate_mu);
    while (!gate_entered) /* the one worker is busy: what follows stays queued */
        pthread_cond_wait(&gate_cv, &gate_mu);
    pthread_mutex_unlock(&gate_mu);
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(zf_pool_submit(p, i % 2 ? task_b : task_a, i % 2 ? NULL : malloc(8)),
                         ZF_OK);
    ck_assert_uint_eq(zf_pool_cancel(p, task_a, drop_a), 3);
    ck_assert_uint_eq(zf_pool_pending(p), 3);
    ck_assert_uint_eq(zf_pool_cancel(p, task_a, drop_a), 0);
    ck_assert_int_eq(zf_pool_submit(p, task_a, malloc(8)), ZF_OK); /* the tail still right */
    pthread_mutex_lock(&gate_mu);
    gate_open = 1;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
    zf_pool_free(p); /* finishes the queue */
    ck_assert_int_eq(dropped, 3);
    ck_assert_int_eq(ran_a, 1);
    ck_assert_int_eq(ran_b, 3);
}
END_TEST

/* Buffers of zf_alloc_chunk given back serve the next request of their size class (from 2 MiB,
 * whole 2 MiB); buffers it did not make, small ones and more than the bound are freed. */
START_TEST(bulk_buffers_recycled)
{
    const size_t mib = 1u << 20, n = 4 * mib;
    zf_mem_trim();
    zf_mem_stats s0 = zf_mem_get_stats();
    uint8_t *a = zf_alloc_chunk(n);
    ck_assert_ptr_nonnull(a);
    memset(a, 0xab, n);
    zf_free_chunk(a, n);
    ck_assert_uint_eq(zf_mem_get_stats().pooled_bytes, n);
    uint8_t *b = zf_alloc_chunk(n); /* the same buffer, as it was left */
    ck_assert_ptr_eq(b, a);
    ck_assert_uint_eq(b[n - 1], 0xab);
    ck_assert_uint_eq(zf_mem_get_stats().reused - s0.reused, 1);
    ck_assert_uint_eq(zf_mem_get_stats().pooled_bytes, 0);
    zf_free_chunk(b, 3 * mib); /* 3 MiB of it used (a short read): kept all the same */
    ck_assert_uint_eq(zf_mem_get_stats().pooled_bytes, n);
    uint8_t *c = zf_alloc_chunk(3 * mib + 1); /* the 4 MiB class: that buffer again */
    ck_assert_ptr_eq(c, a);
    memset(c, 0, 4 * mib); /* it holds its class, not only what was asked */
    zf_free_chunk(c, 3 * mib + 1);
    uint8_t *d = zf_alloc_chunk(5 * mib); /* the 6 MiB class: none kept, a new one */
    ck_assert_ptr_nonnull(d);
    ck_assert_ptr_ne(d, a);
    uint8_t *m = malloc(n); /* not zf_alloc_chunk's: freed */
    ck_assert_ptr_nonnull(m);
    zf_free_chunk(m, n);
    ck_assert_uint_eq(zf_mem_get_stats().pooled_bytes, n);
    uint8_t *small = zf_alloc_chunk(100); /* below 2 MiB: plain malloc, never kept */
    zf_free_chunk(small, 100);
    zf_free_chunk(NULL, n);
    zf_free_chunk(d, 5 * mib);
    ck_assert_uint_eq(zf_mem_get_stats().pooled_bytes, 10 * mib);
    uint8_t *many[12];
    for (int i = 0; i < 12; i++)
        ck_assert_ptr_nonnull(many[i] = zf_alloc_chunk(n));
    for (int i = 0; i < 12; i++)
        zf_free_chunk(many[i], n);
    ck_assert_uint_le(zf_mem_get_stats().pooled_bytes, 32 * mib); /* the bound */
    ck_assert_uint_ge(zf_mem_get_stats().pooled_bytes, 28 * mib);
    uint8_t *e = zf_alloc_chunk(n); /* the newest kept first */
    ck_assert_ptr_eq(e, many[11]);
    free(e); /* free() stays allowed */
    zf_mem_trim();
    ck_assert_uint_eq(zf_mem_get_stats().pooled_bytes, 0);
}
END_TEST

/* ----- the memory account ----- */

typedef struct admitter {
    size_t n;
    atomic_bool admitted;
    zf_mem_ticket t;
} admitter;

static void *admit_run(void *arg)
{
    admitter *a = arg;
    zf_mem_admit(&a->t, a->n, 0);
    atomic_store(&a->admitted, true);
    zf_mem_leave(&a->t, 0);
    return NULL;
}

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* A load that does not fit waits while another is in progress, and goes in when it ends; one
 * alone always goes in (even past the limit); a load inside another on the same thread never
 * waits; the reserve is outside the account. */
START_TEST(memory_account_backpressure)
{
    zf_mem_set_limit(1100, 1000); /* the account: 100 bytes */
    zf_mem_stats s0 = zf_mem_get_stats();
    ck_assert_uint_eq(s0.limit, 1100);
    ck_assert_uint_eq(s0.reserve, 1000);
    zf_mem_ticket a;
    zf_mem_admit(&a, 60, 0);
    ck_assert_uint_eq(zf_mem_get_stats().used - s0.used, 60);
    ck_assert_uint_eq(zf_mem_get_stats().loads, 1);
    zf_mem_ticket inner; /* nested: no wait even though 60 + 500 > 100 */
    zf_mem_admit(&inner, 500, 0);
    ck_assert_uint_eq(zf_mem_get_stats().loads, 1);
    zf_mem_grow(700); /* the inner load needs more: charged, no wait */
    ck_assert_uint_eq(zf_mem_get_stats().used - s0.used, 760);
    zf_mem_leave(&inner, 0);
    ck_assert_uint_eq(zf_mem_get_stats().used - s0.used, 60);
    admitter b = {.n = 60};
    pthread_t tb;
    ck_assert_int_eq(pthread_create(&tb, NULL, admit_run, &b), 0);
    sleep_ms(200);
    ck_assert(!atomic_load(&b.admitted)); /* 60 + 60 > 100: it waits */
    ck_assert_uint_eq(zf_mem_get_stats().waits - s0.waits, 1);
    zf_mem_leave(&a, 0);
    pthread_join(tb, NULL);
    ck_assert(atomic_load(&b.admitted));
    ck_assert_uint_eq(zf_mem_get_stats().used, s0.used);
    ck_assert_uint_eq(zf_mem_get_stats().loads, 0);
    zf_mem_admit(&a, 5000, 0); /* alone: admitted past the limit */
    zf_mem_leave(&a, 0);
    /* a load hands its chunk's charge over to the next charge on its thread (the cache's) */
    zf_mem_admit(&a, 100, 0);
    zf_mem_leave(&a, 60);
    ck_assert_uint_eq(zf_mem_get_stats().used - s0.used, 60);
    zf_mem_charge(70); /* 60 of it taken over */
    ck_assert_uint_eq(zf_mem_get_stats().used - s0.used, 70);
    zf_mem_uncharge(70);
    zf_mem_admit(&a, 100, 0);
    zf_mem_leave(&a, 40); /* not taken over: given back at the next admission */
    zf_mem_admit(&a, 10, 0);
    ck_assert_uint_eq(zf_mem_get_stats().used - s0.used, 10);
    zf_mem_leave(&a, 0);
    zf_mem_set_limit(0, 0);
    zf_mem_admit(&a, 60, 0);
    zf_mem_admit(&inner, 60, 0); /* no limit: never waits */
    zf_mem_leave(&inner, 0);
    zf_mem_leave(&a, 0);
}
END_TEST

static size_t held_bytes;
static size_t reclaim_calls;

static size_t give_back(void *ctx, size_t want)
{
    (void)ctx;
    reclaim_calls++;
    size_t n = want < held_bytes ? want : held_bytes;
    held_bytes -= n;
    zf_mem_uncharge(n);
    return n;
}

/* An admission that does not fit asks for memory back, the kept chunk buffers (which hold
 * nothing) first, then the reclaimers (the caches); what they give back lets it in without
 * waiting. A claim sets a kept buffer aside for the load's chunk, counted once. */
START_TEST(memory_account_reclaims)
{
    const size_t mib = 1u << 20;
    zf_mem_trim();
    zf_mem_stats s0 = zf_mem_get_stats();
    uint8_t *buf = zf_alloc_chunk(4 * mib);
    ck_assert_ptr_nonnull(buf);
    zf_free_chunk(buf, 4 * mib); /* kept: charged */
    ck_assert_uint_eq(zf_mem_get_stats().used - s0.used, 4 * mib);
    ck_assert(zf_mem_add_reclaimer(give_back, NULL));
    held_bytes = 80;
    zf_mem_charge(80);
    zf_mem_set_limit(s0.used + 4 * mib + 100, 0);
    zf_mem_ticket a;
    zf_mem_admit(&a, 10, 0); /* 4 MiB + 90 */
    admitter c = {.n = 60}; /* 4 MiB + 150 > the limit: the reclaimer gives 50 */
    pthread_t tc;
    ck_assert_int_eq(pthread_create(&tc, NULL, admit_run, &c), 0);
    pthread_join(tc, NULL);
    ck_assert(atomic_load(&c.admitted));
    ck_assert_uint_ge(reclaim_calls, 1);
    ck_assert_uint_eq(held_bytes, 30);
    ck_assert_uint_eq(zf_mem_get_stats().pooled_bytes, 4 * mib); /* not needed: kept */
    ck_assert_uint_eq(zf_mem_get_stats().waits, s0.waits); /* no wait */
    zf_mem_set_limit(s0.used + 100, 0); /* a load of 90 beside one of 10: all must go */
    admitter d = {.n = 90};
    ck_assert_int_eq(pthread_create(&tc, NULL, admit_run, &d), 0);
    pthread_join(tc, NULL);
    ck_assert(atomic_load(&d.admitted));
    ck_assert_uint_eq(held_bytes, 0);
    ck_assert_uint_eq(zf_mem_get_stats().pooled_bytes, 0);
    zf_mem_leave(&a, 0);
    zf_mem_remove_reclaimer(give_back, NULL);
    ck_assert_uint_eq(zf_mem_get_stats().used, s0.used);

    /* a claim: the kept buffer is the load's at once, and its chunk buffer */
    zf_mem_set_limit(s0.used + 64 * mib, 0);
    buf = zf_alloc_chunk(4 * mib);
    zf_free_chunk(buf, 4 * mib);
    ck_assert_uint_eq(zf_mem_get_stats().pooled_bytes, 4 * mib);
    zf_mem_admit(&a, 6 * mib, 3 * mib + 5); /* the 4 MiB class */
    ck_assert_uint_eq(zf_mem_get_stats().pooled_bytes, 0);
    ck_assert_uint_eq(zf_mem_get_stats().used - s0.used, 6 * mib); /* counted once */
    uint8_t *other = zf_alloc_chunk(2 * mib); /* another class: not the claimed one */
    ck_assert_ptr_ne(other, buf);
    ck_assert_ptr_eq(zf_alloc_chunk(4 * mib), buf);
    zf_free_chunk(buf, 4 * mib); /* freed during the load: the load's again */
    ck_assert_uint_eq(zf_mem_get_stats().pooled_bytes, 0);
    ck_assert_ptr_eq(zf_alloc_chunk(4 * mib), buf);
    zf_mem_leave(&a, 0);
    zf_mem_admit(&a, 6 * mib, 4 * mib); /* nothing kept of the class: no claim */
    ck_assert_ptr_null(a.claimed[0]);
    zf_mem_leave(&a, 0);
    zf_free_chunk(buf, 4 * mib);
    zf_mem_admit(&a, 6 * mib, 4 * mib); /* claimed, not used: kept again at the end */
    ck_assert_ptr_eq(a.claimed[0], buf);
    zf_mem_leave(&a, 0);
    ck_assert_uint_eq(zf_mem_get_stats().pooled_bytes, 4 * mib);
    zf_mem_set_limit(s0.used + 4 * mib + 2 * mib - 1, 0); /* no room to keep another 2 MiB */
    zf_free_chunk(other, 2 * mib);
    ck_assert_uint_eq(zf_mem_get_stats().pooled_bytes, 4 * mib);
    zf_mem_trim();
    zf_mem_set_limit(0, 0);
    ck_assert_uint_eq(zf_mem_get_stats().used, s0.used);
}
END_TEST

static uint8_t *cached[2]; /* a cache's two chunks of 4 MiB, charged */

static size_t evict_cached(void *ctx, size_t want)
{
    (void)ctx;
    size_t freed = 0;
    for (int k = 0; k < 2 && freed < want; k++)
        if (cached[k]) {
            zf_free_chunk(cached[k], 4u << 20); /* as the cache: free, then uncharge */
            cached[k] = NULL;
            zf_mem_uncharge(4u << 20);
            freed += 4u << 20;
        }
    return freed;
}

/* The chunks the reclaimers evict for a load that is being admitted are not set aside for it
 * (a claim without a charge): loads that waited each hoarded up to two evicted chunks, and a
 * daemon bounded at 64 MiB reached 125 MiB with 16 MiB chunks. A load alone past the limit asks
 * the reclaimers too. */
START_TEST(memory_account_evictions_not_hoarded)
{
    const size_t mib = 1u << 20;
    zf_mem_trim();
    zf_mem_stats s0 = zf_mem_get_stats();
    for (int k = 0; k < 2; k++) {
        cached[k] = zf_alloc_chunk(4 * mib);
        ck_assert_ptr_nonnull(cached[k]);
    }
    zf_mem_charge(8 * mib);
    ck_assert(zf_mem_add_reclaimer(evict_cached, NULL));
    zf_mem_set_limit(s0.used + 8 * mib, 0);
    uint8_t *second = cached[1];
    zf_mem_ticket a; /* alone, over the limit: admitted, after asking the cache for room */
    zf_mem_admit(&a, 8 * mib, 4 * mib);
    ck_assert_ptr_null(cached[0]);
    ck_assert_ptr_null(cached[1]);
    /* the first chunk is freed (no room to keep it while both are charged); the second is kept
     * (there is room once the first is uncharged), then claimed with its charge */
    ck_assert_ptr_eq(a.claimed[0], second);
    ck_assert_ptr_null(a.claimed[1]);
    ck_assert_uint_eq(zf_mem_get_stats().pooled_bytes, 0);
    ck_assert_uint_eq(zf_mem_get_stats().used - s0.used, 8 * mib);
    zf_mem_leave(&a, 0);
    zf_mem_remove_reclaimer(evict_cached, NULL);
    zf_mem_set_limit(0, 0);
    ck_assert_uint_eq(zf_mem_get_stats().used, s0.used);
}
END_TEST

/* What malloc's heaps keep freed is outside the account: when it would not fit in the room an
 * admission leaves, it goes back to the kernel (malloc_trim), and the resident memory falls. */
START_TEST(memory_account_trims_heaps)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return; /* the sanitizers' allocators are not glibc's heaps */
#endif
    const size_t mib = 1u << 20;
    enum { N = 48 };
    zf_mem_tune_malloc(4); /* blocks under 2 MiB from the heaps */
    uint8_t *b[N];
    for (int i = 0; i < N; i++) {
        b[i] = malloc(mib);
        ck_assert_ptr_nonnull(b[i]);
        memset(b[i], i + 1, mib); /* resident */
    }
    uint8_t *keep = malloc(4096); /* after them: the heap's top is not trimmed by free() */
    ck_assert_ptr_nonnull(keep);
    for (int i = 0; i < N; i++)
        free(b[i]);
    size_t before = zf_mem_resident();
    zf_mem_stats s0 = zf_mem_get_stats();
    zf_mem_set_limit(s0.used + 8 * mib, 0); /* room for 8 MiB; the heaps keep 48 freed */
    sleep_ms(150); /* past the checks' spacing */
    zf_mem_ticket t;
    zf_mem_admit(&t, mib, 0);
    ck_assert_uint_eq(zf_mem_get_stats().heap_trims, s0.heap_trims + 1);
    size_t after = zf_mem_resident();
    ck_assert_msg(after + 32 * mib < before, "resident %zu MiB before, %zu after", before >> 20,
                  after >> 20);
    zf_mem_leave(&t, 0);
    zf_mem_admit(&t, mib, 0); /* nothing more kept: no second trim */
    zf_mem_leave(&t, 0);
    ck_assert_uint_eq(zf_mem_get_stats().heap_trims, s0.heap_trims + 1);
    zf_mem_set_limit(0, 0);
    free(keep);
}
END_TEST

ZF_CHECK_MAIN("common", typestr_parse, half_conversions, element_casts, json_helpers,
              base64_and_utf32, json_bounds, pool_cancel, bulk_buffers_recycled,
              memory_account_backpressure, memory_account_reclaims,
              memory_account_evictions_not_hoarded, memory_account_trims_heaps)
