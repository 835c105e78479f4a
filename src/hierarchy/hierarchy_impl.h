/* hierarchy_impl.h — what hierarchy.c (reading, lookups, listings) and hierarchy_write.c
 * (writing: new groups and arrays, attributes, resizing) share. */
#ifndef ZARRFS_HIERARCHY_IMPL_H
#define ZARRFS_HIERARCHY_IMPL_H

#include <stdatomic.h>

#include "zarrfs/hierarchy.h"

/* Buckets of the path table at first; it doubles when it holds as many nodes. */
#define NBUCKETS 4096

/* Consolidated metadata indexed once (consolidated.c): documents by key, children by parent. */
typedef struct zf_cindex zf_cindex;
/* Index md, the consolidated metadata object (it must outlive the index): v2 (.zmetadata: a
 * child N of P is named by "P/N/.zarray" or "P/N/.zgroup") or v3 (keys are node paths; their
 * ancestors are groups too). Invalid keys and names longer than NAME_MAX are left out and warned
 * about here, once each, naming `source`. O(K log K) for K keys. ZF_ERR_NOMEM. */
zf_status zf_cindex_build(yajl_val md, bool v2, const char *source, zf_cindex **out);
void zf_cindex_free(zf_cindex *ix);
/* md's value for key (the first of equal keys), or NULL; a binary search. */
yajl_val zf_cindex_get(const zf_cindex *ix, const char *key);
/* Append the names of the children of the node at path ("" the root) to a names list (in byte
 * order, each once); O(log K + children). */
zf_status zf_cindex_list(const zf_cindex *ix, const char *path, char ***names, size_t *n,
                         size_t *cap);
/* Whether md names a node below path (a valid key), listed or not. */
bool zf_cindex_has_below(const zf_cindex *ix, const char *path);

struct zf_hierarchy {
    zf_store *store;
    zf_cache *cache;
    zf_pool *pool; /* started on the first array open */
    unsigned threads;
    double ttl;         /* metadata TTL in seconds; 0: forever */
    unsigned readahead; /* bands */
    unsigned readahead_chunks; /* chunks ahead at least (remote stores) */
    bool warned_unlistable;
    unsigned sidecars;  /* ZF_SIDECAR_* bits */
    pthread_mutex_t mu;
    zf_node **buckets; /* the path table: nbuckets chains (a power of two) */
    size_t nbuckets;
    zf_node **by_id; /* by_id[id - 1] */
    size_t nnodes, cap;
    zf_format format;      /* the dialect, detected at open */
    yajl_val consolidated; /* .zmetadata's "metadata" object (v2), the root zarr.json's
                              consolidated_metadata "metadata" object (v3), or NULL */
    yajl_val consolidated_doc;
    zf_cindex *cindex;     /* consolidated's keys by name and its nodes by parent, with it */
    struct timespec root_mtime;
    char *root_array_name; /* non-NULL when the store root is an array */
    char *nc_root_name;    /* the root group's netCDF view (-o sidecars=nc), or NULL */
    /* writing (hierarchy_write.c) */
    bool writable, write_empty_chunks;
    zf_pool *wb_pool;      /* writebacks (I/O bound: more threads than CPUs) */
    zf_node *pending;      /* new empty files without metadata yet (their `pending_next`) */
    struct zf_retired *retired; /* replaced metadata and arrays, freed with the hierarchy */
    /* changes of metadata or attributes made or seen so far (zf_h_meta_changed): derived
     * nodes made before the latest are remade when next used */
    _Atomic uint64_t meta_gen;
    zf_hierarchy_gone_fn gone; /* zf_hierarchy_on_gone (a version's: its parent's is called) */
    void *gone_ctx;
    /* versions (versions.c) */
    char *store_name;           /* as opened: a version's hierarchy names a root array alike */
    zf_hierarchy_options opts;  /* as opened: a version's hierarchy takes them, read-only */
    zf_hierarchy *parent;       /* a version's hierarchy: the mount's, whose chunk cache, decode
                                   workers, cache ids and gone function it uses; else NULL */
    uint64_t id_base;           /* node ids are id_base + 1, + 2, ... (0 for the mount's) */
    _Atomic uint64_t next_cache_id; /* the mount's: the last chunk-cache id given an array */
    struct zf_vstate *versions; /* the mount's, zf_hierarchy_set_versions; else NULL */
};

/* A version's node ids: its slot k (>= 1) above bit 40, and below that its own ids (as the
 * mount's are), so that no hierarchy reaches another's ids nor FUSE's special inode numbers
 * (the statistics file's 2^62, opendir's counted down from 2^64 - 1). */
#define ZF_VERSION_SHIFT 40
#define ZF_VERSION_SLOTS ((uint64_t)1 << 21)

