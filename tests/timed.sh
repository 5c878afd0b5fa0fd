#!/bin/sh
# timed.sh: make check's LOG_COMPILER. Runs one test (its arguments) and
# ends the test's log with its wall time, so CI can say where the time
# went. The test's exit status passes through (77 skip, 99 hard error).
start=$(date +%s%N)
"$@"
rc=$?
end=$(date +%s%N)
ms=$(((end - start) / 1000000))
printf 'wall time: %d.%03d s\n' $((ms / 1000)) $((ms % 1000))
exit $rc
