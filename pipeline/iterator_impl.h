/* iterator_impl.h: what the files that run a dataset share. The iterator
 * cuts the node chain into stages (iterator_plan.c), each a small set of
 * threads joined to the next by a bounded queue: the source (stage_source.c),
 * map / batch workers and sequential nodes (stage_workers.c); the consumer
 * and the public API are in iterator.c. Private to pipeline/. */
#ifndef SLUICE_PIPELINE_ITERATOR_IMPL_H
#define SLUICE_PIPELINE_ITERATOR_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "sluice/iterator.h"
#include "core/queue.h"
#include "core/trace.h"
#include "pipeline/consumer_team.h"
#include "pipeline/dataset_impl.h"
#include "pipeline/nodes.h"

#define SL__CHUNK_BYTES (1u << 20) /* a chunk carries at most ~1 MiB of data */
#define SL__AUTOTUNE_MAX_QUEUE 32  /* chunks the autotuner may let a queue hold */

typedef enum sl__stage_kind {
    SL__STAGE_SOURCE,
    SL__STAGE_MAP,
    SL__STAGE_COLLATE,
    SL__STAGE_SEQ
} sl__stage_kind;

typedef struct sl__stage {
    sl__stage_kind kind;
    struct sl_iterator *it;
    char name[96];
    sl_queue *in;          /* the previous stage's output (NULL for the source) */
    sl_queue out;
    size_t chunk_rows;     /* rows per output chunk */
    int nthreads;
    int started;           /* threads actually started */
    atomic_int running;    /* threads not yet finished */
    pthread_t *threads;
    /* SL__STAGE_MAP */
    sl__map_step *steps;   /* (nsteps,) */
    size_t nsteps;
    sl__map_work map;
    int collate;           /* SL__STAGE_MAP: chunks are batch groups to stack after mapping */
    int reads;             /* SL__STAGE_MAP, SL__STAGE_COLLATE: rows arrive unread (index
                            * only) and the workers read them from the source */
    /* SL__STAGE_MAP and SL__STAGE_COLLATE: the columns of the rows (for messages) */
    sl__schema schema;
    sl__collate_work collation;
    /* SL__STAGE_SOURCE and SL__STAGE_SEQ: the sequential nodes the thread runs */
    sl__seq_node **nodes;
    size_t nnodes;
    /* SL__STAGE_SOURCE: where reading has got to. Run by the stage's thread,
     * or, when the stage has none (pulled), by whoever takes `lock`: a
     * worker of the next stage that finds its input empty, or, when the
     * consumer's team runs that stage, the consumer before a round and a
     * team thread that finds the input empty (stage_team.c). */
    struct {
        pthread_mutex_t lock;
        sl__out out;
        sl__error err;
        int64_t *order;        /* this epoch's sample indices */
        int64_t n;             /* samples per epoch */
        int64_t epoch, pos;
        int prepared, ordered, finished;
        int pass_ended;        /* combined: the parts' pass has ended */
        /* skip: the samples this pass dropped, whose stand-ins end it */
        sl__bad_record *pending, *pending_tail;
    } src;
    int pulls_source;      /* SL__STAGE_MAP, SL__STAGE_COLLATE: its workers run the source */
    /* May run on the consumer's team instead of its threads (stage_team.c,
     * consumer_team.h). team_run says which runs it now: written by the
     * consumer under tune_lock, read by workers to park. work_ns and
     * work_chunks time the chunks its threads work, for the consumer to
     * judge; team_ns sums the rounds' work on each team thread;
     * team_time integrates the team's threads over its spells (under
     * tune_lock, as thread_time the stage's own); team_tracks are each team
     * thread's (by worker number) with a profiler. */
    int team_able;
    atomic_int team_run;
    int team_decided;      /* the consumer has judged the threads' chunks: once */
    atomic_ullong work_ns;
    atomic_ullong work_chunks;
    atomic_ullong team_ns;
    sl__occupancy team_time; /* the team's threads while it runs the stage */
    struct sl__track **team_tracks;
    /* Bad samples (sl_error_samples_options; bad_samples.c). */
    int per_sample;        /* SL__STAGE_MAP: its maps come before any batch, so a
                            * failing row is one sample, which may be bad */
    int pads;              /* SL__STAGE_SEQ, skip: fills the places of the samples the
                            * map stage before it dropped, at each end of epoch */
    int64_t skip_first;    /* SL__STAGE_SOURCE, SL__STAGE_SEQ: units its chain drops before
                            * its first end of epoch (an iterator started mid-epoch) */
    /* For stage reports (iterator_stats.c): rows output, and when the last
     * thread ended (0 while any runs). */
    atomic_ullong rows_out;
    _Atomic double finished_ms;
    /* With a profiler (sl_iterator_options.profiler): the stage's name as
     * the profiler keeps it, and how many of its threads opened a track. */
    const char *trace_name;
    const char *trace_queue_name; /* "<stage> queue": its output's fill, a counter */
    atomic_int traced_threads;
    /* How many of its threads work (autotune.c may change it while the
     * stage runs): a parallel stage's workers 0 .. active-1 take chunks,
     * the others sleep on tune_cv until `active` grows or a worker leaves
     * (`ending`). thread_time integrates `active` for the busy time of
     * stage reports. All under tune_lock; `active` is also read without
     * it, once per chunk. */
    pthread_mutex_t tune_lock;
    pthread_cond_t tune_cv;
    int tune_ready;        /* tune_lock and tune_cv were made */
    atomic_int active;
    int ending;
    atomic_int next_worker; /* hands each worker its number */
    sl__occupancy thread_time;
} sl__stage;

