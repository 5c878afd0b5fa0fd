/* iterator.c: the iterator's public API and its consumer side. Making an
 * iterator plans its stages (iterator_plan.c) and starts their threads
 * (stage_source.c, stage_workers.c); sl_iterator_next takes chunks from the
 * last stage's queue and hands out their rows, ends of epoch, the end of
 * data and errors, in order. Shutdown sets `stop`, closes every queue
 * (waking every blocked thread), joins every thread and then frees what the
 * queues still hold. */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/cpu.h"
#include "core/options.h"
#include "core/tensor_impl.h"
#include "ops/op_impl.h"
#include "pipeline/batch_lender.h"
#include "pipeline/combine.h"
#include "pipeline/iterator_impl.h"
#include "pipeline/iterator_report.h"
#include "pipeline/iterator_wake.h"

/* The end of the first version's fields: fixed forever (core/options.h). */
static const size_t iterator_options_v1_size =
    offsetof(sl_iterator_options, unused0) + sizeof(int32_t);
/* No tail padding, so a caller's size covers only fields it knows; name the
 * last field here when one is appended. */
_Static_assert(sizeof(sl_iterator_options) ==
                   offsetof(sl_iterator_options, autotune_log_arg) + sizeof(void *),
               "sl_iterator_options: name its last field here; no tail padding "
               "(core/options.h)");

void sl_iterator_options_init_sized(sl_iterator_options *o, size_t size)
{
    sl_iterator_options d;
    memset(&d, 0, sizeof d);
    d.num_epochs = 1;
    d.queue_chunks = 8;
    d.chunk_rows = 64;
    d.timeout_ms = -1;
    d.autotune_max_workers = sl__cpus_available() < 256 ? sl__cpus_available() : 256;
    sl__options_init(o, size, &d, sizeof d);
}

const char *sl_iterator_last_error(const sl_iterator *it)
{
    return it->error.msg;
}

void sl_row_clear(sl_row *row)
{
    for (size_t i = 0; i < SL_MAX_COLUMNS; i++) {
        sl_tensor_release(row->columns[i]);
        row->columns[i] = NULL;
    }
    row->ncolumns = 0;
}

static void shutdown_stages(sl_iterator *it)
{
    atomic_store(&it->stop, 1);
    /* A decode worker waiting for budget wakes and sees the stop. */
    if (it->has_decode_budget)
        sl__byte_budget_close(&it->decode_budget);
    /* A source thread waiting for another iterator's load sees the flag. */
    if (it->source->iface->wake)
        it->source->iface->wake(it->source);
    /* A source thread waiting for a part of a concat or zip returns. */
    if (it->combined)
        sl__combine_interrupt(it->combined);
    for (size_t s = 0; s < it->nstages; s++) {
        sl__queue_close(&it->stages[s].out);
        sl__stage_wake_parked(&it->stages[s]);
    }
    for (size_t s = 0; s < it->nstages; s++)
        for (int t = 0; t < it->stages[s].started; t++)
            pthread_join(it->stages[s].threads[t], NULL);
    for (size_t s = 0; s < it->nstages; s++)
        it->stages[s].started = 0;
}

/* Makes the decode budget when a map of the pipeline decodes: the
 * dataset's, or by default the largest image one of its Decodes accepts. */
static int make_decode_budget(sl_iterator *it, uint64_t bytes)
{
    uint64_t largest = 0;
    int rc;
    for (size_t i = 0; i < it->nnodes; i++) {
        for (size_t k = 0; k < it->nodes[i].nops; k++) {
            uint64_t need = sl__op_decode_max_bytes(it->nodes[i].ops[k]);
            if (need > largest)
                largest = need;
        }
    }
    if (largest == 0)
        return SL_OK;
    rc = sl__byte_budget_init(&it->decode_budget, bytes > 0 ? bytes : largest, &it->error);
    if (rc == SL_OK)
        it->has_decode_budget = 1;
    return rc;
}

