/* dtype.h — NumPy-style element types, shared by the codec and metadata layers.
 *
 * Zarr v2 ("Data type encoding") names data types by NumPy typestr: a byte-order character
 * ('<', '>', '|'), a kind character and an item size in bytes, e.g. "<f8", "|b1", "<M8[ns]",
 * "|S12", "<U4". Structured types are lists of fields and are represented here as kind 'V' with
 * their packed item size (parsed by src/meta/).
 *
 * The zarr-extensions registry's data types that NumPy lacks (bfloat16, the float8/float6/
 * float4 formats, int2/int4/uint2/uint4, complex types of those, struct) are a NumPy-like
 * kind and item size plus `ext` naming the exact format (docs/formats.md "Data types"); every
 * other type has ext ZF_DT_NUMPY (0), so code that builds a zf_dtype with designated
 * initializers keeps meaning the plain NumPy type. Their flat encoding: one byte per element
 * for the float8/6/4 formats and int2/int4/uint2/uint4 (the element's bits in the low bits of
 * the byte; int2/int4 sign-extended, i.e. an int8; uint2/uint4 a uint8), two little-endian
 * bytes for bfloat16, and two such components (real, imaginary) for the complex types. */
#ifndef ZARRFS_DTYPE_H
#define ZARRFS_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <yajl/yajl_tree.h>

#include "zarrfs/status.h"

/* The exact format of a registry data type NumPy has no typestr for (zf_dtype.ext). For kind
 * 'f' it names the float format, for kind 'c' the format of each component (complex_float16 is
 * kind 'c', itemsize 4, ext ZF_DT_NUMPY: two IEEE binary16), for kind 'i'/'u' the integer width
 * (itemsize 1), for kind 'V' a registry "struct" (ZF_DT_STRUCT: has multi-byte fields, whose
 * byte order the bytes codec's "endian" applies to; ZF_DT_STRUCT_BYTES: only single-byte
 * fields; ZF_DT_STRUCTURED: the legacy alias "structured" with multi-byte fields, whose bytes
 * codec may leave "endian" out, meaning little-endian: data-types/structured). */
typedef enum zf_dtype_ext {
    ZF_DT_NUMPY = 0,
    ZF_DT_BFLOAT16,
    ZF_DT_FLOAT8_E3M4,
    ZF_DT_FLOAT8_E4M3,
    ZF_DT_FLOAT8_E4M3B11FNUZ,
    ZF_DT_FLOAT8_E4M3FNUZ,
    ZF_DT_FLOAT8_E5M2,
    ZF_DT_FLOAT8_E5M2FNUZ,
    ZF_DT_FLOAT8_E8M0FNU,
    ZF_DT_FLOAT6_E2M3FN,
    ZF_DT_FLOAT6_E3M2FN,
    ZF_DT_FLOAT4_E2M1FN,
    ZF_DT_INT2,
    ZF_DT_INT4,
    ZF_DT_UINT2,
    ZF_DT_UINT4,
    ZF_DT_STRUCT,
    ZF_DT_STRUCT_BYTES,
    ZF_DT_STRUCTURED,
    ZF_DT_EXT_COUNT
} zf_dtype_ext;

typedef struct zf_dtype {
    char kind;       /* 'b' bool, 'i', 'u', 'f', 'c', 'm', 'M', 'S', 'U', 'V', 'O' (object) */
    char byteorder;  /* '<' little, '>' big, '|' not relevant */
    uint8_t ext;     /* zf_dtype_ext; 0 (ZF_DT_NUMPY) for the NumPy type of kind/itemsize */
    size_t itemsize; /* bytes per element (for 'U': 4 * characters) */
    char unit[16];   /* datetime/timedelta unit inside [...], e.g. "ns", "10s"; else "" */
} zf_dtype;

/* Parse a simple typestr ("<f8", ">i4", "|b1", "<M8[ns]", "|S12", "<U4", "|V8", "|O").
 * Item sizes must be those NumPy allows for the kind (b1; i/u 1,2,4,8; f 2,4,8; c 8,16; m/M 8;
 * S/V >= 0; U multiple... in characters * 4). Errors: ZF_ERR_INVALID with a message naming the
 * string. "|O" parses (kind 'O') so callers can report it as unsupported by name. */
zf_status zf_dtype_parse(const char *typestr, zf_dtype *out, zf_err *err);

/* Format back to a typestr ("<f8", "<M8[ns]", "|S12"); buf of at least 32 bytes. A type
 * without a NumPy typestr (zf_dtype_has_typestr false) is written as its Zarr name:
 * "bfloat16", "complex_float8_e4m3", "int4", "complex_float16", "struct". */
void zf_dtype_format(const zf_dtype *dt, char *buf, size_t bufsize);

