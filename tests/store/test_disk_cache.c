/* The disk cache (store_diskcache.c) over a counting in-memory store with versions (ETags), and
 * once over the HTTP store and http_test_server.py: reuse across opens without requests, torn,
 * corrupt and foreign entries, changed values after the ttl, absent keys, the LRU bound, writes,
 * two caches sharing a directory from two processes, the directory's mode. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store_impl.h"
#include "zarrfs/store.h"

#include "store_tests.h"

uint64_t zf_disk_cache_xxh64(const void *buf, size_t len, uint64_t seed);

/* ---- a versioned in-memory store that counts requests ---------------------------------------
 * The backend outlives the store objects, so that two opens see the same values and counts. */

#define MAX_OBJS 128

typedef struct fake_obj {
    char key[64];
    uint8_t *data;
    size_t len;
    unsigned gen; /* bumped by every change: the ETag */
} fake_obj;

typedef struct fake_backend {
    pthread_mutex_t mu;
    fake_obj objs[MAX_OBJS];
    size_t n;
    _Atomic unsigned reads, heads, lists, writes;
} fake_backend;

typedef struct fake_store {
    zf_store base;
    fake_backend *b;
} fake_store;

static fake_obj *find(fake_backend *b, const char *key)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->objs[i].data && strcmp(b->objs[i].key, key) == 0)
            return &b->objs[i];
    return NULL;
}

static void put(fake_backend *b, const char *key, const void *data, size_t len)
{
    pthread_mutex_lock(&b->mu);
    fake_obj *o = find(b, key);
    if (!o) {
        ck_assert_uint_lt(b->n, MAX_OBJS);
        o = &b->objs[b->n++];
        snprintf(o->key, sizeof o->key, "%s", key);
    }
    free(o->data);
    o->data = malloc(len ? len : 1);
    memcpy(o->data, data, len);
    o->len = len;
    o->gen++;
    pthread_mutex_unlock(&b->mu);
}

static void backend_free(fake_backend *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->objs[i].data);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

static fake_backend *backend_new(void)
{
    fake_backend *b = calloc(1, sizeof *b);
    pthread_mutex_init(&b->mu, NULL);
    return b;
}

static zf_status f_read(zf_store *s, const char *key, zf_read_kind kind, uint64_t offset,
                        uint64_t len, zf_bytes *out, zf_store_version *ver, zf_err *err)
{
    (void)err;
    fake_backend *b = ((fake_store *)s)->b;
    if (kind == ZF_READ_STAT)
        b->heads++;
    else
        b->reads++;
    pthread_mutex_lock(&b->mu);
    fake_obj *o = find(b, key);
    if (!o) {
        pthread_mutex_unlock(&b->mu);
        return ZF_ERR_NOT_FOUND;
    }
    memset(ver, 0, sizeof *ver);
    snprintf(ver->etag, sizeof ver->etag, "\"g%u-%zu\"", o->gen, o->len);
    ver->size = o->len;
    ver->has_size = true;
    uint64_t a = 0, n = 0;
    if (kind == ZF_READ_ALL) {
        n = o->len;
    } else if (kind == ZF_READ_RANGE) {
        a = offset < o->len ? offset : o->len;
        n = o->len - a < len ? o->len - a : len;
    } else if (kind == ZF_READ_SUFFIX) {
        n = len < o->len ? len : o->len;
        a = o->len - n;
    }
    if (kind != ZF_READ_STAT) {
        out->data = malloc(n ? n : 1);
        memcpy(out->data, o->data + a, n);
        out->len = n;
    }
    pthread_mutex_unlock(&b->mu);
    return ZF_OK;
}

static zf_status f_get(zf_store *s, const char *key, zf_bytes *out, zf_err *err)
{
    zf_store_version v;
    return f_read(s, key, ZF_READ_ALL, 0, 0, out, &v, err);
}

static zf_status f_get_partial(zf_store *s, const char *key, uint64_t off, uint64_t len,
                               zf_bytes *out, zf_err *err)
{
    zf_store_version v;
    return f_read(s, key, ZF_READ_RANGE, off, len, out, &v, err);
}

