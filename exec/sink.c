/* sink.c: data sinking and loop sinking, and train in sink mode. A channel
 * (devices/channel.h) runs the pipeline and a transfer thread that fills
 * the device's queue; the host posts one sink at a time to the executor's
 * thread, which runs the steps back to back, taking each batch from the
 * queue with GetNext, and returns to the host once per sink with the last
 * loss. Callbacks see one step_end per sink, as the seeds' LossMonitor
 * does in sink mode. data_sink.c and dataset_helper.c sink through the
 * same functions (sink_impl.h). */
#include "exec/sink_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/cpu.h"
#include "devices/device_impl.h"
#include "exec/replica.h"
#include "exec/step_impl.h"
#include "sluice/sink.h"

/* The loop that sinking moves to the device: GetNext, step, again. */
static int sink_loop(void *arg)
{
    sl__sink_run *r = arg;
    sl_step *step = r->m->train_step;
    size_t n = sl_step_num_inputs(step);

    if (r->m->trace_profiler && !r->m->exec_track)
        r->m->exec_track = sl__track_open(r->m->trace_profiler, "executor");
    while (r->steps_wanted < 0 || r->steps < r->steps_wanted) {
        sl_tensor *feed[SL_MAX_COLUMNS];
        sl__track *track = r->m->exec_track;
        sl__dq_slot *slot;
        double waited, t0 = track ? sl__now_ms() : 0, t1 = 0;
        int rc;
        if (atomic_load(&r->m->stop))
            return SL_OK; /* asked between steps */
        rc = sl__channel_get_next(r->f, 0, &slot, r->timeout_ms, &waited, &r->err);
        r->getnext_wait_ms += waited;
        if (!r->called) {
            r->first_wait_ms = waited;
            r->called = 1;
        }
        if (rc == SL_END_OF_EPOCH) {
            if (r->to_epoch_end) {
                r->end_of_epoch = 1;
                return SL_OK;
            }
            continue; /* sink_size > 0: the traversal goes on across epochs */
        }
        if (rc == SL_END_OF_DATA) {
            r->end_of_data = 1;
            return SL_OK;
        }
        if (rc == SL_ECANCELED && atomic_load(&r->m->stop))
            return SL_OK; /* sl_model_stop woke GetNext */
        if (rc < 0)
            return rc; /* r->err says why: a timeout naming the stage, a pipeline error */
        for (size_t i = 0; i < n; i++)
            feed[i] = &slot->columns[i];
        if (track) {
            t1 = sl__now_ms();
            sl__trace_slice(track, "GetNext", t0, t1, slot->epoch, slot->in_epoch);
            if (sl__step_trace(step, r->m->trace_profiler, track, slot->epoch, slot->in_epoch) < 0)
                track = NULL; /* no memory for the names: the step goes untraced */
        }
        rc = sl_step_run_here(step, feed, n);
        if (track) {
            sl__trace_slice(track, "step", t1, sl__now_ms(), slot->epoch, slot->in_epoch);
            /* Runs of the step elsewhere (a callback's) are not this batch's. */
            sl__step_trace(step, r->m->trace_profiler, NULL, 0, 0);
        }
        sl__dq_release(sl__channel_queue(r->f, 0), slot);
        if (rc < 0)
            return sl__errf(&r->err, rc, "step %lld of the sink: %s", (long long)r->steps + 1,
                            sl_step_last_error(step));
        r->steps++;
        atomic_fetch_add_explicit(&r->m->sink_steps_run, 1, memory_order_relaxed);
        r->loss = *(const float *)sl_step_output(step, 0, NULL);
        if (!isfinite(r->loss))
            return sl__errf(&r->err, SL_ENUMERIC,
                            "step %lld of the sink: the loss is %s; training stopped (a lower "
                            "learning rate may help)",
                            (long long)r->steps, isnan(r->loss) ? "NaN" : "infinite");
    }
    return SL_OK;
}

/* Replica r's sink on several devices: GetNext on its own queue, its part
 * of each global step (exec/replica.h), again. The replicas run in
 * lockstep through the allreduce; at the end of an epoch that does not
 * divide among them, the global step it could not fill is dropped and
 * every replica drains its queue to the end-of-epoch marker, so that they
 * all meet the marker together. A replica that fails stops the others. */
