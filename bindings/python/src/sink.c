/* sink.c: sluice._sluice.DataSink (sl_data_sink: MindSpore's data_sink)
 * and sluice._sluice.DatasetHelper (sl_dataset_helper: the dataset helper
 * of custom training loops). Each holds its model and a private copy of
 * its dataset; its pipeline and transfer thread run from its making until
 * close() (or its end), which joins them. Every call that trains runs as
 * the model's training does (run.c): on a thread of its own, the caller
 * waiting without the GIL, Ctrl-C stopping it. */
#include "sluice_py.h"

#include <string.h>

/* A 0-d float32 Tensor holding v (a loss, as MindSpore returns it). */
static PyObject *loss_tensor(float v)
{
    sl_tensor *t;
    int rc = sl_tensor_new(&t, SL_FLOAT32, 0, NULL);
    if (rc < 0)
        return slpy_raise(rc, NULL);
    *(float *)sl_tensor_data(t) = v;
    return slpy_tensor_wrap(t);
}

/* Frees what a sink or helper holds, under its model's lock (waited for
 * without checking signals: this runs in dealloc too) and without the GIL. */
static void release(slpy_model *model, void (*free_fn)(void *), void *handle, sl_dataset *ds)
{
    int in_call = atomic_load(&model->job_thread) == PyThread_get_thread_ident();
    Py_BEGIN_ALLOW_THREADS
    if (!in_call)
        PyThread_acquire_lock(model->lock, WAIT_LOCK);
    if (handle)
        free_fn(handle);
    if (!in_call)
        PyThread_release_lock(model->lock);
    sl_dataset_free(ds);
    Py_END_ALLOW_THREADS
}

/* The model and a copy of the dataset of a new sink or helper; -1 with an
 * exception. */
static int take_args(PyObject *model_o, PyObject *ds_o, slpy_model **model, sl_dataset **ds)
{
    if (!PyObject_TypeCheck(model_o, &slpy_model_type) ||
        !PyObject_TypeCheck(ds_o, &slpy_dataset_type)) {
        PyErr_SetString(PyExc_TypeError, "a Model and a Dataset are needed");
        return -1;
    }
    *ds = slpy_dataset_copy_c((slpy_dataset *)ds_o);
    if (!*ds)
        return -1;
    *model = (slpy_model *)Py_NewRef(model_o);
    return 0;
}

/* --- DataSink --------------------------------------------------------------------------- */

typedef struct slpy_data_sink {
    PyObject_HEAD
    slpy_model *model;
    sl_dataset *ds;
    sl_data_sink *s; /* NULL once closed */
} slpy_data_sink;

static void free_sink(void *s)
{
    sl_data_sink_free(s);
}

/* DataSink(model, dataset, sink_size) */
static PyObject *sink_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *model_o, *ds_o;
    long long sink_size;
    slpy_data_sink *self;
    char msg[1024] = "";
    int locked, rc;
    if ((kwargs && PyDict_Size(kwargs) > 0) ||
        !PyArg_ParseTuple(args, "OOL:DataSink", &model_o, &ds_o, &sink_size)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "DataSink(model, dataset, sink_size)");
        return NULL;
    }
    self = (slpy_data_sink *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    if (take_args(model_o, ds_o, &self->model, &self->ds) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    locked = slpy_model_lock(self->model, 0, "data_sink");
    if (locked < 0) {
        Py_DECREF(self);
        return NULL;
    }
    /* Starts the pipeline and the transfer thread. */
    Py_BEGIN_ALLOW_THREADS
    rc = sl_data_sink_new(&self->s, self->model->m, self->ds, sink_size, NULL);
    if (rc < 0)
        snprintf(msg, sizeof msg, "%s", sl_model_last_error(self->model->m));
    Py_END_ALLOW_THREADS
    slpy_model_unlock(self->model, locked);
    if (rc < 0) {
        Py_DECREF(self);
        return slpy_raise(rc, msg);
    }
    return (PyObject *)self;
}

static void sink_close_now(slpy_data_sink *self)
{
    if (!self->model)
        return;
    release(self->model, free_sink, self->s, self->ds);
    self->s = NULL;
    self->ds = NULL;
    Py_CLEAR(self->model);
}

static void sink_dealloc(PyObject *o)
{
    sink_close_now((slpy_data_sink *)o);
    Py_TYPE(o)->tp_free(o);
}

typedef struct sink_call {
    slpy_call call;
    sl_data_sink *s;
    float loss;
} sink_call;

static int sink_fn(slpy_call *call)
{
    sink_call *c = (sink_call *)call;
    int rc = sl_data_sink_call(c->s, &c->loss);
    if (rc < 0)
        snprintf(call->msg, sizeof call->msg, "%s", sl_model_last_error(call->m));
    return rc;
}

/* sink() -> Tensor: runs sink_size steps; the last step's loss. */
static PyObject *sink_call_method(PyObject *o, PyObject *args, PyObject *kwargs)
{
    slpy_data_sink *self = (slpy_data_sink *)o;
    sink_call c;
    if (!PyArg_ParseTuple(args, ":DataSink") || (kwargs && PyDict_Size(kwargs) > 0)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "a data sink takes no arguments");
        return NULL;
    }
    if (!self->s) {
        PyErr_SetString(PyExc_RuntimeError, "data_sink: the sink is closed");
        return NULL;
    }
    memset(&c, 0, sizeof c);
    c.call.what = "data_sink";
    c.call.fn = sink_fn;
    c.s = self->s;
    if (slpy_model_run(self->model, &c.call) < 0)
        return NULL;
    if (c.call.rc < 0)
        return slpy_raise_runtime(c.call.rc, c.call.msg);
    return loss_tensor(c.loss);
}

