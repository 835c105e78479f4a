/* main.c — zarrfs [-o OPTIONS] STORE MOUNTPOINT
 *
 * parse -> open store and hierarchy (refuse a bad store here, before anything is mounted)
 * -> session -> signal handlers -> mount -> daemonize -> loop -> teardown in reverse
 * (the skeleton of libfuse's passthrough_ll). */
#include <ctype.h>
#include <limits.h>
#include <stdbool.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuse_ops.h"
#include "zarrfs/log.h"

typedef struct zf_options {
    char *store;
    char *cache_size;
    unsigned threads;
    int show_version;
    int show_help;
} zf_options;

#define ZF_OPT(t, p) {t, offsetof(zf_options, p), 1}
static const struct fuse_opt zf_opts[] = {
    ZF_OPT("cache_size=%s", cache_size), ZF_OPT("threads=%u", threads),
    ZF_OPT("--version", show_version),   ZF_OPT("-V", show_version),
    ZF_OPT("--help", show_help),         ZF_OPT("-h", show_help),
    FUSE_OPT_END,
};

#define DEFAULT_CACHE_SIZE "512M"

static void usage(const char *prog)
{
    printf("usage: %s [options] STORE MOUNTPOINT\n\n"
           "Mount the Zarr hierarchy in STORE (a directory or file:// URL) read-only at\n"
           "MOUNTPOINT: each group a directory, each array one file holding the whole array\n"
           "in C order.\n\n"
           "zarrfs options:\n"
           "    -o cache_size=SIZE     bytes of decoded chunks to keep (suffix K, M, G)\n"
           "                           (default: " DEFAULT_CACHE_SIZE ")\n"
           "    -o threads=N           chunk decoding threads (default: one per CPU)\n"
           "    -V, --version          print the version\n"
           "    -h, --help             print this help\n\n",
           prog);
}

static int opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
    (void)outargs;
    zf_options *o = data;
    if (key == FUSE_OPT_KEY_NONOPT && !o->store) {
        o->store = strdup(arg);
        return 0; /* the first positional is the store; the second is left for FUSE */
    }
    return 1;
}

/* "512M" -> bytes; 0 on a malformed size. */
static size_t parse_size(const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return 0;
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case 'T': shift = 40; break;
    case '\0': break;
    default: return 0;
    }
    if (*end && end[1] && !(toupper((unsigned char)end[1]) == 'B' && !end[2]) &&
        !(toupper((unsigned char)end[1]) == 'I' && toupper((unsigned char)end[2]) == 'B' && !end[3]))
        return 0;
    if (v > (SIZE_MAX >> shift))
        return 0;
    return (size_t)(v << shift);
}

/* fsname=STORE for /proc/mounts, with ',' and '\' escaped for the -o list. */
static char *mount_opts(const char *store)
{
    size_t n = strlen(store);
    char *s = malloc(2 * n + 64);
    if (!s)
        return NULL;
    char *p = s + sprintf(s, "-oro,default_permissions,subtype=zarrfs,fsname=");
    for (const char *q = store; *q; q++) {
        if (*q == ',' || *q == '\\')
            *p++ = '\\';
        *p++ = *q;
    }
    *p = '\0';
    return s;
}

/* The kernel caps a FUSE mount's readahead at its bdi's read_ahead_kb (128 KiB by default); the
 * daemon's max_readahead can only lower it. Raise it to the 1 MiB requests init() asks for, so
 * a sequential read costs 8 times fewer requests. Best effort: needs root; found through
 * /proc/self/mountinfo, so no request is sent to this file system. */
static void raise_readahead(const char *mountpoint, unsigned kib)
{
    char real[PATH_MAX], line[4096], dev[32] = "";
    if (!realpath(mountpoint, real))
        return;
    FILE *f = fopen("/proc/self/mountinfo", "r");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) { /* "ID PARENT MAJ:MIN ROOT MOUNTPOINT ..." */
        char majmin[32], mnt[PATH_MAX];
        if (sscanf(line, "%*s %*s %31s %*s %4095s", majmin, mnt) == 2 && strcmp(mnt, real) == 0 &&
            strstr(line, " - fuse.zarrfs "))
            snprintf(dev, sizeof dev, "%s", majmin); /* the last match is the newest mount */
    }
    fclose(f);
    if (!dev[0])
        return;
    char path[96];
    snprintf(path, sizeof path, "/sys/class/bdi/%s/read_ahead_kb", dev);
    f = fopen(path, "w");
    bool ok = f && fprintf(f, "%u\n", kib) > 0;
    if (f && fclose(f) != 0)
        ok = false;
    if (ok)
        zf_log_debug("readahead of %s raised to %u KiB", path, kib);
    else
        zf_log_debug("cannot raise readahead in %s: %s", path, strerror(errno));
}

