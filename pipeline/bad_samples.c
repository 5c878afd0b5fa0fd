/* bad_samples.c: what the pipeline does with a bad sample
 * (sl_error_samples_options, dataset.h): the options, telling a bad
 * sample's error from the others, the records that carry each one to the
 * consumer, stand-ins (chosen from the seed, the pass and the sample, then
 * read and mapped), a stage's rows taken one at a time so that a bad one
 * can be skipped or replaced, and the consumer's count, report and cap. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/options.h"
#include "core/rng.h"
#include "pipeline/iterator_impl.h"
#include "pipeline/sampler.h"

/* --- options --------------------------------------------------------------- */

/* The end of the first version's fields: fixed forever (core/options.h). */
static const size_t error_samples_v1_size =
    offsetof(sl_error_samples_options, report_user) + sizeof(void *);
/* No tail padding, so a caller's size covers only fields it knows; name the
 * last field here when one is appended. */
_Static_assert(sizeof(sl_error_samples_options) ==
                   offsetof(sl_error_samples_options, report_user) + sizeof(void *),
               "sl_error_samples_options: name its last field here; no tail padding "
               "(core/options.h)");

void sl_error_samples_options_init_sized(sl_error_samples_options *o, size_t size)
{
    sl_error_samples_options d;
    memset(&d, 0, sizeof d);
    d.mode = SL_ERROR_SAMPLES_RAISE;
    d.max_bad_samples = -1;
    d.max_bad_fraction = 0.01;
    sl__options_init(o, size, &d, sizeof d);
}

int sl_dataset_set_error_samples(sl_dataset *ds, const sl_error_samples_options *user)
{
    sl_error_samples_options o;
    int rc;
    sl_error_samples_options_init(&o);
    rc = sl__options_read(&o, sizeof o, error_samples_v1_size, user, "sl_error_samples_options",
                          &ds->error);
    if (rc != SL_OK) {
        sl__err_prefix(&ds->error, "error samples: ");
        return rc;
    }
    if (o.mode != SL_ERROR_SAMPLES_RAISE && o.mode != SL_ERROR_SAMPLES_SKIP &&
        o.mode != SL_ERROR_SAMPLES_REPLACE)
        return sl__errf(&ds->error, SL_EINVAL,
                        "error samples: mode %d is not raise (0), skip (1) or replace (2)",
                        (int)o.mode);
    if (o.unused0 != 0)
        return sl__errf(&ds->error, SL_EINVAL, "error samples: unused0 must be 0");
    if (o.max_bad_samples < -1)
        return sl__errf(&ds->error, SL_EINVAL,
                        "error samples: max_bad_samples must be >= 0, or -1 for "
                        "max_bad_fraction, got %lld",
                        (long long)o.max_bad_samples);
    if (!(o.max_bad_fraction >= 0.0 && o.max_bad_fraction <= 1.0))
        return sl__errf(&ds->error, SL_EINVAL,
                        "error samples: max_bad_fraction must be in [0, 1], got %g",
                        o.max_bad_fraction);
    ds->error_samples = o;
    sl__err_clear(&ds->error);
    return SL_OK;
}

int sl__is_bad_sample_error(int status)
{
    switch (status) {
    case SL_OK:
    case SL_ENOMEM:
    case SL_ECLOSED:
    case SL_ECANCELED:
    case SL_ETHREAD:
    case SL_ETIMEDOUT:
    case SL_ESTATE:
        return 0;
    default:
        return status < 0;
    }
}

/* --- stand-ins ---------------------------------------------------------------- */

