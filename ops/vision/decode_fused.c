/* decode_fused.c: Decode fused with the geometry after it, planned when a
 * pipeline is built (sl__op_fuse_decode): a RandomResizedCrop, a bilinear
 * Resize (to a size or of the shorter side), each maybe followed by a
 * CenterCrop, or a CenterCrop alone. The geometry is known from the JPEG's
 * header, so only what the output needs is decoded:
 *
 * - at the smallest scale N/8 of 1/8, 1/4, 1/2, 1 (libjpeg-turbo's DCT
 *   scaling, where it has SIMD IDCTs) at which the box still has at least
 *   as many pixels as its resized size, so the resampling never enlarges
 *   what a full decode would have shrunk;
 * - only the columns the output reads (jpeg_crop_scanline, which widens
 *   them to whole iMCUs) and the rows (jpeg_skip_scanlines above them, and
 *   no decoding below them).
 * RandomResizedCrop draws its box from the header's size with the
 * generator the separate op would have had (same draws, same box).
 *
 * Each output pixel maps to the original image exactly as the separate ops
 * map it (OpenCV's half-pixel centres within the box, clamped to the box's
 * edge pixels), then into the scaled image (scaled pixel j covers original
 * pixels [8j/N, 8(j+1)/N)), and is sampled there with the Resize op's
 * fixed-point bilinear kernels (sl__resize_plan_at).
 * So the results differ from decode-then-transform only by what decoding at
 * N/8 averages (the DCT's low-pass against bilinear's 2x2 taps) and by
 * rounding: none at N = 8 with integer positions (a CenterCrop alone is
 * exact). Where a CenterCrop reaches past the resized image, zeros. */
#include "ops/vision/decode_impl.h"
#include "ops/vision/resize_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum fused_kind {
    FUSED_RRC,     /* RandomResizedCrop: box drawn, resized to (out_h, out_w) */
    FUSED_RESIZE,  /* Resize to (out_h, out_w) */
    FUSED_SHORTER, /* Resize of the shorter side to out_h */
    FUSED_NONE     /* no resize: CenterCrop alone */
} fused_kind;

typedef struct decode_fused_op {
    sl_op base;
    sl_op *ops[3]; /* the decode, the geometry, maybe a CenterCrop: references */
    size_t nops;
    int rgb;
    uint64_t max_pixels;
    fused_kind kind;
    int64_t out_h, out_w;
    int has_crop;
    int64_t crop_h, crop_w;
    char name[64]; /* "decode+random_resized_crop", ... */
    int scaled;    /* 1: may decode at 1/2, 1/4 or 1/8 scale */
} decode_fused_op;

/* Where the output comes from, for one image of h x w. */
typedef struct fused_geom {
    int64_t by, bx, bh, bw; /* the box in the original image */
    int64_t rh, rw;         /* the size it is resized to */
    int64_t cy, cx;         /* the output window's corner in the resized box */
    int64_t oh, ow;         /* the output's size */
} fused_geom;

/* What must outlive a longjmp. */
typedef struct fused_job {
    struct jpeg_decompress_struct cinfo;
    sl__decode_err jerr;
    sl_tensor *out;
    void *block; /* region rows and tables */
} fused_job;

static int64_t floor_half(int64_t a)
{
    return a >= 0 ? a / 2 : -((-a + 1) / 2);
}

static int fused_infer(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                       sl__error *err)
{
    const decode_fused_op *f = (const decode_fused_op *)op;
    sl_tensor_spec mid = *in;
    int rc = SL_OK;
    for (size_t k = 0; k < f->nops && rc == SL_OK; k++) {
        rc = sl__op_infer(f->ops[k], &mid, out, err);
        mid = *out;
    }
    return rc;
}

