/* Unit tests for kerchunk references (store_refs.c): version 0 and 1 documents parsed from text
 * whose targets are files in a temporary directory; inline text, JSON objects, base64, whole and
 * range values; templates and gen expansion; list_dir and stat; errors at open (malformed JSON,
 * other versions, templates that do not resolve, bad values, unsupported targets) and at read
 * (a range past the end of its target, a missing target); dispatch by zf_store_open. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zarrfs/store.h"

#include "store_tests.h"

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/zf-refs-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void write_file(const char *name, const void *data, size_t len)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

static zf_status open_text(const char *text, zf_store **s, zf_err *err)
{
    *s = NULL;
    return zf_store_refs_open("refs.json", text, strlen(text), dir, NULL, s, err);
}

static void expect_value(zf_store *s, const char *key, const char *want, size_t len)
{
    zf_err err = {""};
    zf_bytes b = {0};
    ck_assert_msg(zf_store_get(s, key, &b, &err) == ZF_OK, "%s: %s", key, err.msg);
    ck_assert_uint_eq(b.len, len);
    ck_assert_int_eq(memcmp(b.data, want, len), 0);
    zf_bytes_free(&b);
}

static const char data[] = "0123456789abcdefghijklmnopqrstuvwxyz";

START_TEST(refs_v0_values)
{
    make_dir();
    write_file("data.bin", data, 36);
    char sub[128];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    write_file("sub/other.bin", "OTHER", 5);
    char text[1024];
    snprintf(text, sizeof text,
             "{\".zgroup\": \"{\\\"zarr_format\\\": 2}\","
             " \"a/.zarray\": {\"zarr_format\": 2, \"shape\": [3]},"
             " \"a/0\": [\"data.bin\", 10, 5],"
             " \"a/1\": [\"file://%s/data.bin\"],"
             " \"a/2\": [\"%s/sub/other.bin\", 1, 3],"
             " \"a/3\": [\"./sub/other.bin\"],"
             " \"b/c/d\": \"base64:AAECAw==\"}",
             dir, dir);
    zf_err err = {""};
    zf_store *s;
    ck_assert_msg(open_text(text, &s, &err) == ZF_OK, "%s", err.msg);
    expect_value(s, ".zgroup", "{\"zarr_format\": 2}", 18);
    expect_value(s, "a/.zarray", "{\"zarr_format\":2,\"shape\":[3]}", 29);
    expect_value(s, "a/0", "abcde", 5);
    expect_value(s, "a/1", data, 36);
    expect_value(s, "a/2", "THE", 3);
    expect_value(s, "a/3", "OTHER", 5);
    expect_value(s, "b/c/d", "\0\1\2\3", 4);
    /* ranges within values */
    zf_bytes b = {0};
    ck_assert_int_eq(zf_store_get_partial(s, "a/0", 1, 3, &b, &err), ZF_OK);
    ck_assert_uint_eq(b.len, 3);
    ck_assert_mem_eq(b.data, "bcd", 3);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get_partial(s, "a/0", 3, 100, &b, &err), ZF_OK);
    ck_assert_uint_eq(b.len, 2);
    ck_assert_mem_eq(b.data, "de", 2);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get_partial(s, "a/0", 7, 100, &b, &err), ZF_OK);
    ck_assert_uint_eq(b.len, 0);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get_partial(s, ".zgroup", 2, 5, &b, &err), ZF_OK);
    ck_assert_mem_eq(b.data, "zarr_", 5);
    zf_bytes_free(&b);
    uint64_t total;
    ck_assert_int_eq(zf_store_get_suffix(s, "a/1", 4, &b, &total, &err), ZF_OK);
    ck_assert_uint_eq(total, 36);
    ck_assert_mem_eq(b.data, "wxyz", 4);
    zf_bytes_free(&b);
    uint64_t size;
    ck_assert_int_eq(zf_store_stat(s, "a/0", &size, NULL, &err), ZF_OK);
    ck_assert_uint_eq(size, 5);
    ck_assert_int_eq(zf_store_stat(s, "a/1", &size, NULL, &err), ZF_OK);
    ck_assert_uint_eq(size, 36);
    /* absent keys, listing, read-only */
    ck_assert_int_eq(zf_store_get(s, "a/9", &b, &err), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(zf_store_stat(s, "zz", &size, NULL, &err), ZF_ERR_NOT_FOUND);
    zf_store_listing l;
    ck_assert_int_eq(zf_store_list_dir(s, "", &l, &err), ZF_OK);
    ck_assert_uint_eq(l.n, 3);
    ck_assert_str_eq(l.entries[0].name, ".zgroup");
    ck_assert(!l.entries[0].is_prefix);
    ck_assert_str_eq(l.entries[1].name, "a");
    ck_assert(l.entries[1].is_prefix);
    ck_assert_str_eq(l.entries[2].name, "b");
    zf_store_listing_free(&l);
    ck_assert_int_eq(zf_store_list_dir(s, "a", &l, &err), ZF_OK);
    ck_assert_uint_eq(l.n, 5);
    zf_store_listing_free(&l);
    ck_assert_int_eq(zf_store_list_dir(s, "b/c", &l, &err), ZF_OK);
    ck_assert_uint_eq(l.n, 1);
    ck_assert_str_eq(l.entries[0].name, "d");
    zf_store_listing_free(&l);
    ck_assert_int_eq(zf_store_list_dir(s, "nope", &l, &err), ZF_ERR_NOT_FOUND);
    ck_assert(!zf_store_is_writable(s));
    ck_assert_int_eq(zf_store_set(s, "a/0", (const uint8_t *)"x", 1, &err), ZF_ERR_READONLY);
    zf_store_close(s);
}
END_TEST

