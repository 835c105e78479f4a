/* test_azure.c — Azure Blob Storage pieces without a server: Shared Key signatures (expected
 * values from the independent Python implementation of tests/integration/remote_servers.py,
 * az_shared_key, with the emulator's published key), SAS expiry, List Blobs pages, URL
 * redaction of SAS signatures, and the URLs and options zf_store_open accepts or refuses.
 * Requests against a real emulator: tests/integration/test_remote_azure.py (Azurite). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "store_impl.h"
#include "store_tests.h"

#define AZ_KEY "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

static void sign(const zf_azure_sign_input *in, char sig[48])
{
    uint8_t key[128];
    size_t n = 0;
    ck_assert(zf_azure_key_decode(AZ_KEY, key, sizeof key, &n));
    ck_assert_uint_eq(n, 64);
    char *sts = zf_azure_string_to_sign(in);
    ck_assert_ptr_nonnull(sts);
    ck_assert(zf_azure_sign(key, n, sts, sig));
    free(sts);
}

START_TEST(shared_key)
{
    const char *ms[] = {"x-ms-version: 2021-08-06", "x-ms-date: Sat, 28 Nov 2026 14:05:43 GMT",
                        NULL};
    char sig[48];
    /* a ranged Get Blob on Azurite (the account in the endpoint's path, signed as sent) */
    zf_azure_sign_input get = {.verb = "GET", .range = "bytes=10-19", .ms_headers = ms,
                               .account = "devstoreaccount1",
                               .url = "http://127.0.0.1:10000/devstoreaccount1/data/a%20b/0.0"};
    sign(&get, sig);
    ck_assert_str_eq(sig, "vnoqhIyAqJ63yC57dwcipFCTvGpLMXe228STWBqtmtM=");
    /* List Blobs: the query's parameters decoded, sorted, one per line */
    zf_azure_sign_input list = {
        .verb = "GET", .ms_headers = ms, .account = "devstoreaccount1",
        .url = "http://h:1/devstoreaccount1/data?restype=container&comp=list&delimiter=%2F&prefix=x%20y%2F"
               "&maxresults=5"};
    sign(&list, sig);
    ck_assert_str_eq(sig, "q6jvhncZfffoLs1rEvnsb2iCcr7QaNkgXLL8/UXu26E=");
    /* a conditional Put Blob */
    const char *ms_put[] = {"x-ms-date: Sat, 28 Nov 2026 14:05:43 GMT",
                            "x-ms-version: 2021-08-06", "x-ms-blob-type: BlockBlob", NULL};
    zf_azure_sign_input put = {.verb = "PUT", .content_length = "5",
                               .content_type = "application/octet-stream",
                               .if_match = "\"0x8D\"", .ms_headers = ms_put, .account = "acct",
                               .url = "https://acct.blob.core.windows.net/data/k"};
    sign(&put, sig);
    ck_assert_str_eq(sig, "eB+YB7a3teZBdOe9oFgmBfNPQQFYFJvAk/bgDMGwFcQ=");
    /* the string itself: 12 standard fields, the x-ms headers, the resource */
    char *sts = zf_azure_string_to_sign(&put);
    ck_assert_str_eq(sts, "PUT\n\n\n5\n\napplication/octet-stream\n\n\n\"0x8D\"\n\n\n\n"
                          "x-ms-blob-type:BlockBlob\nx-ms-date:Sat, 28 Nov 2026 14:05:43 GMT\n"
                          "x-ms-version:2021-08-06\n/acct/data/k");
    free(sts);
}
END_TEST

