/* vlen_bytes.c — the vlen-bytes object codec (numcodecs VLenBytes, v2 id "vlen-bytes"; Zarr v3
 * "vlen-bytes" of the zarr-extensions registry, the codec of the `bytes` data type): an array of
 * variable-length byte strings. The chunk layout is vlen-utf8's (numcodecs vlen.pyx: a
 * little-endian u32 element count, then per element a u32 length and its bytes); numcodecs
 * writes None as an empty byte string. Decoding yields text only (codec.h, "variable-length
 * elements as text"), bytes that are not printable UTF-8 as \xHH (zf_text_escape_bytes). */
#include <stdlib.h>
#include <string.h>

#include "codec_impl.h"

static zf_status vlen_bytes_decode_text(const zf_codec *c, const zf_chunk_repr *decoded,
                                        const uint8_t *in, size_t in_len, zf_text_chunk **out,
                                        zf_err *err)
{
    return zf_vlen_decode_text(c->ops->name, decoded, in, in_len, false, out, err);
}

/* null is a missing element (\N); a number is its JSON text, as zarr-python 2 reads it (its
 * default fill value of object arrays is 0); a list of integers 0..255 is those bytes (zarrs).
 * An empty string is the empty byte string; any other string is ZF_ERR_UNSUPPORTED:
 * zarr-python 2 would read it as a str, zarr-python 3 as base64, and which one a document means
 * cannot be told here. */
static zf_status vlen_bytes_fill_text(const zf_codec *c, yajl_val fill, char **line,
                                      size_t *len, zf_err *err)
{
    if (!fill || YAJL_IS_NULL(fill)) {
        if (!(*line = strdup("\\N\n")))
            return ZF_ERR_NOMEM;
        *len = 3;
        return ZF_OK;
    }
    if (YAJL_IS_NUMBER(fill) && fill->u.number.r)
        return zf_text_line((const uint8_t *)fill->u.number.r, strlen(fill->u.number.r), line,
                            len);
    if (YAJL_IS_ARRAY(fill)) {
        size_t n = fill->u.array.len;
        uint8_t *b = malloc(n ? n : 1);
        if (!b)
            return ZF_ERR_NOMEM;
        for (size_t i = 0; i < n; i++) {
            yajl_val v = fill->u.array.values[i];
            if (!YAJL_IS_INTEGER(v) || YAJL_GET_INTEGER(v) < 0 || YAJL_GET_INTEGER(v) > 255) {
                free(b);
                return zf_fail(err, ZF_ERR_INVALID, "%s: fill value: byte %zu is not an "
                               "integer 0..255", c->ops->name, i);
            }
            b[i] = (uint8_t)YAJL_GET_INTEGER(v);
        }
        size_t k = zf_text_escape_bytes(b, n, NULL);
        char *l = malloc(k + 1);
        if (l) {
            zf_text_escape_bytes(b, n, l);
            l[k] = '\n';
        }
        free(b);
        if (!l)
            return ZF_ERR_NOMEM;
        *line = l;
        *len = k + 1;
        return ZF_OK;
    }
    if (YAJL_IS_STRING(fill) && !fill->u.string[0])
        return zf_text_line((const uint8_t *)"", 0, line, len); /* empty either way */
    if (YAJL_IS_STRING(fill))
        return zf_fail(err, ZF_ERR_UNSUPPORTED, "%s: a string fill value (a str to zarr-python "
                       "2, base64 to zarr-python 3) is not read", c->ops->name);
    return zf_fail(err, ZF_ERR_INVALID, "%s: fill value: expected null, a number or a list of "
                   "bytes", c->ops->name);
}

static const zf_codec_ops vlen_bytes_ops = {
    .name = "vlen-bytes",
    .kind = ZF_CODEC_ARRAY_TO_BYTES,
    .resolve = zf_vlen_resolve,
    .decode = zf_vlen_decode,
    .destroy = zf_codec_destroy_plain,
    .decode_text = vlen_bytes_decode_text,
    .fill_text = vlen_bytes_fill_text,
};

zf_status zf_codec_vlen_bytes_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    (void)cfg, (void)err; /* numcodecs' VLenBytes has no parameters */
    *out = zf_codec_alloc(sizeof(zf_codec), &vlen_bytes_ops);
    return *out ? ZF_OK : ZF_ERR_NOMEM;
}
