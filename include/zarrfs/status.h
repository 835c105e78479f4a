/* status.h — the zarrfs status enum and error-message buffer.
 *
 * Every layer below src/fuse/ reports failure as a zf_status; only the FUSE front end turns a
 * status into an errno (squashfuse's rule: errno only at the edge). Functions that can explain a
 * failure also take a zf_err, a fixed buffer the callee fills with one human-readable line. */
#ifndef ZARRFS_STATUS_H
#define ZARRFS_STATUS_H

#include <stdarg.h>
#include <stddef.h>

typedef enum zf_status {
    ZF_OK = 0,
    ZF_ERR_NOT_FOUND,   /* a key or node is absent: a result, not a failure */
    ZF_ERR_NOMEM,       /* allocation failed */
    ZF_ERR_IO,          /* the store failed (read error, permission, escape attempt) */
    ZF_ERR_CORRUPT,     /* stored data cannot be decoded, has the wrong size or checksum */
    ZF_ERR_INVALID,     /* invalid metadata or argument */
    ZF_ERR_UNSUPPORTED, /* allowed by the spec but not served (object dtype, unknown codec) */
    ZF_ERR_READONLY,    /* a write to a read-only store or mount */
    ZF_ERR_EXISTS,      /* a node of that name exists already */
    ZF_ERR_NOT_EMPTY,   /* a group still has children */
    ZF_ERR_PERMISSION,  /* refused by the mount's policy (e.g. deleting without allow_delete) */
    ZF_ERR_NOT_DIR,     /* a group was expected, an array found */
    ZF_ERR_IS_DIR,      /* an array was expected, a group found */
    ZF_ERR_CONFLICT,    /* a conditional write found the value changed by another writer */
    ZF_ERR_NO_SPACE,    /* the store has no room left for a write (ENOSPC, EDQUOT) */
    ZF_ERR_TOO_LARGE,   /* a value larger than the bound its reader set (zf_store_get_bounded) */
    ZF_ERR_ACCESS,      /* the store refused the credentials (HTTP 401/403 of GCS, Azure) */
} zf_status;

/* One line explaining the last failure; msg[0] == '\0' when nothing was said. */
typedef struct zf_err {
    char msg[512];
} zf_err;

/* Short fixed name of a status ("not found", "corrupt data", ...). Never NULL. */
const char *zf_status_str(zf_status st);

/* Format into err (if err is non-NULL) and return st, so callers can write
 * `return zf_fail(err, ZF_ERR_INVALID, "\"shape\": expected ...")`. */
zf_status zf_fail(zf_err *err, zf_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefix err->msg with "prefix: " (used to add the key or codec name on the way up). */
void zf_err_prefix(zf_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
