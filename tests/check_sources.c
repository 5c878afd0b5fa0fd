/* check_sources.c: the sources and their sampler. MnistDataset (plain and
 * gzip files, usages, columns, values), the sampler (order, shuffle per
 * epoch and per seed, num_samples, sharding with wrap-around), dataset
 * sizes, ImageFolderDataset (class order and labels, class counts, raw
 * bytes, decoding against a reference libjpeg decode, extensions, class
 * indexing), and the real Fashion-MNIST when it is installed. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* mkdir */
#endif

#include <check.h>
#include <errno.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <jpeglib.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "sluice/sluice.h"
#include "core/tensor_impl.h"
#include "tests/testutil.h"

#define IT_TIMEOUT_MS 60000 /* a hang becomes SL_ETIMEDOUT, not a stuck test */
#define N_TRAIN 30
#define N_TEST 12
#define MAX_IDS 256 /* sample ids are recovered from pixel (0, 0): unique below 256 */
#define FASHION_DIR "/usr/share/datasets/fashion-mnist"

/* --- fixture ----------------------------------------------------------- */

static char *tmp; /* a fresh folder per test */

static void setup_tmp(void)
{
    tmp = tu_mkdtemp();
    ck_assert_msg(tmp != NULL, "tu_mkdtemp failed");
}

static void teardown_tmp(void)
{
    tu_rmtree(tmp);
    free(tmp);
    tmp = NULL;
}

/* --- MNIST helpers ------------------------------------------------------ */

/* tmp/name holding a generated MNIST folder (plain or gzip). */
static char *make_mnist(const char *name, uint32_t n_train, uint32_t n_test, int gz)
{
    char *dir = tu_path(tmp, name);
    ck_assert_ptr_nonnull(dir);
    ck_assert_int_eq(tu_make_mnist(dir, n_train, n_test, gz), 0);
    return dir;
}

static sl_dataset *mnist_ds(const char *dir, sl_mnist_usage usage, const sl_sampler_options *s)
{
    sl_dataset *ds;
    sl_mnist_options o;
    int rc;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_mnist_options_init(&o);
    o.dataset_dir = dir;
    o.usage = usage;
    if (s)
        o.sampler = *s;
    rc = sl_dataset_mnist(ds, &o);
    ck_assert_msg(rc == SL_OK, "sl_dataset_mnist: %s (%s)", sl_status_name(rc),
                  sl_dataset_last_error(ds));
    return ds;
}

static sl_sampler_options sampler(int shuffle, uint64_t seed)
{
    sl_sampler_options s;
    sl_sampler_options_init(&s);
    s.shuffle = shuffle;
    s.seed = seed;
    return s;
}

static sl_iterator *start(sl_dataset *ds, int64_t num_epochs)
{
    sl_iterator_options o;
    sl_iterator *it = NULL;
    int rc;
    sl_iterator_options_init(&o);
    o.num_epochs = num_epochs;
    o.timeout_ms = IT_TIMEOUT_MS;
    rc = sl_iterator_new(&it, ds, &o);
    ck_assert_msg(rc == SL_OK, "sl_iterator_new: %s (%s)", sl_status_name(rc),
                  sl_dataset_last_error(ds));
    return it;
}

/* Next event of it; fails the test on an error. */
static int next(sl_iterator *it, sl_row *row)
{
    int rc = sl_iterator_next(it, row);
    ck_assert_msg(rc >= 0, "sl_iterator_next: %s (%s)", sl_status_name(rc),
                  sl_iterator_last_error(it));
    return rc;
}

/* Checks an MNIST row against the generated pattern and returns its sample
 * id (position in the train-then-test numbering). */
static int64_t mnist_row_id(const sl_row *row)
{
    const sl_tensor *img, *lab;
    const int64_t *shape;
    const uint8_t *px;
    uint32_t id, label;
    ck_assert_uint_eq(row->ncolumns, 2);
    img = row->columns[0];
    lab = row->columns[1];
    ck_assert_int_eq(sl_tensor_dtype(img), SL_UINT8);
    ck_assert_int_eq(sl_tensor_ndim(img), 3);
    shape = sl_tensor_shape(img);
    ck_assert_int_eq(shape[0], 28);
    ck_assert_int_eq(shape[1], 28);
    ck_assert_int_eq(shape[2], 1);
    ck_assert_uint_eq(sl_tensor_nbytes(img), 28 * 28);
    ck_assert_int_eq(sl_tensor_dtype(lab), SL_UINT32);
    ck_assert_int_eq(sl_tensor_ndim(lab), 0);
    ck_assert_uint_eq(sl_tensor_numel(lab), 1);
    px = sl_tensor_data(img);
    /* tu_pixel(i, 0, 0) = 31 i mod 256, and 223 = 31^-1 mod 256. */
    id = (uint32_t)(px[0] * 223u) & 0xffu;
    for (uint32_t y = 0; y < 28; y++)
        for (uint32_t x = 0; x < 28; x++)
            ck_assert_msg(px[y * 28 + x] == tu_pixel(id, y, x),
                          "sample %u: pixel (%u, %u) is %u, expected %u", id, y, x,
                          px[y * 28 + x], tu_pixel(id, y, x));
    label = *(const uint32_t *)sl_tensor_data(lab);
    ck_assert_msg(label == tu_label(id), "sample %u: label %u, expected %u", id, label,
                  tu_label(id));
    return id;
}

typedef struct epoch_ids {
    int64_t n;
    int64_t ids[MAX_IDS];
} epoch_ids;

