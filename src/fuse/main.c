/* main.c — zarrfs [-o OPTIONS] STORE MOUNTPOINT
 *
 * parse -> open store and hierarchy (refuse a bad store here, before anything is mounted)
 * -> check the mount point -> session -> signal handlers -> mount -> daemonize (unless -f; every
 * failure so far is reported on stderr with exit status 1 before the shell gets its prompt back)
 * -> logs to syslog when in the background -> tell systemd we are ready -> loop -> teardown in
 * reverse (the skeleton of libfuse's passthrough_ll). */
#include <ctype.h>
#include <pwd.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fuse_ops.h"
#include "zarrfs/log.h"
#include "zarrfs/mem.h"
#include "zarrfs/metrics.h"
#include "zarrfs/sbuf.h"

typedef struct zf_options {
    char *store;
    char *cache_size;
    char *memory_limit; /* -o memory_limit=SIZE */
    unsigned threads;
    char *log_level;
    unsigned stats_log;
    /* remote stores */
    int insecure, anonymous;
    unsigned retries, max_connections, readahead; /* retries: UINT_MAX until given */
    char *timeout, *metadata_ttl, *endpoint, *region, *profile, *account;
    char *credentials; /* -o credentials=FILE */
    char *metrics_file; /* -o metrics_file=PATH */
    int netrc_default; /* -o netrc: ~/.netrc */
    char *netrc;       /* -o netrc=FILE */
    char *disk_cache, *disk_cache_size;
    int show_version;
    int show_help;
    int rw, allow_delete, write_empty_chunks;
    int direct_io;       /* -o direct_io: array files bypass the page cache */
    int sidecars_all;    /* -o sidecars */
    char *sidecars;      /* -o sidecars=envi,mhd,nhdr,npy */
    char *uid, *gid, *umask, *file_mode, *dir_mode; /* ownership and modes of the nodes */
    /* Icechunk repositories: -o ref, -o snapshot, -o virtual_chunks (repeated),
     * -o virtual_endpoint (repeated) */
    char *ref, *snapshot;
    char **virtual_chunks, **virtual_endpoints;
    size_t nvirtual_chunks, nvirtual_endpoints;
} zf_options;

enum { KEY_VIRTUAL_CHUNKS = 1, KEY_VIRTUAL_ENDPOINT };

#define ZF_OPT(t, p) {t, offsetof(zf_options, p), 1}
static const struct fuse_opt zf_opts[] = {
    ZF_OPT("cache_size=%s", cache_size), ZF_OPT("threads=%u", threads),
    ZF_OPT("memory_limit=%s", memory_limit),
    ZF_OPT("log_level=%s", log_level),   ZF_OPT("stats_log=%u", stats_log),
    ZF_OPT("metrics_file=%s", metrics_file),
    ZF_OPT("insecure", insecure),         ZF_OPT("anonymous", anonymous),
    ZF_OPT("retries=%u", retries),
    ZF_OPT("timeout=%s", timeout),        ZF_OPT("max_connections=%u", max_connections),
    ZF_OPT("readahead=%u", readahead),    ZF_OPT("metadata_ttl=%s", metadata_ttl),
    ZF_OPT("endpoint=%s", endpoint),      ZF_OPT("region=%s", region),
    ZF_OPT("profile=%s", profile),        ZF_OPT("account=%s", account),
    ZF_OPT("credentials=%s", credentials), ZF_OPT("netrc", netrc_default),
    ZF_OPT("netrc=%s", netrc),
    ZF_OPT("disk_cache=%s", disk_cache), ZF_OPT("disk_cache_size=%s", disk_cache_size),
    ZF_OPT("--version", show_version),   ZF_OPT("-V", show_version),
    ZF_OPT("--help", show_help),         ZF_OPT("-h", show_help),
    ZF_OPT("allow_delete", allow_delete), ZF_OPT("write_empty_chunks", write_empty_chunks),
    /* Writing: -o rw (mount(8) passes it unless told "ro"); "ro" goes on to FUSE. */
    ZF_OPT("rw", rw),
    ZF_OPT("direct_io", direct_io),
    ZF_OPT("sidecars", sidecars_all),     ZF_OPT("sidecars=%s", sidecars),
    ZF_OPT("uid=%s", uid),                ZF_OPT("gid=%s", gid),
    ZF_OPT("umask=%s", umask),            ZF_OPT("file_mode=%s", file_mode),
    ZF_OPT("dir_mode=%s", dir_mode),
    ZF_OPT("ref=%s", ref),                ZF_OPT("snapshot=%s", snapshot),
    FUSE_OPT_KEY("virtual_chunks=", KEY_VIRTUAL_CHUNKS),
    FUSE_OPT_KEY("virtual_endpoint=", KEY_VIRTUAL_ENDPOINT),
    FUSE_OPT_END,
};

#define DEFAULT_CACHE_SIZE "512M"
#define DEFAULT_MEMORY_MARGIN "256M" /* the default memory_limit: cache_size + this */
/* Of memory_limit, what is held outside the memory account: the daemon's resident memory once
 * the hierarchy is open, and this much for what comes after (worker and FUSE threads' stacks
 * and request buffers), and for a remote store MEMORY_PER_CONNECTION per connection (libcurl's
 * buffers and its worker thread: measured at about that under load, docs/benchmarks.md). */
#define MEMORY_RESERVE_SLACK ((size_t)16 << 20)
#define MEMORY_PER_CONNECTION ((size_t)2 << 20)
#define DEFAULT_DISK_CACHE_SIZE "10G"

