/* model.c: sluice._sluice.Model, one sl_model: a network with its loss
 * and optimizer, compiled, with its executor's threads. Its methods are
 * the C calls with plain arguments; sluice.train.Model gives them
 * MindSpore's names. Training and evaluation run on a thread of their own
 * while the caller waits without the GIL (run.c); the parameters are read
 * and written through the graph's accessors (sl_model_graph,
 * sl_graph_param_data), as copies. */
#include "sluice_py.h"

#include <string.h>

/* --- making one -------------------------------------------------------------------------- */

static PyObject *model_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"network", "num_classes", "channels", "batch", "optimizer",
                             "learning_rate", "momentum", "seed", "mode", "device_target",
                             "device_id", "save_graphs", "save_graphs_path", NULL};
    const char *network = "lenet", *optimizer = "momentum", *target = "CPU";
    PyObject *graphs_path = NULL, *seed_o = NULL;
    long long classes = 10, channels = 1, batch = 32;
    double lr = 0.01, momentum = 0.9;
    unsigned long long seed = 0;
    int mode = SL_GRAPH_MODE, device_id = 0, save_graphs = 0, rc;
    sl_model_options o;
    slpy_model *self;
    char err[1024] = "";

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|sLLLsddOisipO&:Model", kwlist, &network,
                                     &classes, &channels, &batch, &optimizer, &lr, &momentum,
                                     &seed_o, &mode, &target, &device_id, &save_graphs,
                                     PyUnicode_FSConverter, &graphs_path))
        return NULL;
    if (seed_o) {
        seed = PyLong_AsUnsignedLongLong(seed_o);
        if (seed == (unsigned long long)-1 && PyErr_Occurred()) {
            Py_XDECREF(graphs_path);
            return NULL;
        }
    }
    sl_model_options_init(&o);
    if (sl_network_kind_parse(network, &o.network.kind) != SL_OK) {
        Py_XDECREF(graphs_path);
        return PyErr_Format(PyExc_ValueError, "Model: unknown network '%s'", network);
    }
    if (strcmp(optimizer, "momentum") == 0)
        o.optimizer = SL_OPTIMIZER_MOMENTUM;
    else if (strcmp(optimizer, "sgd") == 0)
        o.optimizer = SL_OPTIMIZER_SGD;
    else {
        Py_XDECREF(graphs_path);
        return PyErr_Format(PyExc_ValueError, "Model: unknown optimizer '%s'", optimizer);
    }
    o.network.num_classes = classes;
    o.network.channels = channels;
    o.network.batch = batch;
    o.learning_rate = (float)lr;
    o.momentum = (float)momentum;
    o.seed = seed;
    o.context.mode = (sl_mode)mode;
    o.context.device_target = target;
    o.context.device_id = device_id;
    o.context.save_graphs = save_graphs;
    if (graphs_path)
        o.context.save_graphs_path = PyBytes_AS_STRING(graphs_path);

    self = (slpy_model *)type->tp_alloc(type, 0);
    if (!self) {
        Py_XDECREF(graphs_path);
        return NULL;
    }
    atomic_init(&self->job_thread, 0);
    self->lock = PyThread_allocate_lock();
    if (!self->lock) {
        Py_XDECREF(graphs_path);
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    /* Starts the executor's threads and compiles the steps. */
    Py_BEGIN_ALLOW_THREADS
    rc = sl_model_new(&self->m, &o, err, sizeof err);
    Py_END_ALLOW_THREADS
    Py_XDECREF(graphs_path);
    if (rc < 0) {
        Py_DECREF(self);
        return slpy_raise(rc, err);
    }
    return (PyObject *)self;
}

static void model_dealloc(PyObject *o)
{
    slpy_model *self = (slpy_model *)o;
    if (self->m) {
        /* Joins the executor's threads. */
        Py_BEGIN_ALLOW_THREADS
        sl_model_free(self->m);
        Py_END_ALLOW_THREADS
    }
    if (self->lock)
        PyThread_free_lock(self->lock);
    Py_XDECREF(self->tune_log);
    Py_TYPE(o)->tp_free(o);
}

