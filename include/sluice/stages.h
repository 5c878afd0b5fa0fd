/* stages.h: where a run's time goes, stage by stage: the figures each
 * stage counts (always, at a few clock reads per chunk of rows) and the
 * verdict that names the stage limiting throughput. The figures come from
 * sl_iterator_get_stage_stats (iterator.h) and sl_model_get_stage_stats
 * (model.h). */
#ifndef SLUICE_STAGES_H
#define SLUICE_STAGES_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/export.h"

/* One stage of a running pipeline or sink (sl_iterator_get_stage_stats,
 * sl_model_get_stage_stats). Times are in ms, summed over the stage's
 * threads, from the run's start until now or until the stage's threads
 * ended: busy + wait_input + blocked_output = thread_ms, which is threads
 * x elapsed unless the autotuner changed how many threads work. */
typedef struct sl_stage_stats {
    char name[96];            /* "source", "map(image: resize, ...)", ..., "consumer" */
    int threads;              /* 0: run by the next stage's workers, in their time */
    uint64_t rows;            /* rows output (batches, after a batch node) */
    double elapsed_ms;
    double busy_ms;           /* working, or ready to and waiting for a CPU */
    double wait_input_ms;     /* asleep waiting for input */
    double startup_wait_ms;   /* of that, the wait for its first input: the stages
                               * before it starting up (a shuffle buffer filling) */
    double blocked_output_ms; /* asleep on a full output queue */
    size_t capacity;          /* its output queue's capacity, in chunks (0: none) */
    double occupancy;         /* the mean chunks in it */
    double thread_ms;         /* the working threads summed over the elapsed time
                               * (threads x elapsed_ms while they do not change) */
} sl_stage_stats;

/* Says in words which stage limits throughput, from the figures of
 * sl_iterator_get_stage_stats or sl_model_get_stage_stats: e.g. "the
 * executor is the bottleneck (busy 97%); GetNext waited 0.4% of the time:
 * the pipeline keeps up", or "stage 'map(...)' limits throughput (busy 99%
 * on 2 threads); it waited 31% of the time: add workers or move work out
 * of it". Writes at most len bytes of buf (cut short, still terminated)
 * and returns the length of the whole verdict, as snprintf does. */
SL_API size_t sl_stage_verdict(const sl_stage_stats *st, size_t n, char *buf, size_t len);

#endif
