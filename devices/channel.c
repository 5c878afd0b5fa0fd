/* channel.c: the channel's transfer thread, between the pipeline's last
 * queue and the device queues (see channel.h). */
#include "devices/channel.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/cpu.h"
#include "core/trace.h"
#include "devices/device_impl.h"
#include "devices/dq_tune.h"
#include "pipeline/batch_lender.h"
#include "pipeline/iterator_report.h"
#include "pipeline/iterator_wake.h"
#include "sluice/iterator.h"

/* What the transfer thread is doing, for GetNext's timeout message. */
enum transfer_state { WAITING_PIPELINE, WAITING_SLOT, COPYING, FINISHED };

static const char *const state_names[] = {
    [WAITING_PIPELINE] = "waiting for the pipeline's next batch",
    [WAITING_SLOT] = "waiting for a free slot",
    [COPYING] = "copying a batch",
    [FINISHED] = "finished",
};

struct sl__channel {
    sl_iterator *it;
    sl__channel_options opts;
    size_t ndevices;
    sl__device_queue *queues[SL__CHANNEL_MAX_DEVICES];
    pthread_t thread;
    int started;
    atomic_int state;
    _Atomic double since_ms;   /* when state was entered */
    atomic_ullong batches;
    atomic_ullong claimed;     /* of batches, sent in a lent slot */
    /* written by the transfer thread, read under stats_lock */
    pthread_mutex_t stats_lock;
    double copy_ms, pipeline_wait_ms, slot_wait_ms;
    double first_wait_ms;      /* of pipeline_wait_ms, for the first row */
    int waited_once;           /* first_wait_ms is set */
    sl__track *track;          /* the transfer thread's, with a profiler */
    const char *queue_counter[SL__CHANNEL_MAX_DEVICES]; /* "<queue> filled" */
    int tuning;                /* the transfer thread tunes each queue's depth */
    sl__dq_tune tune[SL__CHANNEL_MAX_DEVICES];
    double started_ms;         /* set before the transfer thread starts */
    /* With opts.lend (and one device that reads host memory): lends the
     * pipeline queue 0's spare slots to stack batches into. */
    sl__batch_lender lender;
    int lending;
};

static void set_state(sl__channel *f, enum transfer_state s, double now)
{
    atomic_store(&f->since_ms, now);
    atomic_store(&f->state, s);
}

/* For GetNext's timeout: what the transfer thread and the pipeline do. */
static void describe(void *arg, char *buf, size_t len)
{
    sl__channel *f = arg;
    int s = atomic_load(&f->state);
    double since = atomic_load(&f->since_ms);
    size_t used = (size_t)snprintf(buf, len,
                                   "%s has been %s for %.1f s (%llu batches sent); ",
                                   f->opts.inline_transfer
                                       ? "the executor, which moves batches itself (no CPU "
                                         "is left for a transfer thread),"
                                       : "the transfer thread",
                                   state_names[s], (sl__now_ms() - since) / 1e3,
                                   (unsigned long long)atomic_load(&f->batches));
    if (used < len)
        sl__iterator_describe(f->it, (double)f->opts.stuck_ms, buf + used, len - used);
}

/* Sends a marker (an end or an error) to every queue, in order after the
 * batches already sent. Returns SL_OK or the first failure (a closed queue:
 * the channel is being freed). */
static int broadcast(sl__channel *f, int status, const sl__error *err)
{
    int rc = SL_OK;
    for (size_t d = 0; d < f->ndevices; d++) {
        int r = sl__dq_push_marker(f->queues[d], status, err, -1, NULL);
        if (r < 0 && rc == SL_OK)
            rc = r;
    }
    return rc;
}

