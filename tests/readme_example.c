/* readme_example.c: the C example in README.md, kept compiling and running
 * as a test. The seeds' create_dataset(): MnistDataset, five maps, shuffle
 * 10000, batch 32 dropping the remainder; prints the first batch's shapes
 * and the number of batches in an epoch. Usage: readme_example [MNIST_DIR] */
#include <stdio.h>
#include <stdlib.h>
#include <sluice/sluice.h>

static int check(int rc, sl_dataset *ds)
{
    if (rc < 0)
        fprintf(stderr, "error: %s\n", sl_dataset_last_error(ds));
    return rc < 0;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
    sl_mnist_options opts;
    sl_dataset *ds = sl_dataset_new();
    sl_op *type_cast, *resize, *rescale, *rescale_nml, *hwc2chw;
    sl_iterator *it;
    sl_row row;
    char shape[64];
    long batches = 0;
    int rc, bad = 0;

    sl_mnist_options_init(&opts); /* shuffled each epoch, like MindSpore */
    opts.dataset_dir = dir;
    opts.usage = SL_MNIST_TRAIN;
    if (check(sl_dataset_mnist(ds, &opts), ds)) {
        sl_dataset_free(ds);
        return 77; /* no data: the test harness counts this as skipped */
    }
    sl_op_type_cast_new(&type_cast, SL_INT32);
    sl_op_resize_new(&resize, 32, 32, SL_INTER_LINEAR);
    sl_op_rescale_new(&rescale, 1.0 / 255.0, 0.0);
    sl_op_rescale_new(&rescale_nml, 1 / 0.3081, -1 * 0.1307 / 0.3081);
    sl_op_hwc2chw_new(&hwc2chw);

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
    if (bad || check(sl_iterator_new(&it, ds, NULL), ds)) {
        sl_dataset_free(ds);
        return 1;
    }
    printf("dataset size: %lld batches\n", (long long)sl_dataset_get_dataset_size(ds));
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
    sl_dataset_free(ds);
    return bad || batches != 1875;
}
