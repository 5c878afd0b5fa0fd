/* check_pool.c: the buffer pool (core/pool.c): alignment, reuse, the cap
 * on idle bytes, the order large blocks go back in, its counters, threads.
 * How a pipeline uses it: check_pool_pipeline.c. */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "core/pool.h"
#include "core/tensor_impl.h"
#include "sluice/sluice.h"

static int is_aligned64(const void *p)
{
    return ((uintptr_t)p & 63u) == 0;
}

static sl__pool_stats stats_of(const sl_pool *pool)
{
    sl__pool_stats s;
    sl__pool_get_stats(pool, &s);
    return s;
}

/* A size from 64 bytes to 3 MiB, small and large mixed (a quarter of them
 * 1 MiB or more), a fixed function of i (a multiplicative hash). */
static size_t varied_size(uint32_t i)
{
    uint32_t h = (i + 1) * 2654435761u;
    switch (h % 4) {
    case 0: return 64 + h % 4000;
    case 1: return 4096 + h % 200000;
    case 2: return 300000 + h % 700000;
    default: return ((size_t)1 << 20) + h % ((size_t)2 << 20);
    }
}

/* Writes the first and last byte of a block of size bytes. */
static void touch(unsigned char *p, size_t size, unsigned char v)
{
    p[0] = v;
    p[size - 1] = v;
}

START_TEST(test_pool_alignment)
{
    static const size_t sizes[] = {0, 1, 63, 64, 65, 100, 1000, 4096, 4097, (size_t)1 << 20};
    void *blocks[sizeof sizes / sizeof sizes[0]];
    sl_pool *pool = sl__pool_new();
    ck_assert_ptr_nonnull(pool);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        blocks[i] = sl__pool_alloc(pool, sizes[i]);
        ck_assert_ptr_nonnull(blocks[i]);
        ck_assert(is_aligned64(blocks[i]));
        memset(blocks[i], 0xab, sizes[i]); /* the whole request is usable (ASan) */
    }
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        sl__pool_free(pool, blocks[i]);
    sl__pool_free(pool, NULL);
    /* Beyond the largest class there is nothing to give. */
    ck_assert_ptr_null(sl__pool_alloc(pool, (size_t)1 << 46));
    ck_assert_ptr_null(sl__pool_alloc(pool, ((size_t)1 << 63) + 1));
    ck_assert_ptr_null(sl__pool_alloc(pool, (size_t)-1));
    sl__pool_release(pool);
}
END_TEST

/* These tests assume nothing about the class layout beyond: a block holds
 * at least its request, a freed block serves the next request of the same
 * size, and a block's class is less than twice its request plus 64. */
START_TEST(test_pool_reuse_and_bytes)
{
    sl_pool *pool = sl__pool_new();
    void *a, *b, *c, *d;
    size_t one;
    ck_assert_ptr_nonnull(pool);
    ck_assert_uint_eq(sl__pool_bytes(pool), 0);

    a = sl__pool_alloc(pool, 100);
    ck_assert_ptr_nonnull(a);
    one = sl__pool_bytes(pool); /* the class size for 100 bytes */
    ck_assert_uint_ge(one, 100);
    ck_assert_uint_lt(one, 2 * 100 + 64);
    sl__pool_free(pool, a);
    ck_assert_uint_eq(sl__pool_bytes(pool), one); /* cached, still held */

    b = sl__pool_alloc(pool, 100); /* same class: the freed block comes back */
    ck_assert_ptr_eq(b, a);
    ck_assert_uint_eq(sl__pool_bytes(pool), one);

    c = sl__pool_alloc(pool, 100); /* class busy: a new block */
    ck_assert_ptr_nonnull(c);
    ck_assert_ptr_ne(c, b);
    ck_assert_uint_eq(sl__pool_bytes(pool), 2 * one);

    sl__pool_free(pool, b);
    d = sl__pool_alloc(pool, 1000); /* a bigger class does not take it */
    ck_assert_ptr_nonnull(d);
    ck_assert_ptr_ne(d, b);
    ck_assert_uint_ge(sl__pool_bytes(pool), 2 * one + 1000);

    sl__pool_free(pool, c);
    sl__pool_free(pool, d);
    ck_assert_uint_ge(sl__pool_bytes(pool), 2 * one + 1000);
    sl__pool_release(pool);
}
END_TEST

