/* op.h: the operators a map node applies to one column of every row
 * (vision transforms and type casts). An op is immutable once made, so one
 * op may serve many maps and threads at once; it is reference counted:
 * sl_op_*_new gives you one reference, a map that uses the op takes its
 * own, and you drop yours with sl_op_release(). Every op takes one tensor
 * and makes one tensor. Images are HWC (height, width, channels); a 2-D
 * (H, W) image counts as one channel where an op says so. */
#ifndef SLUICE_OP_H
#define SLUICE_OP_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/export.h"
#include "sluice/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_op sl_op;

typedef enum sl_interp {
    SL_INTER_LINEAR = 0, /* bilinear, half-pixel centres (OpenCV INTER_LINEAR) */
    SL_INTER_NEAREST,    /* nearest neighbour (OpenCV INTER_NEAREST) */
    SL_INTER_CUBIC       /* Keys' bicubic, a = -0.75, half-pixel centres, border
                          * replicated (OpenCV INTER_CUBIC) */
} sl_interp;

/* Decode refuses a JPEG whose header declares more than max_pixels pixels
 * (width x height), before allocating anything for it: a few hundred bytes
 * can declare 16384x16384 (an 805 MB RGB tensor), a decompression bomb.
 * The default, 2^26 = 8192 x 8192 pixels (192 MiB as RGB), is above any
 * camera's frame (a 50-megapixel one makes 8688 x 5792) and far above
 * what is trained on, while two decode workers holding two such images
 * (384 MiB) still fit a small machine. Raise it, up to
 * SL_DECODE_MAX_PIXELS_LIMIT, for larger images. */
#define SL_DECODE_MAX_PIXELS_DEFAULT ((uint64_t)1 << 26)
#define SL_DECODE_MAX_PIXELS_LIMIT ((uint64_t)1 << 32)

/* The built-in ops. Each constructor returns SL_OK with the op in *out, or
 * SL_EINVAL (an argument out of range) or SL_ENOMEM with *out NULL and the
 * message, naming the op and the argument, in err (err_len bytes; err may
 * be NULL). */

/* JPEG bytes (1-D uint8) -> (H, W, 3) uint8 RGB, or (H, W, 1) when rgb is 0;
 * at most SL_DECODE_MAX_PIXELS_DEFAULT pixels. */
SL_API int sl_op_decode_new(sl_op **out, int rgb, char *err, size_t err_len);
/* The same with at most max_pixels pixels, 1 <= max_pixels <=
 * SL_DECODE_MAX_PIXELS_LIMIT (SL_EINVAL otherwise). */
SL_API int sl_op_decode_new_limited(sl_op **out, int rgb, uint64_t max_pixels, char *err,
                                    size_t err_len);
/* (H, W, C) or (H, W), uint8 or float32 -> (height, width, C) or
 * (height, width), same dtype; uint8 results are rounded to nearest. */
SL_API int sl_op_resize_new(sl_op **out, int64_t height, int64_t width, sl_interp interp,
                            char *err, size_t err_len);
/* Any numeric tensor -> float32 x * rescale + shift. */
SL_API int sl_op_rescale_new(sl_op **out, double rescale, double shift, char *err,
                             size_t err_len);
/* (H, W, C) -> float32 (x - mean[c]) / std[c]; channels must equal C (or 1
 * channel for a 2-D image). std values must be > 0. */
SL_API int sl_op_normalize_new(sl_op **out, const double *mean, const double *std,
                               int channels, char *err, size_t err_len);
/* (H, W, C) -> (C, H, W), same dtype. */
SL_API int sl_op_hwc2chw_new(sl_op **out, char *err, size_t err_len);
/* Any tensor -> the same values in dtype (C conversion; float to integer
 * truncates toward zero). */
SL_API int sl_op_type_cast_new(sl_op **out, sl_dtype dtype, char *err, size_t err_len);
/* (H, W, C) or (H, W): pads every side with `padding` zeros, then crops a
 * (height, width) window at a random place. */
SL_API int sl_op_random_crop_new(sl_op **out, int64_t height, int64_t width,
                                 int64_t padding, char *err, size_t err_len);
/* (H, W, C) or (H, W): mirrors left-right with probability p. */
SL_API int sl_op_random_horizontal_flip_new(sl_op **out, double p, char *err,
                                            size_t err_len);
/* (H, W, C) or (H, W): turns upside down with probability p, drawn apart
 * from the horizontal flip's (the two are independent). */
SL_API int sl_op_random_vertical_flip_new(sl_op **out, double p, char *err,
                                          size_t err_len);
/* --- ImageNet-style transforms (MindSpore's, sampling as torchvision) --- */

/* RandomResizedCrop's defaults, as MindSpore's and torchvision's. */
#define SL_RRC_SCALE_MIN 0.08
#define SL_RRC_SCALE_MAX 1.0
#define SL_RRC_RATIO_MIN (3.0 / 4.0)
#define SL_RRC_RATIO_MAX (4.0 / 3.0)
#define SL_RRC_ATTEMPTS 10

/* (H, W, C) or (H, W), uint8 or float32 -> (height, width[, C]): a box of
 * area H*W*s (s uniform in [scale_min, scale_max]) and aspect ratio r
 * (log r uniform in [log ratio_min, log ratio_max]) is drawn up to
 * max_attempts times until it fits, placed uniformly; otherwise the central
 * box of the whole image with its ratio clamped into [ratio_min,
 * ratio_max]. The box is then resized with interp as Resize does.
 * 0 <= scale_min <= scale_max (scale_max > 0), 0 < ratio_min <= ratio_max,
 * 1 <= max_attempts <= 1000. */
