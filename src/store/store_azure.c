/* store_azure.c — Azure Blob Storage (az://CONTAINER/PREFIX, abfs[s]://CONTAINER@ACCOUNT.dfs.core.
 * windows.net/PREFIX, https://ACCOUNT.blob.core.windows.net/CONTAINER/PREFIX), on the transport of
 * http_transport.c.
 *
 * Blobs are addressed path-style below the account's blob endpoint: ENDPOINT/CONTAINER/KEY, the
 * endpoint https://ACCOUNT.blob.core.windows.net unless -o endpoint names another (Azurite:
 * http://127.0.0.1:10000/devstoreaccount1). Reads are Get Blob with a Range header, stat Get Blob
 * Properties (HEAD), listings List Blobs (restype=container&comp=list, delimiter "/", marker
 * continuation), writes Put Blob (BlockBlob) and Delete Blob, conditional on the ETag read
 * (If-Match) or on absence (If-None-Match: *); 409 and 412 to a conditional request are a
 * conflict (Azurite answers 409 BlobAlreadyExists, Azure 409 or 412).
 *
 * Authorization, one kind per store, every request carrying x-ms-version:
 * - a SAS token appended to each request's query; one from the credentials file is re-read from
 *   the file when its se= expiry has passed or the service answers 401/403 (the file changed
 *   since it was read: the request is sent once more with the new token), so that a long mount
 *   outlives short-lived tokens (the Planetary Computer's); an expired token is logged once and
 *   requests fail with ZF_ERR_ACCESS until the file holds a fresh one;
 * - Shared Key: "Authorization: SharedKey ACCOUNT:SIGNATURE", HMAC-SHA256 (azure_auth.c) over the
 *   string-to-sign of the request as sent, x-ms-date included;
 * - a bearer token (OAuth 2.0, "Authorization: Bearer TOKEN");
 * - none (public containers).
 * Requests carry their own authorization (own_auth): redirects are followed only within the
 * origin, so that neither the SAS nor a signature reaches another server. The store's url (for
 * messages and logs) is the redacted form of what the user named: a SAS's signature never shows.
 *
 * Statuses: 404 is "not found" unless its x-ms-error-code (or error document) says
 * ContainerNotFound, a mount error naming the container; 401/403 are ZF_ERR_ACCESS naming the
 * credential tried. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "store_impl.h"
#include "zarrfs/log.h"

#define AZ_VERSION "2021-08-06"
#define AZ_MAX_KEY 128 /* bytes of a decoded account key (Azure's are 64) */

typedef enum az_auth { AZ_ANON, AZ_SAS, AZ_KEY, AZ_BEARER } az_auth;

typedef struct az_store {
    zf_store base;
    zf_http *http;
    char *base_url;  /* endpoint/container, no '/' after */
    char *account;   /* NULL when unknown (an endpoint given, no Shared Key) */
    char *container, *prefix; /* prefix: "" or "a/b" */
    az_auth auth;
    uint8_t key[AZ_MAX_KEY]; /* AZ_KEY: the decoded account key */
    size_t key_len;
    char *bearer;    /* AZ_BEARER: "Authorization: Bearer TOKEN" */
    char creds[160]; /* the credential tried, for messages */

    pthread_mutex_t mu; /* guards the SAS fields below: requests run on many threads */
    char *sas;          /* AZ_SAS: the token (a query without '?') */
    time_t sas_expiry;  /* its se=, 0 when it has none */
    unsigned sas_gen;   /* bumped when the token changes */
    char *sas_file;     /* the credentials file it came from (re-read), NULL otherwise */
    struct stat sas_file_st; /* the file as last read: re-read only once it changed */
    bool expiry_logged;
} az_store;

static void wipe_free(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

/* A SAS token worth sending: query characters only, with a signature. */
static bool sas_plausible(const char *t)
{
    if (!*t)
        return false;
    for (const char *p = t; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr("%&=+/:,._~-", *p)))
            return false;
    return strncmp(t, "sig=", 4) == 0 || strstr(t, "&sig=") != NULL;
}

static void iso_time(time_t t, char buf[32])
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Re-read the credentials file when it changed since it was last read: a different
 * azure_storage_sas_token replaces the SAS. Caller holds mu. */
