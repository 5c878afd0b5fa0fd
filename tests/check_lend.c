/* check_lend.c: batches stacked straight into memory their consumer lends
 * (pipeline/batch_lender.h), and a device queue that lends its slots
 * (device_queue.h). The pipeline stacks into lent memory of the right
 * size and the pool's otherwise, and every lent column comes back exactly
 * once; a queue lends only its spare slots, takes a lent slot back when
 * its tensors go, caps in bytes what it lends, and hands a whole loan to
 * GetNext without a copy (and only then); the channel's batches are the same with and without lending,
 * and only a device that reads host memory lends. */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "core/error.h"
#include "core/tensor_impl.h"
#include "devices/device_impl.h"
#include "devices/device_queue.h"
#include "devices/channel.h"
#include "pipeline/batch_lender.h"
#include "sluice/sluice.h"
#include "testutil.h"

Suite *make_lend_suite(void);

#define N_TRAIN 40
#define BATCH 4
#define IMAGE_BYTES (BATCH * 28 * 28)
#define LABEL_BYTES (BATCH * 4)

/* A generated MNIST folder of N_TRAIN training samples. */
typedef struct tmp_mnist {
    char *dir;
} tmp_mnist;

static tmp_mnist make_mnist(void)
{
    return (tmp_mnist){tu_mnist_dir(N_TRAIN, 0)};
}

static void drop_mnist(tmp_mnist *t)
{
    tu_mnist_dir_drop(t->dir);
}

/* MNIST train in file order, batched by BATCH: batch k holds samples
 * BATCH*k ...; with map_workers > 0 a pass-through-shaped map (a type cast
 * of the label to uint32) runs first, so the batch is stacked by the map's
 * workers instead of the sequential stage. */
static sl_dataset *numbered_dataset(const char *dir, int map_workers)
{
    sl_mnist_options mo;
    sl_dataset *ds;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_mnist_options_init(&mo);
    mo.dataset_dir = dir;
    mo.usage = SL_MNIST_TRAIN;
    mo.sampler.shuffle = 0;
    ck_assert_msg(sl_dataset_mnist(ds, &mo) == SL_OK, "%s", sl_dataset_last_error(ds));
    if (map_workers > 0) {
        sl_op *cast;
        ck_assert_int_eq(sl_op_type_cast_new(&cast, SL_UINT32, NULL, 0), SL_OK);
        ck_assert_msg(sl_dataset_map(ds, &cast, 1, "label", NULL, map_workers) == SL_OK, "%s",
                      sl_dataset_last_error(ds));
        sl_op_release(cast);
    }
    ck_assert_int_eq(sl_dataset_batch(ds, BATCH, 1, 1), SL_OK);
    return ds;
}

/* Checks that batch k of numbered_dataset is what image and label hold. */
static void check_batch(int64_t k, const uint8_t *image, const uint32_t *label)
{
    for (int r = 0; r < BATCH; r++) {
        uint32_t i = (uint32_t)(k * BATCH + r);
        ck_assert_uint_eq(label[r], tu_label(i));
        ck_assert_uint_eq(image[r * 784 + 5 * 28 + 7], tu_pixel(i, 5, 7));
    }
}

/* --- the pipeline's side: a lender of test memory -------------------------- */

#define ARENA_BATCHES (N_TRAIN / BATCH) /* one per batch: the pipeline runs ahead */

/* Lends column `column` of a row, from ARENA_BATCHES buffers of `bytes`;
 * counts what it lent and what came back. Map workers lend and give back
 * at once: lock guards the rest. */
typedef struct test_lender {
    sl__batch_lender base;
    pthread_mutex_t lock;
    size_t column, bytes;
    int refuse;                       /* lend nothing */
    struct arena_loan {
        sl__lender lender;
        struct test_lender *owner;
        int out;                      /* lent and not yet given back */
        _Alignas(64) uint8_t mem[IMAGE_BYTES + 64];
    } loans[ARENA_BATCHES];
    int lent, given_back;
} test_lender;

static void arena_give_back(sl__lender *l)
{
    struct arena_loan *loan = (struct arena_loan *)l;
    test_lender *t = loan->owner;
    int was_out;
    pthread_mutex_lock(&t->lock);
    was_out = loan->out;
    loan->out = 0;
    t->given_back++;
    pthread_mutex_unlock(&t->lock);
    ck_assert_int_eq(was_out, 1);
}

