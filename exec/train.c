/* train.c: Model.train. The options say how the steps are fed: the host
 * loop of non-sink mode lives here; sink mode is exec/sink.c, the
 * benchmarks' timing of the same step exec/bench.c. */
#include "exec/model_impl.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "core/cpu.h"
#include "core/options.h"
#include "core/tensor_impl.h"
#include "devices/device_impl.h"
#include "exec/replica.h"
#include "sluice/iterator.h"

/* The end of the first version's fields: fixed forever (core/options.h). */
static const size_t train_options_v1_size =
    offsetof(sl_train_options, max_steps) + sizeof(int64_t);
_Static_assert(sizeof(sl_train_options) ==
                   offsetof(sl_train_options, sim_network_latency_us) + sizeof(double),
               "sl_train_options: name its last field here; no tail padding "
               "(core/options.h)");

void sl_train_options_init_sized(sl_train_options *o, size_t size)
{
    sl_train_options d;
    memset(&d, 0, sizeof d);
    d.dataset_sink_mode = 0;
    d.sink_size = -1;
    d.queue_capacity = 4;
    d.queue_max_bytes = 0;
    d.getnext_timeout_ms = 300000;
    sl__options_init(o, size, &d, sizeof d);
}

int sl__train_options_read(sl_model *m, sl_train_options *o, const sl_train_options *user)
{
    int rc;
    sl_train_options_init(o);
    rc = sl__options_read(o, sizeof *o, train_options_v1_size, user, "sl_train_options",
                          &m->err);
    if (rc < 0)
        return rc;
    if (o->dataset_sink_mode != 0 && o->dataset_sink_mode != 1)
        return sl__errf(&m->err, SL_EINVAL, "train: dataset_sink_mode is %d; give 0 or 1",
                        o->dataset_sink_mode);
    if (o->sink_size == 0 || o->sink_size < -1)
        return sl__errf(&m->err, SL_EINVAL,
                        "train: sink_size %lld: give -1 (each epoch sinks the whole dataset) "
                        "or a number of steps > 0",
                        (long long)o->sink_size);
    if (o->queue_capacity < 1 || o->queue_capacity > 4096)
        return sl__errf(&m->err, SL_EINVAL,
                        "train: queue_capacity %lld: the device queue needs 1 to 4096 slots",
                        (long long)o->queue_capacity);
    if (o->queue_max_bytes < 0)
        return sl__errf(&m->err, SL_EINVAL, "train: queue_max_bytes %lld must be >= 0",
                        (long long)o->queue_max_bytes);
    if (o->resume != 0 && o->resume != 1)
        return sl__errf(&m->err, SL_EINVAL, "train: resume is %d; give 0 or 1", (int)o->resume);
    if (o->max_steps < 0)
        return sl__errf(&m->err, SL_EINVAL, "train: max_steps %lld must be >= 0 (0: no limit)",
                        (long long)o->max_steps);
    if (o->transfer < SL_TRANSFER_AUTO || o->transfer > SL_TRANSFER_INLINE)
        return sl__errf(&m->err, SL_EINVAL,
                        "train: transfer %d: give SL_TRANSFER_AUTO, _THREAD or _INLINE",
                        (int)o->transfer);
    if (o->transfer == SL_TRANSFER_INLINE && !m->dev->iface->reads_host)
        return sl__errf(&m->err, SL_EINVAL,
                        "train: an inline transfer needs a device whose steps read host "
                        "memory (cpu); %s copies over its bus, which a transfer thread "
                        "overlaps with the steps: use the thread or auto transfer",
                        sl_device_name(m->dev));
    if (o->getnext_timeout_ms == 0 || o->getnext_timeout_ms < -1)
        return sl__errf(&m->err, SL_EINVAL,
                        "train: getnext_timeout_ms %lld: give a time > 0 or -1 (for ever)",
                        (long long)o->getnext_timeout_ms);
    if ((o->autotune != 0 && o->autotune != 1) || o->autotune_max_workers < 0 ||
        o->autotune_max_workers > 256)
        return sl__errf(&m->err, SL_EINVAL,
                        "train: autotune %d, autotune_max_workers %d: give 0 or 1, and 0 (the "
                        "CPUs) to 256 workers",
                        (int)o->autotune, (int)o->autotune_max_workers);
    return SL_OK;
}

