/* test_registry_types.c — the zarr-extensions registry's data types (data-types/<name>/README.md),
 * its "packbits" codec (codecs/packbits) and "cast_value" codec (codecs/cast_value).
 *
 * Where the expected values come from: each float format's parameters as its README lists them
 * (sign bit, exponent bits and bias, mantissa bits, IEEE / fn / fnuz / fnu conventions, the
 * NaN encodings its "Fill value representation" names) go into a reference decoder written here
 * with pow() from the README's bullet list, compared over every code; values the README's
 * formats imply and OCP MX / ml_dtypes publish (e4m3 max 240, e5m2 max 57344, float4 values
 * 0.5..6) are spelled out; packbits' bytes follow the README's "Format and algorithm" by hand;
 * cast_value's examples (128.0 -> int8, the int16 wrap examples, the NumPy compatibility
 * configuration) are the document's own. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_impl.h"
#include "testutil.h"

/* ----- float formats ----- */

/* A format as its README's bullet list states it. */
typedef struct ref_format {
    const char *name;
    int sign_bits, ebits, mbits, bias;
    char kind; /* 'I' IEEE (inf + NaN at exponent all ones), 'F' fn (no inf, no NaN),
                  'Z' fnuz (NaN 0x80), 'U' e8m0fnu (NaN 0xff, no zero, no subnormal) */
    unsigned nan;  /* the README's "NaN" representation */
    double max;    /* published largest finite value */
} ref_format;

static const ref_format REFS[] = {
    {"bfloat16", 1, 8, 7, 127, 'I', 0x7fc0, 3.3895313892515355e38},
    {"float8_e3m4", 1, 3, 4, 3, 'I', 0x78, 15.5},
    {"float8_e4m3", 1, 4, 3, 7, 'I', 0x7c, 240},
    {"float8_e4m3b11fnuz", 1, 4, 3, 11, 'Z', 0x80, 30},
    {"float8_e4m3fnuz", 1, 4, 3, 8, 'Z', 0x80, 240},
    {"float8_e5m2", 1, 5, 2, 15, 'I', 0x7e, 57344},
    {"float8_e5m2fnuz", 1, 5, 2, 16, 'Z', 0x80, 57344},
    {"float8_e8m0fnu", 0, 8, 0, 127, 'U', 0xff, 1.7014118346046923e38},
    {"float6_e2m3fn", 1, 2, 3, 1, 'F', 0, 7.5},
    {"float6_e3m2fn", 1, 3, 2, 3, 'F', 0, 28},
    {"float4_e2m1fn", 1, 2, 1, 1, 'F', 0, 6},
};

/* The README's formula: (-1)^S * 2^(E - bias) * (1 + M / 2^m), subnormal 2^(1 - bias) * M / 2^m
 * "when biased exponent is 0" (not for e8m0fnu). NaN as a NaN. */
static double ref_decode(const ref_format *f, unsigned code)
{
    int bits = f->sign_bits + f->ebits + f->mbits;
    unsigned m = code & ((1u << f->mbits) - 1), e = (code >> f->mbits) & ((1u << f->ebits) - 1);
    int s = f->sign_bits ? (code >> (bits - 1)) & 1 : 0;
    unsigned emax = (1u << f->ebits) - 1;
    if (f->kind == 'I' && e == emax)
        return m ? NAN : (s ? -INFINITY : INFINITY);
    if (f->kind == 'Z' && code == 0x80)
        return NAN;
    if (f->kind == 'U' && code == 0xff)
        return NAN;
    double frac = (double)m / pow(2, f->mbits);
    double v = e == 0 && f->kind != 'U' ? pow(2, 1 - f->bias) * frac
                                         : pow(2, (int)e - f->bias) * (1 + frac);
    return s ? -v : v;
}

static zf_dtype dtype_named(const char *name)
{
    zf_dtype dt;
    ck_assert_msg(zf_dtype_from_v3_name(name, &dt), "%s", name);
    return dt;
}

