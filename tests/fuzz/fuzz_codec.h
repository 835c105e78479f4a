/* fuzz_codec.h — the codec-chain targets' shared half: the input's header, and decoding plus
 * the encode -> decode round trip of one chunk through a parsed array's chain.
 *
 * Input: "DTYPE SHAPE [EXTRA]\n" CODECS '\0' CHUNK, where DTYPE is a data type as the dialect
 * writes it (v2 "<f8", v3 "float64"), SHAPE the chunk shape as comma-separated integers ("" or
 * "-" for 0-d), EXTRA a dialect-specific option, CODECS the codec configuration as JSON (the
 * target builds the metadata document around it) and CHUNK the stored chunk's bytes. */
#ifndef ZARRFS_FUZZ_CODEC_H
#define ZARRFS_FUZZ_CODEC_H

#include "fuzz.h"
#include "zarrfs/codec.h"
#include "zarrfs/meta.h"

typedef struct fz_codec_input {
    char dtype[192], shape[256], extra[64]; /* shape: "1,2,3" (JSON list members) */
    const uint8_t *codecs, *chunk;
    size_t codecs_n, chunk_n;
} fz_codec_input;

/* Parse the header; false when the input does not have one (the target skips it). */
static bool fz_codec_input_parse(const uint8_t *data, size_t size, fz_codec_input *in)
{
    const uint8_t *p = data, *line;
    size_t n = size, line_n;
    fz_split(&p, &n, "\n", &line, &line_n);
    char *hdr = fz_strndup(line, line_n);
    if (!hdr)
        return false;
    memset(in, 0, sizeof *in);
    char *save, *tok[3] = {NULL, NULL, NULL};
    tok[0] = strtok_r(hdr, " ", &save);
    tok[1] = tok[0] ? strtok_r(NULL, " ", &save) : NULL;
    tok[2] = tok[1] ? strtok_r(NULL, " ", &save) : NULL;
    bool ok = tok[0] && tok[1] && strlen(tok[0]) < sizeof in->dtype &&
              strlen(tok[1]) < sizeof in->shape && (!tok[2] || strlen(tok[2]) < sizeof in->extra);
    for (const char *c = tok[1]; ok && *c; c++)
        ok = (*c >= '0' && *c <= '9') || *c == ',' || *c == '-';
    if (ok) {
        strcpy(in->dtype, tok[0]);
        strcpy(in->shape, strcmp(tok[1], "-") == 0 ? "" : tok[1]);
        if (tok[2])
            strcpy(in->extra, tok[2]);
        const uint8_t *nul = memchr(p, '\0', n);
        in->codecs = p;
        in->codecs_n = nul ? (size_t)(nul - p) : n;
        in->chunk = nul ? nul + 1 : p + n;
        in->chunk_n = nul ? n - in->codecs_n - 1 : 0;
    }
    free(hdr);
    return ok;
}

/* Codecs whose decode(encode(x)) legitimately differs from x (numcodecs' lossy filters,
 * scale_offset's floating-point rounding, a
 * float delta's rounding, categorize's unknown values, packbits of other than booleans), looked for in nested shards too; and
 * any chain whose configuration has an "astype" (a delta computed in a narrower type wraps) or a
 * delta with a float, complex or boolean dtype of its own (fz_codec_run). */
