/* store.h — the abstract store of Zarr v3 core "Abstract store interface" (also the v2 spec's
 * "Storage" section): a mapping from keys to byte strings.
 *
 * Keys are '/'-separated relative paths ("group/array/.zarray", "a/0.0"). Every backend refuses
 * keys that could leave the store: empty, absolute, with empty segments, "." or ".." segments,
 * backslashes or NUL (zf_key_is_valid). "Not found" (ZF_ERR_NOT_FOUND) is a result, distinct from
 * a failure (ZF_ERR_IO). */
#ifndef ZARRFS_STORE_H
#define ZARRFS_STORE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "zarrfs/status.h"

/* A byte string owned by the caller after a successful get (free with zf_bytes_free). */
typedef struct zf_bytes {
    uint8_t *data;
    size_t len;
} zf_bytes;
void zf_bytes_free(zf_bytes *b);

/* One child of a prefix in a listing. */
typedef struct zf_store_entry {
    char *name;     /* one path segment */
    bool is_prefix; /* a "directory": other keys lie below it */
} zf_store_entry;

typedef struct zf_store_listing {
    size_t n;
    zf_store_entry *entries;
} zf_store_listing;
void zf_store_listing_free(zf_store_listing *l);

typedef struct zf_store zf_store;
struct zf_store_stats;
struct zf_store_cond;
struct zf_credentials;

/* What identifies one version of a value, as HTTP validators do (RFC 9110 "Validator Fields"): a
 * new ETag, Last-Modified or size means a new value. Remote backends report it with each read
 * (zf_store_read_versioned); the disk cache keeps it with each entry to revalidate the entry. */
typedef struct zf_store_version {
    char etag[160];        /* the ETag as sent, quotes included; "" when the server sends none
                              (GCS: the object's generation, in decimal) */
    struct timespec mtime; /* Last-Modified; zero when unknown */
    uint64_t size;         /* the whole value's size, when has_size */
    bool has_size;
} zf_store_version;

/* The four reads of a store, as one operation (zf_store_read_versioned). */
typedef enum zf_read_kind {
    ZF_READ_ALL,    /* get */
    ZF_READ_RANGE,  /* get_partial(offset, len) */
    ZF_READ_SUFFIX, /* get_suffix(len); the value's size in version.size */
    ZF_READ_STAT,   /* stat: no bytes; size and mtime in the version */
} zf_read_kind;

typedef struct zf_store_ops {
    const char *scheme; /* "file", ... */
    zf_status (*get)(zf_store *s, const char *key, zf_bytes *out, zf_err *err);
    zf_status (*get_partial)(zf_store *s, const char *key, uint64_t offset, uint64_t len,
                             zf_bytes *out, zf_err *err);
    /* Optional: the last len bytes and the value's whole size in one request (NULL: the
     * dispatcher uses stat then get_partial). */
    zf_status (*get_suffix)(zf_store *s, const char *key, uint64_t len, zf_bytes *out,
                            uint64_t *total, zf_err *err);
    zf_status (*stat)(zf_store *s, const char *key, uint64_t *size, struct timespec *mtime,
                      zf_err *err);
    zf_status (*list_dir)(zf_store *s, const char *prefix, zf_store_listing *out, zf_err *err);
    void (*destroy)(zf_store *s);
    /* Writing (NULL in read-only backends: the dispatcher answers ZF_ERR_READONLY). */
    zf_status (*set)(zf_store *s, const char *key, const uint8_t *data, size_t len,
                     zf_err *err);
    zf_status (*erase)(zf_store *s, const char *key, zf_err *err);
    zf_status (*remove_dir)(zf_store *s, const char *prefix, zf_err *err);
    /* Optional (remote backends): one of the reads above, also reporting the version of the value
     * it read (NULL: the dispatcher calls the plain op and knows only the size). */
    zf_status (*read_versioned)(zf_store *s, const char *key, zf_read_kind kind, uint64_t offset,
                                uint64_t len, zf_bytes *out, zf_store_version *ver, zf_err *err);
    /* Optional: the traffic of a store that reads through several others (kerchunk
     * references: the sum over its targets); NULL: its own counters, or its inner store's. */
    void (*traffic)(zf_store *s, struct zf_store_stats *out);
    /* Optional: set under the conditions of c (zf_store_set_cond), those the backend can check;
     * NULL: the dispatcher calls set. */
    zf_status (*set_cond)(zf_store *s, const char *key, const uint8_t *data, size_t len,
                          const struct zf_store_cond *c, zf_err *err);
    /* Optional: erase, only when the value is still the one base names (zf_store_erase_if).
     * NULL: the dispatcher calls erase. */
    zf_status (*erase_if)(zf_store *s, const char *key, const zf_store_version *base,
                          zf_err *err);
    /* Optional: get, refusing a value over max_size bytes (zf_store_get_bounded). NULL: the
     * dispatcher uses read_versioned (ZF_READ_ALL with len = max_size), else stat and get. */
    zf_status (*get_bounded)(zf_store *s, const char *key, uint64_t max_size, zf_bytes *out,
                             zf_err *err);
} zf_store_ops;