static int plan_geometry(const decode_fused_op *f, int64_t h, int64_t w, sl_rng *rng,
                         fused_geom *g, sl__error *err)
{
    g->by = 0;
    g->bx = 0;
    g->bh = h;
    g->bw = w;
    switch (f->kind) {
    case FUSED_RRC: {
        int64_t box[4];
        sl__rrc_draw_box(f->ops[1], h, w, rng, box);
        g->by = box[0];
        g->bx = box[1];
        g->bh = box[2];
        g->bw = box[3];
        g->rh = f->out_h;
        g->rw = f->out_w;
        break;
    }
    case FUSED_RESIZE:
        g->rh = f->out_h;
        g->rw = f->out_w;
        break;
    case FUSED_SHORTER:
        if (sl__shorter_side_dims(f->out_h, h, w, &g->rh, &g->rw) != SL_OK)
            return sl__errf(err, SL_ESHAPE,
                            "resize_shorter_side: a %lld x %lld image with its shorter side at "
                            "%lld would be too long",
                            (long long)h, (long long)w, (long long)f->out_h);
        break;
    case FUSED_NONE:
        g->rh = h;
        g->rw = w;
        break;
    }
    if (f->has_crop) {
        g->oh = f->crop_h;
        g->ow = f->crop_w;
        g->cy = floor_half(g->rh - f->crop_h);
        g->cx = floor_half(g->rw - f->crop_w);
    } else {
        g->oh = g->rh;
        g->ow = g->rw;
        g->cy = 0;
        g->cx = 0;
    }
    return SL_OK;
}

/* The smallest N of 1, 2, 4, 8 with box * N / 8 >= resized size on both
 * axes. Only those scales have libjpeg-turbo's SIMD IDCTs: 3/8, 5/8, 6/8
 * and 7/8 go through plain C IDCTs (12x12 and 14x14 ones for subsampled
 * chroma), slower than decoding at 8/8. */
static int pick_scale(const fused_geom *g)
{
    int64_t ny = (8 * g->rh + g->bh - 1) / g->bh, nx = (8 * g->rw + g->bw - 1) / g->bw;
    int64_t need = ny > nx ? ny : nx;
    int n = 1;
    while (n < 8 && n < need)
        n *= 2;
    return n;
}

/* Scratch sizes rounded up to a quarter of their power of two: images of
 * many sizes then share a few pool classes, so their blocks are reused
 * rather than mapped and zeroed by the system image after image. */
static size_t coarse_size(size_t n)
{
    size_t step = 64;
    while (step * 8 < n)
        step *= 2;
    return (n + step - 1) / step * step;
}

/* Source position, in the scaled image, of output index d along one axis:
 * resized index d + c (which must lie in [0, r)) into the box [b, b + n) of
 * the original, clamped to its edge pixels, then to scale/8. */
static double scaled_pos(int64_t d, int64_t c, int64_t r, int64_t b, int64_t n, int scale,
                         int64_t limit)
{
    double o = (double)b + ((double)(d + c) + 0.5) * ((double)n / (double)r) - 0.5;
    double s;
    if (o < (double)b)
        o = (double)b;
    if (o > (double)(b + n - 1))
        o = (double)(b + n - 1);
    s = (o + 0.5) * scale / 8.0 - 0.5;
    if (s < 0)
        s = 0;
    if (s > (double)(limit - 1))
        s = (double)(limit - 1);
    return s;
}

/* The output's valid range [lo, hi) along one axis: where d + c is inside
 * the resized size r (outside: zeros). */
static void valid_range(int64_t o, int64_t c, int64_t r, int64_t *lo, int64_t *hi)
{
    *lo = c < 0 ? -c : 0;
    *hi = r - c < o ? r - c : o;
    if (*hi < *lo)
        *hi = *lo;
}

/* Positions, relative to the decoded region [first, first + count), of
 * the valid outputs [lo, hi) along one axis. */
static void fill_positions(double *pos, int64_t lo, int64_t hi, int64_t c, int64_t r, int64_t b,
                           int64_t n, int scale, int64_t limit, int64_t first, int64_t count)
{
    for (int64_t d = lo; d < hi; d++) {
        double s = scaled_pos(d, c, r, b, n, scale, limit) - (double)first;
        pos[d - lo] = s < 0 ? 0 : s > (double)(count - 1) ? (double)(count - 1) : s;
    }
}

