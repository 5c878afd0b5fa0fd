/* check_color_adjust.c: the RandomColorAdjust op against per-pixel
 * formulas written here (brightness, contrast with the rounded mean grey,
 * saturation, hue turned through HSV), the order drawn per sample, the
 * factors' ranges, and its refusals. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "sluice/op.h"
#include "sluice/status.h"
#include "sluice/tensor.h"
#include "core/rng.h"
#include "ops/op_impl.h"
#include "tests/testutil.h"

Suite *make_color_adjust_suite(void);

static sl_tensor *new_image(sl_dtype dtype, int ndim, int64_t h, int64_t w, int64_t c)
{
    int64_t shape[3] = {h, w, c};
    sl_tensor *t = NULL;
    ck_assert_int_eq(sl_tensor_new(&t, dtype, ndim, shape), SL_OK);
    for (size_t i = 0; i < sl_tensor_nbytes(t); i++)
        ((unsigned char *)sl_tensor_data(t))[i] = (unsigned char)(1 + (i * 37 + i / 7) % 251);
    return t;
}

static int same_bytes(const sl_tensor *a, const sl_tensor *b)
{
    return sl_tensor_nbytes(a) == sl_tensor_nbytes(b) &&
           memcmp(sl_tensor_data(a), sl_tensor_data(b), sl_tensor_nbytes(a)) == 0;
}

static const double ID[2] = {1.0, 1.0}, HUE0[2] = {0.0, 0.0};

static sl_op *make_color(const double b[2], const double c[2], const double s[2],
                         const double h[2])
{
    sl_op *op;
    char err[256];
    int rc = sl_op_random_color_adjust_new(&op, b, c, s, h, err, sizeof err);
    ck_assert_msg(rc == SL_OK, "%s", err);
    return op;
}

static int grey(const uint8_t *p)
{
    return (int)floor(0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2] + 0.5);
}

static int clamp_round(double v)
{
    return v <= 0 ? 0 : v >= 255 ? 255 : (int)floor(v + 0.5);
}

START_TEST(test_color_identity_and_single)
{
    static const double half[2] = {0.5, 0.5}, zero[2] = {0.0, 0.0}, three[2] = {3.0, 3.0};
    sl_tensor *in = new_image(SL_UINT8, 3, 9, 11, 3), *out;
    const uint8_t *s = sl_tensor_data(in), *o;
    size_t n = 9 * 11;
    double mean = 0;
    sl_op *op = make_color(ID, ID, ID, HUE0);
    ck_assert_str_eq(sl_op_name(op), "random_color_adjust");
    ck_assert_int_eq(sl_op_apply(op, in, &out, 3, NULL, 0), SL_OK);
    ck_assert(same_bytes(in, out));
    sl_tensor_release(out);
    sl_op_release(op);

    op = make_color(half, ID, ID, HUE0); /* brightness 0.5 */
    ck_assert_int_eq(sl_op_apply(op, in, &out, 3, NULL, 0), SL_OK);
    o = sl_tensor_data(out);
    for (size_t i = 0; i < 3 * n; i++)
        ck_assert_int_eq(o[i], clamp_round(s[i] * 0.5));
    sl_tensor_release(out);
    sl_op_release(op);

    op = make_color(ID, ID, zero, HUE0); /* saturation 0: each pixel's grey */
    ck_assert_int_eq(sl_op_apply(op, in, &out, 3, NULL, 0), SL_OK);
    o = sl_tensor_data(out);
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            ck_assert_int_eq(o[3 * i + k], grey(s + 3 * i));
    sl_tensor_release(out);
    sl_op_release(op);

    op = make_color(ID, zero, ID, HUE0); /* contrast 0: the mean grey */
    for (size_t i = 0; i < n; i++)
        mean += grey(s + 3 * i);
    mean = floor(mean / (double)n + 0.5);
    ck_assert_int_eq(sl_op_apply(op, in, &out, 3, NULL, 0), SL_OK);
    o = sl_tensor_data(out);
    for (size_t i = 0; i < 3 * n; i++)
        ck_assert_int_eq(o[i], (int)mean);
    sl_tensor_release(out);
    sl_op_release(op);

    /* contrast 3: away from the mean, rounded first (125.43 -> 125 here) */
    op = make_color(ID, three, ID, HUE0);
    ck_assert_int_eq(sl_op_apply(op, in, &out, 3, NULL, 0), SL_OK);
    o = sl_tensor_data(out);
    for (size_t i = 0; i < 3 * n; i++)
        ck_assert_int_eq(o[i], clamp_round(-2.0 * mean + s[i] * 3.0));
    sl_tensor_release(out);
    sl_op_release(op);
    sl_tensor_release(in);
}
END_TEST

