/* test_registry.c — the zarr-extensions codecs scale_offset and conditional, and zarrs'
 * zarrs.vlen and zarrs.vlen_v2 (codec_impl.h), through zf_chain_from_v3 as the metadata layer
 * builds them.
 *
 * Where the expected values come from:
 * - scale_offset: the registry document's formulas evaluated here in C's own float, double and
 *   integer arithmetic (float32 chosen so that rounding once from double differs for some of
 *   the values: the test counts them); the integration test compares with numpy;
 * - conditional: headers and bodies built here from the document's "Detailed Description"
 *   (zlib's compress2 for the inner codec, CRC-32C bit by bit);
 * - zarrs.vlen / vlen_v2: chunks laid out here as zarrs' vlen.rs documents them, the text as
 *   docs/formats.md escapes it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "codec_impl.h"
#include "testutil.h"

/* The bytes codec, little-endian (v3 "bytes": endian is required for multi-byte types). */
#define LE "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}"

#define ck_assert_contains(msg, part)                                                             \
    ck_assert_msg(strstr((msg), (part)) != NULL, "message \"%s\" lacks \"%s\"", (msg), (part))

static zf_status build(const char *json, const zf_chunk_repr *r, const void *fill,
                       zf_codec_chain *chain, zf_err *err)
{
    yajl_val v = tu_json(json);
    zf_status st = zf_chain_from_v3(v, ZF_CODECS_V3, r, fill, chain, err);
    yajl_tree_free(v);
    return st;
}

static zf_codec_chain build_ok(const char *json, const zf_chunk_repr *r, const void *fill)
{
    zf_codec_chain chain;
    zf_err err = {""};
    zf_status st = build(json, r, fill, &chain, &err);
    ck_assert_msg(st == ZF_OK, "%s: %s (%s)", json, zf_status_str(st), err.msg);
    return chain;
}

/* The status of building json for r (the chain freed), its message in msg. */
static zf_status build_status(const char *json, const zf_chunk_repr *r, char *msg)
{
    zf_codec_chain chain;
    zf_err err = {""};
    zf_status st = build(json, r, NULL, &chain, &err);
    if (st == ZF_OK)
        zf_chain_clear(&chain);
    strcpy(msg, err.msg);
    return st;
}

static zf_status decode(const zf_codec_chain *ch, const zf_chunk_repr *r, const void *in,
                        size_t n, void *out, char *msg)
{
    zf_err err = {""};
    zf_status st = zf_chain_decode(ch, r, in, n, out, &err);
    strcpy(msg, err.msg);
    return st;
}

/* ----- scale_offset ----- */

#define SO(cfg) "[{\"name\": \"scale_offset\", \"configuration\": " cfg "}, " LE "]"

/* Document "Decoding": out = (in / scale) + offset, in float32: each step rounded to float. */
START_TEST(test_scale_offset_float32)
{
    uint64_t shape[1] = {1000};
    zf_chunk_repr r = tu_repr_of("<f4", 1, shape);
    zf_codec_chain ch = build_ok(SO("{\"offset\": 5, \"scale\": 0.1}"), &r, NULL);
    float in[1000], out[1000], want[1000];
    const float sc = 0.1f, off = 5.0f;
    int differ = 0;
    for (int i = 0; i < 1000; i++) {
        in[i] = (float)((i * 7919 % 2003) - 1000) * 1.37f + (float)i / 3.0f;
        volatile float q = in[i] / sc; /* volatile: one float rounding per step */
        want[i] = q + off;
        differ += want[i] != (float)((double)in[i] / (double)sc + (double)off);
    }
    char msg[512];
    ck_assert_int_eq(decode(&ch, &r, in, sizeof in, out, msg), ZF_OK);
    ck_assert_msg(memcmp(out, want, sizeof out) == 0, "float32 decode differs");
    ck_assert_int_gt(differ, 0); /* double arithmetic would have failed this test */
    /* encode: (in - offset) * scale, each step in float32 */
    uint8_t *enc;
    size_t enc_len;
    zf_err err = {""};
    ck_assert_int_eq(zf_chain_encode(&ch, &r, (const uint8_t *)want, 0, &enc, &enc_len, &err),
                     ZF_OK);
    ck_assert_uint_eq(enc_len, sizeof want);
    for (int i = 0; i < 1000; i++) {
        volatile float d = want[i] - off;
        float e = d * sc, got;
        memcpy(&got, enc + 4 * i, 4);
        ck_assert_msg(got == e, "element %d: %g, want %g", i, got, e);
    }
    free(enc);
    zf_chain_clear(&ch);
}
END_TEST

