/* subset.h: a source made of some samples of another (sl_dataset_split's
 * parts): reads go to the parent through an index list, the sampler
 * applies to the part's samples alone. */
#ifndef SLUICE_PIPELINE_SUBSET_H
#define SLUICE_PIPELINE_SUBSET_H

#include "pipeline/source.h"

/* A source of n samples, sample i being parent's indices[i] (copied),
 * sampled by sampler (checked against n). Takes its own reference to
 * parent. *out is NULL on failure. */
int sl__subset_source_new(sl__source **out, sl__source *parent, const int64_t *indices,
                          int64_t n, const sl_sampler_options *sampler, sl__error *err);

#endif
