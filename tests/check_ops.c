/* check_ops.c: the vision operators against independent references: plain
 * double-precision loops written here (padding then cropping, mirroring,
 * ...) and known values, and every refusal: wrong rank or dtype, bad
 * constructor arguments, labels out of range. Resize's tests are in
 * check_ops_resize.c, Decode's (against libjpeg called directly) in
 * check_ops_decode.c; the helpers they share are here (check_ops.h). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "sluice/op.h"
#include "sluice/status.h"
#include "sluice/tensor.h"
#include "core/pool.h"
#include "core/rng.h"
#include "ops/op_impl.h"
#include "ops/vision/resize_impl.h"
#include "tests/testutil.h"
#include "tests/check_ops.h"

Suite *make_ops_suite(void);


/* --- helpers -------------------------------------------------------------- */

sl_tensor *new_tensor(sl_dtype dtype, int ndim, int64_t d0, int64_t d1, int64_t d2)
{
    int64_t shape[3] = {d0, d1, d2};
    sl_tensor *t = NULL;
    ck_assert_int_eq(sl_tensor_new(&t, dtype, ndim, shape), SL_OK);
    return t;
}

/* Deterministic pseudo-random bytes / floats in [0, 1) for inputs. */
uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

void fill_u8(sl_tensor *t, uint32_t seed)
{
    uint8_t *p = sl_tensor_data(t);
    for (size_t i = 0; i < sl_tensor_numel(t); i++)
        p[i] = (uint8_t)lcg(&seed);
}

void fill_f32(sl_tensor *t, uint32_t seed)
{
    float *p = sl_tensor_data(t);
    for (size_t i = 0; i < sl_tensor_numel(t); i++)
        p[i] = (float)(lcg(&seed) & 0xffff) / 65536.0f;
}

/* Runs op through the public entry point; in is left untouched. */
int apply(const sl_op *op, const sl_tensor *in, sl_tensor **out, uint64_t seed,
                 char *msg, size_t len)
{
    *out = (sl_tensor *)0x1; /* must be overwritten, with NULL on failure */
    int rc = sl_op_apply(op, in, out, seed, msg, len);
    if (rc != SL_OK)
        ck_assert_ptr_null(*out);
    else
        ck_assert_ptr_nonnull(*out);
    return rc;
}

/* Runs op through the internal entry with a sole reference to in, so ops
 * may work in place; pool may be NULL. */
int run_owned(const sl_op *op, sl_tensor *in, sl_tensor **out, uint64_t seed,
                     sl_pool *pool, sl__error *err)
{
    sl__op_ctx ctx;
    memset(&ctx, 0, sizeof ctx); /* no decode budget */
    ctx.pool = pool;
    ctx.err = err;
    sl__err_clear(err);
    sl__rng_seed(&ctx.rng, seed, 0, 0, 0);
    return sl__op_run(op, in, out, &ctx);
}

void check_shape(const sl_tensor *t, sl_dtype dtype, int ndim, int64_t d0, int64_t d1,
                        int64_t d2)
{
    int64_t want[3] = {d0, d1, d2};
    ck_assert_int_eq(sl_tensor_dtype(t), dtype);
    ck_assert_int_eq(sl_tensor_ndim(t), ndim);
    for (int i = 0; i < ndim; i++)
        ck_assert_int_eq(sl_tensor_shape(t)[i], want[i]);
}

sl_tensor_spec spec_of(sl_dtype dtype, int ndim, int64_t d0, int64_t d1, int64_t d2)
{
    sl_tensor_spec s;
    memset(&s, 0, sizeof s);
    s.dtype = dtype;
    s.ndim = ndim;
    s.shape[0] = d0;
    s.shape[1] = d1;
    s.shape[2] = d2;
    return s;
}

sl_tensor *clone(const sl_tensor *t)
{
    sl_tensor *c = NULL;
    ck_assert_int_eq(sl_tensor_new(&c, sl_tensor_dtype(t), sl_tensor_ndim(t), sl_tensor_shape(t)),
                     SL_OK);
    memcpy(sl_tensor_data(c), sl_tensor_data(t), sl_tensor_nbytes(t));
    return c;
}

int same_bytes(const sl_tensor *a, const sl_tensor *b)
{
    return sl_tensor_nbytes(a) == sl_tensor_nbytes(b) &&
           memcmp(sl_tensor_data(a), sl_tensor_data(b), sl_tensor_nbytes(a)) == 0;
}

/* t's values as doubles (malloc'd), for the references to compute on. */
double *to_double(const sl_tensor *t)
{
    size_t n = sl_tensor_numel(t);
    double *d = malloc(n * sizeof *d);
    ck_assert_ptr_nonnull(d);
    for (size_t i = 0; i < n; i++)
        d[i] = sl__load_as_double(sl_tensor_data(t), sl_tensor_dtype(t), i);
    return d;
}

/* --- rescale --------------------------------------------------------------- */

