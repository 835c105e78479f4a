/* test_encode_v3.c — the encode direction of the Zarr v3 codecs bytes, transpose, the checksum
 * codecs (crc32, adler32, crc32c) and sharding_indexed.
 *
 * Where the expected values come from (never from our own encoder):
 * - bytes: the element layouts of v3 codecs "Bytes codec" ("Format and algorithm"): each numeric
 *   component (the item; each half of a complex; each UTF-32 code unit) reversed for big endian,
 *   computed here byte by byte; plus a few literal byte strings;
 * - transpose: the encoded array's element at index e is the decoded one at d, d[order[i]] = e[i]
 *   (v3 codecs "Transpose codec"), by plain index arithmetic here;
 * - crc32/adler32: numcodecs 0.11 run with Debian's /usr/bin/python3 ($ZARRFS_NUMCODECS_PYTHON),
 *   and the standard check values of "123456789" (CRC-32 0xCBF43926, Adler-32 0x091E01DE);
 * - crc32c: the check value 0xE3069283 of "123456789" and CRC-32C computed bit by bit (RFC 3720);
 * - sharding: the "Binary shard format" of v3 codecs "Sharding codec", parsed by hand here
 *   (index = little-endian uint64 (offset, nbytes) pairs in C order of the chunks-per-shard grid,
 *   at the start or end, optionally followed by its CRC-32C), with the inner chunks cut out of
 *   the shard by index arithmetic and encoded by hand; every shard is also decoded with our
 *   decoder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "codec_impl.h"
#include "testutil.h"

/* --- helpers --- */

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

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Pseudo-random bytes (xorshift), so that no two elements are alike. */
static void rand_fill(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (uint8_t)(x >> 11);
    }
}


static zf_codec_chain chain_ok(const char *json, const zf_chunk_repr *r, const void *fill)
{
    yajl_val v = tu_json(json);
    zf_codec_chain chain = {0, NULL};
    zf_err err = {""};
    zf_status st = zf_chain_from_v3(v, ZF_CODECS_V3, r, fill, &chain, &err);
    yajl_tree_free(v);
    ck_assert_msg(st == ZF_OK, "%s: %s (%s)", json, zf_status_str(st), err.msg);
    return chain;
}

/* Encode in with chain (asserting success); the caller frees the result. */
static uint8_t *encode_ok(const zf_codec_chain *chain, const zf_chunk_repr *r, const void *in,
                          unsigned flags, size_t *len, const char *what)
{
    uint8_t *out = NULL;
    zf_err err = {""};
    zf_status st = zf_chain_encode(chain, r, in, flags, &out, len, &err);
    ck_assert_msg(st == ZF_OK, "%s: encode: %s (%s)", what, zf_status_str(st), err.msg);
    ck_assert_ptr_nonnull(out);
    return out;
}

/* Decode enc with chain and assert it gives back r->nbytes of `expected`. */
static void decode_expect(const zf_codec_chain *chain, const zf_chunk_repr *r, const uint8_t *enc,
                          size_t enc_len, const void *expected, const char *what)
{
    uint8_t *out = malloc(r->nbytes + 1);
    zf_err err = {""};
    zf_status st = zf_chain_decode(chain, r, enc, enc_len, out, &err);
    ck_assert_msg(st == ZF_OK, "%s: decode: %s (%s)", what, zf_status_str(st), err.msg);
    ck_assert_msg(memcmp(out, expected, r->nbytes) == 0, "%s: decode differs", what);
    free(out);
}

/* C-order index arithmetic. */
static void unravel(size_t k, const uint64_t *shape, unsigned nd, uint64_t *idx)
{
    for (unsigned d = nd; d-- > 0;) {
        idx[d] = k % shape[d];
        k /= shape[d];
    }
}

static size_t ravel(const uint64_t *idx, const uint64_t *shape, unsigned nd)
{
    size_t k = 0;
    for (unsigned d = 0; d < nd; d++)
        k = k * (size_t)shape[d] + (size_t)idx[d];
    return k;
}

static size_t prod(const uint64_t *shape, unsigned nd)
{
    size_t n = 1;
    for (unsigned d = 0; d < nd; d++)
        n *= (size_t)shape[d];
    return n;
}

/* The transposed array (encoded axis i = decoded axis order[i]), element by element. */
static void naive_transpose(const uint8_t *in, const uint64_t *shape, unsigned nd,
                            const unsigned *order, size_t is, uint8_t *out)
{
    uint64_t eshape[ZF_MAX_DIMS], e[ZF_MAX_DIMS], d[ZF_MAX_DIMS];
    for (unsigned i = 0; i < nd; i++)
        eshape[i] = shape[order[i]];
    size_t n = prod(shape, nd);
    for (size_t k = 0; k < n; k++) {
        unravel(k, eshape, nd, e);
        for (unsigned i = 0; i < nd; i++)
            d[order[i]] = e[i];
        memcpy(out + k * is, in + ravel(d, shape, nd) * is, is);
    }
}

/* Inner chunk k (C order of the grid shard/chunk) cut out of a C-order shard. */
static void naive_gather(const uint8_t *shard, const uint64_t *shard_shape,
                         const uint64_t *chunk_shape, unsigned nd, size_t k, size_t is,
                         uint8_t *out)
{
    uint64_t grid[ZF_MAX_DIMS] = {0}, c[ZF_MAX_DIMS], l[ZF_MAX_DIMS], g[ZF_MAX_DIMS];
    for (unsigned d = 0; d < nd; d++)
        grid[d] = shard_shape[d] / chunk_shape[d];
    unravel(k, grid, nd, c);
    size_t n = prod(chunk_shape, nd);
    for (size_t e = 0; e < n; e++) {
        unravel(e, chunk_shape, nd, l);
        for (unsigned d = 0; d < nd; d++)
            g[d] = c[d] * chunk_shape[d] + l[d];
        memcpy(out + e * is, shard + ravel(g, shard_shape, nd) * is, is);
    }
}

/* Each of the len / unit components reversed. */
static void swap_units(const uint8_t *in, uint8_t *out, size_t len, size_t unit)
{
    for (size_t i = 0; i < len; i += unit)
        for (size_t b = 0; b < unit; b++)
            out[i + b] = in[i + unit - 1 - b];
}

/* --- bytes --- */

/* The byte-order component of a data type, per "Bytes codec": not our zf_bytes_swap_unit. */
static size_t component(const char *typestr, size_t itemsize)
{
    switch (typestr[1]) {
    case 'b':
    case 'S':
    case 'V': return 1;
    case 'c': return itemsize / 2;
    case 'U': return 4;
    default: return itemsize;
    }
}

