/* bytes.c — the Zarr v3 "bytes" codec (array -> bytes), also the May 2022 draft's "endian"
 * codec and its implicit little-endian conversion.
 *
 * v3 codecs "Bytes codec", "Format and algorithm": each element is stored in the `endian`
 * variant of its binary representation, elements in lexicographical (C) order. Endianness
 * applies per numeric component: the whole item for integers, floats, datetimes and timedeltas,
 * each half of a complex number ("two consecutive ... IEEE 754 values"), each UTF-32 code unit of
 * a NumPy 'U' string; not at all to bool, raw bits (r<N>, kind 'V') or byte strings ('S').
 * "Configuration parameters": `endian` is "Required for data types for which endianness is
 * applicable", i.e. exactly those whose component is wider than one byte.
 *
 * Decoding copies the stored bytes into the decoded array, swapping each component when the
 * stored byte order differs from the decoded data type's (little-endian for v3: the flat
 * encoding); encoding is the same copy the other way.
 *
 * The registry's sub-byte types (int2, int4, uint2, uint4, float6_*, float4_e2m1fn and their
 * complex types) are one byte per component whose upper bits "are ignored" (data-types/<name>
 * "Codec compatibility"): decoding keeps the low bits (sign-extending int2/int4, the flat
 * encoding); encoding refuses a flat byte that is not such a value. A registry "struct" with
 * multi-byte fields needs "endian" ("Endianness": MUST be configured); zarrfs reads it little
 * endian only (big endian would swap each field: ZF_ERR_UNSUPPORTED). */
#include <string.h>

#include "codec_impl.h"

typedef struct bytes_codec {
    zf_codec base;
    bool big;        /* stored big-endian */
    bool has_endian; /* `endian` was given (else only single-byte components are allowed) */
} bytes_codec;

size_t zf_bytes_swap_unit(const zf_dtype *dt)
{
    switch (dt->kind) {
    case 'i':
    case 'u':
    case 'f':
    case 'm':
    case 'M': return dt->itemsize;
    case 'c': return dt->itemsize / 2;
    case 'U': return 4;
    case 'b':
    case 'S':
    case 'V': return 1;
    default: return 0; /* 'O': no binary representation */
    }
}

/* Check the decoded representation; on success *unit is its component size. */
static zf_status bytes_check(const bytes_codec *b, const zf_chunk_repr *decoded, const char *name,
                             size_t *unit, zf_err *err)
{
    char ts[32];
    size_t u = zf_bytes_swap_unit(&decoded->dtype);
    if (u == 0)
        return zf_fail(err, ZF_ERR_UNSUPPORTED, "%s: data type %s has no binary representation",
                       name, zf_dtype_str(&decoded->dtype, ts));
    bool multi_struct = decoded->dtype.kind == 'V' && (decoded->dtype.ext == ZF_DT_STRUCT ||
                                                       decoded->dtype.ext == ZF_DT_STRUCTURED);
    /* data-types/structured "Missing endian configuration": little-endian. */
    bool legacy = decoded->dtype.kind == 'V' && decoded->dtype.ext == ZF_DT_STRUCTURED;
    if ((u > 1 || multi_struct) && !b->has_endian && !legacy)
        return zf_fail(err, ZF_ERR_INVALID, "%s: \"endian\": missing (required for %s)", name,
                       multi_struct ? "a struct with multi-byte fields"
                                    : zf_dtype_str(&decoded->dtype, ts));
    if (multi_struct && b->big)
        return zf_fail(err, ZF_ERR_UNSUPPORTED,
                       "%s: big-endian struct data types are not supported", name);
    if (decoded->nbytes == ZF_SIZE_UNKNOWN)
        return zf_fail(err, ZF_ERR_INVALID, "%s: the array's size is unknown", name);
    size_t n = 1;
    for (unsigned i = 0; i < decoded->ndim; i++) {
        if (decoded->shape[i] && n > SIZE_MAX / decoded->shape[i])
            return zf_fail(err, ZF_ERR_INVALID, "%s: array too large", name);
        n *= (size_t)decoded->shape[i];
    }
    size_t s = decoded->dtype.itemsize;
    if ((s && n > SIZE_MAX / s) || n * s != decoded->nbytes)
        return zf_fail(err, ZF_ERR_INVALID,
                       "%s: %zu bytes do not hold the array's elements of %s", name,
                       decoded->nbytes,
                       zf_dtype_str(&decoded->dtype, ts));
    *unit = u;
    return ZF_OK;
}

static zf_status bytes_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                               zf_chunk_repr *encoded, zf_err *err)
{
    size_t unit;
    zf_status st = bytes_check((const bytes_codec *)c, decoded, "bytes", &unit, err);
    if (st != ZF_OK)
        return st;
    zf_repr_bytes(encoded, decoded->nbytes);
    return ZF_OK;
}

static zf_status bytes_size(const zf_codec *c, const uint8_t *in, size_t in_len, size_t *out_len,
                            zf_err *err)
{
    (void)c;
    (void)in;
    (void)err;
    *out_len = in_len;
    return ZF_OK;
}

