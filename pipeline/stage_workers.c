/* stage_workers.c: the threads of the stages after the source. Map and
 * batch (collate) workers take chunks in turn, read their samples when the
 * source left them unread, transform or stack them and put each back under
 * its sequence number, so order is kept; a sequential stage's single thread
 * runs its nodes on the rows in order. Also the plumbing every stage thread
 * shares: sending an error downstream, closing the output when the last
 * thread ends. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "pipeline/iterator_impl.h"

/* Sends an error downstream in order after what was already sent, then
 * closes the input so upstream stages stop too. */
void sl__stage_send_error(sl__stage *st, sl__out *out, const sl__error *err)
{
    sl__chunk *c;
    if (st->in)
        sl__queue_close(st->in);
    if (sl__stopping(st->it))
        return;
    c = sl__chunk_error(err);
    if (c)
        sl__out_chunk(out, c);
}

/* The last thread of a stage to finish closes its output: whatever it sent
 * (ending with an end of data or an error) is still delivered, and should a
 * stage have to stop without sending either (no memory left for the error
 * itself), the stages after it and the consumer see the queue close instead
 * of waiting forever. */
void sl__stage_thread_done(sl__stage *st)
{
    if (atomic_fetch_sub_explicit(&st->running, 1, memory_order_acq_rel) == 1) {
        atomic_store(&st->finished_ms, sl__now_ms());
        sl__queue_close(&st->out);
    }
}

void sl__stage_set_active(sl__stage *st, int active)
{
    if (active < 1)
        active = 1;
    if (active > st->nthreads)
        active = st->nthreads;
    double finished = atomic_load(&st->finished_ms);
    pthread_mutex_lock(&st->tune_lock);
    /* Thread time stops where the stage ended. */
    sl__occupancy_note(&st->thread_time, sl__stage_working_threads(st),
                       finished > 0 ? finished : sl__now_ms());
    atomic_store(&st->active, active);
    pthread_cond_broadcast(&st->tune_cv);
    pthread_mutex_unlock(&st->tune_lock);
}

void sl__stage_wake_parked(sl__stage *st)
{
    if (!st->tune_ready)
        return;
    pthread_mutex_lock(&st->tune_lock);
    st->ending = 1;
    pthread_cond_broadcast(&st->tune_cv);
    pthread_mutex_unlock(&st->tune_lock);
}

size_t sl__stage_working_threads(sl__stage *st)
{
    return atomic_load(&st->team_run) ? 0 : (size_t)atomic_load(&st->active);
}

/* Worker k may take a chunk only while k < active (autotune) and the
 * consumer's team does not run the stage (stage_team.c); otherwise it
 * sleeps here until that changes or the stage ends. The usual case costs
 * two relaxed loads per chunk. */
static void wait_turn(sl__stage *st, int k)
{
    if (k < atomic_load_explicit(&st->active, memory_order_relaxed) &&
        !atomic_load_explicit(&st->team_run, memory_order_relaxed))
        return;
    pthread_mutex_lock(&st->tune_lock);
    while ((k >= atomic_load(&st->active) || atomic_load(&st->team_run)) && !st->ending &&
           !sl__stopping(st->it))
        pthread_cond_wait(&st->tune_cv, &st->tune_lock);
    pthread_mutex_unlock(&st->tune_lock);
}

/* Reads the samples of a chunk of unread rows, their tensors from pool. On
 * failure the chunk keeps the rows read before the failing one, as a
 * failing map does. */
static int read_rows(sl__stage *st, sl__chunk *chunk, sl_pool *pool, sl__error *err)
{
    sl__source *src = st->it->source;
    for (size_t r = 0; r < chunk->nrows; r++) {
        int rc;
        if (sl__stopping(st->it))
            return sl__errf(err, SL_ECLOSED, "source: stopped");
        rc = src->iface->read(src, chunk->rows[r].index, &chunk->rows[r], pool, err);
        if (rc != SL_OK) {
            sl__err_prefix(err, "%s: ", src->iface->kind);
            for (size_t q = r; q < chunk->nrows; q++)
                sl__row_clear(&chunk->rows[q]);
            chunk->nrows = r;
            return rc;
        }
    }
    return SL_OK;
}

