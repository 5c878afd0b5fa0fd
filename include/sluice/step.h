/* step.h: running a graph. An executor owns the threads that compute: one
 * thread of its own, which runs every step, plus helpers that share each
 * op's work. A step is part of a graph (what some outputs need, and for
 * training the parameter updates) compiled for one executor:
 *
 *   GRAPH mode plans memory once: every intermediate value gets a slot in
 *   one arena, reused once its last reader has run, so running allocates
 *   nothing. PYNATIVE mode runs the same ops one by one, allocating each
 *   value as it goes (from a caching pool, as eager frameworks do) and
 *   freeing it after its last reader. Both run the same kernels in the same
 *   order and give the same numbers, bit for bit.
 *
 * Results are bit-identical whatever the number of threads: each op splits
 * its outputs between threads, never a sum. */
#ifndef SLUICE_STEP_H
#define SLUICE_STEP_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/export.h"
#include "sluice/graph.h"
#include "sluice/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sl_mode {
    SL_GRAPH_MODE = 0,
    SL_PYNATIVE_MODE = 1
} sl_mode;

typedef struct sl_executor sl_executor;
typedef struct sl_step sl_step;

/* Versioned (see sluice.h): call sl_executor_options_init before setting
 * fields; new fields are only ever appended. */
typedef struct sl_executor_options {
    size_t size;      /* sizeof the struct as the caller compiled it; set by the _init */
    int threads;      /* compute threads, the executor's own included (default 1) */
    int blas_threads; /* OpenBLAS's threads (default 1). OpenBLAS's count is
                       * process-wide: every executor alive at once must ask
                       * for the same count */
    int64_t spin_ns;  /* how long a compute thread spins waiting for the
                       * others before it sleeps (default -1: 20 us, or no
                       * spin when the process has fewer CPUs than threads) */
} sl_executor_options;

typedef struct sl_executor_stats {
    int threads, blas_threads;
    int64_t spin_ns;          /* the spin in force */
    uint64_t helper_sleeps;   /* times a helper slept waiting for the next op */
    uint64_t caller_sleeps;   /* times thread 0 slept waiting for the helpers */
} sl_executor_stats;

/* The _sized function writes at most size bytes (for bindings); C callers
 * use the inline _init. */
SL_API void sl_executor_options_init_sized(sl_executor_options *o, size_t size);
static inline void sl_executor_options_init(sl_executor_options *o)
{
    sl_executor_options_init_sized(o, sizeof *o);
}
/* Starts the executor's threads (o may be NULL). *out is yours
 * (sl_executor_free). Fails with SL_EINVAL for threads outside [1, 64] or
 * options not made by sl_executor_options_init (or setting fields this
 * library does not know), SL_ETHREAD when a thread cannot start, SL_ESTATE
 * when another live executor holds a different OpenBLAS thread count. */
SL_API int sl_executor_new(sl_executor **out, const sl_executor_options *o);
/* Wakes and joins every thread. Free the executor's steps first. */
SL_API void sl_executor_free(sl_executor *ex);
SL_API int sl_executor_threads(const sl_executor *ex);
SL_API void sl_executor_get_stats(const sl_executor *ex, sl_executor_stats *out);

/* Compiles the nodes that outputs[0..noutputs) need, plus, when train is 1,
 * the graph's parameter updates and what they need. The graph must outlive
 * the step and gain no nodes meanwhile. On failure the message is in
 * sl_graph_last_error(g). */
SL_API int sl_step_new(sl_step **out, sl_graph *g, sl_executor *ex, sl_mode mode,
                       const int *outputs, size_t noutputs, int train);
SL_API void sl_step_free(sl_step *s);
SL_API const char *sl_step_last_error(const sl_step *s);

/* The graph inputs the step reads, in the order sl_step_run takes them. */
SL_API size_t sl_step_num_inputs(const sl_step *s);
SL_API int sl_step_input_node(const sl_step *s, size_t i);