START_TEST(test_bytes_roundtrip)
{
    static const char *const types[] = {"|b1",    "|i1",    "<i2",  "<i4", "<i8", "|u1", "<u2",
                                        "<u4",    "<u8",    "<f2",  "<f4", "<f8", "<c8", "<c16",
                                        "<M8[ns]", "<m8[s]", "|S5", "<U3", "|V6"};
    static const uint64_t shape[] = {3, 4};
    for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
        for (int big = 0; big < 2; big++) {
            zf_chunk_repr r = tu_repr_of(types[t], 2, shape);
            char json[128];
            snprintf(json, sizeof json,
                     "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"%s\"}}]",
                     big ? "big" : "little");
            zf_codec_chain ch = chain_ok(json, &r, NULL);
            uint8_t *in = malloc(r.nbytes), *want = malloc(r.nbytes);
            rand_fill(in, r.nbytes, (uint32_t)(t * 2 + (size_t)big + 1));
            if (types[t][1] == 'b') /* bool: 0 or 1 */
                for (size_t i = 0; i < r.nbytes; i++)
                    in[i] &= 1;
            size_t unit = component(types[t], r.dtype.itemsize);
            if (big && unit > 1)
                swap_units(in, want, r.nbytes, unit);
            else
                memcpy(want, in, r.nbytes);
            char what[160];
            snprintf(what, sizeof what, "%s %s", types[t], json);
            size_t len;
            uint8_t *enc = encode_ok(&ch, &r, in, 0, &len, what);
            ck_assert_uint_eq(len, r.nbytes);
            ck_assert_msg(memcmp(enc, want, len) == 0, "%s: wrong encoding", what);
            decode_expect(&ch, &r, enc, len, in, what);
            free(enc);
            free(in);
            free(want);
            zf_chain_clear(&ch);
        }
    }
}
END_TEST

START_TEST(test_bytes_literals)
{
    /* <i4 0x01020304, -2 */
    uint64_t n2[] = {2};
    zf_chunk_repr r = tu_repr_of("<i4", 1, n2);
    uint8_t i4[] = {4, 3, 2, 1, 0xfe, 0xff, 0xff, 0xff};
    uint8_t i4_be[] = {1, 2, 3, 4, 0xff, 0xff, 0xff, 0xfe};
    zf_codec_chain ch =
        chain_ok("[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}]", &r, NULL);
    size_t len;
    uint8_t *enc = encode_ok(&ch, &r, i4, 0, &len, "<i4 big");
    ck_assert_uint_eq(len, 8);
    ck_assert_mem_eq(enc, i4_be, 8);
    free(enc);
    zf_chain_clear(&ch);

    /* <c8 (1 + 2j): two float32, each big endian, real part first. */
    uint64_t n1[] = {1};
    r = tu_repr_of("<c8", 1, n1);
    uint8_t c8[] = {0, 0, 0x80, 0x3f, 0, 0, 0, 0x40};
    uint8_t c8_be[] = {0x3f, 0x80, 0, 0, 0x40, 0, 0, 0};
    ch = chain_ok("[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}]", &r, NULL);
    enc = encode_ok(&ch, &r, c8, 0, &len, "<c8 big");
    ck_assert_uint_eq(len, 8);
    ck_assert_mem_eq(enc, c8_be, 8);
    free(enc);
    zf_chain_clear(&ch);

    /* <U2 "AB": two UTF-32 code units, each big endian. */
    r = tu_repr_of("<U2", 1, n1);
    uint8_t u2[] = {'A', 0, 0, 0, 'B', 0, 0, 0};
    uint8_t u2_be[] = {0, 0, 0, 'A', 0, 0, 0, 'B'};
    ch = chain_ok("[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}]", &r, NULL);
    enc = encode_ok(&ch, &r, u2, 0, &len, "<U2 big");
    ck_assert_uint_eq(len, 8);
    ck_assert_mem_eq(enc, u2_be, 8);
    free(enc);
    zf_chain_clear(&ch);

    /* A single-byte type needs no "endian". */
    uint64_t n3[] = {3};
    r = tu_repr_of("|u1", 1, n3);
    ch = chain_ok("[{\"name\": \"bytes\"}]", &r, NULL);
    enc = encode_ok(&ch, &r, "xyz", 0, &len, "|u1");
    ck_assert_uint_eq(len, 3);
    ck_assert_mem_eq(enc, "xyz", 3);
    free(enc);
    zf_chain_clear(&ch);

    /* A big-endian decoded type (as a v2-style buffer would be) stored little endian. */
    zf_codec *c;
    ck_assert_int_eq(zf_codec_bytes_make(false, &c), ZF_OK);
    r = tu_repr_of(">i4", 1, n2);
    uint8_t *out;
    zf_err err = {""};
    ck_assert_int_eq(c->ops->encode(c, &r, i4_be, 8, 0, &out, &len, &err), ZF_OK);
    ck_assert_uint_eq(len, 8);
    ck_assert_mem_eq(out, i4, 8);
    free(out);
    /* A wrong input size is refused. */
    out = (uint8_t *)&len;
    ck_assert_int_eq(c->ops->encode(c, &r, i4_be, 7, 0, &out, &len, &err), ZF_ERR_INVALID);
    zf_codec_free(c);
}
END_TEST

/* --- transpose --- */

START_TEST(test_transpose_roundtrip)
{
    static const struct {
        unsigned nd;
        uint64_t shape[4];
        unsigned order[4];
    } cases[] = {
        {2, {5, 7}, {1, 0}},
        {2, {1, 9}, {1, 0}},
        {2, {40, 33}, {1, 0}}, /* more than one tile */
        {3, {3, 4, 5}, {2, 1, 0}},
        {3, {3, 4, 5}, {0, 2, 1}},
        {3, {3, 4, 5}, {1, 2, 0}},
        {3, {3, 4, 5}, {2, 0, 1}},
        {3, {3, 4, 5}, {1, 0, 2}},
        {3, {3, 1, 5}, {2, 1, 0}},
        {3, {3, 4, 5}, {0, 1, 2}},
        {4, {2, 3, 4, 5}, {3, 1, 0, 2}},
        {4, {2, 3, 4, 5}, {3, 2, 1, 0}},
        {4, {2, 3, 4, 5}, {0, 3, 2, 1}},
        {4, {2, 1, 4, 3}, {1, 3, 0, 2}},
        {4, {3, 4, 2, 5}, {2, 3, 0, 1}},
    };
    static const char *const types[] = {"|u1", "<i2", "<f4", "<i8", "|S3", "<c16"};
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
            unsigned nd = cases[ci].nd;
            const unsigned *order = cases[ci].order;
            zf_chunk_repr r = tu_repr_of(types[t], nd, cases[ci].shape);
            char json[256], ord[64] = "";
            for (unsigned i = 0; i < nd; i++)
                snprintf(ord + strlen(ord), sizeof ord - strlen(ord), "%s%u", i ? ", " : "",
                         order[i]);
            snprintf(json, sizeof json,
                     "[{\"name\": \"transpose\", \"configuration\": {\"order\": [%s]}}, "
                     "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]",
                     ord);
            zf_codec_chain ch = chain_ok(json, &r, NULL);
            uint8_t *in = malloc(r.nbytes), *want = malloc(r.nbytes);
            rand_fill(in, r.nbytes, (uint32_t)(ci * 16 + t));
            naive_transpose(in, cases[ci].shape, nd, order, r.dtype.itemsize, want);
            char what[320];
            snprintf(what, sizeof what, "%s %s", types[t], json);
            size_t len;
            uint8_t *enc = encode_ok(&ch, &r, in, 0, &len, what);
            ck_assert_uint_eq(len, r.nbytes);
            ck_assert_msg(memcmp(enc, want, len) == 0, "%s: wrong encoding", what);
            decode_expect(&ch, &r, enc, len, in, what);
            free(enc);

            /* The codec alone (as v2's order "F" builds it). */
            zf_codec *c;
            zf_err err = {""};
            ck_assert_int_eq(zf_codec_transpose_new(nd, order, &c, &err), ZF_OK);
            ck_assert_int_eq(c->ops->encode(c, &r, in, r.nbytes, 0, &enc, &len, &err), ZF_OK);
            ck_assert_uint_eq(len, r.nbytes);
            ck_assert_msg(memcmp(enc, want, len) == 0, "%s: wrong encoding (codec)", what);
            free(enc);
            zf_codec_free(c);
            free(in);
            free(want);
            zf_chain_clear(&ch);
        }
    }
}
END_TEST

