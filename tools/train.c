/* train.c: `sluice train` and `sluice eval`: LeNet5 (or an MLP) on an MNIST
 * folder with the seeds' preprocessing, through sl_model. Training prints
 * the seeds' LossMonitor lines, then evaluates on the test split. */
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"
#include "cli.h"

enum {
    OPT_MODEL = 256, OPT_DATA, OPT_EPOCHS, OPT_BATCH, OPT_MODE, OPT_LR, OPT_MOMENTUM,
    OPT_OPTIMIZER, OPT_SEED, OPT_WORKERS, OPT_THREADS, OPT_BLAS_THREADS, OPT_SAVE,
    OPT_LOAD, OPT_RESUME, OPT_SAVE_GRAPHS, OPT_LOG_EVERY, OPT_MAX_STEPS, OPT_NO_EVAL, OPT_CKPT_DIR,
    OPT_CKPT_STEPS, OPT_CKPT_KEEP, OPT_TIME, OPT_JSON, OPT_DATA_TIMEOUT, OPT_SINK, OPT_NO_SINK,
    OPT_SINK_SIZE, OPT_DEVICE, OPT_QUEUE_CAPACITY, OPT_GETNEXT_TIMEOUT, OPT_TRANSFER, OPT_POOL_IDLE_MB,
    OPT_ERROR_SAMPLES, OPT_MAX_BAD_SAMPLES
};

/* Options both commands share, and train's own. */
typedef struct train_args {
    const char *cmd;
    sl_model_options model;
    sl_train_options train;
    const char *device;
    const char *data;
    int64_t epochs;
    int64_t workers;
    int64_t pool_idle_mb;    /* -1: the library's default */
    const char *save, *load, *resume, *save_graphs;
    int64_t log_every;       /* 0: one line at each epoch's end */
    int64_t max_steps;       /* 0: no limit */
    int no_eval;
    const char *ckpt_dir;
    int64_t ckpt_steps;
    int64_t ckpt_keep;
    int time_monitor;
    int json;
    cli_error_samples errors; /* for the train split */
    cli_bad_report report;
} train_args;

