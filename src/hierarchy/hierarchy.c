/* hierarchy.c — view paths to nodes, dialect detection, consolidated metadata, node cache.
 *
 * Zarr v2 "Storage" and "Groups": a node at prefix P is an array when P/.zarray exists, a group
 * when P/.zgroup does; P/.zattrs holds its attributes. When the root has .zmetadata
 * (consolidated metadata, as zarr-python's consolidate_metadata writes it), metadata documents and
 * listings come from it instead of the store. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zarrfs/hierarchy.h"
#include "zarrfs/json.h"
#include "zarrfs/log.h"

#define NBUCKETS 4096

struct zf_hierarchy {
    zf_store *store;
    zf_cache *cache;
    zf_pool *pool; /* started on the first array open */
    unsigned threads;
    pthread_mutex_t mu;
    zf_node *buckets[NBUCKETS];
    zf_node **by_id; /* by_id[id - 1] */
    size_t nnodes, cap;
    yajl_val consolidated; /* the "metadata" object of .zmetadata, or NULL */
    yajl_val consolidated_doc;
    struct timespec root_mtime;
    char *root_array_name; /* non-NULL when the store root is an array */
};

/* ---------- small helpers ---------- */

static char *join(const char *prefix, const char *name)
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
    return h % NBUCKETS;
}

