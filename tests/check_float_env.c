/* check_float_env.c: subnormal floats flush to zero in a device's compute
 * (sl_device_options.keep_subnormals 0, the default) and stay with 1; the
 * team's helpers compute under their caller's settings; the caller's own
 * settings are given back after a step run on its thread. */
#include <check.h>
#include <float.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/cpu.h"
#include "core/float_env.h"
#include "devices/team.h"
#include "exec/step_impl.h"
#include "sluice/device.h"
#include "sluice/graph.h"
#include "sluice/step.h"
#include "sluice/tensor.h"
#include "tests/run_suite.h"
#include "tests/time_limit.h"

/* Half the smallest normal float, computed so that the compiler cannot
 * fold it: subnormal unless the thread flushes. */
static float half_of_flt_min(void)
{
    volatile float x = FLT_MIN;
    volatile float h = x * 0.5f;
    return h;
}

/* --- the team ------------------------------------------------------------- */

#define SHARES_MAX 64

typedef struct share_probe {
    pthread_t caller;
    atomic_int by_helper;      /* shares a helper ran */
    atomic_int flushed[SHARES_MAX];
    atomic_int ran[SHARES_MAX];
    pthread_mutex_t lock;
    pthread_cond_t cond;
} share_probe;

/* Each share records whether its thread flushed. The caller's first share
 * waits (10 s at most) until a helper has run one, so that a helper's
 * settings are always among those checked. */
static void probe_share(void *arg, const sl__share *sh)
{
    share_probe *p = arg;
    int helper = !pthread_equal(pthread_self(), p->caller);
    atomic_store(&p->flushed[sh->index], half_of_flt_min() == 0.0f);
    atomic_store(&p->ran[sh->index], 1);
    pthread_mutex_lock(&p->lock);
    if (helper) {
        atomic_fetch_add(&p->by_helper, 1);
        pthread_cond_broadcast(&p->cond);
    } else if (sh->index == 0 && sl__cpus_available() >= 2) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 10;
        while (atomic_load(&p->by_helper) == 0)
            if (pthread_cond_timedwait(&p->cond, &p->lock, &until) != 0)
                break;
    }
    pthread_mutex_unlock(&p->lock);
}

static void run_probe(sl__team *t, int flush, int *helper_shares)
{
    share_probe p = {0};
    int count = t->nthreads * t->per_thread;
    ck_assert_int_le(count, SHARES_MAX);
    p.caller = pthread_self();
    pthread_mutex_init(&p.lock, NULL);
    pthread_cond_init(&p.cond, NULL);
    sl__float_env_set(sl__float_env_flushing(sl__float_env_get(), flush));
    sl__team_run(t, probe_share, &p);
    for (int i = 0; i < count; i++) {
        ck_assert_int_eq(atomic_load(&p.ran[i]), 1);
        ck_assert_msg(atomic_load(&p.flushed[i]) == flush,
                      "share %d of %d computed with flushing %s, its caller's was %s", i, count,
                      flush ? "off" : "on", flush ? "on" : "off");
    }
    *helper_shares = atomic_load(&p.by_helper);
    pthread_cond_destroy(&p.cond);
    pthread_mutex_destroy(&p.lock);
}

/* A job's shares compute under the caller's float settings, on whichever
 * thread runs them, and follow the caller when it changes them. */
START_TEST(test_team_takes_the_callers_settings)
{
    sl__team t;
    unsigned saved = sl__float_env_get();
    int by_helper = 0;
    if (!sl__float_env_supported())
        return; /* nothing to switch on this CPU */
    ck_assert_int_eq(sl__team_init(&t, 2, -1), SL_OK);
    for (int round = 0; round < 3; round++) {
        run_probe(&t, 1, &by_helper);
        if (sl__cpus_available() >= 2)
            ck_assert_int_ge(by_helper, 1);
        run_probe(&t, 0, &by_helper);
        if (sl__cpus_available() >= 2)
            ck_assert_int_ge(by_helper, 1);
    }
    sl__team_destroy(&t);
    sl__float_env_set(saved);
}
END_TEST

/* --- a step on a device -------------------------------------------------- */

#define N 4096 /* enough elements that every share of a team of 2 has some */

/* x + y, where every sum is subnormal (half of FLT_MIN): in the first
 * half from two normal numbers (flushing the result), in the second from a
 * subnormal x and a zero y (flushing the input). */
