/* pool.h: a buffer pool that recycles fixed-size-class blocks so hot paths do
 * not call malloc per sample. Blocks fall into size classes (32 per power of
 * two, so at most 1/32 is wasted) with one free list and one mutex each.
 *
 * Idle (cached) blocks are bounded: the pool keeps at most the limit set,
 * by default what keeps in use + idle within twice the peak in use (at
 * least SL__POOL_IDLE_FLOOR idle), and blocks beyond it go back to the
 * system. Blocks of
 * SL__POOL_LARGE bytes or more come from mmap, so giving one back really
 * lowers the process's memory, and when the cap is reached the large ones
 * idle longest go back first (see pool.c for why).
 *
 * The pool is reference counted, but blocks do not hold references: a
 * shared counter touched by every allocation would bounce between the
 * workers' cores millions of times a second. Whoever allocates must keep a
 * reference until the block is freed: a pipeline holds one while it runs,
 * and a tensor that leaves the pipeline (handed to the user) takes its own
 * with sl__tensor_escape(). */
#ifndef SLUICE_CORE_POOL_H
#define SLUICE_CORE_POOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct sl_pool sl_pool;

/* Blocks of at least this many bytes are "large" (see pool.c). */
#define SL__POOL_LARGE ((size_t)256 << 10)
/* The limit of a new pool: the default cap, which follows the peak (see
 * pool.c): 2 x peak in use - in use, at least SL__POOL_IDLE_FLOOR. */
#define SL__POOL_IDLE_AUTO ((size_t)-1)
#define SL__POOL_IDLE_FLOOR ((size_t)8 << 20)

/* What a pool holds and has done. Bytes are class sizes: what callers can
 * use, without the pool's 64-byte block headers. */
typedef struct sl__pool_stats {
    size_t in_use;         /* blocks handed out and not yet freed */
    size_t idle;           /* blocks cached on free lists */
    size_t peak_in_use;    /* the most in use at once so far */
    size_t peak_held;      /* the most held (in use + idle) at once so far */
    size_t idle_cap;       /* the most idle bytes it may keep now */
    uint64_t system_allocs; /* blocks taken from the system */
    uint64_t system_frees;  /* blocks given back to it (not counting the pool's end) */
    uint64_t cap_frees;     /* of those, given back because the idle cap was reached */
} sl__pool_stats;

/* A new pool with one reference and the default idle limit (NULL on
 * allocation failure). */
sl_pool *sl__pool_new(void);
void sl__pool_retain(sl_pool *pool);
void sl__pool_release(sl_pool *pool);

/* A block of at least size bytes, 64-byte aligned, or NULL. The caller
 * keeps the pool alive (holds a reference) until the block is freed. */
void *sl__pool_alloc(sl_pool *pool, size_t size);
void sl__pool_free(sl_pool *pool, void *block);

/* The bytes a block of the pool can hold: its class size. */
size_t sl__pool_block_size(const void *block);

/* Sets the most idle bytes the pool keeps (0: none; SL__POOL_IDLE_AUTO:
 * the default, which follows the peak in use) and gives back at once what
 * exceeds it. Thread-safe. */
void sl__pool_set_idle_limit(sl_pool *pool, size_t bytes);
/* The limit set (SL__POOL_IDLE_AUTO unless one was). */
size_t sl__pool_idle_limit(const sl_pool *pool);

/* Parts: a pool may have up to SL__POOL_PARTS parts, pools of their own
 * made at first use, for threads that would otherwise allocate and free
 * at once on the same locks and counters (the threads of a consumer's
 * team, each with its part). A part keeps the pool's idle limit (set on
 * the pool, it is set on its parts too); the pool's bytes and stats
 * include its parts' (the peak is the sum of the peaks: at most that much
 * was in use at once); the pool's end drops its reference to each part,
 * which a tensor that escaped keeps alive as it keeps any pool. */
#define SL__POOL_PARTS 8
/* Part k of pool, made now if it was not (thread-safe); NULL when k is out
 * of range or memory ran out: the caller then uses the pool itself. */
sl_pool *sl__pool_part(sl_pool *pool, int k);
/* Part k if it was made, else NULL. */
sl_pool *sl__pool_find_part(const sl_pool *pool, int k);

/* Bytes currently held by the pool: in use plus cached on free lists. */
size_t sl__pool_bytes(const sl_pool *pool);
/* A snapshot of the counters, its parts' added (each read atomically;
 * while other threads allocate they may be from slightly different
 * moments). */
void sl__pool_get_stats(const sl_pool *pool, sl__pool_stats *out);

#endif
