/* test_v3.c — Zarr v3 codec lists (zf_chain_from_v3), the sharding_indexed codec, the 2022
 * draft's codecs and the 2020 draft's compressor URIs.
 *
 * Where the expected values come from:
 * - vectors written by v3_expected.py (numcodecs 0.11 / Python's gzip and zlib / shard layouts
 *   written in Python from the spec, and chunks of the zarrita fixtures written by another Zarr
 *   implementation, decoded in Python): test_python_vectors;
 * - hand-made byte strings in this file, following the spec section named at each test: the
 *   element encodings of v3 codecs "Bytes codec" ("Format and algorithm"), the shard layout of
 *   "Sharding codec" ("Binary shard format"), CRC-32C of RFC 3720 computed bit by bit here;
 * - libzstd's streaming compressor, for a frame without a content size. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "codec_impl.h"
#include "testutil.h"

/* --- helpers --- */

/* CRC-32C bit by bit (RFC 3720), independent of src/codec/crc32c.c. */
static uint32_t crc32c_ref(const uint8_t *p, size_t n)
{
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = crc & 1 ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    }
    return ~crc;
}

static void put_be64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (56 - 8 * i));
}


/* zf_chain_from_v3 on JSON text; returns its status, the chain in *chain (empty on failure). */
static zf_status chain_status(const char *json, zf_codec_dialect dialect, const zf_chunk_repr *r,
                              const void *fill, zf_codec_chain *chain, zf_err *err)
{
    yajl_val v = tu_json(json);
    chain->n = 99;
    chain->codecs = (zf_codec **)&chain->n; /* must be overwritten */
    zf_status st = zf_chain_from_v3(v, dialect, r, fill, chain, err);
    yajl_tree_free(v);
    if (st != ZF_OK) {
        ck_assert_uint_eq(chain->n, 0);
        ck_assert_ptr_null(chain->codecs);
    }
    return st;
}

static zf_codec_chain chain_ok(const char *json, zf_codec_dialect dialect, const zf_chunk_repr *r,
                               const void *fill)
{
    zf_codec_chain chain;
    zf_err err = {""};
    zf_status st = chain_status(json, dialect, r, fill, &chain, &err);
    ck_assert_msg(st == ZF_OK, "%s: %s (%s)", json, zf_status_str(st), err.msg);
    return chain;
}

/* The status of building json (v3) for r, and the message in msg. */
static zf_status v3_status(const char *json, const zf_chunk_repr *r, char *msg)
{
    zf_codec_chain chain;
    zf_err err = {""};
    zf_status st = chain_status(json, ZF_CODECS_V3, r, NULL, &chain, &err);
    zf_chain_clear(&chain);
    if (msg)
        strcpy(msg, err.msg);
    return st;
}

/* Build json for r and decode in; asserts success and out == expected. */
static void decode_expect(const char *json, zf_codec_dialect dialect, const zf_chunk_repr *r,
                          const void *fill, const void *in, size_t in_len, const void *expected)
{
    zf_codec_chain chain = chain_ok(json, dialect, r, fill);
    uint8_t *out = malloc(r->nbytes + 1);
    zf_err err = {""};
    zf_status st = zf_chain_decode(&chain, r, in, in_len, out, &err);
    ck_assert_msg(st == ZF_OK, "%s: %s (%s)", json, zf_status_str(st), err.msg);
    ck_assert_msg(memcmp(out, expected, r->nbytes) == 0, "%s: wrong decode", json);
    free(out);
    zf_chain_clear(&chain);
}

/* Build json for r, decode in and return the status (message in msg). */
static zf_status decode_status(const char *json, const zf_chunk_repr *r, const void *fill,
                               const void *in, size_t in_len, char *msg)
{
    zf_codec_chain chain = chain_ok(json, ZF_CODECS_V3, r, fill);
    uint8_t *out = malloc(r->nbytes + 1);
    zf_err err = {""};
    zf_status st = zf_chain_decode(&chain, r, in, in_len, out, &err);
    if (msg)
        strcpy(msg, err.msg);
    free(out);
    zf_chain_clear(&chain);
    return st;
}

#define ck_assert_contains(msg, part)                                                             \
    ck_assert_msg(strstr((msg), (part)) != NULL, "message \"%s\" lacks \"%s\"", (msg), (part))

/* --- bytes codec --- */

/* v3 codecs "Bytes codec", "Format and algorithm": int32 with big endian is "a 4-byte big
 * endian two's complement integer"; complex128 "two consecutive 8-byte big endian IEEE 754
 * binary64 values"; the decoded array is the little-endian flat encoding. Each row: the
 * data type, the stored big-endian bytes, the same elements little-endian. */
static const struct {
    const char *typestr;
    size_t n; /* elements */
    const char *big, *little;
    size_t len;
} endian_cases[] = {
    /* int16 0x1234, -2 */
    {"<i2", 2, "\x12\x34\xff\xfe", "\x34\x12\xfe\xff", 4},
    /* uint16 0xABCD */
    {"<u2", 1, "\xab\xcd", "\xcd\xab", 2},
    /* int32 0x01020304, -1 */
    {"<i4", 2, "\x01\x02\x03\x04\xff\xff\xff\xff", "\x04\x03\x02\x01\xff\xff\xff\xff", 8},
    /* float64 1.0, -2.5 */
    {"<f8", 2, "\x3f\xf0\x00\x00\x00\x00\x00\x00\xc0\x04\x00\x00\x00\x00\x00\x00",
     "\x00\x00\x00\x00\x00\x00\xf0\x3f\x00\x00\x00\x00\x00\x00\x04\xc0", 16},
    /* complex64 1+2j: real then imaginary, each a big-endian binary32 */
    {"<c8", 1, "\x3f\x80\x00\x00\x40\x00\x00\x00", "\x00\x00\x80\x3f\x00\x00\x00\x40", 8},
    /* complex128 1-0.5j */
    {"<c16", 1, "\x3f\xf0\x00\x00\x00\x00\x00\x00\xbf\xe0\x00\x00\x00\x00\x00\x00",
     "\x00\x00\x00\x00\x00\x00\xf0\x3f\x00\x00\x00\x00\x00\x00\xe0\xbf", 16},
    /* NumPy U2 "AB": two UTF-32 code units, each swapped on its own */
    {"<U2", 1, "\x00\x00\x00\x41\x00\x00\x00\x42", "\x41\x00\x00\x00\x42\x00\x00\x00", 8},
    /* datetime64[s] 1 */
    {"<M8[s]", 1, "\x00\x00\x00\x00\x00\x00\x00\x01", "\x01\x00\x00\x00\x00\x00\x00\x00", 8},
    /* float16 1.0 */
    {"<f2", 1, "\x3c\x00", "\x00\x3c", 2},
    /* no endianness: bool, byte strings, raw bits (r32 is |V4) */
    {"|b1", 3, "\x01\x00\x01", "\x01\x00\x01", 3},
    {"|S3", 1, "abc", "abc", 3},
    {"|V4", 1, "\x01\x02\x03\x04", "\x01\x02\x03\x04", 4},
    {"|u1", 2, "\x01\xfe", "\x01\xfe", 2},
};

START_TEST(test_bytes_endian)
{
    for (size_t i = 0; i < sizeof endian_cases / sizeof endian_cases[0]; i++) {
        uint64_t shape[1] = {endian_cases[i].n};
        zf_chunk_repr r = tu_repr_of(endian_cases[i].typestr, 1, shape);
        ck_assert_uint_eq(r.nbytes, endian_cases[i].len);
        decode_expect("[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}]",
                      ZF_CODECS_V3, &r, NULL, endian_cases[i].big, endian_cases[i].len,
                      endian_cases[i].little);
        decode_expect("[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]",
                      ZF_CODECS_V3, &r, NULL, endian_cases[i].little, endian_cases[i].len,
                      endian_cases[i].little);
        /* The name before v3 was accepted, and the 2022 draft's endian codec. */
        decode_expect("[{\"name\": \"endian\", \"configuration\": {\"endian\": \"big\"}}]",
                      ZF_CODECS_V3, &r, NULL, endian_cases[i].big, endian_cases[i].len,
                      endian_cases[i].little);
        decode_expect("[{\"codec\": \"https://purl.org/zarr/spec/codec/endian/1.0\", "
                      "\"configuration\": {\"endian\": \"big\"}}]",
                      ZF_CODECS_DRAFT_2022, &r, NULL, endian_cases[i].big, endian_cases[i].len,
                      endian_cases[i].little);
    }
    /* A 2-d int16 array, big endian: element order is lexicographical (C order). */
    uint64_t shape[2] = {2, 2};
    zf_chunk_repr r = tu_repr_of("<i2", 2, shape);
    decode_expect("[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}]",
                  ZF_CODECS_V3, &r, NULL, "\x00\x01\x00\x02\x00\x03\x01\x00", 8,
                  "\x01\x00\x02\x00\x03\x00\x00\x01");
}
END_TEST

