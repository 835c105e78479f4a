/* test_transpose.c — the transpose codec against a naive reference (shapes, permutations, item
 * sizes, F order), the chain (ping-pong buffers, zero codecs, sizes known only from the data),
 * and CRC-32C. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "codec_impl.h"
#include "testutil.h"

/* out (decoded C order) from in (encoded C order), element by element. */
static void naive_transpose(unsigned nd, const uint64_t *dshape, const unsigned *order,
                            size_t s, const uint8_t *in, uint8_t *out)
{
    uint64_t eshape[ZF_MAX_DIMS], idx[ZF_MAX_DIMS] = {0};
    size_t n = 1;
    for (unsigned i = 0; i < nd; i++) {
        eshape[i] = dshape[order[i]];
        n *= dshape[i];
    }
    for (size_t k = 0; k < n; k++) {
        size_t e = 0;
        for (unsigned i = 0; i < nd; i++)
            e = e * eshape[i] + idx[order[i]];
        memcpy(out + k * s, in + e * s, s);
        for (unsigned j = nd; j-- > 0;) {
            if (++idx[j] < dshape[j])
                break;
            idx[j] = 0;
        }
    }
}

static void check_transpose(unsigned nd, const uint64_t *shape, const unsigned *order, size_t s)
{
    zf_codec *t;
    zf_err err = {""};
    ck_assert_int_eq(zf_codec_transpose_new(nd, order, &t, &err), ZF_OK);
    zf_chunk_repr dec = {.ndim = nd};
    size_t n = 1;
    for (unsigned i = 0; i < nd; i++) {
        dec.shape[i] = shape[i];
        n *= shape[i];
    }
    dec.dtype.kind = 'V';
    dec.dtype.byteorder = '|';
    dec.dtype.itemsize = s;
    dec.nbytes = n * s;
    zf_chunk_repr enc;
    ck_assert_int_eq(t->ops->resolve(t, &dec, &enc, &err), ZF_OK);
    for (unsigned i = 0; i < nd; i++)
        ck_assert_uint_eq(enc.shape[i], shape[order[i]]);
    ck_assert_uint_eq(enc.nbytes, dec.nbytes);
    uint8_t *in = malloc(n * s + 1), *out = malloc(n * s + 1), *ref = malloc(n * s + 1);
    for (size_t i = 0; i < n * s; i++)
        in[i] = (uint8_t)(i * 131 + i / 7);
    naive_transpose(nd, shape, order, s, in, ref);
    ck_assert_int_eq(t->ops->decode(t, &dec, in, n * s, out, n * s, &err), ZF_OK);
    char desc[256] = "";
    for (unsigned i = 0; i < nd; i++)
        snprintf(desc + strlen(desc), sizeof desc - strlen(desc), "%llu/%u ",
                 (unsigned long long)shape[i], order[i]);
    ck_assert_msg(memcmp(out, ref, n * s) == 0, "transpose shape/order %s itemsize %zu", desc, s);
    free(in);
    free(out);
    free(ref);
    zf_codec_free(t);
}

static const size_t item_sizes[] = {1, 2, 3, 4, 8, 16};