static int fused_decode(fused_job *job, const sl_tensor *in, const decode_fused_op *f,
                        sl__op_ctx *ctx)
{
    struct jpeg_decompress_struct *cinfo = &job->cinfo;
    sl__error *err = ctx->err;
    int64_t c = f->rgb ? 3 : 1, shape[3], ylo, yhi, xlo, xhi, row0, row1, col0, col1;
    int64_t hs, ws, rows, cols;
    JDIMENSION xoff, cw;
    size_t need;
    fused_geom g;
    double *ys, *xs;
    sl__resize_plan *plan = NULL;
    size_t stride, region_bytes, tab_bytes, scratch_bytes, window_bytes;
    uint8_t *region, *dst;
    void *scratch;
    int scale, rc, cmyk;

    sl__decode_err_init(cinfo, &job->jerr);
    if (setjmp(job->jerr.jump))
        return sl__errf(err, SL_EFORMAT, "decode: cannot decode JPEG (%s)", job->jerr.msg);
    jpeg_create_decompress(cinfo);
    jpeg_mem_src(cinfo, in->data, (unsigned long)in->numel);
    jpeg_read_header(cinfo, TRUE);
    rc = sl__decode_check_header(cinfo, f->rgb, f->max_pixels, err);
    if (rc != SL_OK)
        return rc;
    cmyk = cinfo->out_color_space == JCS_CMYK;
    rc = plan_geometry(f, cinfo->image_height, cinfo->image_width, &ctx->rng, &g, err);
    if (rc != SL_OK)
        return rc;
    scale = (g.rh == g.bh && g.rw == g.bw) || !f->scaled ? 8 : pick_scale(&g);
    cinfo->scale_num = (unsigned)scale;
    cinfo->scale_denom = 8;
    jpeg_calc_output_dimensions(cinfo); /* sizes only: allocates nothing */
    hs = cinfo->output_height;
    ws = cinfo->output_width;

    /* the rows and columns the output reads */
    valid_range(g.oh, g.cy, g.rh, &ylo, &yhi);
    valid_range(g.ow, g.cx, g.rw, &xlo, &xhi);
    row0 = 0;
    row1 = 0;
    col0 = 0;
    col1 = 0;
    if (yhi > ylo && xhi > xlo) {
        row0 = (int64_t)scaled_pos(ylo, g.cy, g.rh, g.by, g.bh, scale, hs);
        row1 = (int64_t)scaled_pos(yhi - 1, g.cy, g.rh, g.by, g.bh, scale, hs) + 1;
        col0 = (int64_t)scaled_pos(xlo, g.cx, g.rw, g.bx, g.bw, scale, ws);
        col1 = (int64_t)scaled_pos(xhi - 1, g.cx, g.rw, g.bx, g.bw, scale, ws) + 1;
        /* a column more on each side: libjpeg's fancy upsampling of
         * subsampled chroma takes the edges of a cropped region for the
         * image's, so the pixels there differ from a full decode's (rows
         * skipped with jpeg_skip_scanlines keep their context) */
        col0 = col0 > 0 ? col0 - 1 : 0;
        col1 = col1 + 1 < ws - 1 ? col1 + 1 : ws - 1;
        if (row1 > hs - 1)
            row1 = hs - 1;
    }
    rows = row1 - row0 + 1;

    jpeg_start_decompress(cinfo);
    if (!cmyk && cinfo->output_components != c)
        return sl__errf(err, SL_EFORMAT, "decode: libjpeg gave %d components, expected %d",
                        cinfo->output_components, (int)c);
    xoff = (JDIMENSION)col0;
    cw = (JDIMENSION)(col1 - col0 + 1);
    if (xoff > 0 || (int64_t)cw < ws)
        jpeg_crop_scanline(cinfo, &xoff, &cw); /* widened to whole iMCUs */
    col0 = (int64_t)xoff;
    cols = (int64_t)cw;

    if (ctx->budget) {
        rc = sl__decode_take_budget(ctx, (uint64_t)rows * (uint64_t)cols * (uint64_t)c,
                                    (unsigned)cols, (unsigned)rows);
        if (rc != SL_OK)
            return rc;
    }
    stride = (size_t)cols * (size_t)c;
    region_bytes = (size_t)rows * stride;
    /* one block: positions, the region, a CMYK row, the resampler's rows
     * and, when a CenterCrop pads, the window before it is placed */
    tab_bytes = (size_t)(g.oh + g.ow) * sizeof(double);
    scratch_bytes = sl__resize_u8_scratch_size((size_t)(xhi - xlo) * (size_t)c);
    window_bytes = (yhi - ylo == g.oh && xhi - xlo == g.ow)
                       ? 0
                       : (size_t)(yhi - ylo) * (size_t)(xhi - xlo) * (size_t)c;
    need = coarse_size(tab_bytes + region_bytes + (size_t)cols * 4 + scratch_bytes +
                       window_bytes + 16);
    job->block = ctx->pool ? sl__pool_alloc(ctx->pool, need) : malloc(need);
    if (!job->block)
        return sl__errf(err, SL_ENOMEM, "decode: cannot allocate %zu bytes for a %lldx%lld region",
                        need, (long long)cols, (long long)rows);
    ys = job->block;
    xs = ys + g.oh;
    region = (uint8_t *)(xs + g.ow);
    /* the scratch rows hold int16: keep them aligned */
    scratch = (void *)(((uintptr_t)(region + region_bytes + (size_t)cols * 4) + 15) &
                       ~(uintptr_t)15);

    if (row0 > 0)
        jpeg_skip_scanlines(cinfo, (JDIMENSION)row0);
    for (int64_t y = 0; y < rows; y++) {
        JSAMPROW row = cmyk ? region + region_bytes : region + (size_t)y * stride;
        /* a memory source never suspends: 0 rows is a broken stream */
        if (jpeg_read_scanlines(cinfo, &row, 1) != 1)
            return sl__errf(err, SL_EFORMAT, "decode: cannot decode JPEG (no rows after row %u)",
                            (unsigned)cinfo->output_scanline);
        if (cmyk)
            sl__cmyk_row(region + (size_t)y * stride, row, (size_t)cols, cinfo->saw_Adobe_marker,
                         f->rgb);
    }

    shape[0] = g.oh;
    shape[1] = g.ow;
    shape[2] = c;
    rc = sl__tensor_alloc(&job->out, ctx->pool, SL_UINT8, 3, shape);
    if (rc != SL_OK)
        return sl__errf(err, rc, "decode: cannot allocate a %lldx%lld image", (long long)g.ow,
                        (long long)g.oh);
    dst = job->out->data;
    if (yhi <= ylo || xhi <= xlo) {
        memset(dst, 0, (size_t)g.oh * (size_t)g.ow * (size_t)c);
        return SL_OK;
    }
    fill_positions(ys, ylo, yhi, g.cy, g.rh, g.by, g.bh, scale, hs, row0, rows);
    fill_positions(xs, xlo, xhi, g.cx, g.rw, g.bx, g.bw, scale, ws, col0, cols);
    /* OpenCV's fixed-point bilinear kernels, at these positions */
    plan = sl__resize_plan_at(rows, cols, c, yhi - ylo, xhi - xlo, ys, xs);
    if (!plan)
        return sl__errf(err, SL_ENOMEM, "decode: cannot allocate a resampling plan");
    if (window_bytes == 0) {
        sl__resize_u8_rows(sl__resize_best_path(), dst, region, plan, g.oh, g.ow, NULL, scratch,
                           scratch_bytes);
    } else {
        uint8_t *window = (uint8_t *)scratch + scratch_bytes;
        size_t wrow = (size_t)(xhi - xlo) * (size_t)c, orow = (size_t)g.ow * (size_t)c;
        sl__resize_u8_rows(sl__resize_best_path(), window, region, plan, yhi - ylo, xhi - xlo,
                           NULL, scratch, scratch_bytes);
        memset(dst, 0, (size_t)g.oh * orow);
        for (int64_t y = ylo; y < yhi; y++)
            memcpy(dst + (size_t)y * orow + (size_t)xlo * (size_t)c,
                   window + (size_t)(y - ylo) * wrow, wrow);
    }
    free(plan);
    /* The rows below the region are never decoded. */
    return SL_OK;
}