static void usage(const char *prog)
{
    printf("usage: %s [options] STORE MOUNTPOINT\n\n"
           "Mount the Zarr hierarchy in STORE (a directory or file:// URL, http(s):// or\n"
           "s3:// URL, a zip archive or a kerchunk reference file) at MOUNTPOINT: each\n"
           "group a directory, each array one file holding the whole array in C order.\n"
           "Read-only unless -o rw. MOUNTPOINT may be /dev/fd/N: serve a /dev/fuse\n"
           "descriptor that a privileged helper opened and mounted (containers).\n\n"
           "zarrfs options:\n"
           "    -o cache_size=SIZE     bytes of decoded chunks to keep (suffix K, M, G)\n"
           "                           (default: " DEFAULT_CACHE_SIZE ")\n"
           "    -o memory_limit=SIZE   bound of the daemon's memory: chunk loads wait (and\n"
           "                           the cache gives way) rather than go past it\n"
           "                           (default: cache_size + " DEFAULT_MEMORY_MARGIN " above the\n"
           "                           daemon's own memory at mount)\n"
           "    -o threads=N           chunk decoding threads (default: one per CPU)\n"
           "    -o log_level=LEVEL     error, warn, info or debug (default: warn; -d: debug);\n"
           "                           to stderr with -f, else to syslog\n"
           "    -o stats_log=SECONDS   log the statistics (" ".zarrfs-stats) every SECONDS\n"
           "                           (default: 0, never)\n"
           "    -o metrics_file=PATH   write the metrics (.zarrfs-metrics, Prometheus text\n"
           "                           format) to PATH, replaced atomically every stats_log\n"
           "                           seconds (default: none; every 15 s without stats_log)\n"
           "    -o readahead=N         bands of chunks decoded ahead of a sequential reader\n"
           "                           (default: 1)\n"
           "    -o direct_io           array files bypass the page cache: each read and\n"
           "                           write reaches zarrfs, faster for whole-array reads\n"
           "                           and writes; shared mmap(2) of an array fails (ENODEV;\n"
           "                           private mappings work) " ZF_DIRECT_IO_MMAP_NOTE "\n"
           "                           (default: through the page cache)\n"
           "    -o sidecars            show NAME.hdr (ENVI), NAME.mhd (MetaImage), NAME.nhdr\n"
           "                           (NRRD) headers, a NAME.npy and a NAME.tif (TIFF with\n"
           "                           OME-XML) view next to each array NAME, and a netCDF\n"
           "                           classic view GROUP.nc beside each group (the root's:\n"
           "                           STORE.nc) (default: off)\n"
           "    -o sidecars=KINDS      only these: a list of envi,mhd,nhdr,npy,tif,nc\n"
           "                           (default: off)\n"
           "\nremote stores (http://, https://, s3://BUCKET/PREFIX, az://CONTAINER/PREFIX):\n"
           "    -o max_connections=N   concurrent requests (default: %u)\n"
           "    -o retries=N           retries of a failed request (default: %u)\n"
           "    -o timeout=SECONDS     per request (default: %g)\n"
           "    -o metadata_ttl=SECONDS  trust metadata and listings this long (default: 60\n"
           "                           for remote stores, forever for local ones)\n"
           "    -o disk_cache=DIR      keep fetched objects in DIR across mounts (default:\n"
           "                           none); entries older than metadata_ttl are revalidated\n"
           "    -o disk_cache_size=SIZE  bound of the disk cache (default: "
           DEFAULT_DISK_CACHE_SIZE ")\n"
           "    -o insecure            do not verify TLS certificates (default: verify)\n"
           "    -o endpoint=URL        S3 endpoint (default: AWS, from the region); Azure:\n"
           "                           the account's blob endpoint\n"
           "    -o account=NAME        Azure storage account of az:// URLs (default: the\n"
           "                           credentials file's, $AZURE_STORAGE_ACCOUNT_NAME)\n"
           "    -o region=R            S3 region (default: $AWS_REGION or us-east-1)\n"
           "    -o profile=P           ~/.aws/credentials profile (default: $AWS_PROFILE or\n"
           "                           default)\n"
           "    -o anonymous           unsigned S3 and Azure requests (default: signed)\n"
           "    -o credentials=FILE    S3 or Azure keys, an Azure SAS token, an HTTP user and\n"
           "                           password or a bearer token,\n"
           "                           from FILE (mode 0600, yours; see zarrfs(1)), before\n"
           "                           the URL's and the environment's (default: none)\n"
           "    -o netrc               HTTP(S) user and password by host from ~/.netrc\n"
           "                           (default: not read)\n"
           "    -o netrc=FILE          the same from FILE (default: none)\n"
           "    -o rw                  allow writing (v2 and v3; local, S3 and Azure stores)\n"
           "                           (default: read-only)\n"
           "    -o write_empty_chunks  store chunks holding only the fill value (default:\n"
           "                           erase them)\n"
           "    -o allow_delete        let unlink delete arrays (default: EPERM)\n"
           "\nIcechunk repositories (read-only; every version under MOUNTPOINT/.icechunk/):\n"
           "    -o ref=NAME            show branch or tag NAME (default: branch main, whose\n"
           "                           new commits show after metadata_ttl, default 60)\n"
           "    -o snapshot=ID         show one snapshot (default: branch main)\n"
           "    -o virtual_chunks=PREFIX  read virtual chunks whose location starts with\n"
           "                           PREFIX (a URL prefix of a container the repository\n"
           "                           declares; repeat for several) (default: none; others\n"
           "                           read as EIO)\n"
           "    -o virtual_endpoint=PREFIX=URL  endpoint of that container (default: the\n"
           "                           repository's configuration)\n"
           "\nownership (the kernel checks the modes; other users need -o allow_other):\n"
           "    -o uid=N, -o gid=N     owner and group of every file and directory (default:\n"
           "                           the user and group running zarrfs)\n"
           "    -o umask=NNN           octal; files 0666 and directories 0777 without these\n"
           "                           bits (default: 022)\n"
           "    -o file_mode=NNN       octal mode of files, umask not applied (default: from\n"
           "                           umask)\n"
           "    -o dir_mode=NNN        octal mode of directories, umask not applied\n"
           "                           (default: from umask); no write bits ever on a\n"
           "                           read-only mount or a derived file\n\n"
           "    -f                     stay in the foreground (default: background)\n"
           "    -V, --version          print the version\n"
           "    -h, --help             print this help\n\n",
           prog, ZF_STORE_DEFAULT_MAX_CONNECTIONS, ZF_STORE_DEFAULT_RETRIES,
           ZF_STORE_DEFAULT_TIMEOUT);
}

