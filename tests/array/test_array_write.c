/* Unit tests for writes into a v2 array's flat view (array.h, "writing"): writes go into the
 * chunk cache and reach a local file store when flushed. Results are checked against a model
 * buffer written alongside: read back through a fresh cache and array, and, for arrays without a
 * compressor, by reading the chunk files directly (raw elements in C or F order, edge chunks
 * padded). The store's request counter tells whether a write read old chunks. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zarrfs/array.h"

#include "../check_main.h"

/* ---------- a store directory and an array over it ---------- */

static char dir[256];

static void new_dir(void)
{
    char tmpl[] = "/tmp/zf-array-write-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    snprintf(dir, sizeof dir, "%s", tmpl);
}

static void remove_dir(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

typedef struct fixture {
    zf_store *store;
    zf_cache *cache;
    zf_pool *pool;
    zf_node_meta meta;
    zf_array *a;
} fixture;

/* Open the array whose .zarray is `zarray` over the store at dir; writable unless `readonly`. */
static void open_fx(fixture *f, const char *zarray, size_t cache_bytes, unsigned pool_threads,
                    bool readonly, bool write_empty)
{
    zf_err err = {""};
    memset(f, 0, sizeof *f);
    ck_assert_int_eq(zf_store_file_open(dir, &f->store, &err), ZF_OK);
    zf_status st = zf_meta_parse_v2_array(".zarray", zarray, strlen(zarray), NULL, &f->meta, &err);
    ck_assert_msg(st == ZF_OK, "%s", err.msg);
    ck_assert_int_eq(f->meta.unsupported, ZF_OK);
    ck_assert_int_eq(zf_cache_new(cache_bytes, &f->cache), ZF_OK);
    if (pool_threads) {
        ck_assert_int_eq(zf_pool_new(pool_threads, &f->pool), ZF_OK);
        zf_cache_set_writeback_pool(f->cache, f->pool);
    }
    st = zf_array_open(f->store, "", &f->meta.array, f->cache, f->pool, 1, &f->a, &err);
    ck_assert_msg(st == ZF_OK, "%s", err.msg);
    if (!readonly) {
        st = zf_array_enable_write(f->a, write_empty, &err);
        ck_assert_msg(st == ZF_OK, "%s", err.msg);
    }
}

static void close_fx(fixture *f)
{
    zf_cache_stats cs;
    zf_cache_get_stats(f->cache, &cs);
    ck_assert_uint_eq(cs.dirty_entries, 0); /* every test flushes what it wrote */
    zf_array_close(f->a);
    if (f->pool) {
        zf_cache_set_writeback_pool(f->cache, NULL);
        zf_pool_free(f->pool);
    }
    zf_cache_free(f->cache);
    zf_node_meta_free(&f->meta);
    zf_store_close(f->store);
}

/* Store requests that read (every request but set/erase/remove_dir). */
static uint64_t reads(zf_store *s)
{
    zf_store_stats st;
    zf_store_get_stats(s, &st);
    return st.requests - st.writes;
}

static uint64_t writes(zf_store *s)
{
    zf_store_stats st;
    zf_store_get_stats(s, &st);
    return st.writes;
}

static void write_ok(fixture *f, uint64_t off, const void *buf, size_t len)
{
    zf_err err = {""};
    zf_status st = zf_array_write(f->a, off, buf, len, &err);
    ck_assert_msg(st == ZF_OK, "write %llu+%zu: %s", (unsigned long long)off, len, err.msg);
}

static void flush_ok(fixture *f)
{
    zf_err err = {""};
    zf_status st = zf_array_flush(f->a, &err);
    ck_assert_msg(st == ZF_OK, "flush: %s", err.msg);
}

/* Read the whole flat view through a fresh store, cache and array; compare with model. */
static void check_reads_back(const char *zarray, const uint8_t *model, size_t nbytes)
{
    fixture f;
    open_fx(&f, zarray, 1 << 20, 0, true, false);
    ck_assert_uint_eq(zf_array_nbytes(f.a), nbytes);
    uint8_t *buf = malloc(nbytes + 1);
    size_t got;
    zf_err err = {""};
    zf_status st = zf_array_read(f.a, 0, buf, nbytes, &got, &err);
    ck_assert_msg(st == ZF_OK, "read back: %s", err.msg);
    ck_assert_uint_eq(got, nbytes);
    for (size_t i = 0; i < nbytes; i++)
        ck_assert_msg(buf[i] == model[i], "byte %zu: %u, expected %u", i, buf[i], model[i]);
    free(buf);
    close_fx(&f);
}

static bool file_exists(const char *key)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, key);
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* The file of key, exactly `len` bytes. */
static void read_file(const char *key, uint8_t *out, size_t len)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, key);
    FILE *fp = fopen(p, "rb");
    ck_assert_msg(fp != NULL, "%s missing", key);
    size_t n = fread(out, 1, len + 1, fp);
    fclose(fp);
    ck_assert_msg(n == len, "%s: %zu bytes, expected %zu", key, n, len);
}

