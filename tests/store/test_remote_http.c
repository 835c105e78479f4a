/* End-to-end tests of the HTTP store against servers on 127.0.0.1 started by the tests:
 * http_test_server.py (HTTP/1.1, byte ranges, injected faults: 500s, truncated bodies, short 206s,
 * stalls) and Python's own `python3 -m http.server` (HTTP/1.0, no ranges). Each server is a child
 * of the test that ends with it (stdin closed, PR_SET_PDEATHSIG). */
#include <check.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include "store_impl.h"
#include "zarrfs/store.h"

#include "store_tests.h"

#define CHUNK 4096

static char root[64];

static void write_file(const char *rel, const void *data, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')) != NULL; p++) {
        *p = '\0';
        mkdir(path, 0755);
        *p = '/';
    }
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

static uint8_t pattern[CHUNK];

static void make_tree(void)
{
    snprintf(root, sizeof root, "/tmp/zf-http-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(root));
    for (size_t i = 0; i < CHUNK; i++)
        pattern[i] = (uint8_t)(i * 7 + 3);
    write_file("data.zarr/.zgroup", "{\"zarr_format\": 2}", 18);
    write_file("data.zarr/a/.zarray", "{}", 2);
    write_file("data.zarr/a/0.0", pattern, CHUNK);
    write_file("data.zarr/a b/x&y", "space", 5);
    write_file("data.zarr/empty", "", 0);
    const char *faulty[] = {"flaky", "truncate", "truncated", "short206", "norange", "chunked"};
    for (size_t i = 0; i < sizeof faulty / sizeof *faulty; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "%s/chunk", faulty[i]);
        write_file(rel, pattern, CHUNK);
    }
    write_file("fail/x", "x", 1);
    write_file("slow/x", "x", 1);
    write_file("forbidden/x", "x", 1);
    write_file("text/sub/x", "x", 1);
    write_file("noindex/index.html", "<html><body>hello</body></html>", 31);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static void remove_tree(void) { nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* Start a server on root; stock = Python's own http.server. false when there is no Python. */
static bool start_server(test_server *sv, bool stock)
{
    if (stock) {
        const char *argv[] = {TEST_PYTHON, "-u", "-m", "http.server", "--bind", "127.0.0.1",
                              "--directory", root, "0", NULL};
        return test_server_start(sv, argv, " port ", true);
    }
    const char *argv[] = {TEST_PYTHON, "-u", STORE_TEST_SRCDIR "/http_test_server.py", root, NULL};
    return test_server_start(sv, argv, NULL, false);
}

static void stop_server(test_server *sv) { test_server_stop(sv); }

static zf_store *open_store(const test_server *sv, const char *path, const zf_store_options *o)
{
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", sv->port, path);
    zf_store *s = NULL;
    zf_err err = {""};
    ck_assert_msg(zf_store_open(url, o, &s, &err) == ZF_OK, "%s", err.msg);
    return s;
}

static int entry(const zf_store_listing *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->entries[i].name, name) == 0)
            return l->entries[i].is_prefix ? 2 : 1;
    return 0;
}

static void expect_bytes(const zf_bytes *b, const void *want, size_t n)
{
    ck_assert_uint_eq(b->len, n);
    ck_assert_ptr_nonnull(b->data);
    ck_assert_int_eq(memcmp(b->data, want, n), 0);
}

