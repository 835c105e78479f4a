/* store_http.c — the HTTP(S) store (Zarr v3 "Stores": any web server; keys are URL paths below a
 * base URL), on the shared transport of http_transport.c.
 *
 * get = GET, get_partial = GET with "Range: bytes=a-b", get_suffix = "Range: bytes=-n", stat =
 * HEAD, list_dir = the server's HTML index page of base/prefix/. For values, 404, 410 and 403
 * (servers hide absence behind it) are "not found", and so is a key the server redirects to
 * "key/" (a directory is not a value). For listings, 404 is "not found" but 403 is
 * ZF_ERR_UNSUPPORTED: nginx and Apache answer 403 for an existing directory they do not index. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "store_impl.h"

typedef struct http_store {
    zf_store base;
    zf_http *http;
    char *base_url; /* without trailing '/' */
} http_store;

/* A final answer that is not 2xx (416 aside, which the callers handle). */
static zf_status answer_status(const char *key, const zf_http_response *r, zf_err *err)
{
    if (r->status == 404 || r->status == 410 || r->status == 403 || r->dir_redirect)
        return ZF_ERR_NOT_FOUND;
    if (r->status >= 200 && r->status < 300)
        return ZF_OK;
    char text[96];
    zf_http_status_text(r, text, sizeof text);
    if (r->status == 401)
        return zf_fail(err, ZF_ERR_IO, "%s: %s: the server wants credentials that it was not "
                       "given or refused (-o credentials=FILE, -o netrc)", key, text);
    return zf_fail(err, ZF_ERR_IO, "%s: %s", key, text);
}

static zf_status request(http_store *hs, const char *key, zf_http_kind kind, uint64_t offset,
                         uint64_t len, zf_http_response *r, zf_err *err)
{
    char *url = zf_url_join_key(hs->base_url, key, false);
    if (!url)
        return ZF_ERR_NOMEM;
    zf_http_request rq = {.url = url, .what = key, .kind = kind, .offset = offset, .len = len};
    if (kind == ZF_HTTP_GET) /* len: the bound of the body (store_impl.h) */
        rq.len = 0, rq.max_body = len;
    zf_status st = zf_http_perform(hs->http, &hs->base, &rq, r, err);
    free(url);
    if (st == ZF_OK && r->status != 416 && (st = answer_status(key, r, err)) != ZF_OK)
        zf_http_response_free(r);
    return st;
}

/* HEAD: the value's version (size, Last-Modified, ETag). */
static zf_status http_stat_v(zf_store *s, const char *key, zf_store_version *ver, zf_err *err)
{
    http_store *hs = (http_store *)s;
    zf_http_response r;
    zf_status st = request(hs, key, ZF_HTTP_HEAD, 0, 0, &r, err);
    if (st != ZF_OK)
        return st;
    if (r.status == 416) {
        zf_http_response_free(&r);
        return zf_fail(err, ZF_ERR_IO, "%s: 416 to a HEAD request", key);
    }
    zf_http_version(&r, ver);
    bool known = r.has_total;
    uint64_t total = r.total;
    zf_http_response_free(&r);
    if (!known) { /* no Content-Length on HEAD: ask for the first byte, whose range tells */
        st = request(hs, key, ZF_HTTP_RANGE, 0, 1, &r, err);
        if (st != ZF_OK)
            return st;
        known = r.has_total;
        total = r.status == 416 ? 0 : r.total;
        if (r.status == 416)
            known = true;
        zf_http_response_free(&r);
        if (!known)
            return zf_fail(err, ZF_ERR_IO, "%s: the server does not tell the size", key);
    }
    ver->size = total;
    ver->has_size = true;
    return ZF_OK;
}


static zf_status http_range_request(zf_store *s, const char *key, zf_http_kind kind,
                                   uint64_t offset, uint64_t len, zf_http_response *r,
                                   zf_err *err)
{
    return request((http_store *)s, key, kind, offset, len, r, err);
}

ZF_HTTP_LIKE_READS(http, http_range_request, http_stat_v)

