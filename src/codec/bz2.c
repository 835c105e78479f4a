/* bz2.c — numcodecs "bz2": bzip2 data as Python's bz2.decompress reads it: one or more streams
 * back to back; after the first, bytes that are not a valid stream are ignored. Output is
 * bounded by the caller's buffer (one probe byte detects "more would follow"). Encoding is
 * bz2.compress(data, level): one stream, block size `level` x 100k, work factor 0 (default). */
#include <bzlib.h>
#include <limits.h>
#include <string.h>

#include "codec_impl.h"

typedef struct bz2_codec {
    zf_codec base;
    int level; /* for encoding */
} bz2_codec;

/* Decode one stream into out[0..cap). *bad_data tells a malformed stream from the other errors
 * (a malformed stream after the first is ignored, as Python does); *produced is SIZE_MAX when
 * the stream holds more than cap bytes. total: for messages (ZF_SIZE_UNKNOWN: bounded). */
static zf_status bz2_stream(const uint8_t *in, size_t in_len, uint8_t *out, size_t cap,
                            size_t base, size_t total, size_t *used, size_t *produced,
                            bool *bad_data, zf_err *err)
{
    bz_stream s;
    memset(&s, 0, sizeof s);
    *bad_data = false;
    int rc = BZ2_bzDecompressInit(&s, 0, 0);
    if (rc != BZ_OK)
        return rc == BZ_MEM_ERROR ? ZF_ERR_NOMEM
                                  : zf_fail(err, ZF_ERR_CORRUPT, "bz2: init failed (%d)", rc);
    size_t in_given = 0, out_given = 0;
    char probe;
    bool probing = false;
    zf_status st = ZF_OK;
    for (;;) {
        if (s.avail_in == 0 && in_given < in_len) {
            size_t n = in_len - in_given < UINT_MAX ? in_len - in_given : UINT_MAX;
            s.next_in = (char *)(uintptr_t)(in + in_given);
            s.avail_in = (unsigned)n;
            in_given += n;
        }
        if (s.avail_out == 0) {
            if (probing) {
                st = zf_codec_too_long(err, "bz2", total);
                *produced = SIZE_MAX;
                break;
            }
            if (out_given < cap) {
                size_t n = cap - out_given < UINT_MAX ? cap - out_given : UINT_MAX;
                s.next_out = (char *)out + out_given;
                s.avail_out = (unsigned)n;
                out_given += n;
            } else {
                probing = true;
                s.next_out = &probe;
                s.avail_out = 1;
            }
        }
        unsigned before_in = s.avail_in, before_out = s.avail_out;
        rc = BZ2_bzDecompress(&s);
        if (rc == BZ_STREAM_END) {
            if (probing && s.avail_out == 0) {
                st = zf_codec_too_long(err, "bz2", total);
                *produced = SIZE_MAX;
            }
            break;
        }
        if (rc == BZ_OK) {
            if (s.avail_in == 0 && in_given == in_len && s.avail_out > 0) {
                size_t got = probing ? cap : out_given - s.avail_out;
                st = zf_codec_too_short(err, "bz2", base + got, total);
                break;
            }
            if (s.avail_in == before_in && s.avail_out == before_out && s.avail_out > 0) {
                st = zf_fail(err, ZF_ERR_CORRUPT, "bz2: decoder makes no progress");
                break;
            }
            continue;
        }
        if (rc == BZ_MEM_ERROR) {
            st = ZF_ERR_NOMEM;
        } else {
            *bad_data = rc == BZ_DATA_ERROR || rc == BZ_DATA_ERROR_MAGIC;
            st = zf_fail(err, ZF_ERR_CORRUPT, "bz2: corrupt stream (%s)",
                         rc == BZ_DATA_ERROR_MAGIC ? "not bzip2 data" : "data error");
        }
        break;
    }
    if (st == ZF_OK) {
        *used = in_given - s.avail_in;
        *produced = probing ? cap : out_given - s.avail_out;
    }
    BZ2_bzDecompressEnd(&s);
    return st;
}

/* Every stream into out[0..cap), *done bytes (SIZE_MAX: more than cap); total as for
 * bz2_stream. */