static int sink_loop_replica(sl__sink_run *r)
{
    sl__replica_set *rs = r->rs;
    sl_model *m = r->m;
    sl_step *step = rs->reps[r->rank].step;
    size_t n = sl_step_num_inputs(step);

    /* With a profiler, replica 0 records its GetNext, steps and ops (the
     * others run the same steps beside it). */
    if (r->rank == 0 && m->trace_profiler && !m->exec_track)
        m->exec_track = sl__track_open(m->trace_profiler, "executor");
    while (r->steps_wanted < 0 || r->steps < r->steps_wanted) {
        sl_tensor *feed[SL_MAX_COLUMNS];
        sl__dq_slot *slot = NULL;
        sl__track *track = r->rank == 0 ? m->exec_track : NULL;
        double waited, t0 = track ? sl__now_ms() : 0, t1 = 0;
        float loss = 0;
        int rc, stepped = 0;
        if (atomic_load(&m->stop))
            return SL_OK;
        rc = sl__channel_get_next(r->f, (size_t)r->rank, &slot, r->timeout_ms, &waited, &r->err);
        if (track && rc == SL_OK) {
            t1 = sl__now_ms();
            sl__trace_slice(track, "GetNext", t0, t1, slot->epoch, slot->in_epoch);
            if (sl__step_trace(step, m->trace_profiler, track, slot->epoch, slot->in_epoch) < 0)
                track = NULL; /* no memory for the names: the step goes untraced */
        }
        r->getnext_wait_ms += waited;
        if (!r->called) {
            r->first_wait_ms = waited;
            r->called = 1;
        }
        if (rc == SL_ECANCELED && (atomic_load(&m->stop) || atomic_load(&rs->failed) >= 0))
            return SL_OK; /* sl_model_stop, or another replica's failure */
        if (rc < 0 && rc != SL_END_OF_EPOCH && rc != SL_END_OF_DATA)
            return rc;
        for (size_t i = 0; rc == SL_OK && i < n; i++)
            feed[i] = &slot->columns[i];
        {
            int step_rc = sl__replica_step(rs, r->rank, rc == SL_OK ? feed : NULL, n, &stepped,
                                           &loss);
            if (track && rc == SL_OK) {
                sl__trace_slice(track, "step", t1, sl__now_ms(), slot->epoch, slot->in_epoch);
                sl__step_trace(step, m->trace_profiler, NULL, 0, 0);
            }
            if (slot)
                sl__dq_release(sl__channel_queue(r->f, (size_t)r->rank), slot);
            if (step_rc == SL_ECANCELED && (atomic_load(&m->stop) || atomic_load(&rs->failed) >= 0))
                return SL_OK;
            if (step_rc < 0)
                return sl__errf(&r->err, step_rc, "step %lld of the sink: %s",
                                (long long)r->steps + 1, rs->reps[r->rank].err.msg);
        }
        if (stepped) {
            r->steps++;
            if (r->rank == 0)
                atomic_fetch_add_explicit(&m->sink_steps_run, 1, memory_order_relaxed);
            r->loss = loss;
            if (!isfinite(loss))
                return sl__errf(&r->err, SL_ENUMERIC,
                                "step %lld of the sink: the mean loss is %s; training stopped "
                                "(a lower learning rate may help)",
                                (long long)r->steps, isnan(loss) ? "NaN" : "infinite");
            continue;
        }
        /* Not every replica had a batch: drop this one's to the marker. */
        while (rc == SL_OK) {
            rc = sl__channel_get_next(r->f, (size_t)r->rank, &slot, r->timeout_ms, &waited,
                                      &r->err);
            if (rc == SL_OK)
                sl__dq_release(sl__channel_queue(r->f, (size_t)r->rank), slot);
        }
        if (rc == SL_END_OF_EPOCH) {
            if (r->to_epoch_end) {
                r->end_of_epoch = 1;
                return SL_OK;
            }
            continue;
        }
        if (rc == SL_END_OF_DATA) {
            r->end_of_data = 1;
            return SL_OK;
        }
        if (rc == SL_ECANCELED && (atomic_load(&m->stop) || atomic_load(&rs->failed) >= 0))
            return SL_OK;
        return rc;
    }
    return SL_OK;
}

static int sink_loop_replica_fn(void *arg)
{
    sl__sink_run *r = arg;
    int rc = sink_loop_replica(r);
    if (rc < 0) {
        sl__err_prefix(&r->err, "device %s: ", sl_device_name(r->rs->reps[r->rank].dev));
        sl__err_copy(&r->rs->reps[r->rank].err, &r->err);
        sl__replicas_fail(r->rs, r->rank, r->f);
    }
    return rc;
}

