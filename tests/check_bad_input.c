/* check_bad_input.c: bad input gets a clear error, never a crash, a leak or
 * a hang. Broken MNIST (IDX) files, plain and gzip; broken ImageFolders and
 * JPEGs; out-of-range sampler and node arguments; operators given the wrong
 * shape, refused when the pipeline is described or when it runs. Every
 * message must name the file (and the sample, where there is one). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* mkdir */
#endif

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "sluice/sluice.h"
#include "tests/testutil.h"

#define IT_TIMEOUT_MS 60000 /* a hang becomes SL_ETIMEDOUT, not a stuck test */

/* --- fixture ----------------------------------------------------------- */

static char *tmp; /* a fresh folder per test */

static void setup_tmp(void)
{
    tmp = tu_mkdtemp();
    ck_assert_msg(tmp != NULL, "tu_mkdtemp failed");
}

static void teardown_tmp(void)
{
    tu_rmtree(tmp);
    free(tmp);
    tmp = NULL;
}

/* --- helpers ----------------------------------------------------------- */

/* tmp/name, created as a folder; malloc'd. */
static char *make_dir(const char *parent, const char *name)
{
    char *p = tu_path(parent, name);
    ck_assert_ptr_nonnull(p);
    ck_assert_msg(mkdir(p, 0777) == 0 || errno == EEXIST, "mkdir %s: %s", p, strerror(errno));
    return p;
}

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* Writes dir/name (plain or gzip); returns the malloc'd path. */
static char *write_file(const char *dir, const char *name, const void *data, size_t n, int gz)
{
    char *p = tu_path(dir, name);
    ck_assert_ptr_nonnull(p);
    ck_assert_msg(tu_write_bytes(p, data, n, gz) == 0, "cannot write %s", p);
    return p;
}

/* An IDX image file: header (magic, n, h, w) then `pixels` bytes of data
 * (which may disagree with the header). */
static char *write_idx3(const char *dir, const char *name, uint32_t magic, uint32_t n,
                        uint32_t h, uint32_t w, size_t pixels, int gz)
{
    unsigned char *buf = calloc(1, 16 + pixels);
    char *p;
    ck_assert_ptr_nonnull(buf);
    put_be32(buf, magic);
    put_be32(buf + 4, n);
    put_be32(buf + 8, h);
    put_be32(buf + 12, w);
    for (size_t i = 0; i < pixels; i++)
        buf[16 + i] = (unsigned char)(i * 7u);
    p = write_file(dir, name, buf, 16 + pixels, gz);
    free(buf);
    return p;
}

/* An IDX label file: header (magic, n) then `count` label bytes. */
static char *write_idx1(const char *dir, const char *name, uint32_t magic, uint32_t n,
                        size_t count, int gz)
{
    unsigned char *buf = calloc(1, 8 + count);
    char *p;
    ck_assert_ptr_nonnull(buf);
    put_be32(buf, magic);
    put_be32(buf + 4, n);
    for (size_t i = 0; i < count; i++)
        buf[8 + i] = (unsigned char)(i % 10u);
    p = write_file(dir, name, buf, 8 + count, gz);
    free(buf);
    return p;
}

#define TRAIN_IMAGES "train-images-idx3-ubyte"
#define TRAIN_LABELS "train-labels-idx1-ubyte"

static void assert_contains(const char *msg, const char *needle)
{
    ck_assert_ptr_nonnull(msg);
    ck_assert_ptr_nonnull(needle);
    ck_assert_msg(strstr(msg, needle) != NULL, "message \"%s\" does not contain \"%s\"", msg,
                  needle);
}

/* Sets an MNIST train source on a new dataset; returns the dataset and the
 * status in *rc (the dataset is returned even on failure, for its message). */
static sl_dataset *mnist_train(const char *dir, int shuffle, int *rc)
{
    sl_dataset *ds;
    sl_mnist_options o;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_mnist_options_init(&o);
    o.dataset_dir = dir;
    o.usage = SL_MNIST_TRAIN;
    o.sampler.shuffle = shuffle;
    *rc = sl_dataset_mnist(ds, &o);
    return ds;
}

static sl_dataset *image_folder(const char *dir, int decode, int workers, int *rc)
{
    sl_dataset *ds;
    sl_image_folder_options o;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    sl_image_folder_options_init(&o);
    o.dataset_dir = dir;
    o.decode = decode;
    o.num_parallel_workers = workers;
    o.sampler.shuffle = 0;
    *rc = sl_dataset_image_folder(ds, &o);
    return ds;
}

/* What running a dataset to its end gave. */
typedef struct run_result {
    int status;            /* SL_END_OF_DATA or the (negative) error */
    int64_t good_rows;     /* rows handed out before it */
    int32_t labels[64];    /* their int32/uint32 label column (column 1), if any */
    char msg[1024];        /* sl_iterator_last_error() at the error */
} run_result;

/* Iterates ds until the end of data or an error. On an error, checks that
 * two more calls return the same status and message (errors are sticky). */
static void run_dataset(sl_dataset *ds, const sl_iterator_options *opts, run_result *res)
{
    sl_iterator_options o;
    sl_iterator *it = NULL;
    int rc;
    memset(res, 0, sizeof *res);
    if (opts)
        o = *opts;
    else
        sl_iterator_options_init(&o);
    o.timeout_ms = IT_TIMEOUT_MS;
    rc = sl_iterator_new(&it, ds, &o);
    ck_assert_msg(rc == SL_OK, "sl_iterator_new: %s (%s)", sl_status_name(rc),
                  sl_dataset_last_error(ds));
    for (;;) {
        sl_row row;
        rc = sl_iterator_next(it, &row);
        if (rc == SL_OK) {
            if (res->good_rows < 64 && row.ncolumns > 1 && sl_tensor_ndim(row.columns[1]) == 0 &&
                sl_tensor_nbytes(row.columns[1]) == 4)
                memcpy(&res->labels[res->good_rows], sl_tensor_data(row.columns[1]), 4);
            res->good_rows++;
            sl_row_clear(&row);
            continue;
        }
        ck_assert_uint_eq(row.ncolumns, 0);
        if (rc == SL_END_OF_EPOCH)
            continue;
        break;
    }
    res->status = rc;
    if (rc < 0) {
        snprintf(res->msg, sizeof res->msg, "%s", sl_iterator_last_error(it));
        ck_assert_msg(res->msg[0] != '\0', "an error (%s) without a message", sl_status_name(rc));
        for (int again = 0; again < 2; again++) {
            sl_row row;
            int rc2 = sl_iterator_next(it, &row);
            ck_assert_int_eq(rc2, rc);
            ck_assert_uint_eq(row.ncolumns, 0);
            ck_assert_str_eq(sl_iterator_last_error(it), res->msg);
        }
    }
    sl_iterator_free(it);
}

