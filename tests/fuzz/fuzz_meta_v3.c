/* Fuzz target: a Zarr v3 zarr.json (src/meta/meta_v3.c, dtype_v3.c, fill_value.c, and the codec
 * lists of src/codec/v3.c): dialect detection (zf_meta_detect) and zf_meta_parse_v3. A parsed
 * array must describe itself consistently. */
#include "fuzz_meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_init();
    const char *text = (const char *)data;
    zf_err err = {""};
    zf_format f;
    (void)zf_meta_detect("zarr.json", text, size, &f, &err);
    zf_node_meta m = {0};
    if (zf_meta_parse_v3("zarr.json", text, size, &m, &err) == ZF_OK) {
        FZ_CHECK(m.format == ZF_FORMAT_V3, "format %d", m.format);
        FZ_CHECK(m.metadata_json && m.attributes_json, "documents kept");
        if (m.kind == ZF_NODE_ARRAY && m.unsupported == ZF_OK)
            fz_check_array_meta(&m.array, "g/a", true);
    }
    zf_node_meta_free(&m);
    return 0;
}
