/* hierarchy.c — view paths to nodes, dialect detection, consolidated metadata, node cache.
 *
 * Where the node at view path P keeps its metadata, its chunks and its children, per dialect:
 * - Zarr v2 "Storage" and "Groups": P/.zarray or P/.zgroup, with P/.zattrs; chunks below P;
 *   children are sub-prefixes holding either. .zmetadata (consolidated metadata as
 *   zarr-python's consolidate_metadata writes it) replaces the documents and listings.
 * - Zarr v3 core "Storage"/"Metadata": P/zarr.json ("zarr.json" at the root); chunks below P;
 *   children are sub-prefixes holding a zarr.json, or the entries of the root zarr.json's
 *   "consolidated_metadata" when it has them. Writers such as zarrita.js put nodes at deep paths
 *   without documents for their parents: such a parent is an implicit group (v3_implicit below,
 *   docs/formats.md "Implicit groups"), a directory without metadata.
 * - Draft of 2020 ("Storage keys"): meta/root/P.array.json or meta/root/P.group.json (the root:
 *   meta/root.array.json, meta/root.group.json); chunks below data/root/P; children from
 *   list_dir("meta/root/P"): X.array.json, X.group.json and implicit groups (a prefix X with
 *   descendants but no document of its own).
 * - Draft of 2022: the same without "root": meta/P.array.json, meta/array.json for the root,
 *   data/P. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hierarchy_impl.h"
#include "zarrfs/json.h"
#include "zarrfs/log.h"
#include "zarrfs/mem.h"
#include "zarrfs/sbuf.h"

/* Threads storing written chunks (at least; remote stores: as many as requests). */
#define WRITEBACK_THREADS 8

/* ---------- small helpers ---------- */

char *zf_h_join(const char *prefix, const char *name)
{
    size_t a = strlen(prefix), b = strlen(name);
    char *s = malloc(a + b + 2);
    if (!s)
        return NULL;
    if (a) {
        memcpy(s, prefix, a);
        s[a] = '/';
        a++;
    }
    memcpy(s + a, name, b + 1);
    return s;
}

static size_t hash_path(const char *p)
{
    size_t h = 1469598103934665603ull;
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h;
}

/* The chain of path's bucket. */
static zf_node **bucket(const zf_hierarchy *h, const char *path)
{
    return &h->buckets[hash_path(path) & (h->nbuckets - 1)];
}

/* Twice as many buckets (mu held), so that chains stay short however many nodes are looked up;
 * without memory for it, the chains grow instead. */
static void grow_buckets(zf_hierarchy *h)
{
    size_t nb = h->nbuckets * 2;
    zf_node **b = calloc(nb, sizeof *b);
    if (!b)
        return;
    for (size_t i = 0; i < h->nbuckets; i++)
        for (zf_node *o = h->buckets[i], *next; o; o = next) {
            next = o->hnext;
            size_t k = hash_path(o->path) & (nb - 1);
            o->hnext = b[k];
            b[k] = o;
        }
    free(h->buckets);
    h->buckets = b;
    h->nbuckets = nb;
}

char *zf_root_array_name(const char *store_name)
{
    char *copy = strdup(store_name ? store_name : "");
    if (!copy)
        return NULL;
    if (strstr(copy, "://")) /* a URL's query (an Azure SAS token) and fragment are no name */
        copy[strcspn(copy, "?#")] = '\0';
    size_t n = strlen(copy);
    while (n > 0 && copy[n - 1] == '/')
        copy[--n] = '\0';
    char *base = strrchr(copy, '/');
    base = base ? base + 1 : copy;
    static const char *const suffixes[] = {".zarr3", ".zarr", ".zr3"};
    size_t bl = strlen(base);
    if (bl > 4 && strcmp(base + bl - 4, ".zip") == 0) /* a zip archive: x.zarr.zip is x */
        base[bl -= 4] = '\0';
    else if (bl > 5 && strcmp(base + bl - 5, ".json") == 0) /* kerchunk references */
        base[bl -= 5] = '\0';
    for (size_t i = 0; i < 3; i++) {
        size_t sl = strlen(suffixes[i]);
        if (bl >= sl && strcmp(base + bl - sl, suffixes[i]) == 0) {
            base[bl - sl] = '\0';
            break;
        }
    }
    char *name = strdup(base[0] && strcmp(base, ".") && strcmp(base, "..") ? base : "array");
    free(copy);
    return name;
}

/* The consolidated metadata's value for key (its first, as zf_json_get), or NULL. */
static yajl_val consolidated_get(const zf_hierarchy *h, const char *key)
{
    return zf_cindex_get(h->cindex, key);
}

/* zf_h_get_doc, and when the document comes from consolidated metadata, *parsed (if not NULL)
 * its parsed value there (else NULL). With mtime not NULL, a document read from the store gives
 * its modification time there from the same read (zero when the store does not know it, and for
 * one from consolidated metadata). */
static zf_status get_doc(zf_hierarchy *h, const char *key, char **text, size_t *len,
                         yajl_val *parsed, struct timespec *mtime, zf_err *err)
{
    if (parsed)
        *parsed = NULL;
    if (mtime)
        *mtime = (struct timespec){0, 0};
    if (h->consolidated && (h->format == ZF_FORMAT_V2 || strcmp(key, "zarr.json") != 0)) {
        yajl_val v;
        if (h->format == ZF_FORMAT_V2) {
            v = consolidated_get(h, key);
        } else { /* v3: "a/b/zarr.json" is the entry "a/b" */
            size_t kl = strlen(key), sl = strlen("/zarr.json");
            char *node = kl > sl ? strndup(key, kl - sl) : NULL;
            v = node ? consolidated_get(h, node) : NULL;
            free(node);
        }
        if (!v)
            return ZF_ERR_NOT_FOUND;
        *text = zf_json_dump(v);
        if (!*text)
            return ZF_ERR_NOMEM;
        *len = strlen(*text);
        if (parsed)
            *parsed = v;
        return ZF_OK;
    }
    /* A document larger than a JSON document may be is refused on the size its store announces
     * (a file's, a Content-Length, a zip entry's, a reference's), unread; one sent without a
     * length is cut off at the bound. Invalid metadata, as one zf_json_parse refuses. */
    zf_bytes b;
    zf_err serr = {""};
    zf_store_version ver;
    zf_status st = mtime ? zf_store_read_versioned(h->store, key, ZF_READ_ALL, 0,
                                                   ZF_JSON_MAX_TEXT, &b, &ver, &serr)
                         : zf_store_get_bounded(h->store, key, ZF_JSON_MAX_TEXT, &b, &serr);
    if (st == ZF_ERR_TOO_LARGE) {
        const char *r = strstr(serr.msg, "refusing a value larger than");
        const char *why = r ? strchr(r, '(') : NULL; /* "(N bytes announced)" */
        return zf_fail(err, ZF_ERR_INVALID, "%s: JSON document larger than %zu MiB %s", key,
                       ZF_JSON_MAX_TEXT >> 20, why ? why : serr.msg);
    }
    if (err && st != ZF_OK)
        *err = serr;
    if (st != ZF_OK)
        return st;
    char *t = realloc(b.data, b.len + 1);
    if (!t) {
        zf_bytes_free(&b);
        return ZF_ERR_NOMEM;
    }
    t[b.len] = '\0';
    *text = t;
    *len = b.len;
    if (mtime)
        *mtime = ver.mtime;
    return ZF_OK;
}

/* A metadata document: from consolidated metadata when present, else from the store.
 * *text is malloc'd. */
zf_status zf_h_get_doc(zf_hierarchy *h, const char *key, char **text, size_t *len, zf_err *err)
{
    return get_doc(h, key, text, len, NULL, NULL, err);
}

/* The time of a node whose document is key, read at read_at (get_doc: zero when unknown): that
 * time; else a stat's; a node of consolidated metadata, or one whose time the store cannot
 * give, the hierarchy's. */
static void doc_time(zf_hierarchy *h, const char *key, const struct timespec *read_at,
                     struct timespec *mtime)
{
    if (h->consolidated)
        *mtime = h->root_mtime;
    else if (read_at->tv_sec || read_at->tv_nsec)
        *mtime = *read_at;
    else if (zf_store_stat(h->store, key, NULL, mtime, NULL) != ZF_OK)
        *mtime = h->root_mtime;
}

/* Zarr v2 before zarr-python 2.8 wrote nested chunk keys ("0/0") without saying so in
 * .zarray. When the array directory holds a numbered sub-directory, the chunks are nested.
 * Asked when the array is first opened, not at its lookup: a listing of many arrays would
 * otherwise list each array's directory (a request each over HTTP). */
