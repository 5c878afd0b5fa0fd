/* bench_pipeline.c: `sluice bench pipeline`: builds a pipeline (by default
 * the seeds' LeNet/MNIST one) and times full epochs of it at several worker
 * counts, several times each. */
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "sluice/sluice.h"
#include "cli.h"
#include "bench_pipeline.h"
#include "bench_util.h"

/* Library messages are printed as "sluice: bench: <message>". */
#define CMD "bench"
#define MAX_WORKER_SETS CLI_BENCH_PIPELINE_MAX_WORKER_SETS
#define DESCRIBE_LEN 16384

/* Long-only options get codes outside the char range. */
enum {
    OPT_DATA = 256, OPT_USAGE, OPT_WORKERS, OPT_REPEATS, OPT_EPOCHS, OPT_SEED, OPT_JSON,
    OPT_RESIZE, OPT_RESCALE, OPT_NORMALIZE, OPT_HWC2CHW, OPT_FLIP, OPT_CROP,
    OPT_LABEL_INT32, OPT_SHUFFLE, OPT_BATCH, OPT_KEEP_REMAINDER, OPT_NO_SOURCE_SHUFFLE,
    OPT_NUM_SAMPLES, OPT_DECODE_MAX_PIXELS, OPT_POOL_IDLE_MB, OPT_ERROR_SAMPLES,
    OPT_MAX_BAD_SAMPLES
};

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
} run_result;

/* Every run of one worker count. */
typedef struct worker_set {
    int workers;
    double load_ms;          /* the warm-up's one-time source load */
    run_result *runs;        /* repeats of them */
} worker_set;

void cli_bench_pipeline_usage(FILE *f)
{
    fputs("Usage: sluice bench pipeline [OPTIONS...]\n"
          "\n"
          "Times full epochs of a dataset pipeline. With MNIST data and no op options the\n"
          "pipeline is the seeds' LeNet one: label TypeCast(int32); image Resize(32,32,\n"
          "bilinear), Rescale(1/255, 0), Rescale(1/0.3081, -0.1307/0.3081), HWC2CHW;\n"
          "shuffle(10000); batch(32, drop_remainder). With an ImageFolder: decode, Resize\n"
          "(224,224), RandomHorizontalFlip(0.5), Normalize(ImageNet mean/std), HWC2CHW;\n"
          "batch(32, drop_remainder). Sources read in shuffled order, as MindSpore's do.\n"
          "\n"
          "Worker counts take turns, one run each per round, so that the machine's slow\n"
          "spells touch them alike. Before the timed runs an untimed warm-up iterator\n"
          "per worker count reads one row: the first pays the one-time source load\n"
          "(load_ms), which the datasets share and keep, so the timed runs exclude it.\n"
          "\n"
          "Options:\n"
          "  --data DIR          dataset folder (default " CLI_DEFAULT_DATA ")\n"
          "  --usage U           MNIST split: train, test or all (default train)\n"
          "  --workers LIST      comma list of worker counts, one run set each, given to\n"
          "                      every map, the batch and the decode (default 1,2)\n"
          "  --repeats N         timed runs per worker count (default 3)\n"
          "  --epochs N          epochs per timed run (default 1)\n"
          "  --seed N            seed of the sampler, shuffle and random ops (default 0)\n"
          "  --pool-idle-mb N    the most MiB of freed buffers each dataset's pool keeps\n"
          "                      for reuse; 0 caches nothing (default: half the most it\n"
          "                      had in use at once, at least 8 and at most 64 MiB)\n"
          "  --json              print one JSON object instead of text\n"
          "  -h, --help          show this help and exit\n"
          "\n"
          "Op options replace the default ops, in the order given; they apply to the\n"
          "`image` column (numbers may be written as fractions, e.g. 1/255):\n"
          "  --resize H[xW]      bilinear resize\n"
          "  --rescale S[,SHIFT] x * S + SHIFT, as float32 (repeatable)\n"
          "  --normalize M1,M2,..:S1,S2,..  (x - mean) / std per channel\n"
          "  --hwc2chw           HWC to CHW\n"
          "  --flip P            random horizontal flip with probability P\n"
          "  --crop H[xW][,PAD]  random crop after padding PAD zeros on every side\n"
          "  --label-int32       cast `label` to int32 (part of the default MNIST ops)\n"
          "Options that adjust the rest of the default pipeline:\n"
          "  --shuffle N         shuffle buffer size, 0 for none\n"
          "  --batch N           batch size, 0 for none\n"
          "  --keep-remainder    keep the last short batch\n"
          "  --no-source-shuffle read the source in file order\n"
          "  --num-samples N     read at most N samples per epoch (0: all)\n"
          "  --decode-max-pixels N  ImageFolder: refuse JPEGs declaring more than N pixels\n"
          "                      (width x height), from the header, before decoding\n"
          "                      (default 67108864 = 8192x8192; raise it for larger images)\n"
          CLI_ERROR_SAMPLES_HELP
          "                      (in the first timed run; the others count them only)\n",
          f);
}

