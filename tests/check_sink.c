/* check_sink.c: data sinking end to end. Sink mode reaches the parameters
 * of host-fed training bit for bit (cpu:0 and sim:0); sink_size N walks the
 * data without a gap or a repeat across epochs, with one step_end per sink;
 * data_sink calls continue each other; sl_model_stop ends a sink within
 * 100 ms and joins every thread; a starved GetNext, a pipeline error and a
 * batch of the wrong shape reach the caller with messages that say where;
 * a pipeline that never delivers ends train at the timeout plus a second;
 * bad options are refused; one channel deals batches round-robin to several
 * device queues; the sink stats count what happened.
 *
 * Built with a sanitizer, the long tests run shortened (tu_shorten says
 * how): a LeNet step costs ~35x there. The plain build runs them whole. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "core/cpu.h"
#include "core/error.h"
#include "devices/device_queue.h"
#include "devices/channel.h"
#include "exec/model_impl.h"
#include "devices/team.h"
#include "ops/op_impl.h"
#include "pipeline/dataset_impl.h"
#include "pipeline/source.h"
#include "sluice/sluice.h"
#include "testutil.h"

Suite *make_sink_suite(void);

#define FASHION "/usr/share/datasets/fashion-mnist"

/* --- helpers ---------------------------------------------------------- */

static double wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        continue;
}

/* sluice's threads in this process now: those /proc/self/task lists under
 * a name starting "sl-" (every thread the library starts names itself so).
 * A train that joined everything it started leaves the count as it found
 * it. Other threads are not counted: ThreadSanitizer's own, started when
 * it first needs it, made the process's count grow by one mid-test. */
static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)) != NULL) {
        char path[300], name[32] = "";
        FILE *f;
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        f = fopen(path, "r");
        if (!f)
            continue; /* it ended between the listing and the read */
        if (fgets(name, sizeof name, f) && strncmp(name, "sl-", 3) == 0)
            n++;
        fclose(f);
    }
    closedir(d);
    return n;
}

/* The count once it is want, or after 100 ms: a thread that pthread_join
 * has returned for may still be listed for a moment while the kernel
 * reaps it. */
static int thread_count_settled(int want)
{
    int n = thread_count();
    for (int i = 0; i < 50 && n != want; i++) {
        sleep_ms(2);
        n = thread_count();
    }
    return n;
}

static int fashion_present(void)
{
    return access(FASHION "/train-images-idx3-ubyte.gz", R_OK) == 0 &&
           access(FASHION "/t10k-images-idx3-ubyte.gz", R_OK) == 0;
}

/* Fashion-MNIST is the Debian package dataset-fashion-mnist, which the
 * README's test command installs: a test that needs the real files fails
 * without them, naming the package, rather than pass untested. */
static void need_fashion(const char *test)
{
    ck_assert_msg(fashion_present(),
                  "%s: %s is absent: install the Debian package dataset-fashion-mnist "
                  "(the README's test command does)",
                  test, FASHION);
}

/* LeNet (the defaults) with seed on "CPU" or "SIM". */
static sl_model *lenet_on(const char *target, uint64_t seed)
{
    sl_model_options o;
    sl_model *m = NULL;
    char err[512];
    sl_model_options_init(&o);
    o.seed = seed;
    o.context.device_target = target;
    ck_assert_msg(sl_model_new(&m, &o, err, sizeof err) == SL_OK, "%s", err);
    return m;
}

/* The transfer sink_opts asks for. Loop tests run under both kinds
 * (use_transfer(_i)): a transfer thread, and the executor copying inline;
 * the other tests leave the choice to the library (auto). */
static int32_t g_transfer = SL_TRANSFER_AUTO;

static const char *use_transfer(int i)
{
    g_transfer = i == 0 ? SL_TRANSFER_THREAD : SL_TRANSFER_INLINE;
    return i == 0 ? "transfer thread" : "inline transfer";
}

static sl_train_options sink_opts(int sink, int64_t sink_size)
{
    sl_train_options t;
    sl_train_options_init(&t);
    t.dataset_sink_mode = sink;
    t.sink_size = sink_size;
    t.transfer = g_transfer;
    return t;
}

typedef struct tmp_mnist {
    char *dir;
} tmp_mnist;

static tmp_mnist make_mnist(uint32_t n_train, uint32_t n_test)
{
    tmp_mnist t;
    t.dir = tu_mkdtemp();
    ck_assert_ptr_nonnull(t.dir);
    ck_assert_int_eq(tu_make_mnist(t.dir, n_train, n_test, 0), 0);
    return t;
}

static void drop_mnist(tmp_mnist *t)
{
    tu_rmtree(t->dir);
    free(t->dir);
}

/* A callback recording what the hooks saw. */
typedef struct recorder {
    int64_t begins, ends, epoch_begins, epoch_ends, step_ends;
    int64_t step_in_epoch[64], global_step[64], epoch[64];
    double step_ms[64], epoch_ms[64];
    float loss[64];
} recorder;

static int rec_begin(void *self, const sl_train_info *info)
{
    (void)info;
    ((recorder *)self)->begins++;
    return 0;
}

static int rec_epoch_begin(void *self, const sl_train_info *info)
{
    (void)info;
    ((recorder *)self)->epoch_begins++;
    return 0;
}

static int rec_step_end(void *self, const sl_train_info *info)
{
    recorder *r = self;
    if (r->step_ends < 64) {
        r->step_in_epoch[r->step_ends] = info->step_in_epoch;
        r->global_step[r->step_ends] = info->global_step;
        r->epoch[r->step_ends] = info->epoch;
        r->loss[r->step_ends] = info->loss;
    }
    r->step_ends++;
    return 0;
}

static int rec_epoch_end(void *self, const sl_train_info *info)
{
    recorder *r = self;
    if (r->epoch_ends < 64) {
        r->step_ms[r->epoch_ends] = info->step_ms;
        r->epoch_ms[r->epoch_ends] = info->epoch_ms;
    }
    r->epoch_ends++;
    return 0;
}

static int rec_end(void *self, const sl_train_info *info)
{
    (void)info;
    ((recorder *)self)->ends++;
    return 0;
}

static sl_callback recording(recorder *r)
{
    sl_callback cb;
    memset(r, 0, sizeof *r);
    memset(&cb, 0, sizeof cb);
    cb.self = r;
    cb.begin = rec_begin;
    cb.epoch_begin = rec_epoch_begin;
    cb.step_end = rec_step_end;
    cb.epoch_end = rec_epoch_end;
    cb.end = rec_end;
    return cb;
}

/* The lines a LossMonitor or TimeMonitor emitted. */
typedef struct lines {
    int n;
    char line[16][160];
} lines;

static void collect_line(void *user, const char *line)
{
    lines *l = user;
    if (l->n < 16)
        snprintf(l->line[l->n], sizeof l->line[0], "%s", line);
    l->n++;
}

/* --- a pipeline stage that waits at a gate --------------------------- */

/* Passes its first `pass` rows at once and every later one only when the
 * gate is open: a stage that stalls for as long as a test wants. */
typedef struct gate {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int open;
    int64_t pass, passed;
    int row_ms;          /* each row then takes this long (a slow stage) */
} gate;

typedef struct gate_op {
    sl_op base;
    gate *g;
} gate_op;

static int gate_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    gate *g = ((const gate_op *)op)->g;
    (void)ctx;
    pthread_mutex_lock(&g->lock);
    while (!g->open && g->passed >= g->pass)
        pthread_cond_wait(&g->cond, &g->lock);
    g->passed++;
    pthread_mutex_unlock(&g->lock);
    if (g->row_ms > 0)
        sleep_ms(g->row_ms);
    *out = in;
    return SL_OK;
}

static const sl_op_iface gate_iface = {"Gate", tu_infer_identity, gate_run, NULL};

static void gate_init(gate *g, int64_t pass)
{
    memset(g, 0, sizeof *g);
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->cond, NULL);
    g->pass = pass;
}

static void gate_open(gate *g)
{
    pthread_mutex_lock(&g->lock);
    g->open = 1;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
}

static void gate_destroy(gate *g)
{
    pthread_cond_destroy(&g->cond);
    pthread_mutex_destroy(&g->lock);
}

/* --- a source that never delivers ------------------------------------- */

/* Stands in for a dataset's source and never delivers: its prepare waits
 * at a gate no one opens, until the pipeline stops (which calls the wake
 * hook, as a real source waiting for another iterator's load is woken). A
 * stall that only a timeout ends. */
typedef struct stall_source {
    sl__source base;
    sl__source *inner; /* the dataset's source: its columns */
    pthread_mutex_t lock;
    pthread_cond_t cond;
} stall_source;

static int stall_prepare(sl__source *src, const atomic_int *stop, sl__error *err)
{
    stall_source *s = (stall_source *)src;
    pthread_mutex_lock(&s->lock);
    while (!atomic_load(stop))
        pthread_cond_wait(&s->cond, &s->lock);
    pthread_mutex_unlock(&s->lock);
    return sl__errf(err, SL_ECLOSED, "stall: stopped");
}

