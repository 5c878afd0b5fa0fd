/* blas.c: the process's OpenBLAS thread count and who holds it (blas.h).
 * A registry in the sense of the style guide: the one piece of process-wide
 * state here, because OpenBLAS's own setting is process-wide. */
#include "exec/blas.h"

#include <cblas.h>
#include <pthread.h>

#include "core/error.h"

static pthread_mutex_t blas_lock = PTHREAD_MUTEX_INITIALIZER;
static int blas_holders; /* live executors */
static int blas_count;   /* the count they agreed on */

int sl__blas_acquire_count(int threads, int *held)
{
    int rc = SL_OK;
    pthread_mutex_lock(&blas_lock);
    if (blas_holders > 0 && blas_count != threads) {
        rc = SL_ESTATE;
        if (held)
            *held = blas_count;
    } else {
        if (blas_holders == 0 && blas_count != threads) {
            openblas_set_num_threads(threads);
            blas_count = threads;
        }
        blas_holders++;
    }
    pthread_mutex_unlock(&blas_lock);
    return rc;
}

int sl__blas_acquire(int threads)
{
    return sl__blas_acquire_count(threads, NULL);
}

void sl__blas_release(void)
{
    pthread_mutex_lock(&blas_lock);
    SL_ASSERT(blas_holders > 0);
    blas_holders--;
    pthread_mutex_unlock(&blas_lock);
}

int sl__blas_threads(void)
{
    int n;
    pthread_mutex_lock(&blas_lock);
    n = blas_holders > 0 ? blas_count : 0;
    pthread_mutex_unlock(&blas_lock);
    return n;
}