START_TEST(test_transpose_literal)
{
    /* [[0, 1, 2], [3, 4, 5]] with order [1, 0] is [[0, 3], [1, 4], [2, 5]]. */
    uint64_t shape[] = {2, 3};
    zf_chunk_repr r = tu_repr_of("|u1", 2, shape);
    unsigned order[] = {1, 0};
    zf_codec *c;
    zf_err err = {""};
    ck_assert_int_eq(zf_codec_transpose_new(2, order, &c, &err), ZF_OK);
    uint8_t in[] = {0, 1, 2, 3, 4, 5}, want[] = {0, 3, 1, 4, 2, 5}, *out;
    size_t len;
    ck_assert_int_eq(c->ops->encode(c, &r, in, 6, 0, &out, &len, &err), ZF_OK);
    ck_assert_uint_eq(len, 6);
    ck_assert_mem_eq(out, want, 6);
    free(out);
    /* Bytes that do not fit the shape. */
    ck_assert_int_eq(c->ops->encode(c, &r, in, 5, 0, &out, &len, &err), ZF_ERR_INVALID);
    zf_codec_free(c);
}
END_TEST

/* --- checksums --- */

/* Run numcodecs (CRC32 and Adler32) on the payloads; true when it ran. outs[i][0] = crc32,
 * outs[i][1] = adler32 encodings (malloc'd). */
#define NC_PAYLOADS 4
static bool numcodecs_checksums(const uint8_t *const *payloads, const size_t *lens,
                                uint8_t *outs[][2], size_t out_lens[][2])
{
    const char *python = getenv("ZARRFS_NUMCODECS_PYTHON");
    if (!python)
        python = "/usr/bin/python3";
    char dir[] = "/tmp/zarrfs-enc-v3-XXXXXX";
    if (!mkdtemp(dir))
        return false;
    char path[256];
    for (int i = 0; i < NC_PAYLOADS; i++) {
        snprintf(path, sizeof path, "%s/p%d", dir, i);
        FILE *f = fopen(path, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(payloads[i], 1, lens[i], f), lens[i]);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/run.py", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "import sys, numcodecs\n"
               "d = sys.argv[1]\n"
               "for i in range(%d):\n"
               "    b = open(f'{d}/p{i}', 'rb').read()\n"
               "    open(f'{d}/crc32_{i}', 'wb').write(bytes(numcodecs.CRC32().encode(b)))\n"
               "    open(f'{d}/adler32_{i}', 'wb').write(bytes(numcodecs.Adler32().encode(b)))\n",
            NC_PAYLOADS);
    fclose(f);
    bool ok = false;
    if (!strchr(python, '\'')) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "'%s' '%s' '%s'", python, path, dir);
        int rc = system(cmd);
        ok = rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0;
    }
    for (int i = 0; i < NC_PAYLOADS; i++) {
        const char *names[2] = {"crc32", "adler32"};
        for (int k = 0; k < 2; k++) {
            snprintf(path, sizeof path, "%s/%s_%d", dir, names[k], i);
            outs[i][k] = ok ? tu_read_file(path, &out_lens[i][k]) : NULL;
            if (ok)
                ck_assert_msg(outs[i][k] != NULL, "numcodecs wrote no %s", path);
            remove(path);
        }
        snprintf(path, sizeof path, "%s/p%d", dir, i);
        remove(path);
    }
    snprintf(path, sizeof path, "%s/run.py", dir);
    remove(path);
    rmdir(dir);
    return ok;
}

START_TEST(test_checksum32_numcodecs)
{
    static uint8_t big[100000], small[1000];
    tu_fill(big, sizeof big, 7);
    rand_fill(small, sizeof small, 3);
    const uint8_t *payloads[NC_PAYLOADS] = {(const uint8_t *)"", (const uint8_t *)"123456789",
                                            small, big};
    size_t lens[NC_PAYLOADS] = {0, 9, sizeof small, sizeof big};
    zf_codec *cs[2] = {tu_codec("{\"id\": \"crc32\"}"), tu_codec("{\"id\": \"adler32\"}")};
    uint8_t *enc[NC_PAYLOADS][2];
    size_t enc_len[NC_PAYLOADS][2];
    for (int i = 0; i < NC_PAYLOADS; i++) {
        zf_chunk_repr r;
        zf_repr_bytes(&r, lens[i]);
        for (int k = 0; k < 2; k++) {
            zf_err err = {""};
            ck_assert_int_eq(cs[k]->ops->encode(cs[k], &r, payloads[i], lens[i], 0, &enc[i][k],
                                                &enc_len[i][k], &err),
                             ZF_OK);
            ck_assert_uint_eq(enc_len[i][k], lens[i] + 4);
            /* Checksum first, then the payload (numcodecs' Checksum32). */
            ck_assert_mem_eq(enc[i][k] + 4, payloads[i], lens[i]);
            uint32_t want = k == 0 ? (uint32_t)crc32(0, payloads[i], (uInt)lens[i])
                                   : (uint32_t)adler32(1, payloads[i], (uInt)lens[i]);
            ck_assert_uint_eq(get_le32(enc[i][k]), want);
            /* And it decodes. */
            uint8_t *dec = malloc(lens[i] + 1);
            ck_assert_int_eq(tu_decode(cs[k], enc[i][k], enc_len[i][k], dec, lens[i], &err),
                             ZF_OK);
            ck_assert_mem_eq(dec, payloads[i], lens[i]);
            free(dec);
        }
    }
    /* The standard check values. */
    ck_assert_uint_eq(get_le32(enc[1][0]), 0xCBF43926u);
    ck_assert_uint_eq(get_le32(enc[1][1]), 0x091E01DEu);
    ck_assert_uint_eq(get_le32(enc[0][1]), 1); /* Adler-32 of nothing */

    uint8_t *nc[NC_PAYLOADS][2];
    size_t nc_len[NC_PAYLOADS][2];
    if (numcodecs_checksums(payloads, lens, nc, nc_len)) {
        for (int i = 0; i < NC_PAYLOADS; i++)
            for (int k = 0; k < 2; k++) {
                ck_assert_msg(nc_len[i][k] == enc_len[i][k] &&
                                  memcmp(nc[i][k], enc[i][k], enc_len[i][k]) == 0,
                              "%s of payload %d differs from numcodecs'",
                              k ? "adler32" : "crc32", i);
                free(nc[i][k]);
            }
    } else {
        printf("encode_v3: numcodecs not available; crc32/adler32 checked against zlib only\n");
    }
    for (int i = 0; i < NC_PAYLOADS; i++)
        for (int k = 0; k < 2; k++)
            free(enc[i][k]);
    zf_codec_free(cs[0]);
    zf_codec_free(cs[1]);

    /* "location": "end" puts it after the payload. */
    zf_codec *c = tu_codec("{\"id\": \"crc32\", \"location\": \"end\"}");
    zf_chunk_repr r;
    zf_repr_bytes(&r, 9);
    uint8_t *out;
    size_t len;
    zf_err err = {""};
    ck_assert_int_eq(c->ops->encode(c, &r, (const uint8_t *)"123456789", 9, 0, &out, &len, &err), ZF_OK);
    ck_assert_uint_eq(len, 13);
    ck_assert_mem_eq(out, "123456789", 9);
    ck_assert_uint_eq(get_le32(out + 9), 0xCBF43926u);
    free(out);
    zf_codec_free(c);
}
END_TEST

