/* resize_plan.c: OpenCV's fixed-point plan of a uint8 bilinear resize
 * (resize_impl.h): per output column its two source offsets and 11-bit
 * weights, per output row its two rows and weights, and the SSSE3 gather
 * blocks (or, for RGB shrinks, how many pixels the pixel pass takes); for a whole image (the Resize op) or for positions given per
 * column and row (Decode fused with a crop, decode_fused.c). The kernels
 * that follow a plan are in resize_u8.c. */
#include "ops/vision/resize_impl.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define RESIZE_COEF_SCALE 2048 /* OpenCV's INTER_RESIZE_COEF_SCALE: 11 bits */

/* OpenCV's source index and fraction for destination index d: the
 * coordinate is rounded to float before its floor is taken, as cv::resize
 * does; clamp selects the x-axis treatment (see the top of the file). */
static void fixed_coord(int64_t d, double scale, int64_t in, int clamp, int64_t *s0,
                        float *frac)
{
    float f = (float)(((double)d + 0.5) * scale - 0.5);
    float fl = floorf(f);
    int64_t s = (int64_t)fl;
    f -= fl;
    if (clamp && s < 0) {
        s = 0;
        f = 0.0f;
    }
    if (clamp && s >= in - 1) {
        s = in - 1;
        f = 0.0f;
    }
    *s0 = s;
    *frac = f;
}

/* A weight in 11-bit fixed point, rounded half to even as cvRound does. */
static int32_t fixed_weight(float w)
{
    return (int32_t)lrintf(w * (float)RESIZE_COEF_SCALE);
}

/* The output pixels, a multiple of 8 from the row's start, that the RGB
 * pixel pass can take: each one's pair is (ofs0, ofs0 + 3), or its right
 * weight is 0, and the 8 bytes from ofs0 lie inside the source row. */
static size_t plan_rgb_pixels(const sl__resize_plan *p, size_t out_w)
{
    size_t in_row = (size_t)p->in_w * (size_t)p->c, x = 0;
    if (p->c != 3)
        return 0;
    while (x < out_w && p->ofs0[x] + 8 <= in_row &&
           (p->ofs1[x] == p->ofs0[x] + 3 || p->a1[x] == 0))
        x++;
    return x / 8 * 8;
}

/* Fills the SSSE3 block tables of p from its per-column tables. */
static void plan_gather(sl__resize_plan *p, size_t out_w)
{
    size_t c = (size_t)p->c, in_row = (size_t)p->in_w * c;
    for (size_t j = 0; j < 8 * p->nblk; j++) {
        p->blk_w[2 * j] = (int16_t)p->a0[j / c];
        p->blk_w[2 * j + 1] = (int16_t)p->a1[j / c];
    }
    /* a load of 16 bytes must stay inside the source row */
    p->gather_ok = in_row >= 16;
    for (size_t b = 0; b < p->nblk && p->gather_ok; b++) {
        size_t lo = SIZE_MAX, hi = 0, base;
        /* with c > 1 the offsets are not monotonic within a block */
        for (size_t j = 8 * b; j < 8 * b + 8; j++) {
            size_t o0 = p->ofs0[j / c] + j % c, o1 = p->ofs1[j / c] + j % c;
            lo = o0 < lo ? o0 : lo;
            hi = o1 > hi ? o1 : hi;
        }
        base = lo + 16 <= in_row ? lo : in_row - 16;
        if (hi - base >= 16) {
            p->gather_ok = 0;
            break;
        }
        p->blk_base[b] = base;
        for (size_t e = 0; e < 8; e++) {
            size_t j = 8 * b + e, x = j / c, k = j % c;
            uint8_t *m = p->blk_mask + 32 * b + 4 * e;
            /* pshufb writes 0 where the mask byte has its top bit set: each
             * source byte becomes the low byte of a zero-extended int16 */
            m[0] = (uint8_t)(p->ofs0[x] + k - base);
            m[1] = 0x80;
            m[2] = (uint8_t)(p->ofs1[x] + k - base);
            m[3] = 0x80;
        }
    }
    p->rgb_pix = p->gather_ok ? 0 : plan_rgb_pixels(p, out_w);
}

