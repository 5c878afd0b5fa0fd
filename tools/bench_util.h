/* bench_util.h: what `sluice bench train`, `sink` and `eval` (and
 * `pipeline`'s tables) share: the end of their option parsing, making
 * their model, the warning on OpenBLAS's core, and the median of their
 * timed runs. */
#ifndef SLUICE_TOOLS_BENCH_UTIL_H
#define SLUICE_TOOLS_BENCH_UTIL_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "sluice/sluice.h"

/* --repeats at most, so that a run's figures fit in arrays on the stack. */
#define CLI_BENCH_MAX_REPEATS 100

/* The checks after a bench command's getopt loop: CLI_EXIT_USAGE when an
 * option's value was bad (`bad`, already reported) or an argument is left
 * over (reported as cmd's error), else CLI_EXIT_OK with *workers, when 0
 * (not given), set to the default for `threads` compute threads. */
int cli_bench_args_end(const char *cmd, int bad, int argc, char **argv, int64_t threads,
                       int64_t *workers);

/* sl_model_new with o, its failure reported as cmd's error; the model, for
 * the caller to free, or NULL. */
sl_model *cli_bench_model_new(const char *cmd, const sl_model_options *o);

/* Warns on stderr when OpenBLAS chose a core below the vector path of
 * this CPU (sl_blas_core_advice), naming the OPENBLAS_CORETYPE to set. */
void cli_blas_warn(void);

/* Sorts v[0..n-1] (n >= 1) and returns its median (the mean of the middle
 * two when n is even). */
double cli_bench_median(double *v, size_t n);
/* The median of v[0..n-1] (1 <= n <= CLI_BENCH_MAX_REPEATS), v left as it is. */
double cli_bench_median_of(const double *v, size_t n);
/* v[0..n-1] as a JSON array of numbers with one decimal (a bench's runs). */
void cli_bench_json_runs(FILE *f, const double *v, size_t n);

#endif
