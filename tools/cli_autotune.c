/* cli_autotune.c: the autotuner's lines on the command line (cli_autotune.h). */
#include "cli_autotune.h"

#include <string.h>

#include "cli.h"

void cli_autotune_log(void *arg, const char *line)
{
    cli_autotune *t = arg;
    /* A change reads "a -> b (why)"; its judgement "kept ..." or "...
     * back to ...". */
    if (strstr(line, ": kept ") || strstr(line, " back to ")) {
        t->settled_ms = cli_now_ms();
        t->settled_rows = t->rows ? *t->rows : 0;
        t->pending = 0;
    } else if (strstr(line, " -> ")) {
        t->pending = 1;
    }
    if (!t->quiet)
        fprintf(stderr, "sluice: %s: %s\n", t->cmd, line);
    if (t->nlines < CLI_AUTOTUNE_MAX_LINES)
        snprintf(t->lines[t->nlines++], CLI_AUTOTUNE_LINE, "%s", line);
    else
        t->dropped++;
}

void cli_autotune_json(FILE *f, const cli_autotune *t)
{
    fputc('[', f);
    for (size_t i = 0; i < t->nlines; i++) {
        if (i)
            fputs(", ", f);
        cli_json_string(f, t->lines[i]);
    }
    fputc(']', f);
}
