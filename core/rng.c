/* rng.c: splitmix64 (Steele, Lea, Flood 2014), a tiny, fast, well-mixed
 * generator; each state word is a full-period stream. */
#include "core/rng.h"

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void sl__rng_seed(sl_rng *rng, uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t s = mix64(seed + 0x9e3779b97f4a7c15ULL);
    s = mix64(s ^ (a + 0x632be59bd9b4e019ULL));
    s = mix64(s ^ (b + 0x85157af5ULL));
    s = mix64(s ^ (c + 0x2545f4914f6cdd1dULL));
    rng->state = s;
}

uint64_t sl__rng_next(sl_rng *rng)
{
    rng->state += 0x9e3779b97f4a7c15ULL;
    return mix64(rng->state);
}

uint64_t sl__rng_below(sl_rng *rng, uint64_t bound)
{
    /* Lemire's multiply-shift: the high word of r * bound is uniform in
     * [0, bound) once the few low words below 2^64 mod bound are rejected;
     * the division that computes that threshold is needed only then. */
    __uint128_t m = (__uint128_t)sl__rng_next(rng) * bound;
    uint64_t low = (uint64_t)m;
    if (low < bound) {
        uint64_t threshold = (0 - bound) % bound;
        while (low < threshold) {
            m = (__uint128_t)sl__rng_next(rng) * bound;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

double sl__rng_uniform(sl_rng *rng)
{
    return (double)(sl__rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);
}
