/* device_impl.h: the device interface, a table of functions per kind of
 * device (ggml's backend pattern), and the handle every kind shares. The
 * device queue, the transfer thread and the executor's sink loop call the
 * sl__device_* wrappers below, never a kind's functions directly: the
 * wrappers count what happened and fall back where an optional entry is
 * NULL.
 *
 * A device owns running a step, as a ggml backend owns graph_compute:
 * exec/ lowers a compiled step into a program (devices/program.h: the
 * planned slots, each with its op, attributes, shape and inputs) and hands
 * it to program_load; it binds the input and parameter slots to device
 * memory and calls program_run; it never picks a kernel. cpu and sim run
 * programs with the compute team and the kernels of ops/nn
 * (devices/cpu_program.c).
 *
 * A CUDA backend would be one new table, with nothing changed in exec/:
 *   alloc/free      cudaMalloc/cudaFree for slots, parameters and arena;
 *                   host_alloc (optional) would give pinned staging for the
 *                   channel's batches.
 *   copy_in/out     cudaMemcpy; copy_in_async cudaMemcpyAsync on a copy
 *                   stream, then cudaEventRecord into the slot's event;
 *                   event_wait cudaStreamWaitEvent on the compute stream, so
 *                   a step starts when its slot's bytes have landed while
 *                   the next slot is still copying.
 *   program_load    cudaMalloc of the arena (the program's offsets stay
 *                   valid), and the kernel each slot's op needs;
 *   program_run     launches the slots' kernels in order on the compute
 *                   stream (the team it is given is the host thread that
 *                   calls it, unused); a label check would read back one
 *                   flag at the loss;
 *   program_free    frees them.
 *   launch          runs the sink's loop with the compute stream current;
 *   synchronize     cudaStreamSynchronize before a result is read back.
 * Reading a result: the loss slot's value is read through the host pointer
 * today; a device whose memory the host cannot read (reads_host 0 and
 * memory of its own) would copy it out first.
 * cpu and sim have no streams: their copies complete before copy_in
 * returns, so they leave copy_in_async, event_wait and synchronize NULL. */
#ifndef SLUICE_DEVICES_DEVICE_IMPL_H
#define SLUICE_DEVICES_DEVICE_IMPL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "devices/program.h"
#include "sluice/device.h"

struct sl__team;

typedef struct sl__device_event sl__device_event; /* a kind's own completion marker */

typedef struct sl__device_iface {
    const char *kind;
    /* 1 when the device's steps can read host memory as it is (cpu): a
     * non-sink step then needs no copy. */
    int reads_host;
    /* Optional: checks the options the kind reads (d->opts) and sets up
     * d->impl, writing the reason for a refusal into err (SL_EINVAL).
     * NULL: the kind reads no options and has no state. */
    int (*init)(sl_device *d, sl__error *err);
    /* Required. Device memory: 64-byte aligned, size bytes. */
    int (*alloc)(sl_device *d, size_t size, void **mem);
    void (*free)(sl_device *d, void *mem);
    /* Required. Copies and returns when the bytes are on the device. */
    int (*copy_in)(sl_device *d, void *dst, const void *src, size_t n);
    /* Required. Device to host; returns when the bytes are on the host. */
    int (*copy_out)(sl_device *d, void *dst, const void *src, size_t n);
    /* Optional: starts a copy and records its completion in *ev. NULL: the
     * wrapper copies with copy_in and the event is complete. */
    int (*copy_in_async)(sl_device *d, void *dst, const void *src, size_t n,
                         sl__device_event **ev);
    /* Optional: waits until ev's copy is done (on the device, for the next
     * launch) and frees ev. */
    int (*event_wait)(sl_device *d, sl__device_event *ev);
    /* Optional: waits until all the device's work is done. */
    int (*synchronize)(sl_device *d);
    /* Optional: one host<->device interaction that runs fn(arg) as the
     * device's work (a step, or a sink of many) and returns its status.
     * NULL: the wrapper calls fn(arg). */
    int (*launch)(sl_device *d, int (*fn)(void *arg), void *arg);
    /* Optional: the end of an interaction, when its result comes back. */
    void (*result)(sl_device *d);
    /* Optional: frees the kind's own state (impl). */
    void (*destroy)(sl_device *d);
    /* Required. Loads program p (which must outlive it) for runs by up to
     * nthreads threads: its arena and scratch in the device's memory; the
     * caller then binds input and parameter slots (out->ptr). */
    int (*program_load)(sl_device *d, const sl__program *p, int nthreads,
                        sl__device_program **out, sl__error *err);
    /* Required. Runs slots [begin, end) of a loaded program with the team's
     * threads (the caller is its thread 0); the status, and on failure a
     * message naming the op and node in dp->err. */
    int (*program_run)(sl_device *d, sl__device_program *dp, struct sl__team *team, int begin,
                       int end);
    /* Required. Frees a loaded program (NULL is ignored). */
    void (*program_free)(sl_device *d, sl__device_program *dp);
} sl__device_iface;

