/* random_color_adjust.c: the RandomColorAdjust op (MindSpore's; torchvision
 * calls it ColorJitter). On a (H, W, 3) uint8 RGB image the four
 * adjustments run in a random order (a Fisher-Yates shuffle of brightness,
 * contrast, saturation, hue, drawn first), each with a factor drawn
 * uniformly from its range when it runs; a range that is the identity
 * ((1, 1), hue (0, 0)) is skipped without a draw, as MindSpore does.
 *
 * Each adjustment rounds its result to the nearest uint8 and saturates, as
 * MindSpore's OpenCV arithmetic does (torchvision's uint8 tensors truncate,
 * so they may be one level lower):
 * - brightness f: v * f;
 * - contrast f: blend with the mean grey m of the image, m*(1-f) + v*f,
 *   m being the mean of the rounded greys, rounded;
 * - saturation f: blend with each pixel's own rounded grey;
 * - hue h: the hue turned by h of a full turn in float HSV (torchvision's
 *   formulas; MindSpore goes through OpenCV's 8-bit HSV, coarser).
 * Grey is 0.299 R + 0.587 G + 0.114 B. A writable input is changed in
 * place. */
#include "ops/op_impl.h"

#include <math.h>
#include <string.h>

enum { ADJ_BRIGHTNESS, ADJ_CONTRAST, ADJ_SATURATION, ADJ_HUE, ADJ_COUNT };

typedef struct color_adjust_op {
    sl_op base;
    double range[ADJ_COUNT][2];
} color_adjust_op;

static const char *const adj_names[ADJ_COUNT] = {"brightness", "contrast", "saturation", "hue"};

static int color_check(int ndim, const int64_t *shape, sl_dtype dtype, sl__error *err)
{
    char buf[96];
    if (ndim != 3 || dtype != SL_UINT8 || shape[2] != 3)
        return sl__errf(err, SL_ESHAPE,
                        "random_color_adjust: expected a uint8 RGB image (H, W, 3), got %s %s",
                        sl_dtype_name(dtype), sl_shape_str(buf, sizeof buf, ndim, shape));
    return SL_OK;
}

static int color_infer(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                       sl__error *err)
{
    int rc;
    (void)op;
    /* an unknown channel count (-1) may still be 3 */
    if (in->ndim == 3 && in->dtype == SL_UINT8 && in->shape[2] == -1) {
        *out = *in;
        out->shape[2] = 3;
        return SL_OK;
    }
    rc = color_check(in->ndim, in->shape, in->dtype, err);
    if (rc == SL_OK)
        *out = *in;
    return rc;
}

static uint8_t sat_round(double v)
{
    if (!(v > 0.0))
        return 0;
    if (v >= 255.0)
        return 255;
    return (uint8_t)(v + 0.5);
}

static int grey_of(const uint8_t *p)
{
    return sat_round(0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2]);
}

static void adjust_brightness(uint8_t *px, size_t n, double f)
{
    for (size_t i = 0; i < 3 * n; i++)
        px[i] = sat_round(px[i] * f);
}

static void adjust_contrast(uint8_t *px, size_t n, double f)
{
    double sum = 0.0, m;
    for (size_t i = 0; i < n; i++)
        sum += grey_of(px + 3 * i);
    m = (double)sat_round(n ? sum / (double)n : 0.0) * (1.0 - f);
    for (size_t i = 0; i < 3 * n; i++)
        px[i] = sat_round(m + px[i] * f);
}

static void adjust_saturation(uint8_t *px, size_t n, double f)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t *p = px + 3 * i;
        double g = grey_of(p) * (1.0 - f);
        p[0] = sat_round(g + p[0] * f);
        p[1] = sat_round(g + p[1] * f);
        p[2] = sat_round(g + p[2] * f);
    }
}

