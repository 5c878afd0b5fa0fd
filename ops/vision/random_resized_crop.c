/* random_resized_crop.c: the RandomResizedCrop op. A box is drawn as
 * torchvision's RandomResizedCrop.get_params draws it (and MindSpore's
 * RandomCropAndResize, up to its rounding): up to max_attempts times an
 * area fraction s uniform in [scale_min, scale_max) and a ratio
 * r = exp(u), u uniform in [log ratio_min, log ratio_max), give
 * width = round(sqrt(H*W*s*r)) and height = round(sqrt(H*W*s/r)) (round
 * half to even, as Python's round); the first box that fits is placed at
 * top = below(H - height + 1), then left = below(W - width + 1). If none
 * fits, the fallback is the whole image with its ratio clamped into
 * [ratio_min, ratio_max], centred (offsets floored). The draws come from
 * the sample's generator in that order, in double precision.
 *
 * The box is copied out and resized to (height, width) as Resize does, so
 * the result equals RandomCrop-at-the-box followed by Resize, value for
 * value. */
#include "ops/op_impl.h"

#include <math.h>
#include <string.h>

#define RRC_MAX_SIDE INT32_MAX
#define RRC_MAX_ATTEMPTS 1000

typedef struct rrc_op {
    sl_op base;
    int64_t height, width;
    double scale[2];
    double log_ratio[2];
    double ratio[2];
    sl_interp interp;
    int attempts;
} rrc_op;

static const sl_op_iface rrc_iface;

static double uniform_in(sl_rng *rng, double lo, double hi)
{
    return lo + (hi - lo) * sl__rng_uniform(rng);
}

void sl__rrc_draw_box(const sl_op *op, int64_t h, int64_t w, sl_rng *rng, int64_t box[4])
{
    const rrc_op *r = (const rrc_op *)op;
    double area = (double)h * (double)w, in_ratio;
    int64_t bh, bw;
    SL_ASSERT(op->iface == &rrc_iface && h >= 1 && w >= 1);
    for (int a = 0; a < r->attempts; a++) {
        double target = area * uniform_in(rng, r->scale[0], r->scale[1]);
        double ratio = exp(uniform_in(rng, r->log_ratio[0], r->log_ratio[1]));
        double fw = rint(sqrt(target * ratio)), fh = rint(sqrt(target / ratio));
        if (fw > 0 && fw <= (double)w && fh > 0 && fh <= (double)h) {
            bw = (int64_t)fw;
            bh = (int64_t)fh;
            box[0] = (int64_t)sl__rng_below(rng, (uint64_t)(h - bh + 1));
            box[1] = (int64_t)sl__rng_below(rng, (uint64_t)(w - bw + 1));
            box[2] = bh;
            box[3] = bw;
            return;
        }
    }
    /* The fallback: the largest centred box whose ratio is in range. */
    in_ratio = (double)w / (double)h;
    if (in_ratio < r->ratio[0]) {
        bw = w;
        bh = (int64_t)rint((double)w / r->ratio[0]);
    } else if (in_ratio > r->ratio[1]) {
        bh = h;
        bw = (int64_t)rint((double)h * r->ratio[1]);
    } else {
        bw = w;
        bh = h;
    }
    /* A 1-pixel side with an extreme ratio may round to 0. */
    bh = bh < 1 ? 1 : bh > h ? h : bh;
    bw = bw < 1 ? 1 : bw > w ? w : bw;
    box[0] = (h - bh) / 2;
    box[1] = (w - bw) / 2;
    box[2] = bh;
    box[3] = bw;
}

int sl__op_is_random_resized_crop(const sl_op *op)
{
    return op->iface == &rrc_iface;
}

void sl__rrc_size(const sl_op *op, int64_t *height, int64_t *width, sl_interp *interp)
{
    const rrc_op *r = (const rrc_op *)op;
    *height = r->height;
    *width = r->width;
    *interp = r->interp;
}

static int rrc_check(int ndim, const int64_t *shape, sl_dtype dtype, int64_t *h, int64_t *w,
                     int64_t *c, sl__error *err)
{
    char buf[96];
    int rc = sl__image_dims("random_resized_crop", ndim, shape, dtype, h, w, c, err);
    if (rc != SL_OK)
        return rc;
    if (dtype != SL_UINT8 && dtype != SL_FLOAT32)
        return sl__errf(err, SL_ESHAPE,
                        "random_resized_crop: expected a uint8 or float32 image, got %s %s",
                        sl_dtype_name(dtype), sl_shape_str(buf, sizeof buf, ndim, shape));
    if (*h == 0 || *w == 0 || *c == 0)
        return sl__errf(err, SL_ESHAPE, "random_resized_crop: cannot crop an empty image %s %s",
                        sl_dtype_name(dtype), sl_shape_str(buf, sizeof buf, ndim, shape));
    return SL_OK;
}

static int rrc_infer(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                     sl__error *err)
{
    const rrc_op *r = (const rrc_op *)op;
    int64_t h, w, c;
    int rc = rrc_check(in->ndim, in->shape, in->dtype, &h, &w, &c, err);
    if (rc != SL_OK)
        return rc;
    *out = *in;
    out->shape[0] = r->height;
    out->shape[1] = r->width;
    return SL_OK;
}

