/* clock.c: monotonic time in milliseconds, and deadlines for timed waits. */
#include "core/clock.h"

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
