/* resize.c: the Resize op, (H, W, C) or (H, W) uint8/float32 images to a fixed
 * (height, width), bilinear or nearest, with OpenCV's pixel conventions, and
 * the op that fuses a bilinear Resize with the Rescales after it.
 *
 * Bilinear follows cv::resize INTER_LINEAR: a destination pixel d maps to the
 * source coordinate s = (d + 0.5) * in/out - 0.5. Along x, s below 0 is
 * clamped to pixel 0 with weight 0, and s at or past the last pixel to the
 * last pixel. Along y OpenCV does not clamp the weight; it clamps the two
 * source rows into the image instead. uint8 images use OpenCV's fixed-point
 * arithmetic, in resize_u8.c; float32 images use float weights, here.
 * Nearest follows INTER_NEAREST: s = floor(d * in/out), clamped to in - 1.
 * Bicubic follows INTER_CUBIC, in resize_cubic.c.
 *
 * The work is separable: each needed source row is resampled horizontally
 * once into a row buffer (two are kept, so a row shared by consecutive
 * output rows is not recomputed), then pairs of rows are blended vertically.
 * Index and weight tables are built once per call in a stack buffer, or in a
 * pool block for very wide outputs. */
#include "ops/op_impl.h"
#include "ops/vision/resize_impl.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

/* Outputs up to this wide (and rows up to this many elements) keep their
 * tables and row buffers on the stack (14 KiB); wider ones use a pool block. */
#define RESIZE_STACK_W 256
#define RESIZE_STACK_ROW 1024
#define RESIZE_MAX_SIDE INT32_MAX

typedef struct resize_op {
    sl_op base;
    int64_t height;
    int64_t width;
    sl_interp interp;
    _Atomic(sl__resize_plan *) plan; /* uint8 bilinear plan of the first input size */
} resize_op;

/* Horizontal resampling tables for bilinear: output column x blends the
 * source elements at ofs[x] and ofs[x] + step (offsets already multiplied by
 * C; step is C, or 0 for a one-pixel-wide source) with weights w0[x] and
 * w1[x]. */
typedef struct resize_xtab {
    size_t *ofs;  /* (out_w,) */
    float *w0;    /* (out_w,) */
    float *w1;    /* (out_w,) */
    size_t step;
} resize_xtab;


/* The uint8 path keeps its two int16 rows and one uint8 row
 * (u8_scratch_size) in the room of the two float rows. */
_Static_assert(2 * sizeof(int16_t) + 1 <= 2 * sizeof(float), "row scratch is shared");

static int resize_check(const char *name, int ndim, const int64_t *shape, sl_dtype dtype,
                        int64_t *h, int64_t *w, int64_t *c, sl__error *err)
{
    char buf[96];
    int rc = sl__image_dims(name, ndim, shape, dtype, h, w, c, err);
    if (rc != SL_OK)
        return rc;
    if (dtype != SL_UINT8 && dtype != SL_FLOAT32)
        return sl__errf(err, SL_ESHAPE, "%s: expected a uint8 or float32 image, got %s %s", name,
                        sl_dtype_name(dtype), sl_shape_str(buf, sizeof buf, ndim, shape));
    if (*h == 0 || *w == 0 || *c == 0)
        return sl__errf(err, SL_ESHAPE, "%s: cannot resize an empty image %s %s", name,
                        sl_dtype_name(dtype), sl_shape_str(buf, sizeof buf, ndim, shape));
    return SL_OK;
}

static int resize_infer(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                        sl__error *err)
{
    const resize_op *r = (const resize_op *)op;
    int64_t h, w, c;
    int rc = resize_check("resize", in->ndim, in->shape, in->dtype, &h, &w, &c, err);
    if (rc != SL_OK)
        return rc;
    *out = *in;
    out->shape[0] = r->height;
    out->shape[1] = r->width;
    return SL_OK;
}

