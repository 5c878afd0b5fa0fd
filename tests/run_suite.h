/* run_suite.h: the body of every Check program's main. It runs the suite
 * make() builds (CK_VERBOSITY chooses Check's output, as CK_ENV does) and
 * returns the exit status make check reads. */
#ifndef SLUICE_RUN_SUITE_H
#define SLUICE_RUN_SUITE_H

#include <check.h>

/* EXIT_SUCCESS when every test passed, else EXIT_FAILURE. */
int tu_run_suite(Suite *(*make)(void));
/* As tu_run_suite, but under ThreadSanitizer prints "SKIP: why" and
 * returns 77 (automake's skip) without running anything: for suites whose
 * code runs on the calling thread only. */
int tu_run_suite_unless_tsan(Suite *(*make)(void), const char *why);

#endif
