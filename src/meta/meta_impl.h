/* meta_impl.h — internal to src/meta/. */
#ifndef ZARRFS_META_IMPL_H
#define ZARRFS_META_IMPL_H

#include <yajl/yajl_tree.h>

#include "zarrfs/meta.h"

/* zf_meta_v2_fill_value on an already parsed value (NULL = absent = null). */
zf_status zf_meta_v2_fill_value_val(yajl_val v, const zf_dtype *dt, uint8_t *out, zf_err *err);

/* Largest decoded chunk zarrfs serves (bytes); larger chunks make the array unsupported. */
#define ZF_MAX_CHUNK_BYTES ((uint64_t)1 << 31)

#endif
