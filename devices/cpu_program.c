/* cpu_program.c: the cpu device runs a program (devices/program.h) on the
 * compute team it is given: each slot in order, its kernel cut into shares
 * (cpu_compute.c); in GRAPH mode from one arena planned at compile time, in
 * PYNATIVE mode allocating each value from a caching pool as it runs and
 * giving it back after its last reader, as an eager framework does. sim
 * computes the same way (devices/sim.c). */
#include "devices/cpu_program.h"

#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/float_env.h"
#include "core/pool.h"
#include "core/trace.h"

/* The kind's own part of a loaded program. */
typedef struct cpu_state {
    unsigned char *arena;   /* GRAPH: every TEMP value and scratch */
    size_t arena_bytes;     /* as allocated on the device */
    void *scratch;          /* PYNATIVE: nthreads x the largest slot's scratch */
    size_t scratch_bytes;
    sl_pool *pool;          /* PYNATIVE: where values come from and go back to */
    size_t held;            /* PYNATIVE: bytes allocated since the run began
                             * (a run may come in two ranges: kept across) */
} cpu_state;

unsigned char *sl__cpu_arena(const sl__device_program *dp)
{
    return ((const cpu_state *)dp->impl)->arena;
}

void *sl__cpu_scratch(const sl__device_program *dp)
{
    return ((const cpu_state *)dp->impl)->scratch;
}

void sl__cpu_program_free(sl_device *d, sl__device_program *dp)
{
    cpu_state *st;
    if (!dp)
        return;
    st = dp->impl;
    if (st) {
        if (dp->prog->mode == SL_PYNATIVE_MODE && dp->ptr && st->pool)
            for (int j = 0; j < dp->prog->nslots; j++)
                if (dp->prog->slots[j].storage == SL__STORE_TEMP && dp->ptr[j])
                    sl__pool_free(st->pool, dp->ptr[j]);
        if (st->pool)
            sl__pool_release(st->pool);
        sl__device_free(d, st->arena, st->arena_bytes);
        sl__device_free(d, st->scratch, st->scratch_bytes);
        free(st);
    }
    free(dp->ptr);
    free(dp);
}

int sl__cpu_program_load(sl_device *d, const sl__program *p, int nthreads,
                         sl__device_program **out, sl__error *err)
{
    sl__device_program *dp = calloc(1, sizeof *dp);
    cpu_state *st = calloc(1, sizeof *st);
    int rc = SL_OK;

    *out = NULL;
    if (dp)
        dp->ptr = calloc((size_t)p->nslots + 1, sizeof *dp->ptr);
    if (!dp || !st || !dp->ptr) {
        if (dp)
            free(dp->ptr);
        free(dp);
        free(st);
        return sl__errf(err, SL_ENOMEM, "device %s: out of memory loading a step",
                        sl_device_name(d));
    }
    dp->prog = p;
    dp->impl = st;
    dp->nthreads = nthreads;
    dp->bad_label = -1;
    if (p->mode == SL_GRAPH_MODE) {
        st->arena_bytes = p->arena_bytes ? p->arena_bytes : 64;
        rc = sl__device_alloc(d, st->arena_bytes, (void **)&st->arena);
        if (rc < 0)
            st->arena_bytes = 0;
        for (int j = 0; rc == SL_OK && j < p->nslots; j++)
            if (p->slots[j].storage == SL__STORE_TEMP)
                dp->ptr[j] = st->arena + p->slots[j].offset;
        if (rc < 0)
            sl__errf(err, rc, "device %s: cannot allocate the %zu-byte arena", sl_device_name(d),
                     p->arena_bytes);
    } else {
        if (p->max_scratch > 0) {
            st->scratch_bytes = p->max_scratch * (size_t)nthreads;
            rc = sl__device_alloc(d, st->scratch_bytes, &st->scratch);
            if (rc < 0) {
                st->scratch_bytes = 0;
                sl__errf(err, rc, "device %s: out of memory for scratch", sl_device_name(d));
            }
        }
        if (rc == SL_OK && !(st->pool = sl__pool_new()))
            rc = sl__errf(err, SL_ENOMEM, "device %s: out of memory", sl_device_name(d));
    }
    if (rc < 0) {
        sl__cpu_program_free(d, dp);
        return rc;
    }
    *out = dp;
    return SL_OK;
}