static int opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
    (void)outargs;
    zf_options *o = data;
    if (key == FUSE_OPT_KEY_NONOPT && !o->store) {
        o->store = strdup(arg);
        return 0; /* the first positional is the store; the second is left for FUSE */
    }
    if (key == KEY_VIRTUAL_CHUNKS || key == KEY_VIRTUAL_ENDPOINT) { /* repeatable */
        char ***list = key == KEY_VIRTUAL_CHUNKS ? &o->virtual_chunks : &o->virtual_endpoints;
        size_t *n = key == KEY_VIRTUAL_CHUNKS ? &o->nvirtual_chunks : &o->nvirtual_endpoints;
        char **l = realloc(*list, (*n + 1) * sizeof *l);
        if (!l || !(l[*n] = strdup(strchr(arg, '=') + 1)))
            return -1;
        *list = l;
        (*n)++;
        return 0;
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

/* Wrap a remote *store in the disk cache of -o disk_cache=DIR (entries revalidated after ttl
 * seconds); a local store is left as it is, with a warning. false, having said why on stderr,
 * when the options are bad or the directory unusable (*store is left to the caller). */
static bool open_disk_cache(const zf_options *o, double ttl, zf_store **store)
{
    if (!o->disk_cache) {
        if (o->disk_cache_size)
            zf_log_warn("-o disk_cache_size without -o disk_cache: ignored");
        return true;
    }
    const char *size_text = o->disk_cache_size ? o->disk_cache_size : DEFAULT_DISK_CACHE_SIZE;
    zf_disk_cache_options dco = {.dir = o->disk_cache, .max_bytes = parse_size(size_text),
                                 .ttl = ttl};
    if (dco.max_bytes == 0) {
        fprintf(stderr, "zarrfs: -o disk_cache_size=%s: expected a size such as 10G\n",
                size_text);
        return false;
    }
    if (!*o->disk_cache) {
        fprintf(stderr, "zarrfs: -o disk_cache=: expected a directory\n");
        return false;
    }
    if (!zf_store_is_remote(*store)) {
        zf_log_warn("-o disk_cache: %s is a local store, read directly (no disk cache)", o->store);
        return true;
    }
    char *abs = o->disk_cache[0] == '/' ? NULL : realpath(".", NULL); /* daemons chdir("/") */
    char *dir = NULL;
    if (abs && asprintf(&dir, "%s/%s", abs, o->disk_cache) < 0)
        dir = NULL;
    free(abs);
    dco.dir = dir ? dir : o->disk_cache;
    zf_err err = {""};
    zf_store *wrapped;
    zf_status st = zf_store_disk_cache_open(*store, &dco, &wrapped, &err);
    free(dir);
    if (st != ZF_OK) {
        fprintf(stderr, "zarrfs: -o disk_cache: %s\n", err.msg[0] ? err.msg : zf_status_str(st));
        return false;
    }
    *store = wrapped;
    return true;
}

/* "2.5" -> 2.5 seconds (> 0, or >= 0 with zero_ok); false when malformed. */
static bool parse_seconds(const char *s, bool zero_ok, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0) || v > 1e9 || (!zero_ok && v == 0))
        return false;
    *out = v;
    return true;
}

/* "1000" -> a user or group id: decimal, below 2^32 - 1 (which chown(2) takes for "leave it"). */
static bool parse_id(const char *s, unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || !isdigit((unsigned char)*s) || *end || v >= UINT32_MAX)
        return false;
    *out = (unsigned)v;
    return true;
}

/* -o NAME=VALUE, octal permission bits such as 0750 (at most 0777), into *out when given. False,
 * having said why on stderr, when malformed. */
static bool mode_option(const char *name, const char *value, mode_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = value ? strtoull(value, &end, 8) : 0;
    if (value && (errno || !isdigit((unsigned char)*value) || *end || v > 0777)) {
        fprintf(stderr, "zarrfs: -o %s=%s: expected octal permission bits such as 0750\n", name,
                value);
        return false;
    }
    if (value)
        *out = (mode_t)v;
    return true;
}

/* -o uid, gid, umask, file_mode, dir_mode -> the owner and modes of fs's nodes. Owner: as given,
 * else the user and group running zarrfs. Modes: file_mode and dir_mode as given (the umask does
 * not apply to them), else 0666 and 0777 without the umask's bits (022 unless given); ops.c takes
 * the write bits away on read-only mounts and from derived files. False, having said why on
 * stderr, when a value is malformed. */
static bool parse_ownership(const zf_options *o, zf_fs *fs)
{
    unsigned id;
    fs->uid = geteuid();
    fs->gid = getegid();
    if (o->uid && !parse_id(o->uid, &id)) {
        fprintf(stderr, "zarrfs: -o uid=%s: expected a numeric user id\n", o->uid);
        return false;
    }
    if (o->uid)
        fs->uid = id;
    if (o->gid && !parse_id(o->gid, &id)) {
        fprintf(stderr, "zarrfs: -o gid=%s: expected a numeric group id\n", o->gid);
        return false;
    }
    if (o->gid)
        fs->gid = id;
    mode_t umask_bits = 022;
    if (!mode_option("umask", o->umask, &umask_bits))
        return false;
    fs->file_mode = 0666 & ~umask_bits;
    fs->dir_mode = 0777 & ~umask_bits;
    return mode_option("file_mode", o->file_mode, &fs->file_mode) &&
           mode_option("dir_mode", o->dir_mode, &fs->dir_mode);
}

/* Hide the password of a store URL from the command line other users see (ps(1) and
 * /proc/PID/cmdline read this process's argument strings): overwritten with '*' in place once
 * the options are parsed (fuse_opt_parse works on copies). The moment between exec and here
 * remains. */
static void hide_password_in_argv(int argc, char *argv[], const char *store)
{
    char *shown = zf_url_redact(store);
    size_t len = strlen(store), pre = 0, suf = 0;
    if (!shown || strcmp(shown, store) == 0) {
        free(shown);
        return;
    }
    size_t slen = strlen(shown);
    while (store[pre] == shown[pre])
        pre++; /* where the password starts */
    while (suf < len - pre && suf < slen && store[len - 1 - suf] == shown[slen - 1 - suf])
        suf++; /* "@host/..." */
    free(shown);
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], store) == 0)
            memset(argv[i] + pre, '*', len - suf - pre);
}

