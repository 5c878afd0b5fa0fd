/* check_ops.c: the vision operators against independent references: plain
 * double-precision loops written here (OpenCV's resize formulas, padding then
 * cropping, mirroring, ...), known values, and libjpeg called directly for
 * decode. Also every refusal: wrong rank or dtype, bad constructor arguments,
 * labels out of range, bytes that are not a JPEG or a JPEG cut short. */
#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jpeglib.h>

#include "tests/time_limit.h"
#include "sluice/op.h"
#include "sluice/status.h"
#include "sluice/tensor.h"
#include "core/pool.h"
#include "core/rng.h"
#include "ops/op_impl.h"
#include "ops/vision/resize_impl.h"
#include "tests/testutil.h"

Suite *make_ops_suite(void);

/* Float results must match to 1e-5, relative above magnitude 1 (float32
 * itself has only 24 bits). */
#define TOL 1e-5

static int close_enough(double got, double want)
{
    return fabs(got - want) <= TOL * fmax(1.0, fabs(want));
}

/* --- helpers -------------------------------------------------------------- */

static sl_tensor *new_tensor(sl_dtype dtype, int ndim, int64_t d0, int64_t d1, int64_t d2)
{
    int64_t shape[3] = {d0, d1, d2};
    sl_tensor *t = NULL;
    ck_assert_int_eq(sl_tensor_new(&t, dtype, ndim, shape), SL_OK);
    return t;
}

/* Deterministic pseudo-random bytes / floats in [0, 1) for inputs. */
static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static void fill_u8(sl_tensor *t, uint32_t seed)
{
    uint8_t *p = sl_tensor_data(t);
    for (size_t i = 0; i < sl_tensor_numel(t); i++)
        p[i] = (uint8_t)lcg(&seed);
}

static void fill_f32(sl_tensor *t, uint32_t seed)
{
    float *p = sl_tensor_data(t);
    for (size_t i = 0; i < sl_tensor_numel(t); i++)
        p[i] = (float)(lcg(&seed) & 0xffff) / 65536.0f;
}

/* Runs op through the public entry point; in is left untouched. */
static int apply(const sl_op *op, const sl_tensor *in, sl_tensor **out, uint64_t seed,
                 char *msg, size_t len)
{
    *out = (sl_tensor *)0x1; /* must be overwritten, with NULL on failure */
    int rc = sl_op_apply(op, in, out, seed, msg, len);
    if (rc != SL_OK)
        ck_assert_ptr_null(*out);
    else
        ck_assert_ptr_nonnull(*out);
    return rc;
}

/* Runs op through the internal entry with a sole reference to in, so ops
 * may work in place; pool may be NULL. */
static int run_owned(const sl_op *op, sl_tensor *in, sl_tensor **out, uint64_t seed,
                     sl_pool *pool, sl__error *err)
{
    sl__op_ctx ctx;
    memset(&ctx, 0, sizeof ctx); /* no decode budget */
    ctx.pool = pool;
    ctx.err = err;
    sl__err_clear(err);
    sl__rng_seed(&ctx.rng, seed, 0, 0, 0);
    return sl__op_run(op, in, out, &ctx);
}

static void check_shape(const sl_tensor *t, sl_dtype dtype, int ndim, int64_t d0, int64_t d1,
                        int64_t d2)
{
    int64_t want[3] = {d0, d1, d2};
    ck_assert_int_eq(sl_tensor_dtype(t), dtype);
    ck_assert_int_eq(sl_tensor_ndim(t), ndim);
    for (int i = 0; i < ndim; i++)
        ck_assert_int_eq(sl_tensor_shape(t)[i], want[i]);
}

static sl_tensor_spec spec_of(sl_dtype dtype, int ndim, int64_t d0, int64_t d1, int64_t d2)
{
    sl_tensor_spec s;
    memset(&s, 0, sizeof s);
    s.dtype = dtype;
    s.ndim = ndim;
    s.shape[0] = d0;
    s.shape[1] = d1;
    s.shape[2] = d2;
    return s;
}

static sl_tensor *clone(const sl_tensor *t)
{
    sl_tensor *c = NULL;
    ck_assert_int_eq(sl_tensor_new(&c, sl_tensor_dtype(t), sl_tensor_ndim(t), sl_tensor_shape(t)),
                     SL_OK);
    memcpy(sl_tensor_data(c), sl_tensor_data(t), sl_tensor_nbytes(t));
    return c;
}

static int same_bytes(const sl_tensor *a, const sl_tensor *b)
{
    return sl_tensor_nbytes(a) == sl_tensor_nbytes(b) &&
           memcmp(sl_tensor_data(a), sl_tensor_data(b), sl_tensor_nbytes(a)) == 0;
}

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

static double *to_double(const sl_tensor *t)
{
    size_t n = sl_tensor_numel(t);
    double *d = malloc(n * sizeof *d);
    ck_assert_ptr_nonnull(d);
    for (size_t i = 0; i < n; i++)
        d[i] = sl__load_as_double(sl_tensor_data(t), sl_tensor_dtype(t), i);
    return d;
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

/* --- rescale --------------------------------------------------------------- */

START_TEST(test_rescale_dtypes)
{
    const double scale = 1.0 / 0.3081, shift = -0.1307 / 0.3081;
    sl_dtype dts[] = {SL_UINT8, SL_INT32, SL_UINT32, SL_INT64, SL_FLOAT32, SL_FLOAT64};
    sl_op *op;
    ck_assert_int_eq(sl_op_rescale_new(&op, scale, shift, NULL, 0), SL_OK);
    ck_assert_str_eq(sl_op_name(op), "rescale");
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        sl_tensor *in = new_tensor(dts[d], 3, 3, 4, 2), *out, *copy;
        void *p = sl_tensor_data(in);
        const float *got;
        for (size_t i = 0; i < 24; i++) {
            double v = (double)(i * 11 % 256);
            switch (dts[d]) {
            case SL_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
            case SL_INT32: ((int32_t *)p)[i] = (int32_t)v - 100; break;
            case SL_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
            case SL_INT64: ((int64_t *)p)[i] = (int64_t)v - 50; break;
            case SL_FLOAT32: ((float *)p)[i] = (float)(v / 255.0); break;
            default: ((double *)p)[i] = v / 7.0 - 3.0; break;
            }
        }
        copy = clone(in);
        ck_assert_int_eq(apply(op, in, &out, 0, NULL, 0), SL_OK);
        ck_assert(same_bytes(in, copy)); /* apply leaves its input alone */
        check_shape(out, SL_FLOAT32, 3, 3, 4, 2);
        got = sl_tensor_data(out);
        for (size_t i = 0; i < 24; i++) {
            double want = sl__load_as_double(p, dts[d], i) * scale + shift;
            ck_assert_msg(close_enough(got[i], want),
                          "%s element %zu: got %.7f want %.7f", sl_dtype_name(dts[d]), i,
                          got[i], want);
        }
        sl_tensor_release(out);
        sl_tensor_release(copy);
        sl_tensor_release(in);
    }
    sl_op_release(op);
}
END_TEST

