/* tensor_impl.h: the tensor's layout and pooled allocation, for the library's
 * own layers. A tensor is one block: this header, then its data aligned to
 * 64 bytes. A view shares another tensor's data and keeps it alive. */
#ifndef SLUICE_CORE_TENSOR_IMPL_H
#define SLUICE_CORE_TENSOR_IMPL_H

#include <stdatomic.h>

#include "sluice/tensor.h"
#include "core/pool.h"

/* Memory lent to whoever makes tensors over it (a device queue's slot
 * lent to the pipeline for a batch, see sl__tensor_lent): give_back is
 * called once for each such tensor, when its last reference goes. */
typedef struct sl__lender {
    void (*give_back)(struct sl__lender *l);
} sl__lender;

struct sl_tensor {
    sl_dtype dtype;
    int ndim;
    int64_t shape[SL_MAX_DIMS];
    size_t numel;
    size_t nbytes;
    void *data;           /* 64-byte aligned, contiguous */
    atomic_int refcount;
    unsigned char escaped;       /* holds its own reference to pool (sl__tensor_escape) */
    unsigned char base_borrowed; /* base is held without a reference, until escape */
    sl_pool *pool;        /* where the block goes back; NULL: heap */
    sl_tensor *base;      /* for a view: the tensor that owns the data */
    sl__lender *lender;   /* for lent data: who gets it back */
};

/* Allocates an uninitialised tensor from pool (NULL pool: heap). */
int sl__tensor_alloc(sl_tensor **out, sl_pool *pool, sl_dtype dtype, int ndim,
                     const int64_t *shape);
/* A tensor whose data is base's data at byte offset; base is retained. */
int sl__tensor_view(sl_tensor **out, sl_pool *pool, sl_tensor *base, size_t offset,
                    sl_dtype dtype, int ndim, const int64_t *shape);
/* The same, but base is only borrowed: for a source whose data outlives
 * every row inside the pipeline. The view takes its reference to base
 * when it escapes (sl__tensor_escape), so that a row handed out keeps
 * base alive. base must be an owning tensor without a pool (it is shared
 * by rows that escape on several threads at once, and escape changes
 * nothing in such a tensor). Why: every worker would otherwise retain and release the
 * one base per row, and that counter's cache line would bounce between
 * their CPUs (MNIST rounds on a 2-thread team took 13% longer so). */
int sl__tensor_view_borrowed(sl_tensor **out, sl_pool *pool, sl_tensor *base, size_t offset,
                             sl_dtype dtype, int ndim, const int64_t *shape);
/* A tensor over data that lender lends (its header from pool): when the
 * last reference goes, lender->give_back(lender) is called. Fails like
 * sl__tensor_view. */
int sl__tensor_lent(sl_tensor **out, sl_pool *pool, sl_dtype dtype, int ndim,
                    const int64_t *shape, void *data, sl__lender *lender);
/* Makes t, a tensor embedded in another object (a device queue's slot),
 * describe data it does not own (device memory): refcount 1, no pool, no
 * base; numel and nbytes from the shape. Never release t: its owner keeps
 * it and frees data. Returns SL_EINVAL on a bad dtype, ndim or a negative
 * (unknown) dim, SL_ENOMEM when the size overflows. */
int sl__tensor_init_external(sl_tensor *t, sl_dtype dtype, int ndim, const int64_t *shape,
                             void *data);
/* Called when a pooled tensor leaves the pipeline's control (handed to a
 * user): it takes its own reference to its pool (and so does its base, and
 * a borrowed base gets a reference), so it may outlive the pipeline. Not thread-safe for one tensor: call it from
 * the one thread that hands the tensor out. */
void sl__tensor_escape(sl_tensor *t);
/* True if the caller may overwrite t's data in place: one reference and
 * owned data (not a view; lent data is the tensor's alone while it lives). */
int sl__tensor_writable(const sl_tensor *t);
/* Checks dims and computes numel/nbytes with overflow checks. */
int sl__shape_numel(int ndim, const int64_t *shape, sl_dtype dtype, size_t *numel,
                    size_t *nbytes);
int sl__shape_equal(int ndim_a, const int64_t *a, int ndim_b, const int64_t *b);

#endif