/* Expects ds to fail while iterating with status `want` (any error if 0),
 * with a message containing `needle`. */
static void expect_run_error(sl_dataset *ds, int want, const char *needle, run_result *res)
{
    run_dataset(ds, NULL, res);
    ck_assert_msg(res->status < 0, "expected an error, got %s after %lld rows",
                  sl_status_name(res->status), (long long)res->good_rows);
    if (want != 0)
        ck_assert_msg(res->status == want, "expected %s, got %s: %s", sl_status_name(want),
                      sl_status_name(res->status), res->msg);
    assert_contains(res->msg, needle);
}

/* A valid MNIST train split (n samples, plain or gz) in tmp/name. */
static char *valid_mnist(const char *name, uint32_t n, int gz)
{
    char *dir = tu_path(tmp, name);
    ck_assert_ptr_nonnull(dir);
    ck_assert_int_eq(tu_make_mnist(dir, n, 1, gz), 0);
    return dir;
}

/* --- MNIST: missing and malformed files --------------------------------- */

START_TEST(test_mnist_missing_files)
{
    char *dir = make_dir(tmp, "empty");
    char *images;
    int rc;
    sl_dataset *ds = mnist_train(dir, 0, &rc);
    ck_assert_int_eq(rc, SL_EIO);
    assert_contains(sl_dataset_last_error(ds), dir);
    assert_contains(sl_dataset_last_error(ds), TRAIN_IMAGES);
    /* A dataset whose source could not be set cannot run. */
    {
        static char dummy;
        sl_iterator *it = (sl_iterator *)(void *)&dummy; /* must be reset to NULL */
        ck_assert_int_eq(sl_iterator_new(&it, ds, NULL), SL_ESTATE);
        ck_assert_ptr_null(it);
    }
    sl_dataset_free(ds);

    /* Images present, labels missing: the labels file is named. */
    images = write_idx3(dir, TRAIN_IMAGES, 0x803, 2, 28, 28, 2 * 784, 0);
    ds = mnist_train(dir, 0, &rc);
    ck_assert_int_eq(rc, SL_EIO);
    assert_contains(sl_dataset_last_error(ds), dir);
    assert_contains(sl_dataset_last_error(ds), TRAIN_LABELS);
    sl_dataset_free(ds);
    free(images);
    free(dir);
}
END_TEST

START_TEST(test_mnist_missing_dir)
{
    char *dir = tu_path(tmp, "no-such-folder");
    int rc;
    sl_dataset *ds = mnist_train(dir, 0, &rc);
    ck_assert_int_eq(rc, SL_EIO);
    assert_contains(sl_dataset_last_error(ds), dir);
    sl_dataset_free(ds);
    free(dir);
}
END_TEST

START_TEST(test_mnist_wrong_magic)
{
    static const uint32_t bad_images[] = {0x00000801u, 0x00000903u, 0x08030000u, 0x00000c03u};
    for (size_t k = 0; k < sizeof bad_images / sizeof bad_images[0]; k++) {
        char name[32], *dir, *images, *labels;
        int rc;
        sl_dataset *ds;
        snprintf(name, sizeof name, "m%zu", k);
        dir = make_dir(tmp, name);
        images = write_idx3(dir, TRAIN_IMAGES, bad_images[k], 2, 28, 28, 2 * 784, 0);
        labels = write_idx1(dir, TRAIN_LABELS, 0x801, 2, 2, 0);
        ds = mnist_train(dir, 0, &rc);
        ck_assert_int_eq(rc, SL_EFORMAT);
        assert_contains(sl_dataset_last_error(ds), images);
        assert_contains(sl_dataset_last_error(ds), "magic");
        sl_dataset_free(ds);
        free(images);
        free(labels);
        free(dir);
    }
    /* The labels file with an image file's magic. */
    {
        char *dir = make_dir(tmp, "labels");
        char *images = write_idx3(dir, TRAIN_IMAGES, 0x803, 2, 28, 28, 2 * 784, 0);
        char *labels = write_idx1(dir, TRAIN_LABELS, 0x803, 2, 2, 0);
        int rc;
        sl_dataset *ds = mnist_train(dir, 0, &rc);
        ck_assert_int_eq(rc, SL_EFORMAT);
        assert_contains(sl_dataset_last_error(ds), labels);
        assert_contains(sl_dataset_last_error(ds), "magic");
        sl_dataset_free(ds);
        free(images);
        free(labels);
        free(dir);
    }
}
END_TEST

START_TEST(test_mnist_truncated_header)
{
    /* Cut inside the magic and inside the dimensions, plain and gzip. */
    static const size_t cuts[] = {0, 2, 4, 7, 15};
    for (int gz = 0; gz <= 1; gz++) {
        for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
            unsigned char head[16];
            char name[32], *dir, *images, *labels;
            int rc;
            sl_dataset *ds;
            snprintf(name, sizeof name, "h%d-%zu", gz, k);
            dir = make_dir(tmp, name);
            put_be32(head, 0x803);
            put_be32(head + 4, 2);
            put_be32(head + 8, 28);
            put_be32(head + 12, 28);
            images = write_file(dir, gz ? TRAIN_IMAGES ".gz" : TRAIN_IMAGES, head, cuts[k], gz);
            labels = write_idx1(dir, TRAIN_LABELS, 0x801, 2, 2, 0);
            ds = mnist_train(dir, 0, &rc);
            ck_assert_msg(rc == SL_EFORMAT, "cut at %zu (gz %d): %s: %s", cuts[k], gz,
                          sl_status_name(rc), sl_dataset_last_error(ds));
            assert_contains(sl_dataset_last_error(ds), images);
            assert_contains(sl_dataset_last_error(ds), "truncated");
            sl_dataset_free(ds);
            free(images);
            free(labels);
            free(dir);
        }
    }
}
END_TEST

/* A plain file shorter than its header says is refused when the source is
 * set: its size is known without reading it. */
