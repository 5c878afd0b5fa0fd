/* fault.h: makes one of the pthread init functions fail once, so tests can
 * walk the library's failure paths. Only the test programs built with
 * tests/fault.c and linked with $(FAULT_WRAP) (Makefile.am: -Wl,--wrap
 * for each function) route those calls through here; every call passes
 * straight through unless a failure is armed. */
#ifndef SLUICE_TESTS_FAULT_H
#define SLUICE_TESTS_FAULT_H

typedef enum fault_fn {
    FAULT_MUTEX_INIT,        /* pthread_mutex_init */
    FAULT_COND_INIT,         /* pthread_cond_init */
    FAULT_CONDATTR_INIT,     /* pthread_condattr_init */
    FAULT_CONDATTR_SETCLOCK  /* pthread_condattr_setclock */
} fault_fn;

/* The call of fn that follows `skip` successful ones returns err (EAGAIN,
 * ENOMEM, ...); the calls after it succeed again. */
void fault_arm(fault_fn fn, int skip, int err);
/* Disarms; returns 1 when the armed failure was injected, 0 when not. */
int fault_disarm(void);

#endif
