/* cast_value.c — the zarr-extensions "cast_value" codec (array -> array; codecs/cast_value):
 * each element's numerical value converted to `data_type` on encode and back on decode, by the
 * document's ordered procedure: scalar_map first, then an exactly representable value as it is,
 * then rounding (`rounding`, default "nearest-even") and the out-of-range rule (`out_of_range`:
 * "clamp", "wrap", absent = an error). The conversion itself is zf_dtype_cast_value
 * (src/common/dtype.c), with zarrs' choices where the document leaves room (range checked
 * after rounding for integer targets, before it for float targets; see dtype.h).
 *
 * Types: the integer and floating-point types (int2..int64, uint2..uint64, the registry's
 * float formats, bfloat16, float16/32/64), on both sides. "wrap" requires an integer
 * `data_type`. The array's fill value is cast with the same rules and must survive the round
 * trip (encode, then decode, gives the same bytes), else the metadata is invalid; the cast fill
 * value is what the codecs after this one see (encode_fill).
 *
 * scalar_map: {"encode": [[in, out], ...], "decode": [[in, out], ...]}, each side a fill value
 * of its type; the first entry whose key matches wins. A key matches an element with the same
 * bytes, and a NaN key matches every NaN (values, not payloads: "Payload preservation is not
 * required"; zarrs compares bytes only). */
#include <math.h>
#include <string.h>

#include "codec_impl.h"

typedef struct scalar_map {
    size_t n;
    uint8_t *keys, *vals; /* n keys of the input type, n values of the output type */
} scalar_map;

typedef struct cast_value {
    zf_codec base;
    zf_dtype dec, enc; /* the array's type before and after encoding */
    zf_rounding rounding;
    zf_out_of_range oor;
    scalar_map emap, dmap;
    uint8_t fill[16]; /* the fill value cast to enc */
} cast_value;

static bool castable(const zf_dtype *dt)
{
    return (dt->kind == 'i' || dt->kind == 'u' || dt->kind == 'f') &&
           (dt->kind != 'f' || zf_dtype_float_format(dt));
}

static zf_status cv_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                            zf_chunk_repr *encoded, zf_err *err)
{
    const cast_value *k = (const cast_value *)c;
    char a[32], b[32];
    if (decoded->dtype.kind != k->dec.kind || decoded->dtype.itemsize != k->dec.itemsize ||
        decoded->dtype.ext != k->dec.ext)
        return zf_fail(err, ZF_ERR_INVALID, "cast_value: made for %s, not %s",
                       zf_dtype_str(&k->dec, a), zf_dtype_str(&decoded->dtype, b));
    if (decoded->nbytes == ZF_SIZE_UNKNOWN)
        return zf_fail(err, ZF_ERR_INVALID, "cast_value: the array's size is unknown");
    *encoded = *decoded;
    encoded->dtype = k->enc;
    encoded->nbytes = decoded->nbytes / k->dec.itemsize * k->enc.itemsize;
    return ZF_OK;
}

/* The value of map entry for element p of type t, or NULL. */
static const uint8_t *lookup(const scalar_map *m, const zf_dtype *t, const uint8_t *p,
                             size_t out_size)
{
    bool nan = false;
    if (t->kind == 'f' && m->n) {
        zf_num v = zf_dtype_load(t, p, 0);
        nan = isnan(v.v.f);
    }
    for (size_t i = 0; i < m->n; i++) {
        const uint8_t *key = m->keys + i * t->itemsize;
        if (memcmp(key, p, t->itemsize) == 0 ||
            (nan && isnan(zf_dtype_load(t, key, 0).v.f)))
            return m->vals + i * out_size;
    }
    return NULL;
}

/* n elements of `from` at in cast to `to` at out. */
static zf_status cast_n(const cast_value *k, const scalar_map *m, const zf_dtype *from,
                        const uint8_t *in, const zf_dtype *to, uint8_t *out, size_t n,
                        zf_err *err)
{
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = in + i * from->itemsize;
        const uint8_t *mapped = lookup(m, from, p, to->itemsize);
        if (mapped) {
            memcpy(out + i * to->itemsize, mapped, to->itemsize);
            continue;
        }
        zf_status st = zf_dtype_cast_value(to, out, i, zf_dtype_load(from, p, 0), k->rounding,
                                           k->oor, err);
        if (st != ZF_OK)
            return zf_err_prefix(err, "cast_value: element %zu", i), st;
    }
    return ZF_OK;
}

static zf_status cv_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                           size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    const cast_value *k = (const cast_value *)c;
    (void)decoded;
    size_t n = out_len / k->dec.itemsize;
    if (out_len % k->dec.itemsize || in_len / k->enc.itemsize != n ||
        in_len % k->enc.itemsize)
        return zf_fail(err, ZF_ERR_CORRUPT, "cast_value: %zu bytes of %s for %zu elements",
                       in_len, "the encoded type", n);
    zf_status st = cast_n(k, &k->dmap, &k->enc, in, &k->dec, out, n, err);
    return st == ZF_ERR_INVALID ? ZF_ERR_CORRUPT : st;
}

