/* float_env.c: the thread's flush-to-zero settings (float_env.h). */
#include "core/float_env.h"

#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE__))
#include <xmmintrin.h>

/* MXCSR: bits 0-5 are sticky exception flags, which are not settings. */
#define FLAG_BITS 0x3Fu
#define FTZ_BIT (1u << 15)
#define DAZ_BIT (1u << 6)

unsigned sl__float_env_get(void)
{
    return _mm_getcsr() & ~FLAG_BITS;
}

void sl__float_env_set(unsigned word)
{
    _mm_setcsr((_mm_getcsr() & FLAG_BITS) | (word & ~FLAG_BITS));
}

unsigned sl__float_env_flushing(unsigned word, int flush)
{
    return flush ? word | FTZ_BIT | DAZ_BIT : word & ~(FTZ_BIT | DAZ_BIT);
}

int sl__float_env_flushes(unsigned word)
{
    return (word & (FTZ_BIT | DAZ_BIT)) == (FTZ_BIT | DAZ_BIT);
}

int sl__float_env_supported(void)
{
    return 1;
}

#elif defined(__aarch64__)
#include <stdint.h>

/* FPCR.FZ flushes both subnormal inputs and results; the FPCR holds no
 * exception flags (those are in the FPSR). */
#define FZ_BIT (1u << 24)

unsigned sl__float_env_get(void)
{
    uint64_t fpcr;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(fpcr));
    return (unsigned)fpcr;
}

void sl__float_env_set(unsigned word)
{
    uint64_t fpcr = word;
    __asm__ __volatile__("msr fpcr, %0" : : "r"(fpcr));
}

unsigned sl__float_env_flushing(unsigned word, int flush)
{
    return flush ? word | FZ_BIT : word & ~FZ_BIT;
}

int sl__float_env_flushes(unsigned word)
{
    return (word & FZ_BIT) != 0;
}

int sl__float_env_supported(void)
{
    return 1;
}

#else

unsigned sl__float_env_get(void)
{
    return 0;
}

void sl__float_env_set(unsigned word)
{
    (void)word;
}

unsigned sl__float_env_flushing(unsigned word, int flush)
{
    (void)flush;
    return word;
}

int sl__float_env_flushes(unsigned word)
{
    (void)word;
    return 0;
}

int sl__float_env_supported(void)
{
    return 0;
}

#endif
