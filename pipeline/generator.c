/* generator.c: the generator source (GeneratorDataset): rows made by the
 * caller's function, by index. The engine reads it as any other source
 * (in the sampler's order, shuffled and sharded, by the workers in
 * parallel), so the function must be thread-safe; the Python binding's
 * takes the GIL, so its Python runs one call at a time.
 *
 * in_order is for a stream that cannot seek (a Python generator): the
 * source is then read by the source stage alone, one call at a time, in
 * the sampler's order, which must be 0, 1, 2, ... (no shuffle, no shards;
 * num_samples ends each pass early). Replacing a bad sample would read
 * another index out of order, so an iterator refuses it (iterator_plan.c). Each row is checked against the declared specs, so that
 * the nodes after it (a batch, a device queue) may trust them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/options.h"
#include "core/tensor_impl.h"
#include "pipeline/sampler.h"
#include "pipeline/source.h"

typedef struct generator_source {
    sl__source base;
    sl_generator_read_fn read;
    void *user;
    void (*release)(void *user);
} generator_source;

static int generator_prepare(sl__source *src, const atomic_int *stop, sl__error *err)
{
    (void)src;
    (void)stop;
    (void)err;
    return SL_OK;
}

/* Whether t matches spec (sizes of -1 match any). */
static int spec_matches(const sl_tensor_spec *spec, const sl_tensor *t)
{
    if (t->dtype != spec->dtype || t->ndim != spec->ndim)
        return 0;
    for (int d = 0; d < spec->ndim; d++)
        if (spec->shape[d] >= 0 && spec->shape[d] != t->shape[d])
            return 0;
    return 1;
}

static int check_row(const sl__source *src, int64_t index, const sl__row *row, sl__error *err)
{
    for (size_t c = 0; c < src->ncols; c++) {
        const sl_tensor *t = row->col[c];
        const sl_tensor_spec *spec = &src->specs[c];
        char got[96], want[96];
        if (!t)
            return sl__errf(err, SL_EFORMAT, "sample %lld: column '%s' was not set",
                            (long long)index, src->names[c]);
        if (!spec_matches(spec, t))
            return sl__errf(err, SL_EFORMAT, "sample %lld: column '%s' is %s %s, "
                                             "but the column is %s %s (-1: any size)",
                            (long long)index, src->names[c], sl_dtype_name(t->dtype),
                            sl_shape_str(got, sizeof got, t->ndim, t->shape),
                            sl_dtype_name(spec->dtype),
                            sl_shape_str(want, sizeof want, spec->ndim, spec->shape));
    }
    return SL_OK;
}

static int generator_read(sl__source *src, int64_t index, sl__row *row, sl_pool *pool,
                          sl__error *err)
{
    generator_source *g = (generator_source *)src;
    sl_tensor *cols[SL_MAX_COLUMNS] = {NULL};
    char msg[SL_ERRMSG_LEN - 64];
    int rc;
    (void)pool; /* the function's tensors are its own (heap) */
    msg[0] = '\0';
    rc = g->read(g->user, index, cols, src->ncols, msg, sizeof msg);
    for (size_t c = 0; c < src->ncols; c++)
        row->col[c] = cols[c];
    if (rc != 0)
        /* SL_ECANCELED: the function can no longer run (its interpreter is
         * going away): a stop, not a bad sample to skip */
        return sl__errf(err, rc == SL_ECANCELED ? SL_ECANCELED : SL_EFORMAT, "sample %lld: %s",
                        (long long)index,
                        msg[0] ? msg : "the function failed (it gave no reason)");
    return check_row(src, index, row, err);
}

static size_t generator_size_hint(const sl__source *src, int64_t index)
{
    size_t n = 0;
    (void)index;
    for (size_t c = 0; c < src->ncols; c++) {
        size_t bytes = sl_dtype_size(src->specs[c].dtype);
        for (int d = 0; d < src->specs[c].ndim; d++)
            bytes *= src->specs[c].shape[d] > 0 ? (size_t)src->specs[c].shape[d] : 1;
        n += bytes;
    }
    return n;
}

static void generator_describe(const sl__source *src, int64_t index, char *buf, size_t len)
{
    (void)src;
    snprintf(buf, len, "generator sample %lld", (long long)index);
}

