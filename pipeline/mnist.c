/* mnist.c: MnistDataset. Reads the IDX image and label files of the train
 * and/or test split (plain or .gz), checks their headers when the dataset
 * is described, and loads every pixel into one block the first time an
 * iterator runs; rows are then views into that block, so reading a sample
 * copies nothing. Yields `image` uint8 (H, W, 1) and `label` uint32 (). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/huge_pages.h"
#include "core/options.h"
#include "core/tensor_impl.h"
#include "pipeline/idx.h"
#include "pipeline/sampler.h"
#include "pipeline/source.h"

#define MNIST_MAX_SIDE 16384

typedef struct mnist_part {
    char *images_path;
    char *labels_path;
    sl__idx_header images_hdr;
    sl__idx_header labels_hdr;
    int64_t first; /* index of its first sample in the dataset */
    int64_t count;
} mnist_part;

typedef struct mnist_source {
    sl__source base;
    mnist_part parts[2];
    int nparts;
    int64_t height, width;
    pthread_mutex_t load_lock;
    pthread_cond_t load_done; /* a load ended, or mnist_wake was called */
    int loading;              /* one prepare is reading the files (unlocked) */
    int loaded;
    uint64_t loads_ended;     /* loads that ended, whether or not they succeeded */
    sl__error load_err;       /* how the last load ended (status SL_OK: it succeeded) */
    sl_tensor *images;  /* (N, H, W, 1) uint8, filled by prepare */
    uint32_t *labels;   /* N */
    double load_ms;
} mnist_source;

static const char *usage_name(sl_mnist_usage u)
{
    return u == SL_MNIST_TRAIN ? "train" : u == SL_MNIST_TEST ? "test" : "all";
}

/* dir/prefix-kind, or the same with ".gz" when only that exists. */
static char *find_file(const char *dir, const char *prefix, const char *kind)
{
    char *path = NULL;
    if (asprintf(&path, "%s/%s-%s", dir, prefix, kind) < 0)
        return NULL;
    if (access(path, F_OK) == 0)
        return path;
    free(path);
    if (asprintf(&path, "%s/%s-%s.gz", dir, prefix, kind) < 0)
        return NULL;
    return path; /* missing files are reported by the header check */
}

/* Whether dir holds prefix's images file, plain or gzipped. */
static int split_present(const char *dir, const char *prefix)
{
    char *path = find_file(dir, prefix, "images-idx3-ubyte");
    int present = path && access(path, F_OK) == 0;
    free(path);
    return present;
}

static int open_part(mnist_part *part, const char *dir, const char *prefix, sl__error *err)
{
    int rc;
    part->images_path = find_file(dir, prefix, "images-idx3-ubyte");
    part->labels_path = find_file(dir, prefix, "labels-idx1-ubyte");
    if (!part->images_path || !part->labels_path)
        return sl__errf(err, SL_ENOMEM, "mnist: out of memory");
    rc = sl__idx_read_header(part->images_path, 3, &part->images_hdr, err);
    if (rc != SL_OK)
        return rc;
    rc = sl__idx_read_header(part->labels_path, 1, &part->labels_hdr, err);
    if (rc != SL_OK)
        return rc;
    if (part->images_hdr.dims[0] == 0)
        return sl__errf(err, SL_EFORMAT, "%s: the file holds no samples", part->images_path);
    if (part->images_hdr.dims[0] != part->labels_hdr.dims[0])
        return sl__errf(err, SL_EFORMAT, "%s holds %u images but %s holds %u labels",
                        part->images_path, part->images_hdr.dims[0], part->labels_path,
                        part->labels_hdr.dims[0]);
    if (part->images_hdr.dims[1] == 0 || part->images_hdr.dims[2] == 0 ||
        part->images_hdr.dims[1] > MNIST_MAX_SIDE || part->images_hdr.dims[2] > MNIST_MAX_SIDE)
        return sl__errf(err, SL_EFORMAT, "%s: image size %ux%u is out of range (1..%d per side)",
                        part->images_path, part->images_hdr.dims[1], part->images_hdr.dims[2],
                        MNIST_MAX_SIDE);
    part->count = part->images_hdr.dims[0];
    return SL_OK;
}

