/* text.c — what the object codecs share: the text form of a chunk of variable-length elements
 * (codec.h, "variable-length elements as text"): its allocation, PostgreSQL COPY's text escaping
 * and the reordering of lines for a transpose (v2 `order: "F"`). */
#include <stdlib.h>
#include <string.h>

#include "codec_impl.h"

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