static sl__lender *arena_lend(sl__batch_lender *b, size_t ncols, void **data, size_t *bytes)
{
    test_lender *t = (test_lender *)b;
    sl__lender *loan = NULL;
    ck_assert_uint_gt(ncols, t->column);
    pthread_mutex_lock(&t->lock);
    for (int i = 0; i < ARENA_BATCHES && !t->refuse && !loan; i++) {
        if (t->loans[i].out)
            continue;
        t->loans[i].out = 1;
        t->lent++;
        data[t->column] = t->loans[i].mem;
        bytes[t->column] = t->bytes;
        loan = &t->loans[i].lender;
    }
    pthread_mutex_unlock(&t->lock);
    return loan;
}

/* A lender of the image column of ds's rows, in buffers of `bytes`. */
static test_lender *test_lender_new(sl_dataset *ds, size_t bytes)
{
    /* the buffers are 64-byte aligned, as lent memory is */
    test_lender *t = aligned_alloc(64, (sizeof *t + 63) & ~(size_t)63);
    int image = sl_dataset_column_index(ds, "image");
    ck_assert_ptr_nonnull(t);
    memset(t, 0, sizeof *t);
    ck_assert_int_ge(image, 0);
    ck_assert_int_eq(pthread_mutex_init(&t->lock, NULL), 0);
    t->base.lend = arena_lend;
    t->column = (size_t)image;
    t->bytes = bytes;
    for (int i = 0; i < ARENA_BATCHES; i++) {
        t->loans[i].lender.give_back = arena_give_back;
        t->loans[i].owner = t;
    }
    return t;
}

static void test_lender_free(test_lender *t)
{
    pthread_mutex_destroy(&t->lock);
    free(t);
}

/* Reads every batch of an iterator over ds with lender l; returns how many
 * batches had their image column in the lender's memory. */
static int read_all(sl_dataset *ds, test_lender *l)
{
    sl_iterator *it = NULL;
    sl_row row;
    int64_t k = 0;
    int in_arena = 0, rc;
    ck_assert_msg(sl__iterator_new_lending(&it, ds, NULL, &l->base, NULL) == SL_OK, "%s",
                  sl_dataset_last_error(ds));
    while ((rc = sl_iterator_next(it, &row)) == SL_OK) {
        int image = sl_dataset_column_index(ds, "image");
        int label = sl_dataset_column_index(ds, "label");
        const uint8_t *px = sl_tensor_data(row.columns[image]);
        for (int i = 0; i < ARENA_BATCHES; i++)
            if (px == l->loans[i].mem)
                in_arena++;
        check_batch(k++, px, sl_tensor_data(row.columns[label]));
        sl_row_clear(&row);
    }
    ck_assert_int_eq(rc, SL_END_OF_EPOCH);
    ck_assert_int_eq(k, N_TRAIN / BATCH);
    sl_iterator_free(it);
    return in_arena;
}

/* Both collations (the sequential stage's and a map's workers') stack the
 * image into the lent memory, the label (not lent) into the pool's; every
 * loan comes back once, when its batch goes. */
START_TEST(test_collate_into_lent_memory)
{
    tmp_mnist t = make_mnist();
    for (int workers = 0; workers <= 2; workers++) {
        sl_dataset *ds = numbered_dataset(t.dir, workers);
        test_lender *l = test_lender_new(ds, IMAGE_BYTES);
        ck_assert_int_eq(read_all(ds, l), N_TRAIN / BATCH);
        ck_assert_int_eq(l->lent, N_TRAIN / BATCH);
        ck_assert_int_eq(l->given_back, l->lent);
        test_lender_free(l);
        sl_dataset_free(ds);
    }
    drop_mnist(&t);
}
END_TEST

/* Memory of the wrong size is not stacked into, and goes back at once; a
 * lender with nothing free leaves the pool to do it. */
START_TEST(test_collate_falls_back_to_the_pool)
{
    tmp_mnist t = make_mnist();
    sl_dataset *ds = numbered_dataset(t.dir, 1);
    test_lender *l = test_lender_new(ds, IMAGE_BYTES - 784); /* one image short */

    ck_assert_int_eq(read_all(ds, l), 0);
    ck_assert_int_eq(l->lent, N_TRAIN / BATCH);
    ck_assert_int_eq(l->given_back, l->lent);
    test_lender_free(l);

    l = test_lender_new(ds, IMAGE_BYTES);
    l->refuse = 1;
    ck_assert_int_eq(read_all(ds, l), 0);
    ck_assert_int_eq(l->lent, 0);
    test_lender_free(l);
    sl_dataset_free(ds);
    drop_mnist(&t);
}
END_TEST

/* Batches still in the pipeline when the iterator is freed give their
 * loans back. */