START_TEST(test_rescale_dtypes)
{
    const double scale = 1.0 / 0.3081, shift = -0.1307 / 0.3081;
    sl_dtype dts[] = {SL_UINT8, SL_INT32, SL_UINT32, SL_INT64, SL_FLOAT32, SL_FLOAT64};
    sl_op *op;
    ck_assert_int_eq(sl_op_rescale_new(&op, scale, shift, NULL, 0), SL_OK);
    ck_assert_str_eq(sl_op_name(op), "rescale");
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        sl_tensor *in = new_tensor(dts[d], 3, 3, 4, 2), *out, *copy;
        void *p = sl_tensor_data(in);
        const float *got;
        for (size_t i = 0; i < 24; i++) {
            double v = (double)(i * 11 % 256);
            switch (dts[d]) {
            case SL_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
            case SL_INT32: ((int32_t *)p)[i] = (int32_t)v - 100; break;
            case SL_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
            case SL_INT64: ((int64_t *)p)[i] = (int64_t)v - 50; break;
            case SL_FLOAT32: ((float *)p)[i] = (float)(v / 255.0); break;
            default: ((double *)p)[i] = v / 7.0 - 3.0; break;
            }
        }
        copy = clone(in);
        ck_assert_int_eq(apply(op, in, &out, 0, NULL, 0), SL_OK);
        ck_assert(same_bytes(in, copy)); /* apply leaves its input alone */
        check_shape(out, SL_FLOAT32, 3, 3, 4, 2);
        got = sl_tensor_data(out);
        for (size_t i = 0; i < 24; i++) {
            double want = sl__load_as_double(p, dts[d], i) * scale + shift;
            ck_assert_msg(close_enough(got[i], want),
                          "%s element %zu: got %.7f want %.7f", sl_dtype_name(dts[d]), i,
                          got[i], want);
        }
        sl_tensor_release(out);
        sl_tensor_release(copy);
        sl_tensor_release(in);
    }
    sl_op_release(op);
}
END_TEST

START_TEST(test_rescale_in_place)
{
    sl_op *op;
    sl_tensor *in = new_tensor(SL_FLOAT32, 2, 5, 3, 0), *out, *copy;
    sl__error err;
    const float *got, *src;
    fill_f32(in, 4);
    copy = clone(in);
    ck_assert_int_eq(sl_op_rescale_new(&op, 1.0 / 255.0, 0.5, NULL, 0), SL_OK);
    ck_assert_int_eq(run_owned(op, in, &out, 0, NULL, &err), SL_OK);
    ck_assert_ptr_eq(out, in); /* a sole float32 reference is reused */
    got = sl_tensor_data(out);
    src = sl_tensor_data(copy);
    for (int i = 0; i < 15; i++)
        ck_assert_double_eq_tol(got[i], src[i] / 255.0 + 0.5, TOL);
    sl_tensor_release(out);
    sl_tensor_release(copy);
    sl_op_release(op);
}
END_TEST

