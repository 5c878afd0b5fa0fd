/* check_cifar.c: Cifar10Dataset and Cifar100Dataset over generated files
 * (no Debian package ships CIFAR): the image turned from the file's CHW
 * planes into HWC exactly, the labels, columns and their specs, usage
 * train / test / all and its order, shards and num_samples, shuffling that
 * a seed fixes, and every refusal: a missing file (naming the split's
 * files), a truncated file (the bytes left over), a label out of range
 * (file and record), an empty file, a folder holding neither split, and
 * options not made by their _init. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "sluice/sluice.h"
#include "tests/testutil.h"

#define IT_TIMEOUT_MS 60000
#define PLANE 1024
#define IMAGE (3 * PLANE)
#define MAX_IDS 256 /* ids are recovered from the R plane's pixel (0, 0) */
#define C10_PER_BATCH 4 /* train: 5 batches of 4, ids 0..19 */
#define C10_TEST 6      /* test: ids 20..25 */
#define C100_TRAIN 10
#define C100_TEST 5

static char *tmp;

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

/* --- generated files ------------------------------------------------------ */

/* Channel c of sample id at (y, x): each plane its own pattern, so that a
 * plane read in place of another, or rows and columns swapped, differ. */
static uint8_t px(uint32_t id, int c, int y, int x)
{
    return (uint8_t)(31u * id + 67u * (unsigned)c + 5u * (unsigned)y + 11u * (unsigned)x);
}

static uint8_t label10(uint32_t id) { return (uint8_t)(id % 10); }
static uint8_t coarse(uint32_t id) { return (uint8_t)(id % 20); }
static uint8_t fine(uint32_t id) { return (uint8_t)((id * 7) % 100); }

/* dir/name holding n records of ids first.. (CIFAR-100 when hundred). */
static void write_records(const char *dir, const char *name, uint32_t first, uint32_t n,
                          int hundred)
{
    size_t rec = (size_t)(hundred ? 2 : 1) + IMAGE;
    uint8_t *buf = malloc(rec * n + 1);
    char *path = tu_path(dir, name);
    ck_assert_ptr_nonnull(buf);
    for (uint32_t r = 0; r < n; r++) {
        uint8_t *p = buf + r * rec;
        uint32_t id = first + r;
        if (hundred) {
            *p++ = coarse(id);
            *p++ = fine(id);
        } else {
            *p++ = label10(id);
        }
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < 32; y++)
                for (int x = 0; x < 32; x++)
                    p[c * PLANE + y * 32 + x] = px(id, c, y, x);
    }
    ck_assert_int_eq(tu_write_bytes(path, buf, rec * n, 0), 0);
    free(path);
    free(buf);
}

static void make_cifar10(const char *dir)
{
    char name[32];
    mkdir(dir, 0755);
    for (int b = 0; b < 5; b++) {
        snprintf(name, sizeof name, "data_batch_%d.bin", b + 1);
        write_records(dir, name, (uint32_t)(b * C10_PER_BATCH), C10_PER_BATCH, 0);
    }
    write_records(dir, "test_batch.bin", 5 * C10_PER_BATCH, C10_TEST, 0);
}

static void make_cifar100(const char *dir)
{
    mkdir(dir, 0755);
    write_records(dir, "train.bin", 0, C100_TRAIN, 1);
    write_records(dir, "test.bin", C100_TRAIN, C100_TEST, 1);
}

/* Overwrites byte offset of dir/name with value. */
static void poke(const char *dir, const char *name, long offset, uint8_t value)
{
    char *path = tu_path(dir, name);
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, offset, SEEK_SET), 0);
    ck_assert_int_eq(fputc(value, f), value);
    ck_assert_int_eq(fclose(f), 0);
    free(path);
}

static void append_bytes(const char *dir, const char *name, size_t n)
{
    char *path = tu_path(dir, name);
    FILE *f = fopen(path, "ab");
    ck_assert_ptr_nonnull(f);
    for (size_t i = 0; i < n; i++)
        fputc(0, f);
    ck_assert_int_eq(fclose(f), 0);
    free(path);
}

