/* sources.h: where a dataset's rows come from: the sampler (which samples,
 * in what order, which shard), the MNIST, ImageFolder and CIFAR-10/100
 * sources, the caller's arrays (slices) and the caller's function
 * (generator), and their options. Setting a source on a dataset (dataset.h)
 * replaces its nodes. */
#ifndef SLUICE_SOURCES_H
#define SLUICE_SOURCES_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/export.h"
#include "sluice/op.h" /* SL_DECODE_MAX_PIXELS_DEFAULT, _LIMIT */
#include "sluice/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The dataset these calls apply to (dataset.h). */
typedef struct sl_dataset sl_dataset;

/* Options structs are versioned (see sluice.h): each starts with its size,
 * which its _init records; always call the _init before setting fields.
 * New fields are only ever appended. */

/* Which samples a source yields and in what order; shared by all sources.
 * It lives inside the source options and so never grows. */
typedef struct sl_sampler_options {
    size_t size;         /* sizeof the struct as the caller compiled it; set by the _init */
    int64_t num_samples; /* at most this many per shard per epoch; 0: all */
    int shuffle;         /* 1: a new random order each epoch (default 1) */
    uint64_t seed;       /* seed of that order (default 0) */
    int64_t num_shards;  /* split the samples into this many parts (default 1) */
    int64_t shard_id;    /* which part this dataset reads, 0 <= shard_id < num_shards */
} sl_sampler_options;

typedef enum sl_mnist_usage {
    SL_MNIST_ALL = 0, /* train then test, each whose images file is there (at least one) */
    SL_MNIST_TRAIN,
    SL_MNIST_TEST
} sl_mnist_usage;

typedef struct sl_mnist_options {
    size_t size;             /* sizeof the struct as the caller compiled it; set by the _init */
    const char *dataset_dir; /* holds train-images-idx3-ubyte[.gz], ... */
    sl_mnist_usage usage;    /* default SL_MNIST_ALL, as MindSpore */
    sl_sampler_options sampler;
} sl_mnist_options;

typedef struct sl_image_folder_options {
    size_t size;                   /* sizeof the struct as compiled; set by the _init */
    const char *dataset_dir;       /* one sub-folder per class */
    const char *const *extensions; /* NULL-terminated, e.g. {".jpg", NULL}; NULL: every file */
    /* Optional: only these class folders, with these labels. */
    const char *const *class_names;
    const int32_t *class_indices;
    size_t num_classes;
    int decode;                    /* 1: yield decoded RGB images, 0: the file's bytes */
    int num_parallel_workers;      /* decode workers when decode is 1 (default 2) */
    sl_sampler_options sampler;
    /* Appended in version 2. */
    uint64_t decode_max_pixels;    /* when decode is 1: refuse JPEGs declaring more pixels
                                    * (default SL_DECODE_MAX_PIXELS_DEFAULT; see op.h) */
} sl_image_folder_options;

typedef enum sl_cifar_usage {
    SL_CIFAR_ALL = 0, /* train then test, each split of which a file is there (at least one) */
    SL_CIFAR_TRAIN,
    SL_CIFAR_TEST
} sl_cifar_usage;

/* Options of both CIFAR sources (sl_dataset_cifar10, sl_dataset_cifar100). */
typedef struct sl_cifar_options {
    size_t size;             /* sizeof the struct as the caller compiled it; set by the _init */
    const char *dataset_dir; /* holds the binary version's files: data_batch_1.bin ..
                              * data_batch_5.bin and test_batch.bin (CIFAR-10), train.bin
                              * and test.bin (CIFAR-100) */
    sl_cifar_usage usage;    /* default SL_CIFAR_ALL, as MindSpore */
    sl_sampler_options sampler;
} sl_cifar_options;

/* One column of the slices source: a C-contiguous array in the caller's
 * memory whose first dimension is the rows; row i is the array's element
 * i along it, of shape shape[1..ndim-1] (a 1-d array gives 0-d rows). */
typedef struct sl_slices_column {
    const char *name;        /* at most SL_COLUMN_NAME_LEN - 1 bytes */
    sl_dtype dtype;
    int ndim;                /* 1 .. SL_MAX_DIMS */
    int64_t shape[SL_MAX_DIMS];
    const void *data;        /* shape[0] * ... * shape[ndim-1] elements */
} sl_slices_column;

/* The slices source (sl_dataset_slices): rows are slices of the caller's
 * arrays along their first dimension, as NumpySlicesDataset's. */
typedef struct sl_slices_options {
    size_t size;             /* sizeof the struct as the caller compiled it; set by the _init */
    const sl_slices_column *columns; /* ncols of them, all of the same first dimension */
    size_t ncols;            /* 1 .. SL_MAX_COLUMNS */
    /* Called once (from whatever thread drops the last reference) when
     * sluice no longer reads the arrays: the source is freed and every row
     * handed out has been released. NULL: the caller keeps the arrays alive
     * and unchanged for as long as any dataset or row uses them. */
    void (*release)(void *user);
    void *user;
    sl_sampler_options sampler;
} sl_slices_options;

/* The generator source's function: fills columns[0..ncols-1] with new
 * tensors (sl_tensor_new; sluice takes the references) holding sample
 * index's columns. Returns 0, or non-zero with a reason in msg (msglen
 * bytes; the tensors already set are released by sluice): SL_ECANCELED
 * when it can no longer run at all (the iterator then stops, as on
 * close), anything else for a bad sample. It is called
 * from the pipeline's threads, several at once unless the source is
 * in_order: it must be thread-safe. */
