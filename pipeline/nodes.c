/* nodes.c: output builders and the sequential nodes (shuffle, batch,
 * repeat, take, skip); the parallel work of map and batch collation is in
 * map.c. */
#include "pipeline/nodes.h"

#include <stdlib.h>
#include <string.h>

#include "core/rng.h"

/* --- output builder ------------------------------------------------------ */

int sl__out_drain(sl__out *out)
{
    while (out->pending) {
        sl__chunk *c = out->pending, *next = c->next;
        int rc;
        /* Unlinked before the push: once pushed, a consumer may free it. */
        c->next = NULL;
        rc = sl__queue_try_push_next(out->queue, c);
        if (rc == SL_ETIMEDOUT) {
            c->next = next; /* full: it and the rest wait */
            return SL_OK;
        }
        out->pending = next;
        if (!next)
            out->pending_tail = NULL;
        if (rc != SL_OK) {
            sl__chunk_free(c);
            return rc;
        }
    }
    return SL_OK;
}

/* Sends chunk (ownership moves; freed on failure). */
static int out_send(sl__out *out, sl__chunk *c)
{
    int rc;
    if (out->rows)
        atomic_fetch_add_explicit(out->rows, c->nrows, memory_order_relaxed);
    if (!out->nonblocking) {
        rc = sl__queue_push_next(out->queue, c);
        if (rc != SL_OK)
            sl__chunk_free(c);
        return rc;
    }
    if (out->pending_tail)
        out->pending_tail->next = c;
    else
        out->pending = c;
    out->pending_tail = c;
    return sl__out_drain(out);
}

int sl__out_flush(sl__out *out)
{
    sl__chunk *c = out->cur;
    if (!c || (c->nrows == 0 && !c->bad))
        return SL_OK;
    out->cur = NULL;
    return out_send(out, c);
}

int sl__out_row(sl__out *out, sl__row *row)
{
    if (!out->cur) {
        out->cur = sl__chunk_new(SL__CHUNK_ROWS, out->chunk_rows);
        if (!out->cur) {
            sl__row_clear(row);
            return SL_ENOMEM;
        }
    }
    sl__chunk_push_row(out->cur, row);
    if (out->cur->nrows == out->cur->cap || out->cur->nbytes >= out->chunk_bytes)
        return sl__out_flush(out);
    return SL_OK;
}

int sl__out_bad(sl__out *out, sl__bad_record *records)
{
    if (!records)
        return SL_OK;
    if (!out->cur) {
        out->cur = sl__chunk_new(SL__CHUNK_ROWS, out->chunk_rows);
        if (!out->cur) {
            sl__bad_records_free(records);
            return SL_ENOMEM;
        }
    }
    sl__chunk_add_bad(out->cur, records);
    return SL_OK;
}

int sl__out_chunk(sl__out *out, sl__chunk *chunk)
{
    int rc = sl__out_flush(out);
    if (rc != SL_OK) {
        sl__chunk_free(chunk);
        return rc;
    }
    return out_send(out, chunk);
}

int sl__out_marker(sl__out *out, sl__chunk_kind kind)
{
    sl__chunk *c = sl__chunk_new(kind, 0);
    if (!c)
        return SL_ENOMEM;
    return sl__out_chunk(out, c);
}

void sl__out_discard(sl__out *out)
{
    sl__chunk_free(out->cur);
    out->cur = NULL;
    while (out->pending) {
        sl__chunk *c = out->pending;
        out->pending = c->next;
        sl__chunk_free(c);
    }
    out->pending_tail = NULL;
}

/* --- sequential chain ---------------------------------------------------- */

typedef struct seq_node_iface {
    int (*row)(sl__seq_node *n, sl__chain *chain, size_t next, sl__row *row);
    int (*eoe)(sl__seq_node *n, sl__chain *chain, size_t next);
    void (*destroy)(sl__seq_node *n);
} seq_node_iface;

struct sl__seq_node {
    const seq_node_iface *iface;
};

/* Drops one unit at the chain's end if a start mid-epoch still skips. */
static int chain_skips(sl__chain *chain)
{
    if (!chain->skip || *chain->skip <= 0)
        return 0;
    (*chain->skip)--;
    return 1;
}

int sl__chain_row(sl__chain *chain, size_t pos, sl__row *row)
{
    if (pos == chain->nnodes) {
        if (chain_skips(chain)) {
            sl__row_clear(row);
            return SL_OK;
        }
        return sl__out_row(chain->out, row);
    }
    return chain->nodes[pos]->iface->row(chain->nodes[pos], chain, pos + 1, row);
}