START_TEST(keys_and_dates)
{
    uint8_t k[128];
    size_t n;
    ck_assert(!zf_azure_key_decode("", k, sizeof k, &n));
    ck_assert(!zf_azure_key_decode("abc", k, sizeof k, &n));       /* not a multiple of 4 */
    ck_assert(!zf_azure_key_decode("ab*d", k, sizeof k, &n));
    ck_assert(!zf_azure_key_decode("a=bc", k, sizeof k, &n));      /* '=' inside */
    ck_assert(zf_azure_key_decode("YWJj", k, sizeof k, &n));
    ck_assert_uint_eq(n, 3);
    ck_assert(zf_azure_key_decode("YQ==", k, sizeof k, &n));
    ck_assert_uint_eq(n, 1);
    ck_assert(!zf_azure_key_decode(AZ_KEY, k, 16, &n));             /* longer than the buffer */
    char d[32];
    zf_azure_http_date(0, d);
    ck_assert_str_eq(d, "Thu, 01 Jan 1970 00:00:00 GMT");
    zf_azure_http_date(1795878676, d);
    ck_assert_str_eq(d, "Sat, 28 Nov 2026 15:11:16 GMT");
    time_t t;
    ck_assert_int_eq(zf_azure_sas_expiry("sv=2019-12-12&se=2026-11-28T15%3A11%3A16Z&sig=x", &t),
                     1);
    ck_assert_int_eq(t, 1795878676);
    ck_assert_int_eq(zf_azure_sas_expiry("se=2026-11-28T15:11:16.1234567Z&sig=x", &t), 1);
    ck_assert_int_eq(t, 1795878676);
    ck_assert_int_eq(zf_azure_sas_expiry("se=2030-02-28&sig=x", &t), 1);
    ck_assert_int_eq(t, 1898467200);
    ck_assert_int_eq(zf_azure_sas_expiry("sv=1&sig=x", &t), 0);
    ck_assert_int_eq(zf_azure_sas_expiry("se=tomorrow&sig=x", &t), -1);
    ck_assert_int_eq(zf_azure_sas_expiry("se=2026-13-01&sig=x", &t), -1);
    ck_assert_int_eq(zf_azure_sas_expiry("se=2026-11-28T15:11:16+01:00&sig=x", &t), -1);
}
END_TEST

START_TEST(list_pages)
{
    const char *page =
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>"
        "<EnumerationResults ServiceEndpoint=\"http://h/devstoreaccount1\" ContainerName=\"c\">"
        "<Prefix>d.zarr/</Prefix><Delimiter>/</Delimiter><MaxResults>4</MaxResults><Blobs>"
        "<Blob><Name>d.zarr/.zgroup</Name><Properties><Content-Length>3</Content-Length>"
        "</Properties></Blob>"
        "<Blob><Name>d.zarr/a&amp;b</Name></Blob>"
        "<Blob><Name Encoded=\"true\">d.zarr/x%0Ay</Name></Blob>"
        "<Blob><Name>elsewhere/k</Name></Blob>"
        "<BlobPrefix><Name>d.zarr/temp/</Name></BlobPrefix>"
        "<BlobPrefix><Name>d.zarr/../</Name></BlobPrefix>"
        "</Blobs><NextMarker>2!96!MDAwMDM2IWQuemFycg--</NextMarker></EnumerationResults>";
    zf_store_listing l = {0};
    size_t cap = 0, raw = 0;
    char *next = NULL;
    zf_err err = {""};
    ck_assert_int_eq(zf_azure_list_parse(page, strlen(page), "d.zarr/", &l, &cap, &raw, &next,
                                         &err),
                     ZF_OK);
    ck_assert_uint_eq(raw, 6);
    ck_assert_uint_eq(l.n, 4);
    ck_assert_str_eq(l.entries[0].name, ".zgroup");
    ck_assert(!l.entries[0].is_prefix);
    ck_assert_str_eq(l.entries[1].name, "a&b");
    ck_assert_str_eq(l.entries[2].name, "x\ny");
    ck_assert_str_eq(l.entries[3].name, "temp");
    ck_assert(l.entries[3].is_prefix);
    ck_assert_str_eq(next, "2!96!MDAwMDM2IWQuemFycg--");
    free(next);
    zf_store_listing_free(&l);

    const char *last = "<EnumerationResults><Blobs/><NextMarker/></EnumerationResults>";
    ck_assert_int_eq(zf_azure_list_parse(last, strlen(last), "", &l, &cap, &raw, &next, &err),
                     ZF_OK);
    ck_assert_ptr_null(next);
    ck_assert_uint_eq(raw, 0);
    zf_store_listing_free(&l);

    const char *bad[] = {"<ListBucketResult/>", "<EnumerationResults>", "",
                         "<EnumerationResults><NextMarker>m</NextMarker></EnumerationResults>",
                         /* a page cut short */
                         "<EnumerationResults><Blobs><Blob><Name>a</Name></Blob><Blo"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cap = 0;
        ck_assert_int_eq(zf_azure_list_parse(bad[i], strlen(bad[i]), "", &l, &cap, &raw, &next,
                                             &err),
                         ZF_ERR_IO);
        ck_assert_ptr_null(next);
        zf_store_listing_free(&l);
    }
    /* Azure's errors have S3's shape */
    const char *e = "<?xml version=\"1.0\"?><Error><Code>ContainerNotFound</Code><Message>The "
                    "specified container does not exist.\nRequestId:1</Message></Error>";
    char code[64], msg[256];
    ck_assert(zf_s3_error_parse(e, strlen(e), code, sizeof code, msg, sizeof msg));
    ck_assert_str_eq(code, "ContainerNotFound");
}
END_TEST

