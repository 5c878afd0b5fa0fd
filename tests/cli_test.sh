#!/bin/sh
# cli_test.sh: end-to-end tests of the `sluice` program. `make check` runs it
# with top_builddir and top_srcdir exported; it builds small MNIST and
# ImageFolder trees with plain POSIX tools (printf, dd, gzip), runs the
# commands and checks exit codes and output. Prints "N passed, M failed".

set -u

top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
SLUICE=$top_builddir/sluice
# Under ThreadSanitizer (the program or its library links the runtime) two
# checks of output formats that repeat whole benchmark runs are left out:
# the plain and ASan builds run them, and the C suites run those threads
# under TSan.
tsan=
if ldd "$SLUICE" 2>/dev/null | grep -q 'libtsan\.so' ||
    ldd "$top_builddir/.libs/libsluice.so" 2>/dev/null | grep -q 'libtsan\.so'; then
    tsan=1
    echo "cli_test.sh: a ThreadSanitizer build: left out bench sink --repeats 2's JSON" \
        "and bench/plot.py's figures (the plain and ASan builds check them)"
fi
FASHION=/usr/share/datasets/fashion-mnist

if [ ! -x "$SLUICE" ]; then
    echo "cli_test.sh: $SLUICE not found (run make first)" >&2
    exit 99 # automake: hard error
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-cli.XXXXXX") || exit 99
trap 'rm -rf "$TMP"' 0
trap 'exit 1' INT TERM HUP

passed=0
failed=0

# --- reporting ----------------------------------------------------------

pass() {
    passed=$((passed + 1))
    echo "PASS: $1"
}

# fail NAME: also shows what the command printed, to make the log useful.
fail() {
    failed=$((failed + 1))
    echo "FAIL: $1 (exit status $rc)"
    sed -n '1,20s/^/    stdout: /p' "$TMP/out"
    sed -n '1,20s/^/    stderr: /p' "$TMP/err"
}

# Each command gets LIMIT seconds (SL_CLI_TIMEOUT, 300 by default): one still
# running then is ended (SIGTERM, then SIGKILL 10 s later) and fails its
# test with exit status 124 and a line saying so, instead of hanging make
# check. The commands that take longest train a few hundred steps.
LIMIT=${SL_CLI_TIMEOUT:-300}

# run ARGS...: runs sluice, keeping stdout, stderr and the exit status.
run() {
    timeout -k 10 "$LIMIT" "$SLUICE" "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        echo "cli_test.sh: time limit: 'sluice $*' still running after $LIMIT s" >>"$TMP/err"
    fi
}

