#!/bin/sh
# mpi_test.sh: training across Open MPI ranks, end to end: `mpirun -np N
# sluice train` on small MNIST and JPEG folders it makes (tests/cli_data.sh).
# What it checks: 2 and 3 ranks train and print once; two runs give the same
# bits; ranks whose shards hold different numbers of batches still finish;
# a checkpoint resumes with the same ranks and is refused with others; a
# pipeline error and a GetNext timeout on rank 1 stop every rank with its
# message; rank 1 killed with SIGKILL ends the job. Ranks that must be
# different (their data, a gate) are given their own command lines with
# mpirun's "A : B" form. Slowness is a gate, never a guess: rank 1 reads a
# FIFO among its JPEGs, which blocks it until this script says.
#
# Skips (exit 77) only when sluice was built without MPI; MPI built but
# no mpirun is an error. Prints "N passed, M failed".

set -u

top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
SLUICE=$top_builddir/sluice

if [ ! -x "$SLUICE" ]; then
    echo "mpi_test.sh: $SLUICE not found (run make first)" >&2
    exit 99
fi
if "$SLUICE" --version | grep -q '^mpi: none'; then
    echo "SKIP: $("$SLUICE" --version | sed -n 's/^mpi: none, //p')"
    exit 77
fi
if ! command -v mpirun >/dev/null 2>&1; then
    echo "mpi_test.sh: sluice is built with MPI but mpirun is not on PATH" \
        "(apt-get install -y openmpi-bin)" >&2
    exit 99
fi

# Under a sanitizer (the program links its runtime) the checks that repeat
# what the plain build checks are left out, and say so: a rank there costs
# tenfold, and CI runs this three times.
full=1
if ldd "$SLUICE" 2>/dev/null | grep -q 'lib[at]san\.so' ||
    ldd "$top_builddir/.libs/libsluice.so" 2>/dev/null | grep -q 'lib[at]san\.so'; then
    full=0
    echo "mpi_test.sh: a sanitizer build: left out the checks of bits and counts that the" \
        "plain build runs (2 ranks without sinking, 2 devices a rank, 3 ranks, unequal" \
        "shards without sinking, bench dist, resume, the C API probe with sinking)"
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-mpi.XXXXXX") || exit 99
trap 'rm -rf "$TMP"' 0
trap 'exit 1' INT TERM HUP

# Under AddressSanitizer, leak checking is off here: Open MPI 4.1 leaves
# allocations at exit in plugins it has unloaded, which LeakSanitizer can
# neither name nor be told to ignore. Memory errors are still caught, and
# the rest of the suite checks the library's own leaks.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export ASAN_OPTIONS

# Under ThreadSanitizer, reports from inside Open MPI (its own locks and
# progress threads, not built with TSan) are not the project's.
{
    for kind in race deadlock mutex signal thread; do
        for lib in libmpi.so libopen-pal.so libopen-rte.so libpmix.so libevent libhwloc mca_; do
            echo "$kind:$lib"
        done
    done
    # (each must name one library, never unloaded before exit)
    for lib in libmpi.so libopen-pal.so libopen-rte.so libevent_core \
        libevent_pthreads libhwloc.so; do
        echo "called_from_lib:$lib"
    done
} >"$TMP/tsan.supp"
TSAN_OPTIONS="suppressions=$TMP/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
export TSAN_OPTIONS

passed=0
failed=0
LIMIT=${SL_CLI_TIMEOUT:-300}
MPIRUN="mpirun --allow-run-as-root --oversubscribe"

pass() {
    passed=$((passed + 1))
    echo "PASS: $1"
}

fail() {
    failed=$((failed + 1))
    echo "FAIL: $1 (exit status $rc)"
    sed -n '1,30s/^/    stdout: /p' "$TMP/out"
    sed -n '1,30s/^/    stderr: /p' "$TMP/err"
}

# mpi ARGS...: mpirun ARGS, with a time limit, keeping its output.
mpi() {
    # shellcheck disable=SC2086 # MPIRUN is words
    timeout -k 10 "$LIMIT" $MPIRUN "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        echo "mpi_test.sh: time limit: 'mpirun $*' still running after $LIMIT s" >>"$TMP/err"
    fi
}

