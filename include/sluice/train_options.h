/* train_options.h: how sl_model_train_opts feeds the steps (sl_train_options:
 * sink mode, sink size, the device queue, resume, autotune), who copies the
 * batches in sink mode (sl_transfer_mode), and what a sink-mode train
 * measured (sl_sink_stats, the stage stats). */
#ifndef SLUICE_TRAIN_OPTIONS_H
#define SLUICE_TRAIN_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/export.h"
#include "sluice/stages.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The model these calls apply to (model.h). */
typedef struct sl_model sl_model;

/* How sl_model_train_opts feeds the steps (the seeds' dataset_sink_mode and
 * sink_size). Versioned like the others: call sl_train_options_init first. */
typedef struct sl_train_options {
    size_t size;             /* sizeof the struct as the caller compiled it; set by the _init */
    int dataset_sink_mode;   /* 0 (default): the host feeds every step, callbacks
                              * see every step. 1: data sinking: a transfer
                              * thread copies batches into the device's queue
                              * and the executor runs sink_size steps back to
                              * back, pulling them with GetNext; callbacks see
                              * one step_end per sink */
    int32_t unused0;         /* keeps sink_size 8-aligned; never used */
    int64_t sink_size;       /* sink mode: -1 (default): each epoch sinks the
                              * whole dataset; > 0: each epoch runs sink_size
                              * steps of an endless traversal that the next
                              * epoch continues (epochs x sink_size steps) */
    int64_t queue_capacity;  /* device queue slots (default 4) */
    int64_t queue_max_bytes; /* device bytes the slots may take (0: no cap) */
    int64_t getnext_timeout_ms; /* GetNext fails when no batch comes for this
                              * long, naming what starves it (default 300000;
                              * -1: wait for ever) */
    int64_t max_steps;       /* stop after this many steps of this call (0,
                              * default: no limit); in sink mode the sink
                              * that reaches it is cut short */
    /* 1: continue the run that the model's global step belongs to (after
     * sl_model_load of a checkpoint that run wrote): the data reads on from
     * exactly where that step left it, and epochs and max_steps count from
     * that run's start, so the run ends as if it had never stopped. The
     * dataset must have the run's seed and batches per epoch. 0 (default):
     * a new run from the dataset's start. */
    int32_t resume;
    int32_t unused1;         /* keeps transfer 8-aligned; never used */
    /* Sink mode: who copies each batch into the device's queue
     * (sl_transfer_mode). SL_TRANSFER_AUTO (default) picks
     * sl_model_transfer_mode's answer. */
    int32_t transfer;
    int32_t unused2;         /* keeps profiler 8-aligned; never used */
    /* When set, a sink-mode train records its timeline into it (see
     * profiler.h): the pipeline's chunks, the transfer's copies, GetNext,
     * each step and its ops. Default NULL. */
    struct sl_profiler *profiler;
    /* 1: tune the pipeline while training runs, as
     * sl_iterator_options.autotune does (its map workers and queues, from
     * the stage counters; a change that lost throughput is undone), in
     * sink mode and without; in sink mode with a transfer thread, also the
     * device queue's depth: twice the slots (up to 32, and 256 MiB of
     * them) when GetNext waited while a batch waited for a free slot.
     * Lines saying what changed and why go to autotune_log (may be NULL),
     * called on the thread that reads the pipeline (the transfer thread in
     * sink mode). Default 0. */
    int32_t autotune;
    int32_t autotune_max_workers; /* 0 (default): the iterator's (the CPUs) */
    void (*autotune_log)(void *arg, const char *line);
    void *autotune_log_arg;
    /* Data parallel on several devices of one kind: "cpu:0,cpu:1", the
     * model's own device first (NULL, default: the model's device alone).
     * Each device holds a replica of the parameters and runs forward and
     * backward on a batch of its own; their gradients are averaged (summed
     * in device order, so runs are bit-identical) and every replica
     * applies the same update. A step is global: one batch per device, so
     * the global batch is the network's batch times the devices, and
     * sink_size, max_steps and the callbacks' steps count global steps;
     * the loss reported is the mean over devices. Batch i of an epoch goes
     * to device i mod N; the last batches of an epoch that do not fill a
     * global step are dropped. Sink mode uses a transfer thread. */
    const char *devices;
    /* 1: data parallel across the job's ranks too (include/sluice/
     * distributed.h; sl_distributed_init first). Every rank trains on its
     * own shard of the data (the dataset's num_shards and shard_id: the
     * ranks and this rank) with the devices above (default: the model's);
     * the gradients are averaged over every device of every rank, so every
     * rank holds the same parameters. A global step is one batch per
     * device per rank; the loss reported is the mean over all of them. The
     * ranks vote once an epoch, so a rank whose shard holds fewer batches
     * makes all of them drop the global step it could not fill. A rank's
     * error stops every rank with its message ("rank R: ..."). At the end
     * the ranks compare a hash of their parameters. Default 0. */
    int32_t distributed;
    /* 1 (with distributed): compare the ranks' parameters after every
     * step, not only at the end; costs one small collective a step. */
    int32_t check_replicas;
    /* Several devices in one process: model a network between them. Each
     * allreduce then takes at least what a ring allreduce of its bytes B
     * over N devices would on that network, 2(N-1)/N x B / bandwidth +
     * 2(N-1) x latency (the devices' own summing overlaps it), so the cost
     * of a real network can be measured on one machine. 0 (default): none. */
    double sim_network_gbit_s;
    double sim_network_latency_us;
} sl_train_options;