START_TEST(test_scale_offset_float_special)
{
    uint64_t shape[1] = {4};
    zf_chunk_repr r = tu_repr_of("<f8", 1, shape);
    char msg[512];
    /* NaN passes through; "0x..." bits; overflow and 0/0-like results are corrupt */
    zf_codec_chain ch = build_ok(SO("{\"offset\": \"NaN\", \"scale\": \"0x4000000000000000\"}"),
                                 &r, NULL); /* scale 2.0 */
    double in[4] = {1, -2, INFINITY, 0}, out[4];
    ck_assert_int_eq(decode(&ch, &r, in, sizeof in, out, msg), ZF_OK);
    for (int i = 0; i < 4; i++)
        ck_assert(isnan(out[i]));
    zf_chain_clear(&ch);
    ch = build_ok(SO("{\"scale\": 1e-300}"), &r, NULL);
    double big[4] = {1e10, 1, 2, 3};
    ck_assert_int_eq(decode(&ch, &r, big, sizeof big, out, msg), ZF_ERR_CORRUPT);
    ck_assert_contains(msg, "scale_offset: element 0");
    zf_chain_clear(&ch);
    /* float16: the document's arithmetic in half precision */
    zf_chunk_repr h = tu_repr_of("<f2", 1, shape);
    ch = build_ok(SO("{\"offset\": 1, \"scale\": 3}"), &h, NULL);
    uint16_t hin[4], hout[4];
    float hv[4] = {3, 1, 100, -7};
    for (int i = 0; i < 4; i++)
        hin[i] = zf_float_to_half(hv[i]);
    ck_assert_int_eq(decode(&ch, &h, hin, sizeof hin, hout, msg), ZF_OK);
    for (int i = 0; i < 4; i++) {
        float q = zf_half_to_float(zf_float_to_half(hv[i] / 3.0f));
        ck_assert_uint_eq(hout[i], zf_float_to_half(q + 1.0f));
    }
    zf_chain_clear(&ch);
}
END_TEST

START_TEST(test_scale_offset_integers)
{
    uint64_t shape[1] = {4};
    char msg[512];
    zf_chunk_repr r = tu_repr_of("<i2", 1, shape);
    zf_codec_chain ch = build_ok(SO("{\"offset\": -1000, \"scale\": 3}"), &r, NULL);
    int16_t in[4] = {-30000, 3, 0, 29997}, out[4];
    ck_assert_int_eq(decode(&ch, &r, in, sizeof in, out, msg), ZF_OK);
    ck_assert_int_eq(out[0], -11000);
    ck_assert_int_eq(out[1], -999);
    ck_assert_int_eq(out[3], 8999);
    /* a remainder: no integer value */
    int16_t rem[4] = {0, 3, 4, 6};
    ck_assert_int_eq(decode(&ch, &r, rem, sizeof rem, out, msg), ZF_ERR_CORRUPT);
    ck_assert_contains(msg, "element 2 (4)");
    /* encode: (in + 1000) * 3 past int16 */
    int16_t big[4] = {0, 1, 10000, 0};
    uint8_t *enc = NULL;
    size_t n;
    zf_err err = {""};
    ck_assert_int_eq(zf_chain_encode(&ch, &r, (const uint8_t *)big, 0, &enc, &n, &err),
                     ZF_ERR_INVALID);
    ck_assert_contains(err.msg, "scale_offset: element 2");
    ck_assert_ptr_null(enc);
    zf_chain_clear(&ch);
    /* unsigned: (in - offset) below 0; decode past the top */
    zf_chunk_repr u = tu_repr_of("|u1", 1, shape);
    ch = build_ok(SO("{\"offset\": 200}"), &u, NULL);
    uint8_t uin[4] = {0, 55, 56, 1}, uout[4];
    ck_assert_int_eq(decode(&ch, &u, uin, 4, uout, msg), ZF_ERR_CORRUPT);
    ck_assert_contains(msg, "element 2 (56)");
    uint8_t low[4] = {199, 200, 201, 255};
    err.msg[0] = 0;
    ck_assert_int_eq(zf_chain_encode(&ch, &u, low, 0, &enc, &n, &err), ZF_ERR_INVALID);
    zf_chain_clear(&ch);
    /* int64 and uint64 limits: exact, overflow detected */
    zf_chunk_repr l = tu_repr_of("<i8", 1, shape);
    ch = build_ok(SO("{\"offset\": -9223372036854775808, \"scale\": -1}"), &l, NULL);
    int64_t lin[4] = {0, 0, 0, INT64_MIN}, lout[4];
    ck_assert_int_eq(decode(&ch, &l, lin, sizeof lin, lout, msg), ZF_ERR_CORRUPT); /* MIN/-1 */
    lin[3] = 0;
    lin[1] = 5; /* -5 + MIN */
    ck_assert_int_eq(decode(&ch, &l, lin, sizeof lin, lout, msg), ZF_ERR_CORRUPT);
    int64_t ok[4] = {0, 0, -1, 0};
    ck_assert_int_eq(decode(&ch, &l, ok, sizeof ok, lout, msg), ZF_OK);
    ck_assert(lout[2] == INT64_MIN + 1);
    zf_chain_clear(&ch);
    zf_chunk_repr q = tu_repr_of("<u8", 1, shape);
    ch = build_ok(SO("{\"offset\": 18446744073709551615}"), &q, NULL);
    uint64_t qin[4] = {0, 0, 1, 0}, qout[4];
    ck_assert_int_eq(decode(&ch, &q, qin, sizeof qin, qout, msg), ZF_ERR_CORRUPT);
    qin[2] = 0;
    ck_assert_int_eq(decode(&ch, &q, qin, sizeof qin, qout, msg), ZF_OK);
    ck_assert(qout[0] == UINT64_MAX);
    zf_chain_clear(&ch);
    /* wrong input size */
    ch = build_ok(SO("{}"), &u, NULL);
    ck_assert_int_eq(decode(&ch, &u, uin, 3, uout, msg), ZF_ERR_CORRUPT);
    zf_chain_clear(&ch);
}
END_TEST