static zf_status f_stat(zf_store *s, const char *key, uint64_t *size, struct timespec *mt,
                        zf_err *err)
{
    zf_store_version v;
    zf_status st = f_read(s, key, ZF_READ_STAT, 0, 0, NULL, &v, err);
    if (st == ZF_OK && size)
        *size = v.size;
    if (st == ZF_OK && mt)
        *mt = v.mtime;
    return st;
}

static zf_status f_list(zf_store *s, const char *prefix, zf_store_listing *out, zf_err *err)
{
    (void)err;
    fake_backend *b = ((fake_store *)s)->b;
    b->lists++;
    size_t pl = strlen(prefix), cap = 0;
    *out = (zf_store_listing){0};
    pthread_mutex_lock(&b->mu);
    for (size_t i = 0; i < b->n; i++) {
        const char *k = b->objs[i].key;
        if (!b->objs[i].data || strncmp(k, prefix, pl) != 0 || (pl && k[pl] != '/'))
            continue;
        const char *rest = k + pl + (pl ? 1 : 0), *slash = strchr(rest, '/');
        zf_listing_add(out, &cap, rest, slash ? (size_t)(slash - rest) : strlen(rest), slash);
    }
    pthread_mutex_unlock(&b->mu);
    zf_listing_sort_unique(out);
    return out->n ? ZF_OK : ZF_ERR_NOT_FOUND;
}

static zf_status f_set(zf_store *s, const char *key, const uint8_t *data, size_t len,
                       zf_err *err)
{
    (void)err;
    fake_backend *b = ((fake_store *)s)->b;
    b->writes++;
    put(b, key, data, len);
    return ZF_OK;
}

static zf_status f_erase(zf_store *s, const char *key, zf_err *err)
{
    (void)err;
    fake_backend *b = ((fake_store *)s)->b;
    b->writes++;
    pthread_mutex_lock(&b->mu);
    fake_obj *o = find(b, key);
    if (o) {
        free(o->data);
        o->data = NULL;
        o->key[0] = '\0';
    }
    pthread_mutex_unlock(&b->mu);
    return ZF_OK;
}

static void f_destroy(zf_store *s)
{
    free(s->url);
    free(s);
}

static const zf_store_ops fake_ops = {
    .scheme = "fake", .get = f_get, .get_partial = f_get_partial, .stat = f_stat,
    .list_dir = f_list, .destroy = f_destroy, .set = f_set, .erase = f_erase,
    .read_versioned = f_read,
};

