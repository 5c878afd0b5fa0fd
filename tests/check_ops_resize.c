/* check_ops_resize.c: Resize (bilinear as OpenCV computes it, nearest)
 * against plain double-precision loops, OpenCV's known values and its
 * refusals; part of check_ops (check_ops.h). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/op.h"
#include "sluice/status.h"
#include "sluice/tensor.h"
#include "core/pool.h"
#include "core/rng.h"
#include "ops/op_impl.h"
#include "ops/vision/resize_impl.h"
#include "tests/check_ops.h"
#include "tests/testutil.h"

/* --- resize ---------------------------------------------------------------- */

/* OpenCV INTER_LINEAR source coordinate along one axis, in double. */
static void ref_coord(int d, int in, int out, int *s0, int *s1, double *f)
{
    double s = (d + 0.5) * ((double)in / out) - 0.5;
    int i = (int)floor(s);
    double a = s - i;
    if (i < 0) {
        i = 0;
        a = 0;
    }
    if (i >= in - 1) {
        i = in - 1;
        a = 0;
    }
    *s0 = i;
    *s1 = i + 1 < in ? i + 1 : in - 1;
    *f = a;
}

/* out (oh, ow, c) = bilinear resize of in (ih, iw, c), all in double. */
static void ref_resize_linear(double *out, const double *in, int ih, int iw, int c, int oh,
                              int ow)
{
    for (int y = 0; y < oh; y++) {
        int y0, y1;
        double fy;
        ref_coord(y, ih, oh, &y0, &y1, &fy);
        for (int x = 0; x < ow; x++) {
            int x0, x1;
            double fx;
            ref_coord(x, iw, ow, &x0, &x1, &fx);
            for (int k = 0; k < c; k++) {
                const double *r0 = in + (size_t)y0 * iw * c, *r1 = in + (size_t)y1 * iw * c;
                double top = (1 - fx) * r0[x0 * c + k] + fx * r0[x1 * c + k];
                double bot = (1 - fx) * r1[x0 * c + k] + fx * r1[x1 * c + k];
                out[(y * ow + x) * c + k] = (1 - fy) * top + fy * bot;
            }
        }
    }
}

/* OpenCV INTER_NEAREST: floor(d * (1 / (out / in))), clamped. The scale is
 * derived exactly as OpenCV does, since floor is discontinuous. */
static int ref_nearest(int d, int in, int out)
{
    int s = (int)floor(d * (1.0 / ((double)out / in)));
    return s < in - 1 ? s : in - 1;
}

/* OpenCV's uint8 INTER_LINEAR, written out plainly: coordinates rounded to
 * float, weights to 11-bit fixed point (cvRound), x clamped by weight, y by
 * row, and the vertical blend truncated as cv::resize's SIMD kernel does. */
static void ref_cv_coord(int d, int in, int out, int clamp, int *s, int *w0, int *w1)
{
    float f = (float)((d + 0.5) * (1.0 / ((double)out / in)) - 0.5);
    int i = (int)floorf(f);
    f -= (float)i;
    if (clamp && i < 0) {
        i = 0;
        f = 0;
    }
    if (clamp && i >= in - 1) {
        i = in - 1;
        f = 0;
    }
    *s = i;
    *w0 = (int)lrintf((1.0f - f) * 2048.0f);
    *w1 = (int)lrintf(f * 2048.0f);
}

static int clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static void ref_cv_resize_u8(uint8_t *out, const uint8_t *in, int ih, int iw, int c, int oh,
                             int ow)
{
    for (int y = 0; y < oh; y++) {
        int sy, b0, b1;
        ref_cv_coord(y, ih, oh, 0, &sy, &b0, &b1);
        for (int x = 0; x < ow; x++) {
            int sx, a0, a1;
            ref_cv_coord(x, iw, ow, 1, &sx, &a0, &a1);
            for (int k = 0; k < c; k++) {
                int h[2];
                for (int r = 0; r < 2; r++) {
                    const uint8_t *row = in + (size_t)clampi(sy + r, 0, ih - 1) * iw * c;
                    h[r] = row[sx * c + k] * a0 + row[clampi(sx + 1, 0, iw - 1) * c + k] * a1;
                }
                int v = (((h[0] >> 4) * b0) >> 16) + (((h[1] >> 4) * b1) >> 16);
                out[((size_t)y * ow + x) * c + k] = (uint8_t)clampi((v + 2) >> 2, 0, 255);
            }
        }
    }
}

/* Compares a uint8 result with OpenCV's arithmetic exactly, and with the
 * exact (double) bilinear value to within 1 (the fixed point truncates). */
static void check_u8_resize(const uint8_t *got, const uint8_t *in, const double *ref, int ih,
                            int iw, int c, int oh, int ow)
{
    size_t n = (size_t)oh * ow * c;
    uint8_t *cv = malloc(n);
    ck_assert_ptr_nonnull(cv);
    ref_cv_resize_u8(cv, in, ih, iw, c, oh, ow);
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(got[i] == cv[i], "pixel %zu: got %d, OpenCV arithmetic gives %d", i, got[i],
                      cv[i]);
        ck_assert_msg(fabs(got[i] - ref[i]) <= 1.0, "pixel %zu: got %d, exact %.6f", i, got[i],
                      ref[i]);
    }
    free(cv);
}

