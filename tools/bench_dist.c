/* bench_dist.c: `sluice bench dist`: data parallel training across Open MPI
 * ranks against one process at the same global batch, and (with --torch)
 * PyTorch's DistributedDataParallel in the same rounds.
 *
 * Run it without mpirun: each round it starts `mpirun -np R` on this same
 * program (a hidden --rank-run mode, in which every rank trains its shard
 * and rank 0 prints one JSON line), trains the one-process reference
 * itself, and runs the torch script; the order rotates round by round and
 * the figures are medians. Every run trains a fresh LeNet5 from the seeds'
 * MNIST pipeline in sink mode: real batches, never one repeated. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sluice/sluice.h"
#include "bench_util.h"
#include "cli.h"

#define CMD "bench"
#define MAX_REPEATS CLI_BENCH_MAX_REPEATS

enum { OPT_DATA = 256, OPT_RANKS, OPT_BATCH, OPT_THREADS, OPT_WORKERS, OPT_STEPS,
       OPT_REPEATS, OPT_TORCH, OPT_JSON, OPT_RANK_RUN };

typedef struct dist_args {
    const char *data, *torch;
    int64_t ranks, batch, threads, workers, steps, repeats;
    int json, rank_run;
} dist_args;

/* One configuration's figures, per round. */
typedef struct runs {
    double sps[MAX_REPEATS];       /* samples/s */
    double allreduce_us[MAX_REPEATS]; /* per step */
    double step_ms[MAX_REPEATS];   /* wall time per global step */
    double bytes;                  /* allreduced a step */
} runs;

void cli_bench_dist_usage(FILE *f)
{
    fputs("Usage: sluice bench dist [OPTIONS...]\n"
          "\n"
          "Data parallel training across Open MPI ranks against one process, at the same\n"
          "global batch. Run it without mpirun: each round it runs, in an order that\n"
          "rotates from round to round,\n"
          "  ranks        mpirun -np R of this program: each rank --threads / R compute\n"
          "               threads, batch --batch / R of its own shard; gradients\n"
          "               averaged with MPI_Allreduce every step\n"
          "  one process  --threads compute threads, batch --batch, all the data\n"
          "  torch DDP    with --torch SCRIPT: bench/torch_ddp.py, R processes with gloo,\n"
          "               the same LeNet, global batch and steps\n"
          "Each run trains a fresh LeNet5 on the seeds' MNIST pipeline in sink mode for\n"
          "--steps global steps; figures are medians over --repeats rounds. For the\n"
          "ranks it also prints the allreduce's time per step (MPI_Allreduce and the\n"
          "wait for the slower rank, in microseconds and as a share of the step).\n"
          "\n"
          "Options:\n"
          "  --data DIR          MNIST folder (default " CLI_DEFAULT_DATA ")\n"
          "  --ranks N           MPI ranks (default 2)\n"
          "  --batch N           global batch (default 64; a multiple of the ranks)\n"
          "  --threads N         compute threads in all (default: the CPUs, at most 4)\n"
          "  --workers N         pipeline workers per process (default 1)\n"
          "  --steps N           global steps per run (default 1000)\n"
          "  --repeats N         rounds (default 3)\n"
          "  --torch SCRIPT      also run SCRIPT (bench/torch_ddp.py) with Debian's\n"
          "                      /usr/bin/python3 each round\n"
          "  --json              print one JSON object: each configuration's medians and\n"
          "                      runs, the ratios and the allreduce per step\n"
          "  -h, --help          show this help and exit\n",
          f);
}

