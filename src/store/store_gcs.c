/* store_gcs.c — Google Cloud Storage at gs://BUCKET/PREFIX (or
 * https://storage.googleapis.com/BUCKET/PREFIX), on the transport of http_transport.c, through
 * the JSON API (https://cloud.google.com/storage/docs/json_api):
 *   read     GET  {api}/storage/v1/b/BUCKET/o/NAME?alt=media   (Range; x-goog-generation)
 *   stat     GET  {api}/storage/v1/b/BUCKET/o/NAME             (size, generation, updated)
 *   list     GET  {api}/storage/v1/b/BUCKET/o?delimiter=/&prefix=P&pageToken=T
 *   write    POST {api}/upload/storage/v1/b/BUCKET/o?uploadType=media&name=NAME
 *                 [&ifGenerationMatch=G: 0 for a key read as absent]
 *   erase    DELETE {api}/storage/v1/b/BUCKET/o/NAME[?ifGenerationMatch=G]
 * NAME is the whole object name percent-encoded ('/' too). The version of a value
 * (zf_store_version.etag) is its generation, in decimal: a conditional write sends it back, a
 * 412 is ZF_ERR_CONFLICT (the caller merges and retries).
 *
 * Credentials (the first that applies): -o anonymous: none; -o credentials' HMAC key pair
 * (aws_access_key_id/aws_secret_access_key): the XML API's S3-compatible SigV4 signing, by the S3
 * store (store_s3.c) at the same endpoint with region "auto", read-only (open_hmac); its google_oauth_access_token, or
 * $GOOGLE_OAUTH_ACCESS_TOKEN: a bearer token; its google_application_credentials, or
 * $GOOGLE_APPLICATION_CREDENTIALS: a service-account key, whose RS256-signed JWT is exchanged at
 * the key's token_uri for an access token, fetched again 5 minutes before it expires (half its
 * lifetime for short ones); nothing: anonymous (public buckets). The token goes in an
 * Authorization header of ours (own_auth: redirects only within the origin).
 *
 * Statuses: 404 is "not found", except for a listing, where it means the bucket is missing (a
 * listing of an existing bucket answers 200, empty); 401 and 403 are ZF_ERR_ACCESS naming the
 * credential; 429 and 5xx are retried by the transport (Retry-After honoured). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "store_impl.h"
#include "zarrfs/json.h"
#include "zarrfs/log.h"

#define DEFAULT_API "https://storage.googleapis.com"
#define SCOPE_RO "https://www.googleapis.com/auth/devstorage.read_only"
#define SCOPE_RW "https://www.googleapis.com/auth/devstorage.read_write"
#define REFRESH_EARLY_S 300
#define MAX_META (1 << 20) /* an object's metadata document */

typedef struct gcs_store {
    zf_store base;
    zf_http *http;
    char *api;            /* the endpoint, no '/' at its end */
    char *bucket, *prefix; /* prefix: "" or "a/b" */
    char creds[320];      /* the credential used, for messages */
    /* bearer tokens: static (token, no key) or a service account's (refreshed) */
    pthread_mutex_t mu;
    char *token;
    zf_gcs_key key;      /* client_email NULL: no service account */
    const char *scope;
    zf_http *token_http; /* to the key's token_uri */
    struct timespec refresh_at, expires_at; /* CLOCK_MONOTONIC */
} gcs_store;

unsigned zf_gcs_list_max_results;