START_TEST(test_pool_outlives_release)
{
    /* Blocks do not hold the pool: its owner does. A tensor that escapes
     * (is handed to a user) takes its own reference, so it outlives the
     * owner; the last release frees the pool (LSan would see a leak, ASan a
     * use after free). */
    sl_pool *pool = sl__pool_new();
    sl_tensor *kept, *view, *inner;
    int64_t shape[1] = {256}, half[1] = {128};
    unsigned char *a;
    ck_assert_ptr_nonnull(pool);
    a = sl__pool_alloc(pool, 256);
    ck_assert_ptr_nonnull(a);
    ck_assert_uint_ge(sl__pool_bytes(pool), 256);
    sl__pool_free(pool, a); /* freed while the owner still holds the pool */

    ck_assert_int_eq(sl__tensor_alloc(&kept, pool, SL_UINT8, 1, shape), SL_OK);
    ck_assert_int_eq(sl__tensor_alloc(&inner, pool, SL_UINT8, 1, shape), SL_OK);
    ck_assert_int_eq(sl__tensor_view(&view, pool, inner, 128, SL_UINT8, 1, half), SL_OK);
    sl_tensor_release(inner); /* the view keeps it */
    sl__tensor_escape(kept);
    sl__tensor_escape(kept); /* twice is once */
    sl__tensor_escape(view); /* and its base with it */
    sl__pool_release(pool);  /* the owner is gone */

    memset(sl_tensor_data(kept), 1, 256);
    memset(sl_tensor_data(view), 2, 128);
    ck_assert_uint_eq(sl__pool_bytes(pool), sl__pool_bytes(pool)); /* still readable */
    sl_tensor_release(view); /* view and base go back; the pool stays for kept */
    ck_assert_uint_eq(((unsigned char *)sl_tensor_data(kept))[255], 1);
    sl_tensor_release(kept); /* the last reference: pool and cached blocks freed */
}
END_TEST

/* A pool's parts: made once at first use, each a pool of its own whose
 * figures the pool's include, whose idle limit follows the pool's, and
 * which an escaped tensor keeps alive after the pool has gone (ASan and
 * LSan check the ends). */
START_TEST(test_pool_parts)
{
    sl_pool *pool = sl__pool_new(), *part, *again;
    sl__pool_stats ps, parts;
    sl_tensor *kept;
    int64_t shape[1] = {4096};
    void *a, *b;
    ck_assert_ptr_nonnull(pool);
    ck_assert_ptr_null(sl__pool_find_part(pool, 1));
    ck_assert_ptr_null(sl__pool_part(pool, SL__POOL_PARTS)); /* out of range: none */
    ck_assert_ptr_null(sl__pool_part(pool, -1));
    sl__pool_set_idle_limit(pool, 1 << 20); /* before the part: it starts with it */
    part = sl__pool_part(pool, 1);
    ck_assert_ptr_nonnull(part);
    ck_assert_ptr_ne(part, pool);
    again = sl__pool_part(pool, 1);
    ck_assert_ptr_eq(again, part);
    ck_assert_ptr_eq(sl__pool_find_part(pool, 1), part);
    ck_assert_uint_eq(sl__pool_idle_limit(part), 1 << 20);
    sl__pool_set_idle_limit(pool, 0); /* after: it follows */
    ck_assert_uint_eq(sl__pool_idle_limit(part), 0);
    sl__pool_set_idle_limit(pool, SL__POOL_IDLE_AUTO);
    ck_assert_uint_eq(sl__pool_idle_limit(part), SL__POOL_IDLE_AUTO);

    a = sl__pool_alloc(pool, 1000);
    b = sl__pool_alloc(part, 3000);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    sl__pool_get_stats(part, &parts);
    sl__pool_get_stats(pool, &ps);
    ck_assert_uint_ge(parts.in_use, 3000);
    ck_assert_uint_eq(ps.in_use, parts.in_use + sl__pool_block_size(a));
    ck_assert_uint_eq(ps.peak_in_use, parts.peak_in_use + sl__pool_block_size(a));
    ck_assert_uint_eq(sl__pool_bytes(pool), ps.in_use);
    sl__pool_free(part, b);
    sl__pool_free(pool, a);
    sl__pool_get_stats(pool, &ps);
    ck_assert_uint_eq(ps.in_use, 0);
    ck_assert_uint_gt(ps.idle, 0);

    /* A tensor from the part that escapes outlives the pool. */
    ck_assert_int_eq(sl__tensor_alloc(&kept, part, SL_UINT8, 1, shape), SL_OK);
    sl__tensor_escape(kept);
    sl__pool_release(pool); /* and with it its reference to the part */
    memset(sl_tensor_data(kept), 7, 4096);
    ck_assert_uint_eq(((unsigned char *)sl_tensor_data(kept))[4095], 7);
    sl_tensor_release(kept); /* the part's last reference */
}
END_TEST

