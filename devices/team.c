/* team.c: the helper threads of one executor (see team.h).
 *
 * Choosing the spin: a step of LeNet5 at batch 32 runs about twenty ops of
 * 20-500 us each, so a helper that has just finished one op sees the next
 * within a few microseconds; between steps the host fetches a batch, which
 * can take much longer. A spin of 20 us bridges the first kind of gap and
 * sleeps through the second. The old spin (20,000 pauses, about 500 us on
 * an AMD EPYC, and a caller that only yielded) held CPUs that the pipeline
 * or the helper being waited for needed: with 2 threads pinned to one CPU a
 * step took 16 times as long as with 1. */
#include "devices/team.h"

#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "core/cpu.h"
#include "core/float_env.h"
#include "core/error.h"

typedef struct helper_arg {
    sl__team *team;
    int ith;
} helper_arg;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spins until *v != old or spin_ns have passed; returns the last value
 * read. The clock is read once every 64 polls: a pause's length varies
 * tenfold between CPUs, so the bound is in time, not in polls. */
static unsigned spin_while_equal(const atomic_uint *v, unsigned old, int64_t spin_ns,
                                 const atomic_int *stop)
{
    unsigned cur = atomic_load_explicit(v, memory_order_acquire);
    int64_t until;
    if (spin_ns <= 0 || cur != old)
        return cur;
    until = now_ns() + spin_ns;
    for (unsigned i = 1;; i++) {
        cpu_relax();
        cur = atomic_load_explicit(v, memory_order_acquire);
        if (cur != old || atomic_load_explicit(stop, memory_order_relaxed))
            return cur;
        if (i % 64 == 0 && now_ns() >= until)
            return cur;
    }
}

static uint64_t range_word(unsigned gen, unsigned next, unsigned end)
{
    return (uint64_t)gen << 32 | (uint64_t)end << 16 | next;
}

/* Takes one share of owner's range for the job gen: the owner from the
 * front, any other thread from the back. Returns the share, or -1 when
 * none is left (or the range is already another job's). */
static int take_share(sl__team *t, int owner, unsigned gen, int from_front)
{
    atomic_ullong *w = &t->ranges[owner].word;
    unsigned long long c = atomic_load_explicit(w, memory_order_acquire);
    for (;;) {
        unsigned next = (unsigned)(c & 0xffffu), end = (unsigned)((c >> 16) & 0xffffu);
        uint64_t taken;
        if ((unsigned)(c >> 32) != gen || next >= end)
            return -1;
        taken = from_front ? range_word(gen, next + 1, end) : range_word(gen, next, end - 1);
        if (atomic_compare_exchange_weak_explicit(w, &c, taken, memory_order_acq_rel,
                                                  memory_order_acquire))
            return (int)(from_front ? next : end - 1);
    }
}

static void run_share(sl__team *t, int index, int worker)
{
    sl__share sh = {index, t->nthreads * t->per_thread, t->per_thread, worker};
    t->fn(t->arg, &sh);
    if (atomic_fetch_sub_explicit(&t->left, 1, memory_order_acq_rel) == 1) {
        /* The last share done wakes the caller if it went to sleep. It set
         * caller_sleeping and re-read left under the lock, so either it saw
         * zero or it is waiting and sees this signal. */
        pthread_mutex_lock(&t->lock);
        if (t->caller_sleeping)
            pthread_cond_signal(&t->done);
        pthread_mutex_unlock(&t->lock);
    }
}

/* Thread `worker` runs its own shares in order, then whatever is left of
 * the others' (see team.h). Each range word carries the job's generation,
 * so a helper late from an earlier job cannot take a share of a newer one. */
static void claim_shares(sl__team *t, unsigned gen, int worker)
{
    int share;
    while ((share = take_share(t, worker, gen, 1)) >= 0)
        run_share(t, share, worker);
    for (int k = 1; k < t->nthreads; k++) {
        int owner = (worker + k) % t->nthreads;
        while ((share = take_share(t, owner, gen, 0)) >= 0)
            run_share(t, share, worker);
    }
}

