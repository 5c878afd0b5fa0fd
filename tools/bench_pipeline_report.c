/* bench_pipeline_report.c: `sluice bench pipeline`'s report of its runs:
 * medians and ranges per worker count, the buffer pools, peak memory and
 * the machine's own scaling, as text or JSON (bench_pipeline_run.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "sluice/sluice.h"
#include "cli.h"
#include "bench_pipeline_run.h"
#include "bench_util.h"

/* --- results --------------------------------------------------------- */

/* The median of the images/s (which = 0), first batch ms (which = 1) or
 * consumer wake-ups per epoch (which = 2). */
static double median_of(const run_result *runs, int64_t n, int which)
{
    double *v = malloc((size_t)n * sizeof *v);
    double m;

    if (v == NULL)
        return 0.0;
    size_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = which == 0   ? runs[i].images_per_s
                   : which == 1 ? runs[i].first_batch_ms
                   : which == 2 ? runs[i].wakeups_per_epoch
                                : runs[i].tuned_images_per_s;
        if (which == 3 && x <= 0)
            continue; /* a run the tuner had nothing to say of, or left mid-trial */
        v[k++] = x;
    }
    m = k ? cli_bench_median(v, k) : 0.0;
    free(v);
    return m;
}

static void min_max_rate(const run_result *runs, int64_t n, double *lo, double *hi)
{
    *lo = *hi = runs[0].images_per_s;
    for (int64_t i = 1; i < n; i++) {
        if (runs[i].images_per_s < *lo)
            *lo = runs[i].images_per_s;
        if (runs[i].images_per_s > *hi)
            *hi = runs[i].images_per_s;
    }
}

/* The process's own peak resident memory: VmHWM from /proc/self/status.
 * getrusage's ru_maxrss is not used because Linux carries it over from the
 * parent across fork and exec, so a run started by a big parent (the
 * Python comparison script) would report the parent's peak. */
static long long peak_rss_bytes(void)
{
    char line[256];
    long long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (f) {
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "VmHWM: %lld kB", &kib) == 1)
                break;
        fclose(f);
    }
    if (kib < 0) {
        struct rusage ru;
        if (getrusage(RUSAGE_SELF, &ru) != 0)
            return -1;
        kib = ru.ru_maxrss; /* Linux reports KiB */
    }
    return kib * 1024;
}

#define MIB(x) ((double)(x) / (1024.0 * 1024.0))

/* Each worker count's buffer pool as its last run ended. */
static void print_pool_text(const cli_bench_pipeline_args *a, const worker_set *sets)
{
    printf("\nbuffer pool (MB; each worker count's dataset has its own, shown as its last\n"
           "run ended; allocs and frees count calls to the system since it was made):\n");
    printf("%7s %11s %8s %8s %8s %13s %12s %9s\n", "workers", "peak in use", "in use",
           "idle", "idle cap", "system allocs", "system frees", "cap frees");
    for (size_t w = 0; w < a->nworkers; w++) {
        const sl_pool_stats *ps = &sets[w].runs[a->repeats - 1].pool;
        printf("%7d %11.1f %8.1f %8.1f %8.1f %13" PRIu64 " %12" PRIu64 " %9" PRIu64 "\n",
               sets[w].workers, MIB(ps->peak_in_use_bytes), MIB(ps->in_use_bytes),
               MIB(ps->idle_bytes), MIB(ps->idle_cap_bytes), ps->system_allocs,
               ps->system_frees, ps->cap_frees);
    }
}

