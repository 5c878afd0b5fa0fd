/* check_nn.c: the neural-network kernels (ops/nn/nn.h). Each forward is
 * compared with a plain double-precision loop written here; each backward
 * with central finite differences of L = sum(out * R) for a fixed random R
 * (or of the loss itself); every ranged kernel gives the same bits when its
 * range is cut into pieces; plus the optimizers' exact values, the
 * initializer's statistics and the refusals of the dims initializers. */
#include <cblas.h>
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"
#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "core/rng.h"
#include "ops/nn/conv2d_impl.h"
#include "ops/nn/nn.h"

Suite *make_nn_suite(void);

/* --- helpers -------------------------------------------------------------- */

static float *falloc(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    ck_assert_ptr_nonnull(p);
    return p;
}

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* Uniform in [lo, hi). */
static void fill_uniform(float *p, size_t n, uint32_t seed, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        p[i] = lo + (hi - lo) * (float)(lcg(&seed) & 0xffffff) / 16777216.0f;
}

/* Values at least 0.1 away from 0 (ReLU's kink), either sign. */
static void fill_away_from_zero(float *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        float m = 0.1f + 0.9f * (float)(lcg(&seed) & 0xffff) / 65536.0f;
        p[i] = (lcg(&seed) & 1) ? m : -m;
    }
}

/* A shuffled ramp: all values distinct, 0.01 apart, so a nudge of 1e-3
 * never changes which one is the largest. */
static void fill_distinct(float *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = 0.01f * (float)i - 0.005f * (float)n;
    for (size_t i = n; i > 1; i--) {
        size_t j = lcg(&seed) % i;
        float t = p[i - 1];
        p[i - 1] = p[j];
        p[j] = t;
    }
}

static void fill_nan(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = NAN;
}

/* sum(a * r) in double. */
static double dot_d(const float *a, const float *r, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (double)a[i] * (double)r[i];
    return s;
}

/* A float result against a double reference whose terms' absolute values
 * sum to mag: float sums of k terms are off by about k * 2^-24 * mag at
 * worst; 1e-5 covers the sizes here (k <= 400) with room. */
static void check_close(const char *what, size_t i, float got, double want, double mag)
{
    double tol = 1e-5 * (mag + 1.0);
    ck_assert_msg(fabs((double)got - want) <= tol, "%s[%zu]: got %.9g, want %.9g (tol %.3g)",
                  what, i, (double)got, want, tol);
}

/* A finite-difference estimate against the analytic gradient. */
static void check_grad(const char *what, size_t i, float analytic, double fd, double rtol)
{
    double tol = rtol * fmax(1.0, fabs(fd));
    ck_assert_msg(fabs((double)analytic - fd) <= tol,
                  "%s[%zu]: backward %.7g, finite difference %.7g", what, i, (double)analytic,
                  fd);
}

/* Checks grad against central differences of loss(ctx), nudging every
 * element of x (every 7th when there are more than `dense` of them) by
 * +-1e-2. The kernels are linear in each argument, so the difference is
 * exact but for float rounding, which 1e-2 keeps small beside it. */
static void fd_check(double (*loss)(void *ctx), void *ctx, float *x, size_t nx,
                     const float *grad, const char *what, size_t dense)
{
    const float eps = 1e-2f;
    size_t step = nx > dense ? 7 : 1;
    for (size_t i = 0; i < nx; i += step) {
        float keep = x[i];
        double lp, lm;
        x[i] = keep + eps;
        lp = loss(ctx);
        x[i] = keep - eps;
        lm = loss(ctx);
        x[i] = keep;
        check_grad(what, i, grad[i], (lp - lm) / (double)((keep + eps) - (keep - eps)), 1e-3);
    }
}

/* --- range splitting ------------------------------------------------------ */

/* A ranged kernel under test: run(ctx, a, b) computes the range [a, b) of
 * [0, len) into the buffers out[]; reset (may be NULL) restores whatever a
 * run changes in place (optimizer state). */
typedef struct split_case {
    void (*run)(void *ctx, size_t a, size_t b);
    void (*reset)(void *ctx);
    void *ctx;
    size_t len;
    void *out[3];
    size_t bytes[3];
} split_case;

/* Cut points of [0, len) for a scheme: 0 one piece, 1 halves, 2 thirds,
 * 3 first and last element alone, 4 every element alone. Returns pieces. */
static size_t split_cuts(size_t len, int scheme, size_t *cut)
{
    size_t k = 0;
    cut[k++] = 0;
    switch (scheme) {
    case 1:
        cut[k++] = len / 2;
        break;
    case 2:
        cut[k++] = len / 3;
        cut[k++] = 2 * len / 3;
        break;
    case 3:
        cut[k++] = 1;
        cut[k++] = len - 1;
        break;
    case 4:
        for (size_t i = 1; i < len; i++)
            cut[k++] = i;
        break;
    default:
        break;
    }
    cut[k] = len;
    return k;
}

static void split_prepare(const split_case *sc)
{
    if (sc->reset) {
        sc->reset(sc->ctx);
        return;
    }
    for (int b = 0; b < 3 && sc->out[b]; b++)
        memset(sc->out[b], 0xA5, sc->bytes[b]); /* any stale value would show */
}

/* Runs the whole range once, then each scheme, and compares bit for bit. */
static void check_split(const split_case *sc, const char *what)
{
    void *want[3] = {NULL, NULL, NULL};
    size_t *cut = malloc((sc->len + 2) * sizeof *cut);
    ck_assert_ptr_nonnull(cut);
    ck_assert_uint_ge(sc->len, 3);

    split_prepare(sc);
    sc->run(sc->ctx, 0, sc->len);
    for (int b = 0; b < 3 && sc->out[b]; b++) {
        want[b] = malloc(sc->bytes[b]);
        ck_assert_ptr_nonnull(want[b]);
        memcpy(want[b], sc->out[b], sc->bytes[b]);
    }
    for (int scheme = 1; scheme <= 4; scheme++) {
        size_t pieces = split_cuts(sc->len, scheme, cut);
        split_prepare(sc);
        /* pieces in reverse order too: a range must not depend on the
         * ones before it having run */
        for (size_t p = pieces; p-- > 0;)
            sc->run(sc->ctx, cut[p], cut[p + 1]);
        for (int b = 0; b < 3 && sc->out[b]; b++)
            ck_assert_msg(memcmp(want[b], sc->out[b], sc->bytes[b]) == 0,
                          "%s: output %d differs when [0, %zu) is cut in %zu pieces (scheme %d)",
                          what, b, sc->len, pieces, scheme);
    }
    for (int b = 0; b < 3; b++)
        free(want[b]);
    free(cut);
}

/* --- conv2d --------------------------------------------------------------- */

static sl__conv2d_dims conv_dims(size_t n, size_t c, size_t h, size_t w, size_t oc, size_t k,
                                 size_t stride, size_t pad)
{
    sl__conv2d_dims d;
    memset(&d, 0, sizeof d);
    d.n = n;
    d.c = c;
    d.h = h;
    d.w = w;
    d.oc = oc;
    d.kh = k;
    d.kw = k;
    d.stride = stride;
    d.pad = pad;
    ck_assert_int_eq(sl__conv2d_dims_init(&d), 0);
    return d;
}

/* The shapes the conv tests run: small odd ones with every stride/pad mix,
 * a non-square kernel, and LeNet's two convs. */
static sl__conv2d_dims conv_case(int i)
{
    sl__conv2d_dims d;
    switch (i) {
    case 0:
        return conv_dims(3, 2, 7, 6, 4, 3, 1, 0);
    case 1:
        return conv_dims(3, 2, 7, 6, 4, 3, 2, 1);
    case 2:
        return conv_dims(3, 2, 7, 6, 4, 3, 1, 1);
    case 3:
        return conv_dims(2, 3, 9, 8, 5, 3, 3, 2); /* pad 2: some taps only see padding */
    case 4:
        d = conv_dims(2, 2, 6, 7, 3, 3, 2, 0);
        d.kw = 2; /* non-square kernel */
        ck_assert_int_eq(sl__conv2d_dims_init(&d), 0);
        return d;
    case 5:
        return conv_dims(2, 1, 32, 32, 6, 5, 1, 0); /* LeNet conv1 */
    default:
        return conv_dims(2, 6, 14, 14, 16, 5, 1, 0); /* LeNet conv2 */
    }
}
#define CONV_CASES 7

static size_t conv_in_size(const sl__conv2d_dims *d)
{
    return d->n * d->c * d->h * d->w;
}

static size_t conv_out_size(const sl__conv2d_dims *d)
{
    return d->n * d->oc * d->oh * d->ow;
}

static size_t conv_w_size(const sl__conv2d_dims *d)
{
    return d->oc * d->c * d->kh * d->kw;
}

/* Direct loops in double; mag gets the sum of |terms| of each output. */
static void ref_conv2d(double *out, double *mag, const float *in, const float *w,
                       const sl__conv2d_dims *d)
{
    for (size_t n = 0; n < d->n; n++)
        for (size_t o = 0; o < d->oc; o++)
            for (size_t y = 0; y < d->oh; y++)
                for (size_t x = 0; x < d->ow; x++) {
                    double s = 0.0, m = 0.0;
                    for (size_t c = 0; c < d->c; c++)
                        for (size_t i = 0; i < d->kh; i++)
                            for (size_t j = 0; j < d->kw; j++) {
                                long iy = (long)(y * d->stride + i) - (long)d->pad;
                                long ix = (long)(x * d->stride + j) - (long)d->pad;
                                double t;
                                if (iy < 0 || ix < 0 || iy >= (long)d->h || ix >= (long)d->w)
                                    continue;
                                t = (double)in[((n * d->c + c) * d->h + (size_t)iy) * d->w +
                                               (size_t)ix] *
                                    (double)w[((o * d->c + c) * d->kh + i) * d->kw + j];
                                s += t;
                                m += fabs(t);
                            }
                    size_t k = ((n * d->oc + o) * d->oh + y) * d->ow + x;
                    out[k] = s;
                    mag[k] = m;
                }
}

