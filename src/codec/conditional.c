/* conditional.c — the zarr-extensions "conditional" codec (bytes -> bytes; registry document
 * codecs/conditional/README.md, "Detailed Description").
 *
 * Configuration: "codecs", a list of Zarr v3 codecs that "MUST all be bytes -> bytes codecs"
 * (required), and "header_bits" (optional): a multiple of 8, at least len(codecs), by default
 * ceil(len(codecs) / 8) * 8. Every encoded chunk starts with a header of header_bits / 8 bytes:
 * a bitmask in little-endian bit order, bit i (byte i / 8, bit i % 8 counted from the least
 * significant) set when codecs[i] was applied; the reserved bits from len(codecs) on are 0.
 * Decoding reads the header and runs the codecs whose bit is set in reverse order over the rest
 * (zf_chain_decode on the chain of those codecs: the wrapped list is an ordinary codec chain).
 * A set reserved bit names a codec this metadata does not have: ZF_ERR_CORRUPT.
 *
 * Encoding ("the writing application determines which of the nested codecs to apply"): zarrfs
 * applies the document's "compress_if_smaller" heuristic to the list as a whole: the chunk is
 * encoded with every codec, and that is stored (all bits set) when it is smaller than the
 * chunk's bytes; otherwise the bytes are stored as they are (no bit set). So a chunk never
 * takes more than its bytes plus the header, and a shuffle before a compressor is kept with
 * it. (Other members of an encoded codec object are not written: the header is the only
 * per-chunk state.) Unknown configuration keys are invalid. */
#include <stdlib.h>
#include <string.h>

#include "codec_impl.h"

#define NAME "conditional"

typedef struct conditional {
    zf_codec base;
    zf_codec_chain inner; /* the wrapped codecs, encode order */
    size_t header;        /* header bytes */
} conditional;

static zf_status cond_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                              zf_chunk_repr *encoded, zf_err *err)
{
    const conditional *d = (const conditional *)c;
    zf_chunk_repr stack[8], *reprs = stack;
    if (d->inner.n + 1 > 8 && !(reprs = malloc((d->inner.n + 1) * sizeof *reprs)))
        return ZF_ERR_NOMEM;
    zf_status st = zf_chain_resolve(&d->inner, decoded, reprs, err); /* each fits the input */
    if (reprs != stack)
        free(reprs);
    if (st != ZF_OK)
        return st;
    zf_repr_bytes(encoded, ZF_SIZE_UNKNOWN); /* which codecs ran, only the header says */
    return ZF_OK;
}

/* The header of in[0..in_len): the chain of the codecs it enables (borrowed pointers, free
 * sub->codecs only). Errors: ZF_ERR_CORRUPT (too short; a reserved bit set), ZF_ERR_NOMEM. */
static zf_status enabled(const conditional *d, const uint8_t *in, size_t in_len,
                         zf_codec_chain *sub, zf_err *err)
{
    sub->n = 0;
    sub->codecs = NULL;
    if (in_len < d->header)
        return zf_fail(err, ZF_ERR_CORRUPT, NAME ": %zu bytes, shorter than its %zu-byte header",
                       in_len, d->header);
    for (size_t bit = d->inner.n; bit < 8 * d->header; bit++)
        if (in[bit / 8] >> (bit % 8) & 1)
            return zf_fail(err, ZF_ERR_CORRUPT,
                           NAME ": header bit %zu is set, but there are only %zu codecs", bit,
                           d->inner.n);
    if (d->inner.n && !(sub->codecs = malloc(d->inner.n * sizeof *sub->codecs)))
        return ZF_ERR_NOMEM;
    for (size_t i = 0; i < d->inner.n; i++)
        if (in[i / 8] >> (i % 8) & 1)
            sub->codecs[sub->n++] = d->inner.codecs[i];
    return ZF_OK;
}

static zf_status cond_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                             size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    const conditional *d = (const conditional *)c;
    zf_codec_chain sub;
    zf_status st = enabled(d, in, in_len, &sub, err);
    if (st != ZF_OK)
        return st;
    zf_chunk_repr r;
    zf_repr_bytes(&r, out_len);
    (void)decoded;
    st = zf_chain_decode(&sub, &r, in + d->header, in_len - d->header, out, err);
    free(sub.codecs);
    if (st != ZF_OK && sub.n == 0)
        zf_err_prefix(err, NAME);
    return st;
}

