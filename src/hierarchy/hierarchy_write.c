/* hierarchy_write.c — changes to the hierarchy through a -o rw mount (hierarchy.h, "writing"):
 * chunk writes with growth, flushes, resizing along the first dimension, new groups and arrays,
 * attributes, deletion.
 *
 * Metadata documents: Zarr v2 "Metadata" (.zarray), "Groups" (.zgroup), "Attributes" (.zattrs);
 * Zarr v3 core "Metadata" (zarr.json: "shape", "attributes", node_type "group"). A node whose
 * metadata changes keeps its id (the open files and the kernel's inode); what it replaced (the
 * parsed metadata, the array object) is retired, not freed, since other threads may still be
 * reading it, and freed with the hierarchy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hierarchy_impl.h"
#include "zarrfs/json.h"
#include "zarrfs/log.h"

static void retire(zf_hierarchy *h, void (*free_fn)(void *), void *p)
{
    zf_retired *r = malloc(sizeof *r);
    if (!r)
        return; /* leak rather than free what a reader may hold */
    pthread_mutex_lock(&h->mu);
    *r = (zf_retired){.free_fn = free_fn, .p = p, .next = h->retired};
    h->retired = r;
    pthread_mutex_unlock(&h->mu);
}

void zf_h_free_retired(zf_hierarchy *h)
{
    for (zf_retired *r = h->retired, *next; r; r = next) {
        next = r->next;
        r->free_fn(r->p);
        free(r);
    }
    h->retired = NULL;
}

static void free_meta(void *p)
{
    zf_node_meta_free(p);
    free(p);
}

static void free_array(void *p) { zf_array_close(p); }

zf_status zf_hierarchy_can_write(const zf_hierarchy *h, zf_err *err)
{
    if (h->parent)
        return zf_fail(err, ZF_ERR_READONLY, "the versions of a repository are read-only");
    if (!h->writable)
        return zf_fail(err, ZF_ERR_READONLY, "mounted read-only (mount with -o rw to write)");
    if (!zf_store_is_writable(h->store))
        return zf_fail(err, ZF_ERR_READONLY, "%s: this store is read-only", h->store->url);
    if (h->format != ZF_FORMAT_V2 && h->format != ZF_FORMAT_V3)
        return zf_fail(err, ZF_ERR_READONLY, "Zarr %s hierarchies are read-only",
                       zf_format_name(h->format));
    return ZF_OK;
}

/* The hierarchy node n belongs to, in *h (a version's for its nodes); ZF_ERR_READONLY for the
 * directories and files of the versions tree, which belong to none. */
static zf_status owner(zf_hierarchy **h, const zf_node *n, zf_err *err)
{
    *h = zf_h_owner(*h, n);
    if (n && n->synthetic)
        return zf_fail(err, ZF_ERR_READONLY, "%s: the versions of a repository are read-only",
                       n->path);
    return ZF_OK;
}

/* Metadata changes: also refused where consolidated metadata would go stale. */
static zf_status can_edit(const zf_hierarchy *h, zf_err *err)
{
    zf_status st = zf_hierarchy_can_write(h, err);
    if (st == ZF_OK && h->consolidated)
        st = zf_fail(err, ZF_ERR_UNSUPPORTED,
                     "the hierarchy has consolidated metadata (%s), which this change would "
                     "leave stale; only chunks can be written",
                     h->format == ZF_FORMAT_V2 ? ".zmetadata" : "zarr.json");
    return st;
}

static zf_status set_doc(zf_hierarchy *h, const char *prefix, const char *name, const char *text,
                         size_t len, zf_err *err)
{
    char *key = zf_h_join(prefix, name);
    if (!key)
        return ZF_ERR_NOMEM;
    zf_status st = zf_store_set(h->store, key, (const uint8_t *)text, len, err);
    free(key);
    return st;
}

static const char *doc_name(const zf_hierarchy *h, zf_node_kind kind)
{
    if (h->format == ZF_FORMAT_V3)
        return "zarr.json";
    return kind == ZF_NODE_ARRAY ? ".zarray" : ".zgroup";
}

/* ----- arrays ----- */

