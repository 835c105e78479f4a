/* n5_default.c — the zarr-extensions "n5_default" codec (array -> bytes): chunks stored as N5
 * blocks in "default" mode, so that an N5 dataset with a zarr.json beside its attributes.json
 * reads as Zarr v3.
 *
 * zarr-extensions codecs/n5_default, "Configuration parameters": {"codecs": [...]}, a codec
 * list of its own that must be a transpose reversing every axis, then a bytes codec (endian
 * "big"; may be omitted for single-byte types), then at most one bytes -> bytes codec. "Header
 * format" (N5 4.0.0): mode (uint16 big-endian, 0 = default, 1 = varlength, 2 = object), the
 * number of dimensions (uint16 big-endian), each dimension of the block (uint32 big-endian, in
 * the order of the array's shape), then the encoded block. "Decoding": check the mode and the
 * number of dimensions, decode the rest with the inner list for the block's own shape, then pad
 * (or truncate) it to the chunk's shape. N5 writers either pad edge blocks to the whole chunk
 * (zarr-python 2, tensorstore) or truncate them (the Java library): both read here, a
 * truncated block padded with the array's fill value; a block larger than the chunk in any
 * dimension is refused (ZF_ERR_CORRUPT) rather than truncated, since no writer makes one and
 * it would let a chunk decode to more than its size. Encoding writes whole (padded) blocks, as
 * zarr-python 2 does, for the data types N5 has ("Limitations": u?int8-64, float32/64). */
#include <string.h>

#include "codec_impl.h"

typedef struct n5_codec {
    zf_codec base;
    unsigned ndim;
    uint64_t chunk[ZF_MAX_DIMS]; /* the chunk's shape, elements */
    size_t itemsize;
    bool n5_type;                /* a data type N5 has (for encoding) */
    uint8_t *fill;               /* itemsize bytes: where a truncated block has no element */
    zf_codec_chain inner;        /* transpose, bytes, at most one bytes -> bytes codec */
} n5_codec;

#define N5_NAME "n5_default"

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static zf_status n5_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                            zf_chunk_repr *encoded, zf_err *err)
{
    const n5_codec *n = (const n5_codec *)c;
    if (decoded->ndim != n->ndim || decoded->dtype.itemsize != n->itemsize)
        return zf_fail(err, ZF_ERR_INVALID, N5_NAME ": the chunk is not the array's");
    return zf_resolve_compressed(c, decoded, encoded, err);
}

/* Copy a block of shape `b` (C order, elements of size is) into the chunk `out` of shape `c`
 * (each b[d] <= c[d]) at its origin, the rest of the chunk the fill value. */
static void pad_block(const n5_codec *n, const uint64_t *b, const uint8_t *block, uint8_t *out)
{
    size_t is = n->itemsize, nd = n->ndim;
    uint64_t chunk_elems = 1, rows = 1;
    for (size_t d = 0; d < nd; d++)
        chunk_elems *= n->chunk[d];
    for (uint64_t i = 0; i < chunk_elems; i++)
        memcpy(out + i * is, n->fill, is);
    for (size_t d = 0; d + 1 < nd; d++)
        rows *= b[d];
    size_t row = (size_t)b[nd - 1] * is;
    uint64_t idx[ZF_MAX_DIMS] = {0}; /* the row's coordinates in the block, last one 0 */
    for (uint64_t r = 0; r < rows && row; r++) {
        uint64_t off = 0;
        for (size_t d = 0; d < nd; d++)
            off = off * n->chunk[d] + idx[d];
        memcpy(out + off * is, block + r * row, row);
        for (size_t d = nd - 1; d-- > 0;) { /* next row: odometer over the leading dims */
            if (++idx[d] < b[d])
                break;
            idx[d] = 0;
        }
    }
}

