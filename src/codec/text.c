/* text.c — what the object codecs share: the text form of a chunk of variable-length elements
 * (codec.h, "variable-length elements as text"): its allocation, PostgreSQL COPY's text escaping
 * (and its \xHH form for bytes that are not printable UTF-8), numcodecs' length-prefixed
 * layout of vlen-utf8 and vlen-bytes chunks, and the reordering of lines for a transpose (v2
 * `order: "F"`). */
#include <stdlib.h>
#include <string.h>

#include "codec_impl.h"
#include "zarrfs/json.h"

zf_text_chunk *zf_text_chunk_alloc(uint64_t nelems, uint64_t len)
{
    if (len >= ((uint64_t)1 << 32) || nelems >= ((uint64_t)1 << 40))
        return NULL;
    size_t head = sizeof(zf_text_chunk) + (size_t)(nelems + 1) * sizeof(uint32_t);
    zf_text_chunk *t = malloc(head + (size_t)len + 1);
    if (!t)
        return NULL;
    t->nelems = nelems;
    t->len = len;
    t->starts = (uint32_t *)(t + 1);
    t->text = (char *)t + head;
    t->starts[0] = 0;
    return t;
}

size_t zf_text_escaped_len(const uint8_t *s, size_t n)
{
    size_t k = n;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\\' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')
            k++;
    return k;
}

size_t zf_text_escape(const uint8_t *s, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char e = s[i] == '\\' ? '\\' : s[i] == '\n' ? 'n' : s[i] == '\r' ? 'r'
                                                     : s[i] == '\t' ? 't' : 0;
        if (e) {
            out[o++] = '\\';
            out[o++] = e;
        } else {
            out[o++] = (char)s[i];
        }
    }
    return o;
}

zf_status zf_text_line(const uint8_t *s, size_t n, char **line, size_t *len)
{
    size_t k = zf_text_escaped_len(s, n);
    char *l = malloc(k + 1);
    if (!l)
        return ZF_ERR_NOMEM;
    zf_text_escape(s, n, l);
    l[k] = '\n';
    *line = l;
    *len = k + 1;
    return ZF_OK;
}

zf_status zf_text_transpose(const zf_text_chunk *t, unsigned ndim, const uint64_t *enc,
                            const unsigned *order, zf_text_chunk **out)
{
    /* Decoded axis order[i] is encoded axis i: its length and its stride in the encoded array. */
    uint64_t dshape[ZF_MAX_DIMS], dstride[ZF_MAX_DIMS], estride[ZF_MAX_DIMS];
    uint64_t s = 1;
    for (unsigned i = ndim; i-- > 0;) {
        estride[i] = s;
        s *= enc[i];
    }
    for (unsigned i = 0; i < ndim; i++) {
        dshape[order[i]] = enc[i];
        dstride[order[i]] = estride[i];
    }
    zf_text_chunk *o = zf_text_chunk_alloc(t->nelems, t->len);
    if (!o)
        return ZF_ERR_NOMEM;
    uint64_t coords[ZF_MAX_DIMS] = {0}, src = 0, pos = 0;
    for (uint64_t i = 0; i < t->nelems; i++) {
        uint32_t b = t->starts[src], n = t->starts[src + 1] - b;
        memcpy(o->text + pos, t->text + b, n);
        pos += n;
        o->starts[i + 1] = (uint32_t)pos;
        for (unsigned d = ndim; d-- > 0;) { /* next decoded element: its encoded index */
            src += dstride[d];
            if (++coords[d] < dshape[d])
                break;
            src -= dstride[d] * dshape[d];
            coords[d] = 0;
        }
    }
    *out = o;
    return ZF_OK;
}

bool zf_text_valid_utf8(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t k = zf_text_utf8_seq(s + i, n - i);
        if (!k)
            return false;
        i += k;
    }
    return true;
}

size_t zf_text_utf8_seq(const uint8_t *s, size_t n)
{
    uint8_t c = s[0];
    if (c < 0x80)
        return 1;
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
        return 0;
    if (n <= k || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t j = 2; j <= k; j++)
        if ((s[j] & 0xC0) != 0x80)
            return 0;
    return k + 1;
}

size_t zf_text_escape_bytes(const uint8_t *s, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        uint8_t c = s[i];
        char e = c == '\\' ? '\\' : c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't' : 0;
        size_t k = c >= 0x80 ? zf_text_utf8_seq(s + i, n - i) : 1;
        if (e) {
            if (out) {
                out[o] = '\\';
                out[o + 1] = e;
            }
            o += 2;
        } else if (c < 0x20 || c == 0x7F || k == 0 || (c == 0xC2 && s[i + 1] < 0xA0) ||
                   (c == 0xE2 && s[i + 1] == 0x80 && (s[i + 2] == 0xA8 || s[i + 2] == 0xA9))) {
            /* a control character (C0, DEL, C1 U+0080..U+009F), a line or paragraph separator
             * (U+2028, U+2029: line breaks to Python's splitlines) or a byte outside UTF-8 */
            if (out) {
                out[o] = '\\';
                out[o + 1] = 'x';
                out[o + 2] = hex[c >> 4];
                out[o + 3] = hex[c & 15];
            }
            o += 4;
            k = 1;
        } else {
            if (out)
                memcpy(out + o, s + i, k);
            o += k;
        }
        i += k;
    }
    return o;
}

