/* store_impl.h — inside src/store/: the HTTP transport shared by the HTTP(S) and S3 stores, URL
 * encoding, and the parsers of what remote servers answer (HTML index pages, S3 ListObjectsV2 and
 * error documents, AWS credentials files). Declared here, not in include/, so that only the
 * backends and their unit tests (tests/store/) use them. */
#ifndef ZARRFS_STORE_IMPL_H
#define ZARRFS_STORE_IMPL_H

#include <stdbool.h>
#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "zarrfs/status.h"
#include "zarrfs/store.h"

/* Largest value any store returns in one read (a whole value or a range; a local file, a zip
 * member, an HTTP body): more is ZF_ERR_TOO_LARGE "refusing a value larger than 4096 MiB", before
 * anything is allocated. A chunk cannot be larger (decoded chunks are at most 2 GiB). Readers may
 * set a smaller bound (zf_store_get_bounded: metadata documents). */
#define ZF_STORE_MAX_VALUE ((uint64_t)4 << 30)
/* The bound of a read asking for max_size (0 or over ZF_STORE_MAX_VALUE: ZF_STORE_MAX_VALUE). */
uint64_t zf_store_bound(uint64_t max_size);
/* ZF_ERR_TOO_LARGE: "KEY: refusing a value larger than BOUND (SIZE bytes WHERE)" (whoever
 * reports the failure logs it); size UINT64_MAX when nothing announced it (then "(WHERE)" alone,
 * e.g. "sent without a length"). BOUND in MiB when a whole number of them, else in bytes. */
zf_status zf_store_refuse_large(zf_err *err, const char *key, uint64_t bound, uint64_t size,
                                const char *where);
/* Largest value a remote store returns (a Content-Length above it is refused, a body without one
 * is cut off there), and largest listing page it reads. */
#define ZF_HTTP_MAX_VALUE ZF_STORE_MAX_VALUE
#define ZF_HTTP_MAX_LISTING ((uint64_t)256 << 20)
/* Largest total size of the response headers of one request (all its responses: redirects, 1xx
 * answers); more is a failure, not retried (libcurl 7.88 refuses one header line over 100 KiB, and
 * Debian's a response's headers over 300 KiB, but retries that). */
#define ZF_HTTP_MAX_HEADERS ((uint64_t)256 << 10)

/* Backoff before retry n (0-based): a uniformly random delay in [0, min(cap, base * 2^n)]
 * ("full jitter"). */
#define ZF_HTTP_BACKOFF_BASE_MS 100
#define ZF_HTTP_BACKOFF_CAP_MS 5000
#define ZF_HTTP_RETRY_AFTER_CAP_MS 10000

/* ---- transport ------------------------------------------------------------------------------ */

typedef struct zf_http zf_http;

typedef struct zf_http_config {
    const zf_store_options *opts; /* insecure, retries (as given), timeout, max_connections (0 = default) */
    /* S3 signing, all NULL for unsigned requests. Copied; the secret is wiped on destroy and
     * never appears in a message. */
    const char *sigv4;         /* CURLOPT_AWS_SIGV4, "aws:amz:REGION:s3" */
    const char *access_key;    /* user name of the signature */
    const char *secret_key;    /* its password */
    const char *session_token; /* sent as x-amz-security-token (signed) when non-NULL */
    /* Unsigned requests only (copied, wiped on destroy). HTTP Basic authentication
     * (CURLOPT_USERNAME/PASSWORD), or a bearer token (CURLAUTH_BEARER: "Authorization: Bearer
     * TOKEN"), NULL for none; libcurl sends either only to the origin of the request's URL, never
     * along a redirect to another host, port or scheme. */
    const char *http_user, *http_password;
    const char *bearer_token;
    /* A .netrc file libcurl reads for the user and password of each host (CURL_NETRC_OPTIONAL:
     * a user:password in the URL comes first), NULL for none. */
    const char *netrc_file;
    /* Requests carry their own authorization in headers or the query (Azure Shared Key or SAS,
     * a GCS OAuth token): as for SigV4, redirects are followed only within the origin of the
     * request, so that neither reaches another server. */
    bool own_auth;
} zf_http_config;

