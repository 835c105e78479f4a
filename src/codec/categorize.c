/* categorize.c — numcodecs "categorize": strings stored as label numbers (1-based; 0 or any
 * number that names no label decodes to the empty string). Decodes to fixed-width strings:
 * "<Un"/">Un" (UTF-32, as numcodecs does) or "|Sn" (ASCII labels only). Labels longer than the
 * type are cut, as NumPy cuts them on assignment. Object dtype ("|O") is not served.
 *
 * Encoding is numcodecs' enc = zeros(astype); enc[arr == label_i] = i + 1 for each label in
 * turn (a later equal label wins; a value equal to no label stays 0). NumPy compares strings
 * without their trailing NULs, so an element equals a label when their padded forms are equal;
 * a label longer than the type equals no element. The number is cast to astype as NumPy stores
 * a Python int (wrapping: label 256 is 0 in "|u1"). numcodecs itself refuses "|S" dtypes; they
 * are encoded the same way here. */
#include <math.h>
#include <string.h>

#include "codec_impl.h"

typedef struct categorize_codec {
    zf_dtype_filter f; /* dec = dtype (U or S), enc = astype */
    size_t nlabels;
    uint8_t *labels; /* nlabels elements of dec, ready to copy */
    bool *fits;      /* label i holds whole in dec (else no element can equal it) */
} categorize_codec;

static zf_status categorize_decode(const zf_codec *c, const zf_chunk_repr *decoded,
                                   const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len,
                                   zf_err *err)
{
    (void)decoded;
    const categorize_codec *k = (const categorize_codec *)c;
    size_t n, w = k->f.dec.itemsize;
    zf_status st = zf_dtype_filter_count(c, in_len, out_len, &n, err);
    if (st != ZF_OK)
        return st;
    for (size_t i = 0; i < n; i++) {
        zf_num v = zf_dtype_load(&k->f.enc, in, i);
        size_t label = 0; /* 1-based; 0: none */
        if (v.kind == 'u') {
            if (v.v.u >= 1 && v.v.u <= k->nlabels)
                label = (size_t)v.v.u;
        } else if (v.kind == 'i') {
            if (v.v.i >= 1 && (uint64_t)v.v.i <= k->nlabels)
                label = (size_t)v.v.i;
        } else if (v.v.f >= 1 && v.v.f <= (double)k->nlabels && v.v.f == floor(v.v.f)) {
            label = (size_t)v.v.f;
        }
        if (label)
            memcpy(out + i * w, k->labels + (label - 1) * w, w);
        else
            memset(out + i * w, 0, w);
    }
    return ZF_OK;
}

static zf_status categorize_encode(const zf_codec *c, const zf_chunk_repr *decoded,
                                   const uint8_t *in, size_t in_len, unsigned flags,
                                   uint8_t **out, size_t *out_len, zf_err *err)
{
    (void)decoded;
    (void)flags;
    const categorize_codec *k = (const categorize_codec *)c;
    size_t n, w = k->f.dec.itemsize;
    zf_status st = zf_dtype_filter_encode_count(c, in_len, &n, err);
    if (st != ZF_OK)
        return st;
    uint8_t *o = zf_enc_alloc(n * k->f.enc.itemsize);
    if (!o)
        return ZF_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        size_t label = 0;
        for (size_t j = k->nlabels; j-- > 0;) {
            if (k->fits[j] && memcmp(in + i * w, k->labels + j * w, w) == 0) {
                label = j + 1;
                break;
            }
        }
        zf_dtype_store(&k->f.enc, o, i, (zf_num){.kind = 'u', .v.u = label});
    }
    *out = o;
    *out_len = n * k->f.enc.itemsize;
    return ZF_OK;
}

static void categorize_destroy(zf_codec *c)
{
    categorize_codec *k = (categorize_codec *)c;
    free(k->labels);
    free(k->fits);
    free(k);
}

static const zf_codec_ops categorize_ops = {
    .name = "categorize",
    .kind = ZF_CODEC_ARRAY_TO_ARRAY,
    .resolve = zf_dtype_filter_resolve,
    .decode = categorize_decode,
    .destroy = categorize_destroy,
    .decoded_size = zf_dtype_filter_decoded_size,
    .encode = categorize_encode,
};

