/* pool.c: size classes, one free list and one mutex per class, and a cap on
 * the idle bytes. Each block starts with a 64-byte header (its class and the
 * free-list links) so the caller's memory stays 64-byte aligned.
 *
 * The cap is a limit set with sl__pool_set_idle_limit, or by default what
 * keeps in use + idle within twice the peak in use (at least 8 MiB idle):
 * the steady state of a pipeline, whose demand at any moment is at most
 * its peak, stays cached, while images of every size cannot pile up.
 * Large blocks (SL__POOL_LARGE, 256 KiB, and up) come from mmap, share one
 * mutex and wait on a list by age, so that one given back leaves the
 * process and the oldest go first. docs/pool-internals.md gives the
 * measurements behind each number. */
#include "core/pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/error.h"

#define POOL_HEADER 64
#define POOL_MIN_SHIFT 6   /* smallest class: 64 bytes */
#define POOL_MAX_SHIFT 44  /* largest class: 2^44 bytes */
#define POOL_STEP_BITS 5
#define POOL_STEPS (1 << POOL_STEP_BITS)
#define POOL_CLASSES (1 + (POOL_MAX_SHIFT - POOL_MIN_SHIFT) * POOL_STEPS)

typedef struct pool_block {
    struct pool_block *next;   /* the class's free list (large: the next older) */
    struct pool_block *prev;   /* large: the next newer of its class */
    struct pool_block *older;  /* large: the next older idle block of any class */
    struct pool_block *newer;
    int cls;
} pool_block;

/* One cache line each, so workers using neighbouring classes do not
 * invalidate each other's lines. A large class's list, newest first, is
 * guarded by large_lock instead of its own mutex. */
typedef struct pool_class {
    _Alignas(64) pthread_mutex_t lock;
    pool_block *free;
} pool_class;

struct sl_pool {
    /* Written rarely: on retain/release and when the system is called. */
    atomic_int refs;
    atomic_uint_least64_t system_allocs, system_frees, cap_frees;
    /* Written by every cached free and every reuse: a line of its own. */
    _Alignas(64) atomic_size_t idle;
    /* Read by every allocation and free, written rarely. */
    _Alignas(64) atomic_size_t held;  /* in use + idle */
    atomic_size_t peak_in_use;
    atomic_size_t peak_held;
    atomic_size_t limit;
    /* Parts (pool.h), made at first use. */
    _Atomic(sl_pool *) parts[SL__POOL_PARTS];
    /* Idle large blocks of every class, by age (and each class's list). */
    _Alignas(64) pthread_mutex_t large_lock;
    pthread_mutex_t grow_lock; /* taking blocks from the system (grow) */
    pool_block *newest, *oldest;
    pool_class cls[POOL_CLASSES];
};

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

/* What the system is asked for: header and class, a multiple of 64 (as
 * aligned_alloc wants). */
static size_t system_size(int cls)
{
    return (POOL_HEADER + class_size(cls) + 63) & ~(size_t)63;
}

/* A large block: a mapping of its own, so giving it back really returns
 * the memory. Its pages are faulted in here, in one call, rather than one
 * by one as the block is first written: on the VM where sluice is measured
 * a 4 KiB page fault costs ~14 us, so 12 MiB fault by fault took 43 ms, in
 * one call 12 ms, and with transparent huge pages (asked for, where the
 * kernel allows them, for blocks holding a whole 2 MiB page) 1.2 ms, where
 * rewriting 12 MiB already mapped takes 0.3 ms. Both advices are hints: a
 * kernel without them faults pages in as they are touched. */
