/* tensor.c: sluice.Tensor, a C tensor seen from Python. It holds one
 * reference to the tensor and exposes its memory without copying: through
 * the buffer protocol (numpy.asarray, memoryview) and DLPack (dlpack.c).
 * Every view made from it keeps the Tensor (or, for DLPack, the C tensor)
 * alive, so the memory goes back to the pipeline's pool only when the last
 * Python object that can reach it is gone. */
#include "sluice_py.h"

#include <string.h>

/* Buffer-protocol formats, native byte order. int is 32 bits and long long
 * 64 on every platform CPython runs on with sluice. */
_Static_assert(sizeof(int) == 4 && sizeof(long long) == 8, "format characters");

const char *slpy_dtype_format(sl_dtype dtype)
{
    switch (dtype) {
    case SL_UINT8: return "B";
    case SL_INT32: return "i";
    case SL_UINT32: return "I";
    case SL_INT64: return "q";
    case SL_FLOAT32: return "f";
    case SL_FLOAT64: return "d";
    default: return NULL;
    }
}

PyObject *slpy_tensor_wrap(sl_tensor *t)
{
    slpy_tensor *self = PyObject_New(slpy_tensor, &slpy_tensor_type);
    const int64_t *shape = sl_tensor_shape(t);
    int ndim = sl_tensor_ndim(t);
    Py_ssize_t stride = (Py_ssize_t)sl_dtype_size(sl_tensor_dtype(t));
    if (!self) {
        sl_tensor_release(t);
        return NULL;
    }
    self->t = t;
    /* Data another tensor shares (an MNIST row is a view of the file's
     * pixels, read by every epoch) must not be written through. */
    self->readonly = !sl_tensor_writable(t);
    self->weakrefs = NULL;
    for (int d = ndim - 1; d >= 0; d--) {
        self->shape[d] = (Py_ssize_t)shape[d];
        self->strides[d] = stride;
        stride *= (Py_ssize_t)shape[d];
    }
    return (PyObject *)self;
}

static void tensor_dealloc(PyObject *o)
{
    slpy_tensor *self = (slpy_tensor *)o;
    if (self->weakrefs)
        PyObject_ClearWeakRefs(o);
    /* Back to the pool (a mutex per size class, never a wait): no need to
     * let go of the GIL. */
    sl_tensor_release(self->t);
    PyObject_Free(o);
}

/* --- the buffer protocol ------------------------------------------------------ */

static int tensor_getbuffer(PyObject *o, Py_buffer *view, int flags)
{
    slpy_tensor *self = (slpy_tensor *)o;
    sl_tensor *t = self->t;
    if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE && self->readonly) {
        PyErr_SetString(PyExc_BufferError,
                        "this tensor's memory is shared with the dataset's source (a row that "
                        "no op copied): it is read-only");
        view->obj = NULL;
        return -1;
    }
    view->buf = sl_tensor_data(t);
    view->obj = Py_NewRef(o);
    view->len = (Py_ssize_t)sl_tensor_nbytes(t);
    view->readonly = self->readonly;
    view->itemsize = (Py_ssize_t)sl_dtype_size(sl_tensor_dtype(t));
    view->format = (flags & PyBUF_FORMAT) ? (char *)slpy_dtype_format(sl_tensor_dtype(t)) : NULL;
    if ((flags & PyBUF_ND) == PyBUF_ND) {
        view->ndim = sl_tensor_ndim(t);
        view->shape = view->ndim ? self->shape : NULL;
    } else {
        /* A flat view of the bytes (the tensor is contiguous). */
        view->ndim = 1;
        view->shape = NULL;
        view->itemsize = 1;
    }
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES && view->ndim ? self->strides : NULL;
    if (view->shape == NULL)
        view->strides = NULL;
    view->suboffsets = NULL;
    view->internal = NULL;
    return 0;
}

static PyBufferProcs tensor_as_buffer = {
    .bf_getbuffer = tensor_getbuffer,
    .bf_releasebuffer = NULL,
};

/* --- from any buffer ----------------------------------------------------------- */