int sl__chain_eoe(sl__chain *chain, size_t pos)
{
    if (pos == chain->nnodes) {
        if (chain->skip)
            *chain->skip = 0; /* a start past the epoch's end skips only it */
        return sl__out_marker(chain->out, SL__CHUNK_EOE);
    }
    return chain->nodes[pos]->iface->eoe(chain->nodes[pos], chain, pos + 1);
}

void sl__seq_node_free(sl__seq_node *node)
{
    if (node) {
        node->iface->destroy(node);
        free(node);
    }
}

/* shuffle: a buffer of rows; once full, each arriving row takes the place
 * of a randomly chosen one, which leaves. At the end of an epoch the rest
 * leave in random order and the generator is reseeded for the next one.
 * Rows the source passed unread are kept as just their index (24 bytes, not
 * a whole row): the buffer of 10000 then fits the core's cache, which
 * matters as every arrival touches a random slot. */
typedef struct unread_row {
    int64_t index, epoch;
    size_t bytes;
} unread_row;

typedef struct shuffle_node {
    sl__seq_node base;
    sl__row *buf;        /* rows, or NULL when unread */
    unread_row *ubuf;    /* unread rows */
    size_t n, cap;
    sl_rng rng;
    uint64_t seed, position;
    int64_t epoch;
} shuffle_node;

static void shuffle_reseed(shuffle_node *s)
{
    sl__rng_seed(&s->rng, s->seed, s->position, (uint64_t)s->epoch, 0x5f1e);
}

static void slot_get(const shuffle_node *s, size_t j, sl__row *row)
{
    if (s->buf) {
        *row = s->buf[j];
        return;
    }
    memset(row, 0, sizeof *row);
    row->index = s->ubuf[j].index;
    row->epoch = s->ubuf[j].epoch;
    row->unread_bytes = s->ubuf[j].bytes;
}

static void slot_put(shuffle_node *s, size_t j, const sl__row *row)
{
    if (s->buf) {
        s->buf[j] = *row;
    } else {
        s->ubuf[j].index = row->index;
        s->ubuf[j].epoch = row->epoch;
        s->ubuf[j].bytes = row->unread_bytes;
    }
}

static int shuffle_row(sl__seq_node *n, sl__chain *chain, size_t next, sl__row *row)
{
    shuffle_node *s = (shuffle_node *)n;
    sl__row leaving;
    size_t j;
    if (s->n < s->cap) {
        slot_put(s, s->n++, row);
        return SL_OK;
    }
    j = (size_t)sl__rng_below(&s->rng, s->cap);
    slot_get(s, j, &leaving);
    slot_put(s, j, row);
    return sl__chain_row(chain, next, &leaving);
}

static int shuffle_eoe(sl__seq_node *n, sl__chain *chain, size_t next)
{
    shuffle_node *s = (shuffle_node *)n;
    while (s->n > 0) {
        size_t j = (size_t)sl__rng_below(&s->rng, s->n);
        sl__row leaving, last;
        int rc;
        slot_get(s, j, &leaving);
        slot_get(s, --s->n, &last);
        slot_put(s, j, &last);
        rc = sl__chain_row(chain, next, &leaving);
        if (rc != SL_OK)
            return rc;
    }
    s->epoch++;
    shuffle_reseed(s);
    return sl__chain_eoe(chain, next);
}

static void shuffle_destroy(sl__seq_node *n)
{
    shuffle_node *s = (shuffle_node *)n;
    for (size_t i = 0; s->buf && i < s->n; i++)
        sl__row_clear(&s->buf[i]);
    free(s->buf);
    free(s->ubuf);
}

static const seq_node_iface shuffle_iface = {shuffle_row, shuffle_eoe, shuffle_destroy};

/* batch: gathers batch_size rows; collates them here, or hands them on as
 * one chunk for parallel collation. */
typedef struct batch_node {
    sl__seq_node base;
    sl__chunk *group;
    int64_t size;
    int drop_remainder;
    int group_only;
    int64_t index, epoch; /* batch number within the epoch, and the epoch */
    sl__collate_work work;
    sl__schema schema;
    sl__pad_col pad[SL_MAX_COLUMNS]; /* of a padded batch */
} batch_node;