/* Threads that ask for the same part at once get the one part, and a
 * limit set on the pool meanwhile ends up on the part too. */
typedef struct part_race {
    sl_pool *pool;
    sl_pool *got;
} part_race;

static void *take_part(void *arg)
{
    part_race *r = arg;
    r->got = sl__pool_part(r->pool, 2);
    return NULL;
}

START_TEST(test_pool_parts_made_at_once)
{
    for (int round = 0; round < 50; round++) {
        sl_pool *pool = sl__pool_new();
        part_race r[4];
        pthread_t th[4];
        ck_assert_ptr_nonnull(pool);
        for (int i = 0; i < 4; i++) {
            r[i].pool = pool;
            ck_assert_int_eq(pthread_create(&th[i], NULL, take_part, &r[i]), 0);
        }
        sl__pool_set_idle_limit(pool, (size_t)(round + 1) << 20);
        for (int i = 0; i < 4; i++)
            pthread_join(th[i], NULL);
        for (int i = 1; i < 4; i++)
            ck_assert_ptr_eq(r[i].got, r[0].got);
        ck_assert_ptr_nonnull(r[0].got);
        ck_assert_uint_eq(sl__pool_idle_limit(r[0].got), (size_t)(round + 1) << 20);
        sl__pool_release(pool);
    }
}
END_TEST

START_TEST(test_pool_reuse_many)
{
    const size_t n = 5000;
    void **blocks = calloc(n, sizeof *blocks);
    sl_pool *pool = sl__pool_new();
    size_t peak;
    ck_assert_ptr_nonnull(blocks);
    ck_assert_ptr_nonnull(pool);
    for (size_t i = 0; i < n; i++) {
        blocks[i] = sl__pool_alloc(pool, 64);
        ck_assert_ptr_nonnull(blocks[i]);
    }
    peak = sl__pool_bytes(pool);
    ck_assert_uint_eq(peak, n * 64);
    for (size_t i = 0; i < n; i++)
        sl__pool_free(pool, blocks[i]);
    ck_assert_uint_le(sl__pool_bytes(pool), peak); /* cached, or given back */
    /* The same demand again is met without growing past the first peak. */
    for (size_t i = 0; i < n; i++) {
        blocks[i] = sl__pool_alloc(pool, 64);
        ck_assert_ptr_nonnull(blocks[i]);
    }
    ck_assert_uint_eq(sl__pool_bytes(pool), peak);
    for (size_t i = 0; i < n; i++)
        sl__pool_free(pool, blocks[i]);
    sl__pool_release(pool);
    free(blocks);
}
END_TEST

#define POOL_THREADS 4
#define POOL_ROUNDS 20000

static void *pool_worker(void *arg)
{
    sl_pool *pool = arg;
    long bad = 0;
    for (int i = 0; i < POOL_ROUNDS; i++) {
        size_t size = (size_t)(i % 5) * 100 + 1;
        unsigned char *p = sl__pool_alloc(pool, size);
        if (!p) {
            bad++;
            continue;
        }
        p[0] = (unsigned char)i;
        p[size - 1] = (unsigned char)i;
        if (p[0] != (unsigned char)i)
            bad++;
        sl__pool_free(pool, p);
    }
    return (void *)bad;
}