/* Runs on replica r's executor thread: one host<->device interaction. */
static void sink_job_replica(void *arg)
{
    sl__sink_run *r = arg;
    r->rc = sl__device_run(r->rs->reps[r->rank].dev, sink_loop_replica_fn, r);
}

/* One sink on every replica at once; r gets replica 0's results, or the
 * error of the replica that failed first. */
static void sink_run_replicas(sl_model *m, sl__channel *f, sl__sink_run *r)
{
    sl__replica_set *rs = m->replicas;
    sl__sink_run runs[SL__MAX_REPLICAS];
    uint64_t tickets[SL__MAX_REPLICAS];
    int posted[SL__MAX_REPLICAS] = {0}, failed;

    for (int k = 0; k < rs->n; k++) {
        runs[k] = *r;
        runs[k].rs = rs;
        runs[k].rank = k;
        if (sl__executor_post(rs->reps[k].ex, sink_job_replica, &runs[k], &tickets[k]) == SL_OK) {
            posted[k] = 1;
            continue;
        }
        sl__errf(&rs->reps[k].err, SL_ECLOSED, "device %s: its executor is shutting down",
                 sl_device_name(rs->reps[k].dev));
        runs[k].rc = SL_ECLOSED;
        sl__replicas_fail(rs, k, f);
    }
    for (int k = 0; k < rs->n; k++)
        if (posted[k])
            sl__executor_wait(rs->reps[k].ex, tickets[k], -1);
    *r = runs[0];
    r->rank = 0;
    failed = atomic_load(&rs->failed);
    if (failed >= 0) {
        r->rc = runs[failed].rc < 0 ? runs[failed].rc : SL_ECANCELED;
        sl__err_copy(&r->err, &rs->reps[failed].err);
    }
    /* r's waits are replica 0's: the executor stage reports one executor */
}

/* Runs on the executor's thread: one host<->device interaction. */
static void sink_job(void *arg)
{
    sl__sink_run *r = arg;
    r->rc = sl__device_run(r->m->dev, sink_loop, r);
}

/* Runs one sink of at most steps_wanted steps (-1: no limit), ending at
 * the end of the epoch when to_epoch_end, on the executor's thread while
 * the host waits. */
void sl__sink_run_once(sl_model *m, sl__channel *f, int64_t steps_wanted, int to_epoch_end,
                       int64_t timeout_ms, sl__sink_run *r)
{
    memset(r, 0, sizeof *r);
    r->m = m;
    r->f = f;
    r->steps_wanted = steps_wanted;
    r->to_epoch_end = to_epoch_end;
    r->timeout_ms = timeout_ms;
    if (m->replicas)
        sink_run_replicas(m, f, r);
    else
        sl__executor_call(m->ex, sink_job, r);
    m->global_step += r->steps;
    m->sink_stats.sinks++;
    m->sink_stats.steps += r->steps;
    m->sink_stats.getnext_wait_ms += r->getnext_wait_ms;
}

/* An inline transfer's copy, on the executor's thread between two steps:
 * cut over the compute team like an op, so that the helpers copy too
 * instead of going to sleep while thread 0 copies alone. */
typedef struct team_copy {
    unsigned char *dst;
    const unsigned char *src;
    size_t n;
} team_copy;

/* Below this a copy is not worth waking a helper for. */
#define TEAM_COPY_MIN_BYTES (16u << 10)

static void team_copy_share(void *arg, const sl__share *share)
{
    team_copy *c = arg;
    size_t begin, end;
    sl__share_range(share, SL__GRAIN_SHARE, c->n, 64, &begin, &end);
    if (end > begin)
        memcpy(c->dst + begin, c->src + begin, end - begin);
}

static void host_copy_on_team(void *arg, void *dst, const void *src, size_t n)
{
    sl_model *m = arg;
    team_copy c = {dst, src, n};
    if (n < TEAM_COPY_MIN_BYTES || m->ex->team.nthreads < 2) {
        memcpy(dst, src, n);
        return;
    }
    sl__team_run(&m->ex->team, team_copy_share, &c);
}

/* The compute team lent to the pipeline in an inline sink (see
 * pipeline/consumer_team.h): called on the executor's thread from GetNext,
 * between two steps, it runs one call of fn per thread of the team. */
