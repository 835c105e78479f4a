/* Fuzz target: consolidated metadata (src/hierarchy/hierarchy.c). First byte '2': the rest is a
 * v2 .zmetadata document next to a root .zgroup; anything else: the rest is a v3 root zarr.json
 * (its inline "consolidated_metadata" lists the hierarchy). The hierarchy over that store is
 * walked (fuzz_walk.h): every listed node is looked up, parsed from the consolidated documents,
 * and read. */
#include "fuzz_walk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_init();
    if (size < 1)
        return 0;
    fz_mem_store *m = fz_mem_new();
    if (!m)
        return 0;
    static const char zgroup[] = "{\"zarr_format\": 2}";
    bool ok = data[0] == '2'
                  ? fz_mem_put(m, ".zgroup", (const uint8_t *)zgroup, sizeof zgroup - 1) &&
                        fz_mem_put(m, ".zmetadata", data + 1, size - 1)
                  : fz_mem_put(m, "zarr.json", data + 1, size - 1);
    if (!ok) {
        zf_store_close(&m->base);
        return 0;
    }
    fz_mem_seal(m);
    fz_walk(&m->base);
    return 0;
}
