/* v3.c — codec lists of Zarr v3 ("codecs") and of the May 2022 draft, and the October 2020
 * draft's "compressor".
 *
 * Zarr v3 core, "Codecs": the list is zero or more array -> array codecs, exactly one
 * array -> bytes codec, then zero or more bytes -> bytes codecs; "Determination of encoded
 * representations": each codec is built for, and resolved against, the representation the
 * codecs before it produce (resolve forwards), so a transpose knows its dimensions, a bytes codec
 * its data type and a sharding codec its shard shape.
 *
 * Each codec is an extension object (core "Extension definition"): {"name": N,
 * "configuration": {...}} or, since v3.1 ("Short-hand names"), the bare string N.
 * "must_understand": an object may say "must_understand": false when "implementations can ignore
 * its presence"; an implementation must fail on anything it does not recognise unless so marked.
 * For a codec that means: a codec zarrfs does not know, marked must_understand: false, is left out
 * of the chain (decoded as if absent); a known codec is used whatever the flag says; an unknown
 * codec without the flag is ZF_ERR_UNSUPPORTED. Members of a codec object other than name,
 * configuration and must_understand are refused (the rule above), as are unknown fields of
 * the configuration of the codecs the Zarr v3 specification defines (its codecs/ pages).
 *
 * Names (ZF_CODECS_V3): bytes (and "endian", its name before v3 was accepted), transpose, gzip,
 * zstd, blosc, crc32c, sharding_indexed, and zarr-python 3's "numcodecs.<id>" for every
 * numcodecs id registry.c serves: the configuration is numcodecs' own without "id"
 * (numcodecs.zarr3 builds {"id": <id>, **configuration}). numcodecs.zarr3 makes delta,
 * fixedscaleoffset, astype, quantize, bitround and packbits array -> array codecs and the
 * compressors, shuffle and the checksums (with fletcher32 and jenkins_lookup3) bytes -> bytes
 * codecs; categorize (a -> a) and base64 (b -> b) are accepted by their nature although
 * numcodecs.zarr3 does not list them. Also zarrs' "bitround" (its own rounding rules,
 * bitround.c), the zarr-extensions "reshape" and zarrs' "zarrs.squeeze" (reshape.c), the
 * zarr-extensions "zfp" (zfp.c; zarrs' "zarrs.zfp"), and zarrs' URL aliases of bitround,
 * numcodecs.fletcher32, zfp, numcodecs.zfpy and numcodecs.pcodec (v3_aliases). The
 * zarr-extensions "scale_offset" (array -> array; its encode_fill gives the fill value the codecs
 * after it see, next_fill), "conditional" (bytes -> bytes, wrapping a list of bytes -> bytes
 * codecs built here too: zf_chain_from_v3_bytes_at) and "n5_default" (array -> bytes, N5 blocks
 * wrapping a list of its own: n5_default.c), and zarrs' "zarrs.vlen" and "zarrs.vlen_v2" (array
 * -> bytes for string and bytes arrays, also under their codec.zarrs.dev URLs).
 * The zarr-extensions "packbits" (array -> bytes, packbits_v3.c: the v3 name "packbits" is the
 * registry's codec, "numcodecs.packbits" numcodecs' bool filter) and "cast_value" (array ->
 * array, cast_value.c; like scale_offset it gives the codecs after it its cast fill value).
 * numcodecs' array -> array filters and zarrs' bitround know only NumPy's types: on the
 * registry's other types (zf_dtype.ext) they are ZF_ERR_UNSUPPORTED.
 * zarrs' "optional" (also "zarrs.optional" and its URL; optional.c) wraps mask and data
 * lists of its own; its masks use the registry's packbits.
 *
 * The May 2022 draft (ZF_CODECS_DRAFT_2022), "Array metadata", "codecs": objects naming their
 * codec by URI, under "codec" (the key of the October 2020 draft's codec objects) or "type" (the
 * key the 2022 draft's own text and examples use), with an optional "configuration" (and
 * "must_understand", treated as in v3); URIs https://purl.org/zarr/spec/codec/<name>/1.0 (the
 * draft's examples spell it .../codecs/...; both are accepted) for gzip, blosc, endian and
 * transpose; other URIs are ZF_ERR_UNSUPPORTED by URI. The
 * draft has no mandatory array -> bytes codec: "Conversion between multi-dimensional array and
 * byte string representations" converts with "the default binary representation of each
 * element", which "Data types" defines as little endian ("While the default binary
 * representation is little endian, the endian codec may be specified to use big endian
 * encoding instead"; the endian codec spec of the time: "specifying this codec with endian
 * equal to "little" is equivalent to omitting this codec"). So a draft list without an endian
 * codec gets an implicit little-endian bytes codec before its first bytes -> bytes codec (or at
 * the end). The transpose codec's draft spec of the time says implementations "must fail if this
 * codec is specified immediately after another codec that produces a byte string", so array ->
 * array codecs after the conversion are refused as in v3; its order may be a permutation or
 * "C" (identity) or "F" (reversed axes). */
#include <stdio.h>
#include <string.h>

#include "codec_impl.h"

#define NUMCODECS_PREFIX "numcodecs."

zf_status zf_v3_check_keys(yajl_val cfg, const char *codec, const char *const *allowed,
                           zf_err *err)
{
    if (!cfg)
        return ZF_OK;
    if (!YAJL_IS_OBJECT(cfg))
        return zf_fail(err, ZF_ERR_INVALID, "%s: \"configuration\": expected an object", codec);
    for (size_t i = 0; i < cfg->u.object.len; i++) {
        const char *k = cfg->u.object.keys[i];
        bool ok = false;
        for (size_t j = 0; allowed[j] && !ok; j++)
            ok = strcmp(k, allowed[j]) == 0;
        if (!ok)
            return zf_fail(err, ZF_ERR_INVALID, "%s: \"%.100s\": unknown configuration field",
                           codec, k);
    }
    return ZF_OK;
}

/* --- synthesised numcodecs configuration objects --- */

/* A JSON object borrowing the values of another plus a few of its own, for the numcodecs
 * constructors (which only read it). */
