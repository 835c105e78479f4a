/* store_zip.c — a zip archive as a read-only store (zarr-python's ZipStore, `zip -r`): a store
 * wrapper whose archive is one key of another store (a local directory, HTTP or S3).
 *
 * libzip keeps the format (central directory, Zip64, deflate, CRC); the bytes come from the inner
 * store through a zip_source_function whose reads go to zf_store_get_partial via a read window,
 * so libzip's many small reads become few store requests (the window is the buffer of the inner
 * store's last read, taken without a copy). Opening costs one suffix read (the end
 * of central directory, usually the whole central directory of a small archive with it) and at
 * most one more for a large central directory; a value then costs the ranges of its own entry
 * only: a remote archive is never fetched whole.
 *
 * Keys are entry names below the archive's root: the archive's top level, or — when nothing at
 * the top level is Zarr metadata and every entry lies in one directory (`zip -r x.zarr.zip
 * x.zarr`) — that directory. The sorted table of entries is built once at open; stat and
 * list_dir read only it. libzip handles are not thread-safe: one mutex serializes every read
 * through the archive (and the read window with it).
 *
 * Whole values are CRC-checked by libzip; a CRC or size mismatch, or a deflate stream that does
 * not decode, is ZF_ERR_CORRUPT (logged), never wrong bytes. A byte range of a stored
 * (uncompressed) entry is read by seeking, without the CRC (which covers the whole entry); a
 * range of a compressed entry is the slice of the whole, checked value (the last such value, up
 * to DECODED_KEEP bytes, is kept for the next range: a shard's index, then its inner chunks). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "zarrfs/log.h"
#include "zarrfs/mem.h"
#include "zarrfs/store.h"

#include "store_impl.h"

#define TAIL_READ (128 * 1024) /* first read: > 65557, the largest end of central directory */
#define WINDOW_LOCAL (256 * 1024)
#define WINDOW_REMOTE (1024 * 1024)
/* A compressed entry read by ranges (a shard's index, then its inner chunks) is decoded whole
 * once and its value kept for the next range, up to this size (bytes). */
#define DECODED_KEEP (16u << 20)

typedef struct zip_entry {
    char *name; /* below the root prefix */
    zip_uint64_t index;
    uint64_t size;
    struct timespec mtime;
    bool stored; /* uncompressed: ranges can seek */
} zip_entry;

typedef struct zip_store {
    zf_store base; /* base.inner: the store holding the archive */
    char *key;     /* the archive's key in base.inner */
    zip_t *za;
    pthread_mutex_t mu; /* every libzip call, the source state below */
    /* the source: position, error, window of archive bytes [woff, woff + wlen) (the buffer of
     * the inner store's last read, taken as it is) and the size of a read that refills it */
    uint64_t size, pos, woff;
    uint8_t *win;
    size_t wlen, wcap;
    /* the compressed entry last read by a range, decoded whole (NULL: none) */
    const zip_entry *decoded_entry;
    zf_bytes decoded;
    zip_error_t zerr;
    zf_status io_st; /* the inner store's failure behind a libzip read error (ZF_OK: none) */
    zf_err io_err;
    zip_entry *entries;
    size_t n;
} zip_store;

/* ---- the source: archive bytes from the inner store ------------------------------------------ */

/* Copy n bytes of the archive at pos into dst through the window; the count copied (short at the
 * end of the archive), or -1 with z->io_st set. */
static zip_int64_t read_at(zip_store *z, uint64_t pos, uint8_t *dst, uint64_t n)
{
    uint64_t done = 0;
    while (done < n && pos + done < z->size) {
        uint64_t p = pos + done;
        if (p >= z->woff && p < z->woff + z->wlen) {
            uint64_t k = z->woff + z->wlen - p;
            if (k > n - done)
                k = n - done;
            memcpy(dst + done, z->win + (p - z->woff), (size_t)k);
            done += k;
            continue;
        }
        zf_bytes b = {0};
        bool direct = n - done >= z->wcap;
        zf_status st = zf_store_get_partial(z->base.inner, z->key, p, direct ? n - done : z->wcap,
                                            &b, &z->io_err);
        if (st != ZF_OK) {
            z->io_st = st == ZF_ERR_NOT_FOUND ? ZF_ERR_IO : st;
            if (st == ZF_ERR_NOT_FOUND)
                zf_fail(&z->io_err, ZF_ERR_IO, "%s: the archive is gone", z->key);
            return -1;
        }
        if (b.len == 0) {
            zf_bytes_free(&b);
            break; /* the archive ended early */
        }
        if (direct) {
            memcpy(dst + done, b.data, b.len);
            done += b.len;
            zf_bytes_free(&b);
        } else { /* the read's buffer is the new window */
            free(z->win);
            z->win = b.data;
            z->woff = p, z->wlen = b.len;
        }
    }
    return (zip_int64_t)done;
}