/* The decoded size, when no codec is enabled (else only decoding tells: decode_bounded). */
static zf_status cond_decoded_size(const zf_codec *c, const uint8_t *in, size_t in_len,
                                   size_t *out_len, zf_err *err)
{
    const conditional *d = (const conditional *)c;
    zf_codec_chain sub;
    zf_status st = enabled(d, in, in_len, &sub, err);
    if (st != ZF_OK)
        return st;
    size_t n = sub.n;
    free(sub.codecs);
    if (n)
        return zf_fail(err, ZF_ERR_UNSUPPORTED, NAME ": the decoded size is not stated");
    *out_len = in_len - d->header;
    return ZF_OK;
}

static zf_status cond_decode_bounded(const zf_codec *c, const uint8_t *in, size_t in_len,
                                     uint8_t *out, size_t cap, size_t *produced, zf_err *err)
{
    const conditional *d = (const conditional *)c;
    zf_codec_chain sub;
    *produced = 0;
    zf_status st = enabled(d, in, in_len, &sub, err);
    if (st != ZF_OK)
        return st;
    st = zf_chain_decode_bounded(&sub, in + d->header, in_len - d->header, out, cap, produced,
                                 err);
    free(sub.codecs);
    return st;
}

static zf_status cond_encode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                             size_t in_len, unsigned flags, uint8_t **out, size_t *out_len,
                             zf_err *err)
{
    const conditional *d = (const conditional *)c;
    uint8_t *enc = NULL;
    size_t enc_len = 0;
    zf_status st = ZF_OK;
    if (d->inner.n) {
        zf_chunk_repr r = *decoded;
        r.nbytes = in_len;
        if ((st = zf_chain_encode(&d->inner, &r, in, flags, &enc, &enc_len, err)) != ZF_OK)
            return st;
    }
    bool all = enc && enc_len < in_len; /* compress_if_smaller, for the whole list */
    const uint8_t *body = all ? enc : in;
    size_t body_len = all ? enc_len : in_len;
    uint8_t *o = zf_enc_alloc(d->header + body_len);
    if (!o) {
        free(enc);
        return ZF_ERR_NOMEM;
    }
    memset(o, 0, d->header);
    for (size_t i = 0; all && i < d->inner.n; i++)
        o[i / 8] |= (uint8_t)(1u << (i % 8));
    if (body_len)
        memcpy(o + d->header, body, body_len);
    free(enc);
    *out = o;
    *out_len = d->header + body_len;
    return ZF_OK;
}

static void cond_destroy(zf_codec *c)
{
    conditional *d = (conditional *)c;
    zf_chain_clear(&d->inner);
    free(d);
}

static const zf_codec_ops conditional_ops = {
    .name = NAME,
    .kind = ZF_CODEC_BYTES_TO_BYTES,
    .resolve = cond_resolve,
    .decode = cond_decode,
    .destroy = cond_destroy,
    .decoded_size = cond_decoded_size,
    .encode = cond_encode,
    .decode_bounded = cond_decode_bounded,
};

zf_status zf_codec_conditional_new(yajl_val cfg, const zf_chunk_repr *decoded, unsigned depth,
                                   zf_codec **out, zf_err *err)
{
    static const char *const keys[] = {"codecs", "header_bits", NULL};
    *out = NULL;
    zf_status st = zf_v3_check_keys(cfg, NAME, keys, err);
    if (st != ZF_OK)
        return st;
    yajl_val list = zf_cfg_get(cfg, "codecs");
    if (!list)
        return zf_fail(err, ZF_ERR_INVALID, NAME ": \"codecs\": missing");
    if (!YAJL_IS_ARRAY(list))
        return zf_fail(err, ZF_ERR_INVALID, NAME ": \"codecs\": expected a list of codecs");
    size_t n = list->u.array.len;
    long long bits;
    long long def = (long long)((n + 7) / 8 * 8);
    if ((st = zf_cfg_int(cfg, NAME, "header_bits", false, false, def, 0, 1 << 20, &bits, err)))
        return st;
    if (bits % 8 || (size_t)bits < n)
        return zf_fail(err, ZF_ERR_INVALID,
                       NAME ": \"header_bits\": %lld is not a multiple of 8 at least the number "
                            "of codecs (%zu)",
                       bits, n);
    conditional *d = zf_codec_alloc(sizeof *d, &conditional_ops);
    if (!d)
        return ZF_ERR_NOMEM;
    d->header = (size_t)bits / 8;
    zf_chunk_repr r = *decoded;
    if ((st = zf_chain_from_v3_bytes_at(list, &r, depth + 1, &d->inner, err)) != ZF_OK) {
        zf_err_prefix(err, NAME);
        free(d);
        return st;
    }
    *out = &d->base;
    return ZF_OK;
}