int sl__crop_copy(const char *name, sl_tensor *in, const int64_t box[4], sl_tensor **out,
                  sl__op_ctx *ctx)
{
    int64_t h = in->shape[0], w = in->shape[1], c = in->ndim == 3 ? in->shape[2] : 1;
    int64_t shape[3];
    size_t px = (size_t)c * sl_dtype_size(in->dtype), in_row = (size_t)w * px;
    size_t out_row = (size_t)box[3] * px;
    sl_tensor *res;
    char buf[96];
    int rc;

    *out = NULL;
    if (box[0] == 0 && box[1] == 0 && box[2] == h && box[3] == w) {
        *out = in; /* the box is the image */
        return SL_OK;
    }
    shape[0] = box[2];
    shape[1] = box[3];
    shape[2] = c;
    rc = sl__tensor_alloc(&res, ctx->pool, in->dtype, in->ndim, shape);
    if (rc != SL_OK) {
        sl__errf(ctx->err, rc, "%s: cannot allocate a %s tensor %s", name,
                 sl_dtype_name(in->dtype), sl_shape_str(buf, sizeof buf, in->ndim, shape));
        sl_tensor_release(in);
        return rc;
    }
    for (int64_t y = 0; y < box[2]; y++)
        memcpy((unsigned char *)res->data + (size_t)y * out_row,
               (const unsigned char *)in->data + (size_t)(y + box[0]) * in_row +
                   (size_t)box[1] * px,
               out_row);
    sl_tensor_release(in);
    *out = res;
    return SL_OK;
}

static int rrc_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    const rrc_op *r = (const rrc_op *)op;
    int64_t h, w, c, box[4];
    sl_tensor *crop;
    int rc;

    *out = NULL;
    rc = rrc_check(in->ndim, in->shape, in->dtype, &h, &w, &c, ctx->err);
    if (rc != SL_OK) {
        sl_tensor_release(in);
        return rc;
    }
    sl__rrc_draw_box(op, h, w, &ctx->rng, box);
    rc = sl__crop_copy("random_resized_crop", in, box, &crop, ctx);
    if (rc != SL_OK)
        return rc;
    return sl__resize_image("random_resized_crop", crop, r->height, r->width, r->interp, out,
                            ctx);
}

static const sl_op_iface rrc_iface = {
    .name = "random_resized_crop",
    .infer = rrc_infer,
    .run = rrc_run,
    .destroy = NULL,
};

int sl_op_random_resized_crop_new(sl_op **out, int64_t height, int64_t width, double scale_min,
                                  double scale_max, double ratio_min, double ratio_max,
                                  sl_interp interp, int max_attempts, char *err, size_t err_len)
{
    rrc_op *r;
    int rc;
    *out = NULL;
    if (height <= 0 || width <= 0 || height > RRC_MAX_SIDE || width > RRC_MAX_SIDE)
        return sl__err_out(err, err_len, SL_EINVAL,
                           "random_resized_crop: height and width must be in [1, %lld], got "
                           "(%lld, %lld)",
                           (long long)RRC_MAX_SIDE, (long long)height, (long long)width);
    if (!(scale_min >= 0.0 && scale_min <= scale_max && scale_max > 0.0 && isfinite(scale_max)))
        return sl__err_out(err, err_len, SL_EINVAL,
                           "random_resized_crop: scale must be (min, max) with 0 <= min <= max "
                           "and max > 0, got (%g, %g)",
                           scale_min, scale_max);
    if (!(ratio_min > 0.0 && ratio_min <= ratio_max && isfinite(ratio_max)))
        return sl__err_out(err, err_len, SL_EINVAL,
                           "random_resized_crop: ratio must be (min, max) with 0 < min <= max, "
                           "got (%g, %g)",
                           ratio_min, ratio_max);
    if (!sl__interp_valid(interp))
        return sl__err_out(err, err_len, SL_EINVAL,
                           "random_resized_crop: interp must be SL_INTER_LINEAR, "
                           "SL_INTER_NEAREST or SL_INTER_CUBIC, got %d",
                           (int)interp);
    if (max_attempts < 1 || max_attempts > RRC_MAX_ATTEMPTS)
        return sl__err_out(err, err_len, SL_EINVAL,
                           "random_resized_crop: max_attempts must be in [1, %d], got %d",
                           RRC_MAX_ATTEMPTS, max_attempts);
    rc = sl__op_alloc(out, sizeof *r, &rrc_iface, 1);
    if (rc != SL_OK)
        return sl__err_out(err, err_len, rc, "random_resized_crop: out of memory");
    r = (rrc_op *)*out;
    r->height = height;
    r->width = width;
    r->scale[0] = scale_min;
    r->scale[1] = scale_max;
    r->ratio[0] = ratio_min;
    r->ratio[1] = ratio_max;
    r->log_ratio[0] = log(ratio_min);
    r->log_ratio[1] = log(ratio_max);
    r->interp = interp;
    r->attempts = max_attempts;
    return SL_OK;
}

int sl_op_random_resized_crop_box(const sl_op *op, int64_t h, int64_t w, uint64_t seed,
                                  int64_t box[4], char *err, size_t err_len)
{
    sl_rng rng;
    if (!op || op->iface != &rrc_iface)
        return sl__err_out(err, err_len, SL_EINVAL,
                           "random_resized_crop: the box of a '%s' op was asked for",
                           op ? sl_op_name(op) : "NULL");
    if (h < 1 || w < 1 || h > RRC_MAX_SIDE || w > RRC_MAX_SIDE)
        return sl__err_out(err, err_len, SL_EINVAL,
                           "random_resized_crop: image sides must be in [1, %lld], got "
                           "(%lld, %lld)",
                           (long long)RRC_MAX_SIDE, (long long)h, (long long)w);
    /* as sl_op_apply seeds it */
    sl__rng_seed(&rng, seed, 0, 0, 0);
    sl__rrc_draw_box(op, h, w, &rng, box);
    return SL_OK;
}
