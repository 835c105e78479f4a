/* test_write.c — store writes: the local store (atomic replacement through temporary files,
 * parents made on the way, erase, remove_dir, confinement beneath the root, temporary files
 * never shown), the HTTP store's refusal, and counters. The S3 store's writes are tested in
 * test_remote_s3.c, next to its reads. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zarrfs/store.h"

#include "store_tests.h"

static char base[64], root[128], outside[128];

static void put_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* base/store (the root) and base/outside (a directory the store must never touch). */
static zf_store *setup(void)
{
    snprintf(base, sizeof base, "/tmp/zf-write-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(base));
    snprintf(root, sizeof root, "%s/store", base);
    snprintf(outside, sizeof outside, "%s/outside", base);
    ck_assert_int_eq(mkdir(root, 0755), 0);
    ck_assert_int_eq(mkdir(outside, 0755), 0);
    zf_store *s;
    zf_err err = {""};
    ck_assert_int_eq(zf_store_open(root, NULL, &s, &err), ZF_OK);
    return s;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    chmod(path, 0755);
    return remove(path);
}

static void teardown(zf_store *s)
{
    zf_store_close(s);
    nftw(base, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int n_temps;
static int count_temp(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag;
    if (strstr(path + ftw->base, ".zarrfs-"))
        n_temps++;
    return 0;
}

/* Temporary files anywhere below base. */
static int temps(void)
{
    n_temps = 0;
    nftw(base, count_temp, 16, FTW_PHYS);
    return n_temps;
}

static int n_entries;
static int count_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)path, (void)sb, (void)flag;
    if (ftw->level > 0)
        n_entries++;
    return 0;
}

/* Entries below dir, dir excluded. */
static int entries(const char *dir)
{
    n_entries = 0;
    nftw(dir, count_entry, 16, FTW_PHYS);
    return n_entries;
}

static void expect_value(zf_store *s, const char *key, const void *want, size_t n)
{
    zf_bytes b;
    zf_err err = {""};
    ck_assert_msg(zf_store_get(s, key, &b, &err) == ZF_OK, "%s: %s", key, err.msg);
    ck_assert_uint_eq(b.len, n);
    ck_assert(n == 0 || memcmp(b.data, want, n) == 0);
    zf_bytes_free(&b);
}

static zf_status try_set(zf_store *s, const char *key, const void *data, size_t n, zf_err *err)
{
    return zf_store_set(s, key, data, n, err);
}

static void set_ok(zf_store *s, const char *key, const void *data, size_t n)
{
    zf_err err = {""};
    ck_assert_msg(zf_store_set(s, key, data, n, &err) == ZF_OK, "%s: %s", key, err.msg);
}

static bool exists(const char *dir, const char *rel)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    struct stat sb;
    return lstat(p, &sb) == 0;
}

static int listed(zf_store *s, const char *prefix, const char *name)
{
    zf_store_listing l;
    zf_err err = {""};
    ck_assert_msg(zf_store_list_dir(s, prefix, &l, &err) == ZF_OK, "%s: %s", prefix, err.msg);
    int found = 0;
    for (size_t i = 0; i < l.n; i++)
        if (strcmp(l.entries[i].name, name) == 0)
            found = l.entries[i].is_prefix ? 2 : 1;
    zf_store_listing_free(&l);
    return found;
}