static void sas_reload_locked(az_store *az)
{
    struct stat sb;
    if (!az->sas_file || stat(az->sas_file, &sb) != 0 || same_file(&sb, &az->sas_file_st))
        return;
    az->sas_file_st = sb;
    zf_credentials c;
    zf_err e = {""};
    zf_status st = zf_credentials_load(az->sas_file, &c, &e);
    if (st != ZF_OK) {
        zf_log_warn("%s: re-reading the credentials file: %s", az->base.url,
                    e.msg[0] ? e.msg : zf_status_str(st));
        return;
    }
    const char *t = c.azure_storage_sas_token;
    if (t && *t == '?')
        t++;
    if (!t || !sas_plausible(t)) {
        zf_log_warn("%s: %s holds no usable azure_storage_sas_token", az->base.url, az->sas_file);
    } else if (strcmp(t, az->sas) != 0) {
        char *n = strdup(t);
        time_t exp;
        if (n) {
            wipe_free(az->sas);
            az->sas = n;
            az->sas_expiry = zf_azure_sas_expiry(n, &exp) == 1 ? exp : 0;
            az->sas_gen++;
            az->expiry_logged = false;
            zf_log(ZF_LOG_INFO, "%s: a new SAS token from %s", az->base.url, az->sas_file);
        }
    }
    zf_credentials_free(&c);
}

/* The SAS to send (malloc'ed, wiped by the caller) and its generation; ZF_ERR_ACCESS when it
 * has expired and the file (if any) holds no fresher one. */
static zf_status sas_current(az_store *az, const char *what, char **out, unsigned *gen,
                             zf_err *err)
{
    pthread_mutex_lock(&az->mu);
    time_t now = time(NULL);
    if (az->sas_expiry && now >= az->sas_expiry)
        sas_reload_locked(az);
    if (az->sas_expiry && now >= az->sas_expiry) {
        char when[32];
        iso_time(az->sas_expiry, when);
        if (!az->expiry_logged)
            zf_log_warn("%s: SAS token expired at %s (%s)%s", az->base.url, when, az->creds,
                        az->sas_file ? ": waiting for a fresh one in the file" : "");
        az->expiry_logged = true;
        pthread_mutex_unlock(&az->mu);
        return zf_fail(err, ZF_ERR_ACCESS, "%s: SAS token expired at %s (%s)", what, when,
                       az->creds);
    }
    *out = strdup(az->sas);
    *gen = az->sas_gen;
    pthread_mutex_unlock(&az->mu);
    return *out ? ZF_OK : ZF_ERR_NOMEM;
}

/* After a 401/403: re-read the file; true when the token changed since generation gen. */
static bool sas_refreshed(az_store *az, unsigned gen)
{
    pthread_mutex_lock(&az->mu);
    sas_reload_locked(az);
    bool changed = az->sas_gen != gen;
    pthread_mutex_unlock(&az->mu);
    return changed;
}

static const char *verb_of(zf_http_kind k)
{
    switch (k) {
    case ZF_HTTP_HEAD: return "HEAD";
    case ZF_HTTP_PUT: return "PUT";
    case ZF_HTTP_DELETE: return "DELETE";
    default: return "GET";
    }
}

/* The value of rq's condition header when it is name ("If-Match"), else "". */
static const char *condition_value(const zf_http_request *rq, const char *name)
{
    size_t n = strlen(name);
    if (!rq->condition || strncmp(rq->condition, name, n) != 0 || rq->condition[n] != ':')
        return "";
    const char *v = rq->condition + n + 1;
    while (*v == ' ')
        v++;
    return v;
}

/* One request to url (percent-encoded, without a query) with query ("" or encoded parameters),
 * authorized as the store is; rq's url and headers are filled in here. A 401/403 with a SAS of
 * a credentials file that has changed since is sent again with the new token. */