/* PYNATIVE: gives back the values whose last reader was slot j. */
static void release_after(sl__device_program *dp, cpu_state *st, int j)
{
    for (int k = 0; k <= j; k++) {
        const sl__slot *sl = &dp->prog->slots[k];
        if (sl->storage == SL__STORE_TEMP && sl->last_use == j && dp->ptr[k]) {
            sl__pool_free(st->pool, dp->ptr[k]);
            dp->ptr[k] = NULL;
            st->held -= st->held >= sl->bytes ? sl->bytes : st->held;
        }
    }
}

/* Runs the update group that starts at slot first as one job of the team,
 * and shares its time among the members by their parameters' sizes. */
static void run_update_group(sl__device_program *dp, sl__team *team, int first, double t0)
{
    sl__slot *slots = dp->prog->slots;
    int last = slots[first].group_last;
    double ms, units = 0.0;
    sl__team_run(team, sl__cpu_compute_updates, dp);
    ms = sl__now_ms() - t0;
    if (dp->trace)
        sl__trace_slice(dp->trace, dp->trace_names[first], t0, t0 + ms, dp->trace_epoch,
                        dp->trace_batch);
    for (int j = first; j <= last; j++)
        if (slots[j].group_first == first)
            units += (double)sl__cpu_update_numel(dp, j);
    for (int j = first; j <= last; j++)
        if (slots[j].group_first == first && units > 0.0)
            slots[j].ms += ms * (double)sl__cpu_update_numel(dp, j) / units;
}

/* Runs slots begin..end-1 on the calling thread and its team. */
static int run_slots(sl__device_program *dp, sl__team *team, int begin, int end)
{
    const sl__program *p = dp->prog;
    cpu_state *st = dp->impl;
    if (begin == 0)
        st->held = 0;
    dp->run_status = SL_OK;
    dp->bad_label = -1;
    for (int j = begin; j < end; j++) {
        sl__slot *sl = &p->slots[j];
        const sl__prog_node *nd = &p->nodes[sl->node];
        double t0;
        if (sl->storage == SL__STORE_ALIAS) {
            dp->ptr[j] = dp->ptr[sl->root];
            continue;
        }
        if (sl->storage == SL__STORE_INPUT || sl->storage == SL__STORE_PARAM ||
            sl->fused == SL__FUSED_AWAY)
            continue;
        if (p->mode == SL_PYNATIVE_MODE && sl->storage == SL__STORE_TEMP) {
            if (dp->ptr[j]) /* an output kept from the last run */
                sl__pool_free(st->pool, dp->ptr[j]);
            if (!(dp->ptr[j] = sl__pool_alloc(st->pool, sl->bytes)))
                return dp->run_status = sl__errf(&dp->err, SL_ENOMEM,
                                                 "%s '%s': out of memory (%zu bytes)",
                                                 nd->op_name, nd->name, sl->bytes);
            st->held += sl->bytes;
            if (st->held > dp->peak_bytes)
                dp->peak_bytes = st->held;
        }
        t0 = sl__now_ms();
        dp->current = j;
        if (p->mode == SL_GRAPH_MODE && sl->group_first == j) {
            run_update_group(dp, team, j, t0);
            j = sl->group_last;
            continue;
        }
        sl__team_run(team, sl__cpu_compute_node, dp);
        if (dp->trace) {
            double t1 = sl__now_ms();
            sl->ms += t1 - t0;
            sl__trace_slice(dp->trace, dp->trace_names[j], t0, t1, dp->trace_epoch,
                            dp->trace_batch);
        } else {
            sl->ms += sl__now_ms() - t0;
        }
        if (nd->op == SL__OP_SOFTMAX_XENT && dp->bad_label >= 0) {
            const int32_t *labels = dp->ptr[sl->in[1]];
            const sl__prog_node *logits = &p->nodes[p->slots[sl->in[0]].node];
            return dp->run_status = sl__errf(&dp->err, SL_EINVAL,
                                             "%s '%s': label %d of sample %ld is outside [0, %lld)",
                                             nd->op_name, nd->name,
                                             (int)labels[dp->bad_label], dp->bad_label,
                                             (long long)logits->shape[1]);
        }
        if (p->mode == SL_PYNATIVE_MODE)
            release_after(dp, st, j);
    }
    return SL_OK;
}

int sl__cpu_program_run(sl_device *d, sl__device_program *dp, sl__team *team, int begin, int end)
{
    /* The caller's thread may be the user's (a Python step): its float
     * settings are put back afterwards. The team's threads take the
     * caller's settings with each job (team.h). */
    unsigned caller = sl__float_env_get();
    int rc;
    sl__float_env_set(sl__float_env_flushing(caller, !d->opts.keep_subnormals));
    rc = run_slots(dp, team, begin, end);
    sl__float_env_set(caller);
    return rc;
}
