/* check_train.c: training end to end through sl_model: LeNet on the real
 * Fashion-MNIST files (a short run must learn), determinism whatever the
 * pipeline's workers, and every way train() can fail or stop: a pipeline
 * error mid-epoch, labels out of range, a wrong shape, a diverging loss,
 * a stop request. Built with a sanitizer, the two Fashion-MNIST tests run
 * shortened (tu_shorten says how); the plain build runs them whole. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "sluice/sluice.h"
#include "testutil.h"

/* The per-op GFLOPS of `bench train` rest on sl_step_node_flops: LeNet5's
 * training step at batch 32 multiplies 2,263,920 floating-point operations
 * per sample (forward 833,040; conv1's weight gradient 235,200; conv2's
 * input and weight gradients 960,000; the dense layers' 235,680), and
 * conv1 alone 2 x 28 x 28 x 6 x 25 per sample. Ops that only move memory
 * count 0. And the sgemm yardstick measures something. */
START_TEST(test_node_flops)
{
    sl_model *m = NULL;
    sl_step *step;
    char err[256];
    double total = 0.0, conv1 = -1.0, gflops = 0.0;
    ck_assert_msg(sl_model_new(&m, NULL, err, sizeof err) == SL_OK, "%s", err);
    step = sl_model_train_step(m);
    for (size_t i = 0; i < sl_step_num_nodes(step); i++) {
        const char *name, *op;
        double f = sl_step_node_flops(step, i);
        ck_assert_int_eq(sl_step_node_time(step, i, &name, &op, NULL), SL_OK);
        ck_assert_msg(f >= 0.0, "%s: %g", name, f);
        if (strcmp(op, "relu") == 0 || strcmp(op, "max_pool2d") == 0 ||
            strncmp(op, "momentum", 8) == 0)
            ck_assert_msg(f == 0.0, "%s (%s) counts %g", name, op, f);
        /* conv1's work: its own node, or (with one compute thread) the
         * conv2d+relu+max_pool2d that runs it, named after the pool */
        if (conv1 < 0 && (strcmp(op, "conv2d") == 0 || strncmp(op, "conv2d+", 7) == 0))
            conv1 = f;
        total += f;
    }
    ck_assert_double_eq(conv1, 32.0 * 2 * 28 * 28 * 6 * 25);
    ck_assert_double_eq(total, 32.0 * 2263920);
    ck_assert_double_eq(sl_step_node_flops(step, sl_step_num_nodes(step)), 0.0);
    sl_model_free(m);
    ck_assert_int_eq(sl_blas_sgemm_gflops(64, 3, &gflops), SL_OK);
    ck_assert(gflops > 0.0 && isfinite(gflops));
    ck_assert_int_eq(sl_blas_sgemm_gflops(0, 3, &gflops), SL_EINVAL);
}
END_TEST

Suite *make_train_suite(void);

#define FASHION "/usr/share/datasets/fashion-mnist"

static sl_dataset *mnist_pipeline(const char *dir, sl_mnist_usage usage, int workers,
                                  uint64_t seed, int resize, int drop_remainder)
{
    return tu_lenet_pipeline(dir, usage, workers, seed, resize, drop_remainder, 0);
}

static sl_model *model_with(sl_model_options *o)
{
    sl_model *m = NULL;
    char err[512];
    ck_assert_msg(sl_model_new(&m, o, err, sizeof err) == SL_OK, "%s", err);
    return m;
}

/* A callback that stops training after `after` steps and counts calls. */
typedef struct counter {
    int64_t after;
    int64_t steps, epochs_ended, begins, ends;
    float last_loss;
} counter;

static int count_step(void *self, const sl_train_info *info)
{
    counter *c = self;
    c->steps++;
    c->last_loss = info->loss;
    return c->after > 0 && info->global_step >= c->after ? 1 : 0;
}

static int count_epoch_end(void *self, const sl_train_info *info)
{
    (void)info;
    ((counter *)self)->epochs_ended++;
    return 0;
}

static int count_begin(void *self, const sl_train_info *info)
{
    (void)info;
    ((counter *)self)->begins++;
    return 0;
}

static int count_end(void *self, const sl_train_info *info)
{
    (void)info;
    ((counter *)self)->ends++;
    return 0;
}

static sl_callback counting(counter *c)
{
    sl_callback cb;
    memset(&cb, 0, sizeof cb);
    cb.self = c;
    cb.begin = count_begin;
    cb.step_end = count_step;
    cb.epoch_end = count_epoch_end;
    cb.end = count_end;
    return cb;
}

