/* Fuzz target: the zip store (src/store/store_zip.c over libzip): the input is an archive, held
 * as key "x.zip" of an in-memory store (read through zf_store_get_partial/get_suffix as from a
 * directory or a web server). After zf_store_zip_open, the store is walked (fz_visit_dir in
 * fuzz.h: lists, stats, whole, range and suffix reads that must agree). */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_init();
    fz_mem_store *m = fz_mem_new();
    if (!m || !fz_mem_put(m, "x.zip", data, size)) {
        if (m)
            zf_store_close(&m->base);
        return 0;
    }
    fz_mem_seal(m);
    zf_store *z;
    zf_err err = {""};
    if (zf_store_zip_open(&m->base, "x.zip", NULL, &z, &err) != ZF_OK) {
        zf_store_close(&m->base);
        return 0;
    }
    fz_store_walk w = {z, 0};
    fz_visit_dir(&w, "", 0);
    zf_store_close(z);
    return 0;
}
