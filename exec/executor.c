/* executor.c: the executor's own thread. The host posts a job (run this
 * step) and waits; the executor's thread runs it with its team of helpers.
 * Keeping the computation on one long-lived thread is what lets a later
 * device queue feed it without the host in the loop.
 *
 * The job slot holds one job. Posts are numbered (tickets): a poster waits
 * while the slot is taken, and a waiter waits until the job with its own
 * ticket is done, so two hosts posting to one executor each get their own
 * job's completion. Whoever runs on the team holds team_lock: the
 * executor's thread around each job, or a thread running a step in place.
 * A job that itself runs a step (a loop of GetNext and steps, say) runs it
 * in place, on the executor's thread, which already holds the team. */
#include "exec/step_impl.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/cpu.h"
#include "core/options.h"
#include "exec/blas.h"

/* The end of the first version's fields: fixed forever (core/options.h). */
static const size_t executor_options_v1_size =
    offsetof(sl_executor_options, blas_threads) + sizeof(int);
/* No tail padding, so a caller's size covers only fields it knows; name the
 * last field here when one is appended. */
_Static_assert(sizeof(sl_executor_options) ==
                   offsetof(sl_executor_options, spin_ns) + sizeof(int64_t),
               "sl_executor_options: name its last field here; no tail padding "
               "(core/options.h)");

void sl_executor_options_init_sized(sl_executor_options *o, size_t size)
{
    sl_executor_options d;
    memset(&d, 0, sizeof d);
    d.threads = 1;
    d.blas_threads = 1;
    d.spin_ns = -1;
    sl__options_init(o, size, &d, sizeof d);
}

static void *executor_main(void *arg)
{
    sl_executor *ex = arg;
    int rc = SL_OK;
    /* A device's reserved cores: set before the team starts, so that its
     * helpers inherit them and it sizes itself to them. */
    if (ex->cpu_mask && sl__thread_set_cpu_mask(ex->cpu_mask) != SL_OK)
        rc = SL_EINVAL;
    if (rc == SL_OK)
        rc = sl__team_init(&ex->team, ex->team.nthreads, ex->spin_ns);

    pthread_mutex_lock(&ex->lock);
    ex->init_status = rc; /* the starter waits for this */
    ex->started = rc == SL_OK ? 1 : -1;
    pthread_cond_broadcast(&ex->cond);
    while (rc == SL_OK) {
        void (*job)(void *);
        void *job_arg;
        uint64_t ticket;
        while (ex->taken == ex->posted && !ex->stop)
            pthread_cond_wait(&ex->cond, &ex->lock);
        if (ex->taken == ex->posted) /* stopping, nothing left */
            break;
        job = ex->job;
        job_arg = ex->job_arg;
        ticket = ++ex->taken;
        pthread_cond_broadcast(&ex->cond); /* the slot is free for the next poster */
        pthread_mutex_unlock(&ex->lock);

        pthread_mutex_lock(&ex->team_lock);
        job(job_arg);
        pthread_mutex_unlock(&ex->team_lock);

        pthread_mutex_lock(&ex->lock);
        ex->done = ticket;
        pthread_cond_broadcast(&ex->cond);
    }
    pthread_mutex_unlock(&ex->lock);
    if (rc == SL_OK)
        sl__team_destroy(&ex->team);
    return NULL;
}

/* The executor's lock and condition (on the monotonic clock, for timed
 * waits), and the team lock. */
static int init_sync(sl_executor *ex)
{
    pthread_condattr_t attr;
    if (pthread_mutex_init(&ex->lock, NULL) != 0)
        return SL_ENOMEM;
    if (pthread_mutex_init(&ex->team_lock, NULL) != 0) {
        pthread_mutex_destroy(&ex->lock);
        return SL_ENOMEM;
    }
    if (pthread_condattr_init(&attr) != 0)
        goto fail;
    if (pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_init(&ex->cond, &attr) != 0) {
        pthread_condattr_destroy(&attr);
        goto fail;
    }
    pthread_condattr_destroy(&attr);
    return SL_OK;
fail:
    pthread_mutex_destroy(&ex->team_lock);
    pthread_mutex_destroy(&ex->lock);
    return SL_ENOMEM;
}

static void destroy_sync(sl_executor *ex)
{
    pthread_cond_destroy(&ex->cond);
    pthread_mutex_destroy(&ex->team_lock);
    pthread_mutex_destroy(&ex->lock);
}

int sl_executor_new(sl_executor **out, const sl_executor_options *user)
{
    return sl__executor_new_on(out, user, 0);
}