static void detect_nested_chunks(zf_hierarchy *h, const char *prefix, zf_array_meta *a)
{
    if (a->dimension_separator_given || a->ndim < 2)
        return;
    zf_store_listing l;
    if (zf_store_list_dir(h->store, prefix, &l, NULL) != ZF_OK)
        return;
    for (size_t i = 0; i < l.n; i++) {
        const char *nm = l.entries[i].name;
        if (l.entries[i].is_prefix && nm[0] && strspn(nm, "0123456789") == strlen(nm)) {
            a->key_encoding.separator = '/';
            zf_log_info("%s: chunks are in nested directories; reading them with '/'",
                        prefix[0] ? prefix : "/");
            break;
        }
    }
    zf_store_listing_free(&l);
}

/* Parse the v2 node whose keys lie below prefix. */
static zf_status load_meta_v2(zf_hierarchy *h, const char *prefix, zf_node_meta *m,
                              struct timespec *mtime, zf_err *err)
{
    char *karr = zf_h_join(prefix, ".zarray"), *kgrp = zf_h_join(prefix, ".zgroup"),
         *katt = zf_h_join(prefix, ".zattrs");
    char *text = NULL, *attrs = NULL;
    size_t len = 0, alen;
    zf_status st = ZF_ERR_NOMEM;
    if (!karr || !kgrp || !katt)
        goto out;
    bool is_array = true;
    const char *key = karr;
    yajl_val parsed; /* from consolidated metadata: not parsed again */
    struct timespec read_at; /* the document's time, from the read itself */
    st = get_doc(h, karr, &text, &len, &parsed, &read_at, err);
    if (st == ZF_ERR_NOT_FOUND) {
        is_array = false;
        key = kgrp;
        st = get_doc(h, kgrp, &text, &len, &parsed, &read_at, err);
    }
    if (st != ZF_OK)
        goto out;
    zf_err aerr = {""};
    zf_status ast = zf_h_get_doc(h, katt, &attrs, &alen, &aerr);
    if (ast == ZF_ERR_NOMEM || ast == ZF_ERR_INVALID) { /* too large: as if not JSON */
        st = ast == ZF_ERR_INVALID ? zf_fail(err, ast, "%s", aerr.msg) : ast;
        goto out;
    }
    if (parsed)
        st = zf_meta_parse_v2_parsed(is_array ? ZF_NODE_ARRAY : ZF_NODE_GROUP, key, text, len,
                                     parsed, attrs, m, err);
    else
        st = is_array ? zf_meta_parse_v2_array(key, text, len, attrs, m, err)
                      : zf_meta_parse_v2_group(key, text, len, attrs, m, err);
    if (st != ZF_OK)
        goto out;
    /* A node of consolidated metadata has the time of the document it comes from (a stat of
     * its own key would be a request per node over HTTP). */
    doc_time(h, key, &read_at, mtime);
out:
    free(karr);
    free(kgrp);
    free(katt);
    free(text);
    free(attrs);
    return st;
}

/* An implicit group (both v3 drafts; final v3, see v3_implicit): a directory without a document,
 * so without user.zarr.metadata; attributes "{}"; the hierarchy's time. */
static zf_status implicit_group_meta(zf_hierarchy *h, zf_node_meta *m, struct timespec *mtime)
{
    m->format = h->format;
    m->kind = ZF_NODE_GROUP;
    *mtime = h->root_mtime;
    return (m->attributes_json = strdup("{}")) ? ZF_OK : ZF_ERR_NOMEM;
}

static zf_status v3_implicit(zf_hierarchy *h, const char *path, zf_err *err);

/* The metadata document of one v3 node: P/zarr.json; without one, maybe an implicit group. */
static zf_status load_meta_v3(zf_hierarchy *h, const char *path, zf_node_meta *m,
                              struct timespec *mtime, zf_err *err)
{
    char *key = zf_h_join(path, "zarr.json"), *text = NULL;
    size_t len;
    struct timespec read_at;
    zf_status st = key ? get_doc(h, key, &text, &len, NULL, &read_at, err) : ZF_ERR_NOMEM;
    if (st == ZF_ERR_NOT_FOUND) {
        if ((st = v3_implicit(h, path, err)) == ZF_OK)
            st = implicit_group_meta(h, m, mtime);
    } else if (st == ZF_OK && (st = zf_meta_parse_v3(key, text, len, m, err)) == ZF_OK) {
        doc_time(h, key, &read_at, mtime); /* from consolidated metadata: its time, as v2 */
    }
    free(key);
    free(text);
    return st;
}

/* Draft keys: the metadata prefix of the node at path ("meta/root/a/b", "meta/a/b"; the root's
 * own documents are "meta/root.array.json" and "meta/array.json") and its data prefix. */
static char *draft_meta_prefix(zf_hierarchy *h, const char *path)
{
    const char *base = h->format == ZF_FORMAT_V3_DRAFT_2020 ? "meta/root" : "meta";
    return path[0] ? zf_h_join(base, path) : strdup(base);
}

static char *draft_doc_key(zf_hierarchy *h, const char *path, const char *kind)
{
    char *k;
    if (path[0]) {
        char *mp = draft_meta_prefix(h, path);
        k = mp && asprintf(&k, "%s.%s.json", mp, kind) >= 0 ? k : NULL;
        free(mp);
    } else if (h->format == ZF_FORMAT_V3_DRAFT_2020) {
        k = asprintf(&k, "meta/root.%s.json", kind) >= 0 ? k : NULL;
    } else {
        k = asprintf(&k, "meta/%s.json", kind) >= 0 ? k : NULL;
    }
    return k;
}

/* A draft node: an array document, a group document, or an implicit group (a metadata prefix
 * with something below it; the root always exists). */
static zf_status load_meta_draft(zf_hierarchy *h, const char *path, zf_node_meta *m,
                                 struct timespec *mtime, zf_err *err)
{
    char *ka = draft_doc_key(h, path, "array"), *kg = draft_doc_key(h, path, "group");
    char *text = NULL, *key = ka;
    size_t len;
    zf_status st = ka && kg ? zf_h_get_doc(h, ka, &text, &len, err) : ZF_ERR_NOMEM;
    if (st == ZF_OK) {
        st = zf_meta_parse_draft_array(h->format, ka, text, len, m, err);
    } else if (st == ZF_ERR_NOT_FOUND) {
        key = kg;
        st = zf_h_get_doc(h, kg, &text, &len, err);
        if (st == ZF_OK)
            st = zf_meta_parse_draft_group(h->format, kg, text, len, m, err);
    }
    if (st == ZF_ERR_NOT_FOUND) { /* implicit group? */
        key = NULL;
        char *mp = draft_meta_prefix(h, path);
        zf_store_listing l;
        st = !mp ? ZF_ERR_NOMEM
                 : path[0] ? zf_store_list_dir(h->store, mp, &l, NULL) : ZF_OK;
        if (st == ZF_OK && path[0])
            zf_store_listing_free(&l);
        free(mp);
        if (st == ZF_OK)
            st = implicit_group_meta(h, m, mtime);
    } else if (st == ZF_OK && zf_store_stat(h->store, key, NULL, mtime, NULL) != ZF_OK) {
        *mtime = h->root_mtime;
    }
    free(ka);
    free(kg);
    free(text);
    return st;
}

/* Parse the node at view path (whose store prefix is `prefix`: "" for a root array). */
zf_status zf_h_load_meta(zf_hierarchy *h, const char *prefix, zf_node_meta *m,
                           struct timespec *mtime, zf_err *err)
{
    switch (h->format) {
    case ZF_FORMAT_V2: return load_meta_v2(h, prefix, m, mtime, err);
    case ZF_FORMAT_V3: return load_meta_v3(h, prefix, m, mtime, err);
    default: return load_meta_draft(h, prefix, m, mtime, err);
    }
}

/* The prefix of the chunk keys of the node at (store) path. */
char *zf_h_data_prefix(zf_hierarchy *h, const char *path)
{
    switch (h->format) {
    case ZF_FORMAT_V3_DRAFT_2020: return path[0] ? zf_h_join("data/root", path) : strdup("data/root");
    case ZF_FORMAT_V3_DRAFT_2022: return path[0] ? zf_h_join("data", path) : strdup("data");
    default: return strdup(path);
    }
}

zf_node *zf_h_insert_id_locked(zf_hierarchy *h, zf_node *n)
{
    if (h->nnodes + 1 >= ((uint64_t)1 << ZF_VERSION_SHIFT))
        return NULL; /* (ids of its own, below a version's: 2^40 nodes is far beyond memory) */
    if (h->nnodes == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        zf_node **nb = realloc(h->by_id, cap * sizeof *nb);
        if (!nb)
            return NULL;
        h->by_id = nb;
        h->cap = cap;
    }
    h->by_id[h->nnodes++] = n;
    n->id = h->id_base + h->nnodes;
    n->owner = h;
    return n;
}

