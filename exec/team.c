/* team.c: the helper threads of one executor (see team.h). */
#include "exec/team.h"

#include <sched.h>
#include <stdlib.h>

#include "core/error.h"

/* About 50-100 us of polling before a helper sleeps: long enough to bridge
 * the gap between two ops of a step, short enough not to hold a core that
 * the data pipeline could use while the host is busy elsewhere. */
#define SPIN_POLLS 20000

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

static void *helper_main(void *p)
{
    helper_arg *a = p;
    sl__team *t = a->team;
    int ith = a->ith;
    unsigned seen = 0;
    free(a);

    for (;;) {
        unsigned gen = atomic_load_explicit(&t->generation, memory_order_acquire);
        for (int i = 0; gen == seen && i < SPIN_POLLS && !atomic_load(&t->stop); i++) {
            cpu_relax();
            gen = atomic_load_explicit(&t->generation, memory_order_acquire);
        }
        if (gen == seen) {
            pthread_mutex_lock(&t->lock);
            t->sleeping++;
            while ((gen = atomic_load(&t->generation)) == seen && !atomic_load(&t->stop))
                pthread_cond_wait(&t->wake, &t->lock);
            t->sleeping--;
            pthread_mutex_unlock(&t->lock);
        }
        if (atomic_load(&t->stop))
            return NULL;
        seen = gen;
        t->fn(t->arg, ith, t->nthreads);
        atomic_fetch_sub_explicit(&t->pending, 1, memory_order_release);
    }
}

int sl__team_init(sl__team *t, int nthreads)
{
    t->nthreads = nthreads;
    t->nstarted = 0;
    t->fn = NULL;
    t->arg = NULL;
    atomic_init(&t->generation, 0);
    atomic_init(&t->pending, 0);
    atomic_init(&t->stop, 0);
    t->sleeping = 0;
    t->helpers = NULL;
    if (pthread_mutex_init(&t->lock, NULL) != 0)
        return SL_ENOMEM;
    if (pthread_cond_init(&t->wake, NULL) != 0) {
        pthread_mutex_destroy(&t->lock);
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
    }
    return SL_OK;
}

void sl__team_run(sl__team *t, sl__team_fn fn, void *arg)
{
    if (t->nthreads == 1) {
        fn(arg, 0, 1);
        return;
    }
    t->fn = fn;
    t->arg = arg;
    atomic_store_explicit(&t->pending, t->nthreads - 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->generation, 1, memory_order_release);
    /* A helper that went to sleep checked generation under the lock, so
     * taking it here means it either saw the new value or is waiting. */
    pthread_mutex_lock(&t->lock);
    if (t->sleeping > 0)
        pthread_cond_broadcast(&t->wake);
    pthread_mutex_unlock(&t->lock);

    fn(arg, 0, t->nthreads);

    for (unsigned i = 0; atomic_load_explicit(&t->pending, memory_order_acquire) > 0; i++) {
        if (i < SPIN_POLLS)
            cpu_relax();
        else
            sched_yield();
    }
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
    pthread_cond_destroy(&t->wake);
    pthread_mutex_destroy(&t->lock);
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
