/* combine.h: datasets made of other datasets, as MindSpore's concat (and
 * `+`) and zip. Each part runs as a whole pipeline of its own (its source,
 * maps, shuffles, batches): an iterator of the combined dataset makes one
 * iterator per part, whose threads run beside its own, and takes their
 * rows in turn. Nodes appended afterwards (shuffle, batch, map, ...) run on
 * the joined stream. Every epoch of the combined dataset restarts every
 * part (each part's own epoch).
 *
 * The parts are copied when combined: nodes appended to them later do not
 * change the combined dataset. Their seeds stay theirs. A part must have
 * an end (no repeat(-1) without a take after it). */
#ifndef SLUICE_COMBINE_H
#define SLUICE_COMBINE_H

#include <stddef.h>

#include "sluice/dataset.h"
#include "sluice/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Makes ds the rows of ds as it was, then those of others[0], others[1],
 * ... in order, every epoch. All must have the same column names in the
 * same order and, column by column, the same dtype and number of
 * dimensions (sizes may differ: the combined spec says -1 there). Its size
 * is the sum of theirs. On failure (message naming the part and column)
 * ds is unchanged. */
SL_API int sl_dataset_concat(sl_dataset *ds, const sl_dataset *const *others, size_t n);
/* Makes ds the rows of ds as it was and of others[0], ... side by side:
 * row i has their columns, in that order. An epoch ends with the shortest
 * part's (the others' rows left in that epoch are never read: each starts
 * its next epoch afresh). Column names
 * must all differ, and together be at most SL_MAX_COLUMNS. Its size is the
 * smallest of theirs. On failure ds is unchanged. */
SL_API int sl_dataset_zip(sl_dataset *ds, const sl_dataset *const *others, size_t n);

#ifdef __cplusplus
}
#endif
#endif