typedef struct synth {
    struct yajl_val_s obj;
    const char **keys;
    yajl_val *vals;
    struct yajl_val_s own[6];
    char text[6][24];
    unsigned nown;
} synth;

static bool synth_init(synth *s, size_t cap)
{
    memset(s, 0, sizeof *s);
    s->obj.type = yajl_t_object;
    s->keys = malloc((cap ? cap : 1) * sizeof *s->keys);
    s->vals = malloc((cap ? cap : 1) * sizeof *s->vals);
    s->obj.u.object.keys = s->keys;
    s->obj.u.object.values = s->vals;
    return s->keys && s->vals;
}

static void synth_free(synth *s)
{
    free(s->keys);
    free(s->vals);
}

static void synth_add(synth *s, const char *key, yajl_val v)
{
    size_t n = s->obj.u.object.len++;
    s->keys[n] = key;
    s->vals[n] = v;
}

static void synth_add_string(synth *s, const char *key, const char *str)
{
    yajl_val v = &s->own[s->nown++];
    v->type = yajl_t_string;
    v->u.string = (char *)(uintptr_t)str; /* only read: yajl's type is not const */
    synth_add(s, key, v);
}

static void synth_add_int(synth *s, const char *key, long long i)
{
    char *t = s->text[s->nown];
    yajl_val v = &s->own[s->nown++];
    snprintf(t, sizeof s->text[0], "%lld", i);
    v->type = yajl_t_number;
    v->u.number.i = i;
    v->u.number.d = (double)i;
    v->u.number.r = t;
    v->u.number.flags = YAJL_NUMBER_INT_VALID | YAJL_NUMBER_DOUBLE_VALID;
    synth_add(s, key, v);
}

/* zf_codec_from_v2 on {"id": id, ...cfg} (cfg's own "id", if any, is ignored). On
 * ZF_ERR_UNSUPPORTED the message names `shown` (the name as the metadata wrote it). */
static zf_status from_numcodecs(const char *id, yajl_val cfg, const char *shown,
                                zf_codec **out, zf_err *err)
{
    *out = NULL;
    if (cfg && !YAJL_IS_OBJECT(cfg))
        return zf_fail(err, ZF_ERR_INVALID, "%.200s: \"configuration\": expected an object",
                       shown);
    size_t n = cfg ? cfg->u.object.len : 0;
    synth s;
    if (!synth_init(&s, n + 1)) {
        synth_free(&s);
        return ZF_ERR_NOMEM;
    }
    synth_add_string(&s, "id", id);
    for (size_t i = 0; i < n; i++)
        if (strcmp(cfg->u.object.keys[i], "id") != 0)
            synth_add(&s, cfg->u.object.keys[i], cfg->u.object.values[i]);
    zf_err e = {""};
    zf_status st = zf_codec_from_v2(&s.obj, out, &e);
    synth_free(&s);
    if (st == ZF_ERR_UNSUPPORTED) {
        const char *why = strstr(e.msg, " (");
        return zf_fail(err, st, "codec \"%.200s\" is not supported%s", shown, why ? why : "");
    }
    if (st != ZF_OK && err)
        *err = e;
    return st;
}

/* numcodecs.zarr3's kind of each numcodecs id (shuffle and the checksums work on bytes there,
 * whatever registry.c's codec says); NULL kind pointer when the id is not listed. */
static const struct {
    const char *id;
    zf_codec_kind kind;
} numcodecs_kinds[] = {
    {"delta", ZF_CODEC_ARRAY_TO_ARRAY},     {"fixedscaleoffset", ZF_CODEC_ARRAY_TO_ARRAY},
    {"astype", ZF_CODEC_ARRAY_TO_ARRAY},    {"quantize", ZF_CODEC_ARRAY_TO_ARRAY},
    {"bitround", ZF_CODEC_ARRAY_TO_ARRAY},  {"packbits", ZF_CODEC_ARRAY_TO_ARRAY},
    {"categorize", ZF_CODEC_ARRAY_TO_ARRAY}, {"zlib", ZF_CODEC_BYTES_TO_BYTES},
    {"gzip", ZF_CODEC_BYTES_TO_BYTES},      {"bz2", ZF_CODEC_BYTES_TO_BYTES},
    {"lzma", ZF_CODEC_BYTES_TO_BYTES},      {"zstd", ZF_CODEC_BYTES_TO_BYTES},
    {"lz4", ZF_CODEC_BYTES_TO_BYTES},       {"blosc", ZF_CODEC_BYTES_TO_BYTES},
    {"shuffle", ZF_CODEC_BYTES_TO_BYTES},   {"crc32", ZF_CODEC_BYTES_TO_BYTES},
    {"adler32", ZF_CODEC_BYTES_TO_BYTES},   {"crc32c", ZF_CODEC_BYTES_TO_BYTES},
    {"base64", ZF_CODEC_BYTES_TO_BYTES},    {"fletcher32", ZF_CODEC_BYTES_TO_BYTES},
    {"jenkins_lookup3", ZF_CODEC_BYTES_TO_BYTES}, {"pcodec", ZF_CODEC_ARRAY_TO_BYTES},
    {"zfpy", ZF_CODEC_ARRAY_TO_BYTES},       {"vlen-utf8", ZF_CODEC_ARRAY_TO_BYTES},
    {"vlen-bytes", ZF_CODEC_ARRAY_TO_BYTES},
};

static bool numcodecs_kind(const char *id, zf_codec_kind *kind)
{
    for (size_t i = 0; i < sizeof numcodecs_kinds / sizeof numcodecs_kinds[0]; i++)
        if (strcmp(id, numcodecs_kinds[i].id) == 0) {
            *kind = numcodecs_kinds[i].kind;
            return true;
        }
    return false;
}

/* A numcodecs codec in a v3 chain: the v3 kind, and for array -> array codecs the chunk's shape
 * kept when the element count is (zarr-python 3 keeps the chunk spec's shape: the dtype filters
 * work on the flat buffer, which is the same elements in C order), so a transpose may follow. */
typedef struct numcodecs_v3 {
    zf_codec base;
    zf_codec_ops ops; /* base.ops: the inner codec's name, its decoded_size, the v3 kind */
    zf_codec *inner;
} numcodecs_v3;

