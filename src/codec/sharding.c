/* sharding.c — the sharding_indexed codec (array -> bytes), v3 codecs "Sharding codec".
 *
 * A shard (the decoded array, of the outer chunk's shape) is split into inner chunks of
 * `chunk_shape` ("Configuration parameters": same number of dimensions, dividing the shard shape
 * evenly), each encoded with the inner `codecs` and stored anywhere in the shard's bytes, plus an
 * index ("Binary shard format"): an array of shape chunks_per_shard + [2] of uint64
 * (offset, nbytes) pairs in C order, encoded with `index_codecs` (which "MUST NOT" include codecs
 * of variable encoded size, so the index has a fixed byte size) and stored at the start or the
 * end of the shard (`index_location`, default "end"). "Empty inner chunks are denoted by setting
 * both offset and nbytes to 2^64 - 1" and read as the fill value.
 *
 * The index is never trusted: zf_sharding_decode_index refuses entries that are half empty,
 * overflow, end past the shard, overlap the index or overlap each other ("unused space between
 * them is allowed", overlap is not: it would mean a writer's bug or a forged index).
 *
 * Decoding a whole shard (the codec's decode) reads the index, then decodes every inner chunk into
 * its place in the shard (C order); the array layer may instead read the index and single inner
 * chunks by byte range (zf_codec_sharding describes what it needs).
 *
 * Encoding (the codec's encode, for a whole decoded shard; zf_sharding_encode_shard, for a shard
 * rebuilt from new inner chunks and stored ones of the old shard) is described at "encoding a
 * shard" below. */
#include <stdio.h>
#include <string.h>

#include "codec_impl.h"

/* Inner chunks per shard at most: the index then takes 256 MiB (decoded), which is already far
 * beyond any sensible layout (a shard of 2^31 bytes in inner chunks of 128 bytes). */
#define MAX_INNER_CHUNKS ((uint64_t)1 << 24)
#define EMPTY UINT64_MAX

typedef struct sharding_codec {
    zf_codec base;
    unsigned ndim;
    uint64_t shard_shape[ZF_MAX_DIMS];
    uint64_t chunk_shape[ZF_MAX_DIMS];
    uint64_t cps[ZF_MAX_DIMS]; /* chunks per shard */
    uint64_t nchunks;
    size_t shard_nbytes;
    zf_chunk_repr inner_repr;
    zf_codec_chain inner;
    zf_chunk_repr index_repr;
    zf_codec_chain index;
    size_t index_nbytes;
    bool index_at_end;
    uint8_t *fill; /* inner_repr.dtype.itemsize bytes */
    bool borrowed; /* zf_sharding_reshaped: inner, index and fill belong to another codec */
} sharding_codec;

static const zf_codec_ops sharding_ops;

/* "(i, j, ...)": coordinates of inner chunk k in the chunks-per-shard grid. */
static const char *coords(const sharding_codec *s, uint64_t k, char *buf, size_t n)
{
    uint64_t c[ZF_MAX_DIMS];
    for (unsigned d = s->ndim; d-- > 0;) {
        c[d] = s->cps[d] ? k % s->cps[d] : 0;
        k = s->cps[d] ? k / s->cps[d] : 0;
    }
    size_t len = (size_t)snprintf(buf, n, "(");
    for (unsigned d = 0; d < s->ndim && len < n; d++)
        len += (size_t)snprintf(buf + len, n - len, "%s%llu", d ? ", " : "",
                                (unsigned long long)c[d]);
    if (len < n)
        snprintf(buf + len, n - len, ")");
    return buf;
}

/* --- the index --- */

typedef struct range {
    uint64_t off, end, k;
} range;

static int range_cmp(const void *a, const void *b)
{
    const range *x = a, *y = b;
    if (x->off != y->off)
        return x->off < y->off ? -1 : 1;
    return x->k < y->k ? -1 : x->k > y->k;
}

static zf_status overlap(const sharding_codec *s, const range *a, const range *b, zf_err *err)
{
    char ca[256], cb[256];
    return zf_fail(err, ZF_ERR_CORRUPT,
                   "sharding_indexed: inner chunks %s and %s overlap (bytes [%llu, %llu) and "
                   "[%llu, %llu))",
                   coords(s, a->k, ca, sizeof ca), coords(s, b->k, cb, sizeof cb),
                   (unsigned long long)a->off, (unsigned long long)a->end,
                   (unsigned long long)b->off, (unsigned long long)b->end);
}

