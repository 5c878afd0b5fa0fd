/* bench_train.c: `sluice bench train`: training throughput of LeNet5 (or an
 * MLP) in samples/s: compute-only (the step over an epoch of the pipeline's
 * batches kept in memory) in GRAPH and PYNATIVE mode, and end to end from
 * the seeds' MNIST pipeline; plus where the GRAPH step's time goes, per
 * op, against OpenBLAS's sgemm and against the machine's peak FMA rate. */
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

enum {
    OPT_MODEL = 256, OPT_BATCH, OPT_THREADS, OPT_BLAS_THREADS, OPT_STEPS, OPT_REPEATS,
    OPT_DATA, OPT_WORKERS, OPT_E2E_STEPS, OPT_NO_E2E, OPT_JSON, OPT_SPIN_US
};

typedef struct bench_args {
    sl_network_kind model;
    int64_t batch, threads, blas_threads, steps, repeats, workers, e2e_steps, spin_us;
    const char *data;
    int no_e2e, json;
} bench_args;

void cli_bench_train_usage(FILE *f)
{
    fputs("Usage: sluice bench train [OPTIONS...]\n"
          "\n"
          "Measures training throughput in samples/s, the median of --repeats runs:\n"
          "  compute, GRAPH     the compiled step run --steps times over real batches:\n"
          "                     the pipeline's first epoch (at most --steps batches)\n"
          "                     kept in memory and cycled, after a warm-up (one\n"
          "                     made-up batch when --no-e2e finds no MNIST at --data)\n"
          "  compute, PYNATIVE  the same, op by op, allocating as it goes\n"
          "  end to end         GRAPH-mode training from the seeds' MNIST pipeline for\n"
          "                     --e2e-steps steps (non-sink: the host feeds every step)\n"
          "Runs of the three take turns, round by round. Then it lists where the GRAPH\n"
          "step's time went, per op and per node, with the GFLOPS of the ops that\n"
          "multiply matrices against OpenBLAS's sgemm and against the peak FMA rate\n"
          "of one thread, measured by a loop of our own on the kernels' vector path.\n"
          "\n"
          "Options:\n"
          "  --model lenet|mlp   network (default lenet)\n"
          "  --batch N           batch size (default 32)\n"
          "  --threads N         executor compute threads (default: the CPUs, at most 4)\n"
          "  --blas-threads N    OpenBLAS threads (default 1)\n"
          "  --steps N           steps per compute-only run (default 2000)\n"
          "  --repeats N         runs of each (default 3)\n"
          "  --data DIR          MNIST folder for end to end (default " CLI_DEFAULT_DATA ")\n"
          "  --workers N         pipeline workers for end to end (default 1 when the\n"
          "                      compute threads fill every CPU, else 2)\n"
          "  --spin-us N         how long a compute thread spins before it sleeps\n"
          "                      (default 20, or 0 when CPUs < threads)\n"
          "  --e2e-steps N       steps per end-to-end run (default 1875: one epoch)\n"
          "  --no-e2e            skip the end-to-end runs\n"
          "  --json              print one JSON object: compute_graph_samples_per_s,\n"
          "                      compute_pynative_samples_per_s, end_to_end_samples_per_s\n"
          "                      (medians), their runs, per_op_ms_per_step,\n"
          "                      sgemm_1024_gflops_per_thread, fma_peak_gflops_per_thread,\n"
          "                      blas_core and per_op_gflops\n"
          "  -h, --help          show this help and exit\n",
          f);
}