static char tmp_root[64];

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static void setup(void)
{
    snprintf(tmp_root, sizeof tmp_root, "/tmp/zf-dc-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmp_root));
}

static void teardown(void)
{
    chmod(tmp_root, 0700);
    nftw(tmp_root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static char *cache_dir(void)
{
    static char dir[128];
    snprintf(dir, sizeof dir, "%s/cache", tmp_root);
    return dir;
}

/* The disk cache's injected clock: seconds a test moves time on by, so that ttl checks do not
 * depend on how fast the machine runs the test. */
static double clock_advance;

static zf_store *open_cache(fake_backend *b, uint64_t max, double ttl)
{
    fake_store *f = calloc(1, sizeof *f);
    f->base.ops = &fake_ops;
    f->base.url = strdup("fake://store");
    f->base.remote = true;
    f->b = b;
    zf_disk_cache_options o = {
        .dir = cache_dir(), .max_bytes = max, .ttl = ttl, .clock_advance = &clock_advance};
    zf_store *s;
    zf_err err = {""};
    ck_assert_msg(zf_store_disk_cache_open(&f->base, &o, &s, &err) == ZF_OK, "%s", err.msg);
    return s;
}

static zf_disk_cache_stats stats(zf_store *s)
{
    zf_disk_cache_stats c;
    ck_assert(zf_store_disk_cache_stats(s, &c));
    return c;
}

static void expect(zf_store *s, const char *key, const void *want, size_t n)
{
    zf_bytes b;
    zf_err err = {""};
    ck_assert_msg(zf_store_get(s, key, &b, &err) == ZF_OK, "%s: %s", key, err.msg);
    ck_assert_uint_eq(b.len, n);
    ck_assert_msg(memcmp(b.data, want, n) == 0, "%s: wrong bytes", key);
    zf_bytes_free(&b);
}

static void expect_range(zf_store *s, const char *key, uint64_t off, uint64_t len,
                         const uint8_t *whole, size_t whole_len)
{
    zf_bytes b;
    zf_err err = {""};
    ck_assert_msg(zf_store_get_partial(s, key, off, len, &b, &err) == ZF_OK, "%s", err.msg);
    size_t want = off >= whole_len ? 0 : whole_len - off < len ? whole_len - off : len;
    ck_assert_uint_eq(b.len, want);
    ck_assert(memcmp(b.data, whole + off, want) == 0);
    zf_bytes_free(&b);
}

static void expect_suffix(zf_store *s, const char *key, uint64_t len, const uint8_t *whole,
                          size_t whole_len)
{
    zf_bytes b;
    uint64_t total = 0;
    zf_err err = {""};
    ck_assert_msg(zf_store_get_suffix(s, key, len, &b, &total, &err) == ZF_OK, "%s", err.msg);
    ck_assert_uint_eq(total, whole_len);
    ck_assert_uint_eq(b.len, len);
    ck_assert(memcmp(b.data, whole + whole_len - len, len) == 0);
    zf_bytes_free(&b);
}

/* Paths of the entry files named `name` below the cache ("" for all). */
static char found[64][256];
static size_t n_found;
static const char *want_name;

static int collect(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)ftw;
    const char *base = strrchr(path, '/') + 1;
    if (flag == FTW_F && strstr(path, "/v1/") && (!*want_name || strcmp(base, want_name) == 0) &&
        n_found < 64)
        snprintf(found[n_found++], sizeof found[0], "%s", path);
    return 0;
}

static size_t entries_named(const char *name)
{
    n_found = 0;
    want_name = name;
    nftw(cache_dir(), collect, 16, FTW_PHYS);
    return n_found;
}

static uint64_t bytes_on_disk;

static int sum_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)ftw;
    if (flag == FTW_F && strstr(path, "/v1/"))
        bytes_on_disk += ((uint64_t)sb->st_size + 4095) / 4096 * 4096;
    return 0;
}

static uint64_t disk_usage(void)
{
    bytes_on_disk = 0;
    nftw(cache_dir(), sum_entry, 16, FTW_PHYS);
    return bytes_on_disk;
}

static uint8_t blob[20000];

static void fill_blob(void)
{
    for (size_t i = 0; i < sizeof blob; i++)
        blob[i] = (uint8_t)(i * 131 + (i >> 8));
}

static const char zarray[] = "{\"zarr_format\": 2, \"shape\": [10]}";

/* ---- tests -------------------------------------------------------------------------------- */

START_TEST(dc_xxh64_vectors)
{
    ck_assert_uint_eq(zf_disk_cache_xxh64("", 0, 0), 0xEF46DB3751D8E999u);
    ck_assert_uint_eq(zf_disk_cache_xxh64("abc", 3, 0), 0x44BC2CF5AD770999u);
}
END_TEST

/* Everything read through one open is read from disk by the next: no request at all. */
START_TEST(dc_reuse_across_opens)
{
    fill_blob();
    fake_backend *b = backend_new();
    put(b, "a/.zarray", zarray, strlen(zarray));
    put(b, "a/0", blob, 1000);
    put(b, "a/1", blob, 5000);
    for (int round = 0; round < 2; round++) {
        unsigned reads = b->reads, heads = b->heads, lists = b->lists;
        zf_store *s = open_cache(b, 0, 3600);
        zf_err err = {""};
        expect(s, "a/.zarray", zarray, strlen(zarray));
        expect(s, "a/0", blob, 1000);
        expect_suffix(s, "a/1", 64, blob, 5000);     /* a shard index */
        expect_range(s, "a/1", 100, 200, blob, 5000); /* two inner chunks */
        expect_range(s, "a/1", 4990, 50, blob, 5000); /* clipped at the end */
        uint64_t size;
        ck_assert_int_eq(zf_store_stat(s, "a/1", &size, NULL, &err), ZF_OK);
        ck_assert_uint_eq(size, 5000);
        zf_bytes x;
        ck_assert_int_eq(zf_store_get(s, "a/missing", &x, &err), ZF_ERR_NOT_FOUND);
        zf_store_listing l;
        ck_assert_int_eq(zf_store_list_dir(s, "a", &l, &err), ZF_OK);
        ck_assert_uint_eq(l.n, 3);
        zf_store_listing_free(&l);
        zf_disk_cache_stats c = stats(s);
        if (round == 0) {
            ck_assert_uint_eq(c.hits, 0);
            ck_assert_uint_ge(c.bytes_written, 6 * 4096);
        } else { /* the second open: nothing reached the store */
            ck_assert_uint_eq(b->reads, reads);
            ck_assert_uint_eq(b->heads, heads);
            ck_assert_uint_eq(b->lists, lists);
            ck_assert_uint_eq(c.misses, 0);
            ck_assert_uint_eq(c.hits, 8);
            /* values, and the listing (3 names: 5 bytes each + the names) */
            ck_assert_uint_eq(c.bytes_read, strlen(zarray) + 1000 + 64 + 200 + 10 + 24);
            zf_store_stats ss;
            zf_store_get_stats(s, &ss);
            ck_assert_uint_eq(ss.requests, 0); /* the wrapped store's traffic */
        }
        zf_store_close(s);
    }
    backend_free(b);
}
END_TEST

