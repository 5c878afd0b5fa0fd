/* autotune.c: tunes a running pipeline from its stage counters
 * (iterator_stats.c). The consumer's thread, in sl_iterator_next, looks at
 * the counters every so many rows; what happened since the last look is a
 * window. Nothing runs on a timer: the windows are counted in rows, the
 * count doubling until a window lasts at least SL__TUNE_MIN_WINDOW_MS.
 *
 * In each window at most one thing changes, so that the next window can
 * judge it:
 *   - if the consumer hardly waited, the pipeline keeps up: nothing to do;
 *   - else the busiest stage limits throughput: a parallel stage (map,
 *     batch) gets one more worker, up to autotune_max_workers;
 *   - else a stage blocked on a full output while the consumer waited
 *     gets twice the queue, up to SL__AUTOTUNE_MAX_QUEUE chunks;
 *   - else, when the busiest stage's workers also run the source (a lazy
 *     source: its queue holds indices only), that queue doubles, up to the
 *     same 32 chunks (where a default lazy source starts), so each turn at
 *     the source sends more.
 * The buffer pool is not tuned: its default cap already keeps what a
 * pipeline frees and takes anew (core/pool.c).
 * The window after any other change settles (a new worker's first
 * buffers); the next judges it by the consumer's rows/s against those
 * before the change: if they fell by more than SL__TUNE_FALL, it is
 * undone and that knob of that stage is left alone from then on. Every
 * change, and every undoing, is told to the options' autotune_log with
 * the figures that led to it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/tune.h"
#include "pipeline/iterator_impl.h"

#define FIRST_ROWS 1          /* rows before the first look (start-up is left out) */
#define SATURATED 0.50        /* a stage busier than this per thread may limit */

typedef enum knob { KNOB_NONE = 0, KNOB_WORKERS = 1, KNOB_QUEUE = 2 } knob;

typedef struct sl__autotune {
    size_t n;                /* entries of prev and cur: the stages and the consumer */
    sl_stage_stats *prev, *cur;
    sl__tune_window window;  /* counted in the consumer's rows */
    /* The change the window after next judges (KNOB_NONE: none); the
     * window right after it only settles (new workers fill their buffers,
     * the pool grows), so it is not judged. */
    knob trial;
    int settling;
    size_t trial_stage;
    size_t trial_from;
    size_t trial_limit_from; /* KNOB_WORKERS: the stage's queue limit before */
    double rate_before;
    unsigned char *left_alone; /* per stage: knobs whose change was undone */
    char said[192];          /* the last "no change" line, said only once */
} sl__autotune;

int sl__autotune_new(sl_iterator *it)
{
    sl__autotune *t;
    if (!it->opts.autotune)
        return SL_OK;
    t = calloc(1, sizeof *t);
    if (!t)
        return sl__errf(&it->error, SL_ENOMEM, "autotune: out of memory");
    it->tune = t;
    t->n = it->nstages + 1;
    t->prev = calloc(t->n, sizeof *t->prev);
    t->cur = calloc(t->n, sizeof *t->cur);
    t->left_alone = calloc(it->nstages, 1);
    if (!t->prev || !t->cur || !t->left_alone)
        return sl__errf(&it->error, SL_ENOMEM, "autotune: out of memory");
    sl__tune_window_init(&t->window, FIRST_ROWS);
    return SL_OK;
}

void sl__autotune_free(sl_iterator *it)
{
    sl__autotune *t = it->tune;
    if (!t)
        return;
    free(t->prev);
    free(t->cur);
    free(t->left_alone);
    free(t);
    it->tune = NULL;
}

void sl__autotune_say(sl_iterator *it, const char *fmt, ...)
{
    char line[320];
    va_list ap;
    if (!it->opts.autotune_log)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    it->opts.autotune_log(it->opts.autotune_log_arg, line);
}

/* Says a "no change" line, unless it was the last thing said. */
static void say_once(sl_iterator *it, const char *line)
{
    sl__autotune *t = it->tune;
    if (strcmp(t->said, line) == 0)
        return;
    snprintf(t->said, sizeof t->said, "%s", line);
    sl__autotune_say(it, "%s", line);
}

