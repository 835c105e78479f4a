/* fixture_dir.h — where the unit tests find the third-party fixtures (tests/fixtures/README.md):
 * the repository's tests/fixtures (ZF_TEST_FIXTURES, set by tests/meson.build), or, when
 * ZARRFS_SHARED is set, $ZARRFS_SHARED/testdata (an optional override: a directory holding
 * testdata/ with the same fixture folders). */
#ifndef ZARRFS_TESTS_FIXTURE_DIR_H
#define ZARRFS_TESTS_FIXTURE_DIR_H

#include <stdio.h>
#include <stdlib.h>

#ifndef ZF_TEST_FIXTURES
#error "ZF_TEST_FIXTURES is not defined (tests/meson.build's fixture_args)"
#endif

static inline const char *zf_test_fixtures(void)
{
    static char dir[2048]; /* small enough for the callers' paths built on it */
    const char *shared = getenv("ZARRFS_SHARED");
    if (!shared || !*shared)
        return ZF_TEST_FIXTURES;
    snprintf(dir, sizeof dir, "%s/testdata", shared);
    return dir;
}

#endif
