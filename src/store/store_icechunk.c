/* store_icechunk.c — an Icechunk repository (specification versions 1 and 2) as a read-only Zarr
 * v3 store: a store adapter over the store holding the repository (a local directory, HTTP(S) or
 * S3), as kerchunk references are one over their targets.
 *
 * The key space is the one Icechunk's own store answers (icechunk/src/store.rs): `zarr.json` and
 * `PATH/zarr.json` are the user_data (the node's zarr.json) of the node at /PATH in the snapshot;
 * `PATH/c/I/J...` is chunk (I, J, ...) of the array at /PATH, found through the array's
 * ManifestRefs (the manifest whose extents hold the coordinates) in that manifest's ChunkRefs:
 * inline bytes, a byte range of `chunks/ID` (native), or a byte range of another object
 * (virtual). Listing a prefix lists the nodes below it (snapshot nodes are sorted by path: a
 * group's descendants are one run of them).
 *
 * Which snapshot: a store is opened on a branch (its head, re-read when older than the TTL: a
 * mounted branch follows commits made elsewhere), a tag, or one snapshot id. The stores of one
 * repository (the mount's and those of its versions, zf_icechunk_open_version) share one
 * `ic_repo`: the inner store, the configuration, the virtual-chunk stores, and a cache of parsed
 * snapshots and manifests bounded in bytes (manifests are read on first use of a chunk they
 * cover, per array and extent). Every value of a snapshot's keys reports the snapshot's commit
 * time as its modification time and its id as its ETag, so the hierarchy sees a new commit as
 * changed nodes.
 *
 * Virtual chunks (Icechunk's rule): only containers the repository's configuration declares,
 * and only those the user authorised at mount (a URL prefix; with or without its trailing '/');
 * each container is read through a store rooted at its url_prefix (the rest of the location is
 * the key, checked as every key is: no escape above the prefix), its endpoint and options from
 * the configuration unless the user overrides the endpoint, its credentials from the user's
 * (credentials file, environment). The checksum a reference keeps is checked on the response
 * itself: an ETag must equal the object's; a last-modified time means "not modified since". Any
 * other reference, or a failed check, is ZF_ERR_IO (the reader logs it, naming the container) — never the fill
 * value. */
#include <ctype.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zarrfs/icechunk.h"
#include "zarrfs/json.h"
#include "zarrfs/log.h"
#include "zarrfs/sbuf.h"
#include "zarrfs/store.h"

#include "store_impl.h"

#define IC_MAX_REF_JSON 4096          /* a spec-1 ref.json */
#define IC_MAX_CONFIG_YAML (1u << 20) /* a spec-1 config.yaml */
#define IC_MAX_FILE ((uint64_t)ZF_IC_MAX_PAYLOAD) /* a compressed snapshot or manifest */
#define IC_DEFAULT_TTL 60.0
#define IC_NBUCKETS 1024

enum { OBJ_SNAPSHOT = 1, OBJ_MANIFEST = 2 };
enum { AT_BRANCH, AT_TAG, AT_SNAPSHOT };

/* The ManifestRefs of one array node of a snapshot, unpacked once: looking a chunk up among
 * them through the FlatBuffers accessors for every chunk cost O(manifests) each (an array of
 * 10^5 chunks in 1,000 manifests: 86 % of the daemon's CPU on a whole read, 8x slower than the
 * same chunks as files; docs/benchmarks-history.md, "Icechunk"). */
typedef struct ic_extents {
    size_t n, ndim;
    bool slow;           /* extents that overlap or whose dimensions differ from the array's:
                            every lookup walks them all (find_chunk reports the fault) */
    atomic_size_t hint;  /* the ref that held the last chunk found (sequential reads) */
    uint32_t *box;       /* per ref: from[ndim] then to[ndim] */
} ic_extents;

/* A parsed snapshot or manifest in the repository's cache. */
typedef struct ic_obj {
    int type;
    uint8_t id[ZF_IC_ID_LEN];
    void *p; /* zf_ic_snapshot * or zf_ic_manifest * */
    ic_extents **ext; /* snapshots: per node, made on the first chunk lookup (r->mu) */
    size_t next_n;    /* entries of ext (the snapshot's nodes) */
    size_t bytes;
    unsigned refs;
    struct ic_obj *hnext;      /* hash chain */
    struct ic_obj *prev, *next; /* LRU list, most recent first */
} ic_obj;

/* A parsed repo info file, shared while in use. */
typedef struct ic_info {
    atomic_uint refs;
    zf_ic_repo *r;
} ic_info;

typedef struct ic_vstore {
    zf_store *store; /* the container's store, opened on first use (NULL: not yet) */
} ic_vstore;

typedef struct ic_repo {
    atomic_uint refs;
    zf_store *inner;
    char *url;       /* as the user named it, for messages */
    int spec;        /* 1: refs/ and config.yaml; 2: the repo file */
    double ttl;      /* seconds a branch head and the repo info are trusted; 0: for ever */
    zf_store_options vopts; /* options of the virtual-chunk stores (credentials: the user's) */
    zf_credentials vcreds;
    bool has_vcreds;
    char **authorized; /* user-authorised URL prefixes, each ending in '/' */
    size_t nauthorized;
    char **endpoint_prefix, **endpoint_url; /* user overrides of container endpoints */
    size_t nendpoints;
    zf_ic_config config;
    ic_vstore *vstores; /* one per container */
    pthread_mutex_t mu; /* everything below, the vstores */
    ic_info *info;      /* spec 2: the repo info, read at info_at */
    double info_at;
    ic_obj *buckets[IC_NBUCKETS];
    ic_obj *lru_head, *lru_tail;
    size_t cached_bytes, budget;
} ic_repo;

typedef struct ic_store {
    zf_store base;
    ic_repo *repo;
    int at;     /* AT_* */
    char *name; /* the branch or tag */
    pthread_mutex_t mu;
    ic_obj *cur;    /* the snapshot shown (a reference held) */
    double checked; /* monotonic time its head was last resolved */
    bool head_failed_logged;
    bool version; /* opened by zf_icechunk_open_version: shares the traffic of the repository,
                     which the mount's store reports (the hierarchy adds its versions' up) */
} ic_store;

static double mono_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- the cache of snapshots and manifests --------------------------------------------------- */

static size_t bucket_of(int type, const uint8_t id[ZF_IC_ID_LEN])
{
    uint64_t h = (uint64_t)type * 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < ZF_IC_ID_LEN; i++)
        h = (h ^ id[i]) * 0x100000001b3ull;
    return (size_t)(h % IC_NBUCKETS);
}

static void obj_free(ic_obj *o)
{
    for (size_t i = 0; o->ext && i < o->next_n; i++) {
        if (o->ext[i])
            free(o->ext[i]->box);
        free(o->ext[i]);
    }
    free(o->ext);
    if (o->type == OBJ_SNAPSHOT)
        zf_ic_snapshot_free(o->p);
    else
        zf_ic_manifest_free(o->p);
    free(o);
}

static void lru_unlink(ic_repo *r, ic_obj *o)
{
    if (o->prev)
        o->prev->next = o->next;
    else
        r->lru_head = o->next;
    if (o->next)
        o->next->prev = o->prev;
    else
        r->lru_tail = o->prev;
    o->prev = o->next = NULL;
}

static void lru_push(ic_repo *r, ic_obj *o)
{
    o->prev = NULL;
    o->next = r->lru_head;
    if (r->lru_head)
        r->lru_head->prev = o;
    r->lru_head = o;
    if (!r->lru_tail)
        r->lru_tail = o;
}

/* Drop unreferenced objects, least recently used first, until the cache is within its budget.
 * Called with r->mu held. */
static void evict_locked(ic_repo *r)
{
    ic_obj *o = r->lru_tail;
    while (o && r->cached_bytes > r->budget) {
        ic_obj *prev = o->prev;
        if (o->refs == 0) {
            ic_obj **pp = &r->buckets[bucket_of(o->type, o->id)];
            while (*pp != o)
                pp = &(*pp)->hnext;
            *pp = o->hnext;
            lru_unlink(r, o);
            r->cached_bytes -= o->bytes;
            obj_free(o);
        }
        o = prev;
    }
}

static void obj_release(ic_repo *r, ic_obj *o)
{
    if (!o)
        return;
    pthread_mutex_lock(&r->mu);
    o->refs--;
    evict_locked(r);
    pthread_mutex_unlock(&r->mu);
}

static zf_status read_metadata_file(ic_repo *r, const char *key, zf_bytes *b, zf_err *err)
{
    zf_status st = zf_store_get_bounded(r->inner, key, IC_MAX_FILE, b, err);
    if (st == ZF_ERR_NOT_FOUND)
        return zf_fail(err, ZF_ERR_NOT_FOUND, "%s: missing from the repository", key);
    if (st == ZF_ERR_TOO_LARGE)
        return zf_fail(err, ZF_ERR_CORRUPT, "%s: larger than %zu MiB", key,
                       (size_t)(IC_MAX_FILE >> 20));
    return st;
}

/* The snapshot or manifest id of type, from the cache or read and parsed (a reference the
 * caller releases with obj_release). A missing file is ZF_ERR_CORRUPT: the repository names it. */