/* Checks the row's columns against the slot's specs: same dtype and shape. */
static int check_row(sl__channel *f, const sl_row *row, uint64_t batch, sl__error *err)
{
    for (size_t c = 0; c < f->opts.ncolumns; c++) {
        const sl_tensor *t = row->columns[f->opts.columns[c]];
        const sl_tensor_spec *want = &f->opts.specs[c];
        char got_s[96], want_s[96];
        if (t->dtype == want->dtype && sl__shape_equal(t->ndim, t->shape, want->ndim, want->shape))
            continue;
        sl_shape_str(got_s, sizeof got_s, t->ndim, t->shape);
        sl_shape_str(want_s, sizeof want_s, want->ndim, want->shape);
        return sl__errf(err, SL_ESHAPE,
                        "transfer: batch %llu's column '%s' is %s %s, but the device queue's "
                        "slots hold %s %s (the shape the step was compiled for; batch with "
                        "drop_remainder so every batch is full)",
                        (unsigned long long)batch + 1, f->opts.names[c], sl_dtype_name(t->dtype),
                        got_s, sl_dtype_name(want->dtype), want_s);
    }
    return SL_OK;
}

/* The pipeline's batch lender: a free slot of queue 0, its columns mapped
 * to the row's (a column the row has not, or has twice, goes back now). */
static sl__lender *lend_slot(sl__batch_lender *b, size_t ncols, void **data, size_t *bytes)
{
    sl__channel *f = (sl__channel *)((char *)b - offsetof(sl__channel, lender));
    sl__dq_slot *slot = sl__dq_lend(f->queues[0]);
    size_t lent = 0;
    if (!slot)
        return NULL;
    for (size_t c = 0; c < f->opts.ncolumns; c++) {
        size_t col = (size_t)f->opts.columns[c];
        if (col < ncols && !data[col]) {
            data[col] = slot->columns[c].data;
            bytes[col] = slot->columns[c].nbytes;
            lent++;
        } else {
            slot->lender.give_back(&slot->lender);
        }
    }
    return lent > 0 ? &slot->lender : NULL;
}

/* Takes the slot the pipeline stacked row into, if it did (the row's
 * tensors over it are released): *slot, or NULL to copy the batch. */
static int claim_slot(sl__channel *f, sl__device_queue *q, sl_row *row, sl__dq_slot **slot)
{
    sl_tensor *cols[SL_MAX_COLUMNS];
    int rc;
    *slot = NULL;
    if (!f->lending)
        return SL_OK;
    for (size_t c = 0; c < f->opts.ncolumns; c++)
        cols[c] = row->columns[f->opts.columns[c]];
    rc = sl__dq_claim(q, cols, slot, -1, NULL);
    if (rc == SL_OK && *slot)
        for (size_t c = 0; c < f->opts.ncolumns; c++)
            row->columns[f->opts.columns[c]] = NULL;
    return rc;
}

/* Copies row's columns into slot, an acquired slot of q. */
static int copy_batch(sl__channel *f, sl__device_queue *q, sl__dq_slot *slot, const sl_row *row,
                      sl__error *err)
{
    sl_device *d = sl__dq_device(q);
    for (size_t c = 0; c < f->opts.ncolumns; c++) {
        const sl_tensor *t = row->columns[f->opts.columns[c]];
        int rc = SL_OK;
        if (f->opts.inline_transfer && f->opts.host_copy && d->iface->reads_host) {
            f->opts.host_copy(f->opts.host_copy_arg, slot->columns[c].data, t->data, t->nbytes);
            sl__device_count_copy_in(d, t->nbytes);
        } else {
            rc = sl__device_copy_in(d, slot->columns[c].data, t->data, t->nbytes);
        }
        if (rc < 0)
            return sl__errf(err, rc,
                            "transfer: copying column '%s' of batch %llu into queue '%s' failed",
                            f->opts.names[c], (unsigned long long)atomic_load(&f->batches) + 1,
                            sl__dq_name(q));
    }
    return SL_OK;
}

/* Moves one batch into q: claims the slot the pipeline stacked it into,
 * or copies it into a free one. SL_OK, or the status that ends the thread
 * (a closed or interrupted queue, a failed copy in err). */