static void remove_file(const char *dir, const char *name)
{
    char *path = tu_path(dir, name);
    ck_assert_int_eq(unlink(path), 0);
    free(path);
}

/* --- datasets and iteration ------------------------------------------------ */

static int try_cifar(sl_dataset **out, int hundred, const char *dir, sl_cifar_usage usage,
                     const sl_sampler_options *s)
{
    sl_cifar_options o;
    ck_assert_int_eq(sl_dataset_new(out), SL_OK);
    sl_cifar_options_init(&o);
    o.dataset_dir = dir;
    o.usage = usage;
    if (s)
        o.sampler = *s;
    return hundred ? sl_dataset_cifar100(*out, &o) : sl_dataset_cifar10(*out, &o);
}

static sl_dataset *cifar_ds(int hundred, const char *dir, sl_cifar_usage usage,
                            const sl_sampler_options *s)
{
    sl_dataset *ds;
    int rc = try_cifar(&ds, hundred, dir, usage, s);
    ck_assert_msg(rc == SL_OK, "sl_dataset_cifar%s: %s (%s)", hundred ? "100" : "10",
                  sl_status_name(rc), sl_dataset_last_error(ds));
    return ds;
}

/* The refusal of making the dataset: its status, its message into msg. */
static int refusal(int hundred, const char *dir, sl_cifar_usage usage, char *msg, size_t len)
{
    sl_dataset *ds;
    int rc = try_cifar(&ds, hundred, dir, usage, NULL);
    snprintf(msg, len, "%s", sl_dataset_last_error(ds));
    sl_dataset_free(ds);
    return rc;
}

static sl_sampler_options sampler(int shuffle, uint64_t seed)
{
    sl_sampler_options s;
    sl_sampler_options_init(&s);
    s.shuffle = shuffle;
    s.seed = seed;
    return s;
}

static sl_iterator *start(sl_dataset *ds, int64_t num_epochs)
{
    sl_iterator_options o;
    sl_iterator *it = NULL;
    int rc;
    sl_iterator_options_init(&o);
    o.num_epochs = num_epochs;
    o.timeout_ms = IT_TIMEOUT_MS;
    rc = sl_iterator_new(&it, ds, &o);
    ck_assert_msg(rc == SL_OK, "sl_iterator_new: %s (%s)", sl_status_name(rc),
                  sl_dataset_last_error(ds));
    return it;
}

/* Checks a row against the generated pattern, every pixel of every
 * channel, and its labels; returns its id. */
static int64_t row_id(const sl_row *row, int hundred)
{
    const sl_tensor *img = row->columns[0];
    const int64_t *shape;
    const uint8_t *p;
    uint32_t id;
    ck_assert_uint_eq(row->ncolumns, hundred ? 3 : 2);
    ck_assert_int_eq(sl_tensor_dtype(img), SL_UINT8);
    ck_assert_int_eq(sl_tensor_ndim(img), 3);
    shape = sl_tensor_shape(img);
    ck_assert_int_eq(shape[0], 32);
    ck_assert_int_eq(shape[1], 32);
    ck_assert_int_eq(shape[2], 3);
    p = sl_tensor_data(img);
    id = (uint32_t)(p[0] * 223u) & 0xffu; /* px(id, 0, 0, 0) = 31 id; 223 = 31^-1 mod 256 */
    for (int y = 0; y < 32; y++)
        for (int x = 0; x < 32; x++)
            for (int c = 0; c < 3; c++)
                ck_assert_msg(p[(y * 32 + x) * 3 + c] == px(id, c, y, x),
                              "sample %u: HWC (%d, %d, %d) is %u, the file's plane %d holds %u",
                              id, y, x, c, p[(y * 32 + x) * 3 + c], c, px(id, c, y, x));
    for (size_t l = 1; l < row->ncolumns; l++) {
        const sl_tensor *lab = row->columns[l];
        uint32_t want = hundred ? (l == 1 ? coarse(id) : fine(id)) : label10(id);
        ck_assert_int_eq(sl_tensor_dtype(lab), SL_UINT32);
        ck_assert_int_eq(sl_tensor_ndim(lab), 0);
        ck_assert_uint_eq(*(const uint32_t *)sl_tensor_data(lab), want);
    }
    return id;
}

