#!/usr/bin/env bash
# run.sh: runs the fuzz harnesses of a fuzz build, one after the other (one
# fuzzing process at a time; FUZZ_JOBS=N runs up to N at once, each a
# single-threaded process, so give at most one a core), each over a copy
# of its seed corpus in a
# temporary folder (so neither the source tree nor the build dir gets the
# inputs the fuzzer adds) with TMPDIR pointing into it (the harnesses' own
# files go there too; all of it is removed afterwards).
#
#   tests/fuzz/run.sh BUILDDIR [NAME...] [-- LIBFUZZER_FLAGS...]
#
# NAME is idx, decode, checkpoint or cli_options (default: all four);
# LIBFUZZER_FLAGS end the run, e.g. -max_total_time=30 (what .ci/run gives)
# or -runs=10000000. Each harness's output goes to BUILDDIR/tests/fuzz/
# fuzz_NAME.log, of which its closing lines are printed. A crash, sanitizer
# report, leak, timeout or out-of-memory fails the run: its input is kept in
# BUILDDIR/tests/fuzz/artifacts/, the log's end is printed, and the script
# goes on with the next harness and exits 1 at the end.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
if [ $# -lt 1 ] || [ ! -d "$1" ]; then
    echo "usage: $0 BUILDDIR [NAME...] [-- LIBFUZZER_FLAGS...]" >&2
    exit 2
fi
build=$(cd "$1" && pwd)
shift
names=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    names+=("$1")
    shift
done
[ $# -gt 0 ] && shift # the "--"
flags=("$@")
[ ${#names[@]} -gt 0 ] || names=(idx decode checkpoint cli_options)

# The largest input each harness is given: a few KiB of file, a short
# command line.
max_len() {
    case $1 in
    cli_options) echo 512 ;;
    *) echo 4096 ;;
    esac
}
# Harness-specific flags: the CLI prints its messages (stderr) and --help
# (stdout), which only slow the fuzzer down (libFuzzer's own output and
# sanitizer reports still come through). Dictionaries give the words the
# fuzzer cannot see compared: option names (inside glibc's getopt) and
# JPEG markers (inside libjpeg, which is not instrumented).
extra_flags() {
    case $1 in
    cli_options) echo "-close_fd_mask=3 -dict=$here/cli_options.dict" ;;
    decode) echo "-dict=$here/decode.dict" ;;
    esac
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# run_one NAME: fuzzes one harness, prints its report, returns 1 when it
# failed.
run_one() {
    local name=$1 bin seeds log work t0 rc done_line runs_line f failed=0
    bin="$build/tests/fuzz/fuzz_$name"
    seeds="$here/corpus/$name"
    log="$build/tests/fuzz/fuzz_$name.log"
    if [ ! -x "$bin" ] || [ ! -d "$seeds" ]; then
        echo "fuzz: $name: no harness $bin (make fuzz) or no seeds $seeds" >&2
        return 1
    fi
    work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-fuzz-$name.XXXXXX")
    mkdir "$work/corpus" "$work/artifacts" "$work/tmp"
    cp "$seeds"/* "$work/corpus/"
    t0=$SECONDS
    rc=0
    # shellcheck disable=SC2046 # extra_flags is a list of words
    (cd "$work" && TMPDIR="$work/tmp" "$bin" corpus -max_len="$(max_len "$name")" \
        -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$work/artifacts/" $(extra_flags "$name") "${flags[@]}") \
        >"$log" 2>&1 || rc=$?
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE ' "$log" | tail -n 1 || true)
    runs_line=$(grep -E '^Done [0-9]+ runs in ' "$log" | tail -n 1 || true)
    echo "fuzz: $name: exit $rc after $((SECONDS - t0)) s: ${runs_line:-no 'Done' line}"
    echo "fuzz: $name: ${done_line:-no DONE line}"
    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb):' "$log" |
        sed "s/^/fuzz: $name: /" || true
    if [ "$rc" -ne 0 ] || [ -z "$runs_line" ] || [ -n "$(ls -A "$work/artifacts")" ]; then
        failed=1
        echo "fuzz: $name FAILED; the end of $log:"
        tail -n 60 "$log"
        for f in "$work/artifacts"/*; do
            [ -e "$f" ] || continue
            cp "$f" "$build/tests/fuzz/artifacts/${name}-$(basename "$f")"
            echo "fuzz: $name: input kept as $build/tests/fuzz/artifacts/${name}-$(basename "$f")"
        done
    fi
    rm -rf "$work"
    return "$failed"
}

jobs=${FUZZ_JOBS:-1}
failed=0
mkdir -p "$build/tests/fuzz/artifacts"
if [ "$jobs" -le 1 ]; then
    for name in "${names[@]}"; do
        run_one "$name" || failed=1
    done
else
    # up to $jobs at once, started in NAME order; each report is printed
    # whole once its harness is done
    pids=()
    reaped=0
    reap() { # waits for the oldest running harness and prints its report
        local report="$build/tests/fuzz/fuzz_${names[$reaped]}.report"
        wait "${pids[$reaped]}" || failed=1
        cat "$report"
        rm -f "$report"
        reaped=$((reaped + 1))
    }
    for i in "${!names[@]}"; do
        [ $((i - reaped)) -lt "$jobs" ] || reap
        run_one "${names[$i]}" >"$build/tests/fuzz/fuzz_${names[$i]}.report" 2>&1 &
        pids+=($!)
    done
    while [ "$reaped" -lt "${#names[@]}" ]; do
        reap
    done
fi
exit "$failed"
