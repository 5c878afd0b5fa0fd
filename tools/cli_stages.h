/* cli_stages.h: the per-stage table that `bench pipeline` and `bench sink`
 * print (sl_stage_stats), as text or as a JSON list. */
#ifndef SLUICE_TOOLS_CLI_STAGES_H
#define SLUICE_TOOLS_CLI_STAGES_H

#include <stddef.h>
#include <stdio.h>

#include "sluice/sluice.h"

/* Enough for any pipeline the CLI builds, plus the consumer. */
#define CLI_MAX_STAGES 32

/* One line per stage: threads, rows, rows/s, and busy, waiting and blocked
 * as percentages of threads x elapsed time, and its output queue's mean
 * occupancy over its capacity; then the verdict (sl_stage_verdict). */
void cli_stages_text(FILE *f, const sl_stage_stats *st, size_t n);
/* sl_stage_verdict's words, as a JSON string. */
void cli_stages_verdict_json(FILE *f, const sl_stage_stats *st, size_t n);
/* A JSON list of objects with the same fields as sl_stage_stats. */
void cli_stages_json(FILE *f, const sl_stage_stats *st, size_t n);

#endif
