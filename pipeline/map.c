/* map.c: the parallel work of pipeline nodes (nodes.h): a map's fused
 * steps applied to the rows of a chunk, and batch collation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "ops/op_impl.h"
#include "pipeline/batch_lender.h"
#include "pipeline/batch_map.h"
#include "pipeline/nodes.h"

static void name_row(const sl__map_work *w, const sl__node *node, const sl__row *row, char *buf,
                     size_t len)
{
    if (node->after_batch)
        snprintf(buf, len, "batch %lld of epoch %lld", (long long)row->index,
                 (long long)row->epoch);
    else
        w->source->iface->describe(w->source, row->index, buf, len);
}

int sl__map_step_plan(sl__map_step *step, sl__map_step *next, int fuse_decode)
{
    const sl__node *node = step->node;
    step->nops = 0;
    step->ops = malloc((node->nops + 1) * sizeof *step->ops);
    step->rng_salt = malloc((node->nops + 1) * sizeof *step->rng_salt);
    if (!step->ops || !step->rng_salt)
        return SL_ENOMEM;
    for (size_t k = step->skip; k < node->nops;) {
        sl_op *fused;
        size_t used;
        int rc;
        if (!fuse_decode && sl__op_decode_max_bytes(node->ops[k]) > 0) {
            step->ops[step->nops] = sl_op_retain(node->ops[k]);
            step->rng_salt[step->nops] = step->salt * 64 + k;
            step->nops++;
            k++;
            continue;
        }
        if (k + 1 == node->nops && next && next->node->column == node->column &&
            next->node->after_batch == node->after_batch) {
            /* the last op may fuse with the start of the next node */
            rc = sl__op_fuse_decode(node->ops[k], next->node->ops, next->node->nops, &fused,
                                    &used);
            if (rc != SL_OK)
                return rc;
            if (fused) {
                sl__op_decode_fused_allow_scaling(fused, fuse_decode == SL_DECODE_FUSION_SCALED);
                step->ops[step->nops] = fused;
                step->rng_salt[step->nops] = next->salt * 64 + (uint64_t)fused->rng_offset - 1;
                step->nops++;
                next->skip = used;
                break;
            }
        }
        rc = sl__op_fuse(node->ops + k, node->nops - k, &fused, &used);
        if (rc != SL_OK)
            return rc;
        if (fused)
            sl__op_decode_fused_allow_scaling(fused, fuse_decode == SL_DECODE_FUSION_SCALED);
        step->ops[step->nops] = fused ? fused : sl_op_retain(node->ops[k]);
        step->rng_salt[step->nops] = step->salt * 64 + k + (fused ? (uint64_t)fused->rng_offset : 0);
        step->nops++;
        k += used;
    }
    return SL_OK;
}

void sl__map_step_clear(sl__map_step *step)
{
    for (size_t k = 0; k < step->nops; k++)
        sl_op_release(step->ops[k]);
    free(step->ops);
    free(step->rng_salt);
    step->ops = NULL;
    step->rng_salt = NULL;
    step->nops = 0;
}

/* Asks the CPU to start loading the next row's mapped inputs while this
 * row is transformed: a source such as MNIST hands out views into a large
 * array in shuffled order, so without it every row begins with cache
 * misses. Only the first PREFETCH_BYTES of each column (an MNIST image is
 * 784 bytes); prefetches never fault. */
#define PREFETCH_BYTES 2048
static void prefetch_row(const sl__map_work *w, const sl__row *row)
{
    for (size_t s = 0; s < w->nsteps; s++) {
        const sl_tensor *t = row->col[w->steps[s].node->column];
        size_t n;
        if (!t)
            continue;
        n = t->nbytes < PREFETCH_BYTES ? t->nbytes : PREFETCH_BYTES;
        for (size_t b = 0; b < n; b += 64)
            __builtin_prefetch((const char *)t->data + b, 0, 0);
    }
}

/* The bytes a Decode took for this row come back once the worker is done
 * with the row, not when the image is freed: by then the ops after the
 * Decode in this map (a Resize, usually) have replaced it, or it leaves the
 * worker in a chunk for a queue whose capacity bounds what waits there.
 * Counting until the image is freed would count rows held downstream (a
 * shuffle buffer, a batch being filled), which need more rows before they
 * let any go: the workers would then wait on them for ever. */