START_TEST(test_rescale_in_place)
{
    sl_op *op;
    sl_tensor *in = new_tensor(SL_FLOAT32, 2, 5, 3, 0), *out, *copy;
    sl__error err;
    const float *got, *src;
    fill_f32(in, 4);
    copy = clone(in);
    ck_assert_int_eq(sl_op_rescale_new(&op, 1.0 / 255.0, 0.5, NULL, 0), SL_OK);
    ck_assert_int_eq(run_owned(op, in, &out, 0, NULL, &err), SL_OK);
    ck_assert_ptr_eq(out, in); /* a sole float32 reference is reused */
    got = sl_tensor_data(out);
    src = sl_tensor_data(copy);
    for (int i = 0; i < 15; i++)
        ck_assert_double_eq_tol(got[i], src[i] / 255.0 + 0.5, TOL);
    sl_tensor_release(out);
    sl_tensor_release(copy);
    sl_op_release(op);
}
END_TEST

START_TEST(test_rescale_refusals)
{
    sl_op *op;
    sl_tensor_spec si = spec_of(SL_UINT8, 3, -1, 28, 1), so;
    ck_assert_int_eq(sl_op_rescale_new(&op, NAN, 0, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_rescale_new(&op, 1, INFINITY, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_rescale_new(&op, 1e300, 0, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_rescale_new(&op, 1.0 / 255, 0, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_OK);
    ck_assert_int_eq(so.dtype, SL_FLOAT32);
    ck_assert_int_eq(so.shape[0], -1);
    si.dtype = (sl_dtype)42;
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_ESHAPE);
    sl_op_release(op);
}
END_TEST

/* --- normalize ------------------------------------------------------------- */

START_TEST(test_normalize_rgb_u8)
{
    const double mean[3] = {0.485 * 255, 0.456 * 255, 0.406 * 255};
    const double sd[3] = {0.229 * 255, 0.224 * 255, 0.225 * 255};
    sl_op *op;
    sl_tensor *in = new_tensor(SL_UINT8, 3, 7, 5, 3), *out;
    const uint8_t *src;
    const float *got;
    fill_u8(in, 9);
    ck_assert_int_eq(sl_op_normalize_new(&op, mean, sd, 3, NULL, 0), SL_OK);
    ck_assert_str_eq(sl_op_name(op), "normalize");
    ck_assert_int_eq(apply(op, in, &out, 0, NULL, 0), SL_OK);
    check_shape(out, SL_FLOAT32, 3, 7, 5, 3);
    src = sl_tensor_data(in);
    got = sl_tensor_data(out);
    for (int i = 0; i < 7 * 5 * 3; i++)
        ck_assert_double_eq_tol(got[i], (src[i] - mean[i % 3]) / sd[i % 3], TOL);
    sl_tensor_release(out);
    sl_tensor_release(in);
    sl_op_release(op);
}
END_TEST

START_TEST(test_normalize_other_dtypes)
{
    const double mean[1] = {0.1307}, sd[1] = {0.3081};
    const double mean2[2] = {-3, 100}, sd2[2] = {2, 50};
    sl_op *op, *op2;
    sl_tensor *in = new_tensor(SL_FLOAT32, 2, 4, 6, 0), *out, *copy;
    sl__error err;
    const float *src, *got;
    fill_f32(in, 10);
    copy = clone(in);
    ck_assert_int_eq(sl_op_normalize_new(&op, mean, sd, 1, NULL, 0), SL_OK);
    /* Shared input: a new tensor. */
    ck_assert_int_eq(apply(op, in, &out, 0, NULL, 0), SL_OK);
    ck_assert(same_bytes(in, copy));
    src = sl_tensor_data(copy);
    got = sl_tensor_data(out);
    for (int i = 0; i < 24; i++)
        ck_assert_double_eq_tol(got[i], (src[i] - mean[0]) / sd[0], TOL);
    sl_tensor_release(out);
    /* Sole reference: in place. */
    ck_assert_int_eq(run_owned(op, in, &out, 0, NULL, &err), SL_OK);
    ck_assert_ptr_eq(out, in);
    got = sl_tensor_data(out);
    for (int i = 0; i < 24; i++)
        ck_assert_double_eq_tol(got[i], (src[i] - mean[0]) / sd[0], TOL);
    sl_tensor_release(out);

    /* uint8, one channel (MNIST). */
    sl_tensor_release(copy);
    in = new_tensor(SL_UINT8, 3, 28, 28, 1);
    fill_u8(in, 14);
    ck_assert_int_eq(apply(op, in, &out, 0, NULL, 0), SL_OK);
    check_shape(out, SL_FLOAT32, 3, 28, 28, 1);
    got = sl_tensor_data(out);
    for (int i = 0; i < 28 * 28; i++)
        ck_assert(close_enough(got[i], (((uint8_t *)sl_tensor_data(in))[i] - mean[0]) / sd[0]));
    sl_tensor_release(out);
    sl_tensor_release(in);

    /* int64, 2 channels. */
    ck_assert_int_eq(sl_op_normalize_new(&op2, mean2, sd2, 2, NULL, 0), SL_OK);
    in = new_tensor(SL_INT64, 3, 2, 3, 2);
    for (int i = 0; i < 12; i++)
        ((int64_t *)sl_tensor_data(in))[i] = i * 37 - 200;
    ck_assert_int_eq(apply(op2, in, &out, 0, NULL, 0), SL_OK);
    check_shape(out, SL_FLOAT32, 3, 2, 3, 2);
    got = sl_tensor_data(out);
    for (int i = 0; i < 12; i++)
        ck_assert(close_enough(got[i], ((i * 37 - 200) - mean2[i % 2]) / sd2[i % 2]));
    sl_tensor_release(out);
    sl_tensor_release(in);
    sl_op_release(op);
    sl_op_release(op2);
}
END_TEST

START_TEST(test_normalize_refusals)
{
    const double mean[3] = {1, 2, 3}, sd[3] = {1, 1, 1}, bad_sd[3] = {1, 0, 1};
    const double neg_sd[1] = {-1}, nan_mean[1] = {NAN};
    sl_op *op;
    sl_tensor *in, *out;
    sl_tensor_spec si, so;
    char msg[256];
    ck_assert_int_eq(sl_op_normalize_new(&op, mean, bad_sd, 3, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_normalize_new(&op, mean, neg_sd, 1, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_normalize_new(&op, nan_mean, sd, 1, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_normalize_new(&op, mean, sd, 0, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_normalize_new(&op, NULL, sd, 3, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_normalize_new(&op, mean, sd, 3, NULL, 0), SL_OK);
    /* Channel mismatch, and a 2-D image (one channel). */
    in = new_tensor(SL_UINT8, 3, 2, 2, 1);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "normalize") && strstr(msg, "(2, 2, 1)"), "%s", msg);
    sl_tensor_release(in);
    in = new_tensor(SL_UINT8, 2, 2, 2, 0);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    sl_tensor_release(in);
    in = new_tensor(SL_UINT8, 1, 3, 0, 0);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    sl_tensor_release(in);
    si = spec_of(SL_UINT8, 3, -1, -1, -1);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_OK);
    ck_assert_int_eq(so.dtype, SL_FLOAT32);
    si = spec_of(SL_UINT8, 3, -1, -1, 4);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_ESHAPE);
    sl_op_release(op);
}
END_TEST

/* --- hwc2chw --------------------------------------------------------------- */

START_TEST(test_hwc2chw)
{
    sl_dtype dts[] = {SL_UINT8, SL_FLOAT32, SL_INT64};
    sl_op *op;
    ck_assert_int_eq(sl_op_hwc2chw_new(&op, NULL, 0), SL_OK);
    ck_assert_str_eq(sl_op_name(op), "hwc2chw");
    for (size_t d = 0; d < 3; d++) {
        for (int c = 2; c <= 4; c++) {
            const int h = 3, w = 5;
            sl_tensor *in = new_tensor(dts[d], 3, h, w, c), *out;
            double *din, *dout;
            for (int i = 0; i < h * w * c; i++) {
                void *p = sl_tensor_data(in);
                if (dts[d] == SL_UINT8)
                    ((uint8_t *)p)[i] = (uint8_t)i;
                else if (dts[d] == SL_FLOAT32)
                    ((float *)p)[i] = (float)i + 0.5f;
                else
                    ((int64_t *)p)[i] = (int64_t)i - 1000000000000LL;
            }
            ck_assert_int_eq(apply(op, in, &out, 0, NULL, 0), SL_OK);
            check_shape(out, dts[d], 3, c, h, w);
            din = to_double(in);
            dout = to_double(out);
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    for (int k = 0; k < c; k++)
                        ck_assert(dout[(k * h + y) * w + x] == din[(y * w + x) * c + k]);
            free(din);
            free(dout);
            sl_tensor_release(out);
            sl_tensor_release(in);
        }
    }
    sl_op_release(op);
}
END_TEST

START_TEST(test_hwc2chw_one_channel)
{
    sl_op *op;
    sl_tensor *in = new_tensor(SL_FLOAT32, 3, 4, 3, 1), *out, *copy;
    sl__error err;
    fill_f32(in, 11);
    copy = clone(in);
    ck_assert_int_eq(sl_op_hwc2chw_new(&op, NULL, 0), SL_OK);
    /* Shared: the result must not change the caller's tensor. */
    ck_assert_int_eq(apply(op, in, &out, 0, NULL, 0), SL_OK);
    check_shape(out, SL_FLOAT32, 3, 1, 4, 3);
    check_shape(in, SL_FLOAT32, 3, 4, 3, 1);
    ck_assert(same_bytes(out, copy));
    sl_tensor_release(out);
    ck_assert_int_eq(sl_tensor_refcount(in), 1);
    /* Sole reference: the same tensor with its shape changed. */
    ck_assert_int_eq(run_owned(op, in, &out, 0, NULL, &err), SL_OK);
    ck_assert_ptr_eq(out, in);
    check_shape(out, SL_FLOAT32, 3, 1, 4, 3);
    ck_assert(same_bytes(out, copy));
    sl_tensor_release(out);
    sl_tensor_release(copy);
    sl_op_release(op);
}
END_TEST

START_TEST(test_hwc2chw_refusals)
{
    sl_op *op;
    sl_tensor *in = new_tensor(SL_UINT8, 2, 4, 4, 0), *out;
    sl_tensor_spec si = spec_of(SL_UINT8, 3, -1, -1, 3), so;
    char msg[256];
    ck_assert_int_eq(sl_op_hwc2chw_new(&op, NULL, 0), SL_OK);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "hwc2chw") && strstr(msg, "(4, 4)"), "%s", msg);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_OK);
    ck_assert_int_eq(so.shape[0], 3);
    ck_assert_int_eq(so.shape[1], -1);
    ck_assert_int_eq(so.shape[2], -1);
    si.ndim = 2;
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_ESHAPE);
    sl_tensor_release(in);
    sl_op_release(op);
}
END_TEST