static zf_status bz2_streams(const uint8_t *in, size_t in_len, uint8_t *out, size_t cap,
                             size_t total, size_t *done, zf_err *err)
{
    size_t pos = 0;
    *done = 0;
    if (in_len == 0)
        return zf_codec_too_short(err, "bz2", 0, total);
    while (pos < in_len) {
        size_t used = 0, produced = 0;
        bool bad;
        zf_err e2 = {""};
        zf_status st = bz2_stream(in + pos, in_len - pos, out + *done, cap - *done, *done,
                                  total, &used, &produced, &bad, &e2);
        if (st != ZF_OK) {
            if (pos > 0 && bad) /* trailing bytes that are not a stream: ignored */
                break;
            if (err)
                *err = e2;
            if (produced == SIZE_MAX)
                *done = SIZE_MAX;
            return st;
        }
        if (used == 0)
            return zf_fail(err, ZF_ERR_CORRUPT, "bz2: empty stream");
        pos += used;
        *done += produced;
    }
    return ZF_OK;
}

static zf_status bz2_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                            size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    (void)c;
    (void)decoded;
    size_t done;
    zf_status st = bz2_streams(in, in_len, out, out_len, out_len, &done, err);
    if (st == ZF_OK && done != out_len)
        return zf_codec_too_short(err, "bz2", done, out_len);
    return st;
}

static zf_status bz2_decode_bounded(const zf_codec *c, const uint8_t *in, size_t in_len,
                                    uint8_t *out, size_t cap, size_t *produced, zf_err *err)
{
    (void)c;
    return bz2_streams(in, in_len, out, cap, ZF_SIZE_UNKNOWN, produced, err);
}

static zf_status bz2_encode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                            size_t in_len, unsigned flags, uint8_t **out, size_t *out_len,
                            zf_err *err)
{
    (void)decoded;
    (void)flags;
    const bz2_codec *b = (const bz2_codec *)c;
    bz_stream s;
    memset(&s, 0, sizeof s);
    int rc = BZ2_bzCompressInit(&s, b->level, 0, 0);
    if (rc != BZ_OK)
        return rc == BZ_MEM_ERROR ? ZF_ERR_NOMEM
                                  : zf_fail(err, ZF_ERR_INVALID, "bz2: init failed (%d)", rc);
    /* bzip2's documented worst case: 1% larger plus 600 bytes. */
    size_t cap = in_len + in_len / 100 + 600, in_given = 0, out_given = 0;
    uint8_t *buf = zf_enc_alloc(cap);
    zf_status st = buf ? ZF_OK : ZF_ERR_NOMEM;
    while (st == ZF_OK) {
        if (s.avail_in == 0 && in_given < in_len) {
            size_t n = in_len - in_given < UINT_MAX ? in_len - in_given : UINT_MAX;
            s.next_in = (char *)(uintptr_t)(in + in_given);
            s.avail_in = (unsigned)n;
            in_given += n;
        }
        if (s.avail_out == 0) {
            if (out_given == cap) {
                size_t ncap = cap + cap / 2 + 64;
                uint8_t *nb = realloc(buf, ncap);
                if (!nb) {
                    st = ZF_ERR_NOMEM;
                    break;
                }
                buf = nb;
                cap = ncap;
            }
            size_t n = cap - out_given < UINT_MAX ? cap - out_given : UINT_MAX;
            s.next_out = (char *)buf + out_given;
            s.avail_out = (unsigned)n;
            out_given += n;
        }
        rc = BZ2_bzCompress(&s, in_given == in_len ? BZ_FINISH : BZ_RUN);
        if (rc == BZ_STREAM_END)
            break;
        if (rc != BZ_RUN_OK && rc != BZ_FINISH_OK)
            st = zf_fail(err, ZF_ERR_INVALID, "bz2: compression failed (%d)", rc);
    }
    BZ2_bzCompressEnd(&s);
    if (st != ZF_OK) {
        free(buf);
        return st;
    }
    *out = buf;
    *out_len = out_given - s.avail_out;
    return ZF_OK;
}

static const zf_codec_ops bz2_ops = {
    .name = "bz2",
    .kind = ZF_CODEC_BYTES_TO_BYTES,
    .resolve = zf_resolve_compressed,
    .decode = bz2_decode,
    .destroy = zf_codec_destroy_plain,
    .encode = bz2_encode,
    .decode_bounded = bz2_decode_bounded,
};

zf_status zf_codec_bz2_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    long long level;
    zf_status st = zf_cfg_int(cfg, "bz2", "level", false, true, 1, 1, 9, &level, err);
    if (st != ZF_OK)
        return st;
    bz2_codec *b = zf_codec_alloc(sizeof *b, &bz2_ops);
    if (!b)
        return ZF_ERR_NOMEM;
    b->level = (int)level;
    *out = &b->base;
    return ZF_OK;
}
