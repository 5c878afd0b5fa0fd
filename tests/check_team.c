/* check_team.c: a pipeline stage run on its consumer's threads
 * (pipeline/consumer_team.h, pipeline/stage_team.c). A map+batch stage
 * whose chunks are short goes to the consumer's team after its warm-up,
 * and then the team's rounds make the batches: the same rows, in the same
 * order, as the stage's own threads make. A stage whose chunks are long
 * never goes; one whose round runs long comes back to its threads for
 * good; a map error reaches the consumer with its message; freeing the
 * iterator while the team has the stage joins everything. The team here
 * is the test's own: helper threads that run each round's calls at once. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "core/error.h"
#include "ops/op_impl.h"
#include "pipeline/batch_lender.h"
#include "pipeline/consumer_team.h"
#include "pipeline/dataset_impl.h"
#include "sluice/sluice.h"
#include "testutil.h"

Suite *make_team_suite(void);

#define N_TRAIN 96
#define BATCH 4
#define TEAM_THREADS 2

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* --- the test's team --------------------------------------------------- */

/* nthreads - 1 helpers wait for a round; run() hands each its call, makes
 * call 0 itself and returns when all are done. */
typedef struct test_team {
    sl__consumer_team base;
    pthread_mutex_t lock;
    pthread_cond_t go, done;
    pthread_t helpers[TEAM_THREADS - 1];
    void (*fn)(void *arg, int worker);
    void *fn_arg;
    unsigned generation;
    int pending, quit;
    atomic_int rounds;   /* run() calls so far */
} test_team;

typedef struct helper_arg {
    test_team *team;
    int worker;
} helper_arg;

static helper_arg g_helper_args[TEAM_THREADS - 1];

static void *helper_main(void *p)
{
    helper_arg *a = p;
    test_team *t = a->team;
    unsigned seen = 0;
    pthread_mutex_lock(&t->lock);
    for (;;) {
        while (t->generation == seen && !t->quit)
            pthread_cond_wait(&t->go, &t->lock);
        if (t->quit)
            break;
        seen = t->generation;
        pthread_mutex_unlock(&t->lock);
        t->fn(t->fn_arg, a->worker);
        pthread_mutex_lock(&t->lock);
        if (--t->pending == 0)
            pthread_cond_signal(&t->done);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

static void test_team_run(void *arg, void (*fn)(void *fn_arg, int worker), void *fn_arg)
{
    test_team *t = arg;
    pthread_mutex_lock(&t->lock);
    t->fn = fn;
    t->fn_arg = fn_arg;
    t->pending = TEAM_THREADS - 1;
    t->generation++;
    atomic_fetch_add(&t->rounds, 1);
    pthread_cond_broadcast(&t->go);
    pthread_mutex_unlock(&t->lock);
    fn(fn_arg, 0);
    pthread_mutex_lock(&t->lock);
    while (t->pending > 0)
        pthread_cond_wait(&t->done, &t->lock);
    pthread_mutex_unlock(&t->lock);
}

/* A team that takes the stage over after `warmup` chunks of at most
 * max_chunk_ms on average (generous where a test needs the hand-over, so
 * that a loaded machine's slow chunk does not prevent it). */
static void team_start(test_team *t, int warmup, double max_chunk_ms)
{
    memset(t, 0, sizeof *t);
    t->base.nthreads = TEAM_THREADS;
    t->base.run = test_team_run;
    t->base.arg = t;
    t->base.warmup_chunks = warmup;
    t->base.max_chunk_ms = max_chunk_ms;
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->go, NULL);
    pthread_cond_init(&t->done, NULL);
    for (int i = 0; i < TEAM_THREADS - 1; i++) {
        g_helper_args[i] = (helper_arg){t, i + 1};
        ck_assert_int_eq(pthread_create(&t->helpers[i], NULL, helper_main, &g_helper_args[i]), 0);
    }
}

static int team_rounds(test_team *t)
{
    return atomic_load(&t->rounds);
}

static void team_stop(test_team *t)
{
    pthread_mutex_lock(&t->lock);
    t->quit = 1;
    pthread_cond_broadcast(&t->go);
    pthread_mutex_unlock(&t->lock);
    for (int i = 0; i < TEAM_THREADS - 1; i++)
        pthread_join(t->helpers[i], NULL);
    pthread_cond_destroy(&t->done);
    pthread_cond_destroy(&t->go);
    pthread_mutex_destroy(&t->lock);
}

/* --- a map op that sleeps, or fails, at chosen samples --------------------- */

/* On the image column, before the other maps. Rows are counted as the op
 * sees them, and the first pixel of each kept in that order (with one
 * worker and no team, the pipeline's order); a row whose first pixel is
 * fail_pixel fails (-1: none; tu_pixel makes it unique to a sample of the
 * test's 96); rows past the first fast_rows sleep slow_ms. */
typedef struct probe {
    atomic_int seen;
    int fast_rows, slow_ms;
    int fail_pixel;
    uint8_t first_pixel[N_TRAIN];
} probe;

typedef struct probe_op {
    sl_op base;
    probe *p;
} probe_op;

static int probe_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    probe *p = ((const probe_op *)op)->p;
    int n = atomic_fetch_add(&p->seen, 1);
    uint8_t first = *(const uint8_t *)in->data;
    if (n < N_TRAIN)
        p->first_pixel[n] = first;
    if (p->fail_pixel >= 0 && first == (uint8_t)p->fail_pixel) {
        sl_tensor_release(in);
        *out = NULL;
        return sl__errf(ctx->err, SL_EINVAL, "probe: pixel %d is refused", p->fail_pixel);
    }
    if (n >= p->fast_rows && p->slow_ms > 0)
        sleep_ms(p->slow_ms);
    *out = in;
    return SL_OK;
}

