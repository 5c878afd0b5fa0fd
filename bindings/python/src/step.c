/* step.c: sluice._sluice.Step, one compiled step of a traced graph run on
 * tensors the caller gives (sl_step_run), for a training cell called
 * eagerly on data: train_network(input, label) runs one training step
 * (forward, loss, backward, updates) and returns the outputs. It owns its
 * graph (and so the parameter values) and a CPU executor; the caller's
 * tensors are copied in, the outputs copied out. */
#include "sluice_py.h"

#include <string.h>

typedef struct slpy_step {
    PyObject_HEAD
    sl_graph *g;
    sl_executor *ex;
    sl_step *s;
    PyThread_type_lock lock; /* one run at a time; parameters read between runs */
} slpy_step;

static void step_dealloc(PyObject *o)
{
    slpy_step *self = (slpy_step *)o;
    sl_step_free(self->s);
    sl_executor_free(self->ex);
    sl_graph_free(self->g);
    if (self->lock)
        PyThread_free_lock(self->lock);
    Py_TYPE(o)->tp_free(o);
}

PyObject *slpy_step_new(sl_graph *g, PyObject *outputs, int train, int mode, int threads)
{
    sl_executor_options eo;
    int outs[16];
    Py_ssize_t n;
    slpy_step *self;
    int rc;

    self = (slpy_step *)slpy_step_type.tp_alloc(&slpy_step_type, 0);
    if (!self) {
        sl_graph_free(g);
        return NULL;
    }
    self->g = g; /* freed with the step, also on failure */
    self->lock = PyThread_allocate_lock();
    if (!self->lock) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    n = PySequence_Size(outputs);
    if (n < 0 || n > (Py_ssize_t)(sizeof outs / sizeof outs[0])) {
        Py_DECREF(self);
        return n < 0 ? NULL : PyErr_Format(PyExc_ValueError, "make_step: at most 16 outputs");
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_GetItem(outputs, i);
        long v = item ? PyLong_AsLong(item) : -1;
        Py_XDECREF(item);
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(self);
            return NULL;
        }
        outs[i] = (int)v;
    }
    sl_executor_options_init(&eo);
    if (threads > 0)
        eo.threads = threads;
    Py_BEGIN_ALLOW_THREADS
    rc = sl_executor_new(&self->ex, &eo);
    if (rc == SL_OK)
        rc = sl_step_new(&self->s, g, self->ex, (sl_mode)mode, outs, (size_t)n, train);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        PyObject *err = slpy_raise(rc, self->ex ? sl_graph_last_error(g)
                                                : "make_step: no executor");
        Py_DECREF(self);
        return err;
    }
    return (PyObject *)self;
}

/* inputs() -> [name]: the graph inputs run() takes, in order. */
static PyObject *step_inputs(PyObject *o, PyObject *unused)
{
    slpy_step *self = (slpy_step *)o;
    size_t n = sl_step_num_inputs(self->s);
    PyObject *list = PyList_New((Py_ssize_t)n);
    (void)unused;
    for (size_t i = 0; list && i < n; i++) {
        PyObject *name = PyUnicode_FromString(sl_graph_node_name(self->g,
                                                                 sl_step_input_node(self->s, i)));
        if (!name) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, name);
    }
    return list;
}

/* run(inputs) -> tuple of Tensors: one run on copies of the inputs (arrays
 * of the inputs' dtypes and shapes), the outputs copied out. */
static PyObject *step_run(PyObject *o, PyObject *args)
{
    slpy_step *self = (slpy_step *)o;
    PyObject *seq, *res = NULL;
    sl_tensor *in[16] = {NULL};
    size_t n = sl_step_num_inputs(self->s), nout = 0;
    char err[256];
    int rc = SL_OK;

    if (!PyArg_ParseTuple(args, "O:run", &seq))
        return NULL;
    if (PySequence_Size(seq) != (Py_ssize_t)n || n > 16) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "run: the step takes %zu inputs, got %zd", n,
                         PySequence_Size(seq));
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        PyObject *item = PySequence_GetItem(seq, (Py_ssize_t)i);
        int bad = !item || slpy_tensor_from_buffer(item, &in[i], err, sizeof err) < 0;
        Py_XDECREF(item);
        if (bad) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "run: input '%s' %s",
                             sl_graph_node_name(self->g, sl_step_input_node(self->s, i)), err);
            goto out;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    rc = sl_step_run(self->s, in, n);
    PyThread_release_lock(self->lock);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        slpy_raise_runtime(rc, sl_step_last_error(self->s));
        goto out;
    }
    while (sl_step_output(self->s, nout, NULL))
        nout++;
    res = PyTuple_New((Py_ssize_t)nout);
    for (size_t k = 0; res && k < nout; k++) {
        sl_tensor_spec spec;
        const void *data = sl_step_output(self->s, k, &spec);
        sl_tensor *t;
        PyObject *v;
        rc = sl_tensor_new(&t, spec.dtype, spec.ndim, spec.shape);
        if (rc < 0) {
            Py_CLEAR(res);
            slpy_raise(rc, NULL);
            break;
        }
        memcpy(sl_tensor_data(t), data, sl_tensor_numel(t) * sl_dtype_size(spec.dtype));
        v = slpy_tensor_wrap(t);
        if (!v) {
            Py_CLEAR(res);
            break;
        }
        PyTuple_SET_ITEM(res, (Py_ssize_t)k, v);
    }