static bool fz_chain_is_lossy(const zf_codec_chain *chain, const zf_chunk_repr *decoded)
{
    static const char *const lossy[] = {"quantize", "bitround", "fixedscaleoffset", "astype",
                                        "categorize", "numcodecs.quantize", "numcodecs.bitround",
                                        "numcodecs.fixedscaleoffset", "numcodecs.astype",
                                        "numcodecs.categorize", "scale_offset", "cast_value",
                                        /* lossy but in reversible mode, and there too for
                                         * unsigned values past the signed maximum (zarrs) */
                                        "zfp", "zfpy"};
    for (size_t i = 0; i < chain->n; i++) {
        const zf_codec *c = chain->codecs[i];
        const char *name = c->ops->name;
        for (size_t k = 0; k < sizeof lossy / sizeof lossy[0]; k++)
            if (strcmp(name, lossy[k]) == 0)
                return true;
        if (strstr(name, "delta") && (decoded->dtype.kind == 'f' || decoded->dtype.kind == 'c'))
            return true;
        if (strstr(name, "packbits") && decoded->dtype.kind != 'b') /* bytes become 0 or 1 */
            return true;
        zf_sharding sh;
        if (zf_codec_sharding(c, &sh) && fz_chain_is_lossy(sh.codecs, sh.inner))
            return true;
    }
    return false;
}

/* A chunk of variable-length elements (a text chain: vlen-utf8, ...): decode in->chunk to text
 * (zf_chain_decode_text); it must fail cleanly or give one line per element of the chunk, each
 * ending in its only '\n', the line index rising to the text's length. No encode: zarrfs
 * writes no text. */
static void fz_codec_run_text(const zf_array_meta *a, const fz_codec_input *in)
{
    uint64_t elems = zf_array_meta_chunk_elems(a);
    zf_chunk_repr r = {.ndim = a->ndim, .dtype = a->dtype, .nbytes = 0};
    memcpy(r.shape, a->chunks, sizeof(uint64_t) * a->ndim);
    zf_err err = {""};
    zf_text_chunk *t = NULL;
    zf_status st = zf_chain_decode_text(&a->chain, &r, in->chunk, in->chunk_n, &t, &err);
    FZ_CHECK(st == ZF_OK || st == ZF_ERR_CORRUPT || st == ZF_ERR_NOMEM, "decode_text status %d",
             st);
    FZ_CHECK((st == ZF_OK) == (t != NULL), "decode_text status %d with text %p", st, (void *)t);
    if (st != ZF_OK)
        return;
    FZ_CHECK(t->nelems == elems, "%llu lines for a chunk of %llu elements",
             (unsigned long long)t->nelems, (unsigned long long)elems);
    FZ_CHECK(t->starts[0] == 0 && t->starts[t->nelems] == t->len, "line index 0..%u, text %llu",
             t->starts[t->nelems], (unsigned long long)t->len);
    for (uint64_t i = 0; i < t->nelems; i++) {
        uint32_t b = t->starts[i], e = t->starts[i + 1];
        FZ_CHECK(b < e && e <= t->len, "line %llu: [%u, %u)", (unsigned long long)i, b, e);
        FZ_CHECK(t->text[e - 1] == '\n' && !memchr(t->text + b, '\n', e - 1 - b),
                 "line %llu is not one line", (unsigned long long)i);
    }
    free(t);
}

/* Decode in->chunk with the array's chain; then encode a chunk (the decoded one, or else the
 * input's bytes) and decode it again: that must succeed and, for lossless chains, give back
 * exactly what was encoded. Chains of variable-length elements only decode (fz_codec_run_text). */