zf_status zf_http_create(const zf_http_config *cfg, zf_http **out, zf_err *err);
void zf_http_destroy(zf_http *h);

typedef enum zf_http_kind {
    ZF_HTTP_HEAD,   /* HEAD: headers only */
    ZF_HTTP_GET,    /* GET: the whole body */
    ZF_HTTP_RANGE,  /* GET bytes [offset, offset + len) (len > 0; UINT64_MAX: to the end) */
    ZF_HTTP_SUFFIX, /* GET the last len bytes (len > 0) */
    ZF_HTTP_PUT,    /* PUT body (body_len bytes, as Content-Length; application/octet-stream) */
    ZF_HTTP_DELETE, /* DELETE */
    ZF_HTTP_POST,   /* POST body, as PUT (content_type: application/octet-stream when NULL) */
} zf_http_kind;

typedef struct zf_http_request {
    const char *url;  /* already percent-encoded */
    const char *what; /* the key, for messages */
    zf_http_kind kind;
    uint64_t offset, len;
    uint64_t max_body; /* 0: ZF_HTTP_MAX_VALUE. A 2xx body announced larger (Content-Length,
                          Content-Range) is refused when its headers end, before any of it is
                          read; one without a length once it passes the bound: ZF_ERR_TOO_LARGE */
    const uint8_t *body; /* PUT, POST: what to send (may be NULL when body_len is 0) */
    size_t body_len;
    const char *condition; /* PUT, DELETE: a precondition header line ("If-Match: \"ETAG\"",
                              "If-None-Match: *") or NULL */
    const char *const *headers; /* more header lines ("Name: value"), NULL-terminated, or NULL
                                   (a backend's version, date and Authorization headers) */
    const char *content_type;   /* PUT, POST: Content-Type (NULL: application/octet-stream) */
} zf_http_request;

/* The Range header line attempt() sends for rq ("Range: bytes=A-B", "Range: bytes=-N"), or ""
 * for a request without a range, into buf (64 bytes are enough): backends that sign their
 * headers sign this one. */
void zf_http_range_header(const zf_http_request *rq, char *buf, size_t n);

typedef struct zf_http_response {
    long status;      /* final HTTP status */
    char reason[64];  /* its reason phrase (may be empty, HTTP/2 has none) */
    /* 2xx: exactly the bytes asked for (the range, sliced out of a 200 when the server ignored
     * the Range header; the suffix); otherwise up to 64 KiB of the error body, NUL-terminated. */
    zf_bytes body;
    bool has_total;   /* the value's whole size is known: */
    uint64_t total;   /* from Content-Range, or the Content-Length of a 200/HEAD */
    struct timespec mtime; /* Last-Modified, zero when absent */
    char content_type[128];
    char bucket_region[64]; /* x-amz-bucket-region (S3 wrong-region answers) */
    char etag[160];         /* ETag as sent (quotes included), "" when absent or longer */
    char generation[32];    /* x-goog-generation (GCS object generation), "" when absent */
    char error_code[64];    /* x-ms-error-code (Azure's error code), "" when absent */
    bool dir_redirect; /* the server redirected a key to "key/" (a directory, not a value) */
} zf_http_response;