static zf_status http_list_dir(zf_store *s, const char *prefix, zf_store_listing *out,
                               zf_err *err)
{
    http_store *hs = (http_store *)s;
    char *url = zf_url_join_key(hs->base_url, prefix, true);
    if (!url)
        return ZF_ERR_NOMEM;
    const char *what = prefix[0] ? prefix : "(root)";
    zf_http_request rq = {
        .url = url, .what = what, .kind = ZF_HTTP_GET, .max_body = ZF_HTTP_MAX_LISTING};
    zf_http_response r;
    zf_status st = zf_http_perform(hs->http, s, &rq, &r, err);
    free(url);
    if (st != ZF_OK)
        return st;
    if (r.status == 403) /* an existing directory without an index page (nginx autoindex off,
                            Apache -Indexes); a missing one is 404 */
        st = zf_fail(err, ZF_ERR_UNSUPPORTED,
                     "%s: the server refuses to list it (403 Forbidden): the children of a "
                     "prefix cannot be listed", what);
    else if ((st = answer_status(what, &r, err)) == ZF_OK && r.status == 416)
        st = zf_fail(err, ZF_ERR_IO, "%s: 416 to a request without a range", what);
    if (st == ZF_OK) {
        const char *ct = r.content_type;
        if (strncasecmp(ct, "text/html", 9) != 0 && strncasecmp(ct, "application/xhtml", 17) != 0)
            st = zf_fail(err, ZF_ERR_UNSUPPORTED,
                         "%s: the server answers %s, not an HTML index: the children of a prefix "
                         "cannot be listed", what, ct[0] ? ct : "without a content type");
        else if ((st = zf_html_index_parse((const char *)r.body.data, r.body.len, out, err)) ==
                 ZF_ERR_UNSUPPORTED)
            zf_err_prefix(err, "%s", what);
    }
    zf_http_response_free(&r);
    return st;
}

static void http_destroy(zf_store *s)
{
    http_store *hs = (http_store *)s;
    zf_http_destroy(hs->http);
    free(hs->base_url);
    free(hs->base.location);
    free(hs->base.url);
    free(hs);
}

static const zf_store_ops http_ops = {
    .scheme = "http",
    .get = http_get,
    .get_partial = http_get_partial,
    .get_suffix = http_get_suffix,
    .stat = http_stat,
    .list_dir = http_list_dir,
    .destroy = http_destroy,
    /* read-only: a plain web server has no agreed way to store or delete (the dispatcher
     * answers ZF_ERR_READONLY) */
    .set = NULL,
    .erase = NULL,
    .remove_dir = NULL,
    .read_versioned = http_read_versioned,
};

zf_status zf_store_http_open(const char *url, const zf_store_options *opts, zf_store **out,
                             zf_err *err)
{
    static const zf_store_options defaults = {0};
    if (!opts)
        opts = &defaults;
    const char *rest = strncmp(url, "http://", 7) == 0    ? url + 7
                       : strncmp(url, "https://", 8) == 0 ? url + 8
                                                          : NULL;
    char *shown = zf_url_redact(url);
    if (!shown)
        return ZF_ERR_NOMEM;
    zf_status st = ZF_OK;
    if (!rest)
        st = zf_fail(err, ZF_ERR_INVALID, "%s: not an http:// or https:// URL", shown);
    else if (strcspn(rest, "/?#") == 0)
        st = zf_fail(err, ZF_ERR_INVALID, "%s: no host in the URL", shown);
    else if (strpbrk(rest, "?#"))
        st = zf_fail(err, ZF_ERR_INVALID, "%s: a store URL cannot have a query or fragment",
                     shown);
    else if (strpbrk(rest, " \t\r\n"))
        st = zf_fail(err, ZF_ERR_INVALID, "%s: blanks in the URL (write them as %%20)", shown);
    if (st != ZF_OK) {
        free(shown);
        return st;
    }
    /* The credentials file's user and password or token, for the origin it names; then the
     * URL's userinfo is not used (libcurl would prefer it), nor .netrc */
    const zf_credentials *cr = opts->credentials;
    bool file_creds = cr && (cr->http_user || cr->bearer_token) && opts->credentials_url &&
                      zf_url_same_origin(url, opts->credentials_url);
    http_store *hs = calloc(1, sizeof *hs);
    if (!hs || !(hs->base_url = file_creds ? zf_url_strip_userinfo(url) : strdup(url))) {
        free(hs);
        free(shown);
        return ZF_ERR_NOMEM;
    }
    size_t n = strlen(hs->base_url), host_end = (size_t)(rest - url) + strcspn(rest, "/");
    while (n > host_end && hs->base_url[n - 1] == '/')
        hs->base_url[--n] = '\0';
    hs->base.ops = &http_ops;
    hs->base.url = shown;
    hs->base.remote = true;
    if (!(hs->base.location = zf_url_redact(hs->base_url))) {
        http_destroy(&hs->base);
        return ZF_ERR_NOMEM;
    }
    zf_http_config cfg = {.opts = opts, .netrc_file = file_creds ? NULL : opts->netrc};
    if (file_creds) {
        cfg.http_user = cr->http_user;
        cfg.http_password = cr->http_password;
        cfg.bearer_token = cr->bearer_token;
    }
    if ((st = zf_http_create(&cfg, &hs->http, err)) != ZF_OK) {
        http_destroy(&hs->base);
        return st;
    }
    *out = &hs->base;
    return ZF_OK;
}