START_TEST(http_values_ranges_listing)
{
    make_tree();
    test_server sv;
    if (!start_server(&sv, false))
        return;
    zf_store *s = open_store(&sv, "/data.zarr//", NULL);
    ck_assert(zf_store_is_remote(s));
    zf_err err = {""};
    zf_bytes b;
    ck_assert_int_eq(zf_store_get(s, ".zgroup", &b, &err), ZF_OK);
    expect_bytes(&b, "{\"zarr_format\": 2}", 18);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get(s, "a/0.0", &b, &err), ZF_OK);
    expect_bytes(&b, pattern, CHUNK);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get(s, "a b/x&y", &b, &err), ZF_OK);
    expect_bytes(&b, "space", 5);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get(s, "empty", &b, &err), ZF_OK);
    ck_assert_uint_eq(b.len, 0);
    zf_bytes_free(&b);
    /* ranges */
    ck_assert_int_eq(zf_store_get_partial(s, "a/0.0", 100, 50, &b, &err), ZF_OK);
    expect_bytes(&b, pattern + 100, 50);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get_partial(s, "a/0.0", 4000, 500, &b, &err), ZF_OK);
    expect_bytes(&b, pattern + 4000, 96);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get_partial(s, "a/0.0", 10, UINT64_MAX, &b, &err), ZF_OK);
    expect_bytes(&b, pattern + 10, CHUNK - 10);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get_partial(s, "a/0.0", 5000, 10, &b, &err), ZF_OK); /* 416 */
    ck_assert_uint_eq(b.len, 0);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get_partial(s, "a/0.0", 0, 0, &b, &err), ZF_OK);
    ck_assert_uint_eq(b.len, 0);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get_partial(s, "missing", 0, 0, &b, &err), ZF_ERR_NOT_FOUND);
    uint64_t total = 0;
    ck_assert_int_eq(zf_store_get_suffix(s, "a/0.0", 10, &b, &total, &err), ZF_OK);
    expect_bytes(&b, pattern + CHUNK - 10, 10);
    ck_assert_uint_eq(total, CHUNK);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get_suffix(s, "a/0.0", 100000, &b, &total, &err), ZF_OK);
    expect_bytes(&b, pattern, CHUNK);
    ck_assert_uint_eq(total, CHUNK);
    zf_bytes_free(&b);
    total = 99;
    ck_assert_int_eq(zf_store_get_suffix(s, "empty", 16, &b, &total, &err), ZF_OK);
    ck_assert_uint_eq(b.len, 0);
    ck_assert_uint_eq(total, 0);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get_suffix(s, "missing", 16, &b, &total, &err), ZF_ERR_NOT_FOUND);
    /* stat */
    uint64_t size = 0;
    struct timespec mt = {0};
    ck_assert_int_eq(zf_store_stat(s, "a/0.0", &size, &mt, &err), ZF_OK);
    ck_assert_uint_eq(size, CHUNK);
    ck_assert(mt.tv_sec > 1600000000);
    ck_assert_int_eq(zf_store_stat(s, "missing", &size, &mt, &err), ZF_ERR_NOT_FOUND);
    /* a directory is no value (the server redirects "a" to "a/") */
    ck_assert_int_eq(zf_store_stat(s, "a", &size, &mt, &err), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(zf_store_get(s, "a", &b, &err), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(zf_store_get(s, "a/missing", &b, &err), ZF_ERR_NOT_FOUND);
    /* listings from Python's index pages */
    zf_store_listing l;
    ck_assert_int_eq(zf_store_list_dir(s, "", &l, &err), ZF_OK);
    ck_assert_uint_eq(l.n, 4);
    ck_assert_int_eq(entry(&l, ".zgroup"), 1);
    ck_assert_int_eq(entry(&l, "a"), 2);
    ck_assert_int_eq(entry(&l, "a b"), 2);
    ck_assert_int_eq(entry(&l, "empty"), 1);
    zf_store_listing_free(&l);
    ck_assert_int_eq(zf_store_list_dir(s, "a b", &l, &err), ZF_OK);
    ck_assert_uint_eq(l.n, 1);
    ck_assert_int_eq(entry(&l, "x&y"), 1);
    zf_store_listing_free(&l);
    ck_assert_int_eq(zf_store_list_dir(s, "missing", &l, &err), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(zf_store_list_dir(s, ".zgroup", &l, &err), ZF_ERR_NOT_FOUND);
    zf_store_stats st;
    zf_store_get_stats(s, &st);
    ck_assert_uint_eq(st.retries, 0);
    ck_assert_uint_eq(st.errors, 0);
    ck_assert_uint_eq(st.requests, 23);
    zf_store_close(s);

    /* pages that are no index */
    s = open_store(&sv, "/", NULL);
    ck_assert_int_eq(zf_store_list_dir(s, "text/sub", &l, &err), ZF_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(err.msg, "text/sub: ") && strstr(err.msg, "cannot be listed"), "%s",
                  err.msg);
    ck_assert_int_eq(zf_store_list_dir(s, "noindex", &l, &err), ZF_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(err.msg, "cannot be listed"), "%s", err.msg);
    /* a directory without index (nginx autoindex off): 403 */
    ck_assert_int_eq(zf_store_list_dir(s, "forbidden", &l, &err), ZF_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(err.msg, "forbidden: the server refuses to list it (403 Forbidden)"),
                  "%s", err.msg);
    /* no Range support, no Content-Length: still exact */
    ck_assert_int_eq(zf_store_get_partial(s, "norange/chunk", 1000, 24, &b, &err), ZF_OK);
    expect_bytes(&b, pattern + 1000, 24);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get_suffix(s, "norange/chunk", 96, &b, &total, &err), ZF_OK);
    expect_bytes(&b, pattern + CHUNK - 96, 96);
    ck_assert_uint_eq(total, CHUNK);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get(s, "chunked/chunk", &b, &err), ZF_OK);
    expect_bytes(&b, pattern, CHUNK);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_stat(s, "chunked/chunk", &size, NULL, &err), ZF_OK);
    ck_assert_uint_eq(size, CHUNK);
    zf_store_close(s);
    stop_server(&sv);
    remove_tree();
}
END_TEST