static int parse_args(int argc, char **argv, bench_args *a)
{
    static const struct option longopts[] = {
        {"model", required_argument, NULL, OPT_MODEL},
        {"batch", required_argument, NULL, OPT_BATCH},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"blas-threads", required_argument, NULL, OPT_BLAS_THREADS},
        {"steps", required_argument, NULL, OPT_STEPS},
        {"repeats", required_argument, NULL, OPT_REPEATS},
        {"data", required_argument, NULL, OPT_DATA},
        {"workers", required_argument, NULL, OPT_WORKERS},
        {"spin-us", required_argument, NULL, OPT_SPIN_US},
        {"e2e-steps", required_argument, NULL, OPT_E2E_STEPS},
        {"no-e2e", no_argument, NULL, OPT_NO_E2E},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt, bad = 0;

    memset(a, 0, sizeof *a);
    a->model = SL_NETWORK_LENET5;
    a->batch = 32;
    {
        sl_thread_budget b;
        sl_thread_budget_default(&b);
        a->threads = b.compute_threads;
        a->blas_threads = b.blas_threads;
    }
    a->steps = 2000;
    a->repeats = 3;
    a->data = CLI_DEFAULT_DATA;
    a->e2e_steps = 1875;
    a->spin_us = -1;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1 && !bad) {
        switch (opt) {
        case 'h': cli_bench_train_usage(stdout); return -1;
        case OPT_MODEL: bad = cli_parse_model(CMD, optarg, &a->model); break;
        case OPT_BATCH: bad = cli_parse_int64(CMD, "--batch", optarg, 1, 65536, &a->batch); break;
        case OPT_THREADS: bad = cli_parse_int64(CMD, "--threads", optarg, 1, 64, &a->threads); break;
        case OPT_BLAS_THREADS:
            bad = cli_parse_int64(CMD, "--blas-threads", optarg, 1, 64, &a->blas_threads);
            break;
        case OPT_STEPS: bad = cli_parse_int64(CMD, "--steps", optarg, 1, INT64_MAX, &a->steps); break;
        case OPT_REPEATS:
            bad = cli_parse_int64(CMD, "--repeats", optarg, 1, MAX_REPEATS, &a->repeats);
            break;
        case OPT_DATA: a->data = optarg; break;
        case OPT_SPIN_US: bad = cli_parse_int64(CMD, "--spin-us", optarg, 0, 100000, &a->spin_us); break;
        case OPT_WORKERS: bad = cli_parse_int64(CMD, "--workers", optarg, 1, 64, &a->workers); break;
        case OPT_E2E_STEPS:
            bad = cli_parse_int64(CMD, "--e2e-steps", optarg, 1, INT64_MAX, &a->e2e_steps);
            break;
        case OPT_NO_E2E: a->no_e2e = 1; break;
        case OPT_JSON: a->json = 1; break;
        default:
            cli_bad_option(CMD, opt, argv, longopts);
            return CLI_EXIT_USAGE;
        }
    }
    return cli_bench_args_end(CMD, bad, argc, argv, a->threads, &a->workers);
}

static sl_model *make_model(const bench_args *a, sl_mode mode)
{
    sl_model_options o;
    sl_model_options_init(&o);
    o.network.kind = a->model;
    o.network.batch = a->batch;
    o.context.mode = mode;
    o.context.threads = (int)a->threads;
    o.context.blas_threads = (int)a->blas_threads;
    o.compute_spin_ns = a->spin_us < 0 ? -1 : a->spin_us * 1000;
    return cli_bench_model_new(CMD, &o);
}

static double median(const double *v, size_t n)
{
    double s[MAX_REPEATS];
    memcpy(s, v, n * sizeof *s);
    return cli_bench_median(s, n);
}

/* Compute-only steps: over the real batches, or one made-up batch. */
static int compute(sl_model *m, const sl_bench_batches *b, int64_t steps, double *sps)
{
    return b ? sl_model_bench_steps_on(m, b, steps, sps) : sl_model_bench_steps(m, steps, sps);
}

static int end_to_end(const bench_args *a, sl_model *m, sl_dataset *ds, int64_t steps,
                      double *samples_per_s)
{
    cli_step_limit limit;
    sl_callback cb = cli_step_limit_callback(&limit, m, steps);
    sl_callback *list[1] = {&cb};
    double t0, ms;
    int rc;
    t0 = cli_now_ms();
    rc = sl_model_train(m, 1000000, ds, list, 1);
    ms = cli_now_ms() - t0;
    if (rc < 0) {
        cli_error(CMD, "end to end: %s", cli_lib_message(sl_model_last_error(m), rc));
        return rc;
    }
    *samples_per_s = (double)(sl_model_global_step(m) - limit.start) * (double)a->batch /
                     (ms / 1e3);
    return SL_OK;
}

/* Per-op totals of the GRAPH step's node times. */
#define MAX_OPS 32
typedef struct op_time {
    const char *op;
    double ms;
    double flops;  /* per step, summed over the op's nodes (0: not counted) */
    int nodes;
} op_time;

