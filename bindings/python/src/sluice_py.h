/* sluice_py.h: what the files of the extension module sluice._sluice share.
 * The module wraps the public C API only (include/sluice): tensors with the
 * buffer protocol and DLPack (tensor.c, dlpack.c), datasets (dataset.c),
 * operators and Python callables as operators (op.c), the sources over
 * numpy arrays and Python callables (sources.c), iterators that
 * release the GIL while they wait (iterator.c), and training: models
 * (model.c), the calls that run them on a thread of their own with
 * callbacks written in Python (run.c), data_sink and the dataset helper
 * (sink.c), and graphs that sluice.nn's tracing builds (graph.c); the
 * job's ranks for sluice.communication (distributed.c). The
 * Python package around it (bindings/python/sluice) gives
 * the MindSpore-style names and defaults.
 *
 * Names: slpy_ for what these files share, static for the rest. Every C
 * call that can block or take long runs with the GIL released. */
#ifndef SLUICE_BINDINGS_PYTHON_SLUICE_PY_H
#define SLUICE_BINDINGS_PYTHON_SLUICE_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdatomic.h>

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
/* The sl_dtype of a struct-module format with itemsize; -1 if none. */
int slpy_format_dtype(const char *fmt, Py_ssize_t itemsize, sl_dtype *out);
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
/* Writes "TypeName: message" of the pending exception into buf and clears
 * it. Called with the GIL. */
void slpy_exception_text(char *buf, size_t len);
/* 1 once the interpreter is shutting down: a C thread must not take the GIL. */
int slpy_interpreter_finalizing(void);
/* Drops a reference to the PyObject obj from any thread, taking the GIL
 * (nothing once the interpreter is gone): a C object's release of its
 * Python user data. */
void slpy_release_object(void *obj);

/* --- sources.c: the sources over Python's data ------------------------------ */

extern PyMethodDef slpy_source_functions[]; /* dataset_slices, dataset_generator */

/* --- dataset.c / iterator.c ----------------------------------------------- */

/* The sampler options from a source's Python arguments; -1 with an
 * exception (a bad seed). */
int slpy_fill_sampler(sl_sampler_options *s, long long num_samples, int shuffle, PyObject *seed,
                      long long num_shards, long long shard_id);

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
/* {"stages": [{name, threads, rows, elapsed_ms, busy_ms, wait_input_ms,
 * startup_wait_ms, blocked_output_ms, capacity, occupancy, thread_ms}, ...],
 * "verdict": sl_stage_verdict's words}. */
PyObject *slpy_stage_stats(const sl_stage_stats *st, size_t n);
#define SLPY_MAX_STAGES 32

/* What an autotuner said (its autotune_log lines), the first
 * SLPY_TUNE_LINES kept; the caller guards it if threads share it. */
#define SLPY_TUNE_LINES 32
#define SLPY_TUNE_LINE 256
typedef struct slpy_tune_lines {
    size_t n;
    char line[SLPY_TUNE_LINES][SLPY_TUNE_LINE];
} slpy_tune_lines;
void slpy_tune_lines_add(slpy_tune_lines *l, const char *line);
/* The lines as a new list of str (NULL with an exception set). */
PyObject *slpy_tune_lines_list(const slpy_tune_lines *l);
/* A private copy of ds's C dataset (it shares the source and what it has
 * loaded), for a training call to read while others use ds. NULL with an
 * exception on failure. */
sl_dataset *slpy_dataset_copy_c(slpy_dataset *ds);
/* The C calls on a dataset run between these: without the GIL, under its
 * lock (dataset.c). */
PyThreadState *slpy_dataset_begin_call(slpy_dataset *self);
void slpy_dataset_end_call(slpy_dataset *self, PyThreadState *ts);
/* The UTF-8 strings of a sequence of str (None: *out NULL, *n 0); they
 * belong to *items, a list to release after use, and *out to PyMem_Free.
 * -1 with an exception. */
int slpy_string_array(PyObject *seq, const char *what, const char ***out, size_t *n,
                      PyObject **items);

/* --- dataset_ops.c: project, rename, concat, zip ------------------------------ */
PyObject *slpy_dataset_project(PyObject *o, PyObject *columns);
PyObject *slpy_dataset_rename(PyObject *o, PyObject *args);
PyObject *slpy_dataset_concat(PyObject *o, PyObject *datasets);
PyObject *slpy_dataset_zip(PyObject *o, PyObject *datasets);
/* A new Dataset object owning ds (freed on failure: NULL, exception set). */
PyObject *slpy_dataset_wrap(sl_dataset *ds);
/* dataset_split.c: dataset_split, dataset_batch_padded, dataset_batch_map. */
extern PyMethodDef slpy_dataset_split_functions[];

/* --- model.c / run.c / sink.c: training ----------------------------------- */

