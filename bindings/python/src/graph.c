/* graph.c: sluice._sluice.Graph, one sl_graph being built: the node
 * builders of graph.h with plain arguments (node ids in, node ids out),
 * which sluice.nn's tracing calls while it runs a Cell's construct on
 * symbolic tensors. make_model() hands the finished graph to a new
 * sluice._sluice.Model (sl_model_new_from_graph), after which the Graph is
 * empty: the model owns the nodes and the parameter values. */
#include "sluice_py.h"

#include <string.h>

typedef struct slpy_graph {
    PyObject_HEAD
    sl_graph *g; /* NULL once a model took it */
} slpy_graph;

static PyObject *graph_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"seed", NULL};
    unsigned long long seed = 0;
    slpy_graph *self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|K:Graph", kwlist, &seed))
        return NULL;
    self = (slpy_graph *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    if (sl_graph_new(&self->g) != SL_OK) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    sl_graph_set_seed(self->g, seed);
    return (PyObject *)self;
}

static void graph_dealloc(PyObject *o)
{
    slpy_graph *self = (slpy_graph *)o;
    sl_graph_free(self->g);
    Py_TYPE(o)->tp_free(o);
}

/* The graph, or NULL with RuntimeError once a model has taken it. */
static sl_graph *live(PyObject *o)
{
    slpy_graph *self = (slpy_graph *)o;
    if (!self->g)
        PyErr_SetString(PyExc_RuntimeError,
                        "Graph: a model has taken this graph; build a new one");
    return self->g;
}

/* A builder's result: the node id, or ValueError with the graph's message. */
static PyObject *node_result(sl_graph *g, int node)
{
    if (node < 0)
        return slpy_raise(node, sl_graph_last_error(g));
    return PyLong_FromLong(node);
}

/* A shape (a sequence of ints) into shape[]; returns ndim or -1. */
static int parse_shape(PyObject *seq, int64_t *shape)
{
    PyObject *fast = PySequence_Fast(seq, "a shape must be a sequence of ints");
    Py_ssize_t n;
    if (!fast)
        return -1;
    n = PySequence_Fast_GET_SIZE(fast);
    if (n > SL_MAX_DIMS) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "a shape has at most %d dimensions, got %zd",
                     SL_MAX_DIMS, n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (slpy_as_int64(PySequence_Fast_GET_ITEM(fast, i), &shape[i]) < 0) {
            Py_DECREF(fast);
            return -1;
        }
    Py_DECREF(fast);
    return (int)n;
}

static PyObject *graph_input(PyObject *o, PyObject *args)
{
    sl_graph *g = live(o);
    const char *name;
    PyObject *dtype_o, *shape_o;
    int64_t shape[SL_MAX_DIMS];
    sl_dtype dtype;
    int ndim;
    if (!g || !PyArg_ParseTuple(args, "sOO:input", &name, &dtype_o, &shape_o) ||
        slpy_parse_dtype(dtype_o, &dtype) < 0 || (ndim = parse_shape(shape_o, shape)) < 0)
        return NULL;
    return node_result(g, sl_graph_input(g, name, dtype, ndim, shape));
}

/* param(name, shape, init, sigma): init "zeros", "ones" or
 * "truncated_normal" (sigma its spread). */
static PyObject *graph_param(PyObject *o, PyObject *args)
{
    sl_graph *g = live(o);
    const char *name, *init_name;
    PyObject *shape_o;
    int64_t shape[SL_MAX_DIMS];
    double sigma = 0.0;
    sl_init init;
    int ndim;
    if (!g || !PyArg_ParseTuple(args, "sOs|d:param", &name, &shape_o, &init_name, &sigma) ||
        (ndim = parse_shape(shape_o, shape)) < 0)
        return NULL;
    if (strcmp(init_name, "zeros") == 0)
        init = (sl_init){SL_INIT_ZEROS, 0.0f};
    else if (strcmp(init_name, "ones") == 0)
        init = (sl_init){SL_INIT_ONES, 0.0f};
    else if (strcmp(init_name, "truncated_normal") == 0)
        init = (sl_init){SL_INIT_TRUNCATED_NORMAL, (float)sigma};
    else
        return PyErr_Format(PyExc_ValueError,
                            "parameter '%s': unknown initializer '%s' (sluice has zeros, ones "
                            "and truncated_normal)",
                            name, init_name);
    return node_result(g, sl_graph_param(g, name, ndim, shape, init));
}

