/* check_vflip.c: RandomVerticalFlip. The op turns images of any dtype and
 * pixel size upside down, in place or into a copy; it decides apart from
 * the horizontal flip given the same seed; and after a decode fused with a
 * resize (which it does not join) its rows are the unfused pipeline's,
 * the same rows drawn. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "ops/op_impl.h"
#include "sluice/sluice.h"
#include "tests/testutil.h"
#include "tests/run_suite.h"
#include "tests/time_limit.h"

static sl_tensor *image(sl_dtype dt, int ndim, int64_t h, int64_t w, int64_t c)
{
    int64_t shape[3] = {h, w, c};
    sl_tensor *t;
    ck_assert_int_eq(sl_tensor_new(&t, dt, ndim, shape), SL_OK);
    for (size_t b = 0; b < sl_tensor_nbytes(t); b++)
        ((unsigned char *)sl_tensor_data(t))[b] = (unsigned char)(b * 13 + 5);
    return t;
}

/* out == in with its rows (of row bytes) in reverse order. */
static int upside_down(const sl_tensor *out, const sl_tensor *in, int64_t h, size_t row)
{
    const unsigned char *o = sl_tensor_data(out), *i = sl_tensor_data(in);
    if (sl_tensor_nbytes(out) != sl_tensor_nbytes(in))
        return 0;
    for (int64_t y = 0; y < h; y++)
        if (memcmp(o + (size_t)y * row, i + (size_t)(h - 1 - y) * row, row) != 0)
            return 0;
    return 1;
}

/* in (consumed) through op with rng seeded by seed, as the map seeds it. */
static int run(const sl_op *op, sl_tensor *in, sl_tensor **out, uint64_t seed)
{
    sl__error err;
    sl__op_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.err = &err;
    sl__err_clear(&err);
    sl__rng_seed(&ctx.rng, seed, 0, 0, 0);
    return sl__op_run(op, in, out, &ctx);
}

START_TEST(test_vflip_always_never)
{
    static const struct {
        sl_dtype dt;
        int ndim;
        int64_t h, w, c;
    } cases[] = {
        {SL_UINT8, 2, 5, 3, 1},   {SL_UINT8, 3, 4, 6, 3},  {SL_UINT8, 3, 7, 5, 3},
        {SL_FLOAT32, 3, 3, 4, 3}, {SL_INT64, 2, 6, 2, 1},  {SL_FLOAT64, 3, 9, 5, 20},
        {SL_UINT8, 3, 1, 4, 3},
    };
    sl_op *always, *never;
    ck_assert_int_eq(sl_op_random_vertical_flip_new(&always, 1.0, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_random_vertical_flip_new(&never, 0.0, NULL, 0), SL_OK);
    ck_assert_str_eq(sl_op_name(always), "random_vertical_flip");
    ck_assert_int_eq(always->random, 1);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl_tensor *in = image(cases[i].dt, cases[i].ndim, cases[i].h, cases[i].w, cases[i].c);
        size_t row = sl_tensor_nbytes(in) / (size_t)cases[i].h;
        sl_tensor *copy, *out;
        char msg[128];
        for (uint64_t s = 0; s < 5; s++) {
            /* p = 1 on a shared input: an upside-down copy, input untouched */
            ck_assert_int_eq(sl_op_apply(always, in, &out, s, msg, sizeof msg), SL_OK);
            ck_assert(upside_down(out, in, cases[i].h, row));
            ck_assert_int_eq(sl_tensor_ndim(out), cases[i].ndim);
            ck_assert_int_eq(sl_tensor_dtype(out), cases[i].dt);
            ck_assert(cases[i].h == 1 || out != in);
            sl_tensor_release(out);
            ck_assert_int_eq(sl_op_apply(never, in, &out, s, msg, sizeof msg), SL_OK);
            ck_assert_ptr_eq(out, in);
            sl_tensor_release(out);
        }
        /* p = 1 on the sole reference: turned in place (odd and even h) */
        ck_assert_int_eq(sl_tensor_new(&copy, cases[i].dt, cases[i].ndim, sl_tensor_shape(in)),
                         SL_OK);
        memcpy(sl_tensor_data(copy), sl_tensor_data(in), sl_tensor_nbytes(in));
        ck_assert_int_eq(run(always, copy, &out, 3), SL_OK);
        ck_assert_ptr_eq(out, copy);
        ck_assert(upside_down(out, in, cases[i].h, row));
        sl_tensor_release(out);
        sl_tensor_release(in);
    }
    sl_op_release(always);
    sl_op_release(never);
}
END_TEST

