/* fault.c: the -Wl,--wrap targets behind fault.h. A call fails when its
 * function is armed and its countdown reaches zero; atomics, since the
 * library may call from several threads. */
#include "fault.h"

#include <pthread.h>
#include <stdatomic.h>

static atomic_int armed = -1; /* a fault_fn, or -1 */
static atomic_int countdown;
static atomic_int fired;
static int fail_err;

int __real_pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a);
int __real_pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *a);
int __real_pthread_condattr_init(pthread_condattr_t *a);
int __real_pthread_condattr_setclock(pthread_condattr_t *a, clockid_t clock);
int __wrap_pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a);
int __wrap_pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *a);
int __wrap_pthread_condattr_init(pthread_condattr_t *a);
int __wrap_pthread_condattr_setclock(pthread_condattr_t *a, clockid_t clock);

void fault_arm(fault_fn fn, int skip, int err)
{
    fail_err = err;
    atomic_store(&fired, 0);
    atomic_store(&countdown, skip);
    atomic_store(&armed, (int)fn);
}

int fault_disarm(void)
{
    atomic_store(&armed, -1);
    return atomic_load(&fired);
}

/* Whether this call of fn is the one to fail. */
static int fail_now(fault_fn fn)
{
    if (atomic_load(&armed) != (int)fn || atomic_fetch_sub(&countdown, 1) != 0)
        return 0;
    atomic_store(&armed, -1);
    atomic_store(&fired, 1);
    return 1;
}

int __wrap_pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
    return fail_now(FAULT_MUTEX_INIT) ? fail_err : __real_pthread_mutex_init(m, a);
}

int __wrap_pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *a)
{
    return fail_now(FAULT_COND_INIT) ? fail_err : __real_pthread_cond_init(c, a);
}

int __wrap_pthread_condattr_init(pthread_condattr_t *a)
{
    return fail_now(FAULT_CONDATTR_INIT) ? fail_err : __real_pthread_condattr_init(a);
}

int __wrap_pthread_condattr_setclock(pthread_condattr_t *a, clockid_t clock)
{
    if (fail_now(FAULT_CONDATTR_SETCLOCK))
        return fail_err;
    return __real_pthread_condattr_setclock(a, clock);
}
