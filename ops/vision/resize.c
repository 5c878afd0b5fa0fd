/* resize.c: the Resize op, (H, W, C) or (H, W) uint8/float32 images to a fixed
 * (height, width), bilinear or nearest, with OpenCV's pixel conventions.
 *
 * Bilinear follows cv::resize INTER_LINEAR: a destination pixel d maps to the
 * source coordinate s = (d + 0.5) * in/out - 0.5. Along x, s below 0 is
 * clamped to pixel 0 with weight 0, and s at or past the last pixel to the
 * last pixel. Along y OpenCV does not clamp the weight; it clamps the two
 * source rows into the image instead.
 *
 * uint8 images reproduce OpenCV's fixed-point arithmetic bit for bit (what
 * MindSpore's Resize returns): weights are rounded to 11 bits, a row is
 * resampled into integers scaled by 2048, and two rows are blended as
 * ((r0 >> 4) * b0 >> 16) + ((r1 >> 4) * b1 >> 16), rounded by (v + 2) >> 2.
 * This truncates where exact arithmetic would round, so a pixel can be one
 * below the exact bilinear value. float32 images use float weights.
 * Nearest follows INTER_NEAREST: s = floor(d * in/out), clamped to in - 1.
 *
 * The work is separable: each needed source row is resampled horizontally
 * once into a row buffer (two are kept, so a row shared by consecutive
 * output rows is not recomputed), then pairs of rows are blended vertically.
 * Index and weight tables are built once per call in a stack buffer, or in a
 * pool block for very wide outputs.
 *
 * The uint8 kernels have two paths (resize_impl.h): plain C, and SSSE3,
 * whose horizontal pass loads the 16 source bytes under eight outputs at
 * once and shuffles them into place (pshufb) instead of gathering one byte
 * at a time. Both do the same integer arithmetic, so they give the same
 * bytes. */
#include "core/cpu.h"
#include "ops/op_impl.h"
#include "ops/vision/resize_impl.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#if defined(__x86_64__)
#define SL_RESIZE_X86 1
#include <immintrin.h>
#endif

/* Outputs up to this wide (and rows up to this many elements) keep their
 * tables and row buffers on the stack (14 KiB); wider ones use a pool block. */
#define RESIZE_STACK_W 256
#define RESIZE_STACK_ROW 1024
#define RESIZE_MAX_SIDE INT32_MAX

typedef struct resize_plan resize_plan;

typedef struct resize_op {
    sl_op base;
    int64_t height;
    int64_t width;
    sl_interp interp;
    _Atomic(resize_plan *) plan; /* uint8 bilinear plan of the first input size */
} resize_op;

/* Horizontal resampling tables for bilinear: output column x blends the
 * source elements at ofs[x] and ofs[x] + step (offsets already multiplied by
 * C; step is C, or 0 for a one-pixel-wide source) with weights w0[x] and
 * w1[x]. */
typedef struct resize_xtab {
    size_t *ofs;  /* (out_w,) */
    float *w0;    /* (out_w,) */
    float *w1;    /* (out_w,) */
    size_t step;
} resize_xtab;

/* The uint8 bilinear plan for one input size, as OpenCV builds it: per
 * output column the two source offsets and the two weights scaled by 2048
 * and rounded; per output row the two (clamped) source rows and weights.
 * Built in one block; the op keeps the first one it builds, so a stream of
 * equally sized images (MNIST) builds it once. */
typedef struct resize_plan {
    int64_t in_h, in_w, c;
    size_t *ofs0;   /* (out_w,) */
    size_t *ofs1;   /* (out_w,) */
    int32_t *a0;    /* (out_w,) */
    int32_t *a1;    /* (out_w,) */
    int64_t *row0;  /* (out_h,) */
    int64_t *row1;  /* (out_h,) */
    int16_t *b0;    /* (out_h,) */
    int16_t *b1;    /* (out_h,) */
    /* For the SSSE3 path: a row's out_w * c elements in nblk blocks of 8
     * (the last few, fewer than 8, go one by one). Block b loads the 16
     * source bytes from blk_base[b] and shuffles them with blk_mask into
     * (left, right) int16 pairs, which meet the (a0, a1) pairs of blk_w in
     * one multiply-add. gather_ok is 0 when some block's pixels do not fit
     * in its 16 bytes (strong downscales, rows under 16 bytes); that plan
     * then runs the plain C pass. */
    size_t nblk;
    int gather_ok;
    /* the source rows output rows read: [row_lo, row_hi], every one of them
     * when dense (so resampling them all wastes nothing) */
    int64_t row_lo, row_hi;
    int dense;
    size_t *blk_base;   /* (nblk,) */
    int16_t *blk_w;     /* (nblk, 16) */
    uint8_t *blk_mask;  /* (nblk, 32) */
} resize_plan;

#define RESIZE_COEF_SCALE 2048 /* OpenCV's INTER_RESIZE_COEF_SCALE: 11 bits */

/* The uint8 path keeps its two int16 rows and one uint8 row
 * (u8_scratch_size) in the room of the two float rows. */
_Static_assert(2 * sizeof(int16_t) + 1 <= 2 * sizeof(float), "row scratch is shared");

static int resize_check(const char *name, int ndim, const int64_t *shape, sl_dtype dtype,
                        int64_t *h, int64_t *w, int64_t *c, sl__error *err)
{
    char buf[96];
    int rc = sl__image_dims(name, ndim, shape, dtype, h, w, c, err);
    if (rc != SL_OK)
        return rc;
    if (dtype != SL_UINT8 && dtype != SL_FLOAT32)
        return sl__errf(err, SL_ESHAPE, "%s: expected a uint8 or float32 image, got %s %s", name,
                        sl_dtype_name(dtype), sl_shape_str(buf, sizeof buf, ndim, shape));
    if (*h == 0 || *w == 0 || *c == 0)
        return sl__errf(err, SL_ESHAPE, "%s: cannot resize an empty image %s %s", name,
                        sl_dtype_name(dtype), sl_shape_str(buf, sizeof buf, ndim, shape));
    return SL_OK;
}

static int resize_infer(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                        sl__error *err)
{
    const resize_op *r = (const resize_op *)op;
    int64_t h, w, c;
    int rc = resize_check("resize", in->ndim, in->shape, in->dtype, &h, &w, &c, err);
    if (rc != SL_OK)
        return rc;
    *out = *in;
    out->shape[0] = r->height;
    out->shape[1] = r->width;
    return SL_OK;
}

