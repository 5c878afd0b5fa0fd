/* conv2d_direct.c: conv2d with stride 1 and no padding, without columns.
 *
 * The forward and the input gradient are one loop, a "valid" correlation
 * (corr_* below) of a run of samples:
 *   forward         out (OC, OH, OW) = weight (OC, C, KH, KW) * in (C, H, W)
 *   input gradient  din (C, H, W) = flipped (C, OC, KH, KW) * dout (OC, OH,
 *                   OW) with KH-1 rows and KW-1 columns of zeros around it,
 *                   the "full" correlation, one sample at a time;
 *                   flipped[c][oc][i][j] = weight[oc][c][KH-1-i][KW-1-j].
 *                   Taps that would only multiply rows of zeros are skipped.
 * The weight gradient sums dout[n][oc][y][x] * in[n][c][y+ky][x+kx] over n,
 * y, x for each (oc, c, ky, kx) of the range (conv2d_direct_dw.c; the
 * helpers both files use are in conv2d_direct_impl.h).
 *
 * The vector paths run along x. Output rows are covered by "slots",
 * vectors of VL columns (16 for AVX-512, 8 for AVX2): a row narrower than
 * VL is one slot whose lanes past the row are masked off; a wider row ends
 * with a slot moved left to end at the last column, overlapping the one
 * before. A correlation block keeps a few slots (of any rows and samples)
 * times a few output channels in registers and runs over (c, ky, kx),
 * loading each input vector once for all its channels and broadcasting each
 * weight once for all its slots. A weight-gradient block keeps a few
 * channels times a few taps, each one vector of per-lane partial sums over
 * (n, y, x) that one fixed horizontal add turns into the result. (On AVX2,
 * a shape whose rows waste lanes so, LeNet's conv2, puts output channels
 * across the lanes instead, in the forward and the input gradient too:
 * conv2d_lanes.c.)
 *
 * Loads are always whole vectors: on the Zen 5 this was tuned on a masked
 * load costs about three plain ones (AVX-512 and AVX2 alike), while masking
 * an AVX-512 store or FMA costs nothing. AVX2's masked store costs several
 * plain ones on AMD's cores (conv1's forward ran 1.56x faster without
 * them), so AVX2 masks only the stores of rows narrower than a vector.
 * Lanes past a row read the next row or sample; the correlation masks them
 * off when it stores (or stores whole slots, which stay inside a row), the
 * weight gradient in its FMA. Only a block whose whole vectors could run
 * past the end of a buffer loads with masks.
 *
 * Blocks are cut from the shape and, where a count does not divide, the
 * last block is moved back to overlap the one before (or repeats its last
 * element): an output or a gradient entry computed twice comes out the same
 * both times, since each is one chain of FMAs in a fixed order, in its own
 * lane, whatever block holds it. For the same reason the results do not
 * depend on the range a thread is given.
 *
 * The register blocks are always_inline functions whose block sizes are
 * constant arguments; switches call them with constants, so GCC unrolls
 * the loops over a block and keeps it in registers.
 *
 * The path is an argument: conv2d.c passes sl__conv2d_best_path(), found
 * once per process (pthread_once; nothing can change it later), and the
 * tests pass each supported path in turn. */
#include "ops/nn/conv2d_impl.h"

#include <pthread.h>
#include <string.h>

#include "core/cpu.h"
#include "core/error.h"
#include "ops/nn/conv2d_direct_impl.h"

#ifdef SL_CONV2D_X86
#include "ops/nn/lanes_avx2.h"
#endif

/* A "valid" correlation of ns samples, one after another in in and out. */
typedef struct corr_geom {
    size_t ns;
    int rows_first;      /* slots in (row, sample) order, else (sample, row) */
    size_t ci, hi, wi;   /* input (NS, CI, HI, WI) */
    size_t co, kh, kw;   /* weight (CO, CI, KH, KW) */
    size_t ho, wo;       /* output (NS, CO, HO, WO), HI - KH + 1 by WI - KW + 1 */
    size_t ylo, yhi;     /* input rows outside [ylo, yhi) are zero */
} corr_geom;

