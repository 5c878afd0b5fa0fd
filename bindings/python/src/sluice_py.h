/* sluice_py.h: what the files of the extension module sluice._sluice share.
 * The module wraps the public C API only (include/sluice): tensors with the
 * buffer protocol and DLPack (tensor.c, dlpack.c), datasets (dataset.c),
 * operators and Python callables as operators (op.c), and iterators that
 * release the GIL while they wait (iterator.c). The Python package around
 * it (bindings/python/sluice) gives the MindSpore-style names and defaults.
 *
 * Names: slpy_ for what these files share, static for the rest. Every C
 * call that can block or take long runs with the GIL released. */
#ifndef SLUICE_BINDINGS_PYTHON_SLUICE_PY_H
#define SLUICE_BINDINGS_PYTHON_SLUICE_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <sluice/sluice.h>

/* --- module.c: errors and small conversions ------------------------------- */

/* Raises the exception for a failed call that describes or builds something
 * (a source, a node, an op): ValueError for bad arguments and shapes,
 * OSError (FileNotFoundError, PermissionError, ... as errno says) for
 * files, MemoryError, RuntimeError otherwise. msg is the C message (may be
 * NULL or empty: the status's text is used). Returns NULL. */
PyObject *slpy_raise(int status, const char *msg);
/* Raises RuntimeError for a failure inside a running pipeline; returns NULL. */
PyObject *slpy_raise_runtime(int status, const char *msg);
/* A dtype name ("uint8", "int32", ...) to its sl_dtype; ValueError
 * otherwise. Returns 0 or -1. */
int slpy_parse_dtype(PyObject *name, sl_dtype *out);
/* int64 argument helpers: OverflowError/TypeError set on failure (-1). */
int slpy_as_int64(PyObject *o, int64_t *out);

/* --- tensor.c: sluice.Tensor ---------------------------------------------- */

typedef struct slpy_tensor {
    PyObject_HEAD
    sl_tensor *t;                   /* one reference, dropped on dealloc */
    int readonly;                   /* the data is shared (a view of the source's) */
    Py_ssize_t shape[SL_MAX_DIMS];  /* for the buffer protocol */
    Py_ssize_t strides[SL_MAX_DIMS];
    PyObject *weakrefs;
} slpy_tensor;

extern PyTypeObject slpy_tensor_type;
/* A Tensor owning t (steals the caller's reference; releases it on
 * failure). NULL with an exception on failure. */
PyObject *slpy_tensor_wrap(sl_tensor *t);
/* Copies any C-contiguous buffer (a numpy array, bytes, a Tensor) into a
 * new heap tensor. Returns 0, or -1 with a message in err (no exception
 * left set). */
int slpy_tensor_from_buffer(PyObject *obj, sl_tensor **out, char *err, size_t errlen);
/* The buffer-protocol format character of a dtype ("B", "f", ...). */
const char *slpy_dtype_format(sl_dtype dtype);

/* --- dlpack.c: DLPack capsules --------------------------------------------- */

/* A DLPack capsule of t (retained; released by the capsule's deleter, from
 * whatever thread the consumer frees it on). versioned: 1 for DLPack 1.0's
 * "dltensor_versioned", 0 for "dltensor". copy: 1 always copy, 0 never
 * (BufferError when a copy is needed), -1 when needed: a read-only tensor
 * goes to an unversioned capsule, which cannot say read-only, as a copy.
 * NULL with an exception on failure. */
PyObject *slpy_dlpack_capsule(sl_tensor *t, int readonly, int versioned, int copy);
/* Tensor.__dlpack__ and __dlpack_device__. */
PyObject *slpy_tensor_dlpack(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *slpy_tensor_dlpack_device(PyObject *self, PyObject *unused);

/* --- op.c: operators --------------------------------------------------------- */

typedef struct slpy_op {
    PyObject_HEAD
    sl_op *op;     /* one reference */
} slpy_op;

extern PyTypeObject slpy_op_type;
extern PyMethodDef slpy_op_functions[]; /* op_resize, op_custom, ... */

/* --- dataset.c / iterator.c ----------------------------------------------- */

typedef struct slpy_dataset {
    PyObject_HEAD
    sl_dataset *ds;
    /* Serialises C calls on ds, which run without the GIL (sl_dataset_* is
     * not thread-safe, and iterator creation writes its error message). */
    PyThread_type_lock lock;
} slpy_dataset;

extern PyTypeObject slpy_dataset_type;
extern PyTypeObject slpy_iterator_type;

/* A new Iterator over ds (see iterator.c for the arguments). */
PyObject *slpy_iterator_new(slpy_dataset *ds, PyObject *args, PyObject *kwargs);

#endif
