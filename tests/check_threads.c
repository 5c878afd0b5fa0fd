/* check_threads.c: the executor's threads. The compute team waits without
 * holding CPUs (it sleeps after a bounded spin, the caller too); the
 * executor's job slot serves several callers, each getting its own job's
 * completion; a step runs from the executor's own thread, in place on the
 * caller's thread, or posted and waited for with a timeout; OpenBLAS's
 * process-wide thread count has one owner. Being the suite linked with
 * tests/fault_alloc.c, it also fails the allocations of sl_dataset_new. */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "sluice/sluice.h"
#include "core/cpu.h"
#include "exec/blas.h"
#include "ops/op_impl.h"
#include "fault_alloc.h"
#include "testutil.h"
#include "exec/step_impl.h"
#include "devices/team.h"

/* --- helpers ---------------------------------------------------------- */

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static double wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static sl_executor *executor(int threads)
{
    sl_executor_options o;
    sl_executor *ex = NULL;
    sl_executor_options_init(&o);
    o.threads = threads;
    ck_assert_int_eq(sl_executor_new(&ex, &o), SL_OK);
    return ex;
}

/* A small trained dense network: x (8, 16) -> dense 16->10 + bias ->
 * softmax cross-entropy with y (8), SGD. */
typedef struct tiny {
    sl_graph *g;
    sl_step *step;
    sl_tensor *x, *y;
} tiny;

static void tiny_make(tiny *t, sl_executor *ex, uint64_t seed)
{
    int64_t xs[2] = {8, 16}, ys[1] = {8}, ws[2] = {10, 16}, bs[1] = {10};
    sl_init tn = {SL_INIT_TRUNCATED_NORMAL, 0.3f};
    int x, y, w, b, logits, loss;
    ck_assert_int_eq(sl_graph_new(&t->g), SL_OK);
    sl_graph_set_seed(t->g, seed);
    x = sl_graph_input(t->g, "x", SL_FLOAT32, 2, xs);
    y = sl_graph_input(t->g, "y", SL_INT32, 1, ys);
    w = sl_graph_param(t->g, "w", 2, ws, tn);
    b = sl_graph_param(t->g, "b", 1, bs, tn);
    logits = sl_graph_dense(t->g, "d", x, w, b);
    loss = sl_graph_softmax_cross_entropy(t->g, "loss", logits, y);
    ck_assert_msg(loss >= 0, "%s", sl_graph_last_error(t->g));
    ck_assert_int_eq(sl_graph_backward(t->g, loss), SL_OK);
    ck_assert_int_eq(sl_graph_sgd(t->g, 0.1f), SL_OK);
    ck_assert_int_eq(sl_step_new(&t->step, t->g, ex, SL_GRAPH_MODE, &loss, 1, 1), SL_OK);
    ck_assert_int_eq(sl_tensor_new(&t->x, SL_FLOAT32, 2, xs), SL_OK);
    ck_assert_int_eq(sl_tensor_new(&t->y, SL_INT32, 1, ys), SL_OK);
    for (size_t i = 0; i < sl_tensor_numel(t->x); i++)
        ((float *)sl_tensor_data(t->x))[i] = (float)((i * 37 + seed * 11) % 17) / 17.0f - 0.5f;
    for (int i = 0; i < 8; i++)
        ((int32_t *)sl_tensor_data(t->y))[i] = (int32_t)((i * 3 + (int)seed) % 10);
}

static void tiny_free(tiny *t)
{
    sl_step_free(t->step);
    sl_graph_free(t->g);
    sl_tensor_release(t->x);
    sl_tensor_release(t->y);
}

static float tiny_loss(const tiny *t)
{
    return *(const float *)sl_step_output(t->step, 0, NULL);
}

typedef int (*run_fn)(sl_step *, sl_tensor *const *, size_t);

/* Runs n steps with run and returns the last loss. */
static float tiny_train(tiny *t, run_fn run, int n)
{
    sl_tensor *feed[2] = {t->x, t->y};
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(run(t->step, feed, 2), SL_OK);
    return tiny_loss(t);
}

/* --- the team ---------------------------------------------------------- */

