/* dataset.h: a dataset is a description of a pipeline: one source
 * (MnistDataset or ImageFolderDataset, or other datasets combined: combine.h)
 * followed by nodes (map, shuffle, batch, repeat, take, skip, project,
 * rename) appended in order, as MindSpore's
 * `ds = ds.map(...)` chains do. Nothing runs until an iterator is made from
 * it (iterator.h); many iterators may be made from one dataset, and the
 * dataset may be freed while they run.
 *
 * Every call that can fail returns a status; the message naming the file,
 * column or argument is then in sl_dataset_last_error(). A dataset whose
 * source could not be set stays unusable until a source is set.
 *
 * This header owns the dataset object, its nodes, seed, decode budget and
 * size. The sources and their options are in sources.h, bad samples in
 * bad_samples.h, the buffer pool in pool.h; this header includes all three. */
#ifndef SLUICE_DATASET_H
#define SLUICE_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/bad_samples.h"
#include "sluice/export.h"
#include "sluice/op.h"
#include "sluice/pool.h"
#include "sluice/sources.h"
#include "sluice/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SL_MAX_COLUMNS 8
#define SL_COLUMN_NAME_LEN 32

typedef struct sl_dataset sl_dataset;

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

/* Applies ops in order to input_column of every row; the result replaces
 * the column, renamed output_column when that is not NULL. The map takes its
 * own references to the ops. Workers run in parallel; rows keep their order.
 * Consecutive maps run in one stage (with the larger worker count). */
SL_API int sl_dataset_map(sl_dataset *ds, sl_op *const *ops, size_t nops,
                          const char *input_column, const char *output_column,
                          int num_parallel_workers);
/* Splits ds into nparts datasets of sizes[0], sizes[1], ... rows, written
 * to parts[0 .. nparts) (each freed with sl_dataset_free), as MindSpore's
 * Dataset.split: the parts are disjoint and together hold every sample.
 * randomize 1: each part gets its samples from one random permutation of
 * the source's, fixed by ds's seed; 0: consecutive samples in file order.
 * ds must be a source followed by maps alone (each part keeps them: they
 * take each row alone), not sharded and without num_samples, and the
 * sizes (each >= 1) must add up to its rows; else
 * SL_EINVAL (or SL_ESTATE without a source) and every parts[i] is NULL.
 * Each part then reads its samples as the source does, through its own
 * sampler: the source's (shuffle, seed) when sampler is NULL, else this one
 * (shuffle, seed, num_samples, shards within the part). The parts share
 * the source and what it has loaded; ds is unchanged. */
SL_API int sl_dataset_split(sl_dataset *ds, const int64_t *sizes, size_t nparts, int randomize,
                            const sl_sampler_options *sampler, sl_dataset **parts);
/* Buffered shuffle: keeps buffer_size rows and emits a random one as each
 * new row arrives; a new order every epoch, fixed by the dataset's seed. */
SL_API int sl_dataset_shuffle(sl_dataset *ds, int64_t buffer_size);
/* Stacks batch_size rows into contiguous (batch_size, ...) tensors. The last
 * short batch of an epoch is dropped when drop_remainder is 1. Rows of one
 * batch must agree in shape and dtype. */
SL_API int sl_dataset_batch(sl_dataset *ds, int64_t batch_size, int drop_remainder,
                            int num_parallel_workers);
/* How sl_dataset_batch_padded pads one column (MindSpore's pad_info entry
 * {column: (shape, value)}). */
typedef struct sl_batch_pad {
    const char *column;
    int ndim;                   /* of shape; -1 (shape None): every dimension to the
                                 * batch's largest */
    int64_t shape[SL_MAX_DIMS]; /* the row shape to pad to; -1 (None): the batch's largest */
    double value;               /* what the padding holds, converted to the column's dtype */
} sl_batch_pad;
/* sl_dataset_batch whose rows may differ in shape: each row is copied into
 * the first elements of its slot and the rest is value. Columns pads does
 * not name are padded to the batch's largest with 0 (npads 0: all of them).
 * A row larger than a given shape fails its batch with SL_ESHAPE naming the
 * batch, row, column and sizes; so do rows of one column that differ in
 * dtype or number of dimensions. A pad naming no column, twice the same, or
 * a shape of the wrong number of dimensions is SL_EINVAL now. */
SL_API int sl_dataset_batch_padded(sl_dataset *ds, int64_t batch_size, int drop_remainder,
                                   int num_parallel_workers, const sl_batch_pad *pads,
                                   size_t npads);