static void stall_wake(sl__source *src)
{
    stall_source *s = (stall_source *)src;
    pthread_mutex_lock(&s->lock);
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

static int stall_read(sl__source *src, int64_t index, sl__row *row, sl_pool *pool,
                      sl__error *err)
{
    sl__source *in = ((stall_source *)src)->inner;
    return in->iface->read(in, index, row, pool, err);
}

static size_t stall_size_hint(const sl__source *src, int64_t index)
{
    const sl__source *in = ((const stall_source *)src)->inner;
    return in->iface->size_hint(in, index);
}

static void stall_describe(const sl__source *src, int64_t index, char *buf, size_t len)
{
    const sl__source *in = ((const stall_source *)src)->inner;
    in->iface->describe(in, index, buf, len);
}

static double stall_load_ms(const sl__source *src)
{
    (void)src;
    return 0;
}

static void stall_destroy(sl__source *src)
{
    stall_source *s = (stall_source *)src;
    sl__source_release(s->inner);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->lock);
}

static const sl__source_iface stall_iface = {
    .kind = "stall",
    .prepare = stall_prepare,
    .wake = stall_wake,
    .read = stall_read,
    .size_hint = stall_size_hint,
    .describe = stall_describe,
    .load_ms = stall_load_ms,
    .destroy = stall_destroy,
};

/* Puts a stall_source with the columns of ds's source in its place. */
static void stall_source_of(sl_dataset *ds)
{
    stall_source *s = calloc(1, sizeof *s);
    sl__source *in = ds->source;
    ck_assert_ptr_nonnull(s);
    ck_assert_ptr_nonnull(in);
    s->inner = in;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    s->base.iface = &stall_iface;
    atomic_init(&s->base.refs, 1);
    s->base.num_rows = in->num_rows;
    s->base.sampler = in->sampler;
    s->base.ncols = in->ncols;
    memcpy(s->base.names, in->names, sizeof s->base.names);
    memcpy(s->base.specs, in->specs, sizeof s->base.specs);
    memcpy(s->base.summary, in->summary, sizeof s->base.summary);
    ds->source = &s->base;
}

/* --- GetNext seen waiting ---------------------------------------------- */

/* 1 when a GetNext waits on m's device queue now (the queue's own count
 * of waiters; a sink-mode train with a transfer thread, where GetNext
 * waits in the queue). */
static int getnext_waits(sl_model *m)
{
    int waits = 0;
    pthread_mutex_lock(&m->active_lock); /* the channel lives while it is set */
    if (m->active_channel) {
        sl__dq_stats st;
        sl__dq_get_stats(sl__channel_queue(m->active_channel, 0), &st);
        waits = st.getnext_waiters > 0;
    }
    pthread_mutex_unlock(&m->active_lock);
    return waits;
}

/* Opens g once GetNext waits on m's queue: the wait is injected, not
 * assumed from a time. */
typedef struct getnext_opener {
    sl_model *m;
    gate *g;
} getnext_opener;

static void *open_when_getnext_waits(void *arg)
{
    getnext_opener *o = arg;
    while (!getnext_waits(o->m))
        sleep_ms(1);
    gate_open(o->g);
    return NULL;
}

/* An MLP over 28x28 images (batch `batch`, one hidden layer of 16) and the
 * pipeline of a generated MNIST folder feeding it, its label map waiting
 * at g when g is not NULL (no shuffle: the order is the files'). */
static sl_model *mlp_model(int64_t batch, const char *target)
{
    sl_model_options o;
    sl_model *m = NULL;
    char err[512];
    sl_model_options_init(&o);
    o.network.kind = SL_NETWORK_MLP;
    o.network.batch = batch;
    o.network.height = 28;
    o.network.width = 28;
    o.network.hidden[0] = 16;
    o.network.nhidden = 1;
    o.context.threads = 1;
    o.context.device_target = target;
    ck_assert_msg(sl_model_new(&m, &o, err, sizeof err) == SL_OK, "%s", err);
    return m;
}

static sl_dataset *mlp_pipeline(const char *dir, int64_t batch, gate *g)
{
    sl_mnist_options mo;
    sl_dataset *ds;
    sl_op *cast, *rescale, *chw, *gop;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_mnist_options_init(&mo);
    mo.dataset_dir = dir;
    mo.usage = SL_MNIST_TRAIN;
    mo.sampler.shuffle = 0;
    ck_assert_msg(sl_dataset_mnist(ds, &mo) == SL_OK, "%s", sl_dataset_last_error(ds));
    ck_assert_int_eq(sl_op_type_cast_new(&cast, SL_INT32, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_rescale_new(&rescale, 1.0 / 255.0, 0.0, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_hwc2chw_new(&chw, NULL, 0), SL_OK);
    ck_assert_int_eq(sl__op_alloc(&gop, sizeof(gate_op), &gate_iface, 0), SL_OK);
    ((gate_op *)gop)->g = g;
    if (g)
        ck_assert_int_eq(sl_dataset_map(ds, &gop, 1, "label", NULL, 1), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &cast, 1, "label", NULL, 1), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &rescale, 1, "image", NULL, 1), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &chw, 1, "image", NULL, 1), SL_OK);
    ck_assert_int_eq(sl_dataset_batch(ds, batch, 1, 1), SL_OK);
    sl_op_release(cast);
    sl_op_release(rescale);
    sl_op_release(chw);
    sl_op_release(gop);
    return ds;
}

static uint64_t interactions(sl_model *m)
{
    sl_device_stats st;
    sl_device_get_stats(sl_model_device(m), &st);
    return st.interactions;
}

/* --- 1. bit identity --------------------------------------------------- */

/* Trains a fresh LeNet (seed 7) on target for one epoch of ds, sink or not;
 * the model is the caller's. */
static sl_model *train_one_epoch(const char *target, sl_dataset *ds, int sink, int64_t steps)
{
    sl_model *m = lenet_on(target, 7);
    sl_train_options t = sink_opts(sink, -1);
    int rc = sl_model_train_opts(m, 1, ds, NULL, 0, &t);
    ck_assert_msg(rc == SL_OK, "%s sink %d: %s", target, sink, sl_model_last_error(m));
    ck_assert_int_eq(sl_model_global_step(m), steps);
    return m;
}

/* The same seed gives the same parameters bit for bit whether the host
 * feeds every step or the executor sinks the whole epoch (sink_size -1),
 * on cpu:0 and on sim:0 (whose non-sink steps read copies in its own
 * memory). */
START_TEST(test_sink_equals_nonsink_bit_for_bit)
{
    int shorten = tu_shorten(TU_SANITIZED, "test_sink_equals_nonsink_bit_for_bit",
                             "20 steps of 640 images (not 200 of 6,400)");
    int64_t steps = shorten ? 20 : 200;
    sl_dataset *ds;
    sl_model *ref, *m;
    need_fashion("test_sink_equals_nonsink_bit_for_bit");
    /* one epoch of exactly `steps` batches, so that sink_size -1 sinks it whole */
    ds = tu_lenet_pipeline(FASHION, SL_MNIST_TRAIN, 2, 42, 1, 1, steps * 32);
    ck_assert_int_eq(tu_dataset_size(ds), steps);
    ref = train_one_epoch("CPU", ds, 0, steps);
    for (int i = 0; i < 2; i++) {
        char what[96];
        snprintf(what, sizeof what, "cpu:0 sink (%s) against cpu:0 non-sink", use_transfer(i));
        m = train_one_epoch("CPU", ds, 1, steps);
        tu_assert_same_params(ref, m, what);
        sl_model_free(m);
    }
    g_transfer = SL_TRANSFER_AUTO; /* sim:0 copies on a thread */
    m = train_one_epoch("SIM", ds, 1, steps);
    ck_assert_str_eq(sl_device_name(sl_model_device(m)), "sim:0");
    tu_assert_same_params(ref, m, "sim:0 sink against cpu:0 non-sink");
    sl_model_free(m);
    m = train_one_epoch("SIM", ds, 0, steps);
    tu_assert_same_params(ref, m, "sim:0 non-sink against cpu:0 non-sink");
    sl_model_free(m);
    sl_model_free(ref);
    sl_dataset_free(ds);
}
END_TEST

/* --- 2. continuous traversal ------------------------------------------- */

/* Trains LeNet (seed 3) on ds in sink mode, epochs x sink_size, recording
 * the hooks, a LossMonitor (every step) and a TimeMonitor, and checks what
 * they saw; returns the model. */
