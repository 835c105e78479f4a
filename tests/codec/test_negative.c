/* test_negative.c — malformed, truncated and hostile input: every compressor's truncated and
 * bit-flipped streams, decompression bombs, hostile headers, checksum mismatches, unknown codecs
 * and malformed configurations. Nothing may crash or read out of bounds (run under ASan); every
 * failure is the documented status with a message naming the codec. */
#include <blosc.h>
#include <bzlib.h>
#include <lz4.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <zlib.h>
#include <zstd.h>

#include "codec_impl.h"
#include "testutil.h"

/* --- compressors, as numcodecs writes their streams --- */

typedef size_t (*compress_fn)(const uint8_t *in, size_t n, uint8_t *out, size_t cap);

static size_t c_zlib(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    uLongf len = cap;
    ck_assert_int_eq(compress2(out, &len, in, n, 6), Z_OK);
    return len;
}

static size_t deflate_with(int bits, const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    z_stream s = {0};
    ck_assert_int_eq(deflateInit2(&s, 6, Z_DEFLATED, bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
    s.next_in = (Bytef *)(uintptr_t)in;
    s.avail_in = (uInt)n;
    s.next_out = out;
    s.avail_out = (uInt)cap;
    ck_assert_int_eq(deflate(&s, Z_FINISH), Z_STREAM_END);
    size_t len = s.total_out;
    deflateEnd(&s);
    return len;
}

static size_t c_gzip(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    return deflate_with(31, in, n, out, cap);
}

static size_t c_bz2(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    unsigned len = (unsigned)cap;
    ck_assert_int_eq(BZ2_bzBuffToBuffCompress((char *)out, &len, (char *)(uintptr_t)in,
                                              (unsigned)n, 9, 0, 0),
                     BZ_OK);
    return len;
}

static size_t c_xz(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    size_t pos = 0;
    ck_assert_int_eq(lzma_easy_buffer_encode(1, LZMA_CHECK_CRC64, NULL, in, n, out, &pos, cap),
                     LZMA_OK);
    return pos;
}

static size_t c_alone(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    lzma_options_lzma opt;
    lzma_lzma_preset(&opt, 1);
    lzma_stream s = LZMA_STREAM_INIT;
    ck_assert_int_eq(lzma_alone_encoder(&s, &opt), LZMA_OK);
    s.next_in = in;
    s.avail_in = n;
    s.next_out = out;
    s.avail_out = cap;
    ck_assert_int_eq(lzma_code(&s, LZMA_FINISH), LZMA_STREAM_END);
    size_t len = cap - s.avail_out;
    lzma_end(&s);
    return len;
}

static size_t raw_with(lzma_vli id, const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    lzma_options_lzma opt;
    lzma_lzma_preset(&opt, 1);
    lzma_filter f[2] = {{id, &opt}, {LZMA_VLI_UNKNOWN, NULL}};
    size_t pos = 0;
    ck_assert_int_eq(lzma_raw_buffer_encode(f, NULL, in, n, out, &pos, cap), LZMA_OK);
    return pos;
}

static size_t c_raw2(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    return raw_with(LZMA_FILTER_LZMA2, in, n, out, cap);
}

static size_t c_raw1(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    return raw_with(LZMA_FILTER_LZMA1, in, n, out, cap);
}

static size_t c_zstd(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    size_t len = ZSTD_compress(out, cap, in, n, 3);
    ck_assert(!ZSTD_isError(len));
    return len;
}

/* A frame without the content size in its header, with a checksum. */
static size_t c_zstd_nosize(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0);
    ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
    size_t len = ZSTD_compress2(cc, out, cap, in, n);
    ZSTD_freeCCtx(cc);
    ck_assert(!ZSTD_isError(len));
    return len;
}

static size_t c_lz4(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    int len = LZ4_compress_default((const char *)in, (char *)out + 4, (int)n, (int)cap - 4);
    ck_assert_int_gt(len, 0);
    for (int i = 0; i < 4; i++)
        out[i] = (uint8_t)(n >> (8 * i));
    return (size_t)len + 4;
}

static size_t blosc_with(const char *cname, int shuffle, const uint8_t *in, size_t n,
                         uint8_t *out, size_t cap)
{
    int len = blosc_compress_ctx(5, shuffle, 4, n, in, out, cap, cname, 0, 1);
    ck_assert_int_gt(len, 0);
    return (size_t)len;
}

static size_t c_blosc_lz4(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    return blosc_with("lz4", 1, in, n, out, cap);
}

static size_t c_blosc_zstd(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    return blosc_with("zstd", 2, in, n, out, cap);
}

static size_t c_blosc_zlib(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    return blosc_with("zlib", 0, in, n, out, cap);
}

static size_t c_blosc_blosclz(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    return blosc_with("blosclz", 1, in, n, out, cap);
}

typedef struct comp_case {
    const char *name, *config;
    compress_fn compress;
    bool checksummed; /* a corrupted stream cannot decode to other data */
} comp_case;

static const comp_case comps[] = {
    {"zlib", "{\"id\": \"zlib\", \"level\": 1}", c_zlib, true},
    {"gzip", "{\"id\": \"gzip\", \"level\": 1}", c_gzip, true},
    {"bz2", "{\"id\": \"bz2\", \"level\": 9}", c_bz2, true},
    {"lzma", "{\"id\": \"lzma\", \"format\": 1}", c_xz, true},
    {"lzma", "{\"id\": \"lzma\", \"format\": 0}", c_xz, true},
    {"lzma", "{\"id\": \"lzma\", \"format\": 2}", c_alone, false},
    {"lzma", "{\"id\": \"lzma\", \"format\": 3, \"filters\": [{\"id\": 33, \"preset\": 1}]}",
     c_raw2, false},
    {"lzma",
     "{\"id\": \"lzma\", \"format\": 3, \"filters\": [{\"id\": 4611686018427387905, "
     "\"preset\": 1}]}",
     c_raw1, false},
    {"zstd", "{\"id\": \"zstd\", \"level\": 3}", c_zstd, false},
    {"zstd", "{\"id\": \"zstd\", \"level\": 3, \"checksum\": true}", c_zstd_nosize, false},
    {"lz4", "{\"id\": \"lz4\", \"acceleration\": 1}", c_lz4, false},
    {"blosc", "{\"id\": \"blosc\", \"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": 1}",
     c_blosc_lz4, false},
    {"blosc", "{\"id\": \"blosc\", \"cname\": \"zstd\", \"clevel\": 5, \"shuffle\": 2}",
     c_blosc_zstd, false},
    {"blosc", "{\"id\": \"blosc\", \"cname\": \"zlib\", \"clevel\": 5, \"shuffle\": 0}",
     c_blosc_zlib, false},
    {"blosc", "{\"id\": \"blosc\", \"cname\": \"blosclz\", \"clevel\": 5, \"shuffle\": 1}",
     c_blosc_blosclz, false},
};
#define NCOMPS (sizeof comps / sizeof comps[0])