START_TEST(test_scale_offset_config)
{
    uint64_t shape[1] = {4};
    zf_chunk_repr f = tu_repr_of("<f4", 1, shape), i8 = tu_repr_of("|i1", 1, shape);
    zf_chunk_repr b = tu_repr_of("|b1", 1, shape), m = tu_repr_of("<M8[s]", 1, shape);
    char msg[512];
    ck_assert_int_eq(build_status(SO("{\"offset\": 1, \"factor\": 2}"), &f, msg), ZF_ERR_INVALID);
    ck_assert_contains(msg, "\"factor\": unknown configuration field");
    ck_assert_int_eq(build_status(SO("{\"offset\": \"abc\"}"), &f, msg), ZF_ERR_INVALID);
    ck_assert_int_eq(build_status(SO("{\"offset\": \"0x123456789\"}"), &f, msg),
                     ZF_ERR_INVALID);
    ck_assert_int_eq(build_status(SO("{\"scale\": true}"), &f, msg), ZF_ERR_INVALID);
    ck_assert_int_eq(build_status(SO("{\"scale\": 0}"), &f, msg), ZF_ERR_INVALID);
    ck_assert_int_eq(build_status(SO("{\"offset\": 1.5}"), &i8, msg), ZF_ERR_INVALID);
    ck_assert_int_eq(build_status(SO("{\"offset\": 1e2}"), &i8, msg), ZF_ERR_INVALID);
    ck_assert_int_eq(build_status(SO("{\"offset\": 128}"), &i8, msg), ZF_ERR_INVALID);
    ck_assert_int_eq(build_status(SO("{\"offset\": -128}"), &i8, msg), ZF_OK);
    ck_assert_int_eq(build_status(SO("{\"offset\": 1}"), &b, msg), ZF_ERR_INVALID);
    ck_assert_int_eq(build_status(SO("{\"offset\": 1}"), &m, msg), ZF_ERR_INVALID);
    ck_assert_int_eq(build_status("[{\"name\": \"scale_offset\", \"configuration\": 3}, " LE "]",
                                  &f, msg), ZF_ERR_INVALID);
    ck_assert_int_eq(build_status("[\"scale_offset\", " LE "]", &f, msg), ZF_OK);
    /* after the array -> bytes codec */
    ck_assert_int_eq(build_status("[" LE ", \"scale_offset\"]", &f, msg), ZF_ERR_INVALID);
}
END_TEST

/* "Fill value handling": a sharding codec after it fills empty inner chunks with the encoded
 * fill value, so they decode to the array's; a fill value it cannot encode refuses the chain
 * only then. */
