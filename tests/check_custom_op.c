/* check_custom_op.c: operators of the caller's own (sl_op_custom_new), the
 * ground the Python bindings run a Python callable on. Options checked like
 * every versioned struct; the function's results in a pipeline, in order
 * whatever the workers; seeds per sample for random ops; destroy called
 * once, when the last map lets go; and every way a function can fail or lie
 * (an error with or without a message, success without a tensor, a tensor
 * its infer function did not announce) reported with the op's name and the
 * sample, after the rows before it. */
#include <check.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "sluice/sluice.h"
#include "tests/testutil.h"

Suite *make_custom_op_suite(void);

#define IT_TIMEOUT_MS 60000 /* a hang becomes SL_ETIMEDOUT, not a stuck test */
#define NSAMPLES 40

static char *tmp;

static void setup_tmp(void)
{
    tmp = tu_mkdtemp();
    ck_assert_ptr_nonnull(tmp);
    ck_assert_int_eq(tu_make_mnist(tmp, NSAMPLES, 1, 0), 0);
}

static void teardown_tmp(void)
{
    tu_rmtree(tmp);
    free(tmp);
    tmp = NULL;
}

/* --- the functions under test ----------------------------------------------- */

/* What a test's functions share: calls made, destroys seen, a sample to fail. */
typedef struct probe {
    atomic_int calls;
    atomic_int destroyed;
    int fail_at;      /* first pixel value (sample) that fails, -1 never */
    int with_message; /* the failure writes a message */
} probe;

/* uint8 (28, 28, 1) -> float32 (28, 28, 1) of pixel + 1; fails on a chosen
 * sample, recognised by its first pixel (tu_pixel(i, 0, 0)). */
static int add_one(void *user, const sl_tensor *in, sl_tensor **out, uint64_t seed, char *errbuf,
                   size_t errlen)
{
    probe *p = user;
    const uint8_t *src = sl_tensor_data(in);
    float *dst;
    int rc;
    (void)seed;
    atomic_fetch_add(&p->calls, 1);
    if (p->fail_at >= 0 && src[0] == (uint8_t)p->fail_at) {
        if (p->with_message)
            snprintf(errbuf, errlen, "pixel %d is cursed", src[0]);
        return SL_EINVAL;
    }
    rc = sl_tensor_new(out, SL_FLOAT32, sl_tensor_ndim(in), sl_tensor_shape(in));
    if (rc != SL_OK)
        return rc;
    dst = sl_tensor_data(*out);
    for (size_t i = 0; i < sl_tensor_numel(in); i++)
        dst[i] = (float)src[i] + 1.0f;
    return SL_OK;
}

static int add_one_infer(void *user, const sl_tensor_spec *in, sl_tensor_spec *out, char *errbuf,
                         size_t errlen)
{
    (void)user;
    if (in->dtype != SL_UINT8) {
        snprintf(errbuf, errlen, "wants uint8, got %s", sl_dtype_name(in->dtype));
        return SL_ESHAPE;
    }
    *out = *in;
    out->dtype = SL_FLOAT32;
    return SL_OK;
}

/* Any input -> int64 () holding the seed it was given. */
static int seed_out(void *user, const sl_tensor *in, sl_tensor **out, uint64_t seed, char *errbuf,
                    size_t errlen)
{
    int rc;
    (void)user, (void)in, (void)errbuf, (void)errlen;
    rc = sl_tensor_new(out, SL_INT64, 0, NULL);
    if (rc == SL_OK)
        memcpy(sl_tensor_data(*out), &seed, sizeof seed);
    return rc;
}

/* Claims success without a tensor. */
static int no_tensor(void *user, const sl_tensor *in, sl_tensor **out, uint64_t seed,
                     char *errbuf, size_t errlen)
{
    (void)user, (void)in, (void)seed, (void)errbuf, (void)errlen;
    *out = NULL;
    return SL_OK;
}

static void count_destroy(void *user)
{
    atomic_fetch_add(&((probe *)user)->destroyed, 1);
}

