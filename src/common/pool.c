/* pool.c — worker threads over a FIFO of tasks. */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "zarrfs/pool.h"

typedef struct task {
    zf_task_fn fn;
    void *arg;
    struct task *next;
} task;

struct zf_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    task *head, *tail;
    size_t pending;
    bool stopping;
    unsigned nthreads;
    pthread_t *threads;
};

static void *worker(void *arg)
{
    zf_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->head && !p->stopping)
            pthread_cond_wait(&p->cv, &p->mu);
        if (!p->head)
            break; /* stopping and drained */
        task *t = p->head;
        p->head = t->next;
        if (!p->head)
            p->tail = NULL;
        p->pending--;
        pthread_mutex_unlock(&p->mu);
        t->fn(t->arg);
        free(t);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

zf_status zf_pool_new(unsigned nthreads, zf_pool **out)
{
    zf_pool *p = calloc(1, sizeof *p);
    if (!p)
        return ZF_ERR_NOMEM;
    p->threads = calloc(nthreads ? nthreads : 1, sizeof *p->threads);
    if (!p->threads) {
        free(p);
        return ZF_ERR_NOMEM;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    for (unsigned i = 0; i < (nthreads ? nthreads : 1); i++) {
        if (pthread_create(&p->threads[i], NULL, worker, p) != 0)
            break;
        p->nthreads++;
    }
    if (p->nthreads == 0) {
        zf_pool_free(p);
        return ZF_ERR_NOMEM;
    }
    *out = p;
    return ZF_OK;
}

zf_status zf_pool_submit(zf_pool *p, zf_task_fn fn, void *arg)
{
    task *t = malloc(sizeof *t);
    if (!t)
        return ZF_ERR_NOMEM;
    t->fn = fn;
    t->arg = arg;
    t->next = NULL;
    pthread_mutex_lock(&p->mu);
    if (p->tail)
        p->tail->next = t;
    else
        p->head = t;
    p->tail = t;
    p->pending++;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return ZF_OK;
}

size_t zf_pool_pending(zf_pool *p)
{
    pthread_mutex_lock(&p->mu);
    size_t n = p->pending;
    pthread_mutex_unlock(&p->mu);
    return n;
}

size_t zf_pool_cancel(zf_pool *p, zf_task_fn fn, void (*drop)(void *arg))
{
    size_t n = 0;
    task *gone = NULL;
    pthread_mutex_lock(&p->mu);
    for (task **pp = &p->head; *pp;) {
        task *t = *pp;
        if (t->fn != fn) {
            p->tail = t;
            pp = &t->next;
            continue;
        }
        *pp = t->next;
        t->next = gone;
        gone = t;
        p->pending--;
        n++;
    }
    if (!p->head)
        p->tail = NULL;
    pthread_mutex_unlock(&p->mu);
    while (gone) {
        task *t = gone;
        gone = t->next;
        drop(t->arg);
        free(t);
    }
    return n;
}

void zf_pool_free(zf_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->threads);
    free(p);
}