/* The node's array, opened for writing. */
static zf_status writable_array(zf_hierarchy *h, zf_node *node, zf_array **out, zf_err *err)
{
    zf_status st = owner(&h, node, err);
    if (st == ZF_OK)
        st = zf_hierarchy_can_write(h, err);
    if (st != ZF_OK)
        return st;
    if (node->is_dir)
        return ZF_ERR_IS_DIR;
    if (node->derived)
        return zf_fail(err, ZF_ERR_PERMISSION, "%s: a read-only file derived from %s",
                       node->path, node->base->path);
    if (node->pending)
        return zf_fail(err, ZF_ERR_INVALID, "%s: no array metadata yet (set user.zarr.metadata "
                       "first)", node->path);
    if ((st = zf_hierarchy_array(h, node, out, err)) != ZF_OK)
        return st;
    return zf_array_enable_write(*out, h->write_empty_chunks, err);
}

zf_status zf_hierarchy_flush(zf_hierarchy *h, zf_node *node, zf_err *err)
{
    if (!node) /* (a version's hierarchy never has dirty chunks: the cache's are the mount's) */
        return h->parent ? ZF_OK : zf_cache_flush(h->cache, ZF_CACHE_ALL, 0, 0, 0, err);
    pthread_mutex_lock(&node->mu);
    zf_array *a = node->array;
    pthread_mutex_unlock(&node->mu);
    return a ? zf_array_flush(a, err) : ZF_OK;
}

zf_status zf_hierarchy_flush_aged(zf_hierarchy *h, double idle, double max_age, zf_err *err)
{
    if (h->parent)
        return ZF_OK;
    return zf_cache_flush(h->cache, ZF_CACHE_ALL, idle, max_age, 0, err);
}

/* Bytes of one row along the first dimension; 0 for 0-d arrays. */
static uint64_t row_bytes(const zf_array_meta *m)
{
    if (m->ndim == 0)
        return 0;
    uint64_t r = m->dtype.itemsize;
    for (unsigned d = 1; d < m->ndim; d++)
        r *= m->shape[d];
    return r;
}

/* Set the fill value over bytes [from, to) of the flat view (the rows a shrink drops from its
 * last chunks), in pieces. */
static zf_status fill_bytes(zf_array *a, const zf_array_meta *m, uint64_t from, uint64_t to,
                            zf_err *err)
{
    size_t isz = m->dtype.itemsize, piece = (size_t)((1u << 20) / isz * isz);
    uint8_t *buf = malloc(piece);
    if (!buf)
        return ZF_ERR_NOMEM;
    for (size_t i = 0; i < piece; i++)
        buf[i] = m->fill_value[i % isz];
    zf_status st = ZF_OK;
    for (uint64_t o = from; st == ZF_OK && o < to; o += piece) {
        size_t n = to - o < piece ? (size_t)(to - o) : piece;
        st = zf_array_write(a, o, buf, n, err);
    }
    free(buf);
    return st;
}

/* Parse an array document of the hierarchy's format. */
static zf_status parse_array_doc(zf_hierarchy *h, const char *key, const char *text, size_t len,
                                 const char *attrs, zf_node_meta *m, zf_err *err)
{
    zf_status st = h->format == ZF_FORMAT_V2
                       ? zf_meta_parse_v2_array(key, text, len, attrs, m, err)
                       : zf_meta_parse_v3(key, text, len, m, err);
    if (st == ZF_OK && m->kind != ZF_NODE_ARRAY)
        st = zf_fail(err, ZF_ERR_INVALID, "%s: not an array document", key);
    if (st == ZF_OK && m->unsupported != ZF_OK)
        st = zf_fail(err, ZF_ERR_INVALID, "%s: %s", key,
                     m->unsupported_why ? m->unsupported_why : "unsupported");
    /* Arrays of variable-length elements read as text (docs/formats.md): zarrfs writes none. */
    if (st == ZF_OK && m->array.variable_length)
        st = zf_fail(err, ZF_ERR_INVALID,
                     "%s: variable-length data type %s: such arrays are read-only text, zarrfs "
                     "does not create them", key, m->array.dtype_json ? m->array.dtype_json : "?");
    return st;
}

