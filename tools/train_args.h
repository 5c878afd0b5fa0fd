/* train_args.h: the command lines of `sluice train` and `sluice eval`,
 * parsed (train_args.c) apart from running them (train.c). */
#ifndef SLUICE_TRAIN_ARGS_H
#define SLUICE_TRAIN_ARGS_H

#include <stdint.h>

#include "sluice/sluice.h"
#include "cli.h"
#include "cli_autotune.h"

/* Options both commands share, and train's own. */
typedef struct train_args {
    const char *cmd;
    sl_model_options model;
    sl_train_options train;
    const char *device;     /* --device as given: one name, or a list */
    int ndevices;           /* names in it */
    int threads_given;      /* --threads was given */
    sl_device_options device_options; /* --sim-cores */
    const char *data;
    int64_t epochs;
    int64_t workers;
    int64_t pool_idle_mb;    /* -1: the library's default */
    const char *save, *load, *resume, *save_graphs;
    int64_t log_every;       /* 0: one line at each epoch's end */
    int64_t max_steps;       /* 0: no limit */
    int no_eval;
    int64_t eval_every;      /* --eval-every N: 0, or evaluate every N-th epoch */
    const char *ckpt_dir;
    int64_t ckpt_steps;
    int64_t ckpt_keep;
    int time_monitor;
    int stages;       /* --stages: print the stage table after a sink train */
    const char *profile; /* --profile DIR */
    cli_autotune tune;   /* --autotune: what it said */
    int json;
    cli_error_samples errors; /* for the train split */
    cli_bad_report report;
    int distributed;         /* started by mpirun: data parallel across ranks */
    int rank, ranks;         /* this process's rank and the ranks (0 and 1 alone) */
    char cmd_buf[32];        /* "train: rank R", the errors' prefix across ranks */
} train_args;

/* Parses argv into a for `sluice train` (is_eval 0) or `sluice eval` (1):
 * CLI_EXIT_OK, CLI_EXIT_USAGE after printing what is wrong, or -1 after
 * printing --help to stdout. a's strings point into argv. */
int cli_train_parse_args(int argc, char **argv, train_args *a, int is_eval);

#endif
