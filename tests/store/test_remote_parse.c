/* Unit tests for what the remote stores parse and build: HTML index pages as nginx, Apache and
 * Python's http.server write them, S3 ListObjectsV2 and error documents, AWS credentials and
 * config files, keys → URLs, and the S3 store's open-time checks. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store_impl.h"
#include "zarrfs/store.h"

#include "store_tests.h"

/* The entry called name in l: 1 a key, 2 a prefix, 0 absent. */
static int entry(const zf_store_listing *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->entries[i].name, name) == 0)
            return l->entries[i].is_prefix ? 2 : 1;
    return 0;
}

static void parse_page(const char *html, zf_store_listing *l)
{
    zf_err err = {""};
    ck_assert_msg(zf_html_index_parse(html, strlen(html), l, &err) == ZF_OK, "%s", err.msg);
}

/* nginx 1.22 autoindex: <pre> lines, CRLF, names over 50 characters cut short in the text. */
static const char nginx_page[] =
    "<html>\r\n<head><title>Index of /data.zarr/</title></head>\r\n<body>\r\n"
    "<h1>Index of /data.zarr/</h1><hr><pre><a href=\"../\">../</a>\r\n"
    "<a href=\"a%20b/\">a b/</a>                                               "
    "03-Jan-2024 10:00                   -\r\n"
    "<a href=\"temperature/\">temperature/</a>                                       "
    "03-Jan-2024 10:00                   -\r\n"
    "<a href=\".zattrs\">.zattrs</a>                                            "
    "03-Jan-2024 10:00                   2\r\n"
    "<a href=\".zgroup\">.zgroup</a>                                            "
    "03-Jan-2024 10:00                  24\r\n"
    "<a href=\"x%26y.bin\">x&amp;y.bin</a>                                          "
    "03-Jan-2024 10:00                  10\r\n"
    "<a href=\"a-very-long-file-name-that-nginx-cuts-short-in-the-text.bin\">"
    "a-very-long-file-name-that-nginx-cuts-short-in-t..&gt;</a> 03-Jan-2024 10:00      10\r\n"
    "</pre><hr></body>\r\n</html>\r\n";

START_TEST(html_nginx)
{
    zf_store_listing l;
    parse_page(nginx_page, &l);
    ck_assert_uint_eq(l.n, 6);
    ck_assert_int_eq(entry(&l, "a b"), 2);
    ck_assert_int_eq(entry(&l, "temperature"), 2);
    ck_assert_int_eq(entry(&l, ".zattrs"), 1);
    ck_assert_int_eq(entry(&l, ".zgroup"), 1);
    ck_assert_int_eq(entry(&l, "x&y.bin"), 1);
    ck_assert_int_eq(entry(&l, "a-very-long-file-name-that-nginx-cuts-short-in-the-text.bin"), 1);
    ck_assert_int_eq(entry(&l, ".."), 0);
    zf_store_listing_free(&l);
}
END_TEST

/* Apache 2.4 mod_autoindex, FancyIndexing in a table: sort links, an absolute "Parent Directory"
 * link, '&' written as &amp; in hrefs, and with IconsAreLinks each name linked twice. */