void cli_train_usage(FILE *f)
{
    fputs("Usage: sluice train [OPTIONS...]\n"
          "\n"
          "Trains LeNet5 (or an MLP) on an MNIST folder with the seeds' preprocessing\n"
          "(resize 32x32 bilinear, rescale 1/255, rescale 1/0.3081 shift -0.1307/0.3081,\n"
          "HWC2CHW, label int32, shuffle 10000, batch dropping the remainder), printing\n"
          "MindSpore's LossMonitor lines, then evaluates on the test split (all of it:\n"
          "a short last batch is padded) and prints the accuracy. Training sinks the\n"
          "data by default: a transfer thread copies ready batches into the device's\n"
          "queue while the executor runs the steps back to back, taking each with\n"
          "GetNext, and returns once per sink (--no-sink: one batch, one step, then the\n"
          "callbacks, as MindSpore's dataset_sink_mode=False).\n"
          "\n"
          "Options:\n"
          "  --model lenet|mlp   network (default lenet)\n"
          "  --data DIR          MNIST folder (default " CLI_DEFAULT_DATA ")\n"
          "  --epochs N          passes over the train split (default 1)\n"
          "  --batch N           batch size (default 32)\n"
          "  --mode graph|pynative  compile the step once (graph, default) or run\n"
          "                      op by op (pynative); both give the same numbers\n"
          "  --lr X              learning rate (default 0.01)\n"
          "  --momentum X        Momentum's momentum (default 0.9)\n"
          "  --optimizer momentum|sgd  (default momentum)\n"
          "  --seed N            seed of the initial weights and the data order (default 0)\n"
          "  --workers N         pipeline worker threads (default 1 when the compute\n"
          "                      threads fill every CPU, else 2)\n"
          "  --pool-idle-mb N    the most MiB of freed pipeline buffers kept for reuse;\n"
          "                      0 caches nothing (default: half the most in use at\n"
          "                      once, at least 8 and at most 64 MiB)\n"
          "  --threads N         executor compute threads (default: the CPUs, at most 4)\n"
          "  --blas-threads N    OpenBLAS threads (default 1)\n"
          "  --data-timeout S    fail when no batch comes for S seconds, naming the\n"
          "                      stalled pipeline stage (default 300; 0: wait for ever)\n"
          "  --sink, --no-sink   sink the data (default) or feed every step from the host\n"
          "  --sink-size N       steps per sink: -1 (default) sinks each epoch whole;\n"
          "                      N > 0 makes each epoch N steps of an endless traversal\n"
          "                      (epochs x N steps in all), as MindSpore's sink_size\n"
          "  --device D          cpu:0 (default) or sim:0, a model of an accelerator\n"
          "                      across a PCIe 4.0 x16 bus (copies and launches cost time)\n"
          "  --queue-capacity N  batches the device queue holds (default 4)\n"
          "  --transfer MODE     who copies batches into the device queue: thread (a\n"
          "                      transfer thread, overlapping the steps), inline (the\n"
          "                      executor, before each step) or auto (default: inline\n"
          "                      on cpu when the compute threads fill every CPU)\n"
          "  --getnext-timeout S fail when GetNext waits S seconds for a batch, naming\n"
          "                      what starves the queue (default 300; 0: wait for ever)\n"
          CLI_ERROR_SAMPLES_HELP
          "                      (in the train split; evaluation fails on one)\n"
          "  --log-every N       a loss line every N steps (default: each epoch's last)\n"
          "  --time              TimeMonitor lines at each epoch's end\n"
          "  --max-steps N       stop after N steps in all (default: no limit)\n"
          "  --save CKPT         write the trained parameters to CKPT\n"
          "  --load CKPT         start from CKPT's parameters (a new run)\n"
          "  --resume CKPT       continue the run that wrote CKPT exactly where it\n"
          "                      stopped: same data order, random draws and optimizer\n"
          "                      state; --epochs and --max-steps count from that run's\n"
          "                      start (give it the same --data, --seed and batch)\n"
          "  --ckpt-dir DIR      save checkpoints DIR/lenet-<epoch>_<step>.ckpt during\n"
          "                      training: each epoch, or every --ckpt-steps N steps,\n"
          "                      keeping the newest --ckpt-keep N (default 5) by epoch\n"
          "                      and step, an earlier run's files in DIR too (0: all)\n"
          "  --save-graphs DIR   write the compiled steps as .ir and .dot files\n"
          "  --no-eval           skip the evaluation\n"
          "  --json              print the result as one JSON object (no loss lines)\n"
          "  -h, --help          show this help and exit\n",
          f);
}

void cli_eval_usage(FILE *f)
{
    fputs("Usage: sluice eval --load CKPT [OPTIONS...]\n"
          "\n"
          "Evaluates a checkpoint written by `sluice train --save` on the test split of an\n"
          "MNIST folder (the seeds' preprocessing; all samples, a short last batch\n"
          "padded) and prints the accuracy and the mean loss.\n"
          "\n"
          "Options:\n"
          "  --load CKPT         the checkpoint (required)\n"
          "  --model lenet|mlp   network the checkpoint is of (default lenet)\n"
          "  --data DIR          MNIST folder (default " CLI_DEFAULT_DATA ")\n"
          "  --batch N           batch size (default 32)\n"
          "  --mode graph|pynative  (default graph)\n"
          "  --workers N         pipeline worker threads (default 1 when the compute\n"
          "                      threads fill every CPU, else 2)\n"
          "  --threads N         executor compute threads (default: the CPUs, at most 4)\n"
          "  --blas-threads N    OpenBLAS threads (default 1)\n"
          "  --data-timeout S    fail when no batch comes for S seconds, naming the\n"
          "                      stalled pipeline stage (default 300; 0: wait for ever)\n"
          "  --json              print one JSON object\n"
          "  -h, --help          show this help and exit\n",
          f);
}

int cli_parse_mode(const char *cmd, const char *s, sl_mode *out)
{
    if (strcmp(s, "graph") == 0 || strcmp(s, "GRAPH") == 0)
        *out = SL_GRAPH_MODE;
    else if (strcmp(s, "pynative") == 0 || strcmp(s, "PYNATIVE") == 0)
        *out = SL_PYNATIVE_MODE;
    else {
        cli_error(cmd, "--mode: '%s' is not graph or pynative", s);
        return -1;
    }
    return 0;
}

int cli_parse_model(const char *cmd, const char *s, sl_network_kind *out)
{
    if (sl_network_kind_parse(s, out) != SL_OK) {
        cli_error(cmd, "--model: '%s' is not lenet or mlp", s);
        return -1;
    }
    return 0;
}