/* Insert a node (mu held); returns the node now in the table for its path. */
zf_node *zf_h_insert_locked(zf_hierarchy *h, zf_node *n)
{
    for (zf_node *o = *bucket(h, n->path); o; o = o->hnext)
        if (strcmp(o->path, n->path) == 0)
            return o;
    if (!zf_h_insert_id_locked(h, n))
        return NULL;
    if (h->nnodes > h->nbuckets)
        grow_buckets(h);
    zf_node **b = bucket(h, n->path);
    n->hnext = *b;
    *b = n;
    return n;
}

void zf_h_node_free(zf_node *n)
{
    if (!n)
        return;
    zf_array_close(n->array);
    zf_hierarchy_names_free(n->listing, n->nlisting);
    zf_cindex_free(n->cindex);
    if (n->cdoc)
        yajl_tree_free(n->cdoc);
    zf_node_meta_free(&n->meta);
    free(n->dhdr);
    free(n->dsegs);
    pthread_mutex_destroy(&n->mu);
    free(n->path);
    free(n->prefix);
    free(n);
}

zf_node *zf_h_node_new(const char *path, const char *prefix)
{
    zf_node *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    pthread_mutex_init(&n->mu, NULL);
    n->path = strdup(path);
    n->prefix = strdup(prefix);
    if (!n->path || !n->prefix) {
        zf_h_node_free(n);
        return NULL;
    }
    return n;
}

double zf_h_mono_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Take a node out of the path table (mu held); it stays in by_id for open files. */
void zf_h_unlink_locked(zf_hierarchy *h, zf_node *n)
{
    for (zf_node **pp = bucket(h, n->path); *pp; pp = &(*pp)->hnext)
        if (*pp == n) {
            *pp = n->hnext;
            n->hnext = NULL;
            return;
        }
}

static bool same_text(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

zf_node *zf_h_find_locked(zf_hierarchy *h, const char *path)
{
    for (zf_node *o = *bucket(h, path); o; o = o->hnext)
        if (strcmp(o->path, path) == 0)
            return o;
    return NULL;
}

/* ---------- public ---------- */

static zf_status lookup_real(zf_hierarchy *h, const char *path, zf_node **out, zf_err *err);
static zf_status child(zf_hierarchy *h, zf_node *dir, const char *name, bool entry,
                       zf_node **out, zf_err *err);

/* A real node first; then, with -o sidecars, a file derived from an array (sidecar.c). A
 * derived node is checked against its array each time (remade when the array changed). */
static zf_status lookup_any(zf_hierarchy *h, const char *path, bool entry, zf_node **out,
                            zf_err *err)
{
    if (!h->sidecars)
        return lookup_real(h, path, out, err);
    pthread_mutex_lock(&h->mu);
    zf_node *known = zf_h_find_locked(h, path);
    bool derived = known && known->derived;
    pthread_mutex_unlock(&h->mu);
    if (derived)
        return zf_h_sidecar_lookup(h, path, entry, out, err);
    zf_status st = lookup_real(h, path, out, err);
    if (st == ZF_ERR_NOT_FOUND)
        st = zf_h_sidecar_lookup(h, path, entry, out, err);
    return st;
}

/* A path into the versions tree (ROOT/<dir_name>/...): each name from the root in turn, as the
 * FUSE layer's lookups go. */
static zf_status lookup_versions(zf_hierarchy *h, const char *path, zf_node **out, zf_err *err)
{
    zf_node *n;
    zf_status st = lookup_any(h, "", false, &n, err);
    char *copy = strdup(path), *save = NULL;
    if (!copy)
        return ZF_ERR_NOMEM;
    for (char *seg = strtok_r(copy, "/", &save); seg && st == ZF_OK;
         seg = strtok_r(NULL, "/", &save))
        st = child(h, n, seg, false, &n, err);
    free(copy);
    if (st == ZF_OK)
        *out = n;
    return st;
}

zf_status zf_hierarchy_lookup(zf_hierarchy *h, const char *path, zf_node **out, zf_err *err)
{
    if (h->versions) {
        const char *slash = strchr(path, '/');
        size_t first = slash ? (size_t)(slash - path) : strlen(path);
        zf_node *root;
        if (first && lookup_any(h, "", false, &root, NULL) == ZF_OK) {
            char *name = strndup(path, first);
            bool versions = name && zf_h_versions_route(h, root, name);
            free(name);
            if (versions)
                return lookup_versions(h, path, out, err);
        }
    }
    return lookup_any(h, path, false, out, err);
}

zf_status zf_h_lookup_real(zf_hierarchy *h, const char *path, zf_node **out, zf_err *err)
{
    return lookup_real(h, path, out, err);
}

static zf_status lookup_real(zf_hierarchy *h, const char *path, zf_node **out, zf_err *err)
{
    double now = zf_h_mono_now();
    pthread_mutex_lock(&h->mu);
    zf_node *stale = zf_h_find_locked(h, path);
    /* The root keeps its id (FUSE's root inode, a version's directory) and is read once. */
    if (stale && (h->ttl <= 0 || stale->id == h->id_base + 1 || stale->pending ||
                  now - stale->loaded < h->ttl)) {
        pthread_mutex_unlock(&h->mu);
        *out = stale;
        return ZF_OK;
    }
    pthread_mutex_unlock(&h->mu);
    zf_node *n;
    /* View path -> store prefix; every view path below a root array is absent. */
    const char *prefix = path;
    if (h->root_array_name) {
        if (strcmp(path, h->root_array_name) != 0)
            return ZF_ERR_NOT_FOUND;
        prefix = "";
    } else if (path[0] && !zf_key_is_valid(path)) {
        return ZF_ERR_NOT_FOUND;
    }
    n = zf_h_node_new(path, prefix);
    if (!n)
        return ZF_ERR_NOMEM;
    zf_status st = zf_h_load_meta(h, prefix, &n->meta, &n->mtime, err);
    n->loaded = now;
    if (stale && st == ZF_ERR_NOT_FOUND) { /* gone from the store */
        pthread_mutex_lock(&h->mu);
        zf_h_unlink_locked(h, stale);
        pthread_mutex_unlock(&h->mu);
        zf_h_meta_changed(h);
        zf_h_names_gone(h, stale, true, true);
    }
    if (st != ZF_OK) {
        zf_h_node_free(n);
        return st;
    }
    /* Unchanged: the same documents at the same time (a store whose chunks change under
     * unchanged metadata, as a repository whose branch moved, gives its documents a new time). */
    if (stale && stale->meta.kind == n->meta.kind &&
        stale->mtime.tv_sec == n->mtime.tv_sec && stale->mtime.tv_nsec == n->mtime.tv_nsec &&
        same_text(stale->meta.metadata_json, n->meta.metadata_json) &&
        same_text(stale->meta.attributes_json, n->meta.attributes_json)) {
        pthread_mutex_lock(&h->mu); /* unchanged: trust it for another TTL */
        stale->loaded = now;
        pthread_mutex_unlock(&h->mu);
        zf_h_node_free(n);
        *out = stale;
        return ZF_OK;
    }
    if (stale) { /* changed: the new node takes the path */
        pthread_mutex_lock(&h->mu);
        zf_h_unlink_locked(h, stale);
        pthread_mutex_unlock(&h->mu);
    }
    n->is_dir = n->meta.kind == ZF_NODE_GROUP;
    if (n->is_dir && n->meta.unsupported != ZF_OK) { /* e.g. a must_understand extension */
        st = zf_fail(err, n->meta.unsupported, "%s",
                     n->meta.unsupported_why ? n->meta.unsupported_why : "unsupported group");
        zf_h_node_free(n);
        return st;
    }
    if (!n->is_dir && n->meta.unsupported == ZF_OK)
        n->size = zf_h_array_nbytes(&n->meta.array);
    else if (!n->is_dir) /* undecodable: its real size, reads fail (zf_hierarchy_array) */
        zf_array_meta_flat_size(&n->meta.array, &n->size);
    st = zf_h_publish(h, n, NULL, out);
    if (stale) { /* what the kernel was told about the old node and its sidecars is stale */
        zf_h_meta_changed(h);
        zf_h_names_gone(h, stale, true, false);
    }
    return st;
}

zf_status zf_h_publish(zf_hierarchy *h, zf_node *n, zf_node *replaces, zf_node **out)
{
    pthread_mutex_lock(&h->mu);
    if (replaces)
        zf_h_unlink_locked(h, replaces);
    zf_node *in = zf_h_insert_locked(h, n);
    pthread_mutex_unlock(&h->mu);
    if (in != n) /* another thread's copy won (or no memory) */
        zf_h_node_free(n);
    if (!in)
        return ZF_ERR_NOMEM;
    *out = in;
    return ZF_OK;
}

static zf_status child(zf_hierarchy *h, zf_node *dir, const char *name, bool entry,
                       zf_node **out, zf_err *err)
{
    h = zf_h_owner(h, dir);
    if (h->versions && zf_h_versions_route(h, dir, name))
        return zf_h_versions_child(h, dir, name, entry, out, err);
    if (!dir->is_dir || !name[0] || strchr(name, '/') || strcmp(name, ".") == 0 ||
        strcmp(name, "..") == 0)
        return ZF_ERR_NOT_FOUND;
    char *path = zf_h_join(dir->path, name);
    if (!path)
        return ZF_ERR_NOMEM;
    zf_status st = lookup_any(h, path, entry, out, err);
    free(path);
    return st;
}

zf_status zf_hierarchy_child(zf_hierarchy *h, zf_node *dir, const char *name, zf_node **out,
                             zf_err *err)
{
    return child(h, dir, name, false, out, err);
}

zf_status zf_hierarchy_child_entry(zf_hierarchy *h, zf_node *dir, const char *name,
                                   zf_node **out, zf_err *err)
{
    return child(h, dir, name, true, out, err);
}

zf_node *zf_h_own_node(zf_hierarchy *h, uint64_t id)
{
    pthread_mutex_lock(&h->mu);
    zf_node *n = id > h->id_base && id - h->id_base <= h->nnodes ? h->by_id[id - h->id_base - 1]
                                                                 : NULL;
    pthread_mutex_unlock(&h->mu);
    if (n && n->synthetic && n->derived) /* a text file of the versions tree: read once */
        return zf_h_versions_file_ready(h, n, NULL) == ZF_OK ? n : NULL;
    if (n && n->derived) {
        if (!zf_h_sidecar_current(h, n))
            return NULL; /* its array is gone: the name leads elsewhere or nowhere now */
        zf_h_sidecar_refresh(h, n);
    }
    return n;
}

zf_node *zf_hierarchy_node(zf_hierarchy *h, uint64_t id)
{
    h = zf_h_root(h); /* (the mount's knows its versions) */
    if (id >> ZF_VERSION_SHIFT)
        return h->versions ? zf_h_versions_node(h, id) : NULL;
    return zf_h_own_node(h, id);
}

bool zf_hierarchy_node_in_versions(const zf_node *n)
{
    return n->synthetic || (n->owner && n->owner->parent);
}

void zf_hierarchy_node_stat(zf_node *n, uint64_t *size, struct timespec *mtime)
{
    pthread_mutex_lock(&n->mu);
    *size = n->size;
    *mtime = n->mtime;
    uint64_t text;
    if (!n->is_dir && n->array && zf_array_text_size(n->array, &text))
        *size = text; /* a text file read to its end once: its exact size from now on */
    pthread_mutex_unlock(&n->mu);
}

bool zf_hierarchy_size_unknown(zf_node *n)
{
    if (n->is_dir || n->derived || n->pending || !zf_array_meta_is_text(&n->meta.array))
        return false;
    pthread_mutex_lock(&n->mu);
    uint64_t size;
    bool known = n->array && zf_array_text_size(n->array, &size);
    pthread_mutex_unlock(&n->mu);
    return !known;
}

void zf_hierarchy_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

uint64_t zf_h_array_nbytes(const zf_array_meta *m)
{
    zf_grid g;
    zf_grid_init(&g, m->ndim, m->shape, m->chunks);
    return zf_grid_nelems(&g) * m->dtype.itemsize;
}

zf_status zf_h_push_name(char ***names, size_t *n, size_t *cap, const char *name, size_t len)
{
    if (len > NAME_MAX) { /* no path can name it: the kernel refuses to look it up */
        zf_log_warn("ignoring a child named \"%.40s...\": %zu bytes, longer than NAME_MAX (%d)",
                    name, len, NAME_MAX);
        return ZF_OK;
    }
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        char **nn = realloc(*names, c * sizeof *nn);
        if (!nn)
            return ZF_ERR_NOMEM;
        *names = nn;
        *cap = c;
    }
    if (!((*names)[*n] = strndup(name, len)))
        return ZF_ERR_NOMEM;
    (*n)++;
    return ZF_OK;
}