START_TEST(test_mnist_truncated_pixels_plain)
{
    char *dir = make_dir(tmp, "plain");
    char *images = write_idx3(dir, TRAIN_IMAGES, 0x803, 5, 28, 28, 3 * 784 + 100, 0);
    char *labels = write_idx1(dir, TRAIN_LABELS, 0x801, 5, 5, 0);
    int rc;
    sl_dataset *ds = mnist_train(dir, 0, &rc);
    ck_assert_int_eq(rc, SL_EFORMAT);
    assert_contains(sl_dataset_last_error(ds), images);
    assert_contains(sl_dataset_last_error(ds), "truncated");
    sl_dataset_free(ds);
    free(images);

    /* The same for a label file, and for trailing bytes. */
    images = write_idx3(dir, TRAIN_IMAGES, 0x803, 5, 28, 28, 5 * 784, 0);
    free(labels);
    labels = write_idx1(dir, TRAIN_LABELS, 0x801, 5, 3, 0);
    ds = mnist_train(dir, 0, &rc);
    ck_assert_int_eq(rc, SL_EFORMAT);
    assert_contains(sl_dataset_last_error(ds), labels);
    sl_dataset_free(ds);
    free(labels);
    labels = write_idx1(dir, TRAIN_LABELS, 0x801, 5, 9, 0);
    ds = mnist_train(dir, 0, &rc);
    ck_assert_int_eq(rc, SL_EFORMAT);
    assert_contains(sl_dataset_last_error(ds), labels);
    sl_dataset_free(ds);
    free(images);
    free(labels);
    free(dir);
}
END_TEST

/* A gzip file's real length is only known by inflating it: the source is
 * accepted and the iterator reports the truncation, naming the file. */
START_TEST(test_mnist_truncated_pixels_gz)
{
    char *dir = make_dir(tmp, "gz");
    char *images = write_idx3(dir, TRAIN_IMAGES ".gz", 0x803, 5, 28, 28, 3 * 784 + 100, 1);
    char *labels = write_idx1(dir, TRAIN_LABELS ".gz", 0x801, 5, 5, 1);
    run_result res;
    int rc;
    sl_dataset *ds = mnist_train(dir, 0, &rc);
    ck_assert_msg(rc == SL_OK, "%s", sl_dataset_last_error(ds));
    ck_assert_int_eq(tu_dataset_size(ds), 5);
    expect_run_error(ds, SL_EFORMAT, images, &res);
    assert_contains(res.msg, "truncated");
    ck_assert_int_eq(res.good_rows, 0);
    sl_dataset_free(ds);
    free(images);
    free(labels);

    /* More data than the header announces: refused as for plain files. */
    images = write_idx3(dir, TRAIN_IMAGES ".gz", 0x803, 5, 28, 28, 6 * 784, 1);
    labels = write_idx1(dir, TRAIN_LABELS ".gz", 0x801, 5, 5, 1);
    ds = mnist_train(dir, 0, &rc);
    ck_assert_msg(rc == SL_OK, "%s", sl_dataset_last_error(ds));
    expect_run_error(ds, SL_EFORMAT, images, &res);
    assert_contains(res.msg, "trailing");
    sl_dataset_free(ds);
    free(images);
    free(labels);

    /* Truncated labels in gzip. */
    images = write_idx3(dir, TRAIN_IMAGES ".gz", 0x803, 5, 28, 28, 5 * 784, 1);
    labels = write_idx1(dir, TRAIN_LABELS ".gz", 0x801, 5, 2, 1);
    ds = mnist_train(dir, 0, &rc);
    ck_assert_msg(rc == SL_OK, "%s", sl_dataset_last_error(ds));
    expect_run_error(ds, SL_EFORMAT, labels, &res);
    sl_dataset_free(ds);
    free(images);
    free(labels);
    free(dir);
}
END_TEST

START_TEST(test_mnist_count_mismatch)
{
    char *dir = make_dir(tmp, "mismatch");
    char *images = write_idx3(dir, TRAIN_IMAGES, 0x803, 5, 28, 28, 5 * 784, 0);
    char *labels = write_idx1(dir, TRAIN_LABELS, 0x801, 4, 4, 0);
    int rc;
    sl_dataset *ds = mnist_train(dir, 0, &rc);
    ck_assert_int_eq(rc, SL_EFORMAT);
    assert_contains(sl_dataset_last_error(ds), images);
    assert_contains(sl_dataset_last_error(ds), labels);
    assert_contains(sl_dataset_last_error(ds), "5");
    assert_contains(sl_dataset_last_error(ds), "4");
    sl_dataset_free(ds);
    free(images);
    free(labels);
    free(dir);
}
END_TEST

/* Rewrites path with data where `len` bytes at `at` are XORed with mask,
 * then expects an error naming path, at source time or while iterating;
 * never rows with wrong pixels. */
static void expect_corrupt_gz_refused(const char *dir, const char *path, const unsigned char *orig,
                                      size_t n, size_t at, size_t len, unsigned char mask)
{
    unsigned char *data = malloc(n);
    int rc;
    sl_dataset *ds;
    ck_assert_ptr_nonnull(data);
    memcpy(data, orig, n);
    for (size_t i = at; i < at + len && i < n; i++)
        data[i] ^= mask;
    ck_assert_int_eq(tu_write_bytes(path, data, n, 0), 0);
    free(data);
    ds = mnist_train(dir, 0, &rc);
    if (rc == SL_OK) {
        run_result res;
        run_dataset(ds, NULL, &res);
        ck_assert_msg(res.status == SL_EFORMAT,
                      "%zu bytes at %zu of %zu flipped with 0x%02x: %s after %lld rows (%s)", len,
                      at, n, mask, sl_status_name(res.status), (long long)res.good_rows, res.msg);
        assert_contains(res.msg, path);
        ck_assert_int_eq(res.good_rows, 0);
    } else {
        ck_assert_int_eq(rc, SL_EFORMAT);
        assert_contains(sl_dataset_last_error(ds), path);
    }
    sl_dataset_free(ds);
}

/* Flips bytes in the compressed stream: a wrong Huffman code, a bad
 * distance, a wrong length, or only a CRC mismatch (zlib checks the CRC
 * when it reaches the gzip trailer, so the reader must read on to it). */
START_TEST(test_mnist_corrupt_gzip)
{
    static const double where[] = {0.3, 0.5, 0.7};
    static const unsigned char masks[] = {0xff, 0x01, 0x10};
    char *dir = valid_mnist("c", 300, 1);
    char *images = tu_path(dir, TRAIN_IMAGES ".gz");
    unsigned char *orig;
    size_t n;
    ck_assert_int_eq(tu_read_file(images, (void **)&orig, &n), 0);
    ck_assert_uint_gt(n, 100);
    /* A few bytes in the middle. */
    for (size_t k = 0; k < sizeof where / sizeof where[0]; k++)
        for (size_t m = 0; m < sizeof masks / sizeof masks[0]; m++)
            expect_corrupt_gz_refused(dir, images, orig, n, (size_t)((double)n * where[k]), 4,
                                      masks[m]);
    /* Every bit of the end of the stream: the last deflate bytes (decoded
     * after or along with the last pixels), the CRC and the length. */
    for (size_t at = n - 24; at < n; at++)
        for (int bit = 0; bit < 8; bit++)
            expect_corrupt_gz_refused(dir, images, orig, n, at, 1, (unsigned char)(1u << bit));
    free(orig);
    free(images);
    free(dir);
}
END_TEST

