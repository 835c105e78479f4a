/* array_write.c — writes into an array's flat byte view (see array.h, "writing").
 *
 * A write of [offset, offset + len): byte range -> runs of elements in one chunk (zf_grid_runs,
 * as reads) -> for each run, the decoded chunk from the cache (a chunk the write covers whole is
 * created filled with the fill value instead of being read) -> memcpy under the entry's lock ->
 * the entry is marked dirty, and the elements written are noted (see "what a write changed").
 * Writeback (called by the cache's flushes) encodes a dirty chunk and stores it, or erases it
 * when it holds only the fill value; a chunk written in part is first merged into the chunk as
 * the store holds it then. For sharded arrays it rewrites the whole shard from its dirty inner
 * chunks and the old shard's other inner chunks. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array_impl.h"
#include "zarrfs/log.h"
#include "zarrfs/mem.h"

static zf_status writeback(void *ctx, zf_cache_entry *e, zf_err *err);

/* Conditional writes of a merge (a shard, a chunk written in part) tried before a conflict is
 * an error (another writer keeps winning). */
#define MERGE_WRITE_ATTEMPTS 16

zf_status zf_array_enable_write(zf_array *a, bool write_empty_chunks, zf_err *err)
{
    if (a->writable)
        return ZF_OK;
    if (a->text)
        return zf_fail(err, ZF_ERR_PERMISSION, "arrays of variable-length elements are read-only");
    if (a->meta->optional_levels)
        return zf_fail(err, ZF_ERR_PERMISSION, "arrays of optional data types are read-only");
    if (!zf_store_is_writable(a->store))
        return zf_fail(err, ZF_ERR_READONLY, "%s: this store is read-only", a->store->url);
    if (a->nlevels > 1)
        return zf_fail(err, ZF_ERR_UNSUPPORTED,
                       "writing arrays with nested sharding is not supported");
    a->write_empty_chunks = write_empty_chunks;
    a->fill_defined = !a->meta->fill_value_json || strcmp(a->meta->fill_value_json, "null");
    pthread_mutex_init(&a->shard_mu, NULL);
    /* Writers first: readers that keep loading inner chunks must not starve a shard's store. */
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&a->shard_rw, &ra);
    pthread_rwlockattr_destroy(&ra);
    a->owner = (zf_cache_owner){.writeback = writeback, .ctx = a};
    a->writable = true;
    return ZF_OK;
}

/* A new chunk buffer (zf_alloc_chunk: one the pool kept when it can, so that a streaming writer,
 * whose stored chunks leave the cache behind it, touches no fresh memory), holding the fill value
 * everywhere when fill. (Plain malloc had been chosen here for fear of huge-page compaction while
 * a writer fills the page cache; with the pool, 512 MiB dd's through the mount were as fast or
 * faster with the huge-page advice: docs/benchmarks-history.md, "Write-behind".) */
static uint8_t *fill_chunk(zf_array *a, size_t nbytes, bool fill)
{
    uint8_t *p = zf_alloc_chunk(nbytes ? nbytes : 1);
    if (!p || !fill)
        return p;
    if (a->fill_is_zero)
        memset(p, 0, nbytes);
    else
        zf_array_fill_pattern(p, 0, nbytes, a->meta->fill_value, a->itemsize);
    return p;
}

/* True when buf (a whole chunk) holds the fill value in every element. */
static bool is_fill(const zf_array *a, const uint8_t *buf, size_t n)
{
    size_t isz = a->itemsize;
    if (n < isz)
        return true;
    /* Periodic with period isz, and the first period is the fill value. */
    return memcmp(buf, a->meta->fill_value, isz) == 0 && memcmp(buf, buf + isz, n - isz) == 0;
}

/* ----- what a write changed -----
 * A dirty chunk's record (zf_chunk_record) says which of its elements were written through the
 * mount since it was last stored: every one (whole), or those whose bit is set. A chunk written
 * whole replaces what the store holds (the last writer's whole chunk wins). A chunk written in
 * part is stored only over the version its cached copy was read from (a conditional write);
 * when the store holds another version by then (another program rewrote the chunk), or that
 * version is not known (the chunk was stored since), the written elements are merged into the
 * chunk as the store holds it now and stored over that version (else read and merged again):
 * the elements zarrfs did not write, which its cached copy may hold stale, are never stored
 * from the cache. Elements, not bytes: writing part of an element counts as writing it. */

/* Elements of chunk `chunk` inside the array. */
static uint64_t elems_inside(const zf_array *a, uint64_t chunk)
{
    const zf_grid *g = &a->grid;
    uint64_t cc[ZF_MAX_DIMS], lo[ZF_MAX_DIMS], edge[ZF_MAX_DIMS], n = 1;
    zf_grid_chunk_coords(g, chunk, cc);
    zf_grid_chunk_box(g, cc, lo, edge);
    for (unsigned d = 0; d < g->ndim; d++)
        n *= lo[d] + edge[d] <= g->shape[d] ? edge[d] : g->shape[d] - lo[d];
    return n;
}