static void fill_inputs(sl_tensor *x, sl_tensor *y)
{
    float *a = sl_tensor_data(x), *b = sl_tensor_data(y);
    for (int i = 0; i < N; i++) {
        if (i < N / 2) {
            a[i] = FLT_MIN * 1.5f;
            b[i] = -FLT_MIN;
        } else {
            a[i] = half_of_flt_min();
            b[i] = 0.0f;
        }
    }
}

/* Runs x + y on a step of device dev (keep_subnormals keep), in mode, on
 * the executor's thread or the caller's (here), and checks every sum. */
static void check_add(int keep, sl_mode mode, int here)
{
    sl_device_options o;
    sl_device *dev = NULL;
    sl_graph *g = NULL;
    sl_executor *ex = NULL;
    sl_executor_options eo;
    sl_step *s = NULL;
    sl_tensor *in[2] = {NULL, NULL};
    int64_t shape[1] = {N};
    char err[256];
    int x, y, sum;
    unsigned caller;
    const float *out;
    float want = keep ? half_of_flt_min() : 0.0f;

    sl_device_options_init(&o);
    o.keep_subnormals = keep;
    ck_assert_int_eq(sl_device_new(&dev, "cpu:0", &o, err, sizeof err), SL_OK);
    ck_assert_int_eq(sl_graph_new(&g), SL_OK);
    x = sl_graph_input(g, "x", SL_FLOAT32, 1, shape);
    y = sl_graph_input(g, "y", SL_FLOAT32, 1, shape);
    sum = sl_graph_add(g, "sum", x, y);
    ck_assert_int_ge(sum, 0);
    sl_executor_options_init(&eo);
    eo.threads = 2;
    ck_assert_int_eq(sl_executor_new(&ex, &eo), SL_OK);
    ck_assert_int_eq(sl__step_new_on(&s, g, ex, dev, mode, &sum, 1, 0), SL_OK);
    ck_assert_int_eq(sl_tensor_new(&in[0], SL_FLOAT32, 1, shape), SL_OK);
    ck_assert_int_eq(sl_tensor_new(&in[1], SL_FLOAT32, 1, shape), SL_OK);
    fill_inputs(in[0], in[1]);
    /* The caller computes without flushing; a run on its thread must not
     * change that. */
    caller = sl__float_env_flushing(sl__float_env_get(), 0);
    sl__float_env_set(caller);
    ck_assert_int_eq(here ? sl_step_run_here(s, in, 2) : sl_step_run(s, in, 2), SL_OK);
    ck_assert_uint_eq(sl__float_env_get(), caller);
    out = sl_step_output(s, 0, NULL);
    for (int i = 0; i < N; i++)
        ck_assert_msg(out[i] == want,
                      "keep_subnormals %d, %s, %s: element %d is %g, expected %g", keep,
                      mode == SL_GRAPH_MODE ? "GRAPH" : "PYNATIVE",
                      here ? "caller's thread" : "executor's thread", i, (double)out[i],
                      (double)want);
    sl_tensor_release(in[0]);
    sl_tensor_release(in[1]);
    sl_step_free(s);
    sl_executor_free(ex);
    sl_graph_free(g);
    sl_device_free(dev);
}

START_TEST(test_device_flushes_by_default)
{
    if (!sl__float_env_supported())
        return;
    for (int here = 0; here < 2; here++) {
        check_add(0, SL_GRAPH_MODE, here);
        check_add(0, SL_PYNATIVE_MODE, here);
    }
}
END_TEST

START_TEST(test_device_keeps_subnormals_when_asked)
{
    for (int here = 0; here < 2; here++) {
        check_add(1, SL_GRAPH_MODE, here);
        check_add(1, SL_PYNATIVE_MODE, here);
    }
}
END_TEST

START_TEST(test_keep_subnormals_is_checked)
{
    sl_device_options o;
    sl_device *dev = NULL;
    char err[256];
    sl_device_options_init(&o);
    ck_assert_int_eq(o.keep_subnormals, 0);
    o.keep_subnormals = 2;
    ck_assert_int_eq(sl_device_new(&dev, "cpu:0", &o, err, sizeof err), SL_EINVAL);
    ck_assert_ptr_null(dev);
    ck_assert_msg(strstr(err, "keep_subnormals") != NULL, "%s", err);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("float_env");
    TCase *tc = tu_tcase("subnormals", 60);
    tcase_add_test(tc, test_team_takes_the_callers_settings);
    tcase_add_test(tc, test_device_flushes_by_default);
    tcase_add_test(tc, test_device_keeps_subnormals_when_asked);
    tcase_add_test(tc, test_keep_subnormals_is_checked);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(make_suite);
}
