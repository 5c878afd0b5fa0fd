/* dlpack.c: sluice tensors as DLPack capsules (https://dmlc.github.io/dlpack).
 *
 * Debian's libdlpack-dev is DLPack 0.6: it has DLManagedTensor, the
 * unversioned struct of the "dltensor" capsule, but not DLPack 1.0's
 * DLManagedTensorVersioned ("dltensor_versioned", which adds a version and
 * flags such as read-only). We declare that one here, as the 1.0 spec lays
 * it out, when the header lacks it. A consumer asks for it by passing
 * max_version >= (1, 0) to __dlpack__; torch 1.13 and numpy 1.24 pass no
 * max_version and get "dltensor".
 *
 * Each capsule holds its own reference to the C tensor. The deleter drops
 * it; it touches no Python object, so consumers may call it from any thread
 * without the GIL. A capsule nobody consumed is deleted with itself. */
#include "sluice_py.h"

#include <stdlib.h>
#include <string.h>

#include <dlpack/dlpack.h>

#ifndef DLPACK_MAJOR_VERSION /* before DLPack 1.0 */
typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

#define DLPACK_FLAG_BITMASK_READ_ONLY (UINT64_C(1) << 0)
#define DLPACK_FLAG_BITMASK_IS_COPIED (UINT64_C(1) << 1)

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;
#endif

/* One allocation per capsule: both managed structs (one is used), the shape
 * DLPack points at, and the tensor reference. */
typedef struct capsule_ctx {
    DLManagedTensor plain;
    DLManagedTensorVersioned versioned;
    int64_t shape[SL_MAX_DIMS];
    sl_tensor *t;
} capsule_ctx;

static void delete_plain(DLManagedTensor *m)
{
    capsule_ctx *c = m->manager_ctx;
    sl_tensor_release(c->t);
    free(c);
}

static void delete_versioned(DLManagedTensorVersioned *m)
{
    capsule_ctx *c = m->manager_ctx;
    sl_tensor_release(c->t);
    free(c);
}

/* The capsule's destructor: if no consumer took the tensor (the capsule
 * still has its original name), nobody else will delete it. */
static void capsule_plain_destructor(PyObject *cap)
{
    if (PyCapsule_IsValid(cap, "dltensor")) {
        DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
        if (m && m->deleter)
            m->deleter(m);
    }
}

static void capsule_versioned_destructor(PyObject *cap)
{
    if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        DLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
        if (m && m->deleter)
            m->deleter(m);
    }
}

static DLDataType dl_dtype(sl_dtype dtype)
{
    DLDataType d = {.code = kDLUInt, .bits = 8, .lanes = 1};
    switch (dtype) {
    case SL_UINT8: d.code = kDLUInt; d.bits = 8; break;
    case SL_INT32: d.code = kDLInt; d.bits = 32; break;
    case SL_UINT32: d.code = kDLUInt; d.bits = 32; break;
    case SL_INT64: d.code = kDLInt; d.bits = 64; break;
    case SL_FLOAT32: d.code = kDLFloat; d.bits = 32; break;
    case SL_FLOAT64: d.code = kDLFloat; d.bits = 64; break;
    default: break;
    }
    return d;
}