/* Runs ds for num_epochs epochs and records every row's sample id. */
static void run_ids(sl_dataset *ds, int64_t num_epochs, epoch_ids *ep)
{
    sl_iterator *it = start(ds, num_epochs);
    int64_t e = 0;
    memset(ep, 0, (size_t)num_epochs * sizeof *ep);
    for (;;) {
        sl_row row;
        int rc = next(it, &row);
        if (rc == SL_OK) {
            ck_assert_int_lt(e, num_epochs);
            ck_assert_int_lt(ep[e].n, MAX_IDS);
            ep[e].ids[ep[e].n++] = mnist_row_id(&row);
            sl_row_clear(&row);
        } else if (rc == SL_END_OF_EPOCH) {
            e++;
        } else {
            ck_assert_int_eq(rc, SL_END_OF_DATA);
            break;
        }
    }
    ck_assert_int_eq(e, num_epochs);
    sl_iterator_free(it);
}

static int is_permutation(const epoch_ids *ep, int64_t n)
{
    char seen[MAX_IDS] = {0};
    if (ep->n != n)
        return 0;
    for (int64_t i = 0; i < n; i++) {
        if (ep->ids[i] < 0 || ep->ids[i] >= n || seen[ep->ids[i]])
            return 0;
        seen[ep->ids[i]] = 1;
    }
    return 1;
}

static int same_ids(const epoch_ids *a, const epoch_ids *b)
{
    return a->n == b->n && memcmp(a->ids, b->ids, (size_t)a->n * sizeof a->ids[0]) == 0;
}

/* --- MNIST --------------------------------------------------------------- */

START_TEST(test_mnist_plain_and_gz_identical)
{
    char *plain = make_mnist("plain", N_TRAIN, N_TEST, 0);
    char *gz = make_mnist("gz", N_TRAIN, N_TEST, 1);
    static const sl_mnist_usage usages[] = {SL_MNIST_TRAIN, SL_MNIST_TEST, SL_MNIST_ALL};
    static const int64_t counts[] = {N_TRAIN, N_TEST, N_TRAIN + N_TEST};
    /* The gzip folder really holds only .gz files. */
    {
        char *p = tu_path(gz, "train-images-idx3-ubyte");
        struct stat st;
        ck_assert_int_ne(stat(p, &st), 0);
        free(p);
        p = tu_path(gz, "train-images-idx3-ubyte.gz");
        ck_assert_int_eq(stat(p, &st), 0);
        free(p);
    }
    for (size_t u = 0; u < 3; u++) {
        for (int shuffle = 0; shuffle <= 1; shuffle++) {
            sl_sampler_options s = sampler(shuffle, 77);
            sl_dataset *a = mnist_ds(plain, usages[u], &s), *b = mnist_ds(gz, usages[u], &s);
            sl_iterator *ia = start(a, 1), *ib = start(b, 1);
            int64_t rows = 0;
            ck_assert_int_eq(tu_dataset_size(a), counts[u]);
            ck_assert_int_eq(tu_dataset_size(b), counts[u]);
            for (;;) {
                sl_row ra, rb;
                int rca = next(ia, &ra), rcb = next(ib, &rb);
                ck_assert_int_eq(rca, rcb);
                if (rca != SL_OK) {
                    if (rca == SL_END_OF_DATA)
                        break;
                    continue;
                }
                ck_assert_int_eq(mnist_row_id(&ra), mnist_row_id(&rb));
                for (size_t c = 0; c < 2; c++) {
                    ck_assert_uint_eq(sl_tensor_nbytes(ra.columns[c]), sl_tensor_nbytes(rb.columns[c]));
                    ck_assert_mem_eq(sl_tensor_data(ra.columns[c]), sl_tensor_data(rb.columns[c]),
                                     sl_tensor_nbytes(ra.columns[c]));
                }
                rows++;
                sl_row_clear(&ra);
                sl_row_clear(&rb);
            }
            ck_assert_int_eq(rows, counts[u]);
            sl_iterator_free(ia);
            sl_iterator_free(ib);
            sl_dataset_free(a);
            sl_dataset_free(b);
        }
    }
    free(plain);
    free(gz);
}
END_TEST

START_TEST(test_mnist_usage_counts_and_values)
{
    char *dir = make_mnist("m", N_TRAIN, N_TEST, _i);
    static const sl_mnist_usage usages[] = {SL_MNIST_TRAIN, SL_MNIST_TEST, SL_MNIST_ALL};
    static const int64_t counts[] = {N_TRAIN, N_TEST, N_TRAIN + N_TEST};
    static const int64_t first[] = {0, N_TRAIN, 0};
    for (size_t u = 0; u < 3; u++) {
        sl_sampler_options s = sampler(0, 0);
        sl_dataset *ds = mnist_ds(dir, usages[u], &s);
        epoch_ids ep;
        ck_assert_str_eq(sl_dataset_source_kind(ds), "mnist");
        ck_assert_int_eq(sl_dataset_source_rows(ds), counts[u]);
        ck_assert_int_eq(tu_dataset_size(ds), counts[u]);
        ck_assert_uint_eq(sl_dataset_num_classes(ds), 0);
        run_ids(ds, 1, &ep);
        ck_assert_int_eq(ep.n, counts[u]);
        for (int64_t i = 0; i < ep.n; i++)
            ck_assert_msg(ep.ids[i] == first[u] + i, "usage %zu row %lld is sample %lld", u,
                          (long long)i, (long long)ep.ids[i]);
        sl_dataset_free(ds);
    }
    free(dir);
}
END_TEST

/* usage all, as MindSpore: the splits whose images file is there, so a
 * folder of the train files alone (as the seeds download it) is read; with
 * neither split the error names the train images; a split's images
 * without its labels is an error naming the labels. */
