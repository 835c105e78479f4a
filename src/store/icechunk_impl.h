/* icechunk_impl.h — internals of the Icechunk reader (icechunk_fb.cc, icechunk_config.c) shared
 * with its unit tests. */
#ifndef ZARRFS_ICECHUNK_IMPL_H
#define ZARRFS_ICECHUNK_IMPL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" { /* zarrfs's headers are C: their functions have C linkage in icechunk_fb.cc too */
#endif

#include "zarrfs/icechunk.h"

/* Decompress the zstd frames of the n bytes at src (one or more frames, with or without their
 * content size) into a malloc'd buffer of at most bound bytes: *out (*out_len bytes; at least
 * one byte is allocated). A content size the frames declare is checked before allocating: over
 * bound, ZF_ERR_TOO_LARGE; more than the frames' blocks could hold (128 KiB per 3 bytes),
 * ZF_ERR_CORRUPT. Frames without one are streamed into a buffer that grows up to bound + 1
 * bytes: reaching it is ZF_ERR_TOO_LARGE. Errors: ZF_ERR_CORRUPT (not zstd, truncated, a
 * checksum or size mismatch, nothing), ZF_ERR_TOO_LARGE, ZF_ERR_NOMEM. */
zf_status zf_ic_zstd_bounded(const uint8_t *src, size_t n, size_t bound, uint8_t **out,
                             size_t *out_len, zf_err *err);

/* The arrays of a manifest and the indexes of their chunk references, in file order (for the
 * tests and the fuzz target, which walk every reference; icechunk.h only finds them). */
size_t zf_ic_manifest_narrays(const zf_ic_manifest *m);
/* Array i (< zf_ic_manifest_narrays): its node id and how many references it holds. */
void zf_ic_manifest_array(const zf_ic_manifest *m, size_t i, uint8_t node_id[ZF_IC_NODE_ID_LEN],
                          size_t *nrefs);
/* The index of reference j of array i: its length, and its first max coordinates in coords. */
size_t zf_ic_manifest_ref_index(const zf_ic_manifest *m, size_t i, size_t j, uint64_t *coords,
                                size_t max);

/* A new container at the end of c, zeroed (icechunk_config.c). NULL when out of memory. */
zf_ic_container *zf_ic_config_push(zf_ic_config *c);

#ifdef __cplusplus
}
#endif

#endif