static int parse_float(const char *cmd, const char *what, const char *s, double min, double max,
                       float *out)
{
    double v;
    if (cli_parse_double(cmd, what, s, &v) != 0)
        return -1;
    if (!(v > min && v < max)) {
        cli_error(cmd, "%s: %s is outside (%g, %g)", what, s, min, max);
        return -1;
    }
    *out = (float)v;
    return 0;
}

static int parse_option(train_args *a, int opt, const char *arg)
{
    const char *cmd = a->cmd;
    int64_t v;
    switch (opt) {
    case OPT_MODEL: return cli_parse_model(cmd, arg, &a->model.network.kind);
    case OPT_DATA: a->data = arg; return 0;
    case OPT_EPOCHS: return cli_parse_int64(cmd, "--epochs", arg, 1, 100000, &a->epochs);
    case OPT_BATCH:
        return cli_parse_int64(cmd, "--batch", arg, 1, 65536, &a->model.network.batch);
    case OPT_MODE: return cli_parse_mode(cmd, arg, &a->model.context.mode);
    case OPT_LR: return parse_float(cmd, "--lr", arg, 0.0, 1e6, &a->model.learning_rate);
    case OPT_MOMENTUM:
        if (strcmp(arg, "0") == 0) {
            a->model.momentum = 0.0f;
            return 0;
        }
        return parse_float(cmd, "--momentum", arg, 0.0, 1.0, &a->model.momentum);
    case OPT_OPTIMIZER:
        if (strcmp(arg, "momentum") == 0)
            a->model.optimizer = SL_OPTIMIZER_MOMENTUM;
        else if (strcmp(arg, "sgd") == 0)
            a->model.optimizer = SL_OPTIMIZER_SGD;
        else {
            cli_error(cmd, "--optimizer: '%s' is not momentum or sgd", arg);
            return -1;
        }
        return 0;
    case OPT_SEED:
        if (cli_parse_int64(cmd, "--seed", arg, 0, INT64_MAX, &v) != 0)
            return -1;
        a->model.seed = (uint64_t)v;
        return 0;
    case OPT_WORKERS: return cli_parse_int64(cmd, "--workers", arg, 1, 64, &a->workers);
    case OPT_POOL_IDLE_MB:
        return cli_parse_int64(cmd, "--pool-idle-mb", arg, 0, CLI_MAX_POOL_IDLE_MB,
                               &a->pool_idle_mb);
    case OPT_THREADS:
        if (cli_parse_int64(cmd, "--threads", arg, 1, 64, &v) != 0)
            return -1;
        a->model.context.threads = (int)v;
        return 0;
    case OPT_BLAS_THREADS:
        if (cli_parse_int64(cmd, "--blas-threads", arg, 1, 64, &v) != 0)
            return -1;
        a->model.context.blas_threads = (int)v;
        return 0;
    case OPT_DATA_TIMEOUT:
        /* seconds; 0 waits for ever */
        if (cli_parse_int64(cmd, "--data-timeout", arg, 0, 1000000000, &v) != 0)
            return -1;
        a->model.data_timeout_ms = v == 0 ? -1 : v * 1000;
        return 0;
    case OPT_SINK: a->train.dataset_sink_mode = 1; return 0;
    case OPT_NO_SINK: a->train.dataset_sink_mode = 0; return 0;
    case OPT_SINK_SIZE:
        if (strcmp(arg, "-1") == 0) {
            a->train.sink_size = -1;
            return 0;
        }
        return cli_parse_int64(cmd, "--sink-size", arg, 1, INT64_MAX, &a->train.sink_size);
    case OPT_DEVICE: {
        char kind[8];
        int id, end = 0;
        if (sscanf(arg, "%7[a-z]:%d%n", kind, &id, &end) != 2 || arg[end] != '\0' ||
            (strcmp(kind, "cpu") != 0 && strcmp(kind, "sim") != 0) || id < 0 || id > 63) {
            cli_error(cmd, "--device: '%s' is not cpu:N or sim:N (N in [0, 63])", arg);
            return -1;
        }
        a->device = arg;
        a->model.context.device_target = strcmp(kind, "cpu") == 0 ? "CPU" : "SIM";
        a->model.context.device_id = id;
        return 0;
    }
    case OPT_QUEUE_CAPACITY:
        return cli_parse_int64(cmd, "--queue-capacity", arg, 1, 4096, &a->train.queue_capacity);
    case OPT_TRANSFER: {
        sl_transfer_mode t;
        if (sl_transfer_mode_parse(arg, &t) != SL_OK) {
            cli_error(cmd, "--transfer: '%s' is not auto, thread or inline", arg);
            return -1;
        }
        a->train.transfer = (int32_t)t;
        return 0;
    }
    case OPT_GETNEXT_TIMEOUT:
        if (cli_parse_int64(cmd, "--getnext-timeout", arg, 0, 1000000000, &v) != 0)
            return -1;
        a->train.getnext_timeout_ms = v == 0 ? -1 : v * 1000;
        return 0;
    case OPT_SAVE: a->save = arg; return 0;
    case OPT_LOAD: a->load = arg; return 0;
    case OPT_RESUME: a->resume = arg; return 0;
    case OPT_SAVE_GRAPHS: a->save_graphs = arg; return 0;
    case OPT_LOG_EVERY: return cli_parse_int64(cmd, "--log-every", arg, 1, INT64_MAX, &a->log_every);
    case OPT_MAX_STEPS: return cli_parse_int64(cmd, "--max-steps", arg, 1, INT64_MAX, &a->max_steps);
    case OPT_NO_EVAL: a->no_eval = 1; return 0;
    case OPT_CKPT_DIR: a->ckpt_dir = arg; return 0;
    case OPT_CKPT_STEPS:
        return cli_parse_int64(cmd, "--ckpt-steps", arg, 1, INT64_MAX, &a->ckpt_steps);
    case OPT_CKPT_KEEP: return cli_parse_int64(cmd, "--ckpt-keep", arg, 0, 100000, &a->ckpt_keep);
    case OPT_ERROR_SAMPLES: return cli_parse_error_samples(cmd, arg, &a->errors);
    case OPT_MAX_BAD_SAMPLES: return cli_parse_max_bad_samples(cmd, arg, &a->errors);
    case OPT_TIME: a->time_monitor = 1; return 0;
    case OPT_JSON: a->json = 1; return 0;
    }
    return -1;
}

