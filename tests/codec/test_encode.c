/* test_encode.c — encoding with the numcodecs (Zarr v2) codecs: compressors (zlib, gzip, bz2,
 * lzma, zstd, lz4, blosc) and filters (delta, fixedscaleoffset, astype, quantize, bitround,
 * shuffle, packbits, categorize, base64).
 *
 * Every case (a configuration or a list of them, run through zf_chain_encode, and an input of
 * some dtype and length, empty and odd lengths included) is
 *   1. decoded again by zarrfs (zf_chain_decode): lossless cases give the input back; for the
 *      lossy ones marked F_IDEMP the rounded values encode to the same bytes again;
 *   2. written to a file in a temporary directory and handed to encode_check.py (next to this
 *      file, run with Debian's /usr/bin/python3: numcodecs 0.11, NumPy 1.24), which decodes
 *      zarrfs' bytes with numcodecs and compares with the input (lossy: with numcodecs' own
 *      encode -> decode), and tells whether numcodecs' own encoding of the input is
 *      byte-identical. Identity is required of every case numcodecs 0.11 can encode: the
 *      compressors use the same system libraries numcodecs is linked with (Debian's numcodecs
 *      uses the system c-blosc, so blosc is included; numcodecs is run single-threaded there,
 *      as its threaded blosc orders blocks as threads finish), gzip is compared without its
 *      mtime field (zarrfs writes 0, GzipFile the time of writing). What numcodecs 0.11 cannot
 *      do is marked case by case (F_NOIDENT, F_NOREF) and listed in the summary it prints.
 * The inputs are hand-picked cases below plus every input and configuration of the numcodecs
 * fixture (tests/fixtures/numcodecs-fixture) for these codecs. A separate test feeds the
 * script corrupted encodings, which it must reject, so the cross-check can fail. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../fixture_dir.h"
#include "testutil.h"

#ifndef CODEC_TEST_SRCDIR
#define CODEC_TEST_SRCDIR "."
#endif

/* Case flags. Without F_NOIDENT numcodecs' own encoding must be byte-identical. */
enum {
    F_LOSSY = 1,   /* decode(encode(x)) != x: compared with numcodecs' round trip */
    F_NOIDENT = 2, /* numcodecs 0.11 cannot encode it (zstd "checksum", empty delta) */
    F_NOREF = 4,   /* numcodecs cannot handle the configuration at all ("|S" categorize) */
    F_IDEMP = 8,   /* lossy, but encoding the decoded values gives the same bytes */
};

typedef enum gen_kind {
    G_BYTES,  /* compressible bytes with some noise */
    G_RANGE,  /* numbers lo + step * k in [lo, hi] (step 0: any real; lo == hi: any integer
               * of the type, floats in (-1000, 1000)) */
    G_LABELS, /* strings for categorize, from `labels` below */
} gen_kind;

typedef struct ecase {
    const char *config;
    const char *dtype;
    size_t n;
    gen_kind gen;
    double lo, hi, step;
    unsigned flags;
} ecase;

/* --- test data --- */

static uint64_t rng_state;

static uint64_t rng(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static double rng_unit(void)
{
    return (double)(rng() >> 11) / 9007199254740992.0;
}

static const char *const labels[] = {"ƒöõ", "a", "", "longer label", "\xf0\x9f\x98\x80x", "ß"};
static const char *const unknown[] = {"zz", "q"};

/* A UTF-8 string as an element of a U or S dtype (cut to its width, as NumPy cuts). */
static void put_string(const zf_dtype *dt, uint8_t *dst, const char *s)
{
    size_t w = dt->itemsize, pos = 0;
    memset(dst, 0, w);
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        uint32_t cp = *p++;
        int more = cp < 0x80 ? 0 : cp < 0xe0 ? 1 : cp < 0xf0 ? 2 : 3;
        if (more)
            cp &= 0x3f >> more;
        for (int i = 0; i < more; i++)
            cp = cp << 6 | (*p++ & 0x3f);
        if (dt->kind == 'S') {
            if (pos < w)
                dst[pos++] = (uint8_t)cp;
        } else if (pos + 4 <= w) {
            for (int b = 0; b < 4; b++)
                dst[pos + (size_t)(dt->byteorder == '>' ? 3 - b : b)] = (uint8_t)(cp >> (8 * b));
            pos += 4;
        }
    }
}

static void generate(const ecase *c, const zf_dtype *dt, uint8_t *buf, size_t nbytes)
{
    rng_state = 0x9e3779b97f4a7c15ull ^ (nbytes * 2654435761u) ^ (uint64_t)c->n;
    if (c->gen == G_BYTES) {
        tu_fill(buf, nbytes, (uint32_t)nbytes);
        for (size_t i = 0; i < nbytes; i += 1 + rng() % 16)
            buf[i] = (uint8_t)rng();
        return;
    }
    if (c->gen == G_LABELS) {
        for (size_t i = 0; i < c->n; i++) {
            uint64_t r = rng() % 8;
            const char *s = r < 6 ? labels[r] : unknown[r - 6];
            if (!(c->flags & F_LOSSY) && (r >= 6 || r == 3 || r == 0 || r == 4))
                s = labels[r % 2 ? 1 : 5]; /* only labels that fit every width used */
            if (dt->kind == 'S' && (unsigned char)s[0] >= 0x80)
                s = "b";
            put_string(dt, buf + i * dt->itemsize, s);
        }
        return;
    }
    for (size_t i = 0; i < c->n; i++) {
        zf_num v;
        if (dt->kind == 'b') {
            v = (zf_num){.kind = 'i', .v.i = (int64_t)(rng() & 1)};
        } else if (c->lo == c->hi) { /* any bits of the type */
            uint64_t bits = rng();
            if (dt->kind == 'f') {
                v = (zf_num){.kind = 'f', .v.f = (rng_unit() - 0.5) * 2000};
            } else {
                v = (zf_num){.kind = 'u', .v.u = bits};
            }
        } else {
            double x = c->lo + rng_unit() * (c->hi - c->lo);
            if (c->step > 0)
                x = c->lo + c->step * floor((x - c->lo) / c->step);
            if (dt->kind == 'u')
                v = (zf_num){.kind = 'u', .v.u = (uint64_t)x};
            else if (dt->kind == 'f')
                v = (zf_num){.kind = 'f', .v.f = x};
            else
                v = (zf_num){.kind = 'i', .v.i = (int64_t)x};
        }
        zf_dtype_store(dt, buf, i, v);
    }
}

/* --- the cases --- */

#define LZMA1 "4611686018427387905"

