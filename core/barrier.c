/* barrier.c: the abortable barrier (barrier.h). */
#include "core/barrier.h"

#include <stdio.h>

int sl__barrier_init(sl__barrier *b, int parties, sl__error *err)
{
    int e;
    b->parties = parties;
    b->arrived = 0;
    b->generation = 0;
    b->aborted = 0;
    b->why[0] = '\0';
    if ((e = pthread_mutex_init(&b->lock, NULL)) != 0)
        return sl__pthread_errf(err, e, "barrier: mutex");
    if ((e = pthread_cond_init(&b->cond, NULL)) != 0) {
        pthread_mutex_destroy(&b->lock);
        return sl__pthread_errf(err, e, "barrier: condition variable");
    }
    return SL_OK;
}

void sl__barrier_destroy(sl__barrier *b)
{
    pthread_cond_destroy(&b->cond);
    pthread_mutex_destroy(&b->lock);
}

int sl__barrier_wait(sl__barrier *b, sl__error *err)
{
    int rc = SL_OK;
    unsigned long gen;
    pthread_mutex_lock(&b->lock);
    gen = b->generation;
    if (!b->aborted && ++b->arrived == b->parties) {
        b->arrived = 0;
        b->generation++;
        pthread_cond_broadcast(&b->cond);
    }
    while (b->generation == gen && !b->aborted)
        pthread_cond_wait(&b->cond, &b->lock);
    if (b->generation == gen)
        rc = sl__errf(err, b->aborted, "%s", b->why);
    pthread_mutex_unlock(&b->lock);
    return rc;
}

int sl__barrier_abort(sl__barrier *b, int status, const char *why)
{
    int first;
    pthread_mutex_lock(&b->lock);
    first = !b->aborted;
    if (first) {
        b->aborted = status < 0 ? status : SL_ECANCELED;
        snprintf(b->why, sizeof b->why, "%s", why ? why : "stopped");
    }
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
    return first;
}

int sl__barrier_arrived(sl__barrier *b)
{
    int n;
    pthread_mutex_lock(&b->lock);
    n = b->arrived;
    pthread_mutex_unlock(&b->lock);
    return n;
}
