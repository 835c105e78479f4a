/* Unit tests for the array layer: chunk-grid arithmetic against brute force, runs, and reads of
 * the flat view from chunks the test writes itself (raw, C order, padded edge chunks). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zarrfs/array.h"

#include "../check_main.h"

START_TEST(grid_arithmetic)
{
    uint64_t shape[3] = {10, 7, 5}, chunks[3] = {4, 3, 5};
    zf_grid g;
    zf_grid_init(&g, 3, shape, chunks);
    ck_assert_uint_eq(g.grid[0], 3);
    ck_assert_uint_eq(g.grid[1], 3);
    ck_assert_uint_eq(g.grid[2], 1);
    ck_assert_uint_eq(zf_grid_nelems(&g), 350);
    ck_assert_uint_eq(zf_grid_nchunks(&g), 9);
    uint64_t e = 0;
    for (uint64_t i = 0; i < 10; i++)
        for (uint64_t j = 0; j < 7; j++)
            for (uint64_t k = 0; k < 5; k++, e++) {
                uint64_t c[3], cc[3], back[3], in;
                zf_grid_unravel(&g, e, c);
                ck_assert(c[0] == i && c[1] == j && c[2] == k);
                zf_grid_locate(&g, c, cc, &in);
                ck_assert(cc[0] == i / 4 && cc[1] == j / 3 && cc[2] == 0);
                ck_assert_uint_eq(in, ((i % 4) * 3 + j % 3) * 5 + k);
                uint64_t idx = zf_grid_chunk_index(&g, cc);
                ck_assert_uint_eq(idx, (i / 4) * 3 + j / 3);
                zf_grid_chunk_coords(&g, idx, back);
                ck_assert(back[0] == cc[0] && back[1] == cc[1] && back[2] == 0);
            }
}
END_TEST

START_TEST(grid_edge_cases)
{
    zf_grid g;
    zf_grid_init(&g, 0, NULL, NULL); /* 0-d: one element, one chunk */
    ck_assert_uint_eq(zf_grid_nelems(&g), 1);
    ck_assert_uint_eq(zf_grid_nchunks(&g), 1);
    uint64_t shape[2] = {5, 0}, chunks[2] = {2, 3};
    zf_grid_init(&g, 2, shape, chunks); /* a zero-length dimension */
    ck_assert_uint_eq(zf_grid_nelems(&g), 0);
    ck_assert_uint_eq(zf_grid_nchunks(&g), 0);
    uint64_t s1[1] = {5}, c1[1] = {100}; /* one chunk larger than the array */
    zf_grid_init(&g, 1, s1, c1);
    ck_assert_uint_eq(g.grid[0], 1);
}
END_TEST

typedef struct runs_check {
    const zf_grid *g;
    uint64_t next;
} runs_check;

/* Each run must continue where the last ended and agree element by element with locate. */
static zf_status check_run(void *ctx, const zf_run *r)
{
    runs_check *rc = ctx;
    ck_assert_uint_eq(r->elem, rc->next);
    ck_assert_uint_gt(r->count, 0);
    for (uint64_t i = 0; i < r->count; i++) {
        uint64_t c[ZF_MAX_DIMS], cc[ZF_MAX_DIMS], in;
        zf_grid_unravel(rc->g, r->elem + i, c);
        zf_grid_locate(rc->g, c, cc, &in);
        ck_assert_uint_eq(zf_grid_chunk_index(rc->g, cc), r->chunk);
        ck_assert_uint_eq(in, r->in_chunk + i);
    }
    rc->next = r->elem + r->count;
    return ZF_OK;
}

START_TEST(runs_match_brute_force)
{
    static const struct {
        unsigned nd;
        uint64_t shape[4], chunks[4];
    } cases[] = {
        {1, {17}, {5}},           {2, {9, 8}, {4, 8}},     {2, {9, 8}, {9, 8}},
        {3, {5, 6, 7}, {2, 6, 7}}, {3, {5, 6, 7}, {5, 2, 7}}, {4, {3, 4, 5, 2}, {2, 4, 3, 2}},
        {2, {6, 5}, {4, 10}},     {2, {1, 1}, {1, 1}},
    };
    for (size_t t = 0; t < sizeof cases / sizeof *cases; t++) {
        zf_grid g;
        zf_grid_init(&g, cases[t].nd, cases[t].shape, cases[t].chunks);
        uint64_t n = zf_grid_nelems(&g);
        for (uint64_t b = 0; b < n; b += 3)
            for (uint64_t e = b + 1; e <= n; e += 7) {
                runs_check rc = {&g, b};
                ck_assert_int_eq(zf_grid_runs(&g, b, e, check_run, &rc), ZF_OK);
                ck_assert_uint_eq(rc.next, e);
            }
    }
    /* Merged trailing dimensions give long runs: chunks spanning whole rows of 8. */
    zf_grid g;
    uint64_t shape[2] = {9, 8}, chunks[2] = {4, 8};
    zf_grid_init(&g, 2, shape, chunks);
    runs_check rc = {&g, 0};
    zf_grid_runs(&g, 0, 72, check_run, &rc);
}
END_TEST