static sl_model *sink_traversal(sl_dataset *ds, int64_t epochs, int64_t sink_size)
{
    sl_model *m = lenet_on("CPU", 3);
    sl_train_options t = sink_opts(1, sink_size);
    recorder rec;
    lines loss_lines, time_lines;
    sl_callback cb = recording(&rec), lm, tm;
    sl_callback *cbs[3] = {&cb, &lm, &tm};
    memset(&loss_lines, 0, sizeof loss_lines);
    memset(&time_lines, 0, sizeof time_lines);
    ck_assert_int_eq(sl_callback_loss_monitor(&lm, 1, 0, collect_line, &loss_lines), SL_OK);
    ck_assert_int_eq(sl_callback_time_monitor(&tm, collect_line, &time_lines), SL_OK);
    ck_assert_msg(sl_model_train_opts(m, epochs, ds, cbs, 3, &t) == SL_OK, "%s",
                  sl_model_last_error(m));
    ck_assert_int_eq(sl_model_global_step(m), epochs * sink_size);
    /* one step_end per sink, as the seeds' LossMonitor sees in sink mode */
    ck_assert_int_eq(rec.begins, 1);
    ck_assert_int_eq(rec.ends, 1);
    ck_assert_int_eq(rec.epoch_begins, epochs);
    ck_assert_int_eq(rec.epoch_ends, epochs);
    ck_assert_int_eq(rec.step_ends, epochs);
    ck_assert_int_eq(loss_lines.n, epochs);
    ck_assert_int_eq(time_lines.n, epochs);
    for (int64_t e = 0; e < epochs; e++) {
        char want[64];
        double epoch_ms, per_ms;
        ck_assert_int_eq(rec.epoch[e], e + 1);
        ck_assert_int_eq(rec.step_in_epoch[e], sink_size);
        ck_assert_int_eq(rec.global_step[e], (e + 1) * sink_size);
        ck_assert(isfinite(rec.loss[e]) && rec.loss[e] > 0.0f);
        snprintf(want, sizeof want, "epoch: %lld step: %lld, loss is ", (long long)e + 1,
                 (long long)sink_size);
        ck_assert_msg(strncmp(loss_lines.line[e], want, strlen(want)) == 0, "%s",
                      loss_lines.line[e]);
        /* the per-step time is the sink's time over its steps */
        ck_assert_double_gt(rec.epoch_ms[e], 0.0);
        ck_assert_msg(fabs(rec.step_ms[e] * (double)sink_size - rec.epoch_ms[e]) <=
                          1e-9 * rec.epoch_ms[e],
                      "epoch %lld: step_ms %.6f x %lld steps != epoch_ms %.6f", (long long)e + 1,
                      rec.step_ms[e], (long long)sink_size, rec.epoch_ms[e]);
        ck_assert_msg(sscanf(time_lines.line[e], "epoch time: %lf ms, per step time: %lf ms",
                             &epoch_ms, &per_ms) == 2,
                      "%s", time_lines.line[e]);
        ck_assert_msg(fabs(per_ms - epoch_ms / (double)sink_size) <= 0.0011, "%s",
                      time_lines.line[e]);
    }
    sl_callback_release(&lm);
    sl_callback_release(&tm);
    return m;
}

/* sink_size N over E epochs visits the samples that E x N host-fed steps
 * visit, in the same order, crossing the dataset's epoch boundaries
 * without a gap or a repeat: the parameters match bit for bit. */
static void check_traversal(sl_dataset *ds, int64_t epochs, int64_t sink_size)
{
    int64_t size = tu_dataset_size(ds), total = epochs * sink_size;
    sl_model *sunk = sink_traversal(ds, epochs, sink_size);
    sl_model *fed = lenet_on("CPU", 3);
    sl_train_options t = sink_opts(0, -1);
    ck_assert_int_gt(size, 0);
    t.max_steps = total;
    ck_assert_msg(sl_model_train_opts(fed, (total + size - 1) / size, ds, NULL, 0, &t) == SL_OK,
                  "%s", sl_model_last_error(fed));
    ck_assert_int_eq(sl_model_global_step(fed), total);
    tu_assert_same_params(fed, sunk, "sink_size traversal against host-fed steps");
    sl_model_free(sunk);
    sl_model_free(fed);
}

/* A small generated MNIST of 3 batches an epoch and sink_size 4: every
 * sink but none ends where an epoch does. Cheap, so both builds run it. */
START_TEST(test_sink_size_spans_epochs)
{
    tmp_mnist t = make_mnist(96, 8);
    sl_dataset *ds = tu_lenet_pipeline(t.dir, SL_MNIST_TRAIN, 2, 5, 1, 1, 0);
    ck_assert_int_eq(tu_dataset_size(ds), 3);
    for (int i = 0; i < 2; i++) {
        use_transfer(i);
        check_traversal(ds, 3, 4);
    }
    g_transfer = SL_TRANSFER_AUTO;
    sl_dataset_free(ds);
    drop_mnist(&t);
}
END_TEST

/* The seeds' numbers: sink_size 1000 for 3 epochs of Fashion-MNIST (1,875
 * batches an epoch) against 3,000 host-fed steps. Under a sanitizer the
 * generated case above stands for it. */
START_TEST(test_sink_size_1000_fashion)
{
    sl_dataset *ds;
    if (tu_shorten(TU_SANITIZED, "test_sink_size_1000_fashion",
                   "not run: test_sink_size_spans_epochs checks the same on a small "
                   "generated MNIST (3 x 4 steps, not 3 x 1,000)"))
        return;
    need_fashion("test_sink_size_1000_fashion");
    ds = tu_lenet_pipeline(FASHION, SL_MNIST_TRAIN, 2, 11, 1, 1, 0);
    ck_assert_int_eq(tu_dataset_size(ds), 1875);
    check_traversal(ds, 3, 1000);
    sl_dataset_free(ds);
}
END_TEST

/* --- 3. data_sink ------------------------------------------------------- */

/* Runs `calls` calls of sink_size on a fresh LeNet (seed 9); returns the
 * model and the last call's loss. */
static sl_model *data_sink_calls(sl_dataset *ds, int64_t sink_size, int calls, float *loss)
{
    sl_model *m = lenet_on("CPU", 9);
    sl_data_sink *s = NULL;
    sl_train_options o = sink_opts(1, -1);
    ck_assert_msg(sl_data_sink_new(&s, m, ds, sink_size, &o) == SL_OK, "%s",
                  sl_model_last_error(m));
    for (int i = 0; i < calls; i++) {
        *loss = NAN;
        ck_assert_msg(sl_data_sink_call(s, loss) == SL_OK, "%s", sl_model_last_error(m));
        ck_assert(isfinite(*loss));
        ck_assert_int_eq(sl_model_global_step(m), (int64_t)(i + 1) * sink_size);
    }
    sl_data_sink_free(s);
    return m;
}

/* Two calls of 500 equal one of 1000: the same parameters bit for bit and
 * the same last loss. The epoch is 750 batches, so the first call ends
 * mid-epoch and the second crosses into the next. */
START_TEST(test_data_sink_calls_continue)
{
    int shorten = tu_shorten(TU_SANITIZED, "test_data_sink_calls_continue",
                             "2 x 10 against 20 steps, epochs of 15 batches (not 2 x 500 "
                             "against 1,000, epochs of 750)");
    int64_t half = shorten ? 10 : 500, epoch = shorten ? 15 : 750;
    sl_dataset *ds;
    sl_model *two, *one;
    float loss2, loss1;
    need_fashion("test_data_sink_calls_continue");
    use_transfer(_i);
    ds = tu_lenet_pipeline(FASHION, SL_MNIST_TRAIN, 2, 13, 1, 1, epoch * 32);
    ck_assert_int_eq(tu_dataset_size(ds), epoch);
    two = data_sink_calls(ds, half, 2, &loss2);
    one = data_sink_calls(ds, 2 * half, 1, &loss1);
    tu_assert_same_params(one, two, "data_sink 2 x half against 1 x whole");
    ck_assert_msg(memcmp(&loss1, &loss2, sizeof loss1) == 0, "last loss %.9g vs %.9g",
                  (double)loss1, (double)loss2);
    sl_model_free(two);
    sl_model_free(one);
    sl_dataset_free(ds);
}
END_TEST

START_TEST(test_data_sink_refuses_bad_sizes)
{
    tmp_mnist t = make_mnist(64, 8);
    sl_dataset *ds = mlp_pipeline(t.dir, 8, NULL);
    sl_model *m = mlp_model(8, "CPU");
    static const int64_t bad[] = {0, -1, -5};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sl_data_sink *s = (sl_data_sink *)&s;
        char want[32];
        ck_assert_int_eq(sl_data_sink_new(&s, m, ds, bad[i], NULL), SL_EINVAL);
        ck_assert_ptr_null(s);
        snprintf(want, sizeof want, "sink_size %lld", (long long)bad[i]);
        ck_assert_msg(strstr(sl_model_last_error(m), want) &&
                          strstr(sl_model_last_error(m), ">= 1"),
                      "%s", sl_model_last_error(m));
    }
    sl_model_free(m);
    sl_dataset_free(ds);
    drop_mnist(&t);
}
END_TEST

/* The dataset helper of custom loops (seed 004): in sink mode each epoch
 * yields once, after sink_size steps that continue the traversal across
 * epochs; the parameters equal host-fed training over as many steps. Without
 * sinking it yields once per step and ends each epoch with the dataset's. */
