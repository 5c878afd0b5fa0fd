/* dataset_split.c: the module functions dataset_split,
 * dataset_batch_padded and dataset_batch_map: sl_dataset_split,
 * sl_dataset_batch_padded and sl_dataset_batch_map on a
 * sluice._sluice.Dataset (sluice.dataset.Dataset.split and batch's
 * pad_info and per_batch_map give them MindSpore's arguments). Each runs
 * on the dataset under its lock, as the Dataset's methods do (dataset.c).
 * A per_batch_map runs in the batch workers, taking the GIL for the call
 * as a Python map operation does (op.c). */
#include "sluice_py.h"

#include <stdio.h>
#include <string.h>

#define SLPY_MAX_SPLIT 1024

static slpy_dataset *as_dataset(PyObject *o)
{
    if (!PyObject_TypeCheck(o, &slpy_dataset_type)) {
        PyErr_SetString(PyExc_TypeError, "expected a sluice._sluice.Dataset");
        return NULL;
    }
    return (slpy_dataset *)o;
}

/* dataset_split(ds, sizes, randomize, sampler) -> tuple of Dataset;
 * sampler None or (num_samples, shuffle, seed, num_shards, shard_id). */
static PyObject *dataset_split(PyObject *mod, PyObject *args)
{
    PyObject *dso, *sizes_o, *sampler_o, *out = NULL;
    int randomize;
    long long so[5] = {0};
    int64_t sizes[SLPY_MAX_SPLIT];
    sl_dataset *parts[SLPY_MAX_SPLIT];
    sl_sampler_options sampler;
    slpy_dataset *self;
    Py_ssize_t n;
    char msg[1024];
    int rc;
    (void)mod;
    if (!PyArg_ParseTuple(args, "OOpO:dataset_split", &dso, &sizes_o, &randomize, &sampler_o) ||
        !(self = as_dataset(dso)))
        return NULL;
    if (!PyList_Check(sizes_o) || (n = PyList_GET_SIZE(sizes_o)) > SLPY_MAX_SPLIT) {
        PyErr_Format(PyExc_ValueError, "split: sizes must be a list of at most %d ints",
                     SLPY_MAX_SPLIT);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if ((sizes[i] = PyLong_AsLongLong(PyList_GET_ITEM(sizes_o, i))) == -1 &&
            PyErr_Occurred())
            return NULL;
    sl_sampler_options_init(&sampler);
    if (sampler_o != Py_None) {
        if (!PyArg_ParseTuple(sampler_o, "LLLLL", &so[0], &so[1], &so[2], &so[3], &so[4]))
            return NULL;
        sampler.num_samples = so[0];
        sampler.shuffle = so[1] != 0;
        sampler.seed = (uint64_t)so[2];
        sampler.num_shards = so[3];
        sampler.shard_id = so[4];
    }
    {
        PyThreadState *ts = slpy_dataset_begin_call(self);
        rc = sl_dataset_split(self->ds, sizes, (size_t)n, randomize,
                              sampler_o == Py_None ? NULL : &sampler, parts);
        snprintf(msg, sizeof msg, "%s", sl_dataset_last_error(self->ds));
        slpy_dataset_end_call(self, ts);
    }
    if (rc != SL_OK)
        return slpy_raise(rc, msg);
    out = PyTuple_New(n);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *part = out ? slpy_dataset_wrap(parts[i]) : NULL;
        if (!part) {
            for (Py_ssize_t k = out ? i + 1 : i; k < n; k++)
                sl_dataset_free(parts[k]);
            Py_XDECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, i, part);
    }
    return out;
}

/* One pad_info entry (column, shape or None, value) into *p; the column's
 * name is borrowed from the tuple. */
