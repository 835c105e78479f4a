/* blosc.c — numcodecs "blosc": a c-blosc 1.x buffer (its own header, then blocks compressed
 * with blosclz, lz4, lz4hc, snappy, zlib or zstd after an optional byte or bit shuffle).
 *
 * c-blosc's decompressor reads as far as the header's cbytes says, so the header is checked
 * against the real sizes first (nbytes == out_len, cbytes == in_len, blosc_cbuffer_validate).
 * blosc_decompress_ctx with one thread keeps no global state and is safe from many threads.
 *
 * Where the chain does not know the decoded size (blosc after another compressor),
 * decoded_size reads it from the header. "shuffle" may also be GDAL's string form.
 *
 * Encoding is numcodecs' blosc.compress: blosc_compress_ctx (one thread) with cname, clevel,
 * shuffle (-1, AUTOSHUFFLE: bit shuffle for 1-byte items, else byte shuffle), blocksize (0:
 * automatic) and typesize the configuration's, else the item size of the array it is given
 * (numcodecs passes the buffer's itemsize), into nbytes + BLOSC_MAX_OVERHEAD bytes. */
#include <blosc.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "codec_impl.h"

typedef struct blosc_codec {
    zf_codec base;
    char cname[16]; /* for encoding */
    int clevel, shuffle, blocksize, typesize;
} blosc_codec;

static zf_status blosc_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                              size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    (void)c;
    (void)decoded;
    if (in_len < BLOSC_MIN_HEADER_LENGTH)
        return zf_fail(err, ZF_ERR_CORRUPT, "blosc: %zu bytes, too short for a header", in_len);
    size_t nbytes, cbytes, blocksize;
    blosc_cbuffer_sizes(in, &nbytes, &cbytes, &blocksize);
    if (nbytes != out_len)
        return zf_fail(err, ZF_ERR_CORRUPT, "blosc: header says %zu decoded bytes, expected %zu",
                       nbytes, out_len);
    if (cbytes != in_len)
        return zf_fail(err, ZF_ERR_CORRUPT,
                       "blosc: header says %zu compressed bytes, the chunk holds %zu", cbytes,
                       in_len);
    size_t checked;
    if (blosc_cbuffer_validate(in, in_len, &checked) != 0 || checked != out_len)
        return zf_fail(err, ZF_ERR_CORRUPT, "blosc: invalid header");
    if (out_len == 0)
        return ZF_OK;
    if (in[3] == 0 || blocksize == 0)
        return zf_fail(err, ZF_ERR_CORRUPT, "blosc: invalid header (typesize %u, blocksize %zu)",
                       in[3], blocksize);
    int r = blosc_decompress_ctx(in, out, out_len, 1);
    if (r <= 0) {
        const char *lib = blosc_cbuffer_complib(in);
        return zf_fail(err, ZF_ERR_CORRUPT, "blosc: corrupt data (error %d, internal codec %s)",
                       r, lib ? lib : "unknown");
    }
    if ((size_t)r != out_len)
        return zf_codec_too_short(err, "blosc", (size_t)r, out_len);
    return ZF_OK;
}

/* The header's nbytes (where the chain does not know the size, e.g. after gzip); decode
 * checks the rest of the header. */
static zf_status blosc_decoded_size(const zf_codec *c, const uint8_t *in, size_t in_len,
                                    size_t *out_len, zf_err *err)
{
    (void)c;
    if (in_len < BLOSC_MIN_HEADER_LENGTH)
        return zf_fail(err, ZF_ERR_CORRUPT, "blosc: %zu bytes, too short for a header", in_len);
    size_t nbytes, cbytes, blocksize;
    blosc_cbuffer_sizes(in, &nbytes, &cbytes, &blocksize);
    *out_len = nbytes;
    return ZF_OK;
}

