/* bench_overlap.c: see bench_overlap.h. */
#include "bench_overlap.h"

#include <math.h>
#include <stdlib.h>

double cli_hidden_fraction(double t_compute, double t_data, double t_run)
{
    double shorter = t_compute < t_data ? t_compute : t_data;
    if (!(shorter > 0.0))
        return NAN;
    return (t_compute + t_data - t_run) / shorter;
}

int cli_hidden_is_noise(double h)
{
    return isnan(h) || h < CLI_HIDDEN_NOISE_LOW || h > CLI_HIDDEN_NOISE_HIGH;
}

double cli_hidden_per_percent(double t_compute, double t_data)
{
    double shorter = t_compute < t_data ? t_compute : t_data;
    return shorter > 0.0 ? 0.01 * t_compute / shorter : NAN;
}

double cli_cpu_time_bound(double t_compute, double t_data, double w_compute, double w_data,
                          int cpus)
{
    double bound = t_compute > t_data ? t_compute : t_data;
    double work = (w_compute + w_data) / (double)(cpus > 0 ? cpus : 1);
    return work > bound ? work : bound;
}

static int by_value(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

void cli_spread_of(const double *v, size_t n, int skip_noise, cli_spread *out)
{
    double *kept = malloc((n ? n : 1) * sizeof *kept);
    size_t k = 0;

    out->median = out->min = out->max = NAN;
    out->kept = out->noise = 0;
    if (!kept)
        return;
    for (size_t i = 0; i < n; i++) {
        if (isnan(v[i]) || (skip_noise && cli_hidden_is_noise(v[i])))
            out->noise++;
        else
            kept[k++] = v[i];
    }
    if (k > 0) {
        qsort(kept, k, sizeof *kept, by_value);
        out->median = k % 2 ? kept[k / 2] : (kept[k / 2 - 1] + kept[k / 2]) / 2.0;
        out->min = kept[0];
        out->max = kept[k - 1];
    }
    out->kept = k;
    free(kept);
}

double cli_bus_model_ratio(double t_compute, double t_copy, double t_launch, double t_handover,
                           double steps_per_sink, double *saving)
{
    double per_interaction = 2.0 * t_launch + t_handover;
    double nonsink = t_compute + t_copy + per_interaction;
    double sink = (t_compute > t_copy ? t_compute : t_copy) +
                  (steps_per_sink >= 1.0 ? per_interaction / steps_per_sink : per_interaction);
    if (saving)
        *saving = nonsink - sink;
    return sink > 0.0 ? nonsink / sink : NAN;
}