/* --- training and evaluation ------------------------------------------------------------------ */

typedef struct train_call {
    slpy_call call; /* first: fn gets it */
    int64_t epochs;
    sl_dataset *ds;
    sl_train_options o;
    char devices[512]; /* o.devices points here: it outlives the call */
    slpy_model *owner; /* its replicated flag, set while the call runs */
    /* With autotune: its lines, written by the thread reading the pipeline
     * while the call runs and read once it has returned (every thread of
     * the train joined), so without a lock. */
    slpy_tune_lines tune;
} train_call;

/* sl_train_options.autotune_log. */
static void keep_tune_line(void *arg, const char *line)
{
    slpy_tune_lines_add(&((train_call *)arg)->tune, line);
}

static int train_fn(slpy_call *call)
{
    train_call *t = (train_call *)call;
    int rc;
    t->owner->replicated = t->o.distributed                              ? 2
                           : t->o.devices && strchr(t->o.devices, ',') ? 1
                                                                       : 0;
    rc = sl_model_train_opts(call->m, t->epochs, t->ds, call->list, call->ncbs, &t->o);
    t->owner->replicated = 0;
    if (rc < 0)
        snprintf(call->msg, sizeof call->msg, "%s", sl_model_last_error(call->m));
    return rc;
}

/* A dataset copy freed without the GIL (it may hold Python operations,
 * whose release takes it). */
static void free_dataset(sl_dataset *ds)
{
    Py_BEGIN_ALLOW_THREADS
    sl_dataset_free(ds);
    Py_END_ALLOW_THREADS
}

/* train(epochs, dataset, callbacks, sink_mode, sink_size[, autotune[, devices[,
 *       distributed]]]) */
static PyObject *model_train(PyObject *o, PyObject *args)
{
    slpy_model *self = (slpy_model *)o;
    slpy_dataset *ds;
    PyObject *specs, *lines = NULL;
    long long epochs, sink_size;
    const char *devices = NULL;
    int sink, autotune = 0, distributed = 0, r;
    train_call *t;

    if (!PyArg_ParseTuple(args, "LO!OpL|pzp:train", &epochs, &slpy_dataset_type, &ds, &specs,
                          &sink, &sink_size, &autotune, &devices, &distributed))
        return NULL;
    if (devices && strlen(devices) >= sizeof t->devices) {
        PyErr_Format(PyExc_ValueError, "train: devices '%.40s...' is too long", devices);
        return NULL;
    }
    t = PyMem_Calloc(1, sizeof *t); /* its lines take 8 KiB: not on the stack */
    if (!t)
        return PyErr_NoMemory();
    t->call.what = "train";
    t->call.fn = train_fn;
    t->owner = self;
    t->epochs = epochs;
    sl_train_options_init(&t->o);
    t->o.dataset_sink_mode = sink;
    t->o.sink_size = sink_size;
    t->o.distributed = distributed;
    if (devices) {
        snprintf(t->devices, sizeof t->devices, "%s", devices);
        t->o.devices = t->devices;
    }
    if (autotune) {
        t->o.autotune = 1;
        t->o.autotune_log = keep_tune_line;
        t->o.autotune_log_arg = t;
    }
    if (slpy_callbacks_make(&t->call, specs) < 0) {
        PyMem_Free(t);
        return NULL;
    }
    t->ds = slpy_dataset_copy_c(ds);
    if (!t->ds) {
        slpy_callbacks_free(&t->call);
        PyMem_Free(t);
        return NULL;
    }
    r = slpy_model_run(self, &t->call);
    slpy_callbacks_free(&t->call);
    free_dataset(t->ds);
    if (r == 0 && t->call.rc >= 0)
        lines = slpy_tune_lines_list(&t->tune);
    if (r == 0 && t->call.rc < 0)
        slpy_raise_runtime(t->call.rc, t->call.msg);
    PyMem_Free(t);
    if (!lines)
        return NULL;
    Py_XSETREF(self->tune_log, lines);
    Py_RETURN_NONE;
}