/* --- plain C ----------------------------------------------------------- */

/* Rows go in blocks of a fixed 16 columns, then 4, then one by one: GCC
 * vectorizes the fixed blocks at -O2 (restrict: the rows never overlap). */

/* orow[x] += wv * irow[x], x in [0, n). */
static void axpy_row(float *restrict orow, const float *restrict irow, float wv, size_t n)
{
    size_t x = 0;
    for (; x + 16 <= n; x += 16)
        for (size_t j = x; j < x + 16; j++)
            orow[j] += wv * irow[j];
    for (; x + 4 <= n; x += 4)
        for (size_t j = x; j < x + 4; j++)
            orow[j] += wv * irow[j];
    for (; x < n; x++)
        orow[x] += wv * irow[x];
}

/* Each output plane is zeroed, then gets one weight times a shifted input
 * plane at a time, in (c, ky, kx) order. */
static void corr_c(float *restrict out, const float *restrict in, const float *restrict w,
                   const corr_geom *g)
{
    const size_t taps = g->kh * g->kw, plane = g->hi * g->wi, oplane = g->ho * g->wo;
    for (size_t s = 0; s < g->ns; s++) {
        for (size_t o = 0; o < g->co; o++) {
            float *op = out + (s * g->co + o) * oplane;   /* (HO, WO) */
            const float *is = in + s * g->ci * plane;      /* (CI, HI, WI) */
            memset(op, 0, oplane * sizeof *op);
            for (size_t c = 0; c < g->ci; c++) {
                for (size_t ky = 0; ky < g->kh; ky++) {
                    /* output rows y whose input row y + ky is in [ylo, yhi) */
                    size_t y0 = g->ylo > ky ? g->ylo - ky : 0;
                    size_t y1 = g->yhi > ky ? g->yhi - ky : 0;
                    if (y1 > g->ho)
                        y1 = g->ho;
                    for (size_t kx = 0; kx < g->kw; kx++) {
                        const float wv = w[(o * g->ci + c) * taps + ky * g->kw + kx];
                        for (size_t y = y0; y < y1; y++)
                            axpy_row(op + y * g->wo, is + c * plane + (y + ky) * g->wi + kx,
                                     wv, g->wo);
                    }
                }
            }
        }
    }
}

#ifdef SL_CONV2D_X86

/* --- slots and blocks, shared by the vector paths ------------------------ */

/* Slots per output row of wo columns, vl wide. */
static size_t slots_per_row(size_t wo, size_t vl)
{
    return wo <= vl ? 1 : (wo + vl - 1) / vl;
}

/* The first column of slot s of a row (see the top of the file). */
static size_t slot_column(size_t s, size_t per_row, size_t wo, size_t vl)
{
    if (wo <= vl)
        return 0;
    if (s + 1 == per_row)
        return wo - vl;
    return s * vl;
}

/* The taps ky of output rows [y0, y1] that can read a nonzero row:
 * [*ky0, *ky1), maybe empty. */
static void corr_ky_range(const corr_geom *g, size_t y0, size_t y1, size_t *ky0, size_t *ky1)
{
    size_t a = g->ylo > y1 ? g->ylo - y1 : 0;
    size_t b = g->yhi > y0 ? g->yhi - y0 : 0;
    if (b > g->kh)
        b = g->kh;
    if (a > b)
        a = b;
    *ky0 = a;
    *ky1 = b;
}

/* A slot of corr_slots' order: its index, sample, output row and slot
 * within the row (of per_row slots). */
typedef struct slot_cursor {
    size_t per_row, idx, s, y, col;
} slot_cursor;

