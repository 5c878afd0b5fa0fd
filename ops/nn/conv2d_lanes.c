/* conv2d_lanes.c: conv2d's AVX2 kernels with output channels across the
 * lanes, for shapes whose rows waste the lanes of conv2d_direct.c's
 * kernels, which put output columns across them: a 10-wide row (LeNet's
 * conv2) fills 10 of 16 lanes in two AVX2 vectors. Here lane k of a vector
 * is output channel 8v + k, so every lane of every FMA counts.
 *
 * The weight gradient:
 *
 *   dw[oc][c][tap] = sum over n, p of dout[n][oc][p] * in[n][c][p' + off(tap)]
 *
 * where p runs over the output positions (y, x), p' = y * W + x is where p
 * starts in an input plane and off(tap) = ky * W + kx. Per sample the
 * vector's dout is transposed to (p, 8 channels) once; then, for each input
 * channel and block of up to 5 taps, each position loads one dout vector,
 * broadcasts one input value per tap and does one FMA per tap. Each
 * (channel, tap) sums in two partial sums, even and odd positions, added at
 * the end: ten chains of FMAs keep both FMA units busy while each waits for
 * its last result.
 *
 * The forward:
 *
 *   out[n][oc][p] = sum over c, tap of w[oc][c][tap] * in[n][c][p' + off(tap)]
 *
 * 16 channels (two vectors) times 6 positions in registers; per (c, tap)
 * two weight vectors (transposed once per call) meet 6 broadcast inputs.
 *
 * The input gradient:
 *
 *   din[n][c][q] = sum over oc, tap of w[oc][c][tap] * dout[n][oc][q - tap]
 *
 * sums over the output channels, so they go across the lanes and a fixed
 * tree of horizontal adds finishes each sum. Only the taps that reach dout
 * are visited (the column kernel's full correlation also multiplies the
 * zeros around it, about 3 in 10 of its work on LeNet's conv2): blocks of
 * 2 positions of a row take the union of their taps, reading zeros from a
 * padded, transposed copy of the sample's dout for the one tap of the
 * union a position lacks. 6 input channels x 2 positions in registers.
 *
 * The order of every sum is fixed by the shape alone, so the results do
 * not depend on the range a thread gets or on how many threads there are;
 * whether these kernels run at all is also decided by the shape
 * (sl__conv2d_lanes_fits, sl__conv2d_dx_lanes_fits,
 * sl__conv2d_dw_lanes_fits). */
#include "ops/nn/conv2d_impl.h"

#include "core/error.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include "ops/nn/lanes_avx2.h"

enum {
    LANES = 8,       /* output channels per vector */
    TAPS = 5,        /* taps per block: 2 x 5 accumulators of 16 registers */
    MAX_PLANE = 256, /* output positions a transposed sample may hold */
    MAX_BLOCKS = 64  /* (input channel, tap block) pairs kept per vector */
};

enum {
    DX_CHANNELS = 6,    /* input channels of an input-gradient block */
    DX_POSITIONS = 2,   /* positions of an input-gradient block */
    FWD_CHANNELS = 16,  /* output channels of a forward block: two vectors */
    FWD_POSITIONS = 6,  /* positions of a forward block: 12 accumulators */
    MAX_WEIGHTS = 4096  /* floats of the forward's transposed weights */
};

static size_t tap_blocks(const sl__conv2d_dims *d)
{
    return (d->kh * d->kw + TAPS - 1) / TAPS;
}

/* Whether the column kernels leave over a tenth of their lanes empty. */
static int columns_waste_lanes(const sl__conv2d_dims *d)
{
    size_t per_row = d->ow <= LANES ? 1 : (d->ow + LANES - 1) / LANES;
    return 10 * d->ow < 9 * LANES * per_row;
}

int sl__conv2d_dw_lanes_fits(const sl__conv2d_dims *d)
{
    return d->oc >= LANES && d->oh * d->ow <= MAX_PLANE &&
           d->c * tap_blocks(d) <= MAX_BLOCKS && columns_waste_lanes(d);
}

