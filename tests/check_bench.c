/* check_bench.c: the arithmetic of `sluice bench sink` (tools/bench_overlap.c)
 * on made-up timings: the hidden fraction of a serial, a perfectly
 * overlapped and a partly overlapped round, the noise flag, the summary
 * over rounds that leaves noise out, and the CPU-time bound. Nothing is
 * timed here. And what the bench's runs step over (sluice/bench.h): the
 * real batches kept in memory, the serial reference and the hand-over
 * measurement train on the same batches, in the same order, as non-sink
 * training does. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"
#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "tools/bench_overlap.h"
#include "testutil.h"

Suite *make_bench_suite(void);

#define EPS 1e-12

/* The bus model: a non-sink step pays compute + copy + 2 launches, a step
 * of a sink of 1000 max(compute, copy) + 2 launches / 1000. */
START_TEST(test_bus_model_ratio)
{
    double saving = 0;
    /* compute 1 ms, copy 0.015 ms, launch 0.2 ms: 1.415 / (1 + 0.0004) */
    ck_assert_double_eq_tol(cli_bus_model_ratio(1.0, 0.015, 0.2, 0.0, 1000.0, &saving),
                            1.415 / 1.0004, 1e-9);
    ck_assert_double_eq_tol(saving, 1.415 - 1.0004, 1e-9);
    /* a copy longer than the compute: the sink step is the copy's */
    ck_assert_double_eq_tol(cli_bus_model_ratio(0.5, 2.0, 0.0, 0.0, 1000.0, NULL), 2.5 / 2.0, 1e-9);
    /* a sink of one step saves only the copy hidden beside the compute */
    ck_assert_double_eq_tol(cli_bus_model_ratio(1.0, 0.1, 0.3, 0.0, 1.0, &saving), 1.7 / 1.6, 1e-9);
    ck_assert_double_eq_tol(saving, 0.1, 1e-9);
    /* the host's hand-over, 0.1 ms: paid by every non-sink step, once a
     * sink of 1000 steps: 1.515 / (1 + 0.0005) */
    ck_assert_double_eq_tol(cli_bus_model_ratio(1.0, 0.015, 0.2, 0.1, 1000.0, &saving),
                            1.515 / 1.0005, 1e-9);
    ck_assert_double_eq_tol(saving, 1.515 - 1.0005, 1e-9);
    /* nothing to time: no ratio */
    ck_assert(isnan(cli_bus_model_ratio(0.0, 0.0, 0.0, 0.0, 1000.0, NULL)));
}
END_TEST

START_TEST(test_hidden_serial)
{
    /* compute 600 ms, data 30 ms, one after the other: nothing hidden */
    double h = cli_hidden_fraction(600.0, 30.0, 630.0);
    ck_assert_double_eq_tol(h, 0.0, EPS);
    ck_assert_int_eq(cli_hidden_is_noise(h), 0);
    /* the old figure, max / run, read 0.952 here: it could not fail */
    ck_assert(600.0 / 630.0 > 0.95);
    /* and with data the longer part */
    ck_assert_double_eq_tol(cli_hidden_fraction(20.0, 50.0, 70.0), 0.0, EPS);
}
END_TEST

START_TEST(test_hidden_perfect)
{
    /* the run took as long as its longer part: the shorter hid entirely */
    ck_assert_double_eq_tol(cli_hidden_fraction(600.0, 30.0, 600.0), 1.0, EPS);
    ck_assert_double_eq_tol(cli_hidden_fraction(40.0, 100.0, 100.0), 1.0, EPS);
    ck_assert_double_eq_tol(cli_hidden_fraction(50.0, 50.0, 50.0), 1.0, EPS);
}
END_TEST

START_TEST(test_hidden_partial)
{
    /* 10 of the 30 ms of data showed: two thirds hidden */
    ck_assert_double_eq_tol(cli_hidden_fraction(600.0, 30.0, 610.0), 2.0 / 3.0, EPS);
    /* equal parts, half of one hidden */
    ck_assert_double_eq_tol(cli_hidden_fraction(100.0, 100.0, 150.0), 0.5, EPS);
    /* a run slower than both parts in turn: negative */
    ck_assert_double_eq_tol(cli_hidden_fraction(100.0, 100.0, 205.0), -0.05, EPS);
}
END_TEST

