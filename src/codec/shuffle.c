/* shuffle.c — numcodecs "shuffle" (its own byte shuffle, not blosc's): byte j of every element
 * is stored together, element by element. elementsize <= 1 is the identity; a buffer that is
 * not a whole number of elements is refused, as numcodecs refuses it. */
#include <limits.h>
#include <string.h>

#include "codec_impl.h"

typedef struct shuffle_codec {
    zf_codec base;
    size_t elementsize;
} shuffle_codec;

static zf_status shuffle_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                                 zf_chunk_repr *encoded, zf_err *err)
{
    const shuffle_codec *s = (const shuffle_codec *)c;
    if (s->elementsize > 1 && decoded->nbytes != ZF_SIZE_UNKNOWN &&
        decoded->nbytes % s->elementsize)
        return zf_fail(err, ZF_ERR_INVALID,
                       "shuffle: %zu bytes is not a whole number of %zu-byte elements",
                       decoded->nbytes, s->elementsize);
    *encoded = *decoded;
    return ZF_OK;
}

static zf_status shuffle_size(const zf_codec *c, const uint8_t *in, size_t in_len,
                              size_t *out_len, zf_err *err)
{
    (void)c;
    (void)in;
    (void)err;
    *out_len = in_len;
    return ZF_OK;
}

#define UNSHUFFLE(ES)                                                                             \
    for (size_t i = 0; i < (ES); i++)                                                             \
        for (size_t b = 0; b < count; b++)                                                        \
            out[b * (ES) + i] = in[i * count + b];

static zf_status shuffle_decode(const zf_codec *c, const zf_chunk_repr *decoded,
                                const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len,
                                zf_err *err)
{
    (void)decoded;
    const shuffle_codec *s = (const shuffle_codec *)c;
    size_t es = s->elementsize;
    if (in_len != out_len)
        return zf_fail(err, ZF_ERR_CORRUPT, "shuffle: %zu bytes, expected %zu", in_len, out_len);
    if (es <= 1) {
        if (out_len)
            memcpy(out, in, out_len);
        return ZF_OK;
    }
    if (out_len % es)
        return zf_fail(err, ZF_ERR_CORRUPT,
                       "shuffle: %zu bytes is not a whole number of %zu-byte elements", out_len,
                       es);
    size_t count = out_len / es;
    switch (es) {
    case 2: UNSHUFFLE(2); break;
    case 4: UNSHUFFLE(4); break;
    case 8: UNSHUFFLE(8); break;
    default: UNSHUFFLE(es); break;
    }
    return ZF_OK;
}

#define SHUFFLE(ES)                                                                               \
    for (size_t i = 0; i < count; i++)                                                            \
        for (size_t b = 0; b < (ES); b++)                                                         \
            o[b * count + i] = in[i * (ES) + b];

/* numcodecs' _doShuffle: byte b of element i goes to b * count + i. */
static zf_status shuffle_encode(const zf_codec *c, const zf_chunk_repr *decoded,
                                const uint8_t *in, size_t in_len, unsigned flags, uint8_t **out,
                                size_t *out_len, zf_err *err)
{
    (void)decoded;
    (void)flags;
    const shuffle_codec *s = (const shuffle_codec *)c;
    size_t es = s->elementsize;
    if (es > 1 && in_len % es)
        return zf_fail(err, ZF_ERR_INVALID,
                       "shuffle: %zu bytes is not a whole number of %zu-byte elements", in_len,
                       es);
    uint8_t *o = zf_enc_alloc(in_len);
    if (!o)
        return ZF_ERR_NOMEM;
    if (es <= 1) {
        if (in_len)
            memcpy(o, in, in_len);
    } else {
        size_t count = in_len / es;
        switch (es) {
        case 2: SHUFFLE(2); break;
        case 4: SHUFFLE(4); break;
        case 8: SHUFFLE(8); break;
        default: SHUFFLE(es); break;
        }
    }
    *out = o;
    *out_len = in_len;
    return ZF_OK;
}

static const zf_codec_ops shuffle_ops = {
    .name = "shuffle",
    .kind = ZF_CODEC_ARRAY_TO_ARRAY,
    .resolve = shuffle_resolve,
    .decode = shuffle_decode,
    .destroy = zf_codec_destroy_plain,
    .decoded_size = shuffle_size,
    .encode = shuffle_encode,
};

zf_status zf_codec_shuffle_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    long long es;
    zf_status st = zf_cfg_int(cfg, "shuffle", "elementsize", false, false, 4, LLONG_MIN,
                              1LL << 31, &es, err);
    if (st != ZF_OK)
        return st;
    shuffle_codec *s = zf_codec_alloc(sizeof *s, &shuffle_ops);
    if (!s)
        return ZF_ERR_NOMEM;
    s->elementsize = es < 1 ? 1 : (size_t)es;
    *out = &s->base;
    return ZF_OK;
}
