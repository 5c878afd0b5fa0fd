/* module.c: the module sluice._sluice: its types and functions, and how C
 * statuses become Python exceptions. */
#include "sluice_py.h"

#include <errno.h>
#include <string.h>

/* The errno values whose strerror() text the C library puts at the end of
 * an I/O message ("<path>: No such file or directory"); finding one lets
 * OSError pick its subclass (FileNotFoundError, PermissionError, ...). */
static const int known_errnos[] = {ENOENT, EACCES, EPERM, ENOTDIR, EISDIR, ELOOP,
                                   ENAMETOOLONG, EMFILE, ENFILE, EIO, ENOSPC, EROFS};

static PyObject *raise_oserror(const char *msg)
{
    for (size_t i = 0; i < sizeof known_errnos / sizeof known_errnos[0]; i++) {
        const char *text = strerror(known_errnos[i]);
        if (strstr(msg, text)) {
            PyObject *args = Py_BuildValue("(is)", known_errnos[i], msg);
            if (args) {
                /* OSError(errno, message) becomes the errno's subclass. */
                PyErr_SetObject(PyExc_OSError, args);
                Py_DECREF(args);
            }
            return NULL;
        }
    }
    PyErr_SetString(PyExc_OSError, msg);
    return NULL;
}

PyObject *slpy_raise(int status, const char *msg)
{
    if (!msg || !msg[0])
        msg = sl_strerror(status);
    switch (status) {
    case SL_EINVAL:
    case SL_ESHAPE:
        PyErr_SetString(PyExc_ValueError, msg);
        return NULL;
    case SL_EIO:
    case SL_EFORMAT:
        return raise_oserror(msg);
    case SL_ENOMEM:
        PyErr_SetString(PyExc_MemoryError, msg);
        return NULL;
    default:
        PyErr_SetString(PyExc_RuntimeError, msg);
        return NULL;
    }
}

PyObject *slpy_raise_runtime(int status, const char *msg)
{
    if (!msg || !msg[0])
        msg = sl_strerror(status);
    PyErr_SetString(PyExc_RuntimeError, msg);
    return NULL;
}

int slpy_parse_dtype(PyObject *name, sl_dtype *out)
{
    const char *s;
    if (!PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "a dtype name (str) is needed, got %.100s",
                     Py_TYPE(name)->tp_name);
        return -1;
    }
    s = PyUnicode_AsUTF8(name);
    if (!s)
        return -1;
    if (sl_dtype_parse(s, out) != SL_OK) {
        PyErr_Format(PyExc_ValueError,
                     "unknown dtype '%s' (sluice has uint8, int32, uint32, int64, float32, "
                     "float64)",
                     s);
        return -1;
    }
    return 0;
}

int slpy_as_int64(PyObject *o, int64_t *out)
{
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    *out = (int64_t)v;
    return 0;
}

/* --- module functions ------------------------------------------------------- */

static PyObject *py_version(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return PyUnicode_FromString(sl_version());
}

/* The thread budget's defaults for this process: (cpus, pipeline workers
 * per map), what `num_parallel_workers=None` means. */
static PyObject *py_default_workers(PyObject *self, PyObject *unused)
{
    sl_thread_budget b;
    (void)self, (void)unused;
    sl_thread_budget_default(&b);
    return Py_BuildValue("(ii)", b.cpus, b.pipeline_workers);
}

static PyObject *py_strerror(PyObject *self, PyObject *arg)
{
    long status = PyLong_AsLong(arg);
    (void)self;
    if (status == -1 && PyErr_Occurred())
        return NULL;
    return PyUnicode_FromString(sl_status_name((int)status));
}

static PyMethodDef module_functions[] = {
    {"version", py_version, METH_NOARGS, "version() -> str: libsluice's version."},
    {"default_workers", py_default_workers, METH_NOARGS,
     "default_workers() -> (cpus, workers): the CPUs this process may use and the map\n"
     "workers the thread budget gives each map by default."},
    {"status_name", py_strerror, METH_O, "status_name(status) -> str: 'SL_EINVAL', ..."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "sluice._sluice",
    .m_doc = "The C half of the sluice package: tensors, datasets, operators, iterators and\n"
             "models over libsluice. Use the sluice, sluice.dataset, sluice.nn and\n"
             "sluice.train packages, not this module.",
    .m_size = -1,
    .m_methods = module_functions,
};

static int add_type(PyObject *m, PyTypeObject *type, const char *name)
{
    if (PyType_Ready(type) < 0)
        return -1;
    Py_INCREF(type);
    if (PyModule_AddObject(m, name, (PyObject *)type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return 0;
}

PyMODINIT_FUNC PyInit__sluice(void);

PyMODINIT_FUNC PyInit__sluice(void)
{
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    if (PyModule_AddFunctions(m, slpy_op_functions) < 0 ||
        PyModule_AddFunctions(m, slpy_model_functions) < 0 ||
        PyModule_AddFunctions(m, slpy_distributed_functions) < 0 ||
        PyModule_AddFunctions(m, slpy_source_functions) < 0 ||
        PyModule_AddFunctions(m, slpy_dataset_split_functions) < 0 ||
        add_type(m, &slpy_tensor_type, "Tensor") < 0 || add_type(m, &slpy_op_type, "Op") < 0 ||
        add_type(m, &slpy_dataset_type, "Dataset") < 0 ||
        add_type(m, &slpy_iterator_type, "Iterator") < 0 ||
        add_type(m, &slpy_model_type, "Model") < 0 ||
        add_type(m, &slpy_data_sink_type, "DataSink") < 0 ||
        add_type(m, &slpy_dataset_helper_type, "DatasetHelper") < 0 ||
        add_type(m, &slpy_graph_type, "Graph") < 0 ||
        add_type(m, &slpy_step_type, "Step") < 0 ||
        PyModule_AddIntConstant(m, "END_OF_DATA", SL_END_OF_DATA) < 0 ||
        PyModule_AddIntConstant(m, "END_OF_EPOCH", SL_END_OF_EPOCH) < 0 ||
        PyModule_AddIntConstant(m, "DATASET_SIZE_ENDLESS", SL_DATASET_SIZE_ENDLESS) < 0 ||
        PyModule_AddIntConstant(m, "MAX_DIMS", SL_MAX_DIMS) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