static zf_status az_send(az_store *az, zf_http_request *rq, const char *url, const char *query,
                         zf_http_response *r, zf_err *err)
{
    for (int attempt = 0;; attempt++) {
        char *sas = NULL, *full = NULL, *authz = NULL;
        unsigned gen = 0;
        zf_status st;
        if (az->auth == AZ_SAS && (st = sas_current(az, rq->what, &sas, &gen, err)) != ZF_OK)
            return st;
        bool q = query[0] || sas;
        if (asprintf(&full, "%s%s%s%s%s", url, q ? "?" : "", query, query[0] && sas ? "&" : "",
                     sas ? sas : "") < 0)
            full = NULL;
        wipe_free(sas);
        if (!full)
            return ZF_ERR_NOMEM;
        char date[64], clen[32] = "";
        zf_azure_http_date(time(NULL), date + strlen(strcpy(date, "x-ms-date: ")));
        const char *hdrs[6];
        size_t nh = 0;
        hdrs[nh++] = date;
        hdrs[nh++] = "x-ms-version: " AZ_VERSION;
        if (rq->kind == ZF_HTTP_PUT)
            hdrs[nh++] = "x-ms-blob-type: BlockBlob";
        hdrs[nh] = NULL; /* the x-ms-* headers end here: they are the signed ones */
        st = ZF_OK;
        if (az->auth == AZ_KEY) {
            char range[64];
            zf_http_range_header(rq, range, sizeof range);
            if (rq->kind == ZF_HTTP_PUT && rq->body_len)
                snprintf(clen, sizeof clen, "%zu", rq->body_len);
            zf_azure_sign_input in = {
                .verb = verb_of(rq->kind),
                .content_length = clen,
                .content_type = rq->kind == ZF_HTTP_PUT
                                    ? (rq->content_type ? rq->content_type
                                                        : "application/octet-stream")
                                    : "",
                .if_match = condition_value(rq, "If-Match"),
                .if_none_match = condition_value(rq, "If-None-Match"),
                .range = range[0] ? range + strlen("Range: ") : "",
                .ms_headers = hdrs,
                .account = az->account,
                .url = full};
            char *sts = zf_azure_string_to_sign(&in), sig[48];
            if (!sts || !zf_azure_sign(az->key, az->key_len, sts, sig))
                st = sts ? zf_fail(err, ZF_ERR_IO, "%s: signing failed", rq->what)
                         : ZF_ERR_NOMEM;
            else if (asprintf(&authz, "Authorization: SharedKey %s:%s", az->account, sig) < 0)
                authz = NULL, st = ZF_ERR_NOMEM;
            free(sts);
            if (authz)
                hdrs[nh++] = authz;
        } else if (az->auth == AZ_BEARER) {
            hdrs[nh++] = az->bearer;
        }
        hdrs[nh] = NULL;
        if (st == ZF_OK) {
            rq->url = full;
            rq->headers = hdrs;
            st = zf_http_perform(az->http, &az->base, rq, r, err);
            rq->url = NULL;
            rq->headers = NULL;
        }
        wipe_free(full);
        free(authz);
        if (st == ZF_OK && (r->status == 401 || r->status == 403) && az->auth == AZ_SAS &&
            az->sas_file && attempt == 0 && sas_refreshed(az, gen)) {
            zf_http_response_free(r);
            continue;
        }
        return st;
    }
}

/* prefix + "/" + key (either may be ""). */
static char *full_key(const az_store *az, const char *key)
{
    char *out;
    if (!az->prefix[0])
        return strdup(key);
    if (!key[0])
        return strdup(az->prefix);
    return asprintf(&out, "%s/%s", az->prefix, key) < 0 ? NULL : out;
}

/* A final answer that is not 2xx (416 aside, which the callers handle). A 404 is "not found"
 * unless missing_is_error. */
static zf_status answer_status(const az_store *az, const char *key, const zf_http_response *r,
                               bool missing_is_error, zf_err *err)
{
    if (r->status >= 200 && r->status < 300)
        return ZF_OK;
    char code[64] = "", msg[256] = "", text[96], detail[400] = "";
    if (!zf_s3_error_parse((const char *)r->body.data, r->body.len, code, sizeof code, msg,
                           sizeof msg) &&
        r->error_code[0])
        snprintf(code, sizeof code, "%s", r->error_code);
    char *rid = strstr(msg, " RequestId:"); /* Azure's messages end with request id and time */
    if (rid)
        *rid = '\0';
    if (code[0])
        snprintf(detail, sizeof detail, " (%s%s%s)", code, msg[0] ? ": " : "", msg);
    zf_http_status_text(r, text, sizeof text);
    if (r->status == 404 && strcmp(code, "ContainerNotFound") == 0)
        return zf_fail(err, ZF_ERR_IO, "%s: container \"%s\" does not exist%s%s", key,
                       az->container, az->account ? " in account " : "",
                       az->account ? az->account : "");
    if (r->status == 404 && !missing_is_error)
        return ZF_ERR_NOT_FOUND;
    if (r->status == 401 || r->status == 403) /* Azure's reason phrases are sentences */
        return zf_fail(err, ZF_ERR_ACCESS, "%s: access denied (HTTP %ld%s%s) with %s", key,
                       r->status, code[0] ? " " : "", code, az->creds);
    return zf_fail(err, ZF_ERR_IO, "%s: %s%s", key, text, detail);
}

/* One request for key, its answer checked with answer_status (a 416 to a GET is left to its
 * caller; a 404 to a PUT is an error). */
