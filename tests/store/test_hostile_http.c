/* Hostile and broken HTTP servers (docs/security.md), against hostile_http_server.py on 127.0.0.1:
 * redirects to another origin (signed S3 requests refuse them, so neither the signature nor the
 * session token reach another server; unsigned ones follow without the URL's user:password, nor
 * the user and password or bearer token of -o credentials, nor those of .netrc),
 * redirects to other schemes and loops, endless and huge headers, answers dripping a byte at a
 * time, wrong Content-Range answers, bodies longer or shorter than they say, absurd
 * Content-Lengths, endless bodies; metadata documents over their bound, announced or not
 * (refused unread, or cut off at the bound). The rule: the right bytes or ZF_ERR_IO (or
 * ZF_ERR_TOO_LARGE) with a message, in bounded time and memory. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store_impl.h"
#include "zarrfs/hierarchy.h"
#include "zarrfs/json.h"
#include "zarrfs/store.h"

#include "store_tests.h"

#define VALUE_LEN 4096
#define TOKEN "SESSION-TOKEN-must-not-leak"

static uint8_t value[VALUE_LEN];

static bool start(test_server *sv)
{
    for (size_t i = 0; i < VALUE_LEN; i++)
        value[i] = (uint8_t)(i * 7 + 3);
    const char *argv[] = {TEST_PYTHON, "-u", STORE_TEST_SRCDIR "/hostile_http_server.py", NULL};
    return test_server_start(sv, argv, NULL, false);
}

static zf_http *transport(const zf_store_options *o, bool signed_)
{
    zf_http_config cfg = {.opts = o};
    if (signed_) {
        cfg.sigv4 = "aws:amz:us-east-1:s3";
        cfg.access_key = "AKIDHOSTILE";
        cfg.secret_key = "secret-must-not-leak";
        cfg.session_token = TOKEN;
    }
    zf_http *h;
    zf_err err = {""};
    ck_assert_msg(zf_http_create(&cfg, &h, &err) == ZF_OK, "%s", err.msg);
    return h;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* One request to path on the server; the status, the response in *r (freed by the caller when
 * ZF_OK) and err. */
static zf_status request(zf_http *h, const test_server *sv, const char *path, zf_http_kind kind,
                         uint64_t offset, uint64_t len, uint64_t max_body, zf_http_response *r,
                         zf_err *err)
{
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/%s", sv->port, path);
    zf_http_request rq = {.url = url, .what = path, .kind = kind, .offset = offset, .len = len,
                          .max_body = max_body};
    *err = (zf_err){""};
    return zf_http_perform(h, NULL, &rq, r, err);
}

/* Expect status want with needle in the message. */
static void expect_status(zf_http *h, const test_server *sv, const char *path, zf_status want,
                          const char *needle)
{
    zf_http_response r;
    zf_err err;
    zf_status st = request(h, sv, path, ZF_HTTP_GET, 0, 0, 0, &r, &err);
    if (st == ZF_OK)
        zf_http_response_free(&r);
    ck_assert_msg(st == want, "%s: %s (%s)", path, zf_status_str(st), err.msg);
    ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, needle), "%s: %s", path, err.msg);
}

/* Expect ZF_ERR_IO with needle in the message. */
static void expect_io(zf_http *h, const test_server *sv, const char *path, const char *needle)
{
    expect_status(h, sv, path, ZF_ERR_IO, needle);
}

/* What the other origin received so far (NUL-terminated, malloc'd). */
static char *other_log(const test_server *sv)
{
    zf_store_options o = {0};
    zf_http *h = transport(&o, false);
    zf_http_response r;
    zf_err err;
    ck_assert_int_eq(request(h, sv, "_other_log", ZF_HTTP_GET, 0, 0, 0, &r, &err), ZF_OK);
    char *s = strndup((const char *)r.body.data, r.body.len);
    zf_http_response_free(&r);
    zf_http_destroy(h);
    for (char *p = s; *p; p++) /* header names in any case */
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    return s;
}

