/* check_devices.c: devices and their queues. Devices are found by name
 * and refuse bad names and options with a message; the cpu device copies
 * into memory of its own; the sim device takes at least its modeled time
 * and counts it; sl__device_run counts a launch and a result. The device
 * queue keeps batches and markers in order, bounds its slots (by capacity
 * and by bytes), explains a GetNext timeout, wakes blocked waiters on
 * interrupt and close, keeps errors and the end sticky, and allocates
 * nothing per batch. Times are checked as lower bounds only, except where
 * a wake-up must come "at once" (then under a generous 1 s). */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/run_suite.h"
#include "tests/time_limit.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/tensor_impl.h"
#include "devices/device_impl.h"
#include "devices/device_queue.h"
#include "devices/dq_tune.h"
#include "fault.h"
#include "sluice/sluice.h"
#include "testutil.h"

Suite *make_devices_suite(void);

/* Long enough never to fire on a loaded machine; a test that waits this
 * long has failed anyway (the tcase timeout ends it). */
#define LONG_MS 20000

/* --- helpers ---------------------------------------------------------- */

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        continue;
}

static sl_device *open_device(const char *name, const sl_device_options *o)
{
    char err[256] = "";
    sl_device *d = NULL;
    int rc = sl_device_new(&d, name, o, err, sizeof err);
    ck_assert_msg(rc == SL_OK, "%s: %s", name, err);
    ck_assert_ptr_nonnull(d);
    return d;
}

static uint64_t bytes_allocated(const sl_device *d)
{
    sl_device_stats st;
    sl_device_get_stats(d, &st);
    return st.bytes_allocated;
}

/* Batches of two columns: "n" int32 (4) holding the batch number and its
 * next three, and "x" float32 (4, 8). 16 + 128 = 144 bytes a slot. */
#define SLOT_BYTES 144
static const sl_tensor_spec batch_specs[2] = {
    {SL_INT32, 1, {4}},
    {SL_FLOAT32, 2, {4, 8}},
};

static sl__device_queue *open_queue(sl_device *d, const char *name, size_t capacity,
                                    size_t max_bytes)
{
    sl__dq_options o;
    sl__device_queue *q = NULL;
    sl__error err;
    memset(&o, 0, sizeof o);
    o.name = name;
    o.capacity = capacity;
    o.max_bytes = max_bytes;
    sl__err_clear(&err);
    ck_assert_msg(sl__dq_new(&q, d, batch_specs, 2, &o, &err) == SL_OK, "%s", err.msg);
    return q;
}

/* Fills an acquired slot with batch number b (through the device). */
static int fill_slot(sl__device_queue *q, sl__dq_slot *slot, int32_t b)
{
    int32_t n[4] = {b, b + 1, b + 2, b + 3};
    return sl__device_copy_in(sl__dq_device(q), slot->columns[0].data, n, sizeof n);
}

/* The batch number a taken slot holds (-1 if the copy out fails). */
static int32_t slot_number(sl__device_queue *q, const sl__dq_slot *slot)
{
    int32_t n[4];
    if (sl__device_copy_out(sl__dq_device(q), n, slot->columns[0].data, sizeof n) != SL_OK)
        return -1;
    return n[0];
}

/* Acquires, fills with b and commits, without waiting. */
static void commit_batch(sl__device_queue *q, int32_t b)
{
    sl__dq_slot *slot;
    sl__error err;
    ck_assert_msg(sl__dq_acquire(q, &slot, 0, &err) == SL_OK, "%s", err.msg);
    ck_assert_int_eq(fill_slot(q, slot, b), SL_OK);
    sl__dq_commit(q, slot);
}

/* A producer thread: nbatches batches, an end-of-epoch marker after every
 * marker_every (0: none), then the end of data. It records its first
 * failure instead of asserting (asserts belong to the test's thread). */
typedef struct producer {
    sl__device_queue *q;
    int nbatches, marker_every;
    int rc;
    sl__error err;
} producer;

static void *producer_main(void *arg)
{
    producer *p = arg;
    p->rc = SL_OK;
    for (int b = 0; b < p->nbatches && p->rc == SL_OK; b++) {
        sl__dq_slot *slot;
        p->rc = sl__dq_acquire(p->q, &slot, LONG_MS, &p->err);
        if (p->rc != SL_OK)
            break;
        p->rc = fill_slot(p->q, slot, b);
        if (p->rc != SL_OK) {
            sl__dq_unacquire(p->q, slot);
            break;
        }
        sl__dq_commit(p->q, slot);
        if (p->marker_every > 0 && (b + 1) % p->marker_every == 0)
            p->rc = sl__dq_push_marker(p->q, SL_END_OF_EPOCH, NULL, LONG_MS, &p->err);
    }
    if (p->rc == SL_OK)
        p->rc = sl__dq_push_marker(p->q, SL_END_OF_DATA, NULL, LONG_MS, &p->err);
    return NULL;
}

/* A thread that makes one blocking call (GetNext or acquire) and records
 * what it returned and when. */
typedef struct blocked_call {
    sl__device_queue *q;
    int getnext; /* 1: GetNext; 0: acquire */
    int rc;
    double returned_ms;
    sl__error err;
} blocked_call;

static void *blocked_main(void *arg)
{
    blocked_call *c = arg;
    sl__dq_slot *slot = NULL;
    if (c->getnext)
        c->rc = sl__dq_get_next(c->q, &slot, -1, &c->err);
    else
        c->rc = sl__dq_acquire(c->q, &slot, -1, &c->err);
    c->returned_ms = sl__now_ms();
    return NULL;
}

/* Returns once c's call is blocked in its queue (the queue's own count of
 * waiters says so), so that what the test does next is what wakes it; a
 * call that never blocks fails the test, naming it. The wait is for a
 * state, not for a time: 30 s only bounds a broken test. */
static void wait_until_blocked(const blocked_call *c)
{
    for (int i = 0; i < 30000; i++) {
        sl__dq_stats st;
        sl__dq_get_stats(c->q, &st);
        if ((c->getnext ? st.getnext_waiters : st.room_waiters) == 1)
            return;
        sleep_ms(1);
    }
    ck_abort_msg("%s on '%s' never blocked", c->getnext ? "GetNext" : "acquire",
                 sl__dq_name(c->q));
}

/* --- devices ------------------------------------------------------------ */

