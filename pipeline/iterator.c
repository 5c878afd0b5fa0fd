/* iterator.c: running a dataset. The node chain is cut into stages, each a
 * small set of threads joined to the next by a bounded queue:
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
 * Only the moment an error surfaces can differ. Shutdown sets `stop`,
 * closes every queue (waking every blocked thread), joins every thread and
 * then frees what the queues still hold. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/iterator.h"
#include "core/queue.h"
#include "core/tensor_impl.h"
#include "pipeline/dataset_impl.h"
#include "pipeline/nodes.h"
#include "pipeline/sampler.h"

#define SL__CHUNK_BYTES (1u << 20) /* a chunk carries at most ~1 MiB of data */
#define PULL_CHUNKS 8          /* chunks a worker sends per turn at the source */

typedef enum sl__stage_kind { SL__STAGE_SOURCE, SL__STAGE_MAP, SL__STAGE_COLLATE, SL__STAGE_SEQ } sl__stage_kind;

typedef struct sl__stage {
    sl__stage_kind kind;
    struct sl_iterator *it;
    char name[96];
    sl_queue *in;          /* the previous stage's output (NULL for the source) */
    sl_queue out;
    size_t chunk_rows;     /* rows per output chunk */
    int nthreads;
    int started;           /* threads actually started */
    atomic_int running;    /* threads not yet finished */
    pthread_t *threads;
    /* SL__STAGE_MAP */
    sl__map_step *steps;
    sl__map_work map;
    int collate;           /* SL__STAGE_MAP: chunks are batch groups to stack after mapping */
    int reads;             /* SL__STAGE_MAP, SL__STAGE_COLLATE: rows arrive unread (index
                            * only) and the workers read them from the source */
    /* SL__STAGE_MAP and SL__STAGE_COLLATE: the columns of the rows (for messages) */
    sl__schema schema;
    sl__collate_work collation;
    /* SL__STAGE_SOURCE and SL__STAGE_SEQ: the sequential nodes the thread runs */
    sl__seq_node **nodes;
    size_t nnodes;
    /* SL__STAGE_SOURCE: where reading has got to. Run by the stage's thread,
     * or, when the stage has none (pulled), by whichever worker of the
     * next stage finds its input empty and takes `lock`. */
    struct {
        pthread_mutex_t lock;
        sl__out out;
        sl__error err;
        int64_t *order;        /* this epoch's sample indices */
        int64_t n;             /* samples per epoch */
        int64_t epoch, pos;
        int prepared, ordered, finished;
    } src;
    int pulls_source;      /* SL__STAGE_MAP, SL__STAGE_COLLATE: its workers run the source */
} sl__stage;

struct sl_iterator {
    sl__source *source;
    sl__node *nodes;       /* the iterator's own copy of the description */
    size_t nnodes;
    sl__schema schema;     /* columns it hands out */
    uint64_t seed;
    int64_t passes;        /* passes over the source; -1: without end */
    int lazy_source;       /* the source thread only orders indices; the first
                            * parallel stage reads the samples */
    sl_pool *pool;
    atomic_int stop;
    atomic_int interrupted; /* sl_iterator_interrupt was called */
    sl__stage *stages;
    size_t nstages;
    sl_iterator_options opts;
    /* consumer side */
    sl__chunk *cur;
    size_t pos;
    int status;            /* sticky: SL_END_OF_DATA or an error */
    int64_t epochs_out;    /* ends of epoch handed out */
    sl__error error;
    uint64_t rows_out;
};

