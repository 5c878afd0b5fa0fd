/* blas.h: the one owner of OpenBLAS's thread count. openblas_set_num_threads
 * is process-wide, so no executor sets it on its own: each one acquires the
 * count it wants here while it lives. The first sets it; later ones must
 * ask for the same count (SL_ESTATE otherwise), and the count is free to
 * change again once the last one has released it. Nothing else in sluice
 * calls openblas_set_num_threads. */
#ifndef SLUICE_EXEC_BLAS_H
#define SLUICE_EXEC_BLAS_H

/* Returns SL_OK, or SL_ESTATE when another live executor holds a
 * different count (its value is in *held when held is not NULL). */
int sl__blas_acquire_count(int threads, int *held);
int sl__blas_acquire(int threads);
void sl__blas_release(void);
/* The count in force (0 when no executor holds it). */
int sl__blas_threads(void);

#endif
