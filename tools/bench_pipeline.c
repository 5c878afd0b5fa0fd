/* bench_pipeline.c: `sluice bench pipeline`: builds a pipeline (by default
 * the seeds' LeNet/MNIST one) and times full epochs of it at several worker
 * counts, several times each. Its command line is bench_pipeline_args.c's,
 * its report bench_pipeline_report.c's. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"
#include "cli.h"
#include "bench_pipeline.h"
#include "bench_pipeline_run.h"
#include "cli_profile.h"
#include "bench_util.h"

/* Library messages are printed as "sluice: bench: <message>". */
#define CMD "bench"
#define MAX_WORKER_SETS CLI_BENCH_PIPELINE_MAX_WORKER_SETS
#define DESCRIBE_LEN 16384

/* --- running --------------------------------------------------------- */

/* Images in a row: a batch's first dimension, or 1 without batching. */
static int64_t row_images(const sl_row *row, int batched)
{
    const sl_tensor *t = row->ncolumns > 0 ? row->columns[0] : NULL;

    if (!batched || t == NULL || sl_tensor_ndim(t) < 1)
        return 1;
    return sl_tensor_shape(t)[0];
}

/* The untimed warm-up: one row, so the source's one-time load happens (and
 * is measured) outside the timed runs. */
static int warm_up(sl_dataset *ds, double *load_ms)
{
    sl_iterator *it = NULL;
    sl_iterator_stats stats;
    sl_row row;
    int rc;

    memset(&row, 0, sizeof row);
    rc = sl_iterator_new(&it, ds, NULL);
    if (rc != SL_OK) {
        cli_error(CMD, "%s", cli_lib_message(sl_dataset_last_error(ds), rc));
        return rc;
    }
    rc = sl_iterator_next(it, &row);
    if (rc < 0) {
        cli_error(CMD, "%s", cli_lib_message(sl_iterator_last_error(it), rc));
        sl_iterator_free(it);
        return rc;
    }
    sl_row_clear(&row);
    sl_iterator_get_stats(it, &stats);
    *load_ms = stats.source_load_ms;
    sl_iterator_free(it);
    return SL_OK;
}

/* One timed run: a fresh iterator over `epochs` epochs. The clock runs from
 * sl_iterator_new to the last end of epoch; freeing the iterator is not
 * timed. */
static int timed_run(const cli_bench_pipeline_args *a, sl_dataset *ds, int batched,
                     sl_profiler *profiler, int quiet, run_result *r)
{
    const int64_t epochs = a->epochs;
    sl_iterator_options o;
    sl_iterator_stats stats;
    sl_iterator *it = NULL;
    sl_row row;
    int64_t epochs_seen = 0;
    double t0, t_first = -1.0, t_end;
    int rc;

    memset(r, 0, sizeof *r);
    memset(&row, 0, sizeof row);
    sl_iterator_options_init(&o);
    o.num_epochs = epochs;
    o.profiler = profiler;
    if (a->queue_capacity > 0)
        o.queue_chunks = (size_t)a->queue_capacity;
    r->tune.cmd = CMD;
    r->tune.quiet = quiet;
    r->tune.rows = &r->batches;
    if (a->autotune) {
        o.autotune = 1;
        o.autotune_log = cli_autotune_log;
        o.autotune_log_arg = &r->tune;
    }

    t0 = cli_now_ms();
    rc = sl_iterator_new(&it, ds, &o);
    if (rc != SL_OK) {
        cli_error(CMD, "%s", cli_lib_message(sl_dataset_last_error(ds), rc));
        return rc;
    }
    for (;;) {
        rc = sl_iterator_next(it, &row);
        if (rc == SL_OK) {
            if (t_first < 0)
                t_first = cli_now_ms();
            r->batches++;
            r->images += row_images(&row, batched);
            sl_row_clear(&row);
        } else if (rc == SL_END_OF_EPOCH) {
            if (++epochs_seen == epochs)
                break;
        } else if (rc == SL_END_OF_DATA) {
            break;
        } else {
            cli_error(CMD, "%s", cli_lib_message(sl_iterator_last_error(it), rc));
            sl_iterator_free(it);
            return rc;
        }
    }
    t_end = cli_now_ms();
    /* A change still on trial at the end spoils the stretch: no figure. */
    if (r->tune.settled_ms > 0 && t_end > r->tune.settled_ms && r->batches > r->tune.settled_rows &&
        !r->tune.pending)
        r->tuned_images_per_s = (double)(r->batches - r->tune.settled_rows) *
                                ((double)r->images / (double)r->batches) /
                                ((t_end - r->tune.settled_ms) / 1e3);
    sl_iterator_get_stats(it, &stats);
    r->nstages = sl_iterator_get_stage_stats(it, r->stages, CLI_MAX_STAGES);
    if (r->nstages > CLI_MAX_STAGES)
        r->nstages = CLI_MAX_STAGES;
    sl_iterator_free(it);

    r->threads = stats.threads;
    r->skipped = stats.samples_skipped;
    r->replaced = stats.samples_replaced;
    r->pool = stats.pool;
    r->wakeups_per_epoch = (double)stats.consumer_wakeups / (double)epochs;
    r->first_batch_ms = (t_first >= 0 ? t_first : t_end) - t0;
    r->images_per_s = (t_end > t0) ? (double)r->images / ((t_end - t0) / 1e3) : 0.0;
    return SL_OK;
}