/* ---------- the 13 x 11 "<u4" array in 4 x 3 chunks ---------- */

#define R 13
#define C 11
#define CR 4
#define CC 3
#define GR 4 /* chunk rows */
#define GC 4 /* chunk columns */
#define NBYTES (R * C * 4)
#define FILL 7u

static char *zarray_u4(const char *compressor, const char *fill, char order, char sep)
{
    static char buf[512];
    snprintf(buf, sizeof buf,
             "{\"zarr_format\": 2, \"shape\": [13, 11], \"chunks\": [4, 3], \"dtype\": \"<u4\","
             " \"compressor\": %s, \"filters\": null, \"fill_value\": %s, \"order\": \"%c\"%s}",
             compressor, fill, order, sep == '/' ? ", \"dimension_separator\": \"/\"" : "");
    return buf;
}

static uint32_t get_u4(const uint8_t *model, unsigned i, unsigned j)
{
    uint32_t v;
    memcpy(&v, model + ((size_t)i * C + j) * 4, 4);
    return v;
}

static void model_fill(uint8_t *model, uint32_t fill)
{
    for (size_t e = 0; e < R * C; e++)
        memcpy(model + e * 4, &fill, 4);
}

static void chunk_key(unsigned ci, unsigned cj, char sep, char *key, size_t n)
{
    snprintf(key, n, "%u%c%u", ci, sep, cj);
}

/* Check every chunk file of the u4 array (no compressor) against the model: present exactly
 * when some element inside the array differs from the fill value, elements in C or F order,
 * padding the fill value. */
static void check_chunk_files(const uint8_t *model, char order, char sep, uint32_t fill)
{
    for (unsigned ci = 0; ci < GR; ci++)
        for (unsigned cj = 0; cj < GC; cj++) {
            char key[32];
            chunk_key(ci, cj, sep, key, sizeof key);
            bool any = false;
            for (unsigned a = 0; a < CR; a++)
                for (unsigned b = 0; b < CC; b++) {
                    unsigned i = ci * CR + a, j = cj * CC + b;
                    if (i < R && j < C && get_u4(model, i, j) != fill)
                        any = true;
                }
            ck_assert_msg(file_exists(key) == any, "chunk %s: %s", key,
                          any ? "missing" : "stored, but holds only the fill value");
            if (!any)
                continue;
            uint32_t raw[CR * CC];
            read_file(key, (uint8_t *)raw, sizeof raw);
            for (unsigned a = 0; a < CR; a++)
                for (unsigned b = 0; b < CC; b++) {
                    unsigned i = ci * CR + a, j = cj * CC + b;
                    uint32_t want = i < R && j < C ? get_u4(model, i, j) : fill;
                    uint32_t got = raw[order == 'C' ? a * CC + b : b * CR + a];
                    ck_assert_msg(got == want, "chunk %s element (%u,%u): %u, expected %u", key,
                                  a, b, got, want);
                }
        }
}

/* Random writes of 1..60 bytes at random (unaligned) offsets, mirrored into the model. */
static void random_writes(fixture *f, uint8_t *model, unsigned n, unsigned seed)
{
    srand(seed);
    uint8_t buf[64];
    for (unsigned t = 0; t < n; t++) {
        size_t len = 1 + (size_t)rand() % 60;
        uint64_t off = (uint64_t)rand() % (NBYTES - len + 1);
        for (size_t k = 0; k < len; k++)
            buf[k] = (uint8_t)rand();
        write_ok(f, off, buf, len);
        memcpy(model + off, buf, len);
    }
}

static void partial_writes_round_trip(const char *compressor, char order, char sep)
{
    new_dir();
    const char *za = zarray_u4(compressor, "7", order, sep);
    char zarray[512];
    snprintf(zarray, sizeof zarray, "%s", za);
    uint8_t model[NBYTES];
    model_fill(model, FILL);
    fixture f;
    open_fx(&f, zarray, 1 << 20, 0, false, false);
    random_writes(&f, model, 40, 11);
    /* Before the flush the store holds nothing, yet reads see the writes. */
    ck_assert_uint_eq(writes(f.store), 0);
    uint8_t buf[NBYTES];
    size_t got;
    zf_err err = {""};
    ck_assert_int_eq(zf_array_read(f.a, 0, buf, NBYTES, &got, &err), ZF_OK);
    ck_assert_int_eq(memcmp(buf, model, NBYTES), 0);
    flush_ok(&f);
    zf_cache_stats cs;
    zf_cache_get_stats(f.cache, &cs);
    ck_assert_uint_eq(cs.dirty_bytes, 0);
    close_fx(&f);
    check_reads_back(zarray, model, NBYTES);
    if (!strcmp(compressor, "null"))
        check_chunk_files(model, order, sep, FILL);

    /* Over stored chunks now: more partial writes, then the fill value over rows 0..3 (chunk
     * row 0 whole), whose chunks go away. */
    open_fx(&f, zarray, 1 << 20, 0, false, false);
    random_writes(&f, model, 40, 12);
    uint32_t fills[4 * C];
    for (size_t k = 0; k < 4 * C; k++)
        fills[k] = FILL;
    write_ok(&f, 0, fills, sizeof fills);
    memcpy(model, fills, sizeof fills);
    flush_ok(&f);
    close_fx(&f);
    check_reads_back(zarray, model, NBYTES);
    for (unsigned cj = 0; cj < GC; cj++) {
        char key[32];
        chunk_key(0, cj, sep, key, sizeof key);
        ck_assert_msg(!file_exists(key), "%s", key);
    }
    if (!strcmp(compressor, "null"))
        check_chunk_files(model, order, sep, FILL);
    remove_dir();
}