/* A corrupt payload, a torn (truncated) entry, a corrupt header, an empty file: each dropped,
 * counted, fetched again, never returned. */
START_TEST(dc_bad_entries_dropped)
{
    fill_blob();
    fake_backend *b = backend_new();
    put(b, "k", blob, 9000);
    zf_store *s = open_cache(b, 0, 3600);
    expect(s, "k", blob, 9000);
    ck_assert_uint_eq(entries_named("all"), 1);
    char path[256];
    snprintf(path, sizeof path, "%s", found[0]);
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    for (int damage = 0; damage < 4; damage++) {
        int fd = open(path, O_RDWR);
        ck_assert_int_ge(fd, 0);
        if (damage == 0) { /* flip a bit of the payload */
            uint8_t c;
            ck_assert_int_eq(pread(fd, &c, 1, sb.st_size - 100), 1);
            c ^= 0x10;
            ck_assert_int_eq(pwrite(fd, &c, 1, sb.st_size - 100), 1);
        } else if (damage == 1) { /* torn: the tail missing */
            ck_assert_int_eq(ftruncate(fd, sb.st_size - 4096), 0);
        } else if (damage == 2) { /* the header's offset field */
            uint8_t c = 0x55;
            ck_assert_int_eq(pwrite(fd, &c, 1, 33), 1);
        } else { /* nothing written (a power failure after the rename) */
            ck_assert_int_eq(ftruncate(fd, 0), 0);
        }
        close(fd);
        unsigned reads = b->reads;
        expect(s, "k", blob, 9000);
        ck_assert_uint_eq(b->reads, reads + 1);
        ck_assert_uint_eq(stats(s).bad_entries, (uint64_t)damage + 1);
        ck_assert_int_eq(stat(path, &sb), 0); /* written again, whole */
        expect(s, "k", blob, 9000);            /* and used */
        ck_assert_uint_eq(b->reads, reads + 1);
    }
    zf_store_close(s);
    backend_free(b);
}
END_TEST

/* The entry of another key in this key's place (as a hash collision would leave it) is not
 * used, and not counted as bad. */
START_TEST(dc_foreign_entry_not_used)
{
    fill_blob();
    fake_backend *b = backend_new();
    put(b, "x", blob, 3000);
    put(b, "y", blob + 7, 3000);
    zf_store *s = open_cache(b, 0, 3600);
    expect(s, "x", blob, 3000);
    expect(s, "y", blob + 7, 3000);
    ck_assert_uint_eq(entries_named("all"), 2);
    /* which is which: compare with x's bytes */
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s.tmp' && mv '%s.tmp' '%s'", found[0], found[1],
             found[1], found[1]);
    ck_assert_int_eq(system(cmd), 0);
    unsigned reads = b->reads;
    expect(s, "x", blob, 3000);
    expect(s, "y", blob + 7, 3000);
    ck_assert_uint_eq(b->reads, reads + 1); /* the one whose place was taken */
    ck_assert_uint_eq(stats(s).bad_entries, 0);
    zf_store_close(s);
    backend_free(b);
}
END_TEST