START_TEST(hostile_signed_redirects)
{
    test_server sv;
    if (!start(&sv))
        return;
    zf_store_options o = {.retries = 1, .timeout = 5};
    zf_http *h = transport(&o, true);
    /* another origin (another port): refused, nothing reaches it */
    expect_io(h, &sv, "bucket/to-other/k", "another origin");
    char *log = other_log(&sv);
    ck_assert_msg(log[0] == '\0', "the other origin got: %s", log);
    free(log);
    /* the same origin: followed, signed again for the new URL */
    zf_http_response r;
    zf_err err;
    ck_assert_msg(request(h, &sv, "bucket/to-same/k", ZF_HTTP_GET, 0, 0, 0, &r, &err) == ZF_OK,
                  "%s", err.msg);
    ck_assert_int_eq(r.status, 200);
    ck_assert_uint_eq(r.body.len, VALUE_LEN);
    ck_assert_mem_eq(r.body.data, value, VALUE_LEN);
    zf_http_response_free(&r);
    ck_assert_msg(request(h, &sv, "bucket/to-same/k", ZF_HTTP_RANGE, 10, 20, 0, &r, &err) == ZF_OK,
                  "%s", err.msg);
    ck_assert_uint_eq(r.body.len, 20);
    ck_assert_mem_eq(r.body.data, value + 10, 20);
    zf_http_response_free(&r);
    /* other schemes, loops */
    expect_io(h, &sv, "bucket/to-file/k", "another origin");
    expect_io(h, &sv, "bucket/to-ftp/k", "another origin");
    expect_io(h, &sv, "bucket/loop/k", "too many redirects");
    zf_http_destroy(h);

    /* the S3 store over the same transport: the same refusal */
    setenv("AWS_ACCESS_KEY_ID", "AKIDHOSTILE", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "secret-must-not-leak", 1);
    setenv("AWS_SESSION_TOKEN", TOKEN, 1);
    char endpoint[64];
    snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%d/", sv.port);
    o = (zf_store_options){.retries = 1, .timeout = 5, .endpoint = endpoint,
                           .region = "us-east-1"};
    zf_store *s;
    ck_assert_msg(zf_store_open("s3://bucket/", &o, &s, &err) == ZF_OK, "%s", err.msg);
    zf_bytes b;
    ck_assert_int_eq(zf_store_get(s, "to-other/k", &b, &err), ZF_ERR_IO);
    ck_assert_msg(strstr(err.msg, "another origin"), "%s", err.msg);
    ck_assert_int_eq(zf_store_get(s, "to-same/k", &b, &err), ZF_OK);
    ck_assert_uint_eq(b.len, VALUE_LEN);
    zf_bytes_free(&b);
    zf_store_close(s);
    unsetenv("AWS_SESSION_TOKEN");
    log = other_log(&sv);
    ck_assert_msg(log[0] == '\0', "the other origin got: %s", log);
    free(log);
    test_server_stop(&sv);
}
END_TEST

START_TEST(hostile_unsigned_redirects)
{
    test_server sv;
    if (!start(&sv))
        return;
    zf_store_options o = {.retries = 1, .timeout = 5};
    /* an HTTP store with a password in its URL: public data may move to another origin, the
     * password does not go along */
    char url[128];
    snprintf(url, sizeof url, "http://user:hunter2@127.0.0.1:%d/", sv.port);
    zf_store *s;
    zf_err err = {""};
    ck_assert_msg(zf_store_open(url, &o, &s, &err) == ZF_OK, "%s", err.msg);
    zf_bytes b;
    ck_assert_msg(zf_store_get(s, "to-other/k", &b, &err) == ZF_OK, "%s", err.msg);
    ck_assert_uint_eq(b.len, 12);
    ck_assert_mem_eq(b.data, "other origin", 12);
    zf_bytes_free(&b);
    zf_store_close(s);
    char *log = other_log(&sv);
    ck_assert_msg(strstr(log, "get /ok/k "), "%s", log);
    ck_assert_msg(!strstr(log, "authorization") && !strstr(log, "hunter2"), "%s", log);
    free(log);
    zf_http *h = transport(&o, false);
    expect_io(h, &sv, "to-file/k", "");
    expect_io(h, &sv, "to-ftp/k", "");
    expect_io(h, &sv, "loop/k", "redirects");
    zf_http_destroy(h);
    test_server_stop(&sv);
}
END_TEST