struct zf_store {
    const zf_store_ops *ops;
    char *url;   /* what the user named, for messages */
    bool remote; /* reached over the network */
    /* Where the data lives, for caches that outlive the mount: the full location (HTTP: the base
     * URL, any password hidden; S3: endpoint, bucket and prefix), never a secret. NULL: url. */
    char *location;
    /* A wrapper (the disk cache): the store it wraps, whose traffic zf_store_get_stats reports. */
    zf_store *inner;
    /* Counted by the zf_store_* calls (backends start them at zero); read with
     * zf_store_get_stats. n_requests counts the requests other than writes (the stats' requests
     * are both), so that a snapshot taken while a write is counted stays consistent. */
    _Atomic uint64_t n_requests, n_bytes, n_errors, n_retries;
    _Atomic uint64_t n_writes, n_bytes_written;
};

/* What reached a store: requests (get, get_partial, get_suffix, stat, list_dir), bytes of values
 * returned, failed requests (not counting "not found"), and retries (remote backends). For a
 * wrapper, those of the store it wraps: what went over the network; for kerchunk references,
 * the sum over the stores of its targets. */
struct zf_store_stats {
    uint64_t requests, bytes, errors, retries;
    uint64_t writes;        /* of the requests: set, erase and remove_dir */
    uint64_t bytes_written; /* bytes of values stored by set */
};
typedef struct zf_store_stats zf_store_stats;
void zf_store_get_stats(zf_store *s, zf_store_stats *out);
/* Add the statistics of s (zf_store_get_stats) to *sum: the traffic of a store that reads
 * through others. */
void zf_store_stats_add(zf_store_stats *sum, zf_store *s);
/* For backends: one more retry of a request. */
void zf_store_count_retry(zf_store *s);

/* True when key is a relative key that cannot leave the store (see above). "" is not a key. */
bool zf_key_is_valid(const char *key);

/* How remote stores behave (the -o options of the same names). Zero fields take the defaults,
 * except retries, which is taken as given (0: no retries); with NULL options every field is
 * the default. */
typedef struct zf_store_options {
    bool insecure;            /* insecure: do not verify TLS certificates */
    unsigned retries;         /* retries=N: retries of a failed request (default 5) */
    double timeout;           /* timeout=SECONDS: per request, connect included (default 30) */
    unsigned max_connections; /* max_connections=N: concurrent requests (default 16) */
    const char *endpoint;     /* endpoint=URL. S3: default https://s3.REGION.amazonaws.com; a
                                 custom endpoint is addressed path-style, AWS virtual-host style.
                                 Azure: the account's blob endpoint (default
                                 https://ACCOUNT.blob.core.windows.net; Azurite
                                 http://127.0.0.1:10000/devstoreaccount1). GCS: the API's base
                                 URL (default https://storage.googleapis.com) */
    const char *account;      /* Azure account=NAME (default: the URL's, the credentials file's,
                                 $AZURE_STORAGE_ACCOUNT_NAME) */
    const char *region;       /* S3 region=R (default $AWS_REGION, $AWS_DEFAULT_REGION, us-east-1) */
    const char *profile;      /* S3 profile=P in ~/.aws/credentials (default $AWS_PROFILE, default) */
    bool anonymous;           /* S3, GCS, Azure anonymous: unsigned requests (public data) */
    bool writable;            /* the mount is -o rw (GCS: a token of the read_write scope) */
    /* credentials=FILE, loaded with zf_credentials_load (NULL: none). Its S3 keys are used
     * before the environment's and the profiles'; its http_user/http_password or bearer_token
     * before the user:password of the URL, and only for HTTP(S) stores of the same origin
     * (scheme, host, port) as credentials_url (NULL: none), so that kerchunk reference targets
     * and redirects elsewhere never receive them. */
    const struct zf_credentials *credentials;
    const char *credentials_url;
    /* The absolute path credentials was read from (NULL: none): an Azure SAS token taken from it
     * is re-read from the file when it expires or is refused. */
    const char *credentials_path;
    /* netrc[=FILE]: the path of a .netrc file (checked with zf_secret_file_check) that libcurl
     * reads for HTTP(S) stores, by host, when no other credentials apply; NULL: none. */
    const char *netrc;
    /* Icechunk repositories (NULL: the defaults below). */
    const struct zf_icechunk_options *icechunk;
} zf_store_options;