/* What stage s did in the window: the shares of its threads' time spent
 * busy and blocked. */
typedef struct window_share {
    double busy, blocked;
} window_share;

static window_share share_of(const sl__autotune *t, size_t s)
{
    const sl_stage_stats *a = &t->prev[s], *b = &t->cur[s];
    double busy = b->busy_ms - a->busy_ms;
    double blocked = b->blocked_output_ms - a->blocked_output_ms;
    double waited = b->wait_input_ms - a->wait_input_ms;
    double total = busy + blocked + waited;
    window_share w = {0, 0};
    if (total > 0) {
        w.busy = busy / total;
        w.blocked = blocked / total;
    }
    return w;
}

/* A stage whose workers the tuner may add (not one run on the consumer's
 * team: its threads are the team's). */
static int parallel(const sl__stage *st)
{
    return (st->kind == SL__STAGE_MAP || st->kind == SL__STAGE_COLLATE) &&
           !atomic_load(&st->team_run);
}

/* Undoes the change the last window made. */
static void undo(sl_iterator *it, sl__autotune *t)
{
    sl__stage *st = &it->stages[t->trial_stage];
    if (t->trial == KNOB_WORKERS) {
        sl__stage_set_active(st, (int)t->trial_from);
        sl__queue_set_limit(&st->out, t->trial_limit_from);
    } else
        sl__queue_set_limit(&st->out, t->trial_from);
    t->left_alone[t->trial_stage] |= (unsigned char)t->trial;
}

/* Judges the change made one window ago by the rows/s before and after. */
static void judge(sl_iterator *it, sl__autotune *t, double rate)
{
    sl__stage *st = &it->stages[t->trial_stage];
    const char *what = t->trial == KNOB_WORKERS ? "workers" : "queue chunks";
    if (rate < t->rate_before * (1 - SL__TUNE_FALL)) {
        undo(it, t);
        t->settling = 1;
        sl__autotune_say(it, "autotune: %s: back to %zu %s: rows/s fell from %.0f to %.0f", st->name,
            t->trial_from, what, t->rate_before, rate);
    } else {
        sl__autotune_say(it, "autotune: %s: kept %d %s (rows/s %.0f -> %.0f)", st->name,
            t->trial == KNOB_WORKERS ? atomic_load(&st->active) : (int)sl__queue_limit(&st->out),
            what, t->rate_before, rate);
    }
    t->trial = KNOB_NONE;
}