START_TEST(test_bytes_config)
{
    char msg[512];
    uint64_t shape[1] = {3};
    zf_chunk_repr i2 = tu_repr_of("<i2", 1, shape), u1 = tu_repr_of("|u1", 1, shape),
                  b1 = tu_repr_of("|b1", 1, shape), s4 = tu_repr_of("|S4", 1, shape),
                  c8 = tu_repr_of("<c8", 1, shape), u = tu_repr_of("<U1", 1, shape);
    /* "endian": "Required for data types for which endianness is applicable". */
    ck_assert_int_eq(v3_status("[{\"name\": \"bytes\"}]", &i2, msg), ZF_ERR_INVALID);
    ck_assert_str_eq(msg, "bytes: \"endian\": missing (required for <i2)");
    ck_assert_int_eq(v3_status("[{\"name\": \"bytes\", \"configuration\": {}}]", &c8, msg),
                     ZF_ERR_INVALID);
    ck_assert_int_eq(v3_status("[\"bytes\"]", &u, msg), ZF_ERR_INVALID);
    /* ... and not for single bytes (zarrita writes {"name": "bytes"} for uint8 and bool). */
    ck_assert_int_eq(v3_status("[{\"name\": \"bytes\"}]", &u1, msg), ZF_OK);
    ck_assert_int_eq(v3_status("[{\"name\": \"bytes\"}]", &b1, msg), ZF_OK);
    ck_assert_int_eq(v3_status("[{\"name\": \"bytes\"}]", &s4, msg), ZF_OK);
    decode_expect("[{\"name\": \"bytes\"}]", ZF_CODECS_V3, &u1, NULL, "\x07\x08\x09", 3,
                  "\x07\x08\x09");
    ck_assert_int_eq(
        v3_status("[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"middle\"}}]", &i2,
                  msg),
        ZF_ERR_INVALID);
    ck_assert_contains(msg, "\"endian\"");
    ck_assert_int_eq(v3_status("[{\"name\": \"bytes\", \"configuration\": {\"endian\": 1}}]",
                               &i2, msg),
                     ZF_ERR_INVALID);
    ck_assert_int_eq(
        v3_status("[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\", \"x\": 1}}]",
                  &i2, msg),
        ZF_ERR_INVALID);
    ck_assert_str_eq(msg, "bytes: \"x\": unknown configuration field");
    ck_assert_int_eq(v3_status("[{\"name\": \"bytes\", \"configuration\": [1]}]", &i2, msg),
                     ZF_ERR_INVALID);
    /* The stored chunk must have exactly the array's bytes. */
    ck_assert_int_eq(decode_status("[{\"name\": \"bytes\", \"configuration\": {\"endian\": "
                                   "\"big\"}}]",
                                   &i2, NULL, "\x00\x01\x00\x02\x00", 5, msg),
                     ZF_ERR_CORRUPT);
    ck_assert_str_eq(msg, "bytes: chunk holds 5 bytes, expected 6");
    /* Object arrays have no binary representation. */
    zf_chunk_repr o = tu_repr_of("|O", 1, shape);
    ck_assert_int_eq(v3_status("[\"bytes\"]", &o, msg), ZF_ERR_UNSUPPORTED);
    /* The codec kinds and the resolved representation. */
    zf_codec_chain ch = chain_ok("[{\"name\": \"bytes\", \"configuration\": {\"endian\": "
                                 "\"little\"}}]",
                                 ZF_CODECS_V3, &i2, NULL);
    ck_assert_uint_eq(ch.n, 1);
    ck_assert_int_eq(ch.codecs[0]->ops->kind, ZF_CODEC_ARRAY_TO_BYTES);
    ck_assert_str_eq(ch.codecs[0]->ops->name, "bytes");
    zf_chunk_repr reprs[2];
    zf_err err = {""};
    ck_assert_int_eq(zf_chain_resolve(&ch, &i2, reprs, &err), ZF_OK);
    ck_assert_uint_eq(reprs[1].nbytes, 6);
    zf_chain_clear(&ch);
}
END_TEST

/* --- transpose --- */

START_TEST(test_transpose_v3)
{
    /* v3 codecs "Transpose codec": B_shape[i] = A_shape[order[i]], B[B_pos] = A[A_pos] with
     * B_pos[i] = A_pos[order[i]]. A is 2 x 3 uint8 [[0,1,2],[3,4,5]]; with order [1, 0] the
     * stored B is 3 x 2 [[0,3],[1,4],[2,5]]. */
    uint64_t shape[2] = {2, 3};
    zf_chunk_repr r = tu_repr_of("|u1", 2, shape);
    static const uint8_t a[6] = {0, 1, 2, 3, 4, 5}, b[6] = {0, 3, 1, 4, 2, 5};
    decode_expect("[{\"name\": \"transpose\", \"configuration\": {\"order\": [1, 0]}}, "
                  "\"bytes\"]",
                  ZF_CODECS_V3, &r, NULL, b, 6, a);
    /* "F" (reversed axes) and "C" (identity) as early writers wrote them. */
    decode_expect("[{\"name\": \"transpose\", \"configuration\": {\"order\": \"F\"}}, "
                  "\"bytes\"]",
                  ZF_CODECS_V3, &r, NULL, b, 6, a);
    decode_expect("[{\"name\": \"transpose\", \"configuration\": {\"order\": \"C\"}}, "
                  "\"bytes\"]",
                  ZF_CODECS_V3, &r, NULL, a, 6, a);
    /* 3-d, order [2, 0, 1]: A is 2 x 2 x 3 (value 100i + 10j + k), B is 3 x 2 x 2 with
     * B[k][i][j] = A[i][j][k]. */
    uint64_t s3[3] = {2, 2, 3};
    zf_chunk_repr r3 = tu_repr_of("|u1", 3, s3);
    uint8_t a3[12], b3[12];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 3; k++) {
                a3[(i * 2 + j) * 3 + k] = (uint8_t)(100 * i + 10 * j + k);
                b3[(k * 2 + i) * 2 + j] = (uint8_t)(100 * i + 10 * j + k);
            }
    decode_expect("[{\"name\": \"transpose\", \"configuration\": {\"order\": [2, 0, 1]}}, "
                  "\"bytes\"]",
                  ZF_CODECS_V3, &r3, NULL, b3, 12, a3);
    /* Two transposes compose: [1, 2, 0] then [1, 2, 0] is [2, 0, 1]. */
    decode_expect("[{\"name\": \"transpose\", \"configuration\": {\"order\": [1, 2, 0]}}, "
                  "{\"name\": \"transpose\", \"configuration\": {\"order\": [1, 2, 0]}}, "
                  "\"bytes\"]",
                  ZF_CODECS_V3, &r3, NULL, b3, 12, a3);
    char msg[512];
    static const char *const bad[] = {
        "[{\"name\": \"transpose\", \"configuration\": {\"order\": [0, 0]}}, \"bytes\"]",
        "[{\"name\": \"transpose\", \"configuration\": {\"order\": [0, 2]}}, \"bytes\"]",
        "[{\"name\": \"transpose\", \"configuration\": {\"order\": [-1, 0]}}, \"bytes\"]",
        "[{\"name\": \"transpose\", \"configuration\": {\"order\": [0, 1, 2]}}, \"bytes\"]",
        "[{\"name\": \"transpose\", \"configuration\": {\"order\": [0.0, 1]}}, \"bytes\"]",
        "[{\"name\": \"transpose\", \"configuration\": {\"order\": \"X\"}}, \"bytes\"]",
        "[{\"name\": \"transpose\", \"configuration\": {}}, \"bytes\"]",
        "[{\"name\": \"transpose\"}, \"bytes\"]",
        "[{\"name\": \"transpose\", \"configuration\": {\"order\": [1, 0], \"x\": 0}}, "
        "\"bytes\"]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(v3_status(bad[i], &r, msg) == ZF_ERR_INVALID, "%s", bad[i]);
        ck_assert_contains(msg, "transpose: ");
    }
}
END_TEST

/* --- crc32c, zstd, gzip --- */

START_TEST(test_crc32c_v3)
{
    /* v3 codecs "CRC32C checksum codec": the input followed by its CRC-32C (RFC 3720) as a
     * 32-bit little-endian integer. RFC 3720 B.4: 32 bytes of zeros give 0x8A9136AA. */
    uint8_t zeros[36] = {0};
    ck_assert_uint_eq(crc32c_ref(zeros, 32), 0x8A9136AAu);
    tu_put_le32(zeros + 32, 0x8A9136AAu);
    ck_assert_uint_eq(zeros[32], 0xAA);
    uint64_t shape[1] = {32};
    zf_chunk_repr r = tu_repr_of("|u1", 1, shape);
    static const uint8_t expect[32] = {0};
    decode_expect("[\"bytes\", {\"name\": \"crc32c\"}]", ZF_CODECS_V3, &r, NULL, zeros, 36,
                  expect);
    decode_expect("[\"bytes\", {\"name\": \"crc32c\", \"configuration\": {}}]", ZF_CODECS_V3, &r,
                  NULL, zeros, 36, expect);
    char msg[512];
    uint8_t bad[36];
    memcpy(bad, zeros, 36);
    bad[5] ^= 0x10; /* the payload changed */
    ck_assert_int_eq(decode_status("[\"bytes\", \"crc32c\"]", &r, NULL, bad, 36, msg),
                     ZF_ERR_CORRUPT);
    ck_assert_contains(msg, "crc32c: checksum mismatch");
    memcpy(bad, zeros, 36);
    bad[35] ^= 0x01; /* the checksum changed */
    ck_assert_int_eq(decode_status("[\"bytes\", \"crc32c\"]", &r, NULL, bad, 36, msg),
                     ZF_ERR_CORRUPT);
    ck_assert_int_eq(decode_status("[\"bytes\", \"crc32c\"]", &r, NULL, zeros, 35, msg),
                     ZF_ERR_CORRUPT);
    ck_assert_int_eq(v3_status("[\"bytes\", {\"name\": \"crc32c\", \"configuration\": "
                               "{\"location\": \"start\"}}]",
                               &r, msg),
                     ZF_ERR_INVALID);
}
END_TEST

