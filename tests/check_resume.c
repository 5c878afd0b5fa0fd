/* check_resume.c: starting a pipeline mid-run (sl_iterator_options'
 * start_epoch and start_rows), the ground of exact resume. From every start
 * point the rows must be exactly those an iterator started at the beginning
 * hands out from there (same order, same random draws), whatever the
 * workers; the rows skipped must never reach the maps; and what cannot be
 * placed (a repeat, a start past the last epoch) is refused. */
#include <check.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"
#include "tests/testutil.h"

Suite *make_resume_suite(void);

#define N_TRAIN 300   /* 18 batches of 16 and 12 rows the batch drops */
#define BATCH 16
#define PER_EPOCH (N_TRAIN / BATCH)
#define EPOCHS 3
#define SHUFFLE 64
#define IT_TIMEOUT_MS 60000 /* a hang becomes SL_ETIMEDOUT, not a stuck test */

static char *tmpdir;

static void setup(void)
{
    tmpdir = tu_mkdtemp();
    ck_assert_ptr_nonnull(tmpdir);
    ck_assert_int_eq(tu_make_mnist(tmpdir, N_TRAIN, 1, 0), 0);
}

static void teardown(void)
{
    tu_rmtree(tmpdir);
    free(tmpdir);
}

/* An op that counts the samples it sees and passes them through (uint8
 * images, copied). */
static int count_copy(void *user, const sl_tensor *in, sl_tensor **out, uint64_t seed,
                      char *errbuf, size_t errlen)
{
    (void)seed;
    (void)errbuf;
    (void)errlen;
    atomic_fetch_add((atomic_int *)user, 1);
    if (sl_tensor_new(out, sl_tensor_dtype(in), sl_tensor_ndim(in), sl_tensor_shape(in)) != SL_OK)
        return SL_ENOMEM;
    memcpy(sl_tensor_data(*out), sl_tensor_data(in), sl_tensor_nbytes(in));
    return SL_OK;
}

/* The seeds' kind of training pipeline: MNIST in shuffled order, random
 * crop and flip (seeded per sample and epoch), a counting op, a shuffle
 * buffer, batches of 16 dropping the remainder. */
static sl_dataset *pipeline(int workers, atomic_int *calls)
{
    sl_mnist_options o;
    sl_op_custom_options co;
    sl_op *ops[3];
    char err[256];
    sl_dataset *ds = sl_dataset_new();
    ck_assert_ptr_nonnull(ds);
    sl_mnist_options_init(&o);
    o.dataset_dir = tmpdir;
    o.usage = SL_MNIST_TRAIN;
    ck_assert_msg(sl_dataset_mnist(ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
    sl_dataset_set_seed(ds, 7);
    sl_op_custom_options_init(&co);
    co.name = "count";
    co.fn = count_copy;
    co.user = calls;
    ck_assert_int_eq(sl_op_random_crop_new(&ops[0], 24, 24, 2), SL_OK);
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&ops[1], 0.5), SL_OK);
    ck_assert_msg(sl_op_custom_new(&ops[2], &co, err, sizeof err) == SL_OK, "%s", err);
    ck_assert_int_eq(sl_dataset_map(ds, ops, 3, "image", NULL, workers), SL_OK);
    for (int i = 0; i < 3; i++)
        sl_op_release(ops[i]);
    ck_assert_int_eq(sl_dataset_shuffle(ds, SHUFFLE), SL_OK);
    ck_assert_int_eq(sl_dataset_batch(ds, BATCH, 1, workers), SL_OK);
    return ds;
}

/* A batch's fingerprint: FNV-1a over its image and label bytes. */
static uint64_t fingerprint(const sl_row *row)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t c = 0; c < row->ncolumns; c++) {
        const uint8_t *p = sl_tensor_data(row->columns[c]);
        for (size_t i = 0; i < sl_tensor_nbytes(row->columns[c]); i++)
            h = (h ^ p[i]) * 1099511628211ull;
    }
    return h;
}

/* Runs ds from (epoch, rows) to the end: the batches' fingerprints in
 * order, with 0 for each end of epoch. Returns how many were written. */