struct sl_device {
    const sl__device_iface *iface;
    char name[32];
    int index;
    sl_device_options opts;
    void *impl;                     /* the kind's own state */
    atomic_ullong interactions, copies_in, bytes_in, bytes_allocated;
    atomic_ullong modeled_ns;       /* sim: the model's delays, summed */
    /* sim: modeled time not slept yet, per lane (copies; launches and
     * results), in ns; negative when a sleep overshot (credit). */
    _Atomic int64_t model_debt_ns[2];
    /* CPUs reserved for the device's compute (bit i: CPU i; 0: none): the
     * executor of a model on it runs there, the host elsewhere. */
    uint64_t core_mask;
};

/* The kinds there are (devices/cpu.c, devices/sim.c). */
extern const sl__device_iface sl__cpu_device_iface;
extern const sl__device_iface sl__sim_device_iface;

/* The wrappers: what the queues and exec call. */
/* Device memory of size bytes (64-byte aligned) into *mem, counted in
 * bytes_allocated; give it back with sl__device_free and the same size. */
int sl__device_alloc(sl_device *d, size_t size, void **mem);
/* NULL mem is ignored. */
void sl__device_free(sl_device *d, void *mem, size_t size);
int sl__device_copy_in(sl_device *d, void *dst, const void *src, size_t n);
/* Counts a copy in of n bytes that the caller made itself, for a device
 * whose memory the host reads and writes (reads_host). */
void sl__device_count_copy_in(sl_device *d, size_t n);
int sl__device_copy_out(sl_device *d, void *dst, const void *src, size_t n);
/* Starts a copy in; *ev is its completion (NULL: already complete, as when
 * the kind has no copy_in_async and the copy was made with copy_in). */
int sl__device_copy_in_async(sl_device *d, void *dst, const void *src, size_t n,
                             sl__device_event **ev);
/* Waits for ev's copy and frees ev; NULL ev is complete already. */
int sl__device_event_wait(sl_device *d, sl__device_event *ev);
int sl__device_synchronize(sl_device *d);
/* One interaction: launch fn(arg) on the device, then its result comes
 * back; counts two interactions (there and back). */
int sl__device_run(sl_device *d, int (*fn)(void *arg), void *arg);

/* A program on d (the table's program_* entries). */
int sl__device_program_load(sl_device *d, const sl__program *p, int nthreads,
                            sl__device_program **out, sl__error *err);
int sl__device_program_run(sl_device *d, sl__device_program *dp, struct sl__team *team, int begin,
                           int end);
void sl__device_program_free(sl_device *d, sl__device_program *dp);

/* The iface's reads_host. */
int sl__device_reads_host(const sl_device *d);
/* The CPUs reserved for the device's compute (bit i: CPU i), 0 for none. */
uint64_t sl__device_core_mask(const sl_device *d);

/* The sim's two lanes, which run at once on a real card: its copy engine
 * and its compute queue. */
enum { SL__LANE_COPY = 0, SL__LANE_LAUNCH = 1 };
/* Below this much owed time the model does not sleep yet (ns). */
#define SL__MODEL_QUANTUM_NS 200000
/* sim: makes the calling thread take ns longer, on average. A sleep on a
 * busy machine overshoots a 20 us request by 50-150 us, which would
 * inflate every short delay several times; so each lane owes the modeled
 * time and sleeps it off once it reaches a quantum, subtracting what the
 * clock says was slept (an overshoot becomes credit). Totals are exact
 * to within a quantum; single delays are not. Counts ns in modeled_ms. */
void sl__device_model_delay(sl_device *d, int lane, int64_t ns);

#endif
