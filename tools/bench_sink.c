/* bench_sink.c: `sluice bench sink`: the same LeNet trained for the same
 * number of steps without data sinking, with it (sink_size -1 and 1000),
 * compute-only (one batch reused) and data-only (the pipeline drained), on
 * each device asked for; one table, and the overlap efficiency:
 * max(data-only time, compute-only time) / sink time. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"
#include "bench_util.h"
#include "cli.h"
#include "cli_autotune.h"
#include "cli_profile.h"
#include "cli_stages.h"

#define CMD "bench"
#define MAX_REPEATS CLI_BENCH_MAX_REPEATS
#define MAX_DEVICES 4

enum {
    OPT_STEPS = 256, OPT_REPEATS, OPT_DATA, OPT_WORKERS, OPT_THREADS, OPT_DEVICES,
    OPT_QUEUE_CAPACITY, OPT_TRANSFER, OPT_JSON, OPT_PROFILE, OPT_AUTOTUNE
};

/* The runs of one device, in table order. */
enum { RUN_NONSINK, RUN_SINK_FULL, RUN_SINK_1000, RUN_COMPUTE, RUN_DATA, NRUNS };
static const char *const run_names[NRUNS] = {"nonsink", "sink_full", "sink_1000",
                                             "compute_only", "data_only"};
static const char *const run_titles[NRUNS] = {"non-sink", "sink, sink_size -1",
                                              "sink, sink_size 1000", "compute only",
                                              "data only"};

typedef struct bench_args {
    int64_t steps, repeats, workers, threads, queue_capacity;
    sl_transfer_mode transfer;
    const char *data;
    const char *devices[MAX_DEVICES];
    size_t ndevices;
    char devices_buf[128];
    int json;
    const char *profile;       /* --profile DIR */
    sl_profiler *profiler;     /* the last round's first "sink_full" run records here */
    int autotune;              /* --autotune: every training run tunes its pipeline */
    int first_round;           /* the round running is the first timed one */
} bench_args;

/* One run's figures. */
typedef struct run_result {
    double ms;                 /* wall time */
    int64_t steps;
    uint64_t interactions;     /* host<->device, from the device's counters */
    double getnext_wait_ms, channel_full_ms;
} run_result;

/* Each stage of the last round's "sink, sink_size -1" run, per device,
 * and what --autotune did in it. */
static sl_stage_stats last_stages[MAX_DEVICES][CLI_MAX_STAGES];
static size_t last_nstages[MAX_DEVICES];
static cli_autotune last_tune[MAX_DEVICES];

void cli_bench_sink_usage(FILE *f)
{
    fputs("Usage: sluice bench sink [OPTIONS...]\n"
          "\n"
          "Trains LeNet5 on the seeds' MNIST pipeline for --steps steps in each of:\n"
          "  non-sink              the host feeds every step (one round trip per step)\n"
          "  sink, sink_size -1    data sinking, one return per epoch\n"
          "  sink, sink_size 1000  data sinking, one return per 1000 steps\n"
          "  compute only          the step on one batch reused: no pipeline\n"
          "  data only             the pipeline drained: no step\n"
          "on each device (cpu:0, and sim:0, a model of an accelerator across a PCIe\n"
          "4.0 x16 bus). Runs take turns, round by round; the table gives medians:\n"
          "samples/s, ms per step, host<->device interactions, the time GetNext waited\n"
          "for a batch and the time the pipeline was blocked on a full channel\n"
          "(summed over its last stage's threads: 2 workers blocked for 1 s count 2 s),\n"
          "and the overlap efficiency max(data-only, compute-only) / sink time (1 when\n"
          "preprocessing hides entirely behind computation).\n"
          "\n"
          "Options:\n"
          "  --steps N           steps per run (default 1875: one epoch)\n"
          "  --repeats N         rounds (default 3)\n"
          "  --devices LIST      comma list (default cpu:0,sim:0)\n"
          "  --data DIR          MNIST folder (default " CLI_DEFAULT_DATA ")\n"
          "  --workers N         pipeline workers per map (default 1 when the\n"
          "                      compute threads fill every CPU, else 2)\n"
          "  --threads N         executor compute threads (default: the CPUs, at most 4)\n"
          "  --queue-capacity N  device queue slots (default 4)\n"
          "  --transfer MODE     thread, inline (cpu only) or auto (default: inline on\n"
          "                      cpu when the compute threads fill the CPUs, else the\n"
          "                      thread); see sluice train --help\n"
          "  --autotune          every training run tunes its pipeline as it runs,\n"
          "                      starting from --workers (map workers, up to the CPUs;\n"
          "                      queues; the device queue from --queue-capacity): the\n"
          "                      first round's \"sink, sink_size -1\" runs print what\n"
          "                      they change and why, the last round's are reported\n"
          "  --profile DIR       write DIR/trace.json: a timeline (Chrome trace, for\n"
          "                      Perfetto or chrome://tracing) of the last round's\n"
          "                      \"sink, sink_size -1\" run on the first device\n"
          "  --json              one JSON object: runs (name, device, samples_per_s,\n"
          "                      ms_per_step, interactions, ...) and overlap_efficiency\n"
          "  -h, --help          show this help and exit\n",
          f);
}

