/* store_file.c — the local file-system store (Zarr v3 "File system store", v2 DirectoryStore).
 *
 * Keys are file paths below the root directory. Every open goes through openat2(2) with
 * RESOLVE_BENEATH relative to a descriptor of the root, so that neither ".." nor a symbolic
 * link (absolute or relative) can reach a file outside the store; an attempt is ZF_ERR_IO.
 *
 * Writes are confined the same way: the directory of a key is opened (or made, one level at a
 * time, with mkdirat in a directory opened beneath the root), and everything else happens
 * relative to that descriptor with single path segments that follow no symbolic link: the
 * value goes to ".NAME.zarrfs-XXXXXX" (O_CREAT | O_EXCL), is fsync'ed and renamed over NAME,
 * and the directory is fsync'ed. Such temporary names are no keys: listings skip them (a killed
 * daemon may leave some behind), reads do not find them and writes refuse them. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "zarrfs/mem.h"
#include "zarrfs/store.h"

#include "store_impl.h"

typedef struct file_store {
    zf_store base;
    int root_fd;
} file_store;

static int open_beneath(int root_fd, const char *key, int flags)
{
    struct open_how how = {
        .flags = (uint64_t)(flags | O_CLOEXEC),
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
    };
    long fd;
    do {
        fd = syscall(SYS_openat2, root_fd, key, &how, sizeof how);
    } while (fd < 0 && errno == EINTR);
    return (int)fd;
}

/* ".NAME.zarrfs-XXXXXX" (the shell pattern ".*.zarrfs-??????"), n bytes of name. */
#define TMP_TAG ".zarrfs-"
#define TMP_TAG_LEN (sizeof TMP_TAG - 1)
#define TMP_RAND_LEN 6
static bool is_temp_name(const char *name, size_t n)
{
    size_t tail = TMP_TAG_LEN + TMP_RAND_LEN;
    return n >= 1 + tail && name[0] == '.' &&
           memcmp(name + n - tail, TMP_TAG, TMP_TAG_LEN) == 0;
}

/* True when a segment of key is a temporary file's name. */
static bool has_temp_segment(const char *key)
{
    for (const char *seg = key;;) {
        const char *end = strchr(seg, '/');
        size_t n = end ? (size_t)(end - seg) : strlen(seg);
        if (is_temp_name(seg, n))
            return true;
        if (!end)
            return false;
        seg = end + 1;
    }
}

static zf_status errno_status(const char *key, const char *what, zf_err *err)
{
    int e = errno;
    if (e == ENOENT || e == ENOTDIR)
        return ZF_ERR_NOT_FOUND;
    if (e == EXDEV)
        return zf_fail(err, ZF_ERR_IO, "%s: refusing to leave the store directory", key);
    if (e == ENOMEM)
        return ZF_ERR_NOMEM;
    return zf_fail(err, ZF_ERR_IO, "%s: %s: %s", key, what, strerror(e));
}

/* Read up to len bytes at offset from an open descriptor into out; with suffix, the last len
 * bytes instead (offset ignored), and the file's size in *total. More than bound bytes to read
 * (by the file's size) is ZF_ERR_TOO_LARGE, nothing read; a file growing meanwhile is read up to
 * the size it had. known: the descriptor's fstat when the caller has it, else NULL. */
static zf_status read_range(int fd, const char *key, uint64_t offset, uint64_t len, bool suffix,
                            uint64_t bound, uint64_t *total, const struct stat *known,
                            zf_bytes *out, zf_err *err)
{
    struct stat sb;
    if (known)
        sb = *known;
    else if (fstat(fd, &sb) < 0)
        return errno_status(key, "stat", err);
    if (S_ISDIR(sb.st_mode))
        return ZF_ERR_NOT_FOUND; /* a directory is not a value */
    if (!S_ISREG(sb.st_mode))
        return zf_fail(err, ZF_ERR_IO, "%s: not a regular file", key);
    uint64_t size = (uint64_t)sb.st_size;
    if (suffix) {
        *total = size;
        offset = size > len ? size - len : 0;
    }
    uint64_t n = offset >= size ? 0 : size - offset;
    if (n > len)
        n = len;
    if (n > bound) /* by its size: not a byte of it read */
        return zf_store_refuse_large(err, key, bound, n, "in the file");
    uint8_t *buf = zf_alloc_chunk((size_t)n); /* may become a cached chunk as it is */
    if (!buf)
        return ZF_ERR_NOMEM;
    ssize_t got = zf_pread_full(fd, buf, (size_t)n, (off_t)offset); /* short: the file shrank */
    if (got < 0) {
        zf_free_chunk(buf, (size_t)n);
        return errno_status(key, "read", err);
    }
    out->data = buf;
    out->len = (size_t)got;
    return ZF_OK;
}

