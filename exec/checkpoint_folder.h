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

/* A temporary file is a dead writer's, and removed, when no one holds its
 * lock (a live writer does, core/atomic_file.c) and it has content (a
 * writer locks before it writes) or has not been modified for this long:
 * an empty file may be a live writer's between creating and locking it. */
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
 * Removes this prefix's temporary files that dead writers left (see
 * SL__CKPT_STALE_TEMP_SECONDS). SL_OK, or SL_EIO / SL_ENOMEM with a
 * message naming the folder or the file in err. */
int sl__ckpt_prune(const char *dir, const char *prefix, const char *saved, int keep_max,
                   sl__error *err);
/* At a run's start: removes the temporary files of prefix in dir that
 * dead writers left (as sl__ckpt_prune does), calling removed(user, path)
 * for each (removed may be NULL). A folder that does not exist holds none.
 * SL_OK, or SL_EIO / SL_ENOMEM with a message naming the folder or the
 * file in err. */
int sl__ckpt_remove_temps(const char *dir, const char *prefix,
                          void (*removed)(void *user, const char *path), void *user,
                          sl__error *err);

#endif