static size_t collect_ops(sl_step *s, op_time *ops)
{
    size_t nops = 0;
    for (size_t i = 0; i < sl_step_num_nodes(s); i++) {
        const char *op;
        double ms;
        size_t k;
        sl_step_node_time(s, i, NULL, &op, &ms);
        if (strcmp(op, "input") == 0 || strcmp(op, "param") == 0 || strcmp(op, "reshape") == 0)
            continue;
        for (k = 0; k < nops && strcmp(ops[k].op, op) != 0; k++)
            ;
        if (k == nops) {
            if (nops == MAX_OPS)
                continue;
            ops[nops].op = op;
            ops[nops].ms = 0.0;
            ops[nops].flops = 0.0;
            ops[nops].nodes = 0;
            nops++;
        }
        ops[k].ms += ms;
        ops[k].flops += sl_step_node_flops(s, i);
        ops[k].nodes++;
    }
    for (size_t i = 1; i < nops; i++) /* largest first */
        for (size_t j = i; j > 0 && ops[j].ms > ops[j - 1].ms; j--) {
            op_time t = ops[j];
            ops[j] = ops[j - 1];
            ops[j - 1] = t;
        }
    return nops;
}

/* The op's floating-point rate over the timed steps, all threads. */
static double op_gflops(const op_time *t, int64_t steps)
{
    return t->ms > 0.0 ? t->flops * (double)steps / (t->ms * 1e6) : 0.0;
}

static void print_runs(FILE *f, const char *key, const double *v, size_t n)
{
    fprintf(f, ", \"%s\": [", key);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%.1f", i ? ", " : "", v[i]);
    fprintf(f, "]");
}

