/* comm_mpi.c: the communicator across processes (comm.h), one Open MPI
 * rank each, with `size` ranks (replicas) of its own in each process.
 *
 * An allreduce first sums this process's ranks' buffers in rank order
 * (one rank alone: its buffer as it is), then sums those over the
 * processes with one MPI_Allreduce on the fused buffer, then divides by
 * every rank in the job. MPI's algorithm is fixed by the process count
 * and the length, so the bits repeat from run to run, and every process
 * ends with the same bits (the training checks it: agree below).
 *
 * Failures and stops travel with the data. Every collective carries two
 * more floats, the control words: a failure (1 from a process that
 * failed) and a stop (1 from a process asked to stop). A process that
 * fails takes part, from the failing thread, in the collective the others
 * are in or will be in next, with its failure word set; when the sum
 * shows a failure every process learns the lowest failed rank (MPI_MIN)
 * and its message (MPI_Bcast), wakes its own ranks, and from then on
 * fails at once with "rank R: why". So a rank's pipeline error or GetNext
 * timeout stops every rank with its message, and nobody waits on a rank
 * that has left. (A rank killed outright cannot take part: mpirun ends
 * the job then.) A stop (sl_model_stop, from any thread) only sets the
 * stop word, which the training's next collective carries; every process
 * that sees it stops as if asked to. Every collective has the same
 * length, n_max + 2 floats, so a failure or stop always meets whatever
 * collective the others are in. After the training's last collective
 * (finish) the communicator is closed: nothing more is sent.
 *
 * MPI is called from the training's threads one at a time (the in_mpi
 * token): MPI_THREAD_SERIALIZED. */
#include "exec/comm.h"

#include "config.h"
#include "sluice/distributed.h"

#ifdef SL_HAVE_MPI
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/barrier.h"
#include "exec/distributed_impl.h"

typedef struct comm_mpi {
    sl__comm base;
    sl__barrier bar;     /* this process's ranks */
    MPI_Comm comm;       /* sluice's duplicate of MPI_COMM_WORLD */
    size_t n_max;
    float **bufs;        /* (size) each local rank's buffer */
    float *sum;          /* (n_max + 2) several local ranks: their sum */
    float *ctl;          /* (n_max + 2) abort's and agree's collectives */
    int stop_here;       /* this process was asked to stop: the next
                          * collective says so */
    int stopped;         /* a process stopped: every process stops */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int in_mpi;          /* a thread of this process is in a collective */
    int failed_here;     /* this process failed or stopped */
    int done;            /* every process knows of a failure or a stop, or
                          * the training's last collective ran: no more */
    int status;          /* the failure's */
    char why[SL_ERRMSG_LEN];
} comm_mpi;

/* Takes the token for one collective; the failure's status once done. */
static int enter(comm_mpi *c, sl__error *err)
{
    int rc = SL_OK;
    pthread_mutex_lock(&c->lock);
    while (c->in_mpi && !c->done)
        pthread_cond_wait(&c->cond, &c->lock);
    if (c->done)
        rc = sl__errf(err, c->status, "%s", c->why);
    else
        c->in_mpi = 1;
    pthread_mutex_unlock(&c->lock);
    return rc;
}

static void leave(comm_mpi *c)
{
    pthread_mutex_lock(&c->lock);
    c->in_mpi = 0;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

/* Every process has seen a failure: which rank failed first, and why. */
static int learn_failure(comm_mpi *c, sl__error *err)
{
    int mine, first = INT_MAX;
    char msg[SL_ERRMSG_LEN];
    pthread_mutex_lock(&c->lock);
    mine = c->failed_here ? c->base.process : INT_MAX;
    snprintf(msg, sizeof msg, "%s", c->why);
    pthread_mutex_unlock(&c->lock);
    if (MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, c->comm) != MPI_SUCCESS ||
        first == INT_MAX ||
        MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, first, c->comm) != MPI_SUCCESS)
        snprintf(msg, sizeof msg, "a rank failed, and MPI could not say which");
    msg[sizeof msg - 1] = '\0';
    pthread_mutex_lock(&c->lock);
    c->done = 1;
    if (first != c->base.process) {
        c->status = SL_ECANCELED;
        snprintf(c->why, sizeof c->why, "rank %d: %.*s", first, (int)sizeof msg - 16, msg);
    }
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
    sl__distributed_failure_shared(1);
    sl__barrier_abort(&c->bar, c->status, c->why);
    return sl__errf(err, c->status, "%s", c->why);
}

/* Some process stopped: every process stops too (SL_ECANCELED). */
static int learn_stop(comm_mpi *c, sl__error *err)
{
    pthread_mutex_lock(&c->lock);
    c->done = 1;
    c->stopped = 1;
    c->status = SL_ECANCELED;
    snprintf(c->why, sizeof c->why, "stopped (a rank was asked to stop)");
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
    sl__barrier_abort(&c->bar, SL_ECANCELED, c->why);
    return sl__errf(err, SL_ECANCELED, "%s", c->why);
}