START_TEST(test_mnist_all_reads_the_splits_present)
{
    char *train_only = make_mnist("train_only", N_TRAIN, N_TEST, _i);
    char *test_only = make_mnist("test_only", N_TRAIN, N_TEST, _i);
    char *no_labels = make_mnist("no_labels", N_TRAIN, N_TEST, _i);
    char *empty = tu_path(tmp, "empty");
    const char *gz = _i ? ".gz" : "";
    char path[4096];
    sl_dataset *ds;
    sl_mnist_options o;
    epoch_ids ep;

    snprintf(path, sizeof path, "%s/t10k-images-idx3-ubyte%s", train_only, gz);
    ck_assert_int_eq(unlink(path), 0);
    snprintf(path, sizeof path, "%s/t10k-labels-idx1-ubyte%s", train_only, gz);
    ck_assert_int_eq(unlink(path), 0);
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte%s", test_only, gz);
    ck_assert_int_eq(unlink(path), 0);
    snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte%s", test_only, gz);
    ck_assert_int_eq(unlink(path), 0);
    snprintf(path, sizeof path, "%s/t10k-labels-idx1-ubyte%s", no_labels, gz);
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(mkdir(empty, 0700), 0);

    ds = mnist_ds(train_only, SL_MNIST_ALL, NULL);
    ck_assert_int_eq(sl_dataset_source_rows(ds), N_TRAIN);
    sl_dataset_free(ds);
    {
        sl_sampler_options s = sampler(0, 0);
        ds = mnist_ds(test_only, SL_MNIST_ALL, &s);
        ck_assert_int_eq(sl_dataset_source_rows(ds), N_TEST);
        run_ids(ds, 1, &ep);
        ck_assert_int_eq(ep.n, N_TEST);
        for (int64_t i = 0; i < ep.n; i++)
            ck_assert_int_eq(ep.ids[i], N_TRAIN + i); /* the test split's samples */
        sl_dataset_free(ds);
    }

    sl_mnist_options_init(&o);
    o.usage = SL_MNIST_ALL;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    o.dataset_dir = empty;
    ck_assert_int_eq(sl_dataset_mnist(ds, &o), SL_EIO);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds), "train-images-idx3-ubyte"));
    o.dataset_dir = no_labels;
    ck_assert_int_eq(sl_dataset_mnist(ds, &o), SL_EIO);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds), "t10k-labels-idx1-ubyte"));
    /* asked for by name, a missing split is still an error */
    o.dataset_dir = train_only;
    o.usage = SL_MNIST_TEST;
    ck_assert_int_eq(sl_dataset_mnist(ds, &o), SL_EIO);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds), "t10k-images-idx3-ubyte"));
    sl_dataset_free(ds);
    free(train_only);
    free(test_only);
    free(no_labels);
    free(empty);
}
END_TEST

START_TEST(test_mnist_columns)
{
    char *dir = make_mnist("m", N_TRAIN, N_TEST, 0);
    sl_dataset *ds = mnist_ds(dir, SL_MNIST_TRAIN, NULL);
    sl_tensor_spec spec;
    ck_assert_uint_eq(sl_dataset_num_columns(ds), 2);
    ck_assert_str_eq(sl_dataset_column_name(ds, 0), "image");
    ck_assert_str_eq(sl_dataset_column_name(ds, 1), "label");
    ck_assert_ptr_null(sl_dataset_column_name(ds, 2));
    ck_assert_int_eq(sl_dataset_column_index(ds, "image"), 0);
    ck_assert_int_eq(sl_dataset_column_index(ds, "label"), 1);
    ck_assert_int_eq(sl_dataset_column_index(ds, "pixels"), -1);
    ck_assert_int_eq(sl_dataset_column_spec(ds, 0, &spec), SL_OK);
    ck_assert_int_eq(spec.dtype, SL_UINT8);
    ck_assert_int_eq(spec.ndim, 3);
    ck_assert_int_eq(spec.shape[0], 28);
    ck_assert_int_eq(spec.shape[1], 28);
    ck_assert_int_eq(spec.shape[2], 1);
    ck_assert_int_eq(sl_dataset_column_spec(ds, 1, &spec), SL_OK);
    ck_assert_int_eq(spec.dtype, SL_UINT32);
    ck_assert_int_eq(spec.ndim, 0);
    ck_assert_int_eq(sl_dataset_column_spec(ds, 2, &spec), SL_EINVAL);
    sl_dataset_free(ds);
    free(dir);
}
END_TEST

/* An image row is a view into the source's array that holds it only
 * while inside the pipeline (sl__tensor_view_borrowed): a row handed out
 * must keep the array alive after its iterator and dataset are gone
 * (ASan checks), and still say which sample it is. */
START_TEST(test_mnist_rows_outlive_their_dataset)
{
    char *dir = make_mnist("m", N_TRAIN, N_TEST, 0);
    sl_sampler_options s = sampler(0, 0);
    sl_dataset *ds = mnist_ds(dir, SL_MNIST_TRAIN, &s);
    sl_iterator *it = start(ds, 1);
    sl_row rows[3];
    for (int i = 0; i < 3; i++) {
        const sl_tensor *img;
        ck_assert_int_eq(next(it, &rows[i]), SL_OK);
        /* handed out: the view now holds the array */
        img = rows[i].columns[0];
        ck_assert_ptr_nonnull(img->base);
        ck_assert(!img->base_borrowed);
        ck_assert_int_ge(sl_tensor_refcount(img->base), 2 + i);
    }
    sl_iterator_free(it);
    sl_dataset_free(ds);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(mnist_row_id(&rows[i]), i);
        sl_row_clear(&rows[i]);
    }
    free(dir);
}
END_TEST

/* --- sampler -------------------------------------------------------------- */

START_TEST(test_sampler_sequential)
{
    char *dir = make_mnist("m", 40, 5, 0);
    sl_sampler_options s = sampler(0, 9);
    sl_dataset *ds = mnist_ds(dir, SL_MNIST_TRAIN, &s);
    epoch_ids ep[2];
    run_ids(ds, 2, ep);
    for (int e = 0; e < 2; e++) {
        ck_assert_int_eq(ep[e].n, 40);
        for (int64_t i = 0; i < 40; i++)
            ck_assert_int_eq(ep[e].ids[i], i);
    }
    sl_dataset_free(ds);
    free(dir);
}
END_TEST

