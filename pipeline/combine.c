/* combine.c: concat and zip (include/sluice/combine.h). Describing one
 * checks the parts' columns and makes a source that holds copies of them;
 * running one (combine.h) makes an iterator per part and takes their rows:
 * a concat each part's epoch in turn, a zip one row of every part side by
 * side until the shortest part's epoch ends. */
#include "pipeline/combine.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/combine.h"
#include "pipeline/dataset_impl.h"

typedef struct combine_source {
    sl__source base;
    int zip;
    size_t nparts;
    sl_dataset **parts;    /* (nparts,) copies, owned */
    /* Making an iterator writes its part's last error: one at a time, as
     * iterators of several copies of the combined dataset share it. */
    pthread_mutex_t lock;
} combine_source;

/* --- the source ------------------------------------------------------------------ */

static int combine_prepare(sl__source *src, const atomic_int *stop, sl__error *err)
{
    (void)src;
    (void)stop;
    (void)err;
    return SL_OK; /* each part's iterator loads its own source */
}

static int combine_read(sl__source *src, int64_t index, sl__row *row, sl_pool *pool,
                        sl__error *err)
{
    (void)row;
    (void)pool;
    /* Rows come from the parts' iterators (sl__combine_next), in order;
     * nothing reads one by its index. */
    return sl__errf(err, SL_ESTATE, "%s: row %lld cannot be read alone", src->iface->kind,
                    (long long)index);
}

static size_t combine_size_hint(const sl__source *src, int64_t index)
{
    (void)src;
    (void)index;
    return 0;
}

static void combine_describe(const sl__source *src, int64_t index, char *buf, size_t len)
{
    snprintf(buf, len, "%s row %lld of the epoch", src->iface->kind, (long long)index);
}

static double combine_load_ms(const sl__source *src)
{
    (void)src;
    return 0; /* the parts' iterators report their own */
}

static void combine_destroy(sl__source *src)
{
    combine_source *c = (combine_source *)src;
    for (size_t k = 0; k < c->nparts; k++)
        sl_dataset_free(c->parts[k]);
    free(c->parts);
    pthread_mutex_destroy(&c->lock);
}

static const sl__source_iface concat_iface = {
    "concat", combine_prepare, NULL, combine_read, combine_size_hint, combine_describe,
    combine_load_ms, combine_destroy};
static const sl__source_iface zip_iface = {
    "zip", combine_prepare, NULL, combine_read, combine_size_hint, combine_describe,
    combine_load_ms, combine_destroy};

int sl__source_is_combined(const sl__source *src)
{
    return src->iface == &concat_iface || src->iface == &zip_iface;
}

/* --- describing ---------------------------------------------------------------------- */

/* Whether part k's columns can follow those of schema (the first part's,
 * shapes merged so far) in a concat; merges its shapes in. */
static int concat_columns(sl_dataset *ds, sl__schema *schema, const sl_dataset *part, size_t k)
{
    const sl__schema *s = &part->schema;
    if (s->ncols != schema->ncols)
        return sl__errf(&ds->error, SL_EINVAL,
                        "concat: dataset %zu has %zu columns, the first %zu: the datasets must "
                        "have the same columns (project or rename them first)",
                        k + 1, s->ncols, schema->ncols);
    for (size_t c = 0; c < s->ncols; c++) {
        sl_tensor_spec *have = &schema->specs[c];
        const sl_tensor_spec *spec = &s->specs[c];
        if (strcmp(s->names[c], schema->names[c]) != 0)
            return sl__errf(&ds->error, SL_EINVAL,
                            "concat: column %zu of dataset %zu is '%s', of the first '%s': the "
                            "datasets must have the same column names in the same order "
                            "(project or rename them first)",
                            c, k + 1, s->names[c], schema->names[c]);
        if (spec->dtype != have->dtype || spec->ndim != have->ndim)
            return sl__errf(&ds->error, SL_EINVAL,
                            "concat: column '%s' of dataset %zu is %s with %d dimensions, of "
                            "the first %s with %d: the datasets' columns must agree in type "
                            "and rank",
                            s->names[c], k + 1, sl_dtype_name(spec->dtype), spec->ndim,
                            sl_dtype_name(have->dtype), have->ndim);
        for (int d = 0; d < spec->ndim; d++)
            if (spec->shape[d] != have->shape[d])
                have->shape[d] = -1; /* known only from the data */
    }
    return SL_OK;
}

