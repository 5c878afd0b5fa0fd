/* conv2d.c: 2-D cross-correlation, no bias: the dims, the choice between
 * the direct kernels (conv2d_direct.c: stride 1, no padding) and im2col,
 * and the im2col path, through OpenBLAS, for every other stride and padding.
 *
 * Why direct kernels where they fit: im2col copies each input KH*KW times
 * (LeNet's conv1 forward spent half its time there), and the columns the
 * forward saves for the weight gradient (2.5 MB for conv1 at batch 32) are
 * written by one core and read by both, which made the two threads fight
 * over cache lines; the direct weight gradient reads the input (128 KB).
 *
 * In the im2col path, per sample the forward is
 * out (OC, P) = weight (OC, K) . cols (K, P) with K = C*KH*KW and
 * P = OH*OW; the input gradient is dcols (K, P) = weight^T . dout followed
 * by col2im; the weight gradient is dweight[oc] (K) += cols (K, P) .
 * dout[oc] (P), summed over the samples in order.
 *
 * Why the weight gradient is a GEMV per (sample, channel) and not one GEMM
 * over the range [oc0, oc1): OpenBLAS's sgemm tiles C into register blocks
 * (12 rows in the Haswell kernel 0.3.21 picks here; leftover rows go through
 * smaller edge kernels that sum in another order), so a row's bits depend on
 * where it falls in the call, i.e. on the range. Every BLAS call here has a
 * shape that depends on d alone, which keeps the results bit-identical
 * however the range is split (tests/check_nn.c checks it; a GEMM over the
 * range fails that test). */
#include "ops/nn/nn.h"

#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "core/error.h"
#include "ops/nn/conv2d_impl.h"

/* One sample's im2col matrix is (C*KH*KW, OH*OW). */
static size_t conv_rows(const sl__conv2d_dims *d)
{
    return d->c * d->kh * d->kw;
}

static size_t conv_cols(const sl__conv2d_dims *d)
{
    return d->oh * d->ow;
}

/* Products of sizes checked one factor at a time; 0 on overflow. */
static int mul3(size_t a, size_t b, size_t c, size_t *out)
{
    size_t ab;
    return sl__mul_size(a, b, &ab) && sl__mul_size(ab, c, out);
}

int sl__conv2d_dims_init(sl__conv2d_dims *d)
{
    size_t hp, wp, k, p, t;

    if (d->n == 0 || d->c == 0 || d->h == 0 || d->w == 0 || d->oc == 0 || d->kh == 0 ||
        d->kw == 0 || d->stride == 0)
        return -1;
    /* padded sizes h + 2 pad and w + 2 pad, without wrapping */
    if (d->pad > ((size_t)-1 - d->h) / 2 || d->pad > ((size_t)-1 - d->w) / 2)
        return -1;
    hp = d->h + 2 * d->pad;
    wp = d->w + 2 * d->pad;
    if (d->kh > hp || d->kw > wp)
        return -1;
    d->oh = (hp - d->kh) / d->stride + 1;
    d->ow = (wp - d->kw) / d->stride + 1;
    /* Every buffer size must fit size_t and the GEMM sizes cblas's int. */
    if (!mul3(d->c, d->kh, d->kw, &k) || !sl__mul_size(d->oh, d->ow, &p) || k > INT_MAX ||
        p > INT_MAX || d->oc > INT_MAX)
        return -1;
    if (!mul3(d->n, d->c, d->h, &t) || !sl__mul_size(t, d->w, &t) ||      /* in */
        !mul3(d->n, d->oc, p, &t) ||                                     /* out */
        !mul3(d->oc, k, 1, &t) ||                                        /* weight */
        !mul3(d->n, k, p, &t))                                           /* cols */
        return -1;
    /* the direct backward_input's scratch: padded dout plus the weights */
    if (sl__conv2d_is_direct(d)) {
        size_t hp2, wp2, padded, wsz;
        if (d->h > (size_t)-1 - d->kh || d->w > (size_t)-1 - d->kw)
            return -1;
        hp2 = d->h + d->kh - 1;   /* OH + 2 (KH - 1) */
        wp2 = d->w + d->kw - 1;
        if (!mul3(d->oc, hp2, wp2, &padded) || !sl__mul_size(padded, SL__CONV2D_GROUP, &padded) ||
            !mul3(d->oc, k, 1, &wsz) || padded > (size_t)-1 - wsz)
            return -1;
    }
    return 0;
}

int sl__conv2d_is_direct(const sl__conv2d_dims *d)
{
    return d->stride == 1 && d->pad == 0;
}

size_t sl__conv2d_im2col_cols_size(const sl__conv2d_dims *d)
{
    return d->n * conv_rows(d) * conv_cols(d);
}

size_t sl__conv2d_im2col_dcols_size(const sl__conv2d_dims *d)
{
    return conv_rows(d) * conv_cols(d);
}