START_TEST(test_sampler_shuffle)
{
    char *dir = make_mnist("m", 50, 5, 0);
    sl_sampler_options s = sampler(1, 123);
    sl_dataset *ds = mnist_ds(dir, SL_MNIST_TRAIN, &s), *ds2, *ds3;
    epoch_ids a[2], b[2], c[2], d[2];
    int identity = 1;
    ck_assert_int_eq(tu_dataset_size(ds), 50);
    run_ids(ds, 2, a);
    ck_assert(is_permutation(&a[0], 50));
    ck_assert(is_permutation(&a[1], 50));
    for (int64_t i = 0; i < 50; i++)
        identity &= a[0].ids[i] == i;
    ck_assert_msg(!identity, "shuffle=1 gave the sequential order");
    ck_assert_msg(!same_ids(&a[0], &a[1]), "epochs 0 and 1 have the same order");
    /* Another iterator of the same dataset, and another dataset with the
     * same seed: the same orders. */
    run_ids(ds, 2, b);
    ck_assert(same_ids(&a[0], &b[0]));
    ck_assert(same_ids(&a[1], &b[1]));
    ds2 = mnist_ds(dir, SL_MNIST_TRAIN, &s);
    run_ids(ds2, 2, c);
    ck_assert(same_ids(&a[0], &c[0]));
    ck_assert(same_ids(&a[1], &c[1]));
    /* Another seed: another order. */
    s.seed = 124;
    ds3 = mnist_ds(dir, SL_MNIST_TRAIN, &s);
    run_ids(ds3, 2, d);
    ck_assert(is_permutation(&d[0], 50));
    ck_assert(!same_ids(&a[0], &d[0]));
    ck_assert(!same_ids(&a[1], &d[1]));
    sl_dataset_free(ds);
    sl_dataset_free(ds2);
    sl_dataset_free(ds3);
    free(dir);
}
END_TEST

START_TEST(test_sampler_num_samples)
{
    char *dir = make_mnist("m", N_TRAIN, N_TEST, 0);
    sl_sampler_options s = sampler(0, 0);
    sl_dataset *ds;
    epoch_ids ep[2];
    char seen[MAX_IDS] = {0};

    s.num_samples = 7;
    ds = mnist_ds(dir, SL_MNIST_TRAIN, &s);
    ck_assert_int_eq(tu_dataset_size(ds), 7);
    ck_assert_int_eq(sl_dataset_source_rows(ds), N_TRAIN);
    run_ids(ds, 1, ep);
    ck_assert_int_eq(ep[0].n, 7);
    for (int64_t i = 0; i < 7; i++)
        ck_assert_int_eq(ep[0].ids[i], i);
    sl_dataset_free(ds);

    /* Shuffled: 7 distinct samples of the whole set, new ones each epoch. */
    s.shuffle = 1;
    ds = mnist_ds(dir, SL_MNIST_ALL, &s);
    ck_assert_int_eq(tu_dataset_size(ds), 7);
    run_ids(ds, 2, ep);
    for (int e = 0; e < 2; e++) {
        memset(seen, 0, sizeof seen);
        ck_assert_int_eq(ep[e].n, 7);
        for (int64_t i = 0; i < 7; i++) {
            ck_assert_int_lt(ep[e].ids[i], N_TRAIN + N_TEST);
            ck_assert(!seen[ep[e].ids[i]]);
            seen[ep[e].ids[i]] = 1;
        }
    }
    ck_assert(!same_ids(&ep[0], &ep[1]));
    sl_dataset_free(ds);

    /* More than there are: all of them. */
    s.shuffle = 0;
    s.num_samples = 1000;
    ds = mnist_ds(dir, SL_MNIST_TEST, &s);
    ck_assert_int_eq(tu_dataset_size(ds), N_TEST);
    run_ids(ds, 1, ep);
    ck_assert_int_eq(ep[0].n, N_TEST);
    sl_dataset_free(ds);
    free(dir);
}
END_TEST

/* N = 10, 3 shards: each shard takes every third position from shard_id
 * and wraps around, so each has ceil(10/3) = 4 rows, together they cover
 * all 10, and the 2 padding rows are the only overlap. */
START_TEST(test_sampler_sharding)
{
    static const int64_t expect_seq[3][4] = {{0, 3, 6, 9}, {1, 4, 7, 0}, {2, 5, 8, 1}};
    char *dir = make_mnist("m", 10, 3, 0);
    for (int shuffle = 0; shuffle <= 1; shuffle++) {
        epoch_ids ep[3][2];
        for (int64_t k = 0; k < 3; k++) {
            sl_sampler_options s = sampler(shuffle, 31);
            sl_dataset *ds;
            s.num_shards = 3;
            s.shard_id = k;
            ds = mnist_ds(dir, SL_MNIST_TRAIN, &s);
            ck_assert_int_eq(tu_dataset_size(ds), 4);
            ck_assert_int_eq(sl_dataset_source_rows(ds), 10);
            run_ids(ds, 2, ep[k]);
            /* A batch of 3 over a shard: 2 batches, or 1 without the rest. */
            ck_assert_int_eq(sl_dataset_batch(ds, 3, 0, 1), SL_OK);
            ck_assert_int_eq(tu_dataset_size(ds), 2);
            sl_dataset_free(ds);
            ds = mnist_ds(dir, SL_MNIST_TRAIN, &s);
            ck_assert_int_eq(sl_dataset_batch(ds, 3, 1, 1), SL_OK);
            ck_assert_int_eq(tu_dataset_size(ds), 1);
            sl_dataset_free(ds);
        }
        for (int e = 0; e < 2; e++) {
            int count[10] = {0};
            int dups = 0;
            for (int k = 0; k < 3; k++) {
                char in_shard[10] = {0};
                ck_assert_int_eq(ep[k][e].n, 4);
                for (int i = 0; i < 4; i++) {
                    int64_t id = ep[k][e].ids[i];
                    ck_assert(id >= 0 && id < 10);
                    ck_assert_msg(!in_shard[id], "shard %d repeats sample %lld", k, (long long)id);
                    in_shard[id] = 1;
                    count[id]++;
                    if (!shuffle)
                        ck_assert_int_eq(id, expect_seq[k][i]);
                }
            }
            for (int id = 0; id < 10; id++) {
                ck_assert_msg(count[id] >= 1, "shuffle %d epoch %d: sample %d in no shard", shuffle,
                              e, id);
                dups += count[id] - 1;
            }
            ck_assert_int_eq(dups, 2);
        }
        if (shuffle) {
            /* The shards' shuffled orders change between epochs. */
            int differ = 0;
            for (int k = 0; k < 3; k++)
                differ |= !same_ids(&ep[k][0], &ep[k][1]);
            ck_assert(differ);
        }
    }
    free(dir);
}
END_TEST

