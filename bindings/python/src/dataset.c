/* dataset.c: sluice._sluice.Dataset, one sl_dataset. Its methods are the C
 * calls, one to one, with plain arguments; sluice.dataset.Dataset gives
 * them MindSpore's names and defaults and never changes a dataset another
 * object can see (each of its methods copies, then appends). Every C call
 * runs without the GIL, under the object's own lock. */
#include "sluice_py.h"

#include <string.h>

/* --- running a C call without the GIL --------------------------------------------- */

/* Lets go of the GIL, then takes ds's lock; end_call undoes both. The lock
 * is taken without the GIL so that a thread holding it while it waits for
 * the GIL (it never does, but a Python op's destroy may) cannot deadlock. */
static PyThreadState *begin_call(slpy_dataset *self)
{
    PyThreadState *ts = PyEval_SaveThread();
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    return ts;
}

static void end_call(slpy_dataset *self, PyThreadState *ts)
{
    PyThread_release_lock(self->lock);
    PyEval_RestoreThread(ts);
}

/* Copies ds's last error into msg: to be called before end_call. */
static void keep_error(slpy_dataset *self, char *msg, size_t len)
{
    snprintf(msg, len, "%s", sl_dataset_last_error(self->ds));
}

/* The result of a describing call: None, or the exception for rc. */
static PyObject *done(int rc, const char *msg)
{
    if (rc != SL_OK)
        return slpy_raise(rc, msg);
    Py_RETURN_NONE;
}

/* --- the type ---------------------------------------------------------------------- */

static PyObject *dataset_alloc(PyTypeObject *type, sl_dataset *ds)
{
    slpy_dataset *self = (slpy_dataset *)type->tp_alloc(type, 0);
    if (!self) {
        sl_dataset_free(ds);
        return NULL;
    }
    self->ds = ds;
    self->lock = PyThread_allocate_lock();
    if (!self->lock) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    return (PyObject *)self;
}

static PyObject *dataset_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    sl_dataset *ds;
    if (!PyArg_ParseTuple(args, ":Dataset") || (kwargs && PyDict_Size(kwargs) > 0)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "Dataset() takes no arguments");
        return NULL;
    }
    if (sl_dataset_new(&ds) != SL_OK)
        return PyErr_NoMemory();
    return dataset_alloc(type, ds);
}

static void dataset_dealloc(PyObject *o)
{
    slpy_dataset *self = (slpy_dataset *)o;
    if (self->ds) {
        /* Dropping the last reference to a Python op takes the GIL:
         * free without it. */
        Py_BEGIN_ALLOW_THREADS
        sl_dataset_free(self->ds);
        Py_END_ALLOW_THREADS
    }
    if (self->lock)
        PyThread_free_lock(self->lock);
    Py_TYPE(o)->tp_free(o);
}

static PyObject *dataset_copy(PyObject *o, PyObject *unused)
{
    slpy_dataset *self = (slpy_dataset *)o;
    sl_dataset *copy;
    PyThreadState *ts;
    int rc;
    (void)unused;
    ts = begin_call(self);
    rc = sl_dataset_copy(&copy, self->ds);
    end_call(self, ts);
    if (rc != SL_OK)
        return slpy_raise(rc, "Dataset: out of memory copying the dataset");
    return dataset_alloc(Py_TYPE(o), copy);
}

PyObject *slpy_dataset_wrap(sl_dataset *ds)
{
    return dataset_alloc(&slpy_dataset_type, ds);
}

PyThreadState *slpy_dataset_begin_call(slpy_dataset *ds)
{
    return begin_call(ds);
}

void slpy_dataset_end_call(slpy_dataset *ds, PyThreadState *ts)
{
    end_call(ds, ts);
}

sl_dataset *slpy_dataset_copy_c(slpy_dataset *ds)
{
    sl_dataset *copy;
    PyThreadState *ts = begin_call(ds);
    int rc = sl_dataset_copy(&copy, ds->ds);
    end_call(ds, ts);
    if (rc != SL_OK) {
        slpy_raise(rc, "out of memory copying the dataset");
        return NULL;
    }
    return copy;
}

