/* check_pool_pipeline.c: how a pipeline uses its dataset's buffer pool:
 * no call to the system per sample once warmed up, the pool's stats in the
 * iterator's and the dataset's, the dataset's idle limit, and the pool's
 * rule (it holds at most twice its peak in use) on JPEGs of mixed sizes. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "core/pool.h"
#include "pipeline/dataset_impl.h"
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

/* The pool's rule: all it holds (in use + idle) stays within twice its
 * peak in use, or its peak plus the floor for a small pipeline. */
static void assert_within_rule(const sl__pool_stats *s, const char *what)
{
    size_t bound = s->peak_in_use > SL__POOL_IDLE_FLOOR ? 2 * s->peak_in_use
                                                         : s->peak_in_use + SL__POOL_IDLE_FLOOR;
    ck_assert_msg(s->peak_held <= bound, "%s: held %zu bytes at once for a peak in use of %zu",
                  what, s->peak_held, s->peak_in_use);
}

/* An ImageNet-style batch as the fused pipeline makes it, one thread:
 * per sample a decode region of a size that varies (one at a time) and a
 * 224x224x3 float image, then the batch of 32, then the images go back,
 * then the batch. Half the peak (the cap before) is less than one batch,
 * which went back to the system batch after batch; within twice the peak
 * everything is reused from the second batch on. */
START_TEST(test_imagenet_batches_reuse_their_blocks)
{
    enum { BATCH = 32, ROUNDS = 6 };
    const size_t image = (size_t)3 * 224 * 224 * 4;
    void *images[BATCH], *batch, *region;
    sl_pool *pool = sl__pool_new();
    sl__pool_stats s;
    uint64_t warm = 0;
    ck_assert_ptr_nonnull(pool);
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < BATCH; i++) {
            /* 40 KB .. 750 KB, a different mix each round */
            size_t r = (size_t)40000 + (size_t)((i * 7 + round * 3) % 16) * 44000;
            ck_assert_ptr_nonnull(region = sl__pool_alloc(pool, r));
            ck_assert_ptr_nonnull(images[i] = sl__pool_alloc(pool, image));
            sl__pool_free(pool, region);
        }
        ck_assert_ptr_nonnull(batch = sl__pool_alloc(pool, BATCH * image));
        for (int i = 0; i < BATCH; i++)
            sl__pool_free(pool, images[i]);
        sl__pool_free(pool, batch);
        sl__pool_get_stats(pool, &s);
        if (round == 1)
            warm = s.system_allocs;
    }
    ck_assert_msg(s.system_allocs == warm, "%llu system allocations after the second batch",
                  (unsigned long long)(s.system_allocs - warm));
    ck_assert_uint_eq(s.cap_frees, 0);
    assert_within_rule(&s, "imagenet batches");
    sl__pool_release(pool);
}
END_TEST

/* A folder of one class holding JPEGs of the given sizes (w, h pairs),
 * at low quality so that even 4000x3000 encodes quickly. */
static char *jpeg_folder(const char *name, const int (*sizes)[2], int n)
{
    char *root = tu_path(tmpdir, name), *cls = tu_path(root, "a");
    ck_assert_int_eq(mkdir(root, 0777), 0);
    ck_assert_int_eq(mkdir(cls, 0777), 0);
    for (int i = 0; i < n; i++) {
        char file[32];
        char *path;
        uint8_t *px = malloc((size_t)sizes[i][0] * (size_t)sizes[i][1] * 3);
        ck_assert_ptr_nonnull(px);
        tu_fill_image(px, sizes[i][0], sizes[i][1], 3, (uint32_t)i);
        snprintf(file, sizeof file, "img%d.jpg", i);
        path = tu_path(cls, file);
        ck_assert_int_eq(tu_write_jpeg(path, px, sizes[i][0], sizes[i][1], 3, 20), 0);
        free(path);
        free(px);
    }
    free(cls);
    return root;
}

/* The ImageNet train pipeline (decode fused with RandomResizedCrop 224,
 * flip, normalize, HWC2CHW, batch) on an ImageFolder, 2 workers. */
