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

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Strict UTF-8 as Python decodes it: no overlong forms, surrogates or code points past
 * U+10FFFF. */
static bool valid_utf8(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k;
        uint8_t lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF)
            k = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            k = 2;
            if (c == 0xE0)
                lo = 0xA0;
            else if (c == 0xED)
                hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            k = 3;
            if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                hi = 0x8F;
        } else
            return false;
        if (n - i <= k)
            return false;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return false;
        for (size_t j = 2; j <= k; j++)
            if ((s[i + j] & 0xC0) != 0x80)
                return false;
        i += k + 1;
    }
    return true;
}

static zf_status vlen_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                              zf_chunk_repr *encoded, zf_err *err)
{
    if (decoded->dtype.kind != 'O')
        return zf_fail(err, ZF_ERR_INVALID, "%s: serves only variable-length (object) data types",
                       c->ops->name);
    zf_repr_bytes(encoded, ZF_SIZE_UNKNOWN);
    return ZF_OK;
}

static zf_status vlen_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                             size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    (void)decoded, (void)in, (void)in_len, (void)out, (void)out_len;
    return zf_fail(err, ZF_ERR_INVALID, "%s: decodes to text only", c->ops->name);
}

static zf_status vlen_decode_text(const zf_codec *c, const zf_chunk_repr *decoded,
                                  const uint8_t *in, size_t in_len, zf_text_chunk **out,
                                  zf_err *err)
{
    const char *name = c->ops->name;
    uint64_t want = 1;
    for (unsigned d = 0; d < decoded->ndim; d++)
        want *= decoded->shape[d];
    if (in_len < 4)
        return zf_fail(err, ZF_ERR_CORRUPT, "%s: %zu bytes, too short for the element count",
                       name, in_len);
    int32_t count = (int32_t)le32(in);
    if (count < 0)
        return zf_fail(err, ZF_ERR_CORRUPT, "%s: negative element count %d", name, count);
    if ((uint64_t)count != want)
        return zf_fail(err, ZF_ERR_CORRUPT, "%s: %d elements, the chunk holds %llu", name,
                       count, (unsigned long long)want);
    /* First pass: check every length and the UTF-8, and count the text's bytes. */
    uint64_t total = 0;
    size_t p = 4;
    for (uint64_t i = 0; i < want; i++) {
        if (in_len - p < 4)
            return zf_fail(err, ZF_ERR_CORRUPT, "%s: element %llu: its length is past the end",
                           name, (unsigned long long)i);
        int32_t n = (int32_t)le32(in + p);
        p += 4;
        if (n < 0 || (size_t)n > in_len - p)
            return zf_fail(err, ZF_ERR_CORRUPT,
                           "%s: element %llu: length %d runs past the end of the chunk (%zu "
                           "bytes)", name, (unsigned long long)i, n, in_len);
        if (!valid_utf8(in + p, (size_t)n))
            return zf_fail(err, ZF_ERR_CORRUPT, "%s: element %llu is not valid UTF-8", name,
                           (unsigned long long)i);
        total += zf_text_escaped_len(in + p, (size_t)n) + 1;
        p += (size_t)n;
    }
    zf_text_chunk *t = zf_text_chunk_alloc(want, total);
    if (!t)
        return total >= ((uint64_t)1 << 32)
                   ? zf_fail(err, ZF_ERR_CORRUPT, "%s: the chunk's text reaches 4 GiB", name)
                   : ZF_ERR_NOMEM;
    /* Second pass: the lines. */
    size_t o = 0;
    p = 4;
    for (uint64_t i = 0; i < want; i++) {
        size_t n = le32(in + p);
        p += 4;
        o += zf_text_escape(in + p, n, t->text + o);
        t->text[o++] = '\n';
        t->starts[i + 1] = (uint32_t)o;
        p += n;
    }
    *out = t;
    return ZF_OK;
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
    .resolve = vlen_resolve,
    .decode = vlen_decode,
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
