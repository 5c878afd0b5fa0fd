/* check_ops_cubic.c: Resize with SL_INTER_CUBIC (OpenCV's INTER_CUBIC)
 * against a plain double-precision reference written here, hand-computed
 * values, and where it goes (RandomResizedCrop, Resize(int), no decode
 * fusion); part of check_ops (check_ops.h). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/op.h"
#include "sluice/status.h"
#include "sluice/tensor.h"
#include "ops/op_impl.h"
#include "tests/check_ops.h"

/* Keys' cubic weight of a tap at distance x (a = -0.75), in double. */
static double keys(double x)
{
    const double a = -0.75;
    x = fabs(x);
    if (x <= 1)
        return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2)
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return 0;
}

static int clampi(int i, int n)
{
    return i < 0 ? 0 : i >= n ? n - 1 : i;
}

/* The reference: out (oh, ow, c) in double, taps floor(f) - 1 .. + 2 of
 * f = (d + 0.5) * in / out - 0.5, border replicated. */
static double *ref_cubic(const double *in, int h, int w, int c, int oh, int ow)
{
    double *out = malloc(sizeof(double) * (size_t)(oh * ow * c));
    ck_assert_ptr_nonnull(out);
    for (int y = 0; y < oh; y++) {
        double fy = (y + 0.5) * ((double)h / oh) - 0.5;
        int sy = (int)floor(fy);
        for (int x = 0; x < ow; x++) {
            double fx = (x + 0.5) * ((double)w / ow) - 0.5;
            int sx = (int)floor(fx);
            for (int k = 0; k < c; k++) {
                double v = 0;
                for (int i = -1; i <= 2; i++)
                    for (int j = -1; j <= 2; j++)
                        v += keys(fy - (sy + i)) * keys(fx - (sx + j)) *
                             in[((size_t)clampi(sy + i, h) * w + clampi(sx + j, w)) * c + k];
                out[((size_t)y * ow + x) * c + k] = v;
            }
        }
    }
    return out;
}

/* uint8 rounding as the kernel's: half up, saturated. */
static int round_u8(double v)
{
    double r = floor(v + 0.5);
    return r < 0 ? 0 : r > 255 ? 255 : (int)r;
}

static sl_tensor *cubic(const sl_tensor *in, int oh, int ow)
{
    sl_op *op;
    sl_tensor *out;
    char msg[256];
    ck_assert_int_eq(sl_op_resize_new(&op, oh, ow, SL_INTER_CUBIC, NULL, 0), SL_OK);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_OK);
    sl_op_release(op);
    return out;
}

static const struct {
    int h, w, c, oh, ow;
    int exact; /* power-of-two upscale: OpenCV's 1/2048 weights are exact */
} cubic_cases[] = {
    {6, 8, 3, 12, 16, 1}, {5, 3, 1, 20, 12, 1}, {7, 5, 1, 13, 11, 0}, {9, 11, 3, 4, 5, 0},
    {16, 16, 1, 4, 4, 0}, {1, 5, 3, 3, 9, 0},   {5, 1, 1, 10, 2, 0},  {10, 7, 3, 10, 14, 1},
    {17, 13, 3, 5, 29, 0}, {31, 23, 3, 37, 19, 0},
};

/* Every case in dtype against the reference: uint8 rounded as the kernel
 * rounds, equal or one level off (the weights are rounded to 1/2048), equal
 * where they are exact; float32 to float precision. Returns how many uint8
 * values are one level off. */
static size_t check_reference(sl_dtype dt)
{
    size_t off = 0;
    for (size_t i = 0; i < sizeof cubic_cases / sizeof cubic_cases[0]; i++) {
        int h = cubic_cases[i].h, w = cubic_cases[i].w, c = cubic_cases[i].c;
        int oh = cubic_cases[i].oh, ow = cubic_cases[i].ow;
        sl_tensor *in = new_tensor(dt, 3, h, w, c), *out;
        double *src, *want, *got;
        if (dt == SL_UINT8)
            fill_u8(in, (uint32_t)i + 1);
        else
            fill_f32(in, (uint32_t)i + 7);
        src = to_double(in);
        want = ref_cubic(src, h, w, c, oh, ow);
        out = cubic(in, oh, ow);
        check_shape(out, dt, 3, oh, ow, c);
        got = to_double(out);
        for (size_t k = 0; k < (size_t)(oh * ow * c); k++) {
            if (dt == SL_UINT8) {
                int d = abs((int)got[k] - round_u8(want[k]));
                ck_assert_msg(d <= (cubic_cases[i].exact ? 0 : 1),
                              "case %zu element %zu: got %g, reference %.4f", i, k, got[k],
                              want[k]);
                off += d != 0;
            } else {
                ck_assert_msg(fabs(got[k] - want[k]) <= 1e-5 * fmax(1.0, fabs(want[k])),
                              "case %zu element %zu: got %.7g, reference %.7g", i, k, got[k],
                              want[k]);
            }
        }
        free(src);
        free(want);
        free(got);
        sl_tensor_release(out);
        sl_tensor_release(in);
    }
    return off;
}