static int by_name(const void *a, const void *b, void *names)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    int c = strcmp(((char **)names)[i], ((char **)names)[j]);
    return c ? c : (i > j) - (i < j); /* equal names: first occurrence first */
}

zf_status zf_h_unique_names(char **names, size_t *n)
{
    if (*n < 2)
        return ZF_OK;
    size_t *idx = malloc(*n * sizeof *idx);
    bool *drop = calloc(*n, sizeof *drop);
    if (!idx || !drop) {
        free(idx);
        free(drop);
        return ZF_ERR_NOMEM;
    }
    for (size_t i = 0; i < *n; i++)
        idx[i] = i;
    qsort_r(idx, *n, sizeof *idx, by_name, names);
    for (size_t k = 1; k < *n; k++)
        if (strcmp(names[idx[k]], names[idx[k - 1]]) == 0)
            drop[idx[k]] = true;
    size_t m = 0;
    for (size_t i = 0; i < *n; i++) {
        if (drop[i])
            free(names[i]);
        else
            names[m++] = names[i];
    }
    *n = m;
    free(idx);
    free(drop);
    return ZF_OK;
}

/* The index of the inline consolidated metadata ("metadata" object, non-empty) of a v3 group's
 * document, made on first use and kept with the node (whose document it indexes); NULL when it
 * has none, or no memory for it. */
static const zf_cindex *own_consolidated(zf_node *n)
{
    const char *text = n->meta.metadata_json;
    if (!n->meta.consolidated || !text)
        return NULL;
    pthread_mutex_lock(&n->mu);
    if (!n->cindexed) {
        yajl_val doc;
        if (zf_json_parse("zarr.json", text, strlen(text), &doc, NULL) == ZF_OK) {
            yajl_val cm = zf_json_get(doc, "consolidated_metadata");
            yajl_val kind = zf_json_get(cm, "kind"), md = zf_json_get(cm, "metadata");
            char *source = NULL;
            if (YAJL_IS_STRING(kind) && strcmp(kind->u.string, "inline") == 0 &&
                YAJL_IS_OBJECT(md) && md->u.object.len > 0 &&
                asprintf(&source, "%s%szarr.json: \"consolidated_metadata\"", n->path,
                         n->path[0] ? "/" : "") >= 0 &&
                zf_cindex_build(md, false, source, &n->cindex) == ZF_OK)
                n->cdoc = doc;
            else
                yajl_tree_free(doc);
            free(source);
        }
        n->cindexed = true;
    }
    pthread_mutex_unlock(&n->mu);
    return n->cindex;
}

/* The inline consolidated metadata that lists the children of the v3 group at path: the
 * group's own or its nearest ancestor's (zarr-python 3 may consolidate below the root; its keys
 * are paths relative to that group). *rel is path relative to that group (a suffix of path).
 * ZF_ERR_NOT_FOUND when none has any. */
static zf_status nearest_consolidated(zf_hierarchy *h, const char *path, const zf_cindex **ix,
                                      const char **rel)
{
    char *anc = strdup(path);
    if (!anc)
        return ZF_ERR_NOMEM;
    zf_status st = ZF_ERR_NOT_FOUND;
    for (;;) {
        zf_node *a;
        if (zf_hierarchy_lookup(h, anc, &a, NULL) == ZF_OK && a->is_dir &&
            (*ix = own_consolidated(a)) != NULL) {
            size_t al = strlen(anc);
            *rel = path + al + (al && path[al] == '/');
            st = ZF_OK;
            break;
        }
        if (!anc[0])
            break;
        char *slash = strrchr(anc, '/');
        if (slash)
            *slash = '\0';
        else
            anc[0] = '\0';
    }
    free(anc);
    return st;
}

/* Children of a v3 group from the inline consolidated metadata of the group itself or of its
 * nearest ancestor that has some. ZF_ERR_NOT_FOUND when none has any. */
static zf_status list_own_consolidated(zf_hierarchy *h, zf_node *dir, char ***names, size_t *n,
                                       size_t *cap)
{
    const zf_cindex *ix;
    const char *rel;
    zf_status st = nearest_consolidated(h, dir->path, &ix, &rel);
    return st == ZF_OK ? zf_cindex_list(ix, rel, names, n, cap) : st;
}

/* Final v3 without consolidated metadata: the store holds something at path where a node could
 * lie below it, a sub-prefix (a directory). Hidden names (starting with '.', which web servers'
 * index pages leave out) count for neither path nor sub-prefix. A store that cannot list (a web
 * server without index pages) cannot tell: not found. */
static zf_status store_implicit(zf_hierarchy *h, const char *path, zf_err *err)
{
    const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
    if (name[0] == '.')
        return ZF_ERR_NOT_FOUND;
    zf_store_listing l;
    zf_status st = zf_store_list_dir(h->store, path, &l, err);
    if (st == ZF_ERR_UNSUPPORTED) {
        if (err)
            err->msg[0] = '\0';
        return ZF_ERR_NOT_FOUND;
    }
    if (st != ZF_OK)
        return st;
    st = ZF_ERR_NOT_FOUND;
    for (size_t i = 0; i < l.n && st != ZF_OK; i++)
        if (l.entries[i].is_prefix && l.entries[i].name[0] && l.entries[i].name[0] != '.')
            st = ZF_OK;
    zf_store_listing_free(&l);
    return st;
}

