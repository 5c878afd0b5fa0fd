/* conv2d_direct_impl.h: what the direct conv2d's two files share, the
 * correlations (conv2d_direct.c: forward and input gradient) and the
 * weight gradient (conv2d_direct_dw.c): how work is cut into blocks and
 * the vector loads. The scheme is described at the top of
 * conv2d_direct.c. */
#ifndef SLUICE_OPS_NN_CONV2D_DIRECT_IMPL_H
#define SLUICE_OPS_NN_CONV2D_DIRECT_IMPL_H

#include <stddef.h>

#if defined(__x86_64__) || defined(__i386__)
#define SL_CONV2D_X86 1
#include <immintrin.h>
#endif

/* [0, count) cut into as few blocks of at most `most` as possible, their
 * sizes as even as possible: block b is [*first, *first + *len). */
static inline size_t even_blocks(size_t count, size_t most)
{
    return (count + most - 1) / most;
}

static inline void even_block(size_t count, size_t most, size_t b, size_t *first, size_t *len)
{
    size_t k = even_blocks(count, most);
    *first = b * count / k;
    *len = (b + 1) * count / k - *first;
}

/* The k elements of block b when [0, count) goes in blocks of exactly k:
 * k consecutive ones, the last block moved back to end at count, or the
 * last element repeated when count < k. */
static inline void fixed_block(size_t count, size_t k, size_t b, size_t *idx)
{
    size_t first = b * k;
    if (first + k > count)
        first = count >= k ? count - k : 0;
    for (size_t i = 0; i < k; i++)
        idx[i] = first + i < count ? first + i : count - 1;
}

#ifdef SL_CONV2D_X86

/* Floats per vector. */
enum { X512_VL = 16, X256_VL = 8 };

/* A vector load kept in a register. Without the empty asm GCC may fold the
 * load into each FMA that uses the vector, loading it once per FMA; loads,
 * not FMAs, then bound the loop. */
__attribute__((target("avx512f"), always_inline)) static inline __m512
load_avx512(const float *p, __mmask16 m, const int masked)
{
    __m512 v = masked ? _mm512_maskz_loadu_ps(m, p) : _mm512_loadu_ps(p);
    __asm__("" : "+v"(v));
    return v;
}

/* As load_avx512. */
__attribute__((target("avx2,fma"), always_inline)) static inline __m256
load_avx2(const float *p, __m256i m, const int masked)
{
    __m256 v = masked ? _mm256_maskload_ps(p, m) : _mm256_loadu_ps(p);
    __asm__("" : "+x"(v));
    return v;
}

#endif /* SL_CONV2D_X86 */

#endif