/* Reads (when the stage reads) and maps (when it maps) the rows of in,
 * into the tensors of slots when the stage batches them too. */
static int transform(sl__stage *st, sl__chunk *in, sl_pool *pool, sl__batch_slots *slots,
                     sl__error *err)
{
    int rc, read_rc = SL_OK;
    if (st->it->bad.mode != SL_ERROR_SAMPLES_RAISE && (st->reads || st->per_sample))
        return sl__bad_work_rows(st, in, err); /* a row at a time, to deal with bad ones */
    if (st->reads) {
        /* On a read error the rows read before it are still mapped, so
         * they can go on ahead of the error. */
        read_rc = read_rows(st, in, pool, err);
        if (read_rc != SL_OK && (st->kind != SL__STAGE_MAP || st->collate))
            return read_rc;
    }
    if (st->kind == SL__STAGE_MAP) {
        sl__error map_err;
        sl__err_clear(&map_err);
        rc = sl__map_apply(&st->map, in, pool, &st->it->stop, slots, &map_err);
        if (rc != SL_OK) {
            sl__err_copy(err, &map_err);
            return rc;
        }
    }
    return read_rc;
}

static int work_chunk(sl__stage *st, sl__chunk **chunk, sl_pool *pool, sl__error *err)
{
    sl__chunk *in = *chunk, *out;
    sl__batch_slots slots;
    sl__row row;
    int rc;
    if (in->nrows == 0)
        return SL_OK; /* only bad-sample records, on their way to the consumer */
    /* a map that batches makes its rows in the batch's slots, unless a
     * per-batch map makes the rows stacked */
    sl__batch_slots_init(&slots, st->kind == SL__STAGE_MAP && st->collate && !st->collation.map
                                     ? &st->collation
                                     : NULL);
    rc = transform(st, in, pool, &slots, err);
    if (rc != SL_OK || (st->kind == SL__STAGE_MAP && !st->collate) || in->nrows == 0) {
        sl__batch_slots_clear(&slots);
        return rc;
    }
    memset(&row, 0, sizeof row);
    rc = sl__collate(&st->collation, in, &slots, &row, pool, err);
    if (rc != SL_OK)
        return rc;
    out = sl__chunk_new(SL__CHUNK_ROWS, 1);
    if (!out) {
        sl__row_clear(&row);
        return sl__errf(err, SL_ENOMEM, "batch: out of memory");
    }
    sl__chunk_push_row(out, &row);
    sl__chunk_move_bad(out, in);
    sl__chunk_free(in);
    *chunk = out;
    return SL_OK;
}

/* work_chunk, with a slice in track when there is one; a batch group's
 * slice carries the batch's place (its chunk is replaced by the batch). */
static int traced_work_chunk(sl__stage *st, sl__track *track, sl__chunk **chunk, sl_pool *pool,
                             sl__error *err)
{
    int grouped = st->collate || st->kind == SL__STAGE_COLLATE;
    int64_t epoch = grouped ? (*chunk)->group_epoch : -1;
    int64_t batch = grouped ? (*chunk)->group_index : -1;
    double t0;
    int rc;
    if (!track)
        return work_chunk(st, chunk, pool, err);
    t0 = sl__now_ms();
    rc = work_chunk(st, chunk, pool, err);
    sl__trace_slice(track, st->trace_name, t0, sl__now_ms(), epoch, batch);
    return rc;
}

/* With a profiler, the fill of st's output queue now, as a counter. */
static void trace_queue(sl__stage *st, sl__track *track)
{
    if (track && st->trace_queue_name)
        sl__trace_counter(track, st->trace_queue_name, sl__now_ms(),
                          (double)sl__queue_size(&st->out));
}

