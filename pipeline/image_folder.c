/* image_folder.c: ImageFolderDataset. One sub-folder per class; classes
 * sorted by name (or given by a class indexing), files sorted by name within
 * a class. Reading a sample reads its file's bytes into a pooled tensor;
 * decoding is a map stage the dataset adds after this source, so it runs in
 * parallel workers. Yields `image` uint8 (n,) and `label` int32 (). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/options.h"
#include "core/tensor_impl.h"
#include "pipeline/sampler.h"
#include "pipeline/source.h"

typedef struct folder_sample {
    char *path;
    int32_t label;
    size_t size; /* the file's size when the folder was scanned */
} folder_sample;

typedef struct folder_source {
    sl__source base;
    char *dir;
    folder_sample *samples;
    size_t nsamples, cap;
} folder_source;

typedef struct name_list {
    char **names;
    size_t n, cap;
} name_list;

static void name_list_free(name_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
    l->names = NULL;
    l->n = l->cap = 0;
}

static int name_list_add(name_list *l, const char *name)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        char **names = realloc(l->names, cap * sizeof *names);
        if (!names)
            return SL_ENOMEM;
        l->names = names;
        l->cap = cap;
    }
    l->names[l->n] = strdup(name);
    if (!l->names[l->n])
        return SL_ENOMEM;
    l->n++;
    return SL_OK;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int has_extension(const char *name, const char *const *extensions)
{
    size_t len = strlen(name);
    if (!extensions)
        return 1;
    for (size_t i = 0; extensions[i]; i++) {
        size_t elen = strlen(extensions[i]);
        if (len >= elen && strcasecmp(name + len - elen, extensions[i]) == 0)
            return 1;
    }
    return 0;
}

/* Lists the entries of dir that are directories (want_dirs) or regular
 * files with one of the extensions, sorted; dot files are skipped. */
static int list_dir(const char *dir, int want_dirs, const char *const *extensions, name_list *out,
                    sl__error *err)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int rc = SL_OK;
    if (!d)
        return sl__errf(err, SL_EIO, "%s: %s", dir, strerror(errno));
    while ((e = readdir(d)) != NULL) {
        char *path;
        struct stat st;
        if (e->d_name[0] == '.')
            continue;
        if (asprintf(&path, "%s/%s", dir, e->d_name) < 0) {
            rc = sl__errf(err, SL_ENOMEM, "%s: out of memory", dir);
            break;
        }
        if (stat(path, &st) == 0 && (want_dirs ? S_ISDIR(st.st_mode)
                                               : S_ISREG(st.st_mode) &&
                                                     has_extension(e->d_name, extensions))) {
            if (name_list_add(out, e->d_name) != SL_OK)
                rc = sl__errf(err, SL_ENOMEM, "%s: out of memory", dir);
        }
        free(path);
        if (rc != SL_OK)
            break;
    }
    closedir(d);
    if (rc == SL_OK && out->n > 1)
        qsort(out->names, out->n, sizeof *out->names, compare_names);
    return rc;
}

static int add_sample(folder_source *f, char *path, int32_t label)
{
    struct stat st;
    if (f->nsamples == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 256;
        folder_sample *s = realloc(f->samples, cap * sizeof *s);
        if (!s)
            return SL_ENOMEM;
        f->samples = s;
        f->cap = cap;
    }
    f->samples[f->nsamples].path = path;
    f->samples[f->nsamples].label = label;
    f->samples[f->nsamples].size = stat(path, &st) == 0 ? (size_t)st.st_size : 0;
    f->nsamples++;
    return SL_OK;
}