static zf_status resize_locked(zf_hierarchy *h, zf_node *node, zf_array *a, uint64_t size,
                               zf_err *err)
{
    const zf_array_meta *m = &node->meta.array;
    uint64_t row = row_bytes(m);
    if (m->ndim == 0 || row == 0)
        return zf_fail(err, ZF_ERR_INVALID, "%s: %s arrays cannot be resized", node->path,
                       m->ndim == 0 ? "0-d" : "empty");
    if (size % row)
        return zf_fail(err, ZF_ERR_INVALID,
                       "%s: %llu bytes is not a whole number of %llu-byte rows", node->path,
                       (unsigned long long)size, (unsigned long long)row);
    uint64_t rows = size / row, old_rows = m->shape[0];
    if (rows == old_rows)
        return ZF_OK;
    zf_status st = can_edit(h, err);
    if (st != ZF_OK)
        return st;
    /* Shrinking: the chunk rows (along the first dimension) that keep elements, and where the
     * last of them ends; growing a rectilinear grid past its declared edges fails below, when
     * the new document is parsed. */
    uint64_t keep_chunk_rows = 0;
    if (rows < old_rows) { /* the fill value where the last chunks reach past the new end */
        zf_grid g;
        zf_grid_init_meta(&g, m);
        uint64_t end_rows = 0, lo, edge;
        if (rows > 0) {
            zf_grid_chunk_along(&g, 0, rows - 1, &keep_chunk_rows, &lo, &edge);
            keep_chunk_rows++;
            end_rows = lo + edge < old_rows ? lo + edge : old_rows;
        }
        if ((st = fill_bytes(a, m, rows * row, end_rows * row, err)) != ZF_OK)
            return st;
    }
    if ((st = zf_array_flush(a, err)) != ZF_OK)
        return st;

    /* The new document: the old one with shape[0] replaced. */
    char shape[ZF_MAX_DIMS * 24 + 4];
    size_t o = 0;
    for (unsigned d = 0; d < m->ndim; d++)
        o += (size_t)snprintf(shape + o, sizeof shape - o, "%s%llu", d ? ", " : "[",
                              (unsigned long long)(d ? m->shape[d] : rows));
    snprintf(shape + o, sizeof shape - o, "]");
    const char *key = node->meta.metadata_key ? node->meta.metadata_key : doc_name(h, ZF_NODE_ARRAY);
    char *text;
    if ((st = zf_json_replace_member(key, node->meta.metadata_json,
                                     strlen(node->meta.metadata_json), "shape", shape, &text,
                                     err)) != ZF_OK)
        return st;
    zf_node_meta *nm = calloc(1, sizeof *nm);
    if (!nm) {
        free(text);
        return ZF_ERR_NOMEM;
    }
    st = parse_array_doc(h, key, text, strlen(text), node->meta.attributes_json, nm, err);
    if (st == ZF_OK) {
        nm->array.key_encoding = m->key_encoding; /* v2 nested keys detected at open */
        st = set_doc(h, node->prefix, doc_name(h, ZF_NODE_ARRAY), text, strlen(text), err);
    }
    free(text);
    if (st != ZF_OK) {
        free_meta(nm);
        return st;
    }
    if (rows < old_rows && (st = zf_array_erase_chunk_rows(a, keep_chunk_rows, err)) != ZF_OK)
        zf_log_error("%s: erasing chunks outside the shrunk array: %s", node->path, err->msg);
    /* The node takes the new metadata; the old metadata and array are retired. */
    zf_node_meta *old = malloc(sizeof *old);
    if (!old) {
        free_meta(nm);
        return ZF_ERR_NOMEM;
    }
    pthread_mutex_lock(&node->mu);
    *old = node->meta;
    node->meta = *nm;
    zf_array *old_array = node->array;
    node->array = NULL; /* reopened with a new chunk-cache id (zf_hierarchy_array) */
    node->size = size;
    clock_gettime(CLOCK_REALTIME, &node->mtime);
    pthread_mutex_unlock(&node->mu);
    free(nm);
    retire(h, free_meta, old);
    retire(h, free_array, old_array);
    zf_h_meta_changed(h);
    return ZF_OK;
}