static zf_status nc_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                            zf_chunk_repr *encoded, zf_err *err)
{
    const numcodecs_v3 *w = (const numcodecs_v3 *)c;
    zf_status st = w->inner->ops->resolve(w->inner, decoded, encoded, err);
    if (st != ZF_OK || w->ops.kind != ZF_CODEC_ARRAY_TO_ARRAY || encoded->ndim != 1 ||
        decoded->ndim == 1 || encoded->nbytes == ZF_SIZE_UNKNOWN)
        return st;
    uint64_t n = 1;
    for (unsigned i = 0; i < decoded->ndim; i++)
        n *= decoded->shape[i]; /* no overflow: decoded->nbytes is known */
    if (n == encoded->shape[0]) {
        encoded->ndim = decoded->ndim;
        memcpy(encoded->shape, decoded->shape, decoded->ndim * sizeof decoded->shape[0]);
    }
    return ZF_OK;
}

static zf_status nc_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                           size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    const numcodecs_v3 *w = (const numcodecs_v3 *)c;
    return w->inner->ops->decode(w->inner, decoded, in, in_len, out, out_len, err);
}

static zf_status nc_decoded_size(const zf_codec *c, const uint8_t *in, size_t in_len,
                                 size_t *out_len, zf_err *err)
{
    const numcodecs_v3 *w = (const numcodecs_v3 *)c;
    return w->inner->ops->decoded_size(w->inner, in, in_len, out_len, err);
}

static zf_status nc_decode_bounded(const zf_codec *c, const uint8_t *in, size_t in_len,
                                   uint8_t *out, size_t cap, size_t *produced, zf_err *err)
{
    const numcodecs_v3 *w = (const numcodecs_v3 *)c;
    return w->inner->ops->decode_bounded(w->inner, in, in_len, out, cap, produced, err);
}

static zf_status nc_encode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                           size_t in_len, unsigned flags, uint8_t **out, size_t *out_len,
                           zf_err *err)
{
    const numcodecs_v3 *w = (const numcodecs_v3 *)c;
    /* The inner codec sees the flat representation it was made for (its own resolve's input
     * is the same bytes whatever shape nc_resolve kept). */
    return w->inner->ops->encode(w->inner, decoded, in, in_len, flags, out, out_len, err);
}

static zf_status nc_decode_text(const zf_codec *c, const zf_chunk_repr *decoded,
                                const uint8_t *in, size_t in_len, zf_text_chunk **out,
                                zf_err *err)
{
    const numcodecs_v3 *w = (const numcodecs_v3 *)c;
    return w->inner->ops->decode_text(w->inner, decoded, in, in_len, out, err);
}

static zf_status nc_fill_text(const zf_codec *c, yajl_val fill, char **line, size_t *len,
                              zf_err *err)
{
    const numcodecs_v3 *w = (const numcodecs_v3 *)c;
    return w->inner->ops->fill_text(w->inner, fill, line, len, err);
}

static void nc_destroy(zf_codec *c)
{
    numcodecs_v3 *w = (numcodecs_v3 *)c;
    zf_codec_free(w->inner);
    free(w);
}

/* name: "numcodecs.<id>"; shown: the name as the metadata wrote it (an alias, maybe). */
static zf_status numcodecs_new(const char *name, const char *shown, yajl_val cfg,
                               zf_codec **out, zf_err *err)
{
    const char *id = name + strlen(NUMCODECS_PREFIX);
    zf_codec *inner;
    zf_status st = from_numcodecs(id, cfg, shown, &inner, err);
    if (st != ZF_OK)
        return st;
    numcodecs_v3 *w = calloc(1, sizeof *w);
    if (!w) {
        zf_codec_free(inner);
        return ZF_ERR_NOMEM;
    }
    w->inner = inner;
    w->ops.name = inner->ops->name;
    if (!numcodecs_kind(id, &w->ops.kind))
        w->ops.kind = inner->ops->kind;
    w->ops.resolve = nc_resolve;
    w->ops.decode = nc_decode;
    w->ops.destroy = nc_destroy;
    w->ops.decoded_size = inner->ops->decoded_size ? nc_decoded_size : NULL;
    w->ops.decode_bounded = inner->ops->decode_bounded ? nc_decode_bounded : NULL;
    w->ops.encode = inner->ops->encode ? nc_encode : NULL;
    w->ops.decode_text = inner->ops->decode_text ? nc_decode_text : NULL;
    w->ops.fill_text = inner->ops->fill_text ? nc_fill_text : NULL;
    w->base.ops = &w->ops;
    *out = &w->base;
    return ZF_OK;
}

/* --- the codecs of the Zarr v3 specification --- */

static zf_status transpose_new(yajl_val cfg, const zf_chunk_repr *cur, zf_codec **out,
                               zf_err *err)
{
    static const char *const keys[] = {"order", NULL};
    zf_status st = zf_v3_check_keys(cfg, "transpose", keys, err);
    if (st != ZF_OK)
        return st;
    yajl_val order = zf_cfg_get(cfg, "order");
    unsigned nd = cur->ndim, perm[ZF_MAX_DIMS];
    if (!order)
        return zf_fail(err, ZF_ERR_INVALID, "transpose: \"order\": missing");
    if (YAJL_IS_STRING(order) &&
        (strcmp(order->u.string, "C") == 0 || strcmp(order->u.string, "F") == 0)) {
        /* Transpose codec as first published (and the 2022 draft): "C" is the identity, "F"
         * the reversed axes. The accepted spec dropped both ("Changes after acceptance"). */
        bool f = order->u.string[0] == 'F';
        for (unsigned i = 0; i < nd; i++)
            perm[i] = f ? nd - 1 - i : i;
    } else if (YAJL_IS_ARRAY(order)) {
        size_t n = order->u.array.len;
        if (n != nd)
            return zf_fail(err, ZF_ERR_INVALID,
                           "transpose: \"order\": %zu entries for an array of %u dimensions", n,
                           nd);
        for (size_t i = 0; i < n; i++) {
            yajl_val v = order->u.array.values[i];
            if (!YAJL_IS_INTEGER(v) || v->u.number.i < 0 || v->u.number.i >= (long long)nd ||
                strpbrk(v->u.number.r, ".eE"))
                return zf_fail(err, ZF_ERR_INVALID,
                               "transpose: \"order\": expected a permutation of 0..%u",
                               nd ? nd - 1 : 0);
            perm[i] = (unsigned)v->u.number.i;
        }
    } else {
        return zf_fail(err, ZF_ERR_INVALID,
                       "transpose: \"order\": expected a list of dimension indices");
    }
    return zf_codec_transpose_new(nd, perm, out, err);
}