static zf_status request_rq(az_store *az, const char *key, zf_http_request rq,
                            zf_http_response *r, zf_err *err)
{
    char *fk = full_key(az, key);
    char *url = fk ? zf_url_join_key(az->base_url, fk, false) : NULL;
    free(fk);
    if (!url)
        return ZF_ERR_NOMEM;
    rq.what = key;
    bool ranged = rq.kind == ZF_HTTP_RANGE || rq.kind == ZF_HTTP_SUFFIX || rq.kind == ZF_HTTP_GET;
    zf_status st = az_send(az, &rq, url, "", r, err);
    free(url);
    if (st == ZF_OK && rq.condition && (r->status == 412 || r->status == 409)) {
        zf_http_response_free(r);
        return zf_fail(err, ZF_ERR_CONFLICT, "%s: changed by another writer since it was read",
                       key);
    }
    if (st == ZF_OK && (r->status != 416 || !ranged) &&
        (st = answer_status(az, key, r, rq.kind == ZF_HTTP_PUT, err)) != ZF_OK)
        zf_http_response_free(r);
    return st;
}

static zf_status request(az_store *az, const char *key, zf_http_kind kind, uint64_t offset,
                         uint64_t len, zf_http_response *r, zf_err *err)
{
    zf_http_request rq = {.kind = kind, .offset = offset, .len = len};
    if (kind == ZF_HTTP_GET) /* len: the bound of the body (store_impl.h) */
        rq.len = 0, rq.max_body = len;
    return request_rq(az, key, rq, r, err);
}

/* Get Blob Properties: the blob's version (size, Last-Modified, ETag). */
static zf_status az_stat_v(zf_store *s, const char *key, zf_store_version *ver, zf_err *err)
{
    zf_http_response r;
    zf_status st = request((az_store *)s, key, ZF_HTTP_HEAD, 0, 0, &r, err);
    if (st != ZF_OK)
        return st;
    bool ok = r.status != 416 && r.has_total;
    zf_http_version(&r, ver);
    zf_http_response_free(&r);
    return ok ? ZF_OK : zf_fail(err, ZF_ERR_IO, "%s: HEAD answered without a size", key);
}

/* Azure has no suffix ranges (Azurite answers "bytes=-N" with the whole blob as a 206 without
 * Content-Range): the last len bytes are asked for by offset, the size from Get Blob Properties,
 * checked against the total of the answer (a blob replaced in between is read again). */
static zf_status az_range_request(zf_store *s, const char *key, zf_http_kind kind,
                                  uint64_t offset, uint64_t len, zf_http_response *r,
                                  zf_err *err)
{
    az_store *az = (az_store *)s;
    if (kind != ZF_HTTP_SUFFIX)
        return request(az, key, kind, offset, len, r, err);
    for (int attempt = 0; attempt < 3; attempt++) {
        zf_store_version v;
        zf_status st = az_stat_v(s, key, &v, err);
        if (st != ZF_OK)
            return st;
        /* an empty blob: a range from 0 is answered 416, which the callers take as empty */
        uint64_t from = len < v.size ? v.size - len : 0;
        if ((st = request(az, key, ZF_HTTP_RANGE, from, UINT64_MAX, r, err)) != ZF_OK)
            return st;
        if (r->status == 416 || !r->has_total || r->total == v.size)
            return ZF_OK;
        zf_http_response_free(r);
    }
    return zf_fail(err, ZF_ERR_IO, "%s: the blob changed during each of 3 reads of its end", key);
}

ZF_HTTP_LIKE_READS(az, az_range_request, az_stat_v)

/* Put Blob (data) or Delete Blob; with conditional, only while the blob is still the version
 * base (If-Match with its ETag; If-None-Match: * for a key read as absent, base NULL). */
static zf_status az_write(zf_store *s, const char *key, zf_http_kind kind, const uint8_t *data,
                          size_t len, bool conditional, const zf_store_version *base,
                          zf_err *err)
{
    char cond[sizeof base->etag + 16];
    const char *c = NULL;
    if (conditional && base && base->etag[0])
        snprintf(cond, sizeof cond, "If-Match: %s", base->etag), c = cond;
    else if (conditional && !base)
        c = "If-None-Match: *";
    zf_http_response r;
    zf_http_request rq = {.kind = kind, .body = data, .body_len = len, .condition = c};
    zf_status st = request_rq((az_store *)s, key, rq, &r, err);
    if (st == ZF_OK)
        zf_http_response_free(&r);
    if (kind == ZF_HTTP_DELETE && st == ZF_ERR_NOT_FOUND) /* BlobNotFound: gone */
        return c ? zf_fail(err, ZF_ERR_CONFLICT, "%s: removed by another writer", key) : ZF_OK;
    return st;
}