START_TEST(http_retries_and_truncation)
{
    make_tree();
    test_server sv;
    if (!start_server(&sv, false))
        return;
    zf_store_options o = {.retries = 3};
    zf_store *s = open_store(&sv, "", &o);
    zf_err err = {""};
    zf_bytes b;
    zf_store_stats st;
    /* 500, 500, then the value */
    ck_assert_msg(zf_store_get(s, "flaky/chunk", &b, &err) == ZF_OK, "%s", err.msg);
    expect_bytes(&b, pattern, CHUNK);
    zf_bytes_free(&b);
    zf_store_get_stats(s, &st);
    ck_assert_uint_eq(st.retries, 2);
    ck_assert_uint_eq(st.errors, 0);
    /* a body cut short once, then whole */
    ck_assert_msg(zf_store_get(s, "truncate/chunk", &b, &err) == ZF_OK, "%s", err.msg);
    expect_bytes(&b, pattern, CHUNK);
    zf_bytes_free(&b);
    zf_store_get_stats(s, &st);
    ck_assert_uint_eq(st.retries, 3);
    /* cut short every time: never a success */
    b = (zf_bytes){0};
    ck_assert_int_eq(zf_store_get(s, "truncated/chunk", &b, &err), ZF_ERR_IO);
    ck_assert_ptr_null(b.data);
    ck_assert_msg(strstr(err.msg, "truncated/chunk: truncated: 1000 of 4096 bytes after 3 retries"),
                  "%s", err.msg);
    ck_assert_int_eq(zf_store_get_partial(s, "truncated/chunk", 0, 2000, &b, &err), ZF_ERR_IO);
    ck_assert_msg(strstr(err.msg, "truncated"), "%s", err.msg);
    zf_store_get_stats(s, &st);
    ck_assert_uint_eq(st.retries, 9);
    ck_assert_uint_eq(st.errors, 2);
    /* a 206 with half the range asked, once */
    ck_assert_msg(zf_store_get_partial(s, "short206/chunk", 96, 4000, &b, &err) == ZF_OK, "%s",
                  err.msg);
    expect_bytes(&b, pattern + 96, 4000);
    zf_bytes_free(&b);
    zf_store_get_stats(s, &st);
    ck_assert_uint_eq(st.retries, 10);
    /* 503 every time */
    ck_assert_int_eq(zf_store_get(s, "fail/x", &b, &err), ZF_ERR_IO);
    ck_assert_msg(strstr(err.msg, "fail/x: 503 Service Unavailable after 3 retries"), "%s",
                  err.msg);
    /* 403 hides absence */
    ck_assert_int_eq(zf_store_get(s, "forbidden/x", &b, &err), ZF_ERR_NOT_FOUND);
    zf_store_get_stats(s, &st);
    ck_assert_uint_eq(st.retries, 13);
    ck_assert_uint_eq(st.errors, 3);
    zf_store_close(s);
    stop_server(&sv);
    remove_tree();
}
END_TEST

