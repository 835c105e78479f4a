/* array.c — chunk-grid arithmetic and reads of an array's flat byte view.
 *
 * A read of [offset, offset + len): byte range -> element range -> runs of elements contiguous
 * both in the flat view and in one chunk (zf_grid_runs) -> for each run, the decoded chunk from
 * the cache (loaded on a miss: store get, codec chain decode) or the fill value for an absent
 * chunk -> memcpy into the caller's buffer. The distinct chunks of a read are first queued on the
 * worker pool, so a read spanning many chunks decodes them in parallel. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array_impl.h"
#include "zarrfs/log.h"
#include "zarrfs/mem.h"
#include "zarrfs/metrics.h"

/* ---------- grid arithmetic ---------- */

void zf_grid_init(zf_grid *g, unsigned ndim, const uint64_t *shape, const uint64_t *chunks)
{
    memset(g, 0, sizeof *g);
    g->ndim = ndim;
    for (unsigned d = 0; d < ndim; d++) {
        g->shape[d] = shape[d];
        g->chunks[d] = chunks[d];
        g->grid[d] = shape[d] / chunks[d] + (shape[d] % chunks[d] != 0);
    }
}

uint64_t zf_grid_nelems(const zf_grid *g)
{
    uint64_t n = 1;
    for (unsigned d = 0; d < g->ndim; d++)
        n *= g->shape[d];
    return n;
}

uint64_t zf_grid_nchunks(const zf_grid *g)
{
    uint64_t n = 1;
    for (unsigned d = 0; d < g->ndim; d++)
        n *= g->grid[d];
    return n;
}

void zf_grid_unravel(const zf_grid *g, uint64_t elem, uint64_t *coords)
{
    for (unsigned d = g->ndim; d-- > 0;) {
        coords[d] = elem % g->shape[d];
        elem /= g->shape[d];
    }
}

void zf_grid_init_meta(zf_grid *g, const zf_array_meta *a)
{
    zf_grid_init(g, a->ndim, a->shape, a->chunks);
    for (unsigned d = 0; a->rect && d < a->ndim; d++)
        if (a->rect[d].nruns > 1) { /* one run is regular along d: chunks[d] is its edge */
            g->edges[d] = &a->rect[d];
            g->grid[d] = a->rect[d].first[a->rect[d].nruns];
            g->rect = true;
        }
}

void zf_grid_chunk_along(const zf_grid *g, unsigned d, uint64_t x, uint64_t *chunk, uint64_t *lo,
                         uint64_t *edge)
{
    if (g->edges[d]) {
        zf_chunk_edges_find(g->edges[d], x, chunk, lo, edge);
        return;
    }
    *edge = g->chunks[d];
    *chunk = x / g->chunks[d];
    *lo = *chunk * g->chunks[d];
}

uint64_t zf_grid_chunk_box(const zf_grid *g, const uint64_t *chunk_coords, uint64_t *origin,
                           uint64_t *shape)
{
    uint64_t n = 1;
    for (unsigned d = 0; d < g->ndim; d++) {
        uint64_t lo, edge = g->chunks[d];
        if (g->edges[d])
            zf_chunk_edges_chunk(g->edges[d], chunk_coords[d], &lo, &edge);
        else
            lo = chunk_coords[d] * edge;
        if (origin)
            origin[d] = lo;
        if (shape)
            shape[d] = edge;
        n *= edge;
    }
    return n;
}

void zf_grid_locate(const zf_grid *g, const uint64_t *coords, uint64_t *chunk_coords,
                    uint64_t *in_chunk)
{
    uint64_t idx = 0;
    if (g->rect) {
        for (unsigned d = 0; d < g->ndim; d++) {
            uint64_t lo, edge;
            zf_grid_chunk_along(g, d, coords[d], &chunk_coords[d], &lo, &edge);
            idx = idx * edge + (coords[d] - lo);
        }
        *in_chunk = idx;
        return;
    }
    for (unsigned d = 0; d < g->ndim; d++) {
        chunk_coords[d] = coords[d] / g->chunks[d];
        idx = idx * g->chunks[d] + coords[d] % g->chunks[d];
    }
    *in_chunk = idx;
}

uint64_t zf_grid_chunk_index(const zf_grid *g, const uint64_t *chunk_coords)
{
    uint64_t idx = 0;
    for (unsigned d = 0; d < g->ndim; d++)
        idx = idx * g->grid[d] + chunk_coords[d];
    return idx;
}

void zf_grid_chunk_coords(const zf_grid *g, uint64_t index, uint64_t *chunk_coords)
{
    for (unsigned d = g->ndim; d-- > 0;) {
        chunk_coords[d] = index % g->grid[d];
        index /= g->grid[d];
    }
}

/* An equivalent grid with fewer dimensions: a dimension that every chunk spans whole
 * (chunks[d] == shape[d]) merges into the one before it, because then an element's index inside
 * its chunk and its chunk's linear index are the same in both grids. A 0-d array becomes one
 * element in one chunk. */
static void collapse(const zf_grid *g, zf_grid *c)
{
    /* Only ndim, shape, chunks and grid of the first c->ndim dimensions are set (all the walk
     * reads): clearing the whole struct, edges included, cost a tenth of a run's time. */
    c->rect = false;
    if (g->ndim == 0) {
        c->ndim = 1;
        c->shape[0] = c->chunks[0] = c->grid[0] = 1;
        return;
    }
    unsigned n = 0;
    for (unsigned d = 0; d < g->ndim; d++) {
        if (d > 0 && g->chunks[d] == g->shape[d]) {
            c->shape[n - 1] *= g->shape[d];
            c->chunks[n - 1] *= g->shape[d];
        } else {
            c->shape[n] = g->shape[d];
            c->chunks[n] = g->chunks[d];
            c->grid[n] = g->grid[d];
            n++;
        }
    }
    c->ndim = n;
}

/* ----- runs over a rectilinear grid -----
 * The same walk as the regular one below, with each dimension's current chunk remembered:
 * a run looks its chunk up (a binary search over a rectilinear dimension's runs) only when it
 * leaves the chunk the previous run was in, so a sequential sweep pays O(log runs) per chunk
 * boundary crossed, nothing per element. Dimensions that every chunk spans whole merge into the
 * one before as in collapse(); a rectilinear dimension merged into so counts `scale` elements
 * per index of its own. */
typedef struct rdim {
    uint64_t shape, chunk, grid; /* merged elements; regular: merged chunk edge */
    uint64_t scale;              /* rectilinear: merged elements per index of e's dimension */
    const zf_chunk_edges *e;
    uint64_t lo, hi, c;          /* the chunk last found: merged elements [lo, hi), index c */
    size_t run;                  /* rectilinear: e's run holding chunk c */
} rdim;

