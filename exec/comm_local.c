/* comm_local.c: the in-process communicator (comm.h). Ranks are threads
 * of this process, each with its own buffer. An allreduce is two
 * barriers: once every rank has posted its buffer, each rank sums its own
 * slice of the elements over all buffers, in rank order, into a shared
 * result; after the second barrier each copies the result into its
 * buffer. The slices split the work between the ranks' threads; the order
 * of each sum is the same whoever computes it, so the bits are too.
 *
 * Waits are woken by the last rank to arrive or by abort; nothing else
 * can be waited for (the ranks' own loops bound their waits for data). */
#include "exec/comm.h"

#include "core/clock.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

typedef struct comm_local {
    sl__comm base;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int arrived;            /* ranks at the current barrier */
    unsigned long generation; /* barriers completed */
    int aborted;            /* the status abort was given (0: none) */
    char why[SL_ERRMSG_LEN];
    size_t n_max;
    size_t n;               /* the current allreduce's length */
    float **bufs;           /* (size) each rank's buffer */
    float *result;          /* (n_max) the mean */
    double *work_ms;        /* (size) each rank's time summing and copying */
} comm_local;

/* Waits until every rank has arrived; SL_OK, or the abort's status. */
static int barrier(comm_local *c, sl__error *err)
{
    int rc = SL_OK;
    unsigned long gen;
    pthread_mutex_lock(&c->lock);
    gen = c->generation;
    if (!c->aborted && ++c->arrived == c->base.size) {
        c->arrived = 0;
        c->generation++;
        pthread_cond_broadcast(&c->cond);
    }
    /* a barrier that completed counts even if an abort came after it */
    while (c->generation == gen && !c->aborted)
        pthread_cond_wait(&c->cond, &c->lock);
    if (c->generation == gen)
        rc = sl__errf(err, c->aborted, "%s", c->why);
    pthread_mutex_unlock(&c->lock);
    return rc;
}

static int local_allreduce_mean(sl__comm *base, int rank, float *buf, size_t n, sl__error *err)
{
    comm_local *c = (comm_local *)base;
    const int size = base->size;
    size_t lo, hi;
    double t0;
    int rc;

    if (rank < 0 || rank >= size || n > c->n_max)
        return sl__errf(err, SL_EINVAL, "allreduce: rank %d of %d, %zu elements of %zu at most",
                        rank, size, n, c->n_max);
    pthread_mutex_lock(&c->lock);
    c->bufs[rank] = buf;
    c->n = n; /* every rank gives the same n */
    pthread_mutex_unlock(&c->lock);
    rc = barrier(c, err);
    if (rc < 0)
        return rc;
    t0 = sl__now_ms();
    lo = n * (size_t)rank / (size_t)size;
    hi = n * (size_t)(rank + 1) / (size_t)size;
    for (size_t k = lo; k < hi; k++) {
        float sum = c->bufs[0][k];
        for (int r = 1; r < size; r++)
            sum += c->bufs[r][k];
        c->result[k] = sum / (float)size;
    }
    c->work_ms[rank] += sl__now_ms() - t0;
    rc = barrier(c, err);
    if (rc < 0)
        return rc;
    /* The next allreduce writes result only after its first barrier, which
     * every rank reaches after this copy. */
    t0 = sl__now_ms();
    memcpy(buf, c->result, n * sizeof *buf);
    c->work_ms[rank] += sl__now_ms() - t0;
    return SL_OK;
}

static double local_work_ms(const sl__comm *base, int rank)
{
    const comm_local *c = (const comm_local *)base;
    return rank >= 0 && rank < base->size ? c->work_ms[rank] : -1.0;
}

static void local_abort(sl__comm *base, int status, const char *why)
{
    comm_local *c = (comm_local *)base;
    pthread_mutex_lock(&c->lock);
    if (!c->aborted) {
        c->aborted = status < 0 ? status : SL_ECANCELED;
        snprintf(c->why, sizeof c->why, "%s", why ? why : "stopped");
    }
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

static void local_free(sl__comm *base)
{
    comm_local *c = (comm_local *)base;
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->lock);
    free(c->bufs);
    free(c->result);
    free(c->work_ms);
    free(c);
}

static const sl__comm_iface local_iface = {
    .kind = "local",
    .allreduce_mean = local_allreduce_mean,
    .work_ms = local_work_ms,
    .abort = local_abort,
    .free = local_free,
};

int sl__comm_local_new(sl__comm **out, int size, size_t n_max, sl__error *err)
{
    comm_local *c;
    int e;
    *out = NULL;
    if (size < 1)
        return sl__errf(err, SL_EINVAL, "communicator: %d ranks; give 1 or more", size);
    c = calloc(1, sizeof *c);
    if (!c)
        return sl__errf(err, SL_ENOMEM, "communicator: out of memory");
    c->base.iface = &local_iface;
    c->base.size = size;
    c->n_max = n_max;
    c->bufs = calloc((size_t)size, sizeof *c->bufs);
    c->work_ms = calloc((size_t)size, sizeof *c->work_ms);
    c->result = malloc((n_max ? n_max : 1) * sizeof *c->result);
    if (!c->bufs || !c->result || !c->work_ms) {
        free(c->bufs);
        free(c->work_ms);
        free(c->result);
        free(c);
        return sl__errf(err, SL_ENOMEM, "communicator: out of memory for %zu floats", n_max);
    }
    if ((e = pthread_mutex_init(&c->lock, NULL)) != 0) {
        free(c->bufs);
        free(c->work_ms);
        free(c->result);
        free(c);
        return sl__pthread_errf(err, e, "communicator: mutex");
    }
    if ((e = pthread_cond_init(&c->cond, NULL)) != 0) {
        pthread_mutex_destroy(&c->lock);
        free(c->bufs);
        free(c->work_ms);
        free(c->result);
        free(c);
        return sl__pthread_errf(err, e, "communicator: condition variable");
    }
    *out = &c->base;
    return SL_OK;
}