START_TEST(test_hidden_noise)
{
    /* the bounds are results; beyond them, noise */
    ck_assert_int_eq(cli_hidden_is_noise(-0.1), 0);
    ck_assert_int_eq(cli_hidden_is_noise(1.1), 0);
    ck_assert_int_eq(cli_hidden_is_noise(0.0), 0);
    ck_assert_int_eq(cli_hidden_is_noise(1.0), 0);
    ck_assert_int_eq(cli_hidden_is_noise(-0.11), 1);
    ck_assert_int_eq(cli_hidden_is_noise(1.11), 1);
    ck_assert_int_eq(cli_hidden_is_noise(NAN), 1);
    /* the README's case: a sink run faster than compute only (1.5 by the
     * old figure) gives an h beyond perfect overlap */
    ck_assert_int_eq(cli_hidden_is_noise(cli_hidden_fraction(600.0, 30.0, 400.0)), 1);
    /* no time for one part: no fraction */
    ck_assert(isnan(cli_hidden_fraction(600.0, 0.0, 600.0)));
    ck_assert(isnan(cli_hidden_fraction(0.0, 0.0, 0.0)));
    /* 1% of compute time moves h by compute / (100 data) */
    ck_assert_double_eq_tol(cli_hidden_per_percent(600.0, 24.0), 0.25, EPS);
    ck_assert_double_eq_tol(cli_hidden_per_percent(100.0, 200.0), 0.01, EPS);
}
END_TEST

START_TEST(test_spread)
{
    double h[5] = {0.4, 1.6, 0.2, -0.5, 0.3}, e[3] = {0.9, NAN, 0.7};
    cli_spread s;
    cli_spread_of(h, 5, 1, &s);
    ck_assert_uint_eq(s.kept, 3);
    ck_assert_uint_eq(s.noise, 2);
    ck_assert_double_eq_tol(s.median, 0.3, EPS);
    ck_assert_double_eq_tol(s.min, 0.2, EPS);
    ck_assert_double_eq_tol(s.max, 0.4, EPS);
    /* the input is not reordered */
    ck_assert_double_eq_tol(h[1], 1.6, EPS);
    /* without skip_noise, every number counts; NaN never does */
    cli_spread_of(h, 5, 0, &s);
    ck_assert_uint_eq(s.kept, 5);
    ck_assert_double_eq_tol(s.median, 0.3, EPS);
    ck_assert_double_eq_tol(s.max, 1.6, EPS);
    cli_spread_of(e, 3, 0, &s);
    ck_assert_uint_eq(s.kept, 2);
    ck_assert_uint_eq(s.noise, 1);
    ck_assert_double_eq_tol(s.median, 0.8, EPS);
    /* every round noise: no result */
    h[0] = h[2] = h[4] = 2.0;
    cli_spread_of(h, 5, 1, &s);
    ck_assert_uint_eq(s.kept, 0);
    ck_assert_uint_eq(s.noise, 5);
    ck_assert(isnan(s.median) && isnan(s.min) && isnan(s.max));
    cli_spread_of(h, 0, 1, &s);
    ck_assert(s.kept == 0 && s.noise == 0 && isnan(s.median));
}
END_TEST

START_TEST(test_cpu_time_bound)
{
    /* 2 CPUs: compute 600 ms using 1150 ms of CPU, data 30 ms using 30:
     * the work needs 590 ms of both CPUs, less than compute's wall time */
    ck_assert_double_eq_tol(cli_cpu_time_bound(600.0, 30.0, 1150.0, 30.0, 2), 600.0, EPS);
    /* compute 600 ms using 1200 of CPU (both CPUs busy), data 100 using
     * 100: overlap cannot hide the data; (1200 + 100) / 2 = 650 */
    ck_assert_double_eq_tol(cli_cpu_time_bound(600.0, 100.0, 1200.0, 100.0, 2), 650.0, EPS);
    /* data the longer part */
    ck_assert_double_eq_tol(cli_cpu_time_bound(100.0, 300.0, 100.0, 300.0, 4), 300.0, EPS);
    /* one CPU: the sum of the work */
    ck_assert_double_eq_tol(cli_cpu_time_bound(600.0, 100.0, 600.0, 100.0, 1), 700.0, EPS);
    /* 0 CPUs is taken as 1 */
    ck_assert_double_eq_tol(cli_cpu_time_bound(600.0, 100.0, 600.0, 100.0, 0), 700.0, EPS);
}
END_TEST

