/* fletcher32.c — numcodecs "fletcher32" (numcodecs 0.12+, numcodecs/fletcher32.pyx; v3
 * "numcodecs.fletcher32", zarrs' too): the payload followed by a 4-byte little-endian Fletcher-32
 * checksum of it, in the variant of HDF5 and netCDF (H5_checksum_fletcher32), which numcodecs
 * copies:
 * - the payload is read as 16-bit *big-endian* words (byte 0 high, byte 1 low), an odd last
 *   byte as the high byte of a word whose low byte is 0;
 * - sum1 += word, sum2 += sum1 in 32-bit arithmetic, folded (x & 0xffff) + (x >> 16) after
 *   every 360 words, after the odd byte, and twice at the end: so 0xffff stays 0xffff rather
 *   than becoming 0 as in the textbook mod-65535 form;
 * - the checksum is sum2 << 16 | sum1.
 * The configuration has no options ({"id": "fletcher32"}). A mismatch is ZF_ERR_CORRUPT. */
#include "codec_impl.h"

static uint32_t fold(uint32_t x)
{
    return (x & 0xffff) + (x >> 16);
}

static uint32_t fletcher32_fn(const zf_codec *c, const uint8_t *p, size_t len)
{
    (void)c;
    uint32_t sum1 = 0, sum2 = 0;
    for (size_t words = len / 2; words;) {
        size_t block = words > 360 ? 360 : words;
        words -= block;
        while (block--) {
            sum1 += (uint32_t)p[0] << 8 | p[1];
            sum2 += sum1;
            p += 2;
        }
        sum1 = fold(sum1);
        sum2 = fold(sum2);
    }
    if (len % 2) {
        sum1 += (uint32_t)p[0] << 8;
        sum2 += sum1;
        sum1 = fold(sum1);
        sum2 = fold(sum2);
    }
    sum1 = fold(sum1);
    sum2 = fold(sum2);
    return sum2 << 16 | sum1;
}

static const zf_codec_ops fletcher32_ops = {
    .name = "fletcher32",
    .kind = ZF_CODEC_BYTES_TO_BYTES,
    .resolve = zf_checksum_resolve,
    .decode = zf_checksum_decode,
    .destroy = zf_codec_destroy_plain,
    .decoded_size = zf_checksum_decoded_size,
    .encode = zf_checksum_encode,
};

zf_status zf_codec_fletcher32_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    (void)cfg;
    (void)err;
    zf_checksum_codec *k = zf_checksum_codec_alloc(sizeof *k, &fletcher32_ops, fletcher32_fn,
                                                   true);
    if (!k)
        return ZF_ERR_NOMEM;
    *out = &k->base;
    return ZF_OK;
}
