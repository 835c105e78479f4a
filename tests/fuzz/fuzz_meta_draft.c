/* Fuzz target: the Zarr v3 drafts (src/meta/meta_draft.c): the first byte picks the draft
 * (bit 0: 2020 or 2022) and the document (bits 1-2: the entry point zarr.json through
 * zf_meta_detect, an array (.array.json) or a group (.group.json) document); the rest is the
 * document. */
#include "fuzz_meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_init();
    if (size < 1)
        return 0;
    zf_format f = data[0] & 1 ? ZF_FORMAT_V3_DRAFT_2022 : ZF_FORMAT_V3_DRAFT_2020;
    unsigned which = (data[0] >> 1) & 3;
    const char *text = (const char *)data + 1;
    size_t n = size - 1;
    zf_err err = {""};
    zf_node_meta m = {0};
    if (which == 0) {
        zf_format got;
        (void)zf_meta_detect("zarr.json", text, n, &got, &err);
    } else if (which == 1) {
        if (zf_meta_parse_draft_group(f, "meta/root.group.json", text, n, &m, &err) == ZF_OK)
            FZ_CHECK(m.kind == ZF_NODE_GROUP && m.format == f, "kind %d format %d", m.kind,
                     m.format);
    } else {
        if (zf_meta_parse_draft_array(f, "meta/root/a.array.json", text, n, &m, &err) == ZF_OK &&
            m.unsupported == ZF_OK) {
            FZ_CHECK(m.kind == ZF_NODE_ARRAY && m.format == f, "kind %d format %d", m.kind,
                     m.format);
            fz_check_array_meta(&m.array, "data/root/a", false);
        }
    }
    zf_node_meta_free(&m);
    return 0;
}
