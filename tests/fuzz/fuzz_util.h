/* fuzz_util.h: what the libFuzzer harnesses under tests/fuzz share: one
 * private temporary folder per process (removed at exit), writing an input
 * into it, and the tiny network whose checkpoints fuzz_checkpoint loads
 * (make_corpus writes its seeds from the same network). */
#ifndef SLUICE_FUZZ_UTIL_H
#define SLUICE_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/sluice.h"

/* libFuzzer's entry points, declared for -Wmissing-prototypes. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The process's temporary folder under $TMPDIR (or /tmp), made on the
 * first call and removed with everything in it at exit; aborts when it
 * cannot be made (a harness without it would test nothing). */
const char *fz_tmpdir(void);
/* fz_tmpdir()/name, malloc'd; aborts when out of memory. */
char *fz_path(const char *name);
/* Writes data to path (gzip-compressed when gz is 1), replacing what the
 * file held; aborts on failure:
 * the harness's own I/O failing is not a finding about the library. */
void fz_write(const char *path, const void *data, size_t n, int gz);

/* The network of the checkpoint harness: an MLP on 1x2x2 images, one
 * hidden layer of 3, 2 classes, batch 1, with Momentum's accumulators
 * (parameters fc1.weight (3, 4), fc1.bias (3), fc2.weight (2, 3),
 * fc2.bias (2) and their "moments.*"). with_optimizer 0 leaves the
 * accumulators out. NULL on failure (message on stderr). */
sl_graph *fz_checkpoint_graph(int with_optimizer);

#endif
