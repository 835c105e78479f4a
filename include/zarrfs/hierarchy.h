/* hierarchy.h — paths of the mounted view to Zarr nodes; dialect detection; metadata caching.
 *
 * The view's paths are '/'-free-at-the-ends relative paths ("" is the mount root). Normally a
 * view path is the node's store prefix. When the store's root node is an array, the view root is
 * a directory holding that array as one file named after the store (DESIGN.md): the store's last
 * path component without a ".zarr", ".zr3" or ".zarr3" suffix, or "array" when nothing is left.
 *
 * Nodes live until zf_hierarchy_free, so their ids are stable (the FUSE layer uses them as inode
 * numbers; the root is id 1). The nodes of a version (zf_versions, at the end) have ids of their
 * own: version k's are k * 2^40 + 1, + 2, ... (k >= 1, below 2^21), its root k * 2^40 + 1, so
 * every id stays below 2^61. */
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
#include "zarrfs/sbuf.h"
#include "zarrfs/store.h"

typedef struct zf_node {
    uint64_t id;           /* >= 1; 1 is the view root (see above for versions) */
    char *path;            /* view path */
    char *prefix;          /* store prefix of the node's keys */
    bool is_dir;           /* group, or the virtual root over a root array */
    bool virtual_root;     /* the directory that holds a root array */
    zf_node_meta meta;     /* parsed metadata (not for the virtual root) */
    struct timespec mtime; /* of the metadata key */
    uint64_t size;         /* arrays: bytes of the flat view */
    /* The hierarchy the node belongs to: the mount's, or a version's (zf_versions); every
     * zf_hierarchy_* call given the node acts on that one, whichever hierarchy it is given. */
    struct zf_hierarchy *owner;
    /* A directory or file of the versions tree that is no Zarr node (the hidden directory, its
     * kinds, their text files, zf_versions): read-only, without metadata (meta is empty). */
    bool synthetic;
    /* private to the hierarchy */
    pthread_mutex_t mu;
    zf_array *array;
    struct zf_node *hnext;
    double loaded;         /* monotonic seconds when the metadata was read or last confirmed */
    char **listing;        /* groups: the children last listed (NULL: not yet), and when */
    size_t nlisting;
    double listed;
    bool pending;          /* a new empty file, no metadata yet (zf_hierarchy_create) */
    struct zf_node *pending_next;
    _Atomic bool read_failed_logged; /* an undecodable array's failed read (or refused open,
                                        * meta.refuse_open) was logged */
    _Atomic bool size_told; /* text arrays: the kernel was told that the size became known */
    /* v3 groups with their own inline consolidated metadata (below the root): its index, made
     * on first use (cindexed), over cdoc, the parsed document */
    bool cindexed;
    struct zf_cindex *cindex;
    struct yajl_val_s *cdoc;
    /* Derived nodes (-o sidecars): a read-only file generated from another node's metadata
     * (a sidecar header, or a header followed by the base array's bytes). Read them with
     * zf_hierarchy_read_derived; they cannot be written, resized or given metadata. */
    bool derived;
    struct zf_node *base;  /* the array it is derived from */
    char *dhdr;            /* the generated header bytes */
    size_t dhdr_len;
    bool dappend_data;     /* the base array's bytes follow the header (.npy) */
    uint64_t dbase_size;   /* the base array's size when the header was made */
    uint64_t dgen;         /* the hierarchy's change count then (metadata and attributes of
                              other nodes feed the header: OME-Zarr multiscales) */
    unsigned dkind;        /* ZF_SIDECAR_* */
    /* a group's view (ZF_SIDECAR_NC): after the header, each array's bytes at its own place */
    struct zf_view_segment *dsegs;
    size_t ndsegs;
} zf_node;

/* Where an array's flat bytes lie in a derived file made of several (a netCDF view): at `begin`,
 * nbytes long (the array's size when the view was made), each item of `swap` bytes reversed
 * (0: as they are); the bytes between segments read as zeros. */
typedef struct zf_view_segment {
    uint64_t begin, nbytes;
    struct zf_node *array;
    unsigned swap;
} zf_view_segment;

typedef struct zf_hierarchy zf_hierarchy;

typedef struct zf_hierarchy_options {
    size_t cache_size;     /* bytes of decoded chunks */
    unsigned threads;      /* decode workers (0: one per CPU; for a remote store at least
                              io_threads, since they mostly wait for the network) */
    unsigned io_threads;   /* concurrent store requests wanted (remote stores) */
    double metadata_ttl;   /* seconds a node's metadata and a group's listing are trusted before
                              they are read again; 0: forever */
    unsigned readahead;    /* bands of chunks a sequential reader is kept ahead by (0: 1) */
    bool writable;         /* -o rw: writes allowed (where the store and dialect allow them) */
    bool write_empty_chunks; /* store chunks equal to the fill value (else erase them) */
    unsigned sidecars;     /* ZF_SIDECAR_* bits: derived files shown next to each array */
} zf_hierarchy_options;

