/* queue.h: the bounded queue that joins pipeline stages. Items carry a
 * sequence number and leave in sequence order, whatever order they arrive
 * in, so several workers can fill one queue and the consumer still sees the
 * producer's order. A ring of `capacity` slots: push blocks while its
 * sequence is `capacity` or more ahead of the next one to leave
 * (backpressure); pop blocks until the next one has arrived.
 * Nothing polls: a sleeping pop is woken by the push of the item it waits
 * for (one wake-up per item, only when someone sleeps), by close or by its
 * own deadline; a sleeping push by a pop that leaves the queue half empty,
 * or by a consumer about to sleep.
 * close() wakes everyone: push then fails with SL_ECLOSED, pop returns what
 * is still in order and then SL_ECLOSED. interrupt() wakes the consumers
 * only: every pop then returns SL_ECANCELED at once. The queue never frees items; the
 * owner drains them (sl__queue_drain) after joining its threads. */
#ifndef SLUICE_CORE_QUEUE_H
#define SLUICE_CORE_QUEUE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/occupancy.h"

typedef struct sl_queue {
    pthread_mutex_t lock;
    pthread_cond_t not_empty; /* the slot at `head` was filled, or closed */
    pthread_cond_t not_full;  /* `head` moved, or closed */
    void **slots;             /* capacity entries, NULL when empty */
    size_t capacity;          /* the ring's slots */
    size_t limit;             /* items let in at once (backpressure), 1 .. capacity:
                               * capacity unless sl__queue_set_limit lowered it */
    uint64_t head;            /* sequence number of the next item to pop */
    uint64_t next_seq;        /* for sl__queue_push_next: the next number to stamp */
    size_t filled;            /* items held */
    size_t push_waiters;      /* producers waiting for room */
    size_t pop_waiters;       /* consumers waiting for the head item */
    int closed;
    int interrupted;          /* pops return SL_ECANCELED (sl__queue_interrupt) */
    int woken;                /* the same until sl__queue_unwake (sl__queue_wake) */
    /* Counters for reports: how often each side had to wait (pop_waits:
     * pops that had to sleep at least once), and how often a sleeping pop
     * was woken (by a push, a close, its deadline or spuriously). Wake-ups
     * well above pop_waits mean a consumer woken for nothing. */
    uint64_t push_waits;
    uint64_t pop_waits;
    uint64_t pop_wakeups;
    /* For stall reports: when the last item came in, and how long
     * producers have spent blocked on a full queue (monotonic ms). */
    double last_push_ms;
    double push_wait_ms;
    /* For stage reports (sl__queue_get_stats): items pushed, the time
     * consumers slept waiting for the head item, and `filled` over time
     * since init, for the mean occupancy. */
    uint64_t pushes;
    double pop_wait_ms;
    double first_pop_wait_ms; /* of that, the waits begun before any push (start-up) */
    sl__occupancy occupancy;
} sl_queue;

/* What a queue has seen since it was made (sl__queue_get_stats). */
typedef struct sl__queue_stats {
    size_t capacity;         /* its limit (sl__queue_set_limit) */
    size_t filled;           /* items held now */
    uint64_t pushes;
    double push_wait_ms;     /* producers blocked on a full queue, summed */
    double pop_wait_ms;      /* consumers asleep waiting for an item, summed */
    double first_pop_wait_ms; /* of that, the waits begun before any push (start-up) */
    double occupancy;        /* mean items held since the queue was made */
    double last_push_ms;     /* sl__now_ms of the last push (0: none) */
} sl__queue_stats;

/* Returns SL_OK, SL_EINVAL (capacity 0), SL_ENOMEM or SL_ETHREAD (a lock
 * or condition variable could not be made, or the monotonic clock set for
 * timed pops; the message then goes to err, which may be NULL). After a
 * failure nothing is left to free, and sl__queue_destroy and
 * sl__queue_close do nothing. */
int sl__queue_init(sl_queue *q, size_t capacity, sl__error *err);
void sl__queue_destroy(sl_queue *q);

/* Lets at most limit items (1 .. the capacity it was made with; clamped)
 * in at once from now on, for a tuner that grows a queue while it runs
 * without reallocating it. A raise wakes blocked producers; a cut only
 * holds back later pushes. */
void sl__queue_set_limit(sl_queue *q, size_t limit);
size_t sl__queue_limit(sl_queue *q);

/* The lowest sequence number whose push would block now (head + limit;
 * UINT64_MAX when closed): for a producer that must not wait on a
 * consumer it is keeping busy. It only grows while no limit is cut. */
uint64_t sl__queue_push_bound(sl_queue *q);
/* Places item with sequence number seq; blocks while seq >= head + limit.
 * Returns SL_OK or SL_ECLOSED (the item was not taken). */
int sl__queue_push(sl_queue *q, uint64_t seq, void *item);
/* For a single producer: pushes with the next sequence number in turn. */
int sl__queue_push_next(sl_queue *q, void *item);
/* The same without waiting: SL_ETIMEDOUT (item not taken) when full. */
int sl__queue_try_push_next(sl_queue *q, void *item);
/* Takes the next item in sequence order; timeout_ms < 0 waits forever, 0
 * does not wait at all.
 * Returns SL_OK, SL_ECLOSED (closed and nothing left in order),
 * SL_ETIMEDOUT or SL_ECANCELED (interrupted: nothing taken). seq may be
 * NULL. */
int sl__queue_pop(sl_queue *q, void **item, uint64_t *seq, int timeout_ms);
/* Takes the next item without waiting, only if its sequence number is
 * below bound. *seq is the head's number either way. SL_OK; SL_ETIMEDOUT
 * when it is not there yet, or when *seq >= bound; SL_ECLOSED when it
 * never will be; SL_ECANCELED when interrupted. */
int sl__queue_pop_before(sl_queue *q, void **item, uint64_t *seq, uint64_t bound);
/* Also safe on a queue whose init failed (it does nothing). */
void sl__queue_close(sl_queue *q);
/* Makes every pop, sleeping or to come, return SL_ECANCELED at once and
 * take nothing (items stay, for sl__queue_drain); producers are not
 * affected. For a consumer that must stop waiting while the pipeline runs
 * on. Safe from any thread; does nothing on a queue whose init failed. */
void sl__queue_interrupt(sl_queue *q);
/* Like sl__queue_interrupt, but for a while: pops return SL_ECANCELED
 * until sl__queue_unwake. For a consumer that a stop must wake and that a
 * later call resumes (a sink on the executor's thread). */
void sl__queue_wake(sl_queue *q);
void sl__queue_unwake(sl_queue *q);
/* Removes every item still held, calling free_item on each (after close and
 * join; no thread may use the queue meanwhile). */
void sl__queue_drain(sl_queue *q, void (*free_item)(void *));
/* Items currently held (for reports). */
size_t sl__queue_size(sl_queue *q);
/* Times a pop was woken from a wait so far (for reports). */
uint64_t sl__queue_pop_wakeups(sl_queue *q);
/* When the last item was pushed (sl__now_ms; 0: never), and the total ms
 * producers waited for room (for reports). */
void sl__queue_push_times(sl_queue *q, double *last_push_ms, double *push_wait_ms);
/* A snapshot of the queue's counters, for stage reports. */
void sl__queue_get_stats(sl_queue *q, sl__queue_stats *out);

#endif
