/* optimizer.c: parameter updates over element ranges [i0, i1), in float,
 * with MindSpore's order of operations. The loops start at 0 and run in
 * blocks of a fixed 16 elements so that GCC vectorizes them at -O2 (see
 * elementwise.c). */
#include "ops/nn/nn.h"

#include "core/error.h"

/* ApplyMomentum's CPU kernel: accum = accum * momentum + grad;
 * variable -= accum * lr. A product, then a sum: in C11 mode GCC does not
 * contract them into an FMA. */
static void apply_momentum(float *restrict w, float *restrict a, const float *restrict g,
                           float lr, float m, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (size_t j = i; j < i + 16; j++) {
            a[j] = a[j] * m + g[j];
            w[j] -= a[j] * lr;
        }
    }
    for (; i < n; i++) {
        a[i] = a[i] * m + g[i];
        w[i] -= a[i] * lr;
    }
}

void sl__momentum_update(float *weight, float *accum, const float *grad, float lr,
                         float momentum, size_t i0, size_t i1)
{
    SL_ASSERT(i0 <= i1);
    apply_momentum(weight + i0, accum + i0, grad + i0, lr, momentum, i1 - i0);
}

static void sgd(float *restrict w, const float *restrict g, float lr, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (size_t j = i; j < i + 16; j++)
            w[j] -= g[j] * lr;
    for (; i < n; i++)
        w[i] -= g[i] * lr;
}

void sl__sgd_update(float *weight, const float *grad, float lr, size_t i0, size_t i1)
{
    SL_ASSERT(i0 <= i1);
    sgd(weight + i0, grad + i0, lr, i1 - i0);
}
