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
    for (unsigned d = 0; a->rect && d < a->ndim; d++) { /* a rectilinear grid's runs */
        const zf_chunk_edges *e = &a->rect[d];
        FZ_CHECK((e->nruns == 0) == (a->shape[d] == 0), "dim %u: %zu runs", d, e->nruns);
        FZ_CHECK(e->first[0] == 0 && e->start[0] == 0, "dim %u: runs start at 0", d);
        for (size_t r = 0; r < e->nruns; r++) {
            FZ_CHECK(e->edge[r] >= 1 && e->edge[r] <= a->chunks[d], "dim %u run %zu edge", d, r);
            FZ_CHECK(e->first[r + 1] > e->first[r], "dim %u run %zu empty", d, r);
            FZ_CHECK(e->start[r + 1] - e->start[r] ==
                         (e->first[r + 1] - e->first[r]) * e->edge[r], "dim %u run %zu", d, r);
        }
        if (e->nruns) {
            uint64_t c, lo, edge, last = a->shape[d] - 1;
            FZ_CHECK(e->start[e->nruns] >= a->shape[d], "dim %u: runs cover the shape", d);
            FZ_CHECK(e->start[e->nruns] - e->edge[e->nruns - 1] <= last, "dim %u: no chunk past "
                     "the end", d);
            zf_chunk_edges_find(e, last, &c, &lo, &edge);
            FZ_CHECK(c + 1 == e->first[e->nruns] && lo <= last && last < lo + edge,
                     "dim %u: the last element's chunk", d);
        }
    }
    uint64_t coords[ZF_MAX_DIMS] = {0}, bytes;
    char key[4096];
    zf_array_meta_chunk_key(a, prefix, coords, key, sizeof key);
    (void)zf_array_meta_flat_size(a, &bytes);
}

#endif