static int add_class(folder_source *f, const char *name, int32_t label,
                     const char *const *extensions, sl__class_info *info, sl__error *err)
{
    name_list files = {0};
    char *class_dir;
    int rc;
    if (asprintf(&class_dir, "%s/%s", f->dir, name) < 0)
        return sl__errf(err, SL_ENOMEM, "image folder: out of memory");
    rc = list_dir(class_dir, 0, extensions, &files, err);
    if (rc == SL_OK && files.n == 0)
        rc = sl__errf(err, SL_EFORMAT, "%s: class folder '%s' holds no image files%s", class_dir,
                      name, extensions ? " with the accepted extensions" : "");
    for (size_t i = 0; rc == SL_OK && i < files.n; i++) {
        char *path;
        if (asprintf(&path, "%s/%s", class_dir, files.names[i]) < 0 ||
            add_sample(f, path, label) != SL_OK)
            rc = sl__errf(err, SL_ENOMEM, "image folder: out of memory");
    }
    info->name = strdup(name);
    info->label = label;
    info->count = (int64_t)files.n;
    if (!info->name && rc == SL_OK)
        rc = sl__errf(err, SL_ENOMEM, "image folder: out of memory");
    name_list_free(&files);
    free(class_dir);
    return rc;
}

static int folder_prepare(sl__source *src, const atomic_int *stop, sl__error *err)
{
    (void)src;
    (void)stop;
    (void)err;
    return SL_OK; /* files are read one by one */
}

