/* Unit tests for the rectilinear chunk grid's arithmetic in the array layer (zf_grid with
 * edges, src/array/array.c): element -> chunk and index inside the chunk, chunk boxes, and the
 * runs of zf_grid_runs, checked against a brute force that the test computes itself from the
 * explicit edge lists that zarr-extensions chunk-grids/rectilinear README.md gives as each
 * declaration's expansion (cumulative sums and a linear scan, as its "Indexing" section says:
 * "the index of the first element of C that exceeds idx[n]"). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarrfs/array.h"

#include "../check_main.h"

static void parse(const char *shape, const char *chunk_shapes, zf_node_meta *m)
{
    char doc[4096];
    snprintf(doc, sizeof doc,
             "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": %s, \"data_type\": "
             "\"int8\", \"chunk_grid\": {\"name\": \"rectilinear\", \"configuration\": "
             "{\"kind\": \"inline\", \"chunk_shapes\": %s}}, \"chunk_key_encoding\": {\"name\": "
             "\"default\"}, \"fill_value\": 0, \"codecs\": [{\"name\": \"bytes\"}]}",
             shape, chunk_shapes);
    zf_err err = {""};
    ck_assert_msg(zf_meta_parse_v3("zarr.json", doc, strlen(doc), m, &err) == ZF_OK, "%s",
                  err.msg);
    ck_assert_int_eq(m->unsupported, ZF_OK);
}

/* The brute force: explicit edge lists per dimension (0-terminated). */
typedef struct explicit_grid {
    unsigned ndim;
    uint64_t shape[5];
    uint64_t edges[5][8];
} explicit_grid;

/* Chunk index along d of x: the first cumulative sum exceeding x; *lo and *edge of it. */
static uint64_t scan(const explicit_grid *x, unsigned d, uint64_t i, uint64_t *lo, uint64_t *edge)
{
    uint64_t c = 0, sum = 0;
    while (sum + x->edges[d][c] <= i)
        sum += x->edges[d][c++];
    *lo = sum;
    *edge = x->edges[d][c];
    return c;
}

/* Chunks along d reaching into the array. */
static uint64_t count_along(const explicit_grid *x, unsigned d)
{
    uint64_t lo, edge;
    return x->shape[d] ? scan(x, d, x->shape[d] - 1, &lo, &edge) + 1 : 0;
}

/* Element elem (C order) -> its chunk's linear index and its index inside the chunk. */
static void brute(const explicit_grid *x, uint64_t elem, uint64_t *chunk, uint64_t *in)
{
    uint64_t coords[5], rest = elem;
    for (unsigned d = x->ndim; d-- > 0;) {
        coords[d] = rest % x->shape[d];
        rest /= x->shape[d];
    }
    *chunk = 0;
    *in = 0;
    for (unsigned d = 0; d < x->ndim; d++) {
        uint64_t lo, edge, c = scan(x, d, coords[d], &lo, &edge);
        *chunk = *chunk * count_along(x, d) + c;
        *in = *in * edge + (coords[d] - lo);
    }
}

typedef struct runs_check {
    const explicit_grid *x;
    uint64_t next, nruns;
} runs_check;

static zf_status check_run(void *ctx, const zf_run *r)
{
    runs_check *rc = ctx;
    ck_assert_uint_eq(r->elem, rc->next);
    ck_assert_uint_gt(r->count, 0);
    for (uint64_t i = 0; i < r->count; i++) {
        uint64_t chunk, in;
        brute(rc->x, r->elem + i, &chunk, &in);
        ck_assert_uint_eq(chunk, r->chunk);
        ck_assert_uint_eq(in, r->in_chunk + i);
    }
    rc->next = r->elem + r->count;
    rc->nruns++;
    return ZF_OK;
}

static void check_grid(const zf_grid *g, const explicit_grid *x)
{
    uint64_t n = zf_grid_nelems(g), nchunks = 1;
    for (unsigned d = 0; d < x->ndim; d++) {
        ck_assert_uint_eq(g->grid[d], count_along(x, d));
        nchunks *= count_along(x, d);
    }
    ck_assert_uint_eq(zf_grid_nchunks(g), nchunks);
    /* locate, element by element */
    for (uint64_t e = 0; e < n; e++) {
        uint64_t c[ZF_MAX_DIMS], cc[ZF_MAX_DIMS], in, chunk, bin;
        zf_grid_unravel(g, e, c);
        zf_grid_locate(g, c, cc, &in);
        brute(x, e, &chunk, &bin);
        ck_assert_uint_eq(zf_grid_chunk_index(g, cc), chunk);
        ck_assert_uint_eq(in, bin);
        /* the chunk's box holds the element, and its shape is the edges' */
        uint64_t org[ZF_MAX_DIMS], shp[ZF_MAX_DIMS];
        uint64_t nel = zf_grid_chunk_box(g, cc, org, shp), prod = 1;
        for (unsigned d = 0; d < x->ndim; d++) {
            uint64_t lo, edge;
            scan(x, d, c[d], &lo, &edge);
            ck_assert_uint_eq(org[d], lo);
            ck_assert_uint_eq(shp[d], edge);
            prod *= edge;
        }
        ck_assert_uint_eq(nel, prod);
    }
    /* runs over many ranges */
    uint64_t step = n / 61 + 1;
    for (uint64_t b = 0; b < n; b += step) {
        uint64_t ends[4] = {b + 1, b + 7, b + step + 3, n};
        for (unsigned k = 0; k < 4; k++) {
            uint64_t e = ends[k] < n ? ends[k] : n;
            runs_check rc = {x, b, 0};
            ck_assert_int_eq(zf_grid_runs(g, b, e, check_run, &rc), ZF_OK);
            ck_assert_uint_eq(rc.next, e);
        }
    }
}

