/* decode_fused_ref.c: see decode_fused_ref.h. */
#include "tests/decode_fused_ref.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "ops/vision/decode_impl.h"

sl_op *ref_fuse(sl_op *decode, sl_op **ops, size_t n)
{
    sl_op *chain[4], *fused;
    size_t used;
    ck_assert_uint_le(n, 3);
    chain[0] = decode;
    for (size_t k = 0; k < n; k++)
        chain[k + 1] = ops[k];
    ck_assert_int_eq(sl__op_fuse(chain, n + 1, &fused, &used), SL_OK);
    ck_assert_msg(fused != NULL, "%s then %s did not fuse", sl_op_name(decode),
                  sl_op_name(ops[0]));
    ck_assert_uint_eq(used, n + 1);
    return fused;
}

sl_tensor *ref_separate(const sl_tensor *jpeg, sl_op *decode, sl_op **ops, size_t n,
                        uint64_t seed)
{
    sl_tensor *a;
    char err[512];
    ck_assert_msg(sl_op_apply(decode, jpeg, &a, 0, err, sizeof err) == SL_OK, "%s", err);
    for (size_t k = 0; k < n; k++) {
        sl_tensor *next;
        ck_assert_msg(sl_op_apply(ops[k], a, &next, seed, err, sizeof err) == SL_OK, "%s", err);
        sl_tensor_release(a);
        a = next;
    }
    return a;
}

void ref_jpeg_size(const sl_tensor *jpeg, int64_t *h, int64_t *w)
{
    struct jpeg_decompress_struct cinfo;
    struct jpeg_error_mgr jerr;
    cinfo.err = jpeg_std_error(&jerr);
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, sl_tensor_data(jpeg), (unsigned long)sl_tensor_nbytes(jpeg));
    jpeg_read_header(&cinfo, TRUE);
    *h = cinfo.image_height;
    *w = cinfo.image_width;
    jpeg_destroy_decompress(&cinfo);
}

static int64_t floor_half(int64_t a)
{
    return (int64_t)floor((double)a / 2.0);
}