START_TEST(test_float_formats_every_code)
{
    for (size_t i = 0; i < sizeof REFS / sizeof *REFS; i++) {
        const ref_format *r = &REFS[i];
        zf_dtype dt = dtype_named(r->name);
        const zf_float_format *f = zf_dtype_float_format(&dt);
        ck_assert_ptr_nonnull(f);
        unsigned bits = (unsigned)(r->sign_bits + r->ebits + r->mbits);
        ck_assert_uint_eq(zf_dtype_component_bits(&dt), bits);
        ck_assert_msg(zf_float_max(f) == r->max, "%s max %g", r->name, zf_float_max(f));
        ck_assert_uint_eq(f->nan_bits, r->nan);
        if (r->nan)
            ck_assert_msg(isnan(zf_float_decode(f, r->nan)), "%s NaN", r->name);
        for (unsigned code = 0; code < (1u << bits); code++) {
            double want = ref_decode(r, code), got = zf_float_decode(f, code);
            ck_assert_msg((isnan(want) && isnan(got)) || (want == got && signbit(want) ==
                                                                             signbit(got)),
                          "%s 0x%x: %g, expected %g", r->name, code, got, want);
            /* the flat encoding through zf_dtype_load */
            uint8_t buf[2] = {(uint8_t)code, (uint8_t)(code >> 8)};
            zf_num n = zf_dtype_load(&dt, buf, 0);
            ck_assert(n.kind == 'f' && ((isnan(want) && isnan(n.v.f)) || n.v.f == want));
            /* every value encodes back to its code (NaN to the README's NaN) */
            uint64_t back = zf_float_from_double(f, want);
            if (isnan(want))
                ck_assert_uint_eq(back, r->nan);
            else
                ck_assert_msg(back == code, "%s 0x%x back as 0x%llx", r->name, code,
                              (unsigned long long)back);
        }
    }
}
END_TEST

static unsigned enc(const char *name, double x)
{
    zf_dtype dt = dtype_named(name);
    return (unsigned)zf_float_from_double(zf_dtype_float_format(&dt), x);
}

START_TEST(test_float_rounding)
{
    /* float4_e2m1fn's values 0, 0.5, 1, 1.5, 2, 3, 4, 6: ties to the even code */
    ck_assert_uint_eq(enc("float4_e2m1fn", 0.25), 0x0); /* 0 (even) vs 0.5 */
    ck_assert_uint_eq(enc("float4_e2m1fn", 0.75), 0x2); /* 0.5 vs 1.0 (0b0010) */
    ck_assert_uint_eq(enc("float4_e2m1fn", 2.5), 0x4);  /* 2 (0b0100) vs 3 (0b0101) */
    ck_assert_uint_eq(enc("float4_e2m1fn", 5), 0x6);    /* 4 (0b0110) vs 6 (0b0111) */
    ck_assert_uint_eq(enc("float4_e2m1fn", -5.5), 0xf);
    ck_assert_uint_eq(enc("float4_e2m1fn", 100), 0x7);  /* no inf, no NaN: the largest */
    ck_assert_uint_eq(enc("float4_e2m1fn", NAN), 0x0);
    ck_assert_uint_eq(enc("float4_e2m1fn", -0.0), 0x8);
    /* e4m3: 248 ties 240 (0x77, odd) with 256 (exponent all ones: inf): to inf */
    ck_assert_uint_eq(enc("float8_e4m3", 247.9), 0x77);
    ck_assert_uint_eq(enc("float8_e4m3", 248), 0x78);
    ck_assert_uint_eq(enc("float8_e4m3", -INFINITY), 0xf8);
    /* min subnormal 2^-9 = 0x01; half of it ties to 0 */
    ck_assert_uint_eq(enc("float8_e4m3", ldexp(1, -9)), 0x01);
    ck_assert_uint_eq(enc("float8_e4m3", ldexp(1, -10)), 0x00);
    ck_assert_uint_eq(enc("float8_e4m3", ldexp(3, -11)), 0x01); /* 0.75 * 2^-9 */
    ck_assert_uint_eq(enc("float8_e4m3", ldexp(3, -10)), 0x02); /* 1.5 * 2^-9 ties to 2 */
    /* fnuz: no negative zero, overflow and infinities to NaN 0x80 */
    ck_assert_uint_eq(enc("float8_e4m3fnuz", -0.0), 0x00);
    ck_assert_uint_eq(enc("float8_e4m3fnuz", 1000), 0x80);
    ck_assert_uint_eq(enc("float8_e4m3fnuz", INFINITY), 0x80);
    ck_assert_uint_eq(enc("float8_e4m3fnuz", 1.0), 0x40); /* exponent 8 = bias */
    ck_assert_uint_eq(enc("float8_e4m3b11fnuz", 1.0), 0x58); /* exponent 11 */
    /* e8m0fnu: 2^(E - 127); 1.0 = 0x7f; 3 ties 2 (0x80) and 4 (0x81): to the even code */
    ck_assert_uint_eq(enc("float8_e8m0fnu", 1.0), 0x7f);
    ck_assert_uint_eq(enc("float8_e8m0fnu", 3.0), 0x80);
    ck_assert_uint_eq(enc("float8_e8m0fnu", 6.0), 0x82);
    ck_assert_uint_eq(enc("float8_e8m0fnu", -1.0), 0xff);
    /* bfloat16: binary32 truncated: 1.0 = 0x3f80; 1 + 2^-8 ties to 1.0 */
    ck_assert_uint_eq(enc("bfloat16", 1.0), 0x3f80);
    ck_assert_uint_eq(enc("bfloat16", 1.0 + ldexp(1, -8)), 0x3f80);
    ck_assert_uint_eq(enc("bfloat16", 1.0 + 3 * ldexp(1, -8)), 0x3f82);
    ck_assert_uint_eq(enc("bfloat16", 1e39), 0x7f80);
}
END_TEST

