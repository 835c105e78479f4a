/* test_mount_versions.c — a repository's versions through the FUSE layer (src/fuse/ops.c): a
 * daemon process serves zf_fuse_ops over a hierarchy given the mock provider of
 * tests/hierarchy/versions_mock.h (versions are plain Zarr v3 directories), mounted with
 * metadata_ttl 0.5 s, read-only and then with rw; this process checks what programs see: the
 * hidden directory (never listed, reached by name), kinds and names with their types and inode
 * numbers, a version's bytes and extended attributes, `diff -r` and `cp`, EROFS for every change
 * under both mounts, a deleted version and a branch log's new line after the TTL, the statistics
 * file. Needs /dev/fuse and permission to mount (fails without, or exits 77 with
 * ZARRFS_ALLOW_NO_FUSE=1); every mount is unmounted and every process waited for, under alarms. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "../hierarchy/versions_mock.h"
#include "fuse_ops.h"
#include "zarrfs/log.h"

#define TTL 0.5
#define SETTLE_US 1300000 /* past every timeout the kernel was given (TTL, 1 s on rw mounts) */

static int failures;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            failures++;                                                                        \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                    \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fprintf(stderr, "\n");                                                             \
        }                                                                                      \
    } while (0)

static char base[200], mnt[64], tmpdir[240];

/* The daemon: the hierarchy over BASE/main with the mock's versions, mounted at mnt until it
 * is unmounted. Says "ready" on fd once mounted. */
static int serve(bool rw, int ready)
{
    alarm(120);
    char main_dir[300];
    snprintf(main_dir, sizeof main_dir, "%s/main", base);
    zf_store *s;
    zf_hierarchy *h;
    zf_err err = {""};
    zf_hierarchy_options o = {.cache_size = 1 << 20, .threads = 2, .metadata_ttl = TTL,
                              .writable = rw};
    if (zf_store_file_open(main_dir, &s, &err) != ZF_OK ||
        zf_hierarchy_open(s, "repo.zarr", &o, &h, &err) != ZF_OK) {
        fprintf(stderr, "daemon: %s\n", err.msg);
        return 1;
    }
    zf_versions v = mock_versions(mock_attach(base));
    zf_hierarchy_set_versions(h, &v);
    zf_fs fs = {.h = h, .rw = rw, .uid = getuid(), .gid = getgid(), .file_mode = 0644,
                .dir_mode = 0755};
    char *argv[] = {"zarrfs-test", NULL};
    struct fuse_args args = FUSE_ARGS_INIT(1, argv);
    struct fuse_session *se = fuse_session_new(&args, &zf_fuse_ops, sizeof zf_fuse_ops, &fs);
    int ret = 1;
    if (!se)
        goto out;
    fs.se = se;
    if (fuse_set_signal_handlers(se) != 0)
        goto out_session;
    if (fuse_session_mount(se, mnt) != 0)
        goto out_signals;
    fs.notifier = zf_notifier_start(se);
    zf_hierarchy_on_gone(h, zf_fuse_gone, &fs);
    if (write(ready, "r", 1) != 1)
        goto out_unmount;
    struct fuse_loop_config *lc = fuse_loop_cfg_create();
    ret = lc ? fuse_session_loop_mt(se, lc) : 1;
    fuse_loop_cfg_destroy(lc);
    zf_hierarchy_on_gone(h, NULL, NULL);
    zf_notifier_stop(fs.notifier);
out_unmount:
    fuse_session_unmount(se);
out_signals:
    fuse_remove_signal_handlers(se);
out_session:
    fuse_session_destroy(se);
out:
    fuse_opt_free_args(&args);
    zf_hierarchy_free(h);
    return ret == 0 || ret == SIGTERM ? 0 : 1;
}

static const char *at(const char *rel)
{
    static char bufs[8][600];
    static int k;
    char *b = bufs[k++ % 8];
    snprintf(b, 600, "%s%s%s", mnt, rel[0] ? "/" : "", rel);
    return b;
}

