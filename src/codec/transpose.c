/* transpose.c — the transpose codec (array -> array): the stored array's axis i is axis
 * order[i] of the decoded one (Zarr v3 "transpose"; Zarr v2 `order: "F"` is the reversed
 * order). Decoding turns the stored C-order array of the encoded shape into the decoded C-order
 * array; encoding is the same permutation with the inverse order.
 *
 * Speed matters here (every chunk of an F-order array passes through): axes of length 1 are
 * dropped, axes that stay adjacent in both layouts are merged, then either whole rows are
 * copied (the innermost axis did not move) or the two axes that are contiguous in the input and
 * in the output are transposed in cache-sized tiles, with fixed-size element copies for items of
 * 1, 2, 4 and 8 bytes. */
#include <string.h>

#include "codec_impl.h"

typedef struct transpose_codec {
    zf_codec base;
    unsigned ndim;
    unsigned order[ZF_MAX_DIMS];
} transpose_codec;

static zf_status transpose_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                                   zf_chunk_repr *encoded, zf_err *err)
{
    const transpose_codec *t = (const transpose_codec *)c;
    if (decoded->ndim != t->ndim)
        return zf_fail(err, ZF_ERR_INVALID,
                       "transpose: order has %u dimensions, the chunk has %u", t->ndim,
                       decoded->ndim);
    *encoded = *decoded;
    for (unsigned i = 0; i < t->ndim; i++)
        encoded->shape[i] = decoded->shape[t->order[i]];
    return ZF_OK;
}

static zf_status transpose_size(const zf_codec *c, const uint8_t *in, size_t in_len,
                                size_t *out_len, zf_err *err)
{
    (void)c;
    (void)in;
    (void)err;
    *out_len = in_len;
    return ZF_OK;
}

/* One axis of the copy: length, stride in the input and in the output (in elements). */
typedef struct axis {
    size_t n, is, os;
} axis;

#define TILE 32

