/* profiler.h: a timeline of a run, written as a Chrome trace (the Trace
 * Event format that Perfetto and chrome://tracing open). Give one to
 * sl_iterator_options.profiler or sl_train_options.profiler and every
 * thread the run starts records into it: a slice per chunk of rows for each
 * map, batch and sequential stage's worker (a sequential stage's slice
 * includes its waits for room downstream; a source with a thread of its
 * own records none), per batch copied by the transfer thread, per GetNext
 * and per step of the executor (sink mode), with a slice per op inside
 * each step, and a counter of each device queue's occupancy. Slices of one
 * batch carry its place ("epoch" and "batch", its number within the
 * epoch, in their args) from the pipeline to the step; a repeat after the
 * batch node numbers the pipeline's passes apart from the data's epochs.
 *
 * Memory is bounded: each thread of a run records into a ring of its own,
 * sized when the profiler is made, that keeps the newest events (the
 * dropped ones are counted); every run adds its threads' rings, so give
 * each run a profiler of its own. Recording takes no lock and allocates
 * nothing; sl_profiler_write_trace does the formatting, after the run. */
#ifndef SLUICE_PROFILER_H
#define SLUICE_PROFILER_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/export.h"

typedef struct sl_profiler sl_profiler;

/* events_per_thread: the ring of each thread (0: 65536, 3 MB).
 * SL_OK, or SL_ENOMEM. */
SL_API int sl_profiler_new(sl_profiler **out, size_t events_per_thread);
/* Call after the runs that record into it have ended (their threads are
 * joined when sl_iterator_free or sl_model_train_opts returns). */
SL_API void sl_profiler_free(sl_profiler *p);
/* Writes every thread's events to path as one JSON object
 * {"displayTimeUnit": "ms", "traceEvents": [...]}. Not while a run
 * records. SL_OK, or SL_EIO with the file named in err. */
SL_API int sl_profiler_write_trace(sl_profiler *p, const char *path, char *err, size_t err_len);
/* Events recorded, and of them those dropped (overwritten in a full
 * ring); after the run, as for sl_profiler_write_trace. */
SL_API void sl_profiler_counts(sl_profiler *p, uint64_t *recorded, uint64_t *dropped);

#endif