START_TEST(test_freeing_the_iterator_gives_loans_back)
{
    tmp_mnist t = make_mnist();
    sl_dataset *ds = numbered_dataset(t.dir, 1);
    test_lender *l = test_lender_new(ds, IMAGE_BYTES);
    sl_iterator *it = NULL;
    sl_row row;
    ck_assert_int_eq(sl__iterator_new_lending(&it, ds, NULL, &l->base, NULL), SL_OK);
    ck_assert_int_eq(sl_iterator_next(it, &row), SL_OK);
    sl_row_clear(&row);
    sl_iterator_free(it);
    ck_assert_int_gt(l->lent, 0);
    ck_assert_int_eq(l->given_back, l->lent);
    test_lender_free(l);
    sl_dataset_free(ds);
    drop_mnist(&t);
}
END_TEST

/* --- the device queue's side ------------------------------------------------ */

static const sl_tensor_spec batch_specs[2] = {
    {SL_UINT8, 4, {BATCH, 28, 28, 1}},
    {SL_UINT32, 1, {BATCH}},
};

static sl_device *open_device(const char *name)
{
    char err[256] = "";
    sl_device *d = NULL;
    ck_assert_msg(sl_device_new(&d, name, NULL, err, sizeof err) == SL_OK, "%s", err);
    return d;
}

static sl__device_queue *open_queue(sl_device *d, size_t capacity, size_t lend_slots)
{
    sl__dq_options o;
    sl__device_queue *q = NULL;
    sl__error err;
    memset(&o, 0, sizeof o);
    o.name = "cpu:0/lend";
    o.capacity = capacity;
    o.lend_slots = lend_slots;
    sl__err_clear(&err);
    ck_assert_msg(sl__dq_new(&q, d, batch_specs, 2, &o, &err) == SL_OK, "%s", err.msg);
    return q;
}

/* What the pipeline does with a lent slot: a tensor over each column, the
 * label column holding b. */
static void stack_into(sl__dq_slot *slot, sl_tensor **cols, uint32_t b)
{
    for (size_t c = 0; c < 2; c++)
        ck_assert_int_eq(sl__tensor_lent(&cols[c], NULL, batch_specs[c].dtype, batch_specs[c].ndim,
                                         batch_specs[c].shape, slot->columns[c].data,
                                         &slot->lender),
                         SL_OK);
    for (int r = 0; r < BATCH; r++)
        ((uint32_t *)cols[1]->data)[r] = b;
}

/* Lent slots are on top of the capacity: lending them all leaves the
 * queue's own; the last column back frees a slot. */
START_TEST(test_queue_lends_spare_slots)
{
    sl_device *d = open_device("cpu:0");
    sl__device_queue *q = open_queue(d, 2, 2);
    sl__dq_slot *a = sl__dq_lend(q), *b = sl__dq_lend(q), *s[2], *extra;
    sl_tensor *cols[2];
    sl__error err;

    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_null(sl__dq_lend(q));
    ck_assert_uint_eq(sl__dq_max_slots(q), 2);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(sl__dq_acquire(q, &s[i], 0, &err), SL_OK);
    ck_assert_int_eq(sl__dq_acquire(q, &extra, 0, &err), SL_ETIMEDOUT);
    ck_assert_msg(strstr(err.msg, "2 lent to the pipeline") != NULL, "%s", err.msg);

    stack_into(a, cols, 7);
    sl_tensor_release(cols[0]);
    ck_assert_ptr_null(sl__dq_lend(q)); /* one column still out */
    sl_tensor_release(cols[1]);
    ck_assert_ptr_eq(sl__dq_lend(q), a);
    a->lender.give_back(&a->lender); /* unused columns go back too */
    a->lender.give_back(&a->lender);
    b->lender.give_back(&b->lender);
    b->lender.give_back(&b->lender);
    for (int i = 0; i < 2; i++)
        sl__dq_unacquire(q, s[i]);
    sl__dq_free(q);
    sl_device_free(d);
}
END_TEST

/* Slots to lend are capped in bytes: of 16 MiB batches, SL__DQ_LEND_BYTES
 * (64 MiB) makes 4, however many were asked for. */