static double generator_load_ms(const sl__source *src)
{
    (void)src;
    return 0;
}

static void generator_destroy(sl__source *src)
{
    generator_source *g = (generator_source *)src;
    if (g->release)
        g->release(g->user);
}

static const sl__source_iface generator_iface = {
    .kind = "generator",
    .prepare = generator_prepare,
    .read = generator_read,
    .size_hint = generator_size_hint,
    .describe = generator_describe,
    .load_ms = generator_load_ms,
    .destroy = generator_destroy,
};

static const size_t generator_options_v1_size =
    offsetof(sl_generator_options, sampler) + sizeof(sl_sampler_options);
_Static_assert(sizeof(sl_generator_options) ==
                   offsetof(sl_generator_options, sampler) + sizeof(sl_sampler_options),
               "sl_generator_options: name its last field here; no tail padding "
               "(core/options.h)");

void sl_generator_options_init_sized(sl_generator_options *o, size_t size)
{
    sl_generator_options d;
    memset(&d, 0, sizeof d);
    sl_sampler_options_init(&d.sampler);
    sl__options_init(o, size, &d, sizeof d);
}

int sl__generator_options_read(sl_generator_options *dst, const sl_generator_options *src,
                               sl__error *err)
{
    sl_generator_options_init(dst);
    return sl__source_options_read(dst, sizeof *dst, generator_options_v1_size, src,
                                   "sl_generator_options",
                                   offsetof(sl_generator_options, sampler), err);
}

static int check_options(const sl_generator_options *o, sl__error *err)
{
    if (!o->read)
        return sl__errf(err, SL_EINVAL, "read (the function making rows) is not set");
    if (o->num_rows < 0)
        return sl__errf(err, SL_EINVAL, "num_rows must be >= 0, got %lld",
                        (long long)o->num_rows);
    if (!o->column_names || !o->column_specs)
        return sl__errf(err, SL_EINVAL, "column_names and column_specs must be set");
    if (o->in_order && (o->sampler.shuffle || o->sampler.num_shards != 1))
        return sl__errf(err, SL_EINVAL, "a source read in order (in_order 1) can neither "
                                        "shuffle nor be sharded: set sampler.shuffle 0 and "
                                        "num_shards 1");
    for (size_t c = 0; c < o->ncols && c < SL_MAX_COLUMNS; c++) {
        const sl_tensor_spec *s = &o->column_specs[c];
        if ((unsigned)s->dtype >= SL_DTYPE_COUNT || s->ndim < 0 || s->ndim > SL_MAX_DIMS)
            return sl__errf(err, SL_EINVAL, "column %zu: bad spec (dtype %d, ndim %d)", c,
                            (int)s->dtype, s->ndim);
        for (int d = 0; d < s->ndim; d++)
            if (s->shape[d] < -1)
                return sl__errf(err, SL_EINVAL, "column %zu: size %lld (-1 is any size)", c,
                                (long long)s->shape[d]);
    }
    return SL_OK;
}

int sl__generator_source_new(sl__source **out, const sl_generator_options *o, sl__error *err)
{
    generator_source *g;
    int rc = check_options(o, err);
    *out = NULL;
    if (rc != SL_OK)
        return rc;
    g = calloc(1, sizeof *g);
    if (!g)
        return sl__errf(err, SL_ENOMEM, "out of memory");
    g->base.iface = &generator_iface;
    atomic_init(&g->base.refs, 1);
    g->base.num_rows = o->num_rows;
    g->base.in_order = o->in_order != 0;
    rc = sl__source_set_columns(&g->base, o->ncols, o->column_names, err);
    if (rc == SL_OK)
        rc = sl__sampler_check(&o->sampler, o->num_rows, err);
    if (rc != SL_OK) {
        free(g);
        return rc;
    }
    memcpy(g->base.specs, o->column_specs, o->ncols * sizeof *o->column_specs);
    g->base.sampler = o->sampler;
    g->read = o->read;
    g->user = o->user;
    g->release = o->release; /* from here on the source owns user */
    snprintf(g->base.summary, sizeof g->base.summary, "generator(%zu columns, %lld rows%s)",
             o->ncols, (long long)o->num_rows, o->in_order ? ", in order" : "");
    *out = &g->base;
    return SL_OK;
}