static int fashion_present(void)
{
    return access(FASHION "/train-images-idx3-ubyte.gz", R_OK) == 0 &&
           access(FASHION "/t10k-images-idx3-ubyte.gz", R_OK) == 0;
}

/* --- learning on real data --------------------------------------------- */

static void collect_line(void *user, const char *line)
{
    snprintf(user, 256, "%s", line);
}

/* LeNet trained through the seeds' pipeline (2 workers) with a step
 * counter and a loss monitor, past the end of the first epoch, then
 * evaluated on the test split with its short last batch. */
typedef struct lenet_run {
    int64_t train_samples, test_samples; /* of the splits; 0: all */
    int64_t steps_per_epoch, steps, log_every;
    int learns; /* the run is long enough to check that it learned */
} lenet_run;

/* The full run: 2,500 steps over all 60,000 images (1,875 of the first
 * epoch, 625 of the second), evaluated on all 10,000 test images. */
static const lenet_run lenet_full = {0, 0, 1875, 2500, 1000, 1};
/* Under a sanitizer a step costs tens of times more (~35x under TSan).
 * The same pipeline, threads, epoch boundary, loss line and padded last
 * eval batch then run on 1,600 training images (50 steps an epoch, 75
 * steps) and 1,000 test images (31 batches and one of 8). The loss stays
 * near 2.30 for several hundred steps, so what it learned is only the full
 * run's to check. */
static const lenet_run lenet_short = {1600, 1000, 50, 75, 40, 0};

START_TEST(test_lenet_learns_fashion_mnist)
{
    const lenet_run *r =
        tu_shorten(TU_SANITIZED, "test_lenet_learns_fashion_mnist",
                   "75 steps on 1,600 images and eval on 1,000 (not 2,500 on 60,000 and "
                   "10,000); no learning checks")
            ? &lenet_short
            : &lenet_full;
    sl_model_options o;
    sl_model *m;
    sl_dataset *train, *test;
    counter c = {r->steps, 0, 0, 0, 0, 0};
    sl_callback cb = counting(&c), monitor;
    sl_callback *cbs[2] = {&cb, &monitor};
    sl_metrics metrics;
    char line[256] = "", want[64];
    double logged;
    ck_assert_msg(fashion_present(), "install dataset-fashion-mnist (%s)", FASHION);
    sl_model_options_init(&o);
    m = model_with(&o);
    train = tu_lenet_pipeline(FASHION, SL_MNIST_TRAIN, 2, 0, 1, 1, r->train_samples);
    test = tu_lenet_pipeline(FASHION, SL_MNIST_TEST, 2, 0, 1, 0, r->test_samples);
    ck_assert_int_eq(tu_dataset_size(train), r->steps_per_epoch);
    ck_assert_int_eq(sl_callback_loss_monitor(&monitor, r->log_every, 0, collect_line, line),
                     SL_OK);
    ck_assert_msg(sl_model_train(m, 2, train, cbs, 2) == SL_OK, "%s", sl_model_last_error(m));
    ck_assert_int_eq(c.steps, r->steps);
    ck_assert_int_eq(sl_model_global_step(m), r->steps);
    ck_assert_int_eq(c.epochs_ended, 1); /* the first epoch, then part of the second */
    /* the seeds' loss line: the monitor prints every log_every-th step of
     * an epoch, and the second epoch stops short of its first line */
    snprintf(want, sizeof want, "epoch: 1 step: %lld, loss is ", (long long)r->log_every);
    ck_assert_msg(strncmp(line, want, strlen(want)) == 0, "%s", line);
    logged = strtod(line + strlen(want), NULL);
    ck_assert_msg(isfinite(logged) && logged > 0.0, "%s", line);
    ck_assert_msg(sl_model_eval(m, test, &metrics) == SL_OK, "%s", sl_model_last_error(m));
    /* the short last batch counts */
    ck_assert_int_eq(metrics.samples, r->test_samples ? r->test_samples : 10000);
    ck_assert(metrics.accuracy >= 0.0 && metrics.accuracy <= 1.0);
    ck_assert(isfinite(metrics.loss) && metrics.loss > 0.0);
    if (r->learns) {
        /* The seeds' TruncatedNormal(0.02) init keeps the loss near 2.30
         * for several hundred steps (how many depends on the seed), so
         * 2,000 steps give 0.78-0.81 over seeds 0-5, 2,500 give 0.81-0.84. */
        ck_assert_msg(logged < 2.0, "%s", line);
        ck_assert_msg(metrics.accuracy >= 0.80, "test accuracy %.4f after %lld steps",
                      metrics.accuracy, (long long)r->steps);
        ck_assert(metrics.loss < 0.7);
    }
    sl_callback_release(&monitor);
    sl_dataset_free(train);
    sl_dataset_free(test);
    sl_model_free(m);
}
END_TEST

