/* zfp.c — the zfp codecs, through libzfp (array -> bytes):
 *
 * - "zfp" of the zarr-extensions registry (codecs/zfp; zarrs' names "zarrs.zfp" and
 *   https://codec.zarrs.dev/array_to_bytes/zfp): a bare zfp stream, no header; the compression
 *   parameters come from the configuration {"mode": "reversible" | "expert" | "fixed_rate" |
 *   "fixed_precision" | "fixed_accuracy", ...}, set exactly as zarrs sets them (zarrs' zfp
 *   codec, zfp_stream.rs): fixed_rate calls zfp_stream_set_rate(rate, type, 3, 0) — dims 3
 *   whatever the chunk's dimensionality —, fixed_accuracy is refused for integer types.
 * - numcodecs' "zfpy" (v2 id, v3 "numcodecs.zfpy", zarrs'
 *   https://codec.zarrs.dev/array_to_bytes/zfpy): zfp's full header (zfp_write_header with
 *   ZFP_HEADER_FULL: magic, field type and sizes, compression mode) then the stream, as
 *   zfpy.compress_numpy writes it for numcodecs. Decoding takes the parameters and the field
 *   from the header; encoding does what compress_numpy does with numcodecs' keyword for the
 *   mode (2: rate, 3: precision, 4: tolerance): the first of tolerance, rate, precision that is
 *   >= 0 picks fixed accuracy, fixed rate (zfp_stream_set_rate(rate, zfp_type_none, ndim, 0))
 *   or fixed precision, else reversible; mode 5 is reversible (zarrs).
 *
 * A chunk of shape [.., nz, ny, nx] (C order) is zfp's field (nx, ny, nz, nw) (x fastest); a
 * 0-d chunk is a 1-D field of one value. zfp has 1 to 4 dimensions: more are refused. Types:
 * float32, float64, int32, int64 natively; as zarrs promotes them (zfp_array.rs): int8/int16
 * as int32 shifted left 23/15 bits, uint8/uint16 as int32 after subtracting 0x80/0x8000 and
 * shifting, uint32/uint64 as int32/int64 clamped to their maximum, datetime64/timedelta64 as
 * int64; demotion shifts back and clamps. Other types (float16, bool, complex, ...) and
 * big-endian elements are refused.
 *
 * Hostile input: libzfp's bit stream reads are not bounds-checked. Decoding therefore copies the
 * input into a zeroed scratch buffer with ZFP_PAD bytes of slack and decodes block by block with
 * zfp's low-level API in zfp_decompress's order, checking before each block that the stream has
 * not gone past the input: one block never advances the stream by more than 32,768 + 64 *
 * (2 * 256 + 1) + 32 bits (a minbits skip, or 64 bit planes of a 4-D block and its exponent), so
 * no read leaves the scratch buffer. A stream that needed bits past the input is ZF_ERR_CORRUPT.
 * A zfpy header must describe the chunk's element count and zfp type. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <zfp.h>

#include "codec_impl.h"

/* Scratch slack past the input: at least one block's largest advance (see above) plus a word. */
#define ZFP_PAD ((size_t)16384)
/* The largest minbits/maxbits a zfp header can state (15-bit fields plus one), and the bound
 * zarrfs puts on configured block sizes. */
#define ZFP_MAX_BLOCK_BITS 32768u
/* minexp as the long header form stores it (15 bits, offset 16495). */
#define ZFP_MINEXP_LO (-16495)
#define ZFP_MINEXP_HI (32767 - 16495)

typedef enum zmode { ZM_REVERSIBLE, ZM_EXPERT, ZM_RATE, ZM_PRECISION, ZM_ACCURACY } zmode;

static const char *const mode_names[] = {"reversible", "expert", "fixed_rate", "fixed_precision",
                                         "fixed_accuracy"};

typedef struct zfp_codec {
    zf_codec base;
    bool header; /* zfpy: zfp's full header before the stream */
    zmode mode;
    double rate, tolerance;
    unsigned precision, minbits, maxbits, maxprec;
    int minexp;
} zfp_codec;