/* --- type_cast ------------------------------------------------------------- */

/* Element i of t as written by the test: exact in every dtype. */
static const double cast_values[] = {0, 1, 7, 100, 127, 200, 255};

static void store_value(void *p, sl_dtype dt, size_t i, double v)
{
    switch (dt) {
    case SL_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case SL_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case SL_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case SL_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    case SL_FLOAT32: ((float *)p)[i] = (float)v; break;
    default: ((double *)p)[i] = v; break;
    }
}

START_TEST(test_type_cast_all_pairs)
{
    const size_t n = sizeof cast_values / sizeof cast_values[0];
    for (int from = 0; from < SL_DTYPE_COUNT; from++) {
        for (int to = 0; to < SL_DTYPE_COUNT; to++) {
            sl_op *op;
            sl_tensor *in = new_tensor((sl_dtype)from, 1, (int64_t)n * 100, 0, 0), *out;
            for (size_t i = 0; i < n * 100; i++)
                store_value(sl_tensor_data(in), (sl_dtype)from, i, cast_values[i % n]);
            ck_assert_int_eq(sl_op_type_cast_new(&op, (sl_dtype)to, NULL, 0), SL_OK);
            ck_assert_int_eq(apply(op, in, &out, 0, NULL, 0), SL_OK);
            check_shape(out, (sl_dtype)to, 1, (int64_t)n * 100, 0, 0);
            if (from == to)
                ck_assert_ptr_eq(out, in); /* nothing to do */
            for (size_t i = 0; i < n * 100; i++)
                ck_assert(sl__load_as_double(sl_tensor_data(out), (sl_dtype)to, i) ==
                          cast_values[i % n]);
            sl_tensor_release(out);
            sl_tensor_release(in);
            sl_op_release(op);
        }
    }
}
END_TEST

START_TEST(test_type_cast_sign_in_place)
{
    /* uint32 <-> int32 of a tensor held alone only relabels it; a shared
     * one gets a copy and the caller's tensor keeps its dtype. */
    sl_op *op;
    sl_tensor *in = new_tensor(SL_UINT32, 1, 3, 0, 0), *out, *shared;
    uint32_t *p = sl_tensor_data(in);
    sl__error err;
    p[0] = 7;
    p[1] = 0xFFFFFFFFu;
    p[2] = 0x80000000u;
    ck_assert_int_eq(sl_op_type_cast_new(&op, SL_INT32, NULL, 0), SL_OK);
    ck_assert_int_eq(run_owned(op, in, &out, 0, NULL, &err), SL_OK);
    ck_assert_ptr_eq(out, in);
    ck_assert_int_eq(sl_tensor_dtype(out), SL_INT32);
    ck_assert_int_eq(((int32_t *)sl_tensor_data(out))[0], 7);
    ck_assert_int_eq(((int32_t *)sl_tensor_data(out))[1], -1);
    ck_assert_int_eq(((int32_t *)sl_tensor_data(out))[2], INT32_MIN);

    shared = sl_tensor_retain(out);
    sl_op_release(op);
    ck_assert_int_eq(sl_op_type_cast_new(&op, SL_UINT32, NULL, 0), SL_OK);
    ck_assert_int_eq(run_owned(op, out, &in, 0, NULL, &err), SL_OK);
    ck_assert_ptr_ne(in, shared);
    ck_assert_int_eq(sl_tensor_dtype(shared), SL_INT32);
    ck_assert_int_eq(sl_tensor_dtype(in), SL_UINT32);
    ck_assert_uint_eq(((uint32_t *)sl_tensor_data(in))[1], 0xFFFFFFFFu);
    sl_tensor_release(in);
    sl_tensor_release(shared);
    sl_op_release(op);
}
END_TEST