#define DATA_LEN 4096

/* Compress test data with comps[i]; returns the compressed length. */
static size_t make_stream(size_t i, uint8_t *data, uint8_t *enc, size_t cap)
{
    tu_fill(data, DATA_LEN, (uint32_t)i + 7);
    return comps[i].compress(data, DATA_LEN, enc, cap);
}

static void assert_named(const zf_err *err, const char *name)
{
    ck_assert_msg(strncmp(err->msg, name, strlen(name)) == 0 && err->msg[strlen(name)] == ':',
                  "message does not name the codec %s: \"%s\"", name, err->msg);
}

START_TEST(test_roundtrip_each_compressor)
{
    uint8_t data[DATA_LEN], enc[2 * DATA_LEN + 1024], out[DATA_LEN];
    size_t len = make_stream((size_t)_i, data, enc, sizeof enc);
    zf_codec *c = tu_codec(comps[_i].config);
    zf_err err = {""};
    ck_assert_int_eq(tu_decode(c, enc, len, out, DATA_LEN, &err), ZF_OK);
    ck_assert_mem_eq(out, data, DATA_LEN);
    /* The wrong expected size, either way: corrupt, never a silent partial result. */
    ck_assert_int_eq(tu_decode(c, enc, len, out, DATA_LEN - 1, &err), ZF_ERR_CORRUPT);
    assert_named(&err, comps[_i].name);
    uint8_t *big = malloc(DATA_LEN + 100);
    ck_assert_int_eq(tu_decode(c, enc, len, big, DATA_LEN + 100, &err), ZF_ERR_CORRUPT);
    assert_named(&err, comps[_i].name);
    free(big);
    zf_codec_free(c);
}
END_TEST

START_TEST(test_truncated_each_compressor)
{
    uint8_t data[DATA_LEN], enc[2 * DATA_LEN + 1024];
    size_t len = make_stream((size_t)_i, data, enc, sizeof enc);
    zf_codec *c = tu_codec(comps[_i].config);
    for (size_t cut = 0; cut < len; cut++) {
        /* An exact-size copy, so ASan sees any read past the end. */
        uint8_t *in = malloc(cut ? cut : 1), *out = malloc(DATA_LEN);
        memcpy(in, enc, cut);
        zf_err err = {""};
        zf_status st = tu_decode(c, in, cut, out, DATA_LEN, &err);
        ck_assert_msg(st == ZF_ERR_CORRUPT, "%s: %zu of %zu bytes: %s (%s)", comps[_i].config,
                      cut, len, zf_status_str(st), err.msg);
        assert_named(&err, comps[_i].name);
        free(in);
        free(out);
    }
    zf_codec_free(c);
}
END_TEST

START_TEST(test_bitflips_each_compressor)
{
    uint8_t data[DATA_LEN], enc[2 * DATA_LEN + 1024];
    size_t len = make_stream((size_t)_i, data, enc, sizeof enc);
    zf_codec *c = tu_codec(comps[_i].config);
    unsigned corrupt = 0;
    for (size_t pos = 0; pos < len; pos++) {
        for (int k = 0; k < 2; k++) {
            uint8_t *in = malloc(len), *out = malloc(DATA_LEN);
            memcpy(in, enc, len);
            in[pos] ^= k ? 0x01 : 0xa5;
            zf_err err = {""};
            zf_status st = tu_decode(c, in, len, out, DATA_LEN, &err);
            ck_assert_msg(st == ZF_OK || st == ZF_ERR_CORRUPT, "%s: flip at %zu: %s (%s)",
                          comps[_i].config, pos, zf_status_str(st), err.msg);
            if (st == ZF_OK && comps[_i].checksummed)
                ck_assert_msg(memcmp(out, data, DATA_LEN) == 0,
                              "%s: flip at %zu decoded to other data without an error",
                              comps[_i].config, pos);
            corrupt += st != ZF_OK;
            free(in);
            free(out);
        }
    }
    ck_assert_uint_gt(corrupt, 0);
    zf_codec_free(c);
}
END_TEST

/* --- decompression bombs: 100 MB of zeros decoded into 4 KiB --- */

#define BOMB_SIZE ((size_t)100 << 20)
#define ZERO_CHUNK ((size_t)1 << 20)

typedef struct bomb {
    uint8_t *p;
    size_t len, cap;
} bomb;

