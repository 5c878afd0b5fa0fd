/* cpu.h: the CPUs this process may run on, and how far sluice's kernels
 * may use their vector units. The level is found
 * once per process: what the CPU (and the OS, which must save the wider
 * registers) supports, capped by the environment variable SLUICE_CPU
 * ("avx512", "avx2" or "generic") so that a machine can run, test and
 * time the paths a lesser one would take. An unknown value caps nothing
 * (sluice's command line refuses it before it gets here). */
#ifndef SLUICE_CORE_CPU_H
#define SLUICE_CORE_CPU_H

#include <stddef.h>
#include <stdint.h>

typedef enum sl__cpu_level {
    SL__CPU_GENERIC = 0, /* no AVX: plain C (what the compiler vectorizes) and
                          * the SSE paths every x86-64 machine runs */
    SL__CPU_AVX2,        /* AVX2 and FMA */
    SL__CPU_AVX512       /* AVX-512F */
} sl__cpu_level;

/* The level the kernels use. */
sl__cpu_level sl__cpu_level_get(void);
/* "generic", "avx2", "avx512". */
const char *sl__cpu_level_name(sl__cpu_level level);
/* Parses a SLUICE_CPU value; -1 when it names no level. */
int sl__cpu_level_parse(const char *s);

/* The CPUs this process may run on (its affinity mask), at least 1; asked
 * anew at each call, since the mask can change (taskset). The public
 * sl_cpus_available (sluice/thread_budget.h) is this. */
int sl__cpus_available(void);

/* CPU sets as bit masks of CPUs 0..63 (bit i: CPU i): the cores a device
 * reserves for its compute and the ones the host keeps. CPUs past 63 are
 * never reserved. */
/* The calling thread's CPUs (its affinity) as a mask; 0 if unknown. */
uint64_t sl__thread_cpu_mask(void);
/* Restricts the calling thread to mask's CPUs (threads it starts later
 * inherit them). SL_OK, or SL_EINVAL when the system refuses (err names
 * the mask). */
int sl__thread_set_cpu_mask(uint64_t mask);
/* The number of CPUs in mask. */
int sl__cpu_mask_count(uint64_t mask);
/* "1", "2-3", "0,2" into buf. */
void sl__cpu_mask_str(uint64_t mask, char *buf, size_t len);

#endif
