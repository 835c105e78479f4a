/* test_variants.c — codecs that real writers produce and zarrfs reads since "Read every variant
 * that real writers produce": numcodecs' fletcher32 and jenkins_lookup3 checksums, zarrs'
 * bitround, reshape and zarrs.squeeze, GDAL's string blosc shuffle, and chains whose
 * intermediate sizes only the data can tell (a compressor or a shard followed by a compressor).
 *
 * Where the expected values come from (never from our own encoder):
 * - fletcher32: numcodecs' own known-answer vector (numcodecs tests/test_fletcher32.py,
 *   test_known), and values computed by a Python implementation of numcodecs'
 *   fletcher32.pyx written for these tests (fletcher32_ref in
 *   tests/integration/test_variant_codecs.py), for odd lengths, more than 360 words and runs
 *   of 0xff (where this variant keeps 0xffff instead of reducing it to 0);
 * - jenkins_lookup3: numcodecs' known answers (tests/test_jenkins.py: "", "Four score and
 *   seven years ago" with initval 0, 1 and 1230, "jenkins", and the HDF5 fixed-array data
 *   block index with its "FADB" prefix, whose last 4 bytes HDF5 itself wrote);
 * - zarrs bitround: the chunks zarrs wrote for its own tests (zarrs tests/data/codec/bitround/
 *   bitround_uint8.zarr and bitround_float32.zarr, c/0, keepbits 3), and integer cases worked
 *   out by hand from zarrs' round_bits;
 * - the chains: libz, libzstd, libbz2 and c-blosc called directly here, and round trips;
 * - GDAL shuffle strings: the header flags c-blosc writes (byte 2: 0x1 byte shuffle, 0x4 bit
 *   shuffle). */
#include <blosc.h>
#include <bzlib.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#include <zstd.h>

#include "codec_impl.h"
#include "testutil.h"

/* --- helpers --- */

#define LE "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}"


static zf_status chain_status(const char *json, zf_codec_dialect dialect, const zf_chunk_repr *r,
                              zf_codec_chain *chain, zf_err *err)
{
    yajl_val v = tu_json(json);
    zf_status st = zf_chain_from_v3(v, dialect, r, NULL, chain, err);
    yajl_tree_free(v);
    return st;
}

static zf_codec_chain chain_ok(const char *json, zf_codec_dialect dialect, const zf_chunk_repr *r)
{
    zf_codec_chain chain;
    zf_err err = {""};
    zf_status st = chain_status(json, dialect, r, &chain, &err);
    ck_assert_msg(st == ZF_OK, "%s: %s (%s)", json, zf_status_str(st), err.msg);
    return chain;
}

/* A chain of v2 codecs (filters then compressor), each a numcodecs configuration. */
static zf_codec_chain v2_chain(const char *const *configs, size_t n)
{
    zf_codec_chain chain = {0};
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(zf_chain_append(&chain, tu_codec(configs[i])), ZF_OK);
    return chain;
}

static zf_status decode(const zf_codec_chain *chain, const zf_chunk_repr *r, const void *in,
                        size_t in_len, void *out, char *msg)
{
    zf_err err = {""};
    zf_status st = zf_chain_decode(chain, r, in, in_len, out, &err);
    if (msg)
        strcpy(msg, err.msg);
    return st;
}

/* Decode and compare; asserts success. */
static void decode_expect(const zf_codec_chain *chain, const zf_chunk_repr *r, const void *in,
                          size_t in_len, const void *expected, const char *what)
{
    uint8_t *out = malloc(r->nbytes + 1);
    char msg[512] = "";
    zf_status st = decode(chain, r, in, in_len, out, msg);
    ck_assert_msg(st == ZF_OK, "%s: %s (%s)", what, zf_status_str(st), msg);
    ck_assert_msg(memcmp(out, expected, r->nbytes) == 0, "%s: wrong decode", what);
    free(out);
}

/* Encode with the chain, then decode the result: asserts both and out == in. *enc (malloc'd)
 * gets the encoded bytes when enc is not NULL. */
static void round_trip(const zf_codec_chain *chain, const zf_chunk_repr *r, const void *in,
                       uint8_t **enc, size_t *enc_len, const char *what)
{
    uint8_t *e = NULL;
    size_t n = 0;
    zf_err err = {""};
    zf_status st = zf_chain_encode(chain, r, in, 0, &e, &n, &err);
    ck_assert_msg(st == ZF_OK, "%s: encode: %s (%s)", what, zf_status_str(st), err.msg);
    decode_expect(chain, r, e, n, in, what);
    if (enc) {
        *enc = e;
        *enc_len = n;
    } else {
        free(e);
    }
}

static void rand_fill(uint8_t *p, size_t n, uint32_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (uint8_t)(x >> 24);
    }
}

