/* sources.c: the sources over Python's data, as module functions on a
 * _sluice.Dataset: dataset_slices (NumpySlicesDataset: the arrays' memory,
 * held through the buffer protocol until sluice gives it back) and
 * dataset_generator (GeneratorDataset: a Python callable called by index
 * from the pipeline's threads, each call holding the GIL). The Python
 * package (sluice/dataset/_python_sources.py) turns the user's data into
 * what these take: C-contiguous arrays of sluice's dtypes. */
#include "sluice_py.h"

#include <pthread.h>
#include <string.h>

/* Runs fn(ds, opts) without the GIL under ds's lock (as dataset.c's calls
 * do); its message into msg. */
static int call_locked(slpy_dataset *ds, int (*fn)(sl_dataset *, const void *), const void *opts,
                       char *msg, size_t len)
{
    int rc;
    PyThreadState *ts = PyEval_SaveThread();
    PyThread_acquire_lock(ds->lock, WAIT_LOCK);
    rc = fn(ds->ds, opts);
    snprintf(msg, len, "%s", sl_dataset_last_error(ds->ds));
    PyThread_release_lock(ds->lock);
    PyEval_RestoreThread(ts);
    return rc;
}

/* --- slices ------------------------------------------------------------------------- */

/* The arrays' buffers, held while sluice reads them. */
typedef struct held_buffers {
    size_t n;
    Py_buffer view[SL_MAX_COLUMNS];
} held_buffers;

static void held_free(held_buffers *h)
{
    for (size_t i = 0; i < h->n; i++)
        PyBuffer_Release(&h->view[i]);
    PyMem_RawFree(h);
}

/* sl_slices_options.release: the last row or the source went, on any thread. */
static void held_release(void *user)
{
    PyGILState_STATE gil;
    if (!Py_IsInitialized())
        return; /* the interpreter and its arrays are gone */
    gil = PyGILState_Ensure();
    held_free(user);
    PyGILState_Release(gil);
}

static int slices_call(sl_dataset *ds, const void *o)
{
    return sl_dataset_slices(ds, o);
}

/* Takes a C-contiguous buffer of each array into h and describes it in col. */
static int hold_column(held_buffers *h, PyObject *name, PyObject *array, sl_slices_column *col)
{
    Py_buffer *v = &h->view[h->n];
    const char *cname = PyUnicode_AsUTF8(name);
    if (!cname)
        return -1;
    if (PyObject_GetBuffer(array, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    h->n++;
    col->name = cname;
    col->data = v->buf;
    if (slpy_format_dtype(v->format, v->itemsize, &col->dtype) < 0) {
        PyErr_Format(PyExc_ValueError, "column '%s': format '%s' is not a sluice dtype", cname,
                     v->format ? v->format : "B");
        return -1;
    }
    if (v->ndim < 1 || v->ndim > SL_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "column '%s': %d dimensions, must be 1 to %d (the first "
                     "is the rows)", cname, v->ndim, SL_MAX_DIMS);
        return -1;
    }
    col->ndim = v->ndim;
    for (int d = 0; d < v->ndim; d++)
        col->shape[d] = (int64_t)v->shape[d];
    return 0;
}

/* dataset_slices(ds, [(name, array)], num_samples, shuffle, seed, num_shards, shard_id) */
static PyObject *dataset_slices(PyObject *self, PyObject *args)
{
    PyObject *ds, *columns, *seed;
    long long num_samples, num_shards, shard_id;
    int shuffle, rc;
    sl_slices_column cols[SL_MAX_COLUMNS];
    sl_slices_options o;
    held_buffers *h;
    char msg[1024];
    Py_ssize_t n;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!O!LpOLL:dataset_slices", &slpy_dataset_type, &ds,
                          &PyList_Type, &columns, &num_samples, &shuffle, &seed, &num_shards,
                          &shard_id))
        return NULL;
    n = PyList_GET_SIZE(columns);
    if (n < 1 || n > SL_MAX_COLUMNS)
        return PyErr_Format(PyExc_ValueError, "%zd columns: 1 to %d are supported", n,
                            SL_MAX_COLUMNS);
    if (!(h = PyMem_RawCalloc(1, sizeof *h)))
        return PyErr_NoMemory();
    memset(cols, 0, sizeof cols);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PyList_GET_ITEM(columns, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "dataset_slices: columns are (name, array) pairs");
            goto fail;
        }
        if (hold_column(h, PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1), &cols[i]) < 0)
            goto fail;
    }
    sl_slices_options_init(&o);
    o.columns = cols;
    o.ncols = (size_t)n;
    o.release = held_release;
    o.user = h;
    if (slpy_fill_sampler(&o.sampler, num_samples, shuffle, seed, num_shards, shard_id) < 0)
        goto fail;
    rc = call_locked((slpy_dataset *)ds, slices_call, &o, msg, sizeof msg);
    if (rc != SL_OK) {
        held_free(h); /* refused: sluice holds nothing */
        return slpy_raise(rc, msg);
    }
    Py_RETURN_NONE;