/* A valid .gz (images, then labels) cut in half, or cut inside its end:
 * the header is readable, the data or the trailer is missing. */
START_TEST(test_mnist_truncated_gzip)
{
    static const char *const names[] = {TRAIN_IMAGES ".gz", TRAIN_LABELS ".gz"};
    static const size_t cut_from_end[] = {0 /* half */, 4, 8, 12};
    for (int k = 0; k < 2; k++) {
        for (size_t c = 0; c < sizeof cut_from_end / sizeof cut_from_end[0]; c++) {
            char name[32], *dir, *path;
            unsigned char *data;
            size_t n;
            int rc;
            sl_dataset *ds;
            run_result res;
            snprintf(name, sizeof name, "t%d-%zu", k, c);
            dir = valid_mnist(name, 3000, 1);
            path = tu_path(dir, names[k]);
            ck_assert_int_eq(tu_read_file(path, (void **)&data, &n), 0);
            ck_assert_uint_gt(n, 40);
            ck_assert_int_eq(tu_write_bytes(path, data, c == 0 ? n / 2 : n - cut_from_end[c], 0),
                             0);
            free(data);
            ds = mnist_train(dir, 0, &rc);
            if (rc != SL_OK) {
                /* Cut so short that not even the header inflates. */
                ck_assert_int_eq(rc, SL_EFORMAT);
                assert_contains(sl_dataset_last_error(ds), path);
                ck_assert_msg(k == 1 && c == 0, "%s cut to %zu bytes refused at source time: %s",
                              names[k], c == 0 ? n / 2 : n - cut_from_end[c],
                              sl_dataset_last_error(ds));
                sl_dataset_free(ds);
                free(path);
                free(dir);
                continue;
            }
            run_dataset(ds, NULL, &res);
            ck_assert_msg(res.status == SL_EFORMAT, "%s cut to %zu of %zu bytes: %s (%s)", names[k],
                          c == 0 ? n / 2 : n - cut_from_end[c], n, sl_status_name(res.status),
                          res.msg);
            assert_contains(res.msg, path);
            ck_assert_int_eq(res.good_rows, 0);
            sl_dataset_free(ds);
            free(path);
            free(dir);
        }
    }
}
END_TEST

/* A .gz cut exactly at the end of its deflate data, its whole 8-byte
 * trailer (CRC and length) gone, is refused; the same file whole loads.
 * zlib reports the end of such a file without an error once it has read
 * all of it and inflated the data straight into the caller's buffer, so
 * the reader must ask for more than the data to make zlib look for the
 * trailer. 300 images of 28x28 are read that way with zlib's 8 KiB
 * buffer, 2200 (1.6 MiB) even with a 256 KiB one, as Fashion-MNIST's
 * train-images-idx3-ubyte.gz is: cut so, they used to load. */
START_TEST(test_mnist_gzip_without_trailer)
{
    static const uint32_t sizes[][3] = {{5, 1, 1}, {300, 28, 28}, {2200, 28, 28}}; /* n, h, w */
    static const char *const names[] = {TRAIN_IMAGES ".gz", TRAIN_LABELS ".gz"};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        for (int f = 0; f < 2; f++) {
            char name[32];
            char *dir, *images, *labels, *path;
            unsigned char *data;
            size_t n;
            int rc;
            sl_dataset *ds;
            run_result res;
            snprintf(name, sizeof name, "nt%zu-%d", k, f);
            dir = make_dir(tmp, name);
            images = write_idx3(dir, names[0], 0x803, sizes[k][0], sizes[k][1], sizes[k][2],
                                (size_t)sizes[k][0] * sizes[k][1] * sizes[k][2], 1);
            labels = write_idx1(dir, names[1], 0x801, sizes[k][0], sizes[k][0], 1);
            /* Whole, it loads. */
            ds = mnist_train(dir, 0, &rc);
            ck_assert_msg(rc == SL_OK, "%s", sl_dataset_last_error(ds));
            run_dataset(ds, NULL, &res);
            ck_assert_msg(res.status == SL_END_OF_DATA, "%u samples whole: %s (%s)", sizes[k][0],
                          sl_status_name(res.status), res.msg);
            ck_assert_int_eq(res.good_rows, sizes[k][0]);
            sl_dataset_free(ds);
            /* Without its trailer, it is refused, naming the file. */
            path = f == 0 ? images : labels;
            ck_assert_int_eq(tu_read_file(path, (void **)&data, &n), 0);
            ck_assert_uint_gt(n, 18 + 8);
            ck_assert_int_eq(tu_write_bytes(path, data, n - 8, 0), 0);
            free(data);
            ds = mnist_train(dir, 0, &rc);
            ck_assert_msg(rc == SL_OK, "%s", sl_dataset_last_error(ds));
            run_dataset(ds, NULL, &res);
            ck_assert_msg(res.status == SL_EFORMAT, "%s of %u samples without its trailer: %s "
                          "after %lld rows (%s)", names[f], sizes[k][0],
                          sl_status_name(res.status), (long long)res.good_rows, res.msg);
            assert_contains(res.msg, path);
            ck_assert_int_eq(res.good_rows, 0);
            sl_dataset_free(ds);
            free(images);
            free(labels);
            free(dir);
        }
    }
}
END_TEST

/* Dimensions whose product overflows 64 bits. */
START_TEST(test_mnist_overflowing_dims)
{
    for (int gz = 0; gz <= 1; gz++) {
        char name[32], *dir, *images, *labels;
        int rc;
        sl_dataset *ds;
        snprintf(name, sizeof name, "o%d", gz);
        dir = make_dir(tmp, name);
        images = write_idx3(dir, gz ? TRAIN_IMAGES ".gz" : TRAIN_IMAGES, 0x803, 0xFFFFFFFFu,
                            0xFFFFFFFFu, 0xFFFFFFFFu, 64, gz);
        labels = write_idx1(dir, gz ? TRAIN_LABELS ".gz" : TRAIN_LABELS, 0x801, 0xFFFFFFFFu, 64,
                            gz);
        ds = mnist_train(dir, 0, &rc);
        ck_assert_msg(rc == SL_EFORMAT, "gz %d: %s: %s", gz, sl_status_name(rc),
                      sl_dataset_last_error(ds));
        assert_contains(sl_dataset_last_error(ds), images);
        sl_dataset_free(ds);
        free(images);
        free(labels);
        free(dir);
    }
}
END_TEST

