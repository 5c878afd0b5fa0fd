/* dense_avx2.c: the fully connected layer's three products on AVX2+FMA,
 * with several rows sharing each load, for the small matrices of LeNet's
 * dense layers (32 x 400 x 120 and less), where one GEMV per row (dense.c's
 * BLAS path) streams the whole weight matrix from L2 once per sample.
 *
 * Forward, out[i][o] = bias[o] + sum over k of in[i][k] * w[o][k]: a dot
 * product per output. 4 samples x 3 outputs are in 12 vector accumulators
 * (4 x 2 took 40.5 us instead of 29.4 on LeNet's first layer: 8 chains
 * barely cover the FMAs' latency, and each weight load serves fewer);
 * lane j of an accumulator sums the k = j (mod 8) in order, the last
 * partial vector comes in through a masked load (zeros past the end), and
 * a fixed tree of horizontal adds (lanes_avx2.h) ends the sum.
 *
 * Both gradients are the same product, C[r][k] = sum over j of A(r, j) *
 * B[j][k] with B's rows contiguous: vectors run along k and each element
 * sums over j in order. The input gradient takes A = dout (rows = samples,
 * j = outputs) and B = the weights; the weight gradient takes A = dout
 * transposed (rows = outputs, j = samples) and B = the input. 4 rows x 16
 * columns are in 8 accumulators; per j, two loads of B meet 4 broadcasts
 * of A.
 *
 * Every element's sum runs in an order fixed by the shape alone (not by
 * the rows a call gets, nor by where they fall in a block), so splitting
 * the work among threads never changes a bit. */
#include "ops/nn/dense_impl.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include "ops/nn/lanes_avx2.h"

enum {
    LANES = 8,      /* floats per vector */
    BLOCK_ROWS = 4, /* rows per block in both kernels */
    BLOCK_OUTS = 3  /* outputs per forward block */
};

/* 8 floats from p: all of them, or (masked) those of the lanes set in m,
 * zeros in the others (no load past them). */
__attribute__((target("avx2,fma"), always_inline)) static inline __m256
load_part(const float *p, __m256i m, int masked)
{
    return masked ? _mm256_maskload_ps(p, m) : _mm256_loadu_ps(p);
}

/* One k step of a forward block: acc[r][o] += x[r][k..k+8) * w[o][k..k+8). */
__attribute__((target("avx2,fma"), always_inline)) static inline void
forward_step(__m256 acc[][BLOCK_OUTS], const float *x, const float *w, size_t in_f, size_t k,
             __m256i m, int masked, int R, int O)
{
    __m256 wv[BLOCK_OUTS];
#pragma GCC unroll 8
    for (int o = 0; o < O; o++)
        wv[o] = load_part(w + (size_t)o * in_f + k, m, masked);
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
        const __m256 xv = load_part(x + (size_t)r * in_f + k, m, masked);
#pragma GCC unroll 8
        for (int o = 0; o < O; o++)
            acc[r][o] = _mm256_fmadd_ps(xv, wv[o], acc[r][o]);
    }
}

/* out[r][o] for rows r < R (R <= 4) and outputs o < O (O <= 3) of one
 * block: x points at the first row (rows in_f apart), w at the first
 * output's weights (rows in_f apart). Inlined with constant R and O so
 * the accumulators stay in registers. */
__attribute__((target("avx2,fma"), always_inline)) static inline void
forward_block(float *out, size_t ld_out, const float *x, const float *w, const float *bias,
              size_t in_f, int R, int O)
{
    __m256 acc[BLOCK_ROWS][BLOCK_OUTS];
    const size_t full = in_f / LANES * LANES;
    const __m256i none = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 8
        for (int o = 0; o < O; o++)
            acc[r][o] = _mm256_setzero_ps();
    for (size_t k = 0; k < full; k += LANES)
        forward_step(acc, x, w, in_f, k, none, 0, R, O);
    if (full < in_f)
        forward_step(acc, x, w, in_f, full, sl__mask_avx2(0, in_f - full), 1, R, O);
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 8
        for (int o = 0; o < O; o++)
            out[(size_t)r * ld_out + (size_t)o] =
                sl__hsum_avx2(acc[r][o]) + (bias ? bias[o] : 0.0f);
}

/* Rows of one forward row block, R of them, across every output. */
__attribute__((target("avx2,fma"), always_inline)) static inline void
forward_rows(float *out, const float *x, const float *weight, const float *bias, size_t in_f,
             size_t out_f, int R)
{
    size_t o = 0;
    for (; o + BLOCK_OUTS <= out_f; o += BLOCK_OUTS)
        forward_block(out + o, out_f, x, weight + o * in_f, bias ? bias + o : NULL, in_f, R,
                      BLOCK_OUTS);
    if (out_f - o == 2)
        forward_block(out + o, out_f, x, weight + o * in_f, bias ? bias + o : NULL, in_f, R, 2);
    else if (out_f - o == 1)
        forward_block(out + o, out_f, x, weight + o * in_f, bias ? bias + o : NULL, in_f, R, 1);
}