/* Given one seed, the horizontal flip takes the stream's first draw and the
 * vertical one its second: both follow p, and they are not the same coin. */
START_TEST(test_vflip_independent_of_hflip)
{
    sl_op *h, *v;
    sl_tensor *in = image(SL_UINT8, 3, 4, 4, 1), *out;
    int vflips = 0, both = 0, agree = 0;
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&h, 0.5, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_random_vertical_flip_new(&v, 0.5, NULL, 0), SL_OK);
    for (uint64_t s = 0; s < 400; s++) {
        sl_rng rng;
        int want_h, want_v, got_h, got_v;
        sl__rng_seed(&rng, s, 0, 0, 0);
        want_h = sl__rng_uniform(&rng) < 0.5;
        want_v = sl__rng_uniform(&rng) < 0.5;
        ck_assert_int_eq(sl_op_apply(h, in, &out, s, NULL, 0), SL_OK);
        got_h = out != in;
        sl_tensor_release(out);
        ck_assert_int_eq(sl_op_apply(v, in, &out, s, NULL, 0), SL_OK);
        got_v = out != in;
        if (got_v)
            ck_assert(upside_down(out, in, 4, 4));
        sl_tensor_release(out);
        ck_assert_int_eq(got_h, want_h);
        ck_assert_int_eq(got_v, want_v);
        vflips += got_v;
        both += got_h && got_v;
        agree += got_h == got_v;
    }
    /* binomial(400, 1/2): mean 200, sd 10; (400, 1/4): mean 100, sd 8.7 */
    ck_assert_int_gt(vflips, 150);
    ck_assert_int_lt(vflips, 250);
    ck_assert_int_gt(both, 60);
    ck_assert_int_lt(both, 140);
    ck_assert_int_lt(agree, 250);
    sl_tensor_release(in);
    sl_op_release(h);
    sl_op_release(v);
}
END_TEST

START_TEST(test_vflip_refusals)
{
    sl_op *op = (sl_op *)0x1;
    char msg[256];
    sl_tensor_spec in, out;
    ck_assert_int_eq(sl_op_random_vertical_flip_new(&op, 1.5, msg, sizeof msg), SL_EINVAL);
    ck_assert_ptr_null(op);
    ck_assert_msg(strstr(msg, "random_vertical_flip: the probability of a flip must be in "
                             "[0, 1], got 1.5"), "%s", msg);
    ck_assert_int_eq(sl_op_random_vertical_flip_new(&op, NAN, msg, sizeof msg), SL_EINVAL);
    ck_assert_int_eq(sl_op_random_vertical_flip_new(&op, 0.5, NULL, 0), SL_OK);
    memset(&in, 0, sizeof in);
    in.dtype = SL_UINT8;
    in.ndim = 1;
    in.shape[0] = 5;
    ck_assert_int_eq(sl_op_infer(op, &in, &out, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "random_vertical_flip"), "%s", msg);
    in.ndim = 3;
    in.shape[1] = 4;
    in.shape[2] = 3;
    ck_assert_int_eq(sl_op_infer(op, &in, &out, msg, sizeof msg), SL_OK);
    ck_assert_int_eq(out.shape[0], 5);
    sl_op_release(op);
}
END_TEST

/* ImageFolder (decode) -> map [Resize 24x20, RandomVerticalFlip p]. */
static sl_dataset *folder(const char *dir, int fusion, double p)
{
    sl_image_folder_options o;
    sl_dataset *ds;
    sl_op *ops[2];
    size_t n = p >= 0 ? 2 : 1;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_image_folder_options_init(&o);
    o.dataset_dir = dir;
    o.decode = 1;
    o.num_parallel_workers = 2;
    o.sampler.shuffle = 0;
    ck_assert_int_eq(sl_dataset_image_folder(ds, &o), SL_OK);
    sl_dataset_set_seed(ds, 7);
    sl_dataset_set_decode_fusion(ds, fusion);
    ck_assert_int_eq(sl_op_resize_new(&ops[0], 24, 20, SL_INTER_LINEAR, NULL, 0), SL_OK);
    if (n == 2)
        ck_assert_int_eq(sl_op_random_vertical_flip_new(&ops[1], p, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, ops, n, "image", NULL, 2), SL_OK);
    for (size_t k = 0; k < n; k++)
        sl_op_release(ops[k]);
    return ds;
}