static zf_status cv_encode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                           size_t in_len, unsigned flags, uint8_t **out, size_t *out_len,
                           zf_err *err)
{
    (void)flags;
    (void)decoded;
    const cast_value *k = (const cast_value *)c;
    size_t n = in_len / k->dec.itemsize;
    uint8_t *o = zf_enc_alloc(n * k->enc.itemsize);
    if (!o)
        return ZF_ERR_NOMEM;
    zf_status st = cast_n(k, &k->emap, &k->dec, in, &k->enc, o, n, err);
    if (st != ZF_OK) {
        free(o);
        return st;
    }
    *out = o;
    *out_len = n * k->enc.itemsize;
    return ZF_OK;
}

static zf_status cv_decoded_size(const zf_codec *c, const uint8_t *in, size_t in_len,
                                 size_t *out_len, zf_err *err)
{
    (void)in;
    const cast_value *k = (const cast_value *)c;
    if (in_len % k->enc.itemsize)
        return zf_fail(err, ZF_ERR_CORRUPT, "cast_value: %zu bytes is not whole elements",
                       in_len);
    *out_len = in_len / k->enc.itemsize * k->dec.itemsize;
    return ZF_OK;
}

static void cv_destroy(zf_codec *c)
{
    cast_value *k = (cast_value *)c;
    free(k->emap.keys);
    free(k->emap.vals);
    free(k->dmap.keys);
    free(k->dmap.vals);
    free(k);
}

/* The fill value the codecs after this one see: the array's, cast when the codec was built
 * (which the chain builder passes here again) and checked to survive the round trip. */
static zf_status cv_encode_fill(const zf_codec *c, const uint8_t *fill, uint8_t *out,
                                zf_err *err)
{
    (void)fill;
    (void)err;
    const cast_value *cv = (const cast_value *)c;
    memcpy(out, cv->fill, cv->enc.itemsize);
    return ZF_OK;
}

static const zf_codec_ops cast_value_ops = {
    .name = "cast_value",
    .kind = ZF_CODEC_ARRAY_TO_ARRAY,
    .resolve = cv_resolve,
    .decode = cv_decode,
    .destroy = cv_destroy,
    .decoded_size = cv_decoded_size,
    .encode = cv_encode,
    .encode_fill = cv_encode_fill,
};

/* The data type of the configuration: a name or {"name": N} (no configuration). */
static zf_status target_type(yajl_val v, zf_dtype *out, zf_err *err)
{
    yajl_val cfg = zf_cfg_get(v, "configuration");
    const char *name = YAJL_IS_STRING(v)                          ? v->u.string
                       : YAJL_IS_STRING(zf_cfg_get(v, "name")) ? zf_cfg_get(v, "name")->u.string
                                                                  : NULL;
    if (!name)
        return zf_fail(err, ZF_ERR_INVALID, "cast_value: \"data_type\": expected a data type");
    if ((cfg && (!YAJL_IS_OBJECT(cfg) || cfg->u.object.len)) || !zf_dtype_from_v3_name(name, out) ||
        !castable(out))
        return zf_fail(err, ZF_ERR_UNSUPPORTED, "cast_value: \"data_type\": \"%.100s\" is not "
                       "an integer or floating-point type", name);
    return ZF_OK;
}

/* One side of "scalar_map": a list of [key of `from`, value of `to`]. */
static zf_status parse_map(yajl_val list, const char *side, const zf_dtype *from,
                           const zf_dtype *to, scalar_map *m, zf_err *err)
{
    m->n = 0;
    if (!list)
        return ZF_OK;
    if (!YAJL_IS_ARRAY(list))
        return zf_fail(err, ZF_ERR_INVALID, "cast_value: \"scalar_map\": \"%s\": expected a "
                       "list of [input, output] pairs", side);
    size_t n = list->u.array.len;
    m->keys = zf_enc_alloc(n * from->itemsize);
    m->vals = zf_enc_alloc(n * to->itemsize);
    if (!m->keys || !m->vals)
        return ZF_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        yajl_val e = list->u.array.values[i];
        zf_err se = {""};
        if (!YAJL_IS_ARRAY(e) || e->u.array.len != 2)
            return zf_fail(err, ZF_ERR_INVALID, "cast_value: \"scalar_map\": \"%s\"[%zu]: "
                           "expected [input, output]", side, i);
        for (int j = 0; j < 2; j++) {
            const zf_dtype *t = j ? to : from;
            uint8_t *dst = j ? m->vals + i * to->itemsize : m->keys + i * from->itemsize;
            if (zf_dtype_v3_scalar(e->u.array.values[j], t, dst, &se) != ZF_OK) {
                char ts[32];
                return zf_fail(err, ZF_ERR_INVALID, "cast_value: \"scalar_map\": \"%s\"[%zu]: "
                               "%s for %s", side, i, se.msg, zf_dtype_str(t, ts));
            }
        }
        m->n++;
    }
    return ZF_OK;
}

