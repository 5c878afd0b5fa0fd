/* check_slices.c: the two sources over the caller's data. Slices: rows in
 * order, shards that partition them, seeded shuffling, rows that are
 * read-only views inside the caller's arrays (no copy), the caller's
 * release called once, after the last row is gone, and the refusals.
 * Generator: order, shards, seeded shuffling, its function's error naming
 * the sample, a row unlike its spec, in_order reading one call at a time
 * in order with a parallel stage after it, and release once. */
#include <check.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "sluice/sluice.h"

#define IT_TIMEOUT_MS 60000
#define N 12
#define HAS(msg, part) ck_assert_msg(strstr((msg), (part)) != NULL, "no \"%s\" in: %s", (part), (msg))

static sl_sampler_options sampler(int shuffle, uint64_t seed, int64_t shards, int64_t id)
{
    sl_sampler_options s;
    sl_sampler_options_init(&s);
    s.shuffle = shuffle;
    s.seed = seed;
    s.num_shards = shards;
    s.shard_id = id;
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

/* Reads one epoch; ids[k] = the int32 at column 0's first element. Returns
 * the number of rows. */
static int epoch_ids(sl_dataset *ds, int32_t *ids, int max)
{
    sl_iterator *it = start(ds, 1);
    sl_row row;
    int n = 0, rc;
    while ((rc = sl_iterator_next(it, &row)) == SL_OK) {
        ck_assert_int_lt(n, max);
        ids[n++] = *(const int32_t *)sl_tensor_data(row.columns[0]);
        sl_row_clear(&row);
    }
    ck_assert_msg(rc == SL_END_OF_EPOCH || rc == SL_END_OF_DATA, "next: %s (%s)",
                  sl_status_name(rc), sl_iterator_last_error(it));
    sl_iterator_free(it);
    return n;
}

/* --- slices ---------------------------------------------------------------------- */

typedef struct arrays {
    int32_t x[N][3]; /* row i: i, 100 + i, 200 + i */
    float y[N];
    atomic_int released;
} arrays;

static void arrays_fill(arrays *a)
{
    for (int i = 0; i < N; i++) {
        a->x[i][0] = i;
        a->x[i][1] = 100 + i;
        a->x[i][2] = 200 + i;
        a->y[i] = 0.5f * (float)i;
    }
    atomic_init(&a->released, 0);
}

static void arrays_release(void *user)
{
    atomic_fetch_add(&((arrays *)user)->released, 1);
}

static int try_slices(sl_dataset **out, arrays *a, int64_t y_rows, const char *y_name,
                      const sl_sampler_options *s)
{
    sl_slices_column cols[2] = {
        {"x", SL_INT32, 2, {N, 3}, a->x},
        {y_name, SL_FLOAT32, 1, {y_rows}, a->y},
    };
    sl_slices_options o;
    ck_assert_int_eq(sl_dataset_new(out), SL_OK);
    sl_slices_options_init(&o);
    o.columns = cols;
    o.ncols = 2;
    o.release = arrays_release;
    o.user = a;
    if (s)
        o.sampler = *s;
    return sl_dataset_slices(*out, &o);
}

static sl_dataset *slices_ds(arrays *a, const sl_sampler_options *s)
{
    sl_dataset *ds;
    int rc = try_slices(&ds, a, N, "y", s);
    ck_assert_msg(rc == SL_OK, "sl_dataset_slices: %s (%s)", sl_status_name(rc),
                  sl_dataset_last_error(ds));
    return ds;
}

START_TEST(test_slices_rows_are_views_in_order)
{
    arrays a;
    sl_sampler_options s = sampler(0, 0, 1, 0);
    sl_dataset *ds;
    sl_iterator *it;
    sl_tensor_spec spec;
    sl_row row;
    int i = 0, rc;
    arrays_fill(&a);
    ds = slices_ds(&a, &s);
    ck_assert_int_eq(sl_dataset_column_spec(ds, 0, &spec), SL_OK);
    ck_assert_int_eq(spec.dtype, SL_INT32);
    ck_assert_int_eq(spec.ndim, 1);
    ck_assert_int_eq(spec.shape[0], 3);
    ck_assert_int_eq(sl_dataset_column_spec(ds, 1, &spec), SL_OK);
    ck_assert_int_eq(spec.ndim, 0);
    it = start(ds, 1);
    while ((rc = sl_iterator_next(it, &row)) == SL_OK) {
        ck_assert_int_lt(i, N);
        /* No copy: the row's data is the caller's row i, read-only. */
        ck_assert_ptr_eq(sl_tensor_data(row.columns[0]), a.x[i]);
        ck_assert_ptr_eq(sl_tensor_data(row.columns[1]), &a.y[i]);
        ck_assert_int_eq(sl_tensor_writable(row.columns[0]), 0);
        ck_assert_int_eq(sl_tensor_ndim(row.columns[0]), 1);
        ck_assert_int_eq(sl_tensor_shape(row.columns[0])[0], 3);
        ck_assert_int_eq(sl_tensor_ndim(row.columns[1]), 0);
        ck_assert_int_eq(((const int32_t *)sl_tensor_data(row.columns[0]))[2], 200 + i);
        sl_row_clear(&row);
        i++;
    }
    ck_assert_int_eq(rc, SL_END_OF_EPOCH);
    ck_assert_int_eq(i, N);
    sl_iterator_free(it);
    sl_dataset_free(ds);
    ck_assert_int_eq(atomic_load(&a.released), 1);
}
END_TEST

START_TEST(test_slices_release_after_last_row)
{
    arrays a;
    sl_sampler_options s = sampler(0, 0, 1, 0);
    sl_dataset *ds, *copy;
    sl_iterator *it;
    sl_row row;
    sl_tensor *kept;
    arrays_fill(&a);
    ds = slices_ds(&a, &s);
    ck_assert_int_eq(sl_dataset_copy(&copy, ds), SL_OK);
    it = start(ds, 1);
    ck_assert_int_eq(sl_iterator_next(it, &row), SL_OK);
    kept = sl_tensor_retain(row.columns[1]);
    sl_row_clear(&row);
    sl_iterator_free(it);
    sl_dataset_free(ds);
    ck_assert_int_eq(atomic_load(&a.released), 0); /* the copy shares the source */
    sl_dataset_free(copy);
    ck_assert_int_eq(atomic_load(&a.released), 0); /* a row still uses the arrays */
    ck_assert_float_eq(*(const float *)sl_tensor_data(kept), 0.0f);
    sl_tensor_release(kept);
    ck_assert_int_eq(atomic_load(&a.released), 1);
}
END_TEST

START_TEST(test_slices_shards_and_shuffle)
{
    arrays a;
    int32_t ids[N], again[N];
    int seen[N] = {0}, n, total = 0;
    arrays_fill(&a);
    for (int64_t shard = 0; shard < 3; shard++) {
        sl_sampler_options s = sampler(0, 0, 3, shard);
        sl_dataset *ds = slices_ds(&a, &s);
        n = epoch_ids(ds, ids, N);
        ck_assert_int_eq(n, N / 3);
        for (int k = 0; k < n; k++) {
            ck_assert_int_eq(ids[k], k * 3 + (int)shard); /* round robin, as the others */
            seen[ids[k]]++;
        }
        total += n;
        sl_dataset_free(ds);
    }
    ck_assert_int_eq(total, N);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(seen[i], 1);
    {
        sl_sampler_options s = sampler(1, 42, 1, 0);
        sl_dataset *ds = slices_ds(&a, &s), *ds2 = slices_ds(&a, &s);
        int in_order = 1, sum = 0;
        ck_assert_int_eq(epoch_ids(ds, ids, N), N);
        ck_assert_int_eq(epoch_ids(ds2, again, N), N);
        for (int i = 0; i < N; i++) {
            ck_assert_int_eq(ids[i], again[i]); /* the seed fixes the order */
            in_order &= ids[i] == i;
            sum += ids[i];
        }
        ck_assert_int_eq(sum, N * (N - 1) / 2);
        ck_assert_msg(!in_order, "seed 42 left the rows in order");
        sl_dataset_free(ds);
        sl_dataset_free(ds2);
    }
}
END_TEST

START_TEST(test_slices_refusals)
{
    arrays a;
    sl_dataset *ds;
    sl_slices_options o;
    arrays_fill(&a);
    ck_assert_int_eq(try_slices(&ds, &a, N - 1, "y", NULL), SL_EINVAL);
    HAS(sl_dataset_last_error(ds), "slices: column 'y' has 11 rows, shape (11,), but column "
                                   "'x' has 12, shape (12, 3)");
    sl_dataset_free(ds);
    ck_assert_int_eq(try_slices(&ds, &a, N, "x", NULL), SL_EINVAL);
    HAS(sl_dataset_last_error(ds), "two columns are named 'x'");
    sl_dataset_free(ds);
    ck_assert_int_eq(atomic_load(&a.released), 0); /* refused: the caller keeps its arrays */
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_slices_options_init(&o);
    ck_assert_int_eq(sl_dataset_slices(ds, &o), SL_EINVAL);
    HAS(sl_dataset_last_error(ds), "no columns given");
    memset(&o, 0, sizeof o);
    ck_assert_int_eq(sl_dataset_slices(ds, &o), SL_EINVAL);
    HAS(sl_dataset_last_error(ds), "sl_slices_options_init");
    sl_slices_options_init(&o);
    o.sampler.size = 0;
    ck_assert_int_eq(sl_dataset_slices(ds, &o), SL_EINVAL);
    HAS(sl_dataset_last_error(ds), "sl_slices_options.sampler");
    sl_dataset_free(ds);
}
END_TEST

/* --- generator ------------------------------------------------------------------- */

typedef struct gen {
    int fail_at;             /* this index fails (-1: none) */
    int wrong_dtype_at;      /* this index's column 0 is float32 (-1: none) */
    atomic_int in_flight, max_in_flight, calls, released;
    int64_t order[64];       /* the indices asked for, in call order */
} gen;

static int gen_read(void *user, int64_t index, sl_tensor **cols, size_t ncols, char *msg,
                    size_t msglen)
{
    gen *g = user;
    int64_t two = 2;
    int now = atomic_fetch_add(&g->in_flight, 1) + 1, max = atomic_load(&g->max_in_flight);
    int call = atomic_fetch_add(&g->calls, 1);
    int rc = 0;
    while (now > max && !atomic_compare_exchange_weak(&g->max_in_flight, &max, now))
        ;
    if (call < 64)
        g->order[call] = index;
    ck_assert_uint_eq(ncols, 2);
    if (index == g->fail_at) {
        snprintf(msg, msglen, "ValueError: no sample %lld here", (long long)index);
        rc = -1;
    } else {
        ck_assert_int_eq(sl_tensor_new(&cols[0], index == g->wrong_dtype_at ? SL_FLOAT32
                                                                           : SL_INT32,
                                       0, NULL), SL_OK);
        ck_assert_int_eq(sl_tensor_new(&cols[1], SL_UINT8, 1, &two), SL_OK);
        if (index != g->wrong_dtype_at)
            *(int32_t *)sl_tensor_data(cols[0]) = (int32_t)index;
        ((uint8_t *)sl_tensor_data(cols[1]))[1] = (uint8_t)(index + 1);
    }
    atomic_fetch_sub(&g->in_flight, 1);
    return rc;
}

static void gen_release(void *user)
{
    atomic_fetch_add(&((gen *)user)->released, 1);
}

static void gen_init(gen *g)
{
    memset(g, 0, sizeof *g);
    g->fail_at = g->wrong_dtype_at = -1;
}

static int try_gen(sl_dataset **out, gen *g, int in_order, const sl_sampler_options *s)
{
    static const char *const names[] = {"id", "pair"};
    static const sl_tensor_spec specs[] = {{SL_INT32, 0, {0}}, {SL_UINT8, 1, {-1}}};
    sl_generator_options o;
    ck_assert_int_eq(sl_dataset_new(out), SL_OK);
    sl_generator_options_init(&o);
    o.num_rows = N;
    o.ncols = 2;
    o.column_names = names;
    o.column_specs = specs;
    o.read = gen_read;
    o.user = g;
    o.release = gen_release;
    o.in_order = in_order;
    if (s)
        o.sampler = *s;
    return sl_dataset_generator(*out, &o);
}

static sl_dataset *gen_ds(gen *g, int in_order, const sl_sampler_options *s)
{
    sl_dataset *ds;
    int rc = try_gen(&ds, g, in_order, s);
    ck_assert_msg(rc == SL_OK, "sl_dataset_generator: %s (%s)", sl_status_name(rc),
                  sl_dataset_last_error(ds));
    return ds;
}

START_TEST(test_generator_order_shards_shuffle)
{
    gen g;
    int32_t ids[N], again[N];
    sl_sampler_options s = sampler(0, 0, 1, 0);
    sl_dataset *ds;
    gen_init(&g);
    ds = gen_ds(&g, 0, &s);
    ck_assert_int_eq(epoch_ids(ds, ids, N), N);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(ids[i], i);
    sl_dataset_free(ds);
    ck_assert_int_eq(atomic_load(&g.released), 1);

    s = sampler(0, 0, 2, 1);
    gen_init(&g);
    ds = gen_ds(&g, 0, &s);
    ck_assert_int_eq(epoch_ids(ds, ids, N), N / 2);
    for (int i = 0; i < N / 2; i++)
        ck_assert_int_eq(ids[i], 2 * i + 1);
    sl_dataset_free(ds);

    s = sampler(1, 7, 1, 0);
    gen_init(&g);
    ds = gen_ds(&g, 0, &s);
    ck_assert_int_eq(epoch_ids(ds, ids, N), N);
    ck_assert_int_eq(epoch_ids(ds, again, N), N); /* a new iterator: epoch 0 again */
    {
        int in_order = 1;
        for (int i = 0; i < N; i++) {
            ck_assert_int_eq(ids[i], again[i]);
            in_order &= ids[i] == i;
        }
        ck_assert_msg(!in_order, "seed 7 left the rows in order");
    }
    sl_dataset_free(ds);
}
END_TEST

START_TEST(test_generator_error_names_sample)
{
    gen g;
    sl_sampler_options s = sampler(0, 0, 1, 0);
    sl_dataset *ds;
    sl_iterator *it;
    sl_row row;
    int rc, rows = 0;
    gen_init(&g);
    g.fail_at = 5;
    ds = gen_ds(&g, 0, &s);
    it = start(ds, 1);
    while ((rc = sl_iterator_next(it, &row)) == SL_OK) {
        sl_row_clear(&row);
        rows++;
    }
    ck_assert_int_eq(rc, SL_EFORMAT);
    ck_assert_int_eq(rows, 5);
    HAS(sl_iterator_last_error(it), "generator: sample 5: ValueError: no sample 5 here");
    sl_iterator_free(it);

    gen_init(&g);
    g.wrong_dtype_at = 3;
    it = start(ds, 1);
    while ((rc = sl_iterator_next(it, &row)) == SL_OK)
        sl_row_clear(&row);
    ck_assert_int_eq(rc, SL_EFORMAT);
    HAS(sl_iterator_last_error(it), "generator: sample 3: column 'id' is float32 (), but the "
                                    "column is int32 ()");
    sl_iterator_free(it);
    sl_dataset_free(ds);
}
END_TEST

START_TEST(test_generator_in_order_one_call_at_a_time)
{
    gen g;
    sl_sampler_options s = sampler(0, 0, 1, 0);
    sl_dataset *ds;
    sl_iterator *it;
    sl_row row;
    int rc, batches = 0;
    gen_init(&g);
    ds = gen_ds(&g, 1, &s);
    /* A batch with workers after it would have them read the source. */
    ck_assert_int_eq(sl_dataset_batch(ds, 3, 0, 2), SL_OK);
    it = start(ds, 2);
    while ((rc = sl_iterator_next(it, &row)) == SL_OK || rc == SL_END_OF_EPOCH) {
        if (rc == SL_OK) {
            batches++;
            sl_row_clear(&row);
        }
    }
    ck_assert_int_eq(rc, SL_END_OF_DATA);
    ck_assert_int_eq(batches, 2 * N / 3);
    ck_assert_int_eq(atomic_load(&g.calls), 2 * N);
    for (int k = 0; k < 2 * N; k++)
        ck_assert_int_eq(g.order[k], k % N); /* each pass starts again at 0 */
    ck_assert_int_eq(atomic_load(&g.max_in_flight), 1);
    sl_iterator_free(it);
    sl_dataset_free(ds);
}
END_TEST

START_TEST(test_generator_refusals)
{
    gen g;
    sl_sampler_options s = sampler(1, 0, 1, 0);
    sl_dataset *ds;
    sl_error_samples_options eo;
    sl_iterator_options io;
    sl_iterator *it = NULL;
    gen_init(&g);
    ck_assert_int_eq(try_gen(&ds, &g, 1, &s), SL_EINVAL);
    HAS(sl_dataset_last_error(ds), "generator: a source read in order (in_order 1) can neither "
                                   "shuffle nor be sharded");
    sl_dataset_free(ds);
    ck_assert_int_eq(atomic_load(&g.released), 0); /* refused: not the source's to free */

    /* replace and skip both read stand-ins by index: refused for a stream */
    for (int mode = 0; mode < 2; mode++) {
        gen_init(&g);
        s = sampler(0, 0, 1, 0);
        ds = gen_ds(&g, 1, &s);
        sl_error_samples_options_init(&eo);
        eo.mode = mode ? SL_ERROR_SAMPLES_SKIP : SL_ERROR_SAMPLES_REPLACE;
        ck_assert_int_eq(sl_dataset_set_error_samples(ds, &eo), SL_OK);
        sl_iterator_options_init(&io);
        io.timeout_ms = IT_TIMEOUT_MS;
        ck_assert_int_eq(sl_iterator_new(&it, ds, &io), SL_EINVAL);
        HAS(sl_dataset_last_error(ds), mode ? "cannot skip a bad sample"
                                            : "cannot replace a bad sample");
        sl_dataset_free(ds);
        ck_assert_int_eq(atomic_load(&g.released), 1);
    }
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("slices");
    TCase *tc = tu_tcase("slices", 30);
    tcase_add_test(tc, test_slices_rows_are_views_in_order);
    tcase_add_test(tc, test_slices_release_after_last_row);
    tcase_add_test(tc, test_slices_shards_and_shuffle);
    tcase_add_test(tc, test_slices_refusals);
    suite_add_tcase(s, tc);
    tc = tu_tcase("generator", 30);
    tcase_add_test(tc, test_generator_order_shards_shuffle);
    tcase_add_test(tc, test_generator_error_names_sample);
    tcase_add_test(tc, test_generator_in_order_one_call_at_a_time);
    tcase_add_test(tc, test_generator_refusals);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(make_suite);
}
