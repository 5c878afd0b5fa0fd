/* pad.c: stacking rows of different shapes into one batch tensor, for
 * sl_dataset_batch_padded (MindSpore's pad_info): each row is copied into
 * the corner of its slot and the rest of the slot holds the pad value. */
#include <string.h>

#include "core/tensor_impl.h"
#include "pipeline/dataset_impl.h"
#include "pipeline/nodes.h"

/* value as one element of dtype, in out (at least 8 bytes). */
static void pad_element(double value, sl_dtype dtype, unsigned char *out)
{
    switch (dtype) {
    case SL_UINT8: { uint8_t v = (uint8_t)value; memcpy(out, &v, sizeof v); break; }
    case SL_INT32: { int32_t v = (int32_t)value; memcpy(out, &v, sizeof v); break; }
    case SL_UINT32: { uint32_t v = (uint32_t)value; memcpy(out, &v, sizeof v); break; }
    case SL_INT64: { int64_t v = (int64_t)value; memcpy(out, &v, sizeof v); break; }
    case SL_FLOAT32: { float v = (float)value; memcpy(out, &v, sizeof v); break; }
    default: memcpy(out, &value, sizeof value); break;
    }
}

/* The row shape every row is padded to, in shape[0 .. ndim), or an error
 * naming the row that does not fit. */
static int pad_shape(const sl__chunk *group, size_t c, const sl__pad_col *pad, const char *name,
                     int64_t *shape, sl__error *err)
{
    const sl_tensor *first = group->rows[0].col[c];
    int ndim = first->ndim;
    char a[96], b[96];
    if (pad->ndim >= 0 && pad->ndim != ndim)
        return sl__errf(err, SL_ESHAPE, "batch %lld: column '%s' has %d dimensions but its "
                        "pad shape %s has %d", (long long)group->group_index, name, ndim,
                        sl_shape_str(b, sizeof b, pad->ndim, pad->shape), pad->ndim);
    for (int d = 0; d < ndim; d++)
        shape[d] = pad->ndim >= 0 && pad->shape[d] >= 0 ? pad->shape[d] : 0;
    for (size_t r = 0; r < group->nrows; r++) {
        const sl_tensor *t = group->rows[r].col[c];
        if (t->dtype != first->dtype || t->ndim != ndim)
            return sl__errf(err, SL_ESHAPE, "batch %lld: row %zu has column '%s' as %s %s but "
                            "row 0 has %s %s; padding needs one dtype and number of dimensions",
                            (long long)group->group_index, r, name, sl_dtype_name(t->dtype),
                            sl_shape_str(a, sizeof a, t->ndim, t->shape),
                            sl_dtype_name(first->dtype),
                            sl_shape_str(b, sizeof b, ndim, first->shape));
        for (int d = 0; d < ndim; d++) {
            int fixed = pad->ndim >= 0 && pad->shape[d] >= 0;
            if (!fixed && t->shape[d] > shape[d])
                shape[d] = t->shape[d];
            else if (fixed && t->shape[d] > shape[d])
                return sl__errf(err, SL_ESHAPE, "batch %lld: row %zu has column '%s' of shape "
                                "%s, larger than its pad shape %s (dimension %d: %lld > %lld)",
                                (long long)group->group_index, r, name,
                                sl_shape_str(a, sizeof a, ndim, t->shape),
                                sl_shape_str(b, sizeof b, pad->ndim, pad->shape), d,
                                (long long)t->shape[d], (long long)shape[d]);
        }
    }
    return SL_OK;
}

/* Copies src (ndim, shape src_shape, contiguous) into dst, laid out as
 * dst_shape (each dimension at least src's), element size es. */
static void copy_into(char *dst, const int64_t *dst_shape, const char *src,
                      const int64_t *src_shape, int ndim, size_t es)
{
    size_t dst_stride = es, src_stride = es;
    if (ndim == 0) {
        memcpy(dst, src, es);
        return;
    }
    if (ndim == 1) {
        memcpy(dst, src, (size_t)src_shape[0] * es);
        return;
    }
    for (int d = 1; d < ndim; d++) {
        dst_stride *= (size_t)dst_shape[d];
        src_stride *= (size_t)src_shape[d];
    }
    for (int64_t i = 0; i < src_shape[0]; i++)
        copy_into(dst + (size_t)i * dst_stride, dst_shape + 1, src + (size_t)i * src_stride,
                  src_shape + 1, ndim - 1, es);
}

