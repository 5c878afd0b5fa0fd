/* dataset_helper.c: the dataset helper of custom loops (sluice/sink.h),
 * as MindSpore's DatasetHelper: connected to the model's training step,
 * each next() runs one sink (sink mode) or one step (non-sink). */
#include "exec/sink_impl.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sink.h"

struct sl_dataset_helper {
    sl_model *m;
    int sink_mode;
    int64_t sink_size, epoch_num, timeout_ms;
    sl__channel *f;             /* sink mode */
    sl_iterator *it;           /* non-sink */
    int cols[SL_MAX_COLUMNS];
    int64_t epochs_done;
    int sunk;                  /* sink mode: this epoch's sink has run */
};

int sl_dataset_helper_new(sl_dataset_helper **out, sl_model *m, sl_dataset *ds,
                          int dataset_sink_mode, int64_t sink_size, int64_t epoch_num,
                          const sl_train_options *user)
{
    sl_train_options o;
    sl_dataset_helper *h;
    int64_t size;
    int rc, size_rc;

    *out = NULL;
    sl__err_clear(&m->err);
    rc = sl__train_options_read(m, &o, user);
    if (rc < 0)
        return rc;
    if (sink_size == 0 || sink_size < -1)
        return sl__errf(&m->err, SL_EINVAL,
                        "dataset helper: sink_size %lld: give -1 (each epoch sinks the whole "
                        "dataset) or a number of steps > 0",
                        (long long)sink_size);
    if (epoch_num < 1)
        return sl__errf(&m->err, SL_EINVAL, "dataset helper: epoch_num %lld must be >= 1",
                        (long long)epoch_num);
    size_rc = sl_dataset_get_dataset_size(ds, &size);
    if (size_rc == SL_OK && size == 0)
        return sl__errf(&m->err, SL_EINVAL,
                        "dataset helper: an epoch of the dataset holds no batch");
    if (dataset_sink_mode && sink_size < 0 && size_rc == SL_OK &&
        size == SL_DATASET_SIZE_ENDLESS)
        return sl__errf(&m->err, SL_EINVAL,
                        "dataset helper: sink_size -1 sinks one epoch at a time, but this "
                        "dataset has no end: give sink_size > 0");
    h = calloc(1, sizeof *h);
    if (!h)
        return sl__errf(&m->err, SL_ENOMEM, "dataset helper: out of memory");
    h->m = m;
    h->sink_mode = dataset_sink_mode != 0;
    h->sink_size = sink_size;
    h->epoch_num = epoch_num;
    h->timeout_ms = o.getnext_timeout_ms;
    if (h->sink_mode) {
        rc = sl__sink_start_channel(m, ds, &o, sink_size > 0 ? -1 : epoch_num, NULL,
                                    "dataset helper", &h->f);
    } else {
        sl_iterator_options io;
        sl__cpu_affinity saved;
        int pinned;
        rc = sl__model_map_columns(m, m->train_step, ds, "dataset helper", h->cols);
        if (rc == SL_OK) {
            sl_iterator_options_init(&io);
            io.num_epochs = epoch_num;
            io.timeout_ms = sl__model_data_timeout(m);
            /* the pipeline's threads start off a sim's own cores */
            pinned = sl__model_host_pin(m, &saved);
            rc = sl_iterator_new(&h->it, ds, &io);
            sl__model_host_unpin(&saved, pinned);
            if (rc < 0)
                sl__errf(&m->err, rc, "dataset helper: %s", sl_dataset_last_error(ds));
        }
    }
    if (rc < 0) {
        free(h);
        return rc;
    }
    *out = h;
    return SL_OK;
}

/* Non-sink: one batch, one step. */
static int helper_step(sl_dataset_helper *h, float *loss)
{
    sl_model *m = h->m;
    sl_tensor *feed[SL_MAX_COLUMNS];
    size_t n = sl_step_num_inputs(m->train_step);
    sl_row row;
    int rc = sl_iterator_next(h->it, &row);
    if (rc == SL_END_OF_EPOCH) {
        h->epochs_done++;
        return SL_END_OF_EPOCH;
    }
    if (rc == SL_END_OF_DATA)
        return SL_END_OF_DATA;
    if (rc < 0)
        return sl__errf(&m->err, rc, "dataset helper: %s", sl_iterator_last_error(h->it));
    for (size_t i = 0; i < n; i++)
        feed[i] = row.columns[h->cols[i]];
    rc = sl__model_nonsink_step(m, feed, n);
    sl_row_clear(&row);
    if (rc < 0)
        return m->err.msg[0] ? rc
                             : sl__errf(&m->err, rc, "dataset helper: step %lld: %s",
                                        (long long)m->global_step + 1,
                                        sl_step_last_error(m->train_step));
    m->global_step++;
    if (loss)
        *loss = *(const float *)sl_step_output(m->train_step, 0, NULL);
    return SL_OK;
}

int sl_dataset_helper_next(sl_dataset_helper *h, float *loss)
{
    sl_model *m = h->m;
    sl__sink_run r;
    sl__err_clear(&m->err);
    if (h->epochs_done >= h->epoch_num)
        return SL_END_OF_DATA;
    if (!h->sink_mode)
        return helper_step(h, loss);
    if (h->sunk) {
        h->sunk = 0;
        h->epochs_done++;
        return SL_END_OF_EPOCH;
    }
    atomic_store(&m->stop, 0);
    sl__channel_resume(h->f); /* a stop ends one sink, not the helper */
    sl__model_set_active_channel(m, h->f);
    sl__sink_run_once(m, h->f, h->sink_size > 0 ? h->sink_size : -1, h->sink_size < 0,
                      h->timeout_ms, &r);
    sl__model_set_active_channel(m, NULL);
    if (r.rc < 0)
        return sl__errf(&m->err, r.rc, "dataset helper: global step %lld: %s",
                        (long long)m->global_step + 1, r.err.msg);
    if (r.steps == 0)
        return r.end_of_data ? SL_END_OF_DATA
                             : sl__errf(&m->err, SL_ECANCELED, "dataset helper: stopped");
    h->sunk = 1;
    if (loss)
        *loss = r.loss;
    return SL_OK;
}

void sl_dataset_helper_free(sl_dataset_helper *h)
{
    if (!h)
        return;
    sl__channel_free(h->f);
    sl_iterator_free(h->it);
    free(h);
}
