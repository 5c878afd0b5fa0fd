/* op.c: reference counting and the generic entry points of operators. */
#include "ops/op_impl.h"
#include "ops/vision/resize_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sl__op_alloc(sl_op **out, size_t size, const sl_op_iface *iface, int random)
{
    sl_op *op;
    SL_ASSERT(size >= sizeof(sl_op));
    *out = NULL;
    op = calloc(1, size);
    if (!op)
        return SL_ENOMEM;
    op->iface = iface;
    atomic_init(&op->refs, 1);
    op->random = random;
    *out = op;
    return SL_OK;
}

sl_op *sl_op_retain(sl_op *op)
{
    if (op)
        atomic_fetch_add_explicit(&op->refs, 1, memory_order_relaxed);
    return op;
}

void sl_op_release(sl_op *op)
{
    if (!op || atomic_fetch_sub_explicit(&op->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (op->iface->destroy)
        op->iface->destroy(op);
    free(op);
}

const char *sl_op_name(const sl_op *op)
{
    const char *custom = sl__op_custom_name(op), *fused = sl__op_fused_name(op);
    if (!fused)
        fused = sl__op_normalize_chw_name(op);
    return custom ? custom : fused ? fused : op->iface->name;
}

int sl__op_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    int rc = op->iface->run(op, in, out, ctx);
    if (rc != SL_OK)
        *out = NULL;
    return rc;
}

int sl__op_output(sl__op_ctx *ctx, sl_tensor **out, sl_dtype dtype, int ndim,
                  const int64_t *shape)
{
    size_t numel, nbytes;
    if (ctx->slot_base && sl__shape_numel(ndim, shape, dtype, &numel, &nbytes) == SL_OK &&
        nbytes == ctx->slot_bytes) {
        sl_tensor *base = ctx->slot_base;
        ctx->slot_base = NULL;
        return sl__tensor_view(out, ctx->pool, base, ctx->slot_offset, dtype, ndim, shape);
    }
    return sl__tensor_alloc(out, ctx->pool, dtype, ndim, shape);
}

int sl__op_infer(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                 sl__error *err)
{
    return op->iface->infer(op, in, out, err);
}

int sl_op_apply(const sl_op *op, const sl_tensor *in, sl_tensor **out, uint64_t seed,
                char *err, size_t err_len)
{
    sl__error e;
    sl__op_ctx ctx;
    int rc;
    sl__err_clear(&e);
    ctx.pool = NULL;
    ctx.err = &e;
    ctx.budget = NULL; /* one call, one image: nothing to share */
    ctx.budget_held = 0;
    ctx.slot_base = NULL;
    sl__rng_seed(&ctx.rng, seed, 0, 0, 0);
    /* The extra reference keeps the caller's tensor untouched: ops only
     * write in place into tensors nobody else holds. */
    rc = sl__op_run(op, sl_tensor_retain((sl_tensor *)in), out, &ctx);
    if (rc != SL_OK)
        sl__err_out(err, err_len, rc, "%s", e.msg);
    return rc;
}

int sl_op_infer(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                char *err, size_t err_len)
{
    sl__error e;
    int rc;
    sl__err_clear(&e);
    /* The ops trust a spec's rank and dtype (they index shape[] by it):
     * one filled in by the caller is checked here. */
    if (in->ndim < 0 || in->ndim > SL_MAX_DIMS || sl_dtype_size(in->dtype) == 0)
        rc = sl__errf(&e, SL_ESHAPE, "%s: invalid spec (dtype %d, %d dimensions)",
                      sl_op_name(op), (int)in->dtype, in->ndim);
    else
        rc = sl__op_infer(op, in, out, &e);
    if (rc != SL_OK)
        sl__err_out(err, err_len, rc, "%s", e.msg);
    return rc;
}

int sl__image_dims(const char *op_name, int ndim, const int64_t *shape, sl_dtype dtype,
                   int64_t *h, int64_t *w, int64_t *c, sl__error *err)
{
    char buf[96];
    if (ndim == 3) {
        *h = shape[0];
        *w = shape[1];
        *c = shape[2];
        return SL_OK;
    }
    if (ndim == 2) {
        *h = shape[0];
        *w = shape[1];
        *c = 1;
        return SL_OK;
    }
    return sl__errf(err, SL_ESHAPE, "%s: expected an image of shape (H, W, C) or (H, W), got %s %s",
                    op_name, sl_dtype_name(dtype), sl_shape_str(buf, sizeof buf, ndim, shape));
}

double sl__load_as_double(const void *data, sl_dtype dtype, size_t i)
{
    switch (dtype) {
    case SL_UINT8: return ((const uint8_t *)data)[i];
    case SL_INT32: return ((const int32_t *)data)[i];
    case SL_UINT32: return ((const uint32_t *)data)[i];
    case SL_INT64: return (double)((const int64_t *)data)[i];
    case SL_FLOAT32: return ((const float *)data)[i];
    case SL_FLOAT64: return ((const double *)data)[i];
    default: break;
    }
    SL_ASSERT(!"unknown dtype");
    return 0;
}

int sl__op_fuse(sl_op *const *ops, size_t nops, sl_op **fused, size_t *used)
{
    size_t n = 0;
    float s, b;
    *fused = NULL;
    *used = 1;
    if (nops >= 2 && sl__op_decode_max_bytes(ops[0]) > 0) {
        size_t taken;
        int rc = sl__op_fuse_decode(ops[0], ops + 1, nops - 1, fused, &taken);
        if (rc == SL_OK && *fused)
            *used = 1 + taken;
        return rc;
    }
    if (nops >= 2) {
        size_t taken;
        int rc = sl__op_fuse_normalize_chw(ops, nops, fused, &taken);
        if (rc != SL_OK || *fused) {
            if (*fused)
                *used = taken;
            return rc;
        }
    }
    if (nops < 2 || !sl__op_resize_is_linear(ops[0]))
        return SL_OK;
    while (1 + n < nops && n < SL__RESCALE_FUSE_MAX && sl__op_rescale_params(ops[1 + n], &s, &b))
        n++;
    if (n == 0)
        return SL_OK;
    *used = 1 + n;
    return sl__op_resize_rescale_new(fused, ops[0], ops + 1, n);
}
