/* type_cast.c: the TypeCast op, any tensor -> the same values in another dtype.
 * Conversions are C's: integers narrow modulo 2^n (GCC's documented choice
 * for signed types), floats truncate toward zero. Where C leaves a float to
 * integer conversion undefined (NaN, out of range) we saturate to the
 * target's range and map NaN to 0, so bad data cannot crash or vary by CPU.
 *
 * To keep one loop per type rather than one per type pair, elements go
 * through a small stack chunk in two passes: integers as int64 (exact for
 * every integer dtype), floats as double (exact for float32). Each pass is a
 * tight loop, and the result equals converting directly. The casts images
 * usually take (uint8 to float32 or int32) have direct loops. */
#include "ops/op_impl.h"

#include <string.h>

#define CAST_CHUNK 256

typedef struct type_cast_op {
    sl_op base;
    sl_dtype dtype;
} type_cast_op;

/* A chunk of source values in their widest form of the same kind. */
typedef union cast_chunk {
    int64_t i[CAST_CHUNK];
    double f[CAST_CHUNK];
} cast_chunk;

static int is_float(sl_dtype dtype)
{
    return dtype == SL_FLOAT32 || dtype == SL_FLOAT64;
}

static int type_cast_infer(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                           sl__error *err)
{
    if (sl_dtype_size(in->dtype) == 0)
        return sl__errf(err, SL_ESHAPE, "type_cast: unknown input dtype %d", (int)in->dtype);
    *out = *in;
    out->dtype = ((const type_cast_op *)op)->dtype;
    return SL_OK;
}

/* Loads n integer elements starting at element `first` into buf. */
static void load_ints(int64_t *buf, const void *src, sl_dtype from, size_t first, size_t n)
{
    switch (from) {
    case SL_UINT8: {
        const uint8_t *p = (const uint8_t *)src + first;
        for (size_t i = 0; i < n; i++)
            buf[i] = p[i];
        break;
    }
    case SL_INT32: {
        const int32_t *p = (const int32_t *)src + first;
        for (size_t i = 0; i < n; i++)
            buf[i] = p[i];
        break;
    }
    case SL_UINT32: {
        const uint32_t *p = (const uint32_t *)src + first;
        for (size_t i = 0; i < n; i++)
            buf[i] = p[i];
        break;
    }
    case SL_INT64:
        memcpy(buf, (const int64_t *)src + first, n * sizeof *buf);
        break;
    default:
        SL_ASSERT(!"type_cast: not an integer dtype");
    }
}

static void load_floats(double *buf, const void *src, sl_dtype from, size_t first, size_t n)
{
    if (from == SL_FLOAT32) {
        const float *p = (const float *)src + first;
        for (size_t i = 0; i < n; i++)
            buf[i] = p[i];
    } else {
        SL_ASSERT(from == SL_FLOAT64);
        memcpy(buf, (const double *)src + first, n * sizeof *buf);
    }
}

/* Stores n int64 values as dtype `to` at element `first` of dst. */
static void store_ints(void *dst, sl_dtype to, size_t first, const int64_t *buf, size_t n)
{
    switch (to) {
    case SL_UINT8: {
        uint8_t *p = (uint8_t *)dst + first;
        for (size_t i = 0; i < n; i++)
            p[i] = (uint8_t)buf[i];
        break;
    }
    case SL_INT32: {
        int32_t *p = (int32_t *)dst + first;
        for (size_t i = 0; i < n; i++)
            p[i] = (int32_t)buf[i];
        break;
    }
    case SL_UINT32: {
        uint32_t *p = (uint32_t *)dst + first;
        for (size_t i = 0; i < n; i++)
            p[i] = (uint32_t)buf[i];
        break;
    }
    case SL_INT64:
        memcpy((int64_t *)dst + first, buf, n * sizeof *buf);
        break;
    case SL_FLOAT32: {
        float *p = (float *)dst + first;
        for (size_t i = 0; i < n; i++)
            p[i] = (float)buf[i];
        break;
    }
    case SL_FLOAT64: {
        double *p = (double *)dst + first;
        for (size_t i = 0; i < n; i++)
            p[i] = (double)buf[i];
        break;
    }
    default:
        SL_ASSERT(!"type_cast: unknown dtype");
    }
}

/* Truncates x toward zero, saturating to [lo, hi]; NaN gives 0. lo and hi
 * are exact doubles, and every value strictly between them converts
 * without overflow. */
static int64_t trunc_sat(double x, double lo, double hi, int64_t ilo, int64_t ihi)
{
    if (x != x)
        return 0;
    if (x <= lo)
        return ilo;
    if (x >= hi)
        return ihi;
    return (int64_t)x;
}

