/* atomic_file.h: writing a file so that its name only ever shows a
 * complete file: write a temporary file beside it, flush it to disk, then
 * rename it over the real name. */
#ifndef SLUICE_CORE_ATOMIC_FILE_H
#define SLUICE_CORE_ATOMIC_FILE_H

#include <stdio.h>

#include "core/error.h"

typedef struct sl__atomic_file {
    FILE *f;        /* write here */
    char *tmp;      /* the temporary name */
    const char *path;
} sl__atomic_file;

/* Opens a temporary file beside path (path + ".tmp-XXXXXX"), locked with
 * flock before anything is written and until it is renamed or removed, so
 * a cleaner can tell a live writer's file from one a killed writer left
 * (only an empty file may be a live writer's before its lock). On failure
 * returns SL_EIO or SL_ENOMEM with a message naming path in err. */
int sl__atomic_open(sl__atomic_file *af, const char *path, sl__error *err);
/* Flushes, syncs, closes and renames into place; failed is non-zero when
 * the caller's own writes failed, which aborts instead. Either way the
 * temporary file is gone afterwards. Returns SL_OK or SL_EIO (message in
 * err naming path). */
int sl__atomic_close(sl__atomic_file *af, int failed, sl__error *err);

/* Makes the folder path and its missing parents (mkdir -p). SL_EIO with a
 * message naming the part that could not be made. */
int sl__make_dirs(const char *path, sl__error *err);

#endif
