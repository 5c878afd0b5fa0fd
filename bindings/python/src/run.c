/* run.c: running a model's long C calls (train, eval, a sink) from Python,
 * and the callbacks they call.
 *
 * A call runs on a thread of its own while the Python thread that made it
 * waits without the GIL, so other Python threads run meanwhile. The
 * waiting thread wakes every SIGNAL_CHECK_MS to run Python's signal
 * handlers (only a waiting thread can: the C call never returns to the
 * interpreter): when one raises (Ctrl-C), it stops the model
 * (sl_model_stop), waits for the call to end and raises. The call's
 * thread holds a Python thread state from start to end, so the callbacks
 * written in Python, which the C library calls from that thread, take the
 * GIL for their call only. */
#include "sluice_py.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#define SIGNAL_CHECK_MS 100

/* --- the model's lock ---------------------------------------------------------------- */

static int in_model_call(slpy_model *self)
{
    return atomic_load(&self->job_thread) == PyThread_get_thread_ident();
}

int slpy_model_lock(slpy_model *self, int in_callback, const char *what)
{
    if (in_model_call(self)) {
        if (in_callback)
            return 0;
        PyErr_Format(PyExc_RuntimeError,
                     "%s: not from a callback of the model's own training (the model is busy "
                     "with it; model.eval may be called there, or make another Model over "
                     "the network to train)",
                     what);
        return -1;
    }
    for (;;) {
        PyLockStatus got;
        Py_BEGIN_ALLOW_THREADS
        got = PyThread_acquire_lock_timed(self->lock, SIGNAL_CHECK_MS * 1000, 0);
        Py_END_ALLOW_THREADS
        if (got == PY_LOCK_ACQUIRED)
            return 1;
        if (PyErr_CheckSignals() < 0)
            return -1;
    }
}

void slpy_model_unlock(slpy_model *self, int locked)
{
    if (locked > 0)
        PyThread_release_lock(self->lock);
}

/* --- running a call -------------------------------------------------------------------- */

typedef struct job {
    slpy_model *self;
    slpy_call *call;
    pthread_mutex_t mu;
    pthread_cond_t cv;    /* signalled when done is set */
    int done;
} job;

static void *job_main(void *arg)
{
    job *j = arg;
    PyGILState_STATE gil = PyGILState_Ensure();
    PyThreadState *ts = PyEval_SaveThread();
    atomic_store(&j->self->job_thread, PyThread_get_thread_ident());
    j->call->rc = j->call->fn(j->call);
    atomic_store(&j->self->job_thread, 0);
    PyEval_RestoreThread(ts);
    PyGILState_Release(gil);
    pthread_mutex_lock(&j->mu);
    j->done = 1;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

/* Waits for j without the GIL (ts is the caller's saved thread state),
 * running signal handlers every SIGNAL_CHECK_MS until one raises. */
static PyThreadState *wait_job(job *j, PyThreadState *ts)
{
    pthread_mutex_lock(&j->mu);
    while (!j->done) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += SIGNAL_CHECK_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        if (pthread_cond_timedwait(&j->cv, &j->mu, &until) != ETIMEDOUT || j->done ||
            j->call->interrupted)
            continue;
        pthread_mutex_unlock(&j->mu);
        PyEval_RestoreThread(ts);
        if (PyErr_CheckSignals() < 0) {
            /* The exception stays set for the caller; the call ends soon. */
            j->call->interrupted = 1;
            sl_model_stop(j->call->m);
        }
        ts = PyEval_SaveThread();
        pthread_mutex_lock(&j->mu);
    }
    pthread_mutex_unlock(&j->mu);
    return ts;
}