/* Set bits [first, first + count); the number that were not set before. */
static uint64_t set_bits(uint64_t *bits, uint64_t first, uint64_t count)
{
    uint64_t added = 0, end = first + count;
    while (first < end) {
        unsigned sh = (unsigned)(first % 64);
        uint64_t take = 64 - sh < end - first ? 64 - sh : end - first;
        uint64_t m = (take == 64 ? ~(uint64_t)0 : (((uint64_t)1 << take) - 1)) << sh;
        uint64_t *w = &bits[first / 64];
        added += (uint64_t)__builtin_popcountll(m & ~*w);
        *w |= m;
        first += take;
    }
    return added;
}

static bool bit_set(const uint64_t *bits, uint64_t i) { return bits[i / 64] >> (i % 64) & 1; }

/* Note elements [first, first + count) of the locked entry e (chunk `chunk`) as written; covered:
 * the whole chunk was. Errors: ZF_ERR_NOMEM. */
static zf_status note_written(zf_array *a, zf_cache_entry *e, uint64_t chunk, uint64_t first,
                              uint64_t count, bool covered)
{
    zf_chunk_record *w = zf_cache_entry_record(e);
    if (w && w->whole)
        return ZF_OK;
    if (!w || (!covered && !w->has_bits)) { /* a new record, keeping what the old one knew */
        uint64_t words = covered ? 0 : (zf_array_chunk_nbytes(a, chunk) / a->itemsize + 63) / 64;
        zf_chunk_record *nw = calloc(1, sizeof *nw + words * sizeof(uint64_t));
        if (!nw)
            return ZF_ERR_NOMEM;
        if (w)
            *nw = *w;
        nw->has_bits = !covered;
        nw->ninside = elems_inside(a, chunk);
        zf_cache_entry_set_record(e, nw);
        w = nw;
    }
    if (!covered)
        w->nset += set_bits(w->bits, first, count);
    w->whole = covered || w->nset == w->ninside;
    return ZF_OK;
}

/* In data (a chunk written in part as w says), every element not written becomes the one of
 * base (the chunk as stored, decoded), or the fill value where the store has none (base NULL). */
static void merge_unwritten(const zf_array *a, const zf_chunk_record *w, uint8_t *data,
                            size_t nbytes, const uint8_t *base)
{
    size_t isz = a->itemsize;
    uint64_t n = nbytes / isz;
    for (uint64_t i = 0; i < n;) {
        if (bit_set(w->bits, i)) {
            i++;
            continue;
        }
        uint64_t j = i + 1;
        while (j < n && !bit_set(w->bits, j))
            j++;
        if (base)
            memcpy(data + i * isz, base + i * isz, (j - i) * isz);
        else
            zf_array_fill_pattern(data + i * isz, 0, (j - i) * isz, a->meta->fill_value, isz);
        i = j;
    }
}

/* ----- the write ----- */

typedef struct write_ctx {
    zf_array *a;
    const uint8_t *buf;
    uint64_t begin, end;            /* bytes of the flat view */
    uint64_t full_begin, full_end;  /* elements written whole */
    bool behind;                    /* store the chunks this write completes right away */
    zf_err *err;
} write_ctx;

typedef struct load_ctx {
    zf_array *a;
    bool covered; /* the write replaces every element: no need to read the old chunk */
    const write_ctx *w;
} load_ctx;

/* Copy into dst (a whole decoded chunk) every element of chunk `chunk` from the write's buffer,
 * which holds them all (the chunk is covered). Line by line along the last dimension. */
static void gather_chunk(const zf_array *a, uint64_t chunk, const write_ctx *w, uint8_t *dst)
{
    const zf_grid *g = &a->grid;
    size_t isz = a->itemsize;
    if (g->ndim == 0) { /* one element, at byte 0: a covering write starts there */
        memcpy(dst, w->buf, isz);
        return;
    }
    uint64_t cc[ZF_MAX_DIMS], lo[ZF_MAX_DIMS], edge[ZF_MAX_DIMS], ext[ZF_MAX_DIMS],
        pos[ZF_MAX_DIMS] = {0};
    zf_grid_chunk_coords(g, chunk, cc);
    zf_grid_chunk_box(g, cc, lo, edge);
    unsigned last = g->ndim - 1;
    for (unsigned d = 0; d < g->ndim; d++)
        ext[d] = lo[d] + edge[d] <= g->shape[d] ? edge[d] : g->shape[d] - lo[d];
    for (;;) { /* pos: position inside the chunk, last coordinate 0 */
        uint64_t elem = 0, in = 0;
        for (unsigned d = 0; d < g->ndim; d++) {
            elem = elem * g->shape[d] + lo[d] + pos[d];
            in = in * edge[d] + pos[d];
        }
        memcpy(dst + in * isz, w->buf + (elem * isz - w->begin), ext[last] * isz);
        unsigned d = last;
        while (d-- > 0) {
            if (++pos[d] < ext[d])
                break;
            pos[d] = 0;
        }
        if (d == UINT_MAX || last == 0)
            return;
    }
}

