/* test_gcs.c — what the GCS store parses and signs (src/store/gcs_json.c): objects.list pages
 * as the JSON API documents them (https://cloud.google.com/storage/docs/json_api/v1/objects/list)
 * and as the firebase-tools emulator sends them (prefixes repeated on every page), OAuth token
 * responses (RFC 6749 5.1), service-account keys, and the RS256 JWT, whose signature is verified
 * here with OpenSSL's EVP_DigestVerify against the public half of a key made for the test; the
 * URL and option checks of zf_store_gcs_open; and the store against gcs_test_server.py (reads,
 * ranges, stat, listings two names a page, generation-conditional writes and deletes, a missing
 * bucket, a refused token). */
#include <check.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_impl.h"
#include "store_tests.h"
#include "zarrfs/json.h"

static int entry(const zf_store_listing *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->entries[i].name, name) == 0)
            return l->entries[i].is_prefix ? 2 : 1;
    return 0;
}

START_TEST(gcs_list_page)
{
    /* a page as the JSON API reference shows one (fields trimmed) */
    const char *page =
        "{\"kind\": \"storage#objects\", \"nextPageToken\": \"CgVhL2IvYw==\",\n"
        " \"prefixes\": [\"data.zarr/temp/0/\", \"data.zarr/temp/caf\\u00e9/\"],\n"
        " \"items\": [{\"kind\": \"storage#object\", \"name\": \"data.zarr/temp/.zarray\","
        " \"size\": \"312\", \"generation\": \"1700000000000001\"},\n"
        "  {\"name\": \"data.zarr/temp/\"}, {\"name\": \"other/x\"},"
        "  {\"name\": \"data.zarr/temp/R&D <1>\"}]}";
    zf_store_listing l = {0};
    size_t cap = 0, raw = 0;
    char *token = NULL;
    zf_err err = {""};
    ck_assert_int_eq(zf_gcs_list_parse(page, strlen(page), "data.zarr/temp/", &l, &cap, &raw,
                                       &token, &err), ZF_OK);
    ck_assert_uint_eq(raw, 6);
    ck_assert_uint_eq(l.n, 4); /* the folder marker and the name elsewhere left out */
    ck_assert_int_eq(entry(&l, ".zarray"), 1);
    ck_assert_int_eq(entry(&l, "R&D <1>"), 1);
    ck_assert_int_eq(entry(&l, "0"), 2);
    ck_assert_int_eq(entry(&l, "caf\xc3\xa9"), 2);
    ck_assert_str_eq(token, "CgVhL2IvYw==");
    free(token);
    /* the emulator's next page repeats the prefixes: merged by zf_listing_sort_unique */
    const char *next = "{\"kind\":\"storage#objects\",\"prefixes\":[\"data.zarr/temp/0/\"],"
                       "\"items\":[{\"name\":\"data.zarr/temp/zarr.json\"}]}";
    ck_assert_int_eq(zf_gcs_list_parse(next, strlen(next), "data.zarr/temp/", &l, &cap, &raw,
                                       &token, &err), ZF_OK);
    ck_assert_ptr_null(token);
    zf_listing_sort_unique(&l);
    ck_assert_uint_eq(l.n, 5);
    ck_assert_int_eq(entry(&l, "zarr.json"), 1);
    zf_store_listing_free(&l);
    /* an empty listing (GCS leaves items out) */
    cap = 0;
    ck_assert_int_eq(zf_gcs_list_parse("{\"kind\":\"storage#objects\"}", 26, "", &l, &cap, &raw,
                                       &token, &err), ZF_OK);
    ck_assert_uint_eq(raw, 0);
    ck_assert_uint_eq(l.n, 0);
    /* not listings */
    const char *bad[] = {"", "[]", "{\"items\": {}}", "{\"items\": [{\"size\": 1}]}",
                         "{\"prefixes\": [1]}", "{\"nextPageToken\": 5}", "{\"items\": [",
                         "<ListBucketResult/>"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        zf_store_listing b = {0};
        size_t bc = 0;
        ck_assert_msg(zf_gcs_list_parse(bad[i], strlen(bad[i]), "", &b, &bc, &raw, &token,
                                        &err) == ZF_ERR_IO, "%s", bad[i]);
        ck_assert_ptr_null(token);
        zf_store_listing_free(&b);
    }
}
END_TEST