static void bomb_put(bomb *b, const void *data, size_t n)
{
    if (n == 0)
        return;
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2;
        b->p = realloc(b->p, b->cap);
        ck_assert_ptr_nonnull(b->p);
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static bomb bomb_deflate(int bits)
{
    bomb b = {0};
    static uint8_t zeros[ZERO_CHUNK], buf[1 << 16];
    z_stream s = {0};
    ck_assert_int_eq(deflateInit2(&s, 9, Z_DEFLATED, bits, 9, Z_DEFAULT_STRATEGY), Z_OK);
    for (size_t done = 0; done <= BOMB_SIZE; done += ZERO_CHUNK) {
        bool last = done == BOMB_SIZE;
        s.next_in = zeros;
        s.avail_in = last ? 0 : (uInt)ZERO_CHUNK;
        int rc;
        do {
            s.next_out = buf;
            s.avail_out = sizeof buf;
            rc = deflate(&s, last ? Z_FINISH : Z_NO_FLUSH);
            bomb_put(&b, buf, sizeof buf - s.avail_out);
        } while (s.avail_out == 0 || (last && rc != Z_STREAM_END));
    }
    deflateEnd(&s);
    return b;
}

static bomb bomb_bz2(void)
{
    bomb b = {0};
    static char zeros[ZERO_CHUNK], buf[1 << 16];
    bz_stream s = {0};
    ck_assert_int_eq(BZ2_bzCompressInit(&s, 9, 0, 0), BZ_OK);
    for (size_t done = 0; done <= BOMB_SIZE; done += ZERO_CHUNK) {
        bool last = done == BOMB_SIZE;
        s.next_in = zeros;
        s.avail_in = last ? 0 : (unsigned)ZERO_CHUNK;
        int rc;
        do {
            s.next_out = buf;
            s.avail_out = sizeof buf;
            rc = BZ2_bzCompress(&s, last ? BZ_FINISH : BZ_RUN);
            bomb_put(&b, buf, sizeof buf - s.avail_out);
        } while (last ? rc != BZ_STREAM_END : s.avail_in > 0);
    }
    BZ2_bzCompressEnd(&s);
    return b;
}

static bomb bomb_xz(void)
{
    bomb b = {0};
    static uint8_t zeros[ZERO_CHUNK], buf[1 << 16];
    lzma_stream s = LZMA_STREAM_INIT;
    ck_assert_int_eq(lzma_easy_encoder(&s, 0, LZMA_CHECK_CRC32), LZMA_OK);
    for (size_t done = 0; done <= BOMB_SIZE; done += ZERO_CHUNK) {
        bool last = done == BOMB_SIZE;
        s.next_in = zeros;
        s.avail_in = last ? 0 : ZERO_CHUNK;
        lzma_ret rc;
        do {
            s.next_out = buf;
            s.avail_out = sizeof buf;
            rc = lzma_code(&s, last ? LZMA_FINISH : LZMA_RUN);
            bomb_put(&b, buf, sizeof buf - s.avail_out);
        } while (last ? rc != LZMA_STREAM_END : s.avail_in > 0);
    }
    lzma_end(&s);
    return b;
}

static bomb bomb_zstd(bool with_size)
{
    bomb b = {0};
    static uint8_t zeros[ZERO_CHUNK], buf[1 << 16];
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    if (with_size)
        ZSTD_CCtx_setPledgedSrcSize(cc, BOMB_SIZE);
    for (size_t done = 0; done <= BOMB_SIZE; done += ZERO_CHUNK) {
        bool last = done == BOMB_SIZE;
        ZSTD_inBuffer in = {zeros, last ? 0 : ZERO_CHUNK, 0};
        size_t rc;
        do {
            ZSTD_outBuffer out = {buf, sizeof buf, 0};
            rc = ZSTD_compressStream2(cc, &out, &in, last ? ZSTD_e_end : ZSTD_e_continue);
            ck_assert(!ZSTD_isError(rc));
            bomb_put(&b, buf, out.pos);
        } while (last ? rc != 0 : in.pos < in.size);
    }
    ZSTD_freeCCtx(cc);
    return b;
}

/* LZ4 and blosc compress a 100 MB zero buffer at once (calloc: never touched, no memory). */
static bomb bomb_lz4(uint32_t claimed)
{
    uint8_t *zeros = calloc(1, BOMB_SIZE);
    bomb b = {malloc((size_t)LZ4_compressBound((int)BOMB_SIZE) + 4), 0, 0};
    int n = LZ4_compress_default((const char *)zeros, (char *)b.p + 4, (int)BOMB_SIZE,
                                 LZ4_compressBound((int)BOMB_SIZE));
    ck_assert_int_gt(n, 0);
    for (int i = 0; i < 4; i++)
        b.p[i] = (uint8_t)(claimed >> (8 * i));
    b.len = (size_t)n + 4;
    free(zeros);
    return b;
}

static bomb bomb_blosc(void)
{
    uint8_t *zeros = calloc(1, BOMB_SIZE);
    bomb b = {malloc(BOMB_SIZE / 8), 0, 0};
    int n = blosc_compress_ctx(9, 1, 4, BOMB_SIZE, zeros, b.p, BOMB_SIZE / 8, "lz4", 0, 1);
    ck_assert_int_gt(n, 0);
    b.len = (size_t)n;
    free(zeros);
    return b;
}

static long vm_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0;
    if (f) {
        if (fscanf(f, "%ld", &pages) != 1)
            pages = 0;
        fclose(f);
    }
    return pages * 4096;
}

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

START_TEST(test_decompression_bombs)
{
    struct {
        const char *config;
        bomb b;
    } cases[] = {
        {"{\"id\": \"zlib\"}", bomb_deflate(15)},
        {"{\"id\": \"gzip\"}", bomb_deflate(31)},
        {"{\"id\": \"bz2\"}", bomb_bz2()},
        {"{\"id\": \"lzma\"}", bomb_xz()},
        {"{\"id\": \"zstd\"}", bomb_zstd(true)},
        {"{\"id\": \"zstd\"}", bomb_zstd(false)},
        {"{\"id\": \"lz4\"}", bomb_lz4((uint32_t)BOMB_SIZE)},
        {"{\"id\": \"lz4\"}", bomb_lz4(4096)}, /* lies about its size */
        {"{\"id\": \"blosc\"}", bomb_blosc()},
    };
    size_t n = sizeof cases / sizeof cases[0];
    zf_codec *codecs[sizeof cases / sizeof cases[0]];
    for (size_t i = 0; i < n; i++)
        codecs[i] = tu_codec(cases[i].config);
#ifndef UNDER_ASAN
    /* Any allocation near the bomb's size now fails (and shows as ZF_ERR_NOMEM). */
    struct rlimit old, lim;
    getrlimit(RLIMIT_AS, &old);
    lim = old;
    lim.rlim_cur = (rlim_t)vm_bytes() + ((rlim_t)64 << 20);
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &lim), 0);
#endif
    for (size_t i = 0; i < n; i++) {
        uint8_t out[4096];
        zf_err err = {""};
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        zf_status st = tu_decode(codecs[i], cases[i].b.p, cases[i].b.len, out, sizeof out, &err);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        ck_assert_msg(st == ZF_ERR_CORRUPT, "%s bomb (%zu bytes): %s (%s)", cases[i].config,
                      cases[i].b.len, zf_status_str(st), err.msg);
        ck_assert_msg(secs < 2.0, "%s bomb took %.2f s", cases[i].config, secs);
        assert_named(&err, codecs[i]->ops->name);
    }
#ifndef UNDER_ASAN
    setrlimit(RLIMIT_AS, &old);
#endif
    (void)vm_bytes;
    for (size_t i = 0; i < n; i++) {
        zf_codec_free(codecs[i]);
        free(cases[i].b.p);
    }
}
END_TEST

/* --- hostile headers --- */

