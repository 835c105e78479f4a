/* zlib.c — numcodecs "zlib": one zlib-format (RFC 1950) stream, decoded as Python's
 * zlib.decompress does (bytes after the end of the stream are ignored), encoded as
 * zlib.compress(data, level) does (window bits 15, memory level 8, default strategy, one
 * Z_FINISH pass).
 *
 * Also home of zf_inflate_stream, the bounded inflate loop gzip.c shares: output goes into the
 * caller's buffer only; once it is full, one probe byte tells "more would follow" without
 * producing the rest. decode_bounded is the same loop with a bound instead of an exact size.
 * zf_deflate_stream is the deflate loop both encoders share.
 *
 * Where the decoded size is known, libdeflate decodes first (zf_fast_inflate: about twice
 * zlib's speed on these chunks, docs/benchmarks-history.md); any outcome but exactly that size, or an
 * error, is decoded again by zlib, whose result and messages are the reference. */
#include <libdeflate.h>
#include <limits.h>
#include <string.h>
#include <zlib.h>

#include "codec_impl.h"

typedef struct zlib_codec {
    zf_codec base;
    int level; /* for encoding */
} zlib_codec;

zf_status zf_inflate_stream(const char *codec, int window_bits, const uint8_t *in, size_t in_len,
                            uint8_t *out, size_t cap, size_t base, size_t total, size_t *used,
                            size_t *produced, zf_err *err)
{
    z_stream s;
    memset(&s, 0, sizeof s);
    int rc = inflateInit2(&s, window_bits);
    if (rc != Z_OK)
        return rc == Z_MEM_ERROR ? ZF_ERR_NOMEM
                                 : zf_fail(err, ZF_ERR_CORRUPT, "%s: inflateInit2 failed (%d)",
                                           codec, rc);
    size_t in_given = 0, out_given = 0;
    uint8_t probe;
    bool probing = false;
    zf_status st = ZF_OK;
    for (;;) {
        if (s.avail_in == 0 && in_given < in_len) {
            size_t n = in_len - in_given < UINT_MAX ? in_len - in_given : UINT_MAX;
            s.next_in = (Bytef *)(uintptr_t)(in + in_given);
            s.avail_in = (uInt)n;
            in_given += n;
        }
        if (s.avail_out == 0) {
            if (probing) { /* the probe byte was produced */
                st = zf_codec_too_long(err, codec, total);
                *produced = SIZE_MAX;
                break;
            }
            if (out_given < cap) {
                size_t n = cap - out_given < UINT_MAX ? cap - out_given : UINT_MAX;
                s.next_out = out + out_given;
                s.avail_out = (uInt)n;
                out_given += n;
            } else {
                probing = true;
                s.next_out = &probe;
                s.avail_out = 1;
            }
        }
        rc = inflate(&s, Z_NO_FLUSH);
        if (rc == Z_STREAM_END) {
            if (probing && s.avail_out == 0) {
                st = zf_codec_too_long(err, codec, total);
                *produced = SIZE_MAX;
            }
            break;
        }
        if (rc == Z_OK)
            continue;
        if (rc == Z_BUF_ERROR) { /* no progress possible */
            if (s.avail_in == 0 && in_given == in_len) {
                size_t got = probing ? cap : out_given - s.avail_out;
                st = zf_codec_too_short(err, codec, base + got, total);
                break;
            }
            if (s.avail_out == 0)
                continue;
            st = zf_fail(err, ZF_ERR_CORRUPT, "%s: inflate makes no progress", codec);
            break;
        }
        if (rc == Z_MEM_ERROR)
            st = ZF_ERR_NOMEM;
        else if (rc == Z_NEED_DICT)
            st = zf_fail(err, ZF_ERR_CORRUPT, "%s: stream needs a preset dictionary", codec);
        else
            st = zf_fail(err, ZF_ERR_CORRUPT, "%s: corrupt stream (%s)", codec,
                         s.msg ? s.msg : "inflate error");
        break;
    }
    if (st == ZF_OK) {
        *used = in_given - s.avail_in;
        *produced = probing ? cap : out_given - s.avail_out;
    }
    inflateEnd(&s);
    return st;
}

bool zf_fast_inflate(bool gzip, const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len)
{
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    if (!d)
        return false;
    size_t got_in = 0, got_out = 0;
    enum libdeflate_result r =
        gzip ? libdeflate_gzip_decompress_ex(d, in, in_len, out, out_len, &got_in, &got_out)
             : libdeflate_zlib_decompress_ex(d, in, in_len, out, out_len, &got_in, &got_out);
    libdeflate_free_decompressor(d);
    /* gzip: one member and nothing after it (zero padding and further members go to zlib) */
    return r == LIBDEFLATE_SUCCESS && got_out == out_len && (!gzip || got_in == in_len);
}

