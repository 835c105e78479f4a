/* Unit tests for the zip store (store_zip.c): archives written with libzip into a temporary
 * directory, read through the local file store; get/get_partial/stat/list_dir, the root one
 * directory down, CRC and size checks, refusal of non-archives, read-only, and how few bytes of
 * the archive a read costs. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zip.h>

#include "zarrfs/store.h"

#include "store_tests.h"

static char dir[64];

typedef struct entry {
    const char *name;
    const char *data;
    size_t len;
    bool stored;
} entry;

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/zf-zip-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* Write dir/name holding entries (NULL-terminated). */
static void make_zip(const char *name, const entry *e)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int ze;
    zip_t *za = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &ze);
    ck_assert_ptr_nonnull(za);
    for (; e->name; e++) {
        zip_source_t *src = zip_source_buffer(za, e->data, e->len, 0);
        ck_assert_ptr_nonnull(src);
        zip_int64_t i = zip_file_add(za, e->name, src, ZIP_FL_ENC_UTF_8);
        ck_assert_int_ge(i, 0);
        ck_assert_int_eq(zip_set_file_compression(za, (zip_uint64_t)i,
                                                  e->stored ? ZIP_CM_STORE : ZIP_CM_DEFLATE, 9),
                         0);
    }
    ck_assert_int_eq(zip_close(za), 0);
}

static zf_store *open_zip(const char *name, zf_status want, zf_err *err)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    zf_store *s = NULL;
    ck_assert_int_eq(zf_store_open(path, NULL, &s, err), want);
    return want == ZF_OK ? s : NULL;
}

static char big[200000];

static const entry sample[] = {
    {".zgroup", "{\"zarr_format\": 2}", 18, false},
    {"a/.zarray", "{}", 2, true},
    {"a/0.0", "0123456789", 10, true},
    {"a/0.1", big, sizeof big, false},
    {"a.b", "x", 1, false},
    {"g/h/.zgroup", "{}", 2, false},
    {NULL, NULL, 0, false},
};

static void fill_big(void)
{
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (char)(i * 7 % 251);
}

