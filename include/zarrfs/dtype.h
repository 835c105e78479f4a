/* dtype.h — NumPy-style element types, shared by the codec and metadata layers.
 *
 * Zarr v2 ("Data type encoding") names data types by NumPy typestr: a byte-order character
 * ('<', '>', '|'), a kind character and an item size in bytes, e.g. "<f8", "|b1", "<M8[ns]",
 * "|S12", "<U4". Structured types are lists of fields and are represented here as kind 'V' with
 * their packed item size (parsed by src/meta/). */
#ifndef ZARRFS_DTYPE_H
#define ZARRFS_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarrfs/status.h"

typedef struct zf_dtype {
    char kind;       /* 'b' bool, 'i', 'u', 'f', 'c', 'm', 'M', 'S', 'U', 'V', 'O' (object) */
    char byteorder;  /* '<' little, '>' big, '|' not relevant */
    size_t itemsize; /* bytes per element (for 'U': 4 * characters) */
    char unit[16];   /* datetime/timedelta unit inside [...], e.g. "ns", "10s"; else "" */
} zf_dtype;

/* Parse a simple typestr ("<f8", ">i4", "|b1", "<M8[ns]", "|S12", "<U4", "|V8", "|O").
 * Item sizes must be those NumPy allows for the kind (b1; i/u 1,2,4,8; f 2,4,8; c 8,16; m/M 8;
 * S/V >= 0; U multiple... in characters * 4). Errors: ZF_ERR_INVALID with a message naming the
 * string. "|O" parses (kind 'O') so callers can report it as unsupported by name. */
zf_status zf_dtype_parse(const char *typestr, zf_dtype *out, zf_err *err);

/* Format back to a typestr ("<f8", "<M8[ns]", "|S12"); buf of at least 32 bytes. */
void zf_dtype_format(const zf_dtype *dt, char *buf, size_t bufsize);

/* True when elements of dt must be byte-swapped to be read on this (little-endian) host. */
bool zf_dtype_is_swapped(const zf_dtype *dt);

/* Numeric kinds ('b','i','u','f','m','M') whose values zf_dtype_load/store convert. */
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

/* Read element idx of a buffer of dt (handles byte order, half floats). dt numeric. */
zf_num zf_dtype_load(const zf_dtype *dt, const void *buf, size_t idx);
/* Write a value into element idx with NumPy's casting (float->int truncates toward zero;
 * out-of-range and NaN give a defined result, never undefined behaviour). dt numeric. */
void zf_dtype_store(const zf_dtype *dt, void *buf, size_t idx, zf_num value);

/* IEEE binary16 <-> binary32/64, round-to-nearest-even as NumPy does. */
float zf_half_to_float(uint16_t h);
uint16_t zf_float_to_half(float f);
uint16_t zf_double_to_half(double d);

/* Byte-swap each of n elements of size itemsize in place (itemsize 1 is a no-op). */
void zf_byteswap(void *buf, size_t n, size_t itemsize);

#endif
