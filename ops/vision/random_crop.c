/* random_crop.c: the RandomCrop op. An (H, W, C) or (H, W) image of any dtype
 * is padded with `padding` zeros on every side, then a (height, width) window
 * is cut at y0 = rng_below(H + 2p - height + 1), x0 = rng_below(W + 2p -
 * width + 1), drawn in that order. The padded image is never built: each
 * output row is copied from the source with zeros where it falls in the
 * border, whole pixels at a time as bytes. */
#include "ops/op_impl.h"

#include <string.h>

#define CROP_MAX INT32_MAX

typedef struct random_crop_op {
    sl_op base;
    int64_t height;
    int64_t width;
    int64_t padding;
} random_crop_op;

static int random_crop_check(const random_crop_op *r, int ndim, const int64_t *shape,
                             sl_dtype dtype, int64_t *h, int64_t *w, int64_t *c,
                             sl__error *err)
{
    char buf[96];
    int rc = sl__image_dims("random_crop", ndim, shape, dtype, h, w, c, err);
    if (rc != SL_OK)
        return rc;
    if (sl_dtype_size(dtype) == 0)
        return sl__errf(err, SL_ESHAPE, "random_crop: unknown input dtype %d", (int)dtype);
    if (*h > CROP_MAX || *w > CROP_MAX)
        return sl__errf(err, SL_ESHAPE, "random_crop: image %s %s is too large",
                        sl_dtype_name(dtype), sl_shape_str(buf, sizeof buf, ndim, shape));
    /* Sizes are now at most CROP_MAX or unknown (-1), so nothing overflows. */
    if ((*h >= 0 && *h + 2 * r->padding < r->height) ||
        (*w >= 0 && *w + 2 * r->padding < r->width))
        return sl__errf(err, SL_ESHAPE,
                        "random_crop: image %s %s padded by %lld is smaller than the "
                        "(%lld, %lld) crop",
                        sl_dtype_name(dtype), sl_shape_str(buf, sizeof buf, ndim, shape),
                        (long long)r->padding, (long long)r->height, (long long)r->width);
    return SL_OK;
}

static int random_crop_infer(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                             sl__error *err)
{
    const random_crop_op *r = (const random_crop_op *)op;
    int64_t h, w, c;
    int rc = random_crop_check(r, in->ndim, in->shape, in->dtype, &h, &w, &c, err);
    if (rc != SL_OK)
        return rc;
    *out = *in;
    out->shape[0] = r->height;
    out->shape[1] = r->width;
    return SL_OK;
}

/* Copies the (out_h, out_w) window at (y0, x0) of src (h, w) padded by pad
 * into dst; px is the size of one pixel in bytes. */
static void crop_padded(unsigned char *dst, const unsigned char *src, int64_t h, int64_t w,
                        size_t px, int64_t out_h, int64_t out_w, int64_t y0, int64_t x0,
                        int64_t pad)
{
    size_t out_row = (size_t)out_w * px, in_row = (size_t)w * px;
    /* Output columns [xa, xb) come from source columns [xa + x0 - pad, ...). */
    int64_t xa = pad - x0 > 0 ? pad - x0 : 0;
    int64_t xb = w + pad - x0 < out_w ? w + pad - x0 : out_w;
    if (xa > out_w)
        xa = out_w; /* the window lies in the left border */
    if (xb < xa)
        xb = xa; /* ... or in the right one */
    for (int64_t y = 0; y < out_h; y++) {
        int64_t sy = y + y0 - pad;
        unsigned char *d = dst + (size_t)y * out_row;
        if (sy < 0 || sy >= h) {
            memset(d, 0, out_row);
            continue;
        }
        memset(d, 0, (size_t)xa * px);
        if (xb > xa)
            memcpy(d + (size_t)xa * px,
                   src + (size_t)sy * in_row + (size_t)(xa + x0 - pad) * px,
                   (size_t)(xb - xa) * px);
        memset(d + (size_t)xb * px, 0, (size_t)(out_w - xb) * px);
    }
}

static int random_crop_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    const random_crop_op *r = (const random_crop_op *)op;
    int64_t h, w, c, y0, x0, shape[3];
    sl_tensor *res;
    char buf[96];
    int rc;

    *out = NULL;
    rc = random_crop_check(r, in->ndim, in->shape, in->dtype, &h, &w, &c, ctx->err);
    if (rc != SL_OK) {
        sl_tensor_release(in);
        return rc;
    }
    y0 = (int64_t)sl__rng_below(&ctx->rng, (uint64_t)(h + 2 * r->padding - r->height + 1));
    x0 = (int64_t)sl__rng_below(&ctx->rng, (uint64_t)(w + 2 * r->padding - r->width + 1));
    if (r->padding == 0 && h == r->height && w == r->width) {
        *out = in; /* the only window is the image itself */
        return SL_OK;
    }
    shape[0] = r->height;
    shape[1] = r->width;
    shape[2] = c;
    rc = sl__tensor_alloc(&res, ctx->pool, in->dtype, in->ndim, shape);
    if (rc != SL_OK) {
        sl__errf(ctx->err, rc, "random_crop: cannot allocate a %s tensor %s",
                 sl_dtype_name(in->dtype), sl_shape_str(buf, sizeof buf, in->ndim, shape));
        sl_tensor_release(in);
        return rc;
    }
    crop_padded(res->data, in->data, h, w, (size_t)c * sl_dtype_size(in->dtype), r->height,
                r->width, y0, x0, r->padding);
    sl_tensor_release(in);
    *out = res;
    return SL_OK;
}

static const sl_op_iface random_crop_iface = {
    .name = "random_crop",
    .infer = random_crop_infer,
    .run = random_crop_run,
    .destroy = NULL,
};

int sl_op_random_crop_new(sl_op **out, int64_t height, int64_t width, int64_t padding,
                          char *err, size_t err_len)
{
    random_crop_op *r;
    int rc;
    *out = NULL;
    if (height <= 0 || width <= 0 || height > CROP_MAX || width > CROP_MAX)
        return sl__err_out(err, err_len, SL_EINVAL,
                           "random_crop: height and width must be in [1, %lld], got (%lld, %lld)",
                           (long long)CROP_MAX, (long long)height, (long long)width);
    if (padding < 0 || padding > CROP_MAX)
        return sl__err_out(err, err_len, SL_EINVAL,
                           "random_crop: padding must be in [0, %lld], got %lld",
                           (long long)CROP_MAX, (long long)padding);
    rc = sl__op_alloc(out, sizeof *r, &random_crop_iface, 1);
    if (rc != SL_OK)
        return sl__err_out(err, err_len, rc, "random_crop: out of memory");
    r = (random_crop_op *)*out;
    r->height = height;
    r->width = width;
    r->padding = padding;
    return SL_OK;
}
