/* check_combine.c: project, rename, concat and zip: the columns and rows
 * they give, in order, sizes, epochs (each restarting every part), a
 * shuffle after a concat, determinism across worker counts, errors naming
 * the column or the part, and freeing mid-epoch joining every part's
 * threads. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "sluice/sluice.h"
#include "testutil.h"

#define N_TRAIN 40
#define N_TEST 24

static char *tmpdir;

static void setup(void)
{
    tmpdir = tu_mnist_dir(N_TRAIN, N_TEST);
}

static void teardown(void)
{
    tu_mnist_dir_drop(tmpdir);
}

/* MNIST train (samples 0..39) or test (40..63), in file order. */
static sl_dataset *mnist(sl_mnist_usage usage)
{
    sl_mnist_options o;
    sl_dataset *ds;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_mnist_options_init(&o);
    o.dataset_dir = tmpdir;
    o.usage = usage;
    o.sampler.shuffle = 0;
    ck_assert_msg(sl_dataset_mnist(ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
    return ds;
}

/* The sample an MNIST image comes from: pixel (0, 0) is 31 i mod 256
 * (tu_pixel), and 223 is 31's inverse mod 256. */
static int sample_of(const sl_tensor *image)
{
    const uint8_t *px = sl_tensor_data(image);
    return (int)((px[0] * 223u) & 0xffu);
}

/* Reads epochs of ds (num_epochs) into samples[] (the sample of column
 * col of each row; -1 marks an end of epoch); returns how many entries.
 * Small chunks, so that several pass between the parts and the consumer;
 * a stall fails within 10 s. */
static size_t read_all(sl_dataset *ds, int64_t num_epochs, size_t col, int *samples, size_t max)
{
    size_t n = 0;
    sl_iterator_options o;
    sl_iterator *it;
    sl_row row;
    int rc;
    sl_iterator_options_init(&o);
    o.chunk_rows = 5;
    o.num_epochs = num_epochs;
    o.timeout_ms = 10000;
    ck_assert_msg(sl_iterator_new(&it, ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
    while ((rc = sl_iterator_next(it, &row)) != SL_END_OF_DATA) {
        ck_assert_msg(rc == SL_OK || rc == SL_END_OF_EPOCH, "%s", sl_iterator_last_error(it));
        ck_assert_uint_lt(n, max);
        samples[n++] = rc == SL_OK ? sample_of(row.columns[col]) : -1;
        sl_row_clear(&row);
    }
    sl_iterator_free(it);
    return n;
}

static sl_dataset *concat2(sl_dataset *a, sl_dataset *b)
{
    const sl_dataset *others[] = {b};
    ck_assert_msg(sl_dataset_concat(a, others, 1) == SL_OK, "%s", sl_dataset_last_error(a));
    sl_dataset_free(b);
    return a;
}

START_TEST(test_project_rename)
{
    const char *order[] = {"label", "image"}, *dup[] = {"label", "label"};
    const char *bad[] = {"nope"}, *from[] = {"image", "label"}, *to[] = {"label", "image"};
    const char *clash[] = {"image"};
    sl_dataset *ds = mnist(SL_MNIST_TRAIN);
    int samples[64];
    char desc[512];
    ck_assert_int_eq(sl_dataset_project(ds, order, 2), SL_OK);
    ck_assert_str_eq(sl_dataset_column_name(ds, 0), "label");
    ck_assert_str_eq(sl_dataset_column_name(ds, 1), "image");
    /* the image now comes second, in every row */
    ck_assert_uint_eq(read_all(ds, 1, 1, samples, 64), N_TRAIN + 1);
    for (int i = 0; i < N_TRAIN; i++)
        ck_assert_int_eq(samples[i], i);
    ck_assert_int_eq(sl_dataset_project(ds, dup, 2), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds), "'label' is named twice"));
    ck_assert_int_eq(sl_dataset_project(ds, bad, 1), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds), "no column 'nope'"));
    ck_assert_int_eq(sl_dataset_rename(ds, bad, clash, 1), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds), "no column 'nope'"));
    ck_assert_int_eq(sl_dataset_rename(ds, order, clash, 1), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds), "two columns would be named 'image'"));
    /* a swap is fine; nothing runs, the image stays in column 1 */
    ck_assert_int_eq(sl_dataset_rename(ds, from, to, 2), SL_OK);
    ck_assert_str_eq(sl_dataset_column_name(ds, 1), "label");
    ck_assert_int_eq(tu_dataset_size(ds), N_TRAIN);
    ck_assert_uint_eq(read_all(ds, 1, 1, samples, 64), N_TRAIN + 1);
    ck_assert_int_eq(samples[N_TRAIN - 1], N_TRAIN - 1);
    ck_assert_int_eq(sl_dataset_describe(ds, desc, sizeof desc), SL_OK);
    ck_assert_msg(strstr(desc, "\nproject(label, image)\nrename to (image, label)"), "%s", desc);
    /* a project keeping one column, then a batch over it */
    ck_assert_int_eq(sl_dataset_project(ds, to, 1), SL_OK);
    ck_assert_int_eq(sl_dataset_batch(ds, 8, 1, 2), SL_OK);
    ck_assert_uint_eq(sl_dataset_num_columns(ds), 1);
    ck_assert_uint_eq(read_all(ds, 1, 0, samples, 64), N_TRAIN / 8 + 1);
    ck_assert_int_eq(samples[1], 8); /* the first image of the second batch */
    sl_dataset_free(ds);
}
END_TEST

