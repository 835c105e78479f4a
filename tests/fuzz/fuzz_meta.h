/* fuzz_meta.h — the checks every metadata target makes of an array it parsed (and that zarrfs
 * serves): dimensions within ZF_MAX_DIMS, chunks >= 1 element along each, fill value bytes
 * (where the dialect always has them), a chunk key for chunk 0 below prefix and a flat size. */
#ifndef ZARRFS_FUZZ_META_H
#define ZARRFS_FUZZ_META_H

#include "fuzz.h"
#include "zarrfs/meta.h"

static inline void fz_check_array_meta(const zf_array_meta *a, const char *prefix,
                                       bool fill_kept)
{
    FZ_CHECK(a->ndim <= ZF_MAX_DIMS, "ndim %u", a->ndim);
    for (unsigned d = 0; d < a->ndim; d++)
        FZ_CHECK(a->chunks[d] >= 1, "chunks[%u] = 0", d);
    FZ_CHECK(!fill_kept || a->fill_value != NULL || a->dtype.itemsize == 0, "fill value bytes");
    uint64_t coords[ZF_MAX_DIMS] = {0}, bytes;
    char key[4096];
    zf_array_meta_chunk_key(a, prefix, coords, key, sizeof key);
    (void)zf_array_meta_flat_size(a, &bytes);
}

#endif
