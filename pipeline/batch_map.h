/* batch_map.h: a per-batch function (sl_dataset_batch_map, MindSpore's
 * per_batch_map) as the batch node holds it: the caller's function, the
 * columns it reads, and the row it makes. Reference counted, since the
 * dataset's nodes and every iterator's copy of them share it. */
#ifndef SLUICE_PIPELINE_BATCH_MAP_H
#define SLUICE_PIPELINE_BATCH_MAP_H

#include <stdatomic.h>

#include "pipeline/dataset_impl.h"
#include "pipeline/row.h"

typedef struct sl__batch_map {
    atomic_int refs;
    sl_batch_map_fn fn;
    void (*destroy)(void *user);
    void *user;
    size_t nin, nout;
    int in_cols[SL_MAX_COLUMNS]; /* (nin,) columns of the arriving rows it reads */
    /* Column j of a row it makes: arriving column from[j] (>= 0), or its
     * output -from[j] - 1. */
    int from[SL_MAX_COLUMNS];
    sl__schema in_schema;        /* the arriving rows' columns (names for messages) */
    sl__schema out_schema;       /* the rows it makes, before stacking */
} sl__batch_map;

void sl__batch_map_retain(sl__batch_map *m);
void sl__batch_map_release(sl__batch_map *m);

/* Runs m on group's rows and puts the rows it makes into *out (a new
 * chunk, group's place and epoch; group is left as it was). On failure
 * err names the batch and carries the function's message. */
int sl__batch_map_run(const sl__batch_map *m, const sl__chunk *group, sl__chunk **out,
                      sl__error *err);

#endif
