/* pool2d.c: 2-D max pooling, no padding, with the argmax the backward
 * routes each gradient through. */
#include "ops/nn/nn.h"

#include <stdint.h>
#include <string.h>

#include "core/cpu.h"
#include "core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#define SL_POOL_X86 1
#include <immintrin.h>
#endif

int sl__pool2d_dims_init(sl__pool2d_dims *d)
{
    size_t t;
    if (d->n == 0 || d->c == 0 || d->h == 0 || d->w == 0 || d->k == 0 || d->stride == 0)
        return -1;
    if (d->k > d->h || d->k > d->w)
        return -1;
    /* argmax holds an index into one (H, W) plane as int32 */
    if (!sl__mul_size(d->h, d->w, &t) || t > INT32_MAX)
        return -1;
    if (!sl__mul_size(d->n, d->c, &t) || !sl__mul_size(t, d->h * d->w, &t))
        return -1;
    d->oh = (d->h - d->k) / d->stride + 1;
    d->ow = (d->w - d->k) / d->stride + 1;
    return 0;
}

/* Keeps (*v, *best) or takes (xv, at) when xv is strictly greater, so the
 * first maximum wins. Without a branch: which element wins is data, so a
 * branch would miss about half the time; the index goes through a mask
 * (GCC turns a plain conditional into a branch here), the value through a
 * select that compiles to maxss. */
static inline void take_max(float xv, size_t at, float *v, size_t *best)
{
    const size_t mask = (size_t)0 - (size_t)(xv > *v);
    *best = (*best & ~mask) | (at & mask);
    *v = xv > *v ? xv : *v;
}

static inline float relu_of(float x)
{
    return x > 0.0f ? x : 0.0f;
}

/* One output row of LeNet's 2x2 windows with stride 2, from input rows r0
 * and r1 (r0's first element at index base of the plane): the same
 * comparisons in the same order as the general loop. Written out in blocks
 * of a fixed 8 windows with int32 indices, GCC vectorizes it at -O2. With
 * relu set, each input goes through ReLU as it is read (relu_of): the
 * values and argmax of max_pool2d(relu(x)), without relu(x) in memory. */
static inline __attribute__((always_inline)) void
pool_row_2x2(float *restrict o, int32_t *restrict am, const float *restrict r0,
             const float *restrict r1, int32_t base, int32_t w, size_t ow, int relu,
             const int with_argmax)
{
    size_t x = 0;
    for (; x + 8 <= ow; x += 8) {
        for (size_t j = x; j < x + 8; j++) {
            const int32_t at = base + 2 * (int32_t)j;
            float a1 = r0[2 * j + 1], a2 = r1[2 * j], a3 = r1[2 * j + 1];
            float v = r0[2 * j];
            int32_t best = at;
            if (relu) {
                a1 = relu_of(a1);
                a2 = relu_of(a2);
                a3 = relu_of(a3);
                v = relu_of(v);
            }
            best = a1 > v ? at + 1 : best;
            v = a1 > v ? a1 : v;
            best = a2 > v ? at + w : best;
            v = a2 > v ? a2 : v;
            best = a3 > v ? at + w + 1 : best;
            v = a3 > v ? a3 : v;
            o[j] = v;
            if (with_argmax)
                am[j] = best;
        }
    }
    for (; x < ow; x++) {
        size_t best = (size_t)base + 2 * x;
        float v = relu ? relu_of(r0[2 * x]) : r0[2 * x];
        take_max(relu ? relu_of(r0[2 * x + 1]) : r0[2 * x + 1], (size_t)base + 2 * x + 1, &v,
                 &best);
        take_max(relu ? relu_of(r1[2 * x]) : r1[2 * x], (size_t)(base + w) + 2 * x, &v, &best);
        take_max(relu ? relu_of(r1[2 * x + 1]) : r1[2 * x + 1], (size_t)(base + w) + 2 * x + 1,
                 &v, &best);
        o[x] = v;
        if (with_argmax)
            am[x] = (int32_t)best;
    }
}

#ifdef SL_POOL_X86
/* Elements [0, 2n) of row r into *a (the first 8) and *b (the next 8);
 * n <= 8, masked loads (zeros past 2n) when n < 8. */