static PyObject *sink_close(PyObject *o, PyObject *unused)
{
    (void)unused;
    sink_close_now((slpy_data_sink *)o);
    Py_RETURN_NONE;
}

static PyMethodDef sink_methods[] = {
    {"close", sink_close, METH_NOARGS,
     "close(): stops the pipeline and the transfer thread and joins them."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject slpy_data_sink_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sluice._sluice.DataSink",
    .tp_basicsize = sizeof(slpy_data_sink),
    .tp_dealloc = sink_dealloc,
    .tp_call = sink_call_method,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "DataSink(model, dataset, sink_size): sl_data_sink; see sluice.data_sink.",
    .tp_methods = sink_methods,
    .tp_new = sink_new,
};

/* --- DatasetHelper -------------------------------------------------------------------------- */

typedef struct slpy_dataset_helper {
    PyObject_HEAD
    slpy_model *model;
    sl_dataset *ds;
    sl_dataset_helper *h; /* NULL once closed */
} slpy_dataset_helper;

static void free_helper(void *h)
{
    sl_dataset_helper_free(h);
}

/* DatasetHelper(model, dataset, sink_mode, sink_size, epoch_num) */
static PyObject *helper_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *model_o, *ds_o;
    long long sink_size, epoch_num;
    int sink_mode, locked, rc;
    slpy_dataset_helper *self;
    char msg[1024] = "";
    if ((kwargs && PyDict_Size(kwargs) > 0) ||
        !PyArg_ParseTuple(args, "OOpLL:DatasetHelper", &model_o, &ds_o, &sink_mode, &sink_size,
                          &epoch_num)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError,
                            "DatasetHelper(model, dataset, sink_mode, sink_size, epoch_num)");
        return NULL;
    }
    self = (slpy_dataset_helper *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    if (take_args(model_o, ds_o, &self->model, &self->ds) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    locked = slpy_model_lock(self->model, 0, "dataset helper");
    if (locked < 0) {
        Py_DECREF(self);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = sl_dataset_helper_new(&self->h, self->model->m, self->ds, sink_mode, sink_size,
                               epoch_num, NULL);
    if (rc < 0)
        snprintf(msg, sizeof msg, "%s", sl_model_last_error(self->model->m));
    Py_END_ALLOW_THREADS
    slpy_model_unlock(self->model, locked);
    if (rc < 0) {
        Py_DECREF(self);
        return slpy_raise(rc, msg);
    }
    return (PyObject *)self;
}

static void helper_close_now(slpy_dataset_helper *self)
{
    if (!self->model)
        return;
    release(self->model, free_helper, self->h, self->ds);
    self->h = NULL;
    self->ds = NULL;
    Py_CLEAR(self->model);
}

static void helper_dealloc(PyObject *o)
{
    helper_close_now((slpy_dataset_helper *)o);
    Py_TYPE(o)->tp_free(o);
}

typedef struct helper_call {
    slpy_call call;
    sl_dataset_helper *h;
    float loss;
} helper_call;

static int helper_fn(slpy_call *call)
{
    helper_call *c = (helper_call *)call;
    int rc = sl_dataset_helper_next(c->h, &c->loss);
    if (rc < 0)
        snprintf(call->msg, sizeof call->msg, "%s", sl_model_last_error(call->m));
    return rc;
}

/* next() -> (status, loss): (0, Tensor) after a sink (or a step),
 * (END_OF_EPOCH, None) when the epoch's iterations are done,
 * (END_OF_DATA, None) after the last epoch. */
static PyObject *helper_next(PyObject *o, PyObject *unused)
{
    slpy_dataset_helper *self = (slpy_dataset_helper *)o;
    helper_call c;
    (void)unused;
    if (!self->h) {
        PyErr_SetString(PyExc_RuntimeError, "dataset helper: the helper is closed");
        return NULL;
    }
    memset(&c, 0, sizeof c);
    c.call.what = "dataset helper";
    c.call.fn = helper_fn;
    c.h = self->h;
    if (slpy_model_run(self->model, &c.call) < 0)
        return NULL;
    if (c.call.rc < 0)
        return slpy_raise_runtime(c.call.rc, c.call.msg);
    if (c.call.rc > 0)
        return Py_BuildValue("(iO)", c.call.rc, Py_None);
    return Py_BuildValue("(iN)", 0, loss_tensor(c.loss));
}

static PyObject *helper_close(PyObject *o, PyObject *unused)
{
    (void)unused;
    helper_close_now((slpy_dataset_helper *)o);
    Py_RETURN_NONE;
}

static PyMethodDef helper_methods[] = {
    {"next", helper_next, METH_NOARGS,
     "next() -> (status, loss): sl_dataset_helper_next (0, END_OF_EPOCH or END_OF_DATA)."},
    {"close", helper_close, METH_NOARGS,
     "close(): stops the pipeline (and the transfer thread) and joins them."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject slpy_dataset_helper_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sluice._sluice.DatasetHelper",
    .tp_basicsize = sizeof(slpy_dataset_helper),
    .tp_dealloc = helper_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "DatasetHelper(model, dataset, sink_mode, sink_size, epoch_num):\n"
              "sl_dataset_helper; see sluice.train.DatasetHelper.",
    .tp_methods = helper_methods,
    .tp_new = helper_new,
};
