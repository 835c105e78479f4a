/* store_tests.h — the test cases of the store unit tests, one per file, run by test_main.c. */
#ifndef ZARRFS_TESTS_STORE_TESTS_H
#define ZARRFS_TESTS_STORE_TESTS_H

#include <check.h>
#include <stdbool.h>
#include <sys/types.h>

TCase *store_file_tcase(void);   /* test_store.c: the local file-system store */
TCase *store_parse_tcase(void);  /* test_remote_parse.c: index pages, S3 XML, AWS files, URLs */
TCase *store_http_tcase(void);   /* test_remote_http.c: the HTTP store against local servers */
TCase *store_s3_tcase(void);     /* test_remote_s3.c: the S3 store against s3_test_server.py */
TCase *store_write_tcase(void);  /* test_write.c: writing to local stores, HTTP's refusal */
TCase *store_disk_cache_tcase(void); /* test_disk_cache.c: the disk cache wrapper */
TCase *store_zip_tcase(void);    /* test_zip.c: zip archives as stores */
TCase *store_refs_tcase(void);   /* test_refs.c: kerchunk references as stores */
TCase *store_hostile_http_tcase(void); /* test_hostile_http.c: hostile HTTP servers */
TCase *store_credentials_tcase(void); /* test_credentials.c: the file of -o credentials */
TCase *store_azure_tcase(void);  /* test_azure.c: Azure signing, SAS, listings, URLs */
TCase *store_gcs_tcase(void);    /* test_gcs.c: GCS listings, tokens, keys, JWTs, URLs */

#ifndef STORE_TEST_SRCDIR
#define STORE_TEST_SRCDIR "."
#endif
#define TEST_PYTHON "/usr/bin/python3"

/* A server started by a test (servers.c): a child that ends with its test (its stdin closes,
 * PR_SET_PDEATHSIG). */
typedef struct test_server {
    pid_t pid;
    int in_fd;
    int port;
} test_server;
/* Run argv (argv[0] a path), its stderr to /dev/null when quiet, and read the port it listens on
 * from its first line of output: the first number after port_marker (NULL: the line). false,
 * having said why, when TEST_PYTHON is missing. */
bool test_server_start(test_server *sv, const char *const argv[], const char *port_marker,
                       bool quiet);
void test_server_stop(test_server *sv);

/* Remove path and everything below it (servers.c; symbolic links not followed). */
void test_remove_tree(const char *path);

#endif