START_TEST(test_scale_offset_fill)
{
    uint64_t shape[1] = {8};
    zf_chunk_repr r = tu_repr_of("<i4", 1, shape);
    const char *json = "[{\"name\": \"scale_offset\", \"configuration\": {\"offset\": 5, "
                       "\"scale\": 2}}, {\"name\": \"sharding_indexed\", \"configuration\": "
                       "{\"chunk_shape\": [4], \"codecs\": [" LE "], \"index_codecs\": "
                       "[" LE "], \"index_location\": \"end\"}}]";
    int32_t fill = 7;
    zf_codec_chain ch = build_ok(json, &r, &fill);
    uint8_t shard[16 + 32];
    int32_t inner[4] = {0, 2, 4, 6};
    memcpy(shard, inner, 16);
    tu_put_le64(shard + 16, 0);
    tu_put_le64(shard + 24, 16);
    tu_put_le64(shard + 32, UINT64_MAX);
    tu_put_le64(shard + 40, UINT64_MAX);
    int32_t out[8];
    char msg[512];
    ck_assert_int_eq(decode(&ch, &r, shard, sizeof shard, out, msg), ZF_OK);
    int32_t want[8] = {5, 6, 7, 8, 7, 7, 7, 7};
    ck_assert(memcmp(out, want, sizeof want) == 0);
    zf_chain_clear(&ch);
    /* uint8 fill 3, offset 5: 3 - 5 is not a uint8 */
    zf_chunk_repr u = tu_repr_of("|u1", 1, shape);
    uint8_t ufill = 3;
    zf_codec_chain uc;
    zf_err err = {""};
    ck_assert_int_eq(build(json, &u, &ufill, &uc, &err), ZF_ERR_INVALID);
    ck_assert_contains(err.msg, "sharding_indexed fills empty inner chunks");
    ck_assert_int_eq(build(SO("{\"offset\": 5}"), &u, &ufill, &uc, &err), ZF_OK);
    zf_chain_clear(&uc);
}
END_TEST

/* ----- conditional ----- */

static uint32_t crc32c_bits(const uint8_t *p, size_t n)
{
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = crc & 1 ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    }
    return ~crc;
}

#define COND "{\"name\": \"conditional\", \"configuration\": "

START_TEST(test_conditional_decode)
{
    uint64_t shape[1] = {256};
    zf_chunk_repr r = tu_repr_of("<u2", 1, shape);
    uint16_t vals[256];
    for (int i = 0; i < 256; i++)
        vals[i] = (uint16_t)(i / 5);
    uLongf zlen = compressBound(sizeof vals);
    uint8_t *z = malloc(zlen);
    ck_assert_int_eq(compress2(z, &zlen, (const Bytef *)vals, sizeof vals, 6), Z_OK);
    /* [zlib, crc32c] with header_bits 16: bit 0 zlib, bit 1 crc32c */
    zf_codec_chain ch = build_ok("[" LE ", " COND "{\"codecs\": [{\"name\": \"numcodecs.zlib\", "
                                 "\"configuration\": {\"level\": 6}}, \"crc32c\"], "
                                 "\"header_bits\": 16}}]", &r, NULL);
    uint8_t buf[2 + 1024];
    uint16_t out[256];
    char msg[512];
    for (unsigned mask = 0; mask < 4; mask++) {
        size_t n = 0;
        buf[0] = (uint8_t)mask;
        buf[1] = 0;
        if (mask & 1) {
            memcpy(buf + 2, z, zlen);
            n = zlen;
        } else {
            memcpy(buf + 2, vals, sizeof vals);
            n = sizeof vals;
        }
        if (mask & 2) {
            uint32_t c = crc32c_bits(buf + 2, n);
            tu_put_le32(buf + 2 + n, c);
            n += 4;
        }
        memset(out, 0, sizeof out);
        ck_assert_msg(decode(&ch, &r, buf, 2 + n, out, msg) == ZF_OK, "mask %u: %s", mask, msg);
        ck_assert(memcmp(out, vals, sizeof vals) == 0);
        if (mask & 2) { /* a bad checksum where the header says there is one */
            buf[2] ^= 1;
            ck_assert_int_eq(decode(&ch, &r, buf, 2 + n, out, msg), ZF_ERR_CORRUPT);
            buf[2] ^= 1;
        }
    }
    /* reserved bits (2..15) and a truncated header */
    buf[0] = 0;
    buf[1] = 0x80;
    memcpy(buf + 2, vals, sizeof vals);
    ck_assert_int_eq(decode(&ch, &r, buf, 2 + sizeof vals, out, msg), ZF_ERR_CORRUPT);
    ck_assert_contains(msg, "header bit 15 is set");
    ck_assert_int_eq(decode(&ch, &r, buf, 1, out, msg), ZF_ERR_CORRUPT);
    buf[1] = 0;
    ck_assert_int_eq(decode(&ch, &r, buf, 2 + sizeof vals - 1, out, msg), ZF_ERR_CORRUPT);
    buf[0] = 1; /* says zlib, holds raw bytes */
    ck_assert_int_eq(decode(&ch, &r, buf, 2 + sizeof vals, out, msg), ZF_ERR_CORRUPT);
    zf_chain_clear(&ch);
    free(z);
}
END_TEST

