/* azure_auth.c — Azure Blob Storage authorization pieces: the Shared Key string-to-sign of the
 * Blob service ("Authorize with Shared Key", versions 2009-09-19 and later), its HMAC-SHA256
 * signature (OpenSSL), the RFC 1123 date of x-ms-date, and the expiry (se=) of a SAS token.
 * No secret ever appears in a message. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "store_impl.h"

void zf_azure_http_date(time_t t, char buf[32])
{
    static const char *const days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(buf, 32, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday % 7], tm.tm_mday,
             months[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

typedef struct qparam {
    char *name, *value;
} qparam;

static int by_param(const void *a, const void *b)
{
    const qparam *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->value, y->value);
}

static int by_header(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Append n bytes of s to the buffer *buf (length *len, capacity *cap); false when out of memory. */
static bool put(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t nc = (*cap ? *cap : 256);
        while (nc < *len + n + 1)
            nc *= 2;
        char *nb = realloc(*buf, nc);
        if (!nb)
            return false;
        *buf = nb;
        *cap = nc;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = '\0';
    return true;
}

static bool puts_(char **buf, size_t *len, size_t *cap, const char *s)
{
    return put(buf, len, cap, s, strlen(s));
}

char *zf_azure_string_to_sign(const zf_azure_sign_input *in)
{
    char *b = NULL;
    size_t len = 0, cap = 0;
    bool ok = true;
    const char *fields[] = {in->verb, "", "", in->content_length, "", in->content_type, "",
                            "", in->if_match, in->if_none_match, "", in->range};
    for (size_t i = 0; ok && i < sizeof fields / sizeof *fields; i++)
        ok = puts_(&b, &len, &cap, fields[i] ? fields[i] : "") && put(&b, &len, &cap, "\n", 1);

    /* CanonicalizedHeaders: the x-ms-* headers, names in lower case, sorted, "name:value\n" */
    size_t nh = 0;
    while (in->ms_headers && in->ms_headers[nh])
        nh++;
    char **hs = nh ? calloc(nh, sizeof *hs) : NULL;
    if (nh && !hs)
        ok = false;
    for (size_t i = 0; ok && i < nh; i++) {
        const char *h = in->ms_headers[i], *colon = strchr(h, ':');
        size_t nl = colon ? (size_t)(colon - h) : strlen(h);
        const char *v = colon ? colon + 1 : "";
        while (*v == ' ' || *v == '\t')
            v++;
        size_t vl = strlen(v);
        while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
            vl--;
        if (!(hs[i] = malloc(nl + vl + 2))) {
            ok = false;
            break;
        }
        for (size_t k = 0; k < nl; k++)
            hs[i][k] = (char)tolower((unsigned char)h[k]);
        hs[i][nl] = ':';
        memcpy(hs[i] + nl + 1, v, vl);
        hs[i][nl + 1 + vl] = '\0';
    }
    if (ok && nh)
        qsort(hs, nh, sizeof *hs, by_header);
    for (size_t i = 0; ok && i < nh; i++)
        ok = puts_(&b, &len, &cap, hs[i]) && put(&b, &len, &cap, "\n", 1);
    for (size_t i = 0; hs && i < nh; i++)
        free(hs[i]);
    free(hs);

    /* CanonicalizedResource: "/" account, the URL's path as sent, then each query parameter
     * "\nname:value" (name in lower case, both decoded), sorted by name, a repeated name's
     * values joined with ',' */
    const char *url = in->url, *auth = strstr(url, "://");
    const char *path = auth ? auth + 3 + strcspn(auth + 3, "/?#") : url;
    size_t pl = strcspn(path, "?#");
    ok = ok && put(&b, &len, &cap, "/", 1) && puts_(&b, &len, &cap, in->account) &&
         put(&b, &len, &cap, pl ? path : "/", pl ? pl : 1);
    const char *q = path[pl] == '?' ? path + pl + 1 : NULL;
    size_t qn = 0, ql = q ? strcspn(q, "#") : 0;
    for (size_t i = 0; i < ql; i++)
        qn += q[i] == '&';
    qparam *ps = q && ql ? calloc(qn + 1, sizeof *ps) : NULL;
    size_t np = 0;
    if (q && ql && !ps)
        ok = false;
    for (const char *p = q; ok && ps && p < q + ql;) {
        size_t sl = strcspn(p, "&#");
        if (sl > (size_t)(q + ql - p))
            sl = (size_t)(q + ql - p);
        const char *eq = memchr(p, '=', sl);
        size_t kl = eq ? (size_t)(eq - p) : sl, dl;
        if (sl) {
            ps[np].name = zf_url_decode(p, kl, &dl);
            ps[np].value = eq ? zf_url_decode(eq + 1, sl - kl - 1, &dl) : strdup("");
            if (!ps[np].name || !ps[np].value) {
                free(ps[np].name);
                free(ps[np].value);
                ok = false;
                break;
            }
            for (char *c = ps[np].name; *c; c++)
                *c = (char)tolower((unsigned char)*c);
            np++;
        }
        p += sl + 1;
    }
    if (ok && np)
        qsort(ps, np, sizeof *ps, by_param);
    for (size_t i = 0; ok && i < np; i++) {
        bool same = i > 0 && strcmp(ps[i].name, ps[i - 1].name) == 0;
        if (same)
            ok = put(&b, &len, &cap, ",", 1);
        else
            ok = put(&b, &len, &cap, "\n", 1) && puts_(&b, &len, &cap, ps[i].name) &&
                 put(&b, &len, &cap, ":", 1);
        ok = ok && puts_(&b, &len, &cap, ps[i].value);
    }
    for (size_t i = 0; i < np; i++) {
        free(ps[i].name);
        free(ps[i].value);
    }
    free(ps);
    if (!ok) {
        free(b);
        return NULL;
    }
    return b;
}