static zf_status gzip_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    /* gzip codec, "Configuration parameters": level, an integer from 0 to 9. */
    static const char *const keys[] = {"level", NULL};
    long long level;
    zf_status st;
    if ((st = zf_v3_check_keys(cfg, "gzip", keys, err)) ||
        (st = zf_cfg_int(cfg, "gzip", "level", false, false, 1, 0, 9, &level, err)))
        return st;
    return zf_codec_gzip_new(cfg, out, err);
}

static zf_status zstd_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    /* zstd codec: level from -131072 to 22; checksum (optional) a boolean. */
    static const char *const keys[] = {"level", "checksum", NULL};
    long long level;
    zf_status st;
    if ((st = zf_v3_check_keys(cfg, "zstd", keys, err)) ||
        (st = zf_cfg_int(cfg, "zstd", "level", false, false, 0, -131072, 22, &level, err)))
        return st;
    yajl_val ck = zf_cfg_get(cfg, "checksum");
    if (ck && !YAJL_IS_TRUE(ck) && !YAJL_IS_FALSE(ck))
        return zf_fail(err, ZF_ERR_INVALID, "zstd: \"checksum\": expected true or false");
    return zf_codec_zstd_new(cfg, out, err);
}

/* blosc codec, "Configuration parameters" (v3 form): cname one of c-blosc's compressors,
 * clevel 0..9, shuffle "noshuffle" | "shuffle" | "bitshuffle", typesize a positive integer
 * "required unless shuffle is noshuffle", blocksize >= 0. The draft of 2022 still used
 * numcodecs' integer shuffle (-1, 0, 1, 2), accepted there. Decoding needs none of them:
 * each buffer's header says how it was made. */
static zf_status blosc_new(yajl_val cfg, zf_codec_dialect dialect, zf_codec **out, zf_err *err)
{
    static const char *const keys[] = {"cname", "clevel", "shuffle", "typesize", "blocksize",
                                       NULL};
    static const char *const cnames[] = {"blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"};
    static const char *const shuffles[] = {"noshuffle", "shuffle", "bitshuffle"};
    const char *cname;
    long long clevel, typesize, blocksize, shuffle = -2;
    zf_status st;
    if ((st = zf_v3_check_keys(cfg, "blosc", keys, err)) ||
        (st = zf_cfg_string(cfg, "blosc", "cname", false, &cname, err)) ||
        (st = zf_cfg_int(cfg, "blosc", "clevel", false, false, 5, 0, 9, &clevel, err)) ||
        (st = zf_cfg_int(cfg, "blosc", "typesize", false, false, 0, 1, INT32_MAX, &typesize,
                         err)) ||
        (st = zf_cfg_int(cfg, "blosc", "blocksize", false, false, 0, 0, INT32_MAX, &blocksize,
                         err)))
        return st;
    if (cname) {
        bool ok = false;
        for (size_t i = 0; i < sizeof cnames / sizeof cnames[0] && !ok; i++)
            ok = strcmp(cname, cnames[i]) == 0;
        if (!ok)
            return zf_fail(err, ZF_ERR_INVALID,
                           "blosc: \"cname\": \"%.100s\" is not one of blosclz, lz4, lz4hc, "
                           "snappy, zlib, zstd",
                           cname);
    }
    yajl_val sh = zf_cfg_get(cfg, "shuffle");
    if (sh && YAJL_IS_STRING(sh)) {
        for (size_t i = 0; i < 3; i++)
            if (strcmp(sh->u.string, shuffles[i]) == 0)
                shuffle = (long long)i;
        if (shuffle < 0)
            return zf_fail(err, ZF_ERR_INVALID,
                           "blosc: \"shuffle\": expected \"noshuffle\", \"shuffle\" or "
                           "\"bitshuffle\"");
    } else if (sh && dialect == ZF_CODECS_DRAFT_2022) {
        if ((st = zf_cfg_int(cfg, "blosc", "shuffle", false, false, 0, -1, 2, &shuffle, err)))
            return st;
    } else if (sh) {
        return zf_fail(err, ZF_ERR_INVALID,
                       "blosc: \"shuffle\": expected \"noshuffle\", \"shuffle\" or "
                       "\"bitshuffle\"");
    }
    if (dialect == ZF_CODECS_V3 && shuffle > 0 && !zf_cfg_get(cfg, "typesize"))
        return zf_fail(err, ZF_ERR_INVALID,
                       "blosc: \"typesize\": missing (required unless shuffle is \"noshuffle\")");
    /* The numcodecs form, for the constructor (it keeps them for encoding). */
    synth s;
    if (!synth_init(&s, 6)) {
        synth_free(&s);
        return ZF_ERR_NOMEM;
    }
    static char id[] = "blosc";
    synth_add_string(&s, "id", id);
    if (cname)
        synth_add(&s, "cname", zf_cfg_get(cfg, "cname"));
    synth_add_int(&s, "clevel", clevel);
    if (shuffle >= -1)
        synth_add_int(&s, "shuffle", shuffle);
    synth_add_int(&s, "blocksize", blocksize);
    if (typesize > 0 && typesize < 256) /* the header holds one byte; else blosc uses 1 */
        synth_add_int(&s, "typesize", typesize);
    st = zf_codec_blosc_new(&s.obj, out, err);
    synth_free(&s);
    return st;
}

static zf_status crc32c_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    static const char *const keys[] = {NULL};
    zf_status st = zf_v3_check_keys(cfg, "crc32c", keys, err);
    if (st != ZF_OK)
        return st;
    return zf_codec_crc32c_new(NULL, out, err);
}

/* --- the list --- */

