/* base64.c — numcodecs "base64": standard base64 text, decoded as Python's
 * base64.standard_b64decode (binascii.a2b_base64, non-strict): characters outside the alphabet
 * are skipped, a complete pad ends the data, an incomplete final group is an error. */
#include "codec_impl.h"

static int value_of(uint8_t ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9')
        return ch - '0' + 52;
    return ch == '+' ? 62 : ch == '/' ? 63 : -1;
}

/* Decode into out[0..cap) (out NULL: just count). *produced: bytes the text decodes to, as long
 * as that is at most cap; more is ZF_ERR_CORRUPT. */
static zf_status b64_run(const uint8_t *in, size_t in_len, uint8_t *out, size_t cap,
                         size_t *produced, zf_err *err)
{
    size_t n = 0;
    unsigned quad = 0, pads = 0, left = 0;
    bool ended = false;
    for (size_t i = 0; i < in_len; i++) {
        uint8_t ch = in[i];
        if (ch == '=') {
            if (quad >= 2 && quad + ++pads >= 4) {
                ended = true; /* a complete pad ends the data */
                break;
            }
            continue;
        }
        int v = value_of(ch);
        if (v < 0)
            continue;
        pads = 0;
        int byte = -1;
        unsigned u = (unsigned)v;
        switch (quad) {
        case 0:
            left = u;
            break;
        case 1:
            byte = (int)((left << 2) | (u >> 4));
            left = u & 0x0f;
            break;
        case 2:
            byte = (int)((left << 4) | (u >> 2));
            left = u & 0x03;
            break;
        default:
            byte = (int)((left << 6) | u);
            left = 0;
            break;
        }
        quad = (quad + 1) % 4;
        if (byte >= 0) {
            if (out) {
                if (n == cap)
                    return zf_codec_too_long(err, "base64", cap);
                out[n] = (uint8_t)(byte & 0xff);
            }
            n++;
        }
    }
    if (quad != 0 && !ended)
        return zf_fail(err, ZF_ERR_CORRUPT, "base64: %s",
                       quad == 1 ? "one character too many for a whole group"
                                 : "incorrect padding");
    *produced = n;
    return ZF_OK;
}

static zf_status base64_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                                zf_chunk_repr *encoded, zf_err *err)
{
    (void)c;
    size_t n = decoded->nbytes;
    if (n == ZF_SIZE_UNKNOWN) {
        zf_repr_bytes(encoded, n);
        return ZF_OK;
    }
    if (n / 3 >= SIZE_MAX / 4 - 1)
        return zf_fail(err, ZF_ERR_INVALID, "base64: chunk too large");
    zf_repr_bytes(encoded, (n + 2) / 3 * 4);
    return ZF_OK;
}

static zf_status base64_size(const zf_codec *c, const uint8_t *in, size_t in_len,
                             size_t *out_len, zf_err *err)
{
    (void)c;
    return b64_run(in, in_len, NULL, 0, out_len, err);
}

static zf_status base64_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                               size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    (void)c;
    (void)decoded;
    size_t n;
    zf_status st = b64_run(in, in_len, out, out_len, &n, err);
    if (st != ZF_OK)
        return st;
    if (n != out_len)
        return zf_codec_too_short(err, "base64", n, out_len);
    return ZF_OK;
}

static const zf_codec_ops base64_ops = {
    .name = "base64",
    .kind = ZF_CODEC_BYTES_TO_BYTES,
    .resolve = base64_resolve,
    .decode = base64_decode,
    .destroy = zf_codec_destroy_plain,
    .decoded_size = base64_size,
};

zf_status zf_codec_base64_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    (void)cfg;
    (void)err;
    zf_codec *c = zf_codec_alloc(sizeof *c, &base64_ops);
    if (!c)
        return ZF_ERR_NOMEM;
    *out = c;
    return ZF_OK;
}