/* Make r's current chunk the one holding x: the same, the next one (a run walking on along
 * the dimension: O(1)), or a binary search. */
static void rdim_at(rdim *r, uint64_t x)
{
    if (x >= r->lo && x < r->hi)
        return;
    uint64_t c, lo, edge;
    if (!r->e) {
        edge = r->chunk;
        c = x / edge;
        lo = c * edge;
    } else if (x == r->hi && r->hi > r->lo &&
               (r->c + 1 < r->e->first[r->run + 1] || r->run + 1 < r->e->nruns)) {
        if (r->c + 1 == r->e->first[r->run + 1])
            r->run++;
        c = r->c + 1;
        lo = r->hi;
        edge = r->e->edge[r->run] * r->scale; /* within a chunk's elements: no overflow */
    } else {
        r->run = zf_chunk_edges_find(r->e, x / r->scale, &c, &lo, &edge);
        lo *= r->scale;
        edge *= r->scale;
    }
    r->c = c;
    r->lo = lo;
    r->hi = lo + edge;
}

static zf_status rect_runs(const zf_grid *g, uint64_t elem_begin, uint64_t elem_end,
                           zf_run_fn fn, void *ctx)
{
    rdim c[ZF_MAX_DIMS];
    unsigned n = 0;
    for (unsigned d = 0; d < g->ndim; d++) {
        if (d > 0 && !g->edges[d] && g->chunks[d] == g->shape[d]) {
            c[n - 1].shape *= g->shape[d];
            if (c[n - 1].e)
                c[n - 1].scale *= g->shape[d];
            else
                c[n - 1].chunk *= g->shape[d];
        } else {
            c[n++] = (rdim){.shape = g->shape[d], .chunk = g->chunks[d], .grid = g->grid[d],
                            .scale = 1, .e = g->edges[d], .lo = 1, .hi = 0};
        }
    }
    unsigned last = n - 1;
    uint64_t coords[ZF_MAX_DIMS], rest = elem_begin;
    for (unsigned d = n; d-- > 0;) {
        coords[d] = rest % c[d].shape;
        rest /= c[d].shape;
    }
    for (uint64_t elem = elem_begin; elem < elem_end;) {
        zf_run run = {.elem = elem};
        for (unsigned d = 0; d < n; d++) {
            rdim_at(&c[d], coords[d]);
            run.chunk = run.chunk * c[d].grid + c[d].c;
            run.in_chunk = run.in_chunk * (c[d].hi - c[d].lo) + (coords[d] - c[d].lo);
        }
        uint64_t lim = c[last].hi < c[last].shape ? c[last].hi : c[last].shape;
        run.count = lim - coords[last];
        if (run.count > elem_end - elem)
            run.count = elem_end - elem;
        zf_status st = fn(ctx, &run);
        if (st != ZF_OK)
            return st;
        elem += run.count;
        coords[last] += run.count;
        for (unsigned d = last; d > 0 && coords[d] >= c[d].shape; d--) {
            coords[d] = 0;
            coords[d - 1]++;
        }
    }
    return ZF_OK;
}

zf_status zf_grid_runs(const zf_grid *g, uint64_t elem_begin, uint64_t elem_end, zf_run_fn fn,
                       void *ctx)
{
    if (g->rect)
        return elem_begin < elem_end ? rect_runs(g, elem_begin, elem_end, fn, ctx) : ZF_OK;
    zf_grid c;
    collapse(g, &c);
    if (elem_begin >= elem_end)
        return ZF_OK;
    unsigned last = c.ndim - 1;
    uint64_t coords[ZF_MAX_DIMS];
    zf_grid_unravel(&c, elem_begin, coords);
    uint64_t elem = elem_begin;
    while (elem < elem_end) {
        uint64_t pos = coords[last], cl = c.chunks[last];
        uint64_t lim = (pos / cl + 1) * cl;
        if (lim > c.shape[last])
            lim = c.shape[last];
        uint64_t n = lim - pos;
        if (n > elem_end - elem)
            n = elem_end - elem;
        zf_run run = {.elem = elem, .count = n};
        for (unsigned d = 0; d < c.ndim; d++) {
            run.chunk = run.chunk * c.grid[d] + coords[d] / c.chunks[d];
            run.in_chunk = run.in_chunk * c.chunks[d] + coords[d] % c.chunks[d];
        }
        zf_status st = fn(ctx, &run);
        if (st != ZF_OK)
            return st;
        elem += n;
        coords[last] += n;
        for (unsigned d = last; d > 0 && coords[d] >= c.shape[d]; d--) {
            coords[d] = 0;
            coords[d - 1]++;
        }
    }
    return ZF_OK;
}

/* ---------- the flat view ---------- */

static _Atomic uint64_t n_decoded, n_failed, decode_ns, n_encoded, n_encode_failed, encode_ns,
    n_shard_conflicts, n_chunk_conflicts;

void zf_array_get_decode_stats(zf_decode_stats *out)
{
    *out = (zf_decode_stats){.chunks = n_decoded, .failures = n_failed,
                             .seconds = (double)decode_ns / 1e9,
                             .encoded = n_encoded, .encode_failures = n_encode_failed,
                             .encode_seconds = (double)encode_ns / 1e9,
                             .shard_conflicts = n_shard_conflicts,
                             .chunk_conflicts = n_chunk_conflicts};
}

void zf_array_count_shard_conflict(void) { n_shard_conflicts++; }
void zf_array_count_chunk_conflict(void) { n_chunk_conflicts++; }

void zf_array_count_encode(uint64_t ns, bool ok)
{
    encode_ns += ns;
    if (ok)
        n_encoded++;
    else
        n_encode_failed++;
}

uint64_t zf_array_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

void zf_array_chunk_repr(const zf_array *a, const uint64_t *cc, zf_chunk_repr *r)
{
    if (!a->grid.rect) {
        *r = a->decoded;
        return;
    }
    *r = (zf_chunk_repr){.ndim = a->decoded.ndim, .dtype = a->decoded.dtype};
    /* within the bounding chunk's bytes, checked at parse time */
    r->nbytes = (size_t)zf_grid_chunk_box(&a->grid, cc, NULL, r->shape) * a->itemsize;
}

size_t zf_array_chunk_nbytes(const zf_array *a, uint64_t chunk)
{
    if (!a->grid.rect)
        return a->chunk_nbytes;
    uint64_t cc[ZF_MAX_DIMS];
    zf_grid_chunk_coords(&a->grid, chunk, cc);
    return (size_t)zf_grid_chunk_box(&a->grid, cc, NULL, NULL) * a->itemsize;
}

