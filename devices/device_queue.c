/* device_queue.c: a device's queue of input batches (device_queue.h).
 *
 * Slots hold batches in device memory and are made once; a slot is free,
 * acquired (being filled by the transfer thread), committed (waiting in the
 * ring for GetNext), taken (the executor is running on it) or lent (the
 * pipeline stacks a batch into it; device_queue_lend.c). The ring of
 * entries keeps batches and markers in the order they were committed; a
 * marker takes an entry but no slot, so the ring has room for every slot
 * plus SL__DQ_MARKER_ROOM markers and a commit never waits.
 *
 * One mutex; GetNext sleeps on not_empty, acquire and marker pushes on
 * room; every wait is inside a loop that re-checks its condition. Nothing
 * is allocated after sl__dq_new, and the describe function and message
 * formatting run after the lock is released. */
#include "devices/device_queue.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "devices/device_impl.h"
#include "devices/device_queue_impl.h"

#define DQ_DESCRIBE_LEN 256

/* What the queue holds at one moment, for messages made after unlocking. */
typedef struct dq_snapshot {
    size_t slots, filled, acquired, taken, free, lent, markers;
    uint64_t batches_out;
    double empty_ms;
} dq_snapshot;

/* --- making and freeing ------------------------------------------------ */

static int dq_init_sync(sl__device_queue *q, sl__error *err)
{
    pthread_condattr_t attr;
    int e, rc;
    if ((e = pthread_mutex_init(&q->lock, NULL)) != 0)
        return sl__pthread_errf(err, e, "pthread_mutex_init");
    /* Timed waits measure against the monotonic clock, immune to clock
     * jumps; without it their deadlines would be wrong, so that fails too. */
    if ((e = pthread_condattr_init(&attr)) != 0) {
        rc = sl__pthread_errf(err, e, "pthread_condattr_init");
        goto no_attr;
    }
    if ((e = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)) != 0) {
        rc = sl__pthread_errf(err, e, "pthread_condattr_setclock(CLOCK_MONOTONIC)");
        goto no_not_empty;
    }
    if ((e = pthread_cond_init(&q->not_empty, &attr)) != 0) {
        rc = sl__pthread_errf(err, e, "pthread_cond_init");
        goto no_not_empty;
    }
    if ((e = pthread_cond_init(&q->room, &attr)) != 0) {
        rc = sl__pthread_errf(err, e, "pthread_cond_init");
        goto no_room;
    }
    pthread_condattr_destroy(&attr);
    q->sync_ready = 1;
    return SL_OK;
no_room:
    pthread_cond_destroy(&q->not_empty);
no_not_empty:
    pthread_condattr_destroy(&attr);
no_attr:
    pthread_mutex_destroy(&q->lock);
    return rc;
}

void sl__dq_free(sl__device_queue *q)
{
    if (!q)
        return;
    sl__dq_free_slots(q);
    if (q->sync_ready) {
        pthread_cond_destroy(&q->room);
        pthread_cond_destroy(&q->not_empty);
        pthread_mutex_destroy(&q->lock);
    }
    free(q);
}