START_TEST(test_bad_samples_refusals)
{
    /* A stand-in would skip the project, and a combined dataset's rows
     * have no index to stand in for: both refused, saying what to do. */
    const char *order[] = {"label", "image"};
    sl_dataset *ds = mnist(SL_MNIST_TRAIN), *other = mnist(SL_MNIST_TEST);
    const sl_dataset *others[] = {other};
    sl_error_samples_options bad;
    sl_iterator *it;
    sl_op *cast;
    sl_error_samples_options_init(&bad);
    bad.mode = SL_ERROR_SAMPLES_SKIP;
    ck_assert_int_eq(sl_op_type_cast_new(&cast, SL_FLOAT32, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_dataset_project(ds, order, 2), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &cast, 1, "image", NULL, 2), SL_OK);
    sl_op_release(cast);
    ck_assert_int_eq(sl_dataset_set_error_samples(ds, &bad), SL_OK);
    ck_assert_int_eq(sl_iterator_new(&it, ds, NULL), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds), "put the project after the maps"));
    ck_assert_int_eq(sl_dataset_set_error_samples(other, &bad), SL_OK);
    ck_assert_int_eq(sl_dataset_concat(other, others, 1), SL_OK);
    ck_assert_int_eq(sl_dataset_set_error_samples(other, &bad), SL_OK);
    ck_assert_int_eq(sl_iterator_new(&it, other, NULL), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(other), "set_error_samples on them"));
    sl_dataset_free(ds);
    sl_dataset_free(other);
}
END_TEST

START_TEST(test_concat_order_sizes_epochs)
{
    sl_dataset *ds = concat2(mnist(SL_MNIST_TRAIN), mnist(SL_MNIST_TEST));
    int samples[200];
    size_t n;
    char desc[512];
    ck_assert_int_eq(tu_dataset_size(ds), N_TRAIN + N_TEST);
    ck_assert_str_eq(sl_dataset_source_kind(ds), "concat");
    ck_assert_int_eq(sl_dataset_describe(ds, desc, sizeof desc), SL_OK);
    ck_assert_msg(strncmp(desc, "concat(64 rows: mnist(", 22) == 0, "%s", desc);
    /* two epochs, each the train rows then the test rows, in order */
    n = read_all(ds, 2, 0, samples, 200);
    ck_assert_uint_eq(n, 2 * (N_TRAIN + N_TEST + 1));
    for (int e = 0; e < 2; e++) {
        for (int i = 0; i < N_TRAIN + N_TEST; i++)
            ck_assert_int_eq(samples[e * (N_TRAIN + N_TEST + 1) + i], i);
        ck_assert_int_eq(samples[e * (N_TRAIN + N_TEST + 1) + N_TRAIN + N_TEST], -1);
    }
    sl_dataset_free(ds);
}
END_TEST

