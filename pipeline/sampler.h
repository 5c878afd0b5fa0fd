/* sampler.h: which source indices one epoch visits, and in what order:
 * optional shuffle (a new permutation per epoch from seed and epoch), then
 * the shard's share, then at most num_samples. Shards take every
 * num_shards-th position of the (shuffled) order starting at shard_id, and
 * wrap around to the start to even their sizes, as MindSpore's
 * DistributedSampler does; together they cover every sample. */
#ifndef SLUICE_PIPELINE_SAMPLER_H
#define SLUICE_PIPELINE_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/dataset.h"
#include "core/error.h"

/* Checks the options against a source of num_rows samples; the message
 * names what is wrong. */
int sl__sampler_check(const sl_sampler_options *o, int64_t num_rows, sl__error *err);
/* Reads a source's options struct as sl__options_read does (core/options.h)
 * and checks the sampler embedded at sampler_offset: the sources' options
 * all end in one. name is the struct's type ("sl_slices_options"). */
int sl__source_options_read(void *dst, size_t dst_size, size_t v1_size, const void *src,
                            const char *name, size_t sampler_offset, sl__error *err);
/* Samples per epoch for this shard. */
int64_t sl__sampler_size(const sl_sampler_options *o, int64_t num_rows);
/* Fills order[0 .. sl__sampler_size()) for the given epoch. */
int sl__sampler_order(const sl_sampler_options *o, int64_t num_rows, int64_t epoch,
                      int64_t *order);

#endif