/* --- parsing --------------------------------------------------------- */

static int add_step(cli_bench_pipeline_args *a, const cli_step *s)
{
    if (a->nsteps == CLI_MAX_STEPS) {
        cli_error(CMD, "more than %d ops", CLI_MAX_STEPS);
        return -1;
    }
    a->steps[a->nsteps++] = *s;
    a->ops_given = 1;
    return 0;
}

static int parse_rescale(cli_bench_pipeline_args *a, const char *arg)
{
    double v[2];
    size_t n = 0;
    cli_step s;

    if (cli_parse_double_list(CMD, "--rescale", arg, v, 2, &n) != 0)
        return -1;
    memset(&s, 0, sizeof s);
    s.kind = CLI_STEP_RESCALE;
    s.scale = v[0];
    s.shift = (n == 2) ? v[1] : 0.0;
    return add_step(a, &s);
}

static int parse_normalize(cli_bench_pipeline_args *a, const char *arg)
{
    const char *colon = strchr(arg, ':');
    char means[256];
    size_t nmean = 0, nstd = 0;
    cli_step s;

    memset(&s, 0, sizeof s);
    s.kind = CLI_STEP_NORMALIZE;
    if (colon == NULL || (size_t)(colon - arg) >= sizeof means) {
        cli_error(CMD, "--normalize: expected M1,M2,..:S1,S2,.., got '%s'", arg);
        return -1;
    }
    memcpy(means, arg, (size_t)(colon - arg));
    means[colon - arg] = '\0';
    if (cli_parse_double_list(CMD, "--normalize mean", means, s.mean, CLI_MAX_CHANNELS,
                              &nmean) != 0 ||
        cli_parse_double_list(CMD, "--normalize std", colon + 1, s.std, CLI_MAX_CHANNELS,
                              &nstd) != 0)
        return -1;
    if (nmean != nstd) {
        cli_error(CMD, "--normalize: %zu means but %zu stds", nmean, nstd);
        return -1;
    }
    for (size_t c = 0; c < nstd; c++) {
        if (!(s.std[c] > 0.0)) {
            cli_error(CMD, "--normalize: std %g must be > 0", s.std[c]);
            return -1;
        }
    }
    s.channels = nmean;
    return add_step(a, &s);
}

static int parse_crop(cli_bench_pipeline_args *a, const char *arg)
{
    const char *comma = strchr(arg, ',');
    char size[64];
    size_t len = comma ? (size_t)(comma - arg) : strlen(arg);
    cli_step s;

    memset(&s, 0, sizeof s);
    s.kind = CLI_STEP_CROP;
    if (len >= sizeof size) {
        cli_error(CMD, "--crop: expected H[xW][,PAD], got '%s'", arg);
        return -1;
    }
    memcpy(size, arg, len);
    size[len] = '\0';
    if (cli_parse_hw(CMD, "--crop", size, &s.height, &s.width) != 0)
        return -1;
    if (comma && cli_parse_int64(CMD, "--crop padding", comma + 1, 0, INT32_MAX,
                                 &s.padding) != 0)
        return -1;
    return add_step(a, &s);
}

static int parse_simple_step(cli_bench_pipeline_args *a, int opt, const char *arg)
{
    cli_step s;

    memset(&s, 0, sizeof s);
    switch (opt) {
    case OPT_RESIZE:
        s.kind = CLI_STEP_RESIZE;
        if (cli_parse_hw(CMD, "--resize", arg, &s.height, &s.width) != 0)
            return -1;
        break;
    case OPT_HWC2CHW:
        s.kind = CLI_STEP_HWC2CHW;
        break;
    case OPT_FLIP:
        s.kind = CLI_STEP_FLIP;
        if (cli_parse_double(CMD, "--flip", arg, &s.prob) != 0)
            return -1;
        if (s.prob < 0.0 || s.prob > 1.0) {
            cli_error(CMD, "--flip: probability %s is outside [0, 1]", arg);
            return -1;
        }
        break;
    default:
        return -1;
    }
    return add_step(a, &s);
}