__attribute__((target("avx2"))) static inline void row16_avx2(const float *r, size_t n,
                                                              __m256 *a, __m256 *b)
{
    if (n == 8) {
        *a = _mm256_loadu_ps(r);
        *b = _mm256_loadu_ps(r + 8);
    } else {
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256i m = _mm256_set1_epi32((int)(2 * n));
        *a = _mm256_maskload_ps(r, _mm256_cmpgt_epi32(m, lane));
        *b = _mm256_maskload_ps(r + 8, _mm256_cmpgt_epi32(m, _mm256_add_epi32(
                                                            lane, _mm256_set1_epi32(8))));
    }
}

/* Elements [0, 2n) of row r as (even, odd) halves: r[0], r[2], ... and
 * r[1], r[3], ...; n <= 8, and the loads stop at the row's last pair
 * (masked when n < 8). */
__attribute__((target("avx2"))) static inline void pairs_avx2(const float *r, size_t n,
                                                              __m256 *even, __m256 *odd)
{
    __m256 a, b;
    row16_avx2(r, n, &a, &b);
    /* shuffle gives (a0 a2 b0 b2 | a4 a6 b4 b6); the 64-bit permute puts
     * the quarters in order */
    *even = _mm256_castpd_ps(_mm256_permute4x64_pd(
        _mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xD8));
    *odd = _mm256_castpd_ps(_mm256_permute4x64_pd(
        _mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xDD)), 0xD8));
}

/* v's first n lanes (0 <= n <= 8) to p, by plain stores of 4, 2 and 1:
 * on AMD's AVX2 a masked store costs several plain ones. */
__attribute__((target("avx2"))) static inline void store_first_avx2(float *p, __m256 v, size_t n)
{
    __m128 part = _mm256_castps256_ps128(v);
    if (n >= 8) {
        _mm256_storeu_ps(p, v);
        return;
    }
    if (n >= 4) {
        _mm_storeu_ps(p, part);
        part = _mm256_extractf128_ps(v, 1);
        p += 4;
        n -= 4;
    }
    if (n >= 2) {
        _mm_storel_pi((__m64 *)(void *)p, part);
        part = _mm_movehl_ps(part, part);
        p += 2;
        n -= 2;
    }
    if (n)
        _mm_store_ss(p, part);
}

/* ReLU as relu_of does it: x > 0 ? x : 0, so NaN and -0 become +0. */
__attribute__((target("avx2"))) static inline __m256 relu_avx2(__m256 x)
{
    return _mm256_and_ps(x, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ));
}

/* Takes (x, at) where x > v, as take_max: a NaN never wins, the first of
 * equal values stays. */
__attribute__((target("avx2"))) static inline void take_max_avx2(__m256 x, __m256i at, __m256 *v,
                                                                 __m256i *best)
{
    const __m256 gt = _mm256_cmp_ps(x, *v, _CMP_GT_OQ);
    *best = _mm256_castps_si256(
        _mm256_blendv_ps(_mm256_castsi256_ps(*best), _mm256_castsi256_ps(at), gt));
    *v = _mm256_blendv_ps(*v, x, gt);
}

/* The maxima of n <= 8 windows of ReLU's outputs, the values alone. After
 * ReLU no value is NaN or -0, so the order of the comparisons cannot
 * change the result (it can with NaN or signed zeros: MAXPS returns its
 * second operand): the two rows first, then each pair of columns, half
 * the shuffles of taking each window's four in turn. */
__attribute__((target("avx2"))) static inline __m256 relu_max_2x2_avx2(const float *r0,
                                                                       const float *r1, size_t n)
{
    __m256 a0, b0, a1, b1, a, b;
    row16_avx2(r0, n, &a0, &b0);
    row16_avx2(r1, n, &a1, &b1);
    a = _mm256_max_ps(relu_avx2(a0), relu_avx2(a1));
    b = _mm256_max_ps(relu_avx2(b0), relu_avx2(b1));
    /* even and odd columns, (0 2 8 10 | 4 6 12 14) and the next ones; the
     * 64-bit permute puts the quarters in order */
    a = _mm256_max_ps(_mm256_shuffle_ps(a, b, 0x88), _mm256_shuffle_ps(a, b, 0xDD));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(a), 0xD8));
}

/* LAST_WHOLE: a row of 8 or more windows ends with its last 8 again,
 * whole, overlapping the block before: they come out the same, so writing
 * them twice changes nothing, and plain stores replace masked ones (which
 * cost several plain stores on AMD's AVX2). Only rows under 8 windows mask.
 *
 * pool_row_2x2 eight windows at a time with AVX2, a short row's windows
 * by masked loads and stores: the same comparisons in the same order, so
 * the same values and argmax bit for bit. am NULL: the values alone. */