/* One gzip member of in (zlib's deflate with a gzip header). */
static uint8_t *gzip_of(const uint8_t *in, size_t len, size_t *out_len)
{
    z_stream s;
    memset(&s, 0, sizeof s);
    ck_assert_int_eq(deflateInit2(&s, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&s, len) + 32;
    uint8_t *out = malloc(cap);
    s.next_in = (Bytef *)(uintptr_t)in;
    s.avail_in = (uInt)len;
    s.next_out = out;
    s.avail_out = (uInt)cap;
    ck_assert_int_eq(deflate(&s, Z_FINISH), Z_STREAM_END);
    *out_len = cap - s.avail_out;
    deflateEnd(&s);
    return out;
}

/* Inflate a gzip/zlib stream whose result is known to be at most cap bytes. */
static uint8_t *inflate_of(const uint8_t *in, size_t len, int wbits, size_t cap, size_t *out_len)
{
    z_stream s;
    memset(&s, 0, sizeof s);
    ck_assert_int_eq(inflateInit2(&s, wbits), Z_OK);
    uint8_t *out = malloc(cap);
    s.next_in = (Bytef *)(uintptr_t)in;
    s.avail_in = (uInt)len;
    s.next_out = out;
    s.avail_out = (uInt)cap;
    ck_assert_int_eq(inflate(&s, Z_FINISH), Z_STREAM_END);
    *out_len = cap - s.avail_out;
    inflateEnd(&s);
    return out;
}

/* A zstd frame without a content size (libzstd's streaming compressor, fed in pieces). */
static uint8_t *zstd_stream_of(const uint8_t *in, size_t len, size_t *out_len)
{
    return tu_zstd_stream(in, len, ZSTD_CLEVEL_DEFAULT, false, 1000, out_len);
}

/* --- fletcher32 --- */

/* numcodecs tests/test_fletcher32.py, test_known: ten little-endian int64 and their checksum. */
static const uint8_t fletcher_known[84] = {
    'w',  0x07, 0, 0, 0, 0, 0, 0, 0x85, 0xf6, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    'i',  0x07, 0, 0, 0, 0, 0, 0, 0x94, 0xf6, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0x88, '\t', 0, 0, 0, 0, 0, 0, 'i',  0x03, 0,    0,    0,    0,    0,    0,
    0x93, 0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xc3, 0xfc, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    '\'', 0x02, 0, 0, 0, 0, 0, 0, 0xba, 0xf7, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xfd, '%',  0x86, 'd'};

START_TEST(test_fletcher32)
{
    zf_codec *c = tu_codec("{\"id\": \"fletcher32\"}");
    int64_t out[10];
    static const int64_t expected[10] = {1911, -2427, 1897, -2412, 2440,
                                         873,  -621,  -829, 551,   -2118};
    zf_err err = {""};
    ck_assert_int_eq(tu_decode(c, fletcher_known, 84, out, 80, &err), ZF_OK);
    for (int i = 0; i < 10; i++) /* little-endian host */
        ck_assert_int_eq(out[i], expected[i]);
    /* fletcher32_ref (Python, from fletcher32.pyx): odd lengths, > 360 words, 0xff runs. */
    uint8_t r1000[1000], ff[2000];
    for (int i = 0; i < 1000; i++)
        r1000[i] = (uint8_t)((i * 7 + 3) & 255);
    memset(ff, 0xff, sizeof ff);
    static const struct {
        size_t which, len;
        uint32_t sum;
    } cases[] = {
        {0, 3, 0x25c5c462},    /* "abc" */
        {1, 4, 0xffffffff},    /* ff ff ff ff: 0xffff kept, not reduced to 0 */
        {1, 7, 0xff00ff00},    /* odd */
        {2, 1000, 0x1dd116c5}, /* 500 words: two blocks */
        {1, 2000, 0xffffffff}, /* 1000 words of 0xffff */
        {0, 0, 0x00000000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const uint8_t *p = cases[i].which == 0 ? (const uint8_t *)"abc"
                           : cases[i].which == 1 ? ff
                                                 : r1000;
        size_t n = cases[i].len;
        uint8_t *in = malloc(n + 4), *o = malloc(n + 1);
        memcpy(in, p, n);
        tu_put_le32(in + n, cases[i].sum);
        ck_assert_msg(tu_decode(c, in, n + 4, o, n, &err) == ZF_OK, "case %zu: %s", i, err.msg);
        ck_assert_mem_eq(o, p, n);
        /* encode writes the same bytes */
        zf_chunk_repr r;
        zf_repr_bytes(&r, n);
        uint8_t *enc;
        size_t enc_len;
        ck_assert_int_eq(c->ops->encode(c, &r, p, n, 0, &enc, &enc_len, &err), ZF_OK);
        ck_assert_uint_eq(enc_len, n + 4);
        ck_assert_mem_eq(enc, in, n + 4);
        free(enc);
        /* a changed byte anywhere is a mismatch naming the codec */
        in[n ? n / 2 : n] ^= 0x10;
        ck_assert_int_eq(tu_decode(c, in, n + 4, o, n, &err), ZF_ERR_CORRUPT);
        ck_assert_msg(strncmp(err.msg, "fletcher32: checksum mismatch", 29) == 0, "%s",
                      err.msg);
        free(in);
        free(o);
    }
    /* too short for the checksum, or a payload of the wrong size */
    ck_assert_int_eq(tu_decode(c, fletcher_known, 3, out, 0, &err), ZF_ERR_CORRUPT);
    ck_assert_str_eq(err.msg, "fletcher32: 3 bytes, too short for a checksum");
    ck_assert_int_eq(tu_decode(c, fletcher_known, 83, out, 80, &err), ZF_ERR_CORRUPT);
    zf_codec_free(c);
}
END_TEST

/* --- jenkins_lookup3 --- */

/* numcodecs tests/test_jenkins.py: an HDF5 fixed-array data block index and its checksum,
 * computed over the "FADB" prefix and the block. */
static const uint8_t fadb_prefix[14] = {'F', 'A', 'D', 'B', 0, 1, 0xcf, 1, 0, 0, 0, 0, 0, 0};
static const uint8_t fadb_pairs[][2] = {
    {0x00, 0x08}, {0xf7, 0x0f}, {0xf7, 0x17}, {0xf7, 0x0f}, {0xee, '\''}, {0xf7, 0x0f},
    {0xe5, '7'},  {0xf7, 0x0f}, {0xdc, 'G'},  {0xf7, 0x0f}, {0xd3, 'W'},  {0xf7, 0x0f},
    {0xca, 'g'},  {0xf7, 0x0f}, {0xc1, 'w'},  {0xf7, 0x0f}, {0xb8, 0x87}, {0xf7, 0x0f},
    {0xaf, 0x97}, {0xf7, 0x0f}, {0xa6, 0xa7}, {0xf7, 0x0f}, {0x9d, 0xb7}, {0xf7, 0x0f},
    {0x94, 0xc7}, {0xf7, 0x0f}, {0x8b, 0xd7}, {0xf7, 0x0f}, {0x82, 0xe7}, {0xf7, 0x0f},
    {'y', 0xf7},  {0xf7, 0x0f}};
static const uint8_t fadb_sum[4] = {'n', 0x96, 0x07, 0x85};

static uint8_t *with_sum(const void *p, size_t n, const uint8_t *sum)
{
    uint8_t *b = malloc(n + 4);
    memcpy(b, p, n);
    memcpy(b + n, sum, 4);
    return b;
}

START_TEST(test_jenkins_lookup3)
{
    static const char four[] = "Four score and seven years ago";
    static const struct {
        const char *config, *data;
        uint32_t sum;
    } cases[] = {
        {"{\"id\": \"jenkins_lookup3\"}", "", 0xDEADBEEF},
        {"{\"id\": \"jenkins_lookup3\", \"initval\": 3735928559}", "", 0xBD5B7DDE},
        {"{\"id\": \"jenkins_lookup3\", \"initval\": 0, \"prefix\": null}", four, 0x17770551},
        {"{\"id\": \"jenkins_lookup3\", \"initval\": 1}", four, 0xCD628161},
        {"{\"id\": \"jenkins_lookup3\", \"initval\": 1230}", four, 0x0EE25AD7},
        {"{\"id\": \"jenkins_lookup3\"}", "jenkins", 202276345},
    };
    zf_err err = {""};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        zf_codec *c = tu_codec(cases[i].config);
        size_t n = strlen(cases[i].data);
        uint8_t sum[4], out[64];
        tu_put_le32(sum, cases[i].sum);
        uint8_t *in = with_sum(cases[i].data, n, sum);
        ck_assert_msg(tu_decode(c, in, n + 4, out, n, &err) == ZF_OK, "case %zu: %s", i,
                      err.msg);
        ck_assert_mem_eq(out, cases[i].data, n);
        zf_chunk_repr r;
        zf_repr_bytes(&r, n);
        uint8_t *enc;
        size_t enc_len;
        ck_assert_int_eq(c->ops->encode(c, &r, (const uint8_t *)cases[i].data, n, 0, &enc,
                                        &enc_len, &err),
                         ZF_OK);
        ck_assert_mem_eq(enc, in, n + 4);
        free(enc);
        in[n + 1] ^= 1;
        ck_assert_int_eq(tu_decode(c, in, n + 4, out, n, &err), ZF_ERR_CORRUPT);
        ck_assert_msg(strncmp(err.msg, "jenkins_lookup3: checksum mismatch", 34) == 0, "%s",
                      err.msg);
        free(in);
        zf_codec_free(c);
    }
    /* The prefix (here as a list of byte values): HDF5's own checksum of a FADB block. */
    char cfg[512];
    int k = snprintf(cfg, sizeof cfg, "{\"id\": \"jenkins_lookup3\", \"prefix\": [");
    for (size_t i = 0; i < sizeof fadb_prefix; i++)
        k += snprintf(cfg + k, sizeof cfg - (size_t)k, "%s%u", i ? ", " : "", fadb_prefix[i]);
    snprintf(cfg + k, sizeof cfg - (size_t)k, "]}");
    zf_codec *c = tu_codec(cfg);
    uint8_t block[sizeof fadb_pairs / 2 * 8], out[sizeof block];
    memset(block, 0, sizeof block);
    for (size_t i = 0; i < sizeof fadb_pairs / 2; i++)
        memcpy(block + 8 * i, fadb_pairs[i], 2);
    uint8_t *in = with_sum(block, sizeof block, fadb_sum);
    ck_assert_int_eq(tu_decode(c, in, sizeof block + 4, out, sizeof block, &err), ZF_OK);
    ck_assert_mem_eq(out, block, sizeof block);
    zf_codec_free(c);
    /* without the prefix the same bytes do not check */
    c = tu_codec("{\"id\": \"jenkins_lookup3\"}");
    ck_assert_int_eq(tu_decode(c, in, sizeof block + 4, out, sizeof block, &err),
                     ZF_ERR_CORRUPT);
    ck_assert_int_eq(tu_decode(c, in, 2, out, 0, &err), ZF_ERR_CORRUPT);
    zf_codec_free(c);
    free(in);
    /* Every length 0..40 through prefix lengths 0..13 agrees with the prefix-less hash of the
     * concatenation (the 12-byte blocks straddle the prefix's end in every way). */
    uint8_t data[40], cat[64];
    rand_fill(data, sizeof data, 5);
    for (size_t pl = 0; pl < 14; pl++) {
        k = snprintf(cfg, sizeof cfg,
                     "{\"id\": \"jenkins_lookup3\", \"initval\": 7, \"prefix\": [");
        for (size_t i = 0; i < pl; i++)
            k += snprintf(cfg + k, sizeof cfg - (size_t)k, "%s%u", i ? ", " : "",
                          fadb_prefix[i]);
        snprintf(cfg + k, sizeof cfg - (size_t)k, "]}");
        zf_codec *cp = tu_codec(cfg), *cn = tu_codec("{\"id\": \"jenkins_lookup3\", "
                                                     "\"initval\": 7}");
        for (size_t n = 0; n <= sizeof data; n++) {
            memcpy(cat, fadb_prefix, pl);
            memcpy(cat + pl, data, n);
            zf_chunk_repr r;
            uint8_t *e1, *e2;
            size_t l1, l2;
            zf_repr_bytes(&r, n);
            ck_assert_int_eq(cp->ops->encode(cp, &r, data, n, 0, &e1, &l1, &err), ZF_OK);
            zf_repr_bytes(&r, pl + n);
            ck_assert_int_eq(cn->ops->encode(cn, &r, cat, pl + n, 0, &e2, &l2, &err), ZF_OK);
            ck_assert_mem_eq(e1 + n, e2 + pl + n, 4);
            free(e1);
            free(e2);
        }
        zf_codec_free(cp);
        zf_codec_free(cn);
    }
    /* configurations */
    static const char *const bad[] = {
        "{\"id\": \"jenkins_lookup3\", \"initval\": -1}",
        "{\"id\": \"jenkins_lookup3\", \"initval\": 4294967296}",
        "{\"id\": \"jenkins_lookup3\", \"initval\": \"0\"}",
        "{\"id\": \"jenkins_lookup3\", \"prefix\": \"FADB\"}",
        "{\"id\": \"jenkins_lookup3\", \"prefix\": [256]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(tu_codec_status(bad[i], &err) == ZF_ERR_INVALID, "%s", bad[i]);
}
END_TEST

/* Both checksums in chains: as a v2 filter and compressor, and under their v3 names. */
START_TEST(test_checksum_chains)
{
    enum { N = 1000 };
    int32_t data[N];
    for (int i = 0; i < N; i++)
        data[i] = i * 37 - 5000;
    uint64_t shape[1] = {N};
    zf_chunk_repr r = tu_repr_of("<i4", 1, shape);
    static const char *const v2[][2] = {
        {"{\"id\": \"fletcher32\"}", "{\"id\": \"zlib\", \"level\": 1}"},
        {"{\"id\": \"jenkins_lookup3\", \"initval\": 9}", "{\"id\": \"blosc\"}"},
        {"{\"id\": \"zlib\", \"level\": 1}", "{\"id\": \"fletcher32\"}"},
        {"{\"id\": \"zstd\", \"level\": 1}", "{\"id\": \"jenkins_lookup3\"}"},
    };
    for (size_t i = 0; i < sizeof v2 / sizeof v2[0]; i++) {
        zf_codec_chain ch = v2_chain(v2[i], 2);
        uint8_t *enc;
        size_t n;
        round_trip(&ch, &r, data, &enc, &n, v2[i][0]);
        enc[n / 2] ^= 0x01; /* a corrupted byte is CORRUPT, never a wrong decode */
        int32_t out[N];
        char msg[512];
        ck_assert_int_eq(decode(&ch, &r, enc, n, out, msg), ZF_ERR_CORRUPT);
        free(enc);
        zf_chain_clear(&ch);
    }
    static const char *const v3[] = {
        "[" LE ", {\"name\": \"numcodecs.fletcher32\"}]",
        "[" LE ", {\"name\": \"numcodecs.fletcher32\", \"configuration\": {}}, "
        "{\"name\": \"gzip\", \"configuration\": {\"level\": 1}}]",
        "[" LE ", {\"name\": \"https://codec.zarrs.dev/bytes_to_bytes/fletcher32\"}]",
        "[" LE ", {\"name\": \"numcodecs.jenkins_lookup3\", \"configuration\": "
        "{\"initval\": 0, \"prefix\": null}}]",
        "[" LE ", {\"name\": \"zstd\", \"configuration\": {\"level\": 1}}, "
        "{\"name\": \"numcodecs.jenkins_lookup3\"}]",
    };
    for (size_t i = 0; i < sizeof v3 / sizeof v3[0]; i++) {
        zf_codec_chain ch = chain_ok(v3[i], ZF_CODECS_V3, &r);
        ck_assert_int_eq(ch.codecs[ch.n - 1]->ops->kind, ZF_CODEC_BYTES_TO_BYTES);
        round_trip(&ch, &r, data, NULL, NULL, v3[i]);
        zf_chain_clear(&ch);
    }
    /* numcodecs.<id> codecs encode too (as zarr-python 3 does, through numcodecs) */
    uint64_t shape2[2] = {20, 50};
    zf_chunk_repr r2 = tu_repr_of("<i4", 2, shape2);
    zf_codec_chain nc = chain_ok(
        "[{\"name\": \"numcodecs.delta\", \"configuration\": {\"dtype\": \"<i4\"}}, "
        "{\"name\": \"transpose\", \"configuration\": {\"order\": [1, 0]}}, " LE ", "
        "{\"name\": \"numcodecs.shuffle\", \"configuration\": {\"elementsize\": 4}}, "
        "{\"name\": \"numcodecs.zlib\", \"configuration\": {\"level\": 1}}, "
        "{\"name\": \"numcodecs.crc32\"}]",
        ZF_CODECS_V3, &r2);
    round_trip(&nc, &r2, data, NULL, NULL, "numcodecs.* chain");
    zf_chain_clear(&nc);
    /* [bytes, fletcher32] stores the little-endian elements and their checksum after them */
    zf_codec_chain ch = chain_ok(v3[0], ZF_CODECS_V3, &r);
    uint8_t *enc;
    size_t n;
    round_trip(&ch, &r, data, &enc, &n, v3[0]);
    ck_assert_uint_eq(n, sizeof data + 4);
    ck_assert_mem_eq(enc, data, sizeof data);
    free(enc);
    zf_chain_clear(&ch);
}
END_TEST

/* --- zarrs bitround --- */

static void bitround_expect(const char *typestr, unsigned keepbits, const void *in,
                            const void *expected, size_t n)
{
    uint64_t shape[1] = {n};
    zf_chunk_repr r = tu_repr_of(typestr, 1, shape);
    char json[256];
    snprintf(json, sizeof json,
             "[{\"name\": \"bitround\", \"configuration\": {\"keepbits\": %u}}, \"bytes\"]",
             keepbits);
    if (r.dtype.itemsize > 1)
        snprintf(json, sizeof json,
                 "[{\"name\": \"bitround\", \"configuration\": {\"keepbits\": %u}}, " LE "]",
                 keepbits);
    zf_codec_chain ch = chain_ok(json, ZF_CODECS_V3, &r);
    uint8_t *enc;
    size_t len;
    zf_err err = {""};
    ck_assert_msg(zf_chain_encode(&ch, &r, in, 0, &enc, &len, &err) == ZF_OK, "%s %u: %s",
                  typestr, keepbits, err.msg);
    ck_assert_uint_eq(len, r.nbytes);
    ck_assert_msg(memcmp(enc, expected, len) == 0, "%s keepbits %u: wrong rounding", typestr,
                  keepbits);
    decode_expect(&ch, &r, enc, len, expected, "bitround decode"); /* the identity */
    free(enc);
    zf_chain_clear(&ch);
}

START_TEST(test_bitround_zarrs)
{
    /* zarrs tests/data/codec/bitround/bitround_uint8.zarr: keepbits 3, from the most
     * significant set bit, saturating (255 -> 224). */
    static const uint8_t u8[10] = {0, 1, 10, 11, 100, 123, 200, 208, 209, 255};
    static const uint8_t u8r[10] = {0x00, 0x01, 0x0a, 0x0c, 0x60, 0x80, 0xc0, 0xc0, 0xe0, 0xe0};
    bitround_expect("|u1", 3, u8, u8r, 10);
    /* zarrs tests/data/codec/bitround/bitround_float32.zarr: keepbits 3 of the mantissa. */
    static const float f32[9] = {0.0f, 0.1f, 1.2f, 12.3f, 123.4f, 1234.5f,
                                 __builtin_nanf(""), __builtin_inff(), -__builtin_inff()};
    static const uint8_t f32r[36] = {0, 0, 0,    0,    0, 0, 0xd0, 0x3d, 0, 0, 0xa0, 0x3f,
                                     0, 0, 0x40, 0x41, 0, 0, 0xf0, 0x42, 0, 0, 0xa0, 0x44,
                                     0, 0, 0xc0, 0x7f, 0, 0, 0x80, 0x7f, 0, 0, 0x80, 0xff};
    bitround_expect("<f4", 3, f32, f32r, 9);
    /* By hand from zarrs' round_bits on the unsigned bits, keepbits 4: -1 (0xffff, 16 bits,
     * m = 12) saturates, then keeps its top 4 bits: 0xf000; 0x0123 (9 bits, m = 5): 0x123 + 1 +
     * 15 = 0x133 -> 0x120; 7 (3 bits): unchanged; 0x7fff (15 bits, m = 11): 0x7fff + 1 +
     * 0x3ff = 0x83ff -> 0x8000; 0x8000: + 0 + 0x7ff -> 0x8000. */
    static const int16_t i16[5] = {-1, 0x0123, 7, 0x7fff, -32768};
    static const int16_t i16r[5] = {(int16_t)0xf000, 0x0120, 7, (int16_t)0x8000, -32768};
    bitround_expect("<i2", 4, i16, i16r, 5);
    /* keepbits at or above the width: unchanged, also for float64 and complex halves */
    static const double f64[3] = {1.0 / 3.0, -2.5e300, 1e-300};
    bitround_expect("<f8", 52, f64, f64, 3);
    bitround_expect("<f8", 200, f64, f64, 3);
    /* complex64: each float32 component rounded as a float32 (1/3 = 0x3eaaaaab, keep 3 of the
     * mantissa 0x2aaaab: 010|1... rounds up to 011: 0x3eb00000; -2 unchanged) */
    static const float c8[2] = {1.0f / 3.0f, -2.0f};
    static const uint8_t c8r[8] = {0, 0, 0xb0, 0x3e, 0, 0, 0, 0xc0};
    bitround_expect("<c8", 3, c8, c8r, 1);
    /* big-endian storage does not change the rounding of the values */
    uint64_t shape[1] = {2};
    zf_chunk_repr r = tu_repr_of("<u2", 1, shape);
    zf_codec_chain ch = chain_ok("[{\"name\": \"bitround\", \"configuration\": {\"keepbits\": 2}}, "
                                 "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}]",
                                 ZF_CODECS_V3, &r);
    static const uint16_t u16[2] = {0x1234, 0x00ff}; /* -> 0x1000 (m = 11), 0x0100 */
    static const uint8_t u16be[4] = {0x10, 0x00, 0x01, 0x00};
    uint8_t *enc;
    size_t len;
    zf_err err = {""};
    ck_assert_int_eq(zf_chain_encode(&ch, &r, (const uint8_t *)u16, 0, &enc, &len, &err), ZF_OK);
    ck_assert_mem_eq(enc, u16be, 4);
    free(enc);
    zf_chain_clear(&ch);
    /* data types zarrs does not round: refused on encode (decode is the identity) */
    r = tu_repr_of("|b1", 1, shape);
    ch = chain_ok("[{\"name\": \"bitround\", \"configuration\": {\"keepbits\": 2}}, \"bytes\"]",
                  ZF_CODECS_V3, &r);
    static const uint8_t b2[2] = {1, 0};
    ck_assert_int_eq(zf_chain_encode(&ch, &r, b2, 0, &enc, &len, &err), ZF_ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "bitround") != NULL, "%s", err.msg);
    decode_expect(&ch, &r, b2, 2, b2, "bool bitround decode");
    zf_chain_clear(&ch);
    /* numcodecs.bitround keeps numcodecs' rules: integers are refused */
    r = tu_repr_of("<i2", 1, shape);
    ch = chain_ok("[{\"name\": \"numcodecs.bitround\", \"configuration\": {\"keepbits\": 2}}, " LE
                  "]",
                  ZF_CODECS_V3, &r);
    ck_assert_int_eq(zf_chain_encode(&ch, &r, (const uint8_t *)i16, 0, &enc, &len, &err),
                     ZF_ERR_INVALID);
    zf_chain_clear(&ch);
    /* configurations */
    static const char *const bad[] = {
        "[{\"name\": \"bitround\"}, " LE "]",
        "[{\"name\": \"bitround\", \"configuration\": {\"keepbits\": -1}}, " LE "]",
        "[{\"name\": \"bitround\", \"configuration\": {\"keepbits\": 3, \"x\": 1}}, " LE "]",
        "[" LE ", {\"name\": \"bitround\", \"configuration\": {\"keepbits\": 3}}]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zf_status st = chain_status(bad[i], ZF_CODECS_V3, &r, &ch, &err);
        ck_assert_msg(st == ZF_ERR_INVALID, "%s: %s", bad[i], zf_status_str(st));
    }
    ch = chain_ok("[{\"name\": \"https://codec.zarrs.dev/array_to_array/bitround\", "
                  "\"configuration\": {\"keepbits\": 3}}, " LE "]",
                  ZF_CODECS_V3, &r);
    ck_assert_str_eq(ch.codecs[0]->ops->name, "bitround");
    zf_chain_clear(&ch);
}
END_TEST

/* --- reshape, zarrs.squeeze --- */

START_TEST(test_reshape_squeeze)
{
    uint64_t shape[4] = {2, 1, 3, 4};
    zf_chunk_repr r = tu_repr_of("<u2", 4, shape);
    zf_chunk_repr reprs[4];
    zf_err err = {""};
    static const struct {
        const char *json;
        unsigned ndim;
        uint64_t shape[4];
    } ok[] = {
        {"[{\"name\": \"reshape\", \"configuration\": {\"shape\": [[0, 1], -1]}}, " LE "]", 2,
         {2, 12}},
        {"[{\"name\": \"reshape\", \"configuration\": {\"shape\": [24]}}, " LE "]", 1, {24}},
        {"[{\"name\": \"reshape\", \"configuration\": {\"shape\": [2, [2, 3]]}}, " LE "]", 2,
         {2, 12}},
        {"[{\"name\": \"reshape\", \"configuration\": {\"shape\": [-1, 4, 3]}}, " LE "]", 3,
         {2, 4, 3}},
        {"[{\"name\": \"zarrs.squeeze\", \"configuration\": {}}, " LE "]", 3, {2, 3, 4}},
        {"[\"zarrs.squeeze\", " LE "]", 3, {2, 3, 4}},
    };
    uint16_t data[24];
    for (int i = 0; i < 24; i++)
        data[i] = (uint16_t)(i * 1000 + 7);
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        zf_codec_chain ch = chain_ok(ok[i].json, ZF_CODECS_V3, &r);
        ck_assert_int_eq(zf_chain_resolve(&ch, &r, reprs, &err), ZF_OK);
        ck_assert_uint_eq(reprs[1].ndim, ok[i].ndim);
        for (unsigned d = 0; d < ok[i].ndim; d++)
            ck_assert_uint_eq(reprs[1].shape[d], ok[i].shape[d]);
        ck_assert_uint_eq(reprs[1].nbytes, 48);
        uint8_t *enc;
        size_t len;
        round_trip(&ch, &r, data, &enc, &len, ok[i].json);
        ck_assert_uint_eq(len, 48);
        ck_assert_mem_eq(enc, data, 48); /* the bytes as they are (little-endian host) */
        free(enc);
        zf_chain_clear(&ch);
    }
    /* squeeze of all-1 dimensions leaves [1]; a transpose may follow a reshape */
    uint64_t ones[3] = {1, 1, 1};
    zf_chunk_repr r1 = tu_repr_of("<f4", 3, ones);
    zf_codec_chain ch = chain_ok("[\"zarrs.squeeze\", " LE "]", ZF_CODECS_V3, &r1);
    ck_assert_int_eq(zf_chain_resolve(&ch, &r1, reprs, &err), ZF_OK);
    ck_assert_uint_eq(reprs[1].ndim, 1);
    ck_assert_uint_eq(reprs[1].shape[0], 1);
    zf_chain_clear(&ch);
    ch = chain_ok("[{\"name\": \"reshape\", \"configuration\": {\"shape\": [6, 4]}}, "
                  "{\"name\": \"transpose\", \"configuration\": {\"order\": [1, 0]}}, " LE "]",
                  ZF_CODECS_V3, &r);
    uint16_t t[24];
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 4; j++)
            t[j * 6 + i] = data[i * 4 + j];
    decode_expect(&ch, &r, t, 48, data, "reshape then transpose");
    zf_chain_clear(&ch);
    static const char *const bad[] = {
        "[{\"name\": \"reshape\", \"configuration\": {\"shape\": [5, -1]}}, " LE "]",
        "[{\"name\": \"reshape\", \"configuration\": {\"shape\": [25]}}, " LE "]",
        "[{\"name\": \"reshape\", \"configuration\": {\"shape\": [-1, -1]}}, " LE "]",
        "[{\"name\": \"reshape\", \"configuration\": {\"shape\": [[1, 0], -1]}}, " LE "]",
        "[{\"name\": \"reshape\", \"configuration\": {\"shape\": [[0, 7]]}}, " LE "]",
        "[{\"name\": \"reshape\", \"configuration\": {\"shape\": [0, 24]}}, " LE "]",
        "[{\"name\": \"reshape\", \"configuration\": {\"shape\": []}}, " LE "]",
        "[{\"name\": \"reshape\"}, " LE "]",
        "[{\"name\": \"reshape\", \"configuration\": {\"shape\": [24], \"x\": 1}}, " LE "]",
        "[{\"name\": \"zarrs.squeeze\", \"configuration\": {\"x\": 1}}, " LE "]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zf_status st = chain_status(bad[i], ZF_CODECS_V3, &r, &ch, &err);
        ck_assert_msg(st == ZF_ERR_INVALID, "%s: %s", bad[i], zf_status_str(st));
    }
}
END_TEST

