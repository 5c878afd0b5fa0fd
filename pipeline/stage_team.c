/* stage_team.c: a stage that its consumer's threads may run between the
 * consumer's own jobs instead of its own threads (consumer_team.h says
 * why). The stage starts on its threads, which time each chunk they work.
 * Once the first chunks have shown that a chunk's work is short, the
 * consumer hands the stage to its team: the threads sleep, and whenever
 * the consumer finds nothing ready it runs a round, in which each team
 * thread works chunks while the output has room for them. A round that
 * runs too long hands the stage back to its threads for good, since the
 * consumer can do nothing else meanwhile: neither stop nor time out.
 *
 * Order and safety: a team thread takes the next chunk of the input only
 * if its number is below the output's push bound, in one step under the
 * input's lock (sl__queue_pop_before), so its push cannot block (the
 * consumer, which would make room, is busy running the round). Chunks
 * still in a worker's hands when the team takes over are pushed by that
 * worker under their own numbers; the consumer pops in order whoever made
 * them. */
#include <stdatomic.h>
#include <stdlib.h>

#include "core/clock.h"
#include "pipeline/consumer_team.h"
#include "pipeline/iterator_impl.h"

/* Chunks the threads work before the consumer judges them, by default. */
#define TEAM_WARMUP_CHUNKS 16
/* Hand over when those chunks took at most this long on average (their
 * wall time on threads that share the CPUs with the consumer's, so an
 * over-estimate): a round of a few such chunks stays short. */
#define TEAM_CHUNK_MS 5.0
/* Give the team up after a round that took longer: a stop or a GetNext
 * timeout waits for the round in progress. */
#define TEAM_ROUND_MS 50.0
/* Chunks each team thread works per round: the second of a thread's
 * chunks finds the caches warm that the consumer's job had cooled. */
#define TEAM_CHUNKS_PER_THREAD 2

/* The state of one round: chunks still to take. */
typedef struct team_round {
    sl__stage *st;
    atomic_int left;
} team_round;

/* One team thread's part of a round: chunks while some are left to take
 * and the output has room for them. */
static void team_turn(void *arg, int worker)
{
    team_round *r = arg;
    sl__stage *st = r->st;
    const sl__consumer_team *team = st->it->team;
    sl__error err;
    sl__track *track = NULL;
    /* Each team thread allocates from its part of the pool: the threads of
     * a round work at once, and on one pool every row's allocations and
     * frees contend for the same locks and counters (a round's batches
     * took a fifth longer so). NULL: the pool itself. */
    sl_pool *pool = sl__pool_part(st->it->pool, worker);
    if (worker < team->nthreads) {
        if (!st->team_tracks[worker] && st->it->opts.profiler)
            st->team_tracks[worker] = sl__stage_open_track(st);
        track = st->team_tracks[worker];
    }
    while (atomic_fetch_sub_explicit(&r->left, 1, memory_order_relaxed) > 0) {
        sl__chunk *chunk;
        uint64_t seq;
        sl__turn_end end;
        sl__err_clear(&err);
        if (sl__stage_take_bounded(st, &chunk, &seq) != SL_OK)
            return; /* no room, the end was taken, or stopping */
        end = sl__stage_work_and_push(st, track, chunk, seq, pool, &st->team_ns, &err);
        if (end == SL__TURN_LEAVE)
            /* A chunk was dropped: should no stop be under way, the
             * consumer must see the output close rather than wait for it. */
            sl__queue_close(&st->out);
        if (end == SL__TURN_LAST)
            /* The end went out: the sleeping threads leave (the last of
             * them, or the round, closes the output). */
            sl__stage_wake_parked(st);
        if (end != SL__TURN_GO_ON)
            return;
    }
}

/* The team's threads running the stage now: all of them, or none. */
static size_t team_threads(sl__stage *st)
{
    return atomic_load(&st->team_run) ? (size_t)st->it->team->nthreads : 0;
}

/* Gives the stage to the team (to_team) or back to its threads: the
 * threads' time and the team's are integrated apart, for stage reports. */
static void hand_over(sl__stage *st, int to_team)
{
    double now = sl__now_ms();
    pthread_mutex_lock(&st->tune_lock);
    sl__occupancy_note(&st->thread_time, sl__stage_working_threads(st), now);
    sl__occupancy_note(&st->team_time, team_threads(st), now);
    atomic_store(&st->team_run, to_team);
    pthread_cond_broadcast(&st->tune_cv); /* threads coming back wake */
    pthread_mutex_unlock(&st->tune_lock);
}

int sl__stage_on_team(sl__stage *st)
{
    if (!st->team_decided) {
        uint64_t n = atomic_load_explicit(&st->work_chunks, memory_order_relaxed);
        double mean;
        int warmup = st->it->team->warmup_chunks > 0 ? st->it->team->warmup_chunks
                                                       : TEAM_WARMUP_CHUNKS;
        if (n < (uint64_t)warmup)
            return 0;
        mean = (double)atomic_load_explicit(&st->work_ns, memory_order_relaxed) / 1e6 / (double)n;
        st->team_decided = 1;
        if (mean <= (st->it->team->max_chunk_ms > 0 ? st->it->team->max_chunk_ms : TEAM_CHUNK_MS)) {
            hand_over(st, 1);
            sl__autotune_say(st->it,
                             "stage '%s': now runs on the consumer's %d threads between its jobs "
                             "(a chunk took %.3f ms on its own threads)",
                             st->name, st->it->team->nthreads, mean);
        }
    }
    return atomic_load_explicit(&st->team_run, memory_order_relaxed);
}

void sl__stage_team_round(sl__stage *st)
{
    const sl__consumer_team *team = st->it->team;
    sl__stage *src = &st->it->stages[0];
    team_round r;
    double t0 = sl__now_ms(), ms;
    int running = atomic_load(&st->running);
    /* The round counts as one of the stage's threads, so that a worker
     * that leaves at the end (its take found the input closed by the
     * round) cannot close the output under a batch the round still makes.
     * None left: the output is closed, nothing is to be made. */
    do {
        if (running == 0)
            return;
    } while (!atomic_compare_exchange_weak(&st->running, &running, running + 1));
    /* The round's batch groups are made first, here: team threads that
     * each ran the source in turn would queue on its lock, and a thread
     * that falls asleep on a lock wakes up late. */
    pthread_mutex_lock(&src->src.lock);
    sl__source_run(src, team->nthreads * TEAM_CHUNKS_PER_THREAD);
    pthread_mutex_unlock(&src->src.lock);
    r.st = st;
    atomic_init(&r.left, team->nthreads * TEAM_CHUNKS_PER_THREAD);
    team->run(team->arg, team_turn, &r);
    sl__stage_thread_done(st);
    ms = sl__now_ms() - t0;
    st->it->team_ms += ms;
    if (ms > TEAM_ROUND_MS) {
        /* for good: team_decided stays set, so it is not judged again */
        hand_over(st, 0);
        sl__autotune_say(st->it,
                         "stage '%s': back on its own threads for good (a round on the "
                         "consumer's threads took %.1f ms, over %.0f)",
                         st->name, ms, TEAM_ROUND_MS);
    }
}

void sl__stage_team_time(sl__stage *st, double now, double *thread_ms, double *busy_ms)
{
    pthread_mutex_lock(&st->tune_lock);
    *thread_ms = sl__occupancy_total(&st->team_time, team_threads(st), now);
    pthread_mutex_unlock(&st->tune_lock);
    *busy_ms = (double)atomic_load_explicit(&st->team_ns, memory_order_relaxed) / 1e6;
}
