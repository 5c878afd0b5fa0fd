/* stage_source.c: running the source. One function advances it: reads
 * samples in the sampler's order (or only orders their indices, when the
 * next stage's workers read), runs them through the source's sequential
 * nodes (shuffle, batch grouping, repeat, take, skip) and sends what comes
 * out. The source stage's own thread runs it to the end; when the stage has
 * no thread, whoever holds its lock does: the next stage's workers in
 * turn, or the consumer and its team's threads (stage_team.c). */
#include <stdlib.h>
#include <string.h>

#include "pipeline/combine.h"
#include "pipeline/iterator_impl.h"
#include "pipeline/sampler.h"

/* Advances the source: reads samples (or just orders them, when the next
 * stage reads), runs them through the source's sequential nodes and sends
 * what comes out. Stops when the source is finished, or, with max_chunks >
 * 0, once that many chunks were sent or the queue is full. The caller is
 * the source's thread or holds st->src.lock. */
void sl__source_run(sl__stage *st, int max_chunks)
{
    sl_iterator *it = st->it;
    sl__source *src = it->source;
    uint64_t sent0 = st->out.next_seq; /* only the source pushes with it */
    sl__chain chain = {st->nodes, st->nnodes, &st->src.out, it->pool, &st->src.err,
                       &st->skip_first};
    int rc = SL_OK;

    st->src.out.chunk_rows = st->chunk_rows; /* planning may have changed it */
    /* Chunks a full queue held back go first, in order. */
    if (sl__out_drain(&st->src.out) != SL_OK) {
        st->src.finished = 1;
        return;
    }
    if (st->src.finished) {
        if (!st->src.out.pending)
            sl__queue_close(&st->out);
        return;
    }
    while (!st->src.finished) {
        /* A worker running the source sends a few chunks at a time
         * (max_chunks), so that the other workers find work queued rather
         * than a turn at the source each; a full queue (chunks pending)
         * also stops it. */
        if (sl__stopping(it) ||
            (max_chunks > 0 &&
             (st->out.next_seq - sent0 >= (uint64_t)max_chunks || st->src.out.pending)))
            return;
        if (!st->src.prepared && it->combined) {
            /* a concat or zip: its parts load and order themselves */
            st->src.prepared = st->src.ordered = 1;
        } else if (!st->src.prepared) {
            st->src.n = sl__sampler_size(&src->sampler, src->num_rows);
            st->src.order = malloc((size_t)(st->src.n > 0 ? st->src.n : 1) * sizeof(int64_t));
            if (!st->src.order) {
                rc = sl__errf(&st->src.err, SL_ENOMEM, "out of memory for %lld indices",
                              (long long)st->src.n);
                goto fail;
            }
            rc = src->iface->prepare(src, &it->stop, &st->src.err);
            if (rc != SL_OK)
                goto fail;
            st->src.prepared = 1;
        } else if (!st->src.ordered) {
            rc = sl__sampler_order(&src->sampler, src->num_rows, st->src.epoch, st->src.order);
            if (rc != SL_OK) {
                sl__errf(&st->src.err, rc, "out of memory for the epoch's order");
                goto fail;
            }
            st->src.ordered = 1;
        } else if (it->combined && !st->src.pass_ended) {
            sl__row row;
            memset(&row, 0, sizeof row);
            rc = sl__combine_next(it->combined, &row, &st->src.err);
            if (rc == SL_END_OF_EPOCH) {
                st->src.pass_ended = 1;
                continue;
            }
            if (rc != SL_OK)
                goto fail;
            row.index = st->src.pos++;
            row.epoch = st->src.epoch;
            if ((rc = sl__chain_row(&chain, 0, &row)) != SL_OK)
                goto chain_failed;
        } else if (!it->combined && st->src.pos < st->src.n) {
            sl__row row;
            int64_t index = st->src.order[st->src.pos++];
            memset(&row, 0, sizeof row);
            row.index = index;
            row.epoch = st->src.epoch;
            if (it->lazy_source) {
                row.unread_bytes = src->iface->size_hint(src, index);
            } else if ((rc = src->iface->read(src, index, &row, it->pool, &st->src.err)) !=
                       SL_OK) {
                sl__row_clear(&row);
                if (it->bad.mode == SL_ERROR_SAMPLES_RAISE || !sl__is_bad_sample_error(rc))
                    goto fail;
                /* A bad sample: replaced (1) or dropped (0), see dataset.h. */
                sl__err_prefix(&st->src.err, "%s: ", src->iface->kind);
                rc = sl__bad_source_sample(st, &row, &st->src.err, &st->src.err);
                if (rc < 0)
                    goto fail;
                sl__err_clear(&st->src.err); /* dealt with: the record keeps the message */
                if (rc == 0)
                    continue;
            }
            if ((rc = sl__chain_row(&chain, 0, &row)) != SL_OK)
                goto chain_failed;
        } else if (st->src.pending) {
            /* skip: the stand-ins of the samples dropped this pass end it */
            sl__row row;
            if ((rc = sl__bad_source_pad(st, &row, &st->src.err)) != SL_OK)
                goto fail;
            if ((rc = sl__chain_row(&chain, 0, &row)) != SL_OK)
                goto chain_failed;
        } else {
            /* the end of a pass over the source */
            if ((rc = sl__chain_eoe(&chain, 0)) != SL_OK)
                goto chain_failed;
            st->src.epoch++;
            st->src.pos = 0;
            st->src.ordered = it->combined != NULL; /* the parts order their own */
            st->src.pass_ended = 0;
            if (it->passes >= 0 && st->src.epoch >= it->passes) {
                sl__out_marker(&st->src.out, SL__CHUNK_EOF);
                goto finish;
            }
        }
    }
    return;
chain_failed:
    if (rc == SL_ECLOSED || sl__stopping(it))
        goto finish;
    if (st->src.err.status == SL_OK)
        sl__errf(&st->src.err, rc, "%s: %s", st->name, sl_strerror(rc));
    sl__stage_send_error(st, &st->src.out, &st->src.err);
    goto finish;
fail:
    if (rc != SL_ECLOSED && st->src.err.status != SL_ECLOSED) {
        sl__err_prefix(&st->src.err, "%s: ", src->iface->kind);
        sl__stage_send_error(st, &st->src.out, &st->src.err);
    }
finish:
    /* What was sent still arrives; then the queue reports its end (once
     * the chunks still held back have gone too). */
    st->src.finished = 1;
    if (!st->src.out.pending)
        sl__queue_close(&st->out);
}

void *sl__source_main(void *arg)
{
    sl__stage *st = arg;
    sl__source_run(st, 0);
    sl__stage_thread_done(st);
    return NULL;
}
