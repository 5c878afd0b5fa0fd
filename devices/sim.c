/* sim.c: the sim device, a model of an accelerator across a bus. Its
 * memory is host memory in blocks of its own, as the cpu device's; what it
 * adds is time: each copy sleeps latency + bytes / bandwidth, and each
 * host<->device interaction (a launch, a result coming back) sleeps the
 * launch latency. The step itself still runs on the CPU. The sleeps are
 * sl__device_model_delay, which counts them in modeled_ms. */
#include "devices/device_impl.h"

#include <math.h>

#define SIM_MAX_LATENCY_NS 1000000000LL /* 1 s: more is a mistake, not a bus */

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
    return SL_OK;
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
};