static zf_status n5_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                           size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    const n5_codec *n = (const n5_codec *)c;
    if (in_len < 4)
        return zf_fail(err, ZF_ERR_CORRUPT, N5_NAME ": %zu bytes, shorter than a block header",
                       in_len);
    unsigned mode = (unsigned)in[0] << 8 | in[1], nd = (unsigned)in[2] << 8 | in[3];
    if (mode != 0)
        return zf_fail(err, ZF_ERR_CORRUPT,
                       N5_NAME ": block mode %u (%s), only the default mode (0) is defined",
                       mode, mode == 1 ? "varlength" : mode == 2 ? "object" : "unknown");
    if (nd != n->ndim)
        return zf_fail(err, ZF_ERR_CORRUPT, N5_NAME ": a block of %u dimensions in an array of %u",
                       nd, n->ndim);
    size_t head = 4 + 4 * (size_t)nd;
    if (in_len < head)
        return zf_fail(err, ZF_ERR_CORRUPT, N5_NAME ": block header truncated (%zu of %zu bytes)",
                       in_len, head);
    zf_chunk_repr block = *decoded;
    bool whole = true;
    size_t elems = 1;
    for (unsigned d = 0; d < nd; d++) {
        uint32_t e = be32(in + 4 + 4 * (size_t)d);
        if (e == 0 || e > n->chunk[d])
            return zf_fail(err, ZF_ERR_CORRUPT,
                           N5_NAME ": block dimension %u is %u, the chunk's is %llu", d, e,
                           (unsigned long long)n->chunk[d]);
        block.shape[d] = e;
        whole &= e == n->chunk[d];
        elems *= e; /* <= the chunk's elements: no overflow */
    }
    if (out_len != decoded->nbytes)
        return zf_fail(err, ZF_ERR_CORRUPT, N5_NAME ": %zu bytes asked of a chunk of %zu",
                       out_len, decoded->nbytes);
    if (whole)
        return zf_chain_decode(&n->inner, decoded, in + head, in_len - head, out, err);
    block.nbytes = elems * n->itemsize;
    uint8_t *tmp = malloc(block.nbytes ? block.nbytes : 1);
    if (!tmp)
        return ZF_ERR_NOMEM;
    zf_status st = zf_chain_decode(&n->inner, &block, in + head, in_len - head, tmp, err);
    if (st == ZF_OK)
        pad_block(n, block.shape, tmp, out);
    free(tmp);
    return st;
}

static zf_status n5_encode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                           size_t in_len, unsigned flags, uint8_t **out, size_t *out_len,
                           zf_err *err)
{
    const n5_codec *n = (const n5_codec *)c;
    char ts[32];
    if (!n->n5_type)
        return zf_fail(err, ZF_ERR_INVALID, N5_NAME ": N5 has no data type %s",
                       zf_dtype_str(&decoded->dtype, ts));
    for (unsigned d = 0; d < n->ndim; d++)
        if (decoded->shape[d] > UINT32_MAX)
            return zf_fail(err, ZF_ERR_INVALID,
                           N5_NAME ": a chunk dimension of %llu does not fit a block header",
                           (unsigned long long)decoded->shape[d]);
    uint8_t *body = NULL;
    size_t body_len = 0;
    zf_status st = zf_chain_encode(&n->inner, decoded, in, flags, &body, &body_len, err);
    if (st != ZF_OK)
        return st;
    (void)in_len;
    size_t head = 4 + 4 * (size_t)n->ndim;
    uint8_t *o = zf_enc_alloc(head + body_len);
    if (!o) {
        free(body);
        return ZF_ERR_NOMEM;
    }
    o[0] = o[1] = 0; /* mode: default */
    o[2] = (uint8_t)(n->ndim >> 8);
    o[3] = (uint8_t)n->ndim;
    for (unsigned d = 0; d < n->ndim; d++)
        for (unsigned k = 0; k < 4; k++)
            o[4 + 4 * d + k] = (uint8_t)(decoded->shape[d] >> (24 - 8 * k));
    if (body_len)
        memcpy(o + head, body, body_len);
    free(body);
    *out = o;
    *out_len = head + body_len;
    return ZF_OK;
}

static void n5_destroy(zf_codec *c)
{
    n5_codec *n = (n5_codec *)c;
    zf_chain_clear(&n->inner);
    free(n->fill);
    free(n);
}

static const zf_codec_ops n5_ops = {
    .name = N5_NAME,
    .kind = ZF_CODEC_ARRAY_TO_BYTES,
    .resolve = n5_resolve,
    .decode = n5_decode,
    .encode = n5_encode,
    .destroy = n5_destroy,
};

/* The inner list as the document requires it: a transpose reversing every axis, a bytes codec
 * storing big-endian (its "endian" may be absent for single-byte types, which the bytes codec
 * itself checks), at most one bytes -> bytes codec (the chain builder checks the kinds). */
