/* test_zfp.c — the zfp codecs (src/codec/zfp.c): the zarr-extensions "zfp" (v3) and numcodecs'
 * "zfpy" (v2, v3 "numcodecs.zfpy").
 *
 * Round trips in every mode, for every data type the codecs take (zarrs' promotions of 8- and
 * 16-bit integers and its clamping of unsigned 32/64-bit ones checked against the formulas of
 * zarrs' zfp_array.rs, written out here), 0-d to 4-d chunks with partial blocks; refusals
 * (types, dimensions, configurations); and hostile streams: every truncation, byte flips, a
 * header describing another chunk, a header whose mode skips 32,768 bits per block — each must
 * give ZF_ERR_CORRUPT (or, for a flip, any decode), never a read past the input (run under
 * ASan). What numcodecs and the zfp tool make of these streams is tests/integration/test_zfp.py
 * and test_encode.c (byte-identical zfpy encodings). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zfp.h>

#include "testutil.h"

static zf_codec_chain v3_chain(const char *json, const zf_chunk_repr *r, zf_status want,
                               char *msg)
{
    yajl_val v = tu_json(json);
    zf_codec_chain chain;
    zf_err err = {""};
    zf_status st = zf_chain_from_v3(v, ZF_CODECS_V3, r, NULL, &chain, &err);
    yajl_tree_free(v);
    ck_assert_msg(st == want, "%s: %s (%s)", json, zf_status_str(st), err.msg);
    if (msg)
        snprintf(msg, 512, "%s", err.msg);
    return chain;
}

/* A chain of one v2 codec (zfpy) for r. */
static zf_codec_chain v2_chain(const char *json, const zf_chunk_repr *r)
{
    zf_codec_chain chain = {0, NULL};
    zf_codec *c = tu_codec(json);
    ck_assert_int_eq(zf_chain_append(&chain, c), ZF_OK);
    zf_chunk_repr reprs[2];
    zf_err err = {""};
    ck_assert_msg(zf_chain_resolve(&chain, r, reprs, &err) == ZF_OK, "%s", err.msg);
    return chain;
}

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rng(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

/* Smooth-ish values of the chunk's type (every bit pattern for the integer types). */
static void fill(const zf_chunk_repr *r, uint8_t *buf)
{
    size_t n = r->nbytes / r->dtype.itemsize;
    for (size_t i = 0; i < n; i++) {
        zf_num v;
        if (r->dtype.kind == 'f')
            v = (zf_num){.kind = 'f', .v.f = sin((double)i * 0.1) * 1000 + (double)(rng() % 100)};
        else
            v = (zf_num){.kind = 'u', .v.u = rng()};
        if (r->dtype.kind == 'f')
            zf_dtype_store(&r->dtype, buf, i, v);
        else
            memcpy(buf + i * r->dtype.itemsize, &v.v.u, r->dtype.itemsize);
    }
}

/* zarrs' zfp_array.rs: what a reversible round trip gives back for an element (promotion then
 * demotion: the identity but for unsigned values past the signed maximum, which clamp). */
static void expect_reversible(const zf_chunk_repr *r, const uint8_t *in, uint8_t *exp)
{
    memcpy(exp, in, r->nbytes);
    size_t n = r->nbytes / r->dtype.itemsize;
    for (size_t i = 0; r->dtype.kind == 'u' && i < n; i++) {
        if (r->dtype.itemsize == 4) {
            uint32_t v;
            memcpy(&v, in + 4 * i, 4);
            v = v > 0x7fffffffu ? 0x7fffffffu : v;
            memcpy(exp + 4 * i, &v, 4);
        } else if (r->dtype.itemsize == 8) {
            uint64_t v;
            memcpy(&v, in + 8 * i, 8);
            v = v > 0x7fffffffffffffffull ? 0x7fffffffffffffffull : v;
            memcpy(exp + 8 * i, &v, 8);
        }
    }
}

static const char *const types[] = {"<f4", "<f8", "<i4", "<i8", "|i1", "<i2",
                                    "|u1", "<u2", "<u4", "<u8", "<M8[s]"};
static const struct {
    unsigned ndim;
    uint64_t shape[5];
} shapes[] = {{0, {0}}, {1, {1}}, {1, {13}}, {2, {5, 6}}, {3, {3, 4, 9}}, {4, {2, 3, 5, 4}},
              {4, {4, 4, 4, 4}}};

static void encode_decode(const zf_codec_chain *chain, const zf_chunk_repr *r, const uint8_t *in,
                          uint8_t **enc, size_t *enc_len, uint8_t *out, const char *what)
{
    zf_err err = {""};
    zf_status st = zf_chain_encode(chain, r, in, 0, enc, enc_len, &err);
    ck_assert_msg(st == ZF_OK, "%s: encode: %s (%s)", what, zf_status_str(st), err.msg);
    st = zf_chain_decode(chain, r, *enc, *enc_len, out, &err);
    ck_assert_msg(st == ZF_OK, "%s: decode: %s (%s)", what, zf_status_str(st), err.msg);
}

START_TEST(test_reversible_every_type_and_shape)
{
    static const char *const cfgs[] = {
        "[{\"name\": \"zfp\", \"configuration\": {\"mode\": \"reversible\"}}]",
        "[{\"name\": \"numcodecs.zfpy\", \"configuration\": {\"mode\": 5}}]",
        "[{\"name\": \"numcodecs.zfpy\", \"configuration\": {\"mode\": 4, \"tolerance\": -1}}]",
        "[{\"name\": \"zarrs.zfp\", \"configuration\": {\"mode\": \"reversible\"}}]",
        "[{\"name\": \"https://codec.zarrs.dev/array_to_bytes/zfp\", \"configuration\": "
        "{\"mode\": \"reversible\"}}]",
        "[{\"name\": \"https://codec.zarrs.dev/array_to_bytes/zfpy\", \"configuration\": "
        "{\"mode\": 5}}]",
    };
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; k++) {
                zf_chunk_repr r = tu_repr_of(types[t], shapes[s].ndim, shapes[s].shape);
                zf_codec_chain chain = v3_chain(cfgs[k], &r, ZF_OK, NULL);
                uint8_t *in = malloc(r.nbytes), *out = malloc(r.nbytes), *exp = malloc(r.nbytes);
                fill(&r, in);
                expect_reversible(&r, in, exp);
                uint8_t *enc;
                size_t enc_len;
                char what[128];
                snprintf(what, sizeof what, "%s %s ndim %u", cfgs[k], types[t], shapes[s].ndim);
                encode_decode(&chain, &r, in, &enc, &enc_len, out, what);
                ck_assert_msg(memcmp(out, exp, r.nbytes) == 0, "%s: not the same values", what);
                free(enc);
                free(in);
                free(out);
                free(exp);
                zf_chain_clear(&chain);
            }
}
END_TEST

