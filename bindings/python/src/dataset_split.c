/* dataset_split.c: the module functions dataset_split and
 * dataset_batch_padded, sl_dataset_split and sl_dataset_batch_padded on a
 * sluice._sluice.Dataset (sluice.dataset.Dataset.split and batch's
 * pad_info give them MindSpore's arguments). Each runs on the dataset
 * under its lock, as the Dataset's methods do (dataset.c). */
#include "sluice_py.h"

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

PyMethodDef slpy_dataset_split_functions[] = {
    {"dataset_split", dataset_split, METH_VARARGS,
     "dataset_split(ds, sizes, randomize, sampler) -> tuple of Dataset; sampler None or\n"
     "(num_samples, shuffle, seed, num_shards, shard_id)"},
    {"dataset_batch_padded", dataset_batch_padded, METH_VARARGS,
     "dataset_batch_padded(ds, batch_size, drop_remainder, workers, [(column, shape, value)])"},
    {NULL, NULL, 0, NULL},
};
