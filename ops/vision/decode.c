/* decode.c: the Decode op, JPEG bytes (1-D uint8) -> (H, W, 3) RGB or
 * (H, W, 1) grayscale uint8, through libjpeg-turbo with its default (islow)
 * DCT and fancy upsampling, as MindSpore and OpenCV decode.
 *
 * libjpeg reports fatal errors through error_exit, which by default calls
 * exit(); ours longjmps back to decode_jpeg. Corrupt data it can skip over
 * (a file cut mid-scan, a bad Huffman code) is only a warning to libjpeg,
 * which would hand back an image with grey or garbage rows: like TurboJPEG's
 * TJFLAG_STOPONWARNING we treat every warning as an error. Nothing is ever
 * printed. Rows are decoded straight into the output tensor, except for
 * CMYK/YCCK files, which libjpeg cannot turn into RGB: those are decoded as
 * CMYK a row at a time and converted as MindSpore does. A file declaring
 * more than the op's max_pixels is refused from its header (op.h says
 * why the default is 2^26). In a pipeline, the output's bytes are taken
 * from the iterator's decode budget before the tensor is allocated
 * (sl_dataset_set_decode_budget; the map gives them back, nodes.c). */
#include "ops/vision/decode_impl.h"

#include <string.h>

#include "core/byte_budget.h"

typedef struct decode_op {
    sl_op base;
    int rgb;
    uint64_t max_pixels; /* width x height above this is refused from the header */
} decode_op;

/* What must outlive a longjmp lives here, not in decode_jpeg's locals. */
typedef struct decode_job {
    struct jpeg_decompress_struct cinfo;
    sl__decode_err jerr;
    sl_tensor *out;
} decode_job;

static void decode_error_exit(j_common_ptr cinfo)
{
    sl__decode_err *e = (sl__decode_err *)cinfo->err;
    e->pub.format_message(cinfo, e->msg);
    longjmp(e->jump, 1);
}

/* msg_level -1 is a warning about corrupt data; higher levels are traces. */
static void decode_emit_message(j_common_ptr cinfo, int msg_level)
{
    if (msg_level < 0)
        decode_error_exit(cinfo);
}

static void decode_output_message(j_common_ptr cinfo)
{
    (void)cinfo; /* never print */
}

void sl__decode_err_init(struct jpeg_decompress_struct *cinfo, sl__decode_err *e)
{
    cinfo->err = jpeg_std_error(&e->pub);
    e->pub.error_exit = decode_error_exit;
    e->pub.emit_message = decode_emit_message;
    e->pub.output_message = decode_output_message;
}

static int decode_check(int ndim, const int64_t *shape, sl_dtype dtype, sl__error *err)
{
    char buf[96];
    if (ndim != 1 || dtype != SL_UINT8)
        return sl__errf(err, SL_ESHAPE, "decode: expected encoded bytes (1-D uint8), got %s %s",
                        sl_dtype_name(dtype), sl_shape_str(buf, sizeof buf, ndim, shape));
    return SL_OK;
}

static int decode_infer(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                        sl__error *err)
{
    int rc = decode_check(in->ndim, in->shape, in->dtype, err);
    if (rc != SL_OK)
        return rc;
    out->dtype = SL_UINT8;
    out->ndim = 3;
    memset(out->shape, 0, sizeof out->shape);
    out->shape[0] = -1;
    out->shape[1] = -1;
    out->shape[2] = ((const decode_op *)op)->rgb ? 3 : 1;
    return SL_OK;
}

/* Converts a row of w CMYK pixels to RGB (or gray when rgb is 0) with
 * MindSpore's formulas; Adobe files store the inks inverted. Gray uses
 * libjpeg's own RGB weights (0.299, 0.587, 0.114 in 16-bit fixed point). */
void sl__cmyk_row(uint8_t *dst, const JSAMPLE *src, size_t w, int adobe, int rgb)
{
    for (size_t x = 0; x < w; x++) {
        int c = src[4 * x], m = src[4 * x + 1], y = src[4 * x + 2], k = src[4 * x + 3];
        int r, g, b;
        if (adobe) {
            r = k * c / 255;
            g = k * m / 255;
            b = k * y / 255;
        } else {
            r = (255 - c) * (255 - k) / 255;
            g = (255 - m) * (255 - k) / 255;
            b = (255 - y) * (255 - k) / 255;
        }
        if (rgb) {
            dst[3 * x] = (uint8_t)r;
            dst[3 * x + 1] = (uint8_t)g;
            dst[3 * x + 2] = (uint8_t)b;
        } else {
            dst[x] = (uint8_t)((19595 * r + 38470 * g + 7471 * b + 32768) >> 16);
        }
    }
}

/* Takes need bytes for a w x h image from the pipeline's decode budget
 * (core/byte_budget.h), waiting for other workers to give bytes back. A
 * worker that already holds bytes for this row (a second image in it) does
 * not wait: two such workers could wait on each other for ever. */
