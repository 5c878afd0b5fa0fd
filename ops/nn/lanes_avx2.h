/* lanes_avx2.h: what the AVX2 kernels of ops/nn do across a vector's 8
 * lanes: sum them in one fixed tree, so a kernel that ends its sums with it
 * gives the same bits every time, and make a mask of a run of lanes for
 * masked loads. Shared by conv2d_direct*.c, conv2d_lanes.c and
 * dense_avx2.c; x86 only. */
#ifndef SLUICE_OPS_NN_LANES_AVX2_H
#define SLUICE_OPS_NN_LANES_AVX2_H

#include <stddef.h>

#include <immintrin.h>

__attribute__((target("avx2,fma"), always_inline)) static inline float sl__hsum_avx2(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

/* Lanes [lo, hi) of a mask, 0 <= lo <= hi <= 8. */
__attribute__((target("avx2,fma"), always_inline)) static inline __m256i
sl__mask_avx2(size_t lo, size_t hi)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)hi), lane),
                            _mm256_cmpgt_epi32(lane, _mm256_set1_epi32((int)lo - 1)));
}

#endif