/* Resizes a random (ih, iw[, c]) image of dtype and checks it. */
static void check_resize_linear(sl_dtype dtype, int ndim, int ih, int iw, int c, int oh, int ow,
                                uint32_t seed)
{
    sl_op *op;
    sl_tensor *in = new_tensor(dtype, ndim, ih, iw, c), *out;
    double *din, *ref;
    char msg[256];
    size_t n = (size_t)oh * ow * c;

    if (dtype == SL_UINT8)
        fill_u8(in, seed);
    else
        fill_f32(in, seed);
    ck_assert_int_eq(sl_op_resize_new(&op, oh, ow, SL_INTER_LINEAR, NULL, 0), SL_OK);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_OK);
    check_shape(out, dtype, ndim, oh, ow, c);
    din = to_double(in);
    ref = malloc(n * sizeof *ref);
    ck_assert_ptr_nonnull(ref);
    ref_resize_linear(ref, din, ih, iw, c, oh, ow);
    if (dtype == SL_UINT8) {
        check_u8_resize(sl_tensor_data(out), sl_tensor_data(in), ref, ih, iw, c, oh, ow);
    } else {
        const float *got = sl_tensor_data(out);
        for (size_t i = 0; i < n; i++)
            ck_assert_msg(fabs(got[i] - ref[i]) <= TOL, "element %zu: got %.7f, want %.7f", i,
                          got[i], ref[i]);
    }
    free(ref);
    free(din);
    sl_tensor_release(out);
    sl_tensor_release(in);
    sl_op_release(op);
}

START_TEST(test_resize_linear_28_to_32)
{
    /* The MNIST case, against OpenCV's arithmetic. */
    sl_op *op;
    sl_tensor *in = new_tensor(SL_UINT8, 3, 28, 28, 1), *out;
    double *din, ref[32 * 32];

    fill_u8(in, 7);
    ck_assert_int_eq(sl_op_resize_new(&op, 32, 32, SL_INTER_LINEAR, NULL, 0), SL_OK);
    ck_assert_str_eq(sl_op_name(op), "resize");
    ck_assert_int_eq(apply(op, in, &out, 0, NULL, 0), SL_OK);
    check_shape(out, SL_UINT8, 3, 32, 32, 1);
    din = to_double(in);
    ref_resize_linear(ref, din, 28, 28, 1, 32, 32);
    check_u8_resize(sl_tensor_data(out), sl_tensor_data(in), ref, 28, 28, 1, 32, 32);
    free(din);
    sl_tensor_release(out);
    sl_tensor_release(in);
    sl_op_release(op);
}
END_TEST

START_TEST(test_resize_linear_opencv_values)
{
    /* Known values: these outputs were produced by OpenCV 4.6's cv::resize
     * (INTER_LINEAR), the function MindSpore's Resize calls. */
    static const uint8_t want_gray[9 * 4] = {
        25, 89, 154, 219, 26, 90, 155, 220, 28, 92, 157, 222, 29, 94, 159, 223, 31, 96, 160, 225,
        32, 97, 162, 227, 34, 99, 164, 228, 36, 100, 165, 230, 37, 102, 166, 231};
    static const uint8_t want_rgb[3 * 5 * 3] = {
        50, 103, 96, 138, 178, 82, 158, 83, 115, 148, 137, 178, 70, 85, 138,
        148, 201, 139, 109, 123, 138, 172, 161, 86, 145, 108, 123, 182, 107, 45,
        76, 108, 161, 165, 68, 108, 78, 131, 163, 141, 164, 67, 101, 150, 143};
    sl_tensor *gray = new_tensor(SL_UINT8, 2, 5, 7, 0), *rgb = new_tensor(SL_UINT8, 3, 4, 6, 3);
    sl_tensor *out;
    sl_op *op;
    uint8_t *p = sl_tensor_data(gray);
    for (int i = 0; i < 5 * 7; i++)
        p[i] = (uint8_t)((i * 37 + 11) % 256);
    p = sl_tensor_data(rgb);
    for (int i = 0; i < 4 * 6 * 3; i++)
        p[i] = (uint8_t)((i * 53 + 7) % 256);

    ck_assert_int_eq(sl_op_resize_new(&op, 9, 4, SL_INTER_LINEAR, NULL, 0), SL_OK);
    ck_assert_int_eq(apply(op, gray, &out, 0, NULL, 0), SL_OK);
    check_shape(out, SL_UINT8, 2, 9, 4, 0);
    ck_assert_mem_eq(sl_tensor_data(out), want_gray, sizeof want_gray);
    sl_tensor_release(out);
    sl_op_release(op);

    ck_assert_int_eq(sl_op_resize_new(&op, 3, 5, SL_INTER_LINEAR, NULL, 0), SL_OK);
    ck_assert_int_eq(apply(op, rgb, &out, 0, NULL, 0), SL_OK);
    check_shape(out, SL_UINT8, 3, 3, 5, 3);
    ck_assert_mem_eq(sl_tensor_data(out), want_rgb, sizeof want_rgb);
    sl_tensor_release(out);
    sl_op_release(op);
    sl_tensor_release(gray);
    sl_tensor_release(rgb);
}
END_TEST

