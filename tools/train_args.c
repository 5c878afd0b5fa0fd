/* train_args.c: the command lines of `sluice train` and `sluice eval`:
 * their help and their options parsed into train_args (train_args.h). */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"
#include "cli.h"
#include "train_args.h"

enum {
    OPT_MODEL = 256, OPT_DATA, OPT_EPOCHS, OPT_BATCH, OPT_MODE, OPT_LR, OPT_MOMENTUM,
    OPT_OPTIMIZER, OPT_SEED, OPT_WORKERS, OPT_THREADS, OPT_BLAS_THREADS, OPT_SAVE,
    OPT_LOAD, OPT_RESUME, OPT_SAVE_GRAPHS, OPT_LOG_EVERY, OPT_MAX_STEPS, OPT_NO_EVAL, OPT_EVAL_EVERY, OPT_CKPT_DIR,
    OPT_CKPT_STEPS, OPT_CKPT_KEEP, OPT_TIME, OPT_STAGES, OPT_PROFILE, OPT_AUTOTUNE, OPT_JSON, OPT_DATA_TIMEOUT, OPT_SINK, OPT_NO_SINK,
    OPT_SINK_SIZE, OPT_DEVICE, OPT_QUEUE_CAPACITY, OPT_GETNEXT_TIMEOUT, OPT_TRANSFER, OPT_POOL_IDLE_MB,
    OPT_ERROR_SAMPLES, OPT_MAX_BAD_SAMPLES, OPT_SIM_CORES, OPT_CHECK_REPLICAS, OPT_SIM_NETWORK
};