void cli_bench_pipeline_print_text(const cli_bench_pipeline_args *a, const char *kind,
                                   const char *describe, const worker_set *sets,
                                   double machine)
{
    const char *line = describe;

    /* The describe text, indented, one node a line. */
    printf("pipeline (workers=%d):\n", sets[0].workers);
    while (*line != '\0') {
        size_t len = strcspn(line, "\n");
        printf("  %.*s\n", (int)len, line);
        line += len;
        if (*line == '\n')
            line++;
    }
    printf("data:     %s (%s)\n", a->data, kind);
    printf("runs:     %" PRId64 " per worker count, %" PRId64 " epoch%s each, seed %" PRId64
           "\n",
           a->repeats, a->epochs, a->epochs == 1 ? "" : "s", a->seed);
    if (strcmp(kind, "mnist") == 0)
        printf("load_ms:  %.1f (one-time read of the IDX files in an untimed warm-up\n"
               "          iterator; the dataset keeps the pixels, so the timed runs\n"
               "          exclude it)\n",
               sets[0].load_ms);
    else
        printf("load_ms:  %.1f (ImageFolder reads and decodes its files in every epoch,\n"
               "          so the timed runs include all reading)\n",
               sets[0].load_ms);
    printf("\n%7s %7s %12s %23s %14s %8s %9s %14s  %s\n", "workers", "threads", "images/s",
           "min..max", "first batch ms", "batches", "images", "wakeups/epoch", "all images/s");
    for (size_t w = 0; w < a->nworkers; w++) {
        const worker_set *s = &sets[w];
        double lo, hi;
        char range[64];
        min_max_rate(s->runs, a->repeats, &lo, &hi);
        snprintf(range, sizeof range, "%.1f..%.1f", lo, hi);
        printf("%7d %7d %12.1f %23s %14.2f %8" PRId64 " %9" PRId64 " %14.1f ", s->workers,
               s->runs[0].threads, median_of(s->runs, a->repeats, 0), range,
               median_of(s->runs, a->repeats, 1), s->runs[0].batches, s->runs[0].images,
               median_of(s->runs, a->repeats, 2));
        for (int64_t i = 0; i < a->repeats; i++)
            printf(" %.1f", s->runs[i].images_per_s);
        printf("\n");
    }
    printf("\n(images/s, first batch ms and wakeups/epoch are medians over the runs;\n"
           "threads is what the pipeline runs, and wakeups/epoch how often the consumer\n"
           "slept waiting for a batch and was woken, as reported by the iterator)\n");
    if (a->errors.mode != SL_ERROR_SAMPLES_RAISE)
        printf("bad samples: %" PRIu64 " skipped, %" PRIu64 " replaced in each run (--error-samples "
               "%s)\n",
               sets[0].runs[0].skipped, sets[0].runs[0].replaced,
               a->errors.mode == SL_ERROR_SAMPLES_SKIP ? "skip" : "replace");
    for (size_t w = 0; w < a->nworkers; w++) {
        const run_result *last = &sets[w].runs[a->repeats - 1];
        printf("\nstages (workers=%d, the last run; %% of each stage's threads x its time):\n",
               sets[w].workers);
        cli_stages_text(stdout, last->stages, last->nstages);
        if (a->autotune) {
            printf("autotune (started from %d worker%s): images/s once tuned, median over the "
                   "runs: %.1f\n",
                   sets[w].workers, sets[w].workers == 1 ? "" : "s",
                   median_of(sets[w].runs, a->repeats, 3));
            printf("autotune in the last run:\n");
            for (size_t k = 0; k < last->tune.nlines; k++)
                printf("  %s\n", last->tune.lines[k]);
            if (last->tune.nlines == 0)
                printf("  (nothing to say: the run was too short to judge)\n");
        }
    }
    print_pool_text(a, sets);
    printf("peak RSS: %.1f MB\n", (double)peak_rss_bytes() / (1024.0 * 1024.0));
    if (machine > 0)
        printf("machine:  %d threads of independent work (a compute loop) run %.2fx as fast\n"
               "          as one here: the most %d workers can gain on this machine now\n",
               cli_bench_pipeline_max_workers(a), machine, cli_bench_pipeline_max_workers(a));
}

void cli_bench_pipeline_print_json(const cli_bench_pipeline_args *a, const char *kind,
                                   const char *describe, const worker_set *sets,
                                   double machine)
{
    printf("{\"dataset\": ");
    cli_json_string(stdout, a->data);
    printf(", \"kind\": ");
    cli_json_string(stdout, kind);
    printf(", \"pipeline\": ");
    cli_json_string(stdout, describe);
    printf(", \"load_ms\": %.3f, \"epochs\": %" PRId64 ", \"runs\": [", sets[0].load_ms,
           a->epochs);
    for (size_t w = 0; w < a->nworkers; w++) {
        const worker_set *s = &sets[w];
        printf("%s{\"workers\": %d, \"threads\": %d, \"images_per_s\": %.3f, "
               "\"images_per_s_all\": [",
               w ? ", " : "", s->workers, s->runs[0].threads,
               median_of(s->runs, a->repeats, 0));
        for (int64_t i = 0; i < a->repeats; i++)
            printf("%s%.3f", i ? ", " : "", s->runs[i].images_per_s);
        printf("], \"first_batch_ms\": %.3f, \"batches\": %" PRId64 ", \"images\": %" PRId64
               ", \"consumer_wakeups_per_epoch\": %.1f, \"load_ms\": %.3f, \"samples_skipped\": "
               "%" PRIu64 ", \"samples_replaced\": %" PRIu64 ", \"pool\": ",
               median_of(s->runs, a->repeats, 1), s->runs[0].batches, s->runs[0].images,
               median_of(s->runs, a->repeats, 2), s->load_ms, s->runs[0].skipped,
               s->runs[0].replaced);
        cli_pool_json(stdout, &s->runs[a->repeats - 1].pool);
        printf(", \"stages\": ");
        cli_stages_json(stdout, s->runs[a->repeats - 1].stages, s->runs[a->repeats - 1].nstages);
        printf(", \"verdict\": ");
        cli_stages_verdict_json(stdout, s->runs[a->repeats - 1].stages,
                                s->runs[a->repeats - 1].nstages);
        if (a->autotune) {
            printf(", \"tuned_images_per_s\": %.3f, \"autotune\": ",
                   median_of(s->runs, a->repeats, 3));
            cli_autotune_json(stdout, &s->runs[a->repeats - 1].tune);
        }
        printf("}");
    }
    printf("], \"peak_rss_bytes\": %lld", peak_rss_bytes());
    if (machine > 0)
        printf(", \"machine_scaling\": {\"threads\": %d, \"ratio\": %.3f}",
               cli_bench_pipeline_max_workers(a), machine);
    printf("}\n");
}