/* How an Icechunk repository is shown (store_icechunk.c; the -o options of the same names). */
typedef struct zf_icechunk_options {
    const char *ref;      /* ref=NAME: a branch (first) or a tag; NULL: branch main */
    const char *snapshot; /* snapshot=ID: one snapshot (20 Crockford base32 characters) */
    /* virtual_chunks=PREFIX (repeated): URL prefixes whose virtual chunks may be read, with or
     * without their trailing '/'; a reference is read only when its location lies in a
     * container the repository's configuration declares and starts with one of these. */
    const char *const *virtual_chunks;
    size_t nvirtual_chunks;
    /* virtual_endpoint=PREFIX=URL (repeated): the endpoint of the container whose url_prefix is
     * PREFIX, instead of the configuration's (S3-compatible servers, tests). */
    const char *const *virtual_endpoints;
    size_t nvirtual_endpoints;
    double metadata_ttl; /* seconds a branch's head is trusted (< 0: 60; 0: for ever) */
    size_t cache_bytes;  /* bound on the parsed snapshots and manifests kept (0: 64 MiB) */
} zf_icechunk_options;

#define ZF_STORE_DEFAULT_RETRIES 5
#define ZF_STORE_DEFAULT_TIMEOUT 30.0
#define ZF_STORE_DEFAULT_MAX_CONNECTIONS 16

/* Open the store a mount names: a local directory or file:// URL, an http:// or https:// URL, or
 * s3://bucket/prefix; or a zip archive holding the hierarchy: a local file that is one (by its
 * content), or an HTTP(S)/S3 URL whose name ends in ".zip" (zf_store_zip_open); or kerchunk
 * references: a local file holding a JSON object, or an HTTP(S)/S3 URL whose name ends in ".json"
 * (zf_store_refs_open; the Parquet form, a file or a directory, is ZF_ERR_UNSUPPORTED). opts may be NULL (defaults). Errors: ZF_ERR_NOT_FOUND (no such directory),
 * ZF_ERR_UNSUPPORTED (a scheme zarrfs does not serve), ZF_ERR_INVALID (a malformed URL or
 * option, e.g. s3:// without a bucket), ZF_ERR_IO. */
zf_status zf_store_open(const char *url, const zf_store_options *opts, zf_store **out,
                        zf_err *err);

/* True for stores reached over the network (HTTP, S3): latency, not decoding, bounds them. */
bool zf_store_is_remote(const zf_store *s);

/* The store name url as messages, logs and /proc/mounts may show it: a copy with the password
 * of a URL's userinfo hidden (scheme://user:password@host/... -> scheme://user:***@host/...; RFC
 * 3986 3.2.1 deprecates passwords in URLs), and a user name alone too, which is often a token
 * (TOKEN@host becomes ***@host); the values of the query parameters that are signatures or
 * tokens (sig, as in Azure SAS tokens; X-Amz-Signature, X-Amz-Security-Token,
 * X-Goog-Signature; any case) become "***"; anything without "://" (a local path) unchanged.
 * malloc'ed; NULL when out of memory. */
char *zf_url_redact(const char *url);

/* ----- credentials (credentials.c) -----
 * The credentials file of -o credentials=FILE: "key = value" lines, blank lines and '#' comments
 * (see zarrfs(1) "CREDENTIALS"). Each field is NULL when the file does not give it. */
typedef struct zf_credentials {
    char *aws_access_key_id, *aws_secret_access_key, *aws_session_token; /* S3 */
    char *http_user, *http_password; /* HTTP Basic authentication */
    char *bearer_token;              /* HTTP "Authorization: Bearer TOKEN" (Azure too) */
    /* Azure Blob: the account (else -o account, AZURE_STORAGE_ACCOUNT_NAME), its Shared Key
     * (base64), or a SAS token (with or without its leading '?'). */
    char *azure_storage_account_name, *azure_storage_account_key, *azure_storage_sas_token;
    /* GCS: an OAuth2 access token, or the path of a service-account JSON key. */
    char *google_oauth_access_token, *google_application_credentials;
} zf_credentials;