void cli_train_usage(FILE *f)
{
    fputs("Usage: sluice train [OPTIONS...]\n"
          "\n"
          "Trains LeNet5 (or an MLP) on an MNIST folder with the seeds' preprocessing\n"
          "(resize 32x32 bilinear, rescale 1/255, rescale 1/0.3081 shift -0.1307/0.3081,\n"
          "HWC2CHW, label int32, shuffle 10000, batch dropping the remainder), printing\n"
          "MindSpore's LossMonitor lines, then evaluates on the test split (all of it:\n"
          "a short last batch is padded) and prints the accuracy. Training sinks the\n"
          "data by default: ready batches go into the device's queue (on cpu the\n"
          "pipeline stacks them straight into its slots; on sim a transfer thread\n"
          "copies them) while the executor runs the steps back to back, taking each\n"
          "with GetNext, and returns once per sink (--no-sink: one batch, one step,\n"
          "then the callbacks, as MindSpore's dataset_sink_mode=False).\n"
          "\n"
          "--data may also be a folder of JPEGs: DIR/train and DIR/val (or DIR/test),\n"
          "each with a folder per class (ImageNet's layout). LeNet5 then takes 3x32x32\n"
          "images and one output per class; the train split gets ImageNet's training\n"
          "transform at 32x32 (RandomResizedCrop, flip 0.5, normalize) and the val\n"
          "split its evaluation transform (shorter side 36, CenterCrop 32, normalize).\n"
          "\n"
          "Options:\n"
          "  --model lenet|mlp   network (default lenet)\n"
          "  --data DIR          MNIST folder (default " CLI_DEFAULT_DATA "), or a folder\n"
          "                      of JPEGs with train/ and val/\n"
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
          "                      0 caches nothing (default: as many as keep in use +\n"
          "                      idle within twice the most in use at once, or 8 MiB)\n"
          "  --threads N         executor compute threads (default: the CPUs, at most 4)\n"
          "  --blas-threads N    OpenBLAS threads (default 1)\n"
          "  --data-timeout S    fail when no batch comes for S seconds, naming the\n"
          "                      stalled pipeline stage (default 300; 0: wait for ever)\n"
          "  --sink, --no-sink   sink the data (default) or feed every step from the host\n"
          "  --sink-size N       steps per sink: -1 (default) sinks each epoch whole;\n"
          "                      N > 0 makes each epoch N steps of an endless traversal\n"
          "                      (epochs x N steps in all), as MindSpore's sink_size\n"
          "  --device D          cpu:0 (default) or sim:0, a model of an accelerator\n"
          "                      across a PCIe 4.0 x16 bus (copies and launches cost time);\n"
          "                      a list (cpu:0,cpu:1) trains data parallel: each device\n"
          "                      steps on a batch of its own, gradients are averaged, so\n"
          "                      the global batch is --batch x the devices; --threads is\n"
          "                      then per device (default: the CPUs shared among them)\n"
          "  --sim-cores N       CPUs each sim device keeps for its compute, its executor\n"
          "                      running there while the host's threads use the others:\n"
          "                      auto (default: 1 when the host keeps one), 0 (share\n"
          "                      the host's CPUs) or a count\n"
          "  --queue-capacity N  batches the device queue holds (default 4)\n"
          "  --transfer MODE     who moves batches into the device queue: thread (a\n"
          "                      transfer thread, overlapping the steps), inline (the\n"
          "                      executor's threads, before each step; cpu only; when\n"
          "                      they fill the CPUs, the pipeline's map+batch also\n"
          "                      runs on them between steps once its batches proved\n"
          "                      cheap) or auto (default: inline on cpu when the\n"
          "                      compute threads fill the CPUs, else the thread)\n"
          "  --getnext-timeout S fail when GetNext waits S seconds for a batch, naming\n"
          "                      what starves the queue (default 300; 0: wait for ever)\n"
          CLI_ERROR_SAMPLES_HELP
          "                      (in the train split; evaluation fails on one)\n"
          "  --log-every N       a loss line every N steps (default: each epoch's last)\n"
          "  --time              TimeMonitor lines at each epoch's end\n"
          "  --stages            after a sink-mode train, each stage's rows/s and busy,\n"
          "                      waiting and blocked time, and which one limits\n"
          "                      throughput (--json always has them)\n"
          "  --profile DIR       write DIR/trace.json, a timeline of the training (a\n"
          "                      Chrome trace for Perfetto or chrome://tracing): the\n"
          "                      pipeline's chunks, and in sink mode each batch's\n"
          "                      copy, GetNext, step and the step's ops; then print\n"
          "                      the stage table, as --stages does\n"
          "  --autotune          tune the pipeline while training, starting from\n"
          "                      --workers: wake more map workers (up to the CPUs) or\n"
          "                      deepen a queue where the counters show the pipeline\n"
          "                      starving the step (in sink mode the device queue\n"
          "                      too), one change at a time, undone if throughput\n"
          "                      fell; each change and its reason goes to stderr\n"
          "                      (and to --json's \"autotune\")\n"
          "  --max-steps N       stop after N steps in all (default: no limit)\n"
          "  --save CKPT         write the trained parameters to CKPT\n"
          "  --load CKPT         start from CKPT's parameters (a new run)\n"
          "  --resume CKPT       continue the run that wrote CKPT exactly where it\n"
          "                      stopped: same data order, random draws and optimizer\n"
          "                      state; --epochs and --max-steps count from that run's\n"
          "                      start (give it the same --data, --seed and batch)\n"
          "  --ckpt-dir DIR      save checkpoints DIR/lenet-<epoch>_<step>.ckpt during\n"
          "                      training: each epoch, or every --ckpt-steps N steps\n"
          "                      (sinking: at each sink end that crosses a multiple of\n"
          "                      N), and at the run's end; keeping the newest\n"
          "                      --ckpt-keep N (default 5) by epoch and step, an\n"
          "                      earlier run's files in DIR too (0: all); a killed\n"
          "                      save's temporary files there go at the start\n"
          "  --save-graphs DIR   write the compiled steps as .ir and .dot files\n"
          "  --eval-every N      also evaluate on the test split at the end of every\n"
          "                      N-th epoch, on that moment's weights, printing\n"
          "                      'epoch: E eval: accuracy ...' (evaluating while\n"
          "                      training; the training goes on exactly as without)\n"
          "  --no-eval           skip the evaluation\n"
          "  --json              print the result as one JSON object (no loss lines)\n"
          "  --check-replicas    under mpirun: compare the ranks' parameters (a hash)\n"
          "                      after every step, not only at the end\n"
          "  --sim-network BW,LAT  with several --device: model a network of BW Gbit/s\n"
          "                      and LAT microseconds between them; each allreduce\n"
          "                      takes at least a ring allreduce's time on it\n"
          "  -h, --help          show this help and exit\n"
          "\n"
          "Under mpirun (mpirun -np N sluice train ..., or -H host1,host2 across\n"
          "machines) training is data parallel across the N ranks: rank r reads shard r\n"
          "of the train split (num_shards N; the shards are padded to equal size by\n"
          "repeating the split's first samples, as MindSpore's distributed sampler\n"
          "does), gradients are averaged over every rank with MPI_Allreduce before each\n"
          "update, so the global batch is --batch x devices x N. Rank 0 alone prints,\n"
          "evaluates and writes --save and --ckpt-dir; the loss it prints is the mean\n"
          "over the ranks. A checkpoint records N: --resume needs the same N. A rank's\n"
          "error stops every rank with its message; at the end the ranks compare a\n"
          "hash of their parameters. --threads defaults to the CPUs shared among the\n"
          "ranks of a machine.\n",
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
        a->threads_given = 1;
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
        /* One device, or several of one kind for data parallel training:
         * the model is made on the first, the library checks the list. */
        char kind[8];
        int id, end = 0;
        if (sscanf(arg, "%7[a-z]:%d%n", kind, &id, &end) != 2 ||
            (arg[end] != '\0' && arg[end] != ',') ||
            (strcmp(kind, "cpu") != 0 && strcmp(kind, "sim") != 0) || id < 0 || id > 63) {
            cli_error(cmd, "--device: '%s' does not start with cpu:N or sim:N (N in [0, 63])",
                      arg);
            return -1;
        }
        a->device = arg;
        a->ndevices = 1;
        for (const char *p = arg; (p = strchr(p, ',')); p++)
            a->ndevices++;
        a->train.devices = a->ndevices > 1 ? arg : NULL;
        a->model.context.device_target = strcmp(kind, "cpu") == 0 ? "CPU" : "SIM";
        a->model.context.device_id = id;
        return 0;
    }
    case OPT_SIM_CORES:
        if (strcmp(arg, "auto") == 0) {
            a->device_options.sim_cores = -1;
            return 0;
        }
        return cli_parse_int64(cmd, "--sim-cores", arg, 0, 63, &a->device_options.sim_cores);
    case OPT_QUEUE_CAPACITY:
        return cli_parse_int64(cmd, "--queue-capacity", arg, 1, 4096, &a->train.queue_capacity);
    case OPT_TRANSFER: {
        sl_transfer_mode t;
        if (cli_parse_transfer(cmd, arg, &t) != 0)
            return -1;
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
    case OPT_EVAL_EVERY:
        return cli_parse_int64(cmd, "--eval-every", arg, 1, 100000, &a->eval_every);
    case OPT_CKPT_DIR: a->ckpt_dir = arg; return 0;
    case OPT_CKPT_STEPS:
        return cli_parse_int64(cmd, "--ckpt-steps", arg, 1, INT64_MAX, &a->ckpt_steps);
    case OPT_CKPT_KEEP: return cli_parse_int64(cmd, "--ckpt-keep", arg, 0, 100000, &a->ckpt_keep);
    case OPT_ERROR_SAMPLES: return cli_parse_error_samples(cmd, arg, &a->errors);
    case OPT_MAX_BAD_SAMPLES: return cli_parse_max_bad_samples(cmd, arg, &a->errors);
    case OPT_TIME: a->time_monitor = 1; return 0;
    case OPT_STAGES: a->stages = 1; return 0;
    case OPT_PROFILE: a->profile = arg; return 0;
    case OPT_AUTOTUNE:
        a->tune.cmd = cmd;
        a->train.autotune = 1;
        a->train.autotune_log = cli_autotune_log;
        a->train.autotune_log_arg = &a->tune;
        return 0;
    case OPT_JSON: a->json = 1; return 0;
    case OPT_CHECK_REPLICAS: a->train.check_replicas = 1; return 0;
    case OPT_SIM_NETWORK: return cli_parse_sim_network(cmd, arg, &a->train);
    }
    return -1;
}

