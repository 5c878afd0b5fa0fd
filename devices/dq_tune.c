/* dq_tune.c: see dq_tune.h. */
#include "devices/dq_tune.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/tune.h"

void sl__dq_tune_init(sl__dq_tune *t, sl__device_queue *q,
                      void (*log)(void *arg, const char *line), void *log_arg)
{
    memset(t, 0, sizeof *t);
    t->q = q;
    t->log = log;
    t->log_arg = log_arg;
    sl__tune_window_init(&t->window, 1); /* after the first batch: start-up is left out */
}

static void say(sl__dq_tune *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(sl__dq_tune *t, const char *fmt, ...)
{
    char line[320];
    va_list ap;
    if (!t->log)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    t->log(t->log_arg, line);
}

/* The most slots the tuner may give the queue now. */
static size_t most_slots(const sl__dq_tune *t, const sl__dq_stats *s)
{
    size_t most = sl__dq_max_slots(t->q);
    size_t by_bytes = s->slot_bytes ? SL__DQ_TUNE_MAX_BYTES / s->slot_bytes : most;
    if (most > SL__DQ_TUNE_MAX_SLOTS)
        most = SL__DQ_TUNE_MAX_SLOTS;
    if (most > by_bytes)
        most = by_bytes;
    return most;
}

/* GetNext's share of the window spent waiting. */
static double waited_share(const sl__dq_tune *t, const sl__dq_stats *s, double window_ms)
{
    return (s->getnext_wait_ms - t->prev.getnext_wait_ms) / window_ms;
}

/* Undoes the change only when GetNext did not wait less either: the
 * machine's own slow spells move batches/s by more than SL__TUNE_FALL
 * from one window to the next, but not the share of it GetNext waits. */
static void judge(sl__dq_tune *t, const sl__dq_stats *s, double window_ms, double rate)
{
    const char *name = sl__dq_name(t->q);
    double waited = waited_share(t, s, window_ms);
    t->trial = 0;
    if (rate < t->rate_before * (1 - SL__TUNE_FALL) && waited >= t->waited_before) {
        sl__dq_set_limit(t->q, t->trial_from);
        t->left_alone = 1;
        t->settling = 1;
        say(t, "autotune: device queue '%s': back to %zu slots: batches/s fell from %.0f to %.0f "
               "and GetNext waited %.0f%% of the time (%.0f%% before)",
            name, t->trial_from, t->rate_before, rate, 100 * waited, 100 * t->waited_before);
        return;
    }
    say(t, "autotune: device queue '%s': kept %zu slots (batches/s %.0f -> %.0f; GetNext waited "
           "%.0f%% of the time, %.0f%% before)",
        name, s->slots, t->rate_before, rate, 100 * waited, 100 * t->waited_before);
}

static void decide(sl__dq_tune *t, const sl__dq_stats *s, double window_ms, double rate)
{
    double waited = waited_share(t, s, window_ms);
    double blocked = (s->acquire_wait_ms - t->prev.acquire_wait_ms) / window_ms;
    size_t to = 2 * s->slots < SL__DQ_TUNE_MIN_GROWN ? SL__DQ_TUNE_MIN_GROWN : 2 * s->slots;
    size_t most = most_slots(t, s);
    sl__error err;
    if (t->left_alone || waited < SL__TUNE_KEEPS_UP || blocked < SL__TUNE_BLOCKED ||
        s->slots >= most)
        return;
    if (to > most)
        to = most;
    sl__err_clear(&err);
    if (sl__dq_grow(t->q, to, &err) != SL_OK) {
        t->left_alone = 1;
        say(t, "autotune: device queue '%s': could not grow: %s", sl__dq_name(t->q), err.msg);
        return;
    }
    t->trial = 1;
    t->settling = 1;
    t->trial_from = s->slots;
    t->rate_before = rate;
    t->waited_before = waited;
    say(t, "autotune: device queue '%s': %zu -> %zu slots (GetNext waited %.0f%% of the time "
           "while the transfer thread waited %.0f%% for a free slot)",
        sl__dq_name(t->q), s->slots, to, 100 * waited, 100 * blocked);
}

void sl__dq_tune_tick(sl__dq_tune *t)
{
    sl__dq_stats s;
    double window, rate;
    switch (sl__tune_window_tick(&t->window, ++t->batches, &window)) {
    case SL__TUNE_NOT_YET:
        return;
    case SL__TUNE_FIRST:
        sl__dq_get_stats(t->q, &t->prev);
        return;
    case SL__TUNE_ENDED:
        break;
    }
    sl__dq_get_stats(t->q, &s);
    rate = (double)(s.batches_out - t->prev.batches_out) * 1e3 / window;
    if (t->settling)
        t->settling = 0;
    else if (t->trial)
        judge(t, &s, window, rate);
    else
        decide(t, &s, window, rate);
    t->prev = s;
}
