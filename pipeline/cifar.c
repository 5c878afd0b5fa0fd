/* cifar.c: Cifar10Dataset and Cifar100Dataset, the "binary version" of the
 * CIFAR archives. CIFAR-10: data_batch_1.bin .. data_batch_5.bin (train)
 * and test_batch.bin (test), records of 1 label byte and 3072 image bytes;
 * CIFAR-100: train.bin and test.bin, records of 1 coarse and 1 fine label
 * byte and 3072 image bytes. The image is three 32x32 planes, R then G then
 * B, each row-major (CHW).
 *
 * Columns follow mindspore.dataset.Cifar10Dataset / Cifar100Dataset's
 * documentation: CIFAR-10 yields `image` uint8 (32, 32, 3), HWC, and `label`
 * uint32 (); CIFAR-100 yields `image`, `coarse_label` and `fine_label`, the
 * labels uint32 (). Usage "all" is train then test, as MindSpore's.
 *
 * Read lazily, one record per row with pread, rather than loaded once as
 * MnistDataset is: CIFAR-10's train split is 150 MB, and every row must be
 * copied anyway to turn the CHW planes into HWC, so a load would only add
 * 180 MB held for the dataset's life and a wait before the first row. The
 * files are opened and their sizes checked when the dataset is described;
 * pread needs no lock, so any number of reader threads share a descriptor.
 * A label out of range is found when its record is read: a bad sample
 * (sl_dataset_set_error_samples), named by file and record. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* asprintf */
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/options.h"
#include "core/tensor_impl.h"
#include "pipeline/sampler.h"
#include "pipeline/source.h"

#define CIFAR_SIDE 32
#define CIFAR_PLANE (CIFAR_SIDE * CIFAR_SIDE)
#define CIFAR_IMAGE (3 * CIFAR_PLANE)
#define CIFAR_MAX_FILES 6

typedef struct cifar_file {
    char *path;
    int fd;
    int64_t first; /* index of its first record in the dataset */
    int64_t count;
} cifar_file;

typedef struct cifar_kind {
    const char *name;        /* "CIFAR-10" */
    const char *kind;        /* the source's kind: "cifar10" */
    const char *const *train; /* file names, NULL-terminated */
    const char *const *test;
    const char *train_list;  /* for messages */
    const char *archive_dir; /* the folder the archive unpacks to */
    int nlabels;             /* label bytes per record: 1 or 2 */
    uint32_t classes[2];     /* label < classes[i]: coarse and fine for CIFAR-100 */
    const char *label_names[2];
} cifar_kind;

static const char *const c10_train[] = {"data_batch_1.bin", "data_batch_2.bin",
                                        "data_batch_3.bin", "data_batch_4.bin",
                                        "data_batch_5.bin", NULL};
static const char *const c10_test[] = {"test_batch.bin", NULL};
static const char *const c100_train[] = {"train.bin", NULL};
static const char *const c100_test[] = {"test.bin", NULL};

static const cifar_kind cifar10 = {
    "CIFAR-10", "cifar10", c10_train, c10_test,
    "data_batch_1.bin .. data_batch_5.bin", "cifar-10-batches-bin",
    1, {10, 0}, {"label", NULL},
};
static const cifar_kind cifar100 = {
    "CIFAR-100", "cifar100", c100_train, c100_test,
    "train.bin", "cifar-100-binary",
    2, {20, 100}, {"coarse_label", "fine_label"},
};

typedef struct cifar_source {
    sl__source base;
    const cifar_kind *k;
    size_t record; /* bytes per record: labels + 3072 */
    cifar_file files[CIFAR_MAX_FILES];
    int nfiles;
} cifar_source;

static const char *usage_name(sl_cifar_usage u)
{
    return u == SL_CIFAR_TRAIN ? "train" : u == SL_CIFAR_TEST ? "test" : "all";
}

static int exists(const char *dir, const char *name)
{
    char *path = NULL;
    int yes;
    if (asprintf(&path, "%s/%s", dir, name) < 0)
        return 0;
    yes = access(path, F_OK) == 0;
    free(path);
    return yes;
}