/* ----- the memory account (mem.h) of chunk loads ----- */

/* A text chunk's load before any was seen: its size is known only once decoded. */
#define TEXT_LOAD_GUESS ((size_t)4 << 20)

/* A codec's own scratch beside the raw and decoded buffers of a load (blosc's three blocks of up
 * to 512 KiB at the usual levels, zstd's tables): not seen by note_load_peak, so added to every
 * estimate. */
#define LOAD_SCRATCH_MIN ((size_t)2 << 20)

/* What one load of `chunk` may hold at once, for its admission: the most an earlier load of the
 * array held, else the decoded size twice (raw bytes beside the decoded; the raw bytes are the
 * decoded chunk when the chain is empty); and the codecs' scratch, an eighth of the decoded size
 * and at least 2 MiB. */
static size_t load_estimate(const zf_array *a, uint64_t chunk)
{
    size_t seen = atomic_load(&a->load_peak);
    if (a->text)
        return (seen ? seen : TEXT_LOAD_GUESS) + LOAD_SCRATCH_MIN;
    size_t nbytes = zf_array_chunk_nbytes(a, chunk);
    size_t guess = a->chain->n == 0 ? nbytes : 2 * nbytes;
    size_t scratch = a->chain->n == 0 ? 0 : nbytes / 8 > LOAD_SCRATCH_MIN ? nbytes / 8
                                                                           : LOAD_SCRATCH_MIN;
    return (seen > guess || (seen && a->grid.edges[0] == NULL) ? seen : guess) + scratch;
}

/* This load holds n bytes at once: charge them (zf_mem_grow) and remember the most. */
static void note_load_peak(zf_array *a, size_t n)
{
    zf_mem_grow(n);
    size_t seen = atomic_load(&a->load_peak);
    while (n > seen && !atomic_compare_exchange_weak(&a->load_peak, &seen, n))
        ;
}

/* Decode one stored chunk (raw, consumed) of representation dec into a new buffer of
 * dec->nbytes. */
static zf_status decode_chunk(zf_array *a, const zf_chunk_repr *dec, const char *what,
                              zf_bytes *raw, void **data, size_t *size, zf_err *err)
{
    if (a->text) {
        size_t raw_len = raw->len;
        zf_text_chunk *t = NULL;
        zf_err derr = {""};
        uint64_t t0 = zf_array_now_ns();
        zf_status st = zf_chain_decode_text(a->chain, dec, raw->data, raw->len, &t,
                                            &derr);
        uint64_t took = zf_array_now_ns() - t0;
        decode_ns += took;
        zf_metrics_decode(took);
        zf_bytes_free(raw);
        if (st != ZF_OK) {
            n_failed++;
            return zf_fail(err, st == ZF_ERR_NOMEM ? st : ZF_ERR_CORRUPT, "%s: %s", what,
                           derr.msg[0] ? derr.msg : zf_status_str(st));
        }
        n_decoded++;
        *data = t;
        *size = sizeof *t + (size_t)(t->nelems + 1) * sizeof(uint32_t) + (size_t)t->len + 1;
        note_load_peak(a, raw_len + *size);
        return ZF_OK;
    }
    size_t nbytes = dec->nbytes;
    bool as_is = a->chain->n == 0 && raw->len == nbytes && raw->data;
    /* what the buffers hold in memory: whole huge pages from 2 MiB up */
    size_t held = zf_mem_footprint(nbytes);
    note_load_peak(a, as_is ? held : zf_mem_footprint(raw->len) + held);
    if (as_is) {
        *data = raw->data; /* stored raw: the store's buffer is the decoded chunk */
        *size = raw->len;
        n_decoded++;
        return ZF_OK;
    }
    uint8_t *out = zf_alloc_chunk(nbytes); /* maybe an evicted chunk's buffer */
    if (!out) {
        zf_bytes_free(raw);
        return ZF_ERR_NOMEM;
    }
    zf_err derr = {""};
    uint64_t t0 = zf_array_now_ns();
    zf_status st = zf_chain_decode(a->chain, dec, raw->data, raw->len, out, &derr);
    uint64_t took = zf_array_now_ns() - t0;
    decode_ns += took;
    zf_metrics_decode(took);
    zf_bytes_free(raw);
    if (st != ZF_OK) {
        n_failed++;
        zf_free_chunk(out, nbytes);
        return zf_fail(err, st == ZF_ERR_NOMEM ? st : ZF_ERR_CORRUPT, "%s: %s", what,
                       derr.msg[0] ? derr.msg : zf_status_str(st));
    }
    n_decoded++;
    *data = out;
    *size = nbytes;
    return ZF_OK;
}

/* A store failure as this layer reports it: ZF_ERR_IO (or NOMEM), NOT_FOUND passed through, and
 * ACCESS (credentials refused: EACCES, which the user can act on). */
static zf_status store_status(zf_status st, const zf_err *serr, zf_err *err)
{
    if (st == ZF_OK || st == ZF_ERR_NOT_FOUND)
        return st;
    return zf_fail(err, st == ZF_ERR_NOMEM || st == ZF_ERR_ACCESS ? st : ZF_ERR_IO, "%s",
                   serr->msg[0] ? serr->msg : zf_status_str(st));
}

/* Store key of the stored chunk (the level-0 shard when sharded) holding the cached chunk whose
 * coordinates in grid g are cc. */
zf_status zf_array_stored_key(zf_array *a, const zf_grid *g, const uint64_t *cc, char *key,
                            size_t keysize, zf_err *err)
{
    uint64_t sc[ZF_MAX_DIMS];
    const zf_grid *top = a->nlevels ? &a->levels[0].grid : &a->grid; /* the stored chunks */
    for (unsigned d = 0; d < g->ndim; d++) {
        if (g->rect) /* the stored chunks' own grid */
            sc[d] = cc[d];
        else if (top->rect) { /* a rectilinear grid's shard holding the chunk's first element */
            uint64_t lo, edge;
            zf_grid_chunk_along(top, d, cc[d] * g->chunks[d], &sc[d], &lo, &edge);
        } else
            sc[d] = cc[d] * g->chunks[d] / a->meta->chunks[d];
    }
    if (zf_array_meta_chunk_key(a->meta, a->prefix, sc, key, keysize) != ZF_OK)
        return zf_fail(err, ZF_ERR_INVALID, "chunk key too long");
    return ZF_OK;
}

static void coords_text(const uint64_t *c, unsigned n, char *buf, size_t size)
{
    size_t o = 0;
    buf[0] = '\0';
    for (unsigned d = 0; d < n && o < size; d++) {
        int w = snprintf(buf + o, size - o, "%s%llu", d ? "," : "", (unsigned long long)c[d]);
        if (w < 0)
            break;
        o += (size_t)w;
    }
}

