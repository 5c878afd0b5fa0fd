/* iterator_stats.c: where each stage of a running pipeline spends its time
 * (sl_iterator_get_stage_stats). Nothing here is measured per row: a
 * stage's waits are its queues' (core/queue.c times every sleep on them),
 * its rows are counted per chunk, and busy time is what is left of its
 * threads' elapsed time. */
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "pipeline/iterator_impl.h"

/* busy = thread-time - waits, never below 0 (the clock is read at
 * slightly different moments for each term). */
static double busy_of(double thread_ms, double waited, double blocked)
{
    double busy = thread_ms - waited - blocked;
    return busy > 0 ? busy : 0;
}

/* The stage's working threads integrated over time until `until`: threads
 * x elapsed, unless the autotuner changed how many work. */
static double thread_ms_of(sl__stage *st, double until)
{
    double ms;
    pthread_mutex_lock(&st->tune_lock);
    ms = sl__occupancy_total(&st->thread_time, sl__stage_working_threads(st), until);
    pthread_mutex_unlock(&st->tune_lock);
    return ms;
}

static void stage_stats(const sl_iterator *it, size_t s, double now, sl_stage_stats *out)
{
    sl__stage *st = &it->stages[s]; /* its queues lock: not const */
    sl__queue_stats q, in;
    double finished = atomic_load(&st->finished_ms);
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", st->name);
    sl__queue_get_stats(&st->out, &q);
    if (s > 0)
        sl__queue_get_stats(st->in, &in);
    else
        memset(&in, 0, sizeof in);
    out->threads = atomic_load(&st->active);
    out->rows = atomic_load_explicit(&st->rows_out, memory_order_relaxed);
    out->elapsed_ms = (finished > 0 ? finished : now) - it->started_ms;
    out->wait_input_ms = in.pop_wait_ms;
    out->startup_wait_ms = in.first_pop_wait_ms;
    out->blocked_output_ms = q.push_wait_ms;
    out->thread_ms = thread_ms_of(st, finished > 0 ? finished : now);
    out->busy_ms = busy_of(out->thread_ms, out->wait_input_ms, out->blocked_output_ms);
    if (st->team_able) {
        /* Its spells on the consumer's team: the team's threads' whole
         * time, of which the rounds were this stage's work (they never
         * wait on a queue). */
        double team_thread_ms, team_busy_ms;
        sl__stage_team_time(st, finished > 0 ? finished : now, &team_thread_ms, &team_busy_ms);
        out->thread_ms += team_thread_ms;
        out->busy_ms += team_busy_ms;
        if (atomic_load(&st->team_run))
            out->threads = it->team->nthreads;
    }
    out->capacity = q.capacity;
    out->occupancy = q.occupancy;
}

size_t sl_iterator_get_stage_stats(const sl_iterator *it, sl_stage_stats *out, size_t max)
{
    size_t n = it->nstages + 1;
    double now = sl__now_ms();
    for (size_t s = 0; s < it->nstages && s < max; s++)
        stage_stats(it, s, now, &out[s]);
    if (it->nstages < max) {
        sl_stage_stats *c = &out[it->nstages];
        sl__queue_stats last;
        sl__queue_get_stats(&it->stages[it->nstages - 1].out, &last);
        memset(c, 0, sizeof *c);
        snprintf(c->name, sizeof c->name, "consumer");
        c->threads = 1;
        c->rows = it->rows_out;
        c->elapsed_ms = now - it->started_ms;
        c->wait_input_ms = last.pop_wait_ms;
        c->startup_wait_ms = last.first_pop_wait_ms;
        c->thread_ms = c->elapsed_ms;
        c->busy_ms = busy_of(c->thread_ms, c->wait_input_ms, 0);
    }
    return n;
}