/* --- chains whose intermediate sizes only the data can tell --- */

/* v3 transpose -> bytes -> zstd -> gzip: gzip's output (the zstd frame) has no known size. */
START_TEST(test_chain_zstd_gzip)
{
    uint64_t shape[2] = {30, 40};
    zf_chunk_repr r = tu_repr_of("<i4", 2, shape);
    int32_t data[1200], tr[1200];
    for (int i = 0; i < 1200; i++)
        data[i] = (i % 97) * 1000 - i;
    for (int i = 0; i < 30; i++)
        for (int j = 0; j < 40; j++)
            tr[j * 30 + i] = data[i * 40 + j];
    zf_codec_chain ch = chain_ok(
        "[{\"name\": \"transpose\", \"configuration\": {\"order\": [1, 0]}}, " LE ", {\"name\": "
        "\"zstd\", \"configuration\": {\"level\": 3}}, {\"name\": \"gzip\", \"configuration\": "
        "{\"level\": 5}}]",
        ZF_CODECS_V3, &r);
    round_trip(&ch, &r, data, NULL, NULL, "transpose-bytes-zstd-gzip");
    /* written independently: ZSTD_compress (content size in the frame), then gzip */
    size_t zcap = ZSTD_compressBound(sizeof tr), glen;
    uint8_t *z = malloc(zcap);
    size_t zlen = ZSTD_compress(z, zcap, tr, sizeof tr, 3);
    ck_assert(!ZSTD_isError(zlen));
    uint8_t *g = gzip_of(z, zlen, &glen);
    decode_expect(&ch, &r, g, glen, data, "independent zstd+gzip");
    /* two gzip members (Python's GzipFile reads them back to back) */
    uint8_t *g2 = malloc(2 * glen + 8);
    size_t half = zlen / 2, l1, l2;
    uint8_t *m1 = gzip_of(z, half, &l1), *m2 = gzip_of(z + half, zlen - half, &l2);
    memcpy(g2, m1, l1);
    memcpy(g2 + l1, m2, l2);
    decode_expect(&ch, &r, g2, l1 + l2, data, "two gzip members");
    /* truncated outer stream: CORRUPT naming gzip */
    char msg[512];
    int32_t out[1200];
    ck_assert_int_eq(decode(&ch, &r, g, glen - 9, out, msg), ZF_ERR_CORRUPT);
    ck_assert_msg(strncmp(msg, "gzip:", 5) == 0, "%s", msg);
    /* a truncated inner frame (no checksum to catch a changed byte): CORRUPT naming zstd */
    free(g);
    g = gzip_of(z, zlen - 3, &glen);
    ck_assert_int_eq(decode(&ch, &r, g, glen, out, msg), ZF_ERR_CORRUPT);
    ck_assert_msg(strncmp(msg, "zstd:", 5) == 0, "%s", msg);
    free(z);
    free(g);
    free(g2);
    free(m1);
    free(m2);
    zf_chain_clear(&ch);
}
END_TEST

