/* check_resume.c: exact resume. First the pipeline started mid-run
 * (sl_iterator_options' start_epoch and start_rows): from every start point
 * the rows must be exactly those an iterator started at the beginning hands
 * out from there (same order, same random draws), whatever the workers; the
 * rows skipped must never reach the maps; what cannot be placed (a repeat,
 * a start past the last epoch) is refused. Then training: k steps, a save,
 * the process killed (SIGKILL), a new process loading the checkpoint and
 * resuming must end with the parameters of a run that never stopped, bit
 * for bit, without sinking and sinking (sink_size -1 and > 0), with 1, 2
 * and 4 workers. And a checkpoint writer killed at any moment leaves a
 * file that loads; a resumed run's TimeMonitor divides by the steps it
 * ran; ModelCheckpoint's every-N-steps saves at the sink ends that cross a
 * multiple of N, and at the run's end. */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
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
    sl_dataset *ds;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_mnist_options_init(&o);
    o.dataset_dir = tmpdir;
    o.usage = SL_MNIST_TRAIN;
    ck_assert_msg(sl_dataset_mnist(ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
    sl_dataset_set_seed(ds, 7);
    sl_op_custom_options_init(&co);
    co.name = "count";
    co.fn = count_copy;
    co.user = calls;
    ck_assert_int_eq(sl_op_random_crop_new(&ops[0], 24, 24, 2, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&ops[1], 0.5, NULL, 0), SL_OK);
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

START_TEST(test_position_reported)
{
    /* An iterator stopped anywhere reports where it is; one started there
     * hands out what the first would have handed out next. */
    enum { CAP = EPOCHS * (PER_EPOCH + 1) };
    uint64_t straight[CAP], got[CAP];
    atomic_int calls = 0;
    sl_dataset *ds = pipeline(2, &calls);
    size_t n = run_from(ds, 0, 0, straight, CAP);
    for (size_t stop = 0; stop < n; stop += 5) {
        sl_iterator_options o;
        sl_iterator *it;
        sl_row row;
        int64_t epoch = -1, rows = -1;
        size_t m;
        sl_iterator_options_init(&o);
        o.num_epochs = EPOCHS;
        o.timeout_ms = IT_TIMEOUT_MS;
        ck_assert_int_eq(sl_iterator_new(&it, ds, &o), SL_OK);
        for (size_t i = 0; i < stop; i++) {
            int rc = sl_iterator_next(it, &row);
            ck_assert(rc == SL_OK || rc == SL_END_OF_EPOCH);
            sl_row_clear(&row);
        }
        sl_iterator_get_position(it, &epoch, &rows);
        sl_iterator_free(it);
        ck_assert_int_eq(epoch * (PER_EPOCH + 1) + rows, (int64_t)stop);
        m = run_from(ds, epoch, rows, got, CAP);
        ck_assert_uint_eq(m, n - stop);
        ck_assert(memcmp(got, straight + stop, m * sizeof got[0]) == 0);
    }
    sl_dataset_free(ds);
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

/* --- resuming training ---------------------------------------------------- */

#define T_SAMPLES 300 /* 9 batches of 32 per epoch */
#define T_BATCH 32
#define T_PER_EPOCH (T_SAMPLES / T_BATCH)

/* LeNet's pipeline with the random ops a resume must replay: resize to 32,
 * random crop (padding 2) and flip, scale, CHW; shuffled order and buffer. */
static sl_dataset *train_pipeline(int workers)
{
    sl_mnist_options o;
    sl_op *cast, *img[5];
    sl_dataset *ds;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_mnist_options_init(&o);
    o.dataset_dir = tmpdir;
    o.usage = SL_MNIST_TRAIN;
    o.sampler.seed = 11;
    ck_assert_msg(sl_dataset_mnist(ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
    sl_dataset_set_seed(ds, 11);
    ck_assert_int_eq(sl_op_type_cast_new(&cast, SL_INT32, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_resize_new(&img[0], 32, 32, SL_INTER_LINEAR, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_random_crop_new(&img[1], 32, 32, 2, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&img[2], 0.5, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_rescale_new(&img[3], 1.0 / 255.0, 0.0, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_hwc2chw_new(&img[4], NULL, 0), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &cast, 1, "label", NULL, workers), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, img, 5, "image", NULL, workers), SL_OK);
    sl_op_release(cast);
    for (int i = 0; i < 5; i++)
        sl_op_release(img[i]);
    ck_assert_int_eq(sl_dataset_shuffle(ds, 100), SL_OK);
    ck_assert_int_eq(sl_dataset_batch(ds, T_BATCH, 1, workers), SL_OK);
    return ds;
}

static sl_model *lenet(uint64_t seed)
{
    sl_model_options o;
    sl_model *m = NULL;
    char err[512];
    sl_model_options_init(&o);
    o.seed = seed;
    ck_assert_msg(sl_model_new(&m, &o, err, sizeof err) == SL_OK, "%s", err);
    return m;
}

/* How a run is fed: non-sink, sink -1 or sink 4, for `epochs` epochs. */
typedef struct mode {
    const char *name;
    int sink;
    int64_t sink_size, epochs;
} mode;

static const mode modes[] = {
    {"non-sink", 0, -1, 3},
    {"sink -1", 1, -1, 3},
    {"sink 4", 1, 4, 7}, /* 28 steps: 3 of the dataset's epochs, in sinks of 4 */
};

static sl_train_options train_opts(const mode *md, int64_t max_steps, int resume)
{
    sl_train_options t;
    sl_train_options_init(&t);
    t.dataset_sink_mode = md->sink;
    t.sink_size = md->sink_size;
    t.max_steps = max_steps;
    t.resume = resume;
    return t;
}

static void train(sl_model *m, sl_dataset *ds, const mode *md, const sl_train_options *t,
                  sl_callback *const *cbs, size_t ncbs)
{
    ck_assert_msg(sl_model_train_opts(m, md->epochs, ds, cbs, ncbs, t) == SL_OK, "%s: %s",
                  md->name, sl_model_last_error(m));
}

/* A callback that, at global step `at`, saves the model to `path` and
 * kills its own process, as a job killed right after a checkpoint. */
typedef struct killer {
    int64_t at;
    const char *path;
} killer;

static int kill_at(void *self, const sl_train_info *info)
{
    killer *k = self;
    if (info->global_step < k->at)
        return SL_OK;
    if (sl_model_save(info->model, k->path) != SL_OK)
        _exit(3);
    raise(SIGKILL);
    return SL_OK;
}

/* Trains md in a child process that saves at step `at` and is killed;
 * returns once it is dead, the checkpoint at path. */
static void train_and_kill(const mode *md, int workers, int64_t at, const char *path)
{
    int status;
    pid_t pid;
    fflush(NULL);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        killer k = {at, path};
        sl_callback cb;
        sl_callback *cbs[1] = {&cb};
        sl_dataset *ds = train_pipeline(workers);
        sl_model *m = lenet(5);
        sl_train_options t = train_opts(md, 0, 0);
        memset(&cb, 0, sizeof cb);
        cb.self = &k;
        cb.step_end = kill_at;
        sl_model_train_opts(m, md->epochs, ds, cbs, 1, &t);
        _exit(4); /* never killed: the test fails on the exit status */
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
                  "%s: the child was not killed (status %d)", md->name, status);
}

START_TEST(test_resume_after_kill_equals_straight_run)
{
    /* Non-sink it dies mid-epoch (step 13 = epoch 2, batch 4); sink -1
     * after the first epoch's sink (step 9); sink 4 after its third sink
     * (step 12, batch 3 of the dataset's second epoch). The children are
     * forked while this process runs no thread of its own (a fork of a
     * threaded process may not start threads under ThreadSanitizer). */
    static const int64_t kill_steps[] = {13, 9, 12};
    int sanitized = tu_shorten(TU_SANITIZED, "test_resume_after_kill_equals_straight_run",
                               "workers 2 only (not 1, 2 and 4)");
    int wlo = sanitized ? 2 : 1, whi = sanitized ? 2 : 4;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        const mode *md = &modes[i];
        sl_train_options straight = train_opts(md, 0, 0), resumed = train_opts(md, 0, 1);
        char *paths[3] = {NULL, NULL, NULL};
        sl_dataset *ds;
        sl_model *ref;
        for (int workers = wlo, k = 0; workers <= whi; workers *= 2, k++) {
            char name[32];
            snprintf(name, sizeof name, "killed-%d.ckpt", workers);
            paths[k] = tu_path(tmpdir, name);
            unlink(paths[k]);
            train_and_kill(md, workers, kill_steps[i], paths[k]);
        }
        ds = train_pipeline(1);
        ref = lenet(5);
        train(ref, ds, md, &straight, NULL, 0);
        sl_dataset_free(ds);
        for (int workers = wlo, k = 0; workers <= whi; workers *= 2, k++) {
            char what[96];
            sl_model *m = lenet(6); /* other weights: the checkpoint must set them all */
            ck_assert_msg(sl_model_load(m, paths[k]) == SL_OK, "%s", sl_model_last_error(m));
            ck_assert_int_eq(sl_model_global_step(m), kill_steps[i]);
            ds = train_pipeline(workers);
            train(m, ds, md, &resumed, NULL, 0);
            ck_assert_int_eq(sl_model_global_step(m), sl_model_global_step(ref));
            snprintf(what, sizeof what, "%s, %d workers, killed at step %lld", md->name, workers,
                     (long long)kill_steps[i]);
            tu_assert_same_params(ref, m, what);
            sl_model_free(m);
            sl_dataset_free(ds);
            free(paths[k]);
        }
        sl_model_free(ref);
    }
}
END_TEST

START_TEST(test_resume_in_process_and_limits)
{
    /* In one process: max_steps stops a run, a resume on the same model
     * finishes it; max_steps counts from the run's start; a resumed run
     * that has already ended does nothing; another dataset is refused. */
    const mode *md = &modes[0];
    sl_train_options part = train_opts(md, 5, 0), rest = train_opts(md, 0, 1);
    sl_train_options upto = train_opts(md, 20, 1);
    char *path = tu_path(tmpdir, "m.ckpt");
    sl_dataset *ds = train_pipeline(2), *other;
    sl_model *ref = lenet(5), *m = lenet(5), *n = lenet(7);
    train(ref, ds, md, &part, NULL, 0); /* 5 steps ... */
    ck_assert_int_eq(sl_model_save(ref, path), SL_OK);
    train(ref, ds, md, &rest, NULL, 0); /* ... then the other 22 */
    ck_assert_int_eq(sl_model_global_step(ref), md->epochs * T_PER_EPOCH);
    ck_assert_int_eq(sl_model_load(m, path), SL_OK);
    train(m, ds, md, &upto, NULL, 0);
    ck_assert_int_eq(sl_model_global_step(m), 20);
    train(m, ds, md, &rest, NULL, 0);
    tu_assert_same_params(ref, m, "5 + 15 + 7 steps against 5 + 22");
    train(m, ds, md, &rest, NULL, 0); /* the run has ended: nothing to do */
    ck_assert_int_eq(sl_model_global_step(m), md->epochs * T_PER_EPOCH);
    tu_assert_same_params(ref, m, "a resume after the end");
    /* Another seed would read other batches. */
    ck_assert_int_eq(sl_model_load(n, path), SL_OK);
    other = train_pipeline(2);
    sl_dataset_set_seed(other, 12);
    ck_assert_int_eq(sl_model_train_opts(n, md->epochs, other, NULL, 0, &rest), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_model_last_error(n), "seed 11"));
    sl_dataset_free(other);
    sl_model_free(ref);
    sl_model_free(m);
    sl_model_free(n);
    sl_dataset_free(ds);
    free(path);
}
END_TEST

/* The lines a TimeMonitor emitted. */
typedef struct lines {
    int n;
    char line[8][160];
} lines;

static void collect_line(void *user, const char *line)
{
    lines *l = user;
    if (l->n < 8)
        snprintf(l->line[l->n], sizeof l->line[0], "%s", line);
    l->n++;
}

START_TEST(test_time_monitor_after_resume)
{
    /* A run stopped at step 5 and resumed: the resumed run's first epoch
     * ran 4 steps (sink 4: 3, the rest of its second sink), and its per
     * step time is that epoch's time over those, not over the 9 (4) steps
     * the epoch holds. */
    static const int64_t ran[] = {4, 4, 3};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        const mode *md = &modes[i];
        sl_train_options part = train_opts(md, 5, 0), rest = train_opts(md, 0, 1);
        sl_dataset *ds = train_pipeline(1);
        sl_model *m = lenet(5);
        sl_callback tm;
        sl_callback *cbs[1] = {&tm};
        lines l;
        double epoch_ms, per_ms;
        memset(&l, 0, sizeof l);
        train(m, ds, md, &part, NULL, 0);
        ck_assert_int_eq(sl_model_global_step(m), 5);
        ck_assert_int_eq(sl_callback_time_monitor(&tm, collect_line, &l), SL_OK);
        train(m, ds, md, &rest, cbs, 1);
        ck_assert_int_ge(l.n, 1);
        ck_assert_msg(sscanf(l.line[0], "epoch time: %lf ms, per step time: %lf ms", &epoch_ms,
                             &per_ms) == 2,
                      "%s: %s", md->name, l.line[0]);
        /* both printed to 0.001 ms */
        ck_assert_msg(fabs(per_ms * (double)ran[i] - epoch_ms) <= 0.0006 * (double)ran[i] + 0.0006,
                      "%s: %s (the resumed epoch ran %lld steps)", md->name, l.line[0],
                      (long long)ran[i]);
        sl_callback_release(&tm);
        sl_model_free(m);
        sl_dataset_free(ds);
    }
}
END_TEST

START_TEST(test_ckpt_steps_at_sink_ends_and_the_run_end)
{
    /* Checkpoints every 6 global steps, the run stopped by max_steps at
     * 19: without sinking at steps 6, 12 and 18; with sink -1 (a sink per
     * epoch of 9 steps) at the sink ends that crossed a multiple of 6 (9,
     * 18); with sink 4 at those ending at 8, 12 and 19. And at the run's
     * end (19) unless just saved; that last file loads as step 19. */
    static const char *const want[] = {
        "lenet-1_6.ckpt lenet-2_3.ckpt lenet-2_9.ckpt lenet-3_1.ckpt ",
        "lenet-1_9.ckpt lenet-2_9.ckpt lenet-3_1.ckpt ",
        "lenet-2_4.ckpt lenet-3_4.ckpt lenet-5_3.ckpt ",
    };
    static const char *const last[] = {"lenet-3_1.ckpt", "lenet-3_1.ckpt", "lenet-5_3.ckpt"};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        const mode *md = &modes[i];
        sl_train_options t = train_opts(md, 19, 0);
        char name[32], got[512], *dir, *path;
        sl_dataset *ds = train_pipeline(1);
        sl_model *m = lenet(5), *n = lenet(6);
        sl_callback ck;
        sl_callback *cbs[1] = {&ck};
        snprintf(name, sizeof name, "ckpts-%zu", i);
        dir = tu_path(tmpdir, name);
        ck_assert_int_eq(sl_callback_checkpoint(&ck, dir, "lenet", 6, 0), SL_OK);
        train(m, ds, md, &t, cbs, 1);
        ck_assert_int_eq(sl_model_global_step(m), 19);
        tu_listing(dir, got, sizeof got);
        ck_assert_msg(strcmp(got, want[i]) == 0, "%s: %s", md->name, got);
        path = tu_path(dir, last[i]);
        ck_assert_msg(sl_model_load(n, path) == SL_OK, "%s", sl_model_last_error(n));
        ck_assert_int_eq(sl_model_global_step(n), 19);
        tu_assert_same_params(m, n, "the run's last checkpoint");
        sl_callback_release(&ck);
        sl_model_free(m);
        sl_model_free(n);
        sl_dataset_free(ds);
        free(path);
        free(dir);
    }
}
END_TEST

/* Rewrites a version 2 checkpoint as version 1 (no position section). */
static void make_v1(const char *v2, const char *v1)
{
    unsigned char *p;
    size_t n;
    uint32_t crc;
    ck_assert_int_eq(tu_read_file(v2, (void **)&p, &n), 0);
    ck_assert_uint_gt(n, 24 + 40 + 4);
    p[8] = 1;
    n -= 40 + 4;
    crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), p, (uInt)n);
    for (int b = 0; b < 4; b++)
        p[n + (size_t)b] = (unsigned char)(crc >> (8 * b));
    ck_assert_int_eq(tu_write_bytes(v1, p, n + 4, 0), 0);
    free(p);
}

