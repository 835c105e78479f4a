/* vlen_utf8.c — the vlen-utf8 object codec (numcodecs VLenUTF8, v2 id "vlen-utf8"; Zarr v3
 * "vlen-utf8" of the zarr-extensions registry, the codec of the `string` data type): an array
 * of variable-length UTF-8 strings as bytes. A chunk is a little-endian u32 element count, then
 * for each element (C order) a little-endian u32 byte length and its UTF-8 bytes (numcodecs
 * vlen.pyx; the v3 codec uses the same layout). numcodecs reads both u32 as signed (a negative
 * count or length is an error) and ignores bytes after the last element; it writes None and 0
 * as empty strings. Decoding yields text only (codec.h, "variable-length elements as text"). */
#include <stdlib.h>
#include <string.h>

#include "codec_impl.h"

static zf_status vlen_decode_text(const zf_codec *c, const zf_chunk_repr *decoded,
                                  const uint8_t *in, size_t in_len, zf_text_chunk **out,
                                  zf_err *err)
{
    return zf_vlen_decode_text(c->ops->name, decoded, in, in_len, true, out, err);
}

/* A string is that string; null is a missing element; a number (zarr-python 2's default fill
 * value of object arrays is 0) is its JSON text, as zarr-python 2 reads it for a missing chunk
 * (elements inside a stored chunk it wrote as empty strings: numcodecs stores 0 so). */
static zf_status vlen_fill_text(const zf_codec *c, yajl_val fill, char **line, size_t *len,
                                zf_err *err)
{
    if (!fill || YAJL_IS_NULL(fill)) {
        if (!(*line = strdup("\\N\n")))
            return ZF_ERR_NOMEM;
        *len = 3;
        return ZF_OK;
    }
    if (YAJL_IS_STRING(fill))
        return zf_text_line((const uint8_t *)fill->u.string, strlen(fill->u.string), line, len);
    if (YAJL_IS_NUMBER(fill) && fill->u.number.r)
        return zf_text_line((const uint8_t *)fill->u.number.r, strlen(fill->u.number.r), line,
                            len);
    return zf_fail(err, ZF_ERR_INVALID, "%s: fill value: expected a string, a number or null",
                   c->ops->name);
}

static const zf_codec_ops vlen_utf8_ops = {
    .name = "vlen-utf8",
    .kind = ZF_CODEC_ARRAY_TO_BYTES,
    .resolve = zf_vlen_resolve,
    .decode = zf_vlen_decode,
    .destroy = zf_codec_destroy_plain,
    .decode_text = vlen_decode_text,
    .fill_text = vlen_fill_text,
};

zf_status zf_codec_vlen_utf8_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    (void)cfg, (void)err; /* numcodecs' VLenUTF8 has no parameters */
    *out = zf_codec_alloc(sizeof(zf_codec), &vlen_utf8_ops);
    return *out ? ZF_OK : ZF_ERR_NOMEM;
}