static zf_status load_for_write(void *ctx, uint64_t chunk, void **data, size_t *size,
                                void **record, zf_err *err)
{
    load_ctx *l = ctx;
    if (!l->covered)
        return zf_array_load_chunk(l->a, chunk, data, size, record, err);
    /* Built whole before the cache shows it: readers never see part fill, part written. Every
     * element inside the array comes from the write; those of an edge chunk outside it are the
     * fill value, as zarr-python stores them. */
    size_t nbytes = zf_array_chunk_nbytes(l->a, chunk);
    uint8_t *p = fill_chunk(l->a, nbytes, elems_inside(l->a, chunk) < nbytes / l->a->itemsize);
    if (!p)
        return ZF_ERR_NOMEM;
    gather_chunk(l->a, chunk, l->w, p);
    *data = p;
    *size = nbytes;
    return ZF_OK;
}

/* True when elements [eb, ee) (C order) include every element of the chunk inside the array:
 * its first and last elements in C order are its corners. */
static bool chunk_covered(const zf_array *a, uint64_t chunk, uint64_t eb, uint64_t ee)
{
    if (eb >= ee)
        return false;
    const zf_grid *g = &a->grid;
    uint64_t cc[ZF_MAX_DIMS], org[ZF_MAX_DIMS], edge[ZF_MAX_DIMS], lo = 0, hi = 0;
    zf_grid_chunk_coords(g, chunk, cc);
    zf_grid_chunk_box(g, cc, org, edge);
    for (unsigned d = 0; d < g->ndim; d++) {
        uint64_t first = org[d];
        uint64_t last = first + edge[d] - 1;
        if (last >= g->shape[d])
            last = g->shape[d] - 1;
        lo = lo * g->shape[d] + first;
        hi = hi * g->shape[d] + last;
    }
    return lo >= eb && hi < ee;
}

/* The chunk entry a write puts elements into, pinned and locked: (a new chunk's) data in place. */
static zf_status lock_for_write(write_ctx *w, uint64_t chunk, zf_cache_entry **out,
                                bool *covered)
{
    zf_array *a = w->a;
    load_ctx l = {.a = a, .covered = chunk_covered(a, chunk, w->full_begin, w->full_end),
                  .w = w};
    zf_cache_entry *e;
    zf_status st = zf_cache_get(a->cache, a->id, chunk, load_for_write, &l, &e, w->err);
    if (st != ZF_OK)
        return st;
    zf_cache_entry_lock(e);
    if (!zf_cache_entry_wdata(e)) { /* absent from the store: start from the fill value */
        size_t nbytes = zf_array_chunk_nbytes(a, chunk);
        uint8_t *data = fill_chunk(a, nbytes, true);
        if (!data) {
            zf_cache_entry_unlock(e);
            zf_cache_release(a->cache, e);
            return ZF_ERR_NOMEM;
        }
        zf_cache_entry_set_data(a->cache, e, data, nbytes);
    }
    *out = e;
    *covered = l.covered;
    return ZF_OK;
}

/* Put the elements of one run into its chunk's locked entry e. */
static zf_status put_run(write_ctx *w, const zf_run *run, zf_cache_entry *e, bool covered)
{
    zf_array *a = w->a;
    size_t isz = a->itemsize;
    uint64_t rb;
    size_t n = zf_run_bytes(a, run, w->begin, w->end, &rb);
    uint64_t first = run->in_chunk + (rb / isz - run->elem); /* elements the bytes touch */
    zf_status st = note_written(a, e, run->chunk, first, (rb + n - 1) / isz - rb / isz + 1,
                                covered);
    if (st != ZF_OK)
        return st;
    uint8_t *data = zf_cache_entry_wdata(e);
    memcpy(data + run->in_chunk * isz + (rb - run->elem * isz), w->buf + (rb - w->begin), n);
    zf_cache_mark_dirty(a->cache, e, &a->owner);
    return ZF_OK;
}

static bool is_whole(zf_cache_entry *e)
{
    const zf_chunk_record *rec = zf_cache_entry_record(e);
    return rec && rec->whole;
}