/* The same seed gives the same parameters bit for bit after `steps`
 * steps, run twice, whatever the number of pipeline workers. */
static unsigned char *train_steps(int workers, int64_t steps, int64_t samples, size_t *len)
{
    sl_model_options o;
    sl_model *m;
    sl_dataset *ds;
    counter c = {steps, 0, 0, 0, 0, 0};
    sl_callback cb = counting(&c);
    sl_callback *cbs[1] = {&cb};
    sl_graph *g;
    unsigned char *out;
    size_t total = 0, at = 0;
    sl_model_options_init(&o);
    o.seed = 42;
    m = model_with(&o);
    ds = tu_lenet_pipeline(FASHION, SL_MNIST_TRAIN, workers, 42, 1, 1, samples);
    ck_assert_msg(sl_model_train(m, 1, ds, cbs, 1) == SL_OK, "%s", sl_model_last_error(m));
    ck_assert_int_eq(sl_model_global_step(m), steps);
    g = sl_model_graph(m);
    for (size_t i = 0; i < sl_graph_num_params(g); i++) {
        size_t n;
        sl_graph_param_data(g, sl_graph_param_at(g, i), &n);
        total += n * sizeof(float);
    }
    out = malloc(total);
    for (size_t i = 0; i < sl_graph_num_params(g); i++) {
        size_t n;
        float *d = sl_graph_param_data(g, sl_graph_param_at(g, i), &n);
        memcpy(out + at, d, n * sizeof(float));
        at += n * sizeof(float);
    }
    *len = total;
    sl_dataset_free(ds);
    sl_model_free(m);
    return out;
}

START_TEST(test_deterministic_whatever_the_workers)
{
    /* the full run: 200 steps of the 60,000 images; under a sanitizer 20
     * steps of a 1,600-image epoch, the same workers' orders to keep */
    int shorten = tu_shorten(TU_SANITIZED, "test_deterministic_whatever_the_workers",
                             "20 steps on 1,600 images (not 200 on 60,000), three times");
    int64_t steps = shorten ? 20 : 200, samples = shorten ? 1600 : 0;
    size_t l1, l1b, l3;
    unsigned char *a, *b, *c;
    ck_assert_msg(fashion_present(), "install dataset-fashion-mnist (%s)", FASHION);
    a = train_steps(1, steps, samples, &l1);
    b = train_steps(1, steps, samples, &l1b);
    c = train_steps(3, steps, samples, &l3);
    ck_assert_uint_eq(l1, l3);
    ck_assert_int_eq(memcmp(a, b, l1), 0);
    ck_assert_int_eq(memcmp(a, c, l1), 0);
    free(a);
    free(b);
    free(c);
}
END_TEST

/* --- failures and stops ------------------------------------------------ */

typedef struct tmp_mnist {
    char *dir;
} tmp_mnist;

static tmp_mnist make_mnist(uint32_t n_train, uint32_t n_test)
{
    tmp_mnist t;
    t.dir = tu_mkdtemp();
    ck_assert_int_eq(tu_make_mnist(t.dir, n_train, n_test, 0), 0);
    return t;
}

static void drop_mnist(tmp_mnist *t)
{
    tu_rmtree(t->dir);
    free(t->dir);
}

START_TEST(test_stop_mid_epoch)
{
    tmp_mnist t = make_mnist(640, 64);
    sl_model_options o;
    sl_model *m;
    sl_dataset *ds;
    counter c = {5, 0, 0, 0, 0, 0};
    sl_callback cb = counting(&c);
    sl_callback *cbs[1] = {&cb};
    sl_model_options_init(&o);
    m = model_with(&o);
    ds = mnist_pipeline(t.dir, SL_MNIST_TRAIN, 2, 0, 1, 1);
    /* stops after step 5 of 20: returns OK, every pipeline thread joined */
    ck_assert_int_eq(sl_model_train(m, 3, ds, cbs, 1), SL_OK);
    ck_assert_int_eq(c.steps, 5);
    ck_assert_int_eq(c.begins, 1);
    ck_assert_int_eq(c.ends, 1);
    ck_assert_int_eq(sl_model_global_step(m), 5);
    /* the model trains on afterwards */
    c.after = 0;
    ck_assert_int_eq(sl_model_train(m, 2, ds, cbs, 1), SL_OK);
    ck_assert_int_eq(c.steps, 5 + 40);
    ck_assert_int_eq(c.epochs_ended, 2);
    ck_assert_int_eq(sl_model_global_step(m), 45);
    sl_dataset_free(ds);
    sl_model_free(m);
    drop_mnist(&t);
}
END_TEST

