/* random_flip.c: the RandomHorizontalFlip and RandomVerticalFlip ops. With
 * probability p (an sl__rng_uniform draw < p) an (H, W, C) or (H, W) image
 * of any dtype is mirrored left-right (pixels keeping their channel order)
 * or upside down; otherwise the input comes back untouched. A writable
 * input is flipped in place. Pixels move as bytes, with constant-size
 * memcpy for the common pixel sizes so the compiler emits plain loads and
 * stores; rows move whole.
 *
 * The horizontal flip decides on the stream's first draw, the vertical one
 * on its second: the pipeline seeds each op of a map apart anyway, but an
 * op called directly with a seed (sl_op_apply, Python's op(x, seed)) gets
 * the same stream as any other, and the two decisions must not be the same
 * coin. */
#include "ops/op_impl.h"

#include <string.h>

typedef struct random_flip_op {
    sl_op base;
    double p;
} random_flip_op;

static int random_flip_check(const sl_op *op, int ndim, const int64_t *shape, sl_dtype dtype,
                             int64_t *h, int64_t *w, int64_t *c, sl__error *err)
{
    const char *name = op->iface->name;
    int rc = sl__image_dims(name, ndim, shape, dtype, h, w, c, err);
    if (rc != SL_OK)
        return rc;
    if (sl_dtype_size(dtype) == 0)
        return sl__errf(err, SL_ESHAPE, "%s: unknown input dtype %d", name, (int)dtype);
    return SL_OK;
}

static int random_flip_infer(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                             sl__error *err)
{
    int64_t h, w, c;
    int rc = random_flip_check(op, in->ndim, in->shape, in->dtype, &h, &w, &c, err);
    if (rc != SL_OK)
        return rc;
    *out = *in;
    return SL_OK;
}

/* dst row (w pixels of px bytes) = src row mirrored; dst != src. */
static void flip_row_copy(unsigned char *dst, const unsigned char *src, size_t w, size_t px)
{
    switch (px) {
    case 1:
        for (size_t x = 0; x < w; x++)
            dst[x] = src[w - 1 - x];
        break;
    case 3:
        for (size_t x = 0; x < w; x++)
            memcpy(dst + 3 * x, src + 3 * (w - 1 - x), 3);
        break;
    case 4:
        for (size_t x = 0; x < w; x++)
            memcpy(dst + 4 * x, src + 4 * (w - 1 - x), 4);
        break;
    default:
        for (size_t x = 0; x < w; x++)
            memcpy(dst + px * x, src + px * (w - 1 - x), px);
        break;
    }
}

/* Swaps pixels a and b of px bytes through a small buffer. */
static void swap_pixel(unsigned char *a, unsigned char *b, size_t px)
{
    unsigned char tmp[64];
    while (px > 0) {
        size_t n = px < sizeof tmp ? px : sizeof tmp;
        memcpy(tmp, a, n);
        memcpy(a, b, n);
        memcpy(b, tmp, n);
        a += n;
        b += n;
        px -= n;
    }
}

/* Mirrors a row of w pixels of px bytes in place. */
static void flip_row_inplace(unsigned char *row, size_t w, size_t px)
{
    switch (px) {
    case 1:
        for (size_t x = 0; x < w / 2; x++) {
            unsigned char t = row[x];
            row[x] = row[w - 1 - x];
            row[w - 1 - x] = t;
        }
        break;
    case 4:
        for (size_t x = 0; x < w / 2; x++) {
            unsigned char t[4];
            memcpy(t, row + 4 * x, 4);
            memcpy(row + 4 * x, row + 4 * (w - 1 - x), 4);
            memcpy(row + 4 * (w - 1 - x), t, 4);
        }
        break;
    default:
        for (size_t x = 0; x < w / 2; x++)
            swap_pixel(row + px * x, row + px * (w - 1 - x), px);
        break;
    }
}

/* The image (h rows of row bytes) upside down: rows swapped in place when
 * dst == src, else copied in reverse order. */