static void give_back_budget(sl__op_ctx *ctx)
{
    if (ctx->budget_held > 0) {
        sl__byte_budget_give(ctx->budget, ctx->budget_held);
        ctx->budget_held = 0;
    }
}

/* 1 when step s is the last one that maps its column. */
static int last_step_of_column(const sl__map_work *w, size_t s)
{
    for (size_t q = s + 1; q < w->nsteps; q++)
        if (w->steps[q].node->column == w->steps[s].node->column)
            return 0;
    return 1;
}

/* Offers the column's last op the row's slot of its batch tensor, if
 * there is one (batch row r of slots). */
static void offer_slot(sl__op_ctx *ctx, const sl__batch_slots *slots, size_t r, size_t col,
                       size_t nrows)
{
    sl_tensor *batch = slots ? slots->col[col] : NULL;
    if (!batch)
        return;
    ctx->slot_base = batch;
    ctx->slot_bytes = batch->nbytes / nrows;
    ctx->slot_offset = r * ctx->slot_bytes;
}

/* Applies the steps to one row (row r of nrows, with slots when not NULL).
 * On failure *failed is the step's node, the row's transformed column is
 * released (NULL), the budget the row took is given back and err holds
 * the op's message, not yet naming the row. */
static int map_row(const sl__map_work *w, sl__row *row, sl__op_ctx *ctx,
                   const sl__node **failed, const sl__batch_slots *slots, size_t r,
                   size_t nrows)
{
    for (size_t s = 0; s < w->nsteps; s++) {
        const sl__map_step *step = &w->steps[s];
        const sl__node *node = step->node;
        sl_tensor *t = row->col[node->column];
        int last = slots && last_step_of_column(w, s);
        row->col[node->column] = NULL;
        for (size_t k = 0; k < step->nops; k++) {
            const sl_op *op = step->ops[k];
            sl_tensor *next;
            int rc;
            if (op->random)
                sl__rng_seed(&ctx->rng, w->seed, (uint64_t)row->epoch, (uint64_t)row->index,
                             step->rng_salt[k]);
            if (last && k + 1 == step->nops)
                offer_slot(ctx, slots, r, node->column, nrows);
            rc = sl__op_run(op, t, &next, ctx);
            ctx->slot_base = NULL; /* a slot unused stays unused */
            if (rc != SL_OK) {
                give_back_budget(ctx);
                *failed = node;
                return rc;
            }
            t = next;
        }
        row->col[node->column] = t;
    }
    give_back_budget(ctx);
    return SL_OK;
}

static void op_ctx_init(sl__op_ctx *ctx, const sl__map_work *w, sl_pool *pool, sl__error *err)
{
    ctx->pool = pool;
    ctx->err = err;
    ctx->budget = w->budget;
    ctx->budget_held = 0;
    ctx->slot_base = NULL;
}

static int batch_tensor(sl_tensor **out, sl_pool *pool, const sl_tensor *first, const int64_t *shape,
                        int64_t n, void **lent, size_t lent_bytes, sl__lender *loan);

void sl__batch_slots_init(sl__batch_slots *s, const sl__collate_work *collate)
{
    memset(s, 0, sizeof *s);
    s->collate = collate;
}

void sl__batch_slots_clear(sl__batch_slots *s)
{
    for (size_t c = 0; c < SL_MAX_COLUMNS; c++) {
        sl_tensor_release(s->col[c]);
        s->col[c] = NULL;
        /* lent memory not stacked into goes back now (each column once) */
        if (s->lent[c])
            s->loan->give_back(s->loan);
        s->lent[c] = NULL;
    }
}

/* Asks the lender, once per batch, for memory for its ncols columns. */
static void slots_lend(sl__batch_slots *s, const sl__collate_work *w, size_t ncols)
{
    if (s->lent_asked)
        return;
    s->lent_asked = 1;
    if (w->lender)
        s->loan = w->lender->lend(w->lender, ncols, s->lent, s->lent_bytes);
}

