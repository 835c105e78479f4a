/* store.c — key validation and dispatch to store backends (a local file or a URL ending in .zip:
 * the zip store over the store of its directory; a local file holding JSON, or an HTTP(S) or S3
 * URL ending in .json: kerchunk references). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zarrfs/json.h"
#include "zarrfs/mem.h"
#include "zarrfs/store.h"

#include "store_impl.h"
#include "zarrfs/metrics.h"

void zf_bytes_free(zf_bytes *b)
{
    zf_free_chunk(b->data, b->len); /* a chunk file's buffer (store_file.c) serves the next */
    b->data = NULL;
    b->len = 0;
}

void zf_store_listing_free(zf_store_listing *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->entries[i].name);
    free(l->entries);
    l->entries = NULL;
    l->n = 0;
}

bool zf_key_is_valid(const char *key)
{
    if (!key || !*key || *key == '/')
        return false;
    const char *seg = key;
    for (;;) {
        const char *end = strchr(seg, '/');
        size_t n = end ? (size_t)(end - seg) : strlen(seg);
        if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
            return false;
        if (memchr(seg, '\\', n))
            return false;
        if (!end)
            return true;
        seg = end + 1;
    }
}

ssize_t zf_pread_full(int fd, void *buf, size_t n, off_t offset)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (uint8_t *)buf + got, n - got, offset + (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

uint64_t zf_store_bound(uint64_t max_size)
{
    return max_size == 0 || max_size > ZF_STORE_MAX_VALUE ? ZF_STORE_MAX_VALUE : max_size;
}

zf_status zf_store_refuse_large(zf_err *err, const char *key, uint64_t bound, uint64_t size,
                                const char *where)
{
    char b[48];
    if (bound % ((uint64_t)1 << 20) == 0)
        snprintf(b, sizeof b, "%" PRIu64 " MiB", bound >> 20);
    else
        snprintf(b, sizeof b, "%" PRIu64 " bytes", bound);
    if (size == UINT64_MAX)
        return zf_fail(err, ZF_ERR_TOO_LARGE, "%s: refusing a value larger than %s (%s)", key, b,
                       where);
    return zf_fail(err, ZF_ERR_TOO_LARGE,
                   "%s: refusing a value larger than %s (%" PRIu64 " bytes%s%s)", key, b, size,
                   where[0] ? " " : "", where);
}

/* Up to n bytes at offset of an open file: the count read (0 after a failed read). */
static size_t pread_some(int fd, uint8_t *buf, size_t n, off_t offset)
{
    ssize_t r = zf_pread_full(fd, buf, n, offset);
    return r < 0 ? 0 : (size_t)r;
}

/* Kerchunk references in a local file: parsed with the file's directory for relative targets.
 * A JSON document: larger than ZF_JSON_MAX_TEXT, it is refused unread. */
static zf_status open_local_refs(const char *path, int fd, off_t size,
                                 const zf_store_options *opts, zf_store **out, zf_err *err)
{
    if ((uint64_t)size > ZF_JSON_MAX_TEXT)
        return zf_fail(err, ZF_ERR_INVALID,
                       "%s: reference file larger than %zu MiB (%" PRIu64 " bytes)", path,
                       ZF_JSON_MAX_TEXT >> 20, (uint64_t)size);
    char *text = malloc((size_t)size + 1);
    if (!text)
        return ZF_ERR_NOMEM;
    if (pread_some(fd, (uint8_t *)text, (size_t)size, 0) != (size_t)size) {
        free(text);
        return zf_fail(err, ZF_ERR_IO, "%s: cannot read the file", path);
    }
    char *full = realpath(path, NULL);
    char *slash = full ? strrchr(full, '/') : NULL;
    if (slash)
        *(slash == full ? slash + 1 : slash) = '\0';
    zf_status st = zf_store_refs_open(path, text, (size_t)size, slash ? full : ".", opts, out, err);
    free(full);
    free(text);
    return st;
}

/* A local file as a store: a zip archive (the key of its name in its directory's store) or
 * kerchunk references; the Parquet form of references is refused. */
static zf_status open_local_file(const char *path, const zf_store_options *opts, zf_store **out,
                                 zf_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return zf_fail(err, ZF_ERR_IO, "%s: %s", path, strerror(errno));
    struct stat sb;
    uint8_t head[64], *tail = malloc(65536 + 22);
    size_t nh = 0;
    bool zip = false;
    if (tail && fstat(fd, &sb) == 0) {
        nh = pread_some(fd, head, sizeof head, 0);
        off_t tl = sb.st_size > 65536 + 22 ? 65536 + 22 : sb.st_size;
        size_t nt = pread_some(fd, tail, (size_t)tl, sb.st_size - tl);
        zip = zf_zip_looks_like_archive(head, nh, tail, nt);
    }
    free(tail);
    if (!zip) {
        zf_status st;
        if (nh >= 4 && memcmp(head, "PAR1", 4) == 0)
            st = zf_fail(err, ZF_ERR_UNSUPPORTED,
                         "%s: Parquet references are not supported (use the JSON form)", path);
        else if (zf_refs_looks_like_json(head, nh))
            st = open_local_refs(path, fd, sb.st_size, opts, out, err);
        else
            st = zf_fail(err, ZF_ERR_IO,
                         "%s: not a directory, a zip archive nor kerchunk references", path);
        close(fd);
        return st;
    }
    close(fd);
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir)
        return ZF_ERR_NOMEM;
    zf_store *inner;
    zf_status st = zf_store_file_open(dir, &inner, err);
    free(dir);
    if (st != ZF_OK)
        return st;
    if ((st = zf_store_zip_open(inner, slash ? slash + 1 : path, path, out, err)) != ZF_OK)
        zf_store_close(inner);
    return st;
}

