/* store_s3.c — the S3 store at s3://bucket/prefix, on the transport of http_transport.c.
 *
 * Requests are signed with AWS Signature Version 4 by libcurl (CURLOPT_AWS_SIGV4,
 * "aws:amz:REGION:s3"), with "x-amz-content-sha256: UNSIGNED-PAYLOAD" (S3 and s3rver require the
 * header) and x-amz-security-token for temporary credentials; -o anonymous sends them unsigned.
 * A custom endpoint (-o endpoint=http://127.0.0.1:4568) is addressed path-style
 * (endpoint/bucket/key), AWS virtual-host style (https://bucket.s3.REGION.amazonaws.com/key;
 * path-style on s3.REGION.amazonaws.com for bucket names with dots, which no certificate
 * covers).
 *
 * libcurl 7.88 signs the path and the query string exactly as they stand in the URL, so both are
 * built in SigV4's canonical form here: every byte but the RFC 3986 unreserved ones
 * percent-encoded (upper-case hex), query parameters sorted by name.
 *
 * Only 404 is "not found" (NoSuchBucket is an error); 403 is "access denied", an error, so that
 * bad credentials fail the mount instead of showing an empty hierarchy.
 *
 * Writes: set is one PUT of the whole value (signed as the reads are: libcurl takes the payload
 * hash from our x-amz-content-sha256 header, UNSIGNED-PAYLOAD, and signs the method it sends),
 * erase a DELETE (S3 answers 204 for absent keys too; a 404 is taken as "already gone"). S3 has
 * no directories: remove_dir is absent, which the dispatcher answers with ZF_OK. Anonymous stores
 * try like the others and report what the server says (a public bucket may allow writes). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_impl.h"

typedef struct s3_store {
    zf_store base;
    zf_http *http;
    char *base_url;  /* endpoint/bucket, or https://bucket.s3.REGION.amazonaws.com; no '/' after */
    bool path_style; /* base_url ends with the bucket, not a host */
    char *bucket, *prefix, *region; /* prefix: "" or "a/b" (no '/' at either end) */
    char creds[160];                /* where the credentials came from, for messages */
} s3_store;

/* prefix + "/" + key (either may be ""). */
static char *full_key(const s3_store *s3, const char *key)
{
    char *out;
    if (!s3->prefix[0])
        return strdup(key);
    if (!key[0])
        return strdup(s3->prefix);
    return asprintf(&out, "%s/%s", s3->prefix, key) < 0 ? NULL : out;
}

/* A final answer that is not 2xx (416 aside, which the callers handle). A 404 is "not found"
 * unless missing_is_error (a PUT, which makes the key: a 404 there is a failure). */
static zf_status answer_status(const s3_store *s3, const char *key, const zf_http_response *r,
                               bool missing_is_error, zf_err *err)
{
    if (r->status >= 200 && r->status < 300)
        return ZF_OK;
    char code[64] = "", msg[256] = "", text[96], detail[400] = "";
    if (zf_s3_error_parse((const char *)r->body.data, r->body.len, code, sizeof code, msg,
                          sizeof msg))
        snprintf(detail, sizeof detail, " (%s%s%s)", code, msg[0] ? ": " : "", msg);
    zf_http_status_text(r, text, sizeof text);
    if (r->status == 404 && strcmp(code, "NoSuchBucket") == 0)
        return zf_fail(err, ZF_ERR_IO, "%s: bucket \"%s\" does not exist%s", key, s3->bucket,
                       detail);
    if (r->status == 404 && !missing_is_error)
        return ZF_ERR_NOT_FOUND;
    if (r->bucket_region[0] && strcmp(r->bucket_region, s3->region) != 0)
        return zf_fail(err, ZF_ERR_IO,
                       "%s: %s: bucket \"%s\" is in region %s, not %s (mount with -o region=%s)",
                       key, text, s3->bucket, r->bucket_region, s3->region, r->bucket_region);
    if (r->status == 403)
        return zf_fail(err, ZF_ERR_IO, "%s: access denied, %s%s with %s", key, text, detail,
                       s3->creds);
    return zf_fail(err, ZF_ERR_IO, "%s: %s%s", key, text, detail);
}

/* One request for key (rq's url and what are filled in here), its answer checked with
 * answer_status (a 416 to a GET is left to its caller; a 404 to a PUT is an error). */
