/* codec_impl.h — what the codec files share and nobody outside src/codec/ needs: the
 * constructors registry.c dispatches to, helpers that read numcodecs configuration objects, and
 * helpers for the chunk representations resolve() produces.
 *
 * Every codec lives in its own file and exposes one constructor taking its numcodecs
 * configuration object (already known to be a JSON object with a string "id"). */
#ifndef ZARRFS_CODEC_IMPL_H
#define ZARRFS_CODEC_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "zarrfs/codec.h"

/* --- constructors (one per file) --- */

typedef zf_status (*zf_codec_ctor)(yajl_val cfg, zf_codec **out, zf_err *err);

zf_status zf_codec_zlib_new(yajl_val cfg, zf_codec **out, zf_err *err);
zf_status zf_codec_gzip_new(yajl_val cfg, zf_codec **out, zf_err *err);
zf_status zf_codec_bz2_new(yajl_val cfg, zf_codec **out, zf_err *err);
zf_status zf_codec_lzma_new(yajl_val cfg, zf_codec **out, zf_err *err);
zf_status zf_codec_zstd_new(yajl_val cfg, zf_codec **out, zf_err *err);
zf_status zf_codec_lz4_new(yajl_val cfg, zf_codec **out, zf_err *err);
zf_status zf_codec_blosc_new(yajl_val cfg, zf_codec **out, zf_err *err);
zf_status zf_codec_delta_new(yajl_val cfg, zf_codec **out, zf_err *err);
zf_status zf_codec_fixedscaleoffset_new(yajl_val cfg, zf_codec **out, zf_err *err);
zf_status zf_codec_astype_new(yajl_val cfg, zf_codec **out, zf_err *err);
zf_status zf_codec_quantize_new(yajl_val cfg, zf_codec **out, zf_err *err);
zf_status zf_codec_bitround_new(yajl_val cfg, zf_codec **out, zf_err *err);
zf_status zf_codec_shuffle_new(yajl_val cfg, zf_codec **out, zf_err *err);
zf_status zf_codec_packbits_new(yajl_val cfg, zf_codec **out, zf_err *err);
zf_status zf_codec_categorize_new(yajl_val cfg, zf_codec **out, zf_err *err);
zf_status zf_codec_crc32_new(yajl_val cfg, zf_codec **out, zf_err *err);
zf_status zf_codec_adler32_new(yajl_val cfg, zf_codec **out, zf_err *err);
zf_status zf_codec_crc32c_new(yajl_val cfg, zf_codec **out, zf_err *err);
zf_status zf_codec_base64_new(yajl_val cfg, zf_codec **out, zf_err *err);
zf_status zf_codec_fletcher32_new(yajl_val cfg, zf_codec **out, zf_err *err);
zf_status zf_codec_jenkins_lookup3_new(yajl_val cfg, zf_codec **out, zf_err *err);
/* numcodecs' zfpy (zfp.c): zfp's full header, then the stream. */
zf_status zf_codec_zfpy_new(yajl_val cfg, zf_codec **out, zf_err *err);
/* The zarr-extensions "zfp" codec (zfp.c) from its v3 configuration (NULL when absent). */
zf_status zf_codec_zfp_new(yajl_val cfg, zf_codec **out, zf_err *err);

/* --- numcodecs configuration fields ---
 * Each getter looks up `key` in the object cfg. An absent key (or JSON null where the getter says
 * so) yields the default; a value of the wrong type fails with ZF_ERR_INVALID and a message such
 * as `zlib: "level": expected an integer`, naming the codec and the field. */

yajl_val zf_cfg_get(yajl_val cfg, const char *key);

/* An integer in [min, max]. null counts as absent when null_ok. */
zf_status zf_cfg_int(yajl_val cfg, const char *codec, const char *key, bool required,
                     bool null_ok, long long def, long long min, long long max, long long *out,
                     zf_err *err);

/* A number; *is_int tells whether it was written as an integer (Python int vs float, which
 * matters for NumPy's value-based casting). */
zf_status zf_cfg_number(yajl_val cfg, const char *codec, const char *key, bool required,
                        double def, double *out, bool *is_int, zf_err *err);