/* Hue by half a turn: red <-> cyan, green <-> magenta, greys unchanged; a
 * turn by h then by -h comes back within a level. */
START_TEST(test_color_hue)
{
    static const double half[2] = {0.5, 0.5}, third[2] = {1.0 / 3.0, 1.0 / 3.0};
    static const uint8_t px[][3] = {{255, 0, 0}, {0, 255, 0}, {77, 77, 77}, {255, 0, 0}};
    static const uint8_t turned[][3] = {{0, 255, 255}, {255, 0, 255}, {77, 77, 77}, {0, 255, 0}};
    int64_t shape[3] = {1, 1, 3};
    for (size_t i = 0; i < 4; i++) {
        sl_op *op = make_color(ID, ID, ID, i == 3 ? third : half);
        sl_tensor *in, *out;
        ck_assert_int_eq(sl_tensor_new(&in, SL_UINT8, 3, shape), SL_OK);
        memcpy(sl_tensor_data(in), px[i], 3);
        ck_assert_int_eq(sl_op_apply(op, in, &out, 0, NULL, 0), SL_OK);
        ck_assert_msg(memcmp(sl_tensor_data(out), turned[i], 3) == 0, "pixel %zu: %d %d %d", i,
                      ((uint8_t *)sl_tensor_data(out))[0], ((uint8_t *)sl_tensor_data(out))[1],
                      ((uint8_t *)sl_tensor_data(out))[2]);
        sl_tensor_release(out);
        sl_tensor_release(in);
        sl_op_release(op);
    }
    {
        static const double there[2] = {0.2, 0.2}, back[2] = {-0.2, -0.2};
        sl_op *a = make_color(ID, ID, ID, there), *b = make_color(ID, ID, ID, back);
        sl_tensor *in = new_image(SL_UINT8, 3, 16, 16, 3), *mid, *out;
        int changed = 0;
        ck_assert_int_eq(sl_op_apply(a, in, &mid, 0, NULL, 0), SL_OK);
        ck_assert_int_eq(sl_op_apply(b, mid, &out, 0, NULL, 0), SL_OK);
        for (size_t i = 0; i < sl_tensor_nbytes(in); i++) {
            int d = (int)((uint8_t *)sl_tensor_data(out))[i] - ((uint8_t *)sl_tensor_data(in))[i];
            ck_assert_msg(abs(d) <= 1, "byte %zu off by %d", i, d);
            changed += ((uint8_t *)sl_tensor_data(mid))[i] != ((uint8_t *)sl_tensor_data(in))[i];
        }
        ck_assert_int_gt(changed, 300);
        sl_tensor_release(out);
        sl_tensor_release(mid);
        sl_tensor_release(in);
        sl_op_release(a);
        sl_op_release(b);
    }
}
END_TEST

/* The order is drawn per sample: brightness 2 then contrast 0 gives the
 * mean grey of the brightened image, the other order twice the mean grey.
 * Both orders occur, each as the seed's shuffle says, and the factor is
 * drawn within its range. */