/* --- sources --------------------------------------------------------------------------- */

int slpy_fill_sampler(sl_sampler_options *s, long long num_samples, int shuffle, PyObject *seed,
                      long long num_shards, long long shard_id)
{
    unsigned long long sd = PyLong_AsUnsignedLongLong(seed);
    if (sd == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    s->num_samples = num_samples;
    s->shuffle = shuffle;
    s->seed = sd;
    s->num_shards = num_shards;
    s->shard_id = shard_id;
    return 0;
}

static PyObject *dataset_mnist(PyObject *o, PyObject *args)
{
    slpy_dataset *self = (slpy_dataset *)o;
    PyObject *dir = NULL, *seed;
    sl_mnist_options opts;
    long long num_samples, num_shards, shard_id;
    int usage, shuffle, rc;
    char msg[1024];
    PyThreadState *ts;
    if (!PyArg_ParseTuple(args, "O&iLpOLL:mnist", PyUnicode_FSConverter, &dir, &usage,
                          &num_samples, &shuffle, &seed, &num_shards, &shard_id))
        return NULL;
    sl_mnist_options_init(&opts);
    opts.dataset_dir = PyBytes_AS_STRING(dir);
    opts.usage = (sl_mnist_usage)usage;
    if (slpy_fill_sampler(&opts.sampler, num_samples, shuffle, seed, num_shards, shard_id) < 0) {
        Py_DECREF(dir);
        return NULL;
    }
    ts = begin_call(self);
    rc = sl_dataset_mnist(self->ds, &opts);
    keep_error(self, msg, sizeof msg);
    end_call(self, ts);
    Py_DECREF(dir);
    return done(rc, msg);
}

/* cifar(dir, hundred, usage, num_samples, shuffle, seed, num_shards, shard_id) */
static PyObject *dataset_cifar(PyObject *o, PyObject *args)
{
    slpy_dataset *self = (slpy_dataset *)o;
    PyObject *dir = NULL, *seed;
    sl_cifar_options opts;
    long long num_samples, num_shards, shard_id;
    int hundred, usage, shuffle, rc;
    char msg[1024];
    PyThreadState *ts;
    if (!PyArg_ParseTuple(args, "O&piLpOLL:cifar", PyUnicode_FSConverter, &dir, &hundred,
                          &usage, &num_samples, &shuffle, &seed, &num_shards, &shard_id))
        return NULL;
    sl_cifar_options_init(&opts);
    opts.dataset_dir = PyBytes_AS_STRING(dir);
    opts.usage = (sl_cifar_usage)usage;
    if (slpy_fill_sampler(&opts.sampler, num_samples, shuffle, seed, num_shards, shard_id) < 0) {
        Py_DECREF(dir);
        return NULL;
    }
    ts = begin_call(self);
    rc = hundred ? sl_dataset_cifar100(self->ds, &opts) : sl_dataset_cifar10(self->ds, &opts);
    keep_error(self, msg, sizeof msg);
    end_call(self, ts);
    Py_DECREF(dir);
    return done(rc, msg);
}

/* A NULL-terminated array of the UTF-8 strings of seq (None: *out NULL).
 * The strings belong to items, a list the caller frees after use. */
static int string_array(PyObject *seq, const char *what, const char ***out, size_t *n,
                        PyObject **items)
{
    Py_ssize_t len;
    *out = NULL;
    *n = 0;
    *items = NULL;
    if (seq == Py_None)
        return 0;
    *items = PySequence_List(seq);
    if (!*items)
        return -1;
    len = PyList_GET_SIZE(*items);
    *out = PyMem_Calloc((size_t)len + 1, sizeof **out);
    if (!*out) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        PyObject *item = PyList_GET_ITEM(*items, i);
        if (!PyUnicode_Check(item)) {
            PyErr_Format(PyExc_TypeError, "%s must hold str, not %.100s", what,
                         Py_TYPE(item)->tp_name);
            return -1;
        }
        if (!((*out)[i] = PyUnicode_AsUTF8(item)))
            return -1;
    }
    *n = (size_t)len;
    return 0;
}

