/* hsum_avx2.h: the sum of an AVX2 vector's 8 lanes, added in one fixed
 * tree, so a kernel that ends its sums with it gives the same bits every
 * time. Shared by conv2d_direct.c and conv2d_lanes.c; x86 only. */
#ifndef SLUICE_OPS_NN_HSUM_AVX2_H
#define SLUICE_OPS_NN_HSUM_AVX2_H

#include <immintrin.h>

__attribute__((target("avx2,fma"), always_inline)) static inline float sl__hsum_avx2(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

#endif