START_TEST(test_conv_dims)
{
    sl__conv2d_dims d = conv_dims(3, 2, 7, 6, 4, 3, 2, 1);
    ck_assert_uint_eq(d.oh, 4); /* (7 + 2 - 3) / 2 + 1 */
    ck_assert_uint_eq(d.ow, 3); /* (6 + 2 - 3) / 2 + 1 */
    d = conv_dims(32, 1, 32, 32, 6, 5, 1, 0);
    ck_assert_uint_eq(d.oh, 28);
    ck_assert_uint_eq(d.ow, 28);
    /* stride 1, no padding, on a CPU with a vector path: the direct
     * kernels save no columns; their scratch is 4 padded samples of dout
     * (6, 36, 36) plus the weights. Without one, im2col. */
    if (sl__conv2d_best_path() != SL__CONV2D_PATH_C) {
        ck_assert_uint_eq(sl__conv2d_cols_size(&d), 0);
        ck_assert_uint_eq(sl__conv2d_dcols_size(&d), (size_t)4 * 6 * 36 * 36 + 6 * 25);
    } else {
        ck_assert_uint_eq(sl__conv2d_cols_size(&d), (size_t)32 * 25 * 28 * 28);
        ck_assert_uint_eq(sl__conv2d_dcols_size(&d), (size_t)25 * 28 * 28);
    }
    d = conv_dims(32, 1, 32, 32, 6, 5, 2, 1); /* im2col: columns (N, C*KH*KW, OH*OW) */
    ck_assert_uint_eq(sl__conv2d_cols_size(&d), (size_t)32 * 25 * 15 * 15);
    ck_assert_uint_eq(sl__conv2d_dcols_size(&d), (size_t)25 * 15 * 15);
    d = conv_dims(1, 1, 5, 5, 1, 5, 1, 0); /* kernel exactly the input */
    ck_assert_uint_eq(d.oh, 1);
    ck_assert_uint_eq(d.ow, 1);
    d = conv_dims(1, 1, 3, 3, 1, 5, 1, 1); /* fits only with the padding */
    ck_assert_uint_eq(d.oh, 1);
}
END_TEST

START_TEST(test_conv_forward)
{
    sl__conv2d_dims d = conv_case(_i);
    size_t nin = conv_in_size(&d), nout = conv_out_size(&d), nw = conv_w_size(&d);
    float *in = falloc(nin), *w = falloc(nw), *out = falloc(nout);
    float *cols = falloc(sl__conv2d_cols_size(&d));
    double *want = malloc(nout * sizeof *want), *mag = malloc(nout * sizeof *mag);
    ck_assert_ptr_nonnull(want);
    ck_assert_ptr_nonnull(mag);

    fill_uniform(in, nin, 1 + (uint32_t)_i, -1.0f, 1.0f);
    fill_uniform(w, nw, 100 + (uint32_t)_i, -1.0f, 1.0f);
    fill_nan(out, nout);
    fill_nan(cols, sl__conv2d_cols_size(&d)); /* padding must be written as 0 */
    sl__conv2d_forward(out, cols, in, w, &d, 0, d.n);
    ref_conv2d(want, mag, in, w, &d);
    for (size_t i = 0; i < nout; i++)
        check_close("conv2d out", i, out[i], want[i], mag[i]);
    free(in);
    free(w);
    free(out);
    free(cols);
    free(want);
    free(mag);
}
END_TEST

/* Buffers for the conv gradient checks: L = sum(out * R). */
typedef struct conv_fd {
    sl__conv2d_dims d;
    float *in, *w, *out, *cols, *r;
} conv_fd;

static void conv_fd_init(conv_fd *f, int which)
{
    f->d = conv_case(which);
    f->in = falloc(conv_in_size(&f->d));
    f->w = falloc(conv_w_size(&f->d));
    f->out = falloc(conv_out_size(&f->d));
    f->cols = falloc(sl__conv2d_cols_size(&f->d));
    f->r = falloc(conv_out_size(&f->d));
    fill_uniform(f->in, conv_in_size(&f->d), 7 + (uint32_t)which, -1.0f, 1.0f);
    fill_uniform(f->w, conv_w_size(&f->d), 70 + (uint32_t)which, -1.0f, 1.0f);
    fill_uniform(f->r, conv_out_size(&f->d), 700 + (uint32_t)which, -1.0f, 1.0f);
}

static void conv_fd_free(conv_fd *f)
{
    free(f->in);
    free(f->w);
    free(f->out);
    free(f->cols);
    free(f->r);
}

static double conv_loss(void *ctx)
{
    conv_fd *f = ctx;
    sl__conv2d_forward(f->out, f->cols, f->in, f->w, &f->d, 0, f->d.n);
    return dot_d(f->out, f->r, conv_out_size(&f->d));
}

START_TEST(test_conv_backward_input)
{
    conv_fd f;
    size_t nin;
    float *din, *dcols;
    conv_fd_init(&f, _i);
    nin = conv_in_size(&f.d);
    din = falloc(nin);
    dcols = falloc(sl__conv2d_dcols_size(&f.d));
    fill_nan(din, nin); /* the kernel writes, it does not accumulate */
    fill_nan(dcols, sl__conv2d_dcols_size(&f.d));
    sl__conv2d_backward_input(din, dcols, f.r, f.w, &f.d, 0, f.d.n);
    fd_check(conv_loss, &f, f.in, nin, din, "conv2d din", 600);
    free(din);
    free(dcols);
    conv_fd_free(&f);
}
END_TEST

START_TEST(test_conv_backward_weight)
{
    conv_fd f;
    size_t nw;
    float *dw;
    conv_fd_init(&f, _i);
    nw = conv_w_size(&f.d);
    dw = falloc(nw);
    fill_nan(dw, nw);
    conv_loss(&f); /* the forward saves the columns the backward reads */
    sl__conv2d_backward_weight(dw, f.r, f.cols, f.in, &f.d, 0, f.d.oc);
    fd_check(conv_loss, &f, f.w, nw, dw, "conv2d dweight", 600);
    free(dw);
    conv_fd_free(&f);
}
END_TEST

typedef struct conv_split_ctx {
    sl__conv2d_dims d;
    float *in, *w, *out, *cols, *dout, *din, *dcols, *dw;
} conv_split_ctx;

static void conv_run_forward(void *p, size_t a, size_t b)
{
    conv_split_ctx *c = p;
    sl__conv2d_forward(c->out, c->cols, c->in, c->w, &c->d, a, b);
}

static void conv_run_backward_input(void *p, size_t a, size_t b)
{
    conv_split_ctx *c = p;
    sl__conv2d_backward_input(c->din, c->dcols, c->dout, c->w, &c->d, a, b);
}

static void conv_run_backward_weight(void *p, size_t a, size_t b)
{
    conv_split_ctx *c = p;
    sl__conv2d_backward_weight(c->dw, c->dout, c->cols, c->in, &c->d, a, b);
}

START_TEST(test_conv_split)
{
    conv_split_ctx c;
    split_case sc;
    size_t nin, nout, nw, ncols;
    memset(&c, 0, sizeof c);
    c.d = conv_case(_i);
    if (c.d.n < 3) /* the split needs three samples */
        c.d.n = 3;
    ck_assert_int_eq(sl__conv2d_dims_init(&c.d), 0);
    nin = conv_in_size(&c.d);
    nout = conv_out_size(&c.d);
    nw = conv_w_size(&c.d);
    ncols = sl__conv2d_cols_size(&c.d);
    c.in = falloc(nin);
    c.w = falloc(nw);
    c.out = falloc(nout);
    c.cols = falloc(ncols);
    c.dout = falloc(nout);
    c.din = falloc(nin);
    c.dcols = falloc(sl__conv2d_dcols_size(&c.d));
    c.dw = falloc(nw);
    fill_uniform(c.in, nin, 11, -1.0f, 1.0f);
    fill_uniform(c.w, nw, 12, -1.0f, 1.0f);
    fill_uniform(c.dout, nout, 13, -1.0f, 1.0f);

    memset(&sc, 0, sizeof sc);
    sc.ctx = &c;
    sc.run = conv_run_forward;
    sc.len = c.d.n;
    sc.out[0] = c.out;
    sc.bytes[0] = nout * sizeof(float);
    sc.out[1] = c.cols;
    sc.bytes[1] = ncols * sizeof(float);
    check_split(&sc, "conv2d forward");

    memset(&sc, 0, sizeof sc);
    sc.ctx = &c;
    sc.run = conv_run_backward_input;
    sc.len = c.d.n;
    sc.out[0] = c.din;
    sc.bytes[0] = nin * sizeof(float);
    check_split(&sc, "conv2d backward_input");

    /* cols now holds the full forward's columns */
    sl__conv2d_forward(c.out, c.cols, c.in, c.w, &c.d, 0, c.d.n);
    memset(&sc, 0, sizeof sc);
    sc.ctx = &c;
    sc.run = conv_run_backward_weight;
    sc.len = c.d.oc;
    sc.out[0] = c.dw;
    sc.bytes[0] = nw * sizeof(float);
    check_split(&sc, "conv2d backward_weight");

    free(c.in);
    free(c.w);
    free(c.out);
    free(c.cols);
    free(c.dout);
    free(c.din);
    free(c.dcols);
    free(c.dw);
}
END_TEST

/* --- conv2d, the direct paths ---------------------------------------------
 * Each path (AVX-512, AVX2, C) the CPU supports, called directly: against
 * the double reference, against the im2col path, by finite differences, and
 * range splits bit for bit. A loop test's _i is case * PATHS + path; a path
 * this CPU lacks passes without checking anything. */

#define PATHS ((int)SL__CONV2D_PATH_COUNT)

static sl__conv2d_dims direct_dims(size_t n, size_t c, size_t h, size_t w, size_t oc,
                                   size_t kh, size_t kw)
{
    sl__conv2d_dims d;
    memset(&d, 0, sizeof d);
    d.n = n;
    d.c = c;
    d.h = h;
    d.w = w;
    d.oc = oc;
    d.kh = kh;
    d.kw = kw;
    d.stride = 1;
    ck_assert_int_eq(sl__conv2d_dims_init(&d), 0);
    ck_assert(sl__conv2d_is_direct(&d));
    return d;
}

/* LeNet's two convs; then shapes that reach each corner of the vector
 * paths: output rows narrower than a vector (whole loads past the row,
 * masked ones at the end of the buffers), wider than 16 and ending in a
 * partial vector, exactly 16; kernels narrower than 5 columns (taps in
 * (ky, kx) order) and wider (runs of 5 that overlap); 1x1; a kernel as big
 * as the input; more channels than one register block; sample counts that
 * are not a multiple of the input gradient's groups of 4; and AVX2's weight
 * gradient by channel lanes (LeNet conv2, the 34-wide and 9-wide cases). */