START_TEST(test_rescale_refusals)
{
    sl_op *op;
    sl_tensor_spec si = spec_of(SL_UINT8, 3, -1, 28, 1), so;
    ck_assert_int_eq(sl_op_rescale_new(&op, NAN, 0, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_rescale_new(&op, 1, INFINITY, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_rescale_new(&op, 1e300, 0, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_rescale_new(&op, 1.0 / 255, 0, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_OK);
    ck_assert_int_eq(so.dtype, SL_FLOAT32);
    ck_assert_int_eq(so.shape[0], -1);
    si.dtype = (sl_dtype)42;
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_ESHAPE);
    sl_op_release(op);
}
END_TEST

/* --- normalize ------------------------------------------------------------- */

START_TEST(test_normalize_rgb_u8)
{
    const double mean[3] = {0.485 * 255, 0.456 * 255, 0.406 * 255};
    const double sd[3] = {0.229 * 255, 0.224 * 255, 0.225 * 255};
    sl_op *op;
    sl_tensor *in = new_tensor(SL_UINT8, 3, 7, 5, 3), *out;
    const uint8_t *src;
    const float *got;
    fill_u8(in, 9);
    ck_assert_int_eq(sl_op_normalize_new(&op, mean, sd, 3, NULL, 0), SL_OK);
    ck_assert_str_eq(sl_op_name(op), "normalize");
    ck_assert_int_eq(apply(op, in, &out, 0, NULL, 0), SL_OK);
    check_shape(out, SL_FLOAT32, 3, 7, 5, 3);
    src = sl_tensor_data(in);
    got = sl_tensor_data(out);
    for (int i = 0; i < 7 * 5 * 3; i++)
        ck_assert_double_eq_tol(got[i], (src[i] - mean[i % 3]) / sd[i % 3], TOL);
    sl_tensor_release(out);
    sl_tensor_release(in);
    sl_op_release(op);
}
END_TEST

START_TEST(test_normalize_other_dtypes)
{
    const double mean[1] = {0.1307}, sd[1] = {0.3081};
    const double mean2[2] = {-3, 100}, sd2[2] = {2, 50};
    sl_op *op, *op2;
    sl_tensor *in = new_tensor(SL_FLOAT32, 2, 4, 6, 0), *out, *copy;
    sl__error err;
    const float *src, *got;
    fill_f32(in, 10);
    copy = clone(in);
    ck_assert_int_eq(sl_op_normalize_new(&op, mean, sd, 1, NULL, 0), SL_OK);
    /* Shared input: a new tensor. */
    ck_assert_int_eq(apply(op, in, &out, 0, NULL, 0), SL_OK);
    ck_assert(same_bytes(in, copy));
    src = sl_tensor_data(copy);
    got = sl_tensor_data(out);
    for (int i = 0; i < 24; i++)
        ck_assert_double_eq_tol(got[i], (src[i] - mean[0]) / sd[0], TOL);
    sl_tensor_release(out);
    /* Sole reference: in place. */
    ck_assert_int_eq(run_owned(op, in, &out, 0, NULL, &err), SL_OK);
    ck_assert_ptr_eq(out, in);
    got = sl_tensor_data(out);
    for (int i = 0; i < 24; i++)
        ck_assert_double_eq_tol(got[i], (src[i] - mean[0]) / sd[0], TOL);
    sl_tensor_release(out);

    /* uint8, one channel (MNIST). */
    sl_tensor_release(copy);
    in = new_tensor(SL_UINT8, 3, 28, 28, 1);
    fill_u8(in, 14);
    ck_assert_int_eq(apply(op, in, &out, 0, NULL, 0), SL_OK);
    check_shape(out, SL_FLOAT32, 3, 28, 28, 1);
    got = sl_tensor_data(out);
    for (int i = 0; i < 28 * 28; i++)
        ck_assert(close_enough(got[i], (((uint8_t *)sl_tensor_data(in))[i] - mean[0]) / sd[0]));
    sl_tensor_release(out);
    sl_tensor_release(in);

    /* int64, 2 channels. */
    ck_assert_int_eq(sl_op_normalize_new(&op2, mean2, sd2, 2, NULL, 0), SL_OK);
    in = new_tensor(SL_INT64, 3, 2, 3, 2);
    for (int i = 0; i < 12; i++)
        ((int64_t *)sl_tensor_data(in))[i] = i * 37 - 200;
    ck_assert_int_eq(apply(op2, in, &out, 0, NULL, 0), SL_OK);
    check_shape(out, SL_FLOAT32, 3, 2, 3, 2);
    got = sl_tensor_data(out);
    for (int i = 0; i < 12; i++)
        ck_assert(close_enough(got[i], ((i * 37 - 200) - mean2[i % 2]) / sd2[i % 2]));
    sl_tensor_release(out);
    sl_tensor_release(in);
    sl_op_release(op);
    sl_op_release(op2);
}
END_TEST

START_TEST(test_normalize_refusals)
{
    const double mean[3] = {1, 2, 3}, sd[3] = {1, 1, 1}, bad_sd[3] = {1, 0, 1};
    const double neg_sd[1] = {-1}, nan_mean[1] = {NAN};
    sl_op *op;
    sl_tensor *in, *out;
    sl_tensor_spec si, so;
    char msg[256];
    ck_assert_int_eq(sl_op_normalize_new(&op, mean, bad_sd, 3, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_normalize_new(&op, mean, neg_sd, 1, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_normalize_new(&op, nan_mean, sd, 1, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_normalize_new(&op, mean, sd, 0, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_normalize_new(&op, NULL, sd, 3, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_normalize_new(&op, mean, sd, 3, NULL, 0), SL_OK);
    /* Channel mismatch, and a 2-D image (one channel). */
    in = new_tensor(SL_UINT8, 3, 2, 2, 1);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "normalize") && strstr(msg, "(2, 2, 1)"), "%s", msg);
    sl_tensor_release(in);
    in = new_tensor(SL_UINT8, 2, 2, 2, 0);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    sl_tensor_release(in);
    in = new_tensor(SL_UINT8, 1, 3, 0, 0);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    sl_tensor_release(in);
    si = spec_of(SL_UINT8, 3, -1, -1, -1);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_OK);
    ck_assert_int_eq(so.dtype, SL_FLOAT32);
    si = spec_of(SL_UINT8, 3, -1, -1, 4);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_ESHAPE);
    sl_op_release(op);
}
END_TEST

/* --- hwc2chw --------------------------------------------------------------- */

START_TEST(test_hwc2chw)
{
    sl_dtype dts[] = {SL_UINT8, SL_FLOAT32, SL_INT64};
    sl_op *op;
    ck_assert_int_eq(sl_op_hwc2chw_new(&op, NULL, 0), SL_OK);
    ck_assert_str_eq(sl_op_name(op), "hwc2chw");
    for (size_t d = 0; d < 3; d++) {
        for (int c = 2; c <= 4; c++) {
            const int h = 3, w = 5;
            sl_tensor *in = new_tensor(dts[d], 3, h, w, c), *out;
            double *din, *dout;
            for (int i = 0; i < h * w * c; i++) {
                void *p = sl_tensor_data(in);
                if (dts[d] == SL_UINT8)
                    ((uint8_t *)p)[i] = (uint8_t)i;
                else if (dts[d] == SL_FLOAT32)
                    ((float *)p)[i] = (float)i + 0.5f;
                else
                    ((int64_t *)p)[i] = (int64_t)i - 1000000000000LL;
            }
            ck_assert_int_eq(apply(op, in, &out, 0, NULL, 0), SL_OK);
            check_shape(out, dts[d], 3, c, h, w);
            din = to_double(in);
            dout = to_double(out);
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    for (int k = 0; k < c; k++)
                        ck_assert(dout[(k * h + y) * w + x] == din[(y * w + x) * c + k]);
            free(din);
            free(dout);
            sl_tensor_release(out);
            sl_tensor_release(in);
        }
    }
    sl_op_release(op);
}
END_TEST

START_TEST(test_hwc2chw_one_channel)
{
    sl_op *op;
    sl_tensor *in = new_tensor(SL_FLOAT32, 3, 4, 3, 1), *out, *copy;
    sl__error err;
    fill_f32(in, 11);
    copy = clone(in);
    ck_assert_int_eq(sl_op_hwc2chw_new(&op, NULL, 0), SL_OK);
    /* Shared: the result must not change the caller's tensor. */
    ck_assert_int_eq(apply(op, in, &out, 0, NULL, 0), SL_OK);
    check_shape(out, SL_FLOAT32, 3, 1, 4, 3);
    check_shape(in, SL_FLOAT32, 3, 4, 3, 1);
    ck_assert(same_bytes(out, copy));
    sl_tensor_release(out);
    ck_assert_int_eq(sl_tensor_refcount(in), 1);
    /* Sole reference: the same tensor with its shape changed. */
    ck_assert_int_eq(run_owned(op, in, &out, 0, NULL, &err), SL_OK);
    ck_assert_ptr_eq(out, in);
    check_shape(out, SL_FLOAT32, 3, 1, 4, 3);
    ck_assert(same_bytes(out, copy));
    sl_tensor_release(out);
    sl_tensor_release(copy);
    sl_op_release(op);
}
END_TEST

START_TEST(test_hwc2chw_refusals)
{
    sl_op *op;
    sl_tensor *in = new_tensor(SL_UINT8, 2, 4, 4, 0), *out;
    sl_tensor_spec si = spec_of(SL_UINT8, 3, -1, -1, 3), so;
    char msg[256];
    ck_assert_int_eq(sl_op_hwc2chw_new(&op, NULL, 0), SL_OK);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "hwc2chw") && strstr(msg, "(4, 4)"), "%s", msg);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_OK);
    ck_assert_int_eq(so.shape[0], 3);
    ck_assert_int_eq(so.shape[1], -1);
    ck_assert_int_eq(so.shape[2], -1);
    si.ndim = 2;
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_ESHAPE);
    sl_tensor_release(in);
    sl_op_release(op);
}
END_TEST