/* Direct kernels where they fit and a vector path exists; without one
 * (no AVX2, or not x86) the plain C direct loops are 3-8x slower than
 * im2col through OpenBLAS, so im2col it is. */
static int use_direct(const sl__conv2d_dims *d)
{
    return sl__conv2d_is_direct(d) && sl__conv2d_best_path() != SL__CONV2D_PATH_C;
}

size_t sl__conv2d_cols_size(const sl__conv2d_dims *d)
{
    return use_direct(d) ? 0 : sl__conv2d_im2col_cols_size(d);
}

size_t sl__conv2d_dcols_size(const sl__conv2d_dims *d)
{
    return use_direct(d) ? sl__conv2d_direct_scratch_size(d) : sl__conv2d_im2col_dcols_size(d);
}

/* The outputs o in [0, out) whose input position o * stride + k - pad falls
 * in [0, len): [*lo, *hi), empty when the tap only ever sees padding. */
static void valid_range(size_t k, size_t pad, size_t stride, size_t len, size_t out,
                        size_t *lo, size_t *hi)
{
    size_t a = 0, b = 0;
    if (k < pad)
        a = (pad - k + stride - 1) / stride;   /* first o with o*stride + k >= pad */
    if (k < pad + len)
        b = (pad + len - k + stride - 1) / stride;   /* first o past the input */
    if (a > out)
        a = out;
    if (b > out)
        b = out;
    if (b < a)
        b = a;
    *lo = a;
    *hi = b;
}

/* Row helpers for im2col and col2im. Rows are short (an output row: 28
 * floats for LeNet) and there are many, so no library call per row: copies
 * and zeroing go by memcpy/memset of a constant 64 or 16 bytes, which GCC
 * expands inline (a plain copy loop it would turn back into a memmove
 * call), then at most 3 elements one by one. */
static void copy_row(float *restrict dst, const float *restrict src, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        memcpy(dst + i, src + i, 16 * sizeof *dst);
    for (; i + 4 <= n; i += 4)
        memcpy(dst + i, src + i, 4 * sizeof *dst);
    for (size_t j = i; j < i + 3; j++) /* at most 3 left */
        if (j < n)
            dst[j] = src[j];
}

static void zero_row(float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        memset(dst + i, 0, 16 * sizeof *dst);
    for (; i + 4 <= n; i += 4)
        memset(dst + i, 0, 4 * sizeof *dst);
    for (size_t j = i; j < i + 3; j++)
        if (j < n)
            dst[j] = 0.0f;
}

/* dst[i] += src[i]: blocks of a fixed 16, then 4, elements, which GCC
 * vectorizes at -O2, before a scalar tail. */
static void add_row(float *restrict dst, const float *restrict src, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (size_t j = i; j < i + 16; j++)
            dst[j] += src[j];
    for (; i + 4 <= n; i += 4)
        for (size_t j = i; j < i + 4; j++)
            dst[j] += src[j];
    for (; i < n; i++)
        dst[i] += src[i];
}

/* cols (C*KH*KW, OH*OW) of one sample in (C, H, W); padding reads as 0. */
static void im2col(float *restrict cols, const float *restrict in, const sl__conv2d_dims *d)
{
    const size_t s = d->stride, oh = d->oh, ow = d->ow;
    for (size_t c = 0; c < d->c; c++) {
        for (size_t ki = 0; ki < d->kh; ki++) {
            size_t y0, y1;
            valid_range(ki, d->pad, s, d->h, oh, &y0, &y1);
            for (size_t kj = 0; kj < d->kw; kj++) {
                float *row = cols + ((c * d->kh + ki) * d->kw + kj) * oh * ow; /* (OH, OW) */
                size_t x0, x1;
                valid_range(kj, d->pad, s, d->w, ow, &x0, &x1);
                zero_row(row, y0 * ow);
                for (size_t y = y0; y < y1; y++) {
                    const float *src = in + (c * d->h + y * s + ki - d->pad) * d->w;
                    float *dst = row + y * ow;
                    if (x0 > 0)
                        zero_row(dst, x0);
                    if (s == 1) {
                        copy_row(dst + x0, src + (x0 + kj - d->pad), x1 - x0);
                    } else {
                        for (size_t x = x0; x < x1; x++)
                            dst[x] = src[x * s + kj - d->pad];
                    }
                    if (x1 < ow)
                        zero_row(dst + x1, ow - x1);
                }
                zero_row(row + y1 * ow, (oh - y1) * ow);
            }
        }
    }
}

/* din (C, H, W) += the columns dcols (C*KH*KW, OH*OW) scattered back; each
 * input element gets its taps in (kh, kw, oh, ow) order. */