START_TEST(test_queue_caps_the_bytes_it_lends)
{
    const sl_tensor_spec big = {SL_UINT8, 1, {16 << 20}};
    sl_device *d = open_device("cpu:0");
    sl__device_queue *q = NULL;
    sl__dq_slot *lent[4];
    sl_device_stats st;
    sl__dq_options o;
    sl__error err;
    memset(&o, 0, sizeof o);
    o.name = "cpu:0/big";
    o.capacity = 1;
    o.lend_slots = 100;
    ck_assert_msg(sl__dq_new(&q, d, &big, 1, &o, &err) == SL_OK, "%s", err.msg);
    sl_device_get_stats(d, &st);
    ck_assert_uint_eq(st.bytes_allocated, (uint64_t)5 << 24);
    for (int i = 0; i < 4; i++)
        ck_assert_ptr_nonnull(lent[i] = sl__dq_lend(q));
    ck_assert_ptr_null(sl__dq_lend(q));
    for (int i = 0; i < 4; i++)
        lent[i]->lender.give_back(&lent[i]->lender);
    sl__dq_free(q);
    sl_device_free(d);
}
END_TEST

/* A whole loan goes to GetNext as it is; anything else is left for a copy. */
START_TEST(test_queue_claims_only_a_whole_loan)
{
    sl_device *d = open_device("cpu:0");
    sl__device_queue *q = open_queue(d, 1, 2);
    sl__dq_slot *lent = sl__dq_lend(q), *slot;
    sl_tensor *cols[2], *pool_cols[2], *held;
    sl__error err;

    /* Not lent: nothing is claimed or touched. */
    for (size_t c = 0; c < 2; c++)
        ck_assert_int_eq(sl_tensor_new(&pool_cols[c], batch_specs[c].dtype, batch_specs[c].ndim,
                                       batch_specs[c].shape),
                         SL_OK);
    ck_assert_int_eq(sl__dq_claim(q, pool_cols, &slot, 0, &err), SL_OK);
    ck_assert_ptr_null(slot);
    ck_assert_ptr_nonnull(pool_cols[0]);

    /* Held elsewhere too: not the caller's to hand over. */
    stack_into(lent, cols, 3);
    held = sl_tensor_retain(cols[0]);
    ck_assert_int_eq(sl__dq_claim(q, cols, &slot, 0, &err), SL_OK);
    ck_assert_ptr_null(slot);
    sl_tensor_release(held);

    /* Mixed with a pool tensor: not whole. */
    {
        sl_tensor *mixed[2] = {cols[0], pool_cols[1]};
        ck_assert_int_eq(sl__dq_claim(q, mixed, &slot, 0, &err), SL_OK);
        ck_assert_ptr_null(slot);
    }

    /* Whole: claimed, the tensors released, the batch delivered as stacked. */
    ck_assert_int_eq(sl__dq_claim(q, cols, &slot, 0, &err), SL_OK);
    ck_assert_ptr_eq(slot, lent);
    ck_assert_ptr_null(cols[0]);
    ck_assert_ptr_null(cols[1]);
    sl__dq_commit(q, slot);

    /* The queue (capacity 1) is full: a second claim waits for room. */
    stack_into(sl__dq_lend(q), cols, 4);
    ck_assert_int_eq(sl__dq_claim(q, cols, &slot, 0, &err), SL_ETIMEDOUT);
    ck_assert_msg(strstr(err.msg, "claiming a lent slot") != NULL, "%s", err.msg);
    ck_assert_ptr_nonnull(cols[0]);
    ck_assert_int_eq(sl__dq_get_next(q, &slot, 0, &err), SL_OK);
    ck_assert_uint_eq(((uint32_t *)slot->columns[1].data)[0], 3);
    sl__dq_release(q, slot);
    ck_assert_int_eq(sl__dq_claim(q, cols, &slot, 0, &err), SL_OK);
    ck_assert_ptr_nonnull(slot);
    sl__dq_commit(q, slot);
    ck_assert_int_eq(sl__dq_get_next(q, &slot, 0, &err), SL_OK);
    ck_assert_uint_eq(((uint32_t *)slot->columns[1].data)[BATCH - 1], 4);
    sl__dq_release(q, slot);

    for (size_t c = 0; c < 2; c++)
        sl_tensor_release(pool_cols[c]);
    sl__dq_free(q);
    sl_device_free(d);
}
END_TEST

/* --- the channel ------------------------------------------------------------- */

static sl__channel *open_channel(sl_dataset *ds, sl_device *d, int lend)
{
    sl__channel_options fo;
    sl__channel *f = NULL;
    sl__error err;
    memset(&fo, 0, sizeof fo);
    fo.queue_name = "train";
    fo.capacity = 2;
    fo.num_epochs = 1;
    fo.stuck_ms = 1000;
    fo.lend = lend;
    fo.ncolumns = 2;
    fo.columns[0] = sl_dataset_column_index(ds, "image");
    fo.columns[1] = sl_dataset_column_index(ds, "label");
    fo.specs[0] = batch_specs[0];
    fo.specs[1] = batch_specs[1];
    fo.names[0] = "image";
    fo.names[1] = "label";
    sl__err_clear(&err);
    ck_assert_msg(sl__channel_new(&f, ds, &d, 1, &fo, &err) == SL_OK, "%s", err.msg);
    return f;
}