int main(int argc, char *argv[])
{
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    zf_options o = {0};
    struct fuse_cmdline_opts cl = {0};
    zf_hierarchy *h = NULL;
    struct fuse_session *se = NULL;
    int ret = 1;

    if (fuse_opt_parse(&args, &o, zf_opts, opt_proc) != 0)
        goto out;
    if (o.show_help) {
        usage(argv[0]);
        printf("FUSE options:\n");
        fuse_cmdline_help();
        fuse_lowlevel_help();
        ret = 0;
        goto out;
    }
    if (o.show_version) {
        printf("zarrfs version %s\nFUSE library version %s\n", ZARRFS_VERSION,
               fuse_pkgversion());
        ret = 0;
        goto out;
    }
    char *mo = o.store ? mount_opts(o.store) : NULL;
    if (mo) {
        fuse_opt_add_arg(&args, mo);
        free(mo);
    }
    if (fuse_parse_cmdline(&args, &cl) != 0)
        goto out;
    if (!o.store || !cl.mountpoint) {
        fprintf(stderr, "zarrfs: usage: %s [options] STORE MOUNTPOINT (see --help)\n", argv[0]);
        goto out;
    }
    if (cl.debug)
        zf_log_set_level(ZF_LOG_DEBUG);

    zf_hierarchy_options hopts = {.cache_size = parse_size(o.cache_size ? o.cache_size
                                                                        : DEFAULT_CACHE_SIZE),
                                  .threads = o.threads};
    if (hopts.cache_size == 0) {
        fprintf(stderr, "zarrfs: -o cache_size=%s: expected a size such as 512M\n", o.cache_size);
        goto out;
    }
    zf_store *store;
    zf_err err = {""};
    zf_status st = zf_store_open(o.store, &store, &err);
    if (st == ZF_OK)
        st = zf_hierarchy_open(store, o.store, &hopts, &h, &err);
    if (st != ZF_OK) {
        fprintf(stderr, "zarrfs: %s\n", err.msg[0] ? err.msg : zf_status_str(st));
        goto out;
    }

    zf_fs fs = {.h = h};
    se = fuse_session_new(&args, &zf_fuse_ops, sizeof zf_fuse_ops, &fs);
    if (!se)
        goto out;
    if (fuse_set_signal_handlers(se) != 0)
        goto out_session;
    if (fuse_session_mount(se, cl.mountpoint) != 0) {
        fprintf(stderr, "zarrfs: cannot mount at %s\n", cl.mountpoint);
        goto out_signals;
    }
    raise_readahead(cl.mountpoint, 1024);
    fuse_daemonize(cl.foreground);
    if (cl.singlethread) {
        ret = fuse_session_loop(se);
    } else {
        struct fuse_loop_config *lc = fuse_loop_cfg_create();
        if (!lc)
            goto out_unmount;
        fuse_loop_cfg_set_clone_fd(lc, (unsigned)cl.clone_fd);
        /* Both are UINT_MAX unless given with -o; libfuse 3.14 warns about that value. */
        if (cl.max_idle_threads <= 100000)
            fuse_loop_cfg_set_idle_threads(lc, cl.max_idle_threads);
        if (cl.max_threads > 0 && cl.max_threads <= 100000)
            fuse_loop_cfg_set_max_threads(lc, cl.max_threads);
        ret = fuse_session_loop_mt(se, lc);
        fuse_loop_cfg_destroy(lc);
    }
    /* The loop returns the number of the signal that ended it: a clean unmount too. */
    ret = ret == 0 || ret == SIGTERM || ret == SIGINT || ret == SIGHUP ? 0 : 1;
out_unmount:
    fuse_session_unmount(se);
out_signals:
    fuse_remove_signal_handlers(se);
out_session:
    fuse_session_destroy(se);
out:
    zf_hierarchy_free(h);
    free(cl.mountpoint);
    free(o.store);
    free(o.cache_size);
    fuse_opt_free_args(&args);
    return ret;
}