START_TEST(test_int_subbyte)
{
    zf_dtype i4 = dtype_named("int4"), u2 = dtype_named("uint2");
    uint8_t b[4];
    /* int4 [-8, 7]: the flat byte is the sign-extended int8; stores wrap to 4 bits */
    zf_dtype_store(&i4, b, 0, (zf_num){.kind = 'i', .v.i = -8});
    zf_dtype_store(&i4, b, 1, (zf_num){.kind = 'i', .v.i = 8}); /* wraps to -8 */
    zf_dtype_store(&i4, b, 2, (zf_num){.kind = 'i', .v.i = 7});
    zf_dtype_store(&u2, b, 3, (zf_num){.kind = 'i', .v.i = 5}); /* 0b101 -> 0b01 */
    ck_assert_uint_eq(b[0], 0xf8);
    ck_assert_uint_eq(b[1], 0xf8);
    ck_assert_uint_eq(b[2], 0x07);
    ck_assert_uint_eq(b[3], 0x01);
    /* the bytes codec's "upper bits are ignored": 0b1010'0111 is int4 7, 0b0000'1111 is -1 */
    uint8_t in[2] = {0xa7, 0x0f};
    zf_dtype_normalize(&i4, in, 2);
    ck_assert_uint_eq(in[0], 0x07);
    ck_assert_uint_eq(in[1], 0xff);
    size_t bad = 99;
    uint8_t flat[3] = {0x07, 0xf8, 0x08};
    ck_assert(!zf_dtype_check_flat(&i4, flat, 3, &bad));
    ck_assert_uint_eq(bad, 2);
}
END_TEST

/* ----- cast_value's value casts ----- */

static zf_status cast(const char *to, zf_num v, zf_rounding r, zf_out_of_range o, int64_t *iv,
                      uint64_t *bits)
{
    zf_dtype dt = dtype_named(to);
    uint8_t buf[8] = {0};
    zf_err err;
    zf_status st = zf_dtype_cast_value(&dt, buf, 0, v, r, o, &err);
    if (st == ZF_OK) {
        if (iv)
            *iv = zf_dtype_load(&dt, buf, 0).v.i;
        if (bits) {
            *bits = 0;
            memcpy(bits, buf, dt.itemsize);
        }
    }
    return st;
}

#define F(x) ((zf_num){.kind = 'f', .v.f = (x)})
#define I(x) ((zf_num){.kind = 'i', .v.i = (x)})

START_TEST(test_cast_value_document_examples)
{
    int64_t v;
    /* "given an input scalar of 128.0 and an output data type of int8" */
    ck_assert_int_eq(cast("int8", F(128.0), ZF_ROUND_NEAREST_EVEN, ZF_OOR_ERROR, &v, NULL),
                     ZF_ERR_INVALID);
    ck_assert_int_eq(cast("int8", F(128.0), ZF_ROUND_NEAREST_EVEN, ZF_OOR_CLAMP, &v, NULL), ZF_OK);
    ck_assert_int_eq(v, 127);
    ck_assert_int_eq(cast("int8", F(128.0), ZF_ROUND_NEAREST_EVEN, ZF_OOR_WRAP, &v, NULL), ZF_OK);
    ck_assert_int_eq(v, -128);
    /* int16 wrap: 32768 -> -32768, 32769 -> -32767, -32769 -> 32767 */
    int64_t in[] = {32768, 32769, -32769}, want[] = {-32768, -32767, 32767};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(cast("int16", I(in[i]), ZF_ROUND_NEAREST_EVEN, ZF_OOR_WRAP, &v, NULL),
                         ZF_OK);
        ck_assert_int_eq(v, want[i]);
    }
    /* "0 in uint16 maps to 0 in uint8" (exactly representable) */
    ck_assert_int_eq(cast("uint8", (zf_num){.kind = 'u', .v.u = 0}, ZF_ROUND_NEAREST_EVEN,
                          ZF_OOR_ERROR, &v, NULL), ZF_OK);
    ck_assert_int_eq(v, 0);
}
END_TEST

