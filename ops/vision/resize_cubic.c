/* resize_cubic.c: the bicubic kernel behind Resize's SL_INTER_CUBIC, as
 * OpenCV's cv::resize INTER_CUBIC computes it (what MindSpore's Resize with
 * Inter.BICUBIC returns on CPU).
 *
 * A destination index d maps to the source coordinate
 * f = (float)((d + 0.5) * in/out - 0.5), s = floor(f), t = f - s (float, as
 * OpenCV), and blends source pixels s - 1 .. s + 2 (clamped into the image:
 * the border is replicated) with Keys' cubic weights for t, a = -0.75. No
 * antialiasing: a downscale samples the same four taps.
 *
 * uint8 runs in OpenCV's fixed point, not in float: each weight is rounded
 * to a multiple of 1/2048 (int16), the horizontal pass sums into int32, the
 * vertical one into int64 and rounds with (v + 2^21) >> 22, then
 * saturates. That is OpenCV's scalar arithmetic, so the values are its
 * values; OpenCV's SIMD vertical pass rounds in float instead, which can
 * move a pixel by one level. float32 images use float weights and float
 * sums, in OpenCV's order.
 *
 * Plain and separable: for each output row the four source rows are
 * resampled horizontally, then blended. Simple over fast: nothing here is
 * on the default (bilinear) path. */
#include "ops/vision/resize_impl.h"
#include "sluice/status.h"

#include <math.h>
#include <stdlib.h>

#define CUBIC_COEF_SCALE 2048 /* weights in units of 1/2048, as OpenCV's */
#define CUBIC_SHIFT 22        /* two passes of 11 bits */

/* Keys' weights of the taps s - 1 .. s + 2 for t in [0, 1), a = -0.75,
 * in float as OpenCV's interpolateCubic (the last makes the sum 1). */
static void cubic_weights(float t, float w[4])
{
    const float a = -0.75f;
    w[0] = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a;
    w[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
    w[2] = ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1;
    w[3] = 1.f - w[0] - w[1] - w[2];
}

/* Source index s and weights of destination index d (see the top). */
static int64_t cubic_coord(int64_t d, double scale, float w[4])
{
    float f = (float)(((double)d + 0.5) * scale - 0.5);
    float s = floorf(f);
    cubic_weights(f - s, w);
    return (int64_t)s;
}

static int64_t clamp_index(int64_t i, int64_t n)
{
    return i < 0 ? 0 : i >= n ? n - 1 : i;
}

/* OpenCV's saturate_cast<short>(w * 2048): rounded half to even. */
static int16_t fixed_weight(float w)
{
    return (int16_t)lrintf(w * (float)CUBIC_COEF_SCALE);
}

/* Per output column: the four (clamped) source pixel offsets in elements
 * and the weights, both float and fixed point. */
typedef struct cubic_tab {
    size_t *ofs;  /* (n, 4) */
    float *wf;    /* (n, 4) */
    int16_t *wi;  /* (n, 4) */
} cubic_tab;

static void build_tab(cubic_tab *t, int64_t in, int64_t out, int64_t c)
{
    /* OpenCV derives the scale as 1 / (out / in); keep its rounding. */
    double scale = 1.0 / ((double)out / (double)in);
    for (int64_t d = 0; d < out; d++) {
        float w[4];
        int64_t s = cubic_coord(d, scale, w);
        for (int k = 0; k < 4; k++) {
            t->ofs[d * 4 + k] = (size_t)(clamp_index(s - 1 + k, in) * c);
            t->wf[d * 4 + k] = w[k];
            t->wi[d * 4 + k] = fixed_weight(w[k]);
        }
    }
}

/* One source row resampled horizontally: int32 sums of uint8 x int16
 * weights, or float sums, each summed tap 0 to 3 (OpenCV's order). */
static void hpass(void *dst, const void *src, int is_u8, const cubic_tab *t, int64_t out_w,
                  int64_t c)
{
    for (int64_t x = 0; x < out_w; x++) {
        const size_t *o = t->ofs + x * 4;
        for (int64_t k = 0; k < c; k++) {
            int32_t si = 0;
            float sf = 0;
            for (int j = 0; j < 4; j++) {
                if (is_u8)
                    si += ((const uint8_t *)src)[o[j] + (size_t)k] * t->wi[x * 4 + j];
                else
                    sf += ((const float *)src)[o[j] + (size_t)k] * t->wf[x * 4 + j];
            }
            if (is_u8)
                ((int32_t *)dst)[x * c + k] = si;
            else
                ((float *)dst)[x * c + k] = sf;
        }
    }
}

static uint8_t round_fixed(int64_t v)
{
    /* negative sums saturate to 0 before any shift of a negative number */
    if (v < 0)
        return 0;
    v = (v + (INT64_C(1) << (CUBIC_SHIFT - 1))) >> CUBIC_SHIFT;
    return v > 255 ? 255 : (uint8_t)v;
}

int sl__resize_cubic(void *dst, const void *src, int is_u8, int64_t in_h, int64_t in_w,
                     int64_t c, int64_t out_h, int64_t out_w)
{
    size_t row_n = (size_t)out_w * (size_t)c;
    size_t row_bytes = row_n * (is_u8 ? sizeof(int32_t) : sizeof(float));
    size_t ncol = (size_t)out_w * 4, nrow = (size_t)out_h * 4;
    size_t tab_bytes = (ncol + nrow) * (sizeof(size_t) + sizeof(float) + sizeof(int16_t));
    cubic_tab xt, yt;
    unsigned char *block, *rows[4];
    size_t src_row = (size_t)in_w * (size_t)c;

    /* float and int32 rows first, then the tables, each part aligned */
    block = malloc(4 * row_bytes + tab_bytes);
    if (!block)
        return SL_ENOMEM;
    for (int k = 0; k < 4; k++)
        rows[k] = block + (size_t)k * row_bytes;
    xt.ofs = (size_t *)(block + 4 * row_bytes);
    yt.ofs = xt.ofs + ncol;
    xt.wf = (float *)(yt.ofs + nrow);
    yt.wf = xt.wf + ncol;
    xt.wi = (int16_t *)(yt.wf + nrow);
    yt.wi = xt.wi + ncol;
    build_tab(&xt, in_w, out_w, c);
    build_tab(&yt, in_h, out_h, 1); /* offsets in rows */

    for (int64_t y = 0; y < out_h; y++) {
        const size_t *sy = yt.ofs + y * 4;
        size_t elem = is_u8 ? 1 : sizeof(float);
        for (int k = 0; k < 4; k++)
            hpass(rows[k], (const unsigned char *)src + sy[k] * src_row * elem, is_u8, &xt,
                  out_w, c);
        for (size_t i = 0; i < row_n; i++) {
            int64_t si = 0;
            float sf = 0;
            for (int k = 0; k < 4; k++) {
                if (is_u8)
                    si += (int64_t)((const int32_t *)rows[k])[i] * yt.wi[y * 4 + k];
                else
                    sf += yt.wf[y * 4 + k] * ((const float *)rows[k])[i];
            }
            if (is_u8)
                ((uint8_t *)dst)[(size_t)y * row_n + i] = round_fixed(si);
            else
                ((float *)dst)[(size_t)y * row_n + i] = sf;
        }
    }
    free(block);
    return SL_OK;
}