/* Source index s0 and weight of its right/lower neighbour s0 + 1 for
 * destination index d, as OpenCV computes them for INTER_LINEAR. Where
 * OpenCV clamps to the last pixel with weight 0 we take the pixel before it
 * with weight 1: the same value (for finite pixels), and the neighbour is
 * always s0 + 1 (for in >= 2), which saves the kernels a second index. */
static void linear_coord(int64_t d, double scale, int64_t in, int64_t *s0, float *frac)
{
    double f = ((double)d + 0.5) * scale - 0.5;
    int64_t s;
    float a;
    /* floor() is a libm call without SSE4.1; below 0 OpenCV clamps anyway,
     * and from 0 up truncation is floor. */
    if (f < 0) {
        s = 0;
        a = 0.0f;
    } else {
        s = (int64_t)f;
        a = (float)(f - (double)s);
    }
    if (s >= in - 1) {
        s = in >= 2 ? in - 2 : 0;
        a = in >= 2 ? 1.0f : 0.0f;
    }
    *s0 = s;
    *frac = a;
}

static void build_xtab(resize_xtab *t, int64_t in_w, int64_t out_w, int64_t c)
{
    /* OpenCV derives the scale as 1 / (out / in); keep its rounding. */
    double scale = 1.0 / ((double)out_w / (double)in_w);
    t->step = in_w >= 2 ? (size_t)c : 0;
    for (int64_t x = 0; x < out_w; x++) {
        int64_t s0;
        float a;
        linear_coord(x, scale, in_w, &s0, &a);
        t->ofs[x] = (size_t)(s0 * c);
        t->w0[x] = 1.0f - a;
        t->w1[x] = a;
    }
}

/* The op's cached plan when it fits this input; otherwise a new one, which
 * becomes the cached one if there is none yet (*owned tells the caller to
 * free it after use). The cached plan is never replaced, so readers need
 * no lock: it is published once and freed with the op. Without an op (r
 * NULL: a size that changes per image) the plan is always the caller's. */
static sl__resize_plan *plan_get(resize_op *r, int64_t in_h, int64_t in_w, int64_t c,
                                 int64_t out_h, int64_t out_w, int *owned)
{
    sl__resize_plan *p = r ? atomic_load_explicit(&r->plan, memory_order_acquire) : NULL;
    sl__resize_plan *expected = NULL;
    *owned = 0;
    if (p && p->in_h == in_h && p->in_w == in_w && p->c == c)
        return p;
    p = sl__resize_plan_new(in_h, in_w, c, out_h, out_w);
    if (!p)
        return NULL;
    if (!r || !atomic_compare_exchange_strong_explicit(&r->plan, &expected, p,
                                                       memory_order_acq_rel,
                                                       memory_order_acquire))
        *owned = 1;
    return p;
}

/* Per-call scratch for typical sizes, on the stack. */
typedef struct resize_stack {
    size_t ofs[RESIZE_STACK_W];
    float w0[RESIZE_STACK_W];
    float w1[RESIZE_STACK_W];
    float rows[2 * RESIZE_STACK_ROW];
} resize_stack;

static void hresize_f32(float *restrict row, const float *restrict src, const resize_xtab *t,
                        size_t out_w, size_t c)
{
    size_t step = t->step;
    if (c == 1) {
        for (size_t x = 0; x < out_w; x++) {
            const float *p = src + t->ofs[x];
            row[x] = p[0] * t->w0[x] + p[step] * t->w1[x];
        }
        return;
    }
    for (size_t x = 0; x < out_w; x++) {
        const float *p = src + t->ofs[x];
        float w0 = t->w0[x], w1 = t->w1[x];
        for (size_t k = 0; k < c; k++)
            row[x * c + k] = p[k] * w0 + p[step + k] * w1;
    }
}

static void vresize_f32(float *restrict dst, const float *restrict r0,
                        const float *restrict r1, float b0, float b1, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (size_t j = i; j < i + 16; j++)
            dst[j] = r0[j] * b0 + r1[j] * b1;
    for (; i < n; i++)
        dst[i] = r0[i] * b0 + r1[i] * b1;
}

