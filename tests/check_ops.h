/* check_ops.h: what the vision operators' test files share: check_ops.c
 * holds these helpers, the tests of the small operators and the suite;
 * check_ops_resize.c, check_ops_cubic.c and check_ops_decode.c the tests
 * of Resize, its bicubic kernel and Decode, each adding its own to the
 * suite's test cases. */
#ifndef SLUICE_TESTS_CHECK_OPS_H
#define SLUICE_TESTS_CHECK_OPS_H

#include <check.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/pool.h"
#include "sluice/op.h"
#include "sluice/tensor.h"

/* Float results must match to 1e-5, relative above magnitude 1 (float32
 * itself has only 24 bits). */
#define TOL 1e-5

static inline int close_enough(double got, double want)
{
    return fabs(got - want) <= TOL * fmax(1.0, fabs(want));
}

/* The helpers (check_ops.c says what each does). */
sl_tensor *new_tensor(sl_dtype dtype, int ndim, int64_t d0, int64_t d1, int64_t d2);
uint32_t lcg(uint32_t *s);
void fill_u8(sl_tensor *t, uint32_t seed);
void fill_f32(sl_tensor *t, uint32_t seed);
int apply(const sl_op *op, const sl_tensor *in, sl_tensor **out, uint64_t seed, char *msg,
          size_t len);
int run_owned(const sl_op *op, sl_tensor *in, sl_tensor **out, uint64_t seed, sl_pool *pool,
              sl__error *err);
void check_shape(const sl_tensor *t, sl_dtype dtype, int ndim, int64_t d0, int64_t d1,
                 int64_t d2);
sl_tensor_spec spec_of(sl_dtype dtype, int ndim, int64_t d0, int64_t d1, int64_t d2);
sl_tensor *clone(const sl_tensor *t);
int same_bytes(const sl_tensor *a, const sl_tensor *b);
double *to_double(const sl_tensor *t);

/* Each file's tests, added to the suite's "core" and "limits" cases. */
void ops_add_resize_tests(TCase *core, TCase *limits);
void ops_add_decode_tests(TCase *core, TCase *limits);
void ops_add_cubic_tests(TCase *core);

#endif
