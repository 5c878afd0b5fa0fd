/* check_pipeline.c: the dataset engine's nodes and iterator: map order,
 * determinism across worker counts, shuffle, batch, repeat and end-of-epoch
 * placement, take/skip, sizes, and shutdown in the middle of an epoch. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "sluice/sluice.h"
#include "core/clock.h"
#include "core/queue.h"
#include "ops/op_impl.h"
#include "pipeline/nodes.h"
#include "fault.h"
#include "testutil.h"

#define N_TRAIN 300
#define N_TEST 50

static char *tmpdir;

static void setup(void)
{
    tmpdir = tu_mkdtemp();
    ck_assert_ptr_nonnull(tmpdir);
    ck_assert_int_eq(tu_make_mnist(tmpdir, N_TRAIN, N_TEST, 1), 0);
}

static void teardown(void)
{
    tu_rmtree(tmpdir);
    free(tmpdir);
}

/* An MNIST dataset of the temp dir, train split, in file order. */
static sl_dataset *mnist(int shuffle)
{
    sl_mnist_options o;
    sl_dataset *ds;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_mnist_options_init(&o);
    o.dataset_dir = tmpdir;
    o.usage = SL_MNIST_TRAIN;
    o.sampler.shuffle = shuffle;
    ck_assert_msg(sl_dataset_mnist(ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
    return ds;
}

/* The seeds' LeNet pipeline (create_dataset in the MindSpore docs). */
static void add_lenet_ops(sl_dataset *ds, int workers, int batch_workers)
{
    sl_op *cast, *resize, *rescale, *rescale_nml, *hwc2chw;
    ck_assert_int_eq(sl_op_type_cast_new(&cast, SL_INT32, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_resize_new(&resize, 32, 32, SL_INTER_LINEAR, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_rescale_new(&rescale, 1.0 / 255.0, 0.0, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_rescale_new(&rescale_nml, 1 / 0.3081, -1 * 0.1307 / 0.3081, NULL, 0),
                     SL_OK);
    ck_assert_int_eq(sl_op_hwc2chw_new(&hwc2chw, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &cast, 1, "label", NULL, workers), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &resize, 1, "image", NULL, workers), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &rescale, 1, "image", NULL, workers), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &rescale_nml, 1, "image", NULL, workers), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &hwc2chw, 1, "image", NULL, workers), SL_OK);
    ck_assert_int_eq(sl_dataset_shuffle(ds, 100), SL_OK);
    ck_assert_int_eq(sl_dataset_batch(ds, 32, 1, batch_workers), SL_OK);
    sl_op_release(cast);
    sl_op_release(resize);
    sl_op_release(rescale);
    sl_op_release(rescale_nml);
    sl_op_release(hwc2chw);
}

/* Everything an iterator yields, flattened: per row the bytes of every
 * column, and a marker byte sequence at each end of epoch. FNV-1a keeps it
 * small; `rows` and `epochs` count what came. */
typedef struct trace {
    uint64_t hash;
    size_t rows;
    size_t epochs;
    int end;
} trace;

static void hash_bytes(trace *t, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        t->hash ^= b[i];
        t->hash *= 0x100000001b3ULL;
    }
}

