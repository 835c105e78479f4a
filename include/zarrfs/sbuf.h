/* sbuf.h — a growing NUL-terminated string for the text zarrfs builds: metadata descriptions
 * (a struct's NumPy descr), sidecar headers. Appending never fails on the spot: out of memory
 * sets `oom`, later appends do nothing, and the caller checks `oom` once at the end (then frees
 * `s`). Start from {0}; `s` is malloc'd (free it), `len` bytes, always NUL-terminated once
 * anything was appended. */
#ifndef ZARRFS_SBUF_H
#define ZARRFS_SBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct zf_sbuf {
    char *s;
    size_t len, cap; /* bytes of text, bytes allocated */
    bool oom;
} zf_sbuf;

/* Room for n more bytes and the NUL (cap >= len + n + 1); false (and oom set) when out of
 * memory. */
bool zf_sbuf_reserve(zf_sbuf *b, size_t n);
/* Append n bytes of t. */
void zf_sbuf_add(zf_sbuf *b, const char *t, size_t n);
/* Append printf's output. */
void zf_sbuf_printf(zf_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append s as a JSON string: quotes, `\"` and `\\`, control characters as `\u00XX` (RFC 8259
 * "Strings"); other bytes as they are. */
void zf_sbuf_json_string(zf_sbuf *b, const char *s);

#endif
