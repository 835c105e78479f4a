/* fuse_ops.h — the FUSE front end's operations table (internal to src/fuse/). */
#ifndef ZARRFS_FUSE_OPS_H
#define ZARRFS_FUSE_OPS_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <sys/types.h>

#include "zarrfs/hierarchy.h"

typedef struct zf_fs {
    zf_hierarchy *h;
    bool rw;           /* -o rw: writes allowed (where the hierarchy can be written) */
    bool allow_delete; /* -o allow_delete: unlink deletes arrays */
    struct fuse_session *se; /* for notifications to the kernel (NULL: none sent) */
    uid_t uid;         /* owner of every node (-o uid; default: the user running zarrfs) */
    gid_t gid;         /* group of every node (-o gid) */
    mode_t file_mode;  /* permission bits of files (-o file_mode, umask) */
    mode_t dir_mode;   /* of directories (-o dir_mode, umask); ops.c drops the write bits where
                        * nothing can be written (read-only mounts, derived files) */
} zf_fs;

extern const struct fuse_lowlevel_ops zf_fuse_ops;

/* The one place a zf_status becomes an errno. */
int zf_errno(zf_status st);

/* The statistics of the mount (the .zarrfs-stats file's JSON), malloc'd; NULL without memory. */
char *zf_fuse_stats_json(zf_fs *fs);

#endif