# expect NAME STATUS [stdout|stderr PATTERN]...; STATUS "nonzero" for any
# failure but the time limit's.
expect() {
    name=$1
    want=$2
    shift 2
    if [ "$want" = nonzero ] && { [ "$rc" -eq 0 ] || grep -q '^mpi_test.sh: time limit' "$TMP/err"; }; then
        fail "$name"
        return
    fi
    if [ "$want" != nonzero ] && [ "$rc" -ne "$want" ]; then
        fail "$name"
        return
    fi
    while [ $# -ge 2 ]; do
        if ! grep -q -e "$2" "$TMP/$( [ "$1" = stdout ] && echo out || echo err )"; then
            echo "    ($1 lacks: $2)"
            fail "$name"
            return
        fi
        shift 2
    done
    pass "$name"
}

# shellcheck source=tests/cli_data.sh
. "$top_srcdir/tests/cli_data.sh"
make_pattern
M320=$TMP/m320 # 320 train + 20 test: 160 a rank at 2 ranks
mnist_dir "$M320" 320 20 0
M160=$TMP/m160 # at 2 ranks, shard 0: 80 samples, 5 batches of 16
mnist_dir "$M160" 160 20 0
M60=$TMP/m60 # shard 1: 30 samples, 1 batch
mnist_dir "$M60" 60 20 0

# jpeg_folder DIR N: two classes of N tiny JPEGs each.
jpeg_folder() {
    mkdir -p "$1/cat" "$1/dog"
    i=0
    while [ $i -lt "$2" ]; do
        tiny_jpeg >"$1/cat/$i.jpg"
        tiny_jpeg >"$1/dog/$i.jpg"
        i=$((i + 1))
    done
}
GOOD=$TMP/good # 64 JPEGs: 2 batches of 16 a rank at 2 ranks
jpeg_folder "$GOOD" 32
BROKEN=$TMP/broken # the same, one file not a JPEG
jpeg_folder "$BROKEN" 32
echo 'not a JPEG' >"$BROKEN/dog/7.jpg"

# The gate (tests/gate_open.c): the rank started with gated opens its 40th
# JPEG (in its second epoch) only once the test has opened $FIFO for
# writing and closed it again.
GATE_LIB=$top_builddir/tests/.libs/gate_open.so
if [ ! -f "$GATE_LIB" ]; then
    echo "mpi_test.sh: $GATE_LIB not found (make check builds it)" >&2
    exit 99
fi
FIFO=$TMP/gate
mkfifo "$FIFO"
# $GATED PROGRAM ARGS...: runs it with the gate preloaded (a sanitizer's
# runtime must not insist on coming first: the gate does not use it).
GATED=$TMP/gated
cat >"$GATED" <<GATE
#!/bin/sh
LD_PRELOAD="$GATE_LIB\${LD_PRELOAD:+ \$LD_PRELOAD}" SL_GATE_PREFIX="$GOOD/" \\
SL_GATE_FIFO="$FIFO" SL_GATE_AFTER=40 \\
ASAN_OPTIONS="verify_asan_link_order=0\${ASAN_OPTIONS:+:\$ASAN_OPTIONS}" \\
exec "\$@"
GATE
chmod +x "$GATED"

COMMON="--batch 16 --seed 3 --log-every 5"

# --- training across ranks ------------------------------------------------

# shellcheck disable=SC2086
mpi -np 2 "$SLUICE" train --data "$M320" --epochs 2 $COMMON --save "$TMP/a.ckpt" \
    --ckpt-dir "$TMP/ck" --check-replicas
expect "2 ranks train" 0 \
    stdout '^distributed: 2 ranks (Open MPI' \
    stdout 'global batch 32 (batch 16 x 1 device x 2 ranks)' \
    stdout '^epoch: 2 step: 10, loss is ' \
    stdout '^eval: accuracy'
if [ "$(grep -c '^train: lenet' "$TMP/out")" = 1 ]; then
    pass "only rank 0 prints"
else
    rc=1
    fail "only rank 0 prints"
fi
if [ -f "$TMP/ck/lenet-2_10.ckpt" ]; then
    pass "rank 0 writes the checkpoints"
else
    rc=1
    fail "rank 0 writes the checkpoints"
fi

if [ "$full" = 1 ]; then
# shellcheck disable=SC2086
mpi -np 2 "$SLUICE" train --data "$M320" --epochs 2 $COMMON --save "$TMP/b.ckpt" --no-sink
expect "2 ranks train without sinking" 0 stdout '^epoch: 2 step: 10, loss is '
if cmp -s "$TMP/a.ckpt" "$TMP/b.ckpt"; then
    pass "same ranks, same seed: the same bits (sink and non-sink)"
else
    rc=1
    fail "same ranks, same seed: the same bits (sink and non-sink)"
fi

# Two devices in each rank: they sum first, in device order, then the ranks.
for mode in --sink --no-sink; do
    # shellcheck disable=SC2086
    mpi -np 2 "$SLUICE" train --data "$M320" --epochs 1 $COMMON --no-eval $mode \
        --device cpu:0,cpu:1 --save "$TMP/dev$mode.ckpt"
    expect "2 ranks x 2 devices ($mode)" 0 \
        stdout 'global batch 64 (batch 16 x 2 devices x 2 ranks)' stdout '^trained 5 steps'
done
if cmp -s "$TMP/dev--sink.ckpt" "$TMP/dev--no-sink.ckpt"; then
    pass "2 ranks x 2 devices: the same bits sinking or not"
else
    rc=1
    fail "2 ranks x 2 devices: the same bits sinking or not"
fi

# 320 samples over 3 ranks: shards of 107 (the first samples repeated to
# pad them), 6 batches of 16 each.
# shellcheck disable=SC2086
mpi -np 3 "$SLUICE" train --data "$M320" --epochs 1 $COMMON --no-eval
expect "3 ranks, shards padded to equal" 0 \
    stdout '^distributed: 3 ranks' stdout ' 6 steps per epoch' \
    stdout '^trained 6 steps'

fi
# Shards of different sizes (rank 0 5 batches, rank 1 1): each epoch's
# global steps after the first cannot be filled, so both ranks drop them.
for mode in --sink $([ "$full" = 1 ] && echo --no-sink); do
    # shellcheck disable=SC2086
    mpi -np 1 "$SLUICE" train --data "$M160" --epochs 2 $COMMON --no-eval $mode : \
        -np 1 "$SLUICE" train --data "$M60" --epochs 2 $COMMON --no-eval $mode
    expect "ranks with different batch counts finish ($mode)" 0 \
        stdout '^trained 2 steps'
done

if [ "$full" = 1 ]; then
# bench dist starts mpirun itself, beside the one-process reference.
timeout -k 10 "$LIMIT" "$SLUICE" bench dist --data "$M320" --batch 32 --steps 5 --repeats 2 \
    --json >"$TMP/out" 2>"$TMP/err"
rc=$?
expect "bench dist --json" 0 \
    stdout '^{"ranks": 2, "global_batch": 32, .*"ranks_runs": \[[0-9.]*, [0-9.]*\], .*"one_process_runs": \[[0-9.]*, [0-9.]*\], "ratio_one_process": [0-9.]*, .*"allreduce_bytes": 246744}$'

# --- resuming ---------------------------------------------------------------

# shellcheck disable=SC2086
mpi -np 2 "$SLUICE" train --data "$M320" --epochs 3 $COMMON --no-eval \
    --resume "$TMP/ck/lenet-1_10.ckpt"
expect "resume with the same ranks" 0 stdout '^resuming .* at global step 10' \
    stdout '^epoch: 3 step: 10, loss is '
# shellcheck disable=SC2086
mpi -np 3 "$SLUICE" train --data "$M320" --epochs 3 $COMMON --no-eval \
    --resume "$TMP/ck/lenet-1_10.ckpt"
expect "resume with other ranks refused" nonzero \
    stderr 'trained on 2 ranks and this one on 3.*mpirun -np 2'
timeout -k 10 "$LIMIT" "$SLUICE" train --data "$M320" --epochs 3 --batch 16 --seed 3 \
    --no-eval --resume "$TMP/ck/lenet-1_10.ckpt" >"$TMP/out" 2>"$TMP/err"
rc=$?
expect "resume in one process refused" nonzero stderr 'trained on 2 ranks and this one on 1'

fi

# shellcheck disable=SC2086
mpi -np 2 "$SLUICE" train --data "$M320" --epochs 1 $COMMON --no-eval --device cpu:0,cpu:1 \
    --sim-network 100,5
expect "--sim-network under mpirun refused" nonzero stderr 'under mpirun the ranks. network is real'

# --- failures ----------------------------------------------------------------

# shellcheck disable=SC2086
mpi -np 1 "$SLUICE" train --data "$GOOD" --epochs 3 $COMMON --no-eval : \
    -np 1 "$SLUICE" train --data "$BROKEN" --epochs 3 $COMMON --no-eval
# (Every rank prints its message and exits; mpirun may end a rank before
# it has printed, once another has exited, so one of the lines suffices.)
expect "a pipeline error on rank 1 stops every rank" nonzero \
    stderr '^sluice: train: rank [01]: .*dog/7\.jpg'
# ... told through the communicator, not by MPI_Abort's ending the job
if grep -q 'MPI_Abort' "$TMP/err"; then
    echo "    (stderr has MPI_Abort: the failure did not travel with the data)"
    rc=1
    fail "a pipeline error travels to the other ranks"
else
    pass "a pipeline error travels to the other ranks"
fi

# Rank 1 waits at the gate, which nobody opens: its GetNext (sinking) or
# its wait for data (not sinking) gives up after 2 s; mpirun ends it once
# rank 0 has left. Rank 0 waits long: only rank 1 may give up.
# shellcheck disable=SC2086
mpi -np 1 "$SLUICE" train --data "$GOOD" --epochs 3 $COMMON --no-eval --getnext-timeout 300 : \
    -np 1 "$GATED" "$SLUICE" train --data "$GOOD" --epochs 3 $COMMON --no-eval \
    --getnext-timeout 2
expect "a GetNext timeout on rank 1 stops every rank" nonzero \
    stderr '^sluice: train: rank 0: .*rank 1: .*GetNext'
# shellcheck disable=SC2086
mpi -np 1 "$SLUICE" train --data "$GOOD" --epochs 3 $COMMON --no-eval --no-sink : \
    -np 1 "$GATED" "$SLUICE" train --data "$GOOD" --epochs 3 $COMMON --no-eval --no-sink \
    --data-timeout 2
expect "a data timeout on rank 1 stops every rank (no sink)" nonzero \
    stderr '^sluice: train: rank 0: .*rank 1: .*no row within 2000 ms'

# Different seeds: the ranks would start apart; refused at the start.
# shellcheck disable=SC2086
mpi -np 1 "$SLUICE" train --data "$M320" --epochs 1 --batch 16 --seed 1 --no-eval : \
    -np 1 "$SLUICE" train --data "$M320" --epochs 1 --batch 16 --seed 2 --no-eval
expect "ranks with different seeds refused" nonzero \
    stderr 'rank [01]: the ranks start from different parameters'

# From the C API (tests/mpi_probe.c): rank 0's callback stops training at
# step 3, or fails there; the stop ends every rank cleanly at the same
# step with the same parameters, the failure names rank 0 on rank 1.
PROBE=$top_builddir/tests/mpi_probe
for sink in 0 $([ "$full" = 1 ] && echo 1); do
    mpi -np 2 "$PROBE" "$M320" stop $sink
    if [ "$rc" -eq 0 ] && [ "$(grep -c 'rc 0 steps 3 hash' "$TMP/out")" = 2 ] &&
        [ "$(sed -n 's/.*hash //p' "$TMP/out" | sort -u | wc -l)" = 1 ]; then
        pass "a stop on rank 0 stops every rank at the same step (sink $sink)"
    else
        fail "a stop on rank 0 stops every rank at the same step (sink $sink)"
    fi
    mpi -np 2 "$PROBE" "$M320" fail $sink
    expect "a callback failing on rank 0 stops every rank (sink $sink)" nonzero \
        stdout '^rank 1: error: .*rank 0: the probe.s callback failed on purpose'
done

# Rank 1 reaches the gate (the opener's open returns then), is killed with
# SIGKILL there, mid-training; mpirun ends the job and names it.
rm -f "$TMP/rank1.pid"
# shellcheck disable=SC2086
timeout -k 10 "$LIMIT" $MPIRUN -np 1 "$SLUICE" train --data "$GOOD" --epochs 3 $COMMON \
    --no-eval : -np 1 sh -c 'echo $$ >"$0"; exec "$@"' "$TMP/rank1.pid" "$GATED" "$SLUICE" \
    train --data "$GOOD" --epochs 3 $COMMON --no-eval >"$TMP/out" 2>"$TMP/err" &
job=$!
timeout -k 10 "$LIMIT" sh -c 'exec 3>"$1"; kill -9 "$(cat "$2")"' sh "$FIFO" "$TMP/rank1.pid"
wait "$job"
rc=$?
if [ "$rc" -eq 124 ]; then
    echo "mpi_test.sh: time limit: the job with rank 1 killed still ran after $LIMIT s" >>"$TMP/err"
fi
expect "rank 1 killed with SIGKILL: the job ends and names it" nonzero \
    stderr 'rank 1 .*signal 9'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