/* What the autotuner said in the last train(autotune=True) (a new list). */
static PyObject *model_autotune_log(PyObject *o, PyObject *unused)
{
    slpy_model *self = (slpy_model *)o;
    (void)unused;
    return self->tune_log ? PyList_GetSlice(self->tune_log, 0, PY_SSIZE_T_MAX) : PyList_New(0);
}

typedef struct eval_call {
    slpy_call call;
    sl_dataset *ds;
    sl_metrics metrics;
} eval_call;

static int eval_fn(slpy_call *call)
{
    eval_call *e = (eval_call *)call;
    int rc = sl_model_eval(call->m, e->ds, &e->metrics);
    if (rc < 0)
        snprintf(call->msg, sizeof call->msg, "%s", sl_model_last_error(call->m));
    return rc;
}

/* eval(dataset) -> (samples, accuracy, loss) */
static PyObject *model_eval(PyObject *o, PyObject *arg)
{
    slpy_model *self = (slpy_model *)o;
    eval_call e;
    int r;

    if (!PyObject_TypeCheck(arg, &slpy_dataset_type))
        return PyErr_Format(PyExc_TypeError, "eval: a Dataset is needed, got %.100s",
                            Py_TYPE(arg)->tp_name);
    memset(&e, 0, sizeof e);
    e.call.what = "eval";
    e.call.fn = eval_fn;
    e.call.in_training = 1; /* evaluating while training (seed 004) */
    e.ds = slpy_dataset_copy_c((slpy_dataset *)arg);
    if (!e.ds)
        return NULL;
    r = slpy_model_run(self, &e.call);
    free_dataset(e.ds);
    if (r < 0)
        return NULL;
    if (e.call.rc < 0)
        return slpy_raise_runtime(e.call.rc, e.call.msg);
    return Py_BuildValue("(Ldd)", (long long)e.metrics.samples, e.metrics.accuracy,
                         e.metrics.loss);
}

static PyObject *model_stop(PyObject *o, PyObject *unused)
{
    (void)unused;
    sl_model_stop(((slpy_model *)o)->m);
    Py_RETURN_NONE;
}

static PyObject *model_stage_stats(PyObject *o, PyObject *unused)
{
    slpy_model *self = (slpy_model *)o;
    sl_stage_stats st[SLPY_MAX_STAGES];
    int locked = slpy_model_lock(self, 1, "stage_stats");
    size_t n;
    (void)unused;
    if (locked < 0)
        return NULL;
    n = sl_model_get_stage_stats(self->m, st, SLPY_MAX_STAGES);
    slpy_model_unlock(self, locked);
    return slpy_stage_stats(st, n < SLPY_MAX_STAGES ? n : SLPY_MAX_STAGES);
}

static PyObject *model_global_step(PyObject *o, PyObject *unused)
{
    slpy_model *self = (slpy_model *)o;
    int locked = slpy_model_lock(self, 1, "global_step");
    long long step;
    (void)unused;
    if (locked < 0)
        return NULL;
    step = sl_model_global_step(self->m);
    slpy_model_unlock(self, locked);
    return PyLong_FromLongLong(step);
}

/* --- parameters ------------------------------------------------------------------------------ */

static PyObject *shape_tuple(const sl_tensor_spec *spec)
{
    PyObject *shape = PyTuple_New(spec->ndim);
    for (int d = 0; shape && d < spec->ndim; d++) {
        PyObject *n = PyLong_FromLongLong(spec->shape[d]);
        if (!n) {
            Py_CLEAR(shape);
            break;
        }
        PyTuple_SET_ITEM(shape, d, n);
    }
    return shape;
}

/* A Tensor holding a copy of a parameter's values. */
static PyObject *param_tensor(sl_graph *g, int node)
{
    sl_tensor_spec spec;
    sl_tensor *t;
    size_t numel;
    const float *data = sl_graph_param_data(g, node, &numel);
    int rc;
    sl_graph_node_spec(g, node, &spec);
    rc = sl_tensor_new(&t, SL_FLOAT32, spec.ndim, spec.shape);
    if (rc < 0)
        return slpy_raise(rc, NULL);
    memcpy(sl_tensor_data(t), data, numel * sizeof(float));
    return slpy_tensor_wrap(t);
}

