/* dataset.h: a dataset is a description of a pipeline: one source
 * (MnistDataset or ImageFolderDataset) followed by nodes (map, shuffle,
 * batch, repeat, take, skip) appended in order, as MindSpore's
 * `ds = ds.map(...)` chains do. Nothing runs until an iterator is made from
 * it (iterator.h); many iterators may be made from one dataset, and the
 * dataset may be freed while they run.
 *
 * Every call that can fail returns a status; the message naming the file,
 * column or argument is then in sl_dataset_last_error(). A dataset whose
 * source could not be set stays unusable until a source is set. */
#ifndef SLUICE_DATASET_H
#define SLUICE_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/export.h"
#include "sluice/op.h"
#include "sluice/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SL_MAX_COLUMNS 8
#define SL_COLUMN_NAME_LEN 32

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

/* Defaults: shuffle 1, seed 0, one shard, all samples; MNIST usage all;
 * ImageFolder every file, no decode, 2 workers, decode_max_pixels
 * SL_DECODE_MAX_PIXELS_DEFAULT. The _sized functions write
 * at most size bytes and are what bindings call; C callers use the inline
 * _init, which passes the size their struct was compiled with. */
SL_API void sl_sampler_options_init_sized(sl_sampler_options *o, size_t size);
SL_API void sl_mnist_options_init_sized(sl_mnist_options *o, size_t size);
SL_API void sl_image_folder_options_init_sized(sl_image_folder_options *o, size_t size);

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

/* An empty dataset in *out; free with sl_dataset_free. SL_ENOMEM (and *out
 * NULL) when out of memory. */
SL_API int sl_dataset_new(sl_dataset **out);
/* A new dataset with src's source, nodes, seed and pool idle limit; nodes appended to one
 * later do not change the other. The two share the source and what it has
 * loaded (MNIST's pixels are read once for both). *out is NULL on failure
 * (SL_ENOMEM). */
SL_API int sl_dataset_copy(sl_dataset **out, const sl_dataset *src);
SL_API void sl_dataset_free(sl_dataset *ds);
/* The message of the last failed call on ds ("" if none). */
SL_API const char *sl_dataset_last_error(const sl_dataset *ds);

/* Sources. They read the files' headers now (so counts and shapes are known
 * and bad files are refused early) and the pixels when an iterator runs.
 * Options not made by their _init (or by a newer sluice, setting fields
 * this one does not know) are refused with SL_EINVAL.
 * MNIST yields `image` uint8 (28, 28, 1) and `label` uint32 (); ImageFolder
 * yields `image` (the file's bytes, uint8 (n,), or a decoded (H, W, 3)) and
 * `label` int32 (). Setting a source drops any nodes appended before. */
SL_API int sl_dataset_mnist(sl_dataset *ds, const sl_mnist_options *o);
SL_API int sl_dataset_image_folder(sl_dataset *ds, const sl_image_folder_options *o);

/* Applies ops in order to input_column of every row; the result replaces
 * the column, renamed output_column when that is not NULL. The map takes its
 * own references to the ops. Workers run in parallel; rows keep their order.
 * Consecutive maps run in one stage (with the larger worker count). */
SL_API int sl_dataset_map(sl_dataset *ds, sl_op *const *ops, size_t nops,
                          const char *input_column, const char *output_column,
                          int num_parallel_workers);
/* Buffered shuffle: keeps buffer_size rows and emits a random one as each
 * new row arrives; a new order every epoch, fixed by the dataset's seed. */
SL_API int sl_dataset_shuffle(sl_dataset *ds, int64_t buffer_size);
/* Stacks batch_size rows into contiguous (batch_size, ...) tensors. The last
 * short batch of an epoch is dropped when drop_remainder is 1. Rows of one
 * batch must agree in shape and dtype. */
SL_API int sl_dataset_batch(sl_dataset *ds, int64_t batch_size, int drop_remainder,
                            int num_parallel_workers);
/* Repeats what came before count times as one epoch; -1: without end. */
SL_API int sl_dataset_repeat(sl_dataset *ds, int64_t count);
/* The first n rows of each epoch (n = -1: all). After repeat(-1), whose
 * epoch never ends, every n rows make an epoch, each continuing the stream. */
SL_API int sl_dataset_take(sl_dataset *ds, int64_t n);
/* Every row of each epoch but the first n. */
SL_API int sl_dataset_skip(sl_dataset *ds, int64_t n);
/* The seed of shuffle nodes and random ops (default 0). */
SL_API void sl_dataset_set_seed(sl_dataset *ds, uint64_t seed);
SL_API uint64_t sl_dataset_get_seed(const sl_dataset *ds);
/* The most bytes of decoded images that the Decode ops of one iterator's
 * workers hold at once: a Decode takes its image's bytes before allocating
 * it and they come back once its worker has run the rest of the map on
 * that row (usually a Resize that replaces the image). A worker whose
 * image does not fit waits, without polling, until others give bytes back
 * (freeing the iterator wakes it); an image needing more than the whole
 * budget is an error naming its file. 0 (the default): the largest image
 * the pipeline's Decode ops accept (max_pixels x channels, 192 MiB for RGB
 * by default), so however many workers decode, together they never hold
 * more than one image of the largest size allowed. */