int slpy_format_dtype(const char *fmt, Py_ssize_t itemsize, sl_dtype *out)
{
    char c;
    if (!fmt)
        fmt = "B";
    if (*fmt == '@' || *fmt == '=' || *fmt == '|' ||
        (*fmt == '<' && PY_LITTLE_ENDIAN) || (*fmt == '>' && PY_BIG_ENDIAN))
        fmt++;
    if (strlen(fmt) != 1)
        return -1;
    c = *fmt;
    if (c == 'B' && itemsize == 1)
        *out = SL_UINT8;
    else if ((c == 'i' || c == 'l' || c == 'q') && itemsize == 4)
        *out = SL_INT32;
    else if ((c == 'i' || c == 'l' || c == 'q') && itemsize == 8)
        *out = SL_INT64;
    else if ((c == 'I' || c == 'L' || c == 'Q') && itemsize == 4)
        *out = SL_UINT32;
    else if (c == 'f' && itemsize == 4)
        *out = SL_FLOAT32;
    else if (c == 'd' && itemsize == 8)
        *out = SL_FLOAT64;
    else
        return -1;
    return 0;
}

int slpy_tensor_from_buffer(PyObject *obj, sl_tensor **out, char *err, size_t errlen)
{
    Py_buffer v;
    int64_t shape[SL_MAX_DIMS];
    sl_dtype dtype;
    int rc;
    *out = NULL;
    if (PyObject_GetBuffer(obj, &v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        snprintf(err, errlen, "returned %.100s, which is not a C-contiguous buffer (a numpy "
                 "array)", Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (slpy_format_dtype(v.format, v.itemsize, &dtype) < 0) {
        snprintf(err, errlen, "returned an array of format '%s' (%zd bytes per item); sluice "
                 "takes uint8, int32, uint32, int64, float32 and float64",
                 v.format ? v.format : "B", v.itemsize);
        PyBuffer_Release(&v);
        return -1;
    }
    if (v.ndim > SL_MAX_DIMS) {
        snprintf(err, errlen, "returned an array of %d dimensions; sluice takes at most %d",
                 v.ndim, SL_MAX_DIMS);
        PyBuffer_Release(&v);
        return -1;
    }
    for (int d = 0; d < v.ndim; d++)
        shape[d] = (int64_t)v.shape[d];
    if (v.ndim == 0 && v.shape == NULL && v.len != v.itemsize) {
        /* A flat buffer with no shape: one dimension. */
        shape[0] = (int64_t)(v.len / v.itemsize);
        rc = sl_tensor_new(out, dtype, 1, shape);
    } else {
        rc = sl_tensor_new(out, dtype, v.ndim, shape);
    }
    if (rc != SL_OK) {
        snprintf(err, errlen, "cannot make a tensor of the result: %s", sl_strerror(rc));
        PyBuffer_Release(&v);
        return -1;
    }
    if ((size_t)v.len != sl_tensor_nbytes(*out)) {
        snprintf(err, errlen, "returned a buffer of %zd bytes for %zu elements", v.len,
                 sl_tensor_numel(*out));
        sl_tensor_release(*out);
        *out = NULL;
        PyBuffer_Release(&v);
        return -1;
    }
    memcpy(sl_tensor_data(*out), v.buf, (size_t)v.len);
    PyBuffer_Release(&v);
    return 0;
}

/* --- attributes and methods ---------------------------------------------------- */

static PyObject *tensor_shape(PyObject *o, void *closure)
{
    slpy_tensor *self = (slpy_tensor *)o;
    int ndim = sl_tensor_ndim(self->t);
    PyObject *tuple = PyTuple_New(ndim);
    (void)closure;
    for (int d = 0; tuple && d < ndim; d++) {
        PyObject *n = PyLong_FromSsize_t(self->shape[d]);
        if (!n) {
            Py_CLEAR(tuple);
            break;
        }
        PyTuple_SET_ITEM(tuple, d, n);
    }
    return tuple;
}

static PyObject *tensor_dtype(PyObject *o, void *closure)
{
    (void)closure;
    return PyUnicode_FromString(sl_dtype_name(sl_tensor_dtype(((slpy_tensor *)o)->t)));
}

static PyObject *tensor_ndim(PyObject *o, void *closure)
{
    (void)closure;
    return PyLong_FromLong(sl_tensor_ndim(((slpy_tensor *)o)->t));
}

static PyObject *tensor_size(PyObject *o, void *closure)
{
    (void)closure;
    return PyLong_FromSize_t(sl_tensor_numel(((slpy_tensor *)o)->t));
}

static PyObject *tensor_nbytes(PyObject *o, void *closure)
{
    (void)closure;
    return PyLong_FromSize_t(sl_tensor_nbytes(((slpy_tensor *)o)->t));
}

static PyObject *tensor_readonly(PyObject *o, void *closure)
{
    (void)closure;
    return PyBool_FromLong(((slpy_tensor *)o)->readonly);
}

static PyGetSetDef tensor_getset[] = {
    {"shape", tensor_shape, NULL, "The shape, a tuple of ints, outermost first.", NULL},
    {"dtype", tensor_dtype, NULL, "The element type's name: 'uint8', 'float32', ...", NULL},
    {"ndim", tensor_ndim, NULL, "The number of dimensions.", NULL},
    {"size", tensor_size, NULL, "The number of elements.", NULL},
    {"nbytes", tensor_nbytes, NULL, "The size of the data in bytes.", NULL},
    {"readonly", tensor_readonly, NULL,
     "True when the memory is shared with the dataset's source (an MNIST image no op\n"
     "copied) and must not be written: numpy arrays of it are read-only.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyObject *tensor_data_ptr(PyObject *o, PyObject *unused)
{
    (void)unused;
    return PyLong_FromVoidPtr(sl_tensor_data(((slpy_tensor *)o)->t));
}

static PyObject *tensor_refcount(PyObject *o, PyObject *unused)
{
    (void)unused;
    return PyLong_FromLong(sl_tensor_refcount(((slpy_tensor *)o)->t));
}

static PyObject *tensor_asnumpy(PyObject *o, PyObject *unused)
{
    PyObject *np = PyImport_ImportModule("numpy"), *arr;
    (void)unused;
    if (!np)
        return NULL;
    arr = PyObject_CallMethod(np, "asarray", "O", o);
    Py_DECREF(np);
    return arr;
}

static PyObject *tensor_item(PyObject *o, PyObject *unused)
{
    sl_tensor *t = ((slpy_tensor *)o)->t;
    const void *p = sl_tensor_data(t);
    (void)unused;
    if (sl_tensor_numel(t) != 1) {
        PyErr_Format(PyExc_ValueError, "item(): the tensor has %zu elements, not 1",
                     sl_tensor_numel(t));
        return NULL;
    }
    switch (sl_tensor_dtype(t)) {
    case SL_UINT8: return PyLong_FromLong(*(const uint8_t *)p);
    case SL_INT32: return PyLong_FromLong(*(const int32_t *)p);
    case SL_UINT32: return PyLong_FromUnsignedLong(*(const uint32_t *)p);
    case SL_INT64: return PyLong_FromLongLong(*(const int64_t *)p);
    case SL_FLOAT32: return PyFloat_FromDouble(*(const float *)p);
    case SL_FLOAT64: return PyFloat_FromDouble(*(const double *)p);
    default: break;
    }
    PyErr_SetString(PyExc_RuntimeError, "item(): unknown dtype");
    return NULL;
}

/* A new Tensor holding a copy of numpy's result res (an array or a numpy
 * scalar: a 0-d tensor), as MindSpore's indexing and argmax make new
 * tensors; dtype, when not NULL, converts it first ("int32"). Steals res. */
static PyObject *tensor_from_result(PyObject *res, const char *dtype)
{
    PyObject *np, *arr = NULL, *out = NULL;
    if (!res)
        return NULL;
    np = PyImport_ImportModule("numpy");
    if (np) {
        arr = dtype ? PyObject_CallMethod(np, "array", "Os", res, dtype)
                    : PyObject_CallMethod(np, "array", "O", res);
        Py_DECREF(np);
    }
    if (arr)
        out = PyObject_CallFunctionObjArgs((PyObject *)&slpy_tensor_type, arr, NULL);
    Py_XDECREF(arr);
    Py_DECREF(res);
    return out;
}

/* t[key]: numpy's indexing (ints, slices, ..., arrays of indices) of the
 * values, as a new Tensor. */
static PyObject *tensor_getitem(PyObject *o, PyObject *key)
{
    PyObject *arr = tensor_asnumpy(o, NULL), *res;
    if (!arr)
        return NULL;
    res = PyObject_GetItem(arr, key);
    Py_DECREF(arr);
    return tensor_from_result(res, NULL);
}

static PyObject *tensor_argmax(PyObject *o, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"axis", "keepdims", NULL};
    PyObject *axis = Py_None, *arr, *res, *fn, *call_args, *call_kwargs;
    int keepdims = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|Op:argmax", kwlist, &axis, &keepdims))
        return NULL;
    if (sl_tensor_numel(((slpy_tensor *)o)->t) == 0) {
        PyErr_SetString(PyExc_ValueError, "argmax(): the tensor is empty");
        return NULL;
    }
    if (!(arr = tensor_asnumpy(o, NULL)))
        return NULL;
    res = NULL;
    fn = PyObject_GetAttrString(arr, "argmax");
    call_args = Py_BuildValue("(O)", axis);
    call_kwargs = Py_BuildValue("{s:O}", "keepdims", keepdims ? Py_True : Py_False);
    if (fn && call_args && call_kwargs)
        res = PyObject_Call(fn, call_args, call_kwargs);
    Py_XDECREF(fn);
    Py_XDECREF(call_args);
    Py_XDECREF(call_kwargs);
    Py_DECREF(arr);
    return tensor_from_result(res, "int32");
}

/* int(t), float(t), and t as an index (integer tensors): its one value. */
static PyObject *tensor_int(PyObject *o)
{
    PyObject *v = tensor_item(o, NULL), *r;
    if (!v)
        return NULL;
    r = PyNumber_Long(v);
    Py_DECREF(v);
    return r;
}

static PyObject *tensor_float(PyObject *o)
{
    PyObject *v = tensor_item(o, NULL), *r;
    if (!v)
        return NULL;
    r = PyNumber_Float(v);
    Py_DECREF(v);
    return r;
}

static PyObject *tensor_index(PyObject *o)
{
    sl_dtype dt = sl_tensor_dtype(((slpy_tensor *)o)->t);
    if (dt == SL_FLOAT32 || dt == SL_FLOAT64) {
        PyErr_SetString(PyExc_TypeError, "a float tensor cannot be an index: int(t) rounds "
                                         "towards zero");
        return NULL;
    }
    return tensor_item(o, NULL);
}

static PyNumberMethods tensor_as_number = {
    .nb_int = tensor_int,
    .nb_float = tensor_float,
    .nb_index = tensor_index,
};

static PyMethodDef tensor_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))slpy_tensor_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None) -> capsule\n\n"
     "The tensor as a DLPack capsule sharing its memory (for torch.from_dlpack,\n"
     "numpy.from_dlpack, ...). Without max_version, or with one below (1, 0), the\n"
     "capsule is the unversioned 'dltensor' that torch 1.13 and numpy 1.24 take;\n"
     "with max_version >= (1, 0) it is DLPack 1.0's 'dltensor_versioned', which can\n"
     "mark the memory read-only. A read-only tensor goes to an unversioned capsule\n"
     "as a copy, unless copy=False (then BufferError). The memory stays valid until\n"
     "the consumer frees what it made of the capsule."},
    {"__dlpack_device__", slpy_tensor_dlpack_device, METH_NOARGS,
     "__dlpack_device__() -> (1, 0): DLPack's kDLCPU, device 0."},
    {"data_ptr", tensor_data_ptr, METH_NOARGS,
     "data_ptr() -> int: the address of the first element (to check that views share\n"
     "the memory)."},
    {"asnumpy", tensor_asnumpy, METH_NOARGS,
     "asnumpy() -> numpy.ndarray: a numpy array sharing the memory (numpy.asarray(t))."},
    {"item", tensor_item, METH_NOARGS,
     "item() -> int or float: the value of a tensor of one element (also int(t), float(t))."},
    {"argmax", (PyCFunction)(void (*)(void))tensor_argmax, METH_VARARGS | METH_KEYWORDS,
     "argmax(axis=None, keepdims=False) -> Tensor: the indices of the largest values\n"
     "along axis (of the flattened tensor when None), int32 as MindSpore's; a new tensor."},
    {"_refcount", tensor_refcount, METH_NOARGS,
     "_refcount() -> int: references to the C tensor (this object's, capsules', ...)."},
    {NULL, NULL, 0, NULL},
};

