/* passthrough.c — the FUSE limits of this machine, for the benchmarks: a minimal libfuse
 * low-level file system serving one regular file's bytes as one file, as fast as libfuse lets a
 * daemon serve them (reads, and with -o rw writes). Not part of zarrfs.
 *
 *   zf_passthrough FILE MOUNTPOINT [-f] [-o max_read=1048576,direct_io,rw,...]
 *
 * The mount holds one file named after FILE (its basename), with FILE's size; READ requests are
 * answered with fuse_reply_data() on a buffer that points into FILE (FUSE_BUF_IS_FD |
 * FUSE_BUF_FD_SEEK, as libfuse's passthrough_ll does), so libfuse reads straight into its reply
 * (or splices, when the kernel offers it). Multithreaded session loop (fuse_session_loop_mt),
 * 1 MiB max_write, max_read (unless -o max_read= says otherwise) and max_readahead, no writeback
 * cache: what zarrfs asks for too. The benchmarks raise the mount's read_ahead_kb to
 * 1024 for both.
 *
 * Two options of its own (taken out before libfuse sees the rest):
 *   -o direct_io  the file is opened with FOPEN_DIRECT_IO (fi->direct_io = 1): reads and writes
 *                 bypass the page cache, each read(2)/write(2) reaches the daemon as requests of
 *                 at most max_read/max_write bytes, several in flight (FUSE_CAP_ASYNC_DIO), as
 *                 zarrfs -o direct_io does. Without it: keep_cache, the page-cache path.
 *   -o rw         FILE is opened read-write and the mounted file is writable: WRITE requests are
 *                 answered by copying the request's buffer into FILE at the offset (write_buf +
 *                 fuse_buf_copy: a pwrite, or a splice where the kernel offers it), FSYNC and
 *                 FLUSH of a handle opened for writing by fsync(2) of FILE (fdatasync for a
 *                 datasync FSYNC), SETATTR of the size by ftruncate(2). Without it, opening for
 *                 writing fails with EROFS. */
#define FUSE_USE_VERSION 34
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <libgen.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_INO 2
#define MAX_REQUEST (1u << 20)

static int data_fd = -1;
static struct stat data_st;
static char *data_name;

/* The options of the passthrough itself (see the top of the file). */
static struct pt_options {
    int direct_io;
    int rw;
    unsigned max_read; /* -o max_read=N, default MAX_REQUEST: init() must repeat it to libfuse */
} pt_opts = {.max_read = MAX_REQUEST};

static const struct fuse_opt pt_opt_spec[] = {
    {"direct_io", offsetof(struct pt_options, direct_io), 1},
    {"rw", offsetof(struct pt_options, rw), 1},
    {"max_read=%u", offsetof(struct pt_options, max_read), 0},
    FUSE_OPT_END,
};

static void attr_of(fuse_ino_t ino, struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_ino = ino;
    if (ino == FUSE_ROOT_ID) {
        st->st_mode = S_IFDIR | 0555;
        st->st_nlink = 2;
    } else {
        st->st_mode = S_IFREG | (pt_opts.rw ? 0644 : 0444);
        st->st_nlink = 1;
        st->st_size = __atomic_load_n(&data_st.st_size, __ATOMIC_RELAXED);
    }
    st->st_mtim = data_st.st_mtim;
}

static void pt_init(void *userdata, struct fuse_conn_info *conn)
{
    (void)userdata;
    conn->max_write = MAX_REQUEST;
    conn->max_read = pt_opts.max_read;
    if (conn->max_readahead < MAX_REQUEST)
        conn->max_readahead = MAX_REQUEST;
    /* as zarrfs: writes reach the daemon as they happen; direct reads and writes in parallel */
    conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
    if (pt_opts.direct_io && (conn->capable & FUSE_CAP_ASYNC_DIO))
        conn->want |= FUSE_CAP_ASYNC_DIO;
}

static void pt_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    if (parent != FUSE_ROOT_ID || strcmp(name, data_name) != 0) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    struct fuse_entry_param e = {.ino = FILE_INO, .attr_timeout = 3600, .entry_timeout = 3600};
    attr_of(FILE_INO, &e.attr);
    fuse_reply_entry(req, &e);
}

static void pt_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)fi;
    struct stat st;
    attr_of(ino, &st);
    fuse_reply_attr(req, &st, 3600);
}

static void pt_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    if (ino != FILE_INO) {
        fuse_reply_err(req, EISDIR);
        return;
    }
    if ((fi->flags & O_ACCMODE) != O_RDONLY && !pt_opts.rw) {
        fuse_reply_err(req, EROFS);
        return;
    }
    fi->fh = (fi->flags & O_ACCMODE) != O_RDONLY; /* a writer: FLUSH syncs */
    if (pt_opts.direct_io)
        fi->direct_io = 1;
    else
        fi->keep_cache = 1;
    fuse_reply_open(req, fi);
}

static void pt_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    (void)ino;
    (void)fi;
    struct fuse_bufvec buf = FUSE_BUFVEC_INIT(size);
    buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
    buf.buf[0].fd = data_fd;
    buf.buf[0].pos = off;
    fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
}

