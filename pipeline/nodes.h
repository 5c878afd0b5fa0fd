/* nodes.h: the running forms of pipeline nodes, used by the iterator's
 * stage threads.
 * - An output builder (sl__out) packs rows into chunks and pushes them to a
 *   stage's queue.
 * - Sequential nodes (shuffle, batch, repeat, take, skip) form a chain run
 *   by one thread: each node takes a row or an end-of-epoch and passes what
 *   it makes to the next node, the last one to the output builder.
 * - Parallel work (map, batch collation) is a function from chunk to chunk
 *   that several workers apply, each to its own chunk (map.c). */
#ifndef SLUICE_PIPELINE_NODES_H
#define SLUICE_PIPELINE_NODES_H

#include <stdatomic.h>

#include "core/byte_budget.h"
#include "core/pool.h"
#include "core/queue.h"
#include "pipeline/dataset_impl.h"
#include "pipeline/row.h"

struct sl__batch_lender; /* pipeline/batch_lender.h */

/* --- output builder ------------------------------------------------------ */
typedef struct sl__out {
    sl_queue *queue;
    sl__chunk *cur;     /* rows not pushed yet */
    size_t chunk_rows;  /* push when this many rows ... */
    size_t chunk_bytes; /* ... or this many data bytes are waiting */
    /* Set for a producer that also consumes the queue (workers running
     * the source): a full queue must not block it, so chunks wait here,
     * in order, until sl__out_drain finds room. */
    int nonblocking;
    sl__chunk *pending, *pending_tail;
    atomic_ullong *rows; /* when set, counts the rows sent (stage reports) */
} sl__out;

/* Moves row into the builder; pushes a full chunk. SL_ECLOSED when the
 * queue was closed (shutdown), SL_ENOMEM. */
int sl__out_row(sl__out *out, sl__row *row);
/* Pushes the rows waiting, if any (or the bad-sample records alone). */
int sl__out_flush(sl__out *out);
/* Adds bad-sample records (a list; ownership moves, freed on failure) to
 * the rows waiting: they go with them, or alone at the next flush.
 * SL_ENOMEM. */
int sl__out_bad(sl__out *out, sl__bad_record *records);
/* Flushes, then pushes a marker chunk of kind (EOE, EOF). */
int sl__out_marker(sl__out *out, sl__chunk_kind kind);
/* Flushes, then pushes chunk as it is (ownership moves; freed on failure). */
int sl__out_chunk(sl__out *out, sl__chunk *chunk);
/* Pushes the chunks waiting in a nonblocking builder while there is room.
 * SL_OK (some may still wait) or SL_ECLOSED. */
int sl__out_drain(sl__out *out);
/* Frees rows and chunks that were never pushed. */
void sl__out_discard(sl__out *out);

/* --- sequential chain ---------------------------------------------------- */
typedef struct sl__seq_node sl__seq_node;
typedef struct sl__chain sl__chain;

struct sl__chain {
    sl__seq_node **nodes;
    size_t nnodes;
    sl__out *out;
    sl_pool *pool;
    sl__error *err;
    /* Units (rows, or batch groups from a grouping batch) still to drop at
     * the chain's end before the next end of epoch: an iterator started
     * mid-epoch skips them there, unread when the source is lazy. NULL:
     * none. Lives in the stage, since a pulled source makes a new chain
     * each turn. */
    int64_t *skip;
};

/* Hands row to node pos of the chain (or to the output past the last).
 * The row's tensors move with it: the caller must not release them. */
int sl__chain_row(sl__chain *chain, size_t pos, sl__row *row);
/* Hands an end of epoch to node pos (or pushes the marker past the last). */
int sl__chain_eoe(sl__chain *chain, size_t pos);

/* The running node for node description d (shuffle, batch, repeat, take,
 * skip). seed and position fix random draws; names are the columns
 * arriving at it (for messages). When group_only is set, a batch node emits
 * each batch's rows as one chunk for parallel collation instead of
 * collating them itself (it must then be the chain's last node); else it
 * stacks them into memory from lender where it lends some (may be NULL). */
int sl__seq_node_new(sl__seq_node **out, const sl__node *d, uint64_t seed, size_t position,
                     const sl__schema *in_schema, int group_only,
                     struct sl__batch_lender *lender);
void sl__seq_node_free(sl__seq_node *node);
/* Makes the node behave as if `epoch` epochs had gone through it (shuffle:
 * that epoch's draws; batch: its epoch number). Before any row arrives. */
void sl__seq_node_start_at(sl__seq_node *node, int64_t epoch);
/* True for nodes whose idea of an epoch differs from the iterator's
 * (repeat; take after an endless repeat), which a start mid-run cannot
 * place. */
int sl__seq_node_counts_epochs(const sl__seq_node *node);
/* True if the node looks into rows' tensors (a batch that stacks them);
 * false if it only reorders, drops or groups rows, which then may still be
 * unread (columns NULL, index set). */
int sl__seq_node_needs_data(const sl__seq_node *node);
/* True for a batch node (collating or grouping). */
int sl__seq_node_is_batch(const sl__seq_node *node);
/* Tells a node, before any row arrives, that its rows will all be unread
 * (so a shuffle keeps indices only). SL_ENOMEM on failure. */