static int batch_emit(batch_node *b, sl__chain *chain, size_t next)
{
    sl__chunk *group = b->group;
    sl__row row;
    int rc;
    b->group = NULL;
    group->group_index = b->index++;
    group->group_epoch = b->epoch;
    if (b->group_only) { /* the chain's last node */
        if (chain_skips(chain)) {
            sl__chunk_free(group);
            return SL_OK;
        }
        return sl__out_chunk(chain->out, group);
    }
    memset(&row, 0, sizeof row);
    rc = sl__collate(&b->work, group, NULL, &row, chain->pool, chain->err);
    sl__chunk_free(group);
    if (rc != SL_OK)
        return rc;
    return sl__chain_row(chain, next, &row);
}

static int batch_row(sl__seq_node *n, sl__chain *chain, size_t next, sl__row *row)
{
    batch_node *b = (batch_node *)n;
    if (!b->group) {
        b->group = sl__chunk_new(SL__CHUNK_ROWS, (size_t)b->size);
        if (!b->group) {
            sl__row_clear(row);
            return sl__errf(chain->err, SL_ENOMEM, "batch: out of memory");
        }
    }
    sl__chunk_push_row(b->group, row);
    if ((int64_t)b->group->nrows == b->size)
        return batch_emit(b, chain, next);
    return SL_OK;
}

static int batch_eoe(sl__seq_node *n, sl__chain *chain, size_t next)
{
    batch_node *b = (batch_node *)n;
    int rc = SL_OK;
    if (b->group && b->group->nrows > 0 && !b->drop_remainder)
        rc = batch_emit(b, chain, next);
    sl__chunk_free(b->group);
    b->group = NULL;
    b->index = 0;
    b->epoch++;
    if (rc != SL_OK)
        return rc;
    return sl__chain_eoe(chain, next);
}

static void batch_destroy(sl__seq_node *n)
{
    sl__chunk_free(((batch_node *)n)->group);
}

static const seq_node_iface batch_iface = {batch_row, batch_eoe, batch_destroy};

/* repeat: lets rows through; of every `count` ends of epoch arriving, only
 * the last goes on, so the repeated passes form one epoch. */
typedef struct counting_node {
    sl__seq_node base;
    int64_t count; /* repeat count, or n for take/skip */
    int64_t seen;  /* ends of epoch (repeat) or rows (take, skip) this epoch */
    int endless;   /* take after an endless repeat: it ends the epochs itself */
} counting_node;

static int pass_row(sl__seq_node *n, sl__chain *chain, size_t next, sl__row *row)
{
    (void)n;
    return sl__chain_row(chain, next, row);
}

static int repeat_eoe(sl__seq_node *n, sl__chain *chain, size_t next)
{
    counting_node *r = (counting_node *)n;
    r->seen++;
    if (r->count < 0 || r->seen % r->count != 0)
        return SL_OK;
    return sl__chain_eoe(chain, next);
}

static void no_destroy(sl__seq_node *n)
{
    (void)n;
}

static const seq_node_iface repeat_iface = {pass_row, repeat_eoe, no_destroy};

static int take_row(sl__seq_node *n, sl__chain *chain, size_t next, sl__row *row)
{
    counting_node *t = (counting_node *)n;
    int rc = SL_OK;
    if (t->count >= 0 && t->seen >= t->count) {
        sl__row_clear(row);
    } else {
        t->seen++;
        rc = sl__chain_row(chain, next, row);
    }
    /* After an endless repeat no end of epoch ever arrives: the n rows
     * taken are the epoch, and the next one continues the stream. */
    if (rc == SL_OK && t->endless && t->seen >= t->count) {
        t->seen = 0;
        rc = sl__chain_eoe(chain, next);
    }
    return rc;
}

static int skip_row(sl__seq_node *n, sl__chain *chain, size_t next, sl__row *row)
{
    counting_node *t = (counting_node *)n;
    if (t->seen < t->count) {
        t->seen++;
        sl__row_clear(row);
        return SL_OK;
    }
    return sl__chain_row(chain, next, row);
}

static int counting_eoe(sl__seq_node *n, sl__chain *chain, size_t next)
{
    ((counting_node *)n)->seen = 0;
    return sl__chain_eoe(chain, next);
}

static const seq_node_iface take_iface = {take_row, counting_eoe, no_destroy};
static const seq_node_iface skip_iface = {skip_row, counting_eoe, no_destroy};

/* project: moves the kept columns into their new places and releases the
 * others. */
typedef struct project_node {
    sl__seq_node base;
    size_t ncols;
    int pick[SL_MAX_COLUMNS];
} project_node;