/* in (in_h, in_w, c) -> out (out_h, out_w, c), float32 bilinear; rows is
 * scratch for two resampled rows of out_w * c floats each. */
static void resize_bilinear_f32(sl_tensor *out, const sl_tensor *in, int64_t in_h, int64_t in_w,
                                int64_t out_h, int64_t out_w, int64_t c, const resize_xtab *t,
                                float *rows)
{
    size_t row_n = (size_t)out_w * (size_t)c;
    size_t in_row = (size_t)in_w * (size_t)c;
    double scale = 1.0 / ((double)out_h / (double)in_h);
    float *r0 = rows, *r1 = rows + row_n;
    int64_t k0 = -1, k1 = -1; /* the source rows r0 and r1 hold */

    for (int64_t y = 0; y < out_h; y++) {
        int64_t s0, s1;
        float b;
        const float *lower;
        linear_coord(y, scale, in_h, &s0, &b);
        s1 = in_h >= 2 ? s0 + 1 : s0;
        if (k0 != s0) {
            if (k1 == s0) {
                float *tmp = r0;
                r0 = r1;
                r1 = tmp;
                k1 = k0;
                k0 = s0;
            } else {
                hresize_f32(r0, (const float *)in->data + (size_t)s0 * in_row, t,
                            (size_t)out_w, (size_t)c);
                k0 = s0;
            }
        }
        if (s1 == s0) {
            lower = r0; /* a one-row source */
        } else {
            if (k1 != s1) {
                hresize_f32(r1, (const float *)in->data + (size_t)s1 * in_row, t,
                            (size_t)out_w, (size_t)c);
                k1 = s1;
            }
            lower = r1;
        }
        vresize_f32((float *)out->data + (size_t)y * row_n, r0, lower, 1.0f - b, b, row_n);
    }
}

/* int16 elements of stack scratch for the fused op: rows up to
 * RESIZE_STACK_ROW elements. */
enum {
    u8_stack_elems = (2 * RESIZE_STACK_ROW * sizeof(int16_t) + RESIZE_STACK_ROW) / sizeof(int16_t)
};

/* in (in_h, in_w, c) -> out (out_h, out_w, c), nearest; ofs is (out_w,)
 * scratch for the source element offset of every output column. */
static void resize_nearest(sl_tensor *out, const sl_tensor *in, int64_t in_h, int64_t in_w,
                           int64_t out_h, int64_t out_w, int64_t c, size_t *ofs)
{
    double fx = 1.0 / ((double)out_w / (double)in_w);
    double fy = 1.0 / ((double)out_h / (double)in_h);
    size_t row_n = (size_t)out_w * (size_t)c;
    size_t in_row = (size_t)in_w * (size_t)c;
    size_t cn = (size_t)c;

    /* The products are >= 0, so truncation is OpenCV's floor. */
    for (int64_t x = 0; x < out_w; x++) {
        int64_t s = (int64_t)((double)x * fx);
        ofs[x] = (size_t)(s < in_w - 1 ? s : in_w - 1) * cn;
    }
    for (int64_t y = 0; y < out_h; y++) {
        int64_t sy = (int64_t)((double)y * fy);
        size_t src_row = (size_t)(sy < in_h - 1 ? sy : in_h - 1) * in_row;
        if (in->dtype == SL_UINT8) {
            const uint8_t *src = (const uint8_t *)in->data + src_row;
            uint8_t *dst = (uint8_t *)out->data + (size_t)y * row_n;
            for (size_t x = 0; x < (size_t)out_w; x++)
                for (size_t k = 0; k < cn; k++)
                    dst[x * cn + k] = src[ofs[x] + k];
        } else {
            const float *src = (const float *)in->data + src_row;
            float *dst = (float *)out->data + (size_t)y * row_n;
            for (size_t x = 0; x < (size_t)out_w; x++)
                for (size_t k = 0; k < cn; k++)
                    dst[x * cn + k] = src[ofs[x] + k];
        }
    }
}

static void free_scratch(sl__op_ctx *ctx, void *block)
{
    if (block && ctx->pool)
        sl__pool_free(ctx->pool, block);
    else
        free(block);
}