/* The sampler's orders of the two passes whose bad samples last needed a
 * stand-in (bad_samples.c); made only when bad samples are dealt with. */
typedef struct sl__standins {
    pthread_mutex_t lock;
    int ready;             /* lock made */
    int64_t epoch[2];      /* -1: empty */
    int64_t *order[2];
    int next;              /* the slot to reuse next */
} sl__standins;

struct sl_iterator {
    sl__source *source;
    /* A concat's or zip's parts, running (combine.h); NULL for other
     * sources. The source stage takes its rows from it. */
    struct sl__combine_run *combined;
    sl__node *nodes;       /* the iterator's own copy of the description */
    size_t nnodes;
    sl__schema schema;     /* columns it hands out */
    uint64_t seed;
    int64_t passes;        /* passes over the source; -1: without end */
    int lazy_source;       /* the source thread only orders indices; the first
                            * parallel stage reads the samples */
    sl_pool *pool;
    struct sl__batch_lender *lender; /* memory batches are stacked into, or NULL */
    const sl__consumer_team *team; /* the consumer's threads, or NULL */
    /* Bounds the decoded images the map workers hold at once (see
     * sl_dataset_set_decode_budget); made only when a map decodes. */
    int has_decode_budget;
    sl__byte_budget decode_budget;
    int fuse_decode; /* SL_DECODE_FUSION_* (sl_dataset_set_decode_fusion) */
    atomic_int stop;
    atomic_int interrupted; /* sl_iterator_interrupt was called */
    sl__stage *stages;
    size_t nstages;
    sl_iterator_options opts;
    /* consumer side */
    sl__chunk *cur;
    size_t pos;
    int status;            /* sticky: SL_END_OF_DATA or an error */
    int64_t epochs_out;    /* ends of epoch handed out (counting from epoch 0, so a
                            * start at epoch e begins at e) */
    int64_t epoch_rows_out; /* rows handed out in the current epoch */
    sl__error error;
    uint64_t rows_out;
    double team_ms;        /* spent running rounds on the consumer's team */
    /* Bad samples (bad_samples.c): what to do with them, stand-ins, and the
     * consumer's counts and cap. */
    sl_error_samples_options bad;
    sl__standins standins;
    int64_t bad_allowed;   /* bad samples one pass may have */
    int64_t bad_pass;      /* the newest pass a bad sample came from (-1: none yet) */
    int64_t bad_in_pass;   /* bad samples of it so far */
    uint64_t samples_skipped, samples_replaced;
    double started_ms;     /* when the stages' threads started (stage reports) */
    struct sl__autotune *tune; /* NULL unless opts.autotune (autotune.c) */
};