/* [(name, shape)] (with values: [(name, shape, Tensor)]) of g's trainable
 * parameters (those with a gradient when trained is 1; all of them in a
 * graph without backward), in creation order. */
static PyObject *param_list(sl_graph *g, int trained, int values)
{
    size_t n = sl_graph_num_params(g);
    PyObject *list = PyList_New(0);
    for (size_t i = 0; list && i < n; i++) {
        int node = sl_graph_param_at(g, i);
        sl_tensor_spec spec;
        PyObject *item, *shape, *value;
        if (trained && sl_graph_grad(g, node) < 0)
            continue; /* an optimizer's accumulator */
        sl_graph_node_spec(g, node, &spec);
        shape = shape_tuple(&spec);
        value = values && shape ? param_tensor(g, node) : NULL;
        if (!shape || (values && !value)) {
            Py_XDECREF(shape);
            Py_CLEAR(list);
            break;
        }
        item = values ? Py_BuildValue("(sNN)", sl_graph_node_name(g, node), shape, value)
                      : Py_BuildValue("(sN)", sl_graph_node_name(g, node), shape);
        if (!item) {
            Py_CLEAR(list);
            break;
        }
        if (PyList_Append(list, item) < 0)
            Py_CLEAR(list);
        Py_DECREF(item);
    }
    return list;
}

static PyObject *model_params(PyObject *o, PyObject *unused)
{
    slpy_model *self = (slpy_model *)o;
    int locked = slpy_model_lock(self, 1, "trainable_params");
    PyObject *list;
    (void)unused;
    if (locked < 0)
        return NULL;
    list = param_list(sl_model_graph(self->m), 1, 0);
    slpy_model_unlock(self, locked);
    return list;
}

/* The trainable parameter named name (with any: an optimizer's
 * accumulator too), or -1 with KeyError. */
static int find_param(sl_graph *g, const char *name, int any)
{
    int node = sl_graph_find(g, name);
    size_t numel;
    if (node < 0 || (any ? !sl_graph_param_data(g, node, &numel) : sl_graph_grad(g, node) < 0)) {
        PyErr_Format(PyExc_KeyError, "the network has no %s '%s'",
                     any ? "parameter or accumulator" : "trainable parameter", name);
        return -1;
    }
    return node;
}

/* get_param(name) / get_state(name) -> Tensor: a copy of the current
 * values of a trainable parameter / of any (an accumulator too). */
static PyObject *get_param(PyObject *o, PyObject *arg, int any)
{
    slpy_model *self = (slpy_model *)o;
    const char *name = PyUnicode_AsUTF8(arg);
    PyObject *res = NULL;
    int locked, node;
    if (!name)
        return NULL;
    locked = slpy_model_lock(self, 1, "read a parameter");
    if (locked < 0)
        return NULL;
    node = find_param(sl_model_graph(self->m), name, any);
    if (node >= 0)
        res = param_tensor(sl_model_graph(self->m), node);
    slpy_model_unlock(self, locked);
    return res;
}

static PyObject *model_get_param(PyObject *o, PyObject *arg)
{
    return get_param(o, arg, 0);
}

static PyObject *model_get_state(PyObject *o, PyObject *arg)
{
    return get_param(o, arg, 1);
}

/* set_param(name, array) / set_state(name, array): copies a float32 array
 * of the parameter's (set_state: or accumulator's) shape. */