static const char apache_page[] =
    "<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 3.2 Final//EN\">\n<html>\n <head>\n"
    "  <title>Index of /data.zarr</title>\n </head>\n <body>\n<h1>Index of /data.zarr</h1>\n"
    "  <table>\n   <tr><th valign=\"top\"><img src=\"/icons/blank.gif\" alt=\"[ICO]\"></th>"
    "<th><a href=\"?C=N;O=D\">Name</a></th><th><a href=\"?C=M;O=A\">Last modified</a></th>"
    "<th><a href=\"?C=S;O=A\">Size</a></th><th><a href=\"?C=D;O=A\">Description</a></th></tr>\n"
    "   <tr><th colspan=\"5\"><hr></th></tr>\n"
    "<tr><td valign=\"top\"><img src=\"/icons/back.gif\" alt=\"[PARENTDIR]\"></td><td>"
    "<a href=\"/\">Parent Directory</a></td><td>&nbsp;</td><td align=\"right\">  - </td>"
    "<td>&nbsp;</td></tr>\n"
    "<tr><td valign=\"top\"><a href=\".zattrs\"><img src=\"/icons/unknown.gif\" alt=\"[   ]\">"
    "</a></td><td><a href=\".zattrs\">.zattrs</a></td><td align=\"right\">2024-01-03 10:00  "
    "</td><td align=\"right\">  2 </td><td>&nbsp;</td></tr>\n"
    "<tr><td valign=\"top\"><a href=\"my%20array/\"><img src=\"/icons/folder.gif\" "
    "alt=\"[DIR]\"></a></td><td><a href=\"my%20array/\">my array/</a></td>"
    "<td align=\"right\">2024-01-03 10:00  </td><td align=\"right\">  - </td><td>&nbsp;</td>"
    "</tr>\n"
    "<tr><td valign=\"top\"><img src=\"/icons/unknown.gif\" alt=\"[   ]\"></td><td>"
    "<a href=\"R&amp;D.txt\">R&amp;D.txt</a></td><td align=\"right\">2024-01-03 10:00  </td>"
    "<td align=\"right\"> 12 </td><td>&nbsp;</td></tr>\n"
    "<tr><td valign=\"top\"><img src=\"/icons/unknown.gif\" alt=\"[   ]\"></td><td>"
    "<A HREF='0.0'>0.0</A></td><td align=\"right\">2024-01-03 10:00  </td>"
    "<td align=\"right\">4.0K</td><td>&nbsp;</td></tr>\n"
    "   <tr><th colspan=\"5\"><hr></th></tr>\n</table>\n"
    "<address>Apache/2.4.57 (Debian) Server at localhost Port 80</address>\n</body></html>\n";

START_TEST(html_apache)
{
    zf_store_listing l;
    parse_page(apache_page, &l);
    ck_assert_uint_eq(l.n, 4);
    ck_assert_int_eq(entry(&l, ".zattrs"), 1);
    ck_assert_int_eq(entry(&l, "my array"), 2);
    ck_assert_int_eq(entry(&l, "R&D.txt"), 1);
    ck_assert_int_eq(entry(&l, "0.0"), 1);
    zf_store_listing_free(&l);
}
END_TEST

/* Python 3.11 http.server (SimpleHTTPRequestHandler.list_directory): names quoted with
 * urllib.parse.quote (UTF-8), shown with html.escape; symbolic links shown with '@'. */
static const char python_page[] =
    "<!DOCTYPE HTML>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    "<title>Directory listing for /data.zarr/</title>\n</head>\n<body>\n"
    "<h1>Directory listing for /data.zarr/</h1>\n<hr>\n<ul>\n"
    "<li><a href=\".zgroup\">.zgroup</a></li>\n"
    "<li><a href=\"a%20b/\">a b/</a></li>\n"
    "<li><a href=\"caf%C3%A9\">caf\xc3\xa9</a></li>\n"
    "<li><a href=\"link%40\">link@</a></li>\n"
    "<li><a href=\"x%26y\">x&amp;y</a></li>\n"
    "<li><a href=\"%25literal\">%literal</a></li>\n"
    "</ul>\n<hr>\n</body>\n</html>\n";

START_TEST(html_python)
{
    zf_store_listing l;
    parse_page(python_page, &l);
    ck_assert_uint_eq(l.n, 6);
    ck_assert_int_eq(entry(&l, ".zgroup"), 1);
    ck_assert_int_eq(entry(&l, "a b"), 2);
    ck_assert_int_eq(entry(&l, "caf\xc3\xa9"), 1);
    ck_assert_int_eq(entry(&l, "link@"), 1);
    ck_assert_int_eq(entry(&l, "x&y"), 1);
    ck_assert_int_eq(entry(&l, "%literal"), 1);
    zf_store_listing_free(&l);
}
END_TEST

