/* text.c — the text view of an array of variable-length elements (include/zarrfs/array.h,
 * "text view"; docs/formats.md "Variable-length arrays as text"): one line per element in C
 * order over the whole array.
 *
 * Cached chunks hold their elements as text with a line index (zf_text_chunk), so a run of
 * elements inside one chunk is one contiguous piece of text. A band (the chunks sharing the
 * first chunk coordinate) covers a contiguous range of elements, so the text of band b starts
 * where the text of bands 0..b-1 ends: those offsets are learned band by band as readers reach
 * them (each band's length is the sum of its runs' text) and remembered for the mount, so the
 * memory kept is one offset per band read so far plus the chunk cache. Within a band the
 * elements of a row of chunks interleave: a read walks the band's runs (zf_grid_runs) from the
 * band's start, or from where the previous read stopped. */
#include <stdlib.h>
#include <string.h>

#include "array_impl.h"
#include "zarrfs/log.h"

/* Bands and elements of the text view (ndim 0: one band of one element). */
static uint64_t band_first(const zf_array *a, uint64_t b)
{
    if (a->meta->ndim == 0)
        return b;
    uint64_t lo = b * a->grid.chunks[0], edge;
    if (a->grid.edges[0]) /* a rectilinear first dimension */
        zf_chunk_edges_chunk(a->grid.edges[0], b, &lo, &edge);
    return lo * a->text_row;
}

static uint64_t band_end(const zf_array *a, uint64_t b)
{
    if (a->meta->ndim == 0)
        return b + 1;
    uint64_t lo = b * a->grid.chunks[0], edge = a->grid.chunks[0];
    if (a->grid.edges[0])
        zf_chunk_edges_chunk(a->grid.edges[0], b, &lo, &edge);
    uint64_t rows = lo + edge;
    if (rows > a->grid.shape[0])
        rows = a->grid.shape[0];
    return rows * a->text_row;
}

void zf_array_text_init(zf_array *a)
{
    a->text = true;
    pthread_mutex_init(&a->text_mu, NULL);
    a->text_row = 1;
    for (unsigned d = 1; d < a->meta->ndim; d++)
        a->text_row *= a->meta->shape[d];
    uint64_t nelems = zf_grid_nelems(&a->grid);
    a->text_nbands = nelems == 0 ? 0 : a->meta->ndim == 0 ? 1 : a->grid.grid[0];
    a->text_cursor_elem = UINT64_MAX;
    if (a->text_nbands == 0)
        atomic_store(&a->text_known, true); /* empty: size 0 */
}

void zf_array_text_free(zf_array *a)
{
    if (!a->text)
        return;
    pthread_mutex_destroy(&a->text_mu);
    free(a->text_band_start);
}

bool zf_array_text_size(zf_array *a, uint64_t *size)
{
    if (!a->text || !atomic_load(&a->text_known))
        return false;
    pthread_mutex_lock(&a->text_mu);
    *size = a->text_nbands ? a->text_band_start[a->text_nbands] : 0;
    pthread_mutex_unlock(&a->text_mu);
    return true;
}

/* The text of elements [run->in_chunk, + run->count) of a run: *p and *n when the chunk is
 * present (p NULL: absent, every element is the fill line). The entry stays pinned in *e. */
static zf_status run_text(zf_array *a, const zf_run *run, zf_cache_entry **e, const char **p,
                          uint64_t *n, zf_err *err)
{
    zf_status st = zf_cache_get(a->cache, a->id, run->chunk, zf_array_load_chunk, a, e, err);
    if (st != ZF_OK)
        return st;
    const zf_text_chunk *t = zf_cache_entry_data(*e);
    if (!t) {
        *p = NULL;
        *n = run->count * a->meta->text_fill_len;
        return ZF_OK;
    }
    uint32_t b = t->starts[run->in_chunk], x = t->starts[run->in_chunk + run->count];
    *p = t->text + b;
    *n = x - b;
    return ZF_OK;
}

typedef struct walk {
    zf_array *a;
    uint64_t pos;        /* text offset of the current run's first line */
    uint64_t begin, end; /* bytes wanted (copy) */
    uint8_t *buf;        /* NULL: only measure */
    bool stopped;
    zf_err *err;
} walk;

#define STOP ZF_ERR_NOT_FOUND /* a walk callback's "enough" */

static zf_status measure_run(void *ctx, const zf_run *run)
{
    walk *w = ctx;
    zf_cache_entry *e;
    const char *p;
    uint64_t n;
    zf_status st = run_text(w->a, run, &e, &p, &n, w->err);
    if (st != ZF_OK)
        return st;
    zf_cache_release(w->a->cache, e);
    w->pos += n;
    return ZF_OK;
}