START_TEST(test_crc32c_encode)
{
    /* v3 crc32c: the payload, then its CRC-32C little endian. */
    uint64_t n9[] = {9};
    zf_chunk_repr r = tu_repr_of("|u1", 1, n9);
    zf_codec_chain ch = chain_ok("[{\"name\": \"bytes\"}, {\"name\": \"crc32c\"}]", &r, NULL);
    size_t len;
    uint8_t *enc = encode_ok(&ch, &r, "123456789", 0, &len, "crc32c");
    static const uint8_t want[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9',
                                   0x83, 0x92, 0x06, 0xE3};
    ck_assert_uint_eq(len, sizeof want);
    ck_assert_mem_eq(enc, want, sizeof want);
    decode_expect(&ch, &r, enc, len, "123456789", "crc32c");
    free(enc);
    zf_chain_clear(&ch);

    /* numcodecs' crc32c (the same, "location" end by default; "start" on request). */
    zf_codec *c = tu_codec("{\"id\": \"crc32c\", \"location\": \"start\"}");
    zf_repr_bytes(&r, 9);
    zf_err err = {""};
    ck_assert_int_eq(c->ops->encode(c, &r, (const uint8_t *)"123456789", 9, 0, &enc, &len, &err), ZF_OK);
    ck_assert_uint_eq(len, 13);
    ck_assert_uint_eq(get_le32(enc), 0xE3069283u);
    ck_assert_mem_eq(enc + 4, "123456789", 9);
    free(enc);
    zf_codec_free(c);

    /* A longer chain: transpose, big-endian bytes, crc32c over the lot. */
    uint64_t shape[] = {4, 3, 5};
    r = tu_repr_of("<f8", 3, shape);
    ch = chain_ok("[{\"name\": \"transpose\", \"configuration\": {\"order\": [2, 0, 1]}}, "
                  "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}, "
                  "{\"name\": \"crc32c\"}]",
                  &r, NULL);
    uint8_t *in = malloc(r.nbytes), *t = malloc(r.nbytes), *w = malloc(r.nbytes + 4);
    rand_fill(in, r.nbytes, 99);
    unsigned order[] = {2, 0, 1};
    naive_transpose(in, shape, 3, order, 8, t);
    swap_units(t, w, r.nbytes, 8);
    tu_put_le32(w + r.nbytes, crc32c_ref(w, r.nbytes));
    enc = encode_ok(&ch, &r, in, 0, &len, "transpose+bytes+crc32c");
    ck_assert_uint_eq(len, r.nbytes + 4);
    ck_assert_mem_eq(enc, w, len);
    decode_expect(&ch, &r, enc, len, in, "transpose+bytes+crc32c");
    free(enc);
    free(in);
    free(t);
    free(w);
    zf_chain_clear(&ch);
}
END_TEST

/* --- sharding --- */

#define EMPTY64 UINT64_MAX

/* Check a shard's layout by hand: the index (n pairs, then a CRC-32C if crc) at the start or the
 * end, pairs in C order, non-empty chunks back to back in C order filling everything but the
 * index. pairs receives the 2n values. */
static void parse_shard(const uint8_t *shard, size_t len, size_t n, bool at_end, bool crc,
                        uint64_t *pairs, const char *what)
{
    size_t ixlen = 16 * n + (crc ? 4 : 0);
    ck_assert_msg(len >= ixlen, "%s: shard of %zu bytes, index %zu", what, len, ixlen);
    const uint8_t *ix = at_end ? shard + len - ixlen : shard;
    if (crc)
        ck_assert_msg(get_le32(ix + 16 * n) == crc32c_ref(ix, 16 * n), "%s: index crc32c",
                      what);
    size_t cursor = at_end ? 0 : ixlen;
    for (size_t k = 0; k < n; k++) {
        pairs[2 * k] = get_le64(ix + 16 * k);
        pairs[2 * k + 1] = get_le64(ix + 16 * k + 8);
        if (pairs[2 * k] == EMPTY64) {
            ck_assert_msg(pairs[2 * k + 1] == EMPTY64, "%s: chunk %zu half empty", what, k);
            continue;
        }
        ck_assert_msg(pairs[2 * k] == cursor, "%s: chunk %zu at %llu, expected %zu", what, k,
                      (unsigned long long)pairs[2 * k], cursor);
        cursor += (size_t)pairs[2 * k + 1];
    }
    ck_assert_msg(cursor == (at_end ? len - ixlen : len),
                  "%s: chunks end at %zu, the data part of the shard at %zu", what, cursor,
                  at_end ? len - ixlen : len);
}

/* The inner chains the sharding tests use, and their encodings computed here. */
enum inner_kind { INNER_LE, INNER_BE_CRC, INNER_T_LE };

static const char *inner_json(enum inner_kind kind)
{
    switch (kind) {
    case INNER_LE: return "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]";
    case INNER_BE_CRC:
        return "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}, "
               "{\"name\": \"crc32c\"}]";
    default:
        return "[{\"name\": \"transpose\", \"configuration\": {\"order\": [1, 0]}}, "
               "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]";
    }
}

/* Encoded inner chunk (decoded: n elements of itemsize is, C order, shape 2-D for INNER_T_LE). */
static size_t inner_expect(enum inner_kind kind, const uint8_t *chunk, const uint64_t *shape,
                           unsigned nd, size_t is, uint8_t *out)
{
    size_t nb = prod(shape, nd) * is;
    switch (kind) {
    case INNER_LE: memcpy(out, chunk, nb); return nb;
    case INNER_BE_CRC:
        swap_units(chunk, out, nb, is);
        tu_put_le32(out + nb, crc32c_ref(out, nb));
        return nb + 4;
    default: {
        unsigned order[] = {1, 0};
        naive_transpose(chunk, shape, nd, order, is, out);
        return nb;
    }
    }
}

typedef struct shard_case {
    const char *dtype;
    unsigned nd;
    uint64_t shard[4], chunk[4];
    enum inner_kind inner;
    bool at_end, index_crc;
    int fill;        /* fill value: every byte this */
    unsigned flags;
} shard_case;

static void sharding_json(char *json, size_t n, const shard_case *sc)
{
    char cs[64] = "";
    for (unsigned d = 0; d < sc->nd; d++)
        snprintf(cs + strlen(cs), sizeof cs - strlen(cs), "%s%llu", d ? ", " : "",
                 (unsigned long long)sc->chunk[d]);
    snprintf(json, n,
             "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [%s], "
             "\"codecs\": %s, \"index_codecs\": [{\"name\": \"bytes\", \"configuration\": "
             "{\"endian\": \"little\"}}%s], \"index_location\": \"%s\"}}]",
             cs, inner_json(sc->inner), sc->index_crc ? ", {\"name\": \"crc32c\"}" : "",
             sc->at_end ? "end" : "start");
}