void sl__train_autotune_options(const sl_train_options *o, sl_iterator_options *io)
{
    io->autotune = o->autotune;
    if (o->autotune_max_workers > 0)
        io->autotune_max_workers = o->autotune_max_workers;
    io->autotune_log = o->autotune_log;
    io->autotune_log_arg = o->autotune_log_arg;
}

sl_transfer_mode sl_model_transfer_mode(const sl_model *m, const sl_train_options *o)
{
    sl_train_options d;
    if (!o) {
        sl_train_options_init(&d);
        o = &d;
    }
    if (o->transfer == SL_TRANSFER_INLINE || o->transfer == SL_TRANSFER_THREAD)
        return (sl_transfer_mode)o->transfer;
    /* Auto is inline where the executor's team fills the CPUs of a device
     * that reads host memory: there the pipeline's map+batch runs on the
     * team between steps (exec/sink.c), instead of a thread that takes a
     * CPU from the step mid-op. Elsewhere it is the thread: a copy to a
     * device across a bus overlaps the steps, and with a CPU to spare the
     * pipeline's threads cost the steps nothing. */
    if (m && sl__device_reads_host(m->dev) && sl__model_team_fills_cpus(m))
        return SL_TRANSFER_INLINE;
    return SL_TRANSFER_THREAD;
}

static const char *const transfer_names[] = {"auto", "thread", "inline"};

const char *sl_transfer_mode_name(sl_transfer_mode mode)
{
    return mode >= SL_TRANSFER_AUTO && mode <= SL_TRANSFER_INLINE ? transfer_names[mode] : "?";
}

int sl_transfer_mode_parse(const char *name, sl_transfer_mode *out)
{
    for (int i = SL_TRANSFER_AUTO; i <= SL_TRANSFER_INLINE; i++)
        if (strcmp(name, transfer_names[i]) == 0) {
            *out = (sl_transfer_mode)i;
            return SL_OK;
        }
    return SL_EINVAL;
}

int sl__model_train_devices(const sl_model *m)
{
    return m->replicas ? m->replicas->n : 1;
}

int sl__model_train_ranks(const sl_model *m)
{
    return m->replicas && m->replicas->distributed ? m->replicas->comm->processes : 1;
}

int sl__model_train_start(sl_model *m, sl_dataset *ds, const sl_train_options *o, int64_t epochs,
                          sl__train_start *out)
{
    const sl_checkpoint_position *d = &m->data;
    uint64_t seed = sl_dataset_get_seed(ds);
    int64_t spe = -1, g = m->global_step;
    int ndev = sl__model_train_devices(m), saved_dev = d->devices > 1 ? d->devices : 1;
    int nranks = sl__model_train_ranks(m);
    int saved_ranks = d->ranks > 1 ? d->ranks : 1;
    memset(out, 0, sizeof *out);
    if (sl_dataset_get_dataset_size(ds, &spe) != SL_OK || spe == SL_DATASET_SIZE_ENDLESS)
        spe = -1;
    if (spe > 0 && spe < ndev)
        return sl__errf(&m->err, SL_EINVAL,
                        "train: an epoch of the dataset holds %lld batches, fewer than the %d "
                        "devices: a global step needs one batch per device",
                        (long long)spe, ndev);
    if (spe > 0)
        spe /= ndev; /* global steps; the batches left over are dropped */
    out->steps_per_epoch = spe;
    out->run_start = g;
    if (o->resume && g > 0) {
        if (!d->saved)
            return sl__errf(&m->err, SL_EINVAL,
                            "train: cannot resume at global step %lld: the model does not know "
                            "where in its data that step left off (load a checkpoint that "
                            "training wrote, or train without resume)",
                            (long long)g);
        if (saved_ranks != nranks)
            return sl__errf(&m->err, SL_EINVAL,
                            "train: cannot resume: the run being resumed trained on %d "
                            "rank%s and this one on %d; each rank read its own shard of the "
                            "data, so resume with %d (mpirun -np %d)",
                            saved_ranks, saved_ranks == 1 ? "" : "s", nranks, saved_ranks,
                            saved_ranks);
        if (saved_dev != ndev)
            return sl__errf(&m->err, SL_EINVAL,
                            "train: cannot resume: the run being resumed trained on %d "
                            "device%s at once and this one on %d; each global step read one "
                            "batch per device, so resume with %d",
                            saved_dev, saved_dev == 1 ? "" : "s", ndev, saved_dev);
        if (d->steps_per_epoch != spe || d->seed != seed)
            return sl__errf(&m->err, SL_EINVAL,
                            "train: cannot resume: the run being resumed read %lld %s per "
                            "epoch with seed %llu, but this dataset gives %lld with seed %llu; "
                            "resume on the same data",
                            (long long)d->steps_per_epoch, ndev > 1 ? "global steps" : "batches",
                            (unsigned long long)d->seed, (long long)spe,
                            (unsigned long long)seed);
        out->run_start = m->data_origin;
        out->epoch = (g - out->run_start) / spe;
        out->rows = (g - out->run_start) % spe;
        if (o->dataset_sink_mode && o->sink_size > 0)
            out->done = g - out->run_start >= epochs * o->sink_size;
        else
            out->done = out->epoch >= epochs;
        return SL_OK;
    }
    m->data.saved = spe > 0;
    m->data.devices = ndev > 1 ? ndev : 0;
    m->data.ranks = nranks > 1 ? nranks : 0;
    m->data.seed = seed;
    m->data.steps_per_epoch = spe;
    m->data_origin = g;
    return SL_OK;
}