/* Overlaps among the non-empty ranges when the index is not in offset order. */
static zf_status check_overlaps_sorted(const sharding_codec *s, const uint64_t *pairs,
                                       zf_err *err)
{
    size_t n = 0;
    for (uint64_t k = 0; k < s->nchunks; k++)
        if (pairs[2 * k] != EMPTY && pairs[2 * k + 1] != 0)
            n++;
    range *r = malloc((n ? n : 1) * sizeof *r);
    if (!r)
        return ZF_ERR_NOMEM;
    n = 0;
    for (uint64_t k = 0; k < s->nchunks; k++)
        if (pairs[2 * k] != EMPTY && pairs[2 * k + 1] != 0)
            r[n++] = (range){pairs[2 * k], pairs[2 * k] + pairs[2 * k + 1], k};
    qsort(r, n, sizeof *r, range_cmp);
    zf_status st = ZF_OK;
    size_t best = 0; /* the range reaching furthest so far */
    for (size_t i = 1; i < n && st == ZF_OK; i++) {
        if (r[i].off < r[best].end)
            st = overlap(s, &r[best], &r[i], err);
        else if (r[i].end > r[best].end)
            best = i;
    }
    free(r);
    return st;
}

zf_status zf_sharding_decode_index(const zf_codec *c, const uint8_t *in, size_t in_len,
                                   uint64_t shard_len, uint64_t *out, zf_err *err)
{
    if (!c || c->ops != &sharding_ops)
        return zf_fail(err, ZF_ERR_INVALID, "not a sharding_indexed codec");
    const sharding_codec *s = (const sharding_codec *)c;
    if (shard_len < s->index_nbytes)
        return zf_fail(err, ZF_ERR_CORRUPT,
                       "sharding_indexed: shard of %llu bytes is shorter than its index (%zu "
                       "bytes)",
                       (unsigned long long)shard_len, s->index_nbytes);
    if (in_len != s->index_nbytes)
        return zf_fail(err, ZF_ERR_CORRUPT, "sharding_indexed: index of %zu bytes, expected %zu",
                       in_len, s->index_nbytes);
    zf_status st = zf_chain_decode(&s->index, &s->index_repr, in, in_len, (uint8_t *)out, err);
    if (st != ZF_OK) {
        zf_err_prefix(err, "sharding_indexed: index");
        return st == ZF_ERR_INVALID ? ZF_ERR_CORRUPT : st;
    }
    uint64_t n = 2 * s->nchunks;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    for (uint64_t i = 0; i < n; i++)
        out[i] = __builtin_bswap64(out[i]); /* the index array is <u8 */
#else
    (void)n;
#endif
    /* The bytes inner chunks may occupy: all but the index. */
    uint64_t lo = s->index_at_end ? 0 : s->index_nbytes;
    uint64_t hi = s->index_at_end ? shard_len - s->index_nbytes : shard_len;
    bool in_order = true;
    range far = {0, 0, 0}; /* in offset order so far: the range reaching furthest */
    uint64_t last_off = 0;
    char cs[256];
    for (uint64_t k = 0; k < s->nchunks; k++) {
        uint64_t off = out[2 * k], nb = out[2 * k + 1];
        if (off == EMPTY && nb == EMPTY)
            continue;
        if (off == EMPTY || nb == EMPTY)
            return zf_fail(err, ZF_ERR_CORRUPT,
                           "sharding_indexed: inner chunk %s: half-empty index entry (offset "
                           "%llu, %llu bytes)",
                           coords(s, k, cs, sizeof cs), (unsigned long long)off,
                           (unsigned long long)nb);
        if (nb > UINT64_MAX - off)
            return zf_fail(err, ZF_ERR_CORRUPT,
                           "sharding_indexed: inner chunk %s: offset %llu + %llu bytes overflows",
                           coords(s, k, cs, sizeof cs), (unsigned long long)off,
                           (unsigned long long)nb);
        uint64_t end = off + nb;
        if (end > shard_len)
            return zf_fail(err, ZF_ERR_CORRUPT,
                           "sharding_indexed: inner chunk %s: bytes [%llu, %llu) end past the "
                           "shard's %llu bytes",
                           coords(s, k, cs, sizeof cs), (unsigned long long)off,
                           (unsigned long long)end, (unsigned long long)shard_len);
        if (nb == 0)
            continue; /* occupies nothing */
        if (off < lo || end > hi)
            return zf_fail(err, ZF_ERR_CORRUPT,
                           "sharding_indexed: inner chunk %s: bytes [%llu, %llu) overlap the "
                           "shard index (bytes [%llu, %llu))",
                           coords(s, k, cs, sizeof cs), (unsigned long long)off,
                           (unsigned long long)end,
                           (unsigned long long)(s->index_at_end ? hi : 0),
                           (unsigned long long)(s->index_at_end ? shard_len : lo));
        if (!in_order)
            continue;
        range r = {off, end, k};
        if (far.end > 0 && off < last_off) {
            in_order = false; /* checked below, sorted */
        } else if (far.end > 0 && off < far.end) {
            return overlap(s, &far, &r, err);
        } else if (end > far.end) {
            far = r;
        }
        last_off = off;
    }
    return in_order ? ZF_OK : check_overlaps_sorted(s, out, err);
}

