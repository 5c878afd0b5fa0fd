/* byte_budget.c: see byte_budget.h. One mutex, one condition variable,
 * waits in a while loop (libuv's pattern). */
#include "core/byte_budget.h"

#include <string.h>

int sl__byte_budget_init(sl__byte_budget *b, uint64_t limit, sl__error *err)
{
    int e;
    SL_ASSERT(limit >= 1);
    memset(b, 0, sizeof *b);
    b->limit = limit;
    if ((e = pthread_mutex_init(&b->lock, NULL)) != 0)
        return sl__pthread_errf(err, e, "byte budget: pthread_mutex_init");
    if ((e = pthread_cond_init(&b->returned, NULL)) != 0) {
        pthread_mutex_destroy(&b->lock);
        return sl__pthread_errf(err, e, "byte budget: pthread_cond_init");
    }
    return SL_OK;
}

void sl__byte_budget_destroy(sl__byte_budget *b)
{
    pthread_cond_destroy(&b->returned);
    pthread_mutex_destroy(&b->lock);
}

int sl__byte_budget_take(sl__byte_budget *b, uint64_t n, int may_wait)
{
    int rc = SL_OK, slept = 0;
    if (n > b->limit)
        return SL_EINVAL; /* limit never changes: no lock needed */
    pthread_mutex_lock(&b->lock);
    while (!b->closed && n > b->limit - b->held) {
        if (!may_wait) {
            rc = SL_ETIMEDOUT;
            break;
        }
        if (!slept)
            b->waits++;
        slept = 1;
        b->waiting++;
        pthread_cond_wait(&b->returned, &b->lock);
        b->waiting--;
    }
    if (b->closed)
        rc = SL_ECLOSED;
    if (rc == SL_OK) {
        b->held += n;
        if (b->held > b->peak)
            b->peak = b->held;
    }
    pthread_mutex_unlock(&b->lock);
    return rc;
}

void sl__byte_budget_give(sl__byte_budget *b, uint64_t n)
{
    if (n == 0)
        return;
    pthread_mutex_lock(&b->lock);
    SL_ASSERT(n <= b->held);
    b->held -= n;
    /* Sleepers want different amounts: wake them all to look again. Only
     * decode workers sleep here, a handful at most. */
    if (b->waiting > 0)
        pthread_cond_broadcast(&b->returned);
    pthread_mutex_unlock(&b->lock);
}

void sl__byte_budget_close(sl__byte_budget *b)
{
    pthread_mutex_lock(&b->lock);
    b->closed = 1;
    pthread_cond_broadcast(&b->returned);
    pthread_mutex_unlock(&b->lock);
}