static void wipe_free(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

static char *full_key(const gcs_store *g, const char *key)
{
    char *out;
    if (!g->prefix[0])
        return strdup(key);
    if (!key[0])
        return strdup(g->prefix);
    return asprintf(&out, "%s/%s", g->prefix, key) < 0 ? NULL : out;
}

/* ---- tokens ---------------------------------------------------------------------------------- */

/* Exchange a fresh JWT for an access token (g->mu held). */
static zf_status refresh_token(gcs_store *g, zf_err *err)
{
    char *jwt = NULL, *body = NULL;
    zf_status st = zf_gcs_jwt(&g->key, g->scope, (int64_t)time(NULL), &jwt, err);
    if (st != ZF_OK)
        return st;
    if (asprintf(&body, "grant_type=urn%%3Aietf%%3Aparams%%3Aoauth%%3Agrant-type%%3Ajwt-bearer"
                        "&assertion=%s", jwt) < 0)
        body = NULL;
    wipe_free(jwt);
    if (!body)
        return ZF_ERR_NOMEM;
    zf_http_request rq = {.url = g->key.token_uri,
                          .what = g->key.token_uri,
                          .kind = ZF_HTTP_POST,
                          .body = (const uint8_t *)body,
                          .body_len = strlen(body),
                          .content_type = "application/x-www-form-urlencoded",
                          .max_body = 64 * 1024};
    zf_http_response r;
    st = zf_http_perform(g->token_http, &g->base, &rq, &r, err);
    wipe_free(body);
    if (st != ZF_OK) {
        zf_err_prefix(err, "service account %s: token request", g->key.client_email);
        return st;
    }
    char *tok = NULL;
    int64_t secs = 0;
    if (r.status != 200) {
        char text[96], msg[256] = "";
        zf_http_status_text(&r, text, sizeof text);
        zf_gcs_error_parse((const char *)r.body.data, r.body.len, msg, sizeof msg);
        st = zf_fail(err, r.status == 400 || r.status == 401 || r.status == 403 ? ZF_ERR_ACCESS
                                                                               : ZF_ERR_IO,
                     "service account %s: %s refused the key: %s%s%s%s", g->key.client_email,
                     g->key.token_uri, text, msg[0] ? " (" : "", msg, msg[0] ? ")" : "");
    } else if ((st = zf_gcs_token_parse((const char *)r.body.data, r.body.len, &tok, &secs,
                                        err)) == ZF_ERR_IO) {
        zf_err_prefix(err, "service account %s: %s", g->key.client_email, g->key.token_uri);
    }
    if (r.body.data)
        explicit_bzero(r.body.data, r.body.len);
    zf_http_response_free(&r);
    if (st != ZF_OK)
        return st;
    wipe_free(g->token);
    g->token = tok;
    int64_t early = secs > 2 * REFRESH_EARLY_S ? REFRESH_EARLY_S : secs / 2;
    clock_gettime(CLOCK_MONOTONIC, &g->refresh_at);
    g->expires_at = g->refresh_at;
    g->refresh_at.tv_sec += (time_t)(secs - early);
    g->expires_at.tv_sec += (time_t)secs;
    return ZF_OK;
}

/* "Authorization: Bearer TOKEN" for the next request (malloc'ed; NULL in *out when anonymous),
 * fetching a service account's token when it is due. */
static zf_status auth_header(gcs_store *g, char **out, zf_err *err)
{
    *out = NULL;
    if (!g->key.client_email && !g->token) /* (a service account's token changes: read locked) */
        return ZF_OK;
    zf_status st = ZF_OK;
    pthread_mutex_lock(&g->mu);
    if (g->key.client_email) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (!g->token || now.tv_sec >= g->refresh_at.tv_sec)
            st = refresh_token(g, err);
        if (st != ZF_OK && st != ZF_ERR_NOMEM && g->token && now.tv_sec < g->expires_at.tv_sec) {
            /* the token endpoint failed while the token still holds: use it, ask again in 30 s
             * (not before each request, which would wait for the endpoint's retries) */
            zf_log(ZF_LOG_WARN, "%s: keeping the current token: %s", g->base.url,
                   err ? err->msg : zf_status_str(st));
            g->refresh_at.tv_sec = now.tv_sec + 30;
            st = ZF_OK;
        }
    }
    if (st == ZF_OK && asprintf(out, "Authorization: Bearer %s", g->token) < 0) {
        *out = NULL;
        st = ZF_ERR_NOMEM;
    }
    pthread_mutex_unlock(&g->mu);
    return st;
}

/* ---- requests -------------------------------------------------------------------------------- */