START_TEST(test_type_cast_conversions)
{
    /* float -> int truncates toward zero; out of range saturates, NaN -> 0. */
    static const float fin[] = {2.7f, -2.7f, 300.5f, -5.0f, 1e10f, -1e10f, NAN, 255.9f};
    static const int32_t want_i32[] = {2, -2, 300, -5, INT32_MAX, INT32_MIN, 0, 255};
    static const uint8_t want_u8[] = {2, 0, 255, 0, 255, 0, 0, 255};
    static const uint32_t want_u32[] = {2, 0, 300, 0, UINT32_MAX, 0, 0, 255};
    /* int -> narrower int wraps as C does. */
    static const int64_t iin[] = {-1, 256, 257, 4294967296LL + 5, -2147483649LL};
    static const uint8_t want_wrap_u8[] = {255, 0, 1, 5, 255};
    static const int32_t want_wrap_i32[] = {-1, 256, 257, 5, 2147483647};
    sl_op *to_i32, *to_u8, *to_u32;
    sl_tensor *in = new_tensor(SL_FLOAT32, 1, 8, 0, 0), *out;
    memcpy(sl_tensor_data(in), fin, sizeof fin);
    ck_assert_int_eq(sl_op_type_cast_new(&to_i32, SL_INT32, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_type_cast_new(&to_u8, SL_UINT8, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_type_cast_new(&to_u32, SL_UINT32, NULL, 0), SL_OK);
    ck_assert_int_eq(apply(to_i32, in, &out, 0, NULL, 0), SL_OK);
    ck_assert_mem_eq(sl_tensor_data(out), want_i32, sizeof want_i32);
    sl_tensor_release(out);
    ck_assert_int_eq(apply(to_u8, in, &out, 0, NULL, 0), SL_OK);
    ck_assert_mem_eq(sl_tensor_data(out), want_u8, sizeof want_u8);
    sl_tensor_release(out);
    ck_assert_int_eq(apply(to_u32, in, &out, 0, NULL, 0), SL_OK);
    ck_assert_mem_eq(sl_tensor_data(out), want_u32, sizeof want_u32);
    sl_tensor_release(out);
    sl_tensor_release(in);

    in = new_tensor(SL_INT64, 1, 5, 0, 0);
    memcpy(sl_tensor_data(in), iin, sizeof iin);
    ck_assert_int_eq(apply(to_u8, in, &out, 0, NULL, 0), SL_OK);
    ck_assert_mem_eq(sl_tensor_data(out), want_wrap_u8, sizeof want_wrap_u8);
    sl_tensor_release(out);
    ck_assert_int_eq(apply(to_i32, in, &out, 0, NULL, 0), SL_OK);
    ck_assert_mem_eq(sl_tensor_data(out), want_wrap_i32, sizeof want_wrap_i32);
    sl_tensor_release(out);
    sl_tensor_release(in);

    /* A scalar label, as the MNIST pipeline casts it. */
    in = new_tensor(SL_UINT8, 0, 0, 0, 0);
    *(uint8_t *)sl_tensor_data(in) = 7;
    ck_assert_int_eq(apply(to_i32, in, &out, 0, NULL, 0), SL_OK);
    check_shape(out, SL_INT32, 0, 0, 0, 0);
    ck_assert_int_eq(*(int32_t *)sl_tensor_data(out), 7);
    sl_tensor_release(out);
    sl_tensor_release(in);
    sl_op_release(to_i32);
    sl_op_release(to_u8);
    sl_op_release(to_u32);
}
END_TEST

START_TEST(test_type_cast_refusals)
{
    sl_op *op;
    sl_tensor_spec si = spec_of(SL_UINT8, 3, -1, -1, 3), so;
    ck_assert_int_eq(sl_op_type_cast_new(&op, SL_DTYPE_COUNT, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_type_cast_new(&op, (sl_dtype)-1, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_type_cast_new(&op, SL_FLOAT64, NULL, 0), SL_OK);
    ck_assert_str_eq(sl_op_name(op), "type_cast");
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_OK);
    ck_assert_int_eq(so.dtype, SL_FLOAT64);
    ck_assert_int_eq(so.shape[2], 3);
    sl_op_release(op);
}
END_TEST

/* --- random_crop ----------------------------------------------------------- */

/* The crop the op must make for seed: pads in (h, w, c) of esize-byte
 * elements explicitly, draws y0 then x0 from the same generator
 * sl_op_apply seeds, and cuts. */
static void ref_crop(unsigned char *dst, const unsigned char *src, int h, int w, size_t px,
                     int ch, int cw, int pad, uint64_t seed)
{
    int ph = h + 2 * pad, pw = w + 2 * pad;
    unsigned char *padded = calloc((size_t)ph * pw, px);
    sl_rng rng;
    int y0, x0;
    ck_assert_ptr_nonnull(padded);
    for (int y = 0; y < h; y++)
        memcpy(padded + ((size_t)(y + pad) * pw + pad) * px, src + (size_t)y * w * px, w * px);
    sl__rng_seed(&rng, seed, 0, 0, 0);
    y0 = (int)sl__rng_below(&rng, (uint64_t)(ph - ch + 1));
    x0 = (int)sl__rng_below(&rng, (uint64_t)(pw - cw + 1));
    for (int y = 0; y < ch; y++)
        memcpy(dst + (size_t)y * cw * px, padded + ((size_t)(y + y0) * pw + x0) * px, cw * px);
    free(padded);
}

static void check_crop(sl_dtype dt, int ndim, int h, int w, int c, int ch, int cw, int pad,
                       int seeds)
{
    sl_op *op;
    size_t px = (size_t)c * sl_dtype_size(dt);
    unsigned char *want = malloc((size_t)ch * cw * px);
    sl_tensor *in = new_tensor(dt, ndim, h, w, c);
    ck_assert_ptr_nonnull(want);
    /* Nonzero bytes everywhere, so padding zeros cannot pass by accident. */
    for (size_t i = 0; i < sl_tensor_nbytes(in); i++)
        ((unsigned char *)sl_tensor_data(in))[i] = (unsigned char)(1 + i % 251);
    ck_assert_int_eq(sl_op_random_crop_new(&op, ch, cw, pad, NULL, 0), SL_OK);
    for (int s = 0; s < seeds; s++) {
        sl_tensor *out;
        ck_assert_int_eq(apply(op, in, &out, (uint64_t)s, NULL, 0), SL_OK);
        check_shape(out, dt, ndim, ch, cw, c);
        ref_crop(want, sl_tensor_data(in), h, w, px, ch, cw, pad, (uint64_t)s);
        ck_assert_msg(memcmp(sl_tensor_data(out), want, (size_t)ch * cw * px) == 0,
                      "crop differs for seed %d", s);
        sl_tensor_release(out);
    }
    free(want);
    sl_tensor_release(in);
    sl_op_release(op);
}

START_TEST(test_random_crop)
{
    check_crop(SL_UINT8, 3, 32, 32, 3, 28, 28, 4, 50);     /* CIFAR style */
    check_crop(SL_FLOAT32, 2, 10, 7, 1, 5, 6, 0, 30);      /* no padding */
    check_crop(SL_INT64, 3, 3, 3, 2, 5, 5, 10, 100);       /* window often all border */
    check_crop(SL_UINT8, 2, 8, 8, 1, 8, 8, 0, 3);          /* the whole image */
    check_crop(SL_FLOAT64, 3, 4, 9, 3, 12, 17, 4, 20);     /* exactly the padded size */
}
END_TEST

START_TEST(test_random_crop_determinism)
{
    sl_op *op;
    sl_tensor *in = new_tensor(SL_UINT8, 3, 20, 20, 1), *a, *b;
    int differ = 0;
    fill_u8(in, 12);
    ck_assert_int_eq(sl_op_random_crop_new(&op, 8, 8, 2, NULL, 0), SL_OK);
    for (uint64_t s = 0; s < 20; s++) {
        ck_assert_int_eq(apply(op, in, &a, s, NULL, 0), SL_OK);
        ck_assert_int_eq(apply(op, in, &b, s, NULL, 0), SL_OK);
        ck_assert(same_bytes(a, b));
        sl_tensor_release(b);
        ck_assert_int_eq(apply(op, in, &b, s + 1000, NULL, 0), SL_OK);
        differ += !same_bytes(a, b);
        sl_tensor_release(a);
        sl_tensor_release(b);
    }
    ck_assert_int_gt(differ, 10);
    sl_tensor_release(in);
    sl_op_release(op);
}
END_TEST

START_TEST(test_random_crop_refusals)
{
    sl_op *op;
    sl_tensor *in, *out;
    sl_tensor_spec si, so;
    char msg[256];
    ck_assert_int_eq(sl_op_random_crop_new(&op, 0, 5, 0, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_random_crop_new(&op, 5, -2, 0, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_random_crop_new(&op, 5, 5, -1, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_random_crop_new(&op, 28, 28, 2, NULL, 0), SL_OK);
    ck_assert_str_eq(sl_op_name(op), "random_crop");
    ck_assert_int_eq(op->random, 1);
    in = new_tensor(SL_UINT8, 3, 20, 30, 1); /* 24 rows padded: too few */
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "random_crop") && strstr(msg, "(20, 30, 1)"), "%s", msg);
    sl_tensor_release(in);
    in = new_tensor(SL_UINT8, 1, 900, 0, 0);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    sl_tensor_release(in);
    si = spec_of(SL_FLOAT32, 3, -1, -1, 3);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_OK);
    ck_assert_int_eq(so.shape[0], 28);
    ck_assert_int_eq(so.shape[1], 28);
    ck_assert_int_eq(so.shape[2], 3);
    si = spec_of(SL_FLOAT32, 3, 10, -1, 3);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_ESHAPE);
    sl_op_release(op);
}
END_TEST

/* --- random_horizontal_flip ------------------------------------------------ */

/* Checks out == in mirrored along W, comparing whole pixels of px bytes. */
static void check_mirrored(const sl_tensor *out, const unsigned char *in, int h, int w, size_t px)
{
    const unsigned char *o = sl_tensor_data(out);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            ck_assert(memcmp(o + ((size_t)y * w + x) * px,
                             in + ((size_t)y * w + (w - 1 - x)) * px, px) == 0);
}

START_TEST(test_random_flip_always_never)
{
    static const struct {
        sl_dtype dt;
        int ndim, h, w, c;
    } cases[] = {
        {SL_UINT8, 2, 3, 5, 1},   {SL_UINT8, 3, 4, 6, 3},   {SL_FLOAT32, 2, 2, 7, 1},
        {SL_FLOAT32, 3, 3, 4, 3}, {SL_INT64, 3, 2, 3, 1},   {SL_UINT8, 3, 2, 1, 3},
        {SL_FLOAT64, 3, 3, 5, 20},
    };
    sl_op *always, *never;
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&always, 1.0, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&never, 0.0, NULL, 0), SL_OK);
    ck_assert_str_eq(sl_op_name(always), "random_horizontal_flip");
    ck_assert_int_eq(always->random, 1);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t px = (size_t)cases[i].c * sl_dtype_size(cases[i].dt);
        sl_tensor *in = new_tensor(cases[i].dt, cases[i].ndim, cases[i].h, cases[i].w, cases[i].c);
        sl_tensor *copy, *out, *owned;
        sl__error err;
        for (size_t b = 0; b < sl_tensor_nbytes(in); b++)
            ((unsigned char *)sl_tensor_data(in))[b] = (unsigned char)(b * 7 + 1);
        copy = clone(in);
        for (uint64_t s = 0; s < 20; s++) {
            /* p = 1: shared input gives a mirrored copy, input untouched. */
            ck_assert_int_eq(apply(always, in, &out, s, NULL, 0), SL_OK);
            ck_assert(same_bytes(in, copy));
            check_shape(out, cases[i].dt, cases[i].ndim, cases[i].h, cases[i].w, cases[i].c);
            check_mirrored(out, sl_tensor_data(copy), cases[i].h, cases[i].w, px);
            sl_tensor_release(out);
            /* p = 0: the input itself. */
            ck_assert_int_eq(apply(never, in, &out, s, NULL, 0), SL_OK);
            ck_assert_ptr_eq(out, in);
            sl_tensor_release(out);
        }
        /* p = 1, sole reference: mirrored in place. */
        owned = clone(in);
        ck_assert_int_eq(run_owned(always, owned, &out, 3, NULL, &err), SL_OK);
        ck_assert_ptr_eq(out, owned);
        check_mirrored(out, sl_tensor_data(copy), cases[i].h, cases[i].w, px);
        sl_tensor_release(out);
        sl_tensor_release(copy);
        sl_tensor_release(in);
    }
    sl_op_release(always);
    sl_op_release(never);
}
END_TEST

