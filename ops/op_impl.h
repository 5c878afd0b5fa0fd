/* op_impl.h: how an operator is built. Each op is a struct whose first
 * member is sl_op, pointing at a table of its functions; ops/vision/<op>.c
 * holds one op, its kernel and its table. */
#ifndef SLUICE_OPS_OP_IMPL_H
#define SLUICE_OPS_OP_IMPL_H

#include <stdatomic.h>

#include "sluice/op.h"
#include "core/error.h"
#include "core/pool.h"
#include "core/rng.h"
#include "core/tensor_impl.h"

typedef struct sl__byte_budget sl__byte_budget; /* core/byte_budget.h */

/* What a running op may use besides its input. */
typedef struct sl__op_ctx {
    sl_pool *pool;   /* where output tensors come from (NULL: heap) */
    sl_rng rng;      /* seeded for this sample and this op */
    sl__error *err;  /* where a failing op writes its message */
    /* Decode takes its output's bytes from budget (NULL: no bound) and adds
     * them to budget_held; whoever runs the ops gives budget_held back when
     * done with the row (sl__map_apply). */
    sl__byte_budget *budget;
    uint64_t budget_held;
    /* Where the row's last op may make its output instead of a new block:
     * slot_bytes at byte slot_offset of slot_base (the row's slot in the
     * batch it is stacked into, pipeline/map.c), or slot_base NULL. Ops
     * take it through sl__op_output, once. */
    sl_tensor *slot_base;
    size_t slot_offset, slot_bytes;
} sl__op_ctx;

typedef struct sl_op_iface {
    const char *name;
    /* Output spec for an input spec; SL_ESHAPE with a message if refused.
     * Dims of -1 are unknown and must be accepted unless ruled out. */
    int (*infer)(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                 sl__error *err);
    /* Consumes the caller's reference to in and returns *out (which may be
     * `in` itself, modified in place when sl__tensor_writable(in)). On
     * failure *out is NULL and in has still been released. */
    int (*run)(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx);
    /* Frees the op's own fields (may be NULL); the struct is freed after. */
    void (*destroy)(sl_op *op);
} sl_op_iface;

struct sl_op {
    const sl_op_iface *iface;
    atomic_int refs;
    int random; /* draws from ctx->rng */
    /* A fused op's random one is this many places after its first: it is
     * seeded as that op would be alone (0 for any other op). */
    int rng_offset;
};

/* Allocates an op struct of `size` bytes (>= sizeof(sl_op)), zeroed, with
 * one reference; returns SL_ENOMEM or SL_OK. */
int sl__op_alloc(sl_op **out, size_t size, const sl_op_iface *iface, int random);
/* Runs op: ctx->rng must already be seeded. Consumes in. */
int sl__op_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx);
/* A new tensor for an op's output: a view of ctx's slot when there is one
 * of exactly its bytes (the slot is then used up), else from ctx->pool.
 * Uninitialised either way; fails as sl__tensor_alloc. */
int sl__op_output(sl__op_ctx *ctx, sl_tensor **out, sl_dtype dtype, int ndim,
                  const int64_t *shape);
int sl__op_infer(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                 sl__error *err);

/* Fusion, for the pipeline's map workers: *fused becomes one op that runs
 * ops[0], ..., ops[*used - 1] in a single pass, with the same results and
 * the same error messages as running them one after another; or NULL with
 * *used = 1 when ops[0] fuses with nothing. Fused today: a bilinear Resize
 * followed by Rescales (a uint8 image is resized straight into float32),
 * with the same values; and a Decode followed by a crop and/or resize
 * (sl__op_fuse_decode), whose values are close but not equal (it decodes
 * less).
 * SL_ENOMEM, or SL_OK. */
int sl__op_fuse(sl_op *const *ops, size_t nops, sl_op **fused, size_t *used);
/* Decode fused with the geometry after it (ops/vision/decode_fused.c):
 * when decode is a Decode and next[0..n) starts with a RandomResizedCrop,
 * a bilinear Resize (to a size, or of the shorter side) maybe followed by
 * a CenterCrop, or a CenterCrop, *fused is the op doing them in one pass
 * from the JPEG's header and *used the number of ops of next it took;
 * otherwise NULL and 0. SL_ENOMEM, or SL_OK. */
int sl__op_fuse_decode(sl_op *decode, sl_op *const *next, size_t n, sl_op **fused,
                       size_t *used);
/* A fused decode made by sl__op_fuse_decode decodes at a reduced scale
 * where the output allows (allow 1, as made) or always at full scale
 * (allow 0: the separate ops' pixels to within 1 level). Any other op is
 * left as it is. */