static int send_batch(sl__channel *f, sl__device_queue *q, sl_row *row, sl__error *err)
{
    sl__dq_slot *slot;
    double t0 = sl__now_ms(), t1, t2;
    int rc, claimed;
    set_state(f, WAITING_SLOT, t0);
    rc = claim_slot(f, q, row, &slot);
    claimed = slot != NULL;
    if (rc == SL_OK && !claimed)
        rc = sl__dq_acquire(q, &slot, -1, NULL);
    if (rc < 0)
        return rc;
    t1 = sl__now_ms();
    set_state(f, COPYING, t1);
    if (!claimed && (rc = copy_batch(f, q, slot, row, err)) < 0) {
        sl__dq_unacquire(q, slot);
        return rc;
    }
    /* The batch's place, for traces: the transfer thread (or the executor,
     * inline) is the iterator's consumer, so its position is this batch's. */
    sl_iterator_get_position(f->it, &slot->epoch, &slot->in_epoch);
    slot->in_epoch--;
    /* The copy's end is read before the commit: after it, GetNext may take
     * the batch (and end its own slice) before this thread runs again. */
    t2 = sl__now_ms();
    /* Counted before the commit: GetNext may take the batch at once, and a
     * reader of the stats must never see fewer batches sent than steps. */
    atomic_fetch_add(&f->batches, 1);
    if (claimed)
        atomic_fetch_add(&f->claimed, 1);
    sl__dq_commit(q, slot);
    if (f->track && !f->opts.inline_transfer) {
        sl__trace_slice(f->track, claimed ? "claim" : "copy", t1, t2, slot->epoch,
                        slot->in_epoch);
        size_t d = 0;
        while (d + 1 < f->ndevices && f->queues[d] != q)
            d++;
        sl__trace_counter(f->track, f->queue_counter[d], t2, (double)sl__dq_pending(q));
    }
    pthread_mutex_lock(&f->stats_lock);
    f->slot_wait_ms += t1 - t0;
    f->copy_ms += t2 - t1;
    pthread_mutex_unlock(&f->stats_lock);
    return SL_OK;
}

/* The pipeline's next row, the wait counted in the stats (not the rounds
 * an inline caller ran on its team meanwhile: work, not waiting). */
static int next_row(sl__channel *f, sl_row *row)
{
    double t0 = sl__now_ms(), team0 = sl__iterator_team_ms(f->it), waited;
    int rc;
    set_state(f, WAITING_PIPELINE, t0);
    rc = sl_iterator_next(f->it, row);
    waited = sl__now_ms() - t0 - (sl__iterator_team_ms(f->it) - team0);
    pthread_mutex_lock(&f->stats_lock);
    if (!f->waited_once) {
        f->first_wait_ms = waited;
        f->waited_once = 1;
    }
    f->pipeline_wait_ms += waited;
    pthread_mutex_unlock(&f->stats_lock);
    return rc;
}

/* Inline: gives q the pipeline's next batch or marker, on the caller's
 * thread. SL_OK when q has an entry for GetNext (a batch, an end or the
 * pipeline's error as a marker); SL_ECANCELED when a stop woke the wait;
 * SL_ETIMEDOUT with GetNext's message in err. */
static int move_one(sl__channel *f, sl__device_queue *q, sl__error *err)
{
    sl__error e;
    sl_row row;
    int rc;

    sl__err_clear(&e);
    rc = next_row(f, &row);
    if (rc == SL_OK) {
        rc = check_row(f, &row, atomic_load(&f->batches), &e);
        if (rc == SL_OK)
            rc = send_batch(f, q, &row, &e);
        sl_row_clear(&row);
        if (rc == SL_OK || rc == SL_ECLOSED)
            return SL_OK; /* closed: GetNext says so */
    } else if (rc == SL_END_OF_EPOCH || rc == SL_END_OF_DATA) {
        sl__dq_push_marker(q, rc, NULL, -1, NULL);
        return SL_OK;
    } else if (rc == SL_ECANCELED) { /* a stop woke the wait (or the channel is being freed) */
        return sl__errf(err, rc, "GetNext: queue '%s' is interrupted (until it is resumed)",
                        sl__dq_name(q));
    } else if (rc == SL_ETIMEDOUT) {
        return sl__dq_timeout_error(q, err);
    } else {
        sl__errf(&e, rc, "pipeline: %s", sl_iterator_last_error(f->it));
    }
    /* An error travels as a marker, so that every later GetNext sees it. */
    sl__dq_push_marker(q, rc, &e, -1, NULL);
    return SL_OK;
}