START_TEST(test_zstd_no_content_size)
{
    /* A frame from libzstd's streaming compressor, fed in pieces so that it cannot know the
     * content size, with zstd's checksum on (the codec's "checksum": true). */
    enum { N = 20000 };
    uint8_t *data = malloc(N), *out = malloc(N);
    tu_fill(data, N, 77);
    size_t enc_len;
    uint8_t *enc = tu_zstd_stream(data, N, 3, true, 4096, &enc_len);
    uint64_t shape[1] = {N};
    zf_chunk_repr r = tu_repr_of("|u1", 1, shape);
    const char *json =
        "[\"bytes\", {\"name\": \"zstd\", \"configuration\": {\"level\": 3, \"checksum\": true}}]";
    decode_expect(json, ZF_CODECS_V3, &r, NULL, enc, enc_len, data);
    char msg[512];
    /* The frame's own checksum catches a changed byte of content. */
    enc[enc_len - 2] ^= 0x40;
    ck_assert_int_eq(decode_status(json, &r, NULL, enc, enc_len, msg), ZF_ERR_CORRUPT);
    enc[enc_len - 2] ^= 0x40;
    /* Expecting fewer bytes than the frame holds fails without writing past them. */
    uint64_t half[1] = {N / 2};
    zf_chunk_repr rh = tu_repr_of("|u1", 1, half);
    ck_assert_int_eq(decode_status(json, &rh, NULL, enc, enc_len, msg), ZF_ERR_CORRUPT);
    ck_assert_str_eq(msg, "zstd: data decodes to more than the expected 10000 bytes");
    free(data);
    free(enc);
    free(out);
}
END_TEST

START_TEST(test_compressor_configs)
{
    char msg[512];
    uint64_t shape[1] = {4};
    zf_chunk_repr r = tu_repr_of("|u1", 1, shape); /* no "endian" needed */
    static const struct {
        const char *json, *part;
    } bad[] = {
        {"[\"bytes\", {\"name\": \"gzip\", \"configuration\": {\"level\": 10}}]",
         "gzip: \"level\""},
        {"[\"bytes\", {\"name\": \"gzip\", \"configuration\": {\"level\": \"1\"}}]", "gzip: "},
        {"[\"bytes\", {\"name\": \"gzip\", \"configuration\": {\"lvl\": 1}}]", "\"lvl\""},
        {"[\"bytes\", {\"name\": \"zstd\", \"configuration\": {\"level\": 23}}]", "zstd: "},
        {"[\"bytes\", {\"name\": \"zstd\", \"configuration\": {\"checksum\": 1}}]",
         "zstd: \"checksum\""},
        {"[\"bytes\", {\"name\": \"blosc\", \"configuration\": {\"cname\": \"lzma\", "
         "\"clevel\": 1, \"shuffle\": \"noshuffle\", \"blocksize\": 0}}]",
         "blosc: \"cname\""},
        {"[\"bytes\", {\"name\": \"blosc\", \"configuration\": {\"cname\": \"lz4\", \"clevel\": "
         "10, \"shuffle\": \"noshuffle\", \"blocksize\": 0}}]",
         "blosc: \"clevel\""},
        {"[\"bytes\", {\"name\": \"blosc\", \"configuration\": {\"cname\": \"lz4\", \"clevel\": "
         "1, \"shuffle\": \"byteshuffle\", \"typesize\": 4, \"blocksize\": 0}}]",
         "blosc: \"shuffle\""},
        /* numcodecs' integer shuffle is not the v3 form */
        {"[\"bytes\", {\"name\": \"blosc\", \"configuration\": {\"cname\": \"lz4\", \"clevel\": "
         "1, \"shuffle\": 1, \"typesize\": 4, \"blocksize\": 0}}]",
         "blosc: \"shuffle\""},
        /* typesize "Required unless shuffle is noshuffle" */
        {"[\"bytes\", {\"name\": \"blosc\", \"configuration\": {\"cname\": \"lz4\", \"clevel\": "
         "1, \"shuffle\": \"shuffle\", \"blocksize\": 0}}]",
         "blosc: \"typesize\""},
        {"[\"bytes\", {\"name\": \"blosc\", \"configuration\": {\"cname\": \"lz4\", \"clevel\": "
         "1, \"shuffle\": \"shuffle\", \"typesize\": 0, \"blocksize\": 0}}]",
         "blosc: \"typesize\""},
        {"[\"bytes\", {\"name\": \"blosc\", \"configuration\": {\"cname\": \"lz4\", \"clevel\": "
         "1, \"shuffle\": \"noshuffle\", \"blocksize\": -1}}]",
         "blosc: \"blocksize\""},
        {"[\"bytes\", {\"name\": \"blosc\", \"configuration\": {\"typesize\": 4, \"id\": "
         "\"blosc\"}}]",
         "blosc: \"id\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(v3_status(bad[i].json, &r, msg) == ZF_ERR_INVALID, "%s", bad[i].json);
        ck_assert_contains(msg, bad[i].part);
    }
    /* Accepted: every field valid, blosc typesize beyond one byte (an r2048 element). */
    ck_assert_int_eq(v3_status("[\"bytes\", {\"name\": \"blosc\", \"configuration\": {\"cname\": "
                               "\"zstd\", \"clevel\": 0, \"shuffle\": \"bitshuffle\", "
                               "\"typesize\": 256, \"blocksize\": 65536}}]",
                               &r, msg),
                     ZF_OK);
    ck_assert_int_eq(v3_status("[\"bytes\", {\"name\": \"zstd\", \"configuration\": {\"level\": "
                               "-131072, \"checksum\": false}}]",
                               &r, msg),
                     ZF_OK);
    ck_assert_int_eq(v3_status("[{\"name\": \"bytes\", \"configuration\": {\"endian\": "
                               "\"big\"}}, \"gzip\", \"zstd\", \"crc32c\"]",
                               &r, msg),
                     ZF_OK);
}
END_TEST

/* --- the list: order, names, must_understand --- */

START_TEST(test_chain_order_and_names)
{
    char msg[512];
    uint64_t shape[2] = {2, 3};
    zf_chunk_repr r = tu_repr_of("<i2", 2, shape);
    static const char *const le = "{\"name\": \"bytes\", \"configuration\": {\"endian\": "
                                  "\"little\"}}";
    char json[1024];
    /* v3 core "Codecs": a -> a*, exactly one a -> b, b -> b*. */
    snprintf(json, sizeof json, "[{\"name\": \"gzip\"}, %s]", le);
    ck_assert_int_eq(v3_status(json, &r, msg), ZF_ERR_INVALID);
    ck_assert_str_eq(msg, "codecs: \"gzip\" (bytes -> bytes) comes before the array -> bytes "
                          "codec");
    snprintf(json, sizeof json,
             "[%s, {\"name\": \"transpose\", \"configuration\": {\"order\": [1, 0]}}]", le);
    ck_assert_int_eq(v3_status(json, &r, msg), ZF_ERR_INVALID);
    ck_assert_str_eq(msg, "codecs: \"transpose\" (array -> array) follows the array -> bytes "
                          "codec \"bytes\"");
    snprintf(json, sizeof json, "[%s, %s]", le, le);
    ck_assert_int_eq(v3_status(json, &r, msg), ZF_ERR_INVALID);
    ck_assert_str_eq(msg, "codecs: two array -> bytes codecs, \"bytes\" and \"bytes\"");
    snprintf(json, sizeof json,
             "[%s, {\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [1, 1], "
             "\"codecs\": [%s], \"index_codecs\": [%s]}}]",
             le, le, le);
    ck_assert_int_eq(v3_status(json, &r, msg), ZF_ERR_INVALID);
    ck_assert_contains(msg, "two array -> bytes codecs");
    ck_assert_int_eq(v3_status("[]", &r, msg), ZF_ERR_INVALID);
    ck_assert_str_eq(msg, "codecs: no array -> bytes codec (such as \"bytes\")");
    ck_assert_int_eq(v3_status("[{\"name\": \"transpose\", \"configuration\": {\"order\": [1, "
                               "0]}}]",
                               &r, msg),
                     ZF_ERR_INVALID);
    ck_assert_int_eq(v3_status("[\"gzip\"]", &r, msg), ZF_ERR_INVALID);
    snprintf(json, sizeof json, "[%s, {\"name\": \"numcodecs.delta\", \"configuration\": "
                                "{\"dtype\": \"<i2\"}}]",
             le);
    ck_assert_int_eq(v3_status(json, &r, msg), ZF_ERR_INVALID);
    ck_assert_contains(msg, "(array -> array) follows");
    /* Unknown codecs are refused by name, ... */
    snprintf(json, sizeof json, "[{\"name\": \"zarrs.gdeflate\", \"configuration\": {}}, %s]",
             le);
    ck_assert_int_eq(v3_status(json, &r, msg), ZF_ERR_UNSUPPORTED);
    ck_assert_str_eq(msg, "codec \"zarrs.gdeflate\" is not supported");
    ck_assert_int_eq(v3_status("[{\"name\": \"numcodecs.pcodec\"}]", &r, msg),
                     ZF_ERR_UNSUPPORTED);
    ck_assert_str_eq(msg, "codec \"numcodecs.pcodec\" is not supported (pcodec compression: "
                          ZF_CODEC_NO_LIBRARY ")");
    snprintf(json, sizeof json, "[%s, {\"name\": \"numcodecs.pickle\"}]", le);
    ck_assert_int_eq(v3_status(json, &r, msg), ZF_ERR_UNSUPPORTED);
    ck_assert_str_eq(msg, "codec \"numcodecs.pickle\" is not supported (object arrays)");
    /* vlen-utf8 is an array -> bytes codec of variable-length (object) elements only */
    snprintf(json, sizeof json, "[%s, {\"name\": \"numcodecs.vlen-utf8\"}]", le);
    ck_assert_int_eq(v3_status(json, &r, msg), ZF_ERR_INVALID);
    ck_assert_contains(msg, "two array -> bytes codecs");
    ck_assert_int_eq(v3_status("[{\"name\": \"vlen-utf8\", \"configuration\": {}}]", &r, msg),
                     ZF_ERR_INVALID);
    ck_assert_contains(msg, "variable-length");
    /* A numcodecs configuration numcodecs would refuse. */
    snprintf(json, sizeof json, "[{\"name\": \"numcodecs.delta\"}, %s]", le);
    ck_assert_int_eq(v3_status(json, &r, msg), ZF_ERR_INVALID);
    ck_assert_contains(msg, "delta: \"dtype\"");
    ck_assert_int_eq(v3_status("[{\"name\": \"numcodecs.delta\", \"configuration\": 5}]", &r,
                               msg),
                     ZF_ERR_INVALID);
    /* ... even with "must_understand": true, ... */
    snprintf(json, sizeof json, "[%s, {\"name\": \"x\", \"must_understand\": true}]", le);
    ck_assert_int_eq(v3_status(json, &r, msg), ZF_ERR_UNSUPPORTED);
    /* ... but may be ignored when "must_understand": false (core "must_understand"). */
    snprintf(json, sizeof json,
             "[{\"name\": \"x-view\", \"must_understand\": false}, %s, {\"name\": \"x-sum\", "
             "\"configuration\": {\"k\": 1}, \"must_understand\": false}]",
             le);
    zf_codec_chain ch = chain_ok(json, ZF_CODECS_V3, &r, NULL);
    ck_assert_uint_eq(ch.n, 1);
    zf_chain_clear(&ch);
    /* A known codec is used whatever its must_understand says. */
    snprintf(json, sizeof json, "[%s, {\"name\": \"crc32c\", \"must_understand\": false}]", le);
    ch = chain_ok(json, ZF_CODECS_V3, &r, NULL);
    ck_assert_uint_eq(ch.n, 2);
    ck_assert_str_eq(ch.codecs[1]->ops->name, "crc32c");
    zf_chain_clear(&ch);
    /* Ignoring it must still leave an array -> bytes codec. */
    ck_assert_int_eq(
        v3_status("[{\"name\": \"x-bytes\", \"must_understand\": false}]", &r, msg),
        ZF_ERR_INVALID);
    /* Malformed entries. */
    static const char *const malformed[] = {
        "{\"name\": \"bytes\"}",
        "[1]",
        "[{\"configuration\": {}}]",
        "[{\"name\": 3}]",
        "[{\"name\": \"gzip\", \"configuration\": 1}]",
        "[{\"name\": \"crc32c\", \"must_understand\": \"no\"}]",
        "[{\"name\": \"crc32c\", \"version\": 1}]",
        "[{\"codec\": \"https://purl.org/zarr/spec/codec/gzip/1.0\"}]",
    };
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++)
        ck_assert_msg(v3_status(malformed[i], &r, msg) == ZF_ERR_INVALID, "%s", malformed[i]);
}
END_TEST