static PyObject *graph_conv2d(PyObject *o, PyObject *args)
{
    sl_graph *g = live(o);
    const char *name;
    int x, w, stride, pad;
    if (!g || !PyArg_ParseTuple(args, "ziiii:conv2d", &name, &x, &w, &stride, &pad))
        return NULL;
    return node_result(g, sl_graph_conv2d(g, name, x, w, stride, pad));
}

static PyObject *graph_max_pool2d(PyObject *o, PyObject *args)
{
    sl_graph *g = live(o);
    const char *name;
    int x, kernel, stride;
    if (!g || !PyArg_ParseTuple(args, "ziii:max_pool2d", &name, &x, &kernel, &stride))
        return NULL;
    return node_result(g, sl_graph_max_pool2d(g, name, x, kernel, stride));
}

/* The one-input ops: relu, flatten. */
static PyObject *unary(PyObject *o, PyObject *args, const char *what,
                       int (*fn)(sl_graph *, const char *, int))
{
    sl_graph *g = live(o);
    const char *name;
    int x;
    char fmt[32];
    snprintf(fmt, sizeof fmt, "zi:%s", what);
    if (!g || !PyArg_ParseTuple(args, fmt, &name, &x))
        return NULL;
    return node_result(g, fn(g, name, x));
}

static PyObject *graph_relu(PyObject *o, PyObject *args)
{
    return unary(o, args, "relu", sl_graph_relu);
}

static PyObject *graph_flatten(PyObject *o, PyObject *args)
{
    return unary(o, args, "flatten", sl_graph_flatten);
}

/* The two-input ops: add, softmax_cross_entropy. */
static PyObject *binary(PyObject *o, PyObject *args, const char *what,
                        int (*fn)(sl_graph *, const char *, int, int))
{
    sl_graph *g = live(o);
    const char *name;
    int a, b;
    char fmt[48];
    snprintf(fmt, sizeof fmt, "zii:%s", what);
    if (!g || !PyArg_ParseTuple(args, fmt, &name, &a, &b))
        return NULL;
    return node_result(g, fn(g, name, a, b));
}

static PyObject *graph_add(PyObject *o, PyObject *args)
{
    return binary(o, args, "add", sl_graph_add);
}

static PyObject *graph_softmax_ce(PyObject *o, PyObject *args)
{
    return binary(o, args, "softmax_cross_entropy", sl_graph_softmax_cross_entropy);
}

static PyObject *graph_dense(PyObject *o, PyObject *args)
{
    sl_graph *g = live(o);
    const char *name;
    int x, w, b;
    if (!g || !PyArg_ParseTuple(args, "ziii:dense", &name, &x, &w, &b))
        return NULL;
    return node_result(g, sl_graph_dense(g, name, x, w, b));
}

static PyObject *graph_reduce_mean(PyObject *o, PyObject *args)
{
    sl_graph *g = live(o);
    const char *name;
    int x, axis, keep_dims;
    if (!g || !PyArg_ParseTuple(args, "ziip:reduce_mean", &name, &x, &axis, &keep_dims))
        return NULL;
    return node_result(g, sl_graph_reduce_mean(g, name, x, axis, keep_dims));
}

static PyObject *graph_reshape(PyObject *o, PyObject *args)
{
    sl_graph *g = live(o);
    const char *name;
    PyObject *shape_o;
    int64_t shape[SL_MAX_DIMS];
    int x, ndim;
    if (!g || !PyArg_ParseTuple(args, "ziO:reshape", &name, &x, &shape_o) ||
        (ndim = parse_shape(shape_o, shape)) < 0)
        return NULL;
    return node_result(g, sl_graph_reshape(g, name, x, ndim, shape));
}

static PyObject *graph_backward(PyObject *o, PyObject *arg)
{
    sl_graph *g = live(o);
    long loss = g ? PyLong_AsLong(arg) : -1;
    int rc;
    if (!g || (loss == -1 && PyErr_Occurred()))
        return NULL;
    rc = sl_graph_backward(g, (int)loss);
    if (rc < 0)
        return slpy_raise(rc, sl_graph_last_error(g));
    Py_RETURN_NONE;
}