int sl__decode_take_budget(sl__op_ctx *ctx, uint64_t need, unsigned w, unsigned h)
{
    int rc = sl__byte_budget_take(ctx->budget, need, ctx->budget_held == 0);
    switch (rc) {
    case SL_OK:
        ctx->budget_held += need;
        return SL_OK;
    case SL_EINVAL:
        return sl__errf(ctx->err, SL_EINVAL,
                        "decode: a %ux%u image needs %llu bytes, more than the whole decode "
                        "budget of %llu bytes (raise it with sl_dataset_set_decode_budget)",
                        w, h, (unsigned long long)need, (unsigned long long)ctx->budget->limit);
    case SL_ETIMEDOUT:
        return sl__errf(ctx->err, SL_EINVAL,
                        "decode: a %ux%u image needs %llu bytes beside the %llu its row already "
                        "holds, more than the decode budget of %llu bytes had free (raise it "
                        "with sl_dataset_set_decode_budget)",
                        w, h, (unsigned long long)need, (unsigned long long)ctx->budget_held,
                        (unsigned long long)ctx->budget->limit);
    default:
        return sl__errf(ctx->err, SL_ECLOSED, "decode: stopped while waiting for the decode "
                        "budget");
    }
}

int sl__decode_check_header(struct jpeg_decompress_struct *cinfo, int rgb, uint64_t max_pixels,
                            sl__error *err)
{
    /* The header alone says how big the image is: refuse a bomb (a few
     * hundred bytes declaring 16384x16384) here, before libjpeg allocates
     * its buffers and before the output tensor exists. libjpeg itself
     * caps each side at JPEG_MAX_DIMENSION (65500). */
    uint64_t pixels = (uint64_t)cinfo->image_width * cinfo->image_height;
    if (pixels > max_pixels)
        return sl__errf(err, SL_EFORMAT,
                        "decode: the JPEG is too large: its header declares %ux%u = %llu "
                        "pixels, more than max_pixels = %llu; raise the limit if such images "
                        "are expected (Decode's max_pixels, ImageFolder's decode_max_pixels, "
                        "--decode-max-pixels)",
                        (unsigned)cinfo->image_width, (unsigned)cinfo->image_height,
                        (unsigned long long)pixels, (unsigned long long)max_pixels);
    if (cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK)
        cinfo->out_color_space = JCS_CMYK;
    else
        cinfo->out_color_space = rgb ? JCS_RGB : JCS_GRAYSCALE;
    return SL_OK;
}

/* Decodes data[0..len) into job->out. On failure job->out may hold a
 * half-written tensor, which the caller releases. */
static int decode_jpeg(decode_job *job, const unsigned char *data, size_t len,
                       const decode_op *d, sl__op_ctx *ctx)
{
    struct jpeg_decompress_struct *cinfo = &job->cinfo;
    sl__error *err = ctx->err;
    int rgb = d->rgb;
    int64_t shape[3];
    size_t stride;
    int rc;

    sl__decode_err_init(cinfo, &job->jerr);
    if (setjmp(job->jerr.jump))
        return sl__errf(err, SL_EFORMAT, "decode: cannot decode JPEG (%s)", job->jerr.msg);

    jpeg_create_decompress(cinfo);
    jpeg_mem_src(cinfo, data, (unsigned long)len);
    jpeg_read_header(cinfo, TRUE);
    rc = sl__decode_check_header(cinfo, rgb, d->max_pixels, err);
    if (rc != SL_OK)
        return rc;
    jpeg_calc_output_dimensions(cinfo); /* sizes only: allocates nothing */
    if (ctx->budget) {
        uint64_t need = (uint64_t)cinfo->output_width * cinfo->output_height * (rgb ? 3 : 1);
        rc = sl__decode_take_budget(ctx, need, cinfo->output_width, cinfo->output_height);
        if (rc != SL_OK)
            return rc;
    }
    jpeg_start_decompress(cinfo);

    shape[0] = cinfo->output_height;
    shape[1] = cinfo->output_width;
    shape[2] = rgb ? 3 : 1;
    rc = sl__tensor_alloc(&job->out, ctx->pool, SL_UINT8, 3, shape);
    if (rc != SL_OK)
        return sl__errf(err, rc, "decode: cannot allocate a %ux%u image",
                        (unsigned)cinfo->output_width, (unsigned)cinfo->output_height);
    stride = (size_t)cinfo->output_width * (size_t)shape[2];
    if (cinfo->out_color_space != JCS_CMYK && cinfo->output_components != shape[2])
        return sl__errf(err, SL_EFORMAT, "decode: libjpeg gave %d components, expected %d",
                        cinfo->output_components, (int)shape[2]);
    if (cinfo->out_color_space == JCS_CMYK) {
        /* libjpeg's image pool frees this row, even after a longjmp. */
        JSAMPARRAY cmyk = cinfo->mem->alloc_sarray((j_common_ptr)cinfo, JPOOL_IMAGE,
                                                   cinfo->output_width * 4, 1);
        while (cinfo->output_scanline < cinfo->output_height) {
            uint8_t *dst = (uint8_t *)job->out->data + (size_t)cinfo->output_scanline * stride;
            if (jpeg_read_scanlines(cinfo, cmyk, 1) != 1)
                return sl__errf(err, SL_EFORMAT,
                                "decode: cannot decode JPEG (no rows after row %u)",
                                (unsigned)cinfo->output_scanline);
            sl__cmyk_row(dst, cmyk[0], cinfo->output_width, cinfo->saw_Adobe_marker, rgb);
        }
        return SL_OK;
    }
    while (cinfo->output_scanline < cinfo->output_height) {
        JSAMPROW rows[8];
        JDIMENSION want = cinfo->output_height - cinfo->output_scanline;
        if (want > 8)
            want = 8;
        for (JDIMENSION i = 0; i < want; i++)
            rows[i] = (JSAMPROW)job->out->data + (size_t)(cinfo->output_scanline + i) * stride;
        /* A memory source never suspends, so 0 rows means a broken stream. */
        if (jpeg_read_scanlines(cinfo, rows, want) == 0)
            return sl__errf(err, SL_EFORMAT, "decode: cannot decode JPEG (no rows after row %u)",
                            (unsigned)cinfo->output_scanline);
    }
    /* The trailing markers are not read: every pixel is already here, and a
     * missing EOI after complete image data does not make the image wrong. */
    return SL_OK;
}