/* Final v3: whether path, which has no zarr.json, is an implicit group (docs/formats.md
 * "Implicit groups"): its parent is a group, explicit or implicit, and a node may lie below it —
 * the consolidated metadata that lists the parent's children (the root's, or the nearest
 * ancestor's) has a path below it; without any, the store has a sub-prefix below it
 * (store_implicit: one listing, never a deeper scan). ZF_OK when it is; ZF_ERR_NOT_FOUND when
 * not; store failures as they come. */
static zf_status v3_implicit(zf_hierarchy *h, const char *path, zf_err *err)
{
    if (!path[0])
        return ZF_ERR_NOT_FOUND;
    const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
    char *parent = slash ? strndup(path, (size_t)(slash - path)) : strdup("");
    if (!parent)
        return ZF_ERR_NOMEM;
    zf_node *p;
    zf_status st = zf_hierarchy_lookup(h, parent, &p, err);
    if (st == ZF_OK && (!p->is_dir || p->virtual_root))
        st = ZF_ERR_NOT_FOUND; /* below an array: its chunks */
    if (st == ZF_OK) {
        const zf_cindex *ix;
        const char *rel;
        if (h->consolidated) {
            st = zf_cindex_has_below(h->cindex, path) ? ZF_OK : ZF_ERR_NOT_FOUND;
        } else if ((st = nearest_consolidated(h, parent, &ix, &rel)) == ZF_OK) {
            char *r = zf_h_join(rel, name);
            st = !r ? ZF_ERR_NOMEM : zf_cindex_has_below(ix, r) ? ZF_OK : ZF_ERR_NOT_FOUND;
            free(r);
        } else if (st == ZF_ERR_NOT_FOUND) {
            st = store_implicit(h, path, err);
        }
    } else if (st != ZF_ERR_NOMEM && st != ZF_ERR_IO) {
        st = ZF_ERR_NOT_FOUND; /* below an invalid or unsupported node: unreachable */
    }
    if (st == ZF_ERR_NOT_FOUND && err)
        err->msg[0] = '\0';
    free(parent);
    return st;
}

/* Children of a draft group: "X.array.json", "X.group.json" and prefixes X (implicit groups). */
static zf_status list_draft(zf_hierarchy *h, const char *path, char ***names, size_t *n,
                            size_t *cap, zf_err *err)
{
    char *mp = draft_meta_prefix(h, path);
    if (!mp)
        return ZF_ERR_NOMEM;
    zf_store_listing l;
    zf_status st = zf_store_list_dir(h->store, mp, &l, err);
    free(mp);
    if (st == ZF_ERR_NOT_FOUND)
        return ZF_OK; /* an empty group (or hierarchy): a document and nothing below it */
    if (st != ZF_OK)
        return st;
    for (size_t i = 0; i < l.n && st == ZF_OK; i++) {
        const char *nm = l.entries[i].name;
        size_t len = strlen(nm);
        if (!l.entries[i].is_prefix) {
            static const char *const sfx[] = {".array.json", ".group.json"};
            size_t keep = 0;
            for (size_t k = 0; k < 2; k++) {
                size_t sl = strlen(sfx[k]);
                if (len > sl && strcmp(nm + len - sl, sfx[k]) == 0)
                    keep = len - sl;
            }
            if (!keep)
                continue;
            len = keep;
        }
        char *child = strndup(nm, len), *full = child ? zf_h_join(path, child) : NULL;
        if (!child || !full)
            st = ZF_ERR_NOMEM;
        else if (zf_key_is_valid(full))
            st = zf_h_push_name(names, n, cap, child, len);
        free(child);
        free(full);
    }
    zf_store_listing_free(&l);
    return st;
}


zf_pool *zf_h_ensure_pool(zf_hierarchy *h);

/* Looking a listing's children up (list_store_nodes), in parallel or one by one. */
typedef struct lookup_batch {
    zf_hierarchy *h;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t pending;
} lookup_batch;

typedef struct lookup_task {
    lookup_batch *b;
    char *path;
    zf_status st;
} lookup_task;

static void lookup_run(void *arg)
{
    lookup_task *t = arg;
    zf_node *n;
    t->st = lookup_real(t->b->h, t->path, &n, NULL);
    pthread_mutex_lock(&t->b->mu);
    if (--t->b->pending == 0)
        pthread_cond_signal(&t->b->cv);
    pthread_mutex_unlock(&t->b->mu);
}

/* The sub-prefixes of the listing that are nodes, found by looking them up (the nodes are then
 * cached for opendir's attributes, which looks each child up anyway): a sub-prefix whose metadata
 * is invalid is still listed. With parallel (remote stores: each lookup is a few round trips),
 * all at once on the worker pool. */
static zf_status list_store_nodes(zf_hierarchy *h, const char *prefix, const zf_store_listing *l,
                                  bool parallel, char ***names, size_t *n, size_t *cap)
{
    /* without a pool, the lookups run here, one by one */
    zf_pool *pool = parallel ? zf_h_ensure_pool(h) : NULL;
    lookup_task *tasks = calloc(l->n ? l->n : 1, sizeof *tasks);
    if (!tasks)
        return ZF_ERR_NOMEM;
    lookup_batch b = {.h = h};
    pthread_mutex_init(&b.mu, NULL);
    pthread_cond_init(&b.cv, NULL);
    zf_status st = ZF_OK;
    for (size_t i = 0; i < l->n && st == ZF_OK; i++) {
        tasks[i] = (lookup_task){.b = &b, .st = ZF_ERR_NOT_FOUND};
        if (!l->entries[i].is_prefix)
            continue;
        if (!(tasks[i].path = zf_h_join(prefix, l->entries[i].name))) {
            st = ZF_ERR_NOMEM;
            break;
        }
        if (!zf_key_is_valid(tasks[i].path))
            continue;
        pthread_mutex_lock(&b.mu);
        b.pending++;
        pthread_mutex_unlock(&b.mu);
        if (!pool || zf_pool_submit(pool, lookup_run, &tasks[i]) != ZF_OK)
            lookup_run(&tasks[i]); /* on this thread instead */
    }
    pthread_mutex_lock(&b.mu);
    while (b.pending > 0)
        pthread_cond_wait(&b.cv, &b.mu);
    pthread_mutex_unlock(&b.mu);
    for (size_t i = 0; i < l->n; i++) {
        if (st == ZF_OK && tasks[i].path && tasks[i].st != ZF_ERR_NOT_FOUND)
            st = zf_h_push_name(names, n, cap, l->entries[i].name, strlen(l->entries[i].name));
        free(tasks[i].path);
    }
    free(tasks);
    pthread_cond_destroy(&b.cv);
    pthread_mutex_destroy(&b.mu);
    return st;
}

/* Children of a group in the store: the sub-prefixes that are nodes (v2: .zarray, .zgroup; v3:
 * zarr.json, or an implicit group). */
static zf_status list_store(zf_hierarchy *h, const char *prefix, char ***names, size_t *n,
                            size_t *cap, zf_err *err)
{
    zf_store_listing l;
    zf_status st = zf_store_list_dir(h->store, prefix, &l, err);
    if (st != ZF_OK)
        return st;
    st = list_store_nodes(h, prefix, &l, zf_store_is_remote(h->store), names, n, cap);
    zf_store_listing_free(&l);
    return st;
}

static zf_status list_real(zf_hierarchy *h, zf_node *dir, char ***names, size_t *n, size_t *cap,
                           zf_err *err)
{
    zf_status st;
    if (dir->virtual_root)
        st = zf_h_push_name(names, n, cap, h->root_array_name, strlen(h->root_array_name));
    else if (h->consolidated) /* the root's: v2 .zmetadata, v3 inline */
        st = zf_cindex_list(h->cindex, dir->prefix, names, n, cap);
    else if (h->format == ZF_FORMAT_V3 && (st = list_own_consolidated(h, dir, names, n, cap)) !=
                                              ZF_ERR_NOT_FOUND)
        ; /* the group's own consolidated metadata */
    else if (h->format == ZF_FORMAT_V3)
        st = list_store(h, dir->prefix, names, n, cap, err);
    else if (h->format != ZF_FORMAT_V2)
        st = list_draft(h, dir->prefix, names, n, cap, err);
    else
        st = list_store(h, dir->prefix, names, n, cap, err);
    if (st == ZF_OK && !dir->virtual_root)
        st = zf_h_list_pending(h, dir, names, n, cap);
    if (st == ZF_OK)
        st = zf_h_unique_names(*names, n);
    if (st == ZF_OK && h->versions && !dir->path[0]) { /* the versions' directory is hidden */
        size_t k = 0;
        for (size_t i = 0; i < *n; i++) {
            if (zf_h_versions_route(h, dir, (*names)[i]))
                free((*names)[i]);
            else
                (*names)[k++] = (*names)[i];
        }
        *n = k;
    }
    if (st == ZF_ERR_UNSUPPORTED) { /* e.g. a web server without index pages */
        pthread_mutex_lock(&h->mu);
        bool warned = h->warned_unlistable;
        h->warned_unlistable = true;
        pthread_mutex_unlock(&h->mu);
        if (!warned)
            zf_log_warn("%s: the store cannot list the children of a group (%s); nodes can still "
                        "be opened by their paths", h->store->url,
                        err && err->msg[0] ? err->msg : "no index pages, no consolidated metadata");
        st = ZF_OK;
    }
    return st;
}