bool zf_codec_sharding(const zf_codec *c, zf_sharding *out)
{
    if (!c || c->ops != &sharding_ops)
        return false;
    const sharding_codec *s = (const sharding_codec *)c;
    memset(out, 0, sizeof *out);
    out->ndim = s->ndim;
    memcpy(out->chunk_shape, s->chunk_shape, s->ndim * sizeof s->chunk_shape[0]);
    memcpy(out->chunks_per_shard, s->cps, s->ndim * sizeof s->cps[0]);
    out->nchunks = s->nchunks;
    out->codecs = &s->inner;
    out->inner = &s->inner_repr;
    out->index_at_end = s->index_at_end;
    out->index_nbytes = s->index_nbytes;
    return true;
}

/* --- decoding a whole shard --- */

/* len bytes of the fill value pattern. */
static void fill_pattern(uint8_t *dst, size_t len, const uint8_t *fill, size_t itemsize)
{
    if (len == 0 || itemsize == 0)
        return;
    size_t done = itemsize < len ? itemsize : len;
    memcpy(dst, fill, done);
    while (done < len) {
        size_t n = done < len - done ? done : len - done;
        memcpy(dst + done, dst, n);
        done += n;
    }
}

/* The innermost dimension from which inner chunks span whole rows of the shard: dimensions after
 * it are full, so a run of chunk elements from there on is contiguous in the shard. */
static unsigned run_dim(const sharding_codec *s)
{
    unsigned k = s->ndim ? s->ndim - 1 : 0;
    while (k > 0 && s->chunk_shape[k] == s->shard_shape[k])
        k--;
    return k;
}

/* Copy inner chunk k between its own C-order buffer and its place in the shard (C order):
 * from the chunk into the shard (to_shard) or from the shard into the chunk. */
static void chunk_copy(const sharding_codec *s, uint64_t k, const uint8_t *from, uint8_t *to,
                       bool to_shard)
{
    unsigned nd = s->ndim, rd = run_dim(s);
    size_t is = s->inner_repr.dtype.itemsize;
    size_t stride[ZF_MAX_DIMS], coord[ZF_MAX_DIMS], idx[ZF_MAX_DIMS] = {0};
    size_t st = 1;
    for (unsigned d = nd; d-- > 0;) {
        stride[d] = st;
        st *= (size_t)s->shard_shape[d];
        coord[d] = (size_t)(k % s->cps[d]);
        k /= s->cps[d];
    }
    size_t base = 0, run = 1;
    for (unsigned d = 0; d < nd; d++)
        base += coord[d] * (size_t)s->chunk_shape[d] * stride[d];
    for (unsigned d = rd; d < nd; d++)
        run *= (size_t)s->chunk_shape[d];
    size_t off = base, pos = 0, run_bytes = run * is;
    for (;;) {
        if (to_shard)
            memcpy(to + off * is, from + pos, run_bytes);
        else
            memcpy(to + pos, from + off * is, run_bytes);
        pos += run_bytes;
        unsigned d = rd;
        for (;;) {
            if (d == 0)
                return;
            d--;
            if (++idx[d] < s->chunk_shape[d]) {
                off += stride[d];
                break;
            }
            off -= stride[d] * (idx[d] - 1);
            idx[d] = 0;
        }
    }
}

/* Copy decoded inner chunk k (C order, src) into its place in the shard (out). */
static void scatter(const sharding_codec *s, uint64_t k, const uint8_t *src, uint8_t *out)
{
    chunk_copy(s, k, src, out, true);
}

/* Copy inner chunk k out of the decoded shard (in) into its own C-order buffer (dst). */
static void gather(const sharding_codec *s, uint64_t k, const uint8_t *in, uint8_t *dst)
{
    chunk_copy(s, k, in, dst, false);
}