int sl__dq_new(sl__device_queue **out, sl_device *d, const sl_tensor_spec *specs,
               size_t ncolumns, const sl__dq_options *o, sl__error *err)
{
    sl__device_queue *q;
    int rc;

    *out = NULL;
    if (!o)
        return sl__errf(err, SL_EINVAL, "device queue on %s: no options", sl_device_name(d));
    q = calloc(1, sizeof *q);
    if (!q)
        return sl__errf(err, SL_ENOMEM, "device queue '%s': out of memory",
                        o->name ? o->name : "");
    snprintf(q->name, sizeof q->name, "%s", o->name ? o->name : sl_device_name(d));
    q->dev = d;
    sl__occupancy_start(&q->occupancy, sl__now_ms());
    q->describe = o->describe;
    q->describe_arg = o->describe_arg;
    if (o->capacity == 0) {
        rc = sl__errf(err, SL_EINVAL, "device queue '%s': queue capacity must be >= 1", q->name);
        goto fail;
    }
    if (o->capacity > SL__DQ_MAX_SLOTS) {
        rc = sl__errf(err, SL_EINVAL, "device queue '%s': queue capacity %zu is more than %d",
                      q->name, o->capacity, SL__DQ_MAX_SLOTS);
        goto fail;
    }
    if (o->grow_to > SL__DQ_MAX_SLOTS || o->lend_slots > SL__DQ_MAX_SLOTS) {
        rc = sl__errf(err, SL_EINVAL,
                      "device queue '%s': grow_to %zu or lend_slots %zu is more than %d",
                      q->name, o->grow_to, o->lend_slots, SL__DQ_MAX_SLOTS);
        goto fail;
    }
    rc = sl__dq_size_columns(q, specs, ncolumns, err);
    if (rc != SL_OK)
        goto fail;
    q->nslots = o->capacity;
    q->max_slots = o->grow_to > o->capacity ? o->grow_to : o->capacity;
    if (o->max_bytes > 0 && q->slot_bytes > 0 && o->max_bytes / q->slot_bytes < q->max_slots)
        q->max_slots = o->max_bytes / q->slot_bytes;
    if (q->max_slots == 0)
        q->max_slots = 1; /* max_bytes below one batch: one slot still has to fit */
    if (q->nslots > q->max_slots)
        q->nslots = q->max_slots;
    /* Slots to lend come on top, within SL__DQ_LEND_BYTES and what
     * max_bytes leaves. */
    q->lend_slots = o->lend_slots;
    if (q->slot_bytes > 0 && q->lend_slots > SL__DQ_LEND_BYTES / q->slot_bytes)
        q->lend_slots = SL__DQ_LEND_BYTES / q->slot_bytes;
    if (o->max_bytes > 0 && q->slot_bytes > 0) {
        size_t room = o->max_bytes / q->slot_bytes;
        room = room > q->max_slots ? room - q->max_slots : 0;
        if (q->lend_slots > room)
            q->lend_slots = room;
    }
    q->nslots += q->lend_slots;
    q->max_slots += q->lend_slots;
    rc = dq_init_sync(q, err);
    if (rc != SL_OK) {
        sl__err_prefix(err, "device queue '%s': ", q->name);
        goto fail;
    }
    rc = sl__dq_alloc_slots(q, err);
    if (rc != SL_OK)
        goto fail;
    q->empty_since_ms = sl__now_ms();
    *out = q;
    return SL_OK;
fail:
    sl__dq_free(q);
    return rc;
}

const char *sl__dq_name(const sl__device_queue *q) { return q->name; }
sl_device *sl__dq_device(const sl__device_queue *q) { return q->dev; }

/* --- waiting ------------------------------------------------------------ */

static void dq_deadline(struct timespec *deadline, int64_t timeout_ms)
{
    sl__deadline_ms(deadline, timeout_ms > INT_MAX ? INT_MAX : (int)timeout_ms);
}

/* One wait on cond, the lock held (timeout_ms < 0: without limit).
 * Returns 1 once the deadline has passed. */
static int dq_wait(sl__device_queue *q, pthread_cond_t *cond, int64_t timeout_ms,
                   const struct timespec *deadline)
{
    if (timeout_ms < 0) {
        pthread_cond_wait(cond, &q->lock);
        return 0;
    }
    return pthread_cond_timedwait(cond, &q->lock, deadline) == ETIMEDOUT;
}

static void dq_snapshot_locked(const sl__device_queue *q, dq_snapshot *s)
{
    s->slots = q->nslots;
    s->filled = q->filled;
    s->acquired = q->acquired;
    s->free = q->nfree;
    s->lent = q->nlent;
    s->taken = sl__dq_in_use(q) - q->acquired - q->filled;
    s->markers = q->markers;
    s->batches_out = q->batches_out;
    s->empty_ms = q->count == 0 ? sl__now_ms() - q->empty_since_ms : 0;
}