START_TEST(gcs_error_document)
{
    char msg[128];
    const char *e = "{\"error\": {\"code\": 403, \"message\": \"x@y does not have\\nstorage."
                    "objects.get access\", \"errors\": []}}";
    ck_assert(zf_gcs_error_parse(e, strlen(e), msg, sizeof msg));
    ck_assert_str_eq(msg, "x@y does not have storage.objects.get access");
    const char *o = "{\"error\": \"invalid_grant\", \"error_description\": \"Invalid JWT\"}";
    ck_assert(zf_gcs_error_parse(o, strlen(o), msg, sizeof msg));
    ck_assert_str_eq(msg, "Invalid JWT");
    ck_assert(!zf_gcs_error_parse("No such object: b/k", 19, msg, sizeof msg));
}
END_TEST

START_TEST(gcs_token_response)
{
    char *tok;
    int64_t secs;
    zf_err err = {""};
    const char *ok = "{\"access_token\":\"ya29.c.abc-_~.\",\"expires_in\":3599,"
                     "\"token_type\":\"Bearer\"}";
    ck_assert_int_eq(zf_gcs_token_parse(ok, strlen(ok), &tok, &secs, &err), ZF_OK);
    ck_assert_str_eq(tok, "ya29.c.abc-_~.");
    ck_assert_int_eq(secs, 3599);
    free(tok);
    const char *no_exp = "{\"access_token\":\"t\"}";
    ck_assert_int_eq(zf_gcs_token_parse(no_exp, strlen(no_exp), &tok, &secs, &err), ZF_OK);
    ck_assert_int_eq(secs, 3600);
    free(tok);
    const char *bad[] = {"{}", "{\"access_token\":\"\"}", "{\"access_token\":\"a b\"}",
                         "{\"access_token\":\"a\\r\\nX-Evil: 1\"}", "{\"access_token\":7}",
                         "{\"access_token\":\"t\",\"expires_in\":-1}",
                         "{\"access_token\":\"t\",\"expires_in\":\"60\"}",
                         "{\"access_token\":\"t\",\"token_type\":\"MAC\"}", "nope"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_msg(zf_gcs_token_parse(bad[i], strlen(bad[i]), &tok, &secs, &err) == ZF_ERR_IO,
                      "%s", bad[i]);
        ck_assert_ptr_null(tok);
    }
}
END_TEST

/* base64url (no padding) decoded, NUL-terminated. */
static char *b64url_decode(const char *s, size_t n, size_t *len)
{
    size_t padded = (n + 3) / 4 * 4;
    char *in = calloc(padded + 1, 1), *out = calloc(padded + 1, 1);
    ck_assert(in && out);
    for (size_t i = 0; i < padded; i++)
        in[i] = i < n ? (s[i] == '-' ? '+' : s[i] == '_' ? '/' : s[i]) : '=';
    int m = EVP_DecodeBlock((unsigned char *)out, (unsigned char *)in, (int)padded);
    ck_assert_int_ge(m, 0);
    *len = (size_t)m - (padded - n); /* EVP_DecodeBlock counts the padding's zero bytes */
    out[*len] = '\0';
    free(in);
    return out;
}

