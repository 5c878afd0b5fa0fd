/* center_crop.c: the CenterCrop op. The (height, width) window of an (H, W,
 * C) or (H, W) image of any dtype whose top-left corner is at
 * (floor((H - height) / 2), floor((W - width) / 2)): MindSpore's CenterCrop,
 * which pads with zeros where the window is larger than the image (the odd
 * row or column of padding going on top / left). torchvision rounds the
 * offsets half to even instead, so where H - height is 3 mod 4 its window
 * lies one row lower (likewise for columns). */
#include "ops/op_impl.h"

#include <string.h>

#define CENTER_CROP_MAX INT32_MAX

typedef struct center_crop_op {
    sl_op base;
    int64_t height, width;
} center_crop_op;

static int center_crop_check(int ndim, const int64_t *shape, sl_dtype dtype, int64_t *h,
                             int64_t *w, int64_t *c, sl__error *err)
{
    char buf[96];
    int rc = sl__image_dims("center_crop", ndim, shape, dtype, h, w, c, err);
    if (rc != SL_OK)
        return rc;
    if (sl_dtype_size(dtype) == 0)
        return sl__errf(err, SL_ESHAPE, "center_crop: unknown input dtype %d", (int)dtype);
    if (*h > CENTER_CROP_MAX || *w > CENTER_CROP_MAX)
        return sl__errf(err, SL_ESHAPE, "center_crop: image %s %s is too large",
                        sl_dtype_name(dtype), sl_shape_str(buf, sizeof buf, ndim, shape));
    return SL_OK;
}

static int center_crop_infer(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                             sl__error *err)
{
    const center_crop_op *r = (const center_crop_op *)op;
    int64_t h, w, c;
    int rc = center_crop_check(in->ndim, in->shape, in->dtype, &h, &w, &c, err);
    if (rc != SL_OK)
        return rc;
    *out = *in;
    out->shape[0] = r->height;
    out->shape[1] = r->width;
    return SL_OK;
}

/* Floor of a / 2 for any sign (C's / truncates toward zero). */
static int64_t floor_half(int64_t a)
{
    return a >= 0 ? a / 2 : -((-a + 1) / 2);
}

/* dst (out_h, out_w) = the window of src (h, w) at (top, left), which may
 * reach outside it: zeros there. px: bytes per pixel. */
static void window_copy(unsigned char *dst, const unsigned char *src, int64_t h, int64_t w,
                        size_t px, int64_t out_h, int64_t out_w, int64_t top, int64_t left)
{
    size_t out_row = (size_t)out_w * px, in_row = (size_t)w * px;
    /* output columns [xa, xb) lie inside the image */
    int64_t xa = left < 0 ? -left : 0, xb = w - left < out_w ? w - left : out_w;
    if (xb < xa)
        xb = xa;
    for (int64_t y = 0; y < out_h; y++) {
        int64_t sy = y + top;
        unsigned char *d = dst + (size_t)y * out_row;
        if (sy < 0 || sy >= h) {
            memset(d, 0, out_row);
            continue;
        }
        memset(d, 0, (size_t)xa * px);
        memcpy(d + (size_t)xa * px, src + (size_t)sy * in_row + (size_t)(xa + left) * px,
               (size_t)(xb - xa) * px);
        memset(d + (size_t)xb * px, 0, (size_t)(out_w - xb) * px);
    }
}

static int center_crop_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    const center_crop_op *r = (const center_crop_op *)op;
    int64_t h, w, c, shape[3];
    sl_tensor *res;
    char buf[96];
    int rc;

    *out = NULL;
    rc = center_crop_check(in->ndim, in->shape, in->dtype, &h, &w, &c, ctx->err);
    if (rc != SL_OK) {
        sl_tensor_release(in);
        return rc;
    }
    if (h == r->height && w == r->width) {
        *out = in;
        return SL_OK;
    }
    shape[0] = r->height;
    shape[1] = r->width;
    shape[2] = c;
    rc = sl__tensor_alloc(&res, ctx->pool, in->dtype, in->ndim, shape);
    if (rc != SL_OK) {
        sl__errf(ctx->err, rc, "center_crop: cannot allocate a %s tensor %s",
                 sl_dtype_name(in->dtype), sl_shape_str(buf, sizeof buf, in->ndim, shape));
        sl_tensor_release(in);
        return rc;
    }
    window_copy(res->data, in->data, h, w, (size_t)c * sl_dtype_size(in->dtype), r->height,
                r->width, floor_half(h - r->height), floor_half(w - r->width));
    sl_tensor_release(in);
    *out = res;
    return SL_OK;
}

static const sl_op_iface center_crop_iface = {
    .name = "center_crop",
    .infer = center_crop_infer,
    .run = center_crop_run,
    .destroy = NULL,
};

int sl__op_center_crop_size(const sl_op *op, int64_t *height, int64_t *width)
{
    if (op->iface != &center_crop_iface)
        return 0;
    *height = ((const center_crop_op *)op)->height;
    *width = ((const center_crop_op *)op)->width;
    return 1;
}

int sl_op_center_crop_new(sl_op **out, int64_t height, int64_t width, char *err, size_t err_len)
{
    int rc;
    *out = NULL;
    if (height <= 0 || width <= 0 || height > CENTER_CROP_MAX || width > CENTER_CROP_MAX)
        return sl__err_out(err, err_len, SL_EINVAL,
                           "center_crop: height and width must be in [1, %lld], got (%lld, %lld)",
                           (long long)CENTER_CROP_MAX, (long long)height, (long long)width);
    rc = sl__op_alloc(out, sizeof(center_crop_op), &center_crop_iface, 0);
    if (rc != SL_OK)
        return sl__err_out(err, err_len, rc, "center_crop: out of memory");
    ((center_crop_op *)*out)->height = height;
    ((center_crop_op *)*out)->width = width;
    return SL_OK;
}