/* The mount's hierarchy (h itself, or the parent of a version's). */
static inline zf_hierarchy *zf_h_root(zf_hierarchy *h) { return h->parent ? h->parent : h; }

/* The hierarchy node n belongs to (h when n has none: not yet published). */
static inline zf_hierarchy *zf_h_owner(zf_hierarchy *h, const zf_node *n)
{
    return n && n->owner ? n->owner : h;
}

/* Open a hierarchy (zf_hierarchy_open); with parent, a version's: its chunk cache and decode
 * workers are parent's, its node ids start after id_base. */
zf_status zf_h_open(zf_store *store, const char *store_name, const zf_hierarchy_options *opts,
                    zf_hierarchy *parent, uint64_t id_base, zf_hierarchy **out, zf_err *err);
/* The node of id in h itself (not a version's), brought up to date as zf_hierarchy_node says. */
zf_node *zf_h_own_node(zf_hierarchy *h, uint64_t id);
/* Insert n into the id table only (h->mu held): the versions tree's nodes have no view path in
 * h. NULL without memory (or ids). */
zf_node *zf_h_insert_id_locked(zf_hierarchy *h, zf_node *n);

/* Versions (versions.c), of the mount's hierarchy h. Whether dir's child `name` is the versions
 * tree's (the hidden directory of the root, or anything in it). */
bool zf_h_versions_route(zf_hierarchy *h, const zf_node *dir, const char *name);
/* zf_hierarchy_child(_entry) in the versions tree (entry: as zf_hierarchy_child_entry, a
 * version not opened yet gets a stand-in with its root's id and a file not read yet its node). */
zf_status zf_h_versions_child(zf_hierarchy *h, zf_node *dir, const char *name, bool entry,
                              zf_node **out, zf_err *err);
/* zf_hierarchy_list of a directory of the versions tree (dir->synthetic). */
zf_status zf_h_versions_list(zf_hierarchy *h, zf_node *dir, char ***names, size_t *n,
                             zf_err *err);
/* zf_hierarchy_node for the id of a version's node (id >> ZF_VERSION_SHIFT not 0). */
zf_node *zf_h_versions_node(zf_hierarchy *h, uint64_t id);
/* Bring a text file of the versions tree up to date for zf_hierarchy_node and reads: read it
 * when its node has no text yet. False when it cannot be (gone, or failing: err says why). */
zf_status zf_h_versions_file_ready(zf_hierarchy *h, zf_node *n, zf_err *err);
/* zf_hierarchy_attrs_ready of a node of the versions tree. */
bool zf_h_versions_attrs_ready(const zf_node *n);
/* Add the traffic of the versions' stores to *s. */
void zf_h_versions_store_stats(zf_hierarchy *h, zf_store_stats *s);
/* Free the versions' hierarchies (after the decode workers stopped) and destroy the provider. */
void zf_h_versions_free(zf_hierarchy *h);

/* Something replaced while other threads may still use it, freed by zf_hierarchy_free. */
typedef struct zf_retired {
    void (*free_fn)(void *);
    void *p;
    struct zf_retired *next;
} zf_retired;

char *zf_h_join(const char *prefix, const char *name);
zf_status zf_h_get_doc(zf_hierarchy *h, const char *key, char **text, size_t *len, zf_err *err);
zf_status zf_h_load_meta(zf_hierarchy *h, const char *prefix, zf_node_meta *m,
                         struct timespec *mtime, zf_err *err);
char *zf_h_data_prefix(zf_hierarchy *h, const char *path);
zf_node *zf_h_insert_locked(zf_hierarchy *h, zf_node *n);
/* Make new node n findable, unlinking `replaces` (may be NULL) first, under h->mu; when a node
 * of that path got there first, n is freed and *out is that node. ZF_ERR_NOMEM (n freed). */
zf_status zf_h_publish(zf_hierarchy *h, zf_node *n, zf_node *replaces, zf_node **out);
void zf_h_node_free(zf_node *n);
zf_node *zf_h_node_new(const char *path, const char *prefix);
double zf_h_mono_now(void);
void zf_h_unlink_locked(zf_hierarchy *h, zf_node *n);
zf_node *zf_h_find_locked(zf_hierarchy *h, const char *path);
zf_pool *zf_h_ensure_pool(zf_hierarchy *h);
/* Append a copy of name[0..len) to a names list (growing it), unless it is longer than NAME_MAX
 * (skipped with a warning: no path could name it). The list may then hold a name twice:
 * zf_h_unique_names removes the later copies. */
zf_status zf_h_push_name(char ***names, size_t *n, size_t *cap, const char *name, size_t len);
/* Remove the later copies of names that occur more than once, keeping the order of the first
 * ones; O(n log n), so that a listing of many children (a hostile store's million) is not
 * quadratic. */
