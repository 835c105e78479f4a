/* packbits_v3.c — the zarr-extensions "packbits" codec (array -> bytes; codecs/packbits in the
 * zarr-extensions registry), as zarrs' optional codec uses it for its validity masks.
 * (packbits.c is numcodecs' packbits filter, a different format: MSB first, padding byte.)
 *
 * "Format and algorithm": each element is k = num_components * (last_bit - first_bit + 1) bits
 * (num_components 2 for complex types, else 1); element i occupies bits [i*k, (i+1)*k) of a bit
 * sequence, encoded byte j holding bits [8j, 8j+8) with bit 0 the least significant; the
 * sequence is padded with 0 bits to whole bytes; padding_encoding "first_byte" / "last_byte"
 * puts one byte with the number of padding bits before / after it ("none", the default, puts
 * nothing). A component is taken as its N-bit little-endian value (N = 1 for bool, else 8 x the
 * component's bytes) and bits first_bit..last_bit of it are stored; decoding shifts them back
 * to first_bit and sign-extends (signed integers) or zero-extends (everything else).
 * Data types: bool, (u)int8..64, float16/32/64, complex64/128 (those zarrfs has). */
#include <string.h>

#include "codec_impl.h"

typedef struct packbits_v3 {
    zf_codec base;
    int padding;       /* 0 none, 1 first_byte, 2 last_byte */
    long long first, last; /* -1: not given */
} packbits_v3;

/* Bits per component (N), components per element, and the stored bits b, for dt. */
static zf_status layout(const packbits_v3 *p, const zf_dtype *dt, unsigned *nbits,
                        unsigned *comps, unsigned *first, unsigned *b, zf_err *err)
{
    char ts[32];
    switch (dt->kind) {
    case 'b': *nbits = 1; *comps = 1; break;
    case 'i':
    case 'u':
    case 'f':
        *nbits = (unsigned)dt->itemsize * 8;
        *comps = 1;
        break;
    case 'c':
        *nbits = (unsigned)dt->itemsize * 4;
        *comps = 2;
        break;
    default:
        return zf_fail(err, ZF_ERR_UNSUPPORTED, "packbits: data type %s is not supported",
                       zf_dtype_str(dt, ts));
    }
    if (*nbits > 64 || *nbits == 0)
        return zf_fail(err, ZF_ERR_UNSUPPORTED, "packbits: data type %s is not supported",
                       zf_dtype_str(dt, ts));
    long long f = p->first < 0 ? 0 : p->first, l = p->last < 0 ? (long long)*nbits - 1 : p->last;
    if (l >= (long long)*nbits || f > l)
        return zf_fail(err, ZF_ERR_INVALID,
                       "packbits: \"first_bit\" %lld and \"last_bit\" %lld do not fit %u-bit "
                       "components of %s", f, l, *nbits, zf_dtype_str(dt, ts));
    *first = (unsigned)f;
    *b = (unsigned)(l - f + 1);
    return ZF_OK;
}

/* Elements, and the encoded size of n of them, for decoded (ZF_ERR_INVALID when too large). */
static zf_status sizes(const packbits_v3 *p, const zf_chunk_repr *decoded, size_t *n,
                       size_t *enc, unsigned *nbits, unsigned *comps, unsigned *first,
                       unsigned *b, zf_err *err)
{
    zf_status st = layout(p, &decoded->dtype, nbits, comps, first, b, err);
    if (st != ZF_OK)
        return st;
    size_t e = 1;
    for (unsigned i = 0; i < decoded->ndim; i++) {
        if (decoded->shape[i] && e > SIZE_MAX / 128 / decoded->shape[i])
            return zf_fail(err, ZF_ERR_INVALID, "packbits: array too large");
        e *= (size_t)decoded->shape[i];
    }
    if (decoded->nbytes != e * decoded->dtype.itemsize)
        return zf_fail(err, ZF_ERR_INVALID,
                       "packbits: %zu bytes do not hold the array's %zu elements",
                       decoded->nbytes, e);
    size_t bits = e * *comps * *b; /* < SIZE_MAX: e < SIZE_MAX / 128 */
    *n = e;
    *enc = bits / 8 + (bits % 8 != 0) + (p->padding != 0);
    return ZF_OK;
}

static zf_status pb_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                            zf_chunk_repr *encoded, zf_err *err)
{
    size_t n, enc;
    unsigned nbits, comps, first, b;
    zf_status st = sizes((const packbits_v3 *)c, decoded, &n, &enc, &nbits, &comps, &first, &b,
                         err);
    if (st == ZF_OK)
        zf_repr_bytes(encoded, enc);
    return st;
}

