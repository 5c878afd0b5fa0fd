/* iterator_plan.c: planning how a dataset runs. The node chain is cut into
 * stages, each a small set of threads joined to the next by a bounded queue:
 *   source (1 thread, followed by the sequential nodes up to the first map:
 *   shuffle, batch grouping, repeat, take, skip) -> map (N workers, order
 *   kept) -> sequential nodes (1 thread) -> ... -> the consumer.
 * Before cutting, the chain is rewritten in ways that cannot change a
 * single byte of the output, because map ops depend only on the row (random
 * ops draw from the row's own seed) while shuffle and batch depend only on
 * the order of arrival:
 *   - a shuffle moves ahead of the maps before it, so its buffer holds the
 *     small source rows instead of the maps' larger results;
 *   - a batch right after maps groups the rows before them, and the map
 *     workers stack each group into the batch after transforming it.
 * Only the moment an error surfaces can differ. When the source's nodes
 * only reorder or group rows, the next stage's workers read the samples
 * and run the source themselves (plan_lazy_source). Also frees the stages. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/batch_map.h"
#include "pipeline/iterator_impl.h"

static void schema_after(sl__schema *schema, const sl__node *node)
{
    if (node->kind == SL__NODE_MAP) {
        snprintf(schema->names[node->column], SL_COLUMN_NAME_LEN, "%s", node->outname);
    } else if (node->kind == SL__NODE_PROJECT || node->kind == SL__NODE_RENAME) {
        sl__schema in = *schema;
        schema->ncols = node->kind == SL__NODE_PROJECT ? (size_t)node->count : in.ncols;
        for (size_t c = 0; c < schema->ncols; c++) {
            schema->specs[c] = in.specs[node->kind == SL__NODE_PROJECT ? node->pick[c] : (int)c];
            memcpy(schema->names[c], node->names[c], SL_COLUMN_NAME_LEN);
        }
    } else if (node->kind == SL__NODE_BATCH) {
        if (node->batch_map)
            *schema = node->batch_map->out_schema;
        for (size_t c = 0; c < schema->ncols; c++) {
            sl_tensor_spec *spec = &schema->specs[c];
            memmove(spec->shape + 1, spec->shape, (size_t)spec->ndim * sizeof spec->shape[0]);
            spec->shape[0] = -1;
            spec->ndim++;
        }
    }
}

/* Moves every shuffle ahead of the maps right before it (see the top of
 * this file for why that changes no result). */
static void plan_nodes(sl__node *nodes, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        for (size_t j = i; j > 0 && nodes[j].kind == SL__NODE_SHUFFLE &&
                           nodes[j - 1].kind == SL__NODE_MAP;
             j--) {
            sl__node t = nodes[j - 1];
            nodes[j - 1] = nodes[j];
            nodes[j] = t;
        }
    }
}

static const char *node_name(sl__node_kind kind)
{
    switch (kind) {
    case SL__NODE_MAP: return "map";
    case SL__NODE_SHUFFLE: return "shuffle";
    case SL__NODE_BATCH: return "batch";
    case SL__NODE_REPEAT: return "repeat";
    case SL__NODE_TAKE: return "take";
    case SL__NODE_SKIP: return "skip";
    case SL__NODE_PROJECT: return "project";
    case SL__NODE_RENAME: return "rename";
    }
    return "?";
}

/* The threads a parallel stage of `workers` workers starts: under autotune
 * as many as it may ever use, the ones past `workers` asleep until the
 * tuner wakes them. */
static int parallel_threads(const sl_iterator *it, int workers)
{
    int most = it->opts.autotune_max_workers;
    return it->opts.autotune && most > workers ? most : workers;
}