static int load_labels(mnist_source *m, const mnist_part *part, const atomic_int *stop,
                       sl__error *err)
{
    uint8_t *raw = malloc((size_t)part->count);
    int rc;
    if (!raw)
        return sl__errf(err, SL_ENOMEM, "%s: out of memory for %lld labels", part->labels_path,
                        (long long)part->count);
    rc = sl__idx_read_payload(part->labels_path, &part->labels_hdr, raw, stop, err);
    for (int64_t i = 0; rc == SL_OK && i < part->count; i++)
        m->labels[part->first + i] = raw[i];
    free(raw);
    return rc;
}

static int stopped(const atomic_int *stop)
{
    return stop && atomic_load_explicit(stop, memory_order_relaxed);
}

static int mnist_prepare(sl__source *src, const atomic_int *stop, sl__error *err)
{
    mnist_source *m = (mnist_source *)src;
    int rc = SL_OK;
    double t0;
    pthread_mutex_lock(&m->load_lock);
    for (;;) {
        uint64_t ended = m->loads_ended;
        if (m->loaded) {
            pthread_mutex_unlock(&m->load_lock);
            return SL_OK;
        }
        if (stopped(stop)) {
            pthread_mutex_unlock(&m->load_lock);
            return sl__errf(err, SL_ECLOSED, "mnist: stopped while waiting for the load");
        }
        if (!m->loading)
            break; /* this prepare loads */
        /* Another iterator is loading (without the lock): sleep until its
         * load ends or our own stop is asked for (mnist_wake). */
        while (m->loading && m->loads_ended == ended && !stopped(stop))
            pthread_cond_wait(&m->load_done, &m->load_lock);
        /* Its failure is ours too, unless it failed only because its own
         * iterator stopped: then this one loads instead. */
        if (m->loads_ended != ended && !m->loaded && !stopped(stop) &&
            m->load_err.status != SL_ECLOSED) {
            sl__err_copy(err, &m->load_err);
            rc = m->load_err.status;
            pthread_mutex_unlock(&m->load_lock);
            return rc;
        }
    }
    m->loading = 1;
    pthread_mutex_unlock(&m->load_lock);
    t0 = sl__now_ms();
    if (!m->images) {
        int64_t shape[4] = {src->num_rows, m->height, m->width, 1};
        rc = sl__tensor_alloc(&m->images, NULL, SL_UINT8, 4, shape);
        /* samples are read at random all over it (huge_pages.h) */
        if (rc == SL_OK)
            sl__huge_pages_advise(m->images->data, m->images->nbytes);
    }
    /* Each on its own: a retry after a failed allocation must not find one
     * without the other. */
    if (rc == SL_OK && !m->labels)
        m->labels = malloc((size_t)src->num_rows * sizeof *m->labels);
    if (rc != SL_OK || !m->labels) {
        rc = sl__errf(err, SL_ENOMEM, "mnist: out of memory for %lld images of %lldx%lld",
                      (long long)src->num_rows, (long long)m->height, (long long)m->width);
        goto done;
    }
    for (int p = 0; p < m->nparts && rc == SL_OK; p++) {
        const mnist_part *part = &m->parts[p];
        uint8_t *dst = (uint8_t *)m->images->data + (size_t)part->first * (size_t)(m->height * m->width);
        rc = sl__idx_read_payload(part->images_path, &part->images_hdr, dst, stop, err);
        if (rc == SL_OK)
            rc = load_labels(m, part, stop, err);
    }
done:
    pthread_mutex_lock(&m->load_lock);
    if (rc == SL_OK) {
        m->loaded = 1;
        m->load_ms = sl__now_ms() - t0;
        sl__err_clear(&m->load_err);
    } else {
        sl__err_copy(&m->load_err, err);
        m->load_err.status = rc;
    }
    m->loading = 0;
    m->loads_ended++;
    pthread_cond_broadcast(&m->load_done);
    pthread_mutex_unlock(&m->load_lock);
    return rc;
}