int sl__standins_init(sl_iterator *it)
{
    sl__standins *s = &it->standins;
    const sl_error_samples_options *o = &it->bad;
    int64_t n = sl__sampler_size(&it->source->sampler, it->source->num_rows);
    int e;
    memset(s, 0, sizeof *s);
    s->epoch[0] = s->epoch[1] = -1;
    if (o->max_bad_samples >= 0)
        it->bad_allowed = o->max_bad_samples;
    else
        it->bad_allowed = (int64_t)ceil(o->max_bad_fraction * (double)n);
    it->bad_pass = -1;
    if (o->mode == SL_ERROR_SAMPLES_RAISE)
        return SL_OK;
    if ((e = pthread_mutex_init(&s->lock, NULL)) != 0)
        return sl__pthread_errf(&it->error, e, "error samples: pthread_mutex_init");
    s->ready = 1;
    return SL_OK;
}

void sl__standins_destroy(sl_iterator *it)
{
    sl__standins *s = &it->standins;
    if (!s->ready)
        return;
    free(s->order[0]);
    free(s->order[1]);
    pthread_mutex_destroy(&s->lock);
    s->ready = 0;
}

/* The sample at position pos of pass epoch's order (this shard's). The
 * orders of the two passes asked for last are kept: bad samples are rare,
 * and the passes in flight are one or two. */