static size_t run_from(sl_dataset *ds, int64_t epoch, int64_t rows, uint64_t *out, size_t cap)
{
    sl_iterator_options o;
    sl_iterator *it;
    sl_row row;
    size_t n = 0;
    int rc;
    sl_iterator_options_init(&o);
    o.num_epochs = EPOCHS;
    o.timeout_ms = IT_TIMEOUT_MS;
    o.start_epoch = epoch;
    o.start_rows = rows;
    ck_assert_msg(sl_iterator_new(&it, ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
    while ((rc = sl_iterator_next(it, &row)) == SL_OK || rc == SL_END_OF_EPOCH) {
        ck_assert_uint_lt(n, cap);
        out[n++] = rc == SL_OK ? fingerprint(&row) : 0;
        if (rc == SL_OK)
            sl_row_clear(&row);
    }
    ck_assert_msg(rc == SL_END_OF_DATA, "%s", sl_iterator_last_error(it));
    sl_iterator_free(it);
    return n;
}

START_TEST(test_start_matches_straight_run)
{
    /* Every start point, with 1, 2 and 4 workers, continues the straight
     * run (1 worker, from the beginning) exactly. */
    enum { CAP = EPOCHS * (PER_EPOCH + 1) };
    static const int64_t starts[][2] = {{0, 0}, {0, 1}, {0, 5}, {1, 0},
                                        {1, 7}, {2, PER_EPOCH - 1}, {2, PER_EPOCH}};
    uint64_t straight[CAP], got[CAP];
    atomic_int calls = 0;
    sl_dataset *ds = pipeline(1, &calls);
    size_t n = run_from(ds, 0, 0, straight, CAP);
    ck_assert_uint_eq(n, CAP);
    sl_dataset_free(ds);
    for (int workers = 1; workers <= 4; workers *= 2) {
        ds = pipeline(workers, &calls);
        for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++) {
            int64_t e = starts[s][0], r = starts[s][1];
            size_t from = (size_t)(e * (PER_EPOCH + 1) + r);
            size_t m = run_from(ds, e, r, got, CAP);
            ck_assert_msg(m == CAP - from, "workers %d, start (%lld, %lld): %zu entries, not %zu",
                          workers, (long long)e, (long long)r, m, CAP - from);
            for (size_t i = 0; i < m; i++)
                ck_assert_msg(got[i] == straight[from + i],
                              "workers %d, start (%lld, %lld): entry %zu differs", workers,
                              (long long)e, (long long)r, i);
        }
        sl_dataset_free(ds);
    }
}
END_TEST

START_TEST(test_skipped_rows_never_mapped)
{
    /* Rows skipped are dropped before the maps: the counting op sees only
     * the rows of the batches handed out. */
    uint64_t got[EPOCHS * (PER_EPOCH + 1)];
    atomic_int calls = 0;
    sl_dataset *ds = pipeline(2, &calls);
    size_t n = run_from(ds, 1, 10, got, sizeof got / sizeof got[0]);
    ck_assert_uint_eq(n, (PER_EPOCH - 10 + 1) + (PER_EPOCH + 1));
    ck_assert_int_eq(atomic_load(&calls), (PER_EPOCH - 10 + PER_EPOCH) * BATCH);
    sl_dataset_free(ds);
}
END_TEST

START_TEST(test_start_past_epoch_end)
{
    /* More rows than the epoch holds: that epoch ends at once, the next
     * ones come whole. */
    uint64_t straight[EPOCHS * (PER_EPOCH + 1)], got[EPOCHS * (PER_EPOCH + 1)];
    atomic_int calls = 0;
    sl_dataset *ds = pipeline(2, &calls);
    size_t n = run_from(ds, 0, 0, straight, sizeof straight / sizeof straight[0]);
    size_t m = run_from(ds, 1, 1000, got, sizeof got / sizeof got[0]);
    ck_assert_uint_eq(m, 1 + PER_EPOCH + 1);
    ck_assert(got[0] == 0);
    ck_assert(memcmp(got + 1, straight + n - (PER_EPOCH + 1),
                     (PER_EPOCH + 1) * sizeof got[0]) == 0);
    sl_dataset_free(ds);
}
END_TEST

START_TEST(test_bad_starts_refused)
{
    atomic_int calls = 0;
    sl_dataset *ds = pipeline(1, &calls);
    sl_iterator_options o;
    sl_iterator *it = NULL;
    sl_iterator_options_init(&o);
    o.num_epochs = 2;
    o.start_epoch = 2;
    ck_assert_int_eq(sl_iterator_new(&it, ds, &o), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds), "start_epoch"));
    o.start_epoch = 0;
    o.start_rows = -1;
    ck_assert_int_eq(sl_iterator_new(&it, ds, &o), SL_EINVAL);
    /* A repeat's passes are not the iterator's epochs. */
    ck_assert_int_eq(sl_dataset_repeat(ds, 2), SL_OK);
    o.start_rows = 3;
    ck_assert_int_eq(sl_iterator_new(&it, ds, &o), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_dataset_last_error(ds), "repeat"));
    ck_assert_ptr_null(it);
    /* From the beginning, a repeat is fine. */
    o.start_rows = 0;
    ck_assert_int_eq(sl_iterator_new(&it, ds, &o), SL_OK);
    sl_iterator_free(it);
    sl_dataset_free(ds);
}
END_TEST

Suite *make_resume_suite(void)
{
    Suite *s = suite_create("resume");
    TCase *tc = tcase_create("iterator start");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_start_matches_straight_run);
    tcase_add_test(tc, test_skipped_rows_never_mapped);
    tcase_add_test(tc, test_start_past_epoch_end);
    tcase_add_test(tc, test_bad_starts_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(make_resume_suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