typedef int (*sl_generator_read_fn)(void *user, int64_t index, sl_tensor **columns, size_t ncols,
                                    char *msg, size_t msglen);

/* The generator source (sl_dataset_generator): random access by index to
 * rows the caller's function makes (GeneratorDataset). */
typedef struct sl_generator_options {
    size_t size;             /* sizeof the struct as the caller compiled it; set by the _init */
    int64_t num_rows;        /* samples before sampling, >= 0 */
    size_t ncols;            /* 1 .. SL_MAX_COLUMNS */
    const char *const *column_names;   /* ncols names */
    /* ncols specs: a row's column must have the dtype and ndim, and each
     * size not -1 (-1: any). */
    const sl_tensor_spec *column_specs;
    sl_generator_read_fn read;
    void *user;
    /* Called once, when the source is freed (no read runs any more);
     * NULL: nothing to free. */
    void (*release)(void *user);
    /* 1: read is called for the sampler's indices in order, one call at a
     * time (for a stream that cannot seek: each pass starts at index 0 and
     * goes up by one); the sampler must then neither shuffle nor shard, and
     * a bad sample raises (skip and replace read stand-ins by index). 0
     * (default): any order, in parallel. */
    int in_order;
    int32_t reserved_1;      /* 0 */
    sl_sampler_options sampler;
} sl_generator_options;

/* Defaults: shuffle 1, seed 0, one shard, all samples; MNIST usage all;
 * ImageFolder every file, no decode, 2 workers, decode_max_pixels
 * SL_DECODE_MAX_PIXELS_DEFAULT. The _sized functions write
 * at most size bytes and are what bindings call; C callers use the inline
 * _init, which passes the size their struct was compiled with. */
SL_API void sl_sampler_options_init_sized(sl_sampler_options *o, size_t size);
SL_API void sl_mnist_options_init_sized(sl_mnist_options *o, size_t size);
SL_API void sl_image_folder_options_init_sized(sl_image_folder_options *o, size_t size);
SL_API void sl_cifar_options_init_sized(sl_cifar_options *o, size_t size);
SL_API void sl_slices_options_init_sized(sl_slices_options *o, size_t size);
SL_API void sl_generator_options_init_sized(sl_generator_options *o, size_t size);

static inline void sl_sampler_options_init(sl_sampler_options *o)
{
    sl_sampler_options_init_sized(o, sizeof *o);
}

static inline void sl_mnist_options_init(sl_mnist_options *o)
{
    sl_mnist_options_init_sized(o, sizeof *o);
}

static inline void sl_image_folder_options_init(sl_image_folder_options *o)
{
    sl_image_folder_options_init_sized(o, sizeof *o);
}

static inline void sl_cifar_options_init(sl_cifar_options *o)
{
    sl_cifar_options_init_sized(o, sizeof *o);
}

static inline void sl_slices_options_init(sl_slices_options *o)
{
    sl_slices_options_init_sized(o, sizeof *o);
}

static inline void sl_generator_options_init(sl_generator_options *o)
{
    sl_generator_options_init_sized(o, sizeof *o);
}

/* Sources. They read the files' headers now (so counts and shapes are known
 * and bad files are refused early) and the pixels when an iterator runs.
 * Options not made by their _init (or by a newer sluice, setting fields
 * this one does not know) are refused with SL_EINVAL.
 * MNIST yields `image` uint8 (28, 28, 1) and `label` uint32 (); ImageFolder
 * yields `image` (the file's bytes, uint8 (n,), or a decoded (H, W, 3)) and
 * `label` int32 (). Setting a source drops any nodes appended before. */
SL_API int sl_dataset_mnist(sl_dataset *ds, const sl_mnist_options *o);
SL_API int sl_dataset_image_folder(sl_dataset *ds, const sl_image_folder_options *o);
/* CIFAR's binary files (defaults: usage all, the sampler's). They check
 * that the files are there and hold whole records now and read each record
 * when an iterator asks for it (nothing is loaded in advance). CIFAR-10
 * yields `image` uint8 (32, 32, 3) (HWC, from the file's CHW planes) and
 * `label` uint32 (); CIFAR-100 yields `image`, `coarse_label` and
 * `fine_label`, uint32 (). A label out of range (>= 10; >= 20 coarse,
 * >= 100 fine) is an SL_EFORMAT error of its sample when it is read. */
SL_API int sl_dataset_cifar10(sl_dataset *ds, const sl_cifar_options *o);
SL_API int sl_dataset_cifar100(sl_dataset *ds, const sl_cifar_options *o);
/* Rows that are slices of the caller's arrays (no copy): each row's
 * columns are read-only views of the arrays (sl_tensor_writable says 0),
 * which keep them alive; o->release runs once the source and every such
 * row are gone. The columns and their sizes are checked now (equal first
 * dimensions, names unique); on failure release is not called (the caller
 * still owns the arrays). */
SL_API int sl_dataset_slices(sl_dataset *ds, const sl_slices_options *o);
/* Rows the caller's function makes, by index (defaults: in_order 0, the
 * sampler's). An error from it is an SL_EFORMAT error of its sample (a bad
 * sample, see sl_dataset_set_error_samples): "generator: sample 17: <its
 * message>"; so is a row whose column differs from its spec. On failure
 * here release is not called. */
SL_API int sl_dataset_generator(sl_dataset *ds, const sl_generator_options *o);

#ifdef __cplusplus
}
#endif
#endif