static zf_status sharding_decode(const zf_codec *c, const zf_chunk_repr *decoded,
                                 const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len,
                                 zf_err *err)
{
    (void)decoded;
    const sharding_codec *s = (const sharding_codec *)c;
    if (out_len != s->shard_nbytes)
        return zf_fail(err, ZF_ERR_INVALID,
                       "sharding_indexed: %zu bytes asked for, the shard holds %zu", out_len,
                       s->shard_nbytes);
    if (in_len < s->index_nbytes)
        return zf_fail(err, ZF_ERR_CORRUPT,
                       "sharding_indexed: shard of %zu bytes is shorter than its index (%zu "
                       "bytes)",
                       in_len, s->index_nbytes);
    size_t inner_len = s->inner_repr.nbytes;
    if (s->nchunks == 0 || out_len == 0)
        return ZF_OK; /* nothing to place: the index is not even read */
    uint64_t *pairs = malloc((size_t)s->nchunks * 2 * sizeof *pairs);
    if (!pairs)
        return ZF_ERR_NOMEM;
    const uint8_t *ix = s->index_at_end ? in + in_len - s->index_nbytes : in;
    zf_status st = zf_sharding_decode_index(c, ix, s->index_nbytes, in_len, pairs, err);
    /* Inner chunks are contiguous in the shard when only the first dimension is split. */
    bool contiguous = run_dim(s) == 0;
    uint8_t *scratch = NULL, *fill = NULL;
    for (uint64_t k = 0; k < s->nchunks && st == ZF_OK; k++) {
        uint64_t off = pairs[2 * k], nb = pairs[2 * k + 1];
        uint8_t *dst = out + (size_t)k * inner_len;
        if (off == EMPTY) {
            if (contiguous) {
                fill_pattern(dst, inner_len, s->fill, s->inner_repr.dtype.itemsize);
                continue;
            }
            if (!fill) {
                if (!(fill = malloc(inner_len))) {
                    st = ZF_ERR_NOMEM;
                    break;
                }
                fill_pattern(fill, inner_len, s->fill, s->inner_repr.dtype.itemsize);
            }
            scatter(s, k, fill, out);
            continue;
        }
        if (!contiguous && !scratch && !(scratch = malloc(inner_len))) {
            st = ZF_ERR_NOMEM;
            break;
        }
        uint8_t *target = contiguous ? dst : scratch;
        st = zf_chain_decode(&s->inner, &s->inner_repr, in + off, (size_t)nb, target, err);
        if (st != ZF_OK) {
            char cs[256];
            zf_err_prefix(err, "sharding_indexed: inner chunk %s", coords(s, k, cs, sizeof cs));
            break;
        }
        if (!contiguous)
            scatter(s, k, scratch, out);
    }
    free(scratch);
    free(fill);
    free(pairs);
    return st;
}

static zf_status sharding_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                                  zf_chunk_repr *encoded, zf_err *err)
{
    const sharding_codec *s = (const sharding_codec *)c;
    bool same = decoded->ndim == s->ndim && decoded->nbytes == s->shard_nbytes &&
                decoded->dtype.itemsize == s->inner_repr.dtype.itemsize;
    for (unsigned d = 0; same && d < s->ndim; d++)
        same = decoded->shape[d] == s->shard_shape[d];
    if (!same)
        return zf_fail(err, ZF_ERR_INVALID,
                       "sharding_indexed: built for another shard shape or data type");
    zf_repr_bytes(encoded, ZF_SIZE_UNKNOWN);
    return ZF_OK;
}

/* --- encoding a shard ---
 *
 * The shard is built in one growable buffer: room for the index first (index "start", whose
 * size index_codecs fix in advance, so offsets are final as chunks are appended), then the
 * encoded inner chunks back to back in C order of the chunks-per-shard grid, then (index "end")
 * the index. The spec leaves the order of inner chunks to the writer ("All possible write orders
 * are valid"). An inner chunk is "empty" (left out, index entry (2^64 - 1, 2^64 - 1)) when each
 * of its elements has exactly the fill value's bytes: a byte comparison, so -0.0 or a NaN of
 * another payload than the fill value's is kept rather than read back as the fill value. */

typedef struct builder {
    uint8_t *p;
    size_t len, cap;
} builder;

static zf_status builder_reserve(builder *b, size_t n)
{
    if (n > SIZE_MAX - b->len)
        return ZF_ERR_NOMEM;
    size_t need = b->len + n;
    if (need <= b->cap)
        return ZF_OK;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p)
        return ZF_ERR_NOMEM;
    b->p = p;
    b->cap = cap;
    return ZF_OK;
}

static zf_status builder_put(builder *b, const uint8_t *src, size_t n)
{
    zf_status st = builder_reserve(b, n);
    if (st != ZF_OK)
        return st;
    if (n)
        memcpy(b->p + b->len, src, n);
    b->len += n;
    return ZF_OK;
}

/* len bytes (a whole number of items) all equal to the fill value's item. */
static bool is_fill(const uint8_t *p, size_t len, const uint8_t *fill, size_t itemsize)
{
    if (len == 0 || itemsize == 0)
        return true;
    /* The first item is the fill value and every byte equals the one an item later. */
    return memcmp(p, fill, itemsize) == 0 && memcmp(p, p + itemsize, len - itemsize) == 0;
}

