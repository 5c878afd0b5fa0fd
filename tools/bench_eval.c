/* bench_eval.c: `sluice bench eval`: inference throughput of LeNet5 in
 * images/s, the whole MNIST test split through the seeds' preprocessing
 * and the compiled forward step, batch 256 (the last short batch padded). */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"
#include "bench_util.h"
#include "cli.h"

#define CMD "bench"
#define MAX_REPEATS CLI_BENCH_MAX_REPEATS

enum { OPT_BATCH = 256, OPT_THREADS, OPT_REPEATS, OPT_DATA, OPT_WORKERS, OPT_LOAD, OPT_JSON };

typedef struct eval_args {
    int64_t batch, threads, repeats, workers;
    const char *data, *load;
    int json;
} eval_args;

void cli_bench_eval_usage(FILE *f)
{
    fputs("Usage: sluice bench eval [OPTIONS...]\n"
          "\n"
          "Measures inference throughput in images/s: every image of an MNIST folder's\n"
          "test split through the seeds' preprocessing (resize 32, rescale, CHW) and\n"
          "LeNet5's compiled forward step, as `sluice eval` runs them; the median of\n"
          "--repeats passes after one untimed pass. Also prints the accuracy, which\n"
          "means something with --load.\n"
          "\n"
          "Options:\n"
          "  --batch N           images per step (default 256; the last batch is padded)\n"
          "  --threads N         executor compute threads (default: the CPUs, at most 4)\n"
          "  --workers N         pipeline workers (default 1 when the compute threads\n"
          "                      fill every CPU, else 2)\n"
          "  --repeats N         timed passes (default 3)\n"
          "  --data DIR          MNIST folder (default " CLI_DEFAULT_DATA ")\n"
          "  --load CKPT         the network's parameters (default: its seed-0 start)\n"
          "  --json              one JSON object: inference_images_per_s (the median),\n"
          "                      runs, batch, threads, cpu_path, accuracy\n"
          "  -h, --help          show this help and exit\n",
          f);
}

static int parse_args(int argc, char **argv, eval_args *a)
{
    static const struct option longopts[] = {
        {"batch", required_argument, NULL, OPT_BATCH},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"repeats", required_argument, NULL, OPT_REPEATS},
        {"data", required_argument, NULL, OPT_DATA},
        {"workers", required_argument, NULL, OPT_WORKERS},
        {"load", required_argument, NULL, OPT_LOAD},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    sl_thread_budget b;
    int opt, bad = 0;

    memset(a, 0, sizeof *a);
    sl_thread_budget_default(&b);
    a->batch = 256;
    a->threads = b.compute_threads;
    a->repeats = 3;
    a->data = CLI_DEFAULT_DATA;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1 && !bad) {
        switch (opt) {
        case 'h': cli_bench_eval_usage(stdout); return -1;
        case OPT_BATCH: bad = cli_parse_int64(CMD, "--batch", optarg, 1, 65536, &a->batch); break;
        case OPT_THREADS: bad = cli_parse_int64(CMD, "--threads", optarg, 1, 64, &a->threads); break;
        case OPT_REPEATS:
            bad = cli_parse_int64(CMD, "--repeats", optarg, 1, MAX_REPEATS, &a->repeats);
            break;
        case OPT_DATA: a->data = optarg; break;
        case OPT_WORKERS: bad = cli_parse_int64(CMD, "--workers", optarg, 1, 64, &a->workers); break;
        case OPT_LOAD: a->load = optarg; break;
        case OPT_JSON: a->json = 1; break;
        default:
            cli_bad_option(CMD, opt, argv, longopts);
            return CLI_EXIT_USAGE;
        }
    }
    return cli_bench_args_end(CMD, bad, argc, argv, a->threads, &a->workers);
}

