/* model_impl.h: the model's fields, shared by model.c, callbacks.c and
 * dump.c. */
#ifndef SLUICE_EXEC_MODEL_IMPL_H
#define SLUICE_EXEC_MODEL_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "sluice/checkpoint.h"
#include "sluice/device.h"
#include "sluice/iterator.h"
#include "sluice/model.h"
#include "core/cpu.h"
#include "core/error.h"
#include "devices/channel.h"
#include "pipeline/consumer_team.h"

/* Stages a sink reports: the pipeline's, transfer, executor, host. */
#define SL__MODEL_MAX_STAGES 32

struct sl_model {
    sl_model_options opts;
    char device_target[16];
    char graphs_path[4096];
    sl_graph *g;
    sl_network net;
    sl_executor *ex;
    sl_step *train_step;   /* forward, loss, backward, updates; output: loss */
    sl_step *eval_step;    /* forward; output: logits */
    sl_tensor *pad_image;  /* eval: a short last batch padded to full size */
    sl_tensor *pad_label;
    int64_t global_step;
    /* Steps the executor has finished in sinks, counted as each ends (a
     * sink adds its steps to global_step only when it returns): what a
     * thread watching a sink from outside can read, such as the tests that
     * stop one after so many steps. */
    atomic_llong sink_steps_run;
    atomic_int stop;
    /* Set by sl_model_parameters_changed: after the callbacks' hook, the
     * replicas take replica 0's values. */
    atomic_int params_changed;
    /* The iterator train or eval is reading, so that sl_model_stop, from
     * any thread, can wake a wait for data; guarded by active_lock. */
    pthread_mutex_t active_lock;
    sl_iterator *active;
    sl__channel *active_channel; /* sink mode: its queues are what GetNext waits on */
    /* A train on several devices (exec/replica.h): its replicas, whose
     * communicator sl_model_stop aborts. Guarded by active_lock. */
    struct sl__replica_set *replicas;
    /* An inline sink lends its compute team to the pipeline (sink.c). */
    sl__consumer_team pipeline_team;
    /* A sink-mode train with a profiler: it, and the executor's track
     * (opened by the executor's thread at the first sink). */
    sl_profiler *trace_profiler;
    struct sl__track *exec_track;
    int active_lock_made;
    sl__error err;
    /* The device the steps run on ("cpu:0", "sim:0"), and, where its memory
     * is not the host's, one block per step input that a non-sink step
     * copies its batch into. */
    sl_device *dev;
    char device_name[32];
    void *staging[SL_MAX_COLUMNS];
    size_t staging_bytes[SL_MAX_COLUMNS];
    sl_sink_stats sink_stats;  /* of the last sink-mode train */
    sl_parallel_stats parallel_stats; /* of the last train */
    sl_stage_stats stages[SL__MODEL_MAX_STAGES]; /* the same, per stage */
    size_t nstages;
    /* The seed and batches per epoch of the data global_step counts (set
     * when training starts, or by loading a checkpoint): with them a
     * checkpoint says where in the data the next step reads. */
    sl_checkpoint_position data;
    int64_t data_origin;       /* the global step at which that data was at its start */
};

/* Where training reads from: the epoch (0-based) and the batches of it
 * already trained on, and the step numbers it counts from. */
typedef struct sl__train_start {
    int64_t epoch, rows;     /* rows: steps of the epoch done (global steps: each
                              * read one batch per device) */
    int64_t steps_per_epoch; /* of the dataset; -1 when it has no end */
    int64_t run_start;       /* the global step epochs and max_steps count from */
    int done;                /* resuming a run that has already ended */
} sl__train_start;

/* Works out where train starts reading ds: at its beginning, or with
 * o->resume where the model's global step left the run it belongs to
 * (checking the dataset is that run's); records ds as what global_step
 * counts. sink_size > 0: epochs are sink_size steps, not the dataset's. */
int sl__model_train_start(sl_model *m, sl_dataset *ds, const sl_train_options *o, int64_t epochs,
                          sl__train_start *out);
/* Devices with cores of their own (a sim's): keeps the calling thread, and
 * the threads it starts until sl__model_host_unpin (pipeline, transfer,
 * which inherit it), off those cores. Returns 1 when it narrowed the
 * thread's affinity (saved in *saved), else 0. */
