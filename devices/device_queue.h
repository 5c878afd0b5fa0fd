/* device_queue.h: a device's queue of input batches, MindSpore's data queue
 * `queue_name`. A bounded ring of slots made once, each holding one batch
 * in the device's memory (one block per column, of the batch's fixed
 * shape), so nothing is allocated per batch:
 *
 *   transfer thread: sl__dq_acquire a free slot, copy a batch into it,
 *                    sl__dq_commit it (or sl__dq_push_marker: end of
 *                    epoch, end of data, an error, in order with batches);
 *   executor:        sl__dq_get_next (GetNext) takes the oldest entry,
 *                    runs the step on the slot, sl__dq_release gives the
 *                    slot back.
 *
 * On a device that reads host memory a queue may also lend free slots to
 * the pipeline (lend_slots, sl__dq_lend), which stacks a batch straight
 * into one; the transfer thread then claims the slot (sl__dq_claim)
 * instead of copying the batch into another.
 *
 * Every wait blocks on a condition variable (no polling) with a timeout
 * (one longer than INT_MAX ms, 24 days, counts as INT_MAX ms).
 * sl__dq_interrupt wakes GetNext with SL_ECANCELED (and makes it return
 * that at once) until sl__dq_resume; the transfer side is not touched, so
 * a stopped sink resumes where it was. sl__dq_close ends the queue for
 * good (the transfer thread's waits return SL_ECLOSED). */
#ifndef SLUICE_DEVICES_DEVICE_QUEUE_H
#define SLUICE_DEVICES_DEVICE_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/tensor_impl.h"
#include "sluice/dataset.h"
#include "sluice/device.h"

/* One batch on the device: columns[i] is a tensor whose data is device
 * memory (do not release it; it belongs to the queue). */
typedef struct sl__dq_slot {
    int index;                          /* in the queue's ring */
    struct sl__device_queue *queue;     /* whose slot it is */
    sl__lender lender;                  /* while lent: tensors over it give back here */
    size_t lent_columns;                /* while lent: columns not yet given back */
    uint64_t batch;                     /* batches committed before this one */
    int64_t epoch, in_epoch;            /* the batch's place in the data (for traces):
                                         * its epoch and number within it */
    size_t ncolumns;
    sl_tensor columns[SL_MAX_COLUMNS];
} sl__dq_slot;

typedef struct sl__device_queue sl__device_queue;

/* Explains, on a GetNext timeout, what starves the queue (the transfer
 * thread's state and the pipeline's); writes at most len bytes. */
typedef void (*sl__dq_describe_fn)(void *arg, char *buf, size_t len);

/* Markers waiting in a queue at once, besides its batches. */
#define SL__DQ_MARKER_ROOM 4
/* Slots in a queue at most: more is a mistake (each holds a whole batch). */
#define SL__DQ_MAX_SLOTS 4096
/* Device bytes a queue makes for lending at most: big batches would hold
 * that memory for good, where the pool gives idle memory back. */
#define SL__DQ_LEND_BYTES ((size_t)64 << 20)

typedef struct sl__dq_options {
    const char *name;          /* queue_name, for messages ("cpu:0/train") */
    size_t capacity;           /* slots at most (>= 1) */
    size_t max_bytes;          /* device bytes at most for the slots (0: no cap);
                                * the queue has min(capacity, max_bytes / slot
                                * bytes) slots, at least 1 */
    sl__dq_describe_fn describe; /* may be NULL */
    void *describe_arg;
    size_t grow_to;            /* slots sl__dq_grow may add up to (0: none), within
                                * max_bytes; only they are allocated later */
    size_t lend_slots;         /* slots made besides, to lend to the pipeline
                                * (within max_bytes and SL__DQ_LEND_BYTES);
                                * 0: none. Only for a device that reads host
                                * memory. */
} sl__dq_options;

typedef struct sl__dq_stats {
    size_t slots;              /* in use at most: the limit (sl__dq_set_limit) */
    size_t slot_bytes;         /* device bytes per slot */
    uint64_t batches_in, batches_out;
    double getnext_wait_ms;    /* time GetNext waited for a filled slot */
    double acquire_wait_ms;    /* time the transfer thread waited for a free slot */
    size_t filled;             /* slots filled now */
    double occupancy;          /* the mean filled slots since the queue was made */
    /* Calls blocked in the queue now: GetNext, and the transfer side
     * waiting for room (acquire, claim, a marker). A test reads them to
     * know a call really waits before it wakes it. */
    size_t getnext_waiters, room_waiters;
} sl__dq_stats;

/* Makes a queue on d for batches of columns specs[0..ncolumns) (fixed
 * shapes, the batch dimension included), allocating every slot now (one
 * device block per column per slot). *out is yours (sl__dq_free); free it
 * before d. SL_EINVAL (capacity 0 or above SL__DQ_MAX_SLOTS, no columns
 * or too many, a shape not fixed), SL_ENOMEM or SL_ETHREAD, with the
 * queue's name in err. */