static void fz_codec_run(const zf_node_meta *m, const fz_codec_input *in)
{
    bool lossy_config = memmem(in->codecs, in->codecs_n, "astype", 6) != NULL;
    /* a delta whose own dtype is a float or complex (it need not be the array's), or boolean
     * (numcodecs' decode, a cumulative sum in booleans, is a running OR: [1, 0, 1] encodes to
     * [1, 1, 1] and decodes to [1, 1, 1]; zarrfs does as numcodecs does) */
    static const char *const float_types[] = {"f2\"", "f4\"", "f8\"", "float", "c8\"", "c16\"",
                                              "complex", "b1\"", "bool"};
    if (memmem(in->codecs, in->codecs_n, "delta", 5))
        for (size_t i = 0; i < sizeof float_types / sizeof float_types[0]; i++)
            lossy_config |= memmem(in->codecs, in->codecs_n, float_types[i],
                                   strlen(float_types[i])) != NULL;
    const zf_array_meta *a = &m->array;
    if (m->kind != ZF_NODE_ARRAY || m->unsupported != ZF_OK)
        return;
    if (a->variable_length) {
        if (zf_array_meta_is_text(a))
            fz_codec_run_text(a, in);
        return;
    }
    uint64_t elems = zf_array_meta_chunk_elems(a);
    if (a->dtype.itemsize == 0 || elems > FZ_MAX_CHUNK / a->dtype.itemsize)
        return;
    /* (zarrs' optional types: the data, then a validity-depth byte per element) */
    zf_chunk_repr r = {.ndim = a->ndim, .dtype = a->dtype,
                       .nbytes = (size_t)(elems * (a->dtype.itemsize +
                                                   (a->optional_levels ? 1 : 0)))};
    memcpy(r.shape, a->chunks, sizeof(uint64_t) * a->ndim);
    size_t nb = r.nbytes;
    uint8_t *out = malloc(nb ? nb : 1), *x = malloc(nb ? nb : 1), *back = malloc(nb ? nb : 1);
    if (!out || !x || !back)
        goto done;
    zf_err err = {""};
    zf_status st = zf_chain_decode(&a->chain, &r, in->chunk, in->chunk_n, out, &err);
    FZ_CHECK(st == ZF_OK || st == ZF_ERR_CORRUPT || st == ZF_ERR_NOMEM || st == ZF_ERR_INVALID ||
                 st == ZF_ERR_UNSUPPORTED,
             "decode status %d", st);
    if (st == ZF_OK) {
        memcpy(x, out, nb);
    } else if (in->chunk_n == 0) {
        memset(x, 0, nb);
    } else { /* the input's bytes, repeated (copies, not a byte loop: fuzz builds instrument
              * each comparison of one, and chunks are up to FZ_MAX_CHUNK bytes) */
        size_t k = in->chunk_n < nb ? in->chunk_n : nb;
        memcpy(x, in->chunk, k);
        while (k < nb) {
            size_t c = k < nb - k ? k : nb - k;
            memcpy(x + k, x, c);
            k += c;
        }
    }
    if (a->dtype.kind == 'b' && !a->optional_levels) /* NumPy booleans are 0 or 1 */
        for (size_t i = 0; i < nb; i++)
            x[i] = x[i] != 0;
    uint8_t *enc = NULL;
    size_t enc_n = 0;
    unsigned flags = in->chunk_n & 1 ? ZF_ENCODE_WRITE_EMPTY : 0;
    st = zf_chain_encode(&a->chain, &r, x, flags, &enc, &enc_n, &err);
    if (st == ZF_OK) {
        zf_err derr = {""};
        zf_status ds = zf_chain_decode(&a->chain, &r, enc, enc_n, back, &derr);
        /* A lossy step before a checksum or compressor (in decode order) can make what was
         * encoded undecodable, as with numcodecs (a float delta of zlib's output). */
        bool lossy = lossy_config || fz_chain_is_lossy(&a->chain, &r);
        FZ_CHECK(ds == ZF_OK || (lossy && ds == ZF_ERR_CORRUPT),
                 "decoding what was encoded (%zu -> %zu bytes) failed: %s", nb, enc_n, derr.msg);
        if (!lossy && memcmp(back, x, nb) != 0) {
            size_t i = 0;
            while (i < nb && back[i] == x[i])
                i++;
            FZ_CHECK(i == nb, "round trip differs at byte %zu of %zu (%s, chain of %zu codecs)",
                     i, nb, a->dtype_typestr ? a->dtype_typestr : "?", a->chain.n);
        }
    } else {
        FZ_CHECK(st == ZF_ERR_INVALID || st == ZF_ERR_UNSUPPORTED || st == ZF_ERR_NOMEM,
                 "encode status %d: %s", st, err.msg);
    }
    free(enc);
done:
    free(out);
    free(x);
    free(back);
}

#endif