static zf_status az_set(zf_store *s, const char *key, const uint8_t *data, size_t len,
                        zf_err *err)
{
    return az_write(s, key, ZF_HTTP_PUT, data, len, false, NULL, err);
}

static zf_status az_set_cond(zf_store *s, const char *key, const uint8_t *data, size_t len,
                             const zf_store_cond *c, zf_err *err)
{
    return az_write(s, key, ZF_HTTP_PUT, data, len, c && c->if_version, c ? c->base : NULL, err);
}

static zf_status az_erase(zf_store *s, const char *key, zf_err *err)
{
    return az_write(s, key, ZF_HTTP_DELETE, NULL, 0, false, NULL, err);
}

static zf_status az_erase_if(zf_store *s, const char *key, const zf_store_version *base,
                             zf_err *err)
{
    return az_write(s, key, ZF_HTTP_DELETE, NULL, 0, true, base, err);
}

unsigned zf_azure_list_max_results;

/* One page of List Blobs below list_prefix with delimiter "/" (zf_list_page_fn; the token is
 * Azure's NextMarker). */
static zf_status az_list_page(void *ctx, const char *what, const char *list_prefix,
                              const char *enc_prefix, const char *enc_token,
                              zf_store_listing *l, size_t *cap, size_t *n_raw, char **next,
                              zf_err *err)
{
    az_store *az = ctx;
    char *query = NULL, maxres[32] = "";
    if (zf_azure_list_max_results)
        snprintf(maxres, sizeof maxres, "&maxresults=%u", zf_azure_list_max_results);
    if (asprintf(&query, "restype=container&comp=list&delimiter=%%2F%s%s%s%s%s", maxres,
                 enc_prefix[0] ? "&prefix=" : "", enc_prefix, enc_token ? "&marker=" : "",
                 enc_token ? enc_token : "") < 0)
        return ZF_ERR_NOMEM;
    zf_http_request rq = {.what = what, .kind = ZF_HTTP_GET, .max_body = ZF_HTTP_MAX_LISTING};
    zf_http_response r;
    zf_status st = az_send(az, &rq, az->base_url, query, &r, err);
    free(query);
    if (st != ZF_OK)
        return st;
    if ((st = answer_status(az, what, &r, false, err)) == ZF_ERR_NOT_FOUND)
        st = zf_fail(err, ZF_ERR_IO, "%s: 404 to a listing", what);
    else if (st == ZF_OK && r.status == 416)
        st = zf_fail(err, ZF_ERR_IO, "%s: 416 to a listing", what);
    if (st == ZF_OK && (st = zf_azure_list_parse((const char *)r.body.data, r.body.len,
                                                 list_prefix, l, cap, n_raw, next, err)) ==
                           ZF_ERR_IO)
        zf_err_prefix(err, "%s", what);
    zf_http_response_free(&r);
    return st;
}

static zf_status az_list_dir(zf_store *s, const char *prefix, zf_store_listing *out,
                             zf_err *err)
{
    return zf_list_pages(prefix[0] ? prefix : "(root)", full_key((az_store *)s, prefix),
                         "marker", az_list_page, s, out, err);
}

static void az_destroy(zf_store *s)
{
    az_store *az = (az_store *)s;
    zf_http_destroy(az->http);
    free(az->base_url);
    free(az->account);
    free(az->container);
    free(az->prefix);
    wipe_free(az->bearer);
    wipe_free(az->sas);
    free(az->sas_file);
    explicit_bzero(az->key, sizeof az->key);
    pthread_mutex_destroy(&az->mu);
    free(az->base.location);
    free(az->base.url);
    free(az);
}

static const zf_store_ops az_ops = {
    .scheme = "az",
    .get = az_get,
    .get_partial = az_get_partial,
    .get_suffix = az_get_suffix,
    .stat = az_stat,
    .list_dir = az_list_dir,
    .destroy = az_destroy,
    .set = az_set,
    .set_cond = az_set_cond,
    .erase = az_erase,
    .erase_if = az_erase_if,
    .remove_dir = NULL, /* no directories in a container: the dispatcher answers ZF_OK */
    .read_versioned = az_read_versioned,
};