START_TEST(test_concat_of_pipelines)
{
    /* Whole pipelines as parts: each batches its own rows (5 + 3 batches),
     * then the concat repeats twice as one epoch. */
    sl_dataset *a = mnist(SL_MNIST_TRAIN), *b = mnist(SL_MNIST_TEST), *c = mnist(SL_MNIST_TEST);
    const sl_dataset *others[] = {b, c};
    int samples[64];
    sl_op *cast;
    ck_assert_int_eq(sl_op_type_cast_new(&cast, SL_INT32, NULL, 0), SL_OK);
    for (int k = 0; k < 3; k++) {
        sl_dataset *part = k == 0 ? a : k == 1 ? b : c;
        ck_assert_int_eq(sl_dataset_map(part, &cast, 1, "label", NULL, 1 + k), SL_OK);
        ck_assert_int_eq(sl_dataset_batch(part, 8, 0, 1), SL_OK);
    }
    ck_assert_int_eq(sl_dataset_concat(a, others, 2), SL_OK);
    ck_assert_int_eq(sl_dataset_repeat(a, 2), SL_OK);
    ck_assert_int_eq(tu_dataset_size(a), 2 * (5 + 3 + 3));
    ck_assert_uint_eq(read_all(a, 1, 0, samples, 64), 2 * 11 + 1);
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < 5; i++)
            ck_assert_int_eq(samples[r * 11 + i], 8 * i);
        for (int i = 0; i < 6; i++)
            ck_assert_int_eq(samples[r * 11 + 5 + i], N_TRAIN + 8 * (i % 3));
    }
    sl_op_release(cast);
    sl_dataset_free(a);
    sl_dataset_free(b);
    sl_dataset_free(c);
}
END_TEST

START_TEST(test_concat_refusals)
{
    const char *image[] = {"image"}, *img[] = {"img"};
    sl_dataset *a = mnist(SL_MNIST_TRAIN), *b = mnist(SL_MNIST_TEST);
    const sl_dataset *others[] = {b};
    sl_op *cast;
    int64_t size;
    ck_assert_int_eq(sl_dataset_project(b, image, 1), SL_OK);
    ck_assert_int_eq(sl_dataset_concat(a, others, 1), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(a), "dataset 2 has 1 columns, the first 2"));
    ck_assert_str_eq(sl_dataset_source_kind(a), "mnist"); /* unchanged */
    sl_dataset_free(b);
    b = mnist(SL_MNIST_TEST);
    others[0] = b;
    ck_assert_int_eq(sl_dataset_rename(b, image, img, 1), SL_OK);
    ck_assert_int_eq(sl_dataset_concat(a, others, 1), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(a), "column 0 of dataset 2 is 'img'"));
    sl_dataset_free(b);
    b = mnist(SL_MNIST_TEST);
    others[0] = b;
    ck_assert_int_eq(sl_op_type_cast_new(&cast, SL_INT32, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_dataset_map(b, &cast, 1, "label", NULL, 1), SL_OK);
    ck_assert_int_eq(sl_dataset_concat(a, others, 1), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(a), "column 'label' of dataset 2 is int32"));
    sl_op_release(cast);
    sl_dataset_free(b);
    b = mnist(SL_MNIST_TEST);
    others[0] = b;
    ck_assert_int_eq(sl_dataset_repeat(b, -1), SL_OK);
    ck_assert_int_eq(sl_dataset_concat(a, others, 1), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(a), "dataset 2 has no end"));
    ck_assert_int_eq(sl_dataset_get_dataset_size(a, &size), SL_OK);
    ck_assert_int_eq(size, N_TRAIN);
    sl_dataset_free(a);
    sl_dataset_free(b);
}
END_TEST