int sl__model_host_pin(sl_model *m, sl__cpu_affinity *saved);
void sl__model_host_unpin(const sl__cpu_affinity *saved, int pinned);
/* The devices a train with options o steps on at once: 1, or the replicas'. */
int sl__model_train_devices(const sl_model *m);
/* The MPI ranks the current train spans (1: this process alone). */
int sl__model_train_ranks(const sl_model *m);

/* The callbacks' hooks, in the order train calls them. */
enum { SL__HOOK_BEGIN, SL__HOOK_EPOCH_BEGIN, SL__HOOK_STEP_END, SL__HOOK_EPOCH_END,
       SL__HOOK_END };

/* Runs one hook of every callback; the first non-zero result stops
 * (a positive one asks train to stop, a negative one is an error). */
int sl__model_run_hooks(sl_model *m, sl_callback *const *cbs, size_t n, size_t hook,
                        const sl_train_info *info);
/* The dataset columns cols[i] that feed the n inputs names[i] (n at most
 * SL_MAX_COLUMNS): by name when the dataset has a column of each name;
 * otherwise, when no column has any input's name and the dataset has
 * exactly n columns, by position, as MindSpore feeds a network its
 * dataset's columns in order. SL_EINVAL naming both lists otherwise. */
int sl__model_pick_columns(sl_model *m, const sl_dataset *ds, const char *const *names, size_t n,
                           const char *what, int *cols);
/* sl__model_pick_columns for the inputs the step reads, by their names. */
int sl__model_map_columns(sl_model *m, const sl_step *step, const sl_dataset *ds,
                          const char *what, int *cols);
/* 1 when image/label are a short batch of the model's row shape. */
int sl__model_is_short_batch(const sl_model *m, const sl_tensor *image, const sl_tensor *label);
/* The iterator's timeout for the model's data_timeout_ms. */
int sl__model_data_timeout(const sl_model *m);
/* Makes it (or NULL) the iterator that sl_model_stop interrupts. */
void sl__model_set_active(sl_model *m, sl_iterator *it);
/* The same for a sink's channel, whose queues sl_model_stop interrupts. */
void sl__model_set_active_channel(sl_model *m, sl__channel *f);

/* Copies a batch's n tensors into device d's staging blocks (staging[i]
 * of staging_bytes[i], reallocated when a size changes) and makes
 * on_device[i] point at staged[i], their views there: the per-step copy a
 * non-sink step makes to a device that cannot read host memory. */
int sl__stage_batch(sl_device *d, void **staging, size_t *staging_bytes, sl_tensor *const *feed,
                    size_t n, sl_tensor *staged, sl_tensor **on_device, sl__error *err);
/* One non-sink training step on the model's device: feed copied into the
 * device's staging blocks where it cannot read host memory, then run as
 * one host<->device interaction (exec/train.c). */
int sl__model_nonsink_step(sl_model *m, sl_tensor *const *feed, size_t n);
/* Sink mode (exec/sink.c): trains as sl_model_train_opts with
 * dataset_sink_mode set. */
int sl__model_train_sink(sl_model *m, int64_t epochs, sl_dataset *ds, sl_callback *const *cbs,
                         size_t ncbs, const sl_train_options *o);
/* 1 if the model's compute team has a thread for every CPU the process
 * may use: then an inline sink lends it to the pipeline (exec/sink.c). */
int sl__model_team_fills_cpus(const sl_model *m);
/* Reads the caller's train options (NULL: defaults) into *o, checking them. */
int sl__train_options_read(sl_model *m, sl_train_options *o, const sl_train_options *user);
/* Copies the train options' autotune settings into an iterator's. */
void sl__train_autotune_options(const sl_train_options *o, sl_iterator_options *io);

/* Writes step as dir/<name>.ir (text) and dir/<name>.dot (Graphviz), each
 * through a temporary file renamed into place. */
int sl__dump_step(const sl_step *s, const char *dir, const char *name, sl__error *err);

/* Formats a float32 as numpy prints it: the fewest digits that read back
 * as the same float32, positional between 1e-4 and 1e16. */
void sl__format_float32(char *buf, size_t len, float v);

#endif