static PyObject *graph_grad(PyObject *o, PyObject *arg)
{
    sl_graph *g = live(o);
    long param = g ? PyLong_AsLong(arg) : -1;
    if (!g || (param == -1 && PyErr_Occurred()))
        return NULL;
    return PyLong_FromLong(sl_graph_grad(g, (int)param)); /* < 0: none */
}

/* optimizer(kind, lr, momentum): kind "momentum" or "sgd". */
static PyObject *graph_optimizer(PyObject *o, PyObject *args)
{
    sl_graph *g = live(o);
    const char *kind;
    double lr, momentum = 0.0;
    int rc;
    if (!g || !PyArg_ParseTuple(args, "sd|d:optimizer", &kind, &lr, &momentum))
        return NULL;
    if (strcmp(kind, "momentum") == 0)
        rc = sl_graph_momentum(g, (float)lr, (float)momentum);
    else if (strcmp(kind, "sgd") == 0)
        rc = sl_graph_sgd(g, (float)lr);
    else
        return PyErr_Format(PyExc_ValueError, "unknown optimizer '%s'", kind);
    if (rc < 0)
        return slpy_raise(rc, sl_graph_last_error(g));
    Py_RETURN_NONE;
}

/* spec(node) -> (dtype name, shape tuple) */
static PyObject *graph_spec(PyObject *o, PyObject *arg)
{
    sl_graph *g = live(o);
    long node = g ? PyLong_AsLong(arg) : -1;
    sl_tensor_spec spec;
    PyObject *shape;
    if (!g || (node == -1 && PyErr_Occurred()))
        return NULL;
    if (sl_graph_node_spec(g, (int)node, &spec) != SL_OK)
        return PyErr_Format(PyExc_ValueError, "Graph: no node %ld", node);
    shape = PyTuple_New(spec.ndim);
    for (int d = 0; shape && d < spec.ndim; d++) {
        PyObject *n = PyLong_FromLongLong(spec.shape[d]);
        if (!n) {
            Py_CLEAR(shape);
            break;
        }
        PyTuple_SET_ITEM(shape, d, n);
    }
    return shape ? Py_BuildValue("(sN)", sl_dtype_name(spec.dtype), shape) : NULL;
}

PyObject *slpy_graph_nodes(const sl_graph *g)
{
    PyObject *list = PyList_New(0);
    for (size_t i = 0; list && i < sl_graph_num_nodes(g); i++) {
        PyObject *item = Py_BuildValue("(ss)", sl_graph_node_op(g, (int)i),
                                       sl_graph_node_name(g, (int)i));
        if (!item || PyList_Append(list, item) < 0)
            Py_CLEAR(list);
        Py_XDECREF(item);
    }
    return list;
}

static PyObject *graph_nodes(PyObject *o, PyObject *unused)
{
    sl_graph *g = live(o);
    (void)unused;
    return g ? slpy_graph_nodes(g) : NULL;
}

/* get_param(node) -> Tensor: a copy of a parameter's values. */
static PyObject *graph_get_param(PyObject *o, PyObject *arg)
{
    sl_graph *g = live(o);
    long node = g ? PyLong_AsLong(arg) : -1;
    sl_tensor_spec spec;
    sl_tensor *t;
    const float *data;
    size_t numel;
    int rc;
    if (!g || (node == -1 && PyErr_Occurred()))
        return NULL;
    data = sl_graph_param_data(g, (int)node, &numel);
    if (!data || sl_graph_node_spec(g, (int)node, &spec) != SL_OK)
        return PyErr_Format(PyExc_ValueError, "Graph: node %ld is not a parameter", node);
    rc = sl_tensor_new(&t, SL_FLOAT32, spec.ndim, spec.shape);
    if (rc < 0)
        return slpy_raise(rc, NULL);
    memcpy(sl_tensor_data(t), data, numel * sizeof(float));
    return slpy_tensor_wrap(t);
}

