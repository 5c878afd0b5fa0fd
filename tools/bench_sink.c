/* bench_sink.c: `sluice bench sink`: the same LeNet trained for the same
 * number of steps without data sinking, with it (sink_size -1 and 1000),
 * compute-only (the step over an epoch of real batches kept in memory),
 * data-only (the pipeline drained) and a serial reference (the pipeline
 * only between steps), on each device asked for. A round runs every
 * configuration once, each from a fresh model (the same initial
 * parameters), in an order that rotates from round to round; the hidden
 * fraction of each round comes from that round's own runs
 * (tools/bench_overlap.h has the arithmetic). */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sluice/sluice.h"
#include "bench_overlap.h"
#include "bench_util.h"
#include "cli.h"
#include "cli_autotune.h"
#include "cli_profile.h"
#include "cli_stages.h"

#define CMD "bench"
#define MAX_REPEATS CLI_BENCH_MAX_REPEATS
#define MAX_DEVICES 6

enum {
    OPT_STEPS = 256, OPT_REPEATS, OPT_DATA, OPT_WORKERS, OPT_THREADS, OPT_DEVICES,
    OPT_QUEUE_CAPACITY, OPT_TRANSFER, OPT_JSON, OPT_PROFILE, OPT_AUTOTUNE
};

/* The runs of one device, in table order. */
enum { RUN_NONSINK, RUN_SINK_FULL, RUN_SINK_1000, RUN_COMPUTE, RUN_DATA, RUN_SERIAL, NRUNS };
static const char *const run_names[NRUNS] = {"nonsink", "sink_full", "sink_1000",
                                             "compute_only", "data_only", "serial"};
static const char *const run_titles[NRUNS] = {"non-sink", "sink, sink_size -1",
                                              "sink, sink_size 1000", "compute only",
                                              "data only", "serial reference"};
/* The runs that train from the pipeline: each gets a hidden fraction. */
static const int overlap_runs[] = {RUN_SINK_FULL, RUN_SINK_1000, RUN_NONSINK, RUN_SERIAL};
#define NOVERLAP (sizeof overlap_runs / sizeof overlap_runs[0])

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
    int64_t channels, num_classes; /* an ImageFolder's network (0: MNIST's) */
} bench_args;

/* One run's figures. */
typedef struct run_result {
    double ms;                 /* wall time */
    double cpu_ms;             /* CPU time of the process (all its threads) meanwhile */
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
          "  compute only          the step over real batches of the pipeline, an epoch\n"
          "                        of them (at most --steps) kept in memory, cycled\n"
          "  data only             the pipeline drained: no step\n"
          "  serial reference      the pipeline runs only between steps, never beside\n"
          "                        them: an epoch's batches are made and kept, then\n"
          "                        stepped; it overlaps nothing by construction\n"
          "on each device (cpu:0, and sim:0, a model of an accelerator across a PCIe\n"
          "4.0 x16 bus). A round runs each of them once on each device, each from a\n"
          "fresh model with the same initial parameters, in an order that rotates\n"
          "from round to round. The table gives medians over rounds: samples/s, ms\n"
          "and CPU ms (all threads) per step, host<->device interactions, the time\n"
          "GetNext waited for a batch and the time the pipeline was blocked on a full\n"
          "channel (summed over its last stage's threads: 2 workers blocked for 1 s\n"
          "count 2 s).\n"
          "\n"
          "Then the hidden fraction of each round, from that round's runs:\n"
          "  h = (T_compute + T_data - T_run) / min(T_compute, T_data)\n"
          "0 when compute and data ran one after the other, 1 when the shorter hid\n"
          "entirely behind the longer; its median and range over rounds, for sink\n"
          "and for the serial reference (which must come out near 0). A round's h\n"
          "outside [-0.1, 1.1] is noise: it is counted, never given as a result. On\n"
          "cpu, where compute and data share the CPUs, also the efficiency against\n"
          "the CPU-time bound max(T_compute, T_data, (W_compute + W_data) / CPUs), W\n"
          "being a run's CPU time.\n"
          "\n"
          "Options:\n"
          "  --steps N           steps per run (default 1875: one epoch)\n"
          "  --repeats N         rounds (default 3)\n"
          "  --devices LIST      comma list (default cpu:0,sim:0); sim:N@LATus is the\n"
          "                      sim with a launch latency of LAT microseconds (a loaded\n"
          "                      host driver), e.g. sim:0,sim:0@200us,sim:0@2000us: for\n"
          "                      each sim the bus model's predicted sink/non-sink ratio\n"
          "                      is printed beside the measured one\n"
          "  --data DIR          MNIST folder (default " CLI_DEFAULT_DATA "), or a folder\n"
          "                      of JPEGs, one sub-folder per class: ImageNet's training\n"
          "                      transform at 32x32 into a 3-channel LeNet5, where\n"
          "                      preparing data costs as much as computing or more\n"
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
          "                      ms_per_step, cpu_ms_per_step, ...), hidden_by_device\n"
          "                      and cpu_bound_by_device\n"
          "  -h, --help          show this help and exit\n",
          f);
}