/* Huge dimensions that do not overflow, in gzip files (whose data length is
 * not known from the file size): an error with a message, never an attempt
 * to allocate terabytes (which would abort under AddressSanitizer or end in
 * the OOM killer). */
START_TEST(test_mnist_huge_dims_gz)
{
    static const uint32_t counts[] = {0xFFFFFFFFu, 50000000u, 2000000u};
    static const uint32_t sides[][2] = {{28, 28}, {28, 28}, {16384, 16384}};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        char name[32], *dir, *images, *labels;
        int rc;
        sl_dataset *ds;
        snprintf(name, sizeof name, "g%zu", k);
        dir = make_dir(tmp, name);
        images = write_idx3(dir, TRAIN_IMAGES ".gz", 0x803, counts[k], sides[k][0], sides[k][1],
                            4096, 1);
        labels = write_idx1(dir, TRAIN_LABELS ".gz", 0x801, counts[k], 4096, 1);
        ds = mnist_train(dir, 0, &rc);
        if (rc == SL_OK) {
            run_result res;
            expect_run_error(ds, 0, images, &res);
            ck_assert_int_eq(res.good_rows, 0);
        } else {
            ck_assert_msg(rc == SL_EFORMAT, "%s: %s", sl_status_name(rc),
                          sl_dataset_last_error(ds));
            assert_contains(sl_dataset_last_error(ds), images);
        }
        sl_dataset_free(ds);
        free(images);
        free(labels);
        free(dir);
    }
}
END_TEST

START_TEST(test_mnist_zero_samples)
{
    for (int gz = 0; gz <= 1; gz++) {
        char name[32], *dir, *images, *labels;
        int rc;
        sl_dataset *ds;
        snprintf(name, sizeof name, "z%d", gz);
        dir = make_dir(tmp, name);
        images = write_idx3(dir, gz ? TRAIN_IMAGES ".gz" : TRAIN_IMAGES, 0x803, 0, 28, 28, 0, gz);
        labels = write_idx1(dir, gz ? TRAIN_LABELS ".gz" : TRAIN_LABELS, 0x801, 0, 0, gz);
        ds = mnist_train(dir, 0, &rc);
        ck_assert_msg(rc == SL_EFORMAT, "%s: %s", sl_status_name(rc), sl_dataset_last_error(ds));
        assert_contains(sl_dataset_last_error(ds), images);
        assert_contains(sl_dataset_last_error(ds), "no samples");
        sl_dataset_free(ds);
        free(images);
        free(labels);
        free(dir);
    }
}
END_TEST

START_TEST(test_mnist_zero_side)
{
    char *dir = make_dir(tmp, "side");
    char *images = write_idx3(dir, TRAIN_IMAGES, 0x803, 2, 0, 28, 0, 0);
    char *labels = write_idx1(dir, TRAIN_LABELS, 0x801, 2, 2, 0);
    int rc;
    sl_dataset *ds = mnist_train(dir, 0, &rc);
    ck_assert_int_eq(rc, SL_EFORMAT);
    assert_contains(sl_dataset_last_error(ds), images);
    sl_dataset_free(ds);
    free(images);
    free(labels);
    free(dir);
}
END_TEST

/* --- ImageFolder ------------------------------------------------------- */

/* dir/class/name: a w x h JPEG of pattern seed. */
static char *write_jpeg_in(const char *dir, const char *cls, const char *name, int w, int h,
                           uint32_t seed)
{
    char *cdir = make_dir(dir, cls);
    char *path = tu_path(cdir, name);
    uint8_t *px = malloc((size_t)w * (size_t)h * 3);
    ck_assert_ptr_nonnull(path);
    ck_assert_ptr_nonnull(px);
    tu_fill_image(px, w, h, 3, seed);
    ck_assert_int_eq(tu_write_jpeg(path, px, w, h, 3, 90), 0);
    free(px);
    free(cdir);
    return path;
}

START_TEST(test_if_empty_class_folder)
{
    char *root = make_dir(tmp, "if");
    char *good = write_jpeg_in(root, "a_good", "x.jpg", 16, 16, 1);
    char *empty = make_dir(root, "b_empty");
    int rc;
    sl_dataset *ds = image_folder(root, 0, 2, &rc);
    ck_assert_int_eq(rc, SL_EFORMAT);
    assert_contains(sl_dataset_last_error(ds), empty);
    sl_dataset_free(ds);

    /* A folder whose only files have other extensions counts as empty. */
    {
        sl_image_folder_options o;
        static const char *const exts[] = {".png", NULL};
        rmdir(empty);
        ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
        sl_image_folder_options_init(&o);
        o.dataset_dir = root;
        o.extensions = exts;
        rc = sl_dataset_image_folder(ds, &o);
        ck_assert_int_eq(rc, SL_EFORMAT);
        assert_contains(sl_dataset_last_error(ds), "a_good");
        sl_dataset_free(ds);
    }
    free(good);
    free(empty);
    free(root);
}
END_TEST

START_TEST(test_if_no_class_folders)
{
    char *root = make_dir(tmp, "noclass");
    char *missing = tu_path(tmp, "missing");
    int rc;
    sl_dataset *ds = image_folder(root, 0, 2, &rc);
    ck_assert_int_eq(rc, SL_EFORMAT);
    assert_contains(sl_dataset_last_error(ds), root);
    sl_dataset_free(ds);
    ds = image_folder(missing, 0, 2, &rc);
    ck_assert_int_eq(rc, SL_EIO);
    assert_contains(sl_dataset_last_error(ds), missing);
    sl_dataset_free(ds);
    free(missing);
    free(root);
}
END_TEST