/* Renames a column with a map that leaves its values as they are. */
static void rename_column(sl_dataset *ds, const char *from, const char *to, int is_label)
{
    sl_op *op;
    char err[256];
    if (is_label)
        ck_assert_int_eq(sl_op_type_cast_new(&op, SL_INT32, err, sizeof err), SL_OK);
    else
        ck_assert_int_eq(sl_op_rescale_new(&op, 1.0, 0.0, err, sizeof err), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &op, 1, from, to, 1), SL_OK);
    sl_op_release(op);
}

/* A dataset whose columns have other names than the network's inputs
 * ("data" and "target" for "image" and "label") feeds it in column order,
 * as MindSpore does: train (sinking and not) and eval give what the named
 * columns give, bit for bit. */
START_TEST(test_columns_feed_the_network_in_order)
{
    tmp_mnist t = make_mnist(128, 64);
    sl_model_options o;
    sl_train_options to;
    sl_model *named, *renamed;
    sl_metrics a, b;
    sl_dataset *ds = mnist_pipeline(t.dir, SL_MNIST_TRAIN, 2, 0, 1, 1);
    sl_dataset *other = mnist_pipeline(t.dir, SL_MNIST_TRAIN, 2, 0, 1, 1);
    sl_dataset *test = mnist_pipeline(t.dir, SL_MNIST_TEST, 2, 0, 1, 0);
    sl_dataset *test_other = mnist_pipeline(t.dir, SL_MNIST_TEST, 2, 0, 1, 0);
    rename_column(other, "image", "data", 0);
    rename_column(other, "label", "target", 1);
    rename_column(test_other, "image", "data", 0);
    rename_column(test_other, "label", "target", 1);
    ck_assert_str_eq(sl_dataset_column_name(other, 0), "data");
    ck_assert_str_eq(sl_dataset_column_name(other, 1), "target");
    sl_model_options_init(&o);
    named = model_with(&o);
    renamed = model_with(&o);
    for (int sink = 0; sink < 2; sink++) {
        sl_train_options_init(&to);
        to.dataset_sink_mode = sink;
        ck_assert_msg(sl_model_train_opts(named, 1, ds, NULL, 0, &to) == SL_OK, "%s",
                      sl_model_last_error(named));
        ck_assert_msg(sl_model_train_opts(renamed, 1, other, NULL, 0, &to) == SL_OK, "%s",
                      sl_model_last_error(renamed));
    }
    ck_assert_int_eq(sl_model_global_step(renamed), 8);
    tu_assert_same_params(named, renamed, "named columns against renamed ones");
    ck_assert_msg(sl_model_eval(named, test, &a) == SL_OK, "%s", sl_model_last_error(named));
    ck_assert_msg(sl_model_eval(renamed, test_other, &b) == SL_OK, "%s",
                  sl_model_last_error(renamed));
    ck_assert_double_eq(a.accuracy, b.accuracy);
    ck_assert_double_eq(a.loss, b.loss);
    /* One name matches, the other does not: no guessing by position (the
     * label column would feed the image), an error naming both lists. */
    {
        sl_dataset *half = mnist_pipeline(t.dir, SL_MNIST_TRAIN, 2, 0, 1, 1);
        rename_column(half, "label", "target", 1);
        ck_assert_int_eq(sl_model_train_opts(renamed, 1, half, NULL, 0, &to), SL_EINVAL);
        ck_assert_msg(strstr(sl_model_last_error(renamed), "the network reads 'image', "
                                                           "'label'; the dataset's columns are "
                                                           "'image', 'target'"),
                      "%s", sl_model_last_error(renamed));
        sl_dataset_free(half);
    }
    sl_model_free(named);
    sl_model_free(renamed);
    sl_dataset_free(ds);
    sl_dataset_free(other);
    sl_dataset_free(test);
    sl_dataset_free(test_other);
    drop_mnist(&t);
}
END_TEST

