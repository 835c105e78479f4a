/* ops.c — FUSE low-level handlers, one per operation, each replying exactly once (the shape of
 * libfuse's passthrough_ll). Inode numbers are hierarchy node ids; the root is 1
 * (FUSE_ROOT_ID). Mounted with -o rw, writes, truncation, new files and directories and
 * setxattr change the hierarchy (hierarchy.h, "writing"); otherwise all of them fail with
 * EROFS. Open files carry their node (fi->fh), so that a resize, which replaces the node's
 * array, is seen by every open file. A repository's versions (hierarchy.h, zf_versions) are
 * nodes like the others, of hierarchies of their own that the calls given their nodes act on;
 * they are read-only whatever the mount (EROFS). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "fuse_ops.h"
#include "zarrfs/mem.h"
#include "zarrfs/log.h"
#include "zarrfs/metrics.h"
#include "zarrfs/sbuf.h"

#define ATTR_TIMEOUT 3600.0 /* metadata does not change under a read-only mount */

/* Writable: mounted -o rw and the hierarchy allows it (dialect, store); with a node, one that
 * can change (not of the versions tree). */
static bool writable(zf_hierarchy *h, const zf_node *n)
{
    return zf_hierarchy_can_write(h, NULL) == ZF_OK && !(n && zf_hierarchy_node_in_versions(n));
}

/* How long the kernel may trust what lookup and getattr say about node n: the metadata TTL when
 * there is one (-o metadata_ttl, remote stores), else an hour. */
static double attr_timeout(zf_hierarchy *h, const zf_node *n)
{
    if (writable(h, n))
        return 1.0; /* sizes change through this mount (growth rounds up to whole rows) */
    double ttl = zf_hierarchy_metadata_ttl(h);
    return ttl > 0 && ttl < ATTR_TIMEOUT ? ttl : ATTR_TIMEOUT;
}
#define MAX_REQUEST (1u << 20)

/* The statistics file at the mount root: found by name but never listed (as ZFS's .zfs with
 * snapdir=hidden), so that programs walking the mount see only the hierarchy. Its inode number
 * is far from the node ids (counted from 1; a version's from k * 2^40 + 1, all below 2^61:
 * hierarchy.h) and from the numbers opendir gives unreadable children (counted down from
 * 2^64 - 1). A root node of the same name is shadowed by it. */
#define STATS_NAME ".zarrfs-stats"
#define STATS_INO ((fuse_ino_t)1 << 62)
/* The same counters and more (histograms) in the Prometheus text format: .zarrfs-metrics, found
 * the same way. */
#define METRICS_NAME ".zarrfs-metrics"
#define METRICS_INO (STATS_INO + 1)
#define IS_SPECIAL(ino) ((ino) == STATS_INO || (ino) == METRICS_INO)

/* Requests answered with an error other than "no such entry" (for the statistics). */
static _Atomic uint64_t replies_failed;

/* fuse_reply_err, errors counted by errno for the metrics. */
static int reply_err(fuse_req_t req, int e)
{
    if (e)
        zf_metrics_reply_error(e);
    return fuse_reply_err(req, e);
}

int zf_errno(zf_status st)
{
    switch (st) {
    case ZF_OK: return 0;
    case ZF_ERR_NOT_FOUND: return ENOENT;
    case ZF_ERR_NOMEM: return ENOMEM;
    case ZF_ERR_UNSUPPORTED: return EOPNOTSUPP;
    case ZF_ERR_READONLY: return EROFS;
    case ZF_ERR_EXISTS: return EEXIST;
    case ZF_ERR_NOT_EMPTY: return ENOTEMPTY;
    case ZF_ERR_PERMISSION: return EPERM;
    case ZF_ERR_NOT_DIR: return ENOTDIR;
    case ZF_ERR_IS_DIR: return EISDIR;
    case ZF_ERR_NO_SPACE: return ENOSPC;
    case ZF_ERR_ACCESS: return EACCES;
    case ZF_ERR_IO:
    case ZF_ERR_TOO_LARGE:
    case ZF_ERR_CORRUPT:
    case ZF_ERR_CONFLICT:
    case ZF_ERR_INVALID: return EIO;
    }
    return EIO;
}

static zf_hierarchy *H(fuse_req_t req) { return ((zf_fs *)fuse_req_userdata(req))->h; }
static zf_fs *FS(fuse_req_t req) { return fuse_req_userdata(req); }

/* Owner, group and permission bits of every node (-o uid, gid, umask, file_mode, dir_mode); the
 * write bits only where writes can succeed (rw). */
static void owner_attr(const zf_fs *fs, bool is_dir, bool rw, struct stat *st)
{
    mode_t mode = is_dir ? fs->dir_mode : fs->file_mode;
    st->st_mode = (is_dir ? S_IFDIR : S_IFREG) | (rw ? mode : mode & ~(mode_t)0222);
    st->st_uid = fs->uid;
    st->st_gid = fs->gid;
}

static void node_attr(const zf_fs *fs, zf_node *n, struct stat *st, bool rw)
{
    memset(st, 0, sizeof *st);
    st->st_ino = n->id;
    /* files derived from an array, text files of variable-length elements, optional arrays:
     * read-only */
    owner_attr(fs, n->is_dir, rw && !n->derived && !zf_array_meta_read_only(&n->meta.array), st);
    st->st_nlink = n->is_dir ? 2 : 1;
    uint64_t size;
    zf_hierarchy_node_stat(n, &size, &st->st_mtim); /* (changes may be replacing them) */
    st->st_size = n->is_dir ? 0 : (off_t)size;
    st->st_blksize = 4096;
    st->st_blocks = (st->st_size + 511) / 512;
    st->st_ctim = st->st_atim = st->st_mtim;
}

/* Reply with an error, logging failures that are not plain absence. */
static void reply_status(fuse_req_t req, zf_status st, const zf_err *err, const char *what)
{
    if (st != ZF_ERR_NOT_FOUND)
        replies_failed++;
    if (st != ZF_ERR_NOT_FOUND)
        zf_log(st == ZF_ERR_UNSUPPORTED ? ZF_LOG_WARN : ZF_LOG_ERROR, "%s: %s", what,
               err && err->msg[0] ? err->msg : zf_status_str(st));
    reply_err(req, zf_errno(st));
}