/* Appends part k's columns to schema for a zip. */
static int zip_columns(sl_dataset *ds, sl__schema *schema, const sl_dataset *part, size_t k)
{
    const sl__schema *s = &part->schema;
    if (schema->ncols + s->ncols > SL_MAX_COLUMNS)
        return sl__errf(&ds->error, SL_EINVAL,
                        "zip: the datasets have more than %d columns together; project them "
                        "to fewer first",
                        SL_MAX_COLUMNS);
    for (size_t c = 0; c < s->ncols; c++) {
        for (size_t j = 0; j < schema->ncols; j++)
            if (strcmp(schema->names[j], s->names[c]) == 0)
                return sl__errf(&ds->error, SL_EINVAL,
                                "zip: column '%s' of dataset %zu is also a column of an "
                                "earlier dataset; column names must differ: rename one "
                                "first (rename(\"%s\", \"%s_%zu\"))",
                                s->names[c], k + 1, s->names[c], s->names[c], k + 1);
        memcpy(schema->names[schema->ncols], s->names[c], SL_COLUMN_NAME_LEN);
        schema->specs[schema->ncols++] = s->specs[c];
    }
    return SL_OK;
}

static int combine(sl_dataset *ds, const sl_dataset *const *others, size_t n, int zip)
{
    const char *what = zip ? "zip" : "concat";
    combine_source *src;
    sl__schema schema;
    int64_t rows = 0;
    size_t used;
    int rc = SL_OK;
    if (!ds->source)
        return sl__errf(&ds->error, SL_ESTATE, "%s: the dataset has no source yet", what);
    if (!others || n == 0)
        return sl__errf(&ds->error, SL_EINVAL, "%s: no datasets given", what);
    schema = ds->schema;
    if (zip)
        schema.ncols = 0;
    for (size_t k = 0; k <= n; k++) {
        const sl_dataset *part = k == 0 ? ds : others[k - 1];
        int64_t size;
        if (!part || !part->source)
            return sl__errf(&ds->error, SL_EINVAL, "%s: dataset %zu is %s", what, k + 1,
                            part ? "without a source" : "NULL");
        sl_dataset_get_dataset_size(part, &size);
        if (size == SL_DATASET_SIZE_ENDLESS)
            return sl__errf(&ds->error, SL_EINVAL,
                            "%s: dataset %zu has no end (repeat without a count); repeat the "
                            "%s result instead, or bound the part with take(n)",
                            what, k + 1, what);
        rc = zip ? zip_columns(ds, &schema, part, k)
                 : k > 0 ? concat_columns(ds, &schema, part, k) : SL_OK;
        if (rc != SL_OK)
            return rc;
        rows = zip ? (k == 0 || size < rows ? size : rows) : rows + size;
    }
    src = calloc(1, sizeof *src);
    if (!src || !(src->parts = calloc(n + 1, sizeof *src->parts))) {
        free(src);
        return sl__errf(&ds->error, SL_ENOMEM, "%s: out of memory", what);
    }
    if (pthread_mutex_init(&src->lock, NULL) != 0) {
        free(src->parts);
        free(src);
        return sl__errf(&ds->error, SL_ENOMEM, "%s: cannot make a mutex", what);
    }
    src->base.iface = zip ? &zip_iface : &concat_iface;
    atomic_init(&src->base.refs, 1);
    src->zip = zip;
    for (size_t k = 0; k <= n && rc == SL_OK; k++) {
        rc = sl_dataset_copy(&src->parts[k], k == 0 ? ds : others[k - 1]);
        src->nparts += rc == SL_OK;
    }
    if (rc != SL_OK) {
        sl__source_release(&src->base);
        return sl__errf(&ds->error, rc, "%s: out of memory", what);
    }
    src->base.num_rows = rows;
    /* The parts sample themselves: this sampler only counts their rows
     * (shuffle set, so describe adds nothing to the summary). */
    sl_sampler_options_init(&src->base.sampler);
    src->base.ncols = schema.ncols;
    memcpy(src->base.names, schema.names, sizeof schema.names);
    memcpy(src->base.specs, schema.specs, sizeof schema.specs);
    used = (size_t)snprintf(src->base.summary, sizeof src->base.summary, "%s(%lld rows: ", what,
                            (long long)rows);
    for (size_t k = 0; k <= n && used < sizeof src->base.summary; k++)
        used += (size_t)snprintf(src->base.summary + used, sizeof src->base.summary - used,
                                 "%s%s", k ? (zip ? ", " : " + ") : "",
                                 src->parts[k]->source->summary);
    if (used < sizeof src->base.summary)
        snprintf(src->base.summary + used, sizeof src->base.summary - used, ")");
    sl__dataset_set_source(ds, &src->base);
    /* Bad samples are each part's own business (set on the parts). */
    sl_error_samples_options_init(&ds->error_samples);
    return SL_OK;
}

int sl_dataset_concat(sl_dataset *ds, const sl_dataset *const *others, size_t n)
{
    return combine(ds, others, n, 0);
}

int sl_dataset_zip(sl_dataset *ds, const sl_dataset *const *others, size_t n)
{
    return combine(ds, others, n, 1);
}

