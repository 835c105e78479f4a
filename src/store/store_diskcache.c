/* store_diskcache.c — the disk cache: a store wrapper (tensorstore's kvstore adapters are the
 * model) between a remote store and everything above it. It keeps what the remote store returns —
 * whole values, byte ranges (shard pieces), suffixes (shard indexes), stats, and for a while the
 * absence of a key — in files below a directory, so that a later mount of the same store reads
 * them from local disk. Codecs and arrays never know it is there.
 *
 * Layout of DIR (created 0700):
 *   CACHEDIR.TAG           tells backup tools to skip the directory (bford.net/cachedir)
 *   state                  the bytes of all entries as last counted; its flock is the lock of
 *                          the directory, shared by every mount using it
 *   tmp/PID.N              entries being written (renamed into place when whole)
 *   v1/HH/HASH/NAME        entries: HH HASH = 128-bit hash of (store location, key) in hex, so a
 *                          key never becomes a path; NAME = all, r<offset>-<len>, s<len>, stat
 *                          (hex numbers) or absent
 * One directory per key lets a write (or a deletion) drop every entry of its key at once.
 *
 * An entry is a header — magic, format version, the store location and key (to tell a hash
 * collision), the read it answers, the value's version (ETag, Last-Modified, size), the payload
 * length, XXH64 of the payload and of the header — then the payload. It is written to tmp/ and
 * renamed, so no reader sees a torn entry; entries are not fsynced: a power failure may leave
 * an entry empty or torn, and the size and checksums reject it when read (dropped, counted as
 * bad, fetched again; never returned).
 *
 * Validity: the entry file's mtime is when its version was last confirmed (written or
 * revalidated). Within ttl of that it is used as it is; after, the wrapped store is asked for the
 * value's version (a HEAD): the same → used (mtime set to now), another → dropped and fetched
 * again, absent → every entry of the key dropped. Versions learned from the remote store are
 * also kept in memory per key for ttl, so the entries of one object (a shard's pieces) cost one
 * HEAD, and an entry older than a version seen since is dropped.
 *
 * Size: entries are counted in 4 KiB blocks in `state`, updated under its flock on every write
 * and removal. When the count exceeds the bound, the writer that crossed it scans the whole
 * directory (which also corrects the count after a crash) and removes entries least recently
 * used first — by atime, which a hit sets (at most once a minute) — down to 90% of the bound. */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "zarrfs/log.h"
#include "zarrfs/mem.h"
#include "zarrfs/store.h"

#include "store_impl.h"

#define LAYOUT "v1"
#define ENTRY_MAGIC "zarrfsDC"
#define ENTRY_FORMAT 1
#define FIXED_HEADER 96
#define MAX_HEADER (64 * 1024)
#define STATE_MAGIC "zarrfsDS"
#define STATE_LEN 24
#define BLOCK 4096
#define ATIME_STEP 60           /* seconds: a hit moves an entry's atime at most this often */
#define TMP_STALE_SECONDS 3600  /* a temporary file this old is a crash's leftover */
#define MEM_BUCKETS 4096
#define MEM_MAX 65536           /* versions remembered in memory (then forgotten all at once) */
#define CACHEDIR_TAG "Signature: 8a477f597d28d172789f06886806bc55\n"

enum { KIND_ABSENT = 4, KIND_LIST = 5 }; /* besides the zf_read_kind values */

typedef struct mem_rec {
    struct mem_rec *next;
    zf_store_version v;
    double checked; /* CLOCK_MONOTONIC seconds */
    char key[];
} mem_rec;

typedef struct dc_store {
    zf_store base; /* base.inner: the wrapped store */
    char *dir;     /* for messages */
    const char *location;
    int dir_fd, entries_fd, tmp_fd, state_fd;
    uint64_t max_bytes;
    double ttl;
    const double *clock_advance; /* zf_disk_cache_options.clock_advance */
    pthread_mutex_t lock_mu; /* with flock(state_fd): the state file and the entries */
    bool flock_broken;       /* flock unsupported there: only this process is serialized */
    pthread_mutex_t mem_mu;
    mem_rec *mem[MEM_BUCKETS];
    size_t n_mem;
    _Atomic uint64_t tmp_counter;
    _Atomic uint64_t hits, misses, bytes_read, bytes_written, evictions, bad, revalidations,
        stale, write_failures, bytes;
    _Atomic bool warned_write;
} dc_store;

/* ---- XXH64 (the xxHash specification, github.com/Cyan4973/xxHash doc/xxhash_spec.md) ------- */

#define P1 0x9E3779B185EBCA87u
#define P2 0xC2B2AE3D27D4EB4Fu
#define P3 0x165667B19E3779F9u
#define P4 0x85EBCA77C2B2AE63u
#define P5 0x27D4EB2F165667C5u

static uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return le64toh(v);
}

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return le32toh(v);
}

static uint64_t xx_round(uint64_t acc, uint64_t in)
{
    acc += in * P2;
    return rotl64(acc, 31) * P1;
}

static uint64_t xx_merge(uint64_t acc, uint64_t v)
{
    acc ^= xx_round(0, v);
    return acc * P1 + P4;
}

static uint64_t xxh64(const void *buf, size_t len, uint64_t seed)
{
    const uint8_t *p = buf, *end = p + len;
    uint64_t h;
    if (len >= 32) {
        uint64_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;
        for (; end - p >= 32; p += 32) {
            v1 = xx_round(v1, rd64(p));
            v2 = xx_round(v2, rd64(p + 8));
            v3 = xx_round(v3, rd64(p + 16));
            v4 = xx_round(v4, rd64(p + 24));
        }
        h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
        h = xx_merge(xx_merge(xx_merge(xx_merge(h, v1), v2), v3), v4);
    } else {
        h = seed + P5;
    }
    h += len;
    for (; end - p >= 8; p += 8)
        h = rotl64(h ^ xx_round(0, rd64(p)), 27) * P1 + P4;
    if (end - p >= 4) {
        h = rotl64(h ^ (uint64_t)rd32(p) * P1, 23) * P2 + P3;
        p += 4;
    }
    for (; p < end; p++)
        h = rotl64(h ^ *p * P5, 11) * P1;
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    return h ^ (h >> 32);
}

/* For tests: XXH64 as the entries use it. */
uint64_t zf_disk_cache_xxh64(const void *buf, size_t len, uint64_t seed);
uint64_t zf_disk_cache_xxh64(const void *buf, size_t len, uint64_t seed)
{
    return xxh64(buf, len, seed);
}

/* ---- small helpers ------------------------------------------------------------------------ */

static double mono_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static uint64_t blocks(uint64_t size) { return (size + BLOCK - 1) / BLOCK * BLOCK; }

static bool version_usable(const zf_store_version *v)
{
    return v->etag[0] || v->mtime.tv_sec || v->mtime.tv_nsec;
}

static void wr64(uint8_t *p, uint64_t v)
{
    v = htole64(v);
    memcpy(p, &v, 8);
}

static void wr32(uint8_t *p, uint32_t v)
{
    v = htole32(v);
    memcpy(p, &v, 4);
}

