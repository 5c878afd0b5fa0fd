/* consumer_team.h: threads a consumer of the pipeline lends it, so that the
 * pipeline's work runs on them between the consumer's own jobs instead of
 * on threads of its own (the executor's compute team, in a sink whose
 * executor moves the batches itself).
 *
 * Why: on a machine with as many CPUs as the team has threads, a pipeline
 * thread that wakes up takes a CPU from one of the team in the middle of
 * an op, and the op ends only when that thread's share is done; each
 * wake-up also costs the waker a system call. Run between two steps, on
 * every thread of the team at once, the same work costs the step its CPU
 * time divided by the team's threads, and wakes nobody.
 *
 * The iterator uses a team only for a last stage that maps batch groups of
 * a source that only orders indices (the fused map+batch of a lazy source),
 * with bad samples raising (stage_team.c): that stage starts on its own
 * threads, goes to the team once its chunks proved short, and then,
 * whenever sl_iterator_next finds nothing ready, a round on the team makes
 * the next batches. The pipeline then no longer runs ahead of its
 * consumer: a consumer that has nothing else to do, or fewer threads than
 * the CPUs, is better served by threads of the pipeline's own. */
#ifndef SLUICE_PIPELINE_CONSUMER_TEAM_H
#define SLUICE_PIPELINE_CONSUMER_TEAM_H

typedef struct sl__consumer_team {
    int nthreads; /* >= 1 */
    /* Runs fn(fn_arg, worker) at least once per thread of the team (worker
     * in 0 .. nthreads - 1 being the thread that runs it; one thread may
     * run several calls, one after another), and returns when all are
     * done. Called on the consumer's thread, from sl_iterator_next. Each
     * thread's tensors come from its part of the dataset's pool
     * (core/pool.h), so that the threads of a round do not contend for
     * one pool's locks and counters. */
    void (*run)(void *arg, void (*fn)(void *fn_arg, int worker), void *fn_arg);
    void *arg;
    /* Chunks the stage's own threads work before the consumer judges
     * whether to hand the stage to the team; 0: the default (16). */
    int warmup_chunks;
    /* The stage goes to the team when those chunks took at most this long
     * on average (ms); 0: the default (5). */
    double max_chunk_ms;
} sl__consumer_team;

struct sl_iterator;

/* The time the consumer spent in rounds on its team so far (ms): work, not
 * a wait for data. Read on the consumer's thread. */
double sl__iterator_team_ms(const struct sl_iterator *it);

#endif