/* Whether the iterator is shutting down (threads return when they see it). */
static inline int sl__stopping(const sl_iterator *it)
{
    return atomic_load_explicit(&it->stop, memory_order_relaxed);
}

/* --- iterator_plan.c ------------------------------------------------------ */

/* Cuts it->nodes into it->stages (queues made, threads not started). On
 * failure the message, if any, is in it->error, and sl__stages_free cleans
 * up what was made. */
int sl__stages_build(sl_iterator *it);
/* Frees every stage (after their threads were joined) and what their
 * queues still hold. */
void sl__stages_free(sl_iterator *it);

/* --- autotune.c ----------------------------------------------------------- */

/* Makes it->tune when it->opts.autotune is set (after the stages are
 * built, before their threads start); SL_ENOMEM with it->error set. */
int sl__autotune_new(sl_iterator *it);
void sl__autotune_free(sl_iterator *it);
/* Called by sl_iterator_next for each row handed out: every so many rows,
 * judges the last window from the stage counters and makes at most one
 * change (see autotune.c). */
void sl__autotune_tick(sl_iterator *it);
/* Gives a line to the options' autotune_log, when there is one: what the
 * tuner (or a stage handed to the consumer's team) changed and why. */
void sl__autotune_say(sl_iterator *it, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* --- stage_source.c ------------------------------------------------------- */

/* Chunks a worker sends per turn at the source: enough that the other
 * workers find work queued rather than a turn at the source each. */
#define SL__PULL_CHUNKS 8
/* Advances the source (see stage_source.c) by up to max_chunks chunks (0:
 * to its end); the caller is the source's thread or holds st->src.lock. */
void sl__source_run(sl__stage *st, int max_chunks);
/* The source stage's thread. */
void *sl__source_main(void *arg);

/* --- stage_workers.c ------------------------------------------------------ */

/* The thread function of a stage of this kind. */
void *(*sl__stage_main(sl__stage_kind kind))(void *);
/* Sends err downstream after what was already sent and closes the input. */
void sl__stage_send_error(sl__stage *st, sl__out *out, const sl__error *err);
/* Called by each thread of st as it ends; the last one closes st's output. */
void sl__stage_thread_done(sl__stage *st);
/* Sets how many of st's threads work (1 .. nthreads): more wakes sleeping
 * workers, fewer lets the highest-numbered ones finish their chunk and
 * sleep. */
void sl__stage_set_active(sl__stage *st, int active);
/* Wakes every sleeping worker of st for good (a worker left, or shutdown). */
void sl__stage_wake_parked(sl__stage *st);
/* What became of a chunk a thread put through a stage. */
typedef enum sl__turn_end {
    SL__TURN_GO_ON, /* pushed: take the next */
    SL__TURN_LAST,  /* pushed an end of data or an error: nothing follows */
    SL__TURN_LEAVE  /* nothing pushed: the pipeline is stopping (or out of memory) */
} sl__turn_end;
/* Works chunk (number seq), its tensors from pool (NULL: the iterator's),
 * and puts it, or the error it ended in, into st's output under its
 * number, so order is kept; adds the time the work took (not the push) to
 * *work_ns. track and work_ns may be NULL. */
sl__turn_end sl__stage_work_and_push(sl__stage *st, struct sl__track *track, sl__chunk *chunk,
                                     uint64_t seq, sl_pool *pool, atomic_ullong *work_ns,
                                     sl__error *err);
/* Takes the next chunk of a stage that pulls its source, for a thread of
 * the consumer's team: only a chunk whose push into st's output cannot
 * block. Pops one, or runs the source a chunk's worth (twice at most, as
 * another thread may take what a turn sent) and then pops one. SL_OK;
 * SL_ETIMEDOUT when the output has no room, or nothing came (the other
 * threads took it, or the pipeline is stopping); SL_ECLOSED at the end. */
int sl__stage_take_bounded(sl__stage *st, sl__chunk **chunk, uint64_t *seq);
/* With a profiler, a track for a thread of st: "<stage> #k". */
struct sl__track *sl__stage_open_track(sl__stage *st);
/* The number of st's threads working now, for its thread time: none while
 * the consumer's team runs it. Under tune_lock. */
size_t sl__stage_working_threads(sl__stage *st);

/* --- stage_team.c ---------------------------------------------------------- */

/* For the consumer of a team-able stage (team_able), before it pops: 1 if
 * the consumer's team runs the stage now. Until it has judged, it judges
 * the chunks the stage's threads worked, and hands the stage to the team
 * once they proved short. */
int sl__stage_on_team(sl__stage *st);
/* For that consumer, which found nothing ready: a round on its team, in
 * which each team thread works chunks while the output has room for them.
 * A round that ran too long hands the stage back to its threads for good.
 * The consumer then pops as usual. */
void sl__stage_team_round(sl__stage *st);
/* A team-able stage's time on the team: its threads x time (ms), and the
 * rounds' work on them (ms). Any thread. */
void sl__stage_team_time(sl__stage *st, double now, double *thread_ms, double *busy_ms);

/* --- bad_samples.c --------------------------------------------------------- */

/* 1 when status is a bad sample's error (a data error), 0 for the errors
 * that always fail the pipeline (no memory, shutdown, threads, timeouts). */
int sl__is_bad_sample_error(int status);
/* Sets the cap and, unless bad samples raise, the stand-ins' lock (the
 * message on failure is in it->error). */
int sl__standins_init(sl_iterator *it);
void sl__standins_destroy(sl_iterator *it);
/* A record of the sample in row that failed with err; NULL without memory. */
sl__bad_record *sl__bad_record_new(const sl__source *src, const sl__row *row,
                                   const sl__error *err);
/* Makes into *out a stand-in for bad (see dataset.h): a sample of its pass,
 * read and run through the per-sample maps of stages 1 .. upto. Fails, with
 * the message in err, when none of SL_ERROR_SAMPLES_TRIES draws is good or
 * on an error that is not a bad sample's. */
int sl__standin_make(sl_iterator *it, size_t upto, const sl__bad_record *bad, sl__row *out,
                     sl__error *err);
/* A map or reading stage's rows one at a time, each read (when the stage
 * reads) and mapped (when it maps); a bad one is replaced in place or
 * dropped, and recorded in the chunk. On another error the chunk keeps the
 * rows before the failing one, as sl__map_apply does. */
int sl__bad_work_rows(sl__stage *st, sl__chunk *chunk, sl__error *err);
/* The source thread's read of row failed with why, a bad sample's error:
 * 1 when row now holds its stand-in, 0 when it was dropped (a stand-in ends
 * the pass: sl__bad_source_pad), negative on failure (message in err). */
int sl__bad_source_sample(sl__stage *st, sl__row *row, const sl__error *why, sl__error *err);
/* Makes into row the stand-in of the first sample dropped this pass and not
 * yet filled (st->src.pending is not empty). */
int sl__bad_source_pad(sl__stage *st, sl__row *row, sl__error *err);
/* Consumer side: counts chunk's records, reports each, and fails the
 * iterator (its status and message) when a pass exceeds the cap. */
int sl__bad_account(sl_iterator *it, const sl__chunk *chunk);

#endif