int slpy_string_array(PyObject *seq, const char *what, const char ***out, size_t *n,
                      PyObject **items)
{
    return string_array(seq, what, out, n, items);
}

static PyObject *dataset_image_folder(PyObject *o, PyObject *args)
{
    slpy_dataset *self = (slpy_dataset *)o;
    PyObject *dir = NULL, *exts_o, *names_o, *indices_o, *seed, *ext_items = NULL,
             *name_items = NULL, *result = NULL;
    const char **exts = NULL, **names = NULL;
    int32_t *indices = NULL;
    size_t nexts, nnames;
    sl_image_folder_options opts;
    long long num_samples, num_shards, shard_id;
    unsigned long long max_pixels = 0;
    int decode, workers, shuffle, rc;
    char msg[1024];
    PyThreadState *ts;
    if (!PyArg_ParseTuple(args, "O&OOOpiLpOLL|K:image_folder", PyUnicode_FSConverter, &dir,
                          &exts_o, &names_o, &indices_o, &decode, &workers, &num_samples,
                          &shuffle, &seed, &num_shards, &shard_id, &max_pixels))
        return NULL;
    if (string_array(exts_o, "extensions", &exts, &nexts, &ext_items) < 0 ||
        string_array(names_o, "class names", &names, &nnames, &name_items) < 0)
        goto out;
    if (names) {
        PyObject *fast = PySequence_Fast(indices_o, "class indices must be a sequence");
        if (!fast)
            goto out;
        if ((size_t)PySequence_Fast_GET_SIZE(fast) != nnames) {
            PyErr_SetString(PyExc_ValueError, "class_indexing: one index per class name");
            Py_DECREF(fast);
            goto out;
        }
        indices = PyMem_Calloc(nnames ? nnames : 1, sizeof *indices);
        for (size_t i = 0; indices && i < nnames; i++) {
            long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, (Py_ssize_t)i));
            if (v == -1 && PyErr_Occurred())
                break;
            if (v < INT32_MIN || v > INT32_MAX) {
                PyErr_Format(PyExc_ValueError, "class_indexing: index %ld is out of int32", v);
                break;
            }
            indices[i] = (int32_t)v;
        }
        Py_DECREF(fast);
        if (!indices && !PyErr_Occurred())
            PyErr_NoMemory();
        if (PyErr_Occurred())
            goto out;
    }
    sl_image_folder_options_init(&opts);
    opts.dataset_dir = PyBytes_AS_STRING(dir);
    opts.extensions = exts;
    opts.class_names = names;
    opts.class_indices = indices;
    opts.num_classes = nnames;
    opts.decode = decode;
    opts.num_parallel_workers = workers;
    if (max_pixels) /* 0: the C default */
        opts.decode_max_pixels = max_pixels;
    if (slpy_fill_sampler(&opts.sampler, num_samples, shuffle, seed, num_shards, shard_id) < 0)
        goto out;
    ts = begin_call(self);
    rc = sl_dataset_image_folder(self->ds, &opts);
    keep_error(self, msg, sizeof msg);
    end_call(self, ts);
    result = done(rc, msg);
out:
    PyMem_Free(exts);
    PyMem_Free(names);
    PyMem_Free(indices);
    Py_XDECREF(ext_items);
    Py_XDECREF(name_items);
    Py_DECREF(dir);
    return result;
}

/* --- nodes ------------------------------------------------------------------------------- */

static PyObject *dataset_map(PyObject *o, PyObject *args)
{
    slpy_dataset *self = (slpy_dataset *)o;
    PyObject *ops_o, *fast;
    const char *in, *out = NULL;
    sl_op **ops;
    Py_ssize_t n;
    int workers, rc;
    char msg[1024];
    PyThreadState *ts;
    if (!PyArg_ParseTuple(args, "Oszi:map", &ops_o, &in, &out, &workers))
        return NULL;
    fast = PySequence_Fast(ops_o, "map: operations must be a sequence");
    if (!fast)
        return NULL;
    n = PySequence_Fast_GET_SIZE(fast);
    ops = PyMem_Calloc(n ? (size_t)n : 1, sizeof *ops);
    if (!ops) {
        Py_DECREF(fast);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(fast, i);
        if (!PyObject_TypeCheck(item, &slpy_op_type)) {
            PyErr_Format(PyExc_TypeError, "map: operation %zd is a %.100s, not an Op", i,
                         Py_TYPE(item)->tp_name);
            PyMem_Free(ops);
            Py_DECREF(fast);
            return NULL;
        }
        ops[i] = ((slpy_op *)item)->op;
    }
    /* The map takes its own references; fast keeps ours alive until then. */
    ts = begin_call(self);
    rc = sl_dataset_map(self->ds, ops, (size_t)n, in, out, workers);
    keep_error(self, msg, sizeof msg);
    end_call(self, ts);
    PyMem_Free(ops);
    Py_DECREF(fast);
    return done(rc, msg);
}

