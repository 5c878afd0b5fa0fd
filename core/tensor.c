/* tensor.c: tensor allocation (heap or pool), views and accessors. */
#include "core/tensor_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define TENSOR_HEADER 128 /* sizeof(sl_tensor) rounded up to keep data 64-aligned */

_Static_assert(sizeof(sl_tensor) <= TENSOR_HEADER, "tensor header grew");

static const struct {
    const char *name;
    size_t size;
} dtype_info[SL_DTYPE_COUNT] = {
    [SL_UINT8] = {"uint8", 1},     [SL_INT32] = {"int32", 4},
    [SL_UINT32] = {"uint32", 4},   [SL_INT64] = {"int64", 8},
    [SL_FLOAT32] = {"float32", 4}, [SL_FLOAT64] = {"float64", 8},
};

size_t sl_dtype_size(sl_dtype dtype)
{
    return (unsigned)dtype < SL_DTYPE_COUNT ? dtype_info[dtype].size : 0;
}

const char *sl_dtype_name(sl_dtype dtype)
{
    return (unsigned)dtype < SL_DTYPE_COUNT ? dtype_info[dtype].name : "?";
}

int sl_dtype_parse(const char *name, sl_dtype *out)
{
    for (int i = 0; i < SL_DTYPE_COUNT; i++) {
        if (strcmp(name, dtype_info[i].name) == 0) {
            *out = (sl_dtype)i;
            return SL_OK;
        }
    }
    return SL_EINVAL;
}

int sl__shape_numel(int ndim, const int64_t *shape, sl_dtype dtype, size_t *numel,
                    size_t *nbytes)
{
    size_t n = 1;
    if (ndim < 0 || ndim > SL_MAX_DIMS || sl_dtype_size(dtype) == 0)
        return SL_EINVAL;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return SL_EINVAL;
        if (!sl__mul_size(n, (size_t)shape[i], &n))
            return SL_ENOMEM;
    }
    if (!sl__mul_size(n, sl_dtype_size(dtype), nbytes))
        return SL_ENOMEM;
    *numel = n;
    return SL_OK;
}