/* CLI_EXIT_OK, CLI_EXIT_USAGE, or -1 after --help. */
static int parse_args(int argc, char **argv, train_args *a, int is_eval)
{
    static const struct option train_opts[] = {
        {"model", required_argument, NULL, OPT_MODEL},
        {"data", required_argument, NULL, OPT_DATA},
        {"epochs", required_argument, NULL, OPT_EPOCHS},
        {"batch", required_argument, NULL, OPT_BATCH},
        {"mode", required_argument, NULL, OPT_MODE},
        {"lr", required_argument, NULL, OPT_LR},
        {"momentum", required_argument, NULL, OPT_MOMENTUM},
        {"optimizer", required_argument, NULL, OPT_OPTIMIZER},
        {"seed", required_argument, NULL, OPT_SEED},
        {"workers", required_argument, NULL, OPT_WORKERS},
        {"pool-idle-mb", required_argument, NULL, OPT_POOL_IDLE_MB},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"blas-threads", required_argument, NULL, OPT_BLAS_THREADS},
        {"data-timeout", required_argument, NULL, OPT_DATA_TIMEOUT},
        {"sink", no_argument, NULL, OPT_SINK},
        {"no-sink", no_argument, NULL, OPT_NO_SINK},
        {"sink-size", required_argument, NULL, OPT_SINK_SIZE},
        {"device", required_argument, NULL, OPT_DEVICE},
        {"queue-capacity", required_argument, NULL, OPT_QUEUE_CAPACITY},
        {"getnext-timeout", required_argument, NULL, OPT_GETNEXT_TIMEOUT},
        {"transfer", required_argument, NULL, OPT_TRANSFER},
        {"error-samples", required_argument, NULL, OPT_ERROR_SAMPLES},
        {"max-bad-samples", required_argument, NULL, OPT_MAX_BAD_SAMPLES},
        {"save", required_argument, NULL, OPT_SAVE},
        {"load", required_argument, NULL, OPT_LOAD},
        {"resume", required_argument, NULL, OPT_RESUME},
        {"save-graphs", required_argument, NULL, OPT_SAVE_GRAPHS},
        {"log-every", required_argument, NULL, OPT_LOG_EVERY},
        {"max-steps", required_argument, NULL, OPT_MAX_STEPS},
        {"no-eval", no_argument, NULL, OPT_NO_EVAL},
        {"ckpt-dir", required_argument, NULL, OPT_CKPT_DIR},
        {"ckpt-steps", required_argument, NULL, OPT_CKPT_STEPS},
        {"ckpt-keep", required_argument, NULL, OPT_CKPT_KEEP},
        {"time", no_argument, NULL, OPT_TIME},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const struct option eval_opts[] = {
        {"model", required_argument, NULL, OPT_MODEL},
        {"data", required_argument, NULL, OPT_DATA},
        {"batch", required_argument, NULL, OPT_BATCH},
        {"mode", required_argument, NULL, OPT_MODE},
        {"workers", required_argument, NULL, OPT_WORKERS},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"blas-threads", required_argument, NULL, OPT_BLAS_THREADS},
        {"data-timeout", required_argument, NULL, OPT_DATA_TIMEOUT},
        {"load", required_argument, NULL, OPT_LOAD},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const struct option *longopts = is_eval ? eval_opts : train_opts;
    int opt;

    memset(a, 0, sizeof *a);
    a->cmd = is_eval ? "eval" : "train";
    sl_model_options_init(&a->model);
    sl_train_options_init(&a->train);
    a->train.dataset_sink_mode = 1;
    a->device = "cpu:0";
    a->data = CLI_DEFAULT_DATA;
    a->epochs = 1;
    a->ckpt_keep = 5;
    cli_error_samples_default(&a->errors);
    a->report.cmd = a->cmd;
    a->pool_idle_mb = -1;

    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (opt == 'h') {
            (is_eval ? cli_eval_usage : cli_train_usage)(stdout);
            return -1;
        }
        if (opt == '?' || opt == ':') {
            cli_bad_option(a->cmd, opt, argv, longopts);
            return CLI_EXIT_USAGE;
        }
        if (parse_option(a, opt, optarg) != 0)
            return CLI_EXIT_USAGE;
    }
    if (optind < argc) {
        cli_error(a->cmd, "unexpected argument '%s' (see --help)", argv[optind]);
        return CLI_EXIT_USAGE;
    }
    if (is_eval && !a->load) {
        cli_error(a->cmd, "--load CKPT is required (see --help)");
        return CLI_EXIT_USAGE;
    }
    if (a->resume && a->load) {
        cli_error(a->cmd, "--resume loads its checkpoint: give --resume or --load, not both");
        return CLI_EXIT_USAGE;
    }
    a->train.resume = a->resume != NULL;
    if ((a->ckpt_steps || a->ckpt_keep != 5) && !a->ckpt_dir) {
        cli_error(a->cmd, "--ckpt-steps and --ckpt-keep need --ckpt-dir");
        return CLI_EXIT_USAGE;
    }
    if (cli_check_error_samples(a->cmd, &a->errors) != 0)
        return CLI_EXIT_USAGE;
    if (a->model.optimizer == SL_OPTIMIZER_MOMENTUM && !(a->model.momentum < 1.0f)) {
        cli_error(a->cmd, "--momentum must be < 1");
        return CLI_EXIT_USAGE;
    }
    a->model.context.save_graphs = a->save_graphs != NULL;
    if (a->workers == 0)
        a->workers = cli_training_workers(a->model.context.threads);
    if (a->save_graphs)
        a->model.context.save_graphs_path = a->save_graphs;
    return CLI_EXIT_OK;
}

