/* comm.h: the communicator seam between a replica's backward and its
 * update (as Horovod's and DDP's are): the replicas of one model, one per
 * device, each call allreduce once per step with their gradients fused
 * into one buffer, and each gets the mean back. The training loops call
 * only this table; what moves the bytes is behind it: in one process, the
 * replicas' own buffers (exec/comm_local.c); across processes, MPI
 * (exec/comm_mpi.c: the replicas of this process first, then the ranks).
 *
 * Rules every kind keeps:
 *   - allreduce sums in an order fixed by the ranks and the length (in
 *     process: rank 0, 1, 2, ...), never by timing, so runs repeat bit for
 *     bit and every rank gets the same bits;
 *   - a call that cannot complete (another rank failed, a stop) returns a
 *     status instead of waiting for ever: abort wakes every rank waiting,
 *     and every later call fails at once with the reason abort was given. */
#ifndef SLUICE_EXEC_COMM_H
#define SLUICE_EXEC_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef struct sl__comm sl__comm;

/* The ranks of a communicator: size threads of this process, each one a
 * rank; across processes, every process holds size of them. */
typedef struct sl__comm_iface {
    const char *kind; /* "local", "mpi" */
    /* Replaces buf[0..n) of every rank by the mean over ranks; returns when
     * this rank's buf holds it. buf has room for n_max + 2 floats: the two
     * past n_max are the communicator's (MPI carries its control words
     * there with the data). SL_ECANCELED (err says why) after abort. */
    int (*allreduce_mean)(sl__comm *c, int rank, float *buf, size_t n, sl__error *err);
    /* Optional: the time rank spent moving and summing bytes, waits for the
     * others left out (ms, since the communicator was made); NULL: unknown. */
    double (*work_ms)(const sl__comm *c, int rank);
    /* Wakes every waiting rank; later calls fail with status and why. The
     * first abort's reason is kept. Across processes, the other processes
     * learn it too (they fail with "rank R: why"): abort then takes part in
     * their collective, so only a training's own threads call it. */
    void (*abort)(sl__comm *c, int status, const char *why);
    /* Optional (NULL: abort(SL_ECANCELED, "stopped")): a stop asked for
     * from any thread, never waiting; across processes the next
     * collective carries it and every process stops. */
    void (*stop)(sl__comm *c);
    /* Optional (NULL: 0): 1 once a stop reached this process from another. */
    int (*stopped)(const sl__comm *c);
    /* Optional (NULL: agree): the training's last collective, by local
     * rank 0 of every process; it closes the communicator. */
    int (*finish)(sl__comm *c, uint64_t value, int *same, sl__error *err);
    /* Optional (NULL: one process, nothing to compare): called by local
     * rank 0 of every process at the same point, *same is 1 when every
     * process gave the same value. */
    int (*agree)(sl__comm *c, uint64_t value, int *same, sl__error *err);
    void (*free)(sl__comm *c);
} sl__comm_iface;

struct sl__comm {
    const sl__comm_iface *iface;
    int size;       /* ranks in this process */
    int processes;  /* processes taking part (1 in process) */
    int process;    /* this one's index among them */
};

/* An in-process communicator for size ranks, each a thread of this
 * process; n_max is the longest buffer allreduce will be given. */
int sl__comm_local_new(sl__comm **out, int size, size_t n_max, sl__error *err);

/* Makes an in-process communicator (sl__comm_local_new's, no other) take
 * at least a ring allreduce's time on a network of gbit_s Gbit/s and
 * latency_us per message (train_options.h, sim_network_*). */
void sl__comm_local_sim_network(sl__comm *c, double gbit_s, double latency_us);
/* That time, in ms, for n floats over size ranks. */
double sl__ring_allreduce_ms(size_t n, int size, double gbit_s, double latency_us);

/* For tests: the ranks waiting at the in-process communicator's barrier. */
int sl__comm_local_arrived(sl__comm *c);

/* Across the processes of sl_distributed_init, size ranks in this one:
 * SL_ESTATE when MPI is not there or not initialized. */
int sl__comm_mpi_new(sl__comm **out, int size, size_t n_max, sl__error *err);

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

/* SL_OK and *same 1 when every process gave value (one process: 1). */
static inline int sl__comm_agree(sl__comm *c, uint64_t value, int *same, sl__error *err)
{
    *same = 1;
    return c->iface->agree ? c->iface->agree(c, value, same, err) : 0;
}

static inline void sl__comm_stop(sl__comm *c)
{
    if (c->iface->stop)
        c->iface->stop(c);
    else
        c->iface->abort(c, SL_ECANCELED, "stopped");
}

static inline int sl__comm_stopped(const sl__comm *c)
{
    return c->iface->stopped ? c->iface->stopped(c) : 0;
}

static inline int sl__comm_finish(sl__comm *c, uint64_t value, int *same, sl__error *err)
{
    *same = 1;
    if (c->iface->finish)
        return c->iface->finish(c, value, same, err);
    return sl__comm_agree(c, value, same, err);
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