static void store_floats(void *dst, sl_dtype to, size_t first, const double *buf, size_t n)
{
    switch (to) {
    case SL_UINT8: {
        uint8_t *p = (uint8_t *)dst + first;
        for (size_t i = 0; i < n; i++)
            p[i] = (uint8_t)trunc_sat(buf[i], 0.0, 255.0, 0, 255);
        break;
    }
    case SL_INT32: {
        int32_t *p = (int32_t *)dst + first;
        for (size_t i = 0; i < n; i++)
            p[i] = (int32_t)trunc_sat(buf[i], -2147483648.0, 2147483647.0, INT32_MIN,
                                      INT32_MAX);
        break;
    }
    case SL_UINT32: {
        uint32_t *p = (uint32_t *)dst + first;
        for (size_t i = 0; i < n; i++)
            p[i] = (uint32_t)trunc_sat(buf[i], 0.0, 4294967295.0, 0, UINT32_MAX);
        break;
    }
    case SL_INT64: {
        /* 2^63 is the first double past INT64_MAX. */
        int64_t *p = (int64_t *)dst + first;
        for (size_t i = 0; i < n; i++)
            p[i] = trunc_sat(buf[i], -9223372036854775808.0, 9223372036854775808.0, INT64_MIN,
                             INT64_MAX);
        break;
    }
    case SL_FLOAT32: {
        float *p = (float *)dst + first;
        for (size_t i = 0; i < n; i++)
            p[i] = (float)buf[i];
        break;
    }
    case SL_FLOAT64:
        memcpy((double *)dst + first, buf, n * sizeof *buf);
        break;
    default:
        SL_ASSERT(!"type_cast: unknown dtype");
    }
}

/* Direct loops for the casts images take, in blocks of a fixed 16 that GCC
 * vectorizes at -O2. */
static void cast_u8_f32(float *restrict dst, const uint8_t *restrict src, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (size_t j = i; j < i + 16; j++)
            dst[j] = (float)src[j];
    for (; i < n; i++)
        dst[i] = (float)src[i];
}

static void cast_u8_i32(int32_t *restrict dst, const uint8_t *restrict src, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (size_t j = i; j < i + 16; j++)
            dst[j] = (int32_t)src[j];
    for (; i < n; i++)
        dst[i] = (int32_t)src[i];
}

/* dst = src converted from dtype `from` to dtype `to`, n elements. */
static void type_cast_kernel(void *dst, sl_dtype to, const void *src, sl_dtype from, size_t n)
{
    cast_chunk chunk;
    if (from == SL_UINT8 && to == SL_FLOAT32) {
        cast_u8_f32(dst, src, n);
        return;
    }
    if (from == SL_UINT8 && to == SL_INT32) {
        cast_u8_i32(dst, src, n);
        return;
    }
    for (size_t first = 0; first < n; first += CAST_CHUNK) {
        size_t m = n - first < CAST_CHUNK ? n - first : CAST_CHUNK;
        if (is_float(from)) {
            load_floats(chunk.f, src, from, first, m);
            store_floats(dst, to, first, chunk.f, m);
        } else {
            load_ints(chunk.i, src, from, first, m);
            store_ints(dst, to, first, chunk.i, m);
        }
    }
}

static int type_cast_run(const sl_op *op, sl_tensor *in, sl_tensor **out, sl__op_ctx *ctx)
{
    sl_dtype to = ((const type_cast_op *)op)->dtype;
    sl_tensor *res;
    char buf[96];
    int rc;

    *out = NULL;
    if (sl_dtype_size(in->dtype) == 0) {
        rc = sl__errf(ctx->err, SL_ESHAPE, "type_cast: unknown input dtype %d", (int)in->dtype);
        sl_tensor_release(in);
        return rc;
    }
    if (in->dtype == to) {
        *out = in;
        return SL_OK;
    }
    /* int32 <-> uint32 keeps every bit (GCC converts modulo 2^32), so a
     * tensor we alone hold just changes its dtype: MNIST's uint32 labels
     * become the int32 LeNet wants without a copy. */
    if (sl__tensor_writable(in) && ((in->dtype == SL_UINT32 && to == SL_INT32) ||
                                    (in->dtype == SL_INT32 && to == SL_UINT32))) {
        in->dtype = to;
        *out = in;
        return SL_OK;
    }
    /* Never in place, even between equal sizes: reading the input through
     * one type and writing it through another breaks C's aliasing rules. */
    rc = sl__tensor_alloc(&res, ctx->pool, to, in->ndim, in->shape);
    if (rc != SL_OK) {
        sl__errf(ctx->err, rc, "type_cast: cannot allocate a %s tensor %s", sl_dtype_name(to),
                 sl_shape_str(buf, sizeof buf, in->ndim, in->shape));
        sl_tensor_release(in);
        return rc;
    }
    type_cast_kernel(res->data, to, in->data, in->dtype, in->numel);
    sl_tensor_release(in);
    *out = res;
    return SL_OK;
}

static const sl_op_iface type_cast_iface = {
    .name = "type_cast",
    .infer = type_cast_infer,
    .run = type_cast_run,
    .destroy = NULL,
};

int sl_op_type_cast_new(sl_op **out, sl_dtype dtype, char *err, size_t err_len)
{
    int rc;
    *out = NULL;
    if (sl_dtype_size(dtype) == 0)
        return sl__err_out(err, err_len, SL_EINVAL, "type_cast: unknown dtype %d", (int)dtype);
    rc = sl__op_alloc(out, sizeof(type_cast_op), &type_cast_iface, 0);
    if (rc != SL_OK)
        return sl__err_out(err, err_len, rc, "type_cast: out of memory");
    ((type_cast_op *)*out)->dtype = dtype;
    return SL_OK;
}