/* The slot of index idx, by division. */
static slot_cursor slot_at(const corr_geom *g, size_t per_row, size_t idx)
{
    const size_t per_sample = g->ho * per_row;
    const size_t r = g->rows_first ? idx / g->ns : idx % per_sample;
    slot_cursor c = {per_row, idx, g->rows_first ? idx % g->ns : idx / per_sample,
                     r / per_row, r % per_row};
    return c;
}

/* The slot after c, by counting: sample by sample, each row by row; or,
 * when rows_first, one slot of every sample before the next slot. */
static void slot_next(const corr_geom *g, slot_cursor *c)
{
    c->idx++;
    if (g->rows_first) {
        if (++c->s < g->ns)
            return;
        c->s = 0;
    }
    if (++c->col < c->per_row)
        return;
    c->col = 0;
    if (++c->y < g->ho || g->rows_first)
        return;
    c->y = 0;
    c->s++;
}

/* Slot block blk of k slots, the slots of all ns samples in order (sample
 * by sample, or row by row across the samples when rows_first: then a
 * block of the input gradient holds one row of several samples and needs
 * only that row's taps): where each slot starts in the input (in_off) and
 * the output (out_off), and the taps [*ky0, *ky1) its rows need. Returns 1
 * past the farthest input float the block reads with whole vectors of vl,
 * counting from in.
 *
 * *cur carries the slot after the last block's from one call to the next:
 * blocks follow one another, so only the last one (moved back) needs the
 * divisions of slot_at, which on LeNet's conv1 had cost as much as a
 * quarter of its forward (perf, EPYC-2c-avx512). Start it at slot_at(g,
 * slots_per_row(g->wo, vl), 0). */
static size_t corr_slots(const corr_geom *g, size_t vl, size_t blk, size_t k, size_t *in_off,
                         size_t *out_off, size_t *ky0, size_t *ky1, slot_cursor *cur)
{
    const size_t per_row = cur->per_row, count = g->ns * g->ho * per_row;
    const size_t in_sz = g->ci * g->hi * g->wi, out_sz = g->co * g->ho * g->wo;
    size_t idx[8] = {0}, ymin = (size_t)-1, ymax = 0, far = 0; /* {0}: GCC at -O1 */
    SL_ASSERT(k >= 1 && k <= 8);
    fixed_block(count, k, blk, idx);
    if (cur->idx != idx[0])
        *cur = slot_at(g, per_row, idx[0]);
    for (size_t j = 0; j < k; j++) {
        size_t x;
        if (j > 0 && idx[j] != idx[j - 1])
            slot_next(g, cur);
        x = slot_column(cur->col, per_row, g->wo, vl);
        in_off[j] = cur->s * in_sz + cur->y * g->wi + x;
        out_off[j] = cur->s * out_sz + cur->y * g->wo + x;
        ymin = cur->y < ymin ? cur->y : ymin;
        ymax = cur->y > ymax ? cur->y : ymax;
        far = in_off[j] > far ? in_off[j] : far;
    }
    if (cur->idx + 1 < count)
        slot_next(g, cur);
    corr_ky_range(g, ymin, ymax, ky0, ky1);
    if (*ky0 == *ky1)
        return 0;
    return far + (g->ci - 1) * g->hi * g->wi + (*ky1 - 1) * g->wi + g->kw - 1 + vl;
}

/* --- AVX-512F ------------------------------------------------------------ */

/* A correlation block: 4 slots times up to 6 output channels, 24
 * accumulators of the 32 registers; per tap, 4 input loads and 6
 * broadcasts feed 24 FMAs. */
enum { X512_SLOTS = 4, X512_OCS = 6 };