__attribute__((target("avx2"))) static void pool_row_2x2_avx2(float *o, int32_t *am,
                                                             const float *r0, const float *r1,
                                                             int32_t base, int32_t w, size_t ow,
                                                             int relu)
{
    const __m256i lane2 = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const __m256i one = _mm256_set1_epi32(1), down = _mm256_set1_epi32(w);
    for (size_t x0 = 0; x0 < ow; x0 += 8) {
        size_t x = x0, n = ow - x0 < 8 ? ow - x0 : 8;
        __m256 e0, o0, e1, o1, v;
        if (n < 8 && ow >= 8) { /* the last 8 windows, whole (see LAST_WHOLE) */
            x = ow - 8;
            n = 8;
        }
        __m256i at, best;
        if (!am && relu) {
            store_first_avx2(o + x, relu_max_2x2_avx2(r0 + 2 * x, r1 + 2 * x, n), n);
            continue;
        }
        pairs_avx2(r0 + 2 * x, n, &e0, &o0);
        pairs_avx2(r1 + 2 * x, n, &e1, &o1);
        if (relu) {
            e0 = relu_avx2(e0);
            o0 = relu_avx2(o0);
            e1 = relu_avx2(e1);
            o1 = relu_avx2(o1);
        }
        if (!am) {
            /* values alone: max(x, v) is x > v ? x : v, take_max's choice
             * (MAXPS returns its second operand for NaN or equal zeros),
             * one instruction instead of a compare and two blends */
            v = _mm256_max_ps(e1, _mm256_max_ps(o0, e0));
            v = _mm256_max_ps(o1, v);
            store_first_avx2(o + x, v, n);
            continue;
        }
        at = _mm256_add_epi32(_mm256_set1_epi32(base + 2 * (int32_t)x), lane2);
        v = e0;
        best = at;
        take_max_avx2(o0, _mm256_add_epi32(at, one), &v, &best);
        take_max_avx2(e1, _mm256_add_epi32(at, down), &v, &best);
        take_max_avx2(o1, _mm256_add_epi32(_mm256_add_epi32(at, down), one), &v, &best);
        store_first_avx2(o + x, v, n);
        /* the argmax's int32 lanes, moved as float bits */
        store_first_avx2((float *)(void *)(am + x), _mm256_castsi256_ps(best), n);
    }
}
#endif

static inline __attribute__((always_inline)) void
pool_forward(float *out, int32_t *argmax, const float *in, const sl__pool2d_dims *d, size_t n0,
             size_t n1, int relu, sl__cpu_level level)
{
    const size_t hw = d->h * d->w, ohw = d->oh * d->ow, s = d->stride, k = d->k;
    SL_ASSERT(n0 <= n1 && n1 <= d->n);
#ifdef SL_POOL_X86
    if (k == 2 && s == 2 && level >= SL__CPU_AVX2) {
        for (size_t plane = n0 * d->c; plane < n1 * d->c; plane++) {
            const float *x = in + plane * hw;
            for (size_t y = 0; y < d->oh; y++)
                pool_row_2x2_avx2(out + plane * ohw + y * d->ow,
                                  argmax ? argmax + plane * ohw + y * d->ow : NULL,
                                  x + 2 * y * d->w, x + (2 * y + 1) * d->w,
                                  (int32_t)(2 * y * d->w), (int32_t)d->w, d->ow, relu);
        }
        return;
    }
#else
    (void)level;
#endif
    for (size_t plane = n0 * d->c; plane < n1 * d->c; plane++) {
        const float *x = in + plane * hw;   /* (H, W) */
        float *o = out + plane * ohw;       /* (OH, OW) */
        int32_t *am = argmax ? argmax + plane * ohw : NULL; /* (OH, OW) */
        if (k == 2 && s == 2) {
            for (size_t y = 0; y < d->oh; y++) {
                const float *r0 = x + 2 * y * d->w, *r1 = r0 + d->w;
                const int32_t base = (int32_t)(2 * y * d->w), w = (int32_t)d->w;
                if (am)
                    pool_row_2x2(o + y * d->ow, am + y * d->ow, r0, r1, base, w, d->ow, relu, 1);
                else
                    pool_row_2x2(o + y * d->ow, NULL, r0, r1, base, w, d->ow, relu, 0);
            }
            continue;
        }
        for (size_t y = 0; y < d->oh; y++) {
            for (size_t xo = 0; xo < d->ow; xo++) {
                size_t best = y * s * d->w + xo * s;
                float v = relu ? relu_of(x[best]) : x[best];
                for (size_t i = 0; i < k; i++) {
                    const size_t row = (y * s + i) * d->w + xo * s;
                    for (size_t j = 0; j < k; j++)
                        take_max(relu ? relu_of(x[row + j]) : x[row + j], row + j, &v, &best);
                }
                o[y * d->ow + xo] = v;
                if (am)
                    am[y * d->ow + xo] = (int32_t)best;
            }
        }
    }
}