/* Reply to a failed change (write, truncate, mkdir, setxattr, ...): an invalid request is
 * EINVAL (not EIO, as for invalid stored data); what the caller asked for wrongly (exists, not
 * empty, not permitted) is logged at info level only. */
static void reply_change(fuse_req_t req, zf_status st, const zf_err *err, const char *what)
{
    switch (st) {
    case ZF_ERR_INVALID:
        replies_failed++;
        zf_log_error("%s: %s", what, err && err->msg[0] ? err->msg : "invalid");
        reply_err(req, EINVAL);
        return;
    case ZF_ERR_EXISTS:
    case ZF_ERR_NOT_EMPTY:
    case ZF_ERR_PERMISSION:
    case ZF_ERR_NOT_DIR:
    case ZF_ERR_IS_DIR:
    case ZF_ERR_READONLY:
        replies_failed++;
        zf_log_info("%s: %s", what, err && err->msg[0] ? err->msg : zf_status_str(st));
        reply_err(req, zf_errno(st));
        return;
    default: reply_status(req, st, err, what);
    }
}

static zf_node *node_of(fuse_req_t req, fuse_ino_t ino)
{
    zf_node *n = zf_hierarchy_node(H(req), ino);
    if (!n)
        reply_err(req, ESTALE);
    return n;
}

char *zf_fuse_stats_json(zf_fs *fs) { return zf_hierarchy_stats_json(fs->h, replies_failed); }

char *zf_fuse_metrics_text(zf_fs *fs)
{
    zf_sbuf b = {0};
    zf_hierarchy_metrics(fs->h, &b, fs->metric_labels ? fs->metric_labels : "");
    const char *l = fs->metric_labels ? fs->metric_labels : "";
    zf_sbuf_printf(&b, "# HELP zarrfs_replies_failed_total File-system requests answered with "
                   "an error other than ENOENT.\n# TYPE zarrfs_replies_failed_total counter\n"
                   "zarrfs_replies_failed_total{%s} %llu\n", l,
                   (unsigned long long)replies_failed);
    zf_metrics_format(&b, l);
    zf_sbuf_printf(&b, "# EOF\n");
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

/* The text of a special file (malloc'd; NULL when out of memory). */
static char *special_text(zf_fs *fs, fuse_ino_t ino)
{
    return ino == STATS_INO ? zf_fuse_stats_json(fs) : zf_fuse_metrics_text(fs);
}

static void stats_attr(zf_fs *fs, fuse_ino_t ino, struct stat *st)
{
    char *json = special_text(fs, ino);
    memset(st, 0, sizeof *st);
    st->st_ino = ino;
    owner_attr(fs, false, false, st);
    st->st_nlink = 1;
    st->st_size = json ? (off_t)strlen(json) : 0;
    st->st_blksize = 4096;
    clock_gettime(CLOCK_REALTIME, &st->st_mtim);
    st->st_ctim = st->st_atim = st->st_mtim;
    free(json);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
    zf_fs *fs = userdata;
    /* Ask for requests up to 1 MiB: max_pages follows max_write; readahead is raised to match
     * (NOTES.md: libfuse 3.14 on this kernel). */
    conn->max_write = MAX_REQUEST;
    if (conn->max_readahead < MAX_REQUEST)
        conn->max_readahead = MAX_REQUEST;
    conn->want &= ~(unsigned)FUSE_CAP_ATOMIC_O_TRUNC;
    /* Writes reach the daemon as they happen (their errors reach the writer), and attribute
     * notifications never wait for a writeback (notify_size_changed). */
    conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
    if (!fs->direct_io)
        return;
    /* One large read(2) or write(2) of a direct_io file becomes several requests in flight at
     * once (libfuse asks for it by default where the kernel offers it: made sure here). */
    if (conn->capable & FUSE_CAP_ASYNC_DIO)
        conn->want |= FUSE_CAP_ASYNC_DIO;
#ifdef FUSE_CAP_DIRECT_IO_ALLOW_MMAP
    if (conn->capable & FUSE_CAP_DIRECT_IO_ALLOW_MMAP) {
        conn->want |= FUSE_CAP_DIRECT_IO_ALLOW_MMAP;
        return;
    }
#endif
    zf_log_warn("-o direct_io: shared mappings (mmap MAP_SHARED) of array files are refused "
                "with ENODEV " ZF_DIRECT_IO_MMAP_NOTE "; private ones (MAP_PRIVATE, "
                "numpy.memmap mode \"c\") work");
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    zf_node *dir = node_of(req, parent), *n;
    if (!dir)
        return;
    if (!dir->is_dir) {
        reply_err(req, ENOTDIR);
        return;
    }
    zf_err err = {""};
    if (parent == FUSE_ROOT_ID &&
        (strcmp(name, STATS_NAME) == 0 || strcmp(name, METRICS_NAME) == 0)) {
        static atomic_bool warned;
        if (zf_hierarchy_child(H(req), dir, name, &n, NULL) == ZF_OK && !atomic_exchange(&warned, true))
            zf_log_warn("/%s: a node of this name is hidden by zarrfs's statistics file", name);
        fuse_ino_t ino = strcmp(name, STATS_NAME) == 0 ? STATS_INO : METRICS_INO;
        struct fuse_entry_param e = {.ino = ino, .attr_timeout = 0, .entry_timeout = ATTR_TIMEOUT};
        stats_attr(FS(req), ino, &e.attr);
        fuse_reply_entry(req, &e);
        return;
    }
    zf_status st = zf_hierarchy_child(H(req), dir, name, &n, &err);
    double ttl = zf_hierarchy_metadata_ttl(H(req));
    /* Absent names are remembered briefly too, except in a writable directory, where a change of
     * metadata makes names appear (the sidecars of a new array) without the kernel being told. */
    if (st == ZF_ERR_NOT_FOUND && ttl > 0 && !writable(H(req), dir)) {
        struct fuse_entry_param neg = {.ino = 0, .entry_timeout = ttl < 10 ? ttl : 10};
        fuse_reply_entry(req, &neg);
        return;
    }
    if (st != ZF_OK) {
        char what[600];
        snprintf(what, sizeof what, "%s%s%s", dir->path, dir->path[0] ? "/" : "", name);
        reply_status(req, st, &err, what);
        return;
    }
    struct fuse_entry_param e = {.ino = n->id, .attr_timeout = attr_timeout(H(req), n),
                                 .entry_timeout = attr_timeout(H(req), n)};
    node_attr(FS(req), n, &e.attr, writable(H(req), n));
    fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)fi;
    if (IS_SPECIAL(ino)) {
        struct stat st;
        stats_attr(FS(req), ino, &st);
        fuse_reply_attr(req, &st, 0);
        return;
    }
    zf_node *n = node_of(req, ino);
    if (!n)
        return;
    struct stat st;
    node_attr(FS(req), n, &st, writable(H(req), n));
    fuse_reply_attr(req, &st, attr_timeout(H(req), n));
}

