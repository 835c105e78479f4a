/* packbits_v3.c — the zarr-extensions "packbits" codec (array -> bytes; codecs/packbits): each
 * element's components packed to k bits, elements in C order, the bit sequence least
 * significant bit of each byte first, zero-padded to whole bytes, with the number of padding
 * bits optionally in a byte before ("first_byte") or after ("last_byte") the packed bits.
 * (numcodecs' bool filter, the v2 id and the v3 name "numcodecs.packbits", is packbits.c.)
 *
 * "Encoding/decoding of individual array elements": a component of N bits (zf_dtype_component_
 * bits: bool 1, int2/uint2 2, int4/uint4/float4_e2m1fn 4, float6_* 6, else 8 per byte; complex
 * types two components) keeps bits first_bit..last_bit (default 0..N-1), b = last_bit -
 * first_bit + 1 bits, k = components * b. Decoding shifts the b bits back to first_bit and
 * sign-extends signed integers (int*, also numpy.datetime64/timedelta64 as zarrs does), zero-
 * extends everything else. The flat encoding of int2/int4 is a sign-extended byte, so zarrfs
 * sign-extends to the component's whole bytes.
 *
 * Option names: the registry's README says "first_byte"/"last_byte" and "first_bit"/
 * "last_bit", its schema.json "start_byte"/"end_byte" and "start_bit"/"end_bit"; zarrfs
 * follows the README and zarrs (which reject the schema's names), and names the difference when
 * it meets one of them. A padding byte that disagrees with the element count is
 * ZF_ERR_CORRUPT, as zarrs decodes it. */
#include <string.h>

#include "codec_impl.h"

enum { PAD_NONE, PAD_FIRST, PAD_LAST };

typedef struct packbits_v3 {
    zf_codec base;
    int pad;
    long long first_bit, last_bit; /* -1: not given (0, N - 1) */
} packbits_v3;

/* The layout for chunks of `decoded`. */
typedef struct layout {
    unsigned n_bits;       /* N: bits of a component */
    size_t comp_bytes;     /* bytes of a component in the flat encoding */
    unsigned first, b;     /* first bit kept, bits kept per component */
    uint64_t ncomp;        /* components in the chunk */
    size_t packed;         /* bytes of packed bits (without the padding byte) */
    bool sign;             /* sign-extend on decode */
} layout;

static zf_status get_layout(const packbits_v3 *p, const zf_chunk_repr *decoded, layout *L,
                            zf_err *err)
{
    const zf_dtype *dt = &decoded->dtype;
    char ts[32];
    if (!dt->itemsize || !strchr("biufcmM", dt->kind) || dt->kind == 0)
        return zf_fail(err, ZF_ERR_UNSUPPORTED, "packbits: data type %s is not supported",
                       zf_dtype_str(dt, ts));
    if (decoded->nbytes == ZF_SIZE_UNKNOWN)
        return zf_fail(err, ZF_ERR_INVALID, "packbits: the array's size is unknown");
    unsigned per = dt->kind == 'c' ? 2 : 1;
    L->comp_bytes = dt->itemsize / per;
    L->n_bits = zf_dtype_component_bits(dt);
    L->sign = dt->kind == 'i' || dt->kind == 'm' || dt->kind == 'M';
    long long first = p->first_bit < 0 ? 0 : p->first_bit;
    long long last = p->last_bit < 0 ? (long long)L->n_bits - 1 : p->last_bit;
    if (last < first)
        return zf_fail(err, ZF_ERR_INVALID, "packbits: \"last_bit\" %lld is less than "
                       "\"first_bit\" %lld", last, first);
    if (last >= (long long)L->n_bits)
        return zf_fail(err, ZF_ERR_INVALID, "packbits: \"last_bit\" %lld is outside the %u bits "
                       "of data type %s", last, L->n_bits, zf_dtype_str(dt, ts));
    L->first = (unsigned)first;
    L->b = (unsigned)(last - first + 1);
    L->ncomp = decoded->nbytes / L->comp_bytes;
    /* ncomp * b < 2^31 * 64 bits: no overflow */
    L->packed = (size_t)((L->ncomp * L->b + 7) / 8);
    return ZF_OK;
}