static PyObject *set_param(PyObject *o, PyObject *args, int any)
{
    slpy_model *self = (slpy_model *)o;
    const char *name;
    PyObject *value, *res = NULL;
    sl_tensor *t;
    sl_tensor_spec spec;
    char err[256], want[128], got[128];
    int locked, node;
    if (!PyArg_ParseTuple(args, "sO:set_param", &name, &value))
        return NULL;
    if (slpy_tensor_from_buffer(value, &t, err, sizeof err) < 0)
        return PyErr_Format(PyExc_ValueError, "parameter '%s': the value %s", name, err);
    locked = slpy_model_lock(self, 1, "write a parameter");
    if (locked < 0) {
        sl_tensor_release(t);
        return NULL;
    }
    node = find_param(sl_model_graph(self->m), name, any);
    if (node >= 0) {
        size_t numel;
        float *data = sl_graph_param_data(sl_model_graph(self->m), node, &numel);
        sl_graph_node_spec(sl_model_graph(self->m), node, &spec);
        if (sl_tensor_dtype(t) != SL_FLOAT32 || sl_tensor_ndim(t) != spec.ndim ||
            memcmp(sl_tensor_shape(t), spec.shape, (size_t)spec.ndim * sizeof(int64_t)) != 0) {
            PyErr_Format(PyExc_ValueError, "parameter '%s' is float32 %s, the value is %s %s",
                         name, sl_shape_str(want, sizeof want, spec.ndim, spec.shape),
                         sl_dtype_name(sl_tensor_dtype(t)),
                         sl_shape_str(got, sizeof got, sl_tensor_ndim(t), sl_tensor_shape(t)));
        } else if (locked == 0 && self->replicated == 2 &&
                   memcmp(data, sl_tensor_data(t), numel * sizeof(float)) != 0) {
            /* from a callback of a train across ranks: the other ranks
             * would keep the old values and train on apart */
            PyErr_Format(PyExc_RuntimeError,
                         "parameter '%s': the model is training across MPI ranks; a "
                         "callback changing its parameters would change this rank's only "
                         "(set them before train)",
                         name);
        } else {
            memcpy(data, sl_tensor_data(t), numel * sizeof(float));
            /* from a callback of a train on several devices: every
             * device's replica takes it once the callbacks return */
            if (locked == 0 && self->replicated == 1)
                sl_model_parameters_changed(self->m);
            res = Py_NewRef(Py_None);
        }
    }
    slpy_model_unlock(self, locked);
    sl_tensor_release(t);
    return res;
}

static PyObject *model_set_param(PyObject *o, PyObject *args)
{
    return set_param(o, args, 0);
}

static PyObject *model_set_state(PyObject *o, PyObject *args)
{
    return set_param(o, args, 1);
}

/* nodes() -> [(op, name)] of the model's graph, in creation order. */
static PyObject *model_nodes(PyObject *o, PyObject *unused)
{
    slpy_model *self = (slpy_model *)o;
    int locked = slpy_model_lock(self, 1, "read the graph");
    PyObject *list;
    (void)unused;
    if (locked < 0)
        return NULL;
    list = slpy_graph_nodes(sl_model_graph(self->m));
    slpy_model_unlock(self, locked);
    return list;
}

/* save(path) / load(path): sl_model_save / sl_model_load (every parameter,
 * the accumulators and the global step). */
static PyObject *save_or_load(PyObject *o, PyObject *arg, int load)
{
    slpy_model *self = (slpy_model *)o;
    PyObject *path = NULL;
    char msg[1024] = "";
    int locked, rc;
    if (!PyUnicode_FSConverter(arg, &path))
        return NULL;
    locked = slpy_model_lock(self, 1, load ? "load a checkpoint" : "save a checkpoint");
    if (locked < 0) {
        Py_DECREF(path);
        return NULL;
    }
    if (load && locked == 0 && self->replicated) {
        Py_DECREF(path);
        return PyErr_Format(PyExc_RuntimeError,
                            "load a checkpoint: the model is training on several devices; a "
                            "callback loading parameters would change one replica only (load "
                            "before train, or train on one device)");
    }
    Py_BEGIN_ALLOW_THREADS
    rc = load ? sl_model_load(self->m, PyBytes_AS_STRING(path))
              : sl_model_save(self->m, PyBytes_AS_STRING(path));
    if (rc < 0)
        snprintf(msg, sizeof msg, "%s", sl_model_last_error(self->m));
    Py_END_ALLOW_THREADS
    slpy_model_unlock(self, locked);
    Py_DECREF(path);
    if (rc < 0)
        return slpy_raise(rc, msg);
    Py_RETURN_NONE;
}