START_TEST(test_resize_linear_u8_shapes)
{
    check_resize_linear(SL_UINT8, 3, 28, 28, 3, 32, 32, 1);
    check_resize_linear(SL_UINT8, 2, 28, 28, 1, 32, 32, 2);
    check_resize_linear(SL_UINT8, 3, 37, 23, 3, 10, 15, 3);   /* down */
    check_resize_linear(SL_UINT8, 3, 5, 7, 2, 13, 11, 4);     /* up */
    check_resize_linear(SL_UINT8, 2, 100, 3, 1, 7, 50, 5);    /* mixed */
    check_resize_linear(SL_UINT8, 3, 1, 1, 3, 4, 5, 6);       /* single pixel */
    check_resize_linear(SL_UINT8, 3, 64, 64, 4, 17, 31, 7);   /* C = 4 */
    check_resize_linear(SL_UINT8, 3, 20, 700, 1, 9, 600, 8);  /* wide: scratch off the stack */
    check_resize_linear(SL_UINT8, 3, 30, 40, 3, 30, 100, 9);  /* one axis unchanged */
}
END_TEST

START_TEST(test_resize_linear_f32_shapes)
{
    check_resize_linear(SL_FLOAT32, 3, 28, 28, 1, 32, 32, 1);
    check_resize_linear(SL_FLOAT32, 2, 37, 23, 1, 10, 15, 2);
    check_resize_linear(SL_FLOAT32, 3, 5, 7, 3, 13, 11, 3);
    check_resize_linear(SL_FLOAT32, 3, 9, 300, 2, 4, 400, 4);
    check_resize_linear(SL_FLOAT32, 3, 2, 2, 1, 1, 1, 5);
}
END_TEST

/* The LeNet chain: Rescale(1/255, 0) then Rescale(1/0.3081, -0.1307/0.3081),
 * each rounded to float32 as the separate ops store it. */
static sl__rescale_chain lenet_chain(void)
{
    sl__rescale_chain ch = {.n = 2};
    ch.scale[0] = (float)(1.0 / 255.0);
    ch.shift[0] = 0.0f;
    ch.scale[1] = (float)(1.0 / 0.3081);
    ch.shift[1] = (float)(-0.1307 / 0.3081);
    return ch;
}

/* Runs every supported resize path on one random image and compares each
 * with OpenCV's arithmetic (ref_cv_resize_u8), byte for byte, both as uint8
 * and through chain into float32 (bit for bit with the chain applied here
 * one step at a time, as separate Rescale ops do). */
static void check_resize_paths(int ih, int iw, int c, int oh, int ow,
                               const sl__rescale_chain *chain, sl_rng *rng)
{
    size_t n_in = (size_t)ih * iw * c, n = (size_t)oh * ow * c;
    uint8_t *in = malloc(n_in), *want = malloc(n), *got = malloc(n);
    float *want_f = malloc(n * sizeof *want_f), *got_f = malloc(n * sizeof *got_f);
    ck_assert(in && want && got && want_f && got_f);
    for (size_t i = 0; i < n_in; i++)
        in[i] = (uint8_t)sl__rng_below(rng, 256);
    ref_cv_resize_u8(want, in, ih, iw, c, oh, ow);
    for (size_t i = 0; i < n; i++) {
        float v = (float)want[i];
        for (size_t k = 0; k < chain->n; k++)
            v = v * chain->scale[k] + chain->shift[k];
        want_f[i] = v;
    }
    /* each path two rows at a time, and with room for the whole image */
    for (int p = 0; p < 2 * SL__RESIZE_PATH_COUNT; p++) {
        sl__resize_path path = (sl__resize_path)(p / 2);
        int whole = p % 2;
        if (!sl__resize_path_supported(path))
            continue;
        memset(got, 0xAB, n);
        ck_assert_int_eq(sl__resize_u8(path, got, in, ih, iw, c, oh, ow, NULL, whole), SL_OK);
        for (size_t i = 0; i < n; i++)
            ck_assert_msg(got[i] == want[i],
                          "path %d (whole %d), (%d, %d, %d) -> (%d, %d): element %zu is %d, "
                          "want %d", (int)path, whole, ih, iw, c, oh, ow, i, got[i], want[i]);
        memset(got_f, 0xAB, n * sizeof *got_f);
        ck_assert_int_eq(sl__resize_u8(path, got_f, in, ih, iw, c, oh, ow, chain, whole), SL_OK);
        ck_assert_msg(memcmp(got_f, want_f, n * sizeof *got_f) == 0,
                      "path %d (whole %d), (%d, %d, %d) -> (%d, %d) through %zu rescales differs",
                      (int)path, whole, ih, iw, c, oh, ow, chain->n);
    }
    free(got_f);
    free(want_f);
    free(got);
    free(want);
    free(in);
}

