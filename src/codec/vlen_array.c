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
#include "zarrfs/json.h"

typedef struct vlen_array {
    zf_codec base;
    zf_dtype dt;
} vlen_array;

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

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

/* Element of nbytes bytes at p as a JSON list line into out (NULL: only its length). */
static size_t element_line(const zf_dtype *dt, const uint8_t *p, size_t nbytes, char *out)
{
    size_t o = 0, n = nbytes / dt->itemsize;
    if (out)
        out[o] = '[';
    o++;
    for (size_t k = 0; k < n; k++) {
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
    const zf_dtype *dt = &((const vlen_array *)c)->dt;
    const char *name = c->ops->name;
    uint64_t want = 1;
    for (unsigned d = 0; d < decoded->ndim; d++)
        want *= decoded->shape[d];
    if (in_len < 4)
        return zf_fail(err, ZF_ERR_CORRUPT, "%s: %zu bytes, too short for the element count",
                       name, in_len);
    int32_t count = (int32_t)le32(in);
    if (count < 0 || (uint64_t)count != want)
        return zf_fail(err, ZF_ERR_CORRUPT, "%s: %d elements, the chunk holds %llu", name,
                       count, (unsigned long long)want);
    uint64_t total = 0;
    size_t p = 4;
    for (uint64_t i = 0; i < want; i++) { /* lengths checked, the text's bytes counted */
        if (in_len - p < 4)
            return zf_fail(err, ZF_ERR_CORRUPT, "%s: element %llu: its length is past the end",
                           name, (unsigned long long)i);
        int32_t n = (int32_t)le32(in + p);
        p += 4;
        if (n < 0 || (size_t)n > in_len - p || (size_t)n % dt->itemsize)
            return zf_fail(err, ZF_ERR_CORRUPT, "%s: element %llu: length %d is not a whole "
                           "number of %zu-byte values within the chunk", name,
                           (unsigned long long)i, n, dt->itemsize);
        total += element_line(dt, in + p, (size_t)n, NULL);
        p += (size_t)n;
    }
    zf_text_chunk *t = zf_text_chunk_alloc(want, total);
    if (!t)
        return total >= ((uint64_t)1 << 32)
                   ? zf_fail(err, ZF_ERR_CORRUPT, "%s: the chunk's text reaches 4 GiB", name)
                   : ZF_ERR_NOMEM;
    size_t o = 0;
    p = 4;
    for (uint64_t i = 0; i < want; i++) {
        size_t n = le32(in + p);
        p += 4;
        o += element_line(dt, in + p, n, t->text + o);
        t->starts[i + 1] = (uint32_t)o;
        p += n;
    }
    *out = t;
    return ZF_OK;
}

/* zarr-python's default fill value of object arrays, 0, and null (None) as their JSON; a list
 * of numbers as it is. */
static zf_status vlen_array_fill_text(const zf_codec *c, yajl_val fill, char **line, size_t *len,
                                      zf_err *err)
{
    (void)c, (void)err;
    char *j = zf_json_dump(fill);
    if (!j)
        return ZF_ERR_NOMEM;
    size_t n = strlen(j);
    char *l = realloc(j, n + 2);
    if (!l) {
        free(j);
        return ZF_ERR_NOMEM;
    }
    l[n] = '\n';
    l[n + 1] = '\0';
    *line = l;
    *len = n + 1;
    return ZF_OK;
}

static const zf_codec_ops vlen_array_ops = {
    .name = "vlen-array",
    .kind = ZF_CODEC_ARRAY_TO_BYTES,
    .resolve = zf_vlen_resolve,
    .decode = zf_vlen_decode,
    .destroy = zf_codec_destroy_plain,
    .decode_text = vlen_array_decode_text,
    .fill_text = vlen_array_fill_text,
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
