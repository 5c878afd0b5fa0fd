/* trace.h: recording into a profiler (see sluice/profiler.h), for the
 * library's threads. A thread opens one track when it starts (naming
 * itself) and records slices and counters into it; only that thread
 * writes to it. Every function takes a NULL track and then does nothing,
 * so the hot paths read `if (track)` and no more when nobody profiles. */
#ifndef SLUICE_CORE_TRACE_H
#define SLUICE_CORE_TRACE_H

#include <stdint.h>

#include "sluice/profiler.h"

typedef struct sl__track sl__track;

/* A new track named after the thread, e.g. "map+batch #1" (copied); NULL
 * when p is NULL or memory is short (the thread then records nothing). */
sl__track *sl__track_open(sl_profiler *p, const char *thread_name);
/* A copy of s that lives as long as p: for slice names that the run's
 * objects own (stage names, op names). NULL when p is NULL. */
const char *sl__trace_intern(sl_profiler *p, const char *s);

/* A slice from t0_ms to t1_ms (sl__now_ms), name a string that outlives
 * the profiler (a literal, or from sl__trace_intern), for batch `batch` of
 * epoch `epoch` (the batch's number within its epoch, from 0; batch < 0:
 * the slice is not one batch's). */
void sl__trace_slice(sl__track *t, const char *name, double t0_ms, double t1_ms, int64_t epoch,
                     int64_t batch);
/* A counter's value at t_ms. */
void sl__trace_counter(sl__track *t, const char *name, double t_ms, double value);

#endif