START_TEST(test_dataset_sizes)
{
    char *dir = make_mnist("m", N_TRAIN, N_TEST, 0);
    sl_sampler_options s = sampler(1, 0);
    sl_dataset *ds = mnist_ds(dir, SL_MNIST_ALL, &s);
    sl_dataset *empty;
    int64_t size;
    ck_assert_int_eq(sl_dataset_new(&empty), SL_OK);
    ck_assert_int_eq(tu_dataset_size(ds), 42);
    ck_assert_int_eq(sl_dataset_batch(ds, 5, 0, 1), SL_OK);
    ck_assert_int_eq(tu_dataset_size(ds), 9);
    ck_assert_int_eq(sl_dataset_repeat(ds, 3), SL_OK);
    ck_assert_int_eq(tu_dataset_size(ds), 27);
    ck_assert_int_eq(sl_dataset_repeat(ds, -1), SL_OK);
    /* Endless is a size, not an error: the call succeeds. */
    ck_assert_int_eq(sl_dataset_get_dataset_size(ds, &size), SL_OK);
    ck_assert_int_eq(size, SL_DATASET_SIZE_ENDLESS);
    ck_assert_int_eq(sl_dataset_take(ds, 7), SL_OK);
    ck_assert_int_eq(tu_dataset_size(ds), 7);
    sl_dataset_free(ds);
    /* More rows than int64_t holds count as endless too. */
    ds = mnist_ds(dir, SL_MNIST_ALL, &s);
    ck_assert_int_eq(sl_dataset_repeat(ds, INT64_MAX / 2), SL_OK);
    ck_assert_int_eq(tu_dataset_size(ds), SL_DATASET_SIZE_ENDLESS);
    sl_dataset_free(ds);
    ds = mnist_ds(dir, SL_MNIST_ALL, &s);
    ck_assert_int_eq(sl_dataset_batch(ds, 5, 1, 1), SL_OK);
    ck_assert_int_eq(tu_dataset_size(ds), 8);
    sl_dataset_free(ds);
    ck_assert_ptr_nonnull(empty);
    ck_assert_int_eq(sl_dataset_get_dataset_size(empty, &size), SL_ESTATE);
    ck_assert_int_eq(size, 0);
    sl_dataset_free(empty);
    free(dir);
}
END_TEST

/* --- ImageFolder helpers --------------------------------------------------- */

/* A reference decode straight through libjpeg (islow DCT and fancy
 * upsampling are its defaults), to RGB. */
typedef struct ref_dec {
    struct jpeg_decompress_struct cinfo;
    struct jpeg_error_mgr jerr;
    jmp_buf jump;
    uint8_t *px;
} ref_dec;

static void ref_error_exit(j_common_ptr cinfo)
{
    longjmp(((ref_dec *)cinfo->client_data)->jump, 1);
}

static uint8_t *ref_decode(const uint8_t *buf, size_t n, int *w, int *h)
{
    ref_dec *d = calloc(1, sizeof *d);
    uint8_t *px;
    ck_assert_ptr_nonnull(d);
    d->cinfo.err = jpeg_std_error(&d->jerr);
    d->jerr.error_exit = ref_error_exit;
    d->cinfo.client_data = d;
    if (setjmp(d->jump) != 0) {
        jpeg_destroy_decompress(&d->cinfo);
        free(d->px);
        free(d);
        ck_abort_msg("reference decode failed");
        return NULL;
    }
    jpeg_create_decompress(&d->cinfo);
    jpeg_mem_src(&d->cinfo, buf, (unsigned long)n);
    jpeg_read_header(&d->cinfo, TRUE);
    d->cinfo.out_color_space = JCS_RGB;
    jpeg_start_decompress(&d->cinfo);
    *w = (int)d->cinfo.output_width;
    *h = (int)d->cinfo.output_height;
    ck_assert_int_eq(d->cinfo.output_components, 3);
    d->px = malloc((size_t)*w * (size_t)*h * 3);
    ck_assert_ptr_nonnull(d->px);
    while (d->cinfo.output_scanline < d->cinfo.output_height) {
        JSAMPROW row = d->px + (size_t)d->cinfo.output_scanline * (size_t)*w * 3;
        jpeg_read_scanlines(&d->cinfo, &row, 1);
    }
    jpeg_finish_decompress(&d->cinfo);
    jpeg_destroy_decompress(&d->cinfo);
    px = d->px;
    free(d);
    return px;
}

static char *make_dir(const char *parent, const char *name)
{
    char *p = tu_path(parent, name);
    ck_assert_ptr_nonnull(p);
    ck_assert_msg(mkdir(p, 0777) == 0 || errno == EEXIST, "mkdir %s: %s", p, strerror(errno));
    return p;
}

/* parent/cls/name: a w x h RGB JPEG of pattern seed; returns its path. */
static char *put_jpeg(const char *parent, const char *cls, const char *name, int w, int h,
                      uint32_t seed)
{
    char *cdir = make_dir(parent, cls);
    char *path = tu_path(cdir, name);
    uint8_t *px = malloc((size_t)w * (size_t)h * 3);
    ck_assert_ptr_nonnull(path);
    ck_assert_ptr_nonnull(px);
    tu_fill_image(px, w, h, 3, seed);
    ck_assert_int_eq(tu_write_jpeg(path, px, w, h, 3, 85), 0);
    free(px);
    free(cdir);
    return path;
}

