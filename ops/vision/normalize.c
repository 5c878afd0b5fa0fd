/* normalize.c: the Normalize op, (H, W, C) or (H, W) numeric images ->
 * float32 (x - mean[c]) / std[c]. The op keeps mean and 1/std as float per
 * channel, so the inner loop is a subtract and a multiply; a writable float32
 * input is normalized in place. */
#include "ops/op_impl.h"

#include <float.h>
#include <math.h>

typedef struct normalize_op {
    sl_op base;
    int channels;
    float coef[]; /* (2, channels): mean, then 1 / std */
} normalize_op;

static int normalize_check(const normalize_op *n, int ndim, const int64_t *shape,
                           sl_dtype dtype, sl__error *err)
{
    char buf[96];
    int64_t h, w, c;
    int rc = sl__image_dims("normalize", ndim, shape, dtype, &h, &w, &c, err);
    if (rc != SL_OK)
        return rc;
    if (sl_dtype_size(dtype) == 0)
        return sl__errf(err, SL_ESHAPE, "normalize: unknown input dtype %d", (int)dtype);
    if (c != -1 && c != n->channels)
        return sl__errf(err, SL_ESHAPE,
                        "normalize: mean/std have %d channel%s but the image %s %s has %lld",
                        n->channels, n->channels == 1 ? "" : "s", sl_dtype_name(dtype),
                        sl_shape_str(buf, sizeof buf, ndim, shape), (long long)c);
    return SL_OK;
}

static int normalize_infer(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                           sl__error *err)
{
    int rc = normalize_check((const normalize_op *)op, in->ndim, in->shape, in->dtype, err);
    if (rc != SL_OK)
        return rc;
    *out = *in;
    out->dtype = SL_FLOAT32;
    return SL_OK;
}

/* The one-channel loops run in blocks of a fixed 16 elements, which GCC
 * vectorizes at -O2 (its "very cheap" cost model skips loops of unknown trip
 * count); restrict, or one pointer in place, spares it alias checks. */

/* dst (npix, c) = (src - mean) * inv_std, src uint8. */
static void normalize_u8(float *restrict dst, const uint8_t *restrict src, size_t npix,
                         size_t c, const float *mean, const float *inv_std)
{
    if (c == 1) {
        float m = mean[0], s = inv_std[0];
        size_t i = 0;
        for (; i + 16 <= npix; i += 16)
            for (size_t j = i; j < i + 16; j++)
                dst[j] = ((float)src[j] - m) * s;
        for (; i < npix; i++)
            dst[i] = ((float)src[i] - m) * s;
        return;
    }
    for (size_t p = 0; p < npix; p++)
        for (size_t k = 0; k < c; k++)
            dst[p * c + k] = ((float)src[p * c + k] - mean[k]) * inv_std[k];
}

/* dst (npix, c) = (src - mean) * inv_std, src float32. */
static void normalize_f32(float *restrict dst, const float *restrict src, size_t npix,
                          size_t c, const float *mean, const float *inv_std)
{
    if (c == 1) {
        float m = mean[0], s = inv_std[0];
        size_t i = 0;
        for (; i + 16 <= npix; i += 16)
            for (size_t j = i; j < i + 16; j++)
                dst[j] = (src[j] - m) * s;
        for (; i < npix; i++)
            dst[i] = (src[i] - m) * s;
        return;
    }
    for (size_t p = 0; p < npix; p++)
        for (size_t k = 0; k < c; k++)
            dst[p * c + k] = (src[p * c + k] - mean[k]) * inv_std[k];
}

/* x (npix, c) = (x - mean) * inv_std in place. */
static void normalize_f32_inplace(float *x, size_t npix, size_t c, const float *mean,
                                  const float *inv_std)
{
    if (c == 1) {
        float m = mean[0], s = inv_std[0];
        size_t i = 0;
        for (; i + 16 <= npix; i += 16)
            for (size_t j = i; j < i + 16; j++)
                x[j] = (x[j] - m) * s;
        for (; i < npix; i++)
            x[i] = (x[i] - m) * s;
        return;
    }
    for (size_t p = 0; p < npix; p++)
        for (size_t k = 0; k < c; k++)
            x[p * c + k] = (x[p * c + k] - mean[k]) * inv_std[k];
}

