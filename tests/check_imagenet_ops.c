/* check_imagenet_ops.c: the ImageNet-style operators (RandomResizedCrop,
 * CenterCrop, Resize of the shorter side; RandomColorAdjust is in
 * check_color_adjust.c) and the one-pass flip + Normalize + HWC2CHW, against
 * references written here: torchvision's get_params transcribed on the same
 * draws, crop-then-Resize through the existing ops, padded windows cut by
 * hand, per-pixel colour formulas; their boundaries (boxes at every border,
 * the fallback, ratios at the range's ends) and every refusal. */
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

Suite *make_imagenet_ops_suite(void);

static sl_tensor *new_image(sl_dtype dtype, int ndim, int64_t h, int64_t w, int64_t c)
{
    int64_t shape[3] = {h, w, c};
    sl_tensor *t = NULL;
    ck_assert_int_eq(sl_tensor_new(&t, dtype, ndim, shape), SL_OK);
    for (size_t i = 0; i < sl_tensor_nbytes(t); i++)
        ((unsigned char *)sl_tensor_data(t))[i] = (unsigned char)(1 + (i * 37 + i / 7) % 251);
    if (dtype == SL_FLOAT32)
        for (size_t i = 0; i < sl_tensor_numel(t); i++)
            ((float *)sl_tensor_data(t))[i] = (float)((i * 7919) % 1000) / 997.0f;
    return t;
}

static int same_bytes(const sl_tensor *a, const sl_tensor *b)
{
    return sl_tensor_nbytes(a) == sl_tensor_nbytes(b) &&
           memcmp(sl_tensor_data(a), sl_tensor_data(b), sl_tensor_nbytes(a)) == 0;
}

/* --- RandomResizedCrop ------------------------------------------------------ */

/* torchvision's RandomResizedCrop.get_params, line by line, drawing from the
 * generator sl_op_apply seeds for seed: uniform(scale), exp(uniform(log
 * ratio)), round half to even, then randint for top and left; the central
 * fallback. */
static void ref_box(int64_t h, int64_t w, const double scale[2], const double ratio[2],
                    uint64_t seed, int64_t box[4])
{
    sl_rng rng;
    double area = (double)h * (double)w, lr0 = log(ratio[0]), lr1 = log(ratio[1]), in_ratio;
    sl__rng_seed(&rng, seed, 0, 0, 0);
    for (int i = 0; i < 10; i++) {
        double target = area * (scale[0] + (scale[1] - scale[0]) * sl__rng_uniform(&rng));
        double ar = exp(lr0 + (lr1 - lr0) * sl__rng_uniform(&rng));
        double cw = nearbyint(sqrt(target * ar)), ch = nearbyint(sqrt(target / ar));
        if (0 < cw && cw <= (double)w && 0 < ch && ch <= (double)h) {
            box[2] = (int64_t)ch;
            box[3] = (int64_t)cw;
            box[0] = (int64_t)sl__rng_below(&rng, (uint64_t)(h - box[2] + 1));
            box[1] = (int64_t)sl__rng_below(&rng, (uint64_t)(w - box[3] + 1));
            return;
        }
    }
    in_ratio = (double)w / (double)h;
    if (in_ratio < ratio[0]) {
        box[3] = w;
        box[2] = (int64_t)nearbyint((double)w / ratio[0]);
    } else if (in_ratio > ratio[1]) {
        box[2] = h;
        box[3] = (int64_t)nearbyint((double)h * ratio[1]);
    } else {
        box[3] = w;
        box[2] = h;
    }
    box[0] = (h - box[2]) / 2;
    box[1] = (w - box[3]) / 2;
}

static sl_op *make_rrc(int64_t oh, int64_t ow, const double scale[2], const double ratio[2])
{
    sl_op *op;
    char err[256];
    int rc = sl_op_random_resized_crop_new(&op, oh, ow, scale[0], scale[1], ratio[0], ratio[1],
                                           SL_INTER_LINEAR, SL_RRC_ATTEMPTS, err, sizeof err);
    ck_assert_msg(rc == SL_OK, "%s", err);
    return op;
}

