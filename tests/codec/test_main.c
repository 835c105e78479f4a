/* test_main.c — the codec unit tests: numcodecs fixture and generated cases (test_fixture.c),
 * malformed and hostile input (test_negative.c), transpose, chain and checksums
 * (test_transpose.c), Zarr v3 codec lists and sharding (test_v3.c), encoding (test_encode.c,
 * test_encode_v3.c), and the codecs and chains of "Read every variant that real writers
 * produce" (test_variants.c), and the registry's scale_offset and conditional codecs and zarrs'
 * vlen codecs (test_registry.c), the zfp codecs (test_zfp.c), and the registry's data types, packbits
 * and cast_value (test_registry_types.c), and zarrs' optional codec (test_optional.c).
 *
 * Before the suites run, numcodecs_expected.py (next to this file) is run with a Python that has
 * numcodecs — $ZARRFS_NUMCODECS_PYTHON, default /usr/bin/python3 — to write numcodecs' own
 * decodes into a temporary directory, and v3_expected.py writes the v3 codec vectors there. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "../fixture_dir.h"
#include "testutil.h"

#ifndef CODEC_TEST_SRCDIR
#define CODEC_TEST_SRCDIR NULL
#endif

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* The directory of this source file, for the Python script. */
static const char *src_dir(char *buf, size_t n)
{
    if (CODEC_TEST_SRCDIR)
        return CODEC_TEST_SRCDIR;
    snprintf(buf, n, "%s", __FILE__);
    char *slash = strrchr(buf, '/');
    if (!slash)
        return ".";
    *slash = '\0';
    return buf;
}

static char tmpdir[] = "/tmp/zarrfs-codec-test-XXXXXX";

static void generate_expected(void)
{
    const char *fixtures = zf_test_fixtures();
    const char *python = getenv("ZARRFS_NUMCODECS_PYTHON");
    if (!python)
        python = "/usr/bin/python3";
    char sbuf[4096];
    const char *src = src_dir(sbuf, sizeof sbuf);
    if (strchr(fixtures, '\'') || strchr(src, '\'') || strchr(python, '\'')) {
        printf("numcodecs expectations: not generated (paths)\n");
        return;
    }
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return;
    }
    char cmd[16384];
    snprintf(cmd, sizeof cmd,
             "'%s' '%s/numcodecs_expected.py' '%s/numcodecs-fixture' '%s'", python, src, fixtures,
             tmpdir);
    int rc = system(cmd);
    if (rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0) {
        tu_expected_dir = tmpdir;
    } else {
        printf("numcodecs expectations: %s exited with %d; lossy codecs are checked with "
               "tolerances only and generated cases are skipped\n",
               python, rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1);
    }
    static char v3dir[sizeof tmpdir + 8];
    snprintf(v3dir, sizeof v3dir, "%s/v3", tmpdir);
    snprintf(cmd, sizeof cmd,
             "'%s' '%s/v3_expected.py' '%s/zarrita-fixtures/v3/data.zarr' '%s'", python, src,
             fixtures, v3dir);
    rc = system(cmd);
    if (rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0)
        tu_v3_dir = v3dir;
    else
        printf("v3 codec vectors: %s exited with %d; the cases made in Python are skipped\n",
               python, rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1);
    fflush(stdout);
}

int main(void)
{
    generate_expected();
    SRunner *sr = srunner_create(codec_fixture_suite());
    srunner_add_suite(sr, codec_negative_suite());
    srunner_add_suite(sr, codec_transpose_suite());
    srunner_add_suite(sr, codec_v3_suite());
    srunner_add_suite(sr, codec_encode_suite());
    srunner_add_suite(sr, codec_encode_v3_suite());
    srunner_add_suite(sr, codec_variant_suite());
    srunner_add_suite(sr, codec_registry_suite());
    srunner_add_suite(sr, codec_zfp_suite());
    srunner_add_suite(sr, codec_registry_types_suite());
    srunner_add_suite(sr, codec_optional_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (tmpdir[strlen(tmpdir) - 1] != 'X')
        nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