static const char *const compressors[] = {
    "{\"id\": \"zlib\", \"level\": -1}",
    "{\"id\": \"zlib\", \"level\": 0}",
    "{\"id\": \"zlib\", \"level\": 1}",
    "{\"id\": \"zlib\", \"level\": 9}",
    "{\"id\": \"zlib\"}",
    "{\"id\": \"gzip\", \"level\": -1}",
    "{\"id\": \"gzip\", \"level\": 0}",
    "{\"id\": \"gzip\", \"level\": 1}",
    "{\"id\": \"gzip\", \"level\": 6}",
    "{\"id\": \"gzip\", \"level\": 9}",
    "{\"id\": \"bz2\", \"level\": 1}",
    "{\"id\": \"bz2\", \"level\": 9}",
    "{\"id\": \"lzma\"}",
    "{\"id\": \"lzma\", \"format\": 1, \"check\": -1, \"preset\": 1, \"filters\": null}",
    "{\"id\": \"lzma\", \"format\": 1, \"check\": 0, \"preset\": 0}",
    "{\"id\": \"lzma\", \"format\": 1, \"check\": 10, \"preset\": 2}",
    "{\"id\": \"lzma\", \"format\": 1, \"filters\": [{\"id\": 3, \"dist\": 2}, {\"id\": 33, "
    "\"preset\": 1}]}",
    "{\"id\": \"lzma\", \"format\": 2, \"preset\": 2}",
    "{\"id\": \"lzma\", \"format\": 2, \"filters\": [{\"id\": " LZMA1 ", \"preset\": 1, \"lc\": 0, "
    "\"lp\": 2, \"pb\": 2, \"dict_size\": 65536}]}",
    "{\"id\": \"lzma\", \"format\": 3, \"filters\": [{\"id\": 33, \"preset\": 1}]}",
    "{\"id\": \"lzma\", \"format\": 3, \"filters\": [{\"id\": 3, \"dist\": 4}, {\"id\": 33, "
    "\"preset\": 3}]}",
    "{\"id\": \"zstd\", \"level\": 1}",
    "{\"id\": \"zstd\", \"level\": 0}",
    "{\"id\": \"zstd\", \"level\": -3}",
    "{\"id\": \"zstd\", \"level\": 5}",
    "{\"id\": \"zstd\", \"level\": 19}",
    "{\"id\": \"zstd\", \"level\": 100}",
    "{\"id\": \"lz4\", \"acceleration\": 1}",
    "{\"id\": \"lz4\", \"acceleration\": 0}",
    "{\"id\": \"lz4\", \"acceleration\": -5}",
    "{\"id\": \"lz4\", \"acceleration\": 12}",
    "{\"id\": \"lz4\", \"acceleration\": 100000}",
    "{\"id\": \"blosc\", \"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": 1, \"blocksize\": 0}",
    "{\"id\": \"blosc\", \"cname\": \"lz4\", \"clevel\": 0, \"shuffle\": 1}",
    "{\"id\": \"blosc\", \"cname\": \"blosclz\", \"clevel\": 1, \"shuffle\": 2}",
    "{\"id\": \"blosc\", \"cname\": \"lz4hc\", \"clevel\": 9, \"shuffle\": -1}",
    "{\"id\": \"blosc\", \"cname\": \"zlib\", \"clevel\": 1, \"shuffle\": 0}",
    "{\"id\": \"blosc\", \"cname\": \"zstd\", \"clevel\": 3, \"shuffle\": 1, \"blocksize\": 1000}",
    "{\"id\": \"blosc\", \"cname\": \"snappy\", \"clevel\": 2, \"shuffle\": 2, \"blocksize\": 256}",
    "{\"id\": \"blosc\"}",
};

/* Inputs for every compressor: dtype (the item size blosc sees) and element count. */
static const struct {
    const char *dtype;
    size_t n;
} compressor_inputs[] = {
    {"|u1", 0},   {"|u1", 1},    {"|u1", 4097}, {"<i4", 1001}, {"<f8", 3000},
    {">u2", 777}, {"|S3", 100},  {"<U2", 51},   {"|b1", 333},
};

/* Zstandard configurations that only later numcodecs versions write (0.11 cannot encode them). */
static const char *const zstd_newer[] = {
    "{\"id\": \"zstd\", \"level\": 3, \"checksum\": true}",
    "{\"id\": \"zstd\", \"level\": 0, \"checksum\": false}",
    "{\"id\": \"zstd\", \"level\": -2, \"checksum\": true}",
};

#define LBL "[\"ƒöõ\", \"a\", \"\", \"longer label\", \"\xf0\x9f\x98\x80x\", \"ß\"]"