/* A stage of nthreads threads, of which the first `active` work. */
static sl__stage *add_stage(sl_iterator *it, sl__stage_kind kind, const char *name, int nthreads,
                            int active, size_t chunk_rows, int *rc)
{
    sl__stage *st = &it->stages[it->nstages];
    size_t cap = it->opts.queue_chunks;
    memset(st, 0, sizeof *st);
    st->kind = kind;
    st->it = it;
    snprintf(st->name, sizeof st->name, "%s", name);
    st->nthreads = nthreads;
    st->chunk_rows = chunk_rows;
    st->in = it->nstages > 0 ? &it->stages[it->nstages - 1].out : NULL;
    /* Parallel stages need room for every worker's chunk in the window. */
    if (cap < 2 * (size_t)active)
        cap = 2 * (size_t)active;
    /* A failure here leaves nothing of the stage to free: it is not
     * counted in nstages yet. The autotuner may let a queue grow to
     * SL__AUTOTUNE_MAX_QUEUE: its ring is made that large now, and its
     * limit holds it to cap until then. */
    *rc = sl__queue_init(&st->out, it->opts.autotune && cap < SL__AUTOTUNE_MAX_QUEUE
                                       ? SL__AUTOTUNE_MAX_QUEUE : cap, &it->error);
    if (*rc != SL_OK) {
        sl__err_prefix(&it->error, "stage '%s': ", st->name);
        return NULL;
    }
    sl__queue_set_limit(&st->out, cap);
    {
        int e = pthread_mutex_init(&st->tune_lock, NULL);
        if (e == 0 && (e = pthread_cond_init(&st->tune_cv, NULL)) != 0)
            pthread_mutex_destroy(&st->tune_lock);
        if (e != 0) {
            sl__queue_destroy(&st->out);
            *rc = sl__pthread_errf(&it->error, e, "pthread_mutex_init or pthread_cond_init");
            sl__err_prefix(&it->error, "stage '%s': ", st->name);
            return NULL;
        }
        st->tune_ready = 1;
        atomic_init(&st->active, active);
    }
    if (kind == SL__STAGE_SOURCE) {
        int e = pthread_mutex_init(&st->src.lock, NULL);
        if (e != 0) {
            pthread_cond_destroy(&st->tune_cv);
            pthread_mutex_destroy(&st->tune_lock);
            sl__queue_destroy(&st->out);
            *rc = sl__pthread_errf(&it->error, e, "stage 'source': pthread_mutex_init");
            return NULL;
        }
        st->src.out.queue = &st->out;
        st->src.out.chunk_rows = chunk_rows;
        st->src.out.chunk_bytes = SL__CHUNK_BYTES;
        st->src.out.rows = &st->rows_out;
        sl__err_clear(&st->src.err);
    }
    st->threads = calloc((size_t)(nthreads > 0 ? nthreads : 1), sizeof *st->threads);
    st->nodes = calloc(it->nnodes + 1, sizeof *st->nodes);
    it->nstages++; /* counted now, so free_stages cleans up after a failure */
    if (!st->threads || !st->nodes) {
        *rc = SL_ENOMEM;
        return NULL;
    }
    return st;
}

/* Appends a running form of node d to a sequential stage's chain. */
static int add_seq_node(sl_iterator *it, sl__stage *st, const sl__node *d, const sl__schema *schema,
                        int group_only)
{
    int rc = sl__seq_node_new(&st->nodes[st->nnodes], d, it->seed, d->position, schema,
                              group_only, it->lender);
    if (rc != SL_OK)
        return rc;
    st->nnodes++;
    snprintf(st->name + strlen(st->name), sizeof st->name - strlen(st->name), "+%s%s",
             node_name(d->kind), group_only ? " (grouping)" : "");
    return SL_OK;
}

/* With the consumer's team (consumer_team.h): when the pipeline is a
 * source that only orders indices and one map+batch stage, that stage may
 * run on the team (stage_team.c). Not with bad samples dealt with: a
 * replaced sample is read and mapped again, which a round need not wait
 * for. */
static int plan_team(sl_iterator *it)
{
    sl__stage *st = &it->stages[it->nstages - 1];
    if (!it->team || it->nstages != 2 || st->kind != SL__STAGE_MAP || !st->collate ||
        !st->pulls_source || it->bad.mode != SL_ERROR_SAMPLES_RAISE)
        return SL_OK;
    st->team_tracks = calloc((size_t)it->team->nthreads, sizeof *st->team_tracks);
    if (!st->team_tracks)
        return SL_ENOMEM;
    st->team_able = 1;
    return SL_OK;
}

/* When the source thread's nodes only reorder, drop or group rows (shuffle,
 * repeat, take, skip, batch grouping) and a parallel stage comes next, the
 * source thread passes unread rows (just their indices) and that stage's
 * workers read the samples: reading then runs in parallel and the shuffle
 * buffer holds bare indices. */