/* Read the credentials file at path into *out (zeroed first; free with zf_credentials_free, which
 * wipes the secrets). The file must be a regular file owned by the user running zarrfs
 * (getuid()) with no group or other permission bits, at most 64 KiB. Messages name the file and
 * the line, never a value. Errors: ZF_ERR_NOT_FOUND (no such file), ZF_ERR_PERMISSION (another
 * owner, group or other bits, cannot be opened), ZF_ERR_INVALID (not a regular file, a malformed
 * line, an unknown or repeated key, an empty value or one with control characters, half of a pair:
 * aws_access_key_id/aws_secret_access_key, http_user/http_password; http credentials and a bearer
 * token together; no credentials at all), ZF_ERR_IO, ZF_ERR_NOMEM. */
zf_status zf_credentials_load(const char *path, zf_credentials *out, zf_err *err);
void zf_credentials_free(zf_credentials *c);
/* The checks of zf_credentials_load on a file of secrets without reading it (a .netrc file).
 * Errors as zf_credentials_load's first four. */
zf_status zf_secret_file_check(const char *path, zf_err *err);

/* HTTP(S) store below a base URL (v3 "Stores"; any web server: keys are URL paths below it).
 * get = GET, get_partial/get_suffix = GET with a Range header, stat = HEAD, list_dir = the
 * server's HTML index page (autoindex) where it makes one (ZF_ERR_UNSUPPORTED where it does not,
 * including a 403 for a directory: nginx and Apache refuse unindexed directories that way).
 * For values, 404, 410 and 403 are "not found"; 5xx, 429, timeouts, resets and truncated bodies are retried with
 * exponential backoff and jitter, then ZF_ERR_IO; 401 is ZF_ERR_IO (credentials missing or
 * refused). Authentication: the user and password or bearer token of opts->credentials when url
 * has the origin of opts->credentials_url, else the URL's user:password, else opts->netrc. */
zf_status zf_store_http_open(const char *url, const zf_store_options *opts, zf_store **out,
                             zf_err *err);

/* S3 store at s3://bucket/prefix: SigV4-signed requests (credentials from opts->credentials, else
 * AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, else ~/.aws/credentials, unless
 * anonymous),
 * ListObjectsV2 with delimiter and pagination for list_dir. 404 is "not found", 403 an error
 * (access denied), retries as for HTTP. Secrets never appear in messages or logs. */
zf_status zf_store_s3_open(const char *url, const zf_store_options *opts, zf_store **out,
                           zf_err *err);

/* Google Cloud Storage at gs://BUCKET/PREFIX or https://storage.googleapis.com/BUCKET/PREFIX
 * (store_gcs.c): the JSON API (objects.list with prefix, delimiter and pageToken; alt=media
 * downloads with Range; media uploads conditional on ifGenerationMatch; deletes). A value's
 * version (zf_store_version.etag) is its generation in decimal. Credentials, unless anonymous:
 * opts->credentials' google_oauth_access_token or google_application_credentials (or its
 * aws_access_key_id/aws_secret_access_key HMAC keys: then the S3 store of zf_store_s3_open on
 * the XML API at the same endpoint, region "auto"; read-only: with opts->writable
 * ZF_ERR_UNSUPPORTED, that API's write preconditions not being S3's), else
 * $GOOGLE_OAUTH_ACCESS_TOKEN, else the
 * service-account JSON key of $GOOGLE_APPLICATION_CREDENTIALS (checked as zf_secret_file_check
 * checks; an RS256 JWT with scope devstorage.read_only, read_write when opts->writable,
 * exchanged at its token_uri for an access token, fetched again 5 minutes before it expires),
 * else anonymous. opts->endpoint: the API's base URL (emulators; default
 * https://storage.googleapis.com). Errors at open: ZF_ERR_INVALID (bucket name, prefix,
 * endpoint, key file), ZF_ERR_PERMISSION (a key file others can read), ZF_ERR_NOT_FOUND (no key
 * file). Requests: 404 is "not found" (a listing's 404: the bucket is missing, ZF_ERR_IO); 401
 * and 403 ZF_ERR_ACCESS naming the credential tried; 412 to a conditional write
 * ZF_ERR_CONFLICT. */
zf_status zf_store_gcs_open(const char *url, const zf_store_options *opts, zf_store **out,
                            zf_err *err);
/* True for the URLs zf_store_gcs_open serves (gs://, https://storage.googleapis.com/). */
bool zf_store_gcs_url(const char *url);

