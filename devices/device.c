/* device.c: opening a device by name, its options and stats, and the
 * sl__device_* wrappers that count what each kind's functions do and fall
 * back where an optional entry is NULL. */
#include "devices/device_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/cpu.h"
#include "core/options.h"

#define DEVICE_MAX_INDEX 63
#define NS_PER_S 1000000000L

/* The kinds there are: the registry is the library's only global, and it
 * is constant. */
static const sl__device_iface *const device_kinds[] = {
    &sl__cpu_device_iface,
    &sl__sim_device_iface,
};
#define DEVICE_NKINDS (sizeof device_kinds / sizeof device_kinds[0])

/* The end of the first version's fields: fixed forever (core/options.h).
 * The first version is the whole struct as it is now. */
static const size_t device_options_v1_size =
    offsetof(sl_device_options, sim_launch_latency_ns) + sizeof(int64_t);
/* No tail padding, so a caller's size covers only fields it knows; name the
 * last field here when one is appended. */
_Static_assert(sizeof(sl_device_options) ==
                   offsetof(sl_device_options, reserved0) + sizeof(int32_t),
               "sl_device_options: name its last field here; no tail padding "
               "(core/options.h)");

void sl_device_options_init_sized(sl_device_options *o, size_t size)
{
    sl_device_options d;
    memset(&d, 0, sizeof d);
    d.sim_bandwidth_gbps = 25.0;
    d.sim_copy_latency_ns = 10000;
    d.sim_launch_latency_ns = 20000;
    d.sim_cores = -1;
    sl__options_init(o, size, &d, sizeof d);
}

/* "cpu, sim", for messages. */
static void kinds_list(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < DEVICE_NKINDS && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
                                 device_kinds[i]->kind);
}

static const sl__device_iface *find_kind(const char *kind, size_t kind_len)
{
    for (size_t i = 0; i < DEVICE_NKINDS; i++)
        if (strlen(device_kinds[i]->kind) == kind_len &&
            memcmp(device_kinds[i]->kind, kind, kind_len) == 0)
            return device_kinds[i];
    return NULL;
}

/* Parses "<kind>:<index>" (index 0..63, decimal digits only). */
static int parse_name(const char *name, const sl__device_iface **iface, int *index,
                      sl__error *err)
{
    char kinds[64];
    const char *colon = strchr(name, ':');
    const char *p;
    int n = 0;

    kinds_list(kinds, sizeof kinds);
    if (!colon)
        return sl__errf(err, SL_EINVAL,
                        "device \"%s\": a device is named \"<kind>:<index>\" (\"cpu:0\"); "
                        "the kinds are: %s",
                        name, kinds);
    *iface = find_kind(name, (size_t)(colon - name));
    if (!*iface)
        return sl__errf(err, SL_EINVAL, "device \"%s\": unknown kind \"%.*s\"; the kinds are: %s",
                        name, (int)(colon - name), name, kinds);
    p = colon + 1;
    if (*p == '\0')
        return sl__errf(err, SL_EINVAL,
                        "device \"%s\": no index after the ':' (0..%d); the kinds are: %s", name,
                        DEVICE_MAX_INDEX, kinds);
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || n > DEVICE_MAX_INDEX)
            break;
        n = n * 10 + (*p - '0');
    }
    if (*p != '\0' || n > DEVICE_MAX_INDEX)
        return sl__errf(err, SL_EINVAL,
                        "device \"%s\": the index must be a number from 0 to %d; the kinds "
                        "are: %s",
                        name, DEVICE_MAX_INDEX, kinds);
    *index = n;
    return SL_OK;
}

static void copy_message(char *dst, size_t len, const sl__error *e)
{
    if (dst && len > 0)
        snprintf(dst, len, "%s", e->msg);
}

int sl_device_new(sl_device **out, const char *name, const sl_device_options *o, char *err,
                  size_t err_len)
{
    const sl__device_iface *iface = NULL;
    sl_device_options opts;
    sl_device *d;
    sl__error e;
    int index = 0, rc;

    *out = NULL;
    sl__err_clear(&e);
    if (!name)
        rc = sl__errf(&e, SL_EINVAL, "device: no name given (\"cpu:0\", \"sim:0\")");
    else
        rc = parse_name(name, &iface, &index, &e);
    if (rc == SL_OK) {
        sl_device_options_init(&opts);
        rc = sl__options_read(&opts, sizeof opts, device_options_v1_size, o, "sl_device_options",
                              &e);
        if (rc == SL_OK && (opts.keep_subnormals < 0 || opts.keep_subnormals > 1))
            rc = sl__errf(&e, SL_EINVAL, "keep_subnormals must be 0 or 1, got %d",
                          (int)opts.keep_subnormals);
        if (rc == SL_OK && opts.reserved0 != 0)
            rc = sl__errf(&e, SL_EINVAL, "reserved0 must be 0");
        if (rc != SL_OK)
            sl__err_prefix(&e, "device \"%s\": ", name);
    }
    if (rc != SL_OK) {
        copy_message(err, err_len, &e);
        return rc;
    }
    d = calloc(1, sizeof *d);
    if (!d) {
        sl__errf(&e, SL_ENOMEM, "device \"%s\": out of memory", name);
        copy_message(err, err_len, &e);
        return SL_ENOMEM;
    }
    d->iface = iface;
    d->index = index;
    snprintf(d->name, sizeof d->name, "%s:%d", iface->kind, index);
    d->opts = opts;
    atomic_init(&d->interactions, 0);
    atomic_init(&d->copies_in, 0);
    atomic_init(&d->bytes_in, 0);
    atomic_init(&d->bytes_allocated, 0);
    atomic_init(&d->modeled_ns, 0);
    atomic_init(&d->model_debt_ns[0], 0);
    atomic_init(&d->model_debt_ns[1], 0);
    if (iface->init && (rc = iface->init(d, &e)) != SL_OK) {
        copy_message(err, err_len, &e);
        free(d);
        return rc;
    }
    *out = d;
    return SL_OK;
}