typedef struct team_turns {
    void (*fn)(void *arg, int worker);
    void *arg;
} team_turns;

static void team_turn_share(void *arg, const sl__share *share)
{
    team_turns *t = arg;
    size_t begin, end;
    sl__share_range(share, SL__GRAIN_THREAD, (size_t)(share->count / share->per_thread), 1,
                    &begin, &end);
    for (size_t i = begin; i < end; i++)
        t->fn(t->arg, share->worker);
}

static void run_on_team(void *arg, void (*fn)(void *fn_arg, int worker), void *fn_arg)
{
    sl_model *m = arg;
    team_turns t = {fn, fn_arg};
    if (m->ex->team.nthreads < 2) {
        fn(fn_arg, 0);
        return;
    }
    sl__team_run(&m->ex->team, team_turn_share, &t);
}

int sl__model_team_fills_cpus(const sl_model *m)
{
    return m->ex->team.nthreads >= sl__cpus_available();
}

/* Starts a channel for the model's training step on its device, its
 * pipeline at start (NULL: the dataset's beginning). */
int sl__sink_start_channel(sl_model *m, sl_dataset *ds, const sl_train_options *o,
                           int64_t num_epochs, const sl__train_start *start, const char *what,
                           sl__channel **out)
{
    sl__channel_options fo;
    sl_step *step = m->train_step;
    sl__cpu_affinity saved;
    int rc, pinned;

    memset(&fo, 0, sizeof fo);
    fo.profiler = m->trace_profiler; /* set by a sink-mode train only */
    fo.autotune = o->autotune;
    fo.autotune_max_workers = o->autotune_max_workers;
    fo.autotune_log = o->autotune_log;
    fo.autotune_log_arg = o->autotune_log_arg;
    fo.queue_name = "train";
    fo.capacity = (size_t)o->queue_capacity;
    fo.max_bytes = (size_t)o->queue_max_bytes;
    fo.num_epochs = num_epochs;
    if (start) {
        fo.start_epoch = start->epoch;
        fo.start_rows = start->rows * sl__model_train_devices(m); /* batches */
    }
    fo.stuck_ms = o->getnext_timeout_ms > 0 ? o->getnext_timeout_ms / 2 : 10000;
    /* several devices: a transfer thread deals the batches */
    fo.inline_transfer = !m->replicas && sl_model_transfer_mode(m, o) == SL_TRANSFER_INLINE;
    fo.getnext_timeout_ms = o->getnext_timeout_ms;
    if (fo.inline_transfer) {
        /* the sink's GetNext, and so the copy, runs on the executor's thread */
        fo.host_copy = host_copy_on_team;
        fo.host_copy_arg = m;
        /* The pipeline may run its map+batch on the team between steps
         * (pipeline/consumer_team.h), when the team fills the CPUs: with
         * a CPU to spare, its own threads cost the steps nothing. */
        if (sl__model_team_fills_cpus(m)) {
            /* the threads that run at once (no more than the CPUs) */
            m->pipeline_team.nthreads = m->ex->team.active;
            m->pipeline_team.run = run_on_team;
            m->pipeline_team.arg = m;
            m->pipeline_team.warmup_chunks = 0; /* the defaults */
            m->pipeline_team.max_chunk_ms = 0;
            fo.team = &m->pipeline_team;
        }
    }
    fo.lend = 1; /* on the cpu device, batches are stacked into the queue's slots */
    fo.ncolumns = sl_step_num_inputs(step);
    rc = sl__model_map_columns(m, step, ds, what, fo.columns);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < fo.ncolumns; i++) {
        int node = sl_step_input_node(step, i);
        sl_graph_node_spec(m->g, node, &fo.specs[i]);
        fo.names[i] = sl_graph_node_name(m->g, node);
    }
    /* the pipeline's and transfer's threads start off a sim's own cores */
    pinned = sl__model_host_pin(m, &saved);
    if (m->replicas) {
        sl_device *devs[SL__MAX_REPLICAS];
        for (int k = 0; k < m->replicas->n; k++)
            devs[k] = m->replicas->reps[k].dev;
        rc = sl__channel_new(out, ds, devs, (size_t)m->replicas->n, &fo, &m->err);
    } else {
        rc = sl__channel_new(out, ds, &m->dev, 1, &fo, &m->err);
    }
    sl__model_host_unpin(&saved, pinned);
    if (rc < 0)
        sl__err_prefix(&m->err, "%s: ", what);
    return rc;
}

