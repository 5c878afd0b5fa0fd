/* fuzz_decode.c: libFuzzer harness of the Decode op (ops/vision/decode.c):
 * the input is the bytes of one encoded image, decoded to RGB and to
 * grayscale, as sl_op_apply runs any op. max_pixels is kept small
 * (MAX_PIXELS) so the fuzzer spends its time on headers and scans rather
 * than on decoding large images; a larger one is refused from its header,
 * which is one of the paths under test. The same bytes go through the
 * Decode fused with the crop and resize after it (ops/vision/decode_fused.c:
 * a RandomResizedCrop's box, Resize of the shorter side + CenterCrop, a
 * padded CenterCrop), which decode only part of the image. Refusals are
 * expected; only crashes, sanitizer reports and leaks count. */
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_util.h"
#include "ops/op_impl.h"

#define MAX_PIXELS (128u * 128u)

static sl_op *decode_rgb, *decode_gray;
static sl_op *fused[3]; /* decode+random_resized_crop, +resize+center_crop, +center_crop */

static void release_ops(void)
{
    sl_op_release(decode_rgb);
    sl_op_release(decode_gray);
    for (int k = 0; k < 3; k++)
        sl_op_release(fused[k]);
}

/* decode followed by ops[0..n), fused (as a pipeline plans it). */
static sl_op *fuse(sl_op *decode, sl_op **ops, size_t n)
{
    sl_op *chain[3] = {decode, n > 0 ? ops[0] : NULL, n > 1 ? ops[1] : NULL}, *f = NULL;
    size_t used;
    if (sl__op_fuse(chain, n + 1, &f, &used) != SL_OK || !f)
        abort();
    for (size_t k = 0; k < n; k++)
        sl_op_release(ops[k]);
    return f;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    sl_op *ops[2];
    if (sl_op_decode_new_limited(&decode_rgb, 1, MAX_PIXELS, NULL, 0) != SL_OK ||
        sl_op_decode_new_limited(&decode_gray, 0, MAX_PIXELS, NULL, 0) != SL_OK)
        abort();
    if (sl_op_random_resized_crop_new(&ops[0], 24, 24, 0.08, 1, 0.75, 4.0 / 3.0,
                                      SL_INTER_LINEAR, 10, NULL, 0) != SL_OK)
        abort();
    fused[0] = fuse(decode_rgb, ops, 1);
    if (sl_op_resize_shorter_side_new(&ops[0], 20, SL_INTER_LINEAR, NULL, 0) != SL_OK ||
        sl_op_center_crop_new(&ops[1], 16, 16, NULL, 0) != SL_OK)
        abort();
    fused[1] = fuse(decode_gray, ops, 2);
    if (sl_op_center_crop_new(&ops[0], 40, 200, NULL, 0) != SL_OK)
        abort();
    fused[2] = fuse(decode_rgb, ops, 1);
    atexit(release_ops);
    return 0;
}

static void decode(const sl_op *op, const sl_tensor *in, uint64_t seed)
{
    sl_tensor *out = NULL;
    char msg[256];
    if (sl_op_apply(op, in, &out, seed, msg, sizeof msg) == SL_OK)
        sl_tensor_release(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int64_t shape[1] = {(int64_t)size};
    sl_tensor *in = NULL;

    if (sl_tensor_new(&in, SL_UINT8, 1, shape) != SL_OK)
        return 0;
    if (size > 0)
        memcpy(sl_tensor_data(in), data, size);
    decode(decode_rgb, in, 0);
    decode(decode_gray, in, 0);
    for (int k = 0; k < 3; k++)
        decode(fused[k], in, size);
    sl_tensor_release(in);
    return 0;
}