zf_status zf_hierarchy_resize(zf_hierarchy *h, zf_node *node, uint64_t size, zf_err *err)
{
    zf_array *a;
    h = zf_h_owner(h, node);
    zf_status st = writable_array(h, node, &a, err);
    if (st != ZF_OK)
        return st;
    static pthread_mutex_t resize_mu = PTHREAD_MUTEX_INITIALIZER; /* one resize at a time */
    pthread_mutex_lock(&resize_mu);
    st = size == node->size ? ZF_OK : resize_locked(h, node, a, size, err);
    pthread_mutex_unlock(&resize_mu);
    return st;
}

zf_status zf_hierarchy_write(zf_hierarchy *h, zf_node *node, uint64_t offset, const void *buf,
                             size_t len, zf_err *err)
{
    zf_array *a;
    h = zf_h_owner(h, node);
    zf_status st = writable_array(h, node, &a, err);
    if (st != ZF_OK)
        return st;
    if (offset + len > node->size) { /* grow to the rows the write reaches */
        uint64_t row = row_bytes(&node->meta.array);
        if (row == 0)
            return zf_fail(err, ZF_ERR_INVALID, "%s: write past the end of a %s array",
                           node->path, node->meta.array.ndim ? "empty" : "0-d");
        uint64_t end = offset + len, rows = end / row + (end % row != 0);
        if ((st = zf_hierarchy_resize(h, node, rows * row, err)) != ZF_OK)
            return st;
        if ((st = writable_array(h, node, &a, err)) != ZF_OK)
            return st;
    }
    return zf_array_write(a, offset, buf, len, err);
}

/* ----- groups, new arrays, attributes ----- */

static zf_status check_name(const zf_hierarchy *h, const zf_node *dir, const char *name,
                            zf_err *err)
{
    if (!dir->is_dir || dir->virtual_root)
        return ZF_ERR_NOT_DIR;
    size_t n = strlen(name);
    if (!n || strchr(name, '/') || strchr(name, '\\') || !strcmp(name, ".") ||
        !strcmp(name, "..") || n > 255)
        return zf_fail(err, ZF_ERR_INVALID, "\"%s\": not a valid node name", name);
    /* Names the dialect reserves for its own keys. */
    if (name[0] == '.' && h->format == ZF_FORMAT_V2)
        return zf_fail(err, ZF_ERR_INVALID, "\"%s\": names starting with '.' are Zarr v2's own",
                       name);
    if (!strcmp(name, "zarr.json") || (h->format == ZF_FORMAT_V3 && !strcmp(name, "c")) ||
        !strcmp(name, ".zarrfs-stats"))
        return zf_fail(err, ZF_ERR_INVALID, "\"%s\": a reserved name", name);
    return ZF_OK;
}

/* The child must not exist yet: in the store, or as a pending file (pending files are in the
 * path table, so the lookup finds them too). A node with invalid or unsupported metadata exists. */
static zf_status check_absent(zf_hierarchy *h, zf_node *dir, const char *name, zf_err *err)
{
    zf_node *n;
    zf_status st = zf_hierarchy_child(h, dir, name, &n, err);
    if (st == ZF_OK || st == ZF_ERR_INVALID || st == ZF_ERR_UNSUPPORTED)
        return ZF_ERR_EXISTS;
    if (st != ZF_ERR_NOT_FOUND)
        return st;
    if (err)
        err->msg[0] = '\0';
    return ZF_OK;
}

/* Take node off the pending list (h->mu held); false when it is not there. */
static bool take_pending_locked(zf_hierarchy *h, zf_node *node)
{
    for (zf_node **pp = &h->pending; *pp; pp = &(*pp)->pending_next)
        if (*pp == node) {
            *pp = node->pending_next;
            return true;
        }
    return false;
}

/* A group's cached listing is stale after a child comes or goes. */
static void listing_changed(zf_node *dir)
{
    pthread_mutex_lock(&dir->mu);
    dir->listed = -1e300;
    pthread_mutex_unlock(&dir->mu);
}