static zf_status zlib_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                             size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    (void)c;
    (void)decoded;
    if (zf_fast_inflate(false, in, in_len, out, out_len))
        return ZF_OK;
    size_t used = 0, produced = 0;
    zf_status st = zf_inflate_stream("zlib", 15, in, in_len, out, out_len, 0, out_len, &used,
                                     &produced, err);
    if (st != ZF_OK)
        return st;
    if (produced != out_len)
        return zf_codec_too_short(err, "zlib", produced, out_len);
    return ZF_OK;
}

static zf_status zlib_decode_bounded(const zf_codec *c, const uint8_t *in, size_t in_len,
                                     uint8_t *out, size_t cap, size_t *produced, zf_err *err)
{
    (void)c;
    size_t used = 0;
    *produced = 0;
    return zf_inflate_stream("zlib", 15, in, in_len, out, cap, 0, ZF_SIZE_UNKNOWN, &used,
                             produced, err);
}

zf_status zf_deflate_stream(const char *codec, int level, int window_bits, bool finish_only,
                            const uint8_t *in, size_t in_len, size_t head, size_t tail,
                            uint8_t **out, size_t *produced, zf_err *err)
{
    z_stream s;
    memset(&s, 0, sizeof s);
    int rc = deflateInit2(&s, level, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY);
    if (rc != Z_OK)
        return rc == Z_MEM_ERROR ? ZF_ERR_NOMEM
                                 : zf_fail(err, ZF_ERR_INVALID, "%s: deflateInit2 failed (%d)",
                                           codec, rc);
    /* deflateBound holds the whole stream; the buffer grows should it not. */
    size_t cap = head + tail + deflateBound(&s, (uLong)(in_len < ULONG_MAX ? in_len : ULONG_MAX));
    uint8_t *buf = zf_enc_alloc(cap);
    if (!buf) {
        deflateEnd(&s);
        return ZF_ERR_NOMEM;
    }
    size_t in_given = 0, out_given = head;
    zf_status st = ZF_OK;
    for (;;) {
        if (s.avail_in == 0 && in_given < in_len) {
            size_t n = in_len - in_given < UINT_MAX ? in_len - in_given : UINT_MAX;
            s.next_in = (Bytef *)(uintptr_t)(in + in_given);
            s.avail_in = (uInt)n;
            in_given += n;
        }
        if (s.avail_out == 0) {
            if (out_given + tail >= cap) {
                size_t ncap = cap + cap / 2 + 64;
                uint8_t *nb = ncap > cap ? realloc(buf, ncap) : NULL;
                if (!nb) {
                    st = ZF_ERR_NOMEM;
                    break;
                }
                buf = nb;
                cap = ncap;
            }
            size_t room = cap - tail - out_given;
            size_t n = room < UINT_MAX ? room : UINT_MAX;
            s.next_out = buf + out_given;
            s.avail_out = (uInt)n;
            out_given += n;
        }
        /* zlib.compress: Z_FINISH once all input is given; compressobj: Z_NO_FLUSH until the
         * input is consumed, then flush() with Z_FINISH. */
        int flush = in_given == in_len && (finish_only || s.avail_in == 0) ? Z_FINISH : Z_NO_FLUSH;
        rc = deflate(&s, flush);
        if (rc == Z_STREAM_END)
            break;
        if (rc == Z_OK || (rc == Z_BUF_ERROR && s.avail_out == 0)) /* more room: given above */
            continue;
        st = zf_fail(err, ZF_ERR_INVALID, "%s: deflate failed (%d)", codec, rc);
        break;
    }
    if (st == ZF_OK) {
        *out = buf;
        *produced = out_given - s.avail_out - head;
    } else {
        free(buf);
    }
    deflateEnd(&s);
    return st;
}

static zf_status zlib_encode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                             size_t in_len, unsigned flags, uint8_t **out, size_t *out_len,
                             zf_err *err)
{
    (void)decoded;
    (void)flags;
    const zlib_codec *z = (const zlib_codec *)c;
    return zf_deflate_stream("zlib", z->level, 15, true, in, in_len, 0, 0, out, out_len, err);
}

static const zf_codec_ops zlib_ops = {
    .name = "zlib",
    .kind = ZF_CODEC_BYTES_TO_BYTES,
    .resolve = zf_resolve_compressed,
    .decode = zlib_decode,
    .destroy = zf_codec_destroy_plain,
    .encode = zlib_encode,
    .decode_bounded = zlib_decode_bounded,
};

zf_status zf_codec_zlib_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    long long level;
    zf_status st = zf_cfg_int(cfg, "zlib", "level", false, true, 1, -1, 9, &level, err);
    if (st != ZF_OK)
        return st;
    zlib_codec *z = zf_codec_alloc(sizeof *z, &zlib_ops);
    if (!z)
        return ZF_ERR_NOMEM;
    z->level = (int)level;
    *out = &z->base;
    return ZF_OK;
}