/* Source index s0 and weight of its right/lower neighbour s0 + 1 for
 * destination index d, as OpenCV computes them for INTER_LINEAR. Where
 * OpenCV clamps to the last pixel with weight 0 we take the pixel before it
 * with weight 1: the same value (for finite pixels), and the neighbour is
 * always s0 + 1 (for in >= 2), which saves the kernels a second index. */
static void linear_coord(int64_t d, double scale, int64_t in, int64_t *s0, float *frac)
{
    double f = ((double)d + 0.5) * scale - 0.5;
    int64_t s;
    float a;
    /* floor() is a libm call without SSE4.1; below 0 OpenCV clamps anyway,
     * and from 0 up truncation is floor. */
    if (f < 0) {
        s = 0;
        a = 0.0f;
    } else {
        s = (int64_t)f;
        a = (float)(f - (double)s);
    }
    if (s >= in - 1) {
        s = in >= 2 ? in - 2 : 0;
        a = in >= 2 ? 1.0f : 0.0f;
    }
    *s0 = s;
    *frac = a;
}

static void build_xtab(resize_xtab *t, int64_t in_w, int64_t out_w, int64_t c)
{
    /* OpenCV derives the scale as 1 / (out / in); keep its rounding. */
    double scale = 1.0 / ((double)out_w / (double)in_w);
    t->step = in_w >= 2 ? (size_t)c : 0;
    for (int64_t x = 0; x < out_w; x++) {
        int64_t s0;
        float a;
        linear_coord(x, scale, in_w, &s0, &a);
        t->ofs[x] = (size_t)(s0 * c);
        t->w0[x] = 1.0f - a;
        t->w1[x] = a;
    }
}

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

/* Fills the SSSE3 block tables of p from its per-column tables. */
static void plan_gather(resize_plan *p)
{
    size_t c = (size_t)p->c, in_row = (size_t)p->in_w * c;
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
            p->blk_w[16 * b + 2 * e] = (int16_t)p->a0[x];
            p->blk_w[16 * b + 2 * e + 1] = (int16_t)p->a1[x];
        }
    }
}

/* A plan for (in_h, in_w, c) -> (out_h, out_w, c), or NULL without memory. */
static resize_plan *plan_new(int64_t in_h, int64_t in_w, int64_t c, int64_t out_h, int64_t out_w)
{
    size_t ow = (size_t)out_w, oh = (size_t)out_h;
    size_t nblk = ow * (size_t)c / 8;
    size_t size = sizeof(resize_plan) + ow * (2 * sizeof(size_t) + 2 * sizeof(int32_t)) +
                  oh * (2 * sizeof(int64_t) + 2 * sizeof(int16_t)) +
                  nblk * (sizeof(size_t) + 16 * sizeof(int16_t) + 32);
    double xscale = 1.0 / ((double)out_w / (double)in_w);
    double yscale = 1.0 / ((double)out_h / (double)in_h);
    resize_plan *p = malloc(size);
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
    p->row_lo = p->row0[0];
    p->row_hi = p->row1[out_h - 1];
    p->dense = 1;
    for (int64_t y = 0; y + 1 < out_h; y++)
        if (p->row0[y + 1] > p->row1[y] + 1)
            p->dense = 0;
    plan_gather(p);
    return p;
}

/* The op's cached plan when it fits this input; otherwise a new one, which
 * becomes the cached one if there is none yet (*owned tells the caller to
 * free it after use). The cached plan is never replaced, so readers need
 * no lock: it is published once and freed with the op. */
static resize_plan *plan_get(resize_op *r, int64_t in_h, int64_t in_w, int64_t c, int *owned)
{
    resize_plan *p = atomic_load_explicit(&r->plan, memory_order_acquire);
    resize_plan *expected = NULL;
    *owned = 0;
    if (p && p->in_h == in_h && p->in_w == in_w && p->c == c)
        return p;
    p = plan_new(in_h, in_w, c, r->height, r->width);
    if (!p)
        return NULL;
    if (!atomic_compare_exchange_strong_explicit(&r->plan, &expected, p, memory_order_acq_rel,
                                                 memory_order_acquire))
        *owned = 1;
    return p;
}

/* Per-call scratch for typical sizes, on the stack. */
typedef struct resize_stack {
    size_t ofs[RESIZE_STACK_W];
    float w0[RESIZE_STACK_W];
    float w1[RESIZE_STACK_W];
    float rows[2 * RESIZE_STACK_ROW];
} resize_stack;

/* One output element of the horizontal pass: source element o0 and o1
 * blended in 11-bit fixed point, shifted right by 4 as OpenCV does before
 * blending rows (at most 255 * 2048 >> 4 = 32640: it fits in 16 bits). */
static inline int16_t hpixel_u8(const uint8_t *src, size_t o0, size_t o1, int32_t a0, int32_t a1)
{
    return (int16_t)((src[o0] * a0 + src[o1] * a1) >> 4);
}

/* Resamples one uint8 source row (in_w, c) into row (out_w * c), elements
 * [from, out_w * c). */
static void hresize_u8(int16_t *restrict row, const uint8_t *restrict src,
                       const resize_plan *t, size_t out_w, size_t c, size_t from)
{
    if (c == 1) {
        for (size_t x = from; x < out_w; x++)
            row[x] = hpixel_u8(src, t->ofs0[x], t->ofs1[x], t->a0[x], t->a1[x]);
        return;
    }
    for (size_t j = from; j < out_w * c; j++) {
        size_t x = j / c, k = j % c;
        row[j] = hpixel_u8(src, t->ofs0[x] + k, t->ofs1[x] + k, t->a0[x], t->a1[x]);
    }
}

#ifdef SL_RESIZE_X86
/* Unaligned vector loads (through void, so no cast raises the alignment). */
__attribute__((target("ssse3"))) static inline __m128i load128(const void *p)
{
    return _mm_loadu_si128((const __m128i *)p);
}

__attribute__((target("avx2"))) static inline __m256i load256(const void *p)
{
    return _mm256_loadu_si256((const __m256i *)p);
}

/* hresize_u8 with SSSE3, for a plan whose gather_ok is set: per block of 8
 * elements one 16-byte load, two shuffles into (left, right) int16 pairs,
 * two multiply-adds with the (a0, a1) pairs (exact in 32 bits), the shift
 * by 4, and a pack to int16 that cannot saturate (see hpixel_u8). */