/* ---- reads through a real file store ---- */

static char dir[256];

/* Element (i, j) of the test array: a distinct 4-byte value. */
static uint32_t value(uint64_t i, uint64_t j) { return (uint32_t)(i * 1000 + j + 7); }

/* Write a [13, 11] "<u4" array in [4, 3] chunks, C order, no compressor; chunk (1, 2) missing,
 * chunk (2, 0) truncated. */
static void write_array(const char *fill)
{
    char tmpl[] = "/tmp/zf-array-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    snprintf(dir, sizeof dir, "%s", tmpl);
    char p[512];
    snprintf(p, sizeof p, "%s/.zarray", dir);
    FILE *f = fopen(p, "w");
    fprintf(f, "{\"zarr_format\": 2, \"shape\": [13, 11], \"chunks\": [4, 3], \"dtype\": \"<u4\","
               " \"compressor\": null, \"filters\": null, \"fill_value\": %s, \"order\": \"C\"}",
            fill);
    fclose(f);
    for (uint64_t ci = 0; ci < 4; ci++)
        for (uint64_t cj = 0; cj < 4; cj++) {
            if (ci == 1 && cj == 2)
                continue;
            uint32_t buf[12] = {0};
            for (uint64_t a = 0; a < 4; a++)
                for (uint64_t b = 0; b < 3; b++)
                    buf[a * 3 + b] = value(ci * 4 + a, cj * 3 + b); /* padding holds junk */
            snprintf(p, sizeof p, "%s/%llu.%llu", dir, (unsigned long long)ci,
                     (unsigned long long)cj);
            f = fopen(p, "w");
            fwrite(buf, 1, ci == 2 && cj == 0 ? 20 : sizeof buf, f);
            fclose(f);
        }
}

typedef struct fixture {
    zf_store *store;
    zf_cache *cache;
    zf_pool *pool;
    zf_node_meta meta;
    zf_array *a;
} fixture;

static void open_fixture(fixture *fx, const char *fill, size_t cache_size, bool pool)
{
    write_array(fill);
    zf_err err = {""};
    ck_assert_int_eq(zf_store_open(dir, NULL, &fx->store, &err), ZF_OK);
    zf_bytes doc;
    ck_assert_int_eq(zf_store_get(fx->store, ".zarray", &doc, &err), ZF_OK);
    ck_assert_int_eq(zf_meta_parse_v2_array(".zarray", (char *)doc.data, doc.len, NULL, &fx->meta,
                                            &err),
                     ZF_OK);
    zf_bytes_free(&doc);
    ck_assert_int_eq(zf_cache_new(cache_size, &fx->cache), ZF_OK);
    fx->pool = NULL;
    if (pool)
        ck_assert_int_eq(zf_pool_new(2, &fx->pool), ZF_OK);
    ck_assert_int_eq(zf_array_open(fx->store, "", &fx->meta.array, fx->cache, fx->pool, 1, &fx->a,
                                   &err),
                     ZF_OK);
}

static void close_fixture(fixture *fx)
{
    zf_pool_free(fx->pool);
    zf_array_close(fx->a);
    zf_cache_free(fx->cache);
    zf_node_meta_free(&fx->meta);
    zf_store_close(fx->store);
}

/* Expected flat bytes, computed independently of the array layer. */
static void expected(uint8_t *out, uint32_t fill)
{
    for (uint64_t i = 0; i < 13; i++)
        for (uint64_t j = 0; j < 11; j++) {
            uint32_t v = (i / 4 == 1 && j / 3 == 2) ? fill : value(i, j);
            memcpy(out + (i * 11 + j) * 4, &v, 4);
        }
}