START_TEST(zip_reads)
{
    fill_big();
    make_dir();
    make_zip("s.zip", sample);
    zf_err err = {""};
    zf_store *s = open_zip("s.zip", ZF_OK, &err);
    zf_bytes b;
    ck_assert_int_eq(zf_store_get(s, "a/0.0", &b, &err), ZF_OK);
    ck_assert_mem_eq(b.data, "0123456789", 10);
    ck_assert_uint_eq(b.len, 10);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get(s, "a/0.1", &b, &err), ZF_OK);
    ck_assert_uint_eq(b.len, sizeof big);
    ck_assert_int_eq(memcmp(b.data, big, sizeof big), 0);
    zf_bytes_free(&b);
    /* ranges of a stored entry (seek) and of a deflated one (slice), past the end */
    ck_assert_int_eq(zf_store_get_partial(s, "a/0.0", 3, 4, &b, &err), ZF_OK);
    ck_assert_uint_eq(b.len, 4);
    ck_assert_mem_eq(b.data, "3456", 4);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get_partial(s, "a/0.0", 8, 100, &b, &err), ZF_OK);
    ck_assert_uint_eq(b.len, 2);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get_partial(s, "a/0.1", 150000, 1000, &b, &err), ZF_OK);
    ck_assert_uint_eq(b.len, 1000);
    ck_assert_int_eq(memcmp(b.data, big + 150000, 1000), 0);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get_partial(s, "a/0.1", sizeof big + 5, 10, &b, &err), ZF_OK);
    ck_assert_uint_eq(b.len, 0);
    zf_bytes_free(&b);
    uint64_t total;
    ck_assert_int_eq(zf_store_get_suffix(s, "a/0.1", 10, &b, &total, &err), ZF_OK);
    ck_assert_uint_eq(total, sizeof big);
    ck_assert_int_eq(memcmp(b.data, big + sizeof big - 10, 10), 0);
    zf_bytes_free(&b);
    /* ranges of two deflated entries in turn: each from its own decoded value (the last one
     * decoded is kept for the next range) */
    for (int round = 0; round < 2; round++) {
        ck_assert_int_eq(zf_store_get_partial(s, ".zgroup", 2, 11, &b, &err), ZF_OK);
        ck_assert_uint_eq(b.len, 11);
        ck_assert_mem_eq(b.data, "zarr_format", 11);
        zf_bytes_free(&b);
        ck_assert_int_eq(zf_store_get_partial(s, "a/0.1", 70000 + round, 100, &b, &err), ZF_OK);
        ck_assert_uint_eq(b.len, 100);
        ck_assert_int_eq(memcmp(b.data, big + 70000 + round, 100), 0);
        zf_bytes_free(&b);
    }
    /* stat, absent keys */
    uint64_t size;
    struct timespec mt;
    ck_assert_int_eq(zf_store_stat(s, "a/0.1", &size, &mt, &err), ZF_OK);
    ck_assert_uint_eq(size, sizeof big);
    ck_assert_int_gt(mt.tv_sec, 0);
    ck_assert_int_eq(zf_store_get(s, "a/9.9", &b, &err), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(zf_store_get(s, "a", &b, &err), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(zf_store_stat(s, "g/h", &size, NULL, &err), ZF_ERR_NOT_FOUND);
    /* listings */
    zf_store_listing l;
    ck_assert_int_eq(zf_store_list_dir(s, "", &l, &err), ZF_OK);
    ck_assert_uint_eq(l.n, 4); /* .zgroup a a.b g */
    ck_assert_str_eq(l.entries[0].name, ".zgroup");
    ck_assert_str_eq(l.entries[1].name, "a");
    ck_assert(l.entries[1].is_prefix);
    ck_assert_str_eq(l.entries[2].name, "a.b");
    ck_assert(!l.entries[2].is_prefix);
    ck_assert_str_eq(l.entries[3].name, "g");
    ck_assert(l.entries[3].is_prefix);
    zf_store_listing_free(&l);
    ck_assert_int_eq(zf_store_list_dir(s, "a", &l, &err), ZF_OK);
    ck_assert_uint_eq(l.n, 3);
    zf_store_listing_free(&l);
    ck_assert_int_eq(zf_store_list_dir(s, "g", &l, &err), ZF_OK);
    ck_assert_uint_eq(l.n, 1);
    ck_assert_str_eq(l.entries[0].name, "h");
    zf_store_listing_free(&l);
    ck_assert_int_eq(zf_store_list_dir(s, "nope", &l, &err), ZF_ERR_NOT_FOUND);
    /* read-only */
    ck_assert(!zf_store_is_writable(s));
    ck_assert_int_eq(zf_store_set(s, "x", (const uint8_t *)"1", 1, &err), ZF_ERR_READONLY);
    ck_assert_int_eq(zf_store_erase(s, "a/0.0", &err), ZF_ERR_READONLY);
    zf_store_close(s);
}
END_TEST

START_TEST(zip_root_one_level_down)
{
    make_dir();
    const entry down[] = {
        {"x.zarr/.zgroup", "{}", 2, false}, {"x.zarr/a/.zarray", "{}", 2, false},
        {"x.zarr/a/0", "abc", 3, false},    {NULL, NULL, 0, false}};
    make_zip("x.zarr.zip", down);
    zf_err err = {""};
    zf_store *s = open_zip("x.zarr.zip", ZF_OK, &err);
    zf_bytes b;
    ck_assert_int_eq(zf_store_get(s, "a/0", &b, &err), ZF_OK);
    ck_assert_mem_eq(b.data, "abc", 3);
    zf_bytes_free(&b);
    zf_store_listing l;
    ck_assert_int_eq(zf_store_list_dir(s, "", &l, &err), ZF_OK);
    ck_assert_uint_eq(l.n, 2);
    zf_store_listing_free(&l);
    zf_store_close(s);
    /* two top-level directories: no guessing, the archive's top level is the root */
    const entry two[] = {{"x.zarr/.zgroup", "{}", 2, false}, {"y/.zgroup", "{}", 2, false},
                         {NULL, NULL, 0, false}};
    make_zip("two.zip", two);
    s = open_zip("two.zip", ZF_OK, &err);
    ck_assert_int_eq(zf_store_get(s, "x.zarr/.zgroup", &b, &err), ZF_OK);
    zf_bytes_free(&b);
    zf_store_close(s);
}
END_TEST

/* Entry names that are not keys ("../x", "/x", "a//b") are never listed nor read. */
START_TEST(zip_hostile_names)
{
    make_dir();
    const entry e[] = {{".zgroup", "{}", 2, false},    {"../evil", "e", 1, false},
                       {"/abs", "a", 1, false},         {"a//b", "b", 1, false},
                       {"ok/x", "xyz", 3, false},       {NULL, NULL, 0, false}};
    make_zip("h.zip", e);
    zf_err err = {""};
    zf_store *s = open_zip("h.zip", ZF_OK, &err);
    zf_store_listing l;
    ck_assert_int_eq(zf_store_list_dir(s, "", &l, &err), ZF_OK);
    ck_assert_uint_eq(l.n, 2); /* .zgroup and ok/ */
    for (size_t i = 0; i < l.n; i++)
        ck_assert_msg(strcmp(l.entries[i].name, ".zgroup") == 0 ||
                          strcmp(l.entries[i].name, "ok") == 0,
                      "listed %s", l.entries[i].name);
    zf_store_listing_free(&l);
    zf_bytes b;
    ck_assert_int_eq(zf_store_get(s, "ok/x", &b, &err), ZF_OK);
    ck_assert_mem_eq(b.data, "xyz", 3);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get(s, "../evil", &b, &err), ZF_ERR_INVALID);
    ck_assert_int_ne(zf_store_get(s, "a//b", &b, &err), ZF_OK);
    zf_store_close(s);
}
END_TEST

