/* Fuzz target: a whole store — every dialect's detection and metadata (v2 .zgroup/.zarray/
 * .zattrs/.zmetadata, v3 zarr.json with consolidated metadata, the 2020 and 2022 drafts' entry
 * point and meta/ documents), implicit groups, sidecars and chunk reads through the array layer
 * (src/hierarchy/, src/array/). The input is a store image (fuzz.h: "key\n" value entries
 * separated by FZ_SEP) held in an in-memory store; the hierarchy over it is walked (fuzz_walk.h). */
#include "fuzz_walk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_init();
    fz_mem_store *m = fz_mem_from_image(data, size);
    if (m)
        fz_walk(&m->base);
    return 0;
}