/* true/false (numcodecs' bint). */
zf_status zf_cfg_bool(yajl_val cfg, const char *codec, const char *key, bool def, bool *out,
                      zf_err *err);

/* A string (borrowed from cfg; NULL when absent and not required). */
zf_status zf_cfg_string(yajl_val cfg, const char *codec, const char *key, bool required,
                        const char **out, zf_err *err);

/* A NumPy data type ("<f8", "|u1", also "f8" or "float64"). When absent: def if non-NULL, else
 * an error if required. */
zf_status zf_cfg_dtype(yajl_val cfg, const char *codec, const char *key, bool required,
                       const zf_dtype *def, zf_dtype *out, zf_err *err);

/* --- chunk representations --- */

/* A flat byte string of nbytes (ZF_SIZE_UNKNOWN allowed): ndim 1, dtype |u1. */
void zf_repr_bytes(zf_chunk_repr *r, size_t nbytes);

/* A flat array of n elements of dt (n * itemsize must not overflow; checked by callers). */
void zf_repr_flat(zf_chunk_repr *r, const zf_dtype *dt, size_t n);

/* Elements of itemsize in nbytes, for filters that view the flat buffer as their own dtype.
 * Errors: ZF_ERR_INVALID when nbytes is not a multiple (message names the codec). */
zf_status zf_repr_count(const char *codec, size_t nbytes, size_t itemsize, const char *typestr,
                        size_t *n, zf_err *err);

/* resolve() of a compressor: the encoded size only the data can tell. */
zf_status zf_resolve_compressed(const zf_codec *c, const zf_chunk_repr *decoded,
                                zf_chunk_repr *encoded, zf_err *err);

/* Allocate a codec object of `size` bytes (zeroed) whose ops are `ops`. NULL on failure. */
void *zf_codec_alloc(size_t size, const zf_codec_ops *ops);

/* The plain destroy for codecs that own nothing but their own allocation. */
void zf_codec_destroy_plain(zf_codec *c);

/* --- element types shared by the dtype filters (delta, fixedscaleoffset, astype, ...) --- */

/* NumPy's np.promote_types for numeric kinds b/i/u/f (and m as a 64-bit integer). Returns false
 * when NumPy has no numeric result (e.g. m with f). Byte order of the result is native. */
bool zf_dtype_promote(const zf_dtype *a, const zf_dtype *b, zf_dtype *out);

/* Cast a value to kind/size of dt as NumPy's astype does (wrap, truncate, round), returning the
 * value in zf_num form (e.g. an f2 result is a double holding a half-precision value). */
zf_num zf_num_cast(const zf_dtype *dt, zf_num v);

/* Convert `n` elements of `from` at in to `to` at out, with NumPy's astype casting (numeric kinds,
 * or identical non-numeric types / byte-order changes). Checked by zf_dtype_castable first. */
bool zf_dtype_castable(const zf_dtype *from, const zf_dtype *to);
void zf_dtype_cast_n(const zf_dtype *from, const void *in, const zf_dtype *to, void *out,
                     size_t n);

/* The dtype filters (delta, fixedscaleoffset, astype, quantize, categorize) view the flat
 * decoded buffer as n elements of `dec` and store n elements of `enc`. Their codec structs
 * start with this; the shared resolve/decoded_size ops and the size check use it. */
typedef struct zf_dtype_filter {
    zf_codec base;
    zf_dtype dec, enc;
} zf_dtype_filter;

zf_status zf_dtype_filter_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                                  zf_chunk_repr *encoded, zf_err *err);
zf_status zf_dtype_filter_decoded_size(const zf_codec *c, const uint8_t *in, size_t in_len,
                                       size_t *out_len, zf_err *err);
/* Elements in a decode of in_len bytes into out_len; ZF_ERR_CORRUPT unless they agree. */
zf_status zf_dtype_filter_count(const zf_codec *c, size_t in_len, size_t out_len, size_t *n,
                                zf_err *err);
/* Decode of a filter whose stored elements are `enc` and decoded ones `dec`, related by a plain
 * NumPy cast (astype; quantize, whose rounding happens only when encoding). */