START_TEST(test_random_flip_half)
{
    sl_op *op;
    sl_tensor *in = new_tensor(SL_UINT8, 3, 2, 4, 3), *out, *again;
    int flipped = 0;
    fill_u8(in, 13);
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&op, 0.5, NULL, 0), SL_OK);
    for (uint64_t s = 0; s < 200; s++) {
        sl_rng rng;
        int want;
        sl__rng_seed(&rng, s, 0, 0, 0);
        want = sl__rng_uniform(&rng) < 0.5;
        ck_assert_int_eq(apply(op, in, &out, s, NULL, 0), SL_OK);
        ck_assert_int_eq(apply(op, in, &again, s, NULL, 0), SL_OK);
        ck_assert(same_bytes(out, again)); /* same seed, same result */
        if (want) {
            check_mirrored(out, sl_tensor_data(in), 2, 4, 3);
            ck_assert_ptr_ne(out, in);
        } else {
            ck_assert_ptr_eq(out, in);
        }
        flipped += want;
        sl_tensor_release(out);
        sl_tensor_release(again);
    }
    ck_assert_int_gt(flipped, 60);
    ck_assert_int_lt(flipped, 140);
    sl_tensor_release(in);
    sl_op_release(op);
}
END_TEST

START_TEST(test_random_flip_refusals)
{
    sl_op *op;
    sl_tensor *in, *out;
    sl_tensor_spec si = spec_of(SL_INT32, 2, -1, 5, 0), so;
    char msg[256];
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&op, -0.1, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&op, 1.5, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&op, NAN, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&op, 1, NULL, 0), SL_OK);
    in = new_tensor(SL_UINT8, 1, 5, 0, 0);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "random_horizontal_flip") && strstr(msg, "(5,)"), "%s", msg);
    sl_tensor_release(in);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_OK);
    ck_assert_int_eq(so.dtype, SL_INT32);
    ck_assert_int_eq(so.shape[0], -1);
    sl_op_release(op);
}
END_TEST

/* --- one_hot --------------------------------------------------------------- */