static zf_status fs_get_partial(zf_store *s, const char *key, uint64_t offset, uint64_t len,
                                zf_bytes *out, zf_err *err)
{
    file_store *fs = (file_store *)s;
    if (has_temp_segment(key))
        return ZF_ERR_NOT_FOUND;
    int fd = open_beneath(fs->root_fd, key, O_RDONLY | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return errno_status(key, "open", err);
    zf_status st = read_range(fd, key, offset, len, false, ZF_STORE_MAX_VALUE, NULL, NULL, out, err);
    close(fd);
    return st;
}

static zf_status fs_get_suffix(zf_store *s, const char *key, uint64_t len, zf_bytes *out,
                               uint64_t *total, zf_err *err)
{
    file_store *fs = (file_store *)s;
    if (has_temp_segment(key))
        return ZF_ERR_NOT_FOUND;
    int fd = open_beneath(fs->root_fd, key, O_RDONLY | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return errno_status(key, "open", err);
    zf_status st = read_range(fd, key, 0, len, true, ZF_STORE_MAX_VALUE, total, NULL, out, err);
    close(fd);
    return st;
}

static zf_status fs_get(zf_store *s, const char *key, zf_bytes *out, zf_err *err)
{
    return fs_get_partial(s, key, 0, UINT64_MAX, out, err);
}

static zf_status fs_stat(zf_store *s, const char *key, uint64_t *size, struct timespec *mtime,
                         zf_err *err)
{
    file_store *fs = (file_store *)s;
    if (has_temp_segment(key))
        return ZF_ERR_NOT_FOUND;
    int fd = open_beneath(fs->root_fd, key, O_PATH);
    if (fd < 0)
        return errno_status(key, "open", err);
    struct stat sb;
    int r = fstat(fd, &sb);
    close(fd);
    if (r < 0)
        return errno_status(key, "stat", err);
    if (!S_ISREG(sb.st_mode))
        return ZF_ERR_NOT_FOUND;
    if (size)
        *size = (uint64_t)sb.st_size;
    if (mtime)
        *mtime = sb.st_mtim;
    return ZF_OK;
}

static zf_status fs_list_dir(zf_store *s, const char *prefix, zf_store_listing *out, zf_err *err)
{
    file_store *fs = (file_store *)s;
    if (prefix[0] && has_temp_segment(prefix))
        return ZF_ERR_NOT_FOUND;
    int fd = prefix[0] ? open_beneath(fs->root_fd, prefix, O_RDONLY | O_DIRECTORY)
                       : open_beneath(fs->root_fd, ".", O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return errno_status(prefix[0] ? prefix : ".", "open", err);
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return errno_status(prefix, "opendir", err);
    }
    zf_store_listing l = {0};
    size_t cap = 0;
    zf_status st = ZF_OK;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *name = de->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
            is_temp_name(name, strlen(name)))
            continue;
        bool is_dir;
        if (de->d_type == DT_DIR) {
            is_dir = true;
        } else if (de->d_type == DT_REG) {
            is_dir = false;
        } else { /* symlink or unknown: resolve it, beneath the root only */
            struct stat sb;
            if (fstatat(dirfd(d), name, &sb, 0) < 0)
                continue;
            is_dir = S_ISDIR(sb.st_mode);
            if (!is_dir && !S_ISREG(sb.st_mode))
                continue;
        }
        if (l.n == cap) {
            cap = cap ? cap * 2 : 16;
            zf_store_entry *ne = realloc(l.entries, cap * sizeof *ne);
            if (!ne) {
                st = ZF_ERR_NOMEM;
                break;
            }
            l.entries = ne;
        }
        l.entries[l.n].name = strdup(name);
        if (!l.entries[l.n].name) {
            st = ZF_ERR_NOMEM;
            break;
        }
        l.entries[l.n++].is_prefix = is_dir;
    }
    closedir(d);
    if (st != ZF_OK) {
        zf_store_listing_free(&l);
        return st;
    }
    *out = l;
    return ZF_OK;
}

