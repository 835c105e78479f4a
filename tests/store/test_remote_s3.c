/* End-to-end tests of the S3 store against s3_test_server.py on 127.0.0.1, which checks every
 * SigV4 signature as S3 does (s3rver 3.7.1 checks none): keys and list parameters that need
 * encoding, ranges, ListObjectsV2 pages, session tokens, profiles, and the errors a mount must
 * report (bad secret, wrong region, missing bucket, anonymous refused); and writes: PUT and
 * DELETE, signed the same way, retried after 5xx. */
#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store_impl.h"
#include "zarrfs/hierarchy.h"
#include "zarrfs/json.h"
#include "zarrfs/store.h"

#include "store_tests.h"

#define CHUNK 4096
#define ACCESS "AKIDTEST"
#define SECRET "secret/with+chars="
#define TOKEN "TOKEN/x+y="
#define REGION "eu-central-1"

static char root[64], home[64];
static uint8_t pattern[CHUNK];

static void put(const char *rel, const void *data, size_t n)
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

static void setup_env(void)
{
    snprintf(root, sizeof root, "/tmp/zf-s3-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(root));
    snprintf(home, sizeof home, "/tmp/zf-s3-home-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(home));
    setenv("HOME", home, 1);
    const char *vars[] = {"AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_PROFILE",
                          "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",
                          "AWS_ENDPOINT_URL_S3", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        unsetenv(vars[i]);
    setenv("AWS_ACCESS_KEY_ID", ACCESS, 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    for (size_t i = 0; i < CHUNK; i++)
        pattern[i] = (uint8_t)(i * 13 + 5);
    put("zbucket/data.zarr/.zgroup", "{\"zarr_format\": 2}", 18);
    put("zbucket/data.zarr/a/.zarray", "{}", 2);
    put("zbucket/data.zarr/a/0.0", pattern, CHUNK);
    put("zbucket/data.zarr/a b/x&y+z=w", "odd", 3);
    put("zbucket/data.zarr/caf\xc3\xa9/~t%", "utf", 3);
    put("zbucket/data.zarr/empty", "", 0);
    put("zbucket/data.zarr/flaky/chunk", pattern, CHUNK);
    for (int i = 0; i < 7; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "zbucket/data.zarr/many/k%d", i);
        put(rel, "k", 1);
    }
    put("zbucket/outside", "x", 1);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static void cleanup(void)
{
    nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    nftw(home, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static bool start(test_server *sv, const char *token)
{
    const char *argv[] = {TEST_PYTHON, "-u", STORE_TEST_SRCDIR "/s3_test_server.py", root,
                          ACCESS, SECRET, REGION, token, NULL};
    return test_server_start(sv, argv, NULL, false);
}

static zf_status open_s3(const test_server *sv, const char *url, zf_store_options *o,
                         zf_store **s, zf_err *err)
{
    static char endpoint[64];
    snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%d/", sv->port);
    o->endpoint = endpoint;
    if (!o->region)
        o->region = REGION;
    return zf_store_open(url, o, s, err);
}

static int entry(const zf_store_listing *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->entries[i].name, name) == 0)
            return l->entries[i].is_prefix ? 2 : 1;
    return 0;
}

static void expect_get(zf_store *s, const char *key, const void *want, size_t n)
{
    zf_bytes b;
    zf_err err = {""};
    ck_assert_msg(zf_store_get(s, key, &b, &err) == ZF_OK, "%s: %s", key, err.msg);
    ck_assert_uint_eq(b.len, n);
    ck_assert_int_eq(memcmp(b.data, want, n), 0);
    zf_bytes_free(&b);
}

START_TEST(s3_signed_requests)
{
    setup_env();
    setenv("AWS_SESSION_TOKEN", TOKEN, 1);
    test_server sv;
    if (!start(&sv, TOKEN))
        return;
    zf_store *s;
    zf_err err = {""};
    zf_store_options o = {.retries = 3};
    ck_assert_msg(open_s3(&sv, "s3://zbucket/data.zarr/", &o, &s, &err) == ZF_OK, "%s", err.msg);
    ck_assert(zf_store_is_remote(s));
    expect_get(s, ".zgroup", "{\"zarr_format\": 2}", 18);
    expect_get(s, "a/0.0", pattern, CHUNK);
    expect_get(s, "a b/x&y+z=w", "odd", 3);
    expect_get(s, "caf\xc3\xa9/~t%", "utf", 3);
    expect_get(s, "empty", "", 0);
    zf_bytes b;
    ck_assert_int_eq(zf_store_get(s, "missing", &b, &err), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(zf_store_get(s, "a", &b, &err), ZF_ERR_NOT_FOUND);
    /* ranges */
    ck_assert_int_eq(zf_store_get_partial(s, "a/0.0", 1000, 24, &b, &err), ZF_OK);
    ck_assert_uint_eq(b.len, 24);
    ck_assert_int_eq(memcmp(b.data, pattern + 1000, 24), 0);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get_partial(s, "a/0.0", CHUNK, 24, &b, &err), ZF_OK);
    ck_assert_uint_eq(b.len, 0);
    zf_bytes_free(&b);
    uint64_t total;
    ck_assert_int_eq(zf_store_get_suffix(s, "a/0.0", 100, &b, &total, &err), ZF_OK);
    ck_assert_uint_eq(total, CHUNK);
    ck_assert_uint_eq(b.len, 100);
    ck_assert_int_eq(memcmp(b.data, pattern + CHUNK - 100, 100), 0);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get_suffix(s, "empty", 100, &b, &total, &err), ZF_OK);
    ck_assert_uint_eq(total, 0);
    ck_assert_uint_eq(b.len, 0);
    zf_bytes_free(&b);
    uint64_t size;
    struct timespec mt;
    ck_assert_int_eq(zf_store_stat(s, "a/0.0", &size, &mt, &err), ZF_OK);
    ck_assert_uint_eq(size, CHUNK);
    ck_assert(mt.tv_sec > 1600000000);
    ck_assert_int_eq(zf_store_stat(s, "nope", &size, &mt, &err), ZF_ERR_NOT_FOUND);
    /* listings, two names a page: continuation tokens with '+', '/' and '=' */
    zf_s3_list_max_keys = 2;
    zf_store_listing l;
    ck_assert_msg(zf_store_list_dir(s, "", &l, &err) == ZF_OK, "%s", err.msg);
    ck_assert_uint_eq(l.n, 7);
    ck_assert_int_eq(entry(&l, ".zgroup"), 1);
    ck_assert_int_eq(entry(&l, "a"), 2);
    ck_assert_int_eq(entry(&l, "a b"), 2);
    ck_assert_int_eq(entry(&l, "caf\xc3\xa9"), 2);
    ck_assert_int_eq(entry(&l, "empty"), 1);
    ck_assert_int_eq(entry(&l, "flaky"), 2);
    ck_assert_int_eq(entry(&l, "many"), 2);
    zf_store_listing_free(&l);
    ck_assert_int_eq(zf_store_list_dir(s, "many", &l, &err), ZF_OK);
    ck_assert_uint_eq(l.n, 7);
    ck_assert_int_eq(entry(&l, "k6"), 1);
    zf_store_listing_free(&l);
    ck_assert_int_eq(zf_store_list_dir(s, "a b", &l, &err), ZF_OK);
    ck_assert_uint_eq(l.n, 1);
    ck_assert_int_eq(entry(&l, "x&y+z=w"), 1);
    zf_store_listing_free(&l);
    ck_assert_int_eq(zf_store_list_dir(s, "caf\xc3\xa9", &l, &err), ZF_OK);
    ck_assert_int_eq(entry(&l, "~t%"), 1);
    zf_store_listing_free(&l);
    ck_assert_int_eq(zf_store_list_dir(s, "nothing", &l, &err), ZF_ERR_NOT_FOUND);
    zf_s3_list_max_keys = 0;
    zf_store_stats st;
    zf_store_get_stats(s, &st);
    ck_assert_uint_eq(st.errors, 0);
    ck_assert_uint_eq(st.retries, 0);
    /* 503 SlowDown twice */
    expect_get(s, "flaky/chunk", pattern, CHUNK);
    zf_store_get_stats(s, &st);
    ck_assert_uint_eq(st.retries, 2);
    zf_store_close(s);
    /* the whole bucket */
    o = (zf_store_options){0};
    ck_assert_int_eq(open_s3(&sv, "s3://zbucket", &o, &s, &err), ZF_OK);
    expect_get(s, "outside", "x", 1);
    ck_assert_int_eq(zf_store_list_dir(s, "", &l, &err), ZF_OK);
    ck_assert_uint_eq(l.n, 2);
    ck_assert_int_eq(entry(&l, "data.zarr"), 2);
    zf_store_listing_free(&l);
    zf_store_close(s);
    test_server_stop(&sv);
    cleanup();
}
END_TEST

/* get and list_dir fail saying what; so does stat (HEAD), but it has no error document to tell a
 * missing bucket from a missing key (a 404 is "not found" there). */
static void expect_failure(zf_store *s, const char *what)
{
    zf_bytes b;
    zf_err err = {""};
    ck_assert_int_eq(zf_store_get(s, ".zgroup", &b, &err), ZF_ERR_IO);
    ck_assert_msg(strstr(err.msg, what), "%s", err.msg);
    ck_assert_msg(!strstr(err.msg, SECRET) && !strstr(err.msg, "wrong-secret"), "%s", err.msg);
    zf_store_listing l;
    ck_assert_int_eq(zf_store_list_dir(s, "", &l, &err), ZF_ERR_IO);
    ck_assert_msg(strstr(err.msg, what), "%s", err.msg);
    uint64_t size;
    ck_assert_int_eq(zf_store_stat(s, ".zgroup", &size, NULL, &err),
                     strstr(what, "does not exist") ? ZF_ERR_NOT_FOUND : ZF_ERR_IO);
    zf_store_close(s);
}

START_TEST(s3_errors_and_profiles)
{
    setup_env();
    test_server sv;
    if (!start(&sv, NULL))
        return;
    zf_store *s;
    zf_err err = {""};
    zf_store_options o = {0};
    /* a wrong secret: access denied, said at once (not "not found") */
    setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret", 1);
    ck_assert_int_eq(open_s3(&sv, "s3://zbucket/data.zarr", &o, &s, &err), ZF_OK);
    expect_failure(s, "access denied, 403 Forbidden (SignatureDoesNotMatch");
    setenv("AWS_ACCESS_KEY_ID", "AKIDOTHER", 1);
    ck_assert_int_eq(open_s3(&sv, "s3://zbucket/data.zarr", &o, &s, &err), ZF_OK);
    expect_failure(s, "InvalidAccessKeyId");
    setenv("AWS_ACCESS_KEY_ID", ACCESS, 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    /* the wrong region */
    o.region = "us-west-2";
    ck_assert_int_eq(open_s3(&sv, "s3://zbucket/data.zarr", &o, &s, &err), ZF_OK);
    expect_failure(s, "400 Bad Request (AuthorizationHeaderMalformed: the region 'us-west-2'");
    o.region = NULL;
    /* no such bucket */
    ck_assert_int_eq(open_s3(&sv, "s3://nobucket/data.zarr", &o, &s, &err), ZF_OK);
    expect_failure(s, "bucket \"nobucket\" does not exist");
    /* anonymous requests to a bucket that wants signed ones */
    o.anonymous = true;
    ck_assert_int_eq(open_s3(&sv, "s3://zbucket/data.zarr", &o, &s, &err), ZF_OK);
    expect_failure(s, "access denied, 403 Forbidden (AccessDenied: Access Denied) with no "
                      "credentials (-o anonymous)");
    o.anonymous = false;
    /* credentials from a profile of the shared credentials file */
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    char path[128];
    snprintf(path, sizeof path, "%s/creds", home);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "[default]\naws_access_key_id = AKIDOTHER\naws_secret_access_key = x\n\n"
               "# the test account\n[test]\naws_access_key_id = %s\n"
               "aws_secret_access_key = %s\n", ACCESS, SECRET);
    fclose(f);
    setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
    o.profile = "test";
    ck_assert_int_eq(open_s3(&sv, "s3://zbucket/data.zarr", &o, &s, &err), ZF_OK);
    expect_get(s, ".zgroup", "{\"zarr_format\": 2}", 18);
    zf_store_close(s);
    o.profile = NULL;
    ck_assert_int_eq(open_s3(&sv, "s3://zbucket/data.zarr", &o, &s, &err), ZF_OK);
    expect_failure(s, "InvalidAccessKeyId");
    test_server_stop(&sv);
    cleanup();
}
END_TEST

/* The bytes of the server's file for rel (below root), or NULL when there is none. */
static uint8_t *server_file(const char *rel, size_t *n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    size_t r;
    while ((r = fread(buf + len, 1, cap - len, f)) > 0) {
        len += r;
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            ck_assert_ptr_nonnull(buf);
        }
    }
    fclose(f);
    *n = len;
    return buf;
}

static void expect_server_file(const char *rel, const void *want, size_t n)
{
    size_t len;
    uint8_t *got = server_file(rel, &len);
    ck_assert_msg(got != NULL, "%s: not stored", rel);
    ck_assert_uint_eq(len, n);
    ck_assert(n == 0 || memcmp(got, want, n) == 0);
    free(got);
}

static void s3_set_ok(zf_store *s, const char *key, const void *data, size_t n)
{
    zf_err err = {""};
    ck_assert_msg(zf_store_set(s, key, data, n, &err) == ZF_OK, "%s: %s", key, err.msg);
}

START_TEST(s3_writes)
{
    setup_env();
    setenv("AWS_SESSION_TOKEN", TOKEN, 1); /* signed with the token, as reads are */
    test_server sv;
    if (!start(&sv, TOKEN))
        return;
    zf_store *s;
    zf_err err = {""};
    zf_store_options o = {.retries = 3};
    ck_assert_msg(open_s3(&sv, "s3://zbucket/data.zarr", &o, &s, &err) == ZF_OK, "%s", err.msg);
    ck_assert(zf_store_is_writable(s));
    /* round trips: new, replaced, empty */
    s3_set_ok(s, "new/0.0", pattern, CHUNK);
    expect_get(s, "new/0.0", pattern, CHUNK);
    expect_server_file("zbucket/data.zarr/new/0.0", pattern, CHUNK);
    s3_set_ok(s, "new/0.0", "short", 5);
    expect_get(s, "new/0.0", "short", 5);
    s3_set_ok(s, ".zgroup", "{\"zarr_format\": 2, \"x\": 1}", 26);
    expect_get(s, ".zgroup", "{\"zarr_format\": 2, \"x\": 1}", 26);
    s3_set_ok(s, "new/empty", "", 0);
    expect_get(s, "new/empty", "", 0);
    expect_server_file("zbucket/data.zarr/new/empty", "", 0);
    s3_set_ok(s, "a/0.0", NULL, 0);
    expect_get(s, "a/0.0", "", 0);
    /* keys that need encoding, as the signature wants them */
    const char *odd[] = {"a b/x&y+z=w 2", "caf\xc3\xa9/~t%2", "sp%20ace", "q?x=1#f", "semi;colon,"};
    for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
        s3_set_ok(s, odd[i], odd[i], strlen(odd[i]));
        expect_get(s, odd[i], odd[i], strlen(odd[i]));
        char rel[128];
        snprintf(rel, sizeof rel, "zbucket/data.zarr/%s", odd[i]);
        expect_server_file(rel, odd[i], strlen(odd[i]));
    }
    zf_store_listing l;
    ck_assert_int_eq(zf_store_list_dir(s, "new", &l, &err), ZF_OK);
    ck_assert_uint_eq(l.n, 2);
    ck_assert_int_eq(entry(&l, "0.0"), 1);
    zf_store_listing_free(&l);
    /* a value above libcurl's 1 MiB threshold for "Expect: 100-continue" */
    size_t big_n = (3u << 20) + 17;
    uint8_t *big = malloc(big_n);
    ck_assert_ptr_nonnull(big);
    for (size_t i = 0; i < big_n; i++)
        big[i] = (uint8_t)(i * 31 + (i >> 12));
    s3_set_ok(s, "big/0", big, big_n);
    expect_server_file("zbucket/data.zarr/big/0", big, big_n);
    /* erase: present, absent, then nothing listed */
    ck_assert_int_eq(zf_store_erase(s, "new/0.0", &err), ZF_OK);
    zf_bytes b;
    ck_assert_int_eq(zf_store_get(s, "new/0.0", &b, &err), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(zf_store_erase(s, "new/0.0", &err), ZF_OK);
    ck_assert_int_eq(zf_store_erase(s, "never/there", &err), ZF_OK);
    ck_assert_int_eq(zf_store_erase(s, "new/empty", &err), ZF_OK);
    ck_assert_int_eq(zf_store_list_dir(s, "new", &l, &err), ZF_ERR_NOT_FOUND);
    /* no directories: remove_dir has nothing to do, and sends nothing */
    zf_store_stats st0, st;
    zf_store_get_stats(s, &st0);
    ck_assert_int_eq(zf_store_remove_dir(s, "new", &err), ZF_OK);
    ck_assert_int_eq(zf_store_remove_dir(s, "a", &err), ZF_OK);
    expect_get(s, "a/.zarray", "{}", 2);
    zf_store_get_stats(s, &st);
    ck_assert_uint_eq(st.writes, st0.writes);
    /* 503 SlowDown twice, then stored whole; a DELETE likewise */
    s3_set_ok(s, "flaky/new", big, 100000);
    zf_store_get_stats(s, &st);
    ck_assert_uint_eq(st.retries - st0.retries, 2);
    expect_server_file("zbucket/data.zarr/flaky/new", big, 100000);
    ck_assert_int_eq(zf_store_erase(s, "flaky/new", &err), ZF_OK);
    zf_store_get_stats(s, &st);
    ck_assert_uint_eq(st.retries - st0.retries, 4);
    ck_assert_ptr_null(server_file("zbucket/data.zarr/flaky/new", &big_n));
    /* 500 every time: retried, then the server's answer, naming the key */
    ck_assert_int_eq(zf_store_set(s, "broken/k", (const uint8_t *)"x", 1, &err), ZF_ERR_IO);
    ck_assert_msg(strstr(err.msg, "broken/k: 500 Internal Server Error after 3 retries"),
                  "%s", err.msg);
    ck_assert_int_eq(zf_store_erase(s, "broken/k", &err), ZF_ERR_IO);
    zf_store_get_stats(s, &st);
    ck_assert_uint_eq(st.retries - st0.retries, 10);
    ck_assert_uint_eq(st.writes - st0.writes, 4);
    ck_assert_uint_eq(st.bytes_written - st0.bytes_written, 100000);
    ck_assert_uint_eq(st.errors - st0.errors, 2);
    zf_store_close(s);
    /* a missing bucket is an error for writes too */
    o = (zf_store_options){.retries = 0};
    ck_assert_int_eq(open_s3(&sv, "s3://nobucket/data.zarr", &o, &s, &err), ZF_OK);
    ck_assert_int_eq(zf_store_set(s, "k", (const uint8_t *)"x", 1, &err), ZF_ERR_IO);
    ck_assert_msg(strstr(err.msg, "bucket \"nobucket\" does not exist"), "%s", err.msg);
    ck_assert_int_eq(zf_store_erase(s, "k", &err), ZF_ERR_IO);
    ck_assert_msg(strstr(err.msg, "bucket \"nobucket\" does not exist"), "%s", err.msg);
    zf_store_close(s);
    free(big);
    test_server_stop(&sv);
    cleanup();
}
END_TEST

START_TEST(s3_write_errors)
{
    setup_env();
    test_server sv;
    if (!start(&sv, NULL))
        return;
    zf_store *s;
    zf_err err = {""};
    zf_store_options o = {0};
    /* a wrong secret: access denied, naming where the credentials came from, never the secret */
    setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret", 1);
    ck_assert_int_eq(open_s3(&sv, "s3://zbucket/data.zarr", &o, &s, &err), ZF_OK);
    ck_assert_int_eq(zf_store_set(s, "a/1.0", pattern, 100, &err), ZF_ERR_IO);
    ck_assert_msg(strstr(err.msg, "a/1.0: access denied, 403 Forbidden (SignatureDoesNotMatch") &&
                      strstr(err.msg, "environment"),
                  "%s", err.msg);
    ck_assert_msg(!strstr(err.msg, "wrong-secret") && !strstr(err.msg, SECRET), "%s", err.msg);
    ck_assert_int_eq(zf_store_erase(s, "a/0.0", &err), ZF_ERR_IO);
    ck_assert_msg(strstr(err.msg, "access denied") && !strstr(err.msg, "wrong-secret"), "%s",
                  err.msg);
    zf_store_close(s);
    ck_assert_ptr_null(server_file("zbucket/data.zarr/a/1.0", &(size_t){0}));
    expect_server_file("zbucket/data.zarr/a/0.0", pattern, CHUNK);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    /* anonymous: tried, and the server's refusal reported (not ZF_ERR_READONLY) */
    o.anonymous = true;
    ck_assert_int_eq(open_s3(&sv, "s3://zbucket/data.zarr", &o, &s, &err), ZF_OK);
    ck_assert(zf_store_is_writable(s));
    ck_assert_int_eq(zf_store_set(s, "a/1.0", pattern, 100, &err), ZF_ERR_IO);
    ck_assert_msg(strstr(err.msg, "access denied, 403 Forbidden (AccessDenied: Access Denied) "
                                  "with no credentials (-o anonymous)"),
                  "%s", err.msg);
    ck_assert_int_eq(zf_store_erase(s, "a/0.0", &err), ZF_ERR_IO);
    zf_store_close(s);
    expect_server_file("zbucket/data.zarr/a/0.0", pattern, CHUNK);
    test_server_stop(&sv);
    cleanup();
}
END_TEST

/* Conditional writes (If-Match / If-None-Match: *, signed like every header): the server answers
 * 412 when the object changed, which is ZF_ERR_CONFLICT, not an error; the object stays as it was. */
START_TEST(s3_conditional_writes)
{
    setup_env();
    test_server sv;
    if (!start(&sv, NULL))
        return;
    zf_store *s;
    zf_err err = {""};
    zf_store_options o = {.retries = 1};
    ck_assert_msg(open_s3(&sv, "s3://zbucket/data.zarr", &o, &s, &err) == ZF_OK, "%s", err.msg);
    ck_assert_int_eq(zf_store_set_if(s, "cas/k", (const uint8_t *)"one", 3, NULL, &err), ZF_OK);
    expect_server_file("zbucket/data.zarr/cas/k", "one", 3);
    ck_assert_int_eq(zf_store_set_if(s, "cas/k", (const uint8_t *)"two", 3, NULL, &err),
                     ZF_ERR_CONFLICT);
    ck_assert_msg(strstr(err.msg, "cas/k: changed by another writer"), "%s", err.msg);
    zf_bytes b;
    zf_store_version v;
    ck_assert_int_eq(zf_store_read_versioned(s, "cas/k", ZF_READ_ALL, 0, 0, &b, &v, &err), ZF_OK);
    zf_bytes_free(&b);
    ck_assert_msg(v.etag[0] == '"', "%s", v.etag);
    ck_assert_int_eq(zf_store_set_if(s, "cas/k", (const uint8_t *)"two", 3, &v, &err), ZF_OK);
    expect_server_file("zbucket/data.zarr/cas/k", "two", 3);
    ck_assert_int_eq(zf_store_set_if(s, "cas/k", (const uint8_t *)"three", 5, &v, &err),
                     ZF_ERR_CONFLICT);
    expect_server_file("zbucket/data.zarr/cas/k", "two", 3);
    /* conditional DELETE: refused with the old version, done with the current one */
    ck_assert_int_eq(zf_store_erase_if(s, "cas/k", &v, &err), ZF_ERR_CONFLICT);
    expect_server_file("zbucket/data.zarr/cas/k", "two", 3);
    ck_assert_int_eq(zf_store_read_versioned(s, "cas/k", ZF_READ_ALL, 0, 0, &b, &v, &err), ZF_OK);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_erase_if(s, "cas/k", &v, &err), ZF_OK);
    ck_assert_ptr_null(server_file("zbucket/data.zarr/cas/k", &(size_t){0}));
    ck_assert_int_eq(zf_store_erase_if(s, "cas/k", &v, &err), ZF_ERR_CONFLICT);
    zf_store_stats st;
    zf_store_get_stats(s, &st);
    ck_assert_uint_eq(st.errors, 0);
    ck_assert_uint_eq(st.retries, 0); /* a 412 is an answer, not retried */
    zf_store_close(s);
    test_server_stop(&sv);
    cleanup();
}
END_TEST

/* The bytes the server handed to the kernel of its latest "huge" body, once it stopped sending
 * (huge.sent, written by s3_test_server.py), and removes the file. */
static uint64_t huge_sent(void)
{
    size_t n = 0;
    uint8_t *text = NULL;
    for (int i = 0; i < 1000 && !(text = server_file("huge.sent", &n)); i++)
        nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
    ck_assert_msg(text, "the server is still sending");
    char num[32];
    snprintf(num, sizeof num, "%.*s", (int)n, (const char *)text);
    free(text);
    char path[512];
    snprintf(path, sizeof path, "%s/huge.sent", root);
    unlink(path);
    return strtoull(num, NULL, 10);
}

/* An object whose Content-Length is over the bound of a metadata document (512 MiB + 1): refused
 * when the headers end, before its body is read (docs/security.md, "bounds before bytes"); so is
 * the mount of a hierarchy whose .zmetadata is one. */
START_TEST(s3_metadata_bound)
{
    setup_env();
    test_server sv;
    if (!start(&sv, NULL))
        return;
    zf_store *s;
    zf_err err = {""};
    zf_store_options o = {.retries = 2};
    ck_assert_msg(open_s3(&sv, "s3://zbucket/data.zarr", &o, &s, &err) == ZF_OK, "%s", err.msg);
    zf_bytes b = {0};
    const char *keys[] = {"huge/.zarray", "huge/zarr.json"};
    for (size_t i = 0; i < 2; i++) {
        ck_assert_int_eq(zf_store_get_bounded(s, keys[i], ZF_JSON_MAX_TEXT, &b, &err),
                         ZF_ERR_TOO_LARGE);
        ck_assert_msg(strstr(err.msg, keys[i]) &&
                          strstr(err.msg, "refusing a value larger than 512 MiB (536870913 bytes "
                                          "announced)"),
                      "%s", err.msg);
        uint64_t sent = huge_sent();
        ck_assert_msg(sent < (32u << 20), "%s: the server sent %llu bytes", keys[i],
                      (unsigned long long)sent);
    }
    expect_get(s, "a/0.0", pattern, CHUNK); /* the store goes on */
    zf_store_stats st;
    zf_store_get_stats(s, &st);
    ck_assert_uint_eq(st.retries, 0); /* refused, not retried */
    zf_store_close(s);

    ck_assert_msg(open_s3(&sv, "s3://zbucket/data.zarr/huge", &o, &s, &err) == ZF_OK, "%s",
                  err.msg);
    zf_hierarchy_options ho = {.cache_size = 8 << 20, .threads = 1, .io_threads = 1};
    zf_hierarchy *h = NULL;
    zf_status rc = zf_hierarchy_open(s, "s3://zbucket/data.zarr/huge", &ho, &h, &err);
    uint64_t sent = huge_sent();
    ck_assert_msg(sent < (32u << 20), ".zmetadata: the server sent %llu bytes",
                  (unsigned long long)sent);
    ck_assert_msg(rc == ZF_ERR_INVALID && strstr(err.msg, ".zmetadata: JSON document larger "
                                                          "than 512 MiB (536870913 bytes "
                                                          "announced)"),
                  "%s: %s", zf_status_str(rc), err.msg);
    test_server_stop(&sv);
    cleanup();
}
END_TEST

TCase *store_s3_tcase(void)
{
    TCase *tc = tcase_create("s3");
    tcase_add_test(tc, s3_signed_requests);
    tcase_add_test(tc, s3_errors_and_profiles);
    tcase_add_test(tc, s3_writes);
    tcase_add_test(tc, s3_write_errors);
    tcase_add_test(tc, s3_conditional_writes);
    tcase_add_test(tc, s3_metadata_bound);
    return tc;
}
