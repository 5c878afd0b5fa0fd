/* cli_profile.h: --profile DIR of train, bench pipeline and bench sink: a
 * profiler for the run, and DIR/trace.json (a Chrome trace) after it. */
#ifndef SLUICE_TOOLS_CLI_PROFILE_H
#define SLUICE_TOOLS_CLI_PROFILE_H

#include "sluice/sluice.h"

/* Makes DIR (and its parents) and a profiler. Returns 0, or prints why
 * not (naming cmd and DIR) and returns -1. */
int cli_profile_start(const char *cmd, const char *dir, sl_profiler **out);
/* Writes DIR/trace.json, says so on stderr with the events it holds, and
 * frees the profiler. Returns 0, or prints why not and returns -1. */
int cli_profile_finish(const char *cmd, const char *dir, sl_profiler *p);

#endif