/* One request with retries (a Retry-After or x-ms-retry-after-ms of a 429/503 answer waits at
 * least that long, at most ZF_HTTP_RETRY_AFTER_CAP_MS): 5xx, 429, 408, timeouts, connection failures and truncated bodies are
 * retried (PUT and DELETE too: they are idempotent, and a PUT sends its whole body again) up to
 * the configured count with backoff (counted with zf_store_count_retry(s)), then
 * ZF_ERR_IO naming req->what and the last failure. Otherwise ZF_OK with the final response for
 * the caller to interpret: a 2xx with a complete body, or any other status (404, 403, 416, ...).
 * ZF_ERR_IO also for failures that are not retried (TLS verification, too large, malformed,
 * headers over ZF_HTTP_MAX_HEADERS, a redirect loop, a redirect of a signed request to another
 * origin);
 * ZF_ERR_NOMEM. resp is zeroed first; free it with zf_http_response_free. */
zf_status zf_http_perform(zf_http *h, zf_store *s, const zf_http_request *req,
                          zf_http_response *resp, zf_err *err);
void zf_http_response_free(zf_http_response *resp);

/* A zero-length value (a 1-byte allocation, so that data is never NULL on success). */
zf_status zf_bytes_empty(zf_bytes *out);

/* get_partial and get_suffix for HTTP-like stores. request performs one ranged request of the
 * store (its statuses interpreted by the store, except 416, which comes back as a response);
 * stat answers the cases without a body (len 0; a 416 to a suffix: an empty value has none). */
typedef zf_status (*zf_range_request_fn)(zf_store *s, const char *key, zf_http_kind kind,
                                         uint64_t offset, uint64_t len, zf_http_response *r,
                                         zf_err *err);
/* (For ZF_HTTP_GET, which has no range, request's len is the request's max_body: 0 for
 * ZF_HTTP_MAX_VALUE.) */
typedef zf_status (*zf_stat_fn)(zf_store *s, const char *key, uint64_t *size,
                                struct timespec *mtime, zf_err *err);
/* Each also reports, when ver is non-NULL, the version of the value the answer describes (ETag,
 * Last-Modified, whole size), all unknown for an empty result without a body (a 416, len 0). */
/* zf_http_get refuses a value over max_size bytes (zf_store_get_bounded; 0: ZF_HTTP_MAX_VALUE). */
zf_status zf_http_get(zf_store *s, const char *key, zf_range_request_fn request,
                      uint64_t max_size, zf_bytes *out, zf_store_version *ver, zf_err *err);
zf_status zf_http_get_partial(zf_store *s, const char *key, uint64_t offset, uint64_t len,
                              zf_range_request_fn request, zf_stat_fn stat, zf_bytes *out,
                              zf_store_version *ver, zf_err *err);
zf_status zf_http_get_suffix(zf_store *s, const char *key, uint64_t len,
                             zf_range_request_fn request, zf_stat_fn stat, zf_bytes *out,
                             uint64_t *total, zf_store_version *ver, zf_err *err);
/* The version a response tells (ETag, Last-Modified, the total size when known). */
void zf_http_version(const zf_http_response *r, zf_store_version *ver);
/* read_versioned of an HTTP-like store from its request and stat functions (stat_v: a stat that
 * reports the version). */
typedef zf_status (*zf_stat_version_fn)(zf_store *s, const char *key, zf_store_version *ver,
                                        zf_err *err);
zf_status zf_http_read_versioned(zf_store *s, const char *key, zf_read_kind kind,
                                 uint64_t offset, uint64_t len, zf_range_request_fn request,
                                 zf_stat_fn stat, zf_stat_version_fn stat_v, zf_bytes *out,
                                 zf_store_version *ver, zf_err *err);

/* The reads of an HTTP-like store (HTTP, S3, GCS, Azure) from its two primitives, as static
 * functions P_stat, P_get, P_get_partial, P_get_suffix and P_read_versioned for its ops table:
 * REQUEST, its zf_range_request_fn, and STAT_V, its zf_stat_version_fn (P_stat is STAT_V
 * without the version). */