static const ecase filter_cases[] = {
    /* delta: same types wrap both ways; narrower astype for small steps; floats exact */
    {"{\"id\": \"delta\", \"dtype\": \"<i4\"}", "<i4", 1001, G_RANGE, 0, 0, 0, 0},
    {"{\"id\": \"delta\", \"dtype\": \"<i4\"}", "<i4", 1, G_RANGE, 0, 0, 0, 0},
    {"{\"id\": \"delta\", \"dtype\": \"<i4\"}", "<i4", 0, G_RANGE, 0, 0, 0, F_NOIDENT},
    {"{\"id\": \"delta\", \"dtype\": \"|u1\"}", "|u1", 257, G_RANGE, 0, 0, 0, 0},
    {"{\"id\": \"delta\", \"dtype\": \">u2\"}", ">u2", 300, G_RANGE, 0, 0, 0, 0},
    {"{\"id\": \"delta\", \"dtype\": \"<i8\"}", "<i8", 99, G_RANGE, 0, 0, 0, 0},
    {"{\"id\": \"delta\", \"dtype\": \"<u8\", \"astype\": \"<u8\"}", "<u8", 99, G_RANGE, 0, 0, 0,
     0},
    /* booleans: np.diff is not_equal but np.cumsum of booleans is or, so numcodecs' delta does
     * not give booleans back (decoded: whether any earlier value differed) */
    {"{\"id\": \"delta\", \"dtype\": \"|b1\"}", "|b1", 333, G_RANGE, 0, 1, 1, F_LOSSY},
    {"{\"id\": \"delta\", \"dtype\": \"<i2\", \"astype\": \"|i1\"}", "<i2", 500, G_RANGE, -60, 60,
     1, 0},
    {"{\"id\": \"delta\", \"dtype\": \"|u1\", \"astype\": \"<i2\"}", "|u1", 500, G_RANGE, 0, 0, 0,
     0},
    {"{\"id\": \"delta\", \"dtype\": \"<i4\", \"astype\": \">i8\"}", "<i4", 77, G_RANGE, 0, 0, 0,
     0},
    {"{\"id\": \"delta\", \"dtype\": \">i4\", \"astype\": \"<i4\"}", ">i4", 77, G_RANGE, 0, 0, 0,
     0},
    {"{\"id\": \"delta\", \"dtype\": \"<i4\", \"astype\": \"<f8\"}", "<i4", 200, G_RANGE, -1e6,
     1e6, 1, 0},
    {"{\"id\": \"delta\", \"dtype\": \"<f8\", \"astype\": \"<i4\"}", "<f8", 200, G_RANGE, -1e6,
     1e6, 1, 0},
    {"{\"id\": \"delta\", \"dtype\": \"<f8\"}", "<f8", 1000, G_RANGE, -1000, 1000, 0.125, 0},
    {"{\"id\": \"delta\", \"dtype\": \">f8\"}", ">f8", 100, G_RANGE, -1000, 1000, 0.25, 0},
    {"{\"id\": \"delta\", \"dtype\": \"<f4\"}", "<f4", 1000, G_RANGE, -1000, 1000, 0.5, 0},
    {"{\"id\": \"delta\", \"dtype\": \"<f2\"}", "<f2", 100, G_RANGE, -500, 500, 1, 0},
    {"{\"id\": \"delta\", \"dtype\": \"<f8\"}", "<f8", 300, G_RANGE, -1, 1, 0, F_LOSSY},
    {"{\"id\": \"delta\", \"dtype\": \"<f4\"}", "<f4", 300, G_RANGE, -1, 1, 0, F_LOSSY},
    {"{\"id\": \"delta\", \"dtype\": \"<f2\"}", "<f2", 300, G_RANGE, -100, 100, 0, F_LOSSY},
    {"{\"id\": \"delta\", \"dtype\": \"<m8[s]\"}", "<m8[s]", 50, G_RANGE, -1e9, 1e9, 1, 0},
    /* fixedscaleoffset: float data to integers; NumPy's value-based types */
    {"{\"id\": \"fixedscaleoffset\", \"offset\": 1000, \"scale\": 10, \"dtype\": \"<f8\", "
     "\"astype\": \"<i2\"}",
     "<f8", 1001, G_RANGE, 700, 1300, 0, F_LOSSY | F_IDEMP},
    {"{\"id\": \"fixedscaleoffset\", \"offset\": 0, \"scale\": 100, \"dtype\": \"<f8\", "
     "\"astype\": \"|u1\"}",
     "<f8", 100, G_RANGE, 0, 2.5, 0, F_LOSSY | F_IDEMP},
    {"{\"id\": \"fixedscaleoffset\", \"offset\": 1.5, \"scale\": 1000, \"dtype\": \"<f4\", "
     "\"astype\": \"<i4\"}",
     "<f4", 100, G_RANGE, -100, 100, 0, F_LOSSY},
    {"{\"id\": \"fixedscaleoffset\", \"offset\": 10, \"scale\": 10, \"dtype\": \"<f2\", "
     "\"astype\": \"<i2\"}",
     "<f2", 100, G_RANGE, 0, 20, 0, F_LOSSY},
    {"{\"id\": \"fixedscaleoffset\", \"offset\": 1000, \"scale\": 300, \"dtype\": \"<f2\", "
     "\"astype\": \"<i4\"}",
     "<f2", 100, G_RANGE, 900, 1100, 0, F_LOSSY},
    {"{\"id\": \"fixedscaleoffset\", \"offset\": -7, \"scale\": 2.5, \"dtype\": \">f8\", "
     "\"astype\": \">i4\"}",
     ">f8", 99, G_RANGE, -1e3, 1e3, 0, F_LOSSY | F_IDEMP},
    {"{\"id\": \"fixedscaleoffset\", \"offset\": 1000, \"scale\": 2, \"dtype\": \"<i4\", "
     "\"astype\": \"<i2\"}",
     "<i4", 100, G_RANGE, -5000, 5000, 1, 0},
    {"{\"id\": \"fixedscaleoffset\", \"offset\": 1000, \"scale\": 10, \"dtype\": \"<i2\", "
     "\"astype\": \"<i2\"}",
     "<i2", 100, G_RANGE, 0, 0, 0, F_LOSSY},
    {"{\"id\": \"fixedscaleoffset\", \"offset\": 1.5, \"scale\": 2, \"dtype\": \"|u1\", "
     "\"astype\": \"<i4\"}",
     "|u1", 100, G_RANGE, 0, 0, 0, F_LOSSY},
    {"{\"id\": \"fixedscaleoffset\", \"offset\": 0, \"scale\": 70000.0, \"dtype\": \"<f8\", "
     "\"astype\": \"<u4\"}",
     "<f8", 100, G_RANGE, 0, 10, 0, F_LOSSY},
    {"{\"id\": \"fixedscaleoffset\", \"offset\": 1000, \"scale\": 1000000000000, \"dtype\": "
     "\"<f8\", \"astype\": \"<f8\"}",
     "<f8", 100, G_RANGE, 999, 1001, 0, F_LOSSY},
    {"{\"id\": \"fixedscaleoffset\", \"offset\": 5, \"scale\": 0.5, \"dtype\": \"<f4\", "
     "\"astype\": \"<f2\"}",
     "<f4", 100, G_RANGE, -100, 100, 0, F_LOSSY},
    {"{\"id\": \"fixedscaleoffset\", \"offset\": 0, \"scale\": 1, \"dtype\": \"<f8\", "
     "\"astype\": \"<i8\"}",
     "<f8", 0, G_RANGE, 0, 1, 0, 0},
    /* astype */
    {"{\"id\": \"astype\", \"encode_dtype\": \"<f4\", \"decode_dtype\": \"<f8\"}", "<f8", 1000,
     G_RANGE, -1e3, 1e3, 0, F_LOSSY | F_IDEMP},
    {"{\"id\": \"astype\", \"encode_dtype\": \"<f2\", \"decode_dtype\": \"<f4\"}", "<f4", 333,
     G_RANGE, -1e3, 1e3, 0, F_LOSSY | F_IDEMP},
    {"{\"id\": \"astype\", \"encode_dtype\": \"<i2\", \"decode_dtype\": \"<i4\"}", "<i4", 333,
     G_RANGE, -32768, 32767, 1, 0},
    {"{\"id\": \"astype\", \"encode_dtype\": \"<i8\", \"decode_dtype\": \"|i1\"}", "|i1", 333,
     G_RANGE, 0, 0, 0, 0},
    {"{\"id\": \"astype\", \"encode_dtype\": \"<i4\", \"decode_dtype\": \"<f8\"}", "<f8", 333,
     G_RANGE, -1e9, 1e9, 1, 0},
    {"{\"id\": \"astype\", \"encode_dtype\": \"|u1\", \"decode_dtype\": \"|b1\"}", "|b1", 99,
     G_RANGE, 0, 1, 1, 0},
    {"{\"id\": \"astype\", \"encode_dtype\": \"<f8\", \"decode_dtype\": \">f8\"}", ">f8", 99,
     G_RANGE, -1e3, 1e3, 0, 0},
    {"{\"id\": \"astype\", \"encode_dtype\": \">f4\", \"decode_dtype\": \"<f8\"}", "<f8", 99,
     G_RANGE, -1e3, 1e3, 0, F_LOSSY | F_IDEMP},
    {"{\"id\": \"astype\", \"encode_dtype\": \"<f8\", \"decode_dtype\": \"<u8\"}", "<u8", 99,
     G_RANGE, 0, 9007199254740992.0, 1, 0},
    {"{\"id\": \"astype\", \"encode_dtype\": \"<f2\", \"decode_dtype\": \"|u1\"}", "|u1", 256,
     G_RANGE, 0, 0, 0, 0},
    {"{\"id\": \"astype\", \"encode_dtype\": \"<i2\", \"decode_dtype\": \"<i4\"}", "<i4", 0,
     G_RANGE, 0, 1, 1, 0},
    /* quantize */
    {"{\"id\": \"quantize\", \"digits\": 1, \"dtype\": \"<f8\"}", "<f8", 1000, G_RANGE, -100, 100,
     0, F_LOSSY | F_IDEMP},
    {"{\"id\": \"quantize\", \"digits\": 3, \"dtype\": \"<f8\", \"astype\": \"<f4\"}", "<f8", 999,
     G_RANGE, -100, 100, 0, F_LOSSY | F_IDEMP},
    {"{\"id\": \"quantize\", \"digits\": 5, \"dtype\": \"<f4\"}", "<f4", 999, G_RANGE, -10, 10, 0,
     F_LOSSY | F_IDEMP},
    {"{\"id\": \"quantize\", \"digits\": 2, \"dtype\": \"<f2\"}", "<f2", 999, G_RANGE, -10, 10, 0,
     F_LOSSY | F_IDEMP},
    /* float16 arithmetic: 128 * x overflows to inf beyond 512, as in NumPy */
    {"{\"id\": \"quantize\", \"digits\": 2, \"dtype\": \"<f2\"}", "<f2", 300, G_RANGE, -1000, 1000,
     0, F_LOSSY},
    {"{\"id\": \"quantize\", \"digits\": 6, \"dtype\": \"<f2\", \"astype\": \"<f4\"}", "<f2", 99,
     G_RANGE, -10, 10, 0, F_LOSSY | F_IDEMP},
    {"{\"id\": \"quantize\", \"digits\": -1, \"dtype\": \"<f8\", \"astype\": \"<f2\"}", "<f8", 99,
     G_RANGE, -1000, 1000, 0, F_LOSSY},
    {"{\"id\": \"quantize\", \"digits\": 0, \"dtype\": \"<f8\"}", "<f8", 99, G_RANGE, -1000, 1000,
     0, F_LOSSY | F_IDEMP},
    {"{\"id\": \"quantize\", \"digits\": 12, \"dtype\": \">f8\"}", ">f8", 99, G_RANGE, -1, 1, 0,
     F_LOSSY | F_IDEMP},
    {"{\"id\": \"quantize\", \"digits\": 4, \"dtype\": \"<f8\"}", "<f8", 0, G_RANGE, -1, 1, 0,
     F_LOSSY},
    /* bitround */
    {"{\"id\": \"bitround\", \"keepbits\": 0}", "<f2", 333, G_RANGE, -1e4, 1e4, 0,
     F_LOSSY | F_IDEMP},
    {"{\"id\": \"bitround\", \"keepbits\": 5}", "<f2", 333, G_RANGE, -1e4, 1e4, 0,
     F_LOSSY | F_IDEMP},
    {"{\"id\": \"bitround\", \"keepbits\": 10}", "<f2", 33, G_RANGE, -1e4, 1e4, 0, 0},
    {"{\"id\": \"bitround\", \"keepbits\": 7}", "<f4", 1001, G_RANGE, -1e30, 1e30, 0,
     F_LOSSY | F_IDEMP},
    /* numcodecs 0.11 fails on big-endian data (KeyError '>f4'); test_encode_details compares it
     * with little-endian data */
    {"{\"id\": \"bitround\", \"keepbits\": 1}", ">f4", 101, G_RANGE, -1e3, 1e3, 0,
     F_LOSSY | F_IDEMP | F_NOREF},
    {"{\"id\": \"bitround\", \"keepbits\": 23}", "<f4", 11, G_RANGE, -1e3, 1e3, 0, 0},
    {"{\"id\": \"bitround\", \"keepbits\": 20}", "<f8", 1001, G_RANGE, -1e300, 1e300, 0,
     F_LOSSY | F_IDEMP},
    {"{\"id\": \"bitround\", \"keepbits\": 3}", ">f8", 100, G_RANGE, -1, 1, 0,
     F_LOSSY | F_IDEMP | F_NOREF},
    {"{\"id\": \"bitround\", \"keepbits\": 3}", "<f8", 0, G_RANGE, -1, 1, 0, F_LOSSY},
    /* shuffle */
    {"{\"id\": \"shuffle\", \"elementsize\": 0}", "|u1", 100, G_BYTES, 0, 0, 0, 0},
    {"{\"id\": \"shuffle\", \"elementsize\": 1}", "|u1", 101, G_BYTES, 0, 0, 0, 0},
    {"{\"id\": \"shuffle\", \"elementsize\": 2}", "<i2", 333, G_BYTES, 0, 0, 0, 0},
    {"{\"id\": \"shuffle\", \"elementsize\": 3}", "|S3", 333, G_BYTES, 0, 0, 0, 0},
    {"{\"id\": \"shuffle\"}", "<f4", 1001, G_BYTES, 0, 0, 0, 0},
    {"{\"id\": \"shuffle\", \"elementsize\": 8}", "<f8", 1001, G_BYTES, 0, 0, 0, 0},
    {"{\"id\": \"shuffle\", \"elementsize\": 16}", "<U4", 33, G_BYTES, 0, 0, 0, 0},
    {"{\"id\": \"shuffle\", \"elementsize\": 4}", "<f4", 0, G_BYTES, 0, 0, 0, 0},
    /* packbits */
    {"{\"id\": \"packbits\"}", "|b1", 0, G_RANGE, 0, 1, 1, 0},
    {"{\"id\": \"packbits\"}", "|b1", 1, G_RANGE, 0, 1, 1, 0},
    {"{\"id\": \"packbits\"}", "|b1", 7, G_RANGE, 0, 1, 1, 0},
    {"{\"id\": \"packbits\"}", "|b1", 8, G_RANGE, 0, 1, 1, 0},
    {"{\"id\": \"packbits\"}", "|b1", 9, G_RANGE, 0, 1, 1, 0},
    {"{\"id\": \"packbits\"}", "|b1", 1001, G_RANGE, 0, 1, 1, 0},
    /* categorize: labels to numbers; unknown values (and labels cut by the type) give 0 */
    {"{\"id\": \"categorize\", \"labels\": " LBL ", \"dtype\": \"<U4\", \"astype\": \"|u1\"}",
     "<U4", 100, G_LABELS, 0, 0, 0, 0},
    {"{\"id\": \"categorize\", \"labels\": " LBL ", \"dtype\": \"<U4\", \"astype\": \"|u1\"}",
     "<U4", 100, G_LABELS, 0, 0, 0, F_LOSSY},
    {"{\"id\": \"categorize\", \"labels\": " LBL ", \"dtype\": \"<U12\", \"astype\": \"<u2\"}",
     "<U12", 101, G_LABELS, 0, 0, 0, F_LOSSY},
    {"{\"id\": \"categorize\", \"labels\": " LBL ", \"dtype\": \">U2\", \"astype\": \"<i4\"}",
     ">U2", 99, G_LABELS, 0, 0, 0, F_LOSSY},
    {"{\"id\": \"categorize\", \"labels\": " LBL ", \"dtype\": \"<U1\", \"astype\": \"<f8\"}",
     "<U1", 99, G_LABELS, 0, 0, 0, F_LOSSY},
    {"{\"id\": \"categorize\", \"labels\": " LBL ", \"dtype\": \"<U4\", \"astype\": \">i2\"}",
     "<U4", 99, G_LABELS, 0, 0, 0, F_LOSSY},
    {"{\"id\": \"categorize\", \"labels\": " LBL ", \"dtype\": \"<U4\"}", "<U4", 0, G_LABELS, 0,
     0, 0, 0},
    /* "|S" strings: served by zarrfs, refused by numcodecs */
    {"{\"id\": \"categorize\", \"labels\": [\"a\", \"\", \"b\"], \"dtype\": \"|S4\"}", "|S4", 50,
     G_LABELS, 0, 0, 0, F_NOREF},
    /* base64 */
    {"{\"id\": \"base64\"}", "|u1", 0, G_BYTES, 0, 0, 0, 0},
    {"{\"id\": \"base64\"}", "|u1", 1, G_BYTES, 0, 0, 0, 0},
    {"{\"id\": \"base64\"}", "|u1", 2, G_BYTES, 0, 0, 0, 0},
    {"{\"id\": \"base64\"}", "|u1", 3, G_BYTES, 0, 0, 0, 0},
    {"{\"id\": \"base64\"}", "<i4", 1001, G_BYTES, 0, 0, 0, 0},
    /* zfpy (zfp.c): numcodecs hands zfpy the 1-D chunk; its header and stream must be
     * byte-identical. Lossy modes compare numcodecs' decodes. A negative parameter makes
     * compress_numpy reversible; mode 5 (zarrs' reversible) and integers of 8 or 16 bits
     * (zarrs' promotion) numcodecs cannot write, but it decodes the first. */
    {"{\"id\": \"zfpy\", \"mode\": 4, \"tolerance\": 0.01}", "<f4", 1001, G_RANGE, -100, 100, 0,
     F_LOSSY},
    {"{\"id\": \"zfpy\", \"mode\": 4, \"tolerance\": 0.5}", "<f8", 5, G_RANGE, -1e6, 1e6, 0,
     F_LOSSY},
    {"{\"id\": \"zfpy\", \"mode\": 4, \"tolerance\": -1}", "<f8", 1000, G_RANGE, -1e300, 1e300,
     0, 0},
    {"{\"id\": \"zfpy\", \"mode\": 4, \"tolerance\": -1, \"rate\": -1, \"precision\": -1, "
     "\"compression_kwargs\": {\"tolerance\": -1}}",
     "<f4", 1, G_RANGE, -1, 1, 0, 0},
    {"{\"id\": \"zfpy\", \"mode\": 2, \"rate\": 16}", "<f4", 999, G_RANGE, -1e3, 1e3, 0, F_LOSSY},
    {"{\"id\": \"zfpy\", \"mode\": 2, \"rate\": 3.5}", "<f8", 64, G_RANGE, 0, 1, 0, F_LOSSY},
    {"{\"id\": \"zfpy\", \"mode\": 2, \"rate\": 8}", "<i4", 203, G_RANGE, -1e6, 1e6, 1, F_LOSSY},
    {"{\"id\": \"zfpy\", \"mode\": 2, \"rate\": -1}", "<i8", 77, G_RANGE, 0, 0, 0, 0},
    {"{\"id\": \"zfpy\", \"mode\": 3, \"precision\": 20}", "<f8", 1003, G_RANGE, -1, 1, 0,
     F_LOSSY},
    {"{\"id\": \"zfpy\", \"mode\": 3, \"precision\": 12}", "<i8", 100, G_RANGE, 0, 0, 0,
     F_LOSSY},
    {"{\"id\": \"zfpy\", \"mode\": 3, \"precision\": -1}", "<i4", 100, G_RANGE, 0, 0, 0, 0},
    {"{\"id\": \"zfpy\", \"mode\": 4, \"tolerance\": 0}", "<i4", 55, G_RANGE, 0, 0, 0, F_LOSSY},
    {"{\"id\": \"zfpy\", \"mode\": 5}", "<f4", 100, G_RANGE, -1e30, 1e30, 0, F_NOIDENT},
    {"{\"id\": \"zfpy\", \"mode\": 5}", "|i1", 100, G_RANGE, 0, 0, 0, F_NOREF},
    {"{\"id\": \"zfpy\", \"mode\": 5}", "<u2", 100, G_RANGE, 0, 0, 0, F_NOREF},
    /* chains: filters, then a compressor (whose item size is the last filter's) */
    {"[{\"id\": \"delta\", \"dtype\": \"<i4\", \"astype\": \"<i2\"}, {\"id\": \"blosc\", "
     "\"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": 1}]",
     "<i4", 5000, G_RANGE, 0, 2000, 1, 0},
    {"[{\"id\": \"astype\", \"encode_dtype\": \"<f2\", \"decode_dtype\": \"<f8\"}, {\"id\": "
     "\"blosc\", \"cname\": \"zstd\", \"clevel\": 1, \"shuffle\": -1}]",
     "<f8", 3000, G_RANGE, -10, 10, 0, F_LOSSY | F_IDEMP},
    {"[{\"id\": \"packbits\"}, {\"id\": \"blosc\", \"shuffle\": -1}]", "|b1", 20001, G_RANGE, 0,
     1, 1, 0},
    {"[{\"id\": \"quantize\", \"digits\": 2, \"dtype\": \"<f8\", \"astype\": \"<f4\"}, {\"id\": "
     "\"zlib\", \"level\": 5}]",
     "<f8", 1000, G_RANGE, -5, 5, 0, F_LOSSY | F_IDEMP},
    {"[{\"id\": \"shuffle\", \"elementsize\": 8}, {\"id\": \"zstd\", \"level\": 3}]", "<f8", 1000,
     G_RANGE, -5, 5, 0, 0},
    {"[{\"id\": \"fixedscaleoffset\", \"offset\": 0, \"scale\": 10, \"dtype\": \"<f8\", "
     "\"astype\": \"<f4\"}, {\"id\": \"bitround\", \"keepbits\": 3}]",
     "<f8", 100, G_RANGE, -1000, 1000, 0, F_LOSSY},
    {"[{\"id\": \"categorize\", \"labels\": " LBL ", \"dtype\": \"<U4\"}, {\"id\": \"delta\", "
     "\"dtype\": \"|u1\"}, {\"id\": \"base64\"}, {\"id\": \"gzip\", \"level\": 9}]",
     "<U4", 500, G_LABELS, 0, 0, 0, 0},
};

