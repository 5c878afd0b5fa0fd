/* thread_budget.c: the default thread budget and its report line
 * (sluice/thread_budget.h). */
#include "sluice/thread_budget.h"

#include <stdio.h>

#include "core/cpu.h"

void sl_thread_budget_default(sl_thread_budget *b)
{
    int cpus = sl__cpus_available();
    b->cpus = cpus;
    b->compute_threads = cpus < 4 ? cpus : 4;
    b->blas_threads = 1;
    b->pipeline_workers = cpus >= 2 ? 2 : 1;
    b->transfer_threads = 1; /* data sinking copies on one thread */
}

int sl_thread_budget_format(const sl_thread_budget *b, char *buf, size_t len)
{
    if (b->pipeline_workers == 0)
        return snprintf(buf, len, "%d CPU%s: compute %d thread%s, OpenBLAS %d, no pipeline, "
                        "transfer %d",
                        b->cpus, b->cpus == 1 ? "" : "s", b->compute_threads,
                        b->compute_threads == 1 ? "" : "s", b->blas_threads,
                        b->transfer_threads);
    return snprintf(buf, len,
                    "%d CPU%s: compute %d thread%s, OpenBLAS %d, pipeline %d worker%s per map, "
                    "transfer %d",
                    b->cpus, b->cpus == 1 ? "" : "s", b->compute_threads,
                    b->compute_threads == 1 ? "" : "s", b->blas_threads, b->pipeline_workers,
                    b->pipeline_workers == 1 ? "" : "s", b->transfer_threads);
}