int sl__conv2d_dx_lanes_fits(const sl__conv2d_dims *d)
{
    return d->oc >= 2 * LANES && d->oc % LANES == 0 && d->kh * d->kw > 1 &&
           d->w >= DX_POSITIONS;
}

int sl__conv2d_lanes_fits(const sl__conv2d_dims *d)
{
    return d->oc % FWD_CHANNELS == 0 && d->oh * d->ow >= FWD_POSITIONS &&
           d->oh * d->ow <= MAX_PLANE && d->c * d->kh * d->kw * FWD_CHANNELS <= MAX_WEIGHTS &&
           columns_waste_lanes(d);
}

/* Output positions pos[0..5] of 16 channels: out[k * np + j] (channel k,
 * position j) = the sum over (c, tap) of wt's (c, tap) weights times the
 * input at pos[j] + off[tap] of channel c. */
__attribute__((target("avx2,fma"), always_inline)) static inline void
forward_block(float *out, size_t np, const float *wt, const float *x, size_t plane,
              const sl__conv2d_dims *d, const size_t *pos, const size_t *off)
{
    const size_t taps = d->kh * d->kw;
    __m256 acc[FWD_POSITIONS][2];
#pragma GCC unroll 8
    for (int j = 0; j < FWD_POSITIONS; j++)
        acc[j][0] = acc[j][1] = _mm256_setzero_ps();
    for (size_t c = 0; c < d->c; c++) {
        const float *xc = x + c * plane;
        for (size_t t = 0; t < taps; t++) {
            const float *w = wt + (c * taps + t) * FWD_CHANNELS;
            const __m256 w0 = _mm256_load_ps(w), w1 = _mm256_load_ps(w + LANES);
#pragma GCC unroll 8
            for (int j = 0; j < FWD_POSITIONS; j++) {
                const __m256 v = _mm256_broadcast_ss(xc + pos[j] + off[t]);
                acc[j][0] = _mm256_fmadd_ps(w0, v, acc[j][0]);
                acc[j][1] = _mm256_fmadd_ps(w1, v, acc[j][1]);
            }
        }
    }
    /* (position, channel) back to the (channel, position) layout */
#pragma GCC unroll 8
    for (int j = 0; j < FWD_POSITIONS; j++) {
        _Alignas(32) float lane[FWD_CHANNELS];
        _mm256_store_ps(lane, acc[j][0]);
        _mm256_store_ps(lane + LANES, acc[j][1]);
        for (size_t k = 0; k < FWD_CHANNELS; k++)
            out[k * np + (size_t)j] = lane[k];
    }
}

__attribute__((target("avx2,fma"))) void sl__conv2d_lanes_forward_avx2(float *out, const float *in,
                                                                      const float *weight,
                                                                      const sl__conv2d_dims *d,
                                                                      size_t n0, size_t n1)
{
    const size_t taps = d->kh * d->kw, plane = d->h * d->w, np = d->oh * d->ow;
    _Alignas(32) float wt[MAX_WEIGHTS];
    size_t pos[MAX_PLANE], off[MAX_PLANE];

    SL_ASSERT(sl__conv2d_lanes_fits(d) && n0 <= n1 && n1 <= d->n && taps <= MAX_PLANE);
    for (size_t p = 0; p < np; p++)
        pos[p] = p / d->ow * d->w + p % d->ow;
    for (size_t t = 0; t < taps; t++)
        off[t] = t / d->kw * d->w + t % d->kw;
    for (size_t v0 = 0; v0 < d->oc; v0 += FWD_CHANNELS) {
        /* this block's weights as (c, tap, 16 channels) */
        for (size_t k = 0; k < FWD_CHANNELS; k++)
            for (size_t ct = 0; ct < d->c * taps; ct++)
                wt[ct * FWD_CHANNELS + k] = weight[(v0 + k) * d->c * taps + ct];
        for (size_t n = n0; n < n1; n++) {
            const float *x = in + n * d->c * plane;
            float *o = out + (n * d->oc + v0) * np;
            /* blocks of 6 positions, the last moved back to end at np: its
             * outputs come out the same as the block before gave them */
            for (size_t p = 0; p < np; p += FWD_POSITIONS) {
                size_t first = p + FWD_POSITIONS <= np ? p : np - FWD_POSITIONS;
                forward_block(o + first, np, wt, x, plane, d, pos + first, off);
            }
        }
    }
}