START_TEST(test_cast_value_rounding_modes)
{
    /* The five modes of the "rounding" table on 2.5, -2.5 and 2.4 into int8 */
    static const struct {
        double x;
        int64_t want[5]; /* nearest-even, towards-zero, towards-positive, towards-negative,
                            nearest-away */
    } T[] = {
        {2.5, {2, 2, 3, 2, 3}},
        {-2.5, {-2, -2, -2, -3, -3}},
        {2.4, {2, 2, 3, 2, 2}},
        {3.5, {4, 3, 4, 3, 4}},
        {-0.5, {0, 0, 0, -1, -1}},
    };
    for (size_t i = 0; i < sizeof T / sizeof *T; i++)
        for (int m = 0; m < 5; m++) {
            int64_t v;
            ck_assert_int_eq(cast("int8", F(T[i].x), (zf_rounding)m, ZF_OOR_ERROR, &v, NULL),
                             ZF_OK);
            ck_assert_msg(v == T[i].want[m], "%g mode %d: %lld", T[i].x, m, (long long)v);
        }
    /* to a float: 1 + 2^-11 between float16's 1 (0x3c00) and 1 + 2^-10 (0x3c01) */
    uint64_t b;
    double x = 1 + ldexp(1, -11);
    unsigned want16[5] = {0x3c00, 0x3c00, 0x3c01, 0x3c00, 0x3c01};
    for (int m = 0; m < 5; m++) {
        ck_assert_int_eq(cast("float16", F(x), (zf_rounding)m, ZF_OOR_ERROR, NULL, &b), ZF_OK);
        ck_assert_uint_eq(b, want16[m]);
        ck_assert_int_eq(cast("float16", F(-x), (zf_rounding)m, ZF_OOR_ERROR, NULL, &b), ZF_OK);
        unsigned negwant[5] = {0xbc00, 0xbc00, 0xbc00, 0xbc01, 0xbc01};
        ck_assert_uint_eq(b, negwant[m]);
    }
    /* int64 to float32 rounds the integer itself: 2^24 + 1 ties to 2^24, + 3 to 2^24 + 4 */
    ck_assert_int_eq(cast("float32", I((1 << 24) + 1), ZF_ROUND_NEAREST_EVEN, ZF_OOR_ERROR, NULL,
                          &b), ZF_OK);
    ck_assert_uint_eq(b, 0x4b800000);
    ck_assert_int_eq(cast("float32", I((1 << 24) + 3), ZF_ROUND_NEAREST_EVEN, ZF_OOR_ERROR, NULL,
                          &b), ZF_OK);
    ck_assert_uint_eq(b, 0x4b800002);
    ck_assert_int_eq(cast("float32", I((1 << 24) + 1), ZF_ROUND_TOWARDS_POSITIVE, ZF_OOR_ERROR,
                          NULL, &b), ZF_OK);
    ck_assert_uint_eq(b, 0x4b800001);
}
END_TEST

START_TEST(test_cast_value_special_values)
{
    uint64_t b;
    int64_t v;
    /* NaN propagates between types with NaN; errors into types without */
    ck_assert_int_eq(cast("float16", F(NAN), 0, ZF_OOR_ERROR, NULL, &b), ZF_OK);
    ck_assert_uint_eq(b, 0x7e00);
    ck_assert_int_eq(cast("float8_e4m3fnuz", F(NAN), 0, ZF_OOR_ERROR, NULL, &b), ZF_OK);
    ck_assert_uint_eq(b, 0x80);
    ck_assert_int_eq(cast("float4_e2m1fn", F(NAN), 0, ZF_OOR_CLAMP, NULL, &b), ZF_ERR_INVALID);
    ck_assert_int_eq(cast("int8", F(NAN), 0, ZF_OOR_CLAMP, &v, NULL), ZF_ERR_INVALID);
    ck_assert_int_eq(cast("int8", F(INFINITY), 0, ZF_OOR_CLAMP, &v, NULL), ZF_ERR_INVALID);
    /* signed zero is preserved (where the type has one) */
    ck_assert_int_eq(cast("float16", F(-0.0), 0, ZF_OOR_ERROR, NULL, &b), ZF_OK);
    ck_assert_uint_eq(b, 0x8000);
    ck_assert_int_eq(cast("float8_e5m2fnuz", F(-0.0), 0, ZF_OOR_ERROR, NULL, &b), ZF_OK);
    ck_assert_uint_eq(b, 0x00);
    /* infinities: kept where the type has them; clamped to the largest value otherwise */
    ck_assert_int_eq(cast("float8_e5m2", F(-INFINITY), 0, ZF_OOR_ERROR, NULL, &b), ZF_OK);
    ck_assert_uint_eq(b, 0xfc);
    ck_assert_int_eq(cast("float8_e4m3fnuz", F(INFINITY), 0, ZF_OOR_ERROR, NULL, &b),
                     ZF_ERR_INVALID);
    ck_assert_int_eq(cast("float8_e4m3fnuz", F(INFINITY), 0, ZF_OOR_CLAMP, NULL, &b), ZF_OK);
    ck_assert_uint_eq(b, 0x7f); /* 240 */
    /* clamp: "values outside the finite range ... MUST be mapped to +-Infinity" where the type
     * has them; the range is checked before rounding (zarrs): 65519 is beyond float16's 65504 */
    ck_assert_int_eq(cast("float16", F(65519), 0, ZF_OOR_ERROR, NULL, &b), ZF_ERR_INVALID);
    ck_assert_int_eq(cast("float16", F(65519), 0, ZF_OOR_CLAMP, NULL, &b), ZF_OK);
    ck_assert_uint_eq(b, 0x7c00);
    ck_assert_int_eq(cast("float6_e3m2fn", F(-1000), 0, ZF_OOR_CLAMP, NULL, &b), ZF_OK);
    ck_assert_uint_eq(b, 0x3f); /* -28: 1 111 11 */
    /* e8m0fnu: no zero, no negative values: out of range */
    ck_assert_int_eq(cast("float8_e8m0fnu", F(0.0), 0, ZF_OOR_ERROR, NULL, &b), ZF_ERR_INVALID);
    ck_assert_int_eq(cast("float8_e8m0fnu", F(0.0), 0, ZF_OOR_CLAMP, NULL, &b), ZF_OK);
    ck_assert_uint_eq(b, 0x00); /* 2^-127 */
    /* integer targets: rounded first, then checked (127.4 rounds into int8) */
    ck_assert_int_eq(cast("int8", F(127.4), 0, ZF_OOR_ERROR, &v, NULL), ZF_OK);
    ck_assert_int_eq(v, 127);
    ck_assert_int_eq(cast("uint4", F(-0.4), 0, ZF_OOR_ERROR, &v, NULL), ZF_OK);
    ck_assert_int_eq(v, 0);
    ck_assert_int_eq(cast("int4", I(9), 0, ZF_OOR_WRAP, &v, NULL), ZF_OK);
    ck_assert_int_eq(v, -7);
    ck_assert_int_eq(cast("uint2", I(-1), 0, ZF_OOR_WRAP, &v, NULL), ZF_OK);
    ck_assert_int_eq(v, 3);
    ck_assert_int_eq(cast("int2", F(1e30), 0, ZF_OOR_CLAMP, &v, NULL), ZF_OK);
    ck_assert_int_eq(v, 1);
    ck_assert_int_eq(cast("uint8", F(1e30), 0, ZF_OOR_WRAP, &v, NULL), ZF_OK);
    ck_assert_int_eq(v, 0); /* 1e30 = 2^99.66..: a multiple of 256 */
    ck_assert_int_eq(cast("uint8", F(-3.0), 0, ZF_OOR_WRAP, &v, NULL), ZF_OK);
    ck_assert_int_eq(v, 253);
}
END_TEST