/* What an HTTP store sent as its Authorization header (the server echoes it; "-": none). */
static char *sent_auth(zf_store *s)
{
    zf_bytes b;
    zf_err err = {""};
    ck_assert_msg(zf_store_get(s, "echo-auth/k", &b, &err) == ZF_OK, "%s", err.msg);
    char *out = strndup((const char *)b.data, b.len);
    zf_bytes_free(&b);
    return out;
}

static zf_store *open_http(const char *url, const zf_store_options *o)
{
    zf_store *s;
    zf_err err = {""};
    ck_assert_msg(zf_store_open(url, o, &s, &err) == ZF_OK, "%s", err.msg);
    return s;
}

static void expect_auth(const char *url, const zf_store_options *o, const char *want)
{
    zf_store *s = open_http(url, o);
    char *got = sent_auth(s);
    ck_assert_msg(strcmp(got, want) == 0, "%s: sent \"%s\", expected \"%s\"", url, got, want);
    free(got);
    zf_store_close(s);
}

/* Credentials of -o credentials and -o netrc: which one a request carries (the file's over the
 * URL's over .netrc), only to the origin the file is for, and never along a redirect to another
 * origin (libcurl drops them: the other server records every request). */
START_TEST(hostile_credentials_stay_home)
{
    test_server sv;
    if (!start(&sv))
        return;
    char home[64], wrong[96], other_origin[64], netrc[128], dir[] = "/tmp/zf-netrc-XXXXXX";
    snprintf(home, sizeof home, "http://127.0.0.1:%d/", sv.port);
    snprintf(wrong, sizeof wrong, "http://u:p@127.0.0.1:%d/", sv.port);
    snprintf(other_origin, sizeof other_origin, "http://127.0.0.1:%d/", sv.port + 1);
    zf_credentials basic = {.http_user = "zfuser", .http_password = "hunter3"};
    zf_credentials bearer = {.bearer_token = "tok-" TOKEN};
    zf_store_options o = {.retries = 1, .timeout = 5, .credentials = &basic,
                          .credentials_url = home};
    expect_auth(home, &o, "Basic emZ1c2VyOmh1bnRlcjM="); /* zfuser:hunter3 */
    expect_auth(wrong, &o, "Basic emZ1c2VyOmh1bnRlcjM="); /* the file's over the URL's */
    o.credentials = &bearer;
    expect_auth(home, &o, "Bearer tok-" TOKEN);
    expect_auth(wrong, &o, "Bearer tok-" TOKEN);
    /* for another origin: not sent (the URL's own are) */
    o.credentials_url = other_origin;
    expect_auth(home, &o, "-");
    expect_auth(wrong, &o, "Basic dTpw"); /* u:p */
    o.credentials_url = home;

    /* .netrc: by host, after the URL's and the file's */
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(netrc, sizeof netrc, "%s/netrc", dir);
    FILE *f = fopen(netrc, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "machine 127.0.0.1\n  login nuser\n  password npw\n");
    fclose(f);
    zf_store_options n = {.retries = 1, .timeout = 5, .netrc = netrc};
    expect_auth(home, &n, "Basic bnVzZXI6bnB3"); /* nuser:npw */
    expect_auth(wrong, &n, "Basic dTpw");
    n.credentials = &basic;
    n.credentials_url = home;
    expect_auth(home, &n, "Basic emZ1c2VyOmh1bnRlcjM=");

    /* redirects to another origin: followed, without any of them. A .netrc entry names a host,
     * whatever the port (as for curl and ftp): its test goes to another host name */
    zf_credentials *each[] = {&basic, &bearer, NULL};
    for (int i = 0; i < 3; i++) {
        zf_store_options r = {.retries = 1, .timeout = 5, .credentials = each[i],
                              .credentials_url = home, .netrc = each[i] ? NULL : netrc};
        zf_store *s = open_http(home, &r);
        zf_bytes b;
        zf_err err = {""};
        ck_assert_msg(zf_store_get(s, each[i] ? "to-other/k" : "to-other-name/k", &b, &err) ==
                          ZF_OK,
                      "%s", err.msg);
        ck_assert_mem_eq(b.data, "other origin", 12);
        zf_bytes_free(&b);
        zf_store_close(s);
    }
    char *log = other_log(&sv);
    ck_assert_msg(strstr(log, "get /ok/k ") && strstr(log, "host: localhost:"), "%s", log);
    ck_assert_msg(!strstr(log, "authorization") && !strstr(log, "hunter3") &&
                      !strstr(log, "tok-") && !strstr(log, "npw"),
                  "%s", log);
    free(log);
    unlink(netrc);
    rmdir(dir);
    test_server_stop(&sv);
}
END_TEST