/* The tree the ImageFolder tests share, made in an order that is not the
 * sorted one: zebra/{b,a}, apple/{c,a,b}, mango/{a}. Sorted, samples are
 * apple/a, apple/b, apple/c, mango/a, zebra/a, zebra/b. */
#define TREE_FILES 6
static const char *const tree_class[TREE_FILES] = {"apple", "apple", "apple", "mango", "zebra", "zebra"};
static const char *const tree_name[TREE_FILES] = {"a.jpg", "b.jpg", "c.jpg", "a.jpg", "a.jpg", "b.jpg"};
static const int32_t tree_label[TREE_FILES] = {0, 0, 0, 1, 2, 2};

static char *make_tree(char *paths[TREE_FILES])
{
    static const int create_order[TREE_FILES] = {5, 4, 2, 0, 1, 3};
    char *root = make_dir(tmp, "tree");
    for (int k = 0; k < TREE_FILES; k++) {
        int i = create_order[k];
        /* Odd sizes, all different, so upsampling edges are exercised. */
        paths[i] = put_jpeg(root, tree_class[i], tree_name[i], 17 + 6 * i, 13 + 4 * i,
                            (uint32_t)(100 + i));
    }
    return root;
}

static sl_dataset *folder_ds(const sl_image_folder_options *o)
{
    sl_dataset *ds;
    int rc;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    rc = sl_dataset_image_folder(ds, o);
    ck_assert_msg(rc == SL_OK, "sl_dataset_image_folder: %s (%s)", sl_status_name(rc),
                  sl_dataset_last_error(ds));
    return ds;
}

static void folder_options(sl_image_folder_options *o, const char *root, int decode)
{
    sl_image_folder_options_init(o);
    o->dataset_dir = root;
    o->decode = decode;
    o->sampler.shuffle = 0;
}

/* Checks the row's image bytes equal the file at path (decode 0). */
static void assert_file_bytes(const sl_row *row, const char *path)
{
    void *data;
    size_t n;
    const sl_tensor *img = row->columns[0];
    ck_assert_int_eq(tu_read_file(path, &data, &n), 0);
    ck_assert_int_eq(sl_tensor_dtype(img), SL_UINT8);
    ck_assert_int_eq(sl_tensor_ndim(img), 1);
    ck_assert_int_eq(sl_tensor_shape(img)[0], (int64_t)n);
    ck_assert_mem_eq(sl_tensor_data(img), data, n);
    free(data);
}

static int32_t row_label(const sl_row *row)
{
    const sl_tensor *lab = row->columns[1];
    ck_assert_uint_eq(row->ncolumns, 2);
    ck_assert_int_eq(sl_tensor_dtype(lab), SL_INT32);
    ck_assert_int_eq(sl_tensor_ndim(lab), 0);
    return *(const int32_t *)sl_tensor_data(lab);
}

static void free_paths(char **paths, int n)
{
    for (int i = 0; i < n; i++)
        free(paths[i]);
}

/* --- ImageFolder ----------------------------------------------------------- */

START_TEST(test_folder_classes_and_bytes)
{
    char *paths[TREE_FILES];
    char *root = make_tree(paths);
    static const char *const names[3] = {"apple", "mango", "zebra"};
    static const int64_t counts[3] = {3, 1, 2};
    sl_image_folder_options o;
    sl_dataset *ds;
    sl_iterator *it;
    sl_tensor_spec spec;
    int i = 0, rc;
    folder_options(&o, root, 0);
    ds = folder_ds(&o);
    ck_assert_str_eq(sl_dataset_source_kind(ds), "image_folder");
    ck_assert_int_eq(sl_dataset_source_rows(ds), TREE_FILES);
    ck_assert_int_eq(tu_dataset_size(ds), TREE_FILES);
    ck_assert_uint_eq(sl_dataset_num_classes(ds), 3);
    for (size_t k = 0; k < 3; k++) {
        const char *name;
        int32_t label;
        int64_t count;
        ck_assert_int_eq(sl_dataset_class_info(ds, k, &name, &label, &count), SL_OK);
        ck_assert_str_eq(name, names[k]);
        ck_assert_int_eq(label, (int32_t)k);
        ck_assert_int_eq(count, counts[k]);
    }
    ck_assert_int_eq(sl_dataset_class_info(ds, 3, NULL, NULL, NULL), SL_EINVAL);
    ck_assert_str_eq(sl_dataset_column_name(ds, 0), "image");
    ck_assert_str_eq(sl_dataset_column_name(ds, 1), "label");
    ck_assert_int_eq(sl_dataset_column_spec(ds, 0, &spec), SL_OK);
    ck_assert_int_eq(spec.dtype, SL_UINT8);
    ck_assert_int_eq(spec.ndim, 1);
    ck_assert_int_eq(sl_dataset_column_spec(ds, 1, &spec), SL_OK);
    ck_assert_int_eq(spec.dtype, SL_INT32);
    ck_assert_int_eq(spec.ndim, 0);
    /* In order: classes by name, files by name. */
    it = start(ds, 1);
    for (;;) {
        sl_row row;
        rc = next(it, &row);
        if (rc == SL_END_OF_EPOCH)
            continue;
        if (rc == SL_END_OF_DATA)
            break;
        ck_assert_int_lt(i, TREE_FILES);
        ck_assert_int_eq(row_label(&row), tree_label[i]);
        assert_file_bytes(&row, paths[i]);
        sl_row_clear(&row);
        i++;
    }
    ck_assert_int_eq(i, TREE_FILES);
    sl_iterator_free(it);
    sl_dataset_free(ds);
    free_paths(paths, TREE_FILES);
    free(root);
}
END_TEST