static zf_status check_inner(const n5_codec *n, yajl_val codecs, zf_err *err)
{
    const zf_codec_chain *ch = &n->inner;
    unsigned nd, order[ZF_MAX_DIMS];
    if (ch->n < 2 || ch->n > 3 || codecs->u.array.len != ch->n)
        return zf_fail(err, ZF_ERR_INVALID,
                       N5_NAME ": \"codecs\": expected transpose, bytes and at most one "
                       "bytes -> bytes codec");
    if (!zf_codec_transpose_order(ch->codecs[0], &nd, order))
        return zf_fail(err, ZF_ERR_INVALID, N5_NAME ": \"codecs\"[0]: expected a transpose");
    for (unsigned d = 0; d < nd; d++)
        if (order[d] != nd - 1 - d)
            return zf_fail(err, ZF_ERR_INVALID,
                           N5_NAME ": \"codecs\"[0]: the transpose must reverse every axis");
    if (strcmp(ch->codecs[1]->ops->name, "bytes") != 0)
        return zf_fail(err, ZF_ERR_INVALID, N5_NAME ": \"codecs\"[1]: expected a bytes codec");
    yajl_val b = codecs->u.array.values[1];
    yajl_val endian = YAJL_IS_OBJECT(b) ? zf_cfg_get(zf_cfg_get(b, "configuration"), "endian")
                                        : NULL;
    if (endian && !(YAJL_IS_STRING(endian) && strcmp(endian->u.string, "big") == 0))
        return zf_fail(err, ZF_ERR_INVALID,
                       N5_NAME ": \"codecs\"[1]: N5 blocks are big-endian (\"endian\": \"big\")");
    return ZF_OK;
}

zf_status zf_codec_n5_default_new(yajl_val cfg, const zf_chunk_repr *decoded,
                                  const uint8_t *fill_value, unsigned depth, zf_codec **out,
                                  zf_err *err)
{
    static const char *const keys[] = {"codecs", NULL};
    *out = NULL;
    if (!cfg)
        return zf_fail(err, ZF_ERR_INVALID, N5_NAME ": \"configuration\": missing");
    zf_status st = zf_v3_check_keys(cfg, N5_NAME, keys, err);
    if (st != ZF_OK)
        return st;
    yajl_val codecs = zf_cfg_get(cfg, "codecs");
    if (!YAJL_IS_ARRAY(codecs))
        return zf_fail(err, ZF_ERR_INVALID, N5_NAME ": \"codecs\": expected a list of codecs");
    if (decoded->ndim == 0 || decoded->ndim > UINT16_MAX)
        return zf_fail(err, ZF_ERR_INVALID,
                       N5_NAME ": N5 blocks have 1 to 65535 dimensions, the array has %u",
                       decoded->ndim);
    if (decoded->nbytes == ZF_SIZE_UNKNOWN || decoded->dtype.itemsize == 0)
        return zf_fail(err, ZF_ERR_INVALID, N5_NAME ": the chunk's size is unknown");
    n5_codec *n = zf_codec_alloc(sizeof *n, &n5_ops);
    if (!n)
        return ZF_ERR_NOMEM;
    n->ndim = decoded->ndim;
    memcpy(n->chunk, decoded->shape, decoded->ndim * sizeof decoded->shape[0]);
    n->itemsize = decoded->dtype.itemsize;
    char k = decoded->dtype.kind;
    n->n5_type = ((k == 'i' || k == 'u') && n->itemsize <= 8) ||
                 (k == 'f' && (n->itemsize == 4 || n->itemsize == 8));
    if (!(n->fill = calloc(1, n->itemsize))) {
        free(n);
        return ZF_ERR_NOMEM;
    }
    if (fill_value)
        memcpy(n->fill, fill_value, n->itemsize);
    st = zf_chain_from_v3_at(codecs, ZF_CODECS_V3, decoded, n->fill, depth + 1, &n->inner, err);
    if (st != ZF_OK)
        zf_err_prefix(err, N5_NAME ": \"codecs\"");
    else
        st = check_inner(n, codecs, err);
    if (st != ZF_OK) {
        n5_destroy(&n->base);
        return st;
    }
    *out = &n->base;
    return ZF_OK;
}
