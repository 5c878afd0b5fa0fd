/* testutil.h: helpers the Check suites share: temporary folders, small
 * generated MNIST (IDX) files and JPEGs, and known pixel patterns. Every
 * function returns 0 on success and -1 on failure unless it says otherwise. */
#ifndef SLUICE_TESTUTIL_H
#define SLUICE_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/dataset.h"
#include "sluice/status.h"

/* A fresh temporary directory under $TMPDIR (or /tmp); malloc'd path. */
char *tu_mkdtemp(void);
/* Removes path and everything under it (like rm -rf); ignores errors. */
void tu_rmtree(const char *path);
/* dir + "/" + name, malloc'd. */
char *tu_path(const char *dir, const char *name);

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

#endif