START_TEST(test_rrc_box_matches_torchvision)
{
    static const double scales[][2] = {{0.08, 1.0}, {0.5, 0.5}, {0.01, 0.02}, {0.9, 1.0}};
    static const double ratios[][2] = {{3.0 / 4.0, 4.0 / 3.0}, {1.0, 1.0}, {0.2, 5.0}};
    static const int64_t sizes[][2] = {{400, 300}, {300, 400}, {224, 224}, {7, 1000},
                                       {1000, 7}, {1, 1}, {2, 3}, {1000, 101}};
    int fallbacks = 0, drawn = 0;
    for (size_t s = 0; s < sizeof scales / sizeof scales[0]; s++)
        for (size_t r = 0; r < sizeof ratios / sizeof ratios[0]; r++) {
            sl_op *op = make_rrc(32, 32, scales[s], ratios[r]);
            for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
                for (uint64_t seed = 0; seed < 200; seed++) {
                    int64_t h = sizes[z][0], w = sizes[z][1], got[4], want[4];
                    ck_assert_int_eq(sl_op_random_resized_crop_box(op, h, w, seed, got, NULL, 0),
                                     SL_OK);
                    ref_box(h, w, scales[s], ratios[r], seed, want);
                    ck_assert_msg(memcmp(got, want, sizeof got) == 0,
                                  "%lldx%lld seed %llu: box (%lld, %lld, %lld, %lld), torchvision "
                                  "(%lld, %lld, %lld, %lld)",
                                  (long long)h, (long long)w, (unsigned long long)seed,
                                  (long long)got[0], (long long)got[1], (long long)got[2],
                                  (long long)got[3], (long long)want[0], (long long)want[1],
                                  (long long)want[2], (long long)want[3]);
                    /* inside the image, never empty */
                    ck_assert(got[0] >= 0 && got[1] >= 0 && got[2] >= 1 && got[3] >= 1);
                    ck_assert(got[0] + got[2] <= h && got[1] + got[3] <= w);
                    if (got[0] == (h - got[2]) / 2 && got[1] == (w - got[3]) / 2)
                        fallbacks++;
                    else
                        drawn++;
                }
            sl_op_release(op);
        }
    /* both paths were taken */
    ck_assert_int_gt(fallbacks, 100);
    ck_assert_int_gt(drawn, 1000);
}
END_TEST

/* Boxes reach every border: a 10x10 box in a 20x20 image takes every top
 * and left in [0, 10], each with about the same frequency. */
START_TEST(test_rrc_box_every_border)
{
    static const double scale[2] = {0.25, 0.25}, ratio[2] = {1.0, 1.0};
    sl_op *op = make_rrc(8, 8, scale, ratio);
    int tops[11] = {0}, lefts[11] = {0};
    for (uint64_t seed = 0; seed < 2200; seed++) {
        int64_t box[4];
        ck_assert_int_eq(sl_op_random_resized_crop_box(op, 20, 20, seed, box, NULL, 0), SL_OK);
        ck_assert_int_eq(box[2], 10);
        ck_assert_int_eq(box[3], 10);
        tops[box[0]]++;
        lefts[box[1]]++;
    }
    for (int i = 0; i <= 10; i++) {
        /* 200 expected each; 5 sigma is about 70 */
        ck_assert_msg(tops[i] > 130 && tops[i] < 270, "top %d drawn %d times", i, tops[i]);
        ck_assert_msg(lefts[i] > 130 && lefts[i] < 270, "left %d drawn %d times", i, lefts[i]);
    }
    sl_op_release(op);
}
END_TEST

/* The fallback clamps the ratio: a box that can never fit (scale > 1)
 * always ends there, with torchvision's box. */