START_TEST(test_pool_threads)
{
    pthread_t th[POOL_THREADS];
    sl_pool *pool = sl__pool_new();
    ck_assert_ptr_nonnull(pool);
    for (int i = 0; i < POOL_THREADS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, pool_worker, pool), 0);
    for (int i = 0; i < POOL_THREADS; i++) {
        void *bad;
        pthread_join(th[i], &bad);
        ck_assert_ptr_null(bad);
    }
    /* Each thread had at most one block out at a time, one per size; a
     * class is under 2 * size + 64 (sizes 1, 101, 201, 301, 401). */
    ck_assert_uint_gt(sl__pool_bytes(pool), 0);
    ck_assert_uint_le(sl__pool_bytes(pool), (size_t)POOL_THREADS * (2 * 1005 + 5 * 64));
    sl__pool_release(pool);
}
END_TEST


/* --- the cap on idle bytes ------------------------------------------------ */

START_TEST(test_pool_cap_holds)
{
    const size_t n = 64, limit = (size_t)4 << 20;
    void **blocks = calloc(n, sizeof *blocks);
    sl_pool *pool = sl__pool_new();
    sl__pool_stats s;
    ck_assert_ptr_nonnull(blocks);
    ck_assert_ptr_nonnull(pool);
    sl__pool_set_idle_limit(pool, limit);
    for (size_t i = 0; i < n; i++) {
        blocks[i] = sl__pool_alloc(pool, varied_size((uint32_t)i));
        ck_assert_ptr_nonnull(blocks[i]);
        ck_assert(is_aligned64(blocks[i]));
        touch(blocks[i], varied_size((uint32_t)i), (unsigned char)i);
    }
    s = stats_of(pool);
    ck_assert_uint_gt(s.in_use, 8 * limit); /* far more than the cap is out */
    ck_assert_uint_eq(s.system_allocs, n);
    for (size_t i = 0; i < n; i++) {
        sl__pool_free(pool, blocks[i]);
        s = stats_of(pool);
        ck_assert_uint_le(s.idle, limit);
    }
    s = stats_of(pool);
    ck_assert_uint_eq(s.in_use, 0);
    ck_assert_uint_eq(sl__pool_bytes(pool), s.idle); /* what is held is idle */
    ck_assert_uint_gt(s.idle, 0);                    /* some was kept */
    ck_assert_uint_gt(s.cap_frees, 0);               /* the rest went back */
    ck_assert_uint_eq(s.system_frees, s.cap_frees);
    ck_assert_uint_eq(s.idle_cap, limit);

    /* A lower limit gives back at once; 0 keeps nothing. */
    sl__pool_set_idle_limit(pool, limit / 4);
    ck_assert_uint_le(stats_of(pool).idle, limit / 4);
    sl__pool_set_idle_limit(pool, 0);
    s = stats_of(pool);
    ck_assert_uint_eq(s.idle, 0);
    ck_assert_uint_eq(sl__pool_bytes(pool), 0);
    ck_assert_uint_eq(s.system_frees, s.system_allocs);
    /* ... and frees straight back to the system. */
    blocks[0] = sl__pool_alloc(pool, 100);
    ck_assert_ptr_nonnull(blocks[0]);
    sl__pool_free(pool, blocks[0]);
    ck_assert_uint_eq(sl__pool_bytes(pool), 0);
    sl__pool_release(pool);
    free(blocks);
}
END_TEST

/* The default cap keeps all the pool holds (in use + idle) within twice
 * its peak in use, or SL__POOL_IDLE_FLOOR idle if that is more: below the
 * floor everything is kept. The sum grows only when a block is taken from
 * the system; idle blocks of other sizes then go back, the oldest first. */