static sl__conv2d_dims direct_case(int i)
{
    switch (i) {
    case 0:
        return direct_dims(2, 1, 32, 32, 6, 5, 5);   /* LeNet conv1 */
    case 1:
        return direct_dims(2, 6, 14, 14, 16, 5, 5);  /* LeNet conv2 */
    case 2:
        return direct_dims(3, 3, 7, 9, 5, 3, 2);     /* odd everything, 3x2 kernel */
    case 3:
        return direct_dims(3, 2, 9, 40, 13, 3, 7);   /* 34-wide rows, 7-wide kernel */
    case 4:
        return direct_dims(2, 4, 6, 6, 3, 3, 3);     /* 4-wide rows */
    case 5:
        return direct_dims(3, 5, 5, 8, 7, 1, 1);     /* 1x1 */
    case 6:
        return direct_dims(2, 2, 5, 6, 3, 5, 6);     /* kernel = input: 1x1 output */
    case 7:
        return direct_dims(4, 1, 20, 20, 8, 5, 5);   /* 16-wide rows */
    case 8:
        /* AVX2's weight gradient by channel lanes (conv2d_lanes.c): a
         * second vector of 1 channel, an odd count of positions, taps in a
         * block of 5 and one of 1 */
        return direct_dims(3, 2, 7, 10, 9, 3, 2);    /* 9-wide rows, 9 channels */
    case 9:
        /* AVX2's forward by channel lanes: two blocks of 16 channels, 28
         * positions (the last block of 6 moved back over the one before) */
        return direct_dims(2, 3, 6, 9, 32, 3, 3);    /* 7-wide rows, 32 channels */
    default:
        return direct_dims(5, 3, 12, 25, 4, 4, 6);   /* 20-wide rows, 5 samples */
    }
}
#define DIRECT_CASES 11

/* The path of loop index i, or -1 when this CPU lacks it. */
static int direct_path(int i)
{
    sl__conv2d_path p = (sl__conv2d_path)(i % PATHS);
    return sl__conv2d_path_supported(p) ? (int)p : -1;
}

/* din and dweight in double; mag gets the sum of |terms| of each. */
static void ref_conv2d_backward(double *din, double *din_mag, double *dw, double *dw_mag,
                                const float *dout, const float *in, const float *w,
                                const sl__conv2d_dims *d)
{
    const size_t nin = conv_in_size(d), nw = conv_w_size(d);
    memset(din, 0, nin * sizeof *din);
    memset(din_mag, 0, nin * sizeof *din_mag);
    memset(dw, 0, nw * sizeof *dw);
    memset(dw_mag, 0, nw * sizeof *dw_mag);
    for (size_t n = 0; n < d->n; n++)
        for (size_t o = 0; o < d->oc; o++)
            for (size_t y = 0; y < d->oh; y++)
                for (size_t x = 0; x < d->ow; x++) {
                    double g = dout[((n * d->oc + o) * d->oh + y) * d->ow + x];
                    for (size_t c = 0; c < d->c; c++)
                        for (size_t i = 0; i < d->kh; i++)
                            for (size_t j = 0; j < d->kw; j++) {
                                size_t ki = ((o * d->c + c) * d->kh + i) * d->kw + j;
                                size_t ii = ((n * d->c + c) * d->h + y + i) * d->w + x + j;
                                din[ii] += g * (double)w[ki];
                                din_mag[ii] += fabs(g * (double)w[ki]);
                                dw[ki] += g * (double)in[ii];
                                dw_mag[ki] += fabs(g * (double)in[ii]);
                            }
                }
}

/* One direct case's buffers, filled. */
typedef struct direct_bufs {
    sl__conv2d_dims d;
    size_t nin, nout, nw;
    float *in, *w, *dout, *out, *din, *dw, *scratch;
} direct_bufs;

static void direct_init_dims(direct_bufs *b, sl__conv2d_dims d, uint32_t seed)
{
    b->d = d;
    b->nin = conv_in_size(&b->d);
    b->nout = conv_out_size(&b->d);
    b->nw = conv_w_size(&b->d);
    /* exact sizes: under ASan a read past any of them fails the test */
    b->in = falloc(b->nin);
    b->w = falloc(b->nw);
    b->dout = falloc(b->nout);
    b->out = falloc(b->nout);
    b->din = falloc(b->nin);
    b->dw = falloc(b->nw);
    b->scratch = falloc(sl__conv2d_direct_scratch_size(&b->d));
    ck_assert_uint_eq(sl__conv2d_dcols_size(&b->d), sl__conv2d_direct_scratch_size(&b->d));
    fill_uniform(b->in, b->nin, seed, -1.0f, 1.0f);
    fill_uniform(b->w, b->nw, seed + 1, -1.0f, 1.0f);
    fill_uniform(b->dout, b->nout, seed + 2, -1.0f, 1.0f);
    fill_nan(b->out, b->nout); /* the kernels write, they do not accumulate */
    fill_nan(b->din, b->nin);
    fill_nan(b->dw, b->nw);
    fill_nan(b->scratch, sl__conv2d_direct_scratch_size(&b->d));
}

static void direct_init(direct_bufs *b, int which, uint32_t seed)
{
    direct_init_dims(b, direct_case(which), seed);
}

static void direct_free(direct_bufs *b)
{
    free(b->in);
    free(b->w);
    free(b->dout);
    free(b->out);
    free(b->din);
    free(b->dw);
    free(b->scratch);
}

