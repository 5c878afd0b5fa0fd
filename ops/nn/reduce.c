/* reduce.c: means over trailing axes, as rows: a (rows, inner) view of the
 * input, one output per row. */
#include "ops/nn/nn.h"

#include "core/error.h"

void sl__mean_rows_forward(float *out, const float *in, size_t inner, size_t r0, size_t r1)
{
    SL_ASSERT(r0 <= r1 && inner > 0);
    for (size_t r = r0; r < r1; r++) {
        const float *row = in + r * inner;
        float sum = 0.0f;
        for (size_t i = 0; i < inner; i++)
            sum += row[i];
        out[r] = sum / (float)inner;
    }
}

void sl__mean_rows_backward(float *din, const float *dout, size_t inner, size_t r0, size_t r1)
{
    SL_ASSERT(r0 <= r1 && inner > 0);
    for (size_t r = r0; r < r1; r++) {
        float g = dout[r] / (float)inner;
        float *row = din + r * inner;
        for (size_t i = 0; i < inner; i++)
            row[i] = g;
    }
}