static int plan_lazy_source(sl_iterator *it)
{
    sl__stage *src = &it->stages[0];
    int rc;
    if (it->source->in_order) {
        /* A stream is read by the source stage alone, in order; a stand-in
         * (which replace puts in a bad sample's place, and skip at the
         * epoch's end) would be read out of it. */
        if (it->bad.mode != SL_ERROR_SAMPLES_RAISE)
            return sl__errf(&it->error, SL_EINVAL,
                            "%s: a source read in order cannot %s a bad sample (its stand-in "
                            "is another sample, read by index): a bad sample of a stream "
                            "raises; give the source random access (__getitem__ and __len__ "
                            "in Python) to skip or replace",
                            it->source->iface->kind,
                            it->bad.mode == SL_ERROR_SAMPLES_SKIP ? "skip" : "replace");
        return SL_OK;
    }
    /* A concat or zip hands out its parts' rows as they come, read. */
    if (it->nstages < 2 || it->stages[1].kind == SL__STAGE_SEQ || it->combined)
        return SL_OK;
    for (size_t k = 0; k < src->nnodes; k++) {
        if (sl__seq_node_needs_data(src->nodes[k]))
            return SL_OK;
        /* Skipping a bad sample must leave whole batches: read before
         * grouping them (dataset.h). */
        if (it->bad.mode == SL_ERROR_SAMPLES_SKIP && sl__seq_node_is_batch(src->nodes[k]))
            return SL_OK;
    }
    it->lazy_source = 1;
    it->stages[1].reads = 1;
    /* The source thread would only order indices: the workers do it
     * themselves when they run dry, so the pipeline runs exactly the
     * threads it was given and none sits idle on a small machine. */
    it->stages[1].pulls_source = 1;
    src->nthreads = 0;
    atomic_store(&src->active, 0);
    src->src.out.nonblocking = 1; /* its workers also consume its queue */
    for (size_t k = 0; k < src->nnodes; k++) {
        rc = sl__seq_node_rows_unread(src->nodes[k]);
        if (rc != SL_OK)
            return rc;
    }
    /* Unread rows are small: a deeper queue lets the source thread run
     * ahead and sleep (and be woken) less often. */
    {
        size_t limit = 4 * sl__queue_limit(&src->out);
        /* Under autotune, room to deepen it (autotune.c) as other queues. */
        size_t ring = it->opts.autotune && limit < SL__AUTOTUNE_MAX_QUEUE
                          ? SL__AUTOTUNE_MAX_QUEUE : limit;
        sl__queue_destroy(&src->out);
        rc = sl__queue_init(&src->out, ring, &it->error);
        if (rc != SL_OK) {
            sl__err_prefix(&it->error, "stage '%s': ", src->name);
            return rc;
        }
        sl__queue_set_limit(&src->out, limit);
    }
    return SL_OK;
}

/* True when the rows reaching node (at the iterator's index) come from an
 * endless repeat that no take has bounded since: no end of epoch reaches
 * it. */
static int endless_before(const sl_iterator *it, const sl__node *node)
{
    int endless = 0;
    for (const sl__node *n = it->nodes; n < node; n++) {
        if (n->kind == SL__NODE_REPEAT && n->count < 0)
            endless = 1;
        else if (n->kind == SL__NODE_TAKE && n->count >= 0)
            endless = 0;
    }
    return endless;
}

/* When bad samples are skipped, the sequential stage after each map stage
 * that may drop samples fills their places at each end of epoch (one is
 * added after a map that ends the chain), so that an epoch keeps its
 * length (dataset.h). */
static int plan_skip(sl_iterator *it)
{
    int rc = SL_OK;
    sl__stage *last = &it->stages[it->nstages - 1];
    if (last->kind == SL__STAGE_MAP && last->per_sample &&
        !add_stage(it, SL__STAGE_SEQ, "sequential", 1, 1, last->chunk_rows, &rc))
        return rc;
    for (size_t s = 1; s + 1 < it->nstages; s++) {
        const sl__stage *st = &it->stages[s];
        if (st->kind != SL__STAGE_MAP || !st->per_sample)
            continue;
        SL_ASSERT(it->stages[s + 1].kind == SL__STAGE_SEQ);
        it->stages[s + 1].pads = !endless_before(it, st->steps[0].node);
    }
    return SL_OK;
}

/* Places every sequential node and the source at the options' start epoch,
 * and has the last stage with sequential nodes drop start_rows units at its
 * chain's end: the stages after it (maps, collation) turn each unit into
 * exactly one row handed out, so the rows handed out begin where they
 * would have after start_rows rows of that epoch. (When bad samples are
 * skipped, a map may drop a row: plan_skip has put a sequential stage after
 * every such map, so the last one comes after the drops and fills.) */
