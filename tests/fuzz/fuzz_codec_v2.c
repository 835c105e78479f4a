/* Fuzz target: the codec chain of a Zarr v2 array (src/codec/: every numcodecs codec zarrfs
 * serves; src/meta/meta_v2.c builds the chain). Input as fuzz_codec.h: "DTYPE SHAPE [C|F]\n",
 * then a codec configuration — one numcodecs object (the compressor) or a list of them (filters,
 * then the compressor last) — then NUL and the chunk bytes. The .zarray around them has chunks
 * = shape = SHAPE. The chunk is decoded, and a chunk is encoded and decoded back (fuzz_codec.h). */
#include "fuzz_codec.h"
#include "zarrfs/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_init();
    fz_codec_input in;
    if (!fz_codec_input_parse(data, size, &in))
        return 0;
    yajl_val cfg = NULL;
    char *compressor = NULL, *filters = NULL, *doc = NULL;
    zf_err err = {""};
    if (zf_json_parse("codecs", (const char *)in.codecs, in.codecs_n, &cfg, &err) != ZF_OK)
        return 0;
    if (YAJL_IS_ARRAY(cfg) && cfg->u.array.len > 0) {
        size_t n = cfg->u.array.len;
        compressor = zf_json_dump(cfg->u.array.values[n - 1]);
        cfg->u.array.len = n - 1; /* the filters: all but the last (restored before freeing) */
        filters = n > 1 ? zf_json_dump(cfg) : strdup("null");
        cfg->u.array.len = n;
    } else {
        compressor = zf_json_dump(cfg);
        filters = strdup("null");
    }
    bool structured = in.dtype[0] == '[';
    if (compressor && filters &&
        asprintf(&doc,
                 "{\"zarr_format\": 2, \"shape\": [%s], \"chunks\": [%s], \"dtype\": %s%s%s, "
                 "\"compressor\": %s, \"filters\": %s, \"fill_value\": null, \"order\": \"%s\"}",
                 in.shape, in.shape, structured ? "" : "\"", in.dtype, structured ? "" : "\"",
                 compressor, filters, strcmp(in.extra, "F") == 0 ? "F" : "C") > 0) {
        zf_node_meta m = {0};
        if (zf_meta_parse_v2_array(".zarray", doc, strlen(doc), NULL, &m, &err) == ZF_OK)
            fz_codec_run(&m, &in);
        zf_node_meta_free(&m);
        free(doc);
    }
    free(compressor);
    free(filters);
    yajl_tree_free(cfg);
    return 0;
}
