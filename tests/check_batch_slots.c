/* check_batch_slots.c: a stage that maps and batches makes each row's
 * output straight in its slot of the batch (sl__batch_slots, pipeline/
 * nodes.h): the one-pass flip + Normalize + HWC2CHW takes the slot its
 * context offers when the sizes agree (and only then, and once), the map
 * offers the slots of rows after the first, and stacking then copies only
 * the first row; the batch's bytes, and a refused batch's message, are
 * those of mapping into new tensors then stacking. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "core/error.h"
#include "core/rng.h"
#include "core/tensor_impl.h"
#include "ops/op_impl.h"
#include "pipeline/nodes.h"
#include "sluice/op.h"
#include "tests/testutil.h"

Suite *make_batch_slots_suite(void);

enum { NROWS = 5, H = 6, W = 7, C = 3 };

/* A uint8 (h, W, C) image whose bytes depend on k. */
static sl_tensor *image(int64_t h, unsigned k)
{
    int64_t shape[3] = {h, W, C};
    sl_tensor *t = NULL;
    ck_assert_int_eq(sl_tensor_new(&t, SL_UINT8, 3, shape), SL_OK);
    for (size_t i = 0; i < t->nbytes; i++)
        ((uint8_t *)t->data)[i] = (uint8_t)(i * 37 + k * 101 + i / 5);
    return t;
}

/* RandomHorizontalFlip(0.5), Normalize, HWC2CHW fused into one op. */
static sl_op *flip_normalize_chw(void)
{
    static const double mean[3] = {123.675, 116.28, 103.53}, std[3] = {58.395, 57.12, 57.375};
    sl_op *ops[3], *fused;
    size_t used;
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&ops[0], 0.5, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_normalize_new(&ops[1], mean, std, 3, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_hwc2chw_new(&ops[2], NULL, 0), SL_OK);
    ck_assert_int_eq(sl__op_fuse(ops, 3, &fused, &used), SL_OK);
    ck_assert(fused && used == 3);
    for (int k = 0; k < 3; k++)
        sl_op_release(ops[k]);
    return fused;
}

/* op on in (a reference of its own) with a plain context seeded as the map
 * seeds row index's op. */
static sl_tensor *run_alone(const sl_op *op, sl_tensor *in, uint64_t index)
{
    sl__error err;
    sl__op_ctx ctx;
    sl_tensor *out = NULL;
    memset(&ctx, 0, sizeof ctx);
    ctx.err = &err;
    sl__rng_seed(&ctx.rng, 9, 0, index, 0);
    ck_assert_int_eq(sl__op_run(op, sl_tensor_retain(in), &out, &ctx), SL_OK);
    return out;
}

START_TEST(test_op_takes_a_slot_of_its_size_once)
{
    sl_op *op = flip_normalize_chw();
    int64_t shape[2] = {4, C * H * W};
    size_t slot = (size_t)C * H * W * sizeof(float);
    sl_tensor *base, *in = image(H, 1), *small = image(H - 1, 2);
    sl_tensor *want = run_alone(op, in, 0), *got = NULL, *other = NULL;
    sl__error err;
    sl__op_ctx ctx;
    ck_assert_int_eq(sl_tensor_new(&base, SL_FLOAT32, 2, shape), SL_OK);
    memset(&ctx, 0, sizeof ctx);
    ctx.err = &err;
    ctx.slot_base = base;
    ctx.slot_offset = 2 * slot;
    ctx.slot_bytes = slot;
    /* a smaller image does not fit the slot: a block of its own, and the
     * slot stays offered */
    sl__rng_seed(&ctx.rng, 9, 0, 0, 0);
    ck_assert_int_eq(sl__op_run(op, sl_tensor_retain(small), &other, &ctx), SL_OK);
    ck_assert_ptr_null(other->base);
    ck_assert_ptr_eq(ctx.slot_base, base);
    /* the right size is made in the slot, which is then used up */
    sl__rng_seed(&ctx.rng, 9, 0, 0, 0);
    ck_assert_int_eq(sl__op_run(op, sl_tensor_retain(in), &got, &ctx), SL_OK);
    ck_assert_ptr_eq(got->base, base);
    ck_assert_ptr_eq(got->data, (char *)base->data + 2 * slot);
    ck_assert_ptr_null(ctx.slot_base);
    ck_assert_int_eq(got->ndim, 3);
    ck_assert_int_eq(memcmp(got->data, want->data, slot), 0);
    ck_assert(!sl__tensor_writable(got)); /* a later op must not write in place */
    sl_tensor_release(got);
    sl_tensor_release(other);
    sl_tensor_release(want);
    sl_tensor_release(base);
    sl_tensor_release(small);
    sl_tensor_release(in);
    sl_op_release(op);
}
END_TEST

/* A one-step map of column 0 by op, and the batch after it. */
typedef struct map_batch {
    sl__node node;
    sl__map_step step;
    sl_op *ops[1];
    uint64_t salt[1];
    sl__schema schema;
    sl__map_work map;
    sl__collate_work collate;
} map_batch;