START_TEST(partial_writes_raw_c_order) { partial_writes_round_trip("null", 'C', '.'); }
END_TEST

START_TEST(partial_writes_raw_f_order_slash) { partial_writes_round_trip("null", 'F', '/'); }
END_TEST

START_TEST(partial_writes_zlib)
{
    partial_writes_round_trip("{\"id\": \"zlib\", \"level\": 1}", 'C', '.');
}
END_TEST

START_TEST(partial_writes_blosc_f_order)
{
    partial_writes_round_trip("{\"id\": \"blosc\", \"cname\": \"lz4\", \"clevel\": 5, "
                              "\"shuffle\": 1, \"blocksize\": 0}",
                              'F', '.');
}
END_TEST

/* value(i, j): distinct, never the fill value 7. */
static uint32_t value(unsigned i, unsigned j, unsigned gen) { return 1000000 * gen + i * 100 + j + 8; }

/* A write covering chunks whole reads nothing from the store (nor does its flush); a write
 * covering a chunk partly reads exactly that chunk. */
START_TEST(covering_writes_do_not_read)
{
    new_dir();
    char zarray[512];
    snprintf(zarray, sizeof zarray, "%s", zarray_u4("null", "7", 'C', '.'));
    uint8_t model[NBYTES];
    fixture f;
    open_fx(&f, zarray, 1 << 20, 0, false, false);
    uint64_t r0 = reads(f.store);
    for (unsigned i = 0; i < R; i++)
        for (unsigned j = 0; j < C; j++) {
            uint32_t v = value(i, j, 1);
            memcpy(model + (i * C + j) * 4, &v, 4);
        }
    write_ok(&f, 0, model, NBYTES);
    ck_assert_uint_eq(reads(f.store), r0);
    flush_ok(&f);
    ck_assert_uint_eq(reads(f.store), r0);
    ck_assert_uint_eq(writes(f.store), GR * GC);
    close_fx(&f);
    check_chunk_files(model, 'C', '.', FILL);

    open_fx(&f, zarray, 1 << 20, 0, false, false); /* a cold cache over stored chunks */
    r0 = reads(f.store);
    uint64_t w0 = writes(f.store);
    /* Rows 4..7 (chunk row 1) from byte 1 of element (4, 0): chunk (1, 0) is covered but for
     * three bytes and is read; (1, 1), (1, 2), (1, 3) are covered and are not. */
    uint8_t band[4 * C * 4];
    for (size_t k = 0; k < sizeof band; k++)
        band[k] = (uint8_t)(k * 7 + 3);
    uint64_t off = 4 * C * 4;
    write_ok(&f, off + 1, band + 1, sizeof band - 1);
    memcpy(model + off + 1, band + 1, sizeof band - 1);
    ck_assert_uint_eq(reads(f.store), r0 + 1);
    flush_ok(&f);
    ck_assert_uint_eq(reads(f.store), r0 + 1);
    ck_assert_uint_eq(writes(f.store), w0 + 4);
    /* One byte inside chunk (2, 2): read. */
    uint8_t x = 0x99;
    write_ok(&f, (9 * C + 7) * 4 + 2, &x, 1);
    model[(9 * C + 7) * 4 + 2] = x;
    ck_assert_uint_eq(reads(f.store), r0 + 2);
    /* The two elements of edge chunk (3, 3) inside the array: covered, not read. */
    uint32_t two[2] = {0xabcdef01u, 0x12345678u};
    write_ok(&f, (12 * C + 9) * 4, two, sizeof two);
    memcpy(model + (12 * C + 9) * 4, two, sizeof two);
    ck_assert_uint_eq(reads(f.store), r0 + 2);
    /* All elements of chunk (3, 3) but a byte of the last: partial, read. */
    uint8_t cold[7];
    memset(cold, 0x42, sizeof cold);
    fixture g;
    flush_ok(&f);
    close_fx(&f);
    open_fx(&g, zarray, 1 << 20, 0, false, false);
    r0 = reads(g.store);
    write_ok(&g, (12 * C + 9) * 4, cold, sizeof cold);
    memcpy(model + (12 * C + 9) * 4, cold, sizeof cold);
    ck_assert_uint_eq(reads(g.store), r0 + 1);
    flush_ok(&g);
    ck_assert_uint_eq(reads(g.store), r0 + 1);
    close_fx(&g);
    check_reads_back(zarray, model, NBYTES);
    check_chunk_files(model, 'C', '.', FILL);
    remove_dir();
}
END_TEST