/* After a compressor: the conditional's decoded size comes from its data. */
START_TEST(test_conditional_after_compressor)
{
    uint64_t shape[1] = {4000};
    zf_chunk_repr r = tu_repr_of("|u1", 1, shape);
    uint8_t vals[4000];
    tu_fill(vals, sizeof vals, 5);
    zf_codec_chain ch = build_ok("[" LE ", {\"name\": \"numcodecs.zlib\"}, " COND
                                 "{\"codecs\": [{\"name\": \"numcodecs.zlib\"}]}}]", &r, NULL);
    uLongf l1 = compressBound(sizeof vals), l2;
    uint8_t *z1 = malloc(l1), *z2;
    ck_assert_int_eq(compress2(z1, &l1, vals, sizeof vals, 1), Z_OK);
    l2 = compressBound(l1);
    z2 = malloc(l2 + 1);
    ck_assert_int_eq(compress2(z2 + 1, &l2, z1, l1, 1), Z_OK);
    uint8_t out[4000];
    char msg[512];
    z2[0] = 1;
    ck_assert_msg(decode(&ch, &r, z2, l2 + 1, out, msg) == ZF_OK, "%s", msg);
    ck_assert(memcmp(out, vals, sizeof vals) == 0);
    uint8_t *raw = malloc(l1 + 1);
    raw[0] = 0;
    memcpy(raw + 1, z1, l1);
    ck_assert_msg(decode(&ch, &r, raw, l1 + 1, out, msg) == ZF_OK, "%s", msg);
    ck_assert(memcmp(out, vals, sizeof vals) == 0);
    raw[0] = 2;
    ck_assert_int_eq(decode(&ch, &r, raw, l1 + 1, out, msg), ZF_ERR_CORRUPT);
    free(raw);
    free(z1);
    free(z2);
    zf_chain_clear(&ch);
}
END_TEST

START_TEST(test_conditional_encode)
{
    uint64_t shape[1] = {2048};
    zf_chunk_repr r = tu_repr_of("<i4", 1, shape);
    zf_codec_chain ch = build_ok("[" LE ", " COND "{\"codecs\": [{\"name\": "
                                 "\"numcodecs.shuffle\", \"configuration\": {\"elementsize\": 4}},"
                                 " {\"name\": \"zstd\", \"configuration\": {\"level\": 1}}]}}]",
                                 &r, NULL);
    int32_t *a = malloc(2048 * 4), *back = malloc(2048 * 4);
    uint64_t x = 12345;
    for (int kind = 0; kind < 2; kind++) {
        for (int i = 0; i < 2048; i++) { /* splitmix64: incompressible */
            uint64_t z = (x += 0x9E3779B97F4A7C15ull);
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
            a[i] = kind ? (int32_t)(uint32_t)(z >> 32) : i / 9;
        }
        uint8_t *enc;
        size_t n;
        zf_err err = {""};
        ck_assert_int_eq(zf_chain_encode(&ch, &r, (const uint8_t *)a, 0, &enc, &n, &err), ZF_OK);
        /* compressible: both applied and smaller; random: stored raw after a zero header */
        ck_assert_uint_eq(enc[0], (kind ? 0u : 3u));
        if (kind)
            ck_assert(n == 1 + 2048 * 4 && memcmp(enc + 1, a, 2048 * 4) == 0);
        else
            ck_assert_uint_lt(n, 2048 * 4);
        char msg[512];
        ck_assert_int_eq(decode(&ch, &r, enc, n, back, msg), ZF_OK);
        ck_assert(memcmp(a, back, 2048 * 4) == 0);
        free(enc);
    }
    free(a);
    free(back);
    zf_chain_clear(&ch);
    /* an empty list: a zero header, or none at all */
    zf_chunk_repr u = tu_repr_of("|u1", 1, shape);
    ch = build_ok("[" LE ", " COND "{\"codecs\": []}}]", &u, NULL);
    uint8_t v[2048] = {1, 2, 3}, *enc;
    size_t n;
    zf_err err = {""};
    ck_assert_int_eq(zf_chain_encode(&ch, &u, v, 0, &enc, &n, &err), ZF_OK);
    ck_assert_uint_eq(n, 2048);
    free(enc);
    zf_chain_clear(&ch);
}
END_TEST

