/* check_stats.c: the per-stage counters (sl_iterator_get_stage_stats,
 * sl_model_get_stage_stats) on constructed cases: a slow map, a slow
 * consumer, and a sink train. The slow parts sleep rather than compute, so
 * the cases hold under the sanitizers and on a loaded machine: a sleeping
 * op is busy from its stage's point of view, and a sleeping consumer keeps
 * the pipeline blocked. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "sluice/sluice.h"
#include "core/trace.h"
#include "tests/testutil.h"

Suite *make_stats_suite(void);

#define IT_TIMEOUT_MS 60000 /* a hang becomes SL_ETIMEDOUT, not a stuck test */
#define NSAMPLES 40
#define BATCH 4
#define MAX_STAGES 24

static char *tmp;

static void setup_tmp(void)
{
    tmp = tu_mkdtemp();
    ck_assert_ptr_nonnull(tmp);
    ck_assert_int_eq(tu_make_mnist(tmp, NSAMPLES, 8, 0), 0);
}

static void teardown_tmp(void)
{
    tu_rmtree(tmp);
    free(tmp);
    tmp = NULL;
}

static void sleep_ms(double ms)
{
    struct timespec ts = {0, (long)(ms * 1e6)};
    nanosleep(&ts, NULL);
}

/* A map op that copies its input after sleeping `user` ms. */
static int slow_copy(void *user, const sl_tensor *in, sl_tensor **out, uint64_t seed,
                     char *errbuf, size_t errlen)
{
    (void)seed;
    (void)errbuf;
    (void)errlen;
    int rc;
    sleep_ms(*(const double *)user);
    rc = sl_tensor_new(out, sl_tensor_dtype(in), sl_tensor_ndim(in), sl_tensor_shape(in));
    if (rc == SL_OK)
        memcpy(sl_tensor_data(*out), sl_tensor_data(in), sl_tensor_nbytes(in));
    return rc;
}

/* MNIST (no shuffle), its images through custom op fn (user passed to
 * it), named name, with 1 worker. */
static sl_dataset *mnist_through(const char *name, sl_op_custom_fn fn, void *user)
{
    sl_mnist_options mo;
    sl_op_custom_options co;
    sl_dataset *ds;
    sl_op *op;
    char err[256];
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_mnist_options_init(&mo);
    mo.dataset_dir = tmp;
    mo.usage = SL_MNIST_TRAIN;
    mo.sampler.shuffle = 0;
    ck_assert_msg(sl_dataset_mnist(ds, &mo) == SL_OK, "%s", sl_dataset_last_error(ds));
    sl_op_custom_options_init(&co);
    co.name = name;
    co.fn = fn;
    co.user = user;
    ck_assert_msg(sl_op_custom_new(&op, &co, err, sizeof err) == SL_OK, "%s", err);
    ck_assert_int_eq(sl_dataset_map(ds, &op, 1, "image", NULL, 1), SL_OK);
    sl_op_release(op);
    return ds;
}

/* MNIST (no shuffle), its images through a map of 1 worker that sleeps
 * map_ms per row, in batches of BATCH; for_training also makes images
 * float (1, 28, 28) and labels int32, as the MLP takes them. */
static sl_dataset *pipeline(double *map_ms, int for_training)
{
    sl_dataset *ds = mnist_through("slow_copy", slow_copy, map_ms);
    if (for_training) {
        sl_op *cast, *rescale, *chw;
        ck_assert_int_eq(sl_op_type_cast_new(&cast, SL_INT32, NULL, 0), SL_OK);
        ck_assert_int_eq(sl_op_rescale_new(&rescale, 1.0 / 255.0, 0.0, NULL, 0), SL_OK);
        ck_assert_int_eq(sl_op_hwc2chw_new(&chw, NULL, 0), SL_OK);
        ck_assert_int_eq(sl_dataset_map(ds, &cast, 1, "label", NULL, 1), SL_OK);
        ck_assert_int_eq(sl_dataset_map(ds, &rescale, 1, "image", NULL, 1), SL_OK);
        ck_assert_int_eq(sl_dataset_map(ds, &chw, 1, "image", NULL, 1), SL_OK);
        sl_op_release(cast);
        sl_op_release(rescale);
        sl_op_release(chw);
    }
    ck_assert_int_eq(sl_dataset_batch(ds, BATCH, 1, 1), SL_OK);
    return ds;
}