static zf_status load_index(void *ctx, uint64_t shard, void **data, size_t *size, void **record,
                            zf_err *err);

/* The (offset, nbytes) of the inner chunk at coordinates cc (in level l's inner grid, i.e. the
 * grid of level l + 1 or of the cached chunks) inside the shard of level l that holds it.
 * ZF_ERR_NOT_FOUND when the shard or the inner chunk is absent. */
static zf_status locate_inner(shard_level *l, const uint64_t *cc, uint64_t *off, uint64_t *n,
                              zf_err *err)
{
    zf_array *a = l->a;
    uint64_t sc[ZF_MAX_DIMS], pos = 0;
    for (unsigned d = 0; d < l->grid.ndim; d++) {
        uint64_t cps = l->info.chunks_per_shard[d], at = cc[d] % cps;
        sc[d] = cc[d] / cps;
        if (l->grid.rect) { /* the shard's own chunks_per_shard along d */
            uint64_t in = l->info.chunk_shape[d], lo, edge;
            zf_grid_chunk_along(&l->grid, d, cc[d] * in, &sc[d], &lo, &edge);
            cps = edge / in;
            at = cc[d] - lo / in;
        }
        pos = pos * cps + at;
    }
    zf_cache_entry *e;
    zf_status st = zf_cache_get(a->cache, l->cache_id, zf_grid_chunk_index(&l->grid, sc),
                                load_index, l, &e, err);
    if (st != ZF_OK)
        return st;
    const uint64_t *pairs = zf_cache_entry_data(e);
    if (pairs) {
        *off = pairs[2 * pos];
        *n = pairs[2 * pos + 1];
    }
    zf_cache_release(a->cache, e);
    return pairs && *off != UINT64_MAX ? ZF_OK : ZF_ERR_NOT_FOUND;
}

void zf_array_level_shard(const shard_level *l, const uint64_t *sc, const zf_codec **codec,
                          const zf_sharding **info)
{
    *codec = l->codec;
    *info = &l->info;
    if (!l->nvariants)
        return;
    uint64_t shape[ZF_MAX_DIMS];
    zf_grid_chunk_box(&l->grid, sc, NULL, shape);
    for (size_t i = 0; i < l->nvariants; i++)
        if (!memcmp(l->variants[i].shape, shape, l->grid.ndim * sizeof *shape)) {
            *codec = l->variants[i].codec;
            *info = &l->variants[i].info;
            return;
        }
}

/* Cache loader of one level's shard index: its (offset, nbytes) pairs with offsets from the start
 * of the stored object (a nested shard's offsets are relative to itself in the store). */
static zf_status load_index(void *ctx, uint64_t shard, void **data, size_t *size, void **record,
                            zf_err *err)
{
    (void)record;
    shard_level *l = ctx;
    zf_array *a = l->a;
    uint64_t sc[ZF_MAX_DIMS];
    zf_grid_chunk_coords(&l->grid, shard, sc);
    char key[4096], where[256];
    zf_status st = zf_array_stored_key(a, &l->grid, sc, key, sizeof key, err);
    if (st != ZF_OK)
        return st;
    uint64_t base = 0, len = UINT64_MAX; /* the shard's bytes in the object (len unknown) */
    if (l->level > 0 && (st = locate_inner(&a->levels[l->level - 1], sc, &base, &len, err)))
        return st;
    coords_text(sc, l->grid.ndim, where, sizeof where);
    const zf_codec *codec;
    const zf_sharding *info;
    zf_array_level_shard(l, sc, &codec, &info);
    size_t isz = info->index_nbytes;
    zf_bytes raw;
    zf_err serr = {""};
    if (l->level == 0 && info->index_at_end) {
        st = zf_store_get_suffix(a->store, key, isz, &raw, &len, &serr);
    } else {
        if (len < isz)
            return zf_fail(err, ZF_ERR_CORRUPT, "%s: shard [%s] holds %llu bytes, less than its "
                           "%zu-byte index", key, where, (unsigned long long)len, isz);
        uint64_t at = info->index_at_end ? base + len - isz : base;
        st = zf_store_get_partial(a->store, key, at, isz, &raw, &serr);
    }
    if ((st = store_status(st, &serr, err)) != ZF_OK)
        return st;
    if (raw.len < isz) {
        zf_bytes_free(&raw);
        return zf_fail(err, ZF_ERR_CORRUPT, "%s: shard [%s] is shorter than its %zu-byte index",
                       key, where, isz);
    }
    uint64_t *pairs = malloc(2 * sizeof(uint64_t) * (info->nchunks ? info->nchunks : 1));
    if (!pairs) {
        zf_bytes_free(&raw);
        return ZF_ERR_NOMEM;
    }
    zf_err derr = {""};
    st = zf_sharding_decode_index(codec, raw.data, raw.len, len, pairs, &derr);
    zf_bytes_free(&raw);
    if (st != ZF_OK) {
        n_failed++;
        free(pairs);
        return zf_fail(err, st == ZF_ERR_NOMEM ? st : ZF_ERR_CORRUPT, "%s: shard [%s]: %s", key,
                       where, derr.msg[0] ? derr.msg : zf_status_str(st));
    }
    for (uint64_t i = 0; base && i < info->nchunks; i++)
        if (pairs[2 * i] != UINT64_MAX)
            pairs[2 * i] += base; /* within [0, len], so no overflow */
    *data = pairs;
    *size = 2 * sizeof(uint64_t) * info->nchunks;
    return ZF_OK;
}

/* Cache loader of one chunk of the flat view: a whole stored chunk, or one innermost chunk of a
 * shard, fetched by byte range. */
zf_status zf_array_read_stored_chunk(zf_array *a, const char *key, const uint64_t *cc,
                                     void **data, size_t *size, zf_store_version *ver,
                                     zf_err *err)
{
    zf_bytes raw;
    zf_err serr = {""};
    zf_status st = ver ? zf_store_read_versioned(a->store, key, ZF_READ_ALL, 0, 0, &raw, ver, &serr)
                       : zf_store_get(a->store, key, &raw, &serr);
    if ((st = store_status(st, &serr, err)) != ZF_OK)
        return st;
    char what[4200];
    snprintf(what, sizeof what, "chunk %s", key);
    zf_chunk_repr dec;
    zf_array_chunk_repr(a, cc, &dec);
    return decode_chunk(a, &dec, what, &raw, data, size, err);
}

static zf_status load_inner(zf_array *a, const char *key, const uint64_t *cc, void **data,
                            size_t *size, zf_err *err);
