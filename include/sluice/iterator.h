/* iterator.h: runs a dataset. Making an iterator starts the pipeline's
 * threads; sl_iterator_next() hands out one row at a time, then the end of
 * each epoch and finally the end of data. Freeing the iterator at any point
 * wakes and joins every thread and frees what they held. One thread at a
 * time may call an iterator's functions, except sl_iterator_interrupt,
 * which any thread may call at any time until sl_iterator_free begins. */
#ifndef SLUICE_ITERATOR_H
#define SLUICE_ITERATOR_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/dataset.h"
#include "sluice/pool.h"
#include "sluice/export.h"
#include "sluice/stages.h"
#include "sluice/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_iterator sl_iterator;

/* Versioned (see sluice.h): call sl_iterator_options_init before setting
 * fields; new fields are only ever appended. */
typedef struct sl_iterator_options {
    size_t size;          /* sizeof the struct as the caller compiled it; set by the _init */
    int64_t num_epochs;   /* epochs to deliver (default 1; -1: without end) */
    size_t queue_chunks;  /* chunks each connector holds (default 8) */
    size_t chunk_rows;    /* rows per chunk between stages (default 64) */
    int timeout_ms;       /* sl_iterator_next waits at most this long (-1: forever, default) */
    int32_t unused0;      /* ends the struct without padding (see sluice.h); never used */
    /* Where to start, for resuming a run exactly: the first epoch to deliver
     * (0-based; num_epochs still counts from epoch 0, so epochs start_epoch
     * .. num_epochs - 1 come) and how many of that epoch's rows to skip.
     * What comes is what an iterator started at the beginning would have
     * delivered from that point: the same order, the same random draws.
     * Skipped rows are dropped where the pipeline's sequential part ends,
     * so a lazy source (MNIST, ImageFolder) never reads or decodes them.
     * Not for pipelines with repeat (SL_EINVAL). Defaults 0, 0. */
    int64_t start_epoch;
    int64_t start_rows;
    /* When set, the pipeline's threads record a slice per chunk into it
     * (see profiler.h); it must outlive the iterator. Default NULL. */
    struct sl_profiler *profiler;
    /* 1: tune the pipeline while it runs, from its stage counters
     * (sl_iterator_get_stage_stats) and its buffer pool's: every so many
     * rows the iterator judges the last stretch and makes at most one
     * change: the pool's idle cap up to its peak in use (256 MiB at most;
     * only when no limit was set, and restored when the iterator is
     * freed), a map's (or batch's) workers up to autotune_max_workers, or
     * a queue's chunks up to 32; a change is kept only if throughput did
     * not fall. What it changes and why goes to autotune_log. Works with a
     * profiler. Default 0. */
    int32_t autotune;
    /* The most workers a parallel stage may get (default: the CPUs this
     * process may use, sl_cpus_available); the threads are started at
     * once and sleep until needed. */
    int32_t autotune_max_workers;
    /* Called on the thread calling sl_iterator_next with one line per
     * change, e.g. "autotune: map+batch: 1 -> 2 workers (busy 98% per
     * worker; the consumer waited 41%)". May be NULL. */
    void (*autotune_log)(void *arg, const char *line);
    void *autotune_log_arg;
} sl_iterator_options;

/* One row: column i is columns[i], in the dataset's column order. The row
 * owns one reference to each tensor: give them back with sl_row_clear(). */
typedef struct sl_row {
    size_t ncolumns;
    sl_tensor *columns[SL_MAX_COLUMNS];
} sl_row;

/* Where time went, for benchmarks and reports. */
typedef struct sl_iterator_stats {
    double source_load_ms;  /* one-time reading of the source (MNIST pixels) */
    uint64_t rows_out;      /* rows handed out by sl_iterator_next */
    size_t pool_bytes;      /* bytes held by the iterator's buffer pool */
    int threads;            /* threads the pipeline runs */
    uint64_t consumer_wakeups; /* times sl_iterator_next slept waiting for data and was
                                * woken; about one per wait when nothing polls */
    sl_pool_stats pool;     /* the buffer pool's, which the dataset's iterators share
                             * (so its counts include earlier iterators') */
    uint64_t samples_skipped;  /* bad samples dropped so far (sl_error_samples_options) */
    uint64_t samples_replaced; /* bad samples a stand-in replaced so far */
} sl_iterator_stats;

/* The _sized function writes at most size bytes (for bindings); C callers
 * use the inline _init. */
SL_API void sl_iterator_options_init_sized(sl_iterator_options *o, size_t size);
static inline void sl_iterator_options_init(sl_iterator_options *o)
{
    sl_iterator_options_init_sized(o, sizeof *o);
}

/* Starts ds's pipeline (o may be NULL for defaults). On failure the message
 * is in sl_dataset_last_error(ds); options not made by
 * sl_iterator_options_init (or setting fields this library does not know)
 * give SL_EINVAL. */
SL_API int sl_iterator_new(sl_iterator **out, sl_dataset *ds, const sl_iterator_options *o);
/* Returns SL_OK with a row, SL_END_OF_EPOCH (row empty) when an epoch
 * ended, SL_END_OF_DATA once every epoch has been delivered (and from then
 * on), SL_ECANCELED once sl_iterator_interrupt was called, or a negative
 * status whose message is in sl_iterator_last_error()
 * (and is returned again by later calls; but SL_ETIMEDOUT only says that
 * nothing came in time: the next call waits again). */
SL_API int sl_iterator_next(sl_iterator *it, sl_row *row);
SL_API const char *sl_iterator_last_error(const sl_iterator *it);
/* Makes a sl_iterator_next blocked in another thread return SL_ECANCELED
 * at once (woken, not polled), and every later call too, with a message
 * saying so in sl_iterator_last_error (an iterator that had already ended
 * or failed keeps that status). The pipeline's threads run on until
 * sl_iterator_free stops and joins them. Thread-safe; for stopping a
 * training loop that waits for data (sl_model_stop). */
SL_API void sl_iterator_interrupt(sl_iterator *it);
SL_API void sl_iterator_get_stats(const sl_iterator *it, sl_iterator_stats *out);


/* Writes the pipeline's stages, in order, then a stage named "consumer":
 * the thread calling sl_iterator_next, whose wait is for the last stage and
 * whose busy time is its own work between calls. Fills at most max entries
 * of out and returns how many there are (call with max 0 to count). */
SL_API size_t sl_iterator_get_stage_stats(const sl_iterator *it, sl_stage_stats *out,
                                          size_t max);
/* Where the iterator has got to: the epoch the next row comes from
 * (0-based) and the rows of it handed out so far. An iterator made with
 * these as start_epoch and start_rows continues from exactly here. */
SL_API void sl_iterator_get_position(const sl_iterator *it, int64_t *epoch, int64_t *rows);
/* Stops the pipeline: wakes and joins every thread, frees everything (rows
 * already handed out stay valid until cleared). NULL is ignored. */
SL_API void sl_iterator_free(sl_iterator *it);

SL_API void sl_row_clear(sl_row *row);

#ifdef __cplusplus
}
#endif
#endif