SL_API void sl_dataset_set_decode_budget(sl_dataset *ds, uint64_t bytes);

/* --- bad samples -----------------------------------------------------------
 * A bad sample is one whose read, or a map before any batch, fails with a
 * data error: a corrupt or cut JPEG, one over the decode limit or larger
 * than the whole decode budget, an image of the wrong shape for an op, a
 * file that cannot be read, a custom op's error (every status but
 * SL_ENOMEM, SL_ECLOSED, SL_ECANCELED, SL_ETHREAD, SL_ETIMEDOUT and
 * SL_ESTATE, which always fail the pipeline, as do errors in batching and
 * in maps after a batch). What happens to one:
 *
 * - SL_ERROR_SAMPLES_RAISE (default): the pipeline fails with its error,
 *   after the rows before it.
 * - SL_ERROR_SAMPLES_REPLACE: a stand-in takes its place (see below).
 * - SL_ERROR_SAMPLES_SKIP: it is dropped and the samples after it move up;
 *   at the end of the epoch (before the end-of-epoch marker, where the map
 *   hands rows on) the stand-ins of the epoch's dropped samples follow, in
 *   the order they were dropped. An epoch thus keeps its length: every
 *   shard yields as many rows, and batches, as an all-good shard would, so
 *   data-parallel ranks never wait on each other, and
 *   sl_dataset_get_dataset_size stays exact. (Behind an endless repeat
 *   before the map no epoch ends there: dropped samples are then only
 *   dropped.) The batch is then formed after the map rather than grouped
 *   before it, and a map that is last gets a sequential stage after it.
 *   An iterator started mid-epoch (sl_iterator_options.start_rows) hands
 *   out what one started at the beginning did from there on; under skip
 *   it reads and maps the rows it skips (they are dropped after the map),
 *   so it reports their bad samples again.
 *
 * Stand-ins are chosen the same way in both modes, and only from (the
 * dataset's seed, the pass over the source, the bad sample's index): so the
 * output is the same whatever the worker counts. For bad sample i of pass
 * e, a generator seeded with (seed, e, i) draws positions of pass e's order
 * of this shard's samples (the sampler's: shuffle, shard, num_samples); the
 * first drawn sample other than i that reads and maps without error stands
 * in (it also runs through every map before the batch, with its own random
 * draws). After SL_ERROR_SAMPLES_TRIES failed draws the pipeline fails,
 * naming the bad sample and the last one tried: an epoch of bad samples is
 * an error, not a hang.
 *
 * Each skipped or replaced sample is reported once, in sample order: the
 * iterator counts it (sl_iterator_stats) and calls `report`, when set, from
 * the thread calling sl_iterator_next (for sl_model_train in sink mode, the
 * transfer thread). Stand-ins are not reported; a stand-in that fails is
 * reported where it comes in the epoch on its own.
 *
 * A cap turns a flood into an error: when more samples of one pass over the
 * source are bad than max_bad_samples (>= 0), or, when that is -1, than
 * max_bad_fraction x the shard's samples per pass, rounded up, the
 * iterator fails with the last bad sample's status and a message naming
 * the count, the cap and that sample. (Passes are counted by the pass that
 * read each sample; once one from a newer pass is reported, the count starts
 * again.) The default, 1%, lets a few broken files in a large set through
 * but stops a folder that is mostly unreadable (the wrong folder, a bad
 * mount) within its first hundreds of samples; 1.0 is no cap. */
#define SL_ERROR_SAMPLES_TRIES 16

typedef enum sl_error_samples {
    SL_ERROR_SAMPLES_RAISE = 0,
    SL_ERROR_SAMPLES_SKIP,
    SL_ERROR_SAMPLES_REPLACE
} sl_error_samples;

/* One skipped or replaced sample, as reported. The strings live until the
 * report returns. */
typedef struct sl_bad_sample {
    int64_t index;       /* the sample's index in the source */
    int64_t epoch;       /* the pass over the source that read it (from 0) */
    int64_t stand_in;    /* replace: the index of the sample in its place; skip: -1 */
    int status;          /* the error */
    int replaced;        /* 1: replaced, 0: skipped */
    const char *sample;  /* its file (ImageFolder), or file and sample (MNIST) */
    const char *reason;  /* the error's message */
    uint64_t count;      /* samples skipped or replaced by this iterator, this one included */
} sl_bad_sample;

typedef void (*sl_bad_sample_fn)(void *user, const sl_bad_sample *bad);

/* Versioned like the others: call sl_error_samples_options_init first. */
typedef struct sl_error_samples_options {
    size_t size;               /* sizeof the struct as compiled; set by the _init */
    sl_error_samples mode;     /* default SL_ERROR_SAMPLES_RAISE */
    int32_t unused0;           /* keeps max_bad_samples 8-aligned; must stay 0 */
    int64_t max_bad_samples;   /* per pass; -1 (default): max_bad_fraction applies */
    double max_bad_fraction;   /* per pass, of the shard's samples, in [0, 1] (default 0.01) */
    sl_bad_sample_fn report;   /* called for each bad sample (default NULL) */
    void *report_user;         /* its first argument */
} sl_error_samples_options;