/* Encode inner chunk k from its decoded bytes and append it (or leave it out when empty). */
static zf_status put_new_chunk(const sharding_codec *s, builder *b, uint64_t k,
                               const uint8_t *chunk, unsigned flags, uint64_t *pair, zf_err *err)
{
    pair[0] = pair[1] = EMPTY;
    if (!(flags & ZF_ENCODE_WRITE_EMPTY) &&
        is_fill(chunk, s->inner_repr.nbytes, s->fill, s->inner_repr.dtype.itemsize))
        return ZF_OK;
    uint8_t *enc = NULL;
    size_t enc_len = 0;
    zf_status st = zf_chain_encode(&s->inner, &s->inner_repr, chunk, flags, &enc, &enc_len, err);
    if (st != ZF_OK) {
        char cs[256];
        zf_err_prefix(err, "sharding_indexed: inner chunk %s", coords(s, k, cs, sizeof cs));
        return st;
    }
    uint64_t off = b->len;
    st = builder_put(b, enc, enc_len);
    free(enc);
    if (st == ZF_OK) {
        pair[0] = off;
        pair[1] = enc_len;
    }
    return st;
}

/* Copy inner chunk k's stored bytes (old_pair, into old_shard of old_len) over unchanged. */
static zf_status put_old_chunk(const sharding_codec *s, builder *b, uint64_t k,
                               const uint8_t *old_shard, uint64_t old_len,
                               const uint64_t *old_pair, uint64_t *pair, zf_err *err)
{
    pair[0] = pair[1] = EMPTY;
    uint64_t off = old_pair[0], nb = old_pair[1];
    if (off == EMPTY && nb == EMPTY)
        return ZF_OK;
    char cs[256];
    if (off == EMPTY || nb == EMPTY || nb > old_len || off > old_len - nb)
        return zf_fail(err, ZF_ERR_CORRUPT,
                       "sharding_indexed: inner chunk %s: old index entry (offset %llu, %llu "
                       "bytes) lies outside the old shard's %llu bytes",
                       coords(s, k, cs, sizeof cs), (unsigned long long)off,
                       (unsigned long long)nb, (unsigned long long)old_len);
    uint64_t new_off = b->len;
    zf_status st = builder_put(b, old_shard + off, (size_t)nb);
    if (st == ZF_OK) {
        pair[0] = new_off;
        pair[1] = nb;
    }
    return st;
}

/* Build a shard. Inner chunk k comes from the decoded shard `shard` (when non-NULL) or else
 * from chunks[k] (new decoded bytes) or, chunks[k] NULL, from old_shard per old_index. */
static zf_status build_shard(const sharding_codec *s, const uint8_t *shard,
                             const uint8_t *const *chunks, const uint8_t *old_shard,
                             uint64_t old_len, const uint64_t *old_index, unsigned flags,
                             uint8_t **out, size_t *out_len, bool *empty, zf_err *err)
{
    size_t inner_len = s->inner_repr.nbytes;
    size_t npairs = (size_t)s->nchunks * 2;
    builder b = {NULL, 0, 0};
    uint8_t *scratch = NULL, *ix = NULL;
    size_t ix_len = 0;
    uint64_t *pairs = malloc(npairs ? npairs * sizeof *pairs : 1);
    zf_status st = pairs ? ZF_OK : ZF_ERR_NOMEM;
    if (st == ZF_OK && !s->index_at_end) { /* room for the index */
        if ((st = builder_reserve(&b, s->index_nbytes)) == ZF_OK)
            b.len = s->index_nbytes;
    }
    bool contiguous = run_dim(s) == 0, all_empty = true;
    for (uint64_t k = 0; k < s->nchunks && st == ZF_OK; k++) {
        uint64_t *pair = &pairs[2 * k];
        if (shard) {
            const uint8_t *chunk = shard + (size_t)k * inner_len;
            if (!contiguous) {
                if (!scratch && !(scratch = malloc(inner_len ? inner_len : 1))) {
                    st = ZF_ERR_NOMEM;
                    break;
                }
                gather(s, k, shard, scratch);
                chunk = scratch;
            }
            st = put_new_chunk(s, &b, k, chunk, flags, pair, err);
        } else if (chunks[k]) {
            st = put_new_chunk(s, &b, k, chunks[k], flags, pair, err);
        } else if (old_shard) {
            st = put_old_chunk(s, &b, k, old_shard, old_len, &old_index[2 * k], pair, err);
        } else {
            pair[0] = pair[1] = EMPTY;
        }
        if (pair[0] != EMPTY)
            all_empty = false;
    }
    /* The index, as <u8 (the representation the index codecs encode). */
    if (st == ZF_OK) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        for (size_t i = 0; i < npairs; i++)
            pairs[i] = __builtin_bswap64(pairs[i]);
#endif
        st = zf_chain_encode(&s->index, &s->index_repr, (const uint8_t *)pairs, flags, &ix,
                             &ix_len, err);
        if (st != ZF_OK)
            zf_err_prefix(err, "sharding_indexed: index");
        else if (ix_len != s->index_nbytes)
            st = zf_fail(err, ZF_ERR_INVALID,
                         "sharding_indexed: index encoded to %zu bytes, expected %zu", ix_len,
                         s->index_nbytes);
    }
    if (st == ZF_OK) {
        if (s->index_at_end)
            st = builder_put(&b, ix, ix_len);
        else if (ix_len)
            memcpy(b.p, ix, ix_len);
    }
    free(ix);
    free(scratch);
    free(pairs);
    if (st != ZF_OK) {
        free(b.p);
        return st;
    }
    if (!b.p && !(b.p = malloc(1))) /* an empty shard (no chunks, an index of 0 bytes) */
        return ZF_ERR_NOMEM;
    *out = b.p;
    *out_len = b.len;
    if (empty)
        *empty = all_empty;
    return ZF_OK;
}