/* Sidecars (-o sidecars): for an array file NAME, NAME.hdr (ENVI), NAME.mhd (MetaImage),
 * NAME.nhdr (detached NRRD) name NAME as their raw data; NAME.npy is an NPY header followed by
 * the array's bytes, NAME.tif a TIFF header (pages over the leading dimensions, OME-XML) followed
 * by them. A group GROUP has GROUP.nc beside it (the root group: the store's name without
 * ".zarr", and ".nc"), a netCDF classic file of the arrays directly in it. Each exists only for arrays its format can describe; a real node of the
 * same name wins. */
enum {
    ZF_SIDECAR_ENVI = 1u << 0,
    ZF_SIDECAR_MHD = 1u << 1,
    ZF_SIDECAR_NHDR = 1u << 2,
    ZF_SIDECAR_NPY = 1u << 3,
    ZF_SIDECAR_TIFF = 1u << 4,
    ZF_SIDECAR_NC = 1u << 5, /* of a group: GROUP.nc beside it; the root's STORE.nc */
    ZF_SIDECAR_ALL = 0x3fu,
    /* Not an -o sidecars choice: NAME.mask, the validity mask of an array of zarrs' optional
     * data type (one byte per element, zf_array_mask), is part of its data, so a Zarr v3
     * hierarchy always has this kind on (zf_hierarchy_open). */
    ZF_SIDECAR_MASK = 1u << 6,
};
#define ZF_SIDECAR_KINDS 7 /* how many kinds there are */
/* Parse "envi,mhd,nhdr,npy,tif,nc" (any subset; "hdr" is "envi", "tiff" is "tif") into ZF_SIDECAR_* bits. False on an
 * unknown name. */
bool zf_sidecars_parse(const char *list, unsigned *bits);

/* The ids of the derived nodes made so far from array node `node` (at most max of them, one per
 * sidecar kind, so ZF_SIDECAR_KINDS is enough): files whose size follows the array's, for the
 * FUSE layer to tell the kernel when the array's size changed. Returns how many; 0 without
 * sidecars. */
size_t zf_hierarchy_derived_ids(zf_hierarchy *h, const zf_node *node, uint64_t *ids, size_t max);
/* The ids of the derived nodes made so far whose headers the metadata or attributes of `node`
 * feed: an array's own; for a group, those of the arrays directly in it (OME-Zarr multiscales
 * on the group give its levels' spacing). For the FUSE layer to tell the kernel after a change
 * of attributes (the headers are remade when next read, and may change length). *ids is
 * malloc'd (NULL when *n is 0). Errors: ZF_ERR_NOMEM. */
zf_status zf_hierarchy_dependent_ids(zf_hierarchy *h, const zf_node *node, uint64_t **ids,
                                     size_t *n);

/* Names that stopped leading where they did: called by the hierarchy when an array is deleted
 * (for each of its sidecars' names), and when a node is found gone from the store or changed
 * behind zarrfs's back after the metadata TTL (its own name, and its sidecars'). dir_id is the
 * directory node holding `name`, id the node the name led to; deleted: the name leads nowhere
 * now (false: to a new node, made when it is next looked up). Called from inside zf_hierarchy_*
 * calls (on the threads making them, no hierarchy lock held): it must not call back into the
 * hierarchy, nor block on anything those callers may hold. */
typedef void (*zf_hierarchy_gone_fn)(void *ctx, uint64_t dir_id, const char *name, uint64_t id,
                                     bool deleted);
/* Set the function above (NULL: none); before other threads use the hierarchy. */
void zf_hierarchy_on_gone(zf_hierarchy *h, zf_hierarchy_gone_fn fn, void *ctx);

/* Read len bytes at off of a derived node (header, then the base array's bytes for .npy and
 * .tif; a group's view: its arrays' bytes where they lie, swapped to big-endian as marked);
 * *got is short only at the end of the file. Errors: as zf_hierarchy_array and zf_array_read. */
/* For a derived node whose header is followed by its array's bytes (.npy, .tif): when byte
 * offset off of the file lies past the header (brought up to date first), ZF_OK with the array
 * in *a and the matching byte offset of the array's flat bytes in *array_off, so that a read
 * there can be served as one of the array (zf_array_read_view); ZF_ERR_NOT_FOUND when off lies
 * in the header or the node is another kind. Errors: as zf_hierarchy_array. */