/* Within the ttl an entry is used as it is; after it, one HEAD per key: the same version keeps
 * the entries, a new one (new ETag) drops them and fetches the new bytes. Time moves on by the
 * injected clock only, so a slow machine reads within the ttl all the same. */
#define TTL 60.0

START_TEST(dc_changed_value_after_ttl)
{
    fill_blob();
    fake_backend *b = backend_new();
    put(b, "v", blob, 4000);
    zf_store *s = open_cache(b, 0, TTL);
    expect(s, "v", blob, 4000);
    expect_range(s, "v", 10, 100, blob, 4000);
    expect_range(s, "v", 500, 100, blob, 4000);
    clock_advance += TTL + 1;
    /* unchanged: one HEAD revalidates the key, then its entries are used */
    zf_store_close(s);
    s = open_cache(b, 0, TTL);
    unsigned reads = b->reads, heads = b->heads;
    expect(s, "v", blob, 4000);
    expect_range(s, "v", 10, 100, blob, 4000);
    expect_range(s, "v", 500, 100, blob, 4000);
    ck_assert_uint_eq(b->reads, reads);
    ck_assert_uint_eq(b->heads, heads + 1);
    ck_assert_uint_eq(stats(s).revalidations, 1);
    ck_assert_uint_eq(stats(s).hits, 3);
    /* changed: still the old bytes within the ttl, the new ones after it */
    put(b, "v", blob + 1, 4000);
    expect(s, "v", blob, 4000);
    clock_advance += TTL + 1;
    expect(s, "v", blob + 1, 4000);
    expect_range(s, "v", 10, 100, blob + 1, 4000);
    expect_range(s, "v", 500, 100, blob + 1, 4000);
    zf_disk_cache_stats c = stats(s);
    ck_assert_uint_eq(c.revalidations, 2); /* one HEAD for the key, not one per entry */
    ck_assert_uint_eq(c.stale, 1);          /* which dropped the key's three entries */
    ck_assert_uint_eq(b->reads, reads + 3);
    zf_store_close(s);
    /* a fresh open uses the new entries */
    s = open_cache(b, 0, 3600);
    reads = b->reads;
    expect(s, "v", blob + 1, 4000);
    expect_range(s, "v", 500, 100, blob + 1, 4000);
    ck_assert_uint_eq(b->reads, reads);
    zf_store_close(s);
    backend_free(b);
}
END_TEST

/* An absent key is remembered on disk for the ttl, not beyond it, not with ttl 0 (for ever). */
START_TEST(dc_absent_for_ttl_only)
{
    fake_backend *b = backend_new();
    put(b, "present", "p", 1);
    zf_store *s = open_cache(b, 0, TTL);
    zf_bytes x;
    zf_err err = {""};
    ck_assert_int_eq(zf_store_get(s, "nope", &x, &err), ZF_ERR_NOT_FOUND);
    zf_store_close(s);
    s = open_cache(b, 0, TTL);
    unsigned reads = b->reads;
    ck_assert_int_eq(zf_store_get(s, "nope", &x, &err), ZF_ERR_NOT_FOUND);
    ck_assert_uint_eq(b->reads, reads);
    put(b, "nope", "now", 3);
    clock_advance += TTL + 1;
    expect(s, "nope", "now", 3);
    zf_store_close(s);
    s = open_cache(b, 0, 0);
    ck_assert_int_eq(zf_store_get(s, "gone", &x, &err), ZF_ERR_NOT_FOUND);
    ck_assert_uint_eq(entries_named("absent"), 0);
    zf_store_close(s);
    backend_free(b);
}
END_TEST

