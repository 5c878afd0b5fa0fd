/* thread_budget.h: how the CPUs this process may use are shared between the
 * threads sluice runs: the data pipeline's map workers, the executor's
 * compute threads, OpenBLAS's threads and, with data sinking, the transfer
 * thread that copies batches to a device. Every one of them blocks when it
 * has nothing to do (none spins for more than microseconds), so the budget
 * may name more threads than CPUs; what it must not do is leave the step,
 * the critical path, waiting for a CPU. The defaults are measured on 2
 * cores (bench/threads.sh prints the figures). */
#ifndef SLUICE_THREAD_BUDGET_H
#define SLUICE_THREAD_BUDGET_H

#include <stddef.h>

#include "sluice/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_thread_budget {
    int cpus;             /* CPUs the process may run on (its affinity mask) */
    int compute_threads;  /* the executor's team, its own thread included */
    int blas_threads;     /* OpenBLAS's threads (process-wide) */
    int pipeline_workers; /* each map's num_parallel_workers */
    int transfer_threads; /* host-to-device copies in sink mode (1; 0 without sinking) */
} sl_thread_budget;

/* The default split for the CPUs this process may use now: compute
 * threads min(CPUs, 4) (LeNet's ops at batch 32 gain little past 4),
 * 1 OpenBLAS thread (its own threads spin; ours already share the work),
 * 2 map workers on 2 or more CPUs (1 on one), 1 transfer thread (it
 * copies while the team computes, and sleeps while it waits). */
SL_API void sl_thread_budget_default(sl_thread_budget *b);
/* The CPUs this process may run on, at least 1. */
SL_API int sl_cpus_available(void);
/* One line for people, e.g. "2 CPUs: compute 2 threads, OpenBLAS 1, pipeline
 * 2 workers per map, transfer 0". Returns what snprintf returns. */
SL_API int sl_thread_budget_format(const sl_thread_budget *b, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