/* concat(train, test) then a shuffle: epoch e's samples into out. */
static void shuffled_concat(int workers, uint64_t seed, int *out, size_t max)
{
    sl_dataset *a = mnist(SL_MNIST_TRAIN), *b = mnist(SL_MNIST_TEST);
    sl_op *cast;
    ck_assert_int_eq(sl_op_type_cast_new(&cast, SL_INT32, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_dataset_map(a, &cast, 1, "label", NULL, workers), SL_OK);
    ck_assert_int_eq(sl_dataset_map(b, &cast, 1, "label", NULL, workers), SL_OK);
    sl_op_release(cast);
    a = concat2(a, b);
    sl_dataset_set_seed(a, seed);
    ck_assert_int_eq(sl_dataset_shuffle(a, 16), SL_OK);
    ck_assert_uint_eq(read_all(a, 2, 0, out, max), 2 * (N_TRAIN + N_TEST + 1));
    sl_dataset_free(a);
}

START_TEST(test_shuffle_after_concat)
{
    int one[200], three[200], other[200];
    int seen[N_TRAIN + N_TEST];
    shuffled_concat(1, 7, one, 200);
    shuffled_concat(3, 7, three, 200);
    shuffled_concat(1, 8, other, 200);
    /* the same rows whatever the workers; a permutation of the joined
     * stream each epoch; a new order each epoch and seed */
    ck_assert_mem_eq(one, three, sizeof one[0] * 2 * (N_TRAIN + N_TEST + 1));
    for (int e = 0; e < 2; e++) {
        memset(seen, 0, sizeof seen);
        for (int i = 0; i < N_TRAIN + N_TEST; i++)
            seen[one[e * (N_TRAIN + N_TEST + 1) + i]]++;
        for (int i = 0; i < N_TRAIN + N_TEST; i++)
            ck_assert_int_eq(seen[i], 1);
    }
    ck_assert_int_ne(memcmp(one, one + N_TRAIN + N_TEST + 1, sizeof one[0] * (N_TRAIN + N_TEST)),
                     0);
    ck_assert_int_ne(memcmp(one, other, sizeof one[0] * (N_TRAIN + N_TEST)), 0);
    /* the joined stream is shuffled, not each part alone: some test
     * sample comes among the first half */
    {
        int mixed = 0;
        for (int i = 0; i < (N_TRAIN + N_TEST) / 2; i++)
            mixed |= one[i] >= N_TRAIN;
        ck_assert(mixed);
    }
}
END_TEST

START_TEST(test_zip)
{
    const char *from[] = {"image", "label"}, *to[] = {"image2", "label2"};
    sl_dataset *a = mnist(SL_MNIST_TRAIN), *b = mnist(SL_MNIST_TEST), *c = mnist(SL_MNIST_TEST);
    const sl_dataset *others[] = {b};
    int first[100], second[100];
    sl_iterator *it;
    sl_row row;
    /* duplicate names are refused, naming the column and suggesting rename */
    ck_assert_int_eq(sl_dataset_zip(c, others, 1), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(c), "column 'image' of dataset 2"));
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(c), "rename"));
    ck_assert_int_eq(sl_dataset_rename(b, from, to, 2), SL_OK);
    ck_assert_int_eq(sl_dataset_zip(a, others, 1), SL_OK);
    ck_assert_uint_eq(sl_dataset_num_columns(a), 4);
    ck_assert_str_eq(sl_dataset_column_name(a, 3), "label2");
    ck_assert_int_eq(tu_dataset_size(a), N_TEST); /* the shortest */
    /* row i: train sample i beside test sample 40 + i; each epoch restarts
     * both (the train part's 16 rows left are dropped) */
    ck_assert_uint_eq(read_all(a, 2, 0, first, 100), 2 * (N_TEST + 1));
    ck_assert_uint_eq(read_all(a, 2, 2, second, 100), 2 * (N_TEST + 1));
    for (int e = 0; e < 2; e++)
        for (int i = 0; i < N_TEST; i++) {
            ck_assert_int_eq(first[e * (N_TEST + 1) + i], i);
            ck_assert_int_eq(second[e * (N_TEST + 1) + i], N_TRAIN + i);
        }
    /* batch and take after a zip */
    ck_assert_int_eq(sl_dataset_batch(a, 5, 1, 1), SL_OK);
    ck_assert_int_eq(tu_dataset_size(a), N_TEST / 5);
    ck_assert_int_eq(sl_iterator_new(&it, a, NULL), SL_OK);
    ck_assert_int_eq(sl_iterator_next(it, &row), SL_OK);
    ck_assert_uint_eq(row.ncolumns, 4);
    ck_assert_int_eq(sl_tensor_shape(row.columns[2])[0], 5);
    sl_row_clear(&row);
    sl_iterator_free(it);
    sl_dataset_free(a);
    sl_dataset_free(b);
    sl_dataset_free(c);
}
END_TEST