START_TEST(test_dataset_helper_loops)
{
    tmp_mnist t = make_mnist(96, 8);
    /* 3 batches an epoch */
    sl_dataset *ds = tu_lenet_pipeline(t.dir, SL_MNIST_TRAIN, 2, 5, 1, 1, 0);
    sl_model *helped = lenet_on("CPU", 7), *fed = lenet_on("CPU", 7), *plain;
    sl_train_options o = sink_opts(0, -1), so;
    sl_dataset_helper *h = NULL;
    float loss = NAN;
    int rc;

    use_transfer(_i);
    so = sink_opts(1, -1);
    ck_assert_msg(sl_dataset_helper_new(&h, helped, ds, 1, 4, 3, &so) == SL_OK, "%s",
                  sl_model_last_error(helped));
    for (int e = 0; e < 3; e++) {
        int yields = 0;
        while ((rc = sl_dataset_helper_next(h, &loss)) == SL_OK)
            yields++;
        ck_assert_msg(rc == SL_END_OF_EPOCH, "epoch %d: %d %s", e + 1, rc,
                      sl_model_last_error(helped));
        ck_assert_int_eq(yields, 1);
        ck_assert(isfinite(loss));
        ck_assert_int_eq(sl_model_global_step(helped), 4 * (e + 1));
    }
    ck_assert_int_eq(sl_dataset_helper_next(h, &loss), SL_END_OF_DATA);
    sl_dataset_helper_free(h);
    o.max_steps = 12;
    ck_assert_msg(sl_model_train_opts(fed, 4, ds, NULL, 0, &o) == SL_OK, "%s",
                  sl_model_last_error(fed));
    tu_assert_same_params(helped, fed, "dataset helper, sink_size 4 x 3 vs 12 host-fed steps");

    /* Without sinking: a yield per step, 3 per epoch. */
    plain = lenet_on("CPU", 7);
    ck_assert_int_eq(sl_dataset_helper_new(&h, plain, ds, 0, -1, 2, NULL), SL_OK);
    for (int e = 0; e < 2; e++) {
        int yields = 0;
        while ((rc = sl_dataset_helper_next(h, &loss)) == SL_OK)
            yields++;
        ck_assert_int_eq(rc, SL_END_OF_EPOCH);
        ck_assert_int_eq(yields, 3);
    }
    ck_assert_int_eq(sl_dataset_helper_next(h, &loss), SL_END_OF_DATA);
    sl_dataset_helper_free(h);
    ck_assert_int_eq(sl_dataset_helper_new(&h, plain, ds, 1, 0, 2, NULL), SL_EINVAL);
    ck_assert_msg(strstr(sl_model_last_error(plain), "sink_size 0"), "%s",
                  sl_model_last_error(plain));
    sl_model_free(plain);
    sl_model_free(helped);
    sl_model_free(fed);
    sl_dataset_free(ds);
    drop_mnist(&t);
}
END_TEST

/* --- 4. stopping -------------------------------------------------------- */

typedef struct stopper {
    sl_model *m;
    uint64_t launches;   /* stop once the device saw this many interactions */
    int delay_ms;        /* ... and this long after, or */
    int64_t steps;       /* (> 0) once the executor ran this many sink steps past */
    int64_t steps_base;  /* this count of m->sink_steps_run, read before train */
    double stop_at;      /* wall_ms() of the stop call */
    int64_t steps_at_stop; /* m->sink_steps_run just after it */
    atomic_int trained;  /* set by the test when train returned: give up */
} stopper;

/* Waits until cond(s) holds or train returned (1: it holds). */
static int stopper_wait(stopper *s, int (*cond)(stopper *))
{
    while (!cond(s))
        if (atomic_load(&s->trained))
            return 0; /* train ended first: the test says why */
        else
            sleep_ms(1);
    return 1;
}

static int launched(stopper *s)
{
    return interactions(s->m) >= s->launches;
}

static int stepped(stopper *s)
{
    return atomic_load(&s->m->sink_steps_run) >= s->steps_base + s->steps;
}

static void *stopper_main(void *arg)
{
    stopper *s = arg;
    if (!stopper_wait(s, launched))
        return NULL;
    if (s->steps > 0) {
        if (!stopper_wait(s, stepped))
            return NULL;
    } else {
        sleep_ms(s->delay_ms);
    }
    /* The count is read after the stop: from then on only a step already
     * past the loop's check of the stop can finish (at most one), however
     * long this thread waited between the two. */
    s->stop_at = wall_ms();
    sl_model_stop(s->m);
    s->steps_at_stop = atomic_load(&s->m->sink_steps_run);
    return NULL;
}

/* The longest a stop may take to end train when only a wait stands
 * between them, every thread joined: what tells a stop that woke GetNext
 * from one that waited for the next batch (test_stop_wakes_getnext makes
 * that come 2 s later). Under a sanitizer every lock, wake-up and join
 * costs many times more. */
#define STOP_MS 1500.0

/* sl_model_stop from another thread, in the middle of a sink (sink_size
 * 10^6 of an endless traversal, 1000 epochs asked for: ignoring the stop
 * would take hours), 1 to 40 steps into it: train returns 0 after at most
 * the step in flight when the stop was in, counted in steps so that the
 * machine's speed and load do not matter, with
 * the transfer thread, the sink on the executor's thread and every
 * pipeline thread joined; the model trains on afterwards. Many times, the
 * stop landing at different points: 0 to 39 ms after the sink's launch,
 * while the pipeline starts (GetNext waiting) or while steps run. */
static void stop_mid_sink(const char *target, int rounds)
{
    tmp_mnist t = make_mnist(320, 8);
    sl_dataset *ds = tu_lenet_pipeline(t.dir, SL_MNIST_TRAIN, 2, 1, 1, 1, 0);
    sl_model *m = lenet_on(target, 1);
    sl_train_options o = sink_opts(1, 1000000);
    int threads = thread_count();
    double worst = 0;
    for (int i = 0; i < rounds; i++) {
        stopper s = {.m = m, .launches = interactions(m) + 1, .steps = 1 + (i * 7) % 40,
                     .steps_base = atomic_load(&m->sink_steps_run)};
        pthread_t th;
        int64_t before = sl_model_global_step(m), extra;
        double ms;
        int rc;
        ck_assert_int_eq(pthread_create(&th, NULL, stopper_main, &s), 0);
        rc = sl_model_train_opts(m, 1000, ds, NULL, 0, &o);
        ms = wall_ms();
        atomic_store(&s.trained, 1);
        pthread_join(th, NULL);
        ms -= s.stop_at;
        ck_assert_msg(rc == SL_OK, "round %d: %s", i, sl_model_last_error(m));
        ck_assert_msg(s.stop_at > 0, "round %d: train returned before the stop", i);
        extra = atomic_load(&m->sink_steps_run) - s.steps_at_stop;
        ck_assert_msg(extra >= 0 && extra <= 1, "%s round %d: %lld steps after the stop", target,
                      i, (long long)extra);
        ck_assert_int_eq(sl_model_global_step(m) - before,
                         s.steps_at_stop + extra - s.steps_base);
        if (getenv("SINK_DEBUG")) /* each round, to see where the stops land */
            printf("round %d: stop after %lld steps, returned %.1f ms and %lld steps after\n",
                   i, (long long)s.steps, ms, (long long)extra);
        if (ms > worst)
            worst = ms;
        ck_assert_int_eq(thread_count_settled(threads), threads);
    }
    printf("stop_mid_sink %s: %d rounds, train returned at most %.1f ms after the stop\n",
           target, rounds, worst);
    /* a later train on the same model runs whole */
    {
        int64_t before = sl_model_global_step(m);
        o.sink_size = 3;
        ck_assert_msg(sl_model_train_opts(m, 2, ds, NULL, 0, &o) == SL_OK, "%s",
                      sl_model_last_error(m));
        ck_assert_int_eq(sl_model_global_step(m) - before, 6);
    }
    ck_assert_int_eq(thread_count_settled(threads), threads);
    sl_model_free(m);
    sl_dataset_free(ds);
    drop_mnist(&t);
}

START_TEST(test_stop_mid_sink_cpu)
{
    use_transfer(_i);
    stop_mid_sink("CPU", tu_shorten(TU_SANITIZED, "test_stop_mid_sink_cpu",
                                    "5 rounds (not 20)") ? 5 : 20);
}
END_TEST

START_TEST(test_stop_mid_sink_sim)
{
    stop_mid_sink("SIM", tu_shorten(TU_SANITIZED, "test_stop_mid_sink_sim",
                                    "5 rounds (not 20)") ? 5 : 20);
}
END_TEST

/* A stop while GetNext waits on a slow pipeline (250 ms a row, 2 s a
 * batch) wakes it: train returns within STOP_MS, not when the next batch
 * comes, the map worker joined after the row in hand. */