START_TEST(test_conv_path_choice)
{
    sl__conv2d_path best = sl__conv2d_best_path();
    ck_assert(sl__conv2d_path_supported(SL__CONV2D_PATH_C));
    ck_assert(sl__conv2d_path_supported(best));
    ck_assert(!sl__conv2d_path_supported(SL__CONV2D_PATH_COUNT));
    ck_assert(!sl__conv2d_path_supported((sl__conv2d_path)-1));
    ck_assert_int_eq(sl__conv2d_best_path(), best); /* found once */
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    ck_assert_int_eq(sl__conv2d_path_supported(SL__CONV2D_PATH_AVX512),
                     __builtin_cpu_supports("avx512f") != 0);
    ck_assert_int_eq(sl__conv2d_path_supported(SL__CONV2D_PATH_AVX2),
                     __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
    if (__builtin_cpu_supports("avx512f"))
        ck_assert_int_eq(best, SL__CONV2D_PATH_AVX512);
#endif
}
END_TEST

/* Each of the three kernels on one path: against the double reference
 * (the same tolerance as the forward tests: 1e-5 of the terms' magnitude)
 * and against the im2col path. */
START_TEST(test_conv_direct_vs_reference)
{
    direct_bufs b;
    int path = direct_path(_i);
    double *want, *mag, *want_dw, *mag_dw;
    float *cols, *dcols, *im_out, *im_din, *im_dw;
    if (path < 0)
        return;
    direct_init(&b, _i / PATHS, 21 + (uint32_t)_i);
    want = malloc(b.nin * sizeof *want);
    mag = malloc(b.nin * sizeof *mag);
    want_dw = malloc(b.nw * sizeof *want_dw);
    mag_dw = malloc(b.nw * sizeof *mag_dw);
    ck_assert_ptr_nonnull(want);
    ck_assert_ptr_nonnull(mag);
    ck_assert_ptr_nonnull(want_dw);
    ck_assert_ptr_nonnull(mag_dw);
    cols = falloc(sl__conv2d_im2col_cols_size(&b.d));
    dcols = falloc(sl__conv2d_im2col_dcols_size(&b.d));
    im_out = falloc(b.nout);
    im_din = falloc(b.nin);
    im_dw = falloc(b.nw);

    sl__conv2d_direct_forward((sl__conv2d_path)path, b.out, b.in, b.w, &b.d, 0, b.d.n);
    sl__conv2d_direct_backward_input((sl__conv2d_path)path, b.din, b.scratch, b.dout, b.w,
                                     &b.d, 0, b.d.n);
    sl__conv2d_direct_backward_weight((sl__conv2d_path)path, b.dw, b.dout, b.in, &b.d, 0,
                                      b.d.oc);
    sl__conv2d_im2col_forward(im_out, cols, b.in, b.w, &b.d, 0, b.d.n);
    sl__conv2d_im2col_backward_input(im_din, dcols, b.dout, b.w, &b.d, 0, b.d.n);
    sl__conv2d_im2col_backward_weight(im_dw, b.dout, cols, &b.d, 0, b.d.oc);

    {
        double *want_out = malloc(b.nout * sizeof *want_out);
        double *mag_out = malloc(b.nout * sizeof *mag_out);
        ck_assert_ptr_nonnull(want_out);
        ck_assert_ptr_nonnull(mag_out);
        ref_conv2d(want_out, mag_out, b.in, b.w, &b.d);
        for (size_t i = 0; i < b.nout; i++) {
            check_close("direct out", i, b.out[i], want_out[i], mag_out[i]);
            check_close("direct out vs im2col", i, b.out[i], (double)im_out[i], mag_out[i]);
        }
        free(want_out);
        free(mag_out);
    }
    ref_conv2d_backward(want, mag, want_dw, mag_dw, b.dout, b.in, b.w, &b.d);
    for (size_t i = 0; i < b.nin; i++) {
        check_close("direct din", i, b.din[i], want[i], mag[i]);
        check_close("direct din vs im2col", i, b.din[i], (double)im_din[i], mag[i]);
    }
    for (size_t i = 0; i < b.nw; i++) {
        check_close("direct dweight", i, b.dw[i], want_dw[i], mag_dw[i]);
        check_close("direct dweight vs im2col", i, b.dw[i], (double)im_dw[i], mag_dw[i]);
    }
    free(want);
    free(mag);
    free(want_dw);
    free(mag_dw);
    free(cols);
    free(dcols);
    free(im_out);
    free(im_din);
    free(im_dw);
    direct_free(&b);
}
END_TEST

/* Finite differences of L = sum(out * dout) through the path's own
 * forward, for its input and weight gradients. */
typedef struct direct_fd {
    direct_bufs b;
    sl__conv2d_path path;
} direct_fd;

static double direct_loss(void *ctx)
{
    direct_fd *f = ctx;
    sl__conv2d_direct_forward(f->path, f->b.out, f->b.in, f->b.w, &f->b.d, 0, f->b.d.n);
    return dot_d(f->b.out, f->b.dout, f->b.nout);
}

START_TEST(test_conv_direct_finite_diff)
{
    direct_fd f;
    int path = direct_path(_i);
    if (path < 0)
        return;
    f.path = (sl__conv2d_path)path;
    direct_init(&f.b, _i / PATHS, 31 + (uint32_t)_i);
    sl__conv2d_direct_backward_input(f.path, f.b.din, f.b.scratch, f.b.dout, f.b.w, &f.b.d, 0,
                                     f.b.d.n);
    sl__conv2d_direct_backward_weight(f.path, f.b.dw, f.b.dout, f.b.in, &f.b.d, 0, f.b.d.oc);
    fd_check(direct_loss, &f, f.b.in, f.b.nin, f.b.din, "direct din", 600);
    fd_check(direct_loss, &f, f.b.w, f.b.nw, f.b.dw, "direct dweight", 600);
    direct_free(&f.b);
}
END_TEST

typedef struct direct_split_ctx {
    direct_bufs b;
    sl__conv2d_path path;
} direct_split_ctx;

static void direct_run_forward(void *p, size_t a, size_t e)
{
    direct_split_ctx *c = p;
    sl__conv2d_direct_forward(c->path, c->b.out, c->b.in, c->b.w, &c->b.d, a, e);
}

static void direct_run_backward_input(void *p, size_t a, size_t e)
{
    direct_split_ctx *c = p;
    sl__conv2d_direct_backward_input(c->path, c->b.din, c->b.scratch, c->b.dout, c->b.w,
                                     &c->b.d, a, e);
}

static void direct_run_backward_weight(void *p, size_t a, size_t e)
{
    direct_split_ctx *c = p;
    sl__conv2d_direct_backward_weight(c->path, c->b.dw, c->b.dout, c->b.in, &c->b.d, a, e);
}

/* Ranges of samples (forward, input gradient) and of output channels
 * (weight gradient) give the same bits however they are cut. */
START_TEST(test_conv_direct_split)
{
    direct_split_ctx c;
    split_case sc;
    sl__conv2d_dims d;
    int path = direct_path(_i);
    if (path < 0)
        return;
    c.path = (sl__conv2d_path)path;
    d = direct_case(_i / PATHS);
    if (d.n < 3) /* the splits need three samples and three channels */
        d.n = 3;
    if (d.oc < 3)
        d.oc = 3;
    ck_assert_int_eq(sl__conv2d_dims_init(&d), 0);
    direct_init_dims(&c.b, d, 41 + (uint32_t)_i);

    memset(&sc, 0, sizeof sc);
    sc.ctx = &c;
    sc.run = direct_run_forward;
    sc.len = c.b.d.n;
    sc.out[0] = c.b.out;
    sc.bytes[0] = c.b.nout * sizeof(float);
    check_split(&sc, "direct forward");

    memset(&sc, 0, sizeof sc);
    sc.ctx = &c;
    sc.run = direct_run_backward_input;
    sc.len = c.b.d.n;
    sc.out[0] = c.b.din;
    sc.bytes[0] = c.b.nin * sizeof(float);
    check_split(&sc, "direct backward_input");

    memset(&sc, 0, sizeof sc);
    sc.ctx = &c;
    sc.run = direct_run_backward_weight;
    sc.len = c.b.d.oc;
    sc.out[0] = c.b.dw;
    sc.bytes[0] = c.b.nw * sizeof(float);
    check_split(&sc, "direct backward_weight");
    direct_free(&c.b);
}
END_TEST

/* The public kernels take the direct path for stride 1 and no padding on a
 * CPU with a vector path: the same bits as that path called directly, with
 * no columns. (Without one they run im2col, which other tests cover.) */
START_TEST(test_conv_dispatch)
{
    direct_bufs b, e;
    sl__conv2d_path best = sl__conv2d_best_path();
    if (best == SL__CONV2D_PATH_C)
        return;
    direct_init(&b, _i, 61);
    direct_init(&e, _i, 61);
    ck_assert_uint_eq(sl__conv2d_cols_size(&b.d), 0);
    sl__conv2d_forward(b.out, NULL, b.in, b.w, &b.d, 0, b.d.n);
    sl__conv2d_backward_input(b.din, b.scratch, b.dout, b.w, &b.d, 0, b.d.n);
    sl__conv2d_backward_weight(b.dw, b.dout, NULL, b.in, &b.d, 0, b.d.oc);
    sl__conv2d_direct_forward(best, e.out, e.in, e.w, &e.d, 0, e.d.n);
    sl__conv2d_direct_backward_input(best, e.din, e.scratch, e.dout, e.w, &e.d, 0, e.d.n);
    sl__conv2d_direct_backward_weight(best, e.dw, e.dout, e.in, &e.d, 0, e.d.oc);
    ck_assert(memcmp(b.out, e.out, b.nout * sizeof(float)) == 0);
    ck_assert(memcmp(b.din, e.din, b.nin * sizeof(float)) == 0);
    ck_assert(memcmp(b.dw, e.dw, b.nw * sizeof(float)) == 0);
    direct_free(&b);
    direct_free(&e);
}
END_TEST

/* --- max_pool2d ----------------------------------------------------------- */

static sl__pool2d_dims pool_dims(size_t n, size_t c, size_t h, size_t w, size_t k, size_t s)
{
    sl__pool2d_dims d;
    memset(&d, 0, sizeof d);
    d.n = n;
    d.c = c;
    d.h = h;
    d.w = w;
    d.k = k;
    d.stride = s;
    ck_assert_int_eq(sl__pool2d_dims_init(&d), 0);
    return d;
}

/* 2/2 on odd sizes (a partial window dropped), overlapping 3/2, 3/1,
 * LeNet's two pools, and rows of 20 and of 8 windows (the vector paths'
 * whole blocks and tails). */
static sl__pool2d_dims pool_case(int i)
{
    switch (i) {
    case 0:
        return pool_dims(3, 2, 7, 6, 2, 2);
    case 1:
        return pool_dims(3, 2, 7, 6, 3, 2);
    case 2:
        return pool_dims(3, 2, 5, 7, 3, 1);
    case 3:
        return pool_dims(3, 6, 28, 28, 2, 2);
    case 4:
        return pool_dims(3, 16, 10, 10, 2, 2);
    case 5: /* rows of 20 windows: two blocks of 8 and a tail of 4 */
        return pool_dims(3, 2, 9, 41, 2, 2);
    default: /* rows of exactly 8 windows */
        return pool_dims(3, 2, 4, 16, 2, 2);
    }
}
#define POOL_CASES 7

static size_t pool_in_size(const sl__pool2d_dims *d)
{
    return d->n * d->c * d->h * d->w;
}

static size_t pool_out_size(const sl__pool2d_dims *d)
{
    return d->n * d->c * d->oh * d->ow;
}

START_TEST(test_pool_forward)
{
    sl__pool2d_dims d = pool_case(_i);
    size_t nin = pool_in_size(&d), nout = pool_out_size(&d);
    float *in = falloc(nin), *out = falloc(nout);
    int32_t *am = malloc(nout * sizeof *am);
    ck_assert_ptr_nonnull(am);
    fill_uniform(in, nin, 5 + (uint32_t)_i, -1.0f, 1.0f);
    /* quantized so that windows hold ties: the first maximum must win */
    for (size_t i = 0; i < nin; i++)
        in[i] = floorf(in[i] * 3.0f);
    fill_nan(out, nout);
    sl__max_pool2d_forward(out, am, in, &d, 0, d.n);
    for (size_t p = 0; p < d.n * d.c; p++)
        for (size_t y = 0; y < d.oh; y++)
            for (size_t x = 0; x < d.ow; x++) {
                const float *plane = in + p * d.h * d.w;
                size_t o = (p * d.oh + y) * d.ow + x, best = (size_t)-1;
                for (size_t i = 0; i < d.k; i++)
                    for (size_t j = 0; j < d.k; j++) {
                        size_t at = (y * d.stride + i) * d.w + x * d.stride + j;
                        if (best == (size_t)-1 || plane[at] > plane[best])
                            best = at;
                    }
                ck_assert_msg(out[o] == plane[best], "pool out[%zu]: %g, want %g", o,
                              (double)out[o], (double)plane[best]);
                ck_assert_msg(am[o] == (int32_t)best, "pool argmax[%zu]: %d, want %zu", o,
                              (int)am[o], best);
            }
    free(in);
    free(out);
    free(am);
}
END_TEST

START_TEST(test_pool_backward)
{
    sl__pool2d_dims d = pool_case(_i);
    size_t nin = pool_in_size(&d), nout = pool_out_size(&d);
    float *in = falloc(nin), *out = falloc(nout), *r = falloc(nout), *din = falloc(nin);
    int32_t *am = malloc(nout * sizeof *am);
    const float eps = 1e-3f;
    ck_assert_ptr_nonnull(am);
    fill_distinct(in, nin, 3 + (uint32_t)_i);
    fill_uniform(r, nout, 30 + (uint32_t)_i, -1.0f, 1.0f);
    sl__max_pool2d_forward(out, am, in, &d, 0, d.n);
    fill_nan(din, nin);
    sl__max_pool2d_backward(din, r, am, &d, 0, d.n);
    for (size_t i = 0; i < nin; i++) {
        float keep = in[i];
        double lp, lm;
        in[i] = keep + eps;
        sl__max_pool2d_forward(out, am, in, &d, 0, d.n);
        lp = dot_d(out, r, nout);
        in[i] = keep - eps;
        sl__max_pool2d_forward(out, am, in, &d, 0, d.n);
        lm = dot_d(out, r, nout);
        in[i] = keep;
        check_grad("max_pool2d din", i, din[i],
                   (lp - lm) / (double)((keep + eps) - (keep - eps)), 1e-3);
    }
    free(in);
    free(out);
    free(r);
    free(din);
    free(am);
}
END_TEST

typedef struct pool_split_ctx {
    sl__pool2d_dims d;
    float *in, *out, *dout, *din;
    int32_t *am;
} pool_split_ctx;

static void pool_run_forward(void *p, size_t a, size_t b)
{
    pool_split_ctx *c = p;
    sl__max_pool2d_forward(c->out, c->am, c->in, &c->d, a, b);
}

static void pool_run_backward(void *p, size_t a, size_t b)
{
    pool_split_ctx *c = p;
    sl__max_pool2d_backward(c->din, c->dout, c->am, &c->d, a, b);
}

START_TEST(test_pool_split)
{
    pool_split_ctx c;
    split_case sc;
    size_t nin, nout;
    c.d = pool_case(_i);
    nin = pool_in_size(&c.d);
    nout = pool_out_size(&c.d);
    c.in = falloc(nin);
    c.out = falloc(nout);
    c.dout = falloc(nout);
    c.din = falloc(nin);
    c.am = malloc(nout * sizeof *c.am);
    ck_assert_ptr_nonnull(c.am);
    fill_uniform(c.in, nin, 21, -1.0f, 1.0f);
    fill_uniform(c.dout, nout, 22, -1.0f, 1.0f);

    memset(&sc, 0, sizeof sc);
    sc.ctx = &c;
    sc.run = pool_run_forward;
    sc.len = c.d.n;
    sc.out[0] = c.out;
    sc.bytes[0] = nout * sizeof(float);
    sc.out[1] = c.am;
    sc.bytes[1] = nout * sizeof(int32_t);
    check_split(&sc, "max_pool2d forward");

    sl__max_pool2d_forward(c.out, c.am, c.in, &c.d, 0, c.d.n);
    memset(&sc, 0, sizeof sc);
    sc.ctx = &c;
    sc.run = pool_run_backward;
    sc.len = c.d.n;
    sc.out[0] = c.din;
    sc.bytes[0] = nin * sizeof(float);
    check_split(&sc, "max_pool2d backward");

    free(c.in);
    free(c.out);
    free(c.dout);
    free(c.din);
    free(c.am);
}
END_TEST

/* The executor's fused relu + max_pool2d (and their gradients) against
 * the two ops run one after the other, bit for bit: on ties, on windows
 * all at or below zero, on -0 and NaN (which ReLU turns into 0 before the
 * pool compares), for every pool case including overlapping windows, and
 * cut into pieces. */
static void pool_run_fused_forward(void *p, size_t a, size_t b)
{
    pool_split_ctx *c = p;
    sl__relu_max_pool2d_forward(c->out, c->am, c->in, &c->d, a, b);
}

static void pool_run_fused_backward(void *p, size_t a, size_t b)
{
    pool_split_ctx *c = p;
    sl__relu_max_pool2d_backward(c->din, c->dout, c->am, c->out, &c->d, a, b);
}

START_TEST(test_relu_pool_fused)
{
    sl__pool2d_dims d = pool_case(_i);
    size_t nin = pool_in_size(&d), nout = pool_out_size(&d);
    float *in = falloc(nin), *y = falloc(nin), *out = falloc(nout), *fout = falloc(nout);
    float *dout = falloc(nout), *dpool = falloc(nin), *din = falloc(nin), *fdin = falloc(nin);
    int32_t *am = malloc(nout * sizeof *am), *fam = malloc(nout * sizeof *fam);
    pool_split_ctx c;
    split_case sc;
    ck_assert_ptr_nonnull(am);
    ck_assert_ptr_nonnull(fam);
    fill_uniform(in, nin, 40 + (uint32_t)_i, -1.0f, 1.0f);
    for (size_t i = 0; i < nin; i++)
        in[i] = floorf(in[i] * 3.0f); /* ties, zeros, whole windows <= 0 */
    in[0] = -0.0f;
    in[1] = NAN;
    in[nin / 2] = NAN;
    in[nin - 1] = -NAN;
    if (d.w >= 4 && d.h >= 2) {
        /* a NaN in a window's second row under a positive first row: a
         * pool that compared before ReLU would let the NaN win */
        in[2] = 1.0f;
        in[3] = -1.0f;
        in[d.w + 2] = NAN;
        in[d.w + 3] = -1.0f;
    }
    fill_uniform(dout, nout, 50 + (uint32_t)_i, -1.0f, 1.0f);
    dout[0] = -0.0f;

    sl__relu_forward(y, in, 0, nin);
    sl__max_pool2d_forward(out, am, y, &d, 0, d.n);
    sl__max_pool2d_backward(dpool, dout, am, &d, 0, d.n);
    sl__relu_backward(din, dpool, y, 0, nin);

    fill_nan(fout, nout);
    fill_nan(fdin, nin);
    sl__relu_max_pool2d_forward(fout, fam, in, &d, 0, d.n);
    sl__relu_max_pool2d_backward(fdin, dout, fam, fout, &d, 0, d.n);
    ck_assert_int_eq(memcmp(out, fout, nout * sizeof *out), 0);
    ck_assert_int_eq(memcmp(am, fam, nout * sizeof *am), 0);
    ck_assert_int_eq(memcmp(din, fdin, nin * sizeof *din), 0);
    /* every vector path this CPU has, fused or not, against the plain C */
    for (int relu = 0; relu <= 1; relu++) {
        float *want = falloc(nout), *got = falloc(nout);
        int32_t *wam = malloc(nout * sizeof *wam), *gam = malloc(nout * sizeof *gam);
        ck_assert_ptr_nonnull(wam);
        ck_assert_ptr_nonnull(gam);
        sl__max_pool2d_forward_at(SL__CPU_GENERIC, relu, want, wam, in, &d, 0, d.n);
        for (int level = SL__CPU_AVX2; level <= (int)sl__cpu_level_get(); level++) {
            fill_nan(got, nout);
            memset(gam, 0xA5, nout * sizeof *gam);
            sl__max_pool2d_forward_at((sl__cpu_level)level, relu, got, gam, in, &d, 0, d.n);
            ck_assert_msg(memcmp(want, got, nout * sizeof *got) == 0,
                          "pool (relu %d) on %s: values differ from generic", relu,
                          sl__cpu_level_name((sl__cpu_level)level));
            ck_assert_msg(memcmp(wam, gam, nout * sizeof *gam) == 0,
                          "pool (relu %d) on %s: argmax differs from generic", relu,
                          sl__cpu_level_name((sl__cpu_level)level));
        }
        /* without argmax (a forward-only step): the same values on every
         * path, NaN, -0 and ties included */
        for (int level = SL__CPU_GENERIC; level <= (int)sl__cpu_level_get(); level++) {
            fill_nan(got, nout);
            sl__max_pool2d_forward_at((sl__cpu_level)level, relu, got, NULL, in, &d, 0, d.n);
            ck_assert_msg(memcmp(want, got, nout * sizeof *got) == 0,
                          "pool (relu %d) on %s without argmax: values differ", relu,
                          sl__cpu_level_name((sl__cpu_level)level));
        }
        if (relu) /* the fused forward is relu's output pooled, on every path */
            ck_assert_int_eq(memcmp(want, out, nout * sizeof *out), 0);
        {
            float *wdin = falloc(nin), *gdin = falloc(nin);
            fill_nan(wdin, nin);
            sl__max_pool2d_backward_at(SL__CPU_GENERIC, wdin, dout, wam, relu ? want : NULL, &d,
                                       0, d.n);
            for (int level = SL__CPU_AVX2; level <= (int)sl__cpu_level_get(); level++) {
                fill_nan(gdin, nin);
                sl__max_pool2d_backward_at((sl__cpu_level)level, gdin, dout, wam,
                                           relu ? want : NULL, &d, 0, d.n);
                ck_assert_msg(memcmp(wdin, gdin, nin * sizeof *gdin) == 0,
                              "pool backward (relu %d) on %s differs from generic", relu,
                              sl__cpu_level_name((sl__cpu_level)level));
            }
            free(wdin);
            free(gdin);
        }
        free(want);
        free(got);
        free(wam);
        free(gam);
    }

    c.d = d;
    c.in = in;
    c.out = fout;
    c.am = fam;
    c.dout = dout;
    c.din = fdin;
    memset(&sc, 0, sizeof sc);
    sc.ctx = &c;
    sc.run = pool_run_fused_forward;
    sc.len = d.n;
    sc.out[0] = fout;
    sc.bytes[0] = nout * sizeof(float);
    sc.out[1] = fam;
    sc.bytes[1] = nout * sizeof(int32_t);
    check_split(&sc, "relu+max_pool2d forward");
    sl__relu_max_pool2d_forward(fout, fam, in, &d, 0, d.n);
    memset(&sc, 0, sizeof sc);
    sc.ctx = &c;
    sc.run = pool_run_fused_backward;
    sc.len = d.n;
    sc.out[0] = fdin;
    sc.bytes[0] = nin * sizeof(float);
    check_split(&sc, "relu+max_pool2d backward");

    free(in);
    free(y);
    free(out);
    free(fout);
    free(dout);
    free(dpool);
    free(din);
    free(fdin);
    free(am);
    free(fam);
}
END_TEST

/* --- elementwise ---------------------------------------------------------- */

/* 1000: 62 blocks of 16 and a tail of 8. */
#define EW_N 1000

START_TEST(test_relu_forward)
{
    float *in = falloc(EW_N), *out = falloc(EW_N);
    fill_uniform(in, EW_N, 41, -1.0f, 1.0f);
    in[3] = 0.0f;
    in[4] = -0.0f;
    fill_nan(out, EW_N);
    sl__relu_forward(out, in, 0, EW_N);
    for (size_t i = 0; i < EW_N; i++)
        ck_assert_msg(out[i] == (in[i] > 0.0f ? in[i] : 0.0f), "relu[%zu]", i);
    /* in place */
    sl__relu_forward(in, in, 0, EW_N);
    ck_assert_int_eq(memcmp(in, out, EW_N * sizeof *in), 0);
    free(in);
    free(out);
}
END_TEST

START_TEST(test_relu_backward)
{
    float *in = falloc(EW_N), *out = falloc(EW_N), *r = falloc(EW_N), *din = falloc(EW_N);
    const float eps = 1e-3f;
    fill_away_from_zero(in, EW_N, 42);
    fill_uniform(r, EW_N, 43, -1.0f, 1.0f);
    sl__relu_forward(out, in, 0, EW_N);
    fill_nan(din, EW_N);
    sl__relu_backward(din, r, out, 0, EW_N);
    for (size_t i = 0; i < EW_N; i++) {
        float keep = in[i];
        double lp, lm;
        in[i] = keep + eps;
        sl__relu_forward(out, in, 0, EW_N);
        lp = dot_d(out, r, EW_N);
        in[i] = keep - eps;
        sl__relu_forward(out, in, 0, EW_N);
        lm = dot_d(out, r, EW_N);
        in[i] = keep;
        check_grad("relu din", i, din[i], (lp - lm) / (double)((keep + eps) - (keep - eps)),
                   1e-3);
    }
    /* in place over the incoming gradient */
    sl__relu_forward(out, in, 0, EW_N);
    sl__relu_backward(r, r, out, 0, EW_N);
    ck_assert_int_eq(memcmp(r, din, EW_N * sizeof *r), 0);
    free(in);
    free(out);
    free(r);
    free(din);
}
END_TEST

START_TEST(test_add_forward)
{
    float *a = falloc(EW_N), *b = falloc(EW_N), *out = falloc(EW_N), *x = falloc(EW_N);
    fill_uniform(a, EW_N, 44, -1.0f, 1.0f);
    fill_uniform(b, EW_N, 45, -1.0f, 1.0f);
    fill_nan(out, EW_N);
    sl__add_forward(out, a, b, 0, EW_N);
    for (size_t i = 0; i < EW_N; i++)
        ck_assert_msg(out[i] == a[i] + b[i], "add[%zu]", i);
    memcpy(x, a, EW_N * sizeof *x); /* out == a */
    sl__add_forward(x, x, b, 0, EW_N);
    ck_assert_int_eq(memcmp(x, out, EW_N * sizeof *x), 0);
    memcpy(x, b, EW_N * sizeof *x); /* out == b */
    sl__add_forward(x, a, x, 0, EW_N);
    ck_assert_int_eq(memcmp(x, out, EW_N * sizeof *x), 0);
    memcpy(x, a, EW_N * sizeof *x); /* out == a == b */
    sl__add_forward(x, x, x, 0, EW_N);
    for (size_t i = 0; i < EW_N; i++)
        ck_assert_msg(x[i] == 2.0f * a[i], "add self[%zu]", i);
    free(a);
    free(b);
    free(out);
    free(x);
}
END_TEST

typedef struct ew_ctx {
    float *a, *b, *c, *out;
} ew_ctx;

static void ew_run_relu(void *p, size_t i0, size_t i1)
{
    ew_ctx *c = p;
    sl__relu_forward(c->out, c->a, i0, i1);
}

static void ew_run_relu_backward(void *p, size_t i0, size_t i1)
{
    ew_ctx *c = p;
    sl__relu_backward(c->out, c->b, c->a, i0, i1);
}

static void ew_run_add(void *p, size_t i0, size_t i1)
{
    ew_ctx *c = p;
    sl__add_forward(c->out, c->a, c->b, i0, i1);
}

START_TEST(test_elementwise_split)
{
    ew_ctx c;
    split_case sc;
    /* 77 elements: schemes cut inside and across 16-element blocks */
    const size_t n = 77;
    c.a = falloc(n);
    c.b = falloc(n);
    c.out = falloc(n);
    fill_uniform(c.a, n, 46, -1.0f, 1.0f);
    fill_uniform(c.b, n, 47, -1.0f, 1.0f);
    memset(&sc, 0, sizeof sc);
    sc.ctx = &c;
    sc.len = n;
    sc.out[0] = c.out;
    sc.bytes[0] = n * sizeof(float);
    sc.run = ew_run_relu;
    check_split(&sc, "relu forward");
    sc.run = ew_run_relu_backward;
    check_split(&sc, "relu backward");
    sc.run = ew_run_add;
    check_split(&sc, "add");
    free(c.a);
    free(c.b);
    free(c.out);
}
END_TEST

/* --- dense ---------------------------------------------------------------- */

/* (N, IN, OUT): small odd ones (rows past a block of 4, columns past a
 * vector of 8 or 16, an odd output count), then LeNet's three layers at
 * batch 32. */
static const size_t dense_cases[][3] = {
    {3, 7, 5}, {5, 17, 13}, {7, 30, 9}, {32, 400, 120}, {32, 120, 84}, {32, 84, 10},
};
#define DENSE_CASES 6

/* The dense paths this machine can run: the BLAS one (generic), then each
 * vector level up to the CPU's. Returns how many, into levels. */
static int dense_levels(sl__cpu_level levels[3])
{
    int k = 0;
    levels[k++] = SL__CPU_GENERIC;
    for (int l = SL__CPU_AVX2; l <= (int)sl__cpu_level_get(); l++)
        levels[k++] = (sl__cpu_level)l;
    return k;
}

START_TEST(test_dense_forward)
{
    const size_t n = dense_cases[_i][0], ni = dense_cases[_i][1], no = dense_cases[_i][2];
    float *in = falloc(n * ni), *w = falloc(no * ni), *b = falloc(no), *out = falloc(n * no);
    sl__cpu_level levels[3];
    const int nlevels = dense_levels(levels);
    fill_uniform(in, n * ni, 51, -1.0f, 1.0f);
    fill_uniform(w, no * ni, 52, -1.0f, 1.0f);
    fill_uniform(b, no, 53, -1.0f, 1.0f);
    for (int l = 0; l < nlevels; l++)
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            fill_nan(out, n * no);
            sl__dense_forward_at(levels[l], out, in, w, with_bias ? b : NULL, n, ni, no, 0, n);
            for (size_t i = 0; i < n; i++)
                for (size_t o = 0; o < no; o++) {
                    double s = with_bias ? (double)b[o] : 0.0, m = fabs(s);
                    for (size_t k = 0; k < ni; k++) {
                        s += (double)in[i * ni + k] * (double)w[o * ni + k];
                        m += fabs((double)in[i * ni + k] * (double)w[o * ni + k]);
                    }
                    check_close(with_bias ? "dense out (bias)" : "dense out", i * no + o,
                                out[i * no + o], s, m);
                }
        }
    free(in);
    free(w);
    free(b);
    free(out);
}
END_TEST

