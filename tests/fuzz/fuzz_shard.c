/* Fuzz target: shards of the sharding_indexed codec (src/codec/sharding.c; v3 codecs "Sharding
 * codec"). The first byte picks a sharding configuration from a table of real ones (index at the
 * start or end, with or without crc32c, compressed inner chunks, nested shards); the rest is the
 * shard. Its index is decoded (zf_sharding_decode_index) and checked against the rules
 * independently (pairs inside the shard, none overlapping another or the index), each inner chunk
 * and the whole shard are decoded, and the shard is rebuilt from its own chunks
 * (zf_sharding_encode_shard with every chunk kept as stored): the rebuilt shard must decode to
 * the same array. */
#include "fuzz.h"
#include "zarrfs/codec.h"
#include "zarrfs/json.h"

typedef struct shard_config {
    const char *dtype;   /* typestr of the flat encoding */
    unsigned ndim;
    uint64_t shape[3];   /* shard shape, elements */
    const char *codecs;  /* the v3 "codecs" list */
} shard_config;

#define BYTES_LE "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}"
#define CRC "{\"name\": \"crc32c\"}"
#define SHARD(inner, codecs, index, loc)                                                          \
    "[{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": " inner              \
    ", \"codecs\": " codecs ", \"index_codecs\": " index ", \"index_location\": \"" loc "\"}}]"

static const shard_config configs[] = {
    /* zarrita.js 1d.chunked.compressed.sharded.i2 */
    {"<i2", 1, {4}, SHARD("[1]", "[" BYTES_LE ", {\"name\": \"gzip\", \"configuration\": {\"level\": 5}}]", "[" BYTES_LE ", " CRC "]", "end")},
    {"|u1", 2, {4, 4}, SHARD("[2, 2]", "[" BYTES_LE "]", "[" BYTES_LE "]", "start")},
    {"<f4", 1, {8}, SHARD("[2]", "[" BYTES_LE ", {\"name\": \"zstd\", \"configuration\": {\"level\": 0, \"checksum\": false}}]", "[" BYTES_LE "]", "end")},
    {"<i4", 2, {2, 2}, SHARD("[1, 1]", "[{\"name\": \"transpose\", \"configuration\": {\"order\": [1, 0]}}, {\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}, " CRC "]", "[" BYTES_LE ", " CRC "]", "start")},
    {"<u2", 1, {8}, SHARD("[4]", SHARD("[2]", "[" BYTES_LE "]", "[" BYTES_LE ", " CRC "]", "end"), "[" BYTES_LE ", " CRC "]", "end")},
    {"<u2", 1, {16}, SHARD("[4]", "[" BYTES_LE ", {\"name\": \"blosc\", \"configuration\": {\"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": \"shuffle\", \"typesize\": 2, \"blocksize\": 0}}]", "[" BYTES_LE ", " CRC "]", "end")},
    {"<f8", 2, {6, 4}, SHARD("[3, 2]", "[" BYTES_LE "]", "[" BYTES_LE "]", "end")},
    {"|b1", 3, {2, 2, 2}, SHARD("[1, 2, 1]", "[" BYTES_LE ", " CRC "]", "[" BYTES_LE ", " CRC "]", "start")},
};
#define NCONFIGS (sizeof configs / sizeof configs[0])

typedef struct built {
    zf_codec_chain chain;
    zf_chunk_repr repr;
    bool ok;
} built;

static built chains[NCONFIGS];