/* path made absolute (daemons chdir("/"), and libcurl reads a .netrc file at each connection).
 * malloc'ed; NULL when out of memory. */
static char *absolute_path(const char *path)
{
    if (path[0] == '/')
        return strdup(path);
    char *cwd = realpath(".", NULL), *out = NULL;
    if (cwd && asprintf(&out, "%s/%s", cwd, path) < 0)
        out = NULL;
    free(cwd);
    return out;
}

/* -o credentials=FILE into *creds, and -o netrc[=FILE] into *netrc: an absolute path, checked as
 * the credentials file is, NULL when not asked for. False, having said why on stderr, when one
 * is refused. Messages name the file and the line, never a secret. */
static bool load_secrets(const zf_options *o, zf_credentials *creds, char **netrc)
{
    zf_err err = {""};
    zf_status st;
    *netrc = NULL;
    if (o->credentials && !*o->credentials) {
        fprintf(stderr, "zarrfs: -o credentials=: expected a file\n");
        return false;
    }
    if (o->credentials && (st = zf_credentials_load(o->credentials, creds, &err)) != ZF_OK) {
        fprintf(stderr, "zarrfs: -o credentials: %s\n", err.msg[0] ? err.msg : zf_status_str(st));
        return false;
    }
    if (o->netrc && !*o->netrc) {
        fprintf(stderr, "zarrfs: -o netrc=: expected a file\n");
        zf_credentials_free(creds);
        return false;
    }
    if (o->netrc) {
        *netrc = absolute_path(o->netrc);
    } else if (o->netrc_default) { /* libcurl's default: $HOME/.netrc, else the user's home */
        const char *home = getenv("HOME");
        struct passwd pw, *res = NULL;
        char buf[4096];
        if ((!home || !*home) && getpwuid_r(getuid(), &pw, buf, sizeof buf, &res) == 0 && res)
            home = res->pw_dir;
        char *path = NULL;
        if (home && *home && asprintf(&path, "%s/.netrc", home) < 0)
            path = NULL;
        *netrc = path ? absolute_path(path) : NULL;
        free(path);
    } else {
        return true;
    }
    if (!*netrc)
        fprintf(stderr, "zarrfs: -o netrc: no home directory or no memory (give "
                "-o netrc=FILE)\n");
    else if ((st = zf_secret_file_check(*netrc, &err)) != ZF_OK)
        fprintf(stderr, "zarrfs: -o netrc: %s\n", err.msg[0] ? err.msg : zf_status_str(st));
    else
        return true;
    free(*netrc);
    *netrc = NULL;
    zf_credentials_free(creds);
    return false;
}

/* fsname=STORE for /proc/mounts, with ',' and '\' escaped for the -o list. */
static char *mount_opts(const char *store, bool rw)
{
    size_t n = strlen(store);
    char *s = malloc(2 * n + 64);
    if (!s)
        return NULL;
    char *p = s + sprintf(s, "-o%sdefault_permissions,subtype=zarrfs,fsname=", rw ? "" : "ro,");
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

/* N when mnt is "/dev/fd/N" (libfuse >= 3.3: the file system is served on descriptor N, a
 * /dev/fuse connection that a privileged helper opened and mounted), else -1. */
static int fuse_fd_of(const char *mnt)
{
    const char *p = strncmp(mnt, "/dev/fd/", 8) == 0 ? mnt + 8 : NULL;
    if (!p || !*p || strlen(p) > 9 || p[strspn(p, "0123456789")])
        return -1;
    return atoi(p);
}

/* A descriptor given as the mount point must be open on /dev/fuse (character device 10, 229). */
static bool check_fuse_fd(const char *mnt, int fd)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        fprintf(stderr, "zarrfs: %s: %s (the descriptor of an open, mounted /dev/fuse is "
                "expected)\n", mnt, strerror(errno));
        return false;
    }
    if (!S_ISCHR(sb.st_mode) || major(sb.st_rdev) != 10 || minor(sb.st_rdev) != 229) {
        fprintf(stderr, "zarrfs: %s: not a /dev/fuse descriptor\n", mnt);
        return false;
    }
    return true;
}

/* Refuse a mount point that is missing, not a directory, or already a zarrfs mount, with one
 * line on stderr, before anything is mounted. */
static bool check_mountpoint(const char *mnt)
{
    int fd = fuse_fd_of(mnt);
    if (fd >= 0)
        return check_fuse_fd(mnt, fd);
    struct stat sb;
    if (stat(mnt, &sb) != 0) {
        if (errno == ENOTCONN) /* a FUSE daemon that mounted here has died */
            fprintf(stderr, "zarrfs: %s: the file system mounted here is gone; clear the dead "
                    "mount with fusermount3 -uz %s\n", mnt, mnt);
        else
            fprintf(stderr, "zarrfs: %s: mount point %s\n", mnt,
                    errno == ENOENT ? "does not exist" : strerror(errno));
        return false;
    }
    if (!S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "zarrfs: %s: mount point is not a directory\n", mnt);
        return false;
    }
    char real[PATH_MAX], line[8192];
    FILE *f = realpath(mnt, real) ? fopen("/proc/self/mountinfo", "r") : NULL;
    bool ok = true;
    while (f && ok && fgets(line, sizeof line, f)) {
        char where[PATH_MAX], *sep = strstr(line, " - ");
        char type[64], source[4096];
        if (sscanf(line, "%*s %*s %*s %*s %4095s", where) == 1 && strcmp(where, real) == 0 &&
            sep && sscanf(sep, " - %63s %4095s", type, source) == 2 &&
            strcmp(type, "fuse.zarrfs") == 0) {
            struct statfs sfs;
            if (statfs(real, &sfs) != 0 && errno == ENOTCONN)
                fprintf(stderr, "zarrfs: %s: the zarrfs that mounted %s here is gone; clear the "
                        "dead mount with fusermount3 -uz %s\n", mnt, source, mnt);
            else
                fprintf(stderr, "zarrfs: %s: already mounted (zarrfs %s); unmount it first\n",
                        mnt, source);
            ok = false;
        }
    }
    if (f)
        fclose(f);
    return ok;
}