static zf_status copy_run(void *ctx, const zf_run *run)
{
    walk *w = ctx;
    zf_array *a = w->a;
    if (w->pos >= w->end) {
        w->stopped = true;
        return STOP;
    }
    a->text_cursor_pos = w->pos; /* a later read from here on starts at this run */
    a->text_cursor_elem = run->elem;
    zf_cache_entry *e;
    const char *p;
    uint64_t n;
    zf_status st = run_text(a, run, &e, &p, &n, w->err);
    if (st != ZF_OK)
        return st;
    uint64_t lo = w->pos > w->begin ? w->pos : w->begin;
    uint64_t hi = w->pos + n < w->end ? w->pos + n : w->end;
    for (uint64_t o = lo; o < hi;) {
        uint64_t r = o - w->pos; /* offset in the run's text */
        uint8_t *dst = w->buf + (o - w->begin);
        size_t k;
        if (p) {
            k = (size_t)(hi - o);
            memcpy(dst, p + r, k);
        } else { /* the fill line, repeated */
            size_t fl = a->meta->text_fill_len, ph = (size_t)(r % fl);
            k = fl - ph < hi - o ? fl - ph : (size_t)(hi - o);
            memcpy(dst, a->meta->text_fill + ph, k);
        }
        o += k;
    }
    zf_cache_release(a->cache, e);
    w->pos += n;
    return ZF_OK;
}

/* Queue the chunks of bands [b, b + ahead) missing from the cache on the pool (at most 64),
 * so that their decodes run in parallel with the walk that needs them. */
static void text_prefetch(zf_array *a, uint64_t b)
{
    if (!a->pool || a->meta->ndim == 0)
        return;
    uint64_t per = a->band_chunks, first = b * per, n = 0;
    uint64_t last = a->grid.grid[0] * per;
    for (uint64_t c = first; c < last && n < 64; c++, n++)
        if (!zf_cache_contains(a->cache, a->id, c) && !zf_array_queue_load(a, c))
            return;
}

/* Learn band text_nknown's length (text_mu held). */
static zf_status extend(zf_array *a, zf_err *err)
{
    uint64_t b = a->text_nknown;
    if (b + 2 > a->text_cap) {
        size_t cap = a->text_cap ? a->text_cap * 2 : 64;
        if (cap > a->text_nbands + 1)
            cap = (size_t)a->text_nbands + 1;
        uint64_t *v = realloc(a->text_band_start, cap * sizeof *v);
        if (!v)
            return ZF_ERR_NOMEM;
        if (!a->text_band_start)
            v[0] = 0;
        a->text_band_start = v;
        a->text_cap = cap;
    }
    text_prefetch(a, b);
    walk w = {.a = a, .pos = a->text_band_start[b], .err = err};
    zf_status st = zf_grid_runs(&a->grid, band_first(a, b), band_end(a, b), measure_run, &w);
    if (st != ZF_OK)
        return st;
    a->text_band_start[b + 1] = w.pos;
    a->text_nknown = b + 1;
    if (a->text_nknown == a->text_nbands)
        atomic_store(&a->text_known, true);
    return ZF_OK;
}

zf_status zf_array_text_read(zf_array *a, uint64_t offset, void *buf, size_t len,
                             size_t *nread, zf_err *err)
{
    *nread = 0;
    if (len == 0 || a->text_nbands == 0)
        return ZF_OK;
    pthread_mutex_lock(&a->text_mu);
    zf_status st = ZF_OK;
    if (!a->text_band_start && (st = extend(a, err)) != ZF_OK)
        goto out;
    while (a->text_nknown < a->text_nbands && a->text_band_start[a->text_nknown] <= offset)
        if ((st = extend(a, err)) != ZF_OK)
            goto out;
    uint64_t total = a->text_band_start[a->text_nknown];
    if (a->text_nknown == a->text_nbands && offset >= total)
        goto out; /* at or past the end */
    uint64_t lo = 0, hi = a->text_nknown - 1; /* the band holding offset: last start <= it */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo + 1) / 2;
        if (a->text_band_start[mid] <= offset)
            lo = mid;
        else
            hi = mid - 1;
    }
    uint64_t b = lo, pos = a->text_band_start[b], elem = band_first(a, b);
    if (a->text_cursor_elem != UINT64_MAX && a->text_cursor_pos >= pos &&
        a->text_cursor_pos <= offset) {
        pos = a->text_cursor_pos;
        elem = a->text_cursor_elem;
    }
    text_prefetch(a, b + 1);
    walk w = {.a = a, .pos = pos, .begin = offset, .end = offset + len, .buf = buf, .err = err};
    st = zf_grid_runs(&a->grid, elem, zf_grid_nelems(&a->grid), copy_run, &w);
    if (st == STOP && w.stopped)
        st = ZF_OK;
    if (st == ZF_OK)
        *nread = (size_t)((w.pos < w.end ? w.pos : w.end) - offset);
out:
    pthread_mutex_unlock(&a->text_mu);
    return st;
}
