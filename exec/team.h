/* team.h: the threads that share each op's work. The thread that calls
 * sl__team_run is thread 0 (any thread may be, one at a time: the caller
 * serialises); nthreads - 1 helpers run the same function with their own
 * index, and sl__team_run returns when all are done.
 *
 * Waiting, on both sides, is a short bounded spin and then a sleep on a
 * condition variable: helpers wait for the next job, the caller waits for
 * the helpers to finish. The spin pays only when the thread being waited
 * for is running on another CPU; when the process may use fewer CPUs than
 * the team has threads, every wait sleeps at once, so the thread being
 * waited for gets the CPU.
 *
 * Work is cut into nthreads shares, and threads claim shares rather than
 * own one: a helper that is late (no free CPU) finds its share done by the
 * caller, so a busy CPU slows a job to one thread's speed, not to the
 * scheduler's. A team never runs more threads at once than the process has
 * CPUs: with nthreads = 2 on one CPU the caller runs both shares itself.
 * Either way the shares are the same, so every result is the same bit for
 * bit; only hand-offs that would buy nothing are gone. */
#ifndef SLUICE_EXEC_TEAM_H
#define SLUICE_EXEC_TEAM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

typedef void (*sl__team_fn)(void *arg, int ith, int nth);

/* How long a waiting thread spins before it sleeps, by default. Measured
 * with `sluice bench train` on 2 cores (see the note in team.c): the gap
 * between two ops of a step is a few microseconds, the gap between steps
 * (the host fetching a batch) tens of microseconds or more. */
#define SL__TEAM_SPIN_NS_DEFAULT 20000

typedef struct sl__team {
    int nthreads;            /* helpers + 1: the shares each job is cut into */
    int active;              /* threads that run shares: min(nthreads, CPUs) */
    int nstarted;            /* helpers running */
    pthread_t *helpers;      /* (nthreads - 1) */
    int64_t spin_ns;         /* bounded spin before a wait sleeps; 0: none */
    sl__team_fn fn;          /* the current job, set before generation moves */
    void *arg;
    atomic_uint generation;  /* bumped once per job */
    atomic_ullong claim;     /* (generation << 32) | next share to claim */
    atomic_int left;         /* shares of the current job not yet done */
    atomic_int stop;
    pthread_mutex_t lock;    /* guards sleeping, caller_sleeping and the waits */
    pthread_cond_t wake;     /* a new job, or stop: helpers wait here */
    pthread_cond_t done;     /* the last helper finished: the caller waits here */
    int sleeping;            /* helpers waiting on wake */
    int caller_sleeping;     /* 1 while the caller waits on done */
    /* For reports and tests: how often a wait ended in a sleep. */
    atomic_ulong helper_sleeps;
    atomic_ulong caller_sleeps;
} sl__team;

/* Starts nthreads - 1 helpers. spin_ns < 0 picks the default: no spin when
 * the process may run on fewer CPUs than nthreads, else
 * SL__TEAM_SPIN_NS_DEFAULT. Returns SL_OK, or SL_ETHREAD/SL_ENOMEM with
 * nothing left running. */
int sl__team_init(sl__team *t, int nthreads, int64_t spin_ns);
/* Runs fn(arg, ith, nthreads) on every thread; returns when all are done. */
void sl__team_run(sl__team *t, sl__team_fn fn, void *arg);
/* Wakes and joins the helpers. */
void sl__team_destroy(sl__team *t);

/* The CPUs this process may run on (its affinity mask), at least 1. */
int sl__cpus_available(void);

/* The share [*begin, *end) of n units that thread ith of nth takes, in
 * blocks of `align` units (the last share takes the rest). */
void sl__team_split(size_t n, size_t align, int ith, int nth, size_t *begin, size_t *end);

#endif
