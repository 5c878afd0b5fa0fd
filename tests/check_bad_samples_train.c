/* check_bad_samples_train.c: an ImageFolder with bad samples spread
 * through it (JPEGs that are garbage, cut mid-scan, empty, only a header,
 * over the decode limit, of a shape a map refuses, and a file gone before
 * it is read) trains LeNet5 to the end under skip and replace, on one
 * shard and on each of two: every epoch has all its steps (the two shards
 * as many as each other), each bad sample of a shard's epoch is reported
 * once, and one worker (host-fed) and two (sunk) train to the same loss.
 * Also a source that reads the files itself (no map) under both modes, and
 * a folder of nothing but broken JPEGs, an error rather than a hang. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "sluice/sluice.h"
#include "pipeline/sampler.h"
#include "testutil.h"

Suite *make_bad_samples_train_suite(void);

#define CLASSES 4
#define PER_CLASS 10
#define N (CLASSES * PER_CLASS)
#define BATCH 4
#define EPOCHS 2

/* Samples are numbered class * PER_CLASS + j (folders and files sorted:
 * tu_make_image_folder names them class_<k>/img_<j>.jpg, j < 10). */
static const int64_t bad_samples[] = {3, 9, 14, 17, 22, 31, 38};
#define NBAD (sizeof bad_samples / sizeof bad_samples[0])

static char *root;

static char *file_of(int64_t i)
{
    char name[64];
    snprintf(name, sizeof name, "class_%d/img_%d.jpg", (int)(i / PER_CLASS),
             (int)(i % PER_CLASS));
    return tu_path(root, name);
}

static void write_jpeg(int64_t i, int side)
{
    uint8_t *px = malloc((size_t)side * side * 3);
    char *path = file_of(i);
    ck_assert_ptr_nonnull(px);
    tu_fill_image(px, side, side, 3, (uint32_t)i);
    ck_assert_int_eq(tu_write_jpeg(path, px, side, side, 3, 90), 0);
    free(px);
    free(path);
}

/* The first n bytes of a good 24x24 JPEG, as file i. */
static void write_cut(int64_t i, size_t keep_of_1000)
{
    uint8_t px[24 * 24 * 3], *jpg;
    size_t n;
    char *path = file_of(i);
    tu_fill_image(px, 24, 24, 3, (uint32_t)i);
    ck_assert_int_eq(tu_encode_jpeg(&jpg, &n, px, 24, 24, 3, 90), 0);
    ck_assert_int_eq(tu_write_bytes(path, jpg, n * keep_of_1000 / 1000, 0), 0);
    free(jpg);
    free(path);
}

static void setup(void)
{
    char *path;
    root = tu_mkdtemp();
    ck_assert_ptr_nonnull(root);
    ck_assert_int_eq(tu_make_image_folder(root, CLASSES, PER_CLASS, 24, 24), 0);
    /* The bad ones, one of each kind. */
    path = file_of(3);
    ck_assert_int_eq(tu_write_bytes(path, "not a JPEG at all", 17, 0), 0);
    free(path);
    write_cut(9, 600);           /* cut mid-scan */
    /* 14 goes before it is read: see run_training */
    path = file_of(17);
    ck_assert_int_eq(tu_write_bytes(path, "", 0, 0), 0);
    free(path);
    write_jpeg(22, 48);          /* 2304 pixels, over the decode limit of 1000 */
    write_cut(31, 150);          /* little more than the header */
    write_jpeg(38, 20);          /* 20x20: the `need 24` op refuses it */
}

static void teardown(void)
{
    tu_rmtree(root);
    free(root);
}

/* A custom op standing for a map that refuses a wrong shape. */
static int need24_fn(void *user, const sl_tensor *in, sl_tensor **out, uint64_t seed,
                     char *errbuf, size_t errlen)
{
    (void)user;
    (void)seed;
    if (sl_tensor_shape(in)[1] != 24) {
        snprintf(errbuf, errlen, "expected a 24-pixel wide image, got %lld",
                 (long long)sl_tensor_shape(in)[1]);
        return SL_ESHAPE;
    }
    *out = sl_tensor_retain((sl_tensor *)in);
    return SL_OK;
}

/* The folder as LeNet's input: grayscale decode (at most 1000 pixels), the
 * 24-pixel check, resize 32x32, rescale 1/255, CHW; batches of 4. */