/* Handles one option; 0 ok, -1 usage error (already printed). */
static int parse_option(cli_bench_pipeline_args *a, int opt, const char *arg)
{
    switch (opt) {
    case OPT_DATA: a->data = arg; return 0;
    case OPT_USAGE:
        a->usage_given = 1;
        return cli_parse_usage(CMD, arg, &a->usage);
    case OPT_WORKERS:
        return cli_parse_int64_list(CMD, "--workers", arg, 1, 256, a->workers,
                                    MAX_WORKER_SETS, &a->nworkers);
    case OPT_REPEATS: return cli_parse_int64(CMD, "--repeats", arg, 1, 1000, &a->repeats);
    case OPT_EPOCHS: return cli_parse_int64(CMD, "--epochs", arg, 1, 1000, &a->epochs);
    case OPT_SEED: return cli_parse_int64(CMD, "--seed", arg, 0, INT64_MAX, &a->seed);
    case OPT_JSON: a->json = 1; return 0;
    case OPT_RESIZE:
    case OPT_HWC2CHW:
    case OPT_FLIP: return parse_simple_step(a, opt, arg);
    case OPT_RESCALE: return parse_rescale(a, arg);
    case OPT_NORMALIZE: return parse_normalize(a, arg);
    case OPT_CROP: return parse_crop(a, arg);
    case OPT_LABEL_INT32:
        a->label_int32 = 1;
        a->ops_given = 1;
        return 0;
    case OPT_SHUFFLE:
        /* The library's own bounds (shuffle: 2 .. 2^30, 0 here for none;
         * batch: 1 .. 2^24, 0 for none), refused here as usage errors. */
        a->shuffle_given = 1;
        if (cli_parse_int64(CMD, "--shuffle", arg, 0, INT64_C(1) << 30, &a->shuffle) != 0)
            return CLI_EXIT_USAGE;
        if (a->shuffle == 1) {
            cli_error(CMD, "--shuffle: a buffer of 1 row shuffles nothing; give 0 (none) or >= 2");
            return CLI_EXIT_USAGE;
        }
        return 0;
    case OPT_BATCH:
        a->batch_given = 1;
        return cli_parse_int64(CMD, "--batch", arg, 0, INT64_C(1) << 24, &a->batch);
    case OPT_KEEP_REMAINDER: a->keep_remainder = 1; return 0;
    case OPT_NO_SOURCE_SHUFFLE: a->no_source_shuffle = 1; return 0;
    case OPT_NUM_SAMPLES:
        return cli_parse_int64(CMD, "--num-samples", arg, 0, INT64_MAX, &a->num_samples);
    case OPT_DECODE_MAX_PIXELS:
        return cli_parse_int64(CMD, "--decode-max-pixels", arg, 1,
                               (int64_t)SL_DECODE_MAX_PIXELS_LIMIT, &a->decode_max_pixels);
    case OPT_ERROR_SAMPLES: return cli_parse_error_samples(CMD, arg, &a->errors);
    case OPT_MAX_BAD_SAMPLES: return cli_parse_max_bad_samples(CMD, arg, &a->errors);
    case OPT_POOL_IDLE_MB:
        return cli_parse_int64(CMD, "--pool-idle-mb", arg, 0, CLI_MAX_POOL_IDLE_MB,
                               &a->pool_idle_mb);
    }
    return -1;
}

int cli_bench_pipeline_parse(int argc, char **argv, cli_bench_pipeline_args *a)
{
    static const struct option longopts[] = {
        {"data", required_argument, NULL, OPT_DATA},
        {"usage", required_argument, NULL, OPT_USAGE},
        {"workers", required_argument, NULL, OPT_WORKERS},
        {"repeats", required_argument, NULL, OPT_REPEATS},
        {"epochs", required_argument, NULL, OPT_EPOCHS},
        {"seed", required_argument, NULL, OPT_SEED},
        {"json", no_argument, NULL, OPT_JSON},
        {"resize", required_argument, NULL, OPT_RESIZE},
        {"rescale", required_argument, NULL, OPT_RESCALE},
        {"normalize", required_argument, NULL, OPT_NORMALIZE},
        {"hwc2chw", no_argument, NULL, OPT_HWC2CHW},
        {"flip", required_argument, NULL, OPT_FLIP},
        {"crop", required_argument, NULL, OPT_CROP},
        {"label-int32", no_argument, NULL, OPT_LABEL_INT32},
        {"shuffle", required_argument, NULL, OPT_SHUFFLE},
        {"batch", required_argument, NULL, OPT_BATCH},
        {"keep-remainder", no_argument, NULL, OPT_KEEP_REMAINDER},
        {"no-source-shuffle", no_argument, NULL, OPT_NO_SOURCE_SHUFFLE},
        {"num-samples", required_argument, NULL, OPT_NUM_SAMPLES},
        {"decode-max-pixels", required_argument, NULL, OPT_DECODE_MAX_PIXELS},
        {"error-samples", required_argument, NULL, OPT_ERROR_SAMPLES},
        {"max-bad-samples", required_argument, NULL, OPT_MAX_BAD_SAMPLES},
        {"pool-idle-mb", required_argument, NULL, OPT_POOL_IDLE_MB},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;

    memset(a, 0, sizeof *a);
    a->data = CLI_DEFAULT_DATA;
    a->usage = SL_MNIST_TRAIN;
    a->workers[0] = 1;
    a->workers[1] = 2;
    a->nworkers = 2;
    a->repeats = 3;
    a->epochs = 1;
    cli_error_samples_default(&a->errors);
    a->pool_idle_mb = -1;

    optind = 0; /* GNU: restart scanning on this new argv */
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (opt == 'h') {
            cli_bench_pipeline_usage(stdout);
            return -1;
        }
        if (opt == '?' || opt == ':') {
            cli_bad_option(CMD, opt, argv, longopts);
            return CLI_EXIT_USAGE;
        }
        if (parse_option(a, opt, optarg) != 0)
            return CLI_EXIT_USAGE;
    }
    if (optind < argc) {
        cli_error(CMD, "unexpected argument '%s' (see --help)", argv[optind]);
        return CLI_EXIT_USAGE;
    }
    if (cli_check_error_samples(CMD, &a->errors) != 0)
        return CLI_EXIT_USAGE;
    return CLI_EXIT_OK;
}

