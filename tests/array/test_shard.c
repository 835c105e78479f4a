/* Partial reads of sharded arrays (v3 codecs "Sharding codec", "Implementation notes"): the array
 * layer fetches a shard's index and then only the inner chunks a read needs, by byte range. A
 * store wrapper counts the requests and bytes that reach the store.
 *
 * The shards are built here by hand from the spec's "Binary shard format": inner chunks are the
 * `bytes` codec's output (little-endian int16, C order), the index is nchunks (offset, nbytes)
 * pairs of little-endian uint64 followed by the CRC-32C of those bytes (index_codecs
 * [bytes little, crc32c], crc32c.rst: 4 bytes little-endian); empty inner chunks are
 * (2^64 - 1, 2^64 - 1). */
#include <check.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "zarrfs/array.h"

#include "../check_main.h"

/* ---------- a store that counts what reaches the backend ---------- */

typedef struct counting_store {
    zf_store base;
    zf_store *inner;
    atomic_uint requests;
    atomic_ulong bytes;
} counting_store;

static zf_status c_get(zf_store *s, const char *key, zf_bytes *out, zf_err *err)
{
    counting_store *c = (counting_store *)s;
    c->requests++;
    zf_status st = zf_store_get(c->inner, key, out, err);
    if (st == ZF_OK)
        c->bytes += out->len;
    return st;
}

static zf_status c_get_partial(zf_store *s, const char *key, uint64_t off, uint64_t len,
                               zf_bytes *out, zf_err *err)
{
    counting_store *c = (counting_store *)s;
    c->requests++;
    zf_status st = zf_store_get_partial(c->inner, key, off, len, out, err);
    if (st == ZF_OK)
        c->bytes += out->len;
    return st;
}

static zf_status c_get_suffix(zf_store *s, const char *key, uint64_t len, zf_bytes *out,
                              uint64_t *total, zf_err *err)
{
    counting_store *c = (counting_store *)s;
    c->requests++;
    zf_status st = zf_store_get_suffix(c->inner, key, len, out, total, err);
    if (st == ZF_OK)
        c->bytes += out->len;
    return st;
}

static zf_status c_stat(zf_store *s, const char *key, uint64_t *size, struct timespec *mt,
                        zf_err *err)
{
    counting_store *c = (counting_store *)s;
    c->requests++;
    return zf_store_stat(c->inner, key, size, mt, err);
}

static zf_status c_list(zf_store *s, const char *prefix, zf_store_listing *out, zf_err *err)
{
    counting_store *c = (counting_store *)s;
    c->requests++;
    return zf_store_list_dir(c->inner, prefix, out, err);
}

static void c_destroy(zf_store *s)
{
    counting_store *c = (counting_store *)s;
    zf_store_close(c->inner);
    free(c);
}

static const zf_store_ops counting_ops = {
    .scheme = "counting",
    .get = c_get,
    .get_partial = c_get_partial,
    .get_suffix = c_get_suffix,
    .stat = c_stat,
    .list_dir = c_list,
    .destroy = c_destroy,
};

/* ---------- building shards by hand ---------- */

#define N 8 /* the array is N x N int16 */
#define EMPTY UINT64_MAX

static int16_t value(unsigned i, unsigned j) { return (int16_t)(i * 100 + j + 1); }

static char root[256];

static void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Encoded 2x2 inner chunk whose first element is (i0, j0): the `bytes` codec, little endian. */
static void inner_chunk(unsigned i0, unsigned j0, uint8_t out[8])
{
    for (unsigned a = 0; a < 2; a++)
        for (unsigned b = 0; b < 2; b++) {
            uint16_t v = (uint16_t)value(i0 + a, j0 + b);
            out[(a * 2 + b) * 2] = (uint8_t)v;
            out[(a * 2 + b) * 2 + 1] = (uint8_t)(v >> 8);
        }
}

/* Index bytes for n pairs plus their CRC-32C (index_codecs [bytes little, crc32c]). */
static size_t encode_index(const uint64_t *pairs, size_t n, uint8_t *out)
{
    for (size_t i = 0; i < 2 * n; i++)
        put_le64(out + 8 * i, pairs[i]);
    uint32_t crc = zf_crc32c(0, out, 16 * n);
    for (int i = 0; i < 4; i++)
        out[16 * n + (size_t)i] = (uint8_t)(crc >> (8 * i));
    return 16 * n + 4;
}