/* The promotions of zarrs (and, for int8/int16, the registry document's formulas): int8 23 and
 * int16 15 bits to the left, uint8/uint16 first offset by 0x80/0x8000; a fixed-precision
 * encoding of the promoted values is the same stream as an int32 array of them. */
START_TEST(test_promotion_is_zarrs)
{
    uint64_t shape[1] = {16};
    zf_chunk_repr r8 = tu_repr_of("|u1", 1, shape), r32 = tu_repr_of("<i4", 1, shape);
    zf_chunk_repr ri16 = tu_repr_of("<i2", 1, shape);
    const char *cfg = "[{\"name\": \"zfp\", \"configuration\": {\"mode\": \"fixed_precision\", "
                      "\"precision\": 9}}]";
    zf_codec_chain c8 = v3_chain(cfg, &r8, ZF_OK, NULL), c32 = v3_chain(cfg, &r32, ZF_OK, NULL);
    zf_codec_chain c16 = v3_chain(cfg, &ri16, ZF_OK, NULL);
    uint8_t u8[16];
    int16_t i16[16];
    int32_t p8[16], p16[16];
    for (int i = 0; i < 16; i++) {
        u8[i] = (uint8_t)(i * 17);
        i16[i] = (int16_t)(i * 4000 - 32768);
        p8[i] = ((int32_t)u8[i] - 0x80) * (1 << 23);
        p16[i] = (int32_t)i16[i] * (1 << 15);
    }
    uint8_t *a, *b;
    size_t al, bl;
    zf_err err = {""};
    ck_assert_int_eq(zf_chain_encode(&c8, &r8, u8, 0, &a, &al, &err), ZF_OK);
    ck_assert_int_eq(zf_chain_encode(&c32, &r32, (uint8_t *)p8, 0, &b, &bl, &err), ZF_OK);
    ck_assert_uint_eq(al, bl);
    ck_assert_mem_eq(a, b, al);
    free(a);
    free(b);
    ck_assert_int_eq(zf_chain_encode(&c16, &ri16, (uint8_t *)i16, 0, &a, &al, &err), ZF_OK);
    ck_assert_int_eq(zf_chain_encode(&c32, &r32, (uint8_t *)p16, 0, &b, &bl, &err), ZF_OK);
    ck_assert_uint_eq(al, bl);
    ck_assert_mem_eq(a, b, al);
    /* demotion: the int32 stream read as int16 is the values shifted back, clamped */
    int16_t back[16];
    ck_assert_int_eq(zf_chain_decode(&c16, &ri16, b, bl, (uint8_t *)back, &err), ZF_OK);
    int32_t dec32[16];
    ck_assert_int_eq(zf_chain_decode(&c32, &r32, b, bl, (uint8_t *)dec32, &err), ZF_OK);
    for (int i = 0; i < 16; i++) {
        int32_t v = dec32[i] >> 15;
        v = v < -0x8000 ? -0x8000 : v > 0x7fff ? 0x7fff : v;
        ck_assert_int_eq(back[i], v);
    }
    free(a);
    free(b);
    zf_chain_clear(&c8);
    zf_chain_clear(&c16);
    zf_chain_clear(&c32);
}
END_TEST