/* A plan's block with its arrays placed, for out_h x out_w outputs. */
static sl__resize_plan *plan_alloc(int64_t in_h, int64_t in_w, int64_t c, int64_t out_h,
                                   int64_t out_w)
{
    size_t ow = (size_t)out_w, oh = (size_t)out_h;
    size_t nblk = ow * (size_t)c / 8;
    size_t size = sizeof(sl__resize_plan) + ow * (2 * sizeof(size_t) + 2 * sizeof(int32_t)) +
                  oh * (2 * sizeof(int64_t) + 2 * sizeof(int16_t)) +
                  nblk * (sizeof(size_t) + 16 * sizeof(int16_t) + 32);
    sl__resize_plan *p = malloc(size);
    if (!p)
        return NULL;
    p->in_h = in_h;
    p->in_w = in_w;
    p->c = c;
    /* widest members first, so every array stays aligned */
    p->ofs0 = (size_t *)(p + 1);
    p->ofs1 = p->ofs0 + ow;
    p->row0 = (int64_t *)(p->ofs1 + ow);
    p->row1 = p->row0 + oh;
    p->blk_base = (size_t *)(p->row1 + oh);
    p->a0 = (int32_t *)(p->blk_base + nblk);
    p->a1 = p->a0 + ow;
    p->blk_w = (int16_t *)(p->a1 + ow);
    p->b0 = p->blk_w + 16 * nblk;
    p->b1 = p->b0 + oh;
    p->blk_mask = (uint8_t *)(p->b1 + oh);
    p->nblk = nblk;
    return p;
}

/* The rows every output row reads, and whether they are all of them. */
static void plan_rows(sl__resize_plan *p, int64_t out_h)
{
    p->row_lo = p->row0[0];
    p->row_hi = p->row1[out_h - 1];
    p->dense = 1;
    for (int64_t y = 0; y + 1 < out_h; y++)
        if (p->row0[y + 1] > p->row1[y] + 1)
            p->dense = 0;
}

sl__resize_plan *sl__resize_plan_new(int64_t in_h, int64_t in_w, int64_t c, int64_t out_h,
                                     int64_t out_w)
{
    double xscale = 1.0 / ((double)out_w / (double)in_w);
    double yscale = 1.0 / ((double)out_h / (double)in_h);
    sl__resize_plan *p = plan_alloc(in_h, in_w, c, out_h, out_w);
    if (!p)
        return NULL;
    for (int64_t x = 0; x < out_w; x++) {
        int64_t s0;
        float f;
        fixed_coord(x, xscale, in_w, 1, &s0, &f);
        p->ofs0[x] = (size_t)(s0 * c);
        p->ofs1[x] = (size_t)((s0 + 1 < in_w ? s0 + 1 : s0) * c);
        p->a0[x] = fixed_weight(1.0f - f);
        p->a1[x] = fixed_weight(f);
    }
    for (int64_t y = 0; y < out_h; y++) {
        int64_t sy;
        float f;
        fixed_coord(y, yscale, in_h, 0, &sy, &f);
        /* along y the rows, not the weights, are clamped into the image */
        p->row0[y] = sy < 0 ? 0 : sy > in_h - 1 ? in_h - 1 : sy;
        p->row1[y] = sy + 1 < 0 ? 0 : sy + 1 > in_h - 1 ? in_h - 1 : sy + 1;
        p->b0[y] = (int16_t)fixed_weight(1.0f - f);
        p->b1[y] = (int16_t)fixed_weight(f);
    }
    plan_rows(p, out_h);
    plan_gather(p, (size_t)out_w);
    return p;
}

sl__resize_plan *sl__resize_plan_at(int64_t in_h, int64_t in_w, int64_t c, int64_t out_h,
                                    int64_t out_w, const double *ys, const double *xs)
{
    sl__resize_plan *p = plan_alloc(in_h, in_w, c, out_h, out_w);
    if (!p)
        return NULL;
    for (int64_t x = 0; x < out_w; x++) {
        int64_t s0 = (int64_t)xs[x];
        float f = (float)(xs[x] - (double)s0);
        p->ofs0[x] = (size_t)(s0 * c);
        p->ofs1[x] = (size_t)((s0 + 1 < in_w ? s0 + 1 : s0) * c);
        p->a0[x] = fixed_weight(1.0f - f);
        p->a1[x] = fixed_weight(f);
    }
    for (int64_t y = 0; y < out_h; y++) {
        int64_t s0 = (int64_t)ys[y];
        float f = (float)(ys[y] - (double)s0);
        p->row0[y] = s0;
        p->row1[y] = s0 + 1 < in_h ? s0 + 1 : s0;
        p->b0[y] = (int16_t)fixed_weight(1.0f - f);
        p->b1[y] = (int16_t)fixed_weight(f);
    }
    plan_rows(p, out_h);
    plan_gather(p, (size_t)out_w);
    return p;
}

