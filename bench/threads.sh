#!/usr/bin/env bash
# bench/threads.sh: how the executor's compute team shares the CPUs with
# itself and with the data pipeline. Prints, each a median of --repeats
# runs (sluice bench train takes the median itself):
#   1. compute-only GRAPH training pinned to one CPU, 1 thread against 2
#      (2 threads on one CPU must not collapse);
#   2. on every CPU the process may use: compute-only against end to end
#      (the pipeline's workers and the team sharing the cores);
#   3. compute-only on every CPU for several spins before a wait sleeps;
#   4. the pipeline consumer's wake-ups per epoch (sluice bench pipeline).
# Usage: bench/threads.sh [--sluice PATH] [--repeats N] [--steps N]
set -euo pipefail

sluice=./sluice
repeats=5
steps=2000
while [ $# -gt 0 ]; do
    case $1 in
    --sluice) sluice=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "threads.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
if ! [ -x "$sluice" ]; then
    echo "threads.sh: no sluice program at '$sluice' (give --sluice PATH)" >&2
    exit 2
fi

# The value of a numeric key in sluice's one-line JSON output.
key() { sed -n "s/.*\"$1\": \([0-9.]*\).*/\1/p"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

first_cpu=$(taskset -pc $$ | sed 's/.*: //; s/[,-].*//')
echo "machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)," \
    "$(nproc) CPUs; $("$sluice" --version | head -n 1)"

common=(bench train --json --repeats "$repeats" --steps "$steps")
echo "1. compute-only GRAPH, pinned to CPU $first_cpu (samples/s)"
one=$(taskset -c "$first_cpu" "$sluice" "${common[@]}" --no-e2e --threads 1 | key compute_graph_samples_per_s)
two=$(taskset -c "$first_cpu" "$sluice" "${common[@]}" --no-e2e --threads 2 | key compute_graph_samples_per_s)
printf '   1 thread %10.0f   2 threads %10.0f   2/1 = %s\n' "$one" "$two" "$(ratio "$two" "$one")"

echo "2. on $(nproc) CPUs, default thread budget (samples/s)"
out=$("$sluice" "${common[@]}")
c=$(key compute_graph_samples_per_s <<<"$out")
e=$(key end_to_end_samples_per_s <<<"$out")
printf '   compute-only %10.0f   end to end %10.0f   e2e/compute = %s\n' "$c" "$e" "$(ratio "$e" "$c")"
printf '   budget: %s\n' "$(sed -n 's/.*"thread_budget": "\([^"]*\)".*/\1/p' <<<"$out")"

echo "3. compute-only GRAPH on $(nproc) CPUs, 2 threads, by spin before sleeping (samples/s)"
for us in 0 5 20 100; do
    v=$("$sluice" "${common[@]}" --no-e2e --threads 2 --spin-us "$us" | key compute_graph_samples_per_s)
    printf '   spin %3d us %10.0f\n' "$us" "$v"
done

echo "4. the pipeline consumer's wake-ups per epoch (LeNet's MNIST pipeline)"
p=$("$sluice" bench pipeline --json)
w=$(key consumer_wakeups_per_epoch <<<"$p")
printf '   %s wake-ups per epoch\n' "${w:-?}"