static zf_status load_chunk(zf_array *a, uint64_t chunk, void **data, size_t *size,
                           void **record, zf_err *err);

zf_status zf_array_load_chunk(void *ctx, uint64_t chunk, void **data, size_t *size,
                              void **record, zf_err *err)
{
    zf_array *a = ctx;
    zf_mem_ticket t;
    /* may wait for memory: backpressure; a kept buffer is set aside for the decoded chunk */
    zf_mem_admit(&t, load_estimate(a, chunk), a->text ? 0 : zf_array_chunk_nbytes(a, chunk));
    zf_status st = load_chunk(a, chunk, data, size, record, err);
    zf_mem_leave(&t, st == ZF_OK ? *size : 0); /* the chunk: the cache's charge takes it over */
    return st;
}

static zf_status load_chunk(zf_array *a, uint64_t chunk, void **data, size_t *size,
                           void **record, zf_err *err)
{
    uint64_t cc[ZF_MAX_DIMS];
    char key[4096];
    zf_grid_chunk_coords(&a->grid, chunk, cc);
    zf_status st = zf_array_stored_key(a, &a->grid, cc, key, sizeof key, err);
    if (st != ZF_OK)
        return st;
    if (a->nlevels == 0 && !a->writable)
        return zf_array_read_stored_chunk(a, key, cc, data, size, NULL, err);
    if (a->nlevels == 0) { /* remember the version, to store over it only (array_write.c) */
        zf_chunk_record *r = calloc(1, sizeof *r);
        if (!r)
            return ZF_ERR_NOMEM;
        st = zf_array_read_stored_chunk(a, key, cc, data, size, &r->stored, err);
        r->stored_known = st == ZF_OK || st == ZF_ERR_NOT_FOUND;
        r->stored_absent = st == ZF_ERR_NOT_FOUND;
        if (r->stored_known)
            *record = r;
        else
            free(r);
        return st;
    }
    /* A shard this daemon rewrites meanwhile (array_write.c) changes under neither the index
     * nor the bytes read here. */
    if (a->writable)
        pthread_rwlock_rdlock(&a->shard_rw);
    st = load_inner(a, key, cc, data, size, err);
    if (a->writable)
        pthread_rwlock_unlock(&a->shard_rw);
    return st;
}

/* Load the inner chunk at cc (coordinates in the array's grid) of the shard at key. */
static zf_status load_inner(zf_array *a, const char *key, const uint64_t *cc, void **data,
                            size_t *size, zf_err *err)
{
    zf_status st;
    zf_bytes raw;
    zf_err serr = {""};
    uint64_t off, n;
    if ((st = locate_inner(&a->levels[a->nlevels - 1], cc, &off, &n, err)) != ZF_OK)
        return st;
    char where[256], what[4400];
    coords_text(cc, a->grid.ndim, where, sizeof where);
    snprintf(what, sizeof what, "chunk %s: inner chunk [%s] (bytes %llu..%llu)", key, where,
             (unsigned long long)off, (unsigned long long)(off + n));
    st = zf_store_get_partial(a->store, key, off, n, &raw, &serr);
    if ((st = store_status(st, &serr, err)) != ZF_OK)
        return st == ZF_ERR_NOT_FOUND ? zf_fail(err, ZF_ERR_CORRUPT, "%s: shard vanished", what)
                                      : st;
    if (raw.len < n) {
        zf_bytes_free(&raw);
        return zf_fail(err, ZF_ERR_CORRUPT, "%s: the shard ends first", what);
    }
    return decode_chunk(a, &a->decoded, what, &raw, data, size, err);
}

/* The sharding codecs of level 0's shard shapes (a rectilinear grid; zf_array_meta_chunk_shapes
 * enumerates them, at most 64 as the metadata was checked). */
typedef struct variants_ctx {
    shard_level *l;
    const zf_array_meta *meta;
    size_t cap;
    zf_err *err;
} variants_ctx;

static int add_variant(void *ctx, const uint64_t *shape)
{
    variants_ctx *c = ctx;
    shard_level *l = c->l;
    if (l->nvariants == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 8;
        shard_variant *v = realloc(l->variants, cap * sizeof *v);
        if (!v)
            return ZF_ERR_NOMEM;
        l->variants = v;
        c->cap = cap;
    }
    shard_variant *v = &l->variants[l->nvariants];
    zf_chunk_repr r = {.ndim = c->meta->ndim, .dtype = c->meta->dtype,
                       .nbytes = c->meta->dtype.itemsize};
    for (unsigned d = 0; d < r.ndim; d++) {
        r.shape[d] = v->shape[d] = shape[d];
        r.nbytes *= (size_t)shape[d]; /* within the bounding shard, checked at parse time */
    }
    zf_status st = zf_sharding_reshaped(l->codec, &r, &v->codec, c->err);
    if (st != ZF_OK)
        return st;
    zf_codec_sharding(v->codec, &v->info);
    l->nvariants++;
    return ZF_OK;
}

static zf_status shard_variants(shard_level *l, const zf_array_meta *meta, zf_err *err)
{
    variants_ctx c = {l, meta, 0, err};
    bool too_many;
    zf_status st = (zf_status)zf_array_meta_chunk_shapes(meta, 64, add_variant, &c, &too_many);
    if (st == ZF_OK && too_many)
        st = zf_fail(err, ZF_ERR_UNSUPPORTED, "more than 64 shard shapes");
    return st;
}

/* The mask view of optional array a (opened, not yet published): a copy of a reading the
 * validity-depth bytes that follow the data in each decoded chunk, one byte per element. */
static zf_status open_mask_view(zf_array *a)
{
    zf_array *m = malloc(sizeof *m);
    if (!m)
        return ZF_ERR_NOMEM;
    memcpy(m, a, sizeof *m); /* the same store, cache id, chain and grid */
    if (!(m->prefix = strdup(a->prefix))) {
        free(m);
        return ZF_ERR_NOMEM;
    }
    m->itemsize = 1;
    m->plane_off = (size_t)zf_array_meta_chunk_elems(a->meta) * a->itemsize;
    m->nbytes = zf_grid_nelems(&a->grid);
    m->fill = &a->meta->mask_fill;
    m->fill_is_zero = a->meta->mask_fill == 0;
    m->mask = NULL;
    a->mask = m;
    return ZF_OK;
}

zf_array *zf_array_mask(zf_array *a) { return a->mask; }