/* One entry of the list: the codec's name (v3) or URI (2022 draft), its configuration and
 * whether it may be ignored when unknown. */
typedef struct entry {
    char *name;     /* as written */
    const char *id; /* v3: the name; draft: <name> of the URI, or NULL when not of that form */
    char idbuf[64];
    yajl_val cfg;   /* NULL when absent */
    bool must_understand;
} entry;

static const char *const draft_uri_prefixes[] = {
    "https://purl.org/zarr/spec/codec/",
    "https://purl.org/zarr/spec/codecs/",
};

/* zarrs' other names for codecs of its own or of numcodecs (zarrs' impl_extension_aliases). */
static const struct {
    const char *alias, *name;
} v3_aliases[] = {
    {"https://codec.zarrs.dev/array_to_array/bitround", "bitround"},
    {"https://codec.zarrs.dev/array_to_bytes/bitround", "bitround"},
    {"https://codec.zarrs.dev/bytes_to_bytes/fletcher32", "numcodecs.fletcher32"},
    {"https://codec.zarrs.dev/array_to_bytes/vlen_utf8", "vlen-utf8"},
    {"https://codec.zarrs.dev/array_to_bytes/vlen_bytes", "vlen-bytes"},
    {"https://codec.zarrs.dev/array_to_bytes/vlen", "zarrs.vlen"},
    {"https://codec.zarrs.dev/array_to_bytes/vlen_v2", "zarrs.vlen_v2"},
    {"zarrs.zfp", "zfp"},
    {"https://codec.zarrs.dev/array_to_bytes/zfp", "zfp"},
    {"https://codec.zarrs.dev/array_to_bytes/zfpy", "numcodecs.zfpy"},
    {"https://codec.zarrs.dev/array_to_bytes/pcodec", "numcodecs.pcodec"},
    {"https://codec.zarrs.dev/array_to_bytes/optional", "optional"},
    {"zarrs.optional", "optional"},
};

/* e->id for a v3 name: the name, or the name it is an alias of. */
static void v3_alias(entry *e)
{
    e->id = e->name;
    for (size_t i = 0; i < sizeof v3_aliases / sizeof v3_aliases[0]; i++)
        if (strcmp(e->name, v3_aliases[i].alias) == 0) {
            e->id = v3_aliases[i].name;
        }
}

static zf_status parse_entry(yajl_val v, zf_codec_dialect dialect, size_t i, entry *e,
                             zf_err *err)
{
    memset(e, 0, sizeof *e);
    e->must_understand = true;
    if (dialect == ZF_CODECS_V3 && YAJL_IS_STRING(v)) { /* short-hand name */
        e->name = v->u.string;
        v3_alias(e);
        return ZF_OK;
    }
    if (!YAJL_IS_OBJECT(v))
        return zf_fail(err, ZF_ERR_INVALID, "codecs[%zu]: expected a codec object", i);
    const char *key = dialect == ZF_CODECS_V3 ? "name" : "codec";
    for (size_t k = 0; k < v->u.object.len; k++) {
        const char *m = v->u.object.keys[k];
        yajl_val x = v->u.object.values[k];
        if (strcmp(m, key) == 0 || (dialect == ZF_CODECS_DRAFT_2022 && strcmp(m, "type") == 0)) {
            if (!YAJL_IS_STRING(x))
                return zf_fail(err, ZF_ERR_INVALID, "codecs[%zu]: \"%s\": expected a string", i,
                               m);
            if (e->name)
                return zf_fail(err, ZF_ERR_INVALID,
                               "codecs[%zu]: both \"codec\" and \"type\" name the codec", i);
            e->name = x->u.string;
        } else if (strcmp(m, "configuration") == 0) {
            if (!YAJL_IS_OBJECT(x))
                return zf_fail(err, ZF_ERR_INVALID,
                               "codecs[%zu]: \"configuration\": expected an object", i);
            e->cfg = x;
        } else if (strcmp(m, "must_understand") == 0) {
            if (!YAJL_IS_TRUE(x) && !YAJL_IS_FALSE(x))
                return zf_fail(err, ZF_ERR_INVALID,
                               "codecs[%zu]: \"must_understand\": expected true or false", i);
            e->must_understand = YAJL_IS_TRUE(x);
        } else {
            return zf_fail(err, ZF_ERR_INVALID, "codecs[%zu]: \"%.100s\": unknown member", i, m);
        }
    }
    if (!e->name)
        return zf_fail(err, ZF_ERR_INVALID, "codecs[%zu]: \"%s\": missing", i, key);
    if (dialect == ZF_CODECS_V3) {
        v3_alias(e);
        return ZF_OK;
    }
    for (size_t p = 0; p < 2; p++) {
        size_t pl = strlen(draft_uri_prefixes[p]);
        if (strncmp(e->name, draft_uri_prefixes[p], pl) != 0)
            continue;
        const char *rest = e->name + pl, *slash = strchr(rest, '/');
        if (slash && strcmp(slash, "/1.0") == 0 && (size_t)(slash - rest) < sizeof e->idbuf) {
            memcpy(e->idbuf, rest, (size_t)(slash - rest));
            e->id = e->idbuf;
        }
    }
    return ZF_OK;
}

