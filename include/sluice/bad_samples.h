/* bad_samples.h: what a dataset's iterators do with a sample that cannot
 * be read or mapped (raise, skip, replace), the cap on how many may be bad,
 * and the report of each one. */
#ifndef SLUICE_BAD_SAMPLES_H
#define SLUICE_BAD_SAMPLES_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The dataset these calls apply to (dataset.h). */
typedef struct sl_dataset sl_dataset;

/* --- bad samples -----------------------------------------------------------
 * A bad sample is one whose read, or a map before any batch, fails with a
 * data error: a corrupt or cut JPEG, one over the decode limit or larger
 * than the whole decode budget, an image of the wrong shape for an op, a
 * file that cannot be read, a custom op's error (every status but
 * SL_ENOMEM, SL_ECLOSED, SL_ECANCELED, SL_ETHREAD, SL_ETIMEDOUT and
 * SL_ESTATE, which always fail the pipeline, as do errors in batching and
 * in maps after a batch). What happens to one:
 *
 * - SL_ERROR_SAMPLES_RAISE (default): the pipeline fails with its error,
 *   after the rows before it.
 * - SL_ERROR_SAMPLES_REPLACE: a stand-in takes its place (see below).
 * - SL_ERROR_SAMPLES_SKIP: it is dropped and the samples after it move up;
 *   at the end of the epoch (before the end-of-epoch marker, where the map
 *   hands rows on) the stand-ins of the epoch's dropped samples follow, in
 *   the order they were dropped. An epoch thus keeps its length: every
 *   shard yields as many rows, and batches, as an all-good shard would, so
 *   data-parallel ranks never wait on each other, and
 *   sl_dataset_get_dataset_size stays exact. (Behind an endless repeat
 *   before the map no epoch ends there: dropped samples are then only
 *   dropped.) The batch is then formed after the map rather than grouped
 *   before it, and a map that is last gets a sequential stage after it.
 *   An iterator started mid-epoch (sl_iterator_options.start_rows) hands
 *   out what one started at the beginning did from there on; under skip
 *   it reads and maps the rows it skips (they are dropped after the map),
 *   so it reports their bad samples again.
 *
 * Stand-ins are chosen the same way in both modes, and only from (the
 * dataset's seed, the pass over the source, the bad sample's index): so the
 * output is the same whatever the worker counts. For bad sample i of pass
 * e, a generator seeded with (seed, e, i) draws positions of pass e's order
 * of this shard's samples (the sampler's: shuffle, shard, num_samples); the
 * first drawn sample other than i that reads and maps without error stands
 * in (it also runs through every map before the batch, with its own random
 * draws). After SL_ERROR_SAMPLES_TRIES failed draws the pipeline fails,
 * naming the bad sample and the last one tried: an epoch of bad samples is
 * an error, not a hang.
 *
 * Each skipped or replaced sample is reported once, in sample order: the
 * iterator counts it (sl_iterator_stats) and calls `report`, when set, from
 * the thread calling sl_iterator_next (for sl_model_train in sink mode, the
 * transfer thread). Stand-ins are not reported; a stand-in that fails is
 * reported where it comes in the epoch on its own.
 *
 * A cap turns a flood into an error: when more samples of one pass over the
 * source are bad than max_bad_samples (>= 0), or, when that is -1, than
 * max_bad_fraction x the shard's samples per pass, rounded up, the
 * iterator fails with the last bad sample's status and a message naming
 * the count, the cap and that sample. (Passes are counted by the pass that
 * read each sample; once one from a newer pass is reported, the count starts
 * again.) The default, 1%, lets a few broken files in a large set through
 * but stops a folder that is mostly unreadable (the wrong folder, a bad
 * mount) within its first hundreds of samples; 1.0 is no cap. */
#define SL_ERROR_SAMPLES_TRIES 16

typedef enum sl_error_samples {
    SL_ERROR_SAMPLES_RAISE = 0,
    SL_ERROR_SAMPLES_SKIP,
    SL_ERROR_SAMPLES_REPLACE
} sl_error_samples;

/* One skipped or replaced sample, as reported. The strings live until the
 * report returns. */
typedef struct sl_bad_sample {
    int64_t index;       /* the sample's index in the source */
    int64_t epoch;       /* the pass over the source that read it (from 0) */
    int64_t stand_in;    /* replace: the index of the sample in its place; skip: -1 */
    int status;          /* the error */
    int replaced;        /* 1: replaced, 0: skipped */
    const char *sample;  /* its file (ImageFolder), or file and sample (MNIST) */
    const char *reason;  /* the error's message */
    uint64_t count;      /* samples skipped or replaced by this iterator, this one included */
} sl_bad_sample;

typedef void (*sl_bad_sample_fn)(void *user, const sl_bad_sample *bad);

/* Versioned like the others: call sl_error_samples_options_init first. */
typedef struct sl_error_samples_options {
    size_t size;               /* sizeof the struct as compiled; set by the _init */
    sl_error_samples mode;     /* default SL_ERROR_SAMPLES_RAISE */
    int32_t unused0;           /* keeps max_bad_samples 8-aligned; must stay 0 */
    int64_t max_bad_samples;   /* per pass; -1 (default): max_bad_fraction applies */
    double max_bad_fraction;   /* per pass, of the shard's samples, in [0, 1] (default 0.01) */
    sl_bad_sample_fn report;   /* called for each bad sample (default NULL) */
    void *report_user;         /* its first argument */
} sl_error_samples_options;

SL_API void sl_error_samples_options_init_sized(sl_error_samples_options *o, size_t size);
static inline void sl_error_samples_options_init(sl_error_samples_options *o)
{
    sl_error_samples_options_init_sized(o, sizeof *o);
}
/* What iterators made from ds from now on do with bad samples (o NULL: the
 * defaults, raise). Copied by sl_dataset_copy. SL_EINVAL, with the message
 * in sl_dataset_last_error, for options not made by the _init, an unknown
 * mode, max_bad_samples < -1 or max_bad_fraction outside [0, 1]. */
SL_API int sl_dataset_set_error_samples(sl_dataset *ds, const sl_error_samples_options *o);

#ifdef __cplusplus
}
#endif
#endif