START_TEST(redaction)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"https://acct.blob.core.windows.net/c/p?sv=2021-08-06&se=2026-01-01&sig=AbC%2Bd%3D",
         "https://acct.blob.core.windows.net/c/p?sv=2021-08-06&se=2026-01-01&sig=***"},
        {"az://c/p?sig=x&sp=r", "az://c/p?sig=***&sp=r"},
        {"az://c/p?SIG=x", "az://c/p?SIG=***"},
        {"https://h/k?X-Amz-Signature=abc&X-Amz-Security-Token=t&a=1#frag",
         "https://h/k?X-Amz-Signature=***&X-Amz-Security-Token=***&a=1#frag"},
        {"https://u:p@h/k?sig=", "https://u:***@h/k?sig=***"},
        {"https://h/k?signature=1&sigx=2", "https://h/k?signature=1&sigx=2"},
        {"https://h/k?a&&sig", "https://h/k?a&&sig"},
        {"data/x?sig=1", "data/x?sig=1"}, /* a local path */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *s = zf_url_redact(cases[i].in);
        ck_assert_str_eq(s, cases[i].out);
        free(s);
    }
}
END_TEST

static zf_status open_az(const char *url, const zf_store_options *o, zf_store **s, zf_err *err)
{
    unsetenv("AZURE_STORAGE_ACCOUNT_NAME");
    unsetenv("AZURE_STORAGE_ACCOUNT_KEY");
    unsetenv("AZURE_STORAGE_SAS_TOKEN");
    err->msg[0] = '\0';
    return zf_store_open(url, o, s, err);
}

