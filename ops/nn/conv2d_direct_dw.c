/* conv2d_direct_dw.c: the weight gradient of conv2d with stride 1 and no
 * padding, without columns:
 *
 *   dweight[oc][c][ky][kx] = sum over n, y, x of dout[n][oc][y][x] *
 *                            in[n][c][y + ky][x + kx]
 *
 * for each (oc, c, ky, kx) of the range. The vector paths keep a few
 * output channels times a few taps in registers, each one vector of
 * per-lane partial sums over (n, y, x) along x, that one fixed horizontal
 * add turns into the result; loads and masks follow conv2d_direct.c's
 * rules (see its header). The order of every sum is fixed by the shape,
 * so the results do not depend on the range of output channels a thread
 * gets. */
#include "ops/nn/conv2d_impl.h"

#include "core/error.h"
#include "ops/nn/conv2d_direct_impl.h"

#ifdef SL_CONV2D_X86
#include "ops/nn/lanes_avx2.h"
#endif

/* --- plain C ----------------------------------------------------------- */

/* acc[x] += a[x] * b[x], x in [0, n); in blocks of a fixed 16 columns,
 * then 4, then one by one, which GCC vectorizes at -O2. */
static void mac_row(float *restrict acc, const float *restrict a, const float *restrict b,
                    size_t n)
{
    size_t x = 0;
    for (; x + 16 <= n; x += 16)
        for (size_t j = x; j < x + 16; j++)
            acc[j] += a[j] * b[j];
    for (; x + 4 <= n; x += 4)
        for (size_t j = x; j < x + 4; j++)
            acc[j] += a[j] * b[j];
    for (; x < n; x++)
        acc[x] += a[x] * b[x];
}
/* dweight[oc][c][ky][kx] for oc in [oc0, oc1): per column x, a float sum
 * over (n, y) (a row at a time, which vectorizes), then the columns added
 * in double; rows wider than 64 go in chunks of 64 columns. */
static void dw_c(float *restrict dw, const float *restrict dout, const float *restrict in,
                 const sl__conv2d_dims *d, size_t oc0, size_t oc1)
{
    const size_t taps = d->kh * d->kw, plane = d->h * d->w, oplane = d->oh * d->ow;
    for (size_t oc = oc0; oc < oc1; oc++)
        for (size_t c = 0; c < d->c; c++)
            for (size_t t = 0; t < taps; t++) {
                const size_t off = t / d->kw * d->w + t % d->kw;
                double sum = 0.0;
                for (size_t x0 = 0; x0 < d->ow; x0 += 64) {
                    const size_t len = d->ow - x0 < 64 ? d->ow - x0 : 64;
                    float acc[64] = {0};
                    for (size_t n = 0; n < d->n; n++) {
                        const float *g = dout + (n * d->oc + oc) * oplane + x0;   /* (OH, OW) */
                        const float *x = in + (n * d->c + c) * plane + off + x0; /* (H, W) */
                        for (size_t y = 0; y < d->oh; y++)
                            mac_row(acc, g + y * d->ow, x + y * d->w, len);
                    }
                    for (size_t j = 0; j < len; j++)
                        sum += (double)acc[j];
                }
                dw[(oc * d->c + c) * taps + t] = (float)sum;
            }
}

#ifdef SL_CONV2D_X86

/* The weight gradient's tap blocks of nt taps each. With KW >= nt, runs of
 * nt consecutive kx in one kernel row (a row's last run moved back to end
 * it); else nt taps in (ky, kx) order as fixed_block cuts them. */
static size_t dw_tap_blocks(const sl__conv2d_dims *d, size_t nt)
{
    if (d->kw >= nt)
        return d->kh * ((d->kw + nt - 1) / nt);
    return (d->kh * d->kw + nt - 1) / nt;
}

/* Block i: its taps (ky * KW + kx) and their input offsets (ky * W + kx),
 * in order; returns 1 when they are consecutive columns of one row. */
