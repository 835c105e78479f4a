/* Unit tests for the "rectilinear" chunk grid of final Zarr v3 (src/meta/rectilinear.c):
 * every form of zarr-extensions chunk-grids/rectilinear (README.md's example, explicit lists,
 * run-length pairs, integers, overflow chunks), its memory bound for hostile counts, and the
 * exact error lines of refused declarations. The expected runs are derived by hand from the
 * README's expansions ("expands to [1, 1, 1, 3]", ...), never taken from the parser. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarrfs/meta.h"

#include "../check_main.h"

#define BYTES_LE "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]"

/* A v3 array document of `shape` (JSON list) with chunk_grid `grid` (JSON) and codecs. */
static zf_status parse_grid(const char *shape, const char *grid, const char *codecs,
                            zf_node_meta *m, zf_err *err)
{
    size_t cap = strlen(shape) + strlen(grid) + (codecs ? strlen(codecs) : 0) + 512;
    char *doc = malloc(cap);
    snprintf(doc, cap,
             "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": %s, \"data_type\": "
             "\"int8\", \"chunk_grid\": %s, \"chunk_key_encoding\": {\"name\": \"default\"}, "
             "\"fill_value\": 0, \"codecs\": %s}",
             shape, grid, codecs ? codecs : BYTES_LE);
    err->msg[0] = '\0';
    memset(m, 0, sizeof *m);
    zf_status st = zf_meta_parse_v3("zarr.json", doc, strlen(doc), m, err);
    free(doc);
    return st;
}

static zf_status parse_shapes(const char *shape, const char *chunk_shapes, zf_node_meta *m,
                              zf_err *err)
{
    size_t cap = strlen(chunk_shapes) + 128;
    char *grid = malloc(cap);
    snprintf(grid, cap,
             "{\"name\": \"rectilinear\", \"configuration\": {\"kind\": \"inline\", "
             "\"chunk_shapes\": %s}}",
             chunk_shapes);
    zf_status st = parse_grid(shape, grid, NULL, m, err);
    free(grid);
    return st;
}

/* Dimension e holds the runs (edge, count) given, n of them, ending at `end`. */
static void check_runs(const zf_chunk_edges *e, size_t n, const uint64_t (*runs)[2], uint64_t end)
{
    ck_assert_uint_eq(e->nruns, n);
    uint64_t first = 0, start = 0;
    for (size_t r = 0; r < n; r++) {
        ck_assert_uint_eq(e->edge[r], runs[r][0]);
        ck_assert_uint_eq(e->first[r], first);
        ck_assert_uint_eq(e->start[r], start);
        first += runs[r][1];
        start += runs[r][0] * runs[r][1];
    }
    ck_assert_uint_eq(e->first[n], first);
    ck_assert_uint_eq(e->start[n], start);
    ck_assert_uint_eq(start, end);
}

/* README.md "Example": shape [6, 6, 6, 6, 6] and
 *   4            -> [4, 4]        (regular)
 *   [1, 2, 3]    -> itself
 *   [[4, 2]]     -> [4, 4]        (one run: regular)
 *   [[1, 3], 3]  -> [1, 1, 1, 3]
 *   [4, 4, 4]    -> [4, 4, 4], whose third chunk lies wholly past the end (kept out) */
