/* resize_u8.c: the uint8 bilinear kernels of the Resize op (resize.c):
 * the horizontal and vertical passes of OpenCV's fixed-point plan
 * (resize_plan.c) on each path (plain C, SSSE3, AVX2; resize_impl.h), and
 * the choice of path.
 *
 * uint8 images reproduce OpenCV's fixed-point arithmetic bit for bit (what
 * MindSpore's Resize returns): weights are rounded to 11 bits, a row is
 * resampled into integers scaled by 2048, and two rows are blended as
 * ((r0 >> 4) * b0 >> 16) + ((r1 >> 4) * b1 >> 16), rounded by (v + 2) >> 2.
 * This truncates where exact arithmetic would round, so a pixel can be one
 * below the exact bilinear value.
 *
 * The SSSE3 horizontal pass loads the 16 source bytes under eight outputs
 * at once and shuffles them into place (pshufb) instead of gathering one
 * byte at a time; AVX2 does sixteen. RGB shrinks, whose eight outputs'
 * pixels do not fit in 16 bytes, load each output pixel's two source
 * pixels in 8 bytes instead (hresize_rgb_ssse3). Every path does the same
 * integer arithmetic, so they give the same bytes. */
#include "core/cpu.h"
#include "ops/op_impl.h"
#include "ops/vision/resize_impl.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef SL_RESIZE_X86
#include <immintrin.h>
#endif

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
                       const sl__resize_plan *t, size_t out_w, size_t c, size_t from)
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
                                                             const sl__resize_plan *t, size_t out_w,
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

/* Two pixels' source pairs in one register: the 8 bytes from a, then the
 * 8 from b (left pixel's RGB, right pixel's RGB, two bytes unused). */
__attribute__((target("ssse3"))) static inline __m128i load_pairs(const uint8_t *src, size_t a,
                                                                 size_t b)
{
    return _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(const void *)(src + a)),
                              _mm_loadl_epi64((const __m128i *)(const void *)(src + b)));
}

/* 4 output elements from their (left, right) int16 pairs and weights, as
 * in hresize_u8_ssse3: exact 32-bit multiply-adds, shifted by 4. */
__attribute__((target("ssse3"))) static inline __m128i hblend4(__m128i pairs, const int16_t *w)
{
    return _mm_srai_epi32(_mm_madd_epi16(pairs, load128(w)), 4);
}

/* hresize_u8 for RGB rows the gather cannot take (shrinks beyond about
 * 1.6x, where eight elements' pixels span more than 16 bytes), for the
 * plan's first rgb_pix pixels: per 8 output pixels (24 elements, three of
 * the plan's blocks) one 8-byte load per pixel brings its left and right
 * source pixels, two pixels to a register (q0 = pixels 0, 1; q1 = 2, 3 ...).
 * Fixed shuffles make the (left, right) int16 pairs of 4 elements at a
 * time; the 4 elements (1g, 1b, 2r, 2g) straddle two registers and take
 * two shuffles and an or. The weights are blk_w's, the arithmetic that of
 * hresize_u8_ssse3, so the bytes are hresize_u8's. */
__attribute__((target("ssse3"))) static void hresize_rgb_ssse3(int16_t *restrict row,
                                                              const uint8_t *restrict src,
                                                              const sl__resize_plan *t,
                                                              size_t out_w)
{
    const char z = (char)0x80; /* pshufb's "write 0" */
    /* elements (0r, 0g, 0b, 1r) of the pixels in a register */
    const __m128i m_first = _mm_setr_epi8(0, z, 3, z, 1, z, 4, z, 2, z, 5, z, 8, z, 11, z);
    /* (1g, 1b, -, -) from the first register, (-, -, 2r, 2g) from the second */
    const __m128i m_mid0 = _mm_setr_epi8(9, z, 12, z, 10, z, 13, z, z, z, z, z, z, z, z, z);
    const __m128i m_mid1 = _mm_setr_epi8(z, z, z, z, z, z, z, z, 0, z, 3, z, 1, z, 4, z);
    /* (0b, 1r, 1g, 1b) of the pixels in a register */
    const __m128i m_last = _mm_setr_epi8(2, z, 5, z, 8, z, 11, z, 9, z, 12, z, 10, z, 13, z);
    for (size_t x = 0; x < t->rgb_pix; x += 8) {
        const size_t *o = t->ofs0 + x;
        const int16_t *w = t->blk_w + 6 * x; /* 2 weights per element, 3 elements per pixel */
        int16_t *out = row + 3 * x;
        for (size_t h = 0; h < 2; h++, o += 4, w += 24, out += 12) {
            __m128i q0 = load_pairs(src, o[0], o[1]), q1 = load_pairs(src, o[2], o[3]);
            __m128i e0 = hblend4(_mm_shuffle_epi8(q0, m_first), w);
            __m128i e1 = hblend4(_mm_or_si128(_mm_shuffle_epi8(q0, m_mid0),
                                              _mm_shuffle_epi8(q1, m_mid1)),
                                 w + 8);
            __m128i e2 = hblend4(_mm_shuffle_epi8(q1, m_last), w + 16);
            /* 12 int16 per half: 8 stored whole, the last 4 as 64 bits */
            _mm_storeu_si128((__m128i *)(void *)out, _mm_packs_epi32(e0, e1));
            _mm_storel_epi64((__m128i *)(void *)(out + 8), _mm_packs_epi32(e2, e2));
        }
    }
    if (t->rgb_pix < out_w)
        hresize_u8(row, src, t, out_w, 3, 3 * t->rgb_pix);
}
#endif

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