static int project_row(sl__seq_node *n, sl__chain *chain, size_t next, sl__row *row)
{
    const project_node *p = (const project_node *)n;
    sl_tensor *col[SL_MAX_COLUMNS] = {NULL};
    for (size_t c = 0; c < p->ncols; c++) {
        col[c] = row->col[p->pick[c]];
        row->col[p->pick[c]] = NULL;
    }
    sl__row_clear(row); /* the columns left out */
    memcpy(row->col, col, sizeof col);
    return sl__chain_row(chain, next, row);
}

static int pass_eoe(sl__seq_node *n, sl__chain *chain, size_t next)
{
    (void)n;
    return sl__chain_eoe(chain, next);
}

static const seq_node_iface project_iface = {project_row, pass_eoe, no_destroy};

int sl__seq_node_needs_data(const sl__seq_node *node)
{
    /* a project moves columns, which an unread row does not have yet */
    return (node->iface == &batch_iface && !((const batch_node *)node)->group_only) ||
           node->iface == &project_iface;
}

int sl__seq_node_is_batch(const sl__seq_node *node)
{
    return node->iface == &batch_iface;
}

int sl__seq_node_rows_unread(sl__seq_node *node)
{
    shuffle_node *s = (shuffle_node *)node;
    unread_row *ubuf;
    if (node->iface != &shuffle_iface)
        return SL_OK;
    SL_ASSERT(s->n == 0);
    ubuf = malloc(s->cap * sizeof *ubuf);
    if (!ubuf)
        return SL_ENOMEM;
    free(s->buf);
    s->buf = NULL;
    s->ubuf = ubuf;
    return SL_OK;
}

void sl__seq_node_start_at(sl__seq_node *node, int64_t epoch)
{
    if (node->iface == &shuffle_iface) {
        shuffle_node *s = (shuffle_node *)node;
        s->epoch = epoch;
        shuffle_reseed(s);
    } else if (node->iface == &batch_iface) {
        ((batch_node *)node)->epoch = epoch;
    }
}

int sl__seq_node_counts_epochs(const sl__seq_node *node)
{
    return node->iface == &repeat_iface ||
           (node->iface == &take_iface && ((const counting_node *)node)->endless);
}

int sl__seq_node_new(sl__seq_node **out, const sl__node *d, uint64_t seed, size_t position,
                     const sl__schema *in_schema, int group_only,
                     struct sl__batch_lender *lender)
{
    *out = NULL;
    switch (d->kind) {
    case SL__NODE_SHUFFLE: {
        shuffle_node *s = calloc(1, sizeof *s);
        if (!s)
            return SL_ENOMEM;
        s->cap = (size_t)d->count;
        s->buf = malloc(s->cap * sizeof *s->buf);
        if (!s->buf) {
            free(s);
            return SL_ENOMEM;
        }
        s->base.iface = &shuffle_iface;
        s->seed = seed;
        s->position = position;
        shuffle_reseed(s);
        *out = &s->base;
        return SL_OK;
    }
    case SL__NODE_BATCH: {
        batch_node *b = calloc(1, sizeof *b);
        if (!b)
            return SL_ENOMEM;
        b->base.iface = &batch_iface;
        b->size = d->count;
        b->drop_remainder = d->drop_remainder;
        b->group_only = group_only;
        b->schema = *in_schema;
        b->work.schema = &b->schema;
        b->work.lender = lender;
        memcpy(b->pad, d->pad, sizeof b->pad);
        b->work.pad = d->padded ? b->pad : NULL;
        b->work.map = d->batch_map; /* the iterator's nodes hold it */
        *out = &b->base;
        return SL_OK;
    }
    case SL__NODE_REPEAT:
    case SL__NODE_TAKE:
    case SL__NODE_SKIP: {
        counting_node *c = calloc(1, sizeof *c);
        if (!c)
            return SL_ENOMEM;
        c->base.iface = d->kind == SL__NODE_REPEAT ? &repeat_iface
                        : d->kind == SL__NODE_TAKE ? &take_iface
                                                   : &skip_iface;
        c->count = d->count;
        c->endless = d->kind == SL__NODE_TAKE && d->endless_input && d->count >= 0;
        *out = &c->base;
        return SL_OK;
    }
    case SL__NODE_PROJECT: {
        project_node *p = calloc(1, sizeof *p);
        if (!p)
            return SL_ENOMEM;
        p->base.iface = &project_iface;
        p->ncols = (size_t)d->count;
        memcpy(p->pick, d->pick, sizeof p->pick);
        *out = &p->base;
        return SL_OK;
    }
    case SL__NODE_MAP:
    case SL__NODE_RENAME: /* names only: nothing runs */
        break;
    }
    return SL_EINVAL;
}
