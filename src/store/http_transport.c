/* http_transport.c — HTTP requests for the remote stores on libcurl: a bounded pool of easy
 * handles, retries with backoff, and the checks that a body is whole before anyone sees it.
 *
 * Pool: at most max_connections CURL easy handles, created on demand and handed out under a
 * mutex + condition variable (a caller waits while all are busy). A handle keeps its connection
 * alive between requests, so a handle is a connection; a CURLSH shares the DNS cache and TLS
 * sessions among them. Handles are configured once; a request sets only its URL, method,
 * headers and callbacks.
 *
 * A body is accepted only when it is complete: as long as its Content-Length, and for a 206 as
 * long as its Content-Range says and reaching as far as the range asked (unless the value ends
 * first). Anything shorter is a failure that is retried, never a short success. The response
 * headers of a request total at most ZF_HTTP_MAX_HEADERS.
 *
 * Redirects (at most MAX_REDIRECTS, to http and https only): libcurl follows them for unsigned
 * requests; signed requests (S3; Azure and GCS, own_auth) follow them in attempt(), and only
 * within their origin (scheme,
 * host, port), so that neither the signature nor the session token reach another server. The
 * user and password or bearer token of an unsigned store (-o credentials, .netrc) are libcurl's
 * own authentication (CURLOPT_USERNAME, CURLOPT_XOAUTH2_BEARER), never a header of ours: libcurl
 * sends them to the origin first asked only.
 *
 * Writes: a PUT sends its body from memory (CURLOPT_POSTFIELDS with CUSTOMREQUEST "PUT", so that
 * libcurl can send it again on a retry or a 307/308 redirect) with Content-Length and
 * Content-Type: application/octet-stream; a POST (GCS uploads, OAuth token requests) the same
 * way with libcurl's own method and the request's Content-Type; a DELETE has none. Neither waits for
 * "100 Continue": the Expect header libcurl adds is removed with an empty "Expect:", except
 * where that would break a signature: libcurl before 8.3.0 signs the removed header as an empty
 * one (curl issue #11664), so signed PUTs leave libcurl's own rule in place there (no Expect up
 * to 1 MiB of body, "Expect: 100-continue" beyond, which S3 answers). */
#include <curl/curl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "store_impl.h"
#include "zarrfs/mem.h"

#define ERR_BODY_MAX (64 * 1024)
#define MAX_REDIRECTS 5

struct zf_http {
    unsigned retries, max_handles;
    long timeout_ms, low_speed_s;
    bool insecure;
    bool drop_expect; /* send "Expect:" with PUTs (see above) */
    char *sigv4, *access_key, *secret_key, *token_header;
    bool own_redirects; /* follow redirects in attempt(), within the origin (signed requests) */
    char *http_user, *http_password, *bearer_token, *netrc_file; /* unsigned requests */
    CURLSH *share;
    pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    CURL **idle;
    unsigned n_idle, n_handles;
};

/* ---- global init, share locks ------------------------------------------------------------- */

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