typedef struct dense_fd {
    sl__cpu_level level;
    size_t n, ni, no;
    float *in, *w, *b, *out, *r;
} dense_fd;

static double dense_loss(void *ctx)
{
    dense_fd *f = ctx;
    sl__dense_forward_at(f->level, f->out, f->in, f->w, f->b, f->n, f->ni, f->no, 0, f->n);
    return dot_d(f->out, f->r, f->n * f->no);
}

START_TEST(test_dense_backward)
{
    /* odd shapes in full, one with OUT past a 16-wide block, one with rows
     * past a block of 4 and IN past 16 + 8; LeNet's last layer too (840
     * weights) */
    static const size_t cases[][3] = {{3, 7, 5}, {5, 17, 13}, {3, 9, 37}, {7, 30, 9}, {4, 84, 10}};
    sl__cpu_level levels[3];
    const int nlevels = dense_levels(levels);
    dense_fd f;
    float *din, *dw, *db;
    f.n = cases[_i][0];
    f.ni = cases[_i][1];
    f.no = cases[_i][2];
    f.in = falloc(f.n * f.ni);
    f.w = falloc(f.no * f.ni);
    f.b = falloc(f.no);
    f.out = falloc(f.n * f.no);
    f.r = falloc(f.n * f.no);
    din = falloc(f.n * f.ni);
    dw = falloc(f.no * f.ni);
    db = falloc(f.no);
    fill_uniform(f.in, f.n * f.ni, 61, -1.0f, 1.0f);
    fill_uniform(f.w, f.no * f.ni, 62, -1.0f, 1.0f);
    fill_uniform(f.b, f.no, 63, -1.0f, 1.0f);
    fill_uniform(f.r, f.n * f.no, 64, -1.0f, 1.0f);
    for (int l = 0; l < nlevels; l++) {
        f.level = levels[l];
        fill_nan(din, f.n * f.ni);
        fill_nan(dw, f.no * f.ni);
        fill_nan(db, f.no);
        sl__dense_backward_input_at(f.level, din, f.r, f.w, f.n, f.ni, f.no, 0, f.n);
        sl__dense_backward_weight_at(f.level, dw, db, f.r, f.in, f.n, f.ni, f.no, 0, f.no);
        fd_check(dense_loss, &f, f.in, f.n * f.ni, din, "dense din", (size_t)-1);
        fd_check(dense_loss, &f, f.w, f.no * f.ni, dw, "dense dweight", (size_t)-1);
        fd_check(dense_loss, &f, f.b, f.no, db, "dense dbias", (size_t)-1);
        /* dbias NULL: the weight gradient alone, the same bits */
        {
            float *dw2 = falloc(f.no * f.ni);
            fill_nan(dw2, f.no * f.ni);
            sl__dense_backward_weight_at(f.level, dw2, NULL, f.r, f.in, f.n, f.ni, f.no, 0,
                                         f.no);
            ck_assert_int_eq(memcmp(dw2, dw, f.no * f.ni * sizeof *dw), 0);
            free(dw2);
        }
    }
    free(f.in);
    free(f.w);
    free(f.b);
    free(f.out);
    free(f.r);
    free(din);
    free(dw);
    free(db);
}
END_TEST

