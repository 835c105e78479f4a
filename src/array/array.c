/* array.c — chunk-grid arithmetic and reads of an array's flat byte view.
 *
 * A read of [offset, offset + len): byte range -> element range -> runs of elements contiguous
 * both in the flat view and in one chunk (zf_grid_runs) -> for each run, the decoded chunk from
 * the cache (loaded on a miss: store get, codec chain decode) or the fill value for an absent
 * chunk -> memcpy into the caller's buffer. The distinct chunks of a read are first queued on the
 * worker pool, so a read spanning many chunks decodes them in parallel. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "zarrfs/array.h"
#include "zarrfs/log.h"
#include "zarrfs/mem.h"

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

void zf_grid_locate(const zf_grid *g, const uint64_t *coords, uint64_t *chunk_coords,
                    uint64_t *in_chunk)
{
    uint64_t idx = 0;
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
    memset(c, 0, sizeof *c);
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

zf_status zf_grid_runs(const zf_grid *g, uint64_t elem_begin, uint64_t elem_end, zf_run_fn fn,
                       void *ctx)
{
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

struct zf_array {
    zf_store *store;
    char *prefix;
    const zf_array_meta *meta;
    zf_cache *cache;
    zf_pool *pool;
    uint64_t id;
    zf_grid grid;
    size_t itemsize;
    uint64_t nbytes;       /* flat view */
    size_t chunk_nbytes;   /* one decoded chunk */
    zf_chunk_repr decoded; /* one decoded chunk's representation */
    bool fill_is_zero;
    uint64_t band_chunks;  /* chunks per band: product of grid[1..] */
    uint64_t band_elems;   /* elements of the flat view per band: chunks[0] * product(shape[1..]) */
    uint64_t band_bytes;   /* decoded bytes of one band (saturated) */
    _Atomic uint64_t last_end;     /* byte just past the previous read, to spot sequential reads */
    _Atomic uint64_t next_band;    /* bands below this are already queued for readahead */
};

static zf_status load_chunk(void *ctx, uint64_t chunk, void **data, size_t *size, zf_err *err)
{
    zf_array *a = ctx;
    uint64_t cc[ZF_MAX_DIMS];
    char key[4096];
    zf_grid_chunk_coords(&a->grid, chunk, cc);
    if (zf_array_meta_chunk_key(a->meta, a->prefix, cc, key, sizeof key) != ZF_OK)
        return zf_fail(err, ZF_ERR_INVALID, "chunk key too long");
    zf_bytes raw;
    zf_err serr = {""};
    zf_status st = zf_store_get(a->store, key, &raw, &serr);
    if (st == ZF_ERR_NOT_FOUND)
        return st;
    if (st != ZF_OK)
        return zf_fail(err, st == ZF_ERR_NOMEM ? st : ZF_ERR_IO, "%s",
                       serr.msg[0] ? serr.msg : zf_status_str(st));
    if (a->meta->chain.n == 0 && raw.len == a->chunk_nbytes && raw.data) {
        *data = raw.data; /* stored raw: the store's buffer is the decoded chunk */
        *size = raw.len;
        return ZF_OK;
    }
    uint8_t *out = zf_alloc_bulk(a->chunk_nbytes);
    if (!out) {
        zf_bytes_free(&raw);
        return ZF_ERR_NOMEM;
    }
    zf_err derr = {""};
    st = zf_chain_decode(&a->meta->chain, &a->decoded, raw.data, raw.len, out, &derr);
    zf_bytes_free(&raw);
    if (st != ZF_OK) {
        free(out);
        return zf_fail(err, st == ZF_ERR_NOMEM ? st : ZF_ERR_CORRUPT, "chunk %s: %s", key,
                       derr.msg[0] ? derr.msg : zf_status_str(st));
    }
    *data = out;
    *size = a->chunk_nbytes;
    return ZF_OK;
}

zf_status zf_array_open(zf_store *store, const char *prefix, const zf_array_meta *meta,
                        zf_cache *cache, zf_pool *pool, uint64_t array_id, zf_array **out,
                        zf_err *err)
{
    (void)err;
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
    zf_grid_init(&a->grid, meta->ndim, meta->shape, meta->chunks);
    a->itemsize = meta->dtype.itemsize;
    a->nbytes = zf_grid_nelems(&a->grid) * a->itemsize; /* bounded by 2^63 at parse time */
    a->chunk_nbytes = (size_t)(zf_array_meta_chunk_elems(meta) * a->itemsize);
    a->decoded = (zf_chunk_repr){.ndim = meta->ndim, .dtype = meta->dtype,
                                 .nbytes = a->chunk_nbytes};
    memcpy(a->decoded.shape, meta->chunks, sizeof(uint64_t) * meta->ndim);
    a->fill_is_zero = true;
    for (size_t i = 0; i < a->itemsize; i++)
        if (meta->fill_value[i])
            a->fill_is_zero = false;

    /* A sequential read sweeps a band of chunks per element row (see cache.h). */
    a->band_chunks = 1;
    /* Rows of a band, capped at the array's rows (one band then either way), so that the
     * product stays within the element count and cannot overflow. Used only for non-empty
     * arrays. */
    a->band_elems = !meta->ndim ? 1 : meta->chunks[0] < meta->shape[0] ? meta->chunks[0]
                                                                       : meta->shape[0];
    for (unsigned d = 1; d < meta->ndim; d++) {
        a->band_chunks *= a->grid.grid[d]; /* <= number of elements, so no overflow */
        a->band_elems *= meta->shape[d];
    }
    uint64_t band = a->band_chunks && a->chunk_nbytes > UINT64_MAX / a->band_chunks
                        ? UINT64_MAX
                        : a->band_chunks * a->chunk_nbytes;
    a->band_bytes = band;
    if (a->nbytes > 0 && band > zf_cache_capacity(cache))
        zf_log_warn("%s: one band of chunks is %llu bytes, more than the chunk cache (%zu bytes):"
                    " sequential reads will decode chunks repeatedly; raise -o cache_size",
                    prefix[0] ? prefix : "/", (unsigned long long)band, zf_cache_capacity(cache));
    *out = a;
    return ZF_OK;
}

