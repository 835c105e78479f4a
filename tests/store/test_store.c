/* Unit tests for the local file-system store: keys, get/partial/stat/list, confinement. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zarrfs/store.h"

#include "store_tests.h"

static char root[256], outside[256];

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void setup(void)
{
    char tmpl[] = "/tmp/zf-store-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    snprintf(root, sizeof root, "%s/store", tmpl);
    snprintf(outside, sizeof outside, "%s/secret", tmpl);
    mkdir(root, 0755);
    char p[512];
    write_file(outside, "SECRET");
    snprintf(p, sizeof p, "%s/a", root);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/a/.zarray", root);
    write_file(p, "0123456789");
    snprintf(p, sizeof p, "%s/link", root); /* an absolute symlink out of the store */
    ck_assert_int_eq(symlink(outside, p), 0);
    snprintf(p, sizeof p, "%s/a/rel", root); /* a relative one */
    ck_assert_int_eq(symlink("../../secret", p), 0);
    snprintf(p, sizeof p, "%s/inside", root); /* a symlink that stays inside is fine */
    ck_assert_int_eq(symlink("a/.zarray", p), 0);
}

START_TEST(key_validation)
{
    const char *good[] = {"a", "a/b", ".zarray", "a/.zgroup", "0.0", "c/0/1", "..x", "x.."};
    const char *bad[] = {"", "/a", "a//b", "a/", "..", "../a", "a/../b", "a/..", ".", "./a",
                         "a/./b", "a\\b"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        ck_assert_msg(zf_key_is_valid(good[i]), "%s", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(!zf_key_is_valid(bad[i]), "%s", bad[i]);
}
END_TEST

START_TEST(get_partial_stat_list)
{
    setup();
    zf_store *s;
    zf_err err = {""};
    ck_assert_int_eq(zf_store_open(root, NULL, &s, &err), ZF_OK);
    zf_bytes b;
    ck_assert_int_eq(zf_store_get(s, "a/.zarray", &b, &err), ZF_OK);
    ck_assert_uint_eq(b.len, 10);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get_partial(s, "a/.zarray", 3, 4, &b, &err), ZF_OK);
    ck_assert_uint_eq(b.len, 4);
    ck_assert_int_eq(memcmp(b.data, "3456", 4), 0);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get_partial(s, "a/.zarray", 8, 100, &b, &err), ZF_OK);
    ck_assert_uint_eq(b.len, 2);
    zf_bytes_free(&b);
    uint64_t total = 0;
    ck_assert_int_eq(zf_store_get_suffix(s, "a/.zarray", 3, &b, &total, &err), ZF_OK);
    ck_assert_uint_eq(total, 10);
    ck_assert_uint_eq(b.len, 3);
    ck_assert_int_eq(memcmp(b.data, "789", 3), 0);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get_suffix(s, "a/.zarray", 50, &b, &total, &err), ZF_OK);
    ck_assert_uint_eq(b.len, 10);
    ck_assert_int_eq(memcmp(b.data, "0123456789", 10), 0);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get_suffix(s, "a/missing", 3, &b, &total, &err), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(zf_store_get_suffix(s, "../x", 3, &b, &total, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(zf_store_get(s, "a/missing", &b, &err), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(zf_store_get(s, "a/.zarray/x", &b, &err), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(zf_store_get(s, "a", &b, &err), ZF_ERR_NOT_FOUND); /* a directory */
    uint64_t size;
    struct timespec mt;
    ck_assert_int_eq(zf_store_stat(s, "a/.zarray", &size, &mt, &err), ZF_OK);
    ck_assert_uint_eq(size, 10);
    ck_assert(mt.tv_sec > 0);
    zf_store_listing l;
    ck_assert_int_eq(zf_store_list_dir(s, "", &l, &err), ZF_OK);
    int saw_a = 0;
    for (size_t i = 0; i < l.n; i++)
        if (strcmp(l.entries[i].name, "a") == 0)
            saw_a = l.entries[i].is_prefix;
    ck_assert(saw_a);
    zf_store_listing_free(&l);
    ck_assert_int_eq(zf_store_get(s, "inside", &b, &err), ZF_OK);
    zf_bytes_free(&b);
    zf_store_close(s);
}
END_TEST

START_TEST(never_leaves_the_store)
{
    setup();
    zf_store *s;
    zf_err err = {""};
    ck_assert_int_eq(zf_store_open(root, NULL, &s, &err), ZF_OK);
    zf_bytes b;
    ck_assert_int_eq(zf_store_get(s, "../secret", &b, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(zf_store_get(s, "a/../../secret", &b, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(zf_store_get(s, "/etc/passwd", &b, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(zf_store_get(s, "link", &b, &err), ZF_ERR_IO);
    ck_assert_msg(strstr(err.msg, "refusing") != NULL, "%s", err.msg);
    ck_assert_int_eq(zf_store_get(s, "a/rel", &b, &err), ZF_ERR_IO);
    ck_assert_int_eq(zf_store_stat(s, "link", NULL, NULL, &err), ZF_ERR_IO);
    ck_assert_int_eq(zf_store_list_dir(s, "..", NULL, &err), ZF_ERR_INVALID);
    zf_store_close(s);
}
END_TEST

START_TEST(open_errors)
{
    zf_store *s;
    zf_err err = {""};
    ck_assert_int_eq(zf_store_open("/nonexistent/zarrfs", NULL, &s, &err), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(zf_store_open("/etc/hostname", NULL, &s, &err), ZF_ERR_IO);
    ck_assert_msg(strstr(err.msg, "not a directory") != NULL, "%s", err.msg);
    ck_assert_int_eq(zf_store_open("gopher://x/y", NULL, &s, &err), ZF_ERR_UNSUPPORTED);
}
END_TEST

TCase *store_file_tcase(void)
{
    TCase *tc = tcase_create("file");
    tcase_add_test(tc, key_validation);
    tcase_add_test(tc, get_partial_stat_list);
    tcase_add_test(tc, never_leaves_the_store);
    tcase_add_test(tc, open_errors);
    return tc;
}