char *zf_root_array_name(const char *store_name)
{
    char *copy = strdup(store_name ? store_name : "");
    if (!copy)
        return NULL;
    size_t n = strlen(copy);
    while (n > 0 && copy[n - 1] == '/')
        copy[--n] = '\0';
    char *base = strrchr(copy, '/');
    base = base ? base + 1 : copy;
    static const char *const suffixes[] = {".zarr3", ".zarr", ".zr3"};
    size_t bl = strlen(base);
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

/* A metadata document: from consolidated metadata when present, else from the store.
 * *text is malloc'd. */
static zf_status get_doc(zf_hierarchy *h, const char *key, char **text, size_t *len, zf_err *err)
{
    if (h->consolidated) {
        yajl_val v = zf_json_get(h->consolidated, key);
        if (!v)
            return ZF_ERR_NOT_FOUND;
        *text = zf_json_dump(v);
        if (!*text)
            return ZF_ERR_NOMEM;
        *len = strlen(*text);
        return ZF_OK;
    }
    zf_bytes b;
    zf_status st = zf_store_get(h->store, key, &b, err);
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
    return ZF_OK;
}

static bool doc_exists(zf_hierarchy *h, const char *key)
{
    if (h->consolidated)
        return zf_json_get(h->consolidated, key) != NULL;
    return zf_store_stat(h->store, key, NULL, NULL, NULL) == ZF_OK;
}

/* Zarr v2 before zarr-python 2.8 wrote nested chunk keys ("0/0") without saying so in
 * .zarray. When the array directory holds a numbered sub-directory, the chunks are nested. */
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

/* Parse the node whose keys lie below prefix. */
static zf_status load_meta(zf_hierarchy *h, const char *prefix, zf_node_meta *m,
                           struct timespec *mtime, zf_err *err)
{
    char *karr = join(prefix, ".zarray"), *kgrp = join(prefix, ".zgroup"),
         *katt = join(prefix, ".zattrs");
    char *text = NULL, *attrs = NULL;
    size_t len = 0, alen;
    zf_status st = ZF_ERR_NOMEM;
    if (!karr || !kgrp || !katt)
        goto out;
    bool is_array = true;
    const char *key = karr;
    st = get_doc(h, karr, &text, &len, err);
    if (st == ZF_ERR_NOT_FOUND) {
        is_array = false;
        key = kgrp;
        st = get_doc(h, kgrp, &text, &len, err);
    }
    if (st != ZF_OK)
        goto out;
    zf_status ast = get_doc(h, katt, &attrs, &alen, NULL);
    if (ast == ZF_ERR_NOMEM) {
        st = ast;
        goto out;
    }
    st = is_array ? zf_meta_parse_v2_array(key, text, len, attrs, m, err)
                  : zf_meta_parse_v2_group(key, text, len, attrs, m, err);
    if (st != ZF_OK)
        goto out;
    if (is_array && m->unsupported == ZF_OK)
        detect_nested_chunks(h, prefix, &m->array);
    if (zf_store_stat(h->store, key, NULL, mtime, NULL) != ZF_OK)
        *mtime = h->root_mtime;
out:
    free(karr);
    free(kgrp);
    free(katt);
    free(text);
    free(attrs);
    return st;
}

/* Insert a node (mu held); returns the node now in the table for its path. */
static zf_node *insert_locked(zf_hierarchy *h, zf_node *n)
{
    size_t b = hash_path(n->path);
    for (zf_node *o = h->buckets[b]; o; o = o->hnext)
        if (strcmp(o->path, n->path) == 0)
            return o;
    if (h->nnodes == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        zf_node **nb = realloc(h->by_id, cap * sizeof *nb);
        if (!nb)
            return NULL;
        h->by_id = nb;
        h->cap = cap;
    }
    n->id = ++h->nnodes;
    h->by_id[n->id - 1] = n;
    n->hnext = h->buckets[b];
    h->buckets[b] = n;
    return n;
}

static void node_free(zf_node *n)
{
    if (!n)
        return;
    zf_array_close(n->array);
    zf_node_meta_free(&n->meta);
    pthread_mutex_destroy(&n->mu);
    free(n->path);
    free(n->prefix);
    free(n);
}

static zf_node *node_new(const char *path, const char *prefix)
{
    zf_node *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    pthread_mutex_init(&n->mu, NULL);
    n->path = strdup(path);
    n->prefix = strdup(prefix);
    if (!n->path || !n->prefix) {
        node_free(n);
        return NULL;
    }
    return n;
}

static zf_node *find_locked(zf_hierarchy *h, const char *path)
{
    for (zf_node *o = h->buckets[hash_path(path)]; o; o = o->hnext)
        if (strcmp(o->path, path) == 0)
            return o;
    return NULL;
}

/* ---------- public ---------- */

zf_status zf_hierarchy_lookup(zf_hierarchy *h, const char *path, zf_node **out, zf_err *err)
{
    pthread_mutex_lock(&h->mu);
    zf_node *n = find_locked(h, path);
    pthread_mutex_unlock(&h->mu);
    if (n) {
        *out = n;
        return ZF_OK;
    }
    /* View path -> store prefix; every view path below a root array is absent. */
    const char *prefix = path;
    if (h->root_array_name) {
        if (strcmp(path, h->root_array_name) != 0)
            return ZF_ERR_NOT_FOUND;
        prefix = "";
    } else if (path[0] && !zf_key_is_valid(path)) {
        return ZF_ERR_NOT_FOUND;
    }
    n = node_new(path, prefix);
    if (!n)
        return ZF_ERR_NOMEM;
    zf_status st = load_meta(h, prefix, &n->meta, &n->mtime, err);
    if (st != ZF_OK) {
        node_free(n);
        return st;
    }
    n->is_dir = n->meta.kind == ZF_NODE_GROUP;
    if (!n->is_dir && n->meta.unsupported == ZF_OK) {
        zf_grid g;
        zf_grid_init(&g, n->meta.array.ndim, n->meta.array.shape, n->meta.array.chunks);
        n->size = zf_grid_nelems(&g) * n->meta.array.dtype.itemsize;
    }
    pthread_mutex_lock(&h->mu);
    zf_node *in = insert_locked(h, n);
    pthread_mutex_unlock(&h->mu);
    if (in != n)
        node_free(n);
    if (!in)
        return ZF_ERR_NOMEM;
    *out = in;
    return ZF_OK;
}

zf_status zf_hierarchy_child(zf_hierarchy *h, zf_node *dir, const char *name, zf_node **out,
                             zf_err *err)
{
    if (!dir->is_dir || !name[0] || strchr(name, '/') || strcmp(name, ".") == 0 ||
        strcmp(name, "..") == 0)
        return ZF_ERR_NOT_FOUND;
    char *path = join(dir->path, name);
    if (!path)
        return ZF_ERR_NOMEM;
    zf_status st = zf_hierarchy_lookup(h, path, out, err);
    free(path);
    return st;
}

zf_node *zf_hierarchy_node(zf_hierarchy *h, uint64_t id)
{
    pthread_mutex_lock(&h->mu);
    zf_node *n = id >= 1 && id <= h->nnodes ? h->by_id[id - 1] : NULL;
    pthread_mutex_unlock(&h->mu);
    return n;
}

void zf_hierarchy_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

static zf_status push_name(char ***names, size_t *n, size_t *cap, const char *name, size_t len)
{
    for (size_t i = 0; i < *n; i++)
        if (strlen((*names)[i]) == len && memcmp((*names)[i], name, len) == 0)
            return ZF_OK;
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

/* Children from consolidated metadata: keys "<prefix>/<child>/.zarray" or ".zgroup". */
static zf_status list_consolidated(zf_hierarchy *h, const char *prefix, char ***names, size_t *n,
                                   size_t *cap)
{
    size_t pl = strlen(prefix);
    yajl_val md = h->consolidated;
    for (size_t i = 0; i < md->u.object.len; i++) {
        const char *key = md->u.object.keys[i];
        if (!zf_key_is_valid(key)) {
            zf_log_warn(".zmetadata: ignoring invalid key \"%s\"", key);
            continue;
        }
        if (pl && (strncmp(key, prefix, pl) != 0 || key[pl] != '/'))
            continue;
        const char *rest = key + (pl ? pl + 1 : 0);
        const char *slash = strchr(rest, '/');
        if (!slash || (strcmp(slash + 1, ".zarray") && strcmp(slash + 1, ".zgroup")))
            continue;
        zf_status st = push_name(names, n, cap, rest, (size_t)(slash - rest));
        if (st != ZF_OK)
            return st;
    }
    return ZF_OK;
}

static zf_status list_store(zf_hierarchy *h, const char *prefix, char ***names, size_t *n,
                            size_t *cap, zf_err *err)
{
    zf_store_listing l;
    zf_status st = zf_store_list_dir(h->store, prefix, &l, err);
    if (st != ZF_OK)
        return st;
    for (size_t i = 0; i < l.n && st == ZF_OK; i++) {
        if (!l.entries[i].is_prefix)
            continue;
        char *child = join(prefix, l.entries[i].name);
        char *ka = child ? join(child, ".zarray") : NULL, *kg = child ? join(child, ".zgroup") : NULL;
        if (!ka || !kg)
            st = ZF_ERR_NOMEM;
        else if (zf_key_is_valid(child) && (doc_exists(h, ka) || doc_exists(h, kg)))
            st = push_name(names, n, cap, l.entries[i].name, strlen(l.entries[i].name));
        free(child);
        free(ka);
        free(kg);
    }
    zf_store_listing_free(&l);
    return st;
}

zf_status zf_hierarchy_list(zf_hierarchy *h, zf_node *dir, char ***names, size_t *n, zf_err *err)
{
    *names = NULL;
    *n = 0;
    size_t cap = 0;
    zf_status st;
    if (!dir->is_dir)
        return ZF_ERR_INVALID;
    if (dir->virtual_root)
        st = push_name(names, n, &cap, h->root_array_name, strlen(h->root_array_name));
    else if (h->consolidated)
        st = list_consolidated(h, dir->prefix, names, n, &cap);
    else
        st = list_store(h, dir->prefix, names, n, &cap, err);
    if (st != ZF_OK) {
        zf_hierarchy_names_free(*names, *n);
        *names = NULL;
        *n = 0;
    }
    return st;
}

zf_status zf_hierarchy_array(zf_hierarchy *h, zf_node *node, zf_array **out, zf_err *err)
{
    if (node->is_dir)
        return ZF_ERR_INVALID;
    if (node->meta.unsupported != ZF_OK)
        return zf_fail(err, node->meta.unsupported, "%s",
                       node->meta.unsupported_why ? node->meta.unsupported_why : "unsupported");
    /* Worker threads start on first use, so that none exist when the daemon forks. */
    pthread_mutex_lock(&h->mu);
    if (!h->pool && zf_pool_new(h->threads, &h->pool) != ZF_OK)
        zf_log_warn("cannot start decode threads; decoding on the reading thread only");
    pthread_mutex_unlock(&h->mu);
    pthread_mutex_lock(&node->mu);
    zf_status st = ZF_OK;
    if (!node->array)
        st = zf_array_open(h->store, node->prefix, &node->meta.array, h->cache, h->pool, node->id,
                           &node->array, err);
    *out = node->array;
    pthread_mutex_unlock(&node->mu);
    return st;
}

zf_cache *zf_hierarchy_cache(zf_hierarchy *h) { return h->cache; }

static zf_status read_consolidated(zf_hierarchy *h, zf_err *err)
{
    char *text;
    size_t len;
    zf_status st = get_doc(h, ".zmetadata", &text, &len, err);
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
    h->consolidated_doc = doc;
    h->consolidated = md;
    zf_store_stat(h->store, ".zmetadata", NULL, &h->root_mtime, NULL);
    return ZF_OK;
}

zf_status zf_hierarchy_open(zf_store *store, const char *store_name,
                            const zf_hierarchy_options *opts, zf_hierarchy **out, zf_err *err)
{
    zf_hierarchy *h = calloc(1, sizeof *h);
    if (!h) {
        zf_store_close(store);
        return ZF_ERR_NOMEM;
    }
    h->store = store;
    pthread_mutex_init(&h->mu, NULL);
    clock_gettime(CLOCK_REALTIME, &h->root_mtime);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    h->threads = opts->threads ? opts->threads : (unsigned)(ncpu > 0 ? ncpu : 1);
    zf_status st;
    if ((st = zf_cache_new(opts->cache_size, &h->cache)) != ZF_OK)
        goto fail;

    /* Dialect detection at the store root (DESIGN.md). */
    bool has_zarray = zf_store_stat(store, ".zarray", NULL, NULL, NULL) == ZF_OK;
    bool has_zgroup = zf_store_stat(store, ".zgroup", NULL, NULL, NULL) == ZF_OK;
    if (!has_zarray && !has_zgroup) {
        if (zf_store_stat(store, "zarr.json", NULL, NULL, NULL) == ZF_OK)
            st = zf_fail(err, ZF_ERR_UNSUPPORTED, "zarr.json: Zarr v3 is not supported yet");
        else
            st = zf_fail(err, ZF_ERR_NOT_FOUND,
                         "%s: not a Zarr hierarchy (no .zgroup, .zarray or zarr.json at its root)",
                         store->url);
        goto fail;
    }
    if ((st = read_consolidated(h, err)) != ZF_OK)
        goto fail;

    zf_node *root;
    if (has_zarray) { /* the root is an array: a directory holding one file */
        if (!(h->root_array_name = zf_root_array_name(store_name))) {
            st = ZF_ERR_NOMEM;
            goto fail;
        }
        zf_node *vr = node_new("", "");
        if (!vr) {
            st = ZF_ERR_NOMEM;
            goto fail;
        }
        vr->is_dir = vr->virtual_root = true;
        vr->meta.format = ZF_FORMAT_V2;
        vr->mtime = h->root_mtime;
        insert_locked(h, vr);
        if ((st = zf_hierarchy_lookup(h, h->root_array_name, &root, err)) != ZF_OK)
            goto fail;
        vr->mtime = root->mtime;
    } else if ((st = zf_hierarchy_lookup(h, "", &root, err)) != ZF_OK) {
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
    zf_pool_free(h->pool); /* drains prefetches before arrays go away */
    for (size_t i = 0; i < h->nnodes; i++)
        node_free(h->by_id[i]);
    free(h->by_id);
    if (h->consolidated_doc)
        yajl_tree_free(h->consolidated_doc);
    zf_cache_free(h->cache);
    zf_store_close(h->store);
    free(h->root_array_name);
    pthread_mutex_destroy(&h->mu);
    free(h);
}