static zf_status request_rq(s3_store *s3, const char *key, zf_http_request rq,
                            zf_http_response *r, zf_err *err)
{
    char *fk = full_key(s3, key);
    char *url = fk ? zf_url_join_key(s3->base_url, fk, false) : NULL;
    free(fk);
    if (!url)
        return ZF_ERR_NOMEM;
    rq.url = url;
    rq.what = key;
    bool ranged = rq.kind == ZF_HTTP_RANGE || rq.kind == ZF_HTTP_SUFFIX || rq.kind == ZF_HTTP_GET;
    zf_status st = zf_http_perform(s3->http, &s3->base, &rq, r, err);
    free(url);
    if (st == ZF_OK && rq.condition && (r->status == 412 || r->status == 409)) {
        /* 412 Precondition Failed; 409 ConditionalRequestConflict: a concurrent write won */
        zf_http_response_free(r);
        return zf_fail(err, ZF_ERR_CONFLICT, "%s: changed by another writer since it was read",
                       key);
    }
    if (st == ZF_OK && (r->status != 416 || !ranged) &&
        (st = answer_status(s3, key, r, rq.kind == ZF_HTTP_PUT, err)) != ZF_OK)
        zf_http_response_free(r);
    return st;
}

static zf_status request(s3_store *s3, const char *key, zf_http_kind kind, uint64_t offset,
                         uint64_t len, zf_http_response *r, zf_err *err)
{
    zf_http_request rq = {.kind = kind, .offset = offset, .len = len};
    if (kind == ZF_HTTP_GET) /* len: the bound of the body (store_impl.h) */
        rq.len = 0, rq.max_body = len;
    return request_rq(s3, key, rq, r, err);
}

/* HEAD: the value's version (size, Last-Modified, ETag). */
static zf_status s3_stat_v(zf_store *s, const char *key, zf_store_version *ver, zf_err *err)
{
    zf_http_response r;
    zf_status st = request((s3_store *)s, key, ZF_HTTP_HEAD, 0, 0, &r, err);
    if (st != ZF_OK)
        return st;
    bool ok = r.status != 416 && r.has_total;
    zf_http_version(&r, ver);
    zf_http_response_free(&r);
    return ok ? ZF_OK : zf_fail(err, ZF_ERR_IO, "%s: HEAD answered without a size", key);
}


static zf_status s3_range_request(zf_store *s, const char *key, zf_http_kind kind,
                                   uint64_t offset, uint64_t len, zf_http_response *r,
                                   zf_err *err)
{
    return request((s3_store *)s, key, kind, offset, len, r, err);
}

ZF_HTTP_LIKE_READS(s3, s3_range_request, s3_stat_v)

/* A PUT (data) or DELETE; with conditional, only while the object is still the version base
 * (S3 conditional writes: If-Match with the ETag read; If-None-Match: * for a PUT of a key read as
 * absent, base NULL). A version without an ETag cannot be checked: sent unconditionally. */
static zf_status s3_write(zf_store *s, const char *key, zf_http_kind kind, const uint8_t *data,
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
    zf_status st = request_rq((s3_store *)s, key, rq, &r, err);
    if (st == ZF_OK)
        zf_http_response_free(&r);
    if (kind == ZF_HTTP_DELETE && st == ZF_ERR_NOT_FOUND) /* a 404 but NoSuchBucket: gone */
        return c ? zf_fail(err, ZF_ERR_CONFLICT, "%s: removed by another writer", key) : ZF_OK;
    return st;
}

static zf_status s3_set(zf_store *s, const char *key, const uint8_t *data, size_t len,
                        zf_err *err)
{
    return s3_write(s, key, ZF_HTTP_PUT, data, len, false, NULL, err);
}

/* No directories: c->within has nothing to check. */
static zf_status s3_set_cond(zf_store *s, const char *key, const uint8_t *data, size_t len,
                             const zf_store_cond *c, zf_err *err)
{
    return s3_write(s, key, ZF_HTTP_PUT, data, len, c && c->if_version, c ? c->base : NULL, err);
}

static zf_status s3_erase(zf_store *s, const char *key, zf_err *err)
{
    return s3_write(s, key, ZF_HTTP_DELETE, NULL, 0, false, NULL, err);
}

static zf_status s3_erase_if(zf_store *s, const char *key, const zf_store_version *base,
                             zf_err *err)
{
    return s3_write(s, key, ZF_HTTP_DELETE, NULL, 0, true, base, err);
}

unsigned zf_s3_list_max_keys;
size_t zf_list_max_entries = ZF_LIST_MAX_ENTRIES;