START_TEST(test_device_names)
{
    static const char *bad[] = {"gpu:0", "cpu", "cpu:x", "cpu:-1", "cpu:64",
                                "cpu:",  "",    "sim:1x", ":0",   "cpu:100000000000"};
    sl_device *d = open_device("cpu:0", NULL);
    ck_assert_str_eq(sl_device_name(d), "cpu:0");
    ck_assert_str_eq(sl_device_kind(d), "cpu");
    sl_device_free(d);
    d = open_device("sim:63", NULL);
    ck_assert_str_eq(sl_device_name(d), "sim:63");
    ck_assert_str_eq(sl_device_kind(d), "sim");
    sl_device_free(d);

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[256] = "";
        d = (sl_device *)&err; /* must be reset to NULL */
        ck_assert_int_eq(sl_device_new(&d, bad[i], NULL, err, sizeof err), SL_EINVAL);
        ck_assert_ptr_null(d);
        ck_assert_msg(strstr(err, "cpu, sim") != NULL, "%s: %s", bad[i], err);
        ck_assert_msg(strstr(err, bad[i]) != NULL, "%s: %s", bad[i], err);
    }
    /* No room for a message, or a short one: still refused, no overflow. */
    ck_assert_int_eq(sl_device_new(&d, "gpu:0", NULL, NULL, 0), SL_EINVAL);
    {
        char small[8];
        memset(small, 'x', sizeof small);
        ck_assert_int_eq(sl_device_new(&d, "gpu:0", NULL, small, sizeof small), SL_EINVAL);
        ck_assert_uint_eq(strlen(small), sizeof small - 1);
    }
}
END_TEST

START_TEST(test_device_options)
{
    static const struct {
        double bw;
        int64_t copy_ns, launch_ns;
        const char *field;
    } bad[] = {
        {0.0, 10000, 20000, "sim_bandwidth_gbps"},
        {-1.0, 10000, 20000, "sim_bandwidth_gbps"},
        {INFINITY, 10000, 20000, "sim_bandwidth_gbps"},
        {NAN, 10000, 20000, "sim_bandwidth_gbps"},
        {25.0, -1, 20000, "sim_copy_latency_ns"},
        {25.0, 1000000001, 20000, "sim_copy_latency_ns"},
        {25.0, 10000, -5, "sim_launch_latency_ns"},
        {25.0, 10000, 2000000000, "sim_launch_latency_ns"},
    };
    sl_device_options o;
    sl_device *d = NULL;
    char err[256];

    sl_device_options_init(&o);
    ck_assert_uint_eq(o.size, sizeof o);
    ck_assert(o.sim_bandwidth_gbps == 25.0);
    ck_assert_int_eq(o.sim_copy_latency_ns, 10000);
    ck_assert_int_eq(o.sim_launch_latency_ns, 20000);

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sl_device_options_init(&o);
        o.sim_bandwidth_gbps = bad[i].bw;
        o.sim_copy_latency_ns = bad[i].copy_ns;
        o.sim_launch_latency_ns = bad[i].launch_ns;
        err[0] = '\0';
        ck_assert_int_eq(sl_device_new(&d, "sim:0", &o, err, sizeof err), SL_EINVAL);
        ck_assert_ptr_null(d);
        ck_assert_msg(strstr(err, bad[i].field) != NULL, "case %zu: %s", i, err);
        ck_assert_msg(strstr(err, "sim:0") != NULL, "case %zu: %s", i, err);
    }
    /* A struct that was never initialised, or a newer one that sets a field
     * this library does not know, is refused naming the struct. */
    memset(&o, 0, sizeof o);
    ck_assert_int_eq(sl_device_new(&d, "cpu:0", &o, err, sizeof err), SL_EINVAL);
    ck_assert_msg(strstr(err, "sl_device_options") != NULL, "%s", err);
    {
        union {
            sl_device_options o;
            unsigned char b[sizeof(sl_device_options) + 8];
        } big;
        sl_device_options_init_sized(&big.o, sizeof big);
        ck_assert_uint_eq(big.o.size, sizeof big);
        ck_assert_int_eq(big.b[sizeof(sl_device_options)], 0); /* the tail is zeroed */
        d = open_device("sim:0", &big.o);                      /* unknown bytes zero: fine */
        sl_device_free(d);
        big.b[sizeof(sl_device_options) + 3] = 1;
        ck_assert_int_eq(sl_device_new(&d, "sim:0", &big.o, err, sizeof err), SL_EINVAL);
        ck_assert_msg(strstr(err, "sl_device_options") != NULL, "%s", err);
    }
}
END_TEST

START_TEST(test_cpu_copy_round_trip)
{
    enum { N = 1000 };
    sl_device *d = open_device("cpu:0", NULL);
    unsigned char in[N], out[N];
    sl_device_stats st;
    void *mem = NULL;

    for (int i = 0; i < N; i++)
        in[i] = (unsigned char)(i * 7 + 3);
    memset(out, 0, sizeof out);
    ck_assert_int_eq(sl__device_alloc(d, N, &mem), SL_OK);
    ck_assert_ptr_nonnull(mem);
    ck_assert_uint_eq((uintptr_t)mem % 64, 0);
    ck_assert(mem != (void *)in);
    ck_assert_uint_eq(bytes_allocated(d), N);
    ck_assert_int_eq(sl__device_copy_in(d, mem, in, N), SL_OK);
    in[0] ^= 0xff; /* the device holds its own copy: changing the host's does not reach it */
    ck_assert_int_eq(sl__device_copy_out(d, out, mem, N), SL_OK);
    in[0] ^= 0xff;
    ck_assert_mem_eq(out, in, N);
    sl_device_get_stats(d, &st);
    ck_assert_uint_eq(st.copies_in, 1);
    ck_assert_uint_eq(st.bytes_in, N);
    ck_assert(st.modeled_ms == 0.0);
    ck_assert_int_eq(sl__device_synchronize(d), SL_OK); /* NULL entry: nothing to wait for */
    sl__device_free(d, mem, N);
    ck_assert_uint_eq(bytes_allocated(d), 0);
    sl_device_free(d);
}
END_TEST