void sl_iterator_options_init(sl_iterator_options *o)
{
    o->num_epochs = 1;
    o->queue_chunks = 8;
    o->chunk_rows = 64;
    o->timeout_ms = -1;
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

/* --- stage threads -------------------------------------------------------- */

static int stopping(const sl_iterator *it)
{
    return atomic_load_explicit(&it->stop, memory_order_relaxed);
}

/* Sends an error downstream in order after what was already sent, then
 * closes the input so upstream stages stop too. */
static void send_error(sl__stage *st, sl__out *out, const sl__error *err)
{
    sl__chunk *c;
    if (st->in)
        sl__queue_close(st->in);
    if (stopping(st->it))
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
static void thread_done(sl__stage *st)
{
    if (atomic_fetch_sub_explicit(&st->running, 1, memory_order_acq_rel) == 1)
        sl__queue_close(&st->out);
}

/* Advances the source: reads samples (or just orders them, when the next
 * stage reads), runs them through the source's sequential nodes and sends
 * what comes out. Stops when the source is finished, or, with until_sent,
 * once PULL_CHUNKS chunks were sent or the queue is full. The caller is
 * the source's thread or holds st->src.lock. */
static void source_run(sl__stage *st, int until_sent)
{
    sl_iterator *it = st->it;
    sl__source *src = it->source;
    uint64_t sent0 = st->out.next_seq; /* only the source pushes with it */
    sl__chain chain = {st->nodes, st->nnodes, &st->src.out, it->pool, &st->src.err};
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
        /* A worker running the source sends a few chunks at a time, so
         * that the other workers find work queued rather than a turn at
         * the source each; a full queue (chunks pending) also stops it. */
        if (stopping(it) ||
            (until_sent && (st->out.next_seq - sent0 >= PULL_CHUNKS || st->src.out.pending)))
            return;
        if (!st->src.prepared) {
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
        } else if (st->src.pos < st->src.n) {
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
                goto fail;
            }
            if ((rc = sl__chain_row(&chain, 0, &row)) != SL_OK)
                goto chain_failed;
        } else {
            /* the end of a pass over the source */
            if ((rc = sl__chain_eoe(&chain, 0)) != SL_OK)
                goto chain_failed;
            st->src.epoch++;
            st->src.pos = 0;
            st->src.ordered = 0;
            if (it->passes >= 0 && st->src.epoch >= it->passes) {
                sl__out_marker(&st->src.out, SL__CHUNK_EOF);
                goto finish;
            }
        }
    }
    return;
chain_failed:
    if (rc == SL_ECLOSED || stopping(it))
        goto finish;
    if (st->src.err.status == SL_OK)
        sl__errf(&st->src.err, rc, "%s: %s", st->name, sl_strerror(rc));
    send_error(st, &st->src.out, &st->src.err);
    goto finish;
fail:
    if (st->src.err.status != SL_ECLOSED) {
        sl__err_prefix(&st->src.err, "%s: ", src->iface->kind);
        send_error(st, &st->src.out, &st->src.err);
    }
finish:
    /* What was sent still arrives; then the queue reports its end (once
     * the chunks still held back have gone too). */
    st->src.finished = 1;
    if (!st->src.out.pending)
        sl__queue_close(&st->out);
}

static void *source_main(void *arg)
{
    sl__stage *st = arg;
    source_run(st, 0);
    thread_done(st);
    return NULL;
}

/* A worker of a map or collate stage: takes chunks in turn, transforms
 * them, and puts each back under its sequence number, so order is kept. */
/* Reads the samples of a chunk of unread rows. On failure the chunk keeps
 * the rows read before the failing one, as a failing map does. */
