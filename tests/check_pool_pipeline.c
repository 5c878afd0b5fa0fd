/* check_pool_pipeline.c: how a pipeline uses its dataset's buffer pool:
 * no call to the system per sample once warmed up, the pool's stats in the
 * iterator's and the dataset's, and the dataset's idle limit. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "tests/time_limit.h"
#include "core/pool.h"
#include "sluice/sluice.h"
#include "testutil.h"

#define N_TRAIN 320

static char *tmpdir;

static void setup(void)
{
    tmpdir = tu_mkdtemp();
    ck_assert_ptr_nonnull(tmpdir);
    ck_assert_int_eq(tu_make_mnist(tmpdir, N_TRAIN, 10, 0), 0);
}

static void teardown(void)
{
    tu_rmtree(tmpdir);
    free(tmpdir);
}

/* The LeNet pipeline's shape on the temp dir's MNIST train split: label
 * cast, resize, rescale, HWC2CHW, shuffle, batch 32. */
static sl_dataset *lenet_mnist(int workers)
{
    sl_mnist_options o;
    sl_op *cast, *resize, *rescale, *hwc2chw;
    sl_dataset *ds;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_mnist_options_init(&o);
    o.dataset_dir = tmpdir;
    o.usage = SL_MNIST_TRAIN;
    ck_assert_msg(sl_dataset_mnist(ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
    ck_assert_int_eq(sl_op_type_cast_new(&cast, SL_INT32, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_resize_new(&resize, 32, 32, SL_INTER_LINEAR, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_rescale_new(&rescale, 1.0 / 255.0, 0.0, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_hwc2chw_new(&hwc2chw, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &cast, 1, "label", NULL, workers), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &resize, 1, "image", NULL, workers), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &rescale, 1, "image", NULL, workers), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &hwc2chw, 1, "image", NULL, workers), SL_OK);
    ck_assert_int_eq(sl_dataset_shuffle(ds, 100), SL_OK);
    ck_assert_int_eq(sl_dataset_batch(ds, 32, 1, workers), SL_OK);
    sl_op_release(cast);
    sl_op_release(resize);
    sl_op_release(rescale);
    sl_op_release(hwc2chw);
    return ds;
}

/* Runs epochs epochs of ds to the end and returns the pool's system
 * allocations so far, read once every thread is joined. */
static uint64_t run_epochs(sl_dataset *ds, int64_t epochs)
{
    sl_iterator_options o;
    sl_iterator *it;
    sl_pool_stats ps;
    sl_row row;
    int64_t e = 0;
    int rc;
    sl_iterator_options_init(&o);
    o.num_epochs = epochs;
    ck_assert_msg(sl_iterator_new(&it, ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
    while ((rc = sl_iterator_next(it, &row)) != SL_END_OF_DATA) {
        ck_assert_msg(rc >= 0, "%s", sl_iterator_last_error(it));
        if (rc == SL_END_OF_EPOCH)
            e++;
        else
            sl_row_clear(&row);
    }
    ck_assert_int_eq(e, epochs);
    sl_iterator_free(it);
    sl_dataset_get_pool_stats(ds, &ps);
    return ps.system_allocs;
}

/* Once a pipeline has warmed up, its blocks come from the cache. Not none
 * at all: when the consumer is descheduled the queues fill further than
 * before, and the new peak takes new blocks (at most what the queues hold,
 * ~80 blocks here); but far from one a sample, which is what the cache
 * saves (limit 0: several calls a sample, one per block). */
START_TEST(test_pipeline_steady_state_no_system_allocs)
{
    sl_dataset *ds = lenet_mnist(2);
    uint64_t warm = run_epochs(ds, 2);
    uint64_t after = run_epochs(ds, 6);
    ck_assert_msg(after - warm <= 6 * N_TRAIN / 10,
                  "%llu system allocations in 6 epochs of %d samples after warming up",
                  (unsigned long long)(after - warm), N_TRAIN);

    /* The counter counts: without a cache every block is a call. */
    sl_dataset_set_pool_idle_limit(ds, 0);
    ck_assert_uint_ge(run_epochs(ds, 2) - after, 2 * N_TRAIN);
    sl_dataset_free(ds);
}
END_TEST

START_TEST(test_iterator_pool_stats)
{
    sl_dataset *ds = lenet_mnist(1), *copy = NULL;
    sl_iterator *it;
    sl_iterator_stats st;
    sl_pool_stats ps;
    sl_row kept, row;
    size_t kept_bytes = 0;
    int rc;
    ck_assert_msg(sl_iterator_new(&it, ds, NULL) == SL_OK, "%s", sl_dataset_last_error(ds));
    ck_assert_int_eq(sl_iterator_next(it, &kept), SL_OK);
    /* A batch's tensors are one pool block each: header and data. */
    for (size_t c = 0; c < kept.ncolumns; c++)
        kept_bytes += sl__pool_block_size(kept.columns[c]);
    while ((rc = sl_iterator_next(it, &row)) == SL_OK)
        sl_row_clear(&row);
    ck_assert_int_eq(rc, SL_END_OF_EPOCH);
    sl_iterator_get_stats(it, &st);
    ck_assert_uint_gt(st.pool.peak_in_use_bytes, 0);
    ck_assert_uint_gt(st.pool.system_allocs, 0);
    ck_assert_uint_eq(st.pool.idle_cap_bytes, (size_t)8 << 20); /* the floor */
    ck_assert_uint_le(st.pool.idle_bytes, st.pool.idle_cap_bytes);
    sl_iterator_free(it);

    /* Every thread joined: what is in use is the row still held. */
    sl_dataset_get_pool_stats(ds, &ps);
    ck_assert_uint_eq(ps.in_use_bytes, kept_bytes);
    ck_assert_uint_ge(ps.peak_in_use_bytes, kept_bytes);
    sl_row_clear(&kept);
    sl_dataset_get_pool_stats(ds, &ps);
    ck_assert_uint_eq(ps.in_use_bytes, 0);
    ck_assert_uint_gt(ps.idle_bytes, 0);

    /* A copy takes the limit: the default (which follows the copy's own
     * peak, 0 so far: the floor), or one set. */
    ck_assert_int_eq(sl_dataset_copy(&copy, ds), SL_OK);
    sl_dataset_get_pool_stats(copy, &ps);
    ck_assert_uint_eq(ps.idle_cap_bytes, (size_t)8 << 20);
    sl_dataset_free(copy);
    /* 0 gives back every idle block. */
    sl_dataset_set_pool_idle_limit(ds, 0);
    sl_dataset_get_pool_stats(ds, &ps);
    ck_assert_uint_eq(ps.idle_bytes, 0);
    ck_assert_uint_eq(ps.system_frees, ps.system_allocs);
    sl_dataset_set_pool_idle_limit(ds, 12345);
    ck_assert_int_eq(sl_dataset_copy(&copy, ds), SL_OK);
    sl_dataset_get_pool_stats(copy, &ps);
    ck_assert_uint_eq(ps.idle_cap_bytes, 12345);
    ck_assert_uint_eq(ps.system_allocs, 0); /* a pool of its own */
    sl_dataset_free(copy);
    sl_dataset_free(ds);
}
END_TEST

static Suite *make_pool_pipeline_suite(void)
{
    Suite *s = suite_create("pool_pipeline");
    TCase *tc = tu_tcase("core", 60);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_pipeline_steady_state_no_system_allocs);
    tcase_add_test(tc, test_iterator_pool_stats);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(make_pool_pipeline_suite());
    int failed;
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