/* The directory of key's entries, "HH/HASH" (2 + 1 + 30 hex digits); that of prefix's listing
 * with list. */
static void key_dir_of(const dc_store *d, const char *key, bool list, char out[40])
{
    size_t ln = strlen(d->location), kn = strlen(key);
    char stackbuf[512], *buf = ln + kn + 1 <= sizeof stackbuf ? stackbuf : malloc(ln + kn + 1);
    uint64_t a, b;
    if (buf) {
        memcpy(buf, d->location, ln);
        buf[ln] = list ? '\1' : '\0';
        memcpy(buf + ln + 1, key, kn);
        a = xxh64(buf, ln + kn + 1, 0x7A61727266734443u);
        b = xxh64(buf, ln + kn + 1, 0x2545F4914F6CDD1Du);
        if (buf != stackbuf)
            free(buf);
    } else { /* no memory: a weaker name, still checked against the header */
        a = xxh64(key, kn, xxh64(d->location, ln, 1 + list));
        b = xxh64(key, kn, xxh64(d->location, ln, 3 + list));
    }
    snprintf(out, 40, "%02x/%014" PRIx64 "%016" PRIx64, (unsigned)(a >> 56),
             a & 0xFFFFFFFFFFFFFFu, b);
}

static void key_dir(const dc_store *d, const char *key, char out[40])
{
    key_dir_of(d, key, false, out);
}

static void entry_name(int kind, uint64_t offset, uint64_t len, char out[48])
{
    switch (kind) {
    case ZF_READ_ALL: snprintf(out, 48, "all"); break;
    case ZF_READ_RANGE: snprintf(out, 48, "r%" PRIx64 "-%" PRIx64, offset, len); break;
    case ZF_READ_SUFFIX: snprintf(out, 48, "s%" PRIx64, len); break;
    case ZF_READ_STAT: snprintf(out, 48, "stat"); break;
    case KIND_LIST: snprintf(out, 48, "list"); break;
    default: snprintf(out, 48, "absent"); break;
    }
}

/* ---- the lock of the directory ------------------------------------------------------------ */

static void dir_lock(dc_store *d)
{
    pthread_mutex_lock(&d->lock_mu);
    if (d->flock_broken)
        return;
    int r;
    while ((r = flock(d->state_fd, LOCK_EX)) != 0 && errno == EINTR)
        ;
    if (r != 0) {
        zf_log_warn("disk cache %s: cannot lock it (%s): mounts sharing it may overcount its "
                    "size", d->dir, strerror(errno));
        d->flock_broken = true;
    }
}

static void dir_unlock(dc_store *d)
{
    if (!d->flock_broken)
        flock(d->state_fd, LOCK_UN);
    pthread_mutex_unlock(&d->lock_mu);
}

/* The counted bytes of the state file; false when it holds no valid count. Locked. */
static bool state_read(dc_store *d, uint64_t *total)
{
    uint8_t b[STATE_LEN];
    if (pread(d->state_fd, b, sizeof b, 0) != (ssize_t)sizeof b ||
        memcmp(b, STATE_MAGIC, 8) != 0 || rd64(b + 16) != xxh64(b, 16, 0))
        return false;
    *total = rd64(b + 8);
    return true;
}

static void state_write(dc_store *d, uint64_t total)
{
    uint8_t b[STATE_LEN];
    memcpy(b, STATE_MAGIC, 8);
    wr64(b + 8, total);
    wr64(b + 16, xxh64(b, 16, 0));
    if (pwrite(d->state_fd, b, sizeof b, 0) != (ssize_t)sizeof b)
        zf_log_debug("disk cache %s: state: %s", d->dir, strerror(errno));
    d->bytes = total;
}

/* Add (or take away) bytes from the count; returns the new count. Locked. */
static uint64_t state_add(dc_store *d, uint64_t add, uint64_t sub)
{
    uint64_t total = 0;
    state_read(d, &total); /* a broken count is rebuilt by the next scan */
    total = total + add > sub ? total + add - sub : 0;
    state_write(d, total);
    return total;
}

/* ---- scanning and eviction ---------------------------------------------------------------- */

typedef struct scanned {
    struct timespec atime;
    uint64_t size;
    char path[88]; /* HH/HASH/NAME */
} scanned;

static int by_atime(const void *a, const void *b)
{
    const struct timespec *x = &((const scanned *)a)->atime, *y = &((const scanned *)b)->atime;
    if (x->tv_sec != y->tv_sec)
        return x->tv_sec < y->tv_sec ? -1 : 1;
    return x->tv_nsec < y->tv_nsec ? -1 : x->tv_nsec > y->tv_nsec;
}