START_TEST(test_pool_cap_follows_peak)
{
    const size_t mib = (size_t)1 << 20;
    void *small[10], *x, *y, *z, *big;
    sl_pool *pool = sl__pool_new();
    sl__pool_stats s;
    uint64_t allocs;
    size_t one;
    ck_assert_ptr_nonnull(pool);
    for (int i = 0; i < 10; i++)
        ck_assert_ptr_nonnull(small[i] = sl__pool_alloc(pool, 1000));
    one = sl__pool_block_size(small[0]);
    for (int i = 0; i < 10; i++)
        sl__pool_free(pool, small[i]);
    s = stats_of(pool);
    ck_assert_uint_eq(s.peak_in_use, 10 * one);
    ck_assert_uint_eq(s.idle, 10 * one); /* all kept */

    /* 10 then 11 MiB, one at a time: the peak is 11 MiB, both are kept
     * (21 MiB idle, within 2 x 11). */
    ck_assert_ptr_nonnull(x = sl__pool_alloc(pool, 10 * mib));
    sl__pool_free(pool, x);
    ck_assert_ptr_nonnull(y = sl__pool_alloc(pool, 11 * mib));
    sl__pool_free(pool, y);
    s = stats_of(pool);
    ck_assert_uint_eq(s.cap_frees, 0);
    ck_assert_uint_eq(s.idle, 10 * one + sl__pool_block_size(x) + sl__pool_block_size(y));
    /* 12 MiB more: 33 MiB held for a peak of 12 would be over 24, so the
     * oldest idle block (10 MiB) goes back first. */
    ck_assert_ptr_nonnull(z = sl__pool_alloc(pool, 12 * mib));
    s = stats_of(pool);
    ck_assert_uint_eq(s.cap_frees, 1);
    ck_assert_uint_le(s.in_use + s.idle, 2 * s.peak_in_use);
    ck_assert_uint_le(s.peak_held, 2 * s.peak_in_use);
    sl__pool_free(pool, z);
    allocs = stats_of(pool).system_allocs;
    ck_assert_ptr_eq(sl__pool_alloc(pool, 11 * mib), y); /* kept */
    ck_assert_uint_eq(stats_of(pool).system_allocs, allocs);
    sl__pool_free(pool, y);

    /* A limit set is the cap, whatever the peak; the default follows it
     * again once asked for, and trims at once. */
    sl__pool_set_idle_limit(pool, 64 * mib);
    s = stats_of(pool);
    ck_assert_uint_eq(s.idle_cap, 64 * mib);
    allocs = s.cap_frees;
    ck_assert_ptr_nonnull(big = sl__pool_alloc(pool, 25 * mib));
    sl__pool_free(pool, big);
    s = stats_of(pool);
    ck_assert_uint_eq(s.cap_frees, allocs); /* kept */
    ck_assert_uint_gt(s.idle, 25 * mib);
    sl__pool_set_idle_limit(pool, 0);
    ck_assert_uint_eq(stats_of(pool).idle, 0);
    sl__pool_set_idle_limit(pool, SL__POOL_IDLE_AUTO);
    s = stats_of(pool);
    ck_assert_uint_eq(s.in_use, 0);
    ck_assert_uint_eq(s.idle_cap, 2 * s.peak_in_use);
    sl__pool_release(pool);
}
END_TEST

/* The same demand, round after round, in varied sizes and orders, is met
 * from the cache: the system is called in the first round only. (All of it,
 * 6 MB, is under the floor: a pool keeps that much whatever its peak.) */
START_TEST(test_pool_steady_state_reuses)
{
    enum { N = 12 };
    void *b[N];
    sl_pool *pool = sl__pool_new();
    sl__pool_stats s;
    ck_assert_ptr_nonnull(pool);
    for (int round = 0; round < 300; round++) {
        for (int i = 0; i < N; i++) {
            b[i] = sl__pool_alloc(pool, varied_size((uint32_t)i));
            ck_assert_ptr_nonnull(b[i]);
            touch(b[i], varied_size((uint32_t)i), (unsigned char)round);
        }
        for (int i = 0; i < N; i++)
            sl__pool_free(pool, b[round % 2 ? i : N - 1 - i]);
        if (round == 0)
            ck_assert_uint_eq(stats_of(pool).system_allocs, N);
    }
    s = stats_of(pool);
    ck_assert_uint_eq(s.system_allocs, N);
    ck_assert_uint_eq(s.system_frees, 0);
    ck_assert_uint_eq(s.idle, s.peak_in_use); /* all of it, cached */
    sl__pool_release(pool);
}
END_TEST

/* When the cap is reached the large idle blocks freed longest ago go back
 * first, so a size reused often keeps its block; a small block that does
 * not fit makes them go back before it does. */
