/* resize_impl.h: the uint8 bilinear resize kernels behind the Resize op
 * (resize_u8.c), for the op and the fused "resize then rescale" op
 * (resize.c) and for the tests.
 *
 * The paths compute the same bytes: plain C (any CPU), SSSE3 (x86-64 CPUs
 * that have it; its byte shuffle gathers the source pixels of eight
 * outputs at once) and AVX2 (the same, sixteen at once). The op uses
 * sl__resize_best_path(), found once per process; the tests run every
 * supported path against the plain one. */
#ifndef SLUICE_OPS_VISION_RESIZE_IMPL_H
#define SLUICE_OPS_VISION_RESIZE_IMPL_H

#include <stddef.h>
#include <stdint.h>

typedef enum sl__resize_path {
    SL__RESIZE_PATH_C = 0, /* plain C, any CPU */
    SL__RESIZE_PATH_SSSE3, /* x86-64 with SSSE3 */
    SL__RESIZE_PATH_AVX2,  /* x86-64 with AVX2: SSSE3's kernels, and twice as wide for whole
                            * small images */
    SL__RESIZE_PATH_COUNT
} sl__resize_path;

/* 1 when this CPU can run path p. */
int sl__resize_path_supported(sl__resize_path p);
/* The fastest supported path, found once per process (pthread_once). */
sl__resize_path sl__resize_best_path(void);

/* At most this many rescales fuse into one op (more stay separate). */
#define SL__RESCALE_FUSE_MAX 8

/* A chain of rescales: v = v * scale[k] + shift[k] for k in [0, n), each
 * step rounded to float32, as the separate Rescale ops compute it. */
typedef struct sl__rescale_chain {
    float scale[SL__RESCALE_FUSE_MAX];
    float shift[SL__RESCALE_FUSE_MAX];
    size_t n;
} sl__rescale_chain;

/* dst (out_h, out_w, c) = src (in_h, in_w, c) resized as the Resize op does
 * for uint8 bilinear (all sides >= 1), on path p (which must be supported).
 * When chain is NULL dst is uint8; otherwise it is float32, each value being
 * the uint8 result passed through chain (chain->n >= 1). whole = 1 gives
 * it room to resample all source rows first where the path can (as the op
 * does for small images); whole = 0 keeps it to two rows at a time.
 * Allocates its tables and rows: SL_ENOMEM, or SL_OK. */
int sl__resize_u8(sl__resize_path p, void *dst, const uint8_t *src, int64_t in_h, int64_t in_w,
                  int64_t c, int64_t out_h, int64_t out_w, const sl__rescale_chain *chain,
                  int whole);

/* dst (out_h, out_w, c) = src (in_h, in_w, c) resized as OpenCV's
 * INTER_CUBIC (resize_cubic.c says how), both uint8 (is_u8) or both
 * float32, all sides >= 1. Allocates its tables and rows: SL_ENOMEM, or
 * SL_OK. */
int sl__resize_cubic(void *dst, const void *src, int is_u8, int64_t in_h, int64_t in_w,
                     int64_t c, int64_t out_h, int64_t out_w);

#if defined(__x86_64__)
#define SL_RESIZE_X86 1
#endif

/* The uint8 bilinear plan for one input size, as OpenCV builds it: per
 * output column the two source offsets and the two weights scaled by 2048
 * and rounded; per output row the two (clamped) source rows and weights.
 * Built in one block; the op keeps the first one it builds, so a stream of
 * equally sized images (MNIST) builds it once. */
typedef struct sl__resize_plan {
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
     * then runs the plain C pass, or for RGB the pixel pass below. */
    size_t nblk;
    int gather_ok;
    /* For RGB rows without the gather (shrinks beyond about 1.6x): the
     * first rgb_pix output pixels (a multiple of 8; the rest go one by
     * one) have their left and right source pixels adjacent and 8 bytes
     * inside the row, so the SSSE3 pixel pass loads each pixel's pair in
     * one go. blk_w holds the weights either way. */
    size_t rgb_pix;
    /* the source rows output rows read: [row_lo, row_hi], every one of them
     * when dense (so resampling them all wastes nothing) */
    int64_t row_lo, row_hi;
    int dense;
    size_t *blk_base;   /* (nblk,) */
    int16_t *blk_w;     /* (nblk, 16) */
    uint8_t *blk_mask;  /* (nblk, 32) */
} sl__resize_plan;

/* The plan for (in_h, in_w, c) -> (out_h, out_w, c) in one block (free()
 * it), or NULL without memory. */
sl__resize_plan *sl__resize_plan_new(int64_t in_h, int64_t in_w, int64_t c, int64_t out_h,
                                     int64_t out_w);
/* A plan sampling output column x at source position xs[x] and row y at
 * ys[y] (each in [0, in - 1]) with the same fixed-point weights: for
 * resamplings that are not a whole image's (Decode fused with a crop). */
sl__resize_plan *sl__resize_plan_at(int64_t in_h, int64_t in_w, int64_t c, int64_t out_h,
                                    int64_t out_w, const double *ys, const double *xs);
/* Bytes of scratch sl__resize_u8_rows needs for rows of row_n elements: two
 * resampled int16 rows, and a uint8 row for the plain path's chain. */
size_t sl__resize_u8_scratch_size(size_t row_n);
/* src -> dst (out_h, out_w, c), uint8 bilinear in OpenCV's fixed point
 * following plan p, on path; dst is uint8, or float32 through chain when
 * it is not NULL. scratch holds scratch_size >= sl__resize_u8_scratch_size
 * (out_w * c) bytes; with more, small images may go whole. */
void sl__resize_u8_rows(sl__resize_path path, void *dst, const uint8_t *src,
                        const sl__resize_plan *p, int64_t out_h, int64_t out_w,
                        const sl__rescale_chain *chain, void *scratch, size_t scratch_size);

#endif