START_TEST(file_set_get_replace)
{
    zf_store *s = setup();
    ck_assert(zf_store_is_writable(s));
    mode_t old = umask(027);
    set_ok(s, "a", "hello", 5);
    umask(old);
    expect_value(s, "a", "hello", 5);
    char p[256];
    snprintf(p, sizeof p, "%s/a", root);
    struct stat sb;
    ck_assert_int_eq(stat(p, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 07777, 0640); /* 0644 minus the umask */
    /* replaced whole, longer and shorter */
    set_ok(s, "a", "a longer value", 14);
    expect_value(s, "a", "a longer value", 14);
    set_ok(s, "a", "x", 1);
    expect_value(s, "a", "x", 1);
    /* zero-length values, new and replacing */
    set_ok(s, "empty", "", 0);
    expect_value(s, "empty", "", 0);
    set_ok(s, "a", NULL, 0);
    expect_value(s, "a", "", 0);
    uint64_t size = 99;
    zf_err err = {""};
    ck_assert_int_eq(zf_store_stat(s, "a", &size, NULL, &err), ZF_OK);
    ck_assert_uint_eq(size, 0);
    /* parents made on the way, several levels deep */
    uint8_t big[300000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 7 + i / 251);
    set_ok(s, "g/arr/c/0/1/2", big, sizeof big);
    expect_value(s, "g/arr/c/0/1/2", big, sizeof big);
    set_ok(s, "g/arr/zarr.json", "{}", 2);
    ck_assert_int_eq(listed(s, "", "g"), 2);
    ck_assert_int_eq(listed(s, "g/arr", "c"), 2);
    ck_assert_int_eq(listed(s, "g/arr", "zarr.json"), 1);
    ck_assert_int_eq(listed(s, "g/arr/c/0/1", "2"), 1);
    /* names that need no escaping on a file system, and a long one (its temporary name is
     * shortened to fit NAME_MAX) */
    set_ok(s, "sp ace/x&y+z=w", "odd", 3);
    expect_value(s, "sp ace/x&y+z=w", "odd", 3);
    char longkey[260];
    memset(longkey, 'k', 250);
    longkey[250] = '\0';
    set_ok(s, longkey, "long", 4);
    expect_value(s, longkey, "long", 4);
    /* no temporary file stays behind */
    ck_assert_int_eq(temps(), 0);
    /* invalid keys never reach the backend */
    const char *bad[] = {"", "/abs", "a//b", "a/", "..", "../x", "a/../b", ".", "a\\b"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_int_eq(try_set(s, bad[i], "x", 1, &err), ZF_ERR_INVALID);
        ck_assert_int_eq(zf_store_erase(s, bad[i], &err), ZF_ERR_INVALID);
        ck_assert_int_eq(zf_store_remove_dir(s, bad[i], &err), ZF_ERR_INVALID);
    }
    ck_assert_int_eq(entries(outside), 0);
    ck_assert(!exists(base, "x"));
    teardown(s);
}
END_TEST

START_TEST(file_erase)
{
    zf_store *s = setup();
    zf_err err = {""};
    set_ok(s, "d/k", "v", 1);
    set_ok(s, "top", "v", 1);
    ck_assert_int_eq(zf_store_erase(s, "d/k", &err), ZF_OK);
    zf_bytes b;
    ck_assert_int_eq(zf_store_get(s, "d/k", &b, &err), ZF_ERR_NOT_FOUND);
    ck_assert(exists(root, "d")); /* its directory stays (remove_dir is separate) */
    ck_assert_int_eq(zf_store_erase(s, "top", &err), ZF_OK);
    ck_assert(!exists(root, "top"));
    /* absent: the key, and its directory */
    ck_assert_int_eq(zf_store_erase(s, "d/k", &err), ZF_OK);
    ck_assert_int_eq(zf_store_erase(s, "top", &err), ZF_OK);
    ck_assert_int_eq(zf_store_erase(s, "no/such/dir/k", &err), ZF_OK);
    /* a directory is no value: nothing to erase, and it stays */
    ck_assert_int_eq(zf_store_erase(s, "d", &err), ZF_OK);
    ck_assert(exists(root, "d"));
    /* below a regular file: absent too */
    set_ok(s, "f", "v", 1);
    ck_assert_int_eq(zf_store_erase(s, "f/k", &err), ZF_OK);
    expect_value(s, "f", "v", 1);
    teardown(s);
}
END_TEST

START_TEST(file_remove_dir)
{
    zf_store *s = setup();
    zf_err err = {""};
    set_ok(s, "g/a/k", "v", 1);
    /* not empty */
    ck_assert_int_eq(zf_store_remove_dir(s, "g/a", &err), ZF_ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "g/a: not empty"), "%s", err.msg);
    ck_assert_int_eq(zf_store_remove_dir(s, "g", &err), ZF_ERR_INVALID);
    ck_assert(exists(root, "g/a/k"));
    /* emptied, then removed level by level */
    ck_assert_int_eq(zf_store_erase(s, "g/a/k", &err), ZF_OK);
    ck_assert_int_eq(zf_store_remove_dir(s, "g/a", &err), ZF_OK);
    ck_assert(!exists(root, "g/a"));
    ck_assert_int_eq(zf_store_remove_dir(s, "g", &err), ZF_OK);
    ck_assert(!exists(root, "g"));
    /* absent */
    ck_assert_int_eq(zf_store_remove_dir(s, "g", &err), ZF_OK);
    ck_assert_int_eq(zf_store_remove_dir(s, "x/y/z", &err), ZF_OK);
    /* a value is no directory */
    set_ok(s, "v", "1", 1);
    ck_assert_int_eq(zf_store_remove_dir(s, "v", &err), ZF_ERR_INVALID);
    expect_value(s, "v", "1", 1);
    /* a directory that holds only a killed writer's temporary files looks empty, and is */
    set_ok(s, "h/k", "v", 1);
    ck_assert_int_eq(zf_store_erase(s, "h/k", &err), ZF_OK);
    char p[256];
    snprintf(p, sizeof p, "%s/h/.k.zarrfs-Ab12Cd", root);
    put_file(p, "partial");
    ck_assert_int_eq(zf_store_remove_dir(s, "h", &err), ZF_OK);
    ck_assert(!exists(root, "h"));
    /* but not when something real is there too */
    set_ok(s, "h/k", "v", 1);
    snprintf(p, sizeof p, "%s/h/.k.zarrfs-Ab12Cd", root);
    put_file(p, "partial");
    ck_assert_int_eq(zf_store_remove_dir(s, "h", &err), ZF_ERR_INVALID);
    ck_assert(exists(root, "h/.k.zarrfs-Ab12Cd"));
    teardown(s);
}
END_TEST