/* One block of nt taps of one input channel over one sample: acc[0][t]
 * sums the even positions of tap t, acc[1][t] the odd ones. g holds the
 * sample's dout transposed, LANES floats per position; x is the sample's
 * input channel; pos[p] is where position p starts in it. */
__attribute__((target("avx2,fma"), always_inline)) static inline void
lanes_block(__m256 acc[2][TAPS], const float *g, const float *x, const size_t *pos,
            size_t np, const size_t *off, const int nt)
{
    /* in locals: __m256 may alias floats, so sums left in acc would go
     * through memory at every FMA */
    __m256 even[TAPS], odd[TAPS];
    size_t p = 0;
#pragma GCC unroll 8
    for (int t = 0; t < nt; t++) {
        even[t] = acc[0][t];
        odd[t] = acc[1][t];
    }
    for (; p + 2 <= np; p += 2) {
        const __m256 g0 = _mm256_load_ps(g + p * LANES);
        const __m256 g1 = _mm256_load_ps(g + (p + 1) * LANES);
        const float *x0 = x + pos[p], *x1 = x + pos[p + 1];
#pragma GCC unroll 8
        for (int t = 0; t < nt; t++) {
            even[t] = _mm256_fmadd_ps(g0, _mm256_broadcast_ss(x0 + off[t]), even[t]);
            odd[t] = _mm256_fmadd_ps(g1, _mm256_broadcast_ss(x1 + off[t]), odd[t]);
        }
    }
    if (p < np) {
        const __m256 g0 = _mm256_load_ps(g + p * LANES);
        const float *x0 = x + pos[p];
#pragma GCC unroll 8
        for (int t = 0; t < nt; t++)
            even[t] = _mm256_fmadd_ps(g0, _mm256_broadcast_ss(x0 + off[t]), even[t]);
    }
#pragma GCC unroll 8
    for (int t = 0; t < nt; t++) {
        acc[0][t] = even[t];
        acc[1][t] = odd[t];
    }
}