/* Open directory and statistics handles, so that op_destroy frees those whose release the kernel
 * never sent (a close racing the unmount drops it). */
typedef struct open_handle {
    struct open_handle *prev, *next;
    void (*free_fn)(struct open_handle *h);
} open_handle;
static pthread_mutex_t handles_mu = PTHREAD_MUTEX_INITIALIZER;
static open_handle handles = {&handles, &handles, NULL};

static void handle_track(open_handle *h, void (*free_fn)(open_handle *))
{
    h->free_fn = free_fn;
    pthread_mutex_lock(&handles_mu);
    h->prev = handles.prev;
    h->next = &handles;
    handles.prev->next = h;
    handles.prev = h;
    pthread_mutex_unlock(&handles_mu);
}

/* Untrack h and free it. */
static void handle_release(open_handle *h)
{
    pthread_mutex_lock(&handles_mu);
    h->prev->next = h->next;
    h->next->prev = h->prev;
    pthread_mutex_unlock(&handles_mu);
    h->free_fn(h);
}

typedef struct dir_handle {
    open_handle link; /* first: a dir_handle is its open_handle */
    char **names;
    size_t n;
    zf_node **nodes; /* each child's node, NULL when its lookup failed */
} dir_handle;

static void dir_handle_free(dir_handle *d)
{
    zf_hierarchy_names_free(d->names, d->n);
    free(d->nodes);
    free(d);
}

static void dir_handle_free_link(open_handle *h) { dir_handle_free((dir_handle *)h); }

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    zf_node *n = node_of(req, ino);
    if (!n)
        return;
    if (!n->is_dir) {
        reply_err(req, ENOTDIR);
        return;
    }
    dir_handle *d = calloc(1, sizeof *d);
    if (!d) {
        reply_err(req, ENOMEM);
        return;
    }
    zf_err err = {""};
    zf_status st = zf_hierarchy_list(H(req), n, &d->names, &d->n, &err);
    if (st != ZF_OK) {
        free(d);
        reply_status(req, st, &err, n->path[0] ? n->path : "/");
        return;
    }
    /* Each child's node, for its entry's inode number and type (and readdirplus's attributes);
     * a child whose metadata is invalid has none and is still listed (reply_entries). */
    d->nodes = calloc(d->n ? d->n : 1, sizeof *d->nodes);
    if (!d->nodes) {
        dir_handle_free(d);
        reply_err(req, ENOMEM);
        return;
    }
    for (size_t i = 0; i < d->n; i++)
        if (zf_hierarchy_child_entry(H(req), n, d->names[i], &d->nodes[i], NULL) != ZF_OK)
            d->nodes[i] = NULL;
    handle_track(&d->link, dir_handle_free_link);
    fi->fh = (uintptr_t)d;
    fi->keep_cache = 1;
    if (fuse_reply_open(req, fi) == -ENOENT) /* interrupted: no release will come */
        handle_release(&d->link);
}

/* A listing's entries from offset off, as many as fit in size bytes. Offsets: 0 ".", 1 "..",
 * 2 + i the i-th child; each entry records the offset after it and carries the child's inode
 * number and type (readdir skips d_ino 0: a child whose lookup failed gets a number no node
 * uses, counted down from 2^64 - 1). With plus (readdirplus), each
 * entry carries the attributes a lookup would give, so that the kernel need not look the
 * entries up (`ls -l`, `find`), for the children whose attributes are at hand; the others (a
 * netCDF view not made yet, a text file of unknown size, a child whose lookup failed) go
 * without and are looked up when asked for. */