START_TEST(test_async_copy_falls_back)
{
    /* cpu has no copy_in_async: the wrapper copies at once and hands back
     * no event, and waiting on that is a no-op. */
    sl_device *d = open_device("cpu:1", NULL);
    int64_t in = 0x1122334455667788LL, out = 0;
    sl__device_event *ev = (sl__device_event *)&in;
    void *mem;
    sl_device_stats st;
    ck_assert_int_eq(sl__device_alloc(d, sizeof in, &mem), SL_OK);
    ck_assert_int_eq(sl__device_copy_in_async(d, mem, &in, sizeof in, &ev), SL_OK);
    ck_assert_ptr_null(ev);
    ck_assert_int_eq(sl__device_event_wait(d, ev), SL_OK);
    ck_assert_int_eq(sl__device_copy_out(d, &out, mem, sizeof out), SL_OK);
    ck_assert(out == in);
    sl_device_get_stats(d, &st);
    ck_assert_uint_eq(st.copies_in, 1);
    ck_assert_uint_eq(st.bytes_in, sizeof in);
    sl__device_free(d, mem, sizeof in);
    sl_device_free(d);
}
END_TEST

START_TEST(test_sim_copy_takes_modeled_time)
{
    /* 2 ms a copy plus 4000 bytes at 0.001 GB/s (1 byte/us): 6 ms each way. */
    enum { N = 4000 };
    sl_device_options o;
    sl_device *d;
    sl_device_stats st;
    unsigned char in[N], out[N];
    void *mem;
    double t0, t1, t2;

    sl_device_options_init(&o);
    o.sim_copy_latency_ns = 2000000;
    o.sim_bandwidth_gbps = 0.001;
    d = open_device("sim:0", &o);
    for (int i = 0; i < N; i++)
        in[i] = (unsigned char)(i ^ 0x5a);
    ck_assert_int_eq(sl__device_alloc(d, N, &mem), SL_OK);
    ck_assert_uint_eq((uintptr_t)mem % 64, 0);
    t0 = sl__now_ms();
    ck_assert_int_eq(sl__device_copy_in(d, mem, in, N), SL_OK);
    t1 = sl__now_ms();
    ck_assert_int_eq(sl__device_copy_out(d, out, mem, N), SL_OK);
    t2 = sl__now_ms();
    ck_assert_mem_eq(out, in, N);
    /* The model owes time and sleeps it off in quanta, an overshoot
     * becoming credit (device_impl.h): the total is what it models, to
     * within a quantum; each delay alone need not be. */
    ck_assert_msg(t1 - t0 >= 6.0 - 0.5, "copy in took %.3f ms, the model says 6", t1 - t0);
    ck_assert_msg(t2 - t0 >= 12.0 - 0.5, "the copies took %.3f ms, the model says 12",
                  t2 - t0);
    sl_device_get_stats(d, &st);
    ck_assert_msg(fabs(st.modeled_ms - 12.0) < 1e-6, "modeled %.6f ms", st.modeled_ms);
    ck_assert_uint_eq(st.copies_in, 1);
    ck_assert_uint_eq(st.bytes_in, N);
    sl__device_free(d, mem, N);
    sl_device_free(d);
}
END_TEST

static int run_fn(void *arg)
{
    int *calls = arg;
    (*calls)++;
    return 42;
}

START_TEST(test_run_counts_two_interactions)
{
    sl_device_options o;
    sl_device_stats st;
    sl_device *d = open_device("cpu:0", NULL);
    int calls = 0;
    double t0, t1;

    ck_assert_int_eq(sl__device_run(d, run_fn, &calls), 42);
    ck_assert_int_eq(calls, 1);
    sl_device_get_stats(d, &st);
    ck_assert_uint_eq(st.interactions, 2);
    ck_assert(st.modeled_ms == 0.0);
    sl_device_free(d);

    /* On sim each interaction sleeps the launch latency: there and back. */
    sl_device_options_init(&o);
    o.sim_launch_latency_ns = 3000000;
    d = open_device("sim:2", &o);
    t0 = sl__now_ms();
    ck_assert_int_eq(sl__device_run(d, run_fn, &calls), 42);
    t1 = sl__now_ms();
    ck_assert_int_eq(calls, 2);
    sl_device_get_stats(d, &st);
    ck_assert_uint_eq(st.interactions, 2);
    ck_assert_msg(fabs(st.modeled_ms - 6.0) < 1e-6, "modeled %.6f ms", st.modeled_ms);
    ck_assert_msg(t1 - t0 >= 6.0 - 0.5, "run took %.3f ms, the model says 6", t1 - t0);
    sl_device_free(d);
}
END_TEST

START_TEST(test_external_tensor)
{
    int64_t shape[2] = {3, 5};
    int64_t unknown[2] = {-1, 5};
    float data[15];
    sl_tensor t;
    ck_assert_int_eq(sl__tensor_init_external(&t, SL_FLOAT32, 2, shape, data), SL_OK);
    ck_assert_ptr_eq(sl_tensor_data(&t), data);
    ck_assert_uint_eq(sl_tensor_numel(&t), 15);
    ck_assert_uint_eq(sl_tensor_nbytes(&t), 60);
    ck_assert_int_eq(sl_tensor_ndim(&t), 2);
    ck_assert_int_eq(sl_tensor_shape(&t)[1], 5);
    ck_assert_int_eq(sl_tensor_refcount(&t), 1);
    ck_assert_ptr_null(t.pool);
    ck_assert_ptr_null(t.base);
    ck_assert_int_eq(sl__tensor_init_external(&t, SL_FLOAT32, 2, unknown, data), SL_EINVAL);
    ck_assert_int_eq(sl__tensor_init_external(&t, SL_DTYPE_COUNT, 2, shape, data), SL_EINVAL);
}
END_TEST

/* --- the device queue ---------------------------------------------------- */