/* in resized to (out_h, out_w) with interp; messages name the op `name`;
 * r (NULL: none) is the Resize op whose cached plan may serve. */
static int resize_to(resize_op *r, const char *name, sl_tensor *in, int64_t out_h,
                     int64_t out_w, sl_interp interp, sl_tensor **out, sl__op_ctx *ctx)
{
    resize_stack stack;
    void *block = NULL; /* scratch for wide outputs: pool block, or heap without a pool */
    resize_xtab t;
    sl__resize_plan *plan = NULL;
    int plan_owned = 0;
    float *rows;
    size_t rows_size; /* bytes at rows */
    int64_t h, w, c, shape[3];
    size_t ow = (size_t)out_w, row_n;
    sl_tensor *res = NULL;
    int rc;

    *out = NULL;
    rc = resize_check(name, in->ndim, in->shape, in->dtype, &h, &w, &c, ctx->err);
    if (rc != SL_OK)
        goto fail;
    if (h == out_h && w == out_w) {
        *out = in; /* every interpolation is the identity at equal sizes */
        return SL_OK;
    }
    shape[0] = out_h;
    shape[1] = out_w;
    shape[2] = c;
    rc = sl__tensor_alloc(&res, ctx->pool, in->dtype, in->ndim, shape);
    if (rc != SL_OK) {
        sl__errf(ctx->err, rc, "%s: cannot allocate a (%lld, %lld, %lld) %s image", name,
                 (long long)out_h, (long long)out_w, (long long)c,
                 sl_dtype_name(in->dtype));
        goto fail;
    }
    if (interp == SL_INTER_CUBIC) {
        rc = sl__resize_cubic(res->data, in->data, in->dtype == SL_UINT8, h, w, c, out_h,
                              out_w);
        if (rc != SL_OK) {
            sl__errf(ctx->err, rc, "%s: cannot allocate the bicubic tables", name);
            goto fail;
        }
        sl_tensor_release(in);
        *out = res;
        return SL_OK;
    }
    /* The output exists, so out_w * c elements fit in memory and these
     * products cannot overflow. */
    row_n = ow * (size_t)c;
    if (ow <= RESIZE_STACK_W && row_n <= RESIZE_STACK_ROW) {
        t.ofs = stack.ofs;
        t.w0 = stack.w0;
        t.w1 = stack.w1;
        rows = stack.rows;
        rows_size = sizeof stack.rows;
    } else {
        size_t need = ow * (sizeof(size_t) + 2 * sizeof(float)) + 2 * row_n * sizeof(float);
        block = ctx->pool ? sl__pool_alloc(ctx->pool, need) : malloc(need);
        if (!block) {
            rc = sl__errf(ctx->err, SL_ENOMEM, "%s: cannot allocate %zu bytes of scratch",
                          name, need);
            goto fail;
        }
        t.ofs = block;
        t.w0 = (float *)(t.ofs + ow);
        t.w1 = t.w0 + ow;
        rows = t.w1 + ow;
        rows_size = 2 * row_n * sizeof(float);
    }
    if (interp == SL_INTER_NEAREST) {
        resize_nearest(res, in, h, w, out_h, out_w, c, t.ofs);
    } else if (in->dtype == SL_UINT8) {
        plan = plan_get(r, h, w, c, out_h, out_w, &plan_owned);
        if (!plan) {
            rc = sl__errf(ctx->err, SL_ENOMEM, "%s: cannot allocate its plan", name);
            goto fail;
        }
        /* the int16 rows fit in the room of the float rows */
        sl__resize_u8_rows(sl__resize_best_path(), res->data, in->data, plan, out_h, out_w,
                       NULL, rows, rows_size);
        if (plan_owned)
            free(plan);
    } else {
        build_xtab(&t, w, out_w, c);
        resize_bilinear_f32(res, in, h, w, out_h, out_w, c, &t, rows);
    }
    free_scratch(ctx, block);
    sl_tensor_release(in);
    *out = res;
    return SL_OK;

fail:
    free_scratch(ctx, block);
    sl_tensor_release(res);
    sl_tensor_release(in);
    return rc;
}