typedef struct epoch_ids {
    int64_t n;
    int64_t ids[MAX_IDS];
} epoch_ids;

/* Runs ds for num_epochs epochs and records every row's id. Returns SL_OK,
 * or the failing status with its message in msg (when msg is not NULL). */
static int run_ids(sl_dataset *ds, int hundred, int64_t num_epochs, epoch_ids *ep, char *msg,
                   size_t len)
{
    sl_iterator *it = start(ds, num_epochs);
    int64_t e = 0;
    int rc;
    memset(ep, 0, (size_t)num_epochs * sizeof *ep);
    for (;;) {
        sl_row row;
        rc = sl_iterator_next(it, &row);
        if (rc == SL_OK) {
            ck_assert_int_lt(e, num_epochs);
            ck_assert_int_lt(ep[e].n, MAX_IDS);
            ep[e].ids[ep[e].n++] = row_id(&row, hundred);
            sl_row_clear(&row);
        } else if (rc == SL_END_OF_EPOCH) {
            e++;
        } else {
            break;
        }
    }
    if (rc == SL_END_OF_DATA) {
        ck_assert_int_eq(e, num_epochs);
        rc = SL_OK;
    } else {
        ck_assert_msg(msg != NULL, "sl_iterator_next: %s (%s)", sl_status_name(rc),
                      sl_iterator_last_error(it));
        snprintf(msg, len, "%s", sl_iterator_last_error(it));
    }
    sl_iterator_free(it);
    return rc;
}

static void assert_ids(const epoch_ids *ep, int64_t first, int64_t n)
{
    ck_assert_int_eq(ep->n, n);
    for (int64_t i = 0; i < n; i++)
        ck_assert_int_eq(ep->ids[i], first + i);
}

static int same_ids(const epoch_ids *a, const epoch_ids *b)
{
    return a->n == b->n && memcmp(a->ids, b->ids, (size_t)a->n * sizeof a->ids[0]) == 0;
}

static int is_permutation(const epoch_ids *ep, int64_t n)
{
    char seen[MAX_IDS] = {0};
    if (ep->n != n)
        return 0;
    for (int64_t i = 0; i < n; i++) {
        if (ep->ids[i] < 0 || ep->ids[i] >= n || seen[ep->ids[i]])
            return 0;
        seen[ep->ids[i]] = 1;
    }
    return 1;
}

#define HAS(msg, part) ck_assert_msg(strstr((msg), (part)) != NULL, "no \"%s\" in: %s", (part), (msg))

/* --- values and order ------------------------------------------------------- */