static zf_status blosc_encode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                              size_t in_len, unsigned flags, uint8_t **out, size_t *out_len,
                              zf_err *err)
{
    (void)flags;
    const blosc_codec *b = (const blosc_codec *)c;
    if (blosc_compname_to_compcode(b->cname) < 0)
        return zf_fail(err, ZF_ERR_INVALID, "blosc: \"cname\": compressor \"%s\" is not supported",
                       b->cname);
    if (in_len > BLOSC_MAX_BUFFERSIZE)
        return zf_fail(err, ZF_ERR_INVALID, "blosc: %zu bytes is more than one buffer can hold",
                       in_len);
    size_t typesize = b->typesize > 0 ? (size_t)b->typesize : decoded->dtype.itemsize;
    if (typesize == 0)
        typesize = 1;
    int shuffle = b->shuffle;
    if (shuffle == -1)
        shuffle = typesize == 1 ? BLOSC_BITSHUFFLE : BLOSC_SHUFFLE;
    size_t cap = in_len + BLOSC_MAX_OVERHEAD;
    uint8_t *buf = zf_enc_alloc(cap);
    if (!buf)
        return ZF_ERR_NOMEM;
    int r = blosc_compress_ctx(b->clevel, shuffle, typesize, in_len, in, buf, cap, b->cname,
                               (size_t)b->blocksize, 1);
    if (r <= 0) {
        free(buf);
        return zf_fail(err, ZF_ERR_INVALID, "blosc: compression failed (%d)", r);
    }
    *out = buf;
    *out_len = (size_t)r;
    return ZF_OK;
}

static const zf_codec_ops blosc_ops = {
    .name = "blosc",
    .kind = ZF_CODEC_BYTES_TO_BYTES,
    .resolve = zf_resolve_compressed,
    .decode = blosc_decode,
    .destroy = zf_codec_destroy_plain,
    .encode = blosc_encode,
    .decoded_size = blosc_decoded_size,
};

/* "shuffle": numcodecs' integer (-1 AUTOSHUFFLE, 0, 1, 2), or the string GDAL 3.4-3.7 writes:
 * its BLOSC_SHUFFLE creation option as given, "NONE", "BYTE" or "BIT" or their aliases "0",
 * "1", "2" (GDAL's own writer matches them without regard to case: cpl_compressor.cpp). */
static zf_status blosc_shuffle(yajl_val cfg, long long *shuffle, zf_err *err)
{
    yajl_val v = zf_cfg_get(cfg, "shuffle");
    if (!v || !YAJL_IS_STRING(v))
        return zf_cfg_int(cfg, "blosc", "shuffle", false, true, 1, -1, 2, shuffle, err);
    static const char *const names[][2] = {{"NONE", "0"}, {"BYTE", "1"}, {"BIT", "2"}};
    for (long long i = 0; i < 3; i++)
        if (strcasecmp(v->u.string, names[i][0]) == 0 || strcmp(v->u.string, names[i][1]) == 0) {
            *shuffle = i;
            return ZF_OK;
        }
    return zf_fail(err, ZF_ERR_INVALID,
                   "blosc: \"shuffle\": expected -1, 0, 1 or 2 (or GDAL's \"NONE\", \"BYTE\" or "
                   "\"BIT\")");
}

zf_status zf_codec_blosc_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    const char *cname;
    long long clevel, shuffle, blocksize, typesize;
    zf_status st;
    if ((st = zf_cfg_string(cfg, "blosc", "cname", false, &cname, err)) ||
        (st = zf_cfg_int(cfg, "blosc", "clevel", false, true, 5, 0, 9, &clevel, err)) ||
        (st = blosc_shuffle(cfg, &shuffle, err)) ||
        (st = zf_cfg_int(cfg, "blosc", "blocksize", false, true, 0, 0, INT32_MAX, &blocksize,
                         err)) ||
        (st = zf_cfg_int(cfg, "blosc", "typesize", false, true, 0, 0, 255, &typesize, err)))
        return st;
    if (!cname)
        cname = "lz4";
    /* Not checked: decoding follows the compressor recorded in each buffer's header. */
    blosc_codec *b = zf_codec_alloc(sizeof *b, &blosc_ops);
    if (!b)
        return ZF_ERR_NOMEM;
    snprintf(b->cname, sizeof b->cname, "%s", cname);
    b->clevel = (int)clevel;
    b->shuffle = (int)shuffle;
    b->blocksize = (int)blocksize;
    b->typesize = (int)typesize;
    *out = &b->base;
    return ZF_OK;
}