zf_status zf_hierarchy_derived_data(zf_hierarchy *h, zf_node *node, uint64_t off, zf_array **a,
                                    uint64_t *array_off, zf_err *err);
zf_status zf_hierarchy_read_derived(zf_hierarchy *h, zf_node *node, uint64_t off, void *buf,
                                    size_t len, size_t *got, zf_err *err);

/* Open the hierarchy in store, which passes to the hierarchy. The root's metadata is read and
 * checked now. Errors: ZF_ERR_NOT_FOUND (not a Zarr hierarchy: err says which keys were looked
 * for), ZF_ERR_INVALID (invalid root metadata: err names key and field), ZF_ERR_UNSUPPORTED
 * (a dialect zarrfs does not read yet), ZF_ERR_IO, ZF_ERR_NOMEM. */
zf_status zf_hierarchy_open(zf_store *store, const char *store_name,
                            const zf_hierarchy_options *opts, zf_hierarchy **out, zf_err *err);

/* The node at view path (e.g. "" or "group/array"). A node whose metadata is older than the
 * metadata TTL is read again first: unchanged, it is kept; changed, a new node (with a new id)
 * takes its path while the old one lives on for open files; gone, ZF_ERR_NOT_FOUND.
 * With versions (zf_hierarchy_set_versions), a path below the root's hidden directory leads into
 * them ("<dir_name>/<kind>/<name>/group/array"), as the names one by one would.
 * Errors: ZF_ERR_NOT_FOUND; ZF_ERR_INVALID when its metadata is invalid (err says why; siblings
 * are unaffected); ZF_ERR_IO. */
zf_status zf_hierarchy_lookup(zf_hierarchy *h, const char *path, zf_node **out, zf_err *err);
/* The child `name` of a directory node. Errors as zf_hierarchy_lookup. */
zf_status zf_hierarchy_child(zf_hierarchy *h, zf_node *dir, const char *name, zf_node **out,
                             zf_err *err);
/* The child `name` as a listing's entry needs it (its id and whether it is a directory): as
 * zf_hierarchy_child, but a group's netCDF view is not made for it (that reads the metadata of
 * every array in the group): a view not yet made gets its node and id now and is made when
 * looked up, stat'ed (zf_hierarchy_node) or read. */
zf_status zf_hierarchy_child_entry(zf_hierarchy *h, zf_node *dir, const char *name,
                                   zf_node **out, zf_err *err);
/* A node already looked up, by id (a version's too, whichever hierarchy is given); NULL if none.
 * The id a listing gave a version directory not opened yet opens it (zf_versions). A derived
 * node whose array changed (resized under -o rw), or whose header other metadata feeds
 * (attributes of the array or its group), is brought up to date first (its header and size);
 * NULL for one whose array is gone (deleted, or found removed or replaced in the store): the
 * kernel should look its name up again. */
zf_node *zf_hierarchy_node(zf_hierarchy *h, uint64_t id);

/* A node's size in bytes (files: of the flat view, or of a derived file) and the time of its
 * metadata, read under the node's lock: resizes and remade headers change them. */
void zf_hierarchy_node_stat(zf_node *n, uint64_t *size, struct timespec *mtime);

/* True for a file whose size is not known until it is read to its end: an array of
 * variable-length elements read as text (docs/formats.md "Variable-length arrays as text")
 * before any reader reached its end. Its stat size is 0 until then, the exact size after (for
 * the mount's lifetime, or until its metadata is read again); such a file must be read without
 * the page cache (direct I/O), until a read returns nothing, as files in /proc are. */
bool zf_hierarchy_size_unknown(zf_node *n);
/* True when n's attributes are at hand and current without store requests (a sidecar header is
 * brought up to date first, from its array's metadata): false for a netCDF view that a listing
 * named but nobody made yet (its size needs its arrays' metadata) or that is stale, for a
 * derived file whose array is gone, and for a text file whose size is not known yet
 * (zf_hierarchy_size_unknown). */
bool zf_hierarchy_attrs_ready(zf_hierarchy *h, zf_node *n);

/* Names of the children of a directory node (groups and arrays, including ones whose metadata
 * is invalid or unsupported, and implicit groups: directories without metadata above other
 * nodes, docs/formats.md), malloc'd; free with zf_hierarchy_names_free. Kept for the metadata
 * TTL. A store that cannot list (a web server without index pages, no consolidated metadata)
 * gives an empty list and one log line; its nodes can still be looked up by name, except those
 * below implicit groups. */
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
 * the store (requests, bytes fetched, retries, errors: summed over the mount's store and the
 * stores of the versions opened so far, zf_versions; the cache is theirs too), and
 * `replies_failed`, the count of FUSE requests answered with an error that the caller passes in. */
