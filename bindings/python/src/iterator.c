/* iterator.c: sluice._sluice.Iterator, one running pipeline (sl_iterator).
 *
 * Each __next__ hands out a row (a tuple or a dict of Tensors, or of what
 * `convert` makes of them), and raises StopIteration at the end of each
 * epoch; iterating again continues with the next epoch, as MindSpore's
 * iterators do. Waiting for a row runs without the GIL, so the pipeline's
 * workers (and other Python threads) keep going; a lock lets several
 * Python threads share one iterator, one sl_iterator_next at a time.
 *
 * Stopping: close(), `del`, garbage collection, the end of the data and a
 * pipeline error free the C iterator, which joins every thread. While it
 * waits, the consumer wakes every SIGNAL_CHECK_MS to let Python run its
 * signal handlers: Ctrl-C (KeyboardInterrupt) then stops the pipeline and
 * joins its threads before the exception leaves __next__. */
#include "sluice_py.h"

#include <string.h>

#define SIGNAL_CHECK_MS 100

enum { MODE_TUPLE = 0, MODE_DICT = 1 };

typedef struct slpy_iterator {
    PyObject_HEAD
    sl_iterator *it;           /* NULL once stopped */
    /* `lock` is held around every sl_iterator_next and sl_iterator_free;
     * `state` (held only briefly) guards the pointer against close() in
     * another thread, which interrupts a waiting next before it frees. */
    PyThread_type_lock lock;
    PyThread_type_lock state;
    int mode;
    int ncols;
    int cols[SL_MAX_COLUMNS];  /* which row columns, in which order */
    PyObject *names;           /* tuple of the chosen columns' names (dict keys) */
    PyObject *convert;         /* applied to each Tensor (or capsule), or NULL */
    int convert_capsule;       /* convert takes a DLPack capsule, not a Tensor */
    int64_t num_epochs;
    int64_t epochs_done;
    int in_epoch;              /* a row of the current epoch was handed out */
    int ended;                 /* every epoch delivered, or closed */
    int error_status;          /* sticky pipeline error, 0 if none */
    char *error_msg;
    /* Bad samples dealt with: kept when the pipeline stops, so that they
     * can be read after the last epoch (guarded by `lock`). */
    unsigned long long samples_skipped, samples_replaced;
    /* With autotune: what the tuner said (guarded by `state`: it speaks
     * on the thread in sl_iterator_next, without the GIL). */
    slpy_tune_lines tune;
    PyObject *weakrefs;
} slpy_iterator;

/* sl_iterator_options.autotune_log: keeps the line. */
static void keep_tune_line(void *arg, const char *line)
{
    slpy_iterator *self = arg;
    PyThread_acquire_lock(self->state, WAIT_LOCK);
    slpy_tune_lines_add(&self->tune, line);
    PyThread_release_lock(self->state);
}

/* Takes the C iterator out of self (under `state`, so close() in another
 * thread cannot interrupt what is being freed) and returns it, for
 * sl_iterator_free. Called with `lock` held and without the GIL. */
static sl_iterator *detach_pipeline(slpy_iterator *self)
{
    sl_iterator *it;
    PyThread_acquire_lock(self->state, WAIT_LOCK);
    it = self->it;
    self->it = NULL;
    PyThread_release_lock(self->state);
    if (it) {
        sl_iterator_stats s;
        sl_iterator_get_stats(it, &s);
        self->samples_skipped = s.samples_skipped;
        self->samples_replaced = s.samples_replaced;
    }
    return it;
}

/* Detaches and frees the C iterator: joins every pipeline thread. Called
 * with `lock` held and without the GIL. */
static void stop_pipeline(slpy_iterator *self)
{
    sl_iterator_free(detach_pipeline(self));
}

/* Stops the pipeline from any thread, waking a next() that waits in
 * another thread first. Called with the GIL (and lets go of it). */
static void close_iterator(slpy_iterator *self)
{
    PyThreadState *ts;
    sl_iterator *it;
    self->ended = 1;
    ts = PyEval_SaveThread();
    PyThread_acquire_lock(self->state, WAIT_LOCK);
    if (self->it)
        sl_iterator_interrupt(self->it);
    PyThread_release_lock(self->state);
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    it = detach_pipeline(self);
    PyThread_release_lock(self->lock);
    /* The join waits for the rows being made (a Python map may take long):
     * outside `lock`, or a next() in another thread, between two waits
     * when interrupted, would wait for them too. */
    sl_iterator_free(it);
    PyEval_RestoreThread(ts);
}