zf_status zf_dtype_filter_cast_decode(const zf_codec *c, const zf_chunk_repr *decoded,
                                      const uint8_t *in, size_t in_len, uint8_t *out,
                                      size_t out_len, zf_err *err);

/* --- encoding (zf_codec_ops.encode) --- */

/* When c is a transpose codec: its order (stored axis i is decoded axis order[i]) and true. */
bool zf_codec_transpose_order(const zf_codec *c, unsigned *ndim, unsigned *order);

/* The object codecs (codec.h, "variable-length elements as text"), v2 ids and v3 names. */
zf_status zf_codec_vlen_utf8_new(yajl_val cfg, zf_codec **out, zf_err *err);
zf_status zf_codec_vlen_bytes_new(yajl_val cfg, zf_codec **out, zf_err *err);
zf_status zf_codec_json2_new(yajl_val cfg, zf_codec **out, zf_err *err);
zf_status zf_codec_msgpack2_new(yajl_val cfg, zf_codec **out, zf_err *err);
zf_status zf_codec_vlen_array_new(yajl_val cfg, zf_codec **out, zf_err *err);

/* What vlen-utf8 and vlen-bytes share (text.c). resolve: the decoded type must be an object
 * ('O') type, the encoded form is bytes of unknown size (ZF_ERR_INVALID otherwise); decode: always
 * ZF_ERR_INVALID (these codecs decode to text only). */
zf_status zf_vlen_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                          zf_chunk_repr *encoded, zf_err *err);
zf_status zf_vlen_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                         size_t in_len, uint8_t *out, size_t out_len, zf_err *err);
/* The line of one element of a length-prefixed chunk: the bytes of its line (the '\n'
 * included) written to out, or with out NULL only counted; SIZE_MAX when the element's n bytes
 * at s are not a valid element (ctx: the caller's). */
typedef size_t (*zf_vlen_line_fn)(const void *ctx, const uint8_t *s, size_t n, char *out);
/* Decode numcodecs' length-prefixed chunk layout (a little-endian u32 element count, then per
 * element a u32 byte length and its bytes; both read as signed, as numcodecs does; bytes after
 * the last element ignored) into text, each element's line made by line(ctx, ...). Errors:
 * ZF_ERR_CORRUPT (a count negative or not the chunk's element count, a length past the end, an
 * element line() refuses — `what` says what it must be —, text reaching 4 GiB; the message
 * starts with `name`), ZF_ERR_NOMEM. */
zf_status zf_vlen_decode_lines(const char *name, const zf_chunk_repr *decoded, const uint8_t *in,
                               size_t in_len, zf_vlen_line_fn line, const void *ctx,
                               const char *what, zf_text_chunk **out, zf_err *err);
/* zf_vlen_decode_lines with the lines of vlen-utf8 (utf8 true: strict UTF-8, zf_text_escape) or
 * of vlen-bytes (false: zf_text_escape_bytes). */
zf_status zf_vlen_decode_text(const char *name, const zf_chunk_repr *decoded, const uint8_t *in,
                              size_t in_len, bool utf8, zf_text_chunk **out, zf_err *err);
/* The compact JSON of v (NULL: null) as one line (the '\n' included; U+2028 and U+2029, which
 * line splitters such as Python's splitlines() break at, as \u escapes), malloc'd in *line,
 * *len bytes. Errors: ZF_ERR_NOMEM. */
zf_status zf_text_json_line(yajl_val v, char **line, size_t *len);
/* fill_text of the JSON Lines codecs (json2, msgpack2, vlen-array): the fill value's compact JSON
 * line (null for None, zarr-python's default 0, any JSON value as it is). */
zf_status zf_text_json_fill(const zf_codec *c, yajl_val fill, char **line, size_t *len,
                            zf_err *err);

/* Strict UTF-8 as Python decodes it (no overlong forms, surrogates or code points past
 * U+10FFFF): zf_text_valid_utf8 for s[0..n); zf_text_utf8_seq the length (1..4) of the valid
 * sequence starting s[0] (n >= 1 bytes available), 0 when none starts there. */