/* "2 slots: 0 filled, 1 being filled, 1 held by GetNext, 0 free; 37
 * batches delivered", and the markers waiting if there are any. */
static void dq_snapshot_str(char *buf, size_t len, const dq_snapshot *s)
{
    int n = snprintf(buf, len,
                     "%zu slots: %zu filled, %zu being filled, %zu held by GetNext, %zu free; "
                     "%llu batches delivered",
                     s->slots, s->filled, s->acquired, s->taken, s->free,
                     (unsigned long long)s->batches_out);
    if (s->lent > 0 && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, "; %zu lent to the pipeline", s->lent);
    if (s->markers > 0 && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, "; %zu markers waiting", s->markers);
}

/* Waits, the lock held, until want(q) or the queue is closed: SL_OK,
 * SL_ECLOSED or SL_ETIMEDOUT. For the transfer side, which an interrupt
 * does not touch: a stop ends GetNext's wait, while the transfer thread
 * keeps its place for the next call (only a close ends it). */
static int dq_wait_room(sl__device_queue *q, int (*want)(const sl__device_queue *),
                        int64_t timeout_ms)
{
    struct timespec deadline;
    double t0 = 0;
    int rc, waited = 0, timed_out = 0;
    if (timeout_ms > 0)
        dq_deadline(&deadline, timeout_ms);
    for (;;) {
        if (q->closed) {
            rc = SL_ECLOSED;
            break;
        }
        if (want(q)) {
            rc = SL_OK;
            break;
        }
        if (timeout_ms == 0 || timed_out) {
            rc = SL_ETIMEDOUT;
            break;
        }
        if (!waited) {
            t0 = sl__now_ms();
            waited = 1;
        }
        q->room_waiters++;
        timed_out = dq_wait(q, &q->room, timeout_ms, &deadline);
        q->room_waiters--;
    }
    if (waited)
        q->acquire_wait_ms += sl__now_ms() - t0;
    return rc;
}

/* The message for a transfer-side wait that did not get what it waited for. */
static void dq_room_err(sl__device_queue *q, sl__error *err, int rc, const char *what,
                        int64_t timeout_ms, const dq_snapshot *s)
{
    char counts[192];
    dq_snapshot_str(counts, sizeof counts, s);
    if (rc == SL_ECLOSED)
        sl__errf(err, rc, "%s: queue '%s' is closed", what, q->name);
    else if (rc == SL_ECANCELED)
        sl__errf(err, rc, "%s: queue '%s' is interrupted (until it is resumed)", what, q->name);
    else
        sl__errf(err, rc, "%s: queue '%s' had no room for %lld ms (%s); is GetNext being called?",
                 what, q->name, (long long)timeout_ms, counts);
}

/* --- the transfer side -------------------------------------------------- */

size_t sl__dq_in_use(const sl__device_queue *q) { return q->nslots - q->nfree - q->nlent; }

/* Fewer than limit slots in use: room for one more batch. */
static int has_room(const sl__device_queue *q) { return sl__dq_in_use(q) < q->limit; }
/* Room, and a free slot to fill (there is one whenever there is room,
 * since at most lend_slots are lent). */
static int has_free_slot(const sl__device_queue *q) { return q->nfree > 0 && has_room(q); }
static int has_marker_room(const sl__device_queue *q) { return q->markers < SL__DQ_MARKER_ROOM; }

/* Acquires a slot once the queue has room for one more batch: a free one,
 * or, when lent is set, that lent slot (device_queue_lend.c). */