int sl__channel_get_next(sl__channel *f, size_t device, sl__dq_slot **slot, int64_t timeout_ms,
                        double *waited_ms, sl__error *err)
{
    sl__device_queue *q = f->queues[device];
    double t0 = sl__now_ms(), copied = 0;
    int rc = SL_OK;

    if (f->opts.inline_transfer && sl__dq_pending(q) == 0) {
        /* The copy, and the pipeline's work on the team, are work, not
         * waiting: take them out of the wait. */
        double copy0, team0 = sl__iterator_team_ms(f->it);
        pthread_mutex_lock(&f->stats_lock);
        copy0 = f->copy_ms;
        pthread_mutex_unlock(&f->stats_lock);
        rc = move_one(f, q, err);
        pthread_mutex_lock(&f->stats_lock);
        copied = f->copy_ms - copy0 + sl__iterator_team_ms(f->it) - team0;
        pthread_mutex_unlock(&f->stats_lock);
        set_state(f, WAITING_PIPELINE, sl__now_ms());
    }
    if (rc == SL_OK)
        rc = sl__dq_get_next(q, slot, timeout_ms, err);
    else
        *slot = NULL;
    if (waited_ms)
        *waited_ms = sl__now_ms() - t0 - copied;
    return rc;
}

void sl__channel_interrupt(sl__channel *f)
{
    for (size_t d = 0; d < f->ndevices; d++)
        sl__dq_interrupt(f->queues[d]);
    if (f->opts.inline_transfer)
        sl__iterator_wake(f->it);
}

void sl__channel_resume(sl__channel *f)
{
    if (f->opts.inline_transfer)
        sl__iterator_unwake(f->it);
    for (size_t d = 0; d < f->ndevices; d++)
        sl__dq_resume(f->queues[d]);
}

static void *transfer_main(void *arg)
{
    sl__channel *f = arg;
    size_t next_queue = 0;
    sl__error err;
    int rc;

    sl__err_clear(&err);
    f->track = sl__track_open(f->opts.profiler, "transfer");
    for (;;) {
        sl_row row;
        rc = next_row(f, &row);
        if (rc == SL_OK) {
            rc = check_row(f, &row, atomic_load(&f->batches), &err);
            if (rc == SL_OK) {
                rc = send_batch(f, f->queues[next_queue], &row, &err);
                if (rc == SL_OK && f->tuning)
                    sl__dq_tune_tick(&f->tune[next_queue]);
                next_queue = (next_queue + 1) % f->ndevices;
            }
            sl_row_clear(&row);
            if (rc == SL_ECLOSED || rc == SL_ECANCELED)
                break; /* the channel is being freed */
            if (rc < 0) {
                broadcast(f, rc, &err);
                break;
            }
            continue;
        }
        if (rc == SL_END_OF_EPOCH) {
            if (broadcast(f, SL_END_OF_EPOCH, NULL) < 0)
                break;
            next_queue = 0; /* batch i of every epoch goes to device i mod N */
            continue;
        }
        if (rc == SL_END_OF_DATA) {
            broadcast(f, SL_END_OF_DATA, NULL);
            break;
        }
        if (rc == SL_ECANCELED)
            break; /* interrupted: the channel is being freed */
        /* A pipeline error: it travels to GetNext with its message. */
        sl__errf(&err, rc, "pipeline: %s", sl_iterator_last_error(f->it));
        broadcast(f, rc, &err);
        break;
    }
    set_state(f, FINISHED, sl__now_ms());
    return NULL;
}