START_TEST(hostile_headers)
{
    test_server sv;
    if (!start(&sv))
        return;
    zf_store_options o = {.retries = 2, .timeout = 10};
    zf_http *h = transport(&o, false);
    double t0 = now();
    expect_io(h, &sv, "headers-endless/k", "headers larger than 256 KiB");
    expect_io(h, &sv, "header-huge/k", ""); /* libcurl's own limit on one line */
    ck_assert_msg(now() - t0 < 5, "%.1f s", now() - t0); /* refused at once, not retried */
    zf_http_destroy(h);
    test_server_stop(&sv);
}
END_TEST

/* 1 byte each 0.5 s, in the body or in the headers: each attempt ends at the timeout (or earlier,
 * at the low-speed limit), then EIO. */
START_TEST(hostile_slow_drip)
{
    test_server sv;
    if (!start(&sv))
        return;
    zf_store_options o = {.retries = 1, .timeout = 2};
    zf_http *h = transport(&o, false);
    const char *paths[] = {"drip-body/k", "drip-headers/k"};
    for (size_t i = 0; i < 2; i++) {
        double t0 = now();
        zf_http_response r;
        zf_err err;
        ck_assert_int_eq(request(h, &sv, paths[i], ZF_HTTP_GET, 0, 0, 0, &r, &err), ZF_ERR_IO);
        double t = now() - t0;
        ck_assert_msg(strstr(err.msg, paths[i]) && strstr(err.msg, "timed out"), "%s", err.msg);
        /* 2 attempts of at most 2 s, a backoff of at most 0.2 s */
        ck_assert_msg(t < 2 * 2 + 0.2 + 2, "%s: %.1f s: %s", paths[i], t, err.msg);
    }
    zf_http_destroy(h);
    test_server_stop(&sv);
}
END_TEST