bool zf_store_azure_url(const char *url)
{
    if (strncmp(url, "az://", 5) == 0 || strncmp(url, "abfs://", 7) == 0 ||
        strncmp(url, "abfss://", 8) == 0)
        return true;
    if (strncmp(url, "https://", 8) != 0)
        return false;
    const char *host = url + 8;
    size_t hl = strcspn(host, "/?#");
    static const char suffix[] = ".blob.core.windows.net";
    return hl > sizeof suffix - 1 && memcmp(host + hl - (sizeof suffix - 1), suffix,
                                            sizeof suffix - 1) == 0;
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* An account name: 3 to 24 lower-case letters and digits. */
static bool account_ok(const char *a, size_t n)
{
    if (n < 3 || n > 24)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((a[i] >= 'a' && a[i] <= 'z') || (a[i] >= '0' && a[i] <= '9')))
            return false;
    return true;
}

/* A container name: 3 to 63 lower-case letters, digits and '-', starting and ending with a
 * letter or digit, no "--"; or $root, $web, $logs. */
static bool container_ok(const char *c)
{
    if (strcmp(c, "$root") == 0 || strcmp(c, "$web") == 0 || strcmp(c, "$logs") == 0)
        return true;
    size_t n = strlen(c);
    if (n < 3 || n > 63 || c[0] == '-' || c[n - 1] == '-' || strstr(c, "--"))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((c[i] >= 'a' && c[i] <= 'z') || (c[i] >= '0' && c[i] <= '9') || c[i] == '-'))
            return false;
    return true;
}

/* Container, prefix, account and endpoint of the store from url (shown: its redacted form, for
 * messages); *url_sas the URL's query (a SAS token) or NULL. No credentials yet. */
