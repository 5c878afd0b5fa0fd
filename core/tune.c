/* tune.c: a tuner's windows (tune.h). */
#include "core/tune.h"

#include "core/clock.h"

void sl__tune_window_init(sl__tune_window *w, uint64_t first)
{
    w->next = first;
    w->step = first;
    w->start_ms = 0;
}

sl__tune_look sl__tune_window_tick(sl__tune_window *w, uint64_t count, double *window_ms)
{
    double now, window;
    if (count < w->next)
        return SL__TUNE_NOT_YET;
    now = sl__now_ms();
    if (w->start_ms == 0) {
        w->start_ms = now;
        w->next = count + w->step;
        return SL__TUNE_FIRST;
    }
    window = now - w->start_ms;
    if (window < SL__TUNE_MIN_WINDOW_MS) {
        /* Too short to judge: let it run on, and make the next ones longer. */
        w->step *= 2;
        w->next = count + w->step;
        return SL__TUNE_NOT_YET;
    }
    if (window > SL__TUNE_LONG_WINDOW_MS && w->step > 1)
        w->step /= 2;
    w->start_ms = now;
    w->next = count + w->step;
    *window_ms = window;
    return SL__TUNE_ENDED;
}
