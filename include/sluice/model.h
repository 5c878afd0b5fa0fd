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
 * step, the op, the file) is in sl_model_last_error().
 *
 * This header owns the model object: its options, new/free, train, eval,
 * save and load. How train feeds the steps (sl_train_options, transfer
 * mode, sink stats) is in train_options.h, the callbacks in callback.h;
 * this header includes both. */
#ifndef SLUICE_MODEL_H
#define SLUICE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/bench.h" /* sl_model_bench_steps, declared here before */
#include "sluice/callback.h"
#include "sluice/dataset.h"
#include "sluice/device.h"
#include "sluice/export.h"
#include "sluice/graph.h"
#include "sluice/network.h"
#include "sluice/step.h"
#include "sluice/train_options.h"

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

typedef struct sl_model sl_model;

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
/* Builds the network, its gradients and optimizer, starts the executor and
 * compiles the steps (o NULL: the defaults). On failure *out is NULL; the
 * message is copied into err (err_len bytes) when err is not NULL. Options
 * not made by sl_model_options_init (or setting fields this library does
 * not know) fail with SL_EINVAL. */
SL_API int sl_model_new(sl_model **out, const sl_model_options *o, char *err, size_t err_len);
/* A model over a graph the caller built (a network traced from Python):
 * g holds the inputs, the scalar loss net->loss, its backward and the
 * optimizer's updates (sl_graph_momentum or sl_graph_sgd), and its
 * parameters' values. The training step reads the graph's inputs from the
 * dataset's columns by name, or in order (sl_model_train says when). net->logits may be -1: the model then
 * trains but cannot evaluate; with logits, net->image and net->label name
 * the inputs evaluation feeds. o's context and timeouts apply; its
 * network, optimizer and seed fields do not. The model owns g from now
 * on, also when this fails (then *out is NULL and the message is in err). */
SL_API int sl_model_new_from_graph(sl_model **out, sl_graph *g, const sl_network *net,
                                   const sl_model_options *o, char *err, size_t err_len);
/* Stops the executor's threads and frees everything. */
SL_API void sl_model_free(sl_model *m);
SL_API const char *sl_model_last_error(const sl_model *m);
SL_API sl_graph *sl_model_graph(sl_model *m);

/* Trains for epochs passes over dataset, whose rows must hold the
 * network's inputs: for the built-in networks an image (float32
 * (N, C, H, W)) and a label (int32 (N)) of the model's shapes. Columns feed
 * the inputs of their names ("image", "label"), or, when no column has an
 * input's name and the dataset has exactly one column per input, in order,
 * as MindSpore feeds a network (sl_model_eval likewise). Returns 0 when done or stopped, else the error: a pipeline error
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
/* The device the model's steps run on (its stats: sl_device_get_stats). */
SL_API sl_device *sl_model_device(sl_model *m);
/* Asks train() to stop after the current step (from a callback or another
 * thread); a train() or eval() waiting for a batch is woken at once. A
 * stopped train returns 0; a stopped eval returns SL_ECANCELED. */
SL_API void sl_model_stop(sl_model *m);
/* Runs the network over one pass of dataset: accuracy and mean loss. A
 * last batch smaller than the model's batch is padded, and only its real
 * rows are counted. A callback of the model's own training may call it
 * (evaluating while training): it runs between two steps or sinks on the
 * current weights, the training's pipeline and device queue left as they
 * are; SL_ECANCELED if that training was asked to stop. */
SL_API int sl_model_eval(sl_model *m, sl_dataset *dataset, sl_metrics *out);

/* Says that a callback wrote the model's parameters or accumulators
 * (through sl_graph_param_data of sl_model_graph, sl_model_load, ...)
 * while it trains on several devices: when the callbacks' hook returns,
 * every device's replica takes the model's values, so that they step on
 * alike. Without it, only the model (replica 0) would hold the change
 * and training ends with "the devices' replicas differ". On one device
 * it costs nothing. Across MPI ranks every rank must make the same
 * change: the ranks compare their parameters when training ends. */
SL_API void sl_model_parameters_changed(sl_model *m);

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
