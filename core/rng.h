/* rng.h: a small seeded generator (splitmix64). Random operators seed one per
 * sample from (seed, epoch, index, salt), so what a sample draws does not
 * depend on which worker thread ran it. */
#ifndef SLUICE_CORE_RNG_H
#define SLUICE_CORE_RNG_H

#include <stdint.h>

typedef struct sl_rng {
    uint64_t state;
} sl_rng;

/* Seeds from several words; different tuples give unrelated streams. */
void sl__rng_seed(sl_rng *rng, uint64_t seed, uint64_t a, uint64_t b, uint64_t c);
uint64_t sl__rng_next(sl_rng *rng);
/* Uniform in [0, bound) without modulo bias; bound > 0. */
uint64_t sl__rng_below(sl_rng *rng, uint64_t bound);
/* Uniform double in [0, 1). */
double sl__rng_uniform(sl_rng *rng);

#endif