START_TEST(test_conditional_config)
{
    uint64_t shape[1] = {16};
    zf_chunk_repr r = tu_repr_of("<i4", 1, shape);
    char msg[512];
    ck_assert_int_eq(build_status("[" LE ", " COND "{\"codecs\": [], \"header_bits\": 12}}]",
                                  &r, msg), ZF_ERR_INVALID);
    ck_assert_contains(msg, "header_bits");
    ck_assert_int_eq(build_status("[" LE ", " COND "{\"codecs\": [\"crc32c\", \"crc32c\"], "
                                  "\"header_bits\": 0}}]", &r, msg), ZF_ERR_INVALID);
    ck_assert_int_eq(build_status("[" LE ", " COND "{\"codecs\": [" LE "]}}]", &r, msg),
                     ZF_ERR_INVALID);
    ck_assert_contains(msg, "not a bytes -> bytes codec");
    ck_assert_int_eq(build_status("[" LE ", " COND "{\"codecs\": [\"transpose\"]}}]", &r, msg),
                     ZF_ERR_INVALID);
    ck_assert_int_eq(build_status("[" LE ", " COND "{}}]", &r, msg), ZF_ERR_INVALID);
    ck_assert_int_eq(build_status("[" LE ", " COND "{\"codecs\": {}}}]", &r, msg),
                     ZF_ERR_INVALID);
    ck_assert_int_eq(build_status("[" LE ", " COND "{\"codecs\": [], \"mask\": 1}}]", &r, msg),
                     ZF_ERR_INVALID);
    ck_assert_int_eq(build_status("[" LE ", " COND "{\"codecs\": [\"nope\"]}}]", &r, msg),
                     ZF_ERR_UNSUPPORTED);
    /* an unknown codec marked must_understand false still counts: the header numbers it */
    ck_assert_int_eq(build_status("[" LE ", " COND "{\"codecs\": [{\"name\": \"nope\", "
                                  "\"must_understand\": false}]}}]", &r, msg),
                     ZF_ERR_UNSUPPORTED);
    ck_assert_int_eq(build_status("[" COND "{\"codecs\": []}}, " LE "]", &r, msg),
                     ZF_ERR_INVALID); /* before the array -> bytes codec */
    ck_assert_int_eq(build_status("[" LE ", " COND "{\"codecs\": [" COND "{\"codecs\": "
                                  "[\"crc32c\"]}}]}}]", &r, msg), ZF_OK); /* nested */
}
END_TEST

/* ----- zarrs.vlen, zarrs.vlen_v2 ----- */

static zf_chunk_repr vlen_repr(const char *unit, uint64_t n)
{
    zf_chunk_repr r = {.ndim = 1, .shape = {n}, .nbytes = 0};
    r.dtype.kind = 'O';
    r.dtype.byteorder = '|';
    snprintf(r.dtype.unit, sizeof r.dtype.unit, "%s", unit);
    return r;
}

/* A zarrs.vlen chunk with plain bytes codecs: offsets (u32 or u64, from `first`) and data. */
static size_t vlen_chunk(const char *const *items, size_t n, bool u64, bool at_end,
                         uint32_t first, uint8_t *out)
{
    size_t isize = u64 ? 8 : 4, ilen = (n + 1) * isize, dlen = first, p = 0;
    for (size_t i = 0; i < n; i++)
        dlen += strlen(items[i]);
    uint8_t *index = malloc(ilen), *data = malloc(dlen + 1);
    uint64_t off = first;
    memset(data, '#', first);
    for (size_t i = 0; i <= n; i++) {
        if (u64)
            tu_put_le64(index + 8 * i, off);
        else
            tu_put_le32(index + 4 * i, (uint32_t)off);
        if (i < n) {
            memcpy(data + off, items[i], strlen(items[i]));
            off += strlen(items[i]);
        }
    }
    if (!at_end) {
        tu_put_le64(out, ilen);
        p = 8;
        memcpy(out + p, index, ilen);
        memcpy(out + p + ilen, data, dlen);
    } else {
        memcpy(out, data, dlen);
        memcpy(out + dlen, index, ilen);
        tu_put_le64(out + dlen + ilen, ilen);
    }
    free(index);
    free(data);
    return 8 + ilen + dlen;
}