START_TEST(test_folder_decode_matches_libjpeg)
{
    char *paths[TREE_FILES];
    char *root = make_tree(paths);
    sl_image_folder_options o;
    sl_dataset *ds;
    sl_iterator *it;
    sl_tensor_spec spec;
    int i = 0;
    folder_options(&o, root, 1);
    o.num_parallel_workers = _i + 1;
    ds = folder_ds(&o);
    ck_assert_int_eq(sl_dataset_column_spec(ds, 0, &spec), SL_OK);
    ck_assert_int_eq(spec.dtype, SL_UINT8);
    ck_assert_int_eq(spec.ndim, 3);
    ck_assert_int_eq(spec.shape[2], 3);
    it = start(ds, 1);
    for (;;) {
        sl_row row;
        void *file;
        size_t n;
        int w, h;
        uint8_t *ref;
        const sl_tensor *img;
        const int64_t *shape;
        int rc = next(it, &row);
        if (rc == SL_END_OF_EPOCH)
            continue;
        if (rc == SL_END_OF_DATA)
            break;
        ck_assert_int_lt(i, TREE_FILES);
        ck_assert_int_eq(row_label(&row), tree_label[i]);
        ck_assert_int_eq(tu_read_file(paths[i], &file, &n), 0);
        ref = ref_decode(file, n, &w, &h);
        free(file);
        ck_assert_int_eq(w, 17 + 6 * i);
        ck_assert_int_eq(h, 13 + 4 * i);
        img = row.columns[0];
        shape = sl_tensor_shape(img);
        ck_assert_int_eq(sl_tensor_dtype(img), SL_UINT8);
        ck_assert_int_eq(sl_tensor_ndim(img), 3);
        ck_assert_int_eq(shape[0], h);
        ck_assert_int_eq(shape[1], w);
        ck_assert_int_eq(shape[2], 3);
        ck_assert_mem_eq(sl_tensor_data(img), ref, (size_t)w * (size_t)h * 3);
        free(ref);
        sl_row_clear(&row);
        i++;
    }
    ck_assert_int_eq(i, TREE_FILES);
    sl_iterator_free(it);
    sl_dataset_free(ds);
    free_paths(paths, TREE_FILES);
    free(root);
}
END_TEST

/* Counts the rows of ds and checks each against the expected files. */
static int run_folder(sl_dataset *ds, char *const *expect, const int32_t *labels, int n)
{
    sl_iterator *it = start(ds, 1);
    int i = 0;
    for (;;) {
        sl_row row;
        int rc = next(it, &row);
        if (rc == SL_END_OF_EPOCH)
            continue;
        if (rc == SL_END_OF_DATA)
            break;
        ck_assert_int_lt(i, n);
        ck_assert_int_eq(row_label(&row), labels[i]);
        assert_file_bytes(&row, expect[i]);
        sl_row_clear(&row);
        i++;
    }
    sl_iterator_free(it);
    return i;
}

START_TEST(test_folder_extensions)
{
    static const char text[] = "a text file\n";
    static const char *const jpg_only[] = {".jpg", NULL};
    static const char *const jpg_png[] = {".jpg", ".png", NULL};
    static const int32_t zeros[8] = {0};
    char *root = make_dir(tmp, "ext");
    char *a = put_jpeg(root, "c", "a.jpg", 16, 16, 1);
    char *b = put_jpeg(root, "c", "b.png", 16, 16, 2); /* JPEG bytes, other name */
    char *d = put_jpeg(root, "c", "d.jpg", 16, 16, 3);
    char *hidden = put_jpeg(root, "c", ".hidden.jpg", 16, 16, 4);
    char *cdir = tu_path(root, "c");
    char *notes = tu_path(cdir, "notes.txt");
    sl_image_folder_options o;
    sl_dataset *ds;
    int64_t count;
    ck_assert_int_eq(tu_write_bytes(notes, text, sizeof text - 1, 0), 0);

    folder_options(&o, root, 0);
    o.extensions = jpg_only;
    ds = folder_ds(&o);
    ck_assert_int_eq(tu_dataset_size(ds), 2);
    ck_assert_int_eq(sl_dataset_class_info(ds, 0, NULL, NULL, &count), SL_OK);
    ck_assert_int_eq(count, 2);
    {
        char *expect[] = {a, d};
        ck_assert_int_eq(run_folder(ds, expect, zeros, 2), 2);
    }
    sl_dataset_free(ds);

    o.extensions = jpg_png;
    ds = folder_ds(&o);
    ck_assert_int_eq(tu_dataset_size(ds), 3);
    {
        char *expect[] = {a, b, d};
        ck_assert_int_eq(run_folder(ds, expect, zeros, 3), 3);
    }
    sl_dataset_free(ds);

    /* No filter: every file but the hidden one. */
    o.extensions = NULL;
    ds = folder_ds(&o);
    ck_assert_int_eq(tu_dataset_size(ds), 4);
    {
        char *expect[] = {a, b, d, notes};
        ck_assert_int_eq(run_folder(ds, expect, zeros, 4), 4);
    }
    sl_dataset_free(ds);
    free(a);
    free(b);
    free(d);
    free(hidden);
    free(notes);
    free(cdir);
    free(root);
}
END_TEST

/* A class indexing picks classes and labels: zebra -> 7, apple -> 3; mango
 * is left out. */
