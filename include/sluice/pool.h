/* pool.h: the buffer pool a dataset's iterators take their rows from: its
 * idle limit and its figures (sl_pool_stats, also in sl_iterator_stats).
 * The pool belongs to the dataset and is freed with it. */
#ifndef SLUICE_POOL_H
#define SLUICE_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The dataset these calls apply to (dataset.h). */
typedef struct sl_dataset sl_dataset;

/* The buffer pool. The rows of every iterator made from a dataset come from
 * the dataset's pool, which caches freed blocks so that a running pipeline
 * does not call malloc per sample. The rule by default: all it holds (in
 * use + idle) stays within twice the most bytes it ever had in use at once
 * (the peak in flight), or it keeps at most 8 MiB idle if that is more (a
 * small pipeline); idle blocks beyond that go back to the system (the
 * oldest large ones, 256 KiB and up, first), when a block is freed or
 * before one is taken from the system. Where a training executor's
 * threads make the batches between steps (an inline sink on cpu), each of
 * them takes blocks from a part of the pool of its own, with the same
 * limit each; the pool's figures include its parts. */
#define SL_POOL_IDLE_LIMIT_DEFAULT ((size_t)-1)

/* Bytes are what the blocks can hold (their size class, at most 1/32 above
 * the request), without the pool's 64-byte block headers. */
typedef struct sl_pool_stats {
    uint64_t in_use_bytes;      /* handed out and not yet given back */
    uint64_t idle_bytes;        /* cached for reuse; in use + idle is all the pool holds */
    uint64_t peak_in_use_bytes; /* the most in use at once since the pool was made
                                 * (with parts: the sum of each one's, a bound) */
    uint64_t idle_cap_bytes;    /* the most it may keep idle now (the default:
                                 * 2 x peak - in use, at least 8 MiB) */
    uint64_t system_allocs;     /* blocks taken from the system (malloc or mmap) */
    uint64_t system_frees;      /* blocks given back to it */
    uint64_t cap_frees;         /* of those, given back because the idle cap was reached */
} sl_pool_stats;

/* Sets the most bytes ds's pool keeps cached, whatever its peak (0: none,
 * every freed block goes back to the system; SL_POOL_IDLE_LIMIT_DEFAULT:
 * the default, which follows the peak) and gives back at once what is
 * cached beyond it. Applies to the iterators already running too. A copy
 * (sl_dataset_copy) has its own pool, with the same limit. */
SL_API void sl_dataset_set_pool_idle_limit(sl_dataset *ds, size_t bytes);
/* What ds's pool holds and has done, over all its iterators so far. */
SL_API void sl_dataset_get_pool_stats(const sl_dataset *ds, sl_pool_stats *out);

#ifdef __cplusplus
}
#endif
#endif