/* Encode a whole shard of `data` per sc, check layout and contents by hand, decode it. empty[k]
 * says which inner chunks the test expects left out. */
static void shard_check(const shard_case *sc, const uint8_t *data, const bool *empty,
                        const char *what)
{
    zf_chunk_repr r = tu_repr_of(sc->dtype, sc->nd, sc->shard);
    size_t is = r.dtype.itemsize;
    uint8_t fill[16];
    memset(fill, sc->fill, sizeof fill);
    char json[1024];
    sharding_json(json, sizeof json, sc);
    zf_codec_chain ch = chain_ok(json, &r, fill);
    size_t len;
    uint8_t *shard = encode_ok(&ch, &r, data, sc->flags, &len, what);

    uint64_t grid[4];
    for (unsigned d = 0; d < sc->nd; d++)
        grid[d] = sc->shard[d] / sc->chunk[d];
    size_t n = prod(grid, sc->nd), inner_n = prod(sc->chunk, sc->nd) * is;
    uint64_t *pairs = malloc(2 * n * sizeof *pairs);
    parse_shard(shard, len, n, sc->at_end, sc->index_crc, pairs, what);
    uint8_t *chunk = malloc(inner_n), *want = malloc(inner_n + 4);
    for (size_t k = 0; k < n; k++) {
        if (empty[k]) {
            ck_assert_msg(pairs[2 * k] == EMPTY64, "%s: chunk %zu should be left out", what, k);
            continue;
        }
        ck_assert_msg(pairs[2 * k] != EMPTY64, "%s: chunk %zu left out", what, k);
        naive_gather(data, sc->shard, sc->chunk, sc->nd, k, is, chunk);
        size_t wl = inner_expect(sc->inner, chunk, sc->chunk, sc->nd, is, want);
        ck_assert_msg(pairs[2 * k + 1] == wl, "%s: chunk %zu of %llu bytes, expected %zu", what,
                      k, (unsigned long long)pairs[2 * k + 1], wl);
        ck_assert_msg(memcmp(shard + pairs[2 * k], want, wl) == 0, "%s: chunk %zu differs", what,
                      k);
    }
    decode_expect(&ch, &r, shard, len, data, what);
    free(chunk);
    free(want);
    free(pairs);
    free(shard);
    zf_chain_clear(&ch);
}

START_TEST(test_sharding_full)
{
    static const shard_case cases[] = {
        /* 1-D grid (inner chunks contiguous in the shard) */
        {"<i4", 2, {4, 6}, {2, 6}, INNER_LE, false, false, 0, 0},
        {"<i4", 2, {4, 6}, {2, 6}, INNER_LE, true, true, 0, 0},
        /* 2-D inner grids */
        {"<i4", 2, {4, 6}, {2, 3}, INNER_LE, false, false, 0, 0},
        {"<i4", 2, {4, 6}, {2, 3}, INNER_LE, true, false, 0, 0},
        {"<i4", 2, {4, 6}, {2, 3}, INNER_LE, false, true, 0, 0},
        {"<i4", 2, {4, 6}, {2, 3}, INNER_LE, true, true, 0, 0},
        {"<u2", 2, {6, 8}, {3, 2}, INNER_BE_CRC, true, true, 0, 0},
        {"<u2", 2, {6, 8}, {3, 2}, INNER_BE_CRC, false, false, 0, 0},
        {"<f8", 2, {6, 8}, {3, 2}, INNER_T_LE, true, true, 0, 0},
        {"<f8", 2, {6, 8}, {3, 2}, INNER_T_LE, false, true, 0, 0},
        {"|u1", 2, {8, 8}, {1, 1}, INNER_LE, true, true, 0, 0},
        /* 3-D */
        {"<i8", 3, {2, 4, 6}, {1, 2, 3}, INNER_BE_CRC, true, true, 0, 0},
        {"<i2", 3, {4, 4, 4}, {2, 4, 2}, INNER_LE, false, true, 0, 0},
        /* one inner chunk */
        {"<u4", 2, {3, 5}, {3, 5}, INNER_BE_CRC, false, true, 0, 0},
    };
    bool none[64] = {false};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const shard_case *sc = &cases[i];
        zf_chunk_repr r = tu_repr_of(sc->dtype, sc->nd, sc->shard);
        uint8_t *data = malloc(r.nbytes);
        rand_fill(data, r.nbytes, (uint32_t)i + 100);
        char what[64];
        snprintf(what, sizeof what, "sharding case %zu", i);
        shard_check(sc, data, none, what);
        free(data);
    }
}
END_TEST

/* Fill-valued inner chunks: left out, or kept with ZF_ENCODE_WRITE_EMPTY. */
START_TEST(test_sharding_fill_chunks)
{
    for (int variant = 0; variant < 4; variant++) {
        shard_case sc = {"<i4", 2, {4, 6}, {2, 3}, INNER_BE_CRC, variant & 1, true, 0xff, 0};
        if (variant & 2)
            sc.flags = ZF_ENCODE_WRITE_EMPTY;
        int32_t data[24];
        for (int i = 0; i < 24; i++)
            data[i] = -1; /* the fill value (every byte 0xff) */
        /* chunk (0, 0): fill; (0, 1): all zero (not the fill value); (1, 0): fill but one
         * element; (1, 1): fill */
        data[0 * 6 + 3] = data[0 * 6 + 4] = data[0 * 6 + 5] = 0;
        data[1 * 6 + 3] = data[1 * 6 + 4] = data[1 * 6 + 5] = 0;
        data[3 * 6 + 2] = 7;
        bool empty[4] = {true, false, false, true};
        if (sc.flags & ZF_ENCODE_WRITE_EMPTY)
            memset(empty, 0, sizeof empty);
        char what[64];
        snprintf(what, sizeof what, "fill variant %d", variant);
        shard_check(&sc, (const uint8_t *)data, empty, what);
    }

    /* Every inner chunk the fill value: a shard of just the index, all entries empty. */
    shard_case sc = {"<f4", 2, {4, 4}, {2, 2}, INNER_LE, true, true, 0, 0};
    float zeros[16] = {0};
    bool all[4] = {true, true, true, true};
    shard_check(&sc, (const uint8_t *)zeros, all, "all fill");
    /* -0.0 is not the fill value's bytes: kept (decodes back to -0.0, not 0.0). */
    zeros[5] = -0.0f;
    all[0] = false;
    shard_check(&sc, (const uint8_t *)zeros, all, "negative zero");
}
END_TEST