START_TEST(readme_example)
{
    zf_node_meta m;
    zf_err err;
    ck_assert_int_eq(parse_shapes("[6, 6, 6, 6, 6]", "[4, [1, 2, 3], [[4, 2]], [[1, 3], 3], [4, 4, 4]]",
                                  &m, &err),
                     ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_OK);
    const zf_array_meta *a = &m.array;
    ck_assert_ptr_nonnull(a->rect);
    static const uint64_t d0[][2] = {{4, 2}}, d1[][2] = {{1, 1}, {2, 1}, {3, 1}},
                          d2[][2] = {{4, 2}}, d3[][2] = {{1, 3}, {3, 1}}, d4[][2] = {{4, 2}};
    check_runs(&a->rect[0], 1, d0, 8);
    check_runs(&a->rect[1], 3, d1, 6);
    check_runs(&a->rect[2], 1, d2, 8);
    check_runs(&a->rect[3], 2, d3, 6);
    check_runs(&a->rect[4], 1, d4, 8);
    ck_assert_uint_eq(a->rect[0].extent, UINT64_MAX); /* an integer: unbounded */
    ck_assert_uint_eq(a->rect[1].extent, 6);
    ck_assert_uint_eq(a->rect[2].extent, 8);
    ck_assert_uint_eq(a->rect[4].extent, 12);
    /* the bounding chunk: the largest edge of each dimension */
    static const uint64_t big[5] = {4, 3, 4, 3, 4};
    for (unsigned d = 0; d < 5; d++)
        ck_assert_uint_eq(a->chunks[d], big[d]);
    ck_assert_str_eq(a->chunk_shapes_json, "[4,[1,2,3],[[4,2]],[[1,3],3],[4,4,4]]");
    /* chunk lookups along [1, 1, 1, 3] */
    static const uint64_t x_chunk[6] = {0, 1, 2, 3, 3, 3}, x_lo[6] = {0, 1, 2, 3, 3, 3},
                          x_edge[6] = {1, 1, 1, 3, 3, 3};
    for (uint64_t x = 0; x < 6; x++) {
        uint64_t c, lo, edge;
        zf_chunk_edges_find(&a->rect[3], x, &c, &lo, &edge);
        ck_assert_uint_eq(c, x_chunk[x]);
        ck_assert_uint_eq(lo, x_lo[x]);
        ck_assert_uint_eq(edge, x_edge[x]);
        zf_chunk_edges_chunk(&a->rect[3], x_chunk[x], &lo, &edge);
        ck_assert_uint_eq(lo, x_lo[x]);
        ck_assert_uint_eq(edge, x_edge[x]);
    }
    zf_node_meta_free(&m);
}
END_TEST

/* zarrs' documented configurations (zarrs/src/array/chunk_grid/rectilinear.rs): the explicit
 * [5, 5, 5, 15, 15, 20, 35] and its run-length form [[5, 3], [15, 2], 20, 35] are the same
 * grid; a declaration of one run per dimension is a regular grid. */
START_TEST(explicit_equals_run_length)
{
    zf_node_meta m1, m2;
    zf_err err;
    ck_assert_int_eq(parse_shapes("[100, 10]", "[[5, 5, 5, 15, 15, 20, 35], [10]]", &m1, &err),
                     ZF_OK);
    ck_assert_int_eq(parse_shapes("[100, 10]", "[[[5, 3], [15, 2], 20, 35], [10]]", &m2, &err),
                     ZF_OK);
    static const uint64_t runs[][2] = {{5, 3}, {15, 2}, {20, 1}, {35, 1}};
    check_runs(&m1.array.rect[0], 4, runs, 100);
    check_runs(&m2.array.rect[0], 4, runs, 100);
    ck_assert_uint_eq(m1.array.chunks[0], 35);
    ck_assert_uint_eq(m1.array.chunks[1], 10);
    zf_node_meta_free(&m1);
    zf_node_meta_free(&m2);
    /* all regular: [10, 20] and [[[2, 3]], 5] */
    ck_assert_int_eq(parse_shapes("[30, 40]", "[10, 20]", &m1, &err), ZF_OK);
    ck_assert_ptr_null(m1.array.rect);
    ck_assert_uint_eq(m1.array.chunks[0], 10);
    ck_assert_uint_eq(m1.array.chunks[1], 20);
    ck_assert_str_eq(m1.array.chunk_shapes_json, "[10,20]");
    zf_node_meta_free(&m1);
    ck_assert_int_eq(parse_shapes("[6, 7]", "[[[2, 3]], 5]", &m1, &err), ZF_OK);
    ck_assert_ptr_null(m1.array.rect);
    ck_assert_uint_eq(m1.array.chunks[0], 2);
    ck_assert_uint_eq(m1.array.chunks[1], 5);
    zf_node_meta_free(&m1);
    /* a dimension of length 0: no chunks along it */
    ck_assert_int_eq(parse_shapes("[0, 7]", "[[3, 4], [1, 6]]", &m1, &err), ZF_OK);
    ck_assert_ptr_nonnull(m1.array.rect);
    ck_assert_uint_eq(m1.array.rect[0].nruns, 0);
    ck_assert_uint_eq(m1.array.chunks[0], 3);
    zf_node_meta_free(&m1);
}
END_TEST

