/* check_core.c: the core layer: tensors, rng, the ordered bounded queue,
 * status codes and error messages (the buffer pool: check_pool.c, but for
 * its lock-init failures, which need this file's fault wrappers). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* clock_gettime, nanosleep */
#endif

#ifdef HAVE_CONFIG_H
#include "config.h" /* PACKAGE_VERSION */
#endif

#include <check.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/pool.h"
#include "core/queue.h"
#include "core/rng.h"
#include "core/tensor_impl.h"
#include "sluice/sluice.h"
#include "fault.h"

Suite *make_core_suite(void);

/* --- helpers ---------------------------------------------------------- */

static double now_s(void)
{
    return sl__now_ms() * 1e-3;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* Polls until *flag is set or ms pass; returns the flag. */
static int wait_flag(atomic_int *flag, long ms)
{
    double end = now_s() + (double)ms / 1000.0;
    while (!atomic_load(flag) && now_s() < end)
        sleep_ms(1);
    return atomic_load(flag);
}

/* Polls (under the queue's lock) until pushes (push_side) or pops have had
 * to wait more than `above` times in all. */
static int wait_queue_waits(sl_queue *q, int push_side, uint64_t above, long ms)
{
    double end = now_s() + (double)ms / 1000.0;
    for (;;) {
        uint64_t waits;
        pthread_mutex_lock(&q->lock);
        waits = push_side ? q->push_waits : q->pop_waits;
        pthread_mutex_unlock(&q->lock);
        if (waits > above)
            return 1;
        if (now_s() >= end)
            return 0;
        sleep_ms(1);
    }
}

static int is_aligned64(const void *p)
{
    return ((uintptr_t)p & 63u) == 0;
}

/* Queue items that need no allocation: seq + 1, never NULL. */
static void *seq_item(uint64_t seq)
{
    return (void *)(uintptr_t)(seq + 1);
}

/* --- tensor ------------------------------------------------------------ */

START_TEST(test_tensor_new_and_refcount)
{
    const int64_t shape[3] = {2, 3, 4};
    sl_tensor *t = NULL;
    const unsigned char *bytes;
    ck_assert_int_eq(sl_tensor_new(&t, SL_FLOAT32, 3, shape), SL_OK);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(sl_tensor_dtype(t), SL_FLOAT32);
    ck_assert_int_eq(sl_tensor_ndim(t), 3);
    ck_assert_int_eq(sl_tensor_shape(t)[0], 2);
    ck_assert_int_eq(sl_tensor_shape(t)[1], 3);
    ck_assert_int_eq(sl_tensor_shape(t)[2], 4);
    ck_assert_uint_eq(sl_tensor_numel(t), 24);
    ck_assert_uint_eq(sl_tensor_nbytes(t), 96);
    ck_assert(is_aligned64(sl_tensor_data(t)));
    bytes = sl_tensor_data(t);
    for (size_t i = 0; i < 96; i++)
        ck_assert_uint_eq(bytes[i], 0);
    ck_assert_int_eq(sl_tensor_refcount(t), 1);

    ck_assert_ptr_eq(sl_tensor_retain(t), t);
    ck_assert_int_eq(sl_tensor_refcount(t), 2);
    sl_tensor_release(t);
    ck_assert_int_eq(sl_tensor_refcount(t), 1);
    ck_assert_ptr_null(sl_tensor_retain(NULL));
    sl_tensor_release(NULL);
    sl_tensor_release(t); /* the last reference: ASan reports a leak otherwise */
}
END_TEST

START_TEST(test_tensor_shapes)
{
    const int64_t empty[2] = {0, 5};
    const int64_t eight[SL_MAX_DIMS] = {1, 2, 1, 2, 1, 2, 1, 3};
    sl_tensor *t = NULL;

    /* A scalar: no dims, one element. */
    ck_assert_int_eq(sl_tensor_new(&t, SL_INT64, 0, NULL), SL_OK);
    ck_assert_int_eq(sl_tensor_ndim(t), 0);
    ck_assert_uint_eq(sl_tensor_numel(t), 1);
    ck_assert_uint_eq(sl_tensor_nbytes(t), 8);
    sl_tensor_release(t);

    /* A zero-sized dim is valid and holds nothing. */
    ck_assert_int_eq(sl_tensor_new(&t, SL_UINT8, 2, empty), SL_OK);
    ck_assert_uint_eq(sl_tensor_numel(t), 0);
    ck_assert_uint_eq(sl_tensor_nbytes(t), 0);
    sl_tensor_release(t);

    /* The maximum rank. */
    ck_assert_int_eq(sl_tensor_new(&t, SL_FLOAT64, SL_MAX_DIMS, eight), SL_OK);
    ck_assert_int_eq(sl_tensor_ndim(t), SL_MAX_DIMS);
    ck_assert_uint_eq(sl_tensor_numel(t), 24);
    ck_assert_uint_eq(sl_tensor_nbytes(t), 24 * 8);
    ck_assert_int_eq(sl_tensor_shape(t)[7], 3);
    sl_tensor_release(t);
}
END_TEST

START_TEST(test_tensor_dtypes)
{
    static const struct {
        sl_dtype dtype;
        const char *name;
        size_t size;
    } want[SL_DTYPE_COUNT] = {
        {SL_UINT8, "uint8", 1},     {SL_INT32, "int32", 4},     {SL_UINT32, "uint32", 4},
        {SL_INT64, "int64", 8},     {SL_FLOAT32, "float32", 4}, {SL_FLOAT64, "float64", 8},
    };
    for (int i = 0; i < SL_DTYPE_COUNT; i++) {
        sl_dtype parsed = SL_DTYPE_COUNT;
        ck_assert_uint_eq(sl_dtype_size(want[i].dtype), want[i].size);
        ck_assert_str_eq(sl_dtype_name(want[i].dtype), want[i].name);
        ck_assert_int_eq(sl_dtype_parse(want[i].name, &parsed), SL_OK);
        ck_assert_int_eq(parsed, want[i].dtype);
    }
    ck_assert_uint_eq(sl_dtype_size(SL_DTYPE_COUNT), 0);
    ck_assert_uint_eq(sl_dtype_size((sl_dtype)-1), 0);
    ck_assert_str_eq(sl_dtype_name(SL_DTYPE_COUNT), "?");
    ck_assert_str_eq(sl_dtype_name((sl_dtype)-1), "?");
    {
        sl_dtype out = SL_INT32;
        ck_assert_int_eq(sl_dtype_parse("float16", &out), SL_EINVAL);
        ck_assert_int_eq(sl_dtype_parse("", &out), SL_EINVAL);
        ck_assert_int_eq(sl_dtype_parse("UINT8", &out), SL_EINVAL);
        ck_assert_int_eq(sl_dtype_parse("uint8 ", &out), SL_EINVAL);
        ck_assert_int_eq(out, SL_INT32); /* untouched on failure */
    }
}
END_TEST

START_TEST(test_tensor_shape_str)
{
    const int64_t hwc[3] = {28, 28, 1};
    const int64_t one[1] = {5};
    const int64_t unknown[3] = {-1, 28, 3};
    char buf[64];
    char small[4];
    char tiny[1] = {'x'};

    ck_assert_ptr_eq(sl_shape_str(buf, sizeof buf, 3, hwc), buf);
    ck_assert_str_eq(buf, "(28, 28, 1)");
    ck_assert_str_eq(sl_shape_str(buf, sizeof buf, 1, one), "(5,)");
    ck_assert_str_eq(sl_shape_str(buf, sizeof buf, 0, NULL), "()");
    ck_assert_str_eq(sl_shape_str(buf, sizeof buf, 3, unknown), "(?, 28, 3)");
    /* Truncated, but always terminated within len. */
    ck_assert_str_eq(sl_shape_str(small, sizeof small, 3, hwc), "(28");
    ck_assert_str_eq(sl_shape_str(tiny, sizeof tiny, 3, hwc), "");
    /* len 0 writes nothing at all. */
    tiny[0] = 'x';
    ck_assert_ptr_eq(sl_shape_str(tiny, 0, 3, hwc), tiny);
    ck_assert_int_eq(tiny[0], 'x');
}
END_TEST

START_TEST(test_tensor_bad_args)
{
    const int64_t neg[2] = {3, -1};
    const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    const int64_t ok[1] = {4};
    sl_tensor *t;

    t = (sl_tensor *)1;
    ck_assert_int_eq(sl_tensor_new(&t, SL_UINT8, 2, neg), SL_EINVAL);
    ck_assert_ptr_null(t);
    t = (sl_tensor *)1;
    ck_assert_int_eq(sl_tensor_new(&t, SL_UINT8, SL_MAX_DIMS + 1, nine), SL_EINVAL);
    ck_assert_ptr_null(t);
    t = (sl_tensor *)1;
    ck_assert_int_eq(sl_tensor_new(&t, SL_UINT8, -1, ok), SL_EINVAL);
    ck_assert_ptr_null(t);
    t = (sl_tensor *)1;
    ck_assert_int_eq(sl_tensor_new(&t, SL_DTYPE_COUNT, 1, ok), SL_EINVAL);
    ck_assert_ptr_null(t);
    t = (sl_tensor *)1;
    ck_assert_int_eq(sl_tensor_new(&t, (sl_dtype)-3, 1, ok), SL_EINVAL);
    ck_assert_ptr_null(t);
}
END_TEST

/* The overflow cases below are written for a 64-bit size_t. */
_Static_assert(SIZE_MAX == UINT64_MAX, "64-bit size_t expected");

START_TEST(test_tensor_overflow)
{
    const int64_t g = INT64_C(1) << 32;
    const int64_t numel_overflow[2] = {g, g};            /* 2^64 elements */
    const int64_t bytes_overflow[1] = {INT64_C(1) << 61}; /* 2^61 * 8 bytes */
    /* 3 * 0x5555555555555555 = 2^64 - 1 bytes: fits size_t alone. */
    const int64_t header_overflow[2] = {3, INT64_C(0x5555555555555555)};
    size_t numel = 0, nbytes = 0;
    sl_tensor *t;

    ck_assert_int_eq(sl__shape_numel(2, numel_overflow, SL_UINT8, &numel, &nbytes), SL_ENOMEM);
    t = (sl_tensor *)1;
    ck_assert_int_eq(sl_tensor_new(&t, SL_UINT8, 2, numel_overflow), SL_ENOMEM);
    ck_assert_ptr_null(t);

    ck_assert_int_eq(sl__shape_numel(1, bytes_overflow, SL_FLOAT64, &numel, &nbytes), SL_ENOMEM);
    ck_assert_int_eq(sl__shape_numel(1, bytes_overflow, SL_UINT8, &numel, &nbytes), SL_OK);
    t = (sl_tensor *)1;
    ck_assert_int_eq(sl_tensor_new(&t, SL_FLOAT64, 1, bytes_overflow), SL_ENOMEM);
    ck_assert_ptr_null(t);

    /* The data fits size_t, the data plus the tensor header does not. */
    ck_assert_int_eq(sl__shape_numel(2, header_overflow, SL_UINT8, &numel, &nbytes), SL_OK);
    ck_assert_uint_eq(nbytes, SIZE_MAX);
    t = (sl_tensor *)1;
    ck_assert_int_eq(sl_tensor_new(&t, SL_UINT8, 2, header_overflow), SL_ENOMEM);
    ck_assert_ptr_null(t);
}
END_TEST

START_TEST(test_tensor_shape_helpers)
{
    const int64_t a[3] = {2, 3, 4};
    const int64_t b[3] = {2, 3, 5};
    size_t numel = 0, nbytes = 0;
    ck_assert_int_eq(sl__shape_numel(3, a, SL_INT32, &numel, &nbytes), SL_OK);
    ck_assert_uint_eq(numel, 24);
    ck_assert_uint_eq(nbytes, 96);
    ck_assert_int_eq(sl__shape_numel(0, NULL, SL_UINT8, &numel, &nbytes), SL_OK);
    ck_assert_uint_eq(numel, 1);
    ck_assert_uint_eq(nbytes, 1);
    ck_assert(sl__shape_equal(3, a, 3, a));
    ck_assert(!sl__shape_equal(3, a, 3, b));
    ck_assert(sl__shape_equal(2, a, 2, b)); /* only the first ndim sizes count */
    ck_assert(!sl__shape_equal(3, a, 2, a));
    ck_assert(sl__shape_equal(0, a, 0, b));
}
END_TEST

START_TEST(test_tensor_views)
{
    const int64_t base_shape[2] = {4, 8};
    const int64_t row[1] = {8};
    const int64_t pair[2] = {2, 4};
    sl_tensor *base = NULL, *view = NULL, *sub = NULL, *bad = (sl_tensor *)1;
    uint8_t *data;

    ck_assert_int_eq(sl__tensor_alloc(&base, NULL, SL_UINT8, 2, base_shape), SL_OK);
    data = sl_tensor_data(base);
    for (int i = 0; i < 32; i++)
        data[i] = (uint8_t)i;
    ck_assert(sl__tensor_writable(base));

    /* Row 1 as a view: shares the data and holds a reference on base. */
    ck_assert_int_eq(sl__tensor_view(&view, NULL, base, 8, SL_UINT8, 1, row), SL_OK);
    ck_assert_ptr_eq(sl_tensor_data(view), data + 8);
    ck_assert_uint_eq(sl_tensor_nbytes(view), 8);
    ck_assert_int_eq(sl_tensor_refcount(base), 2);
    ck_assert_int_eq(sl_tensor_refcount(view), 1);
    ck_assert(!sl__tensor_writable(view)); /* one reference, but not its data */
    ck_assert(!sl_tensor_writable(view));   /* the public answer agrees */
    ck_assert(!sl__tensor_writable(base)); /* shared with the view */

    /* A view of a view, reinterpreting the last row as (2, 4). */
    ck_assert_int_eq(sl__tensor_view(&sub, NULL, view, 0, SL_UINT8, 2, pair), SL_OK);
    ck_assert_int_eq(sl_tensor_refcount(view), 2);

    /* Out of range: past the end, or starting beyond it. */
    ck_assert_int_eq(sl__tensor_view(&bad, NULL, base, 25, SL_UINT8, 1, row), SL_EINVAL);
    ck_assert_ptr_null(bad);
    ck_assert_int_eq(sl__tensor_view(&bad, NULL, base, 33, SL_UINT8, 1, row), SL_EINVAL);
    ck_assert_int_eq(sl__tensor_view(&bad, NULL, base, 0, SL_INT64, 1, row), SL_EINVAL);
    ck_assert_int_eq(sl_tensor_refcount(base), 2); /* failures took no reference */
    ck_assert_int_eq(sl__tensor_view(&bad, NULL, base, 24, SL_UINT8, 1, row), SL_OK);
    ck_assert_ptr_eq(sl_tensor_data(bad), data + 24);
    sl_tensor_release(bad);

    /* Dropping base keeps the data alive through the views (ASan checks). */
    sl_tensor_release(base);
    ck_assert_int_eq(sl_tensor_refcount(base), 1);
    for (int i = 0; i < 8; i++)
        ck_assert_uint_eq(((uint8_t *)sl_tensor_data(sub))[i], 8 + i);
    sl_tensor_release(view);
    ck_assert_int_eq(((uint8_t *)sl_tensor_data(sub))[7], 15);
    sl_tensor_release(sub); /* frees sub, view and base */

    /* After the only view goes, base becomes writable again. */
    ck_assert_int_eq(sl__tensor_alloc(&base, NULL, SL_UINT8, 2, base_shape), SL_OK);
    ck_assert_int_eq(sl__tensor_view(&view, NULL, base, 0, SL_UINT8, 1, row), SL_OK);
    ck_assert(!sl__tensor_writable(base));
    sl_tensor_release(view);
    ck_assert(sl__tensor_writable(base));
    sl_tensor_retain(base);
    ck_assert(!sl__tensor_writable(base));
    sl_tensor_release(base);
    ck_assert(sl__tensor_writable(base));
    sl_tensor_release(base);
}
END_TEST

/* A borrowed view takes no reference on its base until it escapes; then
 * it keeps the base alive as an ordinary view does (ASan checks). */
START_TEST(test_tensor_view_borrowed)
{
    const int64_t base_shape[2] = {4, 8};
    const int64_t row[1] = {8};
    sl_tensor *base = NULL, *kept = NULL, *dropped = NULL, *sub = NULL;
    uint8_t *data;
    ck_assert_int_eq(sl__tensor_alloc(&base, NULL, SL_UINT8, 2, base_shape), SL_OK);
    data = sl_tensor_data(base);
    for (int i = 0; i < 32; i++)
        data[i] = (uint8_t)i;
    ck_assert_int_eq(sl__tensor_view_borrowed(&dropped, NULL, base, 8, SL_UINT8, 1, row), SL_OK);
    ck_assert_int_eq(sl__tensor_view_borrowed(&kept, NULL, base, 16, SL_UINT8, 1, row), SL_OK);
    ck_assert_ptr_eq(sl_tensor_data(kept), data + 16);
    ck_assert_int_eq(sl_tensor_refcount(base), 1); /* borrowed: no reference */
    ck_assert(!sl__tensor_writable(kept));        /* still not its own data */
    /* Released inside the pipeline: the base is not touched. */
    sl_tensor_release(dropped);
    ck_assert_int_eq(sl_tensor_refcount(base), 1);
    /* A view of a borrowed view holds the view, as any view does. */
    ck_assert_int_eq(sl__tensor_view(&sub, NULL, kept, 0, SL_UINT8, 1, row), SL_OK);
    ck_assert_int_eq(sl_tensor_refcount(base), 1);
    /* Handed out: the chain takes its reference on the base, once. */
    sl__tensor_escape(sub);
    ck_assert_int_eq(sl_tensor_refcount(base), 2);
    sl__tensor_escape(sub);
    ck_assert_int_eq(sl_tensor_refcount(base), 2);
    sl_tensor_release(kept); /* sub still holds it */
    sl_tensor_release(base); /* the owner goes: the escaped chain keeps it */
    for (int i = 0; i < 8; i++)
        ck_assert_uint_eq(((uint8_t *)sl_tensor_data(sub))[i], 16 + i);
    sl_tensor_release(sub); /* frees sub, kept and base */
}
END_TEST

START_TEST(test_tensor_pooled)
{
    const int64_t shape[3] = {28, 28, 1};
    const int64_t huge[1] = {INT64_C(1) << 46};
    const int64_t huger[2] = {INT64_C(1) << 62, 3}; /* 3 * 2^62 bytes */
    const int64_t row[1] = {28};
    sl_pool *pool = sl__pool_new();
    sl_tensor *t = NULL, *v = NULL, *big = (sl_tensor *)1;
    size_t bytes;
    ck_assert_ptr_nonnull(pool);
    ck_assert_int_eq(sl__tensor_alloc(&t, pool, SL_UINT8, 3, shape), SL_OK);
    ck_assert(is_aligned64(sl_tensor_data(t)));
    memset(sl_tensor_data(t), 7, sl_tensor_nbytes(t));
    bytes = sl__pool_bytes(pool);
    ck_assert_uint_ge(bytes, 28 * 28);
    ck_assert_int_eq(sl__tensor_view(&v, pool, t, 28, SL_UINT8, 1, row), SL_OK);
    ck_assert_uint_gt(sl__pool_bytes(pool), bytes);
    /* Too big for any size class: fails without touching the heap. */
    ck_assert_int_eq(sl__tensor_alloc(&big, pool, SL_UINT8, 1, huge), SL_ENOMEM);
    ck_assert_ptr_null(big);
    big = (sl_tensor *)1;
    ck_assert_int_eq(sl__tensor_alloc(&big, pool, SL_UINT8, 2, huger), SL_ENOMEM);
    ck_assert_ptr_null(big);

    /* Escaped tensors keep the pool alive after its owner lets go. */
    sl__tensor_escape(v); /* and t, its base */
    sl__pool_release(pool);
    sl_tensor_release(t);
    ck_assert_uint_eq(((uint8_t *)sl_tensor_data(v))[27], 7);
    sl_tensor_release(v); /* the last blocks: frees the pool (LSan checks) */
}
END_TEST

#define REF_THREADS 4
#define REF_ROUNDS 20000

static void *refcount_worker(void *arg)
{
    sl_tensor *t = arg;
    for (int i = 0; i < REF_ROUNDS; i++) {
        sl_tensor_retain(t);
        sl_tensor_release(t);
    }
    return NULL;
}

START_TEST(test_tensor_refcount_threads)
{
    const int64_t shape[1] = {16};
    pthread_t th[REF_THREADS];
    sl_tensor *t = NULL;
    ck_assert_int_eq(sl_tensor_new(&t, SL_INT32, 1, shape), SL_OK);
    for (int i = 0; i < REF_THREADS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, refcount_worker, t), 0);
    for (int i = 0; i < REF_THREADS; i++)
        pthread_join(th[i], NULL);
    ck_assert_int_eq(sl_tensor_refcount(t), 1);
    sl_tensor_release(t);
}
END_TEST

