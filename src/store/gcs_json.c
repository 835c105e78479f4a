/* gcs_json.c — what Google Cloud Storage and Google's OAuth 2.0 token endpoint answer, and what
 * zarrfs sends them: an objects.list page (JSON API), a service-account JSON key, the RS256 JWT
 * assertion of the service-account flow (RFC 7519, RFC 7523; signed with OpenSSL's libcrypto),
 * a token response (RFC 6749 5.1) and the error document of the JSON API. No network here: the
 * store (store_gcs.c) sends and receives; tests/store and tests/fuzz call these directly. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_impl.h"
#include "zarrfs/json.h"

static const char *str_member(yajl_val v, const char *name)
{
    yajl_val m = zf_json_get(v, name);
    return m && YAJL_IS_STRING(m) ? m->u.string : NULL;
}

/* ---- objects.list -------------------------------------------------------------------------- */

/* One name of the page: below prefix, the next segment is a key (no '/' after it) or, for a
 * prefix ("prefix/child/"), a prefix. Names not below prefix, and the folder marker "prefix/"
 * itself, are counted but not listed. */
static bool add_name(zf_store_listing *out, size_t *cap, const char *prefix, const char *name,
                     bool is_prefix)
{
    size_t pl = strlen(prefix);
    if (strncmp(name, prefix, pl) != 0)
        return true;
    const char *rest = name + pl;
    size_t n = strlen(rest);
    if (is_prefix) {
        if (n < 2 || rest[n - 1] != '/' || memchr(rest, '/', n - 1))
            return true;
        n--;
    } else if (n == 0 || strchr(rest, '/')) {
        return true;
    }
    return zf_listing_add(out, cap, rest, n, is_prefix);
}

zf_status zf_gcs_list_parse(const char *json, size_t len, const char *prefix,
                            zf_store_listing *out, size_t *cap, size_t *n_raw, char **next_token,
                            zf_err *err)
{
    *n_raw = 0;
    *next_token = NULL;
    yajl_val doc;
    zf_status st = zf_json_parse("listing", json, len, &doc, err);
    if (st == ZF_ERR_NOMEM)
        return st;
    if (st != ZF_OK)
        return zf_fail(err, ZF_ERR_IO, "%s", err ? err->msg : "not valid JSON");
    yajl_val items = zf_json_get(doc, "items"), prefixes = zf_json_get(doc, "prefixes");
    yajl_val tok = zf_json_get(doc, "nextPageToken");
    if (!YAJL_IS_OBJECT(doc) || (items && !YAJL_IS_ARRAY(items)) ||
        (prefixes && !YAJL_IS_ARRAY(prefixes)) || (tok && !YAJL_IS_STRING(tok))) {
        yajl_tree_free(doc);
        return zf_fail(err, ZF_ERR_IO, "not an objects.list answer (a JSON object with items, "
                                       "prefixes and nextPageToken)");
    }
    for (size_t i = 0; st == ZF_OK && items && i < items->u.array.len; i++) {
        const char *name = str_member(items->u.array.values[i], "name");
        if (!name)
            st = zf_fail(err, ZF_ERR_IO, "objects.list: an item without a name");
        else if (!add_name(out, cap, prefix, name, false))
            st = ZF_ERR_NOMEM;
        (*n_raw)++;
    }
    for (size_t i = 0; st == ZF_OK && prefixes && i < prefixes->u.array.len; i++) {
        yajl_val p = prefixes->u.array.values[i];
        if (!YAJL_IS_STRING(p))
            st = zf_fail(err, ZF_ERR_IO, "objects.list: a prefix that is not a string");
        else if (!add_name(out, cap, prefix, p->u.string, true))
            st = ZF_ERR_NOMEM;
        (*n_raw)++;
    }
    if (st == ZF_OK && tok && tok->u.string[0] &&
        !(*next_token = strdup(tok->u.string)))
        st = ZF_ERR_NOMEM;
    yajl_tree_free(doc);
    return st;
}

bool zf_gcs_error_parse(const char *json, size_t len, char *msg, size_t msg_n)
{
    yajl_val doc;
    if (zf_json_parse("error", json, len, &doc, NULL) != ZF_OK)
        return false;
    const char *m = str_member(zf_json_get(doc, "error"), "message");
    if (!m) /* OAuth errors (RFC 6749 5.2): "error" a string, "error_description" */
        m = str_member(doc, "error_description");
    if (!m)
        m = str_member(doc, "error");
    if (m) {
        snprintf(msg, msg_n, "%s", m);
        for (char *c = msg; *c; c++) /* one line in a log */
            if ((unsigned char)*c < 0x20)
                *c = ' ';
    }
    yajl_tree_free(doc);
    return m != NULL;
}

