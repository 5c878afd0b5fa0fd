/* dataset_impl.h: what a dataset description holds: its source, the nodes
 * appended after it, the seed, and the columns at the end of the chain
 * (names and specs, kept up to date as nodes are appended, so bad pipelines
 * are refused when described rather than when run). */
#ifndef SLUICE_PIPELINE_DATASET_IMPL_H
#define SLUICE_PIPELINE_DATASET_IMPL_H

#include "sluice/dataset.h"
#include "core/error.h"
#include "core/pool.h"
#include "pipeline/source.h"

typedef enum sl__node_kind {
    SL__NODE_MAP = 0,
    SL__NODE_SHUFFLE,
    SL__NODE_BATCH,
    SL__NODE_REPEAT,
    SL__NODE_TAKE,
    SL__NODE_SKIP,
    SL__NODE_PROJECT,
    SL__NODE_RENAME
} sl__node_kind;

/* How a padded batch stacks one column (sl_dataset_batch_padded). */
typedef struct sl__pad_col {
    int on;                     /* 0: rows must agree in shape (a plain batch) */
    int ndim;                   /* -1: every dimension to the batch's largest */
    int64_t shape[SL_MAX_DIMS]; /* the row shape to pad to; -1: the batch's largest */
    double value;               /* what the padding holds */
} sl__pad_col;

typedef struct sl__node {
    sl__node_kind kind;
    int workers;        /* map, batch */
    int64_t count;      /* shuffle buffer, batch size, repeat count, take/skip n */
    int drop_remainder; /* batch */
    sl_op **ops;        /* map: nops references */
    size_t nops;
    int column;         /* map: the column it transforms */
    char colname[SL_COLUMN_NAME_LEN]; /* map: that column's name then */
    char outname[SL_COLUMN_NAME_LEN]; /* map: its name after the map */
    int after_batch;    /* a batch node comes earlier in the chain */
    int endless_input;  /* take: an endless repeat comes earlier, with no
                         * take in between, so no end of epoch ever arrives */
    /* project: output column c is input column pick[c] (count columns);
     * project, rename: the names of the columns after the node */
    int pick[SL_MAX_COLUMNS];
    char names[SL_MAX_COLUMNS][SL_COLUMN_NAME_LEN];
    struct sl__batch_map *batch_map; /* batch: a per-batch function, one reference
                                      * (batch_map.h), or NULL */
    int padded;         /* batch: pad[] applies (by column index) */
    sl__pad_col pad[SL_MAX_COLUMNS];
    size_t position;    /* index in the chain as described: seeds random draws,
                         * so they survive the iterator's reordering */
} sl__node;

/* The columns at some point of the chain. */
typedef struct sl__schema {
    size_t ncols;
    char names[SL_MAX_COLUMNS][SL_COLUMN_NAME_LEN];
    sl_tensor_spec specs[SL_MAX_COLUMNS];
} sl__schema;

struct sl_dataset {
    sl__source *source; /* NULL until a source is set */
    sl__node *nodes;
    size_t nnodes, cap;
    uint64_t seed;
    uint64_t decode_budget; /* sl_dataset_set_decode_budget; 0: automatic */
    int decode_fusion;      /* SL_DECODE_FUSION_* (sl_dataset_set_decode_fusion) */
    sl_error_samples_options error_samples; /* sl_dataset_set_error_samples */
    sl_pool *pool;      /* buffers for the rows of every iterator made from it:
                         * a new iterator starts with warm, recycled memory */
    sl__schema schema;  /* columns after the last node */
    sl__error error;
};

/* pool's counters as the public struct (for the dataset's and the
 * iterator's stats). */
void sl__pool_stats_public(const sl_pool *pool, sl_pool_stats *out);

/* Appends node (its position set) after checking that ds has a source
 * (what names the call in the message). */
int sl__dataset_append(sl_dataset *ds, const char *what, const sl__node *node);
/* Makes src (whose reference moves in) ds's source, dropping its nodes. */
void sl__dataset_set_source(sl_dataset *ds, sl__source *src);
/* "project(a, b)" or "rename(a -> x)" for describe (columns.c). */
size_t sl__describe_columns(const sl__node *node, char *buf, size_t len);
/* Sets src as ds's source in place of the one it has (taking over the
 * caller's reference), keeping ds's nodes: src must yield the same
 * columns (a split's part of it). */
void sl__dataset_replace_source(sl_dataset *ds, sl__source *src);

/* Copies nodes[0..n) with their own op references (for an iterator). */
int sl__nodes_copy(sl__node **out, const sl__node *nodes, size_t n);
void sl__nodes_free(sl__node *nodes, size_t n);

#endif