START_TEST(test_lossy_modes)
{
    static const struct {
        const char *cfg;
        double tol; /* absolute error allowed on values of magnitude ~1100, 0: not checked */
    } cases[] = {
        {"[{\"name\": \"zfp\", \"configuration\": {\"mode\": \"fixed_accuracy\", \"tolerance\": "
         "0.05}}]",
         0.05},
        {"[{\"name\": \"zfp\", \"configuration\": {\"mode\": \"fixed_precision\", \"precision\": "
         "24}}]",
         0.5},
        {"[{\"name\": \"zfp\", \"configuration\": {\"mode\": \"fixed_rate\", \"rate\": 10.5}}]", 0},
        {"[{\"name\": \"zfp\", \"configuration\": {\"mode\": \"expert\", \"minbits\": 1, "
         "\"maxbits\": 13, \"maxprec\": 19, \"minexp\": -2}}]",
         0},
        {"[{\"name\": \"numcodecs.zfpy\", \"configuration\": {\"mode\": 4, \"tolerance\": "
         "0.01}}]",
         0.01},
        {"[{\"name\": \"numcodecs.zfpy\", \"configuration\": {\"mode\": 2, \"rate\": 20}}]", 0},
        {"[{\"name\": \"numcodecs.zfpy\", \"configuration\": {\"mode\": 3, \"precision\": 30}}]",
         0.01},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (size_t t = 0; t < 2; t++)
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
                zf_chunk_repr r = tu_repr_of(types[t], shapes[s].ndim, shapes[s].shape);
                zf_codec_chain chain = v3_chain(cases[k].cfg, &r, ZF_OK, NULL);
                uint8_t *in = malloc(r.nbytes), *out = malloc(r.nbytes);
                fill(&r, in);
                uint8_t *enc;
                size_t enc_len;
                char what[256];
                snprintf(what, sizeof what, "%s %s ndim %u", cases[k].cfg, types[t],
                         shapes[s].ndim);
                encode_decode(&chain, &r, in, &enc, &enc_len, out, what);
                size_t n = r.nbytes / r.dtype.itemsize;
                for (size_t i = 0; cases[k].tol > 0 && i < n; i++) {
                    double a = zf_dtype_load(&r.dtype, in, i).v.f;
                    double b = zf_dtype_load(&r.dtype, out, i).v.f;
                    ck_assert_msg(fabs(a - b) <= cases[k].tol, "%s: %g vs %g", what, a, b);
                }
                free(enc);
                free(in);
                free(out);
                zf_chain_clear(&chain);
            }
}
END_TEST