static void reply_entries(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                          struct fuse_file_info *fi, bool plus)
{
    dir_handle *d = (dir_handle *)(uintptr_t)fi->fh;
    char *buf = malloc(size);
    if (!buf) {
        reply_err(req, ENOMEM);
        return;
    }
    size_t used = 0;
    for (size_t i = (size_t)off; i < d->n + 2; i++) {
        struct fuse_entry_param e = {.attr = {.st_ino = ino, .st_mode = S_IFDIR}};
        zf_node *c = i >= 2 ? d->nodes[i - 2] : NULL;
        /* (first: it brings a sidecar's header up to date) */
        bool with_attrs = plus && c && zf_hierarchy_attrs_ready(H(req), c);
        if (c)
            node_attr(FS(req), c, &e.attr, plus && writable(H(req), c));
        else if (i >= 2)
            e.attr = (struct stat){.st_ino = UINT64_MAX - (i - 2), .st_mode = S_IFREG};
        if (with_attrs) {
            e.ino = c->id;
            e.attr_timeout = e.entry_timeout = attr_timeout(H(req), c);
        }
        const char *name = i == 0 ? "." : i == 1 ? ".." : d->names[i - 2];
        size_t need = plus ? fuse_add_direntry_plus(req, buf + used, size - used, name, &e,
                                                    (off_t)(i + 1))
                           : fuse_add_direntry(req, buf + used, size - used, name, &e.attr,
                                               (off_t)(i + 1));
        if (need > size - used)
            break;
        used += need;
    }
    fuse_reply_buf(req, buf, used);
    free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
    reply_entries(req, ino, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                           struct fuse_file_info *fi)
{
    reply_entries(req, ino, size, off, fi, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    handle_release(&((dir_handle *)(uintptr_t)fi->fh)->link);
    reply_err(req, 0);
}

/* An open statistics file: the snapshot taken at open, read with direct I/O. */
typedef struct stats_handle {
    open_handle link; /* first */
    size_t len;
    char *json;
} stats_handle;

static void stats_handle_free(open_handle *h)
{
    free(((stats_handle *)h)->json);
    free(h);
}

static void open_stats(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
        reply_err(req, EROFS);
        return;
    }
    stats_handle *sh = calloc(1, sizeof *sh);
    if (!sh || !(sh->json = special_text(FS(req), ino))) {
        free(sh);
        reply_err(req, ENOMEM);
        return;
    }
    sh->len = strlen(sh->json);
    handle_track(&sh->link, stats_handle_free);
    fi->fh = (uintptr_t)sh;
    fi->direct_io = 1; /* no page cache: every read sees this open's snapshot */
    if (fuse_reply_open(req, fi) == -ENOENT)
        handle_release(&sh->link);
}

/* Tell the kernel that the size of node n changed (its metadata did: a new array's document, a
 * resize, a write past the end), and with it the size of the files derived from it (-o
 * sidecars): it drops their cached attributes, so that the next stat asks again instead of
 * showing the old size for up to the attribute timeout. Attributes only (offset -1): without a
 * writeback cache (op_init) that never blocks (fuse_lowlevel.h), so it is safe inside any
 * request handler, before its reply. An entry invalidation, which takes the parent directory's
 * lock, is not needed: negative entries are not cached on writable mounts (op_lookup). With
 * with_self false, n's own attributes are left alone (setattr replies with the new ones). */
static void notify_size_changed(fuse_req_t req, const zf_node *n, bool with_self)
{
    struct fuse_session *se = FS(req)->se;
    if (!se)
        return;
    uint64_t ids[ZF_SIDECAR_KINDS];
    size_t k = zf_hierarchy_derived_ids(H(req), n, ids, ZF_SIDECAR_KINDS);
    /* -ENOENT: the kernel does not know the inode (nothing cached to drop) */
    if (with_self)
        fuse_lowlevel_notify_inval_inode(se, n->id, -1, 0);
    for (size_t i = 0; i < k; i++)
        fuse_lowlevel_notify_inval_inode(se, ids[i], -1, 0);
}

/* Tell the kernel that the headers of the files derived from node n may have changed (its
 * attributes did, which feed their spacing and labels: zf_hierarchy_dependent_ids): their
 * attributes are dropped now (safe inside any handler, as above), so that the next stat asks
 * again for the remade header's size; their cached pages after the reply (the notifier). */
static void notify_headers_changed(fuse_req_t req, const zf_node *n)
{
    struct fuse_session *se = FS(req)->se;
    uint64_t *ids;
    size_t k;
    if (!se || zf_hierarchy_dependent_ids(H(req), n, &ids, &k) != ZF_OK)
        return;
    for (size_t i = 0; i < k; i++) {
        fuse_lowlevel_notify_inval_inode(se, ids[i], -1, 0);
        zf_notifier_pages(FS(req)->notifier, ids[i]);
    }
    free(ids);
}

void zf_fuse_gone(void *ctx, uint64_t dir_id, const char *name, uint64_t id, bool deleted)
{
    zf_fs *fs = ctx;
    if (!fs->se)
        return;
    /* Attributes only: the next stat of the node asks (and a derived node whose array is
     * gone answers ESTALE, on which the kernel looks its name up again: ENOENT). */
    if (id)
        fuse_lowlevel_notify_inval_inode(fs->se, id, -1, 0);
    zf_notifier_entry(fs->notifier, dir_id, name, deleted ? id : 0);
}

/* Report a failed write-side operation (logged, counted) or reply 0. */
static void reply_done(fuse_req_t req, zf_status st, const zf_err *err, const char *what)
{
    if (st == ZF_OK)
        reply_err(req, 0);
    else
        reply_change(req, st, err, what);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    if (IS_SPECIAL(ino)) {
        handle_release(&((stats_handle *)(uintptr_t)fi->fh)->link);
    } else if (FS(req)->rw) { /* store what was written (flags are not known here) */
        zf_node *n = (zf_node *)(uintptr_t)fi->fh;
        zf_err err = {""};
        if (zf_hierarchy_flush(H(req), n, &err) != ZF_OK)
            zf_log_error("%s: storing written chunks: %s", n->path, err.msg);
    }
    reply_err(req, 0);
}

/* flush (every close) and fsync: store the file's dirty chunks. libfuse does not pass the open
 * flags to flush, so a close of a file only read does it too (a quick no-op). */
static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    if (IS_SPECIAL(ino) || !FS(req)->rw) {
        reply_err(req, 0);
        return;
    }
    zf_node *n = (zf_node *)(uintptr_t)fi->fh;
    zf_err err = {""};
    reply_done(req, zf_hierarchy_flush(H(req), n, &err), &err, n->path);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    (void)datasync;
    op_flush(req, ino, fi);
}

/* EROFS for any change to a read-only mount (and to hierarchies that cannot be written). */
static bool refuse_readonly(fuse_req_t req)
{
    zf_err err = {""};
    if (!FS(req)->rw) {
        reply_err(req, EROFS);
        return true;
    }
    zf_status st = zf_hierarchy_can_write(H(req), &err);
    if (st != ZF_OK) {
        zf_log_debug("refused: %s", err.msg);
        reply_err(req, zf_errno(st));
        return true;
    }
    return false;
}

/* EROFS for a change to node n (NULL: none) of a repository's versions (zf_versions), whatever
 * the mount. */