START_TEST(hostile_ranges_and_lengths)
{
    test_server sv;
    if (!start(&sv))
        return;
    zf_store_options o = {.retries = 1, .timeout = 5};
    zf_http *h = transport(&o, false);
    zf_http_response r;
    zf_err err;
    /* a range other than asked, more or fewer bytes than the Content-Range says: never wrong
     * bytes */
    const char *paths[] = {"wrong-range/k", "range-longer/k", "range-shorter/k"};
    for (size_t i = 0; i < 3; i++) {
        zf_status st = request(h, &sv, paths[i], ZF_HTTP_RANGE, 100, 50, 0, &r, &err);
        if (st == ZF_OK) {
            ck_assert_uint_eq(r.body.len, 50);
            ck_assert_mem_eq(r.body.data, value + 100, 50);
            zf_http_response_free(&r);
        } else {
            ck_assert_msg(st == ZF_ERR_IO && strstr(err.msg, paths[i]), "%s: %s", paths[i],
                          err.msg);
        }
    }
    /* more bytes than the Content-Length: the value is what the headers said; the rest is not
     * taken for the next answer on that connection */
    ck_assert_int_eq(request(h, &sv, "cl-smaller/k", ZF_HTTP_GET, 0, 0, 0, &r, &err), ZF_OK);
    ck_assert_uint_eq(r.body.len, 100);
    ck_assert_mem_eq(r.body.data, value, 100);
    zf_http_response_free(&r);
    for (int i = 0; i < 4; i++) {
        zf_status st = request(h, &sv, "ok/k", ZF_HTTP_RANGE, 1000, 64, 0, &r, &err);
        ck_assert_msg(st == ZF_OK || st == ZF_ERR_IO, "%s", err.msg);
        if (st == ZF_OK) {
            ck_assert_uint_eq(r.body.len, 64);
            ck_assert_mem_eq(r.body.data, value + 1000, 64);
            zf_http_response_free(&r);
        }
    }
    /* a Content-Length of 1 TiB: refused before anything is allocated; an endless body: cut at
     * the limit */
    double t0 = now();
    expect_status(h, &sv, "huge-cl/k", ZF_ERR_TOO_LARGE,
                  "refusing a value larger than 4096 MiB (1099511627776 bytes announced)");
    zf_status st = request(h, &sv, "endless-body/k", ZF_HTTP_GET, 0, 0, 1 << 20, &r, &err);
    ck_assert_msg(st == ZF_ERR_TOO_LARGE &&
                      strstr(err.msg, "refusing a value larger than 1 MiB (sent without a length"),
                  "%s", err.msg);
    ck_assert_msg(now() - t0 < 10, "%.1f s", now() - t0);
    zf_http_destroy(h);
    test_server_stop(&sv);
}
END_TEST

/* What the server handed to the kernel of the body of its latest `mode` answer (big-cl,
 * no-length), once it stopped sending: the body's end, or the client gone. */
static uint64_t server_sent(const test_server *sv, const char *mode)
{
    zf_store_options o = {0};
    zf_http *h = transport(&o, false);
    char path[64];
    snprintf(path, sizeof path, "_sent/%s", mode);
    unsigned long long bytes = 0;
    int done = 0;
    for (double t0 = now(); !done && now() - t0 < 20;) {
        zf_http_response r;
        zf_err err;
        ck_assert_int_eq(request(h, sv, path, ZF_HTTP_GET, 0, 0, 0, &r, &err), ZF_OK);
        char text[64];
        snprintf(text, sizeof text, "%.*s", (int)r.body.len, (const char *)r.body.data);
        zf_http_response_free(&r);
        ck_assert_int_eq(sscanf(text, "%llu %d", &bytes, &done), 2);
        if (!done)
            nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
    }
    zf_http_destroy(h);
    ck_assert_msg(done, "the server is still sending its %s body", mode);
    return bytes;
}

/* What the kernel may hold of a body the client stopped reading (socket buffers on both sides,
 * libcurl's 256 KiB buffer): a refused body gets no further than this. */
#define IN_FLIGHT ((uint64_t)32 << 20)

/* Expect zf_store_get_bounded(key, max) to refuse the value, with its key, the bound and what
 * (the announced size, or "without a length") in the message. */
static void expect_refused(zf_store *s, const char *key, uint64_t max, const char *what)
{
    zf_bytes b = {0};
    zf_err err = {""};
    double t0 = now();
    zf_status st = zf_store_get_bounded(s, key, max, &b, &err);
    ck_assert_msg(st == ZF_ERR_TOO_LARGE, "%s: %s (%s)", key, zf_status_str(st), err.msg);
    char bound[64];
    if (max % (1 << 20) == 0)
        snprintf(bound, sizeof bound, "refusing a value larger than %llu MiB",
                 (unsigned long long)(max >> 20));
    else
        snprintf(bound, sizeof bound, "refusing a value larger than %llu bytes",
                 (unsigned long long)max);
    ck_assert_msg(strstr(err.msg, key) && strstr(err.msg, bound) && strstr(err.msg, what),
                  "%s: %s", key, err.msg);
    ck_assert_ptr_null(b.data);
    ck_assert_msg(now() - t0 < 5, "%s: %.1f s", key, now() - t0); /* not retried */
}