START_TEST(test_transpose_2d)
{
    static const uint64_t shapes[][2] = {{1, 1}, {1, 9}, {9, 1}, {2, 3},   {37, 53},
                                         {64, 64}, {100, 70}, {33, 129}, {0, 5}};
    unsigned order[2] = {1, 0};
    for (size_t k = 0; k < sizeof item_sizes / sizeof item_sizes[0]; k++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            check_transpose(2, shapes[i], order, item_sizes[k]);
    unsigned ident[2] = {0, 1};
    check_transpose(2, shapes[4], ident, 4);
}
END_TEST

START_TEST(test_transpose_3d)
{
    static const uint64_t shapes[][3] = {{5, 7, 9}, {1, 7, 9}, {5, 1, 9}, {5, 7, 1}, {40, 3, 33}};
    static const unsigned orders[][3] = {{2, 0, 1}, {1, 2, 0}, {2, 1, 0}, {0, 2, 1},
                                         {1, 0, 2}, {0, 1, 2}};
    for (size_t k = 0; k < sizeof item_sizes / sizeof item_sizes[0]; k++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            for (size_t o = 0; o < sizeof orders / sizeof orders[0]; o++)
                check_transpose(3, shapes[i], orders[o], item_sizes[k]);
}
END_TEST

START_TEST(test_transpose_nd)
{
    /* Every permutation of 4 axes, and F order (reversed axes) up to 6 dimensions. */
    uint64_t shape4[4] = {3, 4, 5, 6};
    unsigned p[4];
    for (unsigned a = 0; a < 4; a++)
        for (unsigned b = 0; b < 4; b++)
            for (unsigned c = 0; c < 4; c++)
                for (unsigned d = 0; d < 4; d++) {
                    if (a == b || a == c || a == d || b == c || b == d || c == d)
                        continue;
                    p[0] = a, p[1] = b, p[2] = c, p[3] = d;
                    check_transpose(4, shape4, p, 2);
                    check_transpose(4, shape4, p, 3);
                }
    uint64_t shape6[6] = {2, 3, 1, 4, 5, 3};
    for (unsigned nd = 1; nd <= 6; nd++) {
        unsigned rev[6];
        for (unsigned i = 0; i < nd; i++)
            rev[i] = nd - 1 - i;
        check_transpose(nd, shape6, rev, 8);
        check_transpose(nd, shape6, rev, 1);
    }
    check_transpose(0, shape6, p, 4); /* a scalar */
}
END_TEST

START_TEST(test_transpose_f_order_values)
{
    /* A 2 x 3 int16 array stored in F order: 1 4 2 5 3 6 -> C order 1 2 3 4 5 6. */
    unsigned order[2] = {1, 0};
    zf_codec *t;
    zf_err err = {""};
    ck_assert_int_eq(zf_codec_transpose_new(2, order, &t, &err), ZF_OK);
    zf_chunk_repr dec = {.ndim = 2, .shape = {2, 3}, .nbytes = 12};
    dec.dtype = (zf_dtype){.kind = 'i', .byteorder = '<', .itemsize = 2};
    int16_t in[6] = {1, 4, 2, 5, 3, 6}, out[6], want[6] = {1, 2, 3, 4, 5, 6};
    ck_assert_int_eq(t->ops->decode(t, &dec, (uint8_t *)in, 12, (uint8_t *)out, 12, &err), ZF_OK);
    ck_assert_mem_eq(out, want, sizeof want);
    /* Wrong sizes */
    ck_assert_int_eq(t->ops->decode(t, &dec, (uint8_t *)in, 10, (uint8_t *)out, 12, &err),
                     ZF_ERR_CORRUPT);
    dec.ndim = 3;
    zf_chunk_repr enc;
    ck_assert_int_eq(t->ops->resolve(t, &dec, &enc, &err), ZF_ERR_INVALID);
    zf_codec_free(t);
    /* Not permutations */
    unsigned bad1[2] = {0, 0}, bad2[3] = {0, 1, 3};
    ck_assert_int_eq(zf_codec_transpose_new(2, bad1, &t, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(zf_codec_transpose_new(3, bad2, &t, &err), ZF_ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "transpose"), "%s", err.msg);
}
END_TEST

/* --- the chain --- */

static zf_chunk_repr bytes_repr(size_t n)
{
    zf_chunk_repr r = {.ndim = 1, .shape = {n}, .nbytes = n};
    r.dtype = (zf_dtype){.kind = 'u', .byteorder = '|', .itemsize = 1};
    return r;
}

START_TEST(test_chain_empty)
{
    zf_codec_chain chain = {0};
    zf_chunk_repr dec = bytes_repr(5);
    uint8_t out[5];
    zf_err err = {""};
    ck_assert_int_eq(zf_chain_decode(&chain, &dec, (const uint8_t *)"hello", 5, out, &err), ZF_OK);
    ck_assert_mem_eq(out, "hello", 5);
    ck_assert_int_eq(zf_chain_decode(&chain, &dec, (const uint8_t *)"hell", 4, out, &err),
                     ZF_ERR_CORRUPT);
    ck_assert_str_eq(err.msg, "chunk holds 4 bytes, expected 5");
}
END_TEST

/* F-order int32 2-d chunk -> delta -> shuffle -> crc32 -> zlib, as a v2 .zarray would chain
 * them; then decoded back through four scratch steps into the caller's buffer. */
START_TEST(test_chain_v2_stack)
{
    enum { R = 31, C = 17, N = R * C };
    int32_t orig[R][C];
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++)
            orig[i][j] = i * 1000 + j * j - 7;
    /* encode by hand: F order, delta, shuffle(4), crc32 prefix, zlib */
    int32_t f[N], d[N];
    for (int j = 0, k = 0; j < C; j++)
        for (int i = 0; i < R; i++)
            f[k++] = orig[i][j];
    for (int k = 0; k < N; k++)
        d[k] = k ? (int32_t)((uint32_t)f[k] - (uint32_t)f[k - 1]) : f[0];
    uint8_t sh[4 + N * 4], *db = (uint8_t *)d;
    for (int k = 0; k < N; k++)
        for (int b = 0; b < 4; b++)
            sh[4 + b * N + k] = db[k * 4 + b];
    uint32_t sum = (uint32_t)crc32(0, sh + 4, N * 4);
    for (int b = 0; b < 4; b++)
        sh[b] = (uint8_t)(sum >> (8 * b));
    uint8_t z[8192];
    uLongf zlen = sizeof z;
    ck_assert_int_eq(compress2(z, &zlen, sh, sizeof sh, 6), Z_OK);

    zf_codec_chain chain = {0};
    zf_codec *t;
    zf_err err = {""};
    unsigned order[2] = {1, 0};
    ck_assert_int_eq(zf_codec_transpose_new(2, order, &t, &err), ZF_OK);
    ck_assert_int_eq(zf_chain_append(&chain, t), ZF_OK);
    ck_assert_int_eq(zf_chain_append(&chain, tu_codec("{\"id\": \"delta\", \"dtype\": \"<i4\"}")),
                     ZF_OK);
    ck_assert_int_eq(
        zf_chain_append(&chain, tu_codec("{\"id\": \"shuffle\", \"elementsize\": 4}")), ZF_OK);
    ck_assert_int_eq(zf_chain_append(&chain, tu_codec("{\"id\": \"crc32\"}")), ZF_OK);
    ck_assert_int_eq(zf_chain_append(&chain, tu_codec("{\"id\": \"zlib\"}")), ZF_OK);

    zf_chunk_repr dec = {.ndim = 2, .shape = {R, C}, .nbytes = N * 4}, reprs[6];
    dec.dtype = (zf_dtype){.kind = 'i', .byteorder = '<', .itemsize = 4};
    ck_assert_int_eq(zf_chain_resolve(&chain, &dec, reprs, &err), ZF_OK);
    ck_assert_uint_eq(reprs[1].shape[0], C);
    ck_assert_uint_eq(reprs[1].shape[1], R);
    ck_assert_uint_eq(reprs[4].nbytes, N * 4 + 4);
    ck_assert_uint_eq(reprs[5].nbytes, ZF_SIZE_UNKNOWN);
    int32_t out[R][C];
    ck_assert_int_eq(zf_chain_decode(&chain, &dec, z, zlen, (uint8_t *)out, &err), ZF_OK);
    ck_assert_mem_eq(out, orig, sizeof orig);
    /* corrupt the checksum: the message names the failing codec */
    sh[0] ^= 1;
    zlen = sizeof z;
    ck_assert_int_eq(compress2(z, &zlen, sh, sizeof sh, 6), Z_OK);
    ck_assert_int_eq(zf_chain_decode(&chain, &dec, z, zlen, (uint8_t *)out, &err),
                     ZF_ERR_CORRUPT);
    ck_assert_msg(strncmp(err.msg, "crc32: checksum mismatch", 24) == 0, "%s", err.msg);
    zf_chain_clear(&chain);
    ck_assert_uint_eq(chain.n, 0);
    ck_assert_ptr_null(chain.codecs);
}
END_TEST

/* A checksum after a compressor (v3 [bytes, zstd, crc32c]): its size comes from the data. */
START_TEST(test_chain_checksum_after_compressor)
{
    uint8_t data[3000], z[4096];
    tu_fill(data, sizeof data, 8);
    size_t zlen = ZSTD_compress(z, sizeof z - 4, data, sizeof data, 1);
    ck_assert(!ZSTD_isError(zlen));
    uint32_t sum = zf_crc32c(0, z, zlen);
    for (int b = 0; b < 4; b++)
        z[zlen + (size_t)b] = (uint8_t)(sum >> (8 * b));
    zf_codec_chain chain = {0};
    ck_assert_int_eq(zf_chain_append(&chain, tu_codec("{\"id\": \"zstd\"}")), ZF_OK);
    ck_assert_int_eq(zf_chain_append(&chain, tu_codec("{\"id\": \"crc32c\"}")), ZF_OK);
    zf_chunk_repr dec = bytes_repr(sizeof data);
    uint8_t out[3000];
    zf_err err = {""};
    ck_assert_int_eq(zf_chain_decode(&chain, &dec, z, zlen + 4, out, &err), ZF_OK);
    ck_assert_mem_eq(out, data, sizeof data);
    z[3] ^= 0x40;
    ck_assert_int_eq(zf_chain_decode(&chain, &dec, z, zlen + 4, out, &err), ZF_ERR_CORRUPT);
    ck_assert_msg(strstr(err.msg, "crc32c: checksum mismatch"), "%s", err.msg);
    zf_chain_clear(&chain);
    /* A compressor after a compressor: the zstd frame states the size of the zlib stream. */
    ck_assert_int_eq(zf_chain_append(&chain, tu_codec("{\"id\": \"zlib\"}")), ZF_OK);
    ck_assert_int_eq(zf_chain_append(&chain, tu_codec("{\"id\": \"zstd\"}")), ZF_OK);
    uint8_t zl[4096];
    uLongf zllen = sizeof zl;
    ck_assert_int_eq(compress2(zl, &zllen, data, sizeof data, 6), Z_OK);
    zlen = ZSTD_compress(z, sizeof z, zl, zllen, 1);
    ck_assert(!ZSTD_isError(zlen));
    ck_assert_int_eq(zf_chain_decode(&chain, &dec, z, zlen, out, &err), ZF_OK);
    ck_assert_mem_eq(out, data, sizeof data);
    zf_chain_clear(&chain);
}
END_TEST

/* --- CRC-32C --- */

static uint32_t crc32c_bitwise(const uint8_t *p, size_t n)
{
    uint32_t c = ~0u;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    }
    return ~c;
}

START_TEST(test_crc32c)
{
    ck_assert_uint_eq(zf_crc32c(0, "123456789", 9), 0xE3069283u);
    ck_assert_uint_eq(zf_crc32c_sw(0, "123456789", 9), 0xE3069283u);
    ck_assert_uint_eq(zf_crc32c(0, "", 0), 0);
    uint8_t buf[1100];
    tu_fill(buf, sizeof buf, 77);
    for (size_t start = 0; start < 9; start++)
        for (size_t len = 0; len + start <= sizeof buf; len += 37) {
            uint32_t want = crc32c_bitwise(buf + start, len);
            ck_assert_uint_eq(zf_crc32c(0, buf + start, len), want);
            ck_assert_uint_eq(zf_crc32c_sw(0, buf + start, len), want);
            /* continued in two pieces */
            size_t h = len / 3;
            ck_assert_uint_eq(zf_crc32c(zf_crc32c(0, buf + start, h), buf + start + h, len - h),
                              want);
            ck_assert_uint_eq(zf_crc32c_sw(zf_crc32c_sw(0, buf + start, h), buf + start + h,
                                           len - h),
                              want);
        }
}
END_TEST

Suite *codec_transpose_suite(void)
{
    Suite *s = suite_create("codec-transpose-chain");
    TCase *tc = tcase_create("transpose");
    tcase_add_test(tc, test_transpose_2d);
    tcase_add_test(tc, test_transpose_3d);
    tcase_add_test(tc, test_transpose_nd);
    tcase_add_test(tc, test_transpose_f_order_values);
    suite_add_tcase(s, tc);
    TCase *tch = tcase_create("chain");
    tcase_add_test(tch, test_chain_empty);
    tcase_add_test(tch, test_chain_v2_stack);
    tcase_add_test(tch, test_chain_checksum_after_compressor);
    tcase_add_test(tch, test_crc32c);
    suite_add_tcase(s, tch);
    return s;
}