START_TEST(open_urls)
{
    zf_store *s;
    zf_err err = {""};
    zf_store_options o = {.anonymous = true};
    /* refused */
    const char *invalid[] = {"az://", "az:///p", "az://Upper/p", "az://a_b/p", "az://ab/p",
                             "az://a--b/p", "az://-ab/p", "az://c/a/../x", "az://c/p#f",
                             "abfs://c@acct.example.com/p", "abfss://c@BAD.dfs.core.windows.net/p",
                             "https://u@acct.blob.core.windows.net/c/p",
                             "https://x.blob.core.windows.net/c/p"};
    o.account = "acct";
    for (size_t i = 0; i < sizeof invalid / sizeof *invalid; i++) {
        ck_assert_msg(open_az(invalid[i], &o, &s, &err) == ZF_ERR_INVALID, "%s", invalid[i]);
        ck_assert(err.msg[0]);
    }
    /* no account and no endpoint: nowhere to go */
    o.account = NULL;
    ck_assert_int_eq(open_az("az://cc1/p", &o, &s, &err), ZF_ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "-o account"), "%s", err.msg);
    /* an account named twice, differently */
    o.account = "other";
    ck_assert_int_eq(open_az("https://acct.blob.core.windows.net/c/p", &o, &s, &err),
                     ZF_ERR_INVALID);
    o.account = NULL;

    static const struct {
        const char *url, *location;
    } ok[] = {
        {"https://acct.blob.core.windows.net/ctr/p/q/", "https://acct.blob.core.windows.net/ctr/p/q"},
        {"abfss://cont@acct.dfs.core.windows.net/d.zarr",
         "https://acct.blob.core.windows.net/cont/d.zarr"},
        {"abfs://cont@acct.dfs.core.windows.net", "https://acct.blob.core.windows.net/cont/"},
        {"https://acct.blob.core.windows.net/$root/x", "https://acct.blob.core.windows.net/$root/x"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        ck_assert_msg(open_az(ok[i].url, &o, &s, &err) == ZF_OK, "%s: %s", ok[i].url, err.msg);
        ck_assert_str_eq(s->location, ok[i].location);
        ck_assert(zf_store_is_remote(s));
        zf_store_close(s);
    }
    /* -o endpoint: path-style below it, any account */
    o.endpoint = "http://127.0.0.1:10000/devstoreaccount1/";
    ck_assert_int_eq(open_az("az://data/a/b", &o, &s, &err), ZF_OK);
    ck_assert_str_eq(s->location, "http://127.0.0.1:10000/devstoreaccount1/data/a/b");
    zf_store_close(s);
    o.endpoint = "http://u:p@127.0.0.1:1/x";
    ck_assert_int_eq(open_az("az://data/a", &o, &s, &err), ZF_ERR_INVALID);
    ck_assert_ptr_null(strstr(err.msg, "u:p"));
    o.endpoint = "ftp://x";
    ck_assert_int_eq(open_az("az://data/a", &o, &s, &err), ZF_ERR_INVALID);

    /* credentials: a SAS in the URL is never shown; malformed ones refused without echo */
    o.endpoint = "http://127.0.0.1:1/devstoreaccount1";
    o.anonymous = false;
    ck_assert_int_eq(open_az("az://data/a?sv=1&se=2030-01-01&sig=SECRETSIG", &o, &s, &err),
                     ZF_OK);
    ck_assert_str_eq(s->url, "az://data/a?sv=1&se=2030-01-01&sig=***");
    ck_assert_ptr_null(strstr(s->location, "SECRETSIG"));
    zf_store_close(s);
    ck_assert_int_eq(open_az("az://data/a?sv=1&nosig=SECRET", &o, &s, &err), ZF_ERR_INVALID);
    ck_assert_ptr_null(strstr(err.msg, "SECRET"));
    ck_assert_int_eq(open_az("az://data/a?se=soon&sig=SECRET", &o, &s, &err), ZF_ERR_INVALID);
    ck_assert_ptr_null(strstr(err.msg, "SECRET"));
    setenv("AZURE_STORAGE_ACCOUNT_KEY", "not base64!", 1);
    o.account = "devstoreaccount1";
    err.msg[0] = '\0';
    ck_assert_int_eq(zf_store_open("az://data/a", &o, &s, &err), ZF_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "$AZURE_STORAGE_ACCOUNT_KEY"));
    ck_assert_ptr_null(strstr(err.msg, "not base64"));
    /* Shared Key without an account name */
    o.account = NULL;
    setenv("AZURE_STORAGE_ACCOUNT_KEY", AZ_KEY, 1);
    err.msg[0] = '\0';
    ck_assert_int_eq(zf_store_open("az://data/a", &o, &s, &err), ZF_ERR_INVALID);
    unsetenv("AZURE_STORAGE_ACCOUNT_KEY");
    /* the account from a credentials file */
    zf_credentials c = {.azure_storage_account_name = "devstoreaccount1",
                        .azure_storage_account_key = AZ_KEY};
    o.credentials = &c;
    ck_assert_int_eq(open_az("az://data/a", &o, &s, &err), ZF_OK);
    zf_store_close(s);
}
END_TEST

TCase *store_azure_tcase(void)
{
    TCase *tc = tcase_create("azure");
    tcase_add_test(tc, shared_key);
    tcase_add_test(tc, keys_and_dates);
    tcase_add_test(tc, list_pages);
    tcase_add_test(tc, redaction);
    tcase_add_test(tc, open_urls);
    return tc;
}