START_TEST(test_pool_large_oldest_go_first)
{
    const size_t mib = (size_t)1 << 20;
    const size_t sizes[4] = {mib, mib + mib / 4, mib + mib / 2, mib + 3 * mib / 4};
    size_t bytes[4], small_bytes;
    void *b[4], *small;
    sl_pool *pool = sl__pool_new();
    sl__pool_stats s;
    uint64_t allocs;
    ck_assert_ptr_nonnull(pool);
    for (int i = 0; i < 4; i++) {
        ck_assert_ptr_nonnull(b[i] = sl__pool_alloc(pool, sizes[i]));
        bytes[i] = sl__pool_block_size(b[i]);
    }
    /* Room for the last three, not for all four. */
    sl__pool_set_idle_limit(pool, bytes[1] + bytes[2] + bytes[3]);
    for (int i = 0; i < 4; i++)
        sl__pool_free(pool, b[i]); /* b[0] is the oldest */
    s = stats_of(pool);
    ck_assert_uint_eq(s.cap_frees, 1);
    ck_assert_uint_eq(s.idle, bytes[1] + bytes[2] + bytes[3]);
    allocs = s.system_allocs;
    for (int i = 3; i >= 1; i--) /* cached: no new block */
        ck_assert_ptr_nonnull(b[i] = sl__pool_alloc(pool, sizes[i]));
    ck_assert_uint_eq(stats_of(pool).system_allocs, allocs);
    ck_assert_ptr_nonnull(b[0] = sl__pool_alloc(pool, sizes[0])); /* gone: a new one */
    ck_assert_uint_eq(stats_of(pool).system_allocs, allocs + 1);

    /* Idle again, b[1] oldest; a small block then pushes b[1] out. */
    for (int i = 1; i < 4; i++)
        sl__pool_free(pool, b[i]);
    ck_assert_ptr_nonnull(small = sl__pool_alloc(pool, 100));
    small_bytes = sl__pool_block_size(small);
    sl__pool_free(pool, small);
    s = stats_of(pool);
    ck_assert_uint_eq(s.cap_frees, 2);
    ck_assert_uint_eq(s.idle, bytes[2] + bytes[3] + small_bytes);
    ck_assert_ptr_eq(sl__pool_alloc(pool, 100), small); /* the small one was kept */
    allocs = stats_of(pool).system_allocs;
    ck_assert_ptr_nonnull(b[1] = sl__pool_alloc(pool, sizes[1])); /* went back */
    ck_assert_uint_eq(stats_of(pool).system_allocs, allocs + 1);
    ck_assert_ptr_nonnull(b[2] = sl__pool_alloc(pool, sizes[2])); /* kept */
    ck_assert_uint_eq(stats_of(pool).system_allocs, allocs + 1);
    for (int i = 0; i < 3; i++) /* b[3] is still idle */
        sl__pool_free(pool, b[i]);
    sl__pool_free(pool, small);
    sl__pool_release(pool);
}
END_TEST

/* --- counters ------------------------------------------------------------- */

START_TEST(test_pool_stats_add_up)
{
    const size_t n = 40;
    void **blocks = calloc(n, sizeof *blocks);
    size_t kept = 0;
    sl_pool *pool = sl__pool_new();
    sl__pool_stats s;
    ck_assert_ptr_nonnull(blocks);
    ck_assert_ptr_nonnull(pool);
    for (size_t i = 0; i < n; i++) {
        ck_assert_ptr_nonnull(blocks[i] = sl__pool_alloc(pool, varied_size((uint32_t)i)));
        ck_assert_uint_ge(sl__pool_block_size(blocks[i]), varied_size((uint32_t)i));
        ck_assert_uint_le(sl__pool_block_size(blocks[i]),
                          varied_size((uint32_t)i) + varied_size((uint32_t)i) / 32 + 64);
    }
    /* Every third goes back; the rest stay out. */
    for (size_t i = 0; i < n; i++) {
        if (i % 3 == 0)
            sl__pool_free(pool, blocks[i]);
        else
            kept += sl__pool_block_size(blocks[i]);
    }
    s = stats_of(pool);
    ck_assert_uint_eq(s.in_use, kept);
    ck_assert_uint_eq(s.in_use + s.idle, sl__pool_bytes(pool));
    ck_assert_uint_ge(s.peak_in_use, kept);
    ck_assert_uint_eq(s.system_allocs, n);
    ck_assert_uint_eq(s.system_frees, s.cap_frees); /* nothing else gives back */
    /* The default cap: what keeps in use + idle within twice the peak. */
    ck_assert_uint_gt(s.peak_in_use, SL__POOL_IDLE_FLOOR);
    ck_assert_uint_eq(s.idle_cap, 2 * s.peak_in_use - s.in_use);
    for (size_t i = 0; i < n; i++)
        if (i % 3 != 0)
            sl__pool_free(pool, blocks[i]);
    s = stats_of(pool);
    ck_assert_uint_eq(s.in_use, 0);
    ck_assert_uint_eq(s.idle, sl__pool_bytes(pool));
    sl__pool_release(pool);
    free(blocks);
}
END_TEST