static bool refuse_version(fuse_req_t req, const zf_node *n)
{
    if (!n || !zf_hierarchy_node_in_versions(n))
        return false;
    zf_log_debug("refused: %s: the versions of a repository are read-only",
                 n->path[0] ? n->path : "/");
    reply_err(req, EROFS);
    return true;
}

/* An array zarrfs cannot decode (an unknown codec, chunk grid, ...) whose size is known: it is
 * shown with that size, opens read-only, and every read of its bytes fails with EIO (DESIGN.md
 * "Errors users see": never a short or empty file); its user.zarr.error says why. Arrays of
 * variable-length data types, whose size is unknown, and arrays whose codec needs a library this
 * system lacks (meta.refuse_open: pcodec) fail to open with EOPNOTSUPP. */
static bool undecodable(const zf_node *n)
{
    uint64_t size;
    return !n->is_dir && !n->pending && n->meta.unsupported != ZF_OK && !n->meta.refuse_open &&
           zf_array_meta_flat_size(&n->meta.array, &size);
}

/* EIO for a read of an undecodable array, logged once per node. */
static void reply_undecodable(fuse_req_t req, zf_node *n, uint64_t off, size_t size)
{
    if (off >= n->size || size == 0) {
        fuse_reply_buf(req, NULL, 0);
        return;
    }
    replies_failed++;
    if (!atomic_exchange(&n->read_failed_logged, true))
        zf_log_error("%s: cannot be read: %s (every read of it fails with EIO)", n->path,
                     n->meta.unsupported_why ? n->meta.unsupported_why : "unsupported");
    reply_err(req, EIO);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    if (IS_SPECIAL(ino)) {
        open_stats(req, ino, fi);
        return;
    }
    zf_node *n = node_of(req, ino);
    if (!n)
        return;
    if (n->is_dir) {
        reply_err(req, EISDIR);
        return;
    }
    bool write = (fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC);
    if (write && refuse_version(req, n))
        return;
    if (n->derived) { /* generated by the hierarchy: read-only, read with read_derived */
        if (write) {
            reply_err(req, FS(req)->rw ? EACCES : EROFS);
            return;
        }
        fi->fh = (uintptr_t)n;
        fi->keep_cache = !FS(req)->rw;
        fuse_reply_open(req, fi);
        return;
    }
    if (write && !n->pending && zf_array_meta_read_only(&n->meta.array)) {
        reply_err(req, FS(req)->rw ? EACCES : EROFS); /* text; optional arrays */
        return;
    }
    if (write && refuse_readonly(req))
        return;
    zf_err err = {""};
    zf_array *a;
    zf_status st = n->pending ? ZF_OK : zf_hierarchy_array(H(req), n, &a, &err);
    if (st == ZF_ERR_UNSUPPORTED && !write && undecodable(n)) {
        st = ZF_OK; /* it opens with its real size; its reads fail (op_read) */
    }
    if (st == ZF_ERR_UNSUPPORTED && !n->pending && n->meta.refuse_open) {
        replies_failed++; /* a codec without a library here: EOPNOTSUPP, logged once */
        if (!atomic_exchange(&n->read_failed_logged, true))
            zf_log_warn("%s: cannot be opened: %s (every open of it fails with EOPNOTSUPP)",
                        n->path, err.msg);
        reply_err(req, EOPNOTSUPP);
        return;
    }
    if (st != ZF_OK) {
        reply_status(req, st, &err, n->path);
        return;
    }
    if (!n->pending && write && (fi->flags & O_TRUNC) &&
        (st = zf_hierarchy_resize(H(req), n, 0, &err)) != ZF_OK) {
        reply_change(req, st, &err, n->path);
        return;
    }
    fi->fh = (uintptr_t)n;
    /* Read-only, the data never changes: keep the page cache across opens. With -o direct_io
     * reads and writes pass the page cache by (kernel readahead too: the array layer's own
     * readahead keeps a sequential reader fed). */
    fi->keep_cache = !FS(req)->rw;
    fi->direct_io = FS(req)->direct_io;
    /* A file whose size is not known yet (text of variable-length elements): stat says 0, so
     * reads must reach the daemon whatever the kernel thinks the size is, as for /proc files. */
    if (!n->pending && zf_hierarchy_size_unknown(n)) {
        fi->direct_io = 1;
        fi->keep_cache = 0;
    }
    fuse_reply_open(req, fi);
}

static void reply_read_error(fuse_req_t req, const zf_node *n, zf_status st, const zf_err *err,
                             size_t size, uint64_t off)
{
    char what[600];
    snprintf(what, sizeof what, "%s: read of %zu bytes at %llu", n->path, size,
             (unsigned long long)off);
    reply_status(req, st, err, what);
}

/* Answer a read straight from the cached chunks (fuse_reply_iov over pinned entries: no copy
 * into a bounce buffer). False when the read cannot be described that way (see
 * zf_array_read_view; it declines arrays that may be written, which on a writable mount are
 * writable from their opening): the caller copies instead. */
