/* Unit tests for the two flat views of an array of zarrs' optional data type (array.h, "the mask
 * view"): the array's file (values, zero where missing) and its mask (one validity-depth byte
 * per element), read from chunks the test writes in zarrs' optional codec format
 * (codec/array_to_bytes/optional.rs: u64 mask and data lengths, the mask packed LSB first by
 * the zarr-extensions packbits codec, then only the valid elements), over edge chunks, a missing
 * chunk (the fill value in both views) and a corrupt one (an error in both, never fill); one
 * decode serves both views. Expected bytes come from the element function below. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zarrfs/array.h"

#include "../check_main.h"

#define ROWS 7
#define COLS 5
#define CR 3 /* chunk shape */
#define CC 2

static char dir[256];

/* Element (i, j): valid unless (i * 5 + j) % 3 == 1; its int16 value. */
static bool valid(uint64_t i, uint64_t j) { return (i * 5 + j) % 3 != 1; }
static int16_t value(uint64_t i, uint64_t j) { return (int16_t)(i * 100 - (int64_t)j * 7 - 3); }
/* chunk (1, 1) is missing, chunk (2, 2) corrupt */
static bool missing(uint64_t ci, uint64_t cj) { return ci == 1 && cj == 1; }
static bool corrupt(uint64_t ci, uint64_t cj) { return ci == 2 && cj == 2; }

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void write_array(const char *fill)
{
    char tmpl[] = "/tmp/zf-optional-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    snprintf(dir, sizeof dir, "%s", tmpl);
    char p[512];
    snprintf(p, sizeof p, "%s/zarr.json", dir);
    FILE *f = fopen(p, "w");
    fprintf(f,
            "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [%d, %d], \"data_type\": "
            "{\"name\": \"optional\", \"configuration\": {\"name\": \"int16\", \"configuration\": "
            "{}}}, \"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": "
            "[%d, %d]}}, \"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": "
            "{\"separator\": \"/\"}}, \"fill_value\": %s, \"codecs\": [{\"name\": \"optional\", "
            "\"configuration\": {\"mask_codecs\": [{\"name\": \"packbits\"}], \"data_codecs\": "
            "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]}}]}",
            ROWS, COLS, CR, CC, fill);
    fclose(f);
    for (uint64_t ci = 0; ci * CR < ROWS; ci++)
        for (uint64_t cj = 0; cj * CC < COLS; cj++) {
            if (missing(ci, cj))
                continue;
            uint8_t buf[256] = {0}, mask[1] = {0};
            size_t nv = 0;
            for (uint64_t a = 0; a < CR; a++)
                for (uint64_t b = 0; b < CC; b++) {
                    uint64_t i = ci * CR + a, j = cj * CC + b;
                    /* edge chunks: elements outside the array are stored as missing */
                    if (i < ROWS && j < COLS && valid(i, j)) {
                        mask[0] |= (uint8_t)(1u << (a * CC + b));
                        int16_t v = value(i, j);
                        memcpy(buf + 17 + 2 * nv++, &v, 2);
                    }
                }
            buf[16] = mask[0];
            put_u64(buf, 1);
            put_u64(buf + 8, 2 * nv);
            size_t len = 17 + 2 * nv;
            if (corrupt(ci, cj))
                put_u64(buf + 8, 2 * nv + 2); /* says one more element than it holds */
            snprintf(p, sizeof p, "%s/c", dir);
            mkdir(p, 0755);
            snprintf(p, sizeof p, "%s/c/%llu", dir, (unsigned long long)ci);
            mkdir(p, 0755);
            snprintf(p, sizeof p, "%s/c/%llu/%llu", dir, (unsigned long long)ci,
                     (unsigned long long)cj);
            f = fopen(p, "w");
            fwrite(buf, 1, len, f);
            fclose(f);
        }
}

typedef struct fixture {
    zf_store *store;
    zf_cache *cache;
    zf_node_meta meta;
    zf_array *a;
} fixture;

static void open_fixture(fixture *fx, const char *fill)
{
    write_array(fill);
    zf_err err = {""};
    ck_assert_int_eq(zf_store_open(dir, NULL, &fx->store, &err), ZF_OK);
    zf_bytes doc;
    ck_assert_int_eq(zf_store_get(fx->store, "zarr.json", &doc, &err), ZF_OK);
    ck_assert_int_eq(zf_meta_parse_v3("zarr.json", (char *)doc.data, doc.len, &fx->meta, &err),
                     ZF_OK);
    zf_bytes_free(&doc);
    ck_assert_msg(fx->meta.unsupported == ZF_OK, "%s", fx->meta.unsupported_why);
    ck_assert_int_eq(zf_cache_new(1 << 20, &fx->cache), ZF_OK);
    ck_assert_int_eq(zf_array_open(fx->store, "", &fx->meta.array, fx->cache, NULL, 1, &fx->a,
                                   &err),
                     ZF_OK);
}

