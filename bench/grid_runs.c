/* grid_runs.c — the chunk-grid walk alone (zf_grid_runs, no I/O, no copy): nanoseconds per run
 * for a regular grid and two rectilinear grids of the same chunk count over a (4096, 16384)
 * float32 array, walked in 1 MiB pieces as the kernel's requests come (bench/README.md,
 * "Rectilinear chunk grid"). Best of 7 passes each. Not part of the tests.
 *
 *   ninja -C build bench/zf_grid_runs && build/bench/zf_grid_runs */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "zarrfs/array.h"

static zf_status count(void *ctx, const zf_run *r)
{
    uint64_t *n = ctx;
    n[0]++;
    n[1] += r->in_chunk ^ r->chunk; /* use the run, so that nothing is optimised away */
    return ZF_OK;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void walk(const char *name, const char *grid)
{
    char doc[2048];
    snprintf(doc, sizeof doc,
             "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [4096, 16384], "
             "\"data_type\": \"float32\", \"chunk_grid\": %s, \"chunk_key_encoding\": {\"name\": "
             "\"default\"}, \"fill_value\": 0, \"codecs\": [{\"name\": \"bytes\", "
             "\"configuration\": {\"endian\": \"little\"}}]}",
             grid);
    zf_node_meta m;
    zf_err err = {""};
    memset(&m, 0, sizeof m);
    if (zf_meta_parse_v3("zarr.json", doc, strlen(doc), &m, &err) != ZF_OK) {
        printf("%s: %s\n", name, err.msg);
        return;
    }
    zf_grid g;
    zf_grid_init_meta(&g, &m.array);
    uint64_t n = zf_grid_nelems(&g), piece = (1u << 20) / 4, runs = 0;
    double best = 1e9;
    for (int pass = 0; pass < 7; pass++) {
        uint64_t c[2] = {0, 0};
        double t0 = now();
        for (uint64_t e = 0; e < n; e += piece)
            zf_grid_runs(&g, e, e + piece < n ? e + piece : n, count, c);
        double t = now() - t0;
        if (t < best) {
            best = t;
            runs = c[0];
        }
    }
    printf("| %s | %llu | %.2f | %.1f | %.0f |\n", name, (unsigned long long)runs, best * 1e3,
           best * 1e9 / (double)runs, (double)n * 4 / best / 1e9);
    zf_node_meta_free(&m);
}

int main(void)
{
    printf("| grid | runs | ms per pass | ns per run | GB/s of float32 |\n|---|--:|--:|--:|--:|\n");
    walk("regular [1024, 1024]",
         "{\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [1024, 1024]}}");
    char both[1024];
    size_t k = 0;
    k += (size_t)snprintf(both + k, sizeof both - k,
                          "{\"name\": \"rectilinear\", \"configuration\": {\"kind\": \"inline\", "
                          "\"chunk_shapes\": [[[768, 1], [1280, 1], [768, 1], [1280, 1]], [");
    for (int i = 0; i < 8; i++)
        k += (size_t)snprintf(both + k, sizeof both - k, "%s[1280, 1], [768, 1]", i ? ", " : "");
    snprintf(both + k, sizeof both - k, "]]}}");
    walk("rectilinear both (768/1280)", both);
    walk("rectilinear rows (512/1536, 1024)",
         "{\"name\": \"rectilinear\", \"configuration\": {\"kind\": \"inline\", \"chunk_shapes\": "
         "[[[512, 1], [1536, 1], [512, 1], [1536, 1]], 1024]}}");
    return 0;
}
