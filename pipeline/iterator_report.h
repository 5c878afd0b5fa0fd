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
/* Total ms the last stage spent blocked because its output (the channel
 * to the consumer) was full: backpressure from a slower consumer. */
double sl__iterator_output_blocked_ms(sl_iterator *it);

#endif
