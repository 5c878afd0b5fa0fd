/* model.h: MindSpore's Model for C: a network with its loss and optimizer,
 * compiled once into a training step and an evaluation step, with
 * train(epochs, dataset, callbacks) and eval(dataset). sl_model_train is
 * the non-sink path of the seeds: the host takes each batch from the
 * dataset's iterator, runs the step with the executor's team (on its own
 * thread, as sl_step_run_here does) and runs the callbacks after every
 * step. sl_model_train_opts can sink the data instead (see
 * sl_train_options; data_sink and the dataset helper are in sink.h).
 *
 * Errors: every call returns a status; the message (naming the epoch and
 * step, the op, the file) is in sl_model_last_error(). */
#ifndef SLUICE_MODEL_H
#define SLUICE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/bench.h" /* sl_model_bench_steps, declared here before */
#include "sluice/dataset.h"
#include "sluice/device.h"
#include "sluice/export.h"
#include "sluice/graph.h"
#include "sluice/stages.h"
#include "sluice/network.h"
#include "sluice/step.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Options structs are versioned (see sluice.h): each starts with its size,
 * which its _init records; always call the _init before setting fields.
 * New fields are only ever appended. */

/* MindSpore's context as a value passed to the model (no global state).
 * It lives inside sl_model_options and so never grows. */
typedef struct sl_context {
    size_t size;             /* sizeof the struct as the caller compiled it; set by the _init */
    sl_mode mode;            /* SL_GRAPH_MODE (default) or SL_PYNATIVE_MODE */
    const char *device_target; /* "CPU" (the only device today) */
    int device_id;           /* 0 */
    int save_graphs;         /* 1: write the compiled steps as .ir and .dot */
    const char *save_graphs_path; /* where (default ".") */
    int threads;             /* the executor's compute threads (default 2, or 1
                              * on a one-CPU machine) */
    int blas_threads;        /* OpenBLAS threads (default 1) */
} sl_context;

typedef enum sl_optimizer_kind {
    SL_OPTIMIZER_MOMENTUM = 0,
    SL_OPTIMIZER_SGD
} sl_optimizer_kind;

typedef struct sl_model_options {
    size_t size;             /* sizeof the struct as the caller compiled it; set by the _init */
    sl_network_options network;
    sl_optimizer_kind optimizer; /* default Momentum */
    float learning_rate;     /* default 0.01 */
    float momentum;          /* default 0.9 */
    uint64_t seed;           /* parameter initialisation (default 0) */
    sl_context context;
    int64_t data_timeout_ms; /* train and eval fail when no batch comes for this
                              * long, naming the stalled pipeline stage
                              * (default 300000: 5 minutes; -1: wait for ever) */
    int64_t compute_spin_ns; /* the executor's spin before a wait sleeps
                              * (sl_executor_options.spin_ns; default -1) */
    const sl_device_options *device_options; /* for the device the context
                              * names (device_target "CPU" or "SIM", device_id
                              * its index); NULL: the defaults */
} sl_model_options;

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

typedef struct sl_model sl_model;

/* What callbacks see, MindSpore's cb_params. Counts start at 1. */
typedef struct sl_train_info {
    int64_t epoch, epoch_num;
    int64_t step_in_epoch;   /* steps done in this epoch */
    int64_t steps_per_epoch; /* -1 when unknown */
    int64_t global_step;     /* steps done since the model was made */
    int64_t batch_size;
    float loss;              /* of the last step */
    double step_ms;          /* the last step, host to host */
    double epoch_ms;         /* the epoch so far (at epoch end: all of it) */
    sl_model *model;
} sl_train_info;

/* A callback: any function may be NULL. A positive return stops training
 * (train returns 0); a negative one is an error, which train returns, with
 * the message the callback gave sl_model_set_error (below) before
 * returning, or else "callback <i> failed: <status>". free releases the
 * callback's own state. */
typedef struct sl_callback {
    void *self;
    int (*begin)(void *self, const sl_train_info *info);
    int (*epoch_begin)(void *self, const sl_train_info *info);
    int (*step_end)(void *self, const sl_train_info *info);
    int (*epoch_end)(void *self, const sl_train_info *info);
    int (*end)(void *self, const sl_train_info *info);
    void (*free)(void *self);
} sl_callback;

/* Where the built-in callbacks send their lines (without a newline): the
 * library does not print. */
typedef void (*sl_line_fn)(void *user, const char *line);

/* LossMonitor: "epoch: 1 step: 1875, loss is 0.110185064" every
 * per_print_times steps (1: every step) and at each epoch's last step when
 * at_epoch_end is 1. The loss is printed as numpy prints a float32. */
SL_API int sl_callback_loss_monitor(sl_callback *out, int64_t per_print_times,
                                    int at_epoch_end, sl_line_fn emit, void *user);
/* TimeMonitor: "epoch time: 1234.567 ms, per step time: 0.658 ms" at each
 * epoch end. */
SL_API int sl_callback_time_monitor(sl_callback *out, sl_line_fn emit, void *user);
/* ModelCheckpoint: saves to dir/<prefix>-<epoch>_<step>.ckpt every
 * save_steps steps (0: at each epoch end). After each save the folder
 * keeps the newest keep_max (0: all) files named exactly so, by (epoch,
 * step), whoever wrote them (an earlier run into the same folder too); the
 * file just saved is always kept. Temporary files of this prefix left by a
 * writer that died (<name>.ckpt.tmp-XXXXXX, not modified for 60 s and not
 * locked by a live writer) are removed. Other files are never touched.
 * The files are written as sl_checkpoint_save does. */