/* A shard of `side` x `side` elements at (i0, j0) in 2x2 inner chunks, written in reverse C
 * order after (index at start) or before (index at end) the index; inner chunks whose first
 * element is in `skip` (i0 * N + j0) are left empty. Returns the shard's size. */
static size_t build_shard(unsigned i0, unsigned j0, unsigned side, bool index_at_end, int skip,
                          uint8_t *out)
{
    unsigned cps = side / 2, n = cps * cps;
    uint64_t pairs[2 * 64];
    size_t idx_len = 16 * (size_t)n + 4, pos = index_at_end ? 0 : idx_len;
    for (unsigned k = n; k-- > 0;) {
        unsigned ci = i0 + 2 * (k / cps), cj = j0 + 2 * (k % cps);
        if ((int)(ci * N + cj) == skip) {
            pairs[2 * k] = pairs[2 * k + 1] = EMPTY;
            continue;
        }
        inner_chunk(ci, cj, out + pos);
        pairs[2 * k] = pos;
        pairs[2 * k + 1] = 8;
        pos += 8;
    }
    encode_index(pairs, n, index_at_end ? out + pos : out);
    return pos + (index_at_end ? idx_len : 0);
}

static void write_bytes(const char *name, const uint8_t *data, size_t len)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", root, name);
    FILE *f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

static void setup_dir(void)
{
    snprintf(root, sizeof root, "/tmp/zarrfs-shard-%d", (int)getpid());
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s/c/0 %s/c/1", root, root, root);
    ck_assert_int_eq(system(cmd), 0);
}

static void cleanup_dir(void)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    ck_assert_int_eq(system(cmd), 0);
}

#define LEAF_CODECS "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]"
#define INDEX_CODECS                                                                         \
    "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"crc32c\"}]"

static char *sharding_json(const char *inner_shape, const char *codecs, const char *where)
{
    char *s;
    ck_assert_int_ge(asprintf(&s,
                              "[{\"name\": \"sharding_indexed\", \"configuration\": {"
                              "\"chunk_shape\": %s, \"codecs\": %s, \"index_codecs\": %s, "
                              "\"index_location\": \"%s\"}}]",
                              inner_shape, codecs, INDEX_CODECS, where),
                     0);
    return s;
}

/* Metadata of the N x N int16 array with shard shape `shard` x `shard`, fill value -1. */
static void make_meta(zf_array_meta *m, unsigned shard, const char *codecs_json)
{
    memset(m, 0, sizeof *m);
    m->ndim = 2;
    m->shape[0] = m->shape[1] = N;
    m->chunks[0] = m->chunks[1] = shard;
    m->dtype = (zf_dtype){.kind = 'i', .byteorder = '<', .itemsize = 2};
    m->fill_value = malloc(2);
    m->fill_value[0] = m->fill_value[1] = 0xff;
    m->key_encoding = (zf_chunk_key_encoding){.separator = '/', .prefix = "c"};
    char errbuf[256];
    yajl_val codecs = yajl_tree_parse(codecs_json, errbuf, sizeof errbuf);
    ck_assert_msg(codecs != NULL, "%s", errbuf);
    zf_chunk_repr dec = {.ndim = 2, .shape = {shard, shard}, .dtype = m->dtype,
                         .nbytes = (size_t)shard * shard * 2};
    zf_err err = {""};
    zf_status st = zf_chain_from_v3(codecs, ZF_CODECS_V3, &dec, m->fill_value, &m->chain, &err);
    ck_assert_msg(st == ZF_OK, "%s", err.msg);
    yajl_tree_free(codecs);
}

static void free_meta(zf_array_meta *m)
{
    free(m->fill_value);
    zf_chain_clear(&m->chain);
}

typedef struct fixture {
    zf_array_meta meta;
    counting_store *cs;
    zf_cache *cache;
    zf_pool *pool;
    zf_array *a;
} fixture;

static void open_fixture(fixture *f, unsigned shard, const char *codecs_json, bool pool)
{
    make_meta(&f->meta, shard, codecs_json);
    f->cs = calloc(1, sizeof *f->cs);
    f->cs->base.ops = &counting_ops;
    zf_err err = {""};
    ck_assert_int_eq(zf_store_file_open(root, &f->cs->inner, &err), ZF_OK);
    ck_assert_int_eq(zf_cache_new(64 << 20, &f->cache), ZF_OK);
    f->pool = NULL;
    if (pool)
        ck_assert_int_eq(zf_pool_new(2, &f->pool), ZF_OK);
    zf_status st = zf_array_open(&f->cs->base, "", &f->meta, f->cache, f->pool, 1, &f->a, &err);
    ck_assert_msg(st == ZF_OK, "%s", err.msg);
}