static void read_ranges(fixture *fx, const uint8_t *want)
{
    uint64_t total = 13 * 11 * 4;
    ck_assert_uint_eq(zf_array_nbytes(fx->a), total);
    uint8_t buf[13 * 11 * 4 + 16];
    zf_err err = {""};
    srand(7);
    for (int t = 0; t < 3000; t++) {
        uint64_t off = (uint64_t)rand() % total, len = 1 + (uint64_t)rand() % (total + 8);
        /* avoid row 8..11 (chunk row 2, where chunk (2,0) is truncated) */
        if (off + len > 8 * 11 * 4)
            len = off < 8 * 11 * 4 ? 8 * 11 * 4 - off : 0;
        if (len == 0)
            continue;
        size_t got;
        ck_assert_int_eq(zf_array_read(fx->a, off, buf, len, &got, &err), ZF_OK);
        ck_assert_uint_eq(got, len);
        ck_assert_msg(memcmp(buf, want + off, len) == 0, "off %llu len %llu",
                      (unsigned long long)off, (unsigned long long)len);
    }
    size_t got;
    ck_assert_int_eq(zf_array_read(fx->a, total - 3, buf, 100, &got, &err), ZF_OK);
    ck_assert_uint_eq(got, 3); /* short at the end */
    ck_assert_int_eq(memcmp(buf, want + total - 3, 3), 0);
    ck_assert_int_eq(zf_array_read(fx->a, total, buf, 100, &got, &err), ZF_OK);
    ck_assert_uint_eq(got, 0);
    ck_assert_int_eq(zf_array_read(fx->a, total + 1000, buf, 100, &got, &err), ZF_OK);
    ck_assert_uint_eq(got, 0);
    /* The truncated chunk is an error, never fill. */
    err.msg[0] = '\0';
    ck_assert_int_eq(zf_array_read(fx->a, 8 * 11 * 4, buf, 8, &got, &err), ZF_ERR_CORRUPT);
    ck_assert_msg(strstr(err.msg, "2.0") != NULL, "%s", err.msg);
}

START_TEST(read_flat_view)
{
    fixture fx;
    uint8_t want[13 * 11 * 4];
    open_fixture(&fx, "4294967295", 1 << 20, false);
    expected(want, 4294967295u);
    read_ranges(&fx, want);
    close_fixture(&fx);
    open_fixture(&fx, "null", 1 << 20, true); /* null fill reads as zeros; with a pool */
    expected(want, 0);
    read_ranges(&fx, want);
    close_fixture(&fx);
    open_fixture(&fx, "12345", 100, true); /* a cache smaller than one chunk still works */
    expected(want, 12345);
    read_ranges(&fx, want);
    zf_cache_stats cs;
    zf_cache_get_stats(fx.cache, &cs);
    ck_assert_uint_gt(cs.evictions, 0);
    close_fixture(&fx);
}
END_TEST

/* Gather a view's pieces into out (what fuse_reply_iov sends). */
static size_t gather(const zf_array_view *v, uint8_t *out)
{
    size_t o = 0;
    for (size_t i = 0; i < v->npieces; i++) {
        memcpy(out + o, v->pieces[i].iov_base, v->pieces[i].iov_len);
        o += v->pieces[i].iov_len;
    }
    ck_assert_uint_eq(o, v->len);
    return o;
}

/* zf_array_read_view describes the same bytes zf_array_read copies, pins what it points into
 * until released, and declines (UNSUPPORTED) where it cannot point: a non-zero fill value in an
 * absent chunk, an array open for writing. */