static int fused_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    const decode_fused_op *f = (const decode_fused_op *)op;
    fused_job job;
    int rc;

    *out = NULL;
    rc = sl__decode_check_bytes(in, ctx->err);
    if (rc != SL_OK) {
        sl_tensor_release(in);
        return rc;
    }
    memset(&job, 0, sizeof job);
    rc = fused_decode(&job, in, f, ctx);
    jpeg_destroy_decompress(&job.cinfo);
    if (job.block) {
        if (ctx->pool)
            sl__pool_free(ctx->pool, job.block);
        else
            free(job.block);
    }
    sl_tensor_release(in);
    if (rc != SL_OK) {
        sl_tensor_release(job.out);
        return rc;
    }
    *out = job.out;
    return SL_OK;
}

static void fused_destroy(sl_op *op)
{
    decode_fused_op *f = (decode_fused_op *)op;
    for (size_t k = 0; k < f->nops; k++)
        sl_op_release(f->ops[k]);
}

static const sl_op_iface fused_iface = {
    .name = "decode+geometry",
    .infer = fused_infer,
    .run = fused_run,
    .destroy = fused_destroy,
};

const char *sl__op_fused_name(const sl_op *op)
{
    return op->iface == &fused_iface ? ((const decode_fused_op *)op)->name : NULL;
}