/* The whole value (n bytes of the server's VALUE repeated), read with bound max. */
static void expect_whole(zf_store *s, const char *key, uint64_t max, size_t n)
{
    zf_bytes b = {0};
    zf_err err = {""};
    ck_assert_msg(zf_store_get_bounded(s, key, max, &b, &err) == ZF_OK, "%s: %s", key, err.msg);
    ck_assert_uint_eq(b.len, n);
    for (size_t i = 0; i < n; i += VALUE_LEN)
        ck_assert_mem_eq(b.data + i, value, n - i < VALUE_LEN ? n - i : VALUE_LEN);
    zf_bytes_free(&b);
}

/* Metadata documents over their bound (docs/security.md, "bounds before bytes"): one announced
 * larger (Content-Length) is refused when its headers end, before its body is read, at the real
 * bound (ZF_JSON_MAX_TEXT: announcing 512 MiB + 1 costs the server nothing) and at 1 MiB; one
 * sent without a length is cut off at the bound. The server counts what it could send. */
START_TEST(hostile_metadata_bounds)
{
    test_server sv;
    if (!start(&sv))
        return;
    zf_store_options o = {.retries = 2, .timeout = 10};
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", sv.port);
    zf_store *s;
    zf_err err = {""};
    ck_assert_msg(zf_store_open(url, &o, &s, &err) == ZF_OK, "%s", err.msg);
    const uint64_t over = ZF_JSON_MAX_TEXT + 1;
    const char *docs[] = {".zarray", "zarr.json", ".zmetadata"};
    for (size_t i = 0; i < 3; i++) {
        char key[96];
        snprintf(key, sizeof key, "big-cl/%llu/g/%s", (unsigned long long)over, docs[i]);
        expect_refused(s, key, ZF_JSON_MAX_TEXT, "(536870913 bytes announced)");
        uint64_t sent = server_sent(&sv, "big-cl");
        ck_assert_msg(sent < IN_FLIGHT, "%s: the server sent %llu bytes", key,
                      (unsigned long long)sent);
    }
    /* at a bound of 1 MiB: one byte over is refused, the bound itself read whole */
    const uint64_t mib = 1 << 20;
    expect_refused(s, "big-cl/1048577/.zarray", mib, "(1048577 bytes announced)");
    ck_assert_uint_lt(server_sent(&sv, "big-cl"), IN_FLIGHT);
    expect_whole(s, "big-cl/1048576/.zarray", mib, mib);
    /* without a length: cut off at the bound (1 TiB would come otherwise) */
    expect_refused(s, "no-length/1099511627776/.zmetadata", mib,
                   "(sent without a length: cut off there)");
    ck_assert_uint_lt(server_sent(&sv, "no-length"), mib + IN_FLIGHT);
    expect_refused(s, "no-length/1048577/zarr.json", mib, "cut off there");
    expect_whole(s, "no-length/1048576/zarr.json", mib, mib);
    /* a bound of 0 is the store's own (4 GiB): a small value passes */
    expect_whole(s, "no-length/5000/zarr.json", 0, 5000);
    zf_store_close(s);

    /* through the disk cache: the same refusal, nothing kept */
    ck_assert_msg(zf_store_open(url, &o, &s, &err) == ZF_OK, "%s", err.msg);
    char cache[] = "/tmp/zf-hostile-dc-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(cache));
    zf_disk_cache_options dco = {.dir = cache, .ttl = 60};
    zf_store *dc;
    ck_assert_msg(zf_store_disk_cache_open(s, &dco, &dc, &err) == ZF_OK, "%s", err.msg);
    for (int pass = 0; pass < 2; pass++) {
        expect_refused(dc, "big-cl/536870913/.zattrs", ZF_JSON_MAX_TEXT,
                       "(536870913 bytes announced)");
        ck_assert_uint_lt(server_sent(&sv, "big-cl"), IN_FLIGHT);
    }
    expect_refused(dc, "no-length/1048577/.zattrs", mib, "cut off there");
    zf_store_close(dc);
    test_remove_tree(cache);

    /* a hierarchy whose .zmetadata announces 512 MiB + 1 (every key does): the mount is refused
     * on the announced size, not after reading 512 MiB */
    snprintf(url, sizeof url, "http://127.0.0.1:%d/big-cl/536870913", sv.port);
    ck_assert_msg(zf_store_open(url, &o, &s, &err) == ZF_OK, "%s", err.msg);
    zf_hierarchy_options ho = {.cache_size = 8 << 20, .threads = 1, .io_threads = 1};
    zf_hierarchy *hy = NULL;
    double t0 = now();
    zf_status st = zf_hierarchy_open(s, url, &ho, &hy, &err); /* takes s */
    uint64_t sent = server_sent(&sv, "big-cl");
    ck_assert_msg(sent < IN_FLIGHT, "the server sent %llu bytes of .zmetadata",
                  (unsigned long long)sent);
    ck_assert_msg(st == ZF_ERR_INVALID, "%s (%s)", zf_status_str(st), err.msg);
    ck_assert_msg(strstr(err.msg, ".zmetadata: JSON document larger than 512 MiB "
                                  "(536870913 bytes announced)"),
                  "%s", err.msg);
    ck_assert_msg(now() - t0 < 10, "%.1f s", now() - t0);
    test_server_stop(&sv);
}
END_TEST

