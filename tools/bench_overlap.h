/* bench_overlap.h: the arithmetic of `sluice bench sink`'s overlap figures,
 * on times it is given: the hidden fraction of a round, its noise flag,
 * the CPU-time bound, and a summary over rounds. Nothing here runs or
 * times anything, so tests/check_bench.c checks it on made-up timings. */
#ifndef SLUICE_TOOLS_BENCH_OVERLAP_H
#define SLUICE_TOOLS_BENCH_OVERLAP_H

#include <stddef.h>

/* Hidden fractions outside [low, high] are noise (cli_hidden_is_noise). */
#define CLI_HIDDEN_NOISE_LOW (-0.1)
#define CLI_HIDDEN_NOISE_HIGH 1.1

/* The hidden fraction of one round, from that round's own runs:
 * h = (t_compute + t_data - t_run) / min(t_compute, t_data), the share of
 * the shorter of computing and preparing data that ran beside the other:
 * 0 when they ran one after the other, 1 when the shorter hid entirely
 * behind the longer. Any one time unit; NaN unless min(...) > 0. */
double cli_hidden_fraction(double t_compute, double t_data, double t_run);

/* 1 when h cannot be a result: NaN, or outside [CLI_HIDDEN_NOISE_LOW,
 * CLI_HIDDEN_NOISE_HIGH]. A run neither beats perfect overlap (h 1) nor
 * pays much more than both parts in turn (h 0), so such a value says that
 * the runs of the round moved more than overlap could explain. */
int cli_hidden_is_noise(double h);

/* What one change moves h by: the change in h when t_run (or t_compute)
 * grows by 1% of t_compute. Large when data time is small beside compute
 * time (on MNIST, about 0.25): then h says little. */
double cli_hidden_per_percent(double t_compute, double t_data);

/* The CPU-time bound of a run whose compute and data share `cpus` CPUs:
 * it cannot end sooner than max(t_compute, t_data, (w_compute + w_data) /
 * cpus), w being the CPU time (all threads) of the compute-only and the
 * data-only runs. Efficiency against it is bound / t_run (1: the run took
 * no longer than the work needs). */
double cli_cpu_time_bound(double t_compute, double t_data, double w_compute, double w_data,
                          int cpus);

/* The bus model's prediction of what sinking saves on a device across a
 * bus, where the pipeline runs ahead in its threads either way: a non-sink
 * step pays t_compute + t_copy (its batch copied in) + 2 x t_launch (the
 * launch and the result coming back) + t_handover (the host handing the
 * step to the device's thread and taking it back, which a real runtime's
 * launch includes but the sim pays on top of its modelled one); a step of a
 * sink of steps_per_sink steps pays max(t_compute, t_copy) (a transfer
 * thread copies the next batch while this one computes) + (2 x t_launch +
 * t_handover) / steps_per_sink. Returns the non-sink time over the sink
 * time (the speed-up sinking predicts); *saving_ms (may be NULL) gets the
 * time a step saves. NaN unless the sink time is > 0. Any one time unit. */
double cli_bus_model_ratio(double t_compute, double t_copy, double t_launch, double t_handover,
                           double steps_per_sink, double *saving);

/* A summary of per-round values: the median, min and max of those kept.
 * NaN values are left out and counted in `noise`; with skip_noise, so are
 * the values cli_hidden_is_noise flags. With none kept, median, min and
 * max are NaN. */
typedef struct cli_spread {
    double median, min, max;
    size_t kept;  /* rounds summarised */
    size_t noise; /* rounds left out as noise */
} cli_spread;

void cli_spread_of(const double *v, size_t n, int skip_noise, cli_spread *out);

#endif