/* The bound holds; the least recently used entries go first. */
START_TEST(dc_lru_bound)
{
    fill_blob();
    fake_backend *b = backend_new();
    char key[16];
    for (int i = 0; i < 30; i++) {
        snprintf(key, sizeof key, "k%02d", i);
        put(b, key, blob + i, 3000); /* one 4 KiB block each */
    }
    const uint64_t max = 16 * 4096;
    zf_store *s = open_cache(b, max, 3600);
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "k%02d", i);
        expect(s, key, blob + i, 3000);
    }
    /* make k00..k09 used long ago, k00 the longest */
    ck_assert_uint_eq(entries_named("all"), 10);
    time_t now = time(NULL);
    for (size_t i = 0; i < n_found; i++) {
        char *p = found[i];
        FILE *f = fopen(p, "rb");
        uint8_t h[200];
        size_t n = fread(h, 1, sizeof h, f);
        fclose(f);
        int k = -1;
        for (size_t j = 96; j + 3 <= n; j++)
            if (h[j] == 'k' && h[j + 1] >= '0' && h[j + 1] <= '9') {
                k = (h[j + 1] - '0') * 10 + (h[j + 2] - '0');
                break;
            }
        ck_assert_int_ge(k, 0);
        struct timespec t[2] = {{now - 1000 + k, 0}, {0, UTIME_OMIT}};
        ck_assert_int_eq(utimensat(AT_FDCWD, p, t, 0), 0);
    }
    expect(s, "k00", blob, 3000); /* used again: now the most recent of them */
    for (int i = 10; i < 17; i++) {
        snprintf(key, sizeof key, "k%02d", i);
        expect(s, key, blob + i, 3000);
    }
    zf_disk_cache_stats c = stats(s);
    ck_assert_uint_eq(c.evictions, 3); /* 17 blocks > 16: down to 90%, 14 blocks */
    ck_assert_uint_le(c.bytes, max);
    ck_assert_uint_eq(c.bytes, disk_usage());
    unsigned reads = b->reads;
    expect(s, "k00", blob, 3000);
    expect(s, "k04", blob + 4, 3000);
    ck_assert_uint_eq(b->reads, reads); /* kept */
    for (int i = 1; i <= 3; i++) {
        snprintf(key, sizeof key, "k%02d", i);
        expect(s, key, blob + i, 3000);
    }
    ck_assert_uint_eq(b->reads, reads + 3); /* the three oldest went */
    /* many more: the bound holds throughout */
    for (int i = 0; i < 30; i++) {
        snprintf(key, sizeof key, "k%02d", i);
        expect(s, key, blob + i, 3000);
        ck_assert_uint_le(disk_usage(), max);
    }
    ck_assert_uint_eq(stats(s).bytes, disk_usage());
    zf_store_close(s);
    backend_free(b);
}
END_TEST

/* Writes and erasures replace the entries of their key and the listings above it. */
START_TEST(dc_writes_replace_entries)
{
    fill_blob();
    fake_backend *b = backend_new();
    put(b, "a/0", blob, 5000);
    zf_store *s = open_cache(b, 0, 3600);
    zf_err err = {""};
    expect(s, "a/0", blob, 5000);
    expect_range(s, "a/0", 100, 50, blob, 5000);
    zf_store_listing l;
    ck_assert_int_eq(zf_store_list_dir(s, "a", &l, &err), ZF_OK);
    ck_assert_uint_eq(l.n, 1);
    zf_store_listing_free(&l);
    ck_assert(zf_store_is_writable(s));
    ck_assert_int_eq(zf_store_set(s, "a/0", blob + 3, 5000, &err), ZF_OK);
    ck_assert_int_eq(zf_store_set(s, "a/1", blob, 10, &err), ZF_OK);
    expect(s, "a/0", blob + 3, 5000);
    zf_store_close(s);
    s = open_cache(b, 0, 3600);
    unsigned reads = b->reads;
    expect(s, "a/0", blob + 3, 5000);             /* the entry written after the set */
    ck_assert_uint_eq(b->reads, reads);
    expect_range(s, "a/0", 100, 50, blob + 3, 5000); /* the old range is gone */
    ck_assert_uint_eq(b->reads, reads + 1);
    ck_assert_int_eq(zf_store_list_dir(s, "a", &l, &err), ZF_OK);
    ck_assert_uint_eq(l.n, 2); /* the listing was dropped with the set */
    zf_store_listing_free(&l);
    ck_assert_int_eq(zf_store_erase(s, "a/0", &err), ZF_OK);
    zf_bytes x;
    ck_assert_int_eq(zf_store_get(s, "a/0", &x, &err), ZF_ERR_NOT_FOUND);
    zf_store_close(s);
    s = open_cache(b, 0, 3600);
    ck_assert_int_eq(zf_store_get(s, "a/0", &x, &err), ZF_ERR_NOT_FOUND);
    zf_store_close(s);
    backend_free(b);
}
END_TEST