/* --- running cases --- */

/* The cases for encode_check.py go into one file (see its header for the format); their
 * descriptions are kept here for the messages. */
static FILE *cases_out;
static char **case_what; /* by case number; NULL for cases not written */
static unsigned nwhat, ncases, nfailed, nwritten;

#define CASE_FAIL(...)                                                                            \
    do {                                                                                          \
        fprintf(stderr, "FAIL: " __VA_ARGS__);                                                    \
        fputc('\n', stderr);                                                                      \
        nfailed++;                                                                                \
    } while (0)

static void write_case(FILE *f, unsigned name, const char *config, const char *dtype,
                       unsigned flags, const void *in, size_t in_len, const void *enc,
                       size_t enc_len)
{
    char fl[64];
    snprintf(fl, sizeof fl, "%s%s%s", flags & (F_NOIDENT | F_NOREF) ? "" : "identical,",
             flags & F_LOSSY ? "lossy," : "", flags & F_NOREF ? "noref," : "");
    size_t fn = strlen(fl);
    if (fn)
        fl[fn - 1] = 0;
    fprintf(f, "%05u %s %s %zu %zu %zu\n", name, dtype, fn ? fl : "-", strlen(config), in_len,
            enc_len);
    ck_assert_uint_eq(fwrite(config, 1, strlen(config), f), strlen(config));
    ck_assert_uint_eq(fwrite(in, 1, in_len, f), in_len);
    ck_assert_uint_eq(fwrite(enc, 1, enc_len, f), enc_len);
}