void sl__op_decode_fused_allow_scaling(sl_op *op, int allow);
/* 1 and the parameters of a Normalize op (mean and 1/std, channels each),
 * of a RandomHorizontalFlip, or whether op is a HWC2CHW; else 0. */
int sl__op_normalize_params(const sl_op *op, int *channels, const float **mean,
                            const float **inv_std);
int sl__op_flip_prob(const sl_op *op, double *p);
int sl__op_is_hwc2chw(const sl_op *op);
/* The op that runs [RandomHorizontalFlip,] Normalize, HWC2CHW in one pass
 * (ops/vision/normalize_chw.c) when ops[0..n) start so, with *used the
 * ops it took; else NULL and 0. SL_ENOMEM, or SL_OK. */
int sl__op_fuse_normalize_chw(sl_op *const *ops, size_t n, sl_op **fused, size_t *used);
/* "decode+random_resized_crop", ... for a fused decode, else NULL. */
const char *sl__op_fused_name(const sl_op *op);
const char *sl__op_normalize_chw_name(const sl_op *op);
/* 1 and the op's float32 parameters if op is a Rescale, else 0. */
int sl__op_rescale_params(const sl_op *op, float *rescale, float *shift);
/* 1 if op is a bilinear Resize. */
int sl__op_resize_is_linear(const sl_op *op);
/* The fused op of a bilinear Resize and n (1 to SL__RESCALE_FUSE_MAX)
 * Rescales; it holds a reference to each. */
int sl__op_resize_rescale_new(sl_op **out, sl_op *resize, sl_op *const *rescales, size_t n);

/* in (a uint8 or float32 image; consumed) resized to (out_h, out_w) as the
 * Resize op resizes, for ops whose output size changes per image (a
 * RandomResizedCrop's box, the shorter side of Resize(int)); messages name
 * the op `name`. */
int sl__resize_image(const char *name, sl_tensor *in, int64_t out_h, int64_t out_w,
                     sl_interp interp, sl_tensor **out, sl__op_ctx *ctx);
/* 1 when interp is one of sl_interp's values (the resizing ops check it). */
int sl__interp_valid(sl_interp interp);

/* ImageNet-style geometry, for the pipeline's planning (decode fused with
 * the crop and resize after it) and the tests. */
/* Draws a RandomResizedCrop op's box (top, left, height, width) for an h x
 * w image from rng (ops/vision/random_resized_crop.c says how). */
void sl__rrc_draw_box(const sl_op *op, int64_t h, int64_t w, sl_rng *rng, int64_t box[4]);
int sl__op_is_random_resized_crop(const sl_op *op);
/* A RandomResizedCrop op's output size and interpolation. */
void sl__rrc_size(const sl_op *op, int64_t *height, int64_t *width, sl_interp *interp);
/* in (consumed) cut to box (top, left, height, width), which lies inside
 * it; in itself when box is the whole image. */
int sl__crop_copy(const char *name, sl_tensor *in, const int64_t box[4], sl_tensor **out,
                  sl__op_ctx *ctx);
/* 1 and its window if op is a CenterCrop, else 0. */
int sl__op_center_crop_size(const sl_op *op, int64_t *height, int64_t *width);
/* 1 and its size if op is a shorter-side Resize, else 0. */
int sl__op_shorter_side_size(const sl_op *op, int64_t *size, sl_interp *interp);
/* The output size of a shorter-side Resize to size of an h x w image;
 * SL_ESHAPE when the longer side would pass INT32_MAX. */
int sl__shorter_side_dims(int64_t size, int64_t h, int64_t w, int64_t *out_h, int64_t *out_w);

/* The most bytes one output of op may need if op is a Decode (max_pixels
 * x channels), else 0: what a pipeline's decode budget must hold at least. */
uint64_t sl__op_decode_max_bytes(const sl_op *op);

/* A custom op's own name (sluice/op.h), or NULL for any other op. */
const char *sl__op_custom_name(const sl_op *op);

/* Shared helpers for image ops. Reads an image spec or tensor as H, W, C:
 * rank 3 is (H, W, C), rank 2 is (H, W) with C = 1. Returns SL_ESHAPE with a
 * message naming op_name otherwise. */
int sl__image_dims(const char *op_name, int ndim, const int64_t *shape, sl_dtype dtype,
                   int64_t *h, int64_t *w, int64_t *c, sl__error *err);
/* Reads element i of t's data as double, whatever its dtype. */
double sl__load_as_double(const void *data, sl_dtype dtype, size_t i);

#endif