out:
    for (size_t i = 0; i < n; i++)
        if (in[i])
            sl_tensor_release(in[i]);
    return res;
}

/* The parameter (or accumulator) node named name, or -1 with KeyError. */
static int param_node(slpy_step *self, PyObject *name_o, const char **name)
{
    size_t numel;
    int node;
    *name = PyUnicode_AsUTF8(name_o);
    if (!*name)
        return -1;
    node = sl_graph_find(self->g, *name);
    if (node < 0 || !sl_graph_param_data(self->g, node, &numel)) {
        PyErr_Format(PyExc_KeyError, "the step has no parameter or accumulator '%s'", *name);
        return -1;
    }
    return node;
}

/* get_param(name) -> Tensor: a copy of a parameter's (or an accumulator's)
 * values. */
static PyObject *step_get_param(PyObject *o, PyObject *arg)
{
    slpy_step *self = (slpy_step *)o;
    const char *name;
    int node = param_node(self, arg, &name), rc;
    sl_tensor_spec spec;
    sl_tensor *t;
    size_t numel;
    const float *data;
    if (node < 0)
        return NULL;
    data = sl_graph_param_data(self->g, node, &numel);
    sl_graph_node_spec(self->g, node, &spec);
    rc = sl_tensor_new(&t, SL_FLOAT32, spec.ndim, spec.shape);
    if (rc < 0)
        return slpy_raise(rc, NULL);
    memcpy(sl_tensor_data(t), data, numel * sizeof(float));
    return slpy_tensor_wrap(t);
}

/* set_param(name, array): copies float32 values of its shape in. */
static PyObject *step_set_param(PyObject *o, PyObject *args)
{
    slpy_step *self = (slpy_step *)o;
    PyObject *name_o, *value;
    const char *name;
    sl_tensor *t;
    sl_tensor_spec spec;
    size_t numel;
    char err[256], want[128], got[128];
    int node;
    if (!PyArg_ParseTuple(args, "UO:set_param", &name_o, &value))
        return NULL;
    node = param_node(self, name_o, &name);
    if (node < 0)
        return NULL;
    if (slpy_tensor_from_buffer(value, &t, err, sizeof err) < 0)
        return PyErr_Format(PyExc_ValueError, "parameter '%s': the value %s", name, err);
    sl_graph_node_spec(self->g, node, &spec);
    if (sl_tensor_dtype(t) != SL_FLOAT32 || sl_tensor_ndim(t) != spec.ndim ||
        memcmp(sl_tensor_shape(t), spec.shape, (size_t)spec.ndim * sizeof(int64_t)) != 0) {
        PyErr_Format(PyExc_ValueError, "parameter '%s' is float32 %s, the value is %s %s", name,
                     sl_shape_str(want, sizeof want, spec.ndim, spec.shape),
                     sl_dtype_name(sl_tensor_dtype(t)),
                     sl_shape_str(got, sizeof got, sl_tensor_ndim(t), sl_tensor_shape(t)));
        sl_tensor_release(t);
        return NULL;
    }
    memcpy(sl_graph_param_data(self->g, node, &numel), sl_tensor_data(t),
           sl_tensor_numel(t) * sizeof(float));
    sl_tensor_release(t);
    Py_RETURN_NONE;
}

static PyObject *step_nodes(PyObject *o, PyObject *unused)
{
    (void)unused;
    return slpy_graph_nodes(((slpy_step *)o)->g);
}

static PyMethodDef step_methods[] = {
    {"inputs", step_inputs, METH_NOARGS, "inputs() -> [name]: what run() takes, in order"},
    {"run", step_run, METH_VARARGS, "run(inputs) -> tuple of Tensors: one run of the step"},
    {"get_param", step_get_param, METH_O, "get_param(name) -> Tensor (a copy)"},
    {"set_param", step_set_param, METH_VARARGS, "set_param(name, array)"},
    {"get_state", step_get_param, METH_O, "get_state(name) -> Tensor: as get_param"},
    {"set_state", step_set_param, METH_VARARGS, "set_state(name, array): as set_param"},
    {"nodes", step_nodes, METH_NOARGS, "nodes() -> [(op, name)]"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject slpy_step_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sluice._sluice.Step",
    .tp_basicsize = sizeof(slpy_step),
    .tp_dealloc = step_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A compiled step of a traced graph, run on given tensors "
              "(Graph.make_step makes it).",
    .tp_methods = step_methods,
};