/* A final answer that is not 2xx (a 416 aside, which the callers handle). what names the key; a
 * 404 is "not found" unless listing (the bucket is missing) or missing_is_error (a write). */
static zf_status answer_status(const gcs_store *g, const char *what, const zf_http_response *r,
                               bool listing, bool missing_is_error, zf_err *err)
{
    if (r->status >= 200 && r->status < 300)
        return ZF_OK;
    char msg[256] = "", text[96], detail[300] = "";
    if (zf_gcs_error_parse((const char *)r->body.data, r->body.len, msg, sizeof msg))
        snprintf(detail, sizeof detail, " (%s)", msg);
    zf_http_status_text(r, text, sizeof text);
    if (r->status == 404 && (listing || strstr(msg, "bucket does not exist")))
        return zf_fail(err, ZF_ERR_IO, "%s: bucket \"%s\" does not exist%s", what, g->bucket,
                       detail);
    if (r->status == 404 && !missing_is_error)
        return ZF_ERR_NOT_FOUND;
    if (r->status == 401 || r->status == 403)
        return zf_fail(err, ZF_ERR_ACCESS, "%s: %s%s with %s", what, text, detail, g->creds);
    return zf_fail(err, ZF_ERR_IO, "%s: %s%s", what, text, detail);
}

/* One request to url (freed here) with the store's authorization; rq's what, url and headers
 * are filled in here. A service account's token refused with a 401 (revoked, or a clock ahead of
 * the server's) is fetched again, once. The answer's etag becomes the generation
 * (x-goog-generation), "" when it is not sent. */
static zf_status perform(gcs_store *g, char *url, const char *what, zf_http_request rq,
                         zf_http_response *r, zf_err *err)
{
    zf_status st = ZF_OK;
    for (int attempt = 0; attempt < 2; attempt++) {
        char *auth = NULL;
        if ((st = auth_header(g, &auth, err)) != ZF_OK)
            break;
        const char *hdrs[] = {auth, NULL};
        rq.url = url;
        rq.what = what;
        rq.headers = auth ? hdrs : NULL;
        st = zf_http_perform(g->http, &g->base, &rq, r, err);
        bool stale = st == ZF_OK && r->status == 401 && g->key.client_email && attempt == 0;
        if (stale) {
            pthread_mutex_lock(&g->mu); /* unless another thread fetched a new one meanwhile */
            if (g->token && strcmp(auth + strlen("Authorization: Bearer "), g->token) == 0)
                g->refresh_at.tv_sec = 0;
            pthread_mutex_unlock(&g->mu);
            zf_http_response_free(r);
        }
        wipe_free(auth);
        if (!stale)
            break;
    }
    free(url);
    if (st == ZF_OK)
        snprintf(r->etag, sizeof r->etag, "%s", r->generation);
    return st;
}

/* {api}/storage/v1/b/BUCKET/o/NAME + suffix ("?alt=media", ...). */
static char *object_url(const gcs_store *g, const char *key, const char *suffix)
{
    char *fk = full_key(g, key), *enc = NULL, *url = NULL;
    if (fk)
        enc = zf_url_encode(fk, strlen(fk), false);
    if (enc && asprintf(&url, "%s/storage/v1/b/%s/o/%s%s", g->api, g->bucket, enc, suffix) < 0)
        url = NULL;
    free(fk);
    free(enc);
    return url;
}

static zf_status gcs_range_request(zf_store *s, const char *key, zf_http_kind kind,
                                   uint64_t offset, uint64_t len, zf_http_response *r,
                                   zf_err *err)
{
    gcs_store *g = (gcs_store *)s;
    zf_http_request rq = {.kind = kind, .offset = offset, .len = len};
    if (kind == ZF_HTTP_GET) /* len: the bound of the body (store_impl.h) */
        rq.len = 0, rq.max_body = len;
    char *url = object_url(g, key, "?alt=media");
    if (!url)
        return ZF_ERR_NOMEM;
    zf_status st = perform(g, url, key, rq, r, err);
    if (st == ZF_OK && r->status != 416 &&
        (st = answer_status(g, key, r, false, false, err)) != ZF_OK)
        zf_http_response_free(r);
    return st;
}

