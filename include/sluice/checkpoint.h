/* checkpoint.h: a graph's parameters (and optimizer accumulators) in a
 * file. The format is sluice's own, little-endian:
 *
 *   "SLUICECK"  u32 version (1)  u32 count  i64 global_step
 *   count x { u16 name length, name, u8 dtype (float32), u8 ndim,
 *             i64 shape[ndim], the values as float32 }
 *   u32 CRC-32 (zlib's) of every byte before it
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

/* Writes every parameter of g. On failure the message (naming the file) is
 * in sl_graph_last_error(g). */
SL_API int sl_checkpoint_save(sl_graph *g, const char *path, int64_t global_step);
/* Loads path into g's parameters: every trainable parameter must be in the
 * file with its shape; accumulators ("moments.*") are loaded when both
 * sides have them. Any other entry is an error (the file is another
 * network's). global_step may be NULL. SL_EIO when the file cannot be read,
 * SL_EFORMAT when it is corrupt, truncated or does not match g. */
SL_API int sl_checkpoint_load(sl_graph *g, const char *path, int64_t *global_step);

#ifdef __cplusplus
}
#endif
#endif