/* The kind of a codec known by name (before building it: sharding and bytes need an array). */
static bool kind_by_name(const entry *e, zf_codec_dialect dialect, zf_codec_kind *kind)
{
    static const struct {
        const char *id;
        zf_codec_kind kind;
        bool draft; /* also in the 2022 draft */
    } names[] = {
        {"bytes", ZF_CODEC_ARRAY_TO_BYTES, false},
        {"endian", ZF_CODEC_ARRAY_TO_BYTES, true},
        {"sharding_indexed", ZF_CODEC_ARRAY_TO_BYTES, false},
        {"transpose", ZF_CODEC_ARRAY_TO_ARRAY, true},
        {"gzip", ZF_CODEC_BYTES_TO_BYTES, true},
        {"blosc", ZF_CODEC_BYTES_TO_BYTES, true},
        {"zstd", ZF_CODEC_BYTES_TO_BYTES, false},
        {"crc32c", ZF_CODEC_BYTES_TO_BYTES, false},
        {"bitround", ZF_CODEC_ARRAY_TO_ARRAY, false},
        {"reshape", ZF_CODEC_ARRAY_TO_ARRAY, false},
        {"zarrs.squeeze", ZF_CODEC_ARRAY_TO_ARRAY, false},
        {"vlen-utf8", ZF_CODEC_ARRAY_TO_BYTES, false},
        {"vlen-bytes", ZF_CODEC_ARRAY_TO_BYTES, false},
        /* zarr-extensions scale_offset and conditional; zarrs' vlen codecs */
        {"scale_offset", ZF_CODEC_ARRAY_TO_ARRAY, false},
        {"conditional", ZF_CODEC_BYTES_TO_BYTES, false},
        {"zarrs.vlen", ZF_CODEC_ARRAY_TO_BYTES, false},
        {"zarrs.vlen_v2", ZF_CODEC_ARRAY_TO_BYTES, false},
        {"n5_default", ZF_CODEC_ARRAY_TO_BYTES, false},
        {"zfp", ZF_CODEC_ARRAY_TO_BYTES, false},
        {"packbits", ZF_CODEC_ARRAY_TO_BYTES, false},
        {"cast_value", ZF_CODEC_ARRAY_TO_ARRAY, false},
        {"optional", ZF_CODEC_ARRAY_TO_BYTES, false},
    };
    if (!e->id)
        return false;
    if (dialect == ZF_CODECS_V3 && strncmp(e->id, NUMCODECS_PREFIX, strlen(NUMCODECS_PREFIX)) == 0)
        return numcodecs_kind(e->id + strlen(NUMCODECS_PREFIX), kind);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(e->id, names[i].id) == 0 && (dialect == ZF_CODECS_V3 || names[i].draft)) {
            *kind = names[i].kind;
            return true;
        }
    return false;
}

static bool is_known(const entry *e, zf_codec_dialect dialect)
{
    zf_codec_kind k;
    if (dialect == ZF_CODECS_V3 && e->id &&
        strncmp(e->id, NUMCODECS_PREFIX, strlen(NUMCODECS_PREFIX)) == 0)
        return true; /* registry.c says whether it serves it */
    return kind_by_name(e, dialect, &k);
}

static zf_status build(const entry *e, zf_codec_dialect dialect, const zf_chunk_repr *cur,
                       const uint8_t *fill, unsigned depth, zf_codec **out, zf_err *err)
{
    const char *id = e->id;
    *out = NULL;
    bool numcodecs = dialect == ZF_CODECS_V3 &&
                     strncmp(id, NUMCODECS_PREFIX, strlen(NUMCODECS_PREFIX)) == 0;
    zf_codec_kind nk;
    if (cur->dtype.ext != ZF_DT_NUMPY &&
        ((numcodecs && numcodecs_kind(id + strlen(NUMCODECS_PREFIX), &nk) &&
          nk == ZF_CODEC_ARRAY_TO_ARRAY) ||
         strcmp(id, "bitround") == 0)) {
        /* numcodecs' filters and zarrs' bitround know NumPy's types only */
        char ts[32];
        zf_dtype_format(&cur->dtype, ts, sizeof ts);
        return zf_fail(err, ZF_ERR_UNSUPPORTED, "codec \"%.100s\" does not support data type "
                       "%s", e->name, ts);
    }
    if (numcodecs)
        return numcodecs_new(e->id, e->name, e->cfg, out, err);
    if (strcmp(id, "bitround") == 0)
        return zf_codec_bitround_zarrs_new(e->cfg, out, err);
    if (strcmp(id, "packbits") == 0)
        return zf_codec_packbits_v3_new(e->cfg, cur, out, err);
    if (strcmp(id, "cast_value") == 0)
        return zf_codec_cast_value_new(e->cfg, cur, fill, out, err);
    if (strcmp(id, "reshape") == 0)
        return zf_codec_reshape_new(e->cfg, cur, out, err);
    if (strcmp(id, "zarrs.squeeze") == 0)
        return zf_codec_squeeze_new(e->cfg, cur, out, err);
    if (strcmp(id, "bytes") == 0 || strcmp(id, "endian") == 0)
        return zf_codec_bytes_new(e->cfg, id, cur, out, err);
    if (strcmp(id, "transpose") == 0)
        return transpose_new(e->cfg, cur, out, err);
    if (strcmp(id, "gzip") == 0)
        return gzip_new(e->cfg, out, err);
    if (strcmp(id, "zstd") == 0)
        return zstd_new(e->cfg, out, err);
    if (strcmp(id, "blosc") == 0)
        return blosc_new(e->cfg, dialect, out, err);
    if (strcmp(id, "crc32c") == 0)
        return crc32c_new(e->cfg, out, err);
    if (strcmp(id, "zfp") == 0)
        return zf_codec_zfp_new(e->cfg, out, err);
    if (strcmp(id, "sharding_indexed") == 0)
        return zf_codec_sharding_new(e->cfg, cur, fill, depth, out, err);
    if (strcmp(id, "n5_default") == 0)
        return zf_codec_n5_default_new(e->cfg, cur, fill, depth, out, err);
    if (strcmp(id, "optional") == 0) /* zarrs' optional codec (optional.c) */
        return zf_codec_optional_new(e->cfg, cur, depth, out, err);
    if (strcmp(id, "vlen-utf8") == 0) { /* zarr-extensions "vlen-utf8": no configuration */
        static const char *const none[] = {NULL};
        zf_status st = zf_v3_check_keys(e->cfg, "vlen-utf8", none, err);
        return st != ZF_OK ? st : zf_codec_vlen_utf8_new(e->cfg, out, err);
    }
    if (strcmp(id, "vlen-bytes") == 0) { /* zarr-extensions "vlen-bytes": no configuration */
        static const char *const none[] = {NULL};
        zf_status st = zf_v3_check_keys(e->cfg, "vlen-bytes", none, err);
        return st != ZF_OK ? st : zf_codec_vlen_bytes_new(e->cfg, out, err);
    }
    if (strcmp(id, "scale_offset") == 0)
        return zf_codec_scale_offset_new(e->cfg, cur, out, err);
    if (strcmp(id, "conditional") == 0)
        return zf_codec_conditional_new(e->cfg, cur, depth, out, err);
    if (strcmp(id, "zarrs.vlen") == 0)
        return zf_codec_zarrs_vlen_new(e->cfg, cur, depth, out, err);
    if (strcmp(id, "zarrs.vlen_v2") == 0)
        return zf_codec_zarrs_vlen_v2_new(e->cfg, cur, out, err);
    return zf_fail(err, ZF_ERR_UNSUPPORTED, "codec \"%.200s\" is not supported", e->name);
}