#define NIMAGES 12

static void collect(sl_dataset *ds, sl_tensor **out)
{
    sl_iterator *it;
    sl_row row;
    size_t n = 0;
    int rc;
    ck_assert_int_eq(sl_iterator_new(&it, ds, NULL), SL_OK);
    while ((rc = sl_iterator_next(it, &row)) == SL_OK) {
        ck_assert_uint_lt(n, NIMAGES);
        out[n++] = sl_tensor_retain(row.columns[0]);
        sl_row_clear(&row);
    }
    ck_assert_msg(rc == SL_END_OF_EPOCH, "%s", sl_iterator_last_error(it));
    ck_assert_uint_eq(n, NIMAGES);
    sl_iterator_free(it);
    sl_dataset_free(ds);
}

/* Which of plain and plain upside down row is: 0, 1, or -1 for neither. */
static int orientation(const sl_tensor *row, const sl_tensor *plain)
{
    size_t bytes = sl_tensor_nbytes(plain) / 24;
    if (upside_down(row, plain, 24, bytes))
        return 1;
    return sl_tensor_nbytes(row) == sl_tensor_nbytes(plain) &&
                   memcmp(sl_tensor_data(row), sl_tensor_data(plain), sl_tensor_nbytes(row)) == 0
               ? 0
               : -1;
}

/* The decode fuses with the Resize (a fused op the flip does not join:
 * its pixels differ from the separate ops', which shows it ran);
 * the flip then sees the fused op's image, and draws as it does unfused. */
START_TEST(test_vflip_after_fused_decode)
{
    char *dir = tu_mkdtemp();
    sl_tensor *plain[2][NIMAGES], *flipped[2][NIMAGES], *half[2][NIMAGES];
    int drawn = 0, fused_ran = 0;
    ck_assert_int_eq(tu_make_image_folder(dir, 2, NIMAGES / 2, 192, 160), 0);
    for (int f = 0; f < 2; f++) {
        /* scaled: the fused op decodes at 1/2, so its pixels differ */
        int fusion = f ? SL_DECODE_FUSION_SCALED : SL_DECODE_FUSION_OFF;
        collect(folder(dir, fusion, -1), plain[f]);
        collect(folder(dir, fusion, 1.0), flipped[f]);
        collect(folder(dir, fusion, 0.5), half[f]);
    }
    for (size_t i = 0; i < NIMAGES; i++) {
        int o0, o1;
        for (int f = 0; f < 2; f++)
            ck_assert_msg(orientation(flipped[f][i], plain[f][i]) == 1,
                          "row %zu (fusion %d) not upside down", i, f);
        /* images with a vertical symmetry would tell nothing */
        ck_assert_int_eq(orientation(plain[1][i], flipped[1][i]), 1);
        ck_assert(orientation(plain[1][i], plain[1][i]) == 0 &&
                  orientation(flipped[1][i], plain[1][i]) != 0);
        o0 = orientation(half[0][i], plain[0][i]);
        o1 = orientation(half[1][i], plain[1][i]);
        ck_assert_msg(o0 >= 0 && o0 == o1, "row %zu: unfused %d, fused %d", i, o0, o1);
        drawn += o1;
        fused_ran += orientation(plain[1][i], plain[0][i]) < 0;
        for (int f = 0; f < 2; f++) {
            sl_tensor_release(plain[f][i]);
            sl_tensor_release(flipped[f][i]);
            sl_tensor_release(half[f][i]);
        }
    }
    ck_assert_msg(fused_ran == NIMAGES, "the fused decode did not run");
    ck_assert_int_gt(drawn, 0);
    ck_assert_int_lt(drawn, NIMAGES);
    tu_rmtree(dir);
    free(dir);
}
END_TEST

static Suite *make_vflip_suite(void)
{
    Suite *s = suite_create("vflip");
    TCase *tc = tu_tcase("core", 60);
    tcase_add_test(tc, test_vflip_always_never);
    tcase_add_test(tc, test_vflip_independent_of_hflip);
    tcase_add_test(tc, test_vflip_refusals);
    tcase_add_test(tc, test_vflip_after_fused_decode);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(make_vflip_suite);
}