SL_API void sl_error_samples_options_init_sized(sl_error_samples_options *o, size_t size);
static inline void sl_error_samples_options_init(sl_error_samples_options *o)
{
    sl_error_samples_options_init_sized(o, sizeof *o);
}
/* What iterators made from ds from now on do with bad samples (o NULL: the
 * defaults, raise). Copied by sl_dataset_copy. SL_EINVAL, with the message
 * in sl_dataset_last_error, for options not made by the _init, an unknown
 * mode, max_bad_samples < -1 or max_bad_fraction outside [0, 1]. */
SL_API int sl_dataset_set_error_samples(sl_dataset *ds, const sl_error_samples_options *o);
/* The buffer pool. The rows of every iterator made from a dataset come from
 * the dataset's pool, which caches freed blocks so that a running pipeline
 * does not call malloc per sample. It keeps at most its idle limit cached,
 * by default min(64 MiB, max(half the most bytes it ever had in use at
 * once, 8 MiB)); blocks freed beyond that go back to the system (the
 * oldest large ones, 256 KiB and up, first). Where a training executor's
 * threads make the batches between steps (an inline sink on cpu), each of
 * them takes blocks from a part of the pool of its own, with the same
 * limit each; the pool's figures include its parts. */
#define SL_POOL_IDLE_LIMIT_DEFAULT ((size_t)-1)

/* Bytes are what the blocks can hold (their size class, at most 1/32 above
 * the request), without the pool's 64-byte block headers. */
typedef struct sl_pool_stats {
    uint64_t in_use_bytes;      /* handed out and not yet given back */
    uint64_t idle_bytes;        /* cached for reuse; in use + idle is all the pool holds */
    uint64_t peak_in_use_bytes; /* the most in use at once since the pool was made
                                 * (with parts: the sum of each one's, a bound) */
    uint64_t idle_cap_bytes;    /* the most it may keep idle now (the default
                                 * limit follows the peak) */
    uint64_t system_allocs;     /* blocks taken from the system (malloc or mmap) */
    uint64_t system_frees;      /* blocks given back to it */
    uint64_t cap_frees;         /* of those, given back because the idle cap was reached */
} sl_pool_stats;

/* Sets the most bytes ds's pool keeps cached, whatever its peak (0: none,
 * every freed block goes back to the system; SL_POOL_IDLE_LIMIT_DEFAULT:
 * the default, which follows the peak) and gives back at once what is
 * cached beyond it. Applies to the iterators already running too. A copy
 * (sl_dataset_copy) has its own pool, with the same limit. */
SL_API void sl_dataset_set_pool_idle_limit(sl_dataset *ds, size_t bytes);
/* What ds's pool holds and has done, over all its iterators so far. */
SL_API void sl_dataset_get_pool_stats(const sl_dataset *ds, sl_pool_stats *out);

/* The size sl_dataset_get_dataset_size gives an epoch that never ends (a
 * repeat(-1) that no take bounds). It travels in the out-parameter, never
 * as a status, so no error can be mistaken for it. */
#define SL_DATASET_SIZE_ENDLESS ((int64_t)-1)

/* Rows (or batches) per epoch, from the headers alone, into *size: a count
 * >= 0, or SL_DATASET_SIZE_ENDLESS. Returns SL_OK, or SL_ESTATE when no
 * source is set (*size is then 0). */
SL_API int sl_dataset_get_dataset_size(const sl_dataset *ds, int64_t *size);
SL_API size_t sl_dataset_num_columns(const sl_dataset *ds);
SL_API const char *sl_dataset_column_name(const sl_dataset *ds, size_t i);
/* Index of the named column, or -1. */
SL_API int sl_dataset_column_index(const sl_dataset *ds, const char *name);
/* Dtype and shape of column i as far as known without data (-1: unknown). */
SL_API int sl_dataset_column_spec(const sl_dataset *ds, size_t i, sl_tensor_spec *out);
/* One line per node, source first ("mnist(train, 60000 rows)", "map(...)"). */
SL_API int sl_dataset_describe(const sl_dataset *ds, char *buf, size_t len);

/* For inspect: the source's kind ("mnist", "image_folder"), the number of
 * samples before sharding, and (ImageFolder) the classes with their counts.
 * Returns SL_ESTATE without a source; i >= count gives SL_EINVAL. */
SL_API const char *sl_dataset_source_kind(const sl_dataset *ds);
SL_API int64_t sl_dataset_source_rows(const sl_dataset *ds);
SL_API size_t sl_dataset_num_classes(const sl_dataset *ds);
SL_API int sl_dataset_class_info(const sl_dataset *ds, size_t i, const char **name,
                                 int32_t *label, int64_t *count);

#ifdef __cplusplus
}
#endif
#endif
