/* zstd.c — numcodecs "zstd": one or more Zstandard frames (and skippable frames), with or
 * without the content size in their headers.
 *
 * Decoding is ZSTD's single-pass decompression into the caller's buffer of exactly out_len
 * bytes: it uses that buffer as its window (no window allocation, whatever the frame header
 * asks for), never writes past it and fails with dstSize_tooSmall as soon as the data would
 * produce more, so a bomb costs nothing. A frame whose header declares a larger content size is
 * rejected before any work. Where the decoded size is not known (zstd after another
 * compressor), decoded_size adds up the frames' content sizes, and frames without one are
 * decoded the same way into a bounded buffer (decode_bounded). */
#include <pthread.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "codec_impl.h"

/* One decompression context per thread, kept: a context is about 160 KiB of tables and buffers,
 * and making one per chunk cost a strings-of-text read a third of its speed when malloc mapped
 * blocks of that size on their own (an earlier zf_mem_tune_malloc). Freed when the thread ends. */
static pthread_key_t dctx_key;
static pthread_once_t dctx_once = PTHREAD_ONCE_INIT;
static bool dctx_key_ok;

static void dctx_free(void *d) { ZSTD_freeDCtx(d); }
static void dctx_key_make(void) { dctx_key_ok = pthread_key_create(&dctx_key, dctx_free) == 0; }

static ZSTD_DCtx *thread_dctx(void)
{
    pthread_once(&dctx_once, dctx_key_make);
    if (!dctx_key_ok)
        return NULL;
    ZSTD_DCtx *d = pthread_getspecific(dctx_key);
    if (!d && (d = ZSTD_createDCtx()) != NULL && pthread_setspecific(dctx_key, d) != 0) {
        ZSTD_freeDCtx(d);
        d = NULL;
    }
    return d;
}

typedef struct zstd_codec {
    zf_codec base;
    int level;     /* for encoding */
    bool checksum; /* for encoding */
    bool legacy;   /* numcodecs 0.11's encoder (see zstd_encode) */
} zstd_codec;

static zf_status zstd_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                             size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    (void)c;
    (void)decoded;
    if (in_len == 0)
        return zf_codec_too_short(err, "zstd", 0, out_len);
    unsigned long long declared = ZSTD_getFrameContentSize(in, in_len);
    if (declared == ZSTD_CONTENTSIZE_ERROR)
        return zf_fail(err, ZF_ERR_CORRUPT, "zstd: not a zstd frame");
    if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared > out_len)
        return zf_fail(err, ZF_ERR_CORRUPT, "zstd: frame says %llu decoded bytes, expected %zu",
                       declared, out_len);
    ZSTD_DCtx *dctx = thread_dctx();
    if (!dctx)
        return ZF_ERR_NOMEM;
    size_t r = ZSTD_decompressDCtx(dctx, out, out_len, in, in_len);
    if (ZSTD_isError(r)) {
        switch (ZSTD_getErrorCode(r)) {
        case ZSTD_error_dstSize_tooSmall: return zf_codec_too_long(err, "zstd", out_len);
        case ZSTD_error_srcSize_wrong:
            return zf_fail(err, ZF_ERR_CORRUPT, "zstd: stream ends early or has trailing bytes");
        case ZSTD_error_memory_allocation: return ZF_ERR_NOMEM;
        default:
            return zf_fail(err, ZF_ERR_CORRUPT, "zstd: corrupt data (%s)", ZSTD_getErrorName(r));
        }
    }
    if (r != out_len)
        return zf_codec_too_short(err, "zstd", r, out_len);
    return ZF_OK;
}

/* The sum of the frames' content sizes (skippable frames count 0), when every frame states
 * its own; ZF_ERR_UNSUPPORTED when one does not (decode_bounded then decodes it). */
static zf_status zstd_decoded_size(const zf_codec *c, const uint8_t *in, size_t in_len,
                                   size_t *out_len, zf_err *err)
{
    (void)c;
    if (in_len == 0)
        return zf_fail(err, ZF_ERR_CORRUPT, "zstd: empty input");
    unsigned long long total = 0;
    for (size_t pos = 0; pos < in_len;) {
        unsigned long long n = ZSTD_getFrameContentSize(in + pos, in_len - pos);
        if (n == ZSTD_CONTENTSIZE_UNKNOWN)
            return zf_fail(err, ZF_ERR_UNSUPPORTED, "zstd: a frame does not state its size");
        size_t len = ZSTD_findFrameCompressedSize(in + pos, in_len - pos);
        if (n == ZSTD_CONTENTSIZE_ERROR || ZSTD_isError(len) || len == 0)
            return zf_fail(err, ZF_ERR_CORRUPT, "zstd: not a zstd frame at byte %zu", pos);
        if (n > SIZE_MAX - 1 - total)
            return zf_fail(err, ZF_ERR_CORRUPT, "zstd: frames say more than %zu decoded bytes",
                           SIZE_MAX - 1);
        total += n;
        pos += len;
    }
    *out_len = (size_t)total;
    return ZF_OK;
}