START_TEST(test_refusals)
{
    uint64_t s1[1] = {8}, s5[5] = {1, 2, 1, 2, 2};
    zf_chunk_repr f2 = tu_repr_of("<f2", 1, s1), i4 = tu_repr_of("<i4", 1, s1);
    zf_chunk_repr f4 = tu_repr_of("<f4", 1, s1), d5 = tu_repr_of("<f4", 5, s5);
    zf_chunk_repr be = tu_repr_of(">f8", 1, s1), b1 = tu_repr_of("|b1", 1, s1);
    char msg[512];
    const char *rev = "[{\"name\": \"zfp\", \"configuration\": {\"mode\": \"reversible\"}}]";
    zf_codec_chain c = v3_chain(rev, &f2, ZF_ERR_UNSUPPORTED, msg);
    ck_assert_str_eq(msg, "zfp: data type <f2 is not supported (zfp takes float32, float64 and "
                          "integers of 8 to 64 bits)");
    c = v3_chain(rev, &b1, ZF_ERR_UNSUPPORTED, msg);
    c = v3_chain(rev, &d5, ZF_ERR_UNSUPPORTED, msg);
    ck_assert_msg(strstr(msg, "chunks of 5 dimensions are not supported"), "%s", msg);
    /* zarrs' squeeze codec before it brings such a chunk to 3 dimensions */
    c = v3_chain("[{\"name\": \"zarrs.squeeze\"}, {\"name\": \"zfp\", \"configuration\": "
                 "{\"mode\": \"reversible\"}}]",
                 &d5, ZF_OK, msg);
    zf_chain_clear(&c);
    zf_codec_chain v2 = v2_chain("{\"id\": \"zfpy\", \"mode\": 4, \"tolerance\": 0.1}", &i4);
    zf_chain_clear(&v2);
    zf_codec *z = tu_codec("{\"id\": \"zfpy\", \"mode\": 4, \"tolerance\": 0.1}");
    zf_chunk_repr enc;
    zf_err err = {""};
    ck_assert_int_eq(z->ops->resolve(z, &be, &enc, &err), ZF_ERR_UNSUPPORTED);
    ck_assert_str_eq(err.msg, "zfpy: data type >f8: big-endian elements are not supported");
    zf_codec_free(z);
    c = v3_chain("[{\"name\": \"zfp\", \"configuration\": {\"mode\": \"fixed_accuracy\", "
                 "\"tolerance\": 1}}]",
                 &i4, ZF_ERR_INVALID, msg);
    ck_assert_str_eq(msg, "zfp: mode \"fixed_accuracy\" is for float32 and float64 "
                          "data, not <i4");
    static const struct {
        const char *cfg, *msg;
    } bad[] = {
        {"{}", "zfp: \"mode\": missing"},
        {"{\"mode\": \"fast\"}", "zfp: \"mode\": \"fast\": expected \"reversible\""},
        {"{\"mode\": \"reversible\", \"rate\": 3}", "zfp: \"rate\": unknown configuration field"},
        {"{\"mode\": \"fixed_rate\"}", "zfp: \"rate\": missing"},
        {"{\"mode\": \"fixed_rate\", \"rate\": -1}", "zfp: \"rate\": -1: expected 0 to 512"},
        {"{\"mode\": \"fixed_rate\", \"rate\": 600}", "zfp: \"rate\": 600: expected 0 to 512"},
        {"{\"mode\": \"fixed_precision\", \"precision\": -3}", "zfp: \"precision\""},
        {"{\"mode\": \"fixed_accuracy\", \"tolerance\": \"x\"}", "zfp: \"tolerance\""},
        {"{\"mode\": \"expert\", \"minbits\": 5, \"maxbits\": 4, \"maxprec\": 10, \"minexp\": 0}",
         "zfp: \"minbits\": 5 is more than \"maxbits\" 4"},
        {"{\"mode\": \"expert\", \"minbits\": 40000, \"maxbits\": 40000, \"maxprec\": 10, "
         "\"minexp\": 0}",
         "zfp: \"minbits\""},
        {"{\"mode\": \"expert\", \"minbits\": 1, \"maxbits\": 40, \"maxprec\": 65, "
         "\"minexp\": 0}",
         "zfp: \"maxprec\""},
        {"{\"mode\": \"expert\", \"minbits\": 1, \"maxbits\": 40, \"maxprec\": 6, "
         "\"minexp\": -2147483648}",
         "zfp: \"minexp\""},
        {"{\"mode\": \"expert\", \"minbits\": 1, \"maxbits\": 40, \"maxprec\": 6}",
         "zfp: \"minexp\": missing"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char json[512];
        snprintf(json, sizeof json, "[{\"name\": \"zfp\", \"configuration\": %s}]", bad[i].cfg);
        c = v3_chain(json, &f4, ZF_ERR_INVALID, msg);
        ck_assert_msg(strstr(msg, bad[i].msg), "%s: %s", json, msg);
    }
    c = v3_chain("[{\"name\": \"zfp\"}]", &f4, ZF_ERR_INVALID, msg);
    ck_assert_msg(strstr(msg, "zfp: \"configuration\": missing"), "%s", msg);
    ck_assert_int_eq(tu_codec_status("{\"id\": \"zfpy\", \"mode\": 1}", &err), ZF_ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "zfpy: \"mode\": 1: expected 2"), "%s", err.msg);
    ck_assert_int_eq(tu_codec_status("{\"id\": \"zfpy\", \"rate\": \"x\"}", &err),
                     ZF_ERR_INVALID);
    /* a rate whose blocks would not hold a float's exponent: not written (zfpy would overrun) */
    z = tu_codec("{\"id\": \"zfpy\", \"mode\": 2, \"rate\": 1}");
    float vals[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    uint8_t *out;
    size_t out_len;
    ck_assert_int_eq(z->ops->encode(z, &f4, (uint8_t *)vals, sizeof vals, 0, &out, &out_len,
                                    &err),
                     ZF_ERR_INVALID);
    ck_assert_str_eq(err.msg, "zfpy: 4 bits per block is less than the 9 a block of float32 "
                              "needs");
    zf_codec_free(z);
}
END_TEST

/* Decode every truncation and many single-byte changes of an encoding: a truncation by a word
 * or more is ZF_ERR_CORRUPT; anything else decodes or is ZF_ERR_CORRUPT. */
static void hostile(const zf_codec_chain *chain, const zf_chunk_repr *r, const uint8_t *enc,
                    size_t len, const uint8_t *good, const char *what)
{
    uint8_t *out = malloc(r->nbytes);
    zf_err err = {""};
    for (size_t cut = 0; cut < len; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1); /* exactly cut bytes: ASan sees any overread */
        memcpy(copy, enc, cut);
        zf_status st = zf_chain_decode(chain, r, copy, cut, out, &err);
        if (cut + 8 <= len)
            ck_assert_msg(st == ZF_ERR_CORRUPT, "%s: %zu of %zu bytes: %s", what, cut, len,
                          zf_status_str(st));
        else
            ck_assert_msg(st == ZF_ERR_CORRUPT || (st == ZF_OK && !memcmp(out, good, r->nbytes)),
                          "%s: %zu of %zu bytes: %s", what, cut, len, zf_status_str(st));
        free(copy);
    }
    uint8_t *copy = malloc(len);
    for (size_t i = 0; i < 2000; i++) {
        memcpy(copy, enc, len);
        size_t at = rng() % len;
        copy[at] = (uint8_t)(i < 1000 ? copy[at] ^ (1u << (rng() % 8)) : rng());
        zf_status st = zf_chain_decode(chain, r, copy, len, out, &err);
        ck_assert_msg(st == ZF_OK || st == ZF_ERR_CORRUPT, "%s: %s", what, zf_status_str(st));
    }
    free(copy);
    free(out);
}

