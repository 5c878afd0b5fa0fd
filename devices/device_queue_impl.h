/* device_queue_impl.h: the inside of a device queue, shared by
 * device_queue.c (waiting, the transfer and executor sides, stopping) and
 * device_queue_slots.c (making the slots, and growing the queue for a
 * tuner). Nothing outside those two files includes it. */
#ifndef SLUICE_DEVICES_DEVICE_QUEUE_IMPL_H
#define SLUICE_DEVICES_DEVICE_QUEUE_IMPL_H

#include <pthread.h>

#include "core/occupancy.h"
#include "devices/device_queue.h"

#define DQ_NAME_LEN 64

enum { SLOT_FREE, SLOT_ACQUIRED, SLOT_COMMITTED, SLOT_TAKEN, SLOT_LENT };

typedef struct dq_entry {
    int slot;                /* a batch: its slot; a marker: -1 */
    int status;              /* a marker's status */
    char msg[SL_ERRMSG_LEN]; /* an error marker's message */
} dq_entry;

struct sl__device_queue {
    char name[DQ_NAME_LEN];
    sl_device *dev;
    sl__dq_describe_fn describe;
    void *describe_arg;
    size_t ncolumns;
    sl_tensor_spec specs[SL_MAX_COLUMNS]; /* each slot's columns */
    size_t column_bytes[SL_MAX_COLUMNS];
    size_t slot_bytes;

    pthread_mutex_t lock;
    pthread_cond_t not_empty; /* an entry was added, or interrupted, or closed */
    pthread_cond_t room;      /* a slot or a marker's room came free, or interrupted, or closed */
    int sync_ready;           /* the three above were made (sl__dq_free destroys them) */

    /* The arrays have room for max_slots (sl__dq_grow may add slots up to
     * it); slots [0, nslots) have device memory. */
    sl__dq_slot *slots;
    unsigned char *state;     /* SLOT_*, to catch misuse */
    size_t nslots, max_slots;
    size_t limit;             /* slots in the queue's use at most (sl__dq_set_limit):
                               * nslots - lend_slots unless cut */
    size_t lend_slots;        /* of nslots and max_slots, the ones for lending */
    size_t nlent;             /* slots lent to the pipeline now */
    int *free_slots;          /* a stack of nfree free slot indices */
    size_t nfree;
    size_t acquired;          /* slots being filled */
    size_t filled;            /* committed slots in the ring */
    dq_entry *entries;        /* the ring: nentries, count from head */
    size_t nentries, head, count;
    size_t markers;           /* markers in the ring */
    size_t getnext_waiters, room_waiters;
    int interrupted, closed;
    int sticky;               /* 0, or the end or error GetNext returns from now on */
    char sticky_msg[SL_ERRMSG_LEN];
    double empty_since_ms;    /* when the ring last became empty */
    uint64_t batches_in, batches_out;
    double getnext_wait_ms, acquire_wait_ms;
    sl__occupancy occupancy; /* of `filled`, for the mean */
};

/* Slots the queue uses now: acquired, filled or taken (not free, not lent). */
size_t sl__dq_in_use(const sl__device_queue *q);
/* Puts a slot back on the free list, the lock held (waking the transfer
 * side when it should). */
void sl__dq_free_slot_locked(sl__device_queue *q, int i);
/* Turns a lent slot into an acquired one once the queue has room for it
 * (a wait like sl__dq_acquire's, with its returns), the lock not held. */
int sl__dq_take_lent(sl__device_queue *q, sl__dq_slot *slot, int64_t timeout_ms, sl__error *err);
/* A lent column came back (slot->lender's give_back). */
void sl__dq_give_back(sl__lender *l);
/* Checks the columns and sizes a slot; fills q's specs and sizes. */
int sl__dq_size_columns(sl__device_queue *q, const sl_tensor_spec *specs, size_t ncolumns,
                        sl__error *err);
/* Allocates the arrays (for max_slots) and the device memory of slots
 * [0, nslots), all free. */
int sl__dq_alloc_slots(sl__device_queue *q, sl__error *err);
/* Frees the device memory of every slot that has some, and the arrays. */
void sl__dq_free_slots(sl__device_queue *q);

#endif
