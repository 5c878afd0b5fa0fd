/* bench_pipeline_run.h: what `sluice bench pipeline` measures, shared by
 * its running (bench_pipeline.c) and its report (bench_pipeline_report.c). */
#ifndef SLUICE_BENCH_PIPELINE_RUN_H
#define SLUICE_BENCH_PIPELINE_RUN_H

#include <stdint.h>

#include "sluice/sluice.h"
#include "bench_pipeline.h"
#include "cli_autotune.h"
#include "cli_stages.h"

/* One timed run: one fresh iterator, `epochs` full epochs. */
typedef struct run_result {
    double images_per_s;
    double first_batch_ms;   /* sl_iterator_new to the first row */
    int64_t batches;         /* rows handed out (batches when batching) */
    int64_t images;
    int threads;
    double wakeups_per_epoch; /* times the consumer was woken, per epoch */
    uint64_t skipped, replaced; /* bad samples (--error-samples) */
    sl_pool_stats pool;      /* the dataset's pool as the run ended (counts
                              * since the set's dataset was made) */
    sl_stage_stats stages[CLI_MAX_STAGES]; /* each stage's time, as the run ended */
    size_t nstages;
    cli_autotune tune;       /* what --autotune did in it */
    double tuned_images_per_s; /* --autotune: the rate after its last change was
                              * judged (0: it changed nothing) */
} run_result;

/* Every run of one worker count. */
typedef struct worker_set {
    int workers;
    double load_ms;          /* the warm-up's one-time source load */
    run_result *runs;        /* repeats of them */
} worker_set;

/* The report of the runs of sets (a->nworkers of them), of a pipeline of
 * kind ("mnist" or "image_folder") that describe describes; machine is
 * how much faster the largest worker count's independent work runs than
 * one (negative: not measured). As text, or one JSON object (--json). */
void cli_bench_pipeline_print_text(const cli_bench_pipeline_args *a, const char *kind,
                                   const char *describe, const worker_set *sets,
                                   double machine);
void cli_bench_pipeline_print_json(const cli_bench_pipeline_args *a, const char *kind,
                                   const char *describe, const worker_set *sets,
                                   double machine);

#endif