/* Who moves batches from the pipeline into a device's queue in sink mode.
 * THREAD: a transfer thread, so copies overlap steps. INLINE: the
 * executor's own thread, its compute team sharing the copy, just before
 * GetNext takes the batch: no thread to wake once per batch, for a device
 * that reads host memory (cpu). When the team has a thread for every CPU,
 * the pipeline's map+batch also runs on it between steps once its batches
 * proved cheap (a lazy source and one map+batch stage): no pipeline thread
 * then takes a CPU from a step. AUTO picks INLINE on such a cpu device,
 * the thread elsewhere (see exec/train.c). */
typedef enum sl_transfer_mode {
    SL_TRANSFER_AUTO = 0,
    SL_TRANSFER_THREAD = 1,
    SL_TRANSFER_INLINE = 2
} sl_transfer_mode;

/* Where a sink-mode train's time went (sl_model_get_sink_stats). */
typedef struct sl_sink_stats {
    int64_t sinks;           /* host<->device round trips of sinks */
    int64_t steps;
    int64_t batches_sent;    /* by the transfer thread */
    double getnext_wait_ms;  /* the executor waiting in GetNext */
    double channel_full_ms;  /* the pipeline blocked on a full channel */
    double transfer_copy_ms; /* the transfer thread copying into slots */
    double transfer_wait_ms; /* the transfer thread waiting for the pipeline */
} sl_sink_stats;

/* Where a train on several devices (sl_train_options.devices) spent each
 * device's time (sl_model_get_parallel_stats), averaged over the devices. */
typedef struct sl_parallel_stats {
    int devices;             /* of the last train (1: the model's alone) */
    int64_t steps;           /* global steps it ran */
    double compute_ms;       /* forward, backward and update */
    double fuse_ms;          /* copying gradients into the fused buffer and back */
    double allreduce_ms;     /* in the communicator: the reduction, and waiting
                              * for the slowest device to arrive */
    double reduce_ms;        /* of that, summing and copying alone (-1: the
                              * communicator cannot say) */
    int64_t allreduce_floats; /* floats each allreduce carried: the gradients,
                               * the loss and a flag */
    int ranks;               /* MPI ranks of the last train (1: this process) */
} sl_parallel_stats;

SL_API void sl_train_options_init_sized(sl_train_options *o, size_t size);
static inline void sl_train_options_init(sl_train_options *o)
{
    sl_train_options_init_sized(o, sizeof *o);
}
/* The last train's figures on several devices (devices 1 and zeros after
 * a train on one, or before any). */
SL_API void sl_model_get_parallel_stats(const sl_model *m, sl_parallel_stats *out);
/* The last sink-mode train's figures (zeros before one). */
SL_API void sl_model_get_sink_stats(const sl_model *m, sl_sink_stats *out);
/* Each stage of the last sink-mode train, as it ended: the pipeline's
 * stages, "transfer" (its output is the device queue), "executor" (rows:
 * steps; waiting: GetNext; blocked: idle between sinks, while the host runs
 * callbacks) and "host" (rows: sinks; waiting: for the device; busy: its
 * callbacks). Fills at most max entries of out and returns how many there
 * are (0 before a sink-mode train). */
SL_API size_t sl_model_get_stage_stats(const sl_model *m, sl_stage_stats *out, size_t max);
/* The transfer a sink-mode train with options o would use on m's device:
 * SL_TRANSFER_THREAD or SL_TRANSFER_INLINE (AUTO resolved: inline on a
 * device that reads host memory when the compute threads fill the CPUs,
 * else the thread). o NULL: the defaults. */
SL_API sl_transfer_mode sl_model_transfer_mode(const sl_model *m, const sl_train_options *o);
/* "auto", "thread", "inline"; and back (SL_EINVAL for another name). */
SL_API const char *sl_transfer_mode_name(sl_transfer_mode mode);
SL_API int sl_transfer_mode_parse(const char *name, sl_transfer_mode *out);

#ifdef __cplusplus
}
#endif
#endif