/* v3 sharding_indexed -> gzip: the shard (index included) is gzip's output. */
START_TEST(test_chain_sharding_gzip)
{
    uint64_t shape[2] = {8, 6};
    zf_chunk_repr r = tu_repr_of("<u2", 2, shape);
    uint16_t data[48];
    for (int i = 0; i < 48; i++)
        data[i] = (uint16_t)(i < 24 ? 0 : i * 3); /* half fill value: empty inner chunks */
#define SH                                                                                        \
    "{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2, 3], "              \
    "\"codecs\": [" LE ", {\"name\": \"zstd\", \"configuration\": {\"level\": 1}}], "        \
    "\"index_codecs\": [" LE ", \"crc32c\"], \"index_location\": \"end\"}}"
    zf_codec_chain plain = chain_ok("[" SH "]", ZF_CODECS_V3, &r);
    zf_codec_chain ch = chain_ok("[" SH ", {\"name\": \"gzip\", \"configuration\": {\"level\": "
                                 "1}}]",
                                 ZF_CODECS_V3, &r);
    uint8_t *enc, *shard;
    size_t len, slen;
    round_trip(&ch, &r, data, &enc, &len, "sharding-gzip");
    round_trip(&plain, &r, data, &shard, &slen, "sharding");
    /* gzip's content is the very shard the sharding codec alone writes */
    size_t ilen;
    uint8_t *inner = inflate_of(enc, len, 31, 1 << 16, &ilen);
    ck_assert_uint_eq(ilen, slen);
    ck_assert_mem_eq(inner, shard, slen);
    /* and an independently gzipped shard decodes */
    size_t glen;
    uint8_t *g = gzip_of(shard, slen, &glen);
    decode_expect(&ch, &r, g, glen, data, "independent gzip of a shard");
    /* the bound counts the index and 256 bytes per inner chunk (8 of them) */
    size_t bound;
    zf_err err = {""};
    ck_assert_int_eq(zf_chain_unknown_bound(&ch, &r, &bound, &err), ZF_OK);
    ck_assert_uint_eq(bound, 2 * 96 + ((size_t)1 << 20) + (8 * 16 + 4) + 8 * 256);
    free(enc);
    free(shard);
    free(inner);
    free(g);
    zf_chain_clear(&plain);
    zf_chain_clear(&ch);
}
END_TEST