typedef struct dense_split_ctx {
    sl__cpu_level level;
    size_t n, ni, no;
    float *in, *w, *b, *out, *dout, *din, *dw, *db;
} dense_split_ctx;

static void dense_run_forward(void *p, size_t a, size_t b)
{
    dense_split_ctx *c = p;
    sl__dense_forward_at(c->level, c->out, c->in, c->w, c->b, c->n, c->ni, c->no, a, b);
}

static void dense_run_backward_input(void *p, size_t a, size_t b)
{
    dense_split_ctx *c = p;
    sl__dense_backward_input_at(c->level, c->din, c->dout, c->w, c->n, c->ni, c->no, a, b);
}

static void dense_run_backward_weight(void *p, size_t a, size_t b)
{
    dense_split_ctx *c = p;
    sl__dense_backward_weight_at(c->level, c->dw, c->db, c->dout, c->in, c->n, c->ni, c->no, a,
                                 b);
}

START_TEST(test_dense_split)
{
    dense_split_ctx c;
    split_case sc;
    sl__cpu_level levels[3];
    const int nlevels = dense_levels(levels);
    c.n = dense_cases[_i][0];
    c.ni = dense_cases[_i][1];
    c.no = dense_cases[_i][2];
    c.in = falloc(c.n * c.ni);
    c.w = falloc(c.no * c.ni);
    c.b = falloc(c.no);
    c.out = falloc(c.n * c.no);
    c.dout = falloc(c.n * c.no);
    c.din = falloc(c.n * c.ni);
    c.dw = falloc(c.no * c.ni);
    c.db = falloc(c.no);
    fill_uniform(c.in, c.n * c.ni, 71, -1.0f, 1.0f);
    fill_uniform(c.w, c.no * c.ni, 72, -1.0f, 1.0f);
    fill_uniform(c.b, c.no, 73, -1.0f, 1.0f);
    fill_uniform(c.dout, c.n * c.no, 74, -1.0f, 1.0f);

    for (int l = 0; l < nlevels; l++) {
        c.level = levels[l];
        memset(&sc, 0, sizeof sc);
        sc.ctx = &c;
        sc.run = dense_run_forward;
        sc.len = c.n;
        sc.out[0] = c.out;
        sc.bytes[0] = c.n * c.no * sizeof(float);
        check_split(&sc, "dense forward");

        sc.run = dense_run_backward_input;
        sc.out[0] = c.din;
        sc.bytes[0] = c.n * c.ni * sizeof(float);
        check_split(&sc, "dense backward_input");

        sc.run = dense_run_backward_weight;
        sc.len = c.no;
        sc.out[0] = c.dw;
        sc.bytes[0] = c.no * c.ni * sizeof(float);
        sc.out[1] = c.db;
        sc.bytes[1] = c.no * sizeof(float);
        check_split(&sc, "dense backward_weight");
    }

    free(c.in);
    free(c.w);
    free(c.b);
    free(c.out);
    free(c.dout);
    free(c.din);
    free(c.dw);
    free(c.db);
}
END_TEST

/* --- loss and argmax ------------------------------------------------------ */

START_TEST(test_xent_forward)
{
    /* row 1 is shifted by +1000 and row 2 by -1000: a naive exp overflows */
    enum { N = 4, C = 5 };
    float logits[N * C], prob[N * C], loss = NAN;
    int32_t labels[N] = {0, 4, 2, 3};
    double total = 0.0;
    fill_uniform(logits, N * C, 81, -3.0f, 3.0f);
    for (int j = 0; j < C; j++) {
        logits[1 * C + j] += 1000.0f;
        logits[2 * C + j] -= 1000.0f;
    }
    fill_nan(prob, N * C);
    ck_assert_int_eq(sl__softmax_xent_forward(&loss, prob, logits, labels, N, C), 0);
    for (int i = 0; i < N; i++) {
        /* log-sum-exp relative to the label's logit: exp of gaps only */
        const float *x = logits + i * C;
        double s = 0.0;
        for (int j = 0; j < C; j++)
            s += exp((double)x[j] - (double)x[labels[i]]);
        total += log(s);
        for (int j = 0; j < C; j++)
            check_close("xent prob", (size_t)(i * C + j), prob[i * C + j],
                        exp((double)x[j] - (double)x[labels[i]]) / s, 0.1);
    }
    ck_assert_msg(fabs((double)loss - total / N) <= 1e-6 * fmax(1.0, total / N),
                  "loss %.9g, want %.9g", (double)loss, total / N);
}
END_TEST