START_TEST(test_one_hot)
{
    sl_dtype dts[] = {SL_UINT8, SL_INT32, SL_UINT32, SL_INT64};
    sl_op *op;
    ck_assert_int_eq(sl_op_one_hot_new(&op, 10, NULL, 0), SL_OK);
    ck_assert_str_eq(sl_op_name(op), "one_hot");
    for (size_t d = 0; d < 4; d++) {
        sl_tensor *in = new_tensor(dts[d], 1, 6, 0, 0), *out;
        static const int labels[6] = {3, 0, 9, 9, 5, 1};
        for (int i = 0; i < 6; i++)
            store_value(sl_tensor_data(in), dts[d], (size_t)i, labels[i]);
        ck_assert_int_eq(apply(op, in, &out, 0, NULL, 0), SL_OK);
        check_shape(out, dts[d], 2, 6, 10, 0);
        for (int i = 0; i < 6; i++)
            for (int k = 0; k < 10; k++)
                ck_assert(sl__load_as_double(sl_tensor_data(out), dts[d], (size_t)(i * 10 + k)) ==
                          (k == labels[i] ? 1.0 : 0.0));
        sl_tensor_release(out);
        sl_tensor_release(in);

        /* A scalar. */
        in = new_tensor(dts[d], 0, 0, 0, 0);
        store_value(sl_tensor_data(in), dts[d], 0, 4);
        ck_assert_int_eq(apply(op, in, &out, 0, NULL, 0), SL_OK);
        check_shape(out, dts[d], 1, 10, 0, 0);
        for (int k = 0; k < 10; k++)
            ck_assert(sl__load_as_double(sl_tensor_data(out), dts[d], (size_t)k) ==
                      (k == 4 ? 1.0 : 0.0));
        sl_tensor_release(out);
        sl_tensor_release(in);
    }
    sl_op_release(op);
}
END_TEST

START_TEST(test_one_hot_refusals)
{
    sl_op *op;
    sl_tensor *in, *out;
    sl_tensor_spec si, so;
    char msg[256];
    ck_assert_int_eq(sl_op_one_hot_new(&op, 0, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_one_hot_new(&op, -3, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_one_hot_new(&op, 10, NULL, 0), SL_OK);

    in = new_tensor(SL_UINT8, 0, 0, 0, 0);
    *(uint8_t *)sl_tensor_data(in) = 10;
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_EINVAL);
    ck_assert_msg(strstr(msg, "one_hot") && strstr(msg, "label 10") &&
                      strstr(msg, "num_classes 10"),
                  "%s", msg);
    sl_tensor_release(in);
    in = new_tensor(SL_INT32, 1, 3, 0, 0);
    ((int32_t *)sl_tensor_data(in))[2] = -1;
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_EINVAL);
    ck_assert_msg(strstr(msg, "label -1") && strstr(msg, "index 2"), "%s", msg);
    sl_tensor_release(in);
    in = new_tensor(SL_FLOAT32, 1, 3, 0, 0);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "float32"), "%s", msg);
    sl_tensor_release(in);
    in = new_tensor(SL_INT64, 2, 3, 2, 0);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "(3, 2)"), "%s", msg);
    sl_tensor_release(in);

    si = spec_of(SL_INT32, 1, -1, 0, 0);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_OK);
    ck_assert_int_eq(so.ndim, 2);
    ck_assert_int_eq(so.shape[0], -1);
    ck_assert_int_eq(so.shape[1], 10);
    ck_assert_int_eq(so.dtype, SL_INT32);
    si = spec_of(SL_UINT8, 0, 0, 0, 0);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_OK);
    ck_assert_int_eq(so.ndim, 1);
    ck_assert_int_eq(so.shape[0], 10);
    si = spec_of(SL_FLOAT64, 0, 0, 0, 0);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_ESHAPE);
    sl_op_release(op);
}
END_TEST

/* --- decode ---------------------------------------------------------------- */

typedef struct ref_jpeg {
    struct jpeg_decompress_struct cinfo;
    struct jpeg_error_mgr jerr;
    jmp_buf jump;
} ref_jpeg;

static void ref_error_exit(j_common_ptr cinfo)
{
    longjmp(((ref_jpeg *)cinfo->client_data)->jump, 1);
}

/* Decodes a valid JPEG with libjpeg directly, default settings; returns a
 * malloc'd (h, w, c) buffer. */
static uint8_t *ref_decode(const uint8_t *data, size_t len, int rgb, int *h, int *w, int *c)
{
    ref_jpeg *r = calloc(1, sizeof *r);
    uint8_t *px;
    ck_assert_ptr_nonnull(r);
    r->cinfo.err = jpeg_std_error(&r->jerr);
    r->jerr.error_exit = ref_error_exit;
    r->cinfo.client_data = r;
    if (setjmp(r->jump))
        ck_abort_msg("reference decode failed");
    jpeg_create_decompress(&r->cinfo);
    jpeg_mem_src(&r->cinfo, data, (unsigned long)len);
    jpeg_read_header(&r->cinfo, TRUE);
    r->cinfo.out_color_space = rgb ? JCS_RGB : JCS_GRAYSCALE;
    if (r->cinfo.jpeg_color_space == JCS_CMYK)
        r->cinfo.out_color_space = JCS_CMYK;
    jpeg_start_decompress(&r->cinfo);
    *h = (int)r->cinfo.output_height;
    *w = (int)r->cinfo.output_width;
    *c = r->cinfo.output_components;
    px = malloc((size_t)*h * *w * *c);
    ck_assert_ptr_nonnull(px);
    while (r->cinfo.output_scanline < r->cinfo.output_height) {
        JSAMPROW row = px + (size_t)r->cinfo.output_scanline * *w * *c;
        jpeg_read_scanlines(&r->cinfo, &row, 1);
    }
    if (r->cinfo.out_color_space == JCS_CMYK) {
        /* MindSpore's conversion of (inverted, Adobe) CMYK, then libjpeg's
         * gray weights. */
        size_t n = (size_t)*h * *w;
        uint8_t *conv = malloc(n * (rgb ? 3 : 1));
        ck_assert_ptr_nonnull(conv);
        ck_assert(r->cinfo.saw_Adobe_marker);
        for (size_t i = 0; i < n; i++) {
            int k = px[4 * i + 3];
            int rr = px[4 * i] * k / 255, gg = px[4 * i + 1] * k / 255,
                bb = px[4 * i + 2] * k / 255;
            if (rgb) {
                conv[3 * i] = (uint8_t)rr;
                conv[3 * i + 1] = (uint8_t)gg;
                conv[3 * i + 2] = (uint8_t)bb;
            } else {
                conv[i] = (uint8_t)lround(0.299 * rr + 0.587 * gg + 0.114 * bb);
            }
        }
        free(px);
        px = conv;
        *c = rgb ? 3 : 1;
    }
    jpeg_finish_decompress(&r->cinfo);
    jpeg_destroy_decompress(&r->cinfo);
    free(r);
    return px;
}

/* A JPEG written with libjpeg directly, for what testutil does not make:
 * progressive files, and CMYK files (comps 4, with an Adobe marker). The
 * pixels follow the tu_fill_image pattern. */
static void encode_special(uint8_t **out, size_t *len, int w, int h, int comps, int progressive)
{
    struct jpeg_compress_struct cinfo;
    struct jpeg_error_mgr jerr;
    unsigned char *buf = NULL;
    unsigned long n = 0;
    uint8_t *px = malloc((size_t)w * h * comps);
    ck_assert_ptr_nonnull(px);
    tu_fill_image(px, w, h, comps, 5);
    cinfo.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&cinfo);
    jpeg_mem_dest(&cinfo, &buf, &n);
    cinfo.image_width = (JDIMENSION)w;
    cinfo.image_height = (JDIMENSION)h;
    cinfo.input_components = comps;
    cinfo.in_color_space = comps == 4 ? JCS_CMYK : JCS_RGB;
    jpeg_set_defaults(&cinfo);
    if (progressive)
        jpeg_simple_progression(&cinfo);
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = px + (size_t)cinfo.next_scanline * w * comps;
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    free(px);
    *out = buf;
    *len = n;
}