/* Runs the step once on the executor's threads, inputs[i] feeding input i
 * (dtype and shape must match exactly; nothing is copied). The caller's
 * thread waits. Errors (a mismatched input, a label out of range) leave a
 * message naming the op and the values in sl_step_last_error().
 * Any number of threads may run steps of one executor: runs take turns.
 * One step is run by one thread at a time. Called from the executor's own
 * thread (from within a posted job), it runs there at once. */
SL_API int sl_step_run(sl_step *s, sl_tensor *const *inputs, size_t ninputs);
/* The same, but on the calling thread (as thread 0 of the executor's
 * team), which saves the hand-off to the executor's thread and back: for
 * a host loop that would only wait. Takes its turn like sl_step_run. */
SL_API int sl_step_run_here(sl_step *s, sl_tensor *const *inputs, size_t ninputs);
/* Posts a run to the executor's thread and returns without waiting; the
 * inputs must stay valid until sl_step_wait has returned the run's status.
 * Posting while an earlier post of the same step has not been waited for
 * waits for it first. */
SL_API int sl_step_post(sl_step *s, sl_tensor *const *inputs, size_t ninputs);
/* Waits at most timeout_ms (< 0: without limit) for the posted run: its
 * status, or SL_ETIMEDOUT while it still runs (wait again), or SL_ESTATE
 * when no run is posted. */
SL_API int sl_step_wait(sl_step *s, int timeout_ms);
/* Output k's values after the last run (valid until the next run or the
 * step is freed) and its spec. */
SL_API const void *sl_step_output(const sl_step *s, size_t k, sl_tensor_spec *spec);

/* Bytes of the arena (GRAPH) or the most held at once (PYNATIVE). */
SL_API size_t sl_step_memory_bytes(const sl_step *s);
/* Where the time went: per node of the step, in run order, its name, op
 * and the total milliseconds over every run since the last reset. In GRAPH
 * mode parameter updates that follow one another run as one pass over all
 * their parameters: their op reads "momentum, one pass" (or "sgd, one
 * pass") and the pass's time is shared among them by parameter size. */
SL_API size_t sl_step_num_nodes(const sl_step *s);
SL_API int sl_step_node_time(const sl_step *s, size_t i, const char **name, const char **op,
                             double *ms);
SL_API void sl_step_reset_times(sl_step *s);
/* Floating-point operations of node i in one run, counted for the ops
 * that multiply matrices (conv2d, dense and their gradients: 2 per
 * multiply-add); 0 for the others, whose cost is memory traffic. */
SL_API double sl_step_node_flops(const sl_step *s, size_t i);

/* The yardstick the per-op GFLOPS are read against: OpenBLAS's sgemm on
 * n x n matrices on one thread, the median GFLOPS of `repeats` calls
 * after an untimed one. SL_EINVAL (n outside [1, 8192], repeats outside
 * [1, 64]), SL_ENOMEM, or SL_ESTATE when a live executor holds OpenBLAS
 * at another thread count. */
SL_API int sl_blas_sgemm_gflops(int n, int repeats, double *gflops);

/* The core OpenBLAS chose for this CPU (openblas_get_corename(): e.g.
 * "Haswell", "SkylakeX", "Zen"; OPENBLAS_CORETYPE chooses another). */
SL_API const char *sl_blas_core(void);
/* When that core uses a narrower vector path than sluice's own kernels run
 * on this CPU (sl_cpu_path(): a "Prescott", "Nehalem" or "Sandybridge"
 * core on a CPU with AVX2 or AVX-512), the OPENBLAS_CORETYPE value that
 * would use it ("SkylakeX", "Haswell"); NULL when the core matches or is
 * one this library does not know. OpenBLAS then runs at a fraction of the
 * machine's rate, and so does every figure read against its sgemm. */
SL_API const char *sl_blas_core_advice(void);

/* The machine's peak rate on one thread: a few ms of independent
 * multiply-adds on full vectors of the path sluice's kernels use
 * (sl_cpu_path()), in GFLOPS (2 per multiply-add), the best of five runs:
 * the yardstick that no library's view of the CPU can skew. SL_OK, or
 * SL_ESTATE when the clock gave no time. */
SL_API int sl_cpu_fma_gflops(double *gflops);

#ifdef __cplusplus
}
#endif
#endif
