/* train.c: `sluice train` and `sluice eval`: LeNet5 (or an MLP) on an MNIST
 * folder with the seeds' preprocessing, through sl_model. Training prints
 * the seeds' LossMonitor lines (with --eval-every, the test accuracy every N-th
 * epoch too), then evaluates on the test split. The
 * command lines are train_args.c's. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sluice/sluice.h"
#include "cli.h"
#include "cli_profile.h"
#include "cli_stages.h"
#include "train_args.h"

/* The folder of an ImageFolder's split: DIR/train and DIR/val (ImageNet's
 * layout; DIR/test for val too), or DIR itself for training when it holds
 * the class folders. NULL, with the error said, when there is none. */
static const char *folder_split(train_args *a, int train, char *buf, size_t len)
{
    static const char *const names[2][2] = {{"val", "test"}, {"train", NULL}};
    for (int k = 0; k < 2 && names[train][k]; k++) {
        char probe[4200];
        cli_kind kind;
        snprintf(buf, len, "%s/%s", a->data, names[train][k]);
        snprintf(probe, sizeof probe, "%s/.", buf);
        if (access(probe, R_OK) == 0 && cli_detect_kind(a->cmd, buf, &kind) == 0 &&
            kind == CLI_KIND_IMAGE_FOLDER)
            return buf;
    }
    if (train) {
        snprintf(buf, len, "%s", a->data);
        return buf;
    }
    cli_error(a->cmd,
              "%s holds no held-back split to evaluate on: give DIR/train and DIR/val, each "
              "with a folder per class (ImageNet's layout), or --no-eval",
              a->data);
    return NULL;
}

/* An ImageFolder split with ImageNet-style transforms at the network's
 * size: RandomResizedCrop, flip and normalize to train, the shorter side
 * and a center crop to evaluate. The network takes 3 channels and the
 * train split's classes. */
