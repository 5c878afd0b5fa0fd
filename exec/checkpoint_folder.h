/* checkpoint_folder.h: the names ModelCheckpoint gives its files
 * (<prefix>-<epoch>_<step>.ckpt, and <that>.tmp-XXXXXX while one is being
 * written, core/atomic_file.h) and keeping a folder of them pruned: by
 * what the folder holds, not by what this process wrote, so an earlier
 * run's checkpoints and a killed writer's temporary files go too. Files
 * whose names do not match exactly are never touched. */
#ifndef SLUICE_EXEC_CHECKPOINT_FOLDER_H
#define SLUICE_EXEC_CHECKPOINT_FOLDER_H

#include <stdint.h>

#include "core/error.h"

/* A temporary file left by a writer that died is removed only once it has
 * not been modified for this long, and only if no one holds its lock (a
 * live writer does, core/atomic_file.c); the age closes the moment between
 * the writer creating the file and locking it. */
#define SL__CKPT_STALE_TEMP_SECONDS 60

/* 1 and *epoch, *step when name is exactly <prefix>-<epoch>_<step>.ckpt
 * with both numbers plain decimals (no sign, no leading zero, fitting
 * int64), else 0. */
int sl__ckpt_name_parse(const char *name, const char *prefix, int64_t *epoch, int64_t *step);
/* 1 when name is <prefix>-<epoch>_<step>.ckpt.tmp-XXXXXX, the temporary
 * name sl__atomic_open gives (six letters or digits), else 0. */
int sl__ckpt_temp_name(const char *name, const char *prefix);

/* After a save of dir/saved: keeps the newest keep_max checkpoints of
 * prefix in dir by (epoch, step), saved always among them (a new run into
 * a folder holding an old run's later checkpoints must not lose the file
 * it just wrote), and removes the others; keep_max 0 keeps them all.
 * Removes this prefix's temporary files that are stale (see
 * SL__CKPT_STALE_TEMP_SECONDS). SL_OK, or SL_EIO / SL_ENOMEM with a
 * message naming the folder or the file in err. */
int sl__ckpt_prune(const char *dir, const char *prefix, const char *saved, int keep_max,
                   sl__error *err);

#endif