START_TEST(test_rrc_fallback)
{
    static const double scale[2] = {2.0, 3.0}, ratio[2] = {3.0 / 4.0, 4.0 / 3.0};
    static const struct {
        int64_t h, w, box[4];
    } cases[] = {
        {100, 1000, {0, 433, 100, 133}}, /* too wide: height kept, width 100 * 4/3 */
        {1000, 100, {433, 0, 133, 100}}, /* too tall: width kept, height 100 / (3/4) */
        {100, 120, {0, 0, 100, 120}},    /* within the range: the whole image */
        {1, 50, {0, 24, 1, 1}},          /* 1 * 4/3 rounds to 1 */
        {1000, 101, {432, 0, 135, 101}}, /* 134.67 rounds up */
        {10, 1000, {0, 493, 10, 13}},    /* 13.33 rounds down */
    };
    sl_op *op = make_rrc(16, 16, scale, ratio);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (uint64_t seed = 0; seed < 5; seed++) {
            int64_t box[4];
            ck_assert_int_eq(sl_op_random_resized_crop_box(op, cases[i].h, cases[i].w, seed, box,
                                                           NULL, 0),
                             SL_OK);
            ck_assert_msg(memcmp(box, cases[i].box, sizeof box) == 0,
                          "case %zu: (%lld, %lld, %lld, %lld)", i, (long long)box[0],
                          (long long)box[1], (long long)box[2], (long long)box[3]);
        }
    sl_op_release(op);
}
END_TEST

/* Over many draws on a large image the boxes follow the distribution:
 * area fractions within [0.08, 1] and ratios within [3/4, 4/3] (up to
 * rounding), log ratio centred on 0, and the area's mean that of the
 * uniform (0.54) less the draws that did not fit. */
START_TEST(test_rrc_distribution)
{
    static const double scale[2] = {0.08, 1.0}, ratio[2] = {3.0 / 4.0, 4.0 / 3.0};
    sl_op *op = make_rrc(16, 16, scale, ratio);
    double sum_area = 0, sum_logr = 0;
    int n = 4000;
    for (int seed = 0; seed < n; seed++) {
        int64_t box[4];
        double a, r;
        ck_assert_int_eq(sl_op_random_resized_crop_box(op, 1000, 1000, (uint64_t)seed, box, NULL,
                                                       0),
                         SL_OK);
        a = (double)box[2] * (double)box[3] / 1e6;
        r = (double)box[3] / (double)box[2];
        ck_assert_msg(a >= 0.078 && a <= 1.0, "area %g", a);
        ck_assert_msg(r >= 0.745 && r <= 1.34, "ratio %g", r);
        sum_area += a;
        sum_logr += log(r);
    }
    /* large fractions with an extreme ratio do not fit and are redrawn,
     * which pulls the mean below 0.54 */
    ck_assert_msg(sum_area / n > 0.45 && sum_area / n < 0.54, "mean area %g", sum_area / n);
    ck_assert_msg(fabs(sum_logr / n) < 0.01, "mean log ratio %g", sum_logr / n);
    sl_op_release(op);
}
END_TEST

