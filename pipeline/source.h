/* source.h: the interface every source (MNIST, ImageFolder, CIFAR, slices,
 * generator) implements. A
 * source is made when the dataset is described (headers read, counts
 * known), loads what it must once (prepare, possibly slow, shared by all
 * iterators) and then reads rows by index from any thread. Reference
 * counted, since datasets and running iterators share it. */
#ifndef SLUICE_PIPELINE_SOURCE_H
#define SLUICE_PIPELINE_SOURCE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/dataset.h"
#include "core/error.h"
#include "core/pool.h"
#include "pipeline/row.h"

typedef struct sl__source sl__source;

typedef struct sl__class_info {
    char *name;
    int32_t label;
    int64_t count;
} sl__class_info;

typedef struct sl__source_iface {
    const char *kind;
    /* Loads what reading needs; called by every iterator's source thread,
     * must be cheap the second time. Returns early with SL_ECLOSED when
     * *stop becomes non-zero. */
    int (*prepare)(sl__source *src, const atomic_int *stop, sl__error *err);
    /* Optional (may be NULL): wakes every prepare that is waiting for
     * another iterator's load, so that one whose *stop was set returns.
     * Called by an iterator after setting its stop flag. */
    void (*wake)(sl__source *src);
    /* Fills row with the columns of sample index (tensors from pool). */
    int (*read)(sl__source *src, int64_t index, sl__row *row, sl_pool *pool, sl__error *err);
    /* About how many bytes reading sample index brings (the file's size). */
    size_t (*size_hint)(const sl__source *src, int64_t index);
    /* Names sample index for messages: its file, and position in the file. */
    void (*describe)(const sl__source *src, int64_t index, char *buf, size_t len);
    /* Time the one-time load took (ms), 0 if not loaded. */
    double (*load_ms)(const sl__source *src);
    void (*destroy)(sl__source *src);
} sl__source_iface;

struct sl__source {
    const sl__source_iface *iface;
    atomic_int refs;
    int64_t num_rows;            /* samples before sampling */
    sl_sampler_options sampler;
    size_t ncols;
    char names[SL_MAX_COLUMNS][SL_COLUMN_NAME_LEN];
    sl_tensor_spec specs[SL_MAX_COLUMNS];
    char summary[256];           /* "mnist(train, 60000 rows, DIR)" */
    sl__class_info *classes;     /* ImageFolder only */
    size_t nclasses;
    int in_order;                /* read by the source stage alone, in the sampler's
                                  * order (a stream: the generator's in_order) */
};

void sl__source_retain(sl__source *src);
void sl__source_release(sl__source *src);

/* Resolve the caller's options (NULL: defaults) into a full struct of this
 * library's version; SL_EINVAL when they were not made by their _init or
 * set fields this library does not know (core/options.h). */
int sl__mnist_options_read(sl_mnist_options *dst, const sl_mnist_options *src, sl__error *err);
int sl__image_folder_options_read(sl_image_folder_options *dst,
                                  const sl_image_folder_options *src, sl__error *err);
int sl__cifar_options_read(sl_cifar_options *dst, const sl_cifar_options *src, sl__error *err);
int sl__slices_options_read(sl_slices_options *dst, const sl_slices_options *src,
                            sl__error *err);
int sl__generator_options_read(sl_generator_options *dst, const sl_generator_options *src,
                               sl__error *err);

/* Constructors, given options resolved as above: read headers, check
 * options; on failure *out is NULL. */
int sl__mnist_source_new(sl__source **out, const sl_mnist_options *o, sl__error *err);
int sl__image_folder_source_new(sl__source **out, const sl_image_folder_options *o,
                                sl__error *err);
/* hundred: 0 CIFAR-10, 1 CIFAR-100. */
int sl__cifar_source_new(sl__source **out, int hundred, const sl_cifar_options *o,
                         sl__error *err);
int sl__slices_source_new(sl__source **out, const sl_slices_options *o, sl__error *err);
int sl__generator_source_new(sl__source **out, const sl_generator_options *o, sl__error *err);

/* Names src's ncols columns (1 .. SL_MAX_COLUMNS, each non-empty, unique,
 * shorter than SL_COLUMN_NAME_LEN) and sets src->ncols. */
int sl__source_set_columns(sl__source *src, size_t ncols, const char *const *names,
                           sl__error *err);

#endif
