/* optional.c — zarrs' "optional" codec (array -> bytes; names "optional", "zarrs.optional",
 * "https://codec.zarrs.dev/array_to_bytes/optional"), for zarrs' "optional" data type: elements
 * that may be missing (None / null), held as data plus a validity mask.
 *
 * Format (zarrs, codec/array_to_bytes/optional.rs and optional_codec.rs): an encoded chunk is
 *   mask_len: u64 little-endian | data_len: u64 little-endian | mask (mask_len bytes) |
 *   data (data_len bytes)
 * where the mask is the chunk's validity as a bool array of the chunk's shape (1 = valid)
 * encoded by the `mask_codecs` chain, and the data are only the valid elements, in C order, as
 * a 1-D array of (valid count) elements of the inner data type encoded by the `data_codecs`
 * chain (nothing at all, data_len 0, when no element is valid: zarrs then does not decode it).
 * For an optional of an optional type, data_codecs holds another optional codec, whose chunk is
 * that 1-D array of the valid outer elements.
 *
 * Decoded representation (zarrfs's, codec.h: what the chain decodes into): for a chunk of n
 * elements of the innermost data type (itemsize s), n*s bytes of data — every element, zero
 * where missing, as zarrs decodes them — followed by n bytes of validity depth: the number of
 * optional levels present from the outside in (0: missing; for optional(T) 1: valid; for
 * optional(optional(T)) 1: Some(None), 2: Some(Some(v))). This codec requires its decoded
 * representation's nbytes to be n*(s+1); no other codec produces that layout, so an optional
 * data type with another array -> bytes codec fails to resolve (and this codec with a plain
 * data type too). Encoding is not provided (optional arrays are read-only in zarrfs). */
#include <string.h>

#include "codec_impl.h"

typedef struct optional_codec {
    zf_codec base;
    zf_codec_chain mask, data;
    bool nested;     /* data_codecs decode an optional type again */
    unsigned levels; /* optional levels this codec decodes (1 + the nested codec's) */
} optional_codec;

static const zf_codec_ops optional_ops;

static const char *const ALIASES[] = {"optional", "zarrs.optional",
                                      "https://codec.zarrs.dev/array_to_bytes/optional"};

bool zf_codec_optional_name(const char *name)
{
    for (size_t i = 0; i < sizeof ALIASES / sizeof *ALIASES; i++)
        if (strcmp(name, ALIASES[i]) == 0)
            return true;
    return false;
}

unsigned zf_codec_optional_levels(const zf_codec *c)
{
    return c && c->ops == &optional_ops ? ((const optional_codec *)c)->levels : 0;
}

/* Elements of r (0 when too many to index). */
static size_t elems_of(const zf_chunk_repr *r)
{
    size_t n = 1;
    for (unsigned i = 0; i < r->ndim; i++) {
        if (r->shape[i] && n > (SIZE_MAX / 16) / r->shape[i])
            return 0;
        n *= (size_t)r->shape[i];
    }
    return n;
}

/* The representation a decode of decoded's n elements expects, checked. */
static zf_status check_repr(const zf_chunk_repr *decoded, size_t *n, zf_err *err)
{
    size_t s = decoded->dtype.itemsize, e = elems_of(decoded);
    if (decoded->nbytes == ZF_SIZE_UNKNOWN || e > SIZE_MAX / (s + 1) ||
        decoded->nbytes != e * (s + 1))
        return zf_fail(err, ZF_ERR_INVALID,
                       "optional: the array's data type is not an optional type (or its levels "
                       "do not match the nested optional codecs)");
    *n = e;
    return ZF_OK;
}

static zf_status opt_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                             zf_chunk_repr *encoded, zf_err *err)
{
    (void)c;
    size_t n;
    zf_status st = check_repr(decoded, &n, err);
    if (st == ZF_OK)
        zf_repr_bytes(encoded, ZF_SIZE_UNKNOWN);
    return st;
}

static uint64_t u64le(const uint8_t *p)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* The data representation for `count` valid elements of dt. */
static void data_repr(const optional_codec *o, const zf_dtype *dt, size_t count,
                      zf_chunk_repr *r)
{
    memset(r, 0, sizeof *r);
    r->ndim = 1;
    r->shape[0] = count;
    r->dtype = *dt;
    r->nbytes = count * (dt->itemsize + (o->nested ? 1 : 0));
}

