/* gzip.c — numcodecs "gzip": gzip-format (RFC 1952) data as Python's GzipFile reads it: one or
 * more members back to back, each checked against its CRC-32 and length, optionally followed
 * by zero padding; anything else after a member is an error. */
#include "codec_impl.h"

typedef struct gzip_codec {
    zf_codec base;
    int level; /* for encoding */
} gzip_codec;

static zf_status gzip_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                             size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    (void)c;
    (void)decoded;
    size_t pos = 0, done = 0;
    if (in_len == 0)
        return zf_codec_too_short(err, "gzip", 0, out_len);
    while (pos < in_len) {
        size_t used = 0, produced = 0;
        zf_status st = zf_inflate_stream("gzip", 31, in + pos, in_len - pos, out + done,
                                         out_len - done, done, out_len, &used, &produced, err);
        if (st != ZF_OK)
            return st;
        if (used == 0) /* cannot happen with a real member; never loop forever */
            return zf_fail(err, ZF_ERR_CORRUPT, "gzip: empty member");
        pos += used;
        done += produced;
        while (pos < in_len && in[pos] == 0) /* zero padding after a member */
            pos++;
    }
    if (done != out_len)
        return zf_codec_too_short(err, "gzip", done, out_len);
    return ZF_OK;
}

static const zf_codec_ops gzip_ops = {
    .name = "gzip",
    .kind = ZF_CODEC_BYTES_TO_BYTES,
    .resolve = zf_resolve_compressed,
    .decode = gzip_decode,
    .destroy = zf_codec_destroy_plain,
};

zf_status zf_codec_gzip_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    long long level;
    zf_status st = zf_cfg_int(cfg, "gzip", "level", false, true, 1, -1, 9, &level, err);
    if (st != ZF_OK)
        return st;
    gzip_codec *g = zf_codec_alloc(sizeof *g, &gzip_ops);
    if (!g)
        return ZF_ERR_NOMEM;
    g->level = (int)level;
    *out = &g->base;
    return ZF_OK;
}
