/* readme_example.c: the C examples in README.md, kept compiling and running
 * as a test. create_dataset() is the seeds' one: MnistDataset, five maps,
 * shuffle 10000, batch 32 dropping the remainder. main() prints the first
 * batch's shapes and the batches in an epoch, then trains the seeds' LeNet5
 * for one epoch and evaluates it on the test split.
 * Usage: readme_example [MNIST_DIR] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sluice/sluice.h>

/* Not part of the README's example: built with AddressSanitizer or
 * ThreadSanitizer, where a training step costs tens of times more, the test
 * stops after the epoch of iteration (its threads are what a sanitizer
 * checks here); check_train trains and evaluates LeNet through this same
 * pipeline there, shortened. The plain build runs all of it, and so does
 * SLUICE_TESTS_FULL=1 under a sanitizer. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

static int skip_training(void)
{
#ifdef SANITIZED
    const char *full = getenv("SLUICE_TESTS_FULL");
    if (!full || strcmp(full, "1") != 0) {
        printf("sanitizer build, shortened: training and evaluation skipped (check_train "
               "runs them shortened); the plain build runs them (so does "
               "SLUICE_TESTS_FULL=1)\n");
        return 1;
    }
#endif
    return 0;
}

static int check(int rc, sl_dataset *ds)
{
    if (rc < 0)
        fprintf(stderr, "error: %s\n", sl_dataset_last_error(ds));
    return rc < 0;
}

/* The seeds' pipeline over one split; NULL (message printed) on failure. */
static sl_dataset *create_dataset(const char *dir, sl_mnist_usage usage)
{
    sl_mnist_options opts;
    sl_dataset *ds;
    sl_op *type_cast, *resize, *rescale, *rescale_nml, *hwc2chw;
    int bad = 0;

    if (sl_dataset_new(&ds) != SL_OK) {
        fprintf(stderr, "error: out of memory\n");
        return NULL;
    }
    sl_mnist_options_init(&opts); /* shuffled each epoch, like MindSpore */
    opts.dataset_dir = dir;
    opts.usage = usage;
    if (check(sl_dataset_mnist(ds, &opts), ds)) {
        sl_dataset_free(ds);
        return NULL;
    }
    sl_op_type_cast_new(&type_cast, SL_INT32, NULL, 0);
    sl_op_resize_new(&resize, 32, 32, SL_INTER_LINEAR, NULL, 0);
    sl_op_rescale_new(&rescale, 1.0 / 255.0, 0.0, NULL, 0);
    sl_op_rescale_new(&rescale_nml, 1 / 0.3081, -1 * 0.1307 / 0.3081, NULL, 0);
    sl_op_hwc2chw_new(&hwc2chw, NULL, 0);

    bad |= check(sl_dataset_map(ds, &type_cast, 1, "label", NULL, 2), ds);
    bad |= check(sl_dataset_map(ds, &resize, 1, "image", NULL, 2), ds);
    bad |= check(sl_dataset_map(ds, &rescale, 1, "image", NULL, 2), ds);
    bad |= check(sl_dataset_map(ds, &rescale_nml, 1, "image", NULL, 2), ds);
    bad |= check(sl_dataset_map(ds, &hwc2chw, 1, "image", NULL, 2), ds);
    bad |= check(sl_dataset_shuffle(ds, 10000), ds);
    bad |= check(sl_dataset_batch(ds, 32, 1, 2), ds);
    /* the maps hold their own references now */
    sl_op_release(type_cast);
    sl_op_release(resize);
    sl_op_release(rescale);
    sl_op_release(rescale_nml);
    sl_op_release(hwc2chw);
    if (bad) {
        sl_dataset_free(ds);
        return NULL;
    }
    return ds;
}

static void print_line(void *user, const char *line)
{
    (void)user;
    printf("%s\n", line);
}

/* Trains LeNet5 one epoch on train and evaluates it on test. */
static int train_lenet(sl_dataset *train, sl_dataset *test)
{
    sl_model_options mo;
    sl_model *model;
    sl_callback monitor, *callbacks[1] = {&monitor};
    sl_metrics metrics;
    char err[256];
    int rc;

    sl_model_options_init(&mo); /* LeNet5, batch 32, Momentum(0.01, 0.9), GRAPH */
    if (sl_model_new(&model, &mo, err, sizeof err) < 0) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    sl_callback_loss_monitor(&monitor, 0, 1, print_line, NULL); /* a line per epoch */
    rc = sl_model_train(model, 1, train, callbacks, 1);
    if (rc == SL_OK)
        rc = sl_model_eval(model, test, &metrics);
    if (rc < 0)
        fprintf(stderr, "error: %s\n", sl_model_last_error(model));
    else
        printf("accuracy %.4f on %lld test images\n", metrics.accuracy,
               (long long)metrics.samples);
    sl_callback_release(&monitor);
    sl_model_free(model); /* joins the executor's threads */
    return rc < 0 || metrics.accuracy < 0.5;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
    sl_dataset *ds = create_dataset(dir, SL_MNIST_TRAIN), *test;
    sl_iterator *it;
    sl_row row;
    char shape[64];
    int64_t size;
    long batches = 0;
    int rc, bad = 0;

    if (!ds)
        return 77; /* no data: the test harness counts this as skipped */
    if (check(sl_iterator_new(&it, ds, NULL), ds)) {
        sl_dataset_free(ds);
        return 1;
    }
    if (sl_dataset_get_dataset_size(ds, &size) == SL_OK)
        printf("dataset size: %lld batches\n", (long long)size);
    while ((rc = sl_iterator_next(it, &row)) == SL_OK) {
        if (batches++ == 0) {
            sl_tensor *image = row.columns[0], *label = row.columns[1];
            printf("image %s %s\n", sl_dtype_name(sl_tensor_dtype(image)),
                   sl_shape_str(shape, sizeof shape, sl_tensor_ndim(image), sl_tensor_shape(image)));
            printf("label %s %s\n", sl_dtype_name(sl_tensor_dtype(label)),
                   sl_shape_str(shape, sizeof shape, sl_tensor_ndim(label), sl_tensor_shape(label)));
        }
        sl_row_clear(&row);
    }
    if (rc != SL_END_OF_EPOCH) {
        fprintf(stderr, "error: %s\n", sl_iterator_last_error(it));
        bad = 1;
    }
    printf("one epoch: %ld batches\n", batches);
    sl_iterator_free(it); /* joins every thread */

    test = create_dataset(dir, SL_MNIST_TEST);
    bad |= batches != 1875 || !test;
    if (!bad && !skip_training())
        bad |= train_lenet(ds, test);
    sl_dataset_free(test);
    sl_dataset_free(ds);
    return bad;
}
