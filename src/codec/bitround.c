/* bitround.c — numcodecs "bitround" (also v3 "numcodecs.bitround") and zarrs' v3 "bitround": a
 * lossy filter whose encoding rounds values to `keepbits` significant bits in place; decoding
 * is the identity.
 *
 * numcodecs: the array (float16/32/64, either byte order) is viewed as signed integers b of its
 * width; with m = mantissa bits - keepbits, b += ((b >> m) & 1) + (1 << (m - 1)) - 1, then
 * b &= -1 << m (round to nearest, ties to even, carrying into the exponent; integer addition
 * wraps). keepbits equal to the mantissa bits leaves the data as is, more is an error; other
 * data types are an error.
 *
 * zarrs (zarrs_data_type codec_traits/bitround.rs, zarr-extensions codecs/bitround): the same
 * rounding on the element's bits read as an *unsigned* integer of its width, the addition
 * saturating at the width's maximum instead of wrapping (which only matters for NaNs with
 * every high bit set), with m = maxbits - keepbits where maxbits is the mantissa width for
 * float16/32/64 (10, 23, 52; each half of a complex64/128 as float32/64), and for integers
 * (int/uint 8-64 and datetime64/timedelta64 as int64) the position of the most significant
 * set bit of the unsigned value (so a negative integer keeps its top keepbits bits, and 0
 * stays 0). keepbits >= maxbits leaves the value as is. Other data types are an error. */
#include <limits.h>
#include <string.h>

#include "codec_impl.h"

typedef struct bitround_codec {
    zf_codec base;
    long long keepbits; /* for encoding */
    bool zarrs;         /* zarrs' rules (else numcodecs') */
} bitround_codec;

static zf_status bitround_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                                  zf_chunk_repr *encoded, zf_err *err)
{
    (void)c;
    (void)err;
    *encoded = *decoded;
    return ZF_OK;
}

static zf_status bitround_size(const zf_codec *c, const uint8_t *in, size_t in_len,
                               size_t *out_len, zf_err *err)
{
    (void)c;
    (void)in;
    (void)err;
    *out_len = in_len;
    return ZF_OK;
}

static zf_status bitround_decode(const zf_codec *c, const zf_chunk_repr *decoded,
                                 const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len,
                                 zf_err *err)
{
    (void)c;
    (void)decoded;
    if (in_len != out_len)
        return zf_fail(err, ZF_ERR_CORRUPT, "bitround: %zu bytes, expected %zu", in_len,
                       out_len);
    if (out_len)
        memcpy(out, in, out_len);
    return ZF_OK;
}

static uint64_t load_uint(const uint8_t *p, size_t w, bool big)
{
    uint64_t v = 0;
    for (size_t k = 0; k < w; k++)
        v |= (uint64_t)p[big ? w - 1 - k : k] << (8 * k);
    return v;
}

static void store_uint(uint8_t *p, size_t w, bool big, uint64_t v)
{
    for (size_t k = 0; k < w; k++)
        p[big ? w - 1 - k : k] = (uint8_t)(v >> (8 * k));
}

/* zarrs' round_bits: keep `keep` of the low `maxbits` bits of a w-byte value v, in Rust's
 * arithmetic on the w-byte unsigned type as zarrs ships it (release builds: a shift by the
 * full width, for keepbits 0 of an integer with its top bit set, shifts by 0). */
static uint64_t round_zarrs(uint64_t v, size_t w, unsigned maxbits, long long keep)
{
    if (keep >= (long long)maxbits)
        return v;
    unsigned m = maxbits - (unsigned)keep, sh = m % (unsigned)(8 * w);
    uint64_t max = w == 8 ? UINT64_MAX : (UINT64_C(1) << (8 * w)) - 1;
    uint64_t add = ((v >> sh) & 1) + ((UINT64_C(1) << (m - 1)) - 1);
    v = v > max - add ? max : v + add;
    return v & ((max >> sh) << sh);
}

/* A copy of in[0..in_len) to round in place: whole w-byte elements, else ZF_ERR_INVALID. */
static zf_status copy_elements(const uint8_t *in, size_t in_len, size_t w, uint8_t **out,
                               zf_err *err)
{
    if (in_len % w)
        return zf_fail(err, ZF_ERR_INVALID,
                       "bitround: %zu bytes is not a whole number of %zu-byte elements", in_len,
                       w);
    if (!(*out = zf_enc_alloc(in_len)))
        return ZF_ERR_NOMEM;
    if (in_len)
        memcpy(*out, in, in_len);
    return ZF_OK;
}