static void progress(int workers, int64_t run, int64_t repeats)
{
    fprintf(stderr, "\rbench: workers %d, run %" PRId64 "/%" PRId64 "...", workers, run,
            repeats);
}

static void progress_clear(void)
{
    fprintf(stderr, "\r%60s\r", "");
}

/* Says why p yields no rows: the samples of an epoch (the source's, capped
 * by --num-samples) do not fill one batch, or there are none. */
static void no_rows_error(const cli_pipeline *p, const sl_dataset *ds)
{
    int64_t samples = sl_dataset_source_rows(ds);

    if (p->num_samples > 0 && p->num_samples < samples)
        samples = p->num_samples;
    if (p->batch > samples)
        cli_error(CMD, "an epoch has %" PRId64 " samples, fewer than one batch of %" PRId64
                  ", and the short batch is dropped: use a smaller --batch or "
                  "--keep-remainder", samples, p->batch);
    else
        cli_error(CMD, "the pipeline yields no rows (%" PRId64 " samples per epoch)",
                  samples);
}

/* Builds one dataset per worker count into ds[]. MNIST sets share one
 * source (sl_dataset_copy), so its pixels are read once and held once. */
static int build_sets(const cli_bench_pipeline_args *a, const cli_pipeline *p, const worker_set *sets,
                      sl_dataset **ds)
{
    sl_dataset *base = NULL;
    int64_t size;
    int rc = SL_OK;

    if (p->kind == CLI_KIND_MNIST && (rc = cli_pipeline_source(CMD, p, 1, &base)) != SL_OK)
        return rc;
    for (size_t w = 0; w < a->nworkers && rc == SL_OK; w++) {
        if (base == NULL) {
            rc = cli_pipeline_build(CMD, p, sets[w].workers, &ds[w]);
        } else if ((rc = sl_dataset_copy(&ds[w], base)) != SL_OK) {
            cli_error(CMD, "out of memory");
        } else {
            rc = cli_pipeline_add_nodes(CMD, p, sets[w].workers, ds[w]);
        }
    }
    sl_dataset_free(base);
    /* An epoch shorter than one dropped batch yields nothing: say so now,
     * before a whole epoch is read to find it out. */
    if (rc == SL_OK && sl_dataset_get_dataset_size(ds[0], &size) == SL_OK && size == 0) {
        no_rows_error(p, ds[0]);
        rc = SL_EINVAL;
    }
    return rc;
}

/* Warms every set up, then runs them in turn, `repeats` rounds: a slow
 * spell of the machine then touches every worker count alike, which keeps
 * their ratio honest. */
static int run_sets(const cli_bench_pipeline_args *a, const cli_pipeline *p, worker_set *sets,
                    sl_dataset **ds)
{
    const int tty = cli_stderr_is_tty();
    int rc = SL_OK;

    for (size_t w = 0; w < a->nworkers && rc == SL_OK; w++) {
        if (tty)
            fprintf(stderr, "\rbench: workers %d, warm-up...", sets[w].workers);
        rc = warm_up(ds[w], &sets[w].load_ms);
    }
    for (int64_t i = 0; i < a->repeats && rc == SL_OK; i++) {
        for (size_t w = 0; w < a->nworkers && rc == SL_OK; w++) {
            if (tty)
                progress(sets[w].workers, i + 1, a->repeats);
            /* Bad samples are reported once: in the first timed run. */
            p->report->quiet = i > 0 || w > 0;
            rc = timed_run(a, ds[w], p->batch > 0,
                           i == a->repeats - 1 && w == a->nworkers - 1 ? a->profiler : NULL,
                           i > 0, &sets[w].runs[i]);
            if (rc == SL_OK && sets[w].runs[i].batches == 0) {
                no_rows_error(p, ds[w]);
                rc = SL_EINVAL;
            }
        }
    }
    if (tty)
        progress_clear();
    return rc;
}

/* --- the machine's own scaling ------------------------------------------ */

/* How much faster n threads of independent work (a register-only hash
 * loop: no memory, no locks, no allocation) run than one: the most any
 * pipeline can gain from n workers on this machine, measured in the same
 * run. On a shared VM it is often well below n. */
#define REFERENCE_STEPS 40000000u
#define MAX_REFERENCE_THREADS 64

static void *reference_work(void *arg)
{
    uint64_t h = (uint64_t)(uintptr_t)arg | 1;
    for (uint32_t i = 0; i < REFERENCE_STEPS; i++)
        h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ULL + i;
    return (void *)(uintptr_t)(h & 1); /* keeps the loop from being optimised out */
}