START_TEST(refs_v1_templates_and_gen)
{
    make_dir();
    write_file("data.bin", data, 36);
    write_file("part_0.bin", "P0P0", 4);
    write_file("part_1.bin", "P1P1", 4);
    write_file("f_x.bin", "XX", 2);
    const char *text =
        "{\"version\": 1,"
        " \"templates\": {\"d\": \"data.bin\", \"f\": \"f_{{c}}.bin\"},"
        " \"gen\": [{\"key\": \"g/{{i}}.{{j}}\", \"url\": \"{{d}}\","
        "           \"offset\": \"{{ (i * 2 + j) * 4 + 1 }}\", \"length\": \"4\","
        "           \"dimensions\": {\"i\": {\"stop\": 3}, \"j\": [0, 1]}},"
        "          {\"key\": \"w/{{n}}\", \"url\": \"part_{{n}}.bin\","
        "           \"dimensions\": {\"n\": {\"start\": 0, \"stop\": 2, \"step\": 1}}},"
        "          {\"key\": \"s/{{name}}\", \"url\": \"{{d}}\", \"offset\": 0, \"length\": 2,"
        "           \"dimensions\": {\"name\": [\"x\", \"y\"]}},"
        "          {\"key\": \"r/{{k}}\", \"url\": \"{{d}}\", \"offset\": \"{{k % 5 + k // 5}}\","
        "           \"length\": \"1\", \"dimensions\": {\"k\": {\"start\": 10, \"stop\": 4, "
        "\"step\": -3}}},"
        "          {\"key\": \"n/{{ -7 // 2 }}{{ -7 % 3 }}{{ 'x' ~ 5 }}\", \"url\": \"{{d}}\","
        "           \"dimensions\": {\"i\": [0]}}],"
        " \"refs\": {\".zgroup\": \"{}\", \"t/0\": [\"{{d}}\", 2, 3],"
        "          \"t/1\": [\"{{f(c='x')}}\"], \"t/2\": [\"part_{{ 3 - 2 }}.bin\", 2, 2]}}";
    zf_err err = {""};
    zf_store *s;
    ck_assert_msg(open_text(text, &s, &err) == ZF_OK, "%s", err.msg);
    expect_value(s, "g/0.0", "1234", 4);
    expect_value(s, "g/0.1", "5678", 4);
    expect_value(s, "g/1.0", "9abc", 4);
    expect_value(s, "g/2.1", "lmno", 4);
    expect_value(s, "w/0", "P0P0", 4);
    expect_value(s, "w/1", "P1P1", 4);
    expect_value(s, "s/x", "01", 2);
    expect_value(s, "s/y", "01", 2);
    expect_value(s, "r/10", "2", 1); /* 10 % 5 + 10 // 5 */
    expect_value(s, "r/7", "3", 1);  /* 2 + 1 */
    zf_bytes b;
    ck_assert_int_eq(zf_store_get(s, "r/4", &b, &err), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(zf_store_get(s, "g/3.0", &b, &err), ZF_ERR_NOT_FOUND);
    expect_value(s, "n/-42x5", data, 36); /* Python's floor division and modulo, '~' */
    expect_value(s, "t/0", "234", 3);
    expect_value(s, "t/1", "XX", 2);
    expect_value(s, "t/2", "P1", 2);
    zf_store_listing l;
    ck_assert_int_eq(zf_store_list_dir(s, "g", &l, &err), ZF_OK);
    ck_assert_uint_eq(l.n, 6);
    zf_store_listing_free(&l);
    zf_store_close(s);
}
END_TEST

static void expect_refused(const char *text, zf_status want, const char *needle)
{
    zf_err err = {""};
    zf_store *s;
    zf_status st = open_text(text, &s, &err);
    ck_assert_msg(st == want, "%s: got %d (%s)", text, st, err.msg);
    ck_assert_msg(strstr(err.msg, needle), "\"%s\" lacks \"%s\"", err.msg, needle);
    ck_assert(!strchr(err.msg, '\n'));
}

START_TEST(refs_errors_at_open)
{
    make_dir();
    write_file("data.bin", data, 36);
    expect_refused("{\"version\": 1, \"refs\": {", ZF_ERR_INVALID, "not valid JSON");
    expect_refused("[1, 2]", ZF_ERR_INVALID, "not a JSON object");
    expect_refused("{\"version\": 2, \"refs\": {}}", ZF_ERR_UNSUPPORTED, "version");
    expect_refused("{\"a\": \"b\"}", ZF_ERR_INVALID, "not kerchunk references");
    expect_refused("{\".zgroup\": 3}", ZF_ERR_INVALID, ".zgroup: expected text");
    expect_refused("{\".zgroup\": \"{}\", \"a/0\": [\"data.bin\", 1]}", ZF_ERR_INVALID,
                   "a/0: expected");
    expect_refused("{\".zgroup\": \"{}\", \"a/0\": [\"data.bin\", -1, 2]}", ZF_ERR_INVALID,
                   "a/0: offset and length");
    expect_refused("{\".zgroup\": \"{}\", \"../x\": \"a\"}", ZF_ERR_INVALID, "not a valid key");
    expect_refused("{\".zgroup\": \"{}\", \"a/0\": [\"gs://bucket/x\"]}", ZF_ERR_UNSUPPORTED,
                   "gs://bucket/x");
    expect_refused("{\".zgroup\": \"{}\", \"a/0\": [\"nodir/x.bin\", 0, 1]}", ZF_ERR_IO,
                   "a/0: target");
    expect_refused("{\".zgroup\": \"{}\", \"a/0\": \"base64:A\"}", ZF_ERR_INVALID, "base64");
    expect_refused("{\"version\": 1, \"refs\": {\"a/0\": [\"{{u}}\", 0, 1]}}", ZF_ERR_INVALID,
                   "a/0: template does not resolve: no template or variable \"u\"");
    expect_refused("{\"version\": 1, \"templates\": {\"u\": \"x\"},"
                   " \"refs\": {\"a/0\": [\"{{u\", 0, 1]}}",
                   ZF_ERR_INVALID, "no '}}'");
    expect_refused("{\"version\": 1, \"refs\": {\"a/0\": [\"{{ 1 + }}\", 0, 1]}}", ZF_ERR_INVALID,
                   "template does not resolve");
    expect_refused("{\"version\": 1, \"refs\": {\"a/0\": [\"{{ 7 / 2 }}\", 0, 1]}}",
                   ZF_ERR_INVALID, "fraction");
    expect_refused("{\"version\": 1, \"refs\": {\"a/0\": [\"{{ -(0 - 9223372036854775807 - 1) }}\"]}}",
                   ZF_ERR_INVALID, "overflow");
    expect_refused("{\"version\": 1, \"refs\": {\"a/0\": [\"{{ 'a' + 1 }}\"]}}", ZF_ERR_INVALID,
                   "a string and a number");
    expect_refused("{\"version\": 1, \"gen\": [{\"key\": \"k{{i}}\", \"url\": \"data.bin\","
                   " \"dimensions\": {\"i\": {\"stop\": 2, \"step\": 9223372036854775807}}}]}",
                   ZF_ERR_INVALID, "dimension \"i\"");
    expect_refused("{\"version\": 1, \"templates\": {\"a\": \"{{a()}}\"},"
                   " \"refs\": {\"k\": [\"{{a()}}\"]}}",
                   ZF_ERR_INVALID, "nested too deep");
    { /* 100 000 parentheses, then 100 000 minus signs: refused, not a stack overflow */
        size_t depth = 100000;
        char *deep = malloc(4 * depth + 128), *p = deep;
        ck_assert_ptr_nonnull(deep);
        p += sprintf(p, "{\"version\": 1, \"refs\": {\"a/0\": [\"{{");
        memset(p, '(', depth), p += depth;
        *p++ = '1';
        memset(p, ')', depth), p += depth;
        strcpy(p, "}}\"]}}");
        expect_refused(deep, ZF_ERR_INVALID, "expression nested too deep");
        p = deep + sprintf(deep, "{\"version\": 1, \"refs\": {\"a/0\": [\"{{");
        memset(p, '-', depth), p += depth;
        strcpy(p, "1}}\"]}}");
        expect_refused(deep, ZF_ERR_INVALID, "expression nested too deep");
        free(deep);
    }
    expect_refused("{\"version\": 1, \"gen\": [{\"key\": \"k{{i}}\", \"url\": \"data.bin\","
                   " \"offset\": \"1\", \"dimensions\": {\"i\": {\"stop\": 2}}}]}",
                   ZF_ERR_INVALID, "\"offset\" and \"length\" go together");
    expect_refused("{\"version\": 1, \"gen\": [{\"key\": \"k{{i}}\", \"url\": \"data.bin\","
                   " \"dimensions\": {\"i\": {\"stop\": 2, \"step\": 0}}}]}",
                   ZF_ERR_INVALID, "dimension \"i\"");
    expect_refused("{\"version\": 1, \"gen\": [{\"key\": \"k{{j}}\", \"url\": \"data.bin\","
                   " \"dimensions\": {\"i\": [1]}}]}",
                   ZF_ERR_INVALID, "no template or variable \"j\"");
    expect_refused("{\"version\": 1, \"gen\": [{\"key\": \"k\", \"url\": \"data.bin\","
                   " \"dimensions\": {\"i\": [1, 2]}}]}",
                   ZF_ERR_INVALID, "k: defined twice");
}
END_TEST

/* A reference file fetched from a server (its directory a URL) may not name local files, by
 * absolute path or file:// URL (docs/security.md); relative targets stay below its URL. Opened
 * with no network: refused before any target store opens. */
START_TEST(refs_remote_names_no_local_file)
{
    make_dir();
    write_file("data.bin", data, 36);
    char text[512];
    const char *targets[] = {"/etc/passwd", "file:///etc/passwd", "%s/data.bin",
                             "file://%s/data.bin"};
    for (size_t i = 0; i < 4; i++) {
        char target[256];
        snprintf(target, sizeof target, targets[i], dir);
        snprintf(text, sizeof text, "{\".zgroup\": \"{}\", \"a/0\": [\"%s\", 0, 4]}", target);
        const char *bases[] = {"http://127.0.0.1:9/refs", "https://h/x", "s3://bucket/p"};
        for (size_t b = 0; b < 3; b++) {
            zf_store *s = NULL;
            zf_err err = {""};
            ck_assert_int_eq(zf_store_refs_open("r.json", text, strlen(text), bases[b], NULL, &s,
                                                &err),
                             ZF_ERR_UNSUPPORTED);
            ck_assert_msg(strstr(err.msg, "names no local file") && strstr(err.msg, "a/0"), "%s",
                          err.msg);
        }
        /* the same text in a local reference file reads the local target */
        zf_store *s = NULL;
        zf_err err = {""};
        if (i >= 2) {
            ck_assert_msg(open_text(text, &s, &err) == ZF_OK, "%s", err.msg);
            expect_value(s, "a/0", "0123", 4);
            zf_store_close(s);
        }
    }
}
END_TEST

START_TEST(refs_errors_at_read)
{
    make_dir();
    write_file("data.bin", data, 36);
    write_file("gone.bin", "x", 1);
    const char *text = "{\".zgroup\": \"{}\", \"a/0\": [\"data.bin\", 30, 10],"
                       " \"a/1\": [\"data.bin\", 40, 10], \"a/2\": [\"gone.bin\"],"
                       " \"a/3\": [\"gone.bin\", 0, 1]}";
    zf_err err = {""};
    zf_store *s;
    ck_assert_msg(open_text(text, &s, &err) == ZF_OK, "%s", err.msg);
    char path[256];
    snprintf(path, sizeof path, "%s/gone.bin", dir);
    ck_assert_int_eq(unlink(path), 0);
    zf_bytes b = {0};
    ck_assert_int_eq(zf_store_get(s, "a/0", &b, &err), ZF_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err.msg, "a/0: target"));
    ck_assert_ptr_nonnull(strstr(err.msg, "past the end"));
    ck_assert_int_eq(zf_store_get(s, "a/1", &b, &err), ZF_ERR_IO);
    ck_assert_int_eq(zf_store_get_partial(s, "a/0", 0, 6, &b, &err), ZF_OK); /* within */
    ck_assert_mem_eq(b.data, "uvwxyz", 6);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get(s, "a/2", &b, &err), ZF_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err.msg, "no such file"));
    ck_assert_int_eq(zf_store_get(s, "a/3", &b, &err), ZF_ERR_IO);
    zf_store_close(s);
}
END_TEST

