/* test_optional.c — zarrs' "optional" codec (src/codec/optional.c) and the zarr-extensions
 * "packbits" codec (src/codec/packbits_v3.c).
 *
 * Where the expected values come from: the chunks are built here from the formats' own
 * descriptions — zarrs' optional codec documentation (codec/array_to_bytes/optional.rs: two
 * little-endian u64 lengths, the mask encoded by mask_codecs, then only the valid elements, a
 * 1-D array, encoded by data_codecs; missing elements decode as zeros) and the zarr-extensions
 * packbits README ("Format and algorithm": element i at bits [i*k, (i+1)*k), bit 0 the least
 * significant of byte 0, zero padding, an optional padding-count byte first or last) — with a
 * bit packer written in this file, and zlib's compress2 for a gzip-less compressed data chain.
 * The expected decode (data, then one validity-depth byte per element) is written out from the
 * element lists. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "codec_impl.h"
#include "testutil.h"

/* Pack n values of `bits` bits each, LSB first (zarr-extensions packbits). */
static size_t pack_bits(const uint64_t *v, size_t n, unsigned bits, uint8_t *out)
{
    size_t total = n * bits, len = (total + 7) / 8;
    memset(out, 0, len);
    for (size_t i = 0; i < total; i++)
        if ((v[i / bits] >> (i % bits)) & 1)
            out[i / 8] |= (uint8_t)(1u << (i % 8));
    return len;
}

static zf_codec_chain make_chain(const char *json, const zf_chunk_repr *r)
{
    yajl_val v = tu_json(json);
    zf_codec_chain chain;
    zf_err err = {""};
    zf_status st = zf_chain_from_v3(v, ZF_CODECS_V3, r, NULL, &chain, &err);
    yajl_tree_free(v);
    ck_assert_msg(st == ZF_OK, "%s: %s (%s)", json, zf_status_str(st), err.msg);
    return chain;
}

static zf_status chain_status(const char *json, const zf_chunk_repr *r, zf_err *err)
{
    yajl_val v = tu_json(json);
    zf_codec_chain chain;
    zf_status st = zf_chain_from_v3(v, ZF_CODECS_V3, r, NULL, &chain, err);
    yajl_tree_free(v);
    if (st == ZF_OK)
        zf_chain_clear(&chain);
    return st;
}

/* ---------- packbits ---------- */

START_TEST(test_packbits_bool)
{
    uint64_t shape[2] = {3, 5};
    zf_chunk_repr r = tu_repr_of("|b1", 2, shape);
    uint64_t vals[15];
    uint8_t want[15];
    for (size_t i = 0; i < 15; i++)
        want[i] = (uint8_t)(vals[i] = (i * 7 + 3) % 5 < 2);
    uint8_t packed[8], out[15];
    size_t plen = pack_bits(vals, 15, 1, packed);
    ck_assert_uint_eq(plen, 2);
    /* none (default), first_byte, last_byte */
    const char *cfgs[] = {"[\"packbits\"]",
                          "[{\"name\": \"packbits\", \"configuration\": {\"padding_encoding\": "
                          "\"first_byte\"}}]",
                          "[{\"name\": \"packbits\", \"configuration\": {\"padding_encoding\": "
                          "\"last_byte\"}}]"};
    for (int k = 0; k < 3; k++) {
        uint8_t in[8];
        size_t n = 0;
        if (k == 1)
            in[n++] = 1; /* 16 bits hold 15: one padding bit */
        memcpy(in + n, packed, plen);
        n += plen;
        if (k == 2)
            in[n++] = 1;
        zf_codec_chain c = make_chain(cfgs[k], &r);
        zf_err err = {""};
        memset(out, 0xAA, sizeof out);
        ck_assert_int_eq(zf_chain_decode(&c, &r, in, n, out, &err), ZF_OK);
        ck_assert_mem_eq(out, want, 15);
        /* Encoding gives the same bytes. */
        uint8_t *enc;
        size_t elen;
        ck_assert_int_eq(zf_chain_encode(&c, &r, want, 0, &enc, &elen, &err), ZF_OK);
        ck_assert_uint_eq(elen, n);
        ck_assert_mem_eq(enc, in, n);
        free(enc);
        /* A wrong length, a wrong padding count: corrupt. */
        ck_assert_int_eq(zf_chain_decode(&c, &r, in, n - 1, out, &err), ZF_ERR_CORRUPT);
        if (k) {
            in[k == 1 ? 0 : n - 1] = 3;
            ck_assert_int_eq(zf_chain_decode(&c, &r, in, n, out, &err), ZF_ERR_CORRUPT);
        }
        zf_chain_clear(&c);
    }
}
END_TEST