/* README.md's "Example": [6, 6, 6, 6, 6] with the expansions it states. */
START_TEST(readme_example)
{
    zf_node_meta m;
    parse("[6, 6, 6, 6, 6]", "[4, [1, 2, 3], [[4, 2]], [[1, 3], 3], [4, 4, 4]]", &m);
    zf_grid g;
    zf_grid_init_meta(&g, &m.array);
    ck_assert(g.rect);
    explicit_grid x = {5, {6, 6, 6, 6, 6},
                       {{4, 4}, {1, 2, 3}, {4, 4}, {1, 1, 1, 3}, {4, 4, 4}}};
    check_grid(&g, &x);
    zf_node_meta_free(&m);
}
END_TEST

/* README.md's "Indexing": edges [[16, 10], [24, 14]]; array index (20, 15) is in chunk (1, 0)
 * at chunk index (4, 15). */
START_TEST(readme_indexing)
{
    zf_node_meta m;
    parse("[26, 38]", "[[16, 10], [24, 14]]", &m);
    zf_grid g;
    zf_grid_init_meta(&g, &m.array);
    uint64_t c[2] = {20, 15}, cc[2], in, shp[2];
    zf_grid_locate(&g, c, cc, &in);
    ck_assert_uint_eq(cc[0], 1);
    ck_assert_uint_eq(cc[1], 0);
    ck_assert_uint_eq(in, 4 * 24 + 15); /* (4, 15) in a chunk of shape [10, 24] */
    zf_grid_chunk_box(&g, cc, NULL, shp);
    ck_assert_uint_eq(shp[0], 10);
    ck_assert_uint_eq(shp[1], 24);
    explicit_grid x = {2, {26, 38}, {{16, 10}, {24, 14}}};
    check_grid(&g, &x);
    zf_node_meta_free(&m);
}
END_TEST

/* Mixed regular and rectilinear dimensions, trailing dimensions spanned whole (merged into
 * longer runs), and overflow past the end. */
START_TEST(mixed_and_merged)
{
    static const struct {
        const char *shape, *shapes;
        explicit_grid x;
    } cases[] = {
        {"[7, 5]", "[[[1, 2], 5], 5]", {2, {7, 5}, {{1, 1, 5}, {5}}}},
        {"[7, 5, 3]", "[[[1, 2], 5], 5, 3]", {3, {7, 5, 3}, {{1, 1, 5}, {5}, {3}}}},
        {"[7, 6]", "[3, [2, 1, 3]]", {2, {7, 6}, {{3, 3, 3}, {2, 1, 3}}}},
        {"[4, 6, 2]", "[[1, 3], [[2, 2], 1, 1], 2]", {3, {4, 6, 2}, {{1, 3}, {2, 2, 1, 1}, {2}}}},
        {"[5, 4, 3]", "[[2, 9], [1, 3], [[1, 3]]]", {3, {5, 4, 3}, {{2, 9}, {1, 3}, {1, 1, 1}}}},
        {"[9, 2]", "[[4, 4, 5], 5]", {2, {9, 2}, {{4, 4, 5}, {5}}}},
        {"[3, 4, 5]", "[[1, 2], 4, [2, 3]]", {3, {3, 4, 5}, {{1, 2}, {4}, {2, 3}}}},
    };
    for (size_t t = 0; t < sizeof cases / sizeof *cases; t++) {
        zf_node_meta m;
        parse(cases[t].shape, cases[t].shapes, &m);
        zf_grid g;
        zf_grid_init_meta(&g, &m.array);
        ck_assert(g.rect);
        check_grid(&g, &cases[t].x);
        zf_node_meta_free(&m);
    }
    /* [[1, 2], 4] over [3, 4]: rows of 4 are whole, so a run spans a chunk's rows */
    zf_node_meta m;
    parse("[3, 4]", "[[1, 2], 4]", &m);
    zf_grid g;
    zf_grid_init_meta(&g, &m.array);
    explicit_grid x = {2, {3, 4}, {{1, 2}, {4}}};
    runs_check rc = {&x, 0, 0};
    ck_assert_int_eq(zf_grid_runs(&g, 0, 12, check_run, &rc), ZF_OK);
    ck_assert_uint_eq(rc.nruns, 2); /* chunk 0: 4 elements, chunk 1: 8 */
    zf_node_meta_free(&m);
}
END_TEST

/* A count of 2^62 is one run: lookups near the far end of a long array are exact. */
START_TEST(huge_runs)
{
    zf_node_meta m;
    parse("[1000000000003]", "[[3, [2, 4611686018427387904]]]", &m);
    zf_grid g;
    zf_grid_init_meta(&g, &m.array);
    ck_assert_uint_eq(g.grid[0], 1 + 500000000000ull);
    uint64_t c, lo, edge;
    zf_grid_chunk_along(&g, 0, 1000000000002ull, &c, &lo, &edge);
    ck_assert_uint_eq(c, 500000000000ull);
    ck_assert_uint_eq(lo, 1000000000001ull);
    ck_assert_uint_eq(edge, 2);
    zf_grid_chunk_along(&g, 0, 2, &c, &lo, &edge);
    ck_assert_uint_eq(c, 0);
    ck_assert_uint_eq(edge, 3);
    zf_node_meta_free(&m);
}
END_TEST

ZF_CHECK_MAIN("array-rect-grid", readme_example, readme_indexing, mixed_and_merged, huge_runs)
