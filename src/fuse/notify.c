/* notify.c — notifications to the kernel that must not be sent from inside a request handler,
 * sent in order by a thread of their own.
 *
 * fuse_lowlevel_notify_inval_entry takes the parent directory's lock in the kernel; the kernel
 * holds that lock while it waits for the reply to a lookup, create, unlink, ... in that
 * directory (and the inode's lock during a setxattr on it), so a handler sending it about its
 * own directory would wait for itself (fuse_lowlevel.h). A handler queues the notification
 * instead; this thread sends it once the handler's reply has released the lock. Invalidating
 * the pages of an inode (not only its attributes) locks them, so it is queued too. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fuse_ops.h"
#include "zarrfs/log.h"

#define MAX_QUEUED 65536 /* beyond this, notifications are dropped (entries then expire) */

typedef struct item {
    struct item *next;
    fuse_ino_t ino;   /* the parent directory (an entry), or the inode (its pages) */
    fuse_ino_t child; /* an entry deleted: the inode it led to (0: only invalidated) */
    char *name;       /* the entry's name; NULL: the inode's pages */
} item;

struct zf_notifier {
    struct fuse_session *se;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    item *head, **tail;
    size_t queued;
    bool stop;
};

static void send_one(struct fuse_session *se, const item *it)
{
    int r;
    if (!it->name)
        r = fuse_lowlevel_notify_inval_inode(se, it->ino, 0, 0);
    else if (it->child) /* also tells inotify watchers of the directory */
        r = fuse_lowlevel_notify_delete(se, it->ino, it->child, it->name, strlen(it->name));
    else
        r = fuse_lowlevel_notify_inval_entry(se, it->ino, it->name, strlen(it->name));
    /* -ENOENT: the kernel has no such entry or inode cached (nothing to drop), or its entry
     * leads to another inode already */
    if (r != 0 && r != -ENOENT)
        zf_log_debug("notifying the kernel (%s%s): %s", it->name ? "entry " : "inode pages",
                     it->name ? it->name : "", strerror(-r));
}

static void *run(void *arg)
{
    zf_notifier *nt = arg;
    pthread_mutex_lock(&nt->mu);
    for (;;) {
        while (!nt->stop && !nt->head)
            pthread_cond_wait(&nt->cv, &nt->mu);
        if (nt->stop)
            break;
        item *it = nt->head;
        nt->head = it->next;
        if (!nt->head)
            nt->tail = &nt->head;
        nt->queued--;
        pthread_mutex_unlock(&nt->mu);
        if (!fuse_session_exited(nt->se)) /* (after the loop, nothing answers the kernel) */
            send_one(nt->se, it);
        free(it->name);
        free(it);
        pthread_mutex_lock(&nt->mu);
    }
    pthread_mutex_unlock(&nt->mu);
    return NULL;
}

zf_notifier *zf_notifier_start(struct fuse_session *se)
{
    zf_notifier *nt = calloc(1, sizeof *nt);
    if (!nt)
        return NULL;
    nt->se = se;
    nt->tail = &nt->head;
    pthread_mutex_init(&nt->mu, NULL);
    pthread_cond_init(&nt->cv, NULL);
    if (pthread_create(&nt->thread, NULL, run, nt) != 0) {
        pthread_cond_destroy(&nt->cv);
        pthread_mutex_destroy(&nt->mu);
        free(nt);
        return NULL;
    }
    return nt;
}

static void enqueue(zf_notifier *nt, fuse_ino_t ino, fuse_ino_t child, const char *name)
{
    if (!nt)
        return;
    item *it = calloc(1, sizeof *it);
    if (!it || (name && !(it->name = strdup(name)))) {
        free(it);
        return; /* no memory: the kernel's entry expires after its timeout instead */
    }
    it->ino = ino;
    it->child = child;
    pthread_mutex_lock(&nt->mu);
    bool full = nt->stop || nt->queued >= MAX_QUEUED;
    if (!full) {
        *nt->tail = it;
        nt->tail = &it->next;
        nt->queued++;
        pthread_cond_signal(&nt->cv);
    }
    pthread_mutex_unlock(&nt->mu);
    if (full) {
        free(it->name);
        free(it);
    }
}

void zf_notifier_entry(zf_notifier *nt, fuse_ino_t parent, const char *name, fuse_ino_t deleted)
{
    enqueue(nt, parent, deleted, name);
}

void zf_notifier_pages(zf_notifier *nt, fuse_ino_t ino) { enqueue(nt, ino, 0, NULL); }

void zf_notifier_stop(zf_notifier *nt)
{
    if (!nt)
        return;
    pthread_mutex_lock(&nt->mu);
    nt->stop = true;
    pthread_cond_signal(&nt->cv);
    pthread_mutex_unlock(&nt->mu);
    pthread_join(nt->thread, NULL);
    for (item *it = nt->head, *next; it; it = next) { /* unsent: the mount is going away */
        next = it->next;
        free(it->name);
        free(it);
    }
    pthread_cond_destroy(&nt->cv);
    pthread_mutex_destroy(&nt->mu);
    free(nt);
}