__attribute__((target("avx2,fma"))) void
sl__dense_forward_avx2(float *out, const float *in, const float *weight, const float *bias,
                       size_t in_f, size_t out_f, size_t n0, size_t n1)
{
    size_t i = n0;
    for (; i + BLOCK_ROWS <= n1; i += BLOCK_ROWS)
        forward_rows(out + i * out_f, in + i * in_f, weight, bias, in_f, out_f, BLOCK_ROWS);
    switch (n1 - i) {
    case 3:
        forward_rows(out + i * out_f, in + i * in_f, weight, bias, in_f, out_f, 3);
        break;
    case 2:
        forward_rows(out + i * out_f, in + i * in_f, weight, bias, in_f, out_f, 2);
        break;
    case 1:
        forward_rows(out + i * out_f, in + i * in_f, weight, bias, in_f, out_f, 1);
        break;
    default:
        break;
    }
}

/* C[r][k..k+V*8) for rows r < R of one block: V (1 or 2) full vectors of
 * columns, or, with `tail` lanes (< 8) set, one partial vector whose loads
 * are masked and whose store goes through a buffer (AVX2's masked store
 * is slow on AMD's cores). a(r, j) = a[r * a_row + j * a_col]. */
__attribute__((target("avx2,fma"), always_inline)) static inline void
product_block(float *c, size_t ldc, const float *a, size_t a_row, size_t a_col,
              const float *b, size_t ldb, size_t inner, int R, int V, size_t tail)
{
    __m256 acc[BLOCK_ROWS][2];
    const __m256i m = sl__mask_avx2(0, tail);
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 8
        for (int v = 0; v < V; v++)
            acc[r][v] = _mm256_setzero_ps();
    for (size_t j = 0; j < inner; j++) {
        __m256 bv[2];
        const float *brow = b + j * ldb;
#pragma GCC unroll 8
        for (int v = 0; v < V; v++)
            bv[v] = load_part(brow + v * LANES, m, tail > 0);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            const __m256 av = _mm256_broadcast_ss(a + (size_t)r * a_row + j * a_col);
#pragma GCC unroll 8
            for (int v = 0; v < V; v++)
                acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
        float *crow = c + (size_t)r * ldc;
        if (tail) {
            float buf[LANES];
            _mm256_storeu_ps(buf, acc[r][0]);
            memcpy(crow, buf, tail * sizeof *buf);
        } else {
#pragma GCC unroll 8
            for (int v = 0; v < V; v++)
                _mm256_storeu_ps(crow + v * LANES, acc[r][v]);
        }
    }
}

/* Every column of R rows: blocks of 16, then 8, then the partial rest. */
__attribute__((target("avx2,fma"), always_inline)) static inline void
product_rows(float *c, size_t ldc, const float *a, size_t a_row, size_t a_col, const float *b,
             size_t ldb, size_t inner, size_t cols, int R)
{
    size_t k = 0;
    for (; k + 2 * LANES <= cols; k += 2 * LANES)
        product_block(c + k, ldc, a, a_row, a_col, b + k, ldb, inner, R, 2, 0);
    if (k + LANES <= cols) {
        product_block(c + k, ldc, a, a_row, a_col, b + k, ldb, inner, R, 1, 0);
        k += LANES;
    }
    if (k < cols)
        product_block(c + k, ldc, a, a_row, a_col, b + k, ldb, inner, R, 1, cols - k);
}

/* C (rows, cols; rows ldc apart) = A (rows, inner) . B (inner, cols). */
__attribute__((target("avx2,fma"))) static void
product(float *c, size_t ldc, const float *a, size_t a_row, size_t a_col, const float *b,
        size_t ldb, size_t rows, size_t inner, size_t cols)
{
    size_t r = 0;
    for (; r + BLOCK_ROWS <= rows; r += BLOCK_ROWS)
        product_rows(c + r * ldc, ldc, a + r * a_row, a_row, a_col, b, ldb, inner, cols,
                     BLOCK_ROWS);
    switch (rows - r) {
    case 3:
        product_rows(c + r * ldc, ldc, a + r * a_row, a_row, a_col, b, ldb, inner, cols, 3);
        break;
    case 2:
        product_rows(c + r * ldc, ldc, a + r * a_row, a_row, a_col, b, ldb, inner, cols, 2);
        break;
    case 1:
        product_rows(c + r * ldc, ldc, a + r * a_row, a_row, a_col, b, ldb, inner, cols, 1);
        break;
    default:
        break;
    }
}

__attribute__((target("avx2,fma"))) void
sl__dense_backward_input_avx2(float *din, const float *dout, const float *weight, size_t in_f,
                              size_t out_f, size_t n0, size_t n1)
{
    /* din[i][k] = sum over o of dout[i][o] * weight[o][k] */
    product(din + n0 * in_f, in_f, dout + n0 * out_f, out_f, 1, weight, in_f, n1 - n0, out_f,
            in_f);
}

__attribute__((target("avx2,fma"))) void
sl__dense_backward_weight_avx2(float *dweight, const float *dout, const float *in, size_t n,
                               size_t in_f, size_t out_f, size_t o0, size_t o1)
{
    /* dweight[o][k] = sum over i of dout[i][o] * in[i][k] */
    product(dweight + o0 * in_f, in_f, dout + o0, 1, out_f, in, in_f, o1 - o0, n, in_f);
}

#endif