static void close_fixture(fixture *f)
{
    zf_pool_free(f->pool);
    zf_array_close(f->a);
    zf_cache_free(f->cache);
    zf_store_close(&f->cs->base);
    free_meta(&f->meta);
}

/* Read `count` elements starting at (i, j) and check them against value() (or the fill value
 * -1 for elements in the inner chunk at `skip`). */
static void check_read(fixture *f, unsigned i, unsigned j, unsigned count, int skip)
{
    int16_t buf[N * N];
    size_t nread;
    zf_err err = {""};
    uint64_t off = ((uint64_t)i * N + j) * 2;
    zf_status st = zf_array_read(f->a, off, buf, count * 2, &nread, &err);
    ck_assert_msg(st == ZF_OK, "%s", err.msg);
    ck_assert_uint_eq(nread, count * 2);
    for (unsigned k = 0; k < count; k++) {
        unsigned e = i * N + j + k, r = e / N, c = e % N;
        int in_skip = skip >= 0 && r / 2 * 2 == (unsigned)skip / N && c / 2 * 2 == (unsigned)skip % N;
        int16_t want = in_skip ? -1 : value(r, c);
        ck_assert_msg(buf[k] == want, "element (%u,%u): %d, expected %d", r, c, buf[k], want);
    }
}

static void expect_requests(fixture *f, unsigned requests, unsigned long bytes)
{
    ck_assert_uint_eq(f->cs->requests, requests);
    ck_assert_uint_eq(f->cs->bytes, bytes);
}

/* One inner chunk of a 4 x 4-chunk shard costs the index plus that chunk; once the index is
 * cached, another inner chunk costs only itself; cached chunks and empty inner chunks cost
 * nothing. */
static void one_inner_chunk(bool index_at_end)
{
    setup_dir();
    uint8_t shard[1024];
    size_t len = build_shard(0, 0, N, index_at_end, 6 * N + 6, shard);
    write_bytes("c/0/0", shard, len);
    char *codecs = sharding_json("[2, 2]", LEAF_CODECS, index_at_end ? "end" : "start");
    fixture f;
    open_fixture(&f, N, codecs, false);
    const unsigned long index_bytes = 16 * 16 + 4, chunk_bytes = 8;

    check_read(&f, 2, 2, 2, 6 * N + 6); /* row 2, columns 2..3: inner chunk (1, 1) only */
    expect_requests(&f, 2, index_bytes + chunk_bytes);
    check_read(&f, 3, 4, 2, 6 * N + 6); /* inner chunk (1, 2): the index is cached */
    expect_requests(&f, 3, index_bytes + 2 * chunk_bytes);
    check_read(&f, 2, 2, 2, 6 * N + 6); /* cached */
    expect_requests(&f, 3, index_bytes + 2 * chunk_bytes);
    check_read(&f, 6, 6, 2, 6 * N + 6); /* the empty inner chunk (3, 3): the fill value */
    expect_requests(&f, 3, index_bytes + 2 * chunk_bytes);
    check_read(&f, 0, 0, N * N, 6 * N + 6); /* all of it: the 13 chunks not read yet */
    expect_requests(&f, 16, index_bytes + 15 * chunk_bytes);
    close_fixture(&f);
    free(codecs);
    cleanup_dir();
}

START_TEST(one_inner_chunk_index_at_end) { one_inner_chunk(true); }
END_TEST

START_TEST(one_inner_chunk_index_at_start) { one_inner_chunk(false); }
END_TEST

/* Shards of 4 x 4 elements (2 x 2 inner chunks) over the 8 x 8 array: four shard objects, one
 * missing (its elements are the fill value), read through the worker pool. */
