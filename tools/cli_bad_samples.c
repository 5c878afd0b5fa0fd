/* cli_bad_samples.c: --error-samples and --max-bad-samples, shared by
 * `train` and `bench pipeline` (see cli.h): parsing them, and setting them
 * on a dataset with a report that prints each bad sample on stderr. */
#include "cli.h"

#include <inttypes.h>
#include <string.h>

void cli_error_samples_default(cli_error_samples *e)
{
    sl_error_samples_options o;
    sl_error_samples_options_init(&o);
    memset(e, 0, sizeof *e);
    e->mode = o.mode;
    e->max_count = o.max_bad_samples;
    e->max_fraction = o.max_bad_fraction;
}

int cli_parse_error_samples(const char *cmd, const char *s, cli_error_samples *e)
{
    if (strcmp(s, "raise") == 0)
        e->mode = SL_ERROR_SAMPLES_RAISE;
    else if (strcmp(s, "skip") == 0)
        e->mode = SL_ERROR_SAMPLES_SKIP;
    else if (strcmp(s, "replace") == 0)
        e->mode = SL_ERROR_SAMPLES_REPLACE;
    else {
        cli_error(cmd, "--error-samples: '%s' is not raise, skip or replace", s);
        return -1;
    }
    return 0;
}

int cli_parse_max_bad_samples(const char *cmd, const char *s, cli_error_samples *e)
{
    size_t len = strlen(s);
    e->cap_given = 1;
    if (len > 1 && s[len - 1] == '%') {
        char num[64];
        double pct;
        if (len >= sizeof num) {
            cli_error(cmd, "--max-bad-samples: expected N or P%%, got '%s'", s);
            return -1;
        }
        memcpy(num, s, len - 1);
        num[len - 1] = '\0';
        if (cli_parse_double(cmd, "--max-bad-samples", num, &pct) != 0)
            return -1;
        if (!(pct >= 0.0 && pct <= 100.0)) {
            cli_error(cmd, "--max-bad-samples: %s is not a percentage in [0, 100]", s);
            return -1;
        }
        e->max_count = -1;
        e->max_fraction = pct / 100.0;
        return 0;
    }
    return cli_parse_int64(cmd, "--max-bad-samples", s, 0, INT64_MAX, &e->max_count);
}

int cli_check_error_samples(const char *cmd, const cli_error_samples *e)
{
    if (e->cap_given && e->mode == SL_ERROR_SAMPLES_RAISE) {
        cli_error(cmd, "--max-bad-samples needs --error-samples skip or replace (with raise, "
                  "the first bad sample fails the run)");
        return -1;
    }
    return 0;
}

static void print_bad_sample(void *user, const sl_bad_sample *b)
{
    cli_bad_report *r = user;
    if (b->replaced)
        r->replaced++;
    else
        r->skipped++;
    if (r->quiet)
        return;
    if (b->replaced)
        cli_error(r->cmd, "replaced sample %" PRId64 " (%s) by sample %" PRId64 ": %s", b->index,
                  b->sample, b->stand_in, b->reason);
    else
        cli_error(r->cmd, "skipped sample %" PRId64 " (%s): %s", b->index, b->sample, b->reason);
}

int cli_set_error_samples(const char *cmd, const cli_error_samples *e, cli_bad_report *report,
                          sl_dataset *ds)
{
    sl_error_samples_options o;
    int rc;
    sl_error_samples_options_init(&o);
    o.mode = e->mode;
    o.max_bad_samples = e->max_count;
    o.max_bad_fraction = e->max_fraction;
    if (report) {
        o.report = print_bad_sample;
        o.report_user = report;
    }
    rc = sl_dataset_set_error_samples(ds, &o);
    if (rc != SL_OK)
        cli_error(cmd, "%s", cli_lib_message(sl_dataset_last_error(ds), rc));
    return rc;
}
