/* Fuzz target: Zarr v2 metadata documents (src/meta/meta_v2.c): a .zarray or .zgroup document,
 * optionally followed by a NUL byte and the node's .zattrs text, parsed with
 * zf_meta_parse_v2_array and zf_meta_parse_v2_group. A parsed array must describe itself
 * consistently (chunks >= 1, a chunk key for chunk 0, a fill value of itemsize bytes). */
#include "fuzz_meta.h"

static void check_array(const zf_node_meta *m)
{
    const zf_array_meta *a = &m->array;
    FZ_CHECK(m->kind == ZF_NODE_ARRAY, "kind %d", m->kind);
    FZ_CHECK(m->metadata_json && m->attributes_json, "documents kept");
    FZ_CHECK(a->ndim <= ZF_MAX_DIMS, "ndim %u", a->ndim); /* unsupported arrays too */
    if (m->unsupported != ZF_OK)
        return;
    fz_check_array_meta(a, "g/a", true);
    (void)zf_array_meta_chunk_elems(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_init();
    const uint8_t *nul = memchr(data, '\0', size);
    size_t doc_n = nul ? (size_t)(nul - data) : size;
    char *attrs = nul ? fz_strndup(nul + 1, size - doc_n - 1) : NULL;
    zf_err err = {""};
    zf_node_meta m = {0};
    if (zf_meta_parse_v2_array(".zarray", (const char *)data, doc_n, attrs, &m, &err) == ZF_OK)
        check_array(&m);
    zf_node_meta_free(&m);
    memset(&m, 0, sizeof m);
    if (zf_meta_parse_v2_group(".zgroup", (const char *)data, doc_n, attrs, &m, &err) == ZF_OK)
        FZ_CHECK(m.kind == ZF_NODE_GROUP, "kind %d", m.kind);
    zf_node_meta_free(&m);
    free(attrs);
    return 0;
}