/* systemd's readiness notification (sd_notify(3)): a datagram to $NOTIFY_SOCKET, a path or an
 * abstract socket ('@'). A small stable protocol; without systemd the variable is unset. */
static void notify_systemd(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t len = path ? strlen(path) : 0;
    if (!path || (path[0] != '/' && path[0] != '@') || len >= sizeof sa.sun_path)
        return;
    memcpy(sa.sun_path, path, len);
    if (path[0] == '@')
        sa.sun_path[0] = '\0';
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
               (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0)
        zf_log_warn("cannot notify systemd at %s: %s", path, strerror(errno));
    close(fd);
}

/* A thread that runs `tick` every `seconds` until told to stop: -o stats_log=SECONDS logs the
 * statistics; with -o rw, the writeback of chunks written a while ago. */
typedef struct stats_logger {
    zf_fs *fs;
    unsigned seconds;
    void (*tick)(zf_fs *fs);
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop, started;
} stats_logger;

static void *stats_log_run(void *arg)
{
    stats_logger *sl = arg;
    pthread_mutex_lock(&sl->mu);
    while (!sl->stop) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_sec += sl->seconds;
        while (!sl->stop && pthread_cond_timedwait(&sl->cv, &sl->mu, &t) != ETIMEDOUT)
            ;
        if (sl->stop)
            break;
        pthread_mutex_unlock(&sl->mu);
        sl->tick(sl->fs);
        pthread_mutex_lock(&sl->mu);
    }
    pthread_mutex_unlock(&sl->mu);
    return NULL;
}

static void log_stats(zf_fs *fs)
{
    char *json = zf_fuse_stats_json(fs);
    if (json) {
        json[strcspn(json, "\n")] = '\0';
        zf_log_always("stats: %s", json);
        free(json);
    }
}

/* Chunks last written WRITEBACK_IDLE seconds ago, or first written WRITEBACK_MAX_AGE seconds
 * ago, are stored by the next tick: at most about three seconds after the last write. */
#define WRITEBACK_IDLE 2.0
#define WRITEBACK_MAX_AGE 5.0

static void writeback_tick(zf_fs *fs)
{
    zf_err err = {""};
    static char last[sizeof err.msg];
    if (zf_hierarchy_flush_aged(fs->h, WRITEBACK_IDLE, WRITEBACK_MAX_AGE, &err) == ZF_OK) {
        last[0] = '\0';
    } else if (strcmp(err.msg, last) != 0) { /* once per distinct failure, retried each tick */
        zf_log_error("storing written chunks: %s (will retry)", err.msg);
        snprintf(last, sizeof last, "%s", err.msg);
    }
}

/* -o metrics_file: the metrics written to a temporary file beside PATH, then renamed over it
 * (node_exporter's textfile collector never sees half a file). */
static const char *metrics_path;

static void write_metrics_file(zf_fs *fs)
{
    static bool warned;
    char *text = zf_fuse_metrics_text(fs), *tmp = NULL;
    if (!text || asprintf(&tmp, "%s.%d.tmp", metrics_path, (int)getpid()) < 0) {
        free(text);
        return;
    }
    FILE *f = fopen(tmp, "w");
    bool ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0)
        ok = false;
    if (ok && rename(tmp, metrics_path) != 0)
        ok = false;
    if (!ok) {
        if (!warned)
            zf_log_warn("-o metrics_file=%s: cannot write it: %s (said once)", metrics_path,
                        strerror(errno));
        warned = true;
        unlink(tmp);
    }
    free(tmp);
    free(text);
}

/* The labels of every metric: mount (the mount point's absolute path, or /dev/fd/N) and store
 * (as shown in messages: no secret). NULL when out of memory (then none). */
