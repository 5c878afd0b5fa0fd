/* dense.c: the fully connected layer, out = in . weight^T + bias.
 *
 * Where the CPU has AVX2, dense_avx2.c's kernels run the three products
 * (blocks of rows share each load of the weights). Elsewhere every BLAS
 * call is a GEMV with a shape fixed by the layer (one row, or one output
 * feature), never a GEMM over the caller's range: OpenBLAS's sgemm sums a
 * row in an order that depends on where the row falls in its register
 * tiles, so splitting [n0, n1) differently would change the bits (see
 * conv2d.c). At LeNet's batch-32 shapes this costs between 1.2x and 2x
 * the time of one GEMM over the whole batch. */
#include "ops/nn/nn.h"

#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "core/cpu.h"
#include "core/error.h"
#include "ops/nn/dense_impl.h"

#ifdef SL_DENSE_X86
/* Whether the AVX2 kernels run at this level (capped by the CPU's). */
static int use_avx2(sl__cpu_level level)
{
    return level >= SL__CPU_AVX2 && sl__cpu_level_get() >= SL__CPU_AVX2;
}
#endif

/* cblas takes int sizes; the graph checks shapes before planning. */
static int blas_int(size_t v)
{
    SL_ASSERT(v <= INT_MAX);
    return (int)v;
}

void sl__dense_forward_at(sl__cpu_level level, float *out, const float *in, const float *weight,
                          const float *bias, size_t n, size_t in_features, size_t out_features,
                          size_t n0, size_t n1)
{
    const int ni = blas_int(in_features), no = blas_int(out_features);
    SL_ASSERT(n0 <= n1 && n1 <= n);
#ifdef SL_DENSE_X86
    if (use_avx2(level)) {
        sl__dense_forward_avx2(out, in, weight, bias, in_features, out_features, n0, n1);
        return;
    }
#endif
    for (size_t i = n0; i < n1; i++) {
        float *y = out + i * out_features; /* (OUT) */
        if (bias)
            memcpy(y, bias, out_features * sizeof *y);
        else
            memset(y, 0, out_features * sizeof *y);
        /* y (OUT) += weight (OUT, IN) . in[i] (IN) */
        cblas_sgemv(CblasRowMajor, CblasNoTrans, no, ni, 1.0f, weight, ni,
                    in + i * in_features, 1, 1.0f, y, 1);
    }
}

void sl__dense_backward_input_at(sl__cpu_level level, float *din, const float *dout,
                                 const float *weight, size_t n, size_t in_features,
                                 size_t out_features, size_t n0, size_t n1)
{
    const int ni = blas_int(in_features), no = blas_int(out_features);
    SL_ASSERT(n0 <= n1 && n1 <= n);
#ifdef SL_DENSE_X86
    if (use_avx2(level)) {
        sl__dense_backward_input_avx2(din, dout, weight, in_features, out_features, n0, n1);
        return;
    }
#endif
    for (size_t i = n0; i < n1; i++) {
        float *dx = din + i * in_features; /* (IN) */
        /* Zeroed first so that garbage (even NaN) in din never leaks in. */
        memset(dx, 0, in_features * sizeof *dx);
        /* dx (IN) = weight^T (IN, OUT) . dout[i] (OUT) */
        cblas_sgemv(CblasRowMajor, CblasTrans, no, ni, 1.0f, weight, ni,
                    dout + i * out_features, 1, 1.0f, dx, 1);
    }
}

/* db (M) = the column sums of g (N, M) with rows ld apart, samples in
 * order; rows outside, features inside so that the inner loop runs over
 * contiguous floats from 0 in fixed blocks of 16, which GCC vectorizes. */
static void column_sums(float *restrict db, const float *restrict g, size_t n, size_t m,
                        size_t ld)
{
    memset(db, 0, m * sizeof *db);
    for (size_t i = 0; i < n; i++) {
        const float *row = g + i * ld;
        size_t o = 0;
        for (; o + 16 <= m; o += 16)
            for (size_t j = o; j < o + 16; j++)
                db[j] += row[j];
        for (; o < m; o++)
            db[o] += row[o];
    }
}

void sl__dense_backward_weight_at(sl__cpu_level level, float *dweight, float *dbias,
                                  const float *dout, const float *in, size_t n,
                                  size_t in_features, size_t out_features, size_t o0, size_t o1)
{
    const int nn = blas_int(n), ni = blas_int(in_features), no = blas_int(out_features);
    SL_ASSERT(o0 <= o1 && o1 <= out_features);
    if (dbias)
        column_sums(dbias + o0, dout + o0, n, o1 - o0, out_features);
#ifdef SL_DENSE_X86
    if (use_avx2(level)) {
        sl__dense_backward_weight_avx2(dweight, dout, in, n, in_features, out_features, o0, o1);
        return;
    }
#endif
    memset(dweight + o0 * in_features, 0, (o1 - o0) * in_features * sizeof *dweight);
    /* dweight[o] (IN) = in^T (IN, N) . dout[:, o] (N, stride OUT) */
    for (size_t o = o0; o < o1; o++)
        cblas_sgemv(CblasRowMajor, CblasTrans, nn, ni, 1.0f, in, ni, dout + o, no, 1.0f,
                    dweight + o * in_features, 1);
}

void sl__dense_forward(float *out, const float *in, const float *weight, const float *bias,
                       size_t n, size_t in_features, size_t out_features, size_t n0,
                       size_t n1)
{
    sl__dense_forward_at(sl__cpu_level_get(), out, in, weight, bias, n, in_features,
                         out_features, n0, n1);
}

void sl__dense_backward_input(float *din, const float *dout, const float *weight, size_t n,
                              size_t in_features, size_t out_features, size_t n0, size_t n1)
{
    sl__dense_backward_input_at(sl__cpu_level_get(), din, dout, weight, n, in_features,
                                out_features, n0, n1);
}

void sl__dense_backward_weight(float *dweight, float *dbias, const float *dout,
                               const float *in, size_t n, size_t in_features,
                               size_t out_features, size_t o0, size_t o1)
{
    sl__dense_backward_weight_at(sl__cpu_level_get(), dweight, dbias, dout, in, n,
                                 in_features, out_features, o0, o1);
}

void sl__dense_backward_bias(float *dbias, const float *dout, size_t n, size_t out_features,
                             size_t o0, size_t o1)
{
    SL_ASSERT(o0 <= o1 && o1 <= out_features);
    column_sums(dbias + o0, dout + o0, n, o1 - o0, out_features);
}