zf_status zf_h_list_real(zf_hierarchy *h, zf_node *dir, char ***names, size_t *n, zf_err *err)
{
    h = zf_h_owner(h, dir);
    *names = NULL;
    *n = 0;
    size_t cap = 0;
    zf_status st = dir->is_dir ? list_real(h, dir, names, n, &cap, err) : ZF_ERR_INVALID;
    if (st != ZF_OK) {
        zf_hierarchy_names_free(*names, *n);
        *names = NULL;
        *n = 0;
    }
    return st;
}

zf_status zf_hierarchy_list(zf_hierarchy *h, zf_node *dir, char ***names, size_t *n, zf_err *err)
{
    *names = NULL;
    *n = 0;
    size_t cap = 0;
    zf_status st;
    h = zf_h_owner(h, dir);
    if (!dir->is_dir)
        return ZF_ERR_INVALID;
    if (dir->synthetic)
        return zf_h_versions_list(h, dir, names, n, err);
    double now = zf_h_mono_now();
    if (h->ttl > 0) { /* a listing younger than the TTL */
        pthread_mutex_lock(&dir->mu);
        st = ZF_OK;
        if (dir->listing && now - dir->listed < h->ttl)
            for (size_t i = 0; i < dir->nlisting && st == ZF_OK; i++)
                st = zf_h_push_name(names, n, &cap, dir->listing[i], strlen(dir->listing[i]));
        bool hit = dir->listing && now - dir->listed < h->ttl;
        pthread_mutex_unlock(&dir->mu);
        if (hit && st == ZF_OK)
            return ZF_OK;
        zf_hierarchy_names_free(*names, *n);
        *names = NULL;
        *n = cap = 0;
    }
    st = list_real(h, dir, names, n, &cap, err);
    if (st == ZF_OK && h->sidecars) { /* each array's sidecars after the real children */
        size_t nreal = *n;
        for (size_t i = 0; i < nreal && st == ZF_OK; i++) {
            char *cpath = zf_h_join(dir->path, (*names)[i]);
            zf_node *c;
            if (!cpath)
                st = ZF_ERR_NOMEM;
            else if (lookup_real(h, cpath, &c, NULL) == ZF_OK && !c->derived) {
                char *nm = strdup((*names)[i]);
                st = nm ? zf_h_sidecar_names(h, c, nm, names, n, &cap) : ZF_ERR_NOMEM;
                free(nm);
            }
            free(cpath);
        }
        if (st == ZF_OK && h->nc_root_name && dir->path[0] == '\0')
            st = zf_h_push_name(names, n, &cap, h->nc_root_name, strlen(h->nc_root_name));
        if (st == ZF_OK) /* a sidecar's name may be a real child's too: the child stays */
            st = zf_h_unique_names(*names, n);
        /* The names after the real children (first, and unique already: all kept) are no real
         * node's, as this listing has just seen: their derived nodes are made here, so that
         * opendir's entries need not ask the store for real nodes of those names first (two
         * documents each, two requests over HTTP). */
        for (size_t i = nreal; i < *n && st == ZF_OK; i++) {
            char *spath = zf_h_join(dir->path, (*names)[i]);
            zf_node *d;
            if (!spath)
                st = ZF_ERR_NOMEM;
            else if (zf_h_sidecar_lookup(h, spath, true, &d, NULL) == ZF_ERR_NOMEM)
                st = ZF_ERR_NOMEM;
            free(spath);
        }
    }
    if (st == ZF_OK && h->ttl > 0) { /* keep a copy for the TTL */
        char **copy = calloc(*n ? *n : 1, sizeof *copy);
        size_t k = 0;
        for (; copy && k < *n && ((copy[k] = strdup((*names)[k])) != NULL); k++)
            ;
        if (copy && k == *n) {
            pthread_mutex_lock(&dir->mu);
            zf_hierarchy_names_free(dir->listing, dir->nlisting);
            dir->listing = copy;
            dir->nlisting = k;
            dir->listed = now;
            pthread_mutex_unlock(&dir->mu);
        } else {
            zf_hierarchy_names_free(copy, k);
        }
    }
    if (st != ZF_OK) {
        zf_hierarchy_names_free(*names, *n);
        *names = NULL;
        *n = 0;
    }
    return st;
}

/* Worker threads start on first use, so that none exist when the daemon forks. NULL when they
 * cannot start. */
zf_pool *zf_h_ensure_pool(zf_hierarchy *h)
{
    h = zf_h_root(h); /* a version's arrays decode on the mount's workers */
    pthread_mutex_lock(&h->mu);
    if (!h->pool && zf_pool_new(h->threads, &h->pool) != ZF_OK)
        zf_log_warn("cannot start worker threads; working on the requesting thread only");
    /* Writebacks wait on the store (a local chunk is synced to disk before its rename): run
     * many at once, so that the file system commits their syncs together. */
    if (h->writable && !h->wb_pool &&
        zf_pool_new(WRITEBACK_THREADS > h->threads ? WRITEBACK_THREADS : h->threads,
                    &h->wb_pool) == ZF_OK)
        zf_cache_set_writeback_pool(h->cache, h->wb_pool);
    zf_pool *p = h->pool;
    pthread_mutex_unlock(&h->mu);
    return p;
}

zf_status zf_hierarchy_array(zf_hierarchy *h, zf_node *node, zf_array **out, zf_err *err)
{
    h = zf_h_owner(h, node);
    if (node->is_dir || node->derived)
        return ZF_ERR_INVALID;
    if (node->pending)
        return zf_fail(err, ZF_ERR_INVALID, "%s: no array metadata yet", node->path);
    if (node->meta.unsupported != ZF_OK)
        return zf_fail(err, node->meta.unsupported, "%s",
                       node->meta.unsupported_why ? node->meta.unsupported_why : "unsupported");
    zf_pool *pool = zf_h_ensure_pool(h);
    pthread_mutex_lock(&node->mu);
    zf_status st = ZF_OK;
    if (!node->array) {
        if (h->format == ZF_FORMAT_V2)
            detect_nested_chunks(h, node->prefix, &node->meta.array);
        char *dp = zf_h_data_prefix(h, node->prefix);
        /* A chunk-cache id no array of the mount (its versions' included, which share the
         * cache) had: each opening gets the next one (a resize reopens it: a new id, so no
         * chunk of the old shape is read as the new's). Below 2^56, where sharding's index
         * levels begin (array.c). */
        uint64_t cache_id = atomic_fetch_add(&zf_h_root(h)->next_cache_id, 1) + 1;
        st = dp ? zf_array_open(h->store, dp, &node->meta.array, h->cache, pool, cache_id,
                                &node->array, err)
                : ZF_ERR_NOMEM;
        if (st == ZF_OK)
            zf_array_set_readahead(node->array, h->readahead, h->readahead_chunks);
        /* On a writable mount, make it writable before anyone can read through it: switching
         * an array that readers already use would race with them (ThreadSanitizer). Where it
         * cannot be (nested sharding), writes report why when they come. */
        if (st == ZF_OK && zf_hierarchy_can_write(h, NULL) == ZF_OK)
            zf_array_enable_write(node->array, h->write_empty_chunks, NULL);
        free(dp);
    }
    *out = node->array;
    pthread_mutex_unlock(&node->mu);
    return st;
}

zf_cache *zf_hierarchy_cache(zf_hierarchy *h) { return h->cache; }

double zf_hierarchy_metadata_ttl(const zf_hierarchy *h) { return h->ttl; }

/* The counters both forms of the statistics report. */
static void gather_stats(zf_hierarchy *h, zf_cache_stats *c, zf_decode_stats *d,
                         zf_store_stats *s, zf_mem_stats *m)
{
    zf_cache_get_stats(h->cache, c);
    zf_array_get_decode_stats(d);
    zf_store_get_stats(h->store, s);
    if (h->versions)
        zf_h_versions_store_stats(h, s);
    *m = zf_mem_get_stats();
}

