/* distributed.h: training across processes, one Open MPI rank each
 * (`mpirun -np N sluice train ...`, or a program of yours under mpirun).
 *
 * A process joins with sl_distributed_init (MPI_Init_thread, unless
 * something else, mpi4py say, initialized MPI already), trains with
 * sl_train_options.distributed = 1 on its own shard of the data
 * (sampler num_shards = sl_distributed_size(), shard_id =
 * sl_distributed_rank()), and leaves with sl_distributed_finalize. The
 * ranks' gradients are averaged after every backward (MPI_Allreduce on one
 * fused buffer), so every rank applies the same update and holds the same
 * parameters; exec/comm_mpi.c says how failures travel.
 *
 * MPI is one per process, so this is process-wide state: the process's
 * entry in MPI's own registry of ranks. Every call is safe without MPI
 * (built without it, or not initialized): rank 0 of 1. */
#ifndef SLUICE_DISTRIBUTED_H
#define SLUICE_DISTRIBUTED_H

#include <stddef.h>

#include "sluice/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "Open MPI 4.1.4" when this sluice was built with MPI; otherwise NULL,
 * and sl_distributed_why_not() says why and how to get it. */
SL_API const char *sl_distributed_mpi(void);
SL_API const char *sl_distributed_why_not(void);
/* 1 when this process was started by mpirun (its environment says so). */
SL_API int sl_distributed_launched(void);
/* Joins this process to the job's ranks. Once is enough: later calls
 * return SL_OK. SL_ESTATE without MPI; on failure err (if not NULL) says
 * why. */
SL_API int sl_distributed_init(char *err, size_t errlen);
SL_API int sl_distributed_initialized(void);
/* This process's rank (0 .. size-1) and the ranks (0 and 1 before init). */
SL_API int sl_distributed_rank(void);
SL_API int sl_distributed_size(void);
/* Leaves the job (MPI_Finalize, if sl_distributed_init initialized MPI).
 * failed != 0: this process is about to exit non-zero on an error. When
 * the other ranks may still be waiting for this one (its error was not
 * shared with them by a training's communicator), it ends the whole job
 * (MPI_Abort), so that no rank waits for ever; otherwise it returns
 * without MPI_Finalize, which would wait for the rank that failed, and
 * mpirun ends the ranks left once this one exits non-zero. Returns SL_OK;
 * later calls do nothing. */
SL_API int sl_distributed_finalize(int failed);

#ifdef __cplusplus
}
#endif
#endif