START_TEST(test_blosc_hostile_headers)
{
    uint8_t data[DATA_LEN], enc[DATA_LEN + 64], out[DATA_LEN];
    size_t len = c_blosc_lz4((tu_fill(data, DATA_LEN, 3), data), DATA_LEN, enc, sizeof enc);
    zf_codec *c = tu_codec("{\"id\": \"blosc\"}");
    zf_err err = {""};
    struct {
        size_t off;
        uint32_t value;
        const char *msg;
    } edits[] = {
        {4, 0x7ffffff0u, "header says 2147483632 decoded bytes, expected 4096"},
        {4, 0xffffffffu, "header says"},
        {12, 0x7ffffff0u, "compressed bytes"},
        {12, 10, "compressed bytes"},
        {8, 0x7ffffff0u, ""}, /* blocksize */
        {8, 0, ""},
        {8, 1, ""},
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        uint8_t *in = malloc(len);
        memcpy(in, enc, len);
        for (int b = 0; b < 4; b++)
            in[edits[i].off + (size_t)b] = (uint8_t)(edits[i].value >> (8 * b));
        zf_status st = tu_decode(c, in, len, out, DATA_LEN, &err);
        ck_assert_msg(st == ZF_ERR_CORRUPT, "edit %zu: %s", i, zf_status_str(st));
        ck_assert_msg(strstr(err.msg, edits[i].msg), "edit %zu: %s", i, err.msg);
        assert_named(&err, "blosc");
        free(in);
    }
    /* typesize 0, a version from the future, flags from the future */
    for (int k = 0; k < 3; k++) {
        uint8_t *in = malloc(len);
        memcpy(in, enc, len);
        if (k == 0)
            in[3] = 0;
        else if (k == 1)
            in[0] = 0xff;
        else
            in[2] |= 0x08;
        zf_status st = tu_decode(c, in, len, out, DATA_LEN, &err);
        ck_assert_msg(st == ZF_ERR_CORRUPT, "case %d: %s", k, zf_status_str(st));
        free(in);
    }
    /* Too short for a header. */
    ck_assert_int_eq(tu_decode(c, enc, 15, out, DATA_LEN, &err), ZF_ERR_CORRUPT);
    zf_codec_free(c);
}
END_TEST

START_TEST(test_lz4_size_prefix)
{
    uint8_t data[DATA_LEN], enc[DATA_LEN + 64], out[DATA_LEN];
    size_t len = c_lz4((tu_fill(data, DATA_LEN, 5), data), DATA_LEN, enc, sizeof enc);
    zf_codec *c = tu_codec("{\"id\": \"lz4\"}");
    zf_err err = {""};
    enc[0] ^= 1; /* 4097 */
    ck_assert_int_eq(tu_decode(c, enc, len, out, DATA_LEN, &err), ZF_ERR_CORRUPT);
    ck_assert_str_eq(err.msg, "lz4: header says 4097 decoded bytes, expected 4096");
    enc[0] ^= 1;
    enc[3] = 0x80; /* 2 GiB */
    ck_assert_int_eq(tu_decode(c, enc, len, out, DATA_LEN, &err), ZF_ERR_CORRUPT);
    enc[3] = 0;
    ck_assert_int_eq(tu_decode(c, enc, 3, out, DATA_LEN, &err), ZF_ERR_CORRUPT);
    ck_assert_int_eq(tu_decode(c, enc, len, out, DATA_LEN, &err), ZF_OK);
    ck_assert_mem_eq(out, data, DATA_LEN);
    zf_codec_free(c);
}
END_TEST

START_TEST(test_zstd_frames)
{
    uint8_t data[DATA_LEN], enc[3 * DATA_LEN], out[2 * DATA_LEN];
    tu_fill(data, DATA_LEN, 9);
    zf_codec *c = tu_codec("{\"id\": \"zstd\"}");
    zf_err err = {""};
    /* A skippable frame, a frame without content size, a frame with it. */
    size_t len = 0;
    static const uint8_t skip[] = {0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 'a', 'b', 'c'};
    memcpy(enc, skip, sizeof skip);
    len += sizeof skip;
    len += c_zstd_nosize(data, DATA_LEN / 2, enc + len, sizeof enc - len);
    len += c_zstd(data + DATA_LEN / 2, DATA_LEN / 2, enc + len, sizeof enc - len);
    ck_assert_int_eq(tu_decode(c, enc, len, out, DATA_LEN, &err), ZF_OK);
    ck_assert_mem_eq(out, data, DATA_LEN);
    /* A declared content size larger than expected is refused before any work. */
    size_t one = c_zstd(data, DATA_LEN, enc, sizeof enc);
    ck_assert_int_eq(tu_decode(c, enc, one, out, DATA_LEN / 2, &err), ZF_ERR_CORRUPT);
    ck_assert_str_eq(err.msg, "zstd: frame says 4096 decoded bytes, expected 2048");
    /* Without a content size, too much output is found while decoding. */
    one = c_zstd_nosize(data, DATA_LEN, enc, sizeof enc);
    ck_assert_int_eq(tu_decode(c, enc, one, out, DATA_LEN / 2, &err), ZF_ERR_CORRUPT);
    ck_assert_str_eq(err.msg, "zstd: data decodes to more than the expected 2048 bytes");
    ck_assert_int_eq(tu_decode(c, enc, one, out, 2 * DATA_LEN, &err), ZF_ERR_CORRUPT);
    ck_assert_str_eq(err.msg, "zstd: stream ends early (decoded 4096 of 8192 bytes)");
    /* Trailing garbage after a frame. */
    memcpy(enc + one, "junk", 4);
    ck_assert_int_eq(tu_decode(c, enc, one + 4, out, DATA_LEN, &err), ZF_ERR_CORRUPT);
    ck_assert_int_eq(tu_decode(c, "", 0, out, DATA_LEN, &err), ZF_ERR_CORRUPT);
    zf_codec_free(c);
}
END_TEST