/* ---- service-account keys and tokens --------------------------------------------------------- */

#define KEY_FILE_MAX (64 * 1024)

void zf_gcs_key_free(zf_gcs_key *k)
{
    free(k->client_email);
    free(k->token_uri);
    EVP_PKEY_free(k->pkey);
    memset(k, 0, sizeof *k);
}

/* Loopback hosts, the only ones a token_uri may name over plain http (test servers). */
static bool loopback_http(const char *uri)
{
    static const char *const ok[] = {"http://127.0.0.1:", "http://127.0.0.1/", "http://localhost:",
                                     "http://localhost/", "http://[::1]:", "http://[::1]/"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        if (strncmp(uri, ok[i], strlen(ok[i])) == 0)
            return true;
    return false;
}

/* A string sent inside the JWT's JSON text and in messages: printable ASCII without '"' or '\'
 * (e-mail addresses and URLs are), so that it needs no escaping. */
static bool plain(const char *s)
{
    for (; *s; s++)
        if (*s < 0x20 || *s > 0x7e || *s == '"' || *s == '\\')
            return false;
    return true;
}

zf_status zf_gcs_key_parse(const char *path, const char *json, size_t len, zf_gcs_key *out,
                           zf_err *err)
{
    memset(out, 0, sizeof *out);
    yajl_val doc;
    zf_status st = zf_json_parse(path, json, len, &doc, err);
    if (st != ZF_OK)
        return st == ZF_ERR_NOMEM ? st : zf_fail(err, ZF_ERR_INVALID, "%s: not a JSON key file", path);
    const char *type = str_member(doc, "type"), *email = str_member(doc, "client_email");
    const char *uri = str_member(doc, "token_uri");
    yajl_val pk = zf_json_get(doc, "private_key");
    if (!uri)
        uri = "https://oauth2.googleapis.com/token";
    if (!type || strcmp(type, "service_account") != 0)
        st = zf_fail(err, ZF_ERR_INVALID,
                     "%s: not a service-account key (\"type\": \"service_account\"); user "
                     "credentials of gcloud are not read: give an access token instead "
                     "(gcloud auth print-access-token)", path);
    else if (!email || !*email || !plain(email))
        st = zf_fail(err, ZF_ERR_INVALID, "%s: no valid \"client_email\"", path);
    else if (!pk || !YAJL_IS_STRING(pk))
        st = zf_fail(err, ZF_ERR_INVALID, "%s: no \"private_key\"", path);
    else if (!plain(uri) || !(strncmp(uri, "https://", 8) == 0 || loopback_http(uri)))
        st = zf_fail(err, ZF_ERR_INVALID,
                     "%s: \"token_uri\" must be an https:// URL (http:// only on 127.0.0.1)",
                     path);
    if (st == ZF_OK) {
        const char *pem = pk->u.string;
        BIO *bio = BIO_new_mem_buf(pem, -1);
        out->pkey = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
        BIO_free(bio);
        if (!bio)
            st = ZF_ERR_NOMEM;
        else if (!out->pkey || EVP_PKEY_base_id(out->pkey) != EVP_PKEY_RSA)
            st = zf_fail(err, ZF_ERR_INVALID, "%s: \"private_key\" is not a PEM RSA private key",
                         path);
        else if (!(out->client_email = strdup(email)) || !(out->token_uri = strdup(uri)))
            st = ZF_ERR_NOMEM;
        explicit_bzero(pk->u.string, strlen(pk->u.string));
    }
    yajl_tree_free(doc);
    if (st != ZF_OK)
        zf_gcs_key_free(out);
    return st;
}

zf_status zf_gcs_key_load(const char *path, zf_gcs_key *out, zf_err *err)
{
    memset(out, 0, sizeof *out);
    zf_status st = zf_secret_file_check(path, err);
    if (st != ZF_OK)
        return st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return zf_fail(err, errno == ENOENT ? ZF_ERR_NOT_FOUND : ZF_ERR_IO, "%s: %s", path,
                       strerror(errno));
    char *buf = malloc(KEY_FILE_MAX + 1);
    ssize_t n = buf ? zf_pread_full(fd, buf, KEY_FILE_MAX + 1, 0) : -1;
    int e = errno;
    close(fd);
    if (!buf)
        return ZF_ERR_NOMEM;
    if (n < 0)
        st = zf_fail(err, ZF_ERR_IO, "%s: %s", path, strerror(e));
    else if (n > KEY_FILE_MAX)
        st = zf_fail(err, ZF_ERR_INVALID, "%s: a key file larger than 64 KiB", path);
    else
        st = zf_gcs_key_parse(path, buf, (size_t)n, out, err);
    explicit_bzero(buf, KEY_FILE_MAX + 1);
    free(buf);
    return st;
}

/* base64url without padding (RFC 7515 2) of n bytes, malloc'ed. */
static char *b64url(const unsigned char *in, size_t n)
{
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    if (!out)
        return NULL;
    int len = EVP_EncodeBlock((unsigned char *)out, in, (int)n);
    while (len > 0 && out[len - 1] == '=')
        len--;
    out[len] = '\0';
    for (char *c = out; *c; c++)
        *c = *c == '+' ? '-' : *c == '/' ? '_' : *c;
    return out;
}

zf_status zf_gcs_jwt(const zf_gcs_key *k, const char *scope, int64_t iat, char **out,
                     zf_err *err)
{
    *out = NULL;
    static const char header[] = "{\"alg\":\"RS256\",\"typ\":\"JWT\"}";
    char *claims = NULL, *h64 = NULL, *c64 = NULL, *input = NULL, *s64 = NULL;
    unsigned char *sig = NULL;
    size_t siglen = 0;
    zf_status st = ZF_ERR_NOMEM;
    EVP_MD_CTX *ctx = NULL;
    if (asprintf(&claims,
                 "{\"iss\":\"%s\",\"scope\":\"%s\",\"aud\":\"%s\",\"iat\":%" PRId64
                 ",\"exp\":%" PRId64 "}",
                 k->client_email, scope, k->token_uri, iat, iat + 3600) < 0) {
        claims = NULL;
        goto out;
    }
    if (!(h64 = b64url((const unsigned char *)header, strlen(header))) ||
        !(c64 = b64url((const unsigned char *)claims, strlen(claims))) ||
        asprintf(&input, "%s.%s", h64, c64) < 0) {
        input = NULL;
        goto out;
    }
    if (!(ctx = EVP_MD_CTX_new()))
        goto out;
    if (EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, k->pkey) != 1 ||
        EVP_DigestSign(ctx, NULL, &siglen, (const unsigned char *)input, strlen(input)) != 1 ||
        !(sig = malloc(siglen ? siglen : 1)) ||
        EVP_DigestSign(ctx, sig, &siglen, (const unsigned char *)input, strlen(input)) != 1) {
        st = sig || !siglen ? zf_fail(err, ZF_ERR_IO, "%s: RS256 signing failed (OpenSSL)",
                                      k->client_email)
                            : ZF_ERR_NOMEM;
        goto out;
    }
    if (!(s64 = b64url(sig, siglen)) || asprintf(out, "%s.%s", input, s64) < 0) {
        *out = NULL;
        goto out;
    }
    st = ZF_OK;
out:
    EVP_MD_CTX_free(ctx);
    free(claims);
    free(h64);
    free(c64);
    free(input);
    free(sig);
    free(s64);
    return st;
}