__attribute__((target("avx512f"), always_inline)) static inline void
corr_block_avx512(float *out, const float *in, const float *w, const corr_geom *g,
                  const size_t *in_off, const size_t *out_off, __mmask16 m, size_t ky0,
                  size_t ky1, size_t o0, const int nob, const int masked)
{
    const size_t taps = g->kh * g->kw, ct = g->ci * taps, plane = g->hi * g->wi;
    const size_t oplane = g->ho * g->wo;
    __m512 acc[X512_OCS][X512_SLOTS];

#pragma GCC unroll 8
    for (int b = 0; b < nob; b++)
#pragma GCC unroll 8
        for (int j = 0; j < X512_SLOTS; j++)
            acc[b][j] = _mm512_setzero_ps();
    for (size_t c = 0; c < g->ci; c++) {
        for (size_t ky = ky0; ky < ky1; ky++) {
            const float *ir = in + c * plane + ky * g->wi;             /* input row ky */
            const float *wr = w + o0 * ct + c * taps + ky * g->kw;     /* weight row ky */
            for (size_t kx = 0; kx < g->kw; kx++) {
                __m512 x[X512_SLOTS];
#pragma GCC unroll 8
                for (int j = 0; j < X512_SLOTS; j++)
                    x[j] = load_avx512(ir + in_off[j] + kx, m, masked);
#pragma GCC unroll 8
                for (int b = 0; b < nob; b++) {
                    __m512 wv = _mm512_set1_ps(wr[(size_t)b * ct + kx]);
#pragma GCC unroll 8
                    for (int j = 0; j < X512_SLOTS; j++)
                        acc[b][j] = _mm512_fmadd_ps(wv, x[j], acc[b][j]);
                }
            }
        }
    }
#pragma GCC unroll 8
    for (int b = 0; b < nob; b++)
#pragma GCC unroll 8
        for (int j = 0; j < X512_SLOTS; j++)
            _mm512_mask_storeu_ps(out + (o0 + (size_t)b) * oplane + out_off[j], m, acc[b][j]);
}

/* One slot block for every output channel, in blocks of at most 6. */
__attribute__((target("avx512f"), always_inline)) static inline void
corr_channels_avx512(float *out, const float *in, const float *w, const corr_geom *g,
                     const size_t *in_off, const size_t *out_off, __mmask16 m, size_t ky0,
                     size_t ky1, const int masked)
{
    const size_t nblk = even_blocks(g->co, X512_OCS);
    for (size_t b = 0; b < nblk; b++) {
        size_t o0, nob;
        even_block(g->co, X512_OCS, b, &o0, &nob);
        switch (nob) {
        case 1:
            corr_block_avx512(out, in, w, g, in_off, out_off, m, ky0, ky1, o0, 1, masked);
            break;
        case 2:
            corr_block_avx512(out, in, w, g, in_off, out_off, m, ky0, ky1, o0, 2, masked);
            break;
        case 3:
            corr_block_avx512(out, in, w, g, in_off, out_off, m, ky0, ky1, o0, 3, masked);
            break;
        case 4:
            corr_block_avx512(out, in, w, g, in_off, out_off, m, ky0, ky1, o0, 4, masked);
            break;
        case 5:
            corr_block_avx512(out, in, w, g, in_off, out_off, m, ky0, ky1, o0, 5, masked);
            break;
        default:
            corr_block_avx512(out, in, w, g, in_off, out_off, m, ky0, ky1, o0, 6, masked);
            break;
        }
    }
}

/* in may be read up to in + avail. */
__attribute__((target("avx512f"))) static void corr_avx512(float *out, const float *in,
                                                           size_t avail, const float *w,
                                                           const corr_geom *g)
{
    const size_t nslots = g->ns * g->ho * slots_per_row(g->wo, X512_VL);
    const __mmask16 m = g->wo < X512_VL ? (__mmask16)((1u << g->wo) - 1) : (__mmask16)0xFFFF;
    slot_cursor cur = slot_at(g, slots_per_row(g->wo, X512_VL), 0);
    for (size_t s = 0; s * X512_SLOTS < nslots; s++) {
        size_t in_off[X512_SLOTS], out_off[X512_SLOTS], ky0, ky1;
        size_t reach = corr_slots(g, X512_VL, s, X512_SLOTS, in_off, out_off, &ky0, &ky1, &cur);
        if (reach <= avail)
            corr_channels_avx512(out, in, w, g, in_off, out_off, m, ky0, ky1, 0);
        else
            corr_channels_avx512(out, in, w, g, in_off, out_off, m, ky0, ky1, 1);
    }
}

