/* batch_map.c: per-batch functions (sl_dataset_batch_map): describing one
 * (the columns it takes and makes) and running it on a batch's rows
 * before they are stacked, in whichever stage collates. */
#include "pipeline/batch_map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/options.h"

void sl__batch_map_retain(sl__batch_map *m)
{
    atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
}

void sl__batch_map_release(sl__batch_map *m)
{
    if (!m || atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (m->destroy)
        m->destroy(m->user);
    free(m);
}

int sl__batch_map_run(const sl__batch_map *m, const sl__chunk *group, sl__chunk **out,
                      sl__error *err)
{
    size_t n = group->nrows;
    sl_tensor **in = calloc(m->nin * n + 1, sizeof *in);
    sl_tensor **made = calloc(m->nout * n + 1, sizeof *made);
    sl_batch_info info = {group->group_index, group->group_epoch};
    char msg[SL_ERRMSG_LEN] = "";
    int rc = SL_OK;
    *out = NULL;
    if (!in || !made || !(*out = sl__chunk_new(SL__CHUNK_ROWS, n)))
        rc = sl__errf(err, SL_ENOMEM, "batch %lld: out of memory for per_batch_map",
                      (long long)info.batch_num);
    for (size_t c = 0; rc == SL_OK && c < m->nin; c++)
        for (size_t r = 0; r < n; r++)
            in[c * n + r] = group->rows[r].col[m->in_cols[c]];
    if (rc == SL_OK) {
        rc = m->fn(m->user, &info, in, m->nin, n, made, m->nout, msg, sizeof msg);
        if (rc == SL_OK)
            for (size_t k = 0; k < m->nout * n; k++)
                if (!made[k]) {
                    snprintf(msg, sizeof msg, "it made no tensor for row %zu of output %zu",
                             k % n, k / n);
                    rc = SL_EINVAL;
                    break;
                }
        if (rc != SL_OK)
            sl__errf(err, rc > 0 ? SL_EINVAL : rc, "batch %lld of epoch %lld: per_batch_map: %s",
                     (long long)info.batch_num, (long long)info.epoch_num,
                     msg[0] ? msg : sl_strerror(rc));
    }
    for (size_t r = 0; rc == SL_OK && r < n; r++) {
        sl__row row;
        memset(&row, 0, sizeof row);
        row.index = group->rows[r].index;
        row.epoch = group->rows[r].epoch;
        for (size_t j = 0; j < m->out_schema.ncols; j++) {
            int f = m->from[j];
            if (f >= 0) {
                row.col[j] = sl_tensor_retain(group->rows[r].col[f]);
            } else {
                row.col[j] = made[(size_t)(-f - 1) * n + r];
                made[(size_t)(-f - 1) * n + r] = NULL;
            }
        }
        sl__chunk_push_row(*out, &row);
    }
    for (size_t k = 0; made && k < m->nout * n; k++)
        sl_tensor_release(made[k]);
    free(made);
    free(in);
    if (rc != SL_OK) {
        sl__chunk_free(*out);
        *out = NULL;
        return rc;
    }
    (*out)->group_index = group->group_index;
    (*out)->group_epoch = group->group_epoch;
    return SL_OK;
}

/* --- describing ---------------------------------------------------------------- */

static const size_t batch_map_options_v1_size = sizeof(sl_batch_map_options);
_Static_assert(sizeof(sl_batch_map_options) ==
                   offsetof(sl_batch_map_options, num_output_columns) + sizeof(size_t),
               "sl_batch_map_options must end without padding");

void sl_batch_map_options_init_sized(sl_batch_map_options *o, size_t size)
{
    sl_batch_map_options d;
    memset(&d, 0, sizeof d);
    sl__options_init(o, size, &d, sizeof d);
}

/* The column of ds named name, or an error naming what */
static int column_of(sl_dataset *ds, const char *name, const char *what, int *out)
{
    *out = name ? sl_dataset_column_index(ds, name) : -1;
    if (*out < 0)
        return sl__errf(&ds->error, SL_EINVAL, "batch: per_batch_map's %s names no column "
                        "('%s')", what, name ? name : "(null)");
    return SL_OK;
}

/* Fills m's columns from o against ds's schema: the outputs take the
 * first input column's place, the other columns keep their order. */
static int plan_columns(sl_dataset *ds, const sl_batch_map_options *o, sl__batch_map *m)
{
    const sl__schema *in = &ds->schema;
    const char *const *outs = o->output_columns ? o->output_columns : o->input_columns;
    size_t j = 0;
    int used[SL_MAX_COLUMNS] = {0}, rc;
    m->nin = o->num_input_columns;
    m->nout = o->output_columns ? o->num_output_columns : o->num_input_columns;
    if (m->nin == 0 || m->nin > in->ncols || m->nout == 0)
        return sl__errf(&ds->error, SL_EINVAL, "batch: per_batch_map needs 1 to %zu input "
                        "columns and at least one output, got %zu and %zu", in->ncols, m->nin,
                        m->nout);
    for (size_t c = 0; c < m->nin; c++) {
        if ((rc = column_of(ds, o->input_columns[c], "input_columns", &m->in_cols[c])) != SL_OK)
            return rc;
        if (used[m->in_cols[c]]++)
            return sl__errf(&ds->error, SL_EINVAL, "batch: per_batch_map's input_columns name "
                            "'%s' twice", o->input_columns[c]);
    }
    if (in->ncols - m->nin + m->nout > SL_MAX_COLUMNS)
        return sl__errf(&ds->error, SL_EINVAL, "batch: per_batch_map would make %zu columns, "
                        "more than %d", in->ncols - m->nin + m->nout, SL_MAX_COLUMNS);
    m->in_schema = *in;
    for (size_t c = 0; c < in->ncols; c++) {
        if (used[c] && (int)c != m->in_cols[0])
            continue;
        for (size_t k = 0; k < (used[c] ? m->nout : 1); k++, j++) {
            sl_tensor_spec *s = &m->out_schema.specs[j];
            const char *name = used[c] ? outs[k] : in->names[c];
            if (!name || !name[0] || strlen(name) >= SL_COLUMN_NAME_LEN)
                return sl__errf(&ds->error, SL_EINVAL, "batch: per_batch_map's output column "
                                "names must have 1 to %d characters", SL_COLUMN_NAME_LEN - 1);
            for (size_t q = 0; q < j; q++)
                if (strcmp(m->out_schema.names[q], name) == 0)
                    return sl__errf(&ds->error, SL_EINVAL, "batch: per_batch_map would make "
                                    "two columns '%s'", name);
            snprintf(m->out_schema.names[j], SL_COLUMN_NAME_LEN, "%s", name);
            m->from[j] = used[c] ? -(int)k - 1 : (int)c;
            /* What a function makes is known only when it runs: its input's
             * dtype and rank, as a guess for later nodes, sizes unknown. */
            *s = in->specs[used[c] ? (size_t)m->in_cols[k < m->nin ? k : 0] : c];
            for (int d = 0; used[c] && d < s->ndim; d++)
                s->shape[d] = -1;
        }
    }
    m->out_schema.ncols = j;
    return SL_OK;
}

int sl_dataset_batch_map(sl_dataset *ds, int64_t batch_size, int drop_remainder,
                         int num_parallel_workers, const sl_batch_map_options *user)
{
    sl_batch_map_options o;
    sl__batch_map *m;
    sl__schema out;
    int rc;
    sl_batch_map_options_init(&o);
    rc = sl__options_read(&o, sizeof o, batch_map_options_v1_size, user,
                          "sl_batch_map_options", &ds->error);
    if (rc != SL_OK)
        return rc;
    if (!ds->source)
        return sl__errf(&ds->error, SL_ESTATE, "batch: the dataset has no source yet");
    if (!o.fn || !o.input_columns)
        return sl__errf(&ds->error, SL_EINVAL, "batch: per_batch_map needs fn and "
                        "input_columns");
    if (!(m = calloc(1, sizeof *m)))
        return sl__errf(&ds->error, SL_ENOMEM, "batch: out of memory");
    if ((rc = plan_columns(ds, &o, m)) != SL_OK) {
        free(m);
        return rc;
    }
    out = m->out_schema;
    rc = sl_dataset_batch(ds, batch_size, drop_remainder, num_parallel_workers);
    if (rc != SL_OK) {
        free(m);
        return rc;
    }
    atomic_init(&m->refs, 1);
    m->fn = o.fn;
    m->destroy = o.destroy;
    m->user = o.user;
    ds->nodes[ds->nnodes - 1].batch_map = m;
    /* The batch's columns are the function's, stacked. */
    for (size_t c = 0; c < out.ncols; c++) {
        sl_tensor_spec *s = &out.specs[c];
        memmove(s->shape + 1, s->shape, (size_t)s->ndim * sizeof s->shape[0]);
        s->shape[0] = drop_remainder ? batch_size : -1;
        s->ndim++;
    }
    ds->schema = out;
    return SL_OK;
}