/* How the chunk's elements are given to zfp. */
typedef enum zenc { E_I8, E_I16, E_I32, E_I64, E_U8, E_U16, E_U32, E_U64, E_F32, E_F64 } zenc;

typedef struct zshape {
    zenc enc;
    zfp_type type;
    unsigned dims;
    size_t n[4];   /* nx, ny, nz, nw */
    size_t count;  /* elements */
} zshape;

static const char *cname(const zf_codec *c)
{
    return c->ops->name;
}

static size_t ztype_size(zfp_type t)
{
    return t == zfp_type_int32 || t == zfp_type_float ? 4 : 8;
}

static const char *ztype_name(zfp_type t)
{
    switch (t) {
    case zfp_type_int32: return "int32";
    case zfp_type_int64: return "int64";
    case zfp_type_float: return "float32";
    case zfp_type_double: return "float64";
    default: return "none";
    }
}

/* The zfp view of a chunk of representation r. Errors: ZF_ERR_UNSUPPORTED (type, byte order,
 * dimensions), ZF_ERR_INVALID (fixed_accuracy of integers for "zfp", as zarrs). */
static zf_status shape_of(const zf_codec *c, const zf_chunk_repr *r, zshape *z, zf_err *err)
{
    const zfp_codec *zc = (const zfp_codec *)c;
    const zf_dtype *dt = &r->dtype;
    char buf[32];
    memset(z, 0, sizeof *z);
    bool ok = true;
    switch (dt->kind) {
    case 'f':
        ok = dt->itemsize == 4 || dt->itemsize == 8;
        z->enc = dt->itemsize == 4 ? E_F32 : E_F64;
        break;
    case 'i':
        z->enc = dt->itemsize == 1 ? E_I8 : dt->itemsize == 2 ? E_I16 : dt->itemsize == 4 ? E_I32 : E_I64;
        break;
    case 'u':
        z->enc = dt->itemsize == 1 ? E_U8 : dt->itemsize == 2 ? E_U16 : dt->itemsize == 4 ? E_U32 : E_U64;
        break;
    case 'M':
    case 'm':
        ok = dt->itemsize == 8;
        z->enc = E_I64;
        break;
    default: ok = false;
    }
    if (!ok)
        return zf_fail(err, ZF_ERR_UNSUPPORTED,
                       "%s: data type %s is not supported (zfp takes float32, float64 and "
                       "integers of 8 to 64 bits)",
                       cname(c), zf_dtype_str(dt, buf));
    if (dt->itemsize > 1 && dt->byteorder == '>')
        return zf_fail(err, ZF_ERR_UNSUPPORTED,
                       "%s: data type %s: big-endian elements are not supported", cname(c),
                       zf_dtype_str(dt, buf));
    z->type = z->enc == E_F32 ? zfp_type_float : z->enc == E_F64 ? zfp_type_double
              : (z->enc == E_I64 || z->enc == E_U64) ? zfp_type_int64 : zfp_type_int32;
    if (r->ndim > 4)
        return zf_fail(err, ZF_ERR_UNSUPPORTED,
                       "%s: chunks of %u dimensions are not supported (zfp has 1 to 4; a "
                       "\"zarrs.squeeze\" codec before it can drop dimensions of size 1)",
                       cname(c), r->ndim);
    if (!zc->header && zc->mode == ZM_ACCURACY && z->type != zfp_type_float &&
        z->type != zfp_type_double)
        return zf_fail(err, ZF_ERR_INVALID,
                       "%s: mode \"fixed_accuracy\" is for float32 and float64 data, not %s",
                       cname(c), zf_dtype_str(dt, buf));
    z->dims = r->ndim ? r->ndim : 1;
    z->count = 1;
    for (unsigned d = 0; d < 4; d++)
        z->n[d] = 0;
    if (r->ndim == 0)
        z->n[0] = 1;
    for (unsigned d = 0; d < r->ndim; d++) {
        z->n[d] = (size_t)r->shape[r->ndim - 1 - d];
        z->count *= z->n[d];
    }
    return ZF_OK;
}

