/* check_ops_decode.c: Decode against libjpeg called directly, and bytes
 * that are not a JPEG or a JPEG cut short; part of check_ops
 * (check_ops.h). */
#include <fcntl.h>
#include <setjmp.h>
#include <stdio.h> /* before jpeglib.h, which needs FILE */
#include <sys/stat.h>
#include <unistd.h>

#include <jpeglib.h>

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/op.h"
#include "sluice/status.h"
#include "sluice/tensor.h"
#include "core/pool.h"
#include "core/rng.h"
#include "ops/op_impl.h"
#include "tests/check_ops.h"
#include "tests/testutil.h"

/* --- decode ---------------------------------------------------------------- */

typedef struct ref_jpeg {
    struct jpeg_decompress_struct cinfo;
    struct jpeg_error_mgr jerr;
    jmp_buf jump;
} ref_jpeg;

static void ref_error_exit(j_common_ptr cinfo)
{
    longjmp(((ref_jpeg *)cinfo->client_data)->jump, 1);
}

/* Decodes a valid JPEG with libjpeg directly, default settings; returns a
 * malloc'd (h, w, c) buffer. */
static uint8_t *ref_decode(const uint8_t *data, size_t len, int rgb, int *h, int *w, int *c)
{
    ref_jpeg *r = calloc(1, sizeof *r);
    uint8_t *px;
    ck_assert_ptr_nonnull(r);
    r->cinfo.err = jpeg_std_error(&r->jerr);
    r->jerr.error_exit = ref_error_exit;
    r->cinfo.client_data = r;
    if (setjmp(r->jump))
        ck_abort_msg("reference decode failed");
    jpeg_create_decompress(&r->cinfo);
    jpeg_mem_src(&r->cinfo, data, (unsigned long)len);
    jpeg_read_header(&r->cinfo, TRUE);
    r->cinfo.out_color_space = rgb ? JCS_RGB : JCS_GRAYSCALE;
    if (r->cinfo.jpeg_color_space == JCS_CMYK)
        r->cinfo.out_color_space = JCS_CMYK;
    jpeg_start_decompress(&r->cinfo);
    *h = (int)r->cinfo.output_height;
    *w = (int)r->cinfo.output_width;
    *c = r->cinfo.output_components;
    px = malloc((size_t)*h * *w * *c);
    ck_assert_ptr_nonnull(px);
    while (r->cinfo.output_scanline < r->cinfo.output_height) {
        JSAMPROW row = px + (size_t)r->cinfo.output_scanline * *w * *c;
        jpeg_read_scanlines(&r->cinfo, &row, 1);
    }
    if (r->cinfo.out_color_space == JCS_CMYK) {
        /* MindSpore's conversion of (inverted, Adobe) CMYK, then libjpeg's
         * gray weights. */
        size_t n = (size_t)*h * *w;
        uint8_t *conv = malloc(n * (rgb ? 3 : 1));
        ck_assert_ptr_nonnull(conv);
        ck_assert(r->cinfo.saw_Adobe_marker);
        for (size_t i = 0; i < n; i++) {
            int k = px[4 * i + 3];
            int rr = px[4 * i] * k / 255, gg = px[4 * i + 1] * k / 255,
                bb = px[4 * i + 2] * k / 255;
            if (rgb) {
                conv[3 * i] = (uint8_t)rr;
                conv[3 * i + 1] = (uint8_t)gg;
                conv[3 * i + 2] = (uint8_t)bb;
            } else {
                conv[i] = (uint8_t)lround(0.299 * rr + 0.587 * gg + 0.114 * bb);
            }
        }
        free(px);
        px = conv;
        *c = rgb ? 3 : 1;
    }
    jpeg_finish_decompress(&r->cinfo);
    jpeg_destroy_decompress(&r->cinfo);
    free(r);
    return px;
}

/* A JPEG written with libjpeg directly, for what testutil does not make:
 * progressive files, and CMYK files (comps 4, with an Adobe marker). The
 * pixels follow the tu_fill_image pattern. */
