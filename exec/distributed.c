/* distributed.c: the process's place among the job's ranks
 * (include/sluice/distributed.h). Without MPI every call answers "rank 0
 * of 1" and init says how to get MPI. */
#include "exec/distributed_impl.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"
#include "sluice/distributed.h"
#include "sluice/status.h"

/* The process's MPI state: set by init, read everywhere after. */
static struct {
    int initialized;     /* sl_distributed_init succeeded */
    int we_initialized;  /* ... and it was the one that called MPI_Init */
    int finalized;
    int rank, size;
    int failure_shared;
#ifdef SL_HAVE_MPI
    MPI_Comm comm;
#endif
} dist = {0, 0, 0, 0, 1, 0
#ifdef SL_HAVE_MPI
          , MPI_COMM_NULL
#endif
};

const char *sl_distributed_mpi(void)
{
#ifdef SL_HAVE_MPI
    return SL_MPI_BUILT;
#else
    return NULL;
#endif
}

const char *sl_distributed_why_not(void)
{
#ifdef SL_HAVE_MPI
    return NULL;
#else
    return "built without MPI: " SL_MPI_WHY "; then configure and build again";
#endif
}

int sl_distributed_launched(void)
{
    /* Open MPI's mpirun sets these in every rank's environment. */
    return getenv("OMPI_COMM_WORLD_SIZE") != NULL || getenv("PMIX_RANK") != NULL;
}

int sl_distributed_initialized(void)
{
    return dist.initialized && !dist.finalized;
}

int sl_distributed_rank(void)
{
    return sl_distributed_initialized() ? dist.rank : 0;
}

int sl_distributed_size(void)
{
    return sl_distributed_initialized() ? dist.size : 1;
}

void sl__distributed_failure_shared(int shared)
{
    dist.failure_shared = shared;
}

#ifdef SL_HAVE_MPI
MPI_Comm sl__distributed_comm(void)
{
    return sl_distributed_initialized() ? dist.comm : MPI_COMM_NULL;
}

static const char *thread_level_name(int level)
{
    switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    default: return "MPI_THREAD_MULTIPLE";
    }
}

int sl_distributed_init(char *err, size_t errlen)
{
    int already = 0, done = 0, level = MPI_THREAD_SINGLE, rc;
    if (dist.initialized && !dist.finalized)
        return SL_OK;
    MPI_Finalized(&done);
    if (dist.finalized || done) {
        return sl__err_out(err, errlen, SL_ESTATE,
                           "distributed: MPI was finalized in this process; it cannot start "
                           "again");
    }
    MPI_Initialized(&already);
    if (already) {
        MPI_Query_thread(&level);
    } else {
        /* Ranks share their cores with their pipelines' threads: a rank
         * waiting for the others yields its core rather than spinning on
         * it (the user's own setting wins). */
        setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
        rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &level);
        if (rc != MPI_SUCCESS) {
            return sl__err_out(err, errlen, SL_ESTATE,
                               "distributed: MPI_Init_thread failed (error %d); run under "
                               "mpirun, or check Open MPI's installation",
                               rc);
        }
        dist.we_initialized = 1;
    }
    /* The executors' threads call MPI, one at a time. */
    if (level < MPI_THREAD_SERIALIZED) {
        return sl__err_out(err, errlen, SL_ESTATE,
                "distributed: MPI gives thread level %s, but sluice calls MPI from its "
                "executors' threads, one at a time: it needs MPI_THREAD_SERIALIZED (if you "
                "initialize MPI yourself, ask for it with MPI_Init_thread)",
                thread_level_name(level));
    }
    if (MPI_Comm_dup(MPI_COMM_WORLD, &dist.comm) != MPI_SUCCESS) {
        return sl__err_out(err, errlen, SL_ESTATE,
                           "distributed: MPI_Comm_dup of MPI_COMM_WORLD failed");
    }
    /* Errors come back as codes, which sluice turns into messages. */
    MPI_Comm_set_errhandler(dist.comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(dist.comm, &dist.rank);
    MPI_Comm_size(dist.comm, &dist.size);
    dist.initialized = 1;
    return SL_OK;
}

int sl_distributed_finalize(int failed)
{
    if (!dist.initialized || dist.finalized)
        return SL_OK;
    if (failed && !dist.failure_shared && dist.size > 1) {
        /* The others may be waiting in a collective for this rank: only
         * ending the job frees them. */
        fprintf(stderr, "sluice: rank %d: ending every rank of the job (MPI_Abort): the "
                        "others may be waiting for this one\n",
                dist.rank);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    dist.finalized = 1;
    if (failed && dist.size > 1) {
        /* Every rank knows of the failure, but the one that failed may
         * never reach MPI_Finalize (a thread of its pipeline stuck), and
         * MPI_Finalize waits for all: leave without it. The process exits
         * non-zero, and mpirun then ends the ranks still running. */
        return SL_OK;
    }
    MPI_Comm_free(&dist.comm);
    if (dist.we_initialized)
        MPI_Finalize();
    return SL_OK;
}
#else
int sl_distributed_init(char *err, size_t errlen)
{
    return sl__err_out(err, errlen, SL_ESTATE, "distributed: %s", sl_distributed_why_not());
}

int sl_distributed_finalize(int failed)
{
    (void)failed;
    return SL_OK;
}
#endif