/* RFC 3339 "2024-05-01T12:34:56.789Z" (GCS's "updated"), UTC; zero when it is not that. */
static struct timespec parse_time(const char *s)
{
    struct tm tm = {0};
    int ns_digits = 0;
    long frac = 0;
    char z = 0;
    if (s && sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                    &tm.tm_hour, &tm.tm_min, &tm.tm_sec) == 6) {
        const char *p = s + 19;
        if (*p == '.')
            for (p++; *p >= '0' && *p <= '9'; p++, ns_digits++)
                if (ns_digits < 9)
                    frac = frac * 10 + (*p - '0');
        z = *p;
        for (; ns_digits < 9; ns_digits++)
            frac *= 10;
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        time_t t = timegm(&tm);
        if (z == 'Z' && t > 0)
            return (struct timespec){.tv_sec = t, .tv_nsec = frac};
    }
    return (struct timespec){0};
}

/* objects.get (metadata): the size, generation and update time of key. */
static zf_status gcs_stat_v(zf_store *s, const char *key, zf_store_version *ver, zf_err *err)
{
    gcs_store *g = (gcs_store *)s;
    memset(ver, 0, sizeof *ver);
    char *url = object_url(g, key, "");
    if (!url)
        return ZF_ERR_NOMEM;
    zf_http_response r;
    zf_http_request rq = {.kind = ZF_HTTP_GET, .max_body = MAX_META};
    zf_status st = perform(g, url, key, rq, &r, err);
    if (st != ZF_OK)
        return st;
    if ((st = answer_status(g, key, &r, false, false, err)) != ZF_OK) {
        zf_http_response_free(&r);
        return st;
    }
    yajl_val doc = NULL;
    st = zf_json_parse(key, (const char *)r.body.data, r.body.len, &doc, err);
    zf_http_response_free(&r);
    if (st != ZF_OK)
        return st == ZF_ERR_NOMEM ? st : zf_fail(err, ZF_ERR_IO, "%s: object metadata is not "
                                                                "JSON", key);
    yajl_val size = zf_json_get(doc, "size"), gen = zf_json_get(doc, "generation");
    yajl_val upd = zf_json_get(doc, "updated");
    /* the JSON API writes 64-bit numbers as strings */
    char *end = NULL;
    const char *sz = size && YAJL_IS_STRING(size) ? size->u.string : NULL;
    unsigned long long n = sz && *sz >= '0' && *sz <= '9' ? strtoull(sz, &end, 10) : 0;
    uint64_t num;
    if (sz && end && !*end) {
        ver->size = n;
        ver->has_size = true;
    } else if (size && zf_json_uint64(size, &num)) {
        ver->size = num;
        ver->has_size = true;
    }
    if (gen && YAJL_IS_STRING(gen) && strspn(gen->u.string, "0123456789") ==
                                          strlen(gen->u.string))
        snprintf(ver->etag, sizeof ver->etag, "%s", gen->u.string);
    else if (gen && YAJL_IS_NUMBER(gen) && zf_json_uint64(gen, &num))
        snprintf(ver->etag, sizeof ver->etag, "%" PRIu64, num);
    ver->mtime = parse_time(upd && YAJL_IS_STRING(upd) ? upd->u.string : NULL);
    yajl_tree_free(doc);
    return ver->has_size ? ZF_OK
                         : zf_fail(err, ZF_ERR_IO, "%s: object metadata without a size", key);
}

ZF_HTTP_LIKE_READS(gcs, gcs_range_request, gcs_stat_v)

/* ---- writes ---------------------------------------------------------------------------------- */

/* The ifGenerationMatch parameter ("&ifGenerationMatch=G" after sep) of a conditional write: the
 * generation read, 0 for a key read as absent (base NULL); "" when unconditional or when the
 * version read has no generation (cannot be checked: sent unconditionally, as S3 does). */
