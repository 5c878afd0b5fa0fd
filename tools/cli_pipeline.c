/* cli_pipeline.c: helpers shared by the sluice subcommands (see cli.h):
 * dataset folders, the pipelines the commands build, and training. */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* --- datasets -------------------------------------------------------- */

/* 1 when dir/name or dir/name.gz is a regular file. */
static int has_file_or_gz(const char *dir, const char *name)
{
    char path[4096];
    struct stat st;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
        return 1;
    snprintf(path, sizeof path, "%s/%s.gz", dir, name);
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int cli_mnist_splits(const char *dir)
{
    int splits = 0;
    if (has_file_or_gz(dir, "train-images-idx3-ubyte"))
        splits |= CLI_SPLIT_TRAIN;
    if (has_file_or_gz(dir, "t10k-images-idx3-ubyte"))
        splits |= CLI_SPLIT_TEST;
    return splits;
}

int cli_detect_kind(const char *cmd, const char *dir, cli_kind *out)
{
    struct stat st;

    if (dir[0] == '\0') {
        cli_error(cmd, "the folder name is empty");
        return -1;
    }
    if (stat(dir, &st) != 0) {
        cli_error(cmd, "%s: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        cli_error(cmd, "%s: not a directory", dir);
        return -1;
    }
    *out = cli_mnist_splits(dir) != 0 ? CLI_KIND_MNIST : CLI_KIND_IMAGE_FOLDER;
    return 0;
}

void cli_image_folder_hint(const char *cmd, const char *dir)
{
    cli_error(cmd, "%s is not an MNIST folder either (no train-images-idx3-ubyte[.gz] "
              "or t10k-images-idx3-ubyte[.gz])", dir);
}

int cli_parse_usage(const char *cmd, const char *s, sl_mnist_usage *out)
{
    if (strcmp(s, "train") == 0)
        *out = SL_MNIST_TRAIN;
    else if (strcmp(s, "test") == 0)
        *out = SL_MNIST_TEST;
    else if (strcmp(s, "all") == 0)
        *out = SL_MNIST_ALL;
    else {
        cli_error(cmd, "--usage: expected train, test or all, got '%s'", s);
        return -1;
    }
    return 0;
}

const char *cli_usage_name(sl_mnist_usage usage)
{
    switch (usage) {
    case SL_MNIST_TRAIN: return "train";
    case SL_MNIST_TEST: return "test";
    case SL_MNIST_ALL: return "all";
    }
    return "?";
}

char *cli_spec_shape_str(char *buf, size_t len, const sl_tensor_spec *spec)
{
    size_t used = 0;

    /* Written by hand rather than with sl_shape_str() because unknown
     * sizes (-1) should read as "?". */
    used += (size_t)snprintf(buf, len, "(");
    for (int d = 0; d < spec->ndim && used < len; d++) {
        const char *sep = (d > 0) ? ", " : "";
        if (spec->shape[d] < 0)
            used += (size_t)snprintf(buf + used, len - used, "%s?", sep);
        else
            used += (size_t)snprintf(buf + used, len - used, "%s%" PRId64, sep,
                                     spec->shape[d]);
    }
    if (used < len)
        snprintf(buf + used, len - used, ")");
    return buf;
}

/* --- pipelines ------------------------------------------------------- */

static void add_step(cli_pipeline *p, cli_step step)
{
    /* Only the defaults call this, and they stay far below the limit. */
    if (p->nsteps < CLI_MAX_STEPS)
        p->steps[p->nsteps++] = step;
}

void cli_pipeline_default(cli_pipeline *p, const char *dir, cli_kind kind,
                          sl_mnist_usage usage)
{
    cli_step s;

    memset(p, 0, sizeof *p);
    p->dir = dir;
    p->kind = kind;
    p->usage = usage;
    p->source_shuffle = 1; /* MnistDataset / ImageFolderDataset default */
    p->num_samples = 0;
    p->seed = 0;
    p->pool_idle_mb = -1;
    p->batch = 32;
    p->drop_remainder = 1;
    cli_error_samples_default(&p->errors);

    if (kind == CLI_KIND_MNIST) {
        /* The seeds' LeNet preprocessing, op for op. */
        p->label_int32 = 1;
        memset(&s, 0, sizeof s);
        s.kind = CLI_STEP_RESIZE;
        s.height = 32;
        s.width = 32;
        add_step(p, s);
        memset(&s, 0, sizeof s);
        s.kind = CLI_STEP_RESCALE;
        s.scale = 1.0 / 255.0;
        s.shift = 0.0;
        add_step(p, s);
        memset(&s, 0, sizeof s);
        s.kind = CLI_STEP_RESCALE;
        s.scale = 1.0 / 0.3081;
        s.shift = -0.1307 / 0.3081;
        add_step(p, s);
        memset(&s, 0, sizeof s);
        s.kind = CLI_STEP_HWC2CHW;
        add_step(p, s);
        p->shuffle = 10000;
    } else {
        /* A typical ImageNet-style training pipeline. */
        static const double mean[3] = {0.485 * 255, 0.456 * 255, 0.406 * 255};
        static const double std[3] = {0.229 * 255, 0.224 * 255, 0.225 * 255};
        p->label_int32 = 0; /* ImageFolder labels are int32 already */
        memset(&s, 0, sizeof s);
        s.kind = CLI_STEP_RESIZE;
        s.height = 224;
        s.width = 224;
        add_step(p, s);
        memset(&s, 0, sizeof s);
        s.kind = CLI_STEP_FLIP;
        s.prob = 0.5;
        add_step(p, s);
        memset(&s, 0, sizeof s);
        s.kind = CLI_STEP_NORMALIZE;
        s.channels = 3;
        memcpy(s.mean, mean, sizeof mean);
        memcpy(s.std, std, sizeof std);
        add_step(p, s);
        memset(&s, 0, sizeof s);
        s.kind = CLI_STEP_HWC2CHW;
        add_step(p, s);
        p->shuffle = 0;
    }
}

void cli_pipeline_imagenet(cli_pipeline *p, int train)
{
    cli_pipeline_imagenet_sized(p, train, 224);
}

void cli_pipeline_imagenet_sized(cli_pipeline *p, int train, int64_t size)
{
    static const double mean[3] = {0.485 * 255, 0.456 * 255, 0.406 * 255};
    static const double std[3] = {0.229 * 255, 0.224 * 255, 0.225 * 255};
    cli_step s;

    p->label_int32 = 0;
    p->nsteps = 0;
    memset(&s, 0, sizeof s);
    if (train) {
        s.kind = CLI_STEP_RANDOM_RESIZED_CROP;
        s.height = s.width = size;
        s.area[0] = SL_RRC_SCALE_MIN;
        s.area[1] = SL_RRC_SCALE_MAX;
        s.ratio[0] = SL_RRC_RATIO_MIN;
        s.ratio[1] = SL_RRC_RATIO_MAX;
        add_step(p, s);
        memset(&s, 0, sizeof s);
        s.kind = CLI_STEP_FLIP;
        s.prob = 0.5;
        add_step(p, s);
    } else {
        s.kind = CLI_STEP_SHORTER_SIDE;
        s.height = size * 8 / 7; /* 256 for 224, as ImageNet's evaluation */
        add_step(p, s);
        memset(&s, 0, sizeof s);
        s.kind = CLI_STEP_CENTER_CROP;
        s.height = s.width = size;
        add_step(p, s);
    }
    memset(&s, 0, sizeof s);
    s.kind = CLI_STEP_NORMALIZE;
    s.channels = 3;
    memcpy(s.mean, mean, sizeof mean);
    memcpy(s.std, std, sizeof std);
    add_step(p, s);
    memset(&s, 0, sizeof s);
    s.kind = CLI_STEP_HWC2CHW;
    add_step(p, s);
}

void cli_pipeline_clear_ops(cli_pipeline *p)
{
    p->label_int32 = 0;
    p->nsteps = 0;
}

/* Makes the op of one step; the status of the sl_op_*_new call, with its
 * message (naming the op and the argument) in err. */
static int make_step_op(const cli_step *s, sl_op **op, char *err, size_t err_len)
{
    switch (s->kind) {
    case CLI_STEP_RESIZE:
        return sl_op_resize_new(op, s->height, s->width, SL_INTER_LINEAR, err, err_len);
    case CLI_STEP_RESCALE:
        return sl_op_rescale_new(op, s->scale, s->shift, err, err_len);
    case CLI_STEP_NORMALIZE:
        return sl_op_normalize_new(op, s->mean, s->std, (int)s->channels, err, err_len);
    case CLI_STEP_HWC2CHW:
        return sl_op_hwc2chw_new(op, err, err_len);
    case CLI_STEP_FLIP:
        return sl_op_random_horizontal_flip_new(op, s->prob, err, err_len);
    case CLI_STEP_VFLIP:
        return sl_op_random_vertical_flip_new(op, s->prob, err, err_len);
    case CLI_STEP_CROP:
        return sl_op_random_crop_new(op, s->height, s->width, s->padding, err, err_len);
    case CLI_STEP_RANDOM_RESIZED_CROP:
        return sl_op_random_resized_crop_new(op, s->height, s->width, s->area[0], s->area[1],
                                             s->ratio[0], s->ratio[1], SL_INTER_LINEAR,
                                             SL_RRC_ATTEMPTS, err, err_len);
    case CLI_STEP_CENTER_CROP:
        return sl_op_center_crop_new(op, s->height, s->width, err, err_len);
    case CLI_STEP_SHORTER_SIDE:
        return sl_op_resize_shorter_side_new(op, s->height, SL_INTER_LINEAR, err, err_len);
    case CLI_STEP_COLOR_ADJUST: {
        /* MindSpore's factors: f gives [max(0, 1 - f), 1 + f], hue [-f, f] */
        double r[4][2];
        for (int k = 0; k < 3; k++) {
            r[k][0] = s->color[k] < 1.0 ? 1.0 - s->color[k] : 0.0;
            r[k][1] = 1.0 + s->color[k];
        }
        r[3][0] = -s->color[3];
        r[3][1] = s->color[3];
        return sl_op_random_color_adjust_new(op, r[0], r[1], r[2], r[3], err, err_len);
    }
    }
    snprintf(err, err_len, "unknown step %d", (int)s->kind);
    return SL_EINVAL;
}

static int set_source(const cli_pipeline *p, int workers, sl_dataset *ds)
{
    sl_sampler_options sampler;

    sl_sampler_options_init(&sampler);
    sampler.shuffle = p->source_shuffle;
    sampler.seed = p->seed;
    sampler.num_samples = p->num_samples;
    if (p->num_shards > 1) {
        sampler.num_shards = p->num_shards;
        sampler.shard_id = p->shard_id;
    }

    if (p->kind == CLI_KIND_MNIST) {
        sl_mnist_options o;
        sl_mnist_options_init(&o);
        o.dataset_dir = p->dir;
        o.usage = p->usage;
        o.sampler = sampler;
        return sl_dataset_mnist(ds, &o);
    } else {
        sl_image_folder_options o;
        sl_image_folder_options_init(&o);
        o.dataset_dir = p->dir;
        o.decode = 1; /* every image op expects pixels, not file bytes */
        o.num_parallel_workers = workers;
        o.sampler = sampler;
        if (p->decode_max_pixels > 0)
            o.decode_max_pixels = p->decode_max_pixels;
        return sl_dataset_image_folder(ds, &o);
    }
}

/* The map of the image steps: makes every op, maps them, and drops our
 * references (the map holds its own). */
static int map_image_steps(const char *cmd, const cli_pipeline *p, int workers,
                           sl_dataset *ds)
{
    sl_op *ops[CLI_MAX_STEPS] = {NULL};
    char err[256];
    int rc = SL_OK;
    size_t made = 0;

    for (; made < p->nsteps; made++) {
        rc = make_step_op(&p->steps[made], &ops[made], err, sizeof err);
        if (rc != SL_OK) {
            cli_error(cmd, "%s", err);
            break;
        }
    }
    if (rc == SL_OK) {
        rc = sl_dataset_map(ds, ops, p->nsteps, "image", NULL, workers);
        if (rc != SL_OK)
            cli_error(cmd, "%s", cli_lib_message(sl_dataset_last_error(ds), rc));
    }
    for (size_t i = 0; i < made; i++)
        sl_op_release(ops[i]);
    return rc;
}

static int map_label_int32(const char *cmd, int workers, sl_dataset *ds)
{
    sl_op *op = NULL;
    char err[256];
    int rc = sl_op_type_cast_new(&op, SL_INT32, err, sizeof err);

    if (rc != SL_OK) {
        cli_error(cmd, "%s", err);
        return rc;
    }
    rc = sl_dataset_map(ds, &op, 1, "label", NULL, workers);
    if (rc != SL_OK)
        cli_error(cmd, "%s", cli_lib_message(sl_dataset_last_error(ds), rc));
    sl_op_release(op);
    return rc;
}

int cli_pipeline_source(const char *cmd, const cli_pipeline *p, int workers, sl_dataset **out)
{
    sl_dataset *ds;
    int rc;

    *out = NULL;
    rc = sl_dataset_new(&ds);
    if (rc != SL_OK) {
        cli_error(cmd, "%s", sl_strerror(rc));
        return rc;
    }
    rc = set_source(p, workers, ds);
    if (rc != SL_OK) {
        cli_error(cmd, "%s", cli_lib_message(sl_dataset_last_error(ds), rc));
        if (p->kind == CLI_KIND_IMAGE_FOLDER && rc == SL_EFORMAT)
            cli_image_folder_hint(cmd, p->dir);
        sl_dataset_free(ds);
        return rc;
    }
    sl_dataset_set_seed(ds, p->seed);
    if ((rc = cli_set_error_samples(cmd, &p->errors, p->report, ds)) != SL_OK) {
        sl_dataset_free(ds);
        return rc;
    }
    if (p->pool_idle_mb >= 0)
        sl_dataset_set_pool_idle_limit(ds, (size_t)p->pool_idle_mb << 20);
    sl_dataset_set_decode_fusion(ds, p->decode_fusion + SL_DECODE_FUSION_CROP);
    *out = ds;
    return SL_OK;
}

int cli_pipeline_add_nodes(const char *cmd, const cli_pipeline *p, int workers, sl_dataset *ds)
{
    int rc;
    /* As in the seeds: the label cast comes first, then the image ops. */
    if (p->label_int32 && (rc = map_label_int32(cmd, workers, ds)) != SL_OK)
        return rc;
    if (p->nsteps > 0 && (rc = map_image_steps(cmd, p, workers, ds)) != SL_OK)
        return rc;
    if (p->shuffle > 0 && (rc = sl_dataset_shuffle(ds, p->shuffle)) != SL_OK) {
        cli_error(cmd, "%s", cli_lib_message(sl_dataset_last_error(ds), rc));
        return rc;
    }
    if (p->batch > 0 &&
        (rc = sl_dataset_batch(ds, p->batch, p->drop_remainder, workers)) != SL_OK) {
        cli_error(cmd, "%s", cli_lib_message(sl_dataset_last_error(ds), rc));
        return rc;
    }
    return SL_OK;
}

/* With every CPU computing, each pipeline thread runs by taking a CPU from
 * a compute thread, and the other compute thread then waits for that one at
 * the end of the op. One worker keeps that cost down: it spends half the
 * CPU time per MNIST image that two do (their shared queues and pool locks
 * contend), and still makes batches 20 times as fast as a 2-thread LeNet
 * step takes them (bench sink, AMD EPYC, 2 CPUs: data only ~900k images/s
 * on one worker against ~40k samples/s of compute). */
int cli_training_workers(int compute_threads)
{
    sl_thread_budget b;
    sl_thread_budget_default(&b);
    return compute_threads >= b.cpus ? 1 : b.pipeline_workers;
}

int cli_pipeline_build(const char *cmd, const cli_pipeline *p, int workers,
                       sl_dataset **out)
{
    int rc = cli_pipeline_source(cmd, p, workers, out);
    if (rc == SL_OK && (rc = cli_pipeline_add_nodes(cmd, p, workers, *out)) != SL_OK) {
        sl_dataset_free(*out);
        *out = NULL;
    }
    return rc;
}

/* --- training -------------------------------------------------------- */

static int step_limit_step(void *self, const sl_train_info *info)
{
    const cli_step_limit *limit = self;
    return info->global_step - limit->start >= limit->steps ? 1 : 0;
}

sl_callback cli_step_limit_callback(cli_step_limit *limit, const sl_model *m, int64_t steps)
{
    sl_callback cb;
    limit->steps = steps;
    limit->start = sl_model_global_step(m);
    memset(&cb, 0, sizeof cb);
    cb.self = limit;
    cb.step_end = step_limit_step;
    return cb;
}