/* out[b * osb + a] = in[b + a * isa] for b < nb, a < na, in TILE x TILE blocks. */
#define TILE2D(S)                                                                                 \
    static void tile2d_##S(const uint8_t *in, uint8_t *out, size_t nb, size_t osb, size_t na,    \
                           size_t isa)                                                            \
    {                                                                                             \
        for (size_t bb = 0; bb < nb; bb += TILE) {                                                \
            size_t be = bb + TILE < nb ? bb + TILE : nb;                                          \
            for (size_t aa = 0; aa < na; aa += TILE) {                                            \
                size_t ae = aa + TILE < na ? aa + TILE : na;                                      \
                for (size_t b = bb; b < be; b++) {                                                \
                    const uint8_t *src = in + b * (S);                                            \
                    uint8_t *dst = out + b * osb * (S);                                           \
                    for (size_t a = aa; a < ae; a++)                                              \
                        memcpy(dst + a * (S), src + a * isa * (S), (S));                          \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }
TILE2D(1)
TILE2D(2)
TILE2D(4)
TILE2D(8)

static void tile2d_any(const uint8_t *in, uint8_t *out, size_t nb, size_t osb, size_t na,
                       size_t isa, size_t s)
{
    for (size_t bb = 0; bb < nb; bb += TILE) {
        size_t be = bb + TILE < nb ? bb + TILE : nb;
        for (size_t aa = 0; aa < na; aa += TILE) {
            size_t ae = aa + TILE < na ? aa + TILE : na;
            for (size_t b = bb; b < be; b++)
                for (size_t a = aa; a < ae; a++)
                    memcpy(out + (b * osb + a) * s, in + (b + a * isa) * s, s);
        }
    }
}

static void tile2d(const uint8_t *in, uint8_t *out, size_t nb, size_t osb, size_t na, size_t isa,
                   size_t s)
{
    switch (s) {
    case 1: tile2d_1(in, out, nb, osb, na, isa); break;
    case 2: tile2d_2(in, out, nb, osb, na, isa); break;
    case 4: tile2d_4(in, out, nb, osb, na, isa); break;
    case 8: tile2d_8(in, out, nb, osb, na, isa); break;
    default: tile2d_any(in, out, nb, osb, na, isa, s); break;
    }
}

static void permute(const axis *ax, unsigned k, size_t s, const uint8_t *in, uint8_t *out)
{
    if (k == 0) {
        memcpy(out, in, s);
        return;
    }
    const axis *last = &ax[k - 1];
    bool rows = last->is == 1; /* innermost axis contiguous in both: copy whole rows */
    unsigned b = k;            /* else the axis contiguous in the input */
    if (!rows)
        for (unsigned j = 0; j + 1 < k; j++)
            if (ax[j].is == 1)
                b = j;
    /* Odometer over the remaining axes. */
    axis outer[ZF_MAX_DIMS];
    unsigned no = 0;
    for (unsigned j = 0; j + 1 < k; j++)
        if (j != b)
            outer[no++] = ax[j];
    size_t idx[ZF_MAX_DIMS] = {0}, ioff = 0, ooff = 0;
    for (;;) {
        if (rows)
            memcpy(out + ooff * s, in + ioff * s, last->n * s);
        else
            tile2d(in + ioff * s, out + ooff * s, ax[b].n, ax[b].os, last->n, last->is, s);
        unsigned j = no;
        for (;;) {
            if (j == 0)
                return; /* every outer axis wrapped: done */
            j--;
            if (++idx[j] < outer[j].n) {
                ioff += outer[j].is;
                ooff += outer[j].os;
                break;
            }
            ioff -= outer[j].is * (outer[j].n - 1);
            ooff -= outer[j].os * (outer[j].n - 1);
            idx[j] = 0;
        }
    }
}

/* The elements of an array of shape `shape` (C order), checking n * s == len; *nelem 0 when
 * there is nothing to move. */
static zf_status count_elems(const uint64_t *shape, unsigned nd, size_t s, size_t len,
                             size_t *nelem, zf_err *err)
{
    size_t n = 1;
    for (unsigned j = 0; j < nd; j++) {
        if (shape[j] && n > SIZE_MAX / shape[j])
            return zf_fail(err, ZF_ERR_INVALID, "transpose: chunk too large");
        n *= (size_t)shape[j];
    }
    if (s == 0 || n == 0 || n > SIZE_MAX / s || n * s != len) {
        if (len == 0) {
            *nelem = 0;
            return ZF_OK;
        }
        return zf_fail(err, ZF_ERR_INVALID,
                       "transpose: %zu bytes do not hold the chunk's %zu elements of %zu bytes",
                       len, n, s);
    }
    *nelem = n;
    return ZF_OK;
}

/* out (C order, shape `shape`) from in, the C-order array whose axis i is axis order[i] of out. */
static void transpose_run(unsigned nd, const unsigned *order, const uint64_t *shape, size_t s,
                          size_t nelem, const uint8_t *in, uint8_t *out)
{
    /* Strides of the input array, and of the output one. */
    size_t es[ZF_MAX_DIMS], inv[ZF_MAX_DIMS];
    size_t st = 1;
    for (unsigned i = nd; i-- > 0;) {
        es[i] = st;
        st *= (size_t)shape[order[i]];
        inv[order[i]] = i;
    }
    axis ax[ZF_MAX_DIMS];
    unsigned k = 0;
    size_t os = nelem;
    for (unsigned j = 0; j < nd; j++) {
        size_t n = (size_t)shape[j];
        os /= n;
        if (n == 1)
            continue;
        axis a = {n, es[inv[j]], os};
        if (k > 0 && ax[k - 1].is == a.is * a.n) { /* adjacent in both layouts: merge */
            ax[k - 1].n *= a.n;
            ax[k - 1].is = a.is;
            ax[k - 1].os = a.os;
        } else {
            ax[k++] = a;
        }
    }
    permute(ax, k, s, in, out);
}

static zf_status transpose_decode(const zf_codec *c, const zf_chunk_repr *decoded,
                                  const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len,
                                  zf_err *err)
{
    const transpose_codec *t = (const transpose_codec *)c;
    unsigned nd = t->ndim;
    if (decoded->ndim != nd)
        return zf_fail(err, ZF_ERR_INVALID, "transpose: order has %u dimensions, the chunk has %u",
                       nd, decoded->ndim);
    if (in_len != out_len)
        return zf_fail(err, ZF_ERR_CORRUPT, "transpose: %zu bytes, expected %zu", in_len,
                       out_len);
    size_t s = decoded->dtype.itemsize, nelem;
    zf_status st = count_elems(decoded->shape, nd, s, out_len, &nelem, err);
    if (st == ZF_OK && nelem)
        transpose_run(nd, t->order, decoded->shape, s, nelem, in, out);
    return st;
}

/* Encoding: the encoded array (axis i = decoded axis order[i]) is the decoded one read through
 * the inverse permutation, so it is the same run with the inverse order and the encoded shape. */
static zf_status transpose_encode(const zf_codec *c, const zf_chunk_repr *decoded,
                                  const uint8_t *in, size_t in_len, unsigned flags,
                                  uint8_t **out, size_t *out_len, zf_err *err)
{
    (void)flags;
    const transpose_codec *t = (const transpose_codec *)c;
    unsigned nd = t->ndim;
    if (decoded->ndim != nd)
        return zf_fail(err, ZF_ERR_INVALID, "transpose: order has %u dimensions, the chunk has %u",
                       nd, decoded->ndim);
    size_t s = decoded->dtype.itemsize, nelem;
    zf_status st = count_elems(decoded->shape, nd, s, in_len, &nelem, err);
    if (st != ZF_OK)
        return st;
    uint8_t *o = malloc(in_len ? in_len : 1);
    if (!o)
        return ZF_ERR_NOMEM;
    if (nelem) {
        unsigned inv[ZF_MAX_DIMS];
        uint64_t eshape[ZF_MAX_DIMS];
        for (unsigned i = 0; i < nd; i++) {
            inv[t->order[i]] = i;
            eshape[i] = decoded->shape[t->order[i]];
        }
        transpose_run(nd, inv, eshape, s, nelem, in, o);
    }
    *out = o;
    *out_len = in_len;
    return ZF_OK;
}

static const zf_codec_ops transpose_ops = {
    .name = "transpose",
    .kind = ZF_CODEC_ARRAY_TO_ARRAY,
    .resolve = transpose_resolve,
    .decode = transpose_decode,
    .destroy = zf_codec_destroy_plain,
    .decoded_size = transpose_size,
    .encode = transpose_encode,
};

zf_status zf_codec_transpose_new(unsigned ndim, const unsigned *order, zf_codec **out,
                                 zf_err *err)
{
    if (ndim > ZF_MAX_DIMS)
        return zf_fail(err, ZF_ERR_INVALID, "transpose: %u dimensions, at most %d", ndim,
                       ZF_MAX_DIMS);
    bool seen[ZF_MAX_DIMS] = {false};
    for (unsigned i = 0; i < ndim; i++) {
        if (order[i] >= ndim || seen[order[i]])
            return zf_fail(err, ZF_ERR_INVALID,
                           "transpose: \"order\" is not a permutation of 0..%u", ndim - 1);
        seen[order[i]] = true;
    }
    transpose_codec *t = zf_codec_alloc(sizeof *t, &transpose_ops);
    if (!t)
        return ZF_ERR_NOMEM;
    t->ndim = ndim;
    memcpy(t->order, order, ndim * sizeof *order);
    *out = &t->base;
    return ZF_OK;
}

bool zf_codec_transpose_order(const zf_codec *c, unsigned *ndim, unsigned *order)
{
    if (c->ops != &transpose_ops)
        return false;
    const transpose_codec *t = (const transpose_codec *)c;
    *ndim = t->ndim;
    memcpy(order, t->order, sizeof(unsigned) * t->ndim);
    return true;
}
