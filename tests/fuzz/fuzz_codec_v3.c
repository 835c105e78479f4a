/* Fuzz target: the codec chain of a Zarr v3 array (src/codec/v3.c and every codec, sharding
 * included; src/meta/meta_v3.c builds the chain). Input as fuzz_codec.h: "DTYPE SHAPE [FILL]\n"
 * (v3 data type name, or a data type object without spaces such as zarrs' optional types; FILL
 * a JSON fill value, by default 0, false or [0, 0] as the type wants),
 * then the "codecs" list, then NUL and the chunk (or shard) bytes. The zarr.json around them has
 * a regular chunk grid with chunk_shape = shape = SHAPE. The chunk is decoded, and a chunk is
 * encoded and decoded back (fuzz_codec.h). */
#include "fuzz_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_init();
    fz_codec_input in;
    if (!fz_codec_input_parse(data, size, &in))
        return 0;
    const char *fill = in.extra[0]                          ? in.extra
                       : strcmp(in.dtype, "bool") == 0      ? "false"
                       : strncmp(in.dtype, "complex", 7) == 0 ? "[0, 0]"
                                                            : "0";
    /* a data type object (zarrs' optional types) as it is, a name quoted */
    const char *quote = in.dtype[0] == '{' ? "" : "\"";
    char *doc = NULL;
    if (asprintf(&doc,
                 "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [%s], "
                 "\"data_type\": %s%s%s, \"chunk_grid\": {\"name\": \"regular\", "
                 "\"configuration\": {\"chunk_shape\": [%s]}}, \"chunk_key_encoding\": "
                 "{\"name\": \"default\"}, \"fill_value\": %s, \"codecs\": %.*s}",
                 in.shape, quote, in.dtype, quote, in.shape, fill, (int)in.codecs_n,
                 (const char *)in.codecs) < 0)
        return 0;
    zf_err err = {""};
    zf_node_meta m = {0};
    if (zf_meta_parse_v3("zarr.json", doc, strlen(doc), &m, &err) == ZF_OK)
        fz_codec_run(&m, &in);
    zf_node_meta_free(&m);
    free(doc);
    return 0;
}