__attribute__((target("ssse3"))) static void hresize_u8_ssse3(int16_t *restrict row,
                                                             const uint8_t *restrict src,
                                                             const resize_plan *t, size_t out_w,
                                                             size_t c)
{
    for (size_t b = 0; b < t->nblk; b++) {
        __m128i s = load128(src + t->blk_base[b]);
        const uint8_t *m = t->blk_mask + 32 * b;
        const int16_t *w = t->blk_w + 16 * b;
        __m128i lo = _mm_shuffle_epi8(s, load128(m));
        __m128i hi = _mm_shuffle_epi8(s, load128(m + 16));
        lo = _mm_madd_epi16(lo, load128(w));
        hi = _mm_madd_epi16(hi, load128(w + 8));
        lo = _mm_srai_epi32(lo, 4);
        hi = _mm_srai_epi32(hi, 4);
        _mm_storeu_si128((__m128i *)(void *)(row + 8 * b), _mm_packs_epi32(lo, hi));
    }
    if (8 * t->nblk < out_w * c)
        hresize_u8(row, src, t, out_w, c, 8 * t->nblk);
}
#endif

static void hresize_f32(float *restrict row, const float *restrict src, const resize_xtab *t,
                        size_t out_w, size_t c)
{
    size_t step = t->step;
    if (c == 1) {
        for (size_t x = 0; x < out_w; x++) {
            const float *p = src + t->ofs[x];
            row[x] = p[0] * t->w0[x] + p[step] * t->w1[x];
        }
        return;
    }
    for (size_t x = 0; x < out_w; x++) {
        const float *p = src + t->ofs[x];
        float w0 = t->w0[x], w1 = t->w1[x];
        for (size_t k = 0; k < c; k++)
            row[x * c + k] = p[k] * w0 + p[step + k] * w1;
    }
}

/* One output pixel of the vertical pass, with OpenCV's truncations: each
 * product keeps its high 16 bits (the multiply-high of two int16), the sum
 * (at most 2 * 1020 + 2: it stays in 16 bits) is rounded by 2 bits. */
static inline uint8_t vpixel_u8(int16_t r0, int16_t r1, int16_t b0, int16_t b1)
{
    int16_t hi0 = (int16_t)(((int32_t)r0 * b0) >> 16);
    int16_t hi1 = (int16_t)(((int32_t)r1 * b1) >> 16);
    int16_t v = (int16_t)((int16_t)(hi0 + hi1 + 2) >> 2);
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* Blends two resampled rows into n output pixels (vpixel_u8). Written in
 * 16-bit types so GCC vectorises it with SSE2's multiply-high, as OpenCV's
 * own kernel does; blocks of a fixed 16 let GCC vectorise at -O2 (its cheap
 * cost model skips loops whose trip count is unknown). Kept out of line:
 * inlined into its caller, GCC 12 no longer sees the 16-bit multiply-high
 * and widens to 32-bit products. */
__attribute__((noinline)) static void vresize_u8(uint8_t *restrict dst, const int16_t *restrict r0,
                       const int16_t *restrict r1, int16_t b0, int16_t b1, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (size_t j = i; j < i + 16; j++) {
            int16_t hi0 = (int16_t)(((int32_t)r0[j] * b0) >> 16);
            int16_t hi1 = (int16_t)(((int32_t)r1[j] * b1) >> 16);
            int16_t v = (int16_t)((int16_t)(hi0 + hi1 + 2) >> 2);
            dst[j] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
    }
    for (; i < n; i++)
        dst[i] = vpixel_u8(r0[i], r1[i], b0, b1);
}

/* dst[i] = src[i] through the chain, for n elements. Each step runs over a
 * block of 16 before the next, as separate Rescale ops would over the whole
 * image: the same float32 operations, and GCC vectorises each block. */
static void rescale_chain_u8(float *restrict dst, const uint8_t *restrict src, size_t n,
                             const sl__rescale_chain *ch)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (size_t j = i; j < i + 16; j++)
            dst[j] = (float)src[j] * ch->scale[0] + ch->shift[0];
        for (size_t k = 1; k < ch->n; k++)
            for (size_t j = i; j < i + 16; j++)
                dst[j] = dst[j] * ch->scale[k] + ch->shift[k];
    }
    for (; i < n; i++) {
        float v = (float)src[i] * ch->scale[0] + ch->shift[0];
        for (size_t k = 1; k < ch->n; k++)
            v = v * ch->scale[k] + ch->shift[k];
        dst[i] = v;
    }
}

#ifdef SL_RESIZE_X86
/* The vertical pass straight into float32 through chain: vresize_u8's
 * arithmetic on 8 pixels at a time, the clamp to [0, 255] by a saturating
 * pack, the exact conversion and the first step; then each further step in
 * its own pass over the row, so its factors stay in registers. Each step is
 * one multiply and one add (never fused into an FMA, as in the scalar
 * code). */
__attribute__((target("ssse3"))) static void vresize_rescale_ssse3(float *restrict dst,
                                                                  const int16_t *restrict r0,
                                                                  const int16_t *restrict r1,
                                                                  int16_t b0, int16_t b1, size_t n,
                                                                  const sl__rescale_chain *ch)
{
    const __m128i w0 = _mm_set1_epi16(b0), w1 = _mm_set1_epi16(b1);
    const __m128i two = _mm_set1_epi16(2), zero = _mm_setzero_si128();
    const __m128 s0 = _mm_set1_ps(ch->scale[0]), t0 = _mm_set1_ps(ch->shift[0]);
    size_t i = 0, whole = n / 8 * 8;
    for (; i < whole; i += 8) {
        __m128i h0 = _mm_mulhi_epi16(load128(r0 + i), w0);
        __m128i h1 = _mm_mulhi_epi16(load128(r1 + i), w1);
        __m128i v = _mm_srai_epi16(_mm_add_epi16(_mm_add_epi16(h0, h1), two), 2);
        __m128 lo, hi;
        v = _mm_unpacklo_epi8(_mm_packus_epi16(v, v), zero);
        lo = _mm_cvtepi32_ps(_mm_unpacklo_epi16(v, zero));
        hi = _mm_cvtepi32_ps(_mm_unpackhi_epi16(v, zero));
        _mm_storeu_ps(dst + i, _mm_add_ps(_mm_mul_ps(lo, s0), t0));
        _mm_storeu_ps(dst + i + 4, _mm_add_ps(_mm_mul_ps(hi, s0), t0));
    }
    for (size_t k = 1; k < ch->n; k++) {
        const __m128 s = _mm_set1_ps(ch->scale[k]), t = _mm_set1_ps(ch->shift[k]);
        for (size_t j = 0; j < whole; j += 4)
            _mm_storeu_ps(dst + j, _mm_add_ps(_mm_mul_ps(_mm_loadu_ps(dst + j), s), t));
    }
    for (; i < n; i++) {
        float f = (float)vpixel_u8(r0[i], r1[i], b0, b1);
        for (size_t k = 0; k < ch->n; k++)
            f = f * ch->scale[k] + ch->shift[k];
        dst[i] = f;
    }
}
#endif

