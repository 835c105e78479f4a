/* fuzz.h — what the libFuzzer targets of tests/fuzz/ share: quiet logging, splitting an input
 * into parts, an in-memory store (for the hierarchy, zip and consolidated-metadata targets) and a
 * check that aborts (so that libFuzzer and the regression driver report it as a crash).
 *
 * Each target defines LLVMFuzzerTestOneInput; built with -fsanitize=fuzzer it is a libFuzzer
 * binary (-Dfuzz=true, scripts/fuzz.sh), linked with regress_main.c it replays the inputs of
 * tests/fuzz/regress/<target>/ as a unit test of every build. */
#ifndef ZARRFS_FUZZ_H
#define ZARRFS_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_impl.h"
#include "zarrfs/log.h"
#include "zarrfs/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Largest decoded chunk a target decodes (bytes): larger ones are skipped, not failures, so that
 * one input cannot make libFuzzer run out of memory or time for nothing. 128 KiB: codecs and the
 * array layer do the same with a larger chunk, only longer, and ASan serves blocks up to this
 * size from its size classes; each larger one is a fresh mapping, poisoned and unmapped again
 * (with 1 MiB, the kernel's share of fuzz_codec_v2's time was 13%). */
#define FZ_MAX_CHUNK ((size_t)1 << 17)

/* Once per process: silence zarrfs's log (every rejected input would write a line); and name a
 * time zone, so that libc does not look at /etc/localtime again at each mktime (libzip converts
 * every entry's DOS time). */
static inline void fz_init(void)
{
    static bool done;
    if (!done) {
        zf_log_set_level((zf_log_level)-1);
        setenv("TZ", "UTC0", 1);
        tzset();
        done = true;
    }
}

/* A failed invariant: say which and abort (libFuzzer saves the input as a crash). */
#define FZ_CHECK(cond, ...)                                                                       \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            fprintf(stderr, "fuzz check failed: %s (%s:%d): ", #cond, __FILE__, __LINE__);       \
            fprintf(stderr, __VA_ARGS__);                                                         \
            fputc('\n', stderr);                                                                  \
            abort();                                                                              \
        }                                                                                         \
    } while (0)

/* A NUL-terminated copy of n bytes (the parsers take lengths, but messages and C-string APIs
 * want terminated text). */
static inline char *fz_strndup(const uint8_t *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, p, n);
        s[n] = '\0';
    }
    return s;
}

/* Split [*p, *p + *n) at the first occurrence of sep: the part before it in (part, part_n),
 * the rest after it left in (*p, *n). Without sep the whole input is the part and nothing is
 * left. */
static inline void fz_split(const uint8_t **p, size_t *n, const char *sep, const uint8_t **part,
                            size_t *part_n)
{
    size_t sl = strlen(sep);
    const uint8_t *hit = sl <= *n ? memmem(*p, *n, sep, sl) : NULL;
    *part = *p;
    if (!hit) {
        *part_n = *n;
        *p += *n;
        *n = 0;
        return;
    }
    *part_n = (size_t)(hit - *p);
    *n -= *part_n + sl;
    *p = hit + sl;
}

/* ---- an in-memory, read-only store ---------------------------------------------------------- */

typedef struct fz_entry {
    char *key;
    uint8_t *data;
    size_t len;
    size_t seq; /* order of fz_mem_put: of a key put twice, the later value wins */
} fz_entry;

typedef struct fz_mem_store {
    zf_store base;
    fz_entry *e; /* sorted by key, each key once, once fz_mem_seal ran */
    size_t n, cap;
} fz_mem_store;

/* Binary search of the sealed table: a lookup costs log2(n) key comparisons, not n (with many
 * keys, the linear scan of intercepted strcmp calls was a large part of the hierarchy target's
 * time). */