/* Counts far beyond the array cost one run: 2^62 chunks of 2 after one of 3, over 11 elements,
 * keep the 4 that reach into it; the declared extent saturates. */
START_TEST(hostile_counts)
{
    zf_node_meta m;
    zf_err err;
    ck_assert_int_eq(parse_shapes("[11]", "[[3, [2, 4611686018427387904]]]", &m, &err), ZF_OK);
    static const uint64_t runs[][2] = {{3, 1}, {2, 4}};
    check_runs(&m.array.rect[0], 2, runs, 11);
    ck_assert_uint_eq(m.array.rect[0].extent, 3 + ((uint64_t)1 << 63));
    zf_node_meta_free(&m);
    ck_assert_int_eq(parse_shapes("[11]", "[[3, [7, 4611686018427387904], [9, 9223372036854775807]]]",
                                  &m, &err),
                     ZF_OK);
    static const uint64_t runs2[][2] = {{3, 1}, {7, 2}};
    check_runs(&m.array.rect[0], 2, runs2, 17);
    ck_assert_uint_eq(m.array.rect[0].extent, UINT64_MAX);
    zf_node_meta_free(&m);
    /* an edge past zarrfs's chunk limit: unsupported (the array keeps its size), not a crash */
    ck_assert_int_eq(parse_shapes("[11]", "[[1, 9223372036854775807]]", &m, &err), ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_ERR_UNSUPPORTED);
    zf_node_meta_free(&m);
    /* 20 000 explicit edges of alternating lengths: as many runs (more would time yajl's tree
     * builder, which grows a list one element at a time, not this parser) */
    size_t n = 20000, cap = n * 3 + 16, o = 0;
    char *list = malloc(cap);
    o += (size_t)snprintf(list + o, cap - o, "[[");
    for (size_t i = 0; i < n; i++)
        o += (size_t)snprintf(list + o, cap - o, "%s%d", i ? "," : "", i % 2 ? 1 : 2);
    snprintf(list + o, cap - o, "]]");
    ck_assert_int_eq(parse_shapes("[30000]", list, &m, &err), ZF_OK);
    ck_assert_uint_eq(m.array.rect[0].nruns, n);
    ck_assert_uint_eq(m.array.rect[0].first[n], n);
    zf_node_meta_free(&m);
    free(list);
}
END_TEST