static void vresize_f32(float *restrict dst, const float *restrict r0,
                        const float *restrict r1, float b0, float b1, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (size_t j = i; j < i + 16; j++)
            dst[j] = r0[j] * b0 + r1[j] * b1;
    for (; i < n; i++)
        dst[i] = r0[i] * b0 + r1[i] * b1;
}

/* in (in_h, in_w, c) -> out (out_h, out_w, c), float32 bilinear; rows is
 * scratch for two resampled rows of out_w * c floats each. */
static void resize_bilinear_f32(sl_tensor *out, const sl_tensor *in, int64_t in_h, int64_t in_w,
                                int64_t out_h, int64_t out_w, int64_t c, const resize_xtab *t,
                                float *rows)
{
    size_t row_n = (size_t)out_w * (size_t)c;
    size_t in_row = (size_t)in_w * (size_t)c;
    double scale = 1.0 / ((double)out_h / (double)in_h);
    float *r0 = rows, *r1 = rows + row_n;
    int64_t k0 = -1, k1 = -1; /* the source rows r0 and r1 hold */

    for (int64_t y = 0; y < out_h; y++) {
        int64_t s0, s1;
        float b;
        const float *lower;
        linear_coord(y, scale, in_h, &s0, &b);
        s1 = in_h >= 2 ? s0 + 1 : s0;
        if (k0 != s0) {
            if (k1 == s0) {
                float *tmp = r0;
                r0 = r1;
                r1 = tmp;
                k1 = k0;
                k0 = s0;
            } else {
                hresize_f32(r0, (const float *)in->data + (size_t)s0 * in_row, t,
                            (size_t)out_w, (size_t)c);
                k0 = s0;
            }
        }
        if (s1 == s0) {
            lower = r0; /* a one-row source */
        } else {
            if (k1 != s1) {
                hresize_f32(r1, (const float *)in->data + (size_t)s1 * in_row, t,
                            (size_t)out_w, (size_t)c);
                k1 = s1;
            }
            lower = r1;
        }
        vresize_f32((float *)out->data + (size_t)y * row_n, r0, lower, 1.0f - b, b, row_n);
    }
}

#ifdef SL_RESIZE_X86
/* The whole image in two passes, for a plan that gathers and is dense:
 * every source row in [row_lo, row_hi] is resampled once into rows
 * ((row_hi - row_lo + 1), out_w * c), then all output rows are blended
 * (and converted through chain, if any) without a call per row. For small
 * images (MNIST) the calls and set-up per row cost as much as the work.
 * The arithmetic is that of hresize_u8_ssse3, vpixel_u8 and the chain; the
 * chain's later steps run as passes over the whole float image. */
__attribute__((target("ssse3"))) static void resize_image_ssse3(void *dst, const uint8_t *src,
                                                               const resize_plan *p,
                                                               int64_t out_h, int64_t out_w,
                                                               const sl__rescale_chain *chain,
                                                               int16_t *rows)
{
    size_t c = (size_t)p->c, row_n = (size_t)out_w * c, in_row = (size_t)p->in_w * c;
    size_t whole = row_n / 8 * 8, total = (size_t)out_h * row_n;
    const __m128i two = _mm_set1_epi16(2), zero = _mm_setzero_si128();
    __m128 s0 = _mm_setzero_ps(), t0 = _mm_setzero_ps();
    float *dst_f = dst;
    uint8_t *dst_u8 = dst;

    for (int64_t s = p->row_lo; s <= p->row_hi; s++)
        hresize_u8_ssse3(rows + (size_t)(s - p->row_lo) * row_n, src + (size_t)s * in_row, p,
                         (size_t)out_w, c);
    if (chain) {
        s0 = _mm_set1_ps(chain->scale[0]);
        t0 = _mm_set1_ps(chain->shift[0]);
    }
    for (int64_t y = 0; y < out_h; y++) {
        const int16_t *r0 = rows + (size_t)(p->row0[y] - p->row_lo) * row_n;
        const int16_t *r1 = rows + (size_t)(p->row1[y] - p->row_lo) * row_n;
        const __m128i w0 = _mm_set1_epi16(p->b0[y]), w1 = _mm_set1_epi16(p->b1[y]);
        size_t o = (size_t)y * row_n, i = 0;
        for (; i < whole; i += 8) {
            __m128i h0 = _mm_mulhi_epi16(load128(r0 + i), w0);
            __m128i h1 = _mm_mulhi_epi16(load128(r1 + i), w1);
            __m128i v = _mm_srai_epi16(_mm_add_epi16(_mm_add_epi16(h0, h1), two), 2);
            v = _mm_packus_epi16(v, v); /* the clamp to [0, 255] */
            if (chain) {
                __m128 lo, hi;
                v = _mm_unpacklo_epi8(v, zero);
                lo = _mm_cvtepi32_ps(_mm_unpacklo_epi16(v, zero));
                hi = _mm_cvtepi32_ps(_mm_unpackhi_epi16(v, zero));
                _mm_storeu_ps(dst_f + o + i, _mm_add_ps(_mm_mul_ps(lo, s0), t0));
                _mm_storeu_ps(dst_f + o + i + 4, _mm_add_ps(_mm_mul_ps(hi, s0), t0));
            } else {
                _mm_storel_epi64((__m128i *)(void *)(dst_u8 + o + i), v);
            }
        }
        for (; i < row_n; i++) {
            uint8_t v = vpixel_u8(r0[i], r1[i], p->b0[y], p->b1[y]);
            if (chain)
                dst_f[o + i] = (float)v * chain->scale[0] + chain->shift[0];
            else
                dst_u8[o + i] = v;
        }
    }
    for (size_t k = 1; chain && k < chain->n; k++) {
        const __m128 sk = _mm_set1_ps(chain->scale[k]), tk = _mm_set1_ps(chain->shift[k]);
        size_t i = 0;
        for (; i + 4 <= total; i += 4)
            _mm_storeu_ps(dst_f + i, _mm_add_ps(_mm_mul_ps(_mm_loadu_ps(dst_f + i), sk), tk));
        for (; i < total; i++)
            dst_f[i] = dst_f[i] * chain->scale[k] + chain->shift[k];
    }
}
#endif