START_TEST(html_edge_cases)
{
    zf_store_listing l;
    zf_err err = {""};
    /* an empty directory in Python: no links, but an index all the same */
    parse_page("<html><head><title>Directory listing for /e/</title></head><body><ul>\n</ul>"
               "</body></html>",
               &l);
    ck_assert_uint_eq(l.n, 0);
    zf_store_listing_free(&l);
    /* skipped: absolute URLs, fragments, queries, deeper paths, ".", encoded '/', commented out;
     * kept: "./name" (Caddy), a relative name with a ':' after "./", unquoted and numeric refs */
    parse_page("<title>Index of /x/</title><a href=\"http://example.com/a\">a</a>"
               "<a href=\"//host/b\">b</a><a href=\"#top\">t</a><a href=\"c?x=1\">c</a>"
               "<a href=\"d/e\">d</a><a href=\"./\">.</a><a href=\"a%2Fb\">x</a>"
               "<!-- <a href=\"hidden\">h</a> --><a href=\"mailto:x@y\">m</a>"
               "<a href=\"./kept/\">k</a><a href=\"./a:b\">ab</a><a href=unquoted>u</a>"
               "<a class=\"x\" href = \"&#x41;&#66;\">AB</a><a href=\"%00nul\">n</a>",
               &l);
    ck_assert_uint_eq(l.n, 4);
    ck_assert_int_eq(entry(&l, "kept"), 2);
    ck_assert_int_eq(entry(&l, "a:b"), 1);
    ck_assert_int_eq(entry(&l, "unquoted"), 1);
    ck_assert_int_eq(entry(&l, "AB"), 1);
    zf_store_listing_free(&l);
    /* not an index */
    const char *not_index[] = {
        "<html><body><p>Welcome to nginx!</p></body></html>",
        "<html><body><a href=\"https://example.com/\">home</a><a href=\"/about\">x</a></body>",
        "",
    };
    for (size_t i = 0; i < sizeof not_index / sizeof *not_index; i++) {
        ck_assert_int_eq(zf_html_index_parse(not_index[i], strlen(not_index[i]), &l, &err),
                         ZF_ERR_UNSUPPORTED);
        ck_assert_msg(strstr(err.msg, "cannot be listed"), "%s", err.msg);
    }
}
END_TEST

/* ListObjectsV2 as the AWS documentation shows it, with a folder marker, common prefixes and
 * entities. */