static zf_status sharding_encode(const zf_codec *c, const zf_chunk_repr *decoded,
                                 const uint8_t *in, size_t in_len, unsigned flags, uint8_t **out,
                                 size_t *out_len, zf_err *err)
{
    const sharding_codec *s = (const sharding_codec *)c;
    zf_chunk_repr enc;
    *out = NULL;
    *out_len = 0;
    zf_status st = sharding_resolve(c, decoded, &enc, err);
    if (st != ZF_OK)
        return st;
    if (in_len != s->shard_nbytes)
        return zf_fail(err, ZF_ERR_INVALID,
                       "sharding_indexed: %zu bytes to encode, the shard holds %zu", in_len,
                       s->shard_nbytes);
    return build_shard(s, in, NULL, NULL, 0, NULL, flags, out, out_len, NULL, err);
}

static void sharding_destroy(zf_codec *c)
{
    sharding_codec *s = (sharding_codec *)c;
    if (!s->borrowed) {
        zf_chain_clear(&s->inner);
        zf_chain_clear(&s->index);
        free(s->fill);
    }
    free(s);
}

static const zf_codec_ops sharding_ops = {
    .name = "sharding_indexed",
    .kind = ZF_CODEC_ARRAY_TO_BYTES,
    .resolve = sharding_resolve,
    .decode = sharding_decode,
    .destroy = sharding_destroy,
    .encode = sharding_encode,
};

/* --- construction --- */

/* The index codecs' encoded size: must be fixed ("MUST NOT be used for index codecs": codecs of
 * variable-sized output). */
static zf_status index_size(sharding_codec *s, zf_err *err)
{
    size_t n = s->index.n;
    zf_chunk_repr *reprs = malloc((n + 1) * sizeof *reprs);
    if (!reprs)
        return ZF_ERR_NOMEM;
    zf_status st = zf_chain_resolve(&s->index, &s->index_repr, reprs, err);
    for (size_t i = 0; st == ZF_OK && i < n; i++)
        if (reprs[i + 1].nbytes == ZF_SIZE_UNKNOWN)
            st = zf_fail(err, ZF_ERR_INVALID,
                         "sharding_indexed: \"index_codecs\": \"%s\" has no fixed encoded size "
                         "(the index must have one)",
                         s->index.codecs[i]->ops->name);
    if (st == ZF_OK)
        s->index_nbytes = reprs[n].nbytes;
    free(reprs);
    return st;
}

/* The chunks-per-shard grid of a shard of `decoded` (s->chunk_shape set): cps and nchunks.
 * Errors: ZF_ERR_INVALID (an edge the inner chunk does not divide, too many inner chunks). */