static const sl_op_iface probe_iface = {"Probe", tu_infer_identity, probe_run, NULL};

/* --- the pipeline ------------------------------------------------------ */

/* Shuffled MNIST train (seed 7), the probe (when p is not NULL), a
 * random horizontal flip and a rescale of the image, batches of
 * BATCH: one map+batch stage of `workers` workers over a lazy source. */
static sl_dataset *team_pipeline(const char *dir, probe *p, int workers)
{
    sl_mnist_options mo;
    sl_dataset *ds;
    sl_op *ops[2], *pop;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_mnist_options_init(&mo);
    mo.dataset_dir = dir;
    mo.usage = SL_MNIST_TRAIN;
    sl_dataset_set_seed(ds, 7);
    ck_assert_msg(sl_dataset_mnist(ds, &mo) == SL_OK, "%s", sl_dataset_last_error(ds));
    if (p) {
        ck_assert_int_eq(sl__op_alloc(&pop, sizeof(probe_op), &probe_iface, 0), SL_OK);
        ((probe_op *)pop)->p = p;
        ck_assert_int_eq(sl_dataset_map(ds, &pop, 1, "image", NULL, workers), SL_OK);
        sl_op_release(pop);
    }
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&ops[0], 0.5, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_rescale_new(&ops[1], 1.0 / 255.0, 0.0, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, ops, 2, "image", NULL, workers), SL_OK);
    sl_op_release(ops[0]);
    sl_op_release(ops[1]);
    ck_assert_int_eq(sl_dataset_batch(ds, BATCH, 1, workers), SL_OK);
    return ds;
}

/* What an iterator handed out: every batch's bytes, in order, then how it
 * ended, and the log of the hand-overs. */
typedef struct run_result {
    unsigned char *bytes;
    size_t n, cap;
    int batches;
    int end;            /* the status that ended it */
    char error[SL_ERRMSG_LEN];
    char log[4][256];
    int nlog;
} run_result;

static void keep_log(void *arg, const char *line)
{
    run_result *r = arg;
    if (r->nlog < 4)
        snprintf(r->log[r->nlog++], sizeof r->log[0], "%s", line);
}

static void append(run_result *r, const void *data, size_t n)
{
    if (r->n + n > r->cap) {
        r->cap = (r->n + n) * 2;
        r->bytes = realloc(r->bytes, r->cap);
        ck_assert_ptr_nonnull(r->bytes);
    }
    memcpy(r->bytes + r->n, data, n);
    r->n += n;
}

/* Runs ds for `epochs` epochs (or until an error), with team's help when
 * team is not NULL, queues of queue_chunks chunks (0: the default). */
static run_result run_queues(sl_dataset *ds, test_team *team, int epochs, size_t queue_chunks)
{
    run_result r;
    sl_iterator_options io;
    sl_iterator *it = NULL;
    sl_row row;
    int rc;
    memset(&r, 0, sizeof r);
    sl_iterator_options_init(&io);
    io.num_epochs = epochs;
    io.autotune_log = keep_log;
    io.autotune_log_arg = &r;
    if (queue_chunks > 0)
        io.queue_chunks = queue_chunks;
    ck_assert_msg(sl__iterator_new_lending(&it, ds, &io, NULL, team ? &team->base : NULL) == SL_OK,
                  "%s", sl_dataset_last_error(ds));
    while ((rc = sl_iterator_next(it, &row)) == SL_OK || rc == SL_END_OF_EPOCH) {
        if (rc == SL_END_OF_EPOCH)
            continue;
        for (size_t c = 0; c < row.ncolumns; c++)
            append(&r, sl_tensor_data(row.columns[c]), sl_tensor_nbytes(row.columns[c]));
        r.batches++;
        sl_row_clear(&row);
    }
    r.end = rc;
    if (rc != SL_END_OF_DATA)
        snprintf(r.error, sizeof r.error, "%s", sl_iterator_last_error(it));
    sl_iterator_free(it);
    return r;
}

