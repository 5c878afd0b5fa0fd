/* peak.c: the machine's peak FMA rate on one thread, measured by a loop of
 * our own (sl_cpu_fma_gflops, sluice/step.h): the yardstick for kernels
 * that does not depend on a library having recognised the CPU. */
#include <stdint.h>

#include "core/clock.h"
#include "core/cpu.h"
#include "sluice/status.h"
#include "sluice/step.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

/* Independent accumulators: enough to cover an FMA's latency (4 cycles)
 * on two FMA units, few enough to stay in registers (16 with AVX2). */
enum { ACC = 12 };

/* Each loop runs `iters` rounds of ACC independent multiply-adds on full
 * vectors, acc = acc * a + b with a just below 1, so that the values stay
 * near 1 (never subnormal, never infinite); it returns their sum so that
 * nothing is optimised away. Floating-point operations: 2 per lane. */
#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx512f"))) static float loop_avx512(int64_t iters)
{
    const __m512 a = _mm512_set1_ps(0.9999999f), b = _mm512_set1_ps(1e-7f);
    __m512 acc[ACC];
    float out[16], sum = 0.0f;
#pragma GCC unroll 12
    for (int k = 0; k < ACC; k++)
        acc[k] = _mm512_set1_ps(1.0f + 0.01f * (float)k);
    for (int64_t i = 0; i < iters; i++) {
#pragma GCC unroll 12
        for (int k = 0; k < ACC; k++)
            acc[k] = _mm512_fmadd_ps(acc[k], a, b);
    }
    for (int k = 1; k < ACC; k++)
        acc[0] = _mm512_add_ps(acc[0], acc[k]);
    _mm512_storeu_ps(out, acc[0]);
    for (int j = 0; j < 16; j++)
        sum += out[j];
    return sum;
}

__attribute__((target("avx2,fma"))) static float loop_avx2(int64_t iters)
{
    const __m256 a = _mm256_set1_ps(0.9999999f), b = _mm256_set1_ps(1e-7f);
    __m256 acc[ACC];
    float out[8], sum = 0.0f;
#pragma GCC unroll 12
    for (int k = 0; k < ACC; k++)
        acc[k] = _mm256_set1_ps(1.0f + 0.01f * (float)k);
    for (int64_t i = 0; i < iters; i++) {
#pragma GCC unroll 12
        for (int k = 0; k < ACC; k++)
            acc[k] = _mm256_fmadd_ps(acc[k], a, b);
    }
    for (int k = 1; k < ACC; k++)
        acc[0] = _mm256_add_ps(acc[0], acc[k]);
    _mm256_storeu_ps(out, acc[0]);
    for (int j = 0; j < 8; j++)
        sum += out[j];
    return sum;
}

/* Without FMA: a multiply and an add on SSE's 4 lanes. */
static float loop_sse(int64_t iters)
{
    const __m128 a = _mm_set1_ps(0.9999999f), b = _mm_set1_ps(1e-7f);
    __m128 acc[ACC];
    float out[4], sum = 0.0f;
#pragma GCC unroll 12
    for (int k = 0; k < ACC; k++)
        acc[k] = _mm_set1_ps(1.0f + 0.01f * (float)k);
    for (int64_t i = 0; i < iters; i++) {
#pragma GCC unroll 12
        for (int k = 0; k < ACC; k++)
            acc[k] = _mm_add_ps(_mm_mul_ps(acc[k], a), b);
    }
    for (int k = 1; k < ACC; k++)
        acc[0] = _mm_add_ps(acc[0], acc[k]);
    _mm_storeu_ps(out, acc[0]);
    for (int j = 0; j < 4; j++)
        sum += out[j];
    return sum;
}
#else
static float loop_scalar(int64_t iters)
{
    float acc[ACC], sum = 0.0f;
    for (int k = 0; k < ACC; k++)
        acc[k] = 1.0f + 0.01f * (float)k;
    for (int64_t i = 0; i < iters; i++)
        for (int k = 0; k < ACC; k++)
            acc[k] = acc[k] * 0.9999999f + 1e-7f;
    for (int k = 0; k < ACC; k++)
        sum += acc[k];
    return sum;
}
#endif

static volatile float sink; /* keeps the loops' results alive */

/* Runs the loop of the kernels' vector path; returns lanes per vector. */
static int run_loop(int64_t iters)
{
#if defined(__x86_64__) || defined(__i386__)
    switch (sl__cpu_level_get()) {
    case SL__CPU_AVX512: sink = loop_avx512(iters); return 16;
    case SL__CPU_AVX2: sink = loop_avx2(iters); return 8;
    default: sink = loop_sse(iters); return 4;
    }
#else
    sink = loop_scalar(iters);
    return 1;
#endif
}

int sl_cpu_fma_gflops(double *gflops)
{
    int64_t iters = 1000;
    double best = 0.0;
    int lanes = 1;

    /* Grow the loop until one run lasts about 2 ms (the first runs also
     * wake the vector units and raise the clock), then keep the best of
     * five. */
    for (;;) {
        double t0 = sl__now_ms(), ms;
        run_loop(iters);
        ms = sl__now_ms() - t0;
        if (ms >= 1.0 || iters > ((int64_t)1 << 40))
            break;
        iters *= 2;
    }
    for (int r = 0; r < 5; r++) {
        double t0 = sl__now_ms(), ms, rate;
        lanes = run_loop(iters);
        ms = sl__now_ms() - t0;
        rate = ms > 0.0 ? (double)iters * ACC * lanes * 2.0 / (ms * 1e6) : 0.0;
        if (rate > best)
            best = rate;
    }
    *gflops = best;
    return best > 0.0 ? SL_OK : SL_ESTATE;
}
