/* meta.c — dialect-independent parts of the node model: names, chunk keys, freeing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

#include "meta_impl.h"

const char *zf_format_name(zf_format f)
{
    switch (f) {
    case ZF_FORMAT_V2: return "2";
    case ZF_FORMAT_V3: return "3";
    case ZF_FORMAT_V3_DRAFT_2020: return "3-draft-2020";
    case ZF_FORMAT_V3_DRAFT_2022: return "3-draft-2022";
    }
    return "?";
}

uint64_t zf_array_meta_chunk_elems(const zf_array_meta *a)
{
    uint64_t n = 1;
    for (unsigned d = 0; d < a->ndim; d++)
        n *= a->chunks[d]; /* bounded at parse time */
    return n;
}

bool zf_array_meta_is_text(const zf_array_meta *a)
{
    return a->variable_length && a->text_fill;
}

bool zf_array_meta_read_only(const zf_array_meta *a)
{
    return zf_array_meta_is_text(a) || a->optional_levels > 0;
}

bool zf_array_meta_flat_size(const zf_array_meta *a, uint64_t *bytes)
{
    if (!a->dtype_typestr || a->variable_length || a->dtype.kind == 'O')
        return false;
    uint64_t n = a->dtype.itemsize;
    for (unsigned d = 0; d < a->ndim; d++) {
        if (a->shape[d] == 0) {
            n = 0;
            break;
        }
        if (n > (UINT64_MAX >> 1) / a->shape[d])
            return false;
        n *= a->shape[d];
    }
    if (n >= (uint64_t)1 << 63)
        return false;
    *bytes = n;
    return true;
}

zf_status zf_array_meta_chunk_key(const zf_array_meta *a, const char *prefix,
                                  const uint64_t *coords, char *buf, size_t bufsize)
{
    size_t o = 0;
    int n;
#define APPEND(...)                                                                          \
    do {                                                                                     \
        n = snprintf(buf + o, bufsize - o, __VA_ARGS__);                                     \
        if (n < 0 || (size_t)n >= bufsize - o)                                               \
            return ZF_ERR_INVALID;                                                           \
        o += (size_t)n;                                                                      \
    } while (0)
    if (prefix[0])
        APPEND("%s/", prefix);
    const zf_chunk_key_encoding *e = &a->key_encoding;
    if (e->prefix[0]) {
        APPEND("%s", e->prefix);
        for (unsigned d = 0; d < a->ndim; d++)
            if (d == 0 && e->prefix_joined)
                APPEND("%llu", (unsigned long long)coords[d]);
            else
                APPEND("%c%llu", e->separator, (unsigned long long)coords[d]);
    } else if (a->ndim == 0) {
        APPEND("0");
    } else {
        for (unsigned d = 0; d < a->ndim; d++) {
            if (d)
                APPEND("%c", e->separator);
            APPEND("%llu", (unsigned long long)coords[d]);
        }
    }
#undef APPEND
    return ZF_OK;
}

void zf_node_meta_free(zf_node_meta *m)
{
    if (!m)
        return;
    free(m->metadata_json);
    free(m->attributes_json);
    free(m->metadata_key);
    free(m->unsupported_why);
    zf_array_meta *a = &m->array;
    free(a->dtype_json);
    free(a->dtype_typestr);
    free(a->fill_value);
    free(a->fill_value_json);
    free(a->dimension_names_json);
    free(a->text_fill);
    zf_meta_free_rect(a);
    zf_chain_clear(&a->chain);
    memset(m, 0, sizeof *m);
}