static uint8_t padding_bits(const layout *L)
{
    unsigned r = (unsigned)((L->ncomp * L->b) % 8);
    return (uint8_t)(r ? 8 - r : 0);
}

static zf_status pb_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                            zf_chunk_repr *encoded, zf_err *err)
{
    const packbits_v3 *p = (const packbits_v3 *)c;
    layout L;
    zf_status st = get_layout(p, decoded, &L, err);
    if (st != ZF_OK)
        return st;
    zf_repr_bytes(encoded, L.packed + (p->pad != PAD_NONE));
    return ZF_OK;
}

/* The whole component, byte for byte (N a multiple of 8 and every bit kept): the flat
 * encoding is already the packed little-endian layout, as zarrs' bytes fast path. */
static bool plain(const layout *L)
{
    return L->b == L->n_bits && L->n_bits % 8 == 0;
}

static zf_status pb_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                           size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    const packbits_v3 *p = (const packbits_v3 *)c;
    layout L;
    zf_status st = get_layout(p, decoded, &L, err);
    if (st != ZF_OK)
        return st;
    size_t want = L.packed + (p->pad != PAD_NONE);
    if (in_len != want || out_len != decoded->nbytes)
        return zf_fail(err, ZF_ERR_CORRUPT, "packbits: chunk holds %zu bytes, expected %zu",
                       in_len, want);
    const uint8_t *bits = in + (p->pad == PAD_FIRST);
    if (p->pad != PAD_NONE) {
        uint8_t got = p->pad == PAD_FIRST ? in[0] : in[L.packed];
        if (got != padding_bits(&L))
            return zf_fail(err, ZF_ERR_CORRUPT, "packbits: the padding byte says %u bits, the "
                           "chunk's %llu elements leave %u", got,
                           (unsigned long long)(L.ncomp / (decoded->dtype.kind == 'c' ? 2 : 1)),
                           padding_bits(&L));
    }
    if (plain(&L)) {
        if (out_len)
            memcpy(out, bits, out_len);
        return ZF_OK;
    }
    memset(out, 0, out_len);
    uint64_t pos = 0;
    for (uint64_t i = 0; i < L.ncomp; i++) {
        uint8_t *comp = out + i * L.comp_bytes;
        unsigned top = 0;
        for (unsigned k = 0; k < L.b; k++, pos++) {
            top = (bits[pos / 8] >> (pos % 8)) & 1u;
            unsigned at = L.first + k;
            comp[at / 8] |= (uint8_t)(top << (at % 8));
        }
        if (L.sign && top) /* sign-extend over the component's bytes */
            for (unsigned at = L.first + L.b; at < 8 * L.comp_bytes; at++)
                comp[at / 8] |= (uint8_t)(1u << (at % 8));
    }
    return ZF_OK;
}

