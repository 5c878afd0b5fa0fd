/* decode_impl.h: what the Decode op (decode.c) shares with the op that
 * fuses it with the crop or resize after it (decode_fused.c): libjpeg's
 * error handling (every warning an error, a longjmp back, nothing
 * printed), the checks of the bytes and of the header, CMYK conversion and
 * the decode budget. */
#ifndef SLUICE_OPS_VISION_DECODE_IMPL_H
#define SLUICE_OPS_VISION_DECODE_IMPL_H

#include <setjmp.h>
#include <stdio.h> /* jpeglib.h needs FILE */

#include <jpeglib.h>

#include "ops/op_impl.h"

typedef struct sl__decode_err {
    struct jpeg_error_mgr pub; /* first, so libjpeg's pointer is ours */
    jmp_buf jump;
    char msg[JMSG_LENGTH_MAX];
} sl__decode_err;

/* Points cinfo's error manager at e: fatal errors and warnings longjmp to
 * e->jump with the message in e->msg. The caller setjmps before any
 * libjpeg call. */
void sl__decode_err_init(struct jpeg_decompress_struct *cinfo, sl__decode_err *e);
/* SL_OK when in is 1-D uint8 starting like a JPEG; otherwise the message
 * (naming "decode") in ctx->err and an error. in stays the caller's. */
int sl__decode_check_bytes(const sl_tensor *in, sl__error *err);
/* After jpeg_read_header: refuses more than max_pixels pixels, and sets the
 * output colour space (CMYK for CMYK/YCCK files, converted afterwards by
 * sl__cmyk_row; else RGB or grey). */
int sl__decode_check_header(struct jpeg_decompress_struct *cinfo, int rgb, uint64_t max_pixels,
                            sl__error *err);
/* A row of w CMYK pixels to RGB (or grey when rgb is 0), as MindSpore. */
void sl__cmyk_row(uint8_t *dst, const JSAMPLE *src, size_t w, int adobe, int rgb);
/* Takes need bytes (a w x h image) from the pipeline's decode budget. */
int sl__decode_take_budget(sl__op_ctx *ctx, uint64_t need, unsigned w, unsigned h);
/* 1 and the op's parameters if op is a Decode, else 0. */
int sl__op_decode_params(const sl_op *op, int *rgb, uint64_t *max_pixels);

#endif