static zf_status zfp_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                             zf_chunk_repr *encoded, zf_err *err)
{
    zshape z;
    zf_status st = shape_of(c, decoded, &z, err);
    if (st != ZF_OK)
        return st;
    zf_repr_bytes(encoded, ZF_SIZE_UNKNOWN);
    return ZF_OK;
}

/* Set the stream's compression parameters from the configuration, for a field of type t and
 * dims dimensions. Errors: ZF_ERR_INVALID (parameters zfp refuses or that zarrfs bounds). */
static zf_status set_mode(const zfp_codec *z, zfp_stream *s, zfp_type t, unsigned dims,
                          zf_err *err)
{
    const char *name = cname(&z->base);
    switch (z->mode) {
    case ZM_REVERSIBLE: zfp_stream_set_reversible(s); return ZF_OK;
    case ZM_EXPERT:
        if (!zfp_stream_set_params(s, z->minbits, z->maxbits, z->maxprec, z->minexp))
            return zf_fail(err, ZF_ERR_INVALID,
                           "%s: expert parameters minbits %u, maxbits %u, maxprec %u, minexp %d "
                           "refused by zfp (minbits <= maxbits, 1 <= maxprec <= 64)",
                           name, z->minbits, z->maxbits, z->maxprec, z->minexp);
        return ZF_OK;
    case ZM_RATE: {
        /* zarrs: the data type and 3 dimensions; zfpy: no type and the array's dimensions */
        unsigned rd = z->header ? dims : 3;
        double bits = floor((double)(1u << (2 * rd)) * z->rate + 0.5);
        if (!(bits >= 0 && bits <= ZFP_MAX_BLOCK_BITS))
            return zf_fail(err, ZF_ERR_INVALID,
                           "%s: \"rate\": %g bits per value is %g bits per block of %u values, "
                           "more than %u",
                           name, z->rate, bits, 1u << (2 * rd), ZFP_MAX_BLOCK_BITS);
        zfp_stream_set_rate(s, z->rate, z->header ? zfp_type_none : t, rd, zfp_false);
        return ZF_OK;
    }
    case ZM_PRECISION: zfp_stream_set_precision(s, z->precision); return ZF_OK;
    case ZM_ACCURACY: zfp_stream_set_accuracy(s, z->tolerance); return ZF_OK;
    }
    return ZF_ERR_INVALID;
}

/* ----- decoding ----- */

#define DEC_FN(T, CT)                                                                            \
    static void dec_##T(zfp_stream *zs, unsigned d, void *v, const size_t *e,                    \
                        const ptrdiff_t *s, bool part)                                           \
    {                                                                                            \
        CT *p = v;                                                                               \
        switch (d) {                                                                             \
        case 1:                                                                                  \
            if (part)                                                                            \
                zfp_decode_partial_block_strided_##T##_1(zs, p, e[0], s[0]);                     \
            else                                                                                 \
                zfp_decode_block_strided_##T##_1(zs, p, s[0]);                                   \
            break;                                                                               \
        case 2:                                                                                  \
            if (part)                                                                            \
                zfp_decode_partial_block_strided_##T##_2(zs, p, e[0], e[1], s[0], s[1]);         \
            else                                                                                 \
                zfp_decode_block_strided_##T##_2(zs, p, s[0], s[1]);                             \
            break;                                                                               \
        case 3:                                                                                  \
            if (part)                                                                            \
                zfp_decode_partial_block_strided_##T##_3(zs, p, e[0], e[1], e[2], s[0], s[1],    \
                                                         s[2]);                                  \
            else                                                                                 \
                zfp_decode_block_strided_##T##_3(zs, p, s[0], s[1], s[2]);                       \
            break;                                                                               \
        default:                                                                                 \
            if (part)                                                                            \
                zfp_decode_partial_block_strided_##T##_4(zs, p, e[0], e[1], e[2], e[3], s[0],    \
                                                         s[1], s[2], s[3]);                      \
            else                                                                                 \
                zfp_decode_block_strided_##T##_4(zs, p, s[0], s[1], s[2], s[3]);                 \
        }                                                                                        \
    }
