/* reshape.c — the two array -> array codecs that change only a chunk's shape, never its bytes
 * (a C-order array reshaped is the same bytes): the zarr-extensions "reshape" codec and zarrs'
 * "zarrs.squeeze" (which is a reshape to the dimensions of size > 1). Decoding and encoding
 * copy the bytes; resolve computes the encoded shape.
 *
 * reshape (zarr-extensions codecs/reshape, as zarrs reads it): {"shape": [d0, d1, ...]}, one
 * entry per encoded dimension: a positive integer (that size), a list of decoded dimension
 * indices (the product of their sizes; the indices increase along the whole list, with every
 * integer or -1 entry counting as one index) or -1 (at most once: whatever makes the element
 * counts equal, which they must be).
 * zarrs.squeeze: {} (no options): the decoded dimensions of size 1 are dropped; when none is
 * left the encoded shape is [1]. */
#include <string.h>

#include "codec_impl.h"

enum { DIM_SIZE, DIM_INPUT, DIM_AUTO };

typedef struct reshape_dim {
    int kind;
    uint64_t size;            /* DIM_SIZE */
    unsigned first, count;    /* DIM_INPUT: indices[first .. first + count) */
} reshape_dim;

typedef struct reshape_codec {
    zf_codec base;
    bool squeeze;
    unsigned ndim; /* encoded dimensions (reshape) */
    reshape_dim dims[ZF_MAX_DIMS];
    unsigned nindex;
    unsigned *index; /* the input dimensions of every DIM_INPUT entry, in order */
} reshape_codec;

static zf_status squeeze_resolve(const zf_chunk_repr *decoded, zf_chunk_repr *encoded)
{
    *encoded = *decoded;
    unsigned n = 0;
    for (unsigned d = 0; d < decoded->ndim; d++)
        if (decoded->shape[d] != 1)
            encoded->shape[n++] = decoded->shape[d];
    if (n == 0)
        encoded->shape[n++] = 1;
    encoded->ndim = n;
    return ZF_OK;
}

static zf_status reshape_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                                 zf_chunk_repr *encoded, zf_err *err)
{
    const reshape_codec *r = (const reshape_codec *)c;
    if (r->squeeze)
        return squeeze_resolve(decoded, encoded);
    uint64_t in_count = 1, out_count = 1;
    for (unsigned d = 0; d < decoded->ndim; d++)
        if (__builtin_mul_overflow(in_count, decoded->shape[d], &in_count))
            return zf_fail(err, ZF_ERR_INVALID, "reshape: the chunk has too many elements");
    *encoded = *decoded;
    encoded->ndim = r->ndim;
    int auto_at = -1;
    for (unsigned i = 0; i < r->ndim; i++) {
        const reshape_dim *dm = &r->dims[i];
        uint64_t size = 1;
        if (dm->kind == DIM_SIZE) {
            size = dm->size;
        } else if (dm->kind == DIM_AUTO) {
            auto_at = (int)i;
        } else {
            for (unsigned k = 0; k < dm->count; k++) {
                unsigned in = r->index[dm->first + k];
                if (in >= decoded->ndim)
                    return zf_fail(err, ZF_ERR_INVALID,
                                   "reshape: \"shape\": dimension %u of a chunk of %u dimensions",
                                   in, decoded->ndim);
                if (__builtin_mul_overflow(size, decoded->shape[in], &size))
                    return zf_fail(err, ZF_ERR_INVALID, "reshape: \"shape\": too large");
            }
        }
        encoded->shape[i] = size;
        if (__builtin_mul_overflow(out_count, size, &out_count))
            return zf_fail(err, ZF_ERR_INVALID, "reshape: \"shape\": too large");
    }
    if (auto_at >= 0) {
        if (out_count == 0 || in_count % out_count)
            return zf_fail(err, ZF_ERR_INVALID,
                           "reshape: \"shape\": no size for -1 gives the chunk's %llu elements",
                           (unsigned long long)in_count);
        encoded->shape[auto_at] = in_count / out_count;
    } else if (in_count != out_count) {
        return zf_fail(err, ZF_ERR_INVALID,
                       "reshape: \"shape\": %llu elements, the chunk has %llu",
                       (unsigned long long)out_count, (unsigned long long)in_count);
    }
    return ZF_OK;
}

static zf_status reshape_size(const zf_codec *c, const uint8_t *in, size_t in_len,
                              size_t *out_len, zf_err *err)
{
    (void)c;
    (void)in;
    (void)err;
    *out_len = in_len;
    return ZF_OK;
}

static zf_status reshape_decode(const zf_codec *c, const zf_chunk_repr *decoded,
                                const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len,
                                zf_err *err)
{
    (void)decoded;
    if (in_len != out_len)
        return zf_fail(err, ZF_ERR_CORRUPT, "%s: %zu bytes, expected %zu", c->ops->name, in_len,
                       out_len);
    if (out_len)
        memcpy(out, in, out_len);
    return ZF_OK;
}

