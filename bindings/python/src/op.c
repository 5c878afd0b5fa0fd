/* op.c: operators. sluice._sluice.Op holds one C op; the op_* functions
 * make them (sluice.dataset.vision and .transforms give them MindSpore's
 * names and arguments). op_custom wraps a Python callable in a custom op
 * (sluice/op.h): the map workers call it from their threads, taking the
 * GIL only for the call, so it is the slow path, and it runs one sample at
 * a time whatever the number of workers.
 *
 * The C constructors say which argument they refuse (their err buffer,
 * "resize: height and width must be ..."): that message is the ValueError's,
 * with the Python class's name in place of the C op's ("Resize: ..."). */
#include "sluice_py.h"

#include <stdio.h>
#include <string.h>

static PyObject *wrap_op(sl_op *op)
{
    slpy_op *self = PyObject_New(slpy_op, &slpy_op_type);
    if (!self) {
        sl_op_release(op);
        return NULL;
    }
    self->op = op;
    return (PyObject *)self;
}

/* The Op for a constructor's result, or its error (a ValueError for
 * SL_EINVAL): the constructor's message err, named after the class cls. */
static PyObject *made(int rc, sl_op *op, const char *cls, const char *err)
{
    char msg[512];
    const char *rest;
    if (rc == SL_OK)
        return wrap_op(op);
    rest = strstr(err, ": ");
    snprintf(msg, sizeof msg, "%s: %s", cls, rest ? rest + 2 : err[0] ? err : sl_strerror(rc));
    return slpy_raise(rc, msg);
}

static PyObject *op_decode(PyObject *self, PyObject *args)
{
    int rgb = 1;
    unsigned long long max_pixels = 0;
    sl_op *op;
    char err[256] = "";
    int rc;
    (void)self;
    if (!PyArg_ParseTuple(args, "|pK:op_decode", &rgb, &max_pixels))
        return NULL;
    /* 0: the C default (SL_DECODE_MAX_PIXELS_DEFAULT). */
    rc = max_pixels ? sl_op_decode_new_limited(&op, rgb, max_pixels, err, sizeof err)
                    : sl_op_decode_new(&op, rgb, err, sizeof err);
    return made(rc, op, "Decode", err);
}

static PyObject *op_resize(PyObject *self, PyObject *args)
{
    long long h, w;
    int interp;
    sl_op *op;
    char err[256] = "";
    int rc;
    (void)self;
    if (!PyArg_ParseTuple(args, "LLi:op_resize", &h, &w, &interp))
        return NULL;
    if (interp != SL_INTER_LINEAR && interp != SL_INTER_NEAREST && interp != SL_INTER_CUBIC) {
        PyErr_Format(PyExc_ValueError,
                     "Resize: interpolation must be Inter.LINEAR, Inter.NEAREST or "
                     "Inter.BICUBIC, got %d", interp);
        return NULL;
    }
    rc = sl_op_resize_new(&op, h, w, (sl_interp)interp, err, sizeof err);
    return made(rc, op, "Resize", err);
}

static PyObject *op_rescale(PyObject *self, PyObject *args)
{
    double rescale, shift;
    sl_op *op;
    char err[256] = "";
    int rc;
    (void)self;
    if (!PyArg_ParseTuple(args, "dd:op_rescale", &rescale, &shift))
        return NULL;
    rc = sl_op_rescale_new(&op, rescale, shift, err, sizeof err);
    return made(rc, op, "Rescale", err);
}

/* A sequence of numbers into doubles; -1 with an exception otherwise. */
static Py_ssize_t doubles(PyObject *seq, const char *what, double *out, Py_ssize_t cap)
{
    PyObject *fast = PySequence_Fast(seq, what);
    Py_ssize_t n;
    if (!fast)
        return -1;
    n = PySequence_Fast_GET_SIZE(fast);
    if (n < 1 || n > cap) {
        PyErr_Format(PyExc_ValueError, "%s must have 1 to %zd values, got %zd", what, cap, n);
        Py_DECREF(fast);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(fast, i));
        if (out[i] == -1.0 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
    }
    Py_DECREF(fast);
    return n;
}

#define NORMALIZE_MAX_CHANNELS 64

static PyObject *op_normalize(PyObject *self, PyObject *args)
{
    PyObject *mean_o, *std_o;
    double mean[NORMALIZE_MAX_CHANNELS], std[NORMALIZE_MAX_CHANNELS];
    Py_ssize_t nm, ns;
    sl_op *op;
    char err[256] = "";
    int rc;
    (void)self;
    if (!PyArg_ParseTuple(args, "OO:op_normalize", &mean_o, &std_o))
        return NULL;
    if ((nm = doubles(mean_o, "Normalize: mean", mean, NORMALIZE_MAX_CHANNELS)) < 0 ||
        (ns = doubles(std_o, "Normalize: std", std, NORMALIZE_MAX_CHANNELS)) < 0)
        return NULL;
    if (nm != ns) {
        PyErr_Format(PyExc_ValueError,
                     "Normalize: mean and std must have as many values (one per channel), got "
                     "%zd and %zd",
                     nm, ns);
        return NULL;
    }
    rc = sl_op_normalize_new(&op, mean, std, (int)nm, err, sizeof err);
    return made(rc, op, "Normalize", err);
}