/* The pixels are those of the box cut out and resized by Resize. */
START_TEST(test_rrc_pixels_are_crop_then_resize)
{
    static const double scale[2] = {0.08, 1.0}, ratio[2] = {3.0 / 4.0, 4.0 / 3.0};
    static const struct {
        sl_dtype dt;
        int ndim;
        int64_t h, w, c, oh, ow;
    } cases[] = {
        {SL_UINT8, 3, 60, 80, 3, 24, 24},
        {SL_UINT8, 2, 31, 17, 1, 10, 12},
        {SL_FLOAT32, 3, 40, 40, 3, 50, 50},
        {SL_UINT8, 3, 5, 300, 3, 8, 8},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl_op *op = make_rrc(cases[i].oh, cases[i].ow, scale, ratio), *resize;
        sl_tensor *in = new_image(cases[i].dt, cases[i].ndim, cases[i].h, cases[i].w, cases[i].c);
        size_t px = (size_t)cases[i].c * sl_dtype_size(cases[i].dt);
        ck_assert_str_eq(sl_op_name(op), "random_resized_crop");
        ck_assert_int_eq(op->random, 1);
        for (uint64_t seed = 0; seed < 30; seed++) {
            int64_t box[4], shape[3];
            sl_tensor *got, *crop, *want;
            ck_assert_int_eq(sl_op_apply(op, in, &got, seed, NULL, 0), SL_OK);
            ck_assert_int_eq(sl_op_random_resized_crop_box(op, cases[i].h, cases[i].w, seed, box,
                                                           NULL, 0),
                             SL_OK);
            shape[0] = box[2];
            shape[1] = box[3];
            shape[2] = cases[i].c;
            ck_assert_int_eq(sl_tensor_new(&crop, cases[i].dt, cases[i].ndim, shape), SL_OK);
            for (int64_t y = 0; y < box[2]; y++)
                memcpy((unsigned char *)sl_tensor_data(crop) + (size_t)(y * box[3]) * px,
                       (const unsigned char *)sl_tensor_data(in) +
                           ((size_t)((y + box[0]) * cases[i].w + box[1])) * px,
                       (size_t)box[3] * px);
            ck_assert_int_eq(sl_op_resize_new(&resize, cases[i].oh, cases[i].ow, SL_INTER_LINEAR,
                                              NULL, 0),
                             SL_OK);
            ck_assert_int_eq(sl_op_apply(resize, crop, &want, 0, NULL, 0), SL_OK);
            ck_assert_msg(same_bytes(got, want), "case %zu seed %llu", i,
                          (unsigned long long)seed);
            sl_tensor_release(got);
            sl_tensor_release(want);
            sl_tensor_release(crop);
            sl_op_release(resize);
        }
        sl_tensor_release(in);
        sl_op_release(op);
    }
}
END_TEST

START_TEST(test_rrc_refusals)
{
    sl_op *op, *flip;
    sl_tensor *in, *out;
    sl_tensor_spec si, so;
    int64_t box[4];
    char msg[256];
#define REFUSED(call, ...)                                                              \
    do {                                                                                \
        const char *words[] = {__VA_ARGS__};                                            \
        msg[0] = '\0';                                                                  \
        ck_assert_int_eq(call, SL_EINVAL);                                              \
        ck_assert_ptr_null(op);                                                         \
        for (size_t k = 0; k < sizeof words / sizeof words[0]; k++)                     \
            ck_assert_msg(strstr(msg, words[k]), "'%s' lacks '%s'", msg, words[k]);     \
    } while (0)
    REFUSED(sl_op_random_resized_crop_new(&op, 0, 5, 0.08, 1, 0.75, 1.33, SL_INTER_LINEAR, 10,
                                          msg, sizeof msg),
            "random_resized_crop", "(0, 5)");
    REFUSED(sl_op_random_resized_crop_new(&op, 5, 5, 0.9, 0.1, 0.75, 1.33, SL_INTER_LINEAR, 10,
                                          msg, sizeof msg),
            "random_resized_crop", "scale", "(0.9, 0.1)");
    REFUSED(sl_op_random_resized_crop_new(&op, 5, 5, -0.1, 1, 0.75, 1.33, SL_INTER_LINEAR, 10,
                                          msg, sizeof msg),
            "scale", "-0.1");
    REFUSED(sl_op_random_resized_crop_new(&op, 5, 5, 0, 0, 0.75, 1.33, SL_INTER_LINEAR, 10, msg,
                                          sizeof msg),
            "scale", "(0, 0)");
    REFUSED(sl_op_random_resized_crop_new(&op, 5, 5, 0.08, 1, 0, 1.33, SL_INTER_LINEAR, 10, msg,
                                          sizeof msg),
            "ratio", "(0, 1.33)");
    REFUSED(sl_op_random_resized_crop_new(&op, 5, 5, 0.08, 1, 2, 1, SL_INTER_LINEAR, 10, msg,
                                          sizeof msg),
            "ratio", "(2, 1)");
    REFUSED(sl_op_random_resized_crop_new(&op, 5, 5, 0.08, 1, 0.75, NAN, SL_INTER_LINEAR, 10, msg,
                                          sizeof msg),
            "ratio");
    REFUSED(sl_op_random_resized_crop_new(&op, 5, 5, 0.08, 1, 0.75, 1.33, (sl_interp)9, 10, msg,
                                          sizeof msg),
            "interp", "9");
    REFUSED(sl_op_random_resized_crop_new(&op, 5, 5, 0.08, 1, 0.75, 1.33, SL_INTER_LINEAR, 0, msg,
                                          sizeof msg),
            "max_attempts", "0");
    op = NULL;
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&flip, 0.5, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_random_resized_crop_box(flip, 5, 5, 0, box, msg, sizeof msg), SL_EINVAL);
    ck_assert_msg(strstr(msg, "random_horizontal_flip"), "%s", msg);
    sl_op_release(flip);

    ck_assert_int_eq(sl_op_random_resized_crop_new(&op, 7, 9, 0.08, 1, 0.75, 1.33,
                                                   SL_INTER_NEAREST, 10, NULL, 0),
                     SL_OK);
    ck_assert_int_eq(sl_op_random_resized_crop_box(op, 0, 5, 0, box, msg, sizeof msg), SL_EINVAL);
    ck_assert_msg(strstr(msg, "(0, 5)"), "%s", msg);
    in = new_image(SL_INT32, 3, 4, 4, 1);
    ck_assert_int_eq(sl_op_apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "random_resized_crop") && strstr(msg, "int32"), "%s", msg);
    sl_tensor_release(in);
    in = new_image(SL_UINT8, 3, 0, 4, 3);
    ck_assert_int_eq(sl_op_apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "empty"), "%s", msg);
    sl_tensor_release(in);
    memset(&si, 0, sizeof si);
    si.dtype = SL_UINT8;
    si.ndim = 3;
    si.shape[0] = -1;
    si.shape[1] = -1;
    si.shape[2] = 3;
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_OK);
    ck_assert_int_eq(so.shape[0], 7);
    ck_assert_int_eq(so.shape[1], 9);
    ck_assert_int_eq(so.shape[2], 3);
    sl_op_release(op);
