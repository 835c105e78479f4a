/* Fuzz target: URLs and keys (src/store/http_url.c, store.c, the URL checks of store_http.c and
 * store_s3.c). Input: a URL line, an S3 endpoint line, then a key. The URL is opened as an HTTP
 * and as an S3 store (no request is made at open) and redacted; the key is checked with
 * zf_key_is_valid against an independent reading of the rule, percent-encoded and decoded back,
 * and joined to a base URL. */
#include "fuzz.h"

/* The rule of store.h, written again: non-empty, relative, no empty, "." or ".." segment, no
 * backslash (and, being a C string, no NUL). */
static bool key_ok(const char *k)
{
    if (!*k || *k == '/' || strchr(k, '\\'))
        return false;
    for (const char *s = k;;) {
        size_t n = strcspn(s, "/");
        if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
            return false;
        if (!s[n])
            return true;
        s += n + 1;
    }
}

static bool encoded_ok(const char *e, bool keep_slash)
{
    for (; *e; e++) {
        char c = *e;
        bool unres = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                     c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/');
        if (c == '%') {
            if (!strchr("0123456789ABCDEF", e[1]) || !e[1] || !strchr("0123456789ABCDEF", e[2]) ||
                !e[2])
                return false;
            e += 2;
        } else if (!unres) {
            return false;
        }
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_init();
    const uint8_t *p = data, *l1, *l2;
    size_t n = size, n1, n2;
    fz_split(&p, &n, "\n", &l1, &n1);
    fz_split(&p, &n, "\n", &l2, &n2);
    char *url = fz_strndup(l1, n1), *ep = fz_strndup(l2, n2), *key = fz_strndup(p, n);
    if (!url || !ep || !key)
        goto done;

    zf_store *s = NULL;
    zf_err err = {""};
    zf_store_options http_opts = {.retries = 0, .timeout = 1};
    if (zf_store_http_open(url, &http_opts, &s, &err) == ZF_OK) {
        FZ_CHECK(s->url && zf_store_is_remote(s), "an HTTP store");
        zf_store_close(s);
    }
    zf_store_options s3_opts = {.anonymous = true, .region = "us-east-1", .endpoint = ep};
    if (zf_store_s3_open(url, &s3_opts, &s, &err) == ZF_OK)
        zf_store_close(s);
    char *r1 = zf_url_redact(url), *r2 = r1 ? zf_url_redact(r1) : NULL;
    if (r1 && r2)
        FZ_CHECK(strcmp(r1, r2) == 0, "redacting twice: \"%s\" then \"%s\"", r1, r2);
    free(r1);
    free(r2);

    bool valid = zf_key_is_valid(key);
    FZ_CHECK(valid == key_ok(key), "zf_key_is_valid(\"%s\") = %d", key, valid);
    for (int keep = 0; keep < 2; keep++) {
        char *e = zf_url_encode((const char *)p, n, keep);
        if (!e)
            continue;
        FZ_CHECK(encoded_ok(e, keep), "encoded \"%s\"", e);
        size_t dl;
        char *d = zf_url_decode(e, strlen(e), &dl);
        FZ_CHECK(d && dl == n && memcmp(d, p, n) == 0, "decode(encode(x)) != x");
        free(d);
        free(e);
    }
    if (valid) {
        static const char base[] = "http://example.org/data.zarr";
        for (int ts = 0; ts < 2; ts++) {
            char *u = zf_url_join_key(base, key, ts);
            if (!u)
                continue;
            size_t bl = sizeof base - 1, ul = strlen(u);
            FZ_CHECK(strncmp(u, base, bl) == 0 && u[bl] == '/', "joined \"%s\"", u);
            size_t kl = ul - bl - 1 - (size_t)ts;
            FZ_CHECK(!ts || u[ul - 1] == '/', "no trailing slash: \"%s\"", u);
            size_t dl;
            char *d = zf_url_decode(u + bl + 1, kl, &dl);
            FZ_CHECK(d && strcmp(d, key) == 0, "joined \"%s\" does not decode to the key", u);
            free(d);
            free(u);
        }
    }
done:
    free(url);
    free(ep);
    free(key);
    return 0;
}