typedef struct step_call {
    sl_step *step;
    sl_tensor *const *feed;
    size_t n;
} step_call;

static int run_step_here(void *arg)
{
    step_call *c = arg;
    return sl_step_run_here(c->step, c->feed, c->n);
}

/* A device with cores of its own computes there: the step goes to the
 * executor's thread, as a launch goes to an accelerator. */
static int run_step_on_device(void *arg)
{
    step_call *c = arg;
    return sl_step_run(c->step, c->feed, c->n);
}

int sl__stage_batch(sl_device *d, void **staging, size_t *staging_bytes, sl_tensor *const *feed,
                    size_t n, sl_tensor *staged, sl_tensor **on_device, sl__error *err)
{
    for (size_t i = 0; i < n; i++) {
        const sl_tensor *t = feed[i];
        int rc;
        if (staging_bytes[i] != t->nbytes) {
            if (staging[i])
                sl__device_free(d, staging[i], staging_bytes[i]);
            staging[i] = NULL;
            staging_bytes[i] = 0;
            rc = sl__device_alloc(d, t->nbytes, &staging[i]);
            if (rc < 0)
                return sl__errf(err, rc, "cannot allocate %zu bytes", t->nbytes);
            staging_bytes[i] = t->nbytes;
        }
        rc = sl__device_copy_in(d, staging[i], t->data, t->nbytes);
        if (rc < 0)
            return sl__errf(err, rc, "copying a batch in failed");
        sl__tensor_init_external(&staged[i], t->dtype, t->ndim, t->shape, staging[i]);
        on_device[i] = &staged[i];
    }
    return SL_OK;
}

/* One non-sink step: the host drives it, so it runs on the host's thread
 * with the executor's team (handing it to the executor's thread and back
 * would cost two wake-ups for nothing), as one host<->device interaction.
 * A device that computes on host memory (cpu) reads the batch where it is;
 * another gets it copied into its staging blocks first: the per-step copy
 * that sinking overlaps with computing. */
int sl__model_nonsink_step(sl_model *m, sl_tensor *const *feed, size_t n)
{
    sl_tensor staged[SL_MAX_COLUMNS];
    sl_tensor *on_device[SL_MAX_COLUMNS];
    step_call call = {m->train_step, feed, n};
    sl__error e;
    int rc;

    if (!sl__device_reads_host(m->dev)) {
        rc = sl__stage_batch(m->dev, m->staging, m->staging_bytes, feed, n, staged, on_device,
                             &e);
        if (rc < 0)
            return sl__errf(&m->err, rc, "device %s: %s", m->device_name, e.msg);
        call.feed = on_device;
    }
    return sl__device_run(m->dev,
                          sl__device_core_mask(m->dev) ? run_step_on_device : run_step_here,
                          &call);
}