/* A shard whose inner chunks are shards again. */
START_TEST(test_sharding_nested)
{
    for (int at_end = 0; at_end < 2; at_end++) {
        uint64_t shape[] = {8, 8};
        zf_chunk_repr r = tu_repr_of("<u2", 2, shape);
        uint8_t fill[2] = {0x34, 0x12}; /* 0x1234 */
        char json[2048];
        snprintf(json, sizeof json,
                 "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [4, 4], "
                 "\"codecs\": [{\"name\": \"sharding_indexed\", \"configuration\": "
                 "{\"chunk_shape\": [2, 2], \"codecs\": %s, \"index_codecs\": [{\"name\": "
                 "\"bytes\", \"configuration\": {\"endian\": \"little\"}}], \"index_location\": "
                 "\"%s\"}}], \"index_codecs\": [{\"name\": \"bytes\", \"configuration\": "
                 "{\"endian\": \"little\"}}, {\"name\": \"crc32c\"}], \"index_location\": \"%s\"}}]",
                 inner_json(INNER_BE_CRC), at_end ? "start" : "end", at_end ? "end" : "start");
        zf_codec_chain ch = chain_ok(json, &r, fill);
        uint16_t data[64];
        for (int i = 0; i < 64; i++)
            data[i] = (uint16_t)(i * 37 + 1);
        /* Outer chunk (0, 0) all fill (left out); in outer chunk (1, 1) the inner chunk (0, 1)
         * (elements [4..5, 6..7]) is fill (left out of the nested shard). */
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 4; x++)
                data[y * 8 + x] = 0x1234;
        data[4 * 8 + 6] = data[4 * 8 + 7] = data[5 * 8 + 6] = data[5 * 8 + 7] = 0x1234;
        size_t len;
        uint8_t *shard = encode_ok(&ch, &r, data, 0, &len, "nested");
        uint64_t outer[8], inner[8];
        parse_shard(shard, len, 4, at_end, true, outer, "nested (outer)");
        ck_assert(outer[0] == EMPTY64);
        uint64_t cshape[] = {4, 4}, ishape[] = {2, 2};
        for (size_t k = 1; k < 4; k++) {
            ck_assert(outer[2 * k] != EMPTY64);
            const uint8_t *sub = shard + outer[2 * k];
            size_t sub_len = (size_t)outer[2 * k + 1];
            parse_shard(sub, sub_len, 4, !at_end, false, inner, "nested (inner)");
            uint8_t chunk[32], ichunk[8], want[12];
            naive_gather((const uint8_t *)data, shape, cshape, 2, k, 2, chunk);
            for (size_t j = 0; j < 4; j++) {
                if (k == 3 && j == 1) {
                    ck_assert(inner[2 * j] == EMPTY64);
                    continue;
                }
                ck_assert(inner[2 * j] != EMPTY64);
                naive_gather(chunk, cshape, ishape, 2, j, 2, ichunk);
                size_t wl = inner_expect(INNER_BE_CRC, ichunk, ishape, 2, 2, want);
                ck_assert_uint_eq(inner[2 * j + 1], wl);
                ck_assert_mem_eq(sub + inner[2 * j], want, wl);
            }
        }
        decode_expect(&ch, &r, shard, len, data, "nested");
        free(shard);

        /* With ZF_ENCODE_WRITE_EMPTY, every level keeps everything. */
        shard = encode_ok(&ch, &r, data, ZF_ENCODE_WRITE_EMPTY, &len, "nested, write empty");
        parse_shard(shard, len, 4, at_end, true, outer, "nested write empty (outer)");
        for (size_t k = 0; k < 4; k++) {
            ck_assert(outer[2 * k] != EMPTY64);
            parse_shard(shard + outer[2 * k], (size_t)outer[2 * k + 1], 4, !at_end, false, inner,
                        "nested write empty (inner)");
            for (size_t j = 0; j < 4; j++)
                ck_assert(inner[2 * j] != EMPTY64);
        }
        decode_expect(&ch, &r, shard, len, data, "nested, write empty");
        free(shard);
        zf_chain_clear(&ch);
    }
}
END_TEST

/* Sharding inside a longer chain: a transpose before it, a crc32c after it. */
START_TEST(test_sharding_in_chain)
{
    uint64_t shape[] = {4, 6}, tshape[] = {6, 4}, ishape[] = {3, 2};
    zf_chunk_repr r = tu_repr_of("<i4", 2, shape);
    zf_codec_chain ch = chain_ok(
        "[{\"name\": \"transpose\", \"configuration\": {\"order\": [1, 0]}}, "
        "{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [3, 2], "
        "\"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}, "
        "{\"name\": \"crc32c\"}], \"index_codecs\": [{\"name\": \"bytes\", \"configuration\": "
        "{\"endian\": \"little\"}}], \"index_location\": \"start\"}}, {\"name\": \"crc32c\"}]",
        &r, NULL);
    int32_t data[24], t[24];
    for (int i = 0; i < 24; i++)
        data[i] = i % 7 == 0 ? 0 : 100 + i;
    /* Transposed chunk (1, 0) (rows 3..5, columns 0..1 of the [6, 4] transpose) is all 0, the
     * fill value: elements (0..1, 3..5) of the data. */
    for (int y = 0; y < 2; y++)
        for (int x = 3; x < 6; x++)
            data[y * 6 + x] = 0;
    unsigned order[] = {1, 0};
    naive_transpose((const uint8_t *)data, shape, 2, order, 4, (uint8_t *)t);
    size_t len;
    uint8_t *enc = encode_ok(&ch, &r, data, 0, &len, "sharding in a chain");
    ck_assert_uint_gt(len, 4);
    ck_assert_uint_eq(get_le32(enc + len - 4), crc32c_ref(enc, len - 4));
    uint64_t p[8];
    parse_shard(enc, len - 4, 4, false, false, p, "sharding in a chain");
    uint8_t chunk[24], want[28];
    for (size_t k = 0; k < 4; k++) {
        if (k == 2) {
            ck_assert(p[4] == EMPTY64);
            continue;
        }
        naive_gather((const uint8_t *)t, tshape, ishape, 2, k, 4, chunk);
        size_t wl = inner_expect(INNER_BE_CRC, chunk, ishape, 2, 4, want);
        ck_assert_uint_eq(p[2 * k + 1], wl);
        ck_assert_mem_eq(enc + p[2 * k], want, wl);
    }
    decode_expect(&ch, &r, enc, len, data, "sharding in a chain");
    free(enc);
    zf_chain_clear(&ch);
}
END_TEST

/* --- zf_sharding_encode_shard --- */

/* A sharding codec for <i4 shards [4, 6] in inner chunks [2, 3] (2 x 2 grid), fill 0. */
static zf_codec_chain encode_shard_chain(bool at_end, bool crc)
{
    shard_case sc = {"<i4", 2, {4, 6}, {2, 3}, INNER_BE_CRC, at_end, crc, 0, 0};
    char json[1024];
    sharding_json(json, sizeof json, &sc);
    zf_chunk_repr r = tu_repr_of("<i4", 2, sc.shard);
    static const uint8_t fill[4] = {0};
    return chain_ok(json, &r, fill);
}

/* The decoded shard [4, 6] with inner chunk k (2 x 3 C order) placed. */
static void place_chunk(int32_t *shard, size_t k, const int32_t *chunk)
{
    size_t cy = k / 2, cx = k % 2;
    for (size_t y = 0; y < 2; y++)
        for (size_t x = 0; x < 3; x++)
            shard[(cy * 2 + y) * 6 + cx * 3 + x] = chunk[y * 3 + x];
}