static void encode_special(uint8_t **out, size_t *len, int w, int h, int comps, int progressive)
{
    struct jpeg_compress_struct cinfo;
    struct jpeg_error_mgr jerr;
    unsigned char *buf = NULL;
    unsigned long n = 0;
    uint8_t *px = malloc((size_t)w * h * comps);
    ck_assert_ptr_nonnull(px);
    tu_fill_image(px, w, h, comps, 5);
    cinfo.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&cinfo);
    jpeg_mem_dest(&cinfo, &buf, &n);
    cinfo.image_width = (JDIMENSION)w;
    cinfo.image_height = (JDIMENSION)h;
    cinfo.input_components = comps;
    cinfo.in_color_space = comps == 4 ? JCS_CMYK : JCS_RGB;
    jpeg_set_defaults(&cinfo);
    if (progressive)
        jpeg_simple_progression(&cinfo);
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = px + (size_t)cinfo.next_scanline * w * comps;
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    free(px);
    *out = buf;
    *len = n;
}

static uint8_t *make_jpeg(size_t *len, int w, int h, int c, uint32_t seed)
{
    uint8_t *px = malloc((size_t)w * h * c), *jpg = NULL;
    ck_assert_ptr_nonnull(px);
    tu_fill_image(px, w, h, c, seed);
    ck_assert_int_eq(tu_encode_jpeg(&jpg, len, px, w, h, c, 90), 0);
    free(px);
    return jpg;
}

static sl_tensor *bytes_tensor(const uint8_t *data, size_t len)
{
    sl_tensor *t = new_tensor(SL_UINT8, 1, (int64_t)len, 0, 0);
    if (len)
        memcpy(sl_tensor_data(t), data, len);
    return t;
}

/* Decodes with op and compares with the reference decoder, byte for byte. */
static void check_decode(const sl_op *op, const uint8_t *jpg, size_t len, int rgb, sl_pool *pool)
{
    sl_tensor *in = bytes_tensor(jpg, len), *out;
    sl__error err;
    int h, w, c;
    uint8_t *want = ref_decode(jpg, len, rgb, &h, &w, &c);
    ck_assert_int_eq(run_owned(op, in, &out, 0, pool, &err), SL_OK);
    check_shape(out, SL_UINT8, 3, h, w, rgb ? 3 : 1);
    ck_assert_int_eq(c, rgb ? 3 : 1);
    ck_assert(memcmp(sl_tensor_data(out), want, (size_t)h * w * c) == 0);
    sl_tensor_release(out);
    free(want);
}

