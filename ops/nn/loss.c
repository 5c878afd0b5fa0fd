/* loss.c: softmax cross-entropy, sparse (mean over the batch) or against
 * dense labels (mean or per sample), and argmax. */
#include "ops/nn/nn.h"

#include <math.h>

#include "core/error.h"

long sl__softmax_xent_forward(float *loss, float *prob, const float *logits,
                              const int32_t *labels, size_t n, size_t c)
{
    double total = 0.0;
    SL_ASSERT(n > 0 && c > 0);
    /* Labels first: an out-of-range one would index outside the row. */
    for (size_t i = 0; i < n; i++)
        if (labels[i] < 0 || (uint32_t)labels[i] >= c)
            return -1 - (long)i;
    for (size_t i = 0; i < n; i++) {
        const float *x = logits + i * c; /* (C) */
        float *p = prob + i * c;         /* (C) */
        double m = x[0], s = 0.0, lse;
        for (size_t j = 1; j < c; j++)
            if (x[j] > m)
                m = x[j];
        for (size_t j = 0; j < c; j++)
            s += exp((double)x[j] - m);
        lse = m + log(s);
        /* p = exp(x - lse), the same softmax the loss used */
        for (size_t j = 0; j < c; j++)
            p[j] = (float)(exp((double)x[j] - m) / s);
        total += lse - (double)x[labels[i]];
    }
    *loss = (float)(total / (double)n);
    return 0;
}

void sl__softmax_xent_backward(float *restrict dlogits, const float *restrict prob,
                               const int32_t *restrict labels, float dloss, size_t n,
                               size_t c, size_t n0, size_t n1)
{
    const float scale = dloss / (float)n;
    SL_ASSERT(n0 <= n1 && n1 <= n);
    for (size_t i = n0; i < n1; i++) {
        float *g = dlogits + i * c;     /* (C) */
        const float *p = prob + i * c;  /* (C) */
        for (size_t j = 0; j < c; j++)
            g[j] = p[j] * scale;
        /* the label's term, rounded the same way: (p - 1) * scale */
        g[labels[i]] = (p[labels[i]] - 1.0f) * scale;
    }
}

void sl__softmax_xent_dense_forward(float *loss, float *prob, const float *logits,
                                    const float *labels, size_t n, size_t c, int mean)
{
    double total = 0.0;
    SL_ASSERT(n > 0 && c > 0);
    for (size_t i = 0; i < n; i++) {
        const float *x = logits + i * c; /* (C) */
        const float *y = labels + i * c; /* (C) */
        float *p = prob + i * c;         /* (C) */
        double m = x[0], s = 0.0, lse, li = 0.0;
        for (size_t j = 1; j < c; j++)
            if (x[j] > m)
                m = x[j];
        for (size_t j = 0; j < c; j++)
            s += exp((double)x[j] - m);
        lse = m + log(s);
        for (size_t j = 0; j < c; j++) {
            p[j] = (float)(exp((double)x[j] - m) / s);
            li += (double)y[j] * (lse - (double)x[j]);
        }
        if (mean)
            total += li;
        else
            loss[i] = (float)li;
    }
    if (mean)
        *loss = (float)(total / (double)n);
}

void sl__softmax_xent_dense_backward(float *restrict dlogits, const float *restrict prob,
                                     const float *restrict labels, size_t n, size_t c, int mean,
                                     size_t n0, size_t n1)
{
    const float scale = mean ? 1.0f / (float)n : 1.0f;
    SL_ASSERT(n0 <= n1 && n1 <= n);
    for (size_t i = n0; i < n1; i++) {
        float *g = dlogits + i * c;        /* (C) */
        const float *p = prob + i * c;     /* (C) */
        const float *y = labels + i * c;   /* (C) */
        float total = 0.0f;
        for (size_t j = 0; j < c; j++)
            total += y[j];
        for (size_t j = 0; j < c; j++)
            g[j] = (p[j] * total - y[j]) * scale;
    }
}

void sl__argmax_forward(int32_t *out, const float *in, size_t n, size_t c, size_t n0,
                        size_t n1)
{
    SL_ASSERT(n0 <= n1 && n1 <= n && c > 0 && c <= INT32_MAX);
    for (size_t i = n0; i < n1; i++) {
        const float *x = in + i * c; /* (C) */
        size_t best = 0;
        for (size_t j = 1; j < c; j++)
            if (x[j] > x[best])   /* strictly: the first maximum wins */
                best = j;
        out[i] = (int32_t)best;
    }
}