static int64_t count_passes(const sl_iterator *it)
{
    int64_t passes = it->opts.num_epochs;
    for (size_t i = 0; i < it->nnodes && passes > 0; i++) {
        const sl__node *node = &it->nodes[i];
        if (node->kind != SL__NODE_REPEAT)
            continue;
        if (node->count < 0 || passes > INT64_MAX / node->count)
            passes = -1;
        else
            passes *= node->count;
    }
    return passes;
}

/* A concat or zip: starts its parts' iterators, before the stages are
 * planned (they plan differently for it) and their threads start. */
static int open_parts(sl_iterator *it)
{
    if (it->bad.mode != SL_ERROR_SAMPLES_RAISE)
        return sl__errf(&it->error, SL_EINVAL,
                        "%s: bad samples are dealt with in each of its datasets: call "
                        "set_error_samples on them before combining them",
                        it->source->iface->kind);
    return sl__combine_open(&it->combined, it->source, &it->opts, it->passes,
                            it->opts.start_epoch, &it->error);
}

int sl_iterator_new(sl_iterator **out, sl_dataset *ds, const sl_iterator_options *user)
{
    return sl__iterator_new_lending(out, ds, user, NULL, NULL);
}

int sl__iterator_new_lending(sl_iterator **out, sl_dataset *ds, const sl_iterator_options *user,
                             sl__batch_lender *lender, const sl__consumer_team *team)
{
    sl_iterator_options opts;
    const sl_iterator_options *o = &opts;
    sl_iterator *it;
    int rc;
    *out = NULL;
    if (!ds->source)
        return sl__errf(&ds->error, SL_ESTATE, "iterator: the dataset has no source");
    sl_iterator_options_init(&opts);
    rc = sl__options_read(&opts, sizeof opts, iterator_options_v1_size, user,
                          "sl_iterator_options", &ds->error);
    if (rc != SL_OK) {
        sl__err_prefix(&ds->error, "iterator: ");
        return rc;
    }
    if (o->num_epochs == 0 || o->num_epochs < -1)
        return sl__errf(&ds->error, SL_EINVAL, "iterator: num_epochs must be >= 1 or -1, got %lld",
                        (long long)o->num_epochs);
    if (o->queue_chunks == 0 || o->chunk_rows == 0)
        return sl__errf(&ds->error, SL_EINVAL, "iterator: queue_chunks and chunk_rows must be >= 1");
    if (o->start_epoch < 0 || o->start_rows < 0 ||
        (o->num_epochs > 0 && o->start_epoch >= o->num_epochs))
        return sl__errf(&ds->error, SL_EINVAL,
                        "iterator: start_epoch %lld and start_rows %lld must be >= 0, and "
                        "start_epoch below num_epochs (%lld)",
                        (long long)o->start_epoch, (long long)o->start_rows,
                        (long long)o->num_epochs);
    if (o->autotune && (o->autotune_max_workers < 1 || o->autotune_max_workers > 256))
        return sl__errf(&ds->error, SL_EINVAL,
                        "iterator: autotune_max_workers must be 1 to 256, got %d",
                        (int)o->autotune_max_workers);
    it = calloc(1, sizeof *it);
    if (!it)
        return sl__errf(&ds->error, SL_ENOMEM, "iterator: out of memory");
    it->opts = opts;
    it->lender = lender;
    it->team = team && team->nthreads >= 1 ? team : NULL;
    it->epochs_out = opts.start_epoch;
    it->epoch_rows_out = opts.start_rows;
    atomic_init(&it->stop, 0);
    atomic_init(&it->interrupted, 0);
    it->source = ds->source;
    sl__source_retain(it->source);
    it->seed = ds->seed;
    it->schema = ds->schema;
    it->pool = ds->pool;
    sl__pool_retain(it->pool);
    it->bad = ds->error_samples;
    it->fuse_decode = ds->decode_fusion + SL_DECODE_FUSION_CROP; /* stored off by one */
    rc = sl__nodes_copy(&it->nodes, ds->nodes, ds->nnodes);
    if (rc == SL_OK) {
        it->nnodes = ds->nnodes;
        it->passes = count_passes(it);
        rc = make_decode_budget(it, ds->decode_budget);
    }
    if (rc == SL_OK)
        rc = sl__standins_init(it);
    if (rc == SL_OK && sl__source_is_combined(it->source))
        rc = open_parts(it);
    if (rc == SL_OK)
        rc = sl__stages_build(it);
    if (rc == SL_OK)
        rc = sl__autotune_new(it);
    if (rc != SL_OK) {
        sl__errf(&ds->error, rc, "iterator: cannot set up the pipeline: %s",
                 it->error.status != SL_OK ? it->error.msg : sl_strerror(rc));
        sl_iterator_free(it);
        return rc;
    }
    it->started_ms = sl__now_ms();
    for (size_t s = 0; s < it->nstages && rc == SL_OK; s++) {
        sl__stage *st = &it->stages[s];
        st->trace_name = sl__trace_intern(it->opts.profiler, st->name);
        if (it->opts.profiler) {
            char qname[128];
            snprintf(qname, sizeof qname, "%s queue", st->name);
            st->trace_queue_name = sl__trace_intern(it->opts.profiler, qname);
        }
        sl__occupancy_start(&st->thread_time, it->started_ms);
        sl__occupancy_start(&st->team_time, it->started_ms);
        atomic_store(&st->running, st->nthreads);
        for (int t = 0; t < st->nthreads; t++) {
            if (pthread_create(&st->threads[t], NULL, sl__stage_main(st->kind), st) != 0) {
                rc = sl__errf(&ds->error, SL_ETHREAD, "iterator: cannot start a thread for stage '%s'",
                              st->name);
                break;
            }
            st->started++;
            /* "sl-source", "sl-map", ...: tells the threads apart in top -H,
             * perf and gdb (names are cut at 15 characters). */
            pthread_setname_np(st->threads[t], st->kind == SL__STAGE_SOURCE  ? "sl-source"
                                               : st->kind == SL__STAGE_MAP   ? "sl-map"
                                               : st->kind == SL__STAGE_COLLATE ? "sl-batch"
                                                                          : "sl-sequential");
        }
    }
    if (rc != SL_OK) {
        sl_iterator_free(it);
        return rc;
    }
    sl__err_clear(&ds->error);
    *out = it;
    return SL_OK;
}