/* A directory holding the Parquet form of references (fsspec's LazyReferenceMapper: .zmetadata
 * with "record_size" and refs.N.parq files) rather than a Zarr hierarchy. */
static bool is_parquet_refs_dir(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/.zmetadata", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char buf[65536];
    size_t n = pread_some(fd, (uint8_t *)buf, sizeof buf - 1, 0);
    close(fd);
    buf[n] = '\0';
    return strstr(buf, "\"record_size\"") != NULL;
}

/* An HTTP(S) or S3 URL naming a reference file (*.json): fetched whole (at most
 * ZF_JSON_MAX_TEXT), relative targets below its parent URL. */
typedef zf_status (*remote_open_fn)(const char *url, const zf_store_options *opts,
                                    zf_store **out, zf_err *err);

static zf_status open_remote_refs(const char *url, const zf_store_options *opts,
                                  remote_open_fn open, zf_store **out, zf_err *err)
{
    const char *slash = strrchr(url, '/');
    const char *scheme_end = strstr(url, "://") + 3;
    char *shown = zf_url_redact(url); /* its name in messages and in its location */
    if (!shown)
        return ZF_ERR_NOMEM;
    if (!slash || slash < scheme_end || !slash[1]) {
        zf_status st = zf_fail(err, ZF_ERR_INVALID, "%s: no file name in the URL", shown);
        free(shown);
        return st;
    }
    char *parent = strndup(url, (size_t)(slash - url));
    zf_store *web;
    zf_status st = !parent ? ZF_ERR_NOMEM : open(parent, opts, &web, err);
    if (st == ZF_OK) {
        zf_bytes b = {0};
        st = zf_store_get_bounded(web, slash + 1, ZF_JSON_MAX_TEXT, &b, err);
        zf_store_close(web);
        if (st == ZF_ERR_NOT_FOUND)
            st = zf_fail(err, ZF_ERR_NOT_FOUND, "%s: not found", shown);
        if (st == ZF_OK)
            st = zf_store_refs_open(shown, (const char *)b.data, b.len, parent, opts, out, err);
        zf_bytes_free(&b);
    }
    free(parent);
    free(shown);
    return st;
}

/* An HTTP(S) or S3 URL naming a zip archive: the archive is the last path component of the
 * store of its parent URL. */
/* The SAS token of an Azure URL ("?..."), else "": the archive's name ends before it, and the
 * store of the parent URL takes it. */
static const char *sas_query(const char *url)
{
    const char *q = zf_store_azure_url(url) ? strchr(url, '?') : NULL;
    return q ? q : "";
}