/* After the first row of chunk is mapped: the batch tensor, shaped by that
 * row, of each column the steps map (not padded ones). One not made (no
 * memory, too many dimensions) is left to stacking, which says why. */
static void slots_make(sl__batch_slots *s, const sl__map_work *w, const sl__chunk *chunk,
                       sl_pool *pool)
{
    const sl__collate_work *cw = s->collate;
    int64_t n = (int64_t)chunk->nrows;
    slots_lend(s, cw, cw->schema->ncols);
    for (size_t q = 0; q < w->nsteps; q++) {
        size_t c = w->steps[q].node->column;
        const sl_tensor *first = chunk->rows[0].col[c];
        int64_t shape[SL_MAX_DIMS];
        if (s->col[c] || !first || first->ndim >= SL_MAX_DIMS || (cw->pad && cw->pad[c].on))
            continue;
        shape[0] = n;
        memcpy(shape + 1, first->shape, (size_t)first->ndim * sizeof *shape);
        if (batch_tensor(&s->col[c], pool, first, shape, n, &s->lent[c], s->lent_bytes[c],
                         s->loan) != SL_OK)
            s->col[c] = NULL;
    }
}

int sl__map_apply(const sl__map_work *w, sl__chunk *chunk, sl_pool *pool,
                  const atomic_int *stop, sl__batch_slots *slots, sl__error *err)
{
    sl__op_ctx ctx;
    op_ctx_init(&ctx, w, pool, err);
    for (size_t r = 0; r < chunk->nrows; r++) {
        sl__row *row = &chunk->rows[r];
        const sl__node *failed;
        int rc;
        if (atomic_load_explicit(stop, memory_order_relaxed))
            return sl__errf(err, SL_ECLOSED, "map: stopped");
        if (r + 1 < chunk->nrows)
            prefetch_row(w, &chunk->rows[r + 1]);
        rc = map_row(w, row, &ctx, &failed, slots && slots->collate ? slots : NULL, r,
                     chunk->nrows);
        if (rc == SL_OK && r == 0 && slots && slots->collate)
            slots_make(slots, w, chunk, pool);
        if (rc != SL_OK) {
            char where[300];
            name_row(w, failed, row, where, sizeof where);
            sl__err_prefix(err, "map on column '%s', %s: ", failed->colname, where);
            /* Keep the rows done before this one: they go on ahead of the
             * error. */
            for (size_t q = r; q < chunk->nrows; q++)
                sl__row_clear(&chunk->rows[q]);
            chunk->nrows = r;
            return rc;
        }
    }
    return SL_OK;
}

int sl__map_apply_row(const sl__map_work *w, sl__row *row, sl_pool *pool, sl__error *err)
{
    sl__op_ctx ctx;
    const sl__node *failed;
    int rc;
    op_ctx_init(&ctx, w, pool, err);
    rc = map_row(w, row, &ctx, &failed, NULL, 0, 1);
    if (rc != SL_OK)
        sl__err_prefix(err, "map on column '%s': ", failed->colname);
    return rc;
}

/* The tensor for a batch column of shape (n, ...): over the lent memory
 * when there is some of its size (taken: *lent becomes NULL), else from
 * the pool. */
static int batch_tensor(sl_tensor **out, sl_pool *pool, const sl_tensor *first, const int64_t *shape,
                        int64_t n, void **lent, size_t lent_bytes, sl__lender *loan)
{
    if (*lent && lent_bytes / (size_t)n == first->nbytes && lent_bytes % (size_t)n == 0) {
        int rc = sl__tensor_lent(out, pool, first->dtype, first->ndim + 1, shape, *lent, loan);
        if (rc == SL_OK)
            *lent = NULL;
        return rc;
    }
    return sl__tensor_alloc(out, pool, first->dtype, first->ndim + 1, shape);
}