START_TEST(test_if_not_a_jpeg)
{
    static const char text[] = "this is not a JPEG, only text in a file named .jpg\n";
    char *root = make_dir(tmp, "if");
    char *good = write_jpeg_in(root, "a", "x.jpg", 16, 12, 1);
    char *cdir = make_dir(root, "b");
    char *bad = write_file(cdir, "fake.jpg", text, sizeof text - 1, 0);
    run_result res;
    int rc;
    sl_dataset *ds = image_folder(root, 1, 2, &rc);
    ck_assert_msg(rc == SL_OK, "%s", sl_dataset_last_error(ds));
    expect_run_error(ds, SL_EFORMAT, bad, &res);
    assert_contains(res.msg, "JPEG");
    sl_dataset_free(ds);

    /* An empty file and a 3-byte file named .jpg. */
    ck_assert_int_eq(tu_write_bytes(bad, "", 0, 0), 0);
    ds = image_folder(root, 1, 1, &rc);
    ck_assert_int_eq(rc, SL_OK);
    expect_run_error(ds, SL_EFORMAT, bad, &res);
    sl_dataset_free(ds);
    ck_assert_int_eq(tu_write_bytes(bad, "\xff\xd8\xff", 3, 0), 0);
    ds = image_folder(root, 1, 1, &rc);
    ck_assert_int_eq(rc, SL_OK);
    expect_run_error(ds, SL_EFORMAT, bad, &res);
    sl_dataset_free(ds);

    /* Without decode the bytes are only bytes: no error. */
    ds = image_folder(root, 0, 1, &rc);
    ck_assert_int_eq(rc, SL_OK);
    run_dataset(ds, NULL, &res);
    ck_assert_int_eq(res.status, SL_END_OF_DATA);
    ck_assert_int_eq(res.good_rows, 2);
    sl_dataset_free(ds);
    free(bad);
    free(cdir);
    free(good);
    free(root);
}
END_TEST

/* Offset just after the first SOS segment header (the entropy-coded data
 * starts there). */
static size_t scan_start(const uint8_t *buf, size_t n)
{
    for (size_t i = 2; i + 3 < n; i++)
        if (buf[i] == 0xFF && buf[i + 1] == 0xDA)
            return i + 2 + (((size_t)buf[i + 2] << 8) | buf[i + 3]);
    return 0;
}

START_TEST(test_if_jpeg_cut_mid_scan)
{
    char *root = make_dir(tmp, "if");
    char *good = write_jpeg_in(root, "a", "x.jpg", 24, 24, 2);
    char *cdir = make_dir(root, "b");
    char *cut = tu_path(cdir, "cut.jpg");
    uint8_t *px = malloc(96 * 80 * 3), *jpg;
    size_t n, sos;
    run_result res;
    int rc;
    sl_dataset *ds;
    ck_assert_ptr_nonnull(px);
    tu_fill_image(px, 96, 80, 3, 7);
    ck_assert_int_eq(tu_encode_jpeg(&jpg, &n, px, 96, 80, 3, 90), 0);
    sos = scan_start(jpg, n);
    ck_assert_uint_gt(sos, 0);
    ck_assert_uint_lt(sos + 16, n);
    ck_assert_int_eq(tu_write_bytes(cut, jpg, sos + (n - sos) / 2, 0), 0);
    ds = image_folder(root, 1, 2, &rc);
    ck_assert_msg(rc == SL_OK, "%s", sl_dataset_last_error(ds));
    expect_run_error(ds, SL_EFORMAT, cut, &res);
    assert_contains(res.msg, "JPEG");
    sl_dataset_free(ds);
    free(jpg);
    free(px);
    free(cut);
    free(cdir);
    free(good);
    free(root);
}
END_TEST

/* Ten good JPEGs then a bad one (sorted last), no shuffle: the ten rows come
 * out first, in order, then the error. Whatever the worker count and chunk
 * size, nothing decoded before the bad file is dropped; the same through a
 * sequential node after the map (take), and through a batch of 2 (five
 * whole batches, then the error). */
START_TEST(test_if_error_after_good_rows)
{
    static const size_t chunk_rows[] = {64, 1, 4};
    static const char *const tails[] = {"none", "take", "batch"};
    static const int64_t expect_rows[] = {10, 10, 5};
    char *root = make_dir(tmp, "if");
    char *cdir = make_dir(root, "class_0");
    char *bad = write_file(cdir, "zz_bad.jpg", "garbage!", 8, 0);
    for (int j = 0; j < 10; j++) {
        char name[32];
        snprintf(name, sizeof name, "img_%02d.jpg", j);
        free(write_jpeg_in(root, "class_0", name, 20, 16, (uint32_t)j));
    }
    for (int tail = 0; tail < 3; tail++) {
        for (int workers = 1; workers <= 3; workers++) {
            for (size_t c = 0; c < sizeof chunk_rows / sizeof chunk_rows[0]; c++) {
                sl_iterator_options o;
                run_result res;
                int rc;
                sl_dataset *ds = image_folder(root, 1, workers, &rc);
                ck_assert_msg(rc == SL_OK, "%s", sl_dataset_last_error(ds));
                ck_assert_int_eq(tu_dataset_size(ds), 11);
                if (tail == 1)
                    ck_assert_int_eq(sl_dataset_take(ds, 100), SL_OK);
                else if (tail == 2)
                    ck_assert_int_eq(sl_dataset_batch(ds, 2, 0, 1), SL_OK);
                sl_iterator_options_init(&o);
                o.chunk_rows = chunk_rows[c];
                run_dataset(ds, &o, &res);
                ck_assert_msg(res.status == SL_EFORMAT, "%s, workers %d, chunk_rows %zu: %s (%s)",
                              tails[tail], workers, chunk_rows[c], sl_status_name(res.status),
                              res.msg);
                ck_assert_msg(res.good_rows == expect_rows[tail],
                              "%s, workers %d, chunk_rows %zu: %lld good rows before the error, "
                              "not %lld",
                              tails[tail], workers, chunk_rows[c], (long long)res.good_rows,
                              (long long)expect_rows[tail]);
                assert_contains(res.msg, bad);
                sl_dataset_free(ds);
            }
        }
    }
    free(bad);
    free(cdir);
    free(root);
}
END_TEST

/* Decoded images of different sizes cannot share a batch: the message names
 * the batch and both shapes. */
START_TEST(test_if_batch_shape_mismatch)
{
    char *root = make_dir(tmp, "if");
    char *a = write_jpeg_in(root, "c", "a.jpg", 32, 24, 1);
    char *b = write_jpeg_in(root, "c", "b.jpg", 40, 24, 2);
    for (int workers = 1; workers <= 2; workers++) {
        run_result res;
        int rc;
        sl_dataset *ds = image_folder(root, 1, 2, &rc);
        ck_assert_int_eq(rc, SL_OK);
        ck_assert_int_eq(sl_dataset_batch(ds, 2, 0, workers), SL_OK);
        expect_run_error(ds, SL_ESHAPE, "batch 0", &res);
        assert_contains(res.msg, "(24, 32, 3)");
        assert_contains(res.msg, "(24, 40, 3)");
        assert_contains(res.msg, "image");
        ck_assert_int_eq(res.good_rows, 0);
        sl_dataset_free(ds);
    }
    free(a);
    free(b);
    free(root);
}
END_TEST