START_TEST(test_resize_paths)
{
    /* Fixed cases: MNIST, widths whose rows leave 1..7 elements after the
     * blocks of 8, strong downscales (the vector path falls back), rows
     * under 16 bytes, one pixel, and channels 1 to 4. */
    static const int cases[][5] = {
        {28, 28, 1, 32, 32}, {28, 28, 3, 32, 32}, {28, 28, 1, 31, 33}, {28, 28, 1, 29, 39},
        {16, 16, 1, 17, 17}, {20, 20, 3, 21, 21}, {37, 23, 3, 10, 15}, {5, 7, 2, 13, 11},
        {100, 3, 1, 7, 50}, {1, 1, 3, 4, 5}, {64, 64, 4, 17, 31}, {20, 700, 1, 9, 600},
        {30, 40, 3, 30, 100}, {9, 200, 1, 9, 30}, {3, 15, 1, 5, 40}, {3, 16, 1, 5, 40},
        {2, 6, 3, 4, 9}, {40, 40, 1, 20, 20}, {40, 40, 3, 27, 27}, {6, 1, 1, 9, 19},
    };
    sl__rescale_chain lenet = lenet_chain(), one = {.n = 1}, many = {.n = SL__RESCALE_FUSE_MAX};
    sl_rng rng;
    sl__rng_seed(&rng, 11, 0, 0, 0);
    one.scale[0] = -0.75f;
    one.shift[0] = 3.25f;
    for (size_t k = 0; k < many.n; k++) {
        many.scale[k] = 0.5f + 0.37f * (float)k;
        many.shift[k] = -1.0f + 0.3f * (float)k;
    }
    ck_assert(sl__resize_path_supported(SL__RESIZE_PATH_C));
    ck_assert(sl__resize_path_supported(sl__resize_best_path()));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int *t = cases[i];
        check_resize_paths(t[0], t[1], t[2], t[3], t[4], &lenet, &rng);
        check_resize_paths(t[0], t[1], t[2], t[3], t[4], &one, &rng);
        check_resize_paths(t[0], t[1], t[2], t[3], t[4], &many, &rng);
    }
    /* Random sizes, up and down, 1 to 4 channels. */
    for (int i = 0; i < 300; i++) {
        int ih = 1 + (int)sl__rng_below(&rng, 48), iw = 1 + (int)sl__rng_below(&rng, 48);
        int oh = 1 + (int)sl__rng_below(&rng, 64), ow = 1 + (int)sl__rng_below(&rng, 64);
        int c = 1 + (int)sl__rng_below(&rng, 4);
        check_resize_paths(ih, iw, c, oh, ow, i % 2 ? &lenet : &one, &rng);
    }
}
END_TEST

/* RGB shrinks beyond what the 16-byte gather holds: the plan must take the
 * pixel pass (so the cases test it), and every path must give OpenCV's
 * bytes, on odd sizes whose rows end in the one-by-one tail. */
START_TEST(test_resize_rgb_shrink_paths)
{
    /* 2x, 3.5x, 8x and uneven factors; widths leaving 1..7 pixels after
     * the groups of 8; one row or column of output (the borders alone) */
    static const int cases[][4] = {
        {33, 67, 17, 33},  {45, 91, 13, 26}, {71, 113, 9, 14}, {17, 401, 9, 200},
        {24, 1001, 3, 125}, {9, 129, 1, 16}, {35, 35, 35, 10},  {7, 333, 7, 41},
        {64, 199, 31, 57}, {5, 251, 2, 83},
    };
    sl__rescale_chain lenet = lenet_chain();
    sl_rng rng;
    sl__rng_seed(&rng, 12, 0, 0, 0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int *t = cases[i];
        sl__resize_plan *p = sl__resize_plan_new(t[0], t[1], 3, t[2], t[3]);
        ck_assert_ptr_nonnull(p);
        ck_assert_msg(!p->gather_ok && p->rgb_pix >= 8,
                      "(%d, %d) -> (%d, %d): gather_ok %d, rgb_pix %zu", t[0], t[1], t[2], t[3],
                      p->gather_ok, p->rgb_pix);
        free(p);
        check_resize_paths(t[0], t[1], 3, t[2], t[3], &lenet, &rng);
    }
}
END_TEST

/* A crop's plan (sl__resize_plan_at) that samples the source's first and
 * last columns and rows exactly (right weight 0 at the last, whose right
 * pixel is itself): every path gives the plain path's bytes. */