/* --- rng ----------------------------------------------------------------- */

START_TEST(test_rng_same_seed)
{
    sl_rng a, b;
    uint64_t first, prev;
    sl__rng_seed(&a, 42, 1, 2, 3);
    sl__rng_seed(&b, 42, 1, 2, 3);
    first = prev = sl__rng_next(&a);
    ck_assert_uint_eq(sl__rng_next(&b), first);
    for (int i = 0; i < 1000; i++) {
        uint64_t x = sl__rng_next(&a);
        ck_assert_uint_eq(sl__rng_next(&b), x);
        ck_assert_uint_ne(x, prev);
        prev = x;
    }
}
END_TEST

START_TEST(test_rng_tuples_differ)
{
    static const uint64_t tuples[][4] = {
        {0, 0, 0, 0}, {1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1},
        {1, 2, 3, 4}, {1, 3, 2, 4}, {2, 1, 3, 4}, {1, 2, 4, 3}, {4, 3, 2, 1},
        {42, 0, 7, 0}, {42, 1, 7, 0}, {42, 0, 8, 0}, {43, 0, 7, 0},
    };
    enum { NT = sizeof tuples / sizeof tuples[0], NV = 4 };
    uint64_t v[NT][NV];
    for (int i = 0; i < NT; i++) {
        sl_rng r;
        sl__rng_seed(&r, tuples[i][0], tuples[i][1], tuples[i][2], tuples[i][3]);
        for (int k = 0; k < NV; k++)
            v[i][k] = sl__rng_next(&r);
    }
    /* No two streams share any of their first draws. */
    for (int i = 0; i < NT; i++)
        for (int j = i + 1; j < NT; j++)
            for (int k = 0; k < NV; k++)
                for (int l = 0; l < NV; l++)
                    ck_assert_msg(v[i][k] != v[j][l], "tuples %d and %d share a draw", i, j);
}
END_TEST