static uint8_t *make_jpeg(size_t *len, int w, int h, int c, uint32_t seed)
{
    uint8_t *px = malloc((size_t)w * h * c), *jpg = NULL;
    ck_assert_ptr_nonnull(px);
    tu_fill_image(px, w, h, c, seed);
    ck_assert_int_eq(tu_encode_jpeg(&jpg, len, px, w, h, c, 90), 0);
    free(px);
    return jpg;
}

static sl_tensor *bytes_tensor(const uint8_t *data, size_t len)
{
    sl_tensor *t = new_tensor(SL_UINT8, 1, (int64_t)len, 0, 0);
    if (len)
        memcpy(sl_tensor_data(t), data, len);
    return t;
}

/* Decodes with op and compares with the reference decoder, byte for byte. */
static void check_decode(const sl_op *op, const uint8_t *jpg, size_t len, int rgb, sl_pool *pool)
{
    sl_tensor *in = bytes_tensor(jpg, len), *out;
    sl__error err;
    int h, w, c;
    uint8_t *want = ref_decode(jpg, len, rgb, &h, &w, &c);
    ck_assert_int_eq(run_owned(op, in, &out, 0, pool, &err), SL_OK);
    check_shape(out, SL_UINT8, 3, h, w, rgb ? 3 : 1);
    ck_assert_int_eq(c, rgb ? 3 : 1);
    ck_assert(memcmp(sl_tensor_data(out), want, (size_t)h * w * c) == 0);
    sl_tensor_release(out);
    free(want);
}

START_TEST(test_decode_matches_libjpeg)
{
    sl_op *rgb, *gray;
    sl_pool *pool = sl__pool_new();
    size_t len;
    uint8_t *jpg;
    ck_assert_int_eq(sl_op_decode_new(&rgb, 1, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_decode_new(&gray, 0, NULL, 0), SL_OK);
    ck_assert_str_eq(sl_op_name(rgb), "decode");

    jpg = make_jpeg(&len, 37, 23, 3, 1); /* odd sizes: partial MCUs */
    check_decode(rgb, jpg, len, 1, NULL);
    check_decode(gray, jpg, len, 0, pool);
    free(jpg);
    jpg = make_jpeg(&len, 64, 48, 1, 2); /* a grayscale file */
    check_decode(rgb, jpg, len, 1, pool);
    check_decode(gray, jpg, len, 0, NULL);
    free(jpg);
    encode_special(&jpg, &len, 50, 40, 3, 1);
    check_decode(rgb, jpg, len, 1, NULL);
    free(jpg);

    encode_special(&jpg, &len, 21, 19, 4, 0); /* CMYK */
    check_decode(rgb, jpg, len, 1, NULL);
    check_decode(gray, jpg, len, 0, NULL);
    free(jpg);

    /* Through the public entry, the bytes stay untouched. */
    jpg = make_jpeg(&len, 16, 16, 3, 3);
    {
        sl_tensor *in = bytes_tensor(jpg, len), *out;
        ck_assert_int_eq(apply(rgb, in, &out, 0, NULL, 0), SL_OK);
        check_shape(out, SL_UINT8, 3, 16, 16, 3);
        ck_assert(memcmp(sl_tensor_data(in), jpg, len) == 0);
        ck_assert_int_eq(sl_tensor_refcount(in), 1);
        sl_tensor_release(out);
        sl_tensor_release(in);
    }
    free(jpg);
    sl_op_release(rgb);
    sl_op_release(gray);
    sl__pool_release(pool);
}
END_TEST

/* Points stderr at a temporary file; returns the saved descriptor. */
static int capture_stderr(FILE **tmp)
{
    int saved;
    fflush(stderr);
    *tmp = tmpfile();
    ck_assert_ptr_nonnull(*tmp);
    saved = dup(2);
    ck_assert_int_ge(saved, 0);
    ck_assert_int_ge(dup2(fileno(*tmp), 2), 0);
    return saved;
}

/* Restores stderr and returns how many bytes were written to it. */
static long restore_stderr(int saved, FILE *tmp)
{
    struct stat st;
    fflush(stderr);
    ck_assert_int_ge(dup2(saved, 2), 0);
    close(saved);
    ck_assert_int_eq(fstat(fileno(tmp), &st), 0);
    fclose(tmp);
    return (long)st.st_size;
}

static int decode_bytes(const sl_op *op, const uint8_t *data, size_t len, char *msg, size_t n)
{
    sl_tensor *in = bytes_tensor(data, len), *out;
    int rc = apply(op, in, &out, 0, msg, n);
    sl_tensor_release(out);
    sl_tensor_release(in);
    return rc;
}

START_TEST(test_decode_bad_bytes)
{
    static const uint8_t png[] = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13};
    static const uint8_t soi_junk[] = {0xFF, 0xD8, 0xFF, 0x01, 0x02, 0x03, 0x04, 0x05};
    sl_op *op;
    size_t len;
    uint8_t *jpg = make_jpeg(&len, 40, 32, 3, 4), *prog;
    size_t plen;
    char msg[256];
    FILE *tmp;
    int saved;

    ck_assert_int_eq(sl_op_decode_new(&op, 1, NULL, 0), SL_OK);
    saved = capture_stderr(&tmp);

    ck_assert_int_eq(decode_bytes(op, png, sizeof png, msg, sizeof msg), SL_EFORMAT);
    ck_assert_msg(strstr(msg, "decode: not a JPEG"), "%s", msg);
    ck_assert_int_eq(decode_bytes(op, png, 2, msg, sizeof msg), SL_EFORMAT);
    ck_assert_int_eq(decode_bytes(op, png, 0, msg, sizeof msg), SL_EFORMAT);
    ck_assert_int_eq(decode_bytes(op, soi_junk, sizeof soi_junk, msg, sizeof msg), SL_EFORMAT);
    ck_assert_msg(strstr(msg, "decode:"), "%s", msg);

    /* Cut mid-scan: libjpeg only warns ("Premature end of JPEG file") and
     * would fill the rest with grey; we must fail. */
    ck_assert_int_eq(decode_bytes(op, jpg, len / 2, msg, sizeof msg), SL_EFORMAT);
    ck_assert_msg(strstr(msg, "decode: cannot decode JPEG") && strstr(msg, "Premature end"), "%s",
                  msg);
    /* Cut inside the headers. */
    ck_assert_int_eq(decode_bytes(op, jpg, 30, msg, sizeof msg), SL_EFORMAT);
    /* Every cut before the last entropy-coded bytes fails, and none crashes. */
    for (size_t n = 0; n + 16 < len; n++)
        ck_assert_msg(decode_bytes(op, jpg, n, msg, sizeof msg) == SL_EFORMAT, "cut at %zu", n);
    /* A progressive file is read whole in start_decompress. */
    encode_special(&prog, &plen, 48, 40, 3, 1);
    for (size_t n = plen / 4; n + 16 < plen; n += 7)
        ck_assert_msg(decode_bytes(op, prog, n, msg, sizeof msg) == SL_EFORMAT, "cut at %zu", n);
    free(prog);

    /* Flipped bytes in the scan: an error or an image, never a crash. */
    for (size_t i = len / 3; i < len - 2; i += 5) {
        uint8_t *bad = malloc(len);
        sl_tensor *in, *out;
        int rc;
        ck_assert_ptr_nonnull(bad);
        memcpy(bad, jpg, len);
        bad[i] ^= 0x5A;
        in = bytes_tensor(bad, len);
        rc = apply(op, in, &out, 0, msg, sizeof msg);
        ck_assert(rc == SL_OK || rc == SL_EFORMAT);
        if (rc == SL_OK)
            check_shape(out, SL_UINT8, 3, 32, 40, 3);
        sl_tensor_release(out);
        sl_tensor_release(in);
        free(bad);
    }

    ck_assert_int_eq(restore_stderr(saved, tmp), 0); /* nothing printed */
    free(jpg);
    sl_op_release(op);
}
END_TEST