DEC_FN(int32, int32)
DEC_FN(int64, int64)
DEC_FN(float, float)
DEC_FN(double, double)

/* Decode the blocks of a field of type t, dims dimensions, sizes n (x fastest) into data (the
 * field's values, contiguous), in zfp_decompress's order. limit: the input's length in bits.
 * Errors: ZF_ERR_CORRUPT when the stream runs past limit. */
static zf_status decode_blocks(const char *name, zfp_stream *zs, zfp_type t, unsigned dims,
                               const size_t *n, void *data, uint64_t limit, zf_err *err)
{
    bitstream *bs = zfp_stream_bit_stream(zs);
    size_t isz = ztype_size(t), nb[4] = {1, 1, 1, 1}, blocks = 1;
    ptrdiff_t s[4];
    size_t stride = 1;
    for (unsigned d = 0; d < dims; d++) {
        s[d] = (ptrdiff_t)stride;
        stride *= n[d];
        nb[d] = (n[d] + 3) / 4;
        blocks *= nb[d];
    }
    for (size_t b = 0; b < blocks; b++) {
        if (stream_rtell(bs) > limit)
            return zf_fail(err, ZF_ERR_CORRUPT,
                           "%s: the stream ends before block %zu of %zu (truncated or corrupt)",
                           name, b, blocks);
        size_t rest = b, off = 0, e[4];
        bool part = false;
        for (unsigned d = 0; d < dims; d++) {
            size_t c = rest % nb[d] * 4;
            rest /= nb[d];
            off += c * (size_t)s[d];
            e[d] = n[d] - c < 4 ? n[d] - c : 4;
            part |= e[d] < 4;
        }
        void *p = (uint8_t *)data + off * isz;
        switch (t) {
        case zfp_type_int32: dec_int32(zs, dims, p, e, s, part); break;
        case zfp_type_int64: dec_int64(zs, dims, p, e, s, part); break;
        case zfp_type_float: dec_float(zs, dims, p, e, s, part); break;
        default: dec_double(zs, dims, p, e, s, part);
        }
    }
    if (stream_rtell(bs) > limit)
        return zf_fail(err, ZF_ERR_CORRUPT, "%s: the stream needs %llu bits, the chunk has %llu",
                       name, (unsigned long long)stream_rtell(bs), (unsigned long long)limit);
    return ZF_OK;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* zarrs' demotion (zfp_array.rs into_bytes) of n values at src (zfp's type) into dst. Right
 * shifts of negative values are arithmetic (GCC and Clang define them so). */
static void demote(zenc enc, const void *src, uint8_t *dst, size_t n)
{
    const int32_t *i32 = src;
    const int64_t *i64 = src;
    for (size_t i = 0; i < n; i++) {
        switch (enc) {
        case E_I8: dst[i] = (uint8_t)(int8_t)clamp64(i32[i] >> 23, -0x80, 0x7f); break;
        case E_U8: dst[i] = (uint8_t)clamp64((i32[i] >> 23) + 0x80, 0, 0xff); break;
        case E_I16: {
            int16_t v = (int16_t)clamp64(i32[i] >> 15, -0x8000, 0x7fff);
            memcpy(dst + 2 * i, &v, 2);
            break;
        }
        case E_U16: {
            uint16_t v = (uint16_t)clamp64((i32[i] >> 15) + 0x8000, 0, 0xffff);
            memcpy(dst + 2 * i, &v, 2);
            break;
        }
        case E_U32: {
            uint32_t v = i32[i] < 0 ? 0 : (uint32_t)i32[i];
            memcpy(dst + 4 * i, &v, 4);
            break;
        }
        case E_U64: {
            uint64_t v = i64[i] < 0 ? 0 : (uint64_t)i64[i];
            memcpy(dst + 8 * i, &v, 8);
            break;
        }
        default: return; /* native types are decoded in place */
        }
    }
}

