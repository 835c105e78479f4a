/* regress_main.c — replays inputs through a fuzz target without libFuzzer, so that every build
 * (gcc, ASan + UBSan) runs the inputs that once crashed zarrfs: each argument is a file or a
 * directory of files (a missing directory is an empty one), each file one call of
 * LLVMFuzzerTestOneInput. A failed check aborts, which fails the test. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return 1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            uint8_t *b = realloc(buf, cap *= 2);
            if (!b)
                free(buf);
            buf = b;
        }
    }
    fclose(f);
    if (!buf)
        return 1;
    /* an exact-size copy, so that ASan sees reads past the input's end */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return 1;
    }
    memcpy(exact, buf, n);
    free(buf);
    printf("replay %s (%zu bytes)\n", path, n);
    fflush(stdout);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    int bad = 0, count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0)
            continue; /* no regression inputs for this target (yet) */
        if (!S_ISDIR(sb.st_mode)) {
            bad |= run_file(argv[i]);
            count++;
            continue;
        }
        struct dirent **names;
        int n = scandir(argv[i], &names, NULL, NULL);
        if (n < 0)
            continue;
        qsort(names, (size_t)n, sizeof *names, cmp);
        for (int k = 0; k < n; k++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], names[k]->d_name);
            if (names[k]->d_name[0] != '.' && stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
                bad |= run_file(path);
                count++;
            }
            free(names[k]);
        }
        free(names);
    }
    printf("%d input(s) replayed\n", count);
    return bad;
}