static trace run_trace(sl_dataset *ds, int64_t epochs)
{
    sl_iterator_options o;
    sl_iterator *it;
    trace t = {0xcbf29ce484222325ULL, 0, 0, 0};
    sl_row row;
    int rc;
    sl_iterator_options_init(&o);
    o.num_epochs = epochs;
    ck_assert_msg(sl_iterator_new(&it, ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
    while ((rc = sl_iterator_next(it, &row)) != SL_END_OF_DATA) {
        ck_assert_msg(rc >= 0, "%s", sl_iterator_last_error(it));
        if (rc == SL_END_OF_EPOCH) {
            t.epochs++;
            hash_bytes(&t, "EOE", 3);
            continue;
        }
        t.rows++;
        for (size_t c = 0; c < row.ncolumns; c++) {
            hash_bytes(&t, sl_tensor_shape(row.columns[c]),
                       (size_t)sl_tensor_ndim(row.columns[c]) * sizeof(int64_t));
            hash_bytes(&t, sl_tensor_data(row.columns[c]), sl_tensor_nbytes(row.columns[c]));
        }
        sl_row_clear(&row);
    }
    t.end = 1;
    /* The end stays the end. */
    ck_assert_int_eq(sl_iterator_next(it, &row), SL_END_OF_DATA);
    sl_iterator_free(it);
    return t;
}

START_TEST(test_map_keeps_order)
{
    /* No shuffle anywhere: rows must come out in file order whatever the
     * number of workers, and carry their own labels. */
    int workers[] = {1, 2, 4, 7};
    for (size_t w = 0; w < sizeof workers / sizeof *workers; w++) {
        sl_dataset *ds = mnist(0);
        sl_op *resize;
        sl_iterator_options o;
        sl_iterator *it;
        sl_row row;
        uint32_t i = 0;
        int rc;
        ck_assert_int_eq(sl_op_resize_new(&resize, 14, 14, SL_INTER_NEAREST, NULL, 0), SL_OK);
        ck_assert_int_eq(sl_dataset_map(ds, &resize, 1, "image", NULL, workers[w]), SL_OK);
        sl_op_release(resize);
        sl_iterator_options_init(&o);
        o.chunk_rows = 7; /* many chunks, so workers really interleave */
        ck_assert_int_eq(sl_iterator_new(&it, ds, &o), SL_OK);
        while ((rc = sl_iterator_next(it, &row)) == SL_OK) {
            const uint8_t *px = sl_tensor_data(row.columns[0]);
            ck_assert_int_eq(sl_tensor_shape(row.columns[0])[0], 14);
            /* nearest 28 -> 14 takes source pixel (2y, 2x) */
            ck_assert_uint_eq(px[0], tu_pixel(i, 0, 0));
            ck_assert_uint_eq(px[14 * 3 + 5], tu_pixel(i, 6, 10));
            ck_assert_uint_eq(*(const uint32_t *)sl_tensor_data(row.columns[1]), tu_label(i));
            sl_row_clear(&row);
            i++;
        }
        ck_assert_int_eq(rc, SL_END_OF_EPOCH);
        ck_assert_uint_eq(i, N_TRAIN);
        ck_assert_int_eq(sl_iterator_next(it, &row), SL_END_OF_DATA);
        sl_iterator_free(it);
        sl_dataset_free(ds);
    }
}
END_TEST

START_TEST(test_determinism_across_workers)
{
    /* The seeds' whole pipeline, shuffled at the source and in the shuffle
     * node: 1, 2 and 4 workers (map and batch) give identical batches. */
    trace ref = {0};
    int workers[] = {1, 2, 4};
    for (size_t w = 0; w < 3; w++) {
        sl_dataset *ds = mnist(1);
        trace t;
        sl_dataset_set_seed(ds, 42);
        add_lenet_ops(ds, workers[w], workers[w]);
        t = run_trace(ds, 2);
        ck_assert_uint_eq(t.rows, 2 * (N_TRAIN / 32));
        ck_assert_uint_eq(t.epochs, 2);
        if (w == 0)
            ref = t;
        else
            ck_assert_msg(t.hash == ref.hash, "workers=%d differ from workers=1", workers[w]);
        sl_dataset_free(ds);
    }
    /* A different seed gives a different order. */
    {
        sl_dataset *ds = mnist(1);
        trace t;
        sl_dataset_set_seed(ds, 43);
        add_lenet_ops(ds, 2, 1);
        t = run_trace(ds, 2);
        ck_assert(t.hash != ref.hash);
        sl_dataset_free(ds);
    }
}
END_TEST

START_TEST(test_lenet_batches)
{
    /* Shapes, dtypes and values of the seeds' pipeline, checked against the
     * same arithmetic done here on the source rows. */
    sl_dataset *ds = mnist(0);
    sl_op *cast, *resize, *rescale, *rescale_nml, *hwc2chw;
    sl_iterator *it;
    sl_row row;
    sl_tensor_spec spec;
    int rc;
    size_t batches = 0;
    ck_assert_int_eq(sl_op_type_cast_new(&cast, SL_INT32, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_resize_new(&resize, 28, 28, SL_INTER_LINEAR, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_rescale_new(&rescale, 1.0 / 255.0, 0.0, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_rescale_new(&rescale_nml, 1 / 0.3081, -1 * 0.1307 / 0.3081, NULL, 0),
                     SL_OK);
    ck_assert_int_eq(sl_op_hwc2chw_new(&hwc2chw, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &cast, 1, "label", NULL, 2), SL_OK);
    {
        sl_op *image_ops[] = {resize, rescale, rescale_nml, hwc2chw};
        ck_assert_int_eq(sl_dataset_map(ds, image_ops, 4, "image", NULL, 2), SL_OK);
    }
    ck_assert_int_eq(sl_dataset_batch(ds, 32, 1, 2), SL_OK);
    ck_assert_int_eq(tu_dataset_size(ds), N_TRAIN / 32);
    ck_assert_int_eq(sl_dataset_column_spec(ds, 0, &spec), SL_OK);
    ck_assert_int_eq(spec.dtype, SL_FLOAT32);
    ck_assert_int_eq(spec.ndim, 4);
    ck_assert_int_eq(spec.shape[0], 32);
    ck_assert_int_eq(spec.shape[1], 1);
    ck_assert_int_eq(spec.shape[2], 28);
    ck_assert_int_eq(sl_dataset_column_spec(ds, 1, &spec), SL_OK);
    ck_assert_int_eq(spec.dtype, SL_INT32);
    ck_assert_int_eq(spec.ndim, 1);
    ck_assert_int_eq(sl_iterator_new(&it, ds, NULL), SL_OK);
    while ((rc = sl_iterator_next(it, &row)) == SL_OK) {
        const float *img = sl_tensor_data(row.columns[0]);
        const int32_t *lab = sl_tensor_data(row.columns[1]);
        ck_assert_int_eq(sl_tensor_dtype(row.columns[0]), SL_FLOAT32);
        ck_assert_int_eq(sl_tensor_ndim(row.columns[0]), 4);
        ck_assert_int_eq(sl_tensor_shape(row.columns[0])[0], 32);
        ck_assert_int_eq(sl_tensor_shape(row.columns[1])[0], 32);
        for (int b = 0; b < 32; b++) {
            uint32_t i = (uint32_t)(batches * 32 + (size_t)b);
            /* resize 28 -> 28 is the identity */
            float x = (float)tu_pixel(i, 3, 4) * (float)(1.0 / 255.0);
            float want = x * (float)(1 / 0.3081) + (float)(-0.1307 / 0.3081);
            ck_assert_float_eq_tol(img[(size_t)b * 28 * 28 + 3 * 28 + 4], want, 1e-5);
            ck_assert_int_eq(lab[b], tu_label(i));
        }
        sl_row_clear(&row);
        batches++;
    }
    ck_assert_int_eq(rc, SL_END_OF_EPOCH);
    ck_assert_uint_eq(batches, N_TRAIN / 32);
    sl_iterator_free(it);
    sl_op_release(cast);
    sl_op_release(resize);
    sl_op_release(rescale);
    sl_op_release(rescale_nml);
    sl_op_release(hwc2chw);
    sl_dataset_free(ds);
}
END_TEST

/* Collects the labels of one epoch (rows are unbatched MNIST rows). */
static size_t epoch_labels(sl_iterator *it, uint32_t *labels, size_t cap, int *end)
{
    sl_row row;
    size_t n = 0;
    int rc;
    while ((rc = sl_iterator_next(it, &row)) == SL_OK) {
        ck_assert_uint_lt(n, cap);
        labels[n++] = *(const uint32_t *)sl_tensor_data(row.columns[1]);
        sl_row_clear(&row);
    }
    ck_assert_msg(rc == SL_END_OF_EPOCH || rc == SL_END_OF_DATA, "%s", sl_iterator_last_error(it));
    *end = rc;
    return n;
}

START_TEST(test_shuffle_node)
{
    /* Labels identify rows here: a TypeCast to int64 of the index is not
     * available, so use the image's first two pixels as an identity. */
    sl_dataset *ds = mnist(0);
    sl_iterator_options o;
    sl_iterator *it;
    sl_row row;
    int seen[N_TRAIN] = {0};
    int64_t first_epoch[N_TRAIN], second_epoch[N_TRAIN];
    int rc, same = 1;
    size_t n = 0;
    ck_assert_int_eq(sl_dataset_shuffle(ds, 64), SL_OK);
    sl_iterator_options_init(&o);
    o.num_epochs = 2;
    ck_assert_int_eq(sl_iterator_new(&it, ds, &o), SL_OK);
    for (int epoch = 0; epoch < 2; epoch++) {
        n = 0;
        while ((rc = sl_iterator_next(it, &row)) == SL_OK) {
            const uint8_t *px = sl_tensor_data(row.columns[0]);
            int64_t id = -1;
            /* find the source index whose pattern matches this image */
            for (uint32_t i = 0; i < N_TRAIN && id < 0; i++)
                if (tu_pixel(i, 0, 0) == px[0] &&
                    tu_pixel(i, 27, 27) == px[28 * 28 - 1] && tu_pixel(i, 5, 9) == px[5 * 28 + 9] &&
                    tu_label(i) == *(const uint32_t *)sl_tensor_data(row.columns[1]))
                    id = i;
            ck_assert_int_ge(id, 0);
            if (epoch == 0) {
                seen[id]++;
                first_epoch[n] = id;
            } else {
                second_epoch[n] = id;
            }
            n++;
            sl_row_clear(&row);
        }
        ck_assert_int_eq(rc, SL_END_OF_EPOCH);
        ck_assert_uint_eq(n, N_TRAIN);
    }
    ck_assert_int_eq(sl_iterator_next(it, &row), SL_END_OF_DATA);
    sl_iterator_free(it);
    for (int i = 0; i < N_TRAIN; i++)
        ck_assert_int_eq(seen[i], 1);
    for (int i = 0; i < N_TRAIN; i++)
        same &= first_epoch[i] == second_epoch[i];
    ck_assert_msg(!same, "the shuffle gave the same order in two epochs");
    {
        int in_order = 1;
        for (int i = 0; i < N_TRAIN; i++)
            in_order &= first_epoch[i] == i;
        ck_assert_msg(!in_order, "the shuffle did not move anything");
    }
    sl_dataset_free(ds);
}
END_TEST

START_TEST(test_batch_remainder)
{
    /* 300 rows in batches of 32: 9 full batches and one of 12 unless
     * dropped; the short batch has shape (12, ...). */
    for (int drop = 0; drop <= 1; drop++) {
        for (int workers = 1; workers <= 3; workers += 2) {
            sl_dataset *ds = mnist(0);
            sl_iterator *it;
            sl_row row;
            size_t batches = 0, rows = 0;
            int rc;
            ck_assert_int_eq(sl_dataset_batch(ds, 32, drop, workers), SL_OK);
            ck_assert_int_eq(tu_dataset_size(ds), drop ? 9 : 10);
            ck_assert_int_eq(sl_iterator_new(&it, ds, NULL), SL_OK);
            while ((rc = sl_iterator_next(it, &row)) == SL_OK) {
                int64_t n = sl_tensor_shape(row.columns[0])[0];
                const uint8_t *px = sl_tensor_data(row.columns[0]);
                const uint32_t *lab = sl_tensor_data(row.columns[1]);
                ck_assert_int_eq(sl_tensor_ndim(row.columns[0]), 4);
                ck_assert_int_eq(n, batches < 9 ? 32 : 12);
                for (int64_t b = 0; b < n; b++) {
                    uint32_t i = (uint32_t)(rows + (size_t)b);
                    ck_assert_uint_eq(px[(size_t)b * 784 + 28 * 2 + 3], tu_pixel(i, 2, 3));
                    ck_assert_uint_eq(lab[b], tu_label(i));
                }
                rows += (size_t)n;
                batches++;
                sl_row_clear(&row);
            }
            ck_assert_int_eq(rc, SL_END_OF_EPOCH);
            ck_assert_uint_eq(batches, drop ? 9 : 10);
            sl_iterator_free(it);
            sl_dataset_free(ds);
        }
    }
}
END_TEST

START_TEST(test_repeat_epochs)
{
    /* repeat(3) then take per epoch: the three passes form one epoch; two
     * iterator epochs give two ends of epoch, then the end of data. */
    sl_dataset *ds = mnist(0);
    sl_iterator_options o;
    sl_iterator *it;
    static uint32_t labels[3 * N_TRAIN + 1];
    int end;
    size_t n;
    ck_assert_int_eq(sl_dataset_repeat(ds, 3), SL_OK);
    ck_assert_int_eq(tu_dataset_size(ds), 3 * N_TRAIN);
    sl_iterator_options_init(&o);
    o.num_epochs = 2;
    ck_assert_int_eq(sl_iterator_new(&it, ds, &o), SL_OK);
    for (int epoch = 0; epoch < 2; epoch++) {
        n = epoch_labels(it, labels, 3 * N_TRAIN + 1, &end);
        ck_assert_int_eq(end, SL_END_OF_EPOCH);
        ck_assert_uint_eq(n, 3 * N_TRAIN);
        for (size_t i = 0; i < n; i++)
            ck_assert_uint_eq(labels[i], tu_label((uint32_t)(i % N_TRAIN)));
    }
    n = epoch_labels(it, labels, 3 * N_TRAIN + 1, &end);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(end, SL_END_OF_DATA);
    sl_iterator_free(it);
    sl_dataset_free(ds);
}
END_TEST

START_TEST(test_batch_then_repeat)
{
    /* batch below repeat flushes at each pass: batches never straddle
     * passes; 300 rows, batch 64 kept remainder -> 5 batches per pass. */
    sl_dataset *ds = mnist(0);
    sl_iterator *it;
    sl_row row;
    int64_t sizes[16];
    size_t n = 0;
    int rc;
    ck_assert_int_eq(sl_dataset_batch(ds, 64, 0, 1), SL_OK);
    ck_assert_int_eq(sl_dataset_repeat(ds, 2), SL_OK);
    ck_assert_int_eq(tu_dataset_size(ds), 10);
    ck_assert_int_eq(sl_iterator_new(&it, ds, NULL), SL_OK);
    while ((rc = sl_iterator_next(it, &row)) == SL_OK) {
        ck_assert_uint_lt(n, 16);
        sizes[n++] = sl_tensor_shape(row.columns[0])[0];
        sl_row_clear(&row);
    }
    ck_assert_int_eq(rc, SL_END_OF_EPOCH);
    ck_assert_uint_eq(n, 10);
    ck_assert_int_eq(sizes[4], 300 - 4 * 64);
    ck_assert_int_eq(sizes[9], 300 - 4 * 64);
    ck_assert_int_eq(sizes[5], 64);
    sl_iterator_free(it);
    sl_dataset_free(ds);
}
END_TEST

START_TEST(test_take_skip)
{
    sl_dataset *ds = mnist(0);
    sl_iterator_options o;
    sl_iterator *it;
    uint32_t labels[N_TRAIN];
    int end;
    size_t n;
    ck_assert_int_eq(sl_dataset_skip(ds, 7), SL_OK);
    ck_assert_int_eq(sl_dataset_take(ds, 20), SL_OK);
    ck_assert_int_eq(tu_dataset_size(ds), 20);
    sl_iterator_options_init(&o);
    o.num_epochs = 2;
    ck_assert_int_eq(sl_iterator_new(&it, ds, &o), SL_OK);
    for (int epoch = 0; epoch < 2; epoch++) {
        n = epoch_labels(it, labels, N_TRAIN, &end);
        ck_assert_int_eq(end, SL_END_OF_EPOCH);
        ck_assert_uint_eq(n, 20);
        ck_assert_uint_eq(labels[0], tu_label(7));
        ck_assert_uint_eq(labels[19], tu_label(26));
    }
    sl_iterator_free(it);
    sl_dataset_free(ds);
    /* skip past the end leaves nothing; take(-1) keeps everything */
    ds = mnist(0);
    ck_assert_int_eq(sl_dataset_take(ds, -1), SL_OK);
    ck_assert_int_eq(tu_dataset_size(ds), N_TRAIN);
    ck_assert_int_eq(sl_dataset_skip(ds, 1000), SL_OK);
    ck_assert_int_eq(tu_dataset_size(ds), 0);
    ck_assert_int_eq(sl_iterator_new(&it, ds, NULL), SL_OK);
    n = epoch_labels(it, labels, N_TRAIN, &end);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(end, SL_END_OF_EPOCH);
    sl_iterator_free(it);
    sl_dataset_free(ds);
}
END_TEST

START_TEST(test_endless_repeat)
{
    sl_dataset *ds = mnist(1);
    sl_iterator *it;
    sl_row row;
    ck_assert_int_eq(sl_dataset_batch(ds, 32, 1, 1), SL_OK);
    ck_assert_int_eq(sl_dataset_repeat(ds, -1), SL_OK);
    ck_assert_int_eq(tu_dataset_size(ds), SL_DATASET_SIZE_ENDLESS);
    ck_assert_int_eq(sl_iterator_new(&it, ds, NULL), SL_OK);
    /* far more batches than one pass holds, and never an end */
    for (int i = 0; i < 100; i++) {
        ck_assert_int_eq(sl_iterator_next(it, &row), SL_OK);
        sl_row_clear(&row);
    }
    sl_iterator_free(it);
    sl_dataset_free(ds);
}
END_TEST

START_TEST(test_column_rename)
{
    sl_dataset *ds = mnist(0);
    sl_op *rescale;
    ck_assert_int_eq(sl_op_rescale_new(&rescale, 2.0, 0.0, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &rescale, 1, "image", "pixels", 1), SL_OK);
    ck_assert_int_eq(sl_dataset_column_index(ds, "pixels"), 0);
    ck_assert_int_eq(sl_dataset_column_index(ds, "image"), -1);
    ck_assert_str_eq(sl_dataset_column_name(ds, 1), "label");
    /* renaming onto another existing column is refused */
    ck_assert_int_eq(sl_dataset_map(ds, &rescale, 1, "pixels", "label", 1), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds), "label"));
    sl_op_release(rescale);
    sl_dataset_free(ds);
}
END_TEST

START_TEST(test_random_ops_independent_of_workers)
{
    /* Random ops draw from (seed, epoch, index): same results with 1 or 3
     * workers, and different draws in the next epoch. */
    trace ref = {0};
    for (int workers = 1; workers <= 3; workers += 2) {
        sl_dataset *ds = mnist(0);
        sl_op *ops[2];
        trace t;
        ck_assert_int_eq(sl_op_random_crop_new(&ops[0], 24, 24, 2, NULL, 0), SL_OK);
        ck_assert_int_eq(sl_op_random_horizontal_flip_new(&ops[1], 0.5, NULL, 0), SL_OK);
        ck_assert_int_eq(sl_dataset_map(ds, ops, 2, "image", NULL, workers), SL_OK);
        sl_op_release(ops[0]);
        sl_op_release(ops[1]);
        t = run_trace(ds, 2);
        ck_assert_uint_eq(t.rows, 2 * N_TRAIN);
        if (workers == 1)
            ref = t;
        else
            ck_assert(t.hash == ref.hash);
        sl_dataset_free(ds);
    }
}
END_TEST


START_TEST(test_read_error_in_workers)
{
    /* The source thread only orders indices here; map workers read the
     * files. A file removed after the dataset was described must surface
     * as an error naming it, after the rows read before it. */
    char *dir = tu_path(tmpdir, "folder");
    char *gone;
    sl_image_folder_options o;
    sl_dataset *ds;
    sl_op *rescale;
    sl_iterator *it;
    sl_row row;
    int rc, rows = 0;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    ck_assert_int_eq(tu_make_image_folder(dir, 2, 5, 8, 8), 0);
    sl_image_folder_options_init(&o);
    o.dataset_dir = dir;
    o.sampler.shuffle = 0;
    ck_assert_int_eq(sl_dataset_image_folder(ds, &o), SL_OK);
    ck_assert_int_eq(sl_op_rescale_new(&rescale, 1.0, 0.0, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &rescale, 1, "image", NULL, 2), SL_OK);
    sl_op_release(rescale);
    ck_assert_int_eq(sl_dataset_shuffle(ds, 2), SL_OK); /* moves ahead of the map */
    gone = tu_path(dir, "class_1/img_4.jpg");
    ck_assert_int_eq(remove(gone), 0);
    ck_assert_int_eq(sl_iterator_new(&it, ds, NULL), SL_OK);
    while ((rc = sl_iterator_next(it, &row)) == SL_OK) {
        ck_assert_int_eq(sl_tensor_dtype(row.columns[0]), SL_FLOAT32);
        rows++;
        sl_row_clear(&row);
    }
    ck_assert_int_eq(rc, SL_EIO);
    ck_assert_msg(strstr(sl_iterator_last_error(it), "class_1/img_4.jpg") != NULL, "%s",
                  sl_iterator_last_error(it));
    ck_assert_int_le(rows, 9);
    ck_assert_int_eq(sl_iterator_next(it, &row), SL_EIO);
    sl_iterator_free(it);
    sl_dataset_free(ds);
    free(gone);
    free(dir);
}
END_TEST


START_TEST(test_unread_rows_bound_chunks)
{
    /* Rows the source passes unread carry the size reading will bring (a
     * JPEG's file size): a chunk of them closes at the byte limit, not only
     * at the row limit, so workers never take dozens of big images at once. */
    sl_queue q;
    sl__out out;
    sl__chunk *c;
    ck_assert_int_eq(sl__queue_init(&q, 8, NULL), SL_OK);
    memset(&out, 0, sizeof out);
    out.queue = &q;
    out.chunk_rows = 64;
    out.chunk_bytes = 1u << 20;
    for (int i = 0; i < 6; i++) {
        sl__row row;
        memset(&row, 0, sizeof row);
        row.index = i;
        row.unread_bytes = 400u << 10;
        ck_assert_int_eq(sl__out_row(&out, &row), SL_OK);
    }
    ck_assert_int_eq(sl__queue_pop(&q, (void **)&c, NULL, 0), SL_OK);
    ck_assert_uint_eq(c->nrows, 3); /* 3 x 400 KiB reaches 1 MiB */
    sl__chunk_free(c);
    ck_assert_int_eq(sl__queue_pop(&q, (void **)&c, NULL, 0), SL_OK);
    ck_assert_uint_eq(c->nrows, 3);
    sl__chunk_free(c);
    ck_assert_int_eq(sl__queue_pop(&q, (void **)&c, NULL, 0), SL_ETIMEDOUT);
    sl__out_discard(&out);
    sl__queue_destroy(&q);
}
END_TEST


START_TEST(test_dataset_copy)
{
    /* A copy starts with the original's nodes and goes its own way; both
     * read the same rows from one shared source. */
    sl_dataset *ds = mnist(0), *copy;
    trace a, b;
    ck_assert_int_eq(sl_dataset_take(ds, 40), SL_OK);
    ck_assert_int_eq(sl_dataset_copy(&copy, ds), SL_OK);
    ck_assert_int_eq(sl_dataset_batch(copy, 8, 1, 2), SL_OK);
    ck_assert_int_eq(tu_dataset_size(ds), 40);
    ck_assert_int_eq(tu_dataset_size(copy), 5);
    ck_assert_int_eq(sl_dataset_num_columns(copy), 2);
    a = run_trace(ds, 1);
    b = run_trace(copy, 1);
    ck_assert_uint_eq(a.rows, 40);
    ck_assert_uint_eq(b.rows, 5);
    sl_dataset_free(ds); /* the copy keeps the source */
    ck_assert(run_trace(copy, 1).hash == b.hash);
    sl_dataset_free(copy);
}
END_TEST

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

START_TEST(test_destroy_mid_epoch)
{
    /* Build, read a few rows (or none), destroy: 100 times over. Every
     * thread must wake and join; ASan/TSan builds check leaks and races.
     * Freeing must be quick: the median under 100 ms. */
    double took[100];
    for (int i = 0; i < 100; i++) {
        sl_dataset *ds = mnist(1);
        sl_iterator_options o;
        sl_iterator *it;
        sl_row row;
        double t0;
        add_lenet_ops(ds, 1 + i % 3, 1 + i % 2);
        ck_assert_int_eq(sl_dataset_repeat(ds, -1), SL_OK);
        sl_iterator_options_init(&o);
        o.queue_chunks = 1 + (size_t)(i % 4);
        o.chunk_rows = 1 + (size_t)(i % 17);
        ck_assert_int_eq(sl_iterator_new(&it, ds, &o), SL_OK);
        for (int k = 0; k < i % 5; k++) {
            ck_assert_int_eq(sl_iterator_next(it, &row), SL_OK);
            sl_row_clear(&row);
        }
        t0 = sl__now_ms();
        sl_iterator_free(it);
        took[i] = sl__now_ms() - t0;
        sl_dataset_free(ds);
    }
    qsort(took, 100, sizeof *took, compare_double);
    ck_assert_msg(took[50] < 100.0, "median destroy took %.1f ms", took[50]);
    ck_assert_msg(took[99] < 2000.0, "slowest destroy took %.1f ms", took[99]);
}
END_TEST

START_TEST(test_rows_outlive_iterator)
{
    /* Rows handed out stay valid after the iterator and dataset are gone. */
    sl_dataset *ds = mnist(0);
    sl_iterator *it;
    sl_row row;
    ck_assert_int_eq(sl_iterator_new(&it, ds, NULL), SL_OK);
    ck_assert_int_eq(sl_iterator_next(it, &row), SL_OK);
    sl_iterator_free(it);
    sl_dataset_free(ds);
    ck_assert_uint_eq(((const uint8_t *)sl_tensor_data(row.columns[0]))[29], tu_pixel(0, 1, 1));
    sl_row_clear(&row);
}
END_TEST

START_TEST(test_timeout_names_stage)
{
    /* An endless pipeline whose consumer asks with a 0 ms timeout may time
     * out; when it does, the message names a stage. */
    sl_dataset *ds = mnist(1);
    sl_iterator_options o;
    sl_iterator *it;
    sl_row row;
    int rc;
    add_lenet_ops(ds, 1, 1);
    sl_iterator_options_init(&o);
    o.timeout_ms = 0;
    ck_assert_int_eq(sl_iterator_new(&it, ds, &o), SL_OK);
    rc = sl_iterator_next(it, &row);
    if (rc == SL_ETIMEDOUT)
        ck_assert_ptr_nonnull(strstr(sl_iterator_last_error(it), "stage"));
    else
        ck_assert_int_eq(rc, SL_OK);
    sl_row_clear(&row);
    /* A timeout is not the end: later calls wait again and get rows. */
    for (double t0 = sl__now_ms(); rc == SL_ETIMEDOUT && sl__now_ms() - t0 < 20000.0;)
        rc = sl_iterator_next(it, &row);
    ck_assert_int_eq(rc, SL_OK);
    sl_row_clear(&row);
    sl_iterator_free(it);
    sl_dataset_free(ds);
}
END_TEST

START_TEST(test_mnist_lock_failures)
{
    /* The MNIST source's lock and condition variable: a failure to make
     * either is reported, naming the call, and leaves nothing behind. */
    static const fault_fn fns[] = {FAULT_MUTEX_INIT, FAULT_COND_INIT};
    for (size_t i = 0; i < 2; i++) {
        sl_mnist_options o;
        sl_dataset *ds;
        ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
        sl_mnist_options_init(&o);
        o.dataset_dir = tmpdir;
        fault_arm(fns[i], 0, EAGAIN);
        ck_assert_int_eq(sl_dataset_mnist(ds, &o), SL_ETHREAD);
        ck_assert(fault_disarm());
        ck_assert_msg(strstr(sl_dataset_last_error(ds), i ? "mnist: pthread_cond_init"
                                                          : "mnist: pthread_mutex_init"),
                      "%s", sl_dataset_last_error(ds));
        sl_dataset_free(ds);
    }
}
END_TEST

START_TEST(test_iterator_lock_failures)
{
    /* Fails each pthread init that making an iterator does, one at a time
     * (the k-th call of each function, until there is none left to fail):
     * sl_iterator_new must refuse with a message naming the stage and the
     * call, and clean up (ASan/LSan builds check that). */
    static const fault_fn fns[] = {FAULT_MUTEX_INIT, FAULT_COND_INIT, FAULT_CONDATTR_INIT,
                                   FAULT_CONDATTR_SETCLOCK};
    sl_dataset *ds = mnist(1);
    int failed = 0;
    add_lenet_ops(ds, 2, 1); /* source, map+batch: lazy source, a queue re-made */
    ck_assert_int_eq(sl_dataset_repeat(ds, 2), SL_OK); /* and a sequential stage */
    for (size_t f = 0; f < sizeof fns / sizeof fns[0]; f++) {
        for (int k = 0;; k++) {
            sl_iterator *it = NULL;
            int rc, fired;
            fault_arm(fns[f], k, k % 2 ? ENOMEM : EAGAIN);
            rc = sl_iterator_new(&it, ds, NULL);
            fired = fault_disarm();
            if (!fired) {
                ck_assert_int_eq(rc, SL_OK); /* every call of fns[f] was failed once */
                sl_iterator_free(it);
                break;
            }
            ck_assert_msg(rc == (k % 2 ? SL_ENOMEM : SL_ETHREAD),
                          "call %d of fault %zu: status %d (%s)", k, f, rc,
                          sl_dataset_last_error(ds));
            ck_assert_ptr_null(it);
            ck_assert_msg(strstr(sl_dataset_last_error(ds), "stage '") &&
                              strstr(sl_dataset_last_error(ds), "pthread_"),
                          "%s", sl_dataset_last_error(ds));
            failed++;
        }
    }
    ck_assert_int_ge(failed, 6); /* 3+ queues (a lock and 2 conds each) and the source's lock */
    sl_dataset_free(ds);
}
END_TEST

START_TEST(test_describe_and_sizes)
{
    sl_dataset *ds = mnist(1);
    char buf[1024];
    int64_t size;
    add_lenet_ops(ds, 2, 1);
    ck_assert_int_eq(sl_dataset_describe(ds, buf, sizeof buf), SL_OK);
    ck_assert_ptr_nonnull(strstr(buf, "mnist("));
    ck_assert_ptr_nonnull(strstr(buf, "resize"));
    ck_assert_ptr_nonnull(strstr(buf, "shuffle(buffer_size=100)"));
    ck_assert_ptr_nonnull(strstr(buf, "batch(32"));
    ck_assert_int_eq(tu_dataset_size(ds), N_TRAIN / 32);
    ck_assert_int_eq(sl_dataset_repeat(ds, 4), SL_OK);
    ck_assert_int_eq(tu_dataset_size(ds), 4 * (N_TRAIN / 32));
    ck_assert_int_eq(sl_dataset_take(ds, 5), SL_OK);
    ck_assert_int_eq(tu_dataset_size(ds), 5);
    sl_dataset_free(ds);
    /* no source yet */
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    ck_assert_int_eq(sl_dataset_get_dataset_size(ds, &size), SL_ESTATE);
    ck_assert_int_eq(size, 0);
    ck_assert_int_eq(sl_dataset_batch(ds, 2, 0, 1), SL_ESTATE);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds), "no source"));
    sl_dataset_free(ds);
}
END_TEST