__attribute__((target("avx2,fma"))) void sl__conv2d_dw_lanes_avx2(float *dw, const float *dout,
                                                                 const float *in,
                                                                 const sl__conv2d_dims *d,
                                                                 size_t oc0, size_t oc1)
{
    const size_t taps = d->kh * d->kw, plane = d->h * d->w, np = d->oh * d->ow;
    const size_t nblk = tap_blocks(d), nacc = d->c * nblk;
    _Alignas(32) float g[MAX_PLANE * LANES];
    __m256 sums[MAX_BLOCKS][2][TAPS];
    size_t pos[MAX_PLANE], off[MAX_BLOCKS][TAPS];

    SL_ASSERT(sl__conv2d_dw_lanes_fits(d) && oc0 < oc1 && oc1 <= d->oc);
    for (size_t p = 0; p < np; p++)
        pos[p] = p / d->ow * d->w + p % d->ow;
    for (size_t t = 0; t < taps; t++)
        off[t / TAPS][t % TAPS] = t / d->kw * d->w + t % d->kw;
    for (size_t v0 = oc0 / LANES * LANES; v0 < oc1; v0 += LANES) {
        for (size_t a = 0; a < nacc; a++)
            for (int t = 0; t < TAPS; t++)
                sums[a][0][t] = sums[a][1][t] = _mm256_setzero_ps();
        for (size_t n = 0; n < d->n; n++) {
            /* this vector's channels of the sample's dout, as (p, LANES);
             * channels past the last are zero */
            for (size_t k = 0; k < LANES; k++) {
                const float *src = dout + (n * d->oc + v0 + k) * np;
                if (v0 + k < d->oc)
                    for (size_t p = 0; p < np; p++)
                        g[p * LANES + k] = src[p];
                else
                    for (size_t p = 0; p < np; p++)
                        g[p * LANES + k] = 0.0f;
            }
            for (size_t c = 0; c < d->c; c++) {
                const float *x = in + (n * d->c + c) * plane;
                for (size_t b = 0; b < nblk; b++) {
                    const size_t t0 = b * TAPS, nt = taps - t0 < TAPS ? taps - t0 : TAPS;
                    __m256(*acc)[TAPS] = sums[c * nblk + b];
                    switch (nt) {
                    case 1: lanes_block(acc, g, x, pos, np, off[b], 1); break;
                    case 2: lanes_block(acc, g, x, pos, np, off[b], 2); break;
                    case 3: lanes_block(acc, g, x, pos, np, off[b], 3); break;
                    case 4: lanes_block(acc, g, x, pos, np, off[b], 4); break;
                    default: lanes_block(acc, g, x, pos, np, off[b], 5); break;
                    }
                }
            }
        }
        /* even + odd, and each lane to its channel within [oc0, oc1) */
        for (size_t c = 0; c < d->c; c++) {
            for (size_t b = 0; b < nblk; b++) {
                const size_t t0 = b * TAPS, nt = taps - t0 < TAPS ? taps - t0 : TAPS;
                for (size_t t = 0; t < nt; t++) {
                    _Alignas(32) float lane[LANES];
                    _mm256_store_ps(lane, _mm256_add_ps(sums[c * nblk + b][0][t],
                                                        sums[c * nblk + b][1][t]));
                    for (size_t k = 0; k < LANES; k++) {
                        size_t oc = v0 + k;
                        if (oc >= oc0 && oc < oc1)
                            dw[(oc * d->c + c) * taps + t0 + t] = lane[k];
                    }
                }
            }
        }
    }
}

/* din at positions (qy, qx) and (qy, qx + 1) of nc input channels from
 * c0: the taps ky in [ky0, ky1], kx in [kx0, kx1]; dt is the sample's dout
 * padded by KH-1 rows and KW-1 columns, as (row, column, channel); wt the
 * weights as (c, tap, oc). */
__attribute__((target("avx2,fma"), always_inline)) static inline void
dx_block(float *din, const float *dt, const float *wt, const sl__conv2d_dims *d, size_t wp,
         size_t c0, size_t qy, size_t qx, size_t ky0, size_t ky1, size_t kx0, size_t kx1,
         const int nc)
{
    const size_t oc = d->oc, taps = d->kh * d->kw, plane = d->h * d->w;
    __m256 acc[DX_CHANNELS][DX_POSITIONS];
#pragma GCC unroll 8
    for (int c = 0; c < nc; c++)
        acc[c][0] = acc[c][1] = _mm256_setzero_ps();
    for (size_t ky = ky0; ky <= ky1; ky++) {
        for (size_t kx = kx0; kx <= kx1; kx++) {
            /* dout(qy - ky, qx - kx) in the padded copy */
            const float *d0 = dt + ((qy - ky + d->kh - 1) * wp + qx - kx + d->kw - 1) * oc;
            const float *w = wt + (c0 * taps + ky * d->kw + kx) * oc;
            for (size_t v = 0; v < oc; v += LANES) {
                const __m256 g0 = _mm256_loadu_ps(d0 + v), g1 = _mm256_loadu_ps(d0 + oc + v);
#pragma GCC unroll 8
                for (int c = 0; c < nc; c++) {
                    __m256 wv = _mm256_loadu_ps(w + (size_t)c * taps * oc + v);
                    /* in a register: else GCC folds the load into both FMAs */
                    __asm__("" : "+x"(wv));
                    acc[c][0] = _mm256_fmadd_ps(wv, g0, acc[c][0]);
                    acc[c][1] = _mm256_fmadd_ps(wv, g1, acc[c][1]);
                }
            }
        }
    }
#pragma GCC unroll 8
    for (int c = 0; c < nc; c++) {
        float *o = din + (c0 + (size_t)c) * plane + qy * d->w + qx;
        o[0] = sl__hsum_avx2(acc[c][0]);
        o[1] = sl__hsum_avx2(acc[c][1]);
    }
}

