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