static int mnist_read(sl__source *src, int64_t index, sl__row *row, sl_pool *pool,
                      sl__error *err)
{
    mnist_source *m = (mnist_source *)src;
    size_t pixels = (size_t)(m->height * m->width);
    int64_t shape[3] = {m->height, m->width, 1};
    /* Borrowed: the iterator frees its rows before it releases the source,
     * and a row handed out takes its reference then. */
    int rc = sl__tensor_view_borrowed(&row->col[0], pool, m->images, (size_t)index * pixels,
                                      SL_UINT8, 3, shape);
    if (rc == SL_OK)
        rc = sl__tensor_alloc(&row->col[1], pool, SL_UINT32, 0, NULL);
    if (rc != SL_OK)
        return sl__errf(err, rc, "mnist: out of memory reading sample %lld", (long long)index);
    *(uint32_t *)row->col[1]->data = m->labels[index];
    return SL_OK;
}

static size_t mnist_size_hint(const sl__source *src, int64_t index)
{
    const mnist_source *m = (const mnist_source *)src;
    (void)index;
    return (size_t)(m->height * m->width) + sizeof(uint32_t);
}

static void mnist_describe(const sl__source *src, int64_t index, char *buf, size_t len)
{
    const mnist_source *m = (const mnist_source *)src;
    for (int p = 0; p < m->nparts; p++) {
        const mnist_part *part = &m->parts[p];
        if (index >= part->first && index < part->first + part->count) {
            snprintf(buf, len, "%s sample %lld", part->images_path,
                     (long long)(index - part->first));
            return;
        }
    }
    snprintf(buf, len, "sample %lld", (long long)index);
}

static double mnist_load_ms(const sl__source *src)
{
    mnist_source *m = (mnist_source *)src;
    double ms;
    pthread_mutex_lock(&m->load_lock);
    ms = m->load_ms;
    pthread_mutex_unlock(&m->load_lock);
    return ms;
}

static void mnist_wake(sl__source *src)
{
    mnist_source *m = (mnist_source *)src;
    pthread_mutex_lock(&m->load_lock);
    pthread_cond_broadcast(&m->load_done);
    pthread_mutex_unlock(&m->load_lock);
}

static void mnist_destroy(sl__source *src)
{
    mnist_source *m = (mnist_source *)src;
    for (int p = 0; p < 2; p++) {
        free(m->parts[p].images_path);
        free(m->parts[p].labels_path);
    }
    sl_tensor_release(m->images);
    free(m->labels);
    pthread_cond_destroy(&m->load_done);
    pthread_mutex_destroy(&m->load_lock);
}

static const sl__source_iface mnist_iface = {
    .kind = "mnist",
    .prepare = mnist_prepare,
    .wake = mnist_wake,
    .read = mnist_read,
    .size_hint = mnist_size_hint,
    .describe = mnist_describe,
    .load_ms = mnist_load_ms,
    .destroy = mnist_destroy,
};

/* The end of the first version's fields: fixed forever (core/options.h). */
static const size_t mnist_options_v1_size =
    offsetof(sl_mnist_options, sampler) + sizeof(sl_sampler_options);
/* No tail padding, so a caller's size covers only fields it knows; name the
 * last field here when one is appended. */
_Static_assert(sizeof(sl_mnist_options) ==
                   offsetof(sl_mnist_options, sampler) + sizeof(sl_sampler_options),
               "sl_mnist_options: name its last field here; no tail padding "
               "(core/options.h)");

void sl_mnist_options_init_sized(sl_mnist_options *o, size_t size)
{
    sl_mnist_options d;
    memset(&d, 0, sizeof d);
    d.dataset_dir = NULL;
    d.usage = SL_MNIST_ALL;
    sl_sampler_options_init(&d.sampler);
    sl__options_init(o, size, &d, sizeof d);
}