START_TEST(test_numcodecs_names)
{
    /* zarr-python 3's numcodecs.<id>, with numcodecs.zarr3's kinds. */
    uint64_t shape[2] = {2, 4};
    zf_chunk_repr r = tu_repr_of("<i4", 2, shape);
    zf_codec_chain ch = chain_ok(
        "[{\"name\": \"numcodecs.delta\", \"configuration\": {\"dtype\": \"int32\"}}, "
        "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, "
        "{\"name\": \"numcodecs.shuffle\", \"configuration\": {\"elementsize\": 4}}, "
        "{\"name\": \"numcodecs.zlib\", \"configuration\": {\"level\": 1}}, "
        "{\"name\": \"numcodecs.crc32\"}]",
        ZF_CODECS_V3, &r, NULL);
    ck_assert_uint_eq(ch.n, 5);
    ck_assert_int_eq(ch.codecs[0]->ops->kind, ZF_CODEC_ARRAY_TO_ARRAY);
    ck_assert_str_eq(ch.codecs[0]->ops->name, "delta");
    ck_assert_int_eq(ch.codecs[2]->ops->kind, ZF_CODEC_BYTES_TO_BYTES);
    ck_assert_str_eq(ch.codecs[2]->ops->name, "shuffle");
    ck_assert_int_eq(ch.codecs[3]->ops->kind, ZF_CODEC_BYTES_TO_BYTES);
    /* delta keeps the chunk's shape (zarr-python 3 keeps the chunk spec). */
    zf_chunk_repr reprs[6];
    zf_err err = {""};
    ck_assert_int_eq(zf_chain_resolve(&ch, &r, reprs, &err), ZF_OK);
    ck_assert_uint_eq(reprs[1].ndim, 2);
    ck_assert_uint_eq(reprs[1].shape[1], 4);
    ck_assert_uint_eq(reprs[2].nbytes, 32);
    ck_assert_uint_eq(reprs[4].nbytes, ZF_SIZE_UNKNOWN);
    /* Decode: delta of [1, 2, 4, 7, 11, 16, 22, 29] is [1, 1, 2, 3, 4, 5, 6, 7]; shuffled with
     * elementsize 4 (byte j of every element together), zlib, crc32 (zlib's, before: numcodecs'
     * default location "start", little-endian). */
    static const int32_t diffs[8] = {1, 1, 2, 3, 4, 5, 6, 7}, want[8] = {1, 2, 4, 7, 11, 16, 22,
                                                                         29};
    uint8_t raw[32], sh[32], z[128], in[132];
    memcpy(raw, diffs, 32); /* little-endian host */
    for (size_t e = 0; e < 8; e++)
        for (size_t b = 0; b < 4; b++)
            sh[b * 8 + e] = raw[e * 4 + b];
    uLongf zl = sizeof z;
    ck_assert_int_eq(compress2(z, &zl, sh, 32, 1), Z_OK);
    tu_put_le32(in, (uint32_t)crc32(0, z, (uInt)zl));
    memcpy(in + 4, z, zl);
    uint8_t out[32];
    ck_assert_int_eq(zf_chain_decode(&ch, &r, in, zl + 4, out, &err), ZF_OK);
    ck_assert_mem_eq(out, want, 32);
    zf_chain_clear(&ch);
}
END_TEST

/* --- sharding --- */

/* A shard of a 4 x 4 int16 array in inner chunks of 2 x 2, inner codecs [bytes little], index
 * codecs [bytes little, crc32c]: 4 chunks of 8 bytes and an index of 4 * 16 + 4 = 68 bytes
 * ("Binary shard format"). Element (i, j) is 10 * i + j. */
#define SH_CODECS                                                                                 \
    "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2, 2], "            \
    "\"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}], "          \
    "\"index_codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, "     \
    "{\"name\": \"crc32c\"}], \"index_location\": \"%s\"}}]"
#define SH_INDEX 68

typedef struct shard {
    uint8_t buf[256];
    size_t len;
    uint64_t pairs[8];
    bool at_end;
} shard;

static int16_t sh_value(int i, int j)
{
    return (int16_t)(10 * i + j);
}

/* Inner chunk k (C order of the 2 x 2 grid) as stored: 4 little-endian int16. */
static void sh_chunk(int k, uint8_t *p)
{
    int ci = k / 2, cj = k % 2, n = 0;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++, n++) {
            uint16_t v = (uint16_t)sh_value(2 * ci + i, 2 * cj + j);
            p[2 * n] = (uint8_t)v;
            p[2 * n + 1] = (uint8_t)(v >> 8);
        }
}

/* Write the index of s->pairs (little-endian uint64 + crc32c) at the start or end. */
static void sh_index(shard *s)
{
    uint8_t *ix = s->at_end ? s->buf + s->len - SH_INDEX : s->buf;
    for (int i = 0; i < 8; i++)
        tu_put_le64(ix + 8 * i, s->pairs[i]);
    tu_put_le32(ix + 64, crc32c_ref(ix, 64));
}

/* Chunks in `order`, each 8 bytes, `gap` bytes apart; chunk `empty` (or -1) left out. */
static void sh_build(shard *s, bool at_end, const int *order, int empty, size_t gap)
{
    memset(s, 0, sizeof *s);
    s->at_end = at_end;
    size_t pos = at_end ? 0 : SH_INDEX;
    for (int k = 0; k < 4; k++)
        s->pairs[2 * k] = s->pairs[2 * k + 1] = UINT64_MAX;
    for (int n = 0; n < 4; n++) {
        int k = order[n];
        if (k == empty)
            continue;
        pos += gap;
        sh_chunk(k, s->buf + pos);
        s->pairs[2 * k] = pos;
        s->pairs[2 * k + 1] = 8;
        pos += 8;
    }
    s->len = at_end ? pos + SH_INDEX : pos;
    sh_index(s);
}

static zf_codec_chain sh_chain(bool at_end, zf_chunk_repr *r, int16_t fill)
{
    static const uint64_t shape[2] = {4, 4};
    *r = tu_repr_of("<i2", 2, shape);
    char json[1024];
    snprintf(json, sizeof json, SH_CODECS, at_end ? "end" : "start");
    return chain_ok(json, ZF_CODECS_V3, r, &fill);
}

static zf_status sh_decode(const shard *s, int16_t fill, int16_t *out, char *msg)
{
    zf_chunk_repr r;
    zf_codec_chain ch = sh_chain(s->at_end, &r, fill);
    zf_err err = {""};
    zf_status st = zf_chain_decode(&ch, &r, s->buf, s->len, (uint8_t *)out, &err);
    if (msg)
        strcpy(msg, err.msg);
    zf_chain_clear(&ch);
    return st;
}

