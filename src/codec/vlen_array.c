/* vlen_array.c — the vlen-array object codec (numcodecs VLenArray, v2 id "vlen-array"): an object
 * array whose elements are 1-D numeric arrays of one data type (the codec's "dtype"). A chunk is
 * vlen-utf8's layout (a little-endian u32 element count, then per element a u32 byte length and
 * its bytes, numcodecs vlen.pyx), each element's bytes its values in that data type. Decoding
 * yields text only (codec.h, "variable-length elements as text"): each element one JSON list of
 * numbers per line (JSON Lines): integers exact; floats with the fewest digits that read back
 * to the same double, written as Python writes them (1.0, not 1; NaN, Infinity); booleans
 * true/false. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_impl.h"

typedef struct vlen_array {
    zf_codec base;
    zf_dtype dt;
} vlen_array;

/* A finite double as Python's json writes it: the fewest significant digits (15 to 17) that
 * read back to the same value, and a ".0" where that would look like an integer. */
static int float_json(double f, char *buf, size_t size)
{
    int n = 0;
    for (int digits = 15; digits <= 17; digits++) {
        n = snprintf(buf, size, "%.*g", digits, f);
        if (strtod(buf, NULL) == f)
            break;
    }
    if (!strpbrk(buf, ".eE"))
        n += snprintf(buf + n, size - (size_t)n, ".0");
    return n;
}

/* One value as JSON into out (NULL: only its length). */
static size_t value_json(const zf_dtype *dt, const uint8_t *p, size_t k, char *out)
{
    char buf[40];
    zf_num v = zf_dtype_load(dt, p, k);
    int n;
    if (dt->kind == 'b')
        n = snprintf(buf, sizeof buf, "%s", v.v.i ? "true" : "false");
    else if (v.kind == 'u')
        n = snprintf(buf, sizeof buf, "%" PRIu64, v.v.u);
    else if (v.kind == 'i')
        n = snprintf(buf, sizeof buf, "%" PRId64, v.v.i);
    else if (isnan(v.v.f))
        n = snprintf(buf, sizeof buf, "NaN");
    else if (isinf(v.v.f))
        n = snprintf(buf, sizeof buf, "%sInfinity", v.v.f < 0 ? "-" : "");
    else
        n = float_json(v.v.f, buf, sizeof buf);
    if (out)
        memcpy(out, buf, (size_t)n);
    return (size_t)n;
}

/* Element of n bytes at p as a JSON list line into out (NULL: only its length); SIZE_MAX when
 * n is not a whole number of values (zf_vlen_line_fn; ctx: the values' data type). */
static size_t element_line(const void *ctx, const uint8_t *p, size_t n, char *out)
{
    const zf_dtype *dt = ctx;
    if (n % dt->itemsize)
        return SIZE_MAX;
    size_t o = 0, count = n / dt->itemsize;
    if (out)
        out[o] = '[';
    o++;
    for (size_t k = 0; k < count; k++) {
        if (k) {
            if (out)
                out[o] = ',';
            o++;
        }
        o += value_json(dt, p, k, out ? out + o : NULL);
    }
    if (out) {
        out[o] = ']';
        out[o + 1] = '\n';
    }
    return o + 2;
}

static zf_status vlen_array_decode_text(const zf_codec *c, const zf_chunk_repr *decoded,
                                        const uint8_t *in, size_t in_len, zf_text_chunk **out,
                                        zf_err *err)
{
    const vlen_array *v = (const vlen_array *)c;
    return zf_vlen_decode_lines(c->ops->name, decoded, in, in_len, element_line, &v->dt,
                                "a whole number of values", out, err);
}

static const zf_codec_ops vlen_array_ops = {
    .name = "vlen-array",
    .kind = ZF_CODEC_ARRAY_TO_BYTES,
    .resolve = zf_vlen_resolve,
    .decode = zf_vlen_decode,
    .destroy = zf_codec_destroy_plain,
    .decode_text = vlen_array_decode_text,
    .fill_text = zf_text_json_fill, /* 0, null, a list of numbers as it is */
};

zf_status zf_codec_vlen_array_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    yajl_val dtv = zf_cfg_get(cfg, "dtype");
    if (!dtv || !YAJL_IS_STRING(dtv))
        return zf_fail(err, ZF_ERR_INVALID, "vlen-array: \"dtype\": expected a NumPy typestr");
    zf_dtype dt;
    zf_err derr = {""};
    if (zf_dtype_parse(dtv->u.string, &dt, &derr) != ZF_OK)
        return zf_fail(err, ZF_ERR_INVALID, "vlen-array: \"dtype\": %s", derr.msg);
    if (!zf_dtype_is_numeric(&dt) || dt.kind == 'm' || dt.kind == 'M' || dt.itemsize == 0)
        return zf_fail(err, ZF_ERR_UNSUPPORTED, "vlen-array: elements of %s are not read "
                       "(numbers and booleans are)", dtv->u.string);
    vlen_array *v = (vlen_array *)zf_codec_alloc(sizeof *v, &vlen_array_ops);
    if (!v)
        return ZF_ERR_NOMEM;
    v->dt = dt;
    *out = &v->base;
    return ZF_OK;
}