void sl__max_pool2d_forward_at(sl__cpu_level level, int relu, float *out, int32_t *argmax,
                               const float *in, const sl__pool2d_dims *d, size_t n0, size_t n1)
{
    if (level > sl__cpu_level_get())
        level = sl__cpu_level_get();
    if (relu)
        pool_forward(out, argmax, in, d, n0, n1, 1, level);
    else
        pool_forward(out, argmax, in, d, n0, n1, 0, level);
}

void sl__max_pool2d_forward(float *out, int32_t *argmax, const float *in,
                            const sl__pool2d_dims *d, size_t n0, size_t n1)
{
    pool_forward(out, argmax, in, d, n0, n1, 0, sl__cpu_level_get());
}

void sl__relu_max_pool2d_forward(float *out, int32_t *argmax, const float *in,
                                 const sl__pool2d_dims *d, size_t n0, size_t n1)
{
    pool_forward(out, argmax, in, d, n0, n1, 1, sl__cpu_level_get());
}

#ifdef SL_POOL_X86
/* One plane's gradient for 2x2 windows with stride 2, written directly
 * instead of zeroed and scattered into: each window's four inputs get
 * 0 + g where the argmax points (0 + g, as the scatter's sum onto zero,
 * turns -0 into +0) and +0 elsewhere; y (the fused forward's output) masks
 * g where it is not > 0. The windows do not overlap, so each input gets
 * what the scatter gives it, bit for bit. Inputs outside every window (an
 * odd last row or column) are zero. */
__attribute__((target("avx2"))) static void pool_plane_2x2_backward_avx2(
    float *dx, const float *g, const int32_t *am, const float *y, const sl__pool2d_dims *d)
{
    const __m256i lane2 = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i one = _mm256_set1_epi32(1), down = _mm256_set1_epi32((int)d->w);
    const __m256 zero = _mm256_setzero_ps();
    const size_t w = d->w, ow = d->ow;
    for (size_t yo = 0; yo < d->oh; yo++) {
        float *r0 = dx + 2 * yo * w, *r1 = r0 + w;
        const int32_t base = (int32_t)(2 * yo * w);
        for (size_t x0 = 0; x0 < ow; x0 += 8) {
            size_t x = x0, n = ow - x0 < 8 ? ow - x0 : 8;
            if (n < 8 && ow >= 8) { /* the last 8 windows, whole (see LAST_WHOLE) */
                x = ow - 8;
                n = 8;
            }
            const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), lane);
            const int32_t *a = am + yo * ow + x;
            __m256i at = _mm256_add_epi32(_mm256_set1_epi32(base + 2 * (int32_t)x), lane2);
            __m256i idx = _mm256_maskload_epi32((const int *)(const void *)a, m);
            __m256 gv = _mm256_maskload_ps(g + yo * ow + x, m), e0, o0, e1, o1, lo, hi;
            if (y)
                gv = _mm256_and_ps(gv, _mm256_cmp_ps(_mm256_maskload_ps(y + yo * ow + x, m),
                                                     zero, _CMP_GT_OQ));
            gv = _mm256_add_ps(zero, gv);
            e0 = _mm256_and_ps(gv, _mm256_castsi256_ps(_mm256_cmpeq_epi32(idx, at)));
            o0 = _mm256_and_ps(gv, _mm256_castsi256_ps(
                                       _mm256_cmpeq_epi32(idx, _mm256_add_epi32(at, one))));
            at = _mm256_add_epi32(at, down);
            e1 = _mm256_and_ps(gv, _mm256_castsi256_ps(_mm256_cmpeq_epi32(idx, at)));
            o1 = _mm256_and_ps(gv, _mm256_castsi256_ps(
                                       _mm256_cmpeq_epi32(idx, _mm256_add_epi32(at, one))));
            /* (e, o) pairs back into row order: e0 o0 e1 o1 ... */
            lo = _mm256_unpacklo_ps(e0, o0);
            hi = _mm256_unpackhi_ps(e0, o0);
            e0 = _mm256_permute2f128_ps(lo, hi, 0x20);
            o0 = _mm256_permute2f128_ps(lo, hi, 0x31);
            lo = _mm256_unpacklo_ps(e1, o1);
            hi = _mm256_unpackhi_ps(e1, o1);
            e1 = _mm256_permute2f128_ps(lo, hi, 0x20);
            o1 = _mm256_permute2f128_ps(lo, hi, 0x31);
            {
                /* 2n inputs of each row: e then o hold them in order */
                const size_t first = 2 * n < 8 ? 2 * n : 8, rest = 2 * n - first;
                store_first_avx2(r0 + 2 * x, e0, first);
                store_first_avx2(r0 + 2 * x + 8, o0, rest);
                store_first_avx2(r1 + 2 * x, e1, first);
                store_first_avx2(r1 + 2 * x + 8, o1, rest);
            }
        }
        for (size_t c = 2 * ow; c < w; c++)
            r0[c] = r1[c] = 0.0f;
    }
    if (2 * d->oh < d->h)
        memset(dx + 2 * d->oh * w, 0, (d->h - 2 * d->oh) * w * sizeof *dx);
}
#endif