/* Frames with or without content sizes into out[0..cap): the same single pass. */
static zf_status zstd_decode_bounded(const zf_codec *c, const uint8_t *in, size_t in_len,
                                     uint8_t *out, size_t cap, size_t *produced, zf_err *err)
{
    (void)c;
    *produced = 0;
    if (in_len == 0)
        return zf_codec_too_short(err, "zstd", 0, ZF_SIZE_UNKNOWN);
    unsigned long long declared = ZSTD_getFrameContentSize(in, in_len);
    if (declared == ZSTD_CONTENTSIZE_ERROR)
        return zf_fail(err, ZF_ERR_CORRUPT, "zstd: not a zstd frame");
    if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared > cap) {
        *produced = SIZE_MAX;
        return zf_codec_too_long(err, "zstd", ZF_SIZE_UNKNOWN);
    }
    ZSTD_DCtx *dctx = thread_dctx();
    if (!dctx)
        return ZF_ERR_NOMEM;
    size_t r = ZSTD_decompressDCtx(dctx, out, cap, in, in_len);
    if (!ZSTD_isError(r)) {
        *produced = r;
        return ZF_OK;
    }
    switch (ZSTD_getErrorCode(r)) {
    case ZSTD_error_dstSize_tooSmall:
        *produced = SIZE_MAX;
        return zf_codec_too_long(err, "zstd", ZF_SIZE_UNKNOWN);
    case ZSTD_error_srcSize_wrong:
        return zf_fail(err, ZF_ERR_CORRUPT, "zstd: stream ends early or has trailing bytes");
    case ZSTD_error_memory_allocation: return ZF_ERR_NOMEM;
    default:
        return zf_fail(err, ZF_ERR_CORRUPT, "zstd: corrupt data (%s)", ZSTD_getErrorName(r));
    }
}

/* numcodecs 0.11 (configurations {"id": "zstd", "level": L}, without "checksum", which it does
 * not know) compresses with ZSTD_compress(level), a level <= 0 meaning 1. Later numcodecs
 * (configurations with "checksum") and the v3 "zstd" codec (configuration without "id") set the
 * level as given (0: zstd's default, negative: the fast levels) and the checksum flag on a
 * context and call ZSTD_compress2. Both clamp the level to ZSTD_maxCLevel(). */
static zf_status zstd_encode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                             size_t in_len, unsigned flags, uint8_t **out, size_t *out_len,
                             zf_err *err)
{
    (void)decoded;
    (void)flags;
    const zstd_codec *z = (const zstd_codec *)c;
    size_t cap = ZSTD_compressBound(in_len);
    if (ZSTD_isError(cap))
        return zf_fail(err, ZF_ERR_INVALID, "zstd: %zu bytes is too large to compress", in_len);
    uint8_t *buf = zf_enc_alloc(cap);
    if (!buf)
        return ZF_ERR_NOMEM;
    size_t r;
    if (z->legacy) {
        r = ZSTD_compress(buf, cap, in, in_len, z->level <= 0 ? 1 : z->level);
    } else {
        ZSTD_CCtx *cctx = ZSTD_createCCtx();
        if (!cctx) {
            free(buf);
            return ZF_ERR_NOMEM;
        }
        r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, z->level);
        if (!ZSTD_isError(r))
            r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, z->checksum ? 1 : 0);
        if (!ZSTD_isError(r))
            r = ZSTD_compress2(cctx, buf, cap, in, in_len);
        ZSTD_freeCCtx(cctx);
    }
    if (ZSTD_isError(r)) {
        free(buf);
        if (ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation)
            return ZF_ERR_NOMEM;
        return zf_fail(err, ZF_ERR_INVALID, "zstd: compression failed (%s)",
                       ZSTD_getErrorName(r));
    }
    *out = buf;
    *out_len = r;
    return ZF_OK;
}

static const zf_codec_ops zstd_ops = {
    .name = "zstd",
    .kind = ZF_CODEC_BYTES_TO_BYTES,
    .resolve = zf_resolve_compressed,
    .decode = zstd_decode,
    .destroy = zf_codec_destroy_plain,
    .encode = zstd_encode,
    .decoded_size = zstd_decoded_size,
    .decode_bounded = zstd_decode_bounded,
};

zf_status zf_codec_zstd_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    long long level;
    bool checksum;
    zf_status st;
    if ((st = zf_cfg_int(cfg, "zstd", "level", false, true, 0, -(1LL << 31), 1LL << 31, &level,
                         err)) ||
        (st = zf_cfg_bool(cfg, "zstd", "checksum", false, &checksum, err)))
        return st;
    zstd_codec *z = zf_codec_alloc(sizeof *z, &zstd_ops);
    if (!z)
        return ZF_ERR_NOMEM;
    z->level = (int)(level > ZSTD_maxCLevel() ? ZSTD_maxCLevel() : level);
    z->checksum = checksum;
    z->legacy = zf_cfg_get(cfg, "id") && !zf_cfg_get(cfg, "checksum");
    *out = &z->base;
    return ZF_OK;
}
