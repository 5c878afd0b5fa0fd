/* cpu_program.h: how the cpu device (and sim, which computes as it does)
 * loads and runs a program (devices/program.h): an arena in its memory
 * (GRAPH) or a caching pool (PYNATIVE), and each slot's kernel run by the
 * compute team, every thread taking shares of it (devices/team.h). */
#ifndef SLUICE_DEVICES_CPU_PROGRAM_H
#define SLUICE_DEVICES_CPU_PROGRAM_H

#include "devices/device_impl.h"
#include "devices/program.h"
#include "devices/team.h"

/* The device table's entries (device_impl.h). */
int sl__cpu_program_load(sl_device *d, const sl__program *p, int nthreads,
                         sl__device_program **out, sl__error *err);
int sl__cpu_program_run(sl_device *d, sl__device_program *dp, sl__team *team, int begin, int end);
void sl__cpu_program_free(sl_device *d, sl__device_program *dp);

/* The loaded program's arena (GRAPH) and scratch block (PYNATIVE: one per
 * thread, sized for the largest slot's). */
unsigned char *sl__cpu_arena(const sl__device_program *dp);
void *sl__cpu_scratch(const sl__device_program *dp);

/* Runs one share of the current slot (cpu_compute.c). */
void sl__cpu_compute_node(void *dp, const sl__share *share);
/* Runs one share of the update group starting at the current slot. */
void sl__cpu_compute_updates(void *dp, const sl__share *share);
/* The elements of update slot j's parameter. */
size_t sl__cpu_update_numel(const sl__device_program *dp, int j);

#endif