static int dq_acquire_slot(sl__device_queue *q, sl__dq_slot *lent, sl__dq_slot **slot,
                           int64_t timeout_ms, sl__error *err)
{
    dq_snapshot s;
    int rc;
    *slot = NULL;
    memset(&s, 0, sizeof s);
    pthread_mutex_lock(&q->lock);
    rc = dq_wait_room(q, lent ? has_room : has_free_slot, timeout_ms);
    if (rc == SL_OK) {
        int i = lent ? lent->index : q->free_slots[--q->nfree];
        SL_ASSERT(q->state[i] == (lent ? SLOT_LENT : SLOT_FREE));
        if (lent)
            q->nlent--;
        q->state[i] = SLOT_ACQUIRED;
        q->acquired++;
        *slot = &q->slots[i];
    } else {
        dq_snapshot_locked(q, &s);
    }
    pthread_mutex_unlock(&q->lock);
    if (rc != SL_OK)
        dq_room_err(q, err, rc, lent ? "claiming a lent slot" : "acquiring a slot", timeout_ms,
                    &s);
    return rc;
}

int sl__dq_acquire(sl__device_queue *q, sl__dq_slot **slot, int64_t timeout_ms, sl__error *err)
{
    return dq_acquire_slot(q, NULL, slot, timeout_ms, err);
}

/* Appends an entry, the lock held; wakes a sleeping GetNext. */
static void dq_append_locked(sl__device_queue *q, int slot, int status, const char *msg)
{
    dq_entry *e;
    /* Batches never outnumber slots and markers never exceed their room. */
    SL_ASSERT(q->count < q->nentries);
    e = &q->entries[(q->head + q->count) % q->nentries];
    e->slot = slot;
    e->status = status;
    e->msg[0] = '\0';
    if (msg)
        snprintf(e->msg, sizeof e->msg, "%s", msg);
    q->count++;
    if (q->getnext_waiters)
        pthread_cond_signal(&q->not_empty);
}

int sl__dq_take_lent(sl__device_queue *q, sl__dq_slot *slot, int64_t timeout_ms, sl__error *err)
{
    sl__dq_slot *taken;
    return dq_acquire_slot(q, slot, &taken, timeout_ms, err);
}

void sl__dq_commit(sl__device_queue *q, sl__dq_slot *slot)
{
    pthread_mutex_lock(&q->lock);
    SL_ASSERT(q->state[slot->index] == SLOT_ACQUIRED);
    q->state[slot->index] = SLOT_COMMITTED;
    q->acquired--;
    sl__occupancy_note(&q->occupancy, q->filled, sl__now_ms());
    q->filled++;
    slot->batch = q->batches_in++;
    dq_append_locked(q, slot->index, SL_OK, NULL);
    pthread_mutex_unlock(&q->lock);
}

/* Wakes the transfer side once half the slots are free, or when GetNext
 * has nothing left to take: a transfer thread woken for every slot would
 * cost two context switches a step, which a full queue does not need (it
 * still holds batches for the steps while the transfer thread refills). */
void sl__dq_free_slot_locked(sl__device_queue *q, int i)
{
    q->state[i] = SLOT_FREE;
    q->free_slots[q->nfree++] = i;
    /* Broadcast: marker pushes wait on the same condition for another reason. */
    size_t in_use = sl__dq_in_use(q);
    size_t usable = in_use < q->limit ? q->limit - in_use : 0;
    if (q->room_waiters && (2 * usable >= q->limit || q->filled == 0))
        pthread_cond_broadcast(&q->room);
}

void sl__dq_unacquire(sl__device_queue *q, sl__dq_slot *slot)
{
    pthread_mutex_lock(&q->lock);
    SL_ASSERT(q->state[slot->index] == SLOT_ACQUIRED);
    q->acquired--;
    sl__dq_free_slot_locked(q, slot->index);
    pthread_mutex_unlock(&q->lock);
}