START_TEST(test_start_epoch_and_threads)
{
    /* An iterator started at epoch 1, row 3 continues exactly there; the
     * parts' threads count in the iterator's. */
    sl_dataset *ds = concat2(mnist(SL_MNIST_TRAIN), mnist(SL_MNIST_TEST));
    sl_iterator_options o;
    sl_iterator_stats stats;
    sl_iterator *it;
    sl_row row;
    ck_assert_int_eq(sl_dataset_shuffle(ds, 8), SL_OK);
    {
        int all[200];
        read_all(ds, 2, 0, all, 200);
        sl_iterator_options_init(&o);
        o.num_epochs = 2;
        o.start_epoch = 1;
        o.start_rows = 3;
        ck_assert_msg(sl_iterator_new(&it, ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
        ck_assert_int_eq(sl_iterator_next(it, &row), SL_OK);
        ck_assert_int_eq(sample_of(row.columns[0]), all[N_TRAIN + N_TEST + 1 + 3]);
        sl_row_clear(&row);
    }
    sl_iterator_get_stats(it, &stats);
    ck_assert_int_ge(stats.threads, 3); /* its source thread, each part's */
    sl_iterator_free(it);
    sl_dataset_free(ds);
}
END_TEST

/* A custom op failing on one sample (*(const int *)user): "sample N is
 * bad on purpose". */
static int fail_on(void *user, const sl_tensor *in, sl_tensor **out, uint64_t seed, char *err,
                   size_t err_len)
{
    int bad = *(const int *)user;
    (void)seed;
    if (sample_of(in) == bad) {
        snprintf(err, err_len, "sample %d is bad on purpose", bad);
        return SL_EIO;
    }
    *out = sl_tensor_retain((sl_tensor *)in);
    return SL_OK;
}

/* A map failing on sample *bad onto ds's images, with `workers` workers. */
static void map_failing_on(sl_dataset *ds, const int *bad, int workers)
{
    sl_op_custom_options co;
    sl_op *op;
    sl_op_custom_options_init(&co);
    co.fn = fail_on;
    co.user = (void *)bad;
    ck_assert_int_eq(sl_op_custom_new(&op, &co, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &op, 1, "image", NULL, workers), SL_OK);
    sl_op_release(op);
}

START_TEST(test_part_error_reaches_consumer)
{
    sl_dataset *a = mnist(SL_MNIST_TRAIN), *b = mnist(SL_MNIST_TEST);
    sl_iterator *it;
    sl_row row;
    int rc, rows = 0;
    static const int bad = 45; /* the test part's sixth */
    map_failing_on(b, &bad, 2);
    a = concat2(a, b);
    ck_assert_int_eq(sl_dataset_batch(a, 4, 0, 1), SL_OK);
    ck_assert_int_eq(sl_iterator_new(&it, a, NULL), SL_OK);
    while ((rc = sl_iterator_next(it, &row)) == SL_OK) {
        rows++;
        sl_row_clear(&row);
    }
    /* the rows before the failing one may come; then the error, naming
     * the part and the op's message */
    ck_assert_int_le(rows, 11);
    ck_assert_int_eq(rc, SL_EIO);
    ck_assert_msg(strstr(sl_iterator_last_error(it), "concat: dataset 2 of 2 (mnist(") &&
                      strstr(sl_iterator_last_error(it), "sample 45 is bad on purpose"),
                  "%s", sl_iterator_last_error(it));
    ck_assert_int_eq(sl_iterator_next(it, &row), SL_EIO); /* sticky */
    sl_iterator_free(it);
    sl_dataset_free(a);
}
END_TEST

/* A zip's longer part is not read past the rows it hands out: each epoch
 * starts it again (the rows are those of test_zip), so a bad sample among
 * its unread rows fails nothing. Reading them to the end of its epoch
 * would fail the first epoch's end with sample 30's error. Shuffled with a
 * seed, its second epoch is its own epoch 1's order. */
START_TEST(test_zip_does_not_read_unused_rows)
{
    const char *from[] = {"image", "label"}, *to[] = {"image2", "label2"};
    sl_dataset *a = mnist(SL_MNIST_TRAIN), *b = mnist(SL_MNIST_TEST), *ref = mnist(SL_MNIST_TRAIN);
    const sl_dataset *others[] = {b};
    int got[100], want[100];
    static const int bad = 30; /* beyond the zip's 24 rows */
    map_failing_on(a, &bad, 1);
    ck_assert_int_eq(sl_dataset_rename(b, from, to, 2), SL_OK);
    ck_assert_int_eq(sl_dataset_zip(a, others, 1), SL_OK);
    ck_assert_uint_eq(read_all(a, 3, 0, got, 100), 3 * (N_TEST + 1));
    for (int e = 0; e < 3; e++)
        for (int i = 0; i < N_TEST; i++)
            ck_assert_int_eq(got[e * (N_TEST + 1) + i], i);
    sl_dataset_free(a);
    /* shuffled: each epoch of the zip takes the first 24 of that epoch of
     * the part alone */
    a = mnist(SL_MNIST_TRAIN);
    ck_assert_int_eq(sl_dataset_shuffle(a, 40), SL_OK);
    ck_assert_int_eq(sl_dataset_shuffle(ref, 40), SL_OK);
    ck_assert_int_eq(sl_dataset_zip(a, others, 1), SL_OK);
    ck_assert_uint_eq(read_all(a, 2, 0, got, 100), 2 * (N_TEST + 1));
    ck_assert_uint_eq(read_all(ref, 2, 0, want, 100), 2 * (N_TRAIN + 1));
    for (int e = 0; e < 2; e++)
        for (int i = 0; i < N_TEST; i++)
            ck_assert_int_eq(got[e * (N_TEST + 1) + i], want[e * (N_TRAIN + 1) + i]);
    sl_dataset_free(a);
    sl_dataset_free(b);
    sl_dataset_free(ref);
}
END_TEST

/* A longer part that repeats cannot be started at a later epoch: it is
 * read to its epoch's end instead, and the zip's epochs still come whole.
 * With three parts, the shortest in the middle, the parts before and after
 * it both start again. */
START_TEST(test_zip_restarts_each_longer_part)
{
    const char *from[] = {"image", "label"}, *to2[] = {"image2", "label2"},
                *to3[] = {"image3", "label3"};
    sl_dataset *a = mnist(SL_MNIST_TRAIN), *b = mnist(SL_MNIST_TEST), *c = mnist(SL_MNIST_TRAIN);
    const sl_dataset *others[] = {b, c};
    int got[100];
    ck_assert_int_eq(sl_dataset_rename(b, from, to2, 2), SL_OK);
    ck_assert_int_eq(sl_dataset_rename(c, from, to3, 2), SL_OK);
    ck_assert_int_eq(sl_dataset_repeat(a, 2), SL_OK); /* 80 rows an epoch */
    ck_assert_int_eq(sl_dataset_zip(a, others, 1), SL_OK);
    for (size_t col = 0; col < 4; col += 2) {
        ck_assert_uint_eq(read_all(a, 3, col, got, 100), 3 * (N_TEST + 1));
        for (int e = 0; e < 3; e++)
            for (int i = 0; i < N_TEST; i++)
                ck_assert_int_eq(got[e * (N_TEST + 1) + i], (col ? N_TRAIN : 0) + i);
    }
    sl_dataset_free(a);
    a = mnist(SL_MNIST_TRAIN);
    ck_assert_int_eq(sl_dataset_zip(a, others, 2), SL_OK);
    for (size_t col = 0; col < 6; col += 2) {
        ck_assert_uint_eq(read_all(a, 3, col, got, 100), 3 * (N_TEST + 1));
        for (int e = 0; e < 3; e++)
            for (int i = 0; i < N_TEST; i++)
                ck_assert_int_eq(got[e * (N_TEST + 1) + i], (col == 2 ? N_TRAIN : 0) + i);
    }
    sl_dataset_free(a);
    sl_dataset_free(b);
    sl_dataset_free(c);
}
END_TEST

START_TEST(test_free_mid_epoch)
{
    /* Build, read a few rows (or none), free: every part's threads must
     * wake and join (ASan and TSan check leaks and races), whatever part
     * the source thread is waiting for and however full the queues. */
    for (int i = 0; i < 30; i++) {
        const char *from[] = {"image", "label"}, *to[] = {"i2", "l2"};
        sl_dataset *a = mnist(SL_MNIST_TRAIN), *b = mnist(SL_MNIST_TEST);
        const sl_dataset *others[] = {b};
        sl_iterator_options o;
        sl_iterator *it;
        sl_row row;
        sl_op *cast;
        ck_assert_int_eq(sl_op_type_cast_new(&cast, SL_FLOAT32, NULL, 0), SL_OK);
        ck_assert_int_eq(sl_dataset_map(a, &cast, 1, "image", NULL, 1 + i % 3), SL_OK);
        ck_assert_int_eq(sl_dataset_map(b, &cast, 1, "image", NULL, 1 + i % 2), SL_OK);
        sl_op_release(cast);
        if (i % 2) {
            ck_assert_int_eq(sl_dataset_rename(b, from, to, 2), SL_OK);
            ck_assert_int_eq(sl_dataset_zip(a, others, 1), SL_OK);
        } else {
            ck_assert_int_eq(sl_dataset_concat(a, others, 1), SL_OK);
        }
        ck_assert_int_eq(sl_dataset_shuffle(a, 4), SL_OK);
        ck_assert_int_eq(sl_dataset_repeat(a, -1), SL_OK);
        sl_iterator_options_init(&o);
        o.queue_chunks = 1 + (size_t)(i % 3);
        o.chunk_rows = 1 + (size_t)(i % 7);
        ck_assert_int_eq(sl_iterator_new(&it, a, &o), SL_OK);
        for (int k = 0; k < (i * 13) % 90; k++) {
            ck_assert_int_eq(sl_iterator_next(it, &row), SL_OK);
            sl_row_clear(&row);
        }
        sl_iterator_free(it);
        sl_dataset_free(a);
        sl_dataset_free(b);
    }
}
END_TEST

static Suite *make_combine_suite(void)
{
    Suite *s = suite_create("combine");
    TCase *core = tu_tcase("core", 30);
    TCase *conc = tu_tcase("concurrency", 120);
    tcase_add_checked_fixture(core, setup, teardown);
    tcase_add_checked_fixture(conc, setup, teardown);
    tcase_add_test(core, test_project_rename);
    tcase_add_test(core, test_concat_order_sizes_epochs);
    tcase_add_test(core, test_bad_samples_refusals);
    tcase_add_test(core, test_concat_of_pipelines);
    tcase_add_test(core, test_concat_refusals);
    tcase_add_test(core, test_zip);
    tcase_add_test(core, test_zip_does_not_read_unused_rows);
    tcase_add_test(core, test_zip_restarts_each_longer_part);
    tcase_add_test(core, test_start_epoch_and_threads);
    tcase_add_test(core, test_part_error_reaches_consumer);
    tcase_add_test(conc, test_shuffle_after_concat);
    tcase_add_test(conc, test_free_mid_epoch);
    suite_add_tcase(s, core);
    suite_add_tcase(s, conc);
    return s;
}

int main(void)
{
    return tu_run_suite(make_combine_suite);
}
