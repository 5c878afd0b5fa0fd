/* step_impl.h: a compiled step and its executor, for the executor's files.
 * The plan (plan.c) says where each value lives; compute.c runs one node on
 * one thread's share; step.c ties them together in both modes. */
#ifndef SLUICE_EXEC_STEP_IMPL_H
#define SLUICE_EXEC_STEP_IMPL_H

#include <pthread.h>

#include "sluice/step.h"
#include "core/pool.h"
#include "exec/graph_impl.h"
#include "devices/device_impl.h"
#include "devices/program.h"
#include "devices/team.h"
#include "core/trace.h"

struct sl_executor {
    sl__team team;          /* thread 0 is whoever runs a step: the executor's
                             * own thread, or a caller running in place */
    pthread_t thread;
    int started;            /* 1 running, -1 failed to start */
    int init_status;
    int blas_threads;
    int64_t spin_ns;        /* asked for (-1: the team's default) */
    uint64_t cpu_mask;      /* the CPUs its threads run on (0: the process's) */
    pthread_mutex_t lock;   /* guards the job slot and the tickets */
    pthread_cond_t cond;    /* slot filled or freed, job done, stop (monotonic) */
    pthread_mutex_t team_lock; /* held by whoever runs on the team */
    /* the job slot: the job of ticket `posted`, until the thread takes it */
    void (*job)(void *arg);
    void *job_arg;
    uint64_t posted, taken, done; /* tickets handed out, taken, finished */
    int stop;
};

struct sl_step {
    sl_graph *g;
    sl_executor *ex;
    sl_mode mode;
    int train;
    sl__slot *slots;     /* (nslots) the nodes run, in order */
    int nslots;
    int *node_slot;      /* graph node id -> step index, -1 if not run */
    int *inputs;         /* step indices of the input nodes, in graph order */
    size_t ninputs;
    int *outputs;        /* step indices of the outputs */
    size_t noutputs;
    size_t arena_bytes;  /* GRAPH: every TEMP value and scratch */
    /* The program lowered from the plan, and the device it is loaded on:
     * the device holds the values (dp->ptr) and runs the kernels. */
    sl_device *dev;
    int own_dev;         /* 1: dev was opened for this step (sl_step_new) */
    sl__prog_node *nodes; /* (graph nodes) what the device needs of each */
    sl__program prog;
    sl__device_program *dp;
    int run_begin, run_end; /* the slots a run runs: [0, nslots) but for a
                             * data-parallel replica's two halves */
    int update_from;     /* train: the first update's step index (the updates
                          * run last, after every gradient), else nslots */
    uint64_t ticket;     /* of the posted run (sl_step_post) */
    int run_status;
    /* With a profiler: the names each node's slice carries (one per slot,
     * kept by trace_owner). */
    const char **trace_names;
    sl_profiler *trace_owner;
    int posted;          /* 1 while a posted run has not been waited for */
    sl__error err;
};

/* sl_step_new on device dev (the step's program is loaded there; dev must
 * outlive the step). */
int sl__step_new_on(sl_step **out, sl_graph *g, sl_executor *ex, sl_device *dev, sl_mode mode,
                    const int *outputs, size_t noutputs, int train);
/* The value of slot j where the device keeps it during and after a run. */
static inline void *sl__step_value(const sl_step *s, int j)
{
    return s->dp->ptr[j];
}

/* Picks the nodes to run and fills slots, storage, sizes and lifetimes. */
int sl__plan_select(sl_step *s, const int *outputs, size_t noutputs, int train);
/* GRAPH mode, before lifetimes are set: fuses each relu whose output
 * only a max_pool2d reads (and, in training, that pool's gradient and the
 * relu's), saving a pass over memory each way; then the conv2d before
 * such a pair, when the pair alone reads its output. */
void sl__plan_fuse(sl_step *s, const int *outputs, size_t noutputs);
/* The op a slot runs as, for reports: fused slots say so. */
const char *sl__slot_op_name(const sl_step *s, int j);
/* How many of in[] slot j reads: its node's inputs, or more when a fusion
 * gave it another node's. */
int sl__slot_num_inputs(const sl_step *s, int j);
/* Makes the next runs record a slice per node into track (NULL: stop),
 * for batch `batch` of epoch `epoch`; node names are interned into p once
 * and kept while p is given. p NULL forgets them: call it so before the
 * profiler is freed. Returns SL_OK or SL_ENOMEM (nothing is recorded). */
int sl__step_trace(sl_step *s, sl_profiler *p, struct sl__track *track, int64_t epoch,
                   int64_t batch);
/* GRAPH mode: groups runs of consecutive parameter updates (momentum or
 * SGD) so that each run is one job of the team over all its parameters,
 * instead of one job (and one wait for the helpers) per parameter. */
void sl__plan_group_updates(sl_step *s);
/* GRAPH mode: assigns arena offsets; sets arena_bytes. */
int sl__plan_arena(sl_step *s);

/* Data-parallel replicas (exec/replica.c). */
/* Points the step's parameter slots at values[node] (an array indexed by
 * graph node id) instead of the graph's own values. */
void sl__step_bind_params(sl_step *s, float *const *values);
/* Runs slots [begin, end) of the step on the calling thread with the
 * executor's team, inputs bound as sl_step_run_here; a replica runs
 * [0, update_from) (forward, backward), then, once gradients are reduced,
 * [update_from, nslots) with no inputs (NULL, 0). */
int sl__step_run_slots(sl_step *s, sl_tensor *const *inputs, size_t ninputs, int begin, int end);
/* The gradient slot update slot j reads, and its elements. */
int sl__step_update_grad(const sl_step *s, int j);

/* The elements of update slot j's parameter. */
size_t sl__update_numel(const sl_step *s, int j);

/* sl_executor_new whose threads run on the CPUs of cpu_mask (bit i: CPU
 * i; 0: wherever the process may), a device's reserved cores: the team
 * sizes itself to them. SL_EINVAL when the system refuses the mask. */
int sl__executor_new_on(sl_executor **out, const sl_executor_options *o, uint64_t cpu_mask);
/* Posts job(arg) to the executor's thread: waits while the slot holds
 * another caller's job, then returns at once with the job's ticket.
 * SL_ECLOSED once the executor is being freed. */
int sl__executor_post(sl_executor *ex, void (*job)(void *arg), void *arg, uint64_t *ticket);
/* Waits until the job of `ticket` is done: SL_OK, or SL_ETIMEDOUT after
 * timeout_ms (< 0: no limit); the job still runs, and must be waited for
 * again before what it uses is freed. */
int sl__executor_wait(sl_executor *ex, uint64_t ticket, int timeout_ms);
/* Post and wait; called from within a job (on the executor's own thread)
 * it runs job(arg) there at once instead of waiting on itself. */
void sl__executor_call(sl_executor *ex, void (*job)(void *arg), void *arg);
/* Runs job(arg) on the calling thread with the executor's team, once no
 * one else runs on it. */
void sl__executor_call_here(sl_executor *ex, void (*job)(void *arg), void *arg);
/* 1 on the executor's own thread. */
int sl__executor_on_own_thread(const sl_executor *ex);

#endif
