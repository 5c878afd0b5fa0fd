/* callbacks.c: the built-in callbacks (LossMonitor, TimeMonitor,
 * ModelCheckpoint) and the float formatting LossMonitor shares with numpy.
 * They hand their lines to the caller's function: the library never
 * prints. */
#include "core/atomic_file.h"
#include "exec/checkpoint_folder.h"
#include "exec/model_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sl__format_float32(char *buf, size_t len, float v)
{
    char digits[32];
    int prec = 1, exp10;
    double a = fabs((double)v);

    if (isnan(v) || isinf(v)) {
        snprintf(buf, len, "%s", isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
        return;
    }
    if (v == 0.0f) {
        snprintf(buf, len, "%s", signbit(v) ? "-0.0" : "0.0");
        return;
    }
    /* The fewest significant digits that read back as the same float. */
    for (; prec < 9; prec++) {
        snprintf(digits, sizeof digits, "%.*e", prec - 1, (double)v);
        if (strtof(digits, NULL) == v)
            break;
    }
    snprintf(digits, sizeof digits, "%.*e", prec - 1, (double)v);
    exp10 = atoi(strchr(digits, 'e') + 1);
    if (a >= 1e-4 && a < 1e16) {
        /* positional, as numpy: digits after the point as needed, and at
         * least one ("2.0") */
        int decimals = prec - 1 - exp10;
        if (decimals < 1)
            snprintf(buf, len, "%.1f", (double)v);
        else
            snprintf(buf, len, "%.*f", decimals, (double)v);
    } else {
        /* scientific: "1.2345e-05" */
        char mant[32];
        snprintf(mant, sizeof mant, "%.*e", prec - 1, (double)v);
        *strchr(mant, 'e') = '\0';
        snprintf(buf, len, "%se%c%02d", mant, exp10 < 0 ? '-' : '+', abs(exp10));
    }
}

void sl_callback_release(sl_callback *cb)
{
    if (cb && cb->free)
        cb->free(cb->self);
    if (cb)
        memset(cb, 0, sizeof *cb);
}

/* --- LossMonitor ----------------------------------------------------- */

typedef struct loss_monitor {
    int64_t every;
    int at_epoch_end;
    sl_line_fn emit;
    void *user;
} loss_monitor;

static int loss_monitor_step(void *self, const sl_train_info *info)
{
    loss_monitor *lm = self;
    int last = info->steps_per_epoch > 0 && info->step_in_epoch == info->steps_per_epoch;
    char line[128], loss[32];
    if ((lm->every > 0 && info->step_in_epoch % lm->every == 0) || (lm->at_epoch_end && last)) {
        sl__format_float32(loss, sizeof loss, info->loss);
        snprintf(line, sizeof line, "epoch: %lld step: %lld, loss is %s",
                 (long long)info->epoch, (long long)info->step_in_epoch, loss);
        lm->emit(lm->user, line);
    }
    return SL_OK;
}

int sl_callback_loss_monitor(sl_callback *out, int64_t per_print_times, int at_epoch_end,
                             sl_line_fn emit, void *user)
{
    loss_monitor *lm;
    memset(out, 0, sizeof *out);
    if (per_print_times < 0 || !emit)
        return SL_EINVAL;
    lm = calloc(1, sizeof *lm);
    if (!lm)
        return SL_ENOMEM;
    lm->every = per_print_times;
    lm->at_epoch_end = at_epoch_end;
    lm->emit = emit;
    lm->user = user;
    out->self = lm;
    out->step_end = loss_monitor_step;
    out->free = free;
    return SL_OK;
}

/* --- TimeMonitor ----------------------------------------------------- */

typedef struct time_monitor {
    sl_line_fn emit;
    void *user;
    int64_t first_step; /* step_in_epoch when this run's part of the epoch began */
} time_monitor;

/* A resumed run begins mid-epoch: its epoch_ms covers only the steps
 * from here, and per step time divides by those. */
static int time_monitor_epoch_begin(void *self, const sl_train_info *info)
{
    ((time_monitor *)self)->first_step = info->step_in_epoch;
    return SL_OK;
}

static int time_monitor_epoch_end(void *self, const sl_train_info *info)
{
    time_monitor *tm = self;
    char line[128];
    int64_t steps = info->step_in_epoch - tm->first_step;
    double per = steps > 0 ? info->epoch_ms / (double)steps : 0.0;
    snprintf(line, sizeof line, "epoch time: %.3f ms, per step time: %.3f ms", info->epoch_ms,
             per);
    tm->emit(tm->user, line);
    return SL_OK;
}

int sl_callback_time_monitor(sl_callback *out, sl_line_fn emit, void *user)
{
    time_monitor *tm;
    memset(out, 0, sizeof *out);
    if (!emit)
        return SL_EINVAL;
    tm = calloc(1, sizeof *tm);
    if (!tm)
        return SL_ENOMEM;
    tm->emit = emit;
    tm->user = user;
    out->self = tm;
    out->epoch_begin = time_monitor_epoch_begin;
    out->epoch_end = time_monitor_epoch_end;
    out->free = free;
    return SL_OK;
}

/* --- ModelCheckpoint ------------------------------------------------- */

typedef struct checkpointer {
    char *dir, *prefix;
    int64_t save_steps;
    int keep_max;
    int64_t last_step;  /* global step at the last step end or the run's
                         * start (-1: not known) */
    int64_t saved_step; /* global step of the last save, or the run's
                         * start (-1: none) */
} checkpointer;

static void checkpointer_free(void *self)
{
    checkpointer *c = self;
    free(c->dir);
    free(c->prefix);
    free(c);
}

static int checkpointer_save(checkpointer *c, const sl_train_info *info)
{
    size_t len = strlen(c->dir) + strlen(c->prefix) + 64;
    char *path = malloc(len), *name;
    sl__error err;
    int rc;
    if (!path) {
        sl_model_set_error(info->model, "checkpoint: out of memory");
        return SL_ENOMEM;
    }
    /* made when first needed, as MindSpore's ModelCheckpoint does */
    rc = sl__make_dirs(c->dir, &err);
    if (rc < 0) {
        sl_model_set_error(info->model, "checkpoint: %s", err.msg);
        free(path);
        return rc;
    }
    snprintf(path, len, "%s/%s-%lld_%lld.ckpt", c->dir, c->prefix, (long long)info->epoch,
             (long long)info->step_in_epoch);
    name = path + strlen(c->dir) + 1;
    rc = sl_model_save(info->model, path);
    if (rc < 0) {
        free(path);
        return rc; /* the model's message names the file */
    }
    /* By what the folder holds, so an earlier run's checkpoints and a
     * killed writer's temporary files are pruned too. */
    c->saved_step = info->global_step;
    rc = sl__ckpt_prune(c->dir, c->prefix, name, c->keep_max, &err);
    free(path);
    if (rc < 0) {
        sl_model_set_error(info->model, "%s", err.msg);
        return rc;
    }
    return SL_OK;
}

/* The run's start: what a killed save left in the folder goes now, not
 * only at the first save (which a short run may never reach). */
static int checkpointer_begin(void *self, const sl_train_info *info)
{
    checkpointer *c = self;
    sl__error err;
    int rc = sl__ckpt_remove_temps(c->dir, c->prefix, NULL, NULL, &err);
    if (rc < 0) {
        sl_model_set_error(info->model, "%s", err.msg);
        return rc;
    }
    c->last_step = info->global_step;
    c->saved_step = info->global_step;
    return SL_OK;
}

/* Every save_steps global steps: at a step end whose step is a multiple,
 * and in sink mode (a step end per sink) at the end of a sink that
 * crossed one. */
static int checkpointer_step(void *self, const sl_train_info *info)
{
    checkpointer *c = self;
    int64_t now = info->global_step;
    int64_t before = c->last_step >= 0 && c->last_step < now ? c->last_step : now - 1;
    c->last_step = now;
    if (c->save_steps > 0 && now / c->save_steps > before / c->save_steps)
        return checkpointer_save(c, info);
    return SL_OK;
}

static int checkpointer_epoch_end(void *self, const sl_train_info *info)
{
    checkpointer *c = self;
    return c->save_steps == 0 ? checkpointer_save(c, info) : SL_OK;
}

/* The run's end, also when max_steps or a stop cut it short: its last
 * step is saved unless it just was, as MindSpore's ModelCheckpoint does. */
static int checkpointer_end(void *self, const sl_train_info *info)
{
    checkpointer *c = self;
    if (c->saved_step < 0 || c->saved_step == info->global_step)
        return SL_OK;
    return checkpointer_save(c, info);
}

int sl_callback_checkpoint(sl_callback *out, const char *dir, const char *prefix,
                           int64_t save_steps, int keep_max)
{
    checkpointer *c;
    memset(out, 0, sizeof *out);
    if (!dir || !prefix || !*prefix || save_steps < 0 || keep_max < 0)
        return SL_EINVAL;
    c = calloc(1, sizeof *c);
    if (!c)
        return SL_ENOMEM;
    c->dir = strdup(dir);
    c->prefix = strdup(prefix);
    if (!c->dir || !c->prefix) {
        checkpointer_free(c);
        return SL_ENOMEM;
    }
    c->save_steps = save_steps;
    c->keep_max = keep_max;
    c->last_step = -1;
    c->saved_step = -1;
    out->self = c;
    out->begin = checkpointer_begin;
    out->step_end = checkpointer_step;
    out->epoch_end = checkpointer_epoch_end;
    out->end = checkpointer_end;
    out->free = checkpointer_free;
    return SL_OK;
}

int sl_checkpoint_remove_temps(const char *dir, const char *prefix, sl_line_fn removed,
                               void *user, char *err, size_t err_len)
{
    sl__error e;
    int rc;
    if (!dir || !prefix || !*prefix) {
        if (err && err_len)
            snprintf(err, err_len, "checkpoint: a folder and a prefix are needed");
        return SL_EINVAL;
    }
    rc = sl__ckpt_remove_temps(dir, prefix, removed, user, &e);
    if (rc < 0 && err && err_len)
        snprintf(err, err_len, "%s", e.msg);
    return rc;
}
