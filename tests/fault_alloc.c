/* fault_alloc.c: the -Wl,--wrap=aligned_alloc target behind fault_alloc.h. */
#include "fault_alloc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

static atomic_int armed;
static atomic_int fired;
static pthread_t target;
static size_t lo, hi;

void *__real_aligned_alloc(size_t align, size_t size);
void *__wrap_aligned_alloc(size_t align, size_t size);

void fault_alloc_arm(size_t min, size_t max)
{
    target = pthread_self();
    lo = min;
    hi = max;
    atomic_store(&fired, 0);
    atomic_store(&armed, 1); /* publishes target, lo and hi */
}

int fault_alloc_disarm(void)
{
    atomic_store(&armed, 0);
    return atomic_load(&fired);
}

void *__wrap_aligned_alloc(size_t align, size_t size)
{
    if (atomic_load(&armed) && pthread_equal(pthread_self(), target) && size >= lo &&
        size <= hi) {
        int one = 1;
        if (atomic_compare_exchange_strong(&armed, &one, 0)) {
            atomic_store(&fired, 1);
            return NULL;
        }
    }
    return __real_aligned_alloc(align, size);
}
