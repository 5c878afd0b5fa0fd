/* byte_budget.h: a count of bytes that several threads may hold at once,
 * at most `limit` in all. A thread takes bytes before it allocates and
 * gives them back when done; a take that does not fit sleeps on a
 * condition variable (never polls) until bytes come back or the budget is
 * closed. close() wakes every sleeper, and every take from then on fails,
 * so a shutting-down pipeline never waits on it. The pipeline makes one
 * for its decode workers (ops/vision/decode.c takes, pipeline/nodes.c
 * gives back). */
#ifndef SLUICE_CORE_BYTE_BUDGET_H
#define SLUICE_CORE_BYTE_BUDGET_H

#include <pthread.h>
#include <stdint.h>

#include "core/error.h"

typedef struct sl__byte_budget {
    pthread_mutex_t lock;
    pthread_cond_t returned; /* bytes came back, or closed */
    uint64_t limit;
    uint64_t held;           /* taken and not given back */
    uint64_t peak;           /* the most ever held at once (for tests and reports) */
    uint64_t waits;          /* takes that had to sleep at least once */
    int waiting;             /* threads asleep in a take now */
    int closed;
} sl__byte_budget;

/* limit >= 1. SL_OK, or SL_ETHREAD / SL_ENOMEM with a message naming the
 * call in err (nothing is then left to destroy). */
int sl__byte_budget_init(sl__byte_budget *b, uint64_t limit, sl__error *err);
void sl__byte_budget_destroy(sl__byte_budget *b);

/* Takes n bytes. While they do not fit beside what others hold it sleeps
 * if may_wait is 1, or returns SL_ETIMEDOUT at once if it is 0 (a caller
 * that already holds bytes must not sleep: two such callers could wait on
 * each other for ever). SL_EINVAL when n alone exceeds the limit (it could
 * never fit), SL_ECLOSED once the budget is closed, SL_OK when taken. */
int sl__byte_budget_take(sl__byte_budget *b, uint64_t n, int may_wait);
/* Gives back n bytes taken before and wakes the sleepers. */
void sl__byte_budget_give(sl__byte_budget *b, uint64_t n);
/* Wakes every sleeper; takes fail with SL_ECLOSED from now on. */
void sl__byte_budget_close(sl__byte_budget *b);

#endif