static bool is_native(zenc e)
{
    return e == E_I32 || e == E_I64 || e == E_F32 || e == E_F64;
}

static zf_status zfp_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                            size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    const zfp_codec *zc = (const zfp_codec *)c;
    const char *name = cname(c);
    zshape z;
    zf_status st = shape_of(c, decoded, &z, err);
    if (st != ZF_OK)
        return st;
    size_t isz = ztype_size(z.type);
    if (z.count * decoded->dtype.itemsize != out_len)
        return zf_fail(err, ZF_ERR_INVALID, "%s: %zu output bytes for %zu elements", name,
                       out_len, z.count);
    if (in_len > (SIZE_MAX - 2 * ZFP_PAD) / 8)
        return zf_fail(err, ZF_ERR_CORRUPT, "%s: chunk too large", name);
    size_t words = (in_len + 7) / 8;
    uint64_t *scratch = calloc(words + ZFP_PAD / 8, 8);
    bool direct = is_native(z.enc) && (uintptr_t)out % isz == 0;
    void *data = direct ? (void *)out : malloc(z.count * isz > 0 ? z.count * isz : 1);
    bitstream *bs = scratch ? stream_open(scratch, (words + ZFP_PAD / 8) * 8) : NULL;
    zfp_stream *zs = bs ? zfp_stream_open(bs) : NULL;
    zfp_field *f = zs ? zfp_field_alloc() : NULL;
    if (!f || !data) {
        st = ZF_ERR_NOMEM;
        goto done;
    }
    if (in_len)
        memcpy(scratch, in, in_len);
    zfp_stream_rewind(zs);
    uint64_t limit = (uint64_t)in_len * 8;
    unsigned dims = z.dims;
    const size_t *n = z.n;
    size_t hn[4] = {0, 0, 0, 0};
    if (zc->header) {
        if (!zfp_read_header(zs, f, ZFP_HEADER_FULL) || stream_rtell(bs) > limit) {
            st = zf_fail(err, ZF_ERR_CORRUPT, "%s: no valid zfp header", name);
            goto done;
        }
        zfp_type ht = zfp_field_type(f);
        unsigned hd = zfp_field_dimensionality(f);
        size_t hcount = 0;
        if (hd >= 1 && hd <= 4) {
            zfp_field_size(f, hn);
            hcount = 1;
            for (unsigned d = 0; d < hd; d++) /* each size < 2^48 (the header's 48 bits) */
                hcount = hn[d] && hn[d] <= z.count && hcount <= z.count ? hcount * hn[d] : 0;
        }
        if (ht != z.type || hcount != z.count || hcount == 0) {
            st = zf_fail(err, ZF_ERR_CORRUPT,
                         "%s: the zfp header says %zu values of %s, the chunk holds %zu of %s",
                         name, hcount, ztype_name(ht), z.count, ztype_name(z.type));
            goto done;
        }
        dims = hd;
        n = hn;
    } else if ((st = set_mode(zc, zs, z.type, z.dims, err)) != ZF_OK) {
        goto done;
    }
    if ((st = decode_blocks(name, zs, z.type, dims, n, data, limit, err)) != ZF_OK)
        goto done;
    if (!direct) {
        if (is_native(z.enc))
            memcpy(out, data, z.count * isz);
        else
            demote(z.enc, data, out, z.count);
    }
done:
    if (f)
        zfp_field_free(f);
    if (zs)
        zfp_stream_close(zs);
    if (bs)
        stream_close(bs);
    free(scratch);
    if (!direct)
        free(data);
    return st;
}

/* ----- encoding ----- */

