/* pool2d.c: 2-D max pooling, no padding, with the argmax the backward
 * routes each gradient through. */
#include "ops/nn/nn.h"

#include <stdint.h>
#include <string.h>

#include "core/error.h"

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

void sl__max_pool2d_forward(float *out, int32_t *argmax, const float *in,
                            const sl__pool2d_dims *d, size_t n0, size_t n1)
{
    const size_t hw = d->h * d->w, ohw = d->oh * d->ow, s = d->stride, k = d->k;
    SL_ASSERT(n0 <= n1 && n1 <= d->n);
    for (size_t plane = n0 * d->c; plane < n1 * d->c; plane++) {
        const float *x = in + plane * hw;   /* (H, W) */
        float *o = out + plane * ohw;       /* (OH, OW) */
        int32_t *am = argmax + plane * ohw; /* (OH, OW) */
        for (size_t y = 0; y < d->oh; y++) {
            for (size_t xo = 0; xo < d->ow; xo++) {
                size_t best = y * s * d->w + xo * s;
                float v = x[best];
                for (size_t i = 0; i < k; i++) {
                    const size_t row = (y * s + i) * d->w + xo * s;
                    for (size_t j = 0; j < k; j++) {
                        /* strictly greater: the first maximum wins */
                        if (x[row + j] > v) {
                            v = x[row + j];
                            best = row + j;
                        }
                    }
                }
                o[y * d->ow + xo] = v;
                am[y * d->ow + xo] = (int32_t)best;
            }
        }
    }
}

void sl__max_pool2d_backward(float *din, const float *dout, const int32_t *argmax,
                             const sl__pool2d_dims *d, size_t n0, size_t n1)
{
    const size_t hw = d->h * d->w, ohw = d->oh * d->ow;
    SL_ASSERT(n0 <= n1 && n1 <= d->n);
    memset(din + n0 * d->c * hw, 0, (n1 - n0) * d->c * hw * sizeof *din);
    for (size_t plane = n0 * d->c; plane < n1 * d->c; plane++) {
        float *dx = din + plane * hw;             /* (H, W) */
        const float *g = dout + plane * ohw;      /* (OH, OW) */
        const int32_t *am = argmax + plane * ohw; /* (OH, OW) */
        /* += because overlapping windows (stride < k) can pick one input twice */
        for (size_t i = 0; i < ohw; i++)
            dx[am[i]] += g[i];
    }
}
