/* run_suite.c: see run_suite.h. */
#include "tests/run_suite.h"

#include <stdio.h>
#include <stdlib.h>

#include "testutil.h"

int tu_run_suite(Suite *(*make)(void))
{
    SRunner *sr = srunner_create(make());
    int failed;
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

int tu_run_suite_unless_tsan(Suite *(*make)(void), const char *why)
{
    if (TU_THREAD_SANITIZED) {
        printf("SKIP: %s\n", why);
        return 77;
    }
    return tu_run_suite(make);
}