static void flip_rows(unsigned char *dst, const unsigned char *src, int64_t h, size_t row)
{
    if (dst == src) {
        for (int64_t y = 0; y < h / 2; y++)
            swap_pixel(dst + (size_t)y * row, dst + (size_t)(h - 1 - y) * row, row);
        return;
    }
    for (int64_t y = 0; y < h; y++)
        memcpy(dst + (size_t)y * row, src + (size_t)(h - 1 - y) * row, row);
}

static const sl_op_iface random_vflip_iface;

static int random_flip_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    const random_flip_op *r = (const random_flip_op *)op;
    int vertical = op->iface == &random_vflip_iface;
    int64_t h, w, c;
    size_t px, row;
    sl_tensor *res;
    int rc;

    *out = NULL;
    rc = random_flip_check(op, in->ndim, in->shape, in->dtype, &h, &w, &c, ctx->err);
    if (rc != SL_OK) {
        sl_tensor_release(in);
        return rc;
    }
    if (vertical)
        (void)sl__rng_next(&ctx->rng); /* the horizontal flip's draw (see the top) */
    if (!(sl__rng_uniform(&ctx->rng) < r->p) || (vertical ? h : w) <= 1 || in->numel == 0) {
        *out = in; /* not drawn, or nothing to mirror */
        return SL_OK;
    }
    px = (size_t)c * sl_dtype_size(in->dtype);
    row = (size_t)w * px;
    if (sl__tensor_writable(in)) {
        if (vertical)
            flip_rows(in->data, in->data, h, row);
        else
            for (int64_t y = 0; y < h; y++)
                flip_row_inplace((unsigned char *)in->data + (size_t)y * row, (size_t)w, px);
        *out = in;
        return SL_OK;
    }
    rc = sl__tensor_alloc(&res, ctx->pool, in->dtype, in->ndim, in->shape);
    if (rc != SL_OK) {
        char buf[96];
        sl__errf(ctx->err, rc, "%s: cannot allocate a %s tensor %s", op->iface->name,
                 sl_dtype_name(in->dtype), sl_shape_str(buf, sizeof buf, in->ndim, in->shape));
        sl_tensor_release(in);
        return rc;
    }
    if (vertical)
        flip_rows(res->data, in->data, h, row);
    else
        for (int64_t y = 0; y < h; y++)
            flip_row_copy((unsigned char *)res->data + (size_t)y * row,
                          (const unsigned char *)in->data + (size_t)y * row, (size_t)w, px);
    sl_tensor_release(in);
    *out = res;
    return SL_OK;
}

static const sl_op_iface random_flip_iface = {
    .name = "random_horizontal_flip",
    .infer = random_flip_infer,
    .run = random_flip_run,
    .destroy = NULL,
};

static const sl_op_iface random_vflip_iface = {
    .name = "random_vertical_flip",
    .infer = random_flip_infer,
    .run = random_flip_run,
    .destroy = NULL,
};

int sl__op_flip_prob(const sl_op *op, double *p)
{
    if (op->iface != &random_flip_iface)
        return 0;
    *p = ((const random_flip_op *)op)->p;
    return 1;
}

static int random_flip_new(sl_op **out, const sl_op_iface *iface, double p, char *err,
                           size_t err_len)
{
    int rc;
    *out = NULL;
    if (!(p >= 0.0 && p <= 1.0))
        return sl__err_out(err, err_len, SL_EINVAL,
                           "%s: the probability of a flip must be in [0, 1], got %g",
                           iface->name, p);
    rc = sl__op_alloc(out, sizeof(random_flip_op), iface, 1);
    if (rc != SL_OK)
        return sl__err_out(err, err_len, rc, "%s: out of memory", iface->name);
    ((random_flip_op *)*out)->p = p;
    return SL_OK;
}

int sl_op_random_horizontal_flip_new(sl_op **out, double p, char *err, size_t err_len)
{
    return random_flip_new(out, &random_flip_iface, p, err, err_len);
}

int sl_op_random_vertical_flip_new(sl_op **out, double p, char *err, size_t err_len)
{
    return random_flip_new(out, &random_vflip_iface, p, err, err_len);
}