START_TEST(test_stream_tails)
{
    uint8_t data[DATA_LEN], enc[3 * DATA_LEN], out[DATA_LEN];
    tu_fill(data, DATA_LEN, 11);
    zf_err err = {""};
    /* zlib: bytes after the stream are ignored, as Python's zlib.decompress ignores them. */
    zf_codec *c = tu_codec("{\"id\": \"zlib\"}");
    size_t len = c_zlib(data, DATA_LEN, enc, sizeof enc);
    memcpy(enc + len, "tail", 4);
    ck_assert_int_eq(tu_decode(c, enc, len + 4, out, DATA_LEN, &err), ZF_OK);
    ck_assert_mem_eq(out, data, DATA_LEN);
    ck_assert_int_eq(tu_decode(c, enc, len, out, DATA_LEN / 2, &err), ZF_ERR_CORRUPT);
    ck_assert_str_eq(err.msg, "zlib: data decodes to more than the expected 2048 bytes");
    zf_codec_free(c);
    /* gzip: zero padding is fine, anything else after a member is not. */
    c = tu_codec("{\"id\": \"gzip\"}");
    len = c_gzip(data, DATA_LEN, enc, sizeof enc);
    memset(enc + len, 0, 8);
    ck_assert_int_eq(tu_decode(c, enc, len + 8, out, DATA_LEN, &err), ZF_OK);
    memcpy(enc + len, "tail", 4);
    ck_assert_int_eq(tu_decode(c, enc, len + 4, out, DATA_LEN, &err), ZF_ERR_CORRUPT);
    assert_named(&err, "gzip");
    /* A zlib stream is not gzip. */
    len = c_zlib(data, DATA_LEN, enc, sizeof enc);
    ck_assert_int_eq(tu_decode(c, enc, len, out, DATA_LEN, &err), ZF_ERR_CORRUPT);
    zf_codec_free(c);
    /* lzma: a few stray bytes after a stream are an unfinished stream (as in Python). */
    c = tu_codec("{\"id\": \"lzma\"}");
    len = c_xz(data, DATA_LEN, enc, sizeof enc);
    memcpy(enc + len, "xx", 2);
    ck_assert_int_eq(tu_decode(c, enc, len + 2, out, DATA_LEN, &err), ZF_ERR_CORRUPT);
    /* .lzma data is not .xz */
    len = c_alone(data, DATA_LEN, enc, sizeof enc);
    ck_assert_int_eq(tu_decode(c, enc, len, out, DATA_LEN, &err), ZF_ERR_CORRUPT);
    ck_assert_str_eq(err.msg, "lzma: not .xz data");
    zf_codec_free(c);
}
END_TEST

START_TEST(test_lzma_hostile_dictionary)
{
    /* A .lzma header asking for a 4 GiB dictionary: refused by the memory limit, not
     * allocated. */
    uint8_t in[64] = {0x5d, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                      0xff, 0xff, 0xff, 0xff, 0x00, 0x12, 0x34};
    uint8_t out[4096];
    zf_err err = {""};
    for (int fmt = 0; fmt <= 2; fmt += 2) {
        char cfg[64];
        snprintf(cfg, sizeof cfg, "{\"id\": \"lzma\", \"format\": %d}", fmt);
        zf_codec *c = tu_codec(cfg);
        ck_assert_int_eq(tu_decode(c, in, sizeof in, out, sizeof out, &err), ZF_ERR_CORRUPT);
        ck_assert_msg(strstr(err.msg, "memory"), "%s", err.msg);
        zf_codec_free(c);
    }
    /* A raw LZMA2 chain with a huge configured dictionary decodes within the chunk's size. */
    uint8_t data[DATA_LEN], enc[2 * DATA_LEN];
    size_t len = c_raw2((tu_fill(data, DATA_LEN, 2), data), DATA_LEN, enc, sizeof enc);
    zf_codec *c = tu_codec("{\"id\": \"lzma\", \"format\": 3, \"filters\": [{\"id\": 33, "
                           "\"dict_size\": 4294967295}]}");
    ck_assert_int_eq(tu_decode(c, enc, len, out, DATA_LEN, &err), ZF_OK);
    ck_assert_mem_eq(out, data, DATA_LEN);
    zf_codec_free(c);
}
END_TEST

/* --- checksums --- */