char *zf_hierarchy_stats_json(zf_hierarchy *h, uint64_t replies_failed);
/* The same counters as zf_hierarchy_stats_json, appended to b in the Prometheus text format
 * (metrics.h): counters zarrfs_cache_{hits,misses,evictions,load_failures}_total,
 * zarrfs_chunks_{decoded,decode_failures,encoded,encode_failures}_total,
 * zarrfs_store_{requests,errors,retries,writes}_total, zarrfs_store_{fetched,written}_bytes_total;
 * gauges zarrfs_cache_{size,capacity,dirty}_bytes, zarrfs_cache_entries,
 * zarrfs_buffer_pool_bytes, process_resident_memory_bytes. Every sample carries `labels`
 * (escaped, "" for none). */
void zf_hierarchy_metrics(zf_hierarchy *h, zf_sbuf *b, const char *labels);
/* Write back every dirty chunk (see zf_hierarchy_flush), then free everything. */
void zf_hierarchy_free(zf_hierarchy *h);

/* ----- writing (-o rw) -----
 * Allowed for Zarr v2 and v3 hierarchies in stores that can write (local directories, S3); the
 * two v3 drafts and HTTP stores are read-only (ZF_ERR_READONLY). Metadata documents are written
 * whole with zf_store_set (atomically on local stores). A hierarchy with consolidated metadata
 * (.zmetadata, or inline in the root zarr.json) refuses metadata changes (ZF_ERR_UNSUPPORTED),
 * since they would leave the consolidated copy stale; chunk writes are fine. */

/* ZF_OK when the hierarchy can be written; else ZF_ERR_READONLY with the reason. */
zf_status zf_hierarchy_can_write(const zf_hierarchy *h, zf_err *err);
/* Write len bytes at byte offset of an array node's flat view (DESIGN.md's file), growing the
 * array along its first dimension when the write ends past it (shape[0] becomes the rows the
 * write reaches, rounded up). Errors: ZF_ERR_READONLY, ZF_ERR_INVALID (a pending file without
 * metadata; a 0-d array grown), and as zf_array_write. */
zf_status zf_hierarchy_write(zf_hierarchy *h, zf_node *node, uint64_t offset, const void *buf,
                             size_t len, zf_err *err);
/* Store the dirty chunks of node (NULL: of every array). Errors: the first failure. */
zf_status zf_hierarchy_flush(zf_hierarchy *h, zf_node *node, zf_err *err);
/* Store dirty chunks last written at least idle seconds ago or first written at least max_age
 * seconds ago (the periodic writeback). */
zf_status zf_hierarchy_flush_aged(zf_hierarchy *h, double idle, double max_age, zf_err *err);
/* Resize an array node to size bytes, a whole number of rows (row = product(shape[1:]) *
 * itemsize): shape[0] changes in the metadata; chunks wholly outside a shrunk array are erased
 * and the part of its last chunks outside it set to the fill value. Errors: ZF_ERR_INVALID (not
 * a whole number of rows, a 0-d array), ZF_ERR_READONLY, ZF_ERR_UNSUPPORTED, store errors. */
zf_status zf_hierarchy_resize(zf_hierarchy *h, zf_node *node, uint64_t size, zf_err *err);
/* New group `name` in group dir (v2: .zgroup {"zarr_format": 2}; v3: zarr.json with node_type
 * group). Errors: ZF_ERR_EXISTS, ZF_ERR_INVALID (bad name), ZF_ERR_NOT_DIR, ZF_ERR_READONLY. */
zf_status zf_hierarchy_mkdir(zf_hierarchy *h, zf_node *dir, const char *name, zf_node **out,
                             zf_err *err);
/* Remove the empty group `name` of dir (its documents and directory). Errors: ZF_ERR_NOT_FOUND,
 * ZF_ERR_NOT_DIR, ZF_ERR_NOT_EMPTY (children, or other keys below it), ZF_ERR_READONLY. */
zf_status zf_hierarchy_rmdir(zf_hierarchy *h, zf_node *dir, const char *name, zf_err *err);
/* Delete the array `name` of dir: every key below its prefix (or a pending file). The caller
 * enforces -o allow_delete. Errors: ZF_ERR_NOT_FOUND, ZF_ERR_IS_DIR, ZF_ERR_READONLY. */