/* An S3 listing that never ends (a new continuation token on every page, with or without
 * entries): ZF_ERR_IO at zf_list_max_entries (lowered here from ZF_LIST_MAX_ENTRIES). */
START_TEST(hostile_endless_listing)
{
    test_server sv;
    if (!start(&sv))
        return;
    setenv("AWS_ACCESS_KEY_ID", "AKIDHOSTILE", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
    char endpoint[64];
    snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%d/", sv.port);
    zf_store_options o = {.retries = 1, .timeout = 5, .endpoint = endpoint, .region = "us-east-1"};
    zf_list_max_entries = 100;
    const char *buckets[] = {"s3://list-endless/", "s3://list-empty-pages/"};
    for (size_t i = 0; i < 2; i++) {
        zf_store *s;
        zf_err err = {""};
        ck_assert_msg(zf_store_open(buckets[i], &o, &s, &err) == ZF_OK, "%s", err.msg);
        zf_store_listing l;
        double t0 = now();
        ck_assert_int_eq(zf_store_list_dir(s, "", &l, &err), ZF_ERR_IO);
        ck_assert_msg(strstr(err.msg, "refusing a listing of more than 100 entries and pages"),
                      "%s", err.msg);
        ck_assert_msg(now() - t0 < 20, "%.1f s", now() - t0);
        zf_store_stats st;
        zf_store_get_stats(s, &st);
        ck_assert_uint_le(st.requests, 100);
        zf_store_close(s);
    }
    zf_list_max_entries = ZF_LIST_MAX_ENTRIES;
    test_server_stop(&sv);
}
END_TEST

TCase *store_hostile_http_tcase(void)
{
    TCase *tc = tcase_create("hostile_http");
    tcase_add_test(tc, hostile_signed_redirects);
    tcase_add_test(tc, hostile_unsigned_redirects);
    tcase_add_test(tc, hostile_credentials_stay_home);
    tcase_add_test(tc, hostile_headers);
    tcase_add_test(tc, hostile_slow_drip);
    tcase_add_test(tc, hostile_ranges_and_lengths);
    tcase_add_test(tc, hostile_endless_listing);
    tcase_add_test(tc, hostile_metadata_bounds);
    return tc;
}