START_TEST(test_checksum_mismatch)
{
    uint8_t data[1000], enc[1004], out[1000];
    tu_fill(data, sizeof data, 4);
    struct {
        const char *config, *name;
        uint32_t sum;
        bool at_end;
    } cases[] = {
        {"{\"id\": \"crc32\"}", "crc32", (uint32_t)crc32(0, data, sizeof data), false},
        {"{\"id\": \"adler32\"}", "adler32", (uint32_t)adler32(1, data, sizeof data), false},
        {"{\"id\": \"crc32c\"}", "crc32c", zf_crc32c(0, data, sizeof data), true},
        {"{\"id\": \"crc32\", \"location\": \"end\"}", "crc32",
         (uint32_t)crc32(0, data, sizeof data), true},
        {"{\"id\": \"crc32c\", \"location\": \"start\"}", "crc32c",
         zf_crc32c(0, data, sizeof data), false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        zf_codec *c = tu_codec(cases[i].config);
        zf_err err = {""};
        memcpy(enc + (cases[i].at_end ? 0 : 4), data, sizeof data);
        tu_put_le32(enc + (cases[i].at_end ? sizeof data : 0), cases[i].sum);
        ck_assert_int_eq(tu_decode(c, enc, sizeof enc, out, sizeof out, &err), ZF_OK);
        ck_assert_mem_eq(out, data, sizeof data);
        for (size_t pos = 0; pos < sizeof enc; pos += 97) { /* payload and checksum bytes */
            enc[pos] ^= 0x10;
            ck_assert_int_eq(tu_decode(c, enc, sizeof enc, out, sizeof out, &err),
                             ZF_ERR_CORRUPT);
            ck_assert_msg(strstr(err.msg, "checksum mismatch"), "%s", err.msg);
            assert_named(&err, cases[i].name);
            enc[pos] ^= 0x10;
        }
        enc[cases[i].at_end ? sizeof enc - 1 : 0] ^= 0x80;
        ck_assert_int_eq(tu_decode(c, enc, sizeof enc, out, sizeof out, &err), ZF_ERR_CORRUPT);
        enc[cases[i].at_end ? sizeof enc - 1 : 0] ^= 0x80;
        ck_assert_int_eq(tu_decode(c, enc, 3, out, 0, &err), ZF_ERR_CORRUPT);
        ck_assert_int_eq(tu_decode(c, enc, sizeof enc - 1, out, sizeof out, &err),
                         ZF_ERR_CORRUPT);
        zf_codec_free(c);
    }
}
END_TEST

/* --- vlen-utf8: chunks of variable-length strings decode to text, malformed ones fail --- */

/* A vlen-utf8 chunk as numcodecs writes it: u32 LE count, then u32 LE length + bytes each. */
static size_t vlen_chunk(uint8_t *buf, uint32_t count, const char *const *elems, size_t n)
{
    size_t o = 0;
    for (int k = 0; k < 4; k++)
        buf[o++] = (uint8_t)(count >> (8 * k));
    for (size_t i = 0; i < n; i++) {
        uint32_t l = (uint32_t)strlen(elems[i]);
        for (int k = 0; k < 4; k++)
            buf[o++] = (uint8_t)(l >> (8 * k));
        memcpy(buf + o, elems[i], l);
        o += l;
    }
    return o;
}

static zf_status vlen_text(const uint8_t *in, size_t len, uint64_t nelems, zf_text_chunk **t,
                           zf_err *err)
{
    zf_codec *c;
    ck_assert_int_eq(zf_codec_vlen_utf8_new(NULL, &c, err), ZF_OK);
    zf_chunk_repr r = {.ndim = 1, .shape = {nelems}, .dtype = {.kind = 'O', .byteorder = '|'}};
    zf_status st = c->ops->decode_text(c, &r, in, len, t, err);
    zf_codec_free(c);
    return st;
}

START_TEST(test_vlen_utf8_text)
{
    uint8_t buf[256];
    static const char *const el[] = {"a", "", "tab\there", "back\\slash", "nl\nx\r",
                                     "\xc3\xa9"};
    size_t n = vlen_chunk(buf, 6, el, 6);
    zf_text_chunk *t;
    zf_err err = {""};
    ck_assert_int_eq(vlen_text(buf, n, 6, &t, &err), ZF_OK);
    static const char want[] = "a\n\ntab\\there\nback\\\\slash\nnl\\nx\\r\n\xc3\xa9\n";
    ck_assert_uint_eq(t->len, strlen(want));
    ck_assert(memcmp(t->text, want, t->len) == 0);
    ck_assert_uint_eq(t->starts[2], 3);
    ck_assert_uint_eq(t->starts[6], t->len);
    free(t);
    /* malformed: each an error naming the codec, never a crash */
    ck_assert_int_eq(vlen_text(buf, 3, 6, &t, &err), ZF_ERR_CORRUPT); /* no count */
    ck_assert_int_eq(vlen_text(buf, n, 5, &t, &err), ZF_ERR_CORRUPT); /* count != chunk */
    ck_assert_str_eq(err.msg, "vlen-utf8: 6 elements, the chunk holds 5");
    ck_assert_int_eq(vlen_text(buf, n - 1, 6, &t, &err), ZF_ERR_CORRUPT); /* truncated */
    ck_assert_msg(strstr(err.msg, "past the end"), "%s", err.msg);
    uint8_t neg[8] = {0xff, 0xff, 0xff, 0xff};
    ck_assert_int_eq(vlen_text(neg, 4, 1, &t, &err), ZF_ERR_CORRUPT); /* negative count */
    ck_assert_msg(strstr(err.msg, "negative"), "%s", err.msg);
    uint8_t big[12] = {1, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f, 'x'};
    ck_assert_int_eq(vlen_text(big, 9, 1, &t, &err), ZF_ERR_CORRUPT); /* length past end */
    uint8_t negl[12] = {1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 'x'};
    ck_assert_int_eq(vlen_text(negl, 9, 1, &t, &err), ZF_ERR_CORRUPT); /* negative length */
    static const char *const bad[] = {"\xc3", "\xed\xa0\x80"}; /* truncated; a surrogate */
    for (size_t i = 0; i < 2; i++) {
        n = vlen_chunk(buf, 1, &bad[i], 1);
        ck_assert_int_eq(vlen_text(buf, n, 1, &t, &err), ZF_ERR_CORRUPT);
        ck_assert_msg(strstr(err.msg, "UTF-8"), "%s", err.msg);
    }
}
END_TEST

/* vlen-bytes: the same layout; bytes that are not printable UTF-8 are \xHH. */
START_TEST(test_vlen_bytes_text)
{
    static const char *const el[] = {"\x01\x1f\x7f", "tab\tnl\n\\", "\xc3\xa9\xc2\x85\xc2\xa0",
                                     "\xe2\x80\xa8\xe2\x80\xa7", "\xff\xc3", "\xed\xa0\x80\xc0\x80",
                                     "\xf0\x9f\x98\x80\xf4\x90\x80\x80"};
    static const char want[] = "\\x01\\x1f\\x7f\n"
                               "tab\\tnl\\n\\\\\n"
                               "\xc3\xa9\\xc2\\x85\xc2\xa0\n"
                               "\\xe2\\x80\\xa8\xe2\x80\xa7\n"
                               "\\xff\\xc3\n"
                               "\\xed\\xa0\\x80\\xc0\\x80\n"
                               "\xf0\x9f\x98\x80\\xf4\\x90\\x80\\x80\n";
    uint8_t buf[256];
    size_t n = vlen_chunk(buf, 7, el, 7);
    uint8_t nul[16] = {1, 0, 0, 0, 1, 0, 0, 0, 0}; /* one element: a NUL byte */
    zf_codec *c;
    zf_err err = {""};
    ck_assert_int_eq(zf_codec_vlen_bytes_new(NULL, &c, &err), ZF_OK);
    zf_chunk_repr r = {.ndim = 1, .shape = {7}, .dtype = {.kind = 'O', .byteorder = '|'}};
    zf_text_chunk *t;
    ck_assert_int_eq(c->ops->decode_text(c, &r, buf, n, &t, &err), ZF_OK);
    ck_assert_uint_eq(t->len, strlen(want));
    ck_assert_msg(memcmp(t->text, want, t->len) == 0, "%.*s", (int)t->len, t->text);
    ck_assert_uint_eq(t->starts[7], t->len);
    free(t);
    r.shape[0] = 1;
    ck_assert_int_eq(c->ops->decode_text(c, &r, nul, 9, &t, &err), ZF_OK);
    ck_assert_uint_eq(t->len, 5);
    ck_assert(memcmp(t->text, "\\x00\n", 5) == 0);
    free(t);
    ck_assert_int_eq(c->ops->decode_text(c, &r, nul, 8, &t, &err), ZF_ERR_CORRUPT);
    ck_assert_msg(strstr(err.msg, "vlen-bytes"), "%s", err.msg);
    zf_codec_free(c);
}
END_TEST

/* --- configurations --- */

START_TEST(test_unknown_and_unsupported)
{
    zf_err err = {""};
    ck_assert_int_eq(tu_codec_status("{\"id\": \"foo\"}", &err), ZF_ERR_UNSUPPORTED);
    ck_assert_str_eq(err.msg, "codec \"foo\" is not supported");
    static const char *const ids[] = {"json", "msgpack", "pickle", "pcodec"};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        char cfg[128], quoted[64];
        snprintf(cfg, sizeof cfg, "{\"id\": \"%s\"}", ids[i]);
        snprintf(quoted, sizeof quoted, "\"%s\"", ids[i]);
        ck_assert_int_eq(tu_codec_status(cfg, &err), ZF_ERR_UNSUPPORTED);
        ck_assert_msg(strstr(err.msg, quoted), "%s: %s", ids[i], err.msg);
    }
    ck_assert_int_eq(tu_codec_status("{\"id\": \"categorize\", \"labels\": [\"a\"], "
                                     "\"dtype\": \"|O\", \"astype\": \"|u1\"}",
                                     &err),
                     ZF_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(err.msg, "categorize") && strstr(err.msg, "object"), "%s", err.msg);
    ck_assert_int_eq(tu_codec_status("{\"id\": \"delta\", \"dtype\": \"|O\"}", &err),
                     ZF_ERR_UNSUPPORTED);
    ck_assert_int_eq(tu_codec_status("{\"id\": \"delta\", \"dtype\": \"<M8[ns]\"}", &err),
                     ZF_ERR_UNSUPPORTED);
}
END_TEST