#define SWAP_COPY(T, BSWAP)                                                                       \
    for (size_t i = 0; i < n; i++) {                                                              \
        T v;                                                                                      \
        memcpy(&v, in + i * sizeof(T), sizeof(T));                                                \
        v = BSWAP(v);                                                                             \
        memcpy(out + i * sizeof(T), &v, sizeof(T));                                               \
    }

static void swap_copy(const uint8_t *in, uint8_t *out, size_t len, size_t unit)
{
    size_t n = len / unit;
    switch (unit) {
    case 2: SWAP_COPY(uint16_t, __builtin_bswap16); break;
    case 4: SWAP_COPY(uint32_t, __builtin_bswap32); break;
    case 8: SWAP_COPY(uint64_t, __builtin_bswap64); break;
    default:
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; k < unit; k++)
                out[i * unit + k] = in[i * unit + unit - 1 - k];
        break;
    }
}

static zf_status bytes_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                              size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    const bytes_codec *b = (const bytes_codec *)c;
    size_t unit;
    zf_status st = bytes_check(b, decoded, "bytes", &unit, err);
    if (st != ZF_OK)
        return st;
    if (in_len != out_len || out_len != decoded->nbytes)
        return zf_fail(err, ZF_ERR_CORRUPT, "bytes: chunk holds %zu bytes, expected %zu", in_len,
                       decoded->nbytes);
    bool want_big = decoded->dtype.byteorder == '>';
    if (unit > 1 && b->big != want_big)
        swap_copy(in, out, out_len, unit);
    else if (out_len)
        memcpy(out, in, out_len);
    zf_dtype_normalize(&decoded->dtype, out, decoded->dtype.itemsize ? out_len / decoded->dtype.itemsize : 0);
    return ZF_OK;
}

static zf_status bytes_encode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                              size_t in_len, unsigned flags, uint8_t **out, size_t *out_len,
                              zf_err *err)
{
    (void)flags;
    const bytes_codec *b = (const bytes_codec *)c;
    size_t unit;
    zf_status st = bytes_check(b, decoded, "bytes", &unit, err);
    if (st != ZF_OK)
        return st;
    if (in_len != decoded->nbytes)
        return zf_fail(err, ZF_ERR_INVALID, "bytes: %zu bytes to encode, the array has %zu",
                       in_len, decoded->nbytes);
    size_t bad, isz = decoded->dtype.itemsize;
    if (isz && !zf_dtype_check_flat(&decoded->dtype, in, in_len / isz, &bad)) {
        char ts[32];
        return zf_fail(err, ZF_ERR_INVALID, "bytes: element %zu (byte 0x%02x) is not a %s value",
                       bad, in[bad * isz], zf_dtype_str(&decoded->dtype, ts));
    }
    uint8_t *o = malloc(in_len ? in_len : 1);
    if (!o)
        return ZF_ERR_NOMEM;
    bool have_big = decoded->dtype.byteorder == '>';
    if (unit > 1 && b->big != have_big)
        swap_copy(in, o, in_len, unit);
    else if (in_len)
        memcpy(o, in, in_len);
    *out = o;
    *out_len = in_len;
    return ZF_OK;
}

static const zf_codec_ops bytes_ops = {
    .name = "bytes",
    .kind = ZF_CODEC_ARRAY_TO_BYTES,
    .resolve = bytes_resolve,
    .decode = bytes_decode,
    .destroy = zf_codec_destroy_plain,
    .decoded_size = bytes_size,
    .encode = bytes_encode,
};

zf_status zf_codec_bytes_make(bool big_endian, zf_codec **out)
{
    bytes_codec *b = zf_codec_alloc(sizeof *b, &bytes_ops);
    if (!b)
        return ZF_ERR_NOMEM;
    b->big = big_endian;
    b->has_endian = true;
    *out = &b->base;
    return ZF_OK;
}

zf_status zf_codec_bytes_new(yajl_val cfg, const char *name, const zf_chunk_repr *decoded,
                             zf_codec **out, zf_err *err)
{
    static const char *const keys[] = {"endian", NULL};
    *out = NULL;
    zf_status st = zf_v3_check_keys(cfg, name, keys, err);
    const char *endian = NULL;
    if (st == ZF_OK)
        st = zf_cfg_string(cfg, name, "endian", false, &endian, err);
    if (st != ZF_OK)
        return st;
    if (endian && strcmp(endian, "little") && strcmp(endian, "big"))
        return zf_fail(err, ZF_ERR_INVALID, "%s: \"endian\": expected \"little\" or \"big\", not "
                       "\"%.100s\"", name, endian);
    bytes_codec *b = zf_codec_alloc(sizeof *b, &bytes_ops);
    if (!b)
        return ZF_ERR_NOMEM;
    b->has_endian = endian != NULL;
    b->big = endian && endian[0] == 'b';
    size_t unit;
    if ((st = bytes_check(b, decoded, name, &unit, err)) != ZF_OK) {
        free(b);
        return st;
    }
    *out = &b->base;
    return ZF_OK;
}
