/* device.h: where a compiled step runs and where its input batches live.
 * A device is found by name, "<kind>:<index>":
 *
 *   cpu:N  this machine's CPU. Its memory is its own aligned blocks (device
 *          slots are never the pipeline's pool buffers); copies are memcpy.
 *   sim:N  a model of an accelerator on the far side of a bus, for
 *          benchmarks: its memory is separate, each host-to-device copy
 *          takes latency + bytes / bandwidth, and each host<->device
 *          interaction (launching a step or a sink, returning its result)
 *          takes the launch latency. The delays are slept (in quanta: the
 *          totals are the model's, single short delays are not); the
 *          step's arithmetic runs on the CPU's kernels, on cores reserved
 *          for the sim (sim_cores) while the host's threads use the
 *          others, as a card computes beside its host. The defaults model
 *          a PCIe 4.0 x16 card (see sl_device_options).
 *
 * Behind the handle each kind is a table of functions (devices/device_impl.h)
 * that owns memory, copies and running a compiled step (a program); the
 * queues, the transfer thread and the executor use only that table, so a
 * new kind (CUDA, say) is a new table, not a change to pipeline/ or exec/. */
#ifndef SLUICE_DEVICE_H
#define SLUICE_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_device sl_device;

/* Versioned (see sluice.h): call sl_device_options_init before setting
 * fields; new fields are only ever appended. The sim_ fields are read by
 * sim devices only. */
typedef struct sl_device_options {
    size_t size;                  /* sizeof the struct as the caller compiled it */
    double sim_bandwidth_gbps;    /* host-to-device bytes per second / 1e9
                                   * (default 25: PCIe 4.0 x16's 31.5 GB/s less
                                   * protocol overhead) */
    int64_t sim_copy_latency_ns;  /* fixed cost of each copy (default 10000: 10 us) */
    int64_t sim_launch_latency_ns; /* cost of each host<->device interaction
                                    * (default 20000: 20 us, a launch plus a
                                    * synchronisation as a GPU runtime pays) */
    /* CPUs reserved for the sim's compute, as an accelerator's own silicon:
     * its executor and compute threads run there, and while a model trains
     * on it the host's threads (pipeline, transfer, callbacks) run on the
     * other CPUs. sim:N takes the cores just below those of sim:0..N-1,
     * counting down from the process's last CPU. -1 (default): one core
     * when that leaves the host at least one, else none; 0: none (the sim
     * computes on the host's CPUs); k > 0: k cores, or an error when that
     * leaves the host none. Only CPUs 0..63 are reserved. */
    int64_t sim_cores;
    /* Appended in version 2, read by every kind. 0 (default): the device's
     * compute flushes subnormal floats to zero (results below 2^-126 in
     * magnitude become 0, and such inputs read as 0), as TensorFlow's does,
     * because some CPUs take tens of cycles over each subnormal operation:
     * a model trained to near-zero loss would slow down (measured 10x in
     * the momentum update on an Intel Xeon). 1: IEEE gradual underflow.
     * Results are the same bits either way unless a value falls below
     * 2^-126. OpenBLAS's own threads (blas_threads > 1) keep their
     * setting. */
    int32_t keep_subnormals;
    int32_t reserved0;            /* ends the struct without padding; must stay 0 */
} sl_device_options;

/* What a device has done since it was made. */
typedef struct sl_device_stats {
    uint64_t interactions;        /* host<->device interactions (launches, results) */
    uint64_t copies_in;           /* host-to-device copies */
    uint64_t bytes_in;
    uint64_t bytes_allocated;     /* device memory held now */
    double modeled_ms;            /* time the sim model slept (0 on cpu) */
} sl_device_stats;

SL_API void sl_device_options_init_sized(sl_device_options *o, size_t size);
static inline void sl_device_options_init(sl_device_options *o)
{
    sl_device_options_init_sized(o, sizeof *o);
}

/* Opens the device called name ("cpu:0", "sim:1"; o may be NULL for the
 * defaults). *out is yours (sl_device_free). An unknown kind, a bad index
 * or bad options give SL_EINVAL with a message in err (err_len bytes) that
 * lists the kinds there are. */
SL_API int sl_device_new(sl_device **out, const char *name, const sl_device_options *o,
                         char *err, size_t err_len);
/* Frees the device; free what uses it (queues, models) first. */
SL_API void sl_device_free(sl_device *d);
/* "cpu:0" */
SL_API const char *sl_device_name(const sl_device *d);
/* "cpu" or "sim" */
SL_API const char *sl_device_kind(const sl_device *d);
/* The CPUs reserved for the device's compute as a list ("1", "2-3") in buf;
 * returns how many (0: none, the device computes on the host's CPUs, and
 * buf is ""). */
SL_API int sl_device_cpus(const sl_device *d, char *buf, size_t len);
SL_API void sl_device_get_stats(const sl_device *d, sl_device_stats *out);

#ifdef __cplusplus
}
#endif
#endif
