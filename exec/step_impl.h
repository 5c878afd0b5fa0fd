/* step_impl.h: a compiled step and its executor, for the executor's files.
 * The plan (plan.c) says where each value lives; compute.c runs one node on
 * one thread's share; step.c ties them together in both modes. */
#ifndef SLUICE_EXEC_STEP_IMPL_H
#define SLUICE_EXEC_STEP_IMPL_H

#include <pthread.h>

#include "sluice/step.h"
#include "core/pool.h"
#include "exec/graph_impl.h"
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

/* Where one node's value lives. */
typedef enum sl__storage {
    SL__STORE_NONE = 0, /* updates: no value */
    SL__STORE_INPUT,    /* bound at each run to the fed tensor */
    SL__STORE_PARAM,    /* the graph's persistent values */
    SL__STORE_ALIAS,    /* a reshape: its root's buffer */
    SL__STORE_TEMP      /* an arena slot (GRAPH) or a malloc'd block (PYNATIVE) */
} sl__storage;

/* GRAPH mode runs some pairs of nodes as one (sl__plan_fuse): the first
 * node's work moves into the second, which reads the first's inputs. */
typedef enum sl__fusion {
    SL__FUSED_NONE = 0,
    SL__FUSED_AWAY,          /* runs inside another slot: nothing to do */
    SL__FUSED_RELU_POOL,     /* max_pool2d reading the relu's input */
    SL__FUSED_RELU_POOL_DX,  /* relu_grad of a fused pool: from the pool's
                              * dout, argmax and output */
    SL__FUSED_CONV_RELU_POOL /* a fused relu + max_pool2d that also runs the
                              * conv2d before them, one sample at a time:
                              * reads the conv's input and weight */
} sl__fusion;

/* Samples a fused conv2d + relu + max_pool2d runs the conv on at once
 * (exec/fuse.c): LeNet's first conv's output of 8 samples is 150 KB. */
#define SL__CONV_POOL_CHUNK 8

typedef struct sl__slot {
    int node;            /* graph node id */
    sl__storage storage;
    int root;            /* ALIAS: the step index owning the buffer */
    size_t bytes;        /* TEMP: value (64-byte rounded) + aux */
    size_t value_bytes;  /* where the aux part starts */
    size_t scratch;      /* per-thread scratch bytes, 64-byte rounded */
    size_t offset;       /* GRAPH: value's place in the arena */
    size_t scratch_offset; /* GRAPH: scratch's place (nthreads of them) */
    int last_use;        /* step index of the last reader (or this one) */
    /* GRAPH: parameter updates that follow one another run as one job, one
     * pass over all their parameters (sl__plan_group_updates). */
    int group_first;     /* the group's first step index, or -1 */
    int group_last;      /* the group's last step index (on every member) */
    size_t group_offset; /* where this member's elements start in the group's
                          * units, rounded up to 16 so splits stay aligned */
    sl__fusion fused;
    int fused_with;      /* FUSED_*: the slot whose work this one took or gave */
    int argmax_unread;   /* a max_pool2d whose argmax (its aux) no slot reads:
                          * a forward-only step; it pools values alone */
    int in[SL__MAX_INPUTS]; /* step indices of the inputs */
    double ms;           /* time spent in this node */
} sl__slot;

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
    unsigned char *arena; /* GRAPH: every TEMP value and scratch */
    size_t arena_bytes;
    void **ptr;          /* (nslots) where each value is during a run */
    void *scratch;       /* PYNATIVE: one block sized for the largest node */
    sl_pool *pool;       /* PYNATIVE: where values come from and go back to,
                          * as an eager framework's caching allocator */
    size_t peak_bytes;   /* PYNATIVE: most bytes held at once */
    /* per-run state shared with the threads */
    int current;         /* step index being run */
    int run_begin, run_end; /* the slots a run runs: [0, nslots) but for a
                             * data-parallel replica's two halves */
    int update_from;     /* train: the first update's step index (the updates
                          * run last, after every gradient), else nslots */
    sl_tensor *const *feed;
    long bad_label;      /* -1, or the sample whose label failed */
    int run_status;
    uint64_t ticket;     /* of the posted run (sl_step_post) */
    /* With a profiler: the track each node's slice goes to, the names
     * they carry (one per slot, kept by trace_owner), and the batch. */
    struct sl__track *trace;
    const char **trace_names;
    sl_profiler *trace_owner;
    int64_t trace_epoch, trace_batch;
    int posted;          /* 1 while a posted run has not been waited for */
    sl__error err;
};

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

/* Runs one share of the step's current node. */
void sl__compute_node(void *step, const sl__share *share);
/* Runs one share of the update group starting at the current node. */
void sl__compute_updates(void *step, const sl__share *share);
/* The elements of a group member's parameter. */
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