START_TEST(test_pipeline_error_mid_epoch)
{
    /* An ImageFolder of small JPEGs with one corrupt file in the middle:
     * an MLP on 3x32x32 images meets the decode error mid-epoch. */
    char *dir = tu_mkdtemp(), *bad;
    sl_image_folder_options io;
    sl_model_options o;
    sl_model *m;
    sl_dataset *ds;
    sl_op *rs, *r, *chw;
    counter c = {0, 0, 0, 0, 0, 0};
    sl_callback cb = counting(&c);
    sl_callback *cbs[1] = {&cb};
    int rc;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    ck_assert_int_eq(tu_make_image_folder(dir, 2, 40, 40, 40), 0);
    bad = tu_path(dir, "class_1/img_20.jpg");
    static const char not_jpeg[] = "\xff\xd8\xff\xe0 not really a jpeg";
    ck_assert_int_eq(tu_write_bytes(bad, not_jpeg, sizeof not_jpeg - 1, 0), 0);
    sl_image_folder_options_init(&io);
    io.dataset_dir = dir;
    io.decode = 1;
    io.sampler.shuffle = 0;
    ck_assert_int_eq(sl_dataset_image_folder(ds, &io), SL_OK);
    ck_assert_int_eq(sl_op_resize_new(&rs, 32, 32, SL_INTER_LINEAR, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_rescale_new(&r, 1.0 / 255.0, 0.0, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_hwc2chw_new(&chw, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &rs, 1, "image", NULL, 2), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &r, 1, "image", NULL, 2), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &chw, 1, "image", NULL, 2), SL_OK);
    ck_assert_int_eq(sl_dataset_batch(ds, 8, 1, 2), SL_OK);
    sl_op_release(rs);
    sl_op_release(r);
    sl_op_release(chw);
    sl_model_options_init(&o);
    o.network.kind = SL_NETWORK_MLP;
    o.network.channels = 3;
    o.network.batch = 8;
    o.network.num_classes = 2;
    m = model_with(&o);
    rc = sl_model_train(m, 1, ds, cbs, 1);
    ck_assert_int_lt(rc, 0);
    ck_assert_msg(strstr(sl_model_last_error(m), "img_20.jpg") &&
                      strstr(sl_model_last_error(m), "epoch 1 step"),
                  "%s", sl_model_last_error(m));
    /* the batches before the bad file trained */
    ck_assert_int_ge(c.steps, 5);
    ck_assert_int_lt(c.steps, 10);
    ck_assert_int_eq(c.ends, 0);
    sl_dataset_free(ds);
    sl_model_free(m);
    tu_rmtree(dir);
    free(dir);
    free(bad);
}
END_TEST

START_TEST(test_labels_outside_the_classes)
{
    tmp_mnist t = make_mnist(320, 32); /* labels 0..9 */
    sl_model_options o;
    sl_model *m;
    sl_dataset *ds;
    sl_metrics metrics;
    sl_model_options_init(&o);
    o.network.num_classes = 5;
    m = model_with(&o);
    ds = mnist_pipeline(t.dir, SL_MNIST_TRAIN, 2, 0, 1, 1);
    ck_assert_int_eq(sl_model_train(m, 1, ds, NULL, 0), SL_EINVAL);
    ck_assert_msg(strstr(sl_model_last_error(m), "outside [0, 5)") &&
                      strstr(sl_model_last_error(m), "epoch 1 step 1"),
                  "%s", sl_model_last_error(m));
    sl_dataset_free(ds);
    ds = mnist_pipeline(t.dir, SL_MNIST_TEST, 2, 0, 1, 0);
    ck_assert_int_eq(sl_model_eval(m, ds, &metrics), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_model_last_error(m), "outside [0, 5)"));
    sl_dataset_free(ds);
    sl_model_free(m);
    drop_mnist(&t);
}
END_TEST

START_TEST(test_wrong_shape_from_the_pipeline)
{
    tmp_mnist t = make_mnist(64, 32);
    sl_model_options o;
    sl_model *m;
    sl_dataset *ds;
    sl_model_options_init(&o);
    m = model_with(&o);
    ds = mnist_pipeline(t.dir, SL_MNIST_TRAIN, 1, 0, 0, 1); /* no resize: 28x28 */
    ck_assert_int_eq(sl_model_train(m, 1, ds, NULL, 0), SL_ESHAPE);
    ck_assert_msg(strstr(sl_model_last_error(m), "conv2d 'conv1'") &&
                      strstr(sl_model_last_error(m), "(32, 1, 28, 28)") &&
                      strstr(sl_model_last_error(m), "(32, 1, 32, 32)"),
                  "%s", sl_model_last_error(m));
    sl_dataset_free(ds);
    /* a short last batch (64 + 4 samples, batch 32, remainder kept): the
     * message says what to do */
    drop_mnist(&t);
    t = make_mnist(68, 32);
    ds = mnist_pipeline(t.dir, SL_MNIST_TRAIN, 1, 0, 1, 0);
    ck_assert_int_eq(sl_model_train(m, 1, ds, NULL, 0), SL_ESHAPE);
    ck_assert_msg(strstr(sl_model_last_error(m), "step 3") &&
                      strstr(sl_model_last_error(m), "(4, 1, 32, 32)") &&
                      strstr(sl_model_last_error(m), "drop_remainder"),
                  "%s", sl_model_last_error(m));
    ck_assert_int_eq(sl_model_global_step(m), 2);
    sl_dataset_free(ds);
    sl_model_free(m);
    drop_mnist(&t);
}
END_TEST