/* Threads allocating and freeing varied sizes at once, under a cap they
 * keep reaching: no block is lost or handed out twice, and the counters
 * add up once they are done. Short: it runs under TSan too. */
#define CAP_THREADS 4
#define CAP_ROUNDS 3000
#define CAP_HELD 4

static void *cap_worker(void *arg)
{
    sl_pool *pool = arg;
    unsigned char *held[CAP_HELD] = {NULL};
    size_t sizes[CAP_HELD] = {0};
    long bad = 0;
    for (uint32_t i = 0; i < CAP_ROUNDS; i++) {
        uint32_t slot = i % CAP_HELD;
        /* Large blocks one round in 256: each is a mapping when it misses,
         * which TSan makes slow. */
        size_t size = i % 256 == 0 ? SL__POOL_LARGE + (i / 256 % 5) * 300000
                                   : varied_size(i) % 30000 + 1;
        if (held[slot]) {
            if (held[slot][0] != (unsigned char)slot ||
                held[slot][sizes[slot] - 1] != (unsigned char)slot)
                bad++;
            sl__pool_free(pool, held[slot]);
        }
        held[slot] = sl__pool_alloc(pool, size);
        sizes[slot] = size;
        if (!held[slot]) {
            bad++;
            continue;
        }
        touch(held[slot], size, (unsigned char)slot);
    }
    for (int k = 0; k < CAP_HELD; k++)
        sl__pool_free(pool, held[k]);
    return (void *)bad;
}

START_TEST(test_pool_threads_cap)
{
    const size_t limit = (size_t)64 << 10; /* about what the threads hold */
    pthread_t th[CAP_THREADS];
    sl_pool *pool = sl__pool_new();
    sl__pool_stats s;
    ck_assert_ptr_nonnull(pool);
    sl__pool_set_idle_limit(pool, limit);
    for (int i = 0; i < CAP_THREADS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, cap_worker, pool), 0);
    for (int i = 0; i < CAP_THREADS; i++) {
        void *bad;
        pthread_join(th[i], &bad);
        ck_assert_ptr_null(bad);
    }
    s = stats_of(pool);
    ck_assert_uint_eq(s.in_use, 0);
    ck_assert_uint_le(s.idle, limit);
    ck_assert_uint_eq(sl__pool_bytes(pool), s.idle);
    ck_assert_uint_gt(s.cap_frees, 0);
    ck_assert_uint_eq(s.system_frees, s.cap_frees);
    sl__pool_release(pool);
}
END_TEST

static Suite *make_pool_suite(void)
{
    Suite *s = suite_create("pool");
    TCase *tc = tu_tcase("core", 30);
    TCase *conc = tu_tcase("concurrency", 60);
    tcase_add_test(tc, test_pool_alignment);
    tcase_add_test(tc, test_pool_reuse_and_bytes);
    tcase_add_test(tc, test_pool_outlives_release);
    tcase_add_test(tc, test_pool_parts);
    tcase_add_test(tc, test_pool_parts_made_at_once);
    tcase_add_test(tc, test_pool_reuse_many);
    tcase_add_test(tc, test_pool_cap_holds);
    tcase_add_test(tc, test_pool_cap_follows_peak);
    tcase_add_test(tc, test_pool_steady_state_reuses);
    tcase_add_test(tc, test_pool_large_oldest_go_first);
    tcase_add_test(tc, test_pool_stats_add_up);
    tcase_add_test(conc, test_pool_threads);
    tcase_add_test(conc, test_pool_threads_cap);
    suite_add_tcase(s, tc);
    suite_add_tcase(s, conc);
    return s;
}

int main(void)
{
    return tu_run_suite(make_pool_suite);
}