START_TEST(several_shards_one_missing)
{
    setup_dir();
    uint8_t shard[512];
    write_bytes("c/0/0", shard, build_shard(0, 0, 4, true, -1, shard));
    write_bytes("c/0/1", shard, build_shard(0, 4, 4, true, -1, shard));
    write_bytes("c/1/0", shard, build_shard(4, 0, 4, true, -1, shard));
    char *codecs = sharding_json("[2, 2]", LEAF_CODECS, "end");
    fixture f;
    open_fixture(&f, 4, codecs, true);
    int16_t buf[N * N];
    size_t nread;
    zf_err err = {""};
    ck_assert_int_eq(zf_array_read(f.a, 0, buf, sizeof buf, &nread, &err), ZF_OK);
    for (unsigned i = 0; i < N; i++)
        for (unsigned j = 0; j < N; j++)
            ck_assert_int_eq(buf[i * N + j], i >= 4 && j >= 4 ? -1 : value(i, j));
    close_fixture(&f);
    free(codecs);
    cleanup_dir();
}
END_TEST

/* Nested sharding: an 8 x 8 shard of four 4 x 4 inner chunks, each itself a shard of four 2 x 2
 * chunks. One 2 x 2 chunk costs the outer index, the inner shard's index and the chunk. */
START_TEST(nested_shards_read_by_range)
{
    setup_dir();
    uint8_t outer[2048];
    uint64_t pairs[8];
    size_t pos = 0;
    for (unsigned k = 0; k < 4; k++) { /* inner shards in C order, index at the end */
        size_t len = build_shard(4 * (k / 2), 4 * (k % 2), 4, true, -1, outer + pos);
        pairs[2 * k] = pos;
        pairs[2 * k + 1] = len;
        pos += len;
    }
    pos += encode_index(pairs, 4, outer + pos);
    write_bytes("c/0/0", outer, pos);
    char *inner = sharding_json("[2, 2]", LEAF_CODECS, "end");
    char *codecs = sharding_json("[4, 4]", inner, "end");
    fixture f;
    open_fixture(&f, N, codecs, false);
    check_read(&f, 5, 2, 2, -1); /* inner shard (1, 0), chunk (1, 1) of it */
    expect_requests(&f, 3, (16 * 4 + 4) * 2 + 8);
    check_read(&f, 0, 0, N * N, -1);
    expect_requests(&f, 3 + 3 + 15, (16 * 4 + 4) * 5 + 8 * 16);
    close_fixture(&f);
    free(codecs);
    free(inner);
    cleanup_dir();
}
END_TEST

/* Bad indexes are errors, never wrong bytes: a pair past the shard's end, overlapping pairs, a
 * wrong CRC-32C, a shard shorter than its index. */
static zf_status read_all(fixture *f, zf_err *err)
{
    int16_t buf[N * N];
    size_t nread;
    return zf_array_read(f->a, 0, buf, sizeof buf, &nread, err);
}

START_TEST(corrupt_indexes_are_errors)
{
    setup_dir();
    char *codecs = sharding_json("[2, 2]", LEAF_CODECS, "end");
    enum { PAST_END, OVERLAP, BAD_CRC, SHORT, HALF_EMPTY, NCASES };
    for (int c = 0; c < NCASES; c++) {
        uint8_t shard[1024];
        size_t len = build_shard(0, 0, N, true, -1, shard), idx = len - (16 * 16 + 4);
        uint64_t pairs[32];
        for (size_t i = 0; i < 32; i++) {
            pairs[i] = 0;
            for (int b = 0; b < 8; b++)
                pairs[i] |= (uint64_t)shard[idx + 8 * i + (size_t)b] << (8 * b);
        }
        if (c == PAST_END)
            pairs[2 * 5] = len; /* chunk 5 starts at the shard's end */
        else if (c == OVERLAP)
            pairs[2 * 5] = pairs[2 * 6] + 4; /* half inside chunk 6 */
        else if (c == HALF_EMPTY)
            pairs[2 * 5 + 1] = EMPTY;
        encode_index(pairs, 16, shard + idx);
        if (c == BAD_CRC)
            shard[len - 1] ^= 0x10;
        write_bytes("c/0/0", shard, c == SHORT ? 100 : len);
        fixture f;
        open_fixture(&f, N, codecs, false);
        zf_err err = {""};
        zf_status st = read_all(&f, &err);
        ck_assert_msg(st == ZF_ERR_CORRUPT, "case %d: status %d (%s)", c, st, err.msg);
        ck_assert_msg(strstr(err.msg, "c/0/0") != NULL, "case %d: %s", c, err.msg);
        close_fixture(&f);
    }
    free(codecs);
    cleanup_dir();
}
END_TEST

ZF_CHECK_MAIN("array-shard", one_inner_chunk_index_at_end, one_inner_chunk_index_at_start,
              several_shards_one_missing, nested_shards_read_by_range, corrupt_indexes_are_errors)