bool zf_azure_key_decode(const char *b64, uint8_t *out, size_t cap, size_t *n)
{
    size_t l = strlen(b64);
    if (l == 0 || l % 4 || l / 4 * 3 > cap || l > INT32_MAX)
        return false;
    for (size_t i = 0; i < l; i++) {
        char c = b64[i];
        if (!(isalnum((unsigned char)c) || c == '+' || c == '/' || (c == '=' && i >= l - 2)))
            return false;
    }
    if (b64[l - 2] == '=' && b64[l - 1] != '=')
        return false;
    int r = EVP_DecodeBlock(out, (const unsigned char *)b64, (int)l);
    if (r < 0)
        return false;
    size_t pad = (b64[l - 1] == '=') + (b64[l - 2] == '=');
    *n = (size_t)r - pad;
    return true;
}

bool zf_azure_sign(const uint8_t *key, size_t key_len, const char *sts, char out[48])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdl = 0;
    if (key_len > INT32_MAX ||
        !HMAC(EVP_sha256(), key, (int)key_len, (const unsigned char *)sts, strlen(sts), md,
              &mdl) ||
        mdl != 32)
        return false;
    EVP_EncodeBlock((unsigned char *)out, md, 32); /* 44 characters and a NUL */
    OPENSSL_cleanse(md, sizeof md);
    return true;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant's days_from_civil). */
static long long days_from_civil(long long y, unsigned m, unsigned d)
{
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (long long)doe - 719468;
}

/* n digits at s into *v; false unless all are digits. */
static bool digits(const char *s, int n, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        *v = *v * 10 + (unsigned)(s[i] - '0');
    }
    return true;
}

int zf_azure_sas_expiry(const char *sas, time_t *expiry)
{
    *expiry = 0;
    for (const char *p = sas; p && *p;) {
        size_t sl = strcspn(p, "&");
        if (sl > 3 && strncmp(p, "se=", 3) == 0) {
            size_t dl;
            char *v = zf_url_decode(p + 3, sl - 3, &dl);
            if (!v)
                return -1;
            /* ISO 8601 UTC as SAS tokens carry it: YYYY-MM-DD, YYYY-MM-DDThh:mmZ,
             * YYYY-MM-DDThh:mm:ssZ, with optional fractional seconds */
            unsigned y, mo, d, h = 0, mi = 0, s = 0;
            bool ok = dl >= 10 && digits(v, 4, &y) && v[4] == '-' && digits(v + 5, 2, &mo) &&
                      v[7] == '-' && digits(v + 8, 2, &d) && mo >= 1 && mo <= 12 && d >= 1 &&
                      d <= 31;
            const char *t = v + 10;
            if (ok && *t == 'T') {
                ok = strlen(t) >= 6 && digits(t + 1, 2, &h) && t[3] == ':' &&
                     digits(t + 4, 2, &mi) && h < 24 && mi < 60;
                t += 6;
                if (ok && *t == ':') {
                    ok = digits(t + 1, 2, &s) && s < 61;
                    t += 3;
                    if (ok && *t == '.')
                        for (t++; *t >= '0' && *t <= '9'; t++)
                            ;
                }
                ok = ok && t[0] == 'Z' && t[1] == '\0';
            } else if (ok) {
                ok = *t == '\0';
            }
            free(v);
            if (!ok)
                return -1;
            long long days = days_from_civil(y, mo, d);
            *expiry = (time_t)(days * 86400 + h * 3600 + mi * 60 + s);
            return 1;
        }
        p += sl + (p[sl] == '&');
    }
    return 0;
}