static zf_status open_remote_zip(const char *url, const zf_store_options *opts,
                                 remote_open_fn open, zf_store **out, zf_err *err)
{
    const char *q = sas_query(url);
    size_t n = strlen(url) - strlen(q);
    const char *slash = memrchr(url, '/', n);
    const char *scheme_end = strstr(url, "://") + 3;
    char *shown = zf_url_redact(url); /* its name in messages */
    if (!shown)
        return ZF_ERR_NOMEM;
    if (!slash || slash < scheme_end || slash + 1 == url + n) {
        zf_status st = zf_fail(err, ZF_ERR_INVALID, "%s: no archive name in the URL", shown);
        free(shown);
        return st;
    }
    char *parent = NULL, *name = strndup(slash + 1, (size_t)(url + n - slash - 1));
    if (asprintf(&parent, "%.*s%s", (int)(slash - url), url, q) < 0)
        parent = NULL;
    zf_store *inner;
    zf_status st = !parent || !name ? ZF_ERR_NOMEM : open(parent, opts, &inner, err);
    if (parent)
        explicit_bzero(parent, strlen(parent)); /* it may hold a SAS token */
    free(parent);
    if (st == ZF_OK && (st = zf_store_zip_open(inner, name, shown, out, err)) != ZF_OK)
        zf_store_close(inner);
    free(name);
    free(shown);
    return st;
}

static bool names_zip(const char *url)
{
    size_t n = strlen(url) - strlen(sas_query(url));
    return n > 4 && strncasecmp(url + n - 4, ".zip", 4) == 0;
}

static bool names_json(const char *url)
{
    size_t n = strlen(url);
    return n > 5 && strcasecmp(url + n - 5, ".json") == 0;
}

zf_status zf_store_open(const char *url, const zf_store_options *opts, zf_store **out,
                        zf_err *err)
{
    static const zf_store_options defaults = {.retries = ZF_STORE_DEFAULT_RETRIES,
                                              .timeout = ZF_STORE_DEFAULT_TIMEOUT,
                                              .max_connections =
                                                  ZF_STORE_DEFAULT_MAX_CONNECTIONS};
    if (!opts)
        opts = &defaults;
    remote_open_fn open = zf_store_gcs_url(url)     ? zf_store_gcs_open
                          : zf_store_azure_url(url)   ? zf_store_azure_open
                          : strncmp(url, "s3://", 5) == 0 ? zf_store_s3_open
                          : strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0
                              ? zf_store_http_open
                              : NULL;
    if (open && names_zip(url))
        return open_remote_zip(url, opts, open, out, err);
    if (open && names_json(url))
        return open_remote_refs(url, opts, open, out, err);
    if (open)
        return open(url, opts, out, err);
    if (strncmp(url, "file://", 7) == 0)
        url += 7;
    else if (strstr(url, "://"))
        return zf_fail(err, ZF_ERR_UNSUPPORTED, "%s: this kind of store is not supported", url);
    struct stat sb;
    if (stat(url, &sb) == 0 && S_ISREG(sb.st_mode))
        return open_local_file(url, opts, out, err);
    if (stat(url, &sb) == 0 && S_ISDIR(sb.st_mode) && is_parquet_refs_dir(url))
        return zf_fail(err, ZF_ERR_UNSUPPORTED,
                       "%s: Parquet references are not supported (use the JSON form)", url);
    return zf_store_file_open(url, out, err);
}

bool zf_store_is_remote(const zf_store *s) { return s->remote; }

static zf_status check_key(const char *key, bool allow_root, zf_err *err)
{
    if (allow_root && key[0] == '\0')
        return ZF_OK;
    if (!zf_key_is_valid(key))
        return zf_fail(err, ZF_ERR_INVALID, "\"%s\": invalid store key", key);
    return ZF_OK;
}

void zf_store_get_stats(zf_store *s, zf_store_stats *out)
{
    while (s->inner) /* a wrapper's own calls are not traffic */
        s = s->inner;
    if (s->ops->traffic) {
        s->ops->traffic(s, out);
        return;
    }
    uint64_t writes = s->n_writes; /* loaded once: requests - writes is the other requests */
    *out = (zf_store_stats){.requests = s->n_requests + writes, .bytes = s->n_bytes,
                            .errors = s->n_errors, .retries = s->n_retries,
                            .writes = writes, .bytes_written = s->n_bytes_written};
}

void zf_store_stats_add(zf_store_stats *sum, zf_store *s)
{
    zf_store_stats one;
    zf_store_get_stats(s, &one);
    sum->requests += one.requests;
    sum->bytes += one.bytes;
    sum->errors += one.errors;
    sum->retries += one.retries;
    sum->writes += one.writes;
    sum->bytes_written += one.bytes_written;
}

void zf_store_count_retry(zf_store *s) { s->n_retries++; }