/* --- type_cast ------------------------------------------------------------- */

/* Element i of t as written by the test: exact in every dtype. */
static const double cast_values[] = {0, 1, 7, 100, 127, 200, 255};

static void store_value(void *p, sl_dtype dt, size_t i, double v)
{
    switch (dt) {
    case SL_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case SL_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case SL_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case SL_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    case SL_FLOAT32: ((float *)p)[i] = (float)v; break;
    default: ((double *)p)[i] = v; break;
    }
}

START_TEST(test_type_cast_all_pairs)
{
    const size_t n = sizeof cast_values / sizeof cast_values[0];
    for (int from = 0; from < SL_DTYPE_COUNT; from++) {
        for (int to = 0; to < SL_DTYPE_COUNT; to++) {
            sl_op *op;
            sl_tensor *in = new_tensor((sl_dtype)from, 1, (int64_t)n * 100, 0, 0), *out;
            for (size_t i = 0; i < n * 100; i++)
                store_value(sl_tensor_data(in), (sl_dtype)from, i, cast_values[i % n]);
            ck_assert_int_eq(sl_op_type_cast_new(&op, (sl_dtype)to, NULL, 0), SL_OK);
            ck_assert_int_eq(apply(op, in, &out, 0, NULL, 0), SL_OK);
            check_shape(out, (sl_dtype)to, 1, (int64_t)n * 100, 0, 0);
            if (from == to)
                ck_assert_ptr_eq(out, in); /* nothing to do */
            for (size_t i = 0; i < n * 100; i++)
                ck_assert(sl__load_as_double(sl_tensor_data(out), (sl_dtype)to, i) ==
                          cast_values[i % n]);
            sl_tensor_release(out);
            sl_tensor_release(in);
            sl_op_release(op);
        }
    }
}
END_TEST

START_TEST(test_type_cast_sign_in_place)
{
    /* uint32 <-> int32 of a tensor held alone only relabels it; a shared
     * one gets a copy and the caller's tensor keeps its dtype. */
    sl_op *op;
    sl_tensor *in = new_tensor(SL_UINT32, 1, 3, 0, 0), *out, *shared;
    uint32_t *p = sl_tensor_data(in);
    sl__error err;
    p[0] = 7;
    p[1] = 0xFFFFFFFFu;
    p[2] = 0x80000000u;
    ck_assert_int_eq(sl_op_type_cast_new(&op, SL_INT32, NULL, 0), SL_OK);
    ck_assert_int_eq(run_owned(op, in, &out, 0, NULL, &err), SL_OK);
    ck_assert_ptr_eq(out, in);
    ck_assert_int_eq(sl_tensor_dtype(out), SL_INT32);
    ck_assert_int_eq(((int32_t *)sl_tensor_data(out))[0], 7);
    ck_assert_int_eq(((int32_t *)sl_tensor_data(out))[1], -1);
    ck_assert_int_eq(((int32_t *)sl_tensor_data(out))[2], INT32_MIN);

    shared = sl_tensor_retain(out);
    sl_op_release(op);
    ck_assert_int_eq(sl_op_type_cast_new(&op, SL_UINT32, NULL, 0), SL_OK);
    ck_assert_int_eq(run_owned(op, out, &in, 0, NULL, &err), SL_OK);
    ck_assert_ptr_ne(in, shared);
    ck_assert_int_eq(sl_tensor_dtype(shared), SL_INT32);
    ck_assert_int_eq(sl_tensor_dtype(in), SL_UINT32);
    ck_assert_uint_eq(((uint32_t *)sl_tensor_data(in))[1], 0xFFFFFFFFu);
    sl_tensor_release(in);
    sl_tensor_release(shared);
    sl_op_release(op);
}
END_TEST

