/* icechunk.h — reading the files of an Icechunk repository (Icechunk specification versions 1
 * and 2, "Binary File Format" and "File Formats"): a 39-byte header (12 bytes of magic
 * `ICE🧊CHUNK`, 24 bytes naming the writer, spec version, file type, compression) then a
 * FlatBuffers payload, zstd-compressed. The payload is decompressed within a bound and run
 * through the FlatBuffers verifier (flatc-generated from src/store/icechunk.fbs, which declares
 * the tables and fields zarrfs reads) before any field is read; every index a file gives
 * (a ref's snapshot, a parent) is checked against the list it indexes. Implemented in
 * src/store/icechunk_fb.cc (C++, behind this C interface); the spec-1 `config.yaml` through
 * libyaml in src/store/icechunk_config.c; ids in src/store/icechunk_id.c.
 *
 * Handles own the decompressed buffer; the pointers their accessors return (paths, messages,
 * zarr.json bytes, inline chunks) point into it and live as long as the handle. Handles are
 * immutable after parsing: any number of threads may read one at once.
 *
 * Errors of the parse functions: ZF_ERR_CORRUPT (short file, wrong magic, wrong file type,
 * zstd failure, payload refused by the verifier, an index out of range, unsorted lists, an
 * invalid node path), ZF_ERR_UNSUPPORTED (a spec version other than 1 or 2, a compression
 * other than none or zstd), ZF_ERR_TOO_LARGE (a decompressed payload over ZF_IC_MAX_PAYLOAD),
 * ZF_ERR_NOMEM. err says which, in one line without the key (the caller prefixes it). */
#ifndef ZARRFS_ICECHUNK_H
#define ZARRFS_ICECHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarrfs/meta.h" /* ZF_MAX_DIMS */
#include "zarrfs/status.h"

#define ZF_IC_HEADER_LEN 39
#define ZF_IC_ID_LEN 12      /* ObjectId12: snapshots, manifests, chunk files */
#define ZF_IC_NODE_ID_LEN 8  /* ObjectId8: nodes */
#define ZF_IC_ID_TEXT_LEN 20 /* Crockford base32 characters of an ObjectId12 */
/* Bound on a decompressed payload (bytes): a manifest of ~10^7 chunk references. */
#define ZF_IC_MAX_PAYLOAD ((size_t)1 << 30)
/* Bound on a decompressed virtual chunk location (bytes). */
#define ZF_IC_MAX_LOCATION 65536

enum {
    ZF_IC_FILE_SNAPSHOT = 1,
    ZF_IC_FILE_MANIFEST = 2,
    ZF_IC_FILE_TXLOG = 4,
    ZF_IC_FILE_REPO = 6,
};

/* ----- ids (icechunk_id.c) ----- */

/* The Crockford base32 text of a 12-byte id (uppercase, no padding, zero bits appended on the
 * right): 20 characters and a NUL in out. */
void zf_ic_id_encode(const uint8_t id[ZF_IC_ID_LEN], char out[ZF_IC_ID_TEXT_LEN + 1]);
/* The 12-byte id whose text is exactly the first ZF_IC_ID_TEXT_LEN characters of text followed
 * by a NUL (lowercase accepted, as Crockford allows; I and L read as 1, O as 0). False for any
 * other length, a character outside the alphabet, or non-zero padding bits. */
bool zf_ic_id_decode(const char *text, uint8_t id[ZF_IC_ID_LEN]);

/* ----- the header ----- */

typedef struct zf_ic_header {
    char writer[25];      /* the implementation name, trailing spaces removed, NUL-terminated */
    uint8_t spec_version; /* 1 or 2 */
    uint8_t file_type;    /* ZF_IC_FILE_* */
    uint8_t compression;  /* 0 none, 1 zstd */
} zf_ic_header;

/* The header of the len bytes at data. Errors: ZF_ERR_CORRUPT (shorter than the header, wrong
 * magic), ZF_ERR_UNSUPPORTED (spec version not 1 or 2, compression not 0 or 1). A spec-0 file
 * (Icechunk 0.1, msgpack) has no such header: ZF_ERR_CORRUPT "not an Icechunk file". */
zf_status zf_ic_header_parse(const uint8_t *data, size_t len, zf_ic_header *out, zf_err *err);

/* ----- the repo info file (spec 2: $ROOT/repo, file type ZF_IC_FILE_REPO) ----- */

typedef struct zf_ic_repo zf_ic_repo;

typedef struct zf_ic_snapshot_info {
    uint8_t id[ZF_IC_ID_LEN];
    int64_t parent;      /* index of the parent in the repo's snapshot list; -1: none */
    uint64_t flushed_at; /* microseconds since 1970-01-01 UTC */
    const char *message; /* NUL-terminated, in the handle */
} zf_ic_snapshot_info;