/* Flip the byte of dir/name that holds the first occurrence of needle. */
static void flip(const char *name, const char *needle, size_t nlen)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    char *p = memmem(buf, n, needle, nlen);
    ck_assert_ptr_nonnull(p);
    p[nlen / 2] ^= 0x20;
    fseek(f, p + nlen / 2 - buf, SEEK_SET);
    fputc(p[nlen / 2], f);
    fclose(f);
}

START_TEST(zip_corrupt_entry)
{
    make_dir();
    const entry e[] = {{".zgroup", "{}", 2, false},
                       {"good", "GOOD-DATA-GOOD-DATA", 19, true},
                       {"bad", "SOME-STORED-BYTES-TO-BREAK", 26, true},
                       {NULL, NULL, 0, false}};
    make_zip("c.zip", e);
    flip("c.zip", "SOME-STORED-BYTES-TO-BREAK", 26);
    zf_err err = {""};
    zf_store *s = open_zip("c.zip", ZF_OK, &err);
    zf_bytes b;
    ck_assert_int_eq(zf_store_get(s, "bad", &b, &err), ZF_ERR_CORRUPT);
    ck_assert_ptr_nonnull(strstr(err.msg, "bad"));
    ck_assert_int_eq(zf_store_get(s, "good", &b, &err), ZF_OK);
    ck_assert_uint_eq(b.len, 19);
    zf_bytes_free(&b);
    zf_store_close(s);
}
END_TEST

/* Make entry `name` of archive file `zname` say it decompresses to `size` bytes (< 4 GiB), in
 * its local header and in the central directory. */
static void announce_size(const char *zname, const char *name, uint32_t size)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, zname);
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    static uint8_t buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f), nl = strlen(name), patched = 0;
    for (size_t i = 0; i + 46 + nl <= n; i++) {
        size_t at; /* offset of the uncompressed size */
        if (memcmp(buf + i, "PK\3\4", 4) == 0 && buf[i + 26] == nl && buf[i + 27] == 0 &&
            memcmp(buf + i + 30, name, nl) == 0)
            at = i + 22;
        else if (memcmp(buf + i, "PK\1\2", 4) == 0 && buf[i + 28] == nl && buf[i + 29] == 0 &&
                 memcmp(buf + i + 46, name, nl) == 0)
            at = i + 24;
        else
            continue;
        for (int k = 0; k < 4; k++)
            buf[at + (size_t)k] = (uint8_t)(size >> (8 * k));
        patched++;
    }
    ck_assert_uint_eq(patched, 2);
    ck_assert_int_eq(fseek(f, 0, SEEK_SET), 0);
    ck_assert_uint_eq(fwrite(buf, 1, n, f), n);
    fclose(f);
}

/* A metadata document whose entry announces 3.75 GiB: refused by the bound the reader gives
 * (zf_store_get_bounded) on the size in the central directory, no byte of it read; the other
 * entries read as before. */