void cli_bench_pipeline_make(const cli_bench_pipeline_args *a, cli_kind kind, cli_pipeline *p)
{
    cli_pipeline_default(p, a->data, kind, a->usage);
    if (a->ops_given) {
        cli_pipeline_clear_ops(p);
        p->label_int32 = a->label_int32;
        memcpy(p->steps, a->steps, a->nsteps * sizeof a->steps[0]);
        p->nsteps = a->nsteps;
    }
    if (a->shuffle_given)
        p->shuffle = a->shuffle;
    if (a->batch_given)
        p->batch = a->batch;
    if (a->keep_remainder)
        p->drop_remainder = 0;
    if (a->no_source_shuffle)
        p->source_shuffle = 0;
    p->num_samples = a->num_samples;
    p->decode_max_pixels = (uint64_t)a->decode_max_pixels;
    p->errors = a->errors;
    p->seed = (uint64_t)a->seed;
    p->pool_idle_mb = a->pool_idle_mb;
}

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
static int timed_run(sl_dataset *ds, int64_t epochs, int batched, run_result *r)
{
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
    sl_iterator_get_stats(it, &stats);
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
            rc = timed_run(ds[w], a->epochs, p->batch > 0, &sets[w].runs[i]);
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

/* --- results --------------------------------------------------------- */

/* The median of the images/s (which = 0), first batch ms (which = 1) or
 * consumer wake-ups per epoch (which = 2). */
static double median_of(const run_result *runs, int64_t n, int which)
{
    double *v = malloc((size_t)n * sizeof *v);
    double m;

    if (v == NULL)
        return 0.0;
    for (int64_t i = 0; i < n; i++)
        v[i] = which == 0   ? runs[i].images_per_s
               : which == 1 ? runs[i].first_batch_ms
                            : runs[i].wakeups_per_epoch;
    m = cli_bench_median(v, (size_t)n);
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

/* The largest worker count of the runs, the one the machine is probed at. */
static int max_workers(const cli_bench_pipeline_args *a)
{
    int64_t m = 1;
    for (size_t w = 0; w < a->nworkers; w++)
        if (a->workers[w] > m)
            m = a->workers[w];
    return (int)m;
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

static void print_text(const cli_bench_pipeline_args *a, const char *kind, const char *describe,
                       const worker_set *sets, double machine)
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
    print_pool_text(a, sets);
    printf("peak RSS: %.1f MB\n", (double)peak_rss_bytes() / (1024.0 * 1024.0));
    if (machine > 0)
        printf("machine:  %d threads of independent work (a compute loop) run %.2fx as fast\n"
               "          as one here: the most %d workers can gain on this machine now\n",
               max_workers(a), machine, max_workers(a));
}

static void print_json(const cli_bench_pipeline_args *a, const char *kind, const char *describe,
                       const worker_set *sets, double machine)
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
        printf("}");
    }
    printf("], \"peak_rss_bytes\": %lld", peak_rss_bytes());
    if (machine > 0)
        printf(", \"machine_scaling\": {\"threads\": %d, \"ratio\": %.3f}", max_workers(a),
               machine);
    printf("}\n");
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
    if (run_sets(&a, &p, sets, datasets) != SL_OK) {
        rc = CLI_EXIT_FAIL;
        goto out;
    }
    /* Measured after the runs, in the same process, for comparison. */
    machine = max_workers(&a) >= 2 ? reference_scaling(max_workers(&a)) : -1;
    if (a.json)
        print_json(&a, kind_name, describe, sets, machine);
    else
        print_text(&a, kind_name, describe, sets, machine);
out:
    for (size_t w = 0; w < MAX_WORKER_SETS; w++)
        sl_dataset_free(datasets[w]);
    free(describe);
    free(runs);
    return rc;
}