/* The 2022 draft's endian -> gzip -> blosc: blosc's header states gzip's output size. */
START_TEST(test_chain_draft2022_endian_gzip_blosc)
{
    uint64_t shape[2] = {16, 16};
    zf_chunk_repr r = tu_repr_of("<f8", 2, shape);
    double data[256];
    for (int i = 0; i < 256; i++)
        data[i] = i * 0.25 - 7.0;
    zf_codec_chain ch = chain_ok(
        "[{\"codec\": \"https://purl.org/zarr/spec/codec/endian/1.0\", \"configuration\": "
        "{\"endian\": \"big\"}}, {\"codec\": \"https://purl.org/zarr/spec/codec/gzip/1.0\", "
        "\"configuration\": {\"level\": 1}}, {\"codec\": "
        "\"https://purl.org/zarr/spec/codec/blosc/1.0\", \"configuration\": {\"cname\": "
        "\"lz4\", \"clevel\": 5, \"shuffle\": 1, \"blocksize\": 0}}]",
        ZF_CODECS_DRAFT_2022, &r);
    round_trip(&ch, &r, data, NULL, NULL, "endian-gzip-blosc");
    /* independently: big-endian doubles, gzip, c-blosc */
    uint8_t be[2048];
    for (int i = 0; i < 256; i++) {
        uint64_t u;
        memcpy(&u, &data[i], 8);
        for (int b = 0; b < 8; b++)
            be[i * 8 + b] = (uint8_t)(u >> (56 - 8 * b));
    }
    size_t glen;
    uint8_t *g = gzip_of(be, sizeof be, &glen);
    uint8_t *bl = malloc(glen + BLOSC_MAX_OVERHEAD);
    int blen = blosc_compress_ctx(5, 1, 1, glen, g, bl, glen + BLOSC_MAX_OVERHEAD, "lz4", 0, 1);
    ck_assert_int_gt(blen, 0);
    decode_expect(&ch, &r, bl, (size_t)blen, data, "independent endian+gzip+blosc");
    /* a blosc header claiming more than the bound: CORRUPT before anything is allocated */
    uint8_t bad[64];
    memcpy(bad, bl, 16);
    tu_put_le32(bad + 4, 0x7ff00000u); /* nbytes */
    char msg[512];
    double out[256];
    ck_assert_int_eq(decode(&ch, &r, bad, 16, out, msg), ZF_ERR_CORRUPT);
    ck_assert_msg(strstr(msg, "blosc:") && strstr(msg, "intermediate"), "%s", msg);
    free(g);
    free(bl);
    zf_chain_clear(&ch);
}
END_TEST

