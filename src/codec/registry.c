/* registry.c — Zarr v2 / numcodecs codec ids to constructors.
 *
 * Ids served are listed in `codecs`; ids of codecs that exist in numcodecs but that zarrfs does
 * not serve (object arrays, pcodec: a compressor no library here provides) are listed
 * in `unsupported` so the message says why. Anything else is reported by name as unknown. */
#include <stdio.h>
#include <string.h>

#include "codec_impl.h"

static const struct {
    const char *id;
    zf_codec_ctor ctor;
} codecs[] = {
    {"zlib", zf_codec_zlib_new},
    {"gzip", zf_codec_gzip_new},
    {"bz2", zf_codec_bz2_new},
    {"lzma", zf_codec_lzma_new},
    {"zstd", zf_codec_zstd_new},
    {"lz4", zf_codec_lz4_new},
    {"blosc", zf_codec_blosc_new},
    {"delta", zf_codec_delta_new},
    {"fixedscaleoffset", zf_codec_fixedscaleoffset_new},
    {"astype", zf_codec_astype_new},
    {"quantize", zf_codec_quantize_new},
    {"bitround", zf_codec_bitround_new},
    {"shuffle", zf_codec_shuffle_new},
    {"packbits", zf_codec_packbits_new},
    {"categorize", zf_codec_categorize_new},
    {"crc32", zf_codec_crc32_new},
    {"adler32", zf_codec_adler32_new},
    {"crc32c", zf_codec_crc32c_new},
    {"base64", zf_codec_base64_new},
    {"fletcher32", zf_codec_fletcher32_new},
    {"jenkins_lookup3", zf_codec_jenkins_lookup3_new},
    {"zfpy", zf_codec_zfpy_new},
    {"vlen-utf8", zf_codec_vlen_utf8_new},
    {"vlen-bytes", zf_codec_vlen_bytes_new},
    {"json2", zf_codec_json2_new},
    {"vlen-array", zf_codec_vlen_array_new},
    {"msgpack2", zf_codec_msgpack2_new},
};

static const struct {
    const char *id, *why;
} unsupported[] = {
    {"json", "object arrays"},
    {"msgpack", "object arrays"},
    {"pickle", "object arrays"},
    {"pcodec", "pcodec compression: " ZF_CODEC_NO_LIBRARY},
};

zf_status zf_codec_from_v2(yajl_val config, zf_codec **out, zf_err *err)
{
    *out = NULL;
    if (!YAJL_IS_OBJECT(config))
        return zf_fail(err, ZF_ERR_INVALID, "expected a codec object such as {\"id\": \"zlib\"}");
    yajl_val id = zf_cfg_get(config, "id");
    if (!id)
        return zf_fail(err, ZF_ERR_INVALID, "\"id\": missing");
    if (!YAJL_IS_STRING(id))
        return zf_fail(err, ZF_ERR_INVALID, "\"id\": expected a string");
    const char *name = id->u.string;
    for (size_t i = 0; i < sizeof codecs / sizeof codecs[0]; i++)
        if (strcmp(name, codecs[i].id) == 0)
            return codecs[i].ctor(config, out, err);
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++)
        if (strcmp(name, unsupported[i].id) == 0)
            return zf_fail(err, ZF_ERR_UNSUPPORTED, "codec \"%s\" is not supported (%s)", name,
                           unsupported[i].why);
    return zf_fail(err, ZF_ERR_UNSUPPORTED, "codec \"%.200s\" is not supported", name);
}
