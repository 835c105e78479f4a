/* sbuf.c — a growing string (include/zarrfs/sbuf.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarrfs/sbuf.h"

bool zf_sbuf_reserve(zf_sbuf *b, size_t n)
{
    if (b->oom)
        return false;
    if (n >= (size_t)-1 / 4 - b->len) {
        b->oom = true;
        return false;
    }
    if (b->len + n + 1 <= b->cap)
        return true;
    size_t cap = (b->len + n + 1) * 2;
    char *s = realloc(b->s, cap);
    if (!s) {
        b->oom = true;
        return false;
    }
    b->s = s;
    b->cap = cap;
    return true;
}

void zf_sbuf_add(zf_sbuf *b, const char *t, size_t n)
{
    if (!zf_sbuf_reserve(b, n))
        return;
    memcpy(b->s + b->len, t, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void zf_sbuf_printf(zf_sbuf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = true;
        return;
    }
    if (!zf_sbuf_reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void zf_sbuf_json_string(zf_sbuf *b, const char *s)
{
    zf_sbuf_add(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            zf_sbuf_printf(b, "\\%c", c);
        else if (c < 0x20)
            zf_sbuf_printf(b, "\\u%04x", c);
        else
            zf_sbuf_add(b, s, 1);
    }
    zf_sbuf_add(b, "\"", 1);
}