/* --- making one --------------------------------------------------------------------- */

PyObject *slpy_iterator_new(slpy_dataset *ds, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"mode",    "columns",         "num_epochs", "convert",
                             "convert_capsule", "autotune", NULL};
    PyObject *columns = Py_None, *convert = Py_None, *fast = NULL;
    long long num_epochs = 1;
    int mode = MODE_TUPLE, convert_capsule = 0, autotune = 0, rc;
    slpy_iterator *self;
    sl_iterator_options o;
    PyThreadState *ts;
    char msg[1024];
    size_t ncols = sl_dataset_num_columns(ds->ds);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|iOLOpp:iterator", kwlist, &mode, &columns,
                                     &num_epochs, &convert, &convert_capsule, &autotune))
        return NULL;
    if (mode != MODE_TUPLE && mode != MODE_DICT)
        return PyErr_Format(PyExc_ValueError, "iterator: unknown mode %d", mode);
    self = PyObject_New(slpy_iterator, &slpy_iterator_type);
    if (!self)
        return NULL;
    self->it = NULL;
    self->lock = PyThread_allocate_lock();
    self->state = PyThread_allocate_lock();
    self->mode = mode;
    self->ncols = 0;
    self->names = NULL;
    self->convert = convert == Py_None ? NULL : Py_NewRef(convert);
    self->convert_capsule = convert_capsule;
    self->num_epochs = num_epochs;
    self->epochs_done = 0;
    self->in_epoch = 0;
    self->ended = 0;
    self->error_status = 0;
    self->error_msg = NULL;
    self->samples_skipped = self->samples_replaced = 0;
    self->tune.n = 0;
    self->weakrefs = NULL;
    if (!self->lock || !self->state) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    /* The columns to hand out: all, or the named ones in the order given. */
    if (columns == Py_None) {
        for (size_t c = 0; c < ncols; c++)
            self->cols[self->ncols++] = (int)c;
    } else {
        if (!(fast = PySequence_Fast(columns, "columns must be a list of column names")))
            goto fail;
        if (PySequence_Fast_GET_SIZE(fast) < 1 || PySequence_Fast_GET_SIZE(fast) > SL_MAX_COLUMNS) {
            PyErr_SetString(PyExc_ValueError, "columns: give 1 or more column names");
            goto fail;
        }
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast); i++) {
            const char *name = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(fast, i));
            int c = name ? sl_dataset_column_index(ds->ds, name) : -1;
            if (!name)
                goto fail;
            if (c < 0) {
                PyErr_Format(PyExc_ValueError, "columns: no column '%s' in this dataset", name);
                goto fail;
            }
            self->cols[self->ncols++] = c;
        }
        Py_CLEAR(fast);
    }
    if (!(self->names = PyTuple_New(self->ncols)))
        goto fail;
    for (int i = 0; i < self->ncols; i++) {
        PyObject *name = PyUnicode_InternFromString(sl_dataset_column_name(ds->ds,
                                                                           (size_t)self->cols[i]));
        if (!name)
            goto fail;
        PyTuple_SET_ITEM(self->names, i, name);
    }
    sl_iterator_options_init(&o);
    o.num_epochs = num_epochs;
    o.timeout_ms = SIGNAL_CHECK_MS;
    if (autotune) {
        o.autotune = 1;
        o.autotune_log = keep_tune_line;
        o.autotune_log_arg = self;
    }
    /* Without the GIL: it starts threads, and a source may read headers. */
    ts = PyEval_SaveThread();
    PyThread_acquire_lock(ds->lock, WAIT_LOCK);
    rc = sl_iterator_new(&self->it, ds->ds, &o);
    if (rc != SL_OK)
        snprintf(msg, sizeof msg, "%s", sl_dataset_last_error(ds->ds));
    PyThread_release_lock(ds->lock);
    PyEval_RestoreThread(ts);
    if (rc != SL_OK) {
        slpy_raise(rc, msg);
        goto fail;
    }
    return (PyObject *)self;
fail:
    Py_XDECREF(fast);
    Py_DECREF(self);
    return NULL;
}

static void iterator_dealloc(PyObject *o)
{
    slpy_iterator *self = (slpy_iterator *)o;
    if (self->weakrefs)
        PyObject_ClearWeakRefs(o);
    if (self->it)
        close_iterator(self);
    if (self->lock)
        PyThread_free_lock(self->lock);
    if (self->state)
        PyThread_free_lock(self->state);
    Py_XDECREF(self->names);
    Py_XDECREF(self->convert);
    PyMem_Free(self->error_msg);
    PyObject_Free(o);
}

