/* check_bad_samples.c: what the pipeline does with bad samples
 * (sl_error_samples_options) on a small MNIST folder, where a custom op
 * fails on chosen samples: skip and replace keep every epoch's length on
 * one and two shards, never let a bad sample through, report each one
 * once, give the same rows whatever the worker counts and chunk sizes,
 * place stand-ins as documented, and resume mid-epoch exactly; the cap;
 * errors that are not a bad sample's still raise. The ImageFolder with
 * broken JPEGs trained to the end, and one with nothing but broken JPEGs,
 * are in check_bad_samples_train.c. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "sluice/sluice.h"
#include "pipeline/sampler.h"
#include "testutil.h"

Suite *make_bad_samples_suite(void);

#define N_TRAIN 300
#define IT_TIMEOUT_MS 60000

static char *tmpdir;

static void setup(void)
{
    tmpdir = tu_mkdtemp();
    ck_assert_ptr_nonnull(tmpdir);
    ck_assert_int_eq(tu_make_mnist(tmpdir, N_TRAIN, 10, 0), 0);
}

static void teardown(void)
{
    tu_rmtree(tmpdir);
    free(tmpdir);
}

/* Sample i's pixel (0, 0), which tells samples apart (tu_pixel). */
static uint8_t first_pixel(int64_t i)
{
    return tu_pixel((uint32_t)i, 0, 0);
}

/* The samples the flaky op fails on: about one in 37 (8 of 300). */
static int pixel_is_bad(uint8_t px)
{
    return px % 37 == 0;
}

static int is_bad(int64_t i)
{
    return pixel_is_bad(first_pixel(i));
}

/* A custom op passing images through, failing with *status on bad ones. */
static int flaky_fn(void *user, const sl_tensor *in, sl_tensor **out, uint64_t seed,
                    char *errbuf, size_t errlen)
{
    const int *status = user;
    (void)seed;
    if (pixel_is_bad(((const uint8_t *)sl_tensor_data(in))[0])) {
        snprintf(errbuf, errlen, "this sample is marked bad");
        return *status;
    }
    *out = sl_tensor_retain((sl_tensor *)in);
    return SL_OK;
}

static sl_op *flaky_op(const int *status)
{
    sl_op_custom_options o;
    sl_op *op = NULL;
    char err[256];
    sl_op_custom_options_init(&o);
    o.name = "flaky";
    o.fn = flaky_fn;
    o.user = (void *)status;
    ck_assert_msg(sl_op_custom_new(&op, &o, err, sizeof err) == SL_OK, "%s", err);
    return op;
}

static const int data_error = SL_EFORMAT;

static sl_sampler_options sampler(int shuffle, int64_t shards, int64_t shard)
{
    sl_sampler_options s;
    sl_sampler_options_init(&s);
    s.shuffle = shuffle;
    s.seed = 7;
    s.num_shards = shards;
    s.shard_id = shard;
    return s;
}