START_TEST(test_old_checkpoints_load)
{
    /* A version 1 file still loads (same parameters, same step), but has
     * no position: resuming from it is refused with a reason. */
    char *v2 = tu_path(tmpdir, "v2.ckpt"), *v1 = tu_path(tmpdir, "v1.ckpt");
    const mode *md = &modes[0];
    sl_train_options part = train_opts(md, 4, 0), rest = train_opts(md, 0, 1);
    sl_dataset *ds = train_pipeline(1);
    sl_model *a = lenet(5), *b = lenet(8);
    train(a, ds, md, &part, NULL, 0);
    ck_assert_int_eq(sl_model_save(a, v2), SL_OK);
    make_v1(v2, v1);
    ck_assert_msg(sl_model_load(b, v1) == SL_OK, "%s", sl_model_last_error(b));
    ck_assert_int_eq(sl_model_global_step(b), 4);
    tu_assert_same_params(a, b, "a version 1 file");
    ck_assert_int_eq(sl_model_train_opts(b, md->epochs, ds, NULL, 0, &rest), SL_EINVAL);
    ck_assert_ptr_nonnull(strstr(sl_model_last_error(b), "does not know where"));
    sl_model_free(a);
    sl_model_free(b);
    sl_dataset_free(ds);
    free(v1);
    free(v2);
}
END_TEST

