/* distributed.c: the process's place among the job's ranks
 * (sluice/distributed.h) for sluice.communication: join, rank, size,
 * leave. MPI_Init and MPI_Finalize may wait for the other ranks: they run
 * without the GIL. */
#include "sluice_py.h"

static PyObject *str_or_none(const char *s)
{
    if (!s)
        Py_RETURN_NONE;
    return PyUnicode_FromString(s);
}

static PyObject *py_mpi(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return str_or_none(sl_distributed_mpi());
}

static PyObject *py_why_not(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return str_or_none(sl_distributed_why_not());
}

static PyObject *py_launched(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return PyBool_FromLong(sl_distributed_launched());
}

static PyObject *py_init(PyObject *self, PyObject *unused)
{
    char err[512] = "";
    int rc;
    (void)self, (void)unused;
    Py_BEGIN_ALLOW_THREADS
    rc = sl_distributed_init(err, sizeof err);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        return slpy_raise_runtime(rc, err);
    Py_RETURN_NONE;
}

static PyObject *py_initialized(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return PyBool_FromLong(sl_distributed_initialized());
}

static PyObject *py_rank(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return PyLong_FromLong(sl_distributed_rank());
}

static PyObject *py_size(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return PyLong_FromLong(sl_distributed_size());
}

static PyObject *py_finalize(PyObject *self, PyObject *arg)
{
    int failed = PyObject_IsTrue(arg);
    (void)self;
    if (failed < 0)
        return NULL;
    /* With failed, it may end the job (MPI_Abort) and not return. */
    Py_BEGIN_ALLOW_THREADS
    sl_distributed_finalize(failed);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

PyMethodDef slpy_distributed_functions[] = {
    {"distributed_mpi", py_mpi, METH_NOARGS,
     "distributed_mpi() -> str or None: the MPI sluice was built with."},
    {"distributed_why_not", py_why_not, METH_NOARGS,
     "distributed_why_not() -> str or None: why sluice was built without MPI."},
    {"distributed_launched", py_launched, METH_NOARGS,
     "distributed_launched() -> bool: this process was started by mpirun."},
    {"distributed_init", py_init, METH_NOARGS,
     "distributed_init(): sl_distributed_init (RuntimeError saying why not)."},
    {"distributed_initialized", py_initialized, METH_NOARGS,
     "distributed_initialized() -> bool: joined and not yet left."},
    {"distributed_rank", py_rank, METH_NOARGS, "distributed_rank() -> int (0 before init)."},
    {"distributed_size", py_size, METH_NOARGS, "distributed_size() -> int (1 before init)."},
    {"distributed_finalize", py_finalize, METH_O,
     "distributed_finalize(failed): sl_distributed_finalize; failed ends the job when the\n"
     "other ranks may be waiting for this one."},
    {NULL, NULL, 0, NULL},
};