START_TEST(test_xent_backward)
{
    enum { N = 5, C = 7 };
    float logits[N * C], prob[N * C], g[N * C], loss;
    int32_t labels[N] = {6, 0, 3, 3, 1};
    const float eps = 1e-3f, dloss = 0.75f;
    fill_uniform(logits, N * C, 82, -2.0f, 2.0f);
    ck_assert_int_eq(sl__softmax_xent_forward(&loss, prob, logits, labels, N, C), 0);
    fill_nan(g, N * C);
    sl__softmax_xent_backward(g, prob, labels, dloss, N, C, 0, N);
    /* d(dloss * loss) / dlogits */
    for (size_t i = 0; i < N * C; i++) {
        float keep = logits[i], lp, lm;
        logits[i] = keep + eps;
        ck_assert_int_eq(sl__softmax_xent_forward(&lp, prob, logits, labels, N, C), 0);
        logits[i] = keep - eps;
        ck_assert_int_eq(sl__softmax_xent_forward(&lm, prob, logits, labels, N, C), 0);
        logits[i] = keep;
        /* the loss is a float near 2: its rounding over 2 eps is ~1e-4 */
        ck_assert_msg(fabs((double)g[i] - dloss * ((double)lp - (double)lm) /
                                              (double)((keep + eps) - (keep - eps))) <= 3e-4,
                      "xent dlogits[%zu]: %.7g", i, (double)g[i]);
    }
}
END_TEST

START_TEST(test_xent_bad_label)
{
    enum { N = 4, C = 3 };
    float logits[N * C], prob[N * C], loss = 123.0f;
    int32_t neg[N] = {0, 2, -1, 5};  /* -1 at 2 comes first */
    int32_t big[N] = {1, 3, 0, -7};  /* C itself at 1 */
    int32_t last[N] = {0, 1, 2, 3};  /* only the last one */
    int32_t min[N] = {0, 0, 0, INT32_MIN};
    fill_uniform(logits, N * C, 83, -1.0f, 1.0f);
    ck_assert_int_eq(sl__softmax_xent_forward(&loss, prob, logits, neg, N, C), -1 - 2);
    ck_assert_int_eq(sl__softmax_xent_forward(&loss, prob, logits, big, N, C), -1 - 1);
    ck_assert_int_eq(sl__softmax_xent_forward(&loss, prob, logits, last, N, C), -1 - 3);
    ck_assert_int_eq(sl__softmax_xent_forward(&loss, prob, logits, min, N, C), -1 - 3);
    ck_assert_float_eq(loss, 123.0f); /* nothing written */
    last[3] = 2;
    ck_assert_int_eq(sl__softmax_xent_forward(&loss, prob, logits, last, N, C), 0);
}
END_TEST

typedef struct xent_split_ctx {
    size_t n, c;
    float *prob, *g, *logits;
    int32_t *labels, *am;
} xent_split_ctx;

static void xent_run_backward(void *p, size_t a, size_t b)
{
    xent_split_ctx *c = p;
    sl__softmax_xent_backward(c->g, c->prob, c->labels, 1.0f, c->n, c->c, a, b);
}

static void xent_run_argmax(void *p, size_t a, size_t b)
{
    xent_split_ctx *c = p;
    sl__argmax_forward(c->am, c->logits, c->n, c->c, a, b);
}

START_TEST(test_xent_split)
{
    enum { N = 32, C = 10 };
    float logits[N * C], prob[N * C], g[N * C], loss;
    int32_t labels[N], am[N];
    xent_split_ctx c = {N, C, prob, g, logits, labels, am};
    split_case sc;
    uint32_t seed = 84;
    fill_uniform(logits, N * C, 85, -4.0f, 4.0f);
    for (int i = 0; i < N; i++)
        labels[i] = (int32_t)(lcg(&seed) % C);
    ck_assert_int_eq(sl__softmax_xent_forward(&loss, prob, logits, labels, N, C), 0);
    memset(&sc, 0, sizeof sc);
    sc.ctx = &c;
    sc.len = N;
    sc.run = xent_run_backward;
    sc.out[0] = g;
    sc.bytes[0] = sizeof g;
    check_split(&sc, "softmax_xent backward");
    sc.run = xent_run_argmax;
    sc.out[0] = am;
    sc.bytes[0] = sizeof am;
    check_split(&sc, "argmax");
}
END_TEST

START_TEST(test_argmax)
{
    enum { N = 6, C = 4 };
    const float in[N * C] = {
        1, 3, 3, 2,          /* tie: the first */
        5, 5, 5, 5,          /* all equal: 0 */
        -1, -2, -1, -3,      /* negative tie */
        0, 1, 2, 9,          /* the last */
        7, -INFINITY, 7, 6,  /* tie at the ends */
        -INFINITY, -INFINITY, -5, -INFINITY,
    };
    const int32_t want[N] = {1, 0, 0, 3, 0, 2};
    int32_t out[N];
    memset(out, 0xff, sizeof out);
    sl__argmax_forward(out, in, N, C, 0, N);
    for (int i = 0; i < N; i++)
        ck_assert_msg(out[i] == want[i], "row %d: %d, want %d", i, (int)out[i], (int)want[i]);
}
END_TEST

/* --- optimizers ----------------------------------------------------------- */

/* 19 elements: a block of 16 and a tail. */
#define OPT_N 19

START_TEST(test_momentum_exact)
{
    /* lr 0.5, momentum 0.5, from w = 1, accum = 0; every value is a short
     * binary fraction, so float computes it exactly:
     *   g = 1:  accum = 0*0.5 + 1 = 1,       w = 1 - 0.5*1 = 0.5
     *   g = 2:  accum = 1*0.5 + 2 = 2.5,     w = 0.5 - 1.25 = -0.75
     *   g = -4: accum = 2.5*0.5 - 4 = -2.75, w = -0.75 + 1.375 = 0.625 */
    const float g[3] = {1.0f, 2.0f, -4.0f};
    const float want_a[3] = {1.0f, 2.5f, -2.75f}, want_w[3] = {0.5f, -0.75f, 0.625f};
    float w[OPT_N], a[OPT_N], grad[OPT_N];
    for (int i = 0; i < OPT_N; i++) {
        w[i] = 1.0f;
        a[i] = 0.0f;
    }
    for (int step = 0; step < 3; step++) {
        for (int i = 0; i < OPT_N; i++)
            grad[i] = g[step];
        sl__momentum_update(w, a, grad, 0.5f, 0.5f, 0, OPT_N);
        for (int i = 0; i < OPT_N; i++) {
            ck_assert_float_eq(a[i], want_a[step]);
            ck_assert_float_eq(w[i], want_w[step]);
        }
    }
    /* LeNet's lr 0.01 and momentum 0.9, g = 0.1 from w = 0.5:
     * accum 0.1, 0.19, 0.271; w 0.499, 0.4971, 0.49439 */
    {
        const double wa[3] = {0.1, 0.19, 0.271}, ww[3] = {0.499, 0.4971, 0.49439};
        for (int i = 0; i < OPT_N; i++) {
            w[i] = 0.5f;
            a[i] = 0.0f;
            grad[i] = 0.1f;
        }
        for (int step = 0; step < 3; step++) {
            sl__momentum_update(w, a, grad, 0.01f, 0.9f, 0, OPT_N);
            for (int i = 0; i < OPT_N; i++) {
                ck_assert_double_eq_tol(a[i], wa[step], 1e-7);
                ck_assert_double_eq_tol(w[i], ww[step], 1e-7);
            }
        }
    }
}
END_TEST

START_TEST(test_sgd_exact)
{
    /* lr 0.25 from w = 1: g = 2 -> 0.5, g = -1 -> 0.75, g = 0.5 -> 0.625 */
    const float g[3] = {2.0f, -1.0f, 0.5f}, want[3] = {0.5f, 0.75f, 0.625f};
    float w[OPT_N], grad[OPT_N];
    for (int i = 0; i < OPT_N; i++)
        w[i] = 1.0f;
    for (int step = 0; step < 3; step++) {
        for (int i = 0; i < OPT_N; i++)
            grad[i] = g[step];
        sl__sgd_update(w, grad, 0.25f, 0, OPT_N);
        for (int i = 0; i < OPT_N; i++)
            ck_assert_float_eq(w[i], want[step]);
    }
}
END_TEST

typedef struct opt_ctx {
    size_t n;
    float *w, *a, *g, *w0, *a0;
} opt_ctx;

static void opt_reset(void *p)
{
    opt_ctx *c = p;
    memcpy(c->w, c->w0, c->n * sizeof *c->w);
    memcpy(c->a, c->a0, c->n * sizeof *c->a);
}

static void opt_run_momentum(void *p, size_t a, size_t b)
{
    opt_ctx *c = p;
    sl__momentum_update(c->w, c->a, c->g, 0.01f, 0.9f, a, b);
}

static void opt_run_sgd(void *p, size_t a, size_t b)
{
    opt_ctx *c = p;
    sl__sgd_update(c->w, c->g, 0.01f, a, b);
}

START_TEST(test_optimizer_split)
{
    opt_ctx c;
    split_case sc;
    c.n = 77;
    c.w = falloc(c.n);
    c.a = falloc(c.n);
    c.g = falloc(c.n);
    c.w0 = falloc(c.n);
    c.a0 = falloc(c.n);
    fill_uniform(c.w0, c.n, 91, -1.0f, 1.0f);
    fill_uniform(c.a0, c.n, 92, -1.0f, 1.0f);
    fill_uniform(c.g, c.n, 93, -1.0f, 1.0f);
    memset(&sc, 0, sizeof sc);
    sc.ctx = &c;
    sc.reset = opt_reset;
    sc.len = c.n;
    sc.out[0] = c.w;
    sc.bytes[0] = c.n * sizeof(float);
    sc.out[1] = c.a;
    sc.bytes[1] = c.n * sizeof(float);
    sc.run = opt_run_momentum;
    check_split(&sc, "momentum");
    sc.run = opt_run_sgd;
    check_split(&sc, "sgd");
    free(c.w);
    free(c.a);
    free(c.g);
    free(c.w0);
    free(c.a0);
}
END_TEST

/* --- initializers --------------------------------------------------------- */

