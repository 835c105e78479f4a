/* zarrs_vlen.c — zarrs' "zarrs.vlen" codec (array -> bytes; also named
 * https://codec.zarrs.dev/array_to_bytes/vlen), variable-length elements as an index of offsets
 * and the elements' bytes, each through its own codec chain (zarrs' array_to_bytes/vlen.rs and
 * zarrs_metadata_ext codec/zarrs/vlen.rs).
 *
 * Configuration: "index_codecs" and "data_codecs" (lists of v3 codecs, required),
 * "index_data_type" ("uint32" or "uint64", required), "index_location" ("start" or "end";
 * absent in zarrs' first draft, whose layout is "start"); nothing else. A chunk of n elements:
 * - index_location "start": a u64 little-endian L, the encoded index (L bytes), then the
 *   encoded data; "end": the encoded data, the encoded index (L bytes), then L as u64 LE;
 * - the index decodes with index_codecs as a 1-d array of n + 1 elements of index_data_type:
 *   offsets, non-decreasing; element j is data[offsets[j] .. offsets[j + 1]);
 * - the data decodes with data_codecs as a 1-d uint8 array of offsets[n] bytes (nothing to
 *   decode when that is 0).
 * A length past the chunk, an index that fails its codecs or decreases, data that does not
 * decode to offsets[n] bytes: ZF_ERR_CORRUPT. zarrfs builds the data chain before the data's
 * length is known, so data_codecs may hold the "bytes" codec and bytes -> bytes codecs only
 * (what zarrs writes); others are ZF_ERR_UNSUPPORTED.
 *
 * The elements are read as text like zarrs.vlen_v2's (zf_vlen_dtype_utf8: string as
 * vlen-utf8, bytes as vlen-bytes): the chunk is laid out as numcodecs' length-prefixed chunk
 * and read by the same code (text.c). Offsets and data are bounded by 2 GiB. */
#include <stdlib.h>
#include <string.h>

#include "codec_impl.h"

#define NAME "zarrs.vlen"
/* The data's bound: zarrfs's limit on a chunk of text, as for the other text chains (chain.c;
 * the fuzz build sets a smaller one). */
#ifndef ZF_TEXT_BOUND
#define ZF_TEXT_BOUND ((size_t)1 << 31)
#endif
#define MAX_DATA ((uint64_t)ZF_TEXT_BOUND)