START_TEST(test_stop_wakes_getnext)
{
    int rounds = 2;
    tmp_mnist t = make_mnist(64, 8);
    gate g;
    sl_dataset *ds;
    sl_model *m = mlp_model(8, "CPU");
    const char *how = use_transfer(_i);
    sl_train_options o = sink_opts(1, 1000);
    int threads = thread_count();
    gate_init(&g, 0);
    g.open = 1;
    g.row_ms = 250;
    ds = mlp_pipeline(t.dir, 8, &g);
    for (int i = 0; i < rounds; i++) {
        /* after the first step, waiting for the second batch (2 s) */
        stopper s = {.m = m, .launches = interactions(m) + 1, .steps = 1,
                     .steps_base = atomic_load(&m->sink_steps_run)};
        pthread_t th;
        double ms;
        int rc;
        ck_assert_int_eq(pthread_create(&th, NULL, stopper_main, &s), 0);
        rc = sl_model_train_opts(m, 1000, ds, NULL, 0, &o);
        ms = wall_ms();
        atomic_store(&s.trained, 1);
        pthread_join(th, NULL);
        ms -= s.stop_at;
        ck_assert_msg(rc == SL_OK, "%s", sl_model_last_error(m));
        ck_assert_msg(ms < STOP_MS, "%s, round %d: train returned %.1f ms after the stop", how,
                      i, ms);
        ck_assert_int_eq(thread_count_settled(threads), threads);
    }
    sl_model_free(m);
    sl_dataset_free(ds);
    gate_destroy(&g);
    drop_mnist(&t);
}
END_TEST

/* A stop during a data_sink call ends that call with SL_ECANCELED; the
 * next call runs its steps (the transfer thread and the pipeline went on),
 * and the two together took the batches host-fed training takes, no batch
 * lost or repeated. The stop comes while LeNet's steps run, so the queue
 * is full and the transfer thread waits for a slot when it comes. */
START_TEST(test_stop_during_data_sink_call)
{
    /* calls of 40 steps; the stop comes 5 steps into the first, counted,
     * so it lands inside the call whatever the machine's speed */
    int64_t size = 40;
    tmp_mnist t = make_mnist(320, 8);
    sl_dataset *ds = tu_lenet_pipeline(t.dir, SL_MNIST_TRAIN, 2, 4, 1, 1, 0);
    sl_model *m = lenet_on("CPU", 4), *ref;
    const char *how = use_transfer(_i);
    sl_train_options o = sink_opts(1, -1), fed = sink_opts(0, -1);
    sl_data_sink *s = NULL;
    stopper st = {.m = m, .launches = interactions(m) + 1, .steps = 5,
                  .steps_base = atomic_load(&m->sink_steps_run)};
    pthread_t th;
    int64_t first;
    float loss;
    int rc;
    o.getnext_timeout_ms = 3000; /* a starved call fails in 3 s, not 5 min */
    ck_assert_msg(sl_data_sink_new(&s, m, ds, size, &o) == SL_OK, "%s", sl_model_last_error(m));
    ck_assert_int_eq(pthread_create(&th, NULL, stopper_main, &st), 0);
    rc = sl_data_sink_call(s, &loss);
    atomic_store(&st.trained, 1);
    pthread_join(th, NULL);
    ck_assert_msg(rc == SL_ECANCELED, "%d: %s", rc, sl_model_last_error(m));
    ck_assert_msg(strstr(sl_model_last_error(m), "stopped after"), "%s", sl_model_last_error(m));
    first = sl_model_global_step(m);
    ck_assert_int_ge(first, 5);
    /* at most the step in flight after the count read once the stop was in */
    ck_assert_int_le(first, st.steps_at_stop - st.steps_base + 1);
    /* let the transfer thread meet the stopped queue before the next call */
    sleep_ms(50);
    rc = sl_data_sink_call(s, &loss);
    ck_assert_msg(rc == SL_OK, "%s: the call after a stop: %s", how, sl_model_last_error(m));
    ck_assert_int_eq(sl_model_global_step(m), first + size);
    sl_data_sink_free(s);
    /* host-fed steps over the same batches reach the same parameters */
    ref = lenet_on("CPU", 4);
    fed.max_steps = first + size;
    ck_assert_msg(sl_model_train_opts(ref, 100, ds, NULL, 0, &fed) == SL_OK, "%s",
                  sl_model_last_error(ref));
    ck_assert_int_eq(sl_model_global_step(ref), first + size);
    tu_assert_same_params(ref, m, "data_sink stopped and continued against host-fed");
    sl_model_free(ref);
    sl_model_free(m);
    sl_dataset_free(ds);
    drop_mnist(&t);
}
END_TEST

/* --- 5-7. errors reach the caller -------------------------------------- */

typedef struct opener {
    gate *g;
    int after_ms;
} opener;

static void *opener_main(void *arg)
{
    opener *o = arg;
    sleep_ms(o->after_ms);
    gate_open(o->g);
    return NULL;
}

/* A pipeline stalled at its label map: GetNext gives up after 200 ms and
 * train fails with a message naming the queue, how long it was empty and
 * the stage that keeps the others waiting. */
START_TEST(test_getnext_timeout_names_the_stage)
{
    tmp_mnist t = make_mnist(64, 8);
    gate g;
    sl_dataset *ds;
    sl_model *m = mlp_model(8, "CPU");
    const char *how = use_transfer(_i);
    sl_train_options o = sink_opts(1, -1);
    opener op;
    pthread_t th;
    const char *msg;
    double t0, ms;
    int rc;
    gate_init(&g, 0);
    ds = mlp_pipeline(t.dir, 8, &g);
    op = (opener){&g, 600};
    o.getnext_timeout_ms = 200;
    ck_assert_int_eq(pthread_create(&th, NULL, opener_main, &op), 0);
    t0 = wall_ms();
    rc = sl_model_train_opts(m, 1, ds, NULL, 0, &o);
    ms = wall_ms() - t0;
    msg = sl_model_last_error(m);
    ck_assert_msg(rc == SL_ETIMEDOUT, "%d: %s", rc, msg);
    ck_assert_msg(strstr(msg, "'cpu:0/train'"), "no queue name: %s", msg);
    ck_assert_msg(strstr(msg, "has been empty for 0.2"), "no empty time: %s", msg);
    ck_assert_msg(strstr(msg, "stage 'map"), "no pipeline stage: %s", msg);
    /* ... and what moves batches into the queue, and what it is doing */
    ck_assert_msg(strstr(msg, _i == 0 ? "the transfer thread has been waiting for the pipeline"
                                      : "the executor, which moves batches itself"),
                  "%s: nothing about what feeds the queue: %s", how, msg);
    /* GetNext gave up at 200 ms ("empty for 0.2x s" above); train returns
     * once the pipeline is joined, which waits for the gate's map call to
     * come back (600 ms): a stage inside an op cannot be torn away */
    ck_assert_double_ge(ms, 190.0);
    ck_assert_int_eq(sl_model_global_step(m), 0);
    pthread_join(th, NULL);
    sl_model_free(m);
    sl_dataset_free(ds);
    gate_destroy(&g);
    drop_mnist(&t);
}
END_TEST

/* A pipeline that never delivers (its source waits at a gate no one
 * opens): train returns the timeout's error with a message saying where,
 * within the timeout (300 ms here) and a second, with a transfer thread,
 * with the executor moving batches inline (GetNext's timeout) and without
 * sinking (the data timeout); and every thread it started is joined. */
START_TEST(test_stall_ends_train_at_the_timeout)
{
    static const char *const how[] = {"sink, transfer thread", "sink, inline transfer",
                                      "no sink"};
    tmp_mnist t = make_mnist(64, 8);
    sl_dataset *ds = mlp_pipeline(t.dir, 8, NULL);
    sl_model_options mo;
    sl_model *m = NULL;
    sl_train_options o;
    char err[512];
    const char *msg;
    double t0, ms, slack = TU_SANITIZED ? 5000.0 : 1000.0;
    int threads, rc;

    stall_source_of(ds);
    sl_model_options_init(&mo);
    mo.network.kind = SL_NETWORK_MLP;
    mo.network.batch = 8;
    mo.network.height = 28;
    mo.network.width = 28;
    mo.network.hidden[0] = 16;
    mo.network.nhidden = 1;
    mo.context.threads = 1;
    mo.data_timeout_ms = 300;
    ck_assert_msg(sl_model_new(&m, &mo, err, sizeof err) == SL_OK, "%s", err);
    threads = thread_count();
    sl_train_options_init(&o);
    o.dataset_sink_mode = _i < 2;
    o.transfer = _i == 0 ? SL_TRANSFER_THREAD : _i == 1 ? SL_TRANSFER_INLINE : SL_TRANSFER_AUTO;
    o.getnext_timeout_ms = 300;
    t0 = wall_ms();
    rc = sl_model_train_opts(m, 1, ds, NULL, 0, &o);
    ms = wall_ms() - t0;
    msg = sl_model_last_error(m);
    ck_assert_msg(rc == SL_ETIMEDOUT, "%s: %d: %s", how[_i], rc, msg);
    if (_i < 2) {
        ck_assert_msg(strstr(msg, "GetNext: queue 'cpu:0/train' has been empty for "), "%s: %s",
                      how[_i], msg);
        ck_assert_msg(strstr(msg, "stage 'source"), "%s: no stage named: %s", how[_i], msg);
    } else {
        ck_assert_msg(strstr(msg, "no row within 300 ms; stage 'source"),
                      "%s: %s", how[_i], msg);
    }
    ck_assert_msg(ms >= 290.0 && ms < 300.0 + slack,
                  "%s: train returned after %.0f ms (timeout 300 ms)", how[_i], ms);
    ck_assert_int_eq(sl_model_global_step(m), 0);
    ck_assert_int_eq(thread_count_settled(threads), threads);
    sl_model_free(m);
    sl_dataset_free(ds);
    drop_mnist(&t);
}
END_TEST