/* True when NumPy has a typestr for dt (ext ZF_DT_NUMPY and an item size NumPy allows for the
 * kind): the flat file can be described to NumPy and the header formats. */
bool zf_dtype_has_typestr(const zf_dtype *dt);

/* The Zarr v3 name of a registry type (ext != 0 or complex_float16), e.g. "float8_e4m3",
 * "complex_bfloat16"; NULL for types with a NumPy typestr. */
const char *zf_dtype_ext_name(const zf_dtype *dt);

/* Bits of one component's value: 1 for bool, 2/4 for int2/uint2/int4/uint4, 4 or 6 for
 * float4/float6 (and their complex types), else 8 * the component's bytes (a complex type has
 * two components of itemsize / 2). zarr-extensions packbits' N. */
unsigned zf_dtype_component_bits(const zf_dtype *dt);

/* Sub-byte types keep their value in the low bits of each flat byte (int2/int4 sign-extended).
 * zf_dtype_normalize rewrites each byte of n elements from its low bits (sign-extending int2/
 * int4, clearing the other bits of the rest), as a decode from a layout whose upper bits are
 * arbitrary (the bytes codec's "upper bits are ignored") must; a no-op for other types.
 * zf_dtype_check_flat: true when every byte is already so (else *bad = the first element that
 * is not): a write of 0x10 into a uint4 file is refused rather than stored as 0. */
void zf_dtype_normalize(const zf_dtype *dt, void *buf, size_t n);
bool zf_dtype_check_flat(const zf_dtype *dt, const void *buf, size_t n, size_t *bad);

/* True when elements of dt must be byte-swapped to be read on this (little-endian) host. */
bool zf_dtype_is_swapped(const zf_dtype *dt);

/* Numeric kinds ('b','i','u','f','m','M') whose values zf_dtype_load/store convert (the
 * registry's bfloat16, float8/6/4 and int2/int4/uint2/uint4 included). */
bool zf_dtype_is_numeric(const zf_dtype *dt);

/* A numeric element value in the widest lossless form for its kind. */
typedef struct zf_num {
    char kind; /* 'i' (also b, m, M), 'u', 'f' */
    union {
        int64_t i;
        uint64_t u;
        double f;
    } v;
} zf_num;

/* Read element idx of a buffer of dt (handles byte order, half floats). dt numeric. The value
 * is exact: every registry float format's values are doubles (zf_float_decode). */
zf_num zf_dtype_load(const zf_dtype *dt, const void *buf, size_t idx);
/* Write a value into element idx with NumPy's casting (float->int truncates toward zero;
 * out-of-range and NaN give a defined result, never undefined behaviour). dt numeric.
 * Registry types as ml_dtypes casts: int2/int4/uint2/uint4 wrap to their width (the flat byte
 * sign-extended for int2/int4); the float formats round to nearest even (zf_float_from_double).
 */
void zf_dtype_store(const zf_dtype *dt, void *buf, size_t idx, zf_num value);

/* ----- binary floating-point formats, bit level (one implementation for every format) ----- */

/* How a format encodes NaN. */
enum {
    ZF_NAN_NONE,     /* no NaN (float6_*, float4_e2m1fn) */
    ZF_NAN_IEEE,     /* exponent all ones, mantissa non-zero (IEEE 754, bfloat16, e3m4, ...) */
    ZF_NAN_NEG_ZERO, /* the sign bit alone, 0b1000'0000 ("fnuz": no negative zero) */
    ZF_NAN_ALL_ONES, /* every bit set (float8_e8m0fnu) */
};

/* A binary floating-point format of `bits` bits: [sign] exponent mantissa, value
 * (-1)^s * 1.m * 2^(e - bias), or 0.m * 2^(1 - bias) when e == 0 and has_subnormal. IEEE
 * formats (has_inf) reserve the all-ones exponent for infinities and NaNs; the others use it for
 * finite values. */
typedef struct zf_float_format {
    const char *name; /* "float16", "bfloat16", "float8_e4m3fnuz", ... */
    uint8_t bits, ebits, mbits;
    int16_t bias;
    bool has_sign, has_inf, has_subnormal;
    uint8_t nan;       /* ZF_NAN_* */
    uint64_t nan_bits; /* the NaN the registry's "NaN" fill value names (0 when nan is NONE) */
} zf_float_format;

/* The format of one float component of dt (kind 'f', or kind 'c': each half), also for IEEE
 * float16/32/64; NULL for any other type. */
const zf_float_format *zf_dtype_float_format(const zf_dtype *dt);

/* The value of an encoding (exact: every format here fits a double). */
double zf_float_decode(const zf_float_format *f, uint64_t bits);