/* The collective, with the token held: buf[0..n_max) summed over the
 * processes, the control words after them. */
static int collective(comm_mpi *c, float *buf, sl__error *err)
{
    int rc;
    pthread_mutex_lock(&c->lock);
    buf[c->n_max] = c->failed_here ? 1.0f : 0.0f;
    buf[c->n_max + 1] = c->stop_here ? 1.0f : 0.0f;
    pthread_mutex_unlock(&c->lock);
    rc = MPI_Allreduce(MPI_IN_PLACE, buf, (int)(c->n_max + 2), MPI_FLOAT, MPI_SUM, c->comm);
    if (rc != MPI_SUCCESS) {
        char what[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, what, &len);
        pthread_mutex_lock(&c->lock);
        c->done = 1;
        c->status = SL_EIO;
        snprintf(c->why, sizeof c->why, "rank %d: MPI_Allreduce failed: %.*s", c->base.process,
                 len, what);
        pthread_mutex_unlock(&c->lock);
        sl__barrier_abort(&c->bar, SL_EIO, c->why);
        return sl__errf(err, SL_EIO, "%s", c->why);
    }
    if (buf[c->n_max] != 0.0f)
        return learn_failure(c, err);
    if (buf[c->n_max + 1] != 0.0f)
        return learn_stop(c, err);
    return SL_OK;
}

static void scale(float *buf, size_t n, int ranks)
{
    for (size_t k = 0; k < n; k++)
        buf[k] = buf[k] / (float)ranks;
}

static int mpi_allreduce_mean(sl__comm *base, int rank, float *buf, size_t n, sl__error *err)
{
    comm_mpi *c = (comm_mpi *)base;
    const int size = base->size, ranks = size * base->processes;
    int rc;

    if (rank < 0 || rank >= size || n != c->n_max)
        return sl__errf(err, SL_EINVAL,
                        "allreduce: local rank %d of %d, %zu elements where every process "
                        "gives %zu",
                        rank, size, n, c->n_max);
    if (size == 1) {
        if ((rc = enter(c, err)) < 0)
            return rc;
        rc = collective(c, buf, err);
        leave(c);
        if (rc < 0)
            return rc;
        scale(buf, n, ranks);
        return SL_OK;
    }
    c->bufs[rank] = buf; /* read by local rank 0 after the barrier */
    if ((rc = sl__barrier_wait(&c->bar, err)) < 0)
        return rc;
    if (rank == 0) {
        for (size_t k = 0; k < n; k++) {
            float s = c->bufs[0][k];
            for (int r = 1; r < size; r++)
                s += c->bufs[r][k];
            c->sum[k] = s;
        }
        rc = enter(c, err);
        if (rc == SL_OK) {
            rc = collective(c, c->sum, err);
            leave(c);
        }
        if (rc < 0) {
            sl__barrier_abort(&c->bar, rc, err ? err->msg : "allreduce failed");
            return rc;
        }
        scale(c->sum, n, ranks);
    }
    /* The next allreduce writes sum only after its first barrier, which
     * every rank reaches after this copy. */
    if ((rc = sl__barrier_wait(&c->bar, err)) < 0)
        return rc;
    memcpy(buf, c->sum, n * sizeof *buf);
    return SL_OK;
}

/* From any thread: the next collective carries the stop. */
static void mpi_stop(sl__comm *base)
{
    comm_mpi *c = (comm_mpi *)base;
    pthread_mutex_lock(&c->lock);
    c->stop_here = 1;
    pthread_mutex_unlock(&c->lock);
    /* this process's ranks waiting for each other stop now */
    sl__barrier_abort(&c->bar, SL_ECANCELED, "stopped");
}

static int mpi_stopped(const sl__comm *base)
{
    comm_mpi *c = (comm_mpi *)base;
    int s;
    pthread_mutex_lock(&c->lock);
    s = c->stopped;
    pthread_mutex_unlock(&c->lock);
    return s;
}

/* The training's last collective: a stop or failure not yet sent, or
 * the agreement on value; then the communicator is closed. */
static int mpi_finish(sl__comm *base, uint64_t value, int *same, sl__error *err)
{
    comm_mpi *c = (comm_mpi *)base;
    int rc = base->iface->agree(base, value, same, err);
    pthread_mutex_lock(&c->lock);
    c->done = 1;
    if (rc == SL_OK) {
        c->status = SL_ESTATE;
        snprintf(c->why, sizeof c->why, "the training across the ranks has ended");
    }
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
    return rc;
}

static void mpi_abort(sl__comm *base, int status, const char *why)
{
    comm_mpi *c = (comm_mpi *)base;
    int rc;
    pthread_mutex_lock(&c->lock);
    if (c->done || c->failed_here) {
        pthread_mutex_unlock(&c->lock);
        sl__barrier_abort(&c->bar, status, why);
        return;
    }
    c->failed_here = 1;
    c->status = status < 0 ? status : SL_ECANCELED;
    snprintf(c->why, sizeof c->why, "%s", why ? why : "stopped");
    pthread_mutex_unlock(&c->lock);
    sl__barrier_abort(&c->bar, c->status, c->why);
    /* Tell the other processes: join the collective they are in (or will
     * be in next) with the failure word set. Local rank 0 may carry it
     * first, in its own collective; then there is nothing left to do. */
    if (enter(c, NULL) < 0)
        return;
    memset(c->ctl, 0, (c->n_max + 2) * sizeof *c->ctl);
    rc = collective(c, c->ctl, NULL);
    (void)rc; /* the failure it reports is this one */
    leave(c);
}

