/* sources.h: where a dataset's rows come from: the sampler (which samples,
 * in what order, which shard), the MNIST, ImageFolder and CIFAR-10/100
 * sources and their options. Setting a source on a dataset (dataset.h)
 * replaces its nodes. */
#ifndef SLUICE_SOURCES_H
#define SLUICE_SOURCES_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/export.h"
#include "sluice/op.h" /* SL_DECODE_MAX_PIXELS_DEFAULT, _LIMIT */

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

/* Defaults: shuffle 1, seed 0, one shard, all samples; MNIST usage all;
 * ImageFolder every file, no decode, 2 workers, decode_max_pixels
 * SL_DECODE_MAX_PIXELS_DEFAULT. The _sized functions write
 * at most size bytes and are what bindings call; C callers use the inline
 * _init, which passes the size their struct was compiled with. */
SL_API void sl_sampler_options_init_sized(sl_sampler_options *o, size_t size);
SL_API void sl_mnist_options_init_sized(sl_mnist_options *o, size_t size);
SL_API void sl_image_folder_options_init_sized(sl_image_folder_options *o, size_t size);
SL_API void sl_cifar_options_init_sized(sl_cifar_options *o, size_t size);

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

#ifdef __cplusplus
}
#endif
#endif
