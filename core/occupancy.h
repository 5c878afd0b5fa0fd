/* occupancy.h: the mean fill level of a queue over time, for stage
 * reports. The owner calls sl__occupancy_note with the level in force
 * just before it changes (under the queue's lock), and reads the mean
 * with the level in force now. */
#ifndef SLUICE_CORE_OCCUPANCY_H
#define SLUICE_CORE_OCCUPANCY_H

#include <stddef.h>

typedef struct sl__occupancy {
    double since_ms;   /* when counting began */
    double changed_ms; /* the last note */
    double level_ms;   /* the integral of the level up to changed_ms */
} sl__occupancy;

static inline void sl__occupancy_start(sl__occupancy *o, double now_ms)
{
    o->since_ms = o->changed_ms = now_ms;
    o->level_ms = 0;
}

/* level held from the last note until now_ms. */
static inline void sl__occupancy_note(sl__occupancy *o, size_t level, double now_ms)
{
    if (now_ms > o->changed_ms) {
        o->level_ms += (double)level * (now_ms - o->changed_ms);
        o->changed_ms = now_ms;
    }
}

/* The mean level since the start, level being held now. */
static inline double sl__occupancy_mean(sl__occupancy *o, size_t level, double now_ms)
{
    sl__occupancy_note(o, level, now_ms);
    return o->changed_ms > o->since_ms ? o->level_ms / (o->changed_ms - o->since_ms)
                                       : (double)level;
}

/* The integral of the level (level x ms) from the start until now_ms,
 * level being held now: for a thread count, thread-milliseconds. */
static inline double sl__occupancy_total(sl__occupancy *o, size_t level, double now_ms)
{
    sl__occupancy_note(o, level, now_ms);
    return o->level_ms;
}

#endif