PyObject *slpy_dlpack_capsule(sl_tensor *t, int readonly, int versioned, int copy)
{
    capsule_ctx *c;
    DLTensor *dl;
    sl_tensor *held;
    PyObject *cap;
    int copied = 0;
    if (copy == 1 || (copy == -1 && readonly && !versioned)) {
        /* A tensor of our own, which the consumer may write. */
        int rc = sl_tensor_new(&held, sl_tensor_dtype(t), sl_tensor_ndim(t), sl_tensor_shape(t));
        if (rc != SL_OK)
            return slpy_raise(rc, "__dlpack__: cannot allocate the copy");
        memcpy(sl_tensor_data(held), sl_tensor_data(t), sl_tensor_nbytes(t));
        copied = 1;
    } else if (readonly && !versioned) {
        PyErr_SetString(PyExc_BufferError,
                        "__dlpack__(copy=False): the tensor is read-only (shared with the "
                        "dataset's source) and an unversioned DLPack capsule cannot say so; "
                        "ask for max_version=(1, 0) or allow a copy");
        return NULL;
    } else {
        held = sl_tensor_retain(t);
    }
    c = calloc(1, sizeof *c);
    if (!c) {
        sl_tensor_release(held);
        return PyErr_NoMemory();
    }
    c->t = held;
    memcpy(c->shape, sl_tensor_shape(held), (size_t)sl_tensor_ndim(held) * sizeof c->shape[0]);
    dl = versioned ? &c->versioned.dl_tensor : &c->plain.dl_tensor;
    dl->data = sl_tensor_data(held);
    dl->device.device_type = kDLCPU;
    dl->device.device_id = 0;
    dl->ndim = sl_tensor_ndim(held);
    dl->dtype = dl_dtype(sl_tensor_dtype(held));
    dl->shape = c->shape;
    dl->strides = NULL; /* compact, row-major */
    dl->byte_offset = 0;
    if (versioned) {
        c->versioned.version.major = 1;
        c->versioned.version.minor = 0;
        c->versioned.manager_ctx = c;
        c->versioned.deleter = delete_versioned;
        c->versioned.flags = (readonly && !copied ? DLPACK_FLAG_BITMASK_READ_ONLY : 0) |
                             (copied ? DLPACK_FLAG_BITMASK_IS_COPIED : 0);
        cap = PyCapsule_New(&c->versioned, "dltensor_versioned", capsule_versioned_destructor);
    } else {
        c->plain.manager_ctx = c;
        c->plain.deleter = delete_plain;
        cap = PyCapsule_New(&c->plain, "dltensor", capsule_plain_destructor);
    }
    if (!cap) {
        sl_tensor_release(held);
        free(c);
    }
    return cap;
}

/* max_version: None or a (major, minor) tuple. Sets *versioned. */
static int parse_max_version(PyObject *mv, int *versioned)
{
    long major;
    *versioned = 0;
    if (mv == Py_None)
        return 0;
    if (!PyTuple_Check(mv) || PyTuple_GET_SIZE(mv) != 2) {
        PyErr_SetString(PyExc_TypeError, "__dlpack__: max_version must be a (major, minor) tuple");
        return -1;
    }
    major = PyLong_AsLong(PyTuple_GET_ITEM(mv, 0));
    if (major == -1 && PyErr_Occurred())
        return -1;
    *versioned = major >= 1;
    return 0;
}

PyObject *slpy_tensor_dlpack(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    slpy_tensor *st = (slpy_tensor *)self;
    int versioned, want_copy = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", kwlist, &stream,
                                     &max_version, &dl_device, &copy))
        return NULL;
    /* For CPU memory the array API wants no stream; -1 ("do not
     * synchronise") is harmless too. */
    if (stream != Py_None) {
        long s = PyLong_Check(stream) ? PyLong_AsLong(stream) : 0;
        if (s != -1) {
            PyErr_Clear();
            PyErr_SetString(PyExc_BufferError,
                            "__dlpack__: stream must be None for a CPU tensor");
            return NULL;
        }
    }
    if (parse_max_version(max_version, &versioned) < 0)
        return NULL;
    if (dl_device != Py_None) {
        int type, id;
        if (!PyArg_ParseTuple(dl_device, "ii:dl_device", &type, &id))
            return NULL;
        if (type != kDLCPU || id != 0) {
            PyErr_Format(PyExc_BufferError,
                         "__dlpack__: the tensor is on (kDLCPU, 0); device (%d, %d) was asked "
                         "for",
                         type, id);
            return NULL;
        }
    }
    if (copy != Py_None) {
        int truth = PyObject_IsTrue(copy);
        if (truth < 0)
            return NULL;
        want_copy = truth;
    }
    return slpy_dlpack_capsule(st->t, st->readonly, versioned, want_copy);
}

PyObject *slpy_tensor_dlpack_device(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return Py_BuildValue("(ii)", (int)kDLCPU, 0);
}