static zf_status configure(az_store *az, const char *url, const char *shown,
                           const zf_store_options *opts, char **url_sas, zf_err *err)
{
    *url_sas = NULL;
    if (strchr(url, '#'))
        return zf_fail(err, ZF_ERR_INVALID, "%s: a fragment ('#') in an Azure URL", shown);
    const char *q = strchr(url, '?');
    size_t ul = q ? (size_t)(q - url) : strlen(url);
    const char *p; /* "CONTAINER/PREFIX" */
    const char *url_account = NULL;
    size_t url_account_n = 0;
    static const char blob_host[] = ".blob.core.windows.net", dfs_host[] = ".dfs.core.windows.net";
    if (strncmp(url, "az://", 5) == 0) {
        p = url + 5;
    } else if (strncmp(url, "abfs://", 7) == 0 || strncmp(url, "abfss://", 8) == 0) {
        p = url + (url[4] == 's' ? 8 : 7);
        size_t al = strcspn(p, "/?");
        const char *at = memchr(p, '@', al);
        if (at) { /* CONTAINER@ACCOUNT.dfs.core.windows.net */
            const char *host = at + 1;
            size_t hl = (size_t)(p + al - host), sl = sizeof dfs_host - 1;
            if (hl <= sl || (memcmp(host + hl - sl, dfs_host, sl) != 0 &&
                             memcmp(host + hl - sl - 1, blob_host, sl + 1) != 0))
                return zf_fail(err, ZF_ERR_INVALID,
                               "%s: expected abfs://CONTAINER@ACCOUNT.dfs.core.windows.net/PREFIX",
                               shown);
            url_account = host;
            url_account_n = strcspn(host, ".");
            /* CONTAINER/PREFIX: the container, then what follows the host */
            char *cp = NULL;
            if (asprintf(&cp, "%.*s%.*s", (int)(at - p), p, (int)(ul - (size_t)(p + al - url)),
                         p + al) < 0)
                return ZF_ERR_NOMEM;
            az->container = cp; /* split below */
        }
    } else { /* https://ACCOUNT.blob.core.windows.net/CONTAINER/PREFIX */
        const char *host = url + 8;
        size_t hl = strcspn(host, "/?");
        if (memchr(host, '@', hl))
            return zf_fail(err, ZF_ERR_INVALID, "%s: a user or password in an Azure URL is not "
                           "used (a SAS token goes in the query or the credentials)", shown);
        url_account = host;
        url_account_n = hl - (sizeof blob_host - 1);
        p = host + hl;
        while (*p == '/')
            p++;
    }
    const char *cp = az->container ? az->container : p;
    size_t cpl = az->container ? strlen(cp) : ul - (size_t)(p - url);
    size_t cl = strcspn(cp, "/");
    if (cl > cpl)
        cl = cpl;
    char *container = strndup(cp, cl), *prefix = NULL;
    const char *r = cp + cl;
    while (r < cp + cpl && *r == '/')
        r++;
    if (container)
        prefix = strndup(r, cpl - (size_t)(r - cp));
    free(az->container);
    az->container = container;
    az->prefix = prefix;
    if (!container || !prefix)
        return ZF_ERR_NOMEM;
    if (!container[0])
        return zf_fail(err, ZF_ERR_INVALID, "%s: no container (expected az://CONTAINER/PREFIX)",
                       shown);
    if (!container_ok(container))
        return zf_fail(err, ZF_ERR_INVALID,
                       "%s: \"%s\" is not a container name (3 to 63 lower-case letters, digits "
                       "and '-')", shown, container);
    size_t pl = strlen(prefix);
    while (pl && prefix[pl - 1] == '/')
        prefix[--pl] = '\0';
    if (pl && !zf_key_is_valid(prefix))
        return zf_fail(err, ZF_ERR_INVALID, "%s: invalid prefix \"%s\"", shown, prefix);
    if (q && q[1] && !(*url_sas = strdup(q + 1)))
        return ZF_ERR_NOMEM;

    /* the account: the URL's, else -o account, the credentials file's, the environment's */
    const zf_credentials *cr = opts->credentials;
    const char *acct = opts->account && *opts->account ? opts->account : NULL;
    if (url_account) {
        if (!account_ok(url_account, url_account_n))
            return zf_fail(err, ZF_ERR_INVALID, "%s: \"%.*s\" is not a storage account name (3 "
                           "to 24 lower-case letters and digits)", shown, (int)url_account_n,
                           url_account);
        if (acct && (strlen(acct) != url_account_n || memcmp(acct, url_account, url_account_n)))
            return zf_fail(err, ZF_ERR_INVALID, "%s: the URL names account \"%.*s\", -o account "
                           "\"%s\"", shown, (int)url_account_n, url_account, acct);
        az->account = strndup(url_account, url_account_n);
        if (!az->account)
            return ZF_ERR_NOMEM;
    } else {
        if (!acct && cr && cr->azure_storage_account_name)
            acct = cr->azure_storage_account_name;
        if (!acct)
            acct = env("AZURE_STORAGE_ACCOUNT_NAME");
        if (acct && !account_ok(acct, strlen(acct)))
            return zf_fail(err, ZF_ERR_INVALID, "account \"%s\": expected a storage account "
                           "name (3 to 24 lower-case letters and digits)", acct);
        if (acct && !(az->account = strdup(acct)))
            return ZF_ERR_NOMEM;
    }

    const char *ep = opts->endpoint && *opts->endpoint ? opts->endpoint : NULL;
    int rc;
    if (ep) {
        const char *host = strncmp(ep, "http://", 7) == 0    ? ep + 7
                           : strncmp(ep, "https://", 8) == 0 ? ep + 8
                                                             : NULL;
        if (host && memchr(host, '@', strcspn(host, "/")))
            return zf_fail(err, ZF_ERR_INVALID,
                           "endpoint: a user or password in the URL is not used (Azure "
                           "credentials come from -o credentials or AZURE_STORAGE_*)");
        if (!host || !*host || *host == '/' || strpbrk(ep, "?# \t"))
            return zf_fail(err, ZF_ERR_INVALID, "endpoint \"%s\": expected http://HOST[:PORT]"
                           "[/ACCOUNT] or https://...", ep);
        size_t el = strlen(ep);
        while (el && ep[el - 1] == '/')
            el--;
        rc = asprintf(&az->base_url, "%.*s/%s", (int)el, ep, container);
    } else if (az->account) {
        rc = asprintf(&az->base_url, "https://%s.blob.core.windows.net/%s", az->account,
                      container);
    } else {
        return zf_fail(err, ZF_ERR_INVALID, "%s: no storage account: give -o account=NAME (or "
                       "azure_storage_account_name in the credentials file, or "
                       "$AZURE_STORAGE_ACCOUNT_NAME)", shown);
    }
    if (rc < 0) {
        az->base_url = NULL;
        return ZF_ERR_NOMEM;
    }
    /* where the data lives, for the disk cache (no secret: the SAS is not part of it) */
    if (asprintf(&az->base.location, "%s/%s", az->base_url, az->prefix) < 0) {
        az->base.location = NULL;
        return ZF_ERR_NOMEM;
    }
    return ZF_OK;
}

