/* testutil.h — helpers shared by the codec unit tests. */
#ifndef ZARRFS_TEST_CODEC_UTIL_H
#define ZARRFS_TEST_CODEC_UTIL_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarrfs/codec.h"

/* Whole file, malloc'd (+1 NUL byte); NULL when it cannot be read. */
uint8_t *tu_read_file(const char *path, size_t *len);

/* Parse JSON text (asserts it parses). Free with yajl_tree_free. */
yajl_val tu_json(const char *text);

/* zf_codec_from_v2 on JSON text; asserts success. */
zf_codec *tu_codec(const char *json);

/* zf_codec_from_v2 on JSON text, returning its status (the codec, if any, is freed). */
zf_status tu_codec_status(const char *json, zf_err *err);

/* Decode with a one-codec call, the output a flat byte string of out_len. */
zf_status tu_decode(const zf_codec *c, const void *in, size_t in_len, void *out, size_t out_len,
                    zf_err *err);

/* Little-endian stores of 32- and 64-bit values (the byte layouts of chunk formats). */
void tu_put_le32(uint8_t *p, uint32_t v);
void tu_put_le64(uint8_t *p, uint64_t v);

/* Deterministic test data: compressible bytes (small alphabet with runs). */
void tu_fill(uint8_t *buf, size_t n, uint32_t seed);

/* The decoded representation of a chunk of `shape` (ndim dims) elements of typestr
 * (C order, nbytes = elements * itemsize); fails the test on a bad typestr. */
zf_chunk_repr tu_repr_of(const char *typestr, unsigned ndim, const uint64_t *shape);

/* A zstd frame without a content size: libzstd's streaming compressor fed `piece` bytes at a
 * time (level, checksum flag as given); malloc'd, *out_len bytes. */
uint8_t *tu_zstd_stream(const uint8_t *in, size_t len, int level, bool checksum, size_t piece,
                        size_t *out_len);

/* The directory of generated numcodecs expectations (NULL when numcodecs is not available). */
extern const char *tu_expected_dir;

/* The directory of Zarr v3 codec vectors written by v3_expected.py (NULL when not generated). */
extern const char *tu_v3_dir;

/* .npy files (format versions 1-3): dtype, order, shape and the raw data as stored. */
typedef struct tu_npy {
    char descr[64];
    bool fortran;
    unsigned ndim;
    uint64_t shape[32];
    size_t nelem;
    const uint8_t *data; /* into file */
    size_t data_len;
    uint8_t *file;
} tu_npy;

bool tu_npy_load(const char *path, tu_npy *out, char *why, size_t whylen);
void tu_npy_free(tu_npy *n);

Suite *codec_fixture_suite(void);
Suite *codec_negative_suite(void);
Suite *codec_transpose_suite(void);
Suite *codec_v3_suite(void);
Suite *codec_encode_suite(void);
Suite *codec_encode_v3_suite(void);
Suite *codec_variant_suite(void);
Suite *codec_registry_suite(void);
Suite *codec_zfp_suite(void);
Suite *codec_registry_types_suite(void);
Suite *codec_optional_suite(void);

#endif