static int dw_tap_block(const sl__conv2d_dims *d, size_t nt, size_t i, size_t *tap,
                        size_t *off)
{
    if (d->kw >= nt) {
        const size_t runs = (d->kw + nt - 1) / nt, ky = i / runs;
        size_t kx0 = i % runs * nt;
        if (kx0 + nt > d->kw)
            kx0 = d->kw - nt;
        for (size_t t = 0; t < nt; t++) {
            tap[t] = ky * d->kw + kx0 + t;
            off[t] = ky * d->w + kx0 + t;
        }
        return 1;
    }
    fixed_block(d->kh * d->kw, nt, i, tap);
    for (size_t t = 0; t < nt; t++)
        off[t] = tap[t] / d->kw * d->w + tap[t] % d->kw;
    return 0;
}

/* --- AVX-512F ------------------------------------------------------------ */

/* A dw block: up to 4 channels times 5 taps, 20 accumulators of the 32
 * registers; per slot, 4 dout loads and 5 input loads feed 20 FMAs. */
enum { W512_OCS = 4, W512_TAPS = 5 };

/* How a dw step treats the lanes outside mask m. */
enum { STEP_WHOLE, STEP_MASK_FMA, STEP_MASK_LOAD };

/* One step of a dw block: dout at g (channel b at g + b * oplane) times
 * the input at xr + off[t] (xr + off[0] + t when row: the taps are
 * consecutive columns, and constant displacements spare the registers the
 * offsets would take). STEP_WHOLE: every lane counts; STEP_MASK_FMA: whole
 * loads, the FMA leaves lanes outside m alone; STEP_MASK_LOAD: lanes
 * outside m load 0 (near the end of a buffer). */
__attribute__((target("avx512f"), always_inline)) static inline void
dw_step_avx512(__m512 acc[W512_OCS][W512_TAPS], const float *g, size_t oplane,
               const float *xr, const size_t *off, __mmask16 m, const int nob, const int row,
               const int kind)
{
    const float *xb = xr + off[0];
    __m512 gv[W512_OCS];
    /* an opaque base, or GCC gives each tap its own pointer register */
    __asm__("" : "+r"(xb));
#pragma GCC unroll 8
    for (int b = 0; b < nob; b++)
        gv[b] = load_avx512(g + (size_t)b * oplane, m, kind == STEP_MASK_LOAD);
#pragma GCC unroll 8
    for (int t = 0; t < W512_TAPS; t++) {
        const float *xp = row ? xb + t : xr + off[t];
        __m512 xv = load_avx512(xp, m, kind == STEP_MASK_LOAD);
#pragma GCC unroll 8
        for (int b = 0; b < nob; b++)
            acc[b][t] = kind == STEP_MASK_FMA ? _mm512_mask3_fmadd_ps(gv[b], xv, acc[b][t], m)
                                              : _mm512_fmadd_ps(gv[b], xv, acc[b][t]);
    }
}

/* dweight for output channels [oc, oc + nob), input channel c and the taps
 * tap[0..W512_TAPS) at input offsets off[] (ky * W + kx), each summed over
 * (n, y, x) lane by lane, then across the lanes. */