static sl_op *make_op(const char *name, sl_op_custom_fn fn, sl_op_custom_infer_fn infer,
                      probe *p, int random)
{
    sl_op_custom_options o;
    sl_op *op = NULL;
    char err[256] = "";
    int rc;
    sl_op_custom_options_init(&o);
    o.name = name;
    o.fn = fn;
    o.infer = infer;
    o.destroy = count_destroy;
    o.user = p;
    o.random = random;
    rc = sl_op_custom_new(&op, &o, err, sizeof err);
    ck_assert_msg(rc == SL_OK, "sl_op_custom_new: %s", err);
    return op;
}

/* MNIST train in file order (or shuffled), with op mapped on `image`. */
static sl_dataset *mapped(sl_op *op, int workers, int shuffle)
{
    sl_dataset *ds;
    sl_mnist_options o;
    int rc;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_mnist_options_init(&o);
    o.dataset_dir = tmp;
    o.usage = SL_MNIST_TRAIN;
    o.sampler.shuffle = shuffle;
    ck_assert_int_eq(sl_dataset_mnist(ds, &o), SL_OK);
    rc = sl_dataset_map(ds, &op, 1, "image", NULL, workers);
    ck_assert_msg(rc == SL_OK, "map: %s", sl_dataset_last_error(ds));
    return ds;
}

/* Runs ds to its end; rows[] gets each row's image column (the caller
 * releases them), *err the iterator's message. Returns the final status. */
static int run(sl_dataset *ds, sl_tensor **rows, int *nrows, char *err, size_t errlen)
{
    sl_iterator_options o;
    sl_iterator *it;
    int rc;
    sl_iterator_options_init(&o);
    o.timeout_ms = IT_TIMEOUT_MS;
    o.chunk_rows = 3; /* several chunks, so workers overlap */
    ck_assert_int_eq(sl_iterator_new(&it, ds, &o), SL_OK);
    *nrows = 0;
    for (;;) {
        sl_row row;
        rc = sl_iterator_next(it, &row);
        if (rc == SL_END_OF_EPOCH)
            continue;
        if (rc != SL_OK)
            break;
        ck_assert_int_lt(*nrows, NSAMPLES);
        rows[(*nrows)++] = sl_tensor_retain(row.columns[0]);
        sl_row_clear(&row);
    }
    snprintf(err, errlen, "%s", sl_iterator_last_error(it));
    sl_iterator_free(it);
    return rc;
}

static void release_all(sl_tensor **rows, int n)
{
    for (int i = 0; i < n; i++)
        sl_tensor_release(rows[i]);
}

/* --- tests ------------------------------------------------------------------ */

START_TEST(test_options_refused)
{
    sl_op_custom_options o;
    sl_op *op = (sl_op *)1;
    probe p = {.fail_at = -1};
    char err[256];
    /* Never initialised. */
    memset(&o, 0, sizeof o);
    o.fn = add_one;
    ck_assert_int_eq(sl_op_custom_new(&op, &o, err, sizeof err), SL_EINVAL);
    ck_assert_ptr_null(op);
    ck_assert_ptr_nonnull(strstr(err, "sl_op_custom_options_init"));
    ck_assert_int_eq(sl_op_custom_new(&op, NULL, err, sizeof err), SL_EINVAL);
    /* No function; a name too long or empty; a random flag that is not 0/1. */
    sl_op_custom_options_init(&o);
    o.destroy = count_destroy;
    o.user = &p;
    ck_assert_int_eq(sl_op_custom_new(&op, &o, err, sizeof err), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "fn"));
    o.fn = add_one;
    o.name = "a name that is far too long to be the name of a custom operator";
    ck_assert_int_eq(sl_op_custom_new(&op, &o, err, sizeof err), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "name"));
    o.name = "";
    ck_assert_int_eq(sl_op_custom_new(&op, &o, err, sizeof err), SL_EINVAL);
    o.name = "ok";
    o.random = 2;
    ck_assert_int_eq(sl_op_custom_new(&op, &o, err, sizeof err), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "random"));
    /* A refused op never owned user: destroy was not called. */
    ck_assert_int_eq(atomic_load(&p.destroyed), 0);
    o.random = 0;
    ck_assert_int_eq(sl_op_custom_new(&op, &o, NULL, 0), SL_OK);
    ck_assert_str_eq(sl_op_name(op), "ok");
    sl_op_release(op);
    ck_assert_int_eq(atomic_load(&p.destroyed), 1);
}
END_TEST

