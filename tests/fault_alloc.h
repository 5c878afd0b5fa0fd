/* fault_alloc.h: makes one aligned_alloc fail, for the failure paths of
 * code that allocates tensors. Only test programs built with
 * tests/fault_alloc.c and linked with -Wl,--wrap=aligned_alloc route the
 * library's calls through here. */
#ifndef SLUICE_TESTS_FAULT_ALLOC_H
#define SLUICE_TESTS_FAULT_ALLOC_H

#include <stddef.h>

/* The next aligned_alloc made by the calling thread for between min and
 * max bytes returns NULL; other threads and sizes are untouched. */
void fault_alloc_arm(size_t min, size_t max);
/* Disarms; returns 1 when the failure was injected, 0 when not. */
int fault_alloc_disarm(void);

#endif