bool zf_text_valid_utf8(const uint8_t *s, size_t n);
size_t zf_text_utf8_seq(const uint8_t *s, size_t n);

/* Bytes s[0..n) as text (vlen-bytes; docs/formats.md "Variable-length arrays as text"): as
 * zf_text_escape for backslash, newline, carriage return and tab; `\xHH` (two lowercase hex
 * digits) for every other byte below 0x20, 0x7F, each byte of a C1 control (U+0080..U+009F,
 * C2 80..C2 9F), of U+2028 and U+2029 (line breaks to Python's str.splitlines) and each byte
 * not part of a valid UTF-8 sequence; other valid UTF-8 as it is.
 * Writes into out unless it is NULL; returns the bytes of the escaped form. */
size_t zf_text_escape_bytes(const uint8_t *s, size_t n, char *out);

/* Text of chunk t (elements in C order of the encoded shape `enc`, ndim dims) reordered into C
 * order of the decoded shape, where encoded axis i is decoded axis order[i]; *out malloc'd.
 * Errors: ZF_ERR_NOMEM. */
zf_status zf_text_transpose(const zf_text_chunk *t, unsigned ndim, const uint64_t *enc,
                            const unsigned *order, zf_text_chunk **out);

/* A line of `s` (n bytes) escaped, with its '\n', malloc'd into *line, *len bytes. Errors:
 * ZF_ERR_NOMEM. */
zf_status zf_text_line(const uint8_t *s, size_t n, char **line, size_t *len);

/* malloc(n), at least one byte, so an empty result is still a valid allocation. */
uint8_t *zf_enc_alloc(size_t n);

/* Elements of the filter's decoded type `dec` in in_len input bytes. Errors: ZF_ERR_INVALID
 * naming the codec. */
zf_status zf_dtype_filter_encode_count(const zf_codec *c, size_t in_len, size_t *n, zf_err *err);

/* Encode of a filter whose stored elements are a plain NumPy cast of the decoded ones
 * (astype: dec.astype(enc)). */
zf_status zf_dtype_filter_cast_encode(const zf_codec *c, const zf_chunk_repr *decoded,
                                      const uint8_t *in, size_t in_len, unsigned flags,
                                      uint8_t **out, size_t *out_len, zf_err *err);

/* NumPy 1.24's value-based casting: the type of `array of type a` OP `Python scalar v`, where
 * v was written as an integer (is_int) or a float. a is of kind b, i, u or f. When the scalar's
 * kind (bool < integer < float) is above the array's, the scalar's own type (int64, float64);
 * else np.promote_types(a, np.min_scalar_type(v)), a small non-negative integer counting as
 * signed against a signed or float array. The result is native. */
void zf_dtype_promote_scalar(const zf_dtype *a, double v, bool is_int, zf_dtype *out);

/* One NumPy ufunc step on two values already of type t (kinds b, i, u, m, f; native loop):
 * op '-' '+' '*' '/'. Integers wrap to t's width, float16 and float32 compute in float32 and
 * round to t; for booleans '-' is not_equal (np.diff's rule) and '*' is and. */
zf_num zf_num_arith(const zf_dtype *t, char op, zf_num a, zf_num b);

/* np.rint of a value of type t (round half to even; integers unchanged). */
zf_num zf_num_rint(const zf_dtype *t, zf_num a);

/* A short typestr for messages ("<f8"); buf of at least 32 bytes. */
const char *zf_dtype_str(const zf_dtype *dt, char *buf);

/* --- the bounded-output rule shared by the decompressors --- */

/* Messages for the ways a decompressor can miss out_len (ZF_SIZE_UNKNOWN: decoding with
 * decode_bounded, where the size is not known). */
zf_status zf_codec_too_long(zf_err *err, const char *codec, size_t out_len);
zf_status zf_codec_too_short(zf_err *err, const char *codec, size_t got, size_t out_len);

