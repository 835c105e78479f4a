/* store_file.c — the local file-system store (Zarr v3 "File system store", v2 DirectoryStore).
 *
 * Keys are file paths below the root directory. Every open goes through openat2(2) with
 * RESOLVE_BENEATH relative to a descriptor of the root, so that neither ".." nor a symbolic
 * link (absolute or relative) can reach a file outside the store; an attempt is ZF_ERR_IO. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "zarrfs/mem.h"
#include "zarrfs/store.h"

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
 * bytes instead (offset ignored), and the file's size in *total. */
static zf_status read_range(int fd, const char *key, uint64_t offset, uint64_t len, bool suffix,
                            uint64_t *total, zf_bytes *out, zf_err *err)
{
    struct stat sb;
    if (fstat(fd, &sb) < 0)
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
    if (n > SIZE_MAX / 2)
        return zf_fail(err, ZF_ERR_NOMEM, "%s: value too large", key);
    uint8_t *buf = zf_alloc_bulk((size_t)n); /* may become a cached chunk as it is */
    if (!buf)
        return ZF_ERR_NOMEM;
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, buf + got, n - got, (off_t)(offset + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(buf);
            return errno_status(key, "read", err);
        }
        if (r == 0)
            break; /* the file shrank: return what is there */
        got += (size_t)r;
    }
    out->data = buf;
    out->len = got;
    return ZF_OK;
}

static zf_status fs_get_partial(zf_store *s, const char *key, uint64_t offset, uint64_t len,
                                zf_bytes *out, zf_err *err)
{
    file_store *fs = (file_store *)s;
    int fd = open_beneath(fs->root_fd, key, O_RDONLY | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return errno_status(key, "open", err);
    zf_status st = read_range(fd, key, offset, len, false, NULL, out, err);
    close(fd);
    return st;
}

static zf_status fs_get_suffix(zf_store *s, const char *key, uint64_t len, zf_bytes *out,
                               uint64_t *total, zf_err *err)
{
    file_store *fs = (file_store *)s;
    int fd = open_beneath(fs->root_fd, key, O_RDONLY | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return errno_status(key, "open", err);
    zf_status st = read_range(fd, key, 0, len, true, total, out, err);
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
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
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