static void *helper_main(void *p)
{
    helper_arg *a = p;
    sl__team *t = a->team;
    int ith = a->ith;
    unsigned seen = 0;
    free(a);

    if (ith >= t->active) {
        /* More threads than CPUs: this one has no share to run; it only
         * waits to be joined. */
        pthread_mutex_lock(&t->lock);
        while (!atomic_load(&t->stop))
            pthread_cond_wait(&t->wake, &t->lock);
        pthread_mutex_unlock(&t->lock);
        return NULL;
    }
    for (;;) {
        unsigned gen = spin_while_equal(&t->generation, seen, t->spin_ns, &t->stop);
        if (gen == seen) {
            pthread_mutex_lock(&t->lock);
            t->sleeping++;
            atomic_fetch_add_explicit(&t->helper_sleeps, 1, memory_order_relaxed);
            while ((gen = atomic_load(&t->generation)) == seen && !atomic_load(&t->stop))
                pthread_cond_wait(&t->wake, &t->lock);
            t->sleeping--;
            pthread_mutex_unlock(&t->lock);
        }
        if (atomic_load(&t->stop))
            return NULL;
        seen = gen;
        {
            unsigned env = atomic_load_explicit(&t->float_env, memory_order_relaxed);
            if (sl__float_env_get() != env)
                sl__float_env_set(env);
        }
        claim_shares(t, gen, ith);
    }
}

int sl__team_init(sl__team *t, int nthreads, int64_t spin_ns)
{
    int cpus;
    t->nthreads = nthreads;
    t->per_thread = nthreads > 1 ? SL__TEAM_SHARES_PER_THREAD : 1;
    t->ranges = NULL;
    t->nstarted = 0;
    atomic_init(&t->float_env, 0);
    t->fn = NULL;
    t->arg = NULL;
    cpus = sl__cpus_available();
    t->active = cpus < nthreads ? cpus : nthreads;
    if (spin_ns < 0)
        spin_ns = cpus < nthreads ? 0 : SL__TEAM_SPIN_NS_DEFAULT;
    t->spin_ns = spin_ns;
    atomic_init(&t->generation, 0);
    atomic_init(&t->left, 0);
    atomic_init(&t->stop, 0);
    atomic_init(&t->helper_sleeps, 0);
    atomic_init(&t->caller_sleeps, 0);
    t->sleeping = 0;
    t->caller_sleeping = 0;
    t->helpers = NULL;
    t->ranges = aligned_alloc(64, sizeof *t->ranges * (size_t)nthreads);
    if (!t->ranges)
        return SL_ENOMEM;
    for (int i = 0; i < nthreads; i++)
        atomic_init(&t->ranges[i].word, 0);
    if (pthread_mutex_init(&t->lock, NULL) != 0) {
        free(t->ranges);
        return SL_ENOMEM;
    }
    if (pthread_cond_init(&t->wake, NULL) != 0) {
        pthread_mutex_destroy(&t->lock);
        free(t->ranges);
        return SL_ENOMEM;
    }
    if (pthread_cond_init(&t->done, NULL) != 0) {
        pthread_cond_destroy(&t->wake);
        pthread_mutex_destroy(&t->lock);
        free(t->ranges);
        return SL_ENOMEM;
    }
    if (nthreads > 1) {
        t->helpers = calloc((size_t)nthreads - 1, sizeof *t->helpers);
        if (!t->helpers) {
            sl__team_destroy(t);
            return SL_ENOMEM;
        }
    }
    for (int i = 1; i < nthreads; i++) {
        helper_arg *a = malloc(sizeof *a);
        if (!a) {
            sl__team_destroy(t);
            return SL_ENOMEM;
        }
        a->team = t;
        a->ith = i;
        if (pthread_create(&t->helpers[i - 1], NULL, helper_main, a) != 0) {
            free(a);
            sl__team_destroy(t);
            return SL_ETHREAD;
        }
        t->nstarted++;
        pthread_setname_np(t->helpers[i - 1], "sl-compute");
    }
    return SL_OK;
}