/* A chain from one configuration object or a list of them. */
static bool chain_of(yajl_val cfg, zf_codec_chain *chain, zf_err *err)
{
    size_t n = YAJL_IS_ARRAY(cfg) ? cfg->u.array.len : 1;
    for (size_t i = 0; i < n; i++) {
        zf_codec *c = NULL;
        yajl_val one = YAJL_IS_ARRAY(cfg) ? cfg->u.array.values[i] : cfg;
        if (zf_codec_from_v2(one, &c, err) != ZF_OK)
            return false;
        ck_assert_int_eq(zf_chain_append(chain, c), ZF_OK);
    }
    return true;
}

/* Encode `in` with the chain of `config`, check the round trip through zarrfs' own decode, and
 * write the case for encode_check.py. */
static void run_case(const char *label, const char *config, const char *dtype, const uint8_t *in,
                     size_t nbytes, unsigned flags)
{
    ncases++;
    yajl_val cfg = tu_json(config);
    zf_codec_chain chain = {0};
    zf_err err = {""};
    zf_chunk_repr dec = {.ndim = 1, .nbytes = nbytes};
    ck_assert_msg(zf_dtype_parse(dtype, &dec.dtype, &err) == ZF_OK, "%s: %s", dtype, err.msg);
    dec.shape[0] = dec.dtype.itemsize ? nbytes / dec.dtype.itemsize : 0;
    uint8_t *enc = NULL, *back = NULL, *again = NULL;
    size_t enc_len = 0, again_len = 0;
    if (!chain_of(cfg, &chain, &err)) {
        CASE_FAIL("%s %s: %s", label, config, err.msg);
        goto done;
    }
    zf_status st = zf_chain_encode(&chain, &dec, in, 0, &enc, &enc_len, &err);
    if (st != ZF_OK) {
        CASE_FAIL("%s %s (%s x %zu bytes): encode: %s (%s)", label, config, dtype, nbytes,
                  zf_status_str(st), err.msg);
        goto done;
    }
    back = malloc(nbytes + 1);
    st = zf_chain_decode(&chain, &dec, enc, enc_len, back, &err);
    if (st != ZF_OK) {
        CASE_FAIL("%s %s (%s x %zu bytes): our decode of our encoding: %s (%s)", label, config,
                  dtype, nbytes, zf_status_str(st), err.msg);
        goto done;
    }
    if (!(flags & F_LOSSY) && memcmp(back, in, nbytes) != 0) {
        CASE_FAIL("%s %s (%s x %zu bytes): round trip differs", label, config, dtype, nbytes);
        goto done;
    }
    if (flags & F_IDEMP) {
        st = zf_chain_encode(&chain, &dec, back, 0, &again, &again_len, &err);
        if (st != ZF_OK || again_len != enc_len || memcmp(again, enc, enc_len) != 0) {
            CASE_FAIL("%s %s (%s): encoding the decoded values gives other bytes", label,
                      config, dtype);
            goto done;
        }
    }
    if (cases_out) {
        write_case(cases_out, ncases, config, dtype, flags, in, nbytes, enc, enc_len);
        char *what = NULL;
        ck_assert_int_ge(asprintf(&what, "%s %s %s x %zu bytes", label, config, dtype, nbytes),
                         0);
        if (ncases >= nwhat) {
            unsigned cap = 2 * ncases + 16;
            char **v = realloc(case_what, cap * sizeof *v);
            ck_assert_ptr_nonnull(v);
            memset(v + nwhat, 0, (cap - nwhat) * sizeof *v);
            case_what = v;
            nwhat = cap;
        }
        case_what[ncases] = what;
        nwritten++;
    }
done:
    free(enc);
    free(back);
    free(again);
    zf_chain_clear(&chain);
    yajl_tree_free(cfg);
}