zf_status zf_array_open(zf_store *store, const char *prefix, const zf_array_meta *meta,
                        zf_cache *cache, zf_pool *pool, uint64_t array_id, zf_array **out,
                        zf_err *err)
{
    zf_array *a = calloc(1, sizeof *a);
    if (!a || !(a->prefix = strdup(prefix))) {
        free(a);
        return ZF_ERR_NOMEM;
    }
    a->store = store;
    a->meta = meta;
    a->cache = cache;
    a->pool = pool;
    a->id = array_id;
    a->readahead = 1;
    a->itemsize = meta->dtype.itemsize;
    /* (optional data types: the data, then a validity-depth byte per element) */
    a->chunk_nbytes = (size_t)(zf_array_meta_chunk_elems(meta) *
                               (a->itemsize + (meta->optional_levels ? 1 : 0)));
    a->fill = meta->fill_value;
    a->decoded = (zf_chunk_repr){.ndim = meta->ndim, .dtype = meta->dtype,
                                 .nbytes = a->chunk_nbytes};
    memcpy(a->decoded.shape, meta->chunks, sizeof(uint64_t) * meta->ndim);
    a->chain = &meta->chain;
    /* Lone sharding codecs, outermost first: read their inner chunks by byte range. */
    const uint64_t *cshape = meta->chunks;
    zf_sharding info;
    while (a->chain->n == 1 && a->nlevels < MAX_SHARD_LEVELS &&
           zf_codec_sharding(a->chain->codecs[0], &info)) {
        if (info.nchunks > ((uint64_t)1 << 27)) { /* 2 GiB of index per shard */
            free(a->prefix);
            free(a);
            return zf_fail(err, ZF_ERR_UNSUPPORTED, "shards of %llu inner chunks are too many",
                           (unsigned long long)info.nchunks);
        }
        shard_level *l = &a->levels[a->nlevels];
        *l = (shard_level){.a = a, .level = a->nlevels, .codec = a->chain->codecs[0],
                           .info = info,
                           .cache_id = array_id | (uint64_t)(a->nlevels + 1) << 56};
        if (a->nlevels == 0 && meta->rect) { /* shards of differing shapes */
            zf_grid_init_meta(&l->grid, meta);
            zf_status st = shard_variants(l, meta, err);
            if (st != ZF_OK) {
                a->nlevels++; /* so that closing frees its variants */
                zf_array_close(a);
                return st;
            }
        } else {
            zf_grid_init(&l->grid, meta->ndim, meta->shape, cshape);
        }
        cshape = l->info.chunk_shape; /* not info's: the next iteration overwrites it */
        a->chain = info.codecs;
        a->decoded = *info.inner;
        a->chunk_nbytes = info.inner->nbytes;
        a->nlevels++;
    }
    if (a->nlevels == 0)
        zf_grid_init_meta(&a->grid, meta); /* regular or rectilinear */
    else
        zf_grid_init(&a->grid, meta->ndim, meta->shape, cshape);
    a->nbytes = zf_grid_nelems(&a->grid) * a->itemsize; /* bounded by 2^63 at parse time */
    if (zf_array_meta_is_text(meta)) {
        a->itemsize = 0;
        a->chunk_nbytes = 0;
        a->nbytes = 0;
        zf_array_text_init(a);
    }
    a->fill_is_zero = true;
    for (size_t i = 0; i < a->itemsize; i++)
        if (meta->fill_value[i])
            a->fill_is_zero = false;

    /* A sequential read sweeps a band of chunks per element row (see cache.h). */
    a->band_chunks = 1;
    /* Rows of a band, capped at the array's rows (one band then either way), so that the
     * product stays within the element count and cannot overflow. Used only for non-empty
     * arrays. */
    a->band_elems = !meta->ndim                        ? 1
                    : a->grid.chunks[0] < meta->shape[0] ? a->grid.chunks[0]
                                                         : meta->shape[0];
    a->row_elems = 1;
    for (unsigned d = 1; d < meta->ndim; d++) {
        a->band_chunks *= a->grid.grid[d]; /* <= number of elements, so no overflow */
        a->band_elems *= meta->shape[d];
        a->row_elems *= meta->shape[d];
    }
    uint64_t band = a->band_chunks && a->chunk_nbytes > UINT64_MAX / a->band_chunks
                        ? UINT64_MAX
                        : a->band_chunks * a->chunk_nbytes;
    a->band_bytes = band;
    if (a->nbytes > 0 && band > zf_cache_capacity(cache))
        zf_log_warn("%s: one band of chunks is %llu bytes, more than the chunk cache (%zu bytes):"
                    " sequential reads will decode chunks repeatedly; raise -o cache_size",
                    prefix[0] ? prefix : "/", (unsigned long long)band, zf_cache_capacity(cache));
    if (meta->optional_levels && open_mask_view(a) != ZF_OK) {
        zf_array_close(a);
        return ZF_ERR_NOMEM;
    }
    *out = a;
    return ZF_OK;
}

uint64_t zf_array_nbytes(const zf_array *a) { return a->nbytes; }

void zf_array_set_readahead(zf_array *a, unsigned bands, unsigned chunks)
{
    a->readahead = bands ? bands : 1;
    a->readahead_chunks = chunks;
}

void zf_array_close(zf_array *a)
{
    if (!a)
        return;
    if (a->writable) {
        pthread_mutex_destroy(&a->shard_mu);
        pthread_rwlock_destroy(&a->shard_rw);
    }
    zf_array_text_free(a);
    if (a->mask) {
        free(a->mask->prefix);
        free(a->mask);
    }
    for (unsigned i = 0; i < a->nlevels; i++) {
        for (size_t k = 0; k < a->levels[i].nvariants; k++)
            zf_codec_free(a->levels[i].variants[k].codec);
        free(a->levels[i].variants);
    }
    free(a->prefix);
    free(a);
}

/* ----- parallel prefetch of the chunks one read touches ----- */

/* The band (chunk index along the first dimension) of element elem of the flat view; the
 * number of bands at or past the end. */
static uint64_t band_of(const zf_array *a, uint64_t elem)
{
    if (!a->grid.edges[0])
        return elem / a->band_elems;
    uint64_t row = elem / a->row_elems, c, lo, edge;
    if (row >= a->grid.shape[0])
        return a->grid.grid[0];
    zf_chunk_edges_find(a->grid.edges[0], row, &c, &lo, &edge);
    return c;
}

#define PREFETCH_MAX 64

typedef struct prefetch_task {
    zf_array *a;
    uint64_t chunk;
    bool ahead; /* queued by readahead_band: pointless once the reader has passed its band */
} prefetch_task;

