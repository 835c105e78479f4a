/* test_main.c — the store unit tests: the local file-system store (test_store.c), the parsers of
 * the remote stores (test_remote_parse.c) and the HTTP store end to end against Python servers on
 * 127.0.0.1 (test_remote_http.c), the disk cache (test_disk_cache.c), zip archives (test_zip.c), kerchunk references
 * (test_refs.c), hostile HTTP servers (test_hostile_http.c), the credentials file
 * (test_credentials.c). */
#include <check.h>
#include <stdlib.h>

#include "store_tests.h"

int main(void)
{
    Suite *s = suite_create("store");
    TCase *(*const cases[])(void) = {store_file_tcase, store_parse_tcase, store_http_tcase,
                                     store_s3_tcase, store_write_tcase,
                                     store_disk_cache_tcase, store_zip_tcase, store_refs_tcase,
                                     store_hostile_http_tcase, store_credentials_tcase,
                                     store_azure_tcase, store_gcs_tcase};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        TCase *tc = cases[i]();
        tcase_set_timeout(tc, 120);
        suite_add_tcase(s, tc);
    }
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