/* sl_dataset_new(&ds): SL_OK and an empty dataset in *out, whatever *out
 * held before (its SL_ENOMEM path is in check_threads, which can fail an
 * allocation). */
START_TEST(test_dataset_new_sets_out)
{
    sl_dataset *ds = (sl_dataset *)&ds; /* not NULL, not a dataset */
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    ck_assert_ptr_nonnull(ds);
    ck_assert_ptr_ne(ds, (sl_dataset *)&ds);
    ck_assert_uint_eq(sl_dataset_num_columns(ds), 0);
    ck_assert_str_eq(sl_dataset_last_error(ds), "");
    sl_dataset_free(ds);
}
END_TEST

START_TEST(test_describe_truncates)
{
    /* Into a buffer of any size, describe writes a NUL-terminated prefix of
     * the full text and never past the end (each buffer is its own heap
     * block, so ASan sees an overrun). A summary longer than the buffer
     * must not lead to a pointer beyond it either (dataset.c). */
    sl_dataset *ds = mnist(1);
    char full[1024];
    size_t n;
    add_lenet_ops(ds, 2, 1);
    ck_assert_int_eq(sl_dataset_describe(ds, full, sizeof full), SL_OK);
    n = strlen(full);
    for (size_t len = 1; len <= n + 1; len++) {
        char *buf = malloc(len);
        ck_assert_ptr_nonnull(buf);
        ck_assert_int_eq(sl_dataset_describe(ds, buf, len), SL_OK);
        ck_assert_uint_lt(strlen(buf), len);
        ck_assert_int_eq(strncmp(buf, full, strlen(buf)), 0);
        free(buf);
    }
    sl_dataset_free(ds);
}
END_TEST