/* References announcing a metadata document over the bound its reader gives
 * (zf_store_get_bounded): [url, offset, length] by its length, [url] by the target's size, an
 * inline value by its own; refused without reading the target (a sparse 600 MiB file). */
START_TEST(refs_length_bound)
{
    make_dir();
    char path[256];
    snprintf(path, sizeof path, "%s/big.bin", dir);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(ftruncate(fileno(f), 600 << 20), 0);
    fclose(f);
    const char *text = "{\"version\": 1, \"refs\": {\".zgroup\": \"{\\\"zarr_format\\\": 2}\","
                       " \"a/.zarray\": [\"big.bin\", 0, 629145600],"
                       " \"a/.zattrs\": [\"big.bin\"], \"a/0\": [\"big.bin\", 100, 10]}}";
    zf_err err = {""};
    zf_store *s;
    ck_assert_msg(open_text(text, &s, &err) == ZF_OK, "%s", err.msg);
    zf_store_stats before, after;
    zf_store_get_stats(s, &before);
    zf_bytes b = {0};
    ck_assert_int_eq(zf_store_get_bounded(s, "a/.zarray", 512u << 20, &b, &err),
                     ZF_ERR_TOO_LARGE);
    ck_assert_msg(strstr(err.msg, "a/.zarray: refusing a value larger than 512 MiB (629145600 "
                                  "bytes in the reference)"),
                  "%s", err.msg);
    ck_assert_int_eq(zf_store_get_bounded(s, "a/.zattrs", 512u << 20, &b, &err),
                     ZF_ERR_TOO_LARGE);
    ck_assert_msg(strstr(err.msg, "a/.zattrs: target ") &&
                      strstr(err.msg, "refusing a value larger than 512 MiB (629145600 bytes in "
                                      "the file)"),
                  "%s", err.msg);
    ck_assert_int_eq(zf_store_get_bounded(s, ".zgroup", 17, &b, &err), ZF_ERR_TOO_LARGE);
    ck_assert_msg(strstr(err.msg, "(18 bytes inline)"), "%s", err.msg);
    zf_store_get_stats(s, &after);
    ck_assert_uint_eq(after.bytes, before.bytes); /* nothing read from the target */
    ck_assert_int_eq(zf_store_get_bounded(s, ".zgroup", 18, &b, &err), ZF_OK);
    ck_assert_uint_eq(b.len, 18);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get_bounded(s, "a/0", 10, &b, &err), ZF_OK); /* within */
    ck_assert_uint_eq(b.len, 10);
    zf_bytes_free(&b);
    zf_store_close(s);
    test_remove_tree(dir);
}
END_TEST