/* Core "Codecs": zero or more array -> array codecs, exactly one array -> bytes codec, then
 * zero or more bytes -> bytes codecs. stage: the kind of the codecs allowed so far. */
static zf_status check_order(zf_codec_kind kind, zf_codec_kind stage, const char *name,
                             const char *a2b, zf_err *err)
{
    if (kind == ZF_CODEC_ARRAY_TO_ARRAY && stage != ZF_CODEC_ARRAY_TO_ARRAY)
        return zf_fail(err, ZF_ERR_INVALID,
                       "codecs: \"%.100s\" (array -> array) follows the array -> bytes codec "
                       "\"%.100s\"",
                       name, a2b ? a2b : "");
    if (kind == ZF_CODEC_ARRAY_TO_BYTES && stage != ZF_CODEC_ARRAY_TO_ARRAY)
        return zf_fail(err, ZF_ERR_INVALID,
                       "codecs: two array -> bytes codecs, \"%.100s\" and \"%.100s\"",
                       a2b ? a2b : "", name);
    if (kind == ZF_CODEC_BYTES_TO_BYTES && stage == ZF_CODEC_ARRAY_TO_ARRAY)
        return zf_fail(err, ZF_ERR_INVALID,
                       "codecs: \"%.100s\" (bytes -> bytes) comes before the array -> bytes "
                       "codec",
                       name);
    return ZF_OK;
}

/* Append c (resolved against *cur, which becomes its encoded representation). Frees c on
 * failure. */
static zf_status add(zf_codec_chain *chain, zf_codec *c, zf_chunk_repr *cur, zf_err *err)
{
    zf_chunk_repr next;
    zf_status st = c->ops->resolve(c, cur, &next, err);
    if (st == ZF_OK && (st = zf_chain_append(chain, c)) == ZF_OK) {
        *cur = next;
        return ZF_OK;
    }
    zf_codec_free(c);
    return st;
}

/* The fill value after codec c (just added, turning *before into its encoded representation
 * *after): c's encode_fill of *fill (NULL: zero bytes) into *own (replaced; freed by the
 * caller), or *fill unchanged for codecs without it. */
static zf_status next_fill(const zf_codec *c, const zf_chunk_repr *before,
                           const zf_chunk_repr *after, const uint8_t **fill, uint8_t **own,
                           zf_err *err)
{
    if (!c->ops->encode_fill)
        return ZF_OK;
    size_t in_n = before->dtype.itemsize, out_n = after->dtype.itemsize;
    uint8_t *zeros = *fill ? NULL : calloc(1, in_n ? in_n : 1);
    uint8_t *o = malloc(out_n ? out_n : 1);
    zf_status st = (*fill || zeros) && o ? c->ops->encode_fill(c, *fill ? *fill : zeros, o, err)
                                         : ZF_ERR_NOMEM;
    free(zeros);
    if (st != ZF_OK) {
        free(o);
        return st;
    }
    free(*own);
    *own = o;
    *fill = o;
    return ZF_OK;
}

/* zf_chain_from_v3_at; bytes_only: a list of bytes -> bytes codecs only (the conditional
 * codec's), for a byte string `decoded`. */