static char *key_json(EVP_PKEY *pk, const char *type, const char *uri)
{
    BIO *b = BIO_new(BIO_s_mem());
    ck_assert(PEM_write_bio_PrivateKey(b, pk, NULL, NULL, 0, NULL, NULL) == 1);
    char *pem;
    long n = BIO_get_mem_data(b, &pem);
    /* the PEM's newlines as JSON escapes, as in Google's key files */
    char *esc = malloc((size_t)n * 2 + 1), *o = esc;
    for (long i = 0; i < n; i++) {
        if (pem[i] == '\n')
            *o++ = '\\', *o++ = 'n';
        else
            *o++ = pem[i];
    }
    *o = '\0';
    BIO_free(b);
    char *doc;
    ck_assert(asprintf(&doc,
                       "{\"type\":\"%s\",\"project_id\":\"p\",\"private_key_id\":\"k1\","
                       "\"private_key\":\"%s\",\"client_email\":\"sa@p.iam.gserviceaccount.com\""
                       "%s%s%s}",
                       type, esc, uri ? ",\"token_uri\":\"" : "", uri ? uri : "",
                       uri ? "\"" : "") > 0);
    free(esc);
    return doc;
}

START_TEST(gcs_key_and_jwt)
{
    EVP_PKEY *pk = EVP_RSA_gen(2048);
    ck_assert_ptr_nonnull(pk);
    zf_err err = {""};
    zf_gcs_key k;
    char *doc = key_json(pk, "service_account", NULL);
    ck_assert_int_eq(zf_gcs_key_parse("key.json", doc, strlen(doc), &k, &err), ZF_OK);
    ck_assert_str_eq(k.client_email, "sa@p.iam.gserviceaccount.com");
    ck_assert_str_eq(k.token_uri, "https://oauth2.googleapis.com/token");
    free(doc);
    char *jwt;
    ck_assert_int_eq(zf_gcs_jwt(&k, "https://www.googleapis.com/auth/devstorage.read_only",
                                1700000000, &jwt, &err), ZF_OK);
    /* header.claims.signature, each base64url without padding */
    char *d1 = strchr(jwt, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    ck_assert(d1 && d2 && !strchr(d2 + 1, '.') && !strpbrk(jwt, "+/= "));
    size_t hl, cl, sl;
    char *h = b64url_decode(jwt, (size_t)(d1 - jwt), &hl);
    char *c = b64url_decode(d1 + 1, (size_t)(d2 - d1 - 1), &cl);
    char *sig = b64url_decode(d2 + 1, strlen(d2 + 1), &sl);
    yajl_val hv, cv;
    ck_assert_int_eq(zf_json_parse("header", h, hl, &hv, &err), ZF_OK);
    ck_assert_int_eq(zf_json_parse("claims", c, cl, &cv, &err), ZF_OK);
    ck_assert_str_eq(zf_json_get(hv, "alg")->u.string, "RS256");
    ck_assert_str_eq(zf_json_get(hv, "typ")->u.string, "JWT");
    ck_assert_str_eq(zf_json_get(cv, "iss")->u.string, "sa@p.iam.gserviceaccount.com");
    ck_assert_str_eq(zf_json_get(cv, "aud")->u.string, "https://oauth2.googleapis.com/token");
    ck_assert_str_eq(zf_json_get(cv, "scope")->u.string,
                     "https://www.googleapis.com/auth/devstorage.read_only");
    int64_t iat, exp;
    ck_assert(zf_json_int64(zf_json_get(cv, "iat"), &iat) && iat == 1700000000);
    ck_assert(zf_json_int64(zf_json_get(cv, "exp"), &exp) && exp == 1700003600);
    yajl_tree_free(hv);
    yajl_tree_free(cv);
    /* RSASSA-PKCS1-v1_5 with SHA-256 over "header.claims", by the key's public half */
    ck_assert_uint_eq(sl, 256);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    ck_assert(EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, pk) == 1);
    ck_assert_int_eq(EVP_DigestVerify(ctx, (unsigned char *)sig, sl, (unsigned char *)jwt,
                                      (size_t)(d2 - jwt)), 1);
    sig[10] ^= 1;
    ck_assert(EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, pk) == 1);
    ck_assert_int_ne(EVP_DigestVerify(ctx, (unsigned char *)sig, sl, (unsigned char *)jwt,
                                      (size_t)(d2 - jwt)), 1);
    EVP_MD_CTX_free(ctx);
    free(h);
    free(c);
    free(sig);
    free(jwt);
    zf_gcs_key_free(&k);
    /* keys refused */
    const char *bad[][2] = {{"authorized_user", NULL},
                            {"service_account", "http://example.com/token"},
                            {"service_account", "ftp://127.0.0.1/token"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        doc = key_json(pk, bad[i][0], bad[i][1]);
        ck_assert_int_eq(zf_gcs_key_parse("key.json", doc, strlen(doc), &k, &err),
                         ZF_ERR_INVALID);
        ck_assert_ptr_null(strstr(err.msg, "PRIVATE KEY")); /* never the key in a message */
        free(doc);
    }
    doc = key_json(pk, "service_account", "http://127.0.0.1:8080/token");
    ck_assert_int_eq(zf_gcs_key_parse("key.json", doc, strlen(doc), &k, &err), ZF_OK);
    zf_gcs_key_free(&k);
    free(doc);
    const char *notkey = "{\"type\":\"service_account\",\"client_email\":\"a@b\","
                         "\"private_key\":\"-----BEGIN PRIVATE KEY-----\\nAAAA\\n-----END "
                         "PRIVATE KEY-----\\n\"}";
    ck_assert_int_eq(zf_gcs_key_parse("key.json", notkey, strlen(notkey), &k, &err),
                     ZF_ERR_INVALID);
    EVP_PKEY_free(pk);
}
END_TEST