/* Rewrites the frame header (SOF0) of a baseline JPEG to claim h x w. */
static void patch_sof(uint8_t *jpg, size_t len, unsigned h, unsigned w)
{
    for (size_t i = 2; i + 9 < len; i++) {
        if (jpg[i] == 0xFF && jpg[i + 1] == 0xC0) {
            jpg[i + 5] = (uint8_t)(h >> 8);
            jpg[i + 6] = (uint8_t)h;
            jpg[i + 7] = (uint8_t)(w >> 8);
            jpg[i + 8] = (uint8_t)w;
            return;
        }
    }
    ck_abort_msg("no SOF0 marker");
}

START_TEST(test_decode_refusals)
{
    sl_op *op;
    size_t len;
    uint8_t *jpg = make_jpeg(&len, 16, 16, 3, 5);
    sl_tensor *in, *out;
    sl_tensor_spec si = spec_of(SL_UINT8, 1, -1, 0, 0), so;
    char msg[256];

    ck_assert_int_eq(sl_op_decode_new(&op, 2, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_decode_new_limited(&op, 1, 0, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_decode_new_limited(&op, 1, SL_DECODE_MAX_PIXELS_LIMIT + 1, NULL, 0),
                     SL_EINVAL);
    ck_assert_ptr_null(op);
    ck_assert_int_eq(sl_op_decode_new(&op, 1, NULL, 0), SL_OK);
    /* Absurd sizes are refused before anything is allocated. */
    patch_sof(jpg, len, 40000, 40000);
    ck_assert_int_eq(decode_bytes(op, jpg, len, msg, sizeof msg), SL_EFORMAT);
    ck_assert_msg(strstr(msg, "too large"), "%s", msg);
    patch_sof(jpg, len, 20000, 20000); /* each side fine, 4e8 pixels not */
    ck_assert_int_eq(decode_bytes(op, jpg, len, msg, sizeof msg), SL_EFORMAT);
    ck_assert_msg(strstr(msg, "too large") && strstr(msg, "20000x20000") &&
                      strstr(msg, "max_pixels = 67108864"),
                  "%s", msg);
    free(jpg);

    /* Wrong rank or dtype. */
    in = new_tensor(SL_UINT8, 2, 4, 4, 0);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "decode") && strstr(msg, "(4, 4)"), "%s", msg);
    sl_tensor_release(in);
    in = new_tensor(SL_INT32, 1, 4, 0, 0);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    sl_tensor_release(in);

    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_OK);
    ck_assert_int_eq(so.dtype, SL_UINT8);
    ck_assert_int_eq(so.ndim, 3);
    ck_assert_int_eq(so.shape[0], -1);
    ck_assert_int_eq(so.shape[1], -1);
    ck_assert_int_eq(so.shape[2], 3);
    si = spec_of(SL_FLOAT32, 1, -1, 0, 0);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_ESHAPE);
    sl_op_release(op);
}
END_TEST

START_TEST(test_infer_bad_spec)
{
    /* A spec the caller filled in wrong (rank beyond SL_MAX_DIMS, negative
     * rank, unknown dtype) is refused (SL_ESHAPE) by every op, never read past. */
    sl_op *ops[4];
    sl_tensor_spec bad[3] = {spec_of(SL_FLOAT32, 3, 4, 4, 1), spec_of(SL_UINT8, 3, 4, 4, 1),
                             spec_of(SL_UINT8, 3, 4, 4, 1)}, so;
    char msg[256];
    bad[0].ndim = SL_MAX_DIMS + 1;
    bad[1].ndim = -1;
    bad[2].dtype = (sl_dtype)77;
    ck_assert_int_eq(sl_op_one_hot_new(&ops[0], 5, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_type_cast_new(&ops[1], SL_INT32, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_rescale_new(&ops[2], 1.0, 0.0, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_hwc2chw_new(&ops[3], NULL, 0), SL_OK);
    for (int i = 0; i < 4; i++) {
        for (int k = 0; k < 3; k++) {
            msg[0] = '\0';
            ck_assert_int_eq(sl_op_infer(ops[i], &bad[k], &so, msg, sizeof msg), SL_ESHAPE);
            ck_assert_msg(strlen(msg) > 0, "%s: no message", sl_op_name(ops[i]));
        }
        sl_op_release(ops[i]);
    }
}
END_TEST

/* --- suite ----------------------------------------------------------------- */

Suite *make_ops_suite(void)
{
    Suite *s = suite_create("ops");
    TCase *core = tu_tcase("core", 60);
    TCase *limits = tu_tcase("limits", 120);

    tcase_add_test(core, test_resize_linear_28_to_32);
    tcase_add_test(core, test_resize_linear_opencv_values);
    tcase_add_test(core, test_resize_linear_u8_shapes);
    tcase_add_test(core, test_resize_linear_f32_shapes);
    tcase_add_test(core, test_resize_linear_known);
    tcase_add_test(core, test_resize_paths);
    tcase_add_test(core, test_resize_rescale_fused);
    tcase_add_test(core, test_resize_nearest);
    tcase_add_test(core, test_resize_same_size_and_pool);
    tcase_add_test(core, test_rescale_dtypes);
    tcase_add_test(core, test_rescale_in_place);
    tcase_add_test(core, test_normalize_rgb_u8);
    tcase_add_test(core, test_normalize_other_dtypes);
    tcase_add_test(core, test_hwc2chw);
    tcase_add_test(core, test_hwc2chw_one_channel);
    tcase_add_test(core, test_type_cast_all_pairs);
    tcase_add_test(core, test_type_cast_conversions);
    tcase_add_test(core, test_type_cast_sign_in_place);
    tcase_add_test(core, test_random_crop);
    tcase_add_test(core, test_random_crop_determinism);
    tcase_add_test(core, test_random_flip_always_never);
    tcase_add_test(core, test_random_flip_half);
    tcase_add_test(core, test_one_hot);
    tcase_add_test(core, test_decode_matches_libjpeg);
    suite_add_tcase(s, core);

    tcase_add_test(limits, test_resize_refusals);
    tcase_add_test(limits, test_rescale_refusals);
    tcase_add_test(limits, test_normalize_refusals);
    tcase_add_test(limits, test_hwc2chw_refusals);
    tcase_add_test(limits, test_type_cast_refusals);
    tcase_add_test(limits, test_random_crop_refusals);
    tcase_add_test(limits, test_random_flip_refusals);
    tcase_add_test(limits, test_one_hot_refusals);
    tcase_add_test(limits, test_decode_bad_bytes);
    tcase_add_test(limits, test_decode_refusals);
    tcase_add_test(limits, test_infer_bad_spec);
    tcase_add_test(limits, test_constructor_messages);
    suite_add_tcase(s, limits);
    return s;
}

int main(void)
{
    SRunner *sr;
    int failed;
    if (TU_THREAD_SANITIZED) {
        puts("SKIP: the operators run on the calling thread only: nothing for "
             "ThreadSanitizer (the plain and ASan builds run this suite)");
        return 77;
    }
    sr = srunner_create(make_ops_suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