/* MNIST train, the sampler given, op on `image` (workers). */
static sl_dataset *mnist_with(const sl_sampler_options *s, sl_op *op, int workers)
{
    sl_mnist_options o;
    sl_dataset *ds;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_mnist_options_init(&o);
    o.dataset_dir = tmpdir;
    o.usage = SL_MNIST_TRAIN;
    o.sampler = *s;
    ck_assert_msg(sl_dataset_mnist(ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
    sl_dataset_set_seed(ds, 11);
    ck_assert_int_eq(sl_dataset_map(ds, &op, 1, "image", NULL, workers), SL_OK);
    return ds;
}

/* The same with the flaky op failing with *status. */
static sl_dataset *flaky_mnist(const sl_sampler_options *s, int workers, const int *status)
{
    sl_op *op = flaky_op(status);
    sl_dataset *ds = mnist_with(s, op, workers);
    sl_op_release(op);
    return ds;
}

/* The reports one iterator made. */
typedef struct reports {
    int64_t n;
    int64_t index[64], epoch[64], stand_in[64];
    int replaced[64], status[64];
    char sample[64][128];
    uint64_t last_count;
} reports;

static void collect(void *user, const sl_bad_sample *b)
{
    reports *r = user;
    ck_assert_int_lt(r->n, 64);
    r->index[r->n] = b->index;
    r->epoch[r->n] = b->epoch;
    r->stand_in[r->n] = b->stand_in;
    r->replaced[r->n] = b->replaced;
    r->status[r->n] = b->status;
    snprintf(r->sample[r->n], sizeof r->sample[0], "%s", b->sample);
    ck_assert_ptr_nonnull(strstr(b->reason, "marked bad"));
    r->last_count = b->count;
    r->n++;
}

static void set_mode(sl_dataset *ds, sl_error_samples mode, int64_t max_count, double fraction,
                     reports *r)
{
    sl_error_samples_options o;
    sl_error_samples_options_init(&o);
    o.mode = mode;
    o.max_bad_samples = max_count;
    o.max_bad_fraction = fraction;
    o.report = r ? collect : NULL;
    o.report_user = r;
    ck_assert_msg(sl_dataset_set_error_samples(ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
}

/* What iterating a dataset gave. */
typedef struct run_result {
    int status;
    int64_t rows, epochs, per_epoch[4];
    uint64_t hash;              /* FNV-1a over every byte of every row */
    uint8_t pixels[2 * N_TRAIN]; /* first pixel of each row, unbatched runs */
    int bad_rows;               /* rows (or batch images) with a bad sample's pixel */
    sl_iterator_stats stats;
    char msg[1024];
} run_result;

static void run(sl_dataset *ds, int64_t epochs, size_t chunk_rows, int batched, run_result *res)
{
    sl_iterator_options o;
    sl_iterator *it;
    sl_row row;
    int rc;
    memset(res, 0, sizeof *res);
    res->hash = 1469598103934665603ULL;
    sl_iterator_options_init(&o);
    o.num_epochs = epochs;
    o.chunk_rows = chunk_rows;
    o.timeout_ms = IT_TIMEOUT_MS;
    ck_assert_msg(sl_iterator_new(&it, ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
    while ((rc = sl_iterator_next(it, &row)) == SL_OK || rc == SL_END_OF_EPOCH) {
        if (rc == SL_END_OF_EPOCH) {
            res->epochs++;
            continue;
        }
        for (size_t c = 0; c < row.ncolumns; c++) {
            const uint8_t *p = sl_tensor_data(row.columns[c]);
            for (size_t b = 0; b < sl_tensor_nbytes(row.columns[c]); b++)
                res->hash = (res->hash ^ p[b]) * 1099511628211ULL;
        }
        {
            const uint8_t *img = sl_tensor_data(row.columns[0]);
            int64_t n = batched ? sl_tensor_shape(row.columns[0])[0] : 1;
            for (int64_t k = 0; k < n; k++)
                res->bad_rows += pixel_is_bad(img[k * 28 * 28]);
            if (!batched && res->rows < 2 * N_TRAIN)
                res->pixels[res->rows] = img[0];
        }
        res->rows++;
        if (res->epochs < 4)
            res->per_epoch[res->epochs]++;
        sl_row_clear(&row);
    }
    res->status = rc;
    snprintf(res->msg, sizeof res->msg, "%s", sl_iterator_last_error(it));
    sl_iterator_get_stats(it, &res->stats);
    sl_iterator_free(it);
}

/* The bad samples of one pass of a shard (the sampler's order). */
static int64_t bad_in_pass(const sl_sampler_options *s, int64_t epoch, int64_t *bad, int64_t max)
{
    int64_t n = sl__sampler_size(s, N_TRAIN), nbad = 0;
    int64_t *order = malloc((size_t)n * sizeof *order);
    ck_assert_ptr_nonnull(order);
    ck_assert_int_eq(sl__sampler_order(s, N_TRAIN, epoch, order), SL_OK);
    for (int64_t i = 0; i < n; i++)
        if (is_bad(order[i]) && nbad < max)
            bad[nbad++] = order[i];
    free(order);
    return nbad;
}

static int in_pass(const sl_sampler_options *s, int64_t epoch, int64_t index)
{
    int64_t n = sl__sampler_size(s, N_TRAIN), found = 0;
    int64_t *order = malloc((size_t)n * sizeof *order);
    ck_assert_ptr_nonnull(order);
    ck_assert_int_eq(sl__sampler_order(s, N_TRAIN, epoch, order), SL_OK);
    for (int64_t i = 0; i < n; i++)
        found |= order[i] == index;
    free(order);
    return (int)found;
}

/* Shuffled source, shuffle node, batches of 10 (dropping the remainder),
 * two epochs, on one shard and on each of two: skip and replace keep every
 * batch, let no bad sample through, report each bad sample of the shard's
 * pass once (and its stand-in is a good sample of that pass), and give the
 * same bytes whatever the workers (map and batch) and chunk sizes. */
START_TEST(test_shards_keep_their_length)
{
    static const struct { int workers; size_t chunk_rows; } cfg[] = {{1, 64}, {2, 7}, {4, 1}};
    const sl_error_samples mode = _i ? SL_ERROR_SAMPLES_REPLACE : SL_ERROR_SAMPLES_SKIP;
    for (int64_t shards = 1; shards <= 2; shards++) {
        for (int64_t shard = 0; shard < shards; shard++) {
            sl_sampler_options s = sampler(1, shards, shard);
            int64_t per_epoch = sl__sampler_size(&s, N_TRAIN) / 10, expect = 0;
            uint64_t hash = 0;
            int64_t bad[2][32], nbad[2];
            for (int e = 0; e < 2; e++) {
                nbad[e] = bad_in_pass(&s, e, bad[e], 32);
                expect += nbad[e];
            }
            ck_assert_int_gt(expect, 2);
            for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
                reports rep;
                run_result res;
                sl_dataset *ds = flaky_mnist(&s, cfg[c].workers, &data_error);
                memset(&rep, 0, sizeof rep);
                set_mode(ds, mode, -1, 1.0, &rep);
                ck_assert_int_eq(sl_dataset_shuffle(ds, 50), SL_OK);
                ck_assert_int_eq(sl_dataset_batch(ds, 10, 1, cfg[c].workers > 1 ? 2 : 1), SL_OK);
                ck_assert_int_eq(tu_dataset_size(ds), per_epoch);
                run(ds, 2, cfg[c].chunk_rows, 1, &res);
                ck_assert_msg(res.status == SL_END_OF_DATA, "%s", res.msg);
                ck_assert_int_eq(res.per_epoch[0], per_epoch);
                ck_assert_int_eq(res.per_epoch[1], per_epoch);
                ck_assert_int_eq(res.bad_rows, 0);
                ck_assert_int_eq(rep.n, expect);
                ck_assert_uint_eq(rep.last_count, (uint64_t)expect);
                ck_assert_uint_eq(mode == SL_ERROR_SAMPLES_SKIP ? res.stats.samples_skipped
                                                                : res.stats.samples_replaced,
                                  (uint64_t)expect);
                ck_assert_uint_eq(mode == SL_ERROR_SAMPLES_SKIP ? res.stats.samples_replaced
                                                                : res.stats.samples_skipped,
                                  0);
                for (int64_t k = 0; k < rep.n; k++) {
                    int64_t e = rep.epoch[k], hits = 0;
                    ck_assert(e == 0 || e == 1);
                    for (int64_t j = 0; j < nbad[e]; j++)
                        hits += bad[e][j] == rep.index[k];
                    ck_assert_msg(hits == 1, "sample %lld is not a bad one of epoch %lld",
                                  (long long)rep.index[k], (long long)e);
                    for (int64_t j = 0; j < k; j++)
                        ck_assert(rep.index[j] != rep.index[k] || rep.epoch[j] != e);
                    ck_assert_int_eq(rep.status[k], SL_EFORMAT);
                    ck_assert_int_eq(rep.replaced[k], mode == SL_ERROR_SAMPLES_REPLACE);
                    if (mode == SL_ERROR_SAMPLES_SKIP) {
                        ck_assert_int_eq(rep.stand_in[k], -1);
                    } else {
                        ck_assert(!is_bad(rep.stand_in[k]));
                        ck_assert(in_pass(&s, e, rep.stand_in[k]));
                    }
                }
                if (c == 0)
                    hash = res.hash;
                ck_assert_msg(res.hash == hash, "workers %d, chunk_rows %zu: other rows",
                              cfg[c].workers, cfg[c].chunk_rows);
                sl_dataset_free(ds);
            }
        }
    }
}
END_TEST

/* In file order, unbatched: skip yields the good samples in order, then
 * the stand-ins; replace puts those same stand-ins where the bad samples
 * were and leaves every other row where it was. */
START_TEST(test_stand_in_places)
{
    sl_sampler_options s = sampler(0, 1, 0);
    run_result skip, replace;
    int64_t bad[32], nbad = bad_in_pass(&s, 0, bad, 32), good = 0;
    sl_dataset *ds = flaky_mnist(&s, 3, &data_error);
    set_mode(ds, SL_ERROR_SAMPLES_SKIP, -1, 1.0, NULL);
    run(ds, 1, 16, 0, &skip);
    set_mode(ds, SL_ERROR_SAMPLES_REPLACE, -1, 1.0, NULL);
    run(ds, 1, 16, 0, &replace);
    ck_assert_msg(skip.status == SL_END_OF_DATA, "%s", skip.msg);
    ck_assert_msg(replace.status == SL_END_OF_DATA, "%s", replace.msg);
    ck_assert_int_eq(skip.rows, N_TRAIN);
    ck_assert_int_eq(replace.rows, N_TRAIN);
    ck_assert_int_eq(skip.bad_rows, 0);
    ck_assert_int_eq(replace.bad_rows, 0);
    ck_assert_uint_eq(skip.stats.samples_skipped, (uint64_t)nbad);
    ck_assert_uint_eq(replace.stats.samples_replaced, (uint64_t)nbad);
    for (int64_t i = 0, b = 0; i < N_TRAIN; i++) {
        if (is_bad(i)) {
            /* the b-th stand-in, at the bad sample's place and at the end */
            ck_assert_uint_eq(replace.pixels[i], skip.pixels[N_TRAIN - nbad + b]);
            b++;
            continue;
        }
        ck_assert_uint_eq(replace.pixels[i], first_pixel(i));
        ck_assert_uint_eq(skip.pixels[good++], first_pixel(i));
    }
    ck_assert_int_eq(good, N_TRAIN - nbad);
    sl_dataset_free(ds);
}
END_TEST

/* A map that ends the chain and a repeat before it: skip adds a stage to
 * fill the places at each end of epoch; behind an endless repeat (no end
 * of epoch reaches the map) samples are only dropped, and nothing hangs. */
START_TEST(test_skip_chain_shapes)
{
    sl_sampler_options s = sampler(1, 1, 0);
    run_result res;
    int64_t bad[32], nbad = bad_in_pass(&s, 0, bad, 32) + bad_in_pass(&s, 1, bad, 32);
    sl_mnist_options o;
    sl_dataset *ds = flaky_mnist(&s, 2, &data_error);
    sl_op *op;
    set_mode(ds, SL_ERROR_SAMPLES_SKIP, -1, 1.0, NULL);
    run(ds, 2, 64, 0, &res);
    ck_assert_msg(res.status == SL_END_OF_DATA, "%s", res.msg);
    ck_assert_int_eq(res.per_epoch[0], N_TRAIN);
    ck_assert_int_eq(res.per_epoch[1], N_TRAIN);
    ck_assert_uint_eq(res.stats.samples_skipped, (uint64_t)nbad);
    sl_dataset_free(ds);

    /* repeat(2) before the map: one epoch of two passes, its length kept */
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_mnist_options_init(&o);
    o.dataset_dir = tmpdir;
    o.usage = SL_MNIST_TRAIN;
    o.sampler = s;
    ck_assert_int_eq(sl_dataset_mnist(ds, &o), SL_OK);
    ck_assert_int_eq(sl_dataset_repeat(ds, 2), SL_OK);
    op = flaky_op(&data_error);
    ck_assert_int_eq(sl_dataset_map(ds, &op, 1, "image", NULL, 2), SL_OK);
    set_mode(ds, SL_ERROR_SAMPLES_SKIP, -1, 1.0, NULL);
    run(ds, 1, 64, 0, &res);
    ck_assert_msg(res.status == SL_END_OF_DATA, "%s", res.msg);
    ck_assert_int_eq(res.per_epoch[0], 2 * N_TRAIN);
    ck_assert_int_eq(res.bad_rows, 0);
    ck_assert_uint_eq(res.stats.samples_skipped, (uint64_t)nbad);
    sl_dataset_free(ds);

    /* an endless repeat before the map, a take after it */
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    ck_assert_int_eq(sl_dataset_mnist(ds, &o), SL_OK);
    ck_assert_int_eq(sl_dataset_repeat(ds, -1), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &op, 1, "image", NULL, 2), SL_OK);
    ck_assert_int_eq(sl_dataset_take(ds, N_TRAIN), SL_OK);
    set_mode(ds, SL_ERROR_SAMPLES_SKIP, -1, 1.0, NULL);
    run(ds, 2, 64, 0, &res);
    ck_assert_msg(res.status == SL_END_OF_DATA, "%s", res.msg);
    ck_assert_int_eq(res.per_epoch[0], N_TRAIN);
    ck_assert_int_eq(res.per_epoch[1], N_TRAIN);
    ck_assert_int_eq(res.bad_rows, 0);
    ck_assert_uint_ge(res.stats.samples_skipped, (uint64_t)nbad);
    sl_op_release(op);
    sl_dataset_free(ds);
}
END_TEST

/* Hashes of each row an iterator started at (epoch, rows) hands out, over
 * two epochs; *n gets their count. */
static void row_hashes(sl_dataset *ds, int64_t epoch, int64_t rows, uint64_t *out, int64_t *n)
{
    sl_iterator_options o;
    sl_iterator *it;
    sl_row row;
    int rc;
    *n = 0;
    sl_iterator_options_init(&o);
    o.num_epochs = 2;
    o.start_epoch = epoch;
    o.start_rows = rows;
    o.timeout_ms = IT_TIMEOUT_MS;
    ck_assert_msg(sl_iterator_new(&it, ds, &o) == SL_OK, "%s", sl_dataset_last_error(ds));
    while ((rc = sl_iterator_next(it, &row)) == SL_OK || rc == SL_END_OF_EPOCH) {
        uint64_t h = 1469598103934665603ULL;
        if (rc == SL_END_OF_EPOCH)
            continue;
        for (size_t c = 0; c < row.ncolumns; c++) {
            const uint8_t *p = sl_tensor_data(row.columns[c]);
            for (size_t b = 0; b < sl_tensor_nbytes(row.columns[c]); b++)
                h = (h ^ p[b]) * 1099511628211ULL;
        }
        ck_assert_int_lt(*n, 64);
        out[(*n)++] = h;
        sl_row_clear(&row);
    }
    ck_assert_msg(rc == SL_END_OF_DATA, "%s", sl_iterator_last_error(it));
    sl_iterator_free(it);
}

/* An iterator resumed mid-epoch (start_epoch, start_rows) hands out what one
 * started at the beginning did from that point on, bad samples skipped or
 * replaced alike: skipping happens after the drops and fills. */
START_TEST(test_resume_mid_epoch)
{
    const sl_error_samples mode = _i ? SL_ERROR_SAMPLES_REPLACE : SL_ERROR_SAMPLES_SKIP;
    static const int64_t starts[][2] = {{0, 7}, {1, 0}, {1, 13}, {1, 29}};
    sl_sampler_options s = sampler(1, 1, 0);
    uint64_t full[64], part[64];
    int64_t nfull, npart;
    sl_dataset *ds = flaky_mnist(&s, 2, &data_error);
    set_mode(ds, mode, -1, 1.0, NULL);
    ck_assert_int_eq(sl_dataset_shuffle(ds, 50), SL_OK);
    ck_assert_int_eq(sl_dataset_batch(ds, 10, 1, 2), SL_OK);
    row_hashes(ds, 0, 0, full, &nfull);
    ck_assert_int_eq(nfull, 60);
    for (size_t k = 0; k < sizeof starts / sizeof starts[0]; k++) {
        int64_t from = starts[k][0] * 30 + starts[k][1];
        row_hashes(ds, starts[k][0], starts[k][1], part, &npart);
        ck_assert_int_eq(npart, nfull - from);
        for (int64_t r = 0; r < npart; r++)
            ck_assert_msg(part[r] == full[from + r], "start (%lld, %lld): row %lld differs",
                          (long long)starts[k][0], (long long)starts[k][1], (long long)r);
    }
    sl_dataset_free(ds);
}
END_TEST

/* The cap: by default 1% of a pass (3 of 300) may be bad; the 4th fails the
 * iterator with its status, naming the count, the cap and that sample; a
 * count of 0 fails at the first. Each one up to it is reported. */
START_TEST(test_cap)
{
    sl_sampler_options s = sampler(0, 1, 0);
    int64_t bad[32];
    char expect[64];
    run_result res;
    reports rep;
    sl_error_samples_options o;
    sl_dataset *ds = flaky_mnist(&s, 2, &data_error);
    ck_assert_int_gt(bad_in_pass(&s, 0, bad, 32), 4);
    sl_error_samples_options_init(&o);
    ck_assert_int_eq(o.max_bad_samples, -1);
    ck_assert(o.max_bad_fraction == 0.01);
    memset(&rep, 0, sizeof rep);
    o.mode = SL_ERROR_SAMPLES_REPLACE;
    o.report = collect;
    o.report_user = &rep;
    ck_assert_int_eq(sl_dataset_set_error_samples(ds, &o), SL_OK);
    run(ds, 1, 64, 0, &res);
    ck_assert_int_eq(res.status, SL_EFORMAT);
    ck_assert_int_eq(rep.n, 4);
    ck_assert_int_eq(rep.index[3], bad[3]);
    ck_assert_ptr_nonnull(strstr(res.msg, "too many bad samples: 4 in epoch 0"));
    ck_assert_ptr_nonnull(strstr(res.msg, "more than the 3 allowed"));
    ck_assert_ptr_nonnull(strstr(res.msg, "max_bad_fraction 0.01 of 300 samples"));
    snprintf(expect, sizeof expect, "sample %lld (", (long long)bad[3]);
    ck_assert_ptr_nonnull(strstr(res.msg, expect));
    ck_assert_ptr_nonnull(strstr(res.msg, rep.sample[3]));
    ck_assert_ptr_nonnull(strstr(res.msg, "marked bad"));
    ck_assert_int_lt(res.rows, bad[3]); /* the rows after the cap never came */

    memset(&rep, 0, sizeof rep);
    o.mode = SL_ERROR_SAMPLES_SKIP;
    o.max_bad_samples = 0;
    ck_assert_int_eq(sl_dataset_set_error_samples(ds, &o), SL_OK);
    run(ds, 1, 64, 0, &res);
    ck_assert_int_eq(res.status, SL_EFORMAT);
    ck_assert_int_eq(rep.n, 1);
    ck_assert_ptr_nonnull(strstr(res.msg, "(max_bad_samples)"));

    /* a count for each pass: 8 bad per pass, 8 allowed, two epochs */
    o.max_bad_samples = bad_in_pass(&s, 0, bad, 32);
    ck_assert_int_eq(sl_dataset_set_error_samples(ds, &o), SL_OK);
    run(ds, 2, 64, 0, &res);
    ck_assert_msg(res.status == SL_END_OF_DATA, "%s", res.msg);
    ck_assert_uint_eq(res.stats.samples_skipped, 2 * (uint64_t)o.max_bad_samples);
    sl_dataset_free(ds);
}
END_TEST

/* Errors that are not a bad sample's still fail the pipeline: an op out of
 * memory, under skip and replace; and in the default mode, raise, a bad
 * sample fails it as before. */
START_TEST(test_other_errors_raise)
{
    static const int no_memory = SL_ENOMEM;
    sl_sampler_options s = sampler(1, 1, 0);
    run_result res;
    for (int m = 0; m < 2; m++) {
        sl_dataset *ds = flaky_mnist(&s, 2, &no_memory);
        set_mode(ds, m ? SL_ERROR_SAMPLES_REPLACE : SL_ERROR_SAMPLES_SKIP, -1, 1.0, NULL);
        run(ds, 1, 64, 0, &res);
        ck_assert_int_eq(res.status, SL_ENOMEM);
        ck_assert_ptr_nonnull(strstr(res.msg, "marked bad"));
        ck_assert_uint_eq(res.stats.samples_skipped + res.stats.samples_replaced, 0);
        sl_dataset_free(ds);
    }
    {
        sl_dataset *ds = flaky_mnist(&s, 2, &data_error);
        run(ds, 1, 64, 0, &res);
        ck_assert_int_eq(res.status, SL_EFORMAT);
        ck_assert_ptr_nonnull(strstr(res.msg, "flaky: this sample is marked bad"));
        sl_dataset_free(ds);
    }
}
END_TEST

/* The options: defaults, and that a copy keeps them (what is refused is in
 * check_options.c). */
START_TEST(test_options)
{
    sl_error_samples_options o;
    sl_dataset *ds, *copy;
    sl_sampler_options s = sampler(0, 1, 0);
    reports rep;
    run_result res;
    sl_error_samples_options_init(&o);
    ck_assert_int_eq(o.mode, SL_ERROR_SAMPLES_RAISE);
    ck_assert_ptr_null(o.report);
    ds = flaky_mnist(&s, 1, &data_error);
    memset(&rep, 0, sizeof rep);
    set_mode(ds, SL_ERROR_SAMPLES_REPLACE, -1, 1.0, &rep);
    ck_assert_int_eq(sl_dataset_copy(&copy, ds), SL_OK);
    sl_dataset_free(ds);
    run(copy, 1, 64, 0, &res);
    ck_assert_msg(res.status == SL_END_OF_DATA, "%s", res.msg);
    ck_assert_int_gt(rep.n, 0);
    ck_assert_uint_eq(res.stats.samples_replaced, (uint64_t)rep.n);
    sl_dataset_free(copy);
}
END_TEST

Suite *make_bad_samples_suite(void)
{
    Suite *s = suite_create("bad_samples");
    TCase *tc = tu_tcase("core", 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_shards_keep_their_length, 0, 2);
    tcase_add_test(tc, test_stand_in_places);
    tcase_add_test(tc, test_skip_chain_shapes);
    tcase_add_loop_test(tc, test_resume_mid_epoch, 0, 2);
    tcase_add_test(tc, test_cap);
    tcase_add_test(tc, test_other_errors_raise);
    tcase_add_test(tc, test_options);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(make_bad_samples_suite);
}