START_TEST(test_diverging_loss_stops)
{
    tmp_mnist t = make_mnist(3200, 32);
    sl_model_options o;
    sl_model *m;
    sl_dataset *ds;
    counter c = {0, 0, 0, 0, 0, 0};
    sl_callback cb = counting(&c);
    sl_callback *cbs[1] = {&cb};
    sl_model_options_init(&o);
    o.learning_rate = 1e8f;
    o.optimizer = SL_OPTIMIZER_SGD;
    m = model_with(&o);
    ds = mnist_pipeline(t.dir, SL_MNIST_TRAIN, 2, 0, 1, 1);
    ck_assert_int_eq(sl_model_train(m, 5, ds, cbs, 1), SL_ENUMERIC);
    ck_assert_msg(strstr(sl_model_last_error(m), "step") &&
                      (strstr(sl_model_last_error(m), "NaN") ||
                       strstr(sl_model_last_error(m), "infinite")),
                  "%s", sl_model_last_error(m));
    ck_assert_int_lt(c.steps, 5 * 100); /* it stopped, it did not run on */
    sl_dataset_free(ds);
    sl_model_free(m);
    drop_mnist(&t);
}
END_TEST

START_TEST(test_checkpoint_callback)
{
    tmp_mnist t = make_mnist(320, 32);
    char *ck = tu_mkdtemp(), cmd[1024];
    sl_model_options o;
    sl_model *m;
    sl_dataset *ds;
    sl_callback save;
    sl_callback *cbs[1] = {&save};
    sl_model_options_init(&o);
    o.context.threads = 1;
    m = model_with(&o);
    ds = mnist_pipeline(t.dir, SL_MNIST_TRAIN, 2, 0, 1, 1);
    ck_assert_int_eq(sl_callback_checkpoint(&save, ck, "lenet", 0, 2), SL_OK);
    ck_assert_int_eq(sl_model_train(m, 3, ds, cbs, 1), SL_OK);
    /* 3 epochs of 10 steps, the newest 2 kept */
    snprintf(cmd, sizeof cmd,
             "cd '%s' && test \"$(ls | tr '\\n' ' ')\" = 'lenet-2_10.ckpt lenet-3_10.ckpt '", ck);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/lenet-3_10.ckpt", ck);
    ck_assert_int_eq(sl_model_load(m, cmd), SL_OK);
    ck_assert_int_eq(sl_model_global_step(m), 30);
    sl_callback_release(&save);
    /* a folder that cannot be made (a file is in the way): training fails
     * naming it */
    {
        char *file = tu_path(ck, "a-file"), *under = tu_path(file, "sub");
        ck_assert_int_eq(tu_write_bytes(file, "x", 1, 0), 0);
        ck_assert_int_eq(sl_callback_checkpoint(&save, under, "lenet", 0, 2), SL_OK);
        ck_assert_int_eq(sl_model_train(m, 1, ds, cbs, 1), SL_EIO);
        ck_assert_msg(strstr(sl_model_last_error(m), "a-file"), "%s", sl_model_last_error(m));
        sl_callback_release(&save);
        free(file);
        free(under);
    }
    sl_dataset_free(ds);
    sl_model_free(m);
    tu_rmtree(ck);
    free(ck);
    drop_mnist(&t);
}
END_TEST

/* A model over a graph the caller built (what Python's tracing does)
 * trains as the same network built by sl_model_new, bit for bit; without
 * logits it refuses eval; a graph whose loss is not a scalar is refused
 * (and freed: the model owns it either way). */