static void global_init(void) { global_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

static void share_lock(CURL *c, curl_lock_data d, curl_lock_access a, void *ud)
{
    (void)c, (void)a;
    pthread_mutex_lock(&((zf_http *)ud)->share_mu[d]);
}

static void share_unlock(CURL *c, curl_lock_data d, void *ud)
{
    (void)c;
    pthread_mutex_unlock(&((zf_http *)ud)->share_mu[d]);
}

static void wipe_free(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

zf_status zf_http_create(const zf_http_config *cfg, zf_http **out, zf_err *err)
{
    pthread_once(&global_once, global_init);
    if (global_rc != CURLE_OK)
        return zf_fail(err, ZF_ERR_IO, "libcurl: %s", curl_easy_strerror(global_rc));
    const zf_store_options *o = cfg->opts;
    for (const char *t = cfg->session_token; t && *t; t++)
        if ((unsigned char)*t < 0x20 || *t == 0x7f) /* it becomes a header line */
            return zf_fail(err, ZF_ERR_INVALID, "the session token has control characters");
    zf_http *h = calloc(1, sizeof *h);
    if (!h)
        return ZF_ERR_NOMEM;
    h->retries = o->retries; /* as given: 0 is no retries (store.h) */
    h->max_handles = o->max_connections ? o->max_connections : ZF_STORE_DEFAULT_MAX_CONNECTIONS;
    double t = o->timeout > 0 ? o->timeout : ZF_STORE_DEFAULT_TIMEOUT;
    if (t > 86400)
        t = 86400;
    h->timeout_ms = (long)(t * 1000);
    if (h->timeout_ms < 1)
        h->timeout_ms = 1;
    /* A transfer that moves nothing for half the timeout (at most 15 s) is a stall: it ends as a
     * timeout and is retried on a new connection. */
    h->low_speed_s = (long)(t / 2 + 0.999);
    h->low_speed_s = h->low_speed_s < 1 ? 1 : h->low_speed_s > 15 ? 15 : h->low_speed_s;
    h->insecure = o->insecure;
    h->own_redirects = cfg->sigv4 || cfg->own_auth;
    h->drop_expect = !cfg->sigv4 || curl_version_info(CURLVERSION_NOW)->version_num >= 0x080300;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&h->share_mu[i], NULL);
    h->idle = calloc(h->max_handles, sizeof *h->idle);
    h->share = curl_share_init();
    bool ok = h->idle && h->share;
    if (ok && cfg->sigv4) {
        ok = (h->sigv4 = strdup(cfg->sigv4)) && (h->access_key = strdup(cfg->access_key)) &&
             (h->secret_key = strdup(cfg->secret_key));
        if (ok && cfg->session_token &&
            asprintf(&h->token_header, "x-amz-security-token: %s", cfg->session_token) < 0) {
            h->token_header = NULL;
            ok = false;
        }
    }
    if (ok && !cfg->sigv4) {
        ok = (!cfg->http_user || (h->http_user = strdup(cfg->http_user))) &&
             (!cfg->http_password || (h->http_password = strdup(cfg->http_password))) &&
             (!cfg->bearer_token || (h->bearer_token = strdup(cfg->bearer_token))) &&
             (!cfg->netrc_file || (h->netrc_file = strdup(cfg->netrc_file)));
    }
    if (ok) {
        curl_share_setopt(h->share, CURLSHOPT_LOCKFUNC, share_lock);
        curl_share_setopt(h->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
        curl_share_setopt(h->share, CURLSHOPT_USERDATA, h);
        curl_share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
        curl_share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    }
    if (!ok) {
        zf_http_destroy(h);
        return ZF_ERR_NOMEM;
    }
    *out = h;
    return ZF_OK;
}

void zf_http_destroy(zf_http *h)
{
    if (!h)
        return;
    /* every handle is idle: no request runs while a store is closed */
    for (unsigned i = 0; i < h->n_idle; i++)
        curl_easy_cleanup(h->idle[i]);
    if (h->share)
        curl_share_cleanup(h->share);
    free(h->idle);
    free(h->sigv4);
    wipe_free(h->access_key);
    wipe_free(h->secret_key);
    wipe_free(h->token_header);
    wipe_free(h->http_user);
    wipe_free(h->http_password);
    wipe_free(h->bearer_token);
    free(h->netrc_file);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&h->share_mu[i]);
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

/* ---- the handle pool ---------------------------------------------------------------------- */

static size_t on_header(char *buf, size_t size, size_t n, void *ud);
static size_t on_body(char *buf, size_t size, size_t n, void *ud);

static CURL *new_handle(zf_http *h)
{
    CURL *c = curl_easy_init();
    if (!c)
        return NULL;
    CURLcode rc = CURLE_OK;
#define SET(opt, val)                                                                        \
    do {                                                                                     \
        if (rc == CURLE_OK)                                                                  \
            rc = curl_easy_setopt(c, opt, val);                                              \
    } while (0)
    SET(CURLOPT_SHARE, h->share);
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_PROTOCOLS_STR, "http,https");
    SET(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    /* Signed requests follow redirects here (attempt()), within their origin only: libcurl
     * drops Authorization on a redirect to another host but sends our other headers
     * (x-amz-security-token) along. */
    SET(CURLOPT_FOLLOWLOCATION, h->own_redirects ? 0L : 1L);
    SET(CURLOPT_MAXREDIRS, (long)MAX_REDIRECTS);
    SET(CURLOPT_TIMEOUT_MS, h->timeout_ms);
    SET(CURLOPT_CONNECTTIMEOUT_MS, h->timeout_ms);
    SET(CURLOPT_LOW_SPEED_LIMIT, 1L);
    SET(CURLOPT_LOW_SPEED_TIME, h->low_speed_s);
    SET(CURLOPT_SSL_VERIFYPEER, h->insecure ? 0L : 1L);
    SET(CURLOPT_SSL_VERIFYHOST, h->insecure ? 0L : 2L);
    SET(CURLOPT_TCP_KEEPALIVE, 1L);
    SET(CURLOPT_BUFFERSIZE, 256L * 1024);
    SET(CURLOPT_USERAGENT, "zarrfs/" ZARRFS_VERSION);
    SET(CURLOPT_HEADERFUNCTION, on_header);
    SET(CURLOPT_WRITEFUNCTION, on_body);
    if (h->sigv4) {
        SET(CURLOPT_AWS_SIGV4, h->sigv4);
        SET(CURLOPT_USERNAME, h->access_key);
        SET(CURLOPT_PASSWORD, h->secret_key);
    }
    /* libcurl sends these only to the host, port and scheme of the URL asked for: a redirect
     * elsewhere goes without them (CURLOPT_UNRESTRICTED_AUTH stays off) */
    if (h->http_user) {
        SET(CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        SET(CURLOPT_USERNAME, h->http_user);
        SET(CURLOPT_PASSWORD, h->http_password);
    } else if (h->bearer_token) {
        SET(CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
        SET(CURLOPT_XOAUTH2_BEARER, h->bearer_token);
    }
    if (h->netrc_file) {
        SET(CURLOPT_NETRC, (long)CURL_NETRC_OPTIONAL);
        SET(CURLOPT_NETRC_FILE, h->netrc_file);
    }
#undef SET
    if (rc != CURLE_OK) {
        curl_easy_cleanup(c);
        return NULL;
    }
    return c;
}

static CURL *acquire(zf_http *h)
{
    pthread_mutex_lock(&h->mu);
    while (h->n_idle == 0 && h->n_handles >= h->max_handles)
        pthread_cond_wait(&h->cv, &h->mu);
    if (h->n_idle) {
        CURL *c = h->idle[--h->n_idle];
        pthread_mutex_unlock(&h->mu);
        return c;
    }
    h->n_handles++;
    pthread_mutex_unlock(&h->mu);
    CURL *c = new_handle(h);
    if (!c) {
        pthread_mutex_lock(&h->mu);
        h->n_handles--;
        pthread_cond_signal(&h->cv);
        pthread_mutex_unlock(&h->mu);
    }
    return c;
}

static void release(zf_http *h, CURL *c)
{
    pthread_mutex_lock(&h->mu);
    h->idle[h->n_idle++] = c;
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

/* ---- one transfer ------------------------------------------------------------------------- */

typedef enum body_mode {
    BODY_DISCARD, /* HEAD, redirects */
    BODY_ALL,     /* keep the whole body */
    BODY_WINDOW,  /* keep bytes [skip, skip + want) of it, stop when they are in */
    BODY_ERROR,   /* keep the start of an error page */
} body_mode;

typedef struct xfer {
    const zf_http_request *rq;
    uint64_t limit;
    /* the headers of the latest response (a redirect's are replaced by the next one's) */
    long status;
    char reason[64];
    bool has_cl, has_cr, cr_unsat, cr_total_known;
    uint64_t cl, cr_first, cr_last, cr_total;
    time_t mtime;
    char ctype[128], region[64], etag[160], generation[32], error_code[64];
    uint64_t retry_after_ms; /* Retry-After (seconds) or x-ms-retry-after-ms; 0: none */
    uint64_t header_bytes; /* of every response of the transfer, redirects included */
    bool headers_too_large;
    /* its body */
    bool started, enough, too_large, nomem;
    uint64_t announced; /* too_large: the size the headers announced (UINT64_MAX: none) */
    body_mode mode;
    uint64_t seen, skip, want;
    uint8_t *buf;
    size_t len, cap;
} xfer;

static void reset_response(xfer *x)
{
    free(x->buf);
    const zf_http_request *rq = x->rq;
    uint64_t limit = x->limit, header_bytes = x->header_bytes;
    *x = (xfer){.rq = rq, .limit = limit, .mtime = -1, .header_bytes = header_bytes};
}

static bool parse_u64(const char *s, size_t n, uint64_t *out)
{
    if (n == 0)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return true;
}

static void copy_value(char *dst, size_t cap, const char *v, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, v, n);
    dst[n] = '\0';
}

/* "bytes a-b/total", "bytes a-b/(star)", "bytes (star)/total" */
static void parse_content_range(xfer *x, const char *v, size_t n)
{
    if (n < 6 || strncasecmp(v, "bytes", 5) != 0)
        return;
    size_t i = 5;
    while (i < n && (v[i] == ' ' || v[i] == '\t'))
        i++;
    const char *slash = memchr(v + i, '/', n - i);
    if (!slash)
        return;
    size_t sl = (size_t)(slash - v);
    const char *tot = slash + 1;
    size_t tn = n - sl - 1;
    x->cr_total_known = !(tn == 1 && tot[0] == '*') && parse_u64(tot, tn, &x->cr_total);
    if (sl - i == 1 && v[i] == '*') {
        x->cr_unsat = true;
        x->has_cr = true;
        return;
    }
    const char *dash = memchr(v + i, '-', sl - i);
    if (!dash)
        return;
    size_t dl = (size_t)(dash - v);
    if (parse_u64(v + i, dl - i, &x->cr_first) && parse_u64(dash + 1, sl - dl - 1, &x->cr_last) &&
        x->cr_last >= x->cr_first)
        x->has_cr = true;
}

static bool start_body(xfer *x);

static size_t on_header(char *buf, size_t size, size_t n, void *ud)
{
    xfer *x = ud;
    size_t len = size * n, l = len;
    x->header_bytes += len;
    if (x->header_bytes > ZF_HTTP_MAX_HEADERS) { /* an endless header stream */
        x->headers_too_large = true;
        return 0;
    }
    while (l && (buf[l - 1] == '\r' || buf[l - 1] == '\n'))
        l--;
    if (l == 0) { /* the end of a response's headers: a body announced too large is refused now,
                     before any of it is read */
        if (x->status >= 200 && x->status < 300 && !x->started && !start_body(x))
            return 0;
        return len;
    }
    if (l >= 5 && memcmp(buf, "HTTP/", 5) == 0) { /* a new response: forget the previous one */
        reset_response(x);
        const char *sp = memchr(buf, ' ', l);
        if (sp) {
            size_t i = (size_t)(sp - buf) + 1, j = i;
            while (j < l && buf[j] >= '0' && buf[j] <= '9')
                j++;
            uint64_t code;
            if (j - i == 3 && parse_u64(buf + i, 3, &code))
                x->status = (long)code;
            while (j < l && buf[j] == ' ')
                j++;
            copy_value(x->reason, sizeof x->reason, buf + j, l - j);
        }
        return len;
    }
    const char *colon = memchr(buf, ':', l);
    if (!colon)
        return len;
    size_t nl = (size_t)(colon - buf), vi = nl + 1;
    while (vi < l && (buf[vi] == ' ' || buf[vi] == '\t'))
        vi++;
    size_t ve = l;
    while (ve > vi && (buf[ve - 1] == ' ' || buf[ve - 1] == '\t'))
        ve--;
    const char *v = buf + vi;
    size_t vn = ve - vi;
#define IS(name) (nl == sizeof name - 1 && strncasecmp(buf, name, nl) == 0)
    if (IS("content-length")) {
        x->has_cl = parse_u64(v, vn, &x->cl);
    } else if (IS("content-range")) {
        parse_content_range(x, v, vn);
    } else if (IS("last-modified")) {
        char tmp[128];
        copy_value(tmp, sizeof tmp, v, vn);
        x->mtime = curl_getdate(tmp, NULL);
    } else if (IS("content-type")) {
        copy_value(x->ctype, sizeof x->ctype, v, vn);
    } else if (IS("etag")) {
        if (vn < sizeof x->etag) /* a longer one is not kept: then it cannot tell versions */
            copy_value(x->etag, sizeof x->etag, v, vn);
    } else if (IS("x-amz-bucket-region")) {
        copy_value(x->region, sizeof x->region, v, vn);
    } else if (IS("x-goog-generation")) {
        copy_value(x->generation, sizeof x->generation, v, vn);
    } else if (IS("x-ms-error-code")) {
        copy_value(x->error_code, sizeof x->error_code, v, vn);
    } else if (IS("x-ms-retry-after-ms")) {
        uint64_t ms;
        if (parse_u64(v, vn, &ms))
            x->retry_after_ms = ms;
    } else if (IS("retry-after") && !x->retry_after_ms) { /* seconds; an HTTP date is ignored */
        uint64_t sec;
        if (parse_u64(v, vn, &sec))
            x->retry_after_ms = sec > UINT64_MAX / 1000 ? UINT64_MAX : sec * 1000;
    }
#undef IS
    return len;
}

static bool reserve(xfer *x, uint64_t need)
{
    if (need <= x->cap)
        return true;
    if (need > SIZE_MAX / 2) {
        x->nomem = true;
        return false;
    }
    size_t nc = x->cap ? x->cap * 2 : 64 * 1024;
    if (nc < need)
        nc = (size_t)need;
    uint8_t *nb = zf_alloc_bulk(nc); /* a value may become a cached chunk as it is */
    if (!nb) {
        x->nomem = true;
        return false;
    }
    if (x->len)
        memcpy(nb, x->buf, x->len);
    free(x->buf);
    x->buf = nb;
    x->cap = nc;
    return true;
}

static bool append(xfer *x, const char *p, size_t n)
{
    if (n == 0)
        return true;
    if (x->mode != BODY_ERROR && x->len + (uint64_t)n > x->limit) {
        x->too_large = true;
        x->announced = UINT64_MAX;
        return false;
    }
    if (!reserve(x, x->len + (uint64_t)n + (x->mode == BODY_ERROR)))
        return false;
    memcpy(x->buf + x->len, p, n);
    x->len += n;
    return true;
}

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* The end of a 2xx response's headers, else its first body byte: decide what to keep of the
 * body. */
static bool start_body(xfer *x)
{
    const zf_http_request *rq = x->rq;
    x->started = true;
    uint64_t expect = UINT64_MAX; /* unknown */
    if (rq->kind == ZF_HTTP_HEAD || (x->status >= 300 && x->status < 400)) {
        x->mode = BODY_DISCARD;
        return true;
    }
    if (x->status < 200 || x->status >= 300) {
        x->mode = BODY_ERROR;
        return true;
    }
    if (x->status == 206) {
        x->mode = BODY_ALL;
        if (x->has_cr && !x->cr_unsat)
            expect = x->cr_last - x->cr_first + 1;
    } else if (rq->kind == ZF_HTTP_RANGE) { /* the server ignored the range: cut it out */
        x->mode = BODY_WINDOW;
        x->skip = rq->offset;
        x->want = rq->len;
        if (x->has_cl)
            expect = x->cl > rq->offset ? min64(x->cl - rq->offset, rq->len) : 0;
    } else if (rq->kind == ZF_HTTP_SUFFIX && x->has_cl) {
        x->mode = BODY_WINDOW;
        x->skip = x->cl > rq->len ? x->cl - rq->len : 0;
        x->want = rq->len;
        expect = min64(x->cl, rq->len);
    } else {
        x->mode = BODY_ALL; /* a GET, or a suffix of unknown length: sliced at the end */
        if (x->has_cl)
            expect = x->cl;
    }
    if (expect != UINT64_MAX) {
        if (expect > x->limit) {
            x->too_large = true;
            x->announced = expect;
            return false;
        }
        if (expect && !reserve(x, expect))
            return false;
    }
    return true;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    xfer *x = ud;
    size_t len = size * n;
    if (!x->started && !start_body(x))
        return 0;
    uint64_t pos = x->seen;
    x->seen += len;
    switch (x->mode) {
    case BODY_DISCARD:
        return len;
    case BODY_ERROR:
        if (x->len < ERR_BODY_MAX)
            append(x, p, min64(len, ERR_BODY_MAX - x->len));
        return x->nomem ? 0 : len;
    case BODY_ALL:
        return append(x, p, len) ? len : 0;
    case BODY_WINDOW: {
        uint64_t end = x->want > UINT64_MAX - x->skip ? UINT64_MAX : x->skip + x->want;
        uint64_t lo = pos > x->skip ? pos : x->skip, hi = min64(pos + len, end);
        if (lo < hi && !append(x, p + (lo - pos), (size_t)(hi - lo)))
            return 0;
        if (x->len == x->want) { /* all we need: stop reading (the connection is dropped) */
            x->enough = true;
            return 0;
        }
        return len;
    }
    }
    return 0;
}

typedef enum attempt_result {
    ATTEMPT_DONE,
    ATTEMPT_RETRY,
    ATTEMPT_FAIL,
    ATTEMPT_AS_RANGE, /* a suffix range misread (s3rver sends bytes 0-n): ask for it by offset */
} attempt_result;

static bool retryable_curl(CURLcode rc)
{
    switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_HTTP3:
    case CURLE_QUIC_CONNECT_ERROR:
        return true;
    default:
        return false;
    }
}

static const char *known_reason(long code)
{
    switch (code) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 408: return "Request Timeout";
    case 410: return "Gone";
    case 416: return "Range Not Satisfiable";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    }
    return NULL;
}

void zf_http_status_text(const zf_http_response *resp, char *buf, size_t n)
{
    const char *r = resp->reason[0] ? resp->reason : known_reason(resp->status);
    if (r)
        snprintf(buf, n, "%ld %s", resp->status, r);
    else
        snprintf(buf, n, "HTTP %ld", resp->status);
}

/* Move x's body into resp (a non-NULL buffer even when empty). */
static bool take_body(xfer *x, zf_http_response *resp, bool nul)
{
    if (!x->buf || nul) {
        if (!reserve(x, (uint64_t)x->len + 1))
            return false;
        if (nul)
            x->buf[x->len] = '\0';
    }
    resp->body.data = x->buf;
    resp->body.len = x->len;
    x->buf = NULL;
    x->len = x->cap = 0;
    return true;
}

static attempt_result check_complete(xfer *x, zf_http_response *resp, char *why, size_t wn,
                                     zf_status *st, zf_err *err)
{
    const zf_http_request *rq = x->rq;
    if (rq->kind == ZF_HTTP_HEAD) {
        resp->has_total = x->has_cl;
        resp->total = x->cl;
        return ATTEMPT_DONE;
    }
    if (x->status == 206 && x->has_cr && x->cr_total_known && x->cr_total == 0) {
        x->len = 0; /* "bytes 0-0/0": an empty value (s3rver says so, with a 1-byte length) */
        resp->has_total = true;
        resp->total = 0;
        return ATTEMPT_DONE;
    }
    if (x->status == 206) {
        if (rq->kind == ZF_HTTP_GET || !x->has_cr || x->cr_unsat) {
            *st = zf_fail(err, ZF_ERR_IO, "%s: 206 Partial Content %s", rq->what,
                          rq->kind == ZF_HTTP_GET ? "to a request without a range"
                                                  : "without a valid Content-Range");
            return ATTEMPT_FAIL;
        }
        uint64_t a = x->cr_first, b = x->cr_last, n = b - a + 1;
        if (x->len != n) {
            snprintf(why, wn, "truncated: %zu of %" PRIu64 " bytes", x->len, n);
            return ATTEMPT_RETRY;
        }
        uint64_t first, want; /* the range that should have come */
        if (rq->kind == ZF_HTTP_RANGE) {
            first = rq->offset;
            want = rq->len;
        } else {
            if (!x->cr_total_known) {
                *st = zf_fail(err, ZF_ERR_IO, "%s: suffix range answered without the size",
                              rq->what);
                return ATTEMPT_FAIL;
            }
            first = x->cr_total > rq->len ? x->cr_total - rq->len : 0;
            want = rq->len;
            if (b + 1 != x->cr_total) { /* not the end of the value: the suffix was misread */
                resp->total = x->cr_total;
                return ATTEMPT_AS_RANGE;
            }
        }
        uint64_t end = want > UINT64_MAX - first ? UINT64_MAX : first + want; /* exclusive */
        if (x->cr_total_known)
            end = min64(end, x->cr_total);
        if (rq->kind == ZF_HTTP_RANGE && a != first) {
            *st = zf_fail(err, ZF_ERR_IO,
                          "%s: asked for bytes from %" PRIu64 ", the server sent from %" PRIu64,
                          rq->what, first, a);
            return ATTEMPT_FAIL;
        }
        if (a > first || b + 1 < end) { /* fewer bytes than asked, though the value has them */
            snprintf(why, wn, "truncated: %" PRIu64 " of %" PRIu64 " bytes", n,
                     end > first ? end - first : 0);
            return ATTEMPT_RETRY;
        }
        if (a < first || b + 1 > end) { /* more than asked: keep what was asked */
            size_t skip = (size_t)(first - a), keep = (size_t)(end - first);
            memmove(x->buf, x->buf + skip, keep);
            x->len = keep;
        }
        resp->has_total = x->cr_total_known;
        resp->total = x->cr_total;
        return ATTEMPT_DONE;
    }
    /* 200 and the other 2xx: the whole value, or our window of it */
    if (x->has_cl && !x->enough && x->seen != x->cl) {
        snprintf(why, wn, "truncated: %" PRIu64 " of %" PRIu64 " bytes", x->seen, x->cl);
        return ATTEMPT_RETRY;
    }
    resp->has_total = x->has_cl || !x->enough;
    resp->total = x->has_cl ? x->cl : x->seen;
    if (rq->kind == ZF_HTTP_SUFFIX && x->mode == BODY_ALL && x->len > rq->len) {
        memmove(x->buf, x->buf + (x->len - rq->len), (size_t)rq->len);
        x->len = (size_t)rq->len;
    }
    return ATTEMPT_DONE;
}

/* Whether url b has the origin of url a: scheme, host and port (RFC 6454). */
bool zf_url_same_origin(const char *a, const char *b)
{
    CURLU *u[2] = {curl_url(), curl_url()};
    const char *s[2] = {a, b};
    char *part[2][3] = {{NULL}};
    const CURLUPart which[3] = {CURLUPART_SCHEME, CURLUPART_HOST, CURLUPART_PORT};
    bool ok = u[0] && u[1];
    for (int i = 0; ok && i < 2; i++) {
        ok = curl_url_set(u[i], CURLUPART_URL, s[i], 0) == CURLUE_OK;
        for (int k = 0; ok && k < 3; k++)
            ok = curl_url_get(u[i], which[k], &part[i][k], CURLU_DEFAULT_PORT) == CURLUE_OK;
    }
    for (int k = 0; ok && k < 3; k++)
        ok = strcasecmp(part[0][k], part[1][k]) == 0;
    for (int i = 0; i < 2; i++) {
        for (int k = 0; k < 3; k++)
            curl_free(part[i][k]);
        curl_url_cleanup(u[i]);
    }
    return ok;
}

void zf_http_range_header(const zf_http_request *rq, char *range, size_t n)
{
    range[0] = '\0';
    if (rq->kind == ZF_HTTP_RANGE) {
        if (rq->len > UINT64_MAX - rq->offset || rq->offset + rq->len - 1 == UINT64_MAX)
            snprintf(range, n, "Range: bytes=%" PRIu64 "-", rq->offset);
        else
            snprintf(range, n, "Range: bytes=%" PRIu64 "-%" PRIu64, rq->offset,
                     rq->offset + rq->len - 1);
    } else if (rq->kind == ZF_HTTP_SUFFIX) {
        snprintf(range, n, "Range: bytes=-%" PRIu64, rq->len);
    }
}

static attempt_result attempt(zf_http *h, CURL *c, const zf_http_request *rq,
                              zf_http_response *resp, char *why, size_t wn,
                              uint64_t *retry_after_ms, zf_status *st, zf_err *err)
{
    xfer x = {.rq = rq, .limit = rq->max_body ? rq->max_body : ZF_HTTP_MAX_VALUE, .mtime = -1};
    char range[64], errbuf[CURL_ERROR_SIZE] = "";
    zf_http_range_header(rq, range, sizeof range);
    struct curl_slist *hdr = NULL, *t;
    bool ok = true;
#define ADD(s)                                                                               \
    do {                                                                                     \
        if (ok && (t = curl_slist_append(hdr, s)) != NULL)                                   \
            hdr = t;                                                                         \
        else                                                                                 \
            ok = false;                                                                      \
    } while (0)
    if (range[0])
        ADD(range);
    char ctype[160];
    if (rq->kind == ZF_HTTP_PUT || rq->kind == ZF_HTTP_POST) { /* not a form (libcurl's POST
                                                                   default) */
        snprintf(ctype, sizeof ctype, "Content-Type: %s",
                 rq->content_type ? rq->content_type : "application/octet-stream");
        ADD(ctype);
        if (h->drop_expect)
            ADD("Expect:");
    }
    if (rq->condition)
        ADD(rq->condition);
    if (h->sigv4) /* libcurl's SigV4 signs every header we send, these included */
        ADD("x-amz-content-sha256: UNSIGNED-PAYLOAD");
    if (h->token_header)
        ADD(h->token_header);
    for (const char *const *e = rq->headers; e && *e; e++)
        ADD(*e);
#undef ADD
    if (!ok) {
        curl_slist_free_all(hdr);
        *st = ZF_ERR_NOMEM;
        return ATTEMPT_FAIL;
    }
    curl_easy_setopt(c, CURLOPT_URL, rq->url);
    if (rq->kind == ZF_HTTP_HEAD)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    else
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    if (rq->kind == ZF_HTTP_PUT || rq->kind == ZF_HTTP_POST) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, rq->body ? (const char *)rq->body : "");
        if (rq->kind == ZF_HTTP_PUT)
            curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PUT");
        curl_easy_setopt(c, CURLOPT_POSTREDIR, (long)CURL_REDIR_POST_ALL);
    } else if (rq->kind == ZF_HTTP_DELETE) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "DELETE");
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &x);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    CURLcode rc = curl_easy_perform(c);
    long redirects = 0;
    char *next = NULL; /* a signed request's redirect target, followed here */
    const char *refused = NULL;
    while (h->own_redirects && rc == CURLE_OK && x.status >= 300 && x.status < 400 &&
           curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &next) == CURLE_OK && next) {
        const char *cur = NULL;
        curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &cur);
        if (redirects >= MAX_REDIRECTS) {
            refused = "too many redirects";
            break;
        }
        if (!zf_url_same_origin(cur ? cur : rq->url, next)) {
            refused = "a redirect to another origin (the request is signed)";
            break;
        }
        char *to = strdup(next); /* next lives in the handle until the next transfer */
        if (!to) {
            x.nomem = true;
            break;
        }
        curl_easy_setopt(c, CURLOPT_URL, to);
        reset_response(&x);
        rc = curl_easy_perform(c);
        free(to);
        redirects++;
    }
    char *eff = NULL;
    curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &eff);
    if (!h->own_redirects)
        curl_easy_getinfo(c, CURLINFO_REDIRECT_COUNT, &redirects);
    bool dir_redirect = redirects > 0 && eff && *eff && eff[strlen(eff) - 1] == '/' &&
                        rq->url[0] && rq->url[strlen(rq->url) - 1] != '/';
    if (x.status == 0 && rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &x.status);
    /* the handle goes back to the pool: it must not point at this frame, nor keep the method */
    if (rq->kind == ZF_HTTP_PUT || rq->kind == ZF_HTTP_POST || rq->kind == ZF_HTTP_DELETE) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, NULL);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, NULL);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)-1);
        curl_easy_setopt(c, CURLOPT_POSTREDIR, 0L);
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, NULL);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, NULL);
    curl_slist_free_all(hdr);

    attempt_result r = ATTEMPT_DONE;
    if (x.nomem) {
        *st = ZF_ERR_NOMEM;
        r = ATTEMPT_FAIL;
    } else if (refused) {
        *st = zf_fail(err, ZF_ERR_IO, "%s: refusing %s", rq->what, refused);
        r = ATTEMPT_FAIL;
    } else if (x.headers_too_large) {
        *st = zf_fail(err, ZF_ERR_IO, "%s: refusing response headers larger than %" PRIu64 " KiB",
                      rq->what, ZF_HTTP_MAX_HEADERS >> 10);
        r = ATTEMPT_FAIL;
    } else if (x.too_large) {
        *st = zf_store_refuse_large(err, rq->what, x.limit, x.announced,
                                    x.announced == UINT64_MAX
                                        ? "sent without a length: cut off there"
                                        : "announced");
        r = ATTEMPT_FAIL;
    } else if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && x.enough) &&
               !(rc == CURLE_PARTIAL_FILE && x.status == 206 && x.has_cr && x.cr_total_known &&
                 x.cr_total == 0)) {
        const char *msg = errbuf[0] ? errbuf : curl_easy_strerror(rc);
        if (rc == CURLE_PARTIAL_FILE && x.has_cl)
            snprintf(why, wn, "truncated: %" PRIu64 " of %" PRIu64 " bytes", x.seen, x.cl);
        else if (rc == CURLE_PARTIAL_FILE)
            snprintf(why, wn, "truncated after %" PRIu64 " bytes", x.seen);
        else if (rc == CURLE_OPERATION_TIMEDOUT)
            snprintf(why, wn, "timed out (%s)", msg);
        else
            snprintf(why, wn, "%s", msg);
        if (retryable_curl(rc)) {
            r = ATTEMPT_RETRY;
        } else {
            *st = zf_fail(err, ZF_ERR_IO, "%s: %s", rq->what, why);
            r = ATTEMPT_FAIL;
        }
    } else if (x.status >= 500 || x.status == 429 || x.status == 408) {
        zf_http_response tmp = {.status = x.status};
        memcpy(tmp.reason, x.reason, sizeof tmp.reason);
        zf_http_status_text(&tmp, why, wn);
        *retry_after_ms = x.retry_after_ms;
        r = ATTEMPT_RETRY;
    } else if (x.status >= 200 && x.status < 300) {
        r = check_complete(&x, resp, why, wn, st, err);
    }
    if (r == ATTEMPT_DONE) {
        resp->status = x.status;
        memcpy(resp->reason, x.reason, sizeof resp->reason);
        memcpy(resp->content_type, x.ctype, sizeof resp->content_type);
        memcpy(resp->bucket_region, x.region, sizeof resp->bucket_region);
        memcpy(resp->etag, x.etag, sizeof resp->etag);
        memcpy(resp->generation, x.generation, sizeof resp->generation);
        memcpy(resp->error_code, x.error_code, sizeof resp->error_code);
        resp->mtime = (struct timespec){.tv_sec = x.mtime > 0 ? x.mtime : 0};
        resp->dir_redirect = dir_redirect;
        if (!take_body(&x, resp, x.status < 200 || x.status >= 300)) {
            *st = ZF_ERR_NOMEM;
            r = ATTEMPT_FAIL;
        }
    }
    free(x.buf);
    return r;
}