static int resize_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    resize_op *r = (resize_op *)op;
    return resize_to(r, "resize", in, r->height, r->width, r->interp, out, ctx);
}

int sl__resize_image(const char *name, sl_tensor *in, int64_t out_h, int64_t out_w,
                     sl_interp interp, sl_tensor **out, sl__op_ctx *ctx)
{
    return resize_to(NULL, name, in, out_h, out_w, interp, out, ctx);
}

static void resize_destroy(sl_op *op)
{
    free(atomic_load(&((resize_op *)op)->plan));
}

static const sl_op_iface resize_iface = {
    .name = "resize",
    .infer = resize_infer,
    .run = resize_run,
    .destroy = resize_destroy,
};

int sl_op_resize_new(sl_op **out, int64_t height, int64_t width, sl_interp interp, char *err,
                     size_t err_len)
{
    resize_op *r;
    int rc;
    *out = NULL;
    if (height <= 0 || width <= 0 || height > RESIZE_MAX_SIDE || width > RESIZE_MAX_SIDE)
        return sl__err_out(err, err_len, SL_EINVAL,
                           "resize: height and width must be in [1, %lld], got (%lld, %lld)",
                           (long long)RESIZE_MAX_SIDE, (long long)height, (long long)width);
    if (!sl__interp_valid(interp))
        return sl__err_out(err, err_len, SL_EINVAL,
                           "resize: interp must be SL_INTER_LINEAR, SL_INTER_NEAREST or "
                           "SL_INTER_CUBIC, got %d",
                           (int)interp);
    rc = sl__op_alloc(out, sizeof *r, &resize_iface, 0);
    if (rc != SL_OK)
        return sl__err_out(err, err_len, rc, "resize: out of memory");
    r = (resize_op *)*out;
    r->height = height;
    r->width = width;
    r->interp = interp;
    return SL_OK;
}

int sl__interp_valid(sl_interp interp)
{
    return interp == SL_INTER_LINEAR || interp == SL_INTER_NEAREST || interp == SL_INTER_CUBIC;
}

int sl__op_resize_is_linear(const sl_op *op)
{
    return op->iface == &resize_iface && ((const resize_op *)op)->interp == SL_INTER_LINEAR;
}

/* --- fused: bilinear Resize, then Rescales ---------------------------------
 * A uint8 image is resized straight into float32: the vertical pass turns
 * each uint8 result into float and runs the chain on it, so the pipeline
 * skips the uint8 image, a second pass and an allocation. The values are
 * those of the separate ops (same integer arithmetic, then the same float32
 * multiplies and adds in the same order). Anything else (float32 images,
 * equal sizes) runs the separate ops one after another. */
typedef struct resize_rescale_op {
    sl_op base;
    sl_op *resize;                              /* reference */
    sl_op *rescales[SL__RESCALE_FUSE_MAX];      /* (n,) references */
    sl__rescale_chain chain;                    /* their parameters */
} resize_rescale_op;

/* Runs the separate ops in turn, as a map would. */
static int resize_rescale_each(const resize_rescale_op *f, sl_tensor *in, sl_tensor **out,
                               sl__op_ctx *ctx)
{
    int rc = sl__op_run(f->resize, in, out, ctx);
    for (size_t k = 0; k < f->chain.n && rc == SL_OK; k++)
        rc = sl__op_run(f->rescales[k], *out, out, ctx);
    return rc;
}

static int resize_rescale_infer(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                                sl__error *err)
{
    const resize_rescale_op *f = (const resize_rescale_op *)op;
    int rc = sl__op_infer(f->resize, in, out, err);
    for (size_t k = 0; k < f->chain.n && rc == SL_OK; k++) {
        sl_tensor_spec mid = *out;
        rc = sl__op_infer(f->rescales[k], &mid, out, err);
    }
    return rc;
}