START_TEST(test_sharding_layout)
{
    static const int c_order[4] = {0, 1, 2, 3}, reversed[4] = {3, 2, 1, 0};
    for (int end = 0; end < 2; end++)
        for (int o = 0; o < 2; o++)
            for (int empty = -1; empty < 4; empty++) {
                shard s;
                sh_build(&s, end, o ? reversed : c_order, empty, o ? 3 : 0);
                int16_t out[16];
                char msg[512];
                zf_status st = sh_decode(&s, -9, out, msg);
                ck_assert_msg(st == ZF_OK, "end %d order %d empty %d: %s", end, o, empty, msg);
                for (int i = 0; i < 4; i++)
                    for (int j = 0; j < 4; j++) {
                        int k = (i / 2) * 2 + j / 2;
                        ck_assert_int_eq(out[4 * i + j], k == empty ? -9 : sh_value(i, j));
                    }
            }
    /* What the array layer gets: the spec's example sizes ("Binary shard format": shard
     * [64, 64], inner chunks [32, 32], index codecs bytes + crc32c: 16 * 4 + 4 = 68 bytes). */
    zf_chunk_repr r;
    zf_codec_chain ch = sh_chain(true, &r, 0);
    ck_assert_uint_eq(ch.n, 1);
    zf_sharding sd;
    ck_assert(zf_codec_sharding(ch.codecs[0], &sd));
    ck_assert_uint_eq(sd.ndim, 2);
    ck_assert_uint_eq(sd.chunk_shape[0], 2);
    ck_assert_uint_eq(sd.chunks_per_shard[1], 2);
    ck_assert_uint_eq(sd.nchunks, 4);
    ck_assert_uint_eq(sd.index_nbytes, SH_INDEX);
    ck_assert(sd.index_at_end);
    ck_assert_uint_eq(sd.inner->nbytes, 8);
    ck_assert_uint_eq(sd.inner->shape[1], 2);
    ck_assert_uint_eq(sd.codecs->n, 1);
    ck_assert_int_eq(ch.codecs[0]->ops->kind, ZF_CODEC_ARRAY_TO_BYTES);
    zf_chunk_repr reprs[2];
    zf_err err = {""};
    ck_assert_int_eq(zf_chain_resolve(&ch, &r, reprs, &err), ZF_OK);
    ck_assert_uint_eq(reprs[1].nbytes, ZF_SIZE_UNKNOWN);
    /* Reading one inner chunk by its index entry, as the array layer does. */
    shard s;
    sh_build(&s, true, reversed, 1, 5);
    uint64_t pairs[8];
    ck_assert_int_eq(zf_sharding_decode_index(ch.codecs[0], s.buf + s.len - SH_INDEX, SH_INDEX,
                                              s.len, pairs, &err),
                     ZF_OK);
    ck_assert_mem_eq(pairs, s.pairs, sizeof pairs);
    ck_assert_uint_eq(pairs[2], UINT64_MAX);
    int16_t inner[4];
    ck_assert_int_eq(zf_chain_decode(sd.codecs, sd.inner, s.buf + pairs[6], pairs[7],
                                     (uint8_t *)inner, &err),
                     ZF_OK);
    ck_assert_int_eq(inner[0], sh_value(2, 2));
    ck_assert_int_eq(inner[3], sh_value(3, 3));
    ck_assert(!zf_codec_sharding(sd.codecs->codecs[0], &sd));
    ck_assert(!zf_codec_sharding(NULL, &sd));
    ck_assert_int_eq(zf_sharding_decode_index(sd.codecs->codecs[0], s.buf, SH_INDEX, s.len, pairs,
                                              &err),
                     ZF_ERR_INVALID);
    zf_chain_clear(&ch);
    /* The spec's example. */
    uint64_t big[2] = {64, 64};
    zf_chunk_repr rb = tu_repr_of("<f4", 2, big);
    ch = chain_ok("[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [32, "
                  "32], \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": "
                  "\"little\"}}, {\"name\": \"gzip\", \"configuration\": {\"level\": 1}}], "
                  "\"index_codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": "
                  "\"little\"}}, {\"name\": \"crc32c\"}], \"index_location\": \"end\"}}]",
                  ZF_CODECS_V3, &rb, NULL);
    ck_assert(zf_codec_sharding(ch.codecs[0], &sd));
    ck_assert_uint_eq(sd.index_nbytes, 68);
    ck_assert_uint_eq(sd.nchunks, 4);
    ck_assert_uint_eq(sd.codecs->n, 2);
    zf_chain_clear(&ch);
}
END_TEST

START_TEST(test_sharding_bad_index)
{
    static const int c_order[4] = {0, 1, 2, 3};
    char msg[512];
    int16_t out[16];
    shard s;
    /* An index entry pointing past the end of the shard. */
    sh_build(&s, true, c_order, -1, 0);
    s.pairs[2] = s.len - 4;
    sh_index(&s);
    ck_assert_int_eq(sh_decode(&s, 0, out, msg), ZF_ERR_CORRUPT);
    ck_assert_str_eq(msg, "sharding_indexed: inner chunk (0, 1): bytes [96, 104) end past the "
                          "shard's 100 bytes");
    /* offset + nbytes overflows. */
    sh_build(&s, true, c_order, -1, 0);
    s.pairs[6] = UINT64_MAX - 3;
    sh_index(&s);
    ck_assert_int_eq(sh_decode(&s, 0, out, msg), ZF_ERR_CORRUPT);
    ck_assert_contains(msg, "inner chunk (1, 1): offset 18446744073709551612 + 8 bytes overflows");
    /* Two inner chunks sharing bytes, in offset order and not. */
    sh_build(&s, true, c_order, -1, 0);
    s.pairs[2] = 4;
    sh_index(&s);
    ck_assert_int_eq(sh_decode(&s, 0, out, msg), ZF_ERR_CORRUPT);
    ck_assert_str_eq(msg, "sharding_indexed: inner chunks (0, 0) and (0, 1) overlap (bytes "
                          "[0, 8) and [4, 12))");
    sh_build(&s, true, c_order, -1, 0);
    s.pairs[0] = 24; /* chunk (0, 0) on top of chunk (1, 1), listed first */
    sh_index(&s);
    ck_assert_int_eq(sh_decode(&s, 0, out, msg), ZF_ERR_CORRUPT);
    ck_assert_str_eq(msg, "sharding_indexed: inner chunks (0, 0) and (1, 1) overlap (bytes "
                          "[24, 32) and [24, 32))");
    sh_build(&s, true, c_order, -1, 0);
    s.pairs[6] = 2; /* chunk (1, 1) inside chunk (0, 0), listed last */
    sh_index(&s);
    ck_assert_int_eq(sh_decode(&s, 0, out, msg), ZF_ERR_CORRUPT);
    ck_assert_str_eq(msg, "sharding_indexed: inner chunks (0, 0) and (1, 1) overlap (bytes "
                          "[0, 8) and [2, 10))");
    /* An entry overlapping the index, at the end and at the start. */
    sh_build(&s, true, c_order, -1, 0);
    s.pairs[6] = 28; /* [28, 36): the index is [32, 100) */
    sh_index(&s);
    ck_assert_int_eq(sh_decode(&s, 0, out, msg), ZF_ERR_CORRUPT);
    ck_assert_str_eq(msg, "sharding_indexed: inner chunk (1, 1): bytes [28, 36) overlap the "
                          "shard index (bytes [32, 100))");
    sh_build(&s, false, c_order, -1, 0);
    s.pairs[4] = 60; /* [60, 68) inside the index [0, 68) */
    sh_index(&s);
    ck_assert_int_eq(sh_decode(&s, 0, out, msg), ZF_ERR_CORRUPT);
    ck_assert_str_eq(msg, "sharding_indexed: inner chunk (1, 0): bytes [60, 68) overlap the "
                          "shard index (bytes [0, 68))");
    /* Half-empty entries. */
    sh_build(&s, true, c_order, -1, 0);
    s.pairs[3] = UINT64_MAX;
    sh_index(&s);
    ck_assert_int_eq(sh_decode(&s, 0, out, msg), ZF_ERR_CORRUPT);
    ck_assert_contains(msg, "inner chunk (0, 1): half-empty index entry");
    sh_build(&s, true, c_order, -1, 0);
    s.pairs[4] = UINT64_MAX;
    sh_index(&s);
    ck_assert_int_eq(sh_decode(&s, 0, out, msg), ZF_ERR_CORRUPT);
    ck_assert_contains(msg, "inner chunk (1, 0): half-empty index entry");
    /* A wrong checksum of the index. */
    sh_build(&s, true, c_order, -1, 0);
    s.buf[s.len - 1] ^= 0x80;
    ck_assert_int_eq(sh_decode(&s, 0, out, msg), ZF_ERR_CORRUPT);
    ck_assert_contains(msg, "sharding_indexed: index: crc32c: checksum mismatch");
    /* A shard shorter than its index. */
    sh_build(&s, true, c_order, -1, 0);
    size_t full = s.len;
    s.len = SH_INDEX - 1;
    ck_assert_int_eq(sh_decode(&s, 0, out, msg), ZF_ERR_CORRUPT);
    ck_assert_str_eq(msg, "sharding_indexed: shard of 67 bytes is shorter than its index (68 "
                          "bytes)");
    /* A shard that lost bytes: the index (read from the end) no longer checks out. */
    s.len = full - 1;
    ck_assert_int_eq(sh_decode(&s, 0, out, msg), ZF_ERR_CORRUPT);
    /* An inner chunk of the wrong size: the message names it. */
    sh_build(&s, true, c_order, -1, 0);
    s.pairs[7] = 6;
    sh_index(&s);
    ck_assert_int_eq(sh_decode(&s, 0, out, msg), ZF_ERR_CORRUPT);
    ck_assert_str_eq(msg, "sharding_indexed: inner chunk (1, 1): bytes: chunk holds 6 bytes, "
                          "expected 8");
    /* zf_sharding_decode_index: the index must be exactly index_nbytes. */
    zf_chunk_repr r;
    zf_codec_chain ch = sh_chain(true, &r, 0);
    uint64_t pairs[8];
    zf_err err = {""};
    sh_build(&s, true, c_order, -1, 0);
    ck_assert_int_eq(zf_sharding_decode_index(ch.codecs[0], s.buf + s.len - SH_INDEX + 1,
                                              SH_INDEX - 1, s.len, pairs, &err),
                     ZF_ERR_CORRUPT);
    ck_assert_int_eq(zf_sharding_decode_index(ch.codecs[0], s.buf + s.len - SH_INDEX, SH_INDEX,
                                              SH_INDEX - 1, pairs, &err),
                     ZF_ERR_CORRUPT);
    ck_assert_int_eq(zf_sharding_decode_index(ch.codecs[0], s.buf + s.len - SH_INDEX, SH_INDEX,
                                              s.len, pairs, &err),
                     ZF_OK);
    /* An entry of zero bytes occupies nothing (the inner chain then refuses it). */
    s.pairs[0] = 70;
    s.pairs[1] = 0;
    sh_index(&s);
    ck_assert_int_eq(zf_sharding_decode_index(ch.codecs[0], s.buf + s.len - SH_INDEX, SH_INDEX,
                                              s.len, pairs, &err),
                     ZF_OK);
    zf_chain_clear(&ch);
}
END_TEST

