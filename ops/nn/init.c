/* init.c: parameter initializers. */
#include "ops/nn/nn.h"

#include <math.h>

/* Box-Muller: two independent standard normals from two uniforms. 1 - u
 * lies in (0, 1], so the log is finite. */
static void normal_pair(sl_rng *rng, double *z0, double *z1)
{
    const double two_pi = 6.283185307179586476925286766559;
    double r = sqrt(-2.0 * log(1.0 - sl__rng_uniform(rng)));
    double t = two_pi * sl__rng_uniform(rng);
    *z0 = r * cos(t);
    *z1 = r * sin(t);
}

void sl__init_truncated_normal(float *out, size_t n, float sigma, sl_rng *rng)
{
    size_t i = 0;
    /* Rejection: a draw outside [-2, 2] is dropped and the next one taken
     * (95.4% are kept). Both draws of a pair are used, in order; the stream
     * depends only on rng's state, so the same seed gives the same values. */
    while (i < n) {
        double z[2];
        normal_pair(rng, &z[0], &z[1]);
        for (int k = 0; k < 2 && i < n; k++)
            if (fabs(z[k]) <= 2.0)
                out[i++] = (float)((double)sigma * z[k]);
    }
}

void sl__init_fill(float *out, size_t n, float value)
{
    /* a block of copies first: GCC vectorizes copying it, not a loop
     * storing the scalar */
    float block[16];
    size_t i = 0;
    for (size_t j = 0; j < 16; j++)
        block[j] = value;
    for (; i + 16 <= n; i += 16)
        for (size_t j = 0; j < 16; j++)
            out[i + j] = block[j];
    for (; i < n; i++)
        out[i] = value;
}