static int read_pad(PyObject *entry, sl_batch_pad *p)
{
    PyObject *shape;
    if (!PyArg_ParseTuple(entry, "sOd", &p->column, &shape, &p->value))
        return -1;
    p->ndim = -1;
    if (shape == Py_None)
        return 0;
    if (!PyList_Check(shape) || PyList_GET_SIZE(shape) > SL_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "batch: pad_info shape of column '%s' must be None or "
                     "a list of at most %d sizes", p->column, SL_MAX_DIMS);
        return -1;
    }
    p->ndim = (int)PyList_GET_SIZE(shape);
    for (int d = 0; d < p->ndim; d++) {
        PyObject *v = PyList_GET_ITEM(shape, d);
        p->shape[d] = v == Py_None ? -1 : PyLong_AsLongLong(v);
        if (p->shape[d] == -1 && PyErr_Occurred())
            return -1;
    }
    return 0;
}

/* dataset_batch_padded(ds, batch_size, drop_remainder, workers,
 * [(column, shape or None, value), ...]) */
static PyObject *dataset_batch_padded(PyObject *mod, PyObject *args)
{
    PyObject *dso, *pads_o;
    long long size;
    int drop, workers, rc;
    sl_batch_pad pads[SL_MAX_COLUMNS];
    slpy_dataset *self;
    Py_ssize_t n;
    char msg[1024];
    (void)mod;
    if (!PyArg_ParseTuple(args, "OLpiO!:dataset_batch_padded", &dso, &size, &drop, &workers,
                          &PyList_Type, &pads_o) ||
        !(self = as_dataset(dso)))
        return NULL;
    if ((n = PyList_GET_SIZE(pads_o)) > SL_MAX_COLUMNS)
        return PyErr_Format(PyExc_ValueError, "batch: pad_info has %zd columns, more than a "
                            "dataset has", n);
    memset(pads, 0, sizeof pads);
    for (Py_ssize_t i = 0; i < n; i++)
        if (read_pad(PyList_GET_ITEM(pads_o, i), &pads[i]) < 0)
            return NULL;
    {
        PyThreadState *ts = slpy_dataset_begin_call(self);
        rc = sl_dataset_batch_padded(self->ds, size, drop, workers, pads, (size_t)n);
        snprintf(msg, sizeof msg, "%s", sl_dataset_last_error(self->ds));
        slpy_dataset_end_call(self, ts);
    }
    if (rc != SL_OK)
        return slpy_raise(rc, msg);
    Py_RETURN_NONE;
}

/* The per-batch function: calls the Python callable (user) as
 * user(batch_num, epoch_num, [Tensor, ...] per input column), which returns
 * one sequence of nrows values per output column (sluice.dataset's
 * wrapper shapes the user's result so); each value is copied into a
 * tensor (a Tensor is taken as it is). */
static int pybatch_call(void *user, const sl_batch_info *info, sl_tensor *const *in, size_t nin,
                        size_t nrows, sl_tensor **out, size_t nout, char *err, size_t errlen)
{
    PyGILState_STATE gil;
    PyObject *args, *res = NULL;
    int rc = SL_OK;
    if (!Py_IsInitialized() || slpy_interpreter_finalizing()) {
        snprintf(err, errlen, "the Python interpreter is shutting down");
        return SL_ECANCELED;
    }
    gil = PyGILState_Ensure();
    args = Py_BuildValue("(LL)", (long long)info->batch_num, (long long)info->epoch_num);
    if (args && _PyTuple_Resize(&args, (Py_ssize_t)(2 + nin)) == 0) {
        for (size_t c = 0; c < nin && args; c++) {
            PyObject *col = PyList_New((Py_ssize_t)nrows);
            for (size_t r = 0; col && r < nrows; r++) {
                PyObject *t = slpy_tensor_wrap(sl_tensor_retain(in[c * nrows + r]));
                if (!t)
                    Py_CLEAR(col);
                else
                    PyList_SET_ITEM(col, (Py_ssize_t)r, t);
            }
            if (col)
                PyTuple_SET_ITEM(args, (Py_ssize_t)(2 + c), col);
            else
                Py_CLEAR(args);
        }
    }
    if (args)
        res = PyObject_Call((PyObject *)user, args, NULL);
    Py_XDECREF(args);
    if (!res) {
        rc = PyErr_ExceptionMatches(PyExc_MemoryError) ? SL_ENOMEM : SL_EINVAL;
        slpy_exception_text(err, errlen);
    }
    for (size_t k = 0; rc == SL_OK && k < nout; k++) {
        PyObject *col = PySequence_GetItem(res, (Py_ssize_t)k);
        for (size_t r = 0; col && rc == SL_OK && r < nrows; r++) {
            PyObject *v = PySequence_GetItem(col, (Py_ssize_t)r);
            if (v && PyObject_TypeCheck(v, &slpy_tensor_type))
                out[k * nrows + r] = sl_tensor_retain(((slpy_tensor *)v)->t);
            else if (!v || slpy_tensor_from_buffer(v, &out[k * nrows + r], err, errlen) < 0)
                rc = SL_EINVAL;
            Py_XDECREF(v);
        }
        if (!col)
            rc = SL_EINVAL;
        Py_XDECREF(col);
        if (PyErr_Occurred())
            slpy_exception_text(err, errlen);
    }
    Py_XDECREF(res);
    PyGILState_Release(gil);
    return rc;
}