static void prefetch_run(void *arg)
{
    prefetch_task *t = arg;
    zf_array *a = t->a;
    zf_cache_entry *e;
    /* A busy pool can run a readahead task late, after the reader went through that band
     * itself: loading it again would only evict chunks the reader is about to use. */
    bool passed = t->ahead && t->chunk / a->band_chunks <
                                  band_of(a, atomic_load(&a->last_end) / a->itemsize);
    if (!passed && zf_cache_get(a->cache, a->id, t->chunk, zf_array_load_chunk, a, &e, NULL) == ZF_OK)
        zf_cache_release(a->cache, e);
    free(t);
}

size_t zf_array_cancel_prefetch(zf_pool *pool)
{
    return pool ? zf_pool_cancel(pool, prefetch_run, free) : 0;
}

typedef struct collect_ctx {
    uint64_t chunks[PREFETCH_MAX];
    size_t n;
} collect_ctx;

static zf_status collect_run(void *ctx, const zf_run *run)
{
    collect_ctx *c = ctx;
    for (size_t i = c->n; i-- > 0;) /* runs revisit recent chunks: search backwards */
        if (c->chunks[i] == run->chunk)
            return ZF_OK;
    if (c->n == PREFETCH_MAX)
        return ZF_ERR_NOMEM; /* enough: stop collecting */
    c->chunks[c->n++] = run->chunk;
    return ZF_OK;
}

static bool queue_load(zf_array *a, uint64_t chunk, bool ahead);

bool zf_array_is_text(const zf_array *a) { return a->text; }

bool zf_array_queue_load(zf_array *a, uint64_t chunk) { return queue_load(a, chunk, false); }

static bool queue_load(zf_array *a, uint64_t chunk, bool ahead)
{
    prefetch_task *t = malloc(sizeof *t);
    if (!t)
        return false;
    *t = (prefetch_task){.a = a, .chunk = chunk, .ahead = ahead};
    if (zf_pool_submit(a->pool, prefetch_run, t) != ZF_OK) {
        free(t);
        return false;
    }
    return true;
}

/* The band just past bands [first, ...) that together span at least `rows` rows (at most
 * 4096 bands, at most to the grid's end): rectilinear first dimensions. */
static uint64_t bands_covering(const zf_array *a, uint64_t first, uint64_t rows)
{
    uint64_t b = first, got = 0, lo, edge;
    while (b < a->grid.grid[0] && got < rows && b - first < 4096) {
        zf_chunk_edges_chunk(a->grid.edges[0], b++, &lo, &edge);
        got += edge;
    }
    return b;
}

/* Readahead across bands: while a sequential reader is in band b, decode bands b + 1 ..
 * b + readahead on the pool, so that it does not stall at every band boundary (for a remote
 * store: so that fetches overlap). Only as many bands as fit well in the cache. */
static void readahead_band(zf_array *a, uint64_t offset, size_t len)
{
    /* Within two request lengths of where the last read ended: the kernel's readahead requests
     * run concurrently and may arrive slightly out of order. */
    uint64_t prev = atomic_exchange(&a->last_end, offset + len);
    uint64_t dist = offset > prev ? offset - prev : prev - offset;
    bool sequential = dist <= 2 * (uint64_t)len;
    uint64_t fit = a->band_bytes ? zf_cache_capacity(a->cache) / 4 / a->band_bytes : 0;
    uint64_t want = (a->readahead_chunks + a->band_chunks - 1) / a->band_chunks;
    if (want < a->readahead)
        want = a->readahead;
    uint64_t ahead = want < fit ? want : fit;
    if (!sequential || a->meta->ndim == 0 || ahead == 0)
        return;
    uint64_t next = band_of(a, offset / a->itemsize) + 1; /* the band after this read's */
    uint64_t queued = atomic_load(&a->next_band);              /* bands below it are queued */
    if (queued > next + ahead && atomic_compare_exchange_strong(&a->next_band, &queued, next))
        queued = next; /* a new pass from further back: read ahead again from here */
    uint64_t end = next + ahead < a->grid.grid[0] ? next + ahead : a->grid.grid[0];
    if (a->grid.edges[0]) /* bands of differing heights: as many rows ahead as `ahead` of the
                             tallest bands (a short band next would starve the decoders) */
        end = bands_covering(a, next, ahead * a->grid.chunks[0]);
    if (queued < next)
        queued = next;
    while (queued < end) { /* claim the bands [queued, end) */
        uint64_t seen = atomic_load(&a->next_band);
        if (seen >= end)
            return;
        uint64_t from = seen > queued ? seen : queued;
        if (!atomic_compare_exchange_strong(&a->next_band, &seen, end))
            continue;
        for (uint64_t c = from * a->band_chunks; c < end * a->band_chunks; c++)
            if (!zf_cache_contains(a->cache, a->id, c) && !queue_load(a, c, true))
                return;
        return;
    }
}

static void prefetch(zf_array *a, uint64_t elem_begin, uint64_t elem_end)
{
    collect_ctx c = {.n = 0};
    zf_grid_runs(&a->grid, elem_begin, elem_end, collect_run, &c);
    if (c.n < 2)
        return;
    /* Keep what is prefetched well inside the cache, or it would evict itself. */
    size_t budget = zf_cache_capacity(a->cache) / 4, used = 0;
    for (size_t i = 1; i < c.n; i++) { /* the reader itself loads the first */
        if (zf_cache_contains(a->cache, a->id, c.chunks[i]))
            continue;
        if ((used += a->chunk_nbytes) > budget || !queue_load(a, c.chunks[i], false))
            break;
    }
}

/* ----- the copy ----- */

#define PINNED 8

typedef struct read_ctx {
    zf_array *a;
    uint8_t *buf;
    uint64_t begin, end; /* bytes of the flat view */
    struct {
        uint64_t chunk;
        zf_cache_entry *e;
    } pinned[PINNED];
    unsigned npinned, next_slot;
    zf_err *err;
} read_ctx;

static zf_status chunk_entry(read_ctx *r, uint64_t chunk, zf_cache_entry **out)
{
    for (unsigned i = 0; i < r->npinned; i++)
        if (r->pinned[i].chunk == chunk) {
            *out = r->pinned[i].e;
            return ZF_OK;
        }
    zf_cache_entry *e;
    zf_status st = zf_cache_get(r->a->cache, r->a->id, chunk, zf_array_load_chunk, r->a, &e, r->err);
    if (st != ZF_OK)
        return st;
    unsigned slot;
    if (r->npinned < PINNED) {
        slot = r->npinned++;
    } else { /* replace round-robin: runs move through a read's chunks in order */
        slot = r->next_slot++ % PINNED;
        zf_cache_release(r->a->cache, r->pinned[slot].e);
    }
    r->pinned[slot].chunk = chunk;
    r->pinned[slot].e = e;
    *out = e;
    return ZF_OK;
}