/* ----- the codecs in a chain ----- */

static zf_chunk_repr repr(const char *name, uint64_t n)
{
    zf_chunk_repr r;
    memset(&r, 0, sizeof r);
    r.ndim = 1;
    r.shape[0] = n;
    r.dtype = dtype_named(name);
    r.nbytes = (size_t)n * r.dtype.itemsize;
    return r;
}

static zf_status chain(const char *json, const zf_chunk_repr *r, const void *fill,
                       zf_codec_chain *c, zf_err *err)
{
    yajl_val v = tu_json(json);
    zf_status st = zf_chain_from_v3(v, ZF_CODECS_V3, r, fill, c, err);
    yajl_tree_free(v);
    return st;
}

/* Encode `flat` with the codecs, compare with `stored`, decode back to `flat`. */
static void round_trip(const char *json, const zf_chunk_repr *r, const void *fill,
                       const uint8_t *flat, const uint8_t *stored, size_t stored_len)
{
    zf_codec_chain c;
    zf_err err = {""};
    ck_assert_msg(chain(json, r, fill, &c, &err) == ZF_OK, "%s: %s", json, err.msg);
    uint8_t *out;
    size_t out_len;
    ck_assert_msg(zf_chain_encode(&c, r, flat, 0, &out, &out_len, &err) == ZF_OK, "%s",
                  err.msg);
    ck_assert_uint_eq(out_len, stored_len);
    for (size_t i = 0; i < stored_len; i++)
        ck_assert_msg(out[i] == stored[i], "%s: byte %zu: %02x, expected %02x", json, i, out[i],
                      stored[i]);
    free(out);
    uint8_t *dec = malloc(r->nbytes + 1);
    ck_assert_msg(zf_chain_decode(&c, r, stored, stored_len, dec, &err) == ZF_OK, "%s",
                  err.msg);
    ck_assert(memcmp(dec, flat, r->nbytes) == 0);
    free(dec);
    zf_chain_clear(&c);
}