static int plan_start(sl_iterator *it)
{
    int64_t epoch = it->opts.start_epoch;
    sl__stage *last = NULL;
    if (epoch == 0 && it->opts.start_rows == 0)
        return SL_OK;
    for (size_t s = 0; s < it->nstages; s++) {
        sl__stage *st = &it->stages[s];
        if (st->kind != SL__STAGE_SOURCE && st->kind != SL__STAGE_SEQ)
            continue;
        for (size_t k = 0; k < st->nnodes; k++) {
            if (sl__seq_node_counts_epochs(st->nodes[k]))
                return sl__errf(&it->error, SL_EINVAL,
                                "cannot start at epoch %lld, row %lld: the pipeline repeats, "
                                "and a repeat's passes are not the iterator's epochs",
                                (long long)epoch, (long long)it->opts.start_rows);
            sl__seq_node_start_at(st->nodes[k], epoch);
        }
        last = st;
    }
    it->stages[0].src.epoch = epoch;
    last->skip_first = it->opts.start_rows;
    return SL_OK;
}

/* A bad sample's stand-in is read and run through the per-sample maps
 * alone (bad_samples.c), not through a project between them: refused. */
static int check_project_standins(sl_iterator *it)
{
    int projected = 0;
    if (it->bad.mode == SL_ERROR_SAMPLES_RAISE)
        return SL_OK;
    for (size_t i = 0; i < it->nnodes; i++) {
        const sl__node *node = &it->nodes[i];
        projected |= node->kind == SL__NODE_PROJECT;
        if (projected && node->kind == SL__NODE_MAP && !node->after_batch)
            return sl__errf(&it->error, SL_EINVAL,
                            "a project before a map of single samples cannot replace or skip "
                            "bad samples (set_error_samples): put the project after the maps");
    }
    return SL_OK;
}