/* Chunks holding only the fill value are erased (left absent) unless write_empty_chunks; a v2
 * fill value null never erases; fill value 0 erases zeros. */
static void write_all(fixture *f, uint8_t *model, uint32_t gen)
{
    for (unsigned i = 0; i < R; i++)
        for (unsigned j = 0; j < C; j++) {
            uint32_t v = value(i, j, gen);
            memcpy(model + (i * C + j) * 4, &v, 4);
        }
    write_ok(f, 0, model, NBYTES);
}

/* Write `v` over rows 0..3 (chunk row 0) and over element (5, 4) of chunk (1, 1). */
static void write_value_rows(fixture *f, uint8_t *model, uint32_t v)
{
    uint32_t rows[4 * C];
    for (size_t k = 0; k < 4 * C; k++)
        rows[k] = v;
    write_ok(f, 0, rows, sizeof rows);
    memcpy(model, rows, sizeof rows);
    write_ok(f, (5 * C + 4) * 4, &v, 4);
    memcpy(model + (5 * C + 4) * 4, &v, 4);
}

static void fill_case(const char *fill_json, uint32_t fill, bool write_empty, bool erases)
{
    new_dir();
    char zarray[512];
    snprintf(zarray, sizeof zarray, "%s", zarray_u4("null", fill_json, 'C', '.'));
    uint8_t model[NBYTES];
    fixture f;
    open_fx(&f, zarray, 1 << 20, 0, false, write_empty);
    write_all(&f, model, 1);
    flush_ok(&f);
    for (unsigned ci = 0; ci < GR; ci++)
        for (unsigned cj = 0; cj < GC; cj++) {
            char key[32];
            chunk_key(ci, cj, '.', key, sizeof key);
            ck_assert_msg(file_exists(key), "%s", key);
        }
    write_value_rows(&f, model, fill);
    flush_ok(&f);
    close_fx(&f);
    for (unsigned cj = 0; cj < GC; cj++) {
        char key[32];
        chunk_key(0, cj, '.', key, sizeof key);
        ck_assert_msg(file_exists(key) == !erases, "%s: %s", key,
                      erases ? "not erased" : "erased");
        if (!erases) {
            uint32_t raw[CR * CC];
            read_file(key, (uint8_t *)raw, sizeof raw);
            for (unsigned k = 0; k < CR * CC; k++)
                ck_assert_uint_eq(raw[k], fill);
        }
    }
    ck_assert(file_exists("1.1")); /* one fill element is not a fill chunk */
    check_reads_back(zarray, model, NBYTES);
    remove_dir();
}

START_TEST(fill_chunks_are_erased) { fill_case("7", 7, false, true); }
END_TEST

START_TEST(fill_chunks_kept_with_write_empty_chunks) { fill_case("7", 7, true, false); }
END_TEST

START_TEST(fill_null_never_erases) { fill_case("null", 0, false, false); }
END_TEST

START_TEST(fill_zero_erases_zeros) { fill_case("0", 0, false, true); }
END_TEST

/* A chunk never stored, written only with the fill value, is not created; written with other
 * values and then the fill value again before a flush, it is not created either. */
START_TEST(new_fill_chunks_are_not_stored)
{
    new_dir();
    char zarray[512];
    snprintf(zarray, sizeof zarray, "%s", zarray_u4("null", "7", 'C', '.'));
    fixture f;
    open_fx(&f, zarray, 1 << 20, 0, false, false);
    uint32_t rows[4 * C];
    for (size_t k = 0; k < 4 * C; k++)
        rows[k] = FILL;
    write_ok(&f, 4 * C * 4, rows, sizeof rows); /* chunk row 1, covered */
    uint32_t v = 5;
    write_ok(&f, (8 * C + 1) * 4, &v, 4); /* chunk (2, 0), partial */
    write_ok(&f, (8 * C + 1) * 4, &rows[0], 4);
    flush_ok(&f);
    for (unsigned ci = 0; ci < GR; ci++)
        for (unsigned cj = 0; cj < GC; cj++) {
            char key[32];
            chunk_key(ci, cj, '.', key, sizeof key);
            ck_assert_msg(!file_exists(key), "%s", key);
        }
    close_fx(&f);
    remove_dir();
}
END_TEST

/* Edge chunks: the elements outside the array hold the fill value in the stored chunk, whether
 * the write covered the chunk (rows 12, columns 0..8) or not (one element of (0, 3) and of
 * (3, 3)). */