/* The seeds' pipeline over one split of the MNIST folder. */
static int make_dataset(train_args *a, sl_mnist_usage usage, sl_dataset **out)
{
    cli_pipeline p;
    int splits = cli_mnist_splits(a->data);
    cli_kind kind;

    if (cli_detect_kind(a->cmd, a->data, &kind) != 0)
        return -1;
    if (!(splits & (usage == SL_MNIST_TRAIN ? CLI_SPLIT_TRAIN : CLI_SPLIT_TEST))) {
        cli_error(a->cmd,
                  "%s holds no MNIST %s split (%s-images-idx3-ubyte[.gz]); training and "
                  "evaluation read MNIST folders",
                  a->data, usage == SL_MNIST_TRAIN ? "train" : "test",
                  usage == SL_MNIST_TRAIN ? "train" : "t10k");
        return -1;
    }
    cli_pipeline_default(&p, a->data, CLI_KIND_MNIST, usage);
    p.batch = a->model.network.batch;
    p.seed = a->model.seed;
    p.pool_idle_mb = a->pool_idle_mb;
    if (usage == SL_MNIST_TEST) {
        /* Every test sample counts: keep the short last batch (the model
         * pads it); the order does not matter. */
        p.drop_remainder = 0;
        p.shuffle = 0;
        p.source_shuffle = 0;
    } else {
        p.errors = a->errors;
        p.report = &a->report;
    }
    return cli_pipeline_build(a->cmd, &p, (int)a->workers, out) == SL_OK ? 0 : -1;
}