SL_API int sl_callback_checkpoint(sl_callback *out, const char *dir, const char *prefix,
                                  int64_t save_steps, int keep_max);
/* Releases a callback's state (calls its free). */
SL_API void sl_callback_release(sl_callback *cb);

typedef struct sl_metrics {
    int64_t samples;         /* evaluated */
    double accuracy;         /* fraction of argmax == label */
    double loss;             /* mean cross-entropy */
} sl_metrics;

/* The _sized functions write at most size bytes (for bindings); C callers
 * use the inline _init, which passes the size their struct was compiled
 * with. */
SL_API void sl_context_init_sized(sl_context *c, size_t size);
SL_API void sl_model_options_init_sized(sl_model_options *o, size_t size);
static inline void sl_context_init(sl_context *c)
{
    sl_context_init_sized(c, sizeof *c);
}
static inline void sl_model_options_init(sl_model_options *o)
{
    sl_model_options_init_sized(o, sizeof *o);
}
SL_API void sl_train_options_init_sized(sl_train_options *o, size_t size);
static inline void sl_train_options_init(sl_train_options *o)
{
    sl_train_options_init_sized(o, sizeof *o);
}
/* Builds the network, its gradients and optimizer, starts the executor and
 * compiles the steps (o NULL: the defaults). On failure *out is NULL; the
 * message is copied into err (err_len bytes) when err is not NULL. Options
 * not made by sl_model_options_init (or setting fields this library does
 * not know) fail with SL_EINVAL. */
SL_API int sl_model_new(sl_model **out, const sl_model_options *o, char *err, size_t err_len);
/* A model over a graph the caller built (a network traced from Python):
 * g holds the inputs, the scalar loss net->loss, its backward and the
 * optimizer's updates (sl_graph_momentum or sl_graph_sgd), and its
 * parameters' values. The training step reads the graph's inputs by name
 * from the dataset's columns. net->logits may be -1: the model then
 * trains but cannot evaluate; with logits, net->image and net->label name
 * the inputs evaluation feeds. o's context and timeouts apply; its
 * network, optimizer and seed fields do not. The model owns g from now
 * on, also when this fails (then *out is NULL and the message is in err). */
SL_API int sl_model_new_from_graph(sl_model **out, sl_graph *g, const sl_network *net,
                                   const sl_model_options *o, char *err, size_t err_len);
/* Stops the executor's threads and frees everything. */
SL_API void sl_model_free(sl_model *m);
SL_API const char *sl_model_last_error(const sl_model *m);
/* The one way a callback reports why it failed: called from inside one of
 * its functions with info->model, just before it returns a negative status,
 * it sets the message sl_model_last_error() then gives. Not for use outside
 * a callback: train and eval write their own messages there. */
SL_API void sl_model_set_error(sl_model *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
SL_API sl_graph *sl_model_graph(sl_model *m);

/* Trains for epochs passes over dataset, whose rows must hold the columns
 * "image" (float32 (N, C, H, W)) and "label" (int32 (N)) of the model's
 * shapes. Returns 0 when done or stopped, else the error: a pipeline error
 * (with the iterator's message), a wrong shape (naming the op and shapes),
 * a label outside [0, classes), a NaN or infinite loss (naming the step).
 * Every pipeline thread is joined before it returns. */
SL_API int sl_model_train(sl_model *m, int64_t epochs, sl_dataset *dataset,
                          sl_callback *const *callbacks, size_t ncallbacks);
/* sl_model_train with train options (o NULL: the defaults, which are
 * sl_model_train's). In sink mode the steps run on the executor's thread,
 * which takes each batch from the device queue (GetNext) and returns to the
 * host once per sink; the pipeline, the transfer thread and the steps
 * overlap. The results equal non-sink training's, bit for bit. Errors as
 * sl_model_train's, plus: a GetNext timeout (naming the empty queue and
 * what starves it), a batch whose shape is not the step's, bad options
 * (sink_size 0 or < -1, queue_capacity < 1). */
SL_API int sl_model_train_opts(sl_model *m, int64_t epochs, sl_dataset *dataset,
                               sl_callback *const *callbacks, size_t ncallbacks,
                               const sl_train_options *o);
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
/* The device the model's steps run on (its stats: sl_device_get_stats). */
SL_API sl_device *sl_model_device(sl_model *m);
/* Asks train() to stop after the current step (from a callback or another
 * thread); a train() or eval() waiting for a batch is woken at once. A
 * stopped train returns 0; a stopped eval returns SL_ECANCELED. */
SL_API void sl_model_stop(sl_model *m);
/* Runs the network over one pass of dataset: accuracy and mean loss. A
 * last batch smaller than the model's batch is padded, and only its real
 * rows are counted. */
SL_API int sl_model_eval(sl_model *m, sl_dataset *dataset, sl_metrics *out);

SL_API int sl_model_save(sl_model *m, const char *path);
SL_API int sl_model_load(sl_model *m, const char *path);
/* Steps trained so far (restored by load). */
SL_API int64_t sl_model_global_step(const sl_model *m);
/* The compiled training step, for its per-node times and memory. */
SL_API sl_step *sl_model_train_step(sl_model *m);

#ifdef __cplusplus
}
#endif
#endif