START_TEST(read_view_matches_read)
{
    static zf_array_view v;
    uint64_t total = 13 * 11 * 4, limit = 8 * 11 * 4; /* rows past 8: the truncated chunk */
    uint8_t want[13 * 11 * 4], got[13 * 11 * 4 + 16];
    zf_err err = {""};
    size_t n;
    fixture fx;
    open_fixture(&fx, "null", 1 << 20, true); /* absent chunk (1, 2) reads as zeros */
    expected(want, 0);
    srand(11);
    for (int t = 0; t < 3000; t++) {
        uint64_t off = (uint64_t)rand() % limit, len = 1 + (uint64_t)rand() % limit;
        if (off + len > limit)
            len = limit - off;
        ck_assert_int_eq(zf_array_read_view(fx.a, off, len, &v, &n, &err), ZF_OK);
        ck_assert_uint_eq(n, len);
        ck_assert_uint_eq(gather(&v, got), len);
        ck_assert_msg(memcmp(got, want + off, len) == 0, "off %llu len %llu",
                      (unsigned long long)off, (unsigned long long)len);
        ck_assert_uint_le(v.npins, 16);
        /* contiguous bytes of one chunk are one piece: at most one piece per row and chunk */
        ck_assert_uint_le(v.npieces, 2 * (len / 12 + 2));
        zf_array_view_release(fx.a, &v);
        ck_assert_uint_eq(v.npins, 0);
    }
    ck_assert_int_eq(zf_array_read_view(fx.a, total - 3, 100, &v, &n, &err), ZF_OK);
    ck_assert_uint_eq(n, 3);
    zf_array_view_release(fx.a, &v);
    ck_assert_int_eq(zf_array_read_view(fx.a, total, 100, &v, &n, &err), ZF_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_uint_eq(v.npieces, 0);
    /* the truncated chunk is an error, and nothing stays pinned */
    ck_assert_int_eq(zf_array_read_view(fx.a, limit - 8, 16, &v, &n, &err), ZF_ERR_CORRUPT);
    ck_assert_uint_eq(v.npins, 0);
    close_fixture(&fx); /* zf_cache_free requires every pin released */

    open_fixture(&fx, "12345", 1 << 20, false);
    expected(want, 12345);
    /* chunk (1, 2): rows 4-7, columns 6-8 are absent: a fill pattern cannot be pointed at */
    ck_assert_int_eq(zf_array_read_view(fx.a, (4 * 11 + 6) * 4, 12, &v, &n, &err),
                     ZF_ERR_UNSUPPORTED);
    ck_assert_uint_eq(v.npins, 0);
    ck_assert_int_eq(zf_array_read_view(fx.a, 0, 4 * 11 * 4, &v, &n, &err), ZF_OK);
    ck_assert_uint_eq(gather(&v, got), 4 * 11 * 4);
    ck_assert_int_eq(memcmp(got, want, 4 * 11 * 4), 0);
    zf_array_view_release(fx.a, &v);
    ck_assert_int_eq(zf_array_enable_write(fx.a, false, &err), ZF_OK);
    ck_assert_int_eq(zf_array_read_view(fx.a, 0, 16, &v, &n, &err), ZF_ERR_UNSUPPORTED);
    close_fixture(&fx);
}
END_TEST

/* Wait up to 5 s for the pool to have loaded chunk into the cache. */
static bool eventually_cached(zf_cache *c, uint64_t chunk)
{
    for (int i = 0; i < 500; i++) {
        if (zf_cache_contains(c, 1, chunk))
            return true;
        usleep(10000);
    }
    return false;
}

START_TEST(sequential_reads_decode_the_next_band_ahead)
{
    fixture fx; /* 13 x 11 in 4 x 3 chunks: bands of 4 chunks, 4 rows x 11 elements each */
    open_fixture(&fx, "0", 1 << 20, true);
    uint8_t buf[44 * 4];
    size_t got;
    zf_err err = {""};
    ck_assert_int_eq(zf_array_read(fx.a, 0, buf, 44, &got, &err), ZF_OK);
    ck_assert_int_eq(zf_array_read(fx.a, 44, buf, 44, &got, &err), ZF_OK); /* row 1 of band 0 */
    for (uint64_t c = 4; c < 8; c++) /* band 1, not touched by any read */
        ck_assert_msg(eventually_cached(fx.cache, c), "chunk %llu", (unsigned long long)c);
    ck_assert(!zf_cache_contains(fx.cache, 1, 12)); /* band 3: not yet */
    close_fixture(&fx);

    open_fixture(&fx, "0", 1 << 20, true); /* reads that jump about queue nothing ahead */
    ck_assert_int_eq(zf_array_read(fx.a, 12 * 44, buf, 8, &got, &err), ZF_OK); /* row 12 */
    ck_assert_int_eq(zf_array_read(fx.a, 4, buf, 8, &got, &err), ZF_OK);       /* row 0 */
    ck_assert_int_eq(zf_array_read(fx.a, 5 * 44 + 40, buf, 4, &got, &err), ZF_OK); /* row 5 */
    usleep(200000);
    ck_assert(!zf_cache_contains(fx.cache, 1, 9)); /* band 2 */
    ck_assert(!zf_cache_contains(fx.cache, 1, 10));
    close_fixture(&fx);
}
END_TEST

START_TEST(readahead_of_two_bands)
{
    fixture fx; /* 13 x 11 in 4 x 3 chunks: 4 bands of 4 chunks */
    open_fixture(&fx, "0", 1 << 20, true);
    zf_array_set_readahead(fx.a, 2, 0);
    uint8_t buf[44];
    size_t got;
    zf_err err = {""};
    ck_assert_int_eq(zf_array_read(fx.a, 0, buf, 44, &got, &err), ZF_OK);
    ck_assert_int_eq(zf_array_read(fx.a, 44, buf, 44, &got, &err), ZF_OK); /* band 0, row 1 */
    for (uint64_t c = 4; c < 12; c++) /* bands 1 and 2 (chunk 8 is truncated: never cached) */
        if (c != 8)
            ck_assert_msg(eventually_cached(fx.cache, c), "chunk %llu", (unsigned long long)c);
    usleep(100000);
    ck_assert(!zf_cache_contains(fx.cache, 1, 12)); /* band 3: beyond two bands */
    ck_assert_int_eq(zf_array_read(fx.a, 4 * 44, buf, 44, &got, &err), ZF_OK); /* band 1 */
    ck_assert(eventually_cached(fx.cache, 12)); /* now band 3 is two ahead */
    close_fixture(&fx);
}
END_TEST

/* A remote store's readahead in chunks: bands of 4 chunks, at least 9 chunks ahead: 3 bands. */
START_TEST(readahead_in_chunks)
{
    fixture fx;
    open_fixture(&fx, "0", 1 << 20, true);
    zf_array_set_readahead(fx.a, 1, 9);
    uint8_t buf[44];
    size_t got;
    zf_err err = {""};
    ck_assert_int_eq(zf_array_read(fx.a, 0, buf, 44, &got, &err), ZF_OK);
    ck_assert_int_eq(zf_array_read(fx.a, 44, buf, 44, &got, &err), ZF_OK); /* band 0, row 1 */
    for (uint64_t c = 4; c < 16; c++) /* bands 1 to 3 (chunk 8 is truncated: never cached) */
        if (c != 8)
            ck_assert_msg(eventually_cached(fx.cache, c), "chunk %llu", (unsigned long long)c);
    close_fixture(&fx);
}
END_TEST

START_TEST(a_second_pass_reads_ahead_again)
{
    /* 64 x 8 "|u1" in 4 x 8 chunks: 16 bands of one 32-byte chunk; a cache of four chunks lets
     * readahead run (a band is a quarter of it) but forgets the first bands by the end. */
    char tmpl[] = "/tmp/zf-array-XXXXXX", p[512];
    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    snprintf(p, sizeof p, "%s/.zarray", tmpl);
    FILE *f = fopen(p, "w");
    fprintf(f, "{\"zarr_format\": 2, \"shape\": [64, 8], \"chunks\": [4, 8], \"dtype\": \"|u1\","
               " \"compressor\": null, \"filters\": null, \"fill_value\": 0, \"order\": \"C\"}");
    fclose(f);
    for (int c = 0; c < 16; c++) {
        uint8_t chunk[32];
        memset(chunk, c + 1, sizeof chunk);
        snprintf(p, sizeof p, "%s/%d.0", tmpl, c);
        f = fopen(p, "w");
        fwrite(chunk, 1, sizeof chunk, f);
        fclose(f);
    }
    fixture fx;
    zf_err err = {""};
    ck_assert_int_eq(zf_store_open(tmpl, NULL, &fx.store, &err), ZF_OK);
    zf_bytes doc;
    ck_assert_int_eq(zf_store_get(fx.store, ".zarray", &doc, &err), ZF_OK);
    ck_assert_int_eq(zf_meta_parse_v2_array(".zarray", (char *)doc.data, doc.len, NULL, &fx.meta,
                                            &err),
                     ZF_OK);
    zf_bytes_free(&doc);
    ck_assert_int_eq(zf_cache_new(4 * 32, &fx.cache), ZF_OK);
    ck_assert_int_eq(zf_pool_new(2, &fx.pool), ZF_OK);
    ck_assert_int_eq(zf_array_open(fx.store, "", &fx.meta.array, fx.cache, fx.pool, 1, &fx.a, &err),
                     ZF_OK);
    uint8_t buf[8];
    size_t got;
    for (int pass = 0; pass < 2; pass++) {
        for (uint64_t off = 0; off < (pass ? 16 : 512); off += 8) { /* pass 2: rows 0 and 1 */
            ck_assert_int_eq(zf_array_read(fx.a, off, buf, 8, &got, &err), ZF_OK);
            ck_assert_uint_eq(buf[0], off / 32 + 1);
        }
        if (pass == 0) { /* by the end of the first pass the first bands are gone */
            usleep(100000);
            ck_assert(!zf_cache_contains(fx.cache, 1, 1));
        }
    }
    ck_assert(eventually_cached(fx.cache, 1)); /* band 1, queued again for the second pass */
    close_fixture(&fx);
}
END_TEST

ZF_CHECK_MAIN("array", grid_arithmetic, grid_edge_cases, runs_match_brute_force, read_flat_view,
              read_view_matches_read,
              sequential_reads_decode_the_next_band_ahead, readahead_of_two_bands,
              readahead_in_chunks,
              a_second_pass_reads_ahead_again)