static PyObject *op_hwc2chw(PyObject *self, PyObject *unused)
{
    sl_op *op;
    char err[256] = "";
    int rc;
    (void)self, (void)unused;
    rc = sl_op_hwc2chw_new(&op, err, sizeof err);
    return made(rc, op, "HWC2CHW", err);
}

static PyObject *op_type_cast(PyObject *self, PyObject *arg)
{
    sl_dtype dtype;
    sl_op *op;
    char err[256] = "";
    int rc;
    (void)self;
    if (slpy_parse_dtype(arg, &dtype) < 0)
        return NULL;
    rc = sl_op_type_cast_new(&op, dtype, err, sizeof err);
    return made(rc, op, "TypeCast", err);
}

static PyObject *op_random_crop(PyObject *self, PyObject *args)
{
    long long h, w, pad;
    sl_op *op;
    char err[256] = "";
    int rc;
    (void)self;
    if (!PyArg_ParseTuple(args, "LLL:op_random_crop", &h, &w, &pad))
        return NULL;
    rc = sl_op_random_crop_new(&op, h, w, pad, err, sizeof err);
    return made(rc, op, "RandomCrop", err);
}

/* RandomHorizontalFlip (vertical 0) or RandomVerticalFlip (1) of prob. */
static PyObject *random_flip(PyObject *args, int vertical)
{
    double p;
    sl_op *op;
    char err[256] = "";
    int rc;
    if (!PyArg_ParseTuple(args, vertical ? "d:op_random_vertical_flip"
                                         : "d:op_random_horizontal_flip", &p))
        return NULL;
    rc = vertical ? sl_op_random_vertical_flip_new(&op, p, err, sizeof err)
                  : sl_op_random_horizontal_flip_new(&op, p, err, sizeof err);
    return made(rc, op, vertical ? "RandomVerticalFlip" : "RandomHorizontalFlip", err);
}

static PyObject *op_random_horizontal_flip(PyObject *self, PyObject *args)
{
    (void)self;
    return random_flip(args, 0);
}

static PyObject *op_random_vertical_flip(PyObject *self, PyObject *args)
{
    (void)self;
    return random_flip(args, 1);
}

static PyObject *op_random_resized_crop(PyObject *self, PyObject *args)
{
    long long h, w;
    double s0, s1, r0, r1;
    int interp, attempts;
    sl_op *op;
    char err[256] = "";
    int rc;
    (void)self;
    if (!PyArg_ParseTuple(args, "LLddddii:op_random_resized_crop", &h, &w, &s0, &s1, &r0, &r1,
                          &interp, &attempts))
        return NULL;
    rc = sl_op_random_resized_crop_new(&op, h, w, s0, s1, r0, r1, (sl_interp)interp, attempts,
                                       err, sizeof err);
    return made(rc, op, "RandomResizedCrop", err);
}

static PyObject *op_random_resized_crop_box(PyObject *self, PyObject *args)
{
    PyObject *obj;
    long long h, w;
    unsigned long long seed;
    int64_t box[4];
    char err[256] = "";
    int rc;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!LLK:op_random_resized_crop_box", &slpy_op_type, &obj, &h, &w,
                          &seed))
        return NULL;
    rc = sl_op_random_resized_crop_box(((slpy_op *)obj)->op, h, w, seed, box, err, sizeof err);
    if (rc != SL_OK)
        return made(rc, NULL, "RandomResizedCrop", err);
    return Py_BuildValue("(LLLL)", (long long)box[0], (long long)box[1], (long long)box[2],
                         (long long)box[3]);
}

static PyObject *op_center_crop(PyObject *self, PyObject *args)
{
    long long h, w;
    sl_op *op;
    char err[256] = "";
    int rc;
    (void)self;
    if (!PyArg_ParseTuple(args, "LL:op_center_crop", &h, &w))
        return NULL;
    rc = sl_op_center_crop_new(&op, h, w, err, sizeof err);
    return made(rc, op, "CenterCrop", err);
}

static PyObject *op_resize_shorter_side(PyObject *self, PyObject *args)
{
    long long size;
    int interp;
    sl_op *op;
    char err[256] = "";
    int rc;
    (void)self;
    if (!PyArg_ParseTuple(args, "Li:op_resize_shorter_side", &size, &interp))
        return NULL;
    rc = sl_op_resize_shorter_side_new(&op, size, (sl_interp)interp, err, sizeof err);
    return made(rc, op, "Resize", err);
}