static PyObject *model_save(PyObject *o, PyObject *arg)
{
    return save_or_load(o, arg, 0);
}

static PyObject *model_load(PyObject *o, PyObject *arg)
{
    return save_or_load(o, arg, 1);
}

static PyMethodDef model_methods[] = {
    {"train", model_train, METH_VARARGS,
     "train(epochs, dataset, callbacks, sink_mode, sink_size[, autotune[, devices[, "
     "distributed]]]): sl_model_train_opts."},
    {"autotune_log", model_autotune_log, METH_NOARGS,
     "autotune_log() -> [str]: what the tuner of the last train(autotune=True) said"},
    {"eval", model_eval, METH_O, "eval(dataset) -> (samples, accuracy, loss)"},
    {"stop", model_stop, METH_NOARGS, "stop(): sl_model_stop, from any thread."},
    {"global_step", model_global_step, METH_NOARGS, "global_step() -> steps trained so far"},
    {"stage_stats", model_stage_stats, METH_NOARGS,
     "stage_stats() -> {'stages': [...], 'verdict': str} of the last sink-mode train\n"
     "(sl_model_get_stage_stats; no stages before one)"},
    {"params", model_params, METH_NOARGS,
     "params() -> [(name, shape)] of the trainable parameters"},
    {"get_param", model_get_param, METH_O, "get_param(name) -> Tensor (a copy)"},
    {"set_param", model_set_param, METH_VARARGS, "set_param(name, array): copies the values in"},
    {"get_state", model_get_state, METH_O,
     "get_state(name) -> Tensor: a parameter's or an accumulator's values (a copy)"},
    {"set_state", model_set_state, METH_VARARGS,
     "set_state(name, array): a parameter's or an accumulator's values"},
    {"nodes", model_nodes, METH_NOARGS, "nodes() -> [(op, name)] of the graph"},
    {"save", model_save, METH_O, "save(path): a checkpoint (sl_model_save)"},
    {"load", model_load, METH_O, "load(path): a checkpoint (sl_model_load)"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject slpy_model_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sluice._sluice.Model",
    .tp_basicsize = sizeof(slpy_model),
    .tp_dealloc = model_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Model(network='lenet', num_classes=10, channels=1, batch=32, optimizer='momentum',\n"
              "      learning_rate=0.01, momentum=0.9, seed=0, mode=0, device_target='CPU',\n"
              "      device_id=0, save_graphs=False, save_graphs_path=None)\n\n"
              "One compiled C model; see sluice.train.Model for the API to use.",
    .tp_methods = model_methods,
    .tp_new = model_new,
};

/* --- a network's parameters before any model ------------------------------------------------ */

/* network_params(network, num_classes, channels, seed) -> [(name, shape, Tensor)]:
 * the initial values a model made with these options starts from. */
static PyObject *network_params(PyObject *unused, PyObject *args)
{
    const char *network;
    long long classes, channels;
    unsigned long long seed;
    sl_network_options no;
    sl_network net;
    sl_graph *g;
    PyObject *list = NULL;
    int rc;
    (void)unused;
    if (!PyArg_ParseTuple(args, "sLLK:network_params", &network, &classes, &channels, &seed))
        return NULL;
    sl_network_options_init(&no);
    if (sl_network_kind_parse(network, &no.kind) != SL_OK)
        return PyErr_Format(PyExc_ValueError, "unknown network '%s'", network);
    no.num_classes = classes;
    no.channels = channels;
    if (sl_graph_new(&g) != SL_OK)
        return PyErr_NoMemory();
    sl_graph_set_seed(g, seed);
    rc = sl_network_build(g, &no, &net);
    if (rc < 0)
        slpy_raise(rc, sl_graph_last_error(g));
    else
        list = param_list(g, 0, 1);
    sl_graph_free(g);
    return list;
}

PyMethodDef slpy_model_functions[] = {
    {"network_params", network_params, METH_VARARGS,
     "network_params(network, num_classes, channels, seed) -> [(name, shape, Tensor)]:\n"
     "the parameters a model of this network starts from with this seed."},
    {NULL, NULL, 0, NULL},
};