START_TEST(zip_announced_size_bound)
{
    make_dir();
    const entry e[] = {{".zgroup", "{\"zarr_format\": 2}", 18, false},
                       {"a/.zarray", "{}", 2, false},
                       {NULL, NULL, 0, false}};
    make_zip("h.zip", e);
    announce_size("h.zip", "a/.zarray", 0xF0000000u);
    zf_err err = {""};
    zf_store *s = open_zip("h.zip", ZF_OK, &err);
    uint64_t size;
    ck_assert_int_eq(zf_store_stat(s, "a/.zarray", &size, NULL, &err), ZF_OK);
    ck_assert_uint_eq(size, 0xF0000000u);
    zf_store_stats before, after;
    zf_store_get_stats(s, &before);
    zf_bytes b = {0};
    ck_assert_int_eq(zf_store_get_bounded(s, "a/.zarray", 512u << 20, &b, &err),
                     ZF_ERR_TOO_LARGE);
    ck_assert_msg(strstr(err.msg, "a/.zarray: refusing a value larger than 512 MiB (4026531840 "
                                  "bytes in the archive's directory)"),
                  "%s", err.msg);
    ck_assert_ptr_null(b.data);
    zf_store_get_stats(s, &after);
    ck_assert_uint_eq(after.bytes, before.bytes); /* not a byte of the archive read */
    ck_assert_int_eq(zf_store_get_bounded(s, ".zgroup", 18, &b, &err), ZF_OK);
    ck_assert_uint_eq(b.len, 18);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get_bounded(s, ".zgroup", 17, &b, &err), ZF_ERR_TOO_LARGE);
    zf_store_close(s);
    test_remove_tree(dir);
}
END_TEST

START_TEST(zip_refused)
{
    make_dir();
    char path[256];
    snprintf(path, sizeof path, "%s/text.zip", dir);
    FILE *f = fopen(path, "w");
    fputs("not an archive at all\n", f);
    fclose(f);
    zf_err err = {""};
    open_zip("text.zip", ZF_ERR_IO, &err);
    ck_assert_ptr_nonnull(strstr(err.msg, "zip archive"));
    /* a zip magic, then nothing: libzip finds no end of central directory */
    make_zip("t.zip", sample);
    snprintf(path, sizeof path, "%s/t.zip", dir);
    ck_assert_int_eq(truncate(path, 100), 0);
    err.msg[0] = '\0';
    open_zip("t.zip", ZF_ERR_CORRUPT, &err);
    ck_assert_ptr_nonnull(strstr(err.msg, "zip archive"));
}
END_TEST

START_TEST(zip_reads_little_of_the_archive)
{
    fill_big();
    make_dir();
    /* an archive of ~2 MB: 10 incompressible-ish 200 kB entries and small ones */
    entry e[16] = {{".zgroup", "{}", 2, false}};
    char names[12][8];
    for (int i = 0; i < 10; i++) {
        snprintf(names[i], sizeof names[i], "c%d", i);
        e[i + 1] = (entry){names[i], big, sizeof big, true};
    }
    e[11] = (entry){"small", "tiny", 4, true};
    make_zip("big.zip", e);
    zf_err err = {""};
    zf_store *s = open_zip("big.zip", ZF_OK, &err);
    zf_store_stats st0, st1;
    zf_store_get_stats(s, &st0);
    ck_assert_uint_le(st0.requests, 2);       /* the end (and directory): one request */
    ck_assert_uint_le(st0.bytes, 128 * 1024); /* never the whole archive */
    zf_bytes b;
    ck_assert_int_eq(zf_store_get(s, "small", &b, &err), ZF_OK);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get(s, "c3", &b, &err), ZF_OK);
    ck_assert_int_eq(memcmp(b.data, big, sizeof big), 0);
    zf_bytes_free(&b);
    zf_store_get_stats(s, &st1);
    ck_assert_uint_le(st1.requests - st0.requests, 4);
    ck_assert_uint_lt(st1.bytes, 2 * sizeof big + 256 * 1024 + 128 * 1024);
    zf_store_close(s);
}
END_TEST

TCase *store_zip_tcase(void)
{
    TCase *tc = tcase_create("zip");
    tcase_add_test(tc, zip_reads);
    tcase_add_test(tc, zip_root_one_level_down);
    tcase_add_test(tc, zip_hostile_names);
    tcase_add_test(tc, zip_corrupt_entry);
    tcase_add_test(tc, zip_refused);
    tcase_add_test(tc, zip_reads_little_of_the_archive);
    tcase_add_test(tc, zip_announced_size_bound);
    return tc;
}