void sl__op_decode_fused_allow_scaling(sl_op *op, int allow)
{
    if (op->iface == &fused_iface)
        ((decode_fused_op *)op)->scaled = allow != 0;
}

int sl__op_fuse_decode(sl_op *decode, sl_op *const *next, size_t n, sl_op **fused, size_t *used)
{
    decode_fused_op *f;
    fused_kind kind;
    int64_t oh = 0, ow = 0, ch, cw;
    sl_interp interp = SL_INTER_LINEAR;
    int rgb, rc;
    uint64_t max_pixels;
    size_t k = 0;

    *fused = NULL;
    *used = 0;
    if (n == 0 || !sl__op_decode_params(decode, &rgb, &max_pixels))
        return SL_OK;
    if (sl__op_is_random_resized_crop(next[0])) {
        sl__rrc_size(next[0], &oh, &ow, &interp);
        kind = FUSED_RRC;
        k = 1;
    } else if (sl__op_resize_is_linear(next[0])) {
        sl_tensor_spec in, out;
        memset(&in, 0, sizeof in);
        in.dtype = SL_UINT8;
        in.ndim = 3;
        in.shape[0] = in.shape[1] = 1;
        in.shape[2] = rgb ? 3 : 1;
        if (sl__op_infer(next[0], &in, &out, NULL) != SL_OK)
            return SL_OK;
        oh = out.shape[0];
        ow = out.shape[1];
        kind = FUSED_RESIZE;
        k = 1;
    } else if (sl__op_shorter_side_size(next[0], &oh, &interp)) {
        kind = FUSED_SHORTER;
        k = 1;
    } else if (sl__op_center_crop_size(next[0], &ch, &cw)) {
        kind = FUSED_NONE;
    } else {
        return SL_OK;
    }
    if (interp != SL_INTER_LINEAR)
        return SL_OK;
    rc = sl__op_alloc(fused, sizeof *f, &fused_iface, kind == FUSED_RRC);
    if (rc != SL_OK)
        return rc;
    f = (decode_fused_op *)*fused;
    f->rgb = rgb;
    f->scaled = 1;
    f->max_pixels = max_pixels;
    f->kind = kind;
    f->out_h = oh;
    f->out_w = ow;
    f->ops[f->nops++] = sl_op_retain(decode);
    if (k == 1)
        f->ops[f->nops++] = sl_op_retain(next[0]);
    if (kind != FUSED_RRC && k < n && sl__op_center_crop_size(next[k], &f->crop_h, &f->crop_w)) {
        f->has_crop = 1;
        f->ops[f->nops++] = sl_op_retain(next[k]);
        k++;
    }
    snprintf(f->name, sizeof f->name, "decode+%s%s%s", sl_op_name(f->ops[1]),
             f->nops == 3 ? "+" : "", f->nops == 3 ? sl_op_name(f->ops[2]) : "");
    /* the random op's place among the fused ones (the decode is 0) */
    (*fused)->rng_offset = kind == FUSED_RRC ? 1 : 0;
    *used = k;
    return SL_OK;
}