/* sl_op_apply: the function's result; the input untouched. */
START_TEST(test_apply)
{
    probe p = {.fail_at = -1};
    sl_op *op = make_op("add_one", add_one, add_one_infer, &p, 0);
    int64_t shape[3] = {2, 3, 1};
    sl_tensor *in, *out;
    char err[256];
    ck_assert_int_eq(sl_tensor_new(&in, SL_UINT8, 3, shape), SL_OK);
    ((uint8_t *)sl_tensor_data(in))[4] = 9;
    ck_assert_int_eq(sl_op_apply(op, in, &out, 0, err, sizeof err), SL_OK);
    ck_assert_int_eq(sl_tensor_dtype(out), SL_FLOAT32);
    ck_assert_int_eq(sl_tensor_ndim(out), 3);
    ck_assert(((float *)sl_tensor_data(out))[4] == 10.0f);
    ck_assert(((float *)sl_tensor_data(out))[0] == 1.0f);
    ck_assert_int_eq(((uint8_t *)sl_tensor_data(in))[4], 9);
    ck_assert_int_eq(sl_tensor_refcount(in), 1);
    sl_tensor_release(out);
    sl_tensor_release(in);
    sl_op_release(op);
    ck_assert_int_eq(atomic_load(&p.destroyed), 1);
}
END_TEST

/* In a pipeline with 1 and 3 workers: every row transformed, in order; the
 * op outlives the caller's reference while a dataset maps it, and is
 * destroyed once when the last one lets go. */
START_TEST(test_in_pipeline)
{
    for (int workers = 1; workers <= 3; workers += 2) {
        probe p = {.fail_at = -1};
        sl_op *op = make_op("add_one", add_one, add_one_infer, &p, 0);
        sl_dataset *ds = mapped(op, workers, 0);
        sl_tensor_spec spec;
        sl_tensor *rows[NSAMPLES];
        char err[512];
        int n;
        sl_op_release(op); /* the map keeps its own reference */
        ck_assert_int_eq(atomic_load(&p.destroyed), 0);
        ck_assert_int_eq(sl_dataset_column_spec(ds, 0, &spec), SL_OK);
        ck_assert_int_eq(spec.dtype, SL_FLOAT32);
        ck_assert_int_eq(spec.shape[0], 28);
        ck_assert_int_eq(run(ds, rows, &n, err, sizeof err), SL_END_OF_DATA);
        ck_assert_int_eq(n, NSAMPLES);
        ck_assert_int_eq(atomic_load(&p.calls), NSAMPLES);
        for (int i = 0; i < n; i++) {
            const float *px = sl_tensor_data(rows[i]);
            ck_assert_int_eq(sl_tensor_dtype(rows[i]), SL_FLOAT32);
            ck_assert_msg(px[0] == (float)tu_pixel((uint32_t)i, 0, 0) + 1.0f &&
                              px[28 * 5 + 7] == (float)tu_pixel((uint32_t)i, 5, 7) + 1.0f,
                          "workers %d: row %d holds the wrong sample", workers, i);
        }
        release_all(rows, n);
        sl_dataset_free(ds);
        ck_assert_int_eq(atomic_load(&p.destroyed), 1);
    }
}
END_TEST

/* Keeps a reference to every input (as a Python function may keep the
 * array it is given) and passes it through. */
static sl_tensor *kept[NSAMPLES];
static atomic_int nkept;