/* ---- writing ------------------------------------------------------------------------------ */

/* A failed write step: ZF_ERR_IO naming the key and the system's reason; ZF_ERR_NO_SPACE when
 * the file system is full or the quota used up (the writer sees ENOSPC, which more room cures). */
static zf_status write_errno(const char *key, const char *what, zf_err *err)
{
    int e = errno;
    if (e == EXDEV)
        return zf_fail(err, ZF_ERR_IO, "%s: refusing to leave the store directory", key);
    if (e == ENOMEM)
        return zf_fail(err, ZF_ERR_NOMEM, "%s: %s: %s", key, what, strerror(e));
    if (e == ENOSPC || e == EDQUOT)
        return zf_fail(err, ZF_ERR_NO_SPACE, "%s: %s: %s", key, what, strerror(e));
    return zf_fail(err, ZF_ERR_IO, "%s: %s: %s", key, what, strerror(e));
}

/* fsync a directory; file systems that cannot (EINVAL) are taken at their word. */
static int sync_dir(int dfd)
{
    int r;
    do {
        r = fsync(dfd);
    } while (r < 0 && errno == EINTR);
    return r < 0 && errno != EINVAL ? -1 : 0;
}

/* Open directory path dir (below the root), making the levels that are missing: each level is
 * opened beneath the root (so that a symbolic link on the way is followed only while it stays
 * inside), made with mkdirat in its parent's descriptor where it is missing, and the parent
 * fsync'ed so that the new entry lasts. dir is modified on the way and restored. -1 with errno
 * on failure. */
static int make_dirs(int root_fd, char *dir)
{
    int parent = -1; /* -1: the root */
    for (char *p = dir;;) {
        char *end = strchr(p, '/');
        if (end)
            *end = '\0';
        int fd = open_beneath(root_fd, dir, O_RDONLY | O_DIRECTORY);
        if (fd < 0 && errno == ENOENT) {
            int pfd = parent >= 0 ? parent : root_fd;
            if (mkdirat(pfd, p, 0777) == 0) {
                if (sync_dir(pfd) == 0)
                    fd = open_beneath(root_fd, dir, O_RDONLY | O_DIRECTORY);
            } else if (errno == EEXIST) { /* made meanwhile by someone else */
                fd = open_beneath(root_fd, dir, O_RDONLY | O_DIRECTORY);
            }
        }
        if (end)
            *end = '/';
        if (parent >= 0) {
            int e = errno;
            close(parent);
            errno = e;
        }
        if (fd < 0)
            return -1;
        parent = fd;
        if (!end)
            return fd;
        p = end + 1;
    }
}

/* The directory of key ("" for the root) as a descriptor opened beneath the root, and the key's
 * last segment in *name. With create, missing directories are made (make_dirs), but none above
 * or at `within` (a prefix of key; NULL or "": any): when that directory is missing too, the
 * result is ZF_ERR_NOT_FOUND, as for a missing directory without create (nothing said). */
static zf_status open_key_dir(file_store *fs, const char *key, bool create, const char *within,
                              int *dfd_out, const char **name, zf_err *err)
{
    const char *slash = strrchr(key, '/');
    *name = slash ? slash + 1 : key;
    char *dir = slash ? strndup(key, (size_t)(slash - key)) : strdup(".");
    if (!dir)
        return ZF_ERR_NOMEM;
    int dfd = open_beneath(fs->root_fd, dir, O_RDONLY | O_DIRECTORY);
    if (dfd < 0 && errno == ENOENT && create && within && within[0]) {
        int wfd = open_beneath(fs->root_fd, within, O_PATH | O_DIRECTORY);
        if (wfd >= 0)
            close(wfd);
        else if (errno == ENOENT || errno == ENOTDIR)
            create = false; /* gone: not made again, "not found" below */
        errno = ENOENT;     /* (the key's directory's) */
    }
    if (dfd < 0 && errno == ENOENT && create)
        dfd = make_dirs(fs->root_fd, dir);
    if (dfd < 0) {
        int e = errno;
        free(dir);
        errno = e;
        if (!create && (e == ENOENT || e == ENOTDIR))
            return ZF_ERR_NOT_FOUND;
        return write_errno(key, "its directory", err);
    }
    free(dir);
    *dfd_out = dfd;
    return ZF_OK;
}