START_TEST(gcs_open_checks)
{
    zf_store_options o = {.anonymous = true};
    zf_store *s;
    zf_err err = {""};
    const char *bad[] = {"gs://", "gs:///x", "gs://ab/x", "gs://Upper/x", "gs://-bucket/x",
                         "gs://a..b/x", "gs://bucket/../x", "gs://bucket/a/./b",
                         "https://storage.googleapis.com/"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(zf_store_gcs_open(bad[i], &o, &s, &err) == ZF_ERR_INVALID, "%s", bad[i]);
    ck_assert_int_eq(zf_store_gcs_open("gs://era5-data_1.x/ar/full.zarr/", &o, &s, &err), ZF_OK);
    ck_assert_str_eq(s->location, "https://storage.googleapis.com/era5-data_1.x/ar/full.zarr");
    ck_assert(s->remote);
    zf_store_close(s);
    o.endpoint = "http://127.0.0.1:9199/";
    ck_assert_int_eq(zf_store_gcs_open("https://storage.googleapis.com/bkt", &o, &s, &err),
                     ZF_OK);
    ck_assert_str_eq(s->location, "http://127.0.0.1:9199/bkt/");
    zf_store_close(s);
    o.endpoint = "http://user:secret@127.0.0.1:9199";
    ck_assert_int_eq(zf_store_gcs_open("gs://bkt", &o, &s, &err), ZF_ERR_INVALID);
    ck_assert_ptr_null(strstr(err.msg, "secret"));
    o.endpoint = "storage.googleapis.com";
    ck_assert_int_eq(zf_store_gcs_open("gs://bkt", &o, &s, &err), ZF_ERR_INVALID);
}
END_TEST

/* ---- the store against gcs_test_server.py ------------------------------------------------- */

#define CHUNK 4096
#define TOKEN "ya29.unit-test-token"

static zf_status open_gcs(const test_server *sv, const char *url, zf_store **s, zf_err *err)
{
    static char endpoint[64];
    snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%d", sv->port);
    zf_store_options o = {.endpoint = endpoint, .retries = 1, .timeout = 10};
    return zf_store_gcs_open(url, &o, s, err);
}

START_TEST(gcs_store_end_to_end)
{
    test_server sv;
    const char *argv[] = {TEST_PYTHON, "-u", STORE_TEST_SRCDIR "/gcs_test_server.py", TOKEN,
                          NULL};
    if (!test_server_start(&sv, argv, NULL, false))
        return;
    unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
    setenv("GOOGLE_OAUTH_ACCESS_TOKEN", TOKEN, 1);
    zf_err err = {""};
    zf_store *s;
    ck_assert_int_eq(open_gcs(&sv, "gs://bkt/data.zarr", &s, &err), ZF_OK);
    uint8_t pattern[CHUNK];
    for (size_t i = 0; i < CHUNK; i++)
        pattern[i] = (uint8_t)(i * 13 + 5);
    const char *keys[] = {".zgroup", "many/k0", "many/k1", "many/k2", "odd name/x&y+z=w",
                          "caf\xc3\xa9/~t%"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        ck_assert_msg(zf_store_set(s, keys[i], (const uint8_t *)"{}", 2, &err) == ZF_OK, "%s",
                      err.msg);
    ck_assert_int_eq(zf_store_set(s, "a/0.0", pattern, CHUNK, &err), ZF_OK);
    /* reads: whole, range, suffix, stat */
    zf_bytes b;
    ck_assert_int_eq(zf_store_get(s, "a/0.0", &b, &err), ZF_OK);
    ck_assert_uint_eq(b.len, CHUNK);
    ck_assert_mem_eq(b.data, pattern, CHUNK);
    zf_bytes_free(&b);
    ck_assert_int_eq(zf_store_get_partial(s, "a/0.0", 100, 50, &b, &err), ZF_OK);
    ck_assert_uint_eq(b.len, 50);
    ck_assert_mem_eq(b.data, pattern + 100, 50);
    zf_bytes_free(&b);
    uint64_t total;
    ck_assert_int_eq(zf_store_get_suffix(s, "a/0.0", 10, &b, &total, &err), ZF_OK);
    ck_assert_uint_eq(total, CHUNK);
    ck_assert_mem_eq(b.data, pattern + CHUNK - 10, 10);
    zf_bytes_free(&b);
    uint64_t size;
    struct timespec mt;
    ck_assert_int_eq(zf_store_stat(s, "a/0.0", &size, &mt, &err), ZF_OK);
    ck_assert_uint_eq(size, CHUNK);
    ck_assert_int_eq(mt.tv_sec, 1714566896); /* 2024-05-01T12:34:56Z */
    ck_assert_int_eq(mt.tv_nsec, 789000000);
    ck_assert_int_eq(zf_store_get(s, "nope", &b, &err), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(zf_store_stat(s, "nope", &size, &mt, &err), ZF_ERR_NOT_FOUND);
    /* listings, two names a page (the knob): items and prefixes paged together */
    zf_gcs_list_max_results = 2;
    zf_store_listing l;
    ck_assert_msg(zf_store_list_dir(s, "", &l, &err) == ZF_OK, "%s", err.msg);
    ck_assert_uint_eq(l.n, 5);
    ck_assert_int_eq(entry(&l, ".zgroup"), 1);
    ck_assert_int_eq(entry(&l, "a"), 2);
    ck_assert_int_eq(entry(&l, "many"), 2);
    ck_assert_int_eq(entry(&l, "odd name"), 2);
    ck_assert_int_eq(entry(&l, "caf\xc3\xa9"), 2);
    zf_store_listing_free(&l);
    ck_assert_int_eq(zf_store_list_dir(s, "many", &l, &err), ZF_OK);
    ck_assert_uint_eq(l.n, 3);
    zf_store_listing_free(&l);
    ck_assert_int_eq(zf_store_list_dir(s, "nothing", &l, &err), ZF_ERR_NOT_FOUND);
    zf_gcs_list_max_results = 0;
    char stats_url[64];
    snprintf(stats_url, sizeof stats_url, "http://127.0.0.1:%d", sv.port);
    zf_store *h;
    ck_assert_int_eq(zf_store_http_open(stats_url, NULL, &h, &err), ZF_OK);
    ck_assert_int_eq(zf_store_get(h, "stats", &b, &err), ZF_OK);
    yajl_val stats;
    ck_assert_int_eq(zf_json_parse("stats", (const char *)b.data, b.len, &stats, &err), ZF_OK);
    int64_t pages;
    ck_assert(zf_json_int64(zf_json_get(stats, "pages"), &pages));
    ck_assert_int_ge(pages, 3 + 2 + 1); /* 5 names at 2 a page, 3 at 2, 0 */
    yajl_val mr = zf_json_get(stats, "max_results");
    ck_assert(YAJL_IS_ARRAY(mr) && mr->u.array.len > 0);
    ck_assert_str_eq(mr->u.array.values[0]->u.string, "2");
    yajl_tree_free(stats);
    zf_bytes_free(&b);
    zf_store_close(h);
    /* versions: the generation; writes conditional on it */
    zf_store_version v1, v2;
    ck_assert_int_eq(zf_store_read_versioned(s, "a/0.0", ZF_READ_ALL, 0, 0, &b, &v1, &err),
                     ZF_OK);
    zf_bytes_free(&b);
    ck_assert(v1.etag[0] && strspn(v1.etag, "0123456789") == strlen(v1.etag));
    ck_assert_int_eq(zf_store_read_versioned(s, "a/0.0", ZF_READ_STAT, 0, 0, &b, &v2, &err),
                     ZF_OK);
    ck_assert_str_eq(v1.etag, v2.etag);
    ck_assert_int_eq(zf_store_set_if(s, "a/0.0", pattern, 10, &v1, &err), ZF_OK);
    ck_assert_int_eq(zf_store_set_if(s, "a/0.0", pattern, 20, &v1, &err), ZF_ERR_CONFLICT);
    ck_assert_int_eq(zf_store_set_if(s, "a/0.0", pattern, 20, NULL, &err), ZF_ERR_CONFLICT);
    ck_assert_int_eq(zf_store_set_if(s, "a/new", pattern, 20, NULL, &err), ZF_OK);
    ck_assert_int_eq(zf_store_erase_if(s, "a/0.0", &v1, &err), ZF_ERR_CONFLICT);
    ck_assert_int_eq(zf_store_read_versioned(s, "a/0.0", ZF_READ_STAT, 0, 0, &b, &v2, &err),
                     ZF_OK);
    ck_assert_uint_eq(v2.size, 10);
    ck_assert_int_eq(zf_store_erase_if(s, "a/0.0", &v2, &err), ZF_OK);
    ck_assert_int_eq(zf_store_erase_if(s, "a/0.0", &v2, &err), ZF_ERR_CONFLICT);
    ck_assert_int_eq(zf_store_erase(s, "a/0.0", &err), ZF_OK); /* gone already */
    ck_assert_int_eq(zf_store_get(s, "a/0.0", &b, &err), ZF_ERR_NOT_FOUND);
    zf_store_close(s);
    /* a missing bucket; a refused token, named */
    ck_assert_int_eq(open_gcs(&sv, "gs://other/x", &s, &err), ZF_OK);
    ck_assert_int_eq(zf_store_list_dir(s, "", &l, &err), ZF_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err.msg, "bucket \"other\" does not exist"));
    zf_store_close(s);
    setenv("GOOGLE_OAUTH_ACCESS_TOKEN", "ya29.wrong", 1);
    ck_assert_int_eq(open_gcs(&sv, "gs://bkt/data.zarr", &s, &err), ZF_OK);
    ck_assert_int_eq(zf_store_get(s, ".zgroup", &b, &err), ZF_ERR_ACCESS);
    ck_assert_ptr_nonnull(strstr(err.msg, "$GOOGLE_OAUTH_ACCESS_TOKEN"));
    ck_assert_ptr_null(strstr(err.msg, "ya29.wrong"));
    zf_store_close(s);
    unsetenv("GOOGLE_OAUTH_ACCESS_TOKEN");
    test_server_stop(&sv);
}
END_TEST

TCase *store_gcs_tcase(void)
{
    TCase *tc = tcase_create("gcs");
    tcase_add_test(tc, gcs_list_page);
    tcase_add_test(tc, gcs_error_document);
    tcase_add_test(tc, gcs_token_response);
    tcase_add_test(tc, gcs_key_and_jwt);
    tcase_add_test(tc, gcs_open_checks);
    tcase_add_test(tc, gcs_store_end_to_end);
    return tc;
}