static const char s3_page[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
    "  <Name>example-bucket</Name>\n  <Prefix>data.zarr/temp/</Prefix>\n"
    "  <KeyCount>6</KeyCount>\n  <MaxKeys>3</MaxKeys>\n  <Delimiter>/</Delimiter>\n"
    "  <IsTruncated>true</IsTruncated>\n"
    "  <ContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</ContinuationToken>\n"
    "  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbY+LgveDs2J/wm36Hy4vbOwM=&amp;2"
    "</NextContinuationToken>\n"
    "  <Contents>\n    <Key>data.zarr/temp/</Key>\n"
    "    <LastModified>2009-10-12T17:50:30.000Z</LastModified>\n"
    "    <ETag>&quot;d41d8cd98f00b204e9800998ecf8427e&quot;</ETag>\n    <Size>0</Size>\n"
    "    <StorageClass>STANDARD</StorageClass>\n  </Contents>\n"
    "  <Contents>\n    <Key>data.zarr/temp/.zarray</Key>\n"
    "    <LastModified>2009-10-12T17:50:30.000Z</LastModified>\n"
    "    <ETag>&quot;fba9dede5f27731c9771645a39863328&quot;</ETag>\n    <Size>434</Size>\n"
    "    <StorageClass>STANDARD</StorageClass>\n  </Contents>\n"
    "  <Contents>\n    <Key>data.zarr/temp/R&amp;D &lt;1&gt;</Key>\n"
    "    <Size>12</Size>\n  </Contents>\n"
    "  <Contents><Key>other/outside</Key><Size>1</Size></Contents>\n"
    "  <CommonPrefixes>\n    <Prefix>data.zarr/temp/0/</Prefix>\n  </CommonPrefixes>\n"
    "  <CommonPrefixes>\n    <Prefix>data.zarr/temp/caf&#233;/</Prefix>\n  </CommonPrefixes>\n"
    "</ListBucketResult>\n";

START_TEST(s3_list_page)
{
    zf_store_listing l = {0};
    size_t cap = 0, raw = 0;
    char *token = NULL;
    zf_err err = {""};
    ck_assert_int_eq(zf_s3_list_parse(s3_page, strlen(s3_page), "data.zarr/temp/", &l, &cap,
                                      &raw, &token, &err),
                     ZF_OK);
    ck_assert_uint_eq(raw, 6);
    ck_assert_uint_eq(l.n, 4);
    ck_assert_int_eq(entry(&l, ".zarray"), 1);
    ck_assert_int_eq(entry(&l, "R&D <1>"), 1);
    ck_assert_int_eq(entry(&l, "0"), 2);
    ck_assert_int_eq(entry(&l, "caf\xc3\xa9"), 2);
    ck_assert_str_eq(token, "1ueGcxLPRx1Tr/XYExHnhbY+LgveDs2J/wm36Hy4vbOwM=&2");
    free(token);
    /* a last page appends; root listing ("" prefix) */
    const char *last = "<ListBucketResult><IsTruncated>false</IsTruncated>"
                       "<Contents><Key>zarr.json</Key></Contents>"
                       "<CommonPrefixes><Prefix>a/</Prefix></CommonPrefixes>"
                       "<NextContinuationToken>ignored</NextContinuationToken>"
                       "</ListBucketResult>";
    ck_assert_int_eq(zf_s3_list_parse(last, strlen(last), "", &l, &cap, &raw, &token, &err),
                     ZF_OK);
    ck_assert_ptr_null(token);
    ck_assert_uint_eq(raw, 2);
    ck_assert_uint_eq(l.n, 6);
    ck_assert_int_eq(entry(&l, "a"), 2);
    ck_assert_int_eq(entry(&l, "zarr.json"), 1);
    zf_store_listing_free(&l);
    cap = 0;
    /* an empty listing, then documents that are not listings */
    const char *none = "<?xml version=\"1.0\"?><ListBucketResult xmlns=\"http://s3.amazonaws.com/"
                       "doc/2006-03-01/\"><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated>"
                       "</ListBucketResult>";
    ck_assert_int_eq(zf_s3_list_parse(none, strlen(none), "x/", &l, &cap, &raw, &token, &err),
                     ZF_OK);
    ck_assert_uint_eq(raw, 0);
    const char *bad[] = {"<Error><Code>AccessDenied</Code></Error>", "not xml", "",
                         "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
                         "<ListBucketResult><Contents><Key>x</Key></Contents>"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        zf_store_listing b = {0};
        size_t bc = 0;
        ck_assert_int_eq(zf_s3_list_parse(bad[i], strlen(bad[i]), "", &b, &bc, &raw, &token, &err),
                         ZF_ERR_IO);
        zf_store_listing_free(&b);
    }
    /* external entities are never loaded */
    const char *xxe = "<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]>"
                      "<ListBucketResult><Contents><Key>&e;</Key></Contents></ListBucketResult>";
    ck_assert_int_eq(zf_s3_list_parse(xxe, strlen(xxe), "", &l, &cap, &raw, &token, &err), ZF_OK);
    for (size_t i = 0; i < l.n; i++)
        ck_assert(!strstr(l.entries[i].name, "root"));
    zf_store_listing_free(&l);
}
END_TEST

START_TEST(s3_error_document)
{
    const char *doc =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SignatureDoesNotMatch</Code>"
        "<Message>The request signature we calculated does not match the signature you "
        "provided.\nCheck your key &amp; signing method.</Message>"
        "<StringToSign>AWS4-HMAC-SHA256...</StringToSign><RequestId>4442587FB7D0A2F9</RequestId>"
        "</Error>";
    char code[64], msg[256];
    ck_assert(zf_s3_error_parse(doc, strlen(doc), code, sizeof code, msg, sizeof msg));
    ck_assert_str_eq(code, "SignatureDoesNotMatch");
    ck_assert_str_eq(msg, "The request signature we calculated does not match the signature you "
                          "provided. Check your key & signing method.");
    ck_assert(!zf_s3_error_parse("", 0, code, sizeof code, msg, sizeof msg));
    ck_assert(!zf_s3_error_parse("<html/>", 7, code, sizeof code, msg, sizeof msg));
}
END_TEST

static const char creds_text[] =
    "# AWS credentials\n"
    "[default]\n"
    "aws_access_key_id = AKIADEFAULT\n"
    "aws_secret_access_key=secret/default+key\n"
    "\n"
    "; another comment\n"
    "[ work ]  \r\n"
    "AWS_ACCESS_KEY_ID: AKIAWORK\r\n"
    "aws_secret_access_key   =   work secret with spaces #not a comment  \r\n"
    "aws_session_token = token==\r\n"
    "s3 =\n"
    "    region = nested-ignored\n"
    "region = eu-west-1\n"
    "[profile work]\n"
    "aws_access_key_id = AKIACONFIG\n";

START_TEST(ini_files)
{
    char *v = NULL;
    ck_assert(zf_ini_get(creds_text, "default", "aws_access_key_id", &v));
    ck_assert_str_eq(v, "AKIADEFAULT");
    free(v);
    ck_assert(zf_ini_get(creds_text, "default", "aws_secret_access_key", &v));
    ck_assert_str_eq(v, "secret/default+key");
    free(v);
    ck_assert(zf_ini_get(creds_text, "work", "aws_access_key_id", &v));
    ck_assert_str_eq(v, "AKIAWORK");
    free(v);
    ck_assert(zf_ini_get(creds_text, "work", "aws_secret_access_key", &v));
    ck_assert_str_eq(v, "work secret with spaces #not a comment");
    free(v);
    ck_assert(zf_ini_get(creds_text, "work", "aws_session_token", &v));
    ck_assert_str_eq(v, "token==");
    free(v);
    ck_assert(zf_ini_get(creds_text, "work", "region", &v));
    ck_assert_str_eq(v, "eu-west-1");
    free(v);
    ck_assert(zf_ini_get(creds_text, "profile work", "aws_access_key_id", &v));
    ck_assert_str_eq(v, "AKIACONFIG");
    free(v);
    ck_assert(!zf_ini_get(creds_text, "default", "aws_session_token", &v));
    ck_assert(!zf_ini_get(creds_text, "missing", "aws_access_key_id", &v));
    ck_assert(!zf_ini_get(creds_text, "Default", "aws_access_key_id", &v));
    ck_assert(!zf_ini_get("aws_access_key_id = outside\n", "default", "aws_access_key_id", &v));
    ck_assert(!zf_ini_get("", "default", "x", &v));
    /* as in configparser, an indented line after a value continues it, even a section header */
    ck_assert(!zf_ini_get("[a]\nk = v\n\n  [b]\nk = w\n", "b", "k", &v));
    ck_assert(zf_ini_get("[a]\nk = v\n\n  [b]\nk = w\n", "a", "k", &v));
    ck_assert_str_eq(v, "v");
    free(v);
}
END_TEST

static char tmpdir[64];

static void write_text(const char *name, const char *text, char *path, size_t n)
{
    snprintf(path, n, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void clear_aws_env(void)
{
    const char *vars[] = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                          "AWS_SECURITY_TOKEN", "AWS_PROFILE", "AWS_REGION",
                          "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3",
                          "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        unsetenv(vars[i]);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/zf-aws-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    setenv("HOME", tmpdir, 1); /* no ~/.aws there */
}

START_TEST(aws_credentials)
{
    clear_aws_env();
    zf_aws_credentials c;
    zf_err err = {""};
    ck_assert_int_eq(zf_aws_credentials_load(NULL, &c, &err), ZF_ERR_NOT_FOUND);
    ck_assert_msg(strstr(err.msg, "no AWS credentials") && strstr(err.msg, "anonymous"), "%s",
                  err.msg);
    char path[256], cpath[256];
    write_text("creds", creds_text, path, sizeof path);
    write_text("config", "[profile only-config]\naws_access_key_id=CID\naws_secret_access_key="
                         "CSECRET\n[profile work]\nregion = ap-south-1\n",
               cpath, sizeof cpath);
    setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
    setenv("AWS_CONFIG_FILE", cpath, 1);
    ck_assert_int_eq(zf_aws_credentials_load(NULL, &c, &err), ZF_OK);
    ck_assert_str_eq(c.access_key, "AKIADEFAULT");
    ck_assert_str_eq(c.secret_key, "secret/default+key");
    ck_assert_ptr_null(c.session_token);
    ck_assert_msg(strstr(c.source, "[default]"), "%s", c.source);
    zf_aws_credentials_free(&c);
    setenv("AWS_PROFILE", "work", 1);
    ck_assert_int_eq(zf_aws_credentials_load(NULL, &c, &err), ZF_OK);
    ck_assert_str_eq(c.access_key, "AKIAWORK");
    ck_assert_str_eq(c.session_token, "token==");
    zf_aws_credentials_free(&c);
    char *region = zf_aws_config_region(NULL);
    ck_assert_str_eq(region, "ap-south-1");
    free(region);
    ck_assert_ptr_null(zf_aws_config_region("default"));
    /* an explicit profile; keys only in the config file */
    ck_assert_int_eq(zf_aws_credentials_load("only-config", &c, &err), ZF_OK);
    ck_assert_str_eq(c.access_key, "CID");
    zf_aws_credentials_free(&c);
    ck_assert_int_eq(zf_aws_credentials_load("nope", &c, &err), ZF_ERR_NOT_FOUND);
    ck_assert_msg(strstr(err.msg, "[nope]"), "%s", err.msg);
    /* the environment wins unless a profile is named */
    setenv("AWS_ACCESS_KEY_ID", "AKIAENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "envsecret", 1);
    setenv("AWS_SESSION_TOKEN", "envtoken", 1);
    ck_assert_int_eq(zf_aws_credentials_load(NULL, &c, &err), ZF_OK);
    ck_assert_str_eq(c.access_key, "AKIAENV");
    ck_assert_str_eq(c.session_token, "envtoken");
    zf_aws_credentials_free(&c);
    ck_assert_int_eq(zf_aws_credentials_load("default", &c, &err), ZF_OK);
    ck_assert_str_eq(c.access_key, "AKIADEFAULT");
    zf_aws_credentials_free(&c);
    unsetenv("AWS_SECRET_ACCESS_KEY");
    ck_assert_int_eq(zf_aws_credentials_load(NULL, &c, &err), ZF_ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "AWS_SECRET_ACCESS_KEY is not"), "%s", err.msg);
    /* half a pair in a file */
    unsetenv("AWS_ACCESS_KEY_ID");
    write_text("creds", "[default]\naws_access_key_id = ONLYID\n", path, sizeof path);
    unsetenv("AWS_PROFILE");
    ck_assert_int_eq(zf_aws_credentials_load(NULL, &c, &err), ZF_ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "only one of"), "%s", err.msg);
    unlink(path);
    unlink(cpath);
    rmdir(tmpdir);
}
END_TEST

START_TEST(urls)
{
    char *s = zf_url_encode("a b/c~d%-_.Z9\xc3\xa9", 15, true);
    ck_assert_str_eq(s, "a%20b/c~d%25-_.Z9%C3%A9");
    free(s);
    s = zf_url_encode("data.zarr/x y/", 14, false);
    ck_assert_str_eq(s, "data.zarr%2Fx%20y%2F");
    free(s);
    s = zf_url_join_key("http://h/base", "a b/0.0", false);
    ck_assert_str_eq(s, "http://h/base/a%20b/0.0");
    free(s);
    s = zf_url_join_key("http://h/base", "x?#&+=;", false);
    ck_assert_str_eq(s, "http://h/base/x%3F%23%26%2B%3D%3B");
    free(s);
    s = zf_url_join_key("http://h/base", "", true);
    ck_assert_str_eq(s, "http://h/base/");
    free(s);
    s = zf_url_join_key("http://h/base", "a/b", true);
    ck_assert_str_eq(s, "http://h/base/a/b/");
    free(s);
    size_t n;
    s = zf_url_decode("a%20b%2Fc%zz%4", 14, &n);
    ck_assert_str_eq(s, "a b/c%zz%4");
    ck_assert_uint_eq(n, 10);
    free(s);
    s = zf_url_decode("x%00y", 5, &n);
    ck_assert_uint_eq(n, 3);
    free(s);
    s = zf_url_redact("https://user:hunter2@host:8080/x@y");
    ck_assert_str_eq(s, "https://user:***@host:8080/x@y");
    free(s);
    s = zf_url_redact("https://ghp_T0KEN@host/x"); /* a user name alone: often a token */
    ck_assert_str_eq(s, "https://***@host/x");
    free(s);
    s = zf_url_redact("https://host/a:b@c");
    ck_assert_str_eq(s, "https://host/a:b@c");
    free(s);
    s = zf_url_redact("data/a:b@c.zarr"); /* a local path (no "://"): as it is */
    ck_assert_str_eq(s, "data/a:b@c.zarr");
    free(s);
    s = zf_url_redact("s3://bucket/a:b@c");
    ck_assert_str_eq(s, "s3://bucket/a:b@c");
    free(s);
}
END_TEST

START_TEST(s3_open)
{
    clear_aws_env();
    zf_store *s;
    zf_err err = {""};
    zf_store_options o = {.anonymous = true};
    ck_assert_int_eq(zf_store_open("s3://", &o, &s, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(zf_store_open("s3:///prefix", &o, &s, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(zf_store_open("s3://bad bucket/x", &o, &s, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(zf_store_open("s3://b/a/../x", &o, &s, &err), ZF_ERR_INVALID);
    o.region = "eu west";
    ck_assert_int_eq(zf_store_open("s3://b/x", &o, &s, &err), ZF_ERR_INVALID);
    o.region = NULL;
    o.endpoint = "ftp://x";
    ck_assert_int_eq(zf_store_open("s3://b/x", &o, &s, &err), ZF_ERR_INVALID);
    o.endpoint = "https://key:PW_SECRET@minio.example/"; /* refused, never shown */
    ck_assert_int_eq(zf_store_open("s3://b/x", &o, &s, &err), ZF_ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "endpoint: a user or password") && !strstr(err.msg, "PW_SECRET"),
                  "%s", err.msg);
    o.endpoint = NULL;
    ck_assert_int_eq(zf_store_open("s3://bucket/data.zarr/", &o, &s, &err), ZF_OK);
    ck_assert(zf_store_is_remote(s));
    ck_assert_str_eq(s->url, "s3://bucket/data.zarr/");
    zf_store_close(s);
    /* signed, with no credentials anywhere: a clear error at open */
    o.anonymous = false;
    ck_assert_int_eq(zf_store_open("s3://bucket/data.zarr", &o, &s, &err), ZF_ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "s3://bucket/data.zarr: no AWS credentials"), "%s", err.msg);
    /* secrets stay out of messages, also when requests fail (nothing listens on port 1) */
    setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "wJalrSUPERSECRET", 1);
    setenv("AWS_SESSION_TOKEN", "TOKENSECRET", 1);
    o.endpoint = "http://127.0.0.1:1/";
    o.retries = 1;
    o.timeout = 2;
    ck_assert_int_eq(zf_store_open("s3://bucket/data.zarr", &o, &s, &err), ZF_OK);
    zf_bytes b;
    ck_assert_int_eq(zf_store_get(s, "zarr.json", &b, &err), ZF_ERR_IO);
    ck_assert_msg(strstr(err.msg, "zarr.json: ") && strstr(err.msg, "after 1 retry"), "%s",
                  err.msg);
    ck_assert(!strstr(err.msg, "SECRET"));
    zf_store_listing l;
    ck_assert_int_eq(zf_store_list_dir(s, "", &l, &err), ZF_ERR_IO);
    ck_assert(!strstr(err.msg, "SECRET"));
    zf_store_stats st;
    zf_store_get_stats(s, &st);
    ck_assert_uint_eq(st.retries, 2);
    ck_assert_uint_eq(st.errors, 2);
    zf_store_close(s);
    rmdir(tmpdir);
}
END_TEST

TCase *store_parse_tcase(void)
{
    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, html_nginx);
    tcase_add_test(tc, html_apache);
    tcase_add_test(tc, html_python);
    tcase_add_test(tc, html_edge_cases);
    tcase_add_test(tc, s3_list_page);
    tcase_add_test(tc, s3_error_document);
    tcase_add_test(tc, ini_files);
    tcase_add_test(tc, aws_credentials);
    tcase_add_test(tc, urls);
    tcase_add_test(tc, s3_open);
    return tc;
}