static const struct {
    const char *shape, *grid, *msg;
} INVALID[] = {
    {"[6]", "{\"name\": \"rectilinear\"}",
     "zarr.json: \"chunk_grid\": \"rectilinear\" needs a \"configuration\" object"},
    {"[6]", "{\"name\": \"rectilinear\", \"configuration\": {\"chunk_shapes\": [6]}}",
     "zarr.json: \"chunk_grid\": rectilinear: \"kind\" must be the string \"inline\""},
    {"[6]", "{\"name\": \"rectilinear\", \"configuration\": {\"kind\": 1, \"chunk_shapes\": [6]}}",
     "zarr.json: \"chunk_grid\": rectilinear: \"kind\" must be the string \"inline\""},
    {"[6]", "{\"name\": \"rectilinear\", \"configuration\": {\"kind\": \"inline\"}}",
     "zarr.json: \"chunk_grid\": rectilinear: \"chunk_shapes\" must be a list"},
    {"[6]",
     "{\"name\": \"rectilinear\", \"configuration\": {\"kind\": \"inline\", \"chunk_shape\": [6]}}",
     "zarr.json: \"chunk_grid\": rectilinear: unknown member \"chunk_shape\""},
    {"[6, 6]",
     "{\"name\": \"rectilinear\", \"configuration\": {\"kind\": \"inline\", \"chunk_shapes\": [6]}}",
     "zarr.json: \"chunk_grid\": \"chunk_shapes\" must have as many entries as \"shape\" (2)"},
    {"[6]", "{\"name\": \"rectilinear\", \"configuration\": {\"kind\": \"inline\", \"chunk_shapes\": [0]}}",
     "zarr.json: \"chunk_grid\": \"chunk_shapes\"[0]: expected a positive integer or a list of "
     "edge lengths"},
    {"[6]", "{\"name\": \"rectilinear\", \"configuration\": {\"kind\": \"inline\", \"chunk_shapes\": [2.5]}}",
     "zarr.json: \"chunk_grid\": \"chunk_shapes\"[0]: expected a positive integer or a list of "
     "edge lengths"},
    {"[6]",
     "{\"name\": \"rectilinear\", \"configuration\": {\"kind\": \"inline\", \"chunk_shapes\": [\"6\"]}}",
     "zarr.json: \"chunk_grid\": \"chunk_shapes\"[0]: expected a positive integer or a list of "
     "edge lengths"},
    {"[6]",
     "{\"name\": \"rectilinear\", \"configuration\": {\"kind\": \"inline\", \"chunk_shapes\": [[3, 0, 3]]}}",
     "zarr.json: \"chunk_grid\": \"chunk_shapes\"[0][1]: an edge length must be a positive "
     "integer"},
    {"[6]",
     "{\"name\": \"rectilinear\", \"configuration\": {\"kind\": \"inline\", \"chunk_shapes\": [[3, -3]]}}",
     "zarr.json: \"chunk_grid\": \"chunk_shapes\"[0][1]: an edge length must be a positive "
     "integer"},
    {"[6]",
     "{\"name\": \"rectilinear\", \"configuration\": {\"kind\": \"inline\", \"chunk_shapes\": "
     "[[18446744073709551616]]}}",
     "zarr.json: \"chunk_grid\": \"chunk_shapes\"[0][0]: an edge length must be a positive "
     "integer"},
    {"[6]",
     "{\"name\": \"rectilinear\", \"configuration\": {\"kind\": \"inline\", \"chunk_shapes\": [[[3, 0]]]}}",
     "zarr.json: \"chunk_grid\": \"chunk_shapes\"[0][0]: a run-length item must be [edge "
     "length, count], two positive integers"},
    {"[6]",
     "{\"name\": \"rectilinear\", \"configuration\": {\"kind\": \"inline\", \"chunk_shapes\": [[[0, 3]]]}}",
     "zarr.json: \"chunk_grid\": \"chunk_shapes\"[0][0]: a run-length item must be [edge "
     "length, count], two positive integers"},
    {"[6]",
     "{\"name\": \"rectilinear\", \"configuration\": {\"kind\": \"inline\", \"chunk_shapes\": [[1, [6]]]}}",
     "zarr.json: \"chunk_grid\": \"chunk_shapes\"[0][1]: a run-length item must be [edge "
     "length, count], two positive integers"},
    {"[6]",
     "{\"name\": \"rectilinear\", \"configuration\": {\"kind\": \"inline\", \"chunk_shapes\": [[[2, 2, 2]]]}}",
     "zarr.json: \"chunk_grid\": \"chunk_shapes\"[0][0]: a run-length item must be [edge "
     "length, count], two positive integers"},
    {"[6]",
     "{\"name\": \"rectilinear\", \"configuration\": {\"kind\": \"inline\", \"chunk_shapes\": [[[2, [2]]]]}}",
     "zarr.json: \"chunk_grid\": \"chunk_shapes\"[0][0]: a run-length item must be [edge "
     "length, count], two positive integers"},
    {"[7]",
     "{\"name\": \"rectilinear\", \"configuration\": {\"kind\": \"inline\", \"chunk_shapes\": [[[2, 3]]]}}",
     "zarr.json: \"chunk_grid\": \"chunk_shapes\"[0]: the edge lengths sum to 6, less than the 7 "
     "elements of \"shape\"[0]"},
    {"[4, 1]",
     "{\"name\": \"rectilinear\", \"configuration\": {\"kind\": \"inline\", \"chunk_shapes\": [4, []]}}",
     "zarr.json: \"chunk_grid\": \"chunk_shapes\"[1]: the edge lengths sum to 0, less than the 1 "
     "elements of \"shape\"[1]"},
};