static PyObject *op_random_color_adjust(PyObject *self, PyObject *args)
{
    double b[2], c[2], s[2], h[2];
    sl_op *op;
    char err[256] = "";
    int rc;
    (void)self;
    if (!PyArg_ParseTuple(args, "(dd)(dd)(dd)(dd):op_random_color_adjust", &b[0], &b[1], &c[0],
                          &c[1], &s[0], &s[1], &h[0], &h[1]))
        return NULL;
    rc = sl_op_random_color_adjust_new(&op, b, c, s, h, err, sizeof err);
    return made(rc, op, "RandomColorAdjust", err);
}

static PyObject *op_one_hot(PyObject *self, PyObject *args)
{
    long long n;
    sl_op *op;
    char err[256] = "";
    int rc;
    (void)self;
    if (!PyArg_ParseTuple(args, "L:op_one_hot", &n))
        return NULL;
    rc = sl_op_one_hot_new(&op, n, err, sizeof err);
    return made(rc, op, "OneHot", err);
}

/* --- Python callables ---------------------------------------------------------- */

void slpy_exception_text(char *buf, size_t len)
{
    PyObject *type, *value, *tb, *str = NULL;
    const char *name = "exception", *text = NULL;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (type && PyType_Check(type))
        name = ((PyTypeObject *)type)->tp_name;
    if (value)
        str = PyObject_Str(value);
    if (str)
        text = PyUnicode_AsUTF8(str);
    if (text && text[0])
        snprintf(buf, len, "%s: %s", name, text);
    else
        snprintf(buf, len, "%s", name);
    Py_XDECREF(str);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    PyErr_Clear();
}

int slpy_interpreter_finalizing(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing();
#else
    return _Py_IsFinalizing();
#endif
}

/* The custom op's function: calls the Python callable (user) with the
 * input as a read-only Tensor and copies what it returns (a numpy array
 * or any C-contiguous buffer; a Tensor is taken as it is). */
static int pyfunc_call(void *user, const sl_tensor *in, sl_tensor **out, uint64_t seed,
                       char *errbuf, size_t errlen)
{
    PyGILState_STATE gil;
    PyObject *arg, *res;
    int rc = SL_OK;
    (void)seed;
    *out = NULL;
    if (!Py_IsInitialized() || slpy_interpreter_finalizing()) {
        snprintf(errbuf, errlen, "the Python interpreter is shutting down");
        return SL_ECANCELED;
    }
    gil = PyGILState_Ensure();
    arg = slpy_tensor_wrap(sl_tensor_retain((sl_tensor *)in));
    res = arg ? PyObject_CallOneArg((PyObject *)user, arg) : NULL;
    Py_XDECREF(arg);
    if (!res) {
        /* A MemoryError fails the pipeline even when bad samples are
         * skipped or replaced; any other exception is the sample's. */
        rc = PyErr_ExceptionMatches(PyExc_MemoryError) ? SL_ENOMEM : SL_EINVAL;
        slpy_exception_text(errbuf, errlen);
    } else if (PyObject_TypeCheck(res, &slpy_tensor_type)) {
        *out = sl_tensor_retain(((slpy_tensor *)res)->t);
    } else if (slpy_tensor_from_buffer(res, out, errbuf, errlen) < 0) {
        rc = SL_EINVAL;
    }
    Py_XDECREF(res);
    PyGILState_Release(gil);
    return rc;
}

void slpy_release_object(void *obj)
{
    PyGILState_STATE gil;
    /* After the interpreter is gone there is nothing to give back. */
    if (!Py_IsInitialized())
        return;
    gil = PyGILState_Ensure();
    Py_DECREF((PyObject *)obj);
    PyGILState_Release(gil);
}

static PyObject *op_custom(PyObject *self, PyObject *args)
{
    PyObject *fn;
    const char *name;
    sl_op_custom_options o;
    sl_op *op;
    char err[512];
    int rc;
    (void)self;
    if (!PyArg_ParseTuple(args, "Os:op_custom", &fn, &name))
        return NULL;
    if (!PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "an operation must be a sluice op or a callable, got %.100s",
                     Py_TYPE(fn)->tp_name);
        return NULL;
    }
    sl_op_custom_options_init(&o);
    o.name = name;
    o.fn = pyfunc_call;
    o.destroy = slpy_release_object;
    o.user = fn;
    rc = sl_op_custom_new(&op, &o, err, sizeof err);
    if (rc != SL_OK)
        return slpy_raise(rc, err);
    Py_INCREF(fn); /* the op's, given back by slpy_release_object */
    return wrap_op(op);
}

/* --- the Op type ----------------------------------------------------------------- */