START_TEST(test_encode_shard_mixed)
{
    for (int loc = 0; loc < 4; loc++) {
        bool at_end = loc & 1, crc = loc & 2;
        zf_codec_chain ch = encode_shard_chain(at_end, crc);
        const zf_codec *c = ch.codecs[0];
        zf_sharding sd;
        ck_assert(zf_codec_sharding(c, &sd));
        size_t ixlen = sd.index_nbytes;
        ck_assert_uint_eq(ixlen, 64 + (crc ? 4 : 0));

        /* An old shard made by hand: inner chunks (0, 0), (0, 1), (1, 1) stored in reverse
         * order with junk between them, chunk (1, 0) empty. Each stored chunk is big-endian
         * int32 plus CRC-32C (28 bytes). */
        int32_t old_vals[4][6];
        for (int k = 0; k < 4; k++)
            for (int i = 0; i < 6; i++)
                old_vals[k][i] = 1000 * (k + 1) + i;
        uint8_t old[512];
        memset(old, 0xAB, sizeof old);
        uint64_t opairs[8] = {EMPTY64, EMPTY64, EMPTY64, EMPTY64,
                              EMPTY64, EMPTY64, EMPTY64, EMPTY64};
        size_t pos = at_end ? 5 : ixlen + 5;
        static const int stored[] = {3, 1, 0};
        for (int s = 0; s < 3; s++) {
            int k = stored[s];
            uint8_t enc[28];
            inner_expect(INNER_BE_CRC, (const uint8_t *)old_vals[k], (const uint64_t[]){2, 3}, 2,
                         4, enc);
            memcpy(old + pos, enc, 28);
            opairs[2 * k] = pos;
            opairs[2 * k + 1] = 28;
            pos += 28 + 3; /* a gap of junk */
        }
        size_t old_len = at_end ? pos + ixlen : pos;
        uint8_t *ix = at_end ? old + pos : old;
        for (int i = 0; i < 8; i++)
            tu_put_le64(ix + 8 * i, opairs[i]);
        if (crc)
            tu_put_le32(ix + 64, crc32c_ref(ix, 64));

        /* Its index, as the array layer reads it. */
        uint64_t oidx[8];
        zf_err err = {""};
        ck_assert_int_eq(zf_sharding_decode_index(c, at_end ? old + old_len - ixlen : old, ixlen,
                                                  old_len, oidx, &err),
                         ZF_OK);

        /* New: (0, 0) replaced, (0, 1) kept, (1, 0) new, (1, 1) replaced by fill (empty). */
        int32_t n0[6] = {-1, -2, -3, -4, -5, -6}, n2[6] = {7, 0, 0, 0, 0, 9}, n3[6] = {0};
        const uint8_t *chunks[4] = {(const uint8_t *)n0, NULL, (const uint8_t *)n2,
                                    (const uint8_t *)n3};
        uint8_t *out = NULL;
        size_t out_len = 0;
        bool empty = true;
        ck_assert_int_eq(
            zf_sharding_encode_shard(c, chunks, old, old_len, oidx, 0, &out, &out_len, &empty,
                                     &err),
            ZF_OK);
        ck_assert(!empty);
        uint64_t p[8];
        parse_shard(out, out_len, 4, at_end, crc, p, "mixed");
        uint8_t want[28];
        inner_expect(INNER_BE_CRC, (const uint8_t *)n0, (const uint64_t[]){2, 3}, 2, 4, want);
        ck_assert_uint_eq(p[1], 28);
        ck_assert_mem_eq(out + p[0], want, 28);
        /* Kept: byte for byte what the old shard holds at its old offset. */
        ck_assert_uint_eq(p[3], 28);
        ck_assert_mem_eq(out + p[2], old + opairs[2], 28);
        inner_expect(INNER_BE_CRC, (const uint8_t *)n2, (const uint64_t[]){2, 3}, 2, 4, want);
        ck_assert_uint_eq(p[5], 28);
        ck_assert_mem_eq(out + p[4], want, 28);
        ck_assert(p[6] == EMPTY64 && p[7] == EMPTY64);
        ck_assert_uint_eq(out_len, 3 * 28 + ixlen);

        int32_t whole[24] = {0};
        place_chunk(whole, 0, n0);
        place_chunk(whole, 1, old_vals[1]);
        place_chunk(whole, 2, n2);
        zf_chunk_repr r = tu_repr_of("<i4", 2, (const uint64_t[]){4, 6});
        decode_expect(&ch, &r, out, out_len, whole, "mixed");
        free(out);

        /* Keep everything: the old chunks in C order, contiguous, bytes unchanged; the empty
         * one stays empty. */
        const uint8_t *keep[4] = {NULL, NULL, NULL, NULL};
        ck_assert_int_eq(zf_sharding_encode_shard(c, keep, old, old_len, oidx, 0, &out, &out_len,
                                                  &empty, &err),
                         ZF_OK);
        ck_assert(!empty);
        parse_shard(out, out_len, 4, at_end, crc, p, "keep all");
        for (int k = 0; k < 4; k++) {
            if (k == 2) {
                ck_assert(p[4] == EMPTY64);
                continue;
            }
            ck_assert_uint_eq(p[2 * k + 1], 28);
            ck_assert_mem_eq(out + p[2 * k], old + opairs[2 * k], 28);
        }
        memset(whole, 0, sizeof whole);
        place_chunk(whole, 0, old_vals[0]);
        place_chunk(whole, 1, old_vals[1]);
        place_chunk(whole, 3, old_vals[3]);
        decode_expect(&ch, &r, out, out_len, whole, "keep all");
        free(out);

        /* ZF_ENCODE_WRITE_EMPTY keeps the fill-valued new chunk. */
        ck_assert_int_eq(zf_sharding_encode_shard(c, chunks, old, old_len, oidx,
                                                  ZF_ENCODE_WRITE_EMPTY, &out, &out_len, &empty,
                                                  &err),
                         ZF_OK);
        parse_shard(out, out_len, 4, at_end, crc, p, "mixed, write empty");
        ck_assert(p[6] != EMPTY64);
        inner_expect(INNER_BE_CRC, (const uint8_t *)n3, (const uint64_t[]){2, 3}, 2, 4, want);
        ck_assert_mem_eq(out + p[6], want, 28);
        free(out);

        /* No old shard: NULL chunks are empty. */
        const uint8_t *only2[4] = {NULL, NULL, (const uint8_t *)n2, NULL};
        ck_assert_int_eq(zf_sharding_encode_shard(c, only2, NULL, 0, NULL, 0, &out, &out_len,
                                                  &empty, &err),
                         ZF_OK);
        ck_assert(!empty);
        parse_shard(out, out_len, 4, at_end, crc, p, "no old shard");
        ck_assert(p[0] == EMPTY64 && p[2] == EMPTY64 && p[6] == EMPTY64 && p[4] != EMPTY64);
        free(out);
        zf_chain_clear(&ch);
    }
}
END_TEST