#undef REFUSED
}
END_TEST

/* --- CenterCrop ------------------------------------------------------------ */

START_TEST(test_center_crop)
{
    static const struct {
        sl_dtype dt;
        int ndim;
        int64_t h, w, c, ch, cw;
    } cases[] = {
        {SL_UINT8, 3, 256, 341, 3, 224, 224}, /* ImageNet eval */
        {SL_UINT8, 3, 7, 8, 3, 4, 4},         /* odd margin rounds down */
        {SL_FLOAT32, 2, 5, 5, 1, 9, 8},       /* larger: padded */
        {SL_INT64, 3, 3, 10, 2, 6, 4},        /* taller, narrower */
        {SL_UINT8, 3, 6, 6, 3, 6, 6},         /* the image itself */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl_op *op;
        sl_tensor *in = new_image(cases[i].dt, cases[i].ndim, cases[i].h, cases[i].w, cases[i].c),
                  *out;
        size_t px = (size_t)cases[i].c * sl_dtype_size(cases[i].dt);
        /* floor((H - h) / 2) written out for either sign */
        int64_t top = (int64_t)floor((double)(cases[i].h - cases[i].ch) / 2.0);
        int64_t left = (int64_t)floor((double)(cases[i].w - cases[i].cw) / 2.0);
        const unsigned char *o, *s = sl_tensor_data(in);
        ck_assert_int_eq(sl_op_center_crop_new(&op, cases[i].ch, cases[i].cw, NULL, 0), SL_OK);
        ck_assert_str_eq(sl_op_name(op), "center_crop");
        ck_assert_int_eq(sl_op_apply(op, in, &out, 0, NULL, 0), SL_OK);
        ck_assert_int_eq(sl_tensor_shape(out)[0], cases[i].ch);
        ck_assert_int_eq(sl_tensor_shape(out)[1], cases[i].cw);
        ck_assert_int_eq(sl_tensor_ndim(out), cases[i].ndim);
        o = sl_tensor_data(out);
        for (int64_t y = 0; y < cases[i].ch; y++)
            for (int64_t x = 0; x < cases[i].cw; x++) {
                int64_t sy = y + top, sx = x + left;
                const unsigned char *got = o + (size_t)(y * cases[i].cw + x) * px;
                if (sy < 0 || sx < 0 || sy >= cases[i].h || sx >= cases[i].w) {
                    for (size_t b = 0; b < px; b++)
                        ck_assert_msg(got[b] == 0, "case %zu (%lld, %lld) not padded", i,
                                      (long long)y, (long long)x);
                } else {
                    ck_assert_msg(memcmp(got, s + (size_t)(sy * cases[i].w + sx) * px, px) == 0,
                                  "case %zu (%lld, %lld)", i, (long long)y, (long long)x);
                }
            }
        sl_tensor_release(out);
        sl_tensor_release(in);
        sl_op_release(op);
    }
}
END_TEST