/* Picks at most one change for the window just ended. */
static void decide(sl_iterator *it, sl__autotune *t, double window_ms, double rate)
{
    const sl_stage_stats *ca = &t->prev[t->n - 1], *cb = &t->cur[t->n - 1];
    double waited = (cb->wait_input_ms - ca->wait_input_ms) / window_ms;
    size_t busiest = it->nstages, most_blocked = it->nstages;
    double busiest_share = 0, blocked_share = 0;
    char line[192];
    if (waited < SL__TUNE_KEEPS_UP) {
        snprintf(line, sizeof line,
                 "autotune: no change: the pipeline keeps up (the consumer waited %.0f%%)",
                 100 * waited);
        say_once(it, line);
        return;
    }
    for (size_t s = 0; s < it->nstages; s++) {
        window_share w;
        if (t->cur[s].threads <= 0)
            continue; /* run by the next stage's workers, in their time */
        w = share_of(t, s);
        if (w.busy > busiest_share) {
            busiest_share = w.busy;
            busiest = s;
        }
        if (w.blocked > blocked_share && !(t->left_alone[s] & KNOB_QUEUE) &&
            sl__queue_limit(&it->stages[s].out) < it->stages[s].out.capacity) {
            blocked_share = w.blocked;
            most_blocked = s;
        }
    }
    if (busiest < it->nstages && busiest_share >= SATURATED) {
        sl__stage *st = &it->stages[busiest];
        int active = atomic_load(&st->active);
        if (parallel(st) && active < st->nthreads && !(t->left_alone[busiest] & KNOB_WORKERS)) {
            size_t limit = sl__queue_limit(&st->out);
            t->trial = KNOB_WORKERS;
            t->settling = 1;
            t->trial_stage = busiest;
            t->trial_from = (size_t)active;
            t->trial_limit_from = limit;
            t->rate_before = rate;
            /* Room in the order window for every worker's chunk, as at start. */
            if (limit < 2 * (size_t)(active + 1))
                sl__queue_set_limit(&st->out, 2 * (size_t)(active + 1));
            sl__stage_set_active(st, active + 1);
            sl__autotune_say(it, "autotune: %s: %d -> %d workers (busy %.0f%% per worker; the consumer "
                    "waited %.0f%%)",
                st->name, active, active + 1, 100 * busiest_share, 100 * waited);
            return;
        }
    }
    if (most_blocked < it->nstages && blocked_share >= SL__TUNE_BLOCKED) {
        sl__stage *st = &it->stages[most_blocked];
        size_t limit = sl__queue_limit(&st->out);
        size_t to = 2 * limit < st->out.capacity ? 2 * limit : st->out.capacity;
        t->trial = KNOB_QUEUE;
        t->settling = 1;
        t->trial_stage = most_blocked;
        t->trial_from = limit;
        t->rate_before = rate;
        sl__queue_set_limit(&st->out, to);
        sl__autotune_say(it, "autotune: %s: queue %zu -> %zu chunks (blocked %.0f%% on a full queue; the "
                "consumer waited %.0f%%)",
            st->name, limit, to, 100 * blocked_share, 100 * waited);
        return;
    }
    if (busiest < it->nstages && busiest_share >= SATURATED && it->stages[busiest].pulls_source &&
        !(t->left_alone[0] & KNOB_QUEUE) &&
        sl__queue_limit(&it->stages[0].out) < it->stages[0].out.capacity) {
        /* Its workers also run the source whenever its queue runs dry: a
         * deeper one (of indices only, a few bytes a row) lets each run
         * send more, so they turn to it less often. */
        sl__stage *src = &it->stages[0];
        size_t limit = sl__queue_limit(&src->out);
        size_t to = 2 * limit < src->out.capacity ? 2 * limit : src->out.capacity;
        t->trial = KNOB_QUEUE;
        t->settling = 1;
        t->trial_stage = 0;
        t->trial_from = limit;
        t->rate_before = rate;
        sl__queue_set_limit(&src->out, to);
        sl__autotune_say(it, "autotune: %s: queue %zu -> %zu chunks (of indices; %s, which runs it, is busy "
                "%.0f%% and can take no more workers)",
            src->name, limit, to, it->stages[busiest].name, 100 * busiest_share);
        return;
    }
    if (busiest < it->nstages)
        snprintf(line, sizeof line,
                 "autotune: no change: %s limits throughput (busy %.0f%% on %d thread%s) and "
                 "can take no more workers",
                 it->stages[busiest].name, 100 * busiest_share, t->cur[busiest].threads,
                 t->cur[busiest].threads == 1 ? "" : "s");
    else
        snprintf(line, sizeof line, "autotune: no change: no stage is busy; the CPUs are short");
    say_once(it, line);
}

void sl__autotune_tick(sl_iterator *it)
{
    sl__autotune *t = it->tune;
    double window, rate;
    switch (sl__tune_window_tick(&t->window, it->rows_out, &window)) {
    case SL__TUNE_NOT_YET:
        return;
    case SL__TUNE_FIRST:
        /* What came before (start-up) is not judged. */
        sl_iterator_get_stage_stats(it, t->prev, t->n);
        return;
    case SL__TUNE_ENDED:
        break;
    }
    sl_iterator_get_stage_stats(it, t->cur, t->n);
    rate = (double)(t->cur[t->n - 1].rows - t->prev[t->n - 1].rows) * 1e3 / window;
    if (t->settling)
        t->settling = 0;
    else if (t->trial != KNOB_NONE)
        judge(it, t, rate);
    else
        decide(it, t, window, rate);
    {
        sl_stage_stats *swap = t->prev;
        t->prev = t->cur;
        t->cur = swap;
    }
}
