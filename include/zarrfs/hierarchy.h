/* hierarchy.h — paths of the mounted view to Zarr nodes; dialect detection; metadata caching.
 *
 * The view's paths are '/'-free-at-the-ends relative paths ("" is the mount root). Normally a
 * view path is the node's store prefix. When the store's root node is an array, the view root is
 * a directory holding that array as one file named after the store (DESIGN.md): the store's last
 * path component without a ".zarr", ".zr3" or ".zarr3" suffix, or "array" when nothing is left.
 *
 * Nodes live until zf_hierarchy_free, so their ids are stable (the FUSE layer uses them as inode
 * numbers; the root is id 1). */
#ifndef ZARRFS_HIERARCHY_H
#define ZARRFS_HIERARCHY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "zarrfs/array.h"
#include "zarrfs/cache.h"
#include "zarrfs/meta.h"
#include "zarrfs/pool.h"
#include "zarrfs/store.h"

typedef struct zf_node {
    uint64_t id;           /* >= 1; 1 is the view root */
    char *path;            /* view path */
    char *prefix;          /* store prefix of the node's keys */
    bool is_dir;           /* group, or the virtual root over a root array */
    bool virtual_root;     /* the directory that holds a root array */
    zf_node_meta meta;     /* parsed metadata (not for the virtual root) */
    struct timespec mtime; /* of the metadata key */
    uint64_t size;         /* arrays: bytes of the flat view */
    /* private to the hierarchy */
    pthread_mutex_t mu;
    zf_array *array;
    struct zf_node *hnext;
    double loaded;         /* monotonic seconds when the metadata was read or last confirmed */
    char **listing;        /* groups: the children last listed (NULL: not yet), and when */
    size_t nlisting;
    double listed;
} zf_node;

typedef struct zf_hierarchy zf_hierarchy;

typedef struct zf_hierarchy_options {
    size_t cache_size;     /* bytes of decoded chunks */
    unsigned threads;      /* decode workers (0: one per CPU; for a remote store at least
                              io_threads, since they mostly wait for the network) */
    unsigned io_threads;   /* concurrent store requests wanted (remote stores) */
    double metadata_ttl;   /* seconds a node's metadata and a group's listing are trusted before
                              they are read again; 0: forever */
    unsigned readahead;    /* bands of chunks a sequential reader is kept ahead by (0: 1) */
} zf_hierarchy_options;

/* Open the hierarchy in store, which passes to the hierarchy. The root's metadata is read and
 * checked now. Errors: ZF_ERR_NOT_FOUND (not a Zarr hierarchy: err says which keys were looked
 * for), ZF_ERR_INVALID (invalid root metadata: err names key and field), ZF_ERR_UNSUPPORTED
 * (a dialect zarrfs does not read yet), ZF_ERR_IO, ZF_ERR_NOMEM. */
zf_status zf_hierarchy_open(zf_store *store, const char *store_name,
                            const zf_hierarchy_options *opts, zf_hierarchy **out, zf_err *err);

/* The node at view path (e.g. "" or "group/array"). A node whose metadata is older than the
 * metadata TTL is read again first: unchanged, it is kept; changed, a new node (with a new id)
 * takes its path while the old one lives on for open files; gone, ZF_ERR_NOT_FOUND.
 * Errors: ZF_ERR_NOT_FOUND; ZF_ERR_INVALID when its metadata is invalid (err says why; siblings
 * are unaffected); ZF_ERR_IO. */
zf_status zf_hierarchy_lookup(zf_hierarchy *h, const char *path, zf_node **out, zf_err *err);
/* The child `name` of a directory node. Errors as zf_hierarchy_lookup. */
zf_status zf_hierarchy_child(zf_hierarchy *h, zf_node *dir, const char *name, zf_node **out,
                             zf_err *err);
/* A node already looked up, by id; NULL if none. */
zf_node *zf_hierarchy_node(zf_hierarchy *h, uint64_t id);

/* Names of the children of a directory node (groups and arrays, including ones whose metadata
 * is invalid or unsupported), malloc'd; free with zf_hierarchy_names_free. Kept for the metadata
 * TTL. A store that cannot list (a web server without index pages, no consolidated metadata)
 * gives an empty list and one log line; its nodes can still be looked up by name. */
zf_status zf_hierarchy_list(zf_hierarchy *h, zf_node *dir, char ***names, size_t *n,
                            zf_err *err);
void zf_hierarchy_names_free(char **names, size_t n);

/* The flat view of an array node, opened on first use. Errors: ZF_ERR_UNSUPPORTED (err names the
 * data type or codec), ZF_ERR_INVALID, ZF_ERR_NOMEM. */
zf_status zf_hierarchy_array(zf_hierarchy *h, zf_node *node, zf_array **out, zf_err *err);

zf_cache *zf_hierarchy_cache(zf_hierarchy *h);
/* The metadata TTL in seconds (0: forever), for the kernel's attribute and entry timeouts. */
double zf_hierarchy_metadata_ttl(const zf_hierarchy *h);

/* The mount's statistics as one JSON object (malloc'd; NULL when out of memory): the chunk
 * cache (hits, misses, evictions, bytes, entries, capacity), decoding (chunks, failures, seconds),
 * the store (requests, bytes fetched, retries, errors), and `replies_failed`, the count of FUSE
 * requests answered with an error that the caller passes in. */
char *zf_hierarchy_stats_json(zf_hierarchy *h, uint64_t replies_failed);
void zf_hierarchy_free(zf_hierarchy *h);

/* The file name for a root array of store `store_name` (see above); malloc'd. */
char *zf_root_array_name(const char *store_name);

#endif
