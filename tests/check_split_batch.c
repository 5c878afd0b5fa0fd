/* check_split_batch.c: sl_dataset_split (parts disjoint and covering the
 * source, fixed by the seed, consecutive without randomize, shuffled and
 * sharded within a part, every refusal); sl_dataset_batch_padded (the
 * padded shapes and values, a shape given or the batch's largest, in the
 * sequential batch, the parallel collation and the map+batch stage, and a
 * row larger than its pad shape failing with its batch, row and sizes);
 * sl_dataset_batch_map (the columns it makes and where, the batch and
 * epoch it is told, in every stage that collates, a failure naming its
 * batch, refusals, and its destroy called once). */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"
#include "tests/testutil.h"
#include "tests/run_suite.h"
#include "tests/time_limit.h"

#define N 20

#define HAS(msg, part) \
    ck_assert_msg(strstr((msg), (part)) != NULL, "'%s' lacks '%s'", (msg), (part))

static char *dir;

static void setup(void)
{
    dir = tu_mnist_dir(N, 0);
}

static void teardown(void)
{
    tu_mnist_dir_drop(dir);
    dir = NULL;
}

/* An MNIST train source of N samples (shuffled when shuffle is 1). */
static sl_dataset *source(int shuffle, uint64_t seed)
{
    sl_dataset *ds;
    sl_mnist_options o;
    sl_mnist_options_init(&o);
    o.dataset_dir = dir;
    o.usage = SL_MNIST_TRAIN;
    o.sampler.shuffle = shuffle;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    ck_assert_msg(sl_dataset_mnist(ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
    sl_dataset_set_seed(ds, seed);
    return ds;
}

/* The sample id of an MNIST image: its pixel (0, 0) is id * 31 mod 256
 * (tu_pixel), and 223 is 31's inverse mod 256. */
static int sample_id(const sl_tensor *image)
{
    return (int)((((const uint8_t *)sl_tensor_data(image))[0] * 223u) & 0xffu);
}

/* The ids of one epoch of ds, in order, into ids; returns how many. */
static int epoch_ids(sl_dataset *ds, int *ids, int cap)
{
    sl_iterator *it;
    sl_row row;
    int n = 0, rc;
    ck_assert_msg(sl_iterator_new(&it, ds, NULL) == SL_OK, "%s", sl_dataset_last_error(ds));
    while ((rc = sl_iterator_next(it, &row)) == SL_OK) {
        ck_assert_int_lt(n, cap);
        ids[n++] = sample_id(row.columns[0]);
        sl_row_clear(&row);
    }
    ck_assert_msg(rc == SL_END_OF_EPOCH || rc == SL_END_OF_DATA, "%s: %s", sl_status_name(rc),
                  sl_iterator_last_error(it));
    sl_iterator_free(it);
    return n;
}

/* Splits a source of seed into parts of sizes; records each part's ids
 * in seen[id] = part + 1 and checks that the parts are disjoint, cover the
 * source and have their sizes. */
static void split_cover(const int64_t *sizes, size_t nparts, int randomize, uint64_t seed,
                        int *seen)
{
    sl_dataset *ds = source(1, seed), *parts[4];
    int ids[N];
    ck_assert_msg(sl_dataset_split(ds, sizes, nparts, randomize, NULL, parts) == SL_OK, "%s",
                  sl_dataset_last_error(ds));
    memset(seen, 0, N * sizeof *seen);
    for (size_t p = 0; p < nparts; p++) {
        int n = epoch_ids(parts[p], ids, N);
        ck_assert_int_eq(n, sizes[p]);
        ck_assert_int_eq(tu_dataset_size(parts[p]), sizes[p]);
        for (int i = 0; i < n; i++) {
            ck_assert_msg(seen[ids[i]] == 0, "sample %d in parts %d and %zu", ids[i],
                          seen[ids[i]] - 1, p);
            seen[ids[i]] = (int)p + 1;
        }
        sl_dataset_free(parts[p]);
    }
    for (int i = 0; i < N; i++)
        ck_assert_msg(seen[i] != 0, "sample %d in no part", i);
    /* the source is unchanged */
    ck_assert_int_eq(epoch_ids(ds, ids, N), N);
    sl_dataset_free(ds);
}

START_TEST(test_split_disjoint_cover_seeded)
{
    const int64_t sizes[3] = {12, 5, 3};
    int a[N], b[N], c[N], differ = 0;
    split_cover(sizes, 3, 1, 7, a);
    split_cover(sizes, 3, 1, 7, b);
    ck_assert_mem_eq(a, b, sizeof a); /* the seed fixes the parts */
    split_cover(sizes, 3, 1, 8, c);
    for (int i = 0; i < N; i++)
        differ += a[i] != c[i];
    ck_assert_int_gt(differ, 0);
    /* randomize 0: consecutive samples */
    split_cover(sizes, 3, 0, 7, a);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(a[i], i < 12 ? 1 : i < 17 ? 2 : 3);
}
END_TEST

START_TEST(test_split_order_and_shards_within_part)
{
    const int64_t sizes[2] = {8, 12};
    sl_dataset *ds = source(0, 3), *parts[2], *shard[2][2];
    sl_sampler_options so;
    int ids[N], mine[N] = {0}, got[2][N], n[2];
    /* not shuffled: a part reads its samples in split order, every epoch
     * the same; consecutive ones without randomize */
    ck_assert_int_eq(sl_dataset_split(ds, sizes, 2, 0, NULL, parts), SL_OK);
    ck_assert_int_eq(epoch_ids(parts[1], ids, N), 12);
    for (int i = 0; i < 12; i++)
        ck_assert_int_eq(ids[i], 8 + i);
    sl_dataset_free(parts[0]);
    sl_dataset_free(parts[1]);
    /* two shards of each part: disjoint, together the part */
    sl_sampler_options_init(&so);
    so.num_shards = 2;
    so.seed = 5;
    for (int s = 0; s < 2; s++) {
        so.shard_id = s;
        ck_assert_int_eq(sl_dataset_split(ds, sizes, 2, 1, &so, shard[s]), SL_OK);
    }
    for (int p = 0; p < 2; p++) {
        memset(mine, 0, sizeof mine);
        for (int s = 0; s < 2; s++) {
            ck_assert_int_eq(tu_dataset_size(shard[s][p]), sizes[p] / 2);
            n[s] = epoch_ids(shard[s][p], got[s], N);
            ck_assert_int_eq(n[s], sizes[p] / 2);
            for (int i = 0; i < n[s]; i++) {
                ck_assert_msg(mine[got[s][i]] == 0, "sample %d in both shards", got[s][i]);
                mine[got[s][i]] = 1;
            }
        }
        for (int s = 0; s < 2; s++)
            sl_dataset_free(shard[s][p]);
    }
    sl_dataset_free(ds);
}
END_TEST

START_TEST(test_split_refusals)
{
    sl_dataset *ds = source(1, 0), *parts[3] = {0};
    const int64_t wrong_sum[2] = {10, 9}, zero[2] = {20, 0}, ok[2] = {10, 10};
    sl_mnist_options o;
    ck_assert_int_eq(sl_dataset_split(ds, wrong_sum, 2, 1, NULL, parts), SL_EINVAL);
    HAS(sl_dataset_last_error(ds), "add up to 19 but the dataset has 20 rows");
    ck_assert_ptr_null(parts[0]);
    ck_assert_int_eq(sl_dataset_split(ds, zero, 2, 1, NULL, parts), SL_EINVAL);
    HAS(sl_dataset_last_error(ds), "size 1 is 0");
    ck_assert_int_eq(sl_dataset_split(ds, ok, 0, 1, NULL, parts), SL_EINVAL);
    HAS(sl_dataset_last_error(ds), "no sizes");
    ck_assert_int_eq(sl_dataset_shuffle(ds, 4), SL_OK);
    ck_assert_int_eq(sl_dataset_split(ds, ok, 2, 1, NULL, parts), SL_EINVAL);
    HAS(sl_dataset_last_error(ds), "has a shuffle after its source");
    sl_dataset_free(ds);

    sl_mnist_options_init(&o);
    o.dataset_dir = dir;
    o.usage = SL_MNIST_TRAIN;
    o.sampler.num_shards = 2;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    ck_assert_int_eq(sl_dataset_mnist(ds, &o), SL_OK);
    ck_assert_int_eq(sl_dataset_split(ds, ok, 2, 1, NULL, parts), SL_EINVAL);
    HAS(sl_dataset_last_error(ds), "sharded");
    o.sampler.num_shards = 1;
    o.sampler.num_samples = 5;
    ck_assert_int_eq(sl_dataset_mnist(ds, &o), SL_OK);
    ck_assert_int_eq(sl_dataset_split(ds, ok, 2, 1, NULL, parts), SL_EINVAL);
    HAS(sl_dataset_last_error(ds), "num_samples");
    sl_dataset_free(ds);
}
END_TEST

/* --- padded batches ----------------------------------------------------- */

/* image (28, 28, 1) -> uint8 (id % 4 + 1,) holding id + 1 in every element. */
static int ragged(void *user, const sl_tensor *in, sl_tensor **out, uint64_t seed, char *err,
                  size_t err_len)
{
    int id = sample_id(in);
    int64_t len = id % 4 + 1;
    (void)user, (void)seed, (void)err, (void)err_len;
    if (sl_tensor_new(out, SL_UINT8, 1, &len) != SL_OK)
        return SL_ENOMEM;
    memset(sl_tensor_data(*out), id + 1, (size_t)len);
    return SL_OK;
}

static int ragged_infer(void *user, const sl_tensor_spec *in, sl_tensor_spec *out, char *err,
                        size_t err_len)
{
    (void)user, (void)in, (void)err, (void)err_len;
    *out = (sl_tensor_spec){SL_UINT8, 1, {-1}};
    return SL_OK;
}

/* Source in file order, image made ragged (map workers), then a padded
 * batch of 4 with batch workers. */
static sl_dataset *ragged_batches(int map_workers, int batch_workers, const sl_batch_pad *pad,
                                  size_t npads)
{
    sl_dataset *ds = source(0, 0);
    sl_op_custom_options co;
    sl_op *op;
    char err[256];
    sl_op_custom_options_init(&co);
    co.name = "ragged";
    co.fn = ragged;
    co.infer = ragged_infer;
    ck_assert_int_eq(sl_op_custom_new(&op, &co, err, sizeof err), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &op, 1, "image", NULL, map_workers), SL_OK);
    sl_op_release(op);
    ck_assert_msg(sl_dataset_batch_padded(ds, 4, 0, batch_workers, pad, npads) == SL_OK, "%s",
                  sl_dataset_last_error(ds));
    return ds;
}

/* Checks every batch: (4, width) where width is pad_to or the batch's
 * longest row (ids 4b .. 4b+3 have lengths 1 .. 4, so 4), each row's
 * id + 1 and then fill. */
static void check_ragged(sl_dataset *ds, int64_t pad_to, uint8_t fill)
{
    sl_iterator *it;
    sl_row row;
    int batches = 0, rc;
    ck_assert_int_eq(sl_iterator_new(&it, ds, NULL), SL_OK);
    while ((rc = sl_iterator_next(it, &row)) == SL_OK) {
        const sl_tensor *t = row.columns[0];
        const uint8_t *v = sl_tensor_data(t);
        int64_t w = pad_to > 0 ? pad_to : 4;
        ck_assert_int_eq(sl_tensor_ndim(t), 2);
        ck_assert_int_eq(sl_tensor_shape(t)[0], 4);
        ck_assert_int_eq(sl_tensor_shape(t)[1], w);
        for (int r = 0; r < 4; r++) {
            int id = batches * 4 + r;
            for (int64_t k = 0; k < w; k++)
                ck_assert_uint_eq(v[r * w + k], k < id % 4 + 1 ? (uint8_t)(id + 1) : fill);
        }
        /* the label column, scalars, is stacked as ever */
        ck_assert_int_eq(sl_tensor_shape(row.columns[1])[0], 4);
        sl_row_clear(&row);
        batches++;
    }
    ck_assert_msg(rc == SL_END_OF_EPOCH || rc == SL_END_OF_DATA, "%s",
                  sl_iterator_last_error(it));
    ck_assert_int_eq(batches, N / 4);
    sl_iterator_free(it);
}

START_TEST(test_pad_to_largest_and_to_shape)
{
    sl_batch_pad pad = {.column = "image", .ndim = 1, .shape = {6}, .value = 200};
    sl_tensor_spec spec;
    /* every stage that collates: sequential, parallel, map+batch */
    for (int workers = 1; workers <= 2; workers++) {
        sl_dataset *ds = ragged_batches(1, workers, NULL, 0);
        check_ragged(ds, 0, 0);
        sl_dataset_free(ds);
        ds = ragged_batches(workers, workers, &pad, 1);
        ck_assert_int_eq(sl_dataset_column_spec(ds, 0, &spec), SL_OK);
        ck_assert_int_eq(spec.shape[1], 6);
        check_ragged(ds, 6, 200);
        sl_dataset_free(ds);
    }
    /* shape None in one dimension: the batch's largest, with the value */
    pad.shape[0] = -1;
    pad.value = 9;
    {
        sl_dataset *ds = ragged_batches(2, 1, &pad, 1);
        check_ragged(ds, 0, 9);
        sl_dataset_free(ds);
    }
}
END_TEST

START_TEST(test_split_keeps_maps)
{
    /* a source and a map: each part maps its own rows */
    sl_dataset *ds = ragged_batches(1, 1, NULL, 0), *parts[2];
    const int64_t sizes[2] = {8, 12};
    sl_iterator *it;
    sl_row row;
    ck_assert_int_eq(sl_dataset_split(ds, sizes, 2, 0, NULL, parts), SL_EINVAL);
    HAS(sl_dataset_last_error(ds), "has a batch after its source");
    sl_dataset_free(ds);
    ds = source(0, 0);
    {
        sl_op_custom_options co;
        sl_op *op;
        char err[256];
        sl_op_custom_options_init(&co);
        co.fn = ragged;
        co.infer = ragged_infer;
        ck_assert_int_eq(sl_op_custom_new(&op, &co, err, sizeof err), SL_OK);
        ck_assert_int_eq(sl_dataset_map(ds, &op, 1, "image", NULL, 2), SL_OK);
        sl_op_release(op);
    }
    ck_assert_msg(sl_dataset_split(ds, sizes, 2, 0, NULL, parts) == SL_OK, "%s",
                  sl_dataset_last_error(ds));
    ck_assert_int_eq(sl_iterator_new(&it, parts[1], NULL), SL_OK);
    for (int i = 8; i < 20; i++) {
        ck_assert_int_eq(sl_iterator_next(it, &row), SL_OK);
        ck_assert_int_eq(sl_tensor_shape(row.columns[0])[0], i % 4 + 1);
        ck_assert_uint_eq(((const uint8_t *)sl_tensor_data(row.columns[0]))[0], i + 1);
        sl_row_clear(&row);
    }
    sl_iterator_free(it);
    for (int p = 0; p < 2; p++)
        sl_dataset_free(parts[p]);
    sl_dataset_free(ds);
}
END_TEST

START_TEST(test_pad_errors)
{
    sl_batch_pad pad = {.column = "image", .ndim = 1, .shape = {2}, .value = 0};
    sl_dataset *ds = ragged_batches(1, 2, &pad, 1);
    sl_iterator *it;
    sl_row row;
    int rc;
    ck_assert_int_eq(sl_iterator_new(&it, ds, NULL), SL_OK);
    while ((rc = sl_iterator_next(it, &row)) == SL_OK)
        sl_row_clear(&row);
    ck_assert_int_eq(rc, SL_ESHAPE);
    /* ids 0..3 have lengths 1..4: row 2 is the first too long */
    HAS(sl_iterator_last_error(it), "batch 0: row 2 has column 'image' of shape (3,)");
    HAS(sl_iterator_last_error(it), "larger than its pad shape (2,) (dimension 0: 3 > 2)");
    sl_iterator_free(it);
    sl_dataset_free(ds);

    ds = source(0, 0);
    pad.column = "nope";
    ck_assert_int_eq(sl_dataset_batch_padded(ds, 4, 0, 1, &pad, 1), SL_EINVAL);
    HAS(sl_dataset_last_error(ds), "names no column");
    pad.column = "label";
    ck_assert_int_eq(sl_dataset_batch_padded(ds, 4, 0, 1, &pad, 1), SL_EINVAL);
    HAS(sl_dataset_last_error(ds), "has 1 dimensions but the column has 0");
    pad.ndim = -1;
    {
        sl_batch_pad two[2] = {pad, pad};
        ck_assert_int_eq(sl_dataset_batch_padded(ds, 4, 0, 1, two, 2), SL_EINVAL);
        HAS(sl_dataset_last_error(ds), "twice");
    }
    ck_assert_int_eq(tu_dataset_size(ds), N); /* nothing appended */
    sl_dataset_free(ds);
}
END_TEST

/* --- per-batch functions ---------------------------------------------------- */

/* Passes label on and adds `tag`, int32 (): epoch * 1000 + batch * 100 +
 * row; fails batch fail_at (user: an int, -1: never). */
static int tag_batch(void *user, const sl_batch_info *info, sl_tensor *const *in, size_t nin,
                     size_t nrows, sl_tensor **out, size_t nout, char *err, size_t err_len)
{
    ck_assert_uint_eq(nin, 1);
    ck_assert_uint_eq(nout, 2);
    if (info->batch_num == *(const int *)user) {
        snprintf(err, err_len, "no good");
        return SL_EINVAL;
    }
    for (size_t r = 0; r < nrows; r++) {
        out[r] = sl_tensor_retain(in[r]);
        if (sl_tensor_new(&out[nrows + r], SL_INT32, 0, NULL) != SL_OK)
            return SL_ENOMEM;
        *(int32_t *)sl_tensor_data(out[nrows + r]) =
            (int32_t)(info->epoch_num * 1000 + info->batch_num * 100 + (int64_t)r);
    }
    return SL_OK;
}

static int destroyed;

static void count_destroy(void *user)
{
    (void)user;
    destroyed++;
}

static const char *const label_in[] = {"label"}, *const tag_out[] = {"label", "tag"};

static int batch_tagged(sl_dataset *ds, int workers, int *fail_at)
{
    sl_batch_map_options o;
    sl_batch_map_options_init(&o);
    o.fn = tag_batch;
    o.destroy = count_destroy;
    o.user = fail_at;
    o.input_columns = label_in;
    o.num_input_columns = 1;
    o.output_columns = tag_out;
    o.num_output_columns = 2;
    return sl_dataset_batch_map(ds, 4, 0, workers, &o);
}

START_TEST(test_batch_map_columns_and_info)
{
    int never = -1;
    destroyed = 0;
    /* sequential batch, parallel collation, map+batch */
    for (int mode = 0; mode < 3; mode++) {
        sl_dataset *ds = source(0, 0);
        sl_iterator_options io;
        sl_iterator *it;
        sl_row row;
        int rc, rows = 0;
        if (mode == 2) {
            sl_op *op;
            ck_assert_int_eq(sl_dataset_shuffle(ds, 2), SL_OK); /* then the map+batch */
            ck_assert_int_eq(sl_op_hwc2chw_new(&op, NULL, 0), SL_OK);
            ck_assert_int_eq(sl_dataset_map(ds, &op, 1, "image", NULL, 2), SL_OK);
            sl_op_release(op);
        }
        ck_assert_msg(batch_tagged(ds, mode ? 2 : 1, &never) == SL_OK, "%s",
                      sl_dataset_last_error(ds));
        ck_assert_uint_eq(sl_dataset_num_columns(ds), 3);
        ck_assert_str_eq(sl_dataset_column_name(ds, 1), "label");
        ck_assert_str_eq(sl_dataset_column_name(ds, 2), "tag");
        sl_iterator_options_init(&io);
        io.num_epochs = 2;
        ck_assert_int_eq(sl_iterator_new(&it, ds, &io), SL_OK);
        while ((rc = sl_iterator_next(it, &row)) != SL_END_OF_DATA) {
            const int32_t *tag;
            int epoch = rows / 5, b = rows % 5;
            if (rc == SL_END_OF_EPOCH)
                continue;
            ck_assert_msg(rc == SL_OK, "%s", sl_iterator_last_error(it));
            ck_assert_uint_eq(row.ncolumns, 3);
            ck_assert_int_eq(sl_tensor_shape(row.columns[0])[0], 4);
            tag = sl_tensor_data(row.columns[2]);
            for (int r = 0; r < 4; r++)
                ck_assert_int_eq(tag[r], epoch * 1000 + b * 100 + r);
            if (mode < 2) /* in file order: labels are ids % 10 */
                for (int r = 0; r < 4; r++)
                    ck_assert_uint_eq(((const uint32_t *)sl_tensor_data(row.columns[1]))[r],
                                      (uint32_t)((b * 4 + r) % 10));
            sl_row_clear(&row);
            rows++;
        }
        ck_assert_int_eq(rows, 10);
        sl_iterator_free(it);
        sl_dataset_free(ds);
    }
    ck_assert_int_eq(destroyed, 3); /* once per dataset, after its iterator too */
}
END_TEST

START_TEST(test_batch_map_failure_and_refusals)
{
    int fail_at = 2, rc, batches = 0;
    sl_dataset *ds = source(0, 0);
    sl_iterator *it;
    sl_row row;
    sl_batch_map_options o;
    const char *const twice[] = {"label", "label"}, *const nope[] = {"nope"};
    destroyed = 0;
    ck_assert_int_eq(batch_tagged(ds, 2, &fail_at), SL_OK);
    ck_assert_int_eq(sl_iterator_new(&it, ds, NULL), SL_OK);
    while ((rc = sl_iterator_next(it, &row)) == SL_OK) {
        sl_row_clear(&row);
        batches++;
    }
    ck_assert_int_eq(batches, 2); /* the batches before it come */
    ck_assert_int_eq(rc, SL_EINVAL);
    HAS(sl_iterator_last_error(it), "batch 2 of epoch 0: per_batch_map: no good");
    sl_iterator_free(it);

    sl_batch_map_options_init(&o);
    o.fn = tag_batch;
    o.destroy = count_destroy;
    o.input_columns = nope;
    o.num_input_columns = 1;
    ck_assert_int_eq(sl_dataset_batch_map(ds, 4, 0, 1, &o), SL_EINVAL);
    HAS(sl_dataset_last_error(ds), "input_columns names no column ('nope')");
    o.input_columns = twice;
    o.num_input_columns = 2;
    ck_assert_int_eq(sl_dataset_batch_map(ds, 4, 0, 1, &o), SL_EINVAL);
    HAS(sl_dataset_last_error(ds), "name 'label' twice");
    o.input_columns = label_in;
    o.num_input_columns = 1;
    o.output_columns = twice;
    o.num_output_columns = 2;
    ck_assert_int_eq(sl_dataset_batch_map(ds, 4, 0, 1, &o), SL_EINVAL);
    HAS(sl_dataset_last_error(ds), "two columns 'label'");
    o.size = 0;
    ck_assert_int_eq(sl_dataset_batch_map(ds, 4, 0, 1, &o), SL_EINVAL);
    ck_assert_int_eq(destroyed, 0); /* refused: user stays the caller's */
    sl_dataset_free(ds);
    ck_assert_int_eq(destroyed, 1);
}
END_TEST

static Suite *make_split_batch_suite(void)
{
    Suite *s = suite_create("split_batch");
    TCase *tc = tu_tcase("split", 30);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_split_disjoint_cover_seeded);
    tcase_add_test(tc, test_split_order_and_shards_within_part);
    tcase_add_test(tc, test_split_refusals);
    suite_add_tcase(s, tc);
    tc = tu_tcase("pad", 30);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_pad_to_largest_and_to_shape);
    tcase_add_test(tc, test_pad_errors);
    tcase_add_test(tc, test_split_keeps_maps);
    suite_add_tcase(s, tc);
    tc = tu_tcase("batch_map", 30);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_batch_map_columns_and_info);
    tcase_add_test(tc, test_batch_map_failure_and_refusals);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(make_split_batch_suite);
}