START_TEST(test_rng_below)
{
    enum { BUCKETS = 10, DRAWS = 100000 };
    static const uint64_t bounds[] = {
        1, 2, 3, 7, 1000, (UINT64_C(1) << 63) + 1, UINT64_MAX - 1, UINT64_MAX,
    };
    long hist[BUCKETS] = {0};
    sl_rng r;
    sl__rng_seed(&r, 7, 0, 0, 0);
    for (size_t b = 0; b < sizeof bounds / sizeof bounds[0]; b++)
        for (int i = 0; i < 2000; i++)
            ck_assert_uint_lt(sl__rng_below(&r, bounds[b]), bounds[b]);
    /* A bound of 2/3 of the range: plain r % bound would make the values
     * below 2^64 - bound (the lower half here) twice as likely (2/3 of
     * draws instead of 1/2); rejection keeps them even. */
    {
        const uint64_t bound = UINT64_C(0xaaaaaaaaaaaaaaaa);
        int low = 0;
        for (int i = 0; i < 2000; i++)
            low += sl__rng_below(&r, bound) < bound / 2;
        ck_assert_int_gt(low, 900);
        ck_assert_int_lt(low, 1100);
    }
    for (int i = 0; i < DRAWS; i++)
        hist[sl__rng_below(&r, BUCKETS)]++;
    for (int k = 0; k < BUCKETS; k++) {
        /* Expect 10000 each, sigma ~95: 5% is over 5 sigma. */
        ck_assert_int_gt(hist[k], DRAWS / BUCKETS * 95 / 100);
        ck_assert_int_lt(hist[k], DRAWS / BUCKETS * 105 / 100);
    }
}
END_TEST