static void condition(char *buf, size_t n, char sep, bool conditional,
                      const zf_store_version *base)
{
    buf[0] = '\0';
    if (conditional && !base)
        snprintf(buf, n, "%cifGenerationMatch=0", sep);
    else if (conditional && base->etag[0] &&
             strspn(base->etag, "0123456789") == strlen(base->etag) && strlen(base->etag) < 24)
        snprintf(buf, n, "%cifGenerationMatch=%.24s", sep, base->etag);
}

static zf_status write_answer(gcs_store *g, const char *key, zf_status st, zf_http_response *r,
                              bool conditional, bool erase, zf_err *err)
{
    if (st != ZF_OK)
        return st;
    if (r->status == 412 && conditional) {
        zf_http_response_free(r);
        return zf_fail(err, ZF_ERR_CONFLICT, "%s: changed by another writer since it was read",
                       key);
    }
    st = answer_status(g, key, r, false, !erase, err);
    zf_http_response_free(r);
    if (erase && st == ZF_ERR_NOT_FOUND) /* gone already */
        return conditional ? zf_fail(err, ZF_ERR_CONFLICT, "%s: removed by another writer", key)
                           : ZF_OK;
    return st;
}

static zf_status gcs_upload(gcs_store *g, const char *key, const uint8_t *data, size_t len,
                            bool conditional, const zf_store_version *base, zf_err *err)
{
    char cond[64], *url = NULL;
    condition(cond, sizeof cond, '&', conditional, base);
    char *fk = full_key(g, key), *enc = fk ? zf_url_encode(fk, strlen(fk), false) : NULL;
    if (enc && asprintf(&url, "%s/upload/storage/v1/b/%s/o?uploadType=media&name=%s%s", g->api,
                        g->bucket, enc, cond) < 0)
        url = NULL;
    free(fk);
    free(enc);
    if (!url)
        return ZF_ERR_NOMEM;
    zf_http_request rq = {.kind = ZF_HTTP_POST, .body = data, .body_len = len,
                          .max_body = MAX_META};
    zf_http_response r;
    zf_status st = perform(g, url, key, rq, &r, err);
    return write_answer(g, key, st, &r, cond[0] != '\0', false, err);
}

static zf_status gcs_delete(gcs_store *g, const char *key, bool conditional,
                            const zf_store_version *base, zf_err *err)
{
    char cond[64];
    condition(cond, sizeof cond, '?', conditional, base);
    if (conditional && !base) /* a key read as absent: nothing to delete */
        return ZF_OK;
    char *url = object_url(g, key, cond);
    if (!url)
        return ZF_ERR_NOMEM;
    zf_http_request rq = {.kind = ZF_HTTP_DELETE};
    zf_http_response r;
    zf_status st = perform(g, url, key, rq, &r, err);
    return write_answer(g, key, st, &r, cond[0] != '\0', true, err);
}

static zf_status gcs_set(zf_store *s, const char *key, const uint8_t *data, size_t len,
                         zf_err *err)
{
    return gcs_upload((gcs_store *)s, key, data, len, false, NULL, err);
}

static zf_status gcs_set_cond(zf_store *s, const char *key, const uint8_t *data, size_t len,
                              const zf_store_cond *c, zf_err *err)
{
    return gcs_upload((gcs_store *)s, key, data, len, c && c->if_version, c ? c->base : NULL,
                      err);
}

static zf_status gcs_erase(zf_store *s, const char *key, zf_err *err)
{
    return gcs_delete((gcs_store *)s, key, false, NULL, err);
}

static zf_status gcs_erase_if(zf_store *s, const char *key, const zf_store_version *base,
                              zf_err *err)
{
    return gcs_delete((gcs_store *)s, key, true, base, err);
}

/* ---- listing --------------------------------------------------------------------------------- */

