/* bench.c: the timing helpers of sluice/bench.h: the training step alone
 * on one made-up batch or on real batches kept in memory, and the serial
 * reference in which the pipeline runs only between steps. */
#include "exec/model_impl.h"
#include "devices/device_impl.h"
#include "exec/step_impl.h"

#include <stdlib.h>
#include <string.h>

#include "sluice/bench.h"

#include "core/clock.h"
#include "core/rng.h"
#include "core/tensor_impl.h"
#include "sluice/iterator.h"

/* The most bytes of batches kept at once (sl_bench_batches_new, and a
 * chunk of sl_model_bench_serial). */
#define BENCH_MAX_BYTES ((size_t)256 << 20)

struct sl_bench_batches {
    size_t ninputs;   /* columns per batch, in the step's input order */
    int64_t count;
    sl_tensor **feed; /* (count, ninputs): owned references */
};

/* The step alone, on the threads train runs it on, with no interaction:
 * the host's with the team. */
static int step_here(sl_model *m, sl_tensor *const *feed, size_t n)
{
    int rc = sl_step_run_here(m->train_step, feed, n);
    m->global_step += rc == SL_OK;
    return rc;
}

/* Steps over `count` batches, batch i's n inputs at feed(arg, i): on a
 * device with cores of its own, as one job of its executor's thread, back
 * to back as a sink runs them (a hand-over per step would time the
 * host's wake-ups, not the device's compute); else on the host's thread. */
typedef struct steps_job {
    sl_model *m;
    sl_tensor *const *(*feed)(void *arg, int64_t i);
    void *arg;
    int64_t count;
    size_t n;
    int rc;
} steps_job;

static void steps_job_run(void *p)
{
    steps_job *j = p;
    for (int64_t i = 0; i < j->count && j->rc == SL_OK; i++)
        j->rc = step_here(j->m, j->feed(j->arg, i), j->n);
}

static int run_steps(sl_model *m, sl_tensor *const *(*feed)(void *arg, int64_t i), void *arg,
                     int64_t count, size_t n)
{
    steps_job j = {m, feed, arg, count, n, SL_OK};
    if (sl__device_core_mask(m->dev))
        sl__executor_call(m->ex, steps_job_run, &j);
    else
        steps_job_run(&j);
    return j.rc;
}

/* The one made-up batch, every time. */
static sl_tensor *const *same_feed(void *arg, int64_t i)
{
    (void)i;
    return arg;
}

int sl_model_bench_steps(sl_model *m, int64_t steps, double *samples_per_s)
{
    const sl_network_options *no = &m->opts.network;
    int64_t is[4] = {no->batch, no->channels, no->height, no->width}, ls[1] = {no->batch};
    sl_tensor *feed[2] = {NULL, NULL};
    sl_rng rng;
    double t0, ms;
    int rc;

    sl__err_clear(&m->err);
    if (steps < 1)
        return sl__errf(&m->err, SL_EINVAL, "bench: steps %lld must be >= 1", (long long)steps);
    rc = sl_tensor_new(&feed[0], SL_FLOAT32, 4, is);
    if (rc == SL_OK)
        rc = sl_tensor_new(&feed[1], SL_INT32, 1, ls);
    if (rc < 0) {
        sl_tensor_release(feed[0]);
        return sl__errf(&m->err, rc, "bench: out of memory");
    }
    /* Values like a normalised image: centred, unit spread. */
    sl__rng_seed(&rng, 12345, 0, 0, 0);
    for (size_t i = 0; i < feed[0]->numel; i++)
        ((float *)feed[0]->data)[i] = (float)(sl__rng_uniform(&rng) * 3.0 - 1.5);
    for (size_t i = 0; i < feed[1]->numel; i++)
        ((int32_t *)feed[1]->data)[i] = (int32_t)(i % (size_t)no->num_classes);
    t0 = sl__now_ms();
    rc = run_steps(m, same_feed, feed, steps, 2); /* as train runs it */
    ms = sl__now_ms() - t0;
    if (rc < 0)
        sl__errf(&m->err, rc, "bench: %s", sl_step_last_error(m->train_step));
    else
        *samples_per_s = (double)steps * (double)no->batch / (ms / 1e3);
    sl_tensor_release(feed[0]);
    sl_tensor_release(feed[1]);
    return rc;
}

/* --- real batches in memory -------------------------------------------- */

void sl_bench_batches_free(sl_bench_batches *b)
{
    if (!b)
        return;
    for (size_t i = 0; b->feed && i < (size_t)b->count * b->ninputs; i++)
        sl_tensor_release(b->feed[i]);
    free(b->feed);
    free(b);
}

int64_t sl_bench_batches_count(const sl_bench_batches *b)
{
    return b->count;
}