static void op_dealloc(PyObject *o)
{
    sl_op *op = ((slpy_op *)o)->op;
    PyObject_Free(o);
    sl_op_release(op);
}

static PyObject *op_name(PyObject *o, void *closure)
{
    (void)closure;
    return PyUnicode_FromString(sl_op_name(((slpy_op *)o)->op));
}

static PyObject *op_repr(PyObject *o)
{
    return PyUnicode_FromFormat("<sluice op %s>", sl_op_name(((slpy_op *)o)->op));
}

/* apply(array, seed=0) -> Tensor: the op on one input, now (eager use). */
static PyObject *op_apply(PyObject *o, PyObject *args)
{
    sl_op *op = ((slpy_op *)o)->op;
    PyObject *in_o;
    unsigned long long seed = 0;
    sl_tensor *in, *out = NULL;
    char err[512] = "";
    int rc;
    PyThreadState *ts;
    if (!PyArg_ParseTuple(args, "O|K:apply", &in_o, &seed))
        return NULL;
    if (PyObject_TypeCheck(in_o, &slpy_tensor_type)) {
        in = sl_tensor_retain(((slpy_tensor *)in_o)->t);
    } else if (slpy_tensor_from_buffer(in_o, &in, err, sizeof err) < 0) {
        PyErr_Format(PyExc_TypeError, "%s: the input %s", sl_op_name(op), err);
        return NULL;
    }
    ts = PyEval_SaveThread();
    rc = sl_op_apply(op, in, &out, seed, err, sizeof err);
    sl_tensor_release(in);
    PyEval_RestoreThread(ts);
    /* Bad data here is an argument (bytes that are not a JPEG), not a file. */
    if (rc != SL_OK)
        return slpy_raise(rc == SL_EFORMAT ? SL_EINVAL : rc, err);
    return slpy_tensor_wrap(out);
}

static PyMethodDef op_methods[] = {
    {"apply", op_apply, METH_VARARGS,
     "apply(array, seed=0) -> Tensor: the op applied to one input now; random ops draw\n"
     "from a generator seeded by seed."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef op_getset[] = {
    {"name", op_name, NULL, "The op's name: 'resize', 'rescale', ... (a callable's own name).",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject slpy_op_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sluice._sluice.Op",
    .tp_basicsize = sizeof(slpy_op),
    .tp_dealloc = op_dealloc,
    .tp_repr = op_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One C operator, made by the op_* functions; immutable and shareable.",
    .tp_methods = op_methods,
    .tp_getset = op_getset,
};

PyMethodDef slpy_op_functions[] = {
    {"op_decode", op_decode, METH_VARARGS, "op_decode(rgb=True, max_pixels=0) -> Op"},
    {"op_resize", op_resize, METH_VARARGS, "op_resize(height, width, interp) -> Op"},
    {"op_rescale", op_rescale, METH_VARARGS, "op_rescale(rescale, shift) -> Op"},
    {"op_normalize", op_normalize, METH_VARARGS, "op_normalize(mean, std) -> Op"},
    {"op_hwc2chw", op_hwc2chw, METH_NOARGS, "op_hwc2chw() -> Op"},
    {"op_type_cast", op_type_cast, METH_O, "op_type_cast(dtype_name) -> Op"},
    {"op_random_crop", op_random_crop, METH_VARARGS,
     "op_random_crop(height, width, padding) -> Op"},
    {"op_random_horizontal_flip", op_random_horizontal_flip, METH_VARARGS,
     "op_random_horizontal_flip(prob) -> Op"},
    {"op_random_vertical_flip", op_random_vertical_flip, METH_VARARGS,
     "op_random_vertical_flip(prob) -> Op"},
    {"op_random_resized_crop", op_random_resized_crop, METH_VARARGS,
     "op_random_resized_crop(height, width, scale_min, scale_max, ratio_min, ratio_max, interp, "
     "max_attempts) -> Op"},
    {"op_random_resized_crop_box", op_random_resized_crop_box, METH_VARARGS,
     "op_random_resized_crop_box(op, height, width, seed) -> (top, left, height, width)"},
    {"op_center_crop", op_center_crop, METH_VARARGS, "op_center_crop(height, width) -> Op"},
    {"op_resize_shorter_side", op_resize_shorter_side, METH_VARARGS,
     "op_resize_shorter_side(size, interp) -> Op"},
    {"op_random_color_adjust", op_random_color_adjust, METH_VARARGS,
     "op_random_color_adjust((b0, b1), (c0, c1), (s0, s1), (h0, h1)) -> Op"},
    {"op_one_hot", op_one_hot, METH_VARARGS, "op_one_hot(num_classes) -> Op"},
    {"op_custom", op_custom, METH_VARARGS,
     "op_custom(callable, name) -> Op: calls callable(Tensor) in the map workers, with the GIL"},
    {NULL, NULL, 0, NULL},
};