static void run_generated(const ecase *c)
{
    zf_dtype dt;
    zf_err err = {""};
    ck_assert_msg(zf_dtype_parse(c->dtype, &dt, &err) == ZF_OK, "%s", err.msg);
    size_t nbytes = c->n * dt.itemsize;
    uint8_t *in = malloc(nbytes + 1);
    generate(c, &dt, in, nbytes);
    run_case("case", c->config, c->dtype, in, nbytes, c->flags);
    free(in);
}

/* --- the numcodecs fixture --- */

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static size_t list_dir(const char *dir, const char *prefix, char ***out)
{
    DIR *d = opendir(dir);
    size_t n = 0, cap = 16;
    char **v = malloc(cap * sizeof *v);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.' || (prefix && strncmp(e->d_name, prefix, strlen(prefix))))
                continue;
            if (n == cap)
                v = realloc(v, (cap *= 2) * sizeof *v);
            v[n++] = strdup(e->d_name);
        }
        closedir(d);
    }
    qsort(v, n, sizeof *v, cmp_str);
    *out = v;
    return n;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static const char *const fixture_codecs[] = {
    "zlib",  "gzip",     "bz2",        "lzma",   "zstd",       "lz4",       "blosc",
    "delta", "astype",   "categorize", "shuffle", "packbits",  "base64",    "quantize",
    "fixedscaleoffset",  "bitround",
};

static unsigned fixture_codec_dir(const char *codec, const char *group, const char *cdir)
{
    char path[4600];
    snprintf(path, sizeof path, "%s/config.json", cdir);
    size_t len;
    char *config = (char *)tu_read_file(path, &len);
    ck_assert_msg(config != NULL, "%s: cannot read", path);
    unsigned flags = 0, n = 0;
    if (!strcmp(codec, "quantize") || !strcmp(codec, "fixedscaleoffset") ||
        !strcmp(codec, "bitround") || (!strcmp(codec, "astype") && strstr(group, "/f")))
        flags |= F_LOSSY;
    if (!strcmp(codec, "zstd") && strstr(config, "checksum"))
        flags |= F_NOIDENT; /* written by a later numcodecs; 0.11 cannot encode it */
    /* xz presets 7-9 need 190-674 MiB of encoder memory (touched in full under meson's
     * MALLOC_PERTURB_): two inputs are enough there. */
    bool big = !strcmp(codec, "lzma") && (strstr(config, "\"preset\": 9") ||
                                          strstr(config, "\"preset\": 8") ||
                                          strstr(config, "\"preset\": 7"));
    char **arrays;
    size_t na = list_dir(group, "array.", &arrays);
    for (size_t i = 0; i < (big && na > 2 ? 2 : na); i++) {
        char apath[4600], why[512];
        snprintf(apath, sizeof apath, "%s/%s", group, arrays[i]);
        tu_npy npy;
        ck_assert_msg(tu_npy_load(apath, &npy, why, sizeof why), "%s", why);
        run_case(apath, config, npy.descr, npy.data, npy.data_len, flags);
        tu_npy_free(&npy);
        n++;
    }
    free_list(arrays, na);
    free(config);
    return n;
}

/* Every configuration of the fixture for the codecs above, on every input of its directory. */
static unsigned fixture_cases(void)
{
    unsigned n = 0;
    for (size_t k = 0; k < sizeof fixture_codecs / sizeof fixture_codecs[0]; k++) {
        char cdir[4200], probe[4300];
        snprintf(cdir, sizeof cdir, "%s/numcodecs-fixture/%s", zf_test_fixtures(),
                 fixture_codecs[k]);
        if (!is_dir(cdir))
            continue;
        snprintf(probe, sizeof probe, "%s/codec.00", cdir);
        char **groups;
        size_t ng;
        if (is_dir(probe)) {
            groups = malloc(sizeof *groups);
            groups[0] = strdup("");
            ng = 1;
        } else {
            ng = list_dir(cdir, NULL, &groups);
        }
        for (size_t g = 0; g < ng; g++) {
            if (!strcmp(fixture_codecs[k], "categorize") && !strcmp(groups[g], "O"))
                continue; /* object arrays: not served */
            char gdir[4400];
            snprintf(gdir, sizeof gdir, "%s%s%s", cdir, groups[g][0] ? "/" : "", groups[g]);
            char **cds;
            size_t ncd = list_dir(gdir, "codec.", &cds);
            for (size_t i = 0; i < ncd; i++) {
                char d[4500];
                snprintf(d, sizeof d, "%s/%s", gdir, cds[i]);
                n += fixture_codec_dir(fixture_codecs[k], gdir, d);
            }
            free_list(cds, ncd);
        }
        free_list(groups, ng);
    }
    return n;
}

/* --- encode_check.py --- */

static const char *python(void)
{
    const char *p = getenv("ZARRFS_NUMCODECS_PYTHON");
    return p ? p : "/usr/bin/python3";
}

/* Run the script on dir, results into dir.results; the exit status, or -1. */
static int run_check(const char *dir)
{
    char cmd[8800];
    if (strchr(dir, '\'') || strchr(CODEC_TEST_SRCDIR, '\'') || strchr(python(), '\''))
        return -1;
    snprintf(cmd, sizeof cmd, "'%s' '%s/encode_check.py' '%s/cases' '%s/results'", python(),
             CODEC_TEST_SRCDIR, dir, dir);
    int rc = system(cmd);
    return rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void rm_tree(const char *dir)
{
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Per-codec tallies of the script's results (by the last codec id of the configuration). */
typedef struct tally {
    char id[24];
    unsigned cases, ok, identical, noref;
} tally;

static void codec_id(const char *config, char *id, size_t n)
{
    const char *last = config, *p = config;
    while ((p = strstr(p, "\"id\": \""))) /* the last one: the compressor of a chain */
        last = p++;
    const char *s = strstr(last, "\"id\": \"");
    snprintf(id, n, "%s", s ? s + 7 : "?");
    char *q = strchr(id, '"');
    if (q)
        *q = 0;
}

static FILE *open_in(const char *dir, const char *name, const char *mode)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, mode);
    ck_assert_msg(f != NULL, "%s: cannot open", p);
    return f;
}

