#!/bin/sh
# run_pytest.sh: `make check` runs the Python bindings' tests (pytest, with
# Debian's /usr/bin/python3) against the package staged in the build tree.
# Skips (exit 77) with the reason when configure did not build the
# bindings (--disable-python, --disable-shared, no python3-dev). In a
# sanitizer build the interpreter gets the sanitizer's runtime preloaded.
# Ends with "N passed, M failed" for CI's count.

set -u
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}

if [ "${sl_python:-no}" != yes ]; then
    echo "SKIP: Python bindings not built: ${sl_python_why:-unknown reason}"
    exit 77
fi
for module in pytest numpy; do
    if ! "$PYTHON" -c "import $module" 2>/dev/null; then
        echo "SKIP: $PYTHON cannot import $module (apt-get install -y python3-pytest python3-numpy)"
        exit 77
    fi
done
# Without the time limit a hang would wait for CI's own: a hard error, not
# a run of the tests without it.
if ! "$PYTHON" -c "import pytest_timeout" 2>/dev/null; then
    echo "ERROR: $PYTHON cannot import pytest_timeout, which gives every test its time" \
        "limit (apt-get install -y python3-pytest-timeout; the README's test command does)"
    exit 99
fi

out=$(mktemp "${TMPDIR:-/tmp}/sluice-pytest.XXXXXX") || exit 99
trap 'rm -f "$out"' 0
trap 'exit 1' INT TERM HUP

# Every test has a time limit (pytest-timeout, SL_PYTEST_TIMEOUT seconds,
# 300 by default): a test still running then fails the run with the stack
# of each thread, where a hang would wait for CI's own limit. The thread
# method works even while the main thread waits in C.

# The package staged by make; the helper programs the tests run; no
# bytecode or cache written into the (maybe read-only) source tree.
PYTHONPATH=$top_builddir/bindings/python/stage
SLUICE_TEST_MAKE_IMAGE_FOLDER=$top_builddir/bindings/python/tests/make_image_folder
SLUICE_TEST_DUMP_PIPELINE=$top_builddir/bench/dump_pipeline
SLUICE_TEST_CLI=$top_builddir/sluice
PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH SLUICE_TEST_MAKE_IMAGE_FOLDER SLUICE_TEST_DUMP_PIPELINE SLUICE_TEST_CLI \
    PYTHONDONTWRITEBYTECODE

# A sanitizer build's module needs its runtime loaded first: preload it
# into the interpreter (conftest.py passes it on to child interpreters
# only). Python frees little at exit by design, so leaks are not reported
# (the option comes last: it wins). OpenBLAS's threads (torch's, in the
# tests that compare with it) hand work over by spinning on plain memory,
# which TSan cannot see: they are not started.
# The preload goes to the interpreter alone (env), not to this shell.
preload=${sl_python_preload:-}
if [ -n "$preload" ]; then
    echo "sanitizer runtime preloaded: $preload"
    case $preload in
    *tsan*) OPENBLAS_NUM_THREADS=1; export OPENBLAS_NUM_THREADS ;;
    esac
fi
env ${preload:+"LD_PRELOAD=$preload"} \
    ${preload:+"ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"} \
    "$PYTHON" -m pytest -p no:cacheprovider -q -rs --durations=8 \
    --timeout="${SL_PYTEST_TIMEOUT:-300}" --timeout-method=thread \
    "$top_srcdir/bindings/python/tests" "$@" \
    >"$out" 2>&1
rc=$?
cat "$out"
# pytest's last line: "== 40 passed, 2 skipped in 3.10s ==" (or "... failed").
summary=$(tail -n 1 "$out")
passed=$(echo "$summary" | grep -o '[0-9][0-9]* passed' | cut -d ' ' -f 1)
failed=$(echo "$summary" | grep -o '[0-9][0-9]* failed' | cut -d ' ' -f 1)
errors=$(echo "$summary" | grep -o '[0-9][0-9]* error' | cut -d ' ' -f 1)
echo "${passed:-0} passed, $(( ${failed:-0} + ${errors:-0} )) failed"
exit $rc