/* The checksum codecs (crc32, adler32, crc32c, fletcher32, jenkins_lookup3): a 4-byte
 * little-endian checksum of the payload before it ("start", numcodecs' crc32/adler32) or after
 * it ("end", the others); crc32, adler32 and crc32c's config may say "location". ops->name
 * names the codec. Shared by checksum32.c, crc32c.c, fletcher32.c and jenkins_lookup3.c.
 * A codec's struct starts with zf_checksum_codec; fn gets the codec (for its parameters). */
typedef uint32_t (*zf_checksum_fn)(const zf_codec *c, const uint8_t *buf, size_t len);
typedef struct zf_checksum_codec {
    zf_codec base;
    zf_checksum_fn fn;
    bool at_end;
} zf_checksum_codec;
zf_status zf_checksum_codec_new(yajl_val cfg, const zf_codec_ops *ops, zf_checksum_fn fn,
                                bool at_end, zf_codec **out, zf_err *err);
/* A checksum codec of `size` bytes (>= sizeof (zf_checksum_codec), zeroed) without a
 * "location" option. NULL when out of memory. */
zf_checksum_codec *zf_checksum_codec_alloc(size_t size, const zf_codec_ops *ops,
                                           zf_checksum_fn fn, bool at_end);
zf_status zf_checksum_resolve(const zf_codec *c, const zf_chunk_repr *decoded,
                              zf_chunk_repr *encoded, zf_err *err);
zf_status zf_checksum_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                             size_t in_len, uint8_t *out, size_t out_len, zf_err *err);
zf_status zf_checksum_decoded_size(const zf_codec *c, const uint8_t *in, size_t in_len,
                                   size_t *out_len, zf_err *err);

/* Table-driven CRC-32C, always (zf_crc32c may use the CPU's instruction); for tests. */
uint32_t zf_crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* Inflate one zlib (window_bits 15) or gzip (31) stream from in into out[0..cap), rejecting
 * output beyond cap without producing it. On ZF_OK the stream ended: *used input bytes were
 * consumed and *produced <= cap bytes written. Messages count from `base` of `total` bytes
 * (for multi-member gzip; ZF_SIZE_UNKNOWN for decode_bounded). Errors: ZF_ERR_CORRUPT
 * (truncated, malformed, too long: then *produced is SIZE_MAX), ZF_ERR_NOMEM. Shared by zlib.c
 * and gzip.c. */
/* Decode one zlib stream (gzip: one gzip member filling the whole input) of exactly out_len
 * decoded bytes into out with libdeflate. False for anything else — an error, another size,
 * trailing bytes after a gzip member — whose handling (and message) is then zlib's: the caller
 * decodes again with zf_inflate_stream. out's contents are undefined after a false. */
bool zf_fast_inflate(bool gzip, const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len);

zf_status zf_inflate_stream(const char *codec, int window_bits, const uint8_t *in, size_t in_len,
                            uint8_t *out, size_t cap, size_t base, size_t total, size_t *used,
                            size_t *produced, zf_err *err);

/* Deflate in[0..in_len) as one zlib (window_bits 15) or raw (-15) stream at `level`, memory level
 * 8, default strategy, into *out (malloc'd): `head` bytes left free before the stream, the
 * stream (*produced bytes), and room for `tail` more bytes after it. finish_only: one Z_FINISH
 * pass (zlib.compress); else Z_NO_FLUSH over the input, then Z_FINISH (a zlib.compressobj's
 * compress() then flush(), as GzipFile writes). Errors: ZF_ERR_NOMEM, ZF_ERR_INVALID (message
 * names the codec). Shared by zlib.c and gzip.c. */
zf_status zf_deflate_stream(const char *codec, int level, int window_bits, bool finish_only,
                            const uint8_t *in, size_t in_len, size_t head, size_t tail,
                            uint8_t **out, size_t *produced, zf_err *err);

/* --- Zarr v3 codec lists (v3.c, bytes.c, sharding.c) --- */

/* Sharding codecs nest (an inner chain may shard again); deeper lists are refused. */
#define ZF_V3_MAX_DEPTH 8

/* zf_chain_from_v3 at nesting depth `depth` (0 for an array's own "codecs"; sharding builds its
 * inner and index chains at depth + 1). fill_value may be NULL (zero bytes). */