/* Two processes, each with two threads, share one directory with a small bound (evictions all
 * the time): every read right, and the count agrees with the files at the end. */
#define SHARED_KEYS 40

static void *shared_worker(void *arg)
{
    zf_store *s = arg;
    unsigned seed = (unsigned)(uintptr_t)pthread_self() ^ (unsigned)getpid();
    for (int i = 0; i < 300; i++) {
        int k = rand_r(&seed) % SHARED_KEYS;
        char key[16];
        snprintf(key, sizeof key, "s/%d", k);
        size_t n = 500 + (size_t)k * 400;
        zf_bytes bb;
        zf_err err = {""};
        zf_status st = (i % 3 == 2) ? zf_store_get_partial(s, key, 7, 300, &bb, &err)
                                    : zf_store_get(s, key, &bb, &err);
        const uint8_t *want = blob + k + (i % 3 == 2 ? 7 : 0);
        size_t wn = i % 3 == 2 ? 300 : n;
        if (st != ZF_OK || bb.len != wn || memcmp(bb.data, want, wn) != 0) {
            fprintf(stderr, "shared: %s: status %d, %zu bytes: %s\n", key, st, bb.len,
                    err.msg);
            if (st == ZF_OK)
                zf_bytes_free(&bb);
            return (void *)1;
        }
        zf_bytes_free(&bb);
    }
    return NULL;
}

static int run_sharer(fake_backend *b)
{
    zf_store *s = open_cache(b, 24 * 4096, 3600);
    pthread_t t[2];
    void *r[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, shared_worker, s);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], &r[i]);
    zf_store_close(s);
    return r[0] || r[1];
}

START_TEST(dc_shared_dir_two_processes)
{
    fill_blob();
    fake_backend *b = backend_new();
    for (int k = 0; k < SHARED_KEYS; k++) {
        char key[16];
        snprintf(key, sizeof key, "s/%d", k);
        put(b, key, blob + k, 500 + (size_t)k * 400);
    }
    zf_store *first = open_cache(b, 24 * 4096, 3600); /* makes the directory */
    zf_store_close(first);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(run_sharer(b));
    int mine = run_sharer(b);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_int_eq(mine, 0);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    zf_store *s = open_cache(b, 24 * 4096, 3600);
    zf_disk_cache_stats c = stats(s);
    ck_assert_uint_le(c.bytes, 24 * 4096);
    ck_assert_uint_eq(c.bytes, disk_usage());
    ck_assert_int_eq(shared_worker(s) == NULL, 1);
    zf_store_close(s);
    char tmpdir[200];
    snprintf(tmpdir, sizeof tmpdir, "%s/tmp", cache_dir());
    ck_assert_int_eq(rmdir(tmpdir), 0); /* no temporary file left */
    backend_free(b);
}
END_TEST

START_TEST(dc_directory_mode)
{
    fake_backend *b = backend_new();
    char parent[128];
    snprintf(parent, sizeof parent, "%s/cache", tmp_root);
    zf_store *s = open_cache(b, 0, 60);
    zf_store_close(s);
    struct stat sb;
    ck_assert_int_eq(stat(parent, &sb), 0);
    ck_assert_uint_eq(sb.st_mode & 07777, 0700);
    char sub[200];
    snprintf(sub, sizeof sub, "%s/v1", parent);
    ck_assert_int_eq(stat(sub, &sb), 0);
    ck_assert_uint_eq(sb.st_mode & 07777, 0700);

    fake_store *f = calloc(1, sizeof *f);
    f->base.ops = &fake_ops;
    f->base.url = strdup("fake://store");
    f->b = b;
    char deep[200];
    snprintf(deep, sizeof deep, "%s/new/deeper/cache", tmp_root);
    zf_disk_cache_options o = {.dir = deep, .ttl = 60};
    zf_err err = {""};
    ck_assert_int_eq(zf_store_disk_cache_open(&f->base, &o, &s, &err), ZF_OK);
    zf_store_close(s);
    ck_assert_int_eq(stat(deep, &sb), 0);
    ck_assert_uint_eq(sb.st_mode & 07777, 0700);
    snprintf(sub, sizeof sub, "%s/new", tmp_root); /* missing parents too */
    ck_assert_int_eq(stat(sub, &sb), 0);
    ck_assert_uint_eq(sb.st_mode & 07777, 0700);
    /* a directory others can write to is refused, the store left to the caller */
    f = calloc(1, sizeof *f);
    f->base.ops = &fake_ops;
    f->base.url = strdup("fake://store");
    f->b = b;
    ck_assert_int_eq(chmod(deep, 0777), 0);
    ck_assert_int_eq(zf_store_disk_cache_open(&f->base, &o, &s, &err), ZF_ERR_IO);
    ck_assert_msg(strstr(err.msg, "writable by others"), "%s", err.msg);
    zf_store_close(&f->base);
    backend_free(b);
}
END_TEST