/* zarrs' promotion (promote_before_zfp_encoding) of n elements at src into dst (zfp's type). */
static void promote(zenc enc, const uint8_t *src, void *dst, size_t n)
{
    int32_t *i32 = dst;
    int64_t *i64 = dst;
    for (size_t i = 0; i < n; i++) {
        switch (enc) {
        case E_I8: i32[i] = (int32_t)(int8_t)src[i] * (1 << 23); break;
        case E_U8: i32[i] = ((int32_t)src[i] - 0x80) * (1 << 23); break;
        case E_I16: {
            int16_t v;
            memcpy(&v, src + 2 * i, 2);
            i32[i] = (int32_t)v * (1 << 15);
            break;
        }
        case E_U16: {
            uint16_t v;
            memcpy(&v, src + 2 * i, 2);
            i32[i] = ((int32_t)v - 0x8000) * (1 << 15);
            break;
        }
        case E_U32: {
            uint32_t v;
            memcpy(&v, src + 4 * i, 4);
            i32[i] = v > INT32_MAX ? INT32_MAX : (int32_t)v;
            break;
        }
        case E_U64: {
            uint64_t v;
            memcpy(&v, src + 8 * i, 8);
            i64[i] = v > INT64_MAX ? INT64_MAX : (int64_t)v;
            break;
        }
        default: return;
        }
    }
}

/* Encoding writes at most zfp_stream_maximum_size bytes only when a block's budget (maxbits)
 * covers a floating-point block's exponent: 9 bits for float32, 12 for float64. */
static zf_status check_budget(const char *name, zfp_stream *zs, zfp_type t, zf_err *err)
{
    uint minbits, maxbits, maxprec;
    int minexp;
    zfp_stream_params(zs, &minbits, &maxbits, &maxprec, &minexp);
    uint need = t == zfp_type_float ? 9 : t == zfp_type_double ? 12 : 0;
    if (zfp_stream_compression_mode(zs) != zfp_mode_reversible && maxbits < need)
        return zf_fail(err, ZF_ERR_INVALID,
                       "%s: %u bits per block is less than the %u a block of %s needs", name,
                       maxbits, need, ztype_name(t));
    return ZF_OK;
}

static zfp_field *field_of(void *data, const zshape *z)
{
    switch (z->dims) {
    case 1: return zfp_field_1d(data, z->type, z->n[0]);
    case 2: return zfp_field_2d(data, z->type, z->n[0], z->n[1]);
    case 3: return zfp_field_3d(data, z->type, z->n[0], z->n[1], z->n[2]);
    default: return zfp_field_4d(data, z->type, z->n[0], z->n[1], z->n[2], z->n[3]);
    }
}

static zf_status zfp_encode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                            size_t in_len, unsigned flags, uint8_t **out, size_t *out_len,
                            zf_err *err)
{
    (void)flags;
    const zfp_codec *zc = (const zfp_codec *)c;
    const char *name = cname(c);
    zshape z;
    zf_status st = shape_of(c, decoded, &z, err);
    if (st != ZF_OK)
        return st;
    if (z.count * decoded->dtype.itemsize != in_len)
        return zf_fail(err, ZF_ERR_INVALID, "%s: %zu input bytes for %zu elements", name,
                       in_len, z.count);
    size_t isz = ztype_size(z.type);
    void *data = malloc(z.count * isz > 0 ? z.count * isz : 1);
    zfp_field *f = data ? field_of(data, &z) : NULL;
    zfp_stream *zs = f ? zfp_stream_open(NULL) : NULL;
    bitstream *bs = NULL;
    uint8_t *buf = NULL;
    if (!zs) {
        st = ZF_ERR_NOMEM;
        goto done;
    }
    if (is_native(z.enc))
        memcpy(data, in, z.count * isz);
    else
        promote(z.enc, in, data, z.count);
    if ((st = set_mode(zc, zs, z.type, z.dims, err)) != ZF_OK ||
        (st = check_budget(name, zs, z.type, err)) != ZF_OK)
        goto done;
    size_t max = zfp_stream_maximum_size(zs, f);
    if (!max || !(buf = zf_enc_alloc(max)) || !(bs = stream_open(buf, max))) {
        st = max ? ZF_ERR_NOMEM : zf_fail(err, ZF_ERR_INVALID, "%s: zfp refuses the field", name);
        goto done;
    }
    zfp_stream_set_bit_stream(zs, bs);
    zfp_stream_rewind(zs);
    if (zc->header && !zfp_write_header(zs, f, ZFP_HEADER_FULL)) {
        st = zf_fail(err, ZF_ERR_INVALID, "%s: zfp could not write its header", name);
        goto done;
    }
    size_t size = zfp_compress(zs, f);
    if (!size || size > max) {
        st = zf_fail(err, ZF_ERR_INVALID, "%s: compression failed", name);
        goto done;
    }
    *out = buf;
    *out_len = size;
    buf = NULL;
done:
    if (bs)
        stream_close(bs);
    if (zs)
        zfp_stream_close(zs);
    if (f)
        zfp_field_free(f);
    free(data);
    free(buf);
    return st;
}

