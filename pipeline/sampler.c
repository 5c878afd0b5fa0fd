/* sampler.c: epoch orders for sources (see sampler.h). */
#include "pipeline/sampler.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/options.h"
#include "core/rng.h"

/* Embedded in the source options, so it never grows (core/options.h): this
 * fails when a field is appended. */
_Static_assert(sizeof(sl_sampler_options) ==
                   offsetof(sl_sampler_options, shard_id) + sizeof(int64_t),
               "sl_sampler_options is embedded in other options and must not grow");

void sl_sampler_options_init_sized(sl_sampler_options *o, size_t size)
{
    sl_sampler_options d;
    memset(&d, 0, sizeof d);
    d.num_samples = 0;
    d.shuffle = 1;
    d.seed = 0;
    d.num_shards = 1;
    d.shard_id = 0;
    sl__options_init(o, size, &d, sizeof d);
}

int sl__source_options_read(void *dst, size_t dst_size, size_t v1_size, const void *src,
                            const char *name, size_t sampler_offset, sl__error *err)
{
    const sl_sampler_options *s = (const sl_sampler_options *)((char *)dst + sampler_offset);
    char where[96];
    int rc = sl__options_read(dst, dst_size, v1_size, src, name, err);
    if (rc != SL_OK)
        return rc;
    snprintf(where, sizeof where, "%s.sampler", name);
    return sl__options_check_embedded(s->size, sizeof *s, "sl_sampler_options", where, err);
}

int sl__sampler_check(const sl_sampler_options *o, int64_t num_rows, sl__error *err)
{
    if (o->num_shards < 1)
        return sl__errf(err, SL_EINVAL, "num_shards must be >= 1, got %lld",
                        (long long)o->num_shards);
    if (o->shard_id < 0 || o->shard_id >= o->num_shards)
        return sl__errf(err, SL_EINVAL, "shard_id must be in [0, num_shards = %lld), got %lld",
                        (long long)o->num_shards, (long long)o->shard_id);
    if (o->num_samples < 0)
        return sl__errf(err, SL_EINVAL, "num_samples must be >= 0 (0: all), got %lld",
                        (long long)o->num_samples);
    if (num_rows > 0 && o->num_shards > num_rows)
        return sl__errf(err, SL_EINVAL, "num_shards (%lld) exceeds the number of samples (%lld)",
                        (long long)o->num_shards, (long long)num_rows);
    return SL_OK;
}

int64_t sl__sampler_size(const sl_sampler_options *o, int64_t num_rows)
{
    int64_t per_shard = (num_rows + o->num_shards - 1) / o->num_shards;
    if (o->num_samples > 0 && o->num_samples < per_shard)
        return o->num_samples;
    return per_shard;
}

int sl__sampler_order(const sl_sampler_options *o, int64_t num_rows, int64_t epoch,
                      int64_t *order)
{
    int64_t n = sl__sampler_size(o, num_rows);
    int64_t *perm = NULL;
    if (o->shuffle && num_rows > 1) {
        /* One permutation of the whole dataset per epoch, the same in every
         * shard (same seed and epoch), so the shards' parts are disjoint. */
        sl_rng rng;
        perm = malloc((size_t)num_rows * sizeof *perm);
        if (!perm)
            return SL_ENOMEM;
        for (int64_t i = 0; i < num_rows; i++)
            perm[i] = i;
        sl__rng_seed(&rng, o->seed, (uint64_t)epoch, 0x5a3b1e, 0);
        for (int64_t i = num_rows - 1; i > 0; i--) {
            int64_t j = (int64_t)sl__rng_below(&rng, (uint64_t)i + 1);
            int64_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t pos = (i * o->num_shards + o->shard_id) % num_rows;
        order[i] = perm ? perm[pos] : pos;
    }
    free(perm);
    return SL_OK;
}
