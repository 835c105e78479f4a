/* crc32c.c — CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) and the numcodecs "crc32c"
 * codec: the payload followed by its 4-byte little-endian CRC-32C (numcodecs' default location
 * "end", which is also Zarr v3's crc32c codec).
 *
 * zf_crc32c uses the SSE4.2 crc32 instruction where the CPU has it, else slicing-by-8 tables. */
#include <pthread.h>
#include <string.h>

#include "codec_impl.h"

#define POLY 0x82F63B78u

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void make_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
}

uint32_t zf_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&table_once, make_table);
    const uint8_t *p = buf;
    crc = ~crc;
    while (len && ((uintptr_t)p & 7)) {
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
        len--;
    }
    while (len >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        lo = __builtin_bswap32(lo);
        hi = __builtin_bswap32(hi);
#endif
        lo ^= crc;
        crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
              table[4][lo >> 24] ^ table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
              table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
    return ~crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>

__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const void *buf,
                                                             size_t len)
{
    const uint8_t *p = buf;
    uint64_t c = ~crc;
    while (len && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        len--;
    }
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        p += 8;
        len -= 8;
    }
    while (len--)
        c = _mm_crc32_u8((uint32_t)c, *p++);
    return ~(uint32_t)c;
}

uint32_t zf_crc32c(uint32_t crc, const void *buf, size_t len)
{
    static int hw = -1; /* benign race: every thread computes the same value */
    int h = __atomic_load_n(&hw, __ATOMIC_RELAXED);
    if (h < 0) {
        __builtin_cpu_init();
        h = __builtin_cpu_supports("sse4.2") ? 1 : 0;
        __atomic_store_n(&hw, h, __ATOMIC_RELAXED);
    }
    return h ? crc32c_hw(crc, buf, len) : zf_crc32c_sw(crc, buf, len);
}
#else
uint32_t zf_crc32c(uint32_t crc, const void *buf, size_t len)
{
    return zf_crc32c_sw(crc, buf, len);
}
#endif

static uint32_t crc32c_fn(const zf_codec *c, const uint8_t *buf, size_t len)
{
    (void)c;
    return zf_crc32c(0, buf, len);
}

static const zf_codec_ops crc32c_ops = {
    .name = "crc32c",
    .kind = ZF_CODEC_BYTES_TO_BYTES,
    .resolve = zf_checksum_resolve,
    .decode = zf_checksum_decode,
    .destroy = zf_codec_destroy_plain,
    .decoded_size = zf_checksum_decoded_size,
    .encode = zf_checksum_encode,
};

zf_status zf_codec_crc32c_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    return zf_checksum_codec_new(cfg, &crc32c_ops, crc32c_fn, true, out, err);
}