static int parse_args(int argc, char **argv, dist_args *a)
{
    static const struct option longopts[] = {
        {"data", required_argument, NULL, OPT_DATA},
        {"ranks", required_argument, NULL, OPT_RANKS},
        {"batch", required_argument, NULL, OPT_BATCH},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"workers", required_argument, NULL, OPT_WORKERS},
        {"steps", required_argument, NULL, OPT_STEPS},
        {"repeats", required_argument, NULL, OPT_REPEATS},
        {"torch", required_argument, NULL, OPT_TORCH},
        {"json", no_argument, NULL, OPT_JSON},
        {"rank-run", no_argument, NULL, OPT_RANK_RUN},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    sl_thread_budget b;
    int opt, bad = 0;

    memset(a, 0, sizeof *a);
    sl_thread_budget_default(&b);
    a->data = CLI_DEFAULT_DATA;
    a->ranks = 2;
    a->batch = 64;
    a->threads = b.compute_threads;
    a->workers = 1;
    a->steps = 1000;
    a->repeats = 3;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1 && !bad) {
        switch (opt) {
        case 'h': cli_bench_dist_usage(stdout); return -1;
        case OPT_DATA: a->data = optarg; break;
        case OPT_RANKS: bad = cli_parse_int64(CMD, "--ranks", optarg, 1, 64, &a->ranks); break;
        case OPT_BATCH: bad = cli_parse_int64(CMD, "--batch", optarg, 1, 65536, &a->batch); break;
        case OPT_THREADS: bad = cli_parse_int64(CMD, "--threads", optarg, 1, 64, &a->threads); break;
        case OPT_WORKERS: bad = cli_parse_int64(CMD, "--workers", optarg, 1, 64, &a->workers); break;
        case OPT_STEPS: bad = cli_parse_int64(CMD, "--steps", optarg, 1, INT64_C(1000000000), &a->steps); break;
        case OPT_REPEATS:
            bad = cli_parse_int64(CMD, "--repeats", optarg, 1, MAX_REPEATS, &a->repeats);
            break;
        case OPT_TORCH: a->torch = optarg; break;
        case OPT_JSON: a->json = 1; break;
        case OPT_RANK_RUN: a->rank_run = 1; break;
        default:
            cli_bad_option(CMD, opt, argv, longopts);
            return CLI_EXIT_USAGE;
        }
    }
    if (cli_bench_args_end(CMD, bad, argc, argv, a->threads, &a->workers) != CLI_EXIT_OK)
        return CLI_EXIT_USAGE;
    if (a->batch % a->ranks != 0) {
        cli_error(CMD, "--batch %" PRId64 " does not split evenly among %" PRId64 " ranks",
                  a->batch, a->ranks);
        return CLI_EXIT_USAGE;
    }
    if (!a->rank_run && !sl_distributed_mpi()) {
        cli_error(CMD, "dist: %s", sl_distributed_why_not());
        return CLI_EXIT_FAIL;
    }
    if (!a->rank_run && sl_distributed_launched()) {
        cli_error(CMD, "dist: run it without mpirun: it starts mpirun itself, round by round, "
                       "beside the one-process reference");
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* Trains a fresh LeNet5 --steps global steps: batch and threads per
 * process, this rank's shard when distributed. Fills the samples/s of the
 * whole job, the ms per global step and the parallel stats. */
static int train_once(const dist_args *a, int64_t batch, int64_t threads, int distributed,
                      double *sps, double *step_ms, sl_parallel_stats *st)
{
    sl_model_options mo;
    sl_train_options to;
    cli_pipeline p;
    sl_dataset *ds = NULL;
    sl_model *m;
    int rc, ranks = distributed ? sl_distributed_size() : 1;
    double t0, ms;

    cli_pipeline_default(&p, a->data, CLI_KIND_MNIST, SL_MNIST_TRAIN);
    p.batch = batch;
    if (distributed) {
        p.num_shards = ranks;
        p.shard_id = sl_distributed_rank();
    }
    if (cli_pipeline_build(CMD, &p, (int)a->workers, &ds) < 0)
        return -1;
    sl_model_options_init(&mo);
    mo.network.batch = batch;
    mo.context.threads = (int)threads;
    m = cli_bench_model_new(CMD, &mo);
    if (!m) {
        sl_dataset_free(ds);
        return -1;
    }
    sl_train_options_init(&to);
    to.dataset_sink_mode = 1;
    to.max_steps = a->steps;
    to.distributed = distributed;
    t0 = cli_now_ms();
    rc = sl_model_train_opts(m, INT64_C(1000000), ds, NULL, 0, &to);
    ms = cli_now_ms() - t0;
    if (rc == SL_OK && sl_model_global_step(m) != a->steps) {
        cli_error(CMD, "dist: ran %" PRId64 " steps of %" PRId64, sl_model_global_step(m),
                  a->steps);
        rc = SL_ESTATE;
    } else if (rc < 0) {
        cli_error(CMD, "dist: %s", sl_model_last_error(m));
    }
    if (rc == SL_OK) {
        *sps = (double)a->steps * (double)(batch * ranks) / (ms / 1e3);
        *step_ms = ms / (double)a->steps;
        sl_model_get_parallel_stats(m, st);
    }
    sl_model_free(m);
    sl_dataset_free(ds);
    return rc < 0 ? -1 : 0;
}

/* Under mpirun: this rank's part of one run; rank 0 prints a JSON line. */
static int rank_run(const dist_args *a)
{
    char err[512];
    sl_parallel_stats st;
    double sps = 0, step_ms = 0;
    int rc, ranks;
    if (sl_distributed_init(err, sizeof err) < 0) {
        cli_error(CMD, "dist: %s", err);
        return CLI_EXIT_FAIL;
    }
    ranks = sl_distributed_size();
    rc = train_once(a, a->batch / ranks, a->threads / ranks > 0 ? a->threads / ranks : 1, 1,
                    &sps, &step_ms, &st);
    if (rc == 0 && sl_distributed_rank() == 0)
        printf("{\"samples_per_s\": %.1f, \"step_ms\": %.5f, \"allreduce_us_per_step\": %.2f, "
               "\"compute_ms_per_step\": %.5f, \"allreduce_bytes\": %" PRId64
               ", \"ranks\": %d}\n",
               sps, step_ms, st.steps > 0 ? 1e3 * st.allreduce_ms / (double)st.steps : 0.0,
               st.steps > 0 ? st.compute_ms / (double)st.steps : 0.0,
               st.allreduce_floats * 4, ranks);
    fflush(stdout);
    sl_distributed_finalize(rc != 0);
    return rc == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

/* s, quoted for sh. */
static void shell_quote(char *out, size_t len, const char *s)
{
    size_t k = 0;
    if (len < 3)
        return;
    out[k++] = '\'';
    for (; *s && k + 6 < len; s++) {
        if (*s == '\'') {
            memcpy(out + k, "'\\''", 4);
            k += 4;
        } else {
            out[k++] = *s;
        }
    }
    out[k++] = '\'';
    out[k] = '\0';
}

/* The number after "key": in a JSON line; -1 when absent. */
static double json_number(const char *line, const char *key)
{
    char pat[64];
    const char *p;
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    p = strstr(line, pat);
    return p ? strtod(p + strlen(pat), NULL) : -1.0;
}

/* Runs cmd through sh; its stdout from the last line that starts with '{'
 * on (one JSON object, on one line or several) goes to line. 0, or -1
 * (reported) when it failed or printed none. */
static int run_json(const char *what, const char *cmd, char *line, size_t len)
{
    char buf[4096];
    FILE *f = popen(cmd, "r");
    int st, got = 0;
    size_t used = 0;
    if (!f) {
        cli_error(CMD, "dist: cannot run %s", what);
        return -1;
    }
    while (fgets(buf, sizeof buf, f)) {
        if (buf[0] == '{') {
            used = 0;
            got = 1;
        }
        if (got && used + strlen(buf) < len) {
            memcpy(line + used, buf, strlen(buf) + 1);
            used += strlen(buf);
        }
    }
    st = pclose(f);
    if (st != 0 || !got) {
        cli_error(CMD, "dist: %s failed (exit status %d%s): %s", what,
                  WIFEXITED(st) ? WEXITSTATUS(st) : -1, got ? "" : ", no JSON line", cmd);
        return -1;
    }
    return 0;
}

static int run_ranks(const dist_args *a, runs *r, int round)
{
    char self[4096], qself[4200], qdata[4200], cmd[12000], line[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        cli_error(CMD, "dist: cannot find this program (/proc/self/exe)");
        return -1;
    }
    self[n] = '\0';
    shell_quote(qself, sizeof qself, self);
    shell_quote(qdata, sizeof qdata, a->data);
    /* root needs mpirun's consent; more ranks than CPUs its --oversubscribe */
    snprintf(cmd, sizeof cmd,
             "mpirun %s--oversubscribe -np %" PRId64 " %s bench dist --rank-run --data %s "
             "--ranks %" PRId64 " --batch %" PRId64 " --threads %" PRId64 " --workers %" PRId64
             " --steps %" PRId64,
             geteuid() == 0 ? "--allow-run-as-root " : "", a->ranks, qself, qdata, a->ranks,
             a->batch, a->threads, a->workers, a->steps);
    if (run_json("mpirun", cmd, line, sizeof line) < 0)
        return -1;
    r->sps[round] = json_number(line, "samples_per_s");
    r->step_ms[round] = json_number(line, "step_ms");
    r->allreduce_us[round] = json_number(line, "allreduce_us_per_step");
    r->bytes = json_number(line, "allreduce_bytes");
    if (!(r->sps[round] > 0) || !(r->step_ms[round] > 0) || r->allreduce_us[round] < 0 ||
        !(r->bytes > 0)) {
        cli_error(CMD, "dist: the ranks printed no usable figures: %s", line);
        return -1;
    }
    return 0;
}

static int run_torch(const dist_args *a, runs *r, int round)
{
    char qs[4200], qdata[4200], cmd[9000], line[65536];
    shell_quote(qs, sizeof qs, a->torch);
    shell_quote(qdata, sizeof qdata, a->data);
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 %s --ranks %" PRId64 " --threads %" PRId64
             " --global-batch %" PRId64 " --steps %" PRId64 " --repeats 1 --data %s --json",
             qs, a->ranks, a->threads / a->ranks > 0 ? a->threads / a->ranks : 1, a->batch,
             a->steps, qdata);
    if (run_json(a->torch, cmd, line, sizeof line) < 0)
        return -1;
    r->sps[round] = json_number(line, "median_samples_per_s");
    r->step_ms[round] = json_number(line, "median_step_ms");
    r->allreduce_us[round] = json_number(line, "median_allreduce_us");
    if (!(r->sps[round] > 0)) {
        cli_error(CMD, "dist: %s printed no usable samples/s: %.200s", a->torch, line);
        return -1;
    }
    return 0;
}

int cli_bench_dist_main(int argc, char **argv)
{
    dist_args a;
    runs ranks, one, torch;
    size_t n;
    int nconf;
    double r_sps, o_sps, t_sps = 0, ar_us, step_ms;
    int rc = parse_args(argc, argv, &a);
    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if (a.rank_run)
        return rank_run(&a);
    cli_blas_warn();
    memset(&ranks, 0, sizeof ranks);
    memset(&one, 0, sizeof one);
    memset(&torch, 0, sizeof torch);
    nconf = a.torch ? 3 : 2;
    if (!a.json) {
        printf("bench dist: LeNet5 on %s, sink mode, %" PRId64 " global steps a run, global "
               "batch %" PRId64 ", %d CPUs, %s\n",
               a.data, a.steps, a.batch, sl_cpus_available(), sl_distributed_mpi());
        printf("  ranks: mpirun -np %" PRId64 ", %" PRId64 " compute thread%s and batch %" PRId64
               " each\n", a.ranks, a.threads / a.ranks > 0 ? a.threads / a.ranks : 1,
               a.threads / a.ranks > 1 ? "s" : "", a.batch / a.ranks);
        printf("  one process: %" PRId64 " compute thread%s, batch %" PRId64 "\n", a.threads,
               a.threads == 1 ? "" : "s", a.batch);
        if (a.torch)
            printf("  torch DDP: %s, %" PRId64 " processes with gloo\n", a.torch, a.ranks);
        fflush(stdout);
    }
    n = (size_t)a.repeats;
    for (size_t r = 0; r < n; r++) {
        for (int k = 0; k < nconf; k++) {
            int which = (int)((r + (size_t)k) % (size_t)nconf); /* rotate the order */
            sl_parallel_stats st;
            if (which == 0 && run_ranks(&a, &ranks, (int)r) < 0)
                return CLI_EXIT_FAIL;
            if (which == 1 && train_once(&a, a.batch, a.threads, 0, &one.sps[r],
                                         &one.step_ms[r], &st) < 0)
                return CLI_EXIT_FAIL;
            if (which == 2 && run_torch(&a, &torch, (int)r) < 0)
                return CLI_EXIT_FAIL;
        }
        if (!a.json) {
            fprintf(stderr, "  round %zu/%zu: ranks %.0f, one process %.0f", r + 1, n,
                    ranks.sps[r], one.sps[r]);
            if (a.torch)
                fprintf(stderr, ", torch DDP %.0f", torch.sps[r]);
            fprintf(stderr, " samples/s\n");
        }
    }
    r_sps = cli_bench_median_of(ranks.sps, n);
    o_sps = cli_bench_median_of(one.sps, n);
    if (a.torch)
        t_sps = cli_bench_median_of(torch.sps, n);
    ar_us = cli_bench_median_of(ranks.allreduce_us, n);
    step_ms = cli_bench_median_of(ranks.step_ms, n);
    if (a.json) {
        printf("{\"ranks\": %" PRId64 ", \"global_batch\": %" PRId64 ", \"threads\": %" PRId64
               ", \"workers\": %" PRId64 ", \"steps\": %" PRId64 ", \"cpus\": %d, \"mpi\": ",
               a.ranks, a.batch, a.threads, a.workers, a.steps, sl_cpus_available());
        cli_json_string(stdout, sl_distributed_mpi());
        printf(", \"ranks_samples_per_s\": %.1f, \"ranks_runs\": ", r_sps);
        cli_bench_json_runs(stdout, ranks.sps, n);
        printf(", \"one_process_samples_per_s\": %.1f, \"one_process_runs\": ", o_sps);
        cli_bench_json_runs(stdout, one.sps, n);
        printf(", \"ratio_one_process\": %.4f, \"step_ms\": %.5f, \"allreduce_us_per_step\": "
               "%.2f, \"allreduce_share\": %.4f, \"allreduce_bytes\": %.0f",
               o_sps > 0 ? r_sps / o_sps : 0.0, step_ms, ar_us,
               step_ms > 0 ? ar_us / 1e3 / step_ms : 0.0, ranks.bytes);
        if (a.torch) {
            printf(", \"torch_ddp_samples_per_s\": %.1f, \"torch_ddp_runs\": ", t_sps);
            cli_bench_json_runs(stdout, torch.sps, n);
            printf(", \"ratio_torch_ddp\": %.4f, \"torch_allreduce_us\": %.2f",
                   t_sps > 0 ? r_sps / t_sps : 0.0, cli_bench_median_of(torch.allreduce_us, n));
        }
        printf("}\n");
        return CLI_EXIT_OK;
    }
    printf("ranks:       %.0f samples/s (median of %zu): %.2fx one process\n", r_sps, n,
           o_sps > 0 ? r_sps / o_sps : 0.0);
    printf("one process: %.0f samples/s\n", o_sps);
    if (a.torch)
        printf("torch DDP:   %.0f samples/s: sluice's ranks are %.2fx it\n", t_sps,
               t_sps > 0 ? r_sps / t_sps : 0.0);
    printf("a global step across the ranks: %.3f ms, of which the allreduce (MPI_Allreduce of "
           "the fused gradients, and the wait for the slower rank) %.1f us (%.1f%%)\n",
           step_ms, ar_us, step_ms > 0 ? 100.0 * ar_us / 1e3 / step_ms : 0.0);
    return CLI_EXIT_OK;
}
