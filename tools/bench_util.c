/* bench_util.c: see bench_util.h. */
#include "bench_util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_bench_args_end(const char *cmd, int bad, int argc, char **argv, int64_t threads,
                       int64_t *workers)
{
    if (bad)
        return CLI_EXIT_USAGE;
    if (optind < argc) {
        cli_error(cmd, "unexpected argument '%s' (see --help)", argv[optind]);
        return CLI_EXIT_USAGE;
    }
    if (*workers == 0)
        *workers = cli_training_workers((int)threads);
    return CLI_EXIT_OK;
}

sl_model *cli_bench_model_new(const char *cmd, const sl_model_options *o)
{
    sl_model *m = NULL;
    char err[512];
    int rc = sl_model_new(&m, o, err, sizeof err);
    if (rc < 0) {
        cli_error(cmd, "%s", cli_lib_message(err, rc));
        return NULL;
    }
    return m;
}

void cli_blas_warn(void)
{
    const char *advice = sl_blas_core_advice(), *set = getenv("OPENBLAS_CORETYPE");
    if (!advice)
        return;
    fprintf(stderr,
            "sluice: warning: OpenBLAS chose its %s core, below this CPU's %s path: its\n"
            "  sgemm (and every figure read against it) runs at a fraction of the machine's\n"
            "  rate%s%s%s; run with OPENBLAS_CORETYPE=%s\n",
            sl_blas_core(), sl_cpu_path(), set ? " (OPENBLAS_CORETYPE is set to " : "",
            set ? set : "", set ? ")" : "", advice);
}

static int by_value(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double cli_bench_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

double cli_bench_median_of(const double *v, size_t n)
{
    double s[CLI_BENCH_MAX_REPEATS];
    memcpy(s, v, n * sizeof *s);
    return cli_bench_median(s, n);
}

void cli_bench_json_runs(FILE *f, const double *v, size_t n)
{
    fputc('[', f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%.1f", i ? ", " : "", v[i]);
    fputc(']', f);
}