static int order_at(sl_iterator *it, int64_t epoch, int64_t pos, int64_t *out, sl__error *err)
{
    sl__standins *s = &it->standins;
    const sl__source *src = it->source;
    int rc = SL_OK;
    int k;
    pthread_mutex_lock(&s->lock);
    k = s->epoch[0] == epoch ? 0 : s->epoch[1] == epoch ? 1 : -1;
    if (k < 0) {
        int64_t n = sl__sampler_size(&src->sampler, src->num_rows);
        int64_t *order = malloc((size_t)n * sizeof *order);
        rc = order ? sl__sampler_order(&src->sampler, src->num_rows, epoch, order) : SL_ENOMEM;
        if (rc == SL_OK) {
            k = s->next;
            s->next = 1 - s->next;
            free(s->order[k]);
            s->order[k] = order;
            s->epoch[k] = epoch;
        } else {
            free(order);
            sl__errf(err, rc, "error samples: out of memory for the order of epoch %lld",
                     (long long)epoch);
        }
    }
    if (rc == SL_OK)
        *out = s->order[k][pos];
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* Reads sample row->index and runs it through the per-sample maps of
 * stages 1 .. upto. */
static int make_sample(sl_iterator *it, size_t upto, sl__row *row, sl__error *err)
{
    sl__source *src = it->source;
    int rc = src->iface->read(src, row->index, row, it->pool, err);
    if (rc != SL_OK) {
        sl__err_prefix(err, "%s: ", src->iface->kind);
        return rc;
    }
    for (size_t s = 1; s <= upto && s < it->nstages; s++) {
        const sl__stage *st = &it->stages[s];
        if (st->kind != SL__STAGE_MAP || !st->per_sample)
            continue;
        rc = sl__map_apply_row(&st->map, row, it->pool, err);
        if (rc != SL_OK)
            return rc;
    }
    return SL_OK;
}

int sl__standin_make(sl_iterator *it, size_t upto, const sl__bad_record *bad, sl__row *out,
                     sl__error *err)
{
    const sl__source *src = it->source;
    int64_t n = sl__sampler_size(&src->sampler, src->num_rows);
    int64_t last = -1;
    char last_name[256];
    sl__error last_err;
    sl_rng rng;
    sl__err_clear(&last_err);
    sl__rng_seed(&rng, it->seed, (uint64_t)bad->epoch, (uint64_t)bad->index, 0x57a1d1);
    for (int t = 0; t < SL_ERROR_SAMPLES_TRIES && n > 0; t++) {
        int64_t pos = (int64_t)sl__rng_below(&rng, (uint64_t)n), index;
        int rc;
        if (sl__stopping(it))
            return sl__errf(err, SL_ECLOSED, "error samples: stopped");
        rc = order_at(it, bad->epoch, pos, &index, err);
        if (rc != SL_OK)
            return rc;
        if (index == bad->index)
            continue;
        memset(out, 0, sizeof *out);
        out->index = index;
        out->epoch = bad->epoch;
        rc = make_sample(it, upto, out, &last_err);
        if (rc == SL_OK)
            return SL_OK;
        sl__row_clear(out);
        if (!sl__is_bad_sample_error(rc)) {
            sl__err_copy(err, &last_err);
            return rc;
        }
        last = index;
    }
    if (last < 0)
        return sl__errf(err, bad->status,
                        "bad sample %lld (%s): %s; no other sample of epoch %lld was drawn to "
                        "stand in for it",
                        (long long)bad->index, bad->sample, bad->reason, (long long)bad->epoch);
    src->iface->describe(src, last, last_name, sizeof last_name);
    return sl__errf(err, bad->status,
                    "bad sample %lld (%s): %s; and no stand-in: the %d samples of epoch %lld "
                    "drawn for its place were bad too (the last, sample %lld (%s): %s)",
                    (long long)bad->index, bad->sample, bad->reason, SL_ERROR_SAMPLES_TRIES,
                    (long long)bad->epoch, (long long)last, last_name, last_err.msg);
}

/* --- records ---------------------------------------------------------------- */

sl__bad_record *sl__bad_record_new(const sl__source *src, const sl__row *row,
                                   const sl__error *err)
{
    sl__bad_record *rec = calloc(1, sizeof *rec);
    if (!rec)
        return NULL;
    rec->index = row->index;
    rec->epoch = row->epoch;
    rec->stand_in = -1;
    rec->status = err->status;
    src->iface->describe(src, row->index, rec->sample, sizeof rec->sample);
    snprintf(rec->reason, sizeof rec->reason, "%s", err->msg);
    return rec;
}

/* Deals with the bad sample in row (its columns released): a stand-in
 * takes its place (replace: returns 1), or it is to be dropped (skip:
 * returns 0) and filled at the end of the epoch by the next sequential
 * stage, or by the source itself (pad_here: *pending gets a copy). The
 * record goes to *rec. Negative: the error, in err. */
static int deal_with(sl__stage *st, sl__row *row, const sl__error *why, sl__bad_record **rec,
                     sl__bad_record **pending, sl__error *err)
{
    sl_iterator *it = st->it;
    sl__row standin;
    int rc;
    *rec = sl__bad_record_new(it->source, row, why);
    if (!*rec)
        return sl__errf(err, SL_ENOMEM, "error samples: out of memory");
    sl__row_clear(row);
    if (it->bad.mode == SL_ERROR_SAMPLES_SKIP) {
        if (!pending) {
            (*rec)->pad = 1;
            return 0;
        }
        *pending = malloc(sizeof **pending);
        if (!*pending) {
            free(*rec);
            return sl__errf(err, SL_ENOMEM, "error samples: out of memory");
        }
        **pending = **rec;
        return 0;
    }
    rc = sl__standin_make(it, (size_t)(st - it->stages), *rec, &standin, err);
    if (rc != SL_OK) {
        free(*rec);
        return rc;
    }
    (*rec)->stand_in = standin.index;
    (*rec)->replaced = 1;
    *row = standin;
    return 1;
}

int sl__bad_source_sample(sl__stage *st, sl__row *row, const sl__error *why, sl__error *err)
{
    sl__bad_record *rec, *pending = NULL;
    int rc = deal_with(st, row, why, &rec, &pending, err);
    if (rc < 0)
        return rc;
    if (pending) {
        if (st->src.pending_tail)
            st->src.pending_tail->next = pending;
        else
            st->src.pending = pending;
        st->src.pending_tail = pending;
    }
    if (sl__out_bad(&st->src.out, rec) != SL_OK)
        return sl__errf(err, SL_ENOMEM, "error samples: out of memory");
    return rc;
}

int sl__bad_source_pad(sl__stage *st, sl__row *row, sl__error *err)
{
    sl__bad_record *rec = st->src.pending;
    int rc;
    st->src.pending = rec->next;
    if (!st->src.pending)
        st->src.pending_tail = NULL;
    rc = sl__standin_make(st->it, 0, rec, row, err);
    free(rec);
    return rc;
}

int sl__bad_work_rows(sl__stage *st, sl__chunk *chunk, sl__error *err)
{
    sl_iterator *it = st->it;
    sl__source *src = it->source;
    size_t r = 0;
    int rc = SL_OK;
    while (r < chunk->nrows) {
        sl__row *row = &chunk->rows[r];
        sl__bad_record *rec;
        int mapping = 0;
        if (sl__stopping(it)) {
            rc = sl__errf(err, SL_ECLOSED, "%s: stopped", st->name);
            break;
        }
        if (st->reads) {
            rc = src->iface->read(src, row->index, row, it->pool, err);
            if (rc != SL_OK)
                sl__err_prefix(err, "%s: ", src->iface->kind);
        }
        if (rc == SL_OK && st->kind == SL__STAGE_MAP) {
            mapping = 1;
            rc = sl__map_apply_row(&st->map, row, it->pool, err);
        }
        if (rc == SL_OK) {
            r++;
            continue;
        }
        if (!sl__is_bad_sample_error(rc)) {
            char where[300];
            if (mapping) {
                src->iface->describe(src, row->index, where, sizeof where);
                sl__err_prefix(err, "%s: ", where);
            }
            break;
        }
        rc = deal_with(st, row, err, &rec, NULL, err);
        if (rc < 0)
            break;
        if (rc == 0) {
            memmove(row, row + 1, (chunk->nrows - r - 1) * sizeof *row);
            chunk->nrows--;
        } else {
            r++;
        }
        rc = SL_OK;
        sl__err_clear(err); /* dealt with: the record keeps the message */
        sl__chunk_add_bad(chunk, rec);
    }
    if (rc == SL_OK)
        return SL_OK;
    /* As without bad-sample handling: the rows done before the failing one
     * go on ahead of the error. */
    for (size_t q = r; q < chunk->nrows; q++)
        sl__row_clear(&chunk->rows[q]);
    chunk->nrows = r;
    return rc;
}

/* --- the consumer ------------------------------------------------------------ */

int sl__bad_account(sl_iterator *it, const sl__chunk *chunk)
{
    for (const sl__bad_record *rec = chunk->bad; rec; rec = rec->next) {
        uint64_t count;
        if (rec->replaced)
            it->samples_replaced++;
        else
            it->samples_skipped++;
        count = it->samples_replaced + it->samples_skipped;
        if (rec->epoch > it->bad_pass) {
            it->bad_pass = rec->epoch;
            it->bad_in_pass = 0;
        }
        it->bad_in_pass++;
        if (it->bad.report) {
            sl_bad_sample b;
            memset(&b, 0, sizeof b);
            b.index = rec->index;
            b.epoch = rec->epoch;
            b.stand_in = rec->stand_in;
            b.status = rec->status;
            b.replaced = rec->replaced;
            b.sample = rec->sample;
            b.reason = rec->reason;
            b.count = count;
            it->bad.report(it->bad.report_user, &b);
        }
        if (it->bad_in_pass > it->bad_allowed) {
            char cap[96];
            if (it->bad.max_bad_samples >= 0)
                snprintf(cap, sizeof cap, "max_bad_samples");
            else
                snprintf(cap, sizeof cap, "max_bad_fraction %g of %lld samples",
                         it->bad.max_bad_fraction,
                         (long long)sl__sampler_size(&it->source->sampler,
                                                     it->source->num_rows));
            it->status = sl__errf(&it->error, rec->status,
                                  "too many bad samples: %lld in epoch %lld, more than the %lld "
                                  "allowed (%s); the last, sample %lld (%s): %s",
                                  (long long)it->bad_in_pass, (long long)rec->epoch,
                                  (long long)it->bad_allowed, cap, (long long)rec->index,
                                  rec->sample, rec->reason);
            return it->status;
        }
    }
    return SL_OK;
}