/* --- AVX2 + FMA ------------------------------------------------------------ */

/* 16 registers: a correlation block is 2 slots times up to 6 channels (12
 * accumulators). */
enum { X256_SLOTS = 2, X256_OCS = 6 };

__attribute__((target("avx2,fma"), always_inline)) static inline void
corr_block_avx2(float *out, const float *in, const float *w, const corr_geom *g,
                const size_t *in_off, const size_t *out_off, __m256i m, size_t ky0,
                size_t ky1, size_t o0, const int nob, const int masked)
{
    const size_t taps = g->kh * g->kw, ct = g->ci * taps, plane = g->hi * g->wi;
    const size_t oplane = g->ho * g->wo;
    __m256 acc[X256_OCS][X256_SLOTS];

#pragma GCC unroll 8
    for (int b = 0; b < nob; b++)
#pragma GCC unroll 8
        for (int j = 0; j < X256_SLOTS; j++)
            acc[b][j] = _mm256_setzero_ps();
    for (size_t c = 0; c < g->ci; c++) {
        for (size_t ky = ky0; ky < ky1; ky++) {
            const float *ir = in + c * plane + ky * g->wi;
            const float *wr = w + o0 * ct + c * taps + ky * g->kw;
            for (size_t kx = 0; kx < g->kw; kx++) {
                __m256 x[X256_SLOTS];
#pragma GCC unroll 8
                for (int j = 0; j < X256_SLOTS; j++)
                    x[j] = load_avx2(ir + in_off[j] + kx, m, masked);
#pragma GCC unroll 8
                for (int b = 0; b < nob; b++) {
                    __m256 wv = _mm256_broadcast_ss(wr + (size_t)b * ct + kx);
#pragma GCC unroll 8
                    for (int j = 0; j < X256_SLOTS; j++)
                        acc[b][j] = _mm256_fmadd_ps(wv, x[j], acc[b][j]);
                }
            }
        }
    }
    /* A masked store costs several plain ones on AMD's AVX2 (unlike the
     * AVX-512 one); slots of rows at least a vector wide are whole. */
    if (g->wo >= X256_VL) {
#pragma GCC unroll 8
        for (int b = 0; b < nob; b++)
#pragma GCC unroll 8
            for (int j = 0; j < X256_SLOTS; j++)
                _mm256_storeu_ps(out + (o0 + (size_t)b) * oplane + out_off[j], acc[b][j]);
        return;
    }
#pragma GCC unroll 8
    for (int b = 0; b < nob; b++)
#pragma GCC unroll 8
        for (int j = 0; j < X256_SLOTS; j++)
            _mm256_maskstore_ps(out + (o0 + (size_t)b) * oplane + out_off[j], m, acc[b][j]);
}

__attribute__((target("avx2,fma"), always_inline)) static inline void
corr_channels_avx2(float *out, const float *in, const float *w, const corr_geom *g,
                   const size_t *in_off, const size_t *out_off, __m256i m, size_t ky0,
                   size_t ky1, const int masked)
{
    const size_t nblk = even_blocks(g->co, X256_OCS);
    for (size_t b = 0; b < nblk; b++) {
        size_t o0, nob;
        even_block(g->co, X256_OCS, b, &o0, &nob);
        switch (nob) {
        case 1:
            corr_block_avx2(out, in, w, g, in_off, out_off, m, ky0, ky1, o0, 1, masked);
            break;
        case 2:
            corr_block_avx2(out, in, w, g, in_off, out_off, m, ky0, ky1, o0, 2, masked);
            break;
        case 3:
            corr_block_avx2(out, in, w, g, in_off, out_off, m, ky0, ky1, o0, 3, masked);
            break;
        case 4:
            corr_block_avx2(out, in, w, g, in_off, out_off, m, ky0, ky1, o0, 4, masked);
            break;
        case 5:
            corr_block_avx2(out, in, w, g, in_off, out_off, m, ky0, ky1, o0, 5, masked);
            break;
        default:
            corr_block_avx2(out, in, w, g, in_off, out_off, m, ky0, ky1, o0, 6, masked);
            break;
        }
    }
}