/* The scatter: zero, then each window's gradient (masked by y when y is
 * the fused forward's output) onto its argmax. += because overlapping
 * windows (stride < k) can pick one input twice. */
static void pool_backward(float *din, const float *dout, const int32_t *argmax, const float *out,
                          const sl__pool2d_dims *d, size_t n0, size_t n1, sl__cpu_level level)
{
    const size_t hw = d->h * d->w, ohw = d->oh * d->ow;
    SL_ASSERT(n0 <= n1 && n1 <= d->n);
#ifdef SL_POOL_X86
    if (d->k == 2 && d->stride == 2 && level >= SL__CPU_AVX2) {
        for (size_t plane = n0 * d->c; plane < n1 * d->c; plane++)
            pool_plane_2x2_backward_avx2(din + plane * hw, dout + plane * ohw,
                                         argmax + plane * ohw, out ? out + plane * ohw : NULL, d);
        return;
    }
#else
    (void)level;
#endif
    memset(din + n0 * d->c * hw, 0, (n1 - n0) * d->c * hw * sizeof *din);
    for (size_t plane = n0 * d->c; plane < n1 * d->c; plane++) {
        float *dx = din + plane * hw;             /* (H, W) */
        const float *g = dout + plane * ohw;      /* (OH, OW) */
        const int32_t *am = argmax + plane * ohw; /* (OH, OW) */
        if (out) {
            const float *y = out + plane * ohw;   /* (OH, OW) */
            for (size_t i = 0; i < ohw; i++)
                dx[am[i]] += y[i] > 0.0f ? g[i] : 0.0f;
        } else {
            for (size_t i = 0; i < ohw; i++)
                dx[am[i]] += g[i];
        }
    }
}

void sl__max_pool2d_backward_at(sl__cpu_level level, float *din, const float *dout,
                                const int32_t *argmax, const float *out,
                                const sl__pool2d_dims *d, size_t n0, size_t n1)
{
    if (level > sl__cpu_level_get())
        level = sl__cpu_level_get();
    pool_backward(din, dout, argmax, out, d, n0, n1, level);
}

void sl__max_pool2d_backward(float *din, const float *dout, const int32_t *argmax,
                             const sl__pool2d_dims *d, size_t n0, size_t n1)
{
    pool_backward(din, dout, argmax, NULL, d, n0, n1, sl__cpu_level_get());
}

/* The window's output is relu(x) at the argmax, so "the relu's output > 0
 * there" is "this window's output > 0": every window that routes to one
 * input agrees on it, and the mask can go on each dout before the sum. */
void sl__relu_max_pool2d_backward(float *din, const float *dout, const int32_t *argmax,
                                  const float *out, const sl__pool2d_dims *d, size_t n0,
                                  size_t n1)
{
    pool_backward(din, dout, argmax, out, d, n0, n1, sl__cpu_level_get());
}