static zip_int64_t source_cb(void *ud, void *data, zip_uint64_t len, zip_source_cmd_t cmd)
{
    zip_store *z = ud;
    switch (cmd) {
    case ZIP_SOURCE_OPEN:
        z->pos = 0;
        return 0;
    case ZIP_SOURCE_READ: {
        zip_int64_t r = read_at(z, z->pos, data, len);
        if (r < 0) {
            zip_error_set(&z->zerr, ZIP_ER_READ, EIO);
            return -1;
        }
        z->pos += (uint64_t)r;
        return r;
    }
    case ZIP_SOURCE_CLOSE:
    case ZIP_SOURCE_FREE:
        return 0;
    case ZIP_SOURCE_STAT: {
        zip_stat_t *st = data;
        zip_stat_init(st);
        st->size = z->size;
        st->valid |= ZIP_STAT_SIZE;
        return sizeof *st;
    }
    case ZIP_SOURCE_ERROR:
        return zip_error_to_data(&z->zerr, data, len);
    case ZIP_SOURCE_SEEK: {
        zip_int64_t p = zip_source_seek_compute_offset(z->pos, z->size, data, len, &z->zerr);
        if (p < 0)
            return -1;
        z->pos = (uint64_t)p;
        return 0;
    }
    case ZIP_SOURCE_TELL:
        return (zip_int64_t)z->pos;
    case ZIP_SOURCE_SUPPORTS:
        return zip_source_make_command_bitmap(ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE,
                                              ZIP_SOURCE_STAT, ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE,
                                              ZIP_SOURCE_SEEK, ZIP_SOURCE_TELL,
                                              ZIP_SOURCE_SUPPORTS, -1);
    default:
        zip_error_set(&z->zerr, ZIP_ER_OPNOTSUPP, 0);
        return -1;
    }
}

/* ---- the entry table ---------------------------------------------------------------------------- */

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const zip_entry *)a)->name, ((const zip_entry *)b)->name);
}

static const zip_entry *find(const zip_store *z, const char *key)
{
    zip_entry k = {.name = (char *)key};
    return z->n ? bsearch(&k, z->entries, z->n, sizeof k, entry_cmp) : NULL;
}

/* First entry whose name is >= s. */
static zf_key_table key_table(const zip_store *z)
{
    return (zf_key_table){.base = z->entries, .n = z->n, .size = sizeof *z->entries,
                          .key_off = offsetof(zip_entry, name)};
}

static bool has_root_metadata(const zip_store *z, const char *dir)
{
    static const char *const names[] = {".zgroup", ".zarray", "zarr.json"};
    char buf[1024];
    for (size_t i = 0; i < 3; i++) {
        snprintf(buf, sizeof buf, "%s%s", dir, names[i]);
        if (find(z, buf))
            return true;
    }
    return false;
}

/* When the top level holds no Zarr metadata and every entry (but __MACOSX/) lies below one
 * directory that does, strip that directory from every name. */
static void find_root(zip_store *z)
{
    if (z->n == 0 || has_root_metadata(z, ""))
        return;
    const char *first = NULL;
    size_t dlen = 0;
    for (size_t i = 0; i < z->n; i++) {
        const char *name = z->entries[i].name, *slash = strchr(name, '/');
        if (strncmp(name, "__MACOSX/", 9) == 0)
            continue;
        if (!slash)
            return; /* a value at the top level */
        if (!first) {
            first = name, dlen = (size_t)(slash - name) + 1;
        } else if ((size_t)(slash - name) + 1 != dlen || memcmp(name, first, dlen) != 0) {
            return; /* two top-level directories */
        }
    }
    if (!first || dlen >= 1024)
        return;
    char dir[1024];
    memcpy(dir, first, dlen);
    dir[dlen] = '\0';
    if (!has_root_metadata(z, dir))
        return;
    size_t m = 0;
    for (size_t i = 0; i < z->n; i++) {
        zip_entry *e = &z->entries[i];
        if (strncmp(e->name, dir, dlen) != 0) {
            free(e->name);
            continue;
        }
        memmove(e->name, e->name + dlen, strlen(e->name + dlen) + 1);
        z->entries[m++] = *e;
    }
    z->n = m; /* still sorted: one common prefix removed */
    zf_log_info("%s: the hierarchy is in %s of the archive", z->base.url, dir);
}