/* Drains one epoch, sleeping consumer_ms after each batch, and returns
 * the stage figures as the epoch ended. */
static size_t drain(sl_dataset *ds, double consumer_ms, sl_stage_stats *st)
{
    sl_iterator_options o;
    sl_iterator *it = NULL;
    sl_row row;
    size_t n;
    int rc, batches = 0;
    sl_iterator_options_init(&o);
    o.num_epochs = 1;
    o.timeout_ms = IT_TIMEOUT_MS;
    ck_assert_msg(sl_iterator_new(&it, ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
    while ((rc = sl_iterator_next(it, &row)) == SL_OK) {
        batches++;
        sl_row_clear(&row);
        if (consumer_ms > 0)
            sleep_ms(consumer_ms);
    }
    ck_assert_msg(rc == SL_END_OF_EPOCH || rc == SL_END_OF_DATA, "%s", sl_iterator_last_error(it));
    ck_assert_int_eq(batches, NSAMPLES / BATCH);
    n = sl_iterator_get_stage_stats(it, NULL, 0);
    ck_assert_uint_ge(n, 2);
    ck_assert_uint_le(n, MAX_STAGES);
    ck_assert_uint_eq(sl_iterator_get_stage_stats(it, st, MAX_STAGES), n);
    sl_iterator_free(it);
    return n;
}

static double share(double part, const sl_stage_stats *s)
{
    return part / ((double)s->threads * s->elapsed_ms);
}

/* The stage whose name holds `word` (the first), or fails. */
static const sl_stage_stats *find(const sl_stage_stats *st, size_t n, const char *word)
{
    for (size_t i = 0; i < n; i++)
        if (strstr(st[i].name, word))
            return &st[i];
    ck_abort_msg("no stage named like '%s'", word);
    return NULL;
}

/* Every stage with threads accounts for all of their time; rows go from
 * samples to batches; the consumer comes last. */
static void check_accounting(const sl_stage_stats *st, size_t n)
{
    ck_assert_str_eq(st[n - 1].name, "consumer");
    ck_assert_uint_eq(st[n - 1].rows, NSAMPLES / BATCH);
    ck_assert_uint_eq(st[0].rows, NSAMPLES); /* the source's rows are samples */
    for (size_t i = 0; i < n; i++) {
        const sl_stage_stats *s = &st[i];
        double total = s->busy_ms + s->wait_input_ms + s->blocked_output_ms;
        ck_assert_msg(s->elapsed_ms > 0, "%s: elapsed %f", s->name, s->elapsed_ms);
        if (s->threads == 0)
            continue;
        ck_assert_msg(s->thread_ms <= (double)s->threads * s->elapsed_ms * 1.01 + 1.0 &&
                          s->thread_ms >= (double)s->threads * s->elapsed_ms * 0.99 - 1.0,
                      "%s: thread_ms %.1f, %d x %.1f ms", s->name, s->thread_ms, s->threads,
                      s->elapsed_ms);
        ck_assert_msg(total <= (double)s->threads * s->elapsed_ms * 1.01 + 1.0 &&
                          total >= (double)s->threads * s->elapsed_ms * 0.99 - 1.0,
                      "%s: busy %.1f + waiting %.1f + blocked %.1f != %d x %.1f ms", s->name,
                      s->busy_ms, s->wait_input_ms, s->blocked_output_ms, s->threads,
                      s->elapsed_ms);
        if (i + 1 < n)
            ck_assert_msg(s->capacity > 0 && s->occupancy >= 0 &&
                              s->occupancy <= (double)s->capacity,
                          "%s: occupancy %.2f of %zu", s->name, s->occupancy, s->capacity);
    }
}

/* A map that sleeps 3 ms per row keeps its stage busy and the consumer
 * waiting. */
START_TEST(test_slow_map_is_busy_consumer_waits)
{
    double map_ms = 3;
    sl_dataset *ds = pipeline(&map_ms, 0);
    sl_stage_stats st[MAX_STAGES];
    size_t n = drain(ds, 0, st);
    const sl_stage_stats *map = find(st, n, "map");
    check_accounting(st, n);
    ck_assert_msg(share(map->busy_ms, map) > 0.7, "map busy %.1f of %.1f ms", map->busy_ms,
                  map->elapsed_ms);
    ck_assert_msg(share(st[n - 1].wait_input_ms, &st[n - 1]) > 0.7,
                  "consumer waited %.1f of %.1f ms", st[n - 1].wait_input_ms,
                  st[n - 1].elapsed_ms);
    ck_assert_uint_eq(map->rows, NSAMPLES / BATCH); /* it maps and batches */
    {
        char buf[512], want[256];
        sl_stage_verdict(st, n, buf, sizeof buf);
        snprintf(want, sizeof want, "stage '%.96s' limits throughput", map->name);
        ck_assert_msg(strstr(buf, want), "verdict: %s", buf);
    }
    sl_dataset_free(ds);
}
END_TEST

/* A consumer that sleeps 50 ms per batch leaves the pipeline blocked on its
 * full output, which holds chunks most of the time. 50 ms: a batch of 4
 * rows takes the pipeline well under a millisecond, but on a loaded machine
 * its wake-ups and the end of the epoch took the consumer 170 ms of waiting
 * in all (a run beside a parallel build), a third of 10 sleeps of 20 ms. */
START_TEST(test_slow_consumer_blocks_pipeline)
{
    double map_ms = 0;
    sl_dataset *ds = pipeline(&map_ms, 0);
    sl_stage_stats st[MAX_STAGES];
    size_t n = drain(ds, 50, st);
    const sl_stage_stats *last = &st[n - 2], *consumer = &st[n - 1];
    check_accounting(st, n);
    ck_assert_msg(share(consumer->busy_ms, consumer) > 0.7, "consumer busy %.1f of %.1f ms",
                  consumer->busy_ms, consumer->elapsed_ms);
    ck_assert_msg(last->occupancy >= 1.0, "%s: occupancy %.2f", last->name, last->occupancy);
    {
        char buf[512];
        sl_stage_verdict(st, n, buf, sizeof buf);
        ck_assert_msg(strstr(buf, "the consumer is the bottleneck") &&
                          strstr(buf, "the pipeline keeps up"),
                      "verdict: %s", buf);
    }
    ck_assert_msg(last->threads == 0 || share(last->wait_input_ms, last) < 0.3,
                  "%s waited %.1f of %.1f ms for input", last->name, last->wait_input_ms,
                  last->elapsed_ms);
    sl_dataset_free(ds);
}
END_TEST

/* --- the verdict on constructed figures ---------------------------------- */

static sl_stage_stats stage(const char *name, int threads, double busy, double wait,
                            double blocked, size_t capacity)
{
    sl_stage_stats s;
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "%s", name);
    s.threads = threads;
    s.elapsed_ms = 1000;
    s.busy_ms = busy * threads * 10;
    s.wait_input_ms = wait * threads * 10;
    s.blocked_output_ms = blocked * threads * 10;
    s.capacity = capacity;
    return s;
}

static void expect_verdict(const sl_stage_stats *st, size_t n, const char *want)
{
    char buf[512];
    sl_stage_verdict(st, n, buf, sizeof buf);
    ck_assert_msg(strstr(buf, want) != NULL, "verdict \"%s\" lacks \"%s\"", buf, want);
}

START_TEST(test_verdicts)
{
    sl_stage_stats st[5];
    /* A sink whose executor hardly waits. */
    st[0] = stage("source", 0, 0, 0, 0, 32);
    st[1] = stage("map(image: resize)", 1, 7, 0, 93, 8);
    st[2] = stage("transfer", 1, 2, 1, 97, 4);
    st[3] = stage("executor (cpu:0)", 1, 97, 0.4, 2.6, 0);
    st[4] = stage("host (callbacks)", 1, 0, 100, 0, 0);
    expect_verdict(st, 5, "the executor is the bottleneck (busy 97%); GetNext waited 0.4% of "
                          "the time: the pipeline keeps up");
    /* A map on 2 threads that cannot keep up. */
    st[1] = stage("map(image: resize)", 2, 99, 0, 1, 8);
    st[3] = stage("executor (cpu:0)", 1, 69, 31, 0, 0);
    expect_verdict(st, 5, "stage 'map(image: resize)' limits throughput (busy 99% on 2 "
                          "threads); GetNext waited 31% of the time: add workers");
    /* The transfer thread saturated. */
    st[1] = stage("map(image: resize)", 1, 40, 0, 60, 8);
    st[2] = stage("transfer", 1, 95, 5, 0, 4);
    expect_verdict(st, 5, "stage 'transfer' limits throughput (busy 95% on 1 thread)");
    expect_verdict(st, 5, "copied too slowly");
    /* Bursts that a queue of 1 cannot absorb: nobody saturated, a stage
     * often blocked, the consumer often waiting. */
    st[0] = stage("source", 1, 10, 0, 0, 1);
    st[1] = stage("map(image: decode)", 1, 55, 5, 40, 1);
    st[2] = stage("consumer", 1, 70, 30, 0, 0);
    expect_verdict(st, 3, "no stage is saturated (the busiest, 'map(image: decode)', is busy "
                          "55%), yet it waited 30% of the time while 'map(image: decode)' was "
                          "blocked 40% on a full queue of 1");
    /* Nobody saturated, nobody blocked, the consumer waiting: CPUs short. */
    st[1] = stage("map(image: decode)", 1, 60, 40, 0, 8);
    expect_verdict(st, 3, "the stages wait for CPUs");
    /* A wait that was all start-up does not count. */
    st[1] = stage("map(image: decode)", 1, 60, 40, 0, 8);
    st[2] = stage("consumer", 1, 70, 30, 0, 0);
    st[2].startup_wait_ms = st[2].wait_input_ms;
    expect_verdict(st, 3, "the consumer is the bottleneck (busy 100%); it waited 0.0% of the "
                          "time: the pipeline keeps up (not counting the 300 ms of 1000 ms it "
                          "waited for the first batch");
    expect_verdict(st, 0, "no stages");
    /* Callbacks that keep the executor idle between sinks. */
    st[0] = stage("source", 0, 0, 0, 0, 32);
    st[1] = stage("map(image: resize)", 1, 7, 0, 93, 8);
    st[2] = stage("transfer", 1, 2, 1, 97, 4);
    st[3] = stage("executor (cpu:0)", 1, 55, 0.5, 44.5, 0);
    st[4] = stage("host (callbacks)", 1, 44, 56, 0, 0);
    expect_verdict(st, 5, "the host limits throughput: the executor was idle 44% of the time");
    {
        /* A short buffer: cut and terminated, the whole length returned. */
        char small[16], whole[512];
        size_t n = sl_stage_verdict(st, 5, small, sizeof small);
        ck_assert_uint_eq(n, sl_stage_verdict(st, 5, whole, sizeof whole));
        ck_assert_uint_eq(n, strlen(whole));
        ck_assert_uint_eq(strlen(small), sizeof small - 1);
        ck_assert(strncmp(small, whole, sizeof small - 1) == 0);
    }
}
END_TEST

/* After a sink-mode train the model reports the pipeline's stages, then
 * the transfer thread, the executor and the host; none before one. */
START_TEST(test_sink_train_reports_every_stage)
{
    double map_ms = 0;
    sl_dataset *ds = pipeline(&map_ms, 1);
    sl_model_options mo;
    sl_train_options to;
    sl_stage_stats st[MAX_STAGES];
    sl_model *m = NULL;
    char err[512];
    size_t n;
    sl_model_options_init(&mo);
    mo.network.kind = SL_NETWORK_MLP;
    mo.network.batch = BATCH;
    mo.network.height = 28;
    mo.network.width = 28;
    mo.network.hidden[0] = 8;
    mo.network.nhidden = 1;
    mo.context.threads = 1;
    ck_assert_msg(sl_model_new(&m, &mo, err, sizeof err) == SL_OK, "%s", err);
    ck_assert_uint_eq(sl_model_get_stage_stats(m, st, MAX_STAGES), 0);
    sl_train_options_init(&to);
    to.dataset_sink_mode = 1;
    /* the thread, whatever the CPUs (on one, auto would pick inline) */
    to.transfer = SL_TRANSFER_THREAD;
    ck_assert_msg(sl_model_train_opts(m, 2, ds, NULL, 0, &to) == SL_OK, "%s",
                  sl_model_last_error(m));
    n = sl_model_get_stage_stats(m, st, MAX_STAGES);
    ck_assert_uint_ge(n, 4);
    ck_assert_str_eq(st[n - 3].name, "transfer");
    ck_assert_str_eq(st[n - 2].name, "executor (cpu:0)");
    ck_assert_str_eq(st[n - 1].name, "host (callbacks)");
    ck_assert_uint_eq(st[n - 3].rows, 2 * NSAMPLES / BATCH);
    ck_assert_uint_eq(st[n - 2].rows, 2 * NSAMPLES / BATCH);
    ck_assert_uint_eq(st[n - 1].rows, 2); /* one sink per epoch */
    ck_assert_uint_eq(st[0].rows, 2 * NSAMPLES);
    ck_assert_uint_ge(st[n - 3].capacity, 1);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(st[i].elapsed_ms > 0 && st[i].busy_ms >= 0, "%s", st[i].name);
    sl_model_free(m);
    sl_dataset_free(ds);
}
END_TEST

/* --- the profiler ---------------------------------------------------------- */

/* A ring of 4 keeps the newest 4 of 10 events and counts the 6 dropped;
 * the trace names the thread, escapes what JSON must, and holds the kept
 * slices only; an unwritable path fails with its name. */
START_TEST(test_profiler_keeps_the_newest)
{
    sl_profiler *p;
    sl__track *t;
    char *path = tu_path(tmp, "trace.json"), err[256], name[16];
    void *text;
    size_t len;
    uint64_t recorded, dropped;
    ck_assert_int_eq(sl_profiler_new(&p, 4), SL_OK);
    t = sl__track_open(p, "worker \"q\"");
    ck_assert_ptr_nonnull(t);
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "s%d", i);
        sl__trace_slice(t, sl__trace_intern(p, name), i, i + 0.5, 0, i);
    }
    sl__trace_slice(NULL, "ignored", 0, 1, 0, 0); /* no track: nothing */
    sl_profiler_counts(p, &recorded, &dropped);
    ck_assert_uint_eq(recorded, 10);
    ck_assert_uint_eq(dropped, 6);
    ck_assert_int_eq(sl_profiler_write_trace(p, path, err, sizeof err), SL_OK);
    ck_assert_int_eq(tu_read_file(path, &text, &len), 0);
    text = realloc(text, len + 1);
    ck_assert_ptr_nonnull(text);
    ((char *)text)[len] = '\0';
    ck_assert_msg(strstr(text, "\"name\": \"worker \\\"q\\\"\"") != NULL, "%s", (char *)text);
    ck_assert(strstr(text, "\"s9\"") && strstr(text, "\"s6\"") && !strstr(text, "\"s5\""));
    ck_assert(strstr(text, "\"args\": {\"epoch\": 0, \"batch\": 9}"));
    ck_assert_int_eq(sl_profiler_write_trace(p, "/dev/null/x/trace.json", err, sizeof err), SL_EIO);
    ck_assert_msg(strstr(err, "/dev/null/x/trace.json") != NULL, "%s", err);
    free(text);
    free(path);
    sl_profiler_free(p);
    ck_assert_ptr_null(sl__track_open(NULL, "none"));
}
END_TEST