START_TEST(test_sharding_big_endian_index)
{
    /* Index codecs [bytes big, crc32c]: the (offset, nbytes) pairs are big-endian uint64. */
    uint64_t shape[1] = {4};
    zf_chunk_repr r = tu_repr_of("|u1", 1, shape);
    const char *json =
        "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2], "
        "\"codecs\": [\"bytes\"], \"index_codecs\": [{\"name\": \"bytes\", \"configuration\": "
        "{\"endian\": \"big\"}}, \"crc32c\"], \"index_location\": \"start\"}}]";
    uint8_t buf[36 + 4];
    memset(buf, 0, sizeof buf);
    put_be64(buf, 38);     /* chunk 0 at 38..40 */
    put_be64(buf + 8, 2);
    put_be64(buf + 16, 36); /* chunk 1 at 36..38 */
    put_be64(buf + 24, 2);
    tu_put_le32(buf + 32, crc32c_ref(buf, 32));
    memcpy(buf + 36, "\x03\x04\x01\x02", 4);
    decode_expect(json, ZF_CODECS_V3, &r, NULL, buf, sizeof buf, "\x01\x02\x03\x04");
    /* Read as little-endian, the same index points far past the end. */
    char msg[512];
    ck_assert_int_eq(
        decode_status("[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": "
                      "[2], \"codecs\": [\"bytes\"], \"index_codecs\": [{\"name\": \"bytes\", "
                      "\"configuration\": {\"endian\": \"little\"}}, \"crc32c\"], "
                      "\"index_location\": \"start\"}}]",
                      &r, NULL, buf, sizeof buf, msg),
        ZF_ERR_CORRUPT);
    ck_assert_contains(msg, "inner chunk (0): bytes [2738188573441261568, ");
}
END_TEST

START_TEST(test_sharding_config)
{
    char msg[512];
    uint64_t shape[2] = {4, 6};
    zf_chunk_repr r = tu_repr_of("<i2", 2, shape);
    static const char *const le =
        "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}";
    static const struct {
        const char *cfg, *part;
        zf_status st;
    } cases[] = {
        {"\"chunk_shape\": [3, 3], \"codecs\": [LE], \"index_codecs\": [LE]",
         "sharding_indexed: \"chunk_shape\": 3 does not divide the shard's 4 elements along "
         "dimension 0",
         ZF_ERR_INVALID},
        {"\"chunk_shape\": [2], \"codecs\": [LE], \"index_codecs\": [LE]",
         "sharding_indexed: \"chunk_shape\": 1 dimensions, the shard has 2", ZF_ERR_INVALID},
        {"\"chunk_shape\": [0, 3], \"codecs\": [LE], \"index_codecs\": [LE]",
         "\"chunk_shape\": expected a list of positive integers", ZF_ERR_INVALID},
        {"\"chunk_shape\": [2, -3], \"codecs\": [LE], \"index_codecs\": [LE]",
         "\"chunk_shape\"", ZF_ERR_INVALID},
        {"\"codecs\": [LE], \"index_codecs\": [LE]", "\"chunk_shape\": missing", ZF_ERR_INVALID},
        {"\"chunk_shape\": [2, 3], \"index_codecs\": [LE]", "\"codecs\": missing",
         ZF_ERR_INVALID},
        {"\"chunk_shape\": [2, 3], \"codecs\": [LE]", "\"index_codecs\": missing",
         ZF_ERR_INVALID},
        /* Index codecs "MUST NOT" have a variable-sized output. */
        {"\"chunk_shape\": [2, 3], \"codecs\": [LE], \"index_codecs\": [LE, {\"name\": "
         "\"gzip\", \"configuration\": {\"level\": 1}}]",
         "sharding_indexed: \"index_codecs\": \"gzip\" has no fixed encoded size",
         ZF_ERR_INVALID},
        {"\"chunk_shape\": [2, 3], \"codecs\": [LE], \"index_codecs\": [LE, {\"name\": "
         "\"zstd\"}, {\"name\": \"crc32c\"}]",
         "\"zstd\" has no fixed encoded size", ZF_ERR_INVALID},
        {"\"chunk_shape\": [2, 3], \"codecs\": [LE], \"index_codecs\": [LE], "
         "\"index_location\": \"middle\"",
         "\"index_location\": expected \"start\" or \"end\"", ZF_ERR_INVALID},
        {"\"chunk_shape\": [2, 3], \"codecs\": [], \"index_codecs\": [LE]",
         "sharding_indexed: \"codecs\": codecs: no array -> bytes codec", ZF_ERR_INVALID},
        {"\"chunk_shape\": [2, 3], \"codecs\": [LE], \"index_codecs\": [{\"name\": \"gzip\"}]",
         "sharding_indexed: \"index_codecs\": codecs: \"gzip\" (bytes -> bytes) comes before",
         ZF_ERR_INVALID},
        {"\"chunk_shape\": [2, 3], \"codecs\": [{\"name\": \"zarrs.gdeflate\"}], "
         "\"index_codecs\": [LE]",
         "sharding_indexed: \"codecs\": codec \"zarrs.gdeflate\" is not supported",
         ZF_ERR_UNSUPPORTED},
        {"\"chunk_shape\": [2, 3], \"codecs\": [LE], \"index_codecs\": [LE], \"x\": 1",
         "sharding_indexed: \"x\": unknown configuration field", ZF_ERR_INVALID},
        /* The inner chunk's bytes codec needs "endian" for int16. */
        {"\"chunk_shape\": [2, 3], \"codecs\": [\"bytes\"], \"index_codecs\": [LE]",
         "\"codecs\": bytes: \"endian\": missing", ZF_ERR_INVALID},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cfg[1024], json[2048];
        /* Replace each LE by the little-endian bytes codec. */
        const char *p = cases[i].cfg;
        size_t n = 0;
        while (*p && n + 100 < sizeof cfg) {
            if (strncmp(p, "LE", 2) == 0) {
                n += (size_t)snprintf(cfg + n, sizeof cfg - n, "%s", le);
                p += 2;
            } else {
                cfg[n++] = *p++;
            }
        }
        cfg[n] = 0;
        snprintf(json, sizeof json,
                 "[{\"name\": \"sharding_indexed\", \"configuration\": {%s}}]", cfg);
        zf_status st = v3_status(json, &r, msg);
        ck_assert_msg(st == cases[i].st, "%s: %s (%s)", json, zf_status_str(st), msg);
        ck_assert_contains(msg, cases[i].part);
    }
    ck_assert_int_eq(v3_status("[{\"name\": \"sharding_indexed\"}]", &r, msg), ZF_ERR_INVALID);
    /* At most 2^24 inner chunks per shard (the index is sized from the metadata). */
    uint64_t many[1] = {(uint64_t)1 << 25};
    zf_chunk_repr rm = tu_repr_of("|u1", 1, many);
    ck_assert_int_eq(v3_status("[{\"name\": \"sharding_indexed\", \"configuration\": "
                               "{\"chunk_shape\": [1], \"codecs\": [\"bytes\"], "
                               "\"index_codecs\": [{\"name\": \"bytes\", \"configuration\": "
                               "{\"endian\": \"little\"}}]}}]",
                               &rm, msg),
                     ZF_ERR_INVALID);
    ck_assert_str_eq(msg, "sharding_indexed: more than 16777216 inner chunks per shard");
    ck_assert_int_eq(v3_status("[{\"name\": \"sharding_indexed\", \"configuration\": "
                               "{\"chunk_shape\": [2], \"codecs\": [\"bytes\"], "
                               "\"index_codecs\": [{\"name\": \"bytes\", \"configuration\": "
                               "{\"endian\": \"little\"}}]}}]",
                               &rm, msg),
                     ZF_OK);
    /* Transposing the index is allowed (fixed size). */
    ck_assert_int_eq(
        v3_status("[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2, "
                  "3], \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": "
                  "\"big\"}}], \"index_codecs\": [{\"name\": \"transpose\", \"configuration\": "
                  "{\"order\": [2, 0, 1]}}, {\"name\": \"bytes\", \"configuration\": "
                  "{\"endian\": \"little\"}}]}}]",
                  &r, msg),
        ZF_OK);
    /* Sharding nested too deep is refused. */
    char json[8192] = "", tail[2048] = "";
    uint64_t one[1] = {1};
    zf_chunk_repr r1 = tu_repr_of("|u1", 1, one);
    for (int d = 0; d < 12; d++) {
        strcat(json, "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": "
                     "[1], \"index_codecs\": [\"bytes\"], \"codecs\": ");
        strcat(tail, "}}]");
    }
    strcat(json, "[\"bytes\"]");
    strcat(json, tail);
    ck_assert_int_eq(v3_status(json, &r1, msg), ZF_ERR_UNSUPPORTED);
    ck_assert_contains(msg, "nested more than");
}
END_TEST

