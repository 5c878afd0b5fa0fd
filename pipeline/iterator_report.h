/* iterator_report.h: what a running iterator's stages are doing, for a
 * consumer that is not the iterator's own (the transfer thread, GetNext's
 * timeout message). Safe from any thread while the iterator lives. */
#ifndef SLUICE_PIPELINE_ITERATOR_REPORT_H
#define SLUICE_PIPELINE_ITERATOR_REPORT_H

#include <stddef.h>

#include "sluice/iterator.h"

/* Writes (at most len bytes) whether the pipeline is stuck (no stage has
 * output anything for stuck_ms) or slow, when each stage last output a
 * chunk, and which stage keeps the others waiting. */
void sl__iterator_describe(sl_iterator *it, double stuck_ms, char *buf, size_t len);
/* Runs every thread of the pipeline as background work (SCHED_BATCH):
 * they keep their fair share of the CPUs, but waking one no longer cuts
 * into the time slice of the thread running on its CPU, such as a compute
 * thread in the middle of an op; they run when a CPU falls free (see
 * exec/sink.c for who frees one). Returns 0, or the first pthread error. */
int sl__iterator_set_background(sl_iterator *it);
/* Total ms the last stage spent blocked because its output (the channel
 * to the consumer) was full: backpressure from a slower consumer. */
double sl__iterator_output_blocked_ms(sl_iterator *it);

#endif
