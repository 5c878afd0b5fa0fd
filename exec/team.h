/* team.h: the threads that share each op's work. The thread that calls
 * sl__team_run is thread 0; nthreads - 1 helpers run the same function with
 * their own index, and sl__team_run returns when all are done. Between
 * calls the helpers spin for a short while (the next op comes within
 * microseconds), then sleep. */
#ifndef SLUICE_EXEC_TEAM_H
#define SLUICE_EXEC_TEAM_H

#include <pthread.h>
#include <stdatomic.h>

typedef void (*sl__team_fn)(void *arg, int ith, int nth);

typedef struct sl__team {
    int nthreads;            /* helpers + 1 */
    int nstarted;            /* helpers running */
    pthread_t *helpers;      /* (nthreads - 1) */
    sl__team_fn fn;          /* the current job, set before generation moves */
    void *arg;
    atomic_uint generation;  /* bumped once per job */
    atomic_int pending;      /* helpers still in the current job */
    atomic_int stop;
    pthread_mutex_t lock;    /* guards sleeping and the wait on wake */
    pthread_cond_t wake;
    int sleeping;            /* helpers waiting on wake */
} sl__team;

/* Starts nthreads - 1 helpers. Returns SL_OK, or SL_ETHREAD/SL_ENOMEM with
 * nothing left running. */
int sl__team_init(sl__team *t, int nthreads);
/* Runs fn(arg, ith, nthreads) on every thread; returns when all are done. */
void sl__team_run(sl__team *t, sl__team_fn fn, void *arg);
/* Wakes and joins the helpers. */
void sl__team_destroy(sl__team *t);

/* The share [*begin, *end) of n units that thread ith of nth takes, in
 * blocks of `align` units (the last share takes the rest). */
void sl__team_split(size_t n, size_t align, int ith, int nth, size_t *begin, size_t *end);

#endif
