/* bench_devices.c: `sluice bench devices`: data parallel training on
 * several devices against one device at the same global batch, end to end
 * in sink mode from the seeds' MNIST pipeline, and where each device's step
 * time goes (compute, fusing gradients, the allreduce). */
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
#define MAX_DEVICES 8

enum { OPT_DATA = 256, OPT_DEVICES, OPT_BATCH, OPT_THREADS, OPT_WORKERS, OPT_STEPS,
       OPT_REPEATS, OPT_JSON, OPT_SIM_NETWORK };

typedef struct bench_args {
    const char *data, *devices;
    char first[32];          /* the first device of the list */
    int ndevices;
    int64_t batch, threads, workers, steps, repeats;
    int json;
    sl_train_options net; /* --sim-network, in its sim_network_* */
} bench_args;

/* One configuration's runs. */
typedef struct config {
    const char *name;        /* "one", "N devices" */
    const char *devices;     /* NULL: the first device alone */
    int ndevices;
    int64_t batch, threads;  /* per device */
    double sps[MAX_REPEATS]; /* samples/s of each run */
    sl_parallel_stats stats[MAX_REPEATS];
} config;

void cli_bench_devices_usage(FILE *f)
{
    fputs("Usage: sluice bench devices [OPTIONS...]\n"
          "\n"
          "Data parallel training on several devices against one device, at the same\n"
          "global batch: each run trains a fresh LeNet5 from the seeds' MNIST pipeline\n"
          "in sink mode for --steps global steps.\n"
          "  one device  the first of --devices, --threads compute threads, batch --batch\n"
          "  N devices   every device of --devices, --threads / N compute threads each,\n"
          "              batch --batch / N each; gradients averaged every step\n"
          "Runs of the two take turns, the order alternating round by round; the\n"
          "figures are medians over --repeats rounds. For N devices it also says where\n"
          "a device's step time went: compute (forward, backward, update), fusing the\n"
          "gradients into one buffer and back, and the allreduce (the reduction and\n"
          "the wait for the slower device).\n"
          "\n"
          "Options:\n"
          "  --data DIR          MNIST folder (default " CLI_DEFAULT_DATA ")\n"
          "  --devices LIST      devices of one kind (default cpu:0,cpu:1)\n"
          "  --batch N           global batch (default 64; a multiple of the devices)\n"
          "  --threads N         compute threads in all (default: the CPUs, at most 4)\n"
          "  --workers N         pipeline workers (default 1)\n"
          "  --steps N           global steps per run (default 600)\n"
          "  --repeats N         rounds (default 5)\n"
          "  --sim-network BW,LAT  a modelled network between the devices (Gbit/s,\n"
          "                      microseconds): each allreduce takes at least a ring\n"
          "                      allreduce's time on it; the prediction is printed beside\n"
          "  --json              print one JSON object: the configurations' samples/s\n"
          "                      (medians and runs), their ratio, and the per-step\n"
          "                      compute, fuse and allreduce ms of N devices\n"
          "  -h, --help          show this help and exit\n",
          f);
}