/* Count the outcome of one request that ended with st (and returned out's bytes on success). */
static zf_status outcome(zf_store *s, zf_status st, const zf_bytes *out)
{
    if (st == ZF_OK && out)
        s->n_bytes += out->len;
    else if (st != ZF_OK && st != ZF_ERR_NOT_FOUND && st != ZF_ERR_CONFLICT) /* results */
        s->n_errors++;
    return st;
}

/* Count one request other than a write, begun at t0 (zf_metrics_now_ns) and ended with st. */
static zf_status counted(zf_store *s, uint64_t t0, zf_status st, const zf_bytes *out)
{
    s->n_requests++;
    zf_metrics_store_request(s->ops->scheme, st, zf_metrics_now_ns() - t0);
    return outcome(s, st, out);
}

zf_status zf_store_get(zf_store *s, const char *key, zf_bytes *out, zf_err *err)
{
    uint64_t t0 = zf_metrics_now_ns();
    zf_status st = check_key(key, false, err);
    return st ? st : counted(s, t0, s->ops->get(s, key, out, err), out);
}

/* get_bounded of a backend without get_bounded and read_versioned: its stat, then its get. */
static zf_status get_bounded_by_stat(zf_store *s, const char *key, uint64_t bound, zf_bytes *out,
                                     zf_err *err)
{
    uint64_t size;
    zf_status st = s->ops->stat(s, key, &size, NULL, err);
    if (st != ZF_OK)
        return st;
    if (size > bound)
        return zf_store_refuse_large(err, key, bound, size, "stored");
    if ((st = s->ops->get(s, key, out, err)) != ZF_OK)
        return st;
    if (out->len > bound) { /* it grew since */
        size = out->len;
        zf_bytes_free(out);
        return zf_store_refuse_large(err, key, bound, size, "read");
    }
    return ZF_OK;
}

/* One bounded get, not counted (zf_store_get_bounded, zf_store_read_versioned). */
static zf_status get_bounded(zf_store *s, const char *key, uint64_t max_size, zf_bytes *out,
                             zf_store_version *ver, zf_err *err)
{
    uint64_t bound = zf_store_bound(max_size);
    zf_status st;
    if (s->ops->get_bounded) {
        st = s->ops->get_bounded(s, key, bound, out, err);
    } else if (s->ops->read_versioned) {
        zf_store_version v;
        return s->ops->read_versioned(s, key, ZF_READ_ALL, 0, bound, out, ver ? ver : &v, err);
    } else if (max_size == 0) { /* the backend's own bound, as zf_store_get */
        st = s->ops->get(s, key, out, err);
    } else {
        st = get_bounded_by_stat(s, key, bound, out, err);
    }
    if (st == ZF_OK && ver)
        ver->size = out->len, ver->has_size = true;
    return st;
}

zf_status zf_store_get_bounded(zf_store *s, const char *key, uint64_t max_size, zf_bytes *out,
                               zf_err *err)
{
    uint64_t t0 = zf_metrics_now_ns();
    zf_status st = check_key(key, false, err);
    return st ? st : counted(s, t0, get_bounded(s, key, max_size, out, NULL, err), out);
}

zf_status zf_store_get_partial(zf_store *s, const char *key, uint64_t offset, uint64_t len,
                               zf_bytes *out, zf_err *err)
{
    uint64_t t0 = zf_metrics_now_ns();
    zf_status st = check_key(key, false, err);
    return st ? st : counted(s, t0, s->ops->get_partial(s, key, offset, len, out, err), out);
}

zf_status zf_store_get_suffix(zf_store *s, const char *key, uint64_t len, zf_bytes *out,
                              uint64_t *total, zf_err *err)
{
    uint64_t t0 = zf_metrics_now_ns();
    zf_status st = check_key(key, false, err);
    if (st != ZF_OK)
        return st;
    if (s->ops->get_suffix)
        return counted(s, t0, s->ops->get_suffix(s, key, len, out, total, err), out);
    uint64_t size;
    if ((st = counted(s, t0, s->ops->stat(s, key, &size, NULL, err), NULL)) != ZF_OK)
        return st;
    *total = size;
    t0 = zf_metrics_now_ns();
    return counted(s, t0, s->ops->get_partial(s, key, size > len ? size - len : 0, len, out, err),
                   out);
}

