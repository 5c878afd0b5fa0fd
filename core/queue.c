/* queue.c: one mutex, two condition variables, waits inside while loops; no
 * work is done while holding the lock. */
#include "core/queue.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/error.h"

int sl__queue_init(sl_queue *q, size_t capacity, sl__error *err)
{
    pthread_condattr_t attr;
    int e, rc;
    q->slots = NULL; /* so sl__queue_destroy is safe after a failed init */
    if (capacity == 0)
        return sl__errf(err, SL_EINVAL, "queue: capacity must be >= 1");
    q->capacity = capacity;
    q->limit = capacity;
    q->head = 0;
    q->next_seq = 0;
    q->closed = 0;
    q->interrupted = 0;
    q->woken = 0;
    q->filled = 0;
    q->push_waiters = 0;
    q->pop_waiters = 0;
    q->push_waits = 0;
    q->pop_waits = 0;
    q->pop_wakeups = 0;
    q->last_push_ms = 0;
    q->push_wait_ms = 0;
    q->pushes = 0;
    q->pop_wait_ms = 0;
    q->first_pop_wait_ms = 0;
    sl__occupancy_start(&q->occupancy, sl__now_ms());
    if ((e = pthread_mutex_init(&q->lock, NULL)) != 0)
        return sl__pthread_errf(err, e, "queue: pthread_mutex_init");
    /* Timed pops measure against the monotonic clock, immune to clock
     * jumps; without it their deadlines would be wrong, so that fails too. */
    if ((e = pthread_condattr_init(&attr)) != 0) {
        rc = sl__pthread_errf(err, e, "queue: pthread_condattr_init");
        goto no_attr;
    }
    if ((e = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)) != 0) {
        rc = sl__pthread_errf(err, e, "queue: pthread_condattr_setclock(CLOCK_MONOTONIC)");
        goto no_not_empty;
    }
    if ((e = pthread_cond_init(&q->not_empty, &attr)) != 0) {
        rc = sl__pthread_errf(err, e, "queue: pthread_cond_init");
        goto no_not_empty;
    }
    if ((e = pthread_cond_init(&q->not_full, NULL)) != 0) {
        rc = sl__pthread_errf(err, e, "queue: pthread_cond_init");
        goto no_not_full;
    }
    pthread_condattr_destroy(&attr);
    q->slots = calloc(capacity, sizeof *q->slots);
    if (!q->slots) {
        pthread_cond_destroy(&q->not_full);
        pthread_cond_destroy(&q->not_empty);
        pthread_mutex_destroy(&q->lock);
        return sl__errf(err, SL_ENOMEM, "queue: out of memory for %zu slots", capacity);
    }
    return SL_OK;
no_not_full:
    pthread_cond_destroy(&q->not_empty);
no_not_empty:
    pthread_condattr_destroy(&attr);
no_attr:
    pthread_mutex_destroy(&q->lock);
    return rc;
}

void sl__queue_destroy(sl_queue *q)
{
    if (!q->slots)
        return;
    pthread_mutex_destroy(&q->lock);
    pthread_cond_destroy(&q->not_empty);
    pthread_cond_destroy(&q->not_full);
    free(q->slots);
    q->slots = NULL;
}

static int push_locked(sl_queue *q, uint64_t seq, void *item)
{
    double now;
    SL_ASSERT(item != NULL);
    if (!q->closed && seq >= q->head + q->limit) {
        double t0 = sl__now_ms();
        while (!q->closed && seq >= q->head + q->limit) {
            q->push_waits++;
            q->push_waiters++;
            pthread_cond_wait(&q->not_full, &q->lock);
            q->push_waiters--;
        }
        now = sl__now_ms();
        q->push_wait_ms += now - t0;
    } else {
        now = sl__now_ms();
    }
    if (q->closed)
        return SL_ECLOSED;
    SL_ASSERT(seq >= q->head && q->slots[seq % q->capacity] == NULL);
    q->slots[seq % q->capacity] = item;
    sl__occupancy_note(&q->occupancy, q->filled, now);
    q->filled++;
    q->pushes++;
    q->last_push_ms = now;
    /* Only the head item ends a pop's wait. One sleeper is enough: the
     * pop that takes it wakes the next if the next item is there too. */
    if (seq == q->head && q->pop_waiters)
        pthread_cond_signal(&q->not_empty);
    return SL_OK;
}

