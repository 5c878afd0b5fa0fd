/* bench_pipeline.h: the command line of `sluice bench pipeline`, parsed
 * apart from running it: the settings the options give, and the pipeline
 * they describe. Parsing reads no file and starts nothing, so it can be
 * driven on its own (tests/fuzz/fuzz_cli_options.c does). */
#ifndef SLUICE_BENCH_PIPELINE_H
#define SLUICE_BENCH_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"

#define CLI_BENCH_PIPELINE_MAX_WORKER_SETS 16

typedef struct cli_bench_pipeline_args {
    const char *data;
    int usage_given;
    sl_mnist_usage usage;
    int64_t workers[CLI_BENCH_PIPELINE_MAX_WORKER_SETS];
    size_t nworkers;
    int64_t repeats;
    int64_t epochs;
    int64_t seed;
    int json;
    int64_t queue_capacity; /* --queue-capacity: chunks per queue (0: the library's) */
    int autotune;          /* --autotune */
    const char *profile;   /* --profile DIR */
    sl_profiler *profiler; /* the last run (last round, last worker count) records here */
    /* Pipeline overrides; the *_given flags say which defaults to replace. */
    int ops_given;       /* any op option: the command line's ops replace the defaults */
    const char *preset;  /* --preset: imagenet-train or imagenet-eval (NULL: none) */
    int decode_fusion;    /* --decode-fusion: SL_DECODE_FUSION_* - 1 (0: crop) */
    int label_int32;
    cli_step steps[CLI_MAX_STEPS];
    size_t nsteps;
    int shuffle_given;
    int64_t shuffle;
    int batch_given;
    int64_t batch;
    int keep_remainder;
    int no_source_shuffle;
    int64_t num_samples;
    int64_t decode_max_pixels; /* 0: the library's default */
    cli_error_samples errors;
    int64_t pool_idle_mb; /* -1: the library's default */
} cli_bench_pipeline_args;

/* Parses argv (argv[0] is "pipeline") into a: CLI_EXIT_OK, CLI_EXIT_USAGE
 * after printing what is wrong, or -1 after printing --help to stdout.
 * a's strings point into argv. */
int cli_bench_pipeline_parse(int argc, char **argv, cli_bench_pipeline_args *a);
/* The pipeline a describes for a dataset of kind: the kind's default, then
 * the command line's changes. p->dir is a->data. */
void cli_bench_pipeline_make(const cli_bench_pipeline_args *a, cli_kind kind, cli_pipeline *p);
/* The largest worker count a asks for (at least 1). */
int cli_bench_pipeline_max_workers(const cli_bench_pipeline_args *a);

#endif