/* One page of objects.list below list_prefix with delimiter "/" (zf_list_page_fn). */
static zf_status gcs_list_page(void *ctx, const char *what, const char *list_prefix,
                               const char *enc_prefix, const char *enc_token,
                               zf_store_listing *l, size_t *cap, size_t *n_raw, char **next,
                               zf_err *err)
{
    gcs_store *g = ctx;
    char *url = NULL, max[32] = "";
    if (zf_gcs_list_max_results)
        snprintf(max, sizeof max, "&maxResults=%u", zf_gcs_list_max_results);
    if (asprintf(&url, "%s/storage/v1/b/%s/o?delimiter=%%2F&prefix=%s%s%s%s"
                       "&fields=items(name),prefixes,nextPageToken",
                 g->api, g->bucket, enc_prefix, max, enc_token ? "&pageToken=" : "",
                 enc_token ? enc_token : "") < 0)
        return ZF_ERR_NOMEM;
    zf_http_request rq = {.kind = ZF_HTTP_GET, .max_body = ZF_HTTP_MAX_LISTING};
    zf_http_response r;
    zf_status st;
    if ((st = perform(g, url, what, rq, &r, err)) != ZF_OK)
        return st;
    if ((st = answer_status(g, what, &r, true, false, err)) == ZF_OK &&
        (st = zf_gcs_list_parse((const char *)r.body.data, r.body.len, list_prefix, l, cap,
                                n_raw, next, err)) == ZF_ERR_IO)
        zf_err_prefix(err, "%s: listing", what);
    zf_http_response_free(&r);
    return st;
}

static zf_status gcs_list_dir(zf_store *s, const char *prefix, zf_store_listing *out,
                              zf_err *err)
{
    return zf_list_pages(prefix[0] ? prefix : "(root)", full_key((gcs_store *)s, prefix),
                         "page token", gcs_list_page, s, out, err);
}

/* ---- opening --------------------------------------------------------------------------------- */

static void gcs_destroy(zf_store *s)
{
    gcs_store *g = (gcs_store *)s;
    zf_http_destroy(g->http);
    zf_http_destroy(g->token_http);
    pthread_mutex_destroy(&g->mu);
    wipe_free(g->token);
    zf_gcs_key_free(&g->key);
    free(g->api);
    free(g->bucket);
    free(g->prefix);
    free(g->base.location);
    free(g->base.url);
    free(g);
}

static const zf_store_ops gcs_ops = {
    .scheme = "gs",
    .get = gcs_get,
    .get_partial = gcs_get_partial,
    .get_suffix = gcs_get_suffix,
    .stat = gcs_stat,
    .list_dir = gcs_list_dir,
    .destroy = gcs_destroy,
    .set = gcs_set,
    .set_cond = gcs_set_cond,
    .erase = gcs_erase,
    .erase_if = gcs_erase_if,
    .remove_dir = NULL, /* no directories: the dispatcher answers ZF_OK */
    .read_versioned = gcs_read_versioned,
};

