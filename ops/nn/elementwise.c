/* elementwise.c: ReLU and addition over element ranges [i0, i1).
 *
 * The loops run from 0 in blocks of a fixed 16 elements, which GCC
 * vectorizes at -O2: its "very cheap" cost model skips loops of unknown
 * trip count (a block starting at an arbitrary i0 could wrap, so the ranged
 * entry points shift the pointers instead) and adds no run-time alias
 * checks. So each kernel has a restrict version for distinct buffers and a
 * single-pointer one for in place (out == in); any other overlap is a
 * caller bug. */
#include "ops/nn/nn.h"

#include "core/error.h"

static void relu(float *restrict out, const float *restrict in, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (size_t j = i; j < i + 16; j++)
            out[j] = in[j] > 0.0f ? in[j] : 0.0f;
    for (; i < n; i++)
        out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}

static void relu_inplace(float *x, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (size_t j = i; j < i + 16; j++)
            x[j] = x[j] > 0.0f ? x[j] : 0.0f;
    for (; i < n; i++)
        x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void sl__relu_forward(float *out, const float *in, size_t i0, size_t i1)
{
    SL_ASSERT(i0 <= i1);
    if (out == in)
        relu_inplace(out + i0, i1 - i0);
    else
        relu(out + i0, in + i0, i1 - i0);
}

static void relu_grad(float *restrict din, const float *restrict dout,
                      const float *restrict out, size_t n)
{
    size_t i = 0;
    /* dout is read whatever out is: a load only under the condition
     * would keep GCC from vectorizing */
    for (; i + 16 <= n; i += 16) {
        for (size_t j = i; j < i + 16; j++) {
            float g = dout[j];
            din[j] = out[j] > 0.0f ? g : 0.0f;
        }
    }
    for (; i < n; i++)
        din[i] = out[i] > 0.0f ? dout[i] : 0.0f;
}

/* g (the incoming gradient) becomes din */
static void relu_grad_inplace(float *restrict g, const float *restrict out, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (size_t j = i; j < i + 16; j++)
            g[j] = out[j] > 0.0f ? g[j] : 0.0f;
    for (; i < n; i++)
        g[i] = out[i] > 0.0f ? g[i] : 0.0f;
}

void sl__relu_backward(float *din, const float *dout, const float *out, size_t i0,
                       size_t i1)
{
    SL_ASSERT(i0 <= i1);
    if (din == dout)
        relu_grad_inplace(din + i0, out + i0, i1 - i0);
    else
        relu_grad(din + i0, dout + i0, out + i0, i1 - i0);
}

static void add(float *restrict out, const float *restrict a, const float *restrict b,
                size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (size_t j = i; j < i + 16; j++)
            out[j] = a[j] + b[j];
    for (; i < n; i++)
        out[i] = a[i] + b[i];
}

/* x += b, for out == a (or out == b: float addition commutes bit for bit) */
static void add_inplace(float *restrict x, const float *restrict b, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (size_t j = i; j < i + 16; j++)
            x[j] += b[j];
    for (; i < n; i++)
        x[i] += b[i];
}

/* x += x */
static void add_self(float *x, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (size_t j = i; j < i + 16; j++)
            x[j] += x[j];
    for (; i < n; i++)
        x[i] += x[i];
}

void sl__add_forward(float *out, const float *a, const float *b, size_t i0, size_t i1)
{
    SL_ASSERT(i0 <= i1);
    if (out == a && out == b)
        add_self(out + i0, i1 - i0);
    else if (out == a)
        add_inplace(out + i0, b + i0, i1 - i0);
    else if (out == b)
        add_inplace(out + i0, a + i0, i1 - i0);
    else
        add(out + i0, a + i0, b + i0, i1 - i0);
}