START_TEST(test_encode_shard_empty)
{
    zf_codec_chain ch = encode_shard_chain(true, true);
    const zf_codec *c = ch.codecs[0];
    zf_err err = {""};
    int32_t zero[6] = {0};
    const uint8_t *z = (const uint8_t *)zero;
    uint8_t *out;
    size_t len;
    bool empty = false;

    /* Every new chunk the fill value. */
    const uint8_t *fills[4] = {z, z, z, z};
    ck_assert_int_eq(zf_sharding_encode_shard(c, fills, NULL, 0, NULL, 0, &out, &len, &empty,
                                              &err),
                     ZF_OK);
    ck_assert(empty);
    uint64_t p[8];
    parse_shard(out, len, 4, true, true, p, "all empty");
    ck_assert_uint_eq(len, 68);
    for (int i = 0; i < 8; i++)
        ck_assert(p[i] == EMPTY64);
    free(out);

    /* Nothing new, no old shard. */
    const uint8_t *none[4] = {NULL, NULL, NULL, NULL};
    empty = false;
    ck_assert_int_eq(zf_sharding_encode_shard(c, none, NULL, 0, NULL, 0, &out, &len, &empty,
                                              &err),
                     ZF_OK);
    ck_assert(empty);
    free(out);

    /* Kept chunks that were empty, new ones fill: still empty. */
    uint64_t oidx[8];
    for (int i = 0; i < 8; i++)
        oidx[i] = EMPTY64;
    uint8_t old[68] = {0};
    const uint8_t *mix[4] = {NULL, z, NULL, z};
    empty = false;
    ck_assert_int_eq(zf_sharding_encode_shard(c, mix, old, sizeof old, oidx, 0, &out, &len,
                                              &empty, &err),
                     ZF_OK);
    ck_assert(empty);
    free(out);

    /* With ZF_ENCODE_WRITE_EMPTY, fill-valued chunks are written: not empty. */
    ck_assert_int_eq(zf_sharding_encode_shard(c, fills, NULL, 0, NULL, ZF_ENCODE_WRITE_EMPTY,
                                              &out, &len, &empty, &err),
                     ZF_OK);
    ck_assert(!empty);
    ck_assert_uint_eq(len, 68 + 4 * 28);
    free(out);
    zf_chain_clear(&ch);
}
END_TEST

START_TEST(test_encode_shard_corrupt_old)
{
    zf_codec_chain ch = encode_shard_chain(false, false);
    const zf_codec *c = ch.codecs[0];
    uint8_t old[100];
    memset(old, 1, sizeof old);
    int32_t vals[6] = {1, 2, 3, 4, 5, 6};
    const uint8_t *chunks[4] = {(const uint8_t *)vals, NULL, (const uint8_t *)vals, NULL};
    static const uint64_t bad[][2] = {
        {90, 11},               /* ends one past the old shard */
        {101, 0},               /* starts past it */
        {UINT64_MAX - 1, 4},    /* overflows */
        {0, UINT64_MAX - 1},    /* longer than the shard */
        {EMPTY64, 4},           /* half empty */
        {4, EMPTY64},           /* half empty */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        uint64_t oidx[8] = {EMPTY64, EMPTY64, 64, 28, EMPTY64, EMPTY64, bad[i][0], bad[i][1]};
        uint8_t *out = (uint8_t *)old;
        size_t len = 5;
        bool empty = true;
        zf_err err = {""};
        zf_status st = zf_sharding_encode_shard(c, chunks, old, sizeof old, oidx, 0, &out, &len,
                                                &empty, &err);
        ck_assert_msg(st == ZF_ERR_CORRUPT, "case %zu: %s (%s)", i, zf_status_str(st), err.msg);
        ck_assert_ptr_null(out);
        ck_assert_msg(strstr(err.msg, "(1, 1)") != NULL, "case %zu: %s", i, err.msg);
    }
    /* The same entry in bounds is fine: [72, 100) exactly reaches the end. */
    uint64_t oidx[8] = {EMPTY64, EMPTY64, 64, 28, EMPTY64, EMPTY64, 72, 28};
    uint8_t *out;
    size_t len;
    bool empty;
    zf_err err = {""};
    ck_assert_int_eq(zf_sharding_encode_shard(c, chunks, old, sizeof old, oidx, 0, &out, &len,
                                              &empty, &err),
                     ZF_OK);
    uint64_t p[8];
    parse_shard(out, len, 4, false, false, p, "in bounds");
    ck_assert_uint_eq(p[7], 28);
    ck_assert_mem_eq(out + p[6], old + 72, 28);
    free(out);

    /* Not a sharding codec. */
    zf_sharding sd;
    ck_assert(zf_codec_sharding(c, &sd));
    ck_assert_int_eq(zf_sharding_encode_shard(NULL, chunks, NULL, 0, NULL, 0, &out, &len,
                                              &empty, &err),
                     ZF_ERR_INVALID);
    ck_assert_int_eq(zf_sharding_encode_shard(sd.codecs->codecs[0], chunks, NULL, 0, NULL, 0,
                                              &out, &len, &empty, &err),
                     ZF_ERR_INVALID);
    zf_chain_clear(&ch);
}
END_TEST

/* The encode op refuses input that is not the shard it was built for; the default index
 * location is the end. */
START_TEST(test_sharding_encode_errors)
{
    uint64_t shape[] = {4};
    zf_chunk_repr r = tu_repr_of("<i4", 1, shape);
    zf_codec_chain ch =
        chain_ok("[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2], "
                 "\"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": "
                 "\"little\"}}], \"index_codecs\": [{\"name\": \"bytes\", \"configuration\": "
                 "{\"endian\": \"little\"}}]}}]",
                 &r, NULL);
    const zf_codec *c = ch.codecs[0];
    int32_t v[4] = {1, 2, 3, 4};
    uint8_t *out = (uint8_t *)v;
    size_t len = 1;
    zf_err err = {""};
    /* Wrong input size. */
    ck_assert_int_eq(c->ops->encode(c, &r, (const uint8_t *)v, 15, 0, &out, &len, &err),
                     ZF_ERR_INVALID);
    ck_assert_ptr_null(out);
    /* Another shard shape. */
    zf_chunk_repr r2 = tu_repr_of("<i4", 1, (const uint64_t[]){6});
    ck_assert_int_eq(c->ops->encode(c, &r2, (const uint8_t *)v, 24, 0, &out, &len, &err),
                     ZF_ERR_INVALID);
    /* The default index location is the end. */
    ck_assert_int_eq(c->ops->encode(c, &r, (const uint8_t *)v, 16, 0, &out, &len, &err), ZF_OK);
    uint64_t p[4];
    parse_shard(out, len, 2, true, false, p, "default location");
    ck_assert_uint_eq(len, 16 + 32);
    ck_assert_mem_eq(out, v, 16);
    free(out);
    zf_chain_clear(&ch);
}
END_TEST

Suite *codec_encode_v3_suite(void)
{
    Suite *s = suite_create("encode_v3");
    TCase *tc = tcase_create("encode_v3");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_bytes_roundtrip);
    tcase_add_test(tc, test_bytes_literals);
    tcase_add_test(tc, test_transpose_roundtrip);
    tcase_add_test(tc, test_transpose_literal);
    tcase_add_test(tc, test_checksum32_numcodecs);
    tcase_add_test(tc, test_crc32c_encode);
    tcase_add_test(tc, test_sharding_full);
    tcase_add_test(tc, test_sharding_fill_chunks);
    tcase_add_test(tc, test_sharding_nested);
    tcase_add_test(tc, test_sharding_in_chain);
    tcase_add_test(tc, test_encode_shard_mixed);
    tcase_add_test(tc, test_encode_shard_empty);
    tcase_add_test(tc, test_encode_shard_corrupt_old);
    tcase_add_test(tc, test_sharding_encode_errors);
    suite_add_tcase(s, tc);
    return s;
}