zf_status zf_chain_from_v3_at(yajl_val codecs, zf_codec_dialect dialect,
                              const zf_chunk_repr *decoded, const uint8_t *fill_value,
                              unsigned depth, zf_codec_chain *out, zf_err *err);

/* A v3 configuration object: absent (NULL) or an object whose keys are all in `allowed`
 * (NULL-terminated). Errors: ZF_ERR_INVALID naming the codec and the field. */
zf_status zf_v3_check_keys(yajl_val cfg, const char *codec, const char *const *allowed,
                           zf_err *err);

/* zarrs' "bitround" (v3 name "bitround"; the "numcodecs.bitround" name and the v2 id are
 * numcodecs' codec, zf_codec_bitround_new) from its v3 configuration {"keepbits": N}. */
zf_status zf_codec_bitround_zarrs_new(yajl_val cfg, zf_codec **out, zf_err *err);

/* The zarr-extensions "reshape" codec and zarrs' "zarrs.squeeze" (array -> array, the bytes
 * unchanged, only the shape), for an array of representation `decoded`, from their v3
 * configurations (NULL when absent). */
zf_status zf_codec_reshape_new(yajl_val cfg, const zf_chunk_repr *decoded, zf_codec **out,
                               zf_err *err);
zf_status zf_codec_squeeze_new(yajl_val cfg, const zf_chunk_repr *decoded, zf_codec **out,
                               zf_err *err);

/* The zarr-extensions "packbits" codec (array -> bytes, packbits_v3.c) for an array of
 * representation `decoded`, from its configuration (NULL when absent). Errors: ZF_ERR_INVALID
 * (a malformed configuration, bits outside the data type), ZF_ERR_UNSUPPORTED (a data type
 * packbits does not pack: struct, raw bits, strings). */
zf_status zf_codec_packbits_v3_new(yajl_val cfg, const zf_chunk_repr *decoded, zf_codec **out,
                                   zf_err *err);

/* The zarr-extensions "cast_value" codec (array -> array, cast_value.c) for an array of
 * representation `decoded` whose fill value is fill_value (decoded->dtype.itemsize bytes; NULL:
 * zeros). Errors: ZF_ERR_INVALID (a malformed configuration, a fill value that does not survive
 * the round trip), ZF_ERR_UNSUPPORTED (a data type cast_value does not convert). */
zf_status zf_codec_cast_value_new(yajl_val cfg, const zf_chunk_repr *decoded,
                                  const uint8_t *fill_value, zf_codec **out, zf_err *err);

/* The "bytes" codec (also the 2022 draft's "endian", named by `name` in messages) for an array
 * of representation `decoded`, from its configuration (NULL when absent). */
zf_status zf_codec_bytes_new(yajl_val cfg, const char *name, const zf_chunk_repr *decoded,
                             zf_codec **out, zf_err *err);
/* The zarr-extensions "n5_default" codec (array -> bytes, n5_default.c) for chunks of
 * representation `decoded`, from its configuration {"codecs": [transpose, bytes, (one
 * bytes -> bytes codec)]}, built at nesting depth `depth` + 1; fill_value (NULL: zero bytes,
 * else decoded->dtype.itemsize bytes, copied) pads truncated blocks. Errors: ZF_ERR_INVALID
 * (a configuration the document does not allow, a 0-d array), ZF_ERR_UNSUPPORTED (an inner
 * codec zarrfs does not know), ZF_ERR_NOMEM. */
zf_status zf_codec_n5_default_new(yajl_val cfg, const zf_chunk_repr *decoded,
                                  const uint8_t *fill_value, unsigned depth, zf_codec **out,
                                  zf_err *err);
/* A bytes codec with the given byte order (the 2022 draft's implicit default binary
 * representation). Errors: ZF_ERR_NOMEM. */
zf_status zf_codec_bytes_make(bool big_endian, zf_codec **out);
/* The component the bytes codec's endianness applies to, in bytes: the item for i/u/f/m/M, half
 * of it for complex, 4 for 'U' (UTF-32), 1 for b/S/V; 0 for 'O' (not encodable). */