START_TEST(test_take_after_endless_repeat)
{
    /* repeat(-1) then take(5): the size says 5 rows per epoch, so each epoch
     * ends after 5 rows (continuing the endless stream), and the iterator
     * ends after num_epochs of them instead of waiting forever. */
    sl_dataset *ds = mnist(0);
    sl_iterator_options o;
    sl_iterator *it;
    uint32_t labels[N_TRAIN];
    int end;
    size_t n;
    ck_assert_int_eq(sl_dataset_repeat(ds, -1), SL_OK);
    ck_assert_int_eq(sl_dataset_take(ds, 5), SL_OK);
    ck_assert_int_eq(tu_dataset_size(ds), 5);
    sl_iterator_options_init(&o);
    o.num_epochs = 2;
    o.timeout_ms = 5000; /* a failure, not a hang */
    ck_assert_int_eq(sl_iterator_new(&it, ds, &o), SL_OK);
    for (int epoch = 0; epoch < 2; epoch++) {
        n = epoch_labels(it, labels, N_TRAIN, &end);
        ck_assert_int_eq(end, SL_END_OF_EPOCH);
        ck_assert_uint_eq(n, 5);
        for (size_t i = 0; i < n; i++)
            ck_assert_uint_eq(labels[i], tu_label((uint32_t)(5 * (size_t)epoch + i)));
    }
    n = epoch_labels(it, labels, N_TRAIN, &end);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(end, SL_END_OF_DATA);
    sl_iterator_free(it);
    sl_dataset_free(ds);
}
END_TEST