int sl__seq_node_rows_unread(sl__seq_node *node);

/* --- parallel work --------------------------------------------------------- */
/* Map: the fused steps of consecutive map nodes. */
typedef struct sl__map_step {
    const sl__node *node; /* ops and column; owned by the iterator */
    uint64_t salt;        /* position of the node, so random ops differ */
    /* The node's ops as they run, where a run of ops that fuse is one op
     * (sl__op_fuse): nops references, and for each the last word of the
     * seed of its random op (the node's salt * 64 + the op's index in
     * node->ops, as if it ran alone). Owned. */
    sl_op **ops;          /* (nops,) */
    uint64_t *rng_salt;   /* (nops,) */
    size_t nops;
    /* node->ops before this index were fused into the step before (a
     * Decode there fused with the crop or resize that begins this node). */
    size_t skip;
} sl__map_step;

/* Fills step->ops and step->rng_salt from step->node (after step->skip).
 * When next (the following step of the same stage, or NULL) maps the same
 * column and this node ends with a Decode, the Decode fuses with the
 * geometry at the start of next's node (sl__op_fuse_decode) and next->skip
 * says how many of its ops it took: so plan the steps in order (a Decode
 * fuses with nothing when fuse_decode is 0). SL_ENOMEM,
 * or SL_OK; sl__map_step_clear frees them either way. */
int sl__map_step_plan(sl__map_step *step, sl__map_step *next, int fuse_decode);
void sl__map_step_clear(sl__map_step *step);

typedef struct sl__map_work {
    sl__map_step *steps;
    size_t nsteps;
    uint64_t seed;
    const sl__source *source; /* to name samples in messages */
    const sl__schema *schema; /* columns at the map (names for messages) */
    sl__byte_budget *budget;  /* the iterator's decode budget, or NULL */
} sl__map_work;

/* A batch whose tensors are made as soon as its first row is mapped, for a
 * stage that maps and batches (no per-batch map): the map's last op on a
 * column then makes each later row's output in that row's slot of the
 * batch (sl__op_output), and stacking copies only the rows that are not
 * there already. Values and messages are those of mapping then stacking. */
typedef struct sl__batch_slots {
    const struct sl__collate_work *collate; /* the batch's; NULL: no slots */
    int lent_asked;                   /* the lender was asked for this batch */
    struct sl__lender *loan;          /* what it lent, or NULL */
    void *lent[SL_MAX_COLUMNS];       /* lent memory not stacked into yet */
    size_t lent_bytes[SL_MAX_COLUMNS];
    sl_tensor *col[SL_MAX_COLUMNS];   /* (n, ...) made before stacking, or NULL */
} sl__batch_slots;

/* No tensors yet; with collate NULL the slots stay unused. */
void sl__batch_slots_init(sl__batch_slots *s, const struct sl__collate_work *collate);
/* Releases the tensors not stacked and gives back unused lent memory. */
void sl__batch_slots_clear(sl__batch_slots *s);

/* Applies the steps to every row of chunk. Checks *stop between rows.
 * Gives back the decode budget a row's ops took once the row is done. On
 * failure err names the op, the column and the sample, and the chunk keeps
 * only the rows before the failing one (all steps applied), which are to
 * be delivered ahead of the error. */
int sl__map_apply(const sl__map_work *w, sl__chunk *chunk, sl_pool *pool,
                  const atomic_int *stop, sl__batch_slots *slots, sl__error *err);
/* Applies the steps to one row (a bad sample's stand-in, or a row mapped
 * alone so that a failing one can be dealt with). On failure err names the
 * op and the column, not the sample (the caller does), and the row's
 * transformed column is released (NULL). */
int sl__map_apply_row(const sl__map_work *w, sl__row *row, sl_pool *pool, sl__error *err);

typedef struct sl__collate_work {
    const sl__schema *schema;         /* columns of the rows being batched */
    struct sl__batch_lender *lender;  /* memory to stack into, or NULL: the pool's */
    const sl__pad_col *pad;           /* (schema->ncols,) of a padded batch, or NULL */
    const struct sl__batch_map *map;  /* run on the rows first (its out_schema is then
                                       * the rows'), or NULL */
} sl__collate_work;

/* Stacks the rows of group into one row of (n, ...) tensors, in memory
 * the lender lends where it lends some of the right size, or into the
 * tensors of slots (NULL: none), whose lent memory it uses or gives back. */
int sl__collate(const sl__collate_work *w, const sl__chunk *group, sl__batch_slots *slots,
                sl__row *out, sl_pool *pool, sl__error *err);
/* Column c of group's rows padded as pad says into one (n, ...) tensor
 * (pad.c); SL_ESHAPE naming the batch, row, column and sizes when a row
 * does not fit or the rows differ in dtype or dimensions. */
int sl__collate_padded(const sl__chunk *group, size_t c, const sl__pad_col *pad,
                       const char *name, sl_tensor **out, sl_pool *pool, sl__error *err);

#endif
