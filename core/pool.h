/* pool.h: a buffer pool that recycles fixed-size-class blocks so hot paths do
 * not call malloc per sample. Blocks fall into size classes (32 per power of
 * two, so at most 1/32 is wasted) with one free list and one mutex each.
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

typedef struct sl_pool sl_pool;

/* A new pool with one reference (NULL on allocation failure). */
sl_pool *sl__pool_new(void);
void sl__pool_retain(sl_pool *pool);
void sl__pool_release(sl_pool *pool);

/* A block of at least size bytes, 64-byte aligned, or NULL. The caller
 * keeps the pool alive (holds a reference) until the block is freed. */
void *sl__pool_alloc(sl_pool *pool, size_t size);
void sl__pool_free(sl_pool *pool, void *block);

/* Bytes currently held by the pool: in use plus cached on free lists. */
size_t sl__pool_bytes(const sl_pool *pool);

#endif
