/* test_encode_v3.c — (being written) encoding tests. */
#include "testutil.h"

START_TEST(test_placeholder) { ck_assert_int_eq(1, 1); }
END_TEST

Suite *codec_encode_v3_suite(void)
{
    Suite *s = suite_create("encode_v3");
    TCase *tc = tcase_create("encode_v3");
    tcase_add_test(tc, test_placeholder);
    suite_add_tcase(s, tc);
    return s;
}
