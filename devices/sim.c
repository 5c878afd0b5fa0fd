/* sim.c: the sim device, a model of an accelerator across a bus. Its
 * memory is host memory in blocks of its own, as the cpu device's; what it
 * adds is time: each copy sleeps latency + bytes / bandwidth, and each
 * host<->device interaction (a launch, a result coming back) sleeps the
 * launch latency. The step itself runs on the CPU, on cores the sim
 * reserves for it (sl_device_options.sim_cores): a model's executor runs
 * there while the host's threads keep to the others, as an accelerator
 * computes on its own silicon beside the host. The sleeps are
 * sl__device_model_delay, which counts them in modeled_ms. */
#include "devices/cpu_program.h"
#include "devices/device_impl.h"

#include <math.h>

#include "core/cpu.h"

#define SIM_MAX_LATENCY_NS 1000000000LL /* 1 s: more is a mistake, not a bus */

/* The cores sim:N reserves (sl_device_options.sim_cores): k of the
 * process's CPUs, below those of sim:0..N-1, counting down from the last. */
static int pick_cores(sl_device *d, sl__error *err)
{
    uint64_t cpus = sl__thread_cpu_mask(), mask = 0;
    int64_t k = d->opts.sim_cores, skip;
    int have = sl__cpu_mask_count(cpus);
    if (k < -1 || k > 63)
        return sl__errf(err, SL_EINVAL,
                        "device \"%s\": sl_device_options.sim_cores %lld: give -1 (one core when "
                        "the host keeps one), 0 (none) or a count of cores",
                        d->name, (long long)k);
    if (k == -1)
        k = have >= 2 + d->index ? 1 : 0;
    if (k == 0)
        return SL_OK;
    if ((int64_t)d->index * k + k >= have)
        return sl__errf(err, SL_EINVAL,
                        "device \"%s\": %lld reserved core%s for it%s leave the host none of "
                        "this process's %d CPUs: give sim_cores 0 to share them",
                        d->name, (long long)k, k == 1 ? "" : "s",
                        d->index > 0 ? " and each sim below it" : "", have);
    skip = (int64_t)d->index * k;
    for (int i = 63; i >= 0 && k > 0; i--) {
        if (!(cpus & (UINT64_C(1) << i)))
            continue;
        if (skip > 0) {
            skip--;
            continue;
        }
        mask |= UINT64_C(1) << i;
        k--;
    }
    d->core_mask = mask;
    return SL_OK;
}

static int sim_init(sl_device *d, sl__error *err)
{
    const sl_device_options *o = &d->opts;
    if (!isfinite(o->sim_bandwidth_gbps) || !(o->sim_bandwidth_gbps > 0))
        return sl__errf(err, SL_EINVAL,
                        "device \"%s\": sl_device_options.sim_bandwidth_gbps must be a finite "
                        "number > 0 (got %g)",
                        d->name, o->sim_bandwidth_gbps);
    if (o->sim_copy_latency_ns < 0 || o->sim_copy_latency_ns > SIM_MAX_LATENCY_NS)
        return sl__errf(err, SL_EINVAL,
                        "device \"%s\": sl_device_options.sim_copy_latency_ns must be from 0 "
                        "to %lld (1 s) (got %lld)",
                        d->name, SIM_MAX_LATENCY_NS, (long long)o->sim_copy_latency_ns);
    if (o->sim_launch_latency_ns < 0 || o->sim_launch_latency_ns > SIM_MAX_LATENCY_NS)
        return sl__errf(err, SL_EINVAL,
                        "device \"%s\": sl_device_options.sim_launch_latency_ns must be from 0 "
                        "to %lld (1 s) (got %lld)",
                        d->name, SIM_MAX_LATENCY_NS, (long long)o->sim_launch_latency_ns);
    return pick_cores(d, err);
}

/* The modeled time of moving n bytes across the bus, in ns. Bandwidth in
 * GB/s is bytes per ns. A tiny bandwidth could give more ns than an
 * int64_t holds: the delay is capped (at about a century) rather than
 * overflowing the conversion. */
static int64_t sim_copy_ns(const sl_device *d, size_t n)
{
    double ns = (double)n / d->opts.sim_bandwidth_gbps;
    if (ns > 4e18)
        ns = 4e18;
    return d->opts.sim_copy_latency_ns + (int64_t)ns;
}

/* The memory is the cpu device's kind of memory, allocated for the sim. */
static int sim_alloc(sl_device *d, size_t size, void **mem)
{
    return sl__cpu_device_iface.alloc(d, size, mem);
}

static void sim_free(sl_device *d, void *mem)
{
    sl__cpu_device_iface.free(d, mem);
}

static int sim_copy_in(sl_device *d, void *dst, const void *src, size_t n)
{
    sl__device_model_delay(d, SL__LANE_COPY, sim_copy_ns(d, n));
    return sl__cpu_device_iface.copy_in(d, dst, src, n);
}

static int sim_copy_out(sl_device *d, void *dst, const void *src, size_t n)
{
    sl__device_model_delay(d, SL__LANE_COPY, sim_copy_ns(d, n));
    return sl__cpu_device_iface.copy_out(d, dst, src, n);
}

static int sim_launch(sl_device *d, int (*fn)(void *arg), void *arg)
{
    sl__device_model_delay(d, SL__LANE_LAUNCH, d->opts.sim_launch_latency_ns);
    return fn(arg);
}

static void sim_result(sl_device *d)
{
    sl__device_model_delay(d, SL__LANE_LAUNCH, d->opts.sim_launch_latency_ns);
}

const sl__device_iface sl__sim_device_iface = {
    .kind = "sim",
    .reads_host = 0,
    .init = sim_init,
    .alloc = sim_alloc,
    .free = sim_free,
    .copy_in = sim_copy_in,
    .copy_out = sim_copy_out,
    .copy_in_async = NULL,
    .event_wait = NULL,
    .synchronize = NULL,
    .launch = sim_launch,
    .result = sim_result,
    .destroy = NULL,
    .program_load = sl__cpu_program_load,
    .program_run = sl__cpu_program_run,
    .program_free = sl__cpu_program_free,
};