/* Azure Blob Storage at az://CONTAINER/PREFIX (account from opts->account, the credentials file
 * or $AZURE_STORAGE_ACCOUNT_NAME), abfs[s]://CONTAINER@ACCOUNT.dfs.core.windows.net/PREFIX or
 * https://ACCOUNT.blob.core.windows.net/CONTAINER/PREFIX (store_azure.c); a query after any of
 * them is a SAS token. Get Blob with Range, Get Blob Properties, List Blobs with prefix,
 * delimiter "/" and marker, Put Blob (BlockBlob) conditional on If-Match / If-None-Match: *
 * (409/412: ZF_ERR_CONFLICT), Delete Blob. Credentials, unless anonymous, the first found of: a
 * SAS token (the URL's query, opts->credentials' azure_storage_sas_token, $AZURE_STORAGE_SAS_TOKEN;
 * one of the file at opts->credentials_path is re-read when it expires or is refused), a Shared
 * Key (azure_storage_account_key, $AZURE_STORAGE_ACCOUNT_KEY; HMAC-SHA256), the file's
 * bearer_token; else anonymous. opts->endpoint: the account's blob endpoint (default
 * https://ACCOUNT.blob.core.windows.net; blobs at ENDPOINT/CONTAINER/KEY). Errors: ZF_ERR_INVALID
 * (a malformed URL, container name, prefix, SAS or key; no account where one is needed);
 * later, 404 is "not found", a missing container ZF_ERR_IO naming it, 401/403 ZF_ERR_ACCESS
 * naming the credential tried, an expired SAS ZF_ERR_ACCESS (logged once). */
zf_status zf_store_azure_open(const char *url, const zf_store_options *opts, zf_store **out,
                              zf_err *err);
/* True for the URLs zf_store_azure_open serves (az://, abfs://, abfss://,
 * https://ACCOUNT.blob.core.windows.net/). */
bool zf_store_azure_url(const char *url);

/* Local file-system store rooted at a directory. Keys map to files below it; every open is
 * confined beneath the root (openat2 RESOLVE_BENEATH), so neither ".." nor a symbolic link can
 * read outside it. */
zf_status zf_store_file_open(const char *root, zf_store **out, zf_err *err);

/* The whole value of key. Errors: ZF_ERR_NOT_FOUND; ZF_ERR_INVALID for an invalid key;
 * ZF_ERR_IO; ZF_ERR_TOO_LARGE (a value over ZF_STORE_MAX_VALUE, 4 GiB, as for
 * zf_store_get_bounded); ZF_ERR_NOMEM. */
zf_status zf_store_get(zf_store *s, const char *key, zf_bytes *out, zf_err *err);
/* The whole value of key when it is at most max_size bytes (metadata documents: ZF_JSON_MAX_TEXT;
 * 0 or more than 4 GiB: 4 GiB, as zf_store_get). A larger value is ZF_ERR_TOO_LARGE, its message
 * naming the key, the bound and the size where one was announced: refused on the size the store
 * announces before any byte of it is read (a local file's size, an HTTP or S3 Content-Length, a
 * zip entry's size in the central directory, a reference's length), and where nothing is
 * announced (an HTTP body without Content-Length) once more than max_size bytes have come: at
 * most max_size bytes are ever held. Other errors as zf_store_get. */
zf_status zf_store_get_bounded(zf_store *s, const char *key, uint64_t max_size, zf_bytes *out,
                               zf_err *err);
/* Bytes [offset, offset + len) of key's value; shorter when the value ends first. Errors as
 * zf_store_get. */
zf_status zf_store_get_partial(zf_store *s, const char *key, uint64_t offset, uint64_t len,
                               zf_bytes *out, zf_err *err);
/* The last min(len, size) bytes of key's value, and in *total its whole size in bytes (what a
 * shard index at the end needs: v3 codecs "Sharding codec", "Implementation notes"). One store
 * request where the backend can (HTTP suffix ranges, one open + pread locally). Errors as
 * zf_store_get. */
zf_status zf_store_get_suffix(zf_store *s, const char *key, uint64_t len, zf_bytes *out,
                              uint64_t *total, zf_err *err);
/* Size in bytes and modification time of key's value (mtime may be zero when unknown). */
zf_status zf_store_stat(zf_store *s, const char *key, uint64_t *size, struct timespec *mtime,
                        zf_err *err);