START_TEST(test_center_crop_refusals)
{
    sl_op *op = NULL;
    sl_tensor *in, *out;
    char msg[256];
    ck_assert_int_eq(sl_op_center_crop_new(&op, 0, 3, msg, sizeof msg), SL_EINVAL);
    ck_assert_msg(strstr(msg, "center_crop") && strstr(msg, "(0, 3)"), "%s", msg);
    ck_assert_ptr_null(op);
    ck_assert_int_eq(sl_op_center_crop_new(&op, 3, -1, msg, sizeof msg), SL_EINVAL);
    ck_assert_msg(strstr(msg, "(3, -1)"), "%s", msg);
    ck_assert_int_eq(sl_op_center_crop_new(&op, 3, 3, NULL, 0), SL_OK);
    in = new_image(SL_UINT8, 1, 9, 0, 0);
    ck_assert_int_eq(sl_op_apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "center_crop") && strstr(msg, "(9,)"), "%s", msg);
    sl_tensor_release(in);
    sl_op_release(op);
}
END_TEST

/* --- Resize of the shorter side -------------------------------------------- */

START_TEST(test_resize_shorter_side)
{
    static const struct {
        int64_t h, w, size, oh, ow;
    } cases[] = {
        {480, 640, 256, 256, 341}, /* 341.33 */
        {375, 500, 256, 256, 341},
        {500, 333, 256, 384, 256}, /* 384.38 */
        {300, 300, 256, 256, 256},
        {2, 3, 5, 5, 8},           /* 7.5 rounds away from zero, as lroundf */
        {40, 10, 4, 16, 4},
        {20, 30, 20, 20, 30},      /* already there: the input back */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl_op *op, *resize;
        sl_tensor *in = new_image(SL_UINT8, 3, cases[i].h, cases[i].w, 3), *got, *want;
        ck_assert_int_eq(sl_op_resize_shorter_side_new(&op, cases[i].size, SL_INTER_LINEAR, NULL,
                                                       0),
                         SL_OK);
        ck_assert_str_eq(sl_op_name(op), "resize_shorter_side");
        ck_assert_int_eq(sl_op_apply(op, in, &got, 0, NULL, 0), SL_OK);
        ck_assert_msg(sl_tensor_shape(got)[0] == cases[i].oh &&
                          sl_tensor_shape(got)[1] == cases[i].ow,
                      "%lldx%lld -> %lldx%lld", (long long)cases[i].h, (long long)cases[i].w,
                      (long long)sl_tensor_shape(got)[0], (long long)sl_tensor_shape(got)[1]);
        ck_assert_int_eq(sl_op_resize_new(&resize, cases[i].oh, cases[i].ow, SL_INTER_LINEAR, NULL,
                                          0),
                         SL_OK);
        ck_assert_int_eq(sl_op_apply(resize, in, &want, 0, NULL, 0), SL_OK);
        ck_assert(same_bytes(got, want));
        sl_tensor_release(got);
        sl_tensor_release(want);
        sl_tensor_release(in);
        sl_op_release(resize);
        sl_op_release(op);
    }
}
END_TEST