START_TEST(test_malformed_configs)
{
    static const struct {
        const char *config, *needle;
    } cases[] = {
        {"[]", "codec object"},
        {"{}", "\"id\""},
        {"{\"id\": 5}", "\"id\""},
        {"{\"id\": \"zlib\", \"level\": \"x\"}", "zlib: \"level\""},
        {"{\"id\": \"zlib\", \"level\": 1.5}", "zlib: \"level\""},
        {"{\"id\": \"gzip\", \"level\": 12}", "gzip: \"level\""},
        {"{\"id\": \"bz2\", \"level\": []}", "bz2: \"level\""},
        {"{\"id\": \"zstd\", \"level\": \"3\"}", "zstd: \"level\""},
        {"{\"id\": \"zstd\", \"checksum\": \"yes\"}", "zstd: \"checksum\""},
        {"{\"id\": \"lz4\", \"acceleration\": {}}", "lz4: \"acceleration\""},
        {"{\"id\": \"blosc\", \"clevel\": 99}", "blosc: \"clevel\""},
        {"{\"id\": \"blosc\", \"shuffle\": 7}", "blosc: \"shuffle\""},
        {"{\"id\": \"blosc\", \"cname\": 3}", "blosc: \"cname\""},
        {"{\"id\": \"lzma\", \"format\": 7}", "lzma: \"format\""},
        {"{\"id\": \"lzma\", \"format\": 3}", "lzma: \"filters\""},
        {"{\"id\": \"lzma\", \"format\": 3, \"filters\": {}}", "lzma: \"filters\""},
        {"{\"id\": \"lzma\", \"format\": 3, \"filters\": [{\"id\": 99}]}", "\"filters\"[0]"},
        {"{\"id\": \"lzma\", \"format\": 3, \"filters\": [5]}", "\"filters\"[0]"},
        {"{\"id\": \"lzma\", \"format\": 3, \"filters\": [{\"id\": 3}]}", "last filter"},
        {"{\"id\": \"lzma\", \"format\": 3, \"filters\": [{\"id\": 33, \"lc\": 9}]}", "\"lc\""},
        {"{\"id\": \"lzma\", \"format\": 3, \"filters\": [{\"id\": 33, \"bogus\": 1}]}",
         "\"bogus\""},
        {"{\"id\": \"delta\"}", "delta: \"dtype\""},
        {"{\"id\": \"delta\", \"dtype\": \"<x9\"}", "delta: \"dtype\""},
        {"{\"id\": \"delta\", \"dtype\": \"<i4\", \"astype\": 4}", "delta: \"astype\""},
        {"{\"id\": \"fixedscaleoffset\", \"offset\": 0, \"dtype\": \"<f8\"}",
         "fixedscaleoffset: \"scale\""},
        {"{\"id\": \"fixedscaleoffset\", \"offset\": \"0\", \"scale\": 1, \"dtype\": \"<f8\"}",
         "fixedscaleoffset: \"offset\""},
        {"{\"id\": \"astype\", \"decode_dtype\": \"<f8\"}", "astype: \"encode_dtype\""},
        {"{\"id\": \"quantize\", \"digits\": 3, \"dtype\": \"<i4\"}", "quantize: \"dtype\""},
        {"{\"id\": \"quantize\", \"dtype\": \"<f8\"}", "quantize: \"digits\""},
        {"{\"id\": \"bitround\", \"keepbits\": -1}", "bitround: \"keepbits\""},
        {"{\"id\": \"bitround\"}", "bitround: \"keepbits\""},
        {"{\"id\": \"shuffle\", \"elementsize\": \"4\"}", "shuffle: \"elementsize\""},
        {"{\"id\": \"categorize\", \"dtype\": \"<U4\", \"labels\": \"a\"}",
         "categorize: \"labels\""},
        {"{\"id\": \"categorize\", \"dtype\": \"<U4\", \"labels\": [1]}",
         "categorize: \"labels\"[0]"},
        {"{\"id\": \"categorize\", \"dtype\": \"<i4\", \"labels\": []}", "categorize: \"dtype\""},
        {"{\"id\": \"crc32\", \"location\": \"middle\"}", "crc32: \"location\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        zf_err err = {""};
        zf_status st = tu_codec_status(cases[i].config, &err);
        ck_assert_msg(st == ZF_ERR_INVALID, "%s: %s (%s)", cases[i].config, zf_status_str(st),
                      err.msg);
        ck_assert_msg(strstr(err.msg, cases[i].needle), "%s: message \"%s\" lacks \"%s\"",
                      cases[i].config, err.msg, cases[i].needle);
    }
}
END_TEST

/* Filters whose element size does not divide the chunk: refused when resolving. */
START_TEST(test_filter_sizes)
{
    zf_codec_chain chain = {0};
    ck_assert_int_eq(zf_chain_append(&chain, tu_codec("{\"id\": \"delta\", \"dtype\": \"<i4\"}")),
                     ZF_OK);
    zf_chunk_repr dec = {.ndim = 1, .shape = {10}, .nbytes = 10}, reprs[2];
    dec.dtype.kind = 'u';
    dec.dtype.itemsize = 1;
    dec.dtype.byteorder = '|';
    zf_err err = {""};
    ck_assert_int_eq(zf_chain_resolve(&chain, &dec, reprs, &err), ZF_ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "delta: 10 bytes"), "%s", err.msg);
    dec.nbytes = 12;
    ck_assert_int_eq(zf_chain_resolve(&chain, &dec, reprs, &err), ZF_OK);
    ck_assert_uint_eq(reprs[1].nbytes, 12);
    ck_assert_int_eq(reprs[1].dtype.kind, 'i');
    zf_chain_clear(&chain);

    zf_codec *s = tu_codec("{\"id\": \"shuffle\", \"elementsize\": 8}");
    dec.nbytes = 12;
    ck_assert_int_eq(s->ops->resolve(s, &dec, &reprs[1], &err), ZF_ERR_INVALID);
    uint8_t buf[12] = {0}, out[12];
    ck_assert_int_eq(tu_decode(s, buf, 12, out, 12, &err), ZF_ERR_CORRUPT);
    zf_codec_free(s);

    /* astype: input of the wrong element count */
    zf_codec *a = tu_codec("{\"id\": \"astype\", \"encode_dtype\": \"<i2\", "
                           "\"decode_dtype\": \"<i4\"}");
    ck_assert_int_eq(tu_decode(a, buf, 5, out, 12, &err), ZF_ERR_CORRUPT);
    ck_assert_int_eq(tu_decode(a, buf, 8, out, 12, &err), ZF_ERR_CORRUPT);
    ck_assert_int_eq(tu_decode(a, buf, 6, out, 12, &err), ZF_OK);
    zf_codec_free(a);

    /* packbits: the count implied by the padding byte must match */
    zf_codec *p = tu_codec("{\"id\": \"packbits\"}");
    uint8_t packed[3] = {4, 0xff, 0xf0};
    ck_assert_int_eq(tu_decode(p, packed, 3, out, 12, &err), ZF_OK);
    ck_assert_int_eq(tu_decode(p, packed, 3, out, 11, &err), ZF_ERR_CORRUPT);
    ck_assert_int_eq(tu_decode(p, packed, 0, out, 0, &err), ZF_ERR_CORRUPT);
    zf_codec_free(p);

    /* base64: bad padding, a dangling character, too long */
    zf_codec *b = tu_codec("{\"id\": \"base64\"}");
    ck_assert_int_eq(tu_decode(b, "QUJD", 4, out, 3, &err), ZF_OK);
    ck_assert_mem_eq(out, "ABC", 3);
    ck_assert_int_eq(tu_decode(b, "QUI", 3, out, 2, &err), ZF_ERR_CORRUPT);
    ck_assert_int_eq(tu_decode(b, "QUJDR", 5, out, 3, &err), ZF_ERR_CORRUPT);
    ck_assert_int_eq(tu_decode(b, "QUJDQUJD", 8, out, 3, &err), ZF_ERR_CORRUPT);
    ck_assert_int_eq(tu_decode(b, "QUI=", 4, out, 2, &err), ZF_OK);
    zf_codec_free(b);
}
END_TEST

