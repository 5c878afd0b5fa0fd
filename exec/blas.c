/* blas.c: the process's OpenBLAS thread count and who holds it (blas.h).
 * A registry in the sense of the style guide: the one piece of process-wide
 * state here, because OpenBLAS's own setting is process-wide. */
#include "exec/blas.h"

#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <strings.h>

#include "core/clock.h"
#include "core/cpu.h"
#include "core/error.h"
#include "sluice/step.h"

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

/* --- the yardstick ------------------------------------------------------ */

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int sl_blas_sgemm_gflops(int n, int repeats, double *gflops)
{
    size_t bytes = (size_t)n * (size_t)n * sizeof(float);
    float *a, *b, *c;
    double runs[64];
    int rc;

    *gflops = 0.0;
    if (n < 1 || n > 8192 || repeats < 1 || repeats > 64)
        return SL_EINVAL;
    rc = sl__blas_acquire(1);
    if (rc < 0)
        return rc; /* an executor holds another count: not one thread */
    a = aligned_alloc(64, bytes);
    b = aligned_alloc(64, bytes);
    c = aligned_alloc(64, bytes);
    if (!a || !b || !c) {
        rc = SL_ENOMEM;
        goto out;
    }
    /* Small values, so that nothing turns denormal or infinite. */
    for (size_t i = 0; i < (size_t)n * (size_t)n; i++) {
        a[i] = (float)(i % 7) * 0.125f - 0.375f;
        b[i] = (float)(i % 5) * 0.25f - 0.5f;
        c[i] = 0.0f;
    }
    /* One untimed call: page faults, OpenBLAS's buffers. */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    for (int r = 0; r < repeats; r++) {
        double t0 = sl__now_ms(), ms;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f,
                    c, n);
        ms = sl__now_ms() - t0;
        runs[r] = 2.0 * (double)n * (double)n * (double)n / (ms * 1e6);
    }
    qsort(runs, (size_t)repeats, sizeof runs[0], compare_double);
    *gflops = runs[repeats / 2];
out:
    free(a);
    free(b);
    free(c);
    sl__blas_release();
    return rc;
}

/* --- which core OpenBLAS runs --------------------------------------------- */

const char *sl_blas_core(void)
{
    const char *name = openblas_get_corename();
    return name ? name : "unknown";
}

/* OpenBLAS's x86 cores by the widest vectors their kernels use: those
 * with AVX-512, those with AVX2 and FMA, and those below (SSE or AVX
 * without FMA). Names it reports (dynamic builds capitalise them, others
 * do not) are compared without case. */
static const char *const cores_avx512[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
static const char *const cores_avx2[] = {"Haswell", "Zen", "Excavator"};
static const char *const cores_below[] = {
    "Katmai", "Coppermine", "Northwood", "Prescott", "Banias", "Atom", "Core2", "Penryn",
    "Dunnington", "Nehalem", "Sandybridge", "Athlon", "Opteron", "Opteron(SSE3)", "Barcelona",
    "Bobcat", "Bulldozer", "Piledriver", "Steamroller", "Nano"};

static int listed(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(name, list[i]) == 0)
            return 1;
    return 0;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

const char *sl_blas_core_advice(void)
{
    const char *name = sl_blas_core();
    sl__cpu_level ours = sl__cpu_level_get(), theirs;
    if (listed(name, cores_avx512, COUNT(cores_avx512)))
        theirs = SL__CPU_AVX512;
    else if (listed(name, cores_avx2, COUNT(cores_avx2)))
        theirs = SL__CPU_AVX2;
    else if (listed(name, cores_below, COUNT(cores_below)))
        theirs = SL__CPU_GENERIC;
    else
        return NULL; /* not a core we know: no advice */
    if (theirs >= ours)
        return NULL;
    return ours == SL__CPU_AVX512 ? "SkylakeX" : "Haswell";
}
