/* cli_autotune.h: what the autotuner says during a run of `bench pipeline`,
 * `bench sink` or `train --autotune`: each line goes to stderr as it comes
 * (unless quiet) and is kept for the report and --json. */
#ifndef SLUICE_TOOLS_CLI_AUTOTUNE_H
#define SLUICE_TOOLS_CLI_AUTOTUNE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_AUTOTUNE_MAX_LINES 32
#define CLI_AUTOTUNE_LINE 256

typedef struct cli_autotune {
    const char *cmd;        /* stderr lines read "sluice: <cmd>: autotune: ..." */
    int quiet;              /* keep the lines, print none */
    size_t nlines;          /* kept (the first CLI_AUTOTUNE_MAX_LINES) */
    size_t dropped;         /* said after those */
    /* When the tuner last judged a change (kept it or undid it), and how
     * many rows had been counted then: the stretch after it ran as tuned,
     * unless a later change is still being tried. `rows` (may be NULL) is
     * the caller's count. */
    const int64_t *rows;
    double settled_ms;      /* 0: nothing changed */
    int64_t settled_rows;
    int pending;            /* the last change said is not judged yet */
    char lines[CLI_AUTOTUNE_MAX_LINES][CLI_AUTOTUNE_LINE];
} cli_autotune;

/* For sl_iterator_options.autotune_log / sl_train_options.autotune_log:
 * arg is a cli_autotune. */
void cli_autotune_log(void *arg, const char *line);
/* The kept lines as a JSON list of strings. */
void cli_autotune_json(FILE *f, const cli_autotune *t);

#endif