START_TEST(refusals)
{
    for (size_t i = 0; i < sizeof INVALID / sizeof *INVALID; i++) {
        zf_node_meta m;
        zf_err err;
        zf_status st = parse_grid(INVALID[i].shape, INVALID[i].grid, NULL, &m, &err);
        ck_assert_msg(st == ZF_ERR_INVALID, "%s: status %d", INVALID[i].grid, st);
        ck_assert_str_eq(err.msg, INVALID[i].msg);
        zf_node_meta_free(&m);
    }
}
END_TEST

/* Valid documents zarrfs does not serve: the node stays, its reads fail (meta->unsupported). */
START_TEST(unsupported)
{
    zf_node_meta m;
    zf_err err;
    ck_assert_int_eq(parse_grid("[6]",
                                "{\"name\": \"rectilinear\", \"configuration\": {\"kind\": "
                                "\"external\", \"chunk_shapes\": \"grid.bin\"}}",
                                NULL, &m, &err),
                     ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_ERR_UNSUPPORTED);
    ck_assert_str_eq(m.unsupported_why, "zarr.json: \"chunk_grid\": rectilinear \"kind\" "
                                        "\"external\" is not supported (only \"inline\")");
    zf_node_meta_free(&m);
    /* sharding in a rectilinear grid: served when it is the only codec and its inner chunk
     * divides every shard edge (zarrs' rule) */
#define SHARD2 "{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2], " \
               "\"codecs\": " BYTES_LE ", \"index_codecs\": " BYTES_LE "}}"
#define RECT(list) "{\"name\": \"rectilinear\", \"configuration\": {\"kind\": \"inline\", " \
                   "\"chunk_shapes\": [" list "]}}"
    ck_assert_int_eq(parse_grid("[6]", RECT("[2, 4]"), "[" SHARD2 "]", &m, &err), ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_OK);
    ck_assert_ptr_nonnull(m.array.rect);
    zf_node_meta_free(&m);
    ck_assert_int_eq(parse_grid("[6]", RECT("[4, 3, 1]"), "[" SHARD2 "]", &m, &err),
                     ZF_ERR_INVALID);
    ck_assert_str_eq(err.msg, "zarr.json: \"codecs\": sharding_indexed: \"chunk_shape\": 2 does "
                              "not divide the shard edge 3 along dimension 0 of the rectilinear "
                              "grid");
    zf_node_meta_free(&m);
    ck_assert_int_eq(parse_grid("[6]", RECT("[2, 4]"), "[" SHARD2 ", {\"name\": \"crc32c\"}]", &m,
                                &err),
                     ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_ERR_UNSUPPORTED);
    ck_assert_str_eq(m.unsupported_why, "zarr.json: \"codecs\": sharding_indexed inside a "
                                        "\"rectilinear\" chunk grid must be the only codec");
    zf_node_meta_free(&m);
    /* 65 shard shapes (edges 2, 4, ..., 130 along one dimension): more than zarrfs keeps */
    char list[1024];
    size_t o = 0;
    for (int i = 1; i <= 65; i++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%d", i > 1 ? ", " : "", 2 * i);
    char grid[1200];
    snprintf(grid, sizeof grid, RECT("[%s]"), list);
    ck_assert_int_eq(parse_grid("[4290]", grid, "[" SHARD2 "]", &m, &err), ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(m.unsupported_why, "of more than 64 shard shapes"));
    zf_node_meta_free(&m);
    /* a reshape fixed to the largest chunk does not fit the smallest: invalid */
    zf_status st = parse_grid(
        "[6]",
        "{\"name\": \"rectilinear\", \"configuration\": {\"kind\": \"inline\", "
        "\"chunk_shapes\": [[2, 4]]}}",
        "[{\"name\": \"reshape\", \"configuration\": {\"shape\": [2, 2]}}, "
        "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]",
        &m, &err);
    ck_assert_int_eq(st, ZF_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "(for the smallest chunk of the rectilinear grid)"));
    zf_node_meta_free(&m);
}
END_TEST

ZF_CHECK_MAIN("meta-rectilinear", readme_example, explicit_equals_run_length, hostile_counts,
              refusals, unsupported)