/* A copy of t in a tensor of its own. */
static int copy_tensor(const sl_tensor *t, sl_tensor **out)
{
    int rc = sl_tensor_new(out, t->dtype, t->ndim, t->shape);
    if (rc == SL_OK)
        memcpy((*out)->data, t->data, t->nbytes);
    return rc;
}

/* The batches of one epoch an iterator of ds, started at (epoch, rows),
 * delivers next: at most `want`, and at most BENCH_MAX_BYTES of them
 * (but one at least). Fills rows[0..*got-1], each holding its references;
 * *end is 1 when the epoch ended. The iterator is freed before this
 * returns, which joins every thread of the pipeline. */
static int take_batches(sl_model *m, sl_dataset *ds, int64_t epoch, int64_t start, int64_t want,
                        sl_row *rows, int64_t *got, int *end)
{
    sl_iterator_options io;
    sl_iterator *it = NULL;
    size_t bytes = 0;
    int rc;

    *got = 0;
    *end = 0;
    sl_iterator_options_init(&io);
    io.num_epochs = epoch + 1;
    io.start_epoch = epoch;
    io.start_rows = start;
    io.timeout_ms = sl__model_data_timeout(m);
    rc = sl_iterator_new(&it, ds, &io);
    if (rc < 0)
        return sl__errf(&m->err, rc, "bench: %s", sl_dataset_last_error(ds));
    while (*got < want && bytes < BENCH_MAX_BYTES) {
        sl_row *row = &rows[*got];
        rc = sl_iterator_next(it, row);
        if (rc == SL_END_OF_EPOCH || rc == SL_END_OF_DATA) {
            *end = 1;
            rc = SL_OK;
            break;
        }
        if (rc < 0) {
            rc = sl__errf(&m->err, rc, "bench: %s", sl_iterator_last_error(it));
            break;
        }
        for (size_t c = 0; c < row->ncolumns; c++)
            bytes += row->columns[c] ? row->columns[c]->nbytes : 0;
        (*got)++;
    }
    sl_iterator_free(it);
    return rc;
}

/* Batches per chunk: what an epoch may hold, at most `want`. */
/* Batches of the step's inputs that fit in BENCH_MAX_BYTES (at least 1),
 * from the graph's input shapes: what bounds an endless epoch's chunk
 * before any batch is read. */
static int64_t batches_that_fit(const sl_model *m)
{
    size_t bytes = 0;
    for (size_t i = 0; i < sl_step_num_inputs(m->train_step); i++) {
        sl_tensor_spec spec;
        size_t e;
        if (sl_graph_node_spec(m->g, sl_step_input_node(m->train_step, i), &spec) != SL_OK)
            continue;
        e = sl_dtype_size(spec.dtype);
        for (int d = 0; d < spec.ndim; d++)
            e *= spec.shape[d] > 0 ? (size_t)spec.shape[d] : 1;
        bytes += e;
    }
    return bytes ? (int64_t)(BENCH_MAX_BYTES / bytes) + 1 : INT64_MAX;
}

static int epoch_batches(sl_model *m, sl_dataset *ds, int64_t want, int64_t *out)
{
    int64_t spe = -1, fit = batches_that_fit(m);
    if (sl_dataset_get_dataset_size(ds, &spe) != SL_OK || spe == SL_DATASET_SIZE_ENDLESS)
        spe = want; /* an endless epoch: the bytes cap the chunk */
    if (spe < 1)
        return sl__errf(&m->err, SL_EINVAL,
                        "bench: an epoch of the dataset holds no batch (fewer samples than "
                        "the batch size, with drop_remainder?)");
    *out = spe < want ? spe : want;
    if (*out > fit)
        *out = fit;
    return SL_OK;
}