/* set_param(node, array): copies float32 values of the parameter's shape in. */
static PyObject *graph_set_param(PyObject *o, PyObject *args)
{
    sl_graph *g = live(o);
    PyObject *value;
    sl_tensor_spec spec;
    sl_tensor *t;
    float *data;
    size_t numel;
    char err[256], want[128], got[128];
    int node, ok;
    if (!g || !PyArg_ParseTuple(args, "iO:set_param", &node, &value))
        return NULL;
    data = sl_graph_param_data(g, node, &numel);
    if (!data || sl_graph_node_spec(g, node, &spec) != SL_OK)
        return PyErr_Format(PyExc_ValueError, "Graph: node %d is not a parameter", node);
    if (slpy_tensor_from_buffer(value, &t, err, sizeof err) < 0)
        return PyErr_Format(PyExc_ValueError, "parameter '%s': the value %s",
                            sl_graph_node_name(g, node), err);
    ok = sl_tensor_dtype(t) == SL_FLOAT32 && sl_tensor_ndim(t) == spec.ndim &&
         memcmp(sl_tensor_shape(t), spec.shape, (size_t)spec.ndim * sizeof(int64_t)) == 0;
    if (ok)
        memcpy(data, sl_tensor_data(t), numel * sizeof(float));
    else
        PyErr_Format(PyExc_ValueError, "parameter '%s' is float32 %s, the value is %s %s",
                     sl_graph_node_name(g, node),
                     sl_shape_str(want, sizeof want, spec.ndim, spec.shape),
                     sl_dtype_name(sl_tensor_dtype(t)),
                     sl_shape_str(got, sizeof got, sl_tensor_ndim(t), sl_tensor_shape(t)));
    sl_tensor_release(t);
    if (!ok)
        return NULL;
    Py_RETURN_NONE;
}

/* make_model(image, label, logits, loss, mode, device_target, device_id,
 * save_graphs, save_graphs_path) -> Model: sl_model_new_from_graph. The
 * model takes the graph (this object is empty afterwards, whatever
 * happens). image, label and logits may be -1. */
static PyObject *graph_make_model(PyObject *o, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"image", "label", "logits", "loss", "mode", "device_target",
                             "device_id", "save_graphs", "save_graphs_path", NULL};
    slpy_graph *gself = (slpy_graph *)o;
    sl_network net;
    const char *target = "CPU";
    PyObject *graphs_path = NULL;
    int mode = SL_GRAPH_MODE, device_id = 0, save_graphs = 0, rc;
    sl_model_options opts;
    slpy_model *self;
    sl_graph *g = live(o);
    char err[1024] = "";

    if (!g || !PyArg_ParseTupleAndKeywords(args, kwargs, "iiii|isipO&:make_model", kwlist,
                                           &net.image, &net.label, &net.logits, &net.loss,
                                           &mode, &target, &device_id, &save_graphs,
                                           PyUnicode_FSConverter, &graphs_path))
        return NULL;
    sl_model_options_init(&opts);
    opts.context.mode = (sl_mode)mode;
    opts.context.device_target = target;
    opts.context.device_id = device_id;
    opts.context.save_graphs = save_graphs;
    if (graphs_path)
        opts.context.save_graphs_path = PyBytes_AS_STRING(graphs_path);
    self = (slpy_model *)slpy_model_type.tp_alloc(&slpy_model_type, 0);
    if (self) {
        atomic_init(&self->job_thread, 0);
        self->lock = PyThread_allocate_lock();
    }
    if (!self || !self->lock) {
        Py_XDECREF(graphs_path);
        Py_XDECREF(self);
        return self ? PyErr_NoMemory() : NULL;
    }
    gself->g = NULL; /* the model's now, also on failure */
    /* Starts the executor's threads and compiles the steps. */
    Py_BEGIN_ALLOW_THREADS
    rc = sl_model_new_from_graph(&self->m, g, &net, &opts, err, sizeof err);
    Py_END_ALLOW_THREADS
    Py_XDECREF(graphs_path);
    if (rc < 0) {
        Py_DECREF(self);
        return slpy_raise(rc, err);
    }
    return (PyObject *)self;
}

/* make_step(outputs, train=True, mode=0, threads=0) -> Step: the graph
 * compiled into a step run on given tensors; the step takes the graph. */