/* CLI_EXIT_OK, CLI_EXIT_USAGE, or -1 after --help. */
int cli_train_parse_args(int argc, char **argv, train_args *a, int is_eval)
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
        {"sim-cores", required_argument, NULL, OPT_SIM_CORES},
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
        {"eval-every", required_argument, NULL, OPT_EVAL_EVERY},
        {"ckpt-dir", required_argument, NULL, OPT_CKPT_DIR},
        {"ckpt-steps", required_argument, NULL, OPT_CKPT_STEPS},
        {"ckpt-keep", required_argument, NULL, OPT_CKPT_KEEP},
        {"time", no_argument, NULL, OPT_TIME},
        {"stages", no_argument, NULL, OPT_STAGES},
        {"profile", required_argument, NULL, OPT_PROFILE},
        {"autotune", no_argument, NULL, OPT_AUTOTUNE},
        {"json", no_argument, NULL, OPT_JSON},
        {"check-replicas", no_argument, NULL, OPT_CHECK_REPLICAS},
        {"sim-network", required_argument, NULL, OPT_SIM_NETWORK},
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
    sl_device_options_init(&a->device_options);
    a->model.device_options = &a->device_options;
    a->train.dataset_sink_mode = 1;
    a->device = "cpu:0";
    a->ndevices = 1;
    a->ranks = 1;
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
    if (a->eval_every && a->no_eval) {
        cli_error(a->cmd, "--eval-every evaluates on the test split, which --no-eval skips: "
                          "give one of them");
        return CLI_EXIT_USAGE;
    }
    a->train.resume = a->resume != NULL;
    if ((a->ckpt_steps || a->ckpt_keep != 5) && !a->ckpt_dir) {
        cli_error(a->cmd, "--ckpt-steps and --ckpt-keep need --ckpt-dir");
        return CLI_EXIT_USAGE;
    }
    if (cli_check_error_samples(a->cmd, &a->errors) != 0)
        return CLI_EXIT_USAGE;
    if (a->train.sim_network_gbit_s > 0 && a->ndevices < 2) {
        cli_error(a->cmd, "--sim-network models the network between devices: give --device "
                          "a list of them (cpu:0,cpu:1)");
        return CLI_EXIT_USAGE;
    }
    if (a->model.optimizer == SL_OPTIMIZER_MOMENTUM && !(a->model.momentum < 1.0f)) {
        cli_error(a->cmd, "--momentum must be < 1");
        return CLI_EXIT_USAGE;
    }
    a->model.context.save_graphs = a->save_graphs != NULL;
    if (!is_eval && sl_distributed_launched()) {
        /* the ranks of one machine share its CPUs (when mpirun bound each
         * to its own core, threads is 1 already) */
        const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
        int n = local ? atoi(local) : 1;
        a->distributed = 1;
        if (!a->threads_given && n > 1) {
            int per = a->model.context.threads / n;
            a->model.context.threads = per > 0 ? per : 1;
        }
    }
    if (a->ndevices > 1 && !a->threads_given) {
        /* the devices share the CPUs: each team gets its part */
        int per = a->model.context.threads / a->ndevices;
        a->model.context.threads = per > 0 ? per : 1;
    }
    if (a->workers == 0)
        a->workers = cli_training_workers(a->model.context.threads * a->ndevices);
    if (a->save_graphs)
        a->model.context.save_graphs_path = a->save_graphs;
    return CLI_EXIT_OK;
}