/* Over the HTTP store and http_test_server.py: versions come from ETag headers; a second open
 * sends nothing; a file changed on the server is fetched again after the ttl. */
START_TEST(dc_over_http)
{
    fill_blob();
    char srv[128], file[200];
    snprintf(srv, sizeof srv, "%s/srv", tmp_root);
    ck_assert_int_eq(mkdir(srv, 0755), 0);
    snprintf(file, sizeof file, "%s/blob", srv);
    FILE *f = fopen(file, "wb");
    fwrite(blob, 1, 10000, f);
    fclose(f);
    const char *argv[] = {TEST_PYTHON, "-u", STORE_TEST_SRCDIR "/http_test_server.py", srv, NULL};
    test_server sv;
    if (!test_server_start(&sv, argv, NULL, false))
        return;
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", sv.port);
    zf_disk_cache_options o = {.dir = cache_dir(), .ttl = TTL, .clock_advance = &clock_advance};
    for (int round = 0; round < 3; round++) {
        zf_store *h, *s;
        zf_err err = {""};
        ck_assert_int_eq(zf_store_open(url, NULL, &h, &err), ZF_OK);
        ck_assert_msg(zf_store_disk_cache_open(h, &o, &s, &err) == ZF_OK, "%s", err.msg);
        const uint8_t *want = round < 2 ? blob : blob + 1;
        expect(s, "blob", want, 10000);
        expect_range(s, "blob", 1000, 3000, want, 10000);
        expect_suffix(s, "blob", 16, want, 10000);
        uint64_t size;
        ck_assert_int_eq(zf_store_stat(s, "blob", &size, NULL, &err), ZF_OK);
        ck_assert_uint_eq(size, 10000);
        zf_store_stats ss;
        zf_store_get_stats(s, &ss);
        zf_disk_cache_stats c = stats(s);
        if (round == 1) { /* within the ttl: nothing sent */
            ck_assert_uint_eq(ss.requests, 0);
            ck_assert_uint_eq(c.hits, 4);
        } else if (round == 2) { /* changed: one HEAD, then the three reads again */
            ck_assert_uint_eq(c.revalidations, 1);
            ck_assert_uint_eq(c.stale, 1);
            ck_assert_uint_eq(ss.requests, 4);
        }
        zf_store_close(s);
        if (round == 1) { /* a new value, a new mtime: a new ETag */
            clock_advance += TTL + 1;
            f = fopen(file, "wb");
            fwrite(blob + 1, 1, 10000, f);
            fclose(f);
            struct timespec t[2] = {{time(NULL) + 5, 0}, {time(NULL) + 5, 0}};
            utimensat(AT_FDCWD, file, t, 0);
        }
    }
    test_server_stop(&sv);
}
END_TEST

TCase *store_disk_cache_tcase(void)
{
    TCase *tc = tcase_create("disk_cache");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, dc_xxh64_vectors);
    tcase_add_test(tc, dc_reuse_across_opens);
    tcase_add_test(tc, dc_bad_entries_dropped);
    tcase_add_test(tc, dc_foreign_entry_not_used);
    tcase_add_test(tc, dc_changed_value_after_ttl);
    tcase_add_test(tc, dc_absent_for_ttl_only);
    tcase_add_test(tc, dc_lru_bound);
    tcase_add_test(tc, dc_writes_replace_entries);
    tcase_add_test(tc, dc_shared_dir_two_processes);
    tcase_add_test(tc, dc_directory_mode);
    tcase_add_test(tc, dc_over_http);
    return tc;
}