static zf_status obj_get(ic_repo *r, int type, const uint8_t id[ZF_IC_ID_LEN], ic_obj **out,
                         zf_err *err)
{
    size_t b = bucket_of(type, id);
    pthread_mutex_lock(&r->mu);
    for (ic_obj *o = r->buckets[b]; o; o = o->hnext) {
        if (o->type == type && memcmp(o->id, id, ZF_IC_ID_LEN) == 0) {
            o->refs++;
            lru_unlink(r, o);
            lru_push(r, o);
            pthread_mutex_unlock(&r->mu);
            *out = o;
            return ZF_OK;
        }
    }
    pthread_mutex_unlock(&r->mu);

    char text[ZF_IC_ID_TEXT_LEN + 1], key[64];
    zf_ic_id_encode(id, text);
    snprintf(key, sizeof key, "%s/%s", type == OBJ_SNAPSHOT ? "snapshots" : "manifests", text);
    zf_bytes data = {0};
    zf_status st = read_metadata_file(r, key, &data, err);
    if (st == ZF_ERR_NOT_FOUND)
        st = ZF_ERR_CORRUPT; /* named by the repository, absent */
    if (st != ZF_OK)
        return st;
    ic_obj *o = calloc(1, sizeof *o);
    if (!o) {
        zf_bytes_free(&data);
        return ZF_ERR_NOMEM;
    }
    o->type = type;
    memcpy(o->id, id, ZF_IC_ID_LEN);
    o->refs = 1;
    if (type == OBJ_SNAPSHOT) {
        zf_ic_snapshot *s = NULL;
        st = zf_ic_snapshot_parse(data.data, data.len, &s, err);
        o->p = s;
        if (st == ZF_OK) {
            o->bytes = zf_ic_snapshot_bytes(s);
            zf_ic_snapshot_head h;
            zf_ic_snapshot_get_head(s, &h);
            if (memcmp(h.id, id, ZF_IC_ID_LEN) != 0)
                st = zf_fail(err, ZF_ERR_CORRUPT, "the snapshot's id is not its file name");
        }
    } else {
        zf_ic_manifest *m = NULL;
        st = zf_ic_manifest_parse(data.data, data.len, &m, err);
        o->p = m;
        if (st == ZF_OK)
            o->bytes = zf_ic_manifest_bytes(m);
    }
    zf_bytes_free(&data);
    if (st != ZF_OK) {
        if (o->p)
            obj_free(o);
        else
            free(o);
        if (st != ZF_ERR_NOMEM)
            zf_err_prefix(err, "%s", key);
        return st;
    }
    pthread_mutex_lock(&r->mu);
    for (ic_obj *x = r->buckets[b]; x; x = x->hnext) { /* another thread's copy came first */
        if (x->type == type && memcmp(x->id, id, ZF_IC_ID_LEN) == 0) {
            x->refs++;
            pthread_mutex_unlock(&r->mu);
            obj_free(o);
            *out = x;
            return ZF_OK;
        }
    }
    o->hnext = r->buckets[b];
    r->buckets[b] = o;
    lru_push(r, o);
    r->cached_bytes += o->bytes;
    evict_locked(r);
    pthread_mutex_unlock(&r->mu);
    *out = o;
    return ZF_OK;
}

/* ---- refs: the repo info file (spec 2) and refs/ (spec 1) ------------------------------------ */

static void info_release(ic_info *i)
{
    if (i && atomic_fetch_sub(&i->refs, 1) == 1) {
        zf_ic_repo_free(i->r);
        free(i);
    }
}

/* The repo info (spec 2), re-read when older than the TTL (or always with fresh). */
static zf_status repo_info(ic_repo *r, bool fresh, ic_info **out, zf_err *err)
{
    double now = mono_now();
    pthread_mutex_lock(&r->mu);
    if (r->info && !fresh && (r->ttl <= 0 || now - r->info_at < r->ttl)) {
        atomic_fetch_add(&r->info->refs, 1);
        *out = r->info;
        pthread_mutex_unlock(&r->mu);
        return ZF_OK;
    }
    pthread_mutex_unlock(&r->mu);
    zf_bytes b = {0};
    zf_status st = read_metadata_file(r, "repo", &b, err);
    ic_info *i = NULL;
    if (st == ZF_OK) {
        if (!(i = calloc(1, sizeof *i)))
            st = ZF_ERR_NOMEM;
        else if ((st = zf_ic_repo_parse(b.data, b.len, &i->r, err)) != ZF_OK)
            zf_err_prefix(err, "repo");
    }
    zf_bytes_free(&b);
    if (st != ZF_OK) {
        free(i);
        return st;
    }
    atomic_init(&i->refs, 2); /* the repository's and the caller's */
    pthread_mutex_lock(&r->mu);
    ic_info *old = r->info;
    r->info = i;
    r->info_at = now;
    pthread_mutex_unlock(&r->mu);
    info_release(old);
    *out = i;
    return ZF_OK;
}

/* A spec-1 ref file refs/KIND.NAME/ref.json: {"snapshot": "ID"}. */
static zf_status read_ref_json(ic_repo *r, const char *kind, const char *name,
                               uint8_t id[ZF_IC_ID_LEN], zf_err *err)
{
    char *key = NULL;
    if (asprintf(&key, "refs/%s.%s/ref.json", kind, name) < 0)
        return ZF_ERR_NOMEM;
    zf_bytes b = {0};
    zf_status st = zf_key_is_valid(key) ? zf_store_get_bounded(r->inner, key, IC_MAX_REF_JSON,
                                                               &b, err)
                                        : ZF_ERR_NOT_FOUND;
    if (st == ZF_OK && strcmp(kind, "tag") == 0) { /* a deleted tag keeps a tombstone */
        char *tomb = NULL;
        if (asprintf(&tomb, "%s.deleted", key) < 0) {
            zf_bytes_free(&b);
            free(key);
            return ZF_ERR_NOMEM;
        }
        uint64_t size;
        struct timespec mt;
        zf_status ts = zf_store_stat(r->inner, tomb, &size, &mt, NULL);
        free(tomb);
        if (ts == ZF_OK)
            st = ZF_ERR_NOT_FOUND;
        if (ts == ZF_OK)
            zf_bytes_free(&b);
    }
    if (st == ZF_ERR_TOO_LARGE)
        st = zf_fail(err, ZF_ERR_CORRUPT, "%s: larger than %u bytes", key, IC_MAX_REF_JSON);
    if (st != ZF_OK) {
        free(key);
        return st;
    }
    yajl_val doc = NULL;
    st = zf_json_parse(key, (const char *)b.data, b.len, &doc, err);
    zf_bytes_free(&b);
    if (st == ZF_OK) {
        yajl_val v = zf_json_get(doc, "snapshot");
        if (!v || !YAJL_IS_STRING(v) || !zf_ic_id_decode(YAJL_GET_STRING(v), id))
            st = zf_fail(err, ZF_ERR_CORRUPT,
                         "%s: \"snapshot\": expected a snapshot id of 20 base32 characters", key);
    } else {
        st = ZF_ERR_CORRUPT;
    }
    yajl_tree_free(doc);
    free(key);
    return st;
}

/* The snapshot id of branch (tag false) or tag `name`; with fresh, from the repo info read now
 * (spec 2). */
static zf_status resolve_ref(ic_repo *r, bool tag, const char *name, bool fresh,
                             uint8_t id[ZF_IC_ID_LEN], zf_err *err)
{
    if (r->spec == 1)
        return read_ref_json(r, tag ? "tag" : "branch", name, id, err);
    ic_info *i;
    zf_status st = repo_info(r, fresh, &i, err);
    if (st != ZF_OK)
        return st;
    size_t idx;
    if (zf_ic_repo_lookup_ref(i->r, tag, name, &idx)) {
        zf_ic_snapshot_info si;
        zf_ic_repo_snapshot(i->r, idx, &si);
        memcpy(id, si.id, ZF_IC_ID_LEN);
    } else {
        st = zf_fail(err, ZF_ERR_NOT_FOUND, "no %s \"%s\"", tag ? "tag" : "branch", name);
    }
    info_release(i);
    return st;
}

/* The snapshot id a store shows now: its snapshot, or its branch's or tag's target. */
static zf_status resolve_head(ic_store *s, bool fresh, uint8_t id[ZF_IC_ID_LEN], zf_err *err)
{
    if (s->at != AT_SNAPSHOT)
        return resolve_ref(s->repo, s->at == AT_TAG, s->name, fresh, id, err);
    zf_ic_snapshot_head h;
    zf_ic_snapshot_get_head(s->cur->p, &h);
    memcpy(id, h.id, ZF_IC_ID_LEN);
    return ZF_OK;
}

/* The snapshot the store shows (a reference the caller releases): for a branch, its head as
 * of at most the TTL ago. A head that cannot be read again keeps the last one (logged once). */