static int make_folder_dataset(train_args *a, sl_mnist_usage usage, sl_dataset **out)
{
    cli_pipeline p;
    char dir[4096];
    const int train = usage == SL_MNIST_TRAIN;
    if (!folder_split(a, train, dir, sizeof dir))
        return -1;
    cli_pipeline_default(&p, dir, CLI_KIND_IMAGE_FOLDER, usage);
    cli_pipeline_imagenet_sized(&p, train, a->model.network.height);
    p.batch = a->model.network.batch;
    if (train) { /* each rank its shard */
        p.num_shards = a->ranks;
        p.shard_id = a->rank;
    }
    p.seed = a->model.seed;
    p.pool_idle_mb = a->pool_idle_mb;
    if (!train) {
        p.drop_remainder = 0;
        p.source_shuffle = 0;
    } else {
        p.errors = a->errors;
        p.report = &a->report;
    }
    if (cli_pipeline_build(a->cmd, &p, (int)a->workers, out) != SL_OK)
        return -1;
    if (train) {
        a->model.network.channels = 3;
        a->model.network.num_classes = (int64_t)sl_dataset_num_classes(*out);
        if (a->model.network.num_classes < 2) {
            cli_error(a->cmd, "%s holds %lld class folder%s; training needs 2 or more", dir,
                      (long long)a->model.network.num_classes,
                      a->model.network.num_classes == 1 ? "" : "s");
            sl_dataset_free(*out);
            *out = NULL;
            return -1;
        }
    } else if (strcmp(a->cmd, "eval") == 0) {
        /* evaluating a checkpoint: the network is the folder's */
        a->model.network.channels = 3;
        a->model.network.num_classes = (int64_t)sl_dataset_num_classes(*out);
    } else if ((int64_t)sl_dataset_num_classes(*out) != a->model.network.num_classes) {
        cli_error(a->cmd, "%s holds %zu classes, the train split %lld: give both the same "
                  "class folders", dir, sl_dataset_num_classes(*out),
                  (long long)a->model.network.num_classes);
        sl_dataset_free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

/* The seeds' pipeline over one split of the MNIST folder, or an
 * ImageFolder's (make_folder_dataset). */
static int make_dataset(train_args *a, sl_mnist_usage usage, sl_dataset **out)
{
    cli_pipeline p;
    int splits;
    cli_kind kind;

    if (cli_detect_kind(a->cmd, a->data, &kind) != 0)
        return -1;
    if (kind == CLI_KIND_IMAGE_FOLDER)
        return make_folder_dataset(a, usage, out);
    splits = cli_mnist_splits(a->data);
    if (!(splits & (usage == SL_MNIST_TRAIN ? CLI_SPLIT_TRAIN : CLI_SPLIT_TEST))) {
        cli_error(a->cmd,
                  "%s holds no MNIST %s split (%s-images-idx3-ubyte[.gz]); training and "
                  "evaluation read MNIST folders or folders of JPEGs",
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
        p.num_shards = a->ranks; /* each rank its shard */
        p.shard_id = a->rank;
    }
    return cli_pipeline_build(a->cmd, &p, (int)a->workers, out) == SL_OK ? 0 : -1;
}

static void print_line(void *user, const char *line)
{
    (void)user;
    printf("%s\n", line);
    fflush(stdout);
}

/* Each temporary file a killed save left in --ckpt-dir, removed as the run
 * starts (user: the command's name). */
static void report_removed(void *user, const char *path)
{
    cli_error((const char *)user, "removed %s, a temporary file left by a save that did not finish",
              path);
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

/* --eval-every N: the test split evaluated at the end of every N-th epoch,
 * from the training's callback, on that moment's weights (evaluating while
 * training, seed 004); each result is kept for --json. */
typedef struct epoch_evals {
    const train_args *a;
    sl_dataset *test;
    size_t n, cap;
    int64_t *epoch;
    sl_metrics *metrics;
} epoch_evals;

static int eval_at_epoch_end(void *self, const sl_train_info *info)
{
    epoch_evals *e = self;
    sl_metrics m;
    int rc;
    if (info->epoch % e->a->eval_every != 0)
        return 0;
    if (e->n == e->cap)
        return SL_EINVAL; /* cannot happen: cap is one more than the epochs over N */
    rc = sl_model_eval(info->model, e->test, &m);
    if (rc < 0)
        return rc; /* the model's message names the batch and what failed */
    e->epoch[e->n] = info->epoch;
    e->metrics[e->n++] = m;
    if (!e->a->json) {
        printf("epoch: %" PRId64 " eval: accuracy %.4f (%" PRId64 "/%" PRId64 "), loss %.4f\n",
               info->epoch, m.accuracy, (int64_t)(m.accuracy * (double)m.samples + 0.5),
               m.samples, m.loss);
        fflush(stdout);
    }
    return 0;
}

static void epoch_evals_json(FILE *f, const epoch_evals *e)
{
    fputc('[', f);
    for (size_t i = 0; i < e->n; i++)
        fprintf(f, "%s{\"epoch\": %" PRId64 ", \"accuracy\": %.6f, \"loss\": %.6f}",
                i ? ", " : "", e->epoch[i], e->metrics[i].accuracy, e->metrics[i].loss);
    fputc(']', f);
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

/* Trains as a says; the exit code. */
static int run_train(train_args *ap)
{
    train_args a = *ap;
    sl_model *model = NULL;
    sl_dataset *train = NULL, *test = NULL;
    sl_callback cbs[6];
    sl_callback *list[6];
    size_t ncbs = 0;
    progress prog;
    epoch_evals evals;
    sl_metrics metrics;
    sl_pool_stats pool;
    double t0, train_ms;
    sl_stage_stats stages[CLI_MAX_STAGES];
    size_t nstages = 0;
    int rc = SL_OK, exit_code = CLI_EXIT_OK;
    int64_t start_step, steps_per_epoch;

    memset(cbs, 0, sizeof cbs);
    memset(&evals, 0, sizeof evals);
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
    if (steps_per_epoch > 0)
        steps_per_epoch /= a.ndevices; /* global steps: one batch per device */
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
                   " batch%s%s\n",
                   a.device, a.train.sink_size,
                   a.train.sink_size < 0 ? "each epoch sinks the whole dataset"
                                         : "each epoch sinks sink_size steps",
                   a.train.queue_capacity, a.train.queue_capacity == 1 ? "" : "es",
                   a.train.autotune ? " (to start with: --autotune deepens it when GetNext waits)"
                                    : "");
        else
            printf("no sink on %s: the host feeds every step\n", a.device);
        {
            char cpus[128];
            int ncpus = sl_device_cpus(sl_model_device(model), cpus, sizeof cpus);
            if (ncpus > 0)
                printf("cores: %s computes on CPU %s (its executor and compute threads); the "
                       "host's pipeline, transfer and callbacks run on the other%s\n",
                       sl_device_name(sl_model_device(model)), cpus,
                       sl_cpus_available() - ncpus == 1 ? "" : "s");
        }
        if (a.distributed)
            printf("distributed: %d rank%s (%s), each reading its shard of the train split "
                   "(1/%d, padded to equal); global batch %d (batch %" PRId64 " x %d device%s "
                   "x %d rank%s); gradients averaged over every rank with MPI_Allreduce "
                   "before each update; rank 0 prints, evaluates and saves\n",
                   a.ranks, a.ranks == 1 ? "" : "s", sl_distributed_mpi(), a.ranks,
                   (int)a.model.network.batch * a.ndevices * a.ranks, a.model.network.batch,
                   a.ndevices, a.ndevices == 1 ? "" : "s", a.ranks, a.ranks == 1 ? "" : "s");
        if (a.ndevices > 1)
            printf("data parallel on %d devices (%s)%s: a global step is one batch on each, "
                   "%s %d; gradients are averaged in device order before each "
                   "update; each device's compute team has %d thread%s\n",
                   a.ndevices, a.device, a.distributed ? " in each rank" : "",
                   a.distributed ? "the rank's share of the global batch" : "global batch",
                   a.ndevices * (int)a.model.network.batch,
                   a.model.context.threads, a.model.context.threads == 1 ? "" : "s");
        if (a.ndevices > 1 && a.ndevices * a.model.context.threads > sl_cpus_available())
            printf("note: %d devices x %d compute thread%s on %d CPUs: their threads take turns "
                   "on the CPUs, so each global step takes about as long as the devices' steps "
                   "one after another; expect no gain over %d device%s\n",
                   a.ndevices, a.model.context.threads,
                   a.model.context.threads == 1 ? "" : "s", sl_cpus_available(),
                   sl_cpus_available(), sl_cpus_available() == 1 ? "" : "s");
        sl_thread_budget b;
        char line[256];
        sl_thread_budget_default(&b);
        b.compute_threads = a.model.context.threads * a.ndevices;
        {
            /* a team on a device's own cores runs no more threads at once */
            char cpus[128];
            int ncpus = sl_device_cpus(sl_model_device(model), cpus, sizeof cpus);
            if (ncpus > 0 && a.ndevices == 1 && b.compute_threads > ncpus)
                b.compute_threads = ncpus;
        }
        b.blas_threads = a.model.context.blas_threads;
        b.pipeline_workers = (int)a.workers;
        b.transfer_threads =
            a.train.dataset_sink_mode &&
                    (a.ndevices > 1 || a.distributed ||
                     sl_model_transfer_mode(model, &a.train) == SL_TRANSFER_THREAD)
                ? 1
                : 0;
        sl_thread_budget_format(&b, line, sizeof line);
        printf("thread budget: %s; seed %" PRIu64 "\n", line, a.model.seed);
        if (a.train.dataset_sink_mode && a.ndevices == 1 && !a.distributed &&
            sl_model_transfer_mode(model, &a.train) == SL_TRANSFER_INLINE)
            printf("transfer: inline, the executor copies each batch into the device queue "
                   "before its step (and, when its threads fill the CPUs, runs the pipeline's "
                   "map+batch between steps once its batches prove cheap)\n");
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
    if (rc == SL_OK && a.eval_every) {
        evals.a = &a;
        evals.test = test;
        evals.cap = (size_t)(a.epochs / a.eval_every) + 1; /* never 0, for calloc */
        evals.epoch = calloc(evals.cap, sizeof *evals.epoch);
        evals.metrics = calloc(evals.cap, sizeof *evals.metrics);
        if (!evals.epoch || !evals.metrics)
            rc = SL_ENOMEM;
        cbs[ncbs].self = &evals;
        cbs[ncbs].epoch_end = eval_at_epoch_end;
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
    if (a.ckpt_dir) {
        char err[512];
        if (sl_checkpoint_remove_temps(a.ckpt_dir, sl_network_kind_name(a.model.network.kind),
                                       report_removed, (void *)a.cmd, err, sizeof err) < 0) {
            cli_error(a.cmd, "%s", err);
            exit_code = CLI_EXIT_FAIL;
            goto out;
        }
    }
    if (a.profile && cli_profile_start(a.cmd, a.profile, &a.train.profiler) != 0) {
        exit_code = CLI_EXIT_FAIL;
        goto out;
    }
    t0 = cli_now_ms();
    rc = sl_model_train_opts(model, a.epochs, train, list, ncbs, &a.train);
    train_ms = cli_now_ms() - t0;
    if (a.train.profiler) {
        int failed = cli_profile_finish(a.cmd, a.profile, a.train.profiler);
        a.train.profiler = NULL;
        if (failed && rc >= 0) {
            exit_code = CLI_EXIT_FAIL;
            goto out;
        }
    }
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
                   (double)(a.model.network.batch * a.ndevices * a.ranks) / (train_ms / 1e3));
    nstages = sl_model_get_stage_stats(model, stages, CLI_MAX_STAGES);
    if (nstages > CLI_MAX_STAGES)
        nstages = CLI_MAX_STAGES;
    if (!a.json && (a.stages || a.profile) && nstages > 0) {
        printf("stages (%% of each stage's threads x its time):\n");
        cli_stages_text(stdout, stages, nstages);
    } else if (!a.json && a.stages) {
        printf("stages: none to show (the stage figures come from a sink-mode train)\n");
    }
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
                   (double)(a.model.network.batch * a.ndevices * a.ranks) / (train_ms / 1e3));
        if (a.errors.mode != SL_ERROR_SAMPLES_RAISE)
            printf(", \"samples_skipped\": %" PRId64 ", \"samples_replaced\": %" PRId64,
                   a.report.skipped, a.report.replaced);
        if (!a.no_eval)
            printf(", \"test_samples\": %" PRId64 ", \"test_accuracy\": %.6f, \"test_loss\": %.6f",
                   metrics.samples, metrics.accuracy, metrics.loss);
        if (a.eval_every) {
            printf(", \"eval_per_epoch\": ");
            epoch_evals_json(stdout, &evals);
        }
        sl_dataset_get_pool_stats(train, &pool);
        printf(", \"train_pool\": ");
        cli_pool_json(stdout, &pool);
        if (nstages > 0) {
            printf(", \"stages\": ");
            cli_stages_json(stdout, stages, nstages);
            printf(", \"verdict\": ");
            cli_stages_verdict_json(stdout, stages, nstages);
        }
        if (a.train.autotune) {
            printf(", \"autotune\": ");
            cli_autotune_json(stdout, &a.tune);
        }
        printf("}\n");
    }
out:
    for (size_t i = 0; i < ncbs; i++)
        if (cbs[i].free)
            sl_callback_release(&cbs[i]);
    sl_model_free(model);
    sl_dataset_free(train);
    sl_dataset_free(test);
    free(evals.epoch);
    free(evals.metrics);
    return exit_code;
}

/* Under mpirun, this process joins the ranks: it reads its shard, and
 * only rank 0 prints (the others' stdout goes to /dev/null; their errors
 * still reach stderr, named by rank), evaluates and writes files. */
static int join_ranks(train_args *a)
{
    char err[512];
    if (sl_distributed_init(err, sizeof err) < 0) {
        cli_error(a->cmd, "started by mpirun, but %s", err);
        return CLI_EXIT_FAIL;
    }
    if (a->train.sim_network_gbit_s > 0) {
        cli_error(a->cmd, "--sim-network models a network between the devices of one process; "
                          "under mpirun the ranks' network is real: leave it out");
        return CLI_EXIT_USAGE;
    }
    a->rank = sl_distributed_rank();
    a->ranks = sl_distributed_size();
    a->train.distributed = 1;
    snprintf(a->cmd_buf, sizeof a->cmd_buf, "%s: rank %d", a->cmd, a->rank);
    a->cmd = a->cmd_buf;
    a->report.cmd = a->cmd;
    if (a->rank != 0) {
        fflush(stdout);
        if (!freopen("/dev/null", "w", stdout)) {
            cli_error(a->cmd, "cannot send the output to /dev/null");
            return CLI_EXIT_FAIL;
        }
        a->no_eval = 1;
        a->eval_every = 0;
        a->save = NULL;
        a->ckpt_dir = NULL;
        a->profile = NULL;
    }
    return CLI_EXIT_OK;
}

int cli_train_main(int argc, char **argv)
{
    train_args a;
    int rc = cli_train_parse_args(argc, argv, &a, 0);
    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if (a.distributed && (rc = join_ranks(&a)) != CLI_EXIT_OK) {
        sl_distributed_finalize(1);
        return rc;
    }
    rc = run_train(&a);
    sl_distributed_finalize(rc != CLI_EXIT_OK);
    return rc;
}

int cli_eval_main(int argc, char **argv)
{
    train_args a;
    sl_model *model;
    sl_dataset *test = NULL;
    sl_metrics metrics;
    int rc = cli_train_parse_args(argc, argv, &a, 1);

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