START_TEST(test_folder_class_indexing)
{
    static const char *const names[] = {"zebra", "apple"};
    static const int32_t indices[] = {7, 3};
    char *paths[TREE_FILES];
    char *root = make_tree(paths);
    char seen[TREE_FILES] = {0};
    sl_image_folder_options o;
    sl_dataset *ds;
    sl_iterator *it;
    int rows = 0;
    folder_options(&o, root, 0);
    o.class_names = names;
    o.class_indices = indices;
    o.num_classes = 2;
    ds = folder_ds(&o);
    ck_assert_uint_eq(sl_dataset_num_classes(ds), 2);
    ck_assert_int_eq(tu_dataset_size(ds), 5);
    for (size_t k = 0; k < 2; k++) {
        const char *name;
        int32_t label;
        int64_t count;
        ck_assert_int_eq(sl_dataset_class_info(ds, k, &name, &label, &count), SL_OK);
        ck_assert_str_eq(name, names[k]);
        ck_assert_int_eq(label, indices[k]);
        ck_assert_int_eq(count, k == 0 ? 2 : 3);
    }
    it = start(ds, 1);
    for (;;) {
        sl_row row;
        int rc = next(it, &row), match = -1;
        int32_t label;
        if (rc == SL_END_OF_EPOCH)
            continue;
        if (rc == SL_END_OF_DATA)
            break;
        label = row_label(&row);
        /* Which file is it? Every file's bytes differ. */
        for (int i = 0; i < TREE_FILES && match < 0; i++) {
            void *data;
            size_t n;
            ck_assert_int_eq(tu_read_file(paths[i], &data, &n), 0);
            if (sl_tensor_nbytes(row.columns[0]) == n &&
                memcmp(sl_tensor_data(row.columns[0]), data, n) == 0)
                match = i;
            free(data);
        }
        ck_assert_msg(match >= 0, "a row matches no file");
        ck_assert_msg(!seen[match], "%s twice", paths[match]);
        seen[match] = 1;
        ck_assert_str_ne(tree_class[match], "mango");
        ck_assert_int_eq(label, strcmp(tree_class[match], "zebra") == 0 ? 7 : 3);
        sl_row_clear(&row);
        rows++;
    }
    ck_assert_int_eq(rows, 5);
    sl_iterator_free(it);
    sl_dataset_free(ds);
    free_paths(paths, TREE_FILES);
    free(root);
}
END_TEST

/* --- the real Fashion-MNIST ------------------------------------------------ */

START_TEST(test_fashion_mnist)
{
    static const sl_mnist_usage usages[] = {SL_MNIST_TRAIN, SL_MNIST_TEST};
    static const int64_t counts[] = {60000, 10000};
    struct stat st;
    /* The README's test command installs it: without it the test fails,
     * naming the package, rather than pass untested. */
    ck_assert_msg(stat(FASHION_DIR, &st) == 0 && S_ISDIR(st.st_mode),
                  "%s is absent: install the Debian package dataset-fashion-mnist (the "
                  "README's test command does)",
                  FASHION_DIR);
    for (size_t u = 0; u < 2; u++) {
        sl_sampler_options s = sampler(0, 0);
        sl_dataset *ds = mnist_ds(FASHION_DIR, usages[u], &s);
        sl_tensor_spec spec;
        sl_iterator *it;
        int64_t rows = 0;
        int epochs = 0;
        ck_assert_int_eq(tu_dataset_size(ds), counts[u]);
        ck_assert_int_eq(sl_dataset_column_spec(ds, 0, &spec), SL_OK);
        ck_assert_int_eq(spec.ndim, 3);
        ck_assert_int_eq(spec.shape[0], 28);
        ck_assert_int_eq(spec.shape[1], 28);
        ck_assert_int_eq(spec.shape[2], 1);
        it = start(ds, 1);
        for (;;) {
            sl_row row;
            int rc = next(it, &row);
            if (rc == SL_END_OF_EPOCH) {
                epochs++;
                continue;
            }
            if (rc == SL_END_OF_DATA)
                break;
            if (rows == 0) {
                const int64_t *shape = sl_tensor_shape(row.columns[0]);
                ck_assert_int_eq(sl_tensor_ndim(row.columns[0]), 3);
                ck_assert_int_eq(shape[0], 28);
                ck_assert_int_eq(shape[1], 28);
                ck_assert_int_eq(shape[2], 1);
                /* Ankle boot, first in both files. */
                ck_assert_uint_eq(*(const uint32_t *)sl_tensor_data(row.columns[1]), 9);
            }
            ck_assert_uint_lt(*(const uint32_t *)sl_tensor_data(row.columns[1]), 10);
            rows++;
            sl_row_clear(&row);
        }
        ck_assert_int_eq(epochs, 1);
        ck_assert_int_eq(rows, counts[u]);
        sl_iterator_free(it);
        sl_dataset_free(ds);
    }
}
END_TEST

/* --- suite ----------------------------------------------------------------- */

static Suite *make_sources_suite(void)
{
    Suite *s = suite_create("sources");
    TCase *tc;

    tc = tu_tcase("mnist", 60);
    tcase_add_checked_fixture(tc, setup_tmp, teardown_tmp);
    tcase_add_test(tc, test_mnist_plain_and_gz_identical);
    tcase_add_loop_test(tc, test_mnist_usage_counts_and_values, 0, 2); /* plain, gz */
    tcase_add_loop_test(tc, test_mnist_all_reads_the_splits_present, 0, 2); /* plain, gz */
    tcase_add_test(tc, test_mnist_columns);
    tcase_add_test(tc, test_mnist_rows_outlive_their_dataset);
    suite_add_tcase(s, tc);

    tc = tu_tcase("sampler", 60);
    tcase_add_checked_fixture(tc, setup_tmp, teardown_tmp);
    tcase_add_test(tc, test_sampler_sequential);
    tcase_add_test(tc, test_sampler_shuffle);
    tcase_add_test(tc, test_sampler_num_samples);
    tcase_add_test(tc, test_sampler_sharding);
    tcase_add_test(tc, test_dataset_sizes);
    suite_add_tcase(s, tc);

    tc = tu_tcase("image_folder", 60);
    tcase_add_checked_fixture(tc, setup_tmp, teardown_tmp);
    tcase_add_test(tc, test_folder_classes_and_bytes);
    tcase_add_loop_test(tc, test_folder_decode_matches_libjpeg, 0, 3); /* 1..3 workers */
    tcase_add_test(tc, test_folder_extensions);
    tcase_add_test(tc, test_folder_class_indexing);
    suite_add_tcase(s, tc);

    tc = tu_tcase("fashion_mnist", 600);
    tcase_add_test(tc, test_fashion_mnist);
    suite_add_tcase(s, tc);

    return s;
}

int main(void)
{
    return tu_run_suite(make_sources_suite);
}