sl__track *sl__stage_open_track(sl__stage *st)
{
    char name[128];
    if (!st->it->opts.profiler)
        return NULL;
    snprintf(name, sizeof name, "%s #%d", st->name, atomic_fetch_add(&st->traced_threads, 1));
    return sl__track_open(st->it->opts.profiler, name);
}

/* Takes the next chunk of st's input for a worker: when the stage pulls
 * its source and the input is empty, runs the source first, unless another
 * worker already does, in which case it waits for what that one sends.
 * SL_OK, or the pop's failure (closed, stopping). */
static int take_chunk(sl__stage *st, sl__chunk **chunk, uint64_t *seq)
{
    for (;;) {
        int rc = SL_ETIMEDOUT;
        if (sl__stopping(st->it))
            return SL_ECLOSED;
        if (st->pulls_source) {
            sl__stage *src = &st->it->stages[0];
            rc = sl__queue_pop(st->in, (void **)chunk, seq, 0);
            if (rc == SL_ETIMEDOUT && pthread_mutex_trylock(&src->src.lock) == 0) {
                sl__source_run(src, SL__PULL_CHUNKS);
                pthread_mutex_unlock(&src->src.lock);
                continue;
            }
        }
        if (rc == SL_ETIMEDOUT)
            rc = sl__queue_pop(st->in, (void **)chunk, seq, -1);
        return rc;
    }
}

/* A team thread runs the source one chunk at a time: each then pays for
 * the chunks it works, and the other threads of the round take what is
 * queued meanwhile instead of waiting behind a long turn at the source. */
int sl__stage_take_bounded(sl__stage *st, sl__chunk **chunk, uint64_t *seq)
{
    sl__stage *src = &st->it->stages[0];
    /* The consumer, which alone moves the output's head, is running the
     * round: the bound holds until the round ends. */
    uint64_t bound = sl__queue_push_bound(&st->out);
    int rc = sl__queue_pop_before(st->in, (void **)chunk, seq, bound);
    if (rc != SL_ETIMEDOUT || *seq >= bound)
        return rc;
    pthread_mutex_lock(&src->src.lock);
    rc = sl__queue_pop_before(st->in, (void **)chunk, seq, bound);
    /* Two turns at most: another thread may take the chunk a turn sent
     * before this one does. */
    for (int turn = 0; turn < 2 && rc == SL_ETIMEDOUT && *seq < bound && !sl__stopping(st->it);
         turn++) {
        sl__source_run(src, 1);
        rc = sl__queue_pop_before(st->in, (void **)chunk, seq, bound);
    }
    pthread_mutex_unlock(&src->src.lock);
    return rc;
}

sl__turn_end sl__stage_work_and_push(sl__stage *st, sl__track *track, sl__chunk *chunk,
                                     uint64_t seq, sl_pool *pool, atomic_ullong *work_ns,
                                     sl__error *err)
{
    int last = chunk->kind == SL__CHUNK_EOF || chunk->kind == SL__CHUNK_ERROR;
    int rc = SL_OK;
    if (chunk->kind == SL__CHUNK_ROWS) {
        double t0 = work_ns ? sl__now_ms() : 0;
        rc = traced_work_chunk(st, track, &chunk, pool ? pool : st->it->pool, err);
        if (work_ns)
            atomic_fetch_add_explicit(work_ns, (unsigned long long)((sl__now_ms() - t0) * 1e6),
                                      memory_order_relaxed);
    }
    if (rc != SL_OK) {
        if (err->status == SL_ECLOSED || sl__stopping(st->it)) {
            sl__chunk_free(chunk);
            return SL__TURN_LEAVE;
        }
        last = 1;
        if (!st->collate && st->kind == SL__STAGE_MAP && chunk->nrows > 0) {
            /* The rows mapped before the failing one go on first (a
             * batch group's rows are no use without the whole group). */
            chunk->kind = SL__CHUNK_ERROR;
            sl__err_copy(&chunk->error, err);
        } else {
            sl__chunk_free(chunk);
            chunk = sl__chunk_error(err);
            if (!chunk) {
                /* Not even the error fits in memory: its place in the
                 * order stays empty, so close both sides rather than
                 * leave the consumer waiting for it. */
                sl__queue_close(st->in);
                sl__queue_close(&st->out);
                return SL__TURN_LEAVE;
            }
        }
    }
    if (chunk->kind == SL__CHUNK_ROWS)
        atomic_fetch_add_explicit(&st->rows_out, chunk->nrows, memory_order_relaxed);
    if (sl__queue_push(&st->out, seq, chunk) != SL_OK) {
        sl__chunk_free(chunk);
        return SL__TURN_LEAVE;
    }
    trace_queue(st, track);
    if (last) {
        /* Nothing follows an end or an error: wake the other workers. */
        sl__queue_close(st->in);
        return SL__TURN_LAST;
    }
    return SL__TURN_GO_ON;
}