int sl__stages_build(sl_iterator *it)
{
    sl__schema schema;
    sl__stage *seq;     /* the sequential stage nodes go to, or NULL after a parallel one */
    int batched = 0;
    const int skip = it->bad.mode == SL_ERROR_SAMPLES_SKIP;
    size_t i = 0;
    int rc = SL_OK;

    schema.ncols = it->source->ncols;
    memcpy(schema.names, it->source->names, sizeof schema.names);
    memcpy(schema.specs, it->source->specs, sizeof schema.specs);
    plan_nodes(it->nodes, it->nnodes);
    if ((rc = check_project_standins(it)) != SL_OK)
        return rc;
    /* At most two stages per node, plus the source. */
    it->stages = calloc(2 * it->nnodes + 1, sizeof *it->stages);
    if (!it->stages)
        return SL_ENOMEM;
    seq = add_stage(it, SL__STAGE_SOURCE, "source", 1, 1, it->opts.chunk_rows, &rc);
    while (rc == SL_OK && i < it->nnodes) {
        const sl__node *node = &it->nodes[i];
        size_t chunk_rows = batched ? 1 : it->opts.chunk_rows;
        if (node->kind == SL__NODE_RENAME) {
            schema_after(&schema, node); /* names only: nothing runs */
            i++;
            continue;
        }
        if (node->kind == SL__NODE_MAP) {
            size_t first = i;
            int workers = 1, fuse_batch;
            sl__stage *st;
            while (i < it->nnodes && it->nodes[i].kind == SL__NODE_MAP) {
                if (it->nodes[i].workers > workers)
                    workers = it->nodes[i].workers;
                i++;
            }
            /* maps then batch: group before, stack in the map workers;
             * not when bad samples are skipped, since the batch must then
             * be made of the rows left after the map */
            fuse_batch = i < it->nnodes && it->nodes[i].kind == SL__NODE_BATCH && !skip;
            if (fuse_batch) {
                if (it->nodes[i].workers > workers)
                    workers = it->nodes[i].workers;
                if (!seq && !(seq = add_stage(it, SL__STAGE_SEQ, "sequential", 1, 1, chunk_rows, &rc)))
                    break;
                rc = add_seq_node(it, seq, &it->nodes[i], &schema, 1);
                if (rc != SL_OK)
                    break;
            }
            st = add_stage(it, SL__STAGE_MAP, "map", parallel_threads(it, workers), workers,
                           chunk_rows, &rc);
            if (!st)
                break;
            seq = NULL;
            st->steps = calloc(i - first, sizeof *st->steps);
            if (!st->steps)
                return SL_ENOMEM;
            st->nsteps = i - first;
            st->per_sample = !it->nodes[first].after_batch;
            for (size_t k = first; k < i; k++) {
                st->steps[k - first].node = &it->nodes[k];
                st->steps[k - first].salt = it->nodes[k].position;
            }
            /* in order: a step may take the first ops of the next one */
            for (size_t k = first; k < i && rc == SL_OK; k++) {
                rc = sl__map_step_plan(&st->steps[k - first],
                                       k + 1 < i ? &st->steps[k + 1 - first] : NULL,
                                       it->fuse_decode);
                schema_after(&schema, &it->nodes[k]);
            }
            if (rc != SL_OK)
                break;
            st->map.steps = st->steps;
            st->map.nsteps = i - first;
            st->map.seed = it->seed;
            st->map.source = it->source;
            st->map.budget = it->has_decode_budget ? &it->decode_budget : NULL;
            st->schema = schema;
            st->map.schema = &st->schema;
            st->collation.schema = &st->schema;
            st->collation.lender = it->lender;
            if (fuse_batch) {
                st->collation.pad = it->nodes[i].padded ? it->nodes[i].pad : NULL;
                st->collation.map = it->nodes[i].batch_map;
                st->collate = 1;
                st->chunk_rows = 1;
                snprintf(st->name, sizeof st->name, "map+batch");
                schema_after(&schema, &it->nodes[i]);
                batched = 1;
                i++;
            }
            continue;
        }
        if (!seq && !(seq = add_stage(it, SL__STAGE_SEQ, "sequential", 1, 1, chunk_rows, &rc)))
            break;
        if (node->kind == SL__NODE_BATCH && node->workers > 1) {
            /* group here, stack in parallel in the next sl__stage */
            sl__stage *st;
            rc = add_seq_node(it, seq, node, &schema, 1);
            if (rc != SL_OK)
                break;
            st = add_stage(it, SL__STAGE_COLLATE, "batch", parallel_threads(it, node->workers),
                           node->workers, 1, &rc);
            if (!st)
                break;
            st->schema = schema;
            st->collation.schema = &st->schema;
            st->collation.lender = it->lender;
            st->collation.pad = node->padded ? node->pad : NULL;
            st->collation.map = node->batch_map;
            seq = NULL;
        } else {
            rc = add_seq_node(it, seq, node, &schema, 0);
            if (rc != SL_OK)
                break;
            if (node->kind == SL__NODE_BATCH)
                seq->chunk_rows = 1; /* rows from here on are whole batches */
        }
        if (node->kind == SL__NODE_BATCH)
            batched = 1;
        if (node->kind == SL__NODE_BATCH || node->kind == SL__NODE_PROJECT)
            schema_after(&schema, node);
        i++;
    }
    if (rc == SL_OK && skip)
        rc = plan_skip(it);
    if (rc == SL_OK)
        rc = plan_lazy_source(it);
    if (rc == SL_OK)
        rc = plan_team(it);
    if (rc == SL_OK)
        rc = plan_start(it);
    return rc;
}

void sl__stages_free(sl_iterator *it)
{
    for (size_t s = 0; s < it->nstages; s++) {
        sl__stage *st = &it->stages[s];
        sl__queue_drain(&st->out, sl__chunk_free_item);
        sl__queue_destroy(&st->out);
        if (st->kind == SL__STAGE_SOURCE) {
            sl__out_discard(&st->src.out);
            sl__bad_records_free(st->src.pending);
            free(st->src.order);
            pthread_mutex_destroy(&st->src.lock);
        }
        for (size_t k = 0; k < st->nnodes; k++)
            sl__seq_node_free(st->nodes[k]);
        free(st->nodes);
        for (size_t k = 0; k < st->nsteps; k++)
            sl__map_step_clear(&st->steps[k]);
        free(st->steps);
        free(st->threads);
        free(st->team_tracks);
        if (st->tune_ready) {
            pthread_cond_destroy(&st->tune_cv);
            pthread_mutex_destroy(&st->tune_lock);
        }
    }
    free(it->stages);
    it->stages = NULL;
    it->nstages = 0;
}