/* The names of a directory with their d_type and d_ino; returns how many (-1: cannot open). */
typedef struct dent {
    char name[256];
    unsigned char type;
    ino_t ino;
} dent;

static int list_dir(const char *path, dent *out, int max)
{
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (n < max) {
            snprintf(out[n].name, sizeof out[n].name, "%s", de->d_name);
            out[n].type = de->d_type;
            out[n].ino = de->d_ino;
        }
        n++;
    }
    closedir(d);
    return n;
}

static const dent *find(const dent *d, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(d[i].name, name))
            return &d[i];
    return NULL;
}

/* Bytes of a file (up to max); -1 when it cannot be read. */
static ssize_t read_file(const char *path, void *buf, size_t max)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    size_t got = 0;
    for (ssize_t r; got < max && (r = read(fd, (char *)buf + got, max - got)) != 0;) {
        if (r < 0) {
            close(fd);
            return -1;
        }
        got += (size_t)r;
    }
    close(fd);
    return (ssize_t)got;
}

static void check_values(const char *rel, int seed)
{
    uint8_t got[32], want[16];
    mock_values(seed, want);
    ssize_t n = read_file(at(rel), got, sizeof got);
    CHECK(n == 16 && memcmp(got, want, 16) == 0, "%s: %zd bytes, not seed %d's", rel, n, seed);
}

/* errno of a call expected to fail with EROFS */
#define EXPECT_EROFS(call, what)                                                               \
    do {                                                                                       \
        errno = 0;                                                                             \
        long r_ = (long)(call);                                                                \
        CHECK(r_ < 0 && errno == EROFS, "%s: %ld, %s", what, r_, strerror(errno));             \
    } while (0)

