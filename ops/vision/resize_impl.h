/* resize_impl.h: the uint8 bilinear resize kernels behind the Resize op, for
 * the tests and for the fused "resize then rescale" op.
 *
 * The paths compute the same bytes: plain C (any CPU), SSSE3 (x86-64 CPUs
 * that have it; its byte shuffle gathers the source pixels of eight
 * outputs at once) and AVX2 (the same, sixteen at once). The op uses sl__resize_best_path(), found once per
 * process; the tests run every supported path against the plain one. */
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

#endif