/* --- arguments ----------------------------------------------------------- */

START_TEST(test_bad_shards)
{
    static const int64_t shards[][2] = {{0, 0}, {-1, 0}, {3, 3}, {3, 7}, {3, -1}, {20, 0}};
    char *dir = valid_mnist("m", 10, 0);
    for (size_t k = 0; k < sizeof shards / sizeof shards[0]; k++) {
        sl_dataset *ds;
        sl_mnist_options o;
        int64_t size;
        int rc;
        ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
        sl_mnist_options_init(&o);
        o.dataset_dir = dir;
        o.usage = SL_MNIST_TRAIN;
        o.sampler.num_shards = shards[k][0];
        o.sampler.shard_id = shards[k][1];
        rc = sl_dataset_mnist(ds, &o);
        ck_assert_msg(rc == SL_EINVAL, "num_shards %lld shard_id %lld: %s",
                      (long long)shards[k][0], (long long)shards[k][1], sl_status_name(rc));
        assert_contains(sl_dataset_last_error(ds), dir);
        assert_contains(sl_dataset_last_error(ds), k < 2 || k == 5 ? "num_shards" : "shard_id");
        ck_assert_int_eq(sl_dataset_get_dataset_size(ds, &size), SL_ESTATE);
        ck_assert_int_eq(size, 0);
        sl_dataset_free(ds);
    }
    /* The same checks for ImageFolder. */
    {
        char *root = tu_path(tmp, "if");
        sl_dataset *ds;
        sl_image_folder_options o;
        ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
        ck_assert_int_eq(tu_make_image_folder(root, 2, 2, 8, 8), 0);
        sl_image_folder_options_init(&o);
        o.dataset_dir = root;
        o.sampler.num_shards = 2;
        o.sampler.shard_id = 2;
        ck_assert_int_eq(sl_dataset_image_folder(ds, &o), SL_EINVAL);
        assert_contains(sl_dataset_last_error(ds), "shard_id");
        assert_contains(sl_dataset_last_error(ds), root);
        o.sampler.num_shards = 0;
        o.sampler.shard_id = 0;
        ck_assert_int_eq(sl_dataset_image_folder(ds, &o), SL_EINVAL);
        assert_contains(sl_dataset_last_error(ds), "num_shards");
        sl_dataset_free(ds);
        free(root);
    }
    free(dir);
}
END_TEST

START_TEST(test_bad_node_args)
{
    char *dir = valid_mnist("m", 10, 0);
    int rc;
    sl_dataset *ds = mnist_train(dir, 0, &rc);
    ck_assert_int_eq(rc, SL_OK);
    ck_assert_int_eq(sl_dataset_batch(ds, 0, 0, 1), SL_EINVAL);
    assert_contains(sl_dataset_last_error(ds), "batch_size");
    ck_assert_int_eq(sl_dataset_batch(ds, -3, 1, 1), SL_EINVAL);
    assert_contains(sl_dataset_last_error(ds), "batch_size");
    ck_assert_int_eq(sl_dataset_shuffle(ds, 0), SL_EINVAL);
    assert_contains(sl_dataset_last_error(ds), "buffer_size");
    ck_assert_int_eq(sl_dataset_shuffle(ds, -5), SL_EINVAL);
    ck_assert_int_eq(sl_dataset_repeat(ds, 0), SL_EINVAL);
    assert_contains(sl_dataset_last_error(ds), "repeat");
    ck_assert_int_eq(sl_dataset_repeat(ds, -2), SL_EINVAL);
    /* The refused nodes were not appended: the dataset still runs as is. */
    ck_assert_int_eq(tu_dataset_size(ds), 10);
    {
        run_result res;
        run_dataset(ds, NULL, &res);
        ck_assert_int_eq(res.status, SL_END_OF_DATA);
        ck_assert_int_eq(res.good_rows, 10);
    }
    sl_dataset_free(ds);
    free(dir);
}
END_TEST

/* --- operators on the wrong input ---------------------------------------- */

START_TEST(test_map_wrong_shape_at_description)
{
    char *dir = valid_mnist("m", 10, 0);
    sl_op *op;
    int rc;
    sl_dataset *ds = mnist_train(dir, 0, &rc);
    ck_assert_int_eq(rc, SL_OK);
    ck_assert_int_eq(sl_op_hwc2chw_new(&op, NULL, 0), SL_OK);
    rc = sl_dataset_map(ds, &op, 1, "label", NULL, 1);
    ck_assert_int_eq(rc, SL_ESHAPE);
    assert_contains(sl_dataset_last_error(ds), "hwc2chw");
    assert_contains(sl_dataset_last_error(ds), "label");
    assert_contains(sl_dataset_last_error(ds), "uint32 ()");
    /* Refused, so nothing was appended and the columns are unchanged. */
    {
        sl_tensor_spec spec;
        ck_assert_int_eq(sl_dataset_column_spec(ds, 1, &spec), SL_OK);
        ck_assert_int_eq(spec.ndim, 0);
        ck_assert_int_eq(spec.dtype, SL_UINT32);
    }
    /* The same op on the image is fine. */
    ck_assert_int_eq(sl_dataset_map(ds, &op, 1, "image", NULL, 1), SL_OK);
    /* Decode wants 1-D bytes, not a (28, 28, 1) image... now (1, 28, 28). */
    sl_op_release(op);
    ck_assert_int_eq(sl_op_decode_new(&op, 1, NULL, 0), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &op, 1, "image", NULL, 1), SL_ESHAPE);
    assert_contains(sl_dataset_last_error(ds), "decode");
    assert_contains(sl_dataset_last_error(ds), "(1, 28, 28)");
    sl_op_release(op);
    sl_dataset_free(ds);
    free(dir);
}
END_TEST