static zf_status text_of(const zf_codec_chain *ch, const zf_chunk_repr *r, const uint8_t *in,
                         size_t n, char *text, char *msg)
{
    zf_text_chunk *t = NULL;
    zf_err err = {""};
    zf_status st = zf_chain_decode_text(ch, r, in, n, &t, &err);
    strcpy(msg, err.msg);
    if (st == ZF_OK) {
        memcpy(text, t->text, t->len);
        text[t->len] = '\0';
        free(t);
    }
    return st;
}

#define VLEN(type, loc)                                                                           \
    "[{\"name\": \"zarrs.vlen\", \"configuration\": {\"index_codecs\": [" LE "], "            \
    "\"data_codecs\": [" LE "], \"index_data_type\": \"" type "\"" loc "}}]"

START_TEST(test_zarrs_vlen)
{
    const char *items[] = {"a\tb", "", "caf\xc3\xa9", "\x01\xff", "x\\y"};
    zf_chunk_repr s = vlen_repr("string", 5), b = vlen_repr("bytes", 5);
    uint8_t chunk[256];
    char text[512], msg[512];
    for (int k = 0; k < 4; k++) {
        bool u64 = k & 1, at_end = k & 2;
        char json[512];
        snprintf(json, sizeof json, VLEN("%s", "%s"), u64 ? "uint64" : "uint32",
                 at_end ? ", \"index_location\": \"end\"" : k == 0 ? "" :
                          ", \"index_location\": \"start\"");
        size_t n = vlen_chunk(items, 5, u64, at_end, (uint32_t)k, chunk);
        zf_codec_chain ch = build_ok(json, &b, NULL);
        ck_assert_msg(text_of(&ch, &b, chunk, n, text, msg) == ZF_OK, "%s", msg);
        ck_assert_str_eq(text, "a\\tb\n\ncaf\xc3\xa9\n\\x01\\xff\nx\\\\y\n");
        ck_assert_str_eq(zf_chain_text_codec(&ch), "zarrs.vlen (vlen-bytes)");
        /* corrupt: truncated, index length past the end, data short */
        ck_assert_int_eq(text_of(&ch, &b, chunk, 7, text, msg), ZF_ERR_CORRUPT);
        ck_assert_int_eq(text_of(&ch, &b, chunk, n - 1, text, msg), ZF_ERR_CORRUPT);
        zf_chain_clear(&ch);
        ch = build_ok(json, &s, NULL); /* as strings: \xff is not UTF-8 */
        ck_assert_int_eq(text_of(&ch, &s, chunk, n, text, msg), ZF_ERR_CORRUPT);
        ck_assert_contains(msg, "not valid UTF-8");
        zf_chain_clear(&ch);
    }
    /* decreasing offsets */
    zf_codec_chain ch = build_ok(VLEN("uint32", ""), &s, NULL);
    size_t n = vlen_chunk(items, 5, false, false, 0, chunk);
    tu_put_le32(chunk + 8 + 8, 9); /* offsets[2] past offsets[3] */
    ck_assert_int_eq(text_of(&ch, &s, chunk, n, text, msg), ZF_ERR_CORRUPT);
    ck_assert_contains(msg, "index");
    tu_put_le64(chunk, UINT64_MAX);
    ck_assert_int_eq(text_of(&ch, &s, chunk, n, text, msg), ZF_ERR_CORRUPT);
    zf_chain_clear(&ch);
    /* fill values, as vlen-utf8 and vlen-bytes read them */
    ch = build_ok(VLEN("uint64", ""), &b, NULL);
    yajl_val f = tu_json("[104, 0, 255]");
    char *line;
    size_t len;
    zf_err err = {""};
    ck_assert_int_eq(zf_chain_text_fill(&ch, f, &line, &len, &err), ZF_OK);
    ck_assert(len == 10 && memcmp(line, "h\\x00\\xff\n", len) == 0);
    free(line);
    yajl_tree_free(f);
    zf_chain_clear(&ch);
}
END_TEST

