/* barrier.h: a barrier for a fixed number of threads that abort can break.
 * Every party calls wait; the last to arrive releases them all. abort
 * wakes every waiter, and every later wait fails at once with the
 * abort's status and reason (the first abort's are kept), so a party that
 * will never arrive cannot leave the others waiting. */
#ifndef SLUICE_CORE_BARRIER_H
#define SLUICE_CORE_BARRIER_H

#include <pthread.h>

#include "core/error.h"

typedef struct sl__barrier {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int parties;
    int arrived;              /* parties at the current barrier */
    unsigned long generation; /* barriers completed */
    int aborted;              /* the status abort was given (0: none) */
    char why[SL_ERRMSG_LEN];
} sl__barrier;

int sl__barrier_init(sl__barrier *b, int parties, sl__error *err);
void sl__barrier_destroy(sl__barrier *b);
/* SL_OK once every party has arrived, or the abort's status (err says
 * why). A barrier that completed counts even if an abort came after it. */
int sl__barrier_wait(sl__barrier *b, sl__error *err);
/* Wakes every waiter; later waits fail with status (< 0; anything else
 * counts as SL_ECANCELED) and why. Returns 1 for the first abort. */
int sl__barrier_abort(sl__barrier *b, int status, const char *why);
/* For tests: the parties waiting now. */
int sl__barrier_arrived(sl__barrier *b);

#endif