static zf_status build_table(zip_store *z, zf_err *err)
{
    zip_int64_t n = zip_get_num_entries(z->za, 0);
    if (n < 0)
        return zf_fail(err, ZF_ERR_CORRUPT, "%s: cannot read the zip directory", z->base.url);
    z->entries = calloc((size_t)n + 1, sizeof *z->entries);
    if (!z->entries)
        return ZF_ERR_NOMEM;
    for (zip_uint64_t i = 0; i < (zip_uint64_t)n; i++) {
        zip_stat_t st;
        if (zip_stat_index(z->za, i, 0, &st) != 0 || !(st.valid & ZIP_STAT_NAME))
            return zf_fail(err, ZF_ERR_CORRUPT, "%s: entry %" PRIu64 ": %s", z->base.url,
                           (uint64_t)i, zip_strerror(z->za));
        size_t len = strlen(st.name);
        if (len == 0 || st.name[len - 1] == '/')
            continue; /* a directory's own entry: listings come from the names below it */
        if (!zf_key_is_valid(st.name)) { /* "../x", "/x", "a//b": never a key, never listed */
            zf_log_debug("%s: entry \"%.200s\" is not a valid key: ignored", z->base.url,
                         st.name);
            continue;
        }
        zip_entry *e = &z->entries[z->n];
        if (!(e->name = strdup(st.name)))
            return ZF_ERR_NOMEM;
        z->n++;
        e->index = i;
        e->size = (st.valid & ZIP_STAT_SIZE) ? st.size : 0;
        if (st.valid & ZIP_STAT_MTIME)
            e->mtime.tv_sec = st.mtime;
        e->stored = (st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method == ZIP_CM_STORE;
    }
    qsort(z->entries, z->n, sizeof *z->entries, entry_cmp);
    find_root(z);
    return ZF_OK;
}

/* ---- reading entries ---------------------------------------------------------------------------- */

/* A libzip failure on key as a status: the inner store's own failure, corrupt data (logged), or
 * an entry zarrfs cannot read. */
static zf_status entry_error(zip_store *z, const char *key, zip_error_t *ze, zf_err *err)
{
    if (z->io_st != ZF_OK) {
        zf_status st = z->io_st;
        zf_fail(err, st, "%s: %s", z->base.url, z->io_err.msg);
        return st;
    }
    int code = zip_error_code_zip(ze);
    const char *why = zip_error_strerror(ze);
    if (code == ZIP_ER_COMPNOTSUPP || code == ZIP_ER_ENCRNOTSUPP || code == ZIP_ER_NOPASSWD)
        return zf_fail(err, ZF_ERR_UNSUPPORTED, "%s: %s: %s", z->base.url, key, why);
    if (code == ZIP_ER_MEMORY)
        return ZF_ERR_NOMEM;
    zf_log_warn("%s: %s: bad zip entry: %s", z->base.url, key, why);
    return zf_fail(err, ZF_ERR_CORRUPT, "%s: %s: bad zip entry: %s", z->base.url, key, why);
}

/* Bytes [offset, offset + len) of e's decompressed value; whole (checked) when whole. Called
 * with z->mu held. */
static zf_status read_entry(zip_store *z, const zip_entry *e, const char *key, bool whole,
                            uint64_t offset, uint64_t len, zf_bytes *out, zf_err *err)
{
    z->io_st = ZF_OK;
    z->io_err.msg[0] = '\0';
    if (whole)
        offset = 0, len = e->size;
    else if (offset >= e->size)
        len = 0;
    else if (len > e->size - offset)
        len = e->size - offset;
    if (len > ZF_STORE_MAX_VALUE)
        return zf_store_refuse_large(err, key, ZF_STORE_MAX_VALUE, len,
                                     "in the archive's directory");
    zip_file_t *f = zip_fopen_index(z->za, e->index, 0);
    if (!f)
        return entry_error(z, key, zip_get_error(z->za), err);
    zf_status st = ZF_OK;
    uint8_t *buf = zf_alloc_bulk(len ? (size_t)len : 1);
    if (!buf) {
        zip_fclose(f);
        return ZF_ERR_NOMEM;
    }
    if (offset > 0 && zip_fseek(f, (zip_int64_t)offset, SEEK_SET) != 0) {
        st = entry_error(z, key, zip_file_get_error(f), err);
        goto done;
    }
    uint64_t got = 0;
    while (got < len) {
        zip_int64_t r = zip_fread(f, buf + got, len - got);
        if (r < 0) {
            st = entry_error(z, key, zip_file_get_error(f), err);
            goto done;
        }
        if (r == 0)
            break;
        got += (uint64_t)r;
    }
    if (whole) { /* read on to the end, where libzip checks the CRC; and nothing may follow */
        uint8_t extra[1];
        zip_int64_t r = got == len ? zip_fread(f, extra, 1) : 0;
        if (r < 0) {
            st = entry_error(z, key, zip_file_get_error(f), err);
            goto done;
        }
        if (got != len || r > 0) {
            zf_log_warn("%s: %s: bad zip entry: not the size the directory says", z->base.url,
                        key);
            st = zf_fail(err, ZF_ERR_CORRUPT, "%s: %s: bad zip entry: not %" PRIu64 " bytes",
                         z->base.url, key, len);
            goto done;
        }
    }
    out->data = buf;
    out->len = (size_t)got;
    buf = NULL;
done:
    free(buf);
    zip_fclose(f);
    return st;
}

static zf_status zs_get_partial(zf_store *s, const char *key, uint64_t offset, uint64_t len,
                                zf_bytes *out, zf_err *err)
{
    zip_store *z = (zip_store *)s;
    const zip_entry *e = find(z, key);
    if (!e)
        return ZF_ERR_NOT_FOUND;
    bool whole = offset == 0 && len >= e->size;
    pthread_mutex_lock(&z->mu);
    zf_status st;
    if (whole || e->stored) {
        st = read_entry(z, e, key, whole, offset, len, out, err);
    } else { /* a compressed entry: decode all of it (checked), keep the slice */
        st = ZF_OK;
        if (z->decoded_entry != e) {
            zf_bytes_free(&z->decoded);
            z->decoded_entry = NULL;
            st = read_entry(z, e, key, true, 0, 0, &z->decoded, err);
            if (st == ZF_OK)
                z->decoded_entry = e;
        }
        if (st == ZF_OK) {
            const zf_bytes *all = &z->decoded;
            uint64_t n = offset >= all->len ? 0 : all->len - offset;
            if (n > len)
                n = len;
            uint8_t *p = zf_alloc_bulk(n ? (size_t)n : 1);
            if (!p)
                st = ZF_ERR_NOMEM;
            else {
                if (n)
                    memcpy(p, all->data + offset, (size_t)n);
                out->data = p, out->len = (size_t)n;
            }
        }
        if (z->decoded.len > DECODED_KEEP) { /* too large to keep: decoded again next time */
            zf_bytes_free(&z->decoded);
            z->decoded_entry = NULL;
        }
    }
    pthread_mutex_unlock(&z->mu);
    return st;
}

static zf_status zs_get(zf_store *s, const char *key, zf_bytes *out, zf_err *err)
{
    return zs_get_partial(s, key, 0, UINT64_MAX, out, err);
}

/* By the entry's size in the central directory, before reading it (libzip then reads and
 * decompresses no more than that size: a longer entry is ZF_ERR_CORRUPT). */
static zf_status zs_get_bounded(zf_store *s, const char *key, uint64_t max_size, zf_bytes *out,
                                zf_err *err)
{
    const zip_entry *e = find((zip_store *)s, key);
    if (!e)
        return ZF_ERR_NOT_FOUND;
    if (e->size > max_size)
        return zf_store_refuse_large(err, key, max_size, e->size, "in the archive's directory");
    return zs_get(s, key, out, err);
}

static zf_status zs_stat(zf_store *s, const char *key, uint64_t *size, struct timespec *mtime,
                         zf_err *err)
{
    (void)err;
    const zip_entry *e = find((zip_store *)s, key);
    if (!e)
        return ZF_ERR_NOT_FOUND;
    if (size)
        *size = e->size;
    if (mtime)
        *mtime = e->mtime;
    return ZF_OK;
}

static zf_status zs_list_dir(zf_store *s, const char *prefix, zf_store_listing *out, zf_err *err)
{
    (void)err;
    zf_key_table t = key_table((const zip_store *)s);
    return zf_key_table_list(&t, prefix, out);
}

static void zs_destroy(zf_store *s)
{
    zip_store *z = (zip_store *)s;
    if (z->za)
        zip_discard(z->za);
    for (size_t i = 0; i < z->n; i++)
        free(z->entries[i].name);
    free(z->entries);
    zip_error_fini(&z->zerr);
    pthread_mutex_destroy(&z->mu);
    zf_store_close(z->base.inner);
    zf_bytes_free(&z->decoded);
    free(z->win);
    free(z->key);
    free(z->base.url);
    free(z->base.location);
    free(z);
}

static const zf_store_ops zip_ops = {
    .scheme = "zip",
    .get = zs_get,
    .get_partial = zs_get_partial,
    .stat = zs_stat,
    .list_dir = zs_list_dir,
    .destroy = zs_destroy,
    .get_bounded = zs_get_bounded,
};

zf_status zf_store_zip_open(zf_store *inner, const char *key, const char *name, zf_store **out,
                            zf_err *err)
{
    zip_store *z = calloc(1, sizeof *z);
    if (!z)
        return ZF_ERR_NOMEM;
    pthread_mutex_init(&z->mu, NULL);
    zip_error_init(&z->zerr);
    const char *loc = inner->location ? inner->location : inner->url;
    z->wcap = inner->remote ? WINDOW_REMOTE : WINDOW_LOCAL;
    if (!(z->key = strdup(key)) ||
        asprintf(&z->base.url, "%s", name ? name : key) < 0 ||
        asprintf(&z->base.location, "zip:%s/%s", loc, key) < 0) {
        z->base.url = z->base.location = NULL;
        zs_destroy(&z->base);
        return ZF_ERR_NOMEM;
    }
    z->base.ops = &zip_ops;
    z->base.remote = inner->remote;
    z->base.inner = inner;
    zf_status st;
    /* One read for the end of the archive (and its size), which libzip looks at first. */
    zf_bytes tail = {0};
    uint64_t total = 0;
    if ((st = zf_store_get_suffix(inner, key, TAIL_READ, &tail, &total, err)) != ZF_OK) {
        if (st == ZF_ERR_NOT_FOUND)
            zf_fail(err, st, "%s: no such file", z->base.url);
        goto fail;
    }
    z->size = total;
    z->win = tail.data; /* the first window: of a small archive, all of it */
    z->woff = total - tail.len, z->wlen = tail.len;

    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_function_create(source_cb, z, &ze);
    if (!src) {
        zip_error_fini(&ze);
        st = ZF_ERR_NOMEM;
        goto fail;
    }
    z->za = zip_open_from_source(src, ZIP_RDONLY, &ze);
    if (!z->za) {
        zip_source_free(src);
        if (z->io_st != ZF_OK)
            st = zf_fail(err, z->io_st, "%s: %s", z->base.url, z->io_err.msg);
        else
            st = zf_fail(err, ZF_ERR_CORRUPT, "%s: not a readable zip archive: %s",
                         z->base.url, zip_error_strerror(&ze));
        zip_error_fini(&ze);
        goto fail;
    }
    zip_error_fini(&ze);
    if ((st = build_table(z, err)) != ZF_OK)
        goto fail;
    *out = &z->base;
    return ZF_OK;
fail:
    z->base.inner = NULL; /* left to the caller */
    zs_destroy(&z->base);
    return st;
}

bool zf_zip_looks_like_archive(const uint8_t *head, size_t head_len, const uint8_t *tail,
                               size_t tail_len)
{
    if (head_len >= 4 && memcmp(head, "PK\3\4", 4) == 0)
        return true;
    if (tail_len < 22)
        return false;
    for (size_t i = tail_len - 22 + 1; i-- > 0;) /* end of central directory record */
        if (memcmp(tail + i, "PK\5\6", 4) == 0)
            return true;
    return false;
}
