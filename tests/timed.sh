#!/bin/sh
# timed.sh: make check's LOG_COMPILER. Runs one test (its arguments) and
# ends the test's log with its wall time, so CI can say where the time
# went. The test's exit status passes through (77 skip, 99 hard error).
# A backstop limit (SL_TEST_TIMEOUT seconds, 1800 by default) ends a test
# program that outlives it: each Check test and each pytest test has its
# own, shorter limit that prints the stacks (tests/time_limit.h,
# run_pytest.sh); this one also covers what has none (readme_example).
limit=${SL_TEST_TIMEOUT:-1800}
start=$(date +%s%N)
timeout -k 10 "$limit" "$@"
rc=$?
end=$(date +%s%N)
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "timed.sh: time limit: $* still running after $limit s"
    rc=1
fi
ms=$(((end - start) / 1000000))
printf 'wall time: %d.%03d s\n' $((ms / 1000)) $((ms % 1000))
exit $rc