static int run(const char *cmd)
{
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void checks(bool rw)
{
    dent d[32];
    /* the root: the hidden directory and the statistics file are not listed */
    int n = list_dir(at(""), d, 32);
    CHECK(n >= 1 && find(d, n, "a"), "root listing");
    CHECK(!find(d, n, ".icechunk") && !find(d, n, ".zarrfs-stats"), "hidden names listed");
    struct stat st;
    CHECK(stat(at(".icechunk"), &st) == 0 && S_ISDIR(st.st_mode), ".icechunk: %s",
          strerror(errno));
    n = list_dir(at(".icechunk"), d, 32);
    CHECK(n == 3 && find(d, n, "branches") && find(d, n, "tags") && find(d, n, "snapshots"),
          ".icechunk lists %d", n);
    n = list_dir(at(".icechunk/branches"), d, 32);
    const dent *bm = find(d, n, "main"), *bl = find(d, n, "main.log");
    CHECK(n == 2 && bm && bl, "branches lists %d", n);
    if (bm && bl) {
        CHECK(bm->type == DT_DIR && bl->type == DT_REG, "types %d %d", bm->type, bl->type);
        /* the inode number the listing gave is the directory's (opened after the listing) */
        CHECK(stat(at(".icechunk/branches/main"), &st) == 0 && st.st_ino == bm->ino &&
                  S_ISDIR(st.st_mode),
              "branches/main: ino %llu, listed %llu", (unsigned long long)st.st_ino,
              (unsigned long long)bm->ino);
        CHECK(stat(at(".icechunk/branches/main.log"), &st) == 0 && st.st_ino == bl->ino &&
                  S_ISREG(st.st_mode) && st.st_size == (off_t)strlen("S1 first commit\n"),
              "main.log: size %lld", (long long)st.st_size);
    }
    char text[256] = "";
    ssize_t tl = read_file(at(".icechunk/branches/main.log"), text, sizeof text - 1);
    CHECK(tl >= 0 && !strncmp(text, "S1 first commit\n", (size_t)tl) && tl == 16, "log: %.*s",
          (int)(tl > 0 ? tl : 0), text);

    /* a version's nodes: bytes, metadata, inode numbers of their own */
    check_values("a/b", 100);
    check_values(".icechunk/tags/v1/a/b", 10);
    check_values(".icechunk/tags/v2/a/b", 20);
    check_values(".icechunk/snapshots/S1/a/b", 30);
    check_values(".icechunk/snapshots/ARR/repo", 40); /* a root array: named as the store */
    struct stat sm, sv;
    CHECK(stat(at("a/b"), &sm) == 0 && stat(at(".icechunk/tags/v1/a/b"), &sv) == 0 &&
              sm.st_ino != sv.st_ino && sv.st_size == 16,
          "inodes %llu %llu", (unsigned long long)sm.st_ino, (unsigned long long)sv.st_ino);
    CHECK((sv.st_mode & 0222) == 0, "a version's file has write bits: %o", sv.st_mode);
    CHECK(rw == ((sm.st_mode & 0200) != 0), "the mount's file: mode %o", sm.st_mode);
    char x[256];
    ssize_t xl = getxattr(at(".icechunk/tags/v1/a/b"), "user.zarr.attributes", x, sizeof x - 1);
    x[xl > 0 ? xl : 0] = '\0';
    CHECK(xl > 0 && (strstr(x, "\"seed\": 10") || strstr(x, "\"seed\":10")), "attributes: %s", x);
    xl = getxattr(at(".icechunk/tags/v1"), "user.zarr.format", x, sizeof x - 1);
    CHECK(xl == 1 && x[0] == '3', "format of a version's root: %zd", xl);
    CHECK(listxattr(at(".icechunk"), x, sizeof x) == 0, "the hidden directory has xattrs");
    CHECK(getxattr(at(".icechunk/tags"), "user.zarr.format", x, sizeof x) < 0 &&
              errno == ENODATA, "a kind's user.zarr.format: %s", strerror(errno));

    /* programs: diff and cp */
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "diff -r %s %s", at(".icechunk/branches/main"), at(""));
    CHECK(run(cmd) == 0, "%s", cmd);
    snprintf(cmd, sizeof cmd, "diff -r -q %s %s >/dev/null", at(".icechunk/tags/v1"), at(""));
    CHECK(run(cmd) == 1, "%s: the versions are equal", cmd);
    snprintf(cmd, sizeof cmd, "cp %s %s/b", at(".icechunk/snapshots/S1/a/b"), tmpdir);
    CHECK(run(cmd) == 0, "%s", cmd);
    uint8_t got[32], want[16];
    mock_values(30, want);
    snprintf(cmd, sizeof cmd, "%s/b", tmpdir);
    CHECK(read_file(cmd, got, sizeof got) == 16 && !memcmp(got, want, 16), "copy");

    /* read-only, whatever the mount */
    const char *vb = at(".icechunk/tags/v1/a/b");
    EXPECT_EROFS(open(vb, O_WRONLY), "open for writing");
    EXPECT_EROFS(open(vb, O_RDWR), "open for reading and writing");
    EXPECT_EROFS(open(at(".icechunk/branches/main.log"), O_WRONLY), "open log for writing");
    EXPECT_EROFS(truncate(vb, 0), "truncate");
    EXPECT_EROFS(setxattr(vb, "user.zarr.attributes", "{}", 2, 0), "setxattr");
    EXPECT_EROFS(removexattr(vb, "user.zarr.attributes"), "removexattr");
    EXPECT_EROFS(unlink(vb), "unlink");
    EXPECT_EROFS(mkdir(at(".icechunk/tags/v1/new"), 0755), "mkdir in a version");
    EXPECT_EROFS(creat(at(".icechunk/tags/v1/new"), 0644), "create in a version");
    EXPECT_EROFS(mkdir(at(".icechunk/tags/new"), 0755), "mkdir in a kind");
    EXPECT_EROFS(mkdir(at(".icechunk/new"), 0755), "mkdir in the hidden directory");
    EXPECT_EROFS(rmdir(at(".icechunk/tags/v1")), "rmdir a version");
    EXPECT_EROFS(rmdir(at(".icechunk/tags/v1/a")), "rmdir in a version");
    EXPECT_EROFS(unlink(at(".icechunk/branches/main.log")), "unlink the log");
    EXPECT_EROFS(rename(vb, at(".icechunk/tags/v1/a/c")), "rename");
    EXPECT_EROFS(rmdir(at(".icechunk")), "rmdir the hidden directory");
    check_values(".icechunk/tags/v1/a/b", 10);

    /* the statistics file is the mount root's, beside the hidden directory */
    char stats[4096];
    ssize_t sl = read_file(at(".zarrfs-stats"), stats, sizeof stats - 1);
    stats[sl > 0 ? sl : 0] = '\0';
    CHECK(sl > 0 && strstr(stats, "\"requests\""), "stats");
    CHECK(stat(at(".icechunk/tags/v1/.zarrfs-stats"), &st) < 0 && errno == ENOENT,
          "stats in a version");

    /* after the TTL: a deleted tag is gone, a branch log has its new line */
    CHECK(stat(at(".icechunk/tags/v2"), &st) == 0, "v2");
    mock_version(base, "tags", "v2", false);
    mock_text(base, "branches", "main.log", "S2 second\nS1 first commit\n");
    usleep(SETTLE_US);
    CHECK(stat(at(".icechunk/tags/v2"), &st) < 0 && errno == ENOENT, "v2 after its deletion");
    n = list_dir(at(".icechunk/tags"), d, 32);
    CHECK(n == 1 && find(d, n, "v1"), "tags after the deletion: %d", n);
    tl = read_file(at(".icechunk/branches/main.log"), text, sizeof text - 1);
    text[tl > 0 ? tl : 0] = '\0';
    CHECK(!strcmp(text, "S2 second\nS1 first commit\n"), "new log: %s", text);
    CHECK(stat(at(".icechunk/branches/main.log"), &st) == 0 && st.st_size == (off_t)strlen(text),
          "new log's size %lld", (long long)st.st_size);
    /* as they were, for the next mount */
    mock_version(base, "tags", "v2", true);
    mock_text(base, "branches", "main.log", "S1 first commit\n");
}