START_TEST(test_rng_uniform)
{
    enum { DRAWS = 100000 };
    double sum = 0, lo = 1, hi = 0;
    int below_half = 0, outside = 0;
    sl_rng r;
    sl__rng_seed(&r, 123, 4, 5, 6);
    /* One assertion after the loop, not two per draw: 200,000 ck_asserts
     * outran the case's 4 s timeout under sanitizers on a busy machine. */
    for (int i = 0; i < DRAWS; i++) {
        double u = sl__rng_uniform(&r);
        outside += !(u >= 0.0 && u < 1.0);
        sum += u;
        lo = u < lo ? u : lo;
        hi = u > hi ? u : hi;
        below_half += u < 0.5;
    }
    ck_assert_int_eq(outside, 0);
    ck_assert_double_eq_tol(sum / DRAWS, 0.5, 0.01);
    ck_assert_double_lt(lo, 0.001);
    ck_assert_double_gt(hi, 0.999);
    ck_assert_int_gt(below_half, DRAWS / 2 - 1000);
    ck_assert_int_lt(below_half, DRAWS / 2 + 1000);
}
END_TEST

/* --- clock --------------------------------------------------------------- */

START_TEST(test_clock_deadline)
{
    /* Deadlines land timeout_ms ahead on the monotonic clock, with the
     * nanoseconds carried into seconds; sl__now_ms does not go back. */
    static const int timeouts[] = {0, 1, 999, 1000, 1001, 2500, 86400000};
    double before = sl__now_ms();
    for (size_t i = 0; i < sizeof timeouts / sizeof timeouts[0]; i++) {
        struct timespec d, now;
        double ahead_ms;
        sl__deadline_ms(&d, timeouts[i]);
        clock_gettime(CLOCK_MONOTONIC, &now);
        ck_assert_int_ge(d.tv_nsec, 0);
        ck_assert_int_lt(d.tv_nsec, 1000000000L);
        ahead_ms = (double)(d.tv_sec - now.tv_sec) * 1e3 + (double)(d.tv_nsec - now.tv_nsec) * 1e-6;
        ck_assert_msg(ahead_ms <= timeouts[i] && ahead_ms > timeouts[i] - 100.0,
                      "deadline %d ms ahead is %.3f ms ahead", timeouts[i], ahead_ms);
    }
    ck_assert_double_ge(sl__now_ms(), before);
}
END_TEST

/* --- queue --------------------------------------------------------------- */

#define PACED_ITEMS 20

/* A consumer that pops PACED_ITEMS + 2 items in order and notes when each
 * pop returned. */
typedef struct paced_consumer {
    sl_queue *q;
    int timeout_ms;
    int rc;
    double got[PACED_ITEMS + 2];
} paced_consumer;

