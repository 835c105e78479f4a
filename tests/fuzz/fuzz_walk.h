/* fuzz_walk.h — open a hierarchy over a store and visit it the way a user of the mount would:
 * list every group, look up every child, read the first and last bytes of every array (absent
 * chunks read as the fill value) and of every sidecar. Bounded: at most FZ_WALK_NODES nodes,
 * depth FZ_WALK_DEPTH, arrays whose chunks hold at most FZ_MAX_CHUNK bytes. */
#ifndef ZARRFS_FUZZ_WALK_H
#define ZARRFS_FUZZ_WALK_H

#include "fuzz.h"
#include "zarrfs/array.h"
#include "zarrfs/hierarchy.h"

#define FZ_WALK_NODES 64
#define FZ_WALK_DEPTH 6
#define FZ_WALK_READ 4096

typedef struct fz_walk_state {
    zf_hierarchy *h;
    unsigned nodes;
    uint8_t buf[FZ_WALK_READ];
} fz_walk_state;

static void fz_walk_read_array(fz_walk_state *w, zf_node *node)
{
    const zf_array_meta *a = &node->meta.array;
    if (node->meta.kind != ZF_NODE_ARRAY || node->meta.unsupported != ZF_OK)
        return;
    uint64_t elems = zf_array_meta_chunk_elems(a);
    if (a->dtype.itemsize && elems > FZ_MAX_CHUNK / a->dtype.itemsize)
        return;
    zf_array *arr;
    zf_err err = {""};
    if (zf_hierarchy_array(w->h, node, &arr, &err) != ZF_OK)
        return;
    uint64_t total = zf_array_nbytes(arr);
    if (zf_array_meta_is_text(a)) { /* text: its size is known once read (0 before) */
        size_t got;
        zf_array_read(arr, 0, w->buf, sizeof w->buf, &got, &err);
        return;
    }
    FZ_CHECK(total == node->size, "array %s: %llu bytes, node says %llu", node->path,
             (unsigned long long)total, (unsigned long long)node->size);
    size_t got;
    if (zf_array_read(arr, 0, w->buf, sizeof w->buf, &got, &err) == ZF_OK)
        FZ_CHECK(got == (total < sizeof w->buf ? total : sizeof w->buf), "short read: %zu", got);
    if (total > sizeof w->buf &&
        zf_array_read(arr, total - sizeof w->buf, w->buf, sizeof w->buf, &got, &err) == ZF_OK)
        FZ_CHECK(got == sizeof w->buf, "short read at the end: %zu", got);
}

static void fz_walk_dir(fz_walk_state *w, zf_node *dir, unsigned depth)
{
    char **names;
    size_t n;
    zf_err err = {""};
    if (depth > FZ_WALK_DEPTH || zf_hierarchy_list(w->h, dir, &names, &n, &err) != ZF_OK)
        return;
    for (size_t i = 0; i < n && w->nodes < FZ_WALK_NODES; i++) {
        zf_node *child;
        w->nodes++;
        if (zf_hierarchy_child(w->h, dir, names[i], &child, &err) != ZF_OK)
            continue;
        if (child->is_dir) {
            fz_walk_dir(w, child, depth + 1);
        } else if (child->derived) {
            size_t got;
            zf_hierarchy_read_derived(w->h, child, 0, w->buf, sizeof w->buf, &got, &err);
        } else {
            fz_walk_read_array(w, child);
        }
    }
    zf_hierarchy_names_free(names, n);
}

/* Open a hierarchy over store (which it takes) and walk it. A chunk cache of 1 MiB: readahead
 * and prefetching stay within a quarter of it (two chunks of FZ_MAX_CHUNK), so a walk's two
 * reads of an array do not make the worker decode bands of chunks nobody reads (with 8 MiB,
 * a fifth of fuzz_hierarchy's time). */
static void fz_walk(zf_store *store)
{
    static fz_walk_state w;
    zf_hierarchy_options o = {.cache_size = 1u << 20, .threads = 1, .io_threads = 1,
                              .readahead = 1, .sidecars = ZF_SIDECAR_ALL};
    zf_err err = {""};
    w.nodes = 0;
    if (zf_hierarchy_open(store, "fuzz.zarr", &o, &w.h, &err) != ZF_OK)
        return;
    zf_node *root;
    if (zf_hierarchy_lookup(w.h, "", &root, &err) == ZF_OK && root->is_dir)
        fz_walk_dir(&w, root, 0);
    zf_hierarchy_free(w.h);
    w.h = NULL;
}

#endif