/* Adds the channel's figures to the model's sink stats. */
void sl__sink_collect_stats(sl_model *m, sl__channel *f)
{
    sl__channel_stats fs;
    sl__channel_get_stats(f, &fs);
    m->sink_stats.batches_sent += (int64_t)fs.batches;
    m->sink_stats.channel_full_ms += fs.channel_full_ms;
    m->sink_stats.transfer_copy_ms += fs.copy_ms;
    m->sink_stats.transfer_wait_ms += fs.pipeline_wait_ms;
}

/* Where a train's time went, per stage (sl_model_get_stage_stats): the
 * channel's stages, then the executor and the host, over the elapsed_ms
 * since the channel started, of which sink_ms ran sinks (the rest is the
 * host's: callbacks and its loop); startup_wait_ms: the first GetNext's. */
static void collect_stages(sl_model *m, sl__channel *f, double elapsed_ms, double sink_ms,
                           double startup_wait_ms)
{
    const size_t max = SL__MODEL_MAX_STAGES;
    size_t n = sl__channel_get_stage_stats(f, m->stages, max - 2);
    sl_stage_stats *ex, *host;
    if (n > max - 2)
        n = max - 2;
    ex = &m->stages[n];
    host = &m->stages[n + 1];
    memset(ex, 0, sizeof *ex);
    snprintf(ex->name, sizeof ex->name, "executor (%s)", sl_device_name(m->dev));
    ex->threads = 1;
    ex->rows = (uint64_t)m->sink_stats.steps;
    ex->elapsed_ms = elapsed_ms;
    ex->thread_ms = elapsed_ms;
    ex->wait_input_ms = m->sink_stats.getnext_wait_ms;
    ex->startup_wait_ms = startup_wait_ms;
    ex->blocked_output_ms = elapsed_ms > sink_ms ? elapsed_ms - sink_ms : 0;
    ex->busy_ms = sink_ms > ex->wait_input_ms ? sink_ms - ex->wait_input_ms : 0;
    memset(host, 0, sizeof *host);
    snprintf(host->name, sizeof host->name, "host (callbacks)");
    host->threads = 1;
    host->rows = (uint64_t)m->sink_stats.sinks;
    host->elapsed_ms = elapsed_ms;
    host->thread_ms = elapsed_ms;
    host->wait_input_ms = sink_ms;
    /* Its callbacks and its own loop: whatever was not waiting. */
    host->busy_ms = elapsed_ms > sink_ms ? elapsed_ms - sink_ms : 0;
    m->nstages = n + 2;
}