int sl_bench_batches_new(sl_bench_batches **out, sl_model *m, sl_dataset *ds,
                         int64_t max_batches)
{
    sl_bench_batches *b = NULL;
    sl_row *rows = NULL;
    int cols[SL_MAX_COLUMNS];
    size_t n = sl_step_num_inputs(m->train_step);
    int64_t want = 0, got = 0;
    int end, rc;

    *out = NULL;
    sl__err_clear(&m->err);
    if (max_batches < 1)
        return sl__errf(&m->err, SL_EINVAL, "bench: max_batches %lld must be >= 1",
                        (long long)max_batches);
    rc = sl__model_map_columns(m, m->train_step, ds, "bench", cols);
    if (rc == SL_OK)
        rc = epoch_batches(m, ds, max_batches, &want);
    if (rc < 0)
        return rc;
    rows = calloc((size_t)want, sizeof *rows);
    b = calloc(1, sizeof *b);
    if (!rows || !b) {
        rc = sl__errf(&m->err, SL_ENOMEM, "bench: out of memory");
        goto out;
    }
    rc = take_batches(m, ds, 0, 0, want, rows, &got, &end);
    if (rc == SL_OK && got == 0)
        rc = sl__errf(&m->err, SL_EINVAL, "bench: the dataset gave no batch");
    if (rc == SL_OK && !(b->feed = calloc((size_t)got * n, sizeof *b->feed)))
        rc = sl__errf(&m->err, SL_ENOMEM, "bench: out of memory");
    if (rc == SL_OK) {
        b->ninputs = n;
        b->count = got; /* entries not yet copied are NULL, which free skips */
    }
    /* Copies, so that the pipeline's pool gets its blocks back: each row
     * goes back as soon as it is copied, so the two never both hold the
     * whole epoch. */
    for (int64_t i = 0; i < got && rc == SL_OK; i++) {
        for (size_t k = 0; k < n && rc == SL_OK; k++)
            if ((rc = copy_tensor(rows[i].columns[cols[k]], &b->feed[(size_t)i * n + k])) < 0)
                rc = sl__errf(&m->err, rc, "bench: out of memory for %lld batches",
                              (long long)got);
        sl_row_clear(&rows[i]);
    }
out:
    for (int64_t i = 0; rows && i < got; i++)
        sl_row_clear(&rows[i]);
    free(rows);
    if (rc < 0) {
        sl_bench_batches_free(b);
        return rc;
    }
    *out = b;
    return SL_OK;
}

/* Batch i of the kept ones, cycled. */
static sl_tensor *const *kept_feed(void *arg, int64_t i)
{
    const sl_bench_batches *b = arg;
    return &b->feed[(size_t)(i % b->count) * b->ninputs];
}

int sl_model_bench_steps_on(sl_model *m, const sl_bench_batches *b, int64_t steps,
                            double *samples_per_s)
{
    size_t n = b->ninputs;
    double t0, ms;
    int rc = SL_OK;

    sl__err_clear(&m->err);
    if (steps < 1)
        return sl__errf(&m->err, SL_EINVAL, "bench: steps %lld must be >= 1", (long long)steps);
    if (n != sl_step_num_inputs(m->train_step))
        return sl__errf(&m->err, SL_EINVAL,
                        "bench: the batches hold %zu columns; this model's step reads %zu", n,
                        sl_step_num_inputs(m->train_step));
    t0 = sl__now_ms();
    rc = run_steps(m, kept_feed, (void *)b, steps, n);
    ms = sl__now_ms() - t0;
    if (rc < 0)
        return sl__errf(&m->err, rc, "bench: %s", sl_step_last_error(m->train_step));
    *samples_per_s = (double)steps * (double)m->opts.network.batch / (ms / 1e3);
    return SL_OK;
}

/* --- the host's hand-over --------------------------------------------------- */

/* Steps per block of the hand-over measurement: long enough that one
 * block's clock readings cost nothing against it, short enough that the
 * machine changes little between the two blocks of a pair. */
#define HANDOVER_BLOCK 10

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* `count` steps from batch `first` of b, each as a non-sink step runs it
 * (exec/train.c): posted to the executor's thread and waited for on a
 * device with cores of its own, else on the calling thread; without the
 * device's launch and result, which the bus model counts apart. */
static int posted_steps(sl_model *m, const sl_bench_batches *b, int64_t first, int64_t count)
{
    int own_cores = sl__device_core_mask(m->dev) != 0;
    for (int64_t i = 0; i < count; i++) {
        sl_tensor *const *feed = kept_feed((void *)b, first + i);
        int rc = own_cores ? sl_step_run(m->train_step, feed, b->ninputs)
                           : sl_step_run_here(m->train_step, feed, b->ninputs);
        if (rc < 0)
            return rc;
        m->global_step++;
    }
    return SL_OK;
}

/* Batch i of the kept ones from an offset, cycled. */
typedef struct offset_feed {
    const sl_bench_batches *b;
    int64_t first;
} offset_feed;

static sl_tensor *const *offset_kept_feed(void *arg, int64_t i)
{
    const offset_feed *o = arg;
    return kept_feed((void *)o->b, o->first + i);
}