#define ZF_HTTP_LIKE_READS(P, REQUEST, STAT_V)                                                  \
    static zf_status P##_stat(zf_store *s, const char *key, uint64_t *size,                  \
                              struct timespec *mtime, zf_err *err)                           \
    {                                                                                        \
        zf_store_version v;                                                                  \
        zf_status st = STAT_V(s, key, &v, err);                                              \
        if (st == ZF_OK && size)                                                             \
            *size = v.size;                                                                  \
        if (st == ZF_OK && mtime)                                                            \
            *mtime = v.mtime;                                                                \
        return st;                                                                           \
    }                                                                                        \
    static zf_status P##_get(zf_store *s, const char *key, zf_bytes *out, zf_err *err)       \
    {                                                                                        \
        return zf_http_get(s, key, REQUEST, 0, out, NULL, err);                              \
    }                                                                                        \
    static zf_status P##_get_partial(zf_store *s, const char *key, uint64_t offset,          \
                                     uint64_t len, zf_bytes *out, zf_err *err)               \
    {                                                                                        \
        return zf_http_get_partial(s, key, offset, len, REQUEST, P##_stat, out, NULL, err);  \
    }                                                                                        \
    static zf_status P##_get_suffix(zf_store *s, const char *key, uint64_t len,              \
                                    zf_bytes *out, uint64_t *total, zf_err *err)             \
    {                                                                                        \
        return zf_http_get_suffix(s, key, len, REQUEST, P##_stat, out, total, NULL, err);    \
    }                                                                                        \
    static zf_status P##_read_versioned(zf_store *s, const char *key, zf_read_kind kind,     \
                                        uint64_t offset, uint64_t len, zf_bytes *out,        \
                                        zf_store_version *ver, zf_err *err)                  \
    {                                                                                        \
        return zf_http_read_versioned(s, key, kind, offset, len, REQUEST, P##_stat, STAT_V,  \
                                      out, ver, err);                                        \
    }

/* "404 Not Found" (reason phrase when the server sent one, else a known one, else "HTTP 404"). */
void zf_http_status_text(const zf_http_response *resp, char *buf, size_t n);

/* ---- URLs ----------------------------------------------------------------------------------- */

/* True when URLs a and b have the same origin: scheme, host and port (RFC 6454), default ports
 * filled in; false when either cannot be parsed. */
bool zf_url_same_origin(const char *a, const char *b);
/* A copy of url without the userinfo ("user:password@") of its authority. malloc'ed; NULL when
 * out of memory. */
char *zf_url_strip_userinfo(const char *url);

/* Percent-encode n bytes of s: RFC 3986 unreserved characters (ALPHA DIGIT - . _ ~) are kept, and
 * '/' too when keep_slash; everything else becomes %XX (upper-case hex), as SigV4 wants it.
 * malloc'ed; NULL when out of memory. */
char *zf_url_encode(const char *s, size_t n, bool keep_slash);
/* base + "/" + key with each segment of key percent-encoded; key "" gives base + "/" when
 * trailing_slash, else base; trailing_slash appends "/" after a non-empty key too. */
char *zf_url_join_key(const char *base, const char *key, bool trailing_slash);
/* Percent-decode n bytes (a '%' not followed by two hex digits is kept as it is), NUL-terminated,
 * its length in *len (a decoded %00 makes it differ from strlen). NULL when out of memory. */
char *zf_url_decode(const char *s, size_t n, size_t *len);

/* pread until n bytes or the end of the file (EINTR retried): the bytes read, or -1 with errno
 * set when a read failed. */
ssize_t zf_pread_full(int fd, void *buf, size_t n, off_t offset);

/* ---- listings ------------------------------------------------------------------------------- */

/* Largest listing of one prefix an S3 store reads: entries plus pages (a page without entries
 * counts as one), so that a server answering continuation token after continuation token ends
 * in ZF_ERR_IO. A variable so that tests can lower it. */
#define ZF_LIST_MAX_ENTRIES ((size_t)10 * 1000 * 1000)
extern size_t zf_list_max_entries;