int sl__queue_push(sl_queue *q, uint64_t seq, void *item)
{
    int rc;
    pthread_mutex_lock(&q->lock);
    rc = push_locked(q, seq, item);
    pthread_mutex_unlock(&q->lock);
    return rc;
}

int sl__queue_push_next(sl_queue *q, void *item)
{
    int rc;
    pthread_mutex_lock(&q->lock);
    rc = push_locked(q, q->next_seq, item);
    if (rc == SL_OK)
        q->next_seq++;
    pthread_mutex_unlock(&q->lock);
    return rc;
}

int sl__queue_try_push_next(sl_queue *q, void *item)
{
    int rc;
    pthread_mutex_lock(&q->lock);
    if (!q->closed && q->next_seq >= q->head + q->limit) {
        rc = SL_ETIMEDOUT;
    } else {
        rc = push_locked(q, q->next_seq, item);
        if (rc == SL_OK)
            q->next_seq++;
    }
    pthread_mutex_unlock(&q->lock);
    return rc;
}

/* Takes the head item out of its slot; the caller holds the lock. */
static void take_head(sl_queue *q, void **slot, void **item, uint64_t *seq)
{
    *item = *slot;
    *slot = NULL;
    if (seq)
        *seq = q->head;
    q->head++;
    /* One clock read per item taken: a pop takes a chunk of rows or a
     * batch, so this costs far less than the rows do. */
    sl__occupancy_note(&q->occupancy, q->filled, sl__now_ms());
    q->filled--;
    /* The next item may be there already, with no push to come for it:
     * pass the wake-up on to another sleeping consumer. */
    if (q->pop_waiters && q->slots[q->head % q->capacity] != NULL)
        pthread_cond_signal(&q->not_empty);
    /* Waking producers only once the queue is half empty lets them push
     * several items per wake-up instead of one (fewer context switches);
     * a consumer broadcasts before it sleeps, which keeps this live. */
    if (q->push_waiters && q->filled <= q->limit / 2)
        pthread_cond_broadcast(&q->not_full);
}

int sl__queue_pop(sl_queue *q, void **item, uint64_t *seq, int timeout_ms)
{
    struct timespec deadline;
    void **slot;
    double slept_at = 0;
    int rc = SL_OK, slept = 0, timed_out = 0, at_start = 0;
    if (timeout_ms > 0)
        sl__deadline_ms(&deadline, timeout_ms);
    pthread_mutex_lock(&q->lock);
    /* Re-read head after every wait: another consumer may have advanced it.
     * An item that arrived as the deadline passed is still taken. */
    while (*(slot = &q->slots[q->head % q->capacity]) == NULL && !q->closed &&
           !q->interrupted && !q->woken) {
        if (timeout_ms == 0 || timed_out) {
            rc = SL_ETIMEDOUT;
            break;
        }
        if (!slept) {
            q->pop_waits++;
            slept = 1;
            slept_at = sl__now_ms();
            at_start = q->pushes == 0; /* nothing has come yet: start-up */
        }
        /* About to sleep: whoever may fill the head slot must be awake. */
        if (q->push_waiters)
            pthread_cond_broadcast(&q->not_full);
        q->pop_waiters++;
        if (timeout_ms < 0)
            pthread_cond_wait(&q->not_empty, &q->lock);
        else
            timed_out = pthread_cond_timedwait(&q->not_empty, &q->lock, &deadline) == ETIMEDOUT;
        q->pop_waiters--;
        q->pop_wakeups++;
    }
    if (slept) {
        double waited = sl__now_ms() - slept_at;
        q->pop_wait_ms += waited;
        if (at_start)
            q->first_pop_wait_ms += waited;
    }
    if (q->interrupted || q->woken) {
        rc = SL_ECANCELED;
    } else if (rc == SL_OK) {
        if (*slot == NULL)
            rc = SL_ECLOSED;
        else
            take_head(q, slot, item, seq);
    }
    pthread_mutex_unlock(&q->lock);
    return rc;
}

void sl__queue_set_limit(sl_queue *q, size_t limit)
{
    if (!q->slots)
        return;
    if (limit < 1)
        limit = 1;
    if (limit > q->capacity)
        limit = q->capacity;
    pthread_mutex_lock(&q->lock);
    if (limit > q->limit && q->push_waiters)
        pthread_cond_broadcast(&q->not_full);
    q->limit = limit;
    pthread_mutex_unlock(&q->lock);
}