/* One page of ListObjectsV2 below list_prefix with delimiter "/" (zf_list_page_fn). */
static zf_status s3_list_page(void *ctx, const char *what, const char *list_prefix,
                              const char *enc_prefix, const char *enc_token,
                              zf_store_listing *l, size_t *cap, size_t *n_raw, char **next,
                              zf_err *err)
{
    s3_store *s3 = ctx;
    char *url = NULL;
    /* parameters in SigV4's canonical order: sorted by name */
    char max_keys[32] = "";
    if (zf_s3_list_max_keys)
        snprintf(max_keys, sizeof max_keys, "&max-keys=%u", zf_s3_list_max_keys);
    if (asprintf(&url, "%s%s?%s%s%sdelimiter=%%2F&list-type=2%s%s%s", s3->base_url,
                 s3->path_style ? "" : "/", enc_token ? "continuation-token=" : "",
                 enc_token ? enc_token : "", enc_token ? "&" : "", max_keys,
                 enc_prefix[0] ? "&prefix=" : "", enc_prefix) < 0)
        return ZF_ERR_NOMEM;
    zf_http_request rq = {
        .url = url, .what = what, .kind = ZF_HTTP_GET, .max_body = ZF_HTTP_MAX_LISTING};
    zf_http_response r;
    zf_status st = zf_http_perform(s3->http, &s3->base, &rq, &r, err);
    free(url);
    if (st != ZF_OK)
        return st;
    if ((st = answer_status(s3, what, &r, false, err)) == ZF_OK && r.status == 416)
        st = zf_fail(err, ZF_ERR_IO, "%s: 416 to a listing", what);
    if (st == ZF_OK && (st = zf_s3_list_parse((const char *)r.body.data, r.body.len,
                                              list_prefix, l, cap, n_raw, next, err)) ==
                           ZF_ERR_IO)
        zf_err_prefix(err, "%s", what);
    zf_http_response_free(&r);
    return st;
}

static zf_status s3_list_dir(zf_store *s, const char *prefix, zf_store_listing *out, zf_err *err)
{
    return zf_list_pages(prefix[0] ? prefix : "(root)", full_key((s3_store *)s, prefix),
                         "continuation token", s3_list_page, s, out, err);
}

static void s3_destroy(zf_store *s)
{
    s3_store *s3 = (s3_store *)s;
    zf_http_destroy(s3->http);
    free(s3->base_url);
    free(s3->bucket);
    free(s3->prefix);
    free(s3->region);
    free(s3->base.location);
    free(s3->base.url);
    free(s3);
}

static const zf_store_ops s3_ops = {
    .scheme = "s3",
    .get = s3_get,
    .get_partial = s3_get_partial,
    .get_suffix = s3_get_suffix,
    .stat = s3_stat,
    .list_dir = s3_list_dir,
    .destroy = s3_destroy,
    .set = s3_set,
    .set_cond = s3_set_cond,
    .erase = s3_erase,
    .erase_if = s3_erase_if,
    .remove_dir = NULL, /* no directories in S3: the dispatcher answers ZF_OK */
    .read_versioned = s3_read_versioned,
};

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static bool only(const char *s, const char *extra)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || strchr(extra, *s)))
            return false;
    return true;
}