int sl__dq_push_marker(sl__device_queue *q, int status, const sl__error *marker,
                       int64_t timeout_ms, sl__error *err)
{
    char msg[SL_ERRMSG_LEN];
    dq_snapshot s;
    int rc;
    SL_ASSERT(status == SL_END_OF_EPOCH || status == SL_END_OF_DATA || status < 0);
    msg[0] = '\0';
    memset(&s, 0, sizeof s);
    if (status < 0) {
        /* An error must reach GetNext with words, never as a bare code. */
        if (marker && marker->msg[0])
            snprintf(msg, sizeof msg, "%s", marker->msg);
        else
            snprintf(msg, sizeof msg, "queue '%s': %s (%s) from upstream, without a message",
                     q->name, sl_status_name(status), sl_strerror(status));
    }
    pthread_mutex_lock(&q->lock);
    rc = dq_wait_room(q, has_marker_room, timeout_ms);
    if (rc == SL_OK) {
        q->markers++;
        dq_append_locked(q, -1, status, msg);
    } else {
        dq_snapshot_locked(q, &s);
    }
    pthread_mutex_unlock(&q->lock);
    if (rc != SL_OK)
        dq_room_err(q, err, rc, "pushing a marker", timeout_ms, &s);
    return rc;
}

/* --- the executor side -------------------------------------------------- */

/* Takes the head entry, the lock held. Returns SL_OK with *slot for a
 * batch, or the marker's status (its message copied into msg). */
static int dq_take_locked(sl__device_queue *q, sl__dq_slot **slot, char *msg, size_t len)
{
    dq_entry *e = &q->entries[q->head];
    int rc = SL_OK;
    q->head = (q->head + 1) % q->nentries;
    q->count--;
    if (e->slot >= 0) {
        SL_ASSERT(q->state[e->slot] == SLOT_COMMITTED);
        q->state[e->slot] = SLOT_TAKEN;
        sl__occupancy_note(&q->occupancy, q->filled, sl__now_ms());
        q->filled--;
        q->batches_out++;
        *slot = &q->slots[e->slot];
    } else {
        rc = e->status;
        snprintf(msg, len, "%s", e->msg);
        q->markers--;
        if (q->room_waiters)
            pthread_cond_broadcast(&q->room);
        /* The end of data and errors stay: every later GetNext returns them. */
        if (rc == SL_END_OF_DATA || rc < 0) {
            q->sticky = rc;
            snprintf(q->sticky_msg, sizeof q->sticky_msg, "%s", e->msg);
        }
    }
    if (q->count == 0)
        q->empty_since_ms = sl__now_ms();
    /* Pass the wake-up on: another sleeping GetNext may take what is left,
     * or must see the sticky end. */
    if (q->getnext_waiters && (q->count > 0 || q->sticky))
        pthread_cond_signal(&q->not_empty);
    return rc;
}

static void dq_timeout_err(sl__device_queue *q, sl__error *err, const dq_snapshot *s)
{
    char counts[192], why[DQ_DESCRIBE_LEN];
    why[0] = '\0';
    if (q->describe)
        q->describe(q->describe_arg, why, sizeof why);
    if (!why[0])
        snprintf(why, sizeof why, "nothing describes what feeds this queue");
    dq_snapshot_str(counts, sizeof counts, s);
    sl__errf(err, SL_ETIMEDOUT, "GetNext: queue '%s' has been empty for %.2f s (%s); %s",
             q->name, s->empty_ms * 1e-3, counts, why);
}