START_TEST(test_cifar10_layout_labels_and_usage)
{
    char *dir = tu_path(tmp, "c10");
    sl_sampler_options seq = sampler(0, 0);
    sl_tensor_spec spec;
    sl_dataset *ds;
    epoch_ids ep[1];
    make_cifar10(dir);

    ds = cifar_ds(0, dir, SL_CIFAR_TRAIN, &seq);
    ck_assert_str_eq(sl_dataset_source_kind(ds), "cifar10");
    ck_assert_uint_eq(sl_dataset_num_columns(ds), 2);
    ck_assert_str_eq(sl_dataset_column_name(ds, 0), "image");
    ck_assert_str_eq(sl_dataset_column_name(ds, 1), "label");
    ck_assert_int_eq(sl_dataset_column_spec(ds, 0, &spec), SL_OK);
    ck_assert_int_eq(spec.dtype, SL_UINT8);
    ck_assert_int_eq(spec.ndim, 3);
    ck_assert_int_eq(spec.shape[0], 32);
    ck_assert_int_eq(spec.shape[2], 3);
    ck_assert_int_eq(sl_dataset_column_spec(ds, 1, &spec), SL_OK);
    ck_assert_int_eq(spec.dtype, SL_UINT32);
    ck_assert_int_eq(spec.ndim, 0);
    ck_assert_int_eq(tu_dataset_size(ds), 5 * C10_PER_BATCH);
    /* The batches in order, each record in order. */
    run_ids(ds, 0, 1, ep, NULL, 0);
    assert_ids(ep, 0, 5 * C10_PER_BATCH);
    sl_dataset_free(ds);

    ds = cifar_ds(0, dir, SL_CIFAR_TEST, &seq);
    ck_assert_int_eq(tu_dataset_size(ds), C10_TEST);
    run_ids(ds, 0, 1, ep, NULL, 0);
    assert_ids(ep, 5 * C10_PER_BATCH, C10_TEST);
    sl_dataset_free(ds);

    /* all (the default): train then test. */
    ds = cifar_ds(0, dir, SL_CIFAR_ALL, &seq);
    ck_assert_int_eq(tu_dataset_size(ds), 5 * C10_PER_BATCH + C10_TEST);
    run_ids(ds, 0, 1, ep, NULL, 0);
    assert_ids(ep, 0, 5 * C10_PER_BATCH + C10_TEST);
    sl_dataset_free(ds);

    /* all with the test file alone: the test split. */
    for (int b = 1; b <= 5; b++) {
        char name[32];
        snprintf(name, sizeof name, "data_batch_%d.bin", b);
        remove_file(dir, name);
    }
    ds = cifar_ds(0, dir, SL_CIFAR_ALL, &seq);
    run_ids(ds, 0, 1, ep, NULL, 0);
    assert_ids(ep, 5 * C10_PER_BATCH, C10_TEST);
    sl_dataset_free(ds);
    free(dir);
}
END_TEST

START_TEST(test_cifar100_layout_labels_and_usage)
{
    char *dir = tu_path(tmp, "c100");
    sl_sampler_options seq = sampler(0, 0);
    sl_dataset *ds;
    epoch_ids ep[1];
    make_cifar100(dir);

    ds = cifar_ds(1, dir, SL_CIFAR_ALL, &seq);
    ck_assert_str_eq(sl_dataset_source_kind(ds), "cifar100");
    ck_assert_uint_eq(sl_dataset_num_columns(ds), 3);
    ck_assert_str_eq(sl_dataset_column_name(ds, 0), "image");
    ck_assert_str_eq(sl_dataset_column_name(ds, 1), "coarse_label");
    ck_assert_str_eq(sl_dataset_column_name(ds, 2), "fine_label");
    run_ids(ds, 1, 1, ep, NULL, 0);
    assert_ids(ep, 0, C100_TRAIN + C100_TEST);
    sl_dataset_free(ds);

    ds = cifar_ds(1, dir, SL_CIFAR_TRAIN, &seq);
    run_ids(ds, 1, 1, ep, NULL, 0);
    assert_ids(ep, 0, C100_TRAIN);
    sl_dataset_free(ds);

    ds = cifar_ds(1, dir, SL_CIFAR_TEST, &seq);
    run_ids(ds, 1, 1, ep, NULL, 0);
    assert_ids(ep, C100_TRAIN, C100_TEST);
    sl_dataset_free(ds);
    free(dir);
}
END_TEST

/* 20 train samples, 3 shards: each takes every third position from its
 * id, wrapping round (as every source's sampler): 7 rows each. */