static run_result run(sl_dataset *ds, test_team *team, int epochs)
{
    return run_queues(ds, team, epochs, 0);
}

static void assert_same(const run_result *a, const run_result *b, const char *what)
{
    ck_assert_msg(a->batches == b->batches, "%s: %d batches against %d", what, a->batches,
                  b->batches);
    ck_assert_msg(a->n == b->n && memcmp(a->bytes, b->bytes, a->n) == 0,
                  "%s: the batches differ", what);
}

static int logged(const run_result *r, const char *text)
{
    for (int i = 0; i < r->nlog; i++)
        if (strstr(r->log[i], text))
            return 1;
    return 0;
}

/* --- tests --------------------------------------------------------------- */

/* Short chunks: after 4 of them the team takes the stage over and its
 * rounds make the rest, the same bytes in the same order as the stage's
 * own threads make, with 1 worker or 2, over 3 epochs; also with queues
 * of 1 chunk (the stage's output then holds 2 per worker, fewer than a
 * round's 4: its threads may take only what can be pushed without
 * waiting on the consumer, which is busy running the round). */
START_TEST(test_short_chunks_go_to_the_team)
{
    char *dir = tu_mnist_dir(N_TRAIN, 0);
    int workers = _i % 2 == 0 ? 1 : 2;
    size_t queue_chunks = _i < 2 ? 0 : 1;
    sl_dataset *ds = team_pipeline(dir, NULL, workers);
    test_team team;
    run_result alone, helped;
    alone = run(ds, NULL, 3);
    ck_assert_int_eq(alone.end, SL_END_OF_DATA);
    ck_assert_int_eq(alone.batches, 3 * N_TRAIN / BATCH);
    team_start(&team, 4, 1000.0);
    helped = run_queues(ds, &team, 3, queue_chunks);
    ck_assert_msg(helped.end == SL_END_OF_DATA, "%s", helped.error);
    assert_same(&alone, &helped, "with the team");
    /* the rounds made most batches: at most 2 x 2 a round, after the
     * warm-up's 4 and up to 8 the threads made ahead */
    ck_assert_int_ge(team_rounds(&team), (helped.batches - 4 - 8) / 4);
    ck_assert_msg(logged(&helped, "now runs on the consumer's 2 threads"), "log: %s",
                  helped.nlog ? helped.log[0] : "(none)");
    ck_assert(!logged(&helped, "back on its own threads"));
    {
        /* A team thread's tensors come from its part of the dataset's
         * pool, and all went back. (One thread of a round may find every
         * chunk with room taken by the other.) */
        sl__pool_stats part_stats;
        uint64_t parts_peak = 0;
        for (int i = 0; i < TEAM_THREADS; i++) {
            sl_pool *part = sl__pool_find_part(ds->pool, i);
            ck_assert_ptr_nonnull(part); /* each ran a turn, which makes it */
            sl__pool_get_stats(part, &part_stats);
            ck_assert_uint_eq(part_stats.in_use, 0);
            parts_peak += part_stats.peak_in_use;
        }
        ck_assert_uint_gt(parts_peak, 0);
    }
    team_stop(&team);
    free(alone.bytes);
    free(helped.bytes);
    sl_dataset_free(ds);
    tu_mnist_dir_drop(dir);
}
END_TEST

/* Chunks of 4 rows x 3 ms (12 ms, over the 5 ms a hand-over allows)
 * stay on the stage's threads: no round runs. */
START_TEST(test_long_chunks_stay_on_threads)
{
    char *dir = tu_mnist_dir(N_TRAIN, 0);
    probe p = {0, 0, 3, -1, {0}};
    sl_dataset *ds = team_pipeline(dir, &p, 1);
    test_team team;
    run_result r;
    team_start(&team, 4, 5.0);
    r = run(ds, &team, 1);
    ck_assert_msg(r.end == SL_END_OF_DATA, "%s", r.error);
    ck_assert_int_eq(r.batches, N_TRAIN / BATCH);
    ck_assert_int_eq(team_rounds(&team), 0);
    ck_assert_int_eq(r.nlog, 0);
    team_stop(&team);
    free(r.bytes);
    sl_dataset_free(ds);
    tu_mnist_dir_drop(dir);
}
END_TEST

/* Rows turn slow (30 ms each) after the hand-over: the first round takes
 * over 50 ms, and the stage goes back to its threads for good, which make
 * the rest; every batch comes, in order. */