START_TEST(test_encode_numcodecs)
{
    char root[] = "/tmp/zarrfs-encode-test-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(root));
    cases_out = open_in(root, "cases", "wb");
    ncases = nfailed = nwritten = 0;

    /* Every compressor on every input. */
    for (size_t i = 0; i < sizeof compressors / sizeof compressors[0]; i++)
        for (size_t k = 0; k < sizeof compressor_inputs / sizeof compressor_inputs[0]; k++) {
            ecase c = {compressors[i], compressor_inputs[k].dtype, compressor_inputs[k].n,
                       G_BYTES, 0, 0, 0, 0};
            run_generated(&c);
        }
    /* Not empty: numcodecs 0.11 cannot decode an empty zstd frame, and would not write these. */
    for (size_t i = 0; i < sizeof zstd_newer / sizeof zstd_newer[0]; i++)
        for (size_t k = 1; k < 5; k++) {
            ecase c = {zstd_newer[i], compressor_inputs[k].dtype, compressor_inputs[k].n,
                       G_BYTES, 0, 0, 0, F_NOIDENT};
            run_generated(&c);
        }
    for (size_t i = 0; i < sizeof filter_cases / sizeof filter_cases[0]; i++)
        run_generated(&filter_cases[i]);
    unsigned generated = ncases, nfix = fixture_cases();
    ck_assert_int_eq(fclose(cases_out), 0);
    cases_out = NULL;
    printf("encode: %u generated cases, %u from the numcodecs fixture; %u failed our own round "
           "trip\n",
           generated, nfix, nfailed);
    ck_assert_uint_gt(nfix, 500);

    int rc = run_check(root);
    if (rc == 3 || rc == -1) {
        printf("encode: numcodecs cross-check skipped (%s cannot import numcodecs)\n", python());
    } else {
        FILE *f = open_in(root, "results", "r");
        tally t[40];
        size_t nt = 0;
        unsigned lines = 0, bad = 0;
        char line[1024];
        while (fgets(line, sizeof line, f)) {
            char ok[8], ident[8];
            unsigned name;
            int used = 0;
            if (sscanf(line, "%u %7s %7s %n", &name, ok, ident, &used) != 3 || name < 1 ||
                name >= nwhat || !case_what[name])
                continue;
            lines++;
            char id[24];
            codec_id(case_what[name], id, sizeof id);
            size_t j = 0;
            while (j < nt && strcmp(t[j].id, id))
                j++;
            if (j == nt) {
                ck_assert_uint_lt(nt, 40);
                memset(&t[nt], 0, sizeof t[nt]);
                snprintf(t[nt++].id, sizeof t[0].id, "%s", id);
            }
            t[j].cases++;
            t[j].ok += !strcmp(ok, "ok");
            t[j].identical += !strcmp(ident, "yes");
            t[j].noref += !strcmp(ident, "n/a");
            if (strcmp(ok, "ok")) {
                fprintf(stderr, "FAIL (numcodecs): %s: %s", case_what[name], line + used);
                bad++;
            }
        }
        fclose(f);
        printf("encode: numcodecs cross-check of %u cases (exit %d):\n", lines, rc);
        for (size_t j = 0; j < nt; j++)
            printf("  %-18s %4u cases, %4u decoded right by numcodecs, %4u byte-identical to "
                   "numcodecs' encode, %u without a numcodecs 0.11 encoding\n",
                   t[j].id, t[j].cases, t[j].ok, t[j].identical, t[j].noref);
        fflush(stdout);
        ck_assert_uint_eq(lines, nwritten);
        ck_assert_msg(bad == 0 && rc == 0, "%u cases failed the numcodecs cross-check", bad);
    }
    for (unsigned i = 0; i < nwhat; i++)
        free(case_what[i]);
    free(case_what);
    case_what = NULL;
    nwhat = 0;
    if (!getenv("ZARRFS_KEEP_ENCODE_CASES"))
        rm_tree(root);
    ck_assert_msg(nfailed == 0, "%u cases failed (see above)", nfailed);
}
END_TEST

/* The cross-check must be able to fail: corrupted or merely different encodings are caught. */
START_TEST(test_encode_check_detects_errors)
{
    char root[] = "/tmp/zarrfs-encode-bad-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(root));
    FILE *out = open_in(root, "cases", "wb");
    uint8_t in[4000];
    tu_fill(in, sizeof in, 7);
    struct {
        const char *config;
        const char *dtype;
        int how; /* 0: flip a byte in the middle; 1: other valid bytes (level 9 for 1) */
    } bad[] = {
        {"{\"id\": \"zlib\", \"level\": 1}", "|u1", 0},
        {"{\"id\": \"delta\", \"dtype\": \"<i4\"}", "<i4", 0},
        {"{\"id\": \"shuffle\", \"elementsize\": 4}", "<i4", 0},
        {"{\"id\": \"zlib\", \"level\": 1}", "|u1", 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zf_codec *c = tu_codec(bad[i].how ? "{\"id\": \"zlib\", \"level\": 9}" : bad[i].config);
        zf_chunk_repr r = {.ndim = 1, .shape = {sizeof in}, .nbytes = sizeof in};
        zf_err err = {""};
        ck_assert_int_eq(zf_dtype_parse(bad[i].dtype, &r.dtype, &err), ZF_OK);
        uint8_t *enc;
        size_t len;
        ck_assert_int_eq(c->ops->encode(c, &r, in, sizeof in, 0, &enc, &len, &err), ZF_OK);
        if (bad[i].how == 0)
            enc[len / 2] ^= 0x10;
        write_case(out, (unsigned)i + 1, bad[i].config, bad[i].dtype, 0, in, sizeof in, enc, len);
        free(enc);
        zf_codec_free(c);
    }
    ck_assert_int_eq(fclose(out), 0);
    int rc = run_check(root);
    if (rc == 3 || rc == -1) {
        printf("encode: numcodecs cross-check skipped (%s cannot import numcodecs)\n", python());
    } else {
        ck_assert_int_eq(rc, 1);
        char rpath[4300];
        snprintf(rpath, sizeof rpath, "%s/results", root);
        size_t len;
        char *res = (char *)tu_read_file(rpath, &len);
        ck_assert_ptr_nonnull(res);
        unsigned fails = 0;
        for (char *p = res; (p = strstr(p, " FAIL ")); p++)
            fails++;
        ck_assert_msg(fails == sizeof bad / sizeof bad[0], "only %u of %zu caught:\n%s", fails,
                      sizeof bad / sizeof bad[0], res);
        free(res);
    }
    rm_tree(root);
}
END_TEST

/* --- details and errors --- */

static zf_status encode1(const char *config, const char *dtype, const void *in, size_t len,
                         uint8_t **out, size_t *out_len, zf_err *err)
{
    zf_codec *c = tu_codec(config);
    zf_chunk_repr r = {.ndim = 1, .nbytes = len};
    ck_assert_int_eq(zf_dtype_parse(dtype, &r.dtype, err), ZF_OK);
    r.shape[0] = len / r.dtype.itemsize;
    *out = NULL;
    zf_status st = c->ops->encode(c, &r, in, len, 0, out, out_len, err);
    zf_codec_free(c);
    return st;
}

START_TEST(test_encode_invalid)
{
    static const struct {
        const char *config, *dtype;
        size_t len;
        const char *codec;
    } cases[] = {
        {"{\"id\": \"lzma\", \"format\": 0}", "|u1", 10, "lzma"},
        {"{\"id\": \"lzma\", \"preset\": 1, \"filters\": [{\"id\": 33}]}", "|u1", 10, "lzma"},
        {"{\"id\": \"lzma\", \"format\": 2, \"check\": 4}", "|u1", 10, "lzma"},
        {"{\"id\": \"lzma\", \"format\": 2, \"filters\": [{\"id\": 33}]}", "|u1", 10, "lzma"},
        {"{\"id\": \"bitround\", \"keepbits\": 24}", "<f4", 8, "bitround"},
        {"{\"id\": \"bitround\", \"keepbits\": 3}", "<i4", 8, "bitround"},
        {"{\"id\": \"bitround\", \"keepbits\": 3}", "<c8", 8, "bitround"},
        {"{\"id\": \"shuffle\", \"elementsize\": 4}", "|u1", 6, "shuffle"},
        {"{\"id\": \"blosc\", \"cname\": \"nope\"}", "|u1", 10, "blosc"},
        {"{\"id\": \"delta\", \"dtype\": \"<i4\"}", "|u1", 6, "delta"},
        {"{\"id\": \"astype\", \"encode_dtype\": \"<i2\", \"decode_dtype\": \"<f8\"}", "|u1", 4,
         "astype"},
        {"{\"id\": \"quantize\", \"digits\": 400, \"dtype\": \"<f8\"}", "<f8", 8, "quantize"},
        {"{\"id\": \"quantize\", \"digits\": -400, \"dtype\": \"<f8\"}", "<f8", 8, "quantize"},
        {"{\"id\": \"fixedscaleoffset\", \"offset\": 0, \"scale\": 1, \"dtype\": \"<f8\"}", "|u1",
         12, "fixedscaleoffset"},
        {"{\"id\": \"categorize\", \"labels\": [\"a\"], \"dtype\": \"<U1\"}", "|u1", 6,
         "categorize"},
    };
    uint8_t in[16] = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t *out = (uint8_t *)1;
        size_t len = 0;
        zf_err err = {""};
        zf_status st = encode1(cases[i].config, cases[i].dtype, in, cases[i].len, &out, &len,
                               &err);
        ck_assert_msg(st == ZF_ERR_INVALID, "%s: %s, expected invalid", cases[i].config,
                      zf_status_str(st));
        ck_assert_msg(strstr(err.msg, cases[i].codec) != NULL, "%s: message \"%s\"",
                      cases[i].config, err.msg);
        ck_assert_ptr_null(out);
    }
}
END_TEST

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

