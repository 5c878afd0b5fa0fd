/* clock.h: the monotonic clock, for timings and for the deadlines of timed
 * waits. Every layer uses these two instead of its own copy, so that all
 * measure against CLOCK_MONOTONIC (immune to the wall clock being set). */
#ifndef SLUICE_CORE_CLOCK_H
#define SLUICE_CORE_CLOCK_H

#include <time.h>

/* Milliseconds on the monotonic clock, from an arbitrary origin: only
 * differences mean something. */
double sl__now_ms(void);

/* The moment timeout_ms (>= 0) from now on the monotonic clock, for
 * pthread_cond_timedwait on a condition variable whose clock was set to
 * CLOCK_MONOTONIC (pthread_condattr_setclock). */
void sl__deadline_ms(struct timespec *out, int timeout_ms);

/* Sleeps until sl__now_ms() reaches until_ms (a modelled delay, never a
 * wait for an event: nothing can end it early). */
void sl__sleep_until_ms(double until_ms);

#endif
