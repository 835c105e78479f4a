/* status.c — status names and the zf_err message helpers. */
#include <stdio.h>
#include <string.h>

#include "zarrfs/status.h"

const char *zf_status_str(zf_status st)
{
    switch (st) {
    case ZF_OK: return "ok";
    case ZF_ERR_NOT_FOUND: return "not found";
    case ZF_ERR_NOMEM: return "out of memory";
    case ZF_ERR_IO: return "store I/O error";
    case ZF_ERR_CORRUPT: return "corrupt data";
    case ZF_ERR_INVALID: return "invalid";
    case ZF_ERR_UNSUPPORTED: return "unsupported";
    case ZF_ERR_READONLY: return "read-only";
    case ZF_ERR_EXISTS: return "exists";
    case ZF_ERR_NOT_EMPTY: return "not empty";
    case ZF_ERR_PERMISSION: return "not permitted";
    case ZF_ERR_NOT_DIR: return "not a group";
    case ZF_ERR_IS_DIR: return "is a group";
    case ZF_ERR_CONFLICT: return "changed by another writer";
    case ZF_ERR_NO_SPACE: return "no space left in the store";
    case ZF_ERR_TOO_LARGE: return "value too large";
    case ZF_ERR_ACCESS: return "access denied";
    }
    return "unknown status";
}

zf_status zf_fail(zf_err *err, zf_status st, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return st;
}

void zf_err_prefix(zf_err *err, const char *fmt, ...)
{
    if (!err)
        return;
    char prefix[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    /* "prefix: old", truncated to the buffer: memmove the old text right, copy the prefix in */
    size_t cap = sizeof err->msg - 1, pl = strlen(prefix), ol = strnlen(err->msg, cap);
    if (pl + 2 > cap)
        pl = cap - 2;
    if (pl + 2 + ol > cap)
        ol = cap - pl - 2;
    memmove(err->msg + pl + 2, err->msg, ol);
    memcpy(err->msg, prefix, pl);
    memcpy(err->msg + pl, ": ", 2);
    err->msg[pl + 2 + ol] = '\0';
}