/* --- autotune --------------------------------------------------------- */

#define NTUNE 480 /* samples for the autotune cases: enough windows to act in */

static void setup_tune(void)
{
    tmp = tu_mkdtemp();
    ck_assert_ptr_nonnull(tmp);
    ck_assert_int_eq(tu_make_mnist(tmp, NTUNE, 8, 0), 0);
}

/* What the tuner said, one line after another. */
typedef struct tune_log {
    char text[8192];
    int lines;
} tune_log;

static void log_line(void *arg, const char *line)
{
    tune_log *l = arg;
    size_t used = strlen(l->text);
    ck_assert_msg(strncmp(line, "autotune: ", 10) == 0, "%s", line);
    snprintf(l->text + used, sizeof l->text - used, "%s\n", line);
    l->lines++;
}

/* Drains an epoch of ds with the tuner on (at most max_workers per stage),
 * sleeping consumer_ms per batch, checking that every sample comes once
 * and in order; leaves the stages' figures in st and returns their count. */
static size_t drain_tuned(sl_dataset *ds, int max_workers, double consumer_ms, tune_log *log,
                          sl_stage_stats *st)
{
    sl_iterator_options o;
    sl_iterator *it = NULL;
    sl_row row;
    uint32_t next = 0;
    size_t n;
    int rc;
    memset(log, 0, sizeof *log);
    sl_iterator_options_init(&o);
    o.timeout_ms = IT_TIMEOUT_MS;
    o.queue_chunks = 1; /* the bad start the tuner must leave */
    o.autotune = 1;
    o.autotune_max_workers = max_workers;
    o.autotune_log = log_line;
    o.autotune_log_arg = log;
    ck_assert_msg(sl_iterator_new(&it, ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
    while ((rc = sl_iterator_next(it, &row)) == SL_OK) {
        const uint32_t *labels = sl_tensor_data(row.columns[1]); /* MNIST labels: uint32 */
        for (int64_t r = 0; r < sl_tensor_shape(row.columns[1])[0]; r++, next++)
            ck_assert_uint_eq(labels[r], tu_label(next));
        sl_row_clear(&row);
        if (consumer_ms > 0)
            sleep_ms(consumer_ms);
    }
    ck_assert_msg(rc == SL_END_OF_EPOCH || rc == SL_END_OF_DATA, "%s", sl_iterator_last_error(it));
    ck_assert_uint_eq(next, NTUNE);
    n = sl_iterator_get_stage_stats(it, st, MAX_STAGES);
    ck_assert_uint_le(n, MAX_STAGES);
    sl_iterator_free(it);
    return n;
}

/* A map that sleeps 2 ms per row limits throughput: the tuner wakes more
 * of its workers, one at a time, keeps them (twice the workers, twice the
 * rows/s: sleeping scales), and says so. */
START_TEST(test_autotune_adds_workers_to_a_slow_map)
{
    double map_ms = 2;
    sl_dataset *ds = pipeline(&map_ms, 0);
    sl_stage_stats st[MAX_STAGES];
    tune_log log;
    size_t n = drain_tuned(ds, 4, 0, &log, st);
    const sl_stage_stats *map = find(st, n, "map");
    ck_assert_msg(strstr(log.text, "1 -> 2 workers (busy"), "%s", log.text);
    ck_assert_msg(strstr(log.text, "kept 2 workers"), "%s", log.text);
    ck_assert_msg(map->threads >= 2, "map ended on %d workers:\n%s", map->threads, log.text);
    /* The thread time counts the workers that worked, not the sleeping
     * ones, and busy + waiting + blocked still adds up to it. */
    ck_assert_msg(map->thread_ms < 4 * map->elapsed_ms * 0.95 &&
                      map->thread_ms > map->elapsed_ms * 1.05,
                  "thread_ms %.0f of 4 x %.0f ms", map->thread_ms, map->elapsed_ms);
    ck_assert_msg(fabs(map->busy_ms + map->wait_input_ms + map->blocked_output_ms -
                       map->thread_ms) <= 0.01 * map->thread_ms + 1.0,
                  "busy %.0f wait %.0f blocked %.0f, thread_ms %.0f", map->busy_ms,
                  map->wait_input_ms, map->blocked_output_ms, map->thread_ms);
    sl_dataset_free(ds);
}
END_TEST

/* A consumer slower than the pipeline: the tuner changes nothing, says
 * why, and the epoch still ends with the unused workers asleep. */
START_TEST(test_autotune_leaves_a_pipeline_that_keeps_up)
{
    double map_ms = 0;
    sl_dataset *ds = pipeline(&map_ms, 0);
    sl_stage_stats st[MAX_STAGES];
    tune_log log;
    size_t n = drain_tuned(ds, 4, 4, &log, st);
    ck_assert_msg(strstr(log.text, "no change: the pipeline keeps up"), "%s", log.text);
    ck_assert_msg(!strstr(log.text, "workers ("), "%s", log.text);
    ck_assert_int_eq(find(st, n, "map")->threads, 1);
    sl_dataset_free(ds);
}
END_TEST

/* Freeing a tuned iterator mid-epoch joins every worker, the sleeping ones
 * too; bad options are refused with a message. */
START_TEST(test_autotune_stop_and_options)
{
    double map_ms = 1;
    sl_dataset *ds = pipeline(&map_ms, 0);
    sl_iterator_options o;
    sl_iterator *it = NULL;
    sl_row row;
    sl_iterator_options_init(&o);
    ck_assert_int_eq(o.autotune, 0);
    ck_assert_int_ge(o.autotune_max_workers, 1);
    o.timeout_ms = IT_TIMEOUT_MS;
    o.autotune = 1;
    o.autotune_max_workers = 8;
    for (int k = 0; k < 2; k++) {
        ck_assert_msg(sl_iterator_new(&it, ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
        for (int b = 0; b < 20 * k; b++) { /* k = 0: before any row */
            ck_assert_int_eq(sl_iterator_next(it, &row), SL_OK);
            sl_row_clear(&row);
        }
        sl_iterator_free(it);
    }
    o.autotune_max_workers = 0;
    ck_assert_int_eq(sl_iterator_new(&it, ds, &o), SL_EINVAL);
    ck_assert_msg(strstr(sl_dataset_last_error(ds), "autotune_max_workers"), "%s",
                  sl_dataset_last_error(ds));
    sl_dataset_free(ds);
}
END_TEST

/* A map op whose output is 1 MiB per row (a float (512, 512) of zeros):
 * batches of such rows were more than the old default idle cap kept. */
static int widen(void *user, const sl_tensor *in, sl_tensor **out, uint64_t seed, char *errbuf,
                 size_t errlen)
{
    static const int64_t shape[2] = {512, 512};
    (void)user;
    (void)in;
    (void)seed;
    (void)errbuf;
    (void)errlen;
    return sl_tensor_new(out, SL_FLOAT32, 2, shape);
}

/* A pipeline whose batches churned through the pool under the old default
 * (half the peak; the tuner then raised it to the whole peak) now reuses
 * its blocks with the default (in use + idle within twice the peak), so
 * the tuner leaves the pool alone and nothing goes back over the cap. */
START_TEST(test_autotune_leaves_the_default_pool)
{
    sl_dataset *ds = mnist_through("widen", widen, NULL);
    sl_stage_stats st[MAX_STAGES];
    sl_pool_stats ps;
    tune_log log;
    ck_assert_int_eq(sl_dataset_batch(ds, 16, 1, 1), SL_OK);
    drain_tuned(ds, 1, 0, &log, st);
    ck_assert_msg(!strstr(log.text, "autotune: pool: "), "%s", log.text);
    sl_dataset_get_pool_stats(ds, &ps);
    ck_assert_uint_eq(ps.cap_frees, 0);
    ck_assert_uint_ge(ps.idle_cap_bytes, ps.peak_in_use_bytes);
    sl_dataset_free(ds);
}
END_TEST

Suite *make_stats_suite(void)
{
    Suite *s = suite_create("stats");
    TCase *tc = tu_tcase("stages", 120);
    tcase_add_checked_fixture(tc, setup_tmp, teardown_tmp);
    tcase_add_test(tc, test_slow_map_is_busy_consumer_waits);
    tcase_add_test(tc, test_slow_consumer_blocks_pipeline);
    tcase_add_test(tc, test_sink_train_reports_every_stage);
    tcase_add_test(tc, test_verdicts);
    tcase_add_test(tc, test_profiler_keeps_the_newest);
    suite_add_tcase(s, tc);
    tc = tu_tcase("autotune", 120);
    tcase_add_checked_fixture(tc, setup_tune, teardown_tmp);
    tcase_add_test(tc, test_autotune_adds_workers_to_a_slow_map);
    tcase_add_test(tc, test_autotune_leaves_a_pipeline_that_keeps_up);
    tcase_add_test(tc, test_autotune_stop_and_options);
    tcase_add_test(tc, test_autotune_leaves_the_default_pool);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(make_stats_suite);
}