static zf_status reshape_encode(const zf_codec *c, const zf_chunk_repr *decoded,
                                const uint8_t *in, size_t in_len, unsigned flags, uint8_t **out,
                                size_t *out_len, zf_err *err)
{
    (void)c;
    (void)decoded;
    (void)flags;
    (void)err;
    uint8_t *o = zf_enc_alloc(in_len);
    if (!o)
        return ZF_ERR_NOMEM;
    if (in_len)
        memcpy(o, in, in_len);
    *out = o;
    *out_len = in_len;
    return ZF_OK;
}

static void reshape_destroy(zf_codec *c)
{
    reshape_codec *r = (reshape_codec *)c;
    free(r->index);
    free(r);
}

static const zf_codec_ops reshape_ops = {
    .name = "reshape",
    .kind = ZF_CODEC_ARRAY_TO_ARRAY,
    .resolve = reshape_resolve,
    .decode = reshape_decode,
    .destroy = reshape_destroy,
    .decoded_size = reshape_size,
    .encode = reshape_encode,
};

static const zf_codec_ops squeeze_ops = {
    .name = "zarrs.squeeze",
    .kind = ZF_CODEC_ARRAY_TO_ARRAY,
    .resolve = reshape_resolve,
    .decode = reshape_decode,
    .destroy = reshape_destroy,
    .decoded_size = reshape_size,
    .encode = reshape_encode,
};

/* A non-negative JSON integer written as one. */
static bool json_uint(yajl_val v, uint64_t *out)
{
    if (!YAJL_IS_INTEGER(v) || v->u.number.i < 0 || strpbrk(v->u.number.r, ".eE"))
        return false;
    *out = (uint64_t)v->u.number.i;
    return true;
}

#define BAD_SHAPE                                                                                 \
    "reshape: \"shape\": expected a list of positive sizes, lists of increasing dimension "     \
    "indices and at most one -1"

zf_status zf_codec_reshape_new(yajl_val cfg, const zf_chunk_repr *decoded, zf_codec **out,
                               zf_err *err)
{
    static const char *const keys[] = {"shape", NULL};
    zf_status st = zf_v3_check_keys(cfg, "reshape", keys, err);
    if (st != ZF_OK)
        return st;
    yajl_val shape = zf_cfg_get(cfg, "shape");
    if (!shape)
        return zf_fail(err, ZF_ERR_INVALID, "reshape: \"shape\": missing");
    if (!YAJL_IS_ARRAY(shape) || shape->u.array.len == 0)
        return zf_fail(err, ZF_ERR_INVALID, BAD_SHAPE);
    size_t n = shape->u.array.len, nindex = 0;
    if (n > ZF_MAX_DIMS)
        return zf_fail(err, ZF_ERR_INVALID, "reshape: \"shape\": more than %d dimensions",
                       ZF_MAX_DIMS);
    for (size_t i = 0; i < n; i++)
        if (YAJL_IS_ARRAY(shape->u.array.values[i]))
            nindex += shape->u.array.values[i]->u.array.len;
    reshape_codec *r = zf_codec_alloc(sizeof *r, &reshape_ops);
    if (!r || (nindex && !(r->index = malloc(nindex * sizeof *r->index)))) {
        free(r);
        return ZF_ERR_NOMEM;
    }
    r->ndim = (unsigned)n;
    uint64_t next = 0; /* zarrs' validate_shape: the lowest index the next entry may use */
    bool has_auto = false;
    for (size_t i = 0; i < n && st == ZF_OK; i++) {
        yajl_val v = shape->u.array.values[i];
        reshape_dim *dm = &r->dims[i];
        uint64_t u;
        if (YAJL_IS_ARRAY(v)) {
            dm->kind = DIM_INPUT;
            dm->first = r->nindex;
            for (size_t k = 0; k < v->u.array.len && st == ZF_OK; k++) {
                if (!json_uint(v->u.array.values[k], &u) || u < next || u >= ZF_MAX_DIMS) {
                    st = zf_fail(err, ZF_ERR_INVALID, BAD_SHAPE);
                    break;
                }
                next = u + 1;
                r->index[r->nindex++] = (unsigned)u;
                dm->count++;
            }
        } else if (YAJL_IS_INTEGER(v) && v->u.number.i == -1 && !has_auto) {
            dm->kind = DIM_AUTO;
            has_auto = true;
            next++;
        } else if (json_uint(v, &u) && u > 0) {
            dm->kind = DIM_SIZE;
            dm->size = u;
            next++;
        } else {
            st = zf_fail(err, ZF_ERR_INVALID, BAD_SHAPE);
        }
    }
    zf_chunk_repr enc;
    if (st == ZF_OK)
        st = reshape_resolve(&r->base, decoded, &enc, err);
    if (st != ZF_OK) {
        reshape_destroy(&r->base);
        return st;
    }
    *out = &r->base;
    return ZF_OK;
}

zf_status zf_codec_squeeze_new(yajl_val cfg, const zf_chunk_repr *decoded, zf_codec **out,
                               zf_err *err)
{
    (void)decoded;
    static const char *const keys[] = {NULL};
    zf_status st = zf_v3_check_keys(cfg, "zarrs.squeeze", keys, err);
    if (st != ZF_OK)
        return st;
    reshape_codec *r = zf_codec_alloc(sizeof *r, &squeeze_ops);
    if (!r)
        return ZF_ERR_NOMEM;
    r->squeeze = true;
    *out = &r->base;
    return ZF_OK;
}