/* Spins, then sleeps, until every share of the current job is done. */
static void wait_for_helpers(sl__team *t)
{
    int64_t until = 0;
    for (unsigned i = 1; atomic_load_explicit(&t->left, memory_order_acquire) > 0; i++) {
        if (t->spin_ns <= 0)
            break;
        cpu_relax();
        if (i % 64 == 1) {
            int64_t now = now_ns();
            if (until == 0)
                until = now + t->spin_ns;
            else if (now >= until)
                break;
        }
    }
    if (atomic_load_explicit(&t->left, memory_order_acquire) == 0)
        return;
    pthread_mutex_lock(&t->lock);
    t->caller_sleeping = 1;
    atomic_fetch_add_explicit(&t->caller_sleeps, 1, memory_order_relaxed);
    while (atomic_load_explicit(&t->left, memory_order_acquire) > 0)
        pthread_cond_wait(&t->done, &t->lock);
    t->caller_sleeping = 0;
    pthread_mutex_unlock(&t->lock);
}

void sl__team_run(sl__team *t, sl__team_fn fn, void *arg)
{
    unsigned gen;
    int count = t->nthreads * t->per_thread;
    if (t->active == 1) {
        /* One CPU (or one thread): every share in turn, no hand-off. */
        for (int i = 0; i < count; i++) {
            sl__share sh = {i, count, t->per_thread, 0};
            fn(arg, &sh);
        }
        return;
    }
    t->fn = fn;
    t->arg = arg;
    atomic_store_explicit(&t->float_env, sl__float_env_get(), memory_order_relaxed);
    atomic_store_explicit(&t->left, count, memory_order_relaxed);
    gen = atomic_load_explicit(&t->generation, memory_order_relaxed) + 1;
    for (int k = 0; k < t->nthreads; k++)
        atomic_store_explicit(&t->ranges[k].word,
                              range_word(gen, (unsigned)(k * t->per_thread),
                                         (unsigned)((k + 1) * t->per_thread)),
                              memory_order_release);
    atomic_store_explicit(&t->generation, gen, memory_order_release);
    /* A helper that went to sleep checked generation under the lock, so
     * taking it here means it either saw the new value or is waiting. */
    pthread_mutex_lock(&t->lock);
    if (t->sleeping > 0)
        pthread_cond_broadcast(&t->wake);
    pthread_mutex_unlock(&t->lock);

    claim_shares(t, gen, 0);
    wait_for_helpers(t);
}

void sl__team_destroy(sl__team *t)
{
    atomic_store(&t->stop, 1);
    pthread_mutex_lock(&t->lock);
    pthread_cond_broadcast(&t->wake);
    pthread_mutex_unlock(&t->lock);
    for (int i = 0; i < t->nstarted; i++)
        pthread_join(t->helpers[i], NULL);
    t->nstarted = 0;
    free(t->helpers);
    t->helpers = NULL;
    pthread_cond_destroy(&t->done);
    pthread_cond_destroy(&t->wake);
    pthread_mutex_destroy(&t->lock);
    free(t->ranges);
    t->ranges = NULL;
}

void sl__team_split(size_t n, size_t align, int ith, int nth, size_t *begin, size_t *end)
{
    size_t blocks, per, b, e;
    SL_ASSERT(nth >= 1 && ith >= 0 && ith < nth && align >= 1);
    blocks = (n + align - 1) / align;
    per = (blocks + (size_t)nth - 1) / (size_t)nth;
    b = (size_t)ith * per * align;
    e = b + per * align;
    *begin = b < n ? b : n;
    *end = e < n ? e : n;
}

void sl__share_range(const sl__share *share, sl__grain grain, size_t n, size_t align,
                     size_t *begin, size_t *end)
{
    int threads = share->count / share->per_thread;
    if (grain == SL__GRAIN_SHARE && share->count > 1) {
        sl__team_split(n, align, share->index, share->count, begin, end);
    } else if (grain == SL__GRAIN_THREAD && threads > 1) {
        if (share->index % share->per_thread == 0) {
            sl__team_split(n, align, share->index / share->per_thread, threads, begin, end);
        } else {
            *begin = *end = 0;
        }
    } else {
        *begin = 0;
        *end = share->index == 0 ? n : 0;
    }
}
