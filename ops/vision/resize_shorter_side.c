/* resize_shorter_side.c: MindSpore's Resize with an int size. The shorter
 * side becomes size and the longer one lroundf(longer / shorter * size),
 * computed in float32 as MindSpore's ResizeOp does (torchvision truncates
 * instead: int(size * longer / shorter), which can be one pixel less);
 * a square image becomes size x size. The pixels are Resize's. The output
 * size depends on the input, so infer gives unknown height and width. */
#include "ops/op_impl.h"

#include <math.h>

#define SHORTER_MAX INT32_MAX

typedef struct resize_shorter_op {
    sl_op base;
    int64_t size;
    sl_interp interp;
} resize_shorter_op;

static int shorter_check(int ndim, const int64_t *shape, sl_dtype dtype, int64_t *h, int64_t *w,
                         int64_t *c, sl__error *err)
{
    char buf[96];
    int rc = sl__image_dims("resize_shorter_side", ndim, shape, dtype, h, w, c, err);
    if (rc != SL_OK)
        return rc;
    if (dtype != SL_UINT8 && dtype != SL_FLOAT32)
        return sl__errf(err, SL_ESHAPE,
                        "resize_shorter_side: expected a uint8 or float32 image, got %s %s",
                        sl_dtype_name(dtype), sl_shape_str(buf, sizeof buf, ndim, shape));
    if (*h == 0 || *w == 0 || *c == 0)
        return sl__errf(err, SL_ESHAPE, "resize_shorter_side: cannot resize an empty image %s %s",
                        sl_dtype_name(dtype), sl_shape_str(buf, sizeof buf, ndim, shape));
    return SL_OK;
}

int sl__shorter_side_dims(int64_t size, int64_t h, int64_t w, int64_t *out_h, int64_t *out_w)
{
    float longer;
    if (h < w) {
        longer = (float)w / (float)h * (float)size;
        *out_h = size;
    } else {
        longer = (float)h / (float)w * (float)size;
        *out_w = size;
    }
    if (!(longer < (float)SHORTER_MAX))
        return SL_ESHAPE;
    if (h < w)
        *out_w = lroundf(longer);
    else
        *out_h = lroundf(longer);
    return SL_OK;
}

static int shorter_infer(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                         sl__error *err)
{
    int64_t h, w, c;
    int rc = shorter_check(in->ndim, in->shape, in->dtype, &h, &w, &c, err);
    (void)op;
    if (rc != SL_OK)
        return rc;
    *out = *in;
    out->shape[0] = -1;
    out->shape[1] = -1;
    return SL_OK;
}

static int shorter_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    const resize_shorter_op *r = (const resize_shorter_op *)op;
    int64_t h, w, c, oh, ow;
    int rc;

    *out = NULL;
    rc = shorter_check(in->ndim, in->shape, in->dtype, &h, &w, &c, ctx->err);
    if (rc == SL_OK && sl__shorter_side_dims(r->size, h, w, &oh, &ow) != SL_OK)
        rc = sl__errf(ctx->err, SL_ESHAPE,
                      "resize_shorter_side: a %lld x %lld image with its shorter side at %lld "
                      "would be too long",
                      (long long)h, (long long)w, (long long)r->size);
    if (rc != SL_OK) {
        sl_tensor_release(in);
        return rc;
    }
    return sl__resize_image("resize_shorter_side", in, oh, ow, r->interp, out, ctx);
}

static const sl_op_iface shorter_iface = {
    .name = "resize_shorter_side",
    .infer = shorter_infer,
    .run = shorter_run,
    .destroy = NULL,
};

int sl__op_shorter_side_size(const sl_op *op, int64_t *size, sl_interp *interp)
{
    if (op->iface != &shorter_iface)
        return 0;
    *size = ((const resize_shorter_op *)op)->size;
    *interp = ((const resize_shorter_op *)op)->interp;
    return 1;
}

int sl_op_resize_shorter_side_new(sl_op **out, int64_t size, sl_interp interp, char *err,
                                  size_t err_len)
{
    int rc;
    *out = NULL;
    if (size <= 0 || size > (1 << 24))
        return sl__err_out(err, err_len, SL_EINVAL,
                           "resize_shorter_side: size must be in [1, %d], got %lld", 1 << 24,
                           (long long)size);
    if (!sl__interp_valid(interp))
        return sl__err_out(err, err_len, SL_EINVAL,
                           "resize_shorter_side: interp must be SL_INTER_LINEAR, "
                           "SL_INTER_NEAREST or SL_INTER_CUBIC, got %d",
                           (int)interp);
    rc = sl__op_alloc(out, sizeof(resize_shorter_op), &shorter_iface, 0);
    if (rc != SL_OK)
        return sl__err_out(err, err_len, rc, "resize_shorter_side: out of memory");
    ((resize_shorter_op *)*out)->size = size;
    ((resize_shorter_op *)*out)->interp = interp;
    return SL_OK;
}
