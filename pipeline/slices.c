/* slices.c: the slices source (NumpySlicesDataset): rows are slices of the
 * caller's arrays along their first dimension, never copied.
 *
 * Each column's array becomes one tensor over the caller's memory (lent:
 * sluice never frees it), and row i's column is a borrowed view of it at
 * i times the row's bytes, as MNIST's rows are views of its loaded file:
 * read-only, and no reference counter shared by every worker on every row.
 * A view handed out to the consumer takes a reference to its array's
 * tensor (sl__tensor_escape), so the arrays outlive the source as long as
 * a row does. The columns share one lender: when the last of their
 * tensors goes, the caller's release runs, once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/options.h"
#include "core/tensor_impl.h"
#include "pipeline/sampler.h"
#include "pipeline/source.h"

/* The caller's arrays: given back (release) when the last column tensor goes. */
typedef struct slices_owner {
    sl__lender lender; /* first: give_back gets this pointer */
    atomic_int left;   /* column tensors still alive */
    void (*release)(void *user);
    void *user;
} slices_owner;

typedef struct slices_source {
    sl__source base;
    sl_tensor *arrays[SL_MAX_COLUMNS]; /* one reference each */
    size_t row_bytes[SL_MAX_COLUMNS];
} slices_source;

static void owner_give_back(sl__lender *l)
{
    slices_owner *o = (slices_owner *)l;
    if (atomic_fetch_sub_explicit(&o->left, 1, memory_order_acq_rel) != 1)
        return;
    if (o->release)
        o->release(o->user);
    free(o);
}

static int slices_prepare(sl__source *src, const atomic_int *stop, sl__error *err)
{
    (void)src;
    (void)stop;
    (void)err;
    return SL_OK; /* the arrays are in memory already */
}

static int slices_read(sl__source *src, int64_t index, sl__row *row, sl_pool *pool,
                       sl__error *err)
{
    slices_source *s = (slices_source *)src;
    for (size_t c = 0; c < src->ncols; c++) {
        const sl_tensor *a = s->arrays[c];
        int rc = sl__tensor_view_borrowed(&row->col[c], pool, s->arrays[c],
                                          (size_t)index * s->row_bytes[c], a->dtype, a->ndim - 1,
                                          a->shape + 1);
        if (rc != SL_OK)
            return sl__errf(err, rc, "sample %lld: out of memory", (long long)index);
    }
    return SL_OK;
}

static size_t slices_size_hint(const sl__source *src, int64_t index)
{
    const slices_source *s = (const slices_source *)src;
    size_t n = 0;
    (void)index;
    for (size_t c = 0; c < src->ncols; c++)
        n += s->row_bytes[c];
    return n;
}

static void slices_describe(const sl__source *src, int64_t index, char *buf, size_t len)
{
    (void)src;
    snprintf(buf, len, "slice %lld", (long long)index);
}

static double slices_load_ms(const sl__source *src)
{
    (void)src;
    return 0;
}

static void slices_destroy(sl__source *src)
{
    slices_source *s = (slices_source *)src;
    for (size_t c = 0; c < SL_MAX_COLUMNS; c++)
        sl_tensor_release(s->arrays[c]);
}

static const sl__source_iface slices_iface = {
    .kind = "slices",
    .prepare = slices_prepare,
    .read = slices_read,
    .size_hint = slices_size_hint,
    .describe = slices_describe,
    .load_ms = slices_load_ms,
    .destroy = slices_destroy,
};

static const size_t slices_options_v1_size =
    offsetof(sl_slices_options, sampler) + sizeof(sl_sampler_options);
_Static_assert(sizeof(sl_slices_options) ==
                   offsetof(sl_slices_options, sampler) + sizeof(sl_sampler_options),
               "sl_slices_options: name its last field here; no tail padding "
               "(core/options.h)");

void sl_slices_options_init_sized(sl_slices_options *o, size_t size)
{
    sl_slices_options d;
    memset(&d, 0, sizeof d);
    sl_sampler_options_init(&d.sampler);
    sl__options_init(o, size, &d, sizeof d);
}

int sl__slices_options_read(sl_slices_options *dst, const sl_slices_options *src,
                            sl__error *err)
{
    sl_slices_options_init(dst);
    return sl__source_options_read(dst, sizeof *dst, slices_options_v1_size, src,
                                   "sl_slices_options", offsetof(sl_slices_options, sampler), err);
}

int sl__source_set_columns(sl__source *src, size_t ncols, const char *const *names,
                           sl__error *err)
{
    if (ncols < 1 || ncols > SL_MAX_COLUMNS)
        return sl__errf(err, SL_EINVAL, "%zu columns: 1 to %d are supported", ncols,
                        SL_MAX_COLUMNS);
    for (size_t c = 0; c < ncols; c++) {
        if (!names[c] || !names[c][0])
            return sl__errf(err, SL_EINVAL, "column %zu has no name", c);
        if (strlen(names[c]) >= SL_COLUMN_NAME_LEN)
            return sl__errf(err, SL_EINVAL, "column name '%s' is longer than %d bytes", names[c],
                            SL_COLUMN_NAME_LEN - 1);
        for (size_t d = 0; d < c; d++)
            if (strcmp(names[c], names[d]) == 0)
                return sl__errf(err, SL_EINVAL, "two columns are named '%s'", names[c]);
        strcpy(src->names[c], names[c]);
    }
    src->ncols = ncols;
    return SL_OK;
}