/* --- the drafts --- */

START_TEST(test_draft2022)
{
    char msg[512];
    uint64_t shape[2] = {2, 3};
    zf_chunk_repr r = tu_repr_of("<i2", 2, shape);
    zf_codec_chain ch;
    zf_err err = {""};
    /* No endian codec: the default binary representation (little endian) is added. */
    ch = chain_ok("[{\"codec\": \"https://purl.org/zarr/spec/codec/gzip/1.0\", "
                  "\"configuration\": {\"level\": 1}}]",
                  ZF_CODECS_DRAFT_2022, &r, NULL);
    ck_assert_uint_eq(ch.n, 2);
    ck_assert_str_eq(ch.codecs[0]->ops->name, "bytes");
    ck_assert_str_eq(ch.codecs[1]->ops->name, "gzip");
    zf_chain_clear(&ch);
    ch = chain_ok("[{\"codec\": \"https://purl.org/zarr/spec/codec/transpose/1.0\", "
                  "\"configuration\": {\"order\": \"F\"}}]",
                  ZF_CODECS_DRAFT_2022, &r, NULL);
    ck_assert_uint_eq(ch.n, 2);
    ck_assert_str_eq(ch.codecs[1]->ops->name, "bytes");
    /* Transpose "F" of a 2 x 3 array stores 3 x 2 little-endian. */
    static const int16_t a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 4, 2, 5, 3, 6};
    int16_t out[6];
    ck_assert_int_eq(zf_chain_decode(&ch, &r, (const uint8_t *)b, 12, (uint8_t *)out, &err),
                     ZF_OK);
    ck_assert_mem_eq(out, a, 12);
    zf_chain_clear(&ch);
    /* An absent codecs member is an empty list. */
    ch.n = 5;
    ck_assert_int_eq(zf_chain_from_v3(NULL, ZF_CODECS_DRAFT_2022, &r, NULL, &ch, &err), ZF_OK);
    ck_assert_uint_eq(ch.n, 1);
    zf_chain_clear(&ch);
    ck_assert_int_eq(zf_chain_from_v3(NULL, ZF_CODECS_V3, &r, NULL, &ch, &err), ZF_ERR_INVALID);
    static const struct {
        const char *json;
        zf_status st;
        const char *part;
    } bad[] = {
        {"[{\"codec\": \"https://purl.org/zarr/spec/codec/gzip/1.0\"}, {\"codec\": "
         "\"https://purl.org/zarr/spec/codec/transpose/1.0\", \"configuration\": {\"order\": "
         "[1, 0]}}]",
         ZF_ERR_INVALID, "(array -> array) follows"},
        {"[{\"codec\": \"https://purl.org/zarr/spec/codec/endian/1.0\", \"configuration\": "
         "{\"endian\": \"big\"}}, {\"codec\": \"https://purl.org/zarr/spec/codec/endian/1.0\", "
         "\"configuration\": {\"endian\": \"big\"}}]",
         ZF_ERR_INVALID, "two array -> bytes codecs"},
        {"[{\"codec\": \"https://purl.org/zarr/spec/codec/zstd/1.0\"}]", ZF_ERR_UNSUPPORTED,
         "codec \"https://purl.org/zarr/spec/codec/zstd/1.0\" is not supported"},
        {"[{\"codec\": \"https://purl.org/zarr/spec/codec/gzip/2.0\"}]", ZF_ERR_UNSUPPORTED,
         "codec \"https://purl.org/zarr/spec/codec/gzip/2.0\" is not supported"},
        {"[{\"codec\": \"gzip\"}]", ZF_ERR_UNSUPPORTED, "codec \"gzip\" is not supported"},
        {"[{\"name\": \"gzip\"}]", ZF_ERR_INVALID, "\"name\": unknown member"},
        {"[\"https://purl.org/zarr/spec/codec/gzip/1.0\"]", ZF_ERR_INVALID, "codecs[0]"},
        {"[{\"codec\": \"https://purl.org/zarr/spec/codec/endian/1.0\"}]", ZF_ERR_INVALID,
         "endian: \"endian\": missing"},
        {"[{\"codec\": \"https://purl.org/zarr/spec/codec/gzip/1.0\", \"type\": "
         "\"https://purl.org/zarr/spec/codec/gzip/1.0\"}]",
         ZF_ERR_INVALID, "both"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zf_status st = chain_status(bad[i].json, ZF_CODECS_DRAFT_2022, &r, NULL, &ch, &err);
        ck_assert_msg(st == bad[i].st, "%s: %s (%s)", bad[i].json, zf_status_str(st), err.msg);
        ck_assert_contains(err.msg, bad[i].part);
    }
    (void)msg;
}
END_TEST

START_TEST(test_draft2020)
{
    zf_err err = {""};
    zf_codec *c;
    /* As zarr-python 2.13 writes them (zarr/meta.py _encode_codec_metadata). */
    yajl_val v = tu_json("{\"codec\": \"https://purl.org/zarr/spec/codec/zlib/1.0\", "
                         "\"configuration\": {\"level\": 1}}");
    ck_assert_int_eq(zf_codec_from_draft2020(v, &c, &err), ZF_OK);
    yajl_tree_free(v);
    ck_assert_str_eq(c->ops->name, "zlib");
    ck_assert_int_eq(c->ops->kind, ZF_CODEC_BYTES_TO_BYTES);
    uint8_t data[1000], z[1200], out[1000];
    tu_fill(data, sizeof data, 5);
    uLongf zl = sizeof z;
    ck_assert_int_eq(compress2(z, &zl, data, sizeof data, 6), Z_OK);
    ck_assert_int_eq(tu_decode(c, z, zl, out, sizeof out, &err), ZF_OK);
    ck_assert_mem_eq(out, data, sizeof data);
    zf_codec_free(c);
    static const char *const good[] = {
        "{\"codec\": \"https://purl.org/zarr/spec/codec/blosc/1.0\", \"configuration\": "
        "{\"blocksize\": 0, \"clevel\": 5, \"cname\": \"lz4\", \"shuffle\": 1}}",
        "{\"codec\": \"https://purl.org/zarr/spec/codec/gzip/1.0\", \"configuration\": "
        "{\"level\": 6}}",
        "{\"codec\": \"https://purl.org/zarr/spec/codec/lz4/1.0\", \"configuration\": "
        "{\"acceleration\": 1}}",
        "{\"codec\": \"https://purl.org/zarr/spec/codec/bz2/1.0\", \"configuration\": "
        "{\"level\": 1}}",
        "{\"codec\": \"https://purl.org/zarr/spec/codec/lzma/1.0\", \"configuration\": "
        "{\"format\": 1, \"check\": -1, \"preset\": null, \"filters\": null}}",
        "{\"codec\": \"https://purl.org/zarr/spec/codec/zstd/1.0\"}",
    };
    static const char *const names[] = {"blosc", "gzip", "lz4", "bz2", "lzma", "zstd"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        v = tu_json(good[i]);
        zf_status st = zf_codec_from_draft2020(v, &c, &err);
        yajl_tree_free(v);
        ck_assert_msg(st == ZF_OK, "%s: %s", good[i], err.msg);
        ck_assert_str_eq(c->ops->name, names[i]);
        zf_codec_free(c);
    }
    static const struct {
        const char *json, *msg;
        zf_status st;
    } bad[] = {
        {"{\"codec\": \"https://purl.org/zarr/spec/codec/foo/1.0\"}",
         "codec \"https://purl.org/zarr/spec/codec/foo/1.0\" is not supported",
         ZF_ERR_UNSUPPORTED},
        {"{\"codec\": \"https://purl.org/zarr/spec/codec/pcodec/1.0\"}",
         "codec \"https://purl.org/zarr/spec/codec/pcodec/1.0\" is not supported (pcodec "
         "compression: " ZF_CODEC_NO_LIBRARY ")",
         ZF_ERR_UNSUPPORTED},
        {"{\"codec\": \"https://example.org/gzip\"}",
         "codec \"https://example.org/gzip\" is not supported", ZF_ERR_UNSUPPORTED},
        {"{\"codec\": \"https://purl.org/zarr/spec/codec/gzip/\"}",
         "codec \"https://purl.org/zarr/spec/codec/gzip/\" is not supported",
         ZF_ERR_UNSUPPORTED},
        {"{\"configuration\": {}}", "compressor: \"codec\": missing", ZF_ERR_INVALID},
        {"{\"codec\": 1}", "compressor: \"codec\": expected a URI string", ZF_ERR_INVALID},
        {"{\"codec\": \"https://purl.org/zarr/spec/codec/gzip/1.0\", \"configuration\": 1}",
         "compressor: \"configuration\": expected an object", ZF_ERR_INVALID},
        {"{\"codec\": \"https://purl.org/zarr/spec/codec/gzip/1.0\", \"configuration\": "
         "{\"level\": \"high\"}}",
         "gzip: \"level\": expected an integer or null", ZF_ERR_INVALID},
        {"[]", "compressor: expected a codec object", ZF_ERR_INVALID},
        {"null", "compressor: expected a codec object", ZF_ERR_INVALID},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = tu_json(bad[i].json);
        c = (zf_codec *)&err;
        zf_status st = zf_codec_from_draft2020(v, &c, &err);
        yajl_tree_free(v);
        ck_assert_msg(st == bad[i].st, "%s: %s (%s)", bad[i].json, zf_status_str(st), err.msg);
        ck_assert_ptr_null(c);
        ck_assert_str_eq(err.msg, bad[i].msg);
    }
}
END_TEST