static zf_status parse_config(cast_value *k, yajl_val cfg, zf_err *err)
{
    static const char *const keys[] = {"data_type", "rounding", "out_of_range", "scalar_map",
                                       NULL};
    static const char *const ROUNDING[] = {"nearest-even", "towards-zero", "towards-positive",
                                           "towards-negative", "nearest-away"};
    zf_status st = zf_v3_check_keys(cfg, "cast_value", keys, err);
    if (st != ZF_OK)
        return st;
    if (!cfg || !zf_cfg_get(cfg, "data_type"))
        return zf_fail(err, ZF_ERR_INVALID, "cast_value: \"data_type\": missing");
    if ((st = target_type(zf_cfg_get(cfg, "data_type"), &k->enc, err)) != ZF_OK)
        return st;
    const char *r = NULL, *o = NULL;
    if ((st = zf_cfg_string(cfg, "cast_value", "rounding", false, &r, err)) != ZF_OK ||
        (st = zf_cfg_string(cfg, "cast_value", "out_of_range", false, &o, err)) != ZF_OK)
        return st;
    k->rounding = ZF_ROUND_NEAREST_EVEN;
    if (r) {
        size_t i = 0;
        while (i < 5 && strcmp(r, ROUNDING[i]) != 0)
            i++;
        if (i == 5)
            return zf_fail(err, ZF_ERR_INVALID, "cast_value: \"rounding\": \"%.100s\" is not "
                           "one of nearest-even, towards-zero, towards-positive, "
                           "towards-negative, nearest-away", r);
        k->rounding = (zf_rounding)i;
    }
    k->oor = ZF_OOR_ERROR;
    if (o && strcmp(o, "clamp") == 0)
        k->oor = ZF_OOR_CLAMP;
    else if (o && strcmp(o, "wrap") == 0)
        k->oor = ZF_OOR_WRAP;
    else if (o)
        return zf_fail(err, ZF_ERR_INVALID, "cast_value: \"out_of_range\": expected \"clamp\" "
                       "or \"wrap\", not \"%.100s\"", o);
    if (k->oor == ZF_OOR_WRAP && k->enc.kind == 'f')
        return zf_fail(err, ZF_ERR_INVALID, "cast_value: \"out_of_range\": \"wrap\" needs an "
                       "integer \"data_type\"");
    yajl_val map = zf_cfg_get(cfg, "scalar_map");
    if (map && !YAJL_IS_OBJECT(map))
        return zf_fail(err, ZF_ERR_INVALID, "cast_value: \"scalar_map\": expected an object");
    for (size_t i = 0; map && i < map->u.object.len; i++)
        if (strcmp(map->u.object.keys[i], "encode") && strcmp(map->u.object.keys[i], "decode"))
            return zf_fail(err, ZF_ERR_INVALID, "cast_value: \"scalar_map\": \"%.100s\": "
                           "unknown field", map->u.object.keys[i]);
    if ((st = parse_map(zf_cfg_get(map, "encode"), "encode", &k->dec, &k->enc, &k->emap,
                        err)) != ZF_OK)
        return st;
    return parse_map(zf_cfg_get(map, "decode"), "decode", &k->enc, &k->dec, &k->dmap, err);
}

zf_status zf_codec_cast_value_new(yajl_val cfg, const zf_chunk_repr *decoded,
                                  const uint8_t *fill_value, zf_codec **out, zf_err *err)
{
    *out = NULL;
    char ts[32];
    if (!castable(&decoded->dtype))
        return zf_fail(err, ZF_ERR_UNSUPPORTED, "cast_value: data type %s is not an integer "
                       "or floating-point type", zf_dtype_str(&decoded->dtype, ts));
    cast_value *k = zf_codec_alloc(sizeof *k, &cast_value_ops);
    if (!k)
        return ZF_ERR_NOMEM;
    k->dec = decoded->dtype;
    zf_status st = parse_config(k, cfg, err);
    /* "The fill value of the output array MUST be cast ... If the fill value cannot survive a
     * round-trip cast, implementations MUST treat this as an error." */
    uint8_t zero[16] = {0}, back[16];
    const uint8_t *fill = fill_value ? fill_value : zero;
    zf_err fe = {""};
    if (st == ZF_OK) {
        if (cast_n(k, &k->emap, &k->dec, fill, &k->enc, k->fill, 1, &fe) != ZF_OK ||
            cast_n(k, &k->dmap, &k->enc, k->fill, &k->dec, back, 1, &fe) != ZF_OK)
            st = zf_fail(err, ZF_ERR_INVALID, "cast_value: the fill value cannot be cast to "
                         "%s (%s)", zf_dtype_str(&k->enc, ts), fe.msg);
        else if (memcmp(back, fill, k->dec.itemsize) != 0)
            st = zf_fail(err, ZF_ERR_INVALID, "cast_value: the fill value does not survive the "
                         "round trip through %s", zf_dtype_str(&k->enc, ts));
    }
    if (st != ZF_OK) {
        cv_destroy(&k->base);
        return st;
    }
    *out = &k->base;
    return ZF_OK;
}