zf_status zf_h_unique_names(char **names, size_t *n);
/* Bytes of an array's flat view: product(shape) * itemsize. */
uint64_t zf_h_array_nbytes(const zf_array_meta *m);
/* Names of the pending (metadata-less) files in dir, added to a listing. */
zf_status zf_h_list_pending(zf_hierarchy *h, zf_node *dir, char ***names, size_t *n,
                            size_t *cap);
/* Sidecars (sidecar.c): the derived node at view path `path` when its name is an enabled
 * sidecar of an array node or a group's view (ZF_ERR_NOT_FOUND otherwise; with `entry`, a
 * group's view is not made: zf_hierarchy_child_entry); the sidecar names of node `node` (its
 * file name `name`) added to a listing. */
zf_status zf_h_sidecar_lookup(zf_hierarchy *h, const char *path, bool entry, zf_node **out,
                              zf_err *err);
/* Remake a derived node's header (and size) when its array's size changed or metadata changed
 * since it was made (zf_h_meta_changed). */
void zf_h_sidecar_refresh(zf_hierarchy *h, zf_node *n);
/* Derived node n still leads from its path, and its array from the array's (false once the
 * array is deleted, or found removed or replaced in the store). */
bool zf_h_sidecar_current(zf_hierarchy *h, const zf_node *n);
zf_status zf_h_sidecar_names(zf_hierarchy *h, const zf_node *node, const char *name,
                             char ***names, size_t *n, size_t *cap);
/* The flat encoding's data type of array metadata a when it is a plain NumPy typestr such as
 * "<f8": byte order ('<', '>', '|' or '='), kind ('b' for bool, 'u', 'i', 'f', 'c', ...) and
 * size in bytes; false for structured and other data types (sidecar.c). */
bool zf_h_plain_type(const zf_array_meta *a, char *order, char *kind, unsigned *size);
/* The header of a TIFF view (tiff.c; TIFF 6.0 sections 2 and 8, BigTIFF when the view passes
 * 4 GiB): for an array of ndim >= 2 dimensions `shape` (elements) of plain numbers (kind 'u',
 * 'i', 'f', 'c' and size in bytes: u/i 1-8, f 2-8, c 8 or 16), in the byte order of its flat
 * bytes, with `description` (ASCII text, NULL for none) as the first page's ImageDescription:
 * one page per plane of the last two dimensions, in C order, its strips (about 1 MiB each)
 * pointing at the array's flat bytes placed right after the header, at offset *out_len.
 * *out (malloc'd) and *out_len get the header; with out NULL, only whether there is one.
 * ZF_ERR_NOT_FOUND with *why: no TIFF for this array (fewer than 2 dimensions, another data
 * type, an empty array, a plane of 2^32 rows or columns, a header over 64 MiB); ZF_ERR_NOMEM. */
zf_status zf_h_tiff_header(unsigned ndim, const uint64_t *shape, char kind, unsigned size,
                           bool big_endian, const char *description, unsigned char **out,
                           size_t *out_len, const char **why);
/* zf_hierarchy_list of real nodes only (no derived file; not kept for the TTL), unsorted. */
zf_status zf_h_list_real(zf_hierarchy *h, zf_node *dir, char ***names, size_t *n, zf_err *err);
/* zf_hierarchy_lookup of real nodes only (no derived file). */
zf_status zf_h_lookup_real(zf_hierarchy *h, const char *path, zf_node **out, zf_err *err);
/* The netCDF classic view of group node `group` (netcdf.c; CDF-2, CDF-5 where a data type or
 * size needs it): the header (*hdr, malloc'd, *hdr_len bytes), where each array directly in the
 * group lies after it (*segs, malloc'd, *nsegs of them: big-endian, so little-endian arrays are
 * swapped), and the view's size. Arrays netCDF classic cannot hold are left out (logged) and
 * named in the global attribute zarrfs_omitted_variables. Looks nodes up: call without locks.
 * Errors: those of listing the group; ZF_ERR_NOT_FOUND when the header would pass 64 MiB;
 * ZF_ERR_NOMEM. */
zf_status zf_h_nc_view(zf_hierarchy *h, zf_node *group, unsigned char **hdr, size_t *hdr_len,
                       zf_view_segment **segs, size_t *nsegs, uint64_t *size);
/* Count a change of some node's metadata or attributes, after the node holds the new values:
 * derived headers made before it are remade when next used (zf_h_sidecar_refresh). */
void zf_h_meta_changed(zf_hierarchy *h);
/* Node n no longer leads from its path (deleted, gone from the store: deleted; or replaced):
 * tell the hierarchy's user (zf_hierarchy_on_gone) about its sidecars' names, and with self its
 * own. Call with no hierarchy or node lock held. */
void zf_h_names_gone(zf_hierarchy *h, const zf_node *n, bool self, bool deleted);
/* Free what zf_h_retire kept (hierarchy teardown). */
void zf_h_free_retired(zf_hierarchy *h);

#endif
