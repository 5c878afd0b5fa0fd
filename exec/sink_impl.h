/* sink_impl.h: one sink, shared by the three ways to sink (exec/sink.c's
 * train, exec/data_sink.c's data_sink, exec/dataset_helper.c's custom
 * loops): start a channel for the model's training step, run a sink of
 * steps on the executor's thread, and add the channel's figures to the
 * model's sink stats. */
#ifndef SLUICE_EXEC_SINK_IMPL_H
#define SLUICE_EXEC_SINK_IMPL_H

#include "exec/model_impl.h"

/* One sink: what the executor's thread runs, and what it found. */
typedef struct sl__sink_run {
    sl_model *m;
    sl__channel *f;             /* device `rank`'s queue is the one GetNext reads */
    struct sl__replica_set *rs; /* several devices: the replicas (else NULL) */
    int rank;                   /* the replica this run is */
    int64_t steps_wanted;      /* at most this many steps (-1: no limit) */
    int to_epoch_end;          /* an end of epoch ends the sink (sink_size -1) */
    int64_t timeout_ms;        /* GetNext's */
    /* results */
    int64_t steps;
    float loss;
    int rc;
    int end_of_epoch, end_of_data;
    double getnext_wait_ms;
    double first_wait_ms;      /* the first GetNext's */
    int called;                /* GetNext was called */
    sl__error err;
} sl__sink_run;

/* Starts a channel for the model's training step on its device, its
 * pipeline at start (NULL: the dataset's beginning), num_epochs epochs
 * (-1: no end); what names the caller in errors ("data_sink"). */
int sl__sink_start_channel(sl_model *m, sl_dataset *ds, const sl_train_options *o,
                           int64_t num_epochs, const sl__train_start *start, const char *what,
                           sl__channel **out);
/* Runs one sink of at most steps_wanted steps (-1: no limit), ending at
 * the end of the epoch when to_epoch_end, on the executor's thread while
 * the host waits; r says what happened. */
void sl__sink_run_once(sl_model *m, sl__channel *f, int64_t steps_wanted, int to_epoch_end,
                       int64_t timeout_ms, sl__sink_run *r);
/* Adds the channel's figures to the model's sink stats. */
void sl__sink_collect_stats(sl_model *m, sl__channel *f);

#endif