/* An ImageFolder with a corrupt JPEG in the middle: the decode error
 * travels through the transfer thread and the device queue to train,
 * naming the file, after the batches before it trained. */
START_TEST(test_pipeline_error_mid_epoch_sink)
{
    char *dir = tu_mkdtemp(), *bad;
    static const char not_jpeg[] = "\xff\xd8\xff\xe0 not really a jpeg";
    sl_image_folder_options io;
    sl_model_options o;
    sl_model *m = NULL;
    sl_dataset *ds;
    sl_op *rs, *r, *chw;
    sl_train_options to;
    recorder rec;
    sl_callback cb = recording(&rec);
    sl_callback *cbs[1] = {&cb};
    char err[512];
    int rc;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    ck_assert_int_eq(tu_make_image_folder(dir, 2, 40, 40, 40), 0);
    bad = tu_path(dir, "class_1/img_20.jpg");
    ck_assert_int_eq(tu_write_bytes(bad, not_jpeg, sizeof not_jpeg - 1, 0), 0);
    sl_image_folder_options_init(&io);
    io.dataset_dir = dir;
    io.decode = 1;
    io.sampler.shuffle = 0;
    ck_assert_int_eq(sl_dataset_image_folder(ds, &io), SL_OK);
    ck_assert_int_eq(sl_op_resize_new(&rs, 32, 32, SL_INTER_LINEAR, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_rescale_new(&r, 1.0 / 255.0, 0.0, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_hwc2chw_new(&chw, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &rs, 1, "image", NULL, 2), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &r, 1, "image", NULL, 2), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &chw, 1, "image", NULL, 2), SL_OK);
    ck_assert_int_eq(sl_dataset_batch(ds, 8, 1, 2), SL_OK);
    sl_op_release(rs);
    sl_op_release(r);
    sl_op_release(chw);
    sl_model_options_init(&o);
    o.network.kind = SL_NETWORK_MLP;
    o.network.channels = 3;
    o.network.batch = 8;
    o.network.num_classes = 2;
    ck_assert_msg(sl_model_new(&m, &o, err, sizeof err) == SL_OK, "%s", err);
    use_transfer(_i);
    to = sink_opts(1, -1);
    rc = sl_model_train_opts(m, 1, ds, cbs, 1, &to);
    ck_assert_int_lt(rc, 0);
    ck_assert_msg(strstr(sl_model_last_error(m), "img_20.jpg"), "%s", sl_model_last_error(m));
    /* the batches before the bad file's (img_20.jpg sorts 14th of class_1:
     * sample 53, in batch 7) trained in the sink, which then failed: no
     * step_end, no end */
    ck_assert_int_ge(sl_model_global_step(m), 5);
    ck_assert_int_lt(sl_model_global_step(m), 10);
    ck_assert_int_eq(rec.step_ends, 0);
    ck_assert_int_eq(rec.ends, 0);
    sl_dataset_free(ds);
    sl_model_free(m);
    tu_rmtree(dir);
    free(dir);
    free(bad);
}
END_TEST

/* LeNet compiled for 32x32 fed 28x28 batches (no resize) in sink mode:
 * SL_ESHAPE naming the column and both shapes, before any step. */
START_TEST(test_wrong_shape_in_sink_mode)
{
    tmp_mnist t = make_mnist(64, 8);
    sl_dataset *ds = tu_lenet_pipeline(t.dir, SL_MNIST_TRAIN, 1, 0, 0, 1, 0);
    sl_model *m = lenet_on("CPU", 0);
    sl_train_options o;
    const char *msg;
    use_transfer(_i);
    o = sink_opts(1, -1);
    ck_assert_int_eq(sl_model_train_opts(m, 1, ds, NULL, 0, &o), SL_ESHAPE);
    msg = sl_model_last_error(m);
    ck_assert_msg(strstr(msg, "'image'") && strstr(msg, "(32, 1, 28, 28)") &&
                      strstr(msg, "(32, 1, 32, 32)"),
                  "%s", msg);
    ck_assert_int_eq(sl_model_global_step(m), 0);
    /* sink_size > 0 too */
    o.sink_size = 5;
    ck_assert_int_eq(sl_model_train_opts(m, 2, ds, NULL, 0, &o), SL_ESHAPE);
    ck_assert_msg(strstr(sl_model_last_error(m), "(32, 1, 28, 28)"), "%s",
                  sl_model_last_error(m));
    sl_model_free(m);
    sl_dataset_free(ds);
    drop_mnist(&t);
}
END_TEST

/* --- 8. bad options ----------------------------------------------------- */

static void expect_refusal(sl_model *m, sl_dataset *ds, const sl_train_options *o,
                           const char *w1, const char *w2)
{
    int64_t before = sl_model_global_step(m);
    int rc = sl_model_train_opts(m, 1, ds, NULL, 0, o);
    ck_assert_msg(rc == SL_EINVAL, "%s: %d: %s", w1, rc, sl_model_last_error(m));
    ck_assert_msg(strstr(sl_model_last_error(m), w1) && strstr(sl_model_last_error(m), w2),
                  "want '%s' and '%s': %s", w1, w2, sl_model_last_error(m));
    ck_assert_int_eq(sl_model_global_step(m), before);
}

START_TEST(test_bad_options_refused)
{
    tmp_mnist t = make_mnist(64, 8);
    sl_dataset *ds = mlp_pipeline(t.dir, 8, NULL), *endless;
    sl_model *m = mlp_model(8, "CPU");
    sl_model_options mo;
    sl_model *none = (sl_model *)&none;
    sl_train_options o;
    char err[512];
    int threads = thread_count();

    o = sink_opts(1, 0);
    expect_refusal(m, ds, &o, "sink_size 0", "give -1");
    o = sink_opts(1, -2);
    expect_refusal(m, ds, &o, "sink_size -2", "give -1");
    o = sink_opts(1, -1);
    o.queue_capacity = 0;
    expect_refusal(m, ds, &o, "queue_capacity 0", "1 to 4096");
    o = sink_opts(1, -1);
    o.getnext_timeout_ms = 0;
    expect_refusal(m, ds, &o, "getnext_timeout_ms 0", "-1");
    o = sink_opts(2, -1);
    expect_refusal(m, ds, &o, "dataset_sink_mode is 2", "0 or 1");
    o = sink_opts(1, -1);
    o.transfer = 3;
    expect_refusal(m, ds, &o, "transfer 3", "SL_TRANSFER_AUTO");

    /* sink_size -1 sinks one epoch at a time: an endless dataset has none */
    ck_assert_int_eq(sl_dataset_copy(&endless, ds), SL_OK);
    ck_assert_int_eq(sl_dataset_repeat(endless, -1), SL_OK);
    o = sink_opts(1, -1);
    expect_refusal(m, endless, &o, "sink_size -1", "sink_size > 0");
    /* ... while sink_size > 0 walks it */
    o.sink_size = 5;
    ck_assert_msg(sl_model_train_opts(m, 3, endless, NULL, 0, &o) == SL_OK, "%s",
                  sl_model_last_error(m));
    ck_assert_int_eq(sl_model_global_step(m), 15);
    ck_assert_int_eq(thread_count_settled(threads), threads);

    /* devices that are not there */
    sl_model_options_init(&mo);
    mo.context.device_target = "gpu";
    ck_assert_int_eq(sl_model_new(&none, &mo, err, sizeof err), SL_EINVAL);
    ck_assert_ptr_null(none);
    ck_assert_msg(strstr(err, "'gpu'") && strstr(err, "CPU") && strstr(err, "SIM"), "%s", err);
    sl_model_options_init(&mo);
    mo.context.device_id = 99;
    none = (sl_model *)&none;
    ck_assert_int_eq(sl_model_new(&none, &mo, err, sizeof err), SL_EINVAL);
    ck_assert_ptr_null(none);
    ck_assert_msg(strstr(err, "99"), "%s", err);
    sl_model_options_init(&mo);
    mo.context.device_target = "SIM";
    mo.context.device_id = 99;
    none = (sl_model *)&none;
    ck_assert_int_eq(sl_model_new(&none, &mo, err, sizeof err), SL_EINVAL);
    ck_assert_msg(strstr(err, "99"), "%s", err);

    /* sim:0 copies over its bus: the executor cannot copy inline there */
    {
        sl_model *sim = mlp_model(8, "SIM");
        o = sink_opts(1, -1);
        o.transfer = SL_TRANSFER_INLINE;
        expect_refusal(sim, ds, &o, "inline transfer", "sim:0");
        ck_assert_int_eq(sl_model_transfer_mode(sim, NULL), SL_TRANSFER_THREAD);
        sl_model_free(sim);
    }
    /* auto: inline on cpu when the compute threads fill the CPUs (this
     * MLP has 1; LeNet the CPUs, at most 4), else the thread; what the
     * options name otherwise */
    ck_assert_int_eq(sl_model_transfer_mode(m, NULL),
                     sl__model_team_fills_cpus(m) ? SL_TRANSFER_INLINE : SL_TRANSFER_THREAD);
    ck_assert_int_eq(sl__model_team_fills_cpus(m), sl__cpus_available() <= 1);
    {
        sl_model *lenet = lenet_on("CPU", 1);
        ck_assert_int_eq(sl_model_transfer_mode(lenet, NULL),
                         sl__cpus_available() <= 4 ? SL_TRANSFER_INLINE : SL_TRANSFER_THREAD);
        sl_model_free(lenet);
    }
    o = sink_opts(1, -1);
    o.transfer = SL_TRANSFER_INLINE;
    ck_assert_int_eq(sl_model_transfer_mode(m, &o), SL_TRANSFER_INLINE);
    o.transfer = SL_TRANSFER_THREAD;
    ck_assert_int_eq(sl_model_transfer_mode(m, &o), SL_TRANSFER_THREAD);

    sl_dataset_free(endless);
    sl_model_free(m);
    sl_dataset_free(ds);
    drop_mnist(&t);
}
END_TEST