START_TEST(test_queue_slots_are_device_tensors)
{
    sl_device *d = open_device("cpu:0", NULL);
    sl__device_queue *q = open_queue(d, "cpu:0/train", 3, 0);
    sl__dq_stats st;
    sl__dq_slot *slot;
    sl__error err;

    sl__dq_get_stats(q, &st);
    ck_assert_uint_eq(st.slots, 3);
    ck_assert_uint_eq(st.slot_bytes, SLOT_BYTES);
    ck_assert_uint_eq(bytes_allocated(d), 3 * SLOT_BYTES);
    ck_assert_str_eq(sl__dq_name(q), "cpu:0/train");
    ck_assert_ptr_eq(sl__dq_device(q), d);
    ck_assert_int_eq(sl__dq_acquire(q, &slot, 0, &err), SL_OK);
    ck_assert_uint_eq(slot->ncolumns, 2);
    ck_assert_int_eq(sl_tensor_dtype(&slot->columns[1]), SL_FLOAT32);
    ck_assert_int_eq(sl_tensor_ndim(&slot->columns[1]), 2);
    ck_assert_int_eq(sl_tensor_shape(&slot->columns[1])[0], 4);
    ck_assert_int_eq(sl_tensor_shape(&slot->columns[1])[1], 8);
    ck_assert_uint_eq(sl_tensor_nbytes(&slot->columns[1]), 128);
    ck_assert_uint_eq((uintptr_t)sl_tensor_data(&slot->columns[0]) % 64, 0);
    ck_assert_uint_eq((uintptr_t)sl_tensor_data(&slot->columns[1]) % 64, 0);
    sl__dq_unacquire(q, slot);
    sl__dq_free(q);
    ck_assert_uint_eq(bytes_allocated(d), 0);
    sl_device_free(d);
}
END_TEST

START_TEST(test_queue_order_of_batches_and_markers)
{
    sl_device *d = open_device("cpu:0", NULL);
    sl__device_queue *q = open_queue(d, "cpu:0/order", 4, 0);
    producer p = {.q = q, .nbatches = 100, .marker_every = 10};
    pthread_t t;
    sl__dq_slot *slot;
    sl__dq_stats st;
    sl__error err;

    ck_assert_int_eq(pthread_create(&t, NULL, producer_main, &p), 0);
    for (int b = 0; b < 100; b++) {
        int rc = sl__dq_get_next(q, &slot, LONG_MS, &err);
        ck_assert_msg(rc == SL_OK, "batch %d: %s", b, err.msg);
        ck_assert_int_eq(slot_number(q, slot), b);
        ck_assert_uint_eq(slot->batch, (uint64_t)b);
        sl__dq_release(q, slot);
        if ((b + 1) % 10 == 0) {
            rc = sl__dq_get_next(q, &slot, LONG_MS, &err);
            ck_assert_msg(rc == SL_END_OF_EPOCH, "after batch %d: %d %s", b, rc, err.msg);
            ck_assert_ptr_null(slot);
        }
    }
    ck_assert_int_eq(sl__dq_get_next(q, &slot, LONG_MS, &err), SL_END_OF_DATA);
    /* The end is sticky: it comes back at once, however often asked. */
    ck_assert_int_eq(sl__dq_get_next(q, &slot, LONG_MS, &err), SL_END_OF_DATA);
    ck_assert_int_eq(sl__dq_get_next(q, &slot, 0, &err), SL_END_OF_DATA);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_msg(p.rc == SL_OK, "producer: %s", p.err.msg);
    sl__dq_get_stats(q, &st);
    ck_assert_uint_eq(st.batches_in, 100);
    ck_assert_uint_eq(st.batches_out, 100);
    ck_assert_uint_eq(st.filled, 0);
    sl__dq_free(q);
    sl_device_free(d);
}
END_TEST

START_TEST(test_queue_capacity_bounds_the_producer)
{
    sl_device *d = open_device("cpu:0", NULL);
    sl__device_queue *q = open_queue(d, "cpu:0/cap", 2, 0);
    sl__dq_slot *a, *b, *c;
    sl__dq_stats st;
    sl__error err;
    double t0, t1;

    ck_assert_int_eq(sl__dq_acquire(q, &a, 0, &err), SL_OK);
    ck_assert_int_eq(sl__dq_acquire(q, &b, 0, &err), SL_OK);
    ck_assert(a != b);
    ck_assert_int_eq(fill_slot(q, a, 0), SL_OK);
    sl__dq_commit(q, a);
    /* Nobody consumes: the third acquire waits its whole timeout. */
    t0 = sl__now_ms();
    ck_assert_int_eq(sl__dq_acquire(q, &c, 50, &err), SL_ETIMEDOUT);
    t1 = sl__now_ms();
    ck_assert_ptr_null(c);
    ck_assert_msg(t1 - t0 >= 50.0, "gave up after %.3f ms", t1 - t0);
    ck_assert_msg(strstr(err.msg, "cpu:0/cap") != NULL, "%s", err.msg);
    ck_assert_int_eq(sl__dq_acquire(q, &c, 0, &err), SL_ETIMEDOUT);
    sl__dq_get_stats(q, &st);
    ck_assert_uint_eq(st.filled, 1);
    ck_assert(st.acquire_wait_ms >= 50.0);

    /* Markers take no slot: they go in with every slot in use, up to
     * their own room. */
    for (int i = 0; i < SL__DQ_MARKER_ROOM; i++)
        ck_assert_int_eq(sl__dq_push_marker(q, SL_END_OF_EPOCH, NULL, 0, &err), SL_OK);
    ck_assert_int_eq(sl__dq_push_marker(q, SL_END_OF_EPOCH, NULL, 0, &err), SL_ETIMEDOUT);
    ck_assert_msg(strstr(err.msg, "cpu:0/cap") != NULL, "%s", err.msg);

    /* An unfilled slot given back can be acquired again. */
    sl__dq_unacquire(q, b);
    ck_assert_int_eq(sl__dq_acquire(q, &c, 0, &err), SL_OK);
    ck_assert_ptr_eq(c, b);
    sl__dq_unacquire(q, c);
    sl__dq_free(q);
    sl_device_free(d);
}
END_TEST