/* Bucket, prefix, region and endpoint of the store; no credentials yet. */
static zf_status configure(s3_store *s3, const char *url, const zf_store_options *opts,
                           zf_err *err)
{
    const char *b = url + 5;
    size_t bl = strcspn(b, "/");
    if (bl == 0)
        return zf_fail(err, ZF_ERR_INVALID, "%s: no bucket (expected s3://BUCKET/PREFIX)", url);
    if (!(s3->bucket = strndup(b, bl)))
        return ZF_ERR_NOMEM;
    if (bl > 255 || !only(s3->bucket, "ABCDEFGHIJKLMNOPQRSTUVWXYZ.-_"))
        return zf_fail(err, ZF_ERR_INVALID, "%s: \"%s\" is not a bucket name", url, s3->bucket);
    const char *p = b + bl;
    while (*p == '/')
        p++;
    if (!(s3->prefix = strdup(p)))
        return ZF_ERR_NOMEM;
    size_t pl = strlen(s3->prefix);
    while (pl && s3->prefix[pl - 1] == '/')
        s3->prefix[--pl] = '\0';
    if (strpbrk(s3->prefix, "?#") || (pl && !zf_key_is_valid(s3->prefix)))
        return zf_fail(err, ZF_ERR_INVALID, "%s: invalid prefix \"%s\"", url, s3->prefix);

    const char *region = opts->region && *opts->region ? opts->region : env("AWS_REGION");
    if (!region)
        region = env("AWS_DEFAULT_REGION");
    char *cfg_region = region ? NULL : zf_aws_config_region(opts->profile);
    if (!region)
        region = cfg_region ? cfg_region : "us-east-1";
    s3->region = strdup(region);
    free(cfg_region);
    if (!s3->region)
        return ZF_ERR_NOMEM;
    if (!*s3->region || strlen(s3->region) > 64 || !only(s3->region, "-"))
        return zf_fail(err, ZF_ERR_INVALID, "region \"%s\": expected a name like eu-west-1",
                       s3->region);

    const char *ep = opts->endpoint && *opts->endpoint ? opts->endpoint
                                                        : env("AWS_ENDPOINT_URL_S3");
    if (!ep)
        ep = env("AWS_ENDPOINT_URL");
    int r;
    if (ep) {
        const char *host = strncmp(ep, "http://", 7) == 0    ? ep + 7
                           : strncmp(ep, "https://", 8) == 0 ? ep + 8
                                                             : NULL;
        if (host && memchr(host, '@', strcspn(host, "/"))) /* not shown: it may hold a secret */
            return zf_fail(err, ZF_ERR_INVALID,
                           "endpoint: a user or password in the URL is not used (S3 credentials "
                           "come from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or ~/.aws)");
        if (!host || !*host || *host == '/' || strpbrk(ep, "?# \t"))
            return zf_fail(err, ZF_ERR_INVALID,
                           "endpoint \"%s\": expected http://HOST[:PORT] or https://...", ep);
        size_t el = strlen(ep);
        while (el && ep[el - 1] == '/')
            el--;
        r = asprintf(&s3->base_url, "%.*s/%s", (int)el, ep, s3->bucket);
        s3->path_style = true;
    } else if (strchr(s3->bucket, '.')) {
        r = asprintf(&s3->base_url, "https://s3.%s.amazonaws.com/%s", s3->region, s3->bucket);
        s3->path_style = true;
    } else {
        r = asprintf(&s3->base_url, "https://%s.s3.%s.amazonaws.com", s3->bucket, s3->region);
    }
    if (r < 0) {
        s3->base_url = NULL;
        return ZF_ERR_NOMEM;
    }
    /* where the data lives, for the disk cache: the same bucket behind another endpoint is
     * another store */
    if (asprintf(&s3->base.location, "%s/%s", s3->base_url, s3->prefix) < 0) {
        s3->base.location = NULL;
        return ZF_ERR_NOMEM;
    }
    return ZF_OK;
}

zf_status zf_store_s3_open(const char *url, const zf_store_options *opts, zf_store **out,
                           zf_err *err)
{
    static const zf_store_options defaults = {0};
    if (!opts)
        opts = &defaults;
    if (strncmp(url, "s3://", 5) != 0)
        return zf_fail(err, ZF_ERR_INVALID, "%s: not an s3:// URL", url);
    s3_store *s3 = calloc(1, sizeof *s3);
    if (!s3 || !(s3->base.url = strdup(url))) {
        free(s3);
        return ZF_ERR_NOMEM;
    }
    s3->base.ops = &s3_ops;
    s3->base.remote = true;
    zf_status st = configure(s3, url, opts, err);
    zf_aws_credentials c = {0};
    const zf_credentials *cr = opts->credentials;
    if (st == ZF_OK && !opts->anonymous && cr && cr->aws_access_key_id) {
        /* -o credentials=FILE comes before the environment and the profiles */
        if (!(c.access_key = strdup(cr->aws_access_key_id)) ||
            !(c.secret_key = strdup(cr->aws_secret_access_key)) ||
            (cr->aws_session_token && !(c.session_token = strdup(cr->aws_session_token))))
            st = ZF_ERR_NOMEM;
        snprintf(c.source, sizeof c.source, "-o credentials");
    } else if (st == ZF_OK && !opts->anonymous) {
        st = zf_aws_credentials_load(opts->profile, &c, err);
        if (st == ZF_ERR_NOT_FOUND)
            st = ZF_ERR_INVALID; /* a missing option, not a missing store */
        if (st != ZF_OK)
            zf_err_prefix(err, "%s", url);
    }
    char sigv4[128];
    if (st == ZF_OK) {
        snprintf(sigv4, sizeof sigv4, "aws:amz:%s:s3", s3->region);
        if (opts->anonymous)
            snprintf(s3->creds, sizeof s3->creds, "no credentials (-o anonymous)");
        else
            snprintf(s3->creds, sizeof s3->creds, "the credentials of %s", c.source);
        zf_http_config cfg = {.opts = opts};
        if (!opts->anonymous) {
            cfg.sigv4 = sigv4;
            cfg.access_key = c.access_key;
            cfg.secret_key = c.secret_key;
            cfg.session_token = c.session_token;
        }
        st = zf_http_create(&cfg, &s3->http, err);
    }
    zf_aws_credentials_free(&c);
    if (st != ZF_OK) {
        s3_destroy(&s3->base);
        return st;
    }
    *out = &s3->base;
    return ZF_OK;
}