/* 1 when ds can be started at a later epoch (sl_iterator_options
 * start_epoch): not when it repeats, itself or in a part of its own (a
 * repeat's passes are not its epochs, so an iterator refuses to). */
static int can_start_at_epoch(const sl_dataset *ds)
{
    for (size_t i = 0; i < ds->nnodes; i++)
        if (ds->nodes[i].kind == SL__NODE_REPEAT)
            return 0;
    if (ds->source && sl__source_is_combined(ds->source)) {
        const combine_source *c = (const combine_source *)ds->source;
        for (size_t k = 0; k < c->nparts; k++)
            if (!can_start_at_epoch(c->parts[k]))
                return 0;
    }
    return 1;
}

/* --- running ------------------------------------------------------------------------ */

struct sl__combine_run {
    combine_source *src;   /* one reference */
    /* (nparts,): written by the consumer's thread (a zip restarts a part),
     * read by sl__combine_interrupt's: its_lock guards the pointers. */
    sl_iterator **its;
    pthread_mutex_t its_lock;
    size_t cur;            /* concat: the part being read */
    int threads;
    int64_t passes;        /* as sl__combine_open was given them */
    int64_t start_epoch;
    int64_t passes_done;   /* zip: passes ended since the start */
    unsigned char *restartable; /* (nparts,): can_start_at_epoch of each part */
    size_t queue_chunks, chunk_rows;
    atomic_int closed;
};

/* Makes part k's iterator, at pass `epoch` of `passes`, into *out; the
 * message names the part (the caller adds the kind where the stage that
 * reports it does not). */
static int open_part(sl__combine_run *run, size_t k, int64_t epoch, sl_iterator **out,
                     sl__error *err)
{
    combine_source *src = run->src;
    sl_iterator_options o;
    int rc;
    sl_iterator_options_init(&o);
    o.num_epochs = run->passes;
    o.queue_chunks = run->queue_chunks;
    o.chunk_rows = run->chunk_rows;
    o.start_epoch = epoch;
    pthread_mutex_lock(&src->lock);
    rc = sl_iterator_new(out, src->parts[k], &o);
    if (rc != SL_OK)
        sl__errf(err, rc, "dataset %zu of %zu (%s): %s", k + 1, src->nparts,
                 src->parts[k]->source->summary, sl_dataset_last_error(src->parts[k]));
    pthread_mutex_unlock(&src->lock);
    return rc;
}

int sl__combine_open(sl__combine_run **out, sl__source *source, const sl_iterator_options *opts,
                     int64_t passes, int64_t start_epoch, sl__error *err)
{
    combine_source *src = (combine_source *)source;
    sl__combine_run *run = calloc(1, sizeof *run);
    int rc = SL_OK;
    *out = NULL;
    if (!run || !(run->its = calloc(src->nparts, sizeof *run->its)) ||
        !(run->restartable = calloc(src->nparts, 1))) {
        if (run)
            free(run->its);
        free(run);
        return sl__errf(err, SL_ENOMEM, "%s: out of memory", source->iface->kind);
    }
    run->src = src;
    sl__source_retain(source);
    atomic_init(&run->closed, 0);
    pthread_mutex_init(&run->its_lock, NULL);
    run->passes = passes;
    run->start_epoch = start_epoch;
    run->queue_chunks = opts->queue_chunks;
    run->chunk_rows = opts->chunk_rows;
    for (size_t k = 0; k < src->nparts && rc == SL_OK; k++) {
        sl_iterator_stats stats;
        run->restartable[k] = (unsigned char)can_start_at_epoch(src->parts[k]);
        rc = open_part(run, k, start_epoch, &run->its[k], err);
        if (rc != SL_OK) /* the iterator's message: "zip: dataset 2 of 2 ..." */
            sl__err_prefix(err, "%s: ", source->iface->kind);
        if (rc == SL_OK) {
            sl_iterator_get_stats(run->its[k], &stats);
            run->threads += stats.threads;
        }
    }
    if (rc != SL_OK) {
        sl__combine_close(run);
        return rc;
    }
    *out = run;
    return SL_OK;
}

/* What part k's status rc (not a row, not an end of epoch) means for the
 * combined dataset, with the message naming the part. */
static int part_failed(sl__combine_run *run, size_t k, int rc, sl__error *err)
{
    if (atomic_load(&run->closed))
        return SL_ECLOSED;
    if (rc == SL_END_OF_DATA)
        return sl__errf(err, SL_ESTATE, "dataset %zu of %zu (%s) ended before the %s did",
                        k + 1, run->src->nparts, run->src->parts[k]->source->summary,
                        run->src->base.iface->kind);
    return sl__errf(err, rc, "dataset %zu of %zu (%s): %s", k + 1, run->src->nparts,
                    run->src->parts[k]->source->summary, sl_iterator_last_error(run->its[k]));
}