START_TEST(test_truncated_normal)
{
    const size_t n = 100000;
    const float sigma = 0.02f;
    float *v = falloc(n), *v2 = falloc(n);
    double sum = 0.0, sq = 0.0, mean, sd, beyond1 = 0.0, amax = 0.0;
    sl_rng rng;
    sl__rng_seed(&rng, 1234, 0, 0, 0);
    sl__init_truncated_normal(v, n, sigma, &rng);
    for (size_t i = 0; i < n; i++) {
        double x = v[i];
        ck_assert_msg(fabs(x) <= 2.0 * sigma, "value %zu: %g outside 2 sigma", i, x);
        sum += x;
        sq += x * x;
        beyond1 += fabs(x) > sigma;
        amax = fmax(amax, fabs(x));
    }
    mean = sum / (double)n;
    sd = sqrt(sq / (double)n - mean * mean);
    /* standard errors: mean 0.88 sigma / sqrt(n) = 0.0028 sigma, sd about
     * 0.002 sigma; the bounds are four or five of them */
    ck_assert_msg(fabs(mean) < 0.012 * sigma, "mean %g", mean);
    ck_assert_msg(fabs(sd / sigma - 0.8796) < 0.01, "sd %g sigma, want 0.8796", sd / sigma);
    /* shape: P(1 < |z| < 2) / P(|z| < 2) = 0.2718 / 0.9545 = 0.2848 */
    ck_assert_msg(fabs(beyond1 / (double)n - 0.2848) < 0.01, "beyond 1 sigma: %g",
                  beyond1 / (double)n);
    ck_assert_msg(amax > 1.98 * sigma, "largest |value| %g sigma", amax / sigma);

    /* the same seed gives the same values; another seed others */
    sl__rng_seed(&rng, 1234, 0, 0, 0);
    sl__init_truncated_normal(v2, n, sigma, &rng);
    ck_assert_int_eq(memcmp(v, v2, n * sizeof *v), 0);
    sl__rng_seed(&rng, 1235, 0, 0, 0);
    sl__init_truncated_normal(v2, n, sigma, &rng);
    ck_assert_int_ne(memcmp(v, v2, n * sizeof *v), 0);
    free(v);
    free(v2);
}
END_TEST

START_TEST(test_fill)
{
    float v[37];
    fill_nan(v, 37);
    sl__init_fill(v, 37, 0.25f);
    for (int i = 0; i < 37; i++)
        ck_assert_float_eq(v[i], 0.25f);
    sl__init_fill(v, 0, 1.0f); /* nothing */
    ck_assert_float_eq(v[0], 0.25f);
}
END_TEST

/* --- limits --------------------------------------------------------------- */

static int conv_init(size_t n, size_t c, size_t h, size_t w, size_t oc, size_t kh, size_t kw,
                     size_t stride, size_t pad)
{
    sl__conv2d_dims d;
    memset(&d, 0, sizeof d);
    d.n = n;
    d.c = c;
    d.h = h;
    d.w = w;
    d.oc = oc;
    d.kh = kh;
    d.kw = kw;
    d.stride = stride;
    d.pad = pad;
    return sl__conv2d_dims_init(&d);
}

START_TEST(test_conv_dims_refused)
{
    const size_t big = (size_t)-1 / 2;
    ck_assert_int_eq(conv_init(1, 1, 4, 4, 1, 5, 5, 1, 0), -1); /* kernel > input */
    ck_assert_int_eq(conv_init(1, 1, 4, 9, 1, 5, 3, 1, 0), -1); /* too tall only */
    ck_assert_int_eq(conv_init(1, 1, 9, 4, 1, 3, 5, 1, 0), -1); /* too wide only */
    ck_assert_int_eq(conv_init(1, 1, 3, 3, 1, 6, 6, 1, 1), -1); /* > padded input */
    ck_assert_int_eq(conv_init(1, 1, 4, 4, 1, 5, 5, 1, 1), 0);  /* padding makes it fit */
    ck_assert_int_eq(conv_init(0, 1, 4, 4, 1, 3, 3, 1, 0), -1);
    ck_assert_int_eq(conv_init(1, 0, 4, 4, 1, 3, 3, 1, 0), -1);
    ck_assert_int_eq(conv_init(1, 1, 0, 4, 1, 3, 3, 1, 3), -1);
    ck_assert_int_eq(conv_init(1, 1, 4, 0, 1, 3, 3, 1, 3), -1);
    ck_assert_int_eq(conv_init(1, 1, 4, 4, 0, 3, 3, 1, 0), -1);
    ck_assert_int_eq(conv_init(1, 1, 4, 4, 1, 0, 3, 1, 0), -1);
    ck_assert_int_eq(conv_init(1, 1, 4, 4, 1, 3, 0, 1, 0), -1);
    ck_assert_int_eq(conv_init(1, 1, 4, 4, 1, 3, 3, 0, 0), -1); /* stride 0 */
    /* sizes whose buffers cannot be addressed */
    ck_assert_int_eq(conv_init(big, 4, 4, 4, 1, 3, 3, 1, 0), -1);
    ck_assert_int_eq(conv_init(1, 1, 4, 4, 1, 3, 3, 1, big), -1);
    ck_assert_int_eq(conv_init(1, 1, 4, 4, 1, 3, 3, 1, (size_t)-1), -1);
    /* GEMM sizes past cblas's int: C*KH*KW, then OH*OW */
    ck_assert_int_eq(conv_init(1, 2000000, 40, 40, 1, 40, 40, 1, 0), -1);
    ck_assert_int_eq(conv_init(1, 1, 50000, 50000, 1, 1, 1, 1, 0), -1);
    ck_assert_int_eq(conv_init(1, 1, 40000, 40000, 1, 1, 1, 1, 0), 0);
}
END_TEST

static int pool_init(size_t n, size_t c, size_t h, size_t w, size_t k, size_t s)
{
    sl__pool2d_dims d;
    memset(&d, 0, sizeof d);
    d.n = n;
    d.c = c;
    d.h = h;
    d.w = w;
    d.k = k;
    d.stride = s;
    return sl__pool2d_dims_init(&d);
}

START_TEST(test_pool_dims_refused)
{
    ck_assert_int_eq(pool_init(1, 1, 2, 2, 3, 1), -1); /* window > input */
    ck_assert_int_eq(pool_init(1, 1, 2, 5, 3, 1), -1); /* too short only */
    ck_assert_int_eq(pool_init(1, 1, 5, 2, 3, 1), -1); /* too narrow only */
    ck_assert_int_eq(pool_init(0, 1, 4, 4, 2, 2), -1);
    ck_assert_int_eq(pool_init(1, 0, 4, 4, 2, 2), -1);
    ck_assert_int_eq(pool_init(1, 1, 0, 4, 2, 2), -1);
    ck_assert_int_eq(pool_init(1, 1, 4, 0, 2, 2), -1);
    ck_assert_int_eq(pool_init(1, 1, 4, 4, 0, 2), -1);
    ck_assert_int_eq(pool_init(1, 1, 4, 4, 2, 0), -1);
    ck_assert_int_eq(pool_init(1, 1, 70000, 70000, 2, 2), -1); /* argmax beyond int32 */
    ck_assert_int_eq(pool_init((size_t)-1 / 4, 4, 4, 4, 2, 2), -1);
    ck_assert_int_eq(pool_init(1, 1, 2, 2, 2, 2), 0);
    {
        sl__pool2d_dims d = pool_dims(1, 1, 7, 6, 2, 2);
        ck_assert_uint_eq(d.oh, 3); /* the partial window is dropped */
        ck_assert_uint_eq(d.ow, 3);
    }
}
END_TEST

Suite *make_nn_suite(void)
{
    Suite *s = suite_create("nn");
    TCase *tc;

    tc = tu_tcase("conv2d", 120);
    tcase_add_test(tc, test_conv_dims);
    tcase_add_loop_test(tc, test_conv_forward, 0, CONV_CASES);
    tcase_add_loop_test(tc, test_conv_backward_input, 0, CONV_CASES);
    tcase_add_loop_test(tc, test_conv_backward_weight, 0, CONV_CASES);
    tcase_add_loop_test(tc, test_conv_split, 0, CONV_CASES);
    suite_add_tcase(s, tc);

    tc = tu_tcase("conv2d_direct", 300);
    tcase_add_test(tc, test_conv_path_choice);
    tcase_add_loop_test(tc, test_conv_direct_vs_reference, 0, DIRECT_CASES * PATHS);
    tcase_add_loop_test(tc, test_conv_direct_finite_diff, 0, DIRECT_CASES * PATHS);
    tcase_add_loop_test(tc, test_conv_direct_split, 0, DIRECT_CASES * PATHS);
    tcase_add_loop_test(tc, test_conv_dispatch, 0, DIRECT_CASES);
    suite_add_tcase(s, tc);

    tc = tu_tcase("max_pool2d", 60);
    tcase_add_loop_test(tc, test_pool_forward, 0, POOL_CASES);
    tcase_add_loop_test(tc, test_pool_backward, 0, POOL_CASES);
    tcase_add_loop_test(tc, test_pool_split, 0, POOL_CASES);
    tcase_add_loop_test(tc, test_relu_pool_fused, 0, POOL_CASES);
    suite_add_tcase(s, tc);

    tc = tu_tcase("elementwise", 60);
    tcase_add_test(tc, test_relu_forward);
    tcase_add_test(tc, test_relu_backward);
    tcase_add_test(tc, test_add_forward);
    tcase_add_test(tc, test_elementwise_split);
    suite_add_tcase(s, tc);

    tc = tu_tcase("dense", 60);
    tcase_add_loop_test(tc, test_dense_forward, 0, DENSE_CASES);
    tcase_add_loop_test(tc, test_dense_backward, 0, 5);
    tcase_add_loop_test(tc, test_dense_split, 0, DENSE_CASES);
    suite_add_tcase(s, tc);

    tc = tu_tcase("loss", 60);
    tcase_add_test(tc, test_xent_forward);
    tcase_add_test(tc, test_xent_backward);
    tcase_add_test(tc, test_xent_bad_label);
    tcase_add_test(tc, test_xent_split);
    tcase_add_test(tc, test_argmax);
    suite_add_tcase(s, tc);

    tc = tu_tcase("optimizer", 60);
    tcase_add_test(tc, test_momentum_exact);
    tcase_add_test(tc, test_sgd_exact);
    tcase_add_test(tc, test_optimizer_split);
    suite_add_tcase(s, tc);

    tc = tu_tcase("init", 60);
    tcase_add_test(tc, test_truncated_normal);
    tcase_add_test(tc, test_fill);
    suite_add_tcase(s, tc);

    tc = tu_tcase("limits", 60);
    tcase_add_test(tc, test_conv_dims_refused);
    tcase_add_test(tc, test_pool_dims_refused);
    suite_add_tcase(s, tc);

    return s;
}

int main(void)
{
    /* as the executor does: OpenBLAS itself single-threaded */
    openblas_set_num_threads(1);
    return tu_run_suite_unless_tsan(make_nn_suite,
                                    "the kernels run on the calling thread only: nothing for "
                                    "ThreadSanitizer (the plain and ASan builds run this suite)");
}