zf_status zf_hierarchy_mkdir(zf_hierarchy *h, zf_node *dir, const char *name, zf_node **out,
                             zf_err *err)
{
    zf_status st;
    if ((st = owner(&h, dir, err)) || (st = can_edit(h, err)) ||
        (st = check_name(h, dir, name, err)) || (st = check_absent(h, dir, name, err)))
        return st;
    char *prefix = zf_h_join(dir->prefix, name);
    if (!prefix)
        return ZF_ERR_NOMEM;
    const char *doc = h->format == ZF_FORMAT_V2
                          ? "{\n    \"zarr_format\": 2\n}\n"
                          : "{\n    \"zarr_format\": 3,\n    \"node_type\": \"group\",\n"
                            "    \"attributes\": {}\n}\n";
    st = set_doc(h, prefix, doc_name(h, ZF_NODE_GROUP), doc, strlen(doc), err);
    if (st != ZF_OK) /* (a full store): not the directory it made without its document */
        zf_store_remove_dir(h->store, prefix, NULL);
    free(prefix);
    if (st == ZF_OK) {
        listing_changed(dir);
        st = zf_hierarchy_child(h, dir, name, out, err);
    }
    return st;
}

/* Erase every key below prefix, depth first, and its directories. */
static zf_status erase_tree(zf_hierarchy *h, const char *prefix, zf_err *err)
{
    zf_store_listing l;
    zf_status st = zf_store_list_dir(h->store, prefix, &l, err);
    if (st == ZF_ERR_NOT_FOUND)
        return ZF_OK;
    if (st != ZF_OK)
        return st;
    for (size_t i = 0; st == ZF_OK && i < l.n; i++) {
        char *k = zf_h_join(prefix, l.entries[i].name);
        if (!k) {
            st = ZF_ERR_NOMEM;
            break;
        }
        st = l.entries[i].is_prefix ? erase_tree(h, k, err) : zf_store_erase(h->store, k, err);
        free(k);
    }
    zf_store_listing_free(&l);
    return st == ZF_OK ? zf_store_remove_dir(h->store, prefix, err) : st;
}

/* Take a node out of the path table: it is gone (open files keep it by id). */
static void forget(zf_hierarchy *h, zf_node *dir, zf_node *n)
{
    pthread_mutex_lock(&h->mu);
    zf_h_unlink_locked(h, n);
    pthread_mutex_unlock(&h->mu);
    listing_changed(dir);
}

zf_status zf_hierarchy_rmdir(zf_hierarchy *h, zf_node *dir, const char *name, zf_err *err)
{
    zf_status st = owner(&h, dir, err);
    if (st == ZF_OK)
        st = can_edit(h, err);
    zf_node *n;
    if (st != ZF_OK || (st = zf_hierarchy_child(h, dir, name, &n, err)) != ZF_OK)
        return st;
    if (zf_hierarchy_node_in_versions(n)) /* (the versions' directory of the root) */
        return zf_fail(err, ZF_ERR_READONLY, "%s: the versions of a repository are read-only",
                       n->path);
    if (!n->is_dir)
        return ZF_ERR_NOT_DIR;
    char **names;
    size_t nn;
    if ((st = zf_hierarchy_list(h, n, &names, &nn, err)) != ZF_OK)
        return st;
    zf_hierarchy_names_free(names, nn);
    if (nn)
        return ZF_ERR_NOT_EMPTY;
    /* Nothing but the group's own documents may lie below it. */
    zf_store_listing l;
    st = zf_store_list_dir(h->store, n->prefix, &l, err);
    if (st == ZF_OK) {
        for (size_t i = 0; i < l.n && st == ZF_OK; i++) {
            const char *e = l.entries[i].name;
            if (l.entries[i].is_prefix ||
                (strcmp(e, ".zgroup") && strcmp(e, ".zattrs") && strcmp(e, "zarr.json")))
                st = zf_fail(err, ZF_ERR_NOT_EMPTY, "%s: holds \"%s\", which is not a Zarr node",
                             n->path, e);
        }
        zf_store_listing_free(&l);
    } else if (st == ZF_ERR_NOT_FOUND || st == ZF_ERR_UNSUPPORTED) {
        st = ZF_OK;
    }
    if (st == ZF_OK)
        st = erase_tree(h, n->prefix, err);
    if (st == ZF_OK)
        forget(h, dir, n);
    return st;
}