#ifdef SL_RESIZE_X86
/* resize_image_ssse3 with AVX2, 16 elements at a time. Horizontally a
 * block's 16 source bytes are loaded into both halves, so one in-lane
 * shuffle with its 32-byte mask (elements 0-3 | 4-7, the plan's layout)
 * and one multiply-add give its 8 sums; two blocks are packed together and
 * put back in order by a 64-bit permute. Vertically the multiply-highs run
 * on 16 int16, the clamp is a max and a min, and the floats go 8 at a time.
 * Tails (an odd block, a row's last elements) take the narrower code. */
__attribute__((target("avx2"))) static void resize_image_avx2(void *dst, const uint8_t *src,
                                                             const resize_plan *p,
                                                             int64_t out_h, int64_t out_w,
                                                             const sl__rescale_chain *chain,
                                                             int16_t *rows)
{
    size_t c = (size_t)p->c, row_n = (size_t)out_w * c, in_row = (size_t)p->in_w * c;
    size_t whole = row_n / 16 * 16, pairs = p->nblk / 2, total = (size_t)out_h * row_n;
    const __m256i two = _mm256_set1_epi16(2), zero = _mm256_setzero_si256();
    const __m256i max = _mm256_set1_epi16(255);
    __m256 s0 = _mm256_setzero_ps(), t0 = _mm256_setzero_ps();
    float *dst_f = dst;
    uint8_t *dst_u8 = dst;

    for (int64_t s = p->row_lo; s <= p->row_hi; s++) {
        const uint8_t *in = src + (size_t)s * in_row;
        int16_t *row = rows + (size_t)(s - p->row_lo) * row_n;
        for (size_t q = 0; q < pairs; q++) {
            size_t b = 2 * q;
            __m256i a = _mm256_broadcastsi128_si256(
                load128(in + p->blk_base[b]));
            __m256i d = _mm256_broadcastsi128_si256(
                load128(in + p->blk_base[b + 1]));
            a = _mm256_shuffle_epi8(a, load256(p->blk_mask + 32 * b));
            d = _mm256_shuffle_epi8(d, load256(p->blk_mask + 32 * b + 32));
            a = _mm256_madd_epi16(a, load256(p->blk_w + 16 * b));
            d = _mm256_madd_epi16(d, load256(p->blk_w + 16 * b + 16));
            a = _mm256_srai_epi32(a, 4);
            d = _mm256_srai_epi32(d, 4);
            /* packs gives (b 0-3, b+1 0-3 | b 4-7, b+1 4-7); the permute
             * puts the quarters in order (b 0-3, b 4-7 | b+1 0-3, b+1 4-7) */
            _mm256_storeu_si256((__m256i *)(void *)(row + 8 * b),
                                _mm256_permute4x64_epi64(_mm256_packs_epi32(a, d), 0xD8));
        }
        if (2 * pairs < p->nblk) {
            size_t b = 2 * pairs;
            __m128i v = load128(in + p->blk_base[b]);
            __m128i lo = _mm_shuffle_epi8(v, load128(p->blk_mask + 32 * b));
            __m128i hi = _mm_shuffle_epi8(v, load128(p->blk_mask + 32 * b + 16));
            lo = _mm_srai_epi32(_mm_madd_epi16(lo, load128(p->blk_w + 16 * b)), 4);
            hi = _mm_srai_epi32(_mm_madd_epi16(hi, load128(p->blk_w + 16 * b + 8)), 4);
            _mm_storeu_si128((__m128i *)(void *)(row + 8 * b), _mm_packs_epi32(lo, hi));
        }
        if (8 * p->nblk < row_n)
            hresize_u8(row, in, p, (size_t)out_w, c, 8 * p->nblk);
    }
    if (chain) {
        s0 = _mm256_set1_ps(chain->scale[0]);
        t0 = _mm256_set1_ps(chain->shift[0]);
    }
    for (int64_t y = 0; y < out_h; y++) {
        const int16_t *r0 = rows + (size_t)(p->row0[y] - p->row_lo) * row_n;
        const int16_t *r1 = rows + (size_t)(p->row1[y] - p->row_lo) * row_n;
        const __m256i w0 = _mm256_set1_epi16(p->b0[y]), w1 = _mm256_set1_epi16(p->b1[y]);
        size_t o = (size_t)y * row_n, i = 0;
        for (; i < whole; i += 16) {
            __m256i h0 = _mm256_mulhi_epi16(load256(r0 + i), w0);
            __m256i h1 = _mm256_mulhi_epi16(load256(r1 + i), w1);
            __m256i v = _mm256_srai_epi16(_mm256_add_epi16(_mm256_add_epi16(h0, h1), two), 2);
            v = _mm256_min_epi16(_mm256_max_epi16(v, zero), max); /* the clamp to [0, 255] */
            if (chain) {
                __m256 lo = _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(v)));
                __m256 hi =
                    _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(v, 1)));
                _mm256_storeu_ps(dst_f + o + i, _mm256_add_ps(_mm256_mul_ps(lo, s0), t0));
                _mm256_storeu_ps(dst_f + o + i + 8, _mm256_add_ps(_mm256_mul_ps(hi, s0), t0));
            } else {
                __m128i u = _mm_packus_epi16(_mm256_castsi256_si128(v),
                                             _mm256_extracti128_si256(v, 1));
                _mm_storeu_si128((__m128i *)(void *)(dst_u8 + o + i), u);
            }
        }
        for (; i < row_n; i++) {
            uint8_t v = vpixel_u8(r0[i], r1[i], p->b0[y], p->b1[y]);
            if (chain)
                dst_f[o + i] = (float)v * chain->scale[0] + chain->shift[0];
            else
                dst_u8[o + i] = v;
        }
    }
    for (size_t k = 1; chain && k < chain->n; k++) {
        const __m256 sk = _mm256_set1_ps(chain->scale[k]), tk = _mm256_set1_ps(chain->shift[k]);
        size_t i = 0;
        for (; i + 8 <= total; i += 8)
            _mm256_storeu_ps(dst_f + i,
                             _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(dst_f + i), sk), tk));
        for (; i < total; i++)
            dst_f[i] = dst_f[i] * chain->scale[k] + chain->shift[k];
    }
}
#endif