static Py_ssize_t tensor_len(PyObject *o)
{
    slpy_tensor *self = (slpy_tensor *)o;
    if (sl_tensor_ndim(self->t) == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d tensor");
        return -1;
    }
    return self->shape[0];
}

static PySequenceMethods tensor_as_sequence = {
    .sq_length = tensor_len,
};

static PyMappingMethods tensor_as_mapping = {
    .mp_length = tensor_len,
    .mp_subscript = tensor_getitem,
};

/* t == u: refused rather than Python's identity, which would answer False
 * where a MindSpore or numpy user means element by element. <, <= ... are
 * Python's TypeError already. */
static PyObject *tensor_richcompare(PyObject *a, PyObject *b, int op)
{
    if (op != Py_EQ && op != Py_NE)
        Py_RETURN_NOTIMPLEMENTED;
    return PyErr_Format(PyExc_TypeError,
                        "sluice.Tensor has no element-wise %s: compare its values as numpy "
                        "arrays, t.asnumpy() %s u.asnumpy() (numpy.asarray(t) shares its "
                        "memory, no copy)%s",
                        op == Py_EQ ? "==" : "!=", op == Py_EQ ? "==" : "!=",
                        PyObject_TypeCheck(a, &slpy_tensor_type) &&
                                PyObject_TypeCheck(b, &slpy_tensor_type)
                            ? "; 'is' tells whether two are the same object"
                            : "");
}

