/* rescale.c: the Rescale op, any numeric tensor -> float32 x * rescale + shift.
 * As in MindSpore the value is first converted to float32 and the arithmetic
 * is done in float; a writable float32 input is rescaled in place. */
#include "ops/op_impl.h"

#include <float.h>
#include <math.h>

typedef struct rescale_op {
    sl_op base;
    float rescale;
    float shift;
} rescale_op;

static int rescale_infer(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                         sl__error *err)
{
    (void)op;
    if (sl_dtype_size(in->dtype) == 0)
        return sl__errf(err, SL_ESHAPE, "rescale: unknown input dtype %d", (int)in->dtype);
    *out = *in;
    out->dtype = SL_FLOAT32;
    return SL_OK;
}

/* The hot loops run in blocks of a fixed 16 elements, which GCC vectorizes
 * at -O2 (its "very cheap" cost model skips loops of unknown trip count);
 * restrict, or a single pointer when in place, spares it alias checks. */
static void rescale_u8(float *restrict dst, const uint8_t *restrict src, size_t n, float s,
                       float b)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (size_t j = i; j < i + 16; j++)
            dst[j] = (float)src[j] * s + b;
    for (; i < n; i++)
        dst[i] = (float)src[i] * s + b;
}

static void rescale_f32(float *restrict dst, const float *restrict src, size_t n, float s,
                        float b)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (size_t j = i; j < i + 16; j++)
            dst[j] = src[j] * s + b;
    for (; i < n; i++)
        dst[i] = src[i] * s + b;
}

static void rescale_f32_inplace(float *x, size_t n, float s, float b)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (size_t j = i; j < i + 16; j++)
            x[j] = x[j] * s + b;
    for (; i < n; i++)
        x[i] = x[i] * s + b;
}

/* dst[i] = (float)src[i] * s + b for n elements of any dtype. */
static void rescale_kernel(float *restrict dst, const void *restrict src, sl_dtype dtype,
                           size_t n, float s, float b)
{
    switch (dtype) {
    case SL_UINT8:
        rescale_u8(dst, src, n, s, b);
        break;
    case SL_INT32: {
        const int32_t *p = src;
        for (size_t i = 0; i < n; i++)
            dst[i] = (float)p[i] * s + b;
        break;
    }
    case SL_UINT32: {
        const uint32_t *p = src;
        for (size_t i = 0; i < n; i++)
            dst[i] = (float)p[i] * s + b;
        break;
    }
    case SL_INT64: {
        const int64_t *p = src;
        for (size_t i = 0; i < n; i++)
            dst[i] = (float)p[i] * s + b;
        break;
    }
    case SL_FLOAT32:
        rescale_f32(dst, src, n, s, b);
        break;
    case SL_FLOAT64: {
        const double *p = src;
        for (size_t i = 0; i < n; i++)
            dst[i] = (float)p[i] * s + b;
        break;
    }
    default:
        SL_ASSERT(!"rescale: unknown dtype");
    }
}

static int rescale_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    const rescale_op *r = (const rescale_op *)op;
    sl_tensor *res;
    int rc;

    *out = NULL;
    if (sl_dtype_size(in->dtype) == 0) {
        rc = sl__errf(ctx->err, SL_ESHAPE, "rescale: unknown input dtype %d", (int)in->dtype);
        sl_tensor_release(in);
        return rc;
    }
    if (in->dtype == SL_FLOAT32 && sl__tensor_writable(in)) {
        rescale_f32_inplace(in->data, in->numel, r->rescale, r->shift);
        *out = in;
        return SL_OK;
    }
    rc = sl__tensor_alloc(&res, ctx->pool, SL_FLOAT32, in->ndim, in->shape);
    if (rc != SL_OK) {
        char buf[96];
        sl__errf(ctx->err, rc, "rescale: cannot allocate a float32 tensor %s",
                 sl_shape_str(buf, sizeof buf, in->ndim, in->shape));
        sl_tensor_release(in);
        return rc;
    }
    rescale_kernel(res->data, in->data, in->dtype, in->numel, r->rescale, r->shift);
    sl_tensor_release(in);
    *out = res;
    return SL_OK;
}

static const sl_op_iface rescale_iface = {
    .name = "rescale",
    .infer = rescale_infer,
    .run = rescale_run,
    .destroy = NULL,
};

int sl__op_rescale_params(const sl_op *op, float *rescale, float *shift)
{
    const rescale_op *r = (const rescale_op *)op;
    if (op->iface != &rescale_iface)
        return 0;
    *rescale = r->rescale;
    *shift = r->shift;
    return 1;
}

int sl_op_rescale_new(sl_op **out, double rescale, double shift, char *err, size_t err_len)
{
    rescale_op *r;
    int rc;
    *out = NULL;
    /* Both must be finite as float32 too. */
    if (!(fabs(rescale) <= FLT_MAX) || !(fabs(shift) <= FLT_MAX))
        return sl__err_out(err, err_len, SL_EINVAL,
                           "rescale: rescale and shift must be finite float32 values, got %g "
                           "and %g",
                           rescale, shift);
    rc = sl__op_alloc(out, sizeof *r, &rescale_iface, 0);
    if (rc != SL_OK)
        return sl__err_out(err, err_len, rc, "rescale: out of memory");
    r = (rescale_op *)*out;
    r->rescale = (float)rescale;
    r->shift = (float)shift;
    return SL_OK;
}