START_TEST(test_decode_matches_libjpeg)
{
    sl_op *rgb, *gray;
    sl_pool *pool = sl__pool_new();
    size_t len;
    uint8_t *jpg;
    ck_assert_int_eq(sl_op_decode_new(&rgb, 1, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_decode_new(&gray, 0, NULL, 0), SL_OK);
    ck_assert_str_eq(sl_op_name(rgb), "decode");

    jpg = make_jpeg(&len, 37, 23, 3, 1); /* odd sizes: partial MCUs */
    check_decode(rgb, jpg, len, 1, NULL);
    check_decode(gray, jpg, len, 0, pool);
    free(jpg);
    jpg = make_jpeg(&len, 64, 48, 1, 2); /* a grayscale file */
    check_decode(rgb, jpg, len, 1, pool);
    check_decode(gray, jpg, len, 0, NULL);
    free(jpg);
    encode_special(&jpg, &len, 50, 40, 3, 1);
    check_decode(rgb, jpg, len, 1, NULL);
    free(jpg);

    encode_special(&jpg, &len, 21, 19, 4, 0); /* CMYK */
    check_decode(rgb, jpg, len, 1, NULL);
    check_decode(gray, jpg, len, 0, NULL);
    free(jpg);

    /* Through the public entry, the bytes stay untouched. */
    jpg = make_jpeg(&len, 16, 16, 3, 3);
    {
        sl_tensor *in = bytes_tensor(jpg, len), *out;
        ck_assert_int_eq(apply(rgb, in, &out, 0, NULL, 0), SL_OK);
        check_shape(out, SL_UINT8, 3, 16, 16, 3);
        ck_assert(memcmp(sl_tensor_data(in), jpg, len) == 0);
        ck_assert_int_eq(sl_tensor_refcount(in), 1);
        sl_tensor_release(out);
        sl_tensor_release(in);
    }
    free(jpg);
    sl_op_release(rgb);
    sl_op_release(gray);
    sl__pool_release(pool);
}
END_TEST

/* Points stderr at a temporary file; returns the saved descriptor. */
static int capture_stderr(FILE **tmp)
{
    int saved;
    fflush(stderr);
    *tmp = tmpfile();
    ck_assert_ptr_nonnull(*tmp);
    saved = dup(2);
    ck_assert_int_ge(saved, 0);
    ck_assert_int_ge(dup2(fileno(*tmp), 2), 0);
    return saved;
}

/* Restores stderr and returns how many bytes were written to it. */
static long restore_stderr(int saved, FILE *tmp)
{
    struct stat st;
    fflush(stderr);
    ck_assert_int_ge(dup2(saved, 2), 0);
    close(saved);
    ck_assert_int_eq(fstat(fileno(tmp), &st), 0);
    fclose(tmp);
    return (long)st.st_size;
}

static int decode_bytes(const sl_op *op, const uint8_t *data, size_t len, char *msg, size_t n)
{
    sl_tensor *in = bytes_tensor(data, len), *out;
    int rc = apply(op, in, &out, 0, msg, n);
    sl_tensor_release(out);
    sl_tensor_release(in);
    return rc;
}

START_TEST(test_decode_bad_bytes)
{
    static const uint8_t png[] = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13};
    static const uint8_t soi_junk[] = {0xFF, 0xD8, 0xFF, 0x01, 0x02, 0x03, 0x04, 0x05};
    sl_op *op;
    size_t len;
    uint8_t *jpg = make_jpeg(&len, 40, 32, 3, 4), *prog;
    size_t plen;
    char msg[256];
    FILE *tmp;
    int saved;

    ck_assert_int_eq(sl_op_decode_new(&op, 1, NULL, 0), SL_OK);
    saved = capture_stderr(&tmp);

    ck_assert_int_eq(decode_bytes(op, png, sizeof png, msg, sizeof msg), SL_EFORMAT);
    ck_assert_msg(strstr(msg, "decode: not a JPEG"), "%s", msg);
    ck_assert_int_eq(decode_bytes(op, png, 2, msg, sizeof msg), SL_EFORMAT);
    ck_assert_int_eq(decode_bytes(op, png, 0, msg, sizeof msg), SL_EFORMAT);
    ck_assert_int_eq(decode_bytes(op, soi_junk, sizeof soi_junk, msg, sizeof msg), SL_EFORMAT);
    ck_assert_msg(strstr(msg, "decode:"), "%s", msg);

    /* Cut mid-scan: libjpeg only warns ("Premature end of JPEG file") and
     * would fill the rest with grey; we must fail. */
    ck_assert_int_eq(decode_bytes(op, jpg, len / 2, msg, sizeof msg), SL_EFORMAT);
    ck_assert_msg(strstr(msg, "decode: cannot decode JPEG") && strstr(msg, "Premature end"), "%s",
                  msg);
    /* Cut inside the headers. */
    ck_assert_int_eq(decode_bytes(op, jpg, 30, msg, sizeof msg), SL_EFORMAT);
    /* Every cut before the last entropy-coded bytes fails, and none crashes. */
    for (size_t n = 0; n + 16 < len; n++)
        ck_assert_msg(decode_bytes(op, jpg, n, msg, sizeof msg) == SL_EFORMAT, "cut at %zu", n);
    /* A progressive file is read whole in start_decompress. */
    encode_special(&prog, &plen, 48, 40, 3, 1);
    for (size_t n = plen / 4; n + 16 < plen; n += 7)
        ck_assert_msg(decode_bytes(op, prog, n, msg, sizeof msg) == SL_EFORMAT, "cut at %zu", n);
    free(prog);

    /* Flipped bytes in the scan: an error or an image, never a crash. */
    for (size_t i = len / 3; i < len - 2; i += 5) {
        uint8_t *bad = malloc(len);
        sl_tensor *in, *out;
        int rc;
        ck_assert_ptr_nonnull(bad);
        memcpy(bad, jpg, len);
        bad[i] ^= 0x5A;
        in = bytes_tensor(bad, len);
        rc = apply(op, in, &out, 0, msg, sizeof msg);
        ck_assert(rc == SL_OK || rc == SL_EFORMAT);
        if (rc == SL_OK)
            check_shape(out, SL_UINT8, 3, 32, 40, 3);
        sl_tensor_release(out);
        sl_tensor_release(in);
        free(bad);
    }

    ck_assert_int_eq(restore_stderr(saved, tmp), 0); /* nothing printed */
    free(jpg);
    sl_op_release(op);
}
END_TEST