/* Filters without a numcodecs-generated case: categorize to bytes strings, bitround, type
 * names in configurations. */
START_TEST(test_filters_misc)
{
    zf_err err = {""};
    zf_codec *c = tu_codec("{\"id\": \"categorize\", \"labels\": [\"ab\", \"long label\"], "
                           "\"dtype\": \"|S4\", \"astype\": \"<u2\"}");
    uint16_t enc[4] = {1, 0, 2, 7};
    uint8_t out[16];
    ck_assert_int_eq(tu_decode(c, enc, sizeof enc, out, 16, &err), ZF_OK);
    ck_assert_mem_eq(out, "ab\0\0\0\0\0\0long\0\0\0\0", 16);
    zf_codec_free(c);
    ck_assert_int_eq(tu_codec_status("{\"id\": \"categorize\", \"labels\": [\"\u00df\"], "
                                     "\"dtype\": \"|S4\"}",
                                     &err),
                     ZF_ERR_INVALID);

    c = tu_codec("{\"id\": \"bitround\", \"keepbits\": 3}");
    ck_assert_int_eq(tu_decode(c, "abcdefgh", 8, out, 8, &err), ZF_OK);
    ck_assert_mem_eq(out, "abcdefgh", 8);
    ck_assert_int_eq(tu_decode(c, "abcdefgh", 8, out, 4, &err), ZF_ERR_CORRUPT);
    zf_codec_free(c);

    /* NumPy type names and typestrs without a byte order */
    c = tu_codec("{\"id\": \"astype\", \"encode_dtype\": \"int16\", "
                 "\"decode_dtype\": \"f8\"}");
    int16_t in16[2] = {-3, 700};
    double d[2];
    ck_assert_int_eq(tu_decode(c, in16, 4, d, 16, &err), ZF_OK);
    ck_assert(d[0] == -3 && d[1] == 700);
    zf_codec_free(c);

    /* delta over timedelta64 (same unit) */
    c = tu_codec("{\"id\": \"delta\", \"dtype\": \"<m8[s]\"}");
    int64_t dm[3] = {5, -2, 10}, dmo[3];
    ck_assert_int_eq(tu_decode(c, dm, 24, dmo, 24, &err), ZF_OK);
    ck_assert(dmo[0] == 5 && dmo[1] == 3 && dmo[2] == 13);
    zf_codec_free(c);
}
END_TEST

Suite *codec_negative_suite(void)
{
    Suite *s = suite_create("codec-negative");
    TCase *tc = tcase_create("compressors");
    tcase_set_timeout(tc, 240);
    tcase_add_loop_test(tc, test_roundtrip_each_compressor, 0, (int)NCOMPS);
    tcase_add_loop_test(tc, test_truncated_each_compressor, 0, (int)NCOMPS);
    tcase_add_loop_test(tc, test_bitflips_each_compressor, 0, (int)NCOMPS);
    tcase_add_test(tc, test_decompression_bombs);
    tcase_add_test(tc, test_blosc_hostile_headers);
    tcase_add_test(tc, test_lz4_size_prefix);
    tcase_add_test(tc, test_zstd_frames);
    tcase_add_test(tc, test_stream_tails);
    tcase_add_test(tc, test_lzma_hostile_dictionary);
    suite_add_tcase(s, tc);
    TCase *tk = tcase_create("checksums-configs");
    tcase_add_test(tk, test_checksum_mismatch);
    tcase_add_test(tk, test_unknown_and_unsupported);
    tcase_add_test(tk, test_vlen_utf8_text);
    tcase_add_test(tk, test_vlen_bytes_text);
    tcase_add_test(tk, test_malformed_configs);
    tcase_add_test(tk, test_filter_sizes);
    tcase_add_test(tk, test_filters_misc);
    suite_add_tcase(s, tk);
    return s;
}
