/* check_main.h — the shared main() of the Check unit tests: run one suite, exit non-zero on
 * any failure. Usage: ZF_CHECK_MAIN("name", test_a, test_b, ...) */
#ifndef ZARRFS_TESTS_CHECK_MAIN_H
#define ZARRFS_TESTS_CHECK_MAIN_H

#include <check.h>
#include <stddef.h>

static inline int zf_check_run(const char *name, const TTest *const *tests, size_t n)
{
    Suite *s = suite_create(name);
    TCase *tc = tcase_create(name);
    for (size_t i = 0; i < n; i++)
        tcase_add_test(tc, tests[i]);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

#define ZF_CHECK_MAIN(name, ...)                                                             \
    int main(void)                                                                           \
    {                                                                                        \
        const TTest *const tests[] = {__VA_ARGS__};                                          \
        return zf_check_run(name, tests, sizeof tests / sizeof *tests);                      \
    }

#endif