/* Unlock and release entry e of a write; a chunk the write completed is stored behind it. */
static void write_done(write_ctx *w, zf_cache_entry *e, bool was_whole)
{
    if (w->behind && !was_whole && is_whole(e))
        zf_cache_write_behind(w->a->cache, e);
    zf_cache_entry_unlock(e);
    zf_cache_release(w->a->cache, e);
}

/* One run, its chunk locked just for it: writes of shards, and of more chunks than WRITE_HELD. */
static zf_status write_run(void *ctx, const zf_run *run)
{
    write_ctx *w = ctx;
    zf_cache_entry *e;
    bool covered;
    zf_status st = lock_for_write(w, run->chunk, &e, &covered);
    if (st != ZF_OK)
        return st;
    bool was_whole = is_whole(e);
    st = put_run(w, run, e, covered);
    write_done(w, e, was_whole);
    return st;
}

/* A write touching at most WRITE_HELD chunks holds them all from its first element to its last
 * (pinned, marked as being written: zf_cache_write_begin), so that no writeback (fsync, the
 * timer, a write-behind, memory pressure) stores a chunk holding part of it: writebacks lock
 * with zf_cache_entry_lock_settled. Its runs then go as any write's, one entry lock at a time.
 * Writes touching more chunks (tiny chunks, wide rows) go run by run, each run whole. */
#define WRITE_HELD 256

typedef struct held_chunk {
    uint64_t chunk;
    zf_cache_entry *e;
    bool covered, was_whole;
} held_chunk;

typedef struct held_write {
    write_ctx *w;
    held_chunk *c;
    size_t n, cap;
    size_t last; /* index in c of the last run's chunk */
} held_write;

static zf_status collect_chunk(void *ctx, const zf_run *run)
{
    held_write *hw = ctx;
    for (size_t i = hw->n; i-- > 0;) /* runs revisit recent chunks: search backwards */
        if (hw->c[i].chunk == run->chunk)
            return ZF_OK;
    if (hw->n == hw->cap)
        return ZF_ERR_TOO_LARGE; /* no room */
    hw->c[hw->n++].chunk = run->chunk;
    return ZF_OK;
}

static zf_status put_held_run(void *ctx, const zf_run *run)
{
    held_write *hw = ctx;
    size_t i = hw->last;
    if (hw->c[i].chunk != run->chunk)
        for (i = 0; i < hw->n && hw->c[i].chunk != run->chunk; i++)
            ;
    if (i == hw->n)
        return ZF_ERR_INVALID; /* not collected: cannot happen */
    hw->last = i;
    held_chunk *h = &hw->c[i];
    zf_cache_entry_lock(h->e);
    zf_status st = put_run(hw->w, run, h->e, h->covered);
    zf_cache_entry_unlock(h->e);
    return st;
}

/* The write w of elements [eb, ee), every chunk held for its whole length; ZF_ERR_TOO_LARGE
 * when it touches more than WRITE_HELD (nothing done). */
static zf_status write_held(write_ctx *w, uint64_t eb, uint64_t ee)
{
    zf_array *a = w->a;
    held_chunk buf[16]; /* most writes: no allocation */
    held_write hw = {.w = w, .c = buf, .n = 0, .cap = 16};
    zf_status st = zf_grid_runs(&a->grid, eb, ee, collect_chunk, &hw);
    if (st == ZF_ERR_TOO_LARGE) { /* again, with room for WRITE_HELD */
        if (!(hw.c = malloc(WRITE_HELD * sizeof *hw.c)))
            return ZF_ERR_NOMEM;
        hw.n = 0;
        hw.cap = WRITE_HELD;
        if ((st = zf_grid_runs(&a->grid, eb, ee, collect_chunk, &hw)) == ZF_ERR_TOO_LARGE) {
            free(hw.c);
            return st; /* run by run */
        }
    }
    size_t held = 0;
    for (; st == ZF_OK && held < hw.n; held++) {
        held_chunk *h = &hw.c[held];
        if ((st = lock_for_write(w, h->chunk, &h->e, &h->covered)) != ZF_OK)
            break;
        h->was_whole = is_whole(h->e);
        zf_cache_write_begin(a->cache, h->e);
        zf_cache_entry_unlock(h->e);
    }
    if (st == ZF_OK)
        st = zf_grid_runs(&a->grid, eb, ee, put_held_run, &hw);
    for (size_t i = 0; i < held; i++) {
        zf_cache_entry_lock(hw.c[i].e);
        zf_cache_write_end(a->cache, hw.c[i].e);
        write_done(w, hw.c[i].e, hw.c[i].was_whole);
    }
    if (hw.c != buf)
        free(hw.c);
    return st;
}

/* Keep dirty data within the cache: past half of it, the writer stores the oldest first; past
 * all of it (the store keeps failing), writes fail rather than grow without bound. */