START_TEST(test_cifar_shards_and_num_samples)
{
    char *dir = tu_path(tmp, "c10");
    epoch_ids ep[1];
    make_cifar10(dir);
    for (int64_t k = 0; k < 3; k++) {
        sl_sampler_options s = sampler(0, 0);
        sl_dataset *ds;
        s.num_shards = 3;
        s.shard_id = k;
        ds = cifar_ds(0, dir, SL_CIFAR_TRAIN, &s);
        ck_assert_int_eq(tu_dataset_size(ds), 7);
        run_ids(ds, 0, 1, ep, NULL, 0);
        ck_assert_int_eq(ep[0].n, 7);
        for (int i = 0; i < 7; i++)
            ck_assert_int_eq(ep[0].ids[i], (k + 3 * i) % 20);
        sl_dataset_free(ds);

        /* num_samples is per shard. */
        s.num_samples = 2;
        ds = cifar_ds(0, dir, SL_CIFAR_TRAIN, &s);
        ck_assert_int_eq(tu_dataset_size(ds), 2);
        run_ids(ds, 0, 1, ep, NULL, 0);
        ck_assert_int_eq(ep[0].n, 2);
        ck_assert_int_eq(ep[0].ids[0], k);
        ck_assert_int_eq(ep[0].ids[1], k + 3);
        sl_dataset_free(ds);
    }
    {
        sl_sampler_options s = sampler(0, 0);
        sl_dataset *ds;
        s.num_samples = 5;
        ds = cifar_ds(0, dir, SL_CIFAR_ALL, &s);
        ck_assert_int_eq(tu_dataset_size(ds), 5);
        ck_assert_int_eq(sl_dataset_source_rows(ds), 26);
        run_ids(ds, 0, 1, ep, NULL, 0);
        assert_ids(ep, 0, 5);
        sl_dataset_free(ds);
    }
    free(dir);
}
END_TEST

START_TEST(test_cifar_shuffle_seeded)
{
    char *dir = tu_path(tmp, "c10");
    sl_sampler_options s = sampler(1, 77);
    sl_dataset *ds, *ds2, *ds3;
    epoch_ids a[2], b[2], c[2];
    int identity = 1;
    const int64_t n = 5 * C10_PER_BATCH + C10_TEST;
    make_cifar10(dir);
    ds = cifar_ds(0, dir, SL_CIFAR_ALL, &s);
    ds2 = cifar_ds(0, dir, SL_CIFAR_ALL, &s);
    s.seed = 78;
    ds3 = cifar_ds(0, dir, SL_CIFAR_ALL, &s);
    run_ids(ds, 0, 2, a, NULL, 0);
    run_ids(ds2, 0, 2, b, NULL, 0);
    run_ids(ds3, 0, 2, c, NULL, 0);
    ck_assert(is_permutation(&a[0], n));
    ck_assert(is_permutation(&a[1], n));
    for (int64_t i = 0; i < n; i++)
        identity &= a[0].ids[i] == i;
    ck_assert_msg(!identity, "shuffle gave the file order");
    ck_assert_msg(!same_ids(&a[0], &a[1]), "two epochs in the same order");
    ck_assert(same_ids(&a[0], &b[0]) && same_ids(&a[1], &b[1])); /* same seed, same orders */
    ck_assert(!same_ids(&a[0], &c[0]));                          /* another seed */
    sl_dataset_free(ds);
    sl_dataset_free(ds2);
    sl_dataset_free(ds3);
    free(dir);
}
END_TEST

/* --- refusals ----------------------------------------------------------------- */

START_TEST(test_cifar_missing_file)
{
    char *dir = tu_path(tmp, "c10");
    char *d100 = tu_path(tmp, "c100");
    char msg[1024];
    make_cifar10(dir);
    make_cifar100(d100);
    remove_file(dir, "data_batch_3.bin");
    remove_file(d100, "test.bin");
    for (int usage = SL_CIFAR_ALL; usage <= SL_CIFAR_TRAIN; usage++) {
        ck_assert_int_eq(refusal(0, dir, (sl_cifar_usage)usage, msg, sizeof msg), SL_EIO);
        HAS(msg, "Cifar10Dataset(");
        HAS(msg, "/data_batch_3.bin: No such file or directory");
        HAS(msg, "data_batch_1.bin, data_batch_2.bin, data_batch_3.bin, data_batch_4.bin, "
                 "data_batch_5.bin");
    }
    /* The test split is whole: it reads. */
    ck_assert_int_eq(refusal(0, dir, SL_CIFAR_TEST, msg, sizeof msg), SL_OK);
    ck_assert_int_eq(refusal(1, d100, SL_CIFAR_TEST, msg, sizeof msg), SL_EIO);
    HAS(msg, "Cifar100Dataset(");
    HAS(msg, "/test.bin: No such file or directory");
    HAS(msg, "CIFAR-100 test split");
    ck_assert_int_eq(refusal(1, d100, SL_CIFAR_ALL, msg, sizeof msg), SL_OK); /* train alone */
    free(dir);
    free(d100);
}
END_TEST