START_TEST(test_map_missing_column)
{
    char *dir = valid_mnist("m", 10, 0);
    sl_op *op;
    int rc;
    sl_dataset *ds = mnist_train(dir, 0, &rc);
    ck_assert_int_eq(rc, SL_OK);
    ck_assert_int_eq(sl_op_hwc2chw_new(&op, NULL, 0), SL_OK);
    rc = sl_dataset_map(ds, &op, 1, "pixels", NULL, 1);
    ck_assert_int_eq(rc, SL_EINVAL);
    assert_contains(sl_dataset_last_error(ds), "pixels");
    assert_contains(sl_dataset_last_error(ds), "image");
    /* After a rename the old name is gone. */
    ck_assert_int_eq(sl_dataset_map(ds, &op, 1, "image", "chw", 1), SL_OK);
    ck_assert_int_eq(sl_dataset_map(ds, &op, 1, "image", NULL, 1), SL_EINVAL);
    assert_contains(sl_dataset_last_error(ds), "'image'");
    sl_op_release(op);
    sl_dataset_free(ds);
    free(dir);
}
END_TEST

/* OneHot(3) on labels 0..9: samples 0, 1, 2 pass, sample 3 fails; the
 * message names the file and the sample, and the three good rows come
 * first. */
START_TEST(test_map_wrong_value_at_run_time)
{
    char *dir = valid_mnist("m", 20, 0);
    char *images = tu_path(dir, TRAIN_IMAGES);
    for (int workers = 1; workers <= 3; workers += 2) {
        sl_op *op;
        run_result res;
        int rc;
        sl_dataset *ds = mnist_train(dir, 0, &rc);
        ck_assert_int_eq(rc, SL_OK);
        ck_assert_int_eq(sl_op_one_hot_new(&op, 3, NULL, 0), SL_OK);
        ck_assert_int_eq(sl_dataset_map(ds, &op, 1, "label", NULL, workers), SL_OK);
        sl_op_release(op);
        expect_run_error(ds, 0, images, &res);
        assert_contains(res.msg, "sample 3");
        assert_contains(res.msg, "one_hot");
        assert_contains(res.msg, "label");
        ck_assert_msg(res.good_rows == 3, "workers %d: %lld rows before the error, not 3", workers,
                      (long long)res.good_rows);
        sl_dataset_free(ds);
    }
    free(images);
    free(dir);
}
END_TEST

/* An error keeps coming back from every later call, and freeing the
 * iterator then (or while its threads still run) is clean. */
START_TEST(test_error_is_sticky)
{
    char *dir = valid_mnist("m", 200, 0);
    char *images = tu_path(dir, TRAIN_IMAGES);
    sl_op *op;
    sl_iterator *it;
    sl_iterator_options o;
    char first[1024];
    int rc, err = SL_OK;
    int64_t rows = 0;
    sl_dataset *ds = mnist_train(dir, 0, &rc);
    ck_assert_int_eq(rc, SL_OK);
    ck_assert_int_eq(sl_op_one_hot_new(&op, 9, NULL, 0), SL_OK); /* sample 9 fails */
    ck_assert_int_eq(sl_dataset_map(ds, &op, 1, "label", NULL, 2), SL_OK);
    sl_op_release(op);
    ck_assert_int_eq(sl_dataset_repeat(ds, -1), SL_OK);
    sl_iterator_options_init(&o);
    o.timeout_ms = IT_TIMEOUT_MS;
    o.chunk_rows = 2;
    ck_assert_int_eq(sl_iterator_new(&it, ds, &o), SL_OK);
    for (;;) {
        sl_row row;
        rc = sl_iterator_next(it, &row);
        if (rc == SL_OK) {
            rows++;
            sl_row_clear(&row);
            continue;
        }
        ck_assert_int_lt(rc, 0);
        err = rc;
        break;
    }
    ck_assert_int_eq(rows, 9);
    snprintf(first, sizeof first, "%s", sl_iterator_last_error(it));
    assert_contains(first, images);
    assert_contains(first, "sample 9");
    for (int k = 0; k < 5; k++) {
        sl_row row;
        ck_assert_int_eq(sl_iterator_next(it, &row), err);
        ck_assert_str_eq(sl_iterator_last_error(it), first);
    }
    sl_iterator_free(it);
    sl_dataset_free(ds);
    free(images);
    free(dir);
}
END_TEST

/* --- suite ----------------------------------------------------------------- */

static Suite *make_bad_input_suite(void)
{
    Suite *s = suite_create("bad_input");
    TCase *tc;

    tc = tu_tcase("mnist", 120);
    tcase_add_checked_fixture(tc, setup_tmp, teardown_tmp);
    tcase_add_test(tc, test_mnist_missing_files);
    tcase_add_test(tc, test_mnist_missing_dir);
    tcase_add_test(tc, test_mnist_wrong_magic);
    tcase_add_test(tc, test_mnist_truncated_header);
    tcase_add_test(tc, test_mnist_truncated_pixels_plain);
    tcase_add_test(tc, test_mnist_truncated_pixels_gz);
    tcase_add_test(tc, test_mnist_count_mismatch);
    tcase_add_test(tc, test_mnist_corrupt_gzip);
    tcase_add_test(tc, test_mnist_truncated_gzip);
    tcase_add_test(tc, test_mnist_gzip_without_trailer);
    tcase_add_test(tc, test_mnist_overflowing_dims);
    tcase_add_test(tc, test_mnist_huge_dims_gz);
    tcase_add_test(tc, test_mnist_zero_samples);
    tcase_add_test(tc, test_mnist_zero_side);
    suite_add_tcase(s, tc);

    tc = tu_tcase("image_folder", 120);
    tcase_add_checked_fixture(tc, setup_tmp, teardown_tmp);
    tcase_add_test(tc, test_if_empty_class_folder);
    tcase_add_test(tc, test_if_no_class_folders);
    tcase_add_test(tc, test_if_not_a_jpeg);
    tcase_add_test(tc, test_if_jpeg_cut_mid_scan);
    tcase_add_test(tc, test_if_error_after_good_rows);
    tcase_add_test(tc, test_if_batch_shape_mismatch);
    suite_add_tcase(s, tc);

    tc = tu_tcase("arguments", 60);
    tcase_add_checked_fixture(tc, setup_tmp, teardown_tmp);
    tcase_add_test(tc, test_bad_shards);
    tcase_add_test(tc, test_bad_node_args);
    suite_add_tcase(s, tc);

    tc = tu_tcase("ops", 60);
    tcase_add_checked_fixture(tc, setup_tmp, teardown_tmp);
    tcase_add_test(tc, test_map_wrong_shape_at_description);
    tcase_add_test(tc, test_map_missing_column);
    tcase_add_test(tc, test_map_wrong_value_at_run_time);
    tcase_add_test(tc, test_error_is_sticky);
    suite_add_tcase(s, tc);

    return s;
}

int main(void)
{
    return tu_run_suite(make_bad_input_suite);
}