START_TEST(test_packbits_layout)
{
    /* uint4 [1, 2, 3]: element i at bits [4i, 4i + 4), bit 0 of byte 0 first:
     * byte 0 = 0b0010'0001, byte 1 = 0b0000'0011, 4 padding bits */
    zf_chunk_repr u4 = repr("uint4", 3);
    const uint8_t flat[3] = {1, 2, 3};
    const uint8_t none[] = {0x21, 0x03}, first[] = {0x04, 0x21, 0x03},
                  last[] = {0x21, 0x03, 0x04};
    round_trip("[\"packbits\"]", &u4, NULL, flat, none, 2);
    round_trip("[{\"name\": \"packbits\", \"configuration\": {\"padding_encoding\": \"none\"}}]",
               &u4, NULL, flat, none, 2);
    round_trip("[{\"name\": \"packbits\", \"configuration\": {\"padding_encoding\": "
               "\"first_byte\"}}]", &u4, NULL, flat, first, 3);
    round_trip("[{\"name\": \"packbits\", \"configuration\": {\"padding_encoding\": "
               "\"last_byte\"}}]", &u4, NULL, flat, last, 3);
    /* int2 [-1, 0, 1, -2]: codes 11, 00, 01, 10 -> 0b10'01'00'11; decoded sign-extended */
    zf_chunk_repr i2 = repr("int2", 4);
    const uint8_t i2flat[4] = {0xff, 0x00, 0x01, 0xfe}, i2enc[1] = {0x93};
    round_trip("[\"packbits\"]", &i2, NULL, i2flat, i2enc, 1);
    /* bool: one bit each, 9 elements: 7 padding bits */
    zf_chunk_repr b = repr("bool", 9);
    const uint8_t bflat[9] = {1, 0, 1, 1, 0, 0, 0, 1, 1}, benc[] = {0x07, 0x8d, 0x01};
    round_trip("[{\"name\": \"packbits\", \"configuration\": {\"padding_encoding\": "
               "\"first_byte\"}}]", &b, NULL, bflat, benc, 3);
    /* float6_e3m2fn: 6 bits, 0bSEEEMM: 1.0 = 0 011 00 = 0x0c, -28 = 0x3f, 0.25 = 0 001 00 */
    zf_chunk_repr f6 = repr("float6_e3m2fn", 3);
    const uint8_t f6flat[3] = {0x0c, 0x3f, 0x04};
    /* bits: 001100 111111 000100 -> byte0 = 11'001100, byte1 = 0100'1111, byte2 = 0000'0000 */
    const uint8_t f6enc[3] = {0xcc, 0x4f, 0x00};
    round_trip("[\"packbits\"]", &f6, NULL, f6flat, f6enc, 3);
    /* complex_float4_e2m1fn: real then imaginary, 4 bits each: (1.0, -6.0) = 0x2, 0xf */
    zf_chunk_repr c4 = repr("complex_float4_e2m1fn", 1);
    const uint8_t c4flat[2] = {0x02, 0x0f}, c4enc[1] = {0xf2};
    round_trip("[\"packbits\"]", &c4, NULL, c4flat, c4enc, 1);
    /* first_bit/last_bit: uint16 bits 4..11 of 0x0ab0, 0x0cd0 -> 0xab, 0xcd */
    zf_chunk_repr u16 = repr("uint16", 2);
    const uint8_t u16flat[4] = {0xb0, 0x0a, 0xd0, 0x0c}, u16enc[2] = {0xab, 0xcd};
    round_trip("[{\"name\": \"packbits\", \"configuration\": {\"first_bit\": 4, \"last_bit\": "
               "11}}]", &u16, NULL, u16flat, u16enc, 2);
    /* int16 bits 0..3: decoded sign-extended to N bits: -3 = 0b1101 */
    zf_chunk_repr i16 = repr("int16", 2);
    const uint8_t i16flat[4] = {0xfd, 0xff, 0x05, 0x00}, i16enc[1] = {0x5d};
    round_trip("[{\"name\": \"packbits\", \"configuration\": {\"last_bit\": 3}}]", &i16, NULL,
               i16flat, i16enc, 1);
    /* whole bytes: the little-endian bytes, as the bytes codec */
    zf_chunk_repr bf = repr("bfloat16", 1);
    const uint8_t bfflat[2] = {0x80, 0x3f};
    round_trip("[\"packbits\"]", &bf, NULL, bfflat, bfflat, 2);
}
END_TEST