/* --- 9. one channel, several device queues ------------------------------ */

/* What one queue's GetNext yielded: for a batch its first sample's number
 * (its label: 10 samples with labels 0..9), -1 an end of epoch, -2 the end
 * of data, -3 anything else. */
typedef struct drain {
    sl__device_queue *q;
    int n;
    int got[32];
    int bad_content;
    sl__error err;
} drain;

#define FEED_N 10    /* samples */
#define FEED_BATCH 2 /* so 5 batches an epoch */

static void *drain_main(void *arg)
{
    drain *d = arg;
    sl__err_clear(&d->err);
    while (d->n < 32) {
        sl__dq_slot *slot;
        int rc = sl__dq_get_next(d->q, &slot, 20000, &d->err);
        if (rc == SL_OK) {
            const uint8_t *img = slot->columns[0].data;
            const uint32_t *lab = slot->columns[1].data;
            /* both samples of the batch, pixels and labels, in order */
            for (uint32_t k = 0; k < FEED_BATCH; k++) {
                uint32_t s = lab[0] + k;
                if (lab[k] != s)
                    d->bad_content++;
                for (uint32_t y = 0; y < 28; y++)
                    for (uint32_t x = 0; x < 28; x++)
                        if (img[(k * 28 + y) * 28 + x] != tu_pixel(s, y, x))
                            d->bad_content++;
            }
            d->got[d->n++] = (int)lab[0];
            sl__dq_release(d->q, slot);
            continue;
        }
        d->got[d->n++] = rc == SL_END_OF_EPOCH ? -1 : rc == SL_END_OF_DATA ? -2 : -3;
        if (rc != SL_END_OF_EPOCH)
            break;
    }
    return NULL;
}

static sl__channel *two_queue_channel(sl_dataset *ds, sl_device *const *devs, int64_t epochs,
                                    size_t capacity)
{
    sl__channel_options fo;
    sl__channel *f = NULL;
    sl__error err;
    memset(&fo, 0, sizeof fo);
    fo.queue_name = "train";
    fo.capacity = capacity;
    fo.num_epochs = epochs;
    fo.stuck_ms = 1000;
    fo.ncolumns = 2;
    fo.columns[0] = sl_dataset_column_index(ds, "image");
    fo.columns[1] = sl_dataset_column_index(ds, "label");
    ck_assert_int_ge(fo.columns[0], 0);
    ck_assert_int_ge(fo.columns[1], 0);
    fo.specs[0] = (sl_tensor_spec){SL_UINT8, 4, {FEED_BATCH, 28, 28, 1}};
    fo.specs[1] = (sl_tensor_spec){SL_UINT32, 1, {FEED_BATCH}};
    fo.names[0] = "image";
    fo.names[1] = "label";
    sl__err_clear(&err);
    ck_assert_msg(sl__channel_new(&f, ds, devs, 2, &fo, &err) == SL_OK, "%s", err.msg);
    return f;
}

static sl_dataset *numbered_dataset(const char *dir)
{
    sl_mnist_options mo;
    sl_dataset *ds;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_mnist_options_init(&mo);
    mo.dataset_dir = dir;
    mo.usage = SL_MNIST_TRAIN;
    mo.sampler.shuffle = 0;
    ck_assert_msg(sl_dataset_mnist(ds, &mo) == SL_OK, "%s", sl_dataset_last_error(ds));
    ck_assert_int_eq(sl_dataset_batch(ds, FEED_BATCH, 1, 1), SL_OK);
    return ds;
}

/* Batch k of each epoch goes to queue k % 2 (every epoch starts at queue
 * 0, so that data-parallel replicas see the same split each epoch); the
 * ends of epoch and of data reach both queues, in order after their
 * batches.
 * Each queue is drained by its own thread, with one slot a queue, so the
 * transfer thread waits on each in turn. */
START_TEST(test_channel_deals_round_robin)
{
    tmp_mnist t = make_mnist(FEED_N, 2);
    sl_dataset *ds = numbered_dataset(t.dir);
    sl_device *devs[2];
    char err[256];
    sl__channel *f;
    sl__channel_stats fs;
    drain d[2];
    pthread_t th[2];
    int want[2][32], nwant[2] = {0, 0}, batch = 0, threads = thread_count();
    ck_assert_int_eq(sl_device_new(&devs[0], "cpu:0", NULL, err, sizeof err), SL_OK);
    ck_assert_int_eq(sl_device_new(&devs[1], "cpu:1", NULL, err, sizeof err), SL_OK);
    f = two_queue_channel(ds, devs, 2, 1);
    ck_assert_str_eq(sl__dq_name(sl__channel_queue(f, 0)), "cpu:0/train");
    ck_assert_str_eq(sl__dq_name(sl__channel_queue(f, 1)), "cpu:1/train");
    ck_assert_ptr_eq(sl__dq_device(sl__channel_queue(f, 1)), devs[1]);
    ck_assert_ptr_null(sl__channel_queue(f, 2));
    for (int q = 0; q < 2; q++) {
        memset(&d[q], 0, sizeof d[q]);
        d[q].q = sl__channel_queue(f, (size_t)q);
        ck_assert_int_eq(pthread_create(&th[q], NULL, drain_main, &d[q]), 0);
    }
    for (int e = 0; e < 2; e++) {
        for (int b = 0; b < FEED_N / FEED_BATCH; b++, batch++)
            want[b % 2][nwant[b % 2]++] = (batch * FEED_BATCH) % FEED_N;
        want[0][nwant[0]++] = -1;
        want[1][nwant[1]++] = -1;
    }
    want[0][nwant[0]++] = -2;
    want[1][nwant[1]++] = -2;
    for (int q = 0; q < 2; q++) {
        pthread_join(th[q], NULL);
        ck_assert_msg(d[q].n == nwant[q], "queue %d: %d entries, want %d (%s)", q, d[q].n,
                      nwant[q], d[q].err.msg);
        for (int i = 0; i < nwant[q]; i++)
            ck_assert_msg(d[q].got[i] == want[q][i], "queue %d entry %d: %d, want %d", q, i,
                          d[q].got[i], want[q][i]);
        ck_assert_int_eq(d[q].bad_content, 0);
    }
    sl__channel_get_stats(f, &fs);
    ck_assert_uint_eq(fs.batches, 2 * FEED_N / FEED_BATCH);
    sl__channel_free(f);
    ck_assert_int_eq(thread_count_settled(threads), threads);
    {
        sl_device_stats st;
        sl_device_get_stats(devs[1], &st);
        /* 2 of each epoch's 5 batches, x 2 columns */
        ck_assert_uint_eq(st.copies_in, 2 * 2 * 2);
        ck_assert_uint_eq(st.bytes_allocated, 0);
    }
    sl_device_free(devs[0]);
    sl_device_free(devs[1]);
    sl_dataset_free(ds);
    drop_mnist(&t);
}
END_TEST

/* Freeing the channel mid-stream, with the transfer thread blocked on a
 * full queue and the pipeline on a full channel, joins every thread at
 * once and frees everything (ASan's leak check runs at exit). */