int slpy_model_run(slpy_model *self, slpy_call *call)
{
    pthread_condattr_t attr;
    pthread_t thread;
    PyThreadState *ts;
    job j;
    int locked, err;

    call->m = self->m;
    call->rc = SL_OK;
    call->msg[0] = '\0';
    call->interrupted = 0;
    if (call->in_training && in_model_call(self)) {
        /* From a callback of the model's training, on its thread: the
         * training waits for the callback, so the call runs here. The
         * thread that waits for the training runs the signal handlers;
         * Ctrl-C stops the model, which ends this call too. */
        Py_BEGIN_ALLOW_THREADS
        call->rc = call->fn(call);
        Py_END_ALLOW_THREADS
        return 0;
    }
    locked = slpy_model_lock(self, 0, call->what);
    if (locked < 0)
        return -1;
    memset(&j, 0, sizeof j);
    j.self = self;
    j.call = call;
    if (pthread_mutex_init(&j.mu, NULL) != 0) {
        slpy_model_unlock(self, locked);
        PyErr_NoMemory();
        return -1;
    }
    if (pthread_condattr_init(&attr) != 0 ||
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_init(&j.cv, &attr) != 0) {
        pthread_mutex_destroy(&j.mu);
        slpy_model_unlock(self, locked);
        PyErr_NoMemory();
        return -1;
    }
    pthread_condattr_destroy(&attr);
    ts = PyEval_SaveThread();
    err = pthread_create(&thread, NULL, job_main, &j);
    if (err == 0) {
        /* Every thread sluice starts has a name beginning "sl-" (the
         * tests count them so, apart from the interpreter's). */
        pthread_setname_np(thread, "sl-call");
        ts = wait_job(&j, ts);
        pthread_join(thread, NULL);
    }
    slpy_model_unlock(self, locked);
    PyEval_RestoreThread(ts);
    pthread_cond_destroy(&j.cv);
    pthread_mutex_destroy(&j.mu);
    if (err != 0) {
        PyErr_Format(PyExc_RuntimeError, "cannot start a thread for the call: %s",
                     strerror(err));
        return -1;
    }
    if (call->interrupted) {
        Py_CLEAR(call->exc_type);
        Py_CLEAR(call->exc_value);
        Py_CLEAR(call->exc_tb);
        return -1;
    }
    if (call->exc_type) {
        PyErr_Restore(call->exc_type, call->exc_value, call->exc_tb);
        call->exc_type = call->exc_value = call->exc_tb = NULL;
        return -1;
    }
    return 0;
}

/* --- callbacks -------------------------------------------------------------------------- */

/* Keeps the pending exception in call (the first one only) and clears it.
 * With the GIL. */
static void keep_exception(slpy_call *call)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (call->exc_type) {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        return;
    }
    call->exc_type = type;
    call->exc_value = value;
    call->exc_tb = tb;
}

/* A Python callable as a callback (call->hooks holds the reference). */
typedef struct py_hook {
    slpy_call *call;
    PyObject *fn;
} py_hook;

static int run_py_hook(void *self, int hook, const sl_train_info *info)
{
    py_hook *h = self;
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *res = PyObject_CallFunction(
        h->fn, "iLLLLLddd", hook, (long long)info->epoch, (long long)info->epoch_num,
        (long long)info->global_step, (long long)info->step_in_epoch,
        (long long)info->steps_per_epoch, (double)info->loss, info->step_ms, info->epoch_ms);
    int rc = 0;
    if (!res) {
        keep_exception(h->call);
        sl_model_set_error(info->model, "a Python callback raised an exception");
        rc = SL_ECANCELED;
    } else {
        rc = PyObject_IsTrue(res);
        if (rc < 0) {
            keep_exception(h->call);
            sl_model_set_error(info->model, "a Python callback's result has no truth value");
            rc = SL_ECANCELED;
        }
        Py_DECREF(res);
    }
    PyGILState_Release(gil);
    return rc;
}

static int hook_begin(void *self, const sl_train_info *info)
{
    return run_py_hook(self, 0, info);
}

static int hook_epoch_begin(void *self, const sl_train_info *info)
{
    return run_py_hook(self, 1, info);
}

static int hook_step_end(void *self, const sl_train_info *info)
{
    return run_py_hook(self, 2, info);
}

static int hook_epoch_end(void *self, const sl_train_info *info)
{
    return run_py_hook(self, 3, info);
}

static int hook_end(void *self, const sl_train_info *info)
{
    return run_py_hook(self, 4, info);
}

static void free_py_hook(void *self)
{
    PyMem_RawFree(self);
}

/* The built-in monitors' lines: written to sys.stdout (and flushed, as
 * MindSpore's print(..., flush=True)). An exception stops training. */