/* Several devices: the rows held for a global step, given back. */
static void drop_held(sl_row *held, int *nheld)
{
    for (int k = 0; k < *nheld; k++)
        sl_row_clear(&held[k]);
    *nheld = 0;
}

/* One global step on the replicas, held[r] replica r's batch for r <
 * nheld (the others have none: the end of an epoch). */
static int replicas_step(sl_model *m, sl_row *held, int nheld, const int *cols, float *loss,
                         int *stepped)
{
    sl_tensor *feed[SL__MAX_REPLICAS][SL_MAX_COLUMNS];
    sl_tensor *const *feeds[SL__MAX_REPLICAS];
    size_t n = sl_step_num_inputs(m->train_step);
    for (int r = 0; r < m->replicas->n; r++) {
        for (size_t i = 0; r < nheld && i < n; i++)
            feed[r][i] = held[r].columns[cols[i]];
        feeds[r] = r < nheld ? feed[r] : NULL;
    }
    return sl__replicas_run_step(m->replicas, feeds, n, loss, stepped);
}

/* The seeds' non-sink mode: one batch, one step, callbacks, again. */
static int train_nonsink(sl_model *m, int64_t epochs, sl_dataset *ds, sl_callback *const *cbs,
                         size_t ncbs, const sl_train_options *o)
{
    int64_t max_steps = o->max_steps;
    sl__train_start start;
    sl_iterator_options io;
    sl_iterator *it = NULL;
    sl_train_info info;
    int cols[SL_MAX_COLUMNS], rc, nheld = 0;
    sl_row held[SL__MAX_REPLICAS]; /* several devices: a global step's batches */
    /* Across ranks, the ranks vote once an epoch on a global step not all
     * of them could fill: at the end of this rank's epoch, or mid-epoch
     * when another rank ran out first (then this rank drops the rest). */
    const int ranks = m->replicas && m->replicas->distributed;
    int voted = 0;
    double epoch_t0, t0;

    sl__err_clear(&m->err);
    /* m->stop: reset by sl_model_train_opts, before the replicas were made */
    if (epochs < 1)
        return sl__errf(&m->err, SL_EINVAL, "train: epochs %lld must be >= 1",
                        (long long)epochs);
    rc = sl__model_map_columns(m, m->train_step, ds, "train", cols);
    if (rc < 0)
        return rc;
    if (sl_dataset_get_dataset_size(ds, &info.steps_per_epoch) == SL_OK && !info.steps_per_epoch)
        return sl__errf(&m->err, SL_EINVAL,
                        "train: an epoch of the dataset holds no batch (fewer samples than "
                        "the batch size, with drop_remainder?)");
    rc = sl__model_train_start(m, ds, o, epochs, &start);
    if (rc < 0 || start.done)
        return rc;
    sl_iterator_options_init(&io);
    io.num_epochs = epochs;
    io.timeout_ms = sl__model_data_timeout(m);
    io.start_epoch = start.epoch;
    io.start_rows = start.rows * sl__model_train_devices(m); /* batches */
    io.profiler = o->profiler; /* without sinking, only the pipeline records */
    sl__train_autotune_options(o, &io);
    rc = sl_iterator_new(&it, ds, &io);
    if (rc < 0)
        return sl__errf(&m->err, rc, "train: %s", sl_dataset_last_error(ds));
    sl__model_set_active(m, it);

    memset(&info, 0, sizeof info);
    info.epoch = start.epoch + 1;
    info.step_in_epoch = start.rows;
    info.epoch_num = epochs;
    sl_dataset_get_dataset_size(ds, &info.steps_per_epoch); /* endless: -1, "unknown" */
    if (info.steps_per_epoch > 0)
        info.steps_per_epoch /= sl__model_train_devices(m); /* global steps */
    info.global_step = m->global_step;
    info.batch_size = m->opts.network.batch * sl__model_train_devices(m) *
                      sl__model_train_ranks(m); /* global */
    info.model = m;
    rc = sl__model_run_hooks(m, cbs, ncbs, SL__HOOK_BEGIN, &info);
    if (rc == SL_OK)
        rc = sl__model_run_hooks(m, cbs, ncbs, SL__HOOK_EPOCH_BEGIN, &info);
    epoch_t0 = t0 = sl__now_ms();
    while (rc == SL_OK && !atomic_load(&m->stop) &&
           (max_steps == 0 || m->global_step - start.run_start < max_steps)) {
        sl_row row;
        sl_tensor *feed[SL_MAX_COLUMNS];
        int next = sl_iterator_next(it, &row);
        if (next == SL_END_OF_DATA)
            break;
        if (next == SL_END_OF_EPOCH && info.step_in_epoch == 0) {
            rc = sl__errf(&m->err, SL_EINVAL, "train: epoch %lld held no batch",
                          (long long)info.epoch);
            break;
        }
        if (next == SL_END_OF_EPOCH && ranks && !voted) {
            /* the other ranks may hold batches still: they learn that this
             * one has none left, and nobody updates */
            int stepped = 0;
            float unused;
            rc = replicas_step(m, held, nheld, cols, &unused, &stepped);
            if (rc == SL_ECANCELED && atomic_load(&m->stop)) {
                rc = SL_OK;
                sl__err_clear(&m->err);
                break;
            }
            if (rc < 0) {
                sl__err_prefix(&m->err, "train: epoch %lld, its end: ", (long long)info.epoch);
                break;
            }
        }
        if (next == SL_END_OF_EPOCH) {
            voted = 0;
            drop_held(held, &nheld); /* a global step the epoch could not fill */
            info.epoch_ms = sl__now_ms() - epoch_t0;
            rc = sl__model_run_hooks(m, cbs, ncbs, SL__HOOK_EPOCH_END, &info);
            if (rc < 0 || info.epoch == epochs || atomic_load(&m->stop))
                break;
            info.epoch++;
            info.step_in_epoch = 0;
            rc = sl__model_run_hooks(m, cbs, ncbs, SL__HOOK_EPOCH_BEGIN, &info);
            epoch_t0 = t0 = sl__now_ms();
            continue;
        }
        if (next == SL_ECANCELED && atomic_load(&m->stop))
            break; /* sl_model_stop woke the wait for data */
        if (next < 0) {
            rc = sl__errf(&m->err, next, "train: epoch %lld step %lld: %s",
                          (long long)info.epoch, (long long)info.step_in_epoch + 1,
                          sl_iterator_last_error(it));
            break;
        }
        if (voted) { /* another rank ran out: the rest of the epoch is dropped */
            sl_row_clear(&row);
            continue;
        }
        if (m->replicas) {
            /* one batch per device, then the global step */
            int stepped = 0;
            held[nheld++] = row;
            if (nheld < m->replicas->n)
                continue;
            rc = replicas_step(m, held, nheld, cols, &info.loss, &stepped);
            drop_held(held, &nheld);
            if (rc == SL_OK && !stepped) {
                voted = 1;
                continue;
            }
            if (rc == SL_ECANCELED && atomic_load(&m->stop)) {
                /* sl_model_stop woke the replicas mid-step: a stop, not an
                 * error; no replica updated */
                rc = SL_OK;
                sl__err_clear(&m->err);
                break;
            }
            if (rc < 0) {
                sl__err_prefix(&m->err, "train: epoch %lld step %lld: ", (long long)info.epoch,
                               (long long)info.step_in_epoch + 1);
                break;
            }
        }
        for (size_t i = 0; !m->replicas && i < sl_step_num_inputs(m->train_step); i++)
            feed[i] = row.columns[cols[i]];
        rc = m->replicas ? SL_OK : sl__model_nonsink_step(m, feed, sl_step_num_inputs(m->train_step));
        if (rc < 0) {
            /* A short last batch is the usual cause: say so. */
            int short_batch = sl__model_is_short_batch(m, row.columns[cols[0]], row.columns[cols[1]]);
            sl__errf(&m->err, rc, "train: epoch %lld step %lld: %s%s", (long long)info.epoch,
                     (long long)info.step_in_epoch + 1, sl_step_last_error(m->train_step),
                     short_batch ? " (a short last batch: the model's steps have a fixed "
                                   "batch size, so batch the dataset with drop_remainder)"
                                 : "");
            sl_row_clear(&row);
            break;
        }
        if (!m->replicas) {
            sl_row_clear(&row);
            info.loss = *(const float *)sl_step_output(m->train_step, 0, NULL);
        }
        m->global_step++;
        info.global_step = m->global_step;
        info.step_in_epoch++;
        if (!isfinite(info.loss)) {
            rc = sl__errf(&m->err, SL_ENUMERIC,
                          "train: epoch %lld step %lld (global step %lld): the loss is %s; "
                          "training stopped (a lower learning rate may help)",
                          (long long)info.epoch, (long long)info.step_in_epoch,
                          (long long)info.global_step, isnan(info.loss) ? "NaN" : "infinite");
            break;
        }
        info.step_ms = sl__now_ms() - t0;
        t0 = sl__now_ms();
        info.epoch_ms = t0 - epoch_t0;
        rc = sl__model_run_hooks(m, cbs, ncbs, SL__HOOK_STEP_END, &info);
    }
    drop_held(held, &nheld);
    /* Across ranks, the others learn of an error before the join below,
     * which a stuck pipeline thread could hold up. */
    if (rc < 0 && ranks)
        sl__replicas_leave_on_error(m->replicas);
    /* Joins every pipeline thread, whether the loop ended or stopped. */
    sl__model_set_active(m, NULL);
    sl_iterator_free(it);
    if (rc == SL_OK)
        rc = sl__model_run_hooks(m, cbs, ncbs, SL__HOOK_END, &info);
    return rc;
}