/* Bytes of scratch resize_u8_rows needs for rows of row_n elements: two
 * resampled int16 rows, and a uint8 row for the plain path's chain. */
static size_t u8_scratch_size(size_t row_n)
{
    return 2 * row_n * sizeof(int16_t) + row_n;
}

/* int16 elements of stack scratch for the fused op: rows up to
 * RESIZE_STACK_ROW elements. */
enum {
    u8_stack_elems = (2 * RESIZE_STACK_ROW * sizeof(int16_t) + RESIZE_STACK_ROW) / sizeof(int16_t)
};

static void hresize_path(sl__resize_path path, int16_t *row, const uint8_t *src,
                         const resize_plan *p, size_t out_w, size_t c)
{
#ifdef SL_RESIZE_X86
    if (path != SL__RESIZE_PATH_C && p->gather_ok) {
        hresize_u8_ssse3(row, src, p, out_w, c);
        return;
    }
#endif
    (void)path;
    hresize_u8(row, src, p, out_w, c, 0);
}

/* One output row from the resampled rows r0, r1 with weights b0, b1: uint8
 * into dst, or with a chain float32 (tmp: a uint8 row of scratch). */
static void vresize_path(sl__resize_path path, void *dst, const int16_t *r0, const int16_t *r1,
                         int16_t b0, int16_t b1, size_t n, const sl__rescale_chain *chain,
                         uint8_t *tmp)
{
    if (!chain) {
        vresize_u8(dst, r0, r1, b0, b1, n);
        return;
    }
#ifdef SL_RESIZE_X86
    if (path != SL__RESIZE_PATH_C) {
        vresize_rescale_ssse3(dst, r0, r1, b0, b1, n, chain);
        return;
    }
#endif
    (void)path;
    vresize_u8(tmp, r0, r1, b0, b1, n);
    rescale_chain_u8(dst, tmp, n, chain);
}

/* src -> dst (out_h, out_w, c), uint8 bilinear in OpenCV's fixed point
 * following plan p, on path; dst is uint8, or float32 through chain when
 * it is not NULL. scratch holds scratch_size >= u8_scratch_size(out_w * c)
 * bytes; with more, small images may go whole (resize_image_ssse3). */
static void resize_u8_rows(sl__resize_path path, void *dst, const uint8_t *src,
                           const resize_plan *p, int64_t out_h, int64_t out_w,
                           const sl__rescale_chain *chain, void *scratch, size_t scratch_size)
{
    size_t row_n = (size_t)out_w * (size_t)p->c;
    size_t in_row = (size_t)p->in_w * (size_t)p->c;
    size_t out_size = chain ? sizeof(float) : 1; /* bytes per output element */
    int16_t *r0 = scratch, *r1 = r0 + row_n;
    uint8_t *tmp = (uint8_t *)(r1 + row_n);
    int64_t k0 = -1, k1 = -1; /* the source rows r0 and r1 hold */

    SL_ASSERT(scratch_size >= u8_scratch_size(row_n));
#ifdef SL_RESIZE_X86
    if (path != SL__RESIZE_PATH_C && p->gather_ok && p->dense &&
        (size_t)(p->row_hi - p->row_lo + 1) <= scratch_size / sizeof(int16_t) / row_n) {
        if (path == SL__RESIZE_PATH_AVX2)
            resize_image_avx2(dst, src, p, out_h, out_w, chain, scratch);
        else
            resize_image_ssse3(dst, src, p, out_h, out_w, chain, scratch);
        return;
    }
#endif
    for (int64_t y = 0; y < out_h; y++) {
        int64_t s0 = p->row0[y], s1 = p->row1[y];
        if (k0 != s0) {
            if (k1 == s0) {
                int16_t *t = r0;
                r0 = r1;
                r1 = t;
                k1 = k0;
            } else {
                hresize_path(path, r0, src + (size_t)s0 * in_row, p, (size_t)out_w,
                             (size_t)p->c);
            }
            k0 = s0;
        }
        if (s1 != s0 && k1 != s1) {
            hresize_path(path, r1, src + (size_t)s1 * in_row, p, (size_t)out_w, (size_t)p->c);
            k1 = s1;
        }
        vresize_path(path, (char *)dst + (size_t)y * row_n * out_size, r0, s1 == s0 ? r0 : r1,
                     p->b0[y], p->b1[y], row_n, chain, tmp);
    }
}

/* --- path choice ----------------------------------------------------------- */

static pthread_once_t paths_once = PTHREAD_ONCE_INIT;
static int path_ok[SL__RESIZE_PATH_COUNT]; /* written once, by find_paths */

static void find_paths(void)
{
    path_ok[SL__RESIZE_PATH_C] = 1;
#ifdef SL_RESIZE_X86
    __builtin_cpu_init();
    path_ok[SL__RESIZE_PATH_SSSE3] = __builtin_cpu_supports("ssse3");
    path_ok[SL__RESIZE_PATH_AVX2] =
        sl__cpu_level_get() >= SL__CPU_AVX2 && path_ok[SL__RESIZE_PATH_SSSE3];
#endif
}

int sl__resize_path_supported(sl__resize_path p)
{
    pthread_once(&paths_once, find_paths);
    return p >= 0 && p < SL__RESIZE_PATH_COUNT && path_ok[p];
}

sl__resize_path sl__resize_best_path(void)
{
    if (sl__resize_path_supported(SL__RESIZE_PATH_AVX2))
        return SL__RESIZE_PATH_AVX2;
    return sl__resize_path_supported(SL__RESIZE_PATH_SSSE3) ? SL__RESIZE_PATH_SSSE3
                                                            : SL__RESIZE_PATH_C;
}

