/* stage_verdict.c: which stage limits throughput, in words, from the
 * per-stage counters (sl_stage_verdict). A pure function of the figures:
 * the rules are tested on constructed cases.
 *
 * The stage that matters last is the final consumer: the executor of a
 * sink (its wait is GetNext's), else the thread calling sl_iterator_next.
 * An executor idle between sinks most of the time waits on the host: its
 * callbacks are the bottleneck. A consumer that hardly waits (after
 * start-up: the wait for the first batch does not count) is the
 * bottleneck, and the pipeline keeps up. If it waits, the busiest stage
 * before it is the suspect: saturated (busy >= 80% of its threads' time),
 * it limits throughput; if no stage is, stages blocked on full queues
 * point at queues too small to absorb their bursts, and otherwise the
 * CPUs are short (other work, or too few of them for the threads). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sluice/stages.h"

#define KEEPS_UP 0.05     /* the consumer waits less than this: it is the bottleneck */
#define SATURATED 0.80    /* a stage busy this much of its threads' time limits the rest */
#define BLOCKED 0.20      /* a stage blocked this much waits on a small queue */
#define HOST_BOUND 0.30   /* an executor idle this much between sinks waits on the host */

/* What the verdict has written so far: at most len bytes of buf, and the
 * length of the whole text (which may be more). */
typedef struct text {
    char *buf;
    size_t len, used;
} text;

static void add(text *t, const char *fmt, ...)
{
    va_list ap;
    size_t at = t->used < t->len ? t->used : t->len;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(t->buf + at, t->len - at, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->used += (size_t)n;
}

/* The stage's thread time: thread_ms, or threads x elapsed for figures
 * made without it (at least one thread's). */
static double thread_time(const sl_stage_stats *s)
{
    if (s->thread_ms > 0)
        return s->thread_ms;
    return (double)(s->threads > 0 ? s->threads : 1) * s->elapsed_ms;
}

static double share(double part, const sl_stage_stats *s)
{
    double whole = thread_time(s);
    return whole > 0 ? part / whole : 0;
}

/* The share of its time after start-up that s waited for input: the wait
 * for its first input is the stages before it starting (a shuffle buffer
 * filling), which no capacity or worker count changes. */
static double steady_wait(const sl_stage_stats *s)
{
    double whole = thread_time(s) - s->startup_wait_ms;
    double part = s->wait_input_ms - s->startup_wait_ms;
    return whole > 0 && part > 0 ? part / whole : 0;
}

/* The share of its time after start-up that s was busy. */
static double steady_busy(const sl_stage_stats *s)
{
    double whole = thread_time(s) - s->startup_wait_ms;
    return whole > 0 ? s->busy_ms / whole : 0;
}

static int is_executor(const sl_stage_stats *s)
{
    return strncmp(s->name, "executor", 8) == 0;
}

/* The final consumer: the executor when there is one, else the last. */
static size_t final_consumer(const sl_stage_stats *st, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (is_executor(&st[i]))
            return i;
    return n - 1;
}

size_t sl_stage_verdict(const sl_stage_stats *st, size_t n, char *buf, size_t len)
{
    text t = {buf, len, 0};
    size_t c, busiest = (size_t)-1, blocked = (size_t)-1;
    double wait, best = -1, most_blocked = -1;
    const char *who, *waited;
    if (len > 0)
        buf[0] = '\0';
    if (n == 0) {
        add(&t, "no stages to judge");
        return t.used;
    }
    c = final_consumer(st, n);
    who = is_executor(&st[c]) ? "the executor" : "the consumer";
    waited = is_executor(&st[c]) ? "GetNext waited" : "it waited";
    wait = steady_wait(&st[c]);
    for (size_t i = 0; i < c; i++) {
        double b = share(st[i].busy_ms, &st[i]), k = share(st[i].blocked_output_ms, &st[i]);
        if (st[i].threads == 0)
            continue; /* its time is the next stage's */
        if (b > best) {
            best = b;
            busiest = i;
        }
        if (k > most_blocked) {
            most_blocked = k;
            blocked = i;
        }
    }
    if (is_executor(&st[c]) && share(st[c].blocked_output_ms, &st[c]) >= HOST_BOUND) {
        add(&t,
            "the host limits throughput: the executor was idle %.0f%% of the time between "
            "sinks, while the host ran its callbacks; sink less often (a larger sink_size) or "
            "make the callbacks cheaper",
            100 * share(st[c].blocked_output_ms, &st[c]));
    } else if (wait < KEEPS_UP || busiest == (size_t)-1) {
        add(&t, "%s is the bottleneck (busy %.0f%%); %s %.1f%% of the time: the pipeline keeps up",
            who, 100 * steady_busy(&st[c]), waited, 100 * wait);
        if (st[c].startup_wait_ms > 0.1 * st[c].elapsed_ms)
            add(&t,
                " (not counting the %.0f ms of %.0f ms it waited for the first batch, while the "
                "pipeline started)",
                st[c].startup_wait_ms, st[c].elapsed_ms);
    } else if (best >= SATURATED) {
        add(&t, "stage '%s' limits throughput (busy %.0f%% on %d thread%s); %s %.0f%% of the time: %s",
            st[busiest].name, 100 * best, st[busiest].threads,
            st[busiest].threads == 1 ? "" : "s", waited, 100 * wait,
            strncmp(st[busiest].name, "transfer", 8) == 0
                ? "batches are copied too slowly for the device"
                : "add workers or move work out of it");
    } else if (blocked != (size_t)-1 && most_blocked >= BLOCKED) {
        add(&t,
            "no stage is saturated (the busiest, '%s', is busy %.0f%%), yet %s %.0f%% of the "
            "time while '%s' was blocked %.0f%% on a full queue of %zu: the queues are too small "
            "for the stages' bursts; give them more capacity",
            st[busiest].name, 100 * best, waited, 100 * wait, st[blocked].name,
            100 * most_blocked, st[blocked].capacity);
    } else {
        add(&t,
            "no stage is saturated (the busiest, '%s', is busy %.0f%%) and none is blocked, yet "
            "%s %.0f%% of the time: the stages wait for CPUs (other work on the machine, or more "
            "threads than CPUs)",
            st[busiest].name, 100 * best, waited, 100 * wait);
    }
    return t.used;
}