/* Equal values give equal sums of their 4-bit pieces and of the pieces'
 * squares on every process; unequal ones cannot give both (the pieces'
 * variance over the processes would be 0). Sums of at most 15^2 times
 * 74,000 processes are exact in a float (below 2^24). */
static int mpi_agree(sl__comm *base, uint64_t value, int *same, sl__error *err)
{
    comm_mpi *c = (comm_mpi *)base;
    const float p = (float)base->processes;
    int rc;
    *same = 0;
    if (c->n_max < 32)
        return sl__errf(err, SL_EINVAL, "agree: the communicator holds %zu floats, fewer "
                        "than 32", c->n_max);
    if ((rc = enter(c, err)) < 0)
        return rc;
    memset(c->ctl, 0, (c->n_max + 2) * sizeof *c->ctl);
    for (int i = 0; i < 16; i++) {
        float b = (float)((value >> (4 * i)) & 0xf);
        c->ctl[i] = b;
        c->ctl[16 + i] = b * b;
    }
    rc = collective(c, c->ctl, err);
    leave(c);
    if (rc < 0)
        return rc;
    *same = 1;
    for (int i = 0; i < 16; i++) {
        float b = (float)((value >> (4 * i)) & 0xf);
        if (c->ctl[i] != p * b || c->ctl[16 + i] != p * b * b)
            *same = 0;
    }
    return SL_OK;
}

static void mpi_free(sl__comm *base)
{
    comm_mpi *c = (comm_mpi *)base;
    sl__barrier_destroy(&c->bar);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->lock);
    free(c->bufs);
    free(c->sum);
    free(c->ctl);
    free(c);
}

static const sl__comm_iface mpi_iface = {
    .kind = "mpi",
    .allreduce_mean = mpi_allreduce_mean,
    /* no work_ms: MPI's time cannot be told from waiting for the others */
    .abort = mpi_abort,
    .stop = mpi_stop,
    .stopped = mpi_stopped,
    .agree = mpi_agree,
    .finish = mpi_finish,
    .free = mpi_free,
};

int sl__comm_mpi_new(sl__comm **out, int size, size_t n_max, sl__error *err)
{
    comm_mpi *c;
    int e, rc;
    *out = NULL;
    if (!sl_distributed_initialized())
        return sl__errf(err, SL_ESTATE, "distributed: MPI is not initialized in this process "
                        "(sl_distributed_init; from Python, sluice.communication.init())");
    if (size < 1 || n_max + 2 > (size_t)INT_MAX)
        return sl__errf(err, SL_EINVAL, "communicator: %d ranks, %zu floats", size, n_max);
    c = calloc(1, sizeof *c);
    if (!c)
        return sl__errf(err, SL_ENOMEM, "communicator: out of memory");
    c->base.iface = &mpi_iface;
    c->base.size = size;
    c->base.processes = sl_distributed_size();
    c->base.process = sl_distributed_rank();
    sl__distributed_failure_shared(0); /* a new training: nothing shared yet */
    c->comm = sl__distributed_comm();
    c->n_max = n_max;
    c->bufs = calloc((size_t)size, sizeof *c->bufs);
    c->sum = calloc(n_max + 2, sizeof *c->sum);
    c->ctl = calloc(n_max + 2, sizeof *c->ctl);
    if (!c->bufs || !c->sum || !c->ctl) {
        rc = sl__errf(err, SL_ENOMEM, "communicator: out of memory for %zu floats", n_max);
        goto fail;
    }
    if ((rc = sl__barrier_init(&c->bar, size, err)) < 0)
        goto fail;
    if ((e = pthread_mutex_init(&c->lock, NULL)) != 0) {
        sl__barrier_destroy(&c->bar);
        rc = sl__pthread_errf(err, e, "communicator: mutex");
        goto fail;
    }
    if ((e = pthread_cond_init(&c->cond, NULL)) != 0) {
        pthread_mutex_destroy(&c->lock);
        sl__barrier_destroy(&c->bar);
        rc = sl__pthread_errf(err, e, "communicator: condition variable");
        goto fail;
    }
    *out = &c->base;
    return SL_OK;
fail:
    free(c->bufs);
    free(c->sum);
    free(c->ctl);
    free(c);
    return rc;
}
#else
int sl__comm_mpi_new(sl__comm **out, int size, size_t n_max, sl__error *err)
{
    (void)size;
    (void)n_max;
    *out = NULL;
    return sl__errf(err, SL_ESTATE, "distributed: %s", sl_distributed_why_not());
}
#endif
