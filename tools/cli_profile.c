/* cli_profile.c: --profile DIR (see cli_profile.h). */
#include "cli_profile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

/* mkdir -p: each parent in turn; an existing directory is fine. */
static int make_dirs(const char *dir)
{
    char path[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        path[i] = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return -1;
        path[i] = i < n ? '/' : '\0';
    }
    return 0;
}

int cli_profile_start(const char *cmd, const char *dir, sl_profiler **out)
{
    struct stat st;
    *out = NULL;
    if (make_dirs(dir) != 0 || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        cli_error(cmd, "--profile %s: cannot make the folder: %s", dir,
                  errno ? strerror(errno) : "not a folder");
        return -1;
    }
    {
        /* Found out now, not after a long run: can the trace be written? */
        char path[4096];
        FILE *f;
        snprintf(path, sizeof path, "%s/trace.json", dir);
        if (!(f = fopen(path, "w"))) {
            cli_error(cmd, "--profile %s: cannot write %s: %s", dir, path, strerror(errno));
            return -1;
        }
        fclose(f);
    }
    if (sl_profiler_new(out, 0) != SL_OK) {
        cli_error(cmd, "--profile: out of memory");
        return -1;
    }
    return 0;
}

int cli_profile_finish(const char *cmd, const char *dir, sl_profiler *p)
{
    char path[4096], err[512];
    uint64_t recorded, dropped;
    int rc;
    if (!p)
        return 0;
    snprintf(path, sizeof path, "%s/trace.json", dir);
    sl_profiler_counts(p, &recorded, &dropped);
    rc = sl_profiler_write_trace(p, path, err, sizeof err);
    sl_profiler_free(p);
    if (rc != SL_OK) {
        cli_error(cmd, "%s", err);
        return -1;
    }
    fprintf(stderr, "profile: %s (%" PRIu64 " events; %" PRIu64 " dropped, the oldest, from full rings)\n",
            path, recorded - dropped, dropped);
    return 0;
}