fail:
    held_free(h);
    return NULL;
}

/* --- generator ---------------------------------------------------------------------- */

/* A pipeline thread's Python thread state, made at its first call and kept
 * for the next ones: PyGILState_Ensure on a thread without one makes and
 * deletes a state on every call, which costs more than the call itself
 * (rows of a 28x28 uint8 image and a label: 80,000 rows/s with a state
 * made per call, 300,000 with it kept, on a 2-vCPU EPYC). Freed when the
 * thread exits (its joiner never holds the GIL). */
static pthread_key_t state_key;
static pthread_once_t state_once = PTHREAD_ONCE_INIT;

static void state_free(void *p)
{
    if (!Py_IsInitialized() || slpy_interpreter_finalizing())
        return; /* the interpreter frees its states itself */
    PyEval_RestoreThread(p);
    PyThreadState_Clear(p);
    PyThreadState_DeleteCurrent();
}

static void state_key_make(void)
{
    if (pthread_key_create(&state_key, state_free) != 0)
        abort(); /* only when the process is out of keys */
}

static PyGILState_STATE gil_take(void)
{
    if (!PyGILState_GetThisThreadState()) {
        /* Made without the GIL, noted as this thread's (so that the
         * PyGILState calls below use it) and kept. */
        PyThreadState *ts = PyThreadState_New(PyInterpreterState_Main());
        pthread_once(&state_once, state_key_make);
        if (ts)
            pthread_setspecific(state_key, ts);
    }
    return PyGILState_Ensure();
}

/* sl_generator_options.read: fetch(index) -> a tuple of ncols arrays. */
static int generator_read(void *user, int64_t index, sl_tensor **cols, size_t ncols, char *msg,
                          size_t msglen)
{
    PyGILState_STATE gil;
    PyObject *row;
    int rc = 0;
    if (!Py_IsInitialized() || slpy_interpreter_finalizing()) {
        snprintf(msg, msglen, "the Python interpreter is shutting down");
        return SL_ECANCELED;
    }
    gil = gil_take();
    row = PyObject_CallFunction((PyObject *)user, "L", (long long)index);
    if (!row) {
        slpy_exception_text(msg, msglen);
        rc = -1;
    } else if (!PyTuple_Check(row) || (size_t)PyTuple_GET_SIZE(row) != ncols) {
        snprintf(msg, msglen, "the row is not a tuple of %zu columns", ncols);
        rc = -1;
    }
    for (size_t c = 0; rc == 0 && c < ncols; c++) {
        PyObject *item = PyTuple_GET_ITEM(row, c);
        if (PyObject_TypeCheck(item, &slpy_tensor_type))
            cols[c] = sl_tensor_retain(((slpy_tensor *)item)->t);
        else if (slpy_tensor_from_buffer(item, &cols[c], msg, msglen) < 0)
            rc = -1;
    }
    Py_XDECREF(row);
    PyGILState_Release(gil);
    return rc;
}

static int generator_call(sl_dataset *ds, const void *o)
{
    return sl_dataset_generator(ds, o);
}

