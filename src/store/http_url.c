/* http_url.c — percent-encoding of keys into URLs, and the listing helpers the remote stores
 * share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "store_impl.h"

static bool unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '.' || c == '_' || c == '~';
}

char *zf_url_encode(const char *s, size_t n, bool keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    if (n > (SIZE_MAX - 1) / 3)
        return NULL;
    char *out = malloc(3 * n + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (unreserved(c) || (keep_slash && c == '/')) {
            *o++ = (char)c;
        } else {
            *o++ = '%';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    *o = '\0';
    return out;
}

char *zf_url_join_key(const char *base, const char *key, bool trailing_slash)
{
    /* Keys are validated ('/'-separated, no empty segments), so encoding the whole key with '/'
     * kept encodes each segment on its own. */
    char *enc = zf_url_encode(key, strlen(key), true);
    if (!enc)
        return NULL;
    size_t bl = strlen(base), el = strlen(enc);
    char *out = malloc(bl + el + 3);
    if (out) {
        memcpy(out, base, bl);
        size_t o = bl;
        if (el || trailing_slash)
            out[o++] = '/';
        memcpy(out + o, enc, el);
        o += el;
        if (el && trailing_slash)
            out[o++] = '/';
        out[o] = '\0';
    }
    free(enc);
    return out;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

char *zf_url_decode(const char *s, size_t n, size_t *len)
{
    char *out = malloc(n + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        int hi, lo;
        if (s[i] == '%' && i + 2 < n && (hi = hexval(s[i + 1])) >= 0 &&
            (lo = hexval(s[i + 2])) >= 0) {
            *o++ = (char)(hi << 4 | lo);
            i += 2;
        } else {
            *o++ = s[i];
        }
    }
    *o = '\0';
    *len = (size_t)(o - out);
    return out;
}

/* The userinfo of url hidden (see zf_url_redact); malloc'ed. */
static char *redact_userinfo(const char *url)
{
    const char *auth = strstr(url, "://");
    if (!auth)
        return strdup(url);
    auth += 3;
    size_t hl = strcspn(auth, "/?#");
    const char *at = memrchr(auth, '@', hl);
    if (!at)
        return strdup(url);
    /* user:password -> user:***; a user alone (often a token: https://TOKEN@host/) -> *** */
    const char *colon = memchr(auth, ':', (size_t)(at - auth));
    size_t pre = (size_t)((colon ? colon + 1 : auth) - url), rest = strlen(at);
    char *out = malloc(pre + 3 + rest + 1);
    if (!out)
        return NULL;
    memcpy(out, url, pre);
    memcpy(out + pre, "***", 3);
    memcpy(out + pre + 3, at, rest + 1);
    return out;
}

/* A query parameter whose value is a secret. */
static bool secret_param(const char *name, size_t n)
{
    static const char *const names[] = {"sig", "x-amz-signature", "x-amz-security-token",
                                        "x-goog-signature"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strlen(names[i]) == n && strncasecmp(name, names[i], n) == 0)
            return true;
    return false;
}

/* The secret parameters' values of url's query shown as "***" (malloc'd; NULL without
 * memory). */
static char *redact_query(const char *url)
{
    char *u = strdup(url);
    if (!u || !strstr(u, "://"))
        return u;
    char *q = strchr(u, '?');
    if (!q)
        return u;
    size_t ql = strcspn(q + 1, "#"), n = strlen(u);
    /* at most as long as the original plus "***" per parameter */
    char *out = malloc(n + 3 * (ql / 2 + 1) + 1), *o = out;
    if (!out) {
        free(u);
        return NULL;
    }
    size_t pre = (size_t)(q + 1 - u);
    memcpy(o, u, pre);
    o += pre;
    for (const char *p = q + 1, *end = q + 1 + ql; p < end;) {
        size_t sl = strcspn(p, "&#");
        const char *eq = memchr(p, '=', sl);
        if (eq && secret_param(p, (size_t)(eq - p))) {
            size_t kl = (size_t)(eq - p) + 1;
            memcpy(o, p, kl);
            o += kl;
            memcpy(o, "***", 3);
            o += 3;
        } else {
            memcpy(o, p, sl);
            o += sl;
        }
        p += sl;
        if (p < end && *p == '&')
            *o++ = *p++;
    }
    strcpy(o, q + 1 + ql); /* the fragment, if any */
    free(u);
    return out;
}