/* The store's credential, in the order of the file comment; url_sas is taken over. */
static zf_status choose_credentials(az_store *az, const zf_store_options *opts, char *url_sas,
                                    zf_err *err)
{
    const zf_credentials *cr = opts->credentials;
    const char *sas = NULL, *key = NULL;
    if (opts->anonymous) {
        wipe_free(url_sas);
        snprintf(az->creds, sizeof az->creds, "no credentials (-o anonymous)");
        return ZF_OK;
    }
    if (url_sas) {
        sas = url_sas;
        snprintf(az->creds, sizeof az->creds, "the SAS token of the URL");
    } else if (cr && cr->azure_storage_sas_token) {
        sas = cr->azure_storage_sas_token;
        snprintf(az->creds, sizeof az->creds, "the SAS token of -o credentials");
        if (opts->credentials_path) {
            if (!(az->sas_file = strdup(opts->credentials_path)))
                return ZF_ERR_NOMEM;
            if (stat(az->sas_file, &az->sas_file_st) != 0)
                memset(&az->sas_file_st, 0, sizeof az->sas_file_st);
        }
    } else if ((sas = env("AZURE_STORAGE_SAS_TOKEN")) != NULL) {
        snprintf(az->creds, sizeof az->creds, "the SAS token of $AZURE_STORAGE_SAS_TOKEN");
    } else if (cr && cr->azure_storage_account_key) {
        key = cr->azure_storage_account_key;
        snprintf(az->creds, sizeof az->creds, "the Shared Key of -o credentials");
    } else if ((key = env("AZURE_STORAGE_ACCOUNT_KEY")) != NULL) {
        snprintf(az->creds, sizeof az->creds, "the Shared Key of $AZURE_STORAGE_ACCOUNT_KEY");
    } else if (cr && cr->bearer_token) {
        az->auth = AZ_BEARER;
        snprintf(az->creds, sizeof az->creds, "the bearer token of -o credentials");
        if (asprintf(&az->bearer, "Authorization: Bearer %s", cr->bearer_token) < 0) {
            az->bearer = NULL;
            return ZF_ERR_NOMEM;
        }
        return ZF_OK;
    } else {
        snprintf(az->creds, sizeof az->creds, "no credentials (anonymous)");
        return ZF_OK;
    }
    if (sas) {
        if (*sas == '?')
            sas++;
        zf_status st = ZF_OK;
        time_t exp;
        int e = 0;
        if (!sas_plausible(sas))
            st = zf_fail(err, ZF_ERR_INVALID, "%s is not a SAS token (expected a query such as "
                         "sv=...&se=...&sig=...)", az->creds);
        else if ((e = zf_azure_sas_expiry(sas, &exp)) < 0)
            st = zf_fail(err, ZF_ERR_INVALID, "%s: its expiry (se=) is not an ISO 8601 UTC "
                         "time", az->creds);
        else if (!(az->sas = strdup(sas)))
            st = ZF_ERR_NOMEM;
        az->sas_expiry = e == 1 ? exp : 0;
        az->auth = AZ_SAS;
        wipe_free(url_sas);
        return st;
    }
    if (!az->account)
        return zf_fail(err, ZF_ERR_INVALID, "%s needs the storage account's name: give -o "
                       "account=NAME", az->creds);
    if (!zf_azure_key_decode(key, az->key, sizeof az->key, &az->key_len) || !az->key_len)
        return zf_fail(err, ZF_ERR_INVALID, "%s is not a base64 account key", az->creds);
    az->auth = AZ_KEY;
    return ZF_OK;
}

zf_status zf_store_azure_open(const char *url, const zf_store_options *opts, zf_store **out,
                              zf_err *err)
{
    static const zf_store_options defaults = {0};
    if (!opts)
        opts = &defaults;
    if (!zf_store_azure_url(url))
        return zf_fail(err, ZF_ERR_INVALID, "not an Azure Blob Storage URL");
    az_store *az = calloc(1, sizeof *az);
    if (!az)
        return ZF_ERR_NOMEM;
    pthread_mutex_init(&az->mu, NULL);
    az->base.ops = &az_ops;
    az->base.remote = true;
    /* what messages and logs show: the SAS's signature hidden */
    if (!(az->base.url = zf_url_redact(url))) {
        az_destroy(&az->base);
        return ZF_ERR_NOMEM;
    }
    const char *mr = env("ZARRFS_TEST_AZURE_MAXRESULTS"); /* for tests: small listing pages */
    if (mr)
        zf_azure_list_max_results = (unsigned)strtoul(mr, NULL, 10);
    char *url_sas = NULL;
    zf_status st = configure(az, url, az->base.url, opts, &url_sas, err);
    if (st == ZF_OK)
        st = choose_credentials(az, opts, url_sas, err);
    else
        wipe_free(url_sas);
    if (st == ZF_OK) {
        zf_http_config cfg = {.opts = opts, .own_auth = true};
        st = zf_http_create(&cfg, &az->http, err);
    }
    if (st != ZF_OK) {
        az_destroy(&az->base);
        return st;
    }
    *out = &az->base;
    return ZF_OK;
}