START_TEST(edge_chunks_padded_with_fill)
{
    new_dir();
    char zarray[512];
    snprintf(zarray, sizeof zarray, "%s", zarray_u4("null", "7", 'C', '.'));
    uint8_t model[NBYTES];
    model_fill(model, FILL);
    fixture f;
    open_fx(&f, zarray, 1 << 20, 0, false, false);
    uint32_t row[9];
    for (unsigned j = 0; j < 9; j++)
        row[j] = value(12, j, 3);
    write_ok(&f, 12 * C * 4, row, sizeof row);
    memcpy(model + 12 * C * 4, row, sizeof row);
    uint32_t v = 0x01020304;
    write_ok(&f, (0 * C + 10) * 4, &v, 4); /* (0, 10): chunk (0, 3), column 1 of 3 */
    memcpy(model + (0 * C + 10) * 4, &v, 4);
    write_ok(&f, (12 * C + 9) * 4, &v, 4); /* (12, 9): chunk (3, 3), element (0, 0) */
    memcpy(model + (12 * C + 9) * 4, &v, 4);
    flush_ok(&f);
    close_fx(&f);
    /* Spelled out for chunk (3, 3): v, then fill everywhere. */
    uint32_t raw[CR * CC];
    read_file("3.3", (uint8_t *)raw, sizeof raw);
    ck_assert_uint_eq(raw[0], v);
    for (unsigned k = 1; k < CR * CC; k++)
        ck_assert_msg(raw[k] == FILL, "3.3 element %u: %u", k, raw[k]);
    read_file("3.0", (uint8_t *)raw, sizeof raw);
    for (unsigned k = 0; k < CR * CC; k++)
        ck_assert_uint_eq(raw[k], k < 3 ? value(12, k, 3) : FILL);
    check_chunk_files(model, 'C', '.', FILL);
    check_reads_back(zarray, model, NBYTES);
    remove_dir();
}
END_TEST

/* erase_chunk_rows removes the chunks of chunk rows >= first_row and nothing else. */
START_TEST(erase_chunk_rows_removes_rows)
{
    new_dir();
    char zarray[512];
    snprintf(zarray, sizeof zarray, "%s", zarray_u4("null", "7", 'C', '/'));
    uint8_t model[NBYTES];
    fixture f;
    open_fx(&f, zarray, 1 << 20, 0, false, false);
    write_all(&f, model, 1);
    flush_ok(&f);
    zf_err err = {""};
    uint64_t w0 = writes(f.store);
    ck_assert_int_eq(zf_array_erase_chunk_rows(f.a, 2, &err), ZF_OK);
    ck_assert_uint_eq(writes(f.store), w0 + 2 * GC);
    for (unsigned ci = 0; ci < GR; ci++)
        for (unsigned cj = 0; cj < GC; cj++) {
            char key[32];
            chunk_key(ci, cj, '/', key, sizeof key);
            ck_assert_msg(file_exists(key) == (ci < 2), "%s", key);
        }
    ck_assert_int_eq(zf_array_erase_chunk_rows(f.a, 2, &err), ZF_OK); /* already gone */
    ck_assert_int_eq(zf_array_erase_chunk_rows(f.a, GR, &err), ZF_OK);
    ck_assert_int_eq(zf_array_erase_chunk_rows(f.a, 100, &err), ZF_OK);
    ck_assert(file_exists("1/3"));
    ck_assert_int_eq(zf_array_erase_chunk_rows(f.a, 0, &err), ZF_OK);
    ck_assert(!file_exists("0/0"));
    ck_assert(!file_exists("1/3"));
    close_fx(&f);
    remove_dir();
}
END_TEST

/* A store that cannot write: get only. */
static zf_status ro_get(zf_store *s, const char *key, zf_bytes *out, zf_err *err)
{
    (void)s, (void)key, (void)out;
    return zf_fail(err, ZF_ERR_NOT_FOUND, "nothing here");
}
static void ro_destroy(zf_store *s) { free(s); }
static const zf_store_ops ro_ops = {.scheme = "ro", .get = ro_get, .destroy = ro_destroy};