/* One read of the given kind (get, get_partial, get_suffix or stat) with, in *ver, the version of
 * the value it read: ETag and Last-Modified where the backend knows them, and the value's size
 * where known (always for ZF_READ_ALL, ZF_READ_SUFFIX and ZF_READ_STAT). out is unused (may be
 * NULL) for ZF_READ_STAT. For ZF_READ_ALL, offset is unused and len is max_size as for
 * zf_store_get_bounded (0: no bound but the store's). Errors as zf_store_get. */
zf_status zf_store_read_versioned(zf_store *s, const char *key, zf_read_kind kind,
                                  uint64_t offset, uint64_t len, zf_bytes *out,
                                  zf_store_version *ver, zf_err *err);
/* True when a and b name the same version of a value: equal ETags when both have one, else equal
 * Last-Modified times (both known); and equal sizes where both are known. Versions with neither an
 * ETag nor a Last-Modified time never match (nothing tells a new value from the old). */
bool zf_store_version_equal(const zf_store_version *a, const zf_store_version *b);
/* Direct children of prefix ("" for the root; otherwise without a trailing '/'), unsorted.
 * Errors: ZF_ERR_NOT_FOUND when nothing lies below prefix. */
zf_status zf_store_list_dir(zf_store *s, const char *prefix, zf_store_listing *out, zf_err *err);

/* ----- writing (Zarr v3 core "Abstract store interface": set, erase; v2 "Storage") -----
 * Local directories: each value is written to a temporary file in its directory
 * (".NAME.zarrfs-XXXXXX"), fsync'ed, renamed over NAME, and the directory fsync'ed, so a crash at
 * any moment leaves the old or the new value, never a mix; missing parent directories are
 * created (beneath the root, as reads are confined); the rename happens with the directory
 * locked (flock(2), exclusive), so that zf_store_set_if of other zarrfs daemons sees it whole.
 * S3: one PUT per value, DELETE. HTTP(S): read-only. */

/* True when the backend can write (set/erase). */
bool zf_store_is_writable(const zf_store *s);
/* Store len bytes of data as key's value, replacing any old value atomically.
 * Errors: ZF_ERR_READONLY (the backend cannot write), ZF_ERR_INVALID (invalid key), ZF_ERR_IO
 * (message names the key and the system's or server's reason), ZF_ERR_NO_SPACE (a local file
 * system full or its quota used up: ENOSPC, EDQUOT), ZF_ERR_NOMEM. A failed set leaves the old
 * value (or none) and no temporary file. */
zf_status zf_store_set(zf_store *s, const char *key, const uint8_t *data, size_t len,
                       zf_err *err);
/* Conditions on a set (zf_store_set_cond); a zeroed struct is none. */
typedef struct zf_store_cond {
    /* NULL, or the prefix of an array ("" or "group/array") that key lies below: where the
     * backend has directories (local stores), the set happens only while that directory still
     * exists — the directories between it and key are made, it is not — else ZF_ERR_NOT_FOUND
     * and nothing stored, so that the chunks of an array whose directory was removed behind
     * zarrfs's back do not make it again, holding chunks no metadata describes. */
    const char *within;
    /* A compare-and-swap for read-modify-write by several writers (two mounts of one store):
     * store only when the value stored is still the version base that
     * zf_store_read_versioned(ZF_READ_ALL) returned, or, with base NULL, only when key has no
     * value; else ZF_ERR_CONFLICT, nothing written (read again, merge, retry). Check and
     * replacement are one atomic step against other zarrfs writers: local directories lock the
     * key's directory (flock(2)) around comparing the file's version (device, inode, ctime,
     * size) and the rename; S3 sends If-Match: ETAG (If-None-Match: * for NULL), a conditional
     * write (S3 API "PutObject", conditional writes: 412 Precondition Failed or 409
     * ConditionalRequestConflict when it fails); GCS uploads with ifGenerationMatch=GENERATION
     * (0 for NULL; 412). A version without an ETag (generation) is not checked. */
    bool if_version;
    const zf_store_version *base;
} zf_store_cond;

/* zf_store_set under the conditions c (NULL: none) that the backend can check (a backend
 * without directories ignores within; one without versions stores unconditionally).
 * Errors: ZF_ERR_NOT_FOUND (within is gone), ZF_ERR_CONFLICT (the value is no longer base),
 * else as zf_store_set. */
zf_status zf_store_set_cond(zf_store *s, const char *key, const uint8_t *data, size_t len,
                            const zf_store_cond *c, zf_err *err);
