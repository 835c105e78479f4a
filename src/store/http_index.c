/* http_index.c — the children of a directory from the HTML index page a web server generates for
 * it: nginx (autoindex), Apache (mod_autoindex, with its ?C=N;O=D sort links and "Parent
 * Directory"), Python's http.server, lighttpd, Caddy. Each is a list of <a href="..."> links;
 * those naming one relative path segment are the children ("name/" a prefix, "name" a key). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "store_impl.h"

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c; }

/* Case-insensitive search for needle in [s, s + n). */
static const char *find_ci(const char *s, size_t n, const char *needle)
{
    size_t m = strlen(needle);
    for (size_t i = 0; i + m <= n; i++) {
        size_t j = 0;
        while (j < m && lower(s[i + j]) == needle[j])
            j++;
        if (j == m)
            return s + i;
    }
    return NULL;
}

static size_t put_utf8(char *o, unsigned long cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decode the character references of an attribute value (&amp; &lt; &gt; &quot; &apos; &#N;
 * &#xH;) into o (at least n bytes: a reference never grows). Returns the length. */
static size_t entity_decode(const char *s, size_t n, char *o)
{
    static const struct {
        const char *name;
        char c;
    } named[] = {{"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''}};
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        if (s[i] != '&') {
            o[w++] = s[i++];
            continue;
        }
        bool done = false;
        for (size_t k = 0; k < sizeof named / sizeof *named && !done; k++) {
            size_t l = strlen(named[k].name);
            if (i + 1 + l <= n && strncasecmp(s + i + 1, named[k].name, l) == 0) {
                o[w++] = named[k].c;
                i += 1 + l;
                done = true;
            }
        }
        if (!done && i + 2 < n && s[i + 1] == '#') {
            bool hex = s[i + 2] == 'x' || s[i + 2] == 'X';
            size_t j = i + 2 + hex;
            unsigned long cp = 0;
            size_t digits = 0;
            for (; j < n && digits < 8; j++, digits++) {
                char c = lower(s[j]);
                int v = c >= '0' && c <= '9' ? c - '0'
                        : hex && c >= 'a' && c <= 'f' ? c - 'a' + 10
                                                      : -1;
                if (v < 0)
                    break;
                cp = cp * (hex ? 16 : 10) + (unsigned long)v;
            }
            /* a reference is at least as long as the UTF-8 it stands for ("&#N;" >= 4 bytes) */
            if (digits && j < n && s[j] == ';' && cp > 0 && cp <= 0x10FFFF &&
                !(cp >= 0xD800 && cp <= 0xDFFF) && put_utf8(o + w, cp) <= j + 1 - i) {
                w += put_utf8(o + w, cp);
                i = j + 1;
                done = true;
            }
        }
        if (!done)
            o[w++] = s[i++];
    }
    return w;
}

/* One href value: add it when it names a child. */
static bool take_href(const char *v, size_t n, zf_store_listing *l, size_t *cap, size_t *taken)
{
    char *dec = malloc(n + 1);
    if (!dec)
        return false;
    size_t len = entity_decode(v, n, dec);
    const char *p = dec;
    while (len && is_space(*p))
        p++, len--;
    while (len && is_space(p[len - 1]))
        len--;
    bool dot = len >= 2 && p[0] == '.' && p[1] == '/'; /* "./name" (Caddy, "./a:b") */
    bool skip = !dot && memchr(p, ':', len);           /* a scheme: an absolute URL */
    if (dot)
        p += 2, len -= 2;
    bool is_prefix = len && p[len - 1] == '/';
    if (is_prefix)
        len--;
    /* skip also: empty, absolute paths, deeper paths, sort links and queries, fragments */
    skip = skip || !len || memchr(p, '/', len) || memchr(p, '?', len) || memchr(p, '#', len);
    bool ok = true;
    if (!skip) {
        size_t nl;
        char *name = zf_url_decode(p, len, &nl);
        if (!name) {
            ok = false;
        } else {
            if (nl && nl == strlen(name) && strcmp(name, ".") != 0 && strcmp(name, "..") != 0 &&
                !strchr(name, '/') && !strchr(name, '\\')) {
                ok = zf_listing_add(l, cap, name, nl, is_prefix);
                *taken += ok;
            }
            free(name);
        }
    }
    free(dec);
    return ok;
}

zf_status zf_html_index_parse(const char *html, size_t len, zf_store_listing *out, zf_err *err)
{
    zf_store_listing l = {0};
    size_t cap = 0, links = 0, taken = 0;
    const char *end = html + len;
    for (const char *p = html; p < end;) {
        const char *lt = memchr(p, '<', (size_t)(end - p));
        if (!lt)
            break;
        p = lt + 1;
        if (end - p >= 3 && memcmp(p, "!--", 3) == 0) { /* a comment */
            const char *c = find_ci(p + 3, (size_t)(end - p - 3), "-->");
            p = c ? c + 3 : end;
            continue;
        }
        if (end - p < 2 || lower(p[0]) != 'a' || !is_space(p[1]))
            continue;
        /* the attributes of <a ...> up to '>' */
        p += 2;
        while (p < end && *p != '>') {
            while (p < end && (is_space(*p) || *p == '/'))
                p++;
            const char *name = p;
            while (p < end && !is_space(*p) && *p != '=' && *p != '>')
                p++;
            size_t name_len = (size_t)(p - name);
            while (p < end && is_space(*p))
                p++;
            const char *val = NULL;
            size_t val_len = 0;
            if (p < end && *p == '=') {
                p++;
                while (p < end && is_space(*p))
                    p++;
                if (p < end && (*p == '"' || *p == '\'')) {
                    char q = *p++;
                    val = p;
                    const char *close = memchr(p, q, (size_t)(end - p));
                    p = close ? close : end;
                    val_len = (size_t)(p - val);
                    if (p < end)
                        p++;
                } else {
                    val = p;
                    while (p < end && !is_space(*p) && *p != '>')
                        p++;
                    val_len = (size_t)(p - val);
                }
            }
            if (val && name_len == 4 && strncasecmp(name, "href", 4) == 0) {
                links++;
                if (!take_href(val, val_len, &l, &cap, &taken)) {
                    zf_store_listing_free(&l);
                    return ZF_ERR_NOMEM;
                }
            }
        }
    }
    /* A generated index says so in its title; without that, only links to children make one. */
    bool index = find_ci(html, len, "index of ") || find_ci(html, len, "directory listing for");
    if (!index && !taken) {
        zf_store_listing_free(&l);
        return zf_fail(err, ZF_ERR_UNSUPPORTED,
                       "the server's page is not a directory index (%zu links): the children "
                       "of a prefix cannot be listed", links);
    }
    zf_listing_sort_unique(&l);
    *out = l;
    return ZF_OK;
}
