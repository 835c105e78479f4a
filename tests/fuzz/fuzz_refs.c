/* Fuzz target: kerchunk references (src/store/store_refs.c): the input is a reference file (JSON,
 * versions 0 and 1 with templates and gen), opened with zf_store_refs_open relative to a private
 * temporary directory holding one small target file ("data.bin"). The store is then walked
 * (fz_visit_dir in fuzz.h) — but only when the input names no remote or special target ("://",
 * "/dev", "/proc", "/sys", ".."): a fuzzer must not make network requests or read devices.
 * Remote targets are still parsed and their stores opened (no request is made at open). */
#include <unistd.h>

#include "fuzz.h"

static char dir[4096];

/* Below $TMPDIR (scripts/fuzz.sh points it into the build directory and empties it: libFuzzer
 * ends with _Exit, so the atexit cleanup does not run there). */
static void make_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir - 64, "%s/zarrfs-fuzz-refs-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    FZ_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[4096 + 16];
    snprintf(path, sizeof path, "%s/data.bin", dir);
    FILE *f = fopen(path, "wb");
    FZ_CHECK(f != NULL, "%s", path);
    for (int i = 0; i < 256; i++)
        fputc(i, f);
    fclose(f);
}

static void remove_dir(void)
{
    char path[4096 + 16];
    snprintf(path, sizeof path, "%s/data.bin", dir);
    unlink(path);
    rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_init();
    if (!dir[0]) {
        make_dir();
        atexit(remove_dir);
    }
    static const char *const risky[] = {"://", "/dev", "/proc", "/sys", ".."};
    bool walk = true;
    for (size_t i = 0; i < sizeof risky / sizeof risky[0]; i++)
        if (memmem(data, size, risky[i], strlen(risky[i])))
            walk = false;
    zf_store_options opts = {.retries = 0, .timeout = 1, .anonymous = true,
                             .region = "us-east-1"};
    zf_store *s;
    zf_err err = {""};
    if (zf_store_refs_open("refs.json", (const char *)data, size, dir, &opts, &s, &err) != ZF_OK)
        return 0;
    if (walk) {
        fz_store_walk w = {s, 0};
        fz_visit_dir(&w, "", 0);
    }
    zf_store_close(s);
    return 0;
}