void sl_iterator_free(sl_iterator *it)
{
    if (!it)
        return;
    shutdown_stages(it);
    sl__combine_close(it->combined); /* joins the parts' threads */
    sl__autotune_free(it); /* gives the pool back the limit it had */
    sl__stages_free(it);
    sl__chunk_free(it->cur);
    sl__nodes_free(it->nodes, it->nnodes);
    sl__source_release(it->source);
    sl__pool_release(it->pool);
    if (it->has_decode_budget)
        sl__byte_budget_destroy(&it->decode_budget);
    sl__standins_destroy(it);
    free(it);
}

/* --- the consumer ---------------------------------------------------------- */

static void describe_stall(sl_iterator *it, int timeout_ms)
{
    char buf[SL_ERRMSG_LEN];
    size_t used = 0;
    const char *stalled = "source";
    /* The most downstream stage whose input is waiting while its own
     * output is empty is the one that keeps the consumer waiting. */
    for (size_t s = 0; s < it->nstages; s++) {
        size_t n = sl__queue_size(&it->stages[s].out);
        if (n == 0 && (s == 0 || sl__queue_size(&it->stages[s - 1].out) > 0))
            stalled = it->stages[s].name;
        used += (size_t)snprintf(buf + used, used < sizeof buf ? sizeof buf - used : 0, "%s%s: %zu",
                                 s ? ", " : "", it->stages[s].name, n);
        if (used >= sizeof buf)
            break;
    }
    sl__errf(&it->error, SL_ETIMEDOUT,
             "iterator: no row within %d ms; stage '%s' is the slowest (chunks waiting after each "
             "stage: %s)",
             timeout_ms, stalled, buf);
}