START_TEST(test_killed_writer_leaves_whole_file)
{
    /* A child saves two different models in turn to one path, as fast as
     * it can; killed after 0 to ~20 ms, 40 times, it always leaves a file
     * that loads and holds one of the two. */
    char *path = tu_path(tmpdir, "w.ckpt");
    sl_dataset *ds = train_pipeline(1);
    const mode *md = &modes[0];
    sl_train_options few = train_opts(md, 2, 0);
    sl_model *a = lenet(5), *b = lenet(9), *c = lenet(1);
    train(b, ds, md, &few, NULL, 0);
    ck_assert_int_eq(sl_model_save(a, path), SL_OK);
    for (int round = 0; round < 40; round++) {
        struct timespec ts = {0, (long)(round % 20) * 1000000L + (round * 7919L) % 500000L};
        int status;
        pid_t pid;
        fflush(NULL);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            for (unsigned i = 0;; i++)
                if (sl_model_save(i % 2 ? b : a, path) != SL_OK)
                    _exit(3);
        }
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFSIGNALED(status));
        ck_assert_msg(sl_model_load(c, path) == SL_OK, "round %d: %s", round,
                      sl_model_last_error(c));
        ck_assert(sl_model_global_step(c) == 0 || sl_model_global_step(c) == 2);
        tu_assert_same_params(sl_model_global_step(c) ? b : a, c, "a killed writer's file");
    }
    sl_model_free(a);
    sl_model_free(b);
    sl_model_free(c);
    sl_dataset_free(ds);
    free(path);
}
END_TEST

Suite *make_resume_suite(void)
{
    Suite *s = suite_create("resume");
    TCase *tc = tu_tcase("iterator start", 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_start_matches_straight_run);
    tcase_add_test(tc, test_position_reported);
    tcase_add_test(tc, test_skipped_rows_never_mapped);
    tcase_add_test(tc, test_start_past_epoch_end);
    tcase_add_test(tc, test_bad_starts_refused);
    suite_add_tcase(s, tc);
    tc = tu_tcase("training", 600);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_resume_after_kill_equals_straight_run);
    tcase_add_test(tc, test_resume_in_process_and_limits);
    tcase_add_test(tc, test_old_checkpoints_load);
    tcase_add_test(tc, test_killed_writer_leaves_whole_file);
    tcase_add_test(tc, test_time_monitor_after_resume);
    tcase_add_test(tc, test_ckpt_steps_at_sink_ends_and_the_run_end);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(make_resume_suite);
}