/* Any other dtype: convert each element to float32 first. */
static void normalize_any(float *dst, const void *src, sl_dtype dtype, size_t npix, size_t c,
                          const float *mean, const float *inv_std)
{
    for (size_t p = 0; p < npix; p++)
        for (size_t k = 0; k < c; k++) {
            float x = (float)sl__load_as_double(src, dtype, p * c + k);
            dst[p * c + k] = (x - mean[k]) * inv_std[k];
        }
}

static int normalize_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    const normalize_op *n = (const normalize_op *)op;
    const float *mean = n->coef, *inv_std = n->coef + n->channels;
    size_t c = (size_t)n->channels, npix;
    sl_tensor *res;
    int rc;

    *out = NULL;
    rc = normalize_check(n, in->ndim, in->shape, in->dtype, ctx->err);
    if (rc != SL_OK) {
        sl_tensor_release(in);
        return rc;
    }
    npix = in->numel / c;
    if (in->dtype == SL_FLOAT32 && sl__tensor_writable(in)) {
        normalize_f32_inplace(in->data, npix, c, mean, inv_std);
        *out = in;
        return SL_OK;
    }
    rc = sl__tensor_alloc(&res, ctx->pool, SL_FLOAT32, in->ndim, in->shape);
    if (rc != SL_OK) {
        char buf[96];
        sl__errf(ctx->err, rc, "normalize: cannot allocate a float32 tensor %s",
                 sl_shape_str(buf, sizeof buf, in->ndim, in->shape));
        sl_tensor_release(in);
        return rc;
    }
    if (in->dtype == SL_UINT8)
        normalize_u8(res->data, in->data, npix, c, mean, inv_std);
    else if (in->dtype == SL_FLOAT32)
        normalize_f32(res->data, in->data, npix, c, mean, inv_std);
    else
        normalize_any(res->data, in->data, in->dtype, npix, c, mean, inv_std);
    sl_tensor_release(in);
    *out = res;
    return SL_OK;
}

static const sl_op_iface normalize_iface = {
    .name = "normalize",
    .infer = normalize_infer,
    .run = normalize_run,
    .destroy = NULL,
};

int sl_op_normalize_new(sl_op **out, const double *mean, const double *std, int channels,
                        char *err, size_t err_len)
{
    normalize_op *n;
    int rc;
    *out = NULL;
    if (!mean || !std)
        return sl__err_out(err, err_len, SL_EINVAL, "normalize: mean and std must be given");
    if (channels <= 0 || channels > (1 << 20))
        return sl__err_out(err, err_len, SL_EINVAL,
                           "normalize: channels must be in [1, 2^20], got %d", channels);
    for (int k = 0; k < channels; k++) {
        if (!(fabs(mean[k]) <= FLT_MAX))
            return sl__err_out(err, err_len, SL_EINVAL,
                               "normalize: mean[%d] must be a finite float32, got %g", k,
                               mean[k]);
        /* std must be a positive float32 whose reciprocal is finite too. */
        if (!(std[k] > 0) || !((float)std[k] >= FLT_MIN) || !(std[k] <= FLT_MAX))
            return sl__err_out(err, err_len, SL_EINVAL,
                               "normalize: std[%d] must be a positive float32 whose "
                               "reciprocal is finite, got %g",
                               k, std[k]);
    }
    rc = sl__op_alloc(out, sizeof *n + 2 * (size_t)channels * sizeof(float), &normalize_iface,
                      0);
    if (rc != SL_OK)
        return sl__err_out(err, err_len, rc, "normalize: out of memory");
    n = (normalize_op *)*out;
    n->channels = channels;
    for (int k = 0; k < channels; k++) {
        n->coef[k] = (float)mean[k];
        n->coef[channels + k] = 1.0f / (float)std[k];
    }
    return SL_OK;
}

int sl__op_normalize_params(const sl_op *op, int *channels, const float **mean,
                            const float **inv_std)
{
    const normalize_op *n = (const normalize_op *)op;
    if (op->iface != &normalize_iface)
        return 0;
    *channels = n->channels;
    *mean = n->coef;
    *inv_std = n->coef + n->channels;
    return 1;
}
