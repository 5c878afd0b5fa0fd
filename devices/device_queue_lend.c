/* device_queue_lend.c: lending a device queue's free slots to the pipeline
 * (device_queue.h), on a device whose memory the host reads and writes.
 *
 * A lent slot belongs to the batch stacked into it: its columns are
 * tensors over the slot's memory (sl__tensor_lent) that travel through the
 * channel like any batch. The transfer thread claims the slot when the
 * batch reaches it, and commits it without a copy. A batch that never
 * reaches it (the iterator is freed, a later map replaces a column) gives
 * its columns back as its tensors go, and the last one frees the slot. So
 * a slot is never lost, and a lender that has nothing free only costs the
 * copy it would have saved. */
#include <stddef.h>

#include "devices/device_queue_impl.h"

sl__dq_slot *sl__dq_lend(sl__device_queue *q)
{
    sl__dq_slot *slot = NULL;
    pthread_mutex_lock(&q->lock);
    if (q->nlent < q->lend_slots && q->nfree > 0 && !q->closed) {
        int i = q->free_slots[--q->nfree];
        SL_ASSERT(q->state[i] == SLOT_FREE);
        q->state[i] = SLOT_LENT;
        q->nlent++;
        slot = &q->slots[i];
        slot->lent_columns = q->ncolumns;
    }
    pthread_mutex_unlock(&q->lock);
    return slot;
}

static sl__dq_slot *slot_of(sl__lender *l)
{
    return (sl__dq_slot *)((char *)l - offsetof(sl__dq_slot, lender));
}

void sl__dq_give_back(sl__lender *l)
{
    sl__dq_slot *slot = slot_of(l);
    sl__device_queue *q = slot->queue;
    pthread_mutex_lock(&q->lock);
    /* A claimed slot's tensors come back after the claim: nothing to do. */
    if (q->state[slot->index] == SLOT_LENT && --slot->lent_columns == 0) {
        q->nlent--;
        sl__dq_free_slot_locked(q, slot->index);
    }
    pthread_mutex_unlock(&q->lock);
}

/* The slot cols were stacked into, if they are all of one whole loan of
 * q's and only the caller holds them; else NULL. */
static sl__dq_slot *whole_loan(sl__device_queue *q, sl_tensor *const *cols)
{
    sl__dq_slot *slot;
    int whole = 1;
    if (!cols[0] || !cols[0]->lender || cols[0]->lender->give_back != sl__dq_give_back)
        return NULL;
    slot = slot_of(cols[0]->lender);
    if (slot->queue != q)
        return NULL;
    pthread_mutex_lock(&q->lock);
    if (q->state[slot->index] != SLOT_LENT || slot->lent_columns != q->ncolumns)
        whole = 0;
    for (size_t c = 0; c < q->ncolumns && whole; c++)
        whole = cols[c] && cols[c]->lender == &slot->lender &&
                cols[c]->data == slot->columns[c].data && cols[c]->nbytes == q->column_bytes[c] &&
                atomic_load(&cols[c]->refcount) == 1;
    pthread_mutex_unlock(&q->lock);
    return whole ? slot : NULL;
}

int sl__dq_claim(sl__device_queue *q, sl_tensor **cols, sl__dq_slot **slot, int64_t timeout_ms,
                 sl__error *err)
{
    sl__dq_slot *s = whole_loan(q, cols);
    int rc;
    *slot = NULL;
    if (!s)
        return SL_OK; /* not a loan: the caller copies */
    rc = sl__dq_take_lent(q, s, timeout_ms, err);
    if (rc != SL_OK)
        return rc;
    /* Acquired now, so these releases do not give the slot back. */
    for (size_t c = 0; c < q->ncolumns; c++) {
        sl_tensor_release(cols[c]);
        cols[c] = NULL;
    }
    *slot = s;
    return SL_OK;
}