static void *paced_consumer_main(void *arg)
{
    paced_consumer *c = arg;
    c->rc = SL_OK;
    for (uint64_t i = 0; i < PACED_ITEMS + 2 && c->rc == SL_OK; i++) {
        void *item;
        uint64_t seq;
        c->rc = sl__queue_pop(c->q, &item, &seq, c->timeout_ms);
        if (c->rc == SL_OK && (seq != i || item != seq_item(i)))
            c->rc = SL_EINVAL;
        c->got[i] = now_s();
    }
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

START_TEST(test_queue_wakes_per_item)
{
    /* A consumer faster than its producer sleeps for every item: it must be
     * woken once per item, when the item arrives, with or without a
     * timeout; never by a clock in between. An item that is not next in
     * order wakes nobody; the one that completes the order brings both. */
    for (int timed = 0; timed < 2; timed++) {
        sl_queue q;
        paced_consumer c = {&q, timed ? 60000 : -1, -99, {0}};
        double lag[PACED_ITEMS];
        pthread_t th;
        uint64_t woken;
        ck_assert_int_eq(sl__queue_init(&q, 4, NULL), SL_OK);
        ck_assert_int_eq(pthread_create(&th, NULL, paced_consumer_main, &c), 0);
        for (uint64_t i = 0; i < PACED_ITEMS; i++) {
            /* The consumer is asleep for item i (pop_waits counts it under
             * the lock, which it gives up only by sleeping) ... */
            ck_assert(wait_queue_waits(&q, 0, i, 5000));
            sleep_ms(2); /* ... and a timed look would have happened by now */
            lag[i] = now_s();
            ck_assert_int_eq(sl__queue_push(&q, i, seq_item(i)), SL_OK);
        }
        ck_assert(wait_queue_waits(&q, 0, PACED_ITEMS, 5000));
        woken = sl__queue_pop_wakeups(&q);
        ck_assert_int_eq(sl__queue_push(&q, PACED_ITEMS + 1, seq_item(PACED_ITEMS + 1)), SL_OK);
        sleep_ms(20);
        ck_assert_uint_eq(sl__queue_pop_wakeups(&q), woken); /* not the head: nobody woke */
        ck_assert_int_eq(sl__queue_push(&q, PACED_ITEMS, seq_item(PACED_ITEMS)), SL_OK);
        pthread_join(th, NULL);
        ck_assert_int_eq(c.rc, SL_OK);
        woken = sl__queue_pop_wakeups(&q);
        ck_assert_msg(woken >= PACED_ITEMS + 1 && woken <= PACED_ITEMS + 3,
                      "woken %llu times for %d items", (unsigned long long)woken,
                      PACED_ITEMS + 1);
        for (int i = 0; i < PACED_ITEMS; i++)
            lag[i] = (c.got[i] - lag[i]) * 1e3;
        qsort(lag, PACED_ITEMS, sizeof *lag, cmp_double);
        ck_assert_msg(lag[PACED_ITEMS / 2] < 5.0, "an item waited %.2f ms (median)",
                      lag[PACED_ITEMS / 2]);
        sl__queue_destroy(&q);
    }
}
END_TEST

START_TEST(test_queue_init)
{
    sl_queue q;
    memset(&q, 0, sizeof q);
    ck_assert_int_eq(sl__queue_init(&q, 0, NULL), SL_EINVAL);
    ck_assert_int_eq(sl__queue_init(&q, 3, NULL), SL_OK);
    ck_assert_uint_eq(sl__queue_size(&q), 0);
    sl__queue_destroy(&q);
    sl__queue_destroy(&q); /* a second destroy is harmless */
}
END_TEST

START_TEST(test_queue_init_failures)
{
    /* Each pthread init the queue needs may fail: the status says so, the
     * message names the call, and nothing is left behind (destroy and
     * close do nothing; LSan sees no slots). A monotonic clock that cannot
     * be set is a failure too: timed pops would measure the wrong clock. */
    static const struct {
        fault_fn fn;
        int skip, err, status;
        const char *call;
    } cases[] = {
        {FAULT_MUTEX_INIT, 0, EAGAIN, SL_ETHREAD, "pthread_mutex_init"},
        {FAULT_CONDATTR_INIT, 0, ENOMEM, SL_ENOMEM, "pthread_condattr_init"},
        {FAULT_CONDATTR_SETCLOCK, 0, EINVAL, SL_ETHREAD, "pthread_condattr_setclock"},
        {FAULT_COND_INIT, 0, EAGAIN, SL_ETHREAD, "pthread_cond_init"},
        {FAULT_COND_INIT, 1, ENOMEM, SL_ENOMEM, "pthread_cond_init"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl_queue q;
        sl__error err;
        sl__err_clear(&err);
        fault_arm(cases[i].fn, cases[i].skip, cases[i].err);
        ck_assert_int_eq(sl__queue_init(&q, 4, &err), cases[i].status);
        ck_assert(fault_disarm());
        ck_assert_int_eq(err.status, cases[i].status);
        ck_assert_msg(strstr(err.msg, cases[i].call) != NULL, "%s", err.msg);
        ck_assert_ptr_null(q.slots);
        sl__queue_close(&q);
        sl__queue_destroy(&q);
    }
    {
        sl_queue q;
        ck_assert_int_eq(sl__queue_init(&q, 4, NULL), SL_OK); /* disarmed: works */
        sl__queue_destroy(&q);
    }
}
END_TEST

/* A pool whose class locks cannot all be made is not made, and the locks
 * made before the failing one are destroyed (LSan and the count see to
 * the rest). */
START_TEST(test_pool_init_failures)
{
    for (int skip = 0; skip < 3; skip++) {
        fault_arm(FAULT_MUTEX_INIT, skip, EAGAIN);
        ck_assert_ptr_null(sl__pool_new());
        ck_assert(fault_disarm());
    }
    {
        sl_pool *pool = sl__pool_new(); /* disarmed: works */
        ck_assert_ptr_nonnull(pool);
        sl__pool_release(pool);
    }
}
END_TEST

START_TEST(test_queue_fifo)
{
    int items[5] = {10, 11, 12, 13, 14};
    sl_queue q;
    ck_assert_int_eq(sl__queue_init(&q, 4, NULL), SL_OK);
    for (int round = 0; round < 3; round++) { /* wraps the ring several times */
        for (int i = 0; i < 3; i++)
            ck_assert_int_eq(sl__queue_push_next(&q, &items[i]), SL_OK);
        ck_assert_uint_eq(sl__queue_size(&q), 3);
        for (int i = 0; i < 3; i++) {
            void *item = NULL;
            uint64_t seq = 99;
            ck_assert_int_eq(sl__queue_pop(&q, &item, &seq, -1), SL_OK);
            ck_assert_ptr_eq(item, &items[i]);
            ck_assert_uint_eq(seq, (uint64_t)round * 3 + (uint64_t)i);
        }
        ck_assert_uint_eq(sl__queue_size(&q), 0);
    }
    {
        void *item = NULL;
        ck_assert_int_eq(sl__queue_push_next(&q, &items[4]), SL_OK);
        ck_assert_int_eq(sl__queue_pop(&q, &item, NULL, 0), SL_OK); /* seq may be NULL */
        ck_assert_ptr_eq(item, &items[4]);
    }
    sl__queue_destroy(&q);
}
END_TEST

START_TEST(test_queue_out_of_order)
{
    static const uint64_t order[] = {3, 1, 5, 0, 2, 4};
    sl_queue q;
    void *item = NULL;
    uint64_t seq;
    ck_assert_int_eq(sl__queue_init(&q, 8, NULL), SL_OK);
    /* 3 arrived but 0 has not: nothing may leave yet. */
    ck_assert_int_eq(sl__queue_push(&q, 3, seq_item(3)), SL_OK);
    ck_assert_int_eq(sl__queue_pop(&q, &item, &seq, 0), SL_ETIMEDOUT);
    ck_assert_ptr_null(item);
    for (size_t i = 1; i < sizeof order / sizeof order[0]; i++)
        ck_assert_int_eq(sl__queue_push(&q, order[i], seq_item(order[i])), SL_OK);
    ck_assert_uint_eq(sl__queue_size(&q), 6);
    for (uint64_t want = 0; want < 6; want++) {
        ck_assert_int_eq(sl__queue_pop(&q, &item, &seq, 0), SL_OK);
        ck_assert_uint_eq(seq, want);
        ck_assert_ptr_eq(item, seq_item(want));
    }
    ck_assert_int_eq(sl__queue_pop(&q, &item, &seq, 0), SL_ETIMEDOUT);
    sl__queue_destroy(&q);
}
END_TEST

typedef struct push_job {
    sl_queue *q;
    uint64_t seq; /* UINT64_MAX: use push_next */
    void *item;
    long delay_ms; /* sleep this long before pushing */
    atomic_int done;
    int rc;
    double finished; /* now_s() when the call returned */
} push_job;

static void *push_thread(void *arg)
{
    push_job *job = arg;
    if (job->delay_ms > 0)
        sleep_ms(job->delay_ms);
    if (job->seq == UINT64_MAX)
        job->rc = sl__queue_push_next(job->q, job->item);
    else
        job->rc = sl__queue_push(job->q, job->seq, job->item);
    job->finished = now_s();
    atomic_store(&job->done, 1);
    return NULL;
}

typedef struct pop_job {
    sl_queue *q;
    int timeout_ms;
    void *item;
    uint64_t seq;
    atomic_int done;
    int rc;
    double finished;
} pop_job;

static void *pop_thread(void *arg)
{
    pop_job *job = arg;
    job->rc = sl__queue_pop(job->q, &job->item, &job->seq, job->timeout_ms);
    job->finished = now_s();
    atomic_store(&job->done, 1);
    return NULL;
}

START_TEST(test_queue_backpressure)
{
    sl_queue q;
    pthread_t th;
    push_job job = {.seq = UINT64_MAX, .item = seq_item(2)};
    void *item;
    uint64_t seq, waits;
    ck_assert_int_eq(sl__queue_init(&q, 2, NULL), SL_OK);
    job.q = &q;
    ck_assert_int_eq(sl__queue_push_next(&q, seq_item(0)), SL_OK);
    ck_assert_int_eq(sl__queue_push_next(&q, seq_item(1)), SL_OK);
    ck_assert_int_eq(pthread_create(&th, NULL, push_thread, &job), 0);

    /* The third push must wait for room. */
    ck_assert(wait_queue_waits(&q, 1, 0, 5000));
    sleep_ms(20);
    ck_assert_int_eq(atomic_load(&job.done), 0);
    ck_assert_uint_eq(sl__queue_size(&q), 2);

    ck_assert_int_eq(sl__queue_pop(&q, &item, &seq, 1000), SL_OK);
    ck_assert_uint_eq(seq, 0);
    ck_assert(wait_flag(&job.done, 5000)); /* popping made room */
    pthread_join(th, NULL);
    ck_assert_int_eq(job.rc, SL_OK);
    for (uint64_t want = 1; want <= 2; want++) {
        ck_assert_int_eq(sl__queue_pop(&q, &item, &seq, 1000), SL_OK);
        ck_assert_uint_eq(seq, want);
        ck_assert_ptr_eq(item, seq_item(want));
    }

    /* An explicit sequence number far ahead waits the same way. */
    pthread_mutex_lock(&q.lock);
    waits = q.push_waits;
    pthread_mutex_unlock(&q.lock);
    job.seq = 5; /* head is 3, capacity 2: room once head reaches 4 */
    job.item = seq_item(5);
    atomic_store(&job.done, 0);
    ck_assert_int_eq(pthread_create(&th, NULL, push_thread, &job), 0);
    ck_assert(wait_queue_waits(&q, 1, waits, 5000));
    sleep_ms(20);
    ck_assert_int_eq(atomic_load(&job.done), 0);
    ck_assert_int_eq(sl__queue_push(&q, 3, seq_item(3)), SL_OK);
    ck_assert_int_eq(sl__queue_pop(&q, &item, &seq, 1000), SL_OK);
    ck_assert_uint_eq(seq, 3);
    ck_assert(wait_flag(&job.done, 5000));
    pthread_join(th, NULL);
    ck_assert_int_eq(job.rc, SL_OK);
    ck_assert_int_eq(sl__queue_push(&q, 4, seq_item(4)), SL_OK);
    for (uint64_t want = 4; want <= 5; want++) {
        ck_assert_int_eq(sl__queue_pop(&q, &item, &seq, 1000), SL_OK);
        ck_assert_uint_eq(seq, want);
    }
    sl__queue_destroy(&q);
}
END_TEST

/* A limit below the capacity holds producers back as a smaller queue would;
 * raising it wakes a blocked producer, and stats report the limit. */
START_TEST(test_queue_limit)
{
    sl_queue q;
    pthread_t th;
    push_job job = {.seq = UINT64_MAX, .item = seq_item(2)};
    sl__queue_stats st;
    void *item;
    uint64_t seq;
    ck_assert_int_eq(sl__queue_init(&q, 8, NULL), SL_OK);
    sl__queue_set_limit(&q, 2);
    ck_assert_uint_eq(sl__queue_limit(&q), 2);
    job.q = &q;
    ck_assert_int_eq(sl__queue_push_next(&q, seq_item(0)), SL_OK);
    ck_assert_int_eq(sl__queue_push_next(&q, seq_item(1)), SL_OK);
    ck_assert_int_eq(sl__queue_try_push_next(&q, seq_item(2)), SL_ETIMEDOUT);
    ck_assert_int_eq(pthread_create(&th, NULL, push_thread, &job), 0);
    ck_assert(wait_queue_waits(&q, 1, 0, 5000));
    sleep_ms(20);
    ck_assert_int_eq(atomic_load(&job.done), 0);
    sl__queue_set_limit(&q, 3); /* room for one more: the producer goes on */
    ck_assert(wait_flag(&job.done, 5000));
    pthread_join(th, NULL);
    ck_assert_int_eq(job.rc, SL_OK);
    ck_assert_uint_eq(sl__queue_size(&q), 3);
    sl__queue_get_stats(&q, &st);
    ck_assert_uint_eq(st.capacity, 3);
    /* Limits are clamped to 1 .. the ring's capacity. */
    sl__queue_set_limit(&q, 100);
    ck_assert_uint_eq(sl__queue_limit(&q), 8);
    sl__queue_set_limit(&q, 0);
    ck_assert_uint_eq(sl__queue_limit(&q), 1);
    /* A cut holds back later pushes only: what is in stays, in order. */
    ck_assert_int_eq(sl__queue_try_push_next(&q, seq_item(3)), SL_ETIMEDOUT);
    for (uint64_t want = 0; want <= 2; want++) {
        ck_assert_int_eq(sl__queue_pop(&q, &item, &seq, 1000), SL_OK);
        ck_assert_uint_eq(seq, want);
        ck_assert_ptr_eq(item, seq_item(want));
    }
    ck_assert_int_eq(sl__queue_try_push_next(&q, seq_item(3)), SL_OK);
    ck_assert_int_eq(sl__queue_try_push_next(&q, seq_item(4)), SL_ETIMEDOUT);
    ck_assert_int_eq(sl__queue_pop(&q, &item, &seq, 1000), SL_OK);
    ck_assert_uint_eq(seq, 3);
    sl__queue_destroy(&q);
}
END_TEST

/* The bounded take of a team thread: the push bound follows the head and
 * the limit, and a pop below it takes only what it may and never waits. */
START_TEST(test_queue_pop_before)
{
    sl_queue q;
    void *item = NULL;
    uint64_t seq = 99;
    ck_assert_int_eq(sl__queue_init(&q, 8, NULL), SL_OK);
    sl__queue_set_limit(&q, 3);
    ck_assert_uint_eq(sl__queue_push_bound(&q), 3);
    /* Empty: nothing to take, and *seq says which item comes next. */
    ck_assert_int_eq(sl__queue_pop_before(&q, &item, &seq, 10), SL_ETIMEDOUT);
    ck_assert_uint_eq(seq, 0);
    ck_assert_int_eq(sl__queue_push(&q, 1, seq_item(1)), SL_OK);
    /* Item 1 is in, but item 0 leaves first and is not there yet. */
    ck_assert_int_eq(sl__queue_pop_before(&q, &item, &seq, 10), SL_ETIMEDOUT);
    ck_assert_uint_eq(seq, 0);
    ck_assert_int_eq(sl__queue_push(&q, 0, seq_item(0)), SL_OK);
    /* There, but not below the bound: left in place. */
    ck_assert_int_eq(sl__queue_pop_before(&q, &item, &seq, 0), SL_ETIMEDOUT);
    ck_assert_uint_eq(seq, 0);
    ck_assert_uint_eq(sl__queue_size(&q), 2);
    ck_assert_int_eq(sl__queue_pop_before(&q, &item, &seq, 1), SL_OK);
    ck_assert_uint_eq(seq, 0);
    ck_assert_ptr_eq(item, seq_item(0));
    ck_assert_uint_eq(sl__queue_push_bound(&q), 4); /* the head moved */
    ck_assert_int_eq(sl__queue_pop_before(&q, &item, &seq, 1), SL_ETIMEDOUT);
    ck_assert_uint_eq(seq, 1);
    ck_assert_int_eq(sl__queue_pop_before(&q, &item, &seq, 2), SL_OK);
    ck_assert_ptr_eq(item, seq_item(1));
    /* Interrupted: nothing taken; closed and drained: the end. */
    ck_assert_int_eq(sl__queue_push(&q, 2, seq_item(2)), SL_OK);
    sl__queue_interrupt(&q);
    ck_assert_int_eq(sl__queue_pop_before(&q, &item, &seq, 10), SL_ECANCELED);
    sl__queue_destroy(&q);
    ck_assert_int_eq(sl__queue_init(&q, 4, NULL), SL_OK);
    ck_assert_int_eq(sl__queue_push(&q, 0, seq_item(0)), SL_OK);
    sl__queue_close(&q);
    ck_assert_uint_eq(sl__queue_push_bound(&q), UINT64_MAX); /* a push fails, never waits */
    ck_assert_int_eq(sl__queue_pop_before(&q, &item, &seq, 10), SL_OK);
    ck_assert_int_eq(sl__queue_pop_before(&q, &item, &seq, 10), SL_ECLOSED);
    sl__queue_destroy(&q);
}
END_TEST

START_TEST(test_queue_close_wakes_pop)
{
    sl_queue q;
    pthread_t th;
    pop_job job = {.timeout_ms = -1};
    double closed_at;
    ck_assert_int_eq(sl__queue_init(&q, 4, NULL), SL_OK);
    job.q = &q;
    ck_assert_int_eq(pthread_create(&th, NULL, pop_thread, &job), 0);
    ck_assert(wait_queue_waits(&q, 0, 0, 5000)); /* the pop is asleep */
    ck_assert_int_eq(atomic_load(&job.done), 0);
    closed_at = now_s();
    sl__queue_close(&q);
    ck_assert(wait_flag(&job.done, 2000));
    pthread_join(th, NULL);
    ck_assert_int_eq(job.rc, SL_ECLOSED);
    ck_assert_double_lt(job.finished - closed_at, 0.5);
    sl__queue_destroy(&q);
}
END_TEST

static int drained;

static void free_counted(void *item)
{
    drained++;
    free(item);
}

static void *boxed(uint64_t seq)
{
    uint64_t *p = malloc(sizeof *p);
    if (p)
        *p = seq;
    return p;
}

START_TEST(test_queue_interrupt_wakes_pop)
{
    /* interrupt wakes a sleeping pop, timed or not, which returns
     * SL_ECANCELED; every later pop does too and takes nothing, while
     * pushes still work (what they bring stays for drain). */
    for (int timed = 0; timed < 2; timed++) {
        sl_queue q;
        pthread_t th;
        pop_job job = {.timeout_ms = timed ? 60000 : -1};
        double at;
        void *item = NULL;
        ck_assert_int_eq(sl__queue_init(&q, 4, NULL), SL_OK);
        job.q = &q;
        ck_assert_int_eq(pthread_create(&th, NULL, pop_thread, &job), 0);
        ck_assert(wait_queue_waits(&q, 0, 0, 5000)); /* the pop is asleep */
        ck_assert_int_eq(atomic_load(&job.done), 0);
        at = now_s();
        sl__queue_interrupt(&q);
        ck_assert(wait_flag(&job.done, 2000));
        pthread_join(th, NULL);
        ck_assert_int_eq(job.rc, SL_ECANCELED);
        ck_assert_double_lt(job.finished - at, 0.5);
        ck_assert_int_eq(sl__queue_push(&q, 0, boxed(0)), SL_OK);
        ck_assert_int_eq(sl__queue_pop(&q, &item, NULL, 0), SL_ECANCELED);
        ck_assert_int_eq(sl__queue_pop(&q, &item, NULL, -1), SL_ECANCELED);
        ck_assert_ptr_null(item);
        drained = 0;
        sl__queue_drain(&q, free_counted);
        ck_assert_int_eq(drained, 1);
        sl__queue_destroy(&q);
    }
}
END_TEST

START_TEST(test_queue_close_wakes_push)
{
    sl_queue q;
    pthread_t th;
    push_job job = {.seq = UINT64_MAX, .item = seq_item(1)};
    double closed_at;
    void *item = NULL;
    ck_assert_int_eq(sl__queue_init(&q, 1, NULL), SL_OK);
    job.q = &q;
    ck_assert_int_eq(sl__queue_push_next(&q, seq_item(0)), SL_OK);
    ck_assert_int_eq(pthread_create(&th, NULL, push_thread, &job), 0);
    ck_assert(wait_queue_waits(&q, 1, 0, 5000)); /* the push is asleep */
    ck_assert_int_eq(atomic_load(&job.done), 0);
    closed_at = now_s();
    sl__queue_close(&q);
    ck_assert(wait_flag(&job.done, 2000));
    pthread_join(th, NULL);
    ck_assert_int_eq(job.rc, SL_ECLOSED);
    ck_assert_double_lt(job.finished - closed_at, 0.5);
    /* The refused item was not taken; the earlier one still drains. */
    ck_assert_uint_eq(sl__queue_size(&q), 1);
    ck_assert_int_eq(sl__queue_pop(&q, &item, NULL, 0), SL_OK);
    ck_assert_ptr_eq(item, seq_item(0));
    ck_assert_int_eq(sl__queue_pop(&q, &item, NULL, 0), SL_ECLOSED);
    ck_assert_int_eq(sl__queue_push_next(&q, seq_item(1)), SL_ECLOSED);
    sl__queue_destroy(&q);
}
END_TEST

START_TEST(test_queue_pop_after_close)
{
    sl_queue q;
    void *item = NULL;
    uint64_t seq = 99;
    ck_assert_int_eq(sl__queue_init(&q, 8, NULL), SL_OK);
    ck_assert_int_eq(sl__queue_push(&q, 0, boxed(0)), SL_OK);
    ck_assert_int_eq(sl__queue_push(&q, 1, boxed(1)), SL_OK);
    ck_assert_int_eq(sl__queue_push(&q, 3, boxed(3)), SL_OK); /* 2 never comes */
    ck_assert_int_eq(sl__queue_push(&q, 5, boxed(5)), SL_OK);
    sl__queue_close(&q);
    {
        uint64_t *late = boxed(2);
        ck_assert_int_eq(sl__queue_push(&q, 2, late), SL_ECLOSED);
        free(late);
    }
    for (uint64_t want = 0; want < 2; want++) {
        ck_assert_int_eq(sl__queue_pop(&q, &item, &seq, -1), SL_OK);
        ck_assert_uint_eq(seq, want);
        ck_assert_uint_eq(*(uint64_t *)item, want);
        free(item);
    }
    /* 3 and 5 are held but not next in order: the end. Timed or not. */
    ck_assert_int_eq(sl__queue_pop(&q, &item, &seq, -1), SL_ECLOSED);
    ck_assert_int_eq(sl__queue_pop(&q, &item, &seq, 50), SL_ECLOSED);
    ck_assert_uint_eq(sl__queue_size(&q), 2);

    drained = 0;
    sl__queue_drain(&q, free_counted); /* LSan would report 3 and 5 otherwise */
    ck_assert_int_eq(drained, 2);
    ck_assert_uint_eq(sl__queue_size(&q), 0);
    sl__queue_destroy(&q);
}
END_TEST

START_TEST(test_queue_drain)
{
    sl_queue q;
    ck_assert_int_eq(sl__queue_init(&q, 16, NULL), SL_OK);
    for (uint64_t i = 0; i < 16; i++)
        ck_assert_int_eq(sl__queue_push(&q, i, boxed(i)), SL_OK);
    ck_assert_uint_eq(sl__queue_size(&q), 16);
    sl__queue_close(&q);
    drained = 0;
    sl__queue_drain(&q, free_counted);
    ck_assert_int_eq(drained, 16);
    ck_assert_uint_eq(sl__queue_size(&q), 0);
    drained = 0;
    sl__queue_drain(&q, free_counted); /* nothing twice */
    ck_assert_int_eq(drained, 0);
    sl__queue_destroy(&q);
}
END_TEST

START_TEST(test_queue_timed_pop)
{
    sl_queue q;
    pthread_t th;
    push_job job = {.seq = 0, .item = seq_item(0), .delay_ms = 50};
    void *item = NULL;
    uint64_t seq = 99;
    double t0, waited;
    ck_assert_int_eq(sl__queue_init(&q, 4, NULL), SL_OK);
    job.q = &q;

    t0 = now_s();
    ck_assert_int_eq(sl__queue_pop(&q, &item, &seq, 0), SL_ETIMEDOUT);
    ck_assert_double_lt(now_s() - t0, 0.5);

    t0 = now_s();
    ck_assert_int_eq(sl__queue_pop(&q, &item, &seq, 80), SL_ETIMEDOUT);
    waited = now_s() - t0;
    ck_assert_double_ge(waited, 0.075);
    ck_assert_double_lt(waited, 2.0);
    ck_assert_ptr_null(item);
    ck_assert_uint_eq(seq, 99);

    /* An item arriving before the deadline ends the wait early. */
    ck_assert_int_eq(pthread_create(&th, NULL, push_thread, &job), 0);
    t0 = now_s();
    ck_assert_int_eq(sl__queue_pop(&q, &item, &seq, 1999), SL_OK);
    waited = now_s() - t0;
    ck_assert_double_ge(waited, 0.03); /* it did wait for the late push */
    ck_assert_double_lt(waited, 1.5);
    pthread_join(th, NULL);
    ck_assert_int_eq(job.rc, SL_OK);
    ck_assert_ptr_eq(item, seq_item(0));
    ck_assert_uint_eq(seq, 0);
    sl__queue_destroy(&q);
}
END_TEST

#define CONC_ITEMS 100000
#define CONC_PRODUCERS 4

typedef struct producer_job {
    sl_queue *q;
    uint64_t first;
    int rc;
} producer_job;

static void *producer_thread(void *arg)
{
    producer_job *job = arg;
    job->rc = SL_OK;
    for (uint64_t s = job->first; s < CONC_ITEMS && job->rc == SL_OK; s += CONC_PRODUCERS)
        job->rc = sl__queue_push(job->q, s, seq_item(s));
    return NULL;
}

START_TEST(test_queue_concurrent_producers)
{
    sl_queue q;
    pthread_t th[CONC_PRODUCERS];
    producer_job jobs[CONC_PRODUCERS];
    void *item = NULL;
    uint64_t seq;
    ck_assert_int_eq(sl__queue_init(&q, 16, NULL), SL_OK);
    for (int i = 0; i < CONC_PRODUCERS; i++) {
        jobs[i] = (producer_job){.q = &q, .first = (uint64_t)i};
        ck_assert_int_eq(pthread_create(&th[i], NULL, producer_thread, &jobs[i]), 0);
    }
    for (uint64_t want = 0; want < CONC_ITEMS; want++) {
        int rc = sl__queue_pop(&q, &item, &seq, 10000);
        if (rc != SL_OK || seq != want || item != seq_item(want))
            ck_abort_msg("pop %llu: rc %d, seq %llu", (unsigned long long)want, rc,
                         (unsigned long long)seq);
    }
    for (int i = 0; i < CONC_PRODUCERS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < CONC_PRODUCERS; i++)
        ck_assert_int_eq(jobs[i].rc, SL_OK);
    ck_assert_int_eq(sl__queue_pop(&q, &item, &seq, 0), SL_ETIMEDOUT);
    ck_assert_uint_eq(sl__queue_size(&q), 0);
    sl__queue_close(&q);
    sl__queue_destroy(&q);
}
END_TEST

/* Several workers popping one queue (each pop hands out the seq so the
 * worker can push its result downstream under the same number). */
#define MC_CONSUMERS 4
#define MC_ITEMS 50000

typedef struct consumer_job {
    sl_queue *q;
    unsigned char *seen; /* (MC_ITEMS,) shared, one slot per seq */
    long count;
    long bad;
} consumer_job;

static void *consumer_thread(void *arg)
{
    consumer_job *job = arg;
    uint64_t last = 0;
    int first = 1;
    for (;;) {
        void *item;
        uint64_t seq;
        int rc = sl__queue_pop(job->q, &item, &seq, 10000);
        if (rc == SL_ECLOSED)
            break;
        if (rc != SL_OK || seq >= MC_ITEMS || item != seq_item(seq) || (!first && seq <= last)) {
            job->bad++;
            break;
        }
        job->seen[seq]++; /* each seq is handed to exactly one consumer */
        job->count++;
        last = seq;
        first = 0;
    }
    return NULL;
}

static void *mc_producer_thread(void *arg)
{
    producer_job *job = arg;
    job->rc = SL_OK;
    for (uint64_t s = job->first; s < MC_ITEMS && job->rc == SL_OK; s += 2)
        job->rc = sl__queue_push(job->q, s, seq_item(s));
    return NULL;
}

START_TEST(test_queue_concurrent_consumers)
{
    sl_queue q;
    pthread_t prod[2], cons[MC_CONSUMERS];
    producer_job pjobs[2];
    consumer_job cjobs[MC_CONSUMERS];
    unsigned char *seen = calloc(MC_ITEMS, 1);
    long total = 0;
    ck_assert_ptr_nonnull(seen);
    ck_assert_int_eq(sl__queue_init(&q, 8, NULL), SL_OK);
    for (int i = 0; i < MC_CONSUMERS; i++) {
        cjobs[i] = (consumer_job){.q = &q, .seen = seen};
        ck_assert_int_eq(pthread_create(&cons[i], NULL, consumer_thread, &cjobs[i]), 0);
    }
    for (int i = 0; i < 2; i++) {
        pjobs[i] = (producer_job){.q = &q, .first = (uint64_t)i};
        ck_assert_int_eq(pthread_create(&prod[i], NULL, mc_producer_thread, &pjobs[i]), 0);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(prod[i], NULL);
    sl__queue_close(&q); /* consumers drain what is left, then see SL_ECLOSED */
    for (int i = 0; i < MC_CONSUMERS; i++)
        pthread_join(cons[i], NULL);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pjobs[i].rc, SL_OK);
    for (int i = 0; i < MC_CONSUMERS; i++) {
        ck_assert_int_eq(cjobs[i].bad, 0);
        total += cjobs[i].count;
    }
    ck_assert_int_eq(total, MC_ITEMS);
    for (long s = 0; s < MC_ITEMS; s++)
        ck_assert_msg(seen[s] == 1, "seq %ld seen %d times", s, seen[s]);
    sl__queue_destroy(&q);
    free(seen);
}
END_TEST

/* --- status and error messages --------------------------------------------- */

START_TEST(test_status_names)
{
    static const struct {
        int code;
        const char *name;
        const char *text;
    } codes[] = {
        {SL_OK, "SL_OK", "success"},
        {SL_EINVAL, "SL_EINVAL", "invalid argument"},
        {SL_ENOMEM, "SL_ENOMEM", "out of memory"},
        {SL_EIO, "SL_EIO", "input/output error"},
        {SL_EFORMAT, "SL_EFORMAT", "malformed data"},
        {SL_ESHAPE, "SL_ESHAPE", "wrong shape or type"},
        {SL_ECLOSED, "SL_ECLOSED", "closed"},
        {SL_ETIMEDOUT, "SL_ETIMEDOUT", "timed out"},
        {SL_ETHREAD, "SL_ETHREAD", "cannot make a thread or lock"},
        {SL_ESTATE, "SL_ESTATE", "invalid state"},
        {SL_ENUMERIC, "SL_ENUMERIC", "numeric error (NaN or infinity)"},
        {SL_ECANCELED, "SL_ECANCELED", "interrupted"},
        {SL_END_OF_EPOCH, "SL_END_OF_EPOCH", "end of epoch"},
        {SL_END_OF_DATA, "SL_END_OF_DATA", "end of data"},
    };
    enum { N = sizeof codes / sizeof codes[0] };
    static const int unknown[] = {-12, -100, 3, 100, INT_MIN, INT_MAX};
    for (int i = 0; i < N; i++) {
        ck_assert_str_eq(sl_status_name(codes[i].code), codes[i].name);
        ck_assert_str_eq(sl_strerror(codes[i].code), codes[i].text);
        for (int j = 0; j < i; j++)
            ck_assert_str_ne(sl_strerror(codes[i].code), sl_strerror(codes[j].code));
    }
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        ck_assert_str_eq(sl_status_name(unknown[i]), "SL_UNKNOWN");
        ck_assert_str_eq(sl_strerror(unknown[i]), "unknown status");
    }
    ck_assert_ptr_nonnull(sl_version());
    ck_assert_str_eq(sl_version(), PACKAGE_VERSION);
}
END_TEST

START_TEST(test_error_messages)
{
    sl__error err, copy;
    char big[SL_ERRMSG_LEN + 100];
    size_t out = 7;

    ck_assert_int_eq(sl__errf(&err, SL_EIO, "cannot open %s (%d)", "x.idx", 2), SL_EIO);
    ck_assert_int_eq(err.status, SL_EIO);
    ck_assert_str_eq(err.msg, "cannot open x.idx (2)");
    sl__err_prefix(&err, "mnist %s: ", "train");
    ck_assert_str_eq(err.msg, "mnist train: cannot open x.idx (2)");
    ck_assert_int_eq(err.status, SL_EIO);
    sl__err_copy(&copy, &err);
    ck_assert_int_eq(copy.status, SL_EIO);
    ck_assert_str_eq(copy.msg, err.msg);
    sl__err_copy(&err, &err);
    ck_assert_str_eq(err.msg, "mnist train: cannot open x.idx (2)");
    sl__err_clear(&err);
    ck_assert_int_eq(err.status, SL_OK);
    ck_assert_str_eq(err.msg, "");

    /* NULL targets are allowed everywhere. */
    ck_assert_int_eq(sl__errf(NULL, SL_ENOMEM, "x"), SL_ENOMEM);
    sl__err_prefix(NULL, "p");
    sl__err_clear(NULL);
    sl__err_copy(NULL, &copy);
    sl__err_copy(&copy, NULL);
    ck_assert_int_eq(copy.status, SL_EIO);

    /* Long messages are cut, never overflowed. */
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    sl__errf(&err, SL_EFORMAT, "%s", big);
    ck_assert_uint_eq(strlen(err.msg), SL_ERRMSG_LEN - 1);
    sl__err_prefix(&err, "stage: ");
    ck_assert_uint_eq(strlen(err.msg), SL_ERRMSG_LEN - 1);
    ck_assert(strncmp(err.msg, "stage: aaa", 10) == 0);

    ck_assert(sl__mul_size(3, 4, &out));
    ck_assert_uint_eq(out, 12);
    ck_assert(sl__mul_size(0, (size_t)-1, &out));
    ck_assert_uint_eq(out, 0);
    ck_assert(sl__mul_size((size_t)-1, 1, &out));
    ck_assert_uint_eq(out, (size_t)-1);
    out = 7;
    ck_assert(!sl__mul_size((size_t)1 << 32, (size_t)1 << 32, &out));
    ck_assert(!sl__mul_size((size_t)-1, 2, &out));
    ck_assert_uint_eq(out, 7); /* untouched on overflow */
}
END_TEST

/* --- suite --------------------------------------------------------------- */

Suite *make_core_suite(void)
{
    Suite *s = suite_create("core");
    TCase *tc;

    tc = tu_tcase("tensor", 30);
    tcase_add_test(tc, test_tensor_new_and_refcount);
    tcase_add_test(tc, test_tensor_shapes);
    tcase_add_test(tc, test_tensor_dtypes);
    tcase_add_test(tc, test_tensor_shape_str);
    tcase_add_test(tc, test_tensor_bad_args);
    tcase_add_test(tc, test_tensor_overflow);
    tcase_add_test(tc, test_tensor_shape_helpers);
    tcase_add_test(tc, test_tensor_views);
    tcase_add_test(tc, test_tensor_view_borrowed);
    tcase_add_test(tc, test_tensor_pooled);
    tcase_add_test(tc, test_tensor_refcount_threads);
    suite_add_tcase(s, tc);

    tc = tu_tcase("rng", 60);
    tcase_add_test(tc, test_rng_same_seed);
    tcase_add_test(tc, test_rng_tuples_differ);
    tcase_add_test(tc, test_rng_below);
    tcase_add_test(tc, test_rng_uniform);
    suite_add_tcase(s, tc);

    tc = tu_tcase("queue", 60);
    tcase_add_test(tc, test_clock_deadline);
    tcase_add_test(tc, test_queue_init);
    tcase_add_test(tc, test_queue_init_failures);
    tcase_add_test(tc, test_pool_init_failures);
    tcase_add_test(tc, test_queue_wakes_per_item);
    tcase_add_test(tc, test_queue_fifo);
    tcase_add_test(tc, test_queue_out_of_order);
    tcase_add_test(tc, test_queue_backpressure);
    tcase_add_test(tc, test_queue_limit);
    tcase_add_test(tc, test_queue_pop_before);
    tcase_add_test(tc, test_queue_close_wakes_pop);
    tcase_add_test(tc, test_queue_interrupt_wakes_pop);
    tcase_add_test(tc, test_queue_close_wakes_push);
    tcase_add_test(tc, test_queue_pop_after_close);
    tcase_add_test(tc, test_queue_drain);
    tcase_add_test(tc, test_queue_timed_pop);
    tcase_add_test(tc, test_queue_concurrent_producers);
    tcase_add_test(tc, test_queue_concurrent_consumers);
    suite_add_tcase(s, tc);

    tc = tu_tcase("status", 60);
    tcase_add_test(tc, test_status_names);
    tcase_add_test(tc, test_error_messages);
    suite_add_tcase(s, tc);

    return s;
}

int main(void)
{
    return tu_run_suite(make_core_suite);
}