zf_status zf_vlen_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                          zf_chunk_repr *encoded, zf_err *err)
{
    if (decoded->dtype.kind != 'O')
        return zf_fail(err, ZF_ERR_INVALID, "%s: serves only variable-length (object) data types",
                       c->ops->name);
    zf_repr_bytes(encoded, ZF_SIZE_UNKNOWN);
    return ZF_OK;
}

zf_status zf_vlen_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                         size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    (void)decoded, (void)in, (void)in_len, (void)out, (void)out_len;
    return zf_fail(err, ZF_ERR_INVALID, "%s: decodes to text only", c->ops->name);
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

zf_status zf_vlen_decode_lines(const char *name, const zf_chunk_repr *decoded, const uint8_t *in,
                               size_t in_len, zf_vlen_line_fn line, const void *ctx,
                               const char *what, zf_text_chunk **out, zf_err *err)
{
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
    /* First pass: check every length and element, and count the text's bytes. */
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
        size_t k = line(ctx, in + p, (size_t)n, NULL);
        if (k == SIZE_MAX)
            return zf_fail(err, ZF_ERR_CORRUPT, "%s: element %llu is not %s", name,
                           (unsigned long long)i, what);
        total += k;
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
        o += line(ctx, in + p, n, t->text + o);
        t->starts[i + 1] = (uint32_t)o;
        p += n;
    }
    *out = t;
    return ZF_OK;
}

static size_t utf8_line(const void *ctx, const uint8_t *s, size_t n, char *out)
{
    (void)ctx;
    if (!out && !zf_text_valid_utf8(s, n))
        return SIZE_MAX;
    size_t k = out ? zf_text_escape(s, n, out) : zf_text_escaped_len(s, n);
    if (out)
        out[k] = '\n';
    return k + 1;
}

static size_t bytes_line(const void *ctx, const uint8_t *s, size_t n, char *out)
{
    (void)ctx;
    size_t k = zf_text_escape_bytes(s, n, out);
    if (out)
        out[k] = '\n';
    return k + 1;
}

zf_status zf_vlen_decode_text(const char *name, const zf_chunk_repr *decoded, const uint8_t *in,
                              size_t in_len, bool utf8, zf_text_chunk **out, zf_err *err)
{
    return zf_vlen_decode_lines(name, decoded, in, in_len, utf8 ? utf8_line : bytes_line, NULL,
                                "valid UTF-8", out, err);
}

static bool line_separator(const char *j, size_t i, size_t n) /* U+2028, U+2029 at j[i] */
{
    return i + 2 < n && (uint8_t)j[i] == 0xE2 && (uint8_t)j[i + 1] == 0x80 &&
           ((uint8_t)j[i + 2] == 0xA8 || (uint8_t)j[i + 2] == 0xA9);
}

zf_status zf_text_json_line(yajl_val v, char **line, size_t *len)
{
    char *j = zf_json_dump(v);
    if (!j)
        return ZF_ERR_NOMEM;
    size_t n = strlen(j), extra = 0;
    for (size_t i = 0; i < n; i++)
        extra += line_separator(j, i, n) ? 3 : 0;
    char *l = malloc(n + extra + 1);
    if (!l) {
        free(j);
        return ZF_ERR_NOMEM;
    }
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (line_separator(j, i, n)) {
            memcpy(l + o, (uint8_t)j[i + 2] == 0xA8 ? "\\u2028" : "\\u2029", 6);
            o += 6;
            i += 2;
        } else {
            l[o++] = j[i];
        }
    }
    l[o++] = '\n';
    free(j);
    *line = l;
    *len = o;
    return ZF_OK;
}

zf_status zf_text_json_fill(const zf_codec *c, yajl_val fill, char **line, size_t *len,
                            zf_err *err)
{
    (void)c, (void)err;
    return zf_text_json_line(fill, line, len);
}

zf_status zf_vlen_dtype_utf8(const char *codec, const zf_chunk_repr *cur, bool *utf8,
                             zf_err *err)
{
    if (cur->dtype.kind == 'O' && strcmp(cur->dtype.unit, "string") == 0)
        *utf8 = true;
    else if (cur->dtype.kind == 'O' && strcmp(cur->dtype.unit, "bytes") == 0)
        *utf8 = false;
    else
        return zf_fail(err, ZF_ERR_UNSUPPORTED,
                       "%s: serves the data types string and bytes only (this one is not known "
                       "as either)", codec);
    return ZF_OK;
}