/* Append one entry (a copy of n bytes of name). false when out of memory. */
bool zf_listing_add(zf_store_listing *l, size_t *cap, const char *name, size_t n, bool is_prefix);
/* Sort by name and merge duplicates (a name seen as a prefix stays a prefix). */
void zf_listing_sort_unique(zf_store_listing *l);

/* One page of a paged listing (S3's ListObjectsV2, Azure's List Blobs, GCS's objects.list):
 * request the page after `enc_token` (URL-encoded; NULL: the first) of the keys below
 * list_prefix (the full key prefix ending in '/', or ""; enc_prefix URL-encoded), add its
 * entries to l (zf_listing_add with *cap), set *n_raw to the entries the page held and *next to
 * the token of the page after it (malloc'd; NULL: the last). Errors: the store's, with `what`. */
typedef zf_status (*zf_list_page_fn)(void *ctx, const char *what, const char *list_prefix,
                                     const char *enc_prefix, const char *enc_token,
                                     zf_store_listing *l, size_t *cap, size_t *n_raw,
                                     char **next, zf_err *err);

/* The listing below the full key fk (taken; NULL: out of memory) of a store that lists page by
 * page: page(ctx, ...) for each page, until one has no next token. A token that repeats the
 * previous one (its name `token_name`, e.g. "continuation token", for the message) and more
 * than zf_list_max_entries entries and pages are ZF_ERR_IO; no entry at all is
 * ZF_ERR_NOT_FOUND. *out sorted, duplicates merged (zf_listing_sort_unique). */
zf_status zf_list_pages(const char *what, char *fk, const char *token_name, zf_list_page_fn page,
                        void *ctx, zf_store_listing *out, zf_err *err);

/* A table of n entries of `size` bytes each, sorted (strcmp) by the key string (a char *) at byte
 * `key_off` of each entry: the keys of an archive or a reference file. */
typedef struct zf_key_table {
    const void *base;
    size_t n, size, key_off;
} zf_key_table;
/* The first entry whose key is not below s (n when none). */
size_t zf_key_table_lower_bound(const zf_key_table *t, const char *s);
const char *zf_key_table_key(const zf_key_table *t, size_t i);
/* The children of prefix ("" or "a/b") among the table's keys: each next path segment once
 * (is_prefix when keys lie below it), segments "", "." and ".." left out. Errors:
 * ZF_ERR_NOT_FOUND when nothing lies below prefix, ZF_ERR_NOMEM. */
zf_status zf_key_table_list(const zf_key_table *t, const char *prefix, zf_store_listing *out);

/* The children named by an HTML directory index page (nginx autoindex, Apache mod_autoindex,
 * Python's http.server, lighttpd, ...): each href that is one relative path segment, percent-
 * and entity-decoded; "name/" is a prefix, "name" a key. Parent, sort (?C=N;O=D), absolute,
 * fragment and query links are skipped. ZF_ERR_UNSUPPORTED when the page is not an index (no
 * links and no "Index of"/"Directory listing for" heading). */
zf_status zf_html_index_parse(const char *html, size_t len, zf_store_listing *out, zf_err *err);

/* Append full (a key, or a prefix ending with '/' when is_prefix) to out relative to prefix when
 * it lies directly below it; names outside prefix, deeper, "", ".", ".." or with '\\' are
 * skipped (true). false when out of memory. */
bool zf_listing_add_below(zf_store_listing *out, size_t *cap, const char *prefix,
                          const char *full, bool is_prefix);

/* One page of an S3 ListObjectsV2 answer. Keys (Contents/Key) and common prefixes
 * (CommonPrefixes/Prefix) that lie directly below prefix (which ends with '/', or is "") are
 * appended to out, relative to it, prefixes without their trailing '/'. *n_raw counts every Key
 * and Prefix element of the page (a folder marker "prefix/" counts but is not listed). *next_token
 * is the NextContinuationToken when IsTruncated is true (malloc'ed), else NULL. ZF_ERR_IO for a
 * document that is not a ListBucketResult. */