typedef struct slow_share {
    int sleep_ms;           /* how long a helper's share takes */
    atomic_int calls[4 * SL__TEAM_SHARES_PER_THREAD]; /* per share */
    atomic_int worker[4 * SL__TEAM_SHARES_PER_THREAD]; /* who ran each share */
    pthread_t caller;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int helper_started;
} slow_share;

static void slow_share_init(slow_share *s, int sleep_ms)
{
    memset(s, 0, sizeof *s);
    s->sleep_ms = sleep_ms;
    s->caller = pthread_self();
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
}

/* The caller's first share waits (asleep) until a helper has claimed one,
 * so that a helper surely runs one; the helper's first share takes
 * sleep_ms, and any other share nothing. */
static void slow_helper_job(void *arg, const sl__share *sh)
{
    slow_share *s = arg;
    atomic_fetch_add(&s->calls[sh->index], 1);
    atomic_store(&s->worker[sh->index], sh->worker);
    pthread_mutex_lock(&s->lock);
    if (pthread_equal(pthread_self(), s->caller)) {
        while (!s->helper_started)
            pthread_cond_wait(&s->cond, &s->lock);
        pthread_mutex_unlock(&s->lock);
        return;
    }
    if (s->helper_started) {
        pthread_mutex_unlock(&s->lock);
        return;
    }
    s->helper_started = 1;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    sleep_ms(s->sleep_ms);
}

/* While a helper takes long over its share, the caller runs every other
 * share, the helper's included (a thread whose CPU was taken leaves the
 * rest of its work to the others), and then sleeps rather than spinning or
 * yielding: the process uses far less CPU than the wall time. (The old
 * caller spun and then called sched_yield in a loop, using a whole CPU for
 * the whole wait; with one share per thread it could not take over the
 * rest of a helper's work once the helper had started.) */
START_TEST(test_team_caller_sleeps)
{
    sl__team t;
    slow_share s;
    double w0, c0, wall, cpu;
    if (sl__cpus_available() < 2)
        return; /* one CPU: the caller runs every share, nothing to wait for */
    slow_share_init(&s, 200);
    ck_assert_int_eq(sl__team_init(&t, 2, SL__TEAM_SPIN_NS_DEFAULT), SL_OK);
    w0 = wall_ms();
    c0 = cpu_ms();
    sl__team_run(&t, slow_helper_job, &s);
    cpu = cpu_ms() - c0;
    wall = wall_ms() - w0;
    {
        int count = 2 * SL__TEAM_SHARES_PER_THREAD, by_helper = 0;
        for (int i = 0; i < count; i++) {
            ck_assert_int_eq(atomic_load(&s.calls[i]), 1);
            by_helper += atomic_load(&s.worker[i]) != 0;
        }
        ck_assert_int_eq(by_helper, 1);
    }
    ck_assert_double_ge(wall, 190.0);
    ck_assert_msg(cpu < 0.25 * wall, "the caller used %.1f ms of CPU over a %.1f ms wait", cpu,
                  wall);
    ck_assert_uint_ge(atomic_load(&t.caller_sleeps), 1);
    sl__team_destroy(&t);
}
END_TEST

/* Idle helpers sleep after a bounded spin: over 200 ms of idleness a team
 * of 2 uses a few milliseconds of CPU at most. */
START_TEST(test_team_helpers_sleep_when_idle)
{
    sl__team t;
    slow_share s;
    double c0, cpu;
    if (sl__cpus_available() < 2)
        return; /* one CPU: no helper runs */
    slow_share_init(&s, 0);
    ck_assert_int_eq(sl__team_init(&t, 2, SL__TEAM_SPIN_NS_DEFAULT), SL_OK);
    sl__team_run(&t, slow_helper_job, &s);
    c0 = cpu_ms();
    sleep_ms(200);
    cpu = cpu_ms() - c0;
    ck_assert_msg(cpu < 40.0, "idle helpers used %.1f ms of CPU in 200 ms", cpu);
    ck_assert_uint_ge(atomic_load(&t.helper_sleeps), 1);
    sl__team_destroy(&t);
}
END_TEST

