/* clock.c: monotonic time in milliseconds, and deadlines for timed waits. */
#include "core/clock.h"

#include <errno.h>

#define NS_PER_S 1000000000L

double sl__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

void sl__deadline_ms(struct timespec *out, int timeout_ms)
{
    clock_gettime(CLOCK_MONOTONIC, out);
    out->tv_sec += timeout_ms / 1000;
    out->tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (out->tv_nsec >= NS_PER_S) {
        out->tv_sec++;
        out->tv_nsec -= NS_PER_S;
    }
}

void sl__sleep_until_ms(double until_ms)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(until_ms / 1e3);
    ts.tv_nsec = (long)((until_ms - (double)ts.tv_sec * 1e3) * 1e6);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    /* EINTR (a signal): sleep on to the same moment */
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}