__attribute__((target("avx512f"), always_inline)) static inline void
dw_block_avx512(float *dw, const float *dout, const float *in, const sl__conv2d_dims *d,
                size_t oc, size_t c, const size_t *tap, const size_t *off, const int nob,
                const int row)
{
    const size_t taps = d->kh * d->kw, plane = d->h * d->w, oplane = d->oh * d->ow;
    const size_t ow = d->ow, w = d->w, whole = ow / X512_VL * X512_VL;
    const size_t dout_len = d->n * d->oc * oplane, in_len = d->n * d->c * plane;
    const size_t far = off[W512_TAPS - 1];   /* taps go in order */
    __m512 acc[W512_OCS][W512_TAPS];

#pragma GCC unroll 8
    for (int b = 0; b < nob; b++)
#pragma GCC unroll 8
        for (int t = 0; t < W512_TAPS; t++)
            acc[b][t] = _mm512_setzero_ps();
    if (ow >= X512_VL) {
        /* whole slots, then one moved left to end the row, counting only
         * its lanes past the last whole slot; every load stays in the row */
        const __mmask16 mtail = (__mmask16)(0xFFFFu << (X512_VL - (ow - whole)));
        for (size_t n = 0; n < d->n; n++) {
            const float *g = dout + (n * d->oc + oc) * oplane;   /* (nob, OH, OW) */
            const float *xs = in + (n * d->c + c) * plane;       /* (H, W) */
            for (size_t y = 0; y < d->oh; y++, g += ow, xs += w) {
                for (size_t x = 0; x < whole; x += X512_VL)
                    dw_step_avx512(acc, g + x, oplane, xs + x, off, 0xFFFF, nob, row,
                                   STEP_WHOLE);
                if (whole < ow)
                    dw_step_avx512(acc, g + ow - X512_VL, oplane, xs + ow - X512_VL, off,
                                   mtail, nob, row, STEP_MASK_FMA);
            }
        }
    } else {
        /* one slot per row, its lanes past the row masked off; its whole
         * loads run past the row, so check they stay in the buffers */
        const __mmask16 m = (__mmask16)((1u << ow) - 1);
        for (size_t n = 0; n < d->n; n++) {
            const size_t gi = (n * d->oc + oc) * oplane, xi = (n * d->c + c) * plane;
            for (size_t y = 0; y < d->oh; y++) {
                const float *g = dout + gi + y * ow, *xr = in + xi + y * w;
                if (gi + (nob - 1) * oplane + y * ow + X512_VL <= dout_len &&
                    xi + y * w + far + X512_VL <= in_len)
                    dw_step_avx512(acc, g, oplane, xr, off, m, nob, row, STEP_MASK_FMA);
                else
                    dw_step_avx512(acc, g, oplane, xr, off, m, nob, row, STEP_MASK_LOAD);
            }
        }
    }
#pragma GCC unroll 8
    for (int b = 0; b < nob; b++)
#pragma GCC unroll 8
        for (int t = 0; t < W512_TAPS; t++)
            dw[((oc + (size_t)b) * d->c + c) * taps + tap[t]] = _mm512_reduce_add_ps(acc[b][t]);
}

/* The blocks of one tap layout in a function of their own: GCC allocates
 * registers per function, and one holding every variant spills. */
__attribute__((target("avx512f"), noinline)) static void
dw_row_avx512(float *dw, const float *dout, const float *in, const sl__conv2d_dims *d,
              size_t oc, size_t c, const size_t *tap, const size_t *off, size_t nob)
{
    switch (nob) {
    case 1:
        dw_block_avx512(dw, dout, in, d, oc, c, tap, off, 1, 1);
        break;
    case 2:
        dw_block_avx512(dw, dout, in, d, oc, c, tap, off, 2, 1);
        break;
    case 3:
        dw_block_avx512(dw, dout, in, d, oc, c, tap, off, 3, 1);
        break;
    default:
        dw_block_avx512(dw, dout, in, d, oc, c, tap, off, 4, 1);
        break;
    }
}

__attribute__((target("avx512f"), noinline)) static void
dw_list_avx512(float *dw, const float *dout, const float *in, const sl__conv2d_dims *d,
               size_t oc, size_t c, const size_t *tap, const size_t *off, size_t nob)
{
    switch (nob) {
    case 1:
        dw_block_avx512(dw, dout, in, d, oc, c, tap, off, 1, 0);
        break;
    case 2:
        dw_block_avx512(dw, dout, in, d, oc, c, tap, off, 2, 0);
        break;
    case 3:
        dw_block_avx512(dw, dout, in, d, oc, c, tap, off, 3, 0);
        break;
    default:
        dw_block_avx512(dw, dout, in, d, oc, c, tap, off, 4, 0);
        break;
    }
}

