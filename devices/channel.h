/* channel.h: the channel, what sinking adds between the pipeline and the
 * devices: the pipeline's last bounded queue of ready host batches
 * (sl_iterator) and the transfer thread that empties it. The thread
 * takes each batch from it, copies the columns a step reads into a free
 * slot of a device queue (dealing batches round-robin when it feeds several
 * devices) and commits it, so copying overlaps computing. Ends of epoch,
 * the end of data and pipeline errors follow the batches into every
 * queue, in order.
 *
 * Threads: one transfer thread, plus the pipeline's. Freeing the channel
 * interrupts the pipeline and the queues, joins the transfer thread and
 * frees the iterator (joining the pipeline), at any point.
 *
 * Inline transfer: when the device reads host memory and the compute
 * threads fill every CPU, a transfer thread has no CPU of its own: each
 * time it woke it would take one from the step, once per batch. The
 * executor then moves batches itself: sl__channel_get_next finds the queue
 * empty, takes the pipeline's next batch and copies it into a slot (a
 * memcpy on cpu) before it takes it as GetNext. The order, the markers,
 * the errors and the timeout's message are the same. */
#ifndef SLUICE_DEVICES_CHANNEL_H
#define SLUICE_DEVICES_CHANNEL_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "devices/device_queue.h"
#include "sluice/iterator.h"
#include "sluice/dataset.h"
#include "sluice/profiler.h"
#include "sluice/device.h"

#define SL__CHANNEL_MAX_DEVICES 8

typedef struct sl__channel sl__channel;

typedef struct sl__channel_options {
    sl_profiler *profiler;     /* NULL, or where the transfer and pipeline record */
    /* The pipeline's autotune settings (sl_iterator_options): autotune,
     * autotune_max_workers (0: the iterator's default), autotune_log and
     * its arg. With a transfer thread, autotune also tunes each device
     * queue's depth (devices/dq_tune.h), telling the same log. */
    int autotune;
    int autotune_max_workers;
    void (*autotune_log)(void *arg, const char *line);
    void *autotune_log_arg;
    const char *queue_name;    /* each device's queue is "<device>/<queue_name>" */
    size_t capacity;           /* slots per device queue (>= 1) */
    size_t max_bytes;          /* device bytes per queue at most (0: no cap) */
    int64_t num_epochs;        /* epochs the pipeline delivers (-1: without end) */
    int64_t start_epoch;       /* where the pipeline starts (sl_iterator_options) */
    int64_t start_rows;
    int64_t stuck_ms;          /* no output for this long: the pipeline is
                                * "stuck" rather than "slow" in reports */
    /* The columns to send, in the order a step reads them, with the batch
     * shape the step was compiled for: a batch of another shape is an
     * error that names both. */
    size_t ncolumns;
    int columns[SL_MAX_COLUMNS];      /* dataset column indices */
    sl_tensor_spec specs[SL_MAX_COLUMNS];
    const char *names[SL_MAX_COLUMNS]; /* for messages */
    /* 1: no transfer thread; sl__channel_get_next moves each batch on the
     * caller's thread (one device only). */
    int inline_transfer;
    /* inline: the longest wait for the pipeline's next batch (-1: none) */
    int64_t getnext_timeout_ms;
    /* inline, on a device that reads host memory: copies n bytes on the
     * caller's thread (sl__channel_get_next's), which may share the copy
     * with its compute team (NULL: the device's own copy). Never called
     * by a transfer thread. */
    void (*host_copy)(void *arg, void *dst, const void *src, size_t n);
    void *host_copy_arg;
    /* inline: the caller's compute team, lent to the pipeline, which then
     * runs its map+batch on it when it can (pipeline/consumer_team.h);
     * NULL: none. Must outlive the channel. */
    const struct sl__consumer_team *team;
    /* 1: on one device that reads host memory, the pipeline stacks each
     * batch straight into a slot the queue lends it (device_queue.h), so
     * no batch is copied on its way; the queue makes slots to lend for the
     * channel's batches on top of capacity (SL__DQ_LEND_BYTES at most).
     * Otherwise ignored. */
    int lend;
} sl__channel_options;

typedef struct sl__channel_stats {
    uint64_t batches;          /* sent to device queues */
    uint64_t claimed;          /* of those, stacked by the pipeline into a lent
                                * slot, so not copied */
    double copy_ms;            /* the transfer thread copying (or claiming) */
    double pipeline_wait_ms;   /* the transfer thread waiting for a batch */
    double first_wait_ms;      /* of that, for the first batch (start-up) */
    double slot_wait_ms;       /* the transfer thread waiting for a free slot */
    double channel_full_ms;    /* the pipeline blocked on a full channel */
} sl__channel_stats;

/* Starts ds's pipeline, makes one queue per device and starts the transfer
 * thread. On failure the message is in err and nothing is left running. */
int sl__channel_new(sl__channel **out, sl_dataset *ds, sl_device *const *devices,
                   size_t ndevices, const sl__channel_options *o, sl__error *err);
/* Stops and joins every thread, frees the queues. NULL is ignored. */
void sl__channel_free(sl__channel *f);
sl__device_queue *sl__channel_queue(sl__channel *f, size_t device);
void sl__channel_get_stats(sl__channel *f, sl__channel_stats *out);
/* The pipeline's stages, then "transfer": the transfer thread (threads 0
 * when the executor moves batches itself), its output the first device's
 * queue. Fills at most max entries; returns how many there are. */
size_t sl__channel_get_stage_stats(sl__channel *f, sl_stage_stats *out, size_t max);

/* GetNext on device's queue, as sl__dq_get_next (same returns, messages
 * and timeout). Inline, an empty queue is first given the pipeline's next
 * batch or marker on this thread. *waited_ms (may be NULL) gets the time
 * spent waiting for a batch, copying excluded. */
int sl__channel_get_next(sl__channel *f, size_t device, sl__dq_slot **slot, int64_t timeout_ms,
                        double *waited_ms, sl__error *err);
/* A stop: GetNext returns SL_ECANCELED, wherever it waits, until
 * sl__channel_resume; the data keeps its place. Thread-safe. */
void sl__channel_interrupt(sl__channel *f);
void sl__channel_resume(sl__channel *f);

#endif