size_t zf_bytes_swap_unit(const zf_dtype *dt);

/* The sharding_indexed codec for shards of representation `decoded` (its configuration object;
 * inner and index chains built at depth + 1). fill_value: decoded->dtype.itemsize bytes (copied)
 * or NULL for zero bytes. */
zf_status zf_codec_sharding_new(yajl_val cfg, const zf_chunk_repr *decoded,
                                const uint8_t *fill_value, unsigned depth, zf_codec **out,
                                zf_err *err);

/* --- zarr-extensions scale_offset and conditional, zarrs' vlen codecs --- */

/* scale_offset (array -> array) for arrays of representation `decoded` (its data type is the
 * one offset and scale are written in), from its configuration (NULL when absent). Errors:
 * ZF_ERR_INVALID (unknown keys, values not of the data type, a data type that is not an
 * integer or floating-point type, scale 0), ZF_ERR_UNSUPPORTED, ZF_ERR_NOMEM. */
zf_status zf_codec_scale_offset_new(yajl_val cfg, const zf_chunk_repr *decoded, zf_codec **out,
                                    zf_err *err);
/* conditional (bytes -> bytes) wrapping the bytes -> bytes codecs of its "codecs" list, built
 * at depth + 1 for byte strings `decoded`. Errors: ZF_ERR_INVALID, ZF_ERR_UNSUPPORTED (an inner
 * codec zarrfs does not know), ZF_ERR_NOMEM. */
zf_status zf_codec_conditional_new(yajl_val cfg, const zf_chunk_repr *decoded, unsigned depth,
                                   zf_codec **out, zf_err *err);
/* A list of bytes -> bytes codecs only (the conditional codec's), for byte strings `decoded`:
 * zf_chain_from_v3_at's rules otherwise. Errors: as zf_chain_from_v3_at; ZF_ERR_INVALID for a
 * codec of another kind. */
zf_status zf_chain_from_v3_bytes_at(yajl_val codecs, const zf_chunk_repr *decoded,
                                    unsigned depth, zf_codec_chain *out, zf_err *err);
/* zarrs' "zarrs.vlen" and "zarrs.vlen_v2" (array -> bytes, variable-length elements read as
 * text) for chunks of `decoded`, whose data type must be tagged as string or bytes
 * (zf_vlen_dtype_utf8). zarrs.vlen builds its index and data chains at depth + 1. Errors:
 * ZF_ERR_INVALID (configuration), ZF_ERR_UNSUPPORTED, ZF_ERR_NOMEM. */
zf_status zf_codec_zarrs_vlen_new(yajl_val cfg, const zf_chunk_repr *decoded, unsigned depth,
                                  zf_codec **out, zf_err *err);
zf_status zf_codec_zarrs_vlen_v2_new(yajl_val cfg, const zf_chunk_repr *decoded,
                                     zf_codec **out, zf_err *err);
/* Whether the variable-length elements of `cur` are strings (*utf8 true: vlen-utf8's text
 * rules) or byte strings (false: vlen-bytes'): the v3 data types string and bytes, which
 * meta_v3.c names in the chunk representation's dtype.unit ("string", "bytes"). Errors:
 * ZF_ERR_UNSUPPORTED naming `codec` when the representation says neither. */
zf_status zf_vlen_dtype_utf8(const char *codec, const zf_chunk_repr *cur, bool *utf8,
                             zf_err *err);
/* zarrs' "optional" codec (optional.c) for chunks of representation `decoded` (data then one
 * validity-depth byte per element: n * (itemsize + 1) bytes), its mask and data chains built at
 * depth + 1; and whether a v3 codec name is one of its names ("optional", "zarrs.optional",
 * zarrs' URL). */
zf_status zf_codec_optional_new(yajl_val cfg, const zf_chunk_repr *decoded, unsigned depth,
                                zf_codec **out, zf_err *err);
bool zf_codec_optional_name(const char *name);

/* The checksum codecs' encode: the payload with its checksum before or after it. */
zf_status zf_checksum_encode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                             size_t in_len, unsigned flags, uint8_t **out, size_t *out_len,
                             zf_err *err);

#endif
