/* pool.h — a fixed set of worker threads running queued tasks (parallel chunk decoding). */
#ifndef ZARRFS_POOL_H
#define ZARRFS_POOL_H

#include <stddef.h>

#include "zarrfs/status.h"

typedef struct zf_pool zf_pool;
typedef void (*zf_task_fn)(void *arg);

/* nthreads >= 1 workers. Errors: ZF_ERR_NOMEM. */
zf_status zf_pool_new(unsigned nthreads, zf_pool **out);
/* Queue fn(arg); returns ZF_ERR_NOMEM when it cannot be queued (the caller may run it itself). */
zf_status zf_pool_submit(zf_pool *p, zf_task_fn fn, void *arg);
/* Number of tasks queued and not yet started. */
size_t zf_pool_pending(zf_pool *p);
/* Take the queued tasks of function fn that have not started off the queue, calling drop(arg)
 * for each (to free what it owns); returns how many. Tasks already running go on. */
size_t zf_pool_cancel(zf_pool *p, zf_task_fn fn, void (*drop)(void *arg));
/* Finish queued tasks, stop the workers, free. */
void zf_pool_free(zf_pool *p);

#endif
