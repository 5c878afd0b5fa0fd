/* cpu.c: the CPUs this process may use and the vector level found once
 * per process (cpu.h). */
#include "core/cpu.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "sluice/status.h"
#include "sluice/thread_budget.h" /* sl_cpus_available */
#include "sluice/version.h"

static pthread_once_t level_once = PTHREAD_ONCE_INIT;
static sl__cpu_level level; /* written once, by find_level */

static const char *const level_names[] = {
    [SL__CPU_GENERIC] = "generic",
    [SL__CPU_AVX2] = "avx2",
    [SL__CPU_AVX512] = "avx512",
};

static void find_level(void)
{
    const char *cap = getenv("SLUICE_CPU");
    int capped = cap ? sl__cpu_level_parse(cap) : -1;
    level = SL__CPU_GENERIC;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    /* libgcc's checks include the OS saving the AVX / AVX-512 registers */
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        level = SL__CPU_AVX2;
    if (level == SL__CPU_AVX2 && __builtin_cpu_supports("avx512f"))
        level = SL__CPU_AVX512;
#endif
    if (capped >= 0 && (sl__cpu_level)capped < level)
        level = (sl__cpu_level)capped;
}

sl__cpu_level sl__cpu_level_get(void)
{
    pthread_once(&level_once, find_level);
    return level;
}

const char *sl__cpu_level_name(sl__cpu_level l)
{
    return l >= SL__CPU_GENERIC && l <= SL__CPU_AVX512 ? level_names[l] : "unknown";
}

int sl__cpu_level_parse(const char *s)
{
    for (int l = SL__CPU_GENERIC; l <= SL__CPU_AVX512; l++)
        if (strcmp(s, level_names[l]) == 0)
            return l;
    return -1;
}

const char *sl_cpu_path(void)
{
    return sl__cpu_level_name(sl__cpu_level_get());
}

int sl_cpu_path_valid(const char *name)
{
    return sl__cpu_level_parse(name) >= 0;
}

int sl__cpus_available(void)
{
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
#endif
    return 1;
}

int sl_cpus_available(void)
{
    return sl__cpus_available();
}

uint64_t sl__thread_cpu_mask(void)
{
    cpu_set_t set;
    uint64_t mask = 0;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 0;
    for (int i = 0; i < 64; i++)
        if (CPU_ISSET(i, &set))
            mask |= UINT64_C(1) << i;
    return mask;
}

int sl__thread_set_cpu_mask(uint64_t mask)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int i = 0; i < 64; i++)
        if (mask & (UINT64_C(1) << i))
            CPU_SET(i, &set);
    return mask && sched_setaffinity(0, sizeof set, &set) == 0 ? SL_OK : SL_EINVAL;
}

int sl__cpu_mask_count(uint64_t mask)
{
    return __builtin_popcountll(mask);
}

void sl__cpu_mask_str(uint64_t mask, char *buf, size_t len)
{
    size_t used = 0;
    if (len == 0)
        return;
    buf[0] = '\0';
    for (int i = 0; i < 64 && used < len; i++) {
        int j = i;
        if (!(mask & (UINT64_C(1) << i)))
            continue;
        while (j + 1 < 64 && (mask & (UINT64_C(1) << (j + 1))))
            j++;
        used += (size_t)snprintf(buf + used, len - used, j > i ? "%s%d-%d" : "%s%d",
                                 used ? "," : "", i, j);
        i = j;
    }
}