char *zf_hierarchy_stats_json(zf_hierarchy *h, uint64_t replies_failed)
{
    zf_cache_stats c;
    zf_decode_stats d;
    zf_store_stats s;
    zf_mem_stats m;
    gather_stats(h, &c, &d, &s, &m);
    char dc[512]; /* the disk cache's counters, when there is one */
    zf_store_disk_cache_json(h->store, dc, sizeof dc);
    char *out;
    int n = asprintf(&out,
                     "{\"cache\": {\"hits\": %llu, \"misses\": %llu, \"evictions\": %llu, "
                     "\"bytes\": %zu, \"entries\": %zu, \"capacity\": %zu, "
                     "\"loads_failed\": %llu, \"dirty_bytes\": %zu, \"dirty_entries\": %zu, "
                     "\"writebacks\": %llu, \"writeback_failures\": %llu, "
                     "\"write_behinds\": %llu}, "
                     "\"decode\": {\"chunks\": %llu, \"failures\": %llu, \"seconds\": %.6f}, "
                     "\"encode\": {\"chunks\": %llu, \"failures\": %llu, \"seconds\": %.6f, "
                     "\"shard_conflicts\": %llu, \"chunk_conflicts\": %llu}, "
                     "\"store\": {\"requests\": %llu, \"bytes_fetched\": %llu, "
                     "\"retries\": %llu, \"errors\": %llu, \"writes\": %llu, "
                     "\"bytes_written\": %llu}, "
                     "\"buffers\": {\"fresh\": %llu, \"reused\": %llu, \"kept_bytes\": %zu}, "
                     "\"memory\": {\"limit\": %zu, \"reserve\": %zu, \"accounted\": %zu, "
                     "\"peak_accounted\": %zu, \"loads\": %zu, \"waits\": %llu, "
                     "\"wait_seconds\": %.6f, \"reclaimed\": %llu, \"heap_trims\": %llu}, "
                     "\"replies_failed\": %llu%s}\n",
                     (unsigned long long)c.hits, (unsigned long long)c.misses,
                     (unsigned long long)c.evictions, c.bytes, c.entries,
                     zf_cache_capacity(h->cache), (unsigned long long)c.loads_failed,
                     c.dirty_bytes, c.dirty_entries, (unsigned long long)c.writebacks,
                     (unsigned long long)c.writeback_failures,
                     (unsigned long long)c.write_behinds, (unsigned long long)d.chunks,
                     (unsigned long long)d.failures, d.seconds,
                     (unsigned long long)d.encoded, (unsigned long long)d.encode_failures,
                     d.encode_seconds, (unsigned long long)d.shard_conflicts,
                     (unsigned long long)d.chunk_conflicts,
                     (unsigned long long)s.requests, (unsigned long long)s.bytes,
                     (unsigned long long)s.retries, (unsigned long long)s.errors,
                     (unsigned long long)s.writes, (unsigned long long)s.bytes_written,
                     (unsigned long long)m.fresh, (unsigned long long)m.reused, m.pooled_bytes,
                     m.limit, m.reserve, m.used, m.peak, m.loads, (unsigned long long)m.waits,
                     (double)m.wait_ns / 1e9, (unsigned long long)m.reclaimed,
                     (unsigned long long)m.heap_trims,
                     (unsigned long long)replies_failed, dc);
    return n < 0 ? NULL : out;
}

/* One sample of a metric with its HELP and TYPE lines. */
static void metric(zf_sbuf *b, const char *name, const char *type, const char *help,
                   const char *labels, double v)
{
    zf_sbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s{%s} %.17g\n", name, help, name, type, name,
                   labels, v);
}

void zf_hierarchy_metrics(zf_hierarchy *h, zf_sbuf *b, const char *l)
{
    zf_cache_stats c;
    zf_decode_stats d;
    zf_store_stats s;
    zf_mem_stats m;
    gather_stats(h, &c, &d, &s, &m);
    metric(b, "zarrfs_cache_hits_total", "counter", "Chunk lookups the cache answered.", l,
           (double)c.hits);
    metric(b, "zarrfs_cache_misses_total", "counter", "Chunk lookups that loaded the chunk.", l,
           (double)c.misses);
    metric(b, "zarrfs_cache_evictions_total", "counter", "Chunks evicted from the cache.", l,
           (double)c.evictions);
    metric(b, "zarrfs_cache_load_failures_total", "counter", "Chunk loads that failed.", l,
           (double)c.loads_failed);
    metric(b, "zarrfs_cache_size_bytes", "gauge", "Bytes of decoded chunks in the cache.", l,
           (double)c.bytes);
    metric(b, "zarrfs_cache_capacity_bytes", "gauge", "The cache's bound (-o cache_size).", l,
           (double)zf_cache_capacity(h->cache));
    metric(b, "zarrfs_cache_entries", "gauge", "Chunks in the cache.", l, (double)c.entries);
    metric(b, "zarrfs_cache_dirty_bytes", "gauge", "Bytes written and not yet stored.", l,
           (double)c.dirty_bytes);
    metric(b, "zarrfs_chunks_decoded_total", "counter", "Chunks decoded.", l, (double)d.chunks);
    metric(b, "zarrfs_chunk_decode_failures_total", "counter",
           "Chunks that could not be decoded (corrupt).", l, (double)d.failures);
    metric(b, "zarrfs_chunks_encoded_total", "counter", "Chunks encoded for writing.", l,
           (double)d.encoded);
    metric(b, "zarrfs_chunk_encode_failures_total", "counter", "Chunks that failed to encode.",
           l, (double)d.encode_failures);
    metric(b, "zarrfs_store_requests_total", "counter",
           "Requests to the store (reads, listings and writes).", l, (double)s.requests);
    metric(b, "zarrfs_store_errors_total", "counter", "Store requests that failed.", l,
           (double)s.errors);
    metric(b, "zarrfs_store_retries_total", "counter", "Retried store requests.", l,
           (double)s.retries);
    metric(b, "zarrfs_store_writes_total", "counter", "Store writes (of the requests).", l,
           (double)s.writes);
    metric(b, "zarrfs_store_fetched_bytes_total", "counter", "Bytes read from the store.", l,
           (double)s.bytes);
    metric(b, "zarrfs_store_written_bytes_total", "counter", "Bytes written to the store.", l,
           (double)s.bytes_written);
    metric(b, "zarrfs_buffer_pool_bytes", "gauge", "Chunk buffers kept for reuse.", l,
           (double)m.pooled_bytes);
    metric(b, "zarrfs_memory_limit_bytes", "gauge",
           "The daemon's memory bound (-o memory_limit; 0: none).", l, (double)m.limit);
    metric(b, "zarrfs_memory_accounted_bytes", "gauge",
           "Bytes charged to the memory account: cached chunks, kept buffers, loads in progress.",
           l, (double)m.used);
    metric(b, "zarrfs_memory_accounted_limit_bytes", "gauge",
           "What the memory account may hold: the bound less the daemon's fixed memory.", l,
           (double)(m.limit > m.reserve ? m.limit - m.reserve : 0));
    metric(b, "zarrfs_memory_loads_in_progress", "gauge", "Chunk loads admitted and not ended.",
           l, (double)m.loads);
    metric(b, "zarrfs_memory_waits_total", "counter",
           "Chunk loads that waited for memory (backpressure).", l, (double)m.waits);
    metric(b, "zarrfs_memory_wait_seconds_total", "counter",
           "Time chunk loads spent waiting for memory.", l, (double)m.wait_ns / 1e9);
    metric(b, "zarrfs_memory_heap_trims_total", "counter",
           "Times malloc's free memory was given back to the kernel to stay within the bound.",
           l, (double)m.heap_trims);
    size_t resident = zf_mem_resident();
    if (resident)
        metric(b, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", l,
               (double)resident);
}

static zf_status read_consolidated(zf_hierarchy *h, zf_err *err)
{
    char *text;
    size_t len;
    zf_status st = zf_h_get_doc(h, ".zmetadata", &text, &len, err);
    if (st == ZF_ERR_NOT_FOUND)
        return ZF_OK;
    if (st != ZF_OK)
        return st;
    yajl_val doc;
    st = zf_json_parse(".zmetadata", text, len, &doc, err);
    free(text);
    if (st != ZF_OK)
        return st;
    yajl_val md = zf_json_get(doc, "metadata");
    if (!YAJL_IS_OBJECT(md)) {
        yajl_tree_free(doc);
        return zf_fail(err, ZF_ERR_INVALID, ".zmetadata: \"metadata\": expected an object");
    }
    if ((st = zf_cindex_build(md, true, ".zmetadata", &h->cindex)) != ZF_OK) {
        yajl_tree_free(doc);
        return st;
    }
    h->consolidated_doc = doc;
    h->consolidated = md;
    zf_store_stat(h->store, ".zmetadata", NULL, &h->root_mtime, NULL);
    return ZF_OK;
}

/* v3: the root zarr.json's consolidated_metadata ("kind": "inline", "metadata": {path: doc}),
 * kept for documents and listings when present (doc: the root document's tree, taken). */