/* A worker of a map or collate stage: takes chunks in turn, transforms
 * them, and puts each back under its sequence number, so order is kept.
 * In a stage the team may run, it also times its chunks for the consumer
 * (stage_team.c). */
static void *worker_main(void *arg)
{
    sl__stage *st = arg;
    sl__track *track = sl__stage_open_track(st);
    int k = atomic_fetch_add(&st->next_worker, 1);
    sl__error err;
    sl__err_clear(&err);
    for (;;) {
        sl__chunk *chunk;
        uint64_t seq;
        sl__turn_end end;
        int rows;
        wait_turn(st, k);
        if (take_chunk(st, &chunk, &seq) != SL_OK)
            break;
        rows = chunk->kind == SL__CHUNK_ROWS;
        end = sl__stage_work_and_push(st, track, chunk, seq, NULL,
                                      st->team_able ? &st->work_ns : NULL, &err);
        if (st->team_able && rows)
            atomic_fetch_add_explicit(&st->work_chunks, 1, memory_order_relaxed);
        if (end != SL__TURN_GO_ON)
            break;
    }
    /* The stage is ending: sleeping workers leave too, or its output
     * would never close. */
    sl__stage_wake_parked(st);
    sl__stage_thread_done(st);
    return NULL;
}

/* The samples a map stage dropped (skip) whose places a sequential stage
 * fills at the next end of epoch, oldest first. */
typedef struct pad_list {
    sl__bad_record *head, *tail;
} pad_list;

/* Sends chunk's bad-sample records on with the rows; those of samples the
 * map stage before dropped, not yet filled, join pads when st fills them. */
static int take_records(sl__stage *st, sl__chunk *chunk, sl__out *out, pad_list *pads,
                        sl__error *err)
{
    int rc;
    for (sl__bad_record *rec = chunk->bad; rec; rec = rec->next) {
        sl__bad_record *copy;
        if (!rec->pad)
            continue;
        rec->pad = 0;
        if (!st->pads)
            continue; /* no end of epoch comes: the samples are only dropped */
        copy = malloc(sizeof *copy);
        if (!copy)
            return sl__errf(err, SL_ENOMEM, "%s: out of memory", st->name);
        *copy = *rec;
        copy->next = NULL;
        if (pads->tail)
            pads->tail->next = copy;
        else
            pads->head = copy;
        pads->tail = copy;
    }
    rc = sl__out_bad(out, chunk->bad);
    chunk->bad = chunk->bad_tail = NULL;
    if (rc != SL_OK)
        return sl__errf(err, rc, "%s: out of memory", st->name);
    return SL_OK;
}

/* Before an end of epoch: a stand-in for each sample dropped since the
 * last one, in the order they were dropped (see dataset.h). */