/* Turns the hue of one pixel by h (a fraction of a turn) through HSV. */
static void hue_pixel(uint8_t *p, double h)
{
    double r = p[0] / 255.0, g = p[1] / 255.0, b = p[2] / 255.0;
    double maxc = fmax(r, fmax(g, b)), minc = fmin(r, fmin(g, b)), cr = maxc - minc;
    double hue, s, v = maxc, f, q, t, w;
    int i;
    if (cr == 0.0)
        return; /* grey: no hue to turn, and the round trip is exact */
    s = cr / maxc;
    if (maxc == r)
        hue = (g - b) / cr;
    else if (maxc == g)
        hue = 2.0 + (b - r) / cr;
    else
        hue = 4.0 + (r - g) / cr;
    hue = hue / 6.0 + h;
    hue -= floor(hue);
    hue *= 6.0;
    i = (int)hue;
    if (i > 5)
        i = 5;
    f = hue - i;
    w = v * (1.0 - s);
    q = v * (1.0 - s * f);
    t = v * (1.0 - s * (1.0 - f));
    switch (i) {
    case 0: r = v; g = t; b = w; break;
    case 1: r = q; g = v; b = w; break;
    case 2: r = w; g = v; b = t; break;
    case 3: r = w; g = q; b = v; break;
    case 4: r = t; g = w; b = v; break;
    default: r = v; g = w; b = q; break;
    }
    p[0] = sat_round(r * 255.0);
    p[1] = sat_round(g * 255.0);
    p[2] = sat_round(b * 255.0);
}

static int is_identity(const color_adjust_op *a, int k)
{
    double id = k == ADJ_HUE ? 0.0 : 1.0;
    return a->range[k][0] == id && a->range[k][1] == id;
}

static int color_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    const color_adjust_op *a = (const color_adjust_op *)op;
    int order[ADJ_COUNT] = {ADJ_BRIGHTNESS, ADJ_CONTRAST, ADJ_SATURATION, ADJ_HUE};
    sl_tensor *res = in;
    size_t n;
    int rc;

    *out = NULL;
    rc = color_check(in->ndim, in->shape, in->dtype, ctx->err);
    if (rc != SL_OK) {
        sl_tensor_release(in);
        return rc;
    }
    for (int i = ADJ_COUNT - 1; i > 0; i--) {
        int j = (int)sl__rng_below(&ctx->rng, (uint64_t)i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    if (!sl__tensor_writable(in)) {
        char buf[96];
        rc = sl__tensor_alloc(&res, ctx->pool, in->dtype, in->ndim, in->shape);
        if (rc != SL_OK) {
            sl__errf(ctx->err, rc, "random_color_adjust: cannot allocate a uint8 tensor %s",
                     sl_shape_str(buf, sizeof buf, in->ndim, in->shape));
            sl_tensor_release(in);
            return rc;
        }
        memcpy(res->data, in->data, in->nbytes);
        sl_tensor_release(in);
    }
    n = (size_t)res->shape[0] * (size_t)res->shape[1];
    for (int k = 0; k < ADJ_COUNT; k++) {
        int adj = order[k];
        double f;
        if (is_identity(a, adj))
            continue;
        f = a->range[adj][0] + (a->range[adj][1] - a->range[adj][0]) * sl__rng_uniform(&ctx->rng);
        switch (adj) {
        case ADJ_BRIGHTNESS: adjust_brightness(res->data, n, f); break;
        case ADJ_CONTRAST: adjust_contrast(res->data, n, f); break;
        case ADJ_SATURATION: adjust_saturation(res->data, n, f); break;
        default:
            for (size_t i = 0; i < n; i++)
                hue_pixel((uint8_t *)res->data + 3 * i, f);
            break;
        }
    }
    *out = res;
    return SL_OK;
}

static const sl_op_iface color_iface = {
    .name = "random_color_adjust",
    .infer = color_infer,
    .run = color_run,
    .destroy = NULL,
};

int sl_op_random_color_adjust_new(sl_op **out, const double brightness[2],
                                  const double contrast[2], const double saturation[2],
                                  const double hue[2], char *err, size_t err_len)
{
    const double *ranges[ADJ_COUNT] = {brightness, contrast, saturation, hue};
    color_adjust_op *a;
    int rc;
    *out = NULL;
    for (int k = 0; k < ADJ_COUNT; k++) {
        double lo = ranges[k][0], hi = ranges[k][1];
        double min = k == ADJ_HUE ? -0.5 : 0.0, max = k == ADJ_HUE ? 0.5 : 1e9;
        if (!(lo >= min && lo <= hi && hi <= max))
            return sl__err_out(err, err_len, SL_EINVAL,
                               "random_color_adjust: %s must be (min, max) with %g <= min <= max "
                               "<= %g, got (%g, %g)",
                               adj_names[k], min, max, lo, hi);
    }
    rc = sl__op_alloc(out, sizeof *a, &color_iface, 1);
    if (rc != SL_OK)
        return sl__err_out(err, err_len, rc, "random_color_adjust: out of memory");
    a = (color_adjust_op *)*out;
    for (int k = 0; k < ADJ_COUNT; k++) {
        a->range[k][0] = ranges[k][0];
        a->range[k][1] = ranges[k][1];
    }
    return SL_OK;
}
