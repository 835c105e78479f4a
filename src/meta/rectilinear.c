/* rectilinear.c — the "rectilinear" chunk grid of final Zarr v3 (zarr-extensions
 * chunk-grids/rectilinear, README.md and schema.json): chunk edge lengths that vary along a
 * dimension.
 *
 *   "chunk_grid": {"name": "rectilinear",
 *                  "configuration": {"kind": "inline", "chunk_shapes": [E0, E1, ...]}}
 *
 * One entry per dimension of "shape": a positive integer m (a regular dimension: m repeated
 * until the sum reaches the length), or a list whose items are positive integers (one edge
 * length each) or [V, N] pairs of positive integers (N chunks of edge length V, "run-length
 * encoding"). The sum of a list MUST reach the dimension's length and may pass it by several
 * chunks ("overflow"). Each dimension is kept as runs of equal edge lengths (zf_chunk_edges,
 * meta.h), only as far as the array reaches: memory grows with the declaration's items, never
 * with its counts. */
#include <stdlib.h>
#include <string.h>

#include "meta_impl.h"
#include "zarrfs/json.h"

#define FIELD "chunk_grid"

/* A positive integer that fits int64 (yajl's integers). */
static bool positive(yajl_val v, uint64_t *out)
{
    int64_t x;
    if (!zf_json_int64(v, &x) || x < 1)
        return false;
    *out = (uint64_t)x;
    return true;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Append `count` chunks of edge `edge` to e (runs of nruns; capacity *cap), as far as they reach
 * into a dimension of `len` elements: *end is where the chunks so far end (start[nruns]). */
static zf_status add_run(zf_chunk_edges *e, size_t *cap, uint64_t len, uint64_t edge,
                         uint64_t count)
{
    uint64_t end = e->start[e->nruns];
    if (end >= len)
        return ZF_OK; /* past the array: overflow chunks hold nothing */
    uint64_t need = (len - end) / edge + ((len - end) % edge != 0);
    if (count > need)
        count = need;
    /* end < len and count * edge < len - end + edge, so no overflow below */
    if (e->nruns && e->edge[e->nruns - 1] == edge) { /* continues the previous run */
        e->first[e->nruns] += count;
        e->start[e->nruns] += count * edge;
        return ZF_OK;
    }
    if (e->nruns + 2 > *cap) {
        size_t n = *cap ? 2 * *cap : 8;
        uint64_t *a = realloc(e->edge, n * sizeof *a), *b, *c;
        if (!a)
            return ZF_ERR_NOMEM;
        e->edge = a;
        if (!(b = realloc(e->first, n * sizeof *b)))
            return ZF_ERR_NOMEM;
        e->first = b;
        if (!(c = realloc(e->start, n * sizeof *c)))
            return ZF_ERR_NOMEM;
        e->start = c;
        *cap = n;
    }
    size_t r = e->nruns++;
    e->edge[r] = edge;
    e->first[r + 1] = e->first[r] + count;
    e->start[r + 1] = e->start[r] + count * edge;
    return ZF_OK;
}

/* One entry of "chunk_shapes" for dimension d of length len into e. */
static zf_status parse_dim(const char *key, unsigned d, yajl_val v, uint64_t len,
                           zf_chunk_edges *e, zf_err *err)
{
    size_t cap = 0;
    e->nruns = 0;
    e->first = calloc(1, sizeof *e->first);
    e->start = calloc(1, sizeof *e->start);
    if (!e->first || !e->start)
        return ZF_ERR_NOMEM;
    zf_status st;
    uint64_t m;
    if (positive(v, &m)) { /* an integer: a regular dimension */
        e->extent = UINT64_MAX;
        return add_run(e, &cap, len, m, UINT64_MAX);
    }
    if (!YAJL_IS_ARRAY(v))
        return ZF_FIELD_FAIL(err, key, FIELD,
                             "\"chunk_shapes\"[%u]: expected a positive integer or a list of "
                             "edge lengths",
                             d);
    uint64_t sum = 0;
    for (size_t i = 0; i < v->u.array.len; i++) {
        yajl_val it = v->u.array.values[i];
        uint64_t edge, count = 1;
        if (YAJL_IS_ARRAY(it)) {
            if (it->u.array.len != 2 || !positive(it->u.array.values[0], &edge) ||
                !positive(it->u.array.values[1], &count))
                return ZF_FIELD_FAIL(err, key, FIELD,
                                     "\"chunk_shapes\"[%u][%zu]: a run-length item must be "
                                     "[edge length, count], two positive integers",
                                     d, i);
        } else if (!positive(it, &edge)) {
            return ZF_FIELD_FAIL(err, key, FIELD,
                                 "\"chunk_shapes\"[%u][%zu]: an edge length must be a positive "
                                 "integer",
                                 d, i);
        }
        uint64_t add = count > UINT64_MAX / edge ? UINT64_MAX : count * edge;
        sum = sat_add(sum, add);
        if ((st = add_run(e, &cap, len, edge, count)) != ZF_OK)
            return st;
    }
    e->extent = sum;
    if (sum < len)
        return ZF_FIELD_FAIL(err, key, FIELD,
                             "\"chunk_shapes\"[%u]: the edge lengths sum to %llu, less than "
                             "the %llu elements of \"shape\"[%u]",
                             d, (unsigned long long)sum, (unsigned long long)len, d);
    return ZF_OK;
}

static void free_edges(zf_chunk_edges *r, unsigned ndim)
{
    for (unsigned d = 0; r && d < ndim; d++) {
        free(r[d].edge);
        free(r[d].first);
        free(r[d].start);
    }
    free(r);
}

void zf_meta_free_rect(zf_array_meta *a)
{
    free_edges(a->rect, a->ndim);
    a->rect = NULL;
    free(a->chunk_shapes_json);
    a->chunk_shapes_json = NULL;
}

zf_status zf_meta_rectilinear(const char *key, yajl_val cfg, zf_node_meta *m, zf_err *err)
{
    static const char *const keys[] = {"kind", "chunk_shapes", NULL};
    zf_array_meta *a = &m->array;
    if (!YAJL_IS_OBJECT(cfg))
        return ZF_FIELD_FAIL(err, key, FIELD, "\"rectilinear\" needs a \"configuration\" object");
    for (size_t i = 0; i < cfg->u.object.len; i++) {
        size_t k = 0;
        while (keys[k] && strcmp(keys[k], cfg->u.object.keys[i]))
            k++;
        if (!keys[k])
            return ZF_FIELD_FAIL(err, key, FIELD, "rectilinear: unknown member \"%s\"",
                                 cfg->u.object.keys[i]);
    }
    yajl_val kind = zf_json_get(cfg, "kind"), shapes = zf_json_get(cfg, "chunk_shapes");
    if (!YAJL_IS_STRING(kind))
        return ZF_FIELD_FAIL(err, key, FIELD, "rectilinear: \"kind\" must be the string "
                                              "\"inline\"");
    if (strcmp(kind->u.string, "inline")) /* a later kind this zarrfs does not know */
        return zf_meta_unsupported(m, "%s: \"chunk_grid\": rectilinear \"kind\" \"%s\" is not "
                                   "supported (only \"inline\")",
                                   key, kind->u.string);
    if (!YAJL_IS_ARRAY(shapes))
        return ZF_FIELD_FAIL(err, key, FIELD, "rectilinear: \"chunk_shapes\" must be a list");
    if (shapes->u.array.len != a->ndim)
        return ZF_FIELD_FAIL(err, key, FIELD,
                             "\"chunk_shapes\" must have as many entries as \"shape\" (%u)",
                             a->ndim);
    zf_chunk_edges *r = calloc(a->ndim ? a->ndim : 1, sizeof *r);
    if (!r)
        return ZF_ERR_NOMEM;
    zf_status st = ZF_OK;
    bool regular = true;
    for (unsigned d = 0; st == ZF_OK && d < a->ndim; d++) {
        yajl_val v = shapes->u.array.values[d];
        st = parse_dim(key, d, v, a->shape[d], &r[d], err);
        if (st != ZF_OK)
            break;
        /* The bounding chunk: the largest edge reaching into the array (for an empty
         * dimension, the first declared one, or 1). */
        uint64_t big = 0;
        for (size_t k = 0; k < r[d].nruns; k++)
            if (r[d].edge[k] > big)
                big = r[d].edge[k];
        if (big == 0) {
            yajl_val f = YAJL_IS_ARRAY(v) && v->u.array.len ? v->u.array.values[0] : v;
            if (YAJL_IS_ARRAY(f) && f->u.array.len)
                f = f->u.array.values[0];
            if (!positive(f, &big))
                big = 1;
        }
        a->chunks[d] = big;
        if (r[d].nruns > 1)
            regular = false;
    }
    if (st == ZF_OK && !(a->chunk_shapes_json = zf_json_dump(shapes)))
        st = ZF_ERR_NOMEM;
    if (st != ZF_OK || regular) {
        free_edges(r, a->ndim); /* one run per dimension: a regular grid of those edges */
        return st;
    }
    a->rect = r;
    return ZF_OK;
}

size_t zf_chunk_edges_find(const zf_chunk_edges *e, uint64_t x, uint64_t *chunk, uint64_t *lo,
                           uint64_t *edge)
{
    size_t lo_r = 0, hi_r = e->nruns; /* the run r with start[r] <= x < start[r + 1] */
    while (hi_r - lo_r > 1) {
        size_t mid = lo_r + (hi_r - lo_r) / 2;
        if (e->start[mid] <= x)
            lo_r = mid;
        else
            hi_r = mid;
    }
    uint64_t k = (x - e->start[lo_r]) / e->edge[lo_r];
    *chunk = e->first[lo_r] + k;
    *lo = e->start[lo_r] + k * e->edge[lo_r];
    *edge = e->edge[lo_r];
    return lo_r;
}

void zf_chunk_edges_chunk(const zf_chunk_edges *e, uint64_t c, uint64_t *lo, uint64_t *edge)
{
    size_t lo_r = 0, hi_r = e->nruns; /* the run r with first[r] <= c < first[r + 1] */
    while (hi_r - lo_r > 1) {
        size_t mid = lo_r + (hi_r - lo_r) / 2;
        if (e->first[mid] <= c)
            lo_r = mid;
        else
            hi_r = mid;
    }
    *lo = e->start[lo_r] + (c - e->first[lo_r]) * e->edge[lo_r];
    *edge = e->edge[lo_r];
}

/* The distinct values of e's edges (at most `max`; *n of them, or max + 1 when more). */
static void distinct_edges(const zf_chunk_edges *e, uint64_t fallback, uint64_t *vals,
                           size_t max, size_t *n)
{
    *n = 0;
    if (e->nruns == 0) {
        vals[(*n)++] = fallback;
        return;
    }
    for (size_t r = 0; r < e->nruns; r++) {
        size_t k = 0;
        while (k < *n && vals[k] != e->edge[r])
            k++;
        if (k < *n)
            continue;
        if (*n == max) {
            *n = max + 1;
            return;
        }
        vals[(*n)++] = e->edge[r];
    }
}

int zf_array_meta_chunk_shapes(const zf_array_meta *a, size_t max,
                               int (*fn)(void *ctx, const uint64_t *shape), void *ctx,
                               bool *too_many)
{
    *too_many = false;
    if (!a->rect)
        return 0;
    uint64_t vals[ZF_MAX_DIMS][64], shape[ZF_MAX_DIMS];
    size_t n[ZF_MAX_DIMS], total = 1, lim = max < 64 ? max : 64, idx[ZF_MAX_DIMS] = {0};
    for (unsigned d = 0; d < a->ndim; d++) {
        distinct_edges(&a->rect[d], a->chunks[d], vals[d], lim, &n[d]);
        if (n[d] > lim || total * n[d] > max) {
            *too_many = true;
            return 0;
        }
        total *= n[d];
    }
    for (size_t i = 0; i < total; i++) {
        for (unsigned d = 0; d < a->ndim; d++)
            shape[d] = vals[d][idx[d]];
        int r = fn(ctx, shape);
        if (r)
            return r;
        for (unsigned d = a->ndim; d-- > 0;) { /* the next combination */
            if (++idx[d] < n[d])
                break;
            idx[d] = 0;
        }
    }
    return 0;
}
