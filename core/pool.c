/* pool.c: size classes, one free list and one mutex per class.
 * Each block starts with a 64-byte header (its class and the free-list link)
 * so the caller's memory stays 64-byte aligned. */
#include "core/pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/error.h"

#define POOL_HEADER 64
#define POOL_MIN_SHIFT 6   /* smallest class: 64 bytes */
#define POOL_MAX_SHIFT 44  /* largest class: 2^44 bytes */
#define POOL_STEP_BITS 5
#define POOL_STEPS (1 << POOL_STEP_BITS)
#define POOL_CLASSES (1 + (POOL_MAX_SHIFT - POOL_MIN_SHIFT) * POOL_STEPS)

typedef struct pool_block {
    struct pool_block *next;
    int cls;
} pool_block;

/* One cache line each, so workers using neighbouring classes do not
 * invalidate each other's lines. */
typedef struct pool_class {
    _Alignas(64) pthread_mutex_t lock;
    pool_block *free;
    size_t idle;
} pool_class;

struct sl_pool {
    atomic_int refs;
    atomic_size_t bytes;
    pool_class cls[POOL_CLASSES];
};

sl_pool *sl__pool_new(void)
{
    pthread_mutexattr_t attr;
    sl_pool *pool = calloc(1, sizeof *pool);
    if (!pool)
        return NULL;
    atomic_init(&pool->refs, 1);
    atomic_init(&pool->bytes, 0);
    /* The critical sections are a few pointer moves, taken millions of
     * times a second by several workers: an adaptive mutex spins briefly
     * instead of putting a contending thread to sleep at once. */
    if (pthread_mutexattr_init(&attr) != 0) {
        free(pool);
        return NULL;
    }
    /* Without the adaptive kind a plain mutex still works: ignore failure. */
    (void)pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
    for (int i = 0; i < POOL_CLASSES; i++) {
        if (pthread_mutex_init(&pool->cls[i].lock, &attr) != 0) {
            while (i-- > 0)
                pthread_mutex_destroy(&pool->cls[i].lock);
            pthread_mutexattr_destroy(&attr);
            free(pool);
            return NULL;
        }
    }
    pthread_mutexattr_destroy(&attr);
    return pool;
}

void sl__pool_retain(sl_pool *pool)
{
    atomic_fetch_add_explicit(&pool->refs, 1, memory_order_relaxed);
}

void sl__pool_release(sl_pool *pool)
{
    if (!pool || atomic_fetch_sub_explicit(&pool->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (int i = 0; i < POOL_CLASSES; i++) {
        pool_block *b = pool->cls[i].free;
        while (b) {
            pool_block *next = b->next;
            free(b);
            b = next;
        }
        pthread_mutex_destroy(&pool->cls[i].lock);
    }
    free(pool);
}

/* Classes: 64 bytes, then 32 steps between consecutive powers of two
 * (2^s + k * 2^(s-5), k = 1..32), so a block wastes at most 1/32 of its
 * size beyond the 64-byte rounding (a 4224-byte tensor takes 4224 bytes). */
static int class_of(size_t size)
{
    int shift = POOL_MIN_SHIFT;
    size_t step, k;
    if (size <= ((size_t)1 << POOL_MIN_SHIFT))
        return 0;
    /* Bounded: past 2^63 the shift would reach the type's width (and loop). */
    while (shift < POOL_MAX_SHIFT && ((size_t)1 << (shift + 1)) < size)
        shift++;
    if (shift >= POOL_MAX_SHIFT)
        return -1;
    step = (size_t)1 << (shift - POOL_STEP_BITS);
    k = (size - ((size_t)1 << shift) + step - 1) / step; /* 1..32 */
    return 1 + (shift - POOL_MIN_SHIFT) * POOL_STEPS + (int)(k - 1);
}

static size_t class_size(int cls)
{
    int shift;
    size_t k;
    if (cls == 0)
        return (size_t)1 << POOL_MIN_SHIFT;
    shift = POOL_MIN_SHIFT + (cls - 1) / POOL_STEPS;
    k = (size_t)((cls - 1) % POOL_STEPS + 1);
    return ((size_t)1 << shift) + k * ((size_t)1 << (shift - POOL_STEP_BITS));
}

void *sl__pool_alloc(sl_pool *pool, size_t size)
{
    int cls = class_of(size ? size : 1);
    pool_block *b;
    if (cls < 0)
        return NULL;
    pool_class *pc = &pool->cls[cls];
    pthread_mutex_lock(&pc->lock);
    b = pc->free;
    if (b) {
        pc->free = b->next;
        pc->idle--;
    }
    pthread_mutex_unlock(&pc->lock);
    if (!b) {
        /* aligned_alloc wants a multiple of the alignment */
        b = aligned_alloc(64, (POOL_HEADER + class_size(cls) + 63) & ~(size_t)63);
        if (!b)
            return NULL;
        b->cls = cls;
        atomic_fetch_add_explicit(&pool->bytes, class_size(cls), memory_order_relaxed);
    }
    return (char *)b + POOL_HEADER;
}

void sl__pool_free(sl_pool *pool, void *block)
{
    pool_block *b;
    pool_class *pc;
    if (!block)
        return;
    b = (pool_block *)((char *)block - POOL_HEADER);
    pc = &pool->cls[b->cls];
    /* Idle blocks stay on their list: a pool never holds more than the most
     * its users had out at once, which the pipeline's queues bound. */
    pthread_mutex_lock(&pc->lock);
    b->next = pc->free;
    pc->free = b;
    pc->idle++;
    pthread_mutex_unlock(&pc->lock);
}

size_t sl__pool_bytes(const sl_pool *pool)
{
    return atomic_load_explicit(&pool->bytes, memory_order_relaxed);
}