/* One node call taking an int64 (and, for batch, two ints). */
enum node_kind { NODE_SHUFFLE, NODE_BATCH, NODE_REPEAT, NODE_TAKE, NODE_SKIP };

static PyObject *append_node(PyObject *o, PyObject *args, enum node_kind kind)
{
    slpy_dataset *self = (slpy_dataset *)o;
    long long n;
    int drop = 0, workers = 1, rc = SL_OK;
    char msg[1024];
    PyThreadState *ts;
    if (kind == NODE_BATCH ? !PyArg_ParseTuple(args, "Lpi:batch", &n, &drop, &workers)
                           : !PyArg_ParseTuple(args, "L", &n))
        return NULL;
    ts = begin_call(self);
    switch (kind) {
    case NODE_SHUFFLE: rc = sl_dataset_shuffle(self->ds, n); break;
    case NODE_BATCH: rc = sl_dataset_batch(self->ds, n, drop, workers); break;
    case NODE_REPEAT: rc = sl_dataset_repeat(self->ds, n); break;
    case NODE_TAKE: rc = sl_dataset_take(self->ds, n); break;
    case NODE_SKIP: rc = sl_dataset_skip(self->ds, n); break;
    }
    keep_error(self, msg, sizeof msg);
    end_call(self, ts);
    return done(rc, msg);
}

static PyObject *dataset_shuffle(PyObject *o, PyObject *args)
{
    return append_node(o, args, NODE_SHUFFLE);
}

static PyObject *dataset_batch(PyObject *o, PyObject *args)
{
    return append_node(o, args, NODE_BATCH);
}

static PyObject *dataset_repeat(PyObject *o, PyObject *args)
{
    return append_node(o, args, NODE_REPEAT);
}

static PyObject *dataset_take(PyObject *o, PyObject *args)
{
    return append_node(o, args, NODE_TAKE);
}

static PyObject *dataset_skip(PyObject *o, PyObject *args)
{
    return append_node(o, args, NODE_SKIP);
}