static uint64_t load_le(const uint8_t *p, unsigned nbytes)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < nbytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void store_le(uint8_t *p, unsigned nbytes, uint64_t v)
{
    for (unsigned i = 0; i < nbytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static zf_status pb_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                           size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    const packbits_v3 *p = (const packbits_v3 *)c;
    size_t n, enc;
    unsigned nbits, comps, first, b;
    zf_status st = sizes(p, decoded, &n, &enc, &nbits, &comps, &first, &b, err);
    if (st != ZF_OK)
        return st;
    if (out_len != decoded->nbytes)
        return zf_fail(err, ZF_ERR_INVALID, "packbits: output of %zu bytes, expected %zu",
                       out_len, decoded->nbytes);
    if (in_len != enc)
        return zf_fail(err, ZF_ERR_CORRUPT, "packbits: %zu bytes, expected %zu", in_len, enc);
    size_t bits = n * comps * b, pad = (8 - bits % 8) % 8;
    if (p->padding) {
        uint8_t said = p->padding == 1 ? in[0] : in[in_len - 1];
        if (said != pad)
            return zf_fail(err, ZF_ERR_CORRUPT, "packbits: the padding byte says %u bits, "
                           "expected %zu", said, pad);
        if (p->padding == 1)
            in++;
    }
    unsigned csize = nbits == 1 ? 1 : nbits / 8;
    if (b == nbits && csize * 8 == nbits) { /* whole components: the bytes as they are */
        memcpy(out, in, out_len);
        return ZF_OK;
    }
    bool sign = decoded->dtype.kind == 'i';
    size_t bit = 0;
    for (size_t i = 0; i < n * comps; i++) {
        uint64_t v = 0;
        for (unsigned j = 0; j < b; j++, bit++)
            v |= (uint64_t)((in[bit / 8] >> (bit % 8)) & 1) << j;
        v <<= first;
        unsigned top = first + b; /* bits above this are extension */
        if (sign && top < 64 && (v >> (top - 1) & 1))
            v |= ~(uint64_t)0 << top;
        store_le(out + i * csize, csize, v);
    }
    return ZF_OK;
}

static zf_status pb_encode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                           size_t in_len, unsigned flags, uint8_t **out, size_t *out_len,
                           zf_err *err)
{
    (void)flags;
    const packbits_v3 *p = (const packbits_v3 *)c;
    size_t n, enc;
    unsigned nbits, comps, first, b;
    zf_status st = sizes(p, decoded, &n, &enc, &nbits, &comps, &first, &b, err);
    if (st != ZF_OK)
        return st;
    if (in_len != decoded->nbytes)
        return zf_fail(err, ZF_ERR_INVALID, "packbits: input of %zu bytes, expected %zu",
                       in_len, decoded->nbytes);
    uint8_t *o = zf_enc_alloc(enc);
    if (!o)
        return ZF_ERR_NOMEM;
    memset(o, 0, enc);
    size_t bits = n * comps * b, pad = (8 - bits % 8) % 8;
    uint8_t *q = o + (p->padding == 1);
    unsigned csize = nbits == 1 ? 1 : nbits / 8;
    size_t bit = 0;
    for (size_t i = 0; i < n * comps; i++) {
        uint64_t v = load_le(in + i * csize, csize);
        if (nbits == 1)
            v = v != 0; /* any non-zero byte is true */
        v >>= first;
        for (unsigned j = 0; j < b; j++, bit++)
            q[bit / 8] |= (uint8_t)(((v >> j) & 1) << (bit % 8));
    }
    if (p->padding)
        o[p->padding == 1 ? 0 : enc - 1] = (uint8_t)pad;
    *out = o;
    *out_len = enc;
    return ZF_OK;
}

static const zf_codec_ops packbits_v3_ops = {
    .name = "packbits",
    .kind = ZF_CODEC_ARRAY_TO_BYTES,
    .resolve = pb_resolve,
    .decode = pb_decode,
    .destroy = zf_codec_destroy_plain,
    .encode = pb_encode,
};

zf_status zf_codec_packbits_v3_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    static const char *const keys[] = {"padding_encoding", "first_bit", "last_bit", NULL};
    zf_status st = zf_v3_check_keys(cfg, "packbits", keys, err);
    if (st != ZF_OK)
        return st;
    const char *pad = NULL;
    if ((st = zf_cfg_string(cfg, "packbits", "padding_encoding", false, &pad, err)) != ZF_OK)
        return st;
    int padding = 0;
    if (pad && strcmp(pad, "first_byte") == 0)
        padding = 1;
    else if (pad && strcmp(pad, "last_byte") == 0)
        padding = 2;
    else if (pad && strcmp(pad, "none") != 0)
        return zf_fail(err, ZF_ERR_INVALID, "packbits: \"padding_encoding\": expected "
                       "\"none\", \"first_byte\" or \"last_byte\"");
    long long first, last;
    if ((st = zf_cfg_int(cfg, "packbits", "first_bit", false, true, -1, 0, 63, &first, err)) ||
        (st = zf_cfg_int(cfg, "packbits", "last_bit", false, true, -1, 0, 63, &last, err)))
        return st;
    packbits_v3 *p = zf_codec_alloc(sizeof *p, &packbits_v3_ops);
    if (!p)
        return ZF_ERR_NOMEM;
    p->padding = padding;
    p->first = first;
    p->last = last;
    *out = &p->base;
    return ZF_OK;
}