static int parse_args(int argc, char **argv, bench_args *a)
{
    static const struct option longopts[] = {
        {"data", required_argument, NULL, OPT_DATA},
        {"devices", required_argument, NULL, OPT_DEVICES},
        {"batch", required_argument, NULL, OPT_BATCH},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"workers", required_argument, NULL, OPT_WORKERS},
        {"steps", required_argument, NULL, OPT_STEPS},
        {"repeats", required_argument, NULL, OPT_REPEATS},
        {"json", no_argument, NULL, OPT_JSON},
        {"sim-network", required_argument, NULL, OPT_SIM_NETWORK},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    sl_thread_budget b;
    size_t len;
    int opt, bad = 0;

    memset(a, 0, sizeof *a);
    sl_thread_budget_default(&b);
    sl_train_options_init(&a->net);
    a->data = CLI_DEFAULT_DATA;
    a->devices = "cpu:0,cpu:1";
    a->batch = 64;
    a->threads = b.compute_threads;
    a->workers = 1;
    a->steps = 600;
    a->repeats = 5;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1 && !bad) {
        switch (opt) {
        case 'h': cli_bench_devices_usage(stdout); return -1;
        case OPT_DATA: a->data = optarg; break;
        case OPT_DEVICES: a->devices = optarg; break;
        case OPT_BATCH: bad = cli_parse_int64(CMD, "--batch", optarg, 1, 65536, &a->batch); break;
        case OPT_THREADS: bad = cli_parse_int64(CMD, "--threads", optarg, 1, 64, &a->threads); break;
        case OPT_WORKERS: bad = cli_parse_int64(CMD, "--workers", optarg, 1, 64, &a->workers); break;
        case OPT_STEPS: bad = cli_parse_int64(CMD, "--steps", optarg, 1, INT64_C(1000000000), &a->steps); break;
        case OPT_REPEATS:
            bad = cli_parse_int64(CMD, "--repeats", optarg, 1, MAX_REPEATS, &a->repeats);
            break;
        case OPT_JSON: a->json = 1; break;
        case OPT_SIM_NETWORK: bad = cli_parse_sim_network(CMD, optarg, &a->net) != 0; break;
        default:
            cli_bad_option(CMD, opt, argv, longopts);
            return CLI_EXIT_USAGE;
        }
    }
    if (cli_bench_args_end(CMD, bad, argc, argv, a->threads, &a->workers) != CLI_EXIT_OK)
        return CLI_EXIT_USAGE;
    /* The list itself is checked by the library; here only what this
     * benchmark needs of it: two devices or more, and a batch they share. */
    len = strcspn(a->devices, ",");
    if (len == 0 || len >= sizeof a->first || !strchr(a->devices, ',')) {
        cli_error(CMD, "--devices '%s': give two devices or more of one kind (cpu:0,cpu:1)",
                  a->devices);
        return CLI_EXIT_USAGE;
    }
    memcpy(a->first, a->devices, len);
    a->first[len] = '\0';
    a->ndevices = 1;
    for (const char *p = a->devices; (p = strchr(p, ',')); p++)
        a->ndevices++;
    if (a->ndevices > MAX_DEVICES || a->batch % a->ndevices != 0) {
        cli_error(CMD, "--batch %" PRId64 " does not split evenly among the %d devices of '%s'",
                  a->batch, a->ndevices, a->devices);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* One run of c: a fresh model trained --steps global steps; samples/s. */
static int run_once(const bench_args *a, config *c, int round)
{
    sl_model_options mo;
    sl_train_options to;
    cli_pipeline p;
    sl_dataset *ds = NULL;
    sl_model *m;
    char kind[8];
    int id, rc;
    double t0, ms;

    if (sscanf(a->first, "%7[a-z]:%d", kind, &id) != 2) {
        cli_error(CMD, "--devices '%s': '%s' is not cpu:N or sim:N", a->devices, a->first);
        return -1;
    }
    cli_pipeline_default(&p, a->data, CLI_KIND_MNIST, SL_MNIST_TRAIN);
    p.batch = c->batch;
    if (cli_pipeline_build(CMD, &p, (int)a->workers, &ds) < 0)
        return -1;
    sl_model_options_init(&mo);
    mo.network.batch = c->batch;
    mo.context.threads = (int)c->threads;
    mo.context.device_target = strcmp(kind, "sim") == 0 ? "SIM" : "CPU";
    mo.context.device_id = id;
    m = cli_bench_model_new(CMD, &mo);
    if (!m) {
        sl_dataset_free(ds);
        return -1;
    }
    sl_train_options_init(&to);
    to.dataset_sink_mode = 1;
    to.max_steps = a->steps;
    to.devices = c->devices;
    if (c->devices) {
        to.sim_network_gbit_s = a->net.sim_network_gbit_s;
        to.sim_network_latency_us = a->net.sim_network_latency_us;
    }
    t0 = cli_now_ms();
    rc = sl_model_train_opts(m, INT64_C(1000000), ds, NULL, 0, &to);
    ms = cli_now_ms() - t0;
    if (rc == SL_OK && sl_model_global_step(m) != a->steps) {
        cli_error(CMD, "%s: ran %" PRId64 " steps of %" PRId64, c->name,
                  sl_model_global_step(m), a->steps);
        rc = SL_ESTATE;
    } else if (rc < 0) {
        cli_error(CMD, "%s: %s", c->name, sl_model_last_error(m));
    }
    if (rc == SL_OK) {
        c->sps[round] = (double)a->steps * (double)(c->batch * c->ndevices) / (ms / 1e3);
        sl_model_get_parallel_stats(m, &c->stats[round]);
    }
    sl_model_free(m);
    sl_dataset_free(ds);
    return rc < 0 ? -1 : 0;
}

/* The median over rounds of a per-step figure of c's stats. */
static double stat_ms_per_step(const config *c, size_t n, int which)
{
    double v[MAX_REPEATS];
    for (size_t i = 0; i < n; i++) {
        const sl_parallel_stats *s = &c->stats[i];
        double x = which == 0 ? s->compute_ms : which == 1 ? s->fuse_ms
                 : which == 2 ? s->allreduce_ms : s->reduce_ms;
        v[i] = s->steps > 0 ? x / (double)s->steps : 0;
    }
    return cli_bench_median_of(v, n);
}

int cli_bench_devices_main(int argc, char **argv)
{
    bench_args a;
    config c[2];
    char many[48];
    size_t n;
    double one, par, compute, fuse, reduce, work, step;
    int rc = parse_args(argc, argv, &a);
    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    cli_blas_warn();
    snprintf(many, sizeof many, "%d devices", a.ndevices);
    memset(c, 0, sizeof c);
    c[0].name = "one device";
    c[0].ndevices = 1;
    c[0].batch = a.batch;
    c[0].threads = a.threads;
    c[1].name = many;
    c[1].devices = a.devices;
    c[1].ndevices = a.ndevices;
    c[1].batch = a.batch / a.ndevices;
    c[1].threads = a.threads / a.ndevices > 0 ? a.threads / a.ndevices : 1;
    if (!a.json) {
        printf("bench devices: LeNet5 on %s, sink mode, %" PRId64 " global steps a run, "
               "global batch %" PRId64 ", %d CPUs, %" PRId64 " pipeline worker%s\n",
               a.data, a.steps, a.batch, sl_cpus_available(), a.workers,
               a.workers == 1 ? "" : "s");
        printf("  one device: %s, %" PRId64 " compute thread%s, batch %" PRId64 "\n", a.first,
               c[0].threads, c[0].threads == 1 ? "" : "s", c[0].batch);
        printf("  %s: %s, %" PRId64 " compute thread%s each, batch %" PRId64 " each\n", many,
               a.devices, c[1].threads, c[1].threads == 1 ? "" : "s", c[1].batch);
        fflush(stdout);
    }
    n = (size_t)a.repeats;
    for (size_t r = 0; r < n; r++) {
        for (int k = 0; k < 2; k++) {
            config *cfg = &c[(r % 2) ^ (size_t)k]; /* alternate the order */
            if (run_once(&a, cfg, (int)r) < 0)
                return CLI_EXIT_FAIL;
        }
        if (!a.json) {
            fprintf(stderr, "  round %zu/%zu: one device %.0f, %s %.0f samples/s\n", r + 1, n,
                    c[0].sps[r], many, c[1].sps[r]);
        }
    }
    one = cli_bench_median_of(c[0].sps, n);
    par = cli_bench_median_of(c[1].sps, n);
    compute = stat_ms_per_step(&c[1], n, 0);
    fuse = stat_ms_per_step(&c[1], n, 1);
    reduce = stat_ms_per_step(&c[1], n, 2);
    work = stat_ms_per_step(&c[1], n, 3);
    step = compute + fuse + reduce;
    if (a.json) {
        printf("{\"devices\": ");
        cli_json_string(stdout, a.devices);
        printf(", \"global_batch\": %" PRId64 ", \"threads\": %" PRId64 ", \"workers\": %" PRId64
               ", \"steps\": %" PRId64 ", \"cpus\": %d, \"one_device_samples_per_s\": %.1f"
               ", \"one_device_runs\": ",
               a.batch, a.threads, a.workers, a.steps, sl_cpus_available(), one);
        cli_bench_json_runs(stdout, c[0].sps, n);
        printf(", \"devices_samples_per_s\": %.1f, \"devices_runs\": ", par);
        cli_bench_json_runs(stdout, c[1].sps, n);
        printf(", \"ratio\": %.4f, \"compute_ms_per_step\": %.4f, \"fuse_ms_per_step\": %.4f"
               ", \"allreduce_ms_per_step\": %.4f, \"reduce_work_ms_per_step\": %.4f"
               ", \"allreduce_bytes\": %" PRId64 ", \"sim_network_gbit_s\": %g"
               ", \"sim_network_latency_us\": %g}\n",
               one > 0 ? par / one : 0.0, compute, fuse, reduce, work,
               c[1].stats[0].allreduce_floats * 4, a.net.sim_network_gbit_s,
               a.net.sim_network_latency_us);
        return CLI_EXIT_OK;
    }
    printf("one device:  %.0f samples/s (median of %zu)\n", one, n);
    printf("%s: %.0f samples/s (median of %zu): %.2fx one device\n", many, par, n,
           one > 0 ? par / one : 0.0);
    if (a.net.sim_network_gbit_s > 0) {
        /* the ring's cost, as the communicator models it (comm.h) */
        double bytes = (double)c[1].stats[0].allreduce_floats * 4.0, nd = a.ndevices;
        double model = 2.0 * (nd - 1) / nd * bytes * 8.0 / (a.net.sim_network_gbit_s * 1e9) *
                           1e3 +
                       2.0 * (nd - 1) * a.net.sim_network_latency_us / 1e3;
        printf("modelled network %g Gbit/s, %g us: a ring allreduce of %.0f bytes over %d "
               "devices takes %.3f ms; measured allreduce %.3f ms a step\n",
               a.net.sim_network_gbit_s, a.net.sim_network_latency_us, bytes, a.ndevices,
               model, reduce);
    }
    if (step > 0)
        printf("a device's step in %s: compute %.3f ms, fusing gradients %.3f ms, allreduce "
               "%.3f ms (%.1f%% of the step): summing and copying %.3f ms (%.1f%%), the rest "
               "waiting for the slower device\n",
               many, compute, fuse, reduce, 100.0 * reduce / step, work,
               100.0 * work / step);
    return CLI_EXIT_OK;
}
