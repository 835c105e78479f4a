/* json2.c — the JSON object codec (numcodecs JSON, v2 id "json2"): a chunk of an object array
 * is one UTF-8 JSON document, the list of its elements — nested one list per dimension of the
 * chunk, as numpy's tolist() gives them — followed by the data type's string and the chunk's
 * shape (numcodecs json.py: `items = np.atleast_1d(buf).tolist(); items.append(buf.dtype.str);
 * items.append(buf.shape)`). Python's encoder writes NaN and ±Infinity bare (allow_nan).
 * Decoding yields text only (codec.h, "variable-length elements as text"): each element one
 * compact JSON document on a line of its own (JSON Lines), null for None. */
#include <stdlib.h>
#include <string.h>

#include "codec_impl.h"
#include "zarrfs/json.h"

/* Elements of a chunk, C order, gathered from the nested lists of the document. */
typedef struct gather {
    yajl_val *elems;
    uint64_t n, want;
} gather;

static zf_status collect(const char *name, yajl_val v, unsigned depth, const zf_chunk_repr *d,
                         gather *g, zf_err *err)
{
    if (depth == d->ndim) {
        if (g->n == g->want)
            return zf_fail(err, ZF_ERR_CORRUPT, "%s: more elements than the chunk holds", name);
        g->elems[g->n++] = v;
        return ZF_OK;
    }
    if (!YAJL_IS_ARRAY(v) || v->u.array.len != d->shape[depth])
        return zf_fail(err, ZF_ERR_CORRUPT, "%s: dimension %u: expected a list of %llu "
                       "elements", name, depth, (unsigned long long)d->shape[depth]);
    for (size_t i = 0; i < v->u.array.len; i++) {
        zf_status st = collect(name, v->u.array.values[i], depth + 1, d, g, err);
        if (st != ZF_OK)
            return st;
    }
    return ZF_OK;
}

static zf_status json2_decode_text(const zf_codec *c, const zf_chunk_repr *decoded,
                                   const uint8_t *in, size_t in_len, zf_text_chunk **out,
                                   zf_err *err)
{
    const char *name = c->ops->name;
    uint64_t want = 1;
    for (unsigned d = 0; d < decoded->ndim; d++)
        want *= decoded->shape[d];
    yajl_val doc;
    zf_err jerr = {""};
    if (zf_json_parse(name, (const char *)in, in_len, &doc, &jerr) != ZF_OK)
        return zf_fail(err, ZF_ERR_CORRUPT, "%s", jerr.msg);
    zf_status st = ZF_OK;
    gather g = {.want = want};
    char **lines = NULL;
    size_t *lens = NULL;
    size_t nitems = YAJL_IS_ARRAY(doc) ? doc->u.array.len : 0;
    if (nitems < 2 || !YAJL_IS_STRING(doc->u.array.values[nitems - 2]) ||
        !YAJL_IS_ARRAY(doc->u.array.values[nitems - 1])) {
        st = zf_fail(err, ZF_ERR_CORRUPT, "%s: expected a list of the elements, the data type "
                     "and the shape", name);
        goto out;
    }
    yajl_val shape = doc->u.array.values[nitems - 1];
    bool shape_ok = shape->u.array.len == decoded->ndim;
    for (unsigned d = 0; shape_ok && d < decoded->ndim; d++) {
        uint64_t s;
        shape_ok = zf_json_uint64(shape->u.array.values[d], &s) && s == decoded->shape[d];
    }
    if (!shape_ok) {
        st = zf_fail(err, ZF_ERR_CORRUPT, "%s: the shape stored is not the chunk's", name);
        goto out;
    }
    g.elems = calloc(want ? want : 1, sizeof *g.elems);
    lines = calloc(want ? want : 1, sizeof *lines);
    lens = calloc(want ? want : 1, sizeof *lens);
    if (!g.elems || !lines || !lens) {
        st = ZF_ERR_NOMEM;
        goto out;
    }
    if (decoded->ndim == 0) { /* np.atleast_1d: one element in a list */
        if (nitems != 3) {
            st = zf_fail(err, ZF_ERR_CORRUPT, "%s: expected one element", name);
            goto out;
        }
        g.elems[g.n++] = doc->u.array.values[0];
    } else {
        struct yajl_val_s items = *doc;
        items.u.array.len = nitems - 2;
        if ((st = collect(name, &items, 0, decoded, &g, err)) != ZF_OK)
            goto out;
    }
    uint64_t total = 0;
    for (uint64_t i = 0; i < want; i++) {
        if ((st = zf_text_json_line(g.elems[i], &lines[i], &lens[i])) != ZF_OK)
            goto out;
        total += lens[i];
    }
    zf_text_chunk *t = zf_text_chunk_alloc(want, total);
    if (!t) {
        st = total >= ((uint64_t)1 << 32)
                 ? zf_fail(err, ZF_ERR_CORRUPT, "%s: the chunk's text reaches 4 GiB", name)
                 : ZF_ERR_NOMEM;
        goto out;
    }
    uint64_t o = 0;
    for (uint64_t i = 0; i < want; i++) {
        memcpy(t->text + o, lines[i], lens[i]);
        o += lens[i];
        t->starts[i + 1] = (uint32_t)o;
    }
    *out = t;
out:
    if (lines)
        for (uint64_t i = 0; i < want; i++)
            free(lines[i]);
    free(lines);
    free(lens);
    free(g.elems);
    yajl_tree_free(doc);
    return st;
}

static const zf_codec_ops json2_ops = {
    .name = "json2",
    .kind = ZF_CODEC_ARRAY_TO_BYTES,
    .resolve = zf_vlen_resolve,
    .decode = zf_vlen_decode,
    .destroy = zf_codec_destroy_plain,
    .decode_text = json2_decode_text,
    .fill_text = zf_text_json_fill,
};

zf_status zf_codec_json2_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    yajl_val enc = zf_cfg_get(cfg, "encoding");
    if (enc && (!YAJL_IS_STRING(enc) || (strcmp(enc->u.string, "utf-8") != 0 &&
                                         strcmp(enc->u.string, "utf8") != 0)))
        return zf_fail(err, ZF_ERR_UNSUPPORTED, "json2: \"encoding\": only utf-8 is read");
    *out = zf_codec_alloc(sizeof(zf_codec), &json2_ops);
    return *out ? ZF_OK : ZF_ERR_NOMEM;
}