static void count_job(void *arg, const sl__share *sh)
{
    atomic_int *calls = arg;
    ck_assert_int_lt(sh->index, sh->count);
    atomic_fetch_add(&calls[sh->index], 1);
}

/* Shares are claimed by whichever thread comes first: over many short jobs
 * on two CPUs, with and without the spin, every share of every job runs
 * exactly once. */
START_TEST(test_team_every_share_once)
{
    for (int spin = 0; spin < 2; spin++) {
        sl__team t;
        enum { COUNT = 3 * SL__TEAM_SHARES_PER_THREAD };
        atomic_int calls[COUNT];
        ck_assert_int_eq(sl__team_init(&t, 3, spin ? SL__TEAM_SPIN_NS_DEFAULT : 0), SL_OK);
        for (int k = 0; k < COUNT; k++)
            atomic_init(&calls[k], 0);
        for (int i = 0; i < 5000; i++)
            sl__team_run(&t, count_job, calls);
        for (int k = 0; k < COUNT; k++)
            ck_assert_int_eq(atomic_load(&calls[k]), 5000);
        sl__team_destroy(&t);
    }
}
END_TEST

/* On one CPU, a team of two runs every share on the caller's thread (a
 * hand-off could only wait for the one CPU), every share still runs once
 * per job, and nothing spins. */
START_TEST(test_team_one_cpu)
{
    cpu_set_t one, saved;
    sl__team t;
    enum { COUNT = 2 * SL__TEAM_SHARES_PER_THREAD };
    atomic_int calls[COUNT];
    int cpu;
    ck_assert_int_eq(sched_getaffinity(0, sizeof saved, &saved), 0);
    for (cpu = 0; cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &saved); cpu++)
        ;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ck_assert_int_eq(sched_setaffinity(0, sizeof one, &one), 0);
    ck_assert_int_eq(sl__cpus_available(), 1);
    ck_assert_int_eq(sl__team_init(&t, 2, -1), SL_OK); /* helpers inherit the mask */
    ck_assert_int_eq(t.spin_ns, 0);
    ck_assert_int_eq(t.active, 1); /* the caller runs every share */
    for (int k = 0; k < COUNT; k++)
        atomic_init(&calls[k], 0);
    for (int i = 0; i < 3000; i++)
        sl__team_run(&t, count_job, calls);
    for (int k = 0; k < COUNT; k++)
        ck_assert_int_eq(atomic_load(&calls[k]), 3000);
    sl__team_destroy(&t);
    ck_assert_int_eq(sched_setaffinity(0, sizeof saved, &saved), 0);
    if (CPU_COUNT(&saved) >= 2) {
        ck_assert_int_eq(sl__team_init(&t, 2, -1), SL_OK);
        ck_assert_int_eq(t.spin_ns, SL__TEAM_SPIN_NS_DEFAULT);
        ck_assert_int_eq(t.active, 2);
        sl__team_destroy(&t);
    }
}
END_TEST

/* --- the executor's job slot -------------------------------------------- */

typedef struct caller_arg {
    sl_executor *ex;
    atomic_int ran;       /* set by the job */
    int rounds;
    int early;            /* times the call returned before the job ran */
} caller_arg;

static void mark_job(void *arg)
{
    caller_arg *c = arg;
    sleep_ms(1); /* long enough for the other caller to post meanwhile */
    atomic_store(&c->ran, 1);
}

static void *caller_main(void *arg)
{
    caller_arg *c = arg;
    for (int i = 0; i < c->rounds; i++) {
        atomic_store(&c->ran, 0);
        sl__executor_call(c->ex, mark_job, c);
        if (!atomic_load(&c->ran))
            c->early++;
    }
    return NULL;
}

/* Two threads posting to one executor: each call returns after its own
 * job ran. (The old slot woke the second caller on the first caller's
 * completion, before its own job had run.) */