int sl__model_train_sink(sl_model *m, int64_t epochs, sl_dataset *ds, sl_callback *const *cbs,
                         size_t ncbs, const sl_train_options *o)
{
    sl__channel *f = NULL;
    sl__train_start start;
    sl_train_info info;
    int64_t size, first_epoch, done_in_epoch;
    int rc, size_rc;

    double started, sink_ms = 0, startup_wait_ms = 0;

    /* m->stop: reset by sl_model_train_opts, before the replicas were made */
    memset(&m->sink_stats, 0, sizeof m->sink_stats);
    m->nstages = 0;
    if (epochs < 1)
        return sl__errf(&m->err, SL_EINVAL, "train: epochs %lld must be >= 1",
                        (long long)epochs);
    size_rc = sl_dataset_get_dataset_size(ds, &size);
    if (size_rc == SL_OK && size == 0)
        return sl__errf(&m->err, SL_EINVAL,
                        "train: an epoch of the dataset holds no batch (fewer samples than "
                        "the batch size, with drop_remainder?)");
    if (o->sink_size < 0 && size_rc == SL_OK && size == SL_DATASET_SIZE_ENDLESS)
        return sl__errf(&m->err, SL_EINVAL,
                        "train: sink_size -1 sinks one epoch of the dataset at a time, but this "
                        "dataset has no end (repeat -1): give sink_size > 0");
    rc = sl__model_train_start(m, ds, o, epochs, &start);
    if (rc < 0 || start.done)
        return rc;
    /* Where the loop below starts: with sink_size -1 the dataset's epochs
     * are the sinks' (and a resumed first sink runs to the epoch's end);
     * with sink_size > 0 every sink_size steps from the run's start make
     * an epoch. */
    if (o->sink_size > 0) {
        first_epoch = (m->global_step - start.run_start) / o->sink_size;
        done_in_epoch = (m->global_step - start.run_start) % o->sink_size;
    } else {
        first_epoch = start.epoch;
        done_in_epoch = start.rows;
    }
    /* sink_size > 0: an endless traversal that each epoch continues. */
    started = sl__now_ms();
    m->trace_profiler = o->profiler;
    m->exec_track = NULL;
    rc = sl__sink_start_channel(m, ds, o, o->sink_size > 0 ? -1 : epochs, &start, "train", &f);
    if (rc < 0) {
        m->trace_profiler = NULL;
        return rc;
    }
    sl__model_set_active_channel(m, f);

    memset(&info, 0, sizeof info);
    info.epoch_num = epochs;
    info.steps_per_epoch = o->sink_size > 0 ? o->sink_size : (size_rc == SL_OK ? size : -1);
    if (o->sink_size < 0 && info.steps_per_epoch > 0)
        info.steps_per_epoch /= sl__model_train_devices(m); /* global steps */
    info.global_step = m->global_step;
    info.batch_size = m->opts.network.batch * sl__model_train_devices(m) *
                      sl__model_train_ranks(m); /* global */
    info.model = m;
    rc = sl__model_run_hooks(m, cbs, ncbs, SL__HOOK_BEGIN, &info);
    for (int64_t e = first_epoch + 1; e <= epochs && rc == SL_OK && !atomic_load(&m->stop); e++) {
        sl__sink_run r;
        int64_t want = o->sink_size > 0 ? o->sink_size - done_in_epoch : -1;
        double t0;
        if (o->max_steps > 0) {
            int64_t left = o->max_steps - (m->global_step - start.run_start);
            if (left <= 0)
                break;
            if (want < 0 || want > left)
                want = left;
        }
        info.epoch = e;
        info.step_in_epoch = done_in_epoch;
        rc = sl__model_run_hooks(m, cbs, ncbs, SL__HOOK_EPOCH_BEGIN, &info);
        if (rc < 0 || atomic_load(&m->stop))
            break;
        t0 = sl__now_ms();
        sl__sink_run_once(m, f, want, o->sink_size < 0, o->getnext_timeout_ms, &r);
        info.epoch_ms = sl__now_ms() - t0;
        if (e == first_epoch + 1)
            startup_wait_ms = r.first_wait_ms; /* the pipeline starting */
        sink_ms += info.epoch_ms;
        info.global_step = m->global_step;
        info.step_in_epoch = done_in_epoch + r.steps;
        done_in_epoch = 0;
        info.loss = r.loss;
        info.step_ms = r.steps ? info.epoch_ms / (double)r.steps : 0;
        if (r.rc < 0) {
            rc = sl__errf(&m->err, r.rc, "train: epoch %lld (global step %lld): %s",
                          (long long)e, (long long)m->global_step + 1, r.err.msg);
            break;
        }
        if (atomic_load(&m->stop))
            break;
        if (r.steps == 0) {
            rc = sl__errf(&m->err, SL_EINVAL, "train: epoch %lld held no batch", (long long)e);
            break;
        }
        rc = sl__model_run_hooks(m, cbs, ncbs, SL__HOOK_STEP_END, &info);
        if (rc == SL_OK)
            rc = sl__model_run_hooks(m, cbs, ncbs, SL__HOOK_EPOCH_END, &info);
        if (r.end_of_data)
            break;
    }
    sl__sink_collect_stats(m, f);
    collect_stages(m, f, sl__now_ms() - started, sink_ms, startup_wait_ms);
    /* The profiler is the caller's: nothing records into it after train. */
    sl__step_trace(m->train_step, NULL, NULL, 0, 0);
    m->trace_profiler = NULL;
    m->exec_track = NULL;
    /* Across ranks, the others learn of an error before the join below,
     * which a stuck pipeline thread could hold up. */
    if (rc < 0 && m->replicas && m->replicas->distributed)
        sl__replicas_leave_on_error(m->replicas);
    /* Joins the transfer thread and every pipeline thread. */
    sl__model_set_active_channel(m, NULL);
    sl__channel_free(f);
    if (rc == SL_OK)
        rc = sl__model_run_hooks(m, cbs, ncbs, SL__HOOK_END, &info);
    return rc;
}