static zf_status opt_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                            size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    const optional_codec *o = (const optional_codec *)c;
    size_t n;
    zf_status st = check_repr(decoded, &n, err);
    if (st != ZF_OK)
        return st;
    size_t s = decoded->dtype.itemsize;
    if (out_len != decoded->nbytes)
        return zf_fail(err, ZF_ERR_INVALID, "optional: output of %zu bytes, expected %zu",
                       out_len, decoded->nbytes);
    if (in_len < 16)
        return zf_fail(err, ZF_ERR_CORRUPT, "optional: %zu bytes, shorter than its 16-byte header",
                       in_len);
    uint64_t mlen = u64le(in), dlen = u64le(in + 8);
    if (mlen > in_len - 16 || dlen != in_len - 16 - mlen)
        return zf_fail(err, ZF_ERR_CORRUPT,
                       "optional: the header says %llu + %llu bytes of mask and data, the chunk "
                       "holds %zu after it",
                       (unsigned long long)mlen, (unsigned long long)dlen, in_len - 16);
    /* The mask, a bool array of the chunk's shape, straight into the depth bytes. */
    uint8_t *depth = out + n * s;
    zf_chunk_repr mr = *decoded;
    mr.dtype = (zf_dtype){.kind = 'b', .byteorder = '|', .itemsize = 1};
    mr.nbytes = n;
    zf_err e = {""};
    if ((st = zf_chain_decode(&o->mask, &mr, in + 16, (size_t)mlen, depth, &e)) != ZF_OK)
        return zf_fail(err, st == ZF_ERR_NOMEM ? st : ZF_ERR_CORRUPT, "optional: mask: %s",
                       e.msg[0] ? e.msg : zf_status_str(st));
    size_t valid = 0;
    for (size_t i = 0; i < n; i++)
        valid += depth[i] != 0;
    if (valid == 0) { /* zarrs stores no data then, and reads none */
        memset(out, 0, n * s);
        return ZF_OK;
    }
    zf_chunk_repr dr;
    data_repr(o, &decoded->dtype, valid, &dr);
    uint8_t *sparse = malloc(dr.nbytes ? dr.nbytes : 1);
    if (!sparse)
        return ZF_ERR_NOMEM;
    st = zf_chain_decode(&o->data, &dr, in + 16 + mlen, (size_t)dlen, sparse, &e);
    if (st != ZF_OK) {
        free(sparse);
        return zf_fail(err, st == ZF_ERR_NOMEM ? st : ZF_ERR_CORRUPT, "optional: data: %s",
                       e.msg[0] ? e.msg : zf_status_str(st));
    }
    /* Expand: valid elements in order, zeros for the missing ones. */
    const uint8_t *inner_depth = sparse + valid * s;
    for (size_t i = 0, j = 0; i < n; i++) {
        if (depth[i]) {
            memcpy(out + i * s, sparse + j * s, s);
            depth[i] = (uint8_t)(1 + (o->nested ? inner_depth[j] : 0));
            j++;
        } else {
            memset(out + i * s, 0, s);
        }
    }
    free(sparse);
    return ZF_OK;
}

static void opt_destroy(zf_codec *c)
{
    optional_codec *o = (optional_codec *)c;
    zf_chain_clear(&o->mask);
    zf_chain_clear(&o->data);
    free(o);
}

static const zf_codec_ops optional_ops = {
    .name = "optional",
    .kind = ZF_CODEC_ARRAY_TO_BYTES,
    .resolve = opt_resolve,
    .decode = opt_decode,
    .destroy = opt_destroy,
};

/* Whether a v3 codec list's array -> bytes codec is an optional codec: any entry naming one
 * (an optional codec may only be that codec of a list). */
static bool names_optional(yajl_val list)
{
    for (size_t i = 0; YAJL_IS_ARRAY(list) && i < list->u.array.len; i++) {
        yajl_val v = list->u.array.values[i], name = v;
        if (YAJL_IS_OBJECT(v)) {
            name = NULL;
            for (size_t k = 0; k < v->u.object.len; k++)
                if (strcmp(v->u.object.keys[k], "name") == 0)
                    name = v->u.object.values[k];
        }
        if (YAJL_IS_STRING(name) && zf_codec_optional_name(name->u.string))
            return true;
    }
    return false;
}

zf_status zf_codec_optional_new(yajl_val cfg, const zf_chunk_repr *decoded, unsigned depth,
                                zf_codec **out, zf_err *err)
{
    static const char *const keys[] = {"mask_codecs", "data_codecs", NULL};
    *out = NULL;
    zf_status st = zf_v3_check_keys(cfg, "optional", keys, err);
    if (st != ZF_OK)
        return st;
    yajl_val mc = zf_cfg_get(cfg, "mask_codecs"), dc = zf_cfg_get(cfg, "data_codecs");
    if (!YAJL_IS_ARRAY(mc) || !YAJL_IS_ARRAY(dc))
        return zf_fail(err, ZF_ERR_INVALID, "optional: \"%s\": expected a list of codecs",
                       YAJL_IS_ARRAY(mc) ? "data_codecs" : "mask_codecs");
    size_t n;
    if ((st = check_repr(decoded, &n, err)) != ZF_OK)
        return st;
    optional_codec *o = zf_codec_alloc(sizeof *o, &optional_ops);
    if (!o)
        return ZF_ERR_NOMEM;
    o->nested = names_optional(dc);
    zf_chunk_repr mr = *decoded, dr;
    mr.dtype = (zf_dtype){.kind = 'b', .byteorder = '|', .itemsize = 1};
    mr.nbytes = n;
    data_repr(o, &decoded->dtype, n, &dr); /* the most a chunk can hold */
    zf_err e = {""};
    const char *which = "mask_codecs";
    st = zf_chain_from_v3_at(mc, ZF_CODECS_V3, &mr, NULL, depth + 1, &o->mask, &e);
    if (st == ZF_OK) {
        which = "data_codecs";
        st = zf_chain_from_v3_at(dc, ZF_CODECS_V3, &dr, NULL, depth + 1, &o->data, &e);
    }
    if (st == ZF_OK && o->nested && (o->data.n == 0 || !zf_codec_optional_levels(o->data.codecs[0])))
        st = zf_fail(&e, ZF_ERR_UNSUPPORTED,
                     "a nested optional codec must be the first of the data codecs");
    zf_sharding sh;
    for (size_t i = 0; st == ZF_OK && i < o->data.n; i++)
        if (zf_codec_sharding(o->data.codecs[i], &sh)) /* its shards: of a size each chunk says */
            st = zf_fail(&e, ZF_ERR_UNSUPPORTED, "sharding the present elements is not supported");
    if (st != ZF_OK) {
        opt_destroy(&o->base);
        const char *m = strncmp(e.msg, "codecs: ", 8) ? e.msg : e.msg + 8;
        return zf_fail(err, st, "optional: \"%s\": %s", which, m[0] ? m : zf_status_str(st));
    }
    o->levels = 1 + (o->nested ? zf_codec_optional_levels(o->data.codecs[0]) : 0);
    *out = &o->base;
    return ZF_OK;
}