START_TEST(test_a_long_round_gives_the_team_up)
{
    char *dir = tu_mnist_dir(N_TRAIN, 0);
    probe fast = {0, 1 << 30, 0, -1, {0}}, slow = {0, 10 * BATCH, 30, -1, {0}};
    sl_dataset *ref = team_pipeline(dir, &fast, 1);
    sl_dataset *ds = team_pipeline(dir, &slow, 1);
    test_team team;
    run_result alone, helped;
    int rounds;
    alone = run(ref, NULL, 1);
    team_start(&team, 4, 1000.0);
    helped = run(ds, &team, 1);
    ck_assert_msg(helped.end == SL_END_OF_DATA, "%s", helped.error);
    assert_same(&alone, &helped, "a stage given back to its threads");
    ck_assert_msg(logged(&helped, "now runs on the consumer's"), "no hand-over logged");
    ck_assert_msg(logged(&helped, "back on its own threads for good"), "%d lines: %s",
                  helped.nlog, helped.nlog ? helped.log[helped.nlog - 1] : "");
    /* rounds stopped at the first slow one */
    rounds = team_rounds(&team);
    ck_assert_int_le(rounds, 10);
    team_stop(&team);
    free(alone.bytes);
    free(helped.bytes);
    sl_dataset_free(ref);
    sl_dataset_free(ds);
    tu_mnist_dir_drop(dir);
}
END_TEST

/* A map error in a round reaches the consumer with the op's message and
 * the sample's name, after the batches before it, as without the team. The
 * failing sample is the 81st of the epoch (batch 20): the stage's threads
 * run ahead by a queue's worth of batches (8) before the team takes over. */
START_TEST(test_an_error_in_a_round_reaches_the_consumer)
{
    char *dir = tu_mnist_dir(N_TRAIN, 0);
    probe order = {0, 1 << 30, 0, -1, {0}};
    sl_dataset *ds = team_pipeline(dir, &order, 1);
    sl_dataset *a, *b;
    probe pa, pb;
    test_team team;
    run_result first, alone, helped;
    first = run(ds, NULL, 1);
    ck_assert_int_eq(first.end, SL_END_OF_DATA);
    pa = (probe){0, 1 << 30, 0, order.first_pixel[80], {0}};
    pb = pa;
    a = team_pipeline(dir, &pa, 1);
    b = team_pipeline(dir, &pb, 1);
    alone = run(a, NULL, 1);
    ck_assert_int_eq(alone.end, SL_EINVAL);
    ck_assert_int_eq(alone.batches, 20);
    team_start(&team, 1, 1000.0);
    helped = run(b, &team, 1);
    ck_assert_msg(helped.end == SL_EINVAL, "%d: %s", helped.end, helped.error);
    ck_assert_msg(strstr(helped.error, "is refused") && strstr(helped.error, "train-images"),
                  "%s", helped.error);
    ck_assert_str_eq(alone.error, helped.error);
    assert_same(&alone, &helped, "the batches before the error");
    ck_assert_int_gt(team_rounds(&team), 2);
    team_stop(&team);
    free(first.bytes);
    free(alone.bytes);
    free(helped.bytes);
    sl_dataset_free(ds);
    sl_dataset_free(a);
    sl_dataset_free(b);
    tu_mnist_dir_drop(dir);
}
END_TEST

/* Freeing the iterator while the team has the stage, after 14 to 18 batches,
 * joins the stage's sleeping threads and frees everything (ASan and TSan
 * check); 20 times. */
START_TEST(test_free_while_on_the_team)
{
    char *dir = tu_mnist_dir(N_TRAIN, 0);
    sl_dataset *ds = team_pipeline(dir, NULL, 2);
    test_team team;
    team_start(&team, 1, 1000.0);
    for (int i = 0; i < 20; i++) {
        sl_iterator *it = NULL;
        sl_row row;
        int before = team_rounds(&team);
        ck_assert_int_eq(sl__iterator_new_lending(&it, ds, NULL, NULL, &team.base), SL_OK);
        for (int k = 0; k < 14 + i % 5; k++) {
            ck_assert_int_eq(sl_iterator_next(it, &row), SL_OK);
            sl_row_clear(&row);
        }
        sl_iterator_free(it);
        ck_assert_int_gt(team_rounds(&team), before);
    }
    team_stop(&team);
    sl_dataset_free(ds);
    tu_mnist_dir_drop(dir);
}
END_TEST

Suite *make_team_suite(void)
{
    Suite *s = suite_create("team");
    TCase *tc = tu_tcase("team", 120);
    tcase_add_loop_test(tc, test_short_chunks_go_to_the_team, 0, 4);
    tcase_add_test(tc, test_long_chunks_stay_on_threads);
    tcase_add_test(tc, test_a_long_round_gives_the_team_up);
    tcase_add_test(tc, test_an_error_in_a_round_reaches_the_consumer);
    tcase_add_test(tc, test_free_while_on_the_team);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(make_team_suite);
}