START_TEST(test_packbits_bits)
{
    /* int16 keeping bits 2..6 (5 bits): decoding shifts them back and sign-extends from bit 6. */
    uint64_t shape[1] = {6};
    zf_chunk_repr r = tu_repr_of("<i2", 1, shape);
    int16_t vals[6] = {0, 4, -4, 60, -64, -32}; /* multiples of 4 within 7 signed bits */
    uint64_t stored[6];
    for (int i = 0; i < 6; i++)
        stored[i] = ((uint64_t)(uint16_t)vals[i] >> 2) & 31;
    uint8_t in[8], out[12];
    size_t n = pack_bits(stored, 6, 5, in);
    zf_codec_chain c = make_chain("[{\"name\": \"packbits\", \"configuration\": {\"first_bit\": 2, "
                                  "\"last_bit\": 6}}]", &r);
    zf_err err = {""};
    ck_assert_int_eq(zf_chain_decode(&c, &r, in, n, out, &err), ZF_OK);
    for (int i = 0; i < 6; i++) {
        int16_t got = (int16_t)(out[2 * i] | out[2 * i + 1] << 8);
        ck_assert_int_eq(got, vals[i]);
    }
    zf_chain_clear(&c);
    /* uint16 whole: the little-endian bytes themselves. */
    zf_chunk_repr u = tu_repr_of("<u2", 1, shape);
    c = make_chain("[\"packbits\"]", &u);
    const uint8_t raw[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    ck_assert_int_eq(zf_chain_decode(&c, &u, raw, 12, out, &err), ZF_OK);
    ck_assert_mem_eq(out, raw, 12);
    zf_chain_clear(&c);
    /* Configurations refused. */
    ck_assert_int_eq(chain_status("[{\"name\": \"packbits\", \"configuration\": {\"first_bit\": 9, "
                                  "\"last_bit\": 3}}]", &u, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(chain_status("[{\"name\": \"packbits\", \"configuration\": {\"last_bit\": "
                                  "16}}]", &u, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(chain_status("[{\"name\": \"packbits\", \"configuration\": "
                                  "{\"padding_encoding\": \"middle\"}}]", &u, &err),
                     ZF_ERR_INVALID);
    ck_assert_int_eq(chain_status("[{\"name\": \"packbits\", \"configuration\": {\"x\": 1}}]", &u,
                                  &err), ZF_ERR_INVALID);
}
END_TEST

/* ---------- optional ---------- */

/* One element of an optional chunk: depth (levels present) and its innermost value. */
typedef struct elem {
    uint8_t depth;
    uint32_t value;
} elem;

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* zarrs' encoding of one level: [mask_len][data_len][packbits mask][data] where data is the
 * valid elements (those with depth > level) encoded by `inner` (which writes them and returns
 * the length). levels: the levels below this one (0: data are `size`-byte little-endian values
 * under the bytes codec). */
static size_t encode_level(const elem *e, size_t n, unsigned level, unsigned levels, size_t size,
                           uint8_t *out)
{
    uint64_t mask[64];
    elem sub[64];
    size_t valid = 0;
    for (size_t i = 0; i < n; i++) {
        mask[i] = e[i].depth > level;
        if (mask[i])
            sub[valid++] = e[i];
    }
    size_t mlen = pack_bits(mask, n, 1, out + 16), dlen = 0;
    uint8_t *d = out + 16 + mlen;
    if (valid && level + 1 < levels) {
        dlen = encode_level(sub, valid, level + 1, levels, size, d);
    } else if (valid) {
        for (size_t j = 0; j < valid; j++)
            for (size_t b = 0; b < size; b++)
                d[j * size + b] = (uint8_t)(sub[j].value >> (8 * b));
        dlen = valid * size;
    }
    put_u64(out, mlen);
    put_u64(out + 8, dlen);
    return 16 + mlen + dlen;
}

/* What the chunk must decode to: the values (zero unless present at every level), then the
 * depths. */
static void expected(const elem *e, size_t n, unsigned levels, size_t size, uint8_t *out)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t b = 0; b < size; b++)
            out[i * size + b] = e[i].depth == levels ? (uint8_t)(e[i].value >> (8 * b)) : 0;
        out[n * size + i] = e[i].depth;
    }
}

/* The representation of a chunk of optional elements of typestr: data plus depth bytes. */
static zf_chunk_repr opt_repr(const char *typestr, unsigned ndim, const uint64_t *shape)
{
    zf_chunk_repr r = tu_repr_of(typestr, ndim, shape);
    r.nbytes += r.nbytes / r.dtype.itemsize;
    return r;
}

static const char OPT_I32[] =
    "[{\"name\": \"optional\", \"configuration\": {\"mask_codecs\": [{\"name\": \"packbits\"}], "
    "\"data_codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]}}]";

START_TEST(test_optional_decode)
{
    uint64_t shape[2] = {2, 3};
    zf_chunk_repr r = opt_repr("<i4", 2, shape);
    ck_assert_uint_eq(r.nbytes, 6 * 5);
    const elem some[6] = {{1, 7}, {0, 0}, {1, 0xFFFFFFFFu}, {0, 0}, {0, 0}, {1, 123456}};
    const elem none[6] = {{0, 0}};
    const elem all[6] = {{1, 1}, {1, 2}, {1, 3}, {1, 4}, {1, 5}, {1, 6}};
    const elem *cases[] = {some, none, all};
    const char *names[] = {OPT_I32,
                           "[{\"name\": \"zarrs.optional\", \"configuration\": {\"mask_codecs\": "
                           "[\"packbits\"], \"data_codecs\": [{\"name\": \"bytes\", "
                           "\"configuration\": {\"endian\": \"little\"}}]}}]",
                           "[{\"name\": \"https://codec.zarrs.dev/array_to_bytes/optional\", "
                           "\"configuration\": {\"mask_codecs\": [\"packbits\"], \"data_codecs\":"
                           " [{\"name\": \"bytes\", \"configuration\": {\"endian\": "
                           "\"little\"}}]}}]"};
    for (int nm = 0; nm < 3; nm++) {
        zf_codec_chain c = make_chain(names[nm], &r);
        ck_assert_uint_eq(zf_codec_optional_levels(c.codecs[0]), 1);
        for (int k = 0; k < 3; k++) {
            uint8_t in[128], out[30], want[30];
            size_t n = encode_level(cases[k], 6, 0, 1, 4, in);
            expected(cases[k], 6, 1, 4, want);
            zf_err err = {""};
            memset(out, 0xAA, sizeof out);
            ck_assert_msg(zf_chain_decode(&c, &r, in, n, out, &err) == ZF_OK, "%s", err.msg);
            ck_assert_mem_eq(out, want, 30);
            /* Truncated, lengthened, or lengths that do not add up: corrupt. */
            ck_assert_int_eq(zf_chain_decode(&c, &r, in, n - 1, out, &err), ZF_ERR_CORRUPT);
            ck_assert_int_eq(zf_chain_decode(&c, &r, in, 15, out, &err), ZF_ERR_CORRUPT);
            uint8_t big[129];
            memcpy(big, in, n);
            big[n] = 0;
            ck_assert_int_eq(zf_chain_decode(&c, &r, big, n + 1, out, &err), ZF_ERR_CORRUPT);
            put_u64(big, UINT64_MAX);
            ck_assert_int_eq(zf_chain_decode(&c, &r, big, n, out, &err), ZF_ERR_CORRUPT);
            if (k == 0) { /* a mask claiming one more valid element than the data hold */
                memcpy(big, in, n);
                big[16] ^= 2;
                ck_assert_int_eq(zf_chain_decode(&c, &r, big, n, out, &err), ZF_ERR_CORRUPT);
            }
        }
        zf_chain_clear(&c);
    }
}
END_TEST

START_TEST(test_optional_compressed)
{
    /* data_codecs with a compressor after bytes; mask_codecs bytes (one byte per element, any
     * non-zero byte valid) then zlib. */
    uint64_t shape[1] = {40};
    zf_chunk_repr r = opt_repr("<u2", 1, shape);
    elem e[40];
    uint8_t mask[40], data[80], want[40 * 3];
    size_t valid = 0;
    for (size_t i = 0; i < 40; i++) {
        e[i] = (elem){.depth = (uint8_t)(i % 3 != 1), .value = (uint32_t)(1000 + 17 * i)};
        mask[i] = (uint8_t)(e[i].depth ? 1 + i % 5 : 0);
        if (e[i].depth) {
            data[2 * valid] = (uint8_t)e[i].value;
            data[2 * valid + 1] = (uint8_t)(e[i].value >> 8);
            valid++;
        }
    }
    expected(e, 40, 1, 2, want);
    uint8_t zm[256], zd[256], in[600];
    uLongf zml = sizeof zm, zdl = sizeof zd;
    ck_assert_int_eq(compress2(zm, &zml, mask, 40, 6), Z_OK);
    ck_assert_int_eq(compress2(zd, &zdl, data, 2 * valid, 6), Z_OK);
    put_u64(in, zml);
    put_u64(in + 8, zdl);
    memcpy(in + 16, zm, zml);
    memcpy(in + 16 + zml, zd, zdl);
    zf_codec_chain c = make_chain(
        "[{\"name\": \"optional\", \"configuration\": {\"mask_codecs\": [{\"name\": \"bytes\"}, "
        "{\"name\": \"numcodecs.zlib\", \"configuration\": {\"level\": 6}}], \"data_codecs\": "
        "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": "
        "\"numcodecs.zlib\", \"configuration\": {\"level\": 6}}]}}, \"crc32c\"]",
        &r);
    /* crc32c after the optional codec: append the checksum of everything. */
    size_t n = 16 + zml + zdl;
    uint32_t crc = zf_crc32c(0, in, n);
    for (int i = 0; i < 4; i++)
        in[n + (size_t)i] = (uint8_t)(crc >> (8 * i));
    uint8_t out[120];
    zf_err err = {""};
    ck_assert_msg(zf_chain_decode(&c, &r, in, n + 4, out, &err) == ZF_OK, "%s", err.msg);
    ck_assert_mem_eq(out, want, 120);
    zf_chain_clear(&c);
}
END_TEST

START_TEST(test_optional_nested)
{
    /* optional(optional(uint16)) and three levels of uint8 */
    uint64_t shape[2] = {3, 3};
    const elem e2[9] = {{2, 10}, {1, 0}, {0, 0}, {2, 300}, {0, 0}, {2, 50}, {1, 0}, {2, 65535},
                        {1, 0}};
    zf_chunk_repr r = opt_repr("<u2", 2, shape);
    zf_codec_chain c = make_chain(
        "[{\"name\": \"optional\", \"configuration\": {\"mask_codecs\": [\"packbits\"], "
        "\"data_codecs\": [{\"name\": \"zarrs.optional\", \"configuration\": {\"mask_codecs\": "
        "[\"packbits\"], \"data_codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": "
        "\"little\"}}]}}]}}]",
        &r);
    ck_assert_uint_eq(zf_codec_optional_levels(c.codecs[0]), 2);
    uint8_t in[256], out[27], want[27];
    size_t n = encode_level(e2, 9, 0, 2, 2, in);
    expected(e2, 9, 2, 2, want);
    zf_err err = {""};
    ck_assert_msg(zf_chain_decode(&c, &r, in, n, out, &err) == ZF_OK, "%s", err.msg);
    ck_assert_mem_eq(out, want, 27);
    zf_chain_clear(&c);

    const elem e3[9] = {{3, 1}, {2, 0}, {1, 0}, {0, 0}, {3, 200}, {3, 255}, {2, 0}, {0, 0},
                        {1, 0}};
    zf_chunk_repr r8 = opt_repr("|u1", 2, shape);
    c = make_chain(
        "[{\"name\": \"optional\", \"configuration\": {\"mask_codecs\": [\"packbits\"], "
        "\"data_codecs\": [{\"name\": \"optional\", \"configuration\": {\"mask_codecs\": "
        "[\"packbits\"], \"data_codecs\": [{\"name\": \"optional\", \"configuration\": "
        "{\"mask_codecs\": [\"packbits\"], \"data_codecs\": [\"bytes\"]}}]}}]}}]",
        &r8);
    ck_assert_uint_eq(zf_codec_optional_levels(c.codecs[0]), 3);
    uint8_t out8[18], want8[18];
    n = encode_level(e3, 9, 0, 3, 1, in);
    expected(e3, 9, 3, 1, want8);
    ck_assert_msg(zf_chain_decode(&c, &r8, in, n, out8, &err) == ZF_OK, "%s", err.msg);
    ck_assert_mem_eq(out8, want8, 18);
    zf_chain_clear(&c);
}
END_TEST

START_TEST(test_optional_config)
{
    uint64_t shape[1] = {4};
    zf_chunk_repr r = opt_repr("<i4", 1, shape);
    zf_chunk_repr plain = tu_repr_of("<i4", 1, shape);
    zf_err err = {""};
    /* an optional codec for a data type that is not optional */
    ck_assert_int_eq(chain_status(OPT_I32, &plain, &err), ZF_ERR_INVALID);
    /* a plain bytes codec for an optional one */
    ck_assert_int_eq(chain_status("[{\"name\": \"bytes\", \"configuration\": {\"endian\": "
                                  "\"little\"}}]", &r, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(chain_status("[{\"name\": \"optional\", \"configuration\": "
                                  "{\"data_codecs\": [\"bytes\"]}}]", &r, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(chain_status("[{\"name\": \"optional\", \"configuration\": {\"mask_codecs\": "
                                  "[\"packbits\"], \"data_codecs\": [], \"x\": 1}}]", &r, &err),
                     ZF_ERR_INVALID);
    ck_assert_int_eq(chain_status("[{\"name\": \"optional\", \"configuration\": {\"mask_codecs\": "
                                  "[\"packbits\"], \"data_codecs\": [\"nope\"]}}]", &r, &err),
                     ZF_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(err.msg, "nope") && strstr(err.msg, "data_codecs"), "%s", err.msg);
    /* no array -> bytes codec in the data chain */
    ck_assert_int_eq(chain_status("[{\"name\": \"optional\", \"configuration\": {\"mask_codecs\": "
                                  "[\"packbits\"], \"data_codecs\": []}}]", &r, &err),
                     ZF_ERR_INVALID);
    /* sharding of the present elements (their count varies by chunk) */
    ck_assert_int_eq(chain_status("[{\"name\": \"optional\", \"configuration\": {\"mask_codecs\": "
                                  "[\"packbits\"], \"data_codecs\": [{\"name\": "
                                  "\"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2], "
                                  "\"codecs\": [{\"name\": \"bytes\", \"configuration\": "
                                  "{\"endian\": \"little\"}}], \"index_codecs\": [{\"name\": "
                                  "\"bytes\", \"configuration\": {\"endian\": \"little\"}}]}}]}}]",
                                  &r, &err), ZF_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(err.msg, "sharding the present"), "%s", err.msg);
    /* a nested optional codec that is not the first data codec */
    ck_assert_int_ne(chain_status("[{\"name\": \"optional\", \"configuration\": {\"mask_codecs\": "
                                  "[\"packbits\"], \"data_codecs\": [\"transpose\", "
                                  "{\"name\": \"optional\", \"configuration\": {\"mask_codecs\": "
                                  "[\"packbits\"], \"data_codecs\": [\"bytes\"]}}]}}]", &r, &err),
                     ZF_OK);
}
END_TEST

Suite *codec_optional_suite(void)
{
    Suite *s = suite_create("codec-optional");
    TCase *tc = tcase_create("packbits-and-optional");
    tcase_add_test(tc, test_packbits_bool);
    tcase_add_test(tc, test_packbits_bits);
    tcase_add_test(tc, test_optional_decode);
    tcase_add_test(tc, test_optional_compressed);
    tcase_add_test(tc, test_optional_nested);
    tcase_add_test(tc, test_optional_config);
    suite_add_tcase(s, tc);
    return s;
}