int sl__mnist_options_read(sl_mnist_options *dst, const sl_mnist_options *src, sl__error *err)
{
    int rc;
    sl_mnist_options_init(dst);
    rc = sl__options_read(dst, sizeof *dst, mnist_options_v1_size, src, "sl_mnist_options", err);
    if (rc == SL_OK)
        rc = sl__options_check_embedded(dst->sampler.size, sizeof dst->sampler,
                                        "sl_sampler_options", "sl_mnist_options.sampler", err);
    return rc;
}

int sl__mnist_source_new(sl__source **out, const sl_mnist_options *o, sl__error *err)
{
    mnist_source *m;
    int rc = SL_OK, e;
    *out = NULL;
    if (!o->dataset_dir)
        return sl__errf(err, SL_EINVAL, "mnist: dataset_dir is not set");
    if (o->usage != SL_MNIST_ALL && o->usage != SL_MNIST_TRAIN && o->usage != SL_MNIST_TEST)
        return sl__errf(err, SL_EINVAL, "mnist: usage must be train, test or all");
    m = calloc(1, sizeof *m);
    if (!m)
        return sl__errf(err, SL_ENOMEM, "mnist: out of memory");
    m->base.iface = &mnist_iface;
    atomic_init(&m->base.refs, 1);
    if ((e = pthread_mutex_init(&m->load_lock, NULL)) != 0) {
        free(m);
        return sl__pthread_errf(err, e, "mnist: pthread_mutex_init");
    }
    if ((e = pthread_cond_init(&m->load_done, NULL)) != 0) {
        pthread_mutex_destroy(&m->load_lock);
        free(m);
        return sl__pthread_errf(err, e, "mnist: pthread_cond_init");
    }
    if (o->usage == SL_MNIST_ALL) {
        /* As MindSpore: every split whose images are there (a folder of the
         * train files alone, as the seeds download, is all of it); with
         * neither, the train split's missing files are the error. */
        int train = split_present(o->dataset_dir, "train");
        int test = split_present(o->dataset_dir, "t10k");
        if (train || !test)
            rc = open_part(&m->parts[m->nparts++], o->dataset_dir, "train", err);
        if (rc == SL_OK && test)
            rc = open_part(&m->parts[m->nparts++], o->dataset_dir, "t10k", err);
    } else {
        const char *prefix = o->usage == SL_MNIST_TRAIN ? "train" : "t10k";
        rc = open_part(&m->parts[m->nparts++], o->dataset_dir, prefix, err);
    }
    if (rc == SL_OK) {
        m->height = m->parts[0].images_hdr.dims[1];
        m->width = m->parts[0].images_hdr.dims[2];
        for (int p = 0; p < m->nparts; p++) {
            mnist_part *part = &m->parts[p];
            if (part->images_hdr.dims[1] != m->height || part->images_hdr.dims[2] != m->width) {
                rc = sl__errf(err, SL_EFORMAT, "%s: images are %ux%u but %s has %lldx%lld",
                              part->images_path, part->images_hdr.dims[1],
                              part->images_hdr.dims[2], m->parts[0].images_path,
                              (long long)m->height, (long long)m->width);
                break;
            }
            part->first = m->base.num_rows;
            m->base.num_rows += part->count;
        }
    }
    if (rc == SL_OK)
        rc = sl__sampler_check(&o->sampler, m->base.num_rows, err);
    if (rc != SL_OK) {
        m->base.iface->destroy(&m->base);
        free(m);
        return rc;
    }
    m->base.sampler = o->sampler;
    m->base.ncols = 2;
    strcpy(m->base.names[0], "image");
    strcpy(m->base.names[1], "label");
    m->base.specs[0] = (sl_tensor_spec){SL_UINT8, 3, {m->height, m->width, 1}};
    m->base.specs[1] = (sl_tensor_spec){SL_UINT32, 0, {0}};
    snprintf(m->base.summary, sizeof m->base.summary, "mnist(%s, usage=%s, %lld rows)",
             o->dataset_dir, usage_name(o->usage), (long long)m->base.num_rows);
    *out = &m->base;
    return SL_OK;
}