zf_status zf_s3_list_parse(const char *xml, size_t len, const char *prefix, zf_store_listing *out,
                           size_t *cap, size_t *n_raw, char **next_token, zf_err *err);
/* For tests: when non-zero, S3 listings ask for pages of at most this many names (max-keys), to
 * exercise continuation tokens. */
extern unsigned zf_s3_list_max_keys;
/* Code and Message of an S3 <Error> document; false when xml is not one. */
bool zf_s3_error_parse(const char *xml, size_t len, char *code, size_t code_n, char *msg,
                       size_t msg_n);

/* One page of an Azure List Blobs answer (EnumerationResults): blobs (Blobs/Blob/Name) and
 * prefixes (Blobs/BlobPrefix/Name) directly below prefix, as zf_s3_list_parse; names with
 * Encoded="true" are percent-decoded. *next_marker is NextMarker when not empty (malloc'ed),
 * else NULL. ZF_ERR_IO for a document that is not an EnumerationResults. Azure's error documents
 * (<Error><Code>...</Code><Message>...</Message></Error>) are read by zf_s3_error_parse. */
zf_status zf_azure_list_parse(const char *xml, size_t len, const char *prefix,
                              zf_store_listing *out, size_t *cap, size_t *n_raw,
                              char **next_marker, zf_err *err);

/* ---- Azure authorization (azure_auth.c) ----------------------------------------------------- */

/* What a Shared Key signature covers ("Authorize with Shared Key", Blob service, version
 * 2009-09-19 and later): the verb, the standard headers' values ("" or NULL when not sent;
 * content_length "" for 0), the x-ms-* header lines ("x-ms-date: ..."; NULL-terminated) and the
 * request URL as sent (its path and query become the canonicalized resource "/" account path
 * "\nname:value"...). */
typedef struct zf_azure_sign_input {
    const char *verb, *content_length, *content_type, *if_match, *if_none_match, *range;
    const char *const *ms_headers;
    const char *account, *url;
} zf_azure_sign_input;
/* The string-to-sign, malloc'ed (NULL when out of memory). */
char *zf_azure_string_to_sign(const zf_azure_sign_input *in);
/* base64(HMAC-SHA256(key, sts)) into out (44 characters and a NUL); false on failure. */
bool zf_azure_sign(const uint8_t *key, size_t key_len, const char *sts, char out[48]);
/* Decode a base64 account key into out (cap bytes); false when b64 is not base64 or too long. */
bool zf_azure_key_decode(const char *b64, uint8_t *out, size_t cap, size_t *n);
/* x-ms-date's form of t: "Sun, 06 Nov 1994 08:49:37 GMT". */
void zf_azure_http_date(time_t t, char buf[32]);
/* The expiry (se=, ISO 8601 UTC) of a SAS token (its query, without '?'): 1 with *expiry set,
 * 0 when it has none, -1 when se= is malformed. */
int zf_azure_sas_expiry(const char *sas, time_t *expiry);
/* For tests: when non-zero, Azure listings ask for pages of at most this many names
 * (maxresults); the daemon sets it from $ZARRFS_TEST_AZURE_MAXRESULTS. */
extern unsigned zf_azure_list_max_results;

/* ---- Google Cloud Storage (gcs_json.c) -------------------------------------------------------- */

/* One page of a GCS objects.list answer (JSON API, delimiter "/"): items[].name and prefixes[]
 * directly below prefix (ending with '/', or "") appended to out relative to it, prefixes without
 * their trailing '/' (the emulator repeats the prefixes on every page: zf_listing_sort_unique
 * merges them). *n_raw counts every item and prefix of the page; *next_token is nextPageToken
 * (malloc'ed) or NULL on the last page. ZF_ERR_IO for anything but such a JSON object. */