# expect NAME STATUS [stdout PATTERN | stderr PATTERN]...: checks the last run.
expect() {
    name=$1
    want=$2
    shift 2
    if [ "$rc" -ne "$want" ]; then
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

# --- generating data ----------------------------------------------------

# byte, be32, make_pattern, idx_images, idx_labels, mnist_dir, tiny_jpeg
# shellcheck source=tests/cli_data.sh
. "$top_srcdir/tests/cli_data.sh"

make_pattern
MNIST=$TMP/mnist # gzipped, 100 train + 20 test
mnist_dir "$MNIST" 100 20 1
PLAIN=$TMP/plain # uncompressed, 30 train + 10 test
mnist_dir "$PLAIN" 30 10 0
TRAIN_ONLY=$TMP/train-only
mnist_dir "$TRAIN_ONLY" 50 10 1
rm "$TRAIN_ONLY"/t10k-*
TEST_ONLY=$TMP/test-only
mnist_dir "$TEST_ONLY" 10 20 1
rm "$TEST_ONLY"/train-*

# Truncated images: the header promises 30 images, the file holds 20.
TRUNC=$TMP/truncated
mnist_dir "$TRUNC" 30 10 0
dd if="$PLAIN/train-images-idx3-ubyte" of="$TRUNC/train-images-idx3-ubyte" \
    bs=784 count=20 2>/dev/null
# The same, gzipped: only reading the pixels can find it.
TRUNC_GZ=$TMP/truncated-gz
mnist_dir "$TRUNC_GZ" 30 10 0
dd if="$PLAIN/train-images-idx3-ubyte" of="$TRUNC_GZ/train-images-idx3-ubyte" \
    bs=784 count=20 2>/dev/null
gzip -n "$TRUNC_GZ"/*-ubyte

# ImageFolder: cat (3 images) and dog (2 images).
IMAGES=$TMP/images
mkdir -p "$IMAGES/cat" "$IMAGES/dog"
for f in a b c; do tiny_jpeg >"$IMAGES/cat/$f.jpg"; done
for f in a b; do tiny_jpeg >"$IMAGES/dog/$f.jpg"; done
BAD_IMAGES=$TMP/bad-images
mkdir -p "$BAD_IMAGES/cat" "$BAD_IMAGES/dog"
tiny_jpeg >"$BAD_IMAGES/cat/a.jpg"
echo 'this is not a JPEG' >"$BAD_IMAGES/dog/broken.jpg"
# Ten good JPEGs and two broken ones among them (samples 2 and 9).
SOME_BAD=$TMP/some-bad
mkdir -p "$SOME_BAD/cat" "$SOME_BAD/dog"
for f in a b c d e; do
    tiny_jpeg >"$SOME_BAD/cat/$f.jpg"
    tiny_jpeg >"$SOME_BAD/dog/$f.jpg"
done
echo 'not a JPEG' >"$SOME_BAD/cat/bb.jpg"
echo 'nor this' >"$SOME_BAD/dog/cc.jpg"
# A class folder whose name is not UTF-8 (Latin-1 "café").
LATIN1=$TMP/latin1
mkdir -p "$LATIN1/caf$(byte 233)"
tiny_jpeg >"$LATIN1/caf$(byte 233)/a.jpg"
mkdir -p "$TMP/empty"

# --- the program ----------------------------------------------------------

run --version
expect "--version" 0 stdout '^sluice 0\.1\.0$' stdout '^cpu path: \(avx512\|avx2\|generic\)$' \
    stdout '^openblas core: [A-Za-z]'
# An OpenBLAS core below the CPU's vector path is warned of, naming the
# variable that fixes it (OPENBLAS_CORETYPE chooses the core it pretends).
if grep -q '^cpu path: avx' "$TMP/out"; then
    OPENBLAS_CORETYPE=Prescott run --version
    expect "--version with OpenBLAS on Prescott" 0 stdout '^openblas core: Prescott$' \
        stderr 'warning: OpenBLAS chose its Prescott core, below this CPU' \
        stderr 'OPENBLAS_CORETYPE=\(SkylakeX\|Haswell\)$'
fi
# SLUICE_CPU caps the vector path (to run a lesser machine's), and a name
# it does not know is refused before any command runs.
SLUICE_CPU=generic run --version
expect "SLUICE_CPU=generic --version" 0 stdout '^cpu path: generic$'
SLUICE_CPU=avx2 run --version
expect "SLUICE_CPU=avx2 --version" 0 stdout '^cpu path: \(avx2\|generic\)$'
SLUICE_CPU=avx9 run --version
expect "SLUICE_CPU=avx9" 2 stderr "SLUICE_CPU is 'avx9': give avx512, avx2 or generic"
SLUICE_CPU=generic run bench train --steps 20 --repeats 1 --e2e-steps 2
expect "bench train under SLUICE_CPU=generic" 0 stdout '^cpu path: generic (capped by SLUICE_CPU)$'
run --help
expect "--help" 0 stdout '^Usage: sluice' stdout 'inspect' stdout 'bench'
run
expect "no command" 2 stderr 'Usage: sluice'
run frobnicate
expect "unknown command" 2 stderr "sluice: unknown command 'frobnicate'" stderr 'Usage: sluice'
run --frobnicate
expect "unknown global option" 2 stderr "unknown option '--frobnicate'"
run help inspect
expect "help inspect" 0 stdout '^Usage: sluice inspect'
run help bench pipeline
expect "help bench pipeline" 0 stdout '^Usage: sluice bench pipeline'
run help --help
expect "help --help" 0 stdout '^Usage: sluice'
run help nothing
expect "help unknown command" 2 stderr "sluice: help: unknown command 'nothing'"
run inspect --help
expect "inspect --help" 0 stdout '^Usage: sluice inspect'
run bench --help
expect "bench --help" 0 stdout '^Usage: sluice bench'
run bench pipeline --help
expect "bench pipeline --help" 0 stdout '^Usage: sluice bench pipeline'
run bench
expect "bench without benchmark" 2 stderr 'sluice: bench: '
run bench nothing
expect "bench unknown benchmark" 2 stderr "unknown benchmark 'nothing'"

# --- inspect ------------------------------------------------------------

run inspect
expect "inspect without folder" 2 stderr '^sluice: inspect: '
run inspect "$MNIST" --bogus
expect "inspect unknown option" 2 stderr "^sluice: inspect: unknown option '--bogus'"
run inspect "$MNIST" --usage
expect "inspect option without argument" 2 stderr "needs an argument"
run inspect "$MNIST" --verify=yes
expect "inspect option with an unwanted argument" 2 \
    stderr "^sluice: inspect: option '--verify' takes no argument"
run inspect ""
expect "inspect empty folder name" 1 stderr '^sluice: inspect: the folder name is empty$'
run inspect "$TMP/empty"
expect "inspect empty folder" 1 stderr 'no class folders' \
    stderr 'not an MNIST folder either (no train-images-idx3-ubyte'
run inspect "$MNIST" --usage validation
expect "inspect bad usage" 2 stderr "expected train, test or all"
run inspect "$TMP/does-not-exist"
expect "inspect missing folder" 1 stderr "^sluice: inspect: .*does-not-exist"

run inspect "$MNIST"
expect "inspect mnist" 0 stdout '^kind: *mnist' stdout '^usage: *all' \
    stdout '^samples: *120 (train 100, test 20)' \
    stdout 'image *uint8 *(28, 28, 1)' stdout 'label *uint32 *()'
run inspect "$MNIST" --usage test
expect "inspect mnist --usage test" 0 stdout '^samples: *20$'
run inspect "$TRAIN_ONLY"
expect "inspect picks the split present" 0 stdout '^usage: *train' stdout '^samples: *50$'
run inspect "$MNIST" --verify
expect "inspect --verify mnist" 0 stdout '^verified 120 samples, no problems$' \
    stdout '^ *7 *12$'
run inspect "$MNIST" --verify --json
expect "inspect --verify --json" 0 stdout '^{"dataset": ' \
    stdout '"samples": 120, "splits": {"train": 100, "test": 20}' \
    stdout '"verify": {"ok": true, "samples": 120, "error": null}' \
    stdout '"label_counts": {"0": 12, "1": 12, "2": 12, "3": 12, "4": 12, "5": 12, "6": 12, "7": 12, "8": 12, "9": 12}'
if [ "$(wc -l <"$TMP/out")" -ne 1 ]; then
    fail "inspect --json prints one line"
else
    pass "inspect --json prints one line"
fi
run inspect "$PLAIN" --verify --usage train
expect "inspect --verify uncompressed" 0 stdout '^verified 30 samples, no problems$'
run inspect "$TRUNC" --verify
expect "inspect truncated images" 1 stderr '^sluice: inspect: .*train-images-idx3-ubyte'
run inspect "$TRUNC_GZ" --verify
expect "inspect truncated gzipped images" 1 \
    stderr '^sluice: inspect: .*train-images-idx3-ubyte'

run inspect "$IMAGES"
expect "inspect image folder" 0 stdout '^kind: *image_folder' stdout '^samples: *5$' \
    stdout '^classes: *2' stdout '^ *0 *3 *cat$' stdout '^ *1 *2 *dog$' \
    stdout 'image *uint8 *(?, ?, 3)'
run inspect "$IMAGES" --verify
expect "inspect --verify image folder" 0 stdout '^verified 5 samples, no problems$'
run inspect "$IMAGES" --json
expect "inspect --json image folder" 0 \
    stdout '"classes": \[{"name": "cat", "label": 0, "count": 3}, {"name": "dog", "label": 1, "count": 2}\]'
run inspect "$BAD_IMAGES" --verify
expect "inspect --verify corrupt JPEG" 1 stderr '^sluice: inspect: .*broken\.jpg'
run inspect "$IMAGES" --usage train
expect "inspect --usage on image folder" 2 stderr 'MNIST folders only'
run inspect "$LATIN1" --json
expect "inspect --json non-UTF-8 class name" 0 stdout '"name": "caf\\ufffd"'
if command -v python3 >/dev/null 2>&1 &&
    python3 -c 'import json,sys; json.loads(sys.stdin.buffer.read().decode("utf-8"))' \
        <"$TMP/out" 2>/dev/null; then
    pass "inspect --json non-UTF-8 class name is valid JSON"
else
    fail "inspect --json non-UTF-8 class name is valid JSON"
fi
if [ -w /dev/full ]; then
    timeout -k 10 "$LIMIT" "$SLUICE" inspect "$IMAGES" >/dev/full 2>"$TMP/err"
    rc=$?
    expect "inspect to a full disk" 1 stderr '^sluice: cannot write the output: '
fi

if [ -d "$FASHION" ]; then
    run inspect "$FASHION"
    expect "inspect fashion-mnist" 0 stdout '^samples: *70000 (train 60000, test 10000)'
fi

# --- bench pipeline -----------------------------------------------------

run bench pipeline --data "$MNIST" --json --repeats 1 --workers 1,2
expect "bench pipeline --json" 0 stdout '^{"dataset": ' stdout '"kind": "mnist"' \
    stdout '"runs": \[{"workers": 1,' stdout '{"workers": 2,' \
    stdout '"batches": 3, "images": 96' stdout '"consumer_wakeups_per_epoch": [0-9]' \
    stdout '"peak_rss_bytes": [0-9]' stdout '"pool": {"in_use_bytes": [0-9]' \
    stdout '"peak_in_use_bytes": [1-9]' stdout '"idle_cap_bytes": 8388608,' \
    stdout '"system_allocs": [1-9]'
if [ "$(wc -l <"$TMP/out")" -ne 1 ]; then
    fail "bench --json prints one line"
else
    pass "bench --json prints one line"
fi
if command -v python3 >/dev/null 2>&1 && python3 -c 'import json' 2>/dev/null; then
    if python3 -c 'import json,sys; json.load(sys.stdin)' <"$TMP/out" 2>/dev/null; then
        pass "bench --json is valid JSON"
    else
        fail "bench --json is valid JSON"
    fi
fi
run bench pipeline --data "$MNIST" --repeats 2 --workers 2
expect "bench pipeline text" 0 stdout '^pipeline' stdout 'images/s' stdout '^load_ms:' \
    stdout 'wakeups/epoch' stdout '^peak RSS: ' stdout '^buffer pool (MB' \
    stdout '^workers peak in use   in use     idle idle cap system allocs' \
    stdout '^stages (workers=2, the last run' stdout '^stage  *threads  *rows  *rows/s  *busy% waiting% blocked%  *queue$' \
    stdout '^consumer  *1  *' stdout '^verdict: ' \
    stdout '^      2  *[0-9.]* *[0-9.]* *[0-9.]*  *8\.0  *[1-9]'
if [ -s "$TMP/err" ]; then
    fail "bench pipeline: no progress lines when stderr is not a terminal"
else
    pass "bench pipeline: no progress lines when stderr is not a terminal"
fi
run bench pipeline --data "$MNIST" --json --repeats 1 --workers 1 --usage all \
    --resize 16x20 --rescale 1/255 --rescale 2,-1 --normalize 0.5:0.25 --crop 16x16,2 \
    --flip 0.5 --hwc2chw --label-int32 --shuffle 0 --batch 25 --keep-remainder \
    --no-source-shuffle --seed 7 --epochs 2
expect "bench pipeline with every op" 0 stdout '"batches": 10, "images": 240'
run bench pipeline --data "$MNIST" --json --repeats 1 --workers 1 --pool-idle-mb 0
expect "bench pipeline --pool-idle-mb 0" 0 stdout '"idle_bytes": 0, ' \
    stdout '"idle_cap_bytes": 0, ' stdout '"system_frees": [1-9]'
run bench pipeline --data "$MNIST" --json --repeats 1 --workers 1 --pool-idle-mb 3
expect "bench pipeline --pool-idle-mb 3" 0 stdout '"idle_cap_bytes": 3145728, '
run bench pipeline --data "$MNIST" --json --repeats 1 --workers 1 --num-samples 64 --batch 0
expect "bench pipeline without batch" 0 stdout '"batches": 64, "images": 64'
run bench pipeline --data "$IMAGES" --json --repeats 1 --workers 1 --batch 2
expect "bench pipeline image folder" 0 stdout '"kind": "image_folder"' \
    stdout '"batches": 2, "images": 4'
run bench pipeline --data "$IMAGES" --json --repeats 1 --workers 2 --batch 2 \
    --random-resized-crop 6x5,0.5,1,0.5,2 --flip 0.5 --vflip 0.5 \
    --color-adjust 0.4,0.4,0.4,0.1 --normalize 1,2,3:4,5,6 --hwc2chw
expect "bench pipeline ImageNet train ops" 0 stdout '"batches": 2, "images": 4' \
    stdout 'random_resized_crop, random_horizontal_flip, random_vertical_flip, random_color_adjust, normalize'
run bench pipeline --data "$IMAGES" --json --repeats 1 --workers 1 --batch 2 \
    --shorter-side 10 --center-crop 7x9
expect "bench pipeline ImageNet eval ops" 0 stdout '"batches": 2, "images": 4' \
    stdout 'resize_shorter_side, center_crop'
run bench pipeline --data "$IMAGES" --json --repeats 1 --workers 2 --batch 2 --preset imagenet-train
expect "bench pipeline --preset imagenet-train" 0 stdout '"batches": 2, "images": 4' \
    stdout 'random_resized_crop, random_horizontal_flip, normalize, hwc2chw'
run bench pipeline --data "$IMAGES" --json --repeats 1 --workers 1 --batch 2 --preset imagenet-eval
expect "bench pipeline --preset imagenet-eval" 0 stdout '"batches": 2, "images": 4' \
    stdout 'resize_shorter_side, center_crop, normalize, hwc2chw'
run bench pipeline --data "$MNIST" --repeats 1 --preset imagenet-eval
expect "bench pipeline --preset on MNIST" 2 stderr '^sluice: bench: --preset imagenet-eval is for an ImageFolder'
run bench pipeline --data "$BAD_IMAGES" --repeats 1 --workers 1 --batch 1
expect "bench pipeline corrupt JPEG" 1 stderr '^sluice: bench: .*broken\.jpg'
# The images are 8x8: a limit of 63 pixels refuses the first one read, naming
# it, the limit and the option; 64 lets them all through.
run bench pipeline --data "$IMAGES" --repeats 1 --workers 1 --batch 1 --decode-max-pixels 63
expect "bench pipeline --decode-max-pixels below the images" 1 \
    stderr '^sluice: bench: .*/[a-z]*\.jpg.*8x8 = 64 pixels, more than max_pixels = 63.*--decode-max-pixels'
run bench pipeline --data "$IMAGES" --json --repeats 1 --workers 2 --batch 1 --decode-max-pixels 64
expect "bench pipeline --decode-max-pixels at the images" 0 stdout '"batches": 5, "images": 5'
run help bench pipeline
expect "help bench pipeline: --decode-max-pixels" 0 stdout '--decode-max-pixels N'

# Bad samples: skipped or replaced, each reported once (in the first timed
# run), every batch kept; the cap turns too many into an error.
run bench pipeline --data "$SOME_BAD" --json --repeats 2 --workers 1,2 --batch 2 \
    --error-samples skip --max-bad-samples 20%
expect "bench pipeline --error-samples skip" 0 stdout '"batches": 6, "images": 12' \
    stdout '"samples_skipped": 2, "samples_replaced": 0, "pool": {.*{"workers": 2' \
    stderr '^sluice: bench: skipped sample 2 (.*/cat/bb\.jpg): .*not a JPEG' \
    stderr '^sluice: bench: skipped sample 9 (.*/dog/cc\.jpg): '
if [ "$(wc -l <"$TMP/err")" -eq 2 ]; then
    pass "bench pipeline reports each bad sample once"
else
    fail "bench pipeline reports each bad sample once"
fi
run bench pipeline --data "$SOME_BAD" --repeats 1 --workers 2 --batch 2 --error-samples replace \
    --max-bad-samples 2
expect "bench pipeline --error-samples replace" 0 \
    stdout '^bad samples: 0 skipped, 2 replaced in each run (--error-samples replace)' \
    stderr '^sluice: bench: replaced sample 2 (.*/cat/bb\.jpg) by sample [0-9]*: '
run bench pipeline --data "$SOME_BAD" --repeats 1 --workers 2 --batch 2 --error-samples replace \
    --max-bad-samples 1
expect "bench pipeline --max-bad-samples exceeded" 1 \
    stderr '^sluice: bench: too many bad samples: 2 in epoch 0, more than the 1 allowed.*dog/cc\.jpg'
run bench pipeline --data "$SOME_BAD" --repeats 1 --workers 2 --batch 2
expect "bench pipeline bad samples raise by default" 1 stderr '^sluice: bench: .*bb\.jpg'
run help bench pipeline
expect "help bench pipeline: --error-samples" 0 stdout '--error-samples raise|skip|replace' \
    stdout '--max-bad-samples N|P%'

for bad in "--workers 0" "--workers 1,,2" "--workers x" "--repeats 0" "--repeats 3x" \
    "--epochs -1" "--rescale 1/0" "--normalize 1,2:3" "--normalize 1:0" "--flip 2" \
    "--vflip -0.5" \
    "--resize 0" "--crop 8x" "--batch -1" "--seed 99999999999999999999" "extra" \
    "--shuffle 1" "--batch 16777217" "--decode-max-pixels 0" \
    "--decode-max-pixels 4294967297" "--pool-idle-mb -1" "--pool-idle-mb 1048577" \
    "--pool-idle-mb 1M" "--error-samples drop" "--max-bad-samples 1" \
    "--error-samples skip --max-bad-samples -1" "--error-samples skip --max-bad-samples 101%" \
    "--error-samples skip --max-bad-samples x%" "--random-resized-crop 8,0.9,0.1" \
    "--random-resized-crop 8,1" "--random-resized-crop 8,0.1,1,0,1" "--center-crop 0" \
    "--shorter-side 0" "--color-adjust 1,1,1" "--color-adjust 1,1,1,0.6" \
    "--color-adjust -1,0,0,0" "--preset imagenet" "--preset imagenet-train --flip 0.5"; do
    # shellcheck disable=SC2086 # word splitting of $bad is the point
    run bench pipeline --data "$MNIST" $bad
    expect "bench pipeline $bad" 2 stderr '^sluice: bench: '
done
run bench pipeline --data "$MNIST" --json=1
expect "bench pipeline --json=1" 2 stderr "^sluice: bench: option '--json' takes no argument"
# An unknown short option inside a cluster, after a long option: the
# message names the short one (it once named '--json').
run bench pipeline --data "$MNIST" --json -xy
expect "bench pipeline --json -xy" 2 stderr "^sluice: bench: unknown option '-x'"
run bench pipeline --data "$MNIST" --re 3
expect "bench pipeline ambiguous option" 2 \
    stderr "^sluice: bench: option '--re' is ambiguous: --repeats, --resize, --rescale"
run bench pipeline --data "$MNIST" --resize 5x
expect "bench pipeline --resize 5x" 2 stderr "^sluice: bench: --resize: expected H or HxW, got '5x'"
run bench pipeline --data "$TMP/does-not-exist"
expect "bench pipeline missing folder" 1 stderr "^sluice: bench: .*does-not-exist"
run bench pipeline --data "$MNIST" --repeats 1 --workers 1 --num-samples 10
expect "bench pipeline epoch shorter than a batch" 1 \
    stderr '^sluice: bench: an epoch has 10 samples, fewer than one batch of 32.*--keep-remainder'
run bench pipeline --data "$TEST_ONLY" --repeats 1 --workers 1
expect "bench pipeline test split only" 1 stderr 'holds no train split.*--usage test'
run bench pipeline --data "$TMP/empty"
expect "bench pipeline empty folder" 1 stderr 'not an MNIST folder either'

# --- train, eval, bench train ---------------------------------------------

run help train
expect "help train" 0 stdout '^Usage: sluice train'
run eval --help
expect "eval --help" 0 stdout '^Usage: sluice eval'
run bench train --help
expect "bench train --help" 0 stdout '^Usage: sluice bench train' stdout 'compute_graph_samples_per_s'

# 100 train samples: 3 steps of 32 per epoch; 20 test samples, one short batch.
run train --data "$MNIST" --epochs 2 --log-every 1 --no-sink --save "$TMP/m.ckpt"
expect "train --no-sink" 0 stdout '^epoch: 1 step: 1, loss is [0-9.]*$' \
    stdout '^epoch: 2 step: 3, loss is [0-9.]*$' stdout '^trained 6 steps' \
    stdout '^saved ' stdout '^eval: accuracy [0-9.]* ([0-9]*/20), loss '
grep '^epoch: \|^eval: ' "$TMP/out" >"$TMP/graph.lines"
run train --data "$MNIST" --epochs 2 --log-every 1 --no-sink --mode pynative --threads 1
grep '^epoch: \|^eval: ' "$TMP/out" >"$TMP/pynative.lines"
if [ "$rc" -eq 0 ] && cmp -s "$TMP/graph.lines" "$TMP/pynative.lines"; then
    pass "train: PYNATIVE on 1 thread prints GRAPH's numbers on 2"
else
    fail "train: PYNATIVE on 1 thread prints GRAPH's numbers on 2"
fi
# The same on the AVX2 path (or the plain C one where the CPU lacks AVX2),
# whose conv kernels differ from AVX-512's: GRAPH on 2 threads and
# PYNATIVE on 1 end with the same checkpoint, byte for byte.
SLUICE_CPU=avx2 run train --data "$MNIST" --epochs 2 --no-sink --no-eval --save "$TMP/avx2-graph.ckpt"
graph_rc=$rc
SLUICE_CPU=avx2 run train --data "$MNIST" --epochs 2 --no-sink --no-eval --mode pynative \
    --threads 1 --save "$TMP/avx2-pynative.ckpt"
if [ "$graph_rc" -eq 0 ] && [ "$rc" -eq 0 ] &&
    cmp -s "$TMP/avx2-graph.ckpt" "$TMP/avx2-pynative.ckpt"; then
    pass "train under SLUICE_CPU=avx2: PYNATIVE on 1 thread ends where GRAPH on 2 does"
else
    fail "train under SLUICE_CPU=avx2: PYNATIVE on 1 thread ends where GRAPH on 2 does"
fi
# Sink mode (the default): one loss line per sink, each epoch's last step's
# loss, the same numbers as the host-fed run's.
grep '^epoch: [12] step: 3,\|^eval: ' "$TMP/graph.lines" >"$TMP/nonsink.ends"
run train --data "$MNIST" --epochs 2
expect "train (sink)" 0 stdout '^data sink on cpu:0: sink_size -1' \
    stdout '^epoch: 1 step: 3, loss is [0-9.]*$' stdout '^trained 6 steps' \
    stdout 'transfer [01]'
grep '^epoch: \|^eval: ' "$TMP/out" >"$TMP/sink.lines"
if [ "$rc" -eq 0 ] && cmp -s "$TMP/nonsink.ends" "$TMP/sink.lines"; then
    pass "train: sink mode prints the host-fed run's epoch-end losses and accuracy"
else
    fail "train: sink mode prints the host-fed run's epoch-end losses and accuracy"
fi
# One pipeline worker when the compute threads fill every CPU (they do by
# default up to 4 CPUs); with a CPU to spare, the budget's 2.
if [ "$(nproc)" -le 4 ]; then
    expect "train: 1 worker beside a team that fills the CPUs" 0 stdout 'pipeline 1 worker per map'
fi
if [ "$(nproc)" -ge 2 ]; then
    run train --data "$MNIST" --epochs 1 --threads 1
    expect "train --threads 1: 2 workers beside it" 0 stdout 'compute 1 thread, .*pipeline 2 workers per map'
fi
# The pool's cache changes where buffers come from, never the numbers.
run train --data "$MNIST" --epochs 2 --pool-idle-mb 0
grep '^epoch: \|^eval: ' "$TMP/out" >"$TMP/nocache.lines"
if [ "$rc" -eq 0 ] && cmp -s "$TMP/sink.lines" "$TMP/nocache.lines"; then
    pass "train --pool-idle-mb 0 prints the same losses and accuracy"
else
    fail "train --pool-idle-mb 0 prints the same losses and accuracy"
fi
# Either transfer, asked for by name: a thread in the budget, or the
# executor copying inline (and no transfer thread); the same numbers.
for transfer in thread inline; do
    run train --data "$MNIST" --epochs 2 --transfer $transfer
    if [ $transfer = thread ]; then
        expect "train --transfer thread" 0 stdout 'transfer 1' stdout '^trained 6 steps'
    else
        expect "train --transfer inline" 0 stdout 'transfer 0' \
            stdout '^transfer: inline, the executor copies each batch' stdout '^trained 6 steps'
    fi
    grep '^epoch: \|^eval: ' "$TMP/out" >"$TMP/sink.lines"
    if [ "$rc" -eq 0 ] && cmp -s "$TMP/nonsink.ends" "$TMP/sink.lines"; then
        pass "train --transfer $transfer: the host-fed run's epoch-end losses and accuracy"
    else
        fail "train --transfer $transfer: the host-fed run's epoch-end losses and accuracy"
    fi
done
# --eval-every N: the test split evaluated at the end of every N-th epoch,
# on that epoch's weights (each result is `sluice eval` of the epoch's
# checkpoint), while the training prints a run's losses without it;
# sinking or not.
for sink in --sink --no-sink; do
    rm -rf "$TMP/evck"
    run train --data "$MNIST" --epochs 3 --lr 0.05 $sink --no-eval
    grep '^epoch: [0-9]* step: ' "$TMP/out" >"$TMP/plain.losses"
    run train --data "$MNIST" --epochs 3 --lr 0.05 $sink --eval-every 1 --ckpt-dir "$TMP/evck" \
        --ckpt-keep 0
    expect "train --eval-every 1 $sink" 0 \
        stdout '^epoch: 1 eval: accuracy [0-9.]* ([0-9]*/20), loss [0-9.]*$' \
        stdout '^epoch: 3 eval: accuracy [0-9.]* ([0-9]*/20), loss [0-9.]*$'
    grep '^epoch: [0-9]* step: ' "$TMP/out" >"$TMP/evals.losses"
    if [ "$rc" -eq 0 ] && cmp -s "$TMP/plain.losses" "$TMP/evals.losses"; then
        pass "train --eval-every 1 $sink: the losses of a run without it"
    else
        fail "train --eval-every 1 $sink: the losses of a run without it"
    fi
    run train --data "$MNIST" --epochs 3 --lr 0.05 $sink --eval-every 1 --json
    cp "$TMP/out" "$TMP/evals.json"
    same=$rc
    for e in 1 2 3; do
        want=$(grep -o "{\"epoch\": $e, \"accuracy\": [0-9.]*, \"loss\": [0-9.]*}" \
            "$TMP/evals.json" | sed 's/^.*"accuracy"/"accuracy"/; s/}$//')
        run eval --data "$MNIST" --load "$TMP/evck/lenet-${e}_3.ckpt" --json
        got=$(grep -o '"test_accuracy": [0-9.]*, "test_loss": [0-9.]*' "$TMP/out" | sed 's/test_//g')
        if [ "$rc" -ne 0 ] || [ -z "$want" ] || [ "$want" != "$got" ]; then
            echo "    epoch $e: --eval-every gave '$want', the epoch's checkpoint '$got'"
            same=1
        fi
    done
    rc=$same
    if [ "$rc" -eq 0 ]; then
        pass "train --eval-every 1 $sink --json: each epoch's result is its checkpoint's"
    else
        fail "train --eval-every 1 $sink --json: each epoch's result is its checkpoint's"
    fi
done
# On two devices the replicas hold the same values: the last epoch's
# evaluation is the final one's.
run train --data "$MNIST" --epochs 2 --eval-every 1 --device cpu:0,cpu:1
if [ "$rc" -eq 0 ] &&
    [ "$(sed -n 's/^epoch: 2 eval: //p' "$TMP/out")" = "$(sed -n 's/^eval: //p' "$TMP/out")" ] &&
    grep -q '^epoch: 1 eval: accuracy' "$TMP/out"; then
    pass "train --eval-every 1 on cpu:0,cpu:1"
else
    fail "train --eval-every 1 on cpu:0,cpu:1"
fi
run train --data "$MNIST" --epochs 3 --eval-every 2 --no-sink
if [ "$rc" -eq 0 ] && [ "$(grep -c '^epoch: [0-9]* eval: ' "$TMP/out")" -eq 1 ]; then
    expect "train --eval-every 2 over 3 epochs: epoch 2's" 0 stdout '^epoch: 2 eval: accuracy'
else
    fail "train --eval-every 2 over 3 epochs: epoch 2's"
fi
run train --data "$MNIST" --eval-every 1 --no-eval
expect "train --eval-every with --no-eval" 2 stderr '^sluice: train: --eval-every evaluates on the test split, which --no-eval skips'
run train --data "$MNIST" --eval-every 0
expect "train --eval-every 0" 2 stderr '^sluice: train: --eval-every: 0 is out of range'
run train --data "$MNIST" --transfer sometimes
expect "train --transfer sometimes" 2 stderr "--transfer: 'sometimes' is not auto, thread or inline"
run train --data "$MNIST" --device sim:0 --transfer inline
expect "train --transfer inline on sim:0" 1 stderr 'sluice: train: an inline transfer needs a device' \
    stderr 'sim:0 copies over its bus'
run bench sink --transfer sometimes
expect "bench sink --transfer sometimes" 2 stderr "--transfer: 'sometimes' is not auto, thread or inline"
run train --data "$MNIST" --max-steps 2 --no-eval --json --pool-idle-mb 2
expect "train --pool-idle-mb 2 --json" 0 stdout '"train_pool": {"in_use_bytes": ' \
    stdout '"idle_cap_bytes": 2097152, ' stdout '"system_allocs": [1-9]'
run train --data "$MNIST" --pool-idle-mb -1
expect "train --pool-idle-mb -1" 2 stderr '^sluice: train: --pool-idle-mb'
# bench eval: every test image (20 here: batches of 8, the last padded).
run bench eval --data "$MNIST" --batch 8 --repeats 2 --json
expect "bench eval --json" 0 stdout '^{"inference_images_per_s": [0-9.]*, "runs": \[[0-9.]*, [0-9.]*\], "images": 20, "batch": 8, ' \
    stdout '"cpu_path": "[a-z0-9]*", "blas_core": "[A-Za-z]'
run bench eval --data "$MNIST" --batch 8 --repeats 1 --load "$TMP/m.ckpt"
expect "bench eval --load" 0 stdout '^inference: [0-9]* images/s (median of 1 passes; accuracy [0-9.]*)$'
run bench eval --data "$MNIST" --batch 0
expect "bench eval --batch 0" 2 stderr '--batch'
run bench eval --data "$TMP"
expect "bench eval without a test split" 1 stderr 'holds no MNIST test split'
# --resume continues a stopped run exactly: its final checkpoint is the
# straight run's, byte for byte (parameters, optimizer state, step, data
# position); sink mode, stopped mid-epoch (3 batches per epoch).
run train --data "$MNIST" --epochs 2 --no-eval --save "$TMP/straight.ckpt"
run train --data "$MNIST" --epochs 2 --no-eval --max-steps 4 --save "$TMP/part.ckpt"
run train --data "$MNIST" --epochs 2 --no-eval --resume "$TMP/part.ckpt" --save "$TMP/resumed.ckpt"
expect "train --resume" 0 stdout "^resuming .*part.ckpt at global step 4$" stdout '^trained 2 steps'
if [ "$rc" -eq 0 ] && cmp -s "$TMP/straight.ckpt" "$TMP/resumed.ckpt"; then
    pass "train --resume ends with the straight run's checkpoint, byte for byte"
else
    fail "train --resume ends with the straight run's checkpoint, byte for byte"
fi
run train --data "$MNIST" --epochs 2 --no-eval --resume "$TMP/part.ckpt" --seed 9
expect "train --resume with another seed" 1 stderr 'cannot resume: .*seed 0.*seed 9'
run train --data "$MNIST" --resume "$TMP/part.ckpt" --load "$TMP/part.ckpt"
expect "train --resume --load" 2 stderr 'give --resume or --load, not both'
run train --data "$MNIST" --max-steps 2 --no-eval --stages --transfer thread
expect "train --stages --transfer thread" 0 stdout '^stage  *threads  *rows' \
    stdout '^transfer  *1  *[1-9]' \
    stdout '^executor (cpu:0)  *1  *2 ' stdout '^host (callbacks)  *1  *1 ' stdout '^verdict: '
# auto: on cpu with a compute thread per CPU, the executor moves the batches
run train --data "$MNIST" --max-steps 2 --no-eval --stages --threads "$(nproc)"
expect "train --stages (auto: inline on cpu)" 0 stdout ', transfer 0; seed' \
    stdout '^transfer: inline, the executor copies each batch' \
    stdout '^transfer (inline, on the executor)  *-  *[1-9]' stdout '^executor (cpu:0)  *1  *2 '
run train --data "$MNIST" --max-steps 2 --no-eval --no-sink --stages
expect "train --no-sink --stages" 0 stdout '^stages: none to show'
run train --data "$MNIST" --max-steps 2 --no-eval --json
expect "train --json has the stages" 0 stdout '"stages": \[{"name": ' stdout '"verdict": "'
run train --data "$MNIST" --epochs 2 --sink-size 2 --device sim:0 --log-every 1
expect "train --sink-size 2 --device sim:0" 0 stdout '^data sink on sim:0: sink_size 2' \
    stdout '^epoch: 1 step: 2, loss is' stdout '^epoch: 2 step: 2, loss is' \
    stdout '^trained 4 steps'
run train --data "$MNIST" --sink-size 0
expect "train --sink-size 0" 2 stderr 'sink-size'
run train --data "$MNIST" --device gpu:0
expect "train --device gpu:0" 2 stderr 'cpu:N or sim:N'
run train --data "$MNIST" --queue-capacity 0
expect "train --queue-capacity 0" 2 stderr 'queue-capacity'
run eval --data "$MNIST" --load "$TMP/m.ckpt"
expect "eval" 0 stdout '^eval: accuracy'
if grep -q "$(grep '^eval: ' "$TMP/out")" "$TMP/graph.lines"; then
    pass "eval of the saved checkpoint repeats train's evaluation"
else
    fail "eval of the saved checkpoint repeats train's evaluation"
fi
run eval --data "$MNIST" --load "$TMP/m.ckpt" --json
expect "eval --json" 0 stdout '^{"model": "lenet", "test_samples": 20, "test_accuracy": '
run train --data "$MNIST" --max-steps 2 --json --save-graphs "$TMP/graphs" \
    --ckpt-dir "$TMP/ckpts"
expect "train --json --max-steps" 0 stdout '^{"model": "lenet", "device": "cpu:0", "sink_mode": true, "sink_size": -1, "steps": 2, ' \
    stdout '"test_accuracy": '
if [ -s "$TMP/graphs/train_step.ir" ] && [ -s "$TMP/graphs/train_step.dot" ] &&
    [ -s "$TMP/graphs/eval_step.ir" ] && [ -s "$TMP/ckpts/lenet-1_2.ckpt" ] &&
    [ ! -e "$TMP/ckpts/lenet-1_3.ckpt" ]; then
    pass "train --save-graphs writes the steps; --max-steps ends the run with a checkpoint"
else
    fail "train --save-graphs writes the steps; --max-steps ends the run with a checkpoint"
fi
run train --data "$MNIST" --epochs 2 --no-eval --ckpt-dir "$TMP/ckpts" --model mlp
expect "train --model mlp --ckpt-dir" 0 stdout 'mlp on'
if [ -s "$TMP/ckpts/mlp-1_3.ckpt" ] && [ -s "$TMP/ckpts/mlp-2_3.ckpt" ]; then
    pass "train --ckpt-dir saves each epoch"
else
    fail "train --ckpt-dir saves each epoch"
fi
# --ckpt-steps while sinking (sink_size -1: a sink per epoch of 3 steps): a
# checkpoint at each sink end that crosses a multiple of 2 (steps 3 and 6),
# and one at the run's end when --max-steps stops it mid-epoch (step 7).
run train --data "$MNIST" --epochs 3 --no-eval --model mlp --max-steps 7 \
    --ckpt-dir "$TMP/step-ckpts" --ckpt-steps 2
expect "train --ckpt-steps 2 --max-steps 7 (sinking)" 0 stdout 'data sink on'
if [ "$(cd "$TMP/step-ckpts" && LC_ALL=C ls | tr '\n' ' ')" = \
    "mlp-1_3.ckpt mlp-2_3.ckpt mlp-3_1.ckpt " ]; then
    pass "train --ckpt-steps saves at the sink ends that cross a multiple, and at the end"
else
    echo "    left: $(cd "$TMP/step-ckpts" && LC_ALL=C ls | tr '\n' ' ')"
    fail "train --ckpt-steps saves at the sink ends that cross a multiple, and at the end"
fi
# Training again into a folder an earlier run filled: --ckpt-keep counts what
# the folder holds (newest by epoch and step), the temporary files of saves
# killed midway (an old one, one just left) go as the run starts, said on
# stderr, and other files stay.
OLD_CKPTS=$TMP/old-ckpts
mkdir -p "$OLD_CKPTS"
for s in 1 2 3 4 5 6 7 8 9 10; do echo old >"$OLD_CKPTS/mlp-0_$s.ckpt"; done
echo notes >"$OLD_CKPTS/notes.txt"
echo torn >"$OLD_CKPTS/mlp-0_11.ckpt.tmp-AbC123"
touch -d '2 hours ago' "$OLD_CKPTS/mlp-0_11.ckpt.tmp-AbC123"
echo torn >"$OLD_CKPTS/mlp-0_12.ckpt.tmp-Kill09"
run train --data "$MNIST" --epochs 2 --no-eval --ckpt-dir "$OLD_CKPTS" --model mlp --ckpt-keep 5
expect "train --ckpt-keep 5 into an earlier run's folder" 0 stdout 'mlp on' \
    stderr "^sluice: train: removed .*/mlp-0_11.ckpt.tmp-AbC123, a temporary file left by a save" \
    stderr "^sluice: train: removed .*/mlp-0_12.ckpt.tmp-Kill09, a temporary file left by a save"
if [ "$(cd "$OLD_CKPTS" && LC_ALL=C ls | tr '\n' ' ')" = \
    "mlp-0_10.ckpt mlp-0_8.ckpt mlp-0_9.ckpt mlp-1_3.ckpt mlp-2_3.ckpt notes.txt " ]; then
    pass "train --ckpt-keep prunes the folder, not only its own files"
else
    echo "    left: $(cd "$OLD_CKPTS" && LC_ALL=C ls | tr '\n' ' ')"
    fail "train --ckpt-keep prunes the folder, not only its own files"
fi
run eval --data "$MNIST" --load "$TMP/ckpts/mlp-2_3.ckpt"
expect "eval a checkpoint of another network" 1 stderr '^sluice: eval: checkpoint .*mlp-2_3.ckpt'
head -c 1000 "$TMP/m.ckpt" >"$TMP/short.ckpt"
run eval --data "$MNIST" --load "$TMP/short.ckpt"
expect "eval a truncated checkpoint" 1 stderr 'truncated'
run eval --data "$MNIST" --load "$TMP/missing.ckpt"
expect "eval a missing checkpoint" 1 stderr 'missing.ckpt: cannot open'
run eval --data "$MNIST"
expect "eval without --load" 2 stderr '^sluice: eval: --load CKPT is required'
run train --data "$TRAIN_ONLY"
expect "train without a test split" 1 stderr 'holds no MNIST test split'
run train --data "$TRAIN_ONLY" --no-eval --max-steps 1
expect "train --no-eval without a test split" 0 stdout '^trained 1 steps'
for bad in "--epochs 0" "--lr -1" "--lr x" "--mode fast" "--model resnet" "--batch 0" \
    "--threads 0" "--momentum 1" "--optimizer adam" "--ckpt-steps 5" "extra" \
    "--error-samples ignore" "--max-bad-samples 3" "--error-samples skip --max-bad-samples 3x"; do
    # shellcheck disable=SC2086 # word splitting of $bad is the point
    run train --data "$MNIST" $bad
    expect "train $bad" 2 stderr '^sluice: train: '
done
run train --data "$MNIST" --epochs 1 --error-samples replace --max-bad-samples 0.5%
expect "train --error-samples replace" 0 stdout '^bad samples: replace, at most 0.5% of an epoch' \
    stdout '^bad samples: 0 skipped, 0 replaced'
run help train
expect "help train: --error-samples" 0 stdout '--error-samples raise|skip|replace' \
    stdout '--max-bad-samples N|P%'
run train --data "$MNIST" --batch 200
expect "train with a batch larger than the data" 1 stderr '^sluice: train: '
run bench train --no-e2e --steps 3 --repeats 1 --json
expect "bench train --no-e2e --json" 0 stdout '"compute_graph_samples_per_s": [0-9]' \
    stdout '"compute_pynative_samples_per_s": [0-9]' stdout '"per_op_ms_per_step": {"' \
    stdout '"sgemm_1024_gflops_per_thread": [1-9][0-9.]*, "fma_peak_gflops_per_thread": [1-9][0-9.]*, "per_op_gflops": {"' \
    stdout '"blas_core": "[A-Za-z]' \
    stdout '"per_op_gflops": {.*"conv2d[^"]*": [0-9]' # any may lead; fused on one thread
# one thread: a share is the whole batch, so the forward conv runs inside
# the fused pool, and its GFLOPS are reported there (exec/fuse.c)
run bench train --data "$MNIST" --steps 3 --repeats 1 --e2e-steps 4 --threads 1
expect "bench train" 0 stdout 'compute, GRAPH' stdout 'end to end' stdout 'conv2d' \
    stdout 'a 1024^3 sgemm on one' \
    stdout '^  conv2d+relu+max_pool2d .* GFLOPS, *[0-9]*% of peak, *[0-9]*% of sgemm per thread$' \
    stdout 'over [1-9][0-9]* real batches cycled' stdout '^openblas core: ' \
    stdout 'peak FMA rate of one$'
run bench train --blas-threads 2 --no-e2e --steps 3 --repeats 1
expect "bench train --blas-threads 2" 0 stdout 'not measured with --blas-threads above 1'
run bench subnormal --data "$MNIST" --batches 2 --train-steps 20 --steps 3 --repeats 2 --json
expect "bench subnormal --json" 0 stdout '"fresh_flush_ms_per_step": [0-9]' \
    stdout '"trained_keep_runs": \[[0-9.]*, [0-9.]*\]' stdout '"slowdown_flush": [0-9]' \
    stdout '"subnormal_accumulators": [0-9]'
run bench subnormal --data "$MNIST" --batches 2 --train-steps 20 --steps 3 --repeats 1
expect "bench subnormal" 0 stdout '^trained 20 steps without flushing: loss ' \
    stdout '^slowdown, trained over fresh: flush (default) [0-9.]*x, keep [0-9.]*x$' \
    stdout '^goal: the default at most 1.10x: '
run bench subnormal --steps 0
expect "bench subnormal --steps 0" 2 stderr '^sluice: bench: '
run bench train --repeats 0
expect "bench train --repeats 0" 2 stderr '^sluice: bench: '
run bench sink --help
expect "bench sink --help" 0 stdout '^Usage: sluice bench sink' stdout 'hidden fraction' \
    stdout 'serial reference'
run bench sink --data "$MNIST" --steps 4 --repeats 1 --json
expect "bench sink --json" 0 stdout '"name": "nonsink", "device": "cpu:0", "samples_per_s": [0-9]' \
    stdout '"name": "sink_1000", "device": "sim:0"' stdout '"name": "data_only"' \
    stdout '"name": "serial", "device": "sim:0"' \
    stdout '"stages_by_device": {"cpu:0": \[{"name": ' stdout '{"name": "transfer", "threads": 1, "rows": [1-9]' \
    stdout '"name": "executor (sim:0)", "threads": 1, "rows": 4, ' \
    stdout '"verdict_by_device": {"cpu:0": "'
run bench sink --data "$MNIST" --steps 4 --repeats 1 --devices cpu:0
expect "bench sink" 0 stdout 'sink, sink_size 1000' stdout '^hidden fraction h = ' \
    stdout '^  cpu:0        serial reference  ' stdout '^efficiency against the CPU-time bound' \
    stdout '^compute only: the step over 3 real batches'
# Two rounds: the hidden fraction of sink and of the serial reference, each
# a median and range over rounds or the count of noisy rounds, never a bare
# out-of-range number; the CPU-time bound on cpu only; each run's CPU time.
H='{"median": \(-\{0,1\}[0-9.]*, "min": -\{0,1\}[0-9.]*, "max": -\{0,1\}[0-9.]*\|null, "min": null, "max": null\), "rounds": [0-2], "noise_rounds": [0-2]}'
if [ -z "$tsan" ]; then
    run bench sink --data "$MNIST" --steps 8 --repeats 2 --json
    expect "bench sink --repeats 2 --json" 0 stdout '"repeats": 2, ' stdout '"order": "rotating"' \
        stdout '"fresh_model_per_run": true' stdout '"compute_batches": 3, ' \
        stdout '"blas_core": "[A-Za-z]' stdout '"hidden_noise_range": \[-0.1, 1.1\]' \
        stdout "\"hidden_by_device\": {\"cpu:0\": {\"per_percent_of_compute\": [0-9.]*, \"sink_full\": $H" \
        stdout "\"serial\": $H}, \"sim:0\": " \
        stdout "\"cpu_bound_by_device\": {\"cpu:0\": {\"cpus\": [1-9][0-9]*, \"bound_ms_per_step\": [0-9.]*, \"sink_full\": $H" \
        stdout '"name": "serial", "device": "cpu:0", "samples_per_s": [0-9.]*, "ms_per_step": [0-9.]*, "cpu_ms_per_step": [0-9.]*, ' \
        stdout '"ms_per_step_rounds": \[[0-9.]*, [0-9.]*\], "cpu_ms_per_step_rounds": \[[0-9.]*, [0-9.]*\]'
    if grep -q '"cpu_bound_by_device": {[^}]*"sim:0"' "$TMP/out"; then
        fail "bench sink: the CPU-time bound is for cpu devices only"
    else
        pass "bench sink: the CPU-time bound is for cpu devices only"
    fi
fi
# --profile DIR: a Chrome trace in which batches can be followed in stage order.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
for transfer in thread auto; do
    run bench sink --data "$MNIST" --steps 8 --repeats 1 --devices cpu:0 --transfer $transfer \
        --profile "$TMP/prof/$transfer"
    expect "bench sink --profile --transfer $transfer" 0 \
        stderr "^profile: $TMP/prof/$transfer/trace.json ([1-9][0-9]* events; 0 dropped"
    if "$PY" "$top_srcdir/tests/follow_batches.py" "$TMP/prof/$transfer/trace.json" >"$TMP/out" 2>"$TMP/err"; then
        pass "the trace ($transfer) parses and follows batches through the stages in order"
    else
        rc=1
        fail "the trace ($transfer) parses and follows batches through the stages in order"
    fi
done
# bench/plot.py turns the --json outputs and the trace into PNG files.
if [ -n "$tsan" ]; then
    echo "SKIP: bench/plot.py under ThreadSanitizer (the plain and ASan builds draw them)"
elif "$PY" -c 'import matplotlib' 2>/dev/null; then
    timeout -k 10 "$LIMIT" "$SLUICE" bench sink --data "$MNIST" --steps 4 --repeats 1 --json \
        >"$TMP/sink.json" 2>/dev/null
    timeout -k 10 "$LIMIT" "$SLUICE" bench pipeline --data "$MNIST" --repeats 1 --workers 1 \
        --json >"$TMP/pipe.json"
    "$PY" "$top_srcdir/bench/plot.py" --out "$TMP/png" "$TMP/sink.json" "$TMP/pipe.json" \
        "$TMP/prof/thread/trace.json" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    ok=1
    for f in sink_throughput sink_stages_cpu0 sink_stages_sim0 pipeline_throughput \
        pipeline_stages queue_occupancy; do
        [ "$(head -c 4 "$TMP/png/$f.png" 2>/dev/null | od -An -c | tr -d ' ')" = '211PNG' ] || ok=0
    done
    if [ "$rc" -eq 0 ] && [ "$ok" -eq 1 ]; then
        pass "bench/plot.py draws every figure"
    else
        fail "bench/plot.py draws every figure"
    fi
    echo '{"x": 1}' >"$TMP/other.json"
    "$PY" "$top_srcdir/bench/plot.py" --out "$TMP/png" "$TMP/other.json" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    expect "bench/plot.py on another JSON" 1 stderr 'other.json: not the --json output'
else
    echo "SKIP: bench/plot.py (no matplotlib for $PY: apt-get install python3-matplotlib)"
fi
run train --data "$MNIST" --max-steps 2 --no-eval --profile "$TMP/prof2"
expect "train --profile" 0 stderr '^profile: .*prof2/trace.json'
run bench pipeline --data "$MNIST" --repeats 1 --workers 1 --profile "$TMP/prof3"
expect "bench pipeline --profile" 0 stderr '^profile: .*prof3/trace.json'
if grep -q '"name": "map+batch queue", "ph": "C"' "$TMP/prof3/trace.json"; then
    pass "bench pipeline --profile: the pipeline queue's fill as a counter"
else
    fail "bench pipeline --profile: the pipeline queue's fill as a counter"
fi
run train --data "$MNIST" --max-steps 2 --profile /dev/null/x
expect "train --profile into a file" 1 stderr '^sluice: train: --profile /dev/null/x: cannot make the folder'
# --autotune: accepted where the issue asks, its lines kept in --json.
run bench pipeline --data "$MNIST" --repeats 1 --workers 1 --queue-capacity 1 --autotune --json
expect "bench pipeline --autotune --json" 0 stdout '"tuned_images_per_s": [0-9.]*, "autotune": \['
run bench pipeline --data "$MNIST" --repeats 1 --workers 1 --autotune
expect "bench pipeline --autotune" 0 stdout '^autotune (started from 1 worker): images/s once tuned' stdout '^autotune in the last run:'
run bench pipeline --data "$MNIST" --queue-capacity 0
expect "bench pipeline --queue-capacity 0" 2 stderr 'queue-capacity'
run bench sink --data "$MNIST" --steps 4 --repeats 1 --devices cpu:0 --workers 1 --queue-capacity 1 --autotune --json
expect "bench sink --autotune --json" 0 stdout '"autotune_by_device": {"cpu:0": \['
run train --data "$MNIST" --max-steps 2 --no-eval --workers 1 --autotune --json
expect "train --autotune --json" 0 stdout '"autotune": \['
run bench sink --devices tpu:0
expect "bench sink --devices tpu:0" 2 stderr 'cpu:N or sim:N'
run bench sink --devices cpu:0,,sim:0
expect "bench sink --devices cpu:0,,sim:0" 2 stderr "holds an empty name"
run bench sink --devices cpu:0,
expect "bench sink --devices cpu:0," 2 stderr "holds an empty name"
run bench sink --devices cpu:0,cpu:0
expect "bench sink --devices cpu:0,cpu:0" 2 stderr "'cpu:0' is named twice"
run bench devices --data "$MNIST" --steps 2 --repeats 1 --json
expect "bench devices --json" 0 stdout '"devices": "cpu:0,cpu:1", "global_batch": 64.*"ratio": [0-9.]*.*"reduce_work_ms_per_step": [0-9.]*, "allreduce_bytes": [0-9]*, "sim_network_gbit_s": 0, .*}$'
run bench devices --data "$MNIST" --steps 2 --repeats 1 --sim-network 0,5
expect "bench devices --sim-network 0,5" 2 stderr "give BANDWIDTH,LATENCY in Gbit/s"
run bench devices --data "$MNIST" --steps 2 --repeats 1 --sim-network 100,1
expect "bench devices --sim-network" 0 stdout '^modelled network 100 Gbit/s, 1 us: a ring allreduce of 246744 bytes over 2 devices takes 0.022 ms; measured allreduce'
run train --data "$MNIST" --device cpu:0,cpu:1 --batch 16 --epochs 2 --max-steps 4 --no-eval --sim-network 100,5
expect "train --sim-network" 0 stdout '^trained 4 steps'
run train --data "$MNIST" --batch 16 --max-steps 4 --no-eval --sim-network 100,5
expect "train --sim-network on one device" 2 stderr 'models the network between devices'
run bench dist --batch 63
expect "bench dist --batch 63" 2 stderr "does not split evenly among 2 ranks"
run bench devices --devices cpu:0
expect "bench devices --devices cpu:0" 2 stderr 'give two devices or more'
run bench devices --batch 63
expect "bench devices --batch 63" 2 stderr 'does not split evenly among the 2 devices'
run bench pipeline --decode-fusion fast
expect "bench pipeline --decode-fusion fast" 2 stderr "expected off, crop or scaled, got 'fast'"
run bench sink --devices sim:0@fast
expect "bench sink --devices sim:0@fast" 2 stderr 'sim:N@LATus'
run bench sink --data "$MNIST" --steps 4 --repeats 1 --workers 1 --devices sim:0@100us --json
expect "bench sink --devices sim:0@100us --json" 0 stdout '"bus_model_by_device": {"sim:0@100us": {"copy_ms": 0.0152, "launch_ms": 0.1000, '
# training on a folder of JPEGs: DIR/train and DIR/val, a 3-channel LeNet5
FOLDER=$TMP/folder
for split in train val; do
    for c in cat dog; do
        mkdir -p "$FOLDER/$split/$c"
        for f in a b c; do tiny_jpeg >"$FOLDER/$split/$c/$f.jpg"; done
    done
done
# bench sink batches 32: a train folder of 40
BIG=$TMP/folder-40
for c in cat dog; do
    mkdir -p "$BIG/$c"
    for f in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19; do tiny_jpeg >"$BIG/$c/$f.jpg"; done
done
run train --data "$FOLDER" --epochs 2 --batch 2 --workers 1
expect "train --data FOLDER" 0 stdout "^train: lenet on $FOLDER, batch 2, 3 steps per epoch" stdout '^eval: accuracy [0-9.]* ([0-9]*/6)'
run train --data "$IMAGES" --epochs 1 --batch 2 --workers 1
expect "train --data FOLDER without val" 1 stderr 'holds no held-back split to evaluate on: give DIR/train and DIR/val'
run train --data "$IMAGES" --epochs 1 --batch 2 --workers 1 --no-eval
expect "train --data FOLDER --no-eval" 0 stdout '^trained 2 steps'
run bench sink --data "$BIG" --steps 3 --repeats 1 --workers 1 --devices cpu:0
expect "bench sink --data FOLDER" 0 stdout '^LeNet5 (3x32x32, a folder of JPEGs), batch 32, 3 steps per run'
# several devices: data parallel, the list checked by the library
# (the small MNIST holds 2 batches: 1 global step an epoch)
run train --data "$MNIST" --epochs 3 --no-eval --workers 1 --device cpu:0,cpu:1
expect "train --device cpu:0,cpu:1" 0 stdout '^data parallel on 2 devices (cpu:0,cpu:1): .*global batch 64' stdout '^trained 3 steps'
if command -v taskset >/dev/null 2>&1; then
    # on one CPU, 2 devices of 1 thread each are more threads than CPUs: say so
    timeout -k 10 "$LIMIT" taskset -c 0 "$SLUICE" train --data "$MNIST" --epochs 1 --no-eval \
        --workers 1 --threads 1 --device cpu:0,cpu:1 >"$TMP/out" 2>"$TMP/err"
    rc=$?
    expect "train --device cpu:0,cpu:1 on one CPU" 0 stdout '^note: 2 devices x 1 compute thread on 1 CPUs: their threads take turns'
fi
run train --data "$MNIST" --epochs 2 --no-eval --no-sink --workers 1 --device sim:0,sim:1
expect "train --no-sink --device sim:0,sim:1" 0 stdout '^trained 2 steps'
run train --data "$MNIST" --max-steps 2 --no-eval --device cpu:0,,cpu:1
expect "train --device cpu:0,,cpu:1" 1 stderr 'item 2 is empty'
run train --data "$MNIST" --max-steps 2 --no-eval --device cpu:0,sim:1
expect "train --device cpu:0,sim:1" 1 stderr 'of different kinds'
run train --data "$MNIST" --max-steps 2 --no-eval --device cpu:0,cpu:0
expect "train --device cpu:0,cpu:0" 1 stderr 'cpu:0 is named twice'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