static int fill_pads(sl__stage *st, sl__chain *chain, pad_list *pads, sl__error *err)
{
    size_t upto = (size_t)(st - st->it->stages) - 1; /* the map stage before */
    while (pads->head) {
        sl__bad_record *rec = pads->head;
        sl__row row;
        int rc;
        pads->head = rec->next;
        if (!pads->head)
            pads->tail = NULL;
        rc = sl__standin_make(st->it, upto, rec, &row, err);
        free(rec);
        if (rc == SL_OK)
            rc = sl__chain_row(chain, 0, &row);
        if (rc != SL_OK)
            return rc;
    }
    return SL_OK;
}

static void *seq_main(void *arg)
{
    sl__stage *st = arg;
    sl__out out = {.queue = &st->out,
                   .chunk_rows = st->chunk_rows,
                   .chunk_bytes = SL__CHUNK_BYTES,
                   .rows = &st->rows_out};
    sl__error err;
    sl__chain chain = {st->nodes, st->nnodes, &out, st->it->pool, &err, &st->skip_first};
    pad_list pads = {NULL, NULL};
    sl__track *track = sl__stage_open_track(st);
    sl__err_clear(&err);
    for (;;) {
        sl__chunk *chunk;
        int rc = SL_OK;
        double t0;
        if (sl__queue_pop(st->in, (void **)&chunk, NULL, -1) != SL_OK)
            break;
        t0 = track ? sl__now_ms() : 0;
        if (chunk->bad && (rc = take_records(st, chunk, &out, &pads, &err)) != SL_OK) {
            sl__chunk_free(chunk);
            sl__stage_send_error(st, &out, &err);
            break;
        }
        switch (chunk->kind) {
        case SL__CHUNK_ROWS:
            for (size_t r = 0; r < chunk->nrows && rc == SL_OK; r++) {
                /* The row's tensors move down the chain: the chunk lets go. */
                sl__row row = chunk->rows[r];
                memset(chunk->rows[r].col, 0, sizeof row.col);
                rc = sl__chain_row(&chain, 0, &row);
            }
            sl__chunk_free(chunk);
            break;
        case SL__CHUNK_EOE:
            sl__chunk_free(chunk);
            rc = fill_pads(st, &chain, &pads, &err);
            if (rc == SL_OK)
                rc = sl__chain_eoe(&chain, 0);
            break;
        case SL__CHUNK_EOF:
            sl__chunk_free(chunk);
            sl__out_marker(&out, SL__CHUNK_EOF);
            goto done;
        case SL__CHUNK_ERROR:
            if (chunk->nrows == 0) {
                sl__out_chunk(&out, chunk);
                goto done;
            }
            /* Rows a map finished before it failed come first. */
            for (size_t r = 0; r < chunk->nrows && rc == SL_OK; r++) {
                sl__row row = chunk->rows[r];
                memset(chunk->rows[r].col, 0, sizeof row.col);
                rc = sl__chain_row(&chain, 0, &row);
            }
            if (rc == SL_OK) {
                sl__err_copy(&err, &chunk->error);
                rc = err.status != SL_OK ? err.status : SL_EIO;
            }
            sl__chunk_free(chunk);
            break;
        }
        if (track) {
            sl__trace_slice(track, st->trace_name, t0, sl__now_ms(), -1, -1);
            trace_queue(st, track);
        }
        if (rc == SL_ECLOSED || sl__stopping(st->it))
            goto done;
        if (rc != SL_OK) {
            if (err.status == SL_OK)
                sl__errf(&err, rc, "%s: %s", st->name, sl_strerror(rc));
            sl__stage_send_error(st, &out, &err);
            goto done;
        }
    }
done:
    sl__out_discard(&out);
    sl__bad_records_free(pads.head);
    sl__stage_thread_done(st);
    return NULL;
}

void *(*sl__stage_main(sl__stage_kind kind))(void *)
{
    switch (kind) {
    case SL__STAGE_SOURCE: return sl__source_main;
    case SL__STAGE_SEQ: return seq_main;
    default: return worker_main;
    }
}