static const zf_codec_ops zfp_ops = {
    .name = "zfp",
    .kind = ZF_CODEC_ARRAY_TO_BYTES,
    .resolve = zfp_resolve,
    .decode = zfp_decode,
    .destroy = zf_codec_destroy_plain,
    .encode = zfp_encode,
};

static const zf_codec_ops zfpy_ops = {
    .name = "zfpy",
    .kind = ZF_CODEC_ARRAY_TO_BYTES,
    .resolve = zfp_resolve,
    .decode = zfp_decode,
    .destroy = zf_codec_destroy_plain,
    .encode = zfp_encode,
};

/* ----- configurations ----- */

/* A configured rate must be a finite number >= 0, a tolerance finite. */
static zf_status number_field(yajl_val cfg, const char *codec, const char *key, bool required,
                              double def, double *out, zf_err *err)
{
    bool is_int;
    zf_status st = zf_cfg_number(cfg, codec, key, required, def, out, &is_int, err);
    if (st == ZF_OK && !isfinite(*out))
        return zf_fail(err, ZF_ERR_INVALID, "%s: \"%s\": expected a finite number", codec, key);
    return st;
}

zf_status zf_codec_zfp_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    static const char *const keys[][6] = {
        {"mode", NULL},
        {"mode", "minbits", "maxbits", "maxprec", "minexp", NULL},
        {"mode", "rate", NULL},
        {"mode", "precision", NULL},
        {"mode", "tolerance", NULL},
    };
    *out = NULL;
    if (!cfg)
        return zf_fail(err, ZF_ERR_INVALID, "zfp: \"configuration\": missing");
    const char *m;
    zf_status st = zf_cfg_string(cfg, "zfp", "mode", true, &m, err);
    if (st != ZF_OK)
        return st;
    zmode mode = ZM_REVERSIBLE;
    while (mode <= ZM_ACCURACY && strcmp(m, mode_names[mode]) != 0)
        mode++;
    if (mode > ZM_ACCURACY)
        return zf_fail(err, ZF_ERR_INVALID,
                       "zfp: \"mode\": \"%.100s\": expected \"reversible\", \"expert\", "
                       "\"fixed_rate\", \"fixed_precision\" or \"fixed_accuracy\"",
                       m);
    if ((st = zf_v3_check_keys(cfg, "zfp", keys[mode], err)) != ZF_OK)
        return st;
    zfp_codec z = {.mode = mode};
    long long v[4] = {0, 0, 0, 0};
    switch (mode) {
    case ZM_EXPERT:
        if ((st = zf_cfg_int(cfg, "zfp", "minbits", true, false, 0, 0, ZFP_MAX_BLOCK_BITS, &v[0],
                             err)) != ZF_OK ||
            (st = zf_cfg_int(cfg, "zfp", "maxbits", true, false, 0, 0, UINT_MAX, &v[1], err)) !=
                ZF_OK ||
            (st = zf_cfg_int(cfg, "zfp", "maxprec", true, false, 0, 1, ZFP_MAX_PREC, &v[2],
                             err)) != ZF_OK ||
            (st = zf_cfg_int(cfg, "zfp", "minexp", true, false, 0, ZFP_MINEXP_LO, ZFP_MINEXP_HI,
                             &v[3], err)) != ZF_OK)
            return st;
        if (v[0] > v[1])
            return zf_fail(err, ZF_ERR_INVALID, "zfp: \"minbits\": %lld is more than \"maxbits\" %lld",
                           v[0], v[1]);
        z.minbits = (unsigned)v[0];
        z.maxbits = (unsigned)v[1];
        z.maxprec = (unsigned)v[2];
        z.minexp = (int)v[3];
        break;
    case ZM_RATE:
        if ((st = number_field(cfg, "zfp", "rate", true, 0, &z.rate, err)) != ZF_OK)
            return st;
        if (z.rate < 0 || z.rate * 64 > ZFP_MAX_BLOCK_BITS)
            return zf_fail(err, ZF_ERR_INVALID,
                           "zfp: \"rate\": %g: expected 0 to %u bits per value", z.rate,
                           ZFP_MAX_BLOCK_BITS / 64);
        break;
    case ZM_PRECISION:
        if ((st = zf_cfg_int(cfg, "zfp", "precision", true, false, 0, 0, UINT_MAX, &v[0], err)) !=
            ZF_OK)
            return st;
        z.precision = (unsigned)v[0];
        break;
    case ZM_ACCURACY:
        if ((st = number_field(cfg, "zfp", "tolerance", true, 0, &z.tolerance, err)) != ZF_OK)
            return st;
        break;
    default: break;
    }
    zfp_codec *c = zf_codec_alloc(sizeof *c, &zfp_ops);
    if (!c)
        return ZF_ERR_NOMEM;
    z.base = c->base;
    *c = z;
    *out = &c->base;
    return ZF_OK;
}