static sl_dataset *imagenet_train(const char *root, int batch)
{
    static const double mean[3] = {0.485 * 255, 0.456 * 255, 0.406 * 255};
    static const double std[3] = {0.229 * 255, 0.224 * 255, 0.225 * 255};
    sl_op *ops[4];
    sl_dataset *ds = tu_image_folder_decoded(root, 2);
    ck_assert_int_eq(sl_op_random_resized_crop_new(&ops[0], 224, 224, SL_RRC_SCALE_MIN,
                                                   SL_RRC_SCALE_MAX, SL_RRC_RATIO_MIN,
                                                   SL_RRC_RATIO_MAX, SL_INTER_LINEAR,
                                                   SL_RRC_ATTEMPTS, NULL, 0),
                     SL_OK);
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&ops[1], 0.5, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_normalize_new(&ops[2], mean, std, 3, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_hwc2chw_new(&ops[3], NULL, 0), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, ops, 4, "image", NULL, 2), SL_OK);
    ck_assert_int_eq(sl_dataset_batch(ds, batch, 1, 2), SL_OK);
    for (int i = 0; i < 4; i++)
        sl_op_release(ops[i]);
    return ds;
}

/* JPEGs from 64x48 to 4000x3000 through the ImageNet train pipeline, four
 * epochs: whatever the threads' timing, the pool held at most twice its
 * peak in use. And a JPEG declaring more pixels than the decode limit is
 * refused, naming the file, before anything is allocated for it. */
START_TEST(test_mixed_sizes_within_rule)
{
    static const int sizes[6][2] = {{64, 48}, {320, 240}, {800, 600},
                                    {1600, 1200}, {2400, 1800}, {4000, 3000}};
    static const int small[1][2] = {{16, 16}};
    char *root = jpeg_folder("mixed", sizes, 6), *big_root = jpeg_folder("big", small, 1);
    char *big = tu_path(big_root, "a/img0.jpg");
    uint8_t *jpg;
    size_t len, i;
    sl__pool_stats s;
    sl_dataset *ds = imagenet_train(root, 2);
    sl_iterator *it;
    sl_row row;
    int rc;

    ck_assert_int_eq(run_epochs(ds, 4) > 0, 1);
    sl__pool_get_stats(ds->pool, &s);
    ck_assert_uint_gt(s.peak_in_use, 0);
    assert_within_rule(&s, "mixed sizes up to 4000x3000");
    sl_dataset_free(ds);

    /* 8200x8200 declared (67,240,000 pixels, over the default 2^26) in a
     * 16x16 file's frame header. */
    ck_assert_int_eq(tu_read_file(big, (void **)&jpg, &len), 0);
    for (i = 2; i + 8 < len && !(jpg[i] == 0xFF && jpg[i + 1] == 0xC0); i++)
        ;
    ck_assert_uint_lt(i + 8, len);
    jpg[i + 5] = 8200 >> 8;
    jpg[i + 6] = 8200 & 0xFF;
    jpg[i + 7] = 8200 >> 8;
    jpg[i + 8] = 8200 & 0xFF;
    ck_assert_int_eq(tu_write_bytes(big, jpg, len, 0), 0);
    ds = imagenet_train(big_root, 1);
    ck_assert_int_eq(sl_iterator_new(&it, ds, NULL), SL_OK);
    rc = sl_iterator_next(it, &row);
    ck_assert_int_eq(rc, SL_EFORMAT);
    ck_assert_msg(strstr(sl_iterator_last_error(it), big) &&
                      strstr(sl_iterator_last_error(it), "8200x8200") &&
                      strstr(sl_iterator_last_error(it), "max_pixels = 67108864"),
                  "%s", sl_iterator_last_error(it));
    sl_iterator_free(it);
    sl__pool_get_stats(ds->pool, &s);
    ck_assert_uint_lt(s.peak_held, (size_t)16 << 20); /* no 200 MB image */
    sl_dataset_free(ds);
    free(jpg);
    free(big);
    free(big_root);
    free(root);
}
END_TEST

static Suite *make_pool_pipeline_suite(void)
{
    Suite *s = suite_create("pool_pipeline");
    TCase *tc = tu_tcase("core", 60);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_pipeline_steady_state_no_system_allocs);
    tcase_add_test(tc, test_iterator_pool_stats);
    tcase_add_test(tc, test_imagenet_batches_reuse_their_blocks);
    tcase_add_test(tc, test_mixed_sizes_within_rule);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(make_pool_pipeline_suite);
}
