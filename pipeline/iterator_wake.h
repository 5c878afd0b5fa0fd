/* iterator_wake.h: waking a consumer asleep in sl_iterator_next for a
 * while, not for good. sl_iterator_interrupt ends the iterator; a sink
 * that runs the transfer on the executor's thread must instead be woken
 * by a stop and resumed by the next call, in the same place of the data. */
#ifndef SLUICE_PIPELINE_ITERATOR_WAKE_H
#define SLUICE_PIPELINE_ITERATOR_WAKE_H

#include "sluice/iterator.h"

/* Makes sl_iterator_next return SL_ECANCELED at once (waking it where it
 * sleeps) without taking a row and without ending the iterator, until
 * sl__iterator_unwake. Rows already taken from the pipeline still come
 * first. Safe from any thread while the iterator lives. */
void sl__iterator_wake(sl_iterator *it);
void sl__iterator_unwake(sl_iterator *it);

#endif