START_TEST(test_type_cast_conversions)
{
    /* float -> int truncates toward zero; out of range saturates, NaN -> 0. */
    static const float fin[] = {2.7f, -2.7f, 300.5f, -5.0f, 1e10f, -1e10f, NAN, 255.9f};
    static const int32_t want_i32[] = {2, -2, 300, -5, INT32_MAX, INT32_MIN, 0, 255};
    static const uint8_t want_u8[] = {2, 0, 255, 0, 255, 0, 0, 255};
    static const uint32_t want_u32[] = {2, 0, 300, 0, UINT32_MAX, 0, 0, 255};
    /* int -> narrower int wraps as C does. */
    static const int64_t iin[] = {-1, 256, 257, 4294967296LL + 5, -2147483649LL};
    static const uint8_t want_wrap_u8[] = {255, 0, 1, 5, 255};
    static const int32_t want_wrap_i32[] = {-1, 256, 257, 5, 2147483647};
    sl_op *to_i32, *to_u8, *to_u32;
    sl_tensor *in = new_tensor(SL_FLOAT32, 1, 8, 0, 0), *out;
    memcpy(sl_tensor_data(in), fin, sizeof fin);
    ck_assert_int_eq(sl_op_type_cast_new(&to_i32, SL_INT32, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_type_cast_new(&to_u8, SL_UINT8, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_type_cast_new(&to_u32, SL_UINT32, NULL, 0), SL_OK);
    ck_assert_int_eq(apply(to_i32, in, &out, 0, NULL, 0), SL_OK);
    ck_assert_mem_eq(sl_tensor_data(out), want_i32, sizeof want_i32);
    sl_tensor_release(out);
    ck_assert_int_eq(apply(to_u8, in, &out, 0, NULL, 0), SL_OK);
    ck_assert_mem_eq(sl_tensor_data(out), want_u8, sizeof want_u8);
    sl_tensor_release(out);
    ck_assert_int_eq(apply(to_u32, in, &out, 0, NULL, 0), SL_OK);
    ck_assert_mem_eq(sl_tensor_data(out), want_u32, sizeof want_u32);
    sl_tensor_release(out);
    sl_tensor_release(in);

    in = new_tensor(SL_INT64, 1, 5, 0, 0);
    memcpy(sl_tensor_data(in), iin, sizeof iin);
    ck_assert_int_eq(apply(to_u8, in, &out, 0, NULL, 0), SL_OK);
    ck_assert_mem_eq(sl_tensor_data(out), want_wrap_u8, sizeof want_wrap_u8);
    sl_tensor_release(out);
    ck_assert_int_eq(apply(to_i32, in, &out, 0, NULL, 0), SL_OK);
    ck_assert_mem_eq(sl_tensor_data(out), want_wrap_i32, sizeof want_wrap_i32);
    sl_tensor_release(out);
    sl_tensor_release(in);

    /* A scalar label, as the MNIST pipeline casts it. */
    in = new_tensor(SL_UINT8, 0, 0, 0, 0);
    *(uint8_t *)sl_tensor_data(in) = 7;
    ck_assert_int_eq(apply(to_i32, in, &out, 0, NULL, 0), SL_OK);
    check_shape(out, SL_INT32, 0, 0, 0, 0);
    ck_assert_int_eq(*(int32_t *)sl_tensor_data(out), 7);
    sl_tensor_release(out);
    sl_tensor_release(in);
    sl_op_release(to_i32);
    sl_op_release(to_u8);
    sl_op_release(to_u32);
}
END_TEST

START_TEST(test_type_cast_refusals)
{
    sl_op *op;
    sl_tensor_spec si = spec_of(SL_UINT8, 3, -1, -1, 3), so;
    ck_assert_int_eq(sl_op_type_cast_new(&op, SL_DTYPE_COUNT, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_type_cast_new(&op, (sl_dtype)-1, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_type_cast_new(&op, SL_FLOAT64, NULL, 0), SL_OK);
    ck_assert_str_eq(sl_op_name(op), "type_cast");
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_OK);
    ck_assert_int_eq(so.dtype, SL_FLOAT64);
    ck_assert_int_eq(so.shape[2], 3);
    sl_op_release(op);
}
END_TEST

/* --- random_crop ----------------------------------------------------------- */

/* The crop the op must make for seed: pads in (h, w, c) of esize-byte
 * elements explicitly, draws y0 then x0 from the same generator
 * sl_op_apply seeds, and cuts. */
static void ref_crop(unsigned char *dst, const unsigned char *src, int h, int w, size_t px,
                     int ch, int cw, int pad, uint64_t seed)
{
    int ph = h + 2 * pad, pw = w + 2 * pad;
    unsigned char *padded = calloc((size_t)ph * pw, px);
    sl_rng rng;
    int y0, x0;
    ck_assert_ptr_nonnull(padded);
    for (int y = 0; y < h; y++)
        memcpy(padded + ((size_t)(y + pad) * pw + pad) * px, src + (size_t)y * w * px, w * px);
    sl__rng_seed(&rng, seed, 0, 0, 0);
    y0 = (int)sl__rng_below(&rng, (uint64_t)(ph - ch + 1));
    x0 = (int)sl__rng_below(&rng, (uint64_t)(pw - cw + 1));
    for (int y = 0; y < ch; y++)
        memcpy(dst + (size_t)y * cw * px, padded + ((size_t)(y + y0) * pw + x0) * px, cw * px);
    free(padded);
}

static void check_crop(sl_dtype dt, int ndim, int h, int w, int c, int ch, int cw, int pad,
                       int seeds)
{
    sl_op *op;
    size_t px = (size_t)c * sl_dtype_size(dt);
    unsigned char *want = malloc((size_t)ch * cw * px);
    sl_tensor *in = new_tensor(dt, ndim, h, w, c);
    ck_assert_ptr_nonnull(want);
    /* Nonzero bytes everywhere, so padding zeros cannot pass by accident. */
    for (size_t i = 0; i < sl_tensor_nbytes(in); i++)
        ((unsigned char *)sl_tensor_data(in))[i] = (unsigned char)(1 + i % 251);
    ck_assert_int_eq(sl_op_random_crop_new(&op, ch, cw, pad, NULL, 0), SL_OK);
    for (int s = 0; s < seeds; s++) {
        sl_tensor *out;
        ck_assert_int_eq(apply(op, in, &out, (uint64_t)s, NULL, 0), SL_OK);
        check_shape(out, dt, ndim, ch, cw, c);
        ref_crop(want, sl_tensor_data(in), h, w, px, ch, cw, pad, (uint64_t)s);
        ck_assert_msg(memcmp(sl_tensor_data(out), want, (size_t)ch * cw * px) == 0,
                      "crop differs for seed %d", s);
        sl_tensor_release(out);
    }
    free(want);
    sl_tensor_release(in);
    sl_op_release(op);
}

START_TEST(test_random_crop)
{
    check_crop(SL_UINT8, 3, 32, 32, 3, 28, 28, 4, 50);     /* CIFAR style */
    check_crop(SL_FLOAT32, 2, 10, 7, 1, 5, 6, 0, 30);      /* no padding */
    check_crop(SL_INT64, 3, 3, 3, 2, 5, 5, 10, 100);       /* window often all border */
    check_crop(SL_UINT8, 2, 8, 8, 1, 8, 8, 0, 3);          /* the whole image */
    check_crop(SL_FLOAT64, 3, 4, 9, 3, 12, 17, 4, 20);     /* exactly the padded size */
}
END_TEST

START_TEST(test_random_crop_determinism)
{
    sl_op *op;
    sl_tensor *in = new_tensor(SL_UINT8, 3, 20, 20, 1), *a, *b;
    int differ = 0;
    fill_u8(in, 12);
    ck_assert_int_eq(sl_op_random_crop_new(&op, 8, 8, 2, NULL, 0), SL_OK);
    for (uint64_t s = 0; s < 20; s++) {
        ck_assert_int_eq(apply(op, in, &a, s, NULL, 0), SL_OK);
        ck_assert_int_eq(apply(op, in, &b, s, NULL, 0), SL_OK);
        ck_assert(same_bytes(a, b));
        sl_tensor_release(b);
        ck_assert_int_eq(apply(op, in, &b, s + 1000, NULL, 0), SL_OK);
        differ += !same_bytes(a, b);
        sl_tensor_release(a);
        sl_tensor_release(b);
    }
    ck_assert_int_gt(differ, 10);
    sl_tensor_release(in);
    sl_op_release(op);
}
END_TEST

START_TEST(test_random_crop_refusals)
{
    sl_op *op;
    sl_tensor *in, *out;
    sl_tensor_spec si, so;
    char msg[256];
    ck_assert_int_eq(sl_op_random_crop_new(&op, 0, 5, 0, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_random_crop_new(&op, 5, -2, 0, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_random_crop_new(&op, 5, 5, -1, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_random_crop_new(&op, 28, 28, 2, NULL, 0), SL_OK);
    ck_assert_str_eq(sl_op_name(op), "random_crop");
    ck_assert_int_eq(op->random, 1);
    in = new_tensor(SL_UINT8, 3, 20, 30, 1); /* 24 rows padded: too few */
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "random_crop") && strstr(msg, "(20, 30, 1)"), "%s", msg);
    sl_tensor_release(in);
    in = new_tensor(SL_UINT8, 1, 900, 0, 0);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    sl_tensor_release(in);
    si = spec_of(SL_FLOAT32, 3, -1, -1, 3);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_OK);
    ck_assert_int_eq(so.shape[0], 28);
    ck_assert_int_eq(so.shape[1], 28);
    ck_assert_int_eq(so.shape[2], 3);
    si = spec_of(SL_FLOAT32, 3, 10, -1, 3);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_ESHAPE);
    sl_op_release(op);
}
END_TEST

/* --- random_horizontal_flip ------------------------------------------------ */

/* Checks out == in mirrored along W, comparing whole pixels of px bytes. */
static void check_mirrored(const sl_tensor *out, const unsigned char *in, int h, int w, size_t px)
{
    const unsigned char *o = sl_tensor_data(out);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            ck_assert(memcmp(o + ((size_t)y * w + x) * px,
                             in + ((size_t)y * w + (w - 1 - x)) * px, px) == 0);
}

START_TEST(test_random_flip_always_never)
{
    static const struct {
        sl_dtype dt;
        int ndim, h, w, c;
    } cases[] = {
        {SL_UINT8, 2, 3, 5, 1},   {SL_UINT8, 3, 4, 6, 3},   {SL_FLOAT32, 2, 2, 7, 1},
        {SL_FLOAT32, 3, 3, 4, 3}, {SL_INT64, 3, 2, 3, 1},   {SL_UINT8, 3, 2, 1, 3},
        {SL_FLOAT64, 3, 3, 5, 20},
    };
    sl_op *always, *never;
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&always, 1.0, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&never, 0.0, NULL, 0), SL_OK);
    ck_assert_str_eq(sl_op_name(always), "random_horizontal_flip");
    ck_assert_int_eq(always->random, 1);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t px = (size_t)cases[i].c * sl_dtype_size(cases[i].dt);
        sl_tensor *in = new_tensor(cases[i].dt, cases[i].ndim, cases[i].h, cases[i].w, cases[i].c);
        sl_tensor *copy, *out, *owned;
        sl__error err;
        for (size_t b = 0; b < sl_tensor_nbytes(in); b++)
            ((unsigned char *)sl_tensor_data(in))[b] = (unsigned char)(b * 7 + 1);
        copy = clone(in);
        for (uint64_t s = 0; s < 20; s++) {
            /* p = 1: shared input gives a mirrored copy, input untouched. */
            ck_assert_int_eq(apply(always, in, &out, s, NULL, 0), SL_OK);
            ck_assert(same_bytes(in, copy));
            check_shape(out, cases[i].dt, cases[i].ndim, cases[i].h, cases[i].w, cases[i].c);
            check_mirrored(out, sl_tensor_data(copy), cases[i].h, cases[i].w, px);
            sl_tensor_release(out);
            /* p = 0: the input itself. */
            ck_assert_int_eq(apply(never, in, &out, s, NULL, 0), SL_OK);
            ck_assert_ptr_eq(out, in);
            sl_tensor_release(out);
        }
        /* p = 1, sole reference: mirrored in place. */
        owned = clone(in);
        ck_assert_int_eq(run_owned(always, owned, &out, 3, NULL, &err), SL_OK);
        ck_assert_ptr_eq(out, owned);
        check_mirrored(out, sl_tensor_data(copy), cases[i].h, cases[i].w, px);
        sl_tensor_release(out);
        sl_tensor_release(copy);
        sl_tensor_release(in);
    }
    sl_op_release(always);
    sl_op_release(never);
}
END_TEST