static int folder_read(sl__source *src, int64_t index, sl__row *row, sl_pool *pool,
                       sl__error *err)
{
    const folder_sample *s = &((folder_source *)src)->samples[index];
    struct stat st;
    int64_t size;
    size_t got = 0;
    int rc;
    int fd = open(s->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sl__errf(err, SL_EIO, "%s: %s", s->path, strerror(errno));
    if (fstat(fd, &st) != 0) {
        rc = sl__errf(err, SL_EIO, "%s: %s", s->path, strerror(errno));
        close(fd);
        return rc;
    }
    size = (int64_t)st.st_size;
    rc = sl__tensor_alloc(&row->col[0], pool, SL_UINT8, 1, &size);
    if (rc != SL_OK) {
        close(fd);
        return sl__errf(err, rc, "%s: out of memory for %lld bytes", s->path, (long long)size);
    }
    while (got < (size_t)size) {
        ssize_t r = read(fd, (char *)row->col[0]->data + got, (size_t)size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = sl__errf(err, SL_EIO, "%s: %s", s->path,
                          r < 0 ? strerror(errno) : "file shrank while being read");
            close(fd);
            return rc;
        }
        got += (size_t)r;
    }
    close(fd);
    rc = sl__tensor_alloc(&row->col[1], pool, SL_INT32, 0, NULL);
    if (rc != SL_OK)
        return sl__errf(err, rc, "%s: out of memory", s->path);
    *(int32_t *)row->col[1]->data = s->label;
    return SL_OK;
}

static size_t folder_size_hint(const sl__source *src, int64_t index)
{
    return ((const folder_source *)src)->samples[index].size + sizeof(int32_t);
}

static void folder_describe(const sl__source *src, int64_t index, char *buf, size_t len)
{
    const folder_source *f = (const folder_source *)src;
    if (index >= 0 && (size_t)index < f->nsamples)
        snprintf(buf, len, "%s", f->samples[index].path);
    else
        snprintf(buf, len, "sample %lld", (long long)index);
}

static double folder_load_ms(const sl__source *src)
{
    (void)src;
    return 0;
}

static void folder_destroy(sl__source *src)
{
    folder_source *f = (folder_source *)src;
    for (size_t i = 0; i < f->nsamples; i++)
        free(f->samples[i].path);
    free(f->samples);
    for (size_t i = 0; i < src->nclasses; i++)
        free(src->classes[i].name);
    free(src->classes);
    free(f->dir);
}

static const sl__source_iface folder_iface = {
    .kind = "image_folder",
    .prepare = folder_prepare,
    .read = folder_read,
    .size_hint = folder_size_hint,
    .describe = folder_describe,
    .load_ms = folder_load_ms,
    .destroy = folder_destroy,
};

/* The end of the first version's fields: fixed forever (core/options.h). */
static const size_t folder_options_v1_size =
    offsetof(sl_image_folder_options, sampler) + sizeof(sl_sampler_options);
/* No tail padding, so a caller's size covers only fields it knows; name the
 * last field here when one is appended. */
_Static_assert(sizeof(sl_image_folder_options) ==
                   offsetof(sl_image_folder_options, decode_max_pixels) + sizeof(uint64_t),
               "sl_image_folder_options: name its last field here; no tail padding "
               "(core/options.h)");

void sl_image_folder_options_init_sized(sl_image_folder_options *o, size_t size)
{
    sl_image_folder_options d;
    memset(&d, 0, sizeof d);
    d.num_parallel_workers = 2;
    sl_sampler_options_init(&d.sampler);
    d.decode_max_pixels = SL_DECODE_MAX_PIXELS_DEFAULT;
    sl__options_init(o, size, &d, sizeof d);
}

int sl__image_folder_options_read(sl_image_folder_options *dst,
                                  const sl_image_folder_options *src, sl__error *err)
{
    int rc;
    sl_image_folder_options_init(dst);
    rc = sl__options_read(dst, sizeof *dst, folder_options_v1_size, src,
                          "sl_image_folder_options", err);
    if (rc == SL_OK)
        rc = sl__options_check_embedded(dst->sampler.size, sizeof dst->sampler,
                                        "sl_sampler_options", "sl_image_folder_options.sampler",
                                        err);
    return rc;
}

static int scan_classes(folder_source *f, const sl_image_folder_options *o, sl__error *err)
{
    name_list classes = {0};
    int rc = SL_OK;
    size_t n = o->num_classes;
    if (!o->class_names) {
        rc = list_dir(f->dir, 1, NULL, &classes, err);
        if (rc == SL_OK && classes.n == 0)
            rc = sl__errf(err, SL_EFORMAT, "%s: no class folders (expected one sub-folder per class)",
                          f->dir);
        n = classes.n;
    }
    if (rc == SL_OK) {
        f->base.classes = calloc(n, sizeof *f->base.classes);
        if (!f->base.classes)
            rc = sl__errf(err, SL_ENOMEM, "image folder: out of memory");
    }
    for (size_t i = 0; rc == SL_OK && i < n; i++) {
        const char *name = o->class_names ? o->class_names[i] : classes.names[i];
        int32_t label = o->class_names ? o->class_indices[i] : (int32_t)i;
        f->base.nclasses++;
        rc = add_class(f, name, label, o->extensions, &f->base.classes[i], err);
    }
    name_list_free(&classes);
    return rc;
}

int sl__image_folder_source_new(sl__source **out, const sl_image_folder_options *o,
                                sl__error *err)
{
    folder_source *f;
    int rc;
    *out = NULL;
    if (!o->dataset_dir)
        return sl__errf(err, SL_EINVAL, "image folder: dataset_dir is not set");
    if (o->class_names && (!o->class_indices || o->num_classes == 0))
        return sl__errf(err, SL_EINVAL, "image folder: a class indexing needs names, indices and a count");
    for (size_t i = 0; o->class_names && i < o->num_classes; i++)
        if (o->class_indices[i] < 0)
            return sl__errf(err, SL_EINVAL, "image folder: class '%s' has negative label %d",
                            o->class_names[i], (int)o->class_indices[i]);
    f = calloc(1, sizeof *f);
    if (!f || !(f->dir = strdup(o->dataset_dir))) {
        free(f);
        return sl__errf(err, SL_ENOMEM, "image folder: out of memory");
    }
    f->base.iface = &folder_iface;
    atomic_init(&f->base.refs, 1);
    rc = scan_classes(f, o, err);
    f->base.num_rows = (int64_t)f->nsamples;
    if (rc == SL_OK)
        rc = sl__sampler_check(&o->sampler, f->base.num_rows, err);
    if (rc != SL_OK) {
        folder_destroy(&f->base);
        free(f);
        return rc;
    }
    f->base.sampler = o->sampler;
    f->base.ncols = 2;
    strcpy(f->base.names[0], "image");
    strcpy(f->base.names[1], "label");
    f->base.specs[0] = (sl_tensor_spec){SL_UINT8, 1, {-1}};
    f->base.specs[1] = (sl_tensor_spec){SL_INT32, 0, {0}};
    snprintf(f->base.summary, sizeof f->base.summary, "image_folder(%s, %zu classes, %lld rows)",
             o->dataset_dir, f->base.nclasses, (long long)f->base.num_rows);
    *out = &f->base;
    return SL_OK;
}