/* Parse a whole repo info file (header included). Checked: file type, every ref's snapshot
 * index and every parent index within the snapshot list. (A parent chain may still loop: a
 * walk of it takes at most zf_ic_repo_nsnapshots steps.) */
zf_status zf_ic_repo_parse(const uint8_t *data, size_t len, zf_ic_repo **out, zf_err *err);
void zf_ic_repo_free(zf_ic_repo *r);
uint8_t zf_ic_repo_spec_version(const zf_ic_repo *r); /* the Repo table's spec_version */
size_t zf_ic_repo_nsnapshots(const zf_ic_repo *r);
/* Snapshot i (< zf_ic_repo_nsnapshots) into *out. */
void zf_ic_repo_snapshot(const zf_ic_repo *r, size_t i, zf_ic_snapshot_info *out);
/* The index in the snapshot list of the snapshot with this id; false if none. */
bool zf_ic_repo_find_snapshot(const zf_ic_repo *r, const uint8_t id[ZF_IC_ID_LEN], size_t *index);
/* Branches (tags false) or tags (tags true): how many, and ref i's name (NUL-terminated, in the
 * handle) and snapshot index. */
size_t zf_ic_repo_nrefs(const zf_ic_repo *r, bool tags);
void zf_ic_repo_ref(const zf_ic_repo *r, bool tags, size_t i, const char **name,
                    size_t *snapshot_index);
/* The snapshot index of branch or tag `name`; false if there is none (a deleted tag is none). */
bool zf_ic_repo_lookup_ref(const zf_ic_repo *r, bool tags, const char *name, size_t *index);

/* ----- repository configuration: virtual chunk containers -----
 * Spec 2 keeps the configuration in the repo info file (`config`, a FlexBuffer: a map with
 * "virtual_chunk_containers": {URL_PREFIX: {"name", "url_prefix", "store": {KIND: {options}}}});
 * spec 1 in $ROOT/config.yaml (the same fields, the store as a YAML tag: `store: !s3_compatible
 * {region: ..., endpoint_url: ...}`). Only the fields below are read; others are ignored. */
typedef struct zf_ic_container {
    char *name;         /* NULL when absent */
    char *url_prefix;   /* never NULL */
    char *kind;         /* the store's variant: "s3", "s3_compatible", "tigris", "gcs", "azure",
                           "http", "local_file_system", ... (never NULL) */
    char *endpoint_url; /* NULL when absent or null */
    char *region;       /* NULL when absent or null */
    char *account;      /* Azure's options' "account" (its storage account); NULL when absent */
    bool anonymous, allow_http, force_path_style;
} zf_ic_container;

typedef struct zf_ic_config {
    zf_ic_container *containers;
    size_t n;
} zf_ic_config;
void zf_ic_config_free(zf_ic_config *c);
/* The containers of a repo info file's configuration (none when it has no configuration or no
 * containers). Errors: ZF_ERR_CORRUPT (a FlexBuffer refused by its verifier, a container
 * without url_prefix or store), ZF_ERR_NOMEM. */
zf_status zf_ic_repo_config(const zf_ic_repo *r, zf_ic_config *out, zf_err *err);
/* The containers of a spec-1 config.yaml (len bytes of text). Errors: ZF_ERR_CORRUPT (not
 * YAML, not a mapping, a container without url_prefix or store), ZF_ERR_NOMEM. */
zf_status zf_ic_config_yaml(const char *text, size_t len, zf_ic_config *out, zf_err *err);

/* ----- snapshot files ($ROOT/snapshots/ID, file type ZF_IC_FILE_SNAPSHOT) ----- */

typedef struct zf_ic_snapshot zf_ic_snapshot;

typedef struct zf_ic_snapshot_head {
    uint8_t id[ZF_IC_ID_LEN];
    bool has_parent; /* spec 1 keeps the parent here; spec 2 in the repo info file */
    uint8_t parent[ZF_IC_ID_LEN];
    uint64_t flushed_at;  /* microseconds since 1970-01-01 UTC */
    const char *message;  /* NUL-terminated, in the handle */
    uint8_t spec_version; /* of the file's header */
} zf_ic_snapshot_head;

typedef struct zf_ic_node {
    const char *path; /* absolute, NUL-terminated: "/" or "/a/b" (checked: starts with '/', no
                         empty, "." or ".." segment, no trailing '/') */
    size_t path_len;
    uint8_t id[ZF_IC_NODE_ID_LEN];
    const uint8_t *user_data; /* the node's zarr.json (not NUL-terminated) */
    size_t user_data_len;
    bool is_array;
    size_t ndim;       /* arrays: dimensions (shape_v2 when present, as spec 2 writes it; else
                          shape, spec 1's: Icechunk's own rule); <= ZF_MAX_DIMS */
    size_t nmanifests; /* arrays: ManifestRefs */
} zf_ic_node;