START_TEST(test_hostile_streams)
{
    static const char *const cfgs[] = {
        "[{\"name\": \"zfp\", \"configuration\": {\"mode\": \"reversible\"}}]",
        "[{\"name\": \"zfp\", \"configuration\": {\"mode\": \"fixed_rate\", \"rate\": 4}}]",
        "[{\"name\": \"zfp\", \"configuration\": {\"mode\": \"fixed_precision\", \"precision\": "
        "16}}]",
        "[{\"name\": \"zfp\", \"configuration\": {\"mode\": \"expert\", \"minbits\": 32768, "
        "\"maxbits\": 32768, \"maxprec\": 64, \"minexp\": -1074}}]",
        "[{\"name\": \"numcodecs.zfpy\", \"configuration\": {\"mode\": 4, \"tolerance\": "
        "0.001}}]",
        "[{\"name\": \"numcodecs.zfpy\", \"configuration\": {\"mode\": 5}}]",
    };
    static const char *const ht[] = {"<f8", "<i4", "|u1"};
    for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; k++)
        for (size_t t = 0; t < sizeof ht / sizeof ht[0]; t++)
            for (size_t s = 2; s < 6; s++) {
                zf_chunk_repr r = tu_repr_of(ht[t], shapes[s].ndim, shapes[s].shape);
                zf_codec_chain chain = v3_chain(cfgs[k], &r, ZF_OK, NULL);
                uint8_t *in = malloc(r.nbytes), *good = malloc(r.nbytes), *enc;
                size_t len;
                fill(&r, in);
                char what[256];
                snprintf(what, sizeof what, "%s %s ndim %u", cfgs[k], ht[t], shapes[s].ndim);
                encode_decode(&chain, &r, in, &enc, &len, good, what);
                hostile(&chain, &r, enc, len, good, what);
                free(enc);
                free(in);
                free(good);
                zf_chain_clear(&chain);
            }
}
END_TEST