/* Shorthands of zf_store_set_cond: only below an existing `within`; only over version base. */
zf_status zf_store_set_within(zf_store *s, const char *within, const char *key,
                              const uint8_t *data, size_t len, zf_err *err);
zf_status zf_store_set_if(zf_store *s, const char *key, const uint8_t *data, size_t len,
                          const zf_store_version *base, zf_err *err);
/* Remove key; a key already absent is ZF_OK. Errors as zf_store_set. */
zf_status zf_store_erase(zf_store *s, const char *key, zf_err *err);
/* Remove key only when its value is still the version base (read with zf_store_read_versioned),
 * as zf_store_set_if stores: the flock'ed check and unlink locally, DELETE with If-Match on S3
 * (a server that ignores the header erases unconditionally). Errors: ZF_ERR_CONFLICT (changed
 * or gone since; nothing removed), else as zf_store_erase. */
zf_status zf_store_erase_if(zf_store *s, const char *key, const zf_store_version *base,
                            zf_err *err);
/* Remove the directory of prefix (a group's or array's, e.g. "a/b") where the backend has
 * directories and it is empty; ZF_OK when it is already gone or the backend has none (S3).
 * Errors: ZF_ERR_INVALID when it still holds something (message names it), else as
 * zf_store_set. */
zf_status zf_store_remove_dir(zf_store *s, const char *prefix, zf_err *err);

void zf_store_close(zf_store *s);

/* ----- zip archives (store_zip.c) -----
 * A read-only store over a zip archive (zarr-python's ZipStore, `zip -r`) that is key `key` of
 * inner: a local directory's store, HTTP or S3. Reads go through zf_store_get_partial on inner
 * (libzip over a function source): the end and the central directory once, then the ranges of
 * the entries read; a remote archive is never fetched whole. Keys are entry names below the
 * archive's top level, or below its one top-level directory when the hierarchy is there
 * (`zip -r x.zarr.zip x.zarr`). Whole values are CRC-checked: a mismatch, a wrong size or bad
 * compressed data is ZF_ERR_CORRUPT. name (may be NULL: key) is for messages. inner belongs to
 * the wrapper from then on; on failure it is left to the caller. Errors: ZF_ERR_NOT_FOUND (no
 * such key), ZF_ERR_CORRUPT (not a zip archive or a damaged central directory: the message says
 * which), ZF_ERR_IO, ZF_ERR_NOMEM. */
zf_status zf_store_zip_open(zf_store *inner, const char *key, const char *name, zf_store **out,
                            zf_err *err);
/* True when bytes at the start (head) or end (tail, up to 64 KiB + 22) of a file look like a
 * zip archive: a local file header first, or an end of central directory record. */
bool zf_zip_looks_like_archive(const uint8_t *head, size_t head_len, const uint8_t *tail,
                               size_t tail_len);

/* ----- kerchunk references (store_refs.c) -----
 * A read-only store over kerchunk references (fsspec's ReferenceFileSystem, JSON, spec versions 0
 * and 1): text (len bytes) parsed once; inline values (text, "base64:" bytes, JSON objects as their
 * text), [url] (a whole target) and [url, offset, length] (a byte range of it); version 1's
 * templates ({{name}}, name(arg='v'), integer arithmetic) and gen (keys generated over
 * dimensions, ranges or lists). Targets are local paths (relative ones below dir, the reference
 * file's directory or URL), file://, http(s):// and s3:// URLs, read through one store per
 * distinct parent (opts for the remote ones); when dir is a URL (a reference file fetched from a
 * server) local targets (absolute paths, file://) are refused (ZF_ERR_UNSUPPORTED). A range past a target's end, a missing or failing
 * target is ZF_ERR_IO (logged with the key and target). name is for messages. Errors at open:
 * ZF_ERR_INVALID (malformed JSON or references, a template that does not resolve: the message
 * names the key), ZF_ERR_UNSUPPORTED (another version, a target scheme not served), ZF_ERR_IO (a
 * target directory that cannot be opened), ZF_ERR_NOMEM. */
zf_status zf_store_refs_open(const char *name, const char *text, size_t len, const char *dir,
                             const zf_store_options *opts, zf_store **out, zf_err *err);
/* True when the first n bytes of a file look like a JSON object (after white space). */
bool zf_refs_looks_like_json(const uint8_t *head, size_t n);

