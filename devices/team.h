/* team.h: the threads that share each op's work. The thread that calls
 * sl__team_run is thread 0 (any thread may be, one at a time: the caller
 * serialises); nthreads - 1 helpers run the same function on other shares,
 * and sl__team_run returns when every share is done.
 *
 * Waiting, on both sides, is a short bounded spin and then a sleep on a
 * condition variable: helpers wait for the next job, the caller waits for
 * the helpers to finish. The spin pays only when the thread being waited
 * for is running on another CPU; when the process may use fewer CPUs than
 * the team has threads, every wait sleeps at once, so the thread being
 * waited for gets the CPU.
 *
 * Work is cut into nthreads x per_thread shares. Thread k owns the shares
 * [k * per_thread, (k + 1) * per_thread) and runs them first, in order, so
 * that consecutive ops touch the same data on the same CPU; a thread that
 * has run out of its own takes what is left of the others', from the far
 * end. When another process's thread (the pipeline's, say) takes a CPU
 * from one of the team for a while, the other does the rest of that op
 * instead of waiting for it: a stolen CPU costs the time it was stolen
 * for, not twice that. An op may also ask for one share per thread or one
 * in all (sl__share_range). A team never runs more threads at once than the
 * process has CPUs: with nthreads = 2 on one CPU the caller runs every
 * share itself. Whoever runs them, the shares are the same, so every
 * result is the same bit for bit. */
#ifndef SLUICE_EXEC_TEAM_H
#define SLUICE_EXEC_TEAM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

/* Shares each thread owns when the team has more than one thread: enough
 * that a thread whose CPU was taken leaves little for the other to wait
 * on, few enough that each share stays a worthwhile piece of work. */
#ifndef SL__TEAM_SHARES_PER_THREAD
#define SL__TEAM_SHARES_PER_THREAD 4
#endif

/* One share of a job, as the job's function sees it. */
typedef struct sl__share {
    int index;      /* which share, 0 .. count - 1 */
    int count;      /* shares in the job: threads x per_thread */
    int per_thread; /* shares each thread owns */
    int worker;     /* the thread running it, 0 .. nthreads - 1: its scratch */
} sl__share;

typedef void (*sl__team_fn)(void *arg, const sl__share *share);

/* How finely an op lets its work be cut (sl__share_range). */
typedef enum sl__grain {
    SL__GRAIN_ONE,    /* all of it in share 0: too small to split */
    SL__GRAIN_THREAD, /* one piece per thread: pieces must stay large */
    SL__GRAIN_SHARE   /* one piece per share: the units are independent */
} sl__grain;

/* One owner's shares, alone on a cache line: (generation << 32) |
 * (end << 16) | next. The owner takes from next, others from end. */
typedef struct sl__team_range {
    _Alignas(64) atomic_ullong word;
} sl__team_range;

/* How long a waiting thread spins before it sleeps, by default. Measured
 * with `sluice bench train` on 2 cores (see the note in team.c): the gap
 * between two ops of a step is a few microseconds, the gap between steps
 * (the host fetching a batch) tens of microseconds or more. */
#define SL__TEAM_SPIN_NS_DEFAULT 20000

typedef struct sl__team {
    int nthreads;            /* helpers + 1 */
    int per_thread;          /* shares each thread owns (1 when alone) */
    sl__team_range *ranges;  /* (nthreads): the shares left of each owner */
    int active;              /* threads that run shares: min(nthreads, CPUs) */
    int nstarted;            /* helpers running */
    pthread_t *helpers;      /* (nthreads - 1) */
    int64_t spin_ns;         /* bounded spin before a wait sleeps; 0: none */
    sl__team_fn fn;          /* the current job, set before generation moves */
    void *arg;
    /* The caller's float settings, which the helpers take for the job
     * (core/float_env.h). Atomic: a helper late for a job may read it
     * while the caller sets the next one's (it then claims no share of its
     * own job, which is done, and reads it again for the next). */
    atomic_uint float_env;
    atomic_uint generation;  /* bumped once per job */
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
/* Runs fn(arg, share) for every share of the job, each once, on whichever
 * thread takes it, under the caller's float settings (whether subnormals
 * flush to zero: every share computes as the caller's own would);
 * returns when all are done. */
void sl__team_run(sl__team *t, sl__team_fn fn, void *arg);
/* Wakes and joins the helpers. */
void sl__team_destroy(sl__team *t);

/* The share [*begin, *end) of n units that thread ith of nth takes, in
 * blocks of `align` units (the last share takes the rest). */
void sl__team_split(size_t n, size_t align, int ith, int nth, size_t *begin, size_t *end);

/* The units [*begin, *end) of n that this share runs when the op is cut
 * at the given grain (empty for the shares that get none). */
void sl__share_range(const sl__share *share, sl__grain grain, size_t n, size_t align,
                     size_t *begin, size_t *end);

#endif