static int parse_devices(bench_args *a, const char *list)
{
    char *save = NULL, *tok;
    snprintf(a->devices_buf, sizeof a->devices_buf, "%s", list);
    a->ndevices = 0;
    for (tok = strtok_r(a->devices_buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char kind[8];
        int id, end = 0;
        if (sscanf(tok, "%7[a-z]:%d%n", kind, &id, &end) != 2 || tok[end] != '\0' ||
            (strcmp(kind, "cpu") != 0 && strcmp(kind, "sim") != 0) || id < 0 || id > 63) {
            cli_error(CMD, "--devices: '%s' is not cpu:N or sim:N", tok);
            return -1;
        }
        if (a->ndevices == MAX_DEVICES) {
            cli_error(CMD, "--devices: at most %d", MAX_DEVICES);
            return -1;
        }
        a->devices[a->ndevices++] = tok;
    }
    if (a->ndevices == 0) {
        cli_error(CMD, "--devices: give at least one device");
        return -1;
    }
    return 0;
}

static int parse_args(int argc, char **argv, bench_args *a)
{
    static const struct option longopts[] = {
        {"steps", required_argument, NULL, OPT_STEPS},
        {"repeats", required_argument, NULL, OPT_REPEATS},
        {"data", required_argument, NULL, OPT_DATA},
        {"workers", required_argument, NULL, OPT_WORKERS},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"devices", required_argument, NULL, OPT_DEVICES},
        {"queue-capacity", required_argument, NULL, OPT_QUEUE_CAPACITY},
        {"transfer", required_argument, NULL, OPT_TRANSFER},
        {"json", no_argument, NULL, OPT_JSON},
        {"profile", required_argument, NULL, OPT_PROFILE},
        {"autotune", no_argument, NULL, OPT_AUTOTUNE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    sl_thread_budget b;
    int opt, bad = 0;

    memset(a, 0, sizeof *a);
    sl_thread_budget_default(&b);
    a->steps = 1875;
    a->repeats = 3;
    a->threads = b.compute_threads;
    a->queue_capacity = 4;
    a->data = CLI_DEFAULT_DATA;
    if (parse_devices(a, "cpu:0,sim:0") != 0)
        return CLI_EXIT_USAGE;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1 && !bad) {
        switch (opt) {
        case 'h': cli_bench_sink_usage(stdout); return -1;
        case OPT_STEPS: bad = cli_parse_int64(CMD, "--steps", optarg, 1, INT64_MAX, &a->steps); break;
        case OPT_REPEATS:
            bad = cli_parse_int64(CMD, "--repeats", optarg, 1, MAX_REPEATS, &a->repeats);
            break;
        case OPT_DATA: a->data = optarg; break;
        case OPT_WORKERS: bad = cli_parse_int64(CMD, "--workers", optarg, 1, 64, &a->workers); break;
        case OPT_THREADS: bad = cli_parse_int64(CMD, "--threads", optarg, 1, 64, &a->threads); break;
        case OPT_DEVICES: bad = parse_devices(a, optarg); break;
        case OPT_QUEUE_CAPACITY:
            bad = cli_parse_int64(CMD, "--queue-capacity", optarg, 1, 4096, &a->queue_capacity);
            break;
        case OPT_TRANSFER: bad = cli_parse_transfer(CMD, optarg, &a->transfer); break;
        case OPT_JSON: a->json = 1; break;
        case OPT_PROFILE: a->profile = optarg; break;
        case OPT_AUTOTUNE: a->autotune = 1; break;
        default:
            cli_bad_option(CMD, opt, argv, longopts);
            return CLI_EXIT_USAGE;
        }
    }
    return cli_bench_args_end(CMD, bad, argc, argv, a->threads, &a->workers);
}

static sl_model *make_model(const bench_args *a, const char *device)
{
    sl_model_options o;
    int id = 0;
    sl_model_options_init(&o);
    o.context.threads = (int)a->threads;
    o.context.device_target = strncmp(device, "sim", 3) == 0 ? "SIM" : "CPU";
    sscanf(device + 4, "%d", &id);
    o.context.device_id = id;
    return cli_bench_model_new(CMD, &o);
}

/* Trains `steps` steps in the run's mode and fills r. */
static int run_training(const bench_args *a, sl_model *m, size_t device, sl_dataset *ds,
                        int run, run_result *r)
{
    sl_train_options o;
    sl_device_stats d0, d1;
    sl_sink_stats ss;
    int64_t per_epoch = 1, start = sl_model_global_step(m), epochs;
    double t0;
    int rc;

    sl_train_options_init(&o);
    o.dataset_sink_mode = run != RUN_NONSINK;
    o.sink_size = run == RUN_SINK_1000 ? 1000 : -1;
    o.queue_capacity = a->queue_capacity;
    o.transfer = (int32_t)a->transfer;
    o.max_steps = a->steps;
    o.profiler = run == RUN_SINK_FULL ? a->profiler : NULL;
    if (a->autotune) {
        /* Each round's sink run on a device keeps its lines (the last
         * round's are reported); the first round's are also printed. */
        static cli_autotune scratch;
        cli_autotune *t = run == RUN_SINK_FULL && device < MAX_DEVICES ? &last_tune[device]
                                                                        : &scratch;
        memset(t, 0, sizeof *t);
        t->cmd = CMD;
        t->quiet = run != RUN_SINK_FULL || !a->first_round;
        o.autotune = 1;
        o.autotune_log = cli_autotune_log;
        o.autotune_log_arg = t;
    }
    sl_dataset_get_dataset_size(ds, &per_epoch);
    if (run == RUN_SINK_1000)
        per_epoch = 1000;
    epochs = (a->steps + per_epoch - 1) / per_epoch;
    sl_device_get_stats(sl_model_device(m), &d0);
    t0 = cli_now_ms();
    rc = sl_model_train_opts(m, epochs, ds, NULL, 0, &o);
    r->ms = cli_now_ms() - t0;
    if (rc < 0) {
        cli_error(CMD, "%s: %s", run_names[run], cli_lib_message(sl_model_last_error(m), rc));
        return rc;
    }
    sl_device_get_stats(sl_model_device(m), &d1);
    r->steps = sl_model_global_step(m) - start;
    r->interactions = d1.interactions - d0.interactions;
    r->getnext_wait_ms = r->channel_full_ms = 0;
    if (o.dataset_sink_mode) {
        sl_model_get_sink_stats(m, &ss);
        r->getnext_wait_ms = ss.getnext_wait_ms;
        r->channel_full_ms = ss.channel_full_ms;
    }
    if (run == RUN_SINK_FULL && device < MAX_DEVICES) {
        size_t n = sl_model_get_stage_stats(m, last_stages[device], CLI_MAX_STAGES);
        last_nstages[device] = n < CLI_MAX_STAGES ? n : CLI_MAX_STAGES;
    }
    return SL_OK;
}

/* The steps alone, on one batch made once (no pipeline, no interaction). */
static int run_compute(const bench_args *a, sl_model *m, run_result *r)
{
    double sps;
    int rc = sl_model_bench_steps(m, a->steps, &sps);
    if (rc < 0) {
        cli_error(CMD, "compute only: %s", sl_model_last_error(m));
        return rc;
    }
    memset(r, 0, sizeof *r);
    r->steps = a->steps;
    r->ms = (double)a->steps * 32.0 / sps * 1e3;
    return SL_OK;
}

/* Drains `steps` batches from the pipeline (across epochs). */
static int run_data(const bench_args *a, sl_dataset *ds, run_result *r)
{
    sl_iterator_options io;
    sl_iterator *it = NULL;
    double t0;
    int rc;
    memset(r, 0, sizeof *r);
    sl_iterator_options_init(&io);
    io.num_epochs = -1;
    t0 = cli_now_ms();
    rc = sl_iterator_new(&it, ds, &io);
    while (rc == SL_OK && r->steps < a->steps) {
        sl_row row;
        rc = sl_iterator_next(it, &row);
        if (rc == SL_OK) {
            r->steps++;
            sl_row_clear(&row);
        } else if (rc == SL_END_OF_EPOCH) {
            rc = SL_OK;
        }
    }
    if (rc < 0)
        cli_error(CMD, "data only: %s",
                  it ? sl_iterator_last_error(it) : sl_dataset_last_error(ds));
    sl_iterator_free(it);
    r->ms = cli_now_ms() - t0;
    return rc < 0 ? rc : SL_OK;
}

static double median_of(const run_result *runs, size_t n, size_t field)
{
    double v[MAX_REPEATS];
    for (size_t i = 0; i < n; i++) {
        const run_result *r = &runs[i];
        v[i] = field == 0   ? r->ms / (double)(r->steps ? r->steps : 1)
               : field == 1 ? (double)r->interactions
               : field == 2 ? r->getnext_wait_ms
                            : r->channel_full_ms;
    }
    return cli_bench_median(v, n);
}

int cli_bench_sink_main(int argc, char **argv)
{
    static run_result res[MAX_DEVICES][NRUNS][MAX_REPEATS];
    bench_args a;
    sl_model *models[MAX_DEVICES] = {NULL};
    sl_profiler *profiler = NULL;
    sl_dataset *ds = NULL;
    cli_pipeline pl;
    cli_kind kind;
    sl_thread_budget budget;
    char budget_line[256], transfer_line[256];
    int rc = parse_args(argc, argv, &a), exit_code = CLI_EXIT_FAIL;

    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if (cli_detect_kind(CMD, a.data, &kind) != 0)
        return CLI_EXIT_FAIL;
    if (!(cli_mnist_splits(a.data) & CLI_SPLIT_TRAIN)) {
        cli_error(CMD, "%s holds no MNIST train split; give --data", a.data);
        return CLI_EXIT_FAIL;
    }
    cli_pipeline_default(&pl, a.data, CLI_KIND_MNIST, SL_MNIST_TRAIN);
    if (a.profile && cli_profile_start(CMD, a.profile, &profiler) != 0)
        return CLI_EXIT_FAIL;
    if (cli_pipeline_build(CMD, &pl, (int)a.workers, &ds) != SL_OK) {
        sl_profiler_free(profiler);
        return CLI_EXIT_FAIL;
    }
    for (size_t d = 0; d < a.ndevices; d++)
        if (!(models[d] = make_model(&a, a.devices[d])))
            goto out;
    /* Warm-up, untimed: the MNIST load, caches, OpenBLAS's buffers. */
    {
        run_result w;
        bench_args wa = a;
        wa.steps = 20;
        for (size_t d = 0; d < a.ndevices; d++)
            if (run_training(&wa, models[d], d, ds, RUN_SINK_FULL, &w) < 0)
                goto out;
    }
    for (int64_t r = 0; r < a.repeats; r++) {
        if (!a.json)
            fprintf(stderr, "round %" PRId64 "/%" PRId64 "...\n", r + 1, a.repeats);
        for (size_t d = 0; d < a.ndevices; d++)
            for (int run = 0; run < NRUNS; run++) {
                run_result *out = &res[d][run][r];
                a.profiler = r == a.repeats - 1 && d == 0 ? profiler : NULL;
                a.first_round = r == 0;
                rc = run == RUN_COMPUTE ? run_compute(&a, models[d], out)
                     : run == RUN_DATA  ? run_data(&a, ds, out)
                                        : run_training(&a, models[d], d, ds, run, out);
                if (rc < 0)
                    goto out;
            }
    }
    a.profiler = NULL;
    if (profiler) {
        int failed = cli_profile_finish(CMD, a.profile, profiler);
        profiler = NULL;
        if (failed)
            goto out;
    }
    sl_thread_budget_default(&budget);
    budget.compute_threads = (int)a.threads;
    budget.pipeline_workers = (int)a.workers;
    budget.transfer_threads = 0;
    transfer_line[0] = '\0';
    for (size_t d = 0; d < a.ndevices; d++) {
        sl_train_options to;
        sl_transfer_mode t;
        size_t used = strlen(transfer_line);
        sl_train_options_init(&to);
        to.transfer = (int32_t)a.transfer;
        t = sl_model_transfer_mode(models[d], &to);
        budget.transfer_threads += t == SL_TRANSFER_THREAD;
        snprintf(transfer_line + used, sizeof transfer_line - used, "%s%s %s", d ? ", " : "",
                 a.devices[d], sl_transfer_mode_name(t));
    }
    sl_thread_budget_format(&budget, budget_line, sizeof budget_line);
    if (a.json)
        printf("{\"steps\": %" PRId64 ", \"repeats\": %" PRId64 ", \"batch\": 32, \"cpus\": %d"
               ", \"thread_budget\": \"%s\", \"transfer\": \"%s\", \"runs\": [",
               a.steps, a.repeats, budget.cpus, budget_line, transfer_line);
    else
        printf("LeNet5, batch 32, %" PRId64 " steps per run, medians of %" PRId64
               " rounds\nthread budget: %s\ntransfer: %s\n\n"
               "%-8s %-22s %11s %9s %12s %12s %12s\n",
               a.steps, a.repeats, budget_line, transfer_line, "device", "run", "samples/s", "ms/step",
               "interactions", "GetNext ms", "chan-full ms");
    for (size_t d = 0; d < a.ndevices; d++)
        for (int run = 0; run < NRUNS; run++) {
            size_t n = (size_t)a.repeats;
            double ms_step = median_of(res[d][run], n, 0);
            double sps = 32.0 / (ms_step / 1e3);
            if (a.json)
                printf("%s{\"name\": \"%s\", \"device\": \"%s\", \"samples_per_s\": %.1f, "
                       "\"ms_per_step\": %.4f, \"interactions\": %.0f, \"getnext_wait_ms\": %.1f, "
                       "\"channel_full_ms\": %.1f}",
                       d || run ? ", " : "", run_names[run], a.devices[d], sps, ms_step,
                       median_of(res[d][run], n, 1), median_of(res[d][run], n, 2),
                       median_of(res[d][run], n, 3));
            else
                printf("%-8s %-22s %11.0f %9.4f %12.0f %12.1f %12.1f\n", a.devices[d],
                       run_titles[run], sps, ms_step, median_of(res[d][run], n, 1),
                       median_of(res[d][run], n, 2), median_of(res[d][run], n, 3));
        }
    for (size_t d = 0; d < a.ndevices; d++) {
        size_t n = (size_t)a.repeats;
        double data = median_of(res[d][RUN_DATA], n, 0);
        double comp = median_of(res[d][RUN_COMPUTE], n, 0);
        double sink = median_of(res[d][RUN_SINK_FULL], n, 0);
        double eff = (data > comp ? data : comp) / sink;
        if (a.json) {
            if (d == 0)
                printf("], \"overlap_efficiency\": %.3f, \"overlap_by_device\": {", eff);
            printf("%s\"%s\": %.3f", d ? ", " : "", a.devices[d], eff);
        } else {
            printf("%soverlap efficiency on %s: %.3f (max(data only, compute only) / sink)\n",
                   d ? "" : "\n", a.devices[d], eff);
        }
    }
    if (a.json) {
        printf("}, \"stages_by_device\": {");
        for (size_t d = 0; d < a.ndevices; d++) {
            printf("%s\"%s\": ", d ? ", " : "", a.devices[d]);
            cli_stages_json(stdout, last_stages[d], last_nstages[d]);
        }
        printf("}, \"verdict_by_device\": {");
        for (size_t d = 0; d < a.ndevices; d++) {
            printf("%s\"%s\": ", d ? ", " : "", a.devices[d]);
            cli_stages_verdict_json(stdout, last_stages[d], last_nstages[d]);
        }
        printf("}");
        if (a.autotune) {
            printf(", \"autotune_by_device\": {");
            for (size_t d = 0; d < a.ndevices; d++) {
                printf("%s\"%s\": ", d ? ", " : "", a.devices[d]);
                cli_autotune_json(stdout, &last_tune[d]);
            }
            printf("}");
        }
        printf("}\n");
    } else {
        for (size_t d = 0; d < a.ndevices; d++) {
            printf("\nstages of the last \"sink, sink_size -1\" run on %s (%% of each "
                   "stage's threads x its time):\n",
                   a.devices[d]);
            cli_stages_text(stdout, last_stages[d], last_nstages[d]);
            if (a.autotune) {
                printf("autotune in that run:\n");
                for (size_t k = 0; k < last_tune[d].nlines; k++)
                    printf("  %s\n", last_tune[d].lines[k]);
                if (last_tune[d].nlines == 0)
                    printf("  (nothing to say: the run was too short to judge)\n");
            }
        }
    }
    exit_code = CLI_EXIT_OK;
out:
    for (size_t d = 0; d < a.ndevices; d++)
        sl_model_free(models[d]);
    sl_dataset_free(ds);
    sl_profiler_free(profiler); /* after the runs that record into it */
    return exit_code;
}