static zf_status shard_grid(sharding_codec *s, const zf_chunk_repr *decoded, zf_err *err)
{
    uint64_t nchunks = 1;
    bool empty = false;
    for (unsigned d = 0; d < decoded->ndim; d++) {
        uint64_t c = s->chunk_shape[d];
        if (decoded->shape[d] % c)
            return zf_fail(err, ZF_ERR_INVALID,
                           "sharding_indexed: \"chunk_shape\": %llu does not divide the shard's "
                           "%llu elements along dimension %u",
                           (unsigned long long)c, (unsigned long long)decoded->shape[d], d);
        s->cps[d] = decoded->shape[d] / c;
        if (s->cps[d] == 0)
            empty = true;
        else if (nchunks > MAX_INNER_CHUNKS / s->cps[d])
            nchunks = MAX_INNER_CHUNKS + 1;
        else
            nchunks *= s->cps[d];
    }
    if (empty)
        nchunks = 0;
    if (nchunks > MAX_INNER_CHUNKS)
        return zf_fail(err, ZF_ERR_INVALID,
                       "sharding_indexed: more than %llu inner chunks per shard",
                       (unsigned long long)MAX_INNER_CHUNKS);
    s->nchunks = nchunks;
    return ZF_OK;
}

/* The index's representation: shape chunks_per_shard + [2], uint64 little-endian (what the
 * index codecs encode; "Binary shard format"). */
static void set_index_repr(sharding_codec *s)
{
    zf_chunk_repr *ir = &s->index_repr;
    memset(ir, 0, sizeof *ir);
    ir->ndim = s->ndim + 1;
    memcpy(ir->shape, s->cps, s->ndim * sizeof s->cps[0]);
    ir->shape[s->ndim] = 2;
    ir->dtype.kind = 'u';
    ir->dtype.byteorder = '<';
    ir->dtype.itemsize = 8;
    ir->nbytes = (size_t)s->nchunks * 16;
}

static zf_status parse_chunk_shape(sharding_codec *s, yajl_val cs, const zf_chunk_repr *decoded,
                                   zf_err *err)
{
    if (!cs)
        return zf_fail(err, ZF_ERR_INVALID, "sharding_indexed: \"chunk_shape\": missing");
    if (!YAJL_IS_ARRAY(cs))
        return zf_fail(err, ZF_ERR_INVALID,
                       "sharding_indexed: \"chunk_shape\": expected a list of positive integers");
    if (cs->u.array.len != decoded->ndim)
        return zf_fail(err, ZF_ERR_INVALID,
                       "sharding_indexed: \"chunk_shape\": %zu dimensions, the shard has %u",
                       cs->u.array.len, decoded->ndim);
    size_t inner_elems = 1;
    for (unsigned d = 0; d < decoded->ndim; d++) {
        yajl_val v = cs->u.array.values[d];
        if (!YAJL_IS_INTEGER(v) || strpbrk(v->u.number.r, ".eE") || v->u.number.i <= 0)
            return zf_fail(err, ZF_ERR_INVALID,
                           "sharding_indexed: \"chunk_shape\": expected a list of positive "
                           "integers");
        uint64_t c = (uint64_t)v->u.number.i;
        s->chunk_shape[d] = c;
        if (c > SIZE_MAX / inner_elems)
            return zf_fail(err, ZF_ERR_INVALID, "sharding_indexed: inner chunk too large");
        inner_elems *= (size_t)c;
    }
    zf_status st = shard_grid(s, decoded, err);
    if (st != ZF_OK)
        return st;
    size_t is = decoded->dtype.itemsize;
    if (is && inner_elems > SIZE_MAX / is)
        return zf_fail(err, ZF_ERR_INVALID, "sharding_indexed: inner chunk too large");
    zf_chunk_repr *r = &s->inner_repr;
    memset(r, 0, sizeof *r);
    r->ndim = decoded->ndim;
    memcpy(r->shape, s->chunk_shape, decoded->ndim * sizeof r->shape[0]);
    r->dtype = decoded->dtype;
    r->nbytes = inner_elems * is;
    return ZF_OK;
}