static inline const fz_entry *fz_mem_find(const fz_mem_store *m, const char *key)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(m->e[mid].key, key);
        if (c == 0)
            return &m->e[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static inline zf_status fz_mem_get_partial(zf_store *s, const char *key, uint64_t offset,
                                           uint64_t len, zf_bytes *out, zf_err *err)
{
    const fz_entry *e = fz_mem_find((fz_mem_store *)s, key);
    if (!e)
        return zf_fail(err, ZF_ERR_NOT_FOUND, "%s: not found", key);
    uint64_t off = offset < e->len ? offset : e->len;
    uint64_t n = e->len - off < len ? e->len - off : len;
    out->data = malloc(n ? (size_t)n : 1);
    if (!out->data)
        return ZF_ERR_NOMEM;
    if (n)
        memcpy(out->data, e->data + off, (size_t)n);
    out->len = (size_t)n;
    return ZF_OK;
}

static inline zf_status fz_mem_get(zf_store *s, const char *key, zf_bytes *out, zf_err *err)
{
    return fz_mem_get_partial(s, key, 0, UINT64_MAX, out, err);
}

static inline zf_status fz_mem_stat(zf_store *s, const char *key, uint64_t *size,
                                    struct timespec *mtime, zf_err *err)
{
    const fz_entry *e = fz_mem_find((fz_mem_store *)s, key);
    if (!e)
        return zf_fail(err, ZF_ERR_NOT_FOUND, "%s: not found", key);
    if (size)
        *size = e->len;
    if (mtime)
        *mtime = (struct timespec){1700000000, 0};
    return ZF_OK;
}

static inline zf_status fz_mem_list_dir(zf_store *s, const char *prefix, zf_store_listing *out,
                                        zf_err *err)
{
    (void)err;
    fz_mem_store *m = (fz_mem_store *)s;
    zf_key_table t = {m->e, m->n, sizeof *m->e, offsetof(fz_entry, key)};
    return zf_key_table_list(&t, prefix, out);
}

static inline void fz_mem_destroy(zf_store *s)
{
    fz_mem_store *m = (fz_mem_store *)s;
    for (size_t i = 0; i < m->n; i++) {
        free(m->e[i].key);
        free(m->e[i].data);
    }
    free(m->e);
    free(m->base.url);
    free(m);
}

static const zf_store_ops fz_mem_ops = {
    .scheme = "fuzz-memory",
    .get = fz_mem_get,
    .get_partial = fz_mem_get_partial,
    .stat = fz_mem_stat,
    .list_dir = fz_mem_list_dir,
    .destroy = fz_mem_destroy,
};

static inline fz_mem_store *fz_mem_new(void)
{
    fz_mem_store *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->base.ops = &fz_mem_ops;
    if (!(m->base.url = strdup("memory://fuzz"))) {
        free(m);
        return NULL;
    }
    return m;
}

/* Add key's value: a copy of n bytes (put again, the key takes the later value when the store
 * is sealed). Invalid keys are left out, as no backend could hold them. Appends only: the table
 * is sorted once, by fz_mem_seal. */
static inline bool fz_mem_put(fz_mem_store *m, const char *key, const uint8_t *data, size_t n)
{
    if (!zf_key_is_valid(key))
        return true;
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 16;
        fz_entry *e = realloc(m->e, cap * sizeof *e);
        if (!e)
            return false;
        m->e = e, m->cap = cap;
    }
    fz_entry *x = &m->e[m->n];
    if (!(x->key = strdup(key)) || !(x->data = malloc(n ? n : 1))) {
        free(x->key);
        return false;
    }
    memcpy(x->data, data, n);
    x->len = n;
    x->seq = m->n++;
    return true;
}

static inline int fz_entry_cmp(const void *a, const void *b)
{
    const fz_entry *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sort the keys (list_dir and fz_mem_find need them sorted) and keep the last value put of each
 * key; call after the last fz_mem_put. */
static inline void fz_mem_seal(fz_mem_store *m)
{
    if (m->n < 2)
        return;
    qsort(m->e, m->n, sizeof *m->e, fz_entry_cmp);
    size_t k = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (i + 1 < m->n && strcmp(m->e[i].key, m->e[i + 1].key) == 0) {
            free(m->e[i].key);
            free(m->e[i].data);
            continue;
        }
        m->e[k++] = m->e[i];
    }
    m->n = k;
}

