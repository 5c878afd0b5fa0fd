/* cpu.h: how far sluice's kernels may use this CPU's vector units. Found
 * once per process: what the CPU (and the OS, which must save the wider
 * registers) supports, capped by the environment variable SLUICE_CPU
 * ("avx512", "avx2" or "generic") so that a machine can run, test and
 * time the paths a lesser one would take. An unknown value caps nothing
 * (sluice's command line refuses it before it gets here). */
#ifndef SLUICE_CORE_CPU_H
#define SLUICE_CORE_CPU_H

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

#endif