uint64_t sl__queue_push_bound(sl_queue *q)
{
    uint64_t bound;
    if (!q->slots)
        return UINT64_MAX; /* never initialised: a push fails, never waits */
    pthread_mutex_lock(&q->lock);
    bound = q->closed ? UINT64_MAX : q->head + q->limit;
    pthread_mutex_unlock(&q->lock);
    return bound;
}

int sl__queue_pop_before(sl_queue *q, void **item, uint64_t *seq, uint64_t bound)
{
    void **slot;
    int rc = SL_OK;
    pthread_mutex_lock(&q->lock);
    slot = &q->slots[q->head % q->capacity];
    *seq = q->head;
    if (q->interrupted || q->woken)
        rc = SL_ECANCELED;
    else if (*slot == NULL)
        rc = q->closed ? SL_ECLOSED : SL_ETIMEDOUT;
    else if (q->head >= bound)
        rc = SL_ETIMEDOUT;
    else
        take_head(q, slot, item, seq);
    pthread_mutex_unlock(&q->lock);
    return rc;
}

size_t sl__queue_limit(sl_queue *q)
{
    size_t n;
    if (!q->slots)
        return 0; /* never initialised */
    pthread_mutex_lock(&q->lock);
    n = q->limit;
    pthread_mutex_unlock(&q->lock);
    return n;
}

void sl__queue_close(sl_queue *q)
{
    if (!q->slots)
        return; /* never initialised (its init failed) */
    pthread_mutex_lock(&q->lock);
    q->closed = 1;
    pthread_cond_broadcast(&q->not_empty);
    pthread_cond_broadcast(&q->not_full);
    pthread_mutex_unlock(&q->lock);
}

void sl__queue_interrupt(sl_queue *q)
{
    if (!q->slots)
        return;
    pthread_mutex_lock(&q->lock);
    q->interrupted = 1;
    pthread_cond_broadcast(&q->not_empty);
    pthread_mutex_unlock(&q->lock);
}

void sl__queue_wake(sl_queue *q)
{
    if (!q->slots)
        return;
    pthread_mutex_lock(&q->lock);
    q->woken = 1;
    pthread_cond_broadcast(&q->not_empty);
    pthread_mutex_unlock(&q->lock);
}

void sl__queue_unwake(sl_queue *q)
{
    if (!q->slots)
        return;
    pthread_mutex_lock(&q->lock);
    q->woken = 0;
    pthread_mutex_unlock(&q->lock);
}

void sl__queue_drain(sl_queue *q, void (*free_item)(void *))
{
    if (!q->slots)
        return;
    for (size_t i = 0; i < q->capacity; i++) {
        if (q->slots[i]) {
            free_item(q->slots[i]);
            q->slots[i] = NULL;
            q->filled--;
        }
    }
}

size_t sl__queue_size(sl_queue *q)
{
    size_t n;
    pthread_mutex_lock(&q->lock);
    n = q->filled;
    pthread_mutex_unlock(&q->lock);
    return n;
}

uint64_t sl__queue_pop_wakeups(sl_queue *q)
{
    uint64_t n;
    pthread_mutex_lock(&q->lock);
    n = q->pop_wakeups;
    pthread_mutex_unlock(&q->lock);
    return n;
}

void sl__queue_push_times(sl_queue *q, double *last_push_ms, double *push_wait_ms)
{
    pthread_mutex_lock(&q->lock);
    *last_push_ms = q->last_push_ms;
    *push_wait_ms = q->push_wait_ms;
    pthread_mutex_unlock(&q->lock);
}

void sl__queue_get_stats(sl_queue *q, sl__queue_stats *out)
{
    double now = sl__now_ms();
    memset(out, 0, sizeof *out);
    if (!q->slots)
        return; /* never initialised */
    pthread_mutex_lock(&q->lock);
    out->capacity = q->limit;
    out->filled = q->filled;
    out->pushes = q->pushes;
    out->push_wait_ms = q->push_wait_ms;
    out->pop_wait_ms = q->pop_wait_ms;
    out->first_pop_wait_ms = q->first_pop_wait_ms;
    out->occupancy = sl__occupancy_mean(&q->occupancy, q->filled, now);
    out->last_push_ms = q->last_push_ms;
    pthread_mutex_unlock(&q->lock);
}