START_TEST(test_resize_rgb_shrink_borders)
{
    enum { IH = 23, IW = 157, OH = 7, OW = 37 };
    double ys[OH], xs[OW];
    uint8_t in[IH * IW * 3], want[OH * OW * 3], got[OH * OW * 3];
    size_t scratch_size = sl__resize_u8_scratch_size(OW * 3);
    void *scratch = malloc(scratch_size);
    sl__resize_plan *p;
    sl_rng rng;
    sl__rng_seed(&rng, 13, 0, 0, 0);
    for (size_t i = 0; i < sizeof in; i++)
        in[i] = (uint8_t)sl__rng_below(&rng, 256);
    for (int y = 0; y < OH; y++)
        ys[y] = (double)(IH - 1) * y / (OH - 1);
    for (int x = 0; x < OW; x++)
        xs[x] = (double)(IW - 1) * x / (OW - 1);
    p = sl__resize_plan_at(IH, IW, 3, OH, OW, ys, xs);
    ck_assert(p && scratch);
    ck_assert_int_eq(p->gather_ok, 0);
    ck_assert_uint_eq(p->rgb_pix, 32); /* the last group of 8 ends at the right border */
    sl__resize_u8_rows(SL__RESIZE_PATH_C, want, in, p, OH, OW, NULL, scratch, scratch_size);
    for (int path = 1; path < SL__RESIZE_PATH_COUNT; path++) {
        if (!sl__resize_path_supported((sl__resize_path)path))
            continue;
        memset(got, 0xAB, sizeof got);
        sl__resize_u8_rows((sl__resize_path)path, got, in, p, OH, OW, NULL, scratch,
                           scratch_size);
        ck_assert_msg(memcmp(got, want, sizeof got) == 0, "path %d differs", path);
    }
    free(p);
    free(scratch);
}
END_TEST

/* Runs ops one after another on a copy of in, as a map without fusion
 * would; returns the status, the result in *out and the message in msg. */
static int run_each(sl_op *const *ops, size_t n, const sl_tensor *in, sl_tensor **out,
                    sl_pool *pool, char *msg, size_t len)
{
    sl__error err;
    sl_tensor *t = clone(in);
    int rc = SL_OK;
    sl__err_clear(&err);
    for (size_t k = 0; k < n && rc == SL_OK; k++)
        rc = run_owned(ops[k], t, &t, 0, pool, &err);
    *out = rc == SL_OK ? t : NULL;
    snprintf(msg, len, "%s", err.msg);
    return rc;
}

/* The fused op against the separate ops on one input: same status, same
 * message, same dtype, shape and bytes. */
static void check_fused_same(sl_op *const *ops, size_t n, const sl_tensor *in, sl_pool *pool)
{
    sl_op *fused;
    size_t used;
    sl_tensor *want, *got;
    char want_msg[sizeof ((sl__error *)0)->msg], got_msg[sizeof want_msg];
    int want_rc, got_rc;
    ck_assert_int_eq(sl__op_fuse(ops, n, &fused, &used), SL_OK);
    ck_assert_ptr_nonnull(fused);
    ck_assert_uint_eq(used, n);
    want_rc = run_each(ops, n, in, &want, pool, want_msg, sizeof want_msg);
    got_rc = run_each(&fused, 1, in, &got, pool, got_msg, sizeof got_msg);
    ck_assert_int_eq(got_rc, want_rc);
    if (want_rc != SL_OK) {
        ck_assert_str_eq(got_msg, want_msg);
    } else {
        ck_assert_int_eq(sl_tensor_dtype(got), sl_tensor_dtype(want));
        ck_assert(sl__shape_equal(sl_tensor_ndim(got), sl_tensor_shape(got),
                                  sl_tensor_ndim(want), sl_tensor_shape(want)));
        ck_assert(same_bytes(got, want));
    }
    sl_tensor_release(got);
    sl_tensor_release(want);
    sl_op_release(fused);
}