static bool reply_view(fuse_req_t req, zf_node *n, zf_array *a, uint64_t off, size_t size)
{
    zf_array_view v; /* ~18 KiB: on the worker's stack, no allocation per read */
    zf_err err = {""};
    size_t got;
    zf_status st = zf_array_read_view(a, off, size, &v, &got, &err);
    if (st == ZF_ERR_UNSUPPORTED)
        return false;
    if (st != ZF_OK)
        reply_read_error(req, n, st, &err, size, off);
    else if (v.npieces == 0)
        fuse_reply_buf(req, NULL, 0);
    else if (fuse_reply_iov(req, v.pieces, (int)v.npieces) == 0)
        zf_metrics_served(got);
    zf_array_view_release(a, &v);
    return true;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    if (off < 0) {
        reply_err(req, EINVAL);
        return;
    }
    if (IS_SPECIAL(ino)) {
        /* Reply from a copy: once the reader has its bytes it may close the file, and the
         * release (on another thread) frees the snapshot while this thread may still be in
         * writev's return path (where ASan checks the buffer it sent). */
        stats_handle *sh = (stats_handle *)(uintptr_t)fi->fh;
        size_t o = (uint64_t)off < sh->len ? (size_t)off : sh->len;
        size_t n = size < sh->len - o ? size : sh->len - o;
        char *copy = malloc(n ? n : 1);
        if (!copy) {
            reply_err(req, ENOMEM);
            return;
        }
        memcpy(copy, sh->json + o, n);
        fuse_reply_buf(req, copy, n);
        free(copy);
        return;
    }
    zf_node *n = (zf_node *)(uintptr_t)fi->fh;
    if (n->pending) {
        fuse_reply_buf(req, NULL, 0);
        return;
    }
    zf_err err = {""};
    zf_array *a = NULL;
    zf_status st = n->derived ? ZF_OK : zf_hierarchy_array(H(req), n, &a, &err);
    if (st == ZF_ERR_UNSUPPORTED && undecodable(n)) {
        reply_undecodable(req, n, (uint64_t)off, size);
        return;
    }
    if (st == ZF_OK && a && reply_view(req, n, a, (uint64_t)off, size))
        return;
    /* a view's bytes after its header (.npy, .tif): as the array's, without a copy */
    zf_array *base;
    uint64_t boff;
    if (st == ZF_OK && n->derived &&
        zf_hierarchy_derived_data(H(req), n, (uint64_t)off, &base, &boff, NULL) == ZF_OK &&
        reply_view(req, n, base, boff, size))
        return;
    void *buf = st == ZF_OK ? malloc(size ? size : 1) : NULL;
    if (st == ZF_OK && !buf)
        st = ZF_ERR_NOMEM;
    if (buf) /* the reply's buffer is memory the load brings: in the account (zarrfs/mem.h) */
        zf_mem_charge(size);
    size_t got = 0;
    if (st == ZF_OK)
        st = n->derived ? zf_hierarchy_read_derived(H(req), n, (uint64_t)off, buf, size, &got,
                                                    &err)
                        : zf_array_read(a, (uint64_t)off, buf, size, &got, &err);
    /* A text file read to its end: its size is known now, so the kernel's cached size (0)
     * goes (attributes only: safe inside the handler, before the reply). */
    uint64_t tsize;
    if (st == ZF_OK && a && got < size && FS(req)->se && !atomic_load(&n->size_told) &&
        zf_array_text_size(a, &tsize) && !atomic_exchange(&n->size_told, true))
        fuse_lowlevel_notify_inval_inode(FS(req)->se, n->id, -1, 0);
    if (st != ZF_OK)
        reply_read_error(req, n, st, &err, size, (uint64_t)off);
    else if (fuse_reply_buf(req, buf, got) == 0)
        zf_metrics_served(got);
    if (buf)
        zf_mem_uncharge(size);
    free(buf);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                     struct fuse_file_info *fi)
{
    (void)ino;
    if (off < 0) {
        reply_err(req, EINVAL);
        return;
    }
    zf_node *n = (zf_node *)(uintptr_t)fi->fh;
    zf_err err = {""};
    uint64_t old_size = n->size;
    zf_status st = zf_hierarchy_write(H(req), n, (uint64_t)off, buf, size, &err);
    if (n->size != old_size) /* grown to the rows the write reaches (even when it then failed) */
        notify_size_changed(req, n, true);
    if (st != ZF_OK) {
        char what[600];
        snprintf(what, sizeof what, "%s: write of %zu bytes at %lld", n->path, size,
                 (long long)off);
        reply_change(req, st, &err, what);
        return;
    }
    fuse_reply_write(req, size);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                       struct fuse_file_info *fi)
{
    (void)fi;
    zf_node *n = IS_SPECIAL(ino) ? NULL : node_of(req, ino);
    if (!n) {
        if (IS_SPECIAL(ino))
            reply_err(req, EROFS);
        return;
    }
    if (refuse_readonly(req) || refuse_version(req, n))
        return;
    if ((to_set & FUSE_SET_ATTR_SIZE) && !n->pending && !n->is_dir &&
        zf_array_meta_read_only(&n->meta.array)) {
        zf_log_info("%s: truncate: a read-only array (text or optional elements)", n->path);
        reply_err(req, EACCES); /* as open for writing */
        return;
    }
    if (to_set & FUSE_SET_ATTR_SIZE) {
        zf_err err = {""};
        zf_status st = n->is_dir ? ZF_ERR_IS_DIR
                       : n->pending && attr->st_size == 0
                           ? ZF_OK
                           : zf_hierarchy_resize(H(req), n, (uint64_t)attr->st_size, &err);
        if (st != ZF_OK) {
            char what[600];
            snprintf(what, sizeof what, "%s: truncate to %lld bytes", n->path,
                     (long long)attr->st_size);
            reply_change(req, st, &err, what);
            return;
        }
        notify_size_changed(req, n, false);
    }
    /* Modes, owners and times are not kept (the store has none): accepted and left as they
     * are, as on file systems without them, so that cp, touch and tar work. */
    struct stat st;
    node_attr(FS(req), n, &st, true);
    fuse_reply_attr(req, &st, attr_timeout(H(req), n));
}

static bool parent_dir(fuse_req_t req, fuse_ino_t parent, zf_node **out)
{
    zf_node *dir = node_of(req, parent);
    if (!dir)
        return false;
    if (!dir->is_dir) {
        reply_err(req, ENOTDIR);
        return false;
    }
    *out = dir;
    return true;
}

static void reply_new_entry(fuse_req_t req, zf_node *n, struct fuse_file_info *fi)
{
    struct fuse_entry_param e = {.ino = n->id, .attr_timeout = attr_timeout(H(req), n),
                                 .entry_timeout = attr_timeout(H(req), n)};
    node_attr(FS(req), n, &e.attr, true);
    if (fi) {
        fi->fh = (uintptr_t)n;
        fuse_reply_create(req, &e, fi);
    } else {
        fuse_reply_entry(req, &e);
    }
}

