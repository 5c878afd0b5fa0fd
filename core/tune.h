/* tune.h: the rules sluice's tuners share (pipeline/autotune.c for a
 * pipeline's workers, queues and pool; devices/dq_tune.c for a device
 * queue's depth). A tuner looks at counters at the end of each window, a
 * stretch counted in rows or batches (never a timer), makes at most one
 * change, lets the next window settle and judges the change by the one
 * after it. */
#ifndef SLUICE_CORE_TUNE_H
#define SLUICE_CORE_TUNE_H

#define SL__TUNE_MIN_WINDOW_MS 50.0  /* shorter windows are too noisy to judge */
#define SL__TUNE_LONG_WINDOW_MS 800.0 /* longer ones react too slowly: halve the count */
#define SL__TUNE_KEEPS_UP 0.05       /* a consumer waiting less than this: no change */
#define SL__TUNE_BLOCKED 0.10        /* a producer blocked more than this wants room */
#define SL__TUNE_FALL 0.10           /* a change that lost more than this is undone */

#include <stdint.h>

/* Where a tuner's windows stand, counted in rows or batches. */
typedef struct sl__tune_window {
    uint64_t next;    /* look again when the count reaches this */
    uint64_t step;    /* counts per window: doubles while windows are too
                       * short to judge, halves when they are too long */
    double start_ms;  /* when the window began; 0: no look yet */
} sl__tune_window;

typedef enum sl__tune_look {
    SL__TUNE_NOT_YET, /* nothing to do */
    SL__TUNE_FIRST,   /* the first look: take the counters; start-up is not judged */
    SL__TUNE_ENDED    /* a window of at least SL__TUNE_MIN_WINDOW_MS ended: judge it */
} sl__tune_look;

/* The first look comes once the count reaches `first`. */
void sl__tune_window_init(sl__tune_window *w, uint64_t first);
/* Tells the window the count so far; on SL__TUNE_ENDED, *window_ms is the
 * window's length and the next window has begun. Reads the clock only when
 * the count reaches w->next. */
sl__tune_look sl__tune_window_tick(sl__tune_window *w, uint64_t count, double *window_ms);

#endif