START_TEST(test_resize_cubic_u8_reference)
{
    size_t off = check_reference(SL_UINT8);
    printf("bicubic uint8: %zu values one level from the double reference\n", off);
}
END_TEST

START_TEST(test_resize_cubic_f32_reference)
{
    check_reference(SL_FLOAT32);
}
END_TEST

/* A step 0, 0, 255, 255 doubled by hand: t = 0.25 gives weights
 * (-0.10546875, 0.87890625, 0.26171875, -0.03515625), t = 0.75 the same
 * reversed; the overshoot saturates in uint8 and stays in float32. */
START_TEST(test_resize_cubic_known_step)
{
    static const uint8_t want_u8[8] = {0, 0, 0, 58, 197, 255, 255, 255};
    static const double want_f32[8] = {0, -8.96484375, -26.89453125, 57.7734375,
                                       197.2265625, 281.89453125, 263.96484375, 255};
    sl_tensor *u8 = new_tensor(SL_UINT8, 2, 1, 4, 0), *f32 = new_tensor(SL_FLOAT32, 2, 1, 4, 0);
    sl_tensor *out;
    for (int x = 0; x < 4; x++) {
        ((uint8_t *)sl_tensor_data(u8))[x] = x < 2 ? 0 : 255;
        ((float *)sl_tensor_data(f32))[x] = x < 2 ? 0.0f : 255.0f;
    }
    out = cubic(u8, 1, 8);
    check_shape(out, SL_UINT8, 2, 1, 8, 0);
    ck_assert(memcmp(sl_tensor_data(out), want_u8, 8) == 0);
    sl_tensor_release(out);
    out = cubic(f32, 1, 8);
    for (int x = 0; x < 8; x++)
        ck_assert_msg(close_enough(((const float *)sl_tensor_data(out))[x], want_f32[x]),
                      "x %d: got %g, want %g", x, ((const float *)sl_tensor_data(out))[x],
                      want_f32[x]);
    sl_tensor_release(out);
    sl_tensor_release(u8);
    sl_tensor_release(f32);
}
END_TEST

/* RandomResizedCrop and Resize(int) resize with it too; a Decode does not
 * fuse with it (the fused decode is bilinear), nor does a Rescale. */
START_TEST(test_resize_cubic_elsewhere)
{
    sl_op *rrc, *shorter, *resize, *decode, *rescale, *ops[2], *fused;
    sl_tensor *in = new_tensor(SL_UINT8, 3, 9, 12, 3), *out, *direct;
    size_t used;
    char msg[256];
    fill_u8(in, 5);
    ck_assert_int_eq(sl_op_random_resized_crop_new(&rrc, 7, 7, 1, 1, 12.0 / 9, 12.0 / 9,
                                                   SL_INTER_CUBIC, 10, NULL, 0),
                     SL_OK);
    ck_assert_int_eq(apply(rrc, in, &out, 3, msg, sizeof msg), SL_OK);
    direct = cubic(in, 7, 7); /* the box is the whole image */
    ck_assert(same_bytes(out, direct));
    sl_tensor_release(out);
    sl_tensor_release(direct);
    ck_assert_int_eq(sl_op_resize_shorter_side_new(&shorter, 6, SL_INTER_CUBIC, NULL, 0),
                     SL_OK);
    ck_assert_int_eq(apply(shorter, in, &out, 0, msg, sizeof msg), SL_OK);
    direct = cubic(in, 6, 8);
    ck_assert(same_bytes(out, direct));
    sl_tensor_release(out);
    sl_tensor_release(direct);

    ck_assert_int_eq(sl_op_resize_new(&resize, 5, 5, SL_INTER_CUBIC, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_decode_new(&decode, 1, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_rescale_new(&rescale, 1.0 / 255, 0, NULL, 0), SL_OK);
    for (int k = 0; k < 3; k++) {
        ops[0] = k == 1 ? resize : decode;
        ops[1] = k == 0 ? resize : k == 1 ? rescale : shorter;
        ck_assert_int_eq(sl__op_fuse(ops, 2, &fused, &used), SL_OK);
        ck_assert_ptr_null(fused);
    }

    ck_assert_int_eq(sl_op_resize_new(&fused, 5, 5, (sl_interp)3, msg, sizeof msg), SL_EINVAL);
    ck_assert_msg(strstr(msg, "SL_INTER_CUBIC, got 3"), "%s", msg);
    sl_op_release(rescale);
    sl_op_release(decode);
    sl_op_release(resize);
    sl_op_release(shorter);
    sl_op_release(rrc);
    sl_tensor_release(in);
}
END_TEST

void ops_add_cubic_tests(TCase *core)
{
    tcase_add_test(core, test_resize_cubic_u8_reference);
    tcase_add_test(core, test_resize_cubic_f32_reference);
    tcase_add_test(core, test_resize_cubic_known_step);
    tcase_add_test(core, test_resize_cubic_elsewhere);
}