/* --- the bench's runs -------------------------------------------------- */

static sl_model *new_model(void)
{
    sl_model *m = NULL;
    char err[512];
    ck_assert_msg(sl_model_new(&m, NULL, err, sizeof err) == SL_OK, "%s", err);
    return m;
}

/* LeNet (the defaults) on "CPU" or "SIM" (a sim computes on a core of its
 * own, so the hand-over measurement posts its steps there). */
static sl_model *new_model_on(const char *target)
{
    sl_model_options o;
    sl_model *m = NULL;
    char err[512];
    sl_model_options_init(&o);
    o.context.device_target = target;
    ck_assert_msg(sl_model_new(&m, &o, err, sizeof err) == SL_OK, "%s", err);
    return m;
}

/* Non-sink training for `steps` steps from the start of ds. */
static void train_steps(sl_model *m, sl_dataset *ds, int64_t steps)
{
    sl_train_options o;
    sl_train_options_init(&o);
    o.max_steps = steps;
    ck_assert_msg(sl_model_train_opts(m, 100, ds, NULL, 0, &o) == SL_OK, "%s",
                  sl_model_last_error(m));
    ck_assert_int_eq(sl_model_global_step(m), steps);
}

START_TEST(test_serial_trains_as_nonsink)
{
    /* 200 rows: 6 batches an epoch; 15 steps cross two epoch ends, and
     * each chunk is an epoch started by an iterator of its own */
    char *dir = tu_mnist_dir(200, 20);
    sl_dataset *ds = tu_lenet_pipeline(dir, SL_MNIST_TRAIN, 2, 7, 1, 1, 0);
    sl_model *serial = new_model(), *ref = new_model();
    ck_assert_int_eq(sl_model_bench_serial(serial, ds, 15), SL_OK);
    ck_assert_int_eq(sl_model_global_step(serial), 15);
    train_steps(ref, ds, 15);
    tu_assert_same_params(serial, ref, "the serial reference against non-sink training");
    ck_assert_int_eq(sl_model_bench_serial(serial, ds, 0), SL_EINVAL);
    sl_model_free(serial);
    sl_model_free(ref);
    sl_dataset_free(ds);
    tu_mnist_dir_drop(dir);
}
END_TEST

START_TEST(test_batches_are_an_epoch)
{
    char *dir = tu_mnist_dir(200, 20);
    sl_dataset *ds = tu_lenet_pipeline(dir, SL_MNIST_TRAIN, 1, 3, 1, 1, 0);
    sl_model *a = new_model(), *ref = new_model();
    sl_bench_batches *b = NULL, *few = NULL;
    double sps = 0.0;
    /* at most an epoch, at most the count asked for */
    ck_assert_int_eq(sl_bench_batches_new(&b, a, ds, 100), SL_OK);
    ck_assert_int_eq(sl_bench_batches_count(b), 6);
    ck_assert_int_eq(sl_bench_batches_new(&few, a, ds, 4), SL_OK);
    ck_assert_int_eq(sl_bench_batches_count(few), 4);
    sl_bench_batches_free(few);
    ck_assert_int_eq(sl_bench_batches_new(&few, a, ds, 0), SL_EINVAL);
    ck_assert_ptr_null(few);
    /* the first epoch's batches, in order: 6 steps over them train as one
     * epoch of non-sink training does */
    ck_assert_int_eq(sl_model_bench_steps_on(a, b, 6, &sps), SL_OK);
    ck_assert(sps > 0.0);
    train_steps(ref, ds, 6);
    tu_assert_same_params(a, ref, "steps over the kept batches against non-sink training");
    /* cycled: 4 batches, 10 steps */
    ck_assert_int_eq(sl_bench_batches_new(&few, a, ds, 4), SL_OK);
    ck_assert_int_eq(sl_model_bench_steps_on(a, few, 10, &sps), SL_OK);
    ck_assert_int_eq(sl_model_global_step(a), 16);
    ck_assert_int_eq(sl_model_bench_steps_on(a, few, 0, &sps), SL_EINVAL);
    sl_bench_batches_free(few);
    sl_bench_batches_free(b);
    sl_bench_batches_free(NULL);
    sl_model_free(a);
    sl_model_free(ref);
    sl_dataset_free(ds);
    tu_mnist_dir_drop(dir);
}
END_TEST

