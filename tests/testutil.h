/* testutil.h: helpers the Check suites share: temporary folders, small
 * generated MNIST (IDX) files and JPEGs, and known pixel patterns; and
 * fixtures that assert with Check: the seeds' LeNet MNIST pipeline, equal
 * parameters, a pass-through op's infer. Every function returns 0 on
 * success and -1 on failure unless it says otherwise. */
#ifndef SLUICE_TESTUTIL_H
#define SLUICE_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "ops/op_impl.h"
#include "sluice/dataset.h"
#include "sluice/model.h"
#include "sluice/status.h"

/* A fresh temporary directory under $TMPDIR (or /tmp); malloc'd path. */
char *tu_mkdtemp(void);
/* Removes path and everything under it (like rm -rf); ignores errors. */
void tu_rmtree(const char *path);
/* dir + "/" + name, malloc'd. */
char *tu_path(const char *dir, const char *name);
/* The names in dir but . and .., sorted, each followed by one space, into
 * buf (len bytes); fails the test when dir cannot be read, holds more than
 * 64 names or buf is too small. */
void tu_listing(const char *dir, char *buf, size_t len);

/* The pixel tu_write_idx_images stores for image i at (y, x). */
uint8_t tu_pixel(uint32_t i, uint32_t y, uint32_t x);
/* The label tu_write_idx_labels stores for sample i: i % 10. */
uint8_t tu_label(uint32_t i);

/* Writes data to path, gzip-compressed when gz is 1. */
int tu_write_bytes(const char *path, const void *data, size_t n, int gz);
/* Reads a whole (plain) file; *data is malloc'd. */
int tu_read_file(const char *path, void **data, size_t *n);
/* An IDX image file (magic 0x00000803, dims n, h, w) holding tu_pixel. */
int tu_write_idx_images(const char *path, uint32_t n, uint32_t h, uint32_t w, int gz);
/* An IDX label file (magic 0x00000801, dim n) holding tu_label. */
int tu_write_idx_labels(const char *path, uint32_t n, int gz);
/* A MNIST folder: train-{images-idx3,labels-idx1}-ubyte and t10k-... with
 * n_train and n_test 28x28 samples, plus ".gz" on each name when gz is 1.
 * Test sample i holds tu_pixel(n_train + i, ...) and tu_label(n_train + i),
 * so the usage "all" is one numbering. */
int tu_make_mnist(const char *dir, uint32_t n_train, uint32_t n_test, int gz);
/* A new temporary folder holding tu_make_mnist's files (not gzipped);
 * fails the test when it cannot be made. Free with tu_mnist_dir_drop. */
char *tu_mnist_dir(uint32_t n_train, uint32_t n_test);
/* Removes such a folder and frees its path. */
void tu_mnist_dir_drop(char *dir);

/* Fills w*h*c bytes with a smooth deterministic pattern (JPEG-friendly). */
void tu_fill_image(uint8_t *px, int w, int h, int c, uint32_t seed);
/* Encodes pixels (h, w, c), c = 1 or 3, as a baseline JPEG at quality. */
int tu_write_jpeg(const char *path, const uint8_t *px, int w, int h, int c, int quality);
/* Encodes to memory; *out is malloc'd. */
int tu_encode_jpeg(uint8_t **out, size_t *out_len, const uint8_t *px, int w, int h, int c,
                   int quality);
/* An ImageFolder tree: for each class k < nclasses, folder "class_<k>"
 * holding per_class JPEGs "img_<j>.jpg" of w x h RGB (pattern seed k*1000+j). */
int tu_make_image_folder(const char *dir, int nclasses, int per_class, int w, int h);

/* sl_dataset_get_dataset_size's size (SL_DATASET_SIZE_ENDLESS included), or
 * INT64_MIN when the call fails: one value to compare in an assertion. */
int64_t tu_dataset_size(const sl_dataset *ds);

/* --- shorter runs under sanitizers ------------------------------------
 * TU_SANITIZED is 1 when the file is compiled with AddressSanitizer,
 * ThreadSanitizer or MemorySanitizer (GCC's __SANITIZE_* macros, clang's
 * __has_feature), where a training step costs tens of times more. A test
 * whose length serves its numbers rather than its threads may then run a
 * shortened form: the same code paths on less data. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TU_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define TU_SANITIZED 1
#endif
#endif
#ifndef TU_SANITIZED
#define TU_SANITIZED 0
#endif
/* TU_THREAD_SANITIZED: 1 under ThreadSanitizer alone. A suite whose code
 * runs on the calling thread only gives ThreadSanitizer nothing to check,
 * and skips itself there (the plain and ASan builds run it). */
#if defined(__SANITIZE_THREAD__)
#define TU_THREAD_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TU_THREAD_SANITIZED 1
#endif
#endif
#ifndef TU_THREAD_SANITIZED
#define TU_THREAD_SANITIZED 0
#endif

/* 1 when test should run its shortened form: a sanitizer build (TU_SANITIZED
 * as the caller was compiled) unless SLUICE_TESTS_FULL=1 is in the
 * environment. It says so on stdout, naming the test and, when shortened,
 * what (a phrase such as "75 steps instead of 2,500"). */
int tu_shorten(int sanitized, const char *test, const char *what);

/* --- fixtures (they fail the running Check test) ------------------------- */

/* The seeds' LeNet pipeline over an MNIST folder's split: label to int32,
 * resize 32x32 bilinear (resize 0 leaves 28x28 images, a wrong shape on
 * purpose), rescale 1/255, rescale 1/0.3081 shift -0.1307/0.3081, HWC2CHW;
 * the train split shuffled (sampler and a 10000 buffer) with seed; batch 32
 * (drop_remainder as given); num_samples of the split (0: all). The caller
 * frees it. */
sl_dataset *tu_lenet_pipeline(const char *dir, sl_mnist_usage usage, int workers, uint64_t seed,
                              int resize, int drop_remainder, int64_t num_samples);
/* A new dataset reading the ImageFolder dir, decoded to RGB by workers
 * decode workers (the sampler's default order). The caller frees it. */
sl_dataset *tu_image_folder_decoded(const char *dir, int workers);
/* The same with another batch size. */
sl_dataset *tu_lenet_pipeline_batch(const char *dir, sl_mnist_usage usage, int workers,
                                    uint64_t seed, int resize, int drop_remainder,
                                    int64_t num_samples, int64_t batch);
/* Asserts that a and b hold the same parameters, bit for bit (as many, each
 * as long), naming the first parameter that differs and `what`. */
void tu_assert_same_params(sl_model *a, sl_model *b, const char *what);
/* An op's infer that passes its input's spec through, for test ops that
 * hand their input on. */
int tu_infer_identity(const sl_op *op, const sl_tensor_spec *in, sl_tensor_spec *out,
                      sl__error *err);

#endif