/* Rounding of a value to a format (zarr-extensions cast_value "rounding"). */
typedef enum zf_rounding {
    ZF_ROUND_NEAREST_EVEN,
    ZF_ROUND_TOWARDS_ZERO,
    ZF_ROUND_TOWARDS_POSITIVE,
    ZF_ROUND_TOWARDS_NEGATIVE,
    ZF_ROUND_NEAREST_AWAY,
} zf_rounding;

/* Round finite x to the format with `mode`: returns its encoding and true, or false when the
 * rounded magnitude exceeds the largest finite value, or x cannot be represented at all (a
 * negative x or zero in float8_e8m0fnu). Zero keeps its sign where the format has negative zero
 * (fnuz formats: +0). Values below the smallest magnitude round to it or to zero by `mode`
 * (e8m0fnu, which has no zero: to its smallest value 2^-127 for nearest and upward modes). */
bool zf_float_round(const zf_float_format *f, double x, zf_rounding mode, uint64_t *bits);

/* The largest finite value and the smallest value (-largest, or 2^-127 for e8m0fnu). */
double zf_float_max(const zf_float_format *f);
double zf_float_lowest(const zf_float_format *f);

/* NumPy/ml_dtypes-style conversion (zf_dtype_store): round to nearest even; a value beyond the
 * finite range becomes infinity where the format has it, else NaN where it has one, else the
 * largest finite value of that sign; NaN becomes the format's NaN, or +0 in formats without
 * NaN; in e8m0fnu negative values are NaN and zero is 2^-127 (the nearest value). */
uint64_t zf_float_from_double(const zf_float_format *f, double x);

/* ----- value casts (zarr-extensions cast_value: one implementation for every type) ----- */

typedef enum zf_out_of_range {
    ZF_OOR_ERROR, /* "out_of_range" absent: an out-of-range value is an error */
    ZF_OOR_CLAMP,
    ZF_OOR_WRAP,  /* integer targets only (modulo 2^bits, two's complement) */
} zf_out_of_range;

/* Store the numeric value v (exact, as zf_dtype_load gives it) into element idx of a buffer of
 * numeric type `to` by cast_value's procedure (codecs/cast_value "Procedure"; scalar_map is the
 * caller's): a value the type represents exactly is stored as it is; else rounded with `mode`
 * and, beyond the type's range, handled by `oor`. As zarrs does: integer targets round first,
 * then check the range (wrap: modulo 2^bits); float targets check the unrounded value against
 * the finite range first (clamp: to +-infinity where the type has them, else to the largest or
 * smallest value), then round; NaN is kept where the target has NaN, infinities where it has
 * them. Errors (ZF_ERR_INVALID, message names the value and type): an out-of-range value
 * without clamp/wrap, NaN or infinity into a type without it, wrap into a float type without
 * infinities. */
zf_status zf_dtype_cast_value(const zf_dtype *to, void *buf, size_t idx, zf_num v,
                              zf_rounding mode, zf_out_of_range oor, zf_err *err);

/* IEEE binary16 <-> binary32/64, round-to-nearest-even as NumPy does. */
float zf_half_to_float(uint16_t h);
uint16_t zf_float_to_half(float f);
uint16_t zf_double_to_half(double d);

/* ----- Zarr v3 names and scalars of the numeric types ----- */

/* The flat encoding's type of a Zarr v3 data type name without configuration: the core types
 * (v3 "Data Types": bool, int8..uint64, float16/32/64, complex64/128) and the zarr-extensions
 * registry's numeric ones (bfloat16, float8_*, float6_*, float4_e2m1fn, int2, int4, uint2,
 * uint4, complex_bfloat16, complex_float16/32/64 and the complex_float8/6/4 types). Byte order
 * '<' for multi-byte types, '|' otherwise. False for any other name. */
bool zf_dtype_from_v3_name(const char *name, zf_dtype *out);

/* One scalar of a numeric or complex type dt (kinds b, i, u, f, c; as zf_dtype_from_v3_name
 * gives them) in the v3 fill value representation ("Fill value"; the registry types' "Fill
 * value representation"), into dt->itemsize bytes of the flat encoding: bool true/false;
 * integers exact and within the type's range (int4: [-8, 7]); floats a number (rounded to
 * nearest even; beyond the finite range of a type without infinities an error), "NaN" (the
 * type's NaN), "Infinity" / "+Infinity" / "-Infinity", or "0x" and at most two hex digits per
 * byte of the element, the element's bit pattern (bits beyond its width must be zero);
 * complex [real, imag] of those. Errors: ZF_ERR_INVALID, err naming what was expected (without
 * key, field or type name). */
zf_status zf_dtype_v3_scalar(yajl_val v, const zf_dtype *dt, uint8_t *out, zf_err *err);

/* Byte-swap each of n elements of size itemsize in place (itemsize 1 is a no-op). */
void zf_byteswap(void *buf, size_t n, size_t itemsize);

#endif