typedef struct zf_ic_manifest_ref {
    uint8_t id[ZF_IC_ID_LEN];
    size_t ndim;                 /* extents given (<= ZF_MAX_DIMS) */
    uint32_t from[ZF_MAX_DIMS];  /* inclusive chunk index per dimension */
    uint32_t to[ZF_MAX_DIMS];    /* exclusive; from <= to (checked) */
} zf_ic_manifest_ref;

/* Parse a whole snapshot file. Checked besides the verifier: file type; nodes sorted by path
 * (ascending bytes, no duplicates); valid paths; dimensions and extents within ZF_MAX_DIMS,
 * from <= to. */
zf_status zf_ic_snapshot_parse(const uint8_t *data, size_t len, zf_ic_snapshot **out,
                               zf_err *err);
void zf_ic_snapshot_free(zf_ic_snapshot *s);
void zf_ic_snapshot_get_head(const zf_ic_snapshot *s, zf_ic_snapshot_head *out);
size_t zf_ic_snapshot_nnodes(const zf_ic_snapshot *s);
/* Node i (< zf_ic_snapshot_nnodes; nodes are in path order) into *out. */
void zf_ic_snapshot_node(const zf_ic_snapshot *s, size_t i, zf_ic_node *out);
/* The index of the node whose path is the len bytes at path ("/" or "/a/b"); false if none
 * (binary search). */
bool zf_ic_snapshot_find(const zf_ic_snapshot *s, const char *path, size_t len, size_t *index);
/* ManifestRef j (< nmanifests) of array node i into *out. */
void zf_ic_snapshot_manifest_ref(const zf_ic_snapshot *s, size_t i, size_t j,
                                 zf_ic_manifest_ref *out);
/* Bytes the handle holds (for a cache's accounting). */
size_t zf_ic_snapshot_bytes(const zf_ic_snapshot *s);

/* ----- manifest files ($ROOT/manifests/ID, file type ZF_IC_FILE_MANIFEST) ----- */

typedef struct zf_ic_manifest zf_ic_manifest;

typedef enum zf_ic_chunk_kind {
    ZF_IC_CHUNK_INLINE,  /* bytes in the manifest */
    ZF_IC_CHUNK_NATIVE,  /* bytes [offset, offset + length) of $ROOT/chunks/ID */
    ZF_IC_CHUNK_VIRTUAL, /* bytes [offset, offset + length) of the object at `location` */
} zf_ic_chunk_kind;

typedef struct zf_ic_chunk_ref {
    zf_ic_chunk_kind kind;
    const uint8_t *inline_data; /* INLINE: in the handle */
    size_t inline_len;
    uint64_t offset, length;          /* NATIVE, VIRTUAL: bytes */
    uint8_t chunk_id[ZF_IC_ID_LEN];   /* NATIVE */
    char *location;       /* VIRTUAL: the URL, malloc'd (decompressed with the manifest's
                             location dictionary when stored compressed) */
    char *etag;           /* VIRTUAL: the checksum ETag as stored, malloc'd; NULL: none */
    uint32_t last_modified; /* VIRTUAL: checksum time, seconds since 1970; 0: none */
} zf_ic_chunk_ref;
/* Free what a found ref owns (location, etag) and zero it. */
void zf_ic_chunk_ref_clear(zf_ic_chunk_ref *r);

/* Parse a whole manifest file. Checked besides the verifier: file type; arrays sorted by node
 * id; each array's refs sorted by index (lexicographic, no duplicates) and all of one length;
 * a location dictionary, when compressed locations need one, loads. */
zf_status zf_ic_manifest_parse(const uint8_t *data, size_t len, zf_ic_manifest **out,
                               zf_err *err);
void zf_ic_manifest_free(zf_ic_manifest *m);
size_t zf_ic_manifest_bytes(const zf_ic_manifest *m);
/* How many chunk references the manifest holds (all arrays). */
size_t zf_ic_manifest_nrefs(const zf_ic_manifest *m);
/* The reference of the chunk at coords (ndim indexes, in chunks) of array node_id (binary
 * searches). Errors: ZF_ERR_NOT_FOUND (no such array or chunk: the chunk is missing, its fill
 * value), ZF_ERR_CORRUPT (a reference of no kind or of several, an index of another length than
 * ndim, a compressed location that does not decompress within ZF_IC_MAX_LOCATION, an empty
 * location), ZF_ERR_NOMEM. *out needs zf_ic_chunk_ref_clear after ZF_OK. */
zf_status zf_ic_manifest_find(const zf_ic_manifest *m, const uint8_t node_id[ZF_IC_NODE_ID_LEN],
                              const uint64_t *coords, size_t ndim, zf_ic_chunk_ref *out,
                              zf_err *err);

#endif