static int check_options(const sl__channel_options *o, size_t ndevices, sl__error *err)
{
    if (ndevices < 1 || ndevices > SL__CHANNEL_MAX_DEVICES)
        return sl__errf(err, SL_EINVAL, "channel: %zu devices; 1 to %d may be fed", ndevices,
                        SL__CHANNEL_MAX_DEVICES);
    if (o->capacity < 1)
        return sl__errf(err, SL_EINVAL, "channel: the queue capacity must be >= 1, not %zu",
                        o->capacity);
    if (o->inline_transfer && ndevices != 1)
        return sl__errf(err, SL_EINVAL,
                        "channel: an inline transfer feeds one device, not %zu (it runs on "
                        "that device's executor)",
                        ndevices);
    if (o->ncolumns < 1 || o->ncolumns > SL_MAX_COLUMNS)
        return sl__errf(err, SL_EINVAL, "channel: %zu columns to send; 1 to %d may be",
                        o->ncolumns, SL_MAX_COLUMNS);
    return SL_OK;
}

int sl__channel_new(sl__channel **out, sl_dataset *ds, sl_device *const *devices,
                   size_t ndevices, const sl__channel_options *o, sl__error *err)
{
    sl_iterator_options io;
    sl__channel *f;
    int rc, e;

    *out = NULL;
    rc = check_options(o, ndevices, err);
    if (rc < 0)
        return rc;
    f = calloc(1, sizeof *f);
    if (!f)
        return sl__errf(err, SL_ENOMEM, "channel: out of memory");
    f->opts = *o;
    f->ndevices = ndevices;
    if ((e = pthread_mutex_init(&f->stats_lock, NULL)) != 0) {
        free(f);
        return sl__pthread_errf(err, e, "channel: pthread_mutex_init");
    }
    /* Only a transfer thread waits for slots: it is what the tuner watches. */
    f->tuning = o->autotune && !o->inline_transfer;
    sl_iterator_options_init(&io);
    f->lending = o->lend && ndevices == 1 && sl__device_reads_host(devices[0]);
    f->lender.lend = lend_slot;
    for (size_t d = 0; d < ndevices; d++) {
        sl__dq_options qo;
        char name[96];
        snprintf(name, sizeof name, "%s/%s", sl_device_name(devices[d]),
                 o->queue_name ? o->queue_name : "train");
        memset(&qo, 0, sizeof qo);
        qo.name = name;
        qo.capacity = o->capacity;
        qo.max_bytes = o->max_bytes;
        qo.describe = describe;
        qo.describe_arg = f;
        if (f->tuning)
            qo.grow_to = SL__DQ_TUNE_MAX_SLOTS;
        if (f->lending)
            /* enough for the batches in the channel (queue_chunks, or two
             * per worker) and those being stacked (one per worker), so the
             * pipeline rarely finds none free: then that batch is copied */
            qo.lend_slots = io.queue_chunks + 3 * (size_t)sl__cpus_available();
        rc = sl__dq_new(&f->queues[d], devices[d], o->specs, o->ncolumns, &qo, err);
        if (rc < 0)
            goto fail;
        sl__dq_tune_init(&f->tune[d], f->queues[d], o->autotune_log, o->autotune_log_arg);
    }
    io.num_epochs = o->num_epochs;
    io.start_epoch = o->start_epoch;
    io.start_rows = o->start_rows;
    io.profiler = o->profiler;
    io.autotune = o->autotune;
    if (o->autotune_max_workers > 0)
        io.autotune_max_workers = o->autotune_max_workers;
    io.autotune_log = o->autotune_log;
    io.autotune_log_arg = o->autotune_log_arg;
    for (size_t d = 0; o->profiler && d < f->ndevices; d++) {
        char name[96];
        snprintf(name, sizeof name, "%s filled", sl__dq_name(f->queues[d]));
        f->queue_counter[d] = sl__trace_intern(o->profiler, name);
    }
    if (o->inline_transfer && o->getnext_timeout_ms >= 0)
        io.timeout_ms = o->getnext_timeout_ms > INT_MAX ? INT_MAX : (int)o->getnext_timeout_ms;
    f->started_ms = sl__now_ms();
    rc = sl__iterator_new_lending(&f->it, ds, &io, f->lending ? &f->lender : NULL,
                                  o->inline_transfer ? o->team : NULL);
    if (rc < 0) {
        sl__errf(err, rc, "%s", sl_dataset_last_error(ds));
        goto fail;
    }
    set_state(f, WAITING_PIPELINE, sl__now_ms());
    if (o->inline_transfer) {
        *out = f;
        return SL_OK;
    }
    if ((e = pthread_create(&f->thread, NULL, transfer_main, f)) != 0) {
        rc = sl__pthread_errf(err, e, "channel: starting the transfer thread");
        goto fail;
    }
    f->started = 1;
    pthread_setname_np(f->thread, "sl-transfer");
    *out = f;
    return SL_OK;
fail:
    sl__channel_free(f);
    return rc;
}