void sl__iterator_describe(sl_iterator *it, double stuck_ms, char *buf, size_t len)
{
    double now = sl__now_ms(), newest = 0;
    const char *slowest = it->stages[0].name;
    size_t used = 0;
    for (size_t s = 0; s < it->nstages; s++) {
        double last, waited;
        sl__queue_push_times(&it->stages[s].out, &last, &waited);
        if (last > newest)
            newest = last;
        if (sl__queue_size(&it->stages[s].out) == 0 &&
            (s == 0 || sl__queue_size(&it->stages[s - 1].out) > 0))
            slowest = it->stages[s].name;
    }
    if (newest == 0)
        used = (size_t)snprintf(buf, len, "the pipeline has output nothing yet");
    else if (now - newest >= stuck_ms)
        used = (size_t)snprintf(buf, len,
                                "the pipeline is stuck: no stage has output anything for %.1f s",
                                (now - newest) / 1e3);
    else
        used = (size_t)snprintf(buf, len, "the pipeline is slow: a stage output %.0f ms ago",
                                now - newest);
    used += (size_t)snprintf(buf + (used < len ? used : len), used < len ? len - used : 0,
                             "; stage '%s' keeps the others waiting; last output of each stage:",
                             slowest);
    for (size_t s = 0; s < it->nstages && used < len; s++) {
        double last, waited;
        sl__queue_push_times(&it->stages[s].out, &last, &waited);
        if (last == 0)
            used += (size_t)snprintf(buf + used, len - used, "%s %s never", s ? "," : "",
                                     it->stages[s].name);
        else
            used += (size_t)snprintf(buf + used, len - used, "%s %s %.1f s ago", s ? "," : "",
                                     it->stages[s].name, (now - last) / 1e3);
    }
}

double sl__iterator_team_ms(const sl_iterator *it)
{
    return it->team_ms;
}

double sl__iterator_output_blocked_ms(sl_iterator *it)
{
    double last, waited;
    sl__queue_push_times(&it->stages[it->nstages - 1].out, &last, &waited);
    return waited;
}

/* Makes chunk's error the iterator's (sticky) status; frees chunk. */
static int take_error(sl_iterator *it, sl__chunk *chunk)
{
    sl__err_copy(&it->error, &chunk->error);
    it->status = chunk->error.status != SL_OK ? chunk->error.status : SL_EIO;
    sl__chunk_free(chunk);
    return it->status;
}

/* Makes the interruption the iterator's (sticky) status. */
static int take_interrupt(sl_iterator *it)
{
    it->status = sl__errf(&it->error, SL_ECANCELED,
                          "iterator: interrupted (sl_iterator_interrupt was called)");
    return it->status;
}

void sl_iterator_interrupt(sl_iterator *it)
{
    atomic_store(&it->interrupted, 1);
    /* Wakes a consumer asleep on the last queue; the flag makes later
     * calls return at once. */
    sl__queue_interrupt(&it->stages[it->nstages - 1].out);
    /* A consumer (or its team) running the source stage itself may be
     * waiting inside a part of a concat or zip. */
    if (it->combined)
        sl__combine_interrupt(it->combined);
}

void sl__iterator_wake(sl_iterator *it)
{
    sl__queue_wake(&it->stages[it->nstages - 1].out);
}

void sl__iterator_unwake(sl_iterator *it)
{
    sl__queue_unwake(&it->stages[it->nstages - 1].out);
}