/* The hand-over measurement's steps, half posted one by one and half run
 * as one job, walk the kept batches in order, cycled, as the compute-only
 * steps do: the parameters come out bit for bit the same. Its result is a
 * time (finite, and about 0 where both halves run on the caller's
 * thread: not asserted, that would time the machine). */
static void handover_steps_in_order(const char *target)
{
    char *dir = tu_mnist_dir(200, 20);
    sl_dataset *ds = tu_lenet_pipeline(dir, SL_MNIST_TRAIN, 1, 3, 1, 1, 0);
    sl_model *a = new_model_on(target), *ref = new_model_on(target);
    sl_bench_batches *b = NULL;
    double ms = NAN, sps = 0.0;
    ck_assert_int_eq(sl_bench_batches_new(&b, a, ds, 100), SL_OK);
    ck_assert_int_eq(sl_bench_batches_count(b), 6);
    /* pairs of blocks of 10 steps: 45 steps are two pairs, 40 of them */
    ck_assert_msg(sl_model_bench_handover(a, b, 45, &ms) == SL_OK, "%s", sl_model_last_error(a));
    ck_assert(isfinite(ms));
    ck_assert_int_eq(sl_model_global_step(a), 40);
    ck_assert_int_eq(sl_model_bench_steps_on(ref, b, 40, &sps), SL_OK);
    tu_assert_same_params(a, ref, "the hand-over's steps against compute-only steps");
    /* fewer steps than one pair: refused, saying how many it needs */
    ck_assert_int_eq(sl_model_bench_handover(a, b, 19, &ms), SL_EINVAL);
    ck_assert_msg(strstr(sl_model_last_error(a), ">= 20"), "%s", sl_model_last_error(a));
    ck_assert_int_eq(sl_model_global_step(a), 40);
    sl_bench_batches_free(b);
    sl_model_free(a);
    sl_model_free(ref);
    sl_dataset_free(ds);
    tu_mnist_dir_drop(dir);
}

START_TEST(test_handover_steps_in_order_cpu)
{
    handover_steps_in_order("CPU");
}
END_TEST

START_TEST(test_handover_steps_in_order_sim)
{
    handover_steps_in_order("SIM");
}
END_TEST

Suite *make_bench_suite(void)
{
    Suite *s = suite_create("bench");
    TCase *tc = tu_tcase("core", 30), *runs = tu_tcase("runs", 120);
    tcase_add_test(tc, test_bus_model_ratio);
    tcase_add_test(tc, test_hidden_serial);
    tcase_add_test(tc, test_hidden_perfect);
    tcase_add_test(tc, test_hidden_partial);
    tcase_add_test(tc, test_hidden_noise);
    tcase_add_test(tc, test_spread);
    tcase_add_test(tc, test_cpu_time_bound);
    suite_add_tcase(s, tc);
    tcase_add_test(runs, test_serial_trains_as_nonsink);
    tcase_add_test(runs, test_batches_are_an_epoch);
    tcase_add_test(runs, test_handover_steps_in_order_cpu);
    tcase_add_test(runs, test_handover_steps_in_order_sim);
    suite_add_tcase(s, runs);
    return s;
}

int main(void)
{
    return tu_run_suite(make_bench_suite);
}
