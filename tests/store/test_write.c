/* test_write.c — (being written) store writes. */
#include <check.h>

#include "store_tests.h"

START_TEST(test_placeholder) { ck_assert_int_eq(1, 1); }
END_TEST

TCase *store_write_tcase(void)
{
    TCase *tc = tcase_create("write");
    tcase_add_test(tc, test_placeholder);
    return tc;
}