START_TEST(test_random_flip_half)
{
    sl_op *op;
    sl_tensor *in = new_tensor(SL_UINT8, 3, 2, 4, 3), *out, *again;
    int flipped = 0;
    fill_u8(in, 13);
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&op, 0.5, NULL, 0), SL_OK);
    for (uint64_t s = 0; s < 200; s++) {
        sl_rng rng;
        int want;
        sl__rng_seed(&rng, s, 0, 0, 0);
        want = sl__rng_uniform(&rng) < 0.5;
        ck_assert_int_eq(apply(op, in, &out, s, NULL, 0), SL_OK);
        ck_assert_int_eq(apply(op, in, &again, s, NULL, 0), SL_OK);
        ck_assert(same_bytes(out, again)); /* same seed, same result */
        if (want) {
            check_mirrored(out, sl_tensor_data(in), 2, 4, 3);
            ck_assert_ptr_ne(out, in);
        } else {
            ck_assert_ptr_eq(out, in);
        }
        flipped += want;
        sl_tensor_release(out);
        sl_tensor_release(again);
    }
    ck_assert_int_gt(flipped, 60);
    ck_assert_int_lt(flipped, 140);
    sl_tensor_release(in);
    sl_op_release(op);
}
END_TEST

START_TEST(test_random_flip_refusals)
{
    sl_op *op;
    sl_tensor *in, *out;
    sl_tensor_spec si = spec_of(SL_INT32, 2, -1, 5, 0), so;
    char msg[256];
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&op, -0.1, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&op, 1.5, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&op, NAN, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_random_horizontal_flip_new(&op, 1, NULL, 0), SL_OK);
    in = new_tensor(SL_UINT8, 1, 5, 0, 0);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "random_horizontal_flip") && strstr(msg, "(5,)"), "%s", msg);
    sl_tensor_release(in);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_OK);
    ck_assert_int_eq(so.dtype, SL_INT32);
    ck_assert_int_eq(so.shape[0], -1);
    sl_op_release(op);
}
END_TEST