START_TEST(test_zarrs_vlen_v2)
{
    zf_chunk_repr s = vlen_repr("string", 2), b = vlen_repr("bytes", 2);
    const uint8_t chunk[] = {2, 0, 0, 0, 2, 0, 0, 0, 'h', '\n', 1, 0, 0, 0, 0xc3};
    char text[128], msg[512];
    zf_codec_chain ch = build_ok("[\"zarrs.vlen_v2\"]", &b, NULL);
    ck_assert_int_eq(text_of(&ch, &b, chunk, sizeof chunk, text, msg), ZF_OK);
    ck_assert_str_eq(text, "h\\n\n\\xc3\n");
    ck_assert_int_eq(text_of(&ch, &b, chunk, sizeof chunk - 1, text, msg), ZF_ERR_CORRUPT);
    zf_chain_clear(&ch);
    ch = build_ok("[{\"name\": \"https://codec.zarrs.dev/array_to_bytes/vlen_v2\", "
                  "\"configuration\": {}}]", &s, NULL);
    ck_assert_str_eq(zf_chain_text_codec(&ch), "zarrs.vlen_v2");
    ck_assert_int_eq(text_of(&ch, &s, chunk, sizeof chunk, text, msg), ZF_ERR_CORRUPT);
    zf_chain_clear(&ch);
}
END_TEST

START_TEST(test_zarrs_vlen_config)
{
    zf_chunk_repr s = vlen_repr("string", 4), none = vlen_repr("", 4);
    char msg[512];
    ck_assert_int_eq(build_status(VLEN("uint16", ""), &s, msg), ZF_ERR_INVALID);
    ck_assert_int_eq(build_status(VLEN("uint32", ", \"index_location\": \"mid\""), &s, msg),
                     ZF_ERR_INVALID);
    ck_assert_int_eq(build_status(VLEN("uint32", ", \"x\": 1"), &s, msg), ZF_ERR_INVALID);
    ck_assert_int_eq(build_status("[{\"name\": \"zarrs.vlen\", \"configuration\": "
                                  "{\"index_data_type\": \"uint32\", \"data_codecs\": []}}]",
                                  &s, msg), ZF_ERR_INVALID);
    ck_assert_int_eq(build_status("[{\"name\": \"zarrs.vlen\", \"configuration\": "
                                  "{\"index_data_type\": \"uint32\", \"index_codecs\": "
                                  "[" LE "], \"data_codecs\": [\"transpose\"]}}]", &s, msg),
                     ZF_ERR_INVALID);
    ck_assert_int_eq(build_status(VLEN("uint32", ""), &none, msg), ZF_ERR_UNSUPPORTED);
    ck_assert_int_eq(build_status("[\"zarrs.vlen_v2\"]", &none, msg), ZF_ERR_UNSUPPORTED);
    ck_assert_int_eq(build_status("[{\"name\": \"zarrs.vlen_v2\", \"configuration\": {\"a\": 1}}]",
                                  &s, msg), ZF_ERR_INVALID);
    uint64_t shape[1] = {4};
    zf_chunk_repr i4 = tu_repr_of("<i4", 1, shape);
    ck_assert_int_eq(build_status("[\"zarrs.vlen_v2\"]", &i4, msg), ZF_ERR_UNSUPPORTED);
}
END_TEST

Suite *codec_registry_suite(void)
{
    Suite *s = suite_create("codec-registry");
    TCase *tc = tcase_create("scale_offset");
    tcase_add_test(tc, test_scale_offset_float32);
    tcase_add_test(tc, test_scale_offset_float_special);
    tcase_add_test(tc, test_scale_offset_integers);
    tcase_add_test(tc, test_scale_offset_config);
    tcase_add_test(tc, test_scale_offset_fill);
    suite_add_tcase(s, tc);
    TCase *tcond = tcase_create("conditional");
    tcase_add_test(tcond, test_conditional_decode);
    tcase_add_test(tcond, test_conditional_after_compressor);
    tcase_add_test(tcond, test_conditional_encode);
    tcase_add_test(tcond, test_conditional_config);
    suite_add_tcase(s, tcond);
    TCase *tv = tcase_create("zarrs-vlen");
    tcase_add_test(tv, test_zarrs_vlen);
    tcase_add_test(tv, test_zarrs_vlen_v2);
    tcase_add_test(tv, test_zarrs_vlen_config);
    suite_add_tcase(s, tv);
    return s;
}
