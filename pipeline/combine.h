/* combine.h: running a concat or zip (include/sluice/combine.h). The
 * combined dataset's source holds copies of its parts; each iterator of it
 * opens a run, which makes one iterator per part (their threads run beside
 * the iterator's own), and its source stage takes rows from the run
 * instead of reading samples by index. Private to pipeline/. */
#ifndef SLUICE_PIPELINE_COMBINE_H
#define SLUICE_PIPELINE_COMBINE_H

#include "sluice/iterator.h"
#include "core/error.h"
#include "pipeline/row.h"
#include "pipeline/source.h"

typedef struct sl__combine_run sl__combine_run;

/* 1 when src is a concat's or a zip's. */
int sl__source_is_combined(const sl__source *src);
/* Starts an iterator for every part of src: passes epochs of each (-1:
 * without end), from start_epoch, with opts' queue and chunk sizes. *out
 * is NULL on failure, with the message (naming the part) in err. */
int sl__combine_open(sl__combine_run **out, sl__source *src, const sl_iterator_options *opts,
                     int64_t passes, int64_t start_epoch, sl__error *err);
/* The next row of the current pass into row (index and epoch left to the
 * caller): SL_OK, SL_END_OF_EPOCH at the end of the pass, SL_ECLOSED once
 * interrupted, or a part's error, named in err. One thread at a time. */
int sl__combine_next(sl__combine_run *run, sl__row *row, sl__error *err);
/* Wakes a sl__combine_next blocked in a part (any thread): it returns
 * SL_ECLOSED, as every later call does. */
void sl__combine_interrupt(sl__combine_run *run);
/* Threads the parts' pipelines run (fixed once open). */
int sl__combine_threads(const sl__combine_run *run);
/* Stops and joins every part's threads and frees the run. NULL is ignored. */
void sl__combine_close(sl__combine_run *run);

#endif