uint64_t zf_array_nbytes(const zf_array *a) { return a->nbytes; }

void zf_array_close(zf_array *a)
{
    if (!a)
        return;
    free(a->prefix);
    free(a);
}

/* ----- parallel prefetch of the chunks one read touches ----- */

#define PREFETCH_MAX 64

typedef struct prefetch_task {
    zf_array *a;
    uint64_t chunk;
} prefetch_task;

static void prefetch_run(void *arg)
{
    prefetch_task *t = arg;
    zf_cache_entry *e;
    if (zf_cache_get(t->a->cache, t->a->id, t->chunk, load_chunk, t->a, &e, NULL) == ZF_OK)
        zf_cache_release(t->a->cache, e);
    free(t);
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

static bool queue_load(zf_array *a, uint64_t chunk)
{
    prefetch_task *t = malloc(sizeof *t);
    if (!t)
        return false;
    *t = (prefetch_task){.a = a, .chunk = chunk};
    if (zf_pool_submit(a->pool, prefetch_run, t) != ZF_OK) {
        free(t);
        return false;
    }
    return true;
}

/* Readahead across bands: while a sequential reader is in band b, decode band b + 1 on the pool,
 * so that it does not stall at every band boundary. Only when two bands fit well in the cache. */
static void readahead_band(zf_array *a, uint64_t offset, size_t len)
{
    /* Within two request lengths of where the last read ended: the kernel's readahead requests
     * run concurrently and may arrive slightly out of order. */
    uint64_t prev = atomic_exchange(&a->last_end, offset + len);
    uint64_t dist = offset > prev ? offset - prev : prev - offset;
    bool sequential = dist <= 2 * (uint64_t)len;
    if (!sequential || a->meta->ndim == 0 || a->band_bytes > zf_cache_capacity(a->cache) / 4)
        return;
    uint64_t next = offset / a->itemsize / a->band_elems + 1; /* the band after this read's */
    uint64_t queued = atomic_load(&a->next_band);
    if (queued > next + 1 && atomic_compare_exchange_strong(&a->next_band, &queued, next))
        queued = next; /* a new pass from further back: read ahead again from here */
    if (next >= a->grid.grid[0] || queued > next ||
        !atomic_compare_exchange_strong(&a->next_band, &queued, next + 1))
        return;
    for (uint64_t c = next * a->band_chunks; c < (next + 1) * a->band_chunks; c++)
        if (!zf_cache_contains(a->cache, a->id, c) && !queue_load(a, c))
            break;
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
        if ((used += a->chunk_nbytes) > budget || !queue_load(a, c.chunks[i]))
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
    zf_status st = zf_cache_get(r->a->cache, r->a->id, chunk, load_chunk, r->a, &e, r->err);
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

static void fill_pattern(uint8_t *dst, uint64_t first_byte, size_t n, const uint8_t *fill,
                         size_t isz)
{
    size_t phase = (size_t)(first_byte % isz);
    for (size_t i = 0; i < n; i++) {
        dst[i] = fill[phase];
        if (++phase == isz)
            phase = 0;
    }
}

static zf_status copy_run(void *ctx, const zf_run *run)
{
    read_ctx *r = ctx;
    zf_array *a = r->a;
    size_t isz = a->itemsize;
    uint64_t rb = run->elem * isz, re = rb + run->count * isz;
    if (rb < r->begin)
        rb = r->begin;
    if (re > r->end)
        re = r->end;
    uint8_t *dst = r->buf + (rb - r->begin);
    size_t n = (size_t)(re - rb);
    zf_cache_entry *e;
    zf_status st = chunk_entry(r, run->chunk, &e);
    if (st != ZF_OK)
        return st;
    const uint8_t *data = zf_cache_entry_data(e);
    if (data)
        memcpy(dst, data + run->in_chunk * isz + (rb - run->elem * isz), n);
    else if (a->fill_is_zero)
        memset(dst, 0, n);
    else
        fill_pattern(dst, rb, n, a->meta->fill_value, isz);
    return ZF_OK;
}

zf_status zf_array_read(zf_array *a, uint64_t offset, void *buf, size_t len, size_t *nread,
                        zf_err *err)
{
    *nread = 0;
    if (offset >= a->nbytes || len == 0)
        return ZF_OK;
    if (len > a->nbytes - offset)
        len = (size_t)(a->nbytes - offset);
    size_t isz = a->itemsize;
    uint64_t eb = offset / isz, ee = (offset + len + isz - 1) / isz;
    if (a->pool) {
        prefetch(a, eb, ee);
        readahead_band(a, offset, len);
    }
    read_ctx r = {.a = a, .buf = buf, .begin = offset, .end = offset + len, .err = err};
    zf_status st = zf_grid_runs(&a->grid, eb, ee, copy_run, &r);
    for (unsigned i = 0; i < r.npinned; i++)
        zf_cache_release(a->cache, r.pinned[i].e);
    if (st == ZF_OK)
        *nread = len;
    return st;
}