static zf_status current(ic_store *s, ic_obj **out, zf_err *err)
{
    ic_repo *r = s->repo;
    double now = mono_now();
    pthread_mutex_lock(&s->mu);
    if (s->cur && (s->at != AT_BRANCH || r->ttl <= 0 || now - s->checked < r->ttl)) {
        pthread_mutex_lock(&r->mu);
        s->cur->refs++;
        pthread_mutex_unlock(&r->mu);
        *out = s->cur;
        pthread_mutex_unlock(&s->mu);
        return ZF_OK;
    }
    s->checked = now; /* one thread re-reads; the others keep the last head meanwhile */
    ic_obj *cur = s->cur;
    if (cur) {
        pthread_mutex_lock(&r->mu);
        cur->refs++;
        pthread_mutex_unlock(&r->mu);
    }
    pthread_mutex_unlock(&s->mu);

    uint8_t id[ZF_IC_ID_LEN];
    zf_err herr = {""};
    zf_status st = resolve_head(s, true, id, &herr);
    ic_obj *next = NULL;
    if (st == ZF_OK && cur && memcmp(id, cur->id, ZF_IC_ID_LEN) == 0) {
        *out = cur;
        return ZF_OK;
    }
    if (st == ZF_OK)
        st = obj_get(r, OBJ_SNAPSHOT, id, &next, &herr);
    if (st != ZF_OK) {
        if (!cur) {
            if (err)
                *err = herr;
            return st;
        }
        pthread_mutex_lock(&s->mu);
        bool say = !s->head_failed_logged;
        s->head_failed_logged = true;
        pthread_mutex_unlock(&s->mu);
        if (say) {
            zf_log_warn("%s: branch %s: %s; showing its last head", r->url, s->name,
                        herr.msg[0] ? herr.msg : zf_status_str(st));
        }
        *out = cur;
        return ZF_OK;
    }
    char text[ZF_IC_ID_TEXT_LEN + 1];
    zf_ic_id_encode(id, text);
    zf_log_info("%s: branch %s is at snapshot %s", r->url, s->name, text);
    pthread_mutex_lock(&s->mu);
    ic_obj *old = s->cur;
    s->cur = next;
    pthread_mutex_lock(&r->mu);
    next->refs++; /* the store's and the caller's */
    pthread_mutex_unlock(&r->mu);
    pthread_mutex_unlock(&s->mu);
    obj_release(r, old);
    obj_release(r, cur);
    *out = next;
    return ZF_OK;
}

/* The modification time and ETag of every value of snapshot o. */
static void snapshot_version(const ic_obj *o, zf_store_version *ver)
{
    zf_ic_snapshot_head h;
    zf_ic_snapshot_get_head(o->p, &h);
    memset(ver, 0, sizeof *ver);
    ver->mtime.tv_sec = (time_t)(h.flushed_at / 1000000);
    ver->mtime.tv_nsec = (long)(h.flushed_at % 1000000) * 1000;
    char text[ZF_IC_ID_TEXT_LEN + 1];
    zf_ic_id_encode(h.id, text);
    snprintf(ver->etag, sizeof ver->etag, "\"%s\"", text);
}

/* The metadata of the root of a snapshot without a root node (a new repository's first): an
 * empty group, as Icechunk's store lists nothing there. */
#define EMPTY_ROOT "{\"zarr_format\": 3, \"node_type\": \"group\", \"attributes\": {}}"

/* ---- keys ------------------------------------------------------------------------------------ */

typedef struct ic_key {
    char *path;      /* the node's path: "/" or "/a/b" (malloc'd) */
    bool meta;       /* zarr.json */
    bool chunk;      /* a chunk key: coords below */
    size_t ndim;
    uint64_t coords[ZF_MAX_DIMS];
} ic_key;