zf_status zf_codec_zfpy_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    *out = NULL;
    long long mode, precision;
    double tolerance, rate;
    zf_status st;
    /* numcodecs: mode None is fixed accuracy (4); tolerance, rate, precision default to -1 */
    if ((st = zf_cfg_int(cfg, "zfpy", "mode", false, true, 4, LLONG_MIN, LLONG_MAX, &mode,
                         err)) != ZF_OK ||
        (st = number_field(cfg, "zfpy", "tolerance", false, -1, &tolerance, err)) != ZF_OK ||
        (st = number_field(cfg, "zfpy", "rate", false, -1, &rate, err)) != ZF_OK ||
        (st = zf_cfg_int(cfg, "zfpy", "precision", false, false, -1, LLONG_MIN, UINT_MAX,
                         &precision, err)) != ZF_OK)
        return st;
    yajl_val kw = zf_cfg_get(cfg, "compression_kwargs"); /* numcodecs' own copy: ignored */
    if (kw && !YAJL_IS_OBJECT(kw) && !YAJL_IS_NULL(kw))
        return zf_fail(err, ZF_ERR_INVALID, "zfpy: \"compression_kwargs\": expected an object");
    zfp_codec z = {.header = true, .mode = ZM_REVERSIBLE};
    /* numcodecs passes only the mode's keyword to compress_numpy, which falls back to
     * reversible when it is negative. */
    switch (mode) {
    case 2:
        if (rate >= 0) {
            z.mode = ZM_RATE;
            z.rate = rate;
        }
        break;
    case 3:
        if (precision >= 0) {
            z.mode = ZM_PRECISION;
            z.precision = (unsigned)precision;
        }
        break;
    case 4:
        if (tolerance >= 0) {
            z.mode = ZM_ACCURACY;
            z.tolerance = tolerance;
        }
        break;
    case 5: break; /* zarrs: reversible */
    default:
        return zf_fail(err, ZF_ERR_INVALID,
                       "zfpy: \"mode\": %lld: expected 2 (fixed rate), 3 (fixed precision), 4 "
                       "(fixed accuracy) or 5 (reversible)",
                       mode);
    }
    zfp_codec *c = zf_codec_alloc(sizeof *c, &zfpy_ops);
    if (!c)
        return ZF_ERR_NOMEM;
    z.base = c->base;
    *c = z;
    *out = &c->base;
    return ZF_OK;
}
