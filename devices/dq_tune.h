/* dq_tune.h: tunes a device queue's depth while batches flow, on the
 * transfer thread (devices/channel.c calls sl__dq_tune_tick after each
 * batch it commits), by the rules of core/tune.h.
 *
 * A queue too shallow shows in one window as both: GetNext waited (more
 * than SL__TUNE_KEEPS_UP of the time) and the transfer thread waited for a
 * free slot (more than SL__TUNE_BLOCKED): a batch was ready with nowhere
 * to go, and the executor then waited for its copy. The queue then gets
 * twice the slots, at least SL__DQ_TUNE_MIN_GROWN (sl__dq_grow), up to
 * its max and SL__DQ_TUNE_MAX_BYTES of slots in all. The window after
 * settles; the next judges: if GetNext's batches per second fell by more
 * than SL__TUNE_FALL and it waited no less than before, the old depth
 * comes back as a limit and the queue is left alone. */
#ifndef SLUICE_DEVICES_DQ_TUNE_H
#define SLUICE_DEVICES_DQ_TUNE_H

#include <stdint.h>

#include "core/tune.h"
#include "devices/device_queue.h"

/* Slots a tuned queue may grow to, and their bytes at most (unless the
 * queue starts above them: a tuner never cuts what the user asked for). */
#define SL__DQ_TUNE_MAX_SLOTS 32
#define SL__DQ_TUNE_MAX_BYTES ((size_t)256 << 20)
/* A grown queue has at least this many slots (the default depth): the
 * transfer thread is woken when half the slots are free, so a queue of 2
 * wakes it for every batch, and each wake-up takes a CPU from the step. */
#define SL__DQ_TUNE_MIN_GROWN 4

typedef struct sl__dq_tune {
    sl__device_queue *q;
    void (*log)(void *arg, const char *line); /* each change and why (may be NULL) */
    void *log_arg;
    uint64_t batches;        /* ticks so far */
    sl__tune_window window;  /* counted in batches */
    sl__dq_stats prev;
    int trial;               /* a change waits to be judged */
    int settling;            /* the window after a change: not judged */
    int left_alone;          /* a change was undone: no more */
    size_t trial_from;       /* the depth before it */
    double rate_before;
    double waited_before;    /* GetNext's share of the window before it, waiting */
} sl__dq_tune;

void sl__dq_tune_init(sl__dq_tune *t, sl__device_queue *q,
                      void (*log)(void *arg, const char *line), void *log_arg);
/* After each batch committed to the queue, on the thread that commits. */
void sl__dq_tune_tick(sl__dq_tune *t);

#endif