static zf_status from_list(yajl_val codecs, zf_codec_dialect dialect,
                           const zf_chunk_repr *decoded, const uint8_t *fill_value,
                           unsigned depth, bool bytes_only, zf_codec_chain *out, zf_err *err)
{
    out->n = 0;
    out->codecs = NULL;
    if (depth > ZF_V3_MAX_DEPTH)
        return zf_fail(err, ZF_ERR_UNSUPPORTED, "codecs nested more than %d levels deep",
                       ZF_V3_MAX_DEPTH);
    /* 2022 draft: "An absent codecs member is equivalent to specifying an empty list". */
    bool absent_ok = dialect == ZF_CODECS_DRAFT_2022 && !codecs;
    if (!absent_ok && !YAJL_IS_ARRAY(codecs))
        return zf_fail(err, ZF_ERR_INVALID, "codecs: expected a list of codec objects");
    size_t n = codecs ? codecs->u.array.len : 0;
    zf_chunk_repr cur = *decoded;
    zf_codec_kind stage = ZF_CODEC_ARRAY_TO_ARRAY; /* what the list may hold next, at least */
    const char *a2b = NULL;                        /* the array -> bytes codec's name */
    zf_status st = ZF_OK;
    uint8_t *own_fill = NULL; /* the fill value after a codec with encode_fill */
    zf_err fill_err = {""};   /* why it could not be transformed (then needed by none yet) */
    if (bytes_only)
        stage = ZF_CODEC_BYTES_TO_BYTES;
    for (size_t i = 0; i < n && st == ZF_OK; i++) {
        entry e;
        if ((st = parse_entry(codecs->u.array.values[i], dialect, i, &e, err)) != ZF_OK)
            break;
        if (!is_known(&e, dialect)) {
            /* core "must_understand": may be ignored; not in a conditional codec's list, whose
             * header bits count its codecs as written */
            if (!e.must_understand && !bytes_only)
                continue;
            st = zf_fail(err, ZF_ERR_UNSUPPORTED, "codec \"%.200s\" is not supported", e.name);
            break;
        }
        zf_codec_kind kind;
        bool named = kind_by_name(&e, dialect, &kind);
        if (named && kind == ZF_CODEC_BYTES_TO_BYTES && stage == ZF_CODEC_ARRAY_TO_ARRAY &&
            dialect == ZF_CODECS_DRAFT_2022) {
            zf_codec *b; /* the draft's implicit default binary representation */
            if ((st = zf_codec_bytes_make(false, &b)) != ZF_OK ||
                (st = add(out, b, &cur, err)) != ZF_OK)
                break;
            stage = ZF_CODEC_BYTES_TO_BYTES;
            a2b = "endian";
        }
        /* Check the order before building when the kind is known by name: a codec built for
         * the wrong representation would only give a confusing message. */
        zf_codec *c = NULL;
        if (fill_err.msg[0] && e.id && strcmp(e.id, "sharding_indexed") == 0) {
            st = zf_fail(err, ZF_ERR_INVALID, "%s (sharding_indexed fills empty inner chunks "
                         "with it)", fill_err.msg);
            break;
        }
        if (!named) {
            if ((st = build(&e, dialect, &cur, fill_value, depth, &c, err)) != ZF_OK)
                break;
            kind = c->ops->kind;
        }
        if (bytes_only && kind != ZF_CODEC_BYTES_TO_BYTES)
            st = zf_fail(err, ZF_ERR_INVALID, "codecs: \"%.100s\" is not a bytes -> bytes codec",
                         e.name);
        else
            st = check_order(kind, stage, e.name, a2b, err);
        if (st == ZF_OK && named)
            st = build(&e, dialect, &cur, fill_value, depth, &c, err);
        if (st != ZF_OK) {
            zf_codec_free(c);
            break;
        }
        zf_chunk_repr before = cur;
        if ((st = add(out, c, &cur, err)) != ZF_OK)
            break;
        /* A fill value the codec cannot encode matters only to a sharding codec after it (the
         * elements of a stored chunk never take it): the error waits for one. */
        if (!fill_err.msg[0] &&
            (st = next_fill(c, &before, &cur, &fill_value, &own_fill, &fill_err)) != ZF_OK) {
            if (st == ZF_ERR_NOMEM)
                break;
            if (!fill_err.msg[0])
                snprintf(fill_err.msg, sizeof fill_err.msg, "%s: the fill value", e.name);
            st = ZF_OK;
        }
        if (kind == ZF_CODEC_ARRAY_TO_BYTES)
            a2b = e.name;
        if (kind != ZF_CODEC_ARRAY_TO_ARRAY)
            stage = ZF_CODEC_BYTES_TO_BYTES;
    }
    free(own_fill);
    if (st == ZF_OK && stage == ZF_CODEC_ARRAY_TO_ARRAY) {
        if (dialect == ZF_CODECS_DRAFT_2022) {
            zf_codec *b;
            if ((st = zf_codec_bytes_make(false, &b)) == ZF_OK)
                st = add(out, b, &cur, err);
        } else {
            st = zf_fail(err, ZF_ERR_INVALID,
                         "codecs: no array -> bytes codec (such as \"bytes\")");
        }
    }
    if (st != ZF_OK)
        zf_chain_clear(out);
    return st;
}

zf_status zf_chain_from_v3_at(yajl_val codecs, zf_codec_dialect dialect,
                              const zf_chunk_repr *decoded, const uint8_t *fill_value,
                              unsigned depth, zf_codec_chain *out, zf_err *err)
{
    return from_list(codecs, dialect, decoded, fill_value, depth, false, out, err);
}

zf_status zf_chain_from_v3_bytes_at(yajl_val codecs, const zf_chunk_repr *decoded,
                                    unsigned depth, zf_codec_chain *out, zf_err *err)
{
    return from_list(codecs, ZF_CODECS_V3, decoded, NULL, depth, true, out, err);
}

zf_status zf_chain_from_v3(yajl_val codecs, zf_codec_dialect dialect,
                           const zf_chunk_repr *decoded, const uint8_t *fill_value,
                           zf_codec_chain *out, zf_err *err)
{
    return zf_chain_from_v3_at(codecs, dialect, decoded, fill_value, 0, out, err);
}

/* --- the October 2020 draft --- */

/* core protocol draft 2020-10, "Array metadata", "compressor": {"codec": URI, "configuration":
 * {...}}; zarr-python 2.13 writes https://purl.org/zarr/spec/codec/<numcodecs id>/1.0 with the
 * numcodecs configuration minus its "id" (zarr/meta.py, _encode_codec_metadata), as GDAL did. */
zf_status zf_codec_from_draft2020(yajl_val compressor, zf_codec **out, zf_err *err)
{
    static const char prefix[] = "https://purl.org/zarr/spec/codec/";
    *out = NULL;
    if (!YAJL_IS_OBJECT(compressor))
        return zf_fail(err, ZF_ERR_INVALID, "compressor: expected a codec object");
    yajl_val uri = NULL, cfg = NULL;
    for (size_t k = 0; k < compressor->u.object.len; k++) {
        const char *m = compressor->u.object.keys[k];
        yajl_val x = compressor->u.object.values[k];
        if (strcmp(m, "codec") == 0)
            uri = x;
        else if (strcmp(m, "configuration") == 0)
            cfg = x;
        else
            return zf_fail(err, ZF_ERR_INVALID, "compressor: \"%.100s\": unknown member", m);
    }
    if (!uri)
        return zf_fail(err, ZF_ERR_INVALID, "compressor: \"codec\": missing");
    if (!YAJL_IS_STRING(uri))
        return zf_fail(err, ZF_ERR_INVALID, "compressor: \"codec\": expected a URI string");
    if (cfg && YAJL_IS_NULL(cfg))
        cfg = NULL;
    if (cfg && !YAJL_IS_OBJECT(cfg))
        return zf_fail(err, ZF_ERR_INVALID,
                       "compressor: \"configuration\": expected an object");
    const char *u = uri->u.string, *rest = NULL, *slash = NULL;
    char id[64];
    if (strncmp(u, prefix, strlen(prefix)) == 0) {
        rest = u + strlen(prefix);
        slash = strchr(rest, '/');
    }
    if (!slash || strcmp(slash, "/1.0") != 0 || slash == rest ||
        (size_t)(slash - rest) >= sizeof id)
        return zf_fail(err, ZF_ERR_UNSUPPORTED, "codec \"%.200s\" is not supported", u);
    memcpy(id, rest, (size_t)(slash - rest));
    id[slash - rest] = '\0';
    return from_numcodecs(id, cfg, u, out, err);
}