START_TEST(test_queue_max_bytes_caps_the_slots)
{
    sl_device *d = open_device("cpu:0", NULL);
    sl__device_queue *q;
    sl__dq_options o;
    sl__dq_stats st;
    sl__error err;
    sl_tensor_spec unknown = {SL_UINT8, 3, {-1, 28, 1}};

    q = open_queue(d, "cpu:0/cap3", 8, 3 * SLOT_BYTES + 10);
    sl__dq_get_stats(q, &st);
    ck_assert_uint_eq(st.slots, 3);
    ck_assert_uint_eq(bytes_allocated(d), 3 * SLOT_BYTES);
    sl__dq_free(q);
    /* Less than one batch: still one slot. */
    q = open_queue(d, "cpu:0/cap1", 8, 100);
    sl__dq_get_stats(q, &st);
    ck_assert_uint_eq(st.slots, 1);
    ck_assert_uint_eq(bytes_allocated(d), SLOT_BYTES);
    sl__dq_free(q);
    /* The cap above what capacity needs changes nothing. */
    q = open_queue(d, "cpu:0/cap2", 2, 1000 * SLOT_BYTES);
    sl__dq_get_stats(q, &st);
    ck_assert_uint_eq(st.slots, 2);
    sl__dq_free(q);
    ck_assert_uint_eq(bytes_allocated(d), 0);

    memset(&o, 0, sizeof o);
    o.name = "cpu:0/zero";
    q = (sl__device_queue *)&o;
    ck_assert_int_eq(sl__dq_new(&q, d, batch_specs, 2, &o, &err), SL_EINVAL);
    ck_assert_ptr_null(q);
    ck_assert_msg(strstr(err.msg, "queue capacity must be >= 1") != NULL, "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "cpu:0/zero") != NULL, "%s", err.msg);
    o.capacity = 2;
    ck_assert_int_eq(sl__dq_new(&q, d, &unknown, 1, &o, &err), SL_EINVAL);
    ck_assert_msg(strstr(err.msg, "fixed shape") != NULL, "%s", err.msg);
    ck_assert_int_eq(sl__dq_new(&q, d, batch_specs, 0, &o, &err), SL_EINVAL);
    ck_assert_uint_eq(bytes_allocated(d), 0);
    sl_device_free(d);
}
END_TEST

/* The slots a queue lets be in use (its stats' slots: the limit). */
static size_t slots_in_use(sl__device_queue *q)
{
    sl__dq_stats st;
    sl__dq_get_stats(q, &st);
    return st.slots;
}

/* A tuner's queue: grow_to sizes the arrays, but only `capacity` slots get
 * device memory until sl__dq_grow; the new slots carry batches like the
 * first ones, in order; a limit holds back acquires without freeing. */
START_TEST(test_queue_grows_and_limits)
{
    sl_device *d = open_device("cpu:0", NULL);
    sl__device_queue *q = NULL;
    sl__dq_options o;
    sl__dq_slot *slot;
    sl__dq_stats st;
    sl__error err;

    memset(&o, 0, sizeof o);
    o.name = "cpu:0/grow";
    o.capacity = 1;
    o.grow_to = 8;
    o.max_bytes = 3 * SLOT_BYTES; /* caps the growth at 3 slots */
    sl__err_clear(&err);
    ck_assert_msg(sl__dq_new(&q, d, batch_specs, 2, &o, &err) == SL_OK, "%s", err.msg);
    ck_assert_uint_eq(bytes_allocated(d), SLOT_BYTES);
    ck_assert_uint_eq(sl__dq_max_slots(q), 3);
    commit_batch(q, 0);
    ck_assert_int_eq(sl__dq_acquire(q, &slot, 0, &err), SL_ETIMEDOUT);

    ck_assert_msg(sl__dq_grow(q, 8, &err) == SL_OK, "%s", err.msg);
    ck_assert_uint_eq(bytes_allocated(d), 3 * SLOT_BYTES);
    ck_assert_uint_eq(slots_in_use(q), 3);
    commit_batch(q, 1);
    commit_batch(q, 2);
    ck_assert_int_eq(sl__dq_acquire(q, &slot, 0, &err), SL_ETIMEDOUT);
    for (int32_t b = 0; b < 3; b++) {
        ck_assert_int_eq(sl__dq_get_next(q, &slot, 0, &err), SL_OK);
        ck_assert_int_eq(slot_number(q, slot), b);
        sl__dq_release(q, slot);
    }

    /* A limit of 1: one slot in use at a time, the others kept. */
    sl__dq_set_limit(q, 1);
    sl__dq_get_stats(q, &st);
    ck_assert_uint_eq(st.slots, 1);
    commit_batch(q, 3);
    ck_assert_int_eq(sl__dq_acquire(q, &slot, 0, &err), SL_ETIMEDOUT);
    ck_assert_uint_eq(bytes_allocated(d), 3 * SLOT_BYTES);
    ck_assert_int_eq(sl__dq_get_next(q, &slot, 0, &err), SL_OK);
    ck_assert_int_eq(slot_number(q, slot), 3);
    sl__dq_release(q, slot);
    /* Growing again lifts it. */
    ck_assert_int_eq(sl__dq_grow(q, 3, &err), SL_OK);
    ck_assert_uint_eq(slots_in_use(q), 3);
    sl__dq_free(q);
    ck_assert_uint_eq(bytes_allocated(d), 0);

    o.grow_to = SL__DQ_MAX_SLOTS + 1;
    ck_assert_int_eq(sl__dq_new(&q, d, batch_specs, 2, &o, &err), SL_EINVAL);
    ck_assert_msg(strstr(err.msg, "grow_to") != NULL, "%s", err.msg);
    sl_device_free(d);
}
END_TEST

/* --- the depth tuner (dq_tune.h) ------------------------------------------ */


typedef struct tuned_producer {
    sl__device_queue *q;
    int batches, copy_ms;
    sl__dq_tune tune;
    char log[2048];
    int rc;
    sl__error err;
    /* What the producer has committed (and whether it pushed the end), so
     * that a consumer can take a batch only once it is there. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int committed, done;
} tuned_producer;

/* The producer says that one more batch, or the end, is in the queue. */
static void tuned_producer_said(tuned_producer *p, int batch, int end)
{
    pthread_mutex_lock(&p->mu);
    p->committed += batch;
    p->done |= end;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void tune_log_line(void *arg, const char *line)
{
    tuned_producer *p = arg;
    size_t used = strlen(p->log);
    snprintf(p->log + used, sizeof p->log - used, "%s\n", line);
}

/* A transfer thread whose copies take copy_ms, tuning as it goes. */
static void *tuned_producer_main(void *arg)
{
    tuned_producer *p = arg;
    p->rc = SL_OK;
    for (int b = 0; b < p->batches && p->rc == SL_OK; b++) {
        sl__dq_slot *slot;
        p->rc = sl__dq_acquire(p->q, &slot, LONG_MS, &p->err);
        if (p->rc != SL_OK)
            break;
        sleep_ms(p->copy_ms);
        p->rc = fill_slot(p->q, slot, b);
        sl__dq_commit(p->q, slot);
        tuned_producer_said(p, 1, 0);
        sl__dq_tune_tick(&p->tune);
    }
    if (p->rc == SL_OK)
        p->rc = sl__dq_push_marker(p->q, SL_END_OF_DATA, NULL, LONG_MS, &p->err);
    tuned_producer_said(p, 0, 1);
    return NULL;
}

/* Runs `batches` through a queue of `capacity` slots named name: a tuned
 * producer whose copies take copy_ms, and steps of step_ms on this thread.
 * With only_ready, each GetNext is called once its batch (or the end) is
 * in the queue, so it never waits, whatever the scheduler does. Checks
 * every batch came once and in order; leaves the tuner's lines in p->log
 * and returns the slots in use at the end. */
static size_t run_tuned(const char *name, size_t capacity, int batches, int copy_ms, int step_ms,
                        int only_ready, tuned_producer *p)
{
    sl_device *d = open_device("cpu:0", NULL);
    sl__dq_options o;
    sl__dq_stats st;
    pthread_t th;
    sl__error err;
    int32_t next = 0;
    int rc;

    memset(p, 0, sizeof *p);
    p->batches = batches;
    p->copy_ms = copy_ms;
    ck_assert_int_eq(pthread_mutex_init(&p->mu, NULL), 0);
    ck_assert_int_eq(pthread_cond_init(&p->cv, NULL), 0);
    memset(&o, 0, sizeof o);
    o.name = name;
    o.capacity = capacity;
    o.grow_to = SL__DQ_TUNE_MAX_SLOTS;
    ck_assert_msg(sl__dq_new(&p->q, d, batch_specs, 2, &o, &err) == SL_OK, "%s", err.msg);
    sl__dq_tune_init(&p->tune, p->q, tune_log_line, p);
    ck_assert_int_eq(pthread_create(&th, NULL, tuned_producer_main, p), 0);
    for (;;) {
        sl__dq_slot *slot;
        if (only_ready) {
            pthread_mutex_lock(&p->mu);
            while (p->committed <= next && !p->done)
                pthread_cond_wait(&p->cv, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        rc = sl__dq_get_next(p->q, &slot, LONG_MS, &err);
        if (rc != SL_OK)
            break;
        ck_assert_int_eq(slot_number(p->q, slot), next++);
        sleep_ms(step_ms);
        sl__dq_release(p->q, slot);
    }
    pthread_join(th, NULL);
    ck_assert_msg(rc == SL_END_OF_DATA, "%s", err.msg);
    ck_assert_msg(p->rc == SL_OK, "%s", p->err.msg);
    ck_assert_int_eq(next, batches);
    sl__dq_get_stats(p->q, &st);
    sl__dq_free(p->q);
    sl_device_free(d);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    return st.slots;
}

/* A queue of 1 slot between a copy and a step of 2 ms each: GetNext waits
 * for every copy while the copy waits for the slot. The tuner deepens the
 * queue to 4 (twice, but at least the default depth), keeps it (the copies
 * now overlap the steps) and says both. On a loaded machine (the sanitizer
 * runs, with other suites beside) a stalled thread can make GetNext wait
 * again later, and the tuner deepen the queue once more: 4 is a floor. */
START_TEST(test_tuner_deepens_a_queue_that_serialises)
{
    tuned_producer p;
    ck_assert_uint_ge(run_tuned("cpu:0/tuned", 1, 300, 2, 2, 0, &p), 4);
    ck_assert_msg(strstr(p.log, "autotune: device queue 'cpu:0/tuned': 1 -> 4 slots (GetNext "
                                "waited") != NULL,
                  "%s", p.log);
    ck_assert_msg(strstr(p.log, "kept 4 slots") != NULL, "%s", p.log);
}
END_TEST

/* A queue that keeps the executor fed is left as it is, silently: GetNext
 * is called only once its batch is in the queue, so it never waits. (With
 * steps of 10 ms against copies of 1 ms alone, a run pinned to one CPU
 * beside other suites stalled the producer past the 40 ms its 4 slots
 * hold, and the tuner rightly deepened the queue.) */
START_TEST(test_tuner_leaves_a_queue_that_keeps_up)
{
    tuned_producer p;
    ck_assert_uint_eq(run_tuned("cpu:0/deep", 4, 100, 1, 10, 1, &p), 4);
    ck_assert_msg(p.log[0] == '\0', "%s", p.log);
}
END_TEST

static void describe_starved(void *arg, char *buf, size_t len)
{
    snprintf(buf, len, "transfer thread: waiting for %s", (const char *)arg);
}

START_TEST(test_queue_getnext_timeout_says_why)
{
    sl_device *d = open_device("cpu:0", NULL);
    sl__device_queue *q;
    sl__dq_options o;
    sl__dq_slot *slot;
    sl__error err;
    double t0, t1;

    memset(&o, 0, sizeof o);
    o.name = "cpu:0/train";
    o.capacity = 2;
    o.describe = describe_starved;
    o.describe_arg = "the map stage (4 workers busy)";
    ck_assert_int_eq(sl__dq_new(&q, d, batch_specs, 2, &o, &err), SL_OK);
    t0 = sl__now_ms();
    ck_assert_int_eq(sl__dq_get_next(q, &slot, 60, &err), SL_ETIMEDOUT);
    t1 = sl__now_ms();
    ck_assert_ptr_null(slot);
    ck_assert_msg(t1 - t0 >= 60.0, "gave up after %.3f ms", t1 - t0);
    ck_assert_int_eq(err.status, SL_ETIMEDOUT);
    ck_assert_msg(strstr(err.msg, "GetNext") != NULL, "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "'cpu:0/train'") != NULL, "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "empty for") != NULL, "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "2 slots") != NULL, "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "transfer thread: waiting for the map stage (4 workers busy)"),
                  "%s", err.msg);
    sl__dq_free(q);

    /* Without a describe function the message still names the queue. */
    q = open_queue(d, "cpu:0/eval", 1, 0);
    ck_assert_int_eq(sl__dq_get_next(q, &slot, 0, &err), SL_ETIMEDOUT);
    ck_assert_msg(strstr(err.msg, "'cpu:0/eval'") != NULL, "%s", err.msg);
    sl__dq_free(q);
    sl_device_free(d);
}
END_TEST

START_TEST(test_queue_interrupt_wakes_getnext)
{
    sl_device *d = open_device("cpu:0", NULL);
    sl__device_queue *q = open_queue(d, "cpu:0/stop", 2, 0);
    blocked_call c = {.q = q, .getnext = 1};
    sl__dq_slot *slot, *held;
    sl__dq_stats st;
    sl__error err;
    pthread_t t;
    double t0;

    /* A slot taken before the interrupt, to commit while it lasts. */
    ck_assert_int_eq(sl__dq_acquire(q, &held, 0, &err), SL_OK);
    ck_assert_int_eq(pthread_create(&t, NULL, blocked_main, &c), 0);
    wait_until_blocked(&c);
    t0 = sl__now_ms();
    sl__dq_interrupt(q);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_int_eq(c.rc, SL_ECANCELED);
    ck_assert_msg(c.returned_ms - t0 < 1000.0, "woke %.1f ms after the interrupt",
                  c.returned_ms - t0);
    ck_assert_msg(strstr(c.err.msg, "cpu:0/stop") != NULL, "%s", c.err.msg);
    sl__dq_get_stats(q, &st);
    ck_assert(st.getnext_wait_ms > 0.0);

    /* Until resumed, GetNext returns at once, even with data there; the
     * transfer side goes on (a stopped sink resumes where it was). */
    ck_assert_int_eq(fill_slot(q, held, 7), SL_OK);
    sl__dq_commit(q, held);
    ck_assert_int_eq(sl__dq_get_next(q, &slot, LONG_MS, &err), SL_ECANCELED);
    ck_assert_int_eq(sl__dq_acquire(q, &slot, 0, &err), SL_OK);
    sl__dq_unacquire(q, slot);
    ck_assert_int_eq(sl__dq_push_marker(q, SL_END_OF_EPOCH, NULL, 0, &err), SL_OK);
    ck_assert_int_eq(sl__dq_get_next(q, &slot, LONG_MS, &err), SL_ECANCELED);

    sl__dq_resume(q);
    ck_assert_int_eq(sl__dq_get_next(q, &slot, LONG_MS, &err), SL_OK);
    ck_assert_int_eq(slot_number(q, slot), 7);
    sl__dq_release(q, slot);
    ck_assert_int_eq(sl__dq_get_next(q, &slot, LONG_MS, &err), SL_END_OF_EPOCH);
    commit_batch(q, 8);
    ck_assert_int_eq(sl__dq_get_next(q, &slot, LONG_MS, &err), SL_OK);
    ck_assert_int_eq(slot_number(q, slot), 8);
    sl__dq_release(q, slot);
    sl__dq_free(q);
    sl_device_free(d);
}
END_TEST

START_TEST(test_queue_close_wakes_acquire_and_drains)
{
    sl_device *d = open_device("cpu:0", NULL);
    sl__device_queue *q = open_queue(d, "cpu:0/close", 1, 0);
    blocked_call c = {.q = q, .getnext = 0};
    sl__dq_slot *slot;
    sl__error err;
    pthread_t t;
    double t0;

    commit_batch(q, 3); /* the only slot is full */
    ck_assert_int_eq(sl__dq_push_marker(q, SL_END_OF_EPOCH, NULL, 0, &err), SL_OK);
    ck_assert_int_eq(pthread_create(&t, NULL, blocked_main, &c), 0);
    wait_until_blocked(&c);
    t0 = sl__now_ms();
    sl__dq_close(q);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_int_eq(c.rc, SL_ECLOSED);
    ck_assert_msg(c.returned_ms - t0 < 1000.0, "woke %.1f ms after the close",
                  c.returned_ms - t0);
    ck_assert_msg(strstr(c.err.msg, "cpu:0/close") != NULL, "%s", c.err.msg);

    ck_assert_int_eq(sl__dq_push_marker(q, SL_END_OF_DATA, NULL, 0, &err), SL_ECLOSED);
    /* GetNext drains what was committed, in order, then says closed. */
    ck_assert_int_eq(sl__dq_get_next(q, &slot, LONG_MS, &err), SL_OK);
    ck_assert_int_eq(slot_number(q, slot), 3);
    sl__dq_release(q, slot);
    ck_assert_int_eq(sl__dq_acquire(q, &slot, LONG_MS, &err), SL_ECLOSED); /* a slot is free, but closed */
    ck_assert_int_eq(sl__dq_get_next(q, &slot, LONG_MS, &err), SL_END_OF_EPOCH);
    ck_assert_int_eq(sl__dq_get_next(q, &slot, LONG_MS, &err), SL_ECLOSED);
    ck_assert_msg(strstr(err.msg, "cpu:0/close") != NULL, "%s", err.msg);
    ck_assert_int_eq(sl__dq_get_next(q, &slot, LONG_MS, &err), SL_ECLOSED);
    sl__dq_free(q);
    sl_device_free(d);
}
END_TEST

/* A GetNext blocked on an empty queue (proved by the queue's count of
 * waiters before the close) is woken by the close, and says closed. */
START_TEST(test_queue_close_wakes_getnext)
{
    sl_device *d = open_device("cpu:0", NULL);
    sl__device_queue *q = open_queue(d, "cpu:0/close2", 2, 0);
    blocked_call c = {.q = q, .getnext = 1};
    pthread_t t;
    double t0;

    ck_assert_int_eq(pthread_create(&t, NULL, blocked_main, &c), 0);
    wait_until_blocked(&c);
    t0 = sl__now_ms();
    sl__dq_close(q);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_int_eq(c.rc, SL_ECLOSED);
    ck_assert_msg(c.returned_ms - t0 < 1000.0, "woke %.1f ms after the close",
                  c.returned_ms - t0);
    ck_assert_msg(strstr(c.err.msg, "closed") != NULL, "%s", c.err.msg);
    sl__dq_free(q);
    sl_device_free(d);
}
END_TEST

START_TEST(test_queue_error_marker_is_sticky)
{
    static const char *why = "mnist: train-images-idx3-ubyte: truncated at sample 12";
    sl_device *d = open_device("cpu:0", NULL);
    sl__device_queue *q = open_queue(d, "cpu:0/err", 2, 0);
    sl__dq_slot *slot;
    sl__error marker, err;

    commit_batch(q, 11);
    sl__errf(&marker, SL_EFORMAT, "%s", why);
    ck_assert_int_eq(sl__dq_push_marker(q, SL_EFORMAT, &marker, 0, &err), SL_OK);
    commit_batch(q, 12); /* after the error: never delivered */

    ck_assert_int_eq(sl__dq_get_next(q, &slot, LONG_MS, &err), SL_OK);
    ck_assert_int_eq(slot_number(q, slot), 11);
    sl__dq_release(q, slot);
    for (int i = 0; i < 3; i++) {
        sl__err_clear(&err);
        ck_assert_int_eq(sl__dq_get_next(q, &slot, i == 2 ? 0 : LONG_MS, &err), SL_EFORMAT);
        ck_assert_ptr_null(slot);
        ck_assert_int_eq(err.status, SL_EFORMAT);
        ck_assert_str_eq(err.msg, why);
    }
    sl__dq_free(q);

    /* An error pushed without a message still arrives with one. */
    q = open_queue(d, "cpu:0/err2", 2, 0);
    ck_assert_int_eq(sl__dq_push_marker(q, SL_EIO, NULL, 0, &err), SL_OK);
    ck_assert_int_eq(sl__dq_get_next(q, &slot, LONG_MS, &err), SL_EIO);
    ck_assert_msg(strstr(err.msg, "cpu:0/err2") != NULL, "%s", err.msg);
    sl__dq_free(q);
    sl_device_free(d);
}
END_TEST

START_TEST(test_queue_allocates_nothing_per_batch)
{
    enum { NBATCHES = 1000 };
    sl_device *d = open_device("cpu:0", NULL);
    sl__device_queue *q = open_queue(d, "cpu:0/many", 2, 0);
    producer p = {.q = q, .nbatches = NBATCHES, .marker_every = 0};
    uint64_t before = bytes_allocated(d);
    sl_device_stats ds;
    sl__dq_slot *slot;
    sl__dq_stats st;
    sl__error err;
    pthread_t t;
    void *first[2] = {NULL, NULL};

    ck_assert_uint_eq(before, 2 * SLOT_BYTES);
    ck_assert_int_eq(pthread_create(&t, NULL, producer_main, &p), 0);
    for (int b = 0; b < NBATCHES; b++) {
        int rc = sl__dq_get_next(q, &slot, LONG_MS, &err);
        ck_assert_msg(rc == SL_OK, "batch %d: %s", b, err.msg);
        ck_assert_int_eq(slot_number(q, slot), b);
        /* Every batch lands in one of the two slots made at the start. */
        if (!first[slot->index])
            first[slot->index] = slot->columns[0].data;
        ck_assert_ptr_eq(slot->columns[0].data, first[slot->index]);
        ck_assert_uint_eq(bytes_allocated(d), before);
        sl__dq_release(q, slot);
    }
    ck_assert_int_eq(sl__dq_get_next(q, &slot, LONG_MS, &err), SL_END_OF_DATA);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_msg(p.rc == SL_OK, "producer: %s", p.err.msg);
    ck_assert_uint_eq(bytes_allocated(d), before);
    sl_device_get_stats(d, &ds);
    ck_assert_uint_eq(ds.copies_in, NBATCHES);
    sl__dq_get_stats(q, &st);
    ck_assert_uint_eq(st.batches_in, NBATCHES);
    ck_assert_uint_eq(st.batches_out, NBATCHES);
    sl__dq_free(q);
    sl_device_free(d);
}
END_TEST

START_TEST(test_queue_init_failures)
{
    /* Each pthread init the queue needs may fail: the status says so, the
     * message names the queue and the call, and nothing is left behind
     * (LSan; the device's bytes). */
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
    sl_device *d = open_device("cpu:0", NULL);
    sl__dq_options o;
    memset(&o, 0, sizeof o);
    o.name = "cpu:0/faulty";
    o.capacity = 2;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl__device_queue *q = NULL;
        sl__error err;
        sl__err_clear(&err);
        fault_arm(cases[i].fn, cases[i].skip, cases[i].err);
        ck_assert_int_eq(sl__dq_new(&q, d, batch_specs, 2, &o, &err), cases[i].status);
        ck_assert(fault_disarm());
        ck_assert_ptr_null(q);
        ck_assert_msg(strstr(err.msg, cases[i].call) != NULL, "%s", err.msg);
        ck_assert_msg(strstr(err.msg, "cpu:0/faulty") != NULL, "%s", err.msg);
        ck_assert_uint_eq(bytes_allocated(d), 0);
    }
    sl_device_free(d);
}
END_TEST

Suite *make_devices_suite(void)
{
    Suite *s = suite_create("devices");
    TCase *tc = tu_tcase("device", 30);
    tcase_add_test(tc, test_device_names);
    tcase_add_test(tc, test_device_options);
    tcase_add_test(tc, test_cpu_copy_round_trip);
    tcase_add_test(tc, test_async_copy_falls_back);
    tcase_add_test(tc, test_sim_copy_takes_modeled_time);
    tcase_add_test(tc, test_run_counts_two_interactions);
    tcase_add_test(tc, test_external_tensor);
    suite_add_tcase(s, tc);
    tc = tu_tcase("queue", 60);
    tcase_add_test(tc, test_queue_slots_are_device_tensors);
    tcase_add_test(tc, test_queue_order_of_batches_and_markers);
    tcase_add_test(tc, test_queue_capacity_bounds_the_producer);
    tcase_add_test(tc, test_queue_max_bytes_caps_the_slots);
    tcase_add_test(tc, test_queue_grows_and_limits);
    tcase_add_test(tc, test_tuner_deepens_a_queue_that_serialises);
    tcase_add_test(tc, test_tuner_leaves_a_queue_that_keeps_up);
    tcase_add_test(tc, test_queue_getnext_timeout_says_why);
    tcase_add_test(tc, test_queue_error_marker_is_sticky);
    tcase_add_test(tc, test_queue_allocates_nothing_per_batch);
    tcase_add_test(tc, test_queue_init_failures);
    suite_add_tcase(s, tc);
    tc = tu_tcase("concurrency", 60);
    tcase_add_test(tc, test_queue_interrupt_wakes_getnext);
    tcase_add_test(tc, test_queue_close_wakes_acquire_and_drains);
    tcase_add_test(tc, test_queue_close_wakes_getnext);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(make_devices_suite);
}