START_TEST(test_encode_gzip_header)
{
    static const struct {
        int level;
        uint8_t xfl;
    } levels[] = {{1, 4}, {9, 2}, {5, 0}, {-1, 0}, {0, 0}};
    const uint8_t in[] = "hello, hello, hello";
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        char cfg[64];
        snprintf(cfg, sizeof cfg, "{\"id\": \"gzip\", \"level\": %d}", levels[i].level);
        uint8_t *out;
        size_t len;
        zf_err err = {""};
        ck_assert_int_eq(encode1(cfg, "|u1", in, sizeof in, &out, &len, &err), ZF_OK);
        const uint8_t head[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, levels[i].xfl, 0xff};
        ck_assert_uint_gt(len, 18);
        ck_assert_mem_eq(out, head, 10);
        uint8_t tail[8];
        put32(tail, 0xb2bbabf9u); /* CRC-32 of the input, NUL included (zlib.crc32) */
        put32(tail + 4, sizeof in);
        ck_assert_mem_eq(out + len - 8, tail, 8);
        free(out);
    }
}
END_TEST

START_TEST(test_encode_details)
{
    uint8_t *out;
    size_t len;
    zf_err err = {""};
    /* packbits: any non-zero byte is a set bit; the first byte counts the padding */
    const uint8_t bits[] = {0, 2, 255, 1, 0, 0, 0, 0, 7};
    ck_assert_int_eq(encode1("{\"id\": \"packbits\"}", "|b1", bits, sizeof bits, &out, &len, &err),
                     ZF_OK);
    ck_assert_uint_eq(len, 3);
    ck_assert_mem_eq(out, "\x07\x70\x80", 3);
    free(out);
    /* categorize: a later equal label wins, an unknown value or a label cut by the type is 0 */
    uint8_t s[5 * 8] = {0};
    memcpy(s, "a", 1);
    memcpy(s + 8, "b", 1);
    memcpy(s + 16, "c", 1);
    memcpy(s + 32, "abcdefgh", 8);
    ck_assert_int_eq(encode1("{\"id\": \"categorize\", \"labels\": [\"a\", \"b\", \"a\", \"\", "
                             "\"abcdefghi\"], \"dtype\": \"|S8\", \"astype\": \"|u1\"}",
                             "|S8", s, sizeof s, &out, &len, &err),
                     ZF_OK);
    ck_assert_uint_eq(len, 5);
    ck_assert_mem_eq(out, "\x03\x02\x00\x04\x00", 5);
    free(out);
    /* blosc: AUTOSHUFFLE is a bit shuffle for one-byte items, a byte shuffle otherwise; the
     * item size is the array's unless the configuration gives one */
    uint8_t data[8192];
    tu_fill(data, sizeof data, 3);
    static const struct {
        const char *config, *dtype;
        uint8_t flags_mask, typesize;
    } bl[] = {
        {"{\"id\": \"blosc\", \"shuffle\": -1}", "|u1", 0x4, 1},
        {"{\"id\": \"blosc\", \"shuffle\": -1}", "<i4", 0x1, 4},
        {"{\"id\": \"blosc\", \"shuffle\": 1}", "<f8", 0x1, 8},
        {"{\"id\": \"blosc\", \"shuffle\": 1, \"typesize\": 2}", "<f8", 0x1, 2},
        {"{\"id\": \"blosc\", \"shuffle\": 0}", "<U4", 0x0, 16},
    };
    for (size_t i = 0; i < sizeof bl / sizeof bl[0]; i++) {
        ck_assert_int_eq(encode1(bl[i].config, bl[i].dtype, data, sizeof data, &out, &len, &err),
                         ZF_OK);
        ck_assert_uint_ge(len, 16);
        ck_assert_msg((out[2] & 0x5) == bl[i].flags_mask, "%s %s: flags %#x", bl[i].config,
                      bl[i].dtype, out[2]);
        ck_assert_uint_eq(out[3], bl[i].typesize);
        free(out);
    }
    /* zstd: the checksum flag of the frame header (later numcodecs' "checksum") */
    ck_assert_int_eq(encode1("{\"id\": \"zstd\", \"level\": 1, \"checksum\": true}", "|u1", data,
                             sizeof data, &out, &len, &err),
                     ZF_OK);
    ck_assert_uint_gt(len, 5);
    ck_assert_uint_eq(out[4] & 0x4, 0x4);
    free(out);
    ck_assert_int_eq(encode1("{\"id\": \"zstd\", \"level\": 1}", "|u1", data, sizeof data, &out,
                             &len, &err),
                     ZF_OK);
    ck_assert_uint_eq(out[4] & 0x4, 0);
    free(out);
    /* lz4: the 4-byte little-endian size header */
    ck_assert_int_eq(encode1("{\"id\": \"lz4\"}", "|u1", data, 1000, &out, &len, &err), ZF_OK);
    ck_assert_mem_eq(out, "\xe8\x03\x00\x00", 4);
    free(out);
    /* bitround: ties go to even, carrying into the exponent; keepbits 0 keeps powers of 2 */
    float f[4] = {1.0f + 3.0f / (1 << 23), 1.5f, 1.75f, -1.9999999f};
    uint8_t *o;
    ck_assert_int_eq(encode1("{\"id\": \"bitround\", \"keepbits\": 1}", "<f4", f, sizeof f, &o,
                             &len, &err),
                     ZF_OK);
    float g[4];
    memcpy(g, o, sizeof g);
    ck_assert(g[0] == 1.0f && g[1] == 1.5f && g[2] == 2.0f && g[3] == -2.0f);
    free(o);
    /* bitround, big-endian (numcodecs 0.11 cannot): the little-endian result, byte-swapped */
    double d[64];
    for (size_t i = 0; i < 64; i++)
        d[i] = sin((double)i) * pow(10, (double)(i % 9) - 4);
    uint8_t *le, *be;
    size_t le_len, be_len;
    ck_assert_int_eq(encode1("{\"id\": \"bitround\", \"keepbits\": 9}", "<f8", d, sizeof d, &le,
                             &le_len, &err),
                     ZF_OK);
    zf_byteswap(d, 64, 8);
    ck_assert_int_eq(encode1("{\"id\": \"bitround\", \"keepbits\": 9}", ">f8", d, sizeof d, &be,
                             &be_len, &err),
                     ZF_OK);
    ck_assert_uint_eq(le_len, be_len);
    zf_byteswap(be, 64, 8);
    ck_assert_mem_eq(le, be, le_len);
    ck_assert_mem_ne(le, d, le_len);
    free(le);
    free(be);
    /* base64 */
    ck_assert_int_eq(encode1("{\"id\": \"base64\"}", "|u1", "\xff\xfe\x00hi", 5, &out, &len,
                             &err),
                     ZF_OK);
    ck_assert_uint_eq(len, 8);
    ck_assert_mem_eq(out, "//4AaGk=", 8);
    free(out);
}
END_TEST

Suite *codec_encode_suite(void)
{
    Suite *s = suite_create("encode");
    TCase *tc = tcase_create("encode");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_encode_numcodecs);
    tcase_add_test(tc, test_encode_check_detects_errors);
    tcase_add_test(tc, test_encode_invalid);
    tcase_add_test(tc, test_encode_gzip_header);
    tcase_add_test(tc, test_encode_details);
    suite_add_tcase(s, tc);
    return s;
}