zf_status zf_gcs_token_parse(const char *json, size_t len, char **token, int64_t *expires_in,
                             zf_err *err)
{
    *token = NULL;
    *expires_in = 0;
    yajl_val doc;
    zf_status st = zf_json_parse("token response", json, len, &doc, err);
    if (st != ZF_OK)
        return st == ZF_ERR_NOMEM ? st
                                  : zf_fail(err, ZF_ERR_IO, "the token response is not JSON");
    yajl_val t = zf_json_get(doc, "access_token"), e = zf_json_get(doc, "expires_in");
    const char *type = str_member(doc, "token_type");
    int64_t secs = 3600; /* RFC 6749 5.1: expires_in is RECOMMENDED; Google sends it */
    bool ok = t && YAJL_IS_STRING(t) && t->u.string[0];
    for (const char *c = ok ? t->u.string : ""; *c; c++)
        if (*c <= 0x20 || *c > 0x7e) /* it goes into a header line */
            ok = false;
    if (!ok)
        st = zf_fail(err, ZF_ERR_IO, "the token response has no valid \"access_token\"");
    else if (type && strcasecmp(type, "Bearer") != 0)
        st = zf_fail(err, ZF_ERR_IO, "the token response gives a %s token, not a Bearer one",
                     plain(type) ? type : "?");
    else if (e && (!zf_json_int64(e, &secs) || secs <= 0 || secs > 7 * 86400))
        st = zf_fail(err, ZF_ERR_IO, "the token response's \"expires_in\" is not a number of "
                                     "seconds up to a week");
    else if (!(*token = strdup(t->u.string)))
        st = ZF_ERR_NOMEM;
    if (st == ZF_OK)
        *expires_in = secs;
    if (ok)
        explicit_bzero(t->u.string, strlen(t->u.string));
    yajl_tree_free(doc);
    return st;
}