__attribute__((target("avx2,fma"))) static void corr_avx2(float *out, const float *in,
                                                          size_t avail, const float *w,
                                                          const corr_geom *g)
{
    const size_t nslots = g->ns * g->ho * slots_per_row(g->wo, X256_VL);
    const __m256i m = sl__mask_avx2(0, g->wo < X256_VL ? g->wo : X256_VL);
    slot_cursor cur = slot_at(g, slots_per_row(g->wo, X256_VL), 0);
    for (size_t s = 0; s * X256_SLOTS < nslots; s++) {
        size_t in_off[X256_SLOTS], out_off[X256_SLOTS], ky0, ky1;
        size_t reach = corr_slots(g, X256_VL, s, X256_SLOTS, in_off, out_off, &ky0, &ky1, &cur);
        if (reach <= avail)
            corr_channels_avx2(out, in, w, g, in_off, out_off, m, ky0, ky1, 0);
        else
            corr_channels_avx2(out, in, w, g, in_off, out_off, m, ky0, ky1, 1);
    }
}
#endif /* SL_CONV2D_X86 */

/* --- path choice ----------------------------------------------------------- */

static pthread_once_t paths_once = PTHREAD_ONCE_INIT;
static int path_ok[SL__CONV2D_PATH_COUNT];   /* written once, by find_paths */

static void find_paths(void)
{
    path_ok[SL__CONV2D_PATH_C] = 1;
#ifdef SL_CONV2D_X86
    path_ok[SL__CONV2D_PATH_AVX2] = sl__cpu_level_get() >= SL__CPU_AVX2;
    path_ok[SL__CONV2D_PATH_AVX512] = sl__cpu_level_get() >= SL__CPU_AVX512;
#endif
}

int sl__conv2d_path_supported(sl__conv2d_path p)
{
    pthread_once(&paths_once, find_paths);
    return p >= 0 && p < SL__CONV2D_PATH_COUNT && path_ok[p];
}

sl__conv2d_path sl__conv2d_best_path(void)
{
    if (sl__conv2d_path_supported(SL__CONV2D_PATH_AVX512))
        return SL__CONV2D_PATH_AVX512;
    if (sl__conv2d_path_supported(SL__CONV2D_PATH_AVX2))
        return SL__CONV2D_PATH_AVX2;
    return SL__CONV2D_PATH_C;
}

/* The correlation; in may be read up to in + avail. */
static void corr(sl__conv2d_path p, float *out, const float *in, size_t avail, const float *w,
                 const corr_geom *g)
{
    switch (p) {
#ifdef SL_CONV2D_X86
    case SL__CONV2D_PATH_AVX512:
        corr_avx512(out, in, avail, w, g);
        return;
    case SL__CONV2D_PATH_AVX2:
        corr_avx2(out, in, avail, w, g);
        return;
#endif
    default:
        (void)avail;
        corr_c(out, in, w, g);
        return;
    }
}

/* --- the kernels ------------------------------------------------------------- */