static void build(size_t i)
{
    const shard_config *c = &configs[i];
    built *b = &chains[i];
    zf_err err = {""};
    b->repr.ndim = c->ndim;
    memcpy(b->repr.shape, c->shape, sizeof c->shape);
    FZ_CHECK(zf_dtype_parse(c->dtype, &b->repr.dtype, &err) == ZF_OK, "%s", err.msg);
    b->repr.nbytes = b->repr.dtype.itemsize;
    for (unsigned d = 0; d < c->ndim; d++)
        b->repr.nbytes *= c->shape[d];
    yajl_val v;
    FZ_CHECK(zf_json_parse("codecs", c->codecs, strlen(c->codecs), &v, &err) == ZF_OK, "%s",
             err.msg);
    uint8_t fill[16] = {0};
    FZ_CHECK(zf_chain_from_v3(v, ZF_CODECS_V3, &b->repr, fill, &b->chain, &err) == ZF_OK,
             "config %zu: %s", i, err.msg);
    yajl_tree_free(v);
    b->ok = true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_init();
    if (size < 1)
        return 0;
    size_t ci = data[0] % NCONFIGS;
    if (!chains[ci].ok)
        build(ci);
    const built *b = &chains[ci];
    const uint8_t *shard = data + 1;
    size_t n = size - 1;
    const zf_codec *c = b->chain.codecs[0];
    zf_sharding info;
    FZ_CHECK(zf_codec_sharding(c, &info), "not a sharding codec");
    uint8_t *whole = malloc(b->repr.nbytes), *again = malloc(b->repr.nbytes);
    uint64_t *idx = malloc(2 * info.nchunks * sizeof *idx);
    uint8_t *inner = malloc(info.inner->nbytes);
    zf_err err = {""};
    if (!whole || !again || !idx || !inner)
        goto done;
    zf_status whole_st = zf_chain_decode(&b->chain, &b->repr, shard, n, whole, &err);
    if (n < info.index_nbytes)
        goto done;
    const uint8_t *ix = info.index_at_end ? shard + n - info.index_nbytes : shard;
    if (zf_sharding_decode_index(c, ix, info.index_nbytes, n, idx, &err) != ZF_OK)
        goto done;
    uint64_t ix_off = info.index_at_end ? n - info.index_nbytes : 0;
    for (uint64_t i = 0; i < info.nchunks; i++) {
        uint64_t off = idx[2 * i], len = idx[2 * i + 1];
        if (off == UINT64_MAX && len == UINT64_MAX)
            continue;
        FZ_CHECK(off <= n && len <= n - off, "chunk %llu: [%llu, +%llu) outside %zu bytes",
                 (unsigned long long)i, (unsigned long long)off, (unsigned long long)len, n);
        FZ_CHECK(len == 0 || off + len <= ix_off || off >= ix_off + info.index_nbytes,
                 "chunk %llu overlaps the index", (unsigned long long)i);
        for (uint64_t j = 0; j < i; j++) {
            uint64_t o2 = idx[2 * j], l2 = idx[2 * j + 1];
            if (o2 == UINT64_MAX || len == 0 || l2 == 0)
                continue;
            FZ_CHECK(off + len <= o2 || o2 + l2 <= off, "chunks %llu and %llu overlap",
                     (unsigned long long)i, (unsigned long long)j);
        }
        (void)zf_chain_decode(info.codecs, info.inner, shard + off, (size_t)len, inner, &err);
    }
    /* Rebuilt from its own chunks, the shard must decode to the same array. */
    const uint8_t **keep = calloc(info.nchunks, sizeof *keep);
    uint8_t *rebuilt = NULL;
    size_t rebuilt_n = 0;
    bool empty = false;
    if (keep && zf_sharding_encode_shard(c, keep, shard, n, idx, 0, &rebuilt, &rebuilt_n, &empty,
                                         &err) == ZF_OK) {
        zf_status st = zf_chain_decode(&b->chain, &b->repr, rebuilt, rebuilt_n, again, &err);
        FZ_CHECK((whole_st == ZF_OK) == (st == ZF_OK),
                 "the rebuilt shard decodes with status %d, the original with %d (%s)", st,
                 whole_st, err.msg);
        if (st == ZF_OK && whole_st == ZF_OK)
            FZ_CHECK(memcmp(whole, again, b->repr.nbytes) == 0,
                     "the rebuilt shard decodes to other values");
        if (empty && whole_st == ZF_OK)
            for (size_t i = 0; i < b->repr.nbytes; i++)
                FZ_CHECK(whole[i] == 0, "an empty shard from a shard with values");
    }
    free(rebuilt);
    free(keep);
done:
    free(whole);
    free(again);
    free(idx);
    free(inner);
    return 0;
}