void zf_array_fill_pattern(uint8_t *dst, uint64_t first_byte, size_t n, const uint8_t *fill,
                         size_t isz)
{
    size_t phase = (size_t)(first_byte % isz);
    for (size_t i = 0; i < n; i++) {
        dst[i] = fill[phase];
        if (++phase == isz)
            phase = 0;
    }
}

size_t zf_run_bytes(const zf_array *a, const zf_run *run, uint64_t begin, uint64_t end,
                    uint64_t *rb)
{
    uint64_t b = run->elem * a->itemsize, e = b + run->count * a->itemsize;
    *rb = b < begin ? begin : b;
    return (size_t)((e > end ? end : e) - *rb);
}

static zf_status copy_run(void *ctx, const zf_run *run)
{
    read_ctx *r = ctx;
    zf_array *a = r->a;
    size_t isz = a->itemsize;
    uint64_t rb;
    size_t n = zf_run_bytes(a, run, r->begin, r->end, &rb);
    uint8_t *dst = r->buf + (rb - r->begin);
    zf_cache_entry *e;
    zf_status st = chunk_entry(r, run->chunk, &e);
    if (st != ZF_OK)
        return st;
    if (a->writable) /* a writer may be changing this chunk (or giving it data) */
        zf_cache_entry_lock(e);
    const uint8_t *data = zf_cache_entry_data(e);
    if (data)
        memcpy(dst, data + a->plane_off + run->in_chunk * isz + (rb - run->elem * isz), n);
    else if (a->fill_is_zero)
        memset(dst, 0, n);
    else
        zf_array_fill_pattern(dst, rb, n, a->fill, isz);
    if (a->writable)
        zf_cache_entry_unlock(e);
    return ZF_OK;
}

/* What a read of len bytes at offset covers: false when nothing (at or past the end);
 * else *len clipped to the array, the elements [*eb, *ee), and the chunks it touches (and the
 * bands ahead of a sequential reader) queued for decoding. */
static bool read_begin(zf_array *a, uint64_t offset, size_t *len, uint64_t *eb, uint64_t *ee)
{
    if (offset >= a->nbytes || *len == 0)
        return false;
    if (*len > a->nbytes - offset)
        *len = (size_t)(a->nbytes - offset);
    size_t isz = a->itemsize;
    *eb = offset / isz;
    *ee = (offset + *len + isz - 1) / isz;
    if (a->pool) {
        prefetch(a, *eb, *ee);
        readahead_band(a, offset, *len);
    }
    return true;
}

zf_status zf_array_read(zf_array *a, uint64_t offset, void *buf, size_t len, size_t *nread,
                        zf_err *err)
{
    *nread = 0;
    if (a->text)
        return zf_array_text_read(a, offset, buf, len, nread, err);
    uint64_t eb, ee;
    if (!read_begin(a, offset, &len, &eb, &ee))
        return ZF_OK;
    read_ctx r = {.a = a, .buf = buf, .begin = offset, .end = offset + len, .err = err};
    zf_status st = zf_grid_runs(&a->grid, eb, ee, copy_run, &r);
    for (unsigned i = 0; i < r.npinned; i++)
        zf_cache_release(a->cache, r.pinned[i].e);
    if (st == ZF_OK)
        *nread = len;
    return st;
}

/* ----- zero-copy reads (zf_array_read_view) ----- */

/* What absent chunks with a zero fill value point into. */
static const uint8_t zero_bytes[64 * 1024];

typedef struct view_ctx {
    zf_array *a;
    zf_array_view *v;
    uint64_t begin, end;
    zf_err *err;
} view_ctx;

static zf_status view_piece(zf_array_view *v, const uint8_t *base, size_t n)
{
    if (v->npieces) { /* continues the previous piece in memory: merge */
        struct iovec *p = &v->pieces[v->npieces - 1];
        if ((const uint8_t *)p->iov_base + p->iov_len == base) {
            p->iov_len += n;
            v->len += n;
            return ZF_OK;
        }
    }
    if (v->npieces == ZF_VIEW_MAX_PIECES)
        return ZF_ERR_UNSUPPORTED;
    v->pieces[v->npieces++] = (struct iovec){(void *)base, n};
    v->len += n;
    return ZF_OK;
}

static zf_status view_run(void *ctx, const zf_run *run)
{
    view_ctx *r = ctx;
    zf_array *a = r->a;
    zf_array_view *v = r->v;
    size_t isz = a->itemsize;
    uint64_t rb;
    size_t n = zf_run_bytes(a, run, r->begin, r->end, &rb);
    zf_cache_entry *e = NULL;
    for (size_t i = v->npins; i-- > 0 && !e;) /* runs revisit recent chunks */
        if (zf_cache_entry_chunk(v->pins[i]) == run->chunk)
            e = v->pins[i];
    if (!e) {
        if (v->npins == ZF_VIEW_MAX_PINS)
            return ZF_ERR_UNSUPPORTED;
        zf_status st = zf_cache_get(a->cache, a->id, run->chunk, zf_array_load_chunk, a, &e,
                                    r->err);
        if (st != ZF_OK)
            return st;
        v->pins[v->npins++] = e;
    }
    const uint8_t *data = zf_cache_entry_data(e);
    if (data)
        return view_piece(v, data + a->plane_off + run->in_chunk * isz + (rb - run->elem * isz),
                          n);
    if (!a->fill_is_zero)
        return ZF_ERR_UNSUPPORTED;
    for (size_t done = 0; done < n;) {
        size_t k = n - done < sizeof zero_bytes ? n - done : sizeof zero_bytes;
        zf_status st = view_piece(v, zero_bytes, k);
        if (st != ZF_OK)
            return st;
        done += k;
    }
    return ZF_OK;
}

void zf_array_view_release(zf_array *a, zf_array_view *v)
{
    for (size_t i = 0; i < v->npins; i++)
        zf_cache_release(a->cache, v->pins[i]);
    v->npins = v->npieces = v->len = 0;
}

zf_status zf_array_read_view(zf_array *a, uint64_t offset, size_t len, zf_array_view *v,
                             size_t *nread, zf_err *err)
{
    *nread = 0;
    v->npieces = v->npins = v->len = 0;
    if (a->writable || a->text)
        return ZF_ERR_UNSUPPORTED;
    uint64_t eb, ee;
    if (!read_begin(a, offset, &len, &eb, &ee))
        return ZF_OK;
    view_ctx r = {.a = a, .v = v, .begin = offset, .end = offset + len, .err = err};
    zf_status st = zf_grid_runs(&a->grid, eb, ee, view_run, &r);
    if (st != ZF_OK) {
        zf_array_view_release(a, v);
        return st;
    }
    *nread = len;
    return ZF_OK;
}