#ifdef SL_RESIZE_X86
/* The whole image in two passes, for a plan that gathers and is dense:
 * every source row in [row_lo, row_hi] is resampled once into rows
 * ((row_hi - row_lo + 1), out_w * c), then all output rows are blended
 * (and converted through chain, if any) without a call per row. For small
 * images (MNIST) the calls and set-up per row cost as much as the work.
 * The arithmetic is that of hresize_u8_ssse3, vpixel_u8 and the chain; the
 * chain's later steps run as passes over the whole float image. */
__attribute__((target("ssse3"))) static void resize_image_ssse3(void *dst, const uint8_t *src,
                                                               const sl__resize_plan *p,
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
                                                             const sl__resize_plan *p,
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

size_t sl__resize_u8_scratch_size(size_t row_n)
{
    return 2 * row_n * sizeof(int16_t) + row_n;
}

static void hresize_path(sl__resize_path path, int16_t *row, const uint8_t *src,
                         const sl__resize_plan *p, size_t out_w, size_t c)
{
#ifdef SL_RESIZE_X86
    if (path != SL__RESIZE_PATH_C && p->gather_ok) {
        hresize_u8_ssse3(row, src, p, out_w, c);
        return;
    }
    if (path != SL__RESIZE_PATH_C && p->rgb_pix > 0) {
        hresize_rgb_ssse3(row, src, p, out_w);
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

/* Two rows at a time, or the whole image at once (resize_image_ssse3)
 * when the scratch has room for every source row it reads. */
void sl__resize_u8_rows(sl__resize_path path, void *dst, const uint8_t *src,
                        const sl__resize_plan *p, int64_t out_h, int64_t out_w,
                        const sl__rescale_chain *chain, void *scratch, size_t scratch_size)
{
    size_t row_n = (size_t)out_w * (size_t)p->c;
    size_t in_row = (size_t)p->in_w * (size_t)p->c;
    size_t out_size = chain ? sizeof(float) : 1; /* bytes per output element */
    int16_t *r0 = scratch, *r1 = r0 + row_n;
    uint8_t *tmp = (uint8_t *)(r1 + row_n);
    int64_t k0 = -1, k1 = -1; /* the source rows r0 and r1 hold */

    SL_ASSERT(scratch_size >= sl__resize_u8_scratch_size(row_n));
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
    size_t size = sl__resize_u8_scratch_size(row_n);
    sl__resize_plan *p;
    void *scratch;
    SL_ASSERT(sl__resize_path_supported(path));
    SL_ASSERT(!chain || (chain->n >= 1 && chain->n <= SL__RESCALE_FUSE_MAX));
    if (whole && (size_t)in_h * row_n * sizeof(int16_t) > size)
        size = (size_t)in_h * row_n * sizeof(int16_t);
    p = sl__resize_plan_new(in_h, in_w, c, out_h, out_w);
    scratch = malloc(size);
    if (!p || !scratch) {
        free(p);
        free(scratch);
        return SL_ENOMEM;
    }
    sl__resize_u8_rows(path, dst, src, p, out_h, out_w, chain, scratch, size);
    free(scratch);
    free(p);
    return SL_OK;
}
