/* subset.c: a source that is some samples of another, for sl_dataset_split
 * (dataset.h). It reads through its parent with its own index list, so the
 * sampler, the bad-sample handling and the sizes work on a part unchanged:
 * the part's sampler shuffles and shards the part's samples alone. The
 * parent is shared (and loaded once) by all the parts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/options.h"
#include "core/rng.h"
#include "pipeline/dataset_impl.h"
#include "pipeline/sampler.h"
#include "pipeline/subset.h"

typedef struct subset_source {
    sl__source base;
    sl__source_iface iface; /* the parent's kind, so messages name it */
    sl__source *parent;     /* a reference */
    int64_t *indices;       /* (num_rows,) parent's sample of each of ours */
} subset_source;

static sl__source *parent_of(const sl__source *src)
{
    return ((const subset_source *)src)->parent;
}

static int64_t parent_index(const sl__source *src, int64_t index)
{
    return ((const subset_source *)src)->indices[index];
}

static int subset_prepare(sl__source *src, const atomic_int *stop, sl__error *err)
{
    sl__source *p = parent_of(src);
    return p->iface->prepare(p, stop, err);
}

static void subset_wake(sl__source *src)
{
    sl__source *p = parent_of(src);
    if (p->iface->wake)
        p->iface->wake(p);
}

static int subset_read(sl__source *src, int64_t index, sl__row *row, sl_pool *pool,
                       sl__error *err)
{
    sl__source *p = parent_of(src);
    return p->iface->read(p, parent_index(src, index), row, pool, err);
}

static size_t subset_size_hint(const sl__source *src, int64_t index)
{
    const sl__source *p = parent_of(src);
    return p->iface->size_hint(p, parent_index(src, index));
}

static void subset_describe(const sl__source *src, int64_t index, char *buf, size_t len)
{
    const sl__source *p = parent_of(src);
    p->iface->describe(p, parent_index(src, index), buf, len);
}

static double subset_load_ms(const sl__source *src)
{
    const sl__source *p = parent_of(src);
    return p->iface->load_ms(p);
}

static void subset_destroy(sl__source *src)
{
    subset_source *s = (subset_source *)src;
    sl__source_release(s->parent);
    free(s->indices);
}

int sl__subset_source_new(sl__source **out, sl__source *parent, const int64_t *indices,
                          int64_t n, const sl_sampler_options *sampler, sl__error *err)
{
    subset_source *s;
    int rc;
    *out = NULL;
    rc = sl__sampler_check(sampler, n, err);
    if (rc != SL_OK)
        return rc;
    s = calloc(1, sizeof *s);
    if (!s || !(s->indices = malloc((size_t)(n ? n : 1) * sizeof *s->indices))) {
        free(s);
        return sl__errf(err, SL_ENOMEM, "split: out of memory");
    }
    memcpy(s->indices, indices, (size_t)n * sizeof *indices);
    s->iface = (sl__source_iface){parent->iface->kind, subset_prepare, subset_wake, subset_read,
                                  subset_size_hint, subset_describe, subset_load_ms,
                                  subset_destroy};
    s->base.iface = &s->iface;
    atomic_init(&s->base.refs, 1);
    s->base.num_rows = n;
    s->base.sampler = *sampler;
    s->base.ncols = parent->ncols;
    memcpy(s->base.names, parent->names, sizeof s->base.names);
    memcpy(s->base.specs, parent->specs, sizeof s->base.specs);
    /* The classes stay the parent's (it outlives us); their counts are the
     * whole source's. */
    s->base.classes = parent->classes;
    s->base.nclasses = parent->nclasses;
    snprintf(s->base.summary, sizeof s->base.summary, "%.200s, split part of %lld rows",
             parent->summary, (long long)n);
    sl__source_retain(parent);
    s->parent = parent;
    *out = &s->base;
    return SL_OK;
}

/* The parent's samples in split order: a permutation fixed by seed, or
 * 0, 1, 2, ... */
static int split_order(int64_t **out, int64_t n, int randomize, uint64_t seed)
{
    int64_t *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    sl_rng rng;
    *out = order;
    if (!order)
        return SL_ENOMEM;
    for (int64_t i = 0; i < n; i++)
        order[i] = i;
    if (!randomize)
        return SL_OK;
    sl__rng_seed(&rng, seed, 0x5b117, 0, 0);
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)sl__rng_below(&rng, (uint64_t)i + 1);
        int64_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    return SL_OK;
}