zf_status zf_hierarchy_unlink(zf_hierarchy *h, zf_node *dir, const char *name, zf_err *err);
/* A new empty file `name` in dir, pending until zf_hierarchy_set_metadata gives it array
 * metadata (nothing is stored before). Errors: as zf_hierarchy_mkdir. */
zf_status zf_hierarchy_create(zf_hierarchy *h, zf_node *dir, const char *name, zf_node **out,
                              zf_err *err);
/* Replace a node's attributes with the JSON object text (v2: .zattrs; v3: "attributes" of its
 * zarr.json). Errors: ZF_ERR_INVALID (not a JSON object), ZF_ERR_READONLY, store errors. */
zf_status zf_hierarchy_set_attributes(zf_hierarchy *h, zf_node *node, const char *json,
                                      size_t len, zf_err *err);
/* Make a pending file an array: json is a .zarray (v2) or array zarr.json (v3) document, checked
 * by the same parser reads use, stored as given. Errors: ZF_ERR_INVALID (invalid, unsupported
 * data type or codec, or a group document: err says why), ZF_ERR_PERMISSION (not a pending
 * file: an existing array's metadata is not replaced), ZF_ERR_READONLY, store errors. */
zf_status zf_hierarchy_set_metadata(zf_hierarchy *h, zf_node *node, const char *json,
                                    size_t len, zf_err *err);

/* ----- versions: a repository's other versions as hidden directories -----
 * A store that holds several versions of one hierarchy (an Icechunk repository: branches, tags,
 * snapshots) can show each version as a whole read-only hierarchy below a hidden directory of
 * the root, reached by name but never listed (as .zarrfs-stats is, and ZFS's .zfs with
 * snapdir=hidden): ROOT/<dir_name>/<kind>/<name>/... Each version directory is a hierarchy of
 * its own (zf_hierarchy_open over the store `open` gives, read-only, sharing this hierarchy's
 * chunk cache, decode workers and options), grafted at that path and opened on first lookup;
 * its nodes have ids of their own, disjoint from this hierarchy's (zf_hierarchy_node finds
 * them), and every zf_hierarchy_* call given one of its nodes acts on the version's hierarchy.
 * Besides version directories, a kind's directory may hold read-only text files (an ancestry
 * log), whose text `file` makes; what `list` says is trusted for metadata_ttl, as a group's
 * listing is (forever when 0), and a file's text as long. The hierarchy layer knows nothing of
 * what a version is. */
typedef struct zf_versions {
    const char *dir_name;     /* the hidden directory at the root, e.g. ".icechunk" */
    const char *const *kinds; /* the directories below it, e.g. "branches", "tags", "snapshots" */
    size_t nkinds;
    void *ctx;
    /* The entries of kind's directory: is_prefix = a version directory, else a text file.
     * Names are single path segments. */
    zf_status (*list)(void *ctx, const char *kind, zf_store_listing *out, zf_err *err);
    /* A new store of version `name` of kind (the caller owns it); ZF_ERR_NOT_FOUND if none. */
    zf_status (*open)(void *ctx, const char *kind, const char *name, zf_store **out,
                      zf_err *err);
    /* The text of file `name` of kind (malloc'd, *len bytes); ZF_ERR_NOT_FOUND if none. */
    zf_status (*file)(void *ctx, const char *kind, const char *name, char **text, size_t *len,
                      zf_err *err);
    void (*destroy)(void *ctx); /* with the hierarchy (NULL: nothing) */
} zf_versions;
/* Give h its versions (copied; ctx passes to h, destroyed with it). Before other threads use h.
 * Each of list, open and file may be called from several threads at once (never under a lock of
 * the hierarchy); open once per version directory (again only after it failed, or after the
 * name left the kind's listing and came back: a new hierarchy with new ids then takes the name,
 * the old one lives on for open files); the stores open gives are used as the mount's is (from
 * many threads) and closed with h, before destroy. dir_name, the kinds and listed names must be
 * single path segments (others are left out, logged; of a name listed twice the first counts);
 * list's ZF_ERR_NOT_FOUND is an empty kind. */
void zf_hierarchy_set_versions(zf_hierarchy *h, const zf_versions *v);
/* True for the nodes of the versions tree: the hidden directory, its kinds and their files, and
 * every node of a version's hierarchy. They cannot be changed whatever the mount (the calls that
 * would: ZF_ERR_READONLY). */
bool zf_hierarchy_node_in_versions(const zf_node *n);

/* The file name for a root array of store `store_name` (see above); malloc'd. */
char *zf_root_array_name(const char *store_name);

#endif