START_TEST(test_cifar_truncated_and_empty)
{
    char *dir = tu_path(tmp, "c10");
    char *d100 = tu_path(tmp, "c100");
    char *path;
    char msg[1024];
    make_cifar10(dir);
    make_cifar100(d100);
    append_bytes(dir, "test_batch.bin", 100);
    ck_assert_int_eq(refusal(0, dir, SL_CIFAR_TEST, msg, sizeof msg), SL_EFORMAT);
    HAS(msg, "/test_batch.bin: truncated");
    HAS(msg, "6 whole CIFAR-10 records of 3073 bytes and 100 bytes left over");
    HAS(msg, "record 6");
    ck_assert_int_eq(refusal(0, dir, SL_CIFAR_ALL, msg, sizeof msg), SL_EFORMAT);
    ck_assert_int_eq(refusal(0, dir, SL_CIFAR_TRAIN, msg, sizeof msg), SL_OK);

    /* Two whole CIFAR-100 records and a third cut one byte short. */
    path = tu_path(d100, "train.bin");
    ck_assert_int_eq(truncate(path, 3074 * 2 + 3073), 0);
    ck_assert_int_eq(refusal(1, d100, SL_CIFAR_TRAIN, msg, sizeof msg), SL_EFORMAT);
    HAS(msg, "/train.bin: truncated");
    HAS(msg, "2 whole CIFAR-100 records of 3074 bytes and 3073 bytes left over");
    ck_assert_int_eq(truncate(path, 0), 0);
    ck_assert_int_eq(refusal(1, d100, SL_CIFAR_TRAIN, msg, sizeof msg), SL_EFORMAT);
    HAS(msg, "/train.bin: the file holds no records");
    free(path);
    free(dir);
    free(d100);
}
END_TEST