/* Rewrites the frame header (SOF0) of a baseline JPEG to claim h x w. */
static void patch_sof(uint8_t *jpg, size_t len, unsigned h, unsigned w)
{
    for (size_t i = 2; i + 9 < len; i++) {
        if (jpg[i] == 0xFF && jpg[i + 1] == 0xC0) {
            jpg[i + 5] = (uint8_t)(h >> 8);
            jpg[i + 6] = (uint8_t)h;
            jpg[i + 7] = (uint8_t)(w >> 8);
            jpg[i + 8] = (uint8_t)w;
            return;
        }
    }
    ck_abort_msg("no SOF0 marker");
}

START_TEST(test_decode_refusals)
{
    sl_op *op;
    size_t len;
    uint8_t *jpg = make_jpeg(&len, 16, 16, 3, 5);
    sl_tensor *in, *out;
    sl_tensor_spec si = spec_of(SL_UINT8, 1, -1, 0, 0), so;
    char msg[256];

    ck_assert_int_eq(sl_op_decode_new(&op, 2, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_decode_new_limited(&op, 1, 0, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_decode_new_limited(&op, 1, SL_DECODE_MAX_PIXELS_LIMIT + 1, NULL, 0),
                     SL_EINVAL);
    ck_assert_ptr_null(op);
    ck_assert_int_eq(sl_op_decode_new(&op, 1, NULL, 0), SL_OK);
    /* Absurd sizes are refused before anything is allocated. */
    patch_sof(jpg, len, 40000, 40000);
    ck_assert_int_eq(decode_bytes(op, jpg, len, msg, sizeof msg), SL_EFORMAT);
    ck_assert_msg(strstr(msg, "too large"), "%s", msg);
    patch_sof(jpg, len, 20000, 20000); /* each side fine, 4e8 pixels not */
    ck_assert_int_eq(decode_bytes(op, jpg, len, msg, sizeof msg), SL_EFORMAT);
    ck_assert_msg(strstr(msg, "too large") && strstr(msg, "20000x20000") &&
                      strstr(msg, "max_pixels = 67108864"),
                  "%s", msg);
    free(jpg);

    /* Wrong rank or dtype. */
    in = new_tensor(SL_UINT8, 2, 4, 4, 0);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "decode") && strstr(msg, "(4, 4)"), "%s", msg);
    sl_tensor_release(in);
    in = new_tensor(SL_INT32, 1, 4, 0, 0);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    sl_tensor_release(in);

    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_OK);
    ck_assert_int_eq(so.dtype, SL_UINT8);
    ck_assert_int_eq(so.ndim, 3);
    ck_assert_int_eq(so.shape[0], -1);
    ck_assert_int_eq(so.shape[1], -1);
    ck_assert_int_eq(so.shape[2], 3);
    si = spec_of(SL_FLOAT32, 1, -1, 0, 0);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_ESHAPE);
    sl_op_release(op);
}
END_TEST

START_TEST(test_infer_bad_spec)
{
    /* A spec the caller filled in wrong (rank beyond SL_MAX_DIMS, negative
     * rank, unknown dtype) is refused (SL_ESHAPE) by every op, never read past. */
    sl_op *ops[4];
    sl_tensor_spec bad[3] = {spec_of(SL_FLOAT32, 3, 4, 4, 1), spec_of(SL_UINT8, 3, 4, 4, 1),
                             spec_of(SL_UINT8, 3, 4, 4, 1)}, so;
    char msg[256];
    bad[0].ndim = SL_MAX_DIMS + 1;
    bad[1].ndim = -1;
    bad[2].dtype = (sl_dtype)77;
    ck_assert_int_eq(sl_op_one_hot_new(&ops[0], 5, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_type_cast_new(&ops[1], SL_INT32, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_rescale_new(&ops[2], 1.0, 0.0, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_hwc2chw_new(&ops[3], NULL, 0), SL_OK);
    for (int i = 0; i < 4; i++) {
        for (int k = 0; k < 3; k++) {
            msg[0] = '\0';
            ck_assert_int_eq(sl_op_infer(ops[i], &bad[k], &so, msg, sizeof msg), SL_ESHAPE);
            ck_assert_msg(strlen(msg) > 0, "%s: no message", sl_op_name(ops[i]));
        }
        sl_op_release(ops[i]);
    }
}
END_TEST

void ops_add_decode_tests(TCase *core, TCase *limits)
{
    tcase_add_test(core, test_decode_matches_libjpeg);
    tcase_add_test(limits, test_decode_bad_bytes);
    tcase_add_test(limits, test_decode_refusals);
    tcase_add_test(limits, test_infer_bad_spec);
}