static PyObject *dataset_set_seed(PyObject *o, PyObject *arg)
{
    slpy_dataset *self = (slpy_dataset *)o;
    unsigned long long seed = PyLong_AsUnsignedLongLong(arg);
    PyThreadState *ts;
    if (seed == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    ts = begin_call(self);
    sl_dataset_set_seed(self->ds, seed);
    end_call(self, ts);
    Py_RETURN_NONE;
}

static PyObject *dataset_set_decode_budget(PyObject *o, PyObject *arg)
{
    slpy_dataset *self = (slpy_dataset *)o;
    unsigned long long bytes = PyLong_AsUnsignedLongLong(arg);
    PyThreadState *ts;
    if (bytes == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    ts = begin_call(self);
    sl_dataset_set_decode_budget(self->ds, bytes);
    end_call(self, ts);
    Py_RETURN_NONE;
}

static PyObject *dataset_set_decode_fusion(PyObject *o, PyObject *arg)
{
    slpy_dataset *self = (slpy_dataset *)o;
    long mode = PyLong_AsLong(arg); /* SL_DECODE_FUSION_*: the package checks it */
    PyThreadState *ts;
    if (mode == -1 && PyErr_Occurred())
        return NULL;
    ts = begin_call(self);
    sl_dataset_set_decode_fusion(self->ds, (int)mode);
    end_call(self, ts);
    Py_RETURN_NONE;
}

static PyObject *dataset_set_error_samples(PyObject *o, PyObject *args)
{
    slpy_dataset *self = (slpy_dataset *)o;
    sl_error_samples_options opts;
    long long max_count;
    double max_fraction;
    int mode, rc;
    char msg[1024];
    PyThreadState *ts;
    if (!PyArg_ParseTuple(args, "iLd:set_error_samples", &mode, &max_count, &max_fraction))
        return NULL;
    sl_error_samples_options_init(&opts);
    opts.mode = (sl_error_samples)mode;
    opts.max_bad_samples = max_count;
    opts.max_bad_fraction = max_fraction;
    ts = begin_call(self);
    rc = sl_dataset_set_error_samples(self->ds, &opts);
    keep_error(self, msg, sizeof msg);
    end_call(self, ts);
    return done(rc, msg);
}

/* --- what a dataset holds -------------------------------------------------------------------- */

static PyObject *dataset_get_dataset_size(PyObject *o, PyObject *unused)
{
    slpy_dataset *self = (slpy_dataset *)o;
    int64_t size;
    int rc;
    PyThreadState *ts;
    (void)unused;
    ts = begin_call(self);
    rc = sl_dataset_get_dataset_size(self->ds, &size);
    end_call(self, ts);
    if (rc != SL_OK)
        return slpy_raise(rc, "get_dataset_size: the dataset has no source");
    return PyLong_FromLongLong(size);
}

static PyObject *dataset_column_names(PyObject *o, PyObject *unused)
{
    slpy_dataset *self = (slpy_dataset *)o;
    size_t n = sl_dataset_num_columns(self->ds);
    PyObject *list = PyList_New((Py_ssize_t)n);
    (void)unused;
    for (size_t i = 0; list && i < n; i++) {
        PyObject *name = PyUnicode_FromString(sl_dataset_column_name(self->ds, i));
        if (!name) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, name);
    }
    return list;
}

/* column_spec(i) -> (dtype name, shape tuple with -1 for unknown sizes). */
static PyObject *dataset_column_spec(PyObject *o, PyObject *arg)
{
    slpy_dataset *self = (slpy_dataset *)o;
    sl_tensor_spec spec;
    Py_ssize_t i = PyLong_AsSsize_t(arg);
    PyObject *shape, *res;
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (i < 0 || sl_dataset_column_spec(self->ds, (size_t)i, &spec) != SL_OK) {
        PyErr_Format(PyExc_IndexError, "column %zd does not exist", i);
        return NULL;
    }
    shape = PyTuple_New(spec.ndim);
    for (int d = 0; shape && d < spec.ndim; d++) {
        PyObject *n = PyLong_FromLongLong(spec.shape[d]);
        if (!n) {
            Py_CLEAR(shape);
            break;
        }
        PyTuple_SET_ITEM(shape, d, n);
    }
    if (!shape)
        return NULL;
    res = Py_BuildValue("(sN)", sl_dtype_name(spec.dtype), shape);
    return res;
}

static PyObject *dataset_describe(PyObject *o, PyObject *unused)
{
    slpy_dataset *self = (slpy_dataset *)o;
    char buf[8192];
    PyThreadState *ts;
    (void)unused;
    ts = begin_call(self);
    sl_dataset_describe(self->ds, buf, sizeof buf);
    end_call(self, ts);
    return PyUnicode_FromString(buf);
}

static PyObject *dataset_source_kind(PyObject *o, PyObject *unused)
{
    const char *kind = sl_dataset_source_kind(((slpy_dataset *)o)->ds);
    (void)unused;
    if (!kind)
        Py_RETURN_NONE;
    return PyUnicode_FromString(kind);
}

static PyObject *dataset_source_rows(PyObject *o, PyObject *unused)
{
    (void)unused;
    return PyLong_FromLongLong(sl_dataset_source_rows(((slpy_dataset *)o)->ds));
}

/* classes() -> [(name, label, count), ...] of an ImageFolder source. */
static PyObject *dataset_classes(PyObject *o, PyObject *unused)
{
    sl_dataset *ds = ((slpy_dataset *)o)->ds;
    size_t n = sl_dataset_num_classes(ds);
    PyObject *list = PyList_New((Py_ssize_t)n);
    (void)unused;
    for (size_t i = 0; list && i < n; i++) {
        const char *name;
        int32_t label;
        int64_t count;
        PyObject *item;
        if (sl_dataset_class_info(ds, i, &name, &label, &count) != SL_OK ||
            !(item = Py_BuildValue("(siL)", name, (int)label, (long long)count))) {
            Py_CLEAR(list);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "classes: cannot read class info");
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

static PyObject *dataset_iterator(PyObject *o, PyObject *args, PyObject *kwargs)
{
    return slpy_iterator_new((slpy_dataset *)o, args, kwargs);
}

static PyMethodDef dataset_methods[] = {
    {"copy", dataset_copy, METH_NOARGS, "copy() -> Dataset: the same source and nodes."},
    {"mnist", dataset_mnist, METH_VARARGS,
     "mnist(dir, usage, num_samples, shuffle, seed, num_shards, shard_id)"},
    {"cifar", dataset_cifar, METH_VARARGS,
     "cifar(dir, hundred, usage, num_samples, shuffle, seed, num_shards, shard_id)"},
    {"image_folder", dataset_image_folder, METH_VARARGS,
     "image_folder(dir, extensions, class_names, class_indices, decode, workers, num_samples,\n"
     "             shuffle, seed, num_shards, shard_id, decode_max_pixels=0)"},
    {"map", dataset_map, METH_VARARGS, "map(ops, input_column, output_column, workers)"},
    {"shuffle", dataset_shuffle, METH_VARARGS, "shuffle(buffer_size)"},
    {"batch", dataset_batch, METH_VARARGS, "batch(batch_size, drop_remainder, workers)"},
    {"repeat", dataset_repeat, METH_VARARGS, "repeat(count)"},
    {"take", dataset_take, METH_VARARGS, "take(n)"},
    {"skip", dataset_skip, METH_VARARGS, "skip(n)"},
    {"project", slpy_dataset_project, METH_O, "project(columns)"},
    {"rename", slpy_dataset_rename, METH_VARARGS, "rename(input_columns, output_columns)"},
    {"concat", slpy_dataset_concat, METH_O, "concat(list of Dataset)"},
    {"zip", slpy_dataset_zip, METH_O, "zip(list of Dataset)"},
    {"set_seed", dataset_set_seed, METH_O, "set_seed(seed)"},
    {"set_decode_budget", dataset_set_decode_budget, METH_O, "set_decode_budget(bytes)"},
    {"set_decode_fusion", dataset_set_decode_fusion, METH_O, "set_decode_fusion(enable)"},
    {"set_error_samples", dataset_set_error_samples, METH_VARARGS,
     "set_error_samples(mode, max_bad_samples, max_bad_fraction): mode 0 raise, 1 skip, "
     "2 replace"},
    {"get_dataset_size", dataset_get_dataset_size, METH_NOARGS,
     "get_dataset_size() -> int (-1: endless)"},
    {"column_names", dataset_column_names, METH_NOARGS, "column_names() -> list of str"},
    {"column_spec", dataset_column_spec, METH_O, "column_spec(i) -> (dtype, shape)"},
    {"describe", dataset_describe, METH_NOARGS, "describe() -> str, one line per node"},
    {"source_kind", dataset_source_kind, METH_NOARGS, "source_kind() -> 'mnist', ... or None"},
    {"source_rows", dataset_source_rows, METH_NOARGS, "source_rows() -> samples before sharding"},
    {"classes", dataset_classes, METH_NOARGS, "classes() -> [(name, label, count)]"},
    {"iterator", (PyCFunction)(void (*)(void))dataset_iterator, METH_VARARGS | METH_KEYWORDS,
     "iterator(mode, columns, num_epochs, convert) -> Iterator"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject slpy_dataset_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sluice._sluice.Dataset",
    .tp_basicsize = sizeof(slpy_dataset),
    .tp_dealloc = dataset_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One C dataset description; see sluice.dataset for the API to use.",
    .tp_methods = dataset_methods,
    .tp_new = dataset_new,
};
