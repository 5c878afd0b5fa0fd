/* comm.h: the communicator seam between a replica's backward and its
 * update (as Horovod's and DDP's are): the replicas of one model, one per
 * device, each call allreduce once per step with their gradients fused
 * into one buffer, and each gets the mean back. The training loops call
 * only this table; what moves the bytes is behind it: in one process, the
 * replicas' own buffers (exec/comm_local.c); across processes, MPI (the
 * next kind).
 *
 * Rules every kind keeps:
 *   - allreduce sums in a fixed order (rank 0, 1, 2, ...), so the result
 *     never depends on timing and every rank gets the same bits;
 *   - a call that cannot complete (another rank failed, a stop) returns a
 *     status instead of waiting for ever: abort wakes every rank waiting,
 *     and every later call fails at once with the reason abort was given. */
#ifndef SLUICE_EXEC_COMM_H
#define SLUICE_EXEC_COMM_H

#include <stddef.h>

#include "core/error.h"

typedef struct sl__comm sl__comm;

typedef struct sl__comm_iface {
    const char *kind; /* "local" */
    /* Replaces buf[0..n) of every rank by the mean over ranks; returns when
     * this rank's buf holds it. SL_ECANCELED (err says why) after abort. */
    int (*allreduce_mean)(sl__comm *c, int rank, float *buf, size_t n, sl__error *err);
    /* Optional: the time rank spent moving and summing bytes, waits for the
     * others left out (ms, since the communicator was made); NULL: unknown. */
    double (*work_ms)(const sl__comm *c, int rank);
    /* Wakes every waiting rank; later calls fail with status and why. The
     * first abort's reason is kept. */
    void (*abort)(sl__comm *c, int status, const char *why);
    void (*free)(sl__comm *c);
} sl__comm_iface;

struct sl__comm {
    const sl__comm_iface *iface;
    int size; /* ranks */
};

/* An in-process communicator for size ranks, each a thread of this
 * process; n_max is the longest buffer allreduce will be given. */
int sl__comm_local_new(sl__comm **out, int size, size_t n_max, sl__error *err);

static inline int sl__comm_allreduce_mean(sl__comm *c, int rank, float *buf, size_t n,
                                          sl__error *err)
{
    return c->iface->allreduce_mean(c, rank, buf, n, err);
}

/* rank's time moving and summing bytes (ms), or -1 when the kind cannot say. */
static inline double sl__comm_work_ms(const sl__comm *c, int rank)
{
    return c->iface->work_ms ? c->iface->work_ms(c, rank) : -1.0;
}

static inline void sl__comm_abort(sl__comm *c, int status, const char *why)
{
    c->iface->abort(c, status, why);
}

static inline void sl__comm_free(sl__comm *c)
{
    if (c)
        c->iface->free(c);
}

#endif