/* Checks the columns' arrays: dtype, dims, equal first dimensions. */
static int check_columns(const sl_slices_options *o, sl__error *err)
{
    if (!o->columns || o->ncols == 0)
        return sl__errf(err, SL_EINVAL, "no columns given");
    for (size_t c = 0; c < o->ncols; c++) {
        const sl_slices_column *col = &o->columns[c];
        char s0[96], s1[96];
        size_t numel, nbytes;
        int rc;
        if (col->ndim < 1 || col->ndim > SL_MAX_DIMS)
            return sl__errf(err, SL_EINVAL, "column '%s': ndim %d, must be 1 to %d (the first "
                                            "dimension is the rows)",
                            col->name ? col->name : "?", col->ndim, SL_MAX_DIMS);
        rc = sl__shape_numel(col->ndim, col->shape, col->dtype, &numel, &nbytes);
        if (rc != SL_OK)
            return sl__errf(err, rc, "column '%s': bad dtype or shape %s",
                            col->name ? col->name : "?",
                            sl_shape_str(s0, sizeof s0, col->ndim, col->shape));
        if (!col->data && nbytes > 0)
            return sl__errf(err, SL_EINVAL, "column '%s': data is NULL",
                            col->name ? col->name : "?");
        if (col->shape[0] != o->columns[0].shape[0])
            return sl__errf(err, SL_EINVAL, "column '%s' has %lld rows, shape %s, but column "
                                            "'%s' has %lld, shape %s: every column is sliced "
                                            "along its first dimension",
                            col->name ? col->name : "?", (long long)col->shape[0],
                            sl_shape_str(s0, sizeof s0, col->ndim, col->shape),
                            o->columns[0].name ? o->columns[0].name : "?",
                            (long long)o->columns[0].shape[0],
                            sl_shape_str(s1, sizeof s1, o->columns[0].ndim,
                                         o->columns[0].shape));
    }
    return SL_OK;
}

int sl__slices_source_new(sl__source **out, const sl_slices_options *o, sl__error *err)
{
    slices_source *s;
    slices_owner *owner;
    const char *names[SL_MAX_COLUMNS];
    int rc = check_columns(o, err);
    *out = NULL;
    if (rc != SL_OK)
        return rc;
    s = calloc(1, sizeof *s);
    owner = calloc(1, sizeof *owner);
    if (!s || !owner) {
        free(s);
        free(owner);
        return sl__errf(err, SL_ENOMEM, "out of memory");
    }
    s->base.iface = &slices_iface;
    atomic_init(&s->base.refs, 1);
    s->base.num_rows = o->columns[0].shape[0];
    for (size_t c = 0; c < o->ncols && c < SL_MAX_COLUMNS; c++)
        names[c] = o->columns[c].name;
    rc = sl__source_set_columns(&s->base, o->ncols, names, err);
    if (rc == SL_OK)
        rc = sl__sampler_check(&o->sampler, s->base.num_rows, err);
    if (rc != SL_OK) {
        free(owner);
        free(s);
        return rc;
    }
    owner->lender.give_back = owner_give_back;
    owner->release = NULL; /* set once every column tensor exists */
    atomic_init(&owner->left, 0);
    for (size_t c = 0; c < o->ncols; c++) {
        const sl_slices_column *col = &o->columns[c];
        rc = sl__tensor_lent(&s->arrays[c], NULL, col->dtype, col->ndim, col->shape,
                             (void *)col->data, &owner->lender);
        if (rc != SL_OK)
            break;
        atomic_fetch_add_explicit(&owner->left, 1, memory_order_relaxed);
        s->row_bytes[c] = s->base.num_rows ? s->arrays[c]->nbytes / (size_t)s->base.num_rows : 0;
        s->base.specs[c] = (sl_tensor_spec){col->dtype, col->ndim - 1, {0}};
        memcpy(s->base.specs[c].shape, col->shape + 1,
               (size_t)(col->ndim - 1) * sizeof col->shape[0]);
    }
    if (rc != SL_OK) {
        /* The caller keeps its arrays: the last give_back frees the owner
         * alone (release is still NULL). */
        if (atomic_load(&owner->left) == 0)
            free(owner);
        slices_destroy(&s->base);
        free(s);
        return sl__errf(err, rc, "out of memory");
    }
    owner->release = o->release;
    owner->user = o->user;
    s->base.sampler = o->sampler;
    snprintf(s->base.summary, sizeof s->base.summary, "slices(%zu columns, %lld rows)",
             o->ncols, (long long)s->base.num_rows);
    *out = &s->base;
    return SL_OK;
}