static char *metric_labels(const char *mountpoint, const char *store)
{
    char real[PATH_MAX];
    const char *m = fuse_fd_of(mountpoint) < 0 && realpath(mountpoint, real) ? real : mountpoint;
    zf_sbuf b = {0};
    zf_metrics_label(&b, "mount", m);
    zf_metrics_label(&b, "store", store);
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

static void stats_log_start(stats_logger *sl)
{
    pthread_mutex_init(&sl->mu, NULL);
    pthread_cond_init(&sl->cv, NULL);
    if (sl->seconds)
        sl->started = pthread_create(&sl->thread, NULL, stats_log_run, sl) == 0;
}

static void stats_log_stop(stats_logger *sl)
{
    if (sl->started) {
        pthread_mutex_lock(&sl->mu);
        sl->stop = true;
        pthread_cond_signal(&sl->cv);
        pthread_mutex_unlock(&sl->mu);
        pthread_join(sl->thread, NULL);
    }
    pthread_cond_destroy(&sl->cv);
    pthread_mutex_destroy(&sl->mu);
}

/* -o memory_limit (default: what the open daemon holds, its reserve, and cache_size +
 * DEFAULT_MEMORY_MARGIN), checked against what the open daemon already holds, and given to the
 * memory account (zarrfs/mem.h). False after printing why it cannot hold. */
static bool set_memory_limit(const zf_options *o, size_t cache_size, unsigned connections)
{
    size_t reserve = zf_mem_resident() + MEMORY_RESERVE_SLACK +
                     (size_t)connections * MEMORY_PER_CONNECTION;
    /* the default: cache_size + DEFAULT_MEMORY_MARGIN for what grows with load, above what the
     * daemon holds of its own (a large hierarchy's metadata, a sanitizer's shadow memory) */
    size_t limit = o->memory_limit ? parse_size(o->memory_limit)
                                   : reserve + cache_size + parse_size(DEFAULT_MEMORY_MARGIN);
    if (limit == 0) {
        fprintf(stderr, "zarrfs: -o memory_limit=%s: expected a size such as 1G\n",
                o->memory_limit);
        return false;
    }
    size_t least = reserve + ((size_t)16 << 20); /* room for a few chunks */
    if (limit < least) {
        fprintf(stderr, "zarrfs: -o memory_limit=%s: too small: the daemon holds %zu MiB "
                "already and needs %zu MiB at least\n", o->memory_limit,
                zf_mem_resident() >> 20, (least + ((size_t)1 << 20) - 1) >> 20);
        return false;
    }
    if (limit - reserve < cache_size)
        zf_log_warn("-o memory_limit=%s: the chunk cache can hold %zu MiB of its cache_size "
                    "(%zu MiB) at most", o->memory_limit, (limit - reserve) >> 20,
                    cache_size >> 20);
    zf_mem_set_limit(limit, reserve); /* logged once mounted (zf_log_info goes to stderr here) */
    return true;
}

/* The session loop, multithreaded unless -s; returns what the loop returned (-1: no memory). */
static int run_loop(struct fuse_session *se, const struct fuse_cmdline_opts *cl)
{
    if (cl->singlethread)
        return fuse_session_loop(se);
    struct fuse_loop_config *lc = fuse_loop_cfg_create();
    if (!lc)
        return -1;
    fuse_loop_cfg_set_clone_fd(lc, (unsigned)cl->clone_fd);
    /* Both are UINT_MAX unless given with -o; libfuse 3.14 warns about that value. */
    if (cl->max_idle_threads <= 100000)
        fuse_loop_cfg_set_idle_threads(lc, cl->max_idle_threads);
    if (cl->max_threads > 0 && cl->max_threads <= 100000)
        fuse_loop_cfg_set_max_threads(lc, cl->max_threads);
    int ret = fuse_session_loop_mt(se, lc);
    fuse_loop_cfg_destroy(lc);
    return ret;
}

/* fuse_opt splits -o values at commas: in "sidecars=envi,mhd,npy" the kinds after the first
 * would be taken for options of their own. Join them with ':' (which zf_sidecars_parse also
 * accepts) before parsing; a comma followed by anything else still separates options. */
static void join_sidecar_kinds(char *opts)
{
    static const char *const kinds[] = {"envi", "hdr", "mhd", "nhdr", "nrrd", "npy", "tif",
                                         "tiff", "nc", "netcdf", "all"};
    for (char *p = opts; (p = strstr(p, "sidecars=")) != NULL; p++) {
        if (p != opts && p[-1] != ',')
            continue;
        char *c = p + strlen("sidecars=");
        while ((c = strchr(c, ',')) != NULL) {
            size_t l = strcspn(c + 1, ",");
            bool kind = false;
            for (size_t i = 0; i < sizeof kinds / sizeof *kinds && !kind; i++)
                kind = strlen(kinds[i]) == l && strncmp(c + 1, kinds[i], l) == 0;
            if (!kind)
                break;
            *c++ = ':';
        }
    }
}

/* A store of keys below a directory, URL or bucket prefix (not an archive or references). */
static bool is_directory_store(const zf_store *s)
{
    if (!strcmp(s->ops->scheme, "diskcache") && s->inner) /* the store it caches */
        s = s->inner;
    const char *k = s->ops->scheme;
    return !strcmp(k, "file") || !strcmp(k, "http") || !strcmp(k, "s3") || !strcmp(k, "gs") ||
           !strcmp(k, "az");
}

/* Open the store (wrapped in the disk cache when asked), and with icechunk the Icechunk
 * repository it holds (*flag: it is one; without icechunk, *flag: the store is a directory
 * store, where one could be), then the hierarchy in it (*h). *remote_url: the store's URL when
 * remote (for messages), malloc'd; *opened: the store the hierarchy was given. Errors are left in err, printed by the caller; option errors
 * printed here (ZF_ERR_INVALID with an empty message). */
static zf_status open_hierarchy(const zf_options *o, const char *shown,
                                const zf_store_options *sopts, double ttl_given, bool icechunk,
                                zf_hierarchy_options *hopts, zf_hierarchy **h, bool *flag,
                                char **remote_url, zf_store **opened, zf_err *err)
{
    zf_store *store;
    *flag = false;
    *remote_url = NULL;
    zf_status st = zf_store_open(o->store, sopts, &store, err);
    if (st != ZF_OK)
        return st;
    /* metadata TTL: as given, else 60 s for remote stores and Icechunk repositories (a branch
     * follows its head), forever for local stores */
    hopts->metadata_ttl = ttl_given >= 0 ? ttl_given : zf_store_is_remote(store) ? 60 : 0;
    /* -o disk_cache: the remote store, wrapped (a local one is read as it is) */
    if (!open_disk_cache(o, hopts->metadata_ttl, &store)) {
        zf_store_close(store);
        err->msg[0] = '\0';
        return ZF_ERR_INVALID;
    }
    if (!icechunk) {
        *flag = is_directory_store(store);
    } else {
        if (!is_directory_store(store)) {
            zf_store_close(store);
            err->msg[0] = '\0';
            return ZF_ERR_NOT_FOUND;
        }
        if ((st = zf_store_icechunk_detect_open(store, sopts, &store, err)) != ZF_OK)
            return st; /* (the store closed) */
        if (!zf_store_is_icechunk(store)) {
            zf_store_close(store);
            err->msg[0] = '\0';
            return ZF_ERR_NOT_FOUND;
        }
        *flag = true;
        if (ttl_given < 0)
            hopts->metadata_ttl = 60;
    }
    /* A remote failure names the store (as the user gave it, any password hidden), since the
     * key alone ("zarr.json: connection refused") does not say where. */
    if (zf_store_is_remote(store))
        *remote_url = strdup(store->url);
    *opened = store; /* the hierarchy's, if it opens */
    return zf_hierarchy_open(store, shown, hopts, h, err);
}

/* The zf_versions of an Icechunk mount: its store's (ctx) versions. */
static zf_status ic_list(void *ctx, const char *kind, zf_store_listing *out, zf_err *err)
{
    return zf_icechunk_list(ctx, kind, out, err);
}
static zf_status ic_open(void *ctx, const char *kind, const char *name, zf_store **out,
                         zf_err *err)
{
    return zf_icechunk_open_version(ctx, kind, name, out, err);
}
static zf_status ic_file(void *ctx, const char *kind, const char *name, char **text,
                         size_t *len, zf_err *err)
{
    return zf_icechunk_file(ctx, kind, name, text, len, err);
}

int main(int argc, char *argv[])
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            join_sidecar_kinds(argv[++i]);
        else if (strncmp(argv[i], "-o", 2) == 0)
            join_sidecar_kinds(argv[i] + 2);
    }
    /* Before any thread: large buffers mapped on their own, few malloc arenas (zarrfs/mem.h) */
    zf_mem_tune_malloc(4);
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    zf_options o = {.retries = UINT_MAX};
    struct fuse_cmdline_opts cl = {0};
    zf_hierarchy *h = NULL;
    struct fuse_session *se = NULL;
    char *shown = NULL; /* the store as /proc/mounts, file names and logs show it */
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
    /* No password of a store URL in /proc/mounts (readable by every user), in the logs, or in
     * the command line. */
    if (o.store && !(shown = zf_url_redact(o.store)))
        goto out;
    if (o.store)
        hide_password_in_argv(argc, argv, o.store);
    char *mo = shown ? mount_opts(shown, o.rw) : NULL;
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
    zf_log_level level = cl.debug ? ZF_LOG_DEBUG : ZF_LOG_WARN;
    if (o.log_level && !zf_log_parse_level(o.log_level, &level)) {
        fprintf(stderr, "zarrfs: -o log_level=%s: expected error, warn, info or debug\n",
                o.log_level);
        goto out;
    }
    zf_log_set_level(level);

    zf_hierarchy_options hopts = {.cache_size = parse_size(o.cache_size ? o.cache_size
                                                                        : DEFAULT_CACHE_SIZE),
                                  .threads = o.threads, .readahead = o.readahead,
                                  .writable = o.rw,
                                  .write_empty_chunks = o.write_empty_chunks};
    if (o.sidecars_all)
        hopts.sidecars = ZF_SIDECAR_ALL;
    if (o.sidecars && !zf_sidecars_parse(o.sidecars, &hopts.sidecars)) {
        fprintf(stderr, "zarrfs: -o sidecars=%s: expected a list of envi, mhd, nhdr, npy, tif, nc\n",
                o.sidecars);
        goto out;
    }
    if (hopts.cache_size == 0) {
        fprintf(stderr, "zarrfs: -o cache_size=%s: expected a size such as 512M\n", o.cache_size);
        goto out;
    }
    zf_fs fs = {0};
    if (!parse_ownership(&o, &fs))
        goto out;
    if (o.metrics_file) { /* the daemon's cwd becomes / */
        char *abs = absolute_path(o.metrics_file);
        if (abs) {
            free(o.metrics_file);
            o.metrics_file = abs;
        }
    }
    zf_credentials creds = {0};
    char *netrc = NULL;
    if (!load_secrets(&o, &creds, &netrc))
        goto out;
    /* re-read by Azure stores when a SAS token from it expires (the daemon chdir()s to /) */
    char *cred_path = o.credentials ? absolute_path(o.credentials) : NULL;
    zf_store_options sopts = {
        .insecure = o.insecure, .anonymous = o.anonymous, .writable = o.rw,
        .retries = o.retries == UINT_MAX ? ZF_STORE_DEFAULT_RETRIES : o.retries,
        .timeout = ZF_STORE_DEFAULT_TIMEOUT,
        .max_connections = o.max_connections ? o.max_connections
                                             : ZF_STORE_DEFAULT_MAX_CONNECTIONS,
        .endpoint = o.endpoint, .region = o.region, .profile = o.profile, .account = o.account,
        .credentials = o.credentials ? &creds : NULL, .credentials_url = o.store,
        .credentials_path = cred_path, .netrc = netrc};
    if (o.timeout && !parse_seconds(o.timeout, false, &sopts.timeout)) {
        fprintf(stderr, "zarrfs: -o timeout=%s: expected a number of seconds > 0\n", o.timeout);
        zf_credentials_free(&creds);
        free(netrc);
        free(cred_path);
        goto out;
    }
    double ttl_given = -1;
    if (o.metadata_ttl && !parse_seconds(o.metadata_ttl, true, &ttl_given)) {
        fprintf(stderr, "zarrfs: -o metadata_ttl=%s: expected a number of seconds >= 0\n",
                o.metadata_ttl);
        zf_credentials_free(&creds);
        free(netrc);
        free(cred_path);
        goto out;
    }
    zf_icechunk_options icopts = {
        .ref = o.ref, .snapshot = o.snapshot,
        .virtual_chunks = (const char *const *)o.virtual_chunks,
        .nvirtual_chunks = o.nvirtual_chunks,
        .virtual_endpoints = (const char *const *)o.virtual_endpoints,
        .nvirtual_endpoints = o.nvirtual_endpoints,
        .metadata_ttl = ttl_given, .cache_bytes = hopts.cache_size / 4};
    sopts.icechunk = &icopts;
    zf_err err = {""};
    hopts.io_threads = sopts.max_connections;
    /* The store as a Zarr hierarchy; failing that, a directory store as an Icechunk repository
     * (probed only then: a Zarr store costs no request more). */
    bool icechunk = false, directory = false;
    char *remote_url = NULL;
    zf_store *store = NULL;
    zf_status st = open_hierarchy(&o, shown, &sopts, ttl_given, false, &hopts, &h, &directory,
                                  &remote_url, &store, &err);
    if (st == ZF_ERR_NOT_FOUND && directory) {
        zf_err ierr = {""};
        char *url2 = NULL;
        zf_status ist = open_hierarchy(&o, shown, &sopts, ttl_given, true, &hopts, &h, &icechunk,
                                       &url2, &store, &ierr);
        /* a repository, even one that failed to open: its answer, not the first one's */
        if (icechunk || ist != ZF_ERR_NOT_FOUND || ierr.msg[0]) {
            st = ist;
            err = ierr;
            free(remote_url);
            remote_url = url2;
        } else {
            free(url2);
        }
    }
    zf_credentials_free(&creds); /* every store opened has its copy */
    free(netrc);
    free(cred_path);
    if (st == ZF_OK && !icechunk && (o.ref || o.snapshot || o.nvirtual_chunks)) {
        fprintf(stderr, "zarrfs: -o ref, snapshot and virtual_chunks are for Icechunk "
                "repositories; %s is not one\n", shown);
        free(remote_url);
        goto out;
    }
    if (st != ZF_OK) {
        const char *msg = err.msg[0] ? err.msg : zf_status_str(st);
        if (remote_url && st == ZF_ERR_IO)
            fprintf(stderr, "zarrfs: %s: %s\n", remote_url, msg);
        else if (st != ZF_ERR_INVALID || msg[0])
            fprintf(stderr, "zarrfs: %s\n", msg);
        free(remote_url);
        goto out;
    }
    free(remote_url);

    if (!check_mountpoint(cl.mountpoint) ||
        !set_memory_limit(&o, hopts.cache_size,
                          zf_store_is_remote(store) ? sopts.max_connections : 0))
        goto out;
    if (icechunk) { /* the other versions, under .icechunk/ */
        size_t nk;
        const char *const *kinds = zf_icechunk_version_kinds(&nk);
        zf_versions v = {.dir_name = ".icechunk", .kinds = kinds, .nkinds = nk, .ctx = store,
                         .list = ic_list, .open = ic_open, .file = ic_file};
        zf_hierarchy_set_versions(h, &v);
    }
    if (o.rw && icechunk) {
        zf_log_warn("-o rw: Icechunk repositories are read-only in zarrfs (writing them is not "
                    "supported yet); mounting read-only");
        o.rw = 0;
        fuse_opt_add_arg(&args, "-oro");
    } else if (o.rw && zf_hierarchy_can_write(h, &err) != ZF_OK) {
        zf_log_warn("-o rw: %s; mounting read-only", err.msg);
        o.rw = 0;
        fuse_opt_add_arg(&args, "-oro");
    }
    fs.h = h;
    fs.rw = o.rw;
    fs.allow_delete = o.allow_delete;
    fs.direct_io = o.direct_io;
    se = fuse_session_new(&args, &zf_fuse_ops, sizeof zf_fuse_ops, &fs);
    if (!se)
        goto out;
    fs.se = se;
    if (fuse_set_signal_handlers(se) != 0)
        goto out_session;
    if (fuse_session_mount(se, cl.mountpoint) != 0) {
        fprintf(stderr, "zarrfs: cannot mount at %s\n", cl.mountpoint);
        goto out_signals;
    }
    if (fuse_fd_of(cl.mountpoint) < 0) /* a descriptor's mount point is the helper's */
        raise_readahead(cl.mountpoint, 1024);
    if (fuse_daemonize(cl.foreground) != 0)
        goto out_unmount;
    if (!cl.foreground)
        zf_log_to_syslog(true); /* stderr is /dev/null from here on */
    zf_log_info("mounted %s at %s", shown, cl.mountpoint);
    zf_mem_stats ms = zf_mem_get_stats();
    zf_log_info("memory_limit %zu MiB: %zu MiB for cached chunks and loads in progress",
                ms.limit >> 20, (ms.limit - ms.reserve) >> 20);
    /* After daemonizing (threads do not survive the fork), before any request. */
    if (!(fs.notifier = zf_notifier_start(se)))
        zf_log_warn("cannot start the notification thread: names of deleted arrays' sidecars "
                    "stay in the kernel until they expire");
    zf_hierarchy_on_gone(h, zf_fuse_gone, &fs);
    fs.metric_labels = metric_labels(cl.mountpoint, shown);
    stats_logger sl = {.fs = &fs, .seconds = o.stats_log, .tick = log_stats};
    stats_log_start(&sl);
    metrics_path = o.metrics_file;
    stats_logger mf = {.fs = &fs, .seconds = o.metrics_file ? (o.stats_log ? o.stats_log : 15) : 0,
                       .tick = write_metrics_file};
    if (o.metrics_file)
        write_metrics_file(&fs); /* at once, then every period */
    stats_log_start(&mf);
    stats_logger wb = {.fs = &fs, .seconds = o.rw ? 1 : 0, .tick = writeback_tick};
    stats_log_start(&wb);
    notify_systemd("READY=1");
    ret = run_loop(se, &cl);
    /* The loop returns the number of the signal that ended it: a clean unmount too. */
    ret = ret == 0 || ret == SIGTERM || ret == SIGINT || ret == SIGHUP ? 0 : 1;
    notify_systemd("STOPPING=1");
    stats_log_stop(&sl);
    stats_log_stop(&mf);
    stats_log_stop(&wb);
    free(fs.metric_labels);
    fs.metric_labels = NULL;
    zf_hierarchy_on_gone(h, NULL, NULL);
    zf_notifier_stop(fs.notifier); /* before the unmount closes the session's fd */
    fs.notifier = NULL;
    zf_log_info("unmounting %s", cl.mountpoint);
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
    free(shown);
    free(o.cache_size);
    free(o.memory_limit);
    free(o.log_level);
    free(o.timeout);
    free(o.metadata_ttl);
    free(o.sidecars);
    free(o.endpoint);
    free(o.account);
    free(o.metrics_file);
    free(o.region);
    free(o.profile);
    free(o.credentials);
    free(o.netrc);
    free(o.disk_cache);
    free(o.disk_cache_size);
    free(o.uid);
    free(o.gid);
    free(o.umask);
    free(o.file_mode);
    free(o.dir_mode);
    free(o.ref);
    free(o.snapshot);
    for (size_t i = 0; i < o.nvirtual_chunks; i++)
        free(o.virtual_chunks[i]);
    free(o.virtual_chunks);
    for (size_t i = 0; i < o.nvirtual_endpoints; i++)
        free(o.virtual_endpoints[i]);
    free(o.virtual_endpoints);
    fuse_opt_free_args(&args);
    return ret;
}