static zf_status throttle(zf_array *a, zf_err *err)
{
    zf_cache_stats cs;
    zf_cache_get_stats(a->cache, &cs);
    size_t cap = zf_cache_capacity(a->cache);
    if (cs.dirty_bytes <= cap / 2)
        return ZF_OK;
    zf_err ferr = {""};
    zf_status st = zf_cache_flush(a->cache, ZF_CACHE_ALL, 0, 0, cs.dirty_bytes - cap / 4, &ferr);
    if (st == ZF_OK)
        return ZF_OK;
    zf_log_error("writing back written chunks failed: %s", ferr.msg);
    zf_cache_get_stats(a->cache, &cs);
    if (cs.dirty_bytes > cap) /* the flush's status: ENOSPC for a full store, EACCES for
                                 refused credentials, else EIO */
        return zf_fail(err, st == ZF_ERR_NO_SPACE || st == ZF_ERR_ACCESS ? st : ZF_ERR_IO,
                       "written data cannot be stored: %s", ferr.msg);
    return ZF_OK;
}

zf_status zf_array_write(zf_array *a, uint64_t offset, const void *buf, size_t len,
                         zf_err *err)
{
    if (!a->writable)
        return zf_fail(err, ZF_ERR_INVALID, "array not opened for writing");
    if (len == 0)
        return ZF_OK;
    if (offset > a->nbytes || len > a->nbytes - offset)
        return zf_fail(err, ZF_ERR_INVALID, "write past the end of the array");
    zf_status st = throttle(a, err);
    if (st != ZF_OK)
        return st;
    size_t isz = a->itemsize;
    uint64_t end = offset + len;
    /* Write-behind, as the kernel's writeback does behind a sequential writer: each chunk the
     * writer completes is stored while it goes on (encoding, the temporary file, its sync and
     * rename overlap the writes that follow), not all at the next fsync. Only behind a
     * sequential writer (within two write lengths of where the last write ended: the kernel's
     * requests may arrive slightly out of order), so that a program rewriting one chunk over and
     * over does not store it each time; not for shards (each inner chunk would rewrite the
     * whole shard). */
    uint64_t prev = atomic_exchange(&a->last_write_end, end);
    uint64_t dist = offset > prev ? offset - prev : prev - offset;
    write_ctx w = {.a = a, .buf = buf, .begin = offset, .end = end,
                   .full_begin = (offset + isz - 1) / isz, .full_end = end / isz,
                   .behind = a->nlevels == 0 && dist <= 2 * (uint64_t)len, .err = err};
    uint64_t eb = offset / isz, ee = (end + isz - 1) / isz;
    /* Sharded arrays run by run: a shard is stored from all its dirty inner chunks at once. */
    if (a->nlevels == 0 && (st = write_held(&w, eb, ee)) != ZF_ERR_TOO_LARGE)
        return st;
    return zf_grid_runs(&a->grid, eb, ee, write_run, &w);
}

zf_status zf_array_flush(zf_array *a, zf_err *err)
{
    if (!a->writable)
        return ZF_OK;
    return zf_cache_flush(a->cache, a->id, 0, 0, 0, err);
}

/* ----- writeback ----- */

/* Store a chunk (or shard) value, but not into an array directory removed behind zarrfs's back
 * (zf_store_cond.within): that is a failure (EIO), and the chunk stays dirty. With if_version,
 * only over version base of the value (NULL: only where there is none): ZF_ERR_CONFLICT else. */
static zf_status store_value(zf_array *a, const char *key, const uint8_t *data, size_t len,
                             bool if_version, const zf_store_version *base, zf_err *err)
{
    zf_store_cond c = {.within = a->prefix, .if_version = if_version, .base = base};
    zf_status st = zf_store_set_cond(a->store, key, data, len, &c, err);
    if (st == ZF_ERR_NOT_FOUND)
        st = zf_fail(err, ZF_ERR_IO, "%s/: the array's directory is gone from the store "
                     "(removed behind zarrfs's back?); its written chunks are kept in memory, "
                     "not stored", a->prefix);
    return st;
}

/* Store a whole chunk's decoded data at key; with if_version, only over version base of it (NULL:
 * only where there is none), else ZF_ERR_CONFLICT. */