/* Drains the channel's epoch, checking every batch; returns the batches
 * that were not copied. */
static uint64_t drain(sl__channel *f)
{
    sl__channel_stats st;
    sl__dq_slot *slot;
    sl__error err;
    int64_t k = 0;
    int rc;
    while ((rc = sl__channel_get_next(f, 0, &slot, 20000, NULL, &err)) == SL_OK) {
        sl_device *d = sl__dq_device(sl__channel_queue(f, 0));
        uint8_t image[IMAGE_BYTES];
        uint32_t label[BATCH];
        ck_assert_int_eq(sl__device_copy_out(d, image, slot->columns[0].data, sizeof image),
                         SL_OK);
        ck_assert_int_eq(sl__device_copy_out(d, label, slot->columns[1].data, sizeof label),
                         SL_OK);
        check_batch(k++, image, label);
        sl__dq_release(sl__channel_queue(f, 0), slot);
    }
    ck_assert_msg(rc == SL_END_OF_EPOCH, "%s", err.msg);
    ck_assert_int_eq(sl__channel_get_next(f, 0, &slot, 20000, NULL, &err), SL_END_OF_DATA);
    ck_assert_int_eq(k, N_TRAIN / BATCH);
    sl__channel_get_stats(f, &st);
    ck_assert_uint_eq(st.batches, N_TRAIN / BATCH);
    return st.claimed;
}

/* On cpu every batch arrives in a lent slot (there are enough for the
 * channel); without lending, or on sim (whose memory the host does not
 * reach), every batch is copied; the batches are the same each way. */
START_TEST(test_channel_sends_lent_slots_on_cpu_only)
{
    tmp_mnist t = make_mnist();
    const struct {
        const char *device;
        int map_workers, lend;
        uint64_t claimed;
    } cases[] = {
        {"cpu:0", 0, 1, N_TRAIN / BATCH}, {"cpu:0", 2, 1, N_TRAIN / BATCH},
        {"cpu:0", 1, 0, 0},               {"sim:0", 1, 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl_dataset *ds = numbered_dataset(t.dir, cases[i].map_workers);
        sl_device *d = open_device(cases[i].device);
        sl__channel *f = open_channel(ds, d, cases[i].lend);
        ck_assert_uint_eq(drain(f), cases[i].claimed);
        sl__channel_free(f);
        sl_device_free(d);
        sl_dataset_free(ds);
    }
    drop_mnist(&t);
}
END_TEST

/* Freed with lent batches in the channel and the queue: every slot comes
 * back before the queue goes (ASan and the device's byte count see it). */
START_TEST(test_channel_freed_with_batches_on_loan)
{
    tmp_mnist t = make_mnist();
    sl_dataset *ds = numbered_dataset(t.dir, 1);
    sl_device *d = open_device("cpu:0");
    sl__channel *f = open_channel(ds, d, 1);
    sl_device_stats st;
    sl__dq_slot *slot;
    sl__error err;
    ck_assert_int_eq(sl__channel_get_next(f, 0, &slot, 20000, NULL, &err), SL_OK);
    sl__dq_release(sl__channel_queue(f, 0), slot);
    sl__channel_free(f);
    sl_device_get_stats(d, &st);
    ck_assert_uint_eq(st.bytes_allocated, 0);
    sl_device_free(d);
    sl_dataset_free(ds);
    drop_mnist(&t);
}
END_TEST

Suite *make_lend_suite(void)
{
    Suite *s = suite_create("lend");
    TCase *tc = tu_tcase("pipeline", 60);
    tcase_add_test(tc, test_collate_into_lent_memory);
    tcase_add_test(tc, test_collate_falls_back_to_the_pool);
    tcase_add_test(tc, test_freeing_the_iterator_gives_loans_back);
    suite_add_tcase(s, tc);
    tc = tu_tcase("queue", 30);
    tcase_add_test(tc, test_queue_lends_spare_slots);
    tcase_add_test(tc, test_queue_claims_only_a_whole_loan);
    tcase_add_test(tc, test_queue_caps_the_bytes_it_lends);
    suite_add_tcase(s, tc);
    tc = tu_tcase("channel", 60);
    tcase_add_test(tc, test_channel_sends_lent_slots_on_cpu_only);
    tcase_add_test(tc, test_channel_freed_with_batches_on_loan);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(make_lend_suite);
}