zf_status zf_hierarchy_unlink(zf_hierarchy *h, zf_node *dir, const char *name, zf_err *err)
{
    zf_node *n;
    zf_status st = owner(&h, dir, err);
    if (st != ZF_OK || (st = zf_hierarchy_child(h, dir, name, &n, err)) != ZF_OK)
        return st;
    if (zf_hierarchy_node_in_versions(n)) /* (the versions' directory of the root) */
        return zf_fail(err, ZF_ERR_READONLY, "%s: the versions of a repository are read-only",
                       n->path);
    if (n->derived)
        return zf_fail(err, ZF_ERR_PERMISSION, "%s: a file derived from %s is not deleted",
                       n->path, n->base->path);
    if (n->pending) { /* nothing stored */
        pthread_mutex_lock(&h->mu);
        bool taken = take_pending_locked(h, n);
        if (taken)
            zf_h_unlink_locked(h, n);
        pthread_mutex_unlock(&h->mu);
        if (taken)
            listing_changed(dir);
        return taken ? ZF_OK : ZF_ERR_NOT_FOUND;
    }
    if ((st = can_edit(h, err)) != ZF_OK)
        return st;
    if (n->is_dir)
        return ZF_ERR_IS_DIR;
    if ((st = zf_hierarchy_flush(h, n, err)) != ZF_OK) /* nothing left dirty for a gone array */
        return st;
    if ((st = erase_tree(h, n->prefix, err)) == ZF_OK) {
        forget(h, dir, n);
        zf_h_meta_changed(h);
        zf_h_names_gone(h, n, false, true); /* its sidecars (the kernel drops its own name) */
    }
    return st;
}

zf_status zf_hierarchy_create(zf_hierarchy *h, zf_node *dir, const char *name, zf_node **out,
                              zf_err *err)
{
    zf_status st;
    if ((st = owner(&h, dir, err)) || (st = can_edit(h, err)) ||
        (st = check_name(h, dir, name, err)) || (st = check_absent(h, dir, name, err)))
        return st;
    char *path = zf_h_join(dir->path, name), *prefix = zf_h_join(dir->prefix, name);
    zf_node *n = path && prefix ? zf_h_node_new(path, prefix) : NULL;
    free(path);
    free(prefix);
    if (!n)
        return ZF_ERR_NOMEM;
    n->pending = true;
    n->meta.format = h->format;
    n->meta.kind = ZF_NODE_ARRAY;
    n->loaded = zf_h_mono_now();
    clock_gettime(CLOCK_REALTIME, &n->mtime);
    pthread_mutex_lock(&h->mu);
    zf_node *in = zf_h_insert_locked(h, n);
    if (in == n) {
        n->pending_next = h->pending;
        h->pending = n;
    }
    pthread_mutex_unlock(&h->mu);
    if (in != n) {
        zf_h_node_free(n);
        return in ? ZF_ERR_EXISTS : ZF_ERR_NOMEM;
    }
    listing_changed(dir);
    *out = n;
    return ZF_OK;
}

zf_status zf_h_list_pending(zf_hierarchy *h, zf_node *dir, char ***names, size_t *n, size_t *cap)
{
    zf_status st = ZF_OK;
    size_t dl = strlen(dir->path);
    pthread_mutex_lock(&h->mu);
    for (zf_node *p = h->pending; p && st == ZF_OK; p = p->pending_next) {
        const char *rest = p->path;
        if (dl) {
            if (strncmp(p->path, dir->path, dl) != 0 || p->path[dl] != '/')
                continue;
            rest += dl + 1;
        }
        if (!strchr(rest, '/'))
            st = zf_h_push_name(names, n, cap, rest, strlen(rest));
    }
    pthread_mutex_unlock(&h->mu);
    return st;
}

