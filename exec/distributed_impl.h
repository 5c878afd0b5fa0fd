/* distributed_impl.h: what the library's own code needs of the process's
 * MPI state (include/sluice/distributed.h): the communicator sluice's
 * collectives use, and a note that a failure reached every rank. */
#ifndef SLUICE_EXEC_DISTRIBUTED_IMPL_H
#define SLUICE_EXEC_DISTRIBUTED_IMPL_H

#include "config.h"

#ifdef SL_HAVE_MPI
#include <mpi.h>

/* sluice's own duplicate of MPI_COMM_WORLD, so that its collectives never
 * match a user's; MPI_COMM_NULL before sl_distributed_init. */
MPI_Comm sl__distributed_comm(void);
#endif

/* shared 1: a training's communicator shared a failure with every rank
 * (all of them left their collectives, so finalize need not end the
 * job); 0: a new training, nothing shared yet. */
void sl__distributed_failure_shared(int shared);

#endif