static void pt_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off,
                         struct fuse_file_info *fi)
{
    (void)ino;
    (void)fi;
    struct fuse_bufvec out = FUSE_BUFVEC_INIT(fuse_buf_size(in));
    out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
    out.buf[0].fd = data_fd;
    out.buf[0].pos = off;
    ssize_t n = fuse_buf_copy(&out, in, 0);
    if (n < 0) {
        fuse_reply_err(req, (int)-n);
        return;
    }
    off_t end = off + n, size = __atomic_load_n(&data_st.st_size, __ATOMIC_RELAXED);
    while (end > size && !__atomic_compare_exchange_n(&data_st.st_size, &size, end, false,
                                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    fuse_reply_write(req, (size_t)n);
}

static void reply_sync(fuse_req_t req, int datasync)
{
    fuse_reply_err(req, (datasync ? fdatasync(data_fd) : fsync(data_fd)) != 0 ? errno : 0);
}

static void pt_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    (void)ino;
    (void)fi;
    reply_sync(req, datasync);
}

static void pt_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    if (!fi->fh) /* close(2) of a reader: nothing to store */
        fuse_reply_err(req, 0);
    else
        reply_sync(req, 0);
}

static void pt_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                       struct fuse_file_info *fi)
{
    (void)fi;
    if (to_set & FUSE_SET_ATTR_SIZE) {
        if (ino != FILE_INO || !pt_opts.rw) {
            fuse_reply_err(req, ino != FILE_INO ? EISDIR : EROFS);
            return;
        }
        if (ftruncate(data_fd, attr->st_size) != 0) {
            fuse_reply_err(req, errno);
            return;
        }
        __atomic_store_n(&data_st.st_size, attr->st_size, __ATOMIC_RELAXED);
    }
    struct stat st; /* modes, owners and times: not kept (nothing here needs them) */
    attr_of(ino, &st);
    fuse_reply_attr(req, &st, 3600);
}

static void pt_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
    (void)fi;
    if (ino != FUSE_ROOT_ID) {
        fuse_reply_err(req, ENOTDIR);
        return;
    }
    char buf[1024];
    size_t used = 0;
    const char *names[] = {".", "..", data_name};
    for (off_t i = off; i < 3; i++) {
        struct stat st;
        attr_of(i == 2 ? FILE_INO : FUSE_ROOT_ID, &st);
        size_t need = fuse_add_direntry(req, buf + used, size < sizeof buf ? size - used
                                                                           : sizeof buf - used,
                                        names[i], &st, i + 1);
        if (used + need > (size < sizeof buf ? size : sizeof buf))
            break;
        used += need;
    }
    fuse_reply_buf(req, buf, used);
}

static const struct fuse_lowlevel_ops ops = {
    .init = pt_init,
    .lookup = pt_lookup,
    .getattr = pt_getattr,
    .open = pt_open,
    .read = pt_read,
    .write_buf = pt_write_buf,
    .flush = pt_flush,
    .fsync = pt_fsync,
    .setattr = pt_setattr,
    .readdir = pt_readdir,
};

int main(int argc, char *argv[])
{
    /* FILE is the first argument that is neither an option nor an option's value; the rest
     * (options, MOUNTPOINT) go to libfuse. */
    const char *file = NULL;
    struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
    for (int i = 0; i < argc; i++) {
        bool value = i > 0 && strcmp(argv[i - 1], "-o") == 0;
        if (!file && i > 0 && argv[i][0] != '-' && !value)
            file = argv[i];
        else
            fuse_opt_add_arg(&args, argv[i]);
    }
    struct fuse_cmdline_opts opts;
    char max_read[32];
    if (file && fuse_opt_parse(&args, &pt_opts, pt_opt_spec, NULL) == 0) {
        snprintf(max_read, sizeof max_read, "-omax_read=%u", pt_opts.max_read);
        fuse_opt_add_arg(&args, max_read); /* the mount's, equal to what init() answers */
    }
    if (!file || fuse_parse_cmdline(&args, &opts) != 0 || !opts.mountpoint) {
        fprintf(stderr, "usage: %s FILE MOUNTPOINT [-f] [-o direct_io,rw,OPTIONS]\n", argv[0]);
        return 2;
    }
    data_fd = open(file, pt_opts.rw ? O_RDWR : O_RDONLY);
    if (data_fd < 0 || fstat(data_fd, &data_st) != 0) {
        perror(file);
        return 1;
    }
    char *copy = strdup(file);
    data_name = strdup(basename(copy));
    free(copy);
    struct fuse_session *se = fuse_session_new(&args, &ops, sizeof ops, NULL);
    int ret = 1;
    if (!se)
        goto out;
    if (fuse_set_signal_handlers(se) != 0)
        goto out_destroy;
    if (fuse_session_mount(se, opts.mountpoint) != 0)
        goto out_signals;
    fuse_daemonize(opts.foreground);
    struct fuse_loop_config *cfg = fuse_loop_cfg_create();
    fuse_loop_cfg_set_clone_fd(cfg, opts.clone_fd);
    fuse_loop_cfg_set_max_threads(cfg, opts.max_threads);
    ret = fuse_session_loop_mt(se, cfg);
    fuse_loop_cfg_destroy(cfg);
    fuse_session_unmount(se);
out_signals:
    fuse_remove_signal_handlers(se);
out_destroy:
    fuse_session_destroy(se);
out:
    fuse_opt_free_args(&args);
    free(opts.mountpoint);
    free(data_name);
    close(data_fd);
    return ret ? 1 : 0;
}