int sl__dq_get_next(sl__device_queue *q, sl__dq_slot **slot, int64_t timeout_ms,
                    sl__error *err)
{
    char msg[SL_ERRMSG_LEN];
    struct timespec deadline;
    dq_snapshot s;
    double t0 = 0;
    int rc, waited = 0, timed_out = 0;

    *slot = NULL;
    msg[0] = '\0';
    memset(&s, 0, sizeof s);
    if (timeout_ms > 0)
        dq_deadline(&deadline, timeout_ms);
    pthread_mutex_lock(&q->lock);
    /* An interrupt comes first (stop taking now); then a sticky end; then
     * what was committed, drained even after a close. */
    for (;;) {
        if (q->interrupted) {
            rc = SL_ECANCELED;
            break;
        }
        if (q->sticky) {
            rc = q->sticky;
            snprintf(msg, sizeof msg, "%s", q->sticky_msg);
            break;
        }
        if (q->count > 0) {
            rc = dq_take_locked(q, slot, msg, sizeof msg);
            break;
        }
        if (q->closed) {
            rc = SL_ECLOSED;
            break;
        }
        if (timeout_ms == 0 || timed_out) {
            rc = SL_ETIMEDOUT;
            dq_snapshot_locked(q, &s);
            break;
        }
        if (!waited) {
            t0 = sl__now_ms();
            waited = 1;
        }
        q->getnext_waiters++;
        timed_out = dq_wait(q, &q->not_empty, timeout_ms, &deadline);
        q->getnext_waiters--;
    }
    if (waited)
        q->getnext_wait_ms += sl__now_ms() - t0;
    pthread_mutex_unlock(&q->lock);

    switch (rc) {
    case SL_OK:
        break;
    case SL_END_OF_EPOCH:
        sl__errf(err, rc, "GetNext: queue '%s': end of epoch", q->name);
        break;
    case SL_END_OF_DATA:
        sl__errf(err, rc, "GetNext: queue '%s': end of data", q->name);
        break;
    case SL_ECANCELED:
        sl__errf(err, rc, "GetNext: queue '%s' is interrupted (until it is resumed)", q->name);
        break;
    case SL_ECLOSED:
        sl__errf(err, rc, "GetNext: queue '%s' is closed and every batch committed before has "
                          "been delivered",
                 q->name);
        break;
    case SL_ETIMEDOUT:
        dq_timeout_err(q, err, &s);
        break;
    default: /* an error marker: its message as upstream wrote it */
        sl__errf(err, rc, "%s", msg);
        break;
    }
    return rc;
}

size_t sl__dq_pending(sl__device_queue *q)
{
    size_t n;
    pthread_mutex_lock(&q->lock);
    n = q->count;
    pthread_mutex_unlock(&q->lock);
    return n;
}

int sl__dq_timeout_error(sl__device_queue *q, sl__error *err)
{
    dq_snapshot s;
    pthread_mutex_lock(&q->lock);
    dq_snapshot_locked(q, &s);
    pthread_mutex_unlock(&q->lock);
    dq_timeout_err(q, err, &s);
    return SL_ETIMEDOUT;
}

void sl__dq_release(sl__device_queue *q, sl__dq_slot *slot)
{
    pthread_mutex_lock(&q->lock);
    SL_ASSERT(q->state[slot->index] == SLOT_TAKEN);
    sl__dq_free_slot_locked(q, slot->index);
    pthread_mutex_unlock(&q->lock);
}

/* --- stopping ------------------------------------------------------------ */

void sl__dq_interrupt(sl__device_queue *q)
{
    pthread_mutex_lock(&q->lock);
    q->interrupted = 1;
    pthread_cond_broadcast(&q->not_empty);
    pthread_mutex_unlock(&q->lock);
}

void sl__dq_resume(sl__device_queue *q)
{
    pthread_mutex_lock(&q->lock);
    q->interrupted = 0;
    pthread_mutex_unlock(&q->lock);
}

void sl__dq_close(sl__device_queue *q)
{
    pthread_mutex_lock(&q->lock);
    q->closed = 1;
    pthread_cond_broadcast(&q->not_empty);
    pthread_cond_broadcast(&q->room);
    pthread_mutex_unlock(&q->lock);
}

void sl__dq_get_stats(sl__device_queue *q, sl__dq_stats *out)
{
    pthread_mutex_lock(&q->lock);
    out->slots = q->limit;
    out->slot_bytes = q->slot_bytes;
    out->batches_in = q->batches_in;
    out->batches_out = q->batches_out;
    out->getnext_wait_ms = q->getnext_wait_ms;
    out->acquire_wait_ms = q->acquire_wait_ms;
    out->filled = q->filled;
    out->occupancy = sl__occupancy_mean(&q->occupancy, q->filled, sl__now_ms());
    out->getnext_waiters = q->getnext_waiters;
    out->room_waiters = q->room_waiters;
    pthread_mutex_unlock(&q->lock);
}
