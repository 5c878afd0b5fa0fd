/* bench.h: timing helpers for benchmarks, not for training. They run real
 * steps of a model (so they change it) only to measure how fast its step
 * computes, or how it computes when nothing runs beside it; the CLI's
 * bench commands use them. The batches they hand a step stay where the
 * pipeline or sl_bench_batches_new left them (host memory): no host<->
 * device interaction and no copy to the device is counted. */
#ifndef SLUICE_BENCH_H
#define SLUICE_BENCH_H

#include <stdint.h>

#include "sluice/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_model sl_model;
typedef struct sl_dataset sl_dataset;
/* Real batches kept in memory for compute-only timing. */
typedef struct sl_bench_batches sl_bench_batches;

/* Compute-only timing on one made-up batch: runs the training step `steps`
 * times on one batch (the model's shapes, fixed values) and returns samples
 * per second. These are real training steps: they change the parameters
 * and count in the global step. The model memorises that one batch, so its
 * loss and many parameters go towards zero (subnormal floats, slow on some
 * CPUs): prefer sl_model_bench_steps_on with real batches. */
SL_API int sl_model_bench_steps(sl_model *m, int64_t steps, double *samples_per_s);

/* Reads the first batches of ds (one epoch at most, at most max_batches,
 * and at most 256 MiB of them) and keeps copies of the columns m's
 * training step reads, in memory the result owns (free it with
 * sl_bench_batches_free). Any model of the same network and batch can then
 * step over them: make them once, before timing. On failure *out is NULL
 * and the message is in sl_model_last_error(m). */
SL_API int sl_bench_batches_new(sl_bench_batches **out, sl_model *m, sl_dataset *ds,
                                int64_t max_batches);
/* How many batches b holds (>= 1). */
SL_API int64_t sl_bench_batches_count(const sl_bench_batches *b);
SL_API void sl_bench_batches_free(sl_bench_batches *b);

/* Compute-only timing on real data: runs the training step `steps` times
 * over b's batches in turn (the first again after the last) and returns
 * samples per second. Real training steps, as above. */
SL_API int sl_model_bench_steps_on(sl_model *m, const sl_bench_batches *b, int64_t steps,
                                   double *samples_per_s);

/* The host's hand-over of one step to the device's executor thread and
 * back, which a non-sink step pays beside the device's own launch and
 * result: over about `steps` steps of b's batches (at least 20), in pairs
 * of blocks of 10 steps, one block with each step posted to the executor's
 * thread and waited for, the other run there as one job (as a sink runs
 * them), the order alternating pair by pair; both compute on the same
 * cores. *ms is the median over pairs of the posted block's extra time per
 * extra hand-over. On a device without cores of its own both blocks run
 * on the calling thread, and *ms is about 0. Real training steps, as
 * above. */
SL_API int sl_model_bench_handover(sl_model *m, const sl_bench_batches *b, int64_t steps,
                                   double *ms);

/* The serial reference of `sluice bench sink`: `steps` training steps on
 * ds's batches, in the dataset's order, in which the pipeline never runs
 * beside a step. It works in chunks (an epoch, or fewer batches when an
 * epoch is over 256 MiB): an iterator started where the last chunk ended
 * delivers the chunk's batches, which are kept, and is freed (which joins
 * every pipeline thread) before the first of them is stepped; then each
 * batch is stepped as sl_model_bench_steps_on steps its own. Its time is
 * the pipeline's plus the steps', with no overlap by construction, so an
 * overlap measure must find none in it. */
SL_API int sl_model_bench_serial(sl_model *m, sl_dataset *ds, int64_t steps);

#ifdef __cplusplus
}
#endif
#endif