START_TEST(test_resize_shorter_side_refusals)
{
    sl_op *op = NULL;
    sl_tensor *in, *out;
    sl_tensor_spec si, so;
    char msg[256];
    ck_assert_int_eq(sl_op_resize_shorter_side_new(&op, 0, SL_INTER_LINEAR, msg, sizeof msg),
                     SL_EINVAL);
    ck_assert_msg(strstr(msg, "resize_shorter_side") && strstr(msg, "got 0"), "%s", msg);
    ck_assert_int_eq(sl_op_resize_shorter_side_new(&op, 4, (sl_interp)5, msg, sizeof msg),
                     SL_EINVAL);
    ck_assert_msg(strstr(msg, "interp") && strstr(msg, "5"), "%s", msg);
    ck_assert_int_eq(sl_op_resize_shorter_side_new(&op, 1 << 24, SL_INTER_LINEAR, NULL, 0), SL_OK);
    in = new_image(SL_UINT8, 3, 1, 1000, 1); /* 1000 * 2^24 is too long */
    ck_assert_int_eq(sl_op_apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "resize_shorter_side") && strstr(msg, "1 x 1000"), "%s", msg);
    sl_tensor_release(in);
    memset(&si, 0, sizeof si);
    si.dtype = SL_UINT8;
    si.ndim = 3;
    si.shape[0] = 10;
    si.shape[1] = 20;
    si.shape[2] = 3;
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_OK);
    ck_assert_int_eq(so.shape[0], -1);
    ck_assert_int_eq(so.shape[2], 3);
    si.dtype = SL_INT32;
    ck_assert_int_eq(sl_op_infer(op, &si, &so, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "int32"), "%s", msg);
    sl_op_release(op);
}
END_TEST

/* --- Flip, Normalize, HWC2CHW in one pass ---------------------------------- */

/* Runs ops one after another as a map does: op k is seeded with (seed, 0,
 * 0, k + its rng_offset). */
static sl_tensor *run_chain(sl_op **ops, size_t n, const sl_tensor *in, uint64_t seed,
                            char *msg, size_t len, int *status)
{
    sl__error err;
    sl__op_ctx ctx;
    sl_tensor *t = sl_tensor_retain((sl_tensor *)in);
    memset(&ctx, 0, sizeof ctx);
    sl__err_clear(&err);
    ctx.err = &err;
    *status = SL_OK;
    for (size_t k = 0; k < n; k++) {
        sl_tensor *next;
        sl__rng_seed(&ctx.rng, seed, 0, 0, k + (size_t)ops[k]->rng_offset);
        *status = sl__op_run(ops[k], t, &next, &ctx);
        if (*status != SL_OK) {
            snprintf(msg, len, "%s", err.msg);
            return NULL;
        }
        t = next;
    }
    return t;
}