typedef struct zvlen {
    zf_codec base;
    bool utf8;
    bool at_end;
    zf_codec *like;         /* vlen-utf8 or vlen-bytes: its fill_text */
    zf_chunk_repr index;    /* n + 1 offsets */
    zf_codec_chain index_chain, data_chain;
} zvlen;

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The decoded index: n + 1 offsets into *offs (malloc'd), checked. */
static zf_status read_index(const zvlen *z, const uint8_t *enc, size_t enc_len, uint64_t **offs,
                            zf_err *err)
{
    uint64_t n1 = z->index.shape[0];
    uint8_t *raw = malloc(z->index.nbytes);
    uint64_t *o = malloc(n1 * sizeof *o);
    zf_status st = raw && o ? ZF_OK : ZF_ERR_NOMEM;
    if (st == ZF_OK && (st = zf_chain_decode(&z->index_chain, &z->index, enc, enc_len, raw,
                                             err)) != ZF_OK && st != ZF_ERR_NOMEM)
        zf_err_prefix(err, NAME ": index");
    for (uint64_t i = 0; st == ZF_OK && i < n1; i++) {
        o[i] = zf_dtype_load(&z->index.dtype, raw, i).v.u;
        if (i && o[i] < o[i - 1])
            st = zf_fail(err, ZF_ERR_CORRUPT, NAME ": index: offset %llu (%llu) is below the "
                         "one before it (%llu)", (unsigned long long)i,
                         (unsigned long long)o[i], (unsigned long long)o[i - 1]);
    }
    if (st == ZF_OK && o[n1 - 1] > MAX_DATA)
        st = zf_fail(err, ZF_ERR_CORRUPT, NAME ": index: %llu bytes of data, more than %llu",
                     (unsigned long long)o[n1 - 1], (unsigned long long)MAX_DATA);
    free(raw);
    if (st != ZF_OK) {
        free(o);
        return st;
    }
    *offs = o;
    return ZF_OK;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static zf_status zv_decode_text(const zf_codec *c, const zf_chunk_repr *decoded,
                                const uint8_t *in, size_t in_len, zf_text_chunk **out,
                                zf_err *err)
{
    const zvlen *z = (const zvlen *)c;
    *out = NULL;
    if (in_len < 8)
        return zf_fail(err, ZF_ERR_CORRUPT, NAME ": %zu bytes, too short for the index length",
                       in_len);
    uint64_t ilen = le64(z->at_end ? in + in_len - 8 : in);
    size_t rest = in_len - 8;
    if (ilen > rest)
        return zf_fail(err, ZF_ERR_CORRUPT, NAME ": an index of %llu bytes in a chunk of %zu",
                       (unsigned long long)ilen, in_len);
    const uint8_t *ienc = z->at_end ? in + rest - ilen : in + 8;
    const uint8_t *denc = z->at_end ? in : in + 8 + ilen;
    size_t dlen = rest - (size_t)ilen;
    uint64_t *offs = NULL;
    zf_status st = read_index(z, ienc, (size_t)ilen, &offs, err);
    if (st != ZF_OK)
        return st;
    uint64_t n = z->index.shape[0] - 1, total = offs[n];
    uint8_t *data = malloc(total ? total : 1);
    if (!data) {
        free(offs);
        return ZF_ERR_NOMEM;
    }
    if (total) {
        zf_chunk_repr r;
        zf_repr_bytes(&r, (size_t)total);
        if ((st = zf_chain_decode(&z->data_chain, &r, denc, dlen, data, err)) != ZF_OK &&
            st != ZF_ERR_NOMEM)
            zf_err_prefix(err, NAME ": data");
    }
    /* numcodecs' layout: count, then (length, bytes) per element; the lengths are below 2 GiB
     * (total is) and so is n (a chunk of text has fewer than 2^31 elements). */
    uint64_t first = offs[0], laid = 4 + 4 * n + (total - first);
    uint8_t *v = st == ZF_OK ? malloc((size_t)laid) : NULL;
    if (st == ZF_OK && !v)
        st = ZF_ERR_NOMEM;
    if (st == ZF_OK && n > INT32_MAX)
        st = zf_fail(err, ZF_ERR_CORRUPT, NAME ": %llu elements", (unsigned long long)n);
    if (st == ZF_OK) {
        size_t p = 4;
        put_le32(v, (uint32_t)n);
        for (uint64_t j = 0; j < n; j++) {
            uint64_t len = offs[j + 1] - offs[j];
            put_le32(v + p, (uint32_t)len);
            memcpy(v + p + 4, data + offs[j], (size_t)len);
            p += 4 + (size_t)len;
        }
        st = zf_vlen_decode_text(c->ops->name, decoded, v, p, z->utf8, out, err);
    }
    free(v);
    free(data);
    free(offs);
    return st;
}

static zf_status zv_fill_text(const zf_codec *c, yajl_val fill, char **line, size_t *len,
                              zf_err *err)
{
    const zvlen *z = (const zvlen *)c;
    return z->like->ops->fill_text(z->like, fill, line, len, err);
}

static void zv_destroy(zf_codec *c)
{
    zvlen *z = (zvlen *)c;
    zf_codec_free(z->like);
    zf_chain_clear(&z->index_chain);
    zf_chain_clear(&z->data_chain);
    free(z);
}

#define ZV_OPS(opname)                                                                         \
    {                                                                                          \
        .name = opname, .kind = ZF_CODEC_ARRAY_TO_BYTES, .resolve = zf_vlen_resolve,           \
        .decode = zf_vlen_decode, .destroy = zv_destroy, .decode_text = zv_decode_text,        \
        .fill_text = zv_fill_text,                                                             \
    }
static const zf_codec_ops zv_string_ops = ZV_OPS(NAME);
static const zf_codec_ops zv_bytes_ops = ZV_OPS(NAME " (vlen-bytes)");

/* The configuration's string `key` as one of two values: *second true for b. */
static zf_status choice(yajl_val cfg, const char *key, bool required, const char *a,
                        const char *b, bool *second, zf_err *err)
{
    const char *s;
    zf_status st = zf_cfg_string(cfg, NAME, key, required, &s, err);
    if (st != ZF_OK || !s)
        return st;
    if (strcmp(s, a) && strcmp(s, b))
        return zf_fail(err, ZF_ERR_INVALID, NAME ": \"%s\": expected \"%s\" or \"%s\"", key, a,
                       b);
    *second = strcmp(s, b) == 0;
    return ZF_OK;
}

/* The data chain: "bytes" and bytes -> bytes codecs only (built for 1 byte, used for any). */
static zf_status data_chain_ok(const zf_codec_chain *ch, zf_err *err)
{
    for (size_t i = 0; i < ch->n; i++) {
        const zf_codec_ops *o = ch->codecs[i]->ops;
        if (o->kind == ZF_CODEC_BYTES_TO_BYTES ||
            (o->kind == ZF_CODEC_ARRAY_TO_BYTES && strcmp(o->name, "bytes") == 0))
            continue;
        return zf_fail(err, ZF_ERR_UNSUPPORTED,
                       NAME ": \"data_codecs\": codec \"%s\" is not supported there (only "
                            "\"bytes\" and bytes -> bytes codecs)",
                       o->name);
    }
    return ZF_OK;
}

zf_status zf_codec_zarrs_vlen_new(yajl_val cfg, const zf_chunk_repr *decoded, unsigned depth,
                                  zf_codec **out, zf_err *err)
{
    static const char *const keys[] = {"index_codecs", "data_codecs", "index_data_type",
                                       "index_location", NULL};
    bool utf8, u64 = false, at_end = false;
    zf_status st;
    *out = NULL;
    if ((st = zf_v3_check_keys(cfg, NAME, keys, err)) ||
        (st = choice(cfg, "index_data_type", true, "uint32", "uint64", &u64, err)) ||
        (st = choice(cfg, "index_location", false, "start", "end", &at_end, err)) ||
        (st = zf_vlen_dtype_utf8(NAME, decoded, &utf8, err)))
        return st;
    yajl_val ic = zf_cfg_get(cfg, "index_codecs"), dc = zf_cfg_get(cfg, "data_codecs");
    if (!ic || !dc)
        return zf_fail(err, ZF_ERR_INVALID, NAME ": \"%s\": missing",
                       ic ? "data_codecs" : "index_codecs");
    uint64_t n = 1;
    for (unsigned d = 0; d < decoded->ndim; d++) {
        if (decoded->shape[d] && n > ((uint64_t)1 << 31) / decoded->shape[d])
            return zf_fail(err, ZF_ERR_UNSUPPORTED, NAME ": a chunk of more than 2^31 elements");
        n *= decoded->shape[d];
    }
    zvlen *z = zf_codec_alloc(sizeof *z, utf8 ? &zv_string_ops : &zv_bytes_ops);
    if (!z)
        return ZF_ERR_NOMEM;
    z->utf8 = utf8;
    z->at_end = at_end;
    zf_dtype idt = {.kind = 'u', .byteorder = '<', .itemsize = u64 ? 8 : 4};
    zf_repr_flat(&z->index, &idt, (size_t)n + 1);
    zf_chunk_repr one;
    zf_repr_bytes(&one, 1);
    const char *which = "index_codecs";
    st = zf_chain_from_v3_at(ic, ZF_CODECS_V3, &z->index, NULL, depth + 1, &z->index_chain, err);
    if (st == ZF_OK) {
        which = "data_codecs";
        st = zf_chain_from_v3_at(dc, ZF_CODECS_V3, &one, NULL, depth + 1, &z->data_chain, err);
    }
    if (st != ZF_OK)
        zf_err_prefix(err, NAME ": \"%s\"", which);
    if (st == ZF_OK)
        st = data_chain_ok(&z->data_chain, err);
    if (st == ZF_OK)
        st = utf8 ? zf_codec_vlen_utf8_new(NULL, &z->like, err)
                  : zf_codec_vlen_bytes_new(NULL, &z->like, err);
    if (st != ZF_OK) {
        zv_destroy(&z->base);
        return st;
    }
    *out = &z->base;
    return ZF_OK;
}
