/* dataset_ops.c: the _sluice.Dataset methods that choose, name and combine
 * columns and datasets: project, rename, concat and zip, one C call each
 * (sluice.dataset gives them MindSpore's arguments). */
#include "sluice_py.h"

/* None, or the exception for the C call's status rc and message. */
static PyObject *outcome(int rc, const char *msg)
{
    if (rc != SL_OK)
        return slpy_raise(rc, msg);
    Py_RETURN_NONE;
}

PyObject *slpy_dataset_project(PyObject *o, PyObject *columns)
{
    slpy_dataset *self = (slpy_dataset *)o;
    const char **names = NULL;
    PyObject *items = NULL;
    size_t n = 0;
    char msg[1024];
    int rc;
    if (slpy_string_array(columns, "columns", &names, &n, &items) == 0) {
        PyThreadState *ts = slpy_dataset_begin_call(self);
        rc = sl_dataset_project(self->ds, names, n);
        snprintf(msg, sizeof msg, "%s", sl_dataset_last_error(self->ds));
        slpy_dataset_end_call(self, ts);
        PyMem_Free(names);
        Py_XDECREF(items);
        return outcome(rc, msg);
    }
    PyMem_Free(names);
    Py_XDECREF(items);
    return NULL;
}

PyObject *slpy_dataset_rename(PyObject *o, PyObject *args)
{
    slpy_dataset *self = (slpy_dataset *)o;
    PyObject *in_o, *out_o, *in_items = NULL, *out_items = NULL, *result = NULL;
    const char **in = NULL, **out = NULL;
    size_t nin = 0, nout = 0;
    char msg[1024];
    if (!PyArg_ParseTuple(args, "OO:rename", &in_o, &out_o))
        return NULL;
    if (slpy_string_array(in_o, "input_columns", &in, &nin, &in_items) == 0 &&
        slpy_string_array(out_o, "output_columns", &out, &nout, &out_items) == 0) {
        if (nin != nout) {
            PyErr_Format(PyExc_ValueError,
                         "rename: %zu input_columns but %zu output_columns; give one new name "
                         "per column",
                         nin, nout);
        } else {
            PyThreadState *ts = slpy_dataset_begin_call(self);
            int rc = sl_dataset_rename(self->ds, in, out, nin);
            snprintf(msg, sizeof msg, "%s", sl_dataset_last_error(self->ds));
            slpy_dataset_end_call(self, ts);
            result = outcome(rc, msg);
        }
    }
    PyMem_Free(in);
    PyMem_Free(out);
    Py_XDECREF(in_items);
    Py_XDECREF(out_items);
    return result;
}

/* concat or zip of self (first) and the _sluice.Dataset objects of list. */
static PyObject *combine(PyObject *o, PyObject *list, int zip)
{
    slpy_dataset *self = (slpy_dataset *)o;
    PyObject *items = PySequence_List(list), *result = NULL;
    sl_dataset **parts = NULL;
    Py_ssize_t n;
    char msg[1024];
    if (!items)
        return NULL;
    n = PyList_GET_SIZE(items);
    parts = PyMem_Calloc((size_t)n + 1, sizeof *parts);
    if (!parts) {
        Py_DECREF(items);
        return PyErr_NoMemory();
    }
    /* Private copies: another thread may use the others meanwhile. */
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *item = PyList_GET_ITEM(items, k);
        if (!PyObject_TypeCheck(item, &slpy_dataset_type)) {
            PyErr_Format(PyExc_TypeError, "%s: datasets must hold Dataset, not %.100s",
                         zip ? "zip" : "concat", Py_TYPE(item)->tp_name);
            goto out;
        }
        if (!(parts[k] = slpy_dataset_copy_c((slpy_dataset *)item)))
            goto out;
    }
    {
        PyThreadState *ts = slpy_dataset_begin_call(self);
        const sl_dataset *const *others = (const sl_dataset *const *)parts;
        int rc = zip ? sl_dataset_zip(self->ds, others, (size_t)n)
                     : sl_dataset_concat(self->ds, others, (size_t)n);
        snprintf(msg, sizeof msg, "%s", sl_dataset_last_error(self->ds));
        slpy_dataset_end_call(self, ts);
        result = outcome(rc, msg);
    }
out:
    for (Py_ssize_t k = 0; k < n; k++)
        sl_dataset_free(parts[k]);
    PyMem_Free(parts);
    Py_DECREF(items);
    return result;
}

PyObject *slpy_dataset_concat(PyObject *o, PyObject *datasets)
{
    return combine(o, datasets, 0);
}

PyObject *slpy_dataset_zip(PyObject *o, PyObject *datasets)
{
    return combine(o, datasets, 1);
}