START_TEST(file_writes_stay_inside)
{
    zf_store *s = setup();
    zf_err err = {""};
    char p[256], q[256];
    /* a symlinked subdirectory pointing outside, absolute and relative */
    snprintf(p, sizeof p, "%s/out", root);
    ck_assert_int_eq(symlink(outside, p), 0);
    snprintf(p, sizeof p, "%s/rel", root);
    ck_assert_int_eq(symlink("../outside", p), 0);
    snprintf(p, sizeof p, "%s/victim", outside);
    put_file(p, "precious");
    snprintf(p, sizeof p, "%s/sub", outside);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    const char *keys[] = {"out/x", "out/new/deeper/x", "rel/x", "rel/new/x", "out/victim",
                          "rel/sub/x"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        ck_assert_int_eq(try_set(s, keys[i], "bad", 3, &err), ZF_ERR_IO);
        ck_assert_msg(strstr(err.msg, keys[i]) && strstr(err.msg, "refusing"), "%s", err.msg);
    }
    ck_assert_int_eq(zf_store_erase(s, "out/victim", &err), ZF_ERR_IO);
    ck_assert_int_eq(zf_store_erase(s, "rel/victim", &err), ZF_ERR_IO);
    ck_assert_int_eq(zf_store_remove_dir(s, "out/sub", &err), ZF_ERR_IO);
    ck_assert_int_eq(zf_store_remove_dir(s, "rel/sub", &err), ZF_ERR_IO);
    ck_assert_int_eq(entries(outside), 2); /* victim and sub, untouched */
    snprintf(p, sizeof p, "%s/victim", outside);
    FILE *f = fopen(p, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert(fgets(q, sizeof q, f));
    fclose(f);
    ck_assert_str_eq(q, "precious");
    /* a symlinked directory that stays inside is followed */
    set_ok(s, "real/k", "1", 1);
    snprintf(p, sizeof p, "%s/alias", root);
    ck_assert_int_eq(symlink("real", p), 0);
    set_ok(s, "alias/k2", "2", 1);
    ck_assert(exists(root, "real/k2"));
    set_ok(s, "alias/new/k3", "3", 1);
    ck_assert(exists(root, "real/new/k3"));
    /* a key that is a symlink out of the store: the link is replaced, its target untouched */
    snprintf(p, sizeof p, "%s/link", root);
    snprintf(q, sizeof q, "%s/victim", outside);
    ck_assert_int_eq(symlink(q, p), 0);
    set_ok(s, "link", "mine", 4);
    expect_value(s, "link", "mine", 4);
    f = fopen(q, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert(fgets(q, sizeof q, f));
    fclose(f);
    ck_assert_str_eq(q, "precious");
    ck_assert_int_eq(entries(outside), 2);
    ck_assert_int_eq(temps(), 0);
    teardown(s);
}
END_TEST

START_TEST(file_temp_files_hidden)
{
    zf_store *s = setup();
    zf_err err = {""};
    set_ok(s, "d/k", "v", 1);
    /* what a killed writer leaves behind */
    char p[256];
    snprintf(p, sizeof p, "%s/.zarr.json.zarrfs-a1B2c3", root);
    put_file(p, "partial");
    snprintf(p, sizeof p, "%s/d/.k.zarrfs-ZZZZZZ", root);
    put_file(p, "partial");
    snprintf(p, sizeof p, "%s/x.zarrfs-abcdef", root); /* no leading dot: an ordinary key */
    put_file(p, "plain");
    snprintf(p, sizeof p, "%s/.k.zarrfs-abc", root); /* too short a suffix: an ordinary key */
    put_file(p, "plain");
    zf_store_listing l;
    ck_assert_int_eq(zf_store_list_dir(s, "", &l, &err), ZF_OK);
    ck_assert_uint_eq(l.n, 3);
    zf_store_listing_free(&l);
    ck_assert_int_eq(listed(s, "", "d"), 2);
    ck_assert_int_eq(listed(s, "", "x.zarrfs-abcdef"), 1);
    ck_assert_int_eq(listed(s, "", ".k.zarrfs-abc"), 1);
    ck_assert_int_eq(zf_store_list_dir(s, "d", &l, &err), ZF_OK);
    ck_assert_uint_eq(l.n, 1);
    ck_assert_str_eq(l.entries[0].name, "k");
    zf_store_listing_free(&l);
    /* nor are they values */
    zf_bytes b;
    uint64_t size;
    ck_assert_int_eq(zf_store_get(s, ".zarr.json.zarrfs-a1B2c3", &b, &err), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(zf_store_get(s, "d/.k.zarrfs-ZZZZZZ", &b, &err), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(zf_store_stat(s, "d/.k.zarrfs-ZZZZZZ", &size, NULL, &err),
                     ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(zf_store_get_partial(s, "d/.k.zarrfs-ZZZZZZ", 0, 1, &b, &err),
                     ZF_ERR_NOT_FOUND);
    expect_value(s, "x.zarrfs-abcdef", "plain", 5);
    /* and no one writes them */
    ck_assert_int_eq(try_set(s, "d/.k.zarrfs-ZZZZZZ", "x", 1, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(try_set(s, ".a.zarrfs-123456/k", "x", 1, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(zf_store_erase(s, "d/.k.zarrfs-ZZZZZZ", &err), ZF_ERR_INVALID);
    ck_assert(exists(root, "d/.k.zarrfs-ZZZZZZ"));
    /* a set next to a stale temporary file leaves it be */
    set_ok(s, "d/k", "new", 3);
    expect_value(s, "d/k", "new", 3);
    ck_assert_int_eq(temps(), 4);
    teardown(s);
}
END_TEST

START_TEST(file_set_failures)
{
    zf_store *s = setup();
    zf_err err = {""};
    /* a parent that is a regular file (fails for root too) */
    set_ok(s, "f", "v", 1);
    ck_assert_int_eq(try_set(s, "f/k", "x", 1, &err), ZF_ERR_IO);
    ck_assert_msg(strstr(err.msg, "f/k") && strstr(err.msg, strerror(ENOTDIR)), "%s",
                  err.msg);
    ck_assert_int_eq(try_set(s, "g/f/deeper/k", "x", 1, &err), ZF_OK);
    ck_assert_int_eq(try_set(s, "g/f/deeper/k/more", "x", 1, &err), ZF_ERR_IO);
    ck_assert_msg(strstr(err.msg, "g/f/deeper/k/more"), "%s", err.msg);
    /* a value over a non-empty directory: the temporary file is written, the rename fails,
     * and the temporary file goes */
    set_ok(s, "dir/k", "v", 1);
    ck_assert_int_eq(try_set(s, "dir", "x", 1, &err), ZF_ERR_IO);
    ck_assert_msg(strstr(err.msg, "dir: rename: "), "%s", err.msg);
    expect_value(s, "dir/k", "v", 1);
    ck_assert_int_eq(temps(), 0);
    /* a read-only directory, where permissions bind (not for root) */
    if (geteuid() != 0) {
        char p[256];
        snprintf(p, sizeof p, "%s/dir", root);
        ck_assert_int_eq(chmod(p, 0555), 0);
        ck_assert_int_eq(try_set(s, "dir/new", "x", 1, &err), ZF_ERR_IO);
        ck_assert_msg(strstr(err.msg, "dir/new") && strstr(err.msg, strerror(EACCES)), "%s",
                      err.msg);
        ck_assert_int_eq(zf_store_erase(s, "dir/k", &err), ZF_ERR_IO);
        ck_assert_int_eq(try_set(s, "dir/sub/new", "x", 1, &err), ZF_ERR_IO);
        chmod(p, 0755);
    }
    ck_assert_int_eq(temps(), 0);
    teardown(s);
}
END_TEST

/* set_within: the directories below `within` are made, `within` itself is not (an array's
 * directory removed behind zarrfs's back); "" is the root, always there. */
START_TEST(file_set_within)
{
    zf_store *s = setup();
    zf_err err = {""};
    ck_assert_int_eq(zf_store_set_within(s, "g/arr", "g/arr/c/0/1", (const uint8_t *)"x", 1,
                                         &err), ZF_ERR_NOT_FOUND);
    ck_assert(!exists(root, "g"));
    set_ok(s, "g/arr/zarr.json", "{}", 2);
    ck_assert_msg(zf_store_set_within(s, "g/arr", "g/arr/c/0/1", (const uint8_t *)"x", 1,
                                      &err) == ZF_OK, "%s", err.msg);
    expect_value(s, "g/arr/c/0/1", "x", 1);
    ck_assert_int_eq(zf_store_set_within(s, "g/arr", "g/other/0", (const uint8_t *)"x", 1,
                                         &err), ZF_ERR_INVALID);
    ck_assert_int_eq(zf_store_set_within(s, "g/ar", "g/arr/0", (const uint8_t *)"x", 1, &err),
                     ZF_ERR_INVALID);
    ck_assert_msg(zf_store_set_within(s, "", "new/0", (const uint8_t *)"y", 1, &err) == ZF_OK,
                  "%s", err.msg);
    expect_value(s, "new/0", "y", 1);
    char p[256];
    snprintf(p, sizeof p, "%s/g/arr/c/0/1", root);
    ck_assert_int_eq(unlink(p), 0);
    snprintf(p, sizeof p, "%s/g/arr/c/0", root);
    ck_assert_int_eq(rmdir(p), 0);
    snprintf(p, sizeof p, "%s/g/arr/c", root);
    ck_assert_int_eq(rmdir(p), 0);
    snprintf(p, sizeof p, "%s/g/arr/zarr.json", root);
    ck_assert_int_eq(unlink(p), 0);
    snprintf(p, sizeof p, "%s/g/arr", root);
    ck_assert_int_eq(rmdir(p), 0);
    ck_assert_int_eq(zf_store_set_within(s, "g/arr", "g/arr/c/0/1", (const uint8_t *)"x", 1,
                                         &err), ZF_ERR_NOT_FOUND);
    ck_assert(!exists(root, "g/arr"));
    ck_assert_int_eq(temps(), 0);
    teardown(s);
}
END_TEST

START_TEST(file_write_counters)
{
    zf_store *s = setup();
    zf_err err = {""};
    zf_store_stats st;
    set_ok(s, "a", "12345", 5);
    set_ok(s, "b/c", "123", 3);
    set_ok(s, "e", "", 0);
    ck_assert_int_eq(zf_store_erase(s, "a", &err), ZF_OK);
    ck_assert_int_eq(zf_store_erase(s, "absent", &err), ZF_OK);
    ck_assert_int_eq(zf_store_remove_dir(s, "b", &err), ZF_ERR_INVALID);
    ck_assert_int_eq(try_set(s, "e/x", "123", 3, &err), ZF_ERR_IO);
    ck_assert_int_eq(try_set(s, "../x", "123", 3, &err), ZF_ERR_INVALID); /* not sent */
    zf_store_get_stats(s, &st);
    ck_assert_uint_eq(st.writes, 7);
    ck_assert_uint_eq(st.requests, 7);
    ck_assert_uint_eq(st.bytes_written, 8);
    ck_assert_uint_eq(st.errors, 2);
    ck_assert_uint_eq(st.bytes, 0);
    teardown(s);
}
END_TEST

/* Read key with its version (ZF_READ_ALL). */
static zf_store_version read_version(zf_store *s, const char *key, zf_bytes *b)
{
    zf_store_version v;
    zf_err err = {""};
    ck_assert_msg(zf_store_read_versioned(s, key, ZF_READ_ALL, 0, 0, b, &v, &err) == ZF_OK,
                  "%s: %s", key, err.msg);
    return v;
}

START_TEST(file_set_if)
{
    zf_store *s = setup();
    zf_err err = {""};
    zf_bytes b;
    /* absent: only a NULL base stores */
    ck_assert_int_eq(zf_store_set_if(s, "d/k", (const uint8_t *)"one", 3, NULL, &err), ZF_OK);
    expect_value(s, "d/k", "one", 3);
    ck_assert_int_eq(zf_store_set_if(s, "d/k", (const uint8_t *)"two", 3, NULL, &err),
                     ZF_ERR_CONFLICT);
    ck_assert_msg(strstr(err.msg, "d/k") && strstr(err.msg, "another writer"), "%s", err.msg);
    expect_value(s, "d/k", "one", 3);
    /* the version read stores once; a second write with it is refused */
    zf_store_version v = read_version(s, "d/k", &b);
    ck_assert_uint_eq(b.len, 3);
    ck_assert(v.has_size && v.size == 3 && v.etag[0]);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_set_if(s, "d/k", (const uint8_t *)"two", 3, &v, &err), ZF_OK);
    expect_value(s, "d/k", "two", 3);
    ck_assert_int_eq(zf_store_set_if(s, "d/k", (const uint8_t *)"three", 5, &v, &err),
                     ZF_ERR_CONFLICT);
    expect_value(s, "d/k", "two", 3);
    /* a same-size rewrite by a plain set is a new version too */
    zf_store_version v2 = read_version(s, "d/k", &b);
    zf_bytes_free(&b);
    ck_assert(!zf_store_version_equal(&v, &v2));
    set_ok(s, "d/k", "TWO", 3);
    ck_assert_int_eq(zf_store_set_if(s, "d/k", (const uint8_t *)"four", 4, &v2, &err),
                     ZF_ERR_CONFLICT);
    /* a conditional erase: refused for an old version, done for the current one */
    ck_assert_int_eq(zf_store_erase_if(s, "d/k", &v2, &err), ZF_ERR_CONFLICT);
    expect_value(s, "d/k", "TWO", 3);
    zf_store_version v4 = read_version(s, "d/k", &b);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_erase_if(s, "d/k", &v4, &err), ZF_OK);
    ck_assert_int_eq(zf_store_get(s, "d/k", &b, &err), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(zf_store_erase_if(s, "d/k", &v4, &err), ZF_ERR_CONFLICT);
    set_ok(s, "d/k", "TWO", 3);
    /* erased meanwhile: the version no longer matches */
    zf_store_version v3 = read_version(s, "d/k", &b);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_erase(s, "d/k", &err), ZF_OK);
    ck_assert_int_eq(zf_store_set_if(s, "d/k", (const uint8_t *)"five", 4, &v3, &err),
                     ZF_ERR_CONFLICT);
    ck_assert_int_eq(zf_store_get(s, "d/k", &b, &err), ZF_ERR_NOT_FOUND);
    /* no temporary file is left by refused writes; conflicts are not counted as errors */
    ck_assert_int_eq(temps(), 0);
    zf_store_stats st;
    zf_store_get_stats(s, &st);
    ck_assert_uint_eq(st.errors, 0);
    teardown(s);
}
END_TEST

/* Two processes, each with its own store on one directory, each adding 1 to a counter COUNT
 * times by read, add, conditional write (retried on conflict): no increment may be lost. */
#define CAS_COUNT 150
static int cas_increments(void)
{
    zf_store *s;
    zf_err err = {""};
    if (zf_store_open(root, NULL, &s, &err) != ZF_OK)
        return 1;
    for (int i = 0; i < CAS_COUNT; i++) {
        for (;;) {
            zf_bytes b = {NULL, 0};
            zf_store_version v;
            zf_status st = zf_store_read_versioned(s, "c/counter", ZF_READ_ALL, 0, 0, &b, &v,
                                                   &err);
            if (st != ZF_OK && st != ZF_ERR_NOT_FOUND)
                return 2;
            char text[32] = "0";
            if (st == ZF_OK)
                snprintf(text, sizeof text, "%.*s", (int)b.len, (const char *)b.data);
            zf_bytes_free(&b);
            snprintf(text, sizeof text, "%ld", strtol(text, NULL, 10) + 1);
            st = zf_store_set_if(s, "c/counter", (const uint8_t *)text, strlen(text),
                                 st == ZF_OK ? &v : NULL, &err);
            if (st == ZF_OK)
                break;
            if (st != ZF_ERR_CONFLICT)
                return 3;
        }
    }
    zf_store_close(s);
    return 0;
}

START_TEST(file_set_if_two_processes)
{
    zf_store *s = setup();
    pid_t pids[2];
    for (int i = 0; i < 2; i++) {
        pids[i] = fork();
        ck_assert_int_ge(pids[i], 0);
        if (pids[i] == 0)
            _exit(cas_increments());
    }
    for (int i = 0; i < 2; i++) {
        int ws;
        ck_assert_int_eq(waitpid(pids[i], &ws, 0), pids[i]);
        ck_assert_msg(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "writer %d: status %d", i, ws);
    }
    char want[32];
    snprintf(want, sizeof want, "%d", 2 * CAS_COUNT);
    expect_value(s, "c/counter", want, strlen(want));
    ck_assert_int_eq(temps(), 0);
    teardown(s);
}
END_TEST

START_TEST(http_is_read_only)
{
    zf_store *s;
    zf_err err = {""};
    /* nothing is sent: the port is never connected to */
    ck_assert_int_eq(zf_store_open("http://127.0.0.1:9/data.zarr", NULL, &s, &err), ZF_OK);
    ck_assert(!zf_store_is_writable(s));
    ck_assert_int_eq(try_set(s, "a/0", "x", 1, &err), ZF_ERR_READONLY);
    ck_assert_msg(strstr(err.msg, "read-only"), "%s", err.msg);
    ck_assert_int_eq(zf_store_erase(s, "a/0", &err), ZF_ERR_READONLY);
    ck_assert_int_eq(zf_store_remove_dir(s, "a", &err), ZF_ERR_READONLY);
    ck_assert_int_eq(try_set(s, "../a", "x", 1, &err), ZF_ERR_INVALID);
    zf_store_stats st;
    zf_store_get_stats(s, &st);
    ck_assert_uint_eq(st.requests, 0);
    ck_assert_uint_eq(st.writes, 0);
    zf_store_close(s);
}
END_TEST

TCase *store_write_tcase(void)
{
    TCase *tc = tcase_create("write");
    tcase_add_test(tc, file_set_get_replace);
    tcase_add_test(tc, file_erase);
    tcase_add_test(tc, file_remove_dir);
    tcase_add_test(tc, file_writes_stay_inside);
    tcase_add_test(tc, file_temp_files_hidden);
    tcase_add_test(tc, file_set_failures);
    tcase_add_test(tc, file_set_within);
    tcase_add_test(tc, file_write_counters);
    tcase_add_test(tc, file_set_if);
    tcase_add_test(tc, file_set_if_two_processes);
    tcase_add_test(tc, http_is_read_only);
    return tc;
}
