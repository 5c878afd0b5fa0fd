/* hwc2chw.c: the HWC2CHW op, (H, W, C) -> (C, H, W) of any dtype. When C == 1
 * (or H * W == 1) the bytes are already in CHW order: a writable input just
 * gets its shape changed, a shared one becomes a view of the same data. */
#include "ops/op_impl.h"

#include <string.h>

static int hwc2chw_check(int ndim, const int64_t *shape, sl_dtype dtype, sl__error *err)
{
    char buf[96];
    if (ndim != 3)
        return sl__errf(err, SL_ESHAPE, "hwc2chw: expected an image of shape (H, W, C), got %s %s",
                        sl_dtype_name(dtype), sl_shape_str(buf, sizeof buf, ndim, shape));
    if (sl_dtype_size(dtype) == 0)
        return sl__errf(err, SL_ESHAPE, "hwc2chw: unknown input dtype %d", (int)dtype);
    return SL_OK;
}

static int hwc2chw_infer(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                         sl__error *err)
{
    int rc = hwc2chw_check(in->ndim, in->shape, in->dtype, err);
    (void)op;
    if (rc != SL_OK)
        return rc;
    *out = *in;
    out->shape[0] = in->shape[2];
    out->shape[1] = in->shape[0];
    out->shape[2] = in->shape[1];
    return SL_OK;
}

/* dst (c, hw) = transpose of src (hw, c), one kernel per element size. */
static void hwc2chw_u8(uint8_t *dst, const uint8_t *src, size_t hw, size_t c)
{
    if (c == 3) {
        uint8_t *d0 = dst, *d1 = dst + hw, *d2 = dst + 2 * hw;
        for (size_t p = 0; p < hw; p++) {
            d0[p] = src[3 * p];
            d1[p] = src[3 * p + 1];
            d2[p] = src[3 * p + 2];
        }
        return;
    }
    for (size_t k = 0; k < c; k++)
        for (size_t p = 0; p < hw; p++)
            dst[k * hw + p] = src[p * c + k];
}

/* Wider elements move as bytes (memcpy of a constant size compiles to one
 * load and store) so float data is never read through an integer type. */
static void hwc2chw_4(unsigned char *dst, const unsigned char *src, size_t hw, size_t c)
{
    for (size_t k = 0; k < c; k++)
        for (size_t p = 0; p < hw; p++)
            memcpy(dst + 4 * (k * hw + p), src + 4 * (p * c + k), 4);
}

static void hwc2chw_8(unsigned char *dst, const unsigned char *src, size_t hw, size_t c)
{
    for (size_t k = 0; k < c; k++)
        for (size_t p = 0; p < hw; p++)
            memcpy(dst + 8 * (k * hw + p), src + 8 * (p * c + k), 8);
}

static int hwc2chw_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    int64_t shape[3];
    size_t hw, c;
    sl_tensor *res;
    char buf[96];
    int rc;

    (void)op;
    *out = NULL;
    rc = hwc2chw_check(in->ndim, in->shape, in->dtype, ctx->err);
    if (rc != SL_OK) {
        sl_tensor_release(in);
        return rc;
    }
    shape[0] = in->shape[2];
    shape[1] = in->shape[0];
    shape[2] = in->shape[1];
    hw = (size_t)in->shape[0] * (size_t)in->shape[1];
    c = (size_t)in->shape[2];
    if (c == 1 || hw == 1) {
        /* Same bytes in both layouts: only the shape changes. */
        if (sl__tensor_writable(in)) {
            in->shape[0] = shape[0];
            in->shape[1] = shape[1];
            in->shape[2] = shape[2];
            *out = in;
            return SL_OK;
        }
        rc = sl__tensor_view(&res, ctx->pool, in, 0, in->dtype, 3, shape);
    } else {
        rc = sl__tensor_alloc(&res, ctx->pool, in->dtype, 3, shape);
    }
    if (rc != SL_OK) {
        sl__errf(ctx->err, rc, "hwc2chw: cannot allocate a %s tensor %s",
                 sl_dtype_name(in->dtype), sl_shape_str(buf, sizeof buf, 3, shape));
        sl_tensor_release(in);
        return rc;
    }
    if (res->base == NULL) {
        switch (sl_dtype_size(in->dtype)) {
        case 1: hwc2chw_u8(res->data, in->data, hw, c); break;
        case 4: hwc2chw_4(res->data, in->data, hw, c); break;
        case 8: hwc2chw_8(res->data, in->data, hw, c); break;
        default: SL_ASSERT(!"hwc2chw: unexpected element size");
        }
    }
    sl_tensor_release(in);
    *out = res;
    return SL_OK;
}

static const sl_op_iface hwc2chw_iface = {
    .name = "hwc2chw",
    .infer = hwc2chw_infer,
    .run = hwc2chw_run,
    .destroy = NULL,
};

int sl_op_hwc2chw_new(sl_op **out, char *err, size_t err_len)
{
    int rc = sl__op_alloc(out, sizeof(sl_op), &hwc2chw_iface, 0);
    if (rc != SL_OK)
        return sl__err_out(err, err_len, rc, "hwc2chw: out of memory");
    return SL_OK;
}

int sl__op_is_hwc2chw(const sl_op *op)
{
    return op->iface == &hwc2chw_iface;
}
