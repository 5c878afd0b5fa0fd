/* cpu.c: the cpu device. Its memory is its own 64-byte aligned blocks
 * (never the pipeline's pool buffers), its copies are memcpy, and a step
 * runs right where it is launched, so every optional entry is NULL. */
#include "devices/cpu_program.h"
#include "devices/device_impl.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int cpu_alloc(sl_device *d, size_t size, void **mem)
{
    size_t rounded;
    (void)d;
    *mem = NULL;
    if (size > SIZE_MAX - 63)
        return SL_ENOMEM;
    /* aligned_alloc wants a multiple of the alignment, and a zero-byte
     * column still needs a distinct block. */
    rounded = size == 0 ? 64 : (size + 63) & ~(size_t)63;
    *mem = aligned_alloc(64, rounded);
    return *mem ? SL_OK : SL_ENOMEM;
}

static void cpu_free(sl_device *d, void *mem)
{
    (void)d;
    free(mem);
}

static int cpu_copy(sl_device *d, void *dst, const void *src, size_t n)
{
    (void)d;
    if (n > 0)
        memcpy(dst, src, n);
    return SL_OK;
}

const sl__device_iface sl__cpu_device_iface = {
    .kind = "cpu",
    .reads_host = 1,
    .init = NULL,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy_in = cpu_copy,
    .copy_out = cpu_copy,
    .copy_in_async = NULL,
    .event_wait = NULL,
    .synchronize = NULL,
    .launch = NULL,
    .result = NULL,
    .destroy = NULL,
    .program_load = sl__cpu_program_load,
    .program_run = sl__cpu_program_run,
    .program_free = sl__cpu_program_free,
};