START_TEST(test_color_order_and_factors)
{
    static const double two[2] = {2.0, 2.0}, zero[2] = {0.0, 0.0}, range[2] = {0.5, 1.5};
    int64_t shape[3] = {1, 2, 3};
    /* the first pixel saturates when brightened, so the orders differ */
    static const uint8_t px[6] = {200, 100, 50, 100, 20, 30};
    sl_op *op = make_color(two, zero, ID, HUE0), *br = make_color(range, ID, ID, HUE0);
    sl_tensor *in;
    int first = 0, second = 0;
    double lo = 10, hi = 0;
    ck_assert_int_eq(sl_tensor_new(&in, SL_UINT8, 3, shape), SL_OK);
    memcpy(sl_tensor_data(in), px, 6);
    for (uint64_t seed = 0; seed < 200; seed++) {
        sl_tensor *out;
        sl_rng rng;
        int order[4] = {0, 1, 2, 3}, bright_first;
        uint8_t bright[6];
        int m_bright = 0, m_plain;
        for (int i = 0; i < 6; i++)
            bright[i] = (uint8_t)(px[i] * 2 > 255 ? 255 : px[i] * 2);
        sl__rng_seed(&rng, seed, 0, 0, 0);
        for (int i = 3; i > 0; i--) {
            int j = (int)sl__rng_below(&rng, (uint64_t)i + 1), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        bright_first = 0;
        for (int i = 0; i < 4; i++) {
            if (order[i] == 0) {
                bright_first = 1;
                break;
            }
            if (order[i] == 1)
                break;
        }
        m_bright = (int)floor((grey(bright) + grey(bright + 3)) / 2.0 + 0.5);
        m_plain = (int)floor((grey(px) + grey(px + 3)) / 2.0 + 0.5);
        ck_assert_int_ne(m_bright, 2 * m_plain);
        ck_assert_int_eq(sl_op_apply(op, in, &out, seed, NULL, 0), SL_OK);
        for (int i = 0; i < 6; i++)
            ck_assert_int_eq(((uint8_t *)sl_tensor_data(out))[i],
                             bright_first ? m_bright : 2 * m_plain);
        first += bright_first;
        second += !bright_first;
        sl_tensor_release(out);
        /* one factor for the whole image, in [0.5, 1.5] */
        ck_assert_int_eq(sl_op_apply(br, in, &out, seed, NULL, 0), SL_OK);
        {
            double f = ((uint8_t *)sl_tensor_data(out))[3] / 100.0;
            ck_assert(f >= 0.495 && f <= 1.505);
            lo = fmin(lo, f);
            hi = fmax(hi, f);
        }
        sl_tensor_release(out);
    }
    ck_assert_int_gt(first, 60);
    ck_assert_int_gt(second, 60);
    ck_assert(lo < 0.6 && hi > 1.4);
    sl_tensor_release(in);
    sl_op_release(op);
    sl_op_release(br);
}
END_TEST

START_TEST(test_color_refusals)
{
    static const double bad_lo[2] = {-0.1, 1.0}, swapped[2] = {1.5, 0.5}, hue_big[2] = {-0.6, 0};
    sl_op *op = NULL;
    sl_tensor *in, *out;
    char msg[256];
    ck_assert_int_eq(sl_op_random_color_adjust_new(&op, bad_lo, ID, ID, HUE0, msg, sizeof msg),
                     SL_EINVAL);
    ck_assert_msg(strstr(msg, "random_color_adjust") && strstr(msg, "brightness") &&
                      strstr(msg, "-0.1"),
                  "%s", msg);
    ck_assert_int_eq(sl_op_random_color_adjust_new(&op, ID, swapped, ID, HUE0, msg, sizeof msg),
                     SL_EINVAL);
    ck_assert_msg(strstr(msg, "contrast") && strstr(msg, "(1.5, 0.5)"), "%s", msg);
    ck_assert_int_eq(sl_op_random_color_adjust_new(&op, ID, ID, swapped, HUE0, msg, sizeof msg),
                     SL_EINVAL);
    ck_assert_msg(strstr(msg, "saturation"), "%s", msg);
    ck_assert_int_eq(sl_op_random_color_adjust_new(&op, ID, ID, ID, hue_big, msg, sizeof msg),
                     SL_EINVAL);
    ck_assert_msg(strstr(msg, "hue") && strstr(msg, "-0.6"), "%s", msg);
    ck_assert_ptr_null(op);
    op = make_color(ID, ID, ID, HUE0);
    in = new_image(SL_UINT8, 3, 4, 4, 1);
    ck_assert_int_eq(sl_op_apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "random_color_adjust") && strstr(msg, "(4, 4, 1)"), "%s", msg);
    sl_tensor_release(in);
    in = new_image(SL_FLOAT32, 3, 4, 4, 3);
    ck_assert_int_eq(sl_op_apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "float32"), "%s", msg);
    sl_tensor_release(in);
    sl_op_release(op);
}
END_TEST

Suite *make_color_adjust_suite(void)
{
    Suite *s = suite_create("color_adjust");
    TCase *core = tu_tcase("core", 30);
    tcase_add_test(core, test_color_identity_and_single);
    tcase_add_test(core, test_color_hue);
    tcase_add_test(core, test_color_order_and_factors);
    tcase_add_test(core, test_color_refusals);
    suite_add_tcase(s, core);
    return s;
}

int main(void)
{
    return tu_run_suite_unless_tsan(make_color_adjust_suite,
                                    "the operators run on the calling thread only: nothing for "
                                    "ThreadSanitizer (the plain and ASan builds run this suite)");
}