static zf_status bitround_encode_zarrs(const bitround_codec *b, const zf_dtype *dt,
                                       const uint8_t *in, size_t in_len, uint8_t **out,
                                       size_t *out_len, zf_err *err)
{
    size_t w = dt->itemsize, unit = w;
    unsigned mantissa = 0; /* 0: an integer, rounded from its most significant set bit */
    bool ok = false;
    switch (dt->kind) {
    case 'i':
    case 'u': ok = w == 1 || w == 2 || w == 4 || w == 8; break;
    case 'm':
    case 'M': ok = w == 8; break;
    case 'c': /* each component as a float */
    case 'f':
        unit = dt->kind == 'c' ? w / 2 : w;
        ok = unit == 2 || unit == 4 || unit == 8;
        mantissa = unit == 2 ? 10 : unit == 4 ? 23 : 52;
        break;
    default: break;
    }
    if (!ok) {
        char ts[32];
        return zf_fail(err, ZF_ERR_INVALID, "bitround: data type %s cannot be bit-rounded",
                       zf_dtype_str(dt, ts));
    }
    uint8_t *o;
    zf_status st = copy_elements(in, in_len, w, &o, err);
    if (st != ZF_OK)
        return st;
    bool big = dt->byteorder == '>';
    for (size_t i = 0; i < in_len / unit; i++) {
        uint8_t *p = o + i * unit;
        uint64_t v = load_uint(p, unit, big);
        unsigned maxbits = mantissa;
        if (!mantissa)
            maxbits = v ? 64 - (unsigned)__builtin_clzll(v) : 0;
        store_uint(p, unit, big, round_zarrs(v, unit, maxbits, b->keepbits));
    }
    *out = o;
    *out_len = in_len;
    return ZF_OK;
}

static zf_status bitround_encode(const zf_codec *c, const zf_chunk_repr *decoded,
                                 const uint8_t *in, size_t in_len, unsigned flags, uint8_t **out,
                                 size_t *out_len, zf_err *err)
{
    (void)flags;
    const bitround_codec *b = (const bitround_codec *)c;
    const zf_dtype *dt = &decoded->dtype;
    if (b->zarrs)
        return bitround_encode_zarrs(b, dt, in, in_len, out, out_len, err);
    size_t w = dt->itemsize;
    if (dt->kind != 'f' || (w != 2 && w != 4 && w != 8)) {
        char ts[32];
        return zf_fail(err, ZF_ERR_INVALID,
                       "bitround: only float arrays (16-64 bit) can be bit-rounded, not %s",
                       zf_dtype_str(dt, ts));
    }
    int bits = w == 2 ? 10 : w == 4 ? 23 : 52;
    if (b->keepbits > bits)
        return zf_fail(err, ZF_ERR_INVALID,
                       "bitround: \"keepbits\": %lld is too large for float%zu (at most %d)",
                       b->keepbits, w * 8, bits);
    uint8_t *o;
    zf_status st = copy_elements(in, in_len, w, &o, err);
    if (st != ZF_OK)
        return st;
    if (b->keepbits < bits) {
        unsigned m = (unsigned)(bits - b->keepbits);
        uint64_t width_mask = w == 8 ? UINT64_MAX : (UINT64_C(1) << (8 * w)) - 1;
        uint64_t mask = (UINT64_MAX << m) & width_mask;
        uint64_t half_quantum1 = (UINT64_C(1) << (m - 1)) - 1;
        bool big = dt->byteorder == '>';
        for (size_t i = 0; i < in_len / w; i++) {
            uint8_t *p = o + i * w;
            uint64_t v = load_uint(p, w, big);
            v = (v + ((v >> m) & 1) + half_quantum1) & mask; /* wraps at the width: masked */
            store_uint(p, w, big, v);
        }
    }
    *out = o;
    *out_len = in_len;
    return ZF_OK;
}

static const zf_codec_ops bitround_ops = {
    .name = "bitround",
    .kind = ZF_CODEC_ARRAY_TO_ARRAY,
    .resolve = bitround_resolve,
    .decode = bitround_decode,
    .destroy = zf_codec_destroy_plain,
    .decoded_size = bitround_size,
    .encode = bitround_encode,
};

static zf_status bitround_make(yajl_val cfg, long long max, bool zarrs, zf_codec **out,
                               zf_err *err)
{
    long long keepbits;
    zf_status st =
        zf_cfg_int(cfg, "bitround", "keepbits", true, false, 0, 0, max, &keepbits, err);
    if (st != ZF_OK)
        return st;
    bitround_codec *b = zf_codec_alloc(sizeof *b, &bitround_ops);
    if (!b)
        return ZF_ERR_NOMEM;
    b->keepbits = keepbits;
    b->zarrs = zarrs;
    *out = &b->base;
    return ZF_OK;
}

zf_status zf_codec_bitround_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    return bitround_make(cfg, INT_MAX, false, out, err);
}

zf_status zf_codec_bitround_zarrs_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    /* zarrs' configuration: {"keepbits": u32}, nothing else. */
    static const char *const keys[] = {"keepbits", NULL};
    zf_status st = zf_v3_check_keys(cfg, "bitround", keys, err);
    if (st != ZF_OK)
        return st;
    return bitround_make(cfg, UINT32_MAX, true, out, err);
}