/* --- the consumer ----------------------------------------------------------------------- */

/* t's values as a new int64 tensor (NULL when out of memory). */
static sl_tensor *widen_uint32(const sl_tensor *t)
{
    sl_tensor *w;
    const uint32_t *src = sl_tensor_data(t);
    int64_t *dst;
    if (sl_tensor_new(&w, SL_INT64, sl_tensor_ndim(t), sl_tensor_shape(t)) != SL_OK)
        return NULL;
    dst = sl_tensor_data(w);
    for (size_t i = 0; i < sl_tensor_numel(t); i++)
        dst[i] = src[i];
    return w;
}

/* What one column of a row becomes: a Tensor, or convert's result. Steals t. */
static PyObject *column_value(slpy_iterator *self, sl_tensor *t)
{
    PyObject *v, *res;
    if (!self->convert)
        return slpy_tensor_wrap(t);
    if (self->convert_capsule && sl_tensor_dtype(t) == SL_UINT32) {
        /* torch has no uint32 (MNIST's raw labels): int64, its label type. */
        sl_tensor *w = widen_uint32(t);
        sl_tensor_release(t);
        if (!w)
            return PyErr_NoMemory();
        t = w;
    }
    if (self->convert_capsule) {
        v = slpy_dlpack_capsule(t, !sl_tensor_writable(t), 0, -1);
        sl_tensor_release(t);
    } else {
        v = slpy_tensor_wrap(t);
    }
    if (!v)
        return NULL;
    res = PyObject_CallOneArg(self->convert, v);
    Py_DECREF(v);
    return res;
}

/* The Python value of a row; takes the row's references. */
static PyObject *row_value(slpy_iterator *self, sl_row *row)
{
    PyObject *out = self->mode == MODE_DICT ? PyDict_New() : PyTuple_New(self->ncols);
    for (int i = 0; i < self->ncols; i++) {
        sl_tensor *t = row->columns[self->cols[i]];
        PyObject *v;
        row->columns[self->cols[i]] = NULL;
        if (!out) {
            sl_tensor_release(t);
            continue;
        }
        v = column_value(self, t);
        if (!v) {
            Py_CLEAR(out);
            continue;
        }
        if (self->mode == MODE_DICT) {
            if (PyDict_SetItem(out, PyTuple_GET_ITEM(self->names, i), v) < 0)
                Py_CLEAR(out);
            Py_DECREF(v);
        } else {
            PyTuple_SET_ITEM(out, i, v);
        }
    }
    sl_row_clear(row); /* the columns not asked for */
    return out;
}

/* One sl_iterator_next without the GIL, waiting as long as it takes, but
 * running Python's signal handlers every SIGNAL_CHECK_MS. Returns the
 * status (SL_ECLOSED if stopped, with *row empty), or -100 when a handler
 * raised (KeyboardInterrupt): the pipeline is then stopped. */
#define RAISED (-100)

static int next_row(slpy_iterator *self, sl_row *row, int *last_epoch, char *msg, size_t len)
{
    *last_epoch = 0;
    for (;;) {
        PyThreadState *ts = PyEval_SaveThread();
        int rc;
        PyThread_acquire_lock(self->lock, WAIT_LOCK);
        if (!self->it) {
            memset(row, 0, sizeof *row);
            rc = SL_ECLOSED;
        } else {
            rc = sl_iterator_next(self->it, row);
            if (rc < 0 && rc != SL_ETIMEDOUT)
                snprintf(msg, len, "%s", sl_iterator_last_error(self->it));
            /* The epoch counters change under the lock, where threads take
             * turns; the GIL is not held here. */
            if (rc == SL_OK)
                self->in_epoch = 1;
            else if (rc == SL_END_OF_EPOCH) {
                self->in_epoch = 0;
                self->epochs_done++;
            }
            /* Nothing more can come: let the threads go now (but after an
             * interrupt, close() in another thread is about to, and this
             * thread should return at once). */
            *last_epoch = rc == SL_END_OF_EPOCH && self->num_epochs > 0 &&
                          self->epochs_done >= self->num_epochs;
            if (rc == SL_END_OF_DATA || *last_epoch ||
                (rc < 0 && rc != SL_ETIMEDOUT && rc != SL_ECANCELED))
                stop_pipeline(self);
        }
        PyThread_release_lock(self->lock);
        PyEval_RestoreThread(ts);
        if (rc != SL_ETIMEDOUT)
            return rc;
        if (PyErr_CheckSignals() < 0) {
            close_iterator(self);
            return RAISED;
        }
    }
}