int sl__decode_check_bytes(const sl_tensor *in, sl__error *err)
{
    const unsigned char *data = in->data;
    int rc = decode_check(in->ndim, in->shape, in->dtype, err);
    if (rc != SL_OK)
        return rc;
    /* Every JPEG starts with SOI (FF D8) and another marker. */
    if (in->numel < 4 || data[0] != 0xFF || data[1] != 0xD8 || data[2] != 0xFF) {
        if (in->numel >= 4)
            return sl__errf(err, SL_EFORMAT,
                            "decode: not a JPEG (%zu bytes starting %02X %02X %02X %02X)",
                            in->numel, data[0], data[1], data[2], data[3]);
        return sl__errf(err, SL_EFORMAT, "decode: not a JPEG (only %zu bytes)", in->numel);
    }
    return SL_OK;
}

static int decode_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    const decode_op *d = (const decode_op *)op;
    const unsigned char *data = in->data;
    decode_job job;
    int rc;

    *out = NULL;
    rc = sl__decode_check_bytes(in, ctx->err);
    if (rc != SL_OK) {
        sl_tensor_release(in);
        return rc;
    }
    memset(&job, 0, sizeof job);
    rc = decode_jpeg(&job, data, in->numel, d, ctx);
    jpeg_destroy_decompress(&job.cinfo);
    sl_tensor_release(in);
    if (rc != SL_OK) {
        sl_tensor_release(job.out);
        return rc;
    }
    *out = job.out;
    return SL_OK;
}

static const sl_op_iface decode_iface = {
    .name = "decode",
    .infer = decode_infer,
    .run = decode_run,
    .destroy = NULL,
};

int sl_op_decode_new_limited(sl_op **out, int rgb, uint64_t max_pixels, char *err,
                             size_t err_len)
{
    int rc;
    *out = NULL;
    if (rgb != 0 && rgb != 1)
        return sl__err_out(err, err_len, SL_EINVAL, "decode: rgb must be 0 or 1, got %d", rgb);
    if (max_pixels < 1 || max_pixels > SL_DECODE_MAX_PIXELS_LIMIT)
        return sl__err_out(err, err_len, SL_EINVAL,
                           "decode: max_pixels must be in [1, %llu], got %llu",
                           (unsigned long long)SL_DECODE_MAX_PIXELS_LIMIT,
                           (unsigned long long)max_pixels);
    rc = sl__op_alloc(out, sizeof(decode_op), &decode_iface, 0);
    if (rc != SL_OK)
        return sl__err_out(err, err_len, rc, "decode: out of memory");
    ((decode_op *)*out)->rgb = rgb;
    ((decode_op *)*out)->max_pixels = max_pixels;
    return SL_OK;
}

int sl__op_decode_params(const sl_op *op, int *rgb, uint64_t *max_pixels)
{
    if (op->iface != &decode_iface)
        return 0;
    *rgb = ((const decode_op *)op)->rgb;
    *max_pixels = ((const decode_op *)op)->max_pixels;
    return 1;
}

uint64_t sl__op_decode_max_bytes(const sl_op *op)
{
    const decode_op *d = (const decode_op *)op;
    if (op->iface != &decode_iface)
        return 0;
    return d->max_pixels * (d->rgb ? 3 : 1);
}

int sl_op_decode_new(sl_op **out, int rgb, char *err, size_t err_len)
{
    return sl_op_decode_new_limited(out, rgb, SL_DECODE_MAX_PIXELS_DEFAULT, err, err_len);
}