/* Column names of a list of str into names (borrowed from the list). */
static int read_names(PyObject *list, const char **names, size_t *n)
{
    Py_ssize_t len = PyList_GET_SIZE(list);
    if (len > SL_MAX_COLUMNS) {
        PyErr_Format(PyExc_ValueError, "batch: at most %d columns, got %zd", SL_MAX_COLUMNS,
                     len);
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++)
        if (!(names[i] = PyUnicode_AsUTF8(PyList_GET_ITEM(list, i))))
            return -1;
    *n = (size_t)len;
    return 0;
}

/* dataset_batch_map(ds, batch_size, drop_remainder, workers, fn, [input column],
 * [output column] or None) */
static PyObject *dataset_batch_map(PyObject *mod, PyObject *args)
{
    PyObject *dso, *fn, *ins, *outs;
    long long size;
    int drop, workers, rc;
    const char *in_names[SL_MAX_COLUMNS], *out_names[SL_MAX_COLUMNS];
    sl_batch_map_options o;
    slpy_dataset *self;
    char msg[1024];
    (void)mod;
    if (!PyArg_ParseTuple(args, "OLpiOO!O:dataset_batch_map", &dso, &size, &drop, &workers, &fn,
                          &PyList_Type, &ins, &outs) ||
        !(self = as_dataset(dso)))
        return NULL;
    sl_batch_map_options_init(&o);
    if (read_names(ins, in_names, &o.num_input_columns) < 0)
        return NULL;
    if (outs != Py_None) {
        if (!PyList_Check(outs))
            return PyErr_Format(PyExc_TypeError, "batch: output_columns must be a list");
        if (read_names(outs, out_names, &o.num_output_columns) < 0)
            return NULL;
        o.output_columns = out_names;
    }
    o.input_columns = in_names;
    o.fn = pybatch_call;
    o.destroy = slpy_release_object;
    o.user = fn;
    {
        PyThreadState *ts = slpy_dataset_begin_call(self);
        rc = sl_dataset_batch_map(self->ds, size, drop, workers, &o);
        snprintf(msg, sizeof msg, "%s", sl_dataset_last_error(self->ds));
        slpy_dataset_end_call(self, ts);
    }
    if (rc != SL_OK)
        return slpy_raise(rc, msg);
    Py_INCREF(fn); /* the node's, given back by slpy_release_object */
    Py_RETURN_NONE;
}

PyMethodDef slpy_dataset_split_functions[] = {
    {"dataset_batch_map", dataset_batch_map, METH_VARARGS,
     "dataset_batch_map(ds, batch_size, drop_remainder, workers, fn, input_columns,\n"
     "                  output_columns or None): fn(batch_num, epoch_num, *columns) -> one\n"
     "sequence of rows per output column, called in the batch workers with the GIL"},
    {"dataset_split", dataset_split, METH_VARARGS,
     "dataset_split(ds, sizes, randomize, sampler) -> tuple of Dataset; sampler None or\n"
     "(num_samples, shuffle, seed, num_shards, shard_id)"},
    {"dataset_batch_padded", dataset_batch_padded, METH_VARARGS,
     "dataset_batch_padded(ds, batch_size, drop_remainder, workers, [(column, shape, value)])"},
    {NULL, NULL, 0, NULL},
};