/* Checks that every row's column c agrees with row 0's. */
static int check_rows(const sl__schema *schema, const sl__chunk *group, size_t c,
                      sl__error *err)
{
    const sl_tensor *first = group->rows[0].col[c];
    for (size_t r = 1; r < group->nrows; r++) {
        const sl_tensor *t = group->rows[r].col[c];
        if (t->dtype != first->dtype ||
            !sl__shape_equal(t->ndim, t->shape, first->ndim, first->shape)) {
            char a[96], b[96];
            return sl__errf(err, SL_ESHAPE,
                            "batch %lld: row %zu has column '%s' as %s %s but row 0 has %s %s; "
                            "the rows of a batch must agree (resize them first)",
                            (long long)group->group_index, r, schema->names[c],
                            sl_dtype_name(t->dtype), sl_shape_str(a, sizeof a, t->ndim, t->shape),
                            sl_dtype_name(first->dtype),
                            sl_shape_str(b, sizeof b, first->ndim, first->shape));
        }
    }
    return SL_OK;
}

static int stack_rows(const sl__collate_work *w, const sl__schema *schema,
                      const sl__chunk *group, sl__batch_slots *slots, sl__row *out, sl_pool *pool,
                      sl__error *err);

int sl__collate(const sl__collate_work *w, const sl__chunk *group, sl__batch_slots *slots,
                sl__row *out, sl_pool *pool, sl__error *err)
{
    sl__batch_slots none;
    sl__chunk *mapped;
    int rc;
    if (!slots || !slots->collate) {
        sl__batch_slots_init(&none, NULL);
        slots = &none;
    }
    if (!w->map)
        return stack_rows(w, w->schema, group, slots, out, pool, err);
    SL_ASSERT(!slots->collate); /* a per-batch map makes the rows stacked */
    rc = sl__batch_map_run(w->map, group, &mapped, err);
    if (rc != SL_OK)
        return rc;
    rc = stack_rows(w, &w->map->out_schema, mapped, slots, out, pool, err);
    sl__chunk_free(mapped);
    return rc;
}

/* Stacks group's rows, whose columns schema describes, into the tensors of
 * slots made for them and otherwise into new ones; rows already in their
 * slot are not copied. */
static int stack_rows(const sl__collate_work *w, const sl__schema *schema,
                      const sl__chunk *group, sl__batch_slots *slots, sl__row *out, sl_pool *pool,
                      sl__error *err)
{
    int64_t n = (int64_t)group->nrows;
    int rc = SL_OK;
    SL_ASSERT(n > 0);
    out->index = group->group_index;
    out->epoch = group->group_epoch;
    slots_lend(slots, w, schema->ncols);
    for (size_t c = 0; c < schema->ncols && rc == SL_OK; c++) {
        const sl_tensor *first = group->rows[0].col[c];
        int64_t shape[SL_MAX_DIMS];
        sl_tensor *batch;
        char *dst;
        if (w->pad && w->pad[c].on) {
            rc = sl__collate_padded(group, c, &w->pad[c], schema->names[c], &out->col[c], pool,
                                    err);
            continue;
        }
        if (first->ndim >= SL_MAX_DIMS) {
            rc = sl__errf(err, SL_ESHAPE, "batch: column '%s' already has %d dimensions",
                          schema->names[c], first->ndim);
            break;
        }
        shape[0] = n;
        memcpy(shape + 1, first->shape, (size_t)first->ndim * sizeof *shape);
        rc = check_rows(schema, group, c, err);
        if (rc != SL_OK)
            break;
        if (slots->col[c] && slots->col[c]->nbytes == (size_t)n * first->nbytes) {
            batch = slots->col[c];
            slots->col[c] = NULL;
        } else {
            rc = batch_tensor(&batch, pool, first, shape, n, &slots->lent[c],
                              slots->lent_bytes[c], slots->loan);
        }
        if (rc != SL_OK) {
            sl__errf(err, rc, "batch: out of memory for column '%s'", schema->names[c]);
            break;
        }
        dst = batch->data;
        for (int64_t r = 0; r < n; r++) {
            if (group->rows[r].col[c]->data != dst) /* else made in its slot */
                memcpy(dst, group->rows[r].col[c]->data, first->nbytes);
            dst += first->nbytes;
        }
        out->col[c] = batch;
    }
    sl__batch_slots_clear(slots);
    if (rc != SL_OK)
        sl__row_clear(out);
    return rc;
}
