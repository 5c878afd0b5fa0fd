/* batch_lender.h: memory a consumer of the pipeline lends it for batches,
 * so that a batch is stacked where the consumer wants it and reaches it
 * without a copy (a device queue's slots, on a device that reads host
 * memory). The pipeline knows nothing of devices: it asks for memory per
 * batch, and uses pool memory whenever none is lent. */
#ifndef SLUICE_PIPELINE_BATCH_LENDER_H
#define SLUICE_PIPELINE_BATCH_LENDER_H

#include <stddef.h>

#include "core/tensor_impl.h"
#include "pipeline/consumer_team.h"
#include "sluice/iterator.h"

typedef struct sl__batch_lender {
    /* Memory for one batch of a row with ncols columns: sets data[c] (of
     * bytes[c]) for each column c it lends, leaves the others NULL, and
     * returns the lender of all of it, or NULL when it has none free now.
     * Never blocks. Each lent column is given back once (lender->give_back),
     * by the tensor made over it (sl__tensor_lent) or at once if unused. */
    sl__lender *(*lend)(struct sl__batch_lender *b, size_t ncols, void **data, size_t *bytes);
} sl__batch_lender;

/* sl_iterator_new, with the batches of the pipeline's batch stages stacked
 * into memory from lender when it has some, and its last stage run on the
 * consumer's team when it can be (consumer_team.h). Either may be NULL;
 * both must outlive the iterator. */
int sl__iterator_new_lending(sl_iterator **out, sl_dataset *ds, const sl_iterator_options *opts,
                             sl__batch_lender *lender, const sl__consumer_team *team);

#endif