static int keep_input(void *user, const sl_tensor *in, sl_tensor **out, uint64_t seed,
                      char *errbuf, size_t errlen)
{
    int k = atomic_fetch_add(&nkept, 1);
    (void)user, (void)seed, (void)errbuf, (void)errlen;
    if (k < NSAMPLES)
        kept[k] = sl_tensor_retain((sl_tensor *)in);
    *out = sl_tensor_retain((sl_tensor *)in);
    return SL_OK;
}

/* What fn kept stays valid after the iterator, the dataset and their pool
 * are gone (AddressSanitizer sees any read or release of freed memory). */
START_TEST(test_keeps_input)
{
    probe p = {.fail_at = -1};
    sl_op *op = make_op("keep", keep_input, NULL, &p, 0);
    sl_op *hwc2chw;
    sl_dataset *ds = mapped(op, 2, 0);
    sl_tensor *rows[NSAMPLES];
    char err[512];
    int n, sum = 0;
    atomic_store(&nkept, 0);
    sl_op_release(op);
    /* HWC2CHW after it makes the views rows of their own. */
    ck_assert_int_eq(sl_op_hwc2chw_new(&hwc2chw, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &hwc2chw, 1, "image", NULL, 2), SL_OK);
    sl_op_release(hwc2chw);
    ck_assert_int_eq(sl_dataset_batch(ds, 8, 0, 1), SL_OK);
    ck_assert_int_eq(run(ds, rows, &n, err, sizeof err), SL_END_OF_DATA);
    release_all(rows, n);
    sl_dataset_free(ds);
    ck_assert_int_eq(atomic_load(&nkept), NSAMPLES);
    /* Workers call fn in any order: find each kept image's sample by its
     * first pixel (unique below 256 samples), then check all its pixels. */
    for (int k = 0; k < NSAMPLES; k++) {
        const uint8_t *px = sl_tensor_data(kept[k]);
        for (uint32_t i = 0; i < NSAMPLES; i++) {
            int same = 1;
            for (uint32_t y = 0; same && y < 28; y++)
                for (uint32_t x = 0; same && x < 28; x++)
                    same = px[y * 28 + x] == tu_pixel(i, y, x);
            sum += same;
        }
        sl_tensor_release(kept[k]);
    }
    ck_assert_int_eq(sum, NSAMPLES);
}
END_TEST

/* A random op gets one seed per sample: the same for the same dataset seed
 * whatever the workers, another for another seed; a plain op gets 0. */
START_TEST(test_seeds)
{
    uint64_t first[NSAMPLES];
    for (int k = 0; k < 4; k++) {
        int workers = k == 1 ? 3 : 1, random = k < 3;
        probe p = {.fail_at = -1};
        sl_op *op = make_op("seed", seed_out, NULL, &p, random);
        sl_dataset *ds = mapped(op, workers, 1);
        sl_tensor *rows[NSAMPLES];
        char err[512];
        int n, same = 0;
        sl_op_release(op);
        sl_dataset_set_seed(ds, k == 2 ? 7 : 0);
        ck_assert_int_eq(run(ds, rows, &n, err, sizeof err), SL_END_OF_DATA);
        ck_assert_int_eq(n, NSAMPLES);
        for (int i = 0; i < n; i++) {
            uint64_t s;
            memcpy(&s, sl_tensor_data(rows[i]), sizeof s);
            if (k == 0)
                first[i] = s;
            else if (k == 1)
                ck_assert_msg(s == first[i], "row %d: another seed with 3 workers", i);
            else if (k == 2)
                same += s == first[i];
            else
                ck_assert_msg(s == 0, "row %d: a plain op got seed %llu", i,
                              (unsigned long long)s);
            for (int j = 0; k == 0 && j < i; j++)
                ck_assert_msg(first[j] != s, "rows %d and %d got the same seed", j, i);
        }
        if (k == 2)
            ck_assert_int_lt(same, 2);
        release_all(rows, n);
        sl_dataset_free(ds);
    }
}
END_TEST