/* Every decompressor as an intermediate step (v2: a compressor used as a filter), and the
 * decoded_size codecs (lz4, blosc, zstd with a content size) after one. */
START_TEST(test_chain_every_compressor)
{
    enum { N = 5000 };
    uint8_t data[N];
    tu_fill(data, N, 3);
    uint64_t shape[1] = {N};
    zf_chunk_repr r = tu_repr_of("|u1", 1, shape);
    static const char *const comp[] = {
        "{\"id\": \"zlib\", \"level\": 1}",  "{\"id\": \"gzip\", \"level\": 1}",
        "{\"id\": \"bz2\", \"level\": 1}",   "{\"id\": \"lzma\", \"preset\": 1}",
        "{\"id\": \"zstd\", \"level\": 1}",  "{\"id\": \"lz4\"}",
        "{\"id\": \"blosc\", \"cname\": \"zstd\", \"shuffle\": 2}",
        "{\"id\": \"lzma\", \"format\": 2, \"preset\": 1}",
    };
    size_t nc = sizeof comp / sizeof comp[0];
    for (size_t i = 0; i < nc; i++)
        for (size_t j = 0; j < nc; j++) {
            const char *pair[2] = {comp[i], comp[j]};
            zf_codec_chain ch = v2_chain(pair, 2);
            char what[256];
            snprintf(what, sizeof what, "%s then %s", comp[i], comp[j]);
            round_trip(&ch, &r, data, NULL, NULL, what);
            zf_chain_clear(&ch);
        }
    /* three deep, with a checksum in between: zlib -> crc32 -> bz2 -> zstd */
    static const char *const deep[] = {"{\"id\": \"zlib\"}", "{\"id\": \"crc32\"}",
                                       "{\"id\": \"bz2\"}", "{\"id\": \"zstd\"}"};
    zf_codec_chain ch = v2_chain(deep, 4);
    round_trip(&ch, &r, data, NULL, NULL, "zlib crc32 bz2 zstd");
    zf_chain_clear(&ch);
    /* zstd frames without a content size after gzip: decode_bounded */
    static const char *const gz_zstd[] = {"{\"id\": \"gzip\"}", "{\"id\": \"zstd\"}"};
    ch = v2_chain(gz_zstd, 2);
    size_t glen, zlen;
    uint8_t *g = gzip_of(data, N, &glen);
    uint8_t *z = zstd_stream_of(g, glen, &zlen);
    decode_expect(&ch, &r, z, zlen, data, "gzip then streamed zstd");
    free(z);
    free(g);
    zf_chain_clear(&ch);
}
END_TEST