static zf_status store_chunk(zf_array *a, const char *key, const zf_chunk_repr *dec,
                             const uint8_t *data, bool if_version, const zf_store_version *base,
                             zf_err *err)
{
    zf_err serr = {""};
    zf_status st;
    if (!a->write_empty_chunks && a->fill_defined && is_fill(a, data, dec->nbytes)) {
        if (!if_version)
            st = zf_store_erase(a->store, key, &serr);
        else /* none there: nothing to erase */
            st = base ? zf_store_erase_if(a->store, key, base, &serr) : ZF_OK;
    } else if (a->chain->n == 0) { /* stored as it is: no copy */
        st = store_value(a, key, data, dec->nbytes, if_version, base, &serr);
    } else {
        uint8_t *out;
        size_t out_len;
        uint64_t t0 = zf_array_now_ns();
        st = zf_chain_encode(a->chain, dec, data, 0, &out, &out_len, &serr);
        zf_array_count_encode(zf_array_now_ns() - t0, st == ZF_OK);
        if (st != ZF_OK)
            return zf_fail(err, st, "chunk %s: encoding: %s", key, serr.msg);
        st = store_value(a, key, out, out_len, if_version, base, &serr);
        free(out);
    }
    if (st != ZF_OK)
        return zf_fail(err, st, "%s", serr.msg[0] ? serr.msg : zf_status_str(st));
    return ZF_OK;
}

/* Store the chunk of entry e (locked), written in part as w says: merged into the chunk as the
 * store holds it now, stored only if that is still what the store holds (else again). */
static zf_status store_merged(zf_array *a, const char *key, const uint64_t *cc,
                              const zf_chunk_repr *dec, zf_cache_entry *e,
                              const zf_chunk_record *w, zf_err *err)
{
    uint8_t *data = zf_cache_entry_wdata(e);
    for (unsigned attempt = 0;; attempt++) {
        void *base = NULL;
        size_t size;
        zf_store_version ver;
        zf_status st = zf_array_read_stored_chunk(a, key, cc, &base, &size, &ver, err);
        if (st != ZF_OK && st != ZF_ERR_NOT_FOUND)
            return st;
        bool found = st == ZF_OK;
        merge_unwritten(a, w, data, dec->nbytes, base);
        zf_free_chunk(base, found ? size : 0);
        st = store_chunk(a, key, dec, data, true, found ? &ver : NULL, err);
        if (st != ZF_ERR_CONFLICT || attempt + 1 == MERGE_WRITE_ATTEMPTS)
            return st;
        zf_array_count_chunk_conflict();
        zf_log_debug("%s: changed by another writer, merging again", key);
        if (err)
            err->msg[0] = '\0';
        usleep(1000u << (attempt < 6 ? attempt : 6)); /* 1 ms, doubling up to 64 ms */
    }
}

static zf_status writeback_shard(zf_array *a, zf_cache_entry *e, zf_err *err);

static zf_status writeback(void *ctx, zf_cache_entry *e, zf_err *err)
{
    zf_array *a = ctx;
    if (a->nlevels)
        return writeback_shard(a, e, err);
    zf_cache_entry_lock_settled(a->cache, e); /* not in the middle of a write */
    zf_status st = ZF_OK;
    if (zf_cache_entry_is_dirty(e) && !zf_cache_entry_behind_stale(e)) {
        uint64_t cc[ZF_MAX_DIMS];
        char key[4096];
        zf_grid_chunk_coords(&a->grid, zf_cache_entry_chunk(e), cc);
        st = zf_array_stored_key(a, &a->grid, cc, key, sizeof key, err);
        zf_chunk_repr dec;
        zf_array_chunk_repr(a, cc, &dec);
        const zf_chunk_record *w = zf_cache_entry_record(e);
        bool whole = !w || w->whole;
        if (st == ZF_OK && !whole && w->stored_known) { /* over the version read, if still there */
            st = store_chunk(a, key, &dec, zf_cache_entry_wdata(e), true,
                             w->stored_absent ? NULL : &w->stored, err);
            if (st == ZF_ERR_CONFLICT) {
                zf_array_count_chunk_conflict();
                if (err)
                    err->msg[0] = '\0';
            }
        }
        if (st == ZF_OK && whole)
            st = store_chunk(a, key, &dec, zf_cache_entry_wdata(e), false, NULL, err);
        else if ((st == ZF_OK && !w->stored_known) || st == ZF_ERR_CONFLICT)
            st = store_merged(a, key, cc, &dec, e, w, err);
        if (st == ZF_OK)
            zf_cache_mark_clean(a->cache, e);
    }
    zf_cache_entry_unlock(e);
    return st;
}

/* Merge inner chunk i of a shard (its entry e, locked and dirty) into the inner chunk as the
 * stored shard holds it (old, with its decoded index; NULL: no shard stored) when it was written
 * in part. */