zf_status zf_store_stat(zf_store *s, const char *key, uint64_t *size, struct timespec *mtime,
                        zf_err *err)
{
    uint64_t t0 = zf_metrics_now_ns();
    zf_status st = check_key(key, false, err);
    return st ? st : counted(s, t0, s->ops->stat(s, key, size, mtime, err), NULL);
}

zf_status zf_store_read_versioned(zf_store *s, const char *key, zf_read_kind kind,
                                  uint64_t offset, uint64_t len, zf_bytes *out,
                                  zf_store_version *ver, zf_err *err)
{
    uint64_t t0 = zf_metrics_now_ns();
    zf_status st = check_key(key, false, err);
    if (st != ZF_OK)
        return st;
    memset(ver, 0, sizeof *ver);
    if (s->ops->read_versioned)
        return counted(s, t0, s->ops->read_versioned(s, key, kind, offset, len, out, ver, err),
                       kind == ZF_READ_STAT ? NULL : out);
    switch (kind) { /* a backend without versions: only the size is known */
    case ZF_READ_ALL:
        return counted(s, t0, get_bounded(s, key, len, out, ver, err), out);
    case ZF_READ_RANGE:
        return zf_store_get_partial(s, key, offset, len, out, err);
    case ZF_READ_SUFFIX:
        if ((st = zf_store_get_suffix(s, key, len, out, &ver->size, err)) == ZF_OK)
            ver->has_size = true;
        return st;
    case ZF_READ_STAT:
        if ((st = zf_store_stat(s, key, &ver->size, &ver->mtime, err)) == ZF_OK)
            ver->has_size = true;
        return st;
    }
    return zf_fail(err, ZF_ERR_INVALID, "%s: unknown kind of read", key);
}

bool zf_store_version_equal(const zf_store_version *a, const zf_store_version *b)
{
    if (a->has_size && b->has_size && a->size != b->size)
        return false;
    if (a->etag[0] && b->etag[0])
        return strcmp(a->etag, b->etag) == 0;
    bool a_mt = a->mtime.tv_sec || a->mtime.tv_nsec, b_mt = b->mtime.tv_sec || b->mtime.tv_nsec;
    return a_mt && b_mt && a->mtime.tv_sec == b->mtime.tv_sec &&
           a->mtime.tv_nsec == b->mtime.tv_nsec;
}

zf_status zf_store_list_dir(zf_store *s, const char *prefix, zf_store_listing *out, zf_err *err)
{
    uint64_t t0 = zf_metrics_now_ns();
    zf_status st = check_key(prefix, true, err);
    return st ? st : counted(s, t0, s->ops->list_dir(s, prefix, out, err), NULL);
}

bool zf_store_is_writable(const zf_store *s) { return s->ops->set && s->ops->erase; }

static zf_status read_only(const zf_store *s, zf_err *err)
{
    return zf_fail(err, ZF_ERR_READONLY, "%s: this store is read-only (%s)", s->url,
                   s->ops->scheme);
}

/* Count one write request, begun at t0, that ended with st, having stored `bytes`. */
static zf_status counted_write(zf_store *s, uint64_t t0, zf_status st, size_t bytes)
{
    s->n_writes++;
    zf_metrics_store_request(s->ops->scheme, st, zf_metrics_now_ns() - t0); /* (not n_requests: the stats add the writes to it) */
    if (st == ZF_OK)
        s->n_bytes_written += bytes;
    return outcome(s, st, NULL);
}

zf_status zf_store_set(zf_store *s, const char *key, const uint8_t *data, size_t len,
                       zf_err *err)
{
    uint64_t t0 = zf_metrics_now_ns();
    zf_status st = check_key(key, false, err);
    if (st != ZF_OK)
        return st;
    if (!s->ops->set)
        return read_only(s, err);
    return counted_write(s, t0, s->ops->set(s, key, data, len, err), len);
}

zf_status zf_store_set_cond(zf_store *s, const char *key, const uint8_t *data, size_t len,
                            const zf_store_cond *c, zf_err *err)
{
    uint64_t t0 = zf_metrics_now_ns();
    zf_status st = check_key(key, false, err);
    if (st == ZF_OK && c && c->within)
        st = check_key(c->within, true, err);
    if (st != ZF_OK)
        return st;
    size_t wl = c && c->within ? strlen(c->within) : 0;
    if (wl && (strncmp(key, c->within, wl) != 0 || key[wl] != '/'))
        return zf_fail(err, ZF_ERR_INVALID, "\"%s\": not below \"%s\"", key, c->within);
    if (!s->ops->set)
        return read_only(s, err);
    if (!s->ops->set_cond)
        return counted_write(s, t0, s->ops->set(s, key, data, len, err), len);
    return counted_write(s, t0, s->ops->set_cond(s, key, data, len, c, err), len);
}

