/* one_hot.c: the OneHot op, integer labels of shape () or (N,) ->
 * (num_classes) or (N, num_classes) of the same dtype, 1 at the label and 0
 * elsewhere. Every label is checked before anything is allocated. */
#include "ops/op_impl.h"

#include <string.h>

typedef struct one_hot_op {
    sl_op base;
    int64_t num_classes;
} one_hot_op;

static int one_hot_check(int ndim, const int64_t *shape, sl_dtype dtype, sl__error *err)
{
    char buf[96];
    if (dtype != SL_UINT8 && dtype != SL_INT32 && dtype != SL_UINT32 && dtype != SL_INT64)
        return sl__errf(err, SL_ESHAPE,
                        "one_hot: expected integer labels (uint8, int32, uint32 or int64), "
                        "got %s %s",
                        sl_dtype_name(dtype), sl_shape_str(buf, sizeof buf, ndim, shape));
    if (ndim != 0 && ndim != 1)
        return sl__errf(err, SL_ESHAPE, "one_hot: expected a label of shape () or (N,), got %s %s",
                        sl_dtype_name(dtype), sl_shape_str(buf, sizeof buf, ndim, shape));
    return SL_OK;
}

static int one_hot_infer(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                         sl__error *err)
{
    int rc = one_hot_check(in->ndim, in->shape, in->dtype, err);
    if (rc != SL_OK)
        return rc;
    *out = *in;
    out->ndim = in->ndim + 1;
    out->shape[in->ndim] = ((const one_hot_op *)op)->num_classes;
    return SL_OK;
}

/* Label i of a tensor of integer dtype. */
static int64_t load_label(const void *data, sl_dtype dtype, size_t i)
{
    switch (dtype) {
    case SL_UINT8: return ((const uint8_t *)data)[i];
    case SL_INT32: return ((const int32_t *)data)[i];
    case SL_UINT32: return ((const uint32_t *)data)[i];
    case SL_INT64: return ((const int64_t *)data)[i];
    default: break;
    }
    SL_ASSERT(!"one_hot: not an integer dtype");
    return 0;
}

/* Sets element i of an integer tensor to 1. */
static void store_one(void *data, sl_dtype dtype, size_t i)
{
    switch (dtype) {
    case SL_UINT8: ((uint8_t *)data)[i] = 1; break;
    case SL_INT32: ((int32_t *)data)[i] = 1; break;
    case SL_UINT32: ((uint32_t *)data)[i] = 1; break;
    case SL_INT64: ((int64_t *)data)[i] = 1; break;
    default: SL_ASSERT(!"one_hot: not an integer dtype");
    }
}

static int one_hot_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    int64_t classes = ((const one_hot_op *)op)->num_classes, shape[2];
    size_t n;
    sl_tensor *res;
    char buf[96];
    int rc;

    *out = NULL;
    rc = one_hot_check(in->ndim, in->shape, in->dtype, ctx->err);
    if (rc != SL_OK)
        goto fail;
    n = in->numel;
    for (size_t i = 0; i < n; i++) {
        int64_t label = load_label(in->data, in->dtype, i);
        if (label < 0 || label >= classes) {
            if (in->ndim == 0)
                rc = sl__errf(ctx->err, SL_EINVAL,
                              "one_hot: label %lld is outside [0, %lld) for num_classes %lld",
                              (long long)label, (long long)classes, (long long)classes);
            else
                rc = sl__errf(ctx->err, SL_EINVAL,
                              "one_hot: label %lld at index %zu is outside [0, %lld) for "
                              "num_classes %lld",
                              (long long)label, i, (long long)classes, (long long)classes);
            goto fail;
        }
    }
    if (in->ndim == 1)
        shape[0] = in->shape[0];
    shape[in->ndim] = classes;
    rc = sl__tensor_alloc(&res, ctx->pool, in->dtype, in->ndim + 1, shape);
    if (rc != SL_OK) {
        sl__errf(ctx->err, rc, "one_hot: cannot allocate a %s tensor %s",
                 sl_dtype_name(in->dtype), sl_shape_str(buf, sizeof buf, in->ndim + 1, shape));
        goto fail;
    }
    memset(res->data, 0, res->nbytes);
    for (size_t i = 0; i < n; i++)
        store_one(res->data, in->dtype, i * (size_t)classes +
                                            (size_t)load_label(in->data, in->dtype, i));
    sl_tensor_release(in);
    *out = res;
    return SL_OK;

fail:
    sl_tensor_release(in);
    return rc;
}

static const sl_op_iface one_hot_iface = {
    .name = "one_hot",
    .infer = one_hot_infer,
    .run = one_hot_run,
    .destroy = NULL,
};

int sl_op_one_hot_new(sl_op **out, int64_t num_classes, char *err, size_t err_len)
{
    int rc;
    *out = NULL;
    if (num_classes <= 0)
        return sl__err_out(err, err_len, SL_EINVAL,
                           "one_hot: num_classes must be >= 1, got %lld", (long long)num_classes);
    rc = sl__op_alloc(out, sizeof(one_hot_op), &one_hot_iface, 0);
    if (rc != SL_OK)
        return sl__err_out(err, err_len, rc, "one_hot: out of memory");
    ((one_hot_op *)*out)->num_classes = num_classes;
    return SL_OK;
}