static sl_dataset *folder(int64_t shards, int64_t shard, int workers, sl_error_samples mode,
                          sl_bad_sample_fn report, void *user)
{
    sl_image_folder_options o;
    sl_error_samples_options eo;
    sl_op_custom_options co;
    sl_op *ops[5];
    char err[128];
    sl_dataset *ds;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_image_folder_options_init(&o);
    o.dataset_dir = root;
    o.sampler.seed = 3;
    o.sampler.num_shards = shards;
    o.sampler.shard_id = shard;
    ck_assert_msg(sl_dataset_image_folder(ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
    sl_dataset_set_seed(ds, 3);
    sl_op_custom_options_init(&co);
    co.name = "need 24";
    co.fn = need24_fn;
    ck_assert_int_eq(sl_op_decode_new_limited(&ops[0], 0, 1000, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_custom_new(&ops[1], &co, err, sizeof err), SL_OK);
    ck_assert_int_eq(sl_op_resize_new(&ops[2], 32, 32, SL_INTER_LINEAR, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_rescale_new(&ops[3], 1.0 / 255.0, 0.0, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_hwc2chw_new(&ops[4], NULL, 0), SL_OK);
    ck_assert_msg(sl_dataset_map(ds, ops, 5, "image", NULL, workers) == SL_OK, "%s",
                  sl_dataset_last_error(ds));
    for (int k = 0; k < 5; k++)
        sl_op_release(ops[k]);
    ck_assert_int_eq(sl_dataset_batch(ds, BATCH, 1, workers), SL_OK);
    sl_error_samples_options_init(&eo);
    eo.mode = mode;
    eo.max_bad_samples = NBAD;
    eo.report = report;
    eo.report_user = user;
    ck_assert_int_eq(sl_dataset_set_error_samples(ds, &eo), SL_OK);
    return ds;
}

static int is_bad(int64_t i)
{
    for (size_t k = 0; k < NBAD; k++)
        if (bad_samples[k] == i)
            return 1;
    return 0;
}

/* The bad samples in pass `epoch` of a shard. */
static int64_t expected_bad(int64_t shards, int64_t shard, int64_t epoch)
{
    sl_sampler_options s;
    int64_t n, count = 0, order[N];
    sl_sampler_options_init(&s);
    s.seed = 3;
    s.num_shards = shards;
    s.shard_id = shard;
    n = sl__sampler_size(&s, N);
    ck_assert_int_eq(sl__sampler_order(&s, N, epoch, order), SL_OK);
    for (int64_t i = 0; i < n; i++)
        count += is_bad(order[i]);
    return count;
}

/* What one training gave. */
typedef struct training {
    int64_t steps[EPOCHS + 1]; /* steps per epoch, from the epoch_end callbacks */
    float loss[EPOCHS + 1];    /* the loss at each epoch's end */
    int64_t reported, replaced, sample_named;
} training;

static int on_epoch_end(void *self, const sl_train_info *info)
{
    training *t = self;
    ck_assert_int_le(info->epoch, EPOCHS);
    t->steps[info->epoch] = info->step_in_epoch;
    t->loss[info->epoch] = info->loss;
    return 0;
}

static void on_bad(void *user, const sl_bad_sample *b)
{
    training *t = user;
    char *path = file_of(b->index);
    ck_assert_msg(is_bad(b->index), "sample %lld reported, not a bad one", (long long)b->index);
    t->reported++;
    t->replaced += b->replaced;
    t->sample_named += strcmp(b->sample, path) == 0;
    if (b->replaced)
        ck_assert(!is_bad(b->stand_in));
    free(path);
}

static void run_training(int64_t shards, int64_t shard, int workers, sl_error_samples mode,
                         training *t)
{
    sl_model_options mo;
    sl_train_options to;
    sl_callback cb, *cbs[1] = {&cb};
    sl_model *m = NULL;
    char err[512], *gone = file_of(14);
    sl_dataset *ds;
    int rc;
    memset(t, 0, sizeof *t);
    /* The file is listed when the dataset is made, then goes. */
    write_jpeg(14, 24);
    ds = folder(shards, shard, workers, mode, on_bad, t);
    ck_assert_int_eq(unlink(gone), 0);
    free(gone);
    sl_model_options_init(&mo);
    mo.network.batch = BATCH;
    mo.context.threads = 1;
    ck_assert_msg(sl_model_new(&m, &mo, err, sizeof err) == SL_OK, "%s", err);
    memset(&cb, 0, sizeof cb);
    cb.self = t;
    cb.epoch_end = on_epoch_end;
    sl_train_options_init(&to);
    to.dataset_sink_mode = workers > 1; /* host-fed with one worker, sunk with two */
    rc = sl_model_train_opts(m, EPOCHS, ds, cbs, 1, &to);
    ck_assert_msg(rc == SL_OK, "%s", sl_model_last_error(m));
    ck_assert_int_eq(sl_model_global_step(m), t->steps[1] + t->steps[2]);
    sl_model_free(m);
    sl_dataset_free(ds);
}

START_TEST(test_trains_to_the_end)
{
    const sl_error_samples mode = _i ? SL_ERROR_SAMPLES_REPLACE : SL_ERROR_SAMPLES_SKIP;
    for (int64_t shards = 1; shards <= 2; shards++) {
        int64_t per_epoch = N / shards / BATCH;
        for (int64_t shard = 0; shard < shards; shard++) {
            int64_t expect = expected_bad(shards, shard, 0) + expected_bad(shards, shard, 1);
            training one, two;
            run_training(shards, shard, 1, mode, &one);
            run_training(shards, shard, 2, mode, &two);
            for (int e = 1; e <= EPOCHS; e++) {
                ck_assert_int_eq(one.steps[e], per_epoch);
                ck_assert_int_eq(two.steps[e], per_epoch);
                ck_assert_msg(one.loss[e] == two.loss[e],
                              "shard %lld/%lld epoch %d: loss %.9g with one worker, %.9g with two",
                              (long long)shard, (long long)shards, e, (double)one.loss[e],
                              (double)two.loss[e]);
            }
            ck_assert_int_gt(expect, 0);
            ck_assert_int_eq(one.reported, expect);
            ck_assert_int_eq(two.reported, expect);
            ck_assert_int_eq(one.sample_named, expect);
            ck_assert_int_eq(one.replaced, mode == SL_ERROR_SAMPLES_REPLACE ? expect : 0);
        }
    }
}
END_TEST

/* No map: the source's own thread reads the files, two of which go
 * before they are read. Skip ends each epoch with their stand-ins; replace
 * puts them in place; both yield every row and count the two. */
START_TEST(test_source_reads)
{
    char *a = file_of(5), *b = file_of(26);
    for (int m = 0; m < 2; m++) {
        sl_image_folder_options o;
        sl_error_samples_options eo;
        sl_iterator_options io;
        sl_iterator_stats stats;
        sl_iterator *it;
        sl_row row;
        int64_t rows = 0;
        int rc;
        sl_dataset *ds;
        ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
        write_jpeg(5, 24);
        write_jpeg(26, 24);
        sl_image_folder_options_init(&o);
        o.dataset_dir = root;
        ck_assert_int_eq(sl_dataset_image_folder(ds, &o), SL_OK);
        sl_error_samples_options_init(&eo);
        eo.mode = m ? SL_ERROR_SAMPLES_REPLACE : SL_ERROR_SAMPLES_SKIP;
        eo.max_bad_samples = 2;
        ck_assert_int_eq(sl_dataset_set_error_samples(ds, &eo), SL_OK);
        ck_assert_int_eq(unlink(a), 0);
        ck_assert_int_eq(unlink(b), 0);
        sl_iterator_options_init(&io);
        io.num_epochs = 2;
        io.timeout_ms = 60000;
        ck_assert_int_eq(sl_iterator_new(&it, ds, &io), SL_OK);
        while ((rc = sl_iterator_next(it, &row)) == SL_OK || rc == SL_END_OF_EPOCH) {
            if (rc == SL_OK) {
                rows++;
                sl_row_clear(&row);
            }
        }
        ck_assert_msg(rc == SL_END_OF_DATA, "%s", sl_iterator_last_error(it));
        ck_assert_int_eq(rows, 2 * N);
        sl_iterator_get_stats(it, &stats);
        ck_assert_uint_eq((m ? stats.samples_replaced : stats.samples_skipped), 4);
        sl_iterator_free(it);
        sl_dataset_free(ds);
    }
    free(a);
    free(b);
}
END_TEST

/* A folder of nothing but broken JPEGs: no stand-in can be found, which is
 * an error naming a bad sample and the last one tried, not a hang. */
START_TEST(test_all_bad_is_an_error)
{
    for (int64_t i = 0; i < N; i++) {
        char *path = file_of(i);
        ck_assert_int_eq(tu_write_bytes(path, "broken", 6, 0), 0);
        free(path);
    }
    for (int m = 0; m < 2; m++) {
        const sl_error_samples mode = m ? SL_ERROR_SAMPLES_REPLACE : SL_ERROR_SAMPLES_SKIP;
        sl_error_samples_options eo;
        sl_iterator_options io;
        sl_iterator *it;
        sl_row row;
        sl_dataset *ds = folder(1, 0, 2, mode, NULL, NULL);
        sl_error_samples_options_init(&eo);
        eo.mode = mode;
        eo.max_bad_fraction = 1.0;
        ck_assert_int_eq(sl_dataset_set_error_samples(ds, &eo), SL_OK);
        sl_iterator_options_init(&io);
        io.timeout_ms = 60000;
        ck_assert_int_eq(sl_iterator_new(&it, ds, &io), SL_OK);
        ck_assert_int_eq(sl_iterator_next(it, &row), SL_EFORMAT);
        ck_assert_msg(strstr(sl_iterator_last_error(it), "no stand-in") != NULL, "%s",
                      sl_iterator_last_error(it));
        ck_assert_ptr_nonnull(strstr(sl_iterator_last_error(it), "not a JPEG"));
        ck_assert_ptr_nonnull(strstr(sl_iterator_last_error(it), root));
        sl_iterator_free(it);
        sl_dataset_free(ds);
    }
}
END_TEST

Suite *make_bad_samples_train_suite(void)
{
    Suite *s = suite_create("bad_samples_train");
    TCase *tc = tu_tcase("core", 300);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_trains_to_the_end, 0, 2);
    tcase_add_test(tc, test_source_reads);
    tcase_add_test(tc, test_all_bad_is_an_error);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(make_bad_samples_train_suite);
}