zf_status zf_hierarchy_set_metadata(zf_hierarchy *h, zf_node *node, const char *json,
                                    size_t len, zf_err *err)
{
    zf_status st = owner(&h, node, err);
    if (st == ZF_OK)
        st = can_edit(h, err);
    if (st != ZF_OK)
        return st;
    if (!node->pending)
        return zf_fail(err, ZF_ERR_PERMISSION,
                       "%s: the metadata of an existing node is not replaced (set "
                       "user.zarr.attributes, or truncate to resize)", node->path);
    const char *name = doc_name(h, ZF_NODE_ARRAY);
    zf_node_meta m = {0};
    if ((st = parse_array_doc(h, name, json, len, NULL, &m, err)) != ZF_OK) {
        zf_node_meta_free(&m);
        return st == ZF_ERR_NOMEM ? st : ZF_ERR_INVALID; /* err already says why */
    }
    if ((st = set_doc(h, node->prefix, name, json, len, err)) != ZF_OK) {
        zf_store_remove_dir(h->store, node->prefix, NULL); /* as zf_hierarchy_mkdir */
        zf_node_meta_free(&m);
        return st;
    }
    pthread_mutex_lock(&h->mu);
    take_pending_locked(h, node);
    pthread_mutex_unlock(&h->mu);
    pthread_mutex_lock(&node->mu);
    node->meta = m;
    node->size = zf_h_array_nbytes(&m.array);
    clock_gettime(CLOCK_REALTIME, &node->mtime);
    node->pending = false;
    pthread_mutex_unlock(&node->mu);
    zf_h_meta_changed(h);
    return ZF_OK;
}

zf_status zf_hierarchy_set_attributes(zf_hierarchy *h, zf_node *node, const char *json,
                                      size_t len, zf_err *err)
{
    zf_status st = owner(&h, node, err);
    if (st == ZF_OK)
        st = can_edit(h, err);
    if (st != ZF_OK)
        return st;
    if (node->pending || node->virtual_root || node->derived)
        return zf_fail(err, ZF_ERR_PERMISSION, "%s: no metadata to give attributes to",
                       node->path[0] ? node->path : "/");
    yajl_val v;
    if ((st = zf_json_parse("user.zarr.attributes", json, len, &v, err)) != ZF_OK)
        return st;
    bool object = YAJL_IS_OBJECT(v);
    yajl_tree_free(v);
    if (!object)
        return zf_fail(err, ZF_ERR_INVALID, "user.zarr.attributes: expected a JSON object");
    char *attrs = strndup(json, len), *doc = NULL, *dims = NULL;
    if (!attrs)
        return ZF_ERR_NOMEM;
    /* A v2 array's dimension names are its attributes' _ARRAY_DIMENSIONS (as when read). */
    bool v2_array = h->format == ZF_FORMAT_V2 && !node->is_dir;
    if (v2_array &&
        zf_meta_v2_dimension_names(json, len, node->meta.array.ndim, &dims) != ZF_OK) {
        free(attrs);
        return ZF_ERR_NOMEM;
    }
    if (h->format == ZF_FORMAT_V2) {
        st = set_doc(h, node->prefix, ".zattrs", json, len, err);
    } else if (!node->meta.metadata_json) { /* an implicit group becomes an explicit one */
        if (asprintf(&doc, "{\n    \"zarr_format\": 3,\n    \"node_type\": \"group\",\n"
                           "    \"attributes\": %s\n}\n", attrs) < 0)
            doc = NULL;
        st = doc ? set_doc(h, node->prefix, "zarr.json", doc, strlen(doc), err) : ZF_ERR_NOMEM;
    } else {
        const char *key = node->meta.metadata_key ? node->meta.metadata_key : "zarr.json";
        st = zf_json_replace_member(key, node->meta.metadata_json,
                                    strlen(node->meta.metadata_json), "attributes", attrs, &doc,
                                    err);
        if (st == ZF_OK)
            st = set_doc(h, node->prefix, "zarr.json", doc, strlen(doc), err);
    }
    if (st != ZF_OK) {
        free(attrs);
        free(doc);
        free(dims);
        return st;
    }
    /* Readers may hold the old strings: retire them. */
    pthread_mutex_lock(&node->mu);
    retire(h, free, node->meta.attributes_json);
    node->meta.attributes_json = attrs;
    if (v2_array) {
        retire(h, free, node->meta.array.dimension_names_json);
        node->meta.array.dimension_names_json = dims;
    }
    if (doc) {
        retire(h, free, node->meta.metadata_json);
        node->meta.metadata_json = doc;
    }
    clock_gettime(CLOCK_REALTIME, &node->mtime);
    pthread_mutex_unlock(&node->mu);
    zf_h_meta_changed(h); /* the sidecar headers these attributes feed are remade */
    return ZF_OK;
}