static zf_status merge_inner(zf_array *a, const char *key, zf_cache_entry *e,
                             const zf_bytes *old, const uint64_t *old_index, size_t i,
                             zf_err *err)
{
    const zf_chunk_record *w = zf_cache_entry_record(e);
    if (!w || w->whole)
        return ZF_OK;
    uint8_t *base = NULL;
    if (old && old_index[2 * i] != UINT64_MAX) {
        zf_err derr = {""};
        if (!(base = malloc(a->chunk_nbytes ? a->chunk_nbytes : 1)))
            return ZF_ERR_NOMEM;
        zf_status st = zf_chain_decode(a->chain, &a->decoded, old->data + old_index[2 * i],
                                       (size_t)old_index[2 * i + 1], base, &derr);
        if (st != ZF_OK) {
            free(base);
            return zf_fail(err, st == ZF_ERR_NOMEM ? st : ZF_ERR_CORRUPT,
                           "shard %s: inner chunk %zu: %s", key, i, derr.msg);
        }
    }
    merge_unwritten(a, w, zf_cache_entry_wdata(e), a->chunk_nbytes, base);
    free(base);
    return ZF_OK;
}

/* Rewrite the shard holding dirty inner chunk e: its dirty inner chunks encoded anew, the others
 * copied from the stored shard (read only when some inner chunk was not written). */