/* ---- retries ------------------------------------------------------------------------------ */

static uint64_t random64(void)
{
    static _Atomic uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t z = atomic_fetch_add(&counter, 0x9E3779B97F4A7C15u) ^
                 ((uint64_t)ts.tv_nsec * 0xD1B54A32D192ED03u) ^ (uint64_t)ts.tv_sec;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u; /* splitmix64 */
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

/* Sleep before retry number attempt, at least retry_after_ms (capped). */
static void backoff(unsigned attempt, uint64_t retry_after_ms)
{
    uint64_t cap = ZF_HTTP_BACKOFF_BASE_MS;
    for (unsigned i = 0; i < attempt && cap < ZF_HTTP_BACKOFF_CAP_MS; i++)
        cap *= 2;
    if (cap > ZF_HTTP_BACKOFF_CAP_MS)
        cap = ZF_HTTP_BACKOFF_CAP_MS;
    uint64_t us = random64() % (cap * 1000 + 1);
    if (retry_after_ms > ZF_HTTP_RETRY_AFTER_CAP_MS)
        retry_after_ms = ZF_HTTP_RETRY_AFTER_CAP_MS;
    if (us < retry_after_ms * 1000)
        us = retry_after_ms * 1000;
    struct timespec d = {.tv_sec = (time_t)(us / 1000000), .tv_nsec = (long)(us % 1000000) * 1000};
    while (nanosleep(&d, &d) != 0)
        ;
}

zf_status zf_http_perform(zf_http *h, zf_store *s, const zf_http_request *req,
                          zf_http_response *resp, zf_err *err)
{
    memset(resp, 0, sizeof *resp);
    char why[CURL_ERROR_SIZE + 64] = "";
    zf_http_request by_offset;
    for (unsigned n = 0;; n++) {
        CURL *c = acquire(h);
        if (!c)
            return ZF_ERR_NOMEM;
        zf_status st = ZF_OK;
        uint64_t retry_after_ms = 0;
        attempt_result r = attempt(h, c, req, resp, why, sizeof why, &retry_after_ms, &st, err);
        release(h, c);
        if (r == ATTEMPT_DONE)
            return ZF_OK;
        if (r == ATTEMPT_FAIL)
            return st;
        if (r == ATTEMPT_AS_RANGE) { /* the same bytes, named by offset; not a retry */
            uint64_t total = resp->total;
            by_offset = *req;
            by_offset.kind = ZF_HTTP_RANGE;
            by_offset.offset = total > req->len ? total - req->len : 0;
            by_offset.len = total - by_offset.offset;
            req = &by_offset;
            memset(resp, 0, sizeof *resp);
            n--;
            continue;
        }
        if (n >= h->retries)
            break;
        if (s)
            zf_store_count_retry(s);
        backoff(n, retry_after_ms);
    }
    return zf_fail(err, ZF_ERR_IO, "%s: %s after %u %s", req->what, why, h->retries,
                   h->retries == 1 ? "retry" : "retries");
}

void zf_http_response_free(zf_http_response *resp) { zf_bytes_free(&resp->body); }

zf_status zf_bytes_empty(zf_bytes *out)
{
    out->data = malloc(1);
    out->len = 0;
    return out->data ? ZF_OK : ZF_ERR_NOMEM;
}

void zf_http_version(const zf_http_response *r, zf_store_version *ver)
{
    if (!ver)
        return;
    memset(ver, 0, sizeof *ver);
    memcpy(ver->etag, r->etag, sizeof ver->etag);
    ver->mtime = r->mtime;
    ver->has_size = r->has_total;
    ver->size = r->has_total ? r->total : 0;
}

zf_status zf_http_get(zf_store *s, const char *key, zf_range_request_fn request,
                      uint64_t max_size, zf_bytes *out, zf_store_version *ver, zf_err *err)
{
    zf_http_response r;
    zf_status st = request(s, key, ZF_HTTP_GET, 0, max_size, &r, err);
    if (st != ZF_OK)
        return st;
    if (r.status == 416) {
        zf_http_response_free(&r);
        return zf_fail(err, ZF_ERR_IO, "%s: 416 to a request without a range", key);
    }
    zf_http_version(&r, ver);
    if (ver) { /* a whole body: its length is the size, whatever the headers said */
        ver->size = r.body.len;
        ver->has_size = true;
    }
    *out = r.body;
    return ZF_OK;
}

zf_status zf_http_get_partial(zf_store *s, const char *key, uint64_t offset, uint64_t len,
                              zf_range_request_fn request, zf_stat_fn stat, zf_bytes *out,
                              zf_store_version *ver, zf_err *err)
{
    if (ver) /* unknown unless an answer with a body tells */
        memset(ver, 0, sizeof *ver);
    if (len == 0) { /* nothing to read, but a missing key is still "not found" */
        zf_status st = stat(s, key, NULL, NULL, err);
        return st ? st : zf_bytes_empty(out);
    }
    zf_http_response r;
    zf_status st = request(s, key, ZF_HTTP_RANGE, offset, len, &r, err);
    if (st != ZF_OK)
        return st;
    if (r.status == 416) { /* the value ends before offset */
        zf_http_response_free(&r);
        return zf_bytes_empty(out);
    }
    zf_http_version(&r, ver);
    *out = r.body;
    return ZF_OK;
}

zf_status zf_http_get_suffix(zf_store *s, const char *key, uint64_t len,
                             zf_range_request_fn request, zf_stat_fn stat, zf_bytes *out,
                             uint64_t *total, zf_store_version *ver, zf_err *err)
{
    if (ver)
        memset(ver, 0, sizeof *ver);
    if (len == 0) {
        zf_status st = stat(s, key, total, NULL, err);
        return st ? st : zf_bytes_empty(out);
    }
    zf_http_response r;
    zf_status st = request(s, key, ZF_HTTP_SUFFIX, 0, len, &r, err);
    if (st != ZF_OK)
        return st;
    if (r.status == 416) { /* an empty value has no suffix */
        zf_http_response_free(&r);
        uint64_t size;
        if ((st = stat(s, key, &size, NULL, err)) != ZF_OK)
            return st;
        if (size != 0)
            return zf_fail(err, ZF_ERR_IO, "%s: 416 for the last %" PRIu64 " bytes of %" PRIu64,
                           key, len, size);
        *total = 0;
        return zf_bytes_empty(out);
    }
    if (!r.has_total) {
        zf_http_response_free(&r);
        return zf_fail(err, ZF_ERR_IO, "%s: the answer does not tell the size", key);
    }
    *total = r.total;
    zf_http_version(&r, ver);
    *out = r.body;
    return ZF_OK;
}

zf_status zf_http_read_versioned(zf_store *s, const char *key, zf_read_kind kind,
                                 uint64_t offset, uint64_t len, zf_range_request_fn request,
                                 zf_stat_fn stat, zf_stat_version_fn stat_v, zf_bytes *out,
                                 zf_store_version *ver, zf_err *err)
{
    zf_status st;
    uint64_t total;
    switch (kind) {
    case ZF_READ_ALL: /* len: the bound (store.h) */
        return zf_http_get(s, key, request, len, out, ver, err);
    case ZF_READ_RANGE:
        return zf_http_get_partial(s, key, offset, len, request, stat, out, ver, err);
    case ZF_READ_SUFFIX:
        if ((st = zf_http_get_suffix(s, key, len, request, stat, out, &total, ver, err)) ==
            ZF_OK) {
            ver->size = total;
            ver->has_size = true;
        }
        return st;
    case ZF_READ_STAT:
        return stat_v(s, key, ver, err);
    }
    return zf_fail(err, ZF_ERR_INVALID, "%s: unknown kind of read", key);
}