__attribute__((target("avx512f"))) static void dw_avx512(float *dw, const float *dout,
                                                         const float *in,
                                                         const sl__conv2d_dims *d, size_t oc0,
                                                         size_t oc1)
{
    const size_t nblk = even_blocks(oc1 - oc0, W512_OCS);
    for (size_t b = 0; b < nblk; b++) {
        size_t o0, nob;
        even_block(oc1 - oc0, W512_OCS, b, &o0, &nob);
        for (size_t c = 0; c < d->c; c++) {
            for (size_t i = 0; i < dw_tap_blocks(d, W512_TAPS); i++) {
                size_t tap[W512_TAPS], off[W512_TAPS];
                if (dw_tap_block(d, W512_TAPS, i, tap, off))
                    dw_row_avx512(dw, dout, in, d, oc0 + o0, c, tap, off, nob);
                else
                    dw_list_avx512(dw, dout, in, d, oc0 + o0, c, tap, off, nob);
            }
        }
    }
}

/* --- AVX2 + FMA ------------------------------------------------------------ */

/* 16 registers: a dw block is up to 2 channels times 5 taps (10
 * accumulators). */
enum { W256_OCS = 2, W256_TAPS = 5 };

/* As dw_step_avx512; AVX2 has no masked FMA, so STEP_MASK_FMA zeroes the
 * lanes outside m in both factors (whatever they held, 0 * 0 adds 0). */
__attribute__((target("avx2,fma"), always_inline)) static inline void
dw_step_avx2(__m256 acc[W256_OCS][W256_TAPS], const float *g, size_t oplane, const float *xr,
             const size_t *off, __m256i m, const int nob, const int row, const int kind)
{
    const __m256 mf = _mm256_castsi256_ps(m);
    __m256 gv[W256_OCS];
#pragma GCC unroll 8
    for (int b = 0; b < nob; b++) {
        gv[b] = load_avx2(g + (size_t)b * oplane, m, kind == STEP_MASK_LOAD);
        if (kind == STEP_MASK_FMA)
            gv[b] = _mm256_and_ps(gv[b], mf);
    }
#pragma GCC unroll 8
    for (int t = 0; t < W256_TAPS; t++) {
        const float *xp = row ? xr + off[0] + t : xr + off[t];
        __m256 xv = load_avx2(xp, m, kind == STEP_MASK_LOAD);
        if (kind == STEP_MASK_FMA)
            xv = _mm256_and_ps(xv, mf);
#pragma GCC unroll 8
        for (int b = 0; b < nob; b++)
            acc[b][t] = _mm256_fmadd_ps(gv[b], xv, acc[b][t]);
    }
}