/* Steps per millisecond with n threads, or a negative value on failure. */
static double reference_rate(int n)
{
    pthread_t threads[MAX_REFERENCE_THREADS];
    double t0 = cli_now_ms(), ms;
    int started = 0;
    for (; started < n; started++)
        if (pthread_create(&threads[started], NULL, reference_work,
                           (void *)(uintptr_t)(started + 1)) != 0)
            break;
    for (int i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    ms = cli_now_ms() - t0;
    if (started < n || ms <= 0)
        return -1;
    return (double)n * REFERENCE_STEPS / ms;
}

/* The median over 3 alternating rounds of rate(n threads) / rate(1);
 * negative when it cannot be measured. */
static double reference_scaling(int n)
{
    double ratios[3];
    if (n < 2 || n > MAX_REFERENCE_THREADS)
        return -1;
    for (int r = 0; r < 3; r++) {
        double one = reference_rate(1), many = reference_rate(n);
        if (one <= 0 || many <= 0)
            return -1;
        ratios[r] = many / one;
    }
    return cli_bench_median(ratios, 3);
}

/* --- main ------------------------------------------------------------ */

int cli_bench_pipeline_main(int argc, char **argv)
{
    cli_bench_pipeline_args a;
    cli_kind kind;
    cli_pipeline p;
    cli_bad_report report = {CMD, 1, 0, 0};
    worker_set sets[MAX_WORKER_SETS];
    sl_dataset *datasets[MAX_WORKER_SETS] = {NULL};
    double machine;
    int most;
    run_result *runs = NULL;
    int lrc;
    char *describe = NULL;
    const char *kind_name;
    int rc = cli_bench_pipeline_parse(argc, argv, &a);

    if (rc < 0)
        return CLI_EXIT_OK; /* --help */
    if (rc != CLI_EXIT_OK)
        return rc;
    if (cli_detect_kind(CMD, a.data, &kind) != 0)
        return CLI_EXIT_FAIL;
    if (kind != CLI_KIND_MNIST && a.usage_given) {
        cli_error(CMD, "--usage applies to MNIST folders only; %s is an ImageFolder",
                  a.data);
        return CLI_EXIT_USAGE;
    }
    if (kind == CLI_KIND_MNIST && !a.usage_given &&
        (cli_mnist_splits(a.data) & CLI_SPLIT_TRAIN) == 0) {
        cli_error(CMD, "%s holds no train split (train-images-idx3-ubyte[.gz]); "
                  "give --usage test", a.data);
        return CLI_EXIT_FAIL;
    }
    if (kind == CLI_KIND_MNIST && a.preset) {
        cli_error(CMD, "--preset %s is for an ImageFolder of colour JPEGs; %s is an MNIST folder",
                  a.preset, a.data);
        return CLI_EXIT_USAGE;
    }
    kind_name = kind == CLI_KIND_MNIST ? "mnist" : "image_folder";
    cli_bench_pipeline_make(&a, kind, &p);
    p.report = &report; /* quiet until the first timed run */

    /* One block for every run of every worker count. */
    runs = calloc(a.nworkers * (size_t)a.repeats, sizeof *runs);
    describe = calloc(1, DESCRIBE_LEN);
    if (runs == NULL || describe == NULL) {
        cli_error(CMD, "out of memory");
        rc = CLI_EXIT_FAIL;
        goto out;
    }
    rc = CLI_EXIT_OK;
    for (size_t w = 0; w < a.nworkers; w++) {
        sets[w].workers = (int)a.workers[w];
        sets[w].load_ms = 0.0;
        sets[w].runs = runs + w * (size_t)a.repeats;
    }
    if (build_sets(&a, &p, sets, datasets) != SL_OK) {
        rc = CLI_EXIT_FAIL;
        goto out;
    }
    /* The first set's description stands for all: only the worker counts
     * differ between them. */
    if ((lrc = sl_dataset_describe(datasets[0], describe, DESCRIBE_LEN)) != SL_OK) {
        cli_error(CMD, "%s", cli_lib_message(sl_dataset_last_error(datasets[0]), lrc));
        rc = CLI_EXIT_FAIL;
        goto out;
    }
    if (a.profile && cli_profile_start(CMD, a.profile, &a.profiler) != 0) {
        rc = CLI_EXIT_FAIL;
        goto out;
    }
    lrc = run_sets(&a, &p, sets, datasets);
    if (a.profiler) {
        int failed = cli_profile_finish(CMD, a.profile, a.profiler);
        a.profiler = NULL;
        if (failed && lrc == SL_OK)
            lrc = SL_EIO;
    }
    if (lrc != SL_OK) {
        rc = CLI_EXIT_FAIL;
        goto out;
    }
    /* Measured after the runs, in the same process, for comparison. */
    most = cli_bench_pipeline_max_workers(&a);
    machine = most >= 2 ? reference_scaling(most) : -1;
    if (a.json)
        cli_bench_pipeline_print_json(&a, kind_name, describe, sets, machine);
    else
        cli_bench_pipeline_print_text(&a, kind_name, describe, sets, machine);
out:
    for (size_t w = 0; w < MAX_WORKER_SETS; w++)
        sl_dataset_free(datasets[w]);
    free(describe);
    free(runs);
    return rc;
}
