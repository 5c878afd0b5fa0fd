/* callback.h: the functions training calls back between steps (sl_callback,
 * seeing sl_train_info), the built-in ones (LossMonitor, TimeMonitor,
 * ModelCheckpoint) with the sink of their lines, and how a callback reports
 * why it failed (sl_model_set_error). */
#ifndef SLUICE_CALLBACK_H
#define SLUICE_CALLBACK_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The model these calls apply to (model.h). */
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
 * epoch end; per step: the epoch's time over the steps this run ran in it
 * (a resumed run's first epoch counts only its own). */
SL_API int sl_callback_time_monitor(sl_callback *out, sl_line_fn emit, void *user);
/* ModelCheckpoint: saves to dir/<prefix>-<epoch>_<step>.ckpt every
 * save_steps global steps (0: at each epoch end) and when the run ends,
 * also cut short by max_steps or a stop, unless that step was just saved.
 * In sink mode, where step_end runs once per sink, "every save_steps" is
 * at each sink end that crossed a multiple of save_steps. After each save
 * the folder keeps the newest keep_max (0: all) files named exactly so, by
 * (epoch, step), whoever wrote them (an earlier run into the same folder
 * too); the file just saved is always kept. At the run's start and after
 * each save, temporary files of this prefix that a writer which died left
 * are removed (see sl_checkpoint_remove_temps). Other files are never
 * touched. The files are written as sl_checkpoint_save does. */
SL_API int sl_callback_checkpoint(sl_callback *out, const char *dir, const char *prefix,
                                  int64_t save_steps, int keep_max);
/* Removes the temporary files of prefix in dir (<prefix>-<epoch>_<step>
 * .ckpt.tmp-XXXXXX) that a save left when its process died: those no
 * live writer holds (a writer locks its file before it writes and until
 * it is renamed into place) that have content, or have not changed for 60
 * s. Other files are never touched. removed (may be NULL) gets the path
 * of each file removed, to report it; a folder that does not exist holds
 * none. ModelCheckpoint does the same when a run begins. SL_OK; SL_EINVAL
 * (no dir or prefix), SL_EIO or SL_ENOMEM with the reason in err (err_len
 * bytes; may be NULL). */
SL_API int sl_checkpoint_remove_temps(const char *dir, const char *prefix, sl_line_fn removed,
                                      void *user, char *err, size_t err_len);
/* Releases a callback's state (calls its free). */
SL_API void sl_callback_release(sl_callback *cb);

/* The one way a callback reports why it failed: called from inside one of
 * its functions with info->model, just before it returns a negative status,
 * it sets the message sl_model_last_error() then gives. Not for use outside
 * a callback: train and eval write their own messages there. */
SL_API void sl_model_set_error(sl_model *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif
#endif