/* Hashable by identity, as before it had a comparison. */
static Py_hash_t tensor_hash(PyObject *o)
{
    Py_hash_t h = (Py_hash_t)((uintptr_t)o >> 4);
    return h == -1 ? -2 : h;
}

static PyObject *tensor_repr(PyObject *o)
{
    sl_tensor *t = ((slpy_tensor *)o)->t;
    char shape[128];
    sl_shape_str(shape, sizeof shape, sl_tensor_ndim(t), sl_tensor_shape(t));
    return PyUnicode_FromFormat("Tensor(shape=%s, dtype=%s)", shape,
                                sl_dtype_name(sl_tensor_dtype(t)));
}

/* str(t): the values as numpy prints them ("2.3025851" for a loss), as
 * MindSpore's Tensor prints; the repr when numpy is not there. */
static PyObject *tensor_str(PyObject *o)
{
    PyObject *arr = tensor_asnumpy(o, NULL), *s;
    if (!arr) {
        PyErr_Clear();
        return tensor_repr(o);
    }
    s = PyObject_Str(arr);
    Py_DECREF(arr);
    return s;
}

static PyObject *tensor_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *obj;
    sl_tensor *t;
    char err[256];
    static char *kwlist[] = {"array", NULL};
    (void)type;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:Tensor", kwlist, &obj))
        return NULL;
    if (slpy_tensor_from_buffer(obj, &t, err, sizeof err) < 0) {
        PyErr_Format(PyExc_ValueError, "Tensor(): the argument %s", err);
        return NULL;
    }
    return slpy_tensor_wrap(t);
}