/* A store image: entries separated by FZ_SEP, each "key\n" followed by the value's bytes
 * (tests/fuzz/seeds.py writes fixture directories in this form). */
#define FZ_SEP "\n%%zf%%\n"

static inline fz_mem_store *fz_mem_from_image(const uint8_t *data, size_t size)
{
    fz_mem_store *m = fz_mem_new();
    if (!m)
        return NULL;
    const uint8_t *p = data;
    size_t n = size;
    while (n) {
        const uint8_t *ent, *key, *val;
        size_t ent_n, key_n, val_n;
        fz_split(&p, &n, FZ_SEP, &ent, &ent_n);
        fz_split(&ent, &ent_n, "\n", &key, &key_n);
        val = ent, val_n = ent_n;
        char *k = fz_strndup(key, key_n);
        if (!k || strlen(k) != key_n || !fz_mem_put(m, k, val, val_n)) {
            free(k);
            continue;
        }
        free(k);
    }
    fz_mem_seal(m);
    return m;
}

/* ---- walking a store ------------------------------------------------------------------------
 * Every listed prefix listed, every key stat'ed and read whole, by range and by suffix (at most
 * FZ_VISITS names, values up to 4 * FZ_MAX_CHUNK bytes); a whole read must have the size stat
 * gave and agree with the range and suffix reads. 16 names: the store's code runs the same for
 * the 17th as for the 16th, and with 64 most of fuzz_zip's time went to the fixture archives'
 * many entries. */
#define FZ_VISITS 16

typedef struct fz_store_walk {
    zf_store *z;
    unsigned visits;
} fz_store_walk;

static inline void fz_visit_key(fz_store_walk *w, const char *key)
{
    zf_err err = {""};
    uint64_t size;
    if (zf_store_stat(w->z, key, &size, NULL, &err) != ZF_OK || size > 4 * FZ_MAX_CHUNK)
        return;
    zf_bytes all = {0}, part = {0}, tail = {0};
    zf_status st = zf_store_get(w->z, key, &all, &err);
    if (st == ZF_OK)
        FZ_CHECK(all.len == size, "%s: %zu bytes read, stat says %llu", key, all.len,
                 (unsigned long long)size);
    if (zf_store_get_partial(w->z, key, 1, 7, &part, &err) == ZF_OK && st == ZF_OK) {
        size_t want = size <= 1 ? 0 : size - 1 < 7 ? (size_t)size - 1 : 7;
        FZ_CHECK(part.len == want && (want == 0 || memcmp(part.data, all.data + 1, want) == 0),
                 "%s: range [1, 8) differs from the whole value", key);
    }
    uint64_t total;
    if (zf_store_get_suffix(w->z, key, 5, &tail, &total, &err) == ZF_OK && st == ZF_OK) {
        size_t want = all.len < 5 ? all.len : 5;
        FZ_CHECK(total == all.len && tail.len == want &&
                     (want == 0 || memcmp(tail.data, all.data + all.len - want, want) == 0),
                 "%s: suffix differs from the whole value", key);
    }
    zf_bytes_free(&all);
    zf_bytes_free(&part);
    zf_bytes_free(&tail);
}

static inline void fz_visit_dir(fz_store_walk *w, const char *prefix, unsigned depth)
{
    zf_store_listing l;
    zf_err err = {""};
    if (depth > 8 || zf_store_list_dir(w->z, prefix, &l, &err) != ZF_OK)
        return;
    for (size_t i = 0; i < l.n && w->visits < FZ_VISITS; i++, w->visits++) {
        char *key;
        if (asprintf(&key, "%s%s%s", prefix, *prefix ? "/" : "", l.entries[i].name) < 0)
            break;
        FZ_CHECK(zf_key_is_valid(key), "listed key \"%s\" is not valid", key);
        if (l.entries[i].is_prefix)
            fz_visit_dir(w, key, depth + 1);
        else
            fz_visit_key(w, key);
        free(key);
    }
    zf_store_listing_free(&l);
}

#endif