/* Past the end, not writable, a read-only store: refused, nothing written. */
START_TEST(write_errors)
{
    new_dir();
    char zarray[512];
    snprintf(zarray, sizeof zarray, "%s", zarray_u4("null", "7", 'C', '.'));
    fixture f;
    open_fx(&f, zarray, 1 << 20, 0, true, false); /* not enabled */
    uint8_t buf[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    zf_err err = {""};
    ck_assert_int_eq(zf_array_write(f.a, 0, buf, 4, &err), ZF_ERR_INVALID);
    ck_assert_str_ne(err.msg, "");
    ck_assert_int_eq(zf_array_enable_write(f.a, false, &err), ZF_OK);
    ck_assert_int_eq(zf_array_write(f.a, NBYTES - 1, buf, 2, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(zf_array_write(f.a, NBYTES, buf, 1, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(zf_array_write(f.a, UINT64_MAX, buf, 1, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(zf_array_write(f.a, 1, buf, SIZE_MAX, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(zf_array_write(f.a, 0, buf, 0, &err), ZF_OK);
    zf_cache_stats cs;
    zf_cache_get_stats(f.cache, &cs);
    ck_assert_uint_eq(cs.dirty_entries, 0);
    ck_assert_uint_eq(cs.entries, 0);
    ck_assert_int_eq(zf_array_write(f.a, NBYTES - 2, buf, 2, &err), ZF_OK); /* the last bytes */
    flush_ok(&f);
    ck_assert(file_exists("3.3"));
    ck_assert(!file_exists("0.0"));
    close_fx(&f);

    zf_store *ro = calloc(1, sizeof *ro);
    ro->ops = &ro_ops;
    ro->url = "ro://";
    zf_node_meta meta;
    ck_assert_int_eq(zf_meta_parse_v2_array(".zarray", zarray, strlen(zarray), NULL, &meta, &err),
                     ZF_OK);
    zf_cache *cache;
    ck_assert_int_eq(zf_cache_new(1 << 20, &cache), ZF_OK);
    zf_array *a;
    ck_assert_int_eq(zf_array_open(ro, "", &meta.array, cache, NULL, 1, &a, &err), ZF_OK);
    ck_assert_int_eq(zf_array_enable_write(a, false, &err), ZF_ERR_READONLY);
    ck_assert_int_eq(zf_array_write(a, 0, buf, 4, &err), ZF_ERR_INVALID);
    zf_array_close(a);
    zf_cache_free(cache);
    zf_node_meta_free(&meta);
    zf_store_close(ro);
    remove_dir();
}
END_TEST

/* An array whose directory was removed from the store behind zarrfs's back: its written chunks
 * are not stored (that would make the directory again, holding chunks no metadata describes)
 * but kept dirty, and stored once the directory is back. */
START_TEST(array_directory_gone)
{
    new_dir();
    const char *zarray = zarray_u4("null", "7", 'C', '.');
    char p[512];
    snprintf(p, sizeof p, "%s/arr", dir);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    zf_err err = {""};
    zf_store *store;
    ck_assert_int_eq(zf_store_file_open(dir, &store, &err), ZF_OK);
    zf_node_meta meta;
    ck_assert_int_eq(zf_meta_parse_v2_array(".zarray", zarray, strlen(zarray), NULL, &meta, &err),
                     ZF_OK);
    zf_cache *cache;
    ck_assert_int_eq(zf_cache_new(1 << 20, &cache), ZF_OK);
    zf_array *a;
    ck_assert_int_eq(zf_array_open(store, "arr", &meta.array, cache, NULL, 1, &a, &err), ZF_OK);
    ck_assert_int_eq(zf_array_enable_write(a, false, &err), ZF_OK);
    uint8_t buf[4] = {1, 2, 3, 4};
    ck_assert_int_eq(zf_array_write(a, 0, buf, 4, &err), ZF_OK);
    ck_assert_int_eq(rmdir(p), 0);
    ck_assert_int_eq(zf_array_flush(a, &err), ZF_ERR_IO);
    ck_assert_msg(strstr(err.msg, "arr/: the array's directory is gone"), "%s", err.msg);
    ck_assert(!file_exists("arr"));
    zf_cache_stats cs;
    zf_cache_get_stats(cache, &cs);
    ck_assert_uint_eq(cs.dirty_entries, 1);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    ck_assert_msg(zf_array_flush(a, &err) == ZF_OK, "%s", err.msg);
    ck_assert(file_exists("arr/0.0"));
    zf_array_close(a);
    zf_cache_free(cache);
    zf_node_meta_free(&meta);
    zf_store_close(store);
    remove_dir();
}
END_TEST

/* A 0-d array: one element in chunk "0". */
START_TEST(zero_dim_array)
{
    new_dir();
    const char *zarray = "{\"zarr_format\": 2, \"shape\": [], \"chunks\": [], \"dtype\": \"<f8\","
                         " \"compressor\": null, \"filters\": null, \"fill_value\": 0.0,"
                         " \"order\": \"C\"}";
    fixture f;
    open_fx(&f, zarray, 1 << 20, 0, false, false);
    ck_assert_uint_eq(zf_array_nbytes(f.a), 8);
    double d = 1.5;
    uint64_t r0 = reads(f.store);
    write_ok(&f, 0, &d, 8);
    ck_assert_uint_eq(reads(f.store), r0); /* covered */
    flush_ok(&f);
    double got;
    read_file("0", (uint8_t *)&got, 8);
    ck_assert(got == 1.5);
    close_fx(&f);
    open_fx(&f, zarray, 1 << 20, 0, false, false); /* cold cache */
    r0 = reads(f.store);
    uint8_t b = 0x40, want[8]; /* one byte: read-modify-write */
    memcpy(want, &d, 8);
    want[7] = b;
    write_ok(&f, 7, &b, 1);
    ck_assert_uint_eq(reads(f.store), r0 + 1);
    flush_ok(&f);
    uint8_t raw[8];
    read_file("0", raw, 8);
    ck_assert_int_eq(memcmp(raw, want, 8), 0);
    d = 0.0;
    write_ok(&f, 0, &d, 8);
    flush_ok(&f);
    ck_assert(!file_exists("0"));
    close_fx(&f);
    remove_dir();
}
END_TEST

/* ---------- concurrency ---------- */

/* 40 x 37 "<u2" in 6 x 5 chunks (zlib), fill 3. The flat view is cut into segments of 1..23
 * bytes (so neighbouring segments share chunks and even elements), dealt round-robin to 8
 * threads, each writing its segments in its own random order. A small cache makes writers
 * flush on the way (the throttle), on a worker pool. */
#define TR 40
#define TC 37
#define TBYTES (TR * TC * 2)
#define NTHREADS 8

static const char *zarray_t =
    "{\"zarr_format\": 2, \"shape\": [40, 37], \"chunks\": [6, 5], \"dtype\": \"<u2\","
    " \"compressor\": {\"id\": \"zlib\", \"level\": 1}, \"filters\": null, \"fill_value\": 3,"
    " \"order\": \"C\"}";

typedef struct seg {
    uint32_t off, len;
} seg;

typedef struct writer_arg {
    fixture *f;
    const uint8_t *src;
    seg *segs;
    size_t nsegs;
    unsigned seed;
} writer_arg;

static void *writer(void *p)
{
    writer_arg *w = p;
    unsigned s = w->seed;
    for (size_t i = w->nsegs; i > 1; i--) { /* shuffle */
        size_t k = (size_t)rand_r(&s) % i;
        seg t = w->segs[i - 1];
        w->segs[i - 1] = w->segs[k];
        w->segs[k] = t;
    }
    for (size_t i = 0; i < w->nsegs; i++) {
        zf_err err = {""};
        zf_status st = zf_array_write(w->f->a, w->segs[i].off, w->src + w->segs[i].off,
                                      w->segs[i].len, &err);
        ck_assert_msg(st == ZF_OK, "%s", err.msg);
    }
    return NULL;
}

static void concurrent_case(bool prefilled, size_t cache_bytes)
{
    new_dir();
    static uint8_t model[TBYTES];
    for (size_t k = 0; k < TBYTES; k += 2) { /* the fill value 3 */
        model[k] = 3;
        model[k + 1] = 0;
    }
    fixture f;
    if (prefilled) { /* old data everywhere: partial writes read old chunks */
        open_fx(&f, zarray_t, 1 << 20, 0, false, false);
        srand(5);
        for (size_t k = 0; k < TBYTES; k++)
            model[k] = (uint8_t)rand();
        write_ok(&f, 0, model, TBYTES);
        flush_ok(&f);
        close_fx(&f);
    }
    static uint8_t src[TBYTES];
    srand(99);
    for (size_t k = 0; k < TBYTES; k++)
        src[k] = (uint8_t)rand();
    /* About one segment in 5 writes the fill value, so some chunks end up all fill. */
    static seg segs[NTHREADS][TBYTES];
    size_t nsegs[NTHREADS] = {0};
    unsigned t = 0;
    for (uint32_t off = 0; off < TBYTES;) {
        uint32_t len = 1 + (uint32_t)rand() % 23;
        if (off + len > TBYTES)
            len = TBYTES - off;
        if (rand() % 5 == 0)
            for (uint32_t k = off; k < off + len; k++)
                src[k] = k % 2 ? 0 : 3;
        segs[t][nsegs[t]++] = (seg){off, len};
        t = (t + 1) % NTHREADS;
        off += len;
    }
    /* Rows 30..35 (chunk row 5) all the fill value: its chunks are not stored. */
    for (size_t k = 30 * TC * 2; k < 36 * TC * 2; k++)
        src[k] = k % 2 ? 0 : 3;
    memcpy(model, src, TBYTES);

    open_fx(&f, zarray_t, cache_bytes, 3, false, false);
    pthread_t th[NTHREADS];
    writer_arg wa[NTHREADS];
    for (unsigned i = 0; i < NTHREADS; i++) {
        wa[i] = (writer_arg){&f, src, segs[i], nsegs[i], 1234 + i};
        pthread_create(&th[i], NULL, writer, &wa[i]);
    }
    for (unsigned i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    zf_cache_stats cs;
    zf_cache_get_stats(f.cache, &cs);
    /* Writebacks by the writers themselves (throttling), not the pool's write-behinds of the
     * chunks they completed (the interleaved writes may look sequential). */
    uint64_t own = cs.writebacks - cs.write_behinds;
    if (cache_bytes < TBYTES) /* the writers had to store the oldest chunks themselves */
        ck_assert_uint_gt(own, 0);
    else
        ck_assert_uint_eq(own, 0);
    flush_ok(&f);
    close_fx(&f);
    check_reads_back(zarray_t, model, TBYTES);
    for (unsigned cj = 0; cj < 8; cj++) {
        char key[32];
        snprintf(key, sizeof key, "5.%u", cj);
        ck_assert_msg(!file_exists(key), "%s", key);
    }
    remove_dir();
}

START_TEST(concurrent_disjoint_writes) { concurrent_case(false, 1 << 20); }
END_TEST

START_TEST(concurrent_disjoint_writes_small_cache) { concurrent_case(true, 8 * 60); }
END_TEST

/* Readers never see a chunk half built: a write covering chunks whole enters each chunk into the
 * cache complete (all its elements written), although the write copies it row by row. 64 x 64
 * "<u2" in 64 x 1 chunks (columns): a write of the whole array touches every chunk once per row,
 * so a chunk built from the fill value would show fill below the rows written so far. Readers of
 * the same array check that no element ever reads as the fill value once generation 1 is stored,
 * while a writer writes generations 2, 3, ... over everything (a small cache makes it store and
 * evict chunks on the way, so chunks are built again and again). */
#define VR 64
#define VBYTES (VR * VR * 2)

static const char *zarray_v =
    "{\"zarr_format\": 2, \"shape\": [64, 64], \"chunks\": [64, 1], \"dtype\": \"<u2\","
    " \"compressor\": null, \"filters\": null, \"fill_value\": 65535, \"order\": \"C\"}";

typedef struct gen_shared {
    fixture *f;
    _Atomic int done;
    _Atomic unsigned gen; /* highest generation being written */
} gen_shared;

typedef struct gen_reader_arg {
    gen_shared *sh;
    unsigned seed, reads, bad, bad_value;
    uint64_t bad_off;
} gen_reader_arg;

static void *gen_writer(void *p)
{
    gen_shared *sh = p;
    static uint16_t buf[VR * VR];
    for (unsigned gen = 2; gen <= 12; gen++) {
        for (size_t k = 0; k < VR * VR; k++)
            buf[k] = (uint16_t)gen;
        sh->gen = gen;
        zf_err err = {""};
        ck_assert_int_eq(zf_array_write(sh->f->a, 0, buf, VBYTES, &err), ZF_OK);
        ck_assert_int_eq(zf_array_flush(sh->f->a, &err), ZF_OK);
    }
    sh->done = 1;
    return NULL;
}

static void *gen_reader(void *p)
{
    gen_reader_arg *r = p;
    while (!r->sh->done) {
        uint16_t row[VR];
        uint64_t off = (uint64_t)(rand_r(&r->seed) % VR) * VR * 2;
        size_t got;
        zf_err err = {""};
        ck_assert_int_eq(zf_array_read(r->sh->f->a, off, row, sizeof row, &got, &err), ZF_OK);
        unsigned hi = r->sh->gen; /* read after the row: no element can be newer */
        for (unsigned j = 0; j < VR; j++)
            if (row[j] < 1 || row[j] > hi) {
                r->bad++;
                r->bad_value = row[j];
                r->bad_off = off + 2 * j;
            }
        r->reads++;
    }
    return NULL;
}

START_TEST(covered_chunks_enter_the_cache_whole)
{
    new_dir();
    fixture f;
    open_fx(&f, zarray_v, 8 * VR * 2, 0, false, false);
    static uint16_t buf[VR * VR];
    for (size_t k = 0; k < VR * VR; k++)
        buf[k] = 1;
    write_ok(&f, 0, buf, VBYTES);
    flush_ok(&f);
    gen_shared sh = {.f = &f, .gen = 1};
    gen_reader_arg r[2] = {{.sh = &sh, .seed = 17}, {.sh = &sh, .seed = 29}};
    pthread_t tw, tr[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&tr[i], NULL, gen_reader, &r[i]);
    pthread_create(&tw, NULL, gen_writer, &sh);
    pthread_join(tw, NULL);
    for (int i = 0; i < 2; i++) {
        pthread_join(tr[i], NULL);
        ck_assert_msg(r[i].bad == 0, "%u elements in %u reads: %u at byte %llu", r[i].bad,
                      r[i].reads, r[i].bad_value, (unsigned long long)r[i].bad_off);
    }
    close_fx(&f);
    remove_dir();
}
END_TEST

ZF_CHECK_MAIN("array-write", partial_writes_raw_c_order, partial_writes_raw_f_order_slash,
              partial_writes_zlib, partial_writes_blosc_f_order, covering_writes_do_not_read,
              fill_chunks_are_erased, fill_chunks_kept_with_write_empty_chunks,
              fill_null_never_erases, fill_zero_erases_zeros, new_fill_chunks_are_not_stored,
              edge_chunks_padded_with_fill, erase_chunk_rows_removes_rows, write_errors,
              array_directory_gone, zero_dim_array, concurrent_disjoint_writes,
              concurrent_disjoint_writes_small_cache, covered_chunks_enter_the_cache_whole)