START_TEST(test_resize_rescale_fused)
{
    sl_op *resize, *near, *scale[SL__RESCALE_FUSE_MAX + 1], *hwc, *ops[SL__RESCALE_FUSE_MAX + 2];
    sl_op *fused;
    size_t used;
    sl_pool *pool = sl__pool_new();
    sl_rng rng;
    sl__rng_seed(&rng, 5, 0, 0, 0);
    ck_assert_ptr_nonnull(pool);
    ck_assert_int_eq(sl_op_resize_new(&resize, 32, 32, SL_INTER_LINEAR, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_resize_new(&near, 32, 32, SL_INTER_NEAREST, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_hwc2chw_new(&hwc, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_rescale_new(&scale[0], 1.0 / 255.0, 0.0, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_rescale_new(&scale[1], 1.0 / 0.3081, -0.1307 / 0.3081, NULL, 0), SL_OK);
    for (int k = 2; k <= SL__RESCALE_FUSE_MAX; k++)
        ck_assert_int_eq(sl_op_rescale_new(&scale[k], 0.5 + 0.1 * k, -0.25 * k, NULL, 0), SL_OK);

    /* What fuses: a bilinear resize and up to SL__RESCALE_FUSE_MAX
     * rescales, and nothing else. */
    ops[0] = resize;
    ops[1] = scale[0];
    ops[2] = scale[1];
    ops[3] = hwc;
    ck_assert_int_eq(sl__op_fuse(ops, 4, &fused, &used), SL_OK);
    ck_assert_ptr_nonnull(fused);
    ck_assert_uint_eq(used, 3);
    sl_op_release(fused);
    ck_assert_int_eq(sl__op_fuse(ops, 1, &fused, &used), SL_OK);
    ck_assert(fused == NULL && used == 1);
    ck_assert_int_eq(sl__op_fuse(ops + 1, 3, &fused, &used), SL_OK); /* rescale first */
    ck_assert(fused == NULL && used == 1);
    ops[1] = hwc;
    ck_assert_int_eq(sl__op_fuse(ops, 2, &fused, &used), SL_OK);
    ck_assert(fused == NULL && used == 1);
    ops[0] = near;
    ops[1] = scale[0];
    ck_assert_int_eq(sl__op_fuse(ops, 2, &fused, &used), SL_OK);
    ck_assert(fused == NULL && used == 1);
    ops[0] = resize;
    for (int k = 0; k <= SL__RESCALE_FUSE_MAX; k++)
        ops[1 + k] = scale[k];
    ck_assert_int_eq(sl__op_fuse(ops, SL__RESCALE_FUSE_MAX + 2, &fused, &used), SL_OK);
    ck_assert_uint_eq(used, SL__RESCALE_FUSE_MAX + 1);
    sl_op_release(fused);

    /* Same bytes as the separate ops: random uint8 images of many sizes,
     * (H, W) and (H, W, C), through 1, 2 and SL__RESCALE_FUSE_MAX rescales. */
    for (int i = 0; i < 200; i++) {
        int ih = 1 + (int)sl__rng_below(&rng, 70), iw = 1 + (int)sl__rng_below(&rng, 70);
        int c = 1 + (int)sl__rng_below(&rng, 4), ndim = c == 1 && i % 2 ? 2 : 3;
        size_t n = i % 3 == 0 ? 1 : i % 3 == 1 ? 2 : SL__RESCALE_FUSE_MAX;
        sl_tensor *in = new_tensor(SL_UINT8, ndim, ih, iw, c);
        fill_u8(in, (uint32_t)i);
        ops[0] = resize;
        for (size_t k = 0; k < n; k++)
            ops[1 + k] = scale[k];
        check_fused_same(ops, 1 + n, in, i % 4 ? pool : NULL);
        sl_tensor_release(in);
    }
    /* Wide rows: scratch off the stack. */
    {
        sl_op *wide;
        sl_tensor *in = new_tensor(SL_UINT8, 3, 9, 500, 3);
        fill_u8(in, 77);
        ck_assert_int_eq(sl_op_resize_new(&wide, 7, 700, SL_INTER_LINEAR, NULL, 0), SL_OK);
        ops[0] = wide;
        ops[1] = scale[0];
        ops[2] = scale[1];
        check_fused_same(ops, 3, in, pool);
        check_fused_same(ops, 3, in, NULL);
        sl_op_release(wide);
        sl_tensor_release(in);
    }
    /* What runs the separate ops: float32 images, equal sizes; and the
     * refusals, whose messages must be those of the separate ops. */
    ops[0] = resize;
    ops[1] = scale[0];
    ops[2] = scale[1];
    {
        sl_tensor *f = new_tensor(SL_FLOAT32, 3, 28, 28, 1);
        sl_tensor *same = new_tensor(SL_UINT8, 3, 32, 32, 3);
        sl_tensor *flat = new_tensor(SL_UINT8, 1, 10, 0, 0);
        sl_tensor *i32 = new_tensor(SL_INT32, 3, 28, 28, 1);
        sl_tensor *empty = new_tensor(SL_UINT8, 3, 0, 5, 1);
        fill_f32(f, 3);
        fill_u8(same, 4);
        check_fused_same(ops, 3, f, pool);
        check_fused_same(ops, 3, same, pool);
        check_fused_same(ops, 3, flat, pool);
        check_fused_same(ops, 3, i32, pool);
        check_fused_same(ops, 3, empty, pool);
        sl_tensor_release(empty);
        sl_tensor_release(i32);
        sl_tensor_release(flat);
        sl_tensor_release(same);
        sl_tensor_release(f);
    }
    /* The fused op's spec is that of the ops in turn. */
    {
        sl_tensor_spec si = spec_of(SL_UINT8, 3, 28, 28, 1), so;
        ck_assert_int_eq(sl__op_fuse(ops, 3, &fused, &used), SL_OK);
        ck_assert_int_eq(sl_op_infer(fused, &si, &so, NULL, 0), SL_OK);
        ck_assert_int_eq(so.dtype, SL_FLOAT32);
        ck_assert(so.ndim == 3 && so.shape[0] == 32 && so.shape[1] == 32 && so.shape[2] == 1);
        si.ndim = 1;
        ck_assert_int_eq(sl_op_infer(fused, &si, &so, NULL, 0), SL_ESHAPE);
        sl_op_release(fused);
    }
    for (int k = 0; k <= SL__RESCALE_FUSE_MAX; k++)
        sl_op_release(scale[k]);
    sl_op_release(hwc);
    sl_op_release(near);
    sl_op_release(resize);
    sl__pool_release(pool);
}
END_TEST

START_TEST(test_resize_linear_known)
{
    /* [[0, 1], [2, 3]] to 4x4: along x the source coordinates are -0.25
     * (clamped to 0), 0.25, 0.75, 1.25 (clamped to 1), giving 0, .25, .75, 1;
     * along y the same times 2. */
    static const float want_col[4] = {0.0f, 0.25f, 0.75f, 1.0f};
    sl_op *op;
    sl_tensor *in = new_tensor(SL_FLOAT32, 2, 2, 2, 0), *out;
    float *p = sl_tensor_data(in);
    const float *got;
    p[0] = 0;
    p[1] = 1;
    p[2] = 2;
    p[3] = 3;
    ck_assert_int_eq(sl_op_resize_new(&op, 4, 4, SL_INTER_LINEAR, NULL, 0), SL_OK);
    ck_assert_int_eq(apply(op, in, &out, 0, NULL, 0), SL_OK);
    check_shape(out, SL_FLOAT32, 2, 4, 4, 0);
    got = sl_tensor_data(out);
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++)
            ck_assert_double_eq_tol(got[y * 4 + x], want_col[x] + 2 * want_col[y], TOL);
    sl_tensor_release(out);
    sl_tensor_release(in);
    sl_op_release(op);
}
END_TEST

START_TEST(test_resize_nearest)
{
    static const int sizes[][4] = {{28, 28, 32, 32}, {10, 9, 3, 4}, {3, 3, 9, 9}, {7, 5, 7, 12}};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int ih = sizes[s][0], iw = sizes[s][1], oh = sizes[s][2], ow = sizes[s][3];
        for (int u8 = 0; u8 <= 1; u8++) {
            sl_dtype dt = u8 ? SL_UINT8 : SL_FLOAT32;
            sl_tensor *in = new_tensor(dt, 3, ih, iw, 3), *out;
            sl_op *op;
            double *din, *dout;
            if (u8)
                fill_u8(in, (uint32_t)s);
            else
                fill_f32(in, (uint32_t)s);
            ck_assert_int_eq(sl_op_resize_new(&op, oh, ow, SL_INTER_NEAREST, NULL, 0), SL_OK);
            ck_assert_int_eq(apply(op, in, &out, 0, NULL, 0), SL_OK);
            check_shape(out, dt, 3, oh, ow, 3);
            din = to_double(in);
            dout = to_double(out);
            for (int y = 0; y < oh; y++)
                for (int x = 0; x < ow; x++)
                    for (int k = 0; k < 3; k++) {
                        int sy = ref_nearest(y, ih, oh), sx = ref_nearest(x, iw, ow);
                        ck_assert(dout[(y * ow + x) * 3 + k] == din[(sy * iw + sx) * 3 + k]);
                    }
            free(din);
            free(dout);
            sl_tensor_release(out);
            sl_tensor_release(in);
            sl_op_release(op);
        }
    }
}
END_TEST

START_TEST(test_resize_same_size_and_pool)
{
    sl_op *lin, *near;
    sl_tensor *in = new_tensor(SL_UINT8, 3, 6, 5, 3), *out, *copy;
    sl_pool *pool = sl__pool_new();
    sl__error err;
    fill_u8(in, 3);
    copy = clone(in);
    ck_assert_int_eq(sl_op_resize_new(&lin, 6, 5, SL_INTER_LINEAR, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_resize_new(&near, 6, 5, SL_INTER_NEAREST, NULL, 0), SL_OK);
    ck_assert_int_eq(apply(lin, in, &out, 0, NULL, 0), SL_OK);
    ck_assert(same_bytes(out, copy));
    sl_tensor_release(out);
    ck_assert_int_eq(apply(near, in, &out, 0, NULL, 0), SL_OK);
    ck_assert(same_bytes(out, copy));
    sl_tensor_release(out);
    ck_assert_int_eq(sl_tensor_refcount(in), 1);
    sl_op_release(lin);
    sl_op_release(near);

    /* Through a pool, wide enough that the scratch comes from the pool. */
    ck_assert_int_eq(sl_op_resize_new(&lin, 3, 900, SL_INTER_LINEAR, NULL, 0), SL_OK);
    ck_assert_int_eq(run_owned(lin, in, &out, 0, pool, &err), SL_OK);
    check_shape(out, SL_UINT8, 3, 3, 900, 3);
    sl_tensor_release(out);
    sl_op_release(lin);
    sl_tensor_release(copy);
    sl__pool_release(pool);
}
END_TEST

/* Every built-in constructor that refuses an argument says which, in err:
 * the op's name and the value refused; *out is NULL. A short buffer gets a
 * cut, terminated message; NULL, 0 is allowed (the tests above). */
static void assert_refused(int rc, sl_op *const *op, const char *err, const char *name,
                           const char *value)
{
    ck_assert_int_eq(rc, SL_EINVAL);
    ck_assert_ptr_null(*op); /* read after the call (op is its out-parameter) */
    ck_assert_msg(strncmp(err, name, strlen(name)) == 0, "'%s' does not start with '%s'", err,
                  name);
    ck_assert_msg(strstr(err, value) != NULL, "'%s' does not name '%s'", err, value);
}

START_TEST(test_constructor_messages)
{
    static const double mean[1] = {0.5}, sd[1] = {0.0};
    sl_op *op = (sl_op *)0x1;
    char err[256], small[8];

    assert_refused(sl_op_decode_new(&op, 2, err, sizeof err), &op, err, "decode:", "rgb");
    assert_refused(sl_op_decode_new_limited(&op, 1, 0, err, sizeof err), &op, err, "decode:",
                   "max_pixels");
    assert_refused(sl_op_resize_new(&op, 0, 32, SL_INTER_LINEAR, err, sizeof err), &op, err,
                   "resize:", "(0, 32)");
    assert_refused(sl_op_resize_new(&op, 32, 32, (sl_interp)7, err, sizeof err), &op, err,
                   "resize:", "interp");
    assert_refused(sl_op_rescale_new(&op, NAN, 0, err, sizeof err), &op, err, "rescale:", "nan");
    assert_refused(sl_op_normalize_new(&op, mean, sd, 1, err, sizeof err), &op, err,
                   "normalize:", "std[0]");
    assert_refused(sl_op_normalize_new(&op, mean, sd, 0, err, sizeof err), &op, err,
                   "normalize:", "channels");
    assert_refused(sl_op_type_cast_new(&op, SL_DTYPE_COUNT, err, sizeof err), &op, err,
                   "type_cast:", "dtype");
    assert_refused(sl_op_random_crop_new(&op, 5, 5, -1, err, sizeof err), &op, err,
                   "random_crop:", "padding");
    assert_refused(sl_op_random_horizontal_flip_new(&op, 1.5, err, sizeof err), &op, err,
                   "random_horizontal_flip:", "1.5");
    assert_refused(sl_op_one_hot_new(&op, -3, err, sizeof err), &op, err, "one_hot:", "-3");
    /* a buffer too short for the message */
    ck_assert_int_eq(sl_op_one_hot_new(&op, -3, small, sizeof small), SL_EINVAL);
    ck_assert_str_eq(small, "one_hot");
    /* success leaves err alone */
    strcpy(err, "untouched");
    ck_assert_int_eq(sl_op_hwc2chw_new(&op, err, sizeof err), SL_OK);
    ck_assert_str_eq(err, "untouched");
    sl_op_release(op);
}
END_TEST

START_TEST(test_resize_refusals)
{
    sl_op *op = (sl_op *)0x1;
    sl_tensor *in, *out;
    sl_tensor_spec si, so;
    char msg[256];

    ck_assert_int_eq(sl_op_resize_new(&op, 0, 32, SL_INTER_LINEAR, NULL, 0), SL_EINVAL);
    ck_assert_ptr_null(op);
    ck_assert_int_eq(sl_op_resize_new(&op, 32, -1, SL_INTER_LINEAR, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_resize_new(&op, 32, 32, (sl_interp)7, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_resize_new(&op, 32, 32, SL_INTER_LINEAR, NULL, 0), SL_OK);

    /* Rank. */
    in = new_tensor(SL_UINT8, 1, 10, 0, 0);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "resize") && strstr(msg, "(10,)"), "%s", msg);
    ck_assert_int_eq(sl_tensor_refcount(in), 1);
    sl_tensor_release(in);
    /* Dtype. */
    in = new_tensor(SL_FLOAT64, 3, 4, 4, 1);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "float64") && strstr(msg, "(4, 4, 1)"), "%s", msg);
    sl_tensor_release(in);
    in = new_tensor(SL_INT32, 2, 4, 4, 0);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    sl_tensor_release(in);
    /* Empty. */
    in = new_tensor(SL_UINT8, 3, 0, 4, 1);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    sl_tensor_release(in);

    /* Infer: unknown dims pass through, wrong rank is refused. */
    si = spec_of(SL_UINT8, 3, -1, -1, 3);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, msg, sizeof msg), SL_OK);
    ck_assert_int_eq(so.dtype, SL_UINT8);
    ck_assert_int_eq(so.ndim, 3);
    ck_assert_int_eq(so.shape[0], 32);
    ck_assert_int_eq(so.shape[1], 32);
    ck_assert_int_eq(so.shape[2], 3);
    si = spec_of(SL_FLOAT32, 3, 28, 28, -1);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, msg, sizeof msg), SL_OK);
    ck_assert_int_eq(so.shape[2], -1);
    si = spec_of(SL_FLOAT64, 4, 2, 3, 4);
    si.shape[3] = 5;
    ck_assert_int_eq(sl_op_infer(op, &si, &so, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "resize: expected an image of shape (H, W, C) or (H, W), got "
                              "float64 (2, 3, 4, 5)"),
                  "%s", msg);
    si = spec_of(SL_INT64, 2, 3, 3, 0);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, msg, sizeof msg), SL_ESHAPE);
    sl_op_release(op);
}
END_TEST

void ops_add_resize_tests(TCase *core, TCase *limits)
{
    tcase_add_test(core, test_resize_linear_28_to_32);
    tcase_add_test(core, test_resize_linear_opencv_values);
    tcase_add_test(core, test_resize_linear_u8_shapes);
    tcase_add_test(core, test_resize_linear_f32_shapes);
    tcase_add_test(core, test_resize_linear_known);
    tcase_add_test(core, test_resize_paths);
    tcase_add_test(core, test_resize_rgb_shrink_paths);
    tcase_add_test(core, test_resize_rgb_shrink_borders);
    tcase_add_test(core, test_resize_rescale_fused);
    tcase_add_test(core, test_resize_nearest);
    tcase_add_test(core, test_resize_same_size_and_pool);
    tcase_add_test(limits, test_resize_refusals);
    tcase_add_test(limits, test_constructor_messages);
}