/* --- one_hot --------------------------------------------------------------- */

START_TEST(test_one_hot)
{
    sl_dtype dts[] = {SL_UINT8, SL_INT32, SL_UINT32, SL_INT64};
    sl_op *op;
    ck_assert_int_eq(sl_op_one_hot_new(&op, 10, NULL, 0), SL_OK);
    ck_assert_str_eq(sl_op_name(op), "one_hot");
    for (size_t d = 0; d < 4; d++) {
        sl_tensor *in = new_tensor(dts[d], 1, 6, 0, 0), *out;
        static const int labels[6] = {3, 0, 9, 9, 5, 1};
        for (int i = 0; i < 6; i++)
            store_value(sl_tensor_data(in), dts[d], (size_t)i, labels[i]);
        ck_assert_int_eq(apply(op, in, &out, 0, NULL, 0), SL_OK);
        check_shape(out, dts[d], 2, 6, 10, 0);
        for (int i = 0; i < 6; i++)
            for (int k = 0; k < 10; k++)
                ck_assert(sl__load_as_double(sl_tensor_data(out), dts[d], (size_t)(i * 10 + k)) ==
                          (k == labels[i] ? 1.0 : 0.0));
        sl_tensor_release(out);
        sl_tensor_release(in);

        /* A scalar. */
        in = new_tensor(dts[d], 0, 0, 0, 0);
        store_value(sl_tensor_data(in), dts[d], 0, 4);
        ck_assert_int_eq(apply(op, in, &out, 0, NULL, 0), SL_OK);
        check_shape(out, dts[d], 1, 10, 0, 0);
        for (int k = 0; k < 10; k++)
            ck_assert(sl__load_as_double(sl_tensor_data(out), dts[d], (size_t)k) ==
                      (k == 4 ? 1.0 : 0.0));
        sl_tensor_release(out);
        sl_tensor_release(in);
    }
    sl_op_release(op);
}
END_TEST