START_TEST(test_executor_two_callers)
{
    sl_executor *ex = executor(2);
    caller_arg a = {ex, 0, 60, 0}, b = {ex, 0, 60, 0};
    pthread_t ta, tb;
    ck_assert_int_eq(pthread_create(&ta, NULL, caller_main, &a), 0);
    ck_assert_int_eq(pthread_create(&tb, NULL, caller_main, &b), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    ck_assert_int_eq(a.early, 0);
    ck_assert_int_eq(b.early, 0);
    sl_executor_free(ex);
}
END_TEST

typedef struct nested_arg {
    tiny *t;
    int rc_run, rc_here, rc_post, rc_wait;
} nested_arg;

static void nested_job(void *arg)
{
    nested_arg *n = arg;
    sl_tensor *feed[2] = {n->t->x, n->t->y};
    n->rc_run = sl_step_run(n->t->step, feed, 2);
    n->rc_here = sl_step_run_here(n->t->step, feed, 2);
    n->rc_post = sl_step_post(n->t->step, feed, 2);
    n->rc_wait = sl_step_wait(n->t->step, 1000);
}

/* A job on the executor's own thread (as a loop of GetNext and steps will
 * be) runs steps there. (The old executor waited on itself for ever.) */
START_TEST(test_step_from_executor_thread)
{
    sl_executor *ex = executor(2);
    tiny t, ref;
    nested_arg n = {&t, 1, 1, 1, 1};
    tiny_make(&t, ex, 1);
    tiny_make(&ref, ex, 1);
    sl__executor_call(ex, nested_job, &n);
    ck_assert_int_eq(n.rc_run, SL_OK);
    ck_assert_int_eq(n.rc_here, SL_OK);
    ck_assert_int_eq(n.rc_post, SL_OK);
    ck_assert_int_eq(n.rc_wait, SL_OK);
    /* three steps ran, the same as three from outside */
    ck_assert_float_eq(tiny_loss(&t), tiny_train(&ref, sl_step_run, 3));
    tiny_free(&t);
    tiny_free(&ref);
    sl_executor_free(ex);
}
END_TEST

typedef struct here_arg {
    tiny *t;
    run_fn run;
    int n;
    float loss;
} here_arg;

static void *train_main(void *arg)
{
    here_arg *h = arg;
    h->loss = tiny_train(h->t, h->run, h->n);
    return NULL;
}

/* Steps run in place and steps run on the executor's thread take turns on
 * one team, from two threads at once, and give exactly the numbers each
 * gives alone. */
START_TEST(test_run_here_and_run_share_the_team)
{
    sl_executor *ex = executor(2);
    tiny a, b, ra, rb;
    here_arg ha, hb;
    pthread_t ta, tb;
    float want_a, want_b;
    tiny_make(&ra, ex, 3);
    tiny_make(&rb, ex, 4);
    want_a = tiny_train(&ra, sl_step_run, 200);
    want_b = tiny_train(&rb, sl_step_run, 200);
    tiny_make(&a, ex, 3);
    tiny_make(&b, ex, 4);
    ha = (here_arg){&a, sl_step_run_here, 200, 0};
    hb = (here_arg){&b, sl_step_run, 200, 0};
    ck_assert_int_eq(pthread_create(&ta, NULL, train_main, &ha), 0);
    ck_assert_int_eq(pthread_create(&tb, NULL, train_main, &hb), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    ck_assert_float_eq(ha.loss, want_a);
    ck_assert_float_eq(hb.loss, want_b);
    tiny_free(&a);
    tiny_free(&b);
    tiny_free(&ra);
    tiny_free(&rb);
    sl_executor_free(ex);
}
END_TEST

typedef struct gate {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int open;
} gate;

static void gate_job(void *arg)
{
    gate *g = arg;
    pthread_mutex_lock(&g->lock);
    while (!g->open)
        pthread_cond_wait(&g->cond, &g->lock);
    pthread_mutex_unlock(&g->lock);
}

/* Post, then wait with a timeout: a job still running times out, and a
 * later wait sees it done; a post while the slot is busy queues behind. */
START_TEST(test_post_and_wait_with_timeout)
{
    sl_executor *ex = executor(1);
    gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    tiny t;
    uint64_t ticket;
    double t0;
    tiny_make(&t, ex, 5);
    ck_assert_int_eq(sl_step_wait(t.step, 0), SL_ESTATE);
    ck_assert_int_eq(sl__executor_post(ex, gate_job, &g, &ticket), SL_OK);
    t0 = wall_ms();
    ck_assert_int_eq(sl__executor_wait(ex, ticket, 50), SL_ETIMEDOUT);
    ck_assert_double_ge(wall_ms() - t0, 45.0);
    {
        sl_tensor *feed[2] = {t.x, t.y};
        ck_assert_int_eq(sl_step_post(t.step, feed, 2), SL_OK); /* behind the gate */
    }
    ck_assert_int_eq(sl_step_wait(t.step, 20), SL_ETIMEDOUT);
    ck_assert_ptr_nonnull(strstr(sl_step_last_error(t.step), "still runs"));
    pthread_mutex_lock(&g.lock);
    g.open = 1;
    pthread_cond_broadcast(&g.cond);
    pthread_mutex_unlock(&g.lock);
    ck_assert_int_eq(sl__executor_wait(ex, ticket, -1), SL_OK);
    ck_assert_int_eq(sl_step_wait(t.step, -1), SL_OK);
    ck_assert_int_eq(sl_step_wait(t.step, 0), SL_ESTATE);
    tiny_free(&t);
    sl_executor_free(ex);
}
END_TEST


/* --- the model waiting for data ----------------------------------------- */

/* A map op that passes its input through once its gate opens: a pipeline
 * stage that stalls for as long as a test wants. */
typedef struct gate_op {
    sl_op base;
    gate *g;
} gate_op;

static int gate_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    (void)ctx;
    gate_job(((const gate_op *)op)->g);
    *out = in;
    return SL_OK;
}

static const sl_op_iface gate_iface = {"Gate", tu_infer_identity, gate_run, NULL};

static void gate_open(gate *g)
{
    pthread_mutex_lock(&g->lock);
    g->open = 1;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
}

/* An MLP over a small generated MNIST whose label map waits at the gate. */
typedef struct gated_run {
    char *dir;
    sl_dataset *ds;
    sl_model *m;
    gate g;
} gated_run;

static void mlp_make(gated_run *r, int data_timeout_ms, sl_mnist_usage usage, int gated,
                     int64_t batch);

static void gated_make(gated_run *r, int data_timeout_ms)
{
    mlp_make(r, data_timeout_ms, SL_MNIST_TRAIN, 1, 8);
}

/* An MLP of batch `batch` over a generated MNIST (64 train, 3 test images),
 * its label map waiting at the gate when gated is 1. */
static void mlp_make(gated_run *r, int data_timeout_ms, sl_mnist_usage usage, int gated,
                     int64_t batch)
{
    sl_mnist_options mo;
    sl_model_options o;
    sl_op *cast, *rescale, *chw, *gop;
    char err[512];
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->g.lock, NULL);
    pthread_cond_init(&r->g.cond, NULL);
    r->dir = tu_mkdtemp();
    ck_assert_ptr_nonnull(r->dir);
    ck_assert_int_eq(tu_make_mnist(r->dir, 64, 3, 0), 0);
    ck_assert_int_eq(sl_dataset_new(&r->ds), SL_OK);
    sl_mnist_options_init(&mo);
    mo.dataset_dir = r->dir;
    mo.usage = usage;
    ck_assert_msg(sl_dataset_mnist(r->ds, &mo) == SL_OK, "%s", sl_dataset_last_error(r->ds));
    ck_assert_int_eq(sl_op_type_cast_new(&cast, SL_INT32, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_rescale_new(&rescale, 1.0 / 255.0, 0.0, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_hwc2chw_new(&chw, NULL, 0), SL_OK);
    ck_assert_int_eq(sl__op_alloc(&gop, sizeof(gate_op), &gate_iface, 0), SL_OK);
    ((gate_op *)gop)->g = &r->g;
    if (gated)
        ck_assert_int_eq(sl_dataset_map(r->ds, &gop, 1, "label", NULL, 1), SL_OK);
    ck_assert_int_eq(sl_dataset_map(r->ds, &cast, 1, "label", NULL, 1), SL_OK);
    ck_assert_int_eq(sl_dataset_map(r->ds, &rescale, 1, "image", NULL, 1), SL_OK);
    ck_assert_int_eq(sl_dataset_map(r->ds, &chw, 1, "image", NULL, 1), SL_OK);
    ck_assert_int_eq(sl_dataset_batch(r->ds, batch, usage == SL_MNIST_TRAIN, 1), SL_OK);
    sl_op_release(cast);
    sl_op_release(rescale);
    sl_op_release(chw);
    sl_op_release(gop);
    sl_model_options_init(&o);
    o.network.kind = SL_NETWORK_MLP;
    o.network.batch = batch;
    o.network.height = 28;
    o.network.width = 28;
    o.network.hidden[0] = 16;
    o.network.nhidden = 1;
    o.context.threads = 1;
    o.data_timeout_ms = data_timeout_ms;
    ck_assert_msg(sl_model_new(&r->m, &o, err, sizeof err) == SL_OK, "%s", err);
}

static void gated_free(gated_run *r)
{
    sl_model_free(r->m);
    sl_dataset_free(r->ds);
    tu_rmtree(r->dir);
    free(r->dir);
    pthread_cond_destroy(&r->g.cond);
    pthread_mutex_destroy(&r->g.lock);
}

typedef struct later {
    gated_run *r;
    int stop_after_ms;   /* < 0: do not stop */
    int open_after_ms;   /* counted after the stop */
} later;

static void *later_main(void *arg)
{
    later *l = arg;
    if (l->stop_after_ms >= 0) {
        sleep_ms(l->stop_after_ms);
        sl_model_stop(l->r->m);
    }
    sleep_ms(l->open_after_ms);
    gate_open(&l->r->g);
    return NULL;
}

/* A stalled pipeline makes train fail after data_timeout_ms, naming the
 * stage, rather than hang; the stage is released later and everything is
 * joined. */
START_TEST(test_train_data_timeout_names_the_stage)
{
    gated_run r;
    later l;
    pthread_t t;
    double t0, ms;
    int rc;
    gated_make(&r, 200);
    l = (later){&r, -1, 1500};
    ck_assert_int_eq(pthread_create(&t, NULL, later_main, &l), 0);
    t0 = wall_ms();
    rc = sl_model_train(r.m, 1, r.ds, NULL, 0);
    ms = wall_ms() - t0;
    pthread_join(t, NULL);
    ck_assert_int_eq(rc, SL_ETIMEDOUT);
    ck_assert_msg(strstr(sl_model_last_error(r.m), "no row within 200 ms") &&
                      strstr(sl_model_last_error(r.m), "stage 'map"),
                  "%s", sl_model_last_error(r.m));
    ck_assert_int_eq(sl_model_global_step(r.m), 0);
    ck_assert_double_ge(ms, 190.0);
    gated_free(&r);
}
END_TEST

/* sl_model_stop from another thread wakes a train waiting for data: it
 * returns without running another step, though data came later. (Before,
 * the stop was seen only after the next batch had been trained on.) */
START_TEST(test_stop_wakes_a_wait_for_data)
{
    gated_run r;
    later l;
    pthread_t t;
    int rc;
    gated_make(&r, -1);
    l = (later){&r, 200, 300};
    ck_assert_int_eq(pthread_create(&t, NULL, later_main, &l), 0);
    rc = sl_model_train(r.m, 1, r.ds, NULL, 0);
    pthread_join(t, NULL);
    ck_assert_msg(rc == SL_OK, "%s", sl_model_last_error(r.m));
    ck_assert_int_eq(sl_model_global_step(r.m), 0);
    gated_free(&r);
}
END_TEST

/* Eval pads a short last batch to the model's batch. When making the pad
 * fails, eval returns the error, and a later eval works: the pad is made
 * whole or not at all. (Before, a failed label pad was dereferenced, and a
 * half-made pad stayed for the next eval.) */
START_TEST(test_eval_pad_failure)
{
    /* batch 64 of 1x28x28 float32 images: 200704 bytes of pixels and 256
     * of labels, each after a tensor header of less than 512 bytes */
    static const size_t ranges[2][2] = {{200705, 201216}, {257, 768}};
    for (int k = 0; k < 2; k++) {
        gated_run r;
        sl_metrics met;
        int rc;
        mlp_make(&r, -1, SL_MNIST_TEST, 0, 64);
        fault_alloc_arm(ranges[k][0], ranges[k][1]);
        rc = sl_model_eval(r.m, r.ds, &met);
        ck_assert_int_eq(fault_alloc_disarm(), 1);
        ck_assert_int_eq(rc, SL_ENOMEM);
        ck_assert_msg(strstr(sl_model_last_error(r.m), "padded last batch"), "%s",
                      sl_model_last_error(r.m));
        rc = sl_model_eval(r.m, r.ds, &met);
        ck_assert_msg(rc == SL_OK, "%s", sl_model_last_error(r.m));
        ck_assert_int_eq(met.samples, 3);
        gated_free(&r);
    }
}
END_TEST

/* A dataset whose buffer pool cannot be allocated (the dataset's first
 * aligned_alloc): sl_dataset_new returns SL_ENOMEM and sets *out to NULL,
 * and the next call works. */
START_TEST(test_dataset_new_out_of_memory)
{
    sl_dataset *ds = (sl_dataset *)&ds; /* not NULL: the call must clear it */
    int rc;
    fault_alloc_arm(0, (size_t)-1);
    rc = sl_dataset_new(&ds);
    ck_assert_int_eq(fault_alloc_disarm(), 1);
    ck_assert_int_eq(rc, SL_ENOMEM);
    ck_assert_ptr_null(ds);
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    ck_assert_ptr_nonnull(ds);
    sl_dataset_free(ds);
}
END_TEST

/* --- OpenBLAS's thread count -------------------------------------------- */

START_TEST(test_blas_threads_have_one_owner)
{
    sl_executor_options o;
    sl_executor *a = NULL, *b = NULL, *c = NULL;
    int held = 0;
    sl_executor_options_init(&o);
    o.blas_threads = 1;
    ck_assert_int_eq(sl_executor_new(&a, &o), SL_OK);
    ck_assert_int_eq(sl__blas_threads(), 1);
    o.blas_threads = 2; /* a second executor may not change it under the first */
    ck_assert_int_eq(sl_executor_new(&b, &o), SL_ESTATE);
    ck_assert_ptr_null(b);
    ck_assert_int_eq(sl__blas_acquire_count(2, &held), SL_ESTATE);
    ck_assert_int_eq(held, 1);
    o.blas_threads = 1; /* the same count is fine */
    ck_assert_int_eq(sl_executor_new(&c, &o), SL_OK);
    sl_executor_free(a);
    sl_executor_free(c);
    ck_assert_int_eq(sl__blas_threads(), 0);
    o.blas_threads = 2; /* once nobody holds it, it may change */
    ck_assert_int_eq(sl_executor_new(&b, &o), SL_OK);
    ck_assert_int_eq(sl__blas_threads(), 2);
    sl_executor_free(b);
}
END_TEST

static Suite *make_threads_suite(void)
{
    Suite *s = suite_create("threads");
    TCase *tc = tu_tcase("team", 60);
    tcase_add_test(tc, test_team_caller_sleeps);
    tcase_add_test(tc, test_team_helpers_sleep_when_idle);
    tcase_add_test(tc, test_team_every_share_once);
    tcase_add_test(tc, test_team_one_cpu);
    suite_add_tcase(s, tc);
    tc = tu_tcase("executor", 60);
    tcase_add_test(tc, test_executor_two_callers);
    tcase_add_test(tc, test_step_from_executor_thread);
    tcase_add_test(tc, test_run_here_and_run_share_the_team);
    tcase_add_test(tc, test_post_and_wait_with_timeout);
    tcase_add_test(tc, test_blas_threads_have_one_owner);
    suite_add_tcase(s, tc);
    tc = tu_tcase("model", 60);
    tcase_add_test(tc, test_train_data_timeout_names_the_stage);
    tcase_add_test(tc, test_stop_wakes_a_wait_for_data);
    tcase_add_test(tc, test_eval_pad_failure);
    tcase_add_test(tc, test_dataset_new_out_of_memory);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(make_threads_suite);
}
