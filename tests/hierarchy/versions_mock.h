/* versions_mock.h — a zf_versions provider for tests whose versions are plain Zarr v3
 * directories written here: BASE/KIND/NAME is version NAME of KIND (a regular file there: a text
 * file of the kind); BASE/main is the mount's own hierarchy. Each hierarchy holds the group
 * "a" and in it the int32 array "a/b" of shape [4] in chunks of 2, whose elements are seed,
 * seed + 1, seed + 2, seed + 3 (little-endian raw chunks, as the v3 "bytes" codec stores them),
 * so that a version's bytes name the version.
 * Shared by the hierarchy's unit tests and the FUSE test. */
#ifndef ZARRFS_TESTS_VERSIONS_MOCK_H
#define ZARRFS_TESTS_VERSIONS_MOCK_H

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zarrfs/hierarchy.h"
#include "zarrfs/store.h"

#define MOCK_MAX_NAMES 16

typedef struct mock_entry {
    char kind[32];
    char name[64];
    bool is_dir;
} mock_entry;

/* The provider: list = the entries of BASE/KIND (directories: versions; regular files: text
 * files, their content the text) and the extra entries; open = a store of BASE/KIND/NAME;
 * file = BASE/KIND/NAME's bytes. Tests change what it says by changing those files. */
typedef struct mock {
    char base[200];
    pthread_mutex_t mu;
    mock_entry extra[MOCK_MAX_NAMES]; /* listed besides the files (names no file can have) */
    size_t nextra;
    _Atomic int opens, lists, files;
    unsigned open_delay_us;           /* each open sleeps this long (races widen) */
} mock;

static _Atomic int mock_destroyed;

static const char *const mock_kinds[] = {"branches", "tags", "snapshots"};

static inline void mock_write(const char *path, const void *data, size_t len)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0755);
            *p = '/';
        }
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        abort();
    }
    fclose(f);
}

static inline void mock_write_text(const char *dir, const char *key, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, key);
    mock_write(path, text, strlen(text));
}

#define MOCK_GROUP "{\"zarr_format\": 3, \"node_type\": \"group\", \"attributes\": {}}"
#define MOCK_ARRAY                                                                            \
    "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [4], \"data_type\": \"int32\", " \
    "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [2]}}, "      \
    "\"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": "      \
    "\"/\"}}, \"fill_value\": 0, \"codecs\": [{\"name\": \"bytes\", \"configuration\": "       \
    "{\"endian\": \"little\"}}], \"attributes\": {\"seed\": %d}}"

/* The four int32 elements of a/b, little-endian. */
static inline void mock_values(int seed, uint8_t out[16])
{
    for (int i = 0; i < 4; i++) {
        uint32_t v = (uint32_t)(seed + i);
        for (int b = 0; b < 4; b++)
            out[i * 4 + b] = (uint8_t)(v >> (8 * b));
    }
}

/* A Zarr v3 hierarchy at dir: a group root, group a, array a/b of seed's values. With
 * root_array, the root itself is that array instead. */
static inline void mock_hierarchy(const char *dir, int seed, bool root_array)
{
    char doc[1024], path[1024];
    uint8_t v[16];
    mock_values(seed, v);
    snprintf(doc, sizeof doc, MOCK_ARRAY, seed);
    const char *ap = root_array ? "" : "a/b/";
    if (!root_array) {
        mock_write_text(dir, "zarr.json", MOCK_GROUP);
        mock_write_text(dir, "a/zarr.json", MOCK_GROUP);
    }
    snprintf(path, sizeof path, "%s/%szarr.json", dir, ap);
    mock_write(path, doc, strlen(doc));
    snprintf(path, sizeof path, "%s/%sc/0", dir, ap);
    mock_write(path, v, 8);
    snprintf(path, sizeof path, "%s/%sc/1", dir, ap);
    mock_write(path, v + 8, 8);
}

/* Version name of kind leaves (present false: renamed to BASE/attic/KIND-NAME) or comes back. */
static inline void mock_version(const char *base, const char *kind, const char *name, bool present)
{
    char here[400], attic[400];
    snprintf(here, sizeof here, "%s/%s/%s", base, kind, name);
    snprintf(attic, sizeof attic, "%s/attic/%s-%s", base, kind, name);
    char dir[400];
    snprintf(dir, sizeof dir, "%s/attic", base);
    mkdir(dir, 0755);
    if (rename(present ? attic : here, present ? here : attic) != 0) {
        fprintf(stderr, "mock_version %s/%s: %s\n", kind, name, strerror(errno));
        abort();
    }
}

/* One more listed entry, whatever its name (a provider listing odd names, or a name twice). */
static inline void mock_append(mock *m, const char *kind, const char *name, bool is_dir)
{
    pthread_mutex_lock(&m->mu);
    if (m->nextra < MOCK_MAX_NAMES) {
        mock_entry *e = &m->extra[m->nextra++];
        snprintf(e->kind, sizeof e->kind, "%s", kind);
        snprintf(e->name, sizeof e->name, "%s", name);
        e->is_dir = is_dir;
    }
    pthread_mutex_unlock(&m->mu);
}

/* Text file name of kind now holds text (NULL: removed). */
static inline void mock_text(const char *base, const char *kind, const char *name, const char *text)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s/%s", base, kind, name);
    if (text) {
        char tmp[420];
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        mock_write(tmp, text, strlen(text));
        rename(tmp, path); /* whole, for a reader in another process */
    } else {
        unlink(path);
    }
}