START_TEST(test_one_hot_refusals)
{
    sl_op *op;
    sl_tensor *in, *out;
    sl_tensor_spec si, so;
    char msg[256];
    ck_assert_int_eq(sl_op_one_hot_new(&op, 0, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_one_hot_new(&op, -3, NULL, 0), SL_EINVAL);
    ck_assert_int_eq(sl_op_one_hot_new(&op, 10, NULL, 0), SL_OK);

    in = new_tensor(SL_UINT8, 0, 0, 0, 0);
    *(uint8_t *)sl_tensor_data(in) = 10;
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_EINVAL);
    ck_assert_msg(strstr(msg, "one_hot") && strstr(msg, "label 10") &&
                      strstr(msg, "num_classes 10"),
                  "%s", msg);
    sl_tensor_release(in);
    in = new_tensor(SL_INT32, 1, 3, 0, 0);
    ((int32_t *)sl_tensor_data(in))[2] = -1;
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_EINVAL);
    ck_assert_msg(strstr(msg, "label -1") && strstr(msg, "index 2"), "%s", msg);
    sl_tensor_release(in);
    in = new_tensor(SL_FLOAT32, 1, 3, 0, 0);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "float32"), "%s", msg);
    sl_tensor_release(in);
    in = new_tensor(SL_INT64, 2, 3, 2, 0);
    ck_assert_int_eq(apply(op, in, &out, 0, msg, sizeof msg), SL_ESHAPE);
    ck_assert_msg(strstr(msg, "(3, 2)"), "%s", msg);
    sl_tensor_release(in);

    si = spec_of(SL_INT32, 1, -1, 0, 0);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_OK);
    ck_assert_int_eq(so.ndim, 2);
    ck_assert_int_eq(so.shape[0], -1);
    ck_assert_int_eq(so.shape[1], 10);
    ck_assert_int_eq(so.dtype, SL_INT32);
    si = spec_of(SL_UINT8, 0, 0, 0, 0);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_OK);
    ck_assert_int_eq(so.ndim, 1);
    ck_assert_int_eq(so.shape[0], 10);
    si = spec_of(SL_FLOAT64, 0, 0, 0, 0);
    ck_assert_int_eq(sl_op_infer(op, &si, &so, NULL, 0), SL_ESHAPE);
    sl_op_release(op);
}
END_TEST

/* --- suite ----------------------------------------------------------------- */

Suite *make_ops_suite(void)
{
    Suite *s = suite_create("ops");
    TCase *core = tu_tcase("core", 60);
    TCase *limits = tu_tcase("limits", 120);

    tcase_add_test(core, test_rescale_dtypes);
    tcase_add_test(core, test_rescale_in_place);
    tcase_add_test(core, test_normalize_rgb_u8);
    tcase_add_test(core, test_normalize_other_dtypes);
    tcase_add_test(core, test_hwc2chw);
    tcase_add_test(core, test_hwc2chw_one_channel);
    tcase_add_test(core, test_type_cast_all_pairs);
    tcase_add_test(core, test_type_cast_conversions);
    tcase_add_test(core, test_type_cast_sign_in_place);
    tcase_add_test(core, test_random_crop);
    tcase_add_test(core, test_random_crop_determinism);
    tcase_add_test(core, test_random_flip_always_never);
    tcase_add_test(core, test_random_flip_half);
    tcase_add_test(core, test_one_hot);
    ops_add_resize_tests(core, limits);
    ops_add_decode_tests(core, limits);
    ops_add_cubic_tests(core);
    suite_add_tcase(s, core);

    tcase_add_test(limits, test_rescale_refusals);
    tcase_add_test(limits, test_normalize_refusals);
    tcase_add_test(limits, test_hwc2chw_refusals);
    tcase_add_test(limits, test_type_cast_refusals);
    tcase_add_test(limits, test_random_crop_refusals);
    tcase_add_test(limits, test_random_flip_refusals);
    tcase_add_test(limits, test_one_hot_refusals);
    suite_add_tcase(s, limits);
    return s;
}

int main(void)
{
    return tu_run_suite_unless_tsan(make_ops_suite,
                                    "the operators run on the calling thread only: nothing for "
                                    "ThreadSanitizer (the plain and ASan builds run this suite)");
}