START_TEST(test_model_from_graph)
{
    tmp_mnist t = make_mnist(320, 32);
    sl_model_options o;
    sl_network_options no;
    sl_network net;
    sl_model *built, *given = NULL;
    sl_dataset *ds;
    sl_metrics metrics;
    sl_graph *g;
    char err[512];
    ck_assert_int_eq(sl_graph_new(&g), SL_OK);
    sl_model_options_init(&o);
    built = model_with(&o);
    sl_network_options_init(&no);
    ck_assert_int_eq(sl_network_build(g, &no, &net), SL_OK);
    ck_assert_int_eq(sl_graph_backward(g, net.loss), SL_OK);
    ck_assert_int_eq(sl_graph_momentum(g, 0.01f, 0.9f), SL_OK);
    net.logits = -1;
    ck_assert_msg(sl_model_new_from_graph(&given, g, &net, &o, err, sizeof err) == SL_OK, "%s",
                  err);
    ds = mnist_pipeline(t.dir, SL_MNIST_TRAIN, 1, 0, 1, 1);
    ck_assert_msg(sl_model_train(built, 2, ds, NULL, 0) == SL_OK, "%s",
                  sl_model_last_error(built));
    ck_assert_msg(sl_model_train(given, 2, ds, NULL, 0) == SL_OK, "%s",
                  sl_model_last_error(given));
    for (size_t i = 0; i < sl_graph_num_params(sl_model_graph(built)); i++) {
        sl_graph *a = sl_model_graph(built), *b = sl_model_graph(given);
        int na = sl_graph_param_at(a, i), nb = sl_graph_param_at(b, i);
        size_t la, lb;
        const float *va = sl_graph_param_data(a, na, &la), *vb = sl_graph_param_data(b, nb, &lb);
        ck_assert_str_eq(sl_graph_node_name(a, na), sl_graph_node_name(b, nb));
        ck_assert_msg(la == lb && memcmp(va, vb, la * sizeof *va) == 0, "%s differs",
                      sl_graph_node_name(a, na));
    }
    ck_assert_int_eq(sl_model_eval(given, ds, &metrics), SL_ESTATE);
    ck_assert_msg(strstr(sl_model_last_error(given), "no logits"), "%s",
                  sl_model_last_error(given));
    sl_model_free(given);
    /* the logits are no loss */
    ck_assert_int_eq(sl_graph_new(&g), SL_OK);
    ck_assert_int_eq(sl_network_build(g, &no, &net), SL_OK);
    net.loss = net.logits;
    ck_assert_int_eq(sl_model_new_from_graph(&given, g, &net, &o, err, sizeof err), SL_EINVAL);
    ck_assert_ptr_null(given);
    ck_assert_msg(strstr(err, "not a scalar"), "%s", err);
    sl_dataset_free(ds);
    sl_model_free(built);
    drop_mnist(&t);
}
END_TEST

/* Evaluating while training (seed 004): a callback's sl_model_eval at each
 * epoch's end. */
#define EVAL_EPOCHS 3

typedef struct eval_in_epoch_end {
    sl_model *m;
    sl_dataset *test;
    int stop_first;                   /* asks the training to stop, then evals */
    int epochs;                       /* epoch_end calls */
    int rc[EVAL_EPOCHS];
    sl_metrics seen[EVAL_EPOCHS];
    float *params[EVAL_EPOCHS];       /* every parameter, at that epoch's end */
} eval_in_epoch_end;

static size_t all_params_len(sl_model *m)
{
    sl_graph *g = sl_model_graph(m);
    size_t total = 0, n;
    for (size_t i = 0; i < sl_graph_num_params(g); i++) {
        sl_graph_param_data(g, sl_graph_param_at(g, i), &n);
        total += n;
    }
    return total;
}

/* Copies every parameter of m into (to_model 0) or out of (1) flat. */
static void copy_params(sl_model *m, float *flat, int to_model)
{
    sl_graph *g = sl_model_graph(m);
    size_t at = 0, n;
    for (size_t i = 0; i < sl_graph_num_params(g); i++) {
        float *v = sl_graph_param_data(g, sl_graph_param_at(g, i), &n);
        if (to_model)
            memcpy(v, flat + at, n * sizeof *v);
        else
            memcpy(flat + at, v, n * sizeof *v);
        at += n;
    }
}

static int eval_at_epoch_end(void *self, const sl_train_info *info)
{
    eval_in_epoch_end *e = self;
    int i = e->epochs++;
    (void)info;
    ck_assert_int_lt(i, EVAL_EPOCHS);
    e->params[i] = malloc(all_params_len(e->m) * sizeof(float));
    ck_assert_ptr_nonnull(e->params[i]);
    copy_params(e->m, e->params[i], 0);
    if (e->stop_first)
        sl_model_stop(e->m);
    e->rc[i] = sl_model_eval(e->m, e->test, &e->seen[i]);
    return 0;
}