/* An intermediate too large for the bound: a buffer that gets bigger than the first guess (a
 * base64 between two compressors) still decodes; a bomb fails fast. */
START_TEST(test_chain_bound)
{
    /* 1 MiB of incompressible bytes: zstd keeps ~1 MiB, base64 makes it ~1.33 MiB, more than
     * the first buffer (M + M/8 + 64 KiB) but within the bound (2 M + 1 MiB). */
    enum { N = 1 << 20 };
    uint8_t *data = malloc(N);
    rand_fill(data, N, 11);
    uint64_t shape[1] = {N};
    zf_chunk_repr r = tu_repr_of("|u1", 1, shape);
    static const char *const b64[] = {"{\"id\": \"zstd\", \"level\": 1}", "{\"id\": \"base64\"}",
                                      "{\"id\": \"zlib\", \"level\": 1}"};
    zf_codec_chain ch = v2_chain(b64, 3);
    round_trip(&ch, &r, data, NULL, NULL, "zstd base64 zlib");
    zf_chain_clear(&ch);
    free(data);

    /* A bomb at an intermediate step: a 4 KiB chunk whose zlib layer inflates to 64 MiB of
     * zeros (what gzip should read). The bound is 2 * 4 KiB + 1 MiB: refused after about that
     * much output, quickly, naming zlib. */
    uint64_t small[1] = {4096};
    zf_chunk_repr rs = tu_repr_of("|u1", 1, small);
    static const char *const gz_zl[] = {"{\"id\": \"gzip\"}", "{\"id\": \"zlib\"}"};
    ch = v2_chain(gz_zl, 2);
    size_t bound;
    zf_err err = {""};
    ck_assert_int_eq(zf_chain_unknown_bound(&ch, &rs, &bound, &err), ZF_OK);
    ck_assert_uint_eq(bound, 2 * 4096 + ((size_t)1 << 20));
    z_stream s;
    memset(&s, 0, sizeof s);
    ck_assert_int_eq(deflateInit(&s, 9), Z_OK);
    size_t cap = 1 << 20;
    uint8_t *bomb = malloc(cap), *zeros = calloc(1, 1 << 20);
    s.next_out = bomb;
    s.avail_out = (uInt)cap;
    for (int i = 0; i < 64; i++) {
        s.next_in = zeros;
        s.avail_in = 1 << 20;
        ck_assert_int_eq(deflate(&s, i == 63 ? Z_FINISH : Z_NO_FLUSH), i == 63 ? Z_STREAM_END
                                                                               : Z_OK);
    }
    size_t blen = cap - s.avail_out;
    deflateEnd(&s);
    uint8_t out[4096];
    char msg[512];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ck_assert_int_eq(decode(&ch, &rs, bomb, blen, out, msg), ZF_ERR_CORRUPT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ck_assert_str_eq(msg, "zlib: data decodes to more than the 1056768 bytes allowed for an "
                          "intermediate result");
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    ck_assert_msg(secs < 2.0, "the bomb took %.2f s", secs);
    zf_chain_clear(&ch);
    free(bomb);
    free(zeros);

    /* The same through bz2 and zstd (content size: refused from the header) */
    static const char *const gz_bz[] = {"{\"id\": \"gzip\"}", "{\"id\": \"bz2\"}"};
    ch = v2_chain(gz_bz, 2);
    size_t big = 4 << 20;
    uint8_t *zz = calloc(1, big);
    unsigned int bzlen = (unsigned int)big;
    uint8_t *bz = malloc(big);
    ck_assert_int_eq(BZ2_bzBuffToBuffCompress((char *)bz, &bzlen, (char *)zz, (unsigned)big, 9,
                                              0, 0),
                     BZ_OK);
    ck_assert_int_eq(decode(&ch, &rs, bz, bzlen, out, msg), ZF_ERR_CORRUPT);
    ck_assert_msg(strncmp(msg, "bz2: data decodes to more than", 30) == 0, "%s", msg);
    zf_chain_clear(&ch);
    static const char *const gz_zs[] = {"{\"id\": \"gzip\"}", "{\"id\": \"zstd\"}"};
    ch = v2_chain(gz_zs, 2);
    size_t zcap = ZSTD_compressBound(big);
    uint8_t *zs = malloc(zcap);
    size_t zslen = ZSTD_compress(zs, zcap, zz, big, 1);
    ck_assert(!ZSTD_isError(zslen));
    ck_assert_int_eq(decode(&ch, &rs, zs, zslen, out, msg), ZF_ERR_CORRUPT);
    ck_assert_msg(strstr(msg, "zstd: the data says 4194304 decoded bytes"), "%s", msg);
    /* and without a content size: bounded decoding */
    free(zs);
    zs = zstd_stream_of(zz, big, &zslen);
    ck_assert_int_eq(decode(&ch, &rs, zs, zslen, out, msg), ZF_ERR_CORRUPT);
    ck_assert_msg(strncmp(msg, "zstd: data decodes to more than", 31) == 0, "%s", msg);
    /* an lz4 size prefix claiming 4 GiB - 1 */
    zf_chain_clear(&ch);
    static const char *const gz_lz[] = {"{\"id\": \"gzip\"}", "{\"id\": \"lz4\"}"};
    ch = v2_chain(gz_lz, 2);
    static const uint8_t lz[8] = {0xff, 0xff, 0xff, 0xff, 0x10, 'a', 0, 0};
    ck_assert_int_eq(decode(&ch, &rs, lz, sizeof lz, out, msg), ZF_ERR_CORRUPT);
    ck_assert_msg(strstr(msg, "lz4: the data says 4294967295 decoded bytes"), "%s", msg);
    zf_chain_clear(&ch);
    /* gzip and lzma (xz) at an intermediate step: bounded decoding too */
    static const char *const zl_gz[] = {"{\"id\": \"zlib\"}", "{\"id\": \"gzip\"}"};
    ch = v2_chain(zl_gz, 2);
    size_t gzlen;
    uint8_t *gz = gzip_of(zz, big, &gzlen);
    ck_assert_int_eq(decode(&ch, &rs, gz, gzlen, out, msg), ZF_ERR_CORRUPT);
    ck_assert_msg(strncmp(msg, "gzip: data decodes to more than", 31) == 0, "%s", msg);
    zf_chain_clear(&ch);
    static const char *const gz_xz[] = {"{\"id\": \"gzip\"}", "{\"id\": \"lzma\"}"};
    ch = v2_chain(gz_xz, 2);
    size_t xzlen = 0, xzcap = lzma_stream_buffer_bound(big);
    uint8_t *xz = malloc(xzcap);
    ck_assert_int_eq(lzma_easy_buffer_encode(1, LZMA_CHECK_CRC64, NULL, zz, big, xz, &xzlen,
                                             xzcap),
                     LZMA_OK);
    ck_assert_int_eq(decode(&ch, &rs, xz, xzlen, out, msg), ZF_ERR_CORRUPT);
    ck_assert_msg(strncmp(msg, "lzma: data decodes to more than", 31) == 0, "%s", msg);
    zf_chain_clear(&ch);
    free(gz);
    free(xz);
    free(zs);
    free(zz);
    free(bz);
}
END_TEST

/* --- GDAL's blosc shuffle strings --- */

START_TEST(test_blosc_gdal_shuffle)
{
    static const struct {
        const char *shuffle;
        uint8_t flag; /* header byte 2 & (0x1 | 0x4) */
    } ok[] = {
        {"\"NONE\"", 0}, {"\"BYTE\"", 1}, {"\"BIT\"", 4}, {"\"bit\"", 4},
        {"\"Byte\"", 1}, {"\"0\"", 0},    {"\"1\"", 1},   {"\"2\"", 4},
        {"2", 4},        {"1", 1},        {"0", 0},
    };
    enum { N = 4096 };
    int16_t data[N];
    for (int i = 0; i < N; i++)
        data[i] = (int16_t)(i % 300);
    zf_chunk_repr r;
    uint64_t shape[1] = {N};
    r = tu_repr_of("<i2", 1, shape);
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char cfg[256];
        snprintf(cfg, sizeof cfg,
                 "{\"id\": \"blosc\", \"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": %s, "
                 "\"blocksize\": 0}",
                 ok[i].shuffle);
        const char *one[1] = {cfg};
        zf_codec_chain ch = v2_chain(one, 1);
        uint8_t *enc;
        size_t len;
        round_trip(&ch, &r, data, &enc, &len, cfg);
        ck_assert_msg((enc[2] & 0x5) == ok[i].flag, "%s: flags 0x%02x", cfg, enc[2]);
        free(enc);
        zf_chain_clear(&ch);
    }
    /* as GDAL 3.6 writes the 2020 draft's compressor */
    yajl_val v = tu_json("{\"codec\": \"https://purl.org/zarr/spec/codec/blosc/1.0\", "
                         "\"configuration\": {\"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": "
                         "\"BIT\", \"blocksize\": 0}}");
    zf_codec *c = NULL;
    zf_err err = {""};
    ck_assert_int_eq(zf_codec_from_draft2020(v, &c, &err), ZF_OK);
    zf_codec_free(c);
    yajl_tree_free(v);
    static const char *const bad[] = {"\"FOO\"", "\"\"", "\"3\"", "\"-1\"", "\"bitshuffle\"",
                                      "3", "true"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char cfg[256];
        snprintf(cfg, sizeof cfg, "{\"id\": \"blosc\", \"shuffle\": %s}", bad[i]);
        ck_assert_msg(tu_codec_status(cfg, &err) == ZF_ERR_INVALID, "%s", cfg);
        ck_assert_msg(strstr(err.msg, "blosc: \"shuffle\""), "%s", err.msg);
    }
}
END_TEST

Suite *codec_variant_suite(void)
{
    Suite *s = suite_create("codec variants");
    TCase *tc = tcase_create("checksums");
    tcase_add_test(tc, test_fletcher32);
    tcase_add_test(tc, test_jenkins_lookup3);
    tcase_add_test(tc, test_checksum_chains);
    suite_add_tcase(s, tc);
    TCase *ta = tcase_create("array codecs");
    tcase_add_test(ta, test_bitround_zarrs);
    tcase_add_test(ta, test_reshape_squeeze);
    tcase_add_test(ta, test_blosc_gdal_shuffle);
    suite_add_tcase(s, ta);
    TCase *tu = tcase_create("unknown sizes");
    tcase_set_timeout(tu, 60);
    tcase_add_test(tu, test_chain_zstd_gzip);
    tcase_add_test(tu, test_chain_sharding_gzip);
    tcase_add_test(tu, test_chain_draft2022_endian_gzip_blosc);
    tcase_add_test(tu, test_chain_every_compressor);
    tcase_add_test(tu, test_chain_bound);
    suite_add_tcase(s, tu);
    return s;
}