/* A zfpy header that does not describe the chunk, garbage, and a header whose mode makes every
 * block skip 32,768 bits (the largest minbits a header can state) over a short stream. */
START_TEST(test_zfpy_header_checks)
{
    uint64_t s100[1] = {100}, s99[1] = {99}, s10[2] = {10, 10};
    zf_chunk_repr f4 = tu_repr_of("<f4", 1, s100), f8 = tu_repr_of("<f8", 1, s100);
    zf_chunk_repr f4_99 = tu_repr_of("<f4", 1, s99), f4_2d = tu_repr_of("<f4", 2, s10);
    const char *cfg = "{\"id\": \"zfpy\", \"mode\": 4, \"tolerance\": 0.5}";
    zf_codec_chain c4 = v2_chain(cfg, &f4), c8 = v2_chain(cfg, &f8), c99 = v2_chain(cfg, &f4_99);
    zf_codec_chain c2d = v2_chain(cfg, &f4_2d);
    float v[100], out[100];
    double d[100];
    for (int i = 0; i < 100; i++)
        v[i] = (float)i;
    uint8_t *enc;
    size_t len;
    zf_err err = {""};
    ck_assert_int_eq(zf_chain_encode(&c4, &f4, (uint8_t *)v, 0, &enc, &len, &err), ZF_OK);
    ck_assert_int_eq(zf_chain_decode(&c8, &f8, enc, len, (uint8_t *)d, &err), ZF_ERR_CORRUPT);
    ck_assert_str_eq(err.msg, "zfpy: the zfp header says 100 values of float32, the chunk holds "
                              "100 of float64");
    ck_assert_int_eq(zf_chain_decode(&c99, &f4_99, enc, len, (uint8_t *)out, &err),
                     ZF_ERR_CORRUPT);
    /* numcodecs reshapes what zfpy decodes: a 1-D stream fills a 10 x 10 chunk */
    ck_assert_int_eq(zf_chain_decode(&c2d, &f4_2d, enc, len, (uint8_t *)out, &err), ZF_OK);
    for (int i = 0; i < 100; i++)
        ck_assert(fabsf(out[i] - v[i]) <= 0.5f);
    uint8_t junk[64];
    memset(junk, 0x5a, sizeof junk);
    ck_assert_int_eq(zf_chain_decode(&c4, &f4, junk, sizeof junk, (uint8_t *)out, &err),
                     ZF_ERR_CORRUPT);
    ck_assert_str_eq(err.msg, "zfpy: no valid zfp header");
    ck_assert_int_eq(zf_chain_decode(&c4, &f4, junk, 0, (uint8_t *)out, &err), ZF_ERR_CORRUPT);
    free(enc);

    /* expert mode with minbits = maxbits = 32768 in the header, 64 bytes of stream */
    uint8_t buf[4096] __attribute__((aligned(8)));
    memset(buf, 0, sizeof buf);
    bitstream *bs = stream_open(buf, sizeof buf);
    zfp_stream *zs = zfp_stream_open(bs);
    zfp_field *f = zfp_field_1d(v, zfp_type_float, 100);
    ck_assert(zfp_stream_set_params(zs, 32768, 32768, 64, -1074));
    ck_assert_uint_gt(zfp_write_header(zs, f, ZFP_HEADER_FULL), 0);
    zfp_stream_flush(zs);
    size_t hlen = zfp_stream_compressed_size(zs);
    memset(buf + hlen, 0xff, 64);
    uint8_t *copy = malloc(hlen + 64);
    memcpy(copy, buf, hlen + 64);
    ck_assert_int_eq(zf_chain_decode(&c4, &f4, copy, hlen + 64, (uint8_t *)out, &err),
                     ZF_ERR_CORRUPT);
    ck_assert_msg(strstr(err.msg, "the stream ends before block 1 of 25"), "%s", err.msg);
    free(copy);
    zfp_field_free(f);
    zfp_stream_close(zs);
    stream_close(bs);
    zf_chain_clear(&c4);
    zf_chain_clear(&c8);
    zf_chain_clear(&c99);
    zf_chain_clear(&c2d);
}
END_TEST

Suite *codec_zfp_suite(void)
{
    Suite *s = suite_create("zfp");
    TCase *tc = tcase_create("zfp");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_reversible_every_type_and_shape);
    tcase_add_test(tc, test_promotion_is_zarrs);
    tcase_add_test(tc, test_lossy_modes);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_hostile_streams);
    tcase_add_test(tc, test_zfpy_header_checks);
    suite_add_tcase(s, tc);
    return s;
}