int sl_model_bench_handover(sl_model *m, const sl_bench_batches *b, int64_t steps, double *ms)
{
    int64_t pairs = steps / (2 * HANDOVER_BLOCK), next = 0;
    double *diff;
    int rc = SL_OK;

    sl__err_clear(&m->err);
    if (pairs < 1)
        return sl__errf(&m->err, SL_EINVAL, "bench: hand-over: steps %lld must be >= %d",
                        (long long)steps, 2 * HANDOVER_BLOCK);
    if (b->ninputs != sl_step_num_inputs(m->train_step))
        return sl__errf(&m->err, SL_EINVAL,
                        "bench: the batches hold %zu columns; this model's step reads %zu",
                        b->ninputs, sl_step_num_inputs(m->train_step));
    diff = malloc((size_t)pairs * sizeof *diff);
    if (!diff)
        return sl__errf(&m->err, SL_ENOMEM, "bench: hand-over: out of memory");
    for (int64_t p = 0; p < pairs && rc == SL_OK; p++) {
        /* Pair p: a block of posted steps and a block run as one job, the
         * order alternating pair by pair, on the following batches. */
        double t_posted = 0.0, t_job = 0.0;
        for (int half = 0; half < 2 && rc == SL_OK; half++) {
            int posted = (half + (int)(p % 2)) % 2 == 0;
            offset_feed of = {b, next};
            double t0 = sl__now_ms();
            rc = posted ? posted_steps(m, b, next, HANDOVER_BLOCK)
                        : run_steps(m, offset_kept_feed, &of, HANDOVER_BLOCK, b->ninputs);
            *(posted ? &t_posted : &t_job) = sl__now_ms() - t0;
            next += HANDOVER_BLOCK;
        }
        /* The posted block paid a hand-over per step, the job one. */
        diff[p] = (t_posted - t_job) / (HANDOVER_BLOCK - 1);
    }
    if (rc == SL_OK) {
        qsort(diff, (size_t)pairs, sizeof *diff, by_value);
        *ms = pairs % 2 ? diff[pairs / 2] : (diff[pairs / 2 - 1] + diff[pairs / 2]) / 2.0;
    } else {
        sl__errf(&m->err, rc, "bench: hand-over: %s", sl_step_last_error(m->train_step));
    }
    free(diff);
    return rc;
}

/* --- the serial reference ------------------------------------------------ */

/* Why chunks of kept batches, and not a pause of the pipeline between
 * steps: an iterator's threads run ahead until its bounded queues are
 * full, so while it lives they may run beside a step; only freeing it
 * (which joins them) guarantees that none does. Restarting one per batch
 * would cost a thread start and a refill per step, so it delivers a whole
 * chunk first and is started again where the chunk ended
 * (sl_iterator_options start_epoch and start_rows: the same batches, in
 * the same order, as one iterator would give). */
/* A chunk's row i as a step's inputs. */
typedef struct chunk_feed {
    sl_row *rows;
    const int *cols;
    size_t n;
    sl_tensor *feed[SL_MAX_COLUMNS];
} chunk_feed;

static sl_tensor *const *chunk_row_feed(void *arg, int64_t i)
{
    chunk_feed *c = arg;
    for (size_t k = 0; k < c->n; k++)
        c->feed[k] = c->rows[i].columns[c->cols[k]];
    return c->feed;
}

int sl_model_bench_serial(sl_model *m, sl_dataset *ds, int64_t steps)
{
    sl_row *rows = NULL;
    int cols[SL_MAX_COLUMNS];
    size_t n = sl_step_num_inputs(m->train_step);
    int64_t chunk = 0, epoch = 0, pos = 0, done = 0, spe = -1;
    int rc;

    sl__err_clear(&m->err);
    if (steps < 1)
        return sl__errf(&m->err, SL_EINVAL, "bench: steps %lld must be >= 1", (long long)steps);
    if (sl_dataset_get_dataset_size(ds, &spe) != SL_OK)
        spe = -1;
    rc = sl__model_map_columns(m, m->train_step, ds, "bench", cols);
    if (rc == SL_OK)
        rc = epoch_batches(m, ds, steps, &chunk);
    if (rc < 0)
        return rc;
    if (!(rows = calloc((size_t)chunk, sizeof *rows)))
        return sl__errf(&m->err, SL_ENOMEM, "bench: out of memory");
    while (rc == SL_OK && done < steps) {
        int64_t got = 0, want = steps - done < chunk ? steps - done : chunk;
        int end = 0;
        rc = take_batches(m, ds, epoch, pos, want, rows, &got, &end);
        if (rc == SL_OK && got == 0 && pos == 0)
            rc = sl__errf(&m->err, SL_EINVAL, "bench: epoch %lld held no batch",
                          (long long)epoch + 1);
        /* No pipeline thread lives now: the steps run alone. */
        if (rc == SL_OK && got > 0) {
            chunk_feed cf = {rows, cols, n, {NULL}};
            if ((rc = run_steps(m, chunk_row_feed, &cf, got, n)) < 0)
                sl__errf(&m->err, rc, "bench: %s", sl_step_last_error(m->train_step));
        }
        for (int64_t i = 0; i < got; i++)
            sl_row_clear(&rows[i]);
        done += got;
        pos += got;
        if (end || pos == spe) {
            epoch++;
            pos = 0;
        }
    }
    free(rows);
    return rc;
}