zf_status zf_store_set_within(zf_store *s, const char *within, const char *key,
                              const uint8_t *data, size_t len, zf_err *err)
{
    return zf_store_set_cond(s, key, data, len, &(zf_store_cond){.within = within}, err);
}

zf_status zf_store_set_if(zf_store *s, const char *key, const uint8_t *data, size_t len,
                          const zf_store_version *base, zf_err *err)
{
    return zf_store_set_cond(s, key, data, len, &(zf_store_cond){.if_version = true, .base = base},
                             err);
}

zf_status zf_store_erase(zf_store *s, const char *key, zf_err *err)
{
    uint64_t t0 = zf_metrics_now_ns();
    zf_status st = check_key(key, false, err);
    if (st != ZF_OK)
        return st;
    if (!s->ops->erase)
        return read_only(s, err);
    return counted_write(s, t0, s->ops->erase(s, key, err), 0);
}

zf_status zf_store_erase_if(zf_store *s, const char *key, const zf_store_version *base,
                            zf_err *err)
{
    uint64_t t0 = zf_metrics_now_ns();
    zf_status st = check_key(key, false, err);
    if (st != ZF_OK)
        return st;
    if (!s->ops->erase)
        return read_only(s, err);
    return counted_write(s, t0, s->ops->erase_if ? s->ops->erase_if(s, key, base, err)
                                             : s->ops->erase(s, key, err),
                         0);
}

zf_status zf_store_remove_dir(zf_store *s, const char *prefix, zf_err *err)
{
    uint64_t t0 = zf_metrics_now_ns();
    zf_status st = check_key(prefix, false, err);
    if (st != ZF_OK)
        return st;
    if (!s->ops->set)
        return read_only(s, err);
    if (!s->ops->remove_dir)
        return ZF_OK;
    return counted_write(s, t0, s->ops->remove_dir(s, prefix, err), 0);
}

void zf_store_close(zf_store *s)
{
    if (s)
        s->ops->destroy(s);
}

/* ---- sorted key tables (zip archives, reference files) ---- */

const char *zf_key_table_key(const zf_key_table *t, size_t i)
{
    const char *entry = (const char *)t->base + i * t->size;
    const char *key;
    memcpy(&key, entry + t->key_off, sizeof key);
    return key;
}

size_t zf_key_table_lower_bound(const zf_key_table *t, const char *s)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(zf_key_table_key(t, mid), s) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

zf_status zf_key_table_list(const zf_key_table *t, const char *prefix, zf_store_listing *out)
{
    size_t plen = strlen(prefix);
    char *p = malloc(plen + 2);
    if (!p)
        return ZF_ERR_NOMEM;
    memcpy(p, prefix, plen);
    if (plen)
        p[plen++] = '/';
    p[plen] = '\0';
    zf_store_listing l = {0};
    size_t cap = 0;
    zf_status st = ZF_OK;
    for (size_t i = zf_key_table_lower_bound(t, p);
         i < t->n && strncmp(zf_key_table_key(t, i), p, plen) == 0; i++) {
        const char *rest = zf_key_table_key(t, i) + plen, *slash = strchr(rest, '/');
        size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
        if (n == 0 || (n == 1 && rest[0] == '.') || (n == 2 && rest[0] == '.' && rest[1] == '.'))
            continue; /* not a key any client could name */
        if (l.n && strlen(l.entries[l.n - 1].name) == n &&
            memcmp(l.entries[l.n - 1].name, rest, n) == 0) {
            l.entries[l.n - 1].is_prefix |= slash != NULL;
            continue; /* sorted: a segment's keys are adjacent (or nearly: "a/" vs "a.b") */
        }
        if (!zf_listing_add(&l, &cap, rest, n, slash != NULL)) {
            st = ZF_ERR_NOMEM;
            break;
        }
    }
    free(p);
    if (st != ZF_OK) {
        zf_store_listing_free(&l);
        return st;
    }
    zf_listing_sort_unique(&l);
    if (l.n == 0) {
        free(l.entries);
        return ZF_ERR_NOT_FOUND;
    }
    *out = l;
    return ZF_OK;
}