/* Whether dir holds any file of a split. */
static int split_present(const char *dir, const char *const *names)
{
    for (size_t i = 0; names[i]; i++)
        if (exists(dir, names[i]))
            return 1;
    return 0;
}

static int file_list(const char *const *names, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; names[i] && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", names[i]);
    return 0;
}

/* Opens dir/name, checks its size is a whole number of records (at least
 * one), appends it. split names the split for the message of a missing file. */
static int open_file(cifar_source *c, const char *dir, const char *name, const char *split,
                     const char *const *split_names, sl__error *err)
{
    cifar_file *f = &c->files[c->nfiles];
    struct stat st;
    int64_t extra;
    if (asprintf(&f->path, "%s/%s", dir, name) < 0) {
        f->path = NULL;
        return sl__errf(err, SL_ENOMEM, "cifar: out of memory");
    }
    c->nfiles++; /* destroy frees the path and closes the descriptor */
    f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
    if (f->fd < 0) {
        char list[256];
        int e = errno;
        file_list(split_names, list, sizeof list);
        return sl__errf(err, SL_EIO, "%s: %s (the %s %s split is the files %s)", f->path,
                        strerror(e), c->k->name, split, list);
    }
    if (fstat(f->fd, &st) != 0)
        return sl__errf(err, SL_EIO, "%s: %s", f->path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return sl__errf(err, SL_EIO, "%s: not a regular file", f->path);
    extra = (int64_t)st.st_size % (int64_t)c->record;
    if (extra != 0)
        return sl__errf(err, SL_EFORMAT,
                        "%s: truncated: %lld bytes are %lld whole %s records of %zu bytes and "
                        "%lld bytes left over (record %lld is cut short)",
                        f->path, (long long)st.st_size, (long long)(st.st_size / (off_t)c->record),
                        c->k->name, c->record, (long long)extra,
                        (long long)(st.st_size / (off_t)c->record));
    if (st.st_size == 0)
        return sl__errf(err, SL_EFORMAT, "%s: the file holds no records", f->path);
    f->count = (int64_t)st.st_size / (int64_t)c->record;
    f->first = c->base.num_rows;
    c->base.num_rows += f->count;
    return SL_OK;
}

static int open_split(cifar_source *c, const char *dir, const char *const *names,
                      const char *split, sl__error *err)
{
    for (size_t i = 0; names[i]; i++) {
        int rc = open_file(c, dir, names[i], split, names, err);
        if (rc != SL_OK)
            return rc;
    }
    return SL_OK;
}

static int neither(const cifar_source *c, const char *dir, sl__error *err)
{
    const cifar_kind *k = c->k, *other = k == &cifar10 ? &cifar100 : &cifar10;
    char hint[512] = "";
    if (exists(dir, k->archive_dir))
        snprintf(hint, sizeof hint, "; the archive's folder %s/%s is there: pass it", dir,
                 k->archive_dir);
    else if (split_present(dir, other->train) || split_present(dir, other->test))
        snprintf(hint, sizeof hint, "; it holds %s files: use %s", other->name,
                 other == &cifar100 ? "Cifar100Dataset" : "Cifar10Dataset");
    return sl__errf(err, SL_EIO, "%s: holds neither the %s train files (%s) nor its test file "
                                 "(%s): %s%s",
                    dir, k->name, k->train_list, k->test[0], strerror(ENOENT), hint);
}

static int cifar_prepare(sl__source *src, const atomic_int *stop, sl__error *err)
{
    (void)src;
    (void)stop;
    (void)err;
    return SL_OK; /* records are read one by one */
}

static const cifar_file *file_of(const cifar_source *c, int64_t index)
{
    for (int i = 0; i < c->nfiles; i++)
        if (index >= c->files[i].first && index < c->files[i].first + c->files[i].count)
            return &c->files[i];
    return NULL;
}

static int cifar_read(sl__source *src, int64_t index, sl__row *row, sl_pool *pool,
                      sl__error *err)
{
    const cifar_source *c = (const cifar_source *)src;
    const cifar_file *f = file_of(c, index);
    uint8_t rec[2 + CIFAR_IMAGE];
    const uint8_t *img = rec + c->k->nlabels;
    int64_t rec_index, shape[3] = {CIFAR_SIDE, CIFAR_SIDE, 3};
    size_t got = 0;
    uint8_t *dst;
    int rc;
    if (!f)
        return sl__errf(err, SL_EINVAL, "cifar: sample %lld is out of range", (long long)index);
    rec_index = index - f->first;
    while (got < c->record) {
        ssize_t r = pread(f->fd, rec + got, c->record - got,
                          (off_t)(rec_index * (int64_t)c->record) + (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return sl__errf(err, SL_EIO, "%s record %lld: %s", f->path, (long long)rec_index,
                            r < 0 ? strerror(errno) : "the file shrank since it was opened");
        got += (size_t)r;
    }
    for (int l = 0; l < c->k->nlabels; l++)
        if (rec[l] >= c->k->classes[l])
            return sl__errf(err, SL_EFORMAT, "%s record %lld: %s %u is out of range (%s has %u "
                                             "classes, 0..%u)",
                            f->path, (long long)rec_index, c->k->label_names[l], (unsigned)rec[l],
                            c->k->name, (unsigned)c->k->classes[l],
                            (unsigned)c->k->classes[l] - 1);
    rc = sl__tensor_alloc(&row->col[0], pool, SL_UINT8, 3, shape);
    if (rc != SL_OK)
        return sl__errf(err, rc, "%s record %lld: out of memory", f->path, (long long)rec_index);
    /* CHW planes to HWC pixels. */
    dst = row->col[0]->data;
    for (int p = 0; p < CIFAR_PLANE; p++) {
        dst[3 * p] = img[p];
        dst[3 * p + 1] = img[CIFAR_PLANE + p];
        dst[3 * p + 2] = img[2 * CIFAR_PLANE + p];
    }
    for (int l = 0; l < c->k->nlabels; l++) {
        rc = sl__tensor_alloc(&row->col[1 + l], pool, SL_UINT32, 0, NULL);
        if (rc != SL_OK)
            return sl__errf(err, rc, "%s record %lld: out of memory", f->path,
                            (long long)rec_index);
        *(uint32_t *)row->col[1 + l]->data = rec[l];
    }
    return SL_OK;
}

static size_t cifar_size_hint(const sl__source *src, int64_t index)
{
    const cifar_source *c = (const cifar_source *)src;
    (void)index;
    return CIFAR_IMAGE + (size_t)c->k->nlabels * sizeof(uint32_t);
}

static void cifar_describe(const sl__source *src, int64_t index, char *buf, size_t len)
{
    const cifar_file *f = file_of((const cifar_source *)src, index);
    if (f)
        snprintf(buf, len, "%s record %lld", f->path, (long long)(index - f->first));
    else
        snprintf(buf, len, "sample %lld", (long long)index);
}

static double cifar_load_ms(const sl__source *src)
{
    (void)src;
    return 0;
}

static void cifar_destroy(sl__source *src)
{
    cifar_source *c = (cifar_source *)src;
    for (int i = 0; i < c->nfiles; i++) {
        if (c->files[i].fd >= 0)
            close(c->files[i].fd);
        free(c->files[i].path);
    }
}

static const sl__source_iface cifar10_iface = {
    .kind = "cifar10",
    .prepare = cifar_prepare,
    .read = cifar_read,
    .size_hint = cifar_size_hint,
    .describe = cifar_describe,
    .load_ms = cifar_load_ms,
    .destroy = cifar_destroy,
};

static const sl__source_iface cifar100_iface = {
    .kind = "cifar100",
    .prepare = cifar_prepare,
    .read = cifar_read,
    .size_hint = cifar_size_hint,
    .describe = cifar_describe,
    .load_ms = cifar_load_ms,
    .destroy = cifar_destroy,
};

/* The end of the first version's fields: fixed forever (core/options.h). */
static const size_t cifar_options_v1_size =
    offsetof(sl_cifar_options, sampler) + sizeof(sl_sampler_options);
/* No tail padding, so a caller's size covers only fields it knows; name the
 * last field here when one is appended. */
_Static_assert(sizeof(sl_cifar_options) ==
                   offsetof(sl_cifar_options, sampler) + sizeof(sl_sampler_options),
               "sl_cifar_options: name its last field here; no tail padding "
               "(core/options.h)");

void sl_cifar_options_init_sized(sl_cifar_options *o, size_t size)
{
    sl_cifar_options d;
    memset(&d, 0, sizeof d);
    d.dataset_dir = NULL;
    d.usage = SL_CIFAR_ALL;
    sl_sampler_options_init(&d.sampler);
    sl__options_init(o, size, &d, sizeof d);
}

int sl__cifar_options_read(sl_cifar_options *dst, const sl_cifar_options *src, sl__error *err)
{
    int rc;
    sl_cifar_options_init(dst);
    rc = sl__options_read(dst, sizeof *dst, cifar_options_v1_size, src, "sl_cifar_options", err);
    if (rc == SL_OK)
        rc = sl__options_check_embedded(dst->sampler.size, sizeof dst->sampler,
                                        "sl_sampler_options", "sl_cifar_options.sampler", err);
    return rc;
}

int sl__cifar_source_new(sl__source **out, int hundred, const sl_cifar_options *o,
                         sl__error *err)
{
    cifar_source *c;
    int rc = SL_OK;
    *out = NULL;
    if (!o->dataset_dir)
        return sl__errf(err, SL_EINVAL, "cifar: dataset_dir is not set");
    if (o->usage != SL_CIFAR_ALL && o->usage != SL_CIFAR_TRAIN && o->usage != SL_CIFAR_TEST)
        return sl__errf(err, SL_EINVAL, "cifar: usage must be train, test or all");
    c = calloc(1, sizeof *c);
    if (!c)
        return sl__errf(err, SL_ENOMEM, "cifar: out of memory");
    c->k = hundred ? &cifar100 : &cifar10;
    c->base.iface = hundred ? &cifar100_iface : &cifar10_iface;
    atomic_init(&c->base.refs, 1);
    c->record = (size_t)c->k->nlabels + CIFAR_IMAGE;
    for (int i = 0; i < CIFAR_MAX_FILES; i++)
        c->files[i].fd = -1;
    if (o->usage == SL_CIFAR_ALL) {
        /* As MnistDataset (and MindSpore, which reads the files it finds):
         * each split of which a file is there, train then test; a split
         * found must be whole. */
        int train = split_present(o->dataset_dir, c->k->train);
        int test = split_present(o->dataset_dir, c->k->test);
        if (!train && !test)
            rc = neither(c, o->dataset_dir, err);
        if (rc == SL_OK && train)
            rc = open_split(c, o->dataset_dir, c->k->train, "train", err);
        if (rc == SL_OK && test)
            rc = open_split(c, o->dataset_dir, c->k->test, "test", err);
    } else {
        int train = o->usage == SL_CIFAR_TRAIN;
        if (!split_present(o->dataset_dir, c->k->train) &&
            !split_present(o->dataset_dir, c->k->test))
            rc = neither(c, o->dataset_dir, err);
        else
            rc = open_split(c, o->dataset_dir, train ? c->k->train : c->k->test,
                            train ? "train" : "test", err);
    }
    if (rc == SL_OK)
        rc = sl__sampler_check(&o->sampler, c->base.num_rows, err);
    if (rc != SL_OK) {
        cifar_destroy(&c->base);
        free(c);
        return rc;
    }
    c->base.sampler = o->sampler;
    c->base.ncols = 1 + (size_t)c->k->nlabels;
    strcpy(c->base.names[0], "image");
    c->base.specs[0] = (sl_tensor_spec){SL_UINT8, 3, {CIFAR_SIDE, CIFAR_SIDE, 3}};
    for (int l = 0; l < c->k->nlabels; l++) {
        strcpy(c->base.names[1 + l], c->k->label_names[l]);
        c->base.specs[1 + l] = (sl_tensor_spec){SL_UINT32, 0, {0}};
    }
    snprintf(c->base.summary, sizeof c->base.summary, "%s(%s, usage=%s, %lld rows)",
             c->k->kind, o->dataset_dir, usage_name(o->usage), (long long)c->base.num_rows);
    *out = &c->base;
    return SL_OK;
}