static void close_fixture(fixture *fx)
{
    zf_array_close(fx->a);
    zf_cache_free(fx->cache);
    zf_node_meta_free(&fx->meta);
    zf_store_close(fx->store);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* The two views' expected bytes; fill: the missing chunk's value and depth. */
static void expected(uint8_t *data, uint8_t *mask, int16_t fill, uint8_t fill_depth)
{
    for (uint64_t i = 0; i < ROWS; i++)
        for (uint64_t j = 0; j < COLS; j++) {
            uint64_t e = i * COLS + j;
            bool miss = missing(i / CR, j / CC);
            int16_t v = miss ? fill : valid(i, j) ? value(i, j) : 0;
            memcpy(data + 2 * e, &v, 2);
            mask[e] = miss ? fill_depth : valid(i, j);
        }
}

/* Read [off, off+len) of view v in pieces; the corrupt chunk's rows (6..) are left out. */
static void check_view(zf_array *v, const uint8_t *want, size_t isz, bool zero_fill)
{
    uint64_t limit = 6 * COLS * isz; /* rows before chunk row 2's corrupt chunk... */
    uint8_t buf[ROWS * COLS * 2];
    zf_err err = {""};
    for (uint64_t off = 0; off < limit; off++)
        for (uint64_t len = 1; off + len <= limit; len += 3) {
            size_t got;
            ck_assert_int_eq(zf_array_read(v, off, buf, len, &got, &err), ZF_OK);
            ck_assert_uint_eq(got, len);
            ck_assert_msg(memcmp(buf, want + off, len) == 0, "off %llu len %llu",
                          (unsigned long long)off, (unsigned long long)len);
        }
    /* rows 6..: chunk (2, 0) and (2, 1) read, (2, 2) is an error */
    size_t got;
    ck_assert_int_eq(zf_array_read(v, limit, buf, 4 * isz, &got, &err), ZF_OK);
    ck_assert_mem_eq(buf, want + limit, 4 * isz);
    err.msg[0] = '\0';
    ck_assert_int_eq(zf_array_read(v, limit, buf, 5 * isz, &got, &err), ZF_ERR_CORRUPT);
    ck_assert_msg(strstr(err.msg, "c/2/2") != NULL, "%s", err.msg);
    /* zero-copy: the same bytes (a fill value other than zero bytes is copied instead) */
    zf_array_view view;
    zf_status st = zf_array_read_view(v, 0, (size_t)limit, &view, &got, &err);
    if (!zero_fill) {
        ck_assert_int_eq(st, ZF_ERR_UNSUPPORTED);
        return;
    }
    ck_assert_int_eq(st, ZF_OK);
    ck_assert_uint_eq(got, limit);
    size_t o = 0;
    for (size_t i = 0; i < view.npieces; i++) {
        ck_assert_mem_eq(view.pieces[i].iov_base, want + o, view.pieces[i].iov_len);
        o += view.pieces[i].iov_len;
    }
    ck_assert_uint_eq(o, limit);
    zf_array_view_release(v, &view);
}

START_TEST(two_views)
{
    static const struct {
        const char *fill;
        int16_t value;
        uint8_t depth;
    } fills[] = {{"null", 0, 0}, {"[-300]", -300, 1}, {"[0]", 0, 1}};
    for (size_t k = 0; k < sizeof fills / sizeof *fills; k++) {
        fixture fx;
        open_fixture(&fx, fills[k].fill);
        uint8_t data[ROWS * COLS * 2], mask[ROWS * COLS];
        expected(data, mask, fills[k].value, fills[k].depth);
        zf_array *m = zf_array_mask(fx.a);
        ck_assert_ptr_nonnull(m);
        ck_assert_ptr_null(zf_array_mask(m));
        ck_assert_uint_eq(zf_array_nbytes(fx.a), ROWS * COLS * 2);
        ck_assert_uint_eq(zf_array_nbytes(m), ROWS * COLS);
        zf_decode_stats before, after;
        zf_array_get_decode_stats(&before);
        check_view(fx.a, data, 2, fills[k].value == 0);
        zf_array_get_decode_stats(&after);
        /* 9 chunks: one missing, one corrupt (tried by each read that reaches it), 7 decoded */
        ck_assert_uint_eq(after.chunks - before.chunks, 7);
        check_view(m, mask, 1, fills[k].depth == 0);
        zf_array_get_decode_stats(&before);
        ck_assert_uint_eq(before.chunks, after.chunks); /* the mask decoded nothing again */
        close_fixture(&fx);
    }
}
END_TEST

START_TEST(plain_arrays_have_no_mask)
{
    char tmpl[] = "/tmp/zf-optional-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    const char *doc = "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [4], "
                      "\"data_type\": \"int16\", \"chunk_grid\": {\"name\": \"regular\", "
                      "\"configuration\": {\"chunk_shape\": [2]}}, \"chunk_key_encoding\": "
                      "{\"name\": \"default\"}, \"fill_value\": 0, \"codecs\": [{\"name\": "
                      "\"bytes\", \"configuration\": {\"endian\": \"little\"}}]}";
    zf_node_meta meta;
    zf_err err = {""};
    ck_assert_int_eq(zf_meta_parse_v3("zarr.json", doc, strlen(doc), &meta, &err), ZF_OK);
    zf_store *store;
    zf_cache *cache;
    zf_array *a;
    ck_assert_int_eq(zf_store_open(tmpl, NULL, &store, &err), ZF_OK);
    ck_assert_int_eq(zf_cache_new(1 << 20, &cache), ZF_OK);
    ck_assert_int_eq(zf_array_open(store, "", &meta.array, cache, NULL, 1, &a, &err), ZF_OK);
    ck_assert_ptr_null(zf_array_mask(a));
    zf_array_close(a);
    zf_cache_free(cache);
    zf_store_close(store);
    zf_node_meta_free(&meta);
    rmdir(tmpl);
}
END_TEST

ZF_CHECK_MAIN("array-optional", two_views, plain_arrays_have_no_mask)
