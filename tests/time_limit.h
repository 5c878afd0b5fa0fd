/* time_limit.h: a time limit on every Check test. Each suite makes its test
 * cases with tu_tcase: a test still running at its case's limit prints the
 * stack of each of its threads to stderr (the test's log) and aborts, so a
 * hang fails with the place it hangs in rather than Check's bare "Test
 * timeout expired". Check's own timeout stays as a backstop, a little
 * later. Both limits scale with CK_TIMEOUT_MULTIPLIER, as Check's do. */
#ifndef SLUICE_TIME_LIMIT_H
#define SLUICE_TIME_LIMIT_H

#include <check.h>

/* A new test case (tcase_create) whose tests each get `seconds` of wall
 * time: 30, 60, 120, 240, 300, 600 or 1200 (time_limit.c has a fixture per
 * limit); another value aborts with a message. */
TCase *tu_tcase(const char *name, unsigned seconds);

#endif
