/* checkpoint.h: a graph's parameters (and optimizer accumulators) in a
 * file. The format is sluice's own, little-endian:
 *
 *   "SLUICECK"  u32 version (2)  u32 count  i64 global_step
 *   count x { u16 name length, name, u8 dtype (float32), u8 ndim,
 *             i64 shape[ndim], the values as float32 }
 *   version 2 only: the data position, u32 flags (1: saved), u32 0,
 *             u64 seed, i64 steps_per_epoch, i64 epoch, i64 rows
 *   u32 CRC-32 (zlib's) of every byte before it
 *
 * Version 1 files (no position) still load.
 *
 * Saving writes a temporary file beside path and renames it into place, so
 * a crash never leaves a half-written checkpoint under the real name.
 * Loading checks the whole file (size, CRC, names, shapes) before it
 * changes any parameter: a load that fails changes nothing. */
#ifndef SLUICE_CHECKPOINT_H
#define SLUICE_CHECKPOINT_H

#include <stdint.h>

#include "sluice/export.h"
#include "sluice/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where training had got to in its data when a checkpoint was written, so
 * that a resumed run reads on from exactly there (sl_iterator_options'
 * start_epoch and start_rows). */
typedef struct sl_checkpoint_position {
    int saved;               /* 1: the fields below hold a position */
    int32_t devices;         /* the devices the run trained on at once (0 or 1:
                              * one); its steps are global steps of that many
                              * batches */
    uint64_t seed;           /* the dataset's seed (shuffle and random ops) */
    int64_t steps_per_epoch; /* (global) steps in one epoch of the dataset */
    int64_t epoch;           /* the epoch the next step reads from (0-based) */
    int64_t rows;            /* steps of that epoch already trained */
    int32_t ranks;           /* the MPI ranks the run trained on (0 or 1:
                              * one process); each read its own shard */
} sl_checkpoint_position;

/* Writes every parameter of g. On failure the message (naming the file) is
 * in sl_graph_last_error(g). */
SL_API int sl_checkpoint_save(sl_graph *g, const char *path, int64_t global_step);
/* The same with the data position (pos NULL: none). */
SL_API int sl_checkpoint_save_at(sl_graph *g, const char *path, int64_t global_step,
                                 const sl_checkpoint_position *pos);
/* Loads path into g's parameters: every trainable parameter must be in the
 * file with its shape; accumulators ("moments.*") are loaded when both
 * sides have them. Any other entry is an error (the file is another
 * network's). global_step may be NULL. SL_EIO when the file cannot be read,
 * SL_EFORMAT when it is corrupt, truncated or does not match g. */
SL_API int sl_checkpoint_load(sl_graph *g, const char *path, int64_t *global_step);
/* The same, also giving the data position (pos->saved 0 for a file
 * without one); pos may be NULL. */
SL_API int sl_checkpoint_load_at(sl_graph *g, const char *path, int64_t *global_step,
                                 sl_checkpoint_position *pos);

#ifdef __cplusplus
}
#endif
#endif