static void eval_while_training(int sink)
{
    tmp_mnist t = make_mnist(128, 40);
    sl_model_options o;
    sl_train_options to;
    sl_model *m, *ref;
    sl_dataset *ds, *test;
    eval_in_epoch_end e;
    sl_callback cb;
    sl_callback *cbs[1] = {&cb};
    sl_model_options_init(&o);
    sl_train_options_init(&to);
    to.dataset_sink_mode = sink;
    m = model_with(&o);
    ref = model_with(&o);
    ds = mnist_pipeline(t.dir, SL_MNIST_TRAIN, 2, 0, 1, 1);      /* 4 batches an epoch */
    test = mnist_pipeline(t.dir, SL_MNIST_TEST, 2, 0, 1, 0);     /* 32 and a short 8 */
    memset(&e, 0, sizeof e);
    e.m = m;
    e.test = test;
    memset(&cb, 0, sizeof cb);
    cb.self = &e;
    cb.epoch_end = eval_at_epoch_end;
    ck_assert_msg(sl_model_train_opts(m, EVAL_EPOCHS, ds, cbs, 1, &to) == SL_OK, "%s",
                  sl_model_last_error(m));
    ck_assert_int_eq(e.epochs, EVAL_EPOCHS);
    /* the training went on as if nothing had evaluated */
    ck_assert_msg(sl_model_train_opts(ref, EVAL_EPOCHS, ds, NULL, 0, &to) == SL_OK, "%s",
                  sl_model_last_error(ref));
    tu_assert_same_params(m, ref, "trained with and without evaluating at epoch ends");
    for (int i = 0; i < EVAL_EPOCHS; i++) {
        sl_metrics again;
        ck_assert_int_eq(e.rc[i], SL_OK);
        ck_assert_int_eq(e.seen[i].samples, 40);
        /* each is that epoch's weights', evaluated anew */
        copy_params(ref, e.params[i], 1);
        ck_assert_msg(sl_model_eval(ref, test, &again) == SL_OK, "%s", sl_model_last_error(ref));
        ck_assert_msg(again.accuracy == e.seen[i].accuracy && again.loss == e.seen[i].loss,
                      "epoch %d: evaluated %.9g %.9g in training, %.9g %.9g after", i + 1,
                      e.seen[i].accuracy, e.seen[i].loss, again.accuracy, again.loss);
        free(e.params[i]);
    }
    ck_assert_msg(e.seen[0].loss != e.seen[EVAL_EPOCHS - 1].loss,
                  "the weights did not change between the evaluations");

    /* a stop asked of the training is kept: eval refuses, training ends there */
    memset(&e, 0, sizeof e);
    e.m = m;
    e.test = test;
    e.stop_first = 1;
    ck_assert_int_eq(sl_model_train_opts(m, EVAL_EPOCHS, ds, cbs, 1, &to), SL_OK);
    ck_assert_int_eq(e.epochs, 1);
    ck_assert_int_eq(e.rc[0], SL_ECANCELED);
    free(e.params[0]);
    sl_dataset_free(test);
    sl_dataset_free(ds);
    sl_model_free(ref);
    sl_model_free(m);
    drop_mnist(&t);
}

START_TEST(test_eval_while_training_without_sinking)
{
    eval_while_training(0);
}
END_TEST

START_TEST(test_eval_while_training_sinking)
{
    eval_while_training(1);
}
END_TEST

Suite *make_train_suite(void)
{
    Suite *s = suite_create("train");
    TCase *tc = tu_tcase("fashion_mnist", 1200);
    tcase_add_test(tc, test_lenet_learns_fashion_mnist);
    tcase_add_test(tc, test_deterministic_whatever_the_workers);
    suite_add_tcase(s, tc);

    tc = tu_tcase("failures", 300);
    tcase_add_test(tc, test_stop_mid_epoch);
    tcase_add_test(tc, test_columns_feed_the_network_in_order);
    tcase_add_test(tc, test_pipeline_error_mid_epoch);
    tcase_add_test(tc, test_labels_outside_the_classes);
    tcase_add_test(tc, test_wrong_shape_from_the_pipeline);
    tcase_add_test(tc, test_diverging_loss_stops);
    tcase_add_test(tc, test_checkpoint_callback);
    tcase_add_test(tc, test_model_from_graph);
    tcase_add_test(tc, test_node_flops);
    suite_add_tcase(s, tc);

    tc = tu_tcase("eval_while_training", 300);
    tcase_add_test(tc, test_eval_while_training_without_sinking);
    tcase_add_test(tc, test_eval_while_training_sinking);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(make_train_suite);
}