static zf_status read_consolidated_v3(zf_hierarchy *h, yajl_val doc, bool *root_is_array)
{
    zf_status st;
    yajl_val nt = zf_json_get(doc, "node_type");
    *root_is_array = YAJL_IS_STRING(nt) && strcmp(nt->u.string, "array") == 0;
    yajl_val cm = zf_json_get(doc, "consolidated_metadata");
    yajl_val kind = zf_json_get(cm, "kind"), md = zf_json_get(cm, "metadata");
    if (YAJL_IS_OBJECT(cm) && YAJL_IS_STRING(kind) && strcmp(kind->u.string, "inline") == 0 &&
        YAJL_IS_OBJECT(md)) {
        if ((st = zf_cindex_build(md, false, "zarr.json: \"consolidated_metadata\"",
                                  &h->cindex)) != ZF_OK) {
            yajl_tree_free(doc);
            return st;
        }
        h->consolidated_doc = doc;
        h->consolidated = md;
        return ZF_OK;
    }
    if (cm && !YAJL_IS_NULL(cm))
        zf_log_warn("zarr.json: \"consolidated_metadata\": not inline metadata; ignoring it");
    yajl_tree_free(doc);
    return ZF_OK;
}

/* Which dialect the store root holds, and whether its root node is an array. */
static zf_status detect(zf_hierarchy *h, bool *root_is_array, zf_err *err)
{
    /* A store that fails (rather than lacks the key) fails the mount now, with its reason. */
    zf_status sa = zf_store_stat(h->store, ".zarray", NULL, NULL, err);
    if (sa != ZF_OK && sa != ZF_ERR_NOT_FOUND)
        return sa;
    zf_status sg = zf_store_stat(h->store, ".zgroup", NULL, NULL, err);
    if (sg != ZF_OK && sg != ZF_ERR_NOT_FOUND)
        return sg;
    bool has_zarray = sa == ZF_OK, has_zgroup = sg == ZF_OK;
    if (err)
        err->msg[0] = '\0';
    if (has_zarray || has_zgroup) {
        h->format = ZF_FORMAT_V2;
        *root_is_array = has_zarray;
        return read_consolidated(h, err);
    }
    char *text;
    size_t len;
    zf_status st = zf_h_get_doc(h, "zarr.json", &text, &len, err);
    if (st == ZF_ERR_NOT_FOUND)
        return zf_fail(err, ZF_ERR_NOT_FOUND,
                       "%s: not a Zarr hierarchy (no .zgroup, .zarray or zarr.json at its root)",
                       h->store->url);
    if (st != ZF_OK)
        return st;
    yajl_val doc = NULL; /* parsed once: detection, then the consolidated metadata */
    st = zf_json_parse("zarr.json", text, len, &doc, err);
    if (st == ZF_OK)
        st = zf_meta_detect_doc("zarr.json", doc, &h->format, err);
    if (st == ZF_OK && h->format == ZF_FORMAT_V3) {
        st = read_consolidated_v3(h, doc, root_is_array);
        doc = NULL;
        zf_store_stat(h->store, "zarr.json", NULL, &h->root_mtime, NULL);
    } else if (st == ZF_OK) {
        char *ka = draft_doc_key(h, "", "array");
        if (!ka)
            st = ZF_ERR_NOMEM;
        else
            *root_is_array = zf_store_stat(h->store, ka, NULL, NULL, NULL) == ZF_OK;
        free(ka);
        zf_store_stat(h->store, "zarr.json", NULL, &h->root_mtime, NULL);
    }
    yajl_tree_free(doc);
    free(text);
    return st;
}

zf_status zf_hierarchy_open(zf_store *store, const char *store_name,
                            const zf_hierarchy_options *opts, zf_hierarchy **out, zf_err *err)
{
    return zf_h_open(store, store_name, opts, NULL, 0, out, err);
}

zf_status zf_h_open(zf_store *store, const char *store_name, const zf_hierarchy_options *opts,
                    zf_hierarchy *parent, uint64_t id_base, zf_hierarchy **out, zf_err *err)
{
    zf_hierarchy *h = calloc(1, sizeof *h);
    if (!h) {
        zf_store_close(store);
        return ZF_ERR_NOMEM;
    }
    h->store = store;
    h->parent = parent;
    h->id_base = id_base;
    h->opts = *opts;
    pthread_mutex_init(&h->mu, NULL);
    h->nbuckets = NBUCKETS;
    if (!(h->buckets = calloc(h->nbuckets, sizeof *h->buckets)) ||
        !(h->store_name = strdup(store_name ? store_name : ""))) {
        free(h->buckets);
        pthread_mutex_destroy(&h->mu);
        free(h);
        zf_store_close(store);
        return ZF_ERR_NOMEM;
    }
    clock_gettime(CLOCK_REALTIME, &h->root_mtime);
    h->threads = opts->threads;
    if (!h->threads) { /* sysconf reads /sys: only when asked to */
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        h->threads = (unsigned)(ncpu > 0 ? ncpu : 1);
    }
    if (zf_store_is_remote(store) && h->threads < opts->io_threads)
        h->threads = opts->io_threads; /* workers mostly wait for the network */
    h->ttl = opts->metadata_ttl;
    h->sidecars = opts->sidecars;
    h->readahead = opts->readahead;
    /* A remote store: twice as many chunks ahead as requests may be in flight, so that the
     * connections stay busy while the reader consumes what arrived (one band may be one chunk). */
    h->readahead_chunks = zf_store_is_remote(store) ? 2 * opts->io_threads : 0;
    h->writable = opts->writable;
    h->write_empty_chunks = opts->write_empty_chunks;
    zf_status st;
    if (parent) /* one cache for the whole mount */
        h->cache = parent->cache;
    else if ((st = zf_cache_new(opts->cache_size, &h->cache)) != ZF_OK)
        goto fail;

    /* Dialect detection at the store root (DESIGN.md). */
    bool root_is_array = false;
    if ((st = detect(h, &root_is_array, err)) != ZF_OK)
        goto fail;
    if (h->format == ZF_FORMAT_V3) /* masks of optional arrays are listed with their arrays */
        h->sidecars |= ZF_SIDECAR_MASK;

    zf_node *root;
    if (root_is_array) { /* the root is an array: a directory holding one file */
        if (!(h->root_array_name = zf_root_array_name(store_name))) {
            st = ZF_ERR_NOMEM;
            goto fail;
        }
        zf_node *vr = zf_h_node_new("", "");
        if (!vr) {
            st = ZF_ERR_NOMEM;
            goto fail;
        }
        vr->is_dir = vr->virtual_root = true;
        vr->meta.format = h->format;
        vr->mtime = h->root_mtime;
        zf_h_insert_locked(h, vr);
        if ((st = zf_hierarchy_lookup(h, h->root_array_name, &root, err)) != ZF_OK)
            goto fail;
        vr->mtime = root->mtime;
    } else {
        if (h->sidecars & ZF_SIDECAR_NC) { /* the root group's netCDF view: STORE.nc */
            char *base = zf_root_array_name(store_name);
            if (!base || asprintf(&h->nc_root_name, "%s.nc", base[0] ? base : "root") < 0) {
                free(base);
                h->nc_root_name = NULL;
                st = ZF_ERR_NOMEM;
                goto fail;
            }
            free(base);
        }
        if ((st = zf_hierarchy_lookup(h, "", &root, err)) != ZF_OK)
            goto fail;
    }
    *out = h;
    return ZF_OK;
fail:
    zf_hierarchy_free(h);
    return st;
}

void zf_hierarchy_free(zf_hierarchy *h)
{
    if (!h)
        return;
    if (!h->parent) { /* (a version's: read-only, and the mount's workers are stopped first) */
        zf_err err = {""};
        zf_status st = h->cache ? zf_hierarchy_flush(h, NULL, &err) : ZF_OK;
        if (st != ZF_OK)
            zf_log_error("written data could not be stored and is lost: %s", err.msg);
        if (h->cache)
            zf_cache_set_writeback_pool(h->cache, NULL);
        zf_pool_free(h->wb_pool);
        zf_array_cancel_prefetch(h->pool); /* readahead nobody waits for any more */
        zf_pool_free(h->pool); /* drains the rest before arrays go away */
        zf_h_versions_free(h); /* their arrays too */
    }
    for (size_t i = 0; i < h->nnodes; i++)
        zf_h_node_free(h->by_id[i]);
    free(h->by_id);
    free(h->buckets);
    zf_h_free_retired(h);
    if (h->consolidated_doc)
        yajl_tree_free(h->consolidated_doc);
    zf_cindex_free(h->cindex);
    if (!h->parent)
        zf_cache_free(h->cache);
    zf_store_close(h->store);
    free(h->store_name);
    free(h->root_array_name);
    free(h->nc_root_name);
    pthread_mutex_destroy(&h->mu);
    free(h);
}