/* One spec from (dtype name, shape tuple with -1 for any size). */
static int parse_spec(PyObject *pair, sl_tensor_spec *spec)
{
    PyObject *shape;
    Py_ssize_t nd;
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 ||
        !PyTuple_Check(shape = PyTuple_GET_ITEM(pair, 1))) {
        PyErr_SetString(PyExc_TypeError, "dataset_generator: specs are (dtype, shape) pairs");
        return -1;
    }
    if (slpy_parse_dtype(PyTuple_GET_ITEM(pair, 0), &spec->dtype) < 0)
        return -1;
    nd = PyTuple_GET_SIZE(shape);
    if (nd > SL_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "a column of %zd dimensions; sluice takes at most %d", nd,
                     SL_MAX_DIMS);
        return -1;
    }
    spec->ndim = (int)nd;
    for (Py_ssize_t d = 0; d < nd; d++)
        if (slpy_as_int64(PyTuple_GET_ITEM(shape, d), &spec->shape[d]) < 0)
            return -1;
    return 0;
}

/* dataset_generator(ds, fetch, num_rows, [name], [(dtype, shape)], in_order, num_samples,
 * shuffle, seed, num_shards, shard_id) */
static PyObject *dataset_generator(PyObject *self, PyObject *args)
{
    PyObject *ds, *fetch, *names, *specs, *seed;
    long long num_rows, num_samples, num_shards, shard_id;
    int in_order, shuffle, rc;
    const char *cnames[SL_MAX_COLUMNS];
    sl_tensor_spec cspecs[SL_MAX_COLUMNS];
    sl_generator_options o;
    char msg[1024];
    Py_ssize_t n;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!OLO!O!pLpOLL:dataset_generator", &slpy_dataset_type, &ds,
                          &fetch, &num_rows, &PyList_Type, &names, &PyList_Type, &specs,
                          &in_order, &num_samples, &shuffle, &seed, &num_shards, &shard_id))
        return NULL;
    n = PyList_GET_SIZE(names);
    if (n < 1 || n > SL_MAX_COLUMNS || PyList_GET_SIZE(specs) != n)
        return PyErr_Format(PyExc_ValueError, "%zd columns (and %zd specs): 1 to %d are "
                            "supported", n, PyList_GET_SIZE(specs), SL_MAX_COLUMNS);
    memset(cspecs, 0, sizeof cspecs);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!(cnames[i] = PyUnicode_AsUTF8(PyList_GET_ITEM(names, i))) ||
            parse_spec(PyList_GET_ITEM(specs, i), &cspecs[i]) < 0)
            return NULL;
    }
    sl_generator_options_init(&o);
    o.num_rows = num_rows;
    o.ncols = (size_t)n;
    o.column_names = cnames;
    o.column_specs = cspecs;
    o.read = generator_read;
    o.user = fetch;
    o.release = slpy_release_object;
    o.in_order = in_order;
    if (slpy_fill_sampler(&o.sampler, num_samples, shuffle, seed, num_shards, shard_id) < 0)
        return NULL;
    Py_INCREF(fetch); /* the source's, from here on (released by slpy_release_object) */
    rc = call_locked((slpy_dataset *)ds, generator_call, &o, msg, sizeof msg);
    if (rc != SL_OK) {
        Py_DECREF(fetch);
        return slpy_raise(rc, msg);
    }
    Py_RETURN_NONE;
}

PyMethodDef slpy_source_functions[] = {
    {"dataset_slices", dataset_slices, METH_VARARGS,
     "dataset_slices(ds, [(name, array)], num_samples, shuffle, seed, num_shards, shard_id):\n"
     "ds's source becomes the arrays' rows along their first dimension, without a copy."},
    {"dataset_generator", dataset_generator, METH_VARARGS,
     "dataset_generator(ds, fetch, num_rows, names, [(dtype, shape)], in_order, num_samples,\n"
     "shuffle, seed, num_shards, shard_id): ds's source becomes fetch(index) -> tuple of\n"
     "arrays, called from the pipeline's threads with the GIL."},
    {NULL, NULL, 0, NULL},
};