static void map_batch_init(map_batch *m, sl_op *op)
{
    memset(m, 0, sizeof *m);
    m->node.column = 0;
    snprintf(m->node.colname, sizeof m->node.colname, "image");
    m->ops[0] = op;
    m->step.node = &m->node;
    m->step.ops = m->ops;
    m->step.rng_salt = m->salt;
    m->step.nops = 1;
    m->schema.ncols = 1;
    snprintf(m->schema.names[0], sizeof m->schema.names[0], "image");
    m->map.steps = &m->step;
    m->map.nsteps = 1;
    m->map.seed = 9;
    m->map.schema = &m->schema;
    m->collate.schema = &m->schema;
}

/* NROWS rows (index r, epoch 0); row bad_row (if in range) is shorter. */
static sl__chunk *rows(int bad_row)
{
    sl__chunk *chunk = sl__chunk_new(SL__CHUNK_ROWS, NROWS);
    ck_assert_ptr_nonnull(chunk);
    for (int r = 0; r < NROWS; r++) {
        sl__row row;
        memset(&row, 0, sizeof row);
        row.index = r;
        row.col[0] = image(r == bad_row ? H - 1 : H, (unsigned)r);
        sl__chunk_push_row(chunk, &row);
    }
    return chunk;
}

START_TEST(test_map_makes_rows_in_their_slots)
{
    sl_op *op = flip_normalize_chw();
    size_t slot = (size_t)C * H * W * sizeof(float);
    sl__chunk *chunk = rows(-1);
    atomic_int stop = 0;
    sl__batch_slots slots;
    sl__error err;
    sl__row out;
    map_batch m;
    void *batch_data;
    map_batch_init(&m, op);
    sl__err_clear(&err);
    sl__batch_slots_init(&slots, &m.collate);
    ck_assert_int_eq(sl__map_apply(&m.map, chunk, NULL, &stop, &slots, &err), SL_OK);
    ck_assert_ptr_nonnull(slots.col[0]);
    ck_assert_int_eq(slots.col[0]->nbytes, NROWS * slot);
    batch_data = slots.col[0]->data;
    ck_assert_ptr_null(chunk->rows[0].col[0]->base); /* the first row shaped the batch */
    for (int r = 1; r < NROWS; r++) {
        ck_assert_ptr_eq(chunk->rows[r].col[0]->base, slots.col[0]);
        ck_assert_ptr_eq(chunk->rows[r].col[0]->data, (char *)batch_data + (size_t)r * slot);
    }
    memset(&out, 0, sizeof out);
    ck_assert_int_eq(sl__collate(&m.collate, chunk, &slots, &out, NULL, &err), SL_OK);
    ck_assert_ptr_eq(out.col[0]->data, batch_data);
    ck_assert_ptr_null(slots.col[0]);
    ck_assert_int_eq(out.col[0]->shape[0], NROWS);
    ck_assert_int_eq(out.col[0]->shape[1], C);
    for (int r = 0; r < NROWS; r++) {
        sl_tensor *in = image(H, (unsigned)r), *want = run_alone(op, in, (uint64_t)r);
        ck_assert_msg(memcmp((char *)batch_data + (size_t)r * slot, want->data, slot) == 0,
                      "row %d", r);
        sl_tensor_release(want);
        sl_tensor_release(in);
    }
    sl__row_clear(&out);
    sl__chunk_free(chunk);
    sl_op_release(op);
}
END_TEST

/* Rows that disagree: the same refusal with slots as without. */
START_TEST(test_disagreeing_rows_refused_alike)
{
    sl_op *op = flip_normalize_chw();
    atomic_int stop = 0;
    char want[sizeof ((sl__error *)0)->msg];
    map_batch m;
    map_batch_init(&m, op);
    for (int with_slots = 0; with_slots < 2; with_slots++) {
        sl__chunk *chunk = rows(3);
        sl__batch_slots slots;
        sl__error err;
        sl__row out;
        sl__err_clear(&err);
        sl__batch_slots_init(&slots, with_slots ? &m.collate : NULL);
        ck_assert_int_eq(sl__map_apply(&m.map, chunk, NULL, &stop, &slots, &err), SL_OK);
        ck_assert(with_slots ? slots.col[0] != NULL : slots.col[0] == NULL);
        memset(&out, 0, sizeof out);
        ck_assert_int_eq(sl__collate(&m.collate, chunk, &slots, &out, NULL, &err), SL_ESHAPE);
        ck_assert_ptr_null(out.col[0]);
        ck_assert_ptr_null(slots.col[0]);
        if (with_slots)
            ck_assert_str_eq(err.msg, want);
        else
            snprintf(want, sizeof want, "%s", err.msg);
        sl__chunk_free(chunk);
    }
    ck_assert_ptr_nonnull(strstr(want, "row 3 has column 'image'"));
    sl_op_release(op);
}
END_TEST

Suite *make_batch_slots_suite(void)
{
    Suite *s = suite_create("batch_slots");
    TCase *core = tu_tcase("core", 30);
    tcase_add_test(core, test_op_takes_a_slot_of_its_size_once);
    tcase_add_test(core, test_map_makes_rows_in_their_slots);
    tcase_add_test(core, test_disagreeing_rows_refused_alike);
    suite_add_tcase(s, core);
    return s;
}

int main(void)
{
    return tu_run_suite_unless_tsan(make_batch_slots_suite,
                                    "one thread maps and stacks here: nothing for ThreadSanitizer (the "
                                    "pipeline suites run slots on worker threads)");
}
