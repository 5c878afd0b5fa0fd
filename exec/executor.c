/* executor.c: the executor's own thread. The host posts a job (run this
 * step) and waits; the executor's thread runs it with its team of helpers.
 * Keeping the computation on one long-lived thread is what lets a later
 * device queue feed it without the host in the loop. */
#include "exec/step_impl.h"

#include <cblas.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/options.h"

/* The end of the first version's fields: fixed forever (core/options.h). */
static const size_t executor_options_v1_size =
    offsetof(sl_executor_options, blas_threads) + sizeof(int);
/* No tail padding, so a caller's size covers only fields it knows; name the
 * last field here when one is appended. */
_Static_assert(sizeof(sl_executor_options) ==
                   offsetof(sl_executor_options, blas_threads) + sizeof(int),
               "sl_executor_options: name its last field here; no tail padding "
               "(core/options.h)");

void sl_executor_options_init_sized(sl_executor_options *o, size_t size)
{
    sl_executor_options d;
    memset(&d, 0, sizeof d);
    d.threads = 1;
    d.blas_threads = 1;
    sl__options_init(o, size, &d, sizeof d);
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

int sl_executor_new(sl_executor **out, const sl_executor_options *user)
{
    sl_executor_options opts;
    const sl_executor_options *o = &opts;
    sl_executor *ex;
    int rc;

    *out = NULL;
    /* There is no object yet to carry a message: like the range check
     * below, a bad struct is SL_EINVAL alone. */
    sl_executor_options_init(&opts);
    if (sl__options_read(&opts, sizeof opts, executor_options_v1_size, user,
                         "sl_executor_options", NULL) != SL_OK)
        return SL_EINVAL;
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
