/* sluice.h: the whole public API of libsluice.
 *
 * Options structs (sl_mnist_options, sl_iterator_options, sl_model_options,
 * ...) are versioned so that a program compiled against one libsluice runs
 * against a later one. Each starts with `size_t size`, which its _init sets
 * to the size your program was compiled with: always call the _init, then
 * set fields. New fields are only ever appended, and the library reads at
 * most `size` bytes: an older, smaller struct gets defaults for the fields
 * it lacks; a newer, bigger one is accepted when every field this library
 * does not know is still zero, and refused with SL_EINVAL otherwise, as is
 * a struct that was never initialised. Bindings call the exported
 * sl_x_init_sized(o, size) with their struct's size. */
#ifndef SLUICE_H
#define SLUICE_H

#include "sluice/status.h"
#include "sluice/version.h"
#include "sluice/tensor.h"
#include "sluice/op.h"
#include "sluice/dataset.h"
#include "sluice/combine.h"
#include "sluice/sources.h"
#include "sluice/bad_samples.h"
#include "sluice/pool.h"
#include "sluice/iterator.h"
#include "sluice/graph.h"
#include "sluice/network.h"
#include "sluice/step.h"
#include "sluice/checkpoint.h"
#include "sluice/thread_budget.h"
#include "sluice/device.h"
#include "sluice/model.h"
#include "sluice/train_options.h"
#include "sluice/callback.h"
#include "sluice/profiler.h"
#include "sluice/sink.h"
#include "sluice/bench.h"
#include "sluice/distributed.h"

#endif