static int parse_devices(bench_args *a, const char *list)
{
    char *save = NULL, *tok;
    size_t len = strlen(list);
    /* strtok_r would skip an empty item silently: refuse it instead */
    if (len == 0 || list[0] == ',' || list[len - 1] == ',' || strstr(list, ",,")) {
        cli_error(CMD, "--devices: '%s' holds an empty name; give a comma list such as "
                  "cpu:0,sim:0", list);
        return -1;
    }
    if (len >= sizeof a->devices_buf) {
        cli_error(CMD, "--devices: the list is too long (%zu characters)", len);
        return -1;
    }
    snprintf(a->devices_buf, sizeof a->devices_buf, "%s", list);
    a->ndevices = 0;
    for (tok = strtok_r(a->devices_buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char kind[8];
        int id, end = 0;
        for (size_t k = 0; k < a->ndevices; k++)
            if (strcmp(a->devices[k], tok) == 0) {
                cli_error(CMD, "--devices: '%s' is named twice", tok);
                return -1;
            }
        if (sscanf(tok, "%7[a-z]:%d%n", kind, &id, &end) != 2 ||
            (strcmp(kind, "cpu") != 0 && strcmp(kind, "sim") != 0) || id < 0 || id > 63) {
            cli_error(CMD, "--devices: '%s' is not cpu:N or sim:N", tok);
            return -1;
        }
        if (tok[end] != '\0') {
            /* sim:N@LATus: the sim with another launch latency */
            long long us;
            int tail = 0;
            if (strcmp(kind, "sim") != 0 || sscanf(tok + end, "@%lldus%n", &us, &tail) != 1 ||
                tok[end + tail] != '\0' || us < 0 || us > 1000000) {
                cli_error(CMD, "--devices: '%s' is not cpu:N, sim:N or sim:N@LATus (a launch "
                          "latency of 0 to 1000000 us)", tok);
                return -1;
            }
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
        case OPT_STEPS:
            /* at most 10^12: epochs are counted as steps + per_epoch - 1 */
            bad = cli_parse_int64(CMD, "--steps", optarg, 1, 1000000000000LL, &a->steps);
            break;
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

/* The launch latency a device item asks for ("sim:0@200us"), in ns; -1:
 * the device's default. */
static int64_t item_latency_ns(const char *device)
{
    const char *at = strchr(device, '@');
    long long us;
    return at && sscanf(at, "@%lldus", &us) == 1 ? (int64_t)us * 1000 : -1;
}

static sl_model *make_model(const bench_args *a, const char *device)
{
    sl_model_options o;
    sl_device_options dopts;
    int id = 0;
    sl_model_options_init(&o);
    sl_device_options_init(&dopts);
    if (item_latency_ns(device) >= 0)
        dopts.sim_launch_latency_ns = item_latency_ns(device);
    o.device_options = &dopts;
    if (a->channels > 0) {
        o.network.channels = a->channels;
        o.network.num_classes = a->num_classes;
    }
    o.context.threads = (int)a->threads;
    o.context.device_target = strncmp(device, "sim", 3) == 0 ? "SIM" : "CPU";
    sscanf(device + 4, "%d", &id);
    o.context.device_id = id;
    return cli_bench_model_new(CMD, &o);
}


/* Trains `steps` steps in the run's mode and fills r (but its times). */
static int run_training(const bench_args *a, sl_model *m, size_t device, sl_dataset *ds,
                        int run, run_result *r)
{
    sl_train_options o;
    sl_device_stats d0, d1;
    sl_sink_stats ss;
    int64_t per_epoch = 1, start = sl_model_global_step(m), epochs;
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
    rc = sl_model_train_opts(m, epochs, ds, NULL, 0, &o);
    if (rc < 0) {
        cli_error(CMD, "%s: %s", run_names[run], cli_lib_message(sl_model_last_error(m), rc));
        return rc;
    }
    sl_device_get_stats(sl_model_device(m), &d1);
    r->steps = sl_model_global_step(m) - start;
    r->interactions = d1.interactions - d0.interactions;
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

/* Drains `steps` batches from the pipeline (across epochs). */
static int run_data(const bench_args *a, sl_dataset *ds, run_result *r)
{
    sl_iterator_options io;
    sl_iterator *it = NULL;
    int rc;
    sl_iterator_options_init(&io);
    io.num_epochs = -1;
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
    return rc < 0 ? rc : SL_OK;
}

static double cpu_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One configuration of a round: a fresh model (so that every run starts
 * from the same initial parameters, the seed's, with fresh optimizer
 * state, and none inherits what another did to its model), made before
 * the clocks start and freed after they stop. */
static int run_one(const bench_args *a, size_t d, int run, sl_dataset *ds,
                   const sl_bench_batches *batches, run_result *r)
{
    sl_model *m = NULL;
    double t0, c0, sps;
    int rc;

    memset(r, 0, sizeof *r);
    if (run != RUN_DATA && !(m = make_model(a, a->devices[d])))
        return SL_ENOMEM;
    t0 = cli_now_ms();
    c0 = cpu_now_ms();
    switch (run) {
    case RUN_DATA: rc = run_data(a, ds, r); break;
    case RUN_COMPUTE:
        rc = sl_model_bench_steps_on(m, batches, a->steps, &sps);
        r->steps = a->steps;
        break;
    case RUN_SERIAL:
        rc = sl_model_bench_serial(m, ds, a->steps);
        r->steps = a->steps;
        break;
    default: rc = run_training(a, m, d, ds, run, r); break;
    }
    r->cpu_ms = cpu_now_ms() - c0;
    r->ms = cli_now_ms() - t0;
    if (rc < 0 && (run == RUN_COMPUTE || run == RUN_SERIAL))
        cli_error(CMD, "%s: %s", run_names[run], sl_model_last_error(m));
    sl_model_free(m);
    return rc < 0 ? rc : SL_OK;
}

/* A run's figure per step: 0 ms, 1 interactions, 2 GetNext wait, 3 channel
 * full, 4 CPU ms. */
static double per_step(const run_result *r, int field)
{
    double steps = (double)(r->steps ? r->steps : 1);
    return field == 0   ? r->ms / steps
           : field == 1 ? (double)r->interactions
           : field == 2 ? r->getnext_wait_ms
           : field == 3 ? r->channel_full_ms
                        : r->cpu_ms / steps;
}

static double median_of(const run_result *runs, size_t n, int field)
{
    double v[MAX_REPEATS];
    for (size_t i = 0; i < n; i++)
        v[i] = per_step(&runs[i], field);
    return cli_bench_median(v, n);
}

/* The bus model's figures for sim item d (cli_bus_model_ratio): the
 * prediction from the median compute-only step and the device's copy and
 * launch costs, against the measured sink (sink_size 1000) over non-sink
 * ratio, the median of the rounds' own pairs. */
typedef struct bus_figures {
    double copy_ms, launch_ms, handover_ms, saving_ms, predicted, measured;
    double nonsink_model_ms, nonsink_ms; /* a non-sink step: modelled, measured */
} bus_figures;

static void bus_model(run_result (*res)[MAX_REPEATS], size_t rounds, const char *device,
                      int64_t steps, int64_t channels, double handover_ms, bus_figures *out)
{
    sl_device_options d;
    double ratios[MAX_REPEATS];
    /* a batch: 32 images of Cx32x32 float32 and 32 int32 labels */
    const double bytes = 32.0 * (double)channels * 32 * 32 * 4 + 32.0 * 4;
    sl_device_options_init(&d);
    out->launch_ms = (double)(item_latency_ns(device) >= 0 ? item_latency_ns(device)
                                                           : d.sim_launch_latency_ns) / 1e6;
    out->copy_ms = ((double)d.sim_copy_latency_ns + bytes / d.sim_bandwidth_gbps) / 1e6;
    /* A hand-over at or below 0 is the noise of its measurement, not a
     * cost: the prediction then leaves it out, and the output says so. */
    out->handover_ms = handover_ms > 0.0 ? handover_ms : NAN;
    handover_ms = isfinite(out->handover_ms) ? out->handover_ms : 0.0;
    out->predicted = cli_bus_model_ratio(median_of(res[RUN_COMPUTE], rounds, 0), out->copy_ms,
                                         out->launch_ms, handover_ms,
                                         steps < 1000 ? (double)steps : 1000.0, &out->saving_ms);
    for (size_t r = 0; r < rounds; r++) {
        double t_sink = per_step(&res[RUN_SINK_1000][r], 0);
        ratios[r] = t_sink > 0 ? per_step(&res[RUN_NONSINK][r], 0) / t_sink : NAN;
    }
    out->measured = cli_bench_median(ratios, rounds);
    out->nonsink_model_ms = median_of(res[RUN_COMPUTE], rounds, 0) + out->copy_ms +
                            2.0 * out->launch_ms + handover_ms;
    out->nonsink_ms = median_of(res[RUN_NONSINK], rounds, 0);
}

static int is_cpu(const char *device)
{
    return strncmp(device, "cpu", 3) == 0;
}

/* Per round r of device d: the hidden fraction of `run`, and (cpu) the
 * efficiency against the CPU-time bound; NaN where it has no meaning. */
static void round_figures(run_result (*res)[MAX_REPEATS], int run, size_t rounds, int cpus,
                          int cpu_device, double *h, double *eff, double *bound)
{
    for (size_t r = 0; r < rounds; r++) {
        double tc = per_step(&res[RUN_COMPUTE][r], 0), td = per_step(&res[RUN_DATA][r], 0);
        double t = per_step(&res[run][r], 0);
        double b = cli_cpu_time_bound(tc, td, per_step(&res[RUN_COMPUTE][r], 4),
                                      per_step(&res[RUN_DATA][r], 4), cpus);
        h[r] = cli_hidden_fraction(tc, td, t);
        eff[r] = cpu_device && t > 0.0 ? b / t : NAN;
        bound[r] = b;
    }
}

static void json_number(double v, int digits)
{
    if (isnan(v))
        printf("null");
    else
        printf("%.*f", digits, v);
}

static void json_spread(const cli_spread *s)
{
    printf("{\"median\": ");
    json_number(s->median, 3);
    printf(", \"min\": ");
    json_number(s->min, 3);
    printf(", \"max\": ");
    json_number(s->max, 3);
    printf(", \"rounds\": %zu, \"noise_rounds\": %zu}", s->kept, s->noise);
}

/* One line of the text report on h (or an efficiency): the median and its
 * range, or with one round the value and what it means, or why there is
 * none. */
static void text_spread(const char *device, const char *title, const cli_spread *s,
                        size_t rounds, int is_h, int serial)
{
    printf("  %-12s %-22s ", device, title);
    if (s->kept == 0) {
        printf("no result: noise in %zu of %zu round%s (", s->noise, rounds,
               rounds == 1 ? "" : "s");
        if (is_h)
            printf("outside [%.1f, %.1f])\n", CLI_HIDDEN_NOISE_LOW, CLI_HIDDEN_NOISE_HIGH);
        else
            printf("above %.1f: faster than the bound)\n", CLI_HIDDEN_NOISE_HIGH);
        return;
    }
    printf("%.2f", s->median);
    if (rounds == 1 && serial)
        printf("  (one round: it overlaps nothing by construction, so its distance from 0\n"
               "  %-12s %-22s        is the noise of this round's figures)\n",
               "", "");
    else if (rounds == 1 && is_h && s->median < 0.0)
        printf("  (one round: the run took longer than its parts one after the other, so "
               "nothing ran beside)\n");
    else if (rounds == 1 && is_h && s->median > 1.0)
        printf("  (one round: above 1 by less than the noise allowed, the shorter part all "
               "hidden)\n");
    else if (rounds == 1 && is_h)
        printf("  (one round: %.0f%% of the shorter part ran hidden beside the other)\n",
               100.0 * s->median);
    else if (rounds == 1)
        printf("  (one round, so no spread)\n");
    else if (s->kept == 1)
        printf("  (one round of %zu; the others noise)\n", rounds);
    else
        printf("  (%.2f..%.2f over %zu rounds%s)\n", s->min, s->max, s->kept,
               s->noise ? "; the others noise" : "");
}

int cli_bench_sink_main(int argc, char **argv)
{
    static run_result res[MAX_DEVICES][NRUNS][MAX_REPEATS];
    bench_args a;
    sl_model *scratch = NULL;
    sl_bench_batches *batches = NULL;
    sl_profiler *profiler = NULL;
    sl_dataset *ds = NULL;
    cli_pipeline pl;
    cli_kind kind;
    sl_thread_budget budget;
    char budget_line[256], transfer_line[256], cores_line[512];
    double handover[MAX_DEVICES]; /* a sim's hand-over to its thread, ms (NaN on cpu) */
    size_t nconf, rounds;
    int rc = parse_args(argc, argv, &a), exit_code = CLI_EXIT_FAIL;

    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if (cli_detect_kind(CMD, a.data, &kind) != 0)
        return CLI_EXIT_FAIL;
    if (kind == CLI_KIND_MNIST && !(cli_mnist_splits(a.data) & CLI_SPLIT_TRAIN)) {
        cli_error(CMD, "%s holds no MNIST train split; give --data", a.data);
        return CLI_EXIT_FAIL;
    }
    cli_blas_warn();
    cli_pipeline_default(&pl, a.data, kind, SL_MNIST_TRAIN);
    if (kind == CLI_KIND_IMAGE_FOLDER) {
        /* A folder of JPEGs: the workload where preparing data costs as
         * much as computing or more. ImageNet's training transform at
         * LeNet5's 32x32, 3 channels (as sluice train --data FOLDER). */
        cli_pipeline_imagenet_sized(&pl, 1, 32);
        a.channels = 3;
    }
    if (a.profile && cli_profile_start(CMD, a.profile, &profiler) != 0)
        return CLI_EXIT_FAIL;
    if (cli_pipeline_build(CMD, &pl, (int)a.workers, &ds) != SL_OK) {
        sl_profiler_free(profiler);
        return CLI_EXIT_FAIL;
    }
    if (kind == CLI_KIND_IMAGE_FOLDER)
        a.num_classes = (int64_t)sl_dataset_num_classes(ds);
    /* The serial reference keeps up to 256 MiB of batches at once from the
     * pipeline's pool; under a cap below that the pool would give most of
     * them back to the system after each serial run, and the next would
     * pay page faults that data only never pays (3x its data time per
     * batch, measured on MNIST, when the default cap was 64 MiB at most;
     * the default now follows the peak, and this limit says so whatever
     * the peak). The other runs reuse the blocks they free, so keeping more
     * idle changes nothing for them. */
    sl_dataset_set_pool_idle_limit(ds, (size_t)384 << 20);
    /* Compute only's batches: the pipeline's first epoch (at most --steps
     * batches), made once and kept. */
    if (!(scratch = make_model(&a, a.devices[0])))
        goto out;
    if (sl_bench_batches_new(&batches, scratch, ds, a.steps) < 0) {
        cli_error(CMD, "compute only: %s", sl_model_last_error(scratch));
        goto out;
    }
    /* Warm-up, untimed, on models thrown away: the MNIST load, caches,
     * OpenBLAS's buffers, and the pipeline's pool grown to what the serial
     * reference keeps at once. */
    for (size_t d = 0; d < a.ndevices; d++) {
        run_result w;
        bench_args wa = a;
        sl_model *m = d == 0 ? scratch : make_model(&a, a.devices[d]);
        wa.steps = a.steps < 20 ? a.steps : 20; /* a short run (a test's) warms briefly */
        memset(&w, 0, sizeof w);
        rc = m ? run_training(&wa, m, d, ds, RUN_SINK_FULL, &w) : SL_ENOMEM;
        if (rc == SL_OK && d == 0 && (rc = sl_model_bench_serial(m, ds, a.steps)) < 0)
            cli_error(CMD, "serial reference: %s", sl_model_last_error(m));
        if (m != scratch)
            sl_model_free(m);
        if (rc < 0)
            goto out;
    }
    sl_model_free(scratch);
    scratch = NULL;
    nconf = a.ndevices * NRUNS;
    rounds = (size_t)a.repeats;
    for (size_t r = 0; r < rounds; r++) {
        /* Round r starts r/rounds of the way along the list, so each
         * configuration runs early in some rounds and late in others. */
        size_t first = r * nconf / rounds;
        if (!a.json)
            fprintf(stderr, "round %zu/%zu...\n", r + 1, rounds);
        for (size_t k = 0; k < nconf; k++) {
            size_t c = (first + k) % nconf, d = c / NRUNS;
            int run = (int)(c % NRUNS);
            a.profiler = r == rounds - 1 && d == 0 ? profiler : NULL;
            a.first_round = r == 0;
            if (run_one(&a, d, run, ds, batches, &res[d][run][r]) < 0)
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
    cores_line[0] = '\0';
    for (size_t d = 0; d < a.ndevices; d++) {
        sl_train_options to;
        sl_transfer_mode t;
        sl_model *m = make_model(&a, a.devices[d]);
        size_t used = strlen(transfer_line);
        if (!m)
            goto out;
        sl_train_options_init(&to);
        to.transfer = (int32_t)a.transfer;
        t = sl_model_transfer_mode(m, &to);
        /* a sim's hand-over, for the bus model (the timed rounds are
         * over), over as many steps as a run's: a short run (a test's)
         * measures briefly */
        handover[d] = NAN;
        if (!is_cpu(a.devices[d]) &&
            sl_model_bench_handover(m, batches, a.steps < 20 ? 20 : a.steps, &handover[d]) < 0) {
            cli_error(CMD, "%s: %s", a.devices[d], sl_model_last_error(m));
            sl_model_free(m);
            goto out;
        }
        {
            /* who owns which core: a sim computes on its own while it trains */
            char cpus[128];
            if (sl_device_cpus(sl_model_device(m), cpus, sizeof cpus) > 0) {
                size_t cu = strlen(cores_line);
                snprintf(cores_line + cu, sizeof cores_line - cu,
                         "%s%s computes on CPU %s, the host's threads on the others while it "
                         "trains",
                         cu ? "; " : "", a.devices[d], cpus);
            }
        }
        sl_model_free(m);
        budget.transfer_threads += t == SL_TRANSFER_THREAD;
        snprintf(transfer_line + used, sizeof transfer_line - used, "%s%s %s", d ? ", " : "",
                 a.devices[d], sl_transfer_mode_name(t));
    }
    sl_thread_budget_format(&budget, budget_line, sizeof budget_line);
    if (a.json)
        printf("{\"steps\": %" PRId64 ", \"repeats\": %" PRId64 ", \"batch\": 32, \"cpus\": %d"
               ", \"thread_budget\": \"%s\", \"transfer\": \"%s\", \"order\": \"rotating\""
               ", \"fresh_model_per_run\": true, \"compute_batches\": %" PRId64
               ", \"cpu_path\": \"%s\", \"blas_core\": \"%s\", \"cores\": \"%s\", \"runs\": [",
               a.steps, a.repeats, budget.cpus, budget_line, transfer_line,
               sl_bench_batches_count(batches), sl_cpu_path(), sl_blas_core(), cores_line);
    else
        printf("LeNet5 (%s), batch 32, %" PRId64 " steps per run, medians of %" PRId64
               " round%s\neach run from a fresh model (the same initial parameters), the "
               "order rotating by round\nthread budget: %s\ntransfer: %s\n%s%s%s"
               "compute only: the step over %" PRId64 " real batches of the pipeline, kept "
               "in memory, cycled\nOpenBLAS core: %s\n\n"
               "%-12s %-22s %11s %9s %11s %12s %12s %12s\n",
               a.channels > 0 ? "3x32x32, a folder of JPEGs" : "1x32x32, MNIST", a.steps,
               a.repeats, a.repeats == 1 ? "" : "s", budget_line, transfer_line,
               cores_line[0] ? "cores: " : "", cores_line, cores_line[0] ? "\n" : "",
               sl_bench_batches_count(batches), sl_blas_core(), "device", "run", "samples/s",
               "ms/step", "CPU ms/step", "interactions", "GetNext ms", "chan-full ms");
    for (size_t d = 0; d < a.ndevices; d++)
        for (int run = 0; run < NRUNS; run++) {
            double ms_step = median_of(res[d][run], rounds, 0);
            double sps = 32.0 / (ms_step / 1e3);
            if (a.json) {
                printf("%s{\"name\": \"%s\", \"device\": \"%s\", \"samples_per_s\": %.1f, "
                       "\"ms_per_step\": %.4f, \"cpu_ms_per_step\": %.4f, \"interactions\": %.0f, "
                       "\"getnext_wait_ms\": %.1f, \"channel_full_ms\": %.1f, "
                       "\"ms_per_step_rounds\": [",
                       d || run ? ", " : "", run_names[run], a.devices[d], sps, ms_step,
                       median_of(res[d][run], rounds, 4), median_of(res[d][run], rounds, 1),
                       median_of(res[d][run], rounds, 2), median_of(res[d][run], rounds, 3));
                for (size_t r = 0; r < rounds; r++)
                    printf("%s%.4f", r ? ", " : "", per_step(&res[d][run][r], 0));
                printf("], \"cpu_ms_per_step_rounds\": [");
                for (size_t r = 0; r < rounds; r++)
                    printf("%s%.4f", r ? ", " : "", per_step(&res[d][run][r], 4));
                printf("]}");
            } else {
                printf("%-12s %-22s %11.0f %9.4f %11.4f %12.0f %12.1f %12.1f\n", a.devices[d],
                       run_titles[run], sps, ms_step, median_of(res[d][run], rounds, 4),
                       median_of(res[d][run], rounds, 1), median_of(res[d][run], rounds, 2),
                       median_of(res[d][run], rounds, 3));
            }
        }
    /* The overlap figures, per device. */
    if (a.json)
        printf("], \"hidden_noise_range\": [%.1f, %.1f], \"hidden_by_device\": {",
               CLI_HIDDEN_NOISE_LOW, CLI_HIDDEN_NOISE_HIGH);
    else
        printf("\nhidden fraction h = (T_compute + T_data - T_run) / min(T_compute, T_data),\n"
               "per round from its own runs: 0 when compute and data ran one after the\n"
               "other, 1 when the shorter hid entirely behind the longer. The serial\n"
               "reference overlaps nothing by construction: its h must come out near 0.\n");
    for (size_t d = 0; d < a.ndevices; d++) {
        double tc = median_of(res[d][RUN_COMPUTE], rounds, 0);
        double td = median_of(res[d][RUN_DATA], rounds, 0);
        if (a.json) {
            printf("%s\"%s\": {\"per_percent_of_compute\": ", d ? ", " : "", a.devices[d]);
            json_number(cli_hidden_per_percent(tc, td), 3);
        }
        for (size_t k = 0; k < NOVERLAP; k++) {
            double h[MAX_REPEATS], eff[MAX_REPEATS], bound[MAX_REPEATS];
            cli_spread sp;
            int run = overlap_runs[k];
            round_figures(res[d], run, rounds, budget.cpus, 0, h, eff, bound);
            cli_spread_of(h, rounds, 1, &sp);
            if (a.json) {
                printf(", \"%s\": ", run_names[run]);
                json_spread(&sp);
            } else if (run == RUN_SINK_FULL || run == RUN_SERIAL) {
                text_spread(a.devices[d], run_titles[run], &sp, rounds, 1, run == RUN_SERIAL);
            }
        }
        if (a.json)
            printf("}");
        else if (tc > 0.0 && td > 0.0)
            printf("  %-12s (data is %.1f%% of compute here: 1%% of noise in a run moves h by "
                   "%.2f)\n",
                   "", 100.0 * td / tc, cli_hidden_per_percent(tc, td));
    }
    if (a.json)
        printf("}, \"cpu_bound_by_device\": {");
    for (size_t d = 0, n = 0; d < a.ndevices; d++) {
        if (!is_cpu(a.devices[d]))
            continue;
        if (!a.json && n == 0)
            printf("\nefficiency against the CPU-time bound max(T_compute, T_data, (W_compute +"
                   " W_data) / %d CPUs),\nW a run's CPU time (bound / T_run; 1: the run took "
                   "no longer than its work needs):\n",
                   budget.cpus);
        for (size_t k = 0; k < NOVERLAP; k++) {
            double h[MAX_REPEATS], eff[MAX_REPEATS], bound[MAX_REPEATS];
            cli_spread sp, bs;
            int run = overlap_runs[k];
            round_figures(res[d], run, rounds, budget.cpus, 1, h, eff, bound);
            /* above 1.1 a run beat the bound: noise, as for h */
            cli_spread_of(eff, rounds, 1, &sp);
            if (a.json) {
                if (k == 0) {
                    cli_spread_of(bound, rounds, 0, &bs);
                    printf("%s\"%s\": {\"cpus\": %d, \"bound_ms_per_step\": ", n ? ", " : "",
                           a.devices[d], budget.cpus);
                    json_number(bs.median, 4);
                }
                printf(", \"%s\": ", run_names[run]);
                json_spread(&sp);
            } else if (run == RUN_SINK_FULL || run == RUN_NONSINK) {
                text_spread(a.devices[d], run_titles[run], &sp, rounds, 0, 0);
            }
        }
        if (a.json)
            printf("}");
        n++;
    }
    /* What sinking saves on a sim, by the bus model, against what it saved. */
    if (a.json)
        printf("}, \"bus_model_by_device\": {");
    for (size_t d = 0, n = 0; d < a.ndevices; d++) {
        bus_figures bf;
        char handover_text[128];
        if (is_cpu(a.devices[d]))
            continue;
        bus_model(res[d], rounds, a.devices[d], a.steps, a.channels > 0 ? a.channels : 1,
                  handover[d], &bf);
        if (a.json) {
            printf("%s\"%s\": {\"copy_ms\": %.4f, \"launch_ms\": %.4f, \"handover_ms\": ",
                   n ? ", " : "", a.devices[d], bf.copy_ms, bf.launch_ms);
            json_number(bf.handover_ms, 4);
            printf(", \"saving_ms_per_step\": ");
            json_number(bf.saving_ms, 4);
            printf(", \"predicted_ratio\": ");
            json_number(bf.predicted, 3);
            printf(", \"measured_ratio\": ");
            json_number(bf.measured, 3);
            printf(", \"nonsink_model_ms_per_step\": %.4f, \"nonsink_ms_per_step\": %.4f}",
                   bf.nonsink_model_ms, bf.nonsink_ms);
        } else {
            if (n == 0)
                printf("\nwhat sinking saves across the bus (sink_size 1000 against non-sink): "
                       "a non-sink step pays\nits batch's copy, a launch and a result, and the "
                       "host's hand-over to the device's\nthread and back (measured: steps posted "
                       "there one by one against steps run\nthere as one job) on top of the "
                       "compute-only step; a sink copies beside computing and\npays those "
                       "interactions once per 1000 steps:\n");
            if (isfinite(bf.handover_ms))
                snprintf(handover_text, sizeof handover_text, "hand-over %.3f ms",
                         bf.handover_ms);
            else
                snprintf(handover_text, sizeof handover_text,
                         "hand-over not measured (its paired difference came out <= 0: noise; "
                         "left out)");
            printf("  %-12s copy %.3f ms, launch %.3f ms, %s: saves %.3f ms a step; predicted "
                   "%.2fx, measured %.2fx",
                   a.devices[d], bf.copy_ms, bf.launch_ms, handover_text, bf.saving_ms,
                   bf.predicted, bf.measured);
            if (isfinite(bf.predicted) && isfinite(bf.measured))
                printf(" (%+.0f%%)", 100.0 * (bf.measured / bf.predicted - 1.0));
            printf("\n  %-12s (a non-sink step took %.3f ms, the model's %.3f)\n", "",
                   bf.nonsink_ms, bf.nonsink_model_ms);
        }
        n++;
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
    sl_model_free(scratch);
    sl_bench_batches_free(batches);
    sl_dataset_free(ds);
    sl_profiler_free(profiler); /* after the runs that record into it */
    return exit_code;
}