/* Which batch a per-batch function works on (MindSpore's BatchInfo). */
typedef struct sl_batch_info {
    int64_t batch_num; /* the batch's number within its epoch, from 0 */
    int64_t epoch_num; /* its epoch, from 0 */
} sl_batch_info;
/* A per-batch function (MindSpore's per_batch_map): gets the batch's nrows
 * rows of its nin input columns, in[c * nrows + r] for input column c and
 * row r (left untouched; it may keep references with sl_tensor_retain),
 * and puts a new reference into out[k * nrows + r] for each of its nout
 * output columns and each row (sl_tensor_new, or sl_tensor_retain of an
 * input to pass it on): these rows are then stacked. Returns SL_OK, or a
 * negative status with a message in err (the tensors it put into out are
 * released). The batch workers call it, several at once: it must be
 * thread-safe. */
typedef int (*sl_batch_map_fn)(void *user, const sl_batch_info *info, sl_tensor *const *in,
                               size_t nin, size_t nrows, sl_tensor **out, size_t nout,
                               char *err, size_t err_len);
/* Versioned (see sluice.h): call sl_batch_map_options_init first. */
typedef struct sl_batch_map_options {
    size_t size;                        /* sizeof the struct as compiled; set by the _init */
    sl_batch_map_fn fn;                 /* required */
    void (*destroy)(void *user);        /* called once, when no node holds fn (may be NULL) */
    void *user;                         /* passed to fn and destroy */
    const char *const *input_columns;   /* required: the columns fn reads (names copied) */
    size_t num_input_columns;
    const char *const *output_columns;  /* the columns fn makes; NULL: the input columns */
    size_t num_output_columns;
} sl_batch_map_options;
SL_API void sl_batch_map_options_init_sized(sl_batch_map_options *o, size_t size);
static inline void sl_batch_map_options_init(sl_batch_map_options *o)
{
    sl_batch_map_options_init_sized(o, sizeof *o);
}
/* sl_dataset_batch that first runs o->fn on each batch's rows: its output
 * columns take the place of the first input column, the other input
 * columns go, the rest keep their order. Their dtype and rank are taken to
 * be the inputs' (the first input's for outputs beyond the inputs) until a
 * row is seen, their sizes unknown. A failure of fn fails the batch with a
 * message naming it, its epoch and fn's own. SL_EINVAL for a column that
 * does not exist, one named twice, or more than SL_MAX_COLUMNS columns; on
 * any failure destroy is not called (user stays the caller's). */
SL_API int sl_dataset_batch_map(sl_dataset *ds, int64_t batch_size, int drop_remainder,
                                int num_parallel_workers, const sl_batch_map_options *o);
/* Repeats what came before count times as one epoch; -1: without end. */
SL_API int sl_dataset_repeat(sl_dataset *ds, int64_t count);
/* The first n rows of each epoch (n = -1: all). After repeat(-1), whose
 * epoch never ends, every n rows make an epoch, each continuing the stream. */
SL_API int sl_dataset_take(sl_dataset *ds, int64_t n);
/* Every row of each epoch but the first n. */
SL_API int sl_dataset_skip(sl_dataset *ds, int64_t n);
/* Keeps only the n named columns, in the order given (MindSpore's
 * project). SL_EINVAL naming the column for one that does not exist or is
 * named twice. */
SL_API int sl_dataset_project(sl_dataset *ds, const char *const *columns, size_t n);
/* Renames column input_columns[k] to output_columns[k], k < n; the others
 * keep their names and every column its place. SL_EINVAL naming the
 * column for one that does not exist, is named twice, or whose new name
 * another column has (or will have) or is empty or too long. Nothing runs:
 * only the names change. */
SL_API int sl_dataset_rename(sl_dataset *ds, const char *const *input_columns,
                             const char *const *output_columns, size_t n);
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
/* How a Decode followed (in its map, or at the start of the next map on
 * the same column) by a RandomResizedCrop, a bilinear Resize (maybe then a
 * CenterCrop) or a CenterCrop runs:
 *   SL_DECODE_FUSION_CROP (1, the default): as one op that decodes only
 *     the rows and columns the output reads, at full scale: the separate
 *     ops' pixels to within 1 level (docs/pipeline.md);
 *   SL_DECODE_FUSION_SCALED (2): also at the smallest of the scales 1/8,
 *     1/4, 1/2 and 1 still at least the output's resolution: faster where
 *     the output is much smaller than the image, but the scaled decode
 *     averages where the separate ops' bilinear taps alias, so detailed
 *     images shrunk 2x or more differ by several levels on average;
 *   SL_DECODE_FUSION_OFF (0): the separate ops, pixel for pixel. */
enum { SL_DECODE_FUSION_OFF = 0, SL_DECODE_FUSION_CROP = 1, SL_DECODE_FUSION_SCALED = 2 };
SL_API void sl_dataset_set_decode_fusion(sl_dataset *ds, int mode);

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