static zf_status writeback_shard(zf_array *a, zf_cache_entry *e, zf_err *err)
{
    shard_level *l = &a->levels[0];
    unsigned nd = a->grid.ndim;
    uint64_t cc[ZF_MAX_DIMS], sc[ZF_MAX_DIMS], first[ZF_MAX_DIMS]; /* first: its inner chunk */
    zf_grid_chunk_coords(&a->grid, zf_cache_entry_chunk(e), cc);
    for (unsigned d = 0; d < nd; d++) {
        uint64_t in = l->info.chunk_shape[d], lo, edge;
        if (l->grid.rect) { /* shards of differing shapes */
            zf_grid_chunk_along(&l->grid, d, cc[d] * in, &sc[d], &lo, &edge);
            first[d] = lo / in;
        } else {
            sc[d] = cc[d] / l->info.chunks_per_shard[d];
            first[d] = sc[d] * l->info.chunks_per_shard[d];
        }
    }
    const zf_codec *codec;
    const zf_sharding *info;
    zf_array_level_shard(l, sc, &codec, &info);
    char key[4096];
    zf_status st = zf_array_stored_key(a, &a->grid, cc, key, sizeof key, err);
    if (st != ZF_OK)
        return st;

    size_t n = (size_t)info->nchunks;
    const uint8_t **chunks = calloc(n ? n : 1, sizeof *chunks);
    zf_cache_entry **held = calloc(n ? n : 1, sizeof *held);
    if (!chunks || !held) {
        free(chunks);
        free(held);
        return ZF_ERR_NOMEM;
    }
    pthread_mutex_lock(&a->shard_mu);
    /* Lock the shard's dirty inner chunks, in ascending chunk order (C order inside one shard is
     * ascending in the array's grid too). */
    size_t ndirty = 0, ninside = 0, nmerge = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t ic[ZF_MAX_DIMS], rem = i;
        bool inside = true;
        for (unsigned d = nd; d-- > 0;) {
            uint64_t cps = info->chunks_per_shard[d];
            ic[d] = first[d] + rem % cps;
            rem /= cps;
            if (ic[d] >= a->grid.grid[d])
                inside = false;
        }
        if (!inside)
            continue;
        ninside++;
        zf_cache_entry *ie;
        if (zf_cache_peek(a->cache, a->id, zf_grid_chunk_index(&a->grid, ic), &ie) != ZF_OK)
            continue;
        zf_cache_entry_lock(ie);
        if (!zf_cache_entry_is_dirty(ie)) {
            zf_cache_entry_unlock(ie);
            zf_cache_release(a->cache, ie);
            continue;
        }
        held[i] = ie;
        chunks[i] = zf_cache_entry_wdata(ie);
        ndirty++;
        const zf_chunk_record *w = zf_cache_entry_record(ie);
        nmerge += w && !w->whole;
    }

    zf_bytes old = {NULL, 0};
    uint64_t *old_index = NULL;
    zf_err serr = {""};
    /* Some inner chunks not written, or written in part: read the stored shard for them, then
     * store the merge only if the shard is still the one read (zf_store_cond.if_version), so
     * that another writer's inner chunks or elements written meanwhile (a second mount of the
     * store, another program) are merged, not lost. */
    bool partial = ndirty > 0 && (ndirty < ninside || nmerge > 0);
    for (unsigned attempt = 0; st == ZF_OK && ndirty > 0; attempt++) {
        zf_store_version ver;
        bool found = false;
        if (partial) {
            st = zf_store_read_versioned(a->store, key, ZF_READ_ALL, 0, 0, &old, &ver, &serr);
            found = st == ZF_OK;
            if (st == ZF_ERR_NOT_FOUND) {
                st = ZF_OK;
            } else if (st != ZF_OK) {
                zf_fail(err, st, "%s", serr.msg[0] ? serr.msg : zf_status_str(st));
            } else if (old.len < info->index_nbytes) {
                st = zf_fail(err, ZF_ERR_CORRUPT, "%s: shard shorter than its index", key);
            } else if (!(old_index = malloc(2 * sizeof(uint64_t) * (n ? n : 1)))) {
                st = ZF_ERR_NOMEM;
            } else {
                const uint8_t *ib =
                    info->index_at_end ? old.data + old.len - info->index_nbytes : old.data;
                st = zf_sharding_decode_index(codec, ib, info->index_nbytes, old.len,
                                              old_index, &serr);
                if (st != ZF_OK)
                    zf_fail(err, ZF_ERR_CORRUPT, "%s: %s", key, serr.msg);
            }
            for (size_t i = 0; st == ZF_OK && nmerge > 0 && i < n; i++)
                if (held[i])
                    st = merge_inner(a, key, held[i], found ? &old : NULL, old_index, i, err);
            if (st != ZF_OK)
                break;
        }
        uint8_t *out = NULL;
        size_t out_len = 0;
        bool empty = false;
        unsigned flags = a->write_empty_chunks ? ZF_ENCODE_WRITE_EMPTY : 0;
        uint64_t t0 = zf_array_now_ns();
        st = zf_sharding_encode_shard(codec, chunks, old_index ? old.data : NULL, old.len,
                                      old_index, flags, &out, &out_len, &empty, &serr);
        zf_array_count_encode(zf_array_now_ns() - t0, st == ZF_OK);
        bool erase = empty && a->fill_defined && !a->write_empty_chunks;
        /* The new shard and its cached index change together for this daemon's loaders of inner
         * chunks (zf_array_load_chunk): none reads new bytes at offsets of the old index. */
        pthread_rwlock_wrlock(&a->shard_rw);
        if (st != ZF_OK) {
            zf_fail(err, st, "shard %s: encoding: %s", key, serr.msg);
        } else if (erase && partial) { /* only if no inner chunk was written meanwhile */
            st = found ? zf_store_erase_if(a->store, key, &ver, &serr) : ZF_OK;
        } else if (erase) {
            st = zf_store_erase(a->store, key, &serr);
        } else {
            st = store_value(a, key, out, out_len, partial, found ? &ver : NULL, &serr);
        }
        if (st == ZF_OK) /* its cached index is stale now */
            zf_cache_drop(a->cache, l->cache_id, zf_grid_chunk_index(&l->grid, sc));
        pthread_rwlock_unlock(&a->shard_rw);
        free(out);
        zf_bytes_free(&old);
        free(old_index);
        old_index = NULL;
        if (st == ZF_ERR_CONFLICT && attempt + 1 < MERGE_WRITE_ATTEMPTS) {
            zf_array_count_shard_conflict();
            zf_log_debug("%s: changed by another writer, merging again", key);
            st = ZF_OK;
            usleep(1000u << (attempt < 6 ? attempt : 6)); /* 1 ms, doubling up to 64 ms */
            continue;
        }
        if (st != ZF_OK && !(err && err->msg[0]))
            zf_fail(err, st, "%s", serr.msg[0] ? serr.msg : zf_status_str(st));
        break;
    }
    for (size_t i = 0; i < n; i++) {
        if (!held[i])
            continue;
        if (st == ZF_OK)
            zf_cache_mark_clean(a->cache, held[i]);
        zf_cache_entry_unlock(held[i]);
        zf_cache_release(a->cache, held[i]);
    }
    pthread_mutex_unlock(&a->shard_mu);
    zf_bytes_free(&old);
    free(old_index);
    free(chunks);
    free(held);
    return st;
}

/* ----- shrinking ----- */

zf_status zf_array_erase_chunk_rows(zf_array *a, uint64_t first_row, zf_err *err)
{
    const zf_array_meta *m = a->meta;
    if (m->ndim == 0)
        return ZF_OK;
    zf_grid g; /* the stored chunks (shards when sharded) */
    zf_grid_init_meta(&g, m);
    uint64_t per_row = zf_grid_nchunks(&g) / (g.grid[0] ? g.grid[0] : 1);
    zf_status first = ZF_OK;
    for (uint64_t r = first_row; r < g.grid[0]; r++)
        for (uint64_t i = 0; i < per_row; i++) {
            uint64_t cc[ZF_MAX_DIMS];
            zf_grid_chunk_coords(&g, r * per_row + i, cc);
            char key[4096];
            zf_err serr = {""};
            zf_status st = zf_array_meta_chunk_key(m, a->prefix, cc, key, sizeof key);
            if (st == ZF_OK)
                st = zf_store_erase(a->store, key, &serr);
            if (st != ZF_OK && first == ZF_OK)
                first = zf_fail(err, st, "%s", serr.msg[0] ? serr.msg : zf_status_str(st));
        }
    return first;
}