/* The test split as `sluice eval` reads it: every image, in file order. */
static sl_dataset *test_split(const eval_args *a)
{
    cli_pipeline p;
    sl_dataset *ds = NULL;
    if (!(cli_mnist_splits(a->data) & CLI_SPLIT_TEST)) {
        cli_error(CMD, "%s holds no MNIST test split (t10k-images-idx3-ubyte[.gz])", a->data);
        return NULL;
    }
    cli_pipeline_default(&p, a->data, CLI_KIND_MNIST, SL_MNIST_TEST);
    p.batch = a->batch;
    p.drop_remainder = 0;
    p.shuffle = 0;
    p.source_shuffle = 0;
    if (cli_pipeline_build(CMD, &p, (int)a->workers, &ds) != SL_OK)
        return NULL;
    return ds;
}

static sl_model *make_model(const eval_args *a)
{
    sl_model_options o;
    sl_model *m;
    sl_model_options_init(&o);
    o.network.batch = a->batch;
    o.context.threads = (int)a->threads;
    if (!(m = cli_bench_model_new(CMD, &o)))
        return NULL;
    if (a->load && sl_model_load(m, a->load) < 0) {
        cli_error(CMD, "%s", sl_model_last_error(m));
        sl_model_free(m);
        return NULL;
    }
    return m;
}

int cli_bench_eval_main(int argc, char **argv)
{
    eval_args a;
    sl_dataset *ds;
    sl_model *m;
    sl_metrics metrics;
    double runs[MAX_REPEATS], sorted[MAX_REPEATS], median;
    int rc = parse_args(argc, argv, &a);
    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    cli_blas_warn();
    if (!(ds = test_split(&a)))
        return CLI_EXIT_FAIL;
    if (!(m = make_model(&a))) {
        sl_dataset_free(ds);
        return CLI_EXIT_FAIL;
    }
    /* The first pass loads the IDX files and warms the caches: untimed. */
    for (int64_t r = -1; r < a.repeats; r++) {
        double t0 = cli_now_ms(), s;
        if (sl_model_eval(m, ds, &metrics) < 0) {
            cli_error(CMD, "%s", sl_model_last_error(m));
            sl_model_free(m);
            sl_dataset_free(ds);
            return CLI_EXIT_FAIL;
        }
        s = (cli_now_ms() - t0) / 1e3;
        if (r >= 0)
            runs[r] = (double)metrics.samples / s;
        if (!a.json && r >= 0)
            fprintf(stderr, "pass %" PRId64 "/%" PRId64 ": %.0f images/s\n", r + 1, a.repeats,
                    runs[r]);
    }
    memcpy(sorted, runs, (size_t)a.repeats * sizeof runs[0]);
    median = cli_bench_median(sorted, (size_t)a.repeats);
    if (a.json) {
        printf("{\"inference_images_per_s\": %.1f, \"runs\": [", median);
        for (int64_t r = 0; r < a.repeats; r++)
            printf("%s%.1f", r ? ", " : "", runs[r]);
        printf("], \"images\": %" PRId64 ", \"batch\": %" PRId64 ", \"threads\": %" PRId64
               ", \"workers\": %" PRId64 ", \"cpu_path\": \"%s\", \"blas_core\": \"%s\""
               ", \"accuracy\": %.4f}\n",
               metrics.samples, a.batch, a.threads, a.workers, sl_cpu_path(), sl_blas_core(),
               metrics.accuracy);
    } else {
        printf("LeNet5 inference over %" PRId64 " test images of %s, batch %" PRId64
               ", %" PRId64 " compute thread%s, %" PRId64 " pipeline worker%s, cpu path %s, "
               "OpenBLAS core %s\n",
               metrics.samples, a.data, a.batch, a.threads, a.threads == 1 ? "" : "s",
               a.workers, a.workers == 1 ? "" : "s", sl_cpu_path(), sl_blas_core());
        printf("inference: %.0f images/s (median of %" PRId64 " passes; accuracy %.4f%s)\n",
               median, a.repeats, metrics.accuracy, a.load ? "" : ", untrained weights");
    }
    sl_model_free(m);
    sl_dataset_free(ds);
    return CLI_EXIT_OK;
}