/* Why ds cannot be split, in err, or SL_OK. */
static int check_splittable(sl_dataset *ds, const int64_t *sizes, size_t nparts)
{
    const sl__source *src = ds->source;
    int64_t total = 0;
    if (!src)
        return sl__errf(&ds->error, SL_ESTATE, "split: the dataset has no source yet");
    /* Maps take each row alone, so a part of the mapped rows is the map of
     * a part of the source's (ImageFolderDataset(decode=True) is one). */
    for (size_t i = 0; i < ds->nnodes; i++)
        if (ds->nodes[i].kind != SL__NODE_MAP)
            return sl__errf(&ds->error, SL_EINVAL,
                            "split: the dataset has a %s after its source; split the source "
                            "(and maps) and append shuffle, batch, ... to each part",
                            ds->nodes[i].kind == SL__NODE_BATCH     ? "batch"
                            : ds->nodes[i].kind == SL__NODE_SHUFFLE ? "shuffle"
                            : ds->nodes[i].kind == SL__NODE_REPEAT  ? "repeat"
                            : ds->nodes[i].kind == SL__NODE_TAKE    ? "take"
                                                                     : "skip");
    if (src->sampler.num_shards > 1)
        return sl__errf(&ds->error, SL_EINVAL,
                        "split: the dataset is sharded (%lld shards) and must not be, as "
                        "MindSpore's; shard the parts instead (their sampler)",
                        (long long)src->sampler.num_shards);
    if (src->sampler.num_samples > 0)
        return sl__errf(&ds->error, SL_EINVAL,
                        "split: the source has num_samples = %lld, whose samples change every "
                        "epoch when shuffled; split the whole source and take from a part",
                        (long long)src->sampler.num_samples);
    if (nparts == 0)
        return sl__errf(&ds->error, SL_EINVAL, "split: no sizes given");
    for (size_t i = 0; i < nparts; i++) {
        if (sizes[i] < 1)
            return sl__errf(&ds->error, SL_EINVAL, "split: size %zu is %lld; every part needs "
                            "at least one row", i, (long long)sizes[i]);
        if (sizes[i] > src->num_rows - total)
            return sl__errf(&ds->error, SL_EINVAL, "split: the sizes add up to more than the "
                            "dataset's %lld rows", (long long)src->num_rows);
        total += sizes[i];
    }
    if (total != src->num_rows)
        return sl__errf(&ds->error, SL_EINVAL,
                        "split: the sizes add up to %lld but the dataset has %lld rows",
                        (long long)total, (long long)src->num_rows);
    return SL_OK;
}

int sl_dataset_split(sl_dataset *ds, const int64_t *sizes, size_t nparts, int randomize,
                     const sl_sampler_options *sampler, sl_dataset **parts)
{
    sl_sampler_options o;
    int64_t *order = NULL, first = 0;
    size_t made = 0;
    int rc;
    for (size_t i = 0; i < nparts; i++)
        parts[i] = NULL;
    rc = check_splittable(ds, sizes, nparts);
    if (rc != SL_OK)
        return rc;
    o = ds->source->sampler;
    if (sampler) {
        /* Never grows (sources.h): its size must be this library's. */
        rc = sl__options_check_embedded(sampler->size, sizeof *sampler, "sl_sampler_options",
                                        "sl_dataset_split's sampler", &ds->error);
        if (rc != SL_OK)
            return rc;
        o = *sampler;
    }
    if (split_order(&order, ds->source->num_rows, randomize, ds->seed) != SL_OK)
        return sl__errf(&ds->error, SL_ENOMEM, "split: out of memory");
    for (made = 0; made < nparts; made++) {
        sl__source *src;
        rc = sl__subset_source_new(&src, ds->source, order + first, sizes[made], &o, &ds->error);
        if (rc == SL_OK && (rc = sl_dataset_copy(&parts[made], ds)) != SL_OK) {
            sl__source_release(src);
            sl__errf(&ds->error, rc, "split: out of memory");
        }
        if (rc != SL_OK) {
            sl__err_prefix(&ds->error, "split, part %zu: ", made);
            break;
        }
        sl__dataset_replace_source(parts[made], src);
        first += sizes[made];
    }
    free(order);
    if (rc != SL_OK)
        for (size_t i = 0; i < made; i++) {
            sl_dataset_free(parts[i]);
            parts[i] = NULL;
        }
    else
        sl__err_clear(&ds->error);
    return rc;
}