/* Temporary files of dead writers (their pid is gone, or they are older than an hour). */
static void clean_tmp(dc_store *d)
{
    int fd = openat(d->tmp_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
    if (!dp) {
        if (fd >= 0)
            close(fd);
        return;
    }
    time_t now = time(NULL);
    struct dirent *de;
    while ((de = readdir(dp))) {
        if (de->d_name[0] == '.')
            continue;
        struct stat sb;
        if (fstatat(d->tmp_fd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        long pid = strtol(de->d_name, NULL, 10);
        bool dead = pid > 0 && pid != getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
        if (dead || now - sb.st_mtime > TMP_STALE_SECONDS)
            unlinkat(d->tmp_fd, de->d_name, 0);
    }
    closedir(dp);
}

/* Every entry below v1/ (appended to *list), and their total size. */
static bool scan(dc_store *d, scanned **list, size_t *n, uint64_t *total)
{
    size_t cap = 0;
    *list = NULL;
    *n = 0;
    *total = 0;
    for (unsigned hh = 0; hh < 256; hh++) {
        char fan[4];
        snprintf(fan, sizeof fan, "%02x", hh);
        int ffd = openat(d->entries_fd, fan, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *fdp = ffd >= 0 ? fdopendir(ffd) : NULL;
        if (!fdp) {
            if (ffd >= 0)
                close(ffd);
            continue;
        }
        struct dirent *ke;
        while ((ke = readdir(fdp))) {
            if (ke->d_name[0] == '.' || strlen(ke->d_name) > 40)
                continue;
            int kfd = openat(ffd, ke->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            DIR *kdp = kfd >= 0 ? fdopendir(kfd) : NULL;
            if (!kdp) {
                if (kfd >= 0)
                    close(kfd);
                continue;
            }
            struct dirent *ee;
            bool empty = true;
            while ((ee = readdir(kdp))) {
                struct stat sb;
                if (ee->d_name[0] == '.' || strlen(ee->d_name) > 40 ||
                    fstatat(kfd, ee->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
                    !S_ISREG(sb.st_mode))
                    continue;
                empty = false;
                if (*n == cap) {
                    size_t nc = cap ? cap * 2 : 1024;
                    scanned *nl = realloc(*list, nc * sizeof *nl);
                    if (!nl) {
                        closedir(kdp);
                        closedir(fdp);
                        return false;
                    }
                    *list = nl;
                    cap = nc;
                }
                scanned *e = &(*list)[(*n)++];
                e->atime = sb.st_atim;
                e->size = blocks((uint64_t)sb.st_size);
                snprintf(e->path, sizeof e->path, "%s/%.40s/%.40s", fan, ke->d_name, ee->d_name);
                *total += e->size;
            }
            closedir(kdp);
            if (empty) /* a key whose entries are all gone */
                unlinkat(ffd, ke->d_name, AT_REMOVEDIR);
        }
        closedir(fdp);
    }
    return true;
}

/* Count every entry again and, above `target` bytes, remove the least recently used ones until
 * the rest fit. Locked. */
static void rescan_and_evict(dc_store *d, uint64_t target)
{
    scanned *list;
    size_t n;
    uint64_t total;
    clean_tmp(d);
    if (!scan(d, &list, &n, &total)) {
        free(list);
        return;
    }
    if (total > target) {
        qsort(list, n, sizeof *list, by_atime);
        for (size_t i = 0; i < n && total > target; i++) {
            if (unlinkat(d->entries_fd, list[i].path, 0) != 0)
                continue;
            total -= list[i].size;
            d->evictions++;
            char *slash = strrchr(list[i].path, '/');
            *slash = '\0';
            unlinkat(d->entries_fd, list[i].path, AT_REMOVEDIR); /* fails while not empty */
        }
    }
    free(list);
    state_write(d, total);
}

static uint64_t low_water(const dc_store *d) { return d->max_bytes - d->max_bytes / 10; }

/* ---- removing entries --------------------------------------------------------------------- */

/* Remove one entry (dir/name). */
static void drop(dc_store *d, const char *dir, const char *name)
{
    char path[96];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    dir_lock(d);
    struct stat sb;
    if (fstatat(d->entries_fd, path, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
        unlinkat(d->entries_fd, path, 0) == 0)
        state_add(d, 0, blocks((uint64_t)sb.st_size));
    dir_unlock(d);
}

/* Remove every entry of a key (its value was written, erased or is gone). */
static void drop_key(dc_store *d, const char *dir)
{
    dir_lock(d);
    int fd = openat(d->entries_fd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
    if (dp) {
        uint64_t freed = 0;
        struct dirent *de;
        while ((de = readdir(dp))) {
            struct stat sb;
            if (de->d_name[0] != '.' &&
                fstatat(fd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
                unlinkat(fd, de->d_name, 0) == 0)
                freed += blocks((uint64_t)sb.st_size);
        }
        closedir(dp);
        unlinkat(d->entries_fd, dir, AT_REMOVEDIR);
        if (freed)
            state_add(d, 0, freed);
    } else if (fd >= 0) {
        close(fd);
    }
    dir_unlock(d);
}

/* ---- versions in memory ------------------------------------------------------------------- */

static size_t mem_bucket(const char *key) { return xxh64(key, strlen(key), 3) % MEM_BUCKETS; }

static void mem_clear_locked(dc_store *d)
{
    for (size_t i = 0; i < MEM_BUCKETS; i++) {
        for (mem_rec *r = d->mem[i], *next; r; r = next) {
            next = r->next;
            free(r);
        }
        d->mem[i] = NULL;
    }
    d->n_mem = 0;
}

/* The cache's clocks: monotonic seconds (the in-memory records) and the real time (entry
 * mtimes: when an entry was written or last confirmed), both moved on by an injected clock. */
static double dc_mono(const dc_store *d)
{
    return mono_now() + (d->clock_advance ? *d->clock_advance : 0);
}

static struct timespec dc_real(const dc_store *d)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    if (d->clock_advance) {
        double a = *d->clock_advance;
        t.tv_sec += (time_t)a;
        t.tv_nsec += (long)((a - (double)(time_t)a) * 1e9);
        if (t.tv_nsec >= 1000000000L) {
            t.tv_sec++;
            t.tv_nsec -= 1000000000L;
        }
    }
    return t;
}

/* The version of key confirmed by the remote store within the ttl, if any (and when, as a
 * CLOCK_MONOTONIC time, in *checked unless NULL). */
static bool mem_get(dc_store *d, const char *key, zf_store_version *out, double *checked)
{
    bool found = false;
    double now = dc_mono(d);
    pthread_mutex_lock(&d->mem_mu);
    for (mem_rec *r = d->mem[mem_bucket(key)]; r; r = r->next)
        if (strcmp(r->key, key) == 0) {
            found = d->ttl <= 0 || now - r->checked < d->ttl;
            if (found)
                *out = r->v;
            if (found && checked)
                *checked = r->checked;
            break;
        }
    pthread_mutex_unlock(&d->mem_mu);
    return found;
}

static void mem_put(dc_store *d, const char *key, const zf_store_version *v)
{
    double now = dc_mono(d);
    size_t b = mem_bucket(key);
    pthread_mutex_lock(&d->mem_mu);
    mem_rec *r = d->mem[b];
    while (r && strcmp(r->key, key) != 0)
        r = r->next;
    if (!r) {
        if (d->n_mem >= MEM_MAX)
            mem_clear_locked(d);
        size_t kn = strlen(key) + 1;
        if ((r = malloc(sizeof *r + kn))) {
            memcpy(r->key, key, kn);
            r->next = d->mem[b];
            d->mem[b] = r;
            d->n_mem++;
        }
    }
    if (r) {
        r->v = *v;
        r->checked = now;
    }
    pthread_mutex_unlock(&d->mem_mu);
}

static void mem_forget(dc_store *d, const char *key)
{
    size_t b = mem_bucket(key);
    pthread_mutex_lock(&d->mem_mu);
    for (mem_rec **pp = &d->mem[b]; *pp; pp = &(*pp)->next)
        if (strcmp((*pp)->key, key) == 0) {
            mem_rec *r = *pp;
            *pp = r->next;
            free(r);
            d->n_mem--;
            break;
        }
    pthread_mutex_unlock(&d->mem_mu);
}

/* ---- entries: format ---------------------------------------------------------------------- */

/* Header layout (little-endian):
 *   0 magic "zarrfsDC"   8 u32 format      12 u32 header length   16 u32 location length
 *  20 u32 key length    24 u32 ETag length 28 u8 kind, u8 flags (1: size known), u16 0
 *  32 u64 offset        40 u64 len (of the read asked)              48 u64 payload length
 *  56 u64 value size    64 i64 Last-Modified s                      72 i64 Last-Modified ns
 *  80 u64 XXH64 of the payload              88 u64 XXH64 of the header (this field as zero)
 *  96 location, key, ETag (no terminators) */
typedef struct entry {
    int kind;
    uint64_t offset, len, payload_len;
    zf_store_version v;
} entry;

/* The header of e for key, malloc'ed, its length in *n. */
static uint8_t *header_build(const dc_store *d, const char *key, const entry *e,
                             uint64_t payload_hash, size_t *n)
{
    size_t ln = strlen(d->location), kn = strlen(key), en = strlen(e->v.etag);
    size_t hn = FIXED_HEADER + ln + kn + en;
    uint8_t *h = calloc(1, hn);
    if (!h)
        return NULL;
    memcpy(h, ENTRY_MAGIC, 8);
    wr32(h + 8, ENTRY_FORMAT);
    wr32(h + 12, (uint32_t)hn);
    wr32(h + 16, (uint32_t)ln);
    wr32(h + 20, (uint32_t)kn);
    wr32(h + 24, (uint32_t)en);
    h[28] = (uint8_t)e->kind;
    h[29] = e->v.has_size ? 1 : 0;
    wr64(h + 32, e->offset);
    wr64(h + 40, e->len);
    wr64(h + 48, e->payload_len);
    wr64(h + 56, e->v.has_size ? e->v.size : 0);
    wr64(h + 64, (uint64_t)(int64_t)e->v.mtime.tv_sec);
    wr64(h + 72, (uint64_t)(int64_t)e->v.mtime.tv_nsec);
    wr64(h + 80, payload_hash);
    memcpy(h + FIXED_HEADER, d->location, ln);
    memcpy(h + FIXED_HEADER + ln, key, kn);
    memcpy(h + FIXED_HEADER + ln + kn, e->v.etag, en);
    wr64(h + 88, xxh64(h, hn, 0));
    *n = hn;
    return h;
}

typedef enum load_result {
    LOAD_OK,
    LOAD_BAD,   /* torn or corrupt: drop it */
    LOAD_OTHER, /* a whole entry of another key or read (a hash collision): leave it */
    LOAD_FAIL,  /* out of memory, or the file went away: a miss */
} load_result;

static bool pread_full(int fd, void *buf, size_t n, off_t off)
{
    return zf_pread_full(fd, buf, n, off) == (ssize_t)n;
}

/* Read and check the entry open at fd, expected for (key, kind, offset, len); its payload into
 * *out when out is non-NULL. */
static load_result entry_load(const dc_store *d, int fd, const struct stat *sb, const char *key,
                              const entry *want, entry *e, zf_bytes *out)
{
    uint8_t fixed[FIXED_HEADER];
    if ((uint64_t)sb->st_size < FIXED_HEADER || !pread_full(fd, fixed, FIXED_HEADER, 0) ||
        memcmp(fixed, ENTRY_MAGIC, 8) != 0 || rd32(fixed + 8) != ENTRY_FORMAT)
        return LOAD_BAD;
    uint64_t hn = rd32(fixed + 12), ln = rd32(fixed + 16), kn = rd32(fixed + 20),
             en = rd32(fixed + 24);
    if (hn > MAX_HEADER || hn != FIXED_HEADER + ln + kn + en || en >= sizeof e->v.etag ||
        (uint64_t)sb->st_size < hn)
        return LOAD_BAD;
    uint8_t *h = malloc(hn);
    if (!h)
        return LOAD_FAIL;
    memcpy(h, fixed, FIXED_HEADER);
    if (!pread_full(fd, h + FIXED_HEADER, hn - FIXED_HEADER, FIXED_HEADER)) {
        free(h);
        return LOAD_BAD;
    }
    uint64_t header_hash = rd64(h + 88);
    memset(h + 88, 0, 8);
    bool ok = xxh64(h, hn, 0) == header_hash;
    *e = (entry){.kind = h[28], .offset = rd64(h + 32), .len = rd64(h + 40),
                 .payload_len = rd64(h + 48)};
    e->v.has_size = h[29] & 1;
    e->v.size = rd64(h + 56);
    e->v.mtime.tv_sec = (time_t)(int64_t)rd64(h + 64);
    e->v.mtime.tv_nsec = (long)(int64_t)rd64(h + 72);
    memcpy(e->v.etag, h + FIXED_HEADER + ln + kn, en);
    e->v.etag[en] = '\0';
    uint64_t payload_hash = rd64(h + 80);
    bool same = ln == strlen(d->location) && kn == strlen(key) &&
                memcmp(h + FIXED_HEADER, d->location, ln) == 0 &&
                memcmp(h + FIXED_HEADER + ln, key, kn) == 0 && e->kind == want->kind &&
                e->offset == want->offset && e->len == want->len;
    free(h);
    if (!ok || e->payload_len > UINT64_MAX - hn || (uint64_t)sb->st_size != hn + e->payload_len)
        return LOAD_BAD; /* corrupt header, or torn: a size that is not header + payload */
    if (!same)
        return LOAD_OTHER;
    if (!out)
        return e->payload_len == 0 ? LOAD_OK : LOAD_BAD;
    if (e->payload_len > SIZE_MAX / 2)
        return LOAD_BAD;
    size_t n = (size_t)e->payload_len;
    uint8_t *p = zf_alloc_bulk(n);
    if (!p)
        return LOAD_FAIL;
    if (!pread_full(fd, p, n, (off_t)hn) || xxh64(p, n, 0) != payload_hash) {
        free(p);
        return LOAD_BAD;
    }
    out->data = p;
    out->len = n;
    return LOAD_OK;
}

/* Write header and payload to a new file of tmp/ (its name into tmp), its mtime *confirmed
 * when given. 0, or the errno of the failure (what failed in *why). */
static int tmp_write(dc_store *d, const uint8_t *h, size_t hn, const uint8_t *payload, size_t n,
                     const struct timespec *confirmed, char tmp[64], const char **why)
{
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 8; tries++) { /* leftovers of a dead pid may clash */
        snprintf(tmp, 64, "%ld.%" PRIx64 ".%x", (long)getpid(), d->tmp_counter++,
                 (unsigned)(mono_now() * 1e9) & 0xFFFFFF);
        fd = openat(d->tmp_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        *why = "create";
        return errno;
    }
    struct iovec iov[2] = {{(void *)h, hn}, {(void *)payload, n}};
    size_t left = hn + n;
    int vi = 0, rc = 0;
    while (left) {
        ssize_t w = writev(fd, iov + vi, 2 - vi);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = w < 0 ? errno : ENOSPC;
            break;
        }
        left -= (size_t)w;
        while (vi < 2 && (size_t)w >= iov[vi].iov_len) {
            w -= (ssize_t)iov[vi].iov_len;
            iov[vi++].iov_len = 0;
        }
        if (vi < 2) {
            iov[vi].iov_base = (uint8_t *)iov[vi].iov_base + w;
            iov[vi].iov_len -= (size_t)w;
        }
    }
    if (confirmed && !rc) {
        struct timespec t[2] = {{.tv_nsec = UTIME_NOW}, *confirmed};
        futimens(fd, t);
    }
    if (close(fd) != 0 && !rc)
        rc = errno;
    if (rc)
        *why = "write";
    return rc;
}

/* Rename tmp/tmp to dir/name (making the key's directory again if it went meanwhile), drop a
 * stale "absent" entry unless this one is one, count the bytes and evict above the bound.
 * 0, or the errno of the rename. */
static int install(dc_store *d, const char *dir, const char *name, const char *tmp,
                   uint64_t size, bool absent_entry)
{
    char fan[3] = {dir[0], dir[1], '\0'}, path[96], absent[96];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(absent, sizeof absent, "%s/absent", dir);
    dir_lock(d);
    int rc = ENOENT;
    for (int tries = 0; rc == ENOENT && tries < 3; tries++) {
        if ((mkdirat(d->entries_fd, fan, 0700) != 0 && errno != EEXIST) ||
            (mkdirat(d->entries_fd, dir, 0700) != 0 && errno != EEXIST)) {
            rc = errno;
            break;
        }
        struct stat old;
        uint64_t replaced = fstatat(d->entries_fd, path, &old, AT_SYMLINK_NOFOLLOW) == 0
                                ? blocks((uint64_t)old.st_size)
                                : 0;
        if (renameat(d->tmp_fd, tmp, d->entries_fd, path) != 0) {
            rc = errno; /* ENOENT: the key's directory was removed (eviction, a write) */
            continue;
        }
        rc = 0;
        if (!absent_entry && fstatat(d->entries_fd, absent, &old, AT_SYMLINK_NOFOLLOW) == 0 &&
            unlinkat(d->entries_fd, absent, 0) == 0)
            replaced += blocks((uint64_t)old.st_size);
        if (state_add(d, size, replaced) > d->max_bytes)
            rescan_and_evict(d, low_water(d));
    }
    dir_unlock(d);
    return rc;
}

/* Write the entry dir/name for key: a temporary file renamed into place; the count updated and,
 * above the bound, entries evicted. Its version counts as confirmed now, or at *confirmed. A
 * failure only costs the entry. */
static void entry_store(dc_store *d, const char *dir, const char *name, const char *key,
                        const entry *e, const uint8_t *payload, const struct timespec *confirmed)
{
    if (e->payload_len > d->max_bytes / 4)
        return; /* it would push out a quarter of the cache at once */
    if (FIXED_HEADER + strlen(d->location) + strlen(key) + strlen(e->v.etag) > MAX_HEADER)
        return; /* a reader would refuse its header */
    size_t hn, n = (size_t)e->payload_len;
    uint8_t *h = header_build(d, key, e, xxh64(payload, n, 0), &hn);
    if (!h)
        return;
    char tmp[64];
    const char *why = "rename";
    uint64_t size = blocks(hn + n);
    struct timespec now = dc_real(d); /* set, not left to the kernel: the cache's own clock */
    int rc = tmp_write(d, h, hn, payload, n, confirmed ? confirmed : &now, tmp, &why);
    free(h);
    if (!rc)
        rc = install(d, dir, name, tmp, size, e->kind == KIND_ABSENT);
    if (rc) {
        unlinkat(d->tmp_fd, tmp, 0);
        d->write_failures++;
        if (!d->warned_write) {
            d->warned_write = true;
            zf_log_warn("disk cache %s: cannot %s an entry: %s (reads go on without it; "
                        "logged once)", d->dir, why, strerror(rc));
        }
        return;
    }
    d->bytes_written += size;
}

/* ---- reads -------------------------------------------------------------------------------- */

typedef enum validity {
    VALID,
    STALE,   /* older than what the remote store said within the ttl: drop this entry */
    CHANGED, /* a HEAD found a new version: the key's entries are dropped */
    GONE,    /* a HEAD found no value: the key's entries are dropped */
    FAILED,  /* the HEAD failed (*st) */
} validity;

/* Whether an entry file's mtime (when it was written or last confirmed) is less than ttl ago.
 * Nanoseconds count: with the kernel's multigrain timestamps (6.13 on) a file written just now
 * can carry an mtime a second ahead of time(2)'s coarse clock, which made a fresh entry look
 * as if from the future, hence not fresh (seen in 0.5% of writes here). */
static bool within_ttl(const dc_store *d, const struct stat *sb)
{
    struct timespec now = dc_real(d);
    double age = (double)(now.tv_sec - sb->st_mtim.tv_sec) +
                 (double)(now.tv_nsec - sb->st_mtim.tv_nsec) / 1e9;
    return age >= 0 && age < d->ttl;
}

/* Whether an entry of version ev, confirmed at file mtime, can be used for key: by the version
 * the remote store gave within the ttl, by its own age, else by asking (a HEAD). Counts and
 * remembers what it learns. */
static validity check(dc_store *d, const char *key, const char *dir, const zf_store_version *ev,
                      const struct stat *sb, bool *revalidated, zf_status *st, zf_err *err)
{
    zf_store_version cur;
    *revalidated = false;
    if (mem_get(d, key, &cur, NULL))
        return zf_store_version_equal(ev, &cur) ? VALID : STALE;
    if (d->ttl <= 0 || within_ttl(d, sb))
        return VALID;
    d->revalidations++;
    *st = zf_store_read_versioned(d->base.inner, key, ZF_READ_STAT, 0, 0, NULL, &cur, err);
    if (*st == ZF_ERR_NOT_FOUND) {
        mem_forget(d, key);
        drop_key(d, dir);
        return GONE;
    }
    if (*st != ZF_OK)
        return FAILED;
    if (version_usable(&cur))
        mem_put(d, key, &cur);
    if (!zf_store_version_equal(ev, &cur)) {
        drop_key(d, dir); /* every entry of the key is of an older version */
        return CHANGED;
    }
    *revalidated = true;
    return VALID;
}

/* A fresh "absent" entry of the key: it was not found within the ttl. */
static bool absent_fresh(dc_store *d, const char *dir, const char *key)
{
    if (d->ttl <= 0)
        return false;
    char path[96];
    snprintf(path, sizeof path, "%s/absent", dir);
    int fd = openat(d->entries_fd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return false;
    struct stat sb;
    entry e, want = {.kind = KIND_ABSENT};
    bool fresh = false;
    if (fstat(fd, &sb) == 0 && entry_load(d, fd, &sb, key, &want, &e, NULL) == LOAD_OK) {
        fresh = within_ttl(d, &sb);
    }
    close(fd);
    return fresh;
}

/* Mark an entry used now (atime, for the LRU order), and confirmed now when revalidated. */
static void touch(const dc_store *d, int fd, const struct stat *sb, bool revalidated)
{
    struct timespec now = dc_real(d);
    if (!revalidated && now.tv_sec - sb->st_atim.tv_sec < ATIME_STEP &&
        sb->st_atim.tv_sec <= now.tv_sec)
        return;
    struct timespec t[2] = {now, revalidated ? now : (struct timespec){.tv_nsec = UTIME_OMIT}};
    futimens(fd, t);
}

/* One read through the cache: what it asks, and where its entry lives. */
typedef struct dc_req {
    const char *key;
    zf_read_kind kind;
    uint64_t offset, len;
    entry want; /* kind, offset and len as an entry records them */
    char dir[40], name[48], path[96];
} dc_req;

/* len: for ZF_READ_ALL the bound of a bounded get (store.h), not part of the entry's name. */
static void req_init(dc_store *d, dc_req *r, const char *key, zf_read_kind kind,
                     uint64_t offset, uint64_t len)
{
    *r = (dc_req){.key = key, .kind = kind, .offset = offset, .len = len};
    r->want = (entry){.kind = (int)kind, .offset = kind == ZF_READ_RANGE ? offset : 0,
                      .len = kind == ZF_READ_RANGE || kind == ZF_READ_SUFFIX ? len : 0};
    key_dir(d, key, r->dir);
    entry_name((int)kind, offset, len, r->name);
    snprintf(r->path, sizeof r->path, "%s/%s", r->dir, r->name);
}

/* A stat the remote store answered within the ttl (with a read of the value): from memory, and
 * kept on disk for the next mount too, as confirmed when it was said. */
static bool stat_from_memory(dc_store *d, const dc_req *r, zf_store_version *ver)
{
    double checked;
    if (!mem_get(d, r->key, ver, &checked) || !ver->has_size)
        return false;
    if (faccessat(d->entries_fd, r->path, F_OK, 0) != 0) {
        struct timespec now = dc_real(d);
        double when = (double)now.tv_sec + now.tv_nsec / 1e9 - (dc_mono(d) - checked);
        struct timespec at = {(time_t)when, (long)((when - (double)(time_t)when) * 1e9)};
        entry e = r->want;
        e.v = *ver;
        entry_store(d, r->dir, r->name, r->key, &e, (const uint8_t *)"", &at);
    }
    return true;
}

/* The answer of r from its entry, if the entry is there, whole and valid: true with *st (ZF_OK
 * with *out and *ver; ZF_ERR_NOT_FOUND when a revalidation found the value gone; the failure of
 * the revalidation; ZF_ERR_TOO_LARGE for a value over the bound of a bounded get). false: fetch
 * it (a bad or stale entry is dropped first). */
static bool from_entry(dc_store *d, const dc_req *r, zf_bytes *out, zf_store_version *ver,
                       zf_status *st, zf_err *err)
{
    /* a bounded get's bound; none for other reads (as large as bound + MAX_HEADER allows) */
    uint64_t bound = r->kind == ZF_READ_ALL ? zf_store_bound(r->len) : UINT64_MAX - MAX_HEADER;
    int fd = openat(d->entries_fd, r->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) { /* no entry: perhaps the key was found absent within the ttl */
        zf_store_version cur;
        if (mem_get(d, r->key, &cur, NULL) || !absent_fresh(d, r->dir, r->key))
            return false;
        d->hits++;
        *st = ZF_ERR_NOT_FOUND;
        return true;
    }
    struct stat sb;
    entry e;
    zf_bytes got = {0};
    bool statted = fstat(fd, &sb) == 0;
    if (statted && (uint64_t)sb.st_size > bound + MAX_HEADER) { /* unread: over the bound */
        close(fd);
        *st = zf_store_refuse_large(err, r->key, bound, UINT64_MAX,
                                    "in the disk cache: its entry is larger");
        return true;
    }
    load_result lr = !statted ? LOAD_FAIL
                     : entry_load(d, fd, &sb, r->key, &r->want, &e,
                                  r->kind == ZF_READ_STAT ? NULL : &got);
    if (lr != LOAD_OK) {
        close(fd);
        if (lr == LOAD_BAD) {
            d->bad++;
            zf_log_info("disk cache %s: dropping a bad entry of %s (%s)", d->dir, r->key,
                        r->path);
            drop(d, r->dir, r->name);
        }
        return false;
    }
    bool revalidated;
    validity v = check(d, r->key, r->dir, &e.v, &sb, &revalidated, st, err);
    if (v == VALID && got.len > bound) { /* a header's worth over it, at most */
        *st = zf_store_refuse_large(err, r->key, bound, got.len, "in the disk cache");
        zf_bytes_free(&got);
    } else if (v == VALID) {
        touch(d, fd, &sb, revalidated);
        d->hits++;
        d->bytes_read += got.len;
        *ver = e.v;
        if (r->kind != ZF_READ_STAT)
            *out = got;
        *st = ZF_OK;
    } else {
        zf_bytes_free(&got);
    }
    close(fd);
    if (v == GONE)
        *st = ZF_ERR_NOT_FOUND;
    if (v == STALE || v == CHANGED)
        d->stale++;
    if (v == STALE)
        drop(d, r->dir, r->name);
    return v == VALID || v == GONE || v == FAILED;
}

/* A read of the given kind through the cache: *out (not for stats) and *ver. */
static zf_status dc_read(dc_store *d, const char *key, zf_read_kind kind, uint64_t offset,
                         uint64_t len, zf_bytes *out, zf_store_version *ver, zf_err *err)
{
    zf_store *inner = d->base.inner;
    if ((kind == ZF_READ_RANGE || kind == ZF_READ_SUFFIX) && len == 0)
        return zf_store_read_versioned(inner, key, kind, offset, len, out, ver, err);
    dc_req r;
    req_init(d, &r, key, kind, offset, len);
    zf_status st;
    if (kind == ZF_READ_STAT && stat_from_memory(d, &r, ver))
        return ZF_OK;
    if (from_entry(d, &r, out, ver, &st, err))
        return st;
    d->misses++;
    zf_bytes got = {0};
    st = zf_store_read_versioned(inner, key, kind, offset, len,
                                 kind == ZF_READ_STAT ? NULL : &got, ver, err);
    if (st == ZF_ERR_NOT_FOUND) {
        mem_forget(d, key);
        drop_key(d, r.dir);
        if (d->ttl > 0) {
            entry a = {.kind = KIND_ABSENT};
            entry_store(d, r.dir, "absent", key, &a, (const uint8_t *)"", NULL);
        }
        return st;
    }
    if (st != ZF_OK)
        return st;
    if (version_usable(ver)) { /* nothing can tell a changed value otherwise: not kept */
        mem_put(d, key, ver);
        entry e = r.want;
        e.payload_len = got.len;
        e.v = *ver;
        entry_store(d, r.dir, r.name, key, &e,
                    kind == ZF_READ_STAT ? (const uint8_t *)"" : got.data, NULL);
    }
    if (kind != ZF_READ_STAT)
        *out = got;
    return ZF_OK;
}

/* ---- store ops ---------------------------------------------------------------------------- */

static zf_status dc_get(zf_store *s, const char *key, zf_bytes *out, zf_err *err)
{
    zf_store_version v;
    return dc_read((dc_store *)s, key, ZF_READ_ALL, 0, 0, out, &v, err);
}

static zf_status dc_get_partial(zf_store *s, const char *key, uint64_t offset, uint64_t len,
                                zf_bytes *out, zf_err *err)
{
    zf_store_version v;
    return dc_read((dc_store *)s, key, ZF_READ_RANGE, offset, len, out, &v, err);
}

static zf_status dc_get_suffix(zf_store *s, const char *key, uint64_t len, zf_bytes *out,
                               uint64_t *total, zf_err *err)
{
    zf_store_version v;
    zf_status st = dc_read((dc_store *)s, key, ZF_READ_SUFFIX, 0, len, out, &v, err);
    if (st == ZF_OK && !v.has_size) {
        zf_bytes_free(out);
        return zf_fail(err, ZF_ERR_IO, "%s: the size of the value is unknown", key);
    }
    if (st == ZF_OK)
        *total = v.size;
    return st;
}

static zf_status dc_stat(zf_store *s, const char *key, uint64_t *size, struct timespec *mtime,
                         zf_err *err)
{
    zf_store_version v;
    zf_status st = dc_read((dc_store *)s, key, ZF_READ_STAT, 0, 0, NULL, &v, err);
    if (st == ZF_OK && size)
        *size = v.size;
    if (st == ZF_OK && mtime)
        *mtime = v.mtime;
    return st;
}

static zf_status dc_read_versioned(zf_store *s, const char *key, zf_read_kind kind,
                                   uint64_t offset, uint64_t len, zf_bytes *out,
                                   zf_store_version *ver, zf_err *err)
{
    return dc_read((dc_store *)s, key, kind, offset, len, out, ver, err);
}

/* ---- listings ----------------------------------------------------------------------------
 * A listing has no version: its entry (payload: per child a flag byte, 1 for a prefix, a u32
 * length and the name) is used for ttl after it was fetched, then fetched again. */

static uint8_t *listing_encode(const zf_store_listing *l, size_t *n)
{
    size_t len = 0;
    for (size_t i = 0; i < l->n; i++)
        len += 5 + strlen(l->entries[i].name);
    uint8_t *p = malloc(len ? len : 1), *q = p;
    if (!p)
        return NULL;
    for (size_t i = 0; i < l->n; i++) {
        size_t nl = strlen(l->entries[i].name);
        *q++ = l->entries[i].is_prefix ? 1 : 0;
        wr32(q, (uint32_t)nl);
        memcpy(q + 4, l->entries[i].name, nl);
        q += 4 + nl;
    }
    *n = len;
    return p;
}

/* false for a payload that is not a listing (or no memory). */
static bool listing_decode(const zf_bytes *b, zf_store_listing *out)
{
    size_t cap = 0, i = 0;
    *out = (zf_store_listing){0};
    while (i < b->len) {
        if (b->len - i < 5 || b->data[i] > 1)
            break;
        uint32_t nl = rd32(b->data + i + 1);
        if (nl == 0 || nl > b->len - i - 5 || memchr(b->data + i + 5, '\0', nl))
            break;
        if (out->n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            zf_store_entry *ne = realloc(out->entries, nc * sizeof *ne);
            if (!ne)
                break;
            out->entries = ne;
            cap = nc;
        }
        char *name = strndup((const char *)b->data + i + 5, nl);
        if (!name)
            break;
        out->entries[out->n++] = (zf_store_entry){.name = name, .is_prefix = b->data[i] == 1};
        i += 5 + nl;
    }
    if (i != b->len) {
        zf_store_listing_free(out);
        return false;
    }
    return true;
}

static zf_status dc_list_dir(zf_store *s, const char *prefix, zf_store_listing *out,
                             zf_err *err)
{
    dc_store *d = (dc_store *)s;
    char dir[40], path[96];
    key_dir_of(d, prefix, true, dir);
    snprintf(path, sizeof path, "%s/list", dir);
    entry want = {.kind = KIND_LIST}, e;
    int fd = openat(d->entries_fd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0) {
        struct stat sb = {0};
        zf_bytes got = {0};
        load_result lr = fstat(fd, &sb) == 0 ? entry_load(d, fd, &sb, prefix, &want, &e, &got)
                                             : LOAD_FAIL;
        close(fd);
        bool fresh = d->ttl <= 0 || within_ttl(d, &sb);
        if (lr == LOAD_OK && fresh && listing_decode(&got, out)) {
            d->hits++;
            d->bytes_read += got.len;
            zf_bytes_free(&got);
            return ZF_OK;
        }
        zf_bytes_free(&got);
        if (lr == LOAD_BAD || (lr == LOAD_OK && fresh)) { /* fresh but undecodable: bad too */
            d->bad++;
            drop(d, dir, "list");
        }
    }
    d->misses++;
    zf_status st = zf_store_list_dir(s->inner, prefix, out, err);
    if (st != ZF_OK)
        return st;
    size_t n;
    uint8_t *p = listing_encode(out, &n);
    if (p) {
        e = want;
        e.payload_len = n;
        entry_store(d, dir, "list", prefix, &e, p, NULL);
        free(p);
    }
    return ZF_OK;
}

/* Drop the listings of every prefix above key ("", "a", "a/b" for "a/b/c"), and of key itself
 * when self. */
static void forget_listings(dc_store *d, const char *key, bool self)
{
    char *p = strdup(key), dir[40];
    if (!p)
        return;
    for (size_t i = 0;; i++) {
        if (p[i] == '/' || p[i] == '\0') {
            char c = p[i];
            p[i] = '\0';
            if (c || self) {
                key_dir_of(d, p, true, dir);
                drop(d, dir, "list");
            }
            if (!c)
                break;
            p[i] = c;
        }
        if (i == 0) { /* the root's listing */
            key_dir_of(d, "", true, dir);
            drop(d, dir, "list");
        }
    }
    free(p);
}

/* A written or erased value: its entries (and what memory says of it) are dropped whatever the
 * outcome (a failed PUT may have landed), and the listings it may appear in. */
static void forget_key(dc_store *d, const char *key)
{
    char dir[40];
    key_dir(d, key, dir);
    mem_forget(d, key);
    drop_key(d, dir);
    forget_listings(d, key, false);
}

static zf_status dc_set(zf_store *s, const char *key, const uint8_t *data, size_t len,
                        zf_err *err)
{
    zf_status st = zf_store_set(s->inner, key, data, len, err);
    forget_key((dc_store *)s, key);
    return st;
}

static zf_status dc_set_cond(zf_store *s, const char *key, const uint8_t *data, size_t len,
                            const zf_store_cond *c, zf_err *err)
{
    zf_status st = zf_store_set_cond(s->inner, key, data, len, c, err);
    forget_key((dc_store *)s, key); /* after a conflict too: the next read must fetch anew */
    return st;
}

static zf_status dc_erase_if(zf_store *s, const char *key, const zf_store_version *base,
                            zf_err *err)
{
    zf_status st = zf_store_erase_if(s->inner, key, base, err);
    forget_key((dc_store *)s, key);
    return st;
}

static zf_status dc_erase(zf_store *s, const char *key, zf_err *err)
{
    zf_status st = zf_store_erase(s->inner, key, err);
    forget_key((dc_store *)s, key);
    return st;
}

static zf_status dc_remove_dir(zf_store *s, const char *prefix, zf_err *err)
{
    zf_status st = zf_store_remove_dir(s->inner, prefix, err);
    forget_listings((dc_store *)s, prefix, true);
    return st;
}

static void dc_destroy(zf_store *s)
{
    dc_store *d = (dc_store *)s;
    zf_store_close(d->base.inner);
    mem_clear_locked(d);
    pthread_mutex_destroy(&d->mem_mu);
    pthread_mutex_destroy(&d->lock_mu);
    int fds[] = {d->dir_fd, d->entries_fd, d->tmp_fd, d->state_fd};
    for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(d->dir);
    free(d->base.url);
    free(d);
}

#define DC_READ_OPS                                                                          \
    .scheme = "diskcache", .get = dc_get, .get_partial = dc_get_partial,                     \
    .get_suffix = dc_get_suffix, .stat = dc_stat, .list_dir = dc_list_dir,                   \
    .destroy = dc_destroy, .read_versioned = dc_read_versioned

static const zf_store_ops dc_ops_ro = {DC_READ_OPS};
static const zf_store_ops dc_ops_rw = {DC_READ_OPS, .set = dc_set, .set_cond = dc_set_cond,
                                       .erase = dc_erase, .erase_if = dc_erase_if,
                                       .remove_dir = dc_remove_dir};

/* ---- opening ------------------------------------------------------------------------------ */

/* mkdir -p with mode 0700 for what it creates. */
static int make_dirs(const char *path)
{
    char *p = strdup(path);
    if (!p)
        return ENOMEM;
    int rc = 0;
    for (char *q = p + 1;; q++) {
        if (*q == '/' || *q == '\0') {
            char c = *q;
            *q = '\0';
            if (mkdir(p, 0700) != 0 && errno != EEXIST) {
                rc = errno;
                break;
            }
            *q = c;
            if (!c)
                break;
        }
    }
    free(p);
    return rc;
}

static zf_status open_sub(dc_store *d, const char *name, int *fd, zf_err *err)
{
    if (mkdirat(d->dir_fd, name, 0700) != 0 && errno != EEXIST)
        return zf_fail(err, ZF_ERR_IO, "disk cache %s/%s: %s", d->dir, name, strerror(errno));
    if ((*fd = openat(d->dir_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return zf_fail(err, ZF_ERR_IO, "disk cache %s/%s: %s", d->dir, name, strerror(errno));
    return ZF_OK;
}

zf_status zf_store_disk_cache_open(zf_store *inner, const zf_disk_cache_options *opts,
                                   zf_store **out, zf_err *err)
{
    if (!opts || !opts->dir || !*opts->dir)
        return zf_fail(err, ZF_ERR_INVALID, "disk cache: no directory given");
    dc_store *d = calloc(1, sizeof *d);
    if (!d || !(d->dir = strdup(opts->dir)) || !(d->base.url = strdup(inner->url))) {
        if (d)
            free(d->dir);
        free(d);
        return ZF_ERR_NOMEM;
    }
    d->dir_fd = d->entries_fd = d->tmp_fd = d->state_fd = -1;
    pthread_mutex_init(&d->lock_mu, NULL);
    pthread_mutex_init(&d->mem_mu, NULL);
    d->location = inner->location ? inner->location : inner->url;
    d->max_bytes = opts->max_bytes ? opts->max_bytes : ZF_DISK_CACHE_DEFAULT_SIZE;
    d->ttl = opts->ttl;
    d->clock_advance = opts->clock_advance;
    d->bytes = 0;
    d->base.ops = zf_store_is_writable(inner) ? &dc_ops_rw : &dc_ops_ro;
    d->base.remote = inner->remote;

    zf_status st = ZF_OK;
    int rc = make_dirs(opts->dir);
    struct stat sb;
    if (rc != 0)
        st = zf_fail(err, ZF_ERR_IO, "disk cache %s: %s", opts->dir, strerror(rc));
    else if ((d->dir_fd = open(opts->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
             fstat(d->dir_fd, &sb) != 0)
        st = zf_fail(err, ZF_ERR_IO, "disk cache %s: %s", opts->dir, strerror(errno));
    else if (sb.st_uid != geteuid() || (sb.st_mode & (S_IWGRP | S_IWOTH)))
        /* someone else could plant entries: they are checksummed, not authenticated */
        st = zf_fail(err, ZF_ERR_IO, "disk cache %s: %s", opts->dir,
                     sb.st_uid != geteuid() ? "not owned by this user"
                                            : "writable by others (chmod go-w it)");
    if (st == ZF_OK && (sb.st_mode & (S_IRWXG | S_IRWXO)))
        zf_log_warn("disk cache %s: readable by others (mode %o): the cached data is too",
                    opts->dir, (unsigned)(sb.st_mode & 07777));
    if (st == ZF_OK && (st = open_sub(d, LAYOUT, &d->entries_fd, err)) == ZF_OK &&
        (st = open_sub(d, "tmp", &d->tmp_fd, err)) == ZF_OK &&
        (d->state_fd = openat(d->dir_fd, "state", O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0)
        st = zf_fail(err, ZF_ERR_IO, "disk cache %s/state: %s", opts->dir, strerror(errno));
    if (st != ZF_OK) {
        d->base.inner = NULL; /* left to the caller */
        dc_destroy(&d->base);
        return st;
    }
    int tag = openat(d->dir_fd, "CACHEDIR.TAG", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (tag >= 0) {
        if (write(tag, CACHEDIR_TAG, strlen(CACHEDIR_TAG)) < 0)
            zf_log_debug("disk cache %s: CACHEDIR.TAG: %s", opts->dir, strerror(errno));
        close(tag);
    }
    dir_lock(d);
    uint64_t total;
    if (!state_read(d, &total) || total > d->max_bytes) /* new, broken, or over the bound */
        rescan_and_evict(d, total > d->max_bytes ? low_water(d) : d->max_bytes);
    else
        d->bytes = total;
    clean_tmp(d);
    dir_unlock(d);
    d->base.inner = inner;
    zf_log_debug("disk cache %s for %s: %" PRIu64 " bytes in use of %" PRIu64 ", ttl %g s",
                 opts->dir, inner->url, (uint64_t)d->bytes, d->max_bytes, d->ttl);
    *out = &d->base;
    return ZF_OK;
}

/* ---- statistics --------------------------------------------------------------------------- */

bool zf_store_disk_cache_stats(zf_store *s, zf_disk_cache_stats *out)
{
    if (s->ops != &dc_ops_ro && s->ops != &dc_ops_rw)
        return false;
    dc_store *d = (dc_store *)s;
    *out = (zf_disk_cache_stats){
        .hits = d->hits, .misses = d->misses, .bytes_read = d->bytes_read,
        .bytes_written = d->bytes_written, .evictions = d->evictions, .bad_entries = d->bad,
        .revalidations = d->revalidations, .stale = d->stale,
        .write_failures = d->write_failures, .bytes = d->bytes, .capacity = d->max_bytes};
    return true;
}

void zf_store_disk_cache_json(zf_store *s, char *buf, size_t n)
{
    zf_disk_cache_stats c;
    if (n)
        buf[0] = '\0';
    if (!zf_store_disk_cache_stats(s, &c))
        return;
    snprintf(buf, n,
             ", \"disk_cache\": {\"hits\": %" PRIu64 ", \"misses\": %" PRIu64
             ", \"bytes_read\": %" PRIu64 ", \"bytes_written\": %" PRIu64
             ", \"evictions\": %" PRIu64 ", \"bad_entries\": %" PRIu64
             ", \"revalidations\": %" PRIu64 ", \"stale\": %" PRIu64
             ", \"write_failures\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"capacity\": %" PRIu64
             "}",
             c.hits, c.misses, c.bytes_read, c.bytes_written, c.evictions, c.bad_entries,
             c.revalidations, c.stale, c.write_failures, c.bytes, c.capacity);
}
