/* jenkins_lookup3.c — numcodecs "jenkins_lookup3" (numcodecs 0.12+, numcodecs/checksum32.py
 * JenkinsLookup3 over numcodecs/jenkins.pyx; v3 "numcodecs.jenkins_lookup3"): the payload
 * followed by a 4-byte little-endian checksum, Bob Jenkins' lookup3 hashlittle() (as HDF5's
 * H5_checksum_lookup3) of the optional `prefix` bytes followed by the payload, seeded with
 * `initval`.
 *
 * Configuration: "initval", an integer in [0, 2^32) (default 0); "prefix", null (default) or a
 * list of byte values. numcodecs takes the prefix as a bytes object, which its JSON
 * configuration cannot hold (numcodecs' own get_config gives an ndarray), so metadata in the
 * wild has null; a list is accepted as the only JSON spelling of bytes that could arise.
 * A mismatch is ZF_ERR_CORRUPT. */
#include <string.h>

#include "codec_impl.h"

typedef struct jenkins_codec {
    zf_checksum_codec k;
    uint32_t initval;
    size_t prefix_len;
    uint8_t *prefix;
} jenkins_codec;

static uint32_t rot(uint32_t x, unsigned k)
{
    return x << k | x >> (32 - k);
}

static void mix(uint32_t *a, uint32_t *b, uint32_t *c)
{
    *a -= *c; *a ^= rot(*c, 4);  *c += *b;
    *b -= *a; *b ^= rot(*a, 6);  *a += *c;
    *c -= *b; *c ^= rot(*b, 8);  *b += *a;
    *a -= *c; *a ^= rot(*c, 16); *c += *b;
    *b -= *a; *b ^= rot(*a, 19); *a += *c;
    *c -= *b; *c ^= rot(*b, 4);  *b += *a;
}

static uint32_t final(uint32_t a, uint32_t b, uint32_t c)
{
    c ^= b; c -= rot(b, 14);
    a ^= c; a -= rot(c, 11);
    b ^= a; b -= rot(a, 25);
    c ^= b; c -= rot(b, 16);
    a ^= c; a -= rot(c, 4);
    b ^= a; b -= rot(a, 14);
    c ^= b; c -= rot(b, 24);
    return c;
}

/* Bytes pos.. of the concatenation prefix + data (n bytes, pos + n <= total), into k. */
static void take(const uint8_t *prefix, size_t plen, const uint8_t *data, size_t pos, size_t n,
                 uint8_t *k)
{
    for (size_t i = 0; i < n; i++, pos++)
        k[i] = pos < plen ? prefix[pos] : data[pos - plen];
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* hashlittle(prefix + data, initval), reading bytes without alignment or byte-order
 * assumptions (lookup3.c's portable path). */
static uint32_t lookup3(const uint8_t *prefix, size_t plen, const uint8_t *data, size_t dlen,
                        uint32_t initval)
{
    size_t length = plen + dlen, pos = 0;
    uint32_t a, b, c;
    a = b = c = 0xdeadbeefu + (uint32_t)length + initval;
    if (length == 0)
        return c;
    uint8_t k[12];
    while (length - pos > 12) {
        const uint8_t *p;
        if (pos >= plen) {
            p = data + (pos - plen);
        } else {
            take(prefix, plen, data, pos, 12, k);
            p = k;
        }
        a += le32(p);
        b += le32(p + 4);
        c += le32(p + 8);
        mix(&a, &b, &c);
        pos += 12;
    }
    /* The last 1..12 bytes, zero-padded: hashlittle's switch adds only the bytes present. */
    memset(k, 0, sizeof k);
    take(prefix, plen, data, pos, length - pos, k);
    a += le32(k);
    b += le32(k + 4);
    c += le32(k + 8);
    return final(a, b, c);
}

static uint32_t jenkins_fn(const zf_codec *c, const uint8_t *buf, size_t len)
{
    const jenkins_codec *j = (const jenkins_codec *)c;
    return lookup3(j->prefix, j->prefix_len, buf, len, j->initval);
}

static void jenkins_destroy(zf_codec *c)
{
    jenkins_codec *j = (jenkins_codec *)c;
    free(j->prefix);
    free(j);
}

static const zf_codec_ops jenkins_ops = {
    .name = "jenkins_lookup3",
    .kind = ZF_CODEC_BYTES_TO_BYTES,
    .resolve = zf_checksum_resolve,
    .decode = zf_checksum_decode,
    .destroy = jenkins_destroy,
    .decoded_size = zf_checksum_decoded_size,
    .encode = zf_checksum_encode,
};

zf_status zf_codec_jenkins_lookup3_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    long long initval;
    zf_status st = zf_cfg_int(cfg, "jenkins_lookup3", "initval", false, false, 0, 0,
                              UINT32_MAX, &initval, err);
    if (st != ZF_OK)
        return st;
    yajl_val pv = zf_cfg_get(cfg, "prefix");
    size_t plen = 0;
    if (pv && !YAJL_IS_NULL(pv)) {
        if (!YAJL_IS_ARRAY(pv))
            return zf_fail(err, ZF_ERR_INVALID,
                           "jenkins_lookup3: \"prefix\": expected null or a list of byte values");
        plen = pv->u.array.len;
        for (size_t i = 0; i < plen; i++) {
            yajl_val v = pv->u.array.values[i];
            if (!YAJL_IS_INTEGER(v) || v->u.number.i < 0 || v->u.number.i > 255)
                return zf_fail(err, ZF_ERR_INVALID,
                               "jenkins_lookup3: \"prefix\": expected null or a list of byte "
                               "values");
        }
    }
    jenkins_codec *j = (jenkins_codec *)zf_checksum_codec_alloc(sizeof *j, &jenkins_ops,
                                                                jenkins_fn, true);
    if (!j)
        return ZF_ERR_NOMEM;
    if (plen && !(j->prefix = malloc(plen))) {
        free(j);
        return ZF_ERR_NOMEM;
    }
    for (size_t i = 0; i < plen; i++)
        j->prefix[i] = (uint8_t)pv->u.array.values[i]->u.number.i;
    j->prefix_len = plen;
    j->initval = (uint32_t)initval;
    *out = &j->k.base;
    return ZF_OK;
}
