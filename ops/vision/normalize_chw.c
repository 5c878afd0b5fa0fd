/* normalize_chw.c: [RandomHorizontalFlip,] Normalize, HWC2CHW fused into
 * one pass, planned by sl__op_fuse: a uint8 (H, W, C) image becomes the
 * float32 (C, H, W) image of the separate ops, each value read once from
 * the (maybe mirrored) source and written once, where the separate ops
 * would flip in place, write a float HWC image, then transpose it. The
 * values are the separate ops' bit for bit (the same float32 subtract and
 * multiply), and the flip draws from the generator the separate flip would
 * have had (it is the first op fused, so the map seeds the fused op as it).
 * Anything else (another dtype, a channel count Normalize refuses, a rank
 * HWC2CHW refuses) runs the separate ops one after another, with their
 * messages. When a batch follows in the same stage, the float image is
 * written straight into the row's slot of the batch (sl__op_output), so
 * there is no per-sample float image to allocate and copy. */
#include "ops/op_impl.h"

#include <stdio.h>

typedef struct normalize_chw_op {
    sl_op base;
    sl_op *ops[3]; /* references: [flip,] normalize, hwc2chw */
    size_t nops;
    int has_flip;
    double p;
    int channels;
    const float *mean, *inv_std; /* the Normalize op's, which we hold */
    char name[64];
} normalize_chw_op;

static int each(const normalize_chw_op *f, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    int rc = SL_OK;
    *out = in;
    for (size_t k = 0; k < f->nops && rc == SL_OK; k++)
        rc = sl__op_run(f->ops[k], *out, out, ctx);
    return rc;
}

static int normalize_chw_infer(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                               sl__error *err)
{
    const normalize_chw_op *f = (const normalize_chw_op *)op;
    sl_tensor_spec mid = *in;
    int rc = SL_OK;
    for (size_t k = 0; k < f->nops && rc == SL_OK; k++) {
        rc = sl__op_infer(f->ops[k], &mid, out, err);
        mid = *out;
    }
    return rc;
}

static int normalize_chw_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    const normalize_chw_op *f = (const normalize_chw_op *)op;
    int64_t h, w, c, shape[3];
    size_t plane;
    sl_tensor *res;
    int flip;
    char buf[96];
    int rc;

    *out = NULL;
    if (in->ndim != 3 || in->dtype != SL_UINT8 || in->shape[2] != f->channels)
        return each(f, in, out, ctx);
    h = in->shape[0];
    w = in->shape[1];
    c = in->shape[2];
    /* the separate flip draws first, whatever the image */
    flip = f->has_flip && sl__rng_uniform(&ctx->rng) < f->p;
    shape[0] = c;
    shape[1] = h;
    shape[2] = w;
    rc = sl__op_output(ctx, &res, SL_FLOAT32, 3, shape);
    if (rc != SL_OK) {
        /* where the separate ops would first need a float32 tensor */
        sl__errf(ctx->err, rc, "normalize: cannot allocate a float32 tensor %s",
                 sl_shape_str(buf, sizeof buf, in->ndim, in->shape));
        sl_tensor_release(in);
        return rc;
    }
    plane = (size_t)h * (size_t)w;
    if (c == 3) {
        /* one pass over each row, its pixels read in order and the three
         * planes written in order */
        float m0 = f->mean[0], m1 = f->mean[1], m2 = f->mean[2];
        float s0 = f->inv_std[0], s1 = f->inv_std[1], s2 = f->inv_std[2];
        for (int64_t y = 0; y < h; y++) {
            const uint8_t *src = (const uint8_t *)in->data + (size_t)y * (size_t)w * 3;
            float *d0 = (float *)res->data + (size_t)y * (size_t)w, *d1 = d0 + plane,
                  *d2 = d1 + plane;
            for (int64_t x = 0; x < w; x++) {
                int64_t dx = flip ? w - 1 - x : x;
                d0[dx] = ((float)src[3 * x] - m0) * s0;
                d1[dx] = ((float)src[3 * x + 1] - m1) * s1;
                d2[dx] = ((float)src[3 * x + 2] - m2) * s2;
            }
        }
        sl_tensor_release(in);
        *out = res;
        return SL_OK;
    }
    for (int64_t k = 0; k < c; k++) {
        float m = f->mean[k], s = f->inv_std[k];
        float *dst = (float *)res->data + (size_t)k * plane;
        for (int64_t y = 0; y < h; y++) {
            const uint8_t *src = (const uint8_t *)in->data + (size_t)y * (size_t)w * (size_t)c + k;
            float *d = dst + (size_t)y * (size_t)w;
            if (flip)
                for (int64_t x = 0; x < w; x++)
                    d[x] = ((float)src[(size_t)(w - 1 - x) * (size_t)c] - m) * s;
            else
                for (int64_t x = 0; x < w; x++)
                    d[x] = ((float)src[(size_t)x * (size_t)c] - m) * s;
        }
    }
    sl_tensor_release(in);
    *out = res;
    return SL_OK;
}

static void normalize_chw_destroy(sl_op *op)
{
    normalize_chw_op *f = (normalize_chw_op *)op;
    for (size_t k = 0; k < f->nops; k++)
        sl_op_release(f->ops[k]);
}

static const sl_op_iface normalize_chw_iface = {
    .name = "normalize+hwc2chw",
    .infer = normalize_chw_infer,
    .run = normalize_chw_run,
    .destroy = normalize_chw_destroy,
};

const char *sl__op_normalize_chw_name(const sl_op *op)
{
    return op->iface == &normalize_chw_iface ? ((const normalize_chw_op *)op)->name : NULL;
}

int sl__op_fuse_normalize_chw(sl_op *const *ops, size_t n, sl_op **fused, size_t *used)
{
    normalize_chw_op *f;
    double p = 0;
    int has_flip, channels, rc;
    const float *mean, *inv_std;
    size_t k;

    *fused = NULL;
    *used = 0;
    has_flip = n >= 1 && sl__op_flip_prob(ops[0], &p);
    k = has_flip ? 1 : 0;
    if (k + 2 > n || !sl__op_normalize_params(ops[k], &channels, &mean, &inv_std) ||
        !sl__op_is_hwc2chw(ops[k + 1]))
        return SL_OK;
    rc = sl__op_alloc(fused, sizeof *f, &normalize_chw_iface, has_flip);
    if (rc != SL_OK)
        return rc;
    f = (normalize_chw_op *)*fused;
    for (size_t i = 0; i < k + 2; i++)
        f->ops[f->nops++] = sl_op_retain(ops[i]);
    f->has_flip = has_flip;
    f->p = p;
    f->channels = channels;
    f->mean = mean;
    f->inv_std = inv_std;
    snprintf(f->name, sizeof f->name, "%snormalize+hwc2chw",
             has_flip ? "random_horizontal_flip+" : "");
    *used = k + 2;
    return SL_OK;
}