static void emit_line(void *user, const char *line)
{
    slpy_call *call = user;
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *out = PySys_GetObject("stdout"), *res = NULL; /* borrowed */
    if (out && out != Py_None) {
        if (PyFile_WriteString(line, out) == 0 && PyFile_WriteString("\n", out) == 0)
            res = PyObject_CallMethod(out, "flush", NULL);
        if (!res) {
            keep_exception(call);
            sl_model_stop(call->m);
        }
        Py_XDECREF(res);
    }
    PyGILState_Release(gil);
}

/* One spec into cb; -1 with an exception. */
static int make_one(slpy_call *call, PyObject *spec, sl_callback *cb)
{
    const char *kind;
    int rc;
    if (PyCallable_Check(spec)) {
        py_hook *h = PyMem_RawCalloc(1, sizeof *h);
        if (!h) {
            PyErr_NoMemory();
            return -1;
        }
        h->call = call;
        h->fn = spec; /* call->hooks holds the reference */
        cb->self = h;
        cb->begin = hook_begin;
        cb->epoch_begin = hook_epoch_begin;
        cb->step_end = hook_step_end;
        cb->epoch_end = hook_epoch_end;
        cb->end = hook_end;
        cb->free = free_py_hook;
        return 0;
    }
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) < 1 ||
        !(kind = PyUnicode_AsUTF8(PyTuple_GET_ITEM(spec, 0)))) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "callbacks: %.100s is not a callback",
                         Py_TYPE(spec)->tp_name);
        return -1;
    }
    if (strcmp(kind, "loss_monitor") == 0) {
        long long every;
        int at_end;
        if (!PyArg_ParseTuple(spec, "sLp:loss_monitor", &kind, &every, &at_end))
            return -1;
        rc = sl_callback_loss_monitor(cb, every, at_end, emit_line, call);
    } else if (strcmp(kind, "time_monitor") == 0) {
        rc = sl_callback_time_monitor(cb, emit_line, call);
    } else if (strcmp(kind, "checkpoint") == 0) {
        PyObject *dir = NULL;
        const char *prefix;
        long long steps;
        int keep;
        if (!PyArg_ParseTuple(spec, "sO&sLi:checkpoint", &kind, PyUnicode_FSConverter, &dir,
                              &prefix, &steps, &keep))
            return -1;
        rc = sl_callback_checkpoint(cb, PyBytes_AS_STRING(dir), prefix, steps, keep);
        Py_DECREF(dir);
    } else {
        PyErr_Format(PyExc_ValueError, "callbacks: unknown built-in callback '%s'", kind);
        return -1;
    }
    if (rc < 0) {
        slpy_raise(rc, "callbacks: bad arguments for a built-in callback");
        return -1;
    }
    return 0;
}

int slpy_callbacks_make(slpy_call *call, PyObject *specs)
{
    PyObject *fast = PySequence_Fast(specs, "callbacks must be a list");
    Py_ssize_t n;
    if (!fast)
        return -1;
    n = PySequence_Fast_GET_SIZE(fast);
    call->ncbs = 0;
    call->cbs = PyMem_Calloc((size_t)n + 1, sizeof *call->cbs);
    call->list = PyMem_Calloc((size_t)n + 1, sizeof *call->list);
    call->hooks = PyMem_Calloc((size_t)n + 1, sizeof *call->hooks);
    if (!call->cbs || !call->list || !call->hooks) {
        Py_DECREF(fast);
        slpy_callbacks_free(call);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *spec = PySequence_Fast_GET_ITEM(fast, i);
        if (make_one(call, spec, &call->cbs[i]) < 0) {
            Py_DECREF(fast);
            slpy_callbacks_free(call);
            return -1;
        }
        if (PyCallable_Check(spec))
            call->hooks[i] = Py_NewRef(spec);
        call->list[i] = &call->cbs[i];
        call->ncbs++;
    }
    Py_DECREF(fast);
    return 0;
}

void slpy_callbacks_free(slpy_call *call)
{
    for (size_t i = 0; i < call->ncbs; i++) {
        sl_callback_release(&call->cbs[i]);
        Py_XDECREF(call->hooks[i]);
    }
    PyMem_Free(call->cbs);
    PyMem_Free(call->list);
    PyMem_Free(call->hooks);
    call->cbs = NULL;
    call->list = NULL;
    call->hooks = NULL;
    call->ncbs = 0;
}