static PyObject *graph_make_step(PyObject *o, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"outputs", "train", "mode", "threads", NULL};
    slpy_graph *gself = (slpy_graph *)o;
    PyObject *outputs;
    int train = 1, mode = SL_GRAPH_MODE, threads = 0;
    sl_graph *g = live(o);
    if (!g || !PyArg_ParseTupleAndKeywords(args, kwargs, "O|pii:make_step", kwlist, &outputs,
                                           &train, &mode, &threads))
        return NULL;
    gself->g = NULL; /* the step's now, also on failure */
    return slpy_step_new(g, outputs, train, mode, threads);
}

static PyObject *graph_softmax_ce_dense(PyObject *o, PyObject *args)
{
    sl_graph *g = live(o);
    const char *name;
    int logits, labels, mean;
    if (!g || !PyArg_ParseTuple(args, "ziip:softmax_cross_entropy_dense", &name, &logits,
                                &labels, &mean))
        return NULL;
    return node_result(g, sl_graph_softmax_cross_entropy_dense(g, name, logits, labels, mean));
}

static PyMethodDef graph_methods[] = {
    {"input", graph_input, METH_VARARGS, "input(name, dtype, shape) -> node"},
    {"param", graph_param, METH_VARARGS,
     "param(name, shape, init, sigma=0) -> node; init 'zeros', 'ones' or 'truncated_normal'"},
    {"conv2d", graph_conv2d, METH_VARARGS, "conv2d(name, x, weight, stride, pad) -> node"},
    {"max_pool2d", graph_max_pool2d, METH_VARARGS, "max_pool2d(name, x, kernel, stride) -> node"},
    {"relu", graph_relu, METH_VARARGS, "relu(name, x) -> node"},
    {"flatten", graph_flatten, METH_VARARGS, "flatten(name, x) -> node"},
    {"dense", graph_dense, METH_VARARGS, "dense(name, x, weight, bias or -1) -> node"},
    {"reshape", graph_reshape, METH_VARARGS, "reshape(name, x, shape) -> node"},
    {"reduce_mean", graph_reduce_mean, METH_VARARGS,
     "reduce_mean(name, x, axis, keep_dims) -> node: the mean over axes [axis, ndim)"},
    {"add", graph_add, METH_VARARGS, "add(name, a, b) -> node"},
    {"softmax_cross_entropy", graph_softmax_ce, METH_VARARGS,
     "softmax_cross_entropy(name, logits, labels) -> node (a scalar)"},
    {"backward", graph_backward, METH_O, "backward(loss): appends the gradients"},
    {"grad", graph_grad, METH_O, "grad(param) -> the gradient's node, or < 0"},
    {"optimizer", graph_optimizer, METH_VARARGS,
     "optimizer(kind, lr, momentum=0): appends 'momentum' or 'sgd' updates"},
    {"spec", graph_spec, METH_O, "spec(node) -> (dtype, shape)"},
    {"nodes", graph_nodes, METH_NOARGS, "nodes() -> [(op, name)]"},
    {"get_param", graph_get_param, METH_O, "get_param(node) -> Tensor (a copy)"},
    {"set_param", graph_set_param, METH_VARARGS, "set_param(node, array)"},
    {"softmax_cross_entropy_dense", graph_softmax_ce_dense, METH_VARARGS,
     "softmax_cross_entropy_dense(name, logits, labels, mean) -> node"},
    {"make_step", (PyCFunction)(void (*)(void))graph_make_step, METH_VARARGS | METH_KEYWORDS,
     "make_step(outputs, train=True, mode=0, threads=0) -> Step (takes the graph)"},
    {"make_model", (PyCFunction)(void (*)(void))graph_make_model, METH_VARARGS | METH_KEYWORDS,
     "make_model(image, label, logits, loss, mode=0, device_target='CPU', device_id=0,\n"
     "           save_graphs=False, save_graphs_path=None) -> Model (takes the graph)"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject slpy_graph_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sluice._sluice.Graph",
    .tp_basicsize = sizeof(slpy_graph),
    .tp_dealloc = graph_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Graph(seed=0)\n\nA training graph being built (graph.h); sluice.nn's tracing "
              "fills it.",
    .tp_methods = graph_methods,
    .tp_new = graph_new,
};