/* TMP_RAND_LEN random letters and digits (mkstemp's alphabet). */
static void random_suffix(char *out)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    static _Atomic uint64_t counter;
    uint64_t v;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        v = atomic_fetch_add(&counter, 0x9E3779B97F4A7C15u) ^ (uint64_t)ts.tv_nsec ^
            ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40);
        v = (v ^ (v >> 31)) * 0xBF58476D1CE4E5B9u;
    }
    for (int i = 0; i < TMP_RAND_LEN; i++) {
        out[i] = alphabet[v % (sizeof alphabet - 1)];
        v /= sizeof alphabet - 1;
    }
    out[TMP_RAND_LEN] = '\0';
}

static bool write_all(int fd, const uint8_t *data, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, data, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return false;
        if (w == 0) { /* no progress and no reason: call it out of space */
            errno = ENOSPC;
            return false;
        }
        data += w;
        len -= (size_t)w;
    }
    return true;
}

/* The version of a local value: device, inode, ctime and size change whenever the file is
 * replaced (rename) or rewritten in place, so they tell a value from its successor. */
static void file_version(const struct stat *sb, zf_store_version *ver)
{
    memset(ver, 0, sizeof *ver);
    snprintf(ver->etag, sizeof ver->etag, "\"%jx-%jx-%jd.%09ld-%jd\"", (uintmax_t)sb->st_dev,
             (uintmax_t)sb->st_ino, (intmax_t)sb->st_ctim.tv_sec, (long)sb->st_ctim.tv_nsec,
             (intmax_t)sb->st_size);
    ver->mtime = sb->st_mtim;
    ver->size = (uint64_t)sb->st_size;
    ver->has_size = true;
}

