/* data_sink.c: MindSpore's data_sink (sluice/sink.h): a callable whose
 * every call runs sink_size steps on the device and returns the last
 * loss; calls continue the traversal, across epochs. */
#include "exec/sink_impl.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sink.h"

struct sl_data_sink {
    sl_model *m;
    sl__channel *f;
    int64_t sink_size;
    int64_t timeout_ms;
};

int sl_data_sink_new(sl_data_sink **out, sl_model *m, sl_dataset *ds, int64_t sink_size,
                     const sl_train_options *user)
{
    sl_train_options o;
    sl_data_sink *s;
    int64_t size;
    int rc;

    *out = NULL;
    sl__err_clear(&m->err);
    rc = sl__train_options_read(m, &o, user);
    if (rc < 0)
        return rc;
    if (sink_size < 1)
        return sl__errf(&m->err, SL_EINVAL,
                        "data_sink: sink_size %lld: give the number of steps each call runs "
                        "(>= 1)",
                        (long long)sink_size);
    if (sl_dataset_get_dataset_size(ds, &size) == SL_OK && size == 0)
        return sl__errf(&m->err, SL_EINVAL, "data_sink: an epoch of the dataset holds no batch");
    s = calloc(1, sizeof *s);
    if (!s)
        return sl__errf(&m->err, SL_ENOMEM, "data_sink: out of memory");
    s->m = m;
    s->sink_size = sink_size;
    memset(&m->sink_stats, 0, sizeof m->sink_stats);
    s->timeout_ms = o.getnext_timeout_ms;
    /* Calls continue the traversal, across epochs, for as long as they come. */
    rc = sl__sink_start_channel(m, ds, &o, -1, NULL, "data_sink", &s->f);
    if (rc < 0) {
        free(s);
        return rc;
    }
    *out = s;
    return SL_OK;
}

int sl_data_sink_call(sl_data_sink *s, float *loss)
{
    sl_model *m = s->m;
    sl__sink_run r;
    sl__err_clear(&m->err);
    atomic_store(&m->stop, 0);
    sl__channel_resume(s->f); /* a stop ends one call, not the sink */
    sl__model_set_active_channel(m, s->f);
    sl__sink_run_once(m, s->f, s->sink_size, 0, s->timeout_ms, &r);
    sl__model_set_active_channel(m, NULL);
    if (r.rc < 0)
        return sl__errf(&m->err, r.rc, "data_sink: global step %lld: %s",
                        (long long)m->global_step + 1, r.err.msg);
    if (r.steps < s->sink_size && atomic_load(&m->stop))
        return sl__errf(&m->err, SL_ECANCELED, "data_sink: stopped after %lld of %lld steps",
                        (long long)r.steps, (long long)s->sink_size);
    if (loss)
        *loss = r.loss;
    return SL_OK;
}

void sl_data_sink_free(sl_data_sink *s)
{
    if (!s)
        return;
    sl__sink_collect_stats(s->m, s->f);
    sl__channel_free(s->f);
    free(s);
}