void ref_geom_rrc(ref_geom *g, const sl_op *rrc, int64_t h, int64_t w, uint64_t seed)
{
    int64_t box[4];
    sl_tensor_spec in, out;
    memset(&in, 0, sizeof in);
    in.dtype = SL_UINT8;
    in.ndim = 3;
    in.shape[0] = h;
    in.shape[1] = w;
    in.shape[2] = 3;
    ck_assert_int_eq(sl_op_random_resized_crop_box(rrc, h, w, seed, box, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_infer(rrc, &in, &out, NULL, 0), SL_OK);
    g->by = box[0];
    g->bx = box[1];
    g->bh = box[2];
    g->bw = box[3];
    g->rh = g->oh = out.shape[0];
    g->rw = g->ow = out.shape[1];
    g->cy = g->cx = 0;
}

void ref_geom_eval(ref_geom *g, int64_t h, int64_t w, int64_t shorter, int64_t rh, int64_t rw,
                   int64_t ch, int64_t cw)
{
    g->by = g->bx = 0;
    g->bh = h;
    g->bw = w;
    if (shorter > 0) {
        ck_assert_int_eq(sl__shorter_side_dims(shorter, h, w, &g->rh, &g->rw), SL_OK);
    } else if (rh > 0) {
        g->rh = rh;
        g->rw = rw;
    } else {
        g->rh = h;
        g->rw = w;
    }
    g->oh = ch > 0 ? ch : g->rh;
    g->ow = cw > 0 ? cw : g->rw;
    g->cy = ch > 0 ? floor_half(g->rh - ch) : 0;
    g->cx = cw > 0 ? floor_half(g->rw - cw) : 0;
}

/* The position in the image decoded at n/8 of output index d, as the
 * separate ops map it (half-pixel centres in the box, edge pixels
 * clamped). */
static double pos(int64_t d, int64_t c, int64_t r, int64_t b, int64_t len, int n, int64_t limit)
{
    double o = (double)b + ((double)(d + c) + 0.5) * (double)len / (double)r - 0.5;
    double s;
    o = fmin(fmax(o, (double)b), (double)(b + len - 1));
    s = (o + 0.5) * n / 8.0 - 0.5;
    return fmin(fmax(s, 0.0), (double)(limit - 1));
}

sl_tensor *ref_same_scale(const sl_tensor *jpeg, const ref_geom *g, int rgb)
{
    struct jpeg_decompress_struct cinfo;
    struct jpeg_error_mgr jerr;
    int c = rgb ? 3 : 1, n, cmyk;
    int64_t ny, nx, hs, ws, shape[3] = {g->oh, g->ow, rgb ? 3 : 1};
    uint8_t *img, *row4;
    sl_tensor *out;
    /* the smallest n/8 at which the box keeps its resized size */
    ny = (8 * g->rh + g->bh - 1) / g->bh;
    nx = (8 * g->rw + g->bw - 1) / g->bw;
    /* of 1, 2, 4, 8: the scales libjpeg-turbo decodes fast */
    n = 1;
    while (n < 8 && n < (ny > nx ? ny : nx))
        n *= 2;
    if (g->rh == g->bh && g->rw == g->bw)
        n = 8;
    cinfo.err = jpeg_std_error(&jerr);
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, sl_tensor_data(jpeg), (unsigned long)sl_tensor_nbytes(jpeg));
    jpeg_read_header(&cinfo, TRUE);
    cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
    cinfo.out_color_space = cmyk ? JCS_CMYK : rgb ? JCS_RGB : JCS_GRAYSCALE;
    cinfo.scale_num = (unsigned)n;
    cinfo.scale_denom = 8;
    jpeg_start_decompress(&cinfo);
    hs = cinfo.output_height;
    ws = cinfo.output_width;
    img = malloc((size_t)hs * ws * c);
    row4 = malloc((size_t)ws * 4);
    ck_assert(img && row4);
    while (cinfo.output_scanline < cinfo.output_height) {
        uint8_t *dst = img + (size_t)cinfo.output_scanline * ws * c;
        JSAMPROW row = cmyk ? row4 : dst;
        jpeg_read_scanlines(&cinfo, &row, 1);
        if (cmyk)
            sl__cmyk_row(dst, row4, (size_t)ws, cinfo.saw_Adobe_marker, rgb);
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    ck_assert_int_eq(sl_tensor_new(&out, SL_UINT8, 3, shape), SL_OK);
    for (int64_t y = 0; y < g->oh; y++)
        for (int64_t x = 0; x < g->ow; x++) {
            uint8_t *o = (uint8_t *)sl_tensor_data(out) + ((size_t)y * g->ow + x) * c;
            double sy, sx, fy, fx;
            int64_t y0, x0, y1, x1;
            if (y + g->cy < 0 || y + g->cy >= g->rh || x + g->cx < 0 || x + g->cx >= g->rw) {
                memset(o, 0, (size_t)c);
                continue;
            }
            sy = pos(y, g->cy, g->rh, g->by, g->bh, n, hs);
            sx = pos(x, g->cx, g->rw, g->bx, g->bw, n, ws);
            y0 = (int64_t)sy;
            x0 = (int64_t)sx;
            fy = sy - (double)y0;
            fx = sx - (double)x0;
            y1 = y0 + 1 < hs ? y0 + 1 : y0;
            x1 = x0 + 1 < ws ? x0 + 1 : x0;
            for (int k = 0; k < c; k++) {
                double v = (1 - fy) * ((1 - fx) * img[((size_t)y0 * ws + x0) * c + k] +
                                       fx * img[((size_t)y0 * ws + x1) * c + k]) +
                           fy * ((1 - fx) * img[((size_t)y1 * ws + x0) * c + k] +
                                 fx * img[((size_t)y1 * ws + x1) * c + k]);
                o[k] = (uint8_t)floor(v + 0.5);
            }
        }
    free(img);
    free(row4);
    return out;
}

ref_diff ref_compare(const sl_tensor *a, const sl_tensor *b, const char *what)
{
    ref_diff d = {0, 0};
    ck_assert_int_eq(sl_tensor_ndim(a), sl_tensor_ndim(b));
    for (int k = 0; k < sl_tensor_ndim(a); k++)
        ck_assert_msg(sl_tensor_shape(a)[k] == sl_tensor_shape(b)[k], "%s: dim %d: %lld, %lld",
                      what, k, (long long)sl_tensor_shape(a)[k], (long long)sl_tensor_shape(b)[k]);
    for (size_t i = 0; i < sl_tensor_nbytes(a); i++) {
        int v = abs((int)((const uint8_t *)sl_tensor_data(a))[i] -
                    ((const uint8_t *)sl_tensor_data(b))[i]);
        d.mean += v;
        d.max = v > d.max ? v : d.max;
    }
    d.mean /= (double)sl_tensor_nbytes(a);
    return d;
}