int sl__collate_padded(const sl__chunk *group, size_t c, const sl__pad_col *pad,
                       const char *name, sl_tensor **out, sl_pool *pool, sl__error *err)
{
    const sl_tensor *first = group->rows[0].col[c];
    int64_t shape[SL_MAX_DIMS];
    unsigned char elem[8];
    size_t es = sl_dtype_size(first->dtype), slot;
    char *dst;
    int rc;
    *out = NULL;
    if (first->ndim >= SL_MAX_DIMS)
        return sl__errf(err, SL_ESHAPE, "batch: column '%s' already has %d dimensions", name,
                        first->ndim);
    shape[0] = (int64_t)group->nrows;
    rc = pad_shape(group, c, pad, name, shape + 1, err);
    if (rc != SL_OK)
        return rc;
    rc = sl__tensor_alloc(out, pool, first->dtype, first->ndim + 1, shape);
    if (rc != SL_OK)
        return sl__errf(err, rc, "batch: out of memory for column '%s' padded to %lld rows",
                        name, (long long)shape[0]);
    dst = (*out)->data;
    pad_element(pad->value, first->dtype, elem);
    for (size_t i = 0; i < (*out)->numel; i++)
        memcpy(dst + i * es, elem, es);
    slot = (*out)->nbytes / group->nrows;
    for (size_t r = 0; r < group->nrows; r++) {
        const sl_tensor *t = group->rows[r].col[c];
        if (t->nbytes > 0)
            copy_into(dst + r * slot, shape + 1, t->data, t->shape, t->ndim, es);
    }
    return SL_OK;
}

/* The pad of the column a names, into pad[] (by column index). */
static int read_pad(sl_dataset *ds, const sl_batch_pad *a, sl__pad_col *pad)
{
    int c = a->column ? sl_dataset_column_index(ds, a->column) : -1;
    const sl_tensor_spec *spec;
    if (c < 0)
        return sl__errf(&ds->error, SL_EINVAL, "batch: pad_info names no column of the dataset "
                        "('%s')", a->column ? a->column : "(null)");
    spec = &ds->schema.specs[c];
    if (pad[c].on)
        return sl__errf(&ds->error, SL_EINVAL, "batch: pad_info names column '%s' twice",
                        a->column);
    if (a->ndim < -1 || a->ndim > SL_MAX_DIMS || (a->ndim >= 0 && a->ndim != spec->ndim))
        return sl__errf(&ds->error, SL_EINVAL, "batch: pad shape of column '%s' has %d "
                        "dimensions but the column has %d", a->column, a->ndim, spec->ndim);
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] < -1)
            return sl__errf(&ds->error, SL_EINVAL, "batch: pad shape of column '%s' has %lld "
                            "in dimension %d (>= 0, or -1: the batch's largest)", a->column,
                            (long long)a->shape[d], d);
    pad[c].ndim = a->ndim;
    memcpy(pad[c].shape, a->shape, sizeof pad[c].shape);
    pad[c].value = a->value;
    return SL_OK;
}

int sl_dataset_batch_padded(sl_dataset *ds, int64_t batch_size, int drop_remainder,
                            int num_parallel_workers, const sl_batch_pad *pads, size_t npads)
{
    sl__pad_col pad[SL_MAX_COLUMNS];
    int rc = SL_OK;
    memset(pad, 0, sizeof pad);
    for (size_t i = 0; i < npads && rc == SL_OK; i++)
        if ((rc = read_pad(ds, &pads[i], pad)) == SL_OK)
            pad[sl_dataset_column_index(ds, pads[i].column)].on = 1;
    if (rc != SL_OK)
        return rc;
    /* Columns not named: to the batch's largest, with 0 (MindSpore's). */
    for (size_t c = 0; c < ds->schema.ncols; c++)
        if (!pad[c].on)
            pad[c] = (sl__pad_col){.on = 1, .ndim = -1};
    rc = sl_dataset_batch(ds, batch_size, drop_remainder, num_parallel_workers);
    if (rc != SL_OK)
        return rc;
    ds->nodes[ds->nnodes - 1].padded = 1;
    memcpy(ds->nodes[ds->nnodes - 1].pad, pad, sizeof pad);
    /* A padded dimension is the pad's size, or the batch's largest: the
     * column's own size when every row has it, else known only then. */
    for (size_t c = 0; c < ds->schema.ncols; c++) {
        sl_tensor_spec *s = &ds->schema.specs[c];
        for (int d = 1; d < s->ndim; d++)
            if (pad[c].ndim >= 0 && pad[c].shape[d - 1] >= 0)
                s->shape[d] = pad[c].shape[d - 1];
    }
    return SL_OK;
}