START_TEST(test_huge_chunk_rows)
{
    /* An absurd chunk size must not overflow the chunk's allocation: it is
     * refused or reported, never a crash. */
    size_t sizes[] = {(size_t)1 << 61, SIZE_MAX / 2, SIZE_MAX};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        sl_dataset *ds = mnist(0);
        sl_iterator_options o;
        sl_iterator *it;
        sl_row row;
        int rc;
        sl_iterator_options_init(&o);
        o.chunk_rows = sizes[k];
        o.timeout_ms = 5000;
        rc = sl_iterator_new(&it, ds, &o);
        if (rc == SL_OK) {
            rc = sl_iterator_next(it, &row);
            ck_assert_msg(rc < 0, "chunk_rows %zu gave %d", sizes[k], rc);
            ck_assert_int_ne(rc, SL_ETIMEDOUT);
            sl_iterator_free(it);
        }
        sl_dataset_free(ds);
    }
}
END_TEST

START_TEST(test_shared_rows_not_writable)
{
    /* tensor.h: data is writable when sl_tensor_writable() says so. A row
     * that shares its data with the source (MNIST rows are views of the
     * loaded file) must not look writable, or writing to it changes what
     * later epochs and other iterators read. */
    sl_dataset *ds = mnist(0);
    sl_iterator_options o;
    sl_iterator *it;
    sl_row row;
    uint8_t *px;
    sl_iterator_options_init(&o);
    o.num_epochs = 2;
    ck_assert_int_eq(sl_iterator_new(&it, ds, &o), SL_OK);
    ck_assert_int_eq(sl_iterator_next(it, &row), SL_OK);
    px = sl_tensor_data(row.columns[0]);
    ck_assert_uint_eq(px[0], tu_pixel(0, 0, 0));
    ck_assert_int_eq(sl_tensor_refcount(row.columns[0]), 1);
    ck_assert(!sl_tensor_writable(row.columns[0]));
    if (sl_tensor_writable(row.columns[0]))
        px[0] = (uint8_t)~px[0]; /* what the header would allow */
    sl_row_clear(&row);
    for (int i = 1; i < N_TRAIN; i++) {
        ck_assert_int_eq(sl_iterator_next(it, &row), SL_OK);
        sl_row_clear(&row);
    }
    ck_assert_int_eq(sl_iterator_next(it, &row), SL_END_OF_EPOCH);
    ck_assert_int_eq(sl_iterator_next(it, &row), SL_OK);
    ck_assert_uint_eq(((const uint8_t *)sl_tensor_data(row.columns[0]))[0], tu_pixel(0, 0, 0));
    sl_row_clear(&row);
    sl_iterator_free(it);
    sl_dataset_free(ds);
}
END_TEST

