/* decode_fused_ref.h: references for the fused decode's tests
 * (check_decode_fused.c, check_decode_photos.c). The separate ops give one
 * reference (decode, then crop and resize); the other decodes the whole
 * image at the fused op's N/8 scale (N of 1, 2, 4, 8) with libjpeg and samples it in double
 * precision at the positions the separate ops sample, so that only the
 * region the fused op decodes (jpeg_crop_scanline, jpeg_skip_scanlines) and
 * its float rounding can differ. */
#ifndef SLUICE_TESTS_DECODE_FUSED_REF_H
#define SLUICE_TESTS_DECODE_FUSED_REF_H

#include <stdint.h>

#include "sluice/sluice.h"

/* The geometry of one output: the box (top, left, height, width) of the
 * original, the size it is resized to, the output window's corner in it
 * and the output's size. */
typedef struct ref_geom {
    int64_t by, bx, bh, bw, rh, rw, cy, cx, oh, ow;
} ref_geom;

/* Differences between two uint8 tensors of one shape. */
typedef struct ref_diff {
    double mean;
    int max;
} ref_diff;

/* The fused op of decode followed by ops[0..n) (asserts that they fuse). */
sl_op *ref_fuse(sl_op *decode, sl_op **ops, size_t n);
/* The separate ops' result: decode, then each op with seed. */
sl_tensor *ref_separate(const sl_tensor *jpeg, sl_op *decode, sl_op **ops, size_t n,
                        uint64_t seed);
/* The same-scale reference for geometry g of an image (rgb: 3 channels). */
sl_tensor *ref_same_scale(const sl_tensor *jpeg, const ref_geom *g, int rgb);
/* g for a RandomResizedCrop op with seed, or a shorter-side Resize of size
 * (0: none; a fixed (rh, rw) Resize otherwise when rh > 0) then a
 * CenterCrop of (ch, cw) (0: none), for an image of h x w. */
void ref_geom_rrc(ref_geom *g, const sl_op *rrc, int64_t h, int64_t w, uint64_t seed);
void ref_geom_eval(ref_geom *g, int64_t h, int64_t w, int64_t shorter, int64_t rh, int64_t rw,
                   int64_t ch, int64_t cw);
/* The JPEG's width and height from its header. */
void ref_jpeg_size(const sl_tensor *jpeg, int64_t *h, int64_t *w);
ref_diff ref_compare(const sl_tensor *a, const sl_tensor *b, const char *what);

#endif
