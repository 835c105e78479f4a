/* json.h — small helpers over yajl's tree API, shared by the metadata and hierarchy layers. */
#ifndef ZARRFS_JSON_H
#define ZARRFS_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_tree.h>

#include "zarrfs/status.h"

/* Bounds on the JSON documents zarrfs parses (metadata, consolidated metadata, kerchunk
 * references): their size in bytes, and how deep arrays and objects nest (yajl's tree and the
 * code walking it recurse once per level). */
#define ZF_JSON_MAX_TEXT ((size_t)512 << 20)
#define ZF_JSON_MAX_DEPTH 512

/* Parse len bytes of text (need not be NUL-terminated). Python's bare NaN, Infinity and
 * -Infinity tokens are accepted: they become marked strings that zf_json_special names and
 * zf_json_dump writes back bare. Errors: ZF_ERR_INVALID with
 * err = "<key>: not valid JSON (<parser message>)", or "<key>: JSON document larger than
 * 512 MiB" / "<key>: JSON nested deeper than 512 levels" beyond ZF_JSON_MAX_TEXT /
 * ZF_JSON_MAX_DEPTH; ZF_ERR_NOMEM. Free with yajl_tree_free. */
zf_status zf_json_parse(const char *key, const char *text, size_t len, yajl_val *out, zf_err *err);

/* "NaN", "Infinity" or "-Infinity" when v stands for that bare token, else NULL. */
const char *zf_json_special(yajl_val v);

/* Member `name` of object v, or NULL when v is not an object or has no such member. */
yajl_val zf_json_get(yajl_val v, const char *name);

/* Compact JSON text of v (malloc'd, NUL-terminated), or NULL on allocation failure. */
char *zf_json_dump(yajl_val v);

/* Exact integer value of a JSON number: true when v is an integral number that fits. */
/* The JSON object text (len bytes) with its top-level member replaced by (or, when absent,
 * given) the JSON text value, written out indented by 4 spaces, malloc'd into *out. key names
 * the document in messages. Errors: ZF_ERR_INVALID (text or value not valid JSON, text not an
 * object), ZF_ERR_NOMEM. */
zf_status zf_json_replace_member(const char *key, const char *text, size_t len,
                                 const char *member, const char *value, char **out, zf_err *err);

int zf_json_int64(yajl_val v, int64_t *out);
int zf_json_uint64(yajl_val v, uint64_t *out);

/* Standard base64 decoded as Python's base64.standard_b64decode does it (zarr-python's fill
 * values, numcodecs' base64 codec): characters outside the alphabet are skipped, a complete pad
 * ends the data, an incomplete final group is an error. Writes at most cap bytes to out (out NULL:
 * only count) and the decoded length to *produced. Errors: ZF_ERR_INVALID (incomplete group or
 * padding), ZF_ERR_CORRUPT (more than cap bytes). */
zf_status zf_base64_decode_into(const uint8_t *in, size_t in_len, uint8_t *out, size_t cap,
                                size_t *produced);
/* The same into a malloc'd *out of *len bytes. Errors: ZF_ERR_INVALID, ZF_ERR_NOMEM. */
zf_status zf_base64_decode(const char *s, uint8_t **out, size_t *len);

/* Decode UTF-8 into UTF-32 code units written as n_units 4-byte elements (zero-padded or
 * truncated), little-endian unless big_endian. Errors: ZF_ERR_INVALID for malformed UTF-8. */
zf_status zf_utf8_to_utf32(const char *s, size_t len, uint8_t *out, size_t n_units,
                           int big_endian);

#endif