static int concat_next(sl__combine_run *run, sl__row *row, sl__error *err)
{
    for (;;) {
        sl_row r;
        int rc = sl_iterator_next(run->its[run->cur], &r);
        if (rc == SL_OK) {
            memcpy(row->col, r.columns, r.ncolumns * sizeof r.columns[0]);
            return SL_OK;
        }
        if (rc != SL_END_OF_EPOCH)
            return part_failed(run, run->cur, rc, err);
        if (++run->cur == run->src->nparts) {
            run->cur = 0;
            return SL_END_OF_EPOCH;
        }
    }
}

/* Takes part k's rows to the end of its epoch, dropping them. */
static int drain_part(sl__combine_run *run, size_t k, sl__error *err)
{
    for (;;) {
        sl_row r;
        int rc = sl_iterator_next(run->its[k], &r);
        if (rc == SL_END_OF_EPOCH)
            return SL_OK;
        if (rc != SL_OK)
            return part_failed(run, k, rc, err);
        sl_row_clear(&r);
    }
}

/* Brings part k to the zip's next pass. Started again there, the rest of
 * its epoch is never read: reading it would cost all its samples, and a
 * bad one among them would fail an epoch that never hands it out. A part
 * that repeats cannot be started at a later epoch: its rows are read to
 * its epoch's end, as before. Nothing to do after the last pass; nothing
 * started once the run is interrupted. */
static int restart_part(sl__combine_run *run, size_t k, sl__error *err)
{
    int64_t epoch = run->start_epoch + run->passes_done;
    sl_iterator *old, *fresh = NULL;
    int rc;
    if (run->passes > 0 && epoch >= run->passes)
        return SL_OK;
    if (!run->restartable[k])
        return drain_part(run, k, err);
    pthread_mutex_lock(&run->its_lock);
    old = run->its[k];
    run->its[k] = NULL;
    pthread_mutex_unlock(&run->its_lock);
    sl_iterator_free(old); /* joins its threads, wherever they were */
    if (atomic_load(&run->closed))
        return SL_ECLOSED;
    rc = open_part(run, k, epoch, &fresh, err);
    if (rc != SL_OK)
        return rc;
    pthread_mutex_lock(&run->its_lock);
    run->its[k] = fresh;
    if (atomic_load(&run->closed)) /* interrupted while it had none */
        sl_iterator_interrupt(fresh);
    pthread_mutex_unlock(&run->its_lock);
    return SL_OK;
}

static int zip_next(sl__combine_run *run, sl__row *row, sl__error *err)
{
    size_t col = 0, k;
    int rc = SL_OK;
    for (k = 0; k < run->src->nparts; k++) {
        sl_row r;
        if (!run->its[k]) /* interrupted, or its restart failed and said why */
            return atomic_load(&run->closed)
                       ? SL_ECLOSED
                       : sl__errf(err, SL_ESTATE, "dataset %zu of %zu (%s) could not start again",
                                  k + 1, run->src->nparts, run->src->parts[k]->source->summary);
        rc = sl_iterator_next(run->its[k], &r);
        if (rc != SL_OK)
            break;
        memcpy(row->col + col, r.columns, r.ncolumns * sizeof r.columns[0]);
        col += r.ncolumns;
    }
    if (rc == SL_OK)
        return SL_OK;
    sl__row_clear(row);
    if (rc != SL_END_OF_EPOCH)
        return part_failed(run, k, rc, err);
    /* The shortest part's epoch ended: so does the zip's, and every other
     * part starts its next epoch afresh (as a part that ended does). */
    run->passes_done++;
    for (size_t j = 0; j < run->src->nparts; j++)
        if (j != k && (rc = restart_part(run, j, err)) != SL_OK)
            return rc;
    return SL_END_OF_EPOCH;
}

int sl__combine_next(sl__combine_run *run, sl__row *row, sl__error *err)
{
    memset(row->col, 0, sizeof row->col);
    if (atomic_load(&run->closed))
        return SL_ECLOSED;
    return run->src->zip ? zip_next(run, row, err) : concat_next(run, row, err);
}

void sl__combine_interrupt(sl__combine_run *run)
{
    atomic_store(&run->closed, 1);
    pthread_mutex_lock(&run->its_lock);
    for (size_t k = 0; k < run->src->nparts; k++)
        if (run->its[k])
            sl_iterator_interrupt(run->its[k]);
    pthread_mutex_unlock(&run->its_lock);
}

int sl__combine_threads(const sl__combine_run *run)
{
    return run->threads;
}

void sl__combine_close(sl__combine_run *run)
{
    if (!run)
        return;
    for (size_t k = 0; k < run->src->nparts; k++)
        sl_iterator_free(run->its[k]);
    free(run->its);
    free(run->restartable);
    pthread_mutex_destroy(&run->its_lock);
    sl__source_release(&run->src->base);
    free(run);
}