START_TEST(test_channel_free_mid_stream)
{
    tmp_mnist t = make_mnist(FEED_N, 2);
    sl_dataset *ds = numbered_dataset(t.dir);
    sl_device *devs[2];
    char err[256];
    int threads = thread_count();
    ck_assert_int_eq(sl_device_new(&devs[0], "cpu:0", NULL, err, sizeof err), SL_OK);
    ck_assert_int_eq(sl_device_new(&devs[1], "sim:0", NULL, err, sizeof err), SL_OK);
    for (int round = 0; round < 3; round++) {
        sl__channel *f = two_queue_channel(ds, devs, -1, 1);
        sl__error e;
        double t0;
        sl__err_clear(&e);
        /* take a few batches, alternating as they were dealt, keep one */
        for (int k = 0; k < 2 * round + 1; k++) {
            sl__dq_slot *slot;
            sl__device_queue *q = sl__channel_queue(f, (size_t)(k % 2));
            ck_assert_msg(sl__dq_get_next(q, &slot, 20000, &e) == SL_OK, "%s", e.msg);
            ck_assert_uint_eq(((const uint32_t *)slot->columns[1].data)[0],
                              (uint32_t)((k * FEED_BATCH) % FEED_N));
            sl__dq_release(q, slot);
        }
        sleep_ms(30); /* let everything fill up and block */
        t0 = wall_ms();
        sl__channel_free(f);
        ck_assert_msg(wall_ms() - t0 < (TU_SANITIZED ? 2000.0 : 200.0),
                      "freeing took %.0f ms", wall_ms() - t0);
        ck_assert_int_eq(thread_count_settled(threads), threads);
    }
    {
        sl_device_stats st;
        sl_device_get_stats(devs[0], &st);
        ck_assert_uint_eq(st.bytes_allocated, 0);
        sl_device_get_stats(devs[1], &st);
        ck_assert_uint_eq(st.bytes_allocated, 0);
    }
    sl_device_free(devs[0]);
    sl_device_free(devs[1]);
    sl_dataset_free(ds);
    drop_mnist(&t);
}
END_TEST

/* --- 10. sink stats ----------------------------------------------------- */

/* After a sink train: one sink per epoch, every step counted, every batch
 * sent once (and no more than a full queue ahead of the steps), and the
 * device saw two interactions per sink (the launch and the result);
 * host-fed training costs two per step. */
START_TEST(test_sink_stats)
{
    tmp_mnist t = make_mnist(64, 8); /* 8 batches an epoch */
    sl_dataset *ds = mlp_pipeline(t.dir, 8, NULL);
    const char *targets[2] = {"CPU", "SIM"};
    for (int k = 0; k < 2; k++) {
        sl_model *m = mlp_model(8, targets[k]);
        sl_train_options o = sink_opts(1, -1);
        sl_sink_stats ss;
        uint64_t i0;
        sl_model_get_sink_stats(m, &ss);
        ck_assert_int_eq(ss.sinks, 0);
        ck_assert_int_eq(ss.steps, 0);
        i0 = interactions(m);
        ck_assert_msg(sl_model_train_opts(m, 3, ds, NULL, 0, &o) == SL_OK, "%s",
                      sl_model_last_error(m));
        sl_model_get_sink_stats(m, &ss);
        ck_assert_int_eq(ss.sinks, 3);
        ck_assert_int_eq(ss.steps, 24);
        /* 3 epochs of 8 batches, the pipeline's all: each sent once */
        ck_assert_int_eq(ss.batches_sent, 24);
        ck_assert_uint_eq(interactions(m) - i0, 2 * 3);
        /* sink_size 5 over 4 epochs: 4 sinks of 5 */
        o.sink_size = 5;
        i0 = interactions(m);
        ck_assert_msg(sl_model_train_opts(m, 4, ds, NULL, 0, &o) == SL_OK, "%s",
                      sl_model_last_error(m));
        sl_model_get_sink_stats(m, &ss);
        ck_assert_int_eq(ss.sinks, 4);
        ck_assert_int_eq(ss.steps, 20);
        /* an endless traversal: the 20 taken, and at most a full queue
         * (its 4 slots) sent ahead */
        ck_assert_int_ge(ss.batches_sent, 20);
        ck_assert_int_le(ss.batches_sent, 20 + o.queue_capacity);
        ck_assert_uint_eq(interactions(m) - i0, 2 * 4);
        /* non-sink: two per step */
        o = sink_opts(0, -1);
        i0 = interactions(m);
        ck_assert_msg(sl_model_train_opts(m, 2, ds, NULL, 0, &o) == SL_OK, "%s",
                      sl_model_last_error(m));
        ck_assert_uint_eq(interactions(m) - i0, 2 * 16);
        ck_assert_int_eq(sl_model_global_step(m), 24 + 20 + 16);
        sl_model_free(m);
    }
    sl_dataset_free(ds);
    drop_mnist(&t);
}
END_TEST

/* GetNext kept waiting by a gate that opens only once the queue counts
 * GetNext among its waiters: the sink stats count that wait, and the stage
 * table's executor has it as its start-up wait (the first GetNext's). */
START_TEST(test_sink_stats_count_an_injected_wait)
{
    tmp_mnist t = make_mnist(64, 8);
    gate g;
    sl_dataset *ds;
    sl_model *m = mlp_model(8, "CPU");
    sl_train_options o = sink_opts(1, -1);
    sl_stage_stats stages[SL__MODEL_MAX_STAGES];
    getnext_opener op = {m, &g};
    sl_sink_stats ss;
    pthread_t th;
    size_t n;
    gate_init(&g, 0);
    ds = mlp_pipeline(t.dir, 8, &g);
    o.transfer = SL_TRANSFER_THREAD; /* GetNext waits in the queue, where it is seen */
    o.getnext_timeout_ms = 60000;    /* a gate never opened fails the test, not hangs it */
    ck_assert_int_eq(pthread_create(&th, NULL, open_when_getnext_waits, &op), 0);
    ck_assert_msg(sl_model_train_opts(m, 1, ds, NULL, 0, &o) == SL_OK, "%s",
                  sl_model_last_error(m));
    pthread_join(th, NULL);
    sl_model_get_sink_stats(m, &ss);
    ck_assert_int_eq(ss.steps, 8);
    ck_assert_int_eq(ss.batches_sent, 8);
    ck_assert_msg(ss.getnext_wait_ms > 0.0, "GetNext waited %g ms", ss.getnext_wait_ms);
    n = sl_model_get_stage_stats(m, stages, SL__MODEL_MAX_STAGES);
    ck_assert_uint_ge(n, 2);
    ck_assert_str_eq(stages[n - 2].name, "executor (cpu:0)");
    ck_assert_msg(stages[n - 2].startup_wait_ms > 0.0 &&
                      stages[n - 2].startup_wait_ms <= stages[n - 2].wait_input_ms,
                  "start-up wait %g ms of %g ms waiting", stages[n - 2].startup_wait_ms,
                  stages[n - 2].wait_input_ms);
    sl_model_free(m);
    sl_dataset_free(ds);
    gate_destroy(&g);
    drop_mnist(&t);
}
END_TEST

Suite *make_sink_suite(void)
{
    Suite *s = suite_create("sink");
    TCase *tc = tu_tcase("numbers", 600);
    tcase_add_test(tc, test_sink_equals_nonsink_bit_for_bit);
    tcase_add_test(tc, test_sink_size_spans_epochs);
    tcase_add_test(tc, test_sink_size_1000_fashion);
    tcase_add_loop_test(tc, test_data_sink_calls_continue, 0, 2);
    tcase_add_test(tc, test_data_sink_refuses_bad_sizes);
    tcase_add_loop_test(tc, test_dataset_helper_loops, 0, 2);
    suite_add_tcase(s, tc);

    tc = tu_tcase("stop", 300);
    tcase_add_loop_test(tc, test_stop_mid_sink_cpu, 0, 2);
    tcase_add_test(tc, test_stop_mid_sink_sim);
    tcase_add_loop_test(tc, test_stop_wakes_getnext, 0, 2);
    tcase_add_loop_test(tc, test_stop_during_data_sink_call, 0, 2);
    suite_add_tcase(s, tc);

    tc = tu_tcase("errors", 120);
    tcase_add_loop_test(tc, test_getnext_timeout_names_the_stage, 0, 2);
    tcase_add_loop_test(tc, test_stall_ends_train_at_the_timeout, 0, 3);
    tcase_add_loop_test(tc, test_pipeline_error_mid_epoch_sink, 0, 2);
    tcase_add_loop_test(tc, test_wrong_shape_in_sink_mode, 0, 2);
    tcase_add_test(tc, test_bad_options_refused);
    suite_add_tcase(s, tc);

    tc = tu_tcase("channel", 120);
    tcase_add_test(tc, test_channel_deals_round_robin);
    tcase_add_test(tc, test_channel_free_mid_stream);
    tcase_add_test(tc, test_sink_stats);
    tcase_add_test(tc, test_sink_stats_count_an_injected_wait);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(make_sink_suite);
}