START_TEST(http_timeouts_and_refused)
{
    make_tree();
    test_server sv;
    if (!start_server(&sv, false))
        return;
    zf_store_options o = {.retries = 1, .timeout = 1};
    zf_store *s = open_store(&sv, "", &o);
    zf_err err = {""};
    zf_bytes b;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ck_assert_int_eq(zf_store_get(s, "slow/x", &b, &err), ZF_ERR_IO);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ck_assert_msg(strstr(err.msg, "slow/x: timed out") && strstr(err.msg, "after 1 retry"), "%s",
                  err.msg);
    ck_assert_int_lt(t1.tv_sec - t0.tv_sec, 10);
    zf_store_stats st;
    zf_store_get_stats(s, &st);
    ck_assert_uint_eq(st.retries, 1);
    zf_store_close(s);
    stop_server(&sv);

    /* a port where nothing listens */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &al), 0);
    test_server closed = {.port = ntohs(a.sin_port)};
    close(fd);
    o.retries = 2;
    s = open_store(&closed, "/x.zarr", &o);
    ck_assert_int_eq(zf_store_get(s, ".zgroup", &b, &err), ZF_ERR_IO);
    ck_assert_msg(strstr(err.msg, ".zgroup: ") && strstr(err.msg, "after 2 retries"), "%s",
                  err.msg);
    zf_store_get_stats(s, &st);
    ck_assert_uint_eq(st.retries, 2);
    ck_assert_uint_eq(st.errors, 1);
    zf_store_close(s);
    remove_tree();
}
END_TEST

/* Python's own http.server: HTTP/1.0, a connection per request, no Range support. */
START_TEST(http_python_http_server)
{
    make_tree();
    test_server sv;
    if (!start_server(&sv, true))
        return;
    zf_store *s = open_store(&sv, "/data.zarr", NULL);
    zf_err err = {""};
    zf_bytes b;
    ck_assert_int_eq(zf_store_get(s, "a/0.0", &b, &err), ZF_OK);
    expect_bytes(&b, pattern, CHUNK);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get_partial(s, "a/0.0", 4000, 200, &b, &err), ZF_OK);
    expect_bytes(&b, pattern + 4000, 96);
    zf_bytes_free(&b);
    uint64_t total;
    ck_assert_int_eq(zf_store_get_suffix(s, "a/0.0", 4, &b, &total, &err), ZF_OK);
    expect_bytes(&b, pattern + CHUNK - 4, 4);
    ck_assert_uint_eq(total, CHUNK);
    zf_bytes_free(&b);
    uint64_t size;
    ck_assert_int_eq(zf_store_stat(s, ".zgroup", &size, NULL, &err), ZF_OK);
    ck_assert_uint_eq(size, 18);
    ck_assert_int_eq(zf_store_get(s, "nope", &b, &err), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(zf_store_get(s, "a", &b, &err), ZF_ERR_NOT_FOUND);
    zf_store_listing l;
    ck_assert_int_eq(zf_store_list_dir(s, "a", &l, &err), ZF_OK);
    ck_assert_uint_eq(l.n, 2);
    ck_assert_int_eq(entry(&l, ".zarray"), 1);
    ck_assert_int_eq(entry(&l, "0.0"), 1);
    zf_store_listing_free(&l);
    ck_assert_int_eq(zf_store_list_dir(s, "", &l, &err), ZF_OK);
    ck_assert_int_eq(entry(&l, "a b"), 2);
    zf_store_listing_free(&l);
    zf_store_close(s);
    stop_server(&sv);
    remove_tree();
}
END_TEST