PyTypeObject slpy_tensor_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sluice.Tensor",
    .tp_basicsize = sizeof(slpy_tensor),
    .tp_dealloc = tensor_dealloc,
    .tp_repr = tensor_repr,
    .tp_str = tensor_str,
    .tp_as_sequence = &tensor_as_sequence,
    .tp_as_mapping = &tensor_as_mapping,
    .tp_as_number = &tensor_as_number,
    .tp_as_buffer = &tensor_as_buffer,
    .tp_richcompare = tensor_richcompare,
    .tp_hash = tensor_hash,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Tensor(array)\n--\n\n"
              "A dense, contiguous tensor made by sluice (a batch, a column of a row).\n\n"
              "Its memory is shared, never copied, with what you make of it:\n"
              "numpy.asarray(t) (the buffer protocol), torch.from_dlpack(t) and\n"
              "numpy.from_dlpack(t) (DLPack). It stays valid while any of them, or t,\n"
              "is alive, then goes back to the pipeline's buffer pool.\n\n"
              "Tensor(array) copies any C-contiguous buffer (a numpy array) of uint8,\n"
              "int32, uint32, int64, float32 or float64 into a new tensor.\n\n"
              "t[key] (numpy's indexing) and t.argmax(axis) give new tensors (copies),\n"
              "as MindSpore's do; int(t) and float(t) the value of a one-element tensor.",
    .tp_weaklistoffset = offsetof(slpy_tensor, weakrefs),
    .tp_methods = tensor_methods,
    .tp_getset = tensor_getset,
    .tp_new = tensor_new,
};