static void print_line(void *user, const char *line)
{
    (void)user;
    printf("%s\n", line);
    fflush(stdout);
}

/* --- callbacks of the command line ------------------------------------ */

/* A progress line on stderr, redrawn at most 10 times a second. */
typedef struct progress {
    double last_ms, start_ms;
    int64_t start_step;
    int64_t log_every;   /* the loss monitor's, whose lines it must not cut */
    int drawn;
} progress;

static int progress_clear(void *self, const sl_train_info *info);

static int progress_step(void *self, const sl_train_info *info)
{
    progress *p = self;
    double now = cli_now_ms();
    int loss_line = p->log_every > 0 ? info->step_in_epoch % p->log_every == 0
                                     : info->step_in_epoch == info->steps_per_epoch;
    if (loss_line)
        return progress_clear(self, info); /* the monitor prints next */
    if (now - p->last_ms < 100.0)
        return 0;
    p->last_ms = now;
    fprintf(stderr, "\r  epoch %" PRId64 "/%" PRId64 "  step %" PRId64, info->epoch,
            info->epoch_num, info->step_in_epoch);
    if (info->steps_per_epoch > 0)
        fprintf(stderr, "/%" PRId64, info->steps_per_epoch);
    fprintf(stderr, "  loss %.4f  %.0f samples/s   ", (double)info->loss,
            (double)(info->global_step - p->start_step) * (double)info->batch_size /
                ((now - p->start_ms) / 1e3));
    p->drawn = 1;
    return 0;
}

/* Clears the progress line (before a loss line, at the end). */
static int progress_clear(void *self, const sl_train_info *info)
{
    progress *p = self;
    (void)info;
    if (p->drawn)
        fprintf(stderr, "\r%*s\r", 78, "");
    p->drawn = 0;
    return 0;
}

static void print_eval(const train_args *a, const sl_metrics *m)
{
    if (a->json)
        return;
    printf("eval: accuracy %.4f (%" PRId64 "/%" PRId64 "), loss %.4f\n", m->accuracy,
           (int64_t)(m->accuracy * (double)m->samples + 0.5), m->samples, m->loss);
}

static int run_eval(const train_args *a, sl_model *model, sl_dataset *test, sl_metrics *metrics)
{
    int rc = sl_model_eval(model, test, metrics);
    if (rc < 0) {
        cli_error(a->cmd, "%s", cli_lib_message(sl_model_last_error(model), rc));
        return CLI_EXIT_FAIL;
    }
    print_eval(a, metrics);
    return CLI_EXIT_OK;
}

static sl_model *make_model(const train_args *a)
{
    char err[512];
    sl_model *model = NULL;
    int rc = sl_model_new(&model, &a->model, err, sizeof err);
    if (rc < 0) {
        cli_error(a->cmd, "%s", cli_lib_message(err, rc));
        return NULL;
    }
    if ((a->load || a->resume) && sl_model_load(model, a->load ? a->load : a->resume) < 0) {
        cli_error(a->cmd, "%s", sl_model_last_error(model));
        sl_model_free(model);
        return NULL;
    }
    return model;
}