/* A label out of range is found when its record is read, and named. */
START_TEST(test_cifar_label_out_of_range)
{
    static const struct {
        int hundred;
        const char *file;
        long record;
        int byte; /* 0: (coarse) label, 1: fine */
        uint8_t value;
        const char *says;
    } cases[] = {
        {0, "data_batch_2.bin", 2, 0, 10, "data_batch_2.bin record 2: label 10 is out of range "
                                          "(CIFAR-10 has 10 classes, 0..9)"},
        {1, "test.bin", 3, 0, 20, "test.bin record 3: coarse_label 20 is out of range "
                                  "(CIFAR-100 has 20 classes, 0..19)"},
        {1, "train.bin", 0, 1, 100, "train.bin record 0: fine_label 100 is out of range "
                                    "(CIFAR-100 has 100 classes, 0..99)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[16], msg[1024];
        char *dir;
        sl_sampler_options seq = sampler(0, 0);
        sl_dataset *ds;
        epoch_ids ep[1];
        int rc;
        snprintf(name, sizeof name, "case%zu", i);
        dir = tu_path(tmp, name);
        if (cases[i].hundred)
            make_cifar100(dir);
        else
            make_cifar10(dir);
        poke(dir, cases[i].file, cases[i].record * (cases[i].hundred ? 3074 : 3073) + cases[i].byte,
             cases[i].value);
        ds = cifar_ds(cases[i].hundred, dir, SL_CIFAR_ALL, &seq); /* the headers are fine */
        rc = run_ids(ds, cases[i].hundred, 1, ep, msg, sizeof msg);
        ck_assert_int_eq(rc, SL_EFORMAT);
        HAS(msg, cases[i].says);
        sl_dataset_free(ds);
        free(dir);
    }
}
END_TEST

START_TEST(test_cifar_folder_with_neither)
{
    char *empty = tu_path(tmp, "empty");
    char *d100 = tu_path(tmp, "c100");
    char *outer = tu_path(tmp, "outer");
    char *inner = tu_path(outer, "cifar-10-batches-bin");
    char msg[1024];
    mkdir(empty, 0755);
    make_cifar100(d100);
    mkdir(outer, 0755);
    make_cifar10(inner);
    for (int usage = SL_CIFAR_ALL; usage <= SL_CIFAR_TEST; usage++) {
        ck_assert_int_eq(refusal(0, empty, (sl_cifar_usage)usage, msg, sizeof msg), SL_EIO);
        HAS(msg, "holds neither the CIFAR-10 train files (data_batch_1.bin .. data_batch_5.bin) "
                 "nor its test file (test_batch.bin)");
        ck_assert_int_eq(refusal(1, empty, (sl_cifar_usage)usage, msg, sizeof msg), SL_EIO);
        HAS(msg, "holds neither the CIFAR-100 train files (train.bin) nor its test file "
                 "(test.bin)");
    }
    /* The other CIFAR's files, or the archive's folder: said so. */
    ck_assert_int_eq(refusal(0, d100, SL_CIFAR_ALL, msg, sizeof msg), SL_EIO);
    HAS(msg, "it holds CIFAR-100 files: use Cifar100Dataset");
    ck_assert_int_eq(refusal(0, outer, SL_CIFAR_ALL, msg, sizeof msg), SL_EIO);
    HAS(msg, "the archive's folder");
    HAS(msg, "cifar-10-batches-bin is there");
    ck_assert_int_eq(refusal(0, inner, SL_CIFAR_ALL, msg, sizeof msg), SL_OK);
    free(inner);
    free(outer);
    free(d100);
    free(empty);
}
END_TEST

START_TEST(test_cifar_options_refused)
{
    sl_dataset *ds;
    sl_cifar_options o;
    ck_assert_int_eq(sl_dataset_new(&ds), SL_OK);
    memset(&o, 0, sizeof o);
    o.dataset_dir = tmp;
    ck_assert_int_eq(sl_dataset_cifar10(ds, &o), SL_EINVAL); /* never initialised */
    HAS(sl_dataset_last_error(ds), "Cifar10Dataset: ");
    HAS(sl_dataset_last_error(ds), "sl_cifar_options_init");
    sl_cifar_options_init(&o);
    ck_assert_int_eq(sl_dataset_cifar100(ds, &o), SL_EINVAL); /* no folder */
    HAS(sl_dataset_last_error(ds), "dataset_dir is not set");
    o.dataset_dir = tmp;
    o.usage = (sl_cifar_usage)7;
    ck_assert_int_eq(sl_dataset_cifar10(ds, &o), SL_EINVAL);
    HAS(sl_dataset_last_error(ds), "usage must be train, test or all");
    o.usage = SL_CIFAR_ALL;
    o.sampler.size = 0;
    ck_assert_int_eq(sl_dataset_cifar10(ds, &o), SL_EINVAL);
    HAS(sl_dataset_last_error(ds), "sl_cifar_options.sampler");
    sl_dataset_free(ds);
}
END_TEST

static Suite *make_cifar_suite(void)
{
    Suite *s = suite_create("cifar");
    TCase *tc = tu_tcase("values", 60);
    tcase_add_checked_fixture(tc, setup_tmp, teardown_tmp);
    tcase_add_test(tc, test_cifar10_layout_labels_and_usage);
    tcase_add_test(tc, test_cifar100_layout_labels_and_usage);
    tcase_add_test(tc, test_cifar_shards_and_num_samples);
    tcase_add_test(tc, test_cifar_shuffle_seeded);
    suite_add_tcase(s, tc);

    tc = tu_tcase("refusals", 60);
    tcase_add_checked_fixture(tc, setup_tmp, teardown_tmp);
    tcase_add_test(tc, test_cifar_missing_file);
    tcase_add_test(tc, test_cifar_truncated_and_empty);
    tcase_add_test(tc, test_cifar_label_out_of_range);
    tcase_add_test(tc, test_cifar_folder_with_neither);
    tcase_add_test(tc, test_cifar_options_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(make_cifar_suite);
}