/* ----- Icechunk repositories (store_icechunk.c) -----
 * An Icechunk repository (specification 1: refs/branch.main/ref.json; 2: a `repo` file) at the
 * root of inner is opened as a read-only Zarr v3 store of one version (opts->icechunk: a
 * branch, by default main, whose head is followed; a tag; a snapshot); any other store is
 * returned as it is (*out = inner). inner passes to the result either way (closed on failure).
 * Errors: ZF_ERR_UNSUPPORTED (an Icechunk 0.1 repository), ZF_ERR_NOT_FOUND (no such branch,
 * tag or snapshot), ZF_ERR_CORRUPT (files that do not parse: icechunk.h), ZF_ERR_INVALID
 * (options), store errors. */
zf_status zf_store_icechunk_detect_open(zf_store *inner, const zf_store_options *opts,
                                        zf_store **out, zf_err *err);
bool zf_store_is_icechunk(const zf_store *s);
/* The versions of the repository of an Icechunk store s, for the hierarchy's hidden directory
 * (zf_versions in hierarchy.h): the kinds ("branches", "tags", "snapshots"); the entries of a
 * kind (a directory per branch, tag or snapshot id; and per branch a file NAME.log); a new
 * store of one version (sharing s's repository and caches; a branch follows its head); and a
 * branch's ancestry log: one line per snapshot, newest first, "ID\tTIME\tMESSAGE\n" with TIME
 * in ISO 8601 UTC to the microsecond and \, tab, CR and newline of the message escaped as \\,
 * \t, \r, \n. Thread-safe. Errors: ZF_ERR_NOT_FOUND (no such kind, version or file). */
const char *const *zf_icechunk_version_kinds(size_t *n);
zf_status zf_icechunk_list(zf_store *s, const char *kind, zf_store_listing *out, zf_err *err);
zf_status zf_icechunk_open_version(zf_store *s, const char *kind, const char *name,
                                   zf_store **out, zf_err *err);
zf_status zf_icechunk_file(zf_store *s, const char *kind, const char *name, char **text,
                           size_t *len, zf_err *err);

/* ----- the disk cache (store_diskcache.c) -----
 * A store wrapper that keeps what the remote store it wraps returns — whole values, byte ranges,
 * suffixes, stats — in files below a directory, across mounts, bounded in bytes (LRU). Each
 * entry carries the value's version and a checksum; one older than ttl is revalidated (a HEAD:
 * same version → used; new version → fetched again). See docs/zarrfs.1 "DISK CACHE". */
typedef struct zf_disk_cache_options {
    const char *dir;    /* created 0700 if missing (and its parents); shared by mounts */
    uint64_t max_bytes; /* bound on the entries' bytes (0: ZF_DISK_CACHE_DEFAULT_SIZE) */
    double ttl;         /* seconds an entry is used without revalidation; <= 0: for ever. Absent
                           keys are remembered on disk this long (not at all when <= 0). */
    const double *clock_advance; /* tests only (an injected clock): seconds added to the cache's
                                    clocks, read at each use; NULL: the real clocks */
} zf_disk_cache_options;
#define ZF_DISK_CACHE_DEFAULT_SIZE ((uint64_t)10 << 30)

/* Wrap inner (which the wrapper owns from then on: zf_store_close closes both). On failure inner
 * is left to the caller. Errors: ZF_ERR_IO (the directory cannot be made or used: message names
 * it), ZF_ERR_INVALID (no directory), ZF_ERR_NOMEM. */
zf_status zf_store_disk_cache_open(zf_store *inner, const zf_disk_cache_options *opts,
                                   zf_store **out, zf_err *err);

typedef struct zf_disk_cache_stats {
    uint64_t hits, misses;     /* reads answered from disk (absent keys included) / not */
    uint64_t bytes_read;       /* bytes of values read from entries */
    uint64_t bytes_written;    /* bytes of entries written */
    uint64_t evictions;        /* entries removed to stay under the bound */
    uint64_t bad_entries;      /* entries dropped as torn or corrupt (size, checksum, header) */
    uint64_t revalidations;    /* requests made to check an entry older than the ttl */
    uint64_t stale;            /* entries dropped because the value changed */
    uint64_t write_failures;   /* entries that could not be written (the read still succeeds) */
    uint64_t bytes, capacity;  /* bytes of all entries in the directory (as last counted), bound */
} zf_disk_cache_stats;
/* The counters of s when it is a disk cache (false, *out untouched, when it is not). */
bool zf_store_disk_cache_stats(zf_store *s, zf_disk_cache_stats *out);
/* ", \"disk_cache\": {...}" for the statistics JSON when s is a disk cache, else "". */
void zf_store_disk_cache_json(zf_store *s, char *buf, size_t n);

#endif
