/* bench.h: timing helpers for benchmarks, not for training. They run real
 * steps of a model (so they change it) only to measure how fast its step
 * computes; the CLI's bench commands use them. */
#ifndef SLUICE_BENCH_H
#define SLUICE_BENCH_H

#include <stdint.h>

#include "sluice/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_model sl_model;

/* Compute-only timing: runs the training step `steps` times on one batch
 * (the model's shapes, fixed values) and returns samples per second. These
 * are real training steps: they change the parameters and count in the
 * global step. */
SL_API int sl_model_bench_steps(sl_model *m, int64_t steps, double *samples_per_s);

#ifdef __cplusplus
}
#endif
#endif