int sl__resize_u8(sl__resize_path path, void *dst, const uint8_t *src, int64_t in_h,
                  int64_t in_w, int64_t c, int64_t out_h, int64_t out_w,
                  const sl__rescale_chain *chain, int whole)
{
    size_t row_n = (size_t)out_w * (size_t)c;
    size_t size = u8_scratch_size(row_n);
    resize_plan *p;
    void *scratch;
    SL_ASSERT(sl__resize_path_supported(path));
    SL_ASSERT(!chain || (chain->n >= 1 && chain->n <= SL__RESCALE_FUSE_MAX));
    if (whole && (size_t)in_h * row_n * sizeof(int16_t) > size)
        size = (size_t)in_h * row_n * sizeof(int16_t);
    p = plan_new(in_h, in_w, c, out_h, out_w);
    scratch = malloc(size);
    if (!p || !scratch) {
        free(p);
        free(scratch);
        return SL_ENOMEM;
    }
    resize_u8_rows(path, dst, src, p, out_h, out_w, chain, scratch, size);
    free(scratch);
    free(p);
    return SL_OK;
}

/* in (in_h, in_w, c) -> out (out_h, out_w, c), nearest; ofs is (out_w,)
 * scratch for the source element offset of every output column. */
static void resize_nearest(sl_tensor *out, const sl_tensor *in, int64_t in_h, int64_t in_w,
                           int64_t out_h, int64_t out_w, int64_t c, size_t *ofs)
{
    double fx = 1.0 / ((double)out_w / (double)in_w);
    double fy = 1.0 / ((double)out_h / (double)in_h);
    size_t row_n = (size_t)out_w * (size_t)c;
    size_t in_row = (size_t)in_w * (size_t)c;
    size_t cn = (size_t)c;

    /* The products are >= 0, so truncation is OpenCV's floor. */
    for (int64_t x = 0; x < out_w; x++) {
        int64_t s = (int64_t)((double)x * fx);
        ofs[x] = (size_t)(s < in_w - 1 ? s : in_w - 1) * cn;
    }
    for (int64_t y = 0; y < out_h; y++) {
        int64_t sy = (int64_t)((double)y * fy);
        size_t src_row = (size_t)(sy < in_h - 1 ? sy : in_h - 1) * in_row;
        if (in->dtype == SL_UINT8) {
            const uint8_t *src = (const uint8_t *)in->data + src_row;
            uint8_t *dst = (uint8_t *)out->data + (size_t)y * row_n;
            for (size_t x = 0; x < (size_t)out_w; x++)
                for (size_t k = 0; k < cn; k++)
                    dst[x * cn + k] = src[ofs[x] + k];
        } else {
            const float *src = (const float *)in->data + src_row;
            float *dst = (float *)out->data + (size_t)y * row_n;
            for (size_t x = 0; x < (size_t)out_w; x++)
                for (size_t k = 0; k < cn; k++)
                    dst[x * cn + k] = src[ofs[x] + k];
        }
    }
}

static void free_scratch(sl__op_ctx *ctx, void *block)
{
    if (block && ctx->pool)
        sl__pool_free(ctx->pool, block);
    else
        free(block);
}

static int resize_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    const resize_op *r = (const resize_op *)op;
    resize_stack stack;
    void *block = NULL; /* scratch for wide outputs: pool block, or heap without a pool */
    resize_xtab t;
    resize_plan *plan = NULL;
    int plan_owned = 0;
    float *rows;
    size_t rows_size; /* bytes at rows */
    int64_t h, w, c, shape[3];
    size_t ow = (size_t)r->width, row_n;
    sl_tensor *res = NULL;
    int rc;

    *out = NULL;
    rc = resize_check("resize", in->ndim, in->shape, in->dtype, &h, &w, &c, ctx->err);
    if (rc != SL_OK)
        goto fail;
    if (h == r->height && w == r->width) {
        *out = in; /* both interpolations are the identity at equal sizes */
        return SL_OK;
    }
    shape[0] = r->height;
    shape[1] = r->width;
    shape[2] = c;
    rc = sl__tensor_alloc(&res, ctx->pool, in->dtype, in->ndim, shape);
    if (rc != SL_OK) {
        sl__errf(ctx->err, rc, "resize: cannot allocate a (%lld, %lld, %lld) %s image",
                 (long long)r->height, (long long)r->width, (long long)c,
                 sl_dtype_name(in->dtype));
        goto fail;
    }
    /* The output exists, so out_w * c elements fit in memory and these
     * products cannot overflow. */
    row_n = ow * (size_t)c;
    if (ow <= RESIZE_STACK_W && row_n <= RESIZE_STACK_ROW) {
        t.ofs = stack.ofs;
        t.w0 = stack.w0;
        t.w1 = stack.w1;
        rows = stack.rows;
        rows_size = sizeof stack.rows;
    } else {
        size_t need = ow * (sizeof(size_t) + 2 * sizeof(float)) + 2 * row_n * sizeof(float);
        block = ctx->pool ? sl__pool_alloc(ctx->pool, need) : malloc(need);
        if (!block) {
            rc = sl__errf(ctx->err, SL_ENOMEM, "resize: cannot allocate %zu bytes of scratch",
                          need);
            goto fail;
        }
        t.ofs = block;
        t.w0 = (float *)(t.ofs + ow);
        t.w1 = t.w0 + ow;
        rows = t.w1 + ow;
        rows_size = 2 * row_n * sizeof(float);
    }
    if (r->interp == SL_INTER_NEAREST) {
        resize_nearest(res, in, h, w, r->height, r->width, c, t.ofs);
    } else if (in->dtype == SL_UINT8) {
        plan = plan_get((resize_op *)op, h, w, c, &plan_owned);
        if (!plan) {
            rc = sl__errf(ctx->err, SL_ENOMEM, "resize: cannot allocate its plan");
            goto fail;
        }
        /* the int16 rows fit in the room of the float rows */
        resize_u8_rows(sl__resize_best_path(), res->data, in->data, plan, r->height, r->width,
                       NULL, rows, rows_size);
        if (plan_owned)
            free(plan);
    } else {
        build_xtab(&t, w, r->width, c);
        resize_bilinear_f32(res, in, h, w, r->height, r->width, c, &t, rows);
    }
    free_scratch(ctx, block);
    sl_tensor_release(in);
    *out = res;
    return SL_OK;

fail:
    free_scratch(ctx, block);
    sl_tensor_release(res);
    sl_tensor_release(in);
    return rc;
}

static void resize_destroy(sl_op *op)
{
    free(atomic_load(&((resize_op *)op)->plan));
}

static const sl_op_iface resize_iface = {
    .name = "resize",
    .infer = resize_infer,
    .run = resize_run,
    .destroy = resize_destroy,
};