zf_status zf_gcs_list_parse(const char *json, size_t len, const char *prefix,
                            zf_store_listing *out, size_t *cap, size_t *n_raw, char **next_token,
                            zf_err *err);
/* For tests: when non-zero, GCS listings ask for pages of at most this many names (maxResults). */
extern unsigned zf_gcs_list_max_results;
/* The message of a JSON API error ({"error": {"message": ...}}) or of an OAuth error
 * (error_description, error), control characters blanked; false when json is neither. */
bool zf_gcs_error_parse(const char *json, size_t len, char *msg, size_t msg_n);

/* A service-account JSON key ("type": "service_account"): its client_email, token_uri (default
 * https://oauth2.googleapis.com/token; https://, or http:// on a loopback host only) and RSA
 * private key (PEM). */
typedef struct zf_gcs_key {
    char *client_email, *token_uri;
    struct evp_pkey_st *pkey; /* EVP_PKEY */
} zf_gcs_key;
/* Parse len bytes of a key file (path for messages). ZF_ERR_INVALID naming what is wrong, never
 * a value of the key; ZF_ERR_NOMEM. */
zf_status zf_gcs_key_parse(const char *path, const char *json, size_t len, zf_gcs_key *out,
                           zf_err *err);
/* Read the key file at path, refused unless zf_secret_file_check accepts it (owned by the user,
 * no group or other permission bits), at most 64 KiB; the text is wiped after parsing. */
zf_status zf_gcs_key_load(const char *path, zf_gcs_key *out, zf_err *err);
void zf_gcs_key_free(zf_gcs_key *k);
/* The JWT assertion of the service-account flow (RFC 7523 2.1): header {"alg":"RS256",
 * "typ":"JWT"}, claims iss = client_email, scope, aud = token_uri, iat (seconds since the
 * epoch), exp = iat + 3600; signed RS256 (RSASSA-PKCS1-v1_5 with SHA-256). malloc'ed. */
zf_status zf_gcs_jwt(const zf_gcs_key *k, const char *scope, int64_t iat, char **out,
                     zf_err *err);
/* An OAuth 2.0 token response (RFC 6749 5.1): access_token (printable, no spaces), token_type
 * Bearer when given, expires_in (seconds, 1 to 604800; 3600 when absent). ZF_ERR_IO otherwise. */
zf_status zf_gcs_token_parse(const char *json, size_t len, char **token, int64_t *expires_in,
                             zf_err *err);

/* ---- AWS configuration ---------------------------------------------------------------------- */

/* The value of key in [section] of an INI text as the AWS CLI reads ~/.aws/credentials and
 * ~/.aws/config: '#' and ';' comment lines, blanks around names, "=" or ":", key names
 * case-insensitive. malloc'ed into *out; false when absent (or out of memory). */
bool zf_ini_get(const char *text, const char *section, const char *key, char **out);

typedef struct zf_aws_credentials {
    char *access_key, *secret_key, *session_token; /* session_token may be NULL */
    char source[128]; /* where they came from, for messages: "environment", "profile default in
                         /root/.aws/credentials" */
} zf_aws_credentials;
/* Credentials: with profile NULL, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY(/AWS_SESSION_TOKEN)
 * when set, else [$AWS_PROFILE or default] of $AWS_SHARED_CREDENTIALS_FILE or
 * ~/.aws/credentials; with a profile, that profile of the file. ZF_ERR_NOT_FOUND (with a message
 * saying where zarrfs looked) when there are none; ZF_ERR_INVALID for half of a pair. */
zf_status zf_aws_credentials_load(const char *profile, zf_aws_credentials *out, zf_err *err);
void zf_aws_credentials_free(zf_aws_credentials *c);
/* The region of [profile P] (or [default]) in $AWS_CONFIG_FILE or ~/.aws/config; NULL if none. */
char *zf_aws_config_region(const char *profile);

#endif
