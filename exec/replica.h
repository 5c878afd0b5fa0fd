/* replica.h: data-parallel training on several devices of one process.
 * Each device holds a replica of the model: its own executor, its own
 * compiled training step and its own copy of every parameter (replica 0
 * is the model itself: its device, executor, step and the graph's values).
 * A global step is one batch per replica: each runs forward and backward
 * on its batch, the replicas' gradients are averaged through the
 * communicator (exec/comm.h), fused into one buffer as Horovod does, and
 * each runs the same update on the same mean, so every replica holds the
 * same bits after every step. */
#ifndef SLUICE_EXEC_REPLICA_H
#define SLUICE_EXEC_REPLICA_H

#include <stdatomic.h>
#include <stdint.h>

#include "devices/channel.h"
#include "exec/comm.h"
#include "exec/model_impl.h"

#define SL__MAX_REPLICAS SL__CHANNEL_MAX_DEVICES

typedef struct sl__replica {
    int rank;
    sl_device *dev;          /* rank 0: the model's (not owned) */
    sl_executor *ex;         /* rank 0: the model's (not owned) */
    sl_step *step;           /* rank 0: the model's train step (not owned) */
    float **values;          /* (graph nodes) rank > 0: each parameter's values */
    void *block;             /* rank > 0: one device block holding them */
    size_t block_bytes;
    float *fused;            /* (nfused) gradients, then the loss and a
                              * 1 when this replica had a batch */
    void *staging[SL_MAX_COLUMNS]; /* non-sink, on a device that cannot
                                    * read host memory: its batch's blocks */
    size_t staging_bytes[SL_MAX_COLUMNS];
    double compute_ms;       /* this train: forward, backward, update */
    double fuse_ms;          /* gradients into the fused buffer and back */
    double allreduce_ms;     /* in the communicator, waiting included */
    sl__error err;
} sl__replica;

typedef struct sl__replica_set {
    sl_model *m;
    int n;
    sl__replica reps[SL__MAX_REPLICAS];
    sl__comm *comm;
    size_t ngrad;            /* gradient elements of a step */
    size_t nfused;           /* ngrad + 2 (each fused buffer has room for two
                              * more floats: the communicator's, comm.h) */
    int distributed;         /* the communicator spans processes (MPI ranks) */
    int check_every_step;    /* across processes: compare the parameters'
                              * hashes after every update */
    int64_t updates;         /* global steps this set ran (for messages) */
    /* The first replica to fail, -1 while none has: its error is the one
     * train reports; the others were stopped by it. */
    atomic_int failed;
} sl__replica_set;

/* Splits a device list ("cpu:0,cpu:1") into names, refusing an empty item,
 * a name given twice, devices of different kinds and more than
 * SL__MAX_REPLICAS; the kind and index are checked when each is opened. */
int sl__parse_device_list(const char *list, char names[][32], int *n, sl__error *err);
/* Makes the replicas of m for the devices of o->devices (NULL: the model's
 * own; the first must be the model's device) with copies of the model's
 * current parameters. o->distributed: they are this process's part of a
 * job across MPI ranks (include/sluice/distributed.h) and the communicator
 * spans the ranks; otherwise it is in process, with o's modelled network
 * if any. */
int sl__replicas_new(sl_model *m, const sl_train_options *o, sl__replica_set **out);
void sl__replicas_free(sl__replica_set *rs);
/* Copies replica 0's parameters (the model's) into every other replica. */
int sl__replicas_sync(sl__replica_set *rs);
/* One global step's part on replica r, on the calling thread with r's
 * compute team: forward and backward on feed (NULL: r has no batch, at the
 * end of an epoch), the allreduce, then the update when every replica had
 * a batch (*stepped 1; the mean loss in *loss). Otherwise no replica
 * updates (*stepped 0): the batches of a global step the epoch could not
 * fill are dropped. */
int sl__replica_step(sl__replica_set *rs, int r, sl_tensor *const *feed, size_t n,
                     int *stepped, float *loss);
/* Records that replica r failed (its err says why), if it is the first,
 * and wakes the others: the communicator aborts, and ch (if not NULL) is
 * interrupted so that their GetNext returns. */
void sl__replicas_fail(sl__replica_set *rs, int r, sl__channel *ch);
/* Non-sink mode: one global step from the host, feeds[r] replica r's
 * batch (n tensors each; NULL: none, at the end of an epoch), each replica
 * on its executor's thread (a batch is first copied into its device's
 * staging blocks where the device cannot read host memory). *stepped 1
 * when every replica (of every rank) had a batch and updated, the mean
 * loss in *loss. On failure the message, naming the device that failed
 * first, is in the model's error. */
int sl__replicas_run_step(sl__replica_set *rs, sl_tensor *const *const *feeds, size_t n,
                          float *loss, int *stepped);
/* The replicas' times, averaged over them, and the global steps run. */
void sl__replicas_get_stats(const sl__replica_set *rs, int64_t steps, sl_parallel_stats *out);
/* 1 when every replica's parameters equal replica 0's, bit for bit. */
int sl__replicas_equal(const sl__replica_set *rs);
/* A hash of the model's (replica 0's) parameters and accumulators. */
uint64_t sl__replicas_hash(const sl__replica_set *rs);
/* After training: every replica of this process equals replica 0, and
 * (distributed) every process holds the same bits, compared by hash in
 * the training's last collective, which also carries a stop of this rank
 * (then SL_OK, the model's stop set). Distributed, every process that
 * trained without error calls it at the same point. On a difference the
 * model's error says where. */
int sl__replicas_check(sl__replica_set *rs);
/* Training ended on this process's error (in m->err): the other processes,
 * if they do not know of it yet, learn it from the communicator. */
void sl__replicas_leave_on_error(sl__replica_set *rs);

#endif