static zf_status pb_encode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                           size_t in_len, unsigned flags, uint8_t **out, size_t *out_len,
                           zf_err *err)
{
    (void)flags;
    const packbits_v3 *p = (const packbits_v3 *)c;
    layout L;
    zf_status st = get_layout(p, decoded, &L, err);
    if (st != ZF_OK)
        return st;
    if (in_len != decoded->nbytes)
        return zf_fail(err, ZF_ERR_INVALID, "packbits: %zu bytes to encode, the array has %zu",
                       in_len, decoded->nbytes);
    size_t bad, isz = decoded->dtype.itemsize;
    if (!zf_dtype_check_flat(&decoded->dtype, in, in_len / isz, &bad)) {
        char ts[32];
        return zf_fail(err, ZF_ERR_INVALID, "packbits: element %zu is not a %s value", bad,
                       zf_dtype_str(&decoded->dtype, ts));
    }
    size_t total = L.packed + (p->pad != PAD_NONE);
    uint8_t *o = zf_enc_alloc(total);
    if (!o)
        return ZF_ERR_NOMEM;
    memset(o, 0, total);
    uint8_t *bits = o + (p->pad == PAD_FIRST);
    if (p->pad != PAD_NONE)
        o[p->pad == PAD_FIRST ? 0 : L.packed] = padding_bits(&L);
    if (plain(&L)) {
        if (in_len)
            memcpy(bits, in, in_len);
    } else {
        bool is_bool = decoded->dtype.kind == 'b';
        uint64_t pos = 0;
        for (uint64_t i = 0; i < L.ncomp; i++) {
            const uint8_t *comp = in + i * L.comp_bytes;
            for (unsigned k = 0; k < L.b; k++, pos++) {
                unsigned at = L.first + k;
                unsigned bit = is_bool ? comp[0] != 0 : (comp[at / 8] >> (at % 8)) & 1u;
                bits[pos / 8] |= (uint8_t)(bit << (pos % 8));
            }
        }
    }
    *out = o;
    *out_len = total;
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

zf_status zf_codec_packbits_v3_new(yajl_val cfg, const zf_chunk_repr *decoded, zf_codec **out,
                                   zf_err *err)
{
    static const char *const keys[] = {"padding_encoding", "first_bit", "last_bit", NULL};
    static const struct {
        const char *schema, *readme;
    } renamed[] = {{"start_bit", "first_bit"}, {"end_bit", "last_bit"}};
    *out = NULL;
    for (size_t i = 0; i < sizeof renamed / sizeof *renamed; i++)
        if (zf_cfg_get(cfg, renamed[i].schema))
            return zf_fail(err, ZF_ERR_INVALID, "packbits: \"%s\": unknown configuration field "
                           "(the registry's schema.json name; its README and zarrs say \"%s\")",
                           renamed[i].schema, renamed[i].readme);
    zf_status st = zf_v3_check_keys(cfg, "packbits", keys, err);
    const char *pad = NULL;
    long long first = -1, last = -1;
    if (st == ZF_OK)
        st = zf_cfg_string(cfg, "packbits", "padding_encoding", false, &pad, err);
    if (st == ZF_OK)
        st = zf_cfg_int(cfg, "packbits", "first_bit", false, true, -1, 0, 63, &first, err);
    if (st == ZF_OK)
        st = zf_cfg_int(cfg, "packbits", "last_bit", false, true, -1, 0, 63, &last, err);
    if (st != ZF_OK)
        return st;
    int p = PAD_NONE;
    if (pad && strcmp(pad, "first_byte") == 0)
        p = PAD_FIRST;
    else if (pad && strcmp(pad, "last_byte") == 0)
        p = PAD_LAST;
    else if (pad && strcmp(pad, "none") != 0)
        return zf_fail(err, ZF_ERR_INVALID, "packbits: \"padding_encoding\": expected "
                       "\"none\", \"first_byte\" or \"last_byte\", not \"%.100s\"%s", pad,
                       strcmp(pad, "start_byte") == 0 || strcmp(pad, "end_byte") == 0
                           ? " (the registry's schema.json name; its README and zarrs say "
                             "\"first_byte\"/\"last_byte\")"
                           : "");
    if (first >= 0 && last >= 0 && last < first)
        return zf_fail(err, ZF_ERR_INVALID, "packbits: \"last_bit\" %lld is less than "
                       "\"first_bit\" %lld", last, first);
    packbits_v3 *c = zf_codec_alloc(sizeof *c, &packbits_v3_ops);
    if (!c)
        return ZF_ERR_NOMEM;
    c->pad = p;
    c->first_bit = first;
    c->last_bit = last;
    layout L;
    if ((st = get_layout(c, decoded, &L, err)) != ZF_OK) {
        free(c);
        return st;
    }
    *out = &c->base;
    return ZF_OK;
}