typedef struct free_job {
    sl_iterator *it;
    atomic_int done;
    double took_ms;
} free_job;

static void *free_thread(void *arg)
{
    free_job *job = arg;
    double t0 = sl__now_ms();
    sl_iterator_free(job->it);
    job->took_ms = sl__now_ms() - t0;
    atomic_store(&job->done, 1);
    return NULL;
}

/* Holds up the load of the MNIST pixels: replaces the train images file
 * with a FIFO and starts iterator *a on ds, whose source thread then blocks
 * reading it. Returns the FIFO's write end (non-blocking) once *a has the
 * FIFO open; *bytes and *len are the file's content, for feed_load. */
static int hold_load(sl_dataset *ds, sl_iterator **a, void **bytes, size_t *len)
{
    char *images = tu_path(tmpdir, "train-images-idx3-ubyte.gz");
    int fd = -1;
    ck_assert_int_eq(tu_read_file(images, bytes, len), 0);
    ck_assert_int_eq(unlink(images), 0);
    ck_assert_int_eq(mkfifo(images, 0600), 0);
    ck_assert_int_eq(sl_iterator_new(a, ds, NULL), SL_OK);
    /* A's source thread has the FIFO open once a writer can open it. */
    for (int i = 0; i < 5000 && fd < 0; i++) {
        fd = open(images, O_WRONLY | O_NONBLOCK);
        if (fd < 0) {
            struct timespec ts = {0, 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    ck_assert_int_ge(fd, 0);
    free(images);
    return fd;
}

/* Lets the held load go on: writes len bytes into the FIFO and closes it. */
static void feed_load(int fd, const void *bytes, size_t len)
{
    size_t off = 0;
    ck_assert_int_eq(fcntl(fd, F_SETFL, 0), 0);
    while (off < len) {
        ssize_t w = write(fd, (const char *)bytes + off, len - off);
        ck_assert_int_gt(w, 0);
        off += (size_t)w;
    }
    close(fd);
}

/* Gives an iterator time to reach the load another one holds (there is
 * nothing to wait on from outside). */
static void let_reach_load(void)
{
    struct timespec ts = {0, 100000000L};
    nanosleep(&ts, NULL);
}

START_TEST(test_free_while_other_iterator_loads)
{
    /* Two iterators of one dataset: A loads the MNIST pixels (held up here
     * by a FIFO in place of the images file), B waits for that load. Freeing
     * B must not wait for A's load to finish. */
    sl_dataset *ds = mnist(0);
    sl_iterator *a, *b;
    free_job job = {0};
    pthread_t th;
    void *bytes;
    size_t len;
    int fd;
    sl_row row;
    fd = hold_load(ds, &a, &bytes, &len);
    ck_assert_int_eq(sl_iterator_new(&b, ds, NULL), SL_OK);
    let_reach_load();
    job.it = b;
    ck_assert_int_eq(pthread_create(&th, NULL, free_thread, &job), 0);
    for (int i = 0; i < 1000 && !atomic_load(&job.done); i++) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    /* Now let A's load finish (whether or not B is gone). */
    feed_load(fd, bytes, len);
    pthread_join(th, NULL);
    ck_assert_msg(job.took_ms < 100.0, "freeing B took %.1f ms", job.took_ms);
    /* A read the pixels through the FIFO and works. */
    ck_assert_msg(sl_iterator_next(a, &row) == SL_OK, "%s", sl_iterator_last_error(a));
    ck_assert_uint_eq(((const uint8_t *)sl_tensor_data(row.columns[0]))[30], tu_pixel(0, 1, 2));
    sl_row_clear(&row);
    sl_iterator_free(a);
    sl_dataset_free(ds);
    free(bytes);
}
END_TEST

START_TEST(test_waiter_shares_the_load)
{
    /* A loads the pixels (held up by a FIFO) while B, on the same dataset,
     * waits for that load: once it ends, both hand out the same rows. */
    sl_dataset *ds = mnist(0);
    sl_iterator *a, *b;
    sl_row ra, rb;
    void *bytes;
    size_t len;
    int fd = hold_load(ds, &a, &bytes, &len);
    ck_assert_int_eq(sl_iterator_new(&b, ds, NULL), SL_OK);
    let_reach_load();
    feed_load(fd, bytes, len);
    for (uint32_t i = 0; i < N_TRAIN; i++) {
        ck_assert_msg(sl_iterator_next(a, &ra) == SL_OK, "%s", sl_iterator_last_error(a));
        ck_assert_msg(sl_iterator_next(b, &rb) == SL_OK, "%s", sl_iterator_last_error(b));
        ck_assert_mem_eq(sl_tensor_data(ra.columns[0]), sl_tensor_data(rb.columns[0]),
                         sl_tensor_nbytes(ra.columns[0]));
        ck_assert_uint_eq(*(const uint32_t *)sl_tensor_data(rb.columns[1]), tu_label(i));
        ck_assert_uint_eq(((const uint8_t *)sl_tensor_data(rb.columns[0]))[30], tu_pixel(i, 1, 2));
        sl_row_clear(&ra);
        sl_row_clear(&rb);
    }
    ck_assert_int_eq(sl_iterator_next(a, &ra), SL_END_OF_EPOCH);
    ck_assert_int_eq(sl_iterator_next(b, &rb), SL_END_OF_EPOCH);
    sl_iterator_free(a);
    sl_iterator_free(b);
    sl_dataset_free(ds);
    free(bytes);
}
END_TEST

START_TEST(test_waiter_gets_the_load_error)
{
    /* A's load fails (the images file ends early); B, which was waiting for
     * that load, gets the same error instead of loading again by itself
     * (which here would block on the FIFO for good). */
    char *images = tu_path(tmpdir, "train-images-idx3-ubyte.gz");
    sl_dataset *ds = mnist(0);
    sl_iterator_options o;
    sl_iterator *a, *b;
    sl_row row;
    void *bytes;
    size_t len;
    int fd = hold_load(ds, &a, &bytes, &len), rc_a, rc_b;
    sl_iterator_options_init(&o);
    o.timeout_ms = 10000; /* a failure, not a hang */
    ck_assert_int_eq(sl_iterator_new(&b, ds, &o), SL_OK);
    let_reach_load();
    feed_load(fd, bytes, len / 2);
    rc_a = sl_iterator_next(a, &row);
    rc_b = sl_iterator_next(b, &row);
    /* Should B have loaded again after all, it is blocked opening the
     * FIFO: a writer that comes and goes lets it fail, so it can be freed. */
    fd = open(images, O_WRONLY | O_NONBLOCK);
    if (fd >= 0)
        close(fd);
    ck_assert_msg(rc_a < 0 && rc_a != SL_ETIMEDOUT, "A: %s", sl_iterator_last_error(a));
    ck_assert_msg(rc_b == rc_a, "B: %d %s", rc_b, sl_iterator_last_error(b));
    ck_assert_str_eq(sl_iterator_last_error(b), sl_iterator_last_error(a));
    ck_assert_ptr_nonnull(strstr(sl_iterator_last_error(b), "train-images-idx3-ubyte"));
    sl_iterator_free(a);
    sl_iterator_free(b);
    sl_dataset_free(ds);
    free(bytes);
    free(images);
}
END_TEST

/* --- a test op that paces or holds rows ----------------------------------- */

/* Replaces a column with the time (sl__now_ms(), float64 scalar) at which the
 * op let the row go: after delay_ms, and not while the gate is shut. The
 * consumer can then tell how long a finished row waited for it, and a test
 * can stall a pipeline until it opens the gate. */
typedef struct gate {
    pthread_mutex_t lock;
    pthread_cond_t changed; /* shut went to 0, or a row arrived */
    int shut;
    int arrived;            /* rows that reached the op */
    long delay_ms;
} gate;

typedef struct gate_op {
    sl_op base;
    gate *gate;
} gate_op;

static int gate_infer(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                      sl__error *err)
{
    (void)op;
    (void)in;
    (void)err;
    memset(out, 0, sizeof *out);
    out->dtype = SL_FLOAT64;
    return SL_OK;
}

static int gate_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    gate *g = ((const gate_op *)op)->gate;
    int rc;
    sl_tensor_release(in);
    *out = NULL;
    if (g->delay_ms > 0) {
        struct timespec ts = {g->delay_ms / 1000, (g->delay_ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0) {
        }
    }
    pthread_mutex_lock(&g->lock);
    g->arrived++;
    pthread_cond_broadcast(&g->changed);
    while (g->shut)
        pthread_cond_wait(&g->changed, &g->lock);
    pthread_mutex_unlock(&g->lock);
    rc = sl__tensor_alloc(out, ctx->pool, SL_FLOAT64, 0, NULL);
    if (rc != SL_OK)
        return sl__errf(ctx->err, rc, "gate: out of memory");
    *(double *)(*out)->data = sl__now_ms();
    return SL_OK;
}

static const sl_op_iface gate_iface = {.name = "gate", .infer = gate_infer, .run = gate_run};

static void gate_init(gate *g, long delay_ms, int shut)
{
    pthread_condattr_t attr;
    memset(g, 0, sizeof *g);
    ck_assert_int_eq(pthread_mutex_init(&g->lock, NULL), 0);
    ck_assert_int_eq(pthread_condattr_init(&attr), 0);
    ck_assert_int_eq(pthread_condattr_setclock(&attr, CLOCK_MONOTONIC), 0); /* sl__deadline_ms */
    ck_assert_int_eq(pthread_cond_init(&g->changed, &attr), 0);
    pthread_condattr_destroy(&attr);
    g->delay_ms = delay_ms;
    g->shut = shut;
}

static void gate_open(gate *g)
{
    pthread_mutex_lock(&g->lock);
    g->shut = 0;
    pthread_cond_broadcast(&g->changed);
    pthread_mutex_unlock(&g->lock);
}

/* Waits (up to 10 s) until n rows have reached the gate. */
static int gate_wait_arrived(gate *g, int n)
{
    struct timespec until;
    int ok;
    sl__deadline_ms(&until, 10000);
    pthread_mutex_lock(&g->lock);
    while (g->arrived < n && pthread_cond_timedwait(&g->changed, &g->lock, &until) == 0) {
    }
    ok = g->arrived >= n;
    pthread_mutex_unlock(&g->lock);
    return ok;
}

static void gate_destroy(gate *g)
{
    pthread_cond_destroy(&g->changed);
    pthread_mutex_destroy(&g->lock);
}

/* An MNIST dataset of the first `rows` training samples in file order whose
 * label column goes through gate g (one map worker). */
static sl_dataset *gated_mnist(gate *g, int64_t rows)
{
    sl_mnist_options o;
    sl_dataset *ds;
    sl_op *op;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_mnist_options_init(&o);
    o.dataset_dir = tmpdir;
    o.usage = SL_MNIST_TRAIN;
    o.sampler.shuffle = 0;
    o.sampler.num_samples = rows;
    ck_assert_msg(sl_dataset_mnist(ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
    ck_assert_int_eq(sl__op_alloc(&op, sizeof(gate_op), &gate_iface, 0), SL_OK);
    ((gate_op *)op)->gate = g;
    ck_assert_int_eq(sl_dataset_map(ds, &op, 1, "label", NULL, 1), SL_OK);
    sl_op_release(op);
    return ds;
}

#define SCARCE_ROWS 20

START_TEST(test_scarce_rows_wake_consumer_once)
{
    /* A consumer faster than its pipeline (one row every 10 ms, one row a
     * chunk) sleeps for each row. It must be woken about once per row, when
     * the row is there, and get it at once: not woken every millisecond to
     * look (the old wake batching's timed slices: ~10 wake-ups a row), nor
     * left waiting for a batch of rows to gather (then rows wait tens of
     * ms). */
    gate g;
    sl_dataset *ds;
    sl_iterator_options o;
    sl_iterator_stats stats;
    sl_iterator *it;
    sl_row row;
    double waited[SCARCE_ROWS];
    gate_init(&g, 10, 0);
    ds = gated_mnist(&g, SCARCE_ROWS);
    sl_iterator_options_init(&o);
    o.chunk_rows = 1;
    ck_assert_int_eq(sl_iterator_new(&it, ds, &o), SL_OK);
    for (int i = 0; i < SCARCE_ROWS; i++) {
        ck_assert_msg(sl_iterator_next(it, &row) == SL_OK, "%s", sl_iterator_last_error(it));
        waited[i] = sl__now_ms() - *(const double *)sl_tensor_data(row.columns[1]);
        sl_row_clear(&row);
    }
    ck_assert_int_eq(sl_iterator_next(it, &row), SL_END_OF_EPOCH);
    sl_iterator_get_stats(it, &stats);
    sl_iterator_free(it);
    sl_dataset_free(ds);
    gate_destroy(&g);
    ck_assert_msg(stats.consumer_wakeups <= 2 * SCARCE_ROWS,
                  "the consumer was woken %llu times for %d rows",
                  (unsigned long long)stats.consumer_wakeups, SCARCE_ROWS);
    qsort(waited, SCARCE_ROWS, sizeof *waited, compare_double);
    ck_assert_msg(waited[SCARCE_ROWS / 2] < 5.0, "a finished row waited %.2f ms (median)",
                  waited[SCARCE_ROWS / 2]);
}
END_TEST

typedef struct next_job {
    sl_iterator *it;
    atomic_int done;
    int rc;
    double returned_ms;
} next_job;

static void *next_thread(void *arg)
{
    next_job *job = arg;
    sl_row row;
    job->rc = sl_iterator_next(job->it, &row);
    job->returned_ms = sl__now_ms();
    if (job->rc == SL_OK)
        sl_row_clear(&row);
    atomic_store(&job->done, 1);
    return NULL;
}

START_TEST(test_interrupt_wakes_blocked_next)
{
    /* A pipeline stalls (its map holds the first row at a shut gate) and a
     * thread is blocked in sl_iterator_next, with no timeout and with a
     * long one. sl_iterator_interrupt from this thread wakes it at once:
     * SL_ECANCELED, and a message saying so; later calls return the same.
     * Then the gate opens and sl_iterator_free joins every thread. */
    for (int timed = 0; timed < 2; timed++) {
        gate g;
        sl_dataset *ds;
        sl_iterator_options o;
        sl_iterator *it;
        next_job job = {0};
        pthread_t th;
        sl_row row;
        double at;
        gate_init(&g, 0, 1);
        ds = gated_mnist(&g, 10);
        sl_iterator_options_init(&o);
        o.chunk_rows = 1;
        o.timeout_ms = timed ? 60000 : -1;
        ck_assert_int_eq(sl_iterator_new(&it, ds, &o), SL_OK);
        job.it = it;
        ck_assert_int_eq(pthread_create(&th, NULL, next_thread, &job), 0);
        ck_assert(gate_wait_arrived(&g, 1));
        {
            struct timespec ts = {0, 50000000L}; /* the consumer falls asleep */
            nanosleep(&ts, NULL);
        }
        ck_assert_int_eq(atomic_load(&job.done), 0);
        at = sl__now_ms();
        sl_iterator_interrupt(it);
        pthread_join(th, NULL);
        ck_assert_int_eq(job.rc, SL_ECANCELED);
        ck_assert_msg(job.returned_ms - at < 500.0, "woken after %.1f ms", job.returned_ms - at);
        ck_assert_ptr_nonnull(strstr(sl_iterator_last_error(it), "interrupted"));
        gate_open(&g); /* rows now flow, but the iterator stays interrupted */
        ck_assert_int_eq(sl_iterator_next(it, &row), SL_ECANCELED);
        sl_iterator_interrupt(it); /* twice is harmless */
        ck_assert_int_eq(sl_iterator_next(it, &row), SL_ECANCELED);
        sl_iterator_free(it);
        sl_dataset_free(ds);
        gate_destroy(&g);
    }
}
END_TEST

START_TEST(test_interrupt_before_next)
{
    /* Interrupting an iterator whose rows are ready (some already taken
     * into its current chunk) makes the next call return SL_ECANCELED, not
     * a row; an iterator that already ended keeps its end. */
    sl_dataset *ds = mnist(0);
    sl_iterator *it;
    sl_row row;
    ck_assert_int_eq(sl_iterator_new(&it, ds, NULL), SL_OK);
    ck_assert_int_eq(sl_iterator_next(it, &row), SL_OK);
    sl_row_clear(&row);
    sl_iterator_interrupt(it);
    ck_assert_int_eq(sl_iterator_next(it, &row), SL_ECANCELED);
    ck_assert_ptr_null(row.columns[0]);
    sl_iterator_free(it);
    ck_assert_int_eq(sl_dataset_take(ds, 1), SL_OK);
    ck_assert_int_eq(sl_iterator_new(&it, ds, NULL), SL_OK);
    ck_assert_int_eq(sl_iterator_next(it, &row), SL_OK);
    sl_row_clear(&row);
    ck_assert_int_eq(sl_iterator_next(it, &row), SL_END_OF_EPOCH);
    ck_assert_int_eq(sl_iterator_next(it, &row), SL_END_OF_DATA);
    sl_iterator_interrupt(it);
    ck_assert_int_eq(sl_iterator_next(it, &row), SL_END_OF_DATA);
    sl_iterator_free(it);
    sl_dataset_free(ds);
}
END_TEST

static Suite *make_pipeline_suite(void)
{
    Suite *s = suite_create("pipeline");
    TCase *core = tu_tcase("core", 60);
    TCase *conc = tu_tcase("concurrency", 240);
    tcase_add_checked_fixture(core, setup, teardown);
    tcase_add_checked_fixture(conc, setup, teardown);
    tcase_add_test(core, test_map_keeps_order);
    tcase_add_test(core, test_lenet_batches);
    tcase_add_test(core, test_shuffle_node);
    tcase_add_test(core, test_batch_remainder);
    tcase_add_test(core, test_repeat_epochs);
    tcase_add_test(core, test_batch_then_repeat);
    tcase_add_test(core, test_take_skip);
    tcase_add_test(core, test_endless_repeat);
    tcase_add_test(core, test_column_rename);
    tcase_add_test(core, test_rows_outlive_iterator);
    tcase_add_test(core, test_timeout_names_stage);
    tcase_add_test(core, test_describe_and_sizes);
    tcase_add_test(core, test_dataset_new_sets_out);
    tcase_add_test(core, test_describe_truncates);
    tcase_add_test(core, test_mnist_lock_failures);
    tcase_add_test(core, test_iterator_lock_failures);
    tcase_add_test(core, test_read_error_in_workers);
    tcase_add_test(core, test_dataset_copy);
    tcase_add_test(core, test_unread_rows_bound_chunks);
    tcase_add_test(core, test_take_after_endless_repeat);
    tcase_add_test(core, test_huge_chunk_rows);
    tcase_add_test(core, test_shared_rows_not_writable);
    tcase_add_test(conc, test_determinism_across_workers);
    tcase_add_test(conc, test_random_ops_independent_of_workers);
    tcase_add_test(conc, test_destroy_mid_epoch);
    tcase_add_test(conc, test_free_while_other_iterator_loads);
    tcase_add_test(conc, test_waiter_shares_the_load);
    tcase_add_test(conc, test_waiter_gets_the_load_error);
    tcase_add_test(conc, test_scarce_rows_wake_consumer_once);
    tcase_add_test(conc, test_interrupt_wakes_blocked_next);
    tcase_add_test(core, test_interrupt_before_next);
    suite_add_tcase(s, core);
    suite_add_tcase(s, conc);
    return s;
}

int main(void)
{
    return tu_run_suite(make_pipeline_suite);
}