int sl_model_train_opts(sl_model *m, int64_t epochs, sl_dataset *ds, sl_callback *const *cbs,
                        size_t ncbs, const sl_train_options *user)
{
    sl_train_options o;
    int64_t step0;
    sl__cpu_affinity host_before;
    int rc, host_pinned;
    sl__err_clear(&m->err);
    rc = sl__train_options_read(m, &o, user);
    if (rc < 0)
        return rc;
    /* A stop asked for from now on counts (train's loops reset it only
     * before any replica could have seen it). */
    atomic_store(&m->stop, 0);
    if (o.distributed || (o.devices && strchr(o.devices, ','))) {
        sl__replica_set *rs;
        rc = sl__replicas_new(m, &o, &rs);
        if (rc < 0)
            return rc;
        pthread_mutex_lock(&m->active_lock);
        m->replicas = rs;
        pthread_mutex_unlock(&m->active_lock);
    } else if (o.devices && strcmp(o.devices, sl_device_name(m->dev)) != 0) {
        sl__replica_set *rs;
        /* one device: it must be the model's (the list's rules say why not) */
        rc = sl__replicas_new(m, &o, &rs);
        sl__replicas_free(rs);
        return rc;
    }
    /* Devices with cores of their own: the host's threads (this one, and
     * the pipeline and transfer threads it starts, which inherit it) keep
     * to the other CPUs while training runs. */
    host_pinned = sl__model_host_pin(m, &host_before);
    step0 = m->global_step;
    if (o.dataset_sink_mode)
        rc = sl__model_train_sink(m, epochs, ds, cbs, ncbs, &o);
    else
        rc = train_nonsink(m, epochs, ds, cbs, ncbs, &o);
    sl__model_host_unpin(&host_before, host_pinned);
    memset(&m->parallel_stats, 0, sizeof m->parallel_stats);
    m->parallel_stats.devices = 1;
    m->parallel_stats.ranks = 1;
    m->parallel_stats.steps = m->global_step - step0;
    if (m->replicas) {
        sl__replica_set *rs = m->replicas;
        /* Every rank ends with one more collective: the hash of its
         * parameters, or (on an error the others may not know) the error. */
        if (rc < 0 && rs->distributed)
            sl__replicas_leave_on_error(rs);
        else if (rc == SL_OK && (rs->distributed || !atomic_load(&m->stop)))
            rc = sl__replicas_check(rs);
        sl__replicas_get_stats(rs, m->global_step - step0, &m->parallel_stats);
        pthread_mutex_lock(&m->active_lock);
        m->replicas = NULL;
        pthread_mutex_unlock(&m->active_lock);
        sl__replicas_free(rs);
    }
    return rc;
}

int sl_model_train(sl_model *m, int64_t epochs, sl_dataset *ds, sl_callback *const *cbs,
                   size_t ncbs)
{
    return sl_model_train_opts(m, epochs, ds, cbs, ncbs, NULL);
}
