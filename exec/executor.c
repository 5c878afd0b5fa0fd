/* executor.c: the executor's own thread. The host posts a job (run this
 * step) and waits; the executor's thread runs it with its team of helpers.
 * Keeping the computation on one long-lived thread is what lets a later
 * device queue feed it without the host in the loop. */
#include "exec/step_impl.h"

#include <cblas.h>
#include <stdlib.h>

void sl_executor_options_init(sl_executor_options *o)
{
    o->threads = 1;
    o->blas_threads = 1;
}

static void *executor_main(void *arg)
{
    sl_executor *ex = arg;
    int rc = sl__team_init(&ex->team, ex->team.nthreads);

    pthread_mutex_lock(&ex->lock);
    ex->job_done = rc; /* the starter waits for this */
    ex->started = rc == SL_OK ? 1 : -1;
    pthread_cond_broadcast(&ex->cond);
    while (rc == SL_OK) {
        while (!ex->job_posted && !ex->stop)
            pthread_cond_wait(&ex->cond, &ex->lock);
        if (ex->stop)
            break;
        ex->job_posted = 0;
        pthread_mutex_unlock(&ex->lock);
        ex->job(ex->job_arg);
        pthread_mutex_lock(&ex->lock);
        ex->job_done = 1;
        pthread_cond_broadcast(&ex->cond);
    }
    pthread_mutex_unlock(&ex->lock);
    if (rc == SL_OK)
        sl__team_destroy(&ex->team);
    return NULL;
}

int sl_executor_new(sl_executor **out, const sl_executor_options *o)
{
    sl_executor_options def;
    sl_executor *ex;
    int rc;

    *out = NULL;
    if (!o) {
        sl_executor_options_init(&def);
        o = &def;
    }
    if (o->threads < 1 || o->threads > 64 || o->blas_threads < 1 || o->blas_threads > 64)
        return SL_EINVAL;
    ex = calloc(1, sizeof *ex);
    if (!ex)
        return SL_ENOMEM;
    ex->team.nthreads = o->threads;
    ex->blas_threads = o->blas_threads;
    /* OpenBLAS's thread count is process-wide; the executor states it
     * rather than inheriting whatever OPENBLAS_NUM_THREADS said. */
    openblas_set_num_threads(o->blas_threads);
    if (pthread_mutex_init(&ex->lock, NULL) != 0) {
        free(ex);
        return SL_ENOMEM;
    }
    if (pthread_cond_init(&ex->cond, NULL) != 0) {
        pthread_mutex_destroy(&ex->lock);
        free(ex);
        return SL_ENOMEM;
    }
    if (pthread_create(&ex->thread, NULL, executor_main, ex) != 0) {
        pthread_cond_destroy(&ex->cond);
        pthread_mutex_destroy(&ex->lock);
        free(ex);
        return SL_ETHREAD;
    }
    pthread_mutex_lock(&ex->lock);
    while (ex->started == 0)
        pthread_cond_wait(&ex->cond, &ex->lock);
    rc = ex->started > 0 ? SL_OK : ex->job_done;
    pthread_mutex_unlock(&ex->lock);
    if (rc != SL_OK) {
        pthread_join(ex->thread, NULL);
        pthread_cond_destroy(&ex->cond);
        pthread_mutex_destroy(&ex->lock);
        free(ex);
        return rc;
    }
    *out = ex;
    return SL_OK;
}

void sl__executor_call(sl_executor *ex, void (*job)(void *arg), void *arg)
{
    pthread_mutex_lock(&ex->lock);
    ex->job = job;
    ex->job_arg = arg;
    ex->job_done = 0;
    ex->job_posted = 1;
    pthread_cond_broadcast(&ex->cond);
    while (!ex->job_done)
        pthread_cond_wait(&ex->cond, &ex->lock);
    pthread_mutex_unlock(&ex->lock);
}

void sl_executor_free(sl_executor *ex)
{
    if (!ex)
        return;
    pthread_mutex_lock(&ex->lock);
    ex->stop = 1;
    pthread_cond_broadcast(&ex->cond);
    pthread_mutex_unlock(&ex->lock);
    pthread_join(ex->thread, NULL);
    pthread_cond_destroy(&ex->cond);
    pthread_mutex_destroy(&ex->lock);
    free(ex);
}

int sl_executor_threads(const sl_executor *ex)
{
    return ex->team.nthreads;
}