START_TEST(refs_dispatch)
{
    make_dir();
    write_file("data.bin", data, 36);
    const char *text = "  \n{\".zgroup\": \"{}\", \"a/0\": [\"data.bin\", 1, 2]}";
    write_file("refs.json", text, strlen(text));
    write_file("refs.parq", "PAR1\0\0\0\0PAR1", 12);
    write_file("other.txt", "hello", 5);
    char path[256];
    zf_err err = {""};
    zf_store *s;
    snprintf(path, sizeof path, "%s/refs.json", dir);
    ck_assert_msg(zf_store_open(path, NULL, &s, &err) == ZF_OK, "%s", err.msg);
    expect_value(s, "a/0", "12", 2);
    zf_store_close(s);
    /* relative to the reference file's directory, whatever the working directory */
    char cwd[4096];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    ck_assert_int_eq(chdir(dir), 0);
    ck_assert_msg(zf_store_open("refs.json", NULL, &s, &err) == ZF_OK, "%s", err.msg);
    ck_assert_int_eq(chdir("/"), 0);
    expect_value(s, "a/0", "12", 2);
    zf_store_close(s);
    ck_assert_int_eq(chdir(cwd), 0);
    snprintf(path, sizeof path, "%s/refs.parq", dir);
    ck_assert_int_eq(zf_store_open(path, NULL, &s, &err), ZF_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err.msg, "Parquet"));
    snprintf(path, sizeof path, "%s/other.txt", dir);
    ck_assert_int_eq(zf_store_open(path, NULL, &s, &err), ZF_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err.msg, "kerchunk"));
    write_file(".zmetadata", "{\"record_size\": 10000, \"metadata\": {}}", 38);
    ck_assert_int_eq(zf_store_open(dir, NULL, &s, &err), ZF_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err.msg, "Parquet"));
}
END_TEST

TCase *store_refs_tcase(void)
{
    TCase *tc = tcase_create("refs");
    tcase_add_test(tc, refs_v0_values);
    tcase_add_test(tc, refs_v1_templates_and_gen);
    tcase_add_test(tc, refs_errors_at_open);
    tcase_add_test(tc, refs_errors_at_read);
    tcase_add_test(tc, refs_remote_names_no_local_file);
    tcase_add_test(tc, refs_dispatch);
    tcase_add_test(tc, refs_length_bound);
    return tc;
}