/* Records a pipeline error so that every later call raises it again. */
static PyObject *sticky_error(slpy_iterator *self, int rc, const char *msg)
{
    if (!self->error_status) {
        self->error_status = rc;
        self->error_msg = PyMem_Malloc(strlen(msg) + 1);
        if (self->error_msg)
            strcpy(self->error_msg, msg);
    }
    return slpy_raise_runtime(self->error_status, self->error_msg ? self->error_msg : msg);
}

static PyObject *iterator_next(PyObject *o)
{
    slpy_iterator *self = (slpy_iterator *)o;
    char msg[1024] = "";
    sl_row row;
    int rc, last_epoch;
    if (self->error_status)
        return sticky_error(self, self->error_status, "");
    if (self->ended)
        return NULL;
    rc = next_row(self, &row, &last_epoch, msg, sizeof msg);
    switch (rc) {
    case SL_OK:
        return row_value(self, &row);
    case SL_END_OF_EPOCH:
        if (last_epoch)
            self->ended = 1;
        return NULL; /* StopIteration */
    case SL_END_OF_DATA:
    case SL_ECLOSED:
    case SL_ECANCELED: /* closed by another thread */
        self->ended = 1;
        return NULL;
    case RAISED:
        return NULL;
    default:
        return sticky_error(self, rc, msg);
    }
}

/* --- methods --------------------------------------------------------------------------------- */

static PyObject *iterator_close(PyObject *o, PyObject *unused)
{
    (void)unused;
    close_iterator((slpy_iterator *)o);
    Py_RETURN_NONE;
}

/* finish_epoch(): drops the rest of the current epoch, so that the next
 * pass starts a new one (a loop that stopped early). Rows are released
 * without becoming Python objects. */
static PyObject *iterator_finish_epoch(PyObject *o, PyObject *unused)
{
    slpy_iterator *self = (slpy_iterator *)o;
    (void)unused;
    while (self->in_epoch && !self->ended && !self->error_status) {
        PyObject *row = iterator_next(o);
        if (!row)
            break;
        Py_DECREF(row);
    }
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *iterator_enter(PyObject *o, PyObject *unused)
{
    (void)unused;
    return Py_NewRef(o);
}

static PyObject *iterator_exit(PyObject *o, PyObject *args)
{
    (void)args;
    close_iterator((slpy_iterator *)o);
    Py_RETURN_FALSE;
}

static PyObject *iterator_get_stats(PyObject *o, PyObject *unused)
{
    slpy_iterator *self = (slpy_iterator *)o;
    sl_iterator_stats s;
    PyThreadState *ts;
    int running;
    (void)unused;
    memset(&s, 0, sizeof s);
    ts = PyEval_SaveThread();
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    running = self->it != NULL;
    if (running) {
        sl_iterator_get_stats(self->it, &s);
    } else {
        s.samples_skipped = self->samples_skipped;
        s.samples_replaced = self->samples_replaced;
    }
    PyThread_release_lock(self->lock);
    PyEval_RestoreThread(ts);
    return Py_BuildValue("{s:O,s:d,s:K,s:n,s:i,s:K,s:K,s:K}", "running",
                         running ? Py_True : Py_False, "source_load_ms", s.source_load_ms,
                         "rows_out", (unsigned long long)s.rows_out, "pool_bytes",
                         (Py_ssize_t)s.pool_bytes, "threads", s.threads, "consumer_wakeups",
                         (unsigned long long)s.consumer_wakeups, "samples_skipped",
                         (unsigned long long)s.samples_skipped, "samples_replaced",
                         (unsigned long long)s.samples_replaced);
}

void slpy_tune_lines_add(slpy_tune_lines *l, const char *line)
{
    if (l->n < SLPY_TUNE_LINES)
        snprintf(l->line[l->n++], SLPY_TUNE_LINE, "%s", line);
}

PyObject *slpy_tune_lines_list(const slpy_tune_lines *l)
{
    PyObject *list = PyList_New((Py_ssize_t)l->n);
    for (size_t i = 0; list && i < l->n; i++) {
        PyObject *s = PyUnicode_FromString(l->line[i]);
        if (!s) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, s);
    }
    return list;
}