int cli_bench_train_main(int argc, char **argv)
{
    bench_args a;
    sl_model *graph = NULL, *pynative = NULL;
    sl_dataset *ds = NULL;
    double g[MAX_REPEATS], p[MAX_REPEATS], e[MAX_REPEATS], sg[MAX_REPEATS], warm;
    double sgemm = 0.0; /* GFLOPS of a 1024^3 sgemm on one thread (0: not measured) */
    double pk[MAX_REPEATS], peak; /* our FMA loop's GFLOPS on one thread */
    sl_bench_batches *batches = NULL;
    int64_t nbatches = 0; /* real batches the compute runs cycle (0: one made-up batch) */
    int64_t timed_steps = 0;
    op_time ops[MAX_OPS];
    size_t nops;
    sl_thread_budget budget;
    char budget_line[256];
    sl_step *step;
    int rc = parse_args(argc, argv, &a), exit_code = CLI_EXIT_FAIL;

    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    cli_blas_warn();
    /* The pipeline feeds the compute runs their batches too; only with
     * --no-e2e may it be missing (they then step one made-up batch). */
    if (!a.no_e2e || (cli_mnist_splits(a.data) & CLI_SPLIT_TRAIN)) {
        cli_pipeline pl;
        cli_kind kind;
        if (cli_detect_kind(CMD, a.data, &kind) != 0)
            return CLI_EXIT_FAIL;
        if (!(cli_mnist_splits(a.data) & CLI_SPLIT_TRAIN)) {
            cli_error(CMD, "%s holds no MNIST train split; give --data or --no-e2e", a.data);
            return CLI_EXIT_FAIL;
        }
        cli_pipeline_default(&pl, a.data, CLI_KIND_MNIST, SL_MNIST_TRAIN);
        pl.batch = a.batch;
        if (cli_pipeline_build(CMD, &pl, (int)a.workers, &ds) != SL_OK)
            return CLI_EXIT_FAIL;
    }
    graph = make_model(&a, SL_GRAPH_MODE);
    pynative = graph ? make_model(&a, SL_PYNATIVE_MODE) : NULL;
    if (!graph || !pynative)
        goto out;
    step = sl_model_train_step(graph);
    if (ds) {
        if (sl_bench_batches_new(&batches, graph, ds, a.steps) < 0) {
            cli_error(CMD, "compute: %s", sl_model_last_error(graph));
            goto out;
        }
        nbatches = sl_bench_batches_count(batches);
    }
    /* Warm-ups, untimed: caches, OpenBLAS's buffers, the pipeline's one-time
     * load of the MNIST pixels. No longer than the timed runs: a short run
     * (a test's, under a sanitizer where a step takes 100 ms) warms briefly. */
    if (compute(graph, batches, a.steps < 50 ? a.steps : 50, &warm) < 0 ||
        compute(pynative, batches, a.steps < 20 ? a.steps : 20, &warm) < 0) {
        cli_error(CMD, "%s",
                  sl_model_last_error(sl_model_last_error(graph)[0] ? graph : pynative));
        goto out;
    }
    if (ds && !a.no_e2e &&
        end_to_end(&a, graph, ds, a.e2e_steps < 20 ? a.e2e_steps : 20, &warm) < 0)
        goto out;
    sl_step_reset_times(step);
    for (int64_t r = 0; r < a.repeats; r++) {
        if (!a.json)
            fprintf(stderr, "round %" PRId64 "/%" PRId64 "...\n", r + 1, a.repeats);
        if (compute(graph, batches, a.steps, &g[r]) < 0) {
            cli_error(CMD, "%s", sl_model_last_error(graph));
            goto out;
        }
        timed_steps += a.steps;
        if (compute(pynative, batches, a.steps, &p[r]) < 0) {
            cli_error(CMD, "%s", sl_model_last_error(pynative));
            goto out;
        }
        if (ds && !a.no_e2e && end_to_end(&a, graph, ds, a.e2e_steps, &e[r]) < 0)
            goto out;
        /* The yardstick, in the same rounds: OpenBLAS on one thread (only
         * while the models hold it at one thread, as they do by default). */
        if (a.blas_threads == 1 && sl_blas_sgemm_gflops(1024, 3, &sg[r]) != SL_OK)
            sg[r] = 0.0;
        /* and the machine's own peak, which no library's view can skew */
        if (sl_cpu_fma_gflops(&pk[r]) != SL_OK)
            pk[r] = 0.0;
    }
    peak = median(pk, (size_t)a.repeats);
    if (a.blas_threads == 1)
        sgemm = median(sg, (size_t)a.repeats);
    /* Node times accumulate over compute and end-to-end runs alike; scale
     * by all the steps the GRAPH model ran since the reset. */
    timed_steps += ds && !a.no_e2e ? a.repeats * a.e2e_steps : 0;
    nops = collect_ops(step, ops);
    budget.cpus = sl_cpus_available();
    budget.compute_threads = (int)a.threads;
    budget.blas_threads = (int)a.blas_threads;
    budget.pipeline_workers = ds && !a.no_e2e ? (int)a.workers : 0;
    budget.transfer_threads = 0;
    sl_thread_budget_format(&budget, budget_line, sizeof budget_line);
    if (a.json) {
        printf("{\"model\": \"%s\", \"batch\": %" PRId64 ", \"threads\": %" PRId64
               ", \"blas_threads\": %" PRId64 ", \"steps\": %" PRId64 ", \"repeats\": %" PRId64,
               sl_network_kind_name(a.model), a.batch, a.threads, a.blas_threads, a.steps,
               a.repeats);
        printf(", \"cpus\": %d, \"thread_budget\": \"%s\"", budget.cpus, budget_line);
        printf(", \"compute_batches\": %" PRId64 ", \"cpu_path\": \"%s\", \"blas_core\": \"%s\"",
               nbatches, sl_cpu_path(), sl_blas_core());
        printf(", \"compute_graph_samples_per_s\": %.1f", median(g, (size_t)a.repeats));
        printf(", \"compute_pynative_samples_per_s\": %.1f", median(p, (size_t)a.repeats));
        if (ds && !a.no_e2e)
            printf(", \"end_to_end_samples_per_s\": %.1f, \"workers\": %" PRId64,
                   median(e, (size_t)a.repeats), a.workers);
        print_runs(stdout, "compute_graph_runs", g, (size_t)a.repeats);
        print_runs(stdout, "compute_pynative_runs", p, (size_t)a.repeats);
        if (ds && !a.no_e2e)
            print_runs(stdout, "end_to_end_runs", e, (size_t)a.repeats);
        printf(", \"graph_arena_bytes\": %zu, \"pynative_peak_bytes\": %zu",
               sl_step_memory_bytes(step),
               sl_step_memory_bytes(sl_model_train_step(pynative)));
        printf(", \"per_op_ms_per_step\": {");
        for (size_t i = 0; i < nops; i++)
            printf("%s\"%s\": %.4f", i ? ", " : "", ops[i].op, ops[i].ms / (double)timed_steps);
        printf("}, \"sgemm_1024_gflops_per_thread\": %.1f", sgemm);
        if (peak > 0.0) /* the loop failed: no figure, rather than a false 0 */
            printf(", \"fma_peak_gflops_per_thread\": %.1f", peak);
        else
            printf(", \"fma_peak_gflops_per_thread\": null");
        printf(", \"per_op_gflops\": {");
        for (size_t i = 0, n = 0; i < nops; i++)
            if (ops[i].flops > 0.0)
                printf("%s\"%s\": %.1f", n++ ? ", " : "", ops[i].op,
                       op_gflops(&ops[i], timed_steps));
        printf("}}\n");
    } else {
        double total = 0.0;
        printf("%s, batch %" PRId64 ", %" PRId64 " compute thread%s, %" PRId64
               " OpenBLAS; medians of %" PRId64 " runs\n",
               sl_network_kind_name(a.model), a.batch, a.threads, a.threads == 1 ? "" : "s",
               a.blas_threads, a.repeats);
        printf("thread budget: %s\n", budget_line);
        printf("cpu path: %s%s\n", sl_cpu_path(),
               getenv("SLUICE_CPU") ? " (capped by SLUICE_CPU)" : "");
        printf("openblas core: %s\n", sl_blas_core());
        printf("  compute, GRAPH     %10.0f samples/s  (%" PRId64 " steps per run, ", 
               median(g, (size_t)a.repeats), a.steps);
        if (nbatches > 0)
            printf("over %" PRId64 " real batches cycled)\n", nbatches);
        else
            printf("on one made-up batch: no MNIST at %s)\n", a.data);
        printf("  compute, PYNATIVE  %10.0f samples/s\n", median(p, (size_t)a.repeats));
        if (ds && !a.no_e2e)
            printf("  end to end         %10.0f samples/s  (%" PRId64 " steps, %" PRId64
                   " pipeline worker%s)\n",
                   median(e, (size_t)a.repeats), a.e2e_steps, a.workers,
                   a.workers == 1 ? "" : "s");
        printf("  memory: GRAPH arena %.2f MiB, PYNATIVE peak %.2f MiB\n",
               (double)sl_step_memory_bytes(step) / 1048576.0,
               (double)sl_step_memory_bytes(sl_model_train_step(pynative)) / 1048576.0);
        for (size_t i = 0; i < nops; i++)
            total += ops[i].ms;
        printf("where a GRAPH step's time goes (ms per step, all runs; GFLOPS of the ops that\n"
               "multiply matrices, and per compute thread against the peak FMA rate of one\n"
               "thread, %.1f GFLOPS by our own loop on the %s path, and a 1024^3 sgemm on one\n"
               "OpenBLAS thread: ",
               peak, sl_cpu_path());
        if (sgemm > 0.0)
            printf("%.1f GFLOPS, measured in the same rounds):\n", sgemm);
        else
            printf("not measured with --blas-threads above 1):\n");
        for (size_t i = 0; i < nops; i++) {
            printf("  %-28s %8.4f  %5.1f%%  (%d node%s)", ops[i].op,
                   ops[i].ms / (double)timed_steps, 100.0 * ops[i].ms / total, ops[i].nodes,
                   ops[i].nodes == 1 ? "" : "s");
            if (ops[i].flops > 0.0) {
                double gf = op_gflops(&ops[i], timed_steps);
                printf("%*s%6.1f GFLOPS", ops[i].nodes == 1 ? 1 : 0, "", gf);
                if (peak > 0.0)
                    printf(", %3.0f%% of peak", 100.0 * gf / (double)a.threads / peak);
                if (sgemm > 0.0)
                    printf(", %3.0f%% of sgemm per thread", 100.0 * gf / (double)a.threads / sgemm);
            }
            printf("\n");
        }
        printf("  %-28s %8.4f\n", "total", total / (double)timed_steps);
    }
    exit_code = CLI_EXIT_OK;
out:
    sl_bench_batches_free(batches);
    sl_model_free(graph);
    sl_model_free(pynative);
    sl_dataset_free(ds);
    return exit_code;
}