int cli_train_main(int argc, char **argv)
{
    train_args a;
    sl_model *model = NULL;
    sl_dataset *train = NULL, *test = NULL;
    sl_callback cbs[5];
    sl_callback *list[5];
    size_t ncbs = 0;
    progress prog;
    sl_metrics metrics;
    sl_pool_stats pool;
    double t0, train_ms;
    int rc = parse_args(argc, argv, &a, 0), exit_code = CLI_EXIT_OK;
    int64_t start_step, steps_per_epoch;

    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    memset(cbs, 0, sizeof cbs);
    /* Both splits first: a missing test split should not wait for the end
     * of training to be reported. */
    if (make_dataset(&a, SL_MNIST_TRAIN, &train) != 0 ||
        (!a.no_eval && make_dataset(&a, SL_MNIST_TEST, &test) != 0)) {
        sl_dataset_free(train);
        return CLI_EXIT_FAIL;
    }
    model = make_model(&a);
    if (!model) {
        sl_dataset_free(train);
        sl_dataset_free(test);
        return CLI_EXIT_FAIL;
    }
    start_step = sl_model_global_step(model);
    sl_dataset_get_dataset_size(train, &steps_per_epoch); /* the source is set */
    if (!a.json) {
        printf("train: %s on %s, batch %" PRId64 ", %" PRId64 " steps per epoch, %" PRId64
               " epoch%s, %s mode, lr %g, %s%s\n",
               sl_network_kind_name(a.model.network.kind), a.data, a.model.network.batch,
               steps_per_epoch, a.epochs, a.epochs == 1 ? "" : "s",
               a.model.context.mode == SL_GRAPH_MODE ? "GRAPH" : "PYNATIVE",
               (double)a.model.learning_rate,
               a.model.optimizer == SL_OPTIMIZER_SGD ? "SGD" : "Momentum",
               a.load ? " (from the checkpoint)" : "");
        if (a.resume)
            printf("resuming %s at global step %" PRId64 "\n", a.resume, start_step);
        if (a.train.dataset_sink_mode)
            printf("data sink on %s: sink_size %" PRId64 " (%s), device queue of %" PRId64
                   " batches\n",
                   a.device, a.train.sink_size,
                   a.train.sink_size < 0 ? "each epoch sinks the whole dataset"
                                         : "each epoch sinks sink_size steps",
                   a.train.queue_capacity);
        else
            printf("no sink on %s: the host feeds every step\n", a.device);
        sl_thread_budget b;
        char line[256];
        sl_thread_budget_default(&b);
        b.compute_threads = a.model.context.threads;
        b.blas_threads = a.model.context.blas_threads;
        b.pipeline_workers = (int)a.workers;
        b.transfer_threads =
            a.train.dataset_sink_mode &&
                    sl_model_transfer_mode(model, &a.train) == SL_TRANSFER_THREAD
                ? 1
                : 0;
        sl_thread_budget_format(&b, line, sizeof line);
        printf("thread budget: %s; seed %" PRIu64 "\n", line, a.model.seed);
        if (a.train.dataset_sink_mode &&
            sl_model_transfer_mode(model, &a.train) == SL_TRANSFER_INLINE)
            printf("transfer: inline, the executor copies each batch into the device queue "
                   "before its step%s\n",
                   a.train.transfer == SL_TRANSFER_AUTO
                       ? " (the compute threads fill every CPU: a transfer thread would take "
                         "one from the step)"
                       : "");
        if (a.errors.mode != SL_ERROR_SAMPLES_RAISE) {
            printf("bad samples: %s, ",
                   a.errors.mode == SL_ERROR_SAMPLES_SKIP ? "skip" : "replace");
            if (a.errors.max_count >= 0)
                printf("at most %" PRId64 " in an epoch\n", a.errors.max_count);
            else
                printf("at most %g%% of an epoch\n", a.errors.max_fraction * 100.0);
        }
        fflush(stdout);
    }
    memset(&prog, 0, sizeof prog);
    if (!a.json && cli_stderr_is_tty()) {
        prog.start_ms = cli_now_ms();
        prog.start_step = start_step;
        prog.log_every = a.log_every;
        cbs[ncbs].self = &prog;
        cbs[ncbs].step_end = progress_step;
        cbs[ncbs].epoch_end = progress_clear;
        cbs[ncbs].end = progress_clear;
        ncbs++;
    }
    if (!a.json) {
        rc = sl_callback_loss_monitor(&cbs[ncbs], a.log_every, a.log_every == 0, print_line,
                                      NULL);
        if (rc == SL_OK)
            ncbs++;
        if (rc == SL_OK && a.time_monitor && sl_callback_time_monitor(&cbs[ncbs], print_line, NULL) == SL_OK)
            ncbs++;
    }
    if (rc == SL_OK && a.ckpt_dir) {
        rc = sl_callback_checkpoint(&cbs[ncbs], a.ckpt_dir,
                                    sl_network_kind_name(a.model.network.kind), a.ckpt_steps,
                                    (int)a.ckpt_keep);
        if (rc == SL_OK)
            ncbs++;
    }
    if (a.max_steps > 0)
        a.train.max_steps = a.max_steps;
    for (size_t i = 0; i < ncbs; i++)
        list[i] = &cbs[i];
    if (rc < 0) {
        cli_error(a.cmd, "cannot set up the callbacks: %s", sl_strerror(rc));
        exit_code = CLI_EXIT_FAIL;
        goto out;
    }
    t0 = cli_now_ms();
    rc = sl_model_train_opts(model, a.epochs, train, list, ncbs, &a.train);
    train_ms = cli_now_ms() - t0;
    if (prog.drawn)
        progress_clear(&prog, NULL);
    if (rc < 0) {
        const char *msg = cli_lib_message(sl_model_last_error(model), rc);
        /* the command's name already says where */
        if (strncmp(msg, "train: ", 7) == 0)
            msg += 7;
        cli_error(a.cmd, "%s", msg);
        exit_code = CLI_EXIT_FAIL;
        goto out;
    }
    if (!a.json && a.errors.mode != SL_ERROR_SAMPLES_RAISE)
        printf("bad samples: %" PRId64 " skipped, %" PRId64 " replaced\n", a.report.skipped,
               a.report.replaced);
    if (!a.json)
        printf("trained %" PRId64 " steps in %.1f s (%.0f samples/s)\n",
               sl_model_global_step(model) - start_step, train_ms / 1e3,
               (double)(sl_model_global_step(model) - start_step) *
                   (double)a.model.network.batch / (train_ms / 1e3));
    if (a.save && sl_model_save(model, a.save) < 0) {
        cli_error(a.cmd, "%s", sl_model_last_error(model));
        exit_code = CLI_EXIT_FAIL;
        goto out;
    }
    if (a.save && !a.json)
        printf("saved %s\n", a.save);
    memset(&metrics, 0, sizeof metrics);
    if (!a.no_eval)
        exit_code = run_eval(&a, model, test, &metrics);
    if (a.json && exit_code == CLI_EXIT_OK) {
        printf("{\"model\": \"%s\", \"device\": \"%s\", \"sink_mode\": %s, \"sink_size\": %" PRId64
               ", \"steps\": %" PRId64 ", \"train_seconds\": %.3f, \"samples_per_s\": %.1f",
               sl_network_kind_name(a.model.network.kind), a.device,
               a.train.dataset_sink_mode ? "true" : "false", a.train.sink_size,
               sl_model_global_step(model) - start_step, train_ms / 1e3,
               (double)(sl_model_global_step(model) - start_step) *
                   (double)a.model.network.batch / (train_ms / 1e3));
        if (a.errors.mode != SL_ERROR_SAMPLES_RAISE)
            printf(", \"samples_skipped\": %" PRId64 ", \"samples_replaced\": %" PRId64,
                   a.report.skipped, a.report.replaced);
        if (!a.no_eval)
            printf(", \"test_samples\": %" PRId64 ", \"test_accuracy\": %.6f, \"test_loss\": %.6f",
                   metrics.samples, metrics.accuracy, metrics.loss);
        sl_dataset_get_pool_stats(train, &pool);
        printf(", \"train_pool\": ");
        cli_pool_json(stdout, &pool);
        printf("}\n");
    }
out:
    for (size_t i = 0; i < ncbs; i++)
        if (cbs[i].free)
            sl_callback_release(&cbs[i]);
    sl_model_free(model);
    sl_dataset_free(train);
    sl_dataset_free(test);
    return exit_code;
}

int cli_eval_main(int argc, char **argv)
{
    train_args a;
    sl_model *model;
    sl_dataset *test = NULL;
    sl_metrics metrics;
    int rc = parse_args(argc, argv, &a, 1);

    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if (make_dataset(&a, SL_MNIST_TEST, &test) != 0)
        return CLI_EXIT_FAIL;
    model = make_model(&a);
    if (!model) {
        sl_dataset_free(test);
        return CLI_EXIT_FAIL;
    }
    rc = run_eval(&a, model, test, &metrics);
    if (rc == CLI_EXIT_OK && a.json)
        printf("{\"model\": \"%s\", \"test_samples\": %" PRId64
               ", \"test_accuracy\": %.6f, \"test_loss\": %.6f}\n",
               sl_network_kind_name(a.model.network.kind), metrics.samples, metrics.accuracy,
               metrics.loss);
    sl_model_free(model);
    sl_dataset_free(test);
    return rc;
}