/* A new regular file (pending until its metadata is set), opened when fi is given. */
static void create_file(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                        struct fuse_file_info *fi)
{
    zf_node *dir, *n;
    if (refuse_readonly(req) || !parent_dir(req, parent, &dir) || refuse_version(req, dir))
        return;
    if (!S_ISREG(mode) && (mode & S_IFMT)) { /* devices, fifos, sockets: not Zarr nodes */
        reply_err(req, EPERM);
        return;
    }
    zf_err err = {""};
    zf_status st = zf_hierarchy_create(H(req), dir, name, &n, &err);
    if (st != ZF_OK)
        reply_change(req, st, &err, name);
    else
        reply_new_entry(req, n, fi);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                      struct fuse_file_info *fi)
{
    create_file(req, parent, name, mode, fi);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                     dev_t rdev)
{
    (void)rdev;
    create_file(req, parent, name, mode, NULL);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
    (void)mode;
    zf_node *dir, *n;
    if (refuse_readonly(req) || !parent_dir(req, parent, &dir) || refuse_version(req, dir))
        return;
    zf_err err = {""};
    zf_status st = zf_hierarchy_mkdir(H(req), dir, name, &n, &err);
    if (st != ZF_OK)
        reply_change(req, st, &err, name);
    else
        reply_new_entry(req, n, NULL);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    zf_node *dir;
    if (refuse_readonly(req) || !parent_dir(req, parent, &dir) || refuse_version(req, dir))
        return;
    zf_err err = {""};
    reply_done(req, zf_hierarchy_rmdir(H(req), dir, name, &err), &err, name);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    zf_node *dir;
    if (refuse_readonly(req) || !parent_dir(req, parent, &dir) || refuse_version(req, dir))
        return;
    zf_err err = {""};
    zf_node *n;
    zf_status st = zf_hierarchy_child(H(req), dir, name, &n, &err);
    if (st == ZF_OK && !n->pending && !n->is_dir && !FS(req)->allow_delete) {
        zf_log_info("%s: deleting arrays needs -o allow_delete", n->path);
        reply_err(req, EPERM);
        return;
    }
    if (st == ZF_OK || st == ZF_ERR_NOT_FOUND)
        st = zf_hierarchy_unlink(H(req), dir, name, &err);
    reply_done(req, st, &err, name);
}

/* ----- extended attributes (DESIGN.md, "The file-system view") ----- */

static const char *const XATTRS[] = {
    "user.zarr.format",    "user.zarr.metadata", "user.zarr.attributes",     "user.zarr.shape",
    "user.zarr.chunks",    "user.zarr.dtype",    "user.zarr.fill_value",     "user.zarr.dimension_names",
    "user.zarr.error",     "user.zarr.text",
};
#define N_XATTRS (sizeof XATTRS / sizeof *XATTRS)

static char *dims_json(const uint64_t *dims, unsigned n)
{
    size_t cap = 3 + (size_t)n * 22, o = 0; /* "[", n numbers with ", ", "]", NUL */
    char *s = malloc(cap);
    if (!s)
        return NULL;
    s[o++] = '[';
    for (unsigned d = 0; d < n; d++)
        o += (size_t)snprintf(s + o, cap - o, "%s%llu", d ? ", " : "", (unsigned long long)dims[d]);
    snprintf(s + o, cap - o, "]");
    return s;
}

/* Value of xattr i for node n (malloc'd), or NULL when the node has none. */
static char *xattr_value(const zf_node *n, size_t i)
{
    const zf_node_meta *m = &n->meta;
    const zf_array_meta *a = &m->array;
    bool array = !n->is_dir;
    if (n->synthetic) /* the versions tree's directories and files: no Zarr node */
        return NULL;
    if (n->virtual_root && i != 0)
        return NULL;
    switch (i) {
    case 0: return strdup(zf_format_name(m->format));
    case 1: return m->metadata_json ? strdup(m->metadata_json) : NULL;
    case 2: return m->attributes_json ? strdup(m->attributes_json) : NULL;
    case 3: return array && a->dtype_typestr ? dims_json(a->shape, a->ndim) : NULL;
    case 4: /* a rectilinear grid: its "chunk_shapes" as stored (docs/formats.md) */
        if (!array || !a->dtype_typestr)
            return NULL;
        return a->chunk_shapes_json ? strdup(a->chunk_shapes_json) : dims_json(a->chunks, a->ndim);
    case 5: return array && a->dtype_typestr ? strdup(a->dtype_typestr) : NULL;
    case 6: return array && a->fill_value_json ? strdup(a->fill_value_json) : NULL;
    case 7:
        if (!array || !a->dtype_typestr)
            return NULL;
        return strdup(a->dimension_names_json ? a->dimension_names_json : "null");
    case 8: /* why the array cannot be read (its reads fail) */
        return m->unsupported != ZF_OK && m->unsupported_why ? strdup(m->unsupported_why) : NULL;
    case 9: { /* variable-length elements: the text convention (docs/formats.md) */
        if (!array || !zf_array_meta_is_text(a))
            return NULL;
        char v[200];
        const char *codec = zf_chain_text_codec(&a->chain);
        snprintf(v, sizeof v, "lines; escaping: postgresql-copy-text%s; codec: %s",
                 strstr(codec, "vlen-bytes") ? ", \\xHH for bytes not printable UTF-8" : "",
                 codec);
        return strdup(v);
    }
    }
    return NULL;
}

/* Linux refuses extended attribute values over 64 KiB (XATTR_SIZE_MAX). A larger document
 * (user.zarr.metadata, user.zarr.attributes) is offered in pieces instead: NAME.0, NAME.1, ...
 * of XATTR_PIECE bytes each (the last shorter), whose concatenation is the document; NAME itself
 * then fails with E2BIG. */
#define XATTR_PIECE 65536u

static size_t n_pieces(size_t len) { return len <= XATTR_PIECE ? 0 : (len + XATTR_PIECE - 1) / XATTR_PIECE; }

