/* fuse_ops.h — the FUSE front end's operations table (internal to src/fuse/). */
#ifndef ZARRFS_FUSE_OPS_H
#define ZARRFS_FUSE_OPS_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <sys/types.h>

#include "zarrfs/hierarchy.h"

/* Notifications to the kernel sent after the handler that asks for them has replied
 * (notify.c): queued in order, sent by a thread of its own. */
typedef struct zf_notifier zf_notifier;
/* The thread for session se; NULL when it cannot be started (nothing is sent then). */
zf_notifier *zf_notifier_start(struct fuse_session *se);
/* Drop the kernel's entry `name` in directory inode parent: with deleted (not 0), the inode
 * it led to, which is gone (fuse_lowlevel_notify_delete: inotify watchers see the deletion);
 * else fuse_lowlevel_notify_inval_entry. nt may be NULL. */
void zf_notifier_entry(zf_notifier *nt, fuse_ino_t parent, const char *name, fuse_ino_t deleted);
/* Drop the kernel's cached pages of inode ino (fuse_lowlevel_notify_inval_inode, offset 0).
 * nt may be NULL. */
void zf_notifier_pages(zf_notifier *nt, fuse_ino_t ino);
/* Stop the thread (what is still queued is dropped) and free nt; after the session loop. */
void zf_notifier_stop(zf_notifier *nt);

typedef struct zf_fs {
    zf_hierarchy *h;
    bool rw;           /* -o rw: writes allowed (where the hierarchy can be written) */
    bool allow_delete; /* -o allow_delete: unlink deletes arrays */
    bool direct_io;    /* -o direct_io: array files opened with FOPEN_DIRECT_IO */
    struct fuse_session *se; /* for notifications to the kernel (NULL: none sent) */
    zf_notifier *notifier;   /* for those sent after the reply (NULL: none sent) */
    uid_t uid;         /* owner of every node (-o uid; default: the user running zarrfs) */
    gid_t gid;         /* group of every node (-o gid) */
    mode_t file_mode;  /* permission bits of files (-o file_mode, umask) */
    mode_t dir_mode;   /* of directories (-o dir_mode, umask); ops.c drops the write bits where
                        * nothing can be written (read-only mounts, derived files) */
    char *metric_labels; /* labels of every metric sample (mount, store), escaped; NULL: none */
} zf_fs;

/* Shared mappings of direct_io files need the kernel's FUSE_DIRECT_IO_ALLOW_MMAP, which only a
 * libfuse defining FUSE_CAP_DIRECT_IO_ALLOW_MMAP can ask for (not 3.14). */
#ifdef FUSE_CAP_DIRECT_IO_ALLOW_MMAP
#define ZF_DIRECT_IO_MMAP_NOTE "unless the kernel allows them"
#else
#define ZF_DIRECT_IO_MMAP_NOTE "(this libfuse cannot ask the kernel for them)"
#endif

extern const struct fuse_lowlevel_ops zf_fuse_ops;

/* The one place a zf_status becomes an errno. */
int zf_errno(zf_status st);

/* The hierarchy's zf_hierarchy_gone_fn (ctx: the zf_fs): the kernel's attributes of the node
 * id are dropped at once (safe inside any handler), its entry `name` in dir_id after the reply
 * (the notifier). */
void zf_fuse_gone(void *ctx, uint64_t dir_id, const char *name, uint64_t id, bool deleted);

/* The statistics of the mount (the .zarrfs-stats file's JSON), malloc'd; NULL without memory. */
char *zf_fuse_stats_json(zf_fs *fs);
/* The metrics in the Prometheus text format (.zarrfs-metrics, -o metrics_file), malloc'd; NULL
 * when out of memory. */
char *zf_fuse_metrics_text(zf_fs *fs);

#endif