static void col2im(float *restrict din, const float *restrict dcols, const sl__conv2d_dims *d)
{
    const size_t s = d->stride, oh = d->oh, ow = d->ow;
    for (size_t c = 0; c < d->c; c++) {
        for (size_t ki = 0; ki < d->kh; ki++) {
            size_t y0, y1;
            valid_range(ki, d->pad, s, d->h, oh, &y0, &y1);
            for (size_t kj = 0; kj < d->kw; kj++) {
                const float *row = dcols + ((c * d->kh + ki) * d->kw + kj) * oh * ow;
                size_t x0, x1;
                valid_range(kj, d->pad, s, d->w, ow, &x0, &x1);
                for (size_t y = y0; y < y1; y++) {
                    float *dst = din + (c * d->h + y * s + ki - d->pad) * d->w;
                    const float *src = row + y * ow;
                    if (s == 1) {
                        add_row(dst + (x0 + kj - d->pad), src + x0, x1 - x0);
                    } else {
                        for (size_t x = x0; x < x1; x++)
                            dst[x * s + kj - d->pad] += src[x];
                    }
                }
            }
        }
    }
}

void sl__conv2d_im2col_forward(float *out, float *cols, const float *in, const float *weight,
                               const sl__conv2d_dims *d, size_t n0, size_t n1)
{
    const size_t k = conv_rows(d), p = conv_cols(d);
    const size_t in_sz = d->c * d->h * d->w;
    SL_ASSERT(n0 <= n1 && n1 <= d->n);
    for (size_t n = n0; n < n1; n++) {
        float *col = cols + n * k * p;      /* (K, P) */
        float *o = out + n * d->oc * p;     /* (OC, P) */
        im2col(col, in + n * in_sz, d);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)d->oc, (int)p, (int)k,
                    1.0f, weight, (int)k, col, (int)p, 0.0f, o, (int)p);
    }
}

void sl__conv2d_im2col_backward_input(float *din, float *dcols, const float *dout,
                                      const float *weight, const sl__conv2d_dims *d,
                                      size_t n0, size_t n1)
{
    const size_t k = conv_rows(d), p = conv_cols(d);
    const size_t in_sz = d->c * d->h * d->w;
    SL_ASSERT(n0 <= n1 && n1 <= d->n);
    for (size_t n = n0; n < n1; n++) {
        float *di = din + n * in_sz;               /* (C, H, W) */
        const float *g = dout + n * d->oc * p;     /* (OC, P) */
        /* dcols (K, P) = weight^T (K, OC) . dout (OC, P) */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)k, (int)p, (int)d->oc,
                    1.0f, weight, (int)k, g, (int)p, 0.0f, dcols, (int)p);
        memset(di, 0, in_sz * sizeof *di);
        col2im(di, dcols, d);
    }
}

void sl__conv2d_im2col_backward_weight(float *dweight, const float *dout, const float *cols,
                                       const sl__conv2d_dims *d, size_t oc0, size_t oc1)
{
    const size_t k = conv_rows(d), p = conv_cols(d);
    SL_ASSERT(oc0 <= oc1 && oc1 <= d->oc);
    memset(dweight + oc0 * k, 0, (oc1 - oc0) * k * sizeof *dweight);
    /* Samples outside, channels inside: each sample's columns stay in cache
     * while every channel of the range reads them. */
    for (size_t n = 0; n < d->n; n++) {
        const float *col = cols + n * k * p;   /* (K, P) */
        for (size_t oc = oc0; oc < oc1; oc++)
            cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)k, (int)p, 1.0f, col, (int)p,
                        dout + (n * d->oc + oc) * p, 1, 1.0f, dweight + oc * k, 1);
    }
}

/* --- the kernels of nn.h: direct where it fits, im2col otherwise --------- */

void sl__conv2d_forward(float *out, float *cols, const float *in, const float *weight,
                        const sl__conv2d_dims *d, size_t n0, size_t n1)
{
    if (use_direct(d))
        sl__conv2d_direct_forward(sl__conv2d_best_path(), out, in, weight, d, n0, n1);
    else
        sl__conv2d_im2col_forward(out, cols, in, weight, d, n0, n1);
}

void sl__conv2d_backward_input(float *din, float *dcols, const float *dout,
                               const float *weight, const sl__conv2d_dims *d, size_t n0,
                               size_t n1)
{
    if (use_direct(d))
        sl__conv2d_direct_backward_input(sl__conv2d_best_path(), din, dcols, dout, weight, d,
                                         n0, n1);
    else
        sl__conv2d_im2col_backward_input(din, dcols, dout, weight, d, n0, n1);
}

void sl__conv2d_backward_weight(float *dweight, const float *dout, const float *cols,
                                const float *in, const sl__conv2d_dims *d, size_t oc0,
                                size_t oc1)
{
    if (use_direct(d))
        sl__conv2d_direct_backward_weight(sl__conv2d_best_path(), dweight, dout, in, d, oc0,
                                          oc1);
    else
        sl__conv2d_im2col_backward_weight(dweight, dout, cols, d, oc0, oc1);
}