PyObject *slpy_stage_stats(const sl_stage_stats *st, size_t n)
{
    char verdict[512];
    PyObject *list = PyList_New((Py_ssize_t)n), *out;
    if (!list)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const sl_stage_stats *s = &st[i];
        PyObject *d = Py_BuildValue(
            "{s:s,s:i,s:K,s:d,s:d,s:d,s:d,s:d,s:n,s:d,s:d}", "name", s->name, "threads",
            s->threads, "rows", (unsigned long long)s->rows, "elapsed_ms", s->elapsed_ms,
            "busy_ms", s->busy_ms, "wait_input_ms", s->wait_input_ms, "startup_wait_ms",
            s->startup_wait_ms, "blocked_output_ms", s->blocked_output_ms, "capacity",
            (Py_ssize_t)s->capacity, "occupancy", s->occupancy, "thread_ms", s->thread_ms);
        if (!d) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, d);
    }
    sl_stage_verdict(st, n, verdict, sizeof verdict);
    out = Py_BuildValue("{s:O,s:s}", "stages", list, "verdict", verdict);
    Py_DECREF(list);
    return out;
}

/* The stages of a running pipeline, read under the iterator's lock. */
static PyObject *iterator_get_stage_stats(PyObject *o, PyObject *unused)
{
    slpy_iterator *self = (slpy_iterator *)o;
    sl_stage_stats st[SLPY_MAX_STAGES];
    PyThreadState *ts;
    size_t n = 0;
    (void)unused;
    ts = PyEval_SaveThread();
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    if (self->it)
        n = sl_iterator_get_stage_stats(self->it, st, SLPY_MAX_STAGES);
    PyThread_release_lock(self->lock);
    PyEval_RestoreThread(ts);
    return slpy_stage_stats(st, n < SLPY_MAX_STAGES ? n : SLPY_MAX_STAGES);
}

/* What the autotuner said so far, a line per change or judgement. */
static PyObject *iterator_autotune_log(PyObject *o, PyObject *unused)
{
    slpy_iterator *self = (slpy_iterator *)o;
    PyObject *list;
    (void)unused;
    PyThread_acquire_lock(self->state, WAIT_LOCK);
    list = slpy_tune_lines_list(&self->tune);
    PyThread_release_lock(self->state);
    return list;
}

static PyObject *iterator_iter(PyObject *o)
{
    return Py_NewRef(o);
}

static PyMethodDef iterator_methods[] = {
    {"close", iterator_close, METH_NOARGS,
     "close(): stops the pipeline and joins its threads; later calls to next() raise\n"
     "StopIteration. Called by `del`, garbage collection and `with`."},
    {"finish_epoch", iterator_finish_epoch, METH_NOARGS,
     "finish_epoch(): drops the rest of the current epoch, so the next pass begins a new one."},
    {"get_stats", iterator_get_stats, METH_NOARGS,
     "get_stats() -> dict: running, source_load_ms, rows_out, pool_bytes, threads,\n"
     "consumer_wakeups (zeros once the pipeline is stopped), samples_skipped,\n"
     "samples_replaced (bad samples, still there once it stopped)."},
    {"get_stage_stats", iterator_get_stage_stats, METH_NOARGS,
     "get_stage_stats() -> dict: 'stages', a list with one dict per stage of the\n"
     "pipeline and one for the consumer (name, threads, rows, elapsed_ms, busy_ms,\n"
     "wait_input_ms, startup_wait_ms, blocked_output_ms, capacity, occupancy, thread_ms), and\n"
     "'verdict', which stage limits throughput, in words (empty once stopped)."},
    {"autotune_log", iterator_autotune_log, METH_NOARGS,
     "autotune_log() -> [str]: with autotune=True, what the tuner changed and why, a line\n"
     "per change and per judgement of one (the first 32)."},
    {"__enter__", iterator_enter, METH_NOARGS, NULL},
    {"__exit__", iterator_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

PyTypeObject slpy_iterator_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sluice.dataset.Iterator",
    .tp_basicsize = sizeof(slpy_iterator),
    .tp_dealloc = iterator_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An iterator over a dataset's rows, made by create_tuple_iterator() or\n"
              "create_dict_iterator(). Each pass (a for loop) is one epoch; a new pass\n"
              "continues with the next epoch. close() (or `with`, `del`) stops the pipeline\n"
              "and joins its threads. Several threads may share one iterator.",
    .tp_weaklistoffset = offsetof(slpy_iterator, weakrefs),
    .tp_iter = iterator_iter,
    .tp_iternext = iterator_next,
    .tp_methods = iterator_methods,
};