START_TEST(test_normalize_chw_fused)
{
    static const double mean[3] = {123.675, 116.28, 103.53}, std[3] = {58.395, 57.12, 57.375};
    static const double probs[] = {0.0, 0.5, 1.0};
    sl_op *ops[3], *fused, *seq[1];
    size_t used;
    int flipped = 0, kept = 0, rc;
    char m1[600] = "", m2[600] = "";
    ck_assert_int_eq(sl_op_normalize_new(&ops[1], mean, std, 3, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_hwc2chw_new(&ops[2], NULL, 0), SL_OK);
    for (size_t pi = 0; pi < 3; pi++) {
        ck_assert_int_eq(sl_op_random_horizontal_flip_new(&ops[0], probs[pi], NULL, 0), SL_OK);
        ck_assert_int_eq(sl__op_fuse(ops, 3, &fused, &used), SL_OK);
        ck_assert_ptr_nonnull(fused);
        ck_assert_int_eq(used, 3);
        ck_assert_str_eq(sl_op_name(fused), "random_horizontal_flip+normalize+hwc2chw");
        ck_assert_int_eq(fused->random, 1);
        seq[0] = fused;
        for (uint64_t seed = 0; seed < 40; seed++) {
            sl_tensor *in = new_image(SL_UINT8, 3, 7 + (int64_t)(seed % 5),
                                      9 + (int64_t)(seed % 3), 3);
            sl_tensor *want = run_chain(ops, 3, in, seed, m1, sizeof m1, &rc);
            sl_tensor *got = run_chain(seq, 1, in, seed, m2, sizeof m2, &rc);
            ck_assert_ptr_nonnull(want);
            ck_assert_ptr_nonnull(got);
            ck_assert_int_eq(sl_tensor_dtype(got), SL_FLOAT32);
            ck_assert_int_eq(sl_tensor_shape(got)[0], 3);
            ck_assert_msg(same_bytes(got, want), "p %g seed %llu", probs[pi],
                          (unsigned long long)seed);
            if (pi == 1) {
                /* flipped or not: the first value of the first plane */
                float plain = ((float)((uint8_t *)sl_tensor_data(in))[0] - (float)mean[0]) *
                              (float)(1.0 / std[0]);
                if (((float *)sl_tensor_data(got))[0] == plain)
                    kept++;
                else
                    flipped++;
            }
            sl_tensor_release(got);
            sl_tensor_release(want);
            sl_tensor_release(in);
        }
        sl_op_release(fused);
        sl_op_release(ops[0]);
    }
    ck_assert_int_gt(flipped, 10);
    ck_assert_int_gt(kept, 10);

    /* without the flip; a float32 or 1-channel input runs the separate ops,
     * with their values and messages */
    ck_assert_int_eq(sl__op_fuse(ops + 1, 2, &fused, &used), SL_OK);
    ck_assert_ptr_nonnull(fused);
    ck_assert_int_eq(used, 2);
    ck_assert_int_eq(fused->random, 0);
    seq[0] = fused;
    {
        sl_tensor *in = new_image(SL_FLOAT32, 3, 5, 4, 3);
        sl_tensor *want = run_chain(ops + 1, 2, in, 0, m1, sizeof m1, &rc);
        sl_tensor *got = run_chain(seq, 1, in, 0, m2, sizeof m2, &rc);
        ck_assert(want && got && same_bytes(got, want));
        sl_tensor_release(got);
        sl_tensor_release(want);
        sl_tensor_release(in);
        in = new_image(SL_UINT8, 3, 5, 4, 1);
        ck_assert_ptr_null(run_chain(ops + 1, 2, in, 0, m1, sizeof m1, &rc));
        ck_assert_ptr_null(run_chain(seq, 1, in, 0, m2, sizeof m2, &rc));
        ck_assert_int_eq(rc, SL_ESHAPE);
        ck_assert_str_eq(m1, m2);
        sl_tensor_release(in);
    }
    sl_op_release(fused);
    /* a flip and a Normalize without HWC2CHW stay apart */
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&ops[0], 0.5, NULL, 0), SL_OK);
    ck_assert_int_eq(sl__op_fuse(ops, 2, &fused, &used), SL_OK);
    ck_assert_ptr_null(fused);
    sl_op_release(ops[0]);
    sl_op_release(ops[1]);
    sl_op_release(ops[2]);
}
END_TEST

Suite *make_imagenet_ops_suite(void)
{
    Suite *s = suite_create("imagenet_ops");
    TCase *core = tu_tcase("core", 60);
    TCase *limits = tu_tcase("limits", 30);
    tcase_add_test(core, test_rrc_box_matches_torchvision);
    tcase_add_test(core, test_rrc_box_every_border);
    tcase_add_test(core, test_rrc_fallback);
    tcase_add_test(core, test_rrc_distribution);
    tcase_add_test(core, test_rrc_pixels_are_crop_then_resize);
    tcase_add_test(core, test_center_crop);
    tcase_add_test(core, test_resize_shorter_side);
    tcase_add_test(core, test_normalize_chw_fused);
    suite_add_tcase(s, core);
    tcase_add_test(limits, test_rrc_refusals);
    tcase_add_test(limits, test_center_crop_refusals);
    tcase_add_test(limits, test_resize_shorter_side_refusals);
    suite_add_tcase(s, limits);
    return s;
}

int main(void)
{
    return tu_run_suite_unless_tsan(make_imagenet_ops_suite,
                                    "the operators run on the calling thread only: nothing for "
                                    "ThreadSanitizer (the plain and ASan builds run this suite)");
}