void sl_device_free(sl_device *d)
{
    if (!d)
        return;
    if (d->iface->destroy)
        d->iface->destroy(d);
    free(d);
}

const char *sl_device_name(const sl_device *d) { return d->name; }
const char *sl_device_kind(const sl_device *d) { return d->iface->kind; }

void sl_device_get_stats(const sl_device *d, sl_device_stats *out)
{
    /* The counters are atomics so that the transfer thread and the
     * executor may count on one device without a lock; a reader sees each
     * one whole, not the set at one instant. */
    sl_device *m = (sl_device *)d;
    out->interactions = atomic_load(&m->interactions);
    out->copies_in = atomic_load(&m->copies_in);
    out->bytes_in = atomic_load(&m->bytes_in);
    out->bytes_allocated = atomic_load(&m->bytes_allocated);
    out->modeled_ms = (double)atomic_load(&m->modeled_ns) * 1e-6;
}

/* --- the wrappers ---------------------------------------------------- */

int sl__device_reads_host(const sl_device *d)
{
    return d->iface->reads_host;
}

int sl__device_program_load(sl_device *d, const sl__program *p, int nthreads,
                            sl__device_program **out, sl__error *err)
{
    return d->iface->program_load(d, p, nthreads, out, err);
}

int sl__device_program_run(sl_device *d, sl__device_program *dp, struct sl__team *team, int begin,
                           int end)
{
    return d->iface->program_run(d, dp, team, begin, end);
}

void sl__device_program_free(sl_device *d, sl__device_program *dp)
{
    if (dp)
        d->iface->program_free(d, dp);
}

uint64_t sl__device_core_mask(const sl_device *d)
{
    return d->core_mask;
}

int sl_device_cpus(const sl_device *d, char *buf, size_t len)
{
    sl__cpu_mask_str(d->core_mask, buf, len);
    return sl__cpu_mask_count(d->core_mask);
}

int sl__device_alloc(sl_device *d, size_t size, void **mem)
{
    int rc = d->iface->alloc(d, size, mem);
    if (rc == SL_OK)
        atomic_fetch_add(&d->bytes_allocated, size);
    else
        *mem = NULL;
    return rc;
}

void sl__device_free(sl_device *d, void *mem, size_t size)
{
    if (!mem)
        return;
    d->iface->free(d, mem);
    atomic_fetch_sub(&d->bytes_allocated, size);
}

void sl__device_count_copy_in(sl_device *d, size_t n)
{
    atomic_fetch_add(&d->copies_in, 1);
    atomic_fetch_add(&d->bytes_in, n);
}

int sl__device_copy_in(sl_device *d, void *dst, const void *src, size_t n)
{
    int rc = d->iface->copy_in(d, dst, src, n);
    if (rc == SL_OK)
        sl__device_count_copy_in(d, n);
    return rc;
}

int sl__device_copy_out(sl_device *d, void *dst, const void *src, size_t n)
{
    return d->iface->copy_out(d, dst, src, n);
}

int sl__device_copy_in_async(sl_device *d, void *dst, const void *src, size_t n,
                             sl__device_event **ev)
{
    int rc;
    *ev = NULL;
    if (d->iface->copy_in_async)
        rc = d->iface->copy_in_async(d, dst, src, n, ev);
    else
        rc = d->iface->copy_in(d, dst, src, n); /* done when it returns: no event */
    if (rc == SL_OK)
        sl__device_count_copy_in(d, n);
    return rc;
}

int sl__device_event_wait(sl_device *d, sl__device_event *ev)
{
    if (!ev || !d->iface->event_wait)
        return SL_OK;
    return d->iface->event_wait(d, ev);
}

int sl__device_synchronize(sl_device *d)
{
    return d->iface->synchronize ? d->iface->synchronize(d) : SL_OK;
}

int sl__device_run(sl_device *d, int (*fn)(void *arg), void *arg)
{
    int rc;
    atomic_fetch_add(&d->interactions, 1); /* there: the launch */
    rc = d->iface->launch ? d->iface->launch(d, fn, arg) : fn(arg);
    atomic_fetch_add(&d->interactions, 1); /* back: the result */
    if (d->iface->result)
        d->iface->result(d);
    return rc;
}

void sl__device_model_delay(sl_device *d, int lane, int64_t ns)
{
    struct timespec deadline, t0, t1;
    int64_t owed, slept;
    if (ns <= 0)
        return;
    atomic_fetch_add(&d->modeled_ns, (unsigned long long)ns);
    owed = atomic_fetch_add(&d->model_debt_ns[lane], ns) + ns;
    if (owed < SL__MODEL_QUANTUM_NS)
        return;
    /* An absolute deadline, so a signal that interrupts the sleep does not
     * stretch it when the sleep is resumed. */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    deadline = t0;
    deadline.tv_sec += (time_t)(owed / NS_PER_S);
    deadline.tv_nsec += (long)(owed % NS_PER_S);
    if (deadline.tv_nsec >= NS_PER_S) {
        deadline.tv_sec++;
        deadline.tv_nsec -= NS_PER_S;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, NULL) == EINTR)
        continue;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    slept = (int64_t)(t1.tv_sec - t0.tv_sec) * NS_PER_S + (t1.tv_nsec - t0.tv_nsec);
    atomic_fetch_sub(&d->model_debt_ns[lane], slept);
}