void sl__conv2d_direct_forward(sl__conv2d_path p, float *out, const float *in,
                               const float *weight, const sl__conv2d_dims *d, size_t n0,
                               size_t n1)
{
    const corr_geom g = {n1 - n0, 0,   d->c,  d->h,  d->w, d->oc,
                         d->kh,   d->kw, d->oh, d->ow, 0,    d->h};
    const size_t in_sz = d->c * d->h * d->w, out_sz = d->oc * d->oh * d->ow;
    SL_ASSERT(n0 <= n1 && n1 <= d->n && sl__conv2d_is_direct(d) && sl__conv2d_path_supported(p));
#ifdef SL_CONV2D_X86
    if (p == SL__CONV2D_PATH_AVX2 && sl__conv2d_lanes_fits(d)) {
        if (n0 < n1)
            sl__conv2d_lanes_forward_avx2(out, in, weight, d, n0, n1);
        return;
    }
#endif
    /* all the range's samples at once: slot blocks run across samples, so
     * only the range's very last block can overlap */
    if (n0 < n1)
        corr(p, out + n0 * out_sz, in + n0 * in_sz, (d->n - n0) * in_sz, weight, &g);
}

size_t sl__conv2d_direct_scratch_size(const sl__conv2d_dims *d)
{
    /* (GROUP, OC, OH + 2KH - 2, OW + 2KW - 2), then (C, OC, KH, KW) */
    return SL__CONV2D_GROUP * d->oc * (d->h + d->kh - 1) * (d->w + d->kw - 1) +
           d->oc * d->c * d->kh * d->kw;
}

void sl__conv2d_direct_backward_input(sl__conv2d_path p, float *din, float *scratch,
                                      const float *dout, const float *weight,
                                      const sl__conv2d_dims *d, size_t n0, size_t n1)
{
    const size_t hp = d->h + d->kh - 1, wp = d->w + d->kw - 1;   /* padded dout plane */
    const size_t taps = d->kh * d->kw, pad_sz = d->oc * hp * wp;
    const size_t in_sz = d->c * d->h * d->w, out_sz = d->oc * d->oh * d->ow;
    /* the flipped weights after the padded samples: whole-vector loads that
     * run past the padded planes read them, not past the scratch */
    float *pad = scratch;                                  /* (GROUP, OC, HP, WP) */
    float *flip = scratch + SL__CONV2D_GROUP * pad_sz;     /* (C, OC, KH, KW) */
    SL_ASSERT(n0 <= n1 && n1 <= d->n && sl__conv2d_is_direct(d) && sl__conv2d_path_supported(p));
#ifdef SL_CONV2D_X86
    if (p == SL__CONV2D_PATH_AVX2 && sl__conv2d_dx_lanes_fits(d)) {
        if (n0 < n1)
            sl__conv2d_dx_lanes_avx2(din, scratch, dout, weight, d, n0, n1);
        return;
    }
#endif

    for (size_t c = 0; c < d->c; c++)
        for (size_t oc = 0; oc < d->oc; oc++)
            for (size_t t = 0; t < taps; t++)
                flip[(c * d->oc + oc) * taps + t] = weight[(oc * d->c + c) * taps + taps - 1 - t];
    /* the borders stay zero: each group rewrites only the insides */
    memset(pad, 0, SL__CONV2D_GROUP * pad_sz * sizeof *pad);
    for (size_t n = n0; n < n1; n += SL__CONV2D_GROUP) {
        const size_t ns = n1 - n < SL__CONV2D_GROUP ? n1 - n : SL__CONV2D_GROUP;
        const corr_geom g = {ns,    1,     d->oc, hp,        wp,
                             d->c,  d->kh, d->kw, d->h,      d->w,
                             d->kh - 1, d->kh - 1 + d->oh};
        for (size_t s = 0; s < ns; s++)
            for (size_t oc = 0; oc < d->oc; oc++)
                for (size_t y = 0; y < d->oh; y++)
                    memcpy(pad + s * pad_sz + (oc * hp + d->kh - 1 + y) * wp + d->kw - 1,
                           dout + (n + s) * out_sz + (oc * d->oh + y) * d->ow,
                           d->ow * sizeof *pad);
        corr(p, din + n * in_sz, pad, sl__conv2d_direct_scratch_size(d), flip, &g);
    }
}

