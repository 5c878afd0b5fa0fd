/* device_queue_slots.c: a device queue's slots (device_queue_impl.h): made
 * when the queue is, and added later by sl__dq_grow for a tuner. The
 * arrays that index slots are made once, with room for max_slots, so that
 * growing allocates device memory only, and outside the lock: the
 * executor and the transfer thread never see a slot before it is whole. */
#include <stdlib.h>
#include <string.h>

#include "devices/device_impl.h"
#include "devices/device_queue_impl.h"

int sl__dq_size_columns(sl__device_queue *q, const sl_tensor_spec *specs, size_t ncolumns,
                        sl__error *err)
{
    char shape[96];
    if (ncolumns == 0 || ncolumns > SL_MAX_COLUMNS)
        return sl__errf(err, SL_EINVAL, "device queue '%s': %zu columns (1 to %d)", q->name,
                        ncolumns, SL_MAX_COLUMNS);
    q->ncolumns = ncolumns;
    q->slot_bytes = 0;
    for (size_t c = 0; c < ncolumns; c++) {
        size_t numel;
        int rc = sl__shape_numel(specs[c].ndim, specs[c].shape, specs[c].dtype, &numel,
                                 &q->column_bytes[c]);
        if (rc != SL_OK) {
            int ndim = specs[c].ndim;
            ndim = ndim < 0 ? 0 : ndim > SL_MAX_DIMS ? SL_MAX_DIMS : ndim;
            sl_shape_str(shape, sizeof shape, ndim, specs[c].shape);
            return sl__errf(err, rc,
                            "device queue '%s': column %zu is %s %s, which cannot be a device "
                            "slot's (a slot has a fixed shape: no unknown (-1) sizes)",
                            q->name, c, sl_dtype_name(specs[c].dtype), shape);
        }
        if (q->column_bytes[c] > (size_t)-1 - q->slot_bytes)
            return sl__errf(err, SL_ENOMEM, "device queue '%s': a batch's size overflows",
                            q->name);
        q->slot_bytes += q->column_bytes[c];
        q->specs[c] = specs[c]; /* for slots made later (sl__dq_grow) */
    }
    return SL_OK;
}

/* Gives slots [from, to) their device memory. On failure, frees what it
 * gave, so those slots are as they were. */
static int alloc_device_slots(sl__device_queue *q, size_t from, size_t to, sl__error *err)
{
    for (size_t i = from; i < to; i++) {
        sl__dq_slot *s = &q->slots[i];
        s->index = (int)i;
        s->queue = q;
        s->lender.give_back = sl__dq_give_back;
        s->ncolumns = q->ncolumns;
        for (size_t c = 0; c < q->ncolumns; c++) {
            void *mem;
            int rc = sl__device_alloc(q->dev, q->column_bytes[c], &mem);
            if (rc != SL_OK) {
                sl__errf(err, rc,
                         "device queue '%s': allocating slot %zu's column %zu (%zu bytes) on "
                         "%s: %s",
                         q->name, i, c, q->column_bytes[c], sl_device_name(q->dev),
                         sl_strerror(rc));
                for (size_t k = from; k <= i; k++)
                    for (size_t j = 0; j < (k == i ? c : q->ncolumns); j++)
                        sl__device_free(q->dev, q->slots[k].columns[j].data, q->column_bytes[j]);
                memset(&q->slots[from], 0, (to - from) * sizeof *q->slots);
                return rc;
            }
            /* The shape was checked by sl__dq_size_columns, so this cannot fail. */
            rc = sl__tensor_init_external(&s->columns[c], q->specs[c].dtype, q->specs[c].ndim,
                                          q->specs[c].shape, mem);
            SL_ASSERT(rc == SL_OK);
        }
    }
    return SL_OK;
}

int sl__dq_alloc_slots(sl__device_queue *q, sl__error *err)
{
    int rc;
    q->nentries = q->max_slots + SL__DQ_MARKER_ROOM;
    q->slots = calloc(q->max_slots, sizeof *q->slots);
    q->state = calloc(q->max_slots, sizeof *q->state);
    q->free_slots = calloc(q->max_slots, sizeof *q->free_slots);
    q->entries = calloc(q->nentries, sizeof *q->entries);
    if (!q->slots || !q->state || !q->free_slots || !q->entries)
        return sl__errf(err, SL_ENOMEM, "device queue '%s': out of memory for %zu slots",
                        q->name, q->max_slots);
    rc = alloc_device_slots(q, 0, q->nslots, err);
    if (rc != SL_OK) {
        q->nslots = 0;
        return rc;
    }
    /* Pushed in reverse so slot 0 is acquired first (easier to follow). */
    for (size_t i = 0; i < q->nslots; i++)
        q->free_slots[q->nslots - 1 - i] = (int)i;
    q->nfree = q->nslots;
    q->limit = q->nslots - q->lend_slots;
    return SL_OK;
}

void sl__dq_free_slots(sl__device_queue *q)
{
    if (q->slots) {
        for (size_t i = 0; i < q->nslots; i++)
            for (size_t c = 0; c < q->ncolumns; c++)
                sl__device_free(q->dev, q->slots[i].columns[c].data, q->column_bytes[c]);
    }
    free(q->entries);
    free(q->free_slots);
    free(q->state);
    free(q->slots);
}

size_t sl__dq_max_slots(const sl__device_queue *q) { return q->max_slots - q->lend_slots; }

int sl__dq_grow(sl__device_queue *q, size_t to, sl__error *err)
{
    size_t from;
    int rc;
    /* In slots, the lent ones included; `to` counts the queue's own. */
    pthread_mutex_lock(&q->lock);
    from = q->nslots;
    pthread_mutex_unlock(&q->lock);
    if (to > sl__dq_max_slots(q))
        to = sl__dq_max_slots(q);
    if (to + q->lend_slots <= from) {
        sl__dq_set_limit(q, to);
        return SL_OK;
    }
    to += q->lend_slots;
    /* Slots past nslots are nobody's yet: filled without the lock. */
    rc = alloc_device_slots(q, from, to, err);
    if (rc != SL_OK)
        return rc;
    pthread_mutex_lock(&q->lock);
    for (size_t i = from; i < to; i++) {
        q->state[i] = SLOT_FREE;
        q->free_slots[q->nfree++] = (int)i;
    }
    q->nslots = to;
    q->limit = to - q->lend_slots;
    if (q->room_waiters)
        pthread_cond_broadcast(&q->room);
    pthread_mutex_unlock(&q->lock);
    return SL_OK;
}

void sl__dq_set_limit(sl__device_queue *q, size_t limit)
{
    pthread_mutex_lock(&q->lock);
    if (limit < 1)
        limit = 1;
    q->limit = limit < q->nslots - q->lend_slots ? limit : q->nslots - q->lend_slots;
    if (q->room_waiters)
        pthread_cond_broadcast(&q->room);
    pthread_mutex_unlock(&q->lock);
}