static void *map_large(size_t size)
{
    const size_t huge = (size_t)2 << 20;
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t len = size >= huge ? size + huge : size;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *start, *end;
    if (p == MAP_FAILED)
        return NULL;
    /* Trim the mapping to [start, start + size rounded to pages) with start
     * on a 2 MiB boundary, so its huge pages line up with the block. */
    start = size >= huge ? (char *)(((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1)) : p;
    end = start + (size + page - 1) / page * page;
    if (start > p)
        munmap(p, (size_t)(start - p));
    if (p + len > end)
        munmap(end, (size_t)(p + len - end));
#ifdef MADV_HUGEPAGE
    if (size >= huge)
        (void)madvise(start, size, MADV_HUGEPAGE);
#endif
#ifdef MADV_POPULATE_WRITE
    (void)madvise(start, size, MADV_POPULATE_WRITE);
#endif
    return start;
}

static pool_block *system_alloc(sl_pool *pool, int cls)
{
    pool_block *b;
    if (class_size(cls) >= SL__POOL_LARGE) {
        b = map_large(system_size(cls)); /* page-aligned */
    } else {
        b = aligned_alloc(64, system_size(cls));
    }
    if (!b)
        return NULL;
    b->cls = cls;
    atomic_fetch_add_explicit(&pool->system_allocs, 1, memory_order_relaxed);
    return b;
}

/* Gives b back; counted unless the pool is ending. */
static void system_free(sl_pool *pool, pool_block *b, int counted, int by_cap)
{
    int cls = b->cls;
    if (class_size(cls) >= SL__POOL_LARGE)
        munmap(b, system_size(cls)); /* cannot fail for a mapping of ours */
    else
        free(b);
    if (!counted)
        return;
    atomic_fetch_sub_explicit(&pool->held, class_size(cls), memory_order_relaxed);
    atomic_fetch_add_explicit(&pool->system_frees, 1, memory_order_relaxed);
    if (by_cap)
        atomic_fetch_add_explicit(&pool->cap_frees, 1, memory_order_relaxed);
}

/* Gives back every block of a list linked by next (blocks the cap evicted:
 * their idle bytes are already subtracted). */
static void system_free_list(sl_pool *pool, pool_block *b)
{
    while (b) {
        pool_block *next = b->next;
        system_free(pool, b, 1, 1);
        b = next;
    }
}

sl_pool *sl__pool_new(void)
{
    pthread_mutexattr_t attr;
    sl_pool *pool = aligned_alloc(64, sizeof(sl_pool));
    if (!pool)
        return NULL;
    memset(pool, 0, sizeof *pool); /* calloc's zeroes, with the struct's alignment */
    atomic_init(&pool->refs, 1);
    atomic_init(&pool->system_allocs, 0);
    atomic_init(&pool->system_frees, 0);
    atomic_init(&pool->cap_frees, 0);
    atomic_init(&pool->idle, 0);
    atomic_init(&pool->held, 0);
    atomic_init(&pool->peak_in_use, 0);
    atomic_init(&pool->peak_held, 0);
    atomic_init(&pool->limit, SL__POOL_IDLE_AUTO);
    for (int k = 0; k < SL__POOL_PARTS; k++)
        atomic_init(&pool->parts[k], NULL);
    if (pthread_mutex_init(&pool->large_lock, NULL) != 0) {
        free(pool);
        return NULL;
    }
    if (pthread_mutex_init(&pool->grow_lock, NULL) != 0) {
        pthread_mutex_destroy(&pool->large_lock);
        free(pool);
        return NULL;
    }
    /* The critical sections are a few pointer moves, taken millions of
     * times a second by several workers: an adaptive mutex spins briefly
     * instead of putting a contending thread to sleep at once. */
    if (pthread_mutexattr_init(&attr) != 0) {
        pthread_mutex_destroy(&pool->grow_lock);
        pthread_mutex_destroy(&pool->large_lock);
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
            pthread_mutex_destroy(&pool->grow_lock);
            pthread_mutex_destroy(&pool->large_lock);
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
    for (int k = 0; k < SL__POOL_PARTS; k++)
        sl__pool_release(atomic_load_explicit(&pool->parts[k], memory_order_acquire));
    for (int i = 0; i < POOL_CLASSES; i++) {
        pool_block *b = pool->cls[i].free;
        while (b) {
            pool_block *next = b->next;
            system_free(pool, b, 0, 0);
            b = next;
        }
        pthread_mutex_destroy(&pool->cls[i].lock);
    }
    /* Large idle blocks were freed with their classes' lists above. */
    pthread_mutex_destroy(&pool->grow_lock);
    pthread_mutex_destroy(&pool->large_lock);
    free(pool);
}

/* The most idle bytes the pool may keep while in_use bytes are in use.
 * The default: what keeps all it holds (in use + idle) within twice its
 * peak in use, at least SL__POOL_IDLE_FLOOR. Freeing moves a block from
 * in use to idle, so the sum only grows when a block is taken from the
 * system (grow). */
static size_t idle_cap_at(const sl_pool *pool, size_t in_use)
{
    size_t limit = atomic_load_explicit(&pool->limit, memory_order_relaxed);
    size_t peak = atomic_load_explicit(&pool->peak_in_use, memory_order_relaxed);
    size_t cap;
    if (limit != SL__POOL_IDLE_AUTO)
        return limit;
    if (peak < in_use)
        peak = in_use;
    cap = 2 * peak - in_use;
    return cap > SL__POOL_IDLE_FLOOR ? cap : SL__POOL_IDLE_FLOOR;
}

/* Bytes in use now, less freeing (a block being freed). */
static size_t in_use_now(const sl_pool *pool, size_t freeing)
{
    size_t idle = atomic_load_explicit(&pool->idle, memory_order_relaxed);
    size_t held = atomic_load_explicit(&pool->held, memory_order_relaxed);
    return held > idle + freeing ? held - idle - freeing : 0;
}

static size_t idle_cap(const sl_pool *pool)
{
    return idle_cap_at(pool, in_use_now(pool, 0));
}

/* Raises *peak to value if it is higher. */
static void raise_peak(atomic_size_t *peak, size_t value)
{
    size_t was = atomic_load_explicit(peak, memory_order_relaxed);
    while (value > was && !atomic_compare_exchange_weak_explicit(peak, &was, value,
                                                                 memory_order_relaxed,
                                                                 memory_order_relaxed))
        ;
}

/* Raises the peak in use to held - idle if it is higher. */
static void note_in_use(sl_pool *pool, size_t held, size_t idle)
{
    raise_peak(&pool->peak_in_use, held > idle ? held - idle : 0);
}

/* Puts b, a large block just freed, first in its class's list and in the
 * list by age; the caller holds large_lock. */
static void push_large(sl_pool *pool, pool_block *b)
{
    pool_class *pc = &pool->cls[b->cls];
    b->prev = NULL;
    b->next = pc->free;
    if (pc->free)
        pc->free->prev = b;
    pc->free = b;
    b->newer = NULL;
    b->older = pool->newest;
    if (pool->newest)
        pool->newest->newer = b;
    else
        pool->oldest = b;
    pool->newest = b;
}

/* Takes b off both lists; the caller holds large_lock. */
static void unlink_large(sl_pool *pool, pool_block *b)
{
    if (b->prev)
        b->prev->next = b->next;
    else
        pool->cls[b->cls].free = b->next;
    if (b->next)
        b->next->prev = b->prev;
    if (b->newer)
        b->newer->older = b->older;
    else
        pool->newest = b->older;
    if (b->older)
        b->older->newer = b->newer;
    else
        pool->oldest = b->newer;
}

/* Takes the oldest large idle blocks off the list until idle + need fits
 * under cap (or none are left); the caller holds large_lock and gives the
 * returned list back after unlocking. */
static pool_block *evict_large(sl_pool *pool, size_t need, size_t cap)
{
    pool_block *gone = NULL;
    while (pool->oldest &&
           atomic_load_explicit(&pool->idle, memory_order_relaxed) + need > cap) {
        pool_block *b = pool->oldest;
        unlink_large(pool, b);
        atomic_fetch_sub_explicit(&pool->idle, class_size(b->cls), memory_order_relaxed);
        b->next = gone;
        gone = b;
    }
    return gone;
}

/* The newest idle large block of class cls, taken off the lists, or NULL. */
static pool_block *take_large(sl_pool *pool, int cls)
{
    pool_block *b;
    pthread_mutex_lock(&pool->large_lock);
    b = pool->cls[cls].free;
    if (b)
        unlink_large(pool, b);
    pthread_mutex_unlock(&pool->large_lock);
    return b;
}

/* Gives back idle blocks until at most cap bytes are idle: the large ones
 * idle longest first, then small ones, biggest classes first (the fewest
 * calls). */
static void trim_idle(sl_pool *pool, size_t cap)
{
    pool_block *gone;
    pthread_mutex_lock(&pool->large_lock);
    gone = evict_large(pool, 0, cap);
    pthread_mutex_unlock(&pool->large_lock);
    system_free_list(pool, gone);
    /* Then small blocks, biggest classes first: the fewest calls. */
    for (int i = POOL_CLASSES - 1; i >= 0; i--) {
        pool_class *pc = &pool->cls[i];
        if (atomic_load_explicit(&pool->idle, memory_order_relaxed) <= cap)
            break;
        if (class_size(i) >= SL__POOL_LARGE)
            continue;
        gone = NULL;
        pthread_mutex_lock(&pc->lock);
        while (pc->free && atomic_load_explicit(&pool->idle, memory_order_relaxed) > cap) {
            pool_block *b = pc->free;
            pc->free = b->next;
            atomic_fetch_sub_explicit(&pool->idle, class_size(i), memory_order_relaxed);
            b->next = gone;
            gone = b;
        }
        pthread_mutex_unlock(&pc->lock);
        system_free_list(pool, gone);
    }
}

/* Counts bytes more as held and in use, for a block about to be taken
 * from the system, first giving back idle blocks of other sizes if the
 * pool would hold more than its cap allows (rare once warmed up). Under
 * grow_lock, so that no other growth comes between the count and the
 * trim: what the pool holds stays within the cap (frees and reuses move
 * bytes between in use and idle, never add). */
static void grow(sl_pool *pool, size_t bytes)
{
    size_t held, idle, cap;
    pthread_mutex_lock(&pool->grow_lock);
    held = atomic_fetch_add_explicit(&pool->held, bytes, memory_order_relaxed) + bytes;
    idle = atomic_load_explicit(&pool->idle, memory_order_relaxed);
    note_in_use(pool, held, idle);
    cap = idle_cap_at(pool, held > idle ? held - idle : 0);
    if (idle > cap)
        trim_idle(pool, cap);
    raise_peak(&pool->peak_held, atomic_load_explicit(&pool->held, memory_order_relaxed));
    pthread_mutex_unlock(&pool->grow_lock);
}

void *sl__pool_alloc(sl_pool *pool, size_t size)
{
    int cls = class_of(size ? size : 1);
    size_t bytes;
    pool_block *b;
    if (cls < 0)
        return NULL;
    bytes = class_size(cls);
    if (bytes >= SL__POOL_LARGE) {
        b = take_large(pool, cls);
    } else {
        pool_class *pc = &pool->cls[cls];
        pthread_mutex_lock(&pc->lock);
        b = pc->free;
        if (b)
            pc->free = b->next;
        pthread_mutex_unlock(&pc->lock);
    }
    if (b) {
        size_t held, idle;
        idle = atomic_fetch_sub_explicit(&pool->idle, bytes, memory_order_relaxed) - bytes;
        held = atomic_load_explicit(&pool->held, memory_order_relaxed);
        note_in_use(pool, held, idle);
        return (char *)b + POOL_HEADER;
    }
    grow(pool, bytes);
    if (!(b = system_alloc(pool, cls))) {
        atomic_fetch_sub_explicit(&pool->held, bytes, memory_order_relaxed);
        return NULL;
    }
    return (char *)b + POOL_HEADER;
}

/* Counts bytes as idle if they fit under cap; 0 (nothing counted) if not. */
static int reserve_idle(sl_pool *pool, size_t bytes, size_t cap)
{
    size_t before = atomic_fetch_add_explicit(&pool->idle, bytes, memory_order_relaxed);
    if (before + bytes <= cap)
        return 1;
    atomic_fetch_sub_explicit(&pool->idle, bytes, memory_order_relaxed);
    return 0;
}

static void free_large(sl_pool *pool, pool_block *b, size_t cap)
{
    pool_block *gone;
    pthread_mutex_lock(&pool->large_lock);
    push_large(pool, b);
    atomic_fetch_add_explicit(&pool->idle, class_size(b->cls), memory_order_relaxed);
    /* b is the newest, so it goes last, and only if the small blocks
     * leave no room for it. */
    gone = evict_large(pool, 0, cap);
    pthread_mutex_unlock(&pool->large_lock);
    system_free_list(pool, gone);
}

void sl__pool_free(sl_pool *pool, void *block)
{
    pool_block *b;
    pool_class *pc;
    size_t bytes, cap;
    if (!block)
        return;
    b = (pool_block *)((char *)block - POOL_HEADER);
    bytes = class_size(b->cls);
    cap = idle_cap_at(pool, in_use_now(pool, bytes));
    if (bytes > cap) {
        system_free(pool, b, 1, 1);
        return;
    }
    if (bytes >= SL__POOL_LARGE) {
        free_large(pool, b, cap);
        return;
    }
    if (!reserve_idle(pool, bytes, cap)) {
        /* Large idle blocks go first; this one only if that is not enough. */
        pool_block *gone;
        pthread_mutex_lock(&pool->large_lock);
        gone = evict_large(pool, bytes, cap);
        pthread_mutex_unlock(&pool->large_lock);
        system_free_list(pool, gone);
        if (!reserve_idle(pool, bytes, cap)) {
            system_free(pool, b, 1, 1);
            return;
        }
    }
    pc = &pool->cls[b->cls];
    pthread_mutex_lock(&pc->lock);
    b->next = pc->free;
    pc->free = b;
    pthread_mutex_unlock(&pc->lock);
}

size_t sl__pool_block_size(const void *block)
{
    const pool_block *b = (const pool_block *)((const char *)block - POOL_HEADER);
    return class_size(b->cls);
}

void sl__pool_set_idle_limit(sl_pool *pool, size_t bytes)
{
    /* Sequentially consistent, as is the part's making (sl__pool_part):
     * either this sees the new part, or its maker sees this limit. */
    atomic_store(&pool->limit, bytes);
    for (int k = 0; k < SL__POOL_PARTS; k++) {
        sl_pool *part = atomic_load(&pool->parts[k]);
        if (part)
            sl__pool_set_idle_limit(part, bytes);
    }
    trim_idle(pool, idle_cap(pool));
}

size_t sl__pool_idle_limit(const sl_pool *pool)
{
    return atomic_load_explicit(&pool->limit, memory_order_relaxed);
}

sl_pool *sl__pool_find_part(const sl_pool *pool, int k)
{
    if (k < 0 || k >= SL__POOL_PARTS)
        return NULL;
    return atomic_load_explicit(&((sl_pool *)pool)->parts[k], memory_order_acquire);
}

sl_pool *sl__pool_part(sl_pool *pool, int k)
{
    sl_pool *part, *there = NULL;
    size_t limit;
    if (k < 0 || k >= SL__POOL_PARTS)
        return NULL;
    if ((part = sl__pool_find_part(pool, k)) != NULL)
        return part;
    if (!(part = sl__pool_new()))
        return NULL;
    if (!atomic_compare_exchange_strong(&pool->parts[k], &there, part)) {
        sl__pool_release(part); /* another thread made it first */
        return there;
    }
    /* The pool's limit, read after the part is in place (a limit set
     * meanwhile either sees the part or is seen here), and again until it
     * holds still, so that a slower read cannot undo a newer limit. */
    do {
        limit = atomic_load(&pool->limit);
        sl__pool_set_idle_limit(part, limit);
    } while (atomic_load(&pool->limit) != limit);
    return part;
}

size_t sl__pool_bytes(const sl_pool *pool)
{
    size_t bytes = atomic_load_explicit(&pool->held, memory_order_relaxed);
    for (int k = 0; k < SL__POOL_PARTS; k++) {
        sl_pool *part = sl__pool_find_part(pool, k);
        if (part)
            bytes += sl__pool_bytes(part);
    }
    return bytes;
}

void sl__pool_get_stats(const sl_pool *pool, sl__pool_stats *out)
{
    /* idle first: a block counted idle is always counted held by then */
    size_t idle = atomic_load_explicit(&pool->idle, memory_order_relaxed);
    size_t held = atomic_load_explicit(&pool->held, memory_order_relaxed);
    out->idle = idle;
    out->in_use = held > idle ? held - idle : 0;
    out->peak_in_use = atomic_load_explicit(&pool->peak_in_use, memory_order_relaxed);
    out->peak_held = atomic_load_explicit(&pool->peak_held, memory_order_relaxed);
    out->idle_cap = idle_cap(pool);
    out->system_allocs = atomic_load_explicit(&pool->system_allocs, memory_order_relaxed);
    out->system_frees = atomic_load_explicit(&pool->system_frees, memory_order_relaxed);
    out->cap_frees = atomic_load_explicit(&pool->cap_frees, memory_order_relaxed);
    for (int k = 0; k < SL__POOL_PARTS; k++) {
        sl_pool *part = sl__pool_find_part(pool, k);
        sl__pool_stats p;
        if (!part)
            continue;
        sl__pool_get_stats(part, &p);
        out->idle += p.idle;
        out->in_use += p.in_use;
        out->peak_in_use += p.peak_in_use;
        out->peak_held += p.peak_held;
        out->idle_cap += p.idle_cap;
        out->system_allocs += p.system_allocs;
        out->system_frees += p.system_frees;
        out->cap_frees += p.cap_frees;
    }
}