typedef struct slpy_model {
    PyObject_HEAD
    sl_model *m;
    /* Held by the thread that runs a C call on m (train, eval, a sink, a
     * parameter read), so one runs at a time. */
    PyThread_type_lock lock;
    /* The thread running a call on m for slpy_model_run (0: none): its
     * Python callbacks may read and write parameters, which the lock it
     * holds would otherwise keep them from. */
    atomic_ulong job_thread;
    /* While a train runs (written and read on its thread): 1 on several
     * devices of this process, whose replicas take a callback's parameter
     * write (sl_model_parameters_changed); 2 across MPI ranks, where the
     * other ranks would not see it. 0 otherwise. */
    int replicated;
    PyObject *tune_log;       /* the last train's autotune lines (a list), or NULL */
} slpy_model;

extern PyTypeObject slpy_model_type;
extern PyMethodDef slpy_model_functions[]; /* network_params */
extern PyTypeObject slpy_data_sink_type;
extern PyTypeObject slpy_dataset_helper_type;

/* --- distributed.c: sluice.communication's calls --------------------------- */

extern PyMethodDef slpy_distributed_functions[]; /* distributed_init, ... */

/* --- graph.c: a graph built by tracing, made into a model ------------------ */

extern PyTypeObject slpy_graph_type;
/* [(op, name)] of g's nodes in creation order; NULL with an exception. */
PyObject *slpy_graph_nodes(const sl_graph *g);

/* --- step.c: a traced graph's step run on given tensors (eager calls) ------- */

extern PyTypeObject slpy_step_type;
/* A Step over g (which it takes, also on failure) computing the nodes of
 * the int sequence outputs, with the updates when train; threads 0: the
 * executor's default. NULL with an exception. */
PyObject *slpy_step_new(sl_graph *g, PyObject *outputs, int train, int mode, int threads);

/* Takes the model's lock for a short call, with the GIL held (and let go
 * while it waits; Ctrl-C while it waits raises). From a callback of a
 * call running on the model, the lock is already held for it: returns 0
 * without taking it when in_callback is 1, refuses (RuntimeError) when 0.
 * Returns 1 when it took the lock, 0 when it did not need to, -1 with an
 * exception. slpy_model_unlock(self, result) undoes it. */
int slpy_model_lock(slpy_model *self, int in_callback, const char *what);
void slpy_model_unlock(slpy_model *self, int locked);

/* A call of the C library that may run long (train, eval, a sink), run
 * by slpy_model_run on a thread of its own while the caller waits without
 * the GIL, checking for signals. */
typedef struct slpy_call {
    const char *what;        /* "train", "eval", ...: for messages */
    sl_model *m;
    int (*fn)(struct slpy_call *call); /* runs without the GIL; sets rc's message */
    int rc;                  /* fn's result */
    char msg[1024];          /* sl_model_last_error() when rc < 0 */
    int interrupted;         /* a signal handler raised (Ctrl-C): m was stopped */
    int in_training;         /* may run from a callback of m's own training */
    /* The first exception a Python callback (or writing a line to
     * sys.stdout) raised; it stopped the call. */
    PyObject *exc_type, *exc_value, *exc_tb;
    /* The callbacks the call runs (slpy_callbacks_make). */
    sl_callback *cbs;
    sl_callback **list;
    size_t ncbs;
    PyObject **hooks;        /* the Python callables among them, owned */
} slpy_call;

/* Runs call->fn on a new thread that holds the model's lock (taken here,
 * waiting as slpy_model_lock does) and has a Python thread state for the
 * callbacks; waits for it without the GIL, running Python's signal
 * handlers every 100 ms. A handler that raises (KeyboardInterrupt) stops
 * the model (sl_model_stop) and the thread is waited for all the same.
 * Returns 0 with call->rc set, or -1 with an exception: the handler's,
 * else the one a callback raised, else a failure to start. A call with
 * in_training set, made from a callback of the model's own training, runs
 * there and then, between two steps or sinks (eval while training). */
int slpy_model_run(slpy_model *self, slpy_call *call);
/* The callbacks of call from a list of specs: a Python callable (called
 * as fn(hook, epoch, epoch_num, global_step, step_in_epoch,
 * steps_per_epoch, loss, step_ms, epoch_ms) at each hook, 0 begin to 4
 * end; a true result asks training to stop), ("loss_monitor",
 * per_print_times, at_epoch_end), ("time_monitor",) or ("checkpoint",
 * directory, prefix, save_steps, keep_max). The monitors' lines go to
 * sys.stdout. Returns 0, or -1 with an exception (nothing left to free). */
int slpy_callbacks_make(slpy_call *call, PyObject *specs);
/* Frees what slpy_callbacks_make made; with the GIL. */
void slpy_callbacks_free(slpy_call *call);

#endif