static zf_status fs_read_versioned(zf_store *s, const char *key, zf_read_kind kind,
                                   uint64_t offset, uint64_t len, zf_bytes *out,
                                   zf_store_version *ver, zf_err *err)
{
    file_store *fs = (file_store *)s;
    if (has_temp_segment(key))
        return ZF_ERR_NOT_FOUND;
    int fd = open_beneath(fs->root_fd, key,
                          kind == ZF_READ_STAT ? O_PATH : O_RDONLY | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return errno_status(key, "open", err);
    struct stat sb;
    zf_status st = ZF_OK;
    if (fstat(fd, &sb) < 0)
        st = errno_status(key, "stat", err);
    else if (kind == ZF_READ_STAT && !S_ISREG(sb.st_mode))
        st = ZF_ERR_NOT_FOUND;
    if (st == ZF_OK)
        file_version(&sb, ver);
    if (st == ZF_OK && kind != ZF_READ_STAT) /* checks the file's type as get does */
        st = read_range(fd, key, kind == ZF_READ_ALL ? 0 : offset,
                        kind == ZF_READ_ALL ? UINT64_MAX : len, kind == ZF_READ_SUFFIX,
                        kind == ZF_READ_ALL ? zf_store_bound(len) : ZF_STORE_MAX_VALUE,
                        &ver->size, &sb, out, err);
    close(fd);
    return st;
}

/* Lock directory dfd against the renames of other zarrfs writers (flock(2): other processes,
 * and other descriptors of this one). Best effort: a file system without flock (some network
 * ones) leaves the step unguarded rather than failing the write. */
static void lock_dir(int dfd, int op)
{
    while (flock(dfd, op) < 0 && errno == EINTR) {
    }
}

/* True when key's value in dfd (name) is still the version base, or absent when base is NULL. */
static bool still_version(int dfd, const char *name, const zf_store_version *base)
{
    struct stat sb;
    if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
        return !base && errno == ENOENT;
    zf_store_version cur;
    file_version(&sb, &cur);
    return base && S_ISREG(sb.st_mode) && zf_store_version_equal(&cur, base);
}

/* set (c NULL) or set_cond. */
static zf_status fs_set_cond(zf_store *s, const char *key, const uint8_t *data, size_t len,
                             const zf_store_cond *c, zf_err *err)
{
    file_store *fs = (file_store *)s;
    if (has_temp_segment(key))
        return zf_fail(err, ZF_ERR_INVALID, "%s: a name of the form .NAME" TMP_TAG
                       "XXXXXX is kept for zarrfs's temporary files", key);
    int dfd;
    const char *name;
    zf_status st = open_key_dir(fs, key, true, c ? c->within : NULL, &dfd, &name, err);
    if (st != ZF_OK)
        return st;
    /* ".NAME.zarrfs-XXXXXX", NAME cut short where the whole would exceed NAME_MAX */
    char tmp[NAME_MAX + 1], rnd[TMP_RAND_LEN + 1];
    size_t keep = strlen(name), room = NAME_MAX - 1 - TMP_TAG_LEN - TMP_RAND_LEN;
    if (keep > room)
        keep = room;
    int fd = -1;
    for (int attempt = 0; attempt < 100; attempt++) {
        random_suffix(rnd);
        snprintf(tmp, sizeof tmp, ".%.*s%s%s", (int)keep, name, TMP_TAG, rnd);
        do {
            fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY,
                        0644);
        } while (fd < 0 && errno == EINTR);
        if (fd >= 0 || errno != EEXIST)
            break;
    }
    if (fd < 0) {
        st = write_errno(key, "creating a temporary file", err);
        close(dfd);
        return st;
    }
    const char *what = NULL;
    int r;
    if (!write_all(fd, data, len)) {
        what = "write";
    } else {
        do {
            r = fsync(fd);
        } while (r < 0 && errno == EINTR);
        if (r < 0)
            what = "fsync";
    }
    bool conflict = false;
    if (what) {
        int e = errno;
        close(fd);
        errno = e;
    } else if (close(fd) < 0 && errno != EINTR) {
        what = "close";
    } else {
        /* the version check (if_version) and the rename as one step for every zarrfs writer */
        lock_dir(dfd, LOCK_EX);
        if (c && c->if_version && !still_version(dfd, name, c->base))
            conflict = true;
        else if (renameat(dfd, tmp, dfd, name) < 0)
            what = "rename";
        int e = errno;
        lock_dir(dfd, LOCK_UN);
        errno = e;
    }
    if (conflict) {
        unlinkat(dfd, tmp, 0);
        st = zf_fail(err, ZF_ERR_CONFLICT, "%s: changed by another writer since it was read",
                     key);
    } else if (what) {
        int e = errno;
        unlinkat(dfd, tmp, 0);
        errno = e;
        st = write_errno(key, what, err);
    } else if (sync_dir(dfd) < 0) { /* the value is in place, but may not last a crash */
        st = write_errno(key, "fsync of its directory", err);
    }
    close(dfd);
    return st;
}

static zf_status fs_set(zf_store *s, const char *key, const uint8_t *data, size_t len,
                        zf_err *err)
{
    return fs_set_cond(s, key, data, len, NULL, err);
}

/* erase (conditional false) or erase_if (conditional, base). */
static zf_status fs_remove(zf_store *s, const char *key, bool conditional,
                           const zf_store_version *base, zf_err *err)
{
    file_store *fs = (file_store *)s;
    if (has_temp_segment(key))
        return zf_fail(err, ZF_ERR_INVALID, "%s: not a key (a temporary file's name)", key);
    int dfd;
    const char *name;
    zf_status st = open_key_dir(fs, key, false, NULL, &dfd, &name, err);
    if (st == ZF_ERR_NOT_FOUND) /* its directory is gone, and the key with it */
        return conditional ? zf_fail(err, ZF_ERR_CONFLICT, "%s: removed by another writer", key)
                           : ZF_OK;
    if (st != ZF_OK)
        return st;
    lock_dir(dfd, LOCK_EX); /* as renames are */
    bool conflict = conditional && !still_version(dfd, name, base);
    int r = conflict ? 0 : unlinkat(dfd, name, 0), e = errno;
    lock_dir(dfd, LOCK_UN);
    errno = e;
    if (conflict) {
        st = zf_fail(err, ZF_ERR_CONFLICT, "%s: changed by another writer since it was read", key);
    } else if (r == 0) {
        if (sync_dir(dfd) < 0)
            st = write_errno(key, "fsync of its directory", err);
    } else if (errno != ENOENT && errno != EISDIR) { /* a directory is no value (get agrees) */
        st = write_errno(key, "unlink", err);
    }
    close(dfd);
    return st;
}