/* The size cap, on the transport itself with a small limit. */
START_TEST(http_body_cap)
{
    make_tree();
    test_server sv;
    if (!start_server(&sv, false))
        return;
    zf_store_options o = {0};
    zf_http_config cfg = {.opts = &o};
    zf_http *h;
    zf_err err = {""};
    ck_assert_int_eq(zf_http_create(&cfg, &h, &err), ZF_OK);
    char url[256];
    const char *paths[] = {"/data.zarr/a/0.0", "/chunked/chunk"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(url, sizeof url, "http://127.0.0.1:%d%s", sv.port, paths[i]);
        zf_http_request rq = {.url = url, .what = "k", .kind = ZF_HTTP_GET, .max_body = 1000};
        zf_http_response r;
        ck_assert_int_eq(zf_http_perform(h, NULL, &rq, &r, &err), ZF_ERR_TOO_LARGE);
        ck_assert_msg(strstr(err.msg, "k: refusing a value larger than 1000 bytes ("), "%s",
                      err.msg);
        ck_assert_ptr_null(r.body.data);
        rq.max_body = CHUNK; /* exactly the limit is fine */
        ck_assert_int_eq(zf_http_perform(h, NULL, &rq, &r, &err), ZF_OK);
        ck_assert_uint_eq(r.body.len, CHUNK);
        zf_http_response_free(&r);
    }
    zf_http_destroy(h);
    /* the same through the store (zf_store_get_bounded): by Content-Length, and for the chunked
     * body (no length) once it passes the bound */
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", sv.port);
    zf_store *s;
    ck_assert_msg(zf_store_open(url, &o, &s, &err) == ZF_OK, "%s", err.msg);
    const char *keys[] = {"data.zarr/a/0.0", "chunked/chunk"};
    const char *why[] = {"(4096 bytes announced)", "(sent without a length: cut off there)"};
    for (size_t i = 0; i < 2; i++) {
        zf_bytes b = {0};
        ck_assert_int_eq(zf_store_get_bounded(s, keys[i], CHUNK - 1, &b, &err),
                         ZF_ERR_TOO_LARGE);
        ck_assert_msg(strstr(err.msg, keys[i]) && strstr(err.msg, "larger than 4095 bytes") &&
                          strstr(err.msg, why[i]),
                      "%s", err.msg);
        ck_assert_int_eq(zf_store_get_bounded(s, keys[i], CHUNK, &b, &err), ZF_OK);
        ck_assert_uint_eq(b.len, CHUNK);
        zf_bytes_free(&b);
    }
    zf_store_close(s);
    stop_server(&sv);
    remove_tree();
}
END_TEST

typedef struct worker {
    zf_store *s;
    atomic_int *failures;
    int id;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    for (int i = 0; i < 20; i++) {
        zf_bytes b;
        zf_err err;
        uint64_t off = (uint64_t)((w->id * 131 + i * 17) % CHUNK);
        if (zf_store_get_partial(w->s, "a/0.0", off, 64, &b, &err) != ZF_OK ||
            b.len != (CHUNK - off < 64 ? CHUNK - off : 64) ||
            memcmp(b.data, pattern + off, b.len) != 0)
            atomic_fetch_add(w->failures, 1);
        zf_bytes_free(&b);
        if (zf_store_get(w->s, ".zgroup", &b, &err) != ZF_OK || b.len != 18)
            atomic_fetch_add(w->failures, 1);
        zf_bytes_free(&b);
    }
    return NULL;
}

START_TEST(http_concurrent_pool)
{
    make_tree();
    test_server sv;
    if (!start_server(&sv, false))
        return;
    zf_store_options o = {.max_connections = 2};
    zf_store *s = open_store(&sv, "/data.zarr", &o);
    atomic_int failures = 0;
    pthread_t t[8];
    worker w[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (worker){.s = s, .failures = &failures, .id = i};
        ck_assert_int_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    ck_assert_int_eq(atomic_load(&failures), 0);
    zf_store_stats st;
    zf_store_get_stats(s, &st);
    ck_assert_uint_eq(st.requests, 8 * 40);
    ck_assert_uint_eq(st.errors, 0);
    zf_store_close(s);
    stop_server(&sv);
    remove_tree();
}
END_TEST

START_TEST(http_open)
{
    zf_store *s;
    zf_err err = {""};
    ck_assert_int_eq(zf_store_open("http://", NULL, &s, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(zf_store_open("https:///x", NULL, &s, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(zf_store_open("http://h/x.zarr?sig=1", NULL, &s, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(zf_store_open("http://h/x y", NULL, &s, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(zf_store_open("http://user:hunter2@h/x", NULL, &s, &err), ZF_OK);
    ck_assert_str_eq(s->url, "http://user:***@h/x");
    zf_store_close(s);
    ck_assert_int_eq(zf_store_open("https://h", NULL, &s, &err), ZF_OK);
    ck_assert(zf_store_is_remote(s));
    zf_store_close(s);
}
END_TEST

TCase *store_http_tcase(void)
{
    TCase *tc = tcase_create("http");
    tcase_add_test(tc, http_values_ranges_listing);
    tcase_add_test(tc, http_retries_and_truncation);
    tcase_add_test(tc, http_timeouts_and_refused);
    tcase_add_test(tc, http_python_http_server);
    tcase_add_test(tc, http_body_cap);
    tcase_add_test(tc, http_concurrent_pool);
    tcase_add_test(tc, http_open);
    return tc;
}