/* A failing function: the rows before it come first, then an error naming
 * the op, the column and the sample, with the function's message or the
 * status's text when it gave none. */
START_TEST(test_function_fails)
{
    for (int with_message = 0; with_message <= 1; with_message++) {
        int fail_sample = 17;
        probe p = {.fail_at = tu_pixel((uint32_t)fail_sample, 0, 0), .with_message = with_message};
        sl_op *op = make_op("cursed", add_one, NULL, &p, 0);
        sl_dataset *ds = mapped(op, 2, 0);
        sl_tensor *rows[NSAMPLES];
        char err[512];
        int n, rc;
        sl_op_release(op);
        /* The pixel must single the sample out for the test to mean anything. */
        for (int i = 0; i < fail_sample; i++)
            ck_assert_int_ne(tu_pixel((uint32_t)i, 0, 0), p.fail_at);
        rc = run(ds, rows, &n, err, sizeof err);
        ck_assert_int_eq(rc, SL_EINVAL);
        ck_assert_int_eq(n, fail_sample);
        ck_assert_msg(strstr(err, "cursed: ") && strstr(err, "'image'") &&
                          strstr(err, "sample 17"),
                      "%s", err);
        ck_assert_msg(strstr(err, with_message ? "pixel" : sl_strerror(SL_EINVAL)), "%s", err);
        release_all(rows, n);
        sl_dataset_free(ds);
    }
}
END_TEST

/* Success without a tensor, and a tensor its infer did not announce, are
 * errors; an infer that refuses the column refuses the map. */
START_TEST(test_function_lies)
{
    probe p = {.fail_at = -1};
    sl_op *op = make_op("nothing", no_tensor, NULL, &p, 0);
    sl_dataset *ds = mapped(op, 1, 0);
    sl_tensor *rows[NSAMPLES];
    char err[512];
    int n;
    sl_op_release(op);
    ck_assert_int_eq(run(ds, rows, &n, err, sizeof err), SL_ESTATE);
    ck_assert_int_eq(n, 0);
    ck_assert_msg(strstr(err, "nothing: returned success but no tensor"), "%s", err);
    sl_dataset_free(ds);

    /* seed_out makes int64 () where add_one_infer promises float32 (28, 28, 1). */
    op = make_op("liar", seed_out, add_one_infer, &p, 0);
    ds = mapped(op, 1, 0);
    sl_op_release(op);
    ck_assert_int_eq(run(ds, rows, &n, err, sizeof err), SL_ESHAPE);
    ck_assert_msg(strstr(err, "liar: returned int64 () where its infer function said float32 "
                              "(28, 28, 1)"),
                  "%s", err);
    sl_dataset_free(ds);

    /* The label is uint32: add_one_infer refuses it when the map is made. */
    op = make_op("add_one", add_one, add_one_infer, &p, 0);
    ds = mapped(op, 1, 0);
    ck_assert_int_eq(sl_dataset_map(ds, &op, 1, "label", NULL, 1), SL_ESHAPE);
    ck_assert_msg(strstr(sl_dataset_last_error(ds), "add_one: wants uint8, got uint32"), "%s",
                  sl_dataset_last_error(ds));
    sl_op_release(op);
    sl_dataset_free(ds);
    ck_assert_int_eq(atomic_load(&p.destroyed), 3);
}
END_TEST

Suite *make_custom_op_suite(void)
{
    Suite *s = suite_create("custom_op");
    TCase *core = tu_tcase("core", 60);
    tcase_add_checked_fixture(core, setup_tmp, teardown_tmp);
    tcase_add_test(core, test_options_refused);
    tcase_add_test(core, test_apply);
    tcase_add_test(core, test_in_pipeline);
    tcase_add_test(core, test_keeps_input);
    tcase_add_test(core, test_seeds);
    tcase_add_test(core, test_function_fails);
    tcase_add_test(core, test_function_lies);
    suite_add_tcase(s, core);
    return s;
}

int main(void)
{
    return tu_run_suite(make_custom_op_suite);
}
