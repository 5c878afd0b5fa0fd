/* tensor.h: dense, contiguous, reference-counted tensors of up to 8 dims.
 * A tensor returned to you (by an iterator, an op or sl_tensor_new) carries
 * one reference that you give back with sl_tensor_release(). Tensors made
 * by a pipeline come from its buffer pools and return there when released. */
#ifndef SLUICE_TENSOR_H
#define SLUICE_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SL_MAX_DIMS 8

typedef enum sl_dtype {
    SL_UINT8 = 0,
    SL_INT32,
    SL_UINT32,
    SL_INT64,
    SL_FLOAT32,
    SL_FLOAT64,
    SL_DTYPE_COUNT
} sl_dtype;

typedef struct sl_tensor sl_tensor;

/* What a column holds without its data: dtype and shape, where -1 marks a
 * size not known before the data is seen (a decoded image's height). */
typedef struct sl_tensor_spec {
    sl_dtype dtype;
    int ndim;
    int64_t shape[SL_MAX_DIMS];
} sl_tensor_spec;

/* Bytes per element (0 for an unknown dtype). */
SL_API size_t sl_dtype_size(sl_dtype dtype);
/* "uint8", "float32", ...; "?" for an unknown dtype. */
SL_API const char *sl_dtype_name(sl_dtype dtype);
/* Parses a dtype name; returns 0 on success, SL_EINVAL if unknown. */
SL_API int sl_dtype_parse(const char *name, sl_dtype *out);

/* Allocates a zero-filled tensor on the heap. *out holds one reference.
 * Fails with SL_EINVAL on a bad dtype/ndim/negative dim, SL_ENOMEM on
 * overflow or allocation failure. */
SL_API int sl_tensor_new(sl_tensor **out, sl_dtype dtype, int ndim, const int64_t *shape);

SL_API sl_tensor *sl_tensor_retain(sl_tensor *t);
/* Drops one reference; the last one frees the tensor (NULL is ignored). */
SL_API void sl_tensor_release(sl_tensor *t);

SL_API sl_dtype sl_tensor_dtype(const sl_tensor *t);
SL_API int sl_tensor_ndim(const sl_tensor *t);
/* Pointer to ndim sizes, outermost first. */
SL_API const int64_t *sl_tensor_shape(const sl_tensor *t);
SL_API size_t sl_tensor_numel(const sl_tensor *t);
SL_API size_t sl_tensor_nbytes(const sl_tensor *t);
/* The elements, row-major and contiguous. Write to them only when
 * sl_tensor_writable(t) says so. */
SL_API void *sl_tensor_data(const sl_tensor *t);
SL_API int sl_tensor_refcount(const sl_tensor *t);
/* 1 if you may write t's data: you hold the only reference and t does not
 * share its data with another tensor (an MNIST row is a view of the loaded
 * file, shared by every epoch and iterator); 0 otherwise. */
SL_API int sl_tensor_writable(const sl_tensor *t);

/* Writes "(28, 28, 1)" into buf; returns buf. */
SL_API char *sl_shape_str(char *buf, size_t len, int ndim, const int64_t *shape);

#ifdef __cplusplus
}
#endif
#endif