int sl_op_resize_new(sl_op **out, int64_t height, int64_t width, sl_interp interp)
{
    resize_op *r;
    int rc;
    *out = NULL;
    if (height <= 0 || width <= 0 || height > RESIZE_MAX_SIDE || width > RESIZE_MAX_SIDE)
        return SL_EINVAL;
    if (interp != SL_INTER_LINEAR && interp != SL_INTER_NEAREST)
        return SL_EINVAL;
    rc = sl__op_alloc(out, sizeof *r, &resize_iface, 0);
    if (rc != SL_OK)
        return rc;
    r = (resize_op *)*out;
    r->height = height;
    r->width = width;
    r->interp = interp;
    return SL_OK;
}

int sl__op_resize_is_linear(const sl_op *op)
{
    return op->iface == &resize_iface && ((const resize_op *)op)->interp == SL_INTER_LINEAR;
}

/* --- fused: bilinear Resize, then Rescales ---------------------------------
 * A uint8 image is resized straight into float32: the vertical pass turns
 * each uint8 result into float and runs the chain on it, so the pipeline
 * skips the uint8 image, a second pass and an allocation. The values are
 * those of the separate ops (same integer arithmetic, then the same float32
 * multiplies and adds in the same order). Anything else (float32 images,
 * equal sizes) runs the separate ops one after another. */
typedef struct resize_rescale_op {
    sl_op base;
    sl_op *resize;                              /* reference */
    sl_op *rescales[SL__RESCALE_FUSE_MAX];      /* (n,) references */
    sl__rescale_chain chain;                    /* their parameters */
} resize_rescale_op;

/* Runs the separate ops in turn, as a map would. */
static int resize_rescale_each(const resize_rescale_op *f, sl_tensor *in, sl_tensor **out,
                               sl__op_ctx *ctx)
{
    int rc = sl__op_run(f->resize, in, out, ctx);
    for (size_t k = 0; k < f->chain.n && rc == SL_OK; k++)
        rc = sl__op_run(f->rescales[k], *out, out, ctx);
    return rc;
}

static int resize_rescale_infer(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                                sl__error *err)
{
    const resize_rescale_op *f = (const resize_rescale_op *)op;
    int rc = sl__op_infer(f->resize, in, out, err);
    for (size_t k = 0; k < f->chain.n && rc == SL_OK; k++) {
        sl_tensor_spec mid = *out;
        rc = sl__op_infer(f->rescales[k], &mid, out, err);
    }
    return rc;
}

static int resize_rescale_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    const resize_rescale_op *f = (const resize_rescale_op *)op;
    resize_op *r = (resize_op *)f->resize;
    int16_t stack[u8_stack_elems]; /* scratch rows for typical widths */
    void *scratch = stack, *block = NULL;
    resize_plan *plan;
    int plan_owned;
    int64_t h, w, c, shape[3];
    size_t row_n, need;
    sl_tensor *res = NULL;
    char buf[96];
    int rc;

    *out = NULL;
    if (in->dtype != SL_UINT8)
        return resize_rescale_each(f, in, out, ctx);
    /* the first thing Resize does, with its message */
    rc = resize_check("resize", in->ndim, in->shape, in->dtype, &h, &w, &c, ctx->err);
    if (rc != SL_OK) {
        sl_tensor_release(in);
        return rc;
    }
    if (h == r->height && w == r->width)
        return resize_rescale_each(f, in, out, ctx);
    shape[0] = r->height;
    shape[1] = r->width;
    shape[2] = c;
    rc = sl__tensor_alloc(&res, ctx->pool, SL_FLOAT32, in->ndim, shape);
    if (rc != SL_OK) {
        /* where the separate ops would need a float32 tensor: the first
         * Rescale's message */
        sl__errf(ctx->err, rc, "rescale: cannot allocate a float32 tensor %s",
                 sl_shape_str(buf, sizeof buf, in->ndim, shape));
        sl_tensor_release(in);
        return rc;
    }
    /* The output exists, so this product cannot overflow. */
    row_n = (size_t)r->width * (size_t)c;
    need = u8_scratch_size(row_n);
    if (need > sizeof stack) {
        block = ctx->pool ? sl__pool_alloc(ctx->pool, need) : malloc(need);
        if (!block) {
            rc = sl__errf(ctx->err, SL_ENOMEM, "resize: cannot allocate %zu bytes of scratch",
                          need);
            goto fail;
        }
        scratch = block;
    }
    plan = plan_get(r, h, w, c, &plan_owned);
    if (!plan) {
        rc = sl__errf(ctx->err, SL_ENOMEM, "resize: cannot allocate its plan");
        goto fail;
    }
    resize_u8_rows(sl__resize_best_path(), res->data, in->data, plan, r->height, r->width,
                   &f->chain, scratch, block ? need : sizeof stack);
    if (plan_owned)
        free(plan);
    free_scratch(ctx, block);
    sl_tensor_release(in);
    *out = res;
    return SL_OK;

fail:
    free_scratch(ctx, block);
    sl_tensor_release(res);
    sl_tensor_release(in);
    return rc;
}

static void resize_rescale_destroy(sl_op *op)
{
    resize_rescale_op *f = (resize_rescale_op *)op;
    sl_op_release(f->resize);
    for (size_t k = 0; k < f->chain.n; k++)
        sl_op_release(f->rescales[k]);
}

static const sl_op_iface resize_rescale_iface = {
    .name = "resize+rescale",
    .infer = resize_rescale_infer,
    .run = resize_rescale_run,
    .destroy = resize_rescale_destroy,
};

int sl__op_resize_rescale_new(sl_op **out, sl_op *resize, sl_op *const *rescales, size_t n)
{
    resize_rescale_op *f;
    int rc;
    SL_ASSERT(sl__op_resize_is_linear(resize));
    SL_ASSERT(n >= 1 && n <= SL__RESCALE_FUSE_MAX);
    rc = sl__op_alloc(out, sizeof *f, &resize_rescale_iface, 0);
    if (rc != SL_OK)
        return rc;
    f = (resize_rescale_op *)*out;
    f->resize = sl_op_retain(resize);
    for (size_t k = 0; k < n; k++) {
        int is_rescale = sl__op_rescale_params(rescales[k], &f->chain.scale[k],
                                               &f->chain.shift[k]);
        SL_ASSERT(is_rescale);
        f->rescales[k] = sl_op_retain(rescales[k]);
        f->chain.n = k + 1;
    }
    return SL_OK;
}