__attribute__((target("avx2,fma"), always_inline)) static inline void
dw_block_avx2(float *dw, const float *dout, const float *in, const sl__conv2d_dims *d,
              size_t oc, size_t c, const size_t *tap, const size_t *off, const int nob,
              const int row)
{
    const size_t taps = d->kh * d->kw, plane = d->h * d->w, oplane = d->oh * d->ow;
    const size_t ow = d->ow, w = d->w, whole = ow / X256_VL * X256_VL;
    const size_t dout_len = d->n * d->oc * oplane, in_len = d->n * d->c * plane;
    const size_t far = off[W256_TAPS - 1];
    const __m256i all = _mm256_set1_epi32(-1);
    __m256 acc[W256_OCS][W256_TAPS];

#pragma GCC unroll 8
    for (int b = 0; b < nob; b++)
#pragma GCC unroll 8
        for (int t = 0; t < W256_TAPS; t++)
            acc[b][t] = _mm256_setzero_ps();
    if (ow >= X256_VL) {
        const __m256i mtail = sl__mask_avx2(X256_VL - (ow - whole), X256_VL);
        for (size_t n = 0; n < d->n; n++) {
            const float *g = dout + (n * d->oc + oc) * oplane;
            const float *xs = in + (n * d->c + c) * plane;
            for (size_t y = 0; y < d->oh; y++, g += ow, xs += w) {
                for (size_t x = 0; x < whole; x += X256_VL)
                    dw_step_avx2(acc, g + x, oplane, xs + x, off, all, nob, row, STEP_WHOLE);
                if (whole < ow)
                    dw_step_avx2(acc, g + ow - X256_VL, oplane, xs + ow - X256_VL, off, mtail,
                                 nob, row, STEP_MASK_FMA);
            }
        }
    } else {
        const __m256i m = sl__mask_avx2(0, ow);
        for (size_t n = 0; n < d->n; n++) {
            const size_t gi = (n * d->oc + oc) * oplane, xi = (n * d->c + c) * plane;
            for (size_t y = 0; y < d->oh; y++) {
                const float *g = dout + gi + y * ow, *xr = in + xi + y * w;
                if (gi + (nob - 1) * oplane + y * ow + X256_VL <= dout_len &&
                    xi + y * w + far + X256_VL <= in_len)
                    dw_step_avx2(acc, g, oplane, xr, off, m, nob, row, STEP_MASK_FMA);
                else
                    dw_step_avx2(acc, g, oplane, xr, off, m, nob, row, STEP_MASK_LOAD);
            }
        }
    }
#pragma GCC unroll 8
    for (int b = 0; b < nob; b++)
#pragma GCC unroll 8
        for (int t = 0; t < W256_TAPS; t++)
            dw[((oc + (size_t)b) * d->c + c) * taps + tap[t]] = sl__hsum_avx2(acc[b][t]);
}

__attribute__((target("avx2,fma"))) static void dw_avx2(float *dw, const float *dout,
                                                        const float *in,
                                                        const sl__conv2d_dims *d, size_t oc0,
                                                        size_t oc1)
{
    const size_t nblk = even_blocks(oc1 - oc0, W256_OCS);
    for (size_t b = 0; b < nblk; b++) {
        size_t o0, nob;
        even_block(oc1 - oc0, W256_OCS, b, &o0, &nob);
        for (size_t c = 0; c < d->c; c++) {
            for (size_t i = 0; i < dw_tap_blocks(d, W256_TAPS); i++) {
                size_t tap[W256_TAPS], off[W256_TAPS];
                const int row = dw_tap_block(d, W256_TAPS, i, tap, off);
                if (nob == 1 && row)
                    dw_block_avx2(dw, dout, in, d, oc0 + o0, c, tap, off, 1, 1);
                else if (nob == 1)
                    dw_block_avx2(dw, dout, in, d, oc0 + o0, c, tap, off, 1, 0);
                else if (row)
                    dw_block_avx2(dw, dout, in, d, oc0 + o0, c, tap, off, 2, 1);
                else
                    dw_block_avx2(dw, dout, in, d, oc0 + o0, c, tap, off, 2, 0);
            }
        }
    }
}
#endif /* SL_CONV2D_X86 */

void sl__conv2d_direct_backward_weight(sl__conv2d_path p, float *dweight, const float *dout,
                                       const float *in, const sl__conv2d_dims *d, size_t oc0,
                                       size_t oc1)
{
    SL_ASSERT(oc0 <= oc1 && oc1 <= d->oc && sl__conv2d_is_direct(d) &&
              sl__conv2d_path_supported(p));
    if (oc0 == oc1)
        return;
    switch (p) {
#ifdef SL_CONV2D_X86
    case SL__CONV2D_PATH_AVX512:
        dw_avx512(dweight, dout, in, d, oc0, oc1);
        return;
    case SL__CONV2D_PATH_AVX2:
        if (sl__conv2d_dw_lanes_fits(d))
            sl__conv2d_dw_lanes_avx2(dweight, dout, in, d, oc0, oc1);
        else
            dw_avx2(dweight, dout, in, d, oc0, oc1);
        return;
#endif
    default:
        dw_c(dweight, dout, in, d, oc0, oc1);
        return;
    }
}