int sl_iterator_next(sl_iterator *it, sl_row *row)
{
    sl__stage *last = &it->stages[it->nstages - 1];
    memset(row, 0, sizeof *row);
    if (it->status != SL_OK)
        return it->status;
    if (atomic_load(&it->interrupted))
        return take_interrupt(it);
    for (;;) {
        sl__chunk *chunk;
        int rc;
        if (it->cur && it->pos < it->cur->nrows) {
            sl__row *r = &it->cur->rows[it->pos++];
            row->ncolumns = it->schema.ncols;
            memcpy(row->columns, r->col, sizeof r->col);
            memset(r->col, 0, sizeof r->col);
            /* the row may now outlive the iterator and its pool's owners */
            for (size_t c = 0; c < row->ncolumns; c++)
                sl__tensor_escape(row->columns[c]);
            it->rows_out++;
            it->epoch_rows_out++;
            if (it->tune)
                sl__autotune_tick(it);
            return SL_OK;
        }
        if (it->cur && it->cur->kind == SL__CHUNK_ERROR) {
            /* Its rows are delivered: now the error. */
            chunk = it->cur;
            it->cur = NULL;
            return take_error(it, chunk);
        }
        sl__chunk_free(it->cur);
        it->cur = NULL;
        rc = SL_ETIMEDOUT;
        if (last->team_able && sl__stage_on_team(last)) {
            /* Nothing runs ahead: with nothing ready, a round on the team
             * makes the next batches. */
            rc = sl__queue_pop(&last->out, (void **)&chunk, NULL, 0);
            if (rc == SL_ETIMEDOUT)
                sl__stage_team_round(last);
        }
        if (rc == SL_ETIMEDOUT)
            rc = sl__queue_pop(&last->out, (void **)&chunk, NULL, it->opts.timeout_ms);
        if (rc == SL_ETIMEDOUT) {
            describe_stall(it, it->opts.timeout_ms);
            return rc;
        }
        if (rc == SL_ECANCELED && !atomic_load(&it->interrupted))
            return sl__errf(&it->error, SL_ECANCELED,
                            "iterator: woken by a stop (the next call goes on)");
        if (rc == SL_ECANCELED)
            return take_interrupt(it);
        if (rc != SL_OK) {
            it->status = sl__errf(&it->error, SL_ECLOSED,
                                  "iterator: the pipeline stopped without an end of data or an "
                                  "error (out of memory?)");
            return it->status;
        }
        /* Bad samples among the chunk's rows are counted and reported
         * before its rows go out; past the cap, none of them does. */
        if (chunk->bad && sl__bad_account(it, chunk) != SL_OK) {
            sl__chunk_free(chunk);
            return it->status;
        }
        switch (chunk->kind) {
        case SL__CHUNK_ROWS:
            it->cur = chunk;
            it->pos = 0;
            continue;
        case SL__CHUNK_EOE:
            sl__chunk_free(chunk);
            /* The last epoch asked for ends the data, also where the stream
             * runs on (a take after an endless repeat ends each epoch). */
            it->epoch_rows_out = 0;
            if (++it->epochs_out == it->opts.num_epochs)
                it->status = SL_END_OF_DATA;
            return SL_END_OF_EPOCH;
        case SL__CHUNK_EOF:
            sl__chunk_free(chunk);
            it->status = SL_END_OF_DATA;
            return it->status;
        case SL__CHUNK_ERROR:
            if (chunk->nrows > 0) {
                /* Rows a map finished before it failed come first. */
                it->cur = chunk;
                it->pos = 0;
                continue;
            }
            return take_error(it, chunk);
        }
    }
}

void sl_iterator_get_position(const sl_iterator *it, int64_t *epoch, int64_t *rows)
{
    *epoch = it->epochs_out;
    *rows = it->epoch_rows_out;
}

void sl_iterator_get_stats(const sl_iterator *it, sl_iterator_stats *out)
{
    memset(out, 0, sizeof *out);
    out->source_load_ms = it->source->iface->load_ms(it->source);
    out->rows_out = it->rows_out;
    out->pool_bytes = sl__pool_bytes(it->pool);
    sl__pool_stats_public(it->pool, &out->pool);
    for (size_t s = 0; s < it->nstages; s++)
        out->threads += it->stages[s].nthreads;
    if (it->combined)
        out->threads += sl__combine_threads(it->combined);
    out->consumer_wakeups = sl__queue_pop_wakeups(&it->stages[it->nstages - 1].out);
    out->samples_skipped = it->samples_skipped;
    out->samples_replaced = it->samples_replaced;
}