/* The query first: a secret value may hold "://" or '@' (hostile or garbled URLs), which must not
 * decide where the authority is. Neither step adds or removes what the other looks for (a
 * password never holds '?', '&', '=' or '#'; "***" holds nothing of either), so redacting twice
 * gives the same text (the fuzz target url_key checks it). */
char *zf_url_redact(const char *url)
{
    char *q = redact_query(url);
    if (!q)
        return NULL;
    char *u = redact_userinfo(q);
    free(q);
    return u;
}

char *zf_url_strip_userinfo(const char *url)
{
    const char *auth = strstr(url, "://");
    if (!auth)
        return strdup(url);
    auth += 3;
    const char *at = memrchr(auth, '@', strcspn(auth, "/?#"));
    if (!at)
        return strdup(url);
    size_t pre = (size_t)(auth - url), rest = strlen(at + 1);
    char *out = malloc(pre + rest + 1);
    if (out) {
        memcpy(out, url, pre);
        memcpy(out + pre, at + 1, rest + 1);
    }
    return out;
}

bool zf_listing_add(zf_store_listing *l, size_t *cap, const char *name, size_t n, bool is_prefix)
{
    if (l->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        zf_store_entry *ne = realloc(l->entries, nc * sizeof *ne);
        if (!ne)
            return false;
        l->entries = ne;
        *cap = nc;
    }
    char *copy = strndup(name, n);
    if (!copy)
        return false;
    l->entries[l->n].name = copy;
    l->entries[l->n++].is_prefix = is_prefix;
    return true;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const zf_store_entry *)a)->name, ((const zf_store_entry *)b)->name);
}

void zf_listing_sort_unique(zf_store_listing *l)
{
    if (l->n < 2)
        return;
    qsort(l->entries, l->n, sizeof *l->entries, by_name);
    size_t w = 0;
    for (size_t r = 1; r < l->n; r++) {
        if (strcmp(l->entries[w].name, l->entries[r].name) == 0) {
            l->entries[w].is_prefix |= l->entries[r].is_prefix;
            free(l->entries[r].name);
        } else {
            l->entries[++w] = l->entries[r];
        }
    }
    l->n = w + 1;
}

zf_status zf_list_pages(const char *what, char *fk, const char *token_name, zf_list_page_fn page,
                        void *ctx, zf_store_listing *out, zf_err *err)
{
    char *list_prefix = NULL, *enc_prefix = NULL;
    if (fk && asprintf(&list_prefix, "%s%s", fk, fk[0] ? "/" : "") < 0)
        list_prefix = NULL;
    free(fk);
    if (list_prefix)
        enc_prefix = zf_url_encode(list_prefix, strlen(list_prefix), false);
    if (!enc_prefix) {
        free(list_prefix);
        return ZF_ERR_NOMEM;
    }
    zf_store_listing l = {0};
    size_t cap = 0, raw = 0;
    char *token = NULL;
    zf_status st = ZF_OK;
    for (unsigned n_page = 0; st == ZF_OK; n_page++) {
        char *enc_token = token ? zf_url_encode(token, strlen(token), false) : NULL;
        if (token && !enc_token) {
            st = ZF_ERR_NOMEM;
            break;
        }
        size_t n_raw = 0;
        char *next = NULL;
        st = page(ctx, what, list_prefix, enc_prefix, enc_token, &l, &cap, &n_raw, &next, err);
        free(enc_token);
        raw += n_raw;
        if (st == ZF_OK && next && token && strcmp(next, token) == 0)
            st = zf_fail(err, ZF_ERR_IO, "%s: the listing repeats its %s", what, token_name);
        if (st == ZF_OK && next && raw + n_page + 1 >= zf_list_max_entries)
            st = zf_fail(err, ZF_ERR_IO,
                         "%s: refusing a listing of more than %zu entries and pages", what,
                         zf_list_max_entries);
        free(token);
        token = next;
        if (!token)
            break;
    }
    free(token);
    free(list_prefix);
    free(enc_prefix);
    if (st == ZF_OK && raw == 0)
        st = ZF_ERR_NOT_FOUND; /* nothing lies below the prefix */
    if (st != ZF_OK) {
        zf_store_listing_free(&l);
        return st;
    }
    zf_listing_sort_unique(&l);
    *out = l;
    return ZF_OK;
}