int sl__shape_equal(int ndim_a, const int64_t *a, int ndim_b, const int64_t *b)
{
    if (ndim_a != ndim_b)
        return 0;
    for (int i = 0; i < ndim_a; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

static void tensor_fill_header(sl_tensor *t, sl_pool *pool, sl_dtype dtype, int ndim,
                               const int64_t *shape, size_t numel, size_t nbytes)
{
    t->dtype = dtype;
    t->ndim = ndim;
    memset(t->shape, 0, sizeof t->shape);
    if (ndim > 0)
        memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
    t->numel = numel;
    t->nbytes = nbytes;
    atomic_init(&t->refcount, 1);
    t->pool = pool;
    t->escaped = 0;
    t->base = NULL;
    t->base_borrowed = 0;
    t->lender = NULL;
}

static void *block_alloc(sl_pool *pool, size_t size)
{
    return pool ? sl__pool_alloc(pool, size) : aligned_alloc(64, (size + 63) & ~(size_t)63);
}

int sl__tensor_alloc(sl_tensor **out, sl_pool *pool, sl_dtype dtype, int ndim,
                     const int64_t *shape)
{
    size_t numel, nbytes, total;
    int rc = sl__shape_numel(ndim, shape, dtype, &numel, &nbytes);
    sl_tensor *t;
    *out = NULL;
    if (rc != SL_OK)
        return rc;
    if (nbytes > (size_t)-1 - TENSOR_HEADER - 64)
        return SL_ENOMEM;
    total = TENSOR_HEADER + nbytes;
    t = block_alloc(pool, total);
    if (!t)
        return SL_ENOMEM;
    tensor_fill_header(t, pool, dtype, ndim, shape, numel, nbytes);
    t->data = (char *)t + TENSOR_HEADER;
    *out = t;
    return SL_OK;
}

static int make_view(sl_tensor **out, sl_pool *pool, sl_tensor *base, size_t offset,
                     sl_dtype dtype, int ndim, const int64_t *shape, int borrow)
{
    size_t numel, nbytes;
    int rc = sl__shape_numel(ndim, shape, dtype, &numel, &nbytes);
    sl_tensor *t;
    *out = NULL;
    if (rc != SL_OK)
        return rc;
    if (offset > base->nbytes || nbytes > base->nbytes - offset)
        return SL_EINVAL;
    t = block_alloc(pool, sizeof *t);
    if (!t)
        return SL_ENOMEM;
    tensor_fill_header(t, pool, dtype, ndim, shape, numel, nbytes);
    t->data = (char *)base->data + offset;
    t->base = borrow ? base : sl_tensor_retain(base);
    t->base_borrowed = borrow;
    *out = t;
    return SL_OK;
}

int sl__tensor_view(sl_tensor **out, sl_pool *pool, sl_tensor *base, size_t offset,
                    sl_dtype dtype, int ndim, const int64_t *shape)
{
    return make_view(out, pool, base, offset, dtype, ndim, shape, 0);
}

int sl__tensor_view_borrowed(sl_tensor **out, sl_pool *pool, sl_tensor *base, size_t offset,
                             sl_dtype dtype, int ndim, const int64_t *shape)
{
    return make_view(out, pool, base, offset, dtype, ndim, shape, 1);
}

int sl__tensor_lent(sl_tensor **out, sl_pool *pool, sl_dtype dtype, int ndim,
                    const int64_t *shape, void *data, sl__lender *lender)
{
    size_t numel, nbytes;
    int rc = sl__shape_numel(ndim, shape, dtype, &numel, &nbytes);
    sl_tensor *t;
    *out = NULL;
    if (rc != SL_OK)
        return rc;
    t = block_alloc(pool, sizeof *t);
    if (!t)
        return SL_ENOMEM;
    tensor_fill_header(t, pool, dtype, ndim, shape, numel, nbytes);
    t->data = data;
    t->lender = lender;
    *out = t;
    return SL_OK;
}

int sl__tensor_init_external(sl_tensor *t, sl_dtype dtype, int ndim, const int64_t *shape,
                             void *data)
{
    size_t numel, nbytes;
    int rc = sl__shape_numel(ndim, shape, dtype, &numel, &nbytes);
    if (rc != SL_OK)
        return rc;
    tensor_fill_header(t, NULL, dtype, ndim, shape, numel, nbytes);
    t->data = data;
    return SL_OK;
}

int sl__tensor_writable(const sl_tensor *t)
{
    return t->base == NULL && atomic_load_explicit(&t->refcount, memory_order_acquire) == 1;
}

int sl_tensor_new(sl_tensor **out, sl_dtype dtype, int ndim, const int64_t *shape)
{
    int rc = sl__tensor_alloc(out, NULL, dtype, ndim, shape);
    if (rc == SL_OK)
        memset((*out)->data, 0, (*out)->nbytes);
    return rc;
}

sl_tensor *sl_tensor_retain(sl_tensor *t)
{
    if (t)
        atomic_fetch_add_explicit(&t->refcount, 1, memory_order_relaxed);
    return t;
}

void sl__tensor_escape(sl_tensor *t)
{
    for (; t; t = t->base) {
        if (t->base_borrowed) {
            sl_tensor_retain(t->base);
            t->base_borrowed = 0;
        }
        if (t->pool && !t->escaped) {
            t->escaped = 1;
            sl__pool_retain(t->pool);
        }
    }
}

void sl_tensor_release(sl_tensor *t)
{
    sl_pool *pool;
    int escaped;
    if (!t || atomic_fetch_sub_explicit(&t->refcount, 1, memory_order_acq_rel) != 1)
        return;
    pool = t->pool;
    escaped = t->escaped;
    if (!t->base_borrowed)
        sl_tensor_release(t->base);
    if (t->lender)
        t->lender->give_back(t->lender);
    if (!pool) {
        free(t);
        return;
    }
    sl__pool_free(pool, t);
    if (escaped)
        sl__pool_release(pool); /* may free the pool: after the block went back */
}

sl_dtype sl_tensor_dtype(const sl_tensor *t) { return t->dtype; }
int sl_tensor_ndim(const sl_tensor *t) { return t->ndim; }
const int64_t *sl_tensor_shape(const sl_tensor *t) { return t->shape; }
size_t sl_tensor_numel(const sl_tensor *t) { return t->numel; }
size_t sl_tensor_nbytes(const sl_tensor *t) { return t->nbytes; }
void *sl_tensor_data(const sl_tensor *t) { return t->data; }

int sl_tensor_writable(const sl_tensor *t)
{
    return sl__tensor_writable(t);
}

int sl_tensor_refcount(const sl_tensor *t)
{
    return atomic_load_explicit(&t->refcount, memory_order_acquire);
}

char *sl_shape_str(char *buf, size_t len, int ndim, const int64_t *shape)
{
    size_t used = 0;
    if (len == 0)
        return buf;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, len, "(");
    for (int i = 0; i < ndim && used < len; i++) {
        if (shape[i] < 0)
            used += (size_t)snprintf(buf + used, len - used, "%s?", i ? ", " : "");
        else
            used += (size_t)snprintf(buf + used, len - used, "%s%lld", i ? ", " : "",
                                     (long long)shape[i]);
    }
    if (used < len)
        snprintf(buf + used, len - used, ndim == 1 ? ",)" : ")");
    return buf;
}