SL_API int sl_op_random_resized_crop_new(sl_op **out, int64_t height, int64_t width,
                                         double scale_min, double scale_max, double ratio_min,
                                         double ratio_max, sl_interp interp, int max_attempts,
                                         char *err, size_t err_len);
/* The box (top, left, height, width) a RandomResizedCrop op draws for an
 * image of h x w pixels when applied with seed (as sl_op_apply seeds it).
 * SL_EINVAL (message in err) when op is not a RandomResizedCrop or a side
 * is < 1. */
SL_API int sl_op_random_resized_crop_box(const sl_op *op, int64_t h, int64_t w, uint64_t seed,
                                         int64_t box[4], char *err, size_t err_len);
/* (H, W, C) or (H, W), any dtype -> the central (height, width) window,
 * at top = floor((H - height) / 2), left = floor((W - width) / 2) as
 * MindSpore places it; where the window is larger than the image it is
 * padded with zeros (the odd pixel on the top / left side). */
SL_API int sl_op_center_crop_new(sl_op **out, int64_t height, int64_t width, char *err,
                                 size_t err_len);
/* (H, W, C) or (H, W), uint8 or float32: the shorter side resized to size,
 * the longer one to lround(longer / shorter * size) computed in float32
 * (MindSpore's Resize with an int size); equal sides both become size. */
SL_API int sl_op_resize_shorter_side_new(sl_op **out, int64_t size, sl_interp interp,
                                         char *err, size_t err_len);
/* (H, W, 3) uint8 RGB -> the same with brightness, contrast, saturation and
 * hue changed by factors drawn uniformly from [lo, hi] of each range, in a
 * random order (as MindSpore and torchvision). A range of (1, 1) (hue: (0,
 * 0)) leaves that adjustment out. brightness, contrast, saturation: 0 <= lo
 * <= hi; hue: -0.5 <= lo <= hi <= 0.5 (a fraction of the colour wheel). */
SL_API int sl_op_random_color_adjust_new(sl_op **out, const double brightness[2],
                                         const double contrast[2], const double saturation[2],
                                         const double hue[2], char *err, size_t err_len);
/* Integer labels, scalar or (N,) -> (num_classes) or (N, num_classes), same
 * dtype; a label outside [0, num_classes) is an error. */
SL_API int sl_op_one_hot_new(sl_op **out, int64_t num_classes, char *err, size_t err_len);

/* --- operators of your own ------------------------------------------------
 * A custom op calls your function on every sample (the slow path for
 * transforms sluice lacks, and how bindings run a Python callable). fn gets
 * the input tensor, which it must leave untouched (it may keep a reference:
 * sl_tensor_retain, then sl_tensor_release whenever it likes; the tensor
 * stays valid after the pipeline is gone), and returns a new one in
 * *out (from sl_tensor_new, or sl_tensor_retain(in) to pass it through); on
 * failure it returns a negative status and may write a message to err.
 * Map workers call it from several threads at once: it must be
 * thread-safe. seed is the sample's own seed (from the dataset's seed, the
 * epoch and the sample) when the op is random, 0 otherwise. */
typedef int (*sl_op_custom_fn)(void *user, const sl_tensor *in, sl_tensor **out, uint64_t seed,
                               char *err, size_t err_len);
/* The output's spec for an input spec; returns SL_ESHAPE (message in
 * err) for an input the op cannot take. Sizes may be -1 (unknown). */
typedef int (*sl_op_custom_infer_fn)(void *user, const sl_tensor_spec *in, sl_tensor_spec *out,
                                     char *err, size_t err_len);

/* Versioned (see sluice.h): call sl_op_custom_options_init first. */
typedef struct sl_op_custom_options {
    size_t size;                 /* sizeof the struct as compiled; set by the _init */
    const char *name;            /* in descriptions and messages (copied; default "custom") */
    sl_op_custom_fn fn;          /* required */
    /* NULL: the output is taken to have the input's dtype and rank with
     * every size unknown, and is not checked. Otherwise every output is
     * checked against what infer said (dtype, rank, known sizes). */
    sl_op_custom_infer_fn infer;
    void (*destroy)(void *user); /* called once, when the op is freed (may be NULL) */
    void *user;                  /* passed to fn, infer and destroy */
    int random;                  /* 1: fn gets a seed per sample and epoch (default 0) */
    int32_t reserved0;           /* ends the struct without padding; must stay 0 */
} sl_op_custom_options;

SL_API void sl_op_custom_options_init_sized(sl_op_custom_options *o, size_t size);
static inline void sl_op_custom_options_init(sl_op_custom_options *o)
{
    sl_op_custom_options_init_sized(o, sizeof *o);
}
/* Makes the op (one reference). SL_EINVAL with a message in err for
 * options not made by the _init, or without fn; SL_ENOMEM. On failure
 * destroy is not called: user stays the caller's. */
SL_API int sl_op_custom_new(sl_op **out, const sl_op_custom_options *o, char *err,
                            size_t err_len);

SL_API sl_op *sl_op_retain(sl_op *op);
SL_API void sl_op_release(sl_op *op);
/* "resize", "rescale", ... */
SL_API const char *sl_op_name(const sl_op *op);

/* Applies op to in (left untouched) and returns a new tensor in *out.
 * Random ops draw from a generator seeded by seed. On failure the message
 * goes to err (may be NULL). */
SL_API int sl_op_apply(const sl_op *op, const sl_tensor *in, sl_tensor **out,
                       uint64_t seed, char *err, size_t err_len);
/* The spec of the result for an input of spec in, without data; fails with
 * SL_ESHAPE (message in err) when the op cannot take such input. */
SL_API int sl_op_infer(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                       char *err, size_t err_len);

#ifdef __cplusplus
}
#endif
#endif