static void reply_value(fuse_req_t req, const char *v, size_t len, size_t size)
{
    if (size == 0)
        fuse_reply_xattr(req, len);
    else if (size < len)
        reply_err(req, ERANGE);
    else
        fuse_reply_buf(req, v, len);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
    if (IS_SPECIAL(ino)) {
        reply_err(req, ENODATA);
        return;
    }
    zf_node *n = node_of(req, ino);
    if (!n)
        return;
    for (size_t i = 0; i < N_XATTRS; i++) {
        size_t nl = strlen(XATTRS[i]);
        if (strncmp(name, XATTRS[i], nl) != 0 || (name[nl] && name[nl] != '.'))
            continue;
        char *v = xattr_value(n, i);
        if (!v)
            break;
        size_t len = strlen(v), pieces = n_pieces(len);
        if (!name[nl] && pieces) {
            zf_log_warn("%s: %s is %zu bytes, more than an extended attribute can hold; read it "
                        "as %s.0 ... %s.%zu", n->path[0] ? n->path : "/", XATTRS[i], len,
                        XATTRS[i], XATTRS[i], pieces - 1);
            free(v);
            reply_err(req, E2BIG);
            return;
        }
        if (!name[nl]) {
            reply_value(req, v, len, size);
            free(v);
            return;
        }
        char *end;
        errno = 0;
        unsigned long long k = strtoull(name + nl + 1, &end, 10);
        if (errno || *end || end == name + nl + 1 || k >= pieces ||
            (name[nl + 1] == '0' && end - (name + nl + 1) > 1)) {
            free(v);
            break;
        }
        size_t off = (size_t)k * XATTR_PIECE;
        reply_value(req, v + off, len - off < XATTR_PIECE ? len - off : XATTR_PIECE, size);
        free(v);
        return;
    }
    reply_err(req, ENODATA);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
    if (IS_SPECIAL(ino)) {
        fuse_reply_xattr(req, 0);
        return;
    }
    zf_node *n = node_of(req, ino);
    if (!n)
        return;
    size_t len = 0, cap = 512;
    char *buf = malloc(cap);
    for (size_t i = 0; buf && i < N_XATTRS; i++) {
        char *v = xattr_value(n, i);
        if (!v)
            continue;
        size_t pieces = n_pieces(strlen(v));
        free(v);
        for (size_t k = 0; buf && k < (pieces ? pieces : 1); k++) {
            if (cap - len < 64) {
                char *nb = realloc(buf, cap *= 2);
                if (!nb)
                    free(buf);
                buf = nb;
                if (!buf)
                    break;
            }
            int w = pieces ? snprintf(buf + len, cap - len, "%s.%zu", XATTRS[i], k)
                           : snprintf(buf + len, cap - len, "%s", XATTRS[i]);
            len += (size_t)w + 1; /* with the NUL */
        }
    }
    if (!buf) {
        reply_err(req, ENOMEM);
        return;
    }
    reply_value(req, buf, len, size);
    free(buf);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
                        size_t size, int flags)
{
    (void)flags;
    if (IS_SPECIAL(ino)) {
        reply_err(req, EROFS);
        return;
    }
    zf_node *n = node_of(req, ino);
    if (!n || refuse_readonly(req) || refuse_version(req, n))
        return;
    zf_err err = {""};
    zf_status st;
    if (strcmp(name, "user.zarr.attributes") == 0) {
        st = zf_hierarchy_set_attributes(H(req), n, value, size, &err);
        if (st == ZF_OK)
            notify_headers_changed(req, n);
    } else if (strcmp(name, "user.zarr.metadata") == 0) {
        st = zf_hierarchy_set_metadata(H(req), n, value, size, &err);
        if (st == ZF_OK) /* created with size 0, which the kernel still has */
            notify_size_changed(req, n, true);
    } else {
        st = zf_fail(&err, ZF_ERR_UNSUPPORTED, "only user.zarr.attributes and "
                     "user.zarr.metadata can be set");
    }
    char what[600];
    snprintf(what, sizeof what, "%s: %s", n->path[0] ? n->path : "/", name);
    reply_done(req, st, &err, what);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                      const char *newname, unsigned int flags)
{
    (void)newname, (void)flags;
    if (refuse_readonly(req) || refuse_version(req, zf_hierarchy_node(H(req), parent)) ||
        refuse_version(req, zf_hierarchy_node(H(req), newparent)))
        return;
    zf_log_info("%s: renaming Zarr nodes is not supported", name);
    reply_err(req, EPERM);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
    (void)name;
    if (!refuse_readonly(req) && !refuse_version(req, zf_hierarchy_node(H(req), ino)))
        reply_err(req, EPERM);
}

static void op_destroy(void *userdata)
{
    zf_fs *fs = userdata;
    zf_err err = {""};
    if (zf_hierarchy_flush(fs->h, NULL, &err) != ZF_OK)
        zf_log_error("unmounting: storing written chunks: %s", err.msg);
    while (handles.next != &handles) /* opened, never released */
        handle_release(handles.next);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
    (void)ino;
    struct statvfs sv = {.f_bsize = 4096, .f_frsize = 4096, .f_namemax = 255};
    fuse_reply_statfs(req, &sv);
}

const struct fuse_lowlevel_ops zf_fuse_ops = {
    .init = op_init,
    .lookup = op_lookup,
    .getattr = op_getattr,
    .opendir = op_opendir,
    .readdir = op_readdir,
    .releasedir = op_releasedir,
    .open = op_open,
    .read = op_read,
    .release = op_release,
    .write = op_write,
    .flush = op_flush,
    .fsync = op_fsync,
    .setattr = op_setattr,
    .create = op_create,
    .mknod = op_mknod,
    .mkdir = op_mkdir,
    .rmdir = op_rmdir,
    .unlink = op_unlink,
    .removexattr = op_removexattr,
    .rename = op_rename,
    .destroy = op_destroy,
    .readdirplus = op_readdirplus,
    .getxattr = op_getxattr,
    .listxattr = op_listxattr,
    .setxattr = op_setxattr,
    .statfs = op_statfs,
};
