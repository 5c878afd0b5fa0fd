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

#endif