START_TEST(test_packbits_refusals)
{
    zf_chunk_repr u4 = repr("uint4", 3);
    zf_codec_chain c;
    zf_err err = {""};
    /* the schema's option names: refused, naming the README's */
    ck_assert_int_eq(chain("[{\"name\": \"packbits\", \"configuration\": {\"start_bit\": 0}}]",
                           &u4, NULL, &c, &err), ZF_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "first_bit"));
    ck_assert_int_eq(chain("[{\"name\": \"packbits\", \"configuration\": {\"padding_encoding\": "
                           "\"start_byte\"}}]", &u4, NULL, &c, &err), ZF_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "first_byte"));
    ck_assert_int_eq(chain("[{\"name\": \"packbits\", \"configuration\": {\"last_bit\": 4}}]",
                           &u4, NULL, &c, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(chain("[{\"name\": \"packbits\", \"configuration\": {\"first_bit\": 2, "
                           "\"last_bit\": 1}}]", &u4, NULL, &c, &err), ZF_ERR_INVALID);
    /* a wrong padding byte, a wrong length */
    ck_assert_int_eq(chain("[{\"name\": \"packbits\", \"configuration\": {\"padding_encoding\": "
                           "\"first_byte\"}}]", &u4, NULL, &c, &err), ZF_OK);
    uint8_t out[3];
    const uint8_t badpad[3] = {0x03, 0x21, 0x03}, shortin[2] = {0x04, 0x21};
    ck_assert_int_eq(zf_chain_decode(&c, &u4, badpad, 3, out, &err), ZF_ERR_CORRUPT);
    ck_assert_int_eq(zf_chain_decode(&c, &u4, shortin, 2, out, &err), ZF_ERR_CORRUPT);
    /* a flat byte that is not a uint4 is not written */
    const uint8_t bad[3] = {1, 0x12, 3};
    uint8_t *o;
    size_t ol;
    ck_assert_int_eq(zf_chain_encode(&c, &u4, bad, 0, &o, &ol, &err), ZF_ERR_INVALID);
    zf_chain_clear(&c);
    /* "numcodecs.packbits" is still numcodecs' bool filter */
    zf_chunk_repr b = repr("bool", 9);
    ck_assert_int_eq(chain("[\"numcodecs.packbits\", \"bytes\"]", &b, NULL, &c, &err), ZF_OK);
    zf_chain_clear(&c);
}
END_TEST

START_TEST(test_cast_value_codec)
{
    /* the document's "NumPy compatibility" configuration: float64 -> uint8, towards-zero,
     * wrap, NaN and infinities to 0 */
    const char *numpy =
        "[{\"name\": \"cast_value\", \"configuration\": {\"data_type\": \"uint8\", \"rounding\": "
        "\"towards-zero\", \"out_of_range\": \"wrap\", \"scalar_map\": {\"encode\": [[\"NaN\", "
        "0], [\"+Infinity\", 0], [\"-Infinity\", 0]]}}}, \"bytes\"]";
    zf_chunk_repr f8 = repr("float64", 6);
    double in[6] = {1.9, -1.5, 257.0, NAN, INFINITY, -INFINITY};
    const uint8_t want[6] = {1, 255, 1, 0, 0, 0};
    zf_codec_chain c;
    zf_err err = {""};
    ck_assert_msg(chain(numpy, &f8, NULL, &c, &err) == ZF_OK, "%s", err.msg);
    uint8_t *out;
    size_t ol;
    ck_assert_msg(zf_chain_encode(&c, &f8, (const uint8_t *)in, 0, &out, &ol, &err) == ZF_OK, "%s", err.msg);
    ck_assert_uint_eq(ol, 6);
    ck_assert(memcmp(out, want, 6) == 0);
    double back[6];
    ck_assert_int_eq(zf_chain_decode(&c, &f8, out, 6, (uint8_t *)back, &err), ZF_OK);
    ck_assert(back[0] == 1 && back[1] == 255 && back[2] == 1 && back[3] == 0);
    free(out);
    zf_chain_clear(&c);
    /* float32 -> float8_e4m3 and back; no out_of_range: 1000 is an error on encode */
    zf_chunk_repr f4 = repr("float32", 3);
    const char *e4m3 = "[{\"name\": \"cast_value\", \"configuration\": {\"data_type\": "
                       "\"float8_e4m3\"}}, \"bytes\"]";
    ck_assert_msg(chain(e4m3, &f4, NULL, &c, &err) == ZF_OK, "%s", err.msg);
    float fin[3] = {1.0f, -0.3125f, 240.0f}, fbig[3] = {1.0f, 1000.0f, 0.0f};
    const uint8_t fenc[3] = {0x38, 0xaa, 0x77}; /* 0 0111 000; 1 0101 010 (-1.25 * 2^-2) */
    ck_assert_int_eq(zf_chain_encode(&c, &f4, (const uint8_t *)fin, 0, &out, &ol, &err), ZF_OK);
    ck_assert(ol == 3 && memcmp(out, fenc, 3) == 0);
    free(out);
    ck_assert_int_eq(zf_chain_encode(&c, &f4, (const uint8_t *)fbig, 0, &out, &ol, &err), ZF_ERR_INVALID);
    /* decoding a NaN of float8_e4m3 into float32 gives float32's NaN */
    const uint8_t nan8[3] = {0x7c, 0xfc, 0x7f};
    float fo[3];
    ck_assert_int_eq(zf_chain_decode(&c, &f4, nan8, 3, (uint8_t *)fo, &err), ZF_OK);
    ck_assert(isnan(fo[0]) && isnan(fo[1]) && isnan(fo[2]));
    zf_chain_clear(&c);
    /* the fill value: 0.5 -> int8 is 0 (nearest even), which decodes to 0.0: refused */
    double half = 0.5;
    zf_chunk_repr f8b = repr("float64", 2);
    ck_assert_int_eq(chain("[{\"name\": \"cast_value\", \"configuration\": {\"data_type\": "
                           "\"int8\"}}, \"bytes\"]", &f8b, &half, &c, &err), ZF_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "fill value"));
    /* "wrap" needs an integer data_type; unknown fields are invalid */
    ck_assert_int_eq(chain("[{\"name\": \"cast_value\", \"configuration\": {\"data_type\": "
                           "\"float16\", \"out_of_range\": \"wrap\"}}, \"bytes\"]", &f8b, NULL,
                           &c, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(chain("[{\"name\": \"cast_value\", \"configuration\": {\"data_type\": "
                           "\"int8\", \"extra\": 1}}, \"bytes\"]", &f8b, NULL, &c, &err),
                     ZF_ERR_INVALID);
    ck_assert_int_eq(chain("[{\"name\": \"cast_value\", \"configuration\": {\"data_type\": "
                           "\"complex64\"}}, \"bytes\"]", &f8b, NULL, &c, &err),
                     ZF_ERR_UNSUPPORTED);
    /* cast_value then int4 then packbits: the fill after the cast is int4's */
    double fill = -3.0;
    zf_chunk_repr f8c = repr("float64", 4);
    ck_assert_msg(chain("[{\"name\": \"cast_value\", \"configuration\": {\"data_type\": "
                        "\"int4\", \"out_of_range\": \"clamp\"}}, \"packbits\"]", &f8c, &fill, &c,
                        &err) == ZF_OK, "%s", err.msg);
    double v4[4] = {-3, 7.6, -100, 2};
    const uint8_t p4[2] = {0x7d, 0x28}; /* 1101, 0111 | 1000, 0010 */
    ck_assert_int_eq(zf_chain_encode(&c, &f8c, (const uint8_t *)v4, 0, &out, &ol, &err), ZF_OK);
    ck_assert(ol == 2 && memcmp(out, p4, 2) == 0);
    free(out);
    zf_chain_clear(&c);
    /* numcodecs' filters and bitround refuse the registry's types */
    zf_chunk_repr bf = repr("bfloat16", 4);
    ck_assert_int_eq(chain("[{\"name\": \"bitround\", \"configuration\": {\"keepbits\": 3}}, "
                           "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]",
                           &bf, NULL, &c, &err), ZF_ERR_UNSUPPORTED);
}
END_TEST

START_TEST(test_bytes_subbyte)
{
    /* bytes codec: int4 "0bIIIIXXXX where the upper IIII bits are ignored" */
    zf_chunk_repr i4 = repr("int4", 3);
    zf_codec_chain c;
    zf_err err = {""};
    ck_assert_int_eq(chain("[\"bytes\"]", &i4, NULL, &c, &err), ZF_OK);
    const uint8_t stored[3] = {0x5f, 0xa7, 0x08};
    uint8_t out[3];
    ck_assert_int_eq(zf_chain_decode(&c, &i4, stored, 3, out, &err), ZF_OK);
    ck_assert(out[0] == 0xff && out[1] == 0x07 && out[2] == 0xf8);
    zf_chain_clear(&c);
    /* a struct with multi-byte fields needs "endian"; big endian is not served */
    zf_chunk_repr s = repr("uint8", 1);
    s.dtype = (zf_dtype){.kind = 'V', .byteorder = '|', .ext = ZF_DT_STRUCT, .itemsize = 8};
    s.nbytes = 8;
    ck_assert_int_eq(chain("[\"bytes\"]", &s, NULL, &c, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(chain("[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}]",
                           &s, NULL, &c, &err), ZF_ERR_UNSUPPORTED);
    ck_assert_int_eq(chain("[{\"name\": \"bytes\", \"configuration\": {\"endian\": "
                           "\"little\"}}]", &s, NULL, &c, &err), ZF_OK);
    zf_chain_clear(&c);
}
END_TEST

Suite *codec_registry_types_suite(void)
{
    Suite *s = suite_create("codec-registry-types");
    TCase *tc = tcase_create("registry");
    tcase_add_test(tc, test_float_formats_every_code);
    tcase_add_test(tc, test_float_rounding);
    tcase_add_test(tc, test_int_subbyte);
    tcase_add_test(tc, test_cast_value_document_examples);
    tcase_add_test(tc, test_cast_value_rounding_modes);
    tcase_add_test(tc, test_cast_value_special_values);
    tcase_add_test(tc, test_packbits_layout);
    tcase_add_test(tc, test_packbits_refusals);
    tcase_add_test(tc, test_cast_value_codec);
    tcase_add_test(tc, test_bytes_subbyte);
    suite_add_tcase(s, tc);
    return s;
}