/* Next code point of a UTF-8 string; false at the end or on a malformed sequence. */
static bool utf8_next(const unsigned char **s, uint32_t *cp, bool *bad)
{
    const unsigned char *p = *s;
    *bad = false;
    if (!*p)
        return false;
    uint32_t c = *p++;
    int more = c < 0x80             ? 0
               : (c & 0xe0) == 0xc0 ? 1
               : (c & 0xf0) == 0xe0 ? 2
               : (c & 0xf8) == 0xf0 ? 3
                                    : -1;
    if (more < 0) {
        *bad = true;
        return false;
    }
    if (more)
        c &= 0x3f >> more;
    for (int i = 0; i < more; i++, p++) {
        if ((*p & 0xc0) != 0x80) {
            *bad = true;
            return false;
        }
        c = c << 6 | (*p & 0x3f);
    }
    if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
        *bad = true;
        return false;
    }
    *cp = c;
    *s = p;
    return true;
}

/* One label as an element of dt at dst (dt->itemsize bytes, zero-filled); *fits: it was not
 * cut. */
static zf_status encode_label(const zf_dtype *dt, const char *label, size_t idx, uint8_t *dst,
                              bool *fits, zf_err *err)
{
    const unsigned char *s = (const unsigned char *)label;
    size_t w = dt->itemsize, pos = 0;
    uint32_t cp;
    bool bad;
    memset(dst, 0, w);
    *fits = true;
    while (utf8_next(&s, &cp, &bad)) {
        if (dt->kind == 'S') {
            if (cp > 0x7f)
                return zf_fail(err, ZF_ERR_INVALID,
                               "categorize: \"labels\"[%zu]: not ASCII, cannot be stored as "
                               "%c%c%zu",
                               idx, dt->byteorder, dt->kind, w);
            if (pos < w)
                dst[pos++] = (uint8_t)cp;
            else
                *fits = false;
        } else if (pos + 4 <= w) {
            for (int b = 0; b < 4; b++)
                dst[pos + (size_t)(dt->byteorder == '>' ? 3 - b : b)] = (uint8_t)(cp >> (8 * b));
            pos += 4;
        } else {
            *fits = false;
        }
    }
    if (bad)
        return zf_fail(err, ZF_ERR_INVALID, "categorize: \"labels\"[%zu]: invalid UTF-8", idx);
    return ZF_OK;
}

zf_status zf_codec_categorize_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    zf_dtype dtype, astype, u1 = {.kind = 'u', .byteorder = '|', .itemsize = 1};
    zf_status st;
    if ((st = zf_cfg_dtype(cfg, "categorize", "dtype", true, NULL, &dtype, err)) ||
        (st = zf_cfg_dtype(cfg, "categorize", "astype", false, &u1, &astype, err)))
        return st;
    char a[32];
    if (dtype.kind == 'O')
        return zf_fail(err, ZF_ERR_UNSUPPORTED,
                       "categorize: object arrays (dtype \"|O\") are not supported");
    if ((dtype.kind != 'U' && dtype.kind != 'S') || dtype.itemsize == 0)
        return zf_fail(err, ZF_ERR_INVALID,
                       "categorize: \"dtype\": %s: expected a string type such as \"<U8\"",
                       zf_dtype_str(&dtype, a));
    if (!strchr("biuf", astype.kind))
        return zf_fail(err, ZF_ERR_INVALID, "categorize: \"astype\": %s: expected a numeric type",
                       zf_dtype_str(&astype, a));
    yajl_val labels = zf_cfg_get(cfg, "labels");
    if (!YAJL_IS_ARRAY(labels))
        return zf_fail(err, ZF_ERR_INVALID, "categorize: \"labels\": expected a list of strings");
    size_t nl = labels->u.array.len;
    categorize_codec *k = zf_codec_alloc(sizeof *k, &categorize_ops);
    if (!k)
        return ZF_ERR_NOMEM;
    k->f.dec = dtype;
    k->f.enc = astype;
    if (nl && (nl > SIZE_MAX / dtype.itemsize || !(k->labels = malloc(nl * dtype.itemsize)) ||
               !(k->fits = malloc(nl * sizeof *k->fits)))) {
        free(k->labels);
        free(k);
        return ZF_ERR_NOMEM;
    }
    k->nlabels = nl;
    for (size_t i = 0; i < nl; i++) {
        yajl_val l = labels->u.array.values[i];
        st = YAJL_IS_STRING(l)
                 ? encode_label(&dtype, l->u.string, i, k->labels + i * dtype.itemsize,
                                &k->fits[i], err)
                 : zf_fail(err, ZF_ERR_INVALID, "categorize: \"labels\"[%zu]: expected a string",
                           i);
        if (st != ZF_OK) {
            categorize_destroy(&k->f.base);
            return st;
        }
    }
    *out = &k->f.base;
    return ZF_OK;
}