int sl__dq_new(sl__device_queue **out, sl_device *d, const sl_tensor_spec *specs,
               size_t ncolumns, const sl__dq_options *o, sl__error *err);
/* Frees the slots; nobody may be waiting on the queue. NULL is ignored. */
void sl__dq_free(sl__device_queue *q);
const char *sl__dq_name(const sl__device_queue *q);
sl_device *sl__dq_device(const sl__device_queue *q);

/* Transfer side. Waits (timeout_ms < 0: without limit; 0: not at all) for
 * a free slot: SL_OK, SL_ETIMEDOUT or SL_ECLOSED (final: the transfer
 * thread should stop), with a message naming the queue in err (may be
 * NULL). An interrupt does not end this wait. */
int sl__dq_acquire(sl__device_queue *q, sl__dq_slot **slot, int64_t timeout_ms,
                   sl__error *err);
/* Makes an acquired, filled slot the newest entry. */
void sl__dq_commit(sl__device_queue *q, sl__dq_slot *slot);
/* Gives back an acquired slot unfilled (the copy failed). */
void sl__dq_unacquire(sl__device_queue *q, sl__dq_slot *slot);
/* Lends a free slot to the pipeline, without waiting: NULL when none of
 * the lend_slots is free. Its lender (slot->lender) gets each of the
 * slot's columns back once (lent_columns counts them down); the last
 * frees the slot, unless sl__dq_claim took it. */
sl__dq_slot *sl__dq_lend(sl__device_queue *q);
/* Transfer side: takes the slot that cols (a batch's tensors, in the
 * slot's column order) were stacked into, when they are the whole of one
 * loan of q's and nobody else holds them; waits for room like
 * sl__dq_acquire, then releases the tensors and sets cols[i] NULL: the
 * slot (*slot) is acquired and filled, ready for sl__dq_commit. SL_OK
 * with *slot NULL, nothing touched, when they are not such a loan: copy
 * the batch instead. Else sl__dq_acquire's returns. */
int sl__dq_claim(sl__device_queue *q, sl_tensor **cols, sl__dq_slot **slot, int64_t timeout_ms,
                 sl__error *err);
/* Appends a marker after the batches committed so far: SL_END_OF_EPOCH,
 * SL_END_OF_DATA or an error status with its message (marker; may be NULL
 * for the first two). A marker takes no slot, but at most
 * SL__DQ_MARKER_ROOM of them wait in the queue at once: past that, waits
 * for room like sl__dq_acquire; same returns, the reason in err. */
int sl__dq_push_marker(sl__device_queue *q, int status, const sl__error *marker,
                       int64_t timeout_ms, sl__error *err);

/* GetNext: takes the oldest entry, waiting at most timeout_ms (< 0:
 * without limit). SL_OK with *slot (give it back with sl__dq_release),
 * SL_END_OF_EPOCH, SL_END_OF_DATA (and from then on), an error status
 * (the message in err; and from then on), SL_ECANCELED when interrupted,
 * or SL_ETIMEDOUT with err saying which queue is empty, for how long, and
 * what the describe function says starves it. */
int sl__dq_get_next(sl__device_queue *q, sl__dq_slot **slot, int64_t timeout_ms,
                    sl__error *err);
void sl__dq_release(sl__device_queue *q, sl__dq_slot *slot);
/* Entries waiting for GetNext now: batches and markers. */
size_t sl__dq_pending(sl__device_queue *q);
/* GetNext's timeout error for q as it is now (what starves it, from the
 * describe function) into err; returns SL_ETIMEDOUT. For a caller that
 * did the waiting itself (a transfer run on the executor's thread). */
int sl__dq_timeout_error(sl__device_queue *q, sl__error *err);

/* Wakes GetNext with SL_ECANCELED, and makes later GetNext calls return
 * it at once, until sl__dq_resume; the transfer side waits on. For a stop
 * that a later sink resumes from. Thread-safe. */
void sl__dq_interrupt(sl__device_queue *q);
void sl__dq_resume(sl__device_queue *q);
/* Ends the queue for good: waiters and later acquires/pushes get
 * SL_ECLOSED; GetNext still drains what was committed, then returns
 * SL_ECLOSED. Thread-safe. */
void sl__dq_close(sl__device_queue *q);

void sl__dq_get_stats(sl__device_queue *q, sl__dq_stats *out);

/* For a tuner (devices/dq_tune.h), on the transfer thread: gives the queue
 * slots up to `to` (at most what grow_to and max_bytes allow), allocating
 * the new ones' device memory; SL_OK, or the device's failure in err with
 * the queue as it was. Also lifts a limit. One caller at a time. */
int sl__dq_grow(sl__device_queue *q, size_t to, sl__error *err);
/* Lets at most limit slots (>= 1) be in use from now on; the slots stay
 * allocated (a later sl__dq_grow lifts it). sl__dq_stats.slots reports it. */
void sl__dq_set_limit(sl__device_queue *q, size_t limit);
/* The most slots the queue may grow to. */
size_t sl__dq_max_slots(const sl__device_queue *q);

#endif