static int read_rows(sl__stage *st, sl__chunk *chunk, sl__error *err)
{
    sl__source *src = st->it->source;
    for (size_t r = 0; r < chunk->nrows; r++) {
        int rc;
        if (stopping(st->it))
            return sl__errf(err, SL_ECLOSED, "source: stopped");
        rc = src->iface->read(src, chunk->rows[r].index, &chunk->rows[r], st->it->pool, err);
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

static int work_chunk(sl__stage *st, sl__chunk **chunk, sl__error *err)
{
    sl__chunk *in = *chunk, *out;
    sl__row row;
    int rc, read_rc = SL_OK;
    if (st->reads) {
        /* On a read error the rows read before it are still mapped, so
         * they can go on ahead of the error. */
        read_rc = read_rows(st, in, err);
        if (read_rc != SL_OK && (st->kind != SL__STAGE_MAP || st->collate))
            return read_rc;
    }
    if (st->kind == SL__STAGE_MAP) {
        sl__error map_err;
        sl__err_clear(&map_err);
        rc = sl__map_apply(&st->map, in, st->it->pool, &st->it->stop, &map_err);
        if (rc != SL_OK) {
            sl__err_copy(err, &map_err);
            return rc;
        }
        if (read_rc != SL_OK || !st->collate)
            return read_rc;
    }
    memset(&row, 0, sizeof row);
    rc = sl__collate(&st->collation, in, &row, st->it->pool, err);
    if (rc != SL_OK)
        return rc;
    out = sl__chunk_new(SL__CHUNK_ROWS, 1);
    if (!out) {
        sl__row_clear(&row);
        return sl__errf(err, SL_ENOMEM, "batch: out of memory");
    }
    sl__chunk_push_row(out, &row);
    sl__chunk_free(in);
    *chunk = out;
    return SL_OK;
}

static void *worker_main(void *arg)
{
    sl__stage *st = arg;
    sl__error err;
    sl__err_clear(&err);
    for (;;) {
        sl__chunk *chunk;
        uint64_t seq;
        int last, rc = SL_ETIMEDOUT;
        if (stopping(st->it))
            break;
        if (st->pulls_source) {
            /* Nothing to do: run the source ourselves, unless another
             * worker already is, in which case wait for what it sends. */
            sl__stage *src = &st->it->stages[0];
            rc = sl__queue_pop(st->in, (void **)&chunk, &seq, 0);
            if (rc == SL_ETIMEDOUT && pthread_mutex_trylock(&src->src.lock) == 0) {
                source_run(src, 1);
                pthread_mutex_unlock(&src->src.lock);
                continue;
            }
        }
        if (rc == SL_ETIMEDOUT)
            rc = sl__queue_pop(st->in, (void **)&chunk, &seq, -1);
        if (rc != SL_OK)
            break;
        last = chunk->kind == SL__CHUNK_EOF || chunk->kind == SL__CHUNK_ERROR;
        if (chunk->kind == SL__CHUNK_ROWS && work_chunk(st, &chunk, &err) != SL_OK) {
            if (err.status == SL_ECLOSED || stopping(st->it)) {
                sl__chunk_free(chunk);
                break;
            }
            last = 1;
            if (!st->collate && st->kind == SL__STAGE_MAP && chunk->nrows > 0) {
                /* The rows mapped before the failing one go on first (a
                 * batch group's rows are no use without the whole group). */
                chunk->kind = SL__CHUNK_ERROR;
                sl__err_copy(&chunk->error, &err);
            } else {
                sl__chunk_free(chunk);
                chunk = sl__chunk_error(&err);
                if (!chunk) {
                    /* Not even the error fits in memory: its place in the
                     * order stays empty, so close both sides rather than
                     * leave the consumer waiting for it. */
                    sl__queue_close(st->in);
                    sl__queue_close(&st->out);
                    break;
                }
            }
        }
        if (sl__queue_push(&st->out, seq, chunk) != SL_OK) {
            sl__chunk_free(chunk);
            break;
        }
        if (last) {
            /* Nothing follows an end or an error: wake the other workers. */
            sl__queue_close(st->in);
            break;
        }
    }
    thread_done(st);
    return NULL;
}

static void *seq_main(void *arg)
{
    sl__stage *st = arg;
    sl__out out = {.queue = &st->out, .chunk_rows = st->chunk_rows, .chunk_bytes = SL__CHUNK_BYTES};
    sl__error err;
    sl__chain chain = {st->nodes, st->nnodes, &out, st->it->pool, &err};
    sl__err_clear(&err);
    for (;;) {
        sl__chunk *chunk;
        int rc = SL_OK;
        if (sl__queue_pop(st->in, (void **)&chunk, NULL, -1) != SL_OK)
            break;
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
        if (rc == SL_ECLOSED || stopping(st->it))
            goto done;
        if (rc != SL_OK) {
            if (err.status == SL_OK)
                sl__errf(&err, rc, "%s: %s", st->name, sl_strerror(rc));
            send_error(st, &out, &err);
            goto done;
        }
    }
done:
    sl__out_discard(&out);
    thread_done(st);
    return NULL;
}

/* --- building the stages ------------------------------------------------- */

static void schema_after(sl__schema *schema, const sl__node *node)
{
    if (node->kind == SL__NODE_MAP) {
        snprintf(schema->names[node->column], SL_COLUMN_NAME_LEN, "%s", node->outname);
    } else if (node->kind == SL__NODE_BATCH) {
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
    }
    return "?";
}

static sl__stage *add_stage(sl_iterator *it, sl__stage_kind kind, const char *name, int nthreads,
                        size_t chunk_rows, int *rc)
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
    if (cap < 2 * (size_t)nthreads)
        cap = 2 * (size_t)nthreads;
    /* A failure here leaves nothing of the stage to free: it is not
     * counted in nstages yet. */
    *rc = sl__queue_init(&st->out, cap, &it->error);
    if (*rc != SL_OK) {
        sl__err_prefix(&it->error, "stage '%s': ", st->name);
        return NULL;
    }
    if (kind == SL__STAGE_SOURCE) {
        int e = pthread_mutex_init(&st->src.lock, NULL);
        if (e != 0) {
            sl__queue_destroy(&st->out);
            *rc = sl__pthread_errf(&it->error, e, "stage 'source': pthread_mutex_init");
            return NULL;
        }
        st->src.out.queue = &st->out;
        st->src.out.chunk_rows = chunk_rows;
        st->src.out.chunk_bytes = SL__CHUNK_BYTES;
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
                              group_only);
    if (rc != SL_OK)
        return rc;
    st->nnodes++;
    snprintf(st->name + strlen(st->name), sizeof st->name - strlen(st->name), "+%s%s",
             node_name(d->kind), group_only ? " (grouping)" : "");
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
    if (it->nstages < 2 || it->stages[1].kind == SL__STAGE_SEQ)
        return SL_OK;
    for (size_t k = 0; k < src->nnodes; k++)
        if (sl__seq_node_needs_data(src->nodes[k]))
            return SL_OK;
    it->lazy_source = 1;
    it->stages[1].reads = 1;
    /* The source thread would only order indices: the workers do it
     * themselves when they run dry, so the pipeline runs exactly the
     * threads it was given and none sits idle on a small machine. */
    it->stages[1].pulls_source = 1;
    src->nthreads = 0;
    src->src.out.nonblocking = 1; /* its workers also consume its queue */
    for (size_t k = 0; k < src->nnodes; k++) {
        rc = sl__seq_node_rows_unread(src->nodes[k]);
        if (rc != SL_OK)
            return rc;
    }
    /* Unread rows are small: a deeper queue lets the source thread run
     * ahead and sleep (and be woken) less often. */
    sl__queue_destroy(&src->out);
    rc = sl__queue_init(&src->out, 4 * src->out.capacity, &it->error);
    if (rc != SL_OK)
        sl__err_prefix(&it->error, "stage '%s': ", src->name);
    return rc;
}

static int build_stages(sl_iterator *it)
{
    sl__schema schema;
    sl__stage *seq;     /* the sequential stage nodes go to, or NULL after a parallel one */
    int batched = 0;
    size_t i = 0;
    int rc = SL_OK;

    schema.ncols = it->source->ncols;
    memcpy(schema.names, it->source->names, sizeof schema.names);
    memcpy(schema.specs, it->source->specs, sizeof schema.specs);
    plan_nodes(it->nodes, it->nnodes);
    /* At most two stages per node, plus the source. */
    it->stages = calloc(2 * it->nnodes + 1, sizeof *it->stages);
    if (!it->stages)
        return SL_ENOMEM;
    seq = add_stage(it, SL__STAGE_SOURCE, "source", 1, it->opts.chunk_rows, &rc);
    while (rc == SL_OK && i < it->nnodes) {
        const sl__node *node = &it->nodes[i];
        size_t chunk_rows = batched ? 1 : it->opts.chunk_rows;
        if (node->kind == SL__NODE_MAP) {
            size_t first = i;
            int workers = 1, fuse_batch;
            sl__stage *st;
            while (i < it->nnodes && it->nodes[i].kind == SL__NODE_MAP) {
                if (it->nodes[i].workers > workers)
                    workers = it->nodes[i].workers;
                i++;
            }
            /* maps then batch: group before, stack in the map workers */
            fuse_batch = i < it->nnodes && it->nodes[i].kind == SL__NODE_BATCH;
            if (fuse_batch) {
                if (it->nodes[i].workers > workers)
                    workers = it->nodes[i].workers;
                if (!seq && !(seq = add_stage(it, SL__STAGE_SEQ, "sequential", 1, chunk_rows, &rc)))
                    break;
                rc = add_seq_node(it, seq, &it->nodes[i], &schema, 1);
                if (rc != SL_OK)
                    break;
            }
            st = add_stage(it, SL__STAGE_MAP, "map", workers, chunk_rows, &rc);
            if (!st)
                break;
            seq = NULL;
            st->steps = calloc(i - first, sizeof *st->steps);
            if (!st->steps)
                return SL_ENOMEM;
            for (size_t k = first; k < i; k++) {
                st->steps[k - first].node = &it->nodes[k];
                st->steps[k - first].salt = it->nodes[k].position;
                schema_after(&schema, &it->nodes[k]);
            }
            st->map.steps = st->steps;
            st->map.nsteps = i - first;
            st->map.seed = it->seed;
            st->map.source = it->source;
            st->schema = schema;
            st->map.schema = &st->schema;
            st->collation.schema = &st->schema;
            if (fuse_batch) {
                st->collate = 1;
                st->chunk_rows = 1;
                snprintf(st->name, sizeof st->name, "map+batch");
                schema_after(&schema, &it->nodes[i]);
                batched = 1;
                i++;
            }
            continue;
        }
        if (!seq && !(seq = add_stage(it, SL__STAGE_SEQ, "sequential", 1, chunk_rows, &rc)))
            break;
        if (node->kind == SL__NODE_BATCH && node->workers > 1) {
            /* group here, stack in parallel in the next sl__stage */
            sl__stage *st;
            rc = add_seq_node(it, seq, node, &schema, 1);
            if (rc != SL_OK)
                break;
            st = add_stage(it, SL__STAGE_COLLATE, "batch", node->workers, 1, &rc);
            if (!st)
                break;
            st->schema = schema;
            st->collation.schema = &st->schema;
            seq = NULL;
        } else {
            rc = add_seq_node(it, seq, node, &schema, 0);
            if (rc != SL_OK)
                break;
            if (node->kind == SL__NODE_BATCH)
                seq->chunk_rows = 1; /* rows from here on are whole batches */
        }
        if (node->kind == SL__NODE_BATCH) {
            schema_after(&schema, node);
            batched = 1;
        }
        i++;
    }
    if (rc == SL_OK)
        rc = plan_lazy_source(it);
    return rc;
}

static void *(*stage_main(sl__stage_kind kind))(void *)
{
    switch (kind) {
    case SL__STAGE_SOURCE: return source_main;
    case SL__STAGE_SEQ: return seq_main;
    default: return worker_main;
    }
}

static void shutdown_stages(sl_iterator *it)
{
    atomic_store(&it->stop, 1);
    /* A source thread waiting for another iterator's load sees the flag. */
    if (it->source->iface->wake)
        it->source->iface->wake(it->source);
    for (size_t s = 0; s < it->nstages; s++)
        sl__queue_close(&it->stages[s].out);
    for (size_t s = 0; s < it->nstages; s++)
        for (int t = 0; t < it->stages[s].started; t++)
            pthread_join(it->stages[s].threads[t], NULL);
    for (size_t s = 0; s < it->nstages; s++)
        it->stages[s].started = 0;
}

static void free_stages(sl_iterator *it)
{
    for (size_t s = 0; s < it->nstages; s++) {
        sl__stage *st = &it->stages[s];
        sl__queue_drain(&st->out, sl__chunk_free_item);
        sl__queue_destroy(&st->out);
        if (st->kind == SL__STAGE_SOURCE) {
            sl__out_discard(&st->src.out);
            free(st->src.order);
            pthread_mutex_destroy(&st->src.lock);
        }
        for (size_t k = 0; k < st->nnodes; k++)
            sl__seq_node_free(st->nodes[k]);
        free(st->nodes);
        free(st->steps);
        free(st->threads);
    }
    free(it->stages);
    it->stages = NULL;
    it->nstages = 0;
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

int sl_iterator_new(sl_iterator **out, sl_dataset *ds, const sl_iterator_options *o)
{
    sl_iterator *it;
    int rc;
    *out = NULL;
    if (!ds->source)
        return sl__errf(&ds->error, SL_ESTATE, "iterator: the dataset has no source");
    if (o && (o->num_epochs == 0 || o->num_epochs < -1))
        return sl__errf(&ds->error, SL_EINVAL, "iterator: num_epochs must be >= 1 or -1, got %lld",
                        (long long)o->num_epochs);
    if (o && (o->queue_chunks == 0 || o->chunk_rows == 0))
        return sl__errf(&ds->error, SL_EINVAL, "iterator: queue_chunks and chunk_rows must be >= 1");
    it = calloc(1, sizeof *it);
    if (!it)
        return sl__errf(&ds->error, SL_ENOMEM, "iterator: out of memory");
    if (o)
        it->opts = *o;
    else
        sl_iterator_options_init(&it->opts);
    atomic_init(&it->stop, 0);
    atomic_init(&it->interrupted, 0);
    it->source = ds->source;
    sl__source_retain(it->source);
    it->seed = ds->seed;
    it->schema = ds->schema;
    it->pool = ds->pool;
    sl__pool_retain(it->pool);
    rc = sl__nodes_copy(&it->nodes, ds->nodes, ds->nnodes);
    if (rc == SL_OK) {
        it->nnodes = ds->nnodes;
        it->passes = count_passes(it);
        rc = build_stages(it);
    }
    if (rc != SL_OK) {
        sl__errf(&ds->error, rc, "iterator: cannot set up the pipeline: %s",
                 it->error.status != SL_OK ? it->error.msg : sl_strerror(rc));
        sl_iterator_free(it);
        return rc;
    }
    for (size_t s = 0; s < it->nstages && rc == SL_OK; s++) {
        sl__stage *st = &it->stages[s];
        atomic_store(&st->running, st->nthreads);
        for (int t = 0; t < st->nthreads; t++) {
            if (pthread_create(&st->threads[t], NULL, stage_main(st->kind), st) != 0) {
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
    free_stages(it);
    sl__chunk_free(it->cur);
    sl__nodes_free(it->nodes, it->nnodes);
    sl__source_release(it->source);
    sl__pool_release(it->pool);
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
        rc = sl__queue_pop(&last->out, (void **)&chunk, NULL, it->opts.timeout_ms);
        if (rc == SL_ETIMEDOUT) {
            describe_stall(it, it->opts.timeout_ms);
            return rc;
        }
        if (rc == SL_ECANCELED)
            return take_interrupt(it);
        if (rc != SL_OK) {
            it->status = sl__errf(&it->error, SL_ECLOSED,
                                  "iterator: the pipeline stopped without an end of data or an "
                                  "error (out of memory?)");
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
            if (it->opts.num_epochs > 0 && ++it->epochs_out == it->opts.num_epochs)
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

void sl_iterator_get_stats(const sl_iterator *it, sl_iterator_stats *out)
{
    memset(out, 0, sizeof *out);
    out->source_load_ms = it->source->iface->load_ms(it->source);
    out->rows_out = it->rows_out;
    out->pool_bytes = sl__pool_bytes(it->pool);
    for (size_t s = 0; s < it->nstages; s++)
        out->threads += it->stages[s].nthreads;
    out->consumer_wakeups = sl__queue_pop_wakeups(&it->stages[it->nstages - 1].out);
}