static int resize_rescale_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    const resize_rescale_op *f = (const resize_rescale_op *)op;
    resize_op *r = (resize_op *)f->resize;
    int16_t stack[u8_stack_elems]; /* scratch rows for typical widths */
    void *scratch = stack, *block = NULL;
    sl__resize_plan *plan;
    int plan_owned;
    int64_t h, w, c, shape[3];
    size_t row_n, need;
    sl_tensor *res = NULL;
    char buf[96];
    int rc;

    *out = NULL;
    if (in->dtype != SL_UINT8)
        return resize_rescale_each(f, in, out, ctx);
    /* the first thing Resize does, with its message */
    rc = resize_check("resize", in->ndim, in->shape, in->dtype, &h, &w, &c, ctx->err);
    if (rc != SL_OK) {
        sl_tensor_release(in);
        return rc;
    }
    if (h == r->height && w == r->width)
        return resize_rescale_each(f, in, out, ctx);
    shape[0] = r->height;
    shape[1] = r->width;
    shape[2] = c;
    rc = sl__tensor_alloc(&res, ctx->pool, SL_FLOAT32, in->ndim, shape);
    if (rc != SL_OK) {
        /* where the separate ops would need a float32 tensor: the first
         * Rescale's message */
        sl__errf(ctx->err, rc, "rescale: cannot allocate a float32 tensor %s",
                 sl_shape_str(buf, sizeof buf, in->ndim, shape));
        sl_tensor_release(in);
        return rc;
    }
    /* The output exists, so this product cannot overflow. */
    row_n = (size_t)r->width * (size_t)c;
    need = sl__resize_u8_scratch_size(row_n);
    if (need > sizeof stack) {
        block = ctx->pool ? sl__pool_alloc(ctx->pool, need) : malloc(need);
        if (!block) {
            rc = sl__errf(ctx->err, SL_ENOMEM, "resize: cannot allocate %zu bytes of scratch",
                          need);
            goto fail;
        }
        scratch = block;
    }
    plan = plan_get(r, h, w, c, r->height, r->width, &plan_owned);
    if (!plan) {
        rc = sl__errf(ctx->err, SL_ENOMEM, "resize: cannot allocate its plan");
        goto fail;
    }
    sl__resize_u8_rows(sl__resize_best_path(), res->data, in->data, plan, r->height, r->width,
                   &f->chain, scratch, block ? need : sizeof stack);
    if (plan_owned)
        free(plan);
    free_scratch(ctx, block);
    sl_tensor_release(in);
    *out = res;
    return SL_OK;

fail:
    free_scratch(ctx, block);
    sl_tensor_release(res);
    sl_tensor_release(in);
    return rc;
}

static void resize_rescale_destroy(sl_op *op)
{
    resize_rescale_op *f = (resize_rescale_op *)op;
    sl_op_release(f->resize);
    for (size_t k = 0; k < f->chain.n; k++)
        sl_op_release(f->rescales[k]);
}

static const sl_op_iface resize_rescale_iface = {
    .name = "resize+rescale",
    .infer = resize_rescale_infer,
    .run = resize_rescale_run,
    .destroy = resize_rescale_destroy,
};

int sl__op_resize_rescale_new(sl_op **out, sl_op *resize, sl_op *const *rescales, size_t n)
{
    resize_rescale_op *f;
    int rc;
    SL_ASSERT(sl__op_resize_is_linear(resize));
    SL_ASSERT(n >= 1 && n <= SL__RESCALE_FUSE_MAX);
    rc = sl__op_alloc(out, sizeof *f, &resize_rescale_iface, 0);
    if (rc != SL_OK)
        return rc;
    f = (resize_rescale_op *)*out;
    f->resize = sl_op_retain(resize);
    for (size_t k = 0; k < n; k++) {
        int is_rescale = sl__op_rescale_params(rescales[k], &f->chain.scale[k],
                                               &f->chain.shift[k]);
        SL_ASSERT(is_rescale);
        f->rescales[k] = sl_op_retain(rescales[k]);
        f->chain.n = k + 1;
    }
    return SL_OK;
}