/* --- vectors written by v3_expected.py --- */

static char *read_text(const char *dir, const char *name, size_t *len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    uint8_t *p = tu_read_file(path, len);
    ck_assert_msg(p != NULL, "cannot read %s", path);
    return (char *)p;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Also read every inner chunk of a shard through zf_codec_sharding, as the array layer will. */
static void check_inner_chunks(const char *name, const zf_codec *sc, const zf_chunk_repr *r,
                               const uint8_t *enc, size_t enc_len, const uint8_t *expected)
{
    zf_sharding sd;
    ck_assert(zf_codec_sharding(sc, &sd));
    ck_assert_uint_ge(enc_len, sd.index_nbytes);
    uint64_t *pairs = malloc(sd.nchunks * 16 + 1);
    zf_err err = {""};
    const uint8_t *ix = sd.index_at_end ? enc + enc_len - sd.index_nbytes : enc;
    zf_status st = zf_sharding_decode_index(sc, ix, sd.index_nbytes, enc_len, pairs, &err);
    ck_assert_msg(st == ZF_OK, "%s: index: %s", name, err.msg);
    size_t is = r->dtype.itemsize, inner_len = sd.inner->nbytes;
    uint8_t *chunk = malloc(inner_len + 1);
    for (uint64_t k = 0; k < sd.nchunks; k++) {
        if (pairs[2 * k] == UINT64_MAX)
            continue;
        st = zf_chain_decode(sd.codecs, sd.inner, enc + pairs[2 * k], pairs[2 * k + 1], chunk,
                             &err);
        ck_assert_msg(st == ZF_OK, "%s: inner chunk %llu: %s", name, (unsigned long long)k,
                      err.msg);
        /* Compare with the expected shard, element by element. */
        uint64_t c[ZF_MAX_DIMS], rem = k;
        for (unsigned d = sd.ndim; d-- > 0;) {
            c[d] = rem % sd.chunks_per_shard[d];
            rem /= sd.chunks_per_shard[d];
        }
        size_t n = inner_len / (is ? is : 1);
        for (size_t e = 0; e < n; e++) {
            size_t er = e, off = 0, stride = 1;
            for (unsigned d = sd.ndim; d-- > 0;) {
                size_t x = er % sd.chunk_shape[d];
                er /= sd.chunk_shape[d];
                off += (c[d] * sd.chunk_shape[d] + x) * stride;
                stride *= r->shape[d];
            }
            ck_assert_msg(memcmp(chunk + e * is, expected + off * is, is) == 0,
                          "%s: inner chunk %llu element %zu", name, (unsigned long long)k, e);
        }
    }
    free(chunk);
    free(pairs);
}

static int run_case(const char *dir, const char *name)
{
    char cdir[4096];
    snprintf(cdir, sizeof cdir, "%s/%s", dir, name);
    size_t clen, mlen, elen, xlen;
    char *codecs = read_text(cdir, "codecs.json", &clen);
    char *meta = read_text(cdir, "meta.json", &mlen);
    uint8_t *enc = (uint8_t *)read_text(cdir, "encoded.dat", &elen);
    uint8_t *expected = (uint8_t *)read_text(cdir, "expected.dat", &xlen);
    yajl_val m = tu_json(meta), cv = tu_json(codecs);
    const char *path_shape[] = {"shape", NULL}, *path_type[] = {"typestr", NULL},
               *path_fill[] = {"fill", NULL}, *path_dialect[] = {"dialect", NULL};
    yajl_val shape = yajl_tree_get(m, path_shape, yajl_t_array);
    const char *typestr = YAJL_GET_STRING(yajl_tree_get(m, path_type, yajl_t_string));
    const char *fillhex = YAJL_GET_STRING(yajl_tree_get(m, path_fill, yajl_t_string));
    const char *dialect = YAJL_GET_STRING(yajl_tree_get(m, path_dialect, yajl_t_string));
    ck_assert(shape && typestr && fillhex && dialect);
    uint64_t s[ZF_MAX_DIMS];
    for (size_t i = 0; i < shape->u.array.len; i++)
        s[i] = (uint64_t)YAJL_GET_INTEGER(shape->u.array.values[i]);
    zf_chunk_repr r = tu_repr_of(typestr, (unsigned)shape->u.array.len, s);
    ck_assert_msg(r.nbytes == xlen, "%s: expected.dat has %zu bytes, not %zu", name, xlen,
                  r.nbytes);
    uint8_t fill[64] = {0};
    for (size_t i = 0; fillhex[2 * i] && i < sizeof fill; i++)
        fill[i] = (uint8_t)(hexval(fillhex[2 * i]) << 4 | hexval(fillhex[2 * i + 1]));
    zf_codec_dialect d = strcmp(dialect, "draft2022") == 0 ? ZF_CODECS_DRAFT_2022 : ZF_CODECS_V3;
    zf_codec_chain chain;
    zf_err err = {""};
    zf_status st = zf_chain_from_v3(cv, d, &r, fill, &chain, &err);
    ck_assert_msg(st == ZF_OK, "%s: building %s: %s (%s)", name, codecs, zf_status_str(st),
                  err.msg);
    uint8_t *out = malloc(xlen + 1);
    st = zf_chain_decode(&chain, &r, enc, elen, out, &err);
    ck_assert_msg(st == ZF_OK, "%s: decoding: %s (%s)", name, zf_status_str(st), err.msg);
    ck_assert_msg(memcmp(out, expected, xlen) == 0, "%s: decoded chunk differs", name);
    if (chain.n == 1 && zf_codec_sharding(chain.codecs[0], &(zf_sharding){0}))
        check_inner_chunks(name, chain.codecs[0], &r, enc, elen, expected);
    /* Cut short by one byte, the chunk no longer decodes (never silently). */
    if (elen > 0) {
        st = zf_chain_decode(&chain, &r, enc, elen - 1, out, &err);
        ck_assert_msg(st != ZF_OK, "%s: a truncated chunk decoded", name);
    }
    free(out);
    zf_chain_clear(&chain);
    yajl_tree_free(m);
    yajl_tree_free(cv);
    free(codecs);
    free(meta);
    free(enc);
    free(expected);
    return 1;
}

START_TEST(test_python_vectors)
{
    if (!tu_v3_dir) {
        printf("v3 codec vectors: not generated, skipped\n");
        return;
    }
    DIR *dir = opendir(tu_v3_dir);
    ck_assert_ptr_nonnull(dir);
    struct dirent *de;
    int generated = 0, zarrita = 0, sharded = 0;
    while ((de = readdir(dir))) {
        if (de->d_name[0] == '.')
            continue;
        run_case(tu_v3_dir, de->d_name);
        if (strncmp(de->d_name, "zarrita.", 8) == 0) {
            zarrita++;
            sharded += strstr(de->d_name, "sharded") != NULL;
        } else {
            generated++;
        }
    }
    closedir(dir);
    printf("v3 codec vectors: %d generated and %d zarrita fixture chunks (%d sharded) decoded\n",
           generated, zarrita, sharded);
    /* All cases were there (v3_expected.py writes 33; the zarrita fixtures hold 91 chunks of
     * the codecs zarrfs serves). */
    ck_assert_int_ge(generated, 33);
    ck_assert_int_ge(zarrita, 80);
    ck_assert_int_ge(sharded, 20);
}
END_TEST

Suite *codec_v3_suite(void)
{
    Suite *s = suite_create("codec-v3");
    TCase *tc = tcase_create("codecs");
    tcase_add_test(tc, test_bytes_endian);
    tcase_add_test(tc, test_bytes_config);
    tcase_add_test(tc, test_transpose_v3);
    tcase_add_test(tc, test_crc32c_v3);
    tcase_add_test(tc, test_zstd_no_content_size);
    tcase_add_test(tc, test_compressor_configs);
    tcase_add_test(tc, test_chain_order_and_names);
    tcase_add_test(tc, test_numcodecs_names);
    suite_add_tcase(s, tc);
    TCase *ts = tcase_create("sharding");
    tcase_add_test(ts, test_sharding_layout);
    tcase_add_test(ts, test_sharding_bad_index);
    tcase_add_test(ts, test_sharding_big_endian_index);
    tcase_add_test(ts, test_sharding_config);
    suite_add_tcase(s, ts);
    TCase *td = tcase_create("drafts-and-vectors");
    tcase_set_timeout(td, 120);
    tcase_add_test(td, test_draft2022);
    tcase_add_test(td, test_draft2020);
    tcase_add_test(td, test_python_vectors);
    suite_add_tcase(s, td);
    return s;
}