static zf_status fs_erase(zf_store *s, const char *key, zf_err *err)
{
    return fs_remove(s, key, false, NULL, err);
}

static zf_status fs_erase_if(zf_store *s, const char *key, const zf_store_version *base,
                             zf_err *err)
{
    return fs_remove(s, key, true, base, err);
}

/* When directory name in dfd holds nothing but temporary files (which a killed writer left
 * behind, and which listings do not show), remove them; true when it did. */
static bool remove_stale_temps(int dfd, const char *name)
{
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return false;
    }
    bool only_temps = true, any = false;
    struct dirent *de;
    while (only_temps && (de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        struct stat sb;
        only_temps = is_temp_name(de->d_name, strlen(de->d_name)) &&
                     fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
                     S_ISREG(sb.st_mode);
        any = true;
    }
    if (only_temps && any) {
        rewinddir(d);
        while ((de = readdir(d)) != NULL)
            if (is_temp_name(de->d_name, strlen(de->d_name)))
                unlinkat(dirfd(d), de->d_name, 0);
    }
    closedir(d);
    return only_temps && any;
}

static zf_status fs_remove_dir(zf_store *s, const char *prefix, zf_err *err)
{
    file_store *fs = (file_store *)s;
    if (has_temp_segment(prefix))
        return zf_fail(err, ZF_ERR_INVALID, "%s: not a key (a temporary file's name)", prefix);
    int dfd;
    const char *name;
    zf_status st = open_key_dir(fs, prefix, false, NULL, &dfd, &name, err);
    if (st == ZF_ERR_NOT_FOUND)
        return ZF_OK;
    if (st != ZF_OK)
        return st;
    int r = unlinkat(dfd, name, AT_REMOVEDIR);
    if (r < 0 && (errno == ENOTEMPTY || errno == EEXIST) && remove_stale_temps(dfd, name))
        r = unlinkat(dfd, name, AT_REMOVEDIR);
    if (r == 0) {
        if (sync_dir(dfd) < 0)
            st = write_errno(prefix, "fsync of its parent directory", err);
    } else if (errno == ENOTEMPTY || errno == EEXIST) {
        st = zf_fail(err, ZF_ERR_INVALID, "%s: not empty", prefix);
    } else if (errno == ENOTDIR) {
        st = zf_fail(err, ZF_ERR_INVALID, "%s: not a directory", prefix);
    } else if (errno != ENOENT) {
        st = write_errno(prefix, "rmdir", err);
    }
    close(dfd);
    return st;
}

static void fs_destroy(zf_store *s)
{
    file_store *fs = (file_store *)s;
    close(fs->root_fd);
    free(fs->base.url);
    free(fs);
}

static const zf_store_ops file_ops = {
    .scheme = "file",
    .get = fs_get,
    .get_partial = fs_get_partial,
    .get_suffix = fs_get_suffix,
    .stat = fs_stat,
    .list_dir = fs_list_dir,
    .destroy = fs_destroy,
    .set = fs_set,
    .erase = fs_erase,
    .remove_dir = fs_remove_dir,
    .read_versioned = fs_read_versioned,
    .set_cond = fs_set_cond,
    .erase_if = fs_erase_if,
};

zf_status zf_store_file_open(const char *root, zf_store **out, zf_err *err)
{
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return zf_fail(err, e == ENOENT ? ZF_ERR_NOT_FOUND : ZF_ERR_IO, "%s: %s", root,
                       e == ENOTDIR ? "not a directory" : strerror(e));
    }
    file_store *fs = calloc(1, sizeof *fs);
    if (!fs || !(fs->base.url = strdup(root))) {
        free(fs);
        close(fd);
        return ZF_ERR_NOMEM;
    }
    fs->base.ops = &file_ops;
    fs->root_fd = fd;
    *out = &fs->base;
    return ZF_OK;
}