__attribute__((target("avx2,fma"))) void sl__conv2d_dx_lanes_avx2(float *din, float *scratch,
                                                                 const float *dout,
                                                                 const float *weight,
                                                                 const sl__conv2d_dims *d,
                                                                 size_t n0, size_t n1)
{
    const size_t oc = d->oc, taps = d->kh * d->kw, oplane = d->oh * d->ow;
    const size_t hp = d->h + d->kh - 1, wp = d->w + d->kw - 1;
    float *dt = scratch;            /* (HP, WP, OC): one sample's dout, padded */
    float *wt = dt + hp * wp * oc;  /* (C, taps, OC) */

    SL_ASSERT(sl__conv2d_dx_lanes_fits(d) && n0 <= n1 && n1 <= d->n);
    for (size_t c = 0; c < d->c; c++)
        for (size_t t = 0; t < taps; t++)
            for (size_t o = 0; o < oc; o++)
                wt[(c * taps + t) * oc + o] = weight[(o * d->c + c) * taps + t];
    /* the borders stay zero: each sample rewrites only the inside */
    memset(dt, 0, hp * wp * oc * sizeof *dt);
    for (size_t n = n0; n < n1; n++) {
        float *dn = din + n * d->c * d->h * d->w;
        for (size_t o = 0; o < oc; o++) {
            const float *src = dout + (n * oc + o) * oplane;
            for (size_t y = 0; y < d->oh; y++)
                for (size_t x = 0; x < d->ow; x++)
                    dt[((y + d->kh - 1) * wp + x + d->kw - 1) * oc + o] = src[y * d->ow + x];
        }
        for (size_t c0 = 0; c0 < d->c; c0 += DX_CHANNELS) {
            const size_t nc = d->c - c0 < DX_CHANNELS ? d->c - c0 : DX_CHANNELS;
            for (size_t qy = 0; qy < d->h; qy++) {
                /* the kernel rows that reach dout from this row */
                const size_t ky0 = qy + 1 > d->oh ? qy + 1 - d->oh : 0;
                const size_t ky1 = qy < d->kh - 1 ? qy : d->kh - 1;
                for (size_t x = 0; x < d->w; x += DX_POSITIONS) {
                    /* the last pair moved back to end the row; the union of
                     * the pair's taps: those of qx's first, qx + 1's last */
                    const size_t qx = x + DX_POSITIONS <= d->w ? x : d->w - DX_POSITIONS;
                    const size_t kx0 = qx + 1 > d->ow ? qx + 1 - d->ow : 0;
                    const size_t kx1 = qx + 1 < d->kw - 1 ? qx + 1 : d->kw - 1;
                    switch (nc) {
                    case 1: dx_block(dn, dt, wt, d, wp, c0, qy, qx, ky0, ky1, kx0, kx1, 1); break;
                    case 2: dx_block(dn, dt, wt, d, wp, c0, qy, qx, ky0, ky1, kx0, kx1, 2); break;
                    case 3: dx_block(dn, dt, wt, d, wp, c0, qy, qx, ky0, ky1, kx0, kx1, 3); break;
                    case 4: dx_block(dn, dt, wt, d, wp, c0, qy, qx, ky0, ky1, kx0, kx1, 4); break;
                    case 5: dx_block(dn, dt, wt, d, wp, c0, qy, qx, ky0, ky1, kx0, kx1, 5); break;
                    default: dx_block(dn, dt, wt, d, wp, c0, qy, qx, ky0, ky1, kx0, kx1, 6); break;
                    }
                }
            }
        }
    }
}

#endif
