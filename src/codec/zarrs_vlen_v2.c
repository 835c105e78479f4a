/* zarrs_vlen_v2.c — zarrs' "zarrs.vlen_v2" codec (array -> bytes; also named
 * https://codec.zarrs.dev/array_to_bytes/vlen_v2): "the same as vlen-utf8, vlen-array,
 * vlen-bytes from Zarr V2, except that it is decoupled from the data type" (zarrs'
 * array_to_bytes/vlen_v2.rs). A chunk is numcodecs' length-prefixed layout (text.c:
 * a u32 element count, then per element a u32 length and its bytes). It takes no
 * configuration (an empty object or none).
 *
 * Which text an element becomes depends on the array's data type, which the chunk
 * representation names (zf_vlen_dtype_utf8): `string` reads as vlen-utf8 does (strict UTF-8),
 * `bytes` as vlen-bytes does (\xHH escapes); the fill value as those codecs read it. The codec's
 * name for a bytes array is "zarrs.vlen_v2 (vlen-bytes)", which user.zarr.text shows. */
#include <stdlib.h>
#include <string.h>

#include "codec_impl.h"

typedef struct vlen_v2 {
    zf_codec base;
    bool utf8;
    zf_codec *like; /* vlen-utf8 or vlen-bytes: its fill_text */
} vlen_v2;

static zf_status v2_decode_text(const zf_codec *c, const zf_chunk_repr *decoded,
                                const uint8_t *in, size_t in_len, zf_text_chunk **out,
                                zf_err *err)
{
    const vlen_v2 *v = (const vlen_v2 *)c;
    return zf_vlen_decode_text(c->ops->name, decoded, in, in_len, v->utf8, out, err);
}

static zf_status v2_fill_text(const zf_codec *c, yajl_val fill, char **line, size_t *len,
                              zf_err *err)
{
    const vlen_v2 *v = (const vlen_v2 *)c;
    return v->like->ops->fill_text(v->like, fill, line, len, err);
}

static void v2_destroy(zf_codec *c)
{
    vlen_v2 *v = (vlen_v2 *)c;
    zf_codec_free(v->like);
    free(v);
}

#define V2_OPS(opname)                                                                         \
    {                                                                                          \
        .name = opname, .kind = ZF_CODEC_ARRAY_TO_BYTES, .resolve = zf_vlen_resolve,           \
        .decode = zf_vlen_decode, .destroy = v2_destroy, .decode_text = v2_decode_text,        \
        .fill_text = v2_fill_text,                                                             \
    }
static const zf_codec_ops v2_string_ops = V2_OPS("zarrs.vlen_v2");
static const zf_codec_ops v2_bytes_ops = V2_OPS("zarrs.vlen_v2 (vlen-bytes)");

zf_status zf_codec_zarrs_vlen_v2_new(yajl_val cfg, const zf_chunk_repr *decoded,
                                     zf_codec **out, zf_err *err)
{
    static const char *const none[] = {NULL};
    bool utf8;
    zf_status st;
    *out = NULL;
    if ((st = zf_v3_check_keys(cfg, "zarrs.vlen_v2", none, err)) ||
        (st = zf_vlen_dtype_utf8("zarrs.vlen_v2", decoded, &utf8, err)))
        return st;
    vlen_v2 *v = zf_codec_alloc(sizeof *v, utf8 ? &v2_string_ops : &v2_bytes_ops);
    if (!v)
        return ZF_ERR_NOMEM;
    v->utf8 = utf8;
    st = utf8 ? zf_codec_vlen_utf8_new(NULL, &v->like, err)
              : zf_codec_vlen_bytes_new(NULL, &v->like, err);
    if (st != ZF_OK) {
        free(v);
        return st;
    }
    *out = &v->base;
    return ZF_OK;
}
