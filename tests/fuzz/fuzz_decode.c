/* fuzz_decode.c: libFuzzer harness of the Decode op (ops/vision/decode.c):
 * the input is the bytes of one encoded image, decoded to RGB and to
 * grayscale, as sl_op_apply runs any op. max_pixels is kept small
 * (MAX_PIXELS) so the fuzzer spends its time on headers and scans rather
 * than on decoding large images; a larger one is refused from its header,
 * which is one of the paths under test. Refusals are expected; only
 * crashes, sanitizer reports and leaks count. */
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_util.h"

#define MAX_PIXELS (128u * 128u)

static sl_op *decode_rgb, *decode_gray;

static void release_ops(void)
{
    sl_op_release(decode_rgb);
    sl_op_release(decode_gray);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (sl_op_decode_new_limited(&decode_rgb, 1, MAX_PIXELS, NULL, 0) != SL_OK ||
        sl_op_decode_new_limited(&decode_gray, 0, MAX_PIXELS, NULL, 0) != SL_OK)
        abort();
    atexit(release_ops);
    return 0;
}

static void decode(const sl_op *op, const sl_tensor *in)
{
    sl_tensor *out = NULL;
    char msg[256];
    if (sl_op_apply(op, in, &out, 0, msg, sizeof msg) == SL_OK)
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
    decode(decode_rgb, in);
    decode(decode_gray, in);
    sl_tensor_release(in);
    return 0;
}