zf_status zf_codec_sharding_new(yajl_val cfg, const zf_chunk_repr *decoded,
                                const uint8_t *fill_value, unsigned depth, zf_codec **out,
                                zf_err *err)
{
    static const char *const keys[] = {"chunk_shape", "codecs", "index_codecs", "index_location",
                                       NULL};
    *out = NULL;
    if (!cfg)
        return zf_fail(err, ZF_ERR_INVALID, "sharding_indexed: \"configuration\": missing");
    zf_status st = zf_v3_check_keys(cfg, "sharding_indexed", keys, err);
    if (st != ZF_OK)
        return st;
    if (decoded->nbytes == ZF_SIZE_UNKNOWN)
        return zf_fail(err, ZF_ERR_INVALID, "sharding_indexed: the shard's size is unknown");
    if (decoded->ndim + 1 > ZF_MAX_DIMS)
        return zf_fail(err, ZF_ERR_UNSUPPORTED,
                       "sharding_indexed: %u dimensions, at most %d with sharding",
                       decoded->ndim, ZF_MAX_DIMS - 1);
    const char *loc;
    if ((st = zf_cfg_string(cfg, "sharding_indexed", "index_location", false, &loc, err)))
        return st;
    if (loc && strcmp(loc, "start") && strcmp(loc, "end"))
        return zf_fail(err, ZF_ERR_INVALID,
                       "sharding_indexed: \"index_location\": expected \"start\" or \"end\"");
    yajl_val codecs = zf_cfg_get(cfg, "codecs"), index_codecs = zf_cfg_get(cfg, "index_codecs");
    if (!codecs)
        return zf_fail(err, ZF_ERR_INVALID, "sharding_indexed: \"codecs\": missing");
    if (!index_codecs)
        return zf_fail(err, ZF_ERR_INVALID, "sharding_indexed: \"index_codecs\": missing");

    sharding_codec *s = zf_codec_alloc(sizeof *s, &sharding_ops);
    if (!s)
        return ZF_ERR_NOMEM;
    s->ndim = decoded->ndim;
    memcpy(s->shard_shape, decoded->shape, decoded->ndim * sizeof decoded->shape[0]);
    s->shard_nbytes = decoded->nbytes;
    s->index_at_end = !loc || loc[0] == 'e';
    size_t is = decoded->dtype.itemsize;
    if ((st = parse_chunk_shape(s, zf_cfg_get(cfg, "chunk_shape"), decoded, err)) != ZF_OK)
        goto fail;
    if (!(s->fill = calloc(1, is ? is : 1))) {
        st = ZF_ERR_NOMEM;
        goto fail;
    }
    if (fill_value && is)
        memcpy(s->fill, fill_value, is);
    st = zf_chain_from_v3_at(codecs, ZF_CODECS_V3, &s->inner_repr, s->fill, depth + 1, &s->inner,
                             err);
    if (st != ZF_OK) {
        zf_err_prefix(err, "sharding_indexed: \"codecs\"");
        goto fail;
    }
    set_index_repr(s);
    static const uint8_t zero8[8];
    st = zf_chain_from_v3_at(index_codecs, ZF_CODECS_V3, &s->index_repr, zero8, depth + 1,
                             &s->index, err);
    if (st != ZF_OK) {
        zf_err_prefix(err, "sharding_indexed: \"index_codecs\"");
        goto fail;
    }
    if ((st = index_size(s, err)) != ZF_OK)
        goto fail;
    *out = &s->base;
    return ZF_OK;
fail:
    sharding_destroy(&s->base);
    return st;
}

zf_status zf_sharding_reshaped(const zf_codec *c, const zf_chunk_repr *decoded, zf_codec **out,
                               zf_err *err)
{
    *out = NULL;
    if (!c || c->ops != &sharding_ops)
        return zf_fail(err, ZF_ERR_INVALID, "not a sharding_indexed codec");
    const sharding_codec *s = (const sharding_codec *)c;
    if (decoded->ndim != s->ndim || decoded->dtype.itemsize != s->inner_repr.dtype.itemsize ||
        decoded->nbytes == ZF_SIZE_UNKNOWN)
        return zf_fail(err, ZF_ERR_INVALID,
                       "sharding_indexed: a shard of another number of dimensions or data type");
    sharding_codec *v = malloc(sizeof *v);
    if (!v)
        return ZF_ERR_NOMEM;
    *v = *s;
    v->borrowed = true;
    memcpy(v->shard_shape, decoded->shape, s->ndim * sizeof decoded->shape[0]);
    v->shard_nbytes = decoded->nbytes;
    zf_status st = shard_grid(v, decoded, err);
    if (st == ZF_OK) {
        set_index_repr(v);
        st = index_size(v, err);
    }
    if (st != ZF_OK) {
        free(v);
        return st;
    }
    *out = &v->base;
    return ZF_OK;
}

zf_status zf_sharding_encode_shard(const zf_codec *c, const uint8_t *const *chunks,
                                   const uint8_t *old_shard, uint64_t old_len,
                                   const uint64_t *old_index, unsigned flags, uint8_t **out,
                                   size_t *out_len, bool *empty, zf_err *err)
{
    *out = NULL;
    *out_len = 0;
    *empty = false;
    if (!c || c->ops != &sharding_ops)
        return zf_fail(err, ZF_ERR_INVALID, "not a sharding_indexed codec");
    const sharding_codec *s = (const sharding_codec *)c;
    if (!chunks && s->nchunks)
        return zf_fail(err, ZF_ERR_INVALID, "sharding_indexed: no inner chunks given");
    if (old_shard && !old_index && s->nchunks)
        return zf_fail(err, ZF_ERR_INVALID, "sharding_indexed: an old shard without its index");
    return build_shard(s, NULL, chunks, old_shard, old_len, old_index, flags, out, out_len,
                       empty, err);
}