void sl__channel_free(sl__channel *f)
{
    if (!f)
        return;
    /* Wake the transfer thread wherever it waits: on the pipeline, or on
     * a full queue or a marker's room. */
    if (f->it)
        sl_iterator_interrupt(f->it);
    for (size_t d = 0; d < f->ndevices; d++)
        if (f->queues[d])
            sl__dq_close(f->queues[d]);
    if (f->started)
        pthread_join(f->thread, NULL);
    sl_iterator_free(f->it);
    for (size_t d = 0; d < f->ndevices; d++)
        sl__dq_free(f->queues[d]);
    pthread_mutex_destroy(&f->stats_lock);
    free(f);
}

sl__device_queue *sl__channel_queue(sl__channel *f, size_t device)
{
    return device < f->ndevices ? f->queues[device] : NULL;
}

void sl__channel_get_stats(sl__channel *f, sl__channel_stats *out)
{
    memset(out, 0, sizeof *out);
    out->batches = atomic_load(&f->batches);
    out->claimed = atomic_load(&f->claimed);
    pthread_mutex_lock(&f->stats_lock);
    out->copy_ms = f->copy_ms;
    out->pipeline_wait_ms = f->pipeline_wait_ms;
    out->first_wait_ms = f->first_wait_ms;
    out->slot_wait_ms = f->slot_wait_ms;
    pthread_mutex_unlock(&f->stats_lock);
    out->channel_full_ms = f->it ? sl__iterator_output_blocked_ms(f->it) : 0;
}

size_t sl__channel_get_stage_stats(sl__channel *f, sl_stage_stats *out, size_t max)
{
    /* The iterator's last entry is its consumer, which is the transfer
     * thread (or the executor): it is replaced by the channel's own
     * figures, read without touching the consumer's unlocked counters. */
    size_t n = sl_iterator_get_stage_stats(f->it, out, 0), pipeline = n - 1;
    sl__channel_stats fs;
    sl__dq_stats q;
    sl_stage_stats *t;
    double end;
    sl_iterator_get_stage_stats(f->it, out, pipeline < max ? pipeline : max);
    if (pipeline >= max)
        return n;
    sl__channel_get_stats(f, &fs);
    sl__dq_get_stats(f->queues[0], &q);
    end = atomic_load(&f->state) == FINISHED ? atomic_load(&f->since_ms) : sl__now_ms();
    t = &out[pipeline];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", f->opts.inline_transfer
                                                ? "transfer (inline, on the executor)"
                                                : "transfer");
    t->threads = f->opts.inline_transfer ? 0 : 1;
    t->rows = fs.batches;
    t->elapsed_ms = end - f->started_ms;
    t->thread_ms = t->threads * t->elapsed_ms;
    t->wait_input_ms = fs.pipeline_wait_ms;
    t->startup_wait_ms = fs.first_wait_ms;
    t->blocked_output_ms = fs.slot_wait_ms;
    t->busy_ms = t->threads ? t->elapsed_ms - t->wait_input_ms - t->blocked_output_ms : 0;
    if (t->busy_ms < 0)
        t->busy_ms = 0;
    t->capacity = q.slots;
    t->occupancy = q.occupancy;
    return n;
}