bool zf_store_gcs_url(const char *url)
{
    return strncmp(url, "gs://", 5) == 0 ||
           strncmp(url, "https://storage.googleapis.com/", 31) == 0;
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* GCS bucket names (https://cloud.google.com/storage/docs/buckets#naming): 3 to 63 characters of
 * a-z 0-9 - _ . (222 with dots, 63 per dot-separated part), beginning and ending with a letter or
 * digit. */
static bool bucket_name_ok(const char *b)
{
    size_t n = strlen(b), part = 0;
    bool dots = strchr(b, '.') != NULL;
    if (n < 3 || n > (dots ? 222u : 63u))
        return false;
    for (const char *c = b; *c; c++) {
        bool alnum = (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9');
        if (!alnum && !strchr("-_.", *c))
            return false;
        part = *c == '.' ? 0 : part + 1;
        if (part > 63)
            return false;
    }
    bool first = (b[0] >= 'a' && b[0] <= 'z') || (b[0] >= '0' && b[0] <= '9');
    bool last = (b[n - 1] >= 'a' && b[n - 1] <= 'z') || (b[n - 1] >= '0' && b[n - 1] <= '9');
    return first && last && !strstr(b, "..");
}

/* Bucket, prefix and API endpoint of url. */
static zf_status configure(gcs_store *g, const char *url, const zf_store_options *opts,
                           zf_err *err)
{
    const char *b = strncmp(url, "gs://", 5) == 0 ? url + 5 : url + 31;
    size_t bl = strcspn(b, "/?#");
    if (bl == 0)
        return zf_fail(err, ZF_ERR_INVALID, "%s: no bucket (expected gs://BUCKET/PREFIX)", url);
    if (!(g->bucket = strndup(b, bl)))
        return ZF_ERR_NOMEM;
    if (!bucket_name_ok(g->bucket))
        return zf_fail(err, ZF_ERR_INVALID,
                       "%s: \"%s\" is not a bucket name (3 to 63 characters of a-z, 0-9, '-', "
                       "'_' and '.')", url, g->bucket);
    const char *p = b + bl;
    while (*p == '/')
        p++;
    if (!(g->prefix = strdup(p)))
        return ZF_ERR_NOMEM;
    size_t pl = strlen(g->prefix);
    while (pl && g->prefix[pl - 1] == '/')
        g->prefix[--pl] = '\0';
    if (strpbrk(g->prefix, "?#") || (pl && !zf_key_is_valid(g->prefix)))
        return zf_fail(err, ZF_ERR_INVALID, "%s: invalid prefix \"%s\"", url, g->prefix);

    const char *ep = opts->endpoint && *opts->endpoint ? opts->endpoint : DEFAULT_API;
    const char *host = strncmp(ep, "http://", 7) == 0    ? ep + 7
                       : strncmp(ep, "https://", 8) == 0 ? ep + 8
                                                         : NULL;
    if (host && memchr(host, '@', strcspn(host, "/")))
        return zf_fail(err, ZF_ERR_INVALID,
                       "endpoint: a user or password in the URL is not used (GCS credentials come "
                       "from -o credentials, $GOOGLE_OAUTH_ACCESS_TOKEN or "
                       "$GOOGLE_APPLICATION_CREDENTIALS)");
    if (!host || !*host || *host == '/' || strpbrk(ep, "?# \t"))
        return zf_fail(err, ZF_ERR_INVALID,
                       "endpoint \"%s\": expected http://HOST[:PORT] or https://...", ep);
    size_t el = strlen(ep);
    while (el && ep[el - 1] == '/')
        el--;
    if (!(g->api = strndup(ep, el)))
        return ZF_ERR_NOMEM;
    if (asprintf(&g->base.location, "%s/%s/%s", g->api, g->bucket, g->prefix) < 0) {
        g->base.location = NULL;
        return ZF_ERR_NOMEM;
    }
    return ZF_OK;
}

/* HMAC keys: the S3 store at s3://BUCKET/PREFIX on the XML API's endpoint, region "auto". Read
 * only: the S3 store's conditional writes send If-Match / If-None-Match, which the XML API
 * honours only for reads (its write preconditions are x-goog-if-generation-match), so a write
 * could silently undo another writer's: -o rw is refused. */
static zf_status open_hmac(const char *url, const zf_store_options *opts, zf_store **out,
                           zf_err *err)
{
    if (opts->writable)
        return zf_fail(err, ZF_ERR_UNSUPPORTED,
                       "%s: HMAC keys (aws_access_key_id) reach GCS through its XML API, whose "
                       "writes would not be conditional: mount without -o rw, or write with an "
                       "OAuth token or a service-account key", url);
    gcs_store tmp = {0};
    zf_status st = configure(&tmp, url, opts, err);
    char *s3url = NULL;
    if (st == ZF_OK && asprintf(&s3url, "s3://%s/%s", tmp.bucket, tmp.prefix) < 0) {
        s3url = NULL;
        st = ZF_ERR_NOMEM;
    }
    if (st == ZF_OK) {
        zf_store_options o = *opts;
        o.endpoint = tmp.api;
        o.region = "auto";
        o.profile = NULL;
        st = zf_store_s3_open(s3url, &o, out, err);
        char *u = st == ZF_OK ? strdup(url) : NULL;
        if (u) { /* messages name what the user named */
            free((*out)->url);
            (*out)->url = u;
        }
    }
    free(s3url);
    free(tmp.api);
    free(tmp.bucket);
    free(tmp.prefix);
    free(tmp.base.location);
    return st;
}

/* The credential of the store, the first that applies: the credentials file's token or key,
 * $GOOGLE_OAUTH_ACCESS_TOKEN, $GOOGLE_APPLICATION_CREDENTIALS, none; g->creds names it. */
static zf_status set_credentials(gcs_store *g, const zf_store_options *opts, zf_err *err)
{
    const zf_credentials *cr = opts->credentials;
    const char *token = NULL, *key_path = NULL, *from = NULL;
    if (opts->anonymous)
        cr = NULL, from = "-o anonymous";
    if (cr && cr->google_oauth_access_token)
        token = cr->google_oauth_access_token, from = "-o credentials";
    else if (cr && cr->google_application_credentials)
        key_path = cr->google_application_credentials, from = "-o credentials";
    else if (!opts->anonymous && (token = env("GOOGLE_OAUTH_ACCESS_TOKEN")))
        from = "$GOOGLE_OAUTH_ACCESS_TOKEN";
    else if (!opts->anonymous && (key_path = env("GOOGLE_APPLICATION_CREDENTIALS")))
        from = "$GOOGLE_APPLICATION_CREDENTIALS";
    if (token) {
        snprintf(g->creds, sizeof g->creds, "the OAuth access token of %s", from);
        for (const char *c = token; *c; c++)
            if (*c <= 0x20 || *c > 0x7e) /* it goes into a header line */
                return zf_fail(err, ZF_ERR_INVALID, "the OAuth access token of %s has a space "
                                                    "or control character", from);
        return (g->token = strdup(token)) ? ZF_OK : ZF_ERR_NOMEM;
    }
    if (key_path) {
        zf_status st = zf_gcs_key_load(key_path, &g->key, err);
        if (st != ZF_OK) {
            zf_err_prefix(err, "service-account key of %s", from);
            return st;
        }
        snprintf(g->creds, sizeof g->creds, "service account %s (key %s of %s)",
                 g->key.client_email, key_path, from);
        zf_http_config tc = {.opts = opts};
        return zf_http_create(&tc, &g->token_http, err);
    }
    snprintf(g->creds, sizeof g->creds, "no credentials (%s)",
             from ? from : "anonymous: none found");
    return ZF_OK;
}

zf_status zf_store_gcs_open(const char *url, const zf_store_options *opts, zf_store **out,
                            zf_err *err)
{
    static const zf_store_options defaults = {0};
    if (!opts)
        opts = &defaults;
    if (!zf_store_gcs_url(url))
        return zf_fail(err, ZF_ERR_INVALID, "%s: not a gs:// URL", url);
    const zf_credentials *cr = opts->anonymous ? NULL : opts->credentials;
    if (cr && cr->aws_access_key_id && !cr->google_oauth_access_token &&
        !cr->google_application_credentials)
        return open_hmac(url, opts, out, err);

    gcs_store *g = calloc(1, sizeof *g);
    if (!g || !(g->base.url = strdup(url))) {
        free(g);
        return ZF_ERR_NOMEM;
    }
    pthread_mutex_init(&g->mu, NULL);
    g->base.ops = &gcs_ops;
    g->base.remote = true;
    g->scope = opts->writable ? SCOPE_RW : SCOPE_RO;
    zf_status st = configure(g, url, opts, err);
    if (st == ZF_OK)
        st = set_credentials(g, opts, err);
    zf_http_config cfg = {.opts = opts, .own_auth = true};
    if (st == ZF_OK)
        st = zf_http_create(&cfg, &g->http, err);
    if (st != ZF_OK) {
        gcs_destroy(&g->base);
        return st;
    }
    zf_log(ZF_LOG_INFO, "%s: %s, requests with %s", url, g->api, g->creds);
    *out = &g->base;
    return ZF_OK;
}