static bool all_digits(const char *s, size_t n)
{
    if (n == 0 || n > 10)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* Split key into a node path and what it names there. ZF_ERR_NOT_FOUND for keys of neither form
 * (then k->path is the key as a path, for the caller's check). */
static zf_status parse_key(const char *key, ic_key *k)
{
    memset(k, 0, sizeof *k);
    size_t n = strlen(key);
    static const char meta[] = "zarr.json";
    size_t ml = sizeof meta - 1;
    if (n == ml && strcmp(key, meta) == 0) {
        k->meta = true;
        return (k->path = strdup("/")) ? ZF_OK : ZF_ERR_NOMEM;
    }
    if (n > ml + 1 && strcmp(key + n - ml, meta) == 0 && key[n - ml - 1] == '/') {
        k->meta = true;
        return asprintf(&k->path, "/%.*s", (int)(n - ml - 1), key) < 0 ? ZF_ERR_NOMEM : ZF_OK;
    }
    /* PATH/c/I/J...: the rightmost segment "c" followed only by numbers */
    const char *end = key + n, *seg_end = end;
    size_t ndim = 0;
    uint64_t rev[ZF_MAX_DIMS + 1];
    for (;;) {
        const char *seg = seg_end;
        while (seg > key && seg[-1] != '/')
            seg--;
        size_t sl = (size_t)(seg_end - seg);
        if (sl == 1 && seg[0] == 'c') {
            k->chunk = true;
            k->ndim = ndim;
            for (size_t i = 0; i < ndim; i++)
                k->coords[i] = rev[ndim - 1 - i];
            size_t pl = seg > key ? (size_t)(seg - key - 1) : 0;
            return asprintf(&k->path, "/%.*s", (int)pl, key) < 0 ? ZF_ERR_NOMEM : ZF_OK;
        }
        if (!all_digits(seg, sl) || ndim == ZF_MAX_DIMS || seg == key)
            break;
        rev[ndim++] = strtoull(seg, NULL, 10);
        seg_end = seg - 1;
    }
    if (asprintf(&k->path, "/%s", key) < 0)
        k->path = NULL;
    return ZF_ERR_NOT_FOUND;
}

/* Is some prefix of path (a key's path, "/a/b/x") an array of snapshot s? */
static bool below_array(const zf_ic_snapshot *s, const char *path)
{
    for (const char *p = path + 1; (p = strchr(p, '/')) != NULL; p++) {
        size_t idx;
        zf_ic_node nd;
        if (zf_ic_snapshot_find(s, path, (size_t)(p - path), &idx)) {
            zf_ic_snapshot_node(s, idx, &nd);
            if (nd.is_array)
                return true;
        }
    }
    size_t idx;
    zf_ic_node nd;
    if (zf_ic_snapshot_find(s, path, strlen(path), &idx)) {
        zf_ic_snapshot_node(s, idx, &nd);
        return nd.is_array;
    }
    return false;
}

/* ---- chunk references -------------------------------------------------------------------------- */

static bool box_holds(const uint32_t *box, size_t ndim, const uint64_t *coords)
{
    for (size_t d = 0; d < ndim; d++)
        if (coords[d] < box[d] || coords[d] >= box[ndim + d])
            return false;
    return true;
}

/* Do the extents of boxes a and b share a chunk? (An empty extent holds none.) */
static bool boxes_meet(const uint32_t *a, const uint32_t *b, size_t ndim)
{
    for (size_t d = 0; d < ndim; d++)
        if (a[d] >= a[ndim + d] || b[d] >= b[ndim + d] || a[d] >= b[ndim + d] ||
            b[d] >= a[ndim + d])
            return false;
    return true;
}

typedef struct box_start {
    uint32_t from; /* the first dimension's start */
    size_t j;
} box_start;

static int cmp_box_start(const void *a, const void *b)
{
    uint32_t x = ((const box_start *)a)->from, y = ((const box_start *)b)->from;
    return x < y ? -1 : x > y;
}

/* The unpacked ManifestRefs of array node idx of snapshot object so (made once, accounted in
 * the cache). NULL only for ZF_ERR_NOMEM. Called with r->mu held. */
static ic_extents *extents_locked(ic_repo *r, ic_obj *so, size_t idx, zf_status *st)
{
    const zf_ic_snapshot *s = so->p;
    *st = ZF_OK;
    if (!so->ext) {
        size_t nn = zf_ic_snapshot_nnodes(s);
        if (!(so->ext = calloc(nn ? nn : 1, sizeof *so->ext))) {
            *st = ZF_ERR_NOMEM;
            return NULL;
        }
        so->next_n = nn;
        so->bytes += nn * sizeof *so->ext;
        r->cached_bytes += nn * sizeof *so->ext;
    }
    if (so->ext[idx])
        return so->ext[idx];
    zf_ic_node nd;
    zf_ic_snapshot_node(s, idx, &nd);
    ic_extents *e = calloc(1, sizeof *e);
    size_t stride = 2 * nd.ndim;
    box_start *order = NULL;
    if (!e || (nd.nmanifests && nd.ndim &&
               !(e->box = malloc(nd.nmanifests * stride * sizeof *e->box)))) {
        free(e);
        *st = ZF_ERR_NOMEM;
        return NULL;
    }
    e->n = nd.nmanifests;
    e->ndim = nd.ndim;
    atomic_init(&e->hint, 0);
    zf_ic_manifest_ref mr;
    for (size_t j = 0; j < e->n && !e->slow && nd.ndim; j++) { /* (a 0-d array: no boxes) */
        zf_ic_snapshot_manifest_ref(s, idx, j, &mr);
        if (mr.ndim != nd.ndim) {
            e->slow = true;
            break;
        }
        memcpy(e->box + j * stride, mr.from, nd.ndim * sizeof *e->box);
        memcpy(e->box + j * stride + nd.ndim, mr.to, nd.ndim * sizeof *e->box);
    }
    /* overlapping extents: sorted by their first dimension's start, each compared with those
     * starting before it ends */
    if (!e->slow && e->n > 1 && nd.ndim) {
        if (!(order = malloc(e->n * sizeof *order))) {
            free(e->box);
            free(e);
            *st = ZF_ERR_NOMEM;
            return NULL;
        }
        for (size_t j = 0; j < e->n; j++)
            order[j] = (box_start){e->box[j * stride], j};
        qsort(order, e->n, sizeof *order, cmp_box_start);
        for (size_t a = 0; a < e->n && !e->slow; a++) {
            const uint32_t *ba = e->box + order[a].j * stride;
            for (size_t b = a + 1; b < e->n && order[b].from < ba[nd.ndim]; b++) {
                if (boxes_meet(ba, e->box + order[b].j * stride, nd.ndim)) {
                    e->slow = true;
                    break;
                }
            }
        }
        free(order);
    }
    size_t add = sizeof *e + (e->box ? e->n * stride * sizeof *e->box : 0);
    so->bytes += add;
    r->cached_bytes += add;
    so->ext[idx] = e;
    return e;
}

/* The reference of chunk k of array node `idx` of snapshot object so: ZF_ERR_NOT_FOUND when no
 * manifest holds it (the fill value). Two manifests whose extents both hold it: ZF_ERR_CORRUPT. */
static zf_status find_chunk(ic_repo *r, ic_obj *so, size_t idx, const ic_key *k,
                            zf_ic_chunk_ref *ref, ic_obj **mobj, zf_err *err)
{
    const zf_ic_snapshot *s = so->p;
    zf_ic_node nd;
    zf_ic_snapshot_node(s, idx, &nd);
    if (k->ndim != nd.ndim)
        return ZF_ERR_NOT_FOUND; /* not a chunk of this array (wrong number of indexes) */
    size_t found = SIZE_MAX;
    zf_ic_manifest_ref mr, chosen;
    zf_status st;
    pthread_mutex_lock(&r->mu);
    ic_extents *e = extents_locked(r, so, idx, &st);
    pthread_mutex_unlock(&r->mu);
    if (!e)
        return st;
    if (!e->slow && e->ndim) { /* disjoint extents: the first that holds the chunk */
        size_t stride = 2 * e->ndim, h = atomic_load_explicit(&e->hint, memory_order_relaxed);
        if (h < e->n && box_holds(e->box + h * stride, e->ndim, k->coords)) {
            found = h;
        } else {
            for (size_t j = 0; j < e->n; j++) {
                if (box_holds(e->box + j * stride, e->ndim, k->coords)) {
                    found = j;
                    atomic_store_explicit(&e->hint, j, memory_order_relaxed);
                    break;
                }
            }
        }
        if (found != SIZE_MAX)
            zf_ic_snapshot_manifest_ref(s, idx, found, &chosen);
    }
    for (size_t j = 0; (e->slow || !e->ndim) && j < nd.nmanifests; j++) {
        zf_ic_snapshot_manifest_ref(s, idx, j, &mr);
        if (mr.ndim != nd.ndim)
            return zf_fail(err, ZF_ERR_CORRUPT,
                           "%s: a manifest's extents have %zu dimensions, the array %zu",
                           nd.path, mr.ndim, nd.ndim);
        bool in = true;
        for (size_t d = 0; d < nd.ndim && in; d++)
            in = k->coords[d] >= mr.from[d] && k->coords[d] < mr.to[d];
        if (!in)
            continue;
        if (found != SIZE_MAX) {
            char a[ZF_IC_ID_TEXT_LEN + 1], b[ZF_IC_ID_TEXT_LEN + 1];
            zf_ic_id_encode(chosen.id, a);
            zf_ic_id_encode(mr.id, b);
            return zf_fail(err, ZF_ERR_CORRUPT,
                           "%s: the extents of manifests %s and %s overlap at this chunk",
                           nd.path, a, b);
        }
        found = j;
        chosen = mr;
    }
    if (found == SIZE_MAX)
        return ZF_ERR_NOT_FOUND;
    st = obj_get(r, OBJ_MANIFEST, chosen.id, mobj, err);
    if (st != ZF_OK)
        return st;
    st = zf_ic_manifest_find((*mobj)->p, nd.id, k->coords, k->ndim, ref, err);
    if (st != ZF_OK) {
        if (st != ZF_ERR_NOT_FOUND && st != ZF_ERR_NOMEM) {
            char a[ZF_IC_ID_TEXT_LEN + 1];
            zf_ic_id_encode(chosen.id, a);
            zf_err_prefix(err, "manifests/%s", a);
        }
        obj_release(r, *mobj);
        *mobj = NULL;
    }
    return st;
}

/* ---- virtual chunks -------------------------------------------------------------------------- */

/* prefix with a '/' appended unless it ends with one (or with "://"); malloc'd. */
static char *with_slash(const char *prefix)
{
    size_t n = strlen(prefix);
    bool keep = (n && prefix[n - 1] == '/');
    char *s = NULL;
    if (asprintf(&s, "%s%s", prefix, keep ? "" : "/") < 0)
        return NULL;
    return s;
}

static bool starts_with(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

/* The container of location: the declared one with the longest url_prefix (with '/') it starts
 * with; SIZE_MAX if none. */
static size_t container_of(const ic_repo *r, const char *location)
{
    size_t best = SIZE_MAX, best_len = 0;
    for (size_t i = 0; i < r->config.n; i++) {
        char *p = with_slash(r->config.containers[i].url_prefix);
        if (p && starts_with(location, p) && strlen(p) > best_len) {
            best = i;
            best_len = strlen(p);
        }
        free(p);
    }
    return best;
}

static bool authorized(const ic_repo *r, const char *location)
{
    for (size_t i = 0; i < r->nauthorized; i++)
        if (starts_with(location, r->authorized[i]))
            return true;
    return false;
}

/* Open the store at url with its scheme replaced by scheme (Icechunk's gcs:// and azure:// are
 * zarrfs's gs:// and az://). */
static zf_status open_renamed(const char *url, const char *scheme,
                              zf_status (*open)(const char *, const zf_store_options *,
                                                zf_store **, zf_err *),
                              const zf_store_options *o, zf_store **out, zf_err *err)
{
    char *u = NULL;
    if (asprintf(&u, "%s%s", scheme, strstr(url, "://") + 3) < 0)
        return ZF_ERR_NOMEM;
    zf_status st = open(u, o, out, err);
    free(u);
    return st;
}

/* The store of container c (opened on first use). Called with r->mu held. */
static zf_status vstore_locked(ic_repo *r, size_t c, zf_store **out, zf_err *err)
{
    if (r->vstores[c].store) {
        *out = r->vstores[c].store;
        return ZF_OK;
    }
    const zf_ic_container *ct = &r->config.containers[c];
    char *base = with_slash(ct->url_prefix);
    if (!base)
        return ZF_ERR_NOMEM;
    zf_store_options o = r->vopts;
    o.endpoint = ct->endpoint_url;
    for (size_t i = 0; i < r->nendpoints; i++) {
        char *p = with_slash(r->endpoint_prefix[i]);
        if (p && strcmp(p, base) == 0)
            o.endpoint = r->endpoint_url[i];
        free(p);
    }
    o.region = ct->region ? ct->region : r->vopts.region;
    o.anonymous = ct->anonymous || r->vopts.anonymous;
    o.icechunk = NULL;
    zf_status st;
    const char *k = ct->kind;
    bool s3 = !strcmp(k, "s3") || !strcmp(k, "s3_compatible") || !strcmp(k, "tigris");
    if (s3 && starts_with(base, "s3://"))
        st = zf_store_s3_open(base, &o, &r->vstores[c].store, err);
    else if (!strcmp(k, "http") && (starts_with(base, "http://") || starts_with(base, "https://")))
        st = zf_store_http_open(base, &o, &r->vstores[c].store, err);
    else if (!strcmp(k, "local_file_system") && starts_with(base, "file://"))
        st = zf_store_file_open(base + strlen("file://"), &r->vstores[c].store, err);
    else if (!strcmp(k, "gcs") && (starts_with(base, "gs://") || starts_with(base, "gcs://")))
        st = open_renamed(base, "gs://", zf_store_gcs_open, &o, &r->vstores[c].store, err);
    else if (!strcmp(k, "azure") && (starts_with(base, "az://") || starts_with(base, "azure://") ||
                                     starts_with(base, "abfs://"))) {
        if (ct->account) /* Icechunk's Azure options name the storage account */
            o.account = ct->account;
        st = starts_with(base, "abfs://")
                 ? zf_store_azure_open(base, &o, &r->vstores[c].store, err)
                 : open_renamed(base, "az://", zf_store_azure_open, &o, &r->vstores[c].store,
                                err);
    }
    else
        st = zf_fail(err, ZF_ERR_UNSUPPORTED,
                     "container %s: stores of kind \"%s\" at this URL are not supported", base,
                     k);
    free(base);
    if (st == ZF_OK)
        *out = r->vstores[c].store;
    return st;
}

/* Does the version read satisfy the reference's checksum? */
static zf_status check_checksum(zf_store *vs, const char *vkey, const zf_ic_chunk_ref *ref,
                                const zf_store_version *ver, zf_err *err)
{
    if (ref->etag) {
        const char *a = ref->etag, *b = ver->etag;
        if (!strncmp(b, "W/", 2))
            b += 2;
        size_t al = strlen(a), bl = strlen(b);
        if (al >= 2 && a[0] == '"' && a[al - 1] == '"')
            a++, al -= 2;
        if (bl >= 2 && b[0] == '"' && b[bl - 1] == '"')
            b++, bl -= 2;
        if (!ver->etag[0])
            return zf_fail(err, ZF_ERR_IO, "%s: the store gives no ETag to check the "
                           "reference's checksum against", ref->location);
        if (al != bl || memcmp(a, b, al) != 0)
            return zf_fail(err, ZF_ERR_IO, "%s: the object changed since the reference was "
                           "made (ETag %s, the reference's %s)", ref->location, ver->etag,
                           ref->etag);
    } else if (ref->last_modified) {
        struct timespec mt = ver->mtime;
        if (!mt.tv_sec && !mt.tv_nsec) {
            uint64_t size;
            if (zf_store_stat(vs, vkey, &size, &mt, NULL) != ZF_OK)
                mt = (struct timespec){0, 0};
        }
        if (!mt.tv_sec && !mt.tv_nsec)
            return zf_fail(err, ZF_ERR_IO, "%s: the store gives no modification time to "
                           "check the reference's checksum against", ref->location);
        if ((uint64_t)mt.tv_sec > ref->last_modified)
            return zf_fail(err, ZF_ERR_IO, "%s: the object was modified at %lld, after the "
                           "reference's checksum time %" PRIu32, ref->location,
                           (long long)mt.tv_sec, ref->last_modified);
    }
    return ZF_OK;
}

/* Bytes [off, off + len) of virtual chunk ref (already clamped to its length). */
static zf_status read_virtual(ic_repo *r, const zf_ic_chunk_ref *ref, uint64_t off,
                              uint64_t len, zf_bytes *out, zf_err *err)
{
    const char *loc = ref->location;
    size_t c = container_of(r, loc);
    zf_status st = ZF_OK;
    zf_store *vs = NULL;
    pthread_mutex_lock(&r->mu);
    if (c == SIZE_MAX)
        st = zf_fail(err, ZF_ERR_IO, "virtual chunk at %s: no virtual chunk container of the "
                     "repository's configuration holds it", loc);
    else if (!authorized(r, loc))
        st = zf_fail(err, ZF_ERR_IO, "virtual chunk at %s: container %s is not authorised "
                     "(mount with -o virtual_chunks=%s to read it)", loc,
                     r->config.containers[c].url_prefix, r->config.containers[c].url_prefix);
    else
        st = vstore_locked(r, c, &vs, err);
    pthread_mutex_unlock(&r->mu);
    if (st != ZF_OK) /* the reader logs the failure of its read, with this message */
        return st == ZF_ERR_NOMEM ? st : ZF_ERR_IO;
    char *base = with_slash(r->config.containers[c].url_prefix);
    if (!base)
        return ZF_ERR_NOMEM;
    const char *vkey = loc + strlen(base);
    free(base);
    if (!zf_key_is_valid(vkey))
        return zf_fail(err, ZF_ERR_IO, "virtual chunk at %s: not a key below its container",
                       loc);
    zf_store_version ver;
    memset(&ver, 0, sizeof ver);
    if (len == 0) /* nothing to read (the caller answers without bytes) */
        return ZF_OK;
    st = zf_store_read_versioned(vs, vkey, ZF_READ_RANGE, ref->offset + off, len, out, &ver, err);
    if (st == ZF_ERR_NOT_FOUND)
        st = zf_fail(err, ZF_ERR_IO, "virtual chunk at %s: the object is missing", loc);
    if (st == ZF_OK && (st = check_checksum(vs, vkey, ref, &ver, err)) == ZF_OK &&
        out->len != len)
        st = zf_fail(err, ZF_ERR_IO, "virtual chunk at %s: %zu bytes at %" PRIu64
                     " where the reference says %" PRIu64, loc, out->len, ref->offset + off, len);
    if (st != ZF_OK) {
        zf_bytes_free(out);
        return st == ZF_ERR_NOMEM ? st : ZF_ERR_IO;
    }
    return ZF_OK;
}

/* ---- reading --------------------------------------------------------------------------------- */

/* One read of key: the whole value (whole), else bytes [off, off + len); with only_size, no
 * bytes, the value's size in *size. The version of the snapshot in *ver. */
static zf_status ic_read(zf_store *st_, const char *key, bool whole, uint64_t off, uint64_t len,
                         bool only_size, zf_bytes *out, uint64_t *size, zf_store_version *ver,
                         zf_err *err)
{
    ic_store *s = (ic_store *)st_;
    ic_repo *r = s->repo;
    if (out) {
        out->data = NULL;
        out->len = 0;
    }
    ic_obj *so;
    zf_status st = current(s, &so, err);
    if (st != ZF_OK)
        return st;
    if (ver)
        snapshot_version(so, ver);
    const zf_ic_snapshot *snap = so->p;
    ic_key k;
    st = parse_key(key, &k);
    size_t idx = 0;
    zf_ic_node nd;
    if (st == ZF_ERR_NOT_FOUND) { /* not a key of Icechunk's forms */
        if (k.path && below_array(snap, k.path))
            st = zf_fail(err, ZF_ERR_IO, "%s: not a chunk key of Icechunk's form (c/I/J...)",
                         key);
        goto done;
    }
    if (st != ZF_OK)
        goto done;
    if (zf_ic_snapshot_find(snap, k.path, strlen(k.path), &idx)) {
        zf_ic_snapshot_node(snap, idx, &nd);
    } else if (k.meta && strcmp(k.path, "/") == 0) { /* no root node: an empty group */
        memset(&nd, 0, sizeof nd);
        nd.user_data = (const uint8_t *)EMPTY_ROOT;
        nd.user_data_len = strlen(EMPTY_ROOT);
    } else {
        st = ZF_ERR_NOT_FOUND;
        goto done;
    }
    const uint8_t *bytes = NULL;
    uint64_t total = 0;
    zf_ic_chunk_ref ref = {0};
    ic_obj *mo = NULL;
    if (k.meta) {
        bytes = nd.user_data;
        total = nd.user_data_len;
    } else if (!nd.is_array) {
        st = ZF_ERR_NOT_FOUND;
        goto done;
    } else {
        st = find_chunk(r, so, idx, &k, &ref, &mo, err);
        if (st != ZF_OK)
            goto done;
        if (ref.kind == ZF_IC_CHUNK_INLINE) {
            bytes = ref.inline_data;
            total = ref.inline_len;
        } else {
            total = ref.length;
        }
    }
    if (size)
        *size = total;
    if (ver) {
        ver->size = total;
        ver->has_size = true;
    }
    if (!only_size) {
        uint64_t a = whole ? 0 : off < total ? off : total;
        uint64_t n = whole ? total : len < total - a ? len : total - a;
        if (whole && total > ZF_STORE_MAX_VALUE)
            st = zf_store_refuse_large(err, key, ZF_STORE_MAX_VALUE, total, "in the manifest");
        else if (bytes || n == 0) {
            if (n && !(out->data = malloc(n)))
                st = ZF_ERR_NOMEM;
            else if (n)
                memcpy(out->data, bytes + a, n);
            out->len = n;
        } else if (ref.kind == ZF_IC_CHUNK_NATIVE) {
            char idt[ZF_IC_ID_TEXT_LEN + 1], ckey[48];
            zf_ic_id_encode(ref.chunk_id, idt);
            snprintf(ckey, sizeof ckey, "chunks/%s", idt);
            st = zf_store_get_partial(r->inner, ckey, ref.offset + a, n, out, err);
            if (st == ZF_ERR_NOT_FOUND)
                st = zf_fail(err, ZF_ERR_CORRUPT, "%s: chunk file %s is missing", key, ckey);
            else if (st == ZF_OK && out->len != n) {
                st = zf_fail(err, ZF_ERR_CORRUPT, "%s: %s holds %zu bytes at %" PRIu64
                             " where the manifest says %" PRIu64, key, ckey, out->len,
                             ref.offset + a, n);
                zf_bytes_free(out);
            }
        } else {
            st = read_virtual(r, &ref, a, n, out, err);
        }
    }
    zf_ic_chunk_ref_clear(&ref);
    obj_release(r, mo);
done:
    free(k.path);
    obj_release(r, so);
    return st;
}

static zf_status ic_get(zf_store *s, const char *key, zf_bytes *out, zf_err *err)
{
    return ic_read(s, key, true, 0, 0, false, out, NULL, NULL, err);
}

static zf_status ic_get_partial(zf_store *s, const char *key, uint64_t offset, uint64_t len,
                                zf_bytes *out, zf_err *err)
{
    return ic_read(s, key, false, offset, len, false, out, NULL, NULL, err);
}

static zf_status ic_stat(zf_store *s, const char *key, uint64_t *size, struct timespec *mtime,
                         zf_err *err)
{
    zf_store_version ver;
    uint64_t sz = 0;
    zf_status st = ic_read(s, key, false, 0, 0, true, NULL, &sz, &ver, err);
    if (st == ZF_OK) {
        if (size)
            *size = sz;
        if (mtime)
            *mtime = ver.mtime;
    }
    return st;
}

static zf_status ic_read_versioned(zf_store *s, const char *key, zf_read_kind kind,
                                   uint64_t offset, uint64_t len, zf_bytes *out,
                                   zf_store_version *ver, zf_err *err)
{
    switch (kind) {
    case ZF_READ_ALL: {
        zf_status st = ic_read(s, key, true, 0, 0, false, out, NULL, ver, err);
        if (st == ZF_OK && len && out->len > len) { /* a bounded get */
            zf_bytes_free(out);
            return zf_store_refuse_large(err, key, len, ver->size, "in the snapshot");
        }
        return st;
    }
    case ZF_READ_RANGE: return ic_read(s, key, false, offset, len, false, out, NULL, ver, err);
    case ZF_READ_SUFFIX: {
        uint64_t total = 0;
        zf_status st = ic_read(s, key, false, 0, 0, true, NULL, &total, ver, err);
        if (st != ZF_OK)
            return st;
        uint64_t n = len < total ? len : total;
        return ic_read(s, key, false, total - n, n, false, out, NULL, ver, err);
    }
    case ZF_READ_STAT:
        if (out) {
            out->data = NULL;
            out->len = 0;
        }
        return ic_read(s, key, false, 0, 0, true, NULL, NULL, ver, err);
    }
    return ZF_ERR_INVALID;
}

static zf_status ic_get_bounded(zf_store *s, const char *key, uint64_t max_size, zf_bytes *out,
                                zf_err *err)
{
    zf_store_version ver;
    return ic_read_versioned(s, key, ZF_READ_ALL, 0, max_size, out, &ver, err);
}

static zf_status listing_add(zf_store_listing *l, size_t *cap, const char *name, size_t n,
                             bool is_prefix)
{
    if (l->n == *cap) {
        size_t nc = *cap ? 2 * *cap : 16;
        zf_store_entry *e = realloc(l->entries, nc * sizeof *e);
        if (!e)
            return ZF_ERR_NOMEM;
        l->entries = e;
        *cap = nc;
    }
    if (!(l->entries[l->n].name = strndup(name, n)))
        return ZF_ERR_NOMEM;
    l->entries[l->n++].is_prefix = is_prefix;
    return ZF_OK;
}

static zf_status ic_list_dir(zf_store *st_, const char *prefix, zf_store_listing *out,
                             zf_err *err)
{
    ic_store *s = (ic_store *)st_;
    out->n = 0;
    out->entries = NULL;
    ic_obj *so;
    zf_status st = current(s, &so, err);
    if (st != ZF_OK)
        return st;
    const zf_ic_snapshot *snap = so->p;
    char *path = NULL; /* "/PREFIX" and room for a '/' after it */
    if (asprintf(&path, "/%s/", prefix) < 0) {
        obj_release(s->repo, so);
        return ZF_ERR_NOMEM;
    }
    size_t pl = strlen(path) - 1, idx, cap = 0;
    path[pl] = '\0';
    zf_ic_node nd;
    size_t first = 0; /* the first node that may be a child */
    if (zf_ic_snapshot_find(snap, path, pl, &idx)) {
        zf_ic_snapshot_node(snap, idx, &nd);
        first = idx + 1;
    } else if (pl == 1) { /* no root node: an empty group (its children, if any, listed) */
        memset(&nd, 0, sizeof nd);
    } else {
        st = ZF_ERR_NOT_FOUND;
        goto done;
    }
    if ((st = listing_add(out, &cap, "zarr.json", 9, false)) != ZF_OK)
        goto done;
    if (nd.is_array) {
        st = listing_add(out, &cap, "c", 1, true);
        goto done;
    }
    /* children: the nodes that start with PATH/, one run in path order but not always right
     * after PATH ("/a-b" sorts between "/a" and "/a/b"): from the first path >= "PATH/" */
    size_t cl = pl == 1 ? 1 : pl + 1; /* length of "PATH/" */
    size_t nn = zf_ic_snapshot_nnodes(snap);
    path[cl - 1] = '/';
    size_t lo = first, hi = nn;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        zf_ic_node c;
        zf_ic_snapshot_node(snap, mid, &c);
        size_t m = c.path_len < cl ? c.path_len : cl;
        int d = memcmp(c.path, path, m);
        if (d < 0 || (d == 0 && c.path_len < cl))
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < nn && st == ZF_OK; i++) {
        zf_ic_node c;
        zf_ic_snapshot_node(snap, i, &c);
        if (c.path_len <= cl || strncmp(c.path, path, pl) != 0 || c.path[cl - 1] != '/')
            break;
        const char *name = c.path + cl;
        if (!memchr(name, '/', c.path_len - cl))
            st = listing_add(out, &cap, name, c.path_len - cl, true);
    }
done:
    if (st != ZF_OK) {
        zf_store_listing_free(out);
        out->n = 0;
        out->entries = NULL;
    }
    free(path);
    obj_release(s->repo, so);
    return st;
}

static void repo_release(ic_repo *r)
{
    if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    for (size_t b = 0; b < IC_NBUCKETS; b++) {
        for (ic_obj *o = r->buckets[b], *n; o; o = n) {
            n = o->hnext;
            obj_free(o);
        }
    }
    info_release(r->info);
    for (size_t i = 0; i < r->config.n; i++)
        zf_store_close(r->vstores ? r->vstores[i].store : NULL);
    free(r->vstores);
    zf_ic_config_free(&r->config);
    for (size_t i = 0; i < r->nauthorized; i++)
        free(r->authorized[i]);
    free(r->authorized);
    for (size_t i = 0; i < r->nendpoints; i++) {
        free(r->endpoint_prefix[i]);
        free(r->endpoint_url[i]);
    }
    free(r->endpoint_prefix);
    free(r->endpoint_url);
    if (r->has_vcreds)
        zf_credentials_free(&r->vcreds);
    zf_store_close(r->inner);
    pthread_mutex_destroy(&r->mu);
    free(r->url);
    free(r);
}

static void ic_destroy(zf_store *st_)
{
    ic_store *s = (ic_store *)st_;
    if (s->cur)
        obj_release(s->repo, s->cur);
    repo_release(s->repo);
    pthread_mutex_destroy(&s->mu);
    free(s->name);
    free(s->base.url);
    free(s->base.location);
    free(s);
}

/* What reached the repository's store and the virtual chunks' stores. */
static void ic_traffic(zf_store *st_, zf_store_stats *out)
{
    ic_store *s = (ic_store *)st_;
    ic_repo *r = s->repo;
    *out = (zf_store_stats){0};
    if (s->version) /* the repository's traffic is the store it was opened from's */
        return;
    zf_store_get_stats(r->inner, out);
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->config.n; i++)
        if (r->vstores[i].store)
            zf_store_stats_add(out, r->vstores[i].store);
    pthread_mutex_unlock(&r->mu);
}

static const zf_store_ops icechunk_ops = {
    .scheme = "icechunk",
    .get = ic_get,
    .get_partial = ic_get_partial,
    .stat = ic_stat,
    .list_dir = ic_list_dir,
    .destroy = ic_destroy,
    .read_versioned = ic_read_versioned,
    .traffic = ic_traffic,
    .get_bounded = ic_get_bounded,
};

bool zf_store_is_icechunk(const zf_store *s) { return s && s->ops == &icechunk_ops; }

/* ---- opening --------------------------------------------------------------------------------- */

/* A new store of repo r at (at, name) showing snapshot id (NULL: resolve the head now). */
static zf_status store_new(ic_repo *r, int at, const char *name, const uint8_t *id,
                           zf_store **out, zf_err *err)
{
    ic_store *s = calloc(1, sizeof *s);
    if (!s)
        return ZF_ERR_NOMEM;
    s->base.ops = &icechunk_ops;
    s->base.remote = r->inner->remote;
    s->at = at;
    pthread_mutex_init(&s->mu, NULL);
    atomic_fetch_add(&r->refs, 1);
    s->repo = r;
    char idt[ZF_IC_ID_TEXT_LEN + 1] = "";
    if (id)
        zf_ic_id_encode(id, idt);
    const char *what = at == AT_BRANCH ? "branch" : at == AT_TAG ? "tag" : "snapshot";
    if ((name && !(s->name = strdup(name))) ||
        asprintf(&s->base.url, "%s (%s %s)", r->url, what, name ? name : idt) < 0 ||
        asprintf(&s->base.location, "icechunk:%s:%s:%s",
                 r->inner->location ? r->inner->location : r->inner->url, what,
                 name ? name : idt) < 0) {
        s->base.url = s->base.location = NULL;
        ic_destroy(&s->base);
        return ZF_ERR_NOMEM;
    }
    uint8_t head[ZF_IC_ID_LEN];
    zf_status st = ZF_OK;
    if (!id) {
        st = resolve_head(s, false, head, err);
        id = head;
    }
    if (st == ZF_OK)
        st = obj_get(r, OBJ_SNAPSHOT, id, &s->cur, err);
    if (st != ZF_OK) {
        ic_destroy(&s->base);
        return st;
    }
    s->checked = mono_now();
    *out = &s->base;
    return ZF_OK;
}

/* Does key hold a ref file, {"snapshot": "ID"} (what spec 1 and 0.1 write; the id is checked
 * when the ref is read)? */
static bool holds_ref_json(zf_store *inner, const char *key)
{
    zf_bytes b = {0};
    if (zf_store_get_bounded(inner, key, IC_MAX_REF_JSON, &b, NULL) != ZF_OK)
        return false;
    yajl_val doc = NULL;
    bool ok = zf_json_parse(key, (const char *)b.data, b.len, &doc, NULL) == ZF_OK;
    yajl_val v = ok ? zf_json_get(doc, "snapshot") : NULL;
    ok = v && YAJL_IS_STRING(v); /* (an invalid id is then refused by name) */
    yajl_tree_free(doc);
    zf_bytes_free(&b);
    return ok;
}

/* Is there an Icechunk repository at the root of inner? *spec: 2 (a `repo` file with Icechunk's
 * header, file type repo info), 1 (refs/branch.main/ref.json holding a ref), 0 (no: what the
 * files hold decides, not their presence, so a server answering every key is not taken for a
 * repository). An Icechunk 0.1 repository (each branch version a numbered ref file, the first
 * ZZZZZZZZ.json, and msgpack snapshots) is ZF_ERR_UNSUPPORTED. */
static zf_status detect(zf_store *inner, int *spec, zf_err *err)
{
    *spec = 0;
    zf_bytes b = {0};
    zf_status st = zf_store_get_partial(inner, "repo", 0, ZF_IC_HEADER_LEN, &b, NULL);
    if (st == ZF_OK) {
        zf_ic_header h;
        bool repo = zf_ic_header_parse(b.data, b.len, &h, NULL) != ZF_ERR_CORRUPT &&
                    h.file_type == ZF_IC_FILE_REPO;
        zf_bytes_free(&b);
        if (repo) {
            *spec = 2;
            return ZF_OK;
        }
    }
    if (holds_ref_json(inner, "refs/branch.main/ref.json")) {
        *spec = 1;
        return ZF_OK;
    }
    if (holds_ref_json(inner, "refs/branch.main/ZZZZZZZZ.json"))
        return zf_fail(err, ZF_ERR_UNSUPPORTED,
                       "an Icechunk 0.1 repository (refs/branch.main/ZZZZZZZZ.json, msgpack "
                       "snapshots): not supported; upgrade it with Icechunk 1 or later");
    return ZF_OK;
}

static zf_status load_config(ic_repo *r, zf_err *err)
{
    zf_status st;
    if (r->spec == 2) {
        ic_info *i;
        if ((st = repo_info(r, false, &i, err)) != ZF_OK)
            return st;
        st = zf_ic_repo_config(i->r, &r->config, err);
        if (st != ZF_OK && st != ZF_ERR_NOMEM)
            zf_err_prefix(err, "repo: config");
        info_release(i);
    } else {
        zf_bytes b = {0};
        st = zf_store_get_bounded(r->inner, "config.yaml", IC_MAX_CONFIG_YAML, &b, err);
        if (st == ZF_ERR_NOT_FOUND)
            return ZF_OK; /* optional */
        if (st == ZF_ERR_TOO_LARGE)
            return zf_fail(err, ZF_ERR_CORRUPT, "config.yaml: larger than 1 MiB");
        if (st != ZF_OK)
            return st;
        st = zf_ic_config_yaml((const char *)b.data, b.len, &r->config, err);
        if (st != ZF_OK && st != ZF_ERR_NOMEM)
            zf_err_prefix(err, "config.yaml");
        zf_bytes_free(&b);
    }
    if (st == ZF_OK && r->config.n && !(r->vstores = calloc(r->config.n, sizeof *r->vstores)))
        st = ZF_ERR_NOMEM;
    return st;
}

zf_status zf_store_icechunk_detect_open(zf_store *inner, const zf_store_options *opts,
                                        zf_store **out, zf_err *err)
{
    int spec;
    zf_status st = detect(inner, &spec, err);
    if (st != ZF_OK || spec == 0) {
        if (st == ZF_OK)
            *out = inner; /* not a repository: the store as it is */
        else
            zf_store_close(inner);
        return st;
    }
    const zf_icechunk_options *io = opts ? opts->icechunk : NULL;
    static const zf_icechunk_options none = {.metadata_ttl = -1};
    if (!io)
        io = &none;
    ic_repo *r = calloc(1, sizeof *r);
    if (!r) {
        zf_store_close(inner);
        return ZF_ERR_NOMEM;
    }
    atomic_init(&r->refs, 1);
    pthread_mutex_init(&r->mu, NULL);
    r->inner = inner;
    r->spec = spec;
    r->ttl = io->metadata_ttl >= 0 ? io->metadata_ttl : IC_DEFAULT_TTL;
    r->budget = io->cache_bytes ? io->cache_bytes : (size_t)64 << 20;
    if (opts) {
        r->vopts = *opts;
        if (opts->credentials) { /* a copy: the caller's is freed after open */
            const zf_credentials *c = opts->credentials;
            zf_credentials *d = &r->vcreds;
            r->has_vcreds = true;
#define DUP(f) if (c->f && !(d->f = strdup(c->f))) st = ZF_ERR_NOMEM
            DUP(aws_access_key_id); DUP(aws_secret_access_key); DUP(aws_session_token);
            DUP(http_user); DUP(http_password); DUP(bearer_token);
#undef DUP
            r->vopts.credentials = d;
        }
        r->vopts.credentials_url = NULL; /* HTTP secrets go to the repository's origin only */
        r->vopts.netrc = NULL;
    }
    r->vopts.icechunk = NULL;
    if (st == ZF_OK && !(r->url = strdup(inner->url)))
        st = ZF_ERR_NOMEM;
    if (st == ZF_OK && io->nvirtual_chunks &&
        !(r->authorized = calloc(io->nvirtual_chunks, sizeof *r->authorized)))
        st = ZF_ERR_NOMEM;
    for (size_t i = 0; st == ZF_OK && i < io->nvirtual_chunks; i++) /* each ending in '/' */
        if (!(r->authorized[r->nauthorized++] = with_slash(io->virtual_chunks[i])))
            st = ZF_ERR_NOMEM;
    size_t ne = io->nvirtual_endpoints;
    if (st == ZF_OK && ne &&
        (!(r->endpoint_prefix = calloc(ne, sizeof *r->endpoint_prefix)) ||
         !(r->endpoint_url = calloc(ne, sizeof *r->endpoint_url))))
        st = ZF_ERR_NOMEM;
    for (size_t i = 0; st == ZF_OK && i < ne; i++) { /* PREFIX=URL */
        const char *e = io->virtual_endpoints[i], *eq = strstr(e, "=http");
        if (!eq) {
            st = zf_fail(err, ZF_ERR_INVALID, "virtual_endpoint=%s: expected PREFIX=URL", e);
            break;
        }
        r->nendpoints = i + 1; /* freed with the repository, whatever follows */
        if (!(r->endpoint_prefix[i] = strndup(e, (size_t)(eq - e))) ||
            !(r->endpoint_url[i] = strdup(eq + 1)))
            st = ZF_ERR_NOMEM;
    }
    if (st == ZF_OK)
        st = load_config(r, err);
    int at = AT_BRANCH;
    const char *name = "main";
    uint8_t id[ZF_IC_ID_LEN];
    bool by_id = false;
    if (st == ZF_OK && io->snapshot) {
        if (io->ref)
            st = zf_fail(err, ZF_ERR_INVALID, "give -o ref or -o snapshot, not both");
        else if (!zf_ic_id_decode(io->snapshot, id))
            st = zf_fail(err, ZF_ERR_INVALID, "-o snapshot=%s: expected a snapshot id of 20 "
                         "base32 characters", io->snapshot);
        at = AT_SNAPSHOT;
        name = NULL;
        by_id = true;
    } else if (st == ZF_OK && io->ref) {
        name = io->ref;
        /* a branch of that name, else a tag */
        zf_err perr;
        if (resolve_ref(r, false, name, false, id, &perr) != ZF_OK) {
            if (resolve_ref(r, true, name, false, id, &perr) == ZF_OK)
                at = AT_TAG;
            else
                st = zf_fail(err, ZF_ERR_NOT_FOUND, "-o ref=%s: no branch or tag of that name",
                             name);
        }
    }
    if (st == ZF_OK)
        st = store_new(r, at, name, by_id ? id : NULL, out, err);
    if (st == ZF_ERR_NOT_FOUND && !io->ref && !io->snapshot)
        zf_err_prefix(err, "branch main");
    if (st == ZF_OK) {
        zf_log_info("%s: Icechunk repository (spec %d)", r->url, spec);
        if (err && st == ZF_OK)
            err->msg[0] = '\0';
    }
    if (st != ZF_OK && err && err->msg[0])
        zf_err_prefix(err, "Icechunk repository");
    repo_release(r); /* the store holds its own reference */
    return st;
}

/* ---- versions (for the hierarchy's hidden directories) ---------------------------------------- */

static const char *const kinds[] = {"branches", "tags", "snapshots"};

const char *const *zf_icechunk_version_kinds(size_t *n)
{
    *n = sizeof kinds / sizeof *kinds;
    return kinds;
}

/* Names of branches (tags false) or tags, sorted as the repository keeps them. */
static zf_status ref_names(ic_repo *r, bool tags, char ***names, size_t *n, zf_err *err)
{
    *names = NULL;
    *n = 0;
    zf_status st = ZF_OK;
    if (r->spec == 2) {
        ic_info *i;
        if ((st = repo_info(r, false, &i, err)) != ZF_OK)
            return st;
        size_t m = zf_ic_repo_nrefs(i->r, tags);
        if (m && !(*names = calloc(m, sizeof **names)))
            st = ZF_ERR_NOMEM;
        for (size_t j = 0; st == ZF_OK && j < m; j++) {
            const char *name;
            size_t si;
            zf_ic_repo_ref(i->r, tags, j, &name, &si);
            if (!((*names)[(*n)++] = strdup(name)))
                st = ZF_ERR_NOMEM;
        }
        info_release(i);
        return st;
    }
    zf_store_listing l = {0};
    st = zf_store_list_dir(r->inner, "refs", &l, err);
    if (st == ZF_ERR_NOT_FOUND)
        return ZF_OK;
    if (st != ZF_OK)
        return st;
    const char *pre = tags ? "tag." : "branch.";
    if (l.n && !(*names = calloc(l.n, sizeof **names)))
        st = ZF_ERR_NOMEM;
    for (size_t j = 0; st == ZF_OK && j < l.n; j++) {
        if (!l.entries[j].is_prefix || !starts_with(l.entries[j].name, pre) ||
            !l.entries[j].name[strlen(pre)])
            continue;
        const char *name = l.entries[j].name + strlen(pre);
        uint8_t id[ZF_IC_ID_LEN];
        if (read_ref_json(r, tags ? "tag" : "branch", name, id, NULL) != ZF_OK)
            continue; /* deleted (a tombstone, or no ref.json) */
        if (!((*names)[(*n)++] = strdup(name)))
            st = ZF_ERR_NOMEM;
    }
    zf_store_listing_free(&l);
    return st;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

zf_status zf_icechunk_list(zf_store *store, const char *kind, zf_store_listing *out,
                           zf_err *err)
{
    ic_repo *r = ((ic_store *)store)->repo;
    out->n = 0;
    out->entries = NULL;
    char **names = NULL;
    size_t n = 0, cap = 0;
    zf_status st = ZF_OK;
    bool branches = !strcmp(kind, "branches");
    if (branches || !strcmp(kind, "tags")) {
        st = ref_names(r, !branches, &names, &n, err);
    } else if (!strcmp(kind, "snapshots")) {
        if (r->spec == 2) {
            ic_info *i;
            if ((st = repo_info(r, false, &i, err)) == ZF_OK) {
                size_t m = zf_ic_repo_nsnapshots(i->r);
                if (m && !(names = calloc(m, sizeof *names)))
                    st = ZF_ERR_NOMEM;
                for (size_t j = 0; st == ZF_OK && j < m; j++) {
                    zf_ic_snapshot_info si;
                    zf_ic_repo_snapshot(i->r, j, &si);
                    if (!(names[n] = malloc(ZF_IC_ID_TEXT_LEN + 1)))
                        st = ZF_ERR_NOMEM;
                    else
                        zf_ic_id_encode(si.id, names[n++]);
                }
                info_release(i);
            }
        } else {
            zf_store_listing l = {0};
            st = zf_store_list_dir(r->inner, "snapshots", &l, err);
            if (st == ZF_OK && l.n && !(names = calloc(l.n, sizeof *names)))
                st = ZF_ERR_NOMEM;
            for (size_t j = 0; st == ZF_OK && j < l.n; j++) {
                uint8_t id[ZF_IC_ID_LEN];
                if (l.entries[j].is_prefix || !zf_ic_id_decode(l.entries[j].name, id))
                    continue;
                if (!(names[n++] = strdup(l.entries[j].name)))
                    st = ZF_ERR_NOMEM;
            }
            zf_store_listing_free(&l);
        }
    } else {
        st = ZF_ERR_NOT_FOUND;
    }
    if (st == ZF_OK && n)
        qsort(names, n, sizeof *names, cmp_str);
    for (size_t j = 0; st == ZF_OK && j < n; j++) {
        if (!names[j][0] || strchr(names[j], '/'))
            continue;
        st = listing_add(out, &cap, names[j], strlen(names[j]), true);
        if (st == ZF_OK && branches) {
            char *log = NULL;
            if (asprintf(&log, "%s.log", names[j]) < 0)
                st = ZF_ERR_NOMEM;
            else
                st = listing_add(out, &cap, log, strlen(log), false);
            free(log);
        }
    }
    for (size_t j = 0; j < n; j++)
        free(names[j]);
    free(names);
    if (st != ZF_OK) {
        zf_store_listing_free(out);
        out->n = 0;
        out->entries = NULL;
    }
    return st;
}

/* store_new for a version of the mount's repository (its traffic counted by the mount's). */
static zf_status version_new(ic_repo *r, int at, const char *name, const uint8_t *id,
                             zf_store **out, zf_err *err)
{
    zf_status st = store_new(r, at, name, id, out, err);
    if (st == ZF_OK)
        ((ic_store *)*out)->version = true;
    return st;
}

zf_status zf_icechunk_open_version(zf_store *store, const char *kind, const char *name,
                                   zf_store **out, zf_err *err)
{
    ic_repo *r = ((ic_store *)store)->repo;
    uint8_t id[ZF_IC_ID_LEN];
    if (!strcmp(kind, "snapshots")) {
        if (!zf_ic_id_decode(name, id))
            return ZF_ERR_NOT_FOUND;
        char text[ZF_IC_ID_TEXT_LEN + 1];
        zf_ic_id_encode(id, text);
        if (strcmp(text, name) != 0)
            return ZF_ERR_NOT_FOUND; /* one name per snapshot: its canonical id */
        if (r->spec == 2) {
            ic_info *i;
            zf_status st = repo_info(r, false, &i, err);
            if (st != ZF_OK)
                return st;
            size_t idx;
            bool known = zf_ic_repo_find_snapshot(i->r, id, &idx);
            info_release(i);
            if (!known)
                return ZF_ERR_NOT_FOUND;
        } else { /* spec 1: the snapshots there are */
            char key[64];
            uint64_t size;
            struct timespec mt;
            snprintf(key, sizeof key, "snapshots/%s", text);
            zf_status st = zf_store_stat(r->inner, key, &size, &mt, err);
            if (st != ZF_OK)
                return st;
        }
        return version_new(r, AT_SNAPSHOT, NULL, id, out, err);
    }
    bool branch = !strcmp(kind, "branches");
    if (!branch && strcmp(kind, "tags") != 0)
        return ZF_ERR_NOT_FOUND;
    zf_status st = resolve_ref(r, !branch, name, false, id, err);
    if (st != ZF_OK)
        return st;
    return version_new(r, branch ? AT_BRANCH : AT_TAG, name, id, out, err);
}

/* One ancestry line: ID \t ISO 8601 UTC time \t message (\, tab, newline and CR escaped). */
static void log_line(zf_sbuf *b, const uint8_t id[ZF_IC_ID_LEN], uint64_t us, const char *msg)
{
    char text[ZF_IC_ID_TEXT_LEN + 1], when[64];
    zf_ic_id_encode(id, text);
    time_t t = (time_t)(us / 1000000);
    struct tm tm;
    gmtime_r(&t, &tm);
    size_t w = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + w, sizeof when - w, ".%06uZ", (unsigned)(us % 1000000));
    zf_sbuf_add(b, text, strlen(text));
    zf_sbuf_add(b, "\t", 1);
    zf_sbuf_add(b, when, strlen(when));
    zf_sbuf_add(b, "\t", 1);
    for (const char *m = msg ? msg : ""; *m; m++) {
        const char *e = *m == '\\' ? "\\\\" : *m == '\t' ? "\\t" : *m == '\n' ? "\\n"
                        : *m == '\r' ? "\\r" : NULL;
        if (e)
            zf_sbuf_add(b, e, 2);
        else
            zf_sbuf_add(b, m, 1);
    }
    zf_sbuf_add(b, "\n", 1);
}

zf_status zf_icechunk_file(zf_store *store, const char *kind, const char *name, char **text,
                           size_t *len, zf_err *err)
{
    ic_repo *r = ((ic_store *)store)->repo;
    size_t nl = strlen(name);
    if (strcmp(kind, "branches") != 0 || nl <= 4 || strcmp(name + nl - 4, ".log") != 0)
        return ZF_ERR_NOT_FOUND;
    char *branch = strndup(name, nl - 4);
    if (!branch)
        return ZF_ERR_NOMEM;
    uint8_t id[ZF_IC_ID_LEN];
    zf_status st = resolve_ref(r, false, branch, false, id, err);
    free(branch);
    if (st != ZF_OK)
        return st;
    zf_sbuf b = {0};
    if (r->spec == 2) {
        ic_info *i;
        if ((st = repo_info(r, false, &i, err)) != ZF_OK)
            return st;
        size_t idx, n = zf_ic_repo_nsnapshots(i->r);
        if (!zf_ic_repo_find_snapshot(i->r, id, &idx))
            st = zf_fail(err, ZF_ERR_CORRUPT, "repo: a branch names a snapshot it does not list");
        for (size_t steps = 0; st == ZF_OK && steps < n; steps++) {
            zf_ic_snapshot_info si;
            zf_ic_repo_snapshot(i->r, idx, &si);
            log_line(&b, si.id, si.flushed_at, si.message);
            if (si.parent < 0)
                break;
            idx = (size_t)si.parent;
            if (steps + 1 == n)
                st = zf_fail(err, ZF_ERR_CORRUPT, "repo: the snapshots' parents form a loop");
        }
        info_release(i);
    } else { /* spec 1: each snapshot names its parent */
        for (size_t steps = 0; st == ZF_OK; steps++) {
            ic_obj *o;
            if ((st = obj_get(r, OBJ_SNAPSHOT, id, &o, err)) != ZF_OK)
                break;
            zf_ic_snapshot_head h;
            zf_ic_snapshot_get_head(o->p, &h);
            log_line(&b, h.id, h.flushed_at, h.message);
            bool more = h.has_parent;
            memcpy(id, h.parent, ZF_IC_ID_LEN);
            obj_release(r, o);
            if (!more)
                break;
            if (steps > 1000000)
                st = zf_fail(err, ZF_ERR_CORRUPT, "snapshots: the parents form a loop");
        }
    }
    if (st == ZF_OK && b.oom)
        st = ZF_ERR_NOMEM;
    if (st != ZF_OK) {
        free(b.s);
        return st;
    }
    if (!b.s && !(b.s = strdup("")))
        return ZF_ERR_NOMEM;
    *text = b.s;
    *len = b.len;
    return ZF_OK;
}