int sl__executor_new_on(sl_executor **out, const sl_executor_options *user, uint64_t cpu_mask)
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
    ex->spin_ns = o->spin_ns;
    ex->cpu_mask = cpu_mask;
    ex->blas_threads = o->blas_threads;
    /* OpenBLAS's thread count is process-wide: every executor alive must
     * agree on it (see blas.h). */
    rc = sl__blas_acquire(o->blas_threads);
    if (rc < 0) {
        free(ex);
        return rc;
    }
    rc = init_sync(ex);
    if (rc < 0) {
        sl__blas_release();
        free(ex);
        return rc;
    }
    if (pthread_create(&ex->thread, NULL, executor_main, ex) != 0) {
        destroy_sync(ex);
        sl__blas_release();
        free(ex);
        return SL_ETHREAD;
    }
    /* Named for top -H, perf and gdb, as the pipeline's threads are. */
    pthread_setname_np(ex->thread, "sl-executor");
    pthread_mutex_lock(&ex->lock);
    while (ex->started == 0)
        pthread_cond_wait(&ex->cond, &ex->lock);
    rc = ex->started > 0 ? SL_OK : ex->init_status;
    pthread_mutex_unlock(&ex->lock);
    if (rc != SL_OK) {
        pthread_join(ex->thread, NULL);
        destroy_sync(ex);
        sl__blas_release();
        free(ex);
        return rc;
    }
    *out = ex;
    return SL_OK;
}

int sl__executor_on_own_thread(const sl_executor *ex)
{
    return pthread_equal(pthread_self(), ex->thread);
}

int sl__executor_post(sl_executor *ex, void (*job)(void *arg), void *arg, uint64_t *ticket)
{
    pthread_mutex_lock(&ex->lock);
    while (ex->taken != ex->posted && !ex->stop) /* the slot holds another's job */
        pthread_cond_wait(&ex->cond, &ex->lock);
    if (ex->stop) {
        pthread_mutex_unlock(&ex->lock);
        return SL_ECLOSED;
    }
    ex->job = job;
    ex->job_arg = arg;
    *ticket = ++ex->posted;
    pthread_cond_broadcast(&ex->cond);
    pthread_mutex_unlock(&ex->lock);
    return SL_OK;
}

int sl__executor_wait(sl_executor *ex, uint64_t ticket, int timeout_ms)
{
    struct timespec until;
    int rc = SL_OK;
    if (timeout_ms >= 0)
        sl__deadline_ms(&until, timeout_ms);
    pthread_mutex_lock(&ex->lock);
    while (ex->done < ticket && rc == SL_OK) {
        if (timeout_ms < 0)
            pthread_cond_wait(&ex->cond, &ex->lock);
        else if (pthread_cond_timedwait(&ex->cond, &ex->lock, &until) == ETIMEDOUT &&
                 ex->done < ticket)
            rc = SL_ETIMEDOUT;
    }
    pthread_mutex_unlock(&ex->lock);
    return rc;
}

void sl__executor_call(sl_executor *ex, void (*job)(void *arg), void *arg)
{
    uint64_t ticket;
    int rc;
    if (sl__executor_on_own_thread(ex)) { /* inside a job: the team is ours */
        job(arg);
        return;
    }
    /* Posting fails only once sl_executor_free has begun, which the
     * caller must not race with. */
    rc = sl__executor_post(ex, job, arg, &ticket);
    SL_ASSERT(rc == SL_OK);
    sl__executor_wait(ex, ticket, -1);
}

void sl__executor_call_here(sl_executor *ex, void (*job)(void *arg), void *arg)
{
    if (sl__executor_on_own_thread(ex)) {
        job(arg);
        return;
    }
    pthread_mutex_lock(&ex->team_lock);
    job(arg);
    pthread_mutex_unlock(&ex->team_lock);
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
    destroy_sync(ex);
    sl__blas_release();
    free(ex);
}

int sl_executor_threads(const sl_executor *ex)
{
    return ex->team.nthreads;
}

void sl_executor_get_stats(const sl_executor *ex, sl_executor_stats *out)
{
    out->threads = ex->team.nthreads;
    out->blas_threads = ex->blas_threads;
    out->spin_ns = ex->team.spin_ns;
    out->helper_sleeps = atomic_load(&((sl_executor *)ex)->team.helper_sleeps);
    out->caller_sleeps = atomic_load(&((sl_executor *)ex)->team.caller_sleeps);
}