static int mount_and_check(bool rw)
{
    int p[2];
    if (pipe(p) != 0)
        return 1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        exit(serve(rw, p[1])); /* (exit: a sanitizer's leak check runs) */
    }
    close(p[1]);
    struct pollfd pf = {.fd = p[0], .events = POLLIN};
    char c;
    bool up = poll(&pf, 1, 30000) == 1 && read(p[0], &c, 1) == 1;
    close(p[0]);
    if (up)
        checks(rw);
    else
        CHECK(up, "the daemon did not mount");
    char cmd[600];
    snprintf(cmd, sizeof cmd, "fusermount3 -u -z %s 2>/dev/null || umount -l %s 2>/dev/null",
             mnt, mnt);
    run(cmd);
    int st = 0;
    for (int i = 0; i < 200 && waitpid(pid, &st, WNOHANG) == 0; i++)
        usleep(50000);
    if (waitpid(pid, &st, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        CHECK(0, "the daemon did not end after the unmount");
    } else {
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "daemon status %d", st);
    }
    return 0;
}

int main(void)
{
    if (access("/dev/fuse", R_OK | W_OK) != 0) {
        const char *allow = getenv("ZARRFS_ALLOW_NO_FUSE");
        fprintf(stderr, "no /dev/fuse\n");
        return allow && !strcmp(allow, "1") ? 77 : 1;
    }
    alarm(300);
    zf_log_set_level(ZF_LOG_ERROR);
    mock *m = mock_new();
    snprintf(base, sizeof base, "%s", m->base);
    mock_destroy(m); /* (its files stay: each daemon attaches its own) */
    snprintf(mnt, sizeof mnt, "/tmp/zf-mnt-XXXXXX"); /* (outside base, which is removed) */
    if (!mkdtemp(mnt))
        return 1;
    snprintf(tmpdir, sizeof tmpdir, "%s/out", base);
    mkdir(tmpdir, 0755);
    mount_and_check(false);
    mount_and_check(true);
    rmdir(mnt); /* (fails if it is still mounted) */
    mock_remove_dir(base);
    fprintf(stderr, "%s: %d failures\n", failures ? "FAIL" : "OK", failures);
    return failures ? 1 : 0;
}