static inline zf_status mock_list(void *ctx, const char *kind, zf_store_listing *out, zf_err *err)
{
    mock *m = ctx;
    m->lists++;
    char dir[400];
    snprintf(dir, sizeof dir, "%s/%s", m->base, kind);
    size_t cap = MOCK_MAX_NAMES;
    out->n = 0;
    if (!(out->entries = calloc(cap, sizeof *out->entries)))
        return ZF_ERR_NOMEM;
    DIR *d = opendir(dir);
    if (!d) {
        free(out->entries);
        out->entries = NULL;
        return errno == ENOENT ? ZF_ERR_NOT_FOUND
                               : zf_fail(err, ZF_ERR_IO, "%s: %s", dir, strerror(errno));
    }
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        if (de->d_name[0] == '.' || strstr(de->d_name, ".tmp"))
            continue;
        if (out->n == cap) {
            zf_store_entry *e = realloc(out->entries, (cap *= 2) * sizeof *e);
            if (!e)
                abort();
            out->entries = e;
        }
        out->entries[out->n].name = strdup(de->d_name);
        out->entries[out->n++].is_prefix = de->d_type == DT_DIR;
    }
    closedir(d);
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->nextra; i++)
        if (strcmp(m->extra[i].kind, kind) == 0) {
            if (out->n == cap) {
                zf_store_entry *e = realloc(out->entries, (cap *= 2) * sizeof *e);
                if (!e)
                    abort();
                out->entries = e;
            }
            out->entries[out->n].name = strdup(m->extra[i].name);
            out->entries[out->n++].is_prefix = m->extra[i].is_dir;
        }
    pthread_mutex_unlock(&m->mu);
    return ZF_OK;
}

static inline zf_status mock_open(void *ctx, const char *kind, const char *name, zf_store **out,
                           zf_err *err)
{
    mock *m = ctx;
    m->opens++;
    if (m->open_delay_us)
        usleep(m->open_delay_us);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s", m->base, kind, name);
    struct stat st;
    if (stat(path, &st) != 0)
        return zf_fail(err, ZF_ERR_NOT_FOUND, "%s/%s: no such version", kind, name);
    return zf_store_file_open(path, out, err);
}

static inline zf_status mock_file(void *ctx, const char *kind, const char *name, char **text,
                           size_t *len, zf_err *err)
{
    mock *m = ctx;
    m->files++;
    char path[400];
    snprintf(path, sizeof path, "%s/%s/%s", m->base, kind, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return errno == ENOENT ? ZF_ERR_NOT_FOUND
                               : zf_fail(err, ZF_ERR_IO, "%s: %s", path, strerror(errno));
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    if (!(*text = malloc(n ? n : 1)))
        return ZF_ERR_NOMEM;
    memcpy(*text, buf, n);
    *len = n;
    return ZF_OK;
}

static inline void mock_destroy(void *ctx)
{
    mock *m = ctx;
    pthread_mutex_destroy(&m->mu);
    free(m);
    mock_destroyed++;
}

/* The provider over a new mock (zf_hierarchy_set_versions takes it). */
static inline zf_versions mock_versions(mock *m)
{
    return (zf_versions){.dir_name = ".icechunk", .kinds = mock_kinds, .nkinds = 3, .ctx = m,
                         .list = mock_list, .open = mock_open, .file = mock_file,
                         .destroy = mock_destroy};
}

/* A mock over the directory base another mock wrote (a daemon process's own). */
static inline mock *mock_attach(const char *base)
{
    mock *m = calloc(1, sizeof *m);
    if (!m)
        abort();
    pthread_mutex_init(&m->mu, NULL);
    snprintf(m->base, sizeof m->base, "%s", base);
    return m;
}

/* A new mock below a fresh temporary directory: BASE/main (seed 100), the versions
 * branches/main (seed 100, as the mount's), tags/v1 (10), tags/v2 (20), snapshots/S1 (30),
 * snapshots/ARR (a root array, seed 40), the file branches/main.log; BASE/main also has a
 * group named .icechunk. */
static inline mock *mock_new(void)
{
    mock *m = calloc(1, sizeof *m);
    if (!m)
        abort();
    pthread_mutex_init(&m->mu, NULL);
    snprintf(m->base, sizeof m->base, "/tmp/zf-versions-XXXXXX");
    if (!mkdtemp(m->base))
        abort();
    char d[400];
    static const struct {
        const char *where;
        int seed;
        bool root_array;
    } hs[] = {{"main", 100, false},        {"branches/main", 100, false},
              {"tags/v1", 10, false},      {"tags/v2", 20, false},
              {"snapshots/S1", 30, false}, {"snapshots/ARR", 40, true}};
    for (size_t i = 0; i < sizeof hs / sizeof *hs; i++) {
        snprintf(d, sizeof d, "%s/%s", m->base, hs[i].where);
        mock_hierarchy(d, hs[i].seed, hs[i].root_array);
    }
    /* the mount's own group named as the hidden directory: shadowed by it, never listed */
    snprintf(d, sizeof d, "%s/main", m->base);
    mock_write_text(d, ".icechunk/zarr.json", MOCK_GROUP);
    mock_text(m->base, "branches", "main.log", "S1 first commit\n");
    return m;
}

static inline int mock_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* Remove a mock's directory (the mock itself goes with its hierarchy). */
static inline void mock_remove_dir(const char *base)
{
    nftw(base, mock_rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

#endif
