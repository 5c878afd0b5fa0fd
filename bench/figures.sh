#!/usr/bin/env bash
# figures.sh: the one command that regenerates the benchmark figures of docs/.
#
# usage: bench/figures.sh BUILDDIR [--with-torch] [NAME...]
#
# Runs each benchmark with --json, from the top of the source tree, and
# saves its output as docs/figures/NAME.json, wrapped as
#   {"name", "command" (exactly what ran), "date" (UTC, at its start),
#    "machine": {model_name, cpu_family, model, avx2, avx512f (from
#                /proc/cpuinfo), nproc, loadavg (at its start)},
#    "sluice": {version, cpu_path (from `sluice --version`), commit},
#    "result": <the bench's own JSON>}
# then runs bench/tables.py, which rewrites the tables of docs/*.md from
# those files. NAMEs (default: all selected):
#   sink      BUILDDIR/sluice bench sink --repeats 5 --json
#   sink_bus  BUILDDIR/sluice bench sink --repeats 5 --devices
#             sim:0,sim:0@200us,sim:0@2000us --json   (about 4 minutes)
#   sink_jpeg BUILDDIR/sluice bench sink --data DIR --devices cpu:0,sim:0
#             --repeats 5 --steps 600 --json, DIR made by
#             bench/make_jpeg_folder.py: 1,200 JPEGs of 96 to 128 px cut from
#             mate-backgrounds' nature photographs, 12 classes
#   pipeline  BUILDDIR/sluice bench pipeline --json
#   train     BUILDDIR/sluice bench train --json
#   devices   BUILDDIR/sluice bench devices --repeats 3 --json
#   devices_net  BUILDDIR/sluice bench devices --repeats 3 --sim-network 1,50 --json
#   subnormal BUILDDIR/sluice bench subnormal --json
# and with --with-torch (Debian's python3-torch and python3-numpy) the
# PyTorch comparisons, each of which also runs sluice in the same rounds:
#   torch_train     bench/torch_train.py --repeats 3 --json
#   torch_sink      bench/torch_sink.py --repeats 5 --json   (about 11 minutes)
#   python_dataset  bench/python_dataset.py --rounds 3 --json
#   torch_pipeline  bench/torch_pipeline.py --json
#   python_sources  bench/python_sources.py --rounds 5 --json
#   torch_imagenet_train, torch_imagenet_eval
#                   bench/torch_pipeline.py --image-folder DIR --preset
#                   imagenet-train|imagenet-eval --repeats 3 --json, DIR
#                   made by bench/make_jpeg_folder.py: 2,004 400x400 JPEGs cut
#                   from the photographs of Debian's mate-backgrounds
#                   (/usr/share/backgrounds), 12 classes
#   torch_dist      BUILDDIR/sluice bench dist --repeats 3 --torch bench/torch_ddp.py --json
# A file is replaced only when its bench succeeded. Run it on a quiet
# machine: the figures are only as good as the machine was idle (loadavg
# says how busy it was). SLUICE_CPU, when set, is passed on and recorded in
# the command. Exit status: 0 done, 1 a bench or tables.py failed, 2 usage.
set -euo pipefail

usage() {
    sed -n '3,44p' "$0" | sed -e 's/^# //' -e 's/^#$//' >&2
    exit "${1:-2}"
}

root=$(cd "$(dirname "$0")/.." && pwd)
py=/usr/bin/python3
[ $# -ge 1 ] || usage
case $1 in -h | --help) usage 0 ;; esac
build=$1
shift
with_torch=0
names=()
for arg in "$@"; do
    case $arg in
    --with-torch) with_torch=1 ;;
    -h | --help) usage 0 ;;
    -*) echo "figures.sh: unknown option $arg" >&2; usage ;;
    *) names+=("$arg") ;;
    esac
done

if [ ! -d "$build" ]; then
    echo "figures.sh: $build: no such folder (give the build folder, e.g. build)" >&2
    exit 2
fi
build_abs=$(cd "$build" && pwd)
if [ ! -x "$build_abs/sluice" ]; then
    echo "figures.sh: $build_abs/sluice is not there: run make in $build first" >&2
    exit 1
fi
case $build_abs in
*[[:space:]]*) echo "figures.sh: $build_abs: a path with spaces is not supported" >&2; exit 2 ;;
esac
# Commands run from the top of the tree and name the build folder relative
# to it when it is inside, so the recorded command can be run again as is.
case $build_abs/ in
"$root"/*) b=${build_abs#"$root"/} ;;
*) b=$build_abs ;;
esac
# The ImageNet presets' folder, made from Debian's photographs (the same
# files on every machine), in the build folder.
photos=$b/bench-photos400
photos96=$b/bench-photos96
cd "$root"
sluice=$b/sluice
env_prefix=
if [ -n "${SLUICE_CPU:-}" ]; then
    env_prefix="SLUICE_CPU=$SLUICE_CPU "
fi

all=(sink sink_bus sink_jpeg pipeline train devices devices_net subnormal)
torch_all=(torch_train torch_sink python_dataset torch_pipeline torch_dist python_sources
    torch_imagenet_train torch_imagenet_eval)
if [ "$with_torch" -eq 1 ]; then
    all+=("${torch_all[@]}")
fi
if [ ${#names[@]} -eq 0 ]; then
    names=("${all[@]}")
fi

command_of() {
    case $1 in
    sink) echo "$sluice bench sink --repeats 5 --json" ;;
    sink_jpeg) echo "$sluice bench sink --data $photos96 --devices cpu:0,sim:0 --repeats 5 --steps 600 --json" ;;
    sink_bus) echo "$sluice bench sink --repeats 5 --devices sim:0,sim:0@200us,sim:0@2000us --json" ;;
    pipeline) echo "$sluice bench pipeline --json" ;;
    train) echo "$sluice bench train --json" ;;
    torch_train) echo "$py bench/torch_train.py --sluice $sluice --repeats 3 --json" ;;
    torch_sink) echo "$py bench/torch_sink.py --sluice $sluice --repeats 5 --json" ;;
    python_dataset) echo "$py bench/python_dataset.py --sluice $sluice --stage $b/bindings/python/stage --rounds 3 --json" ;;
    torch_pipeline) echo "$py bench/torch_pipeline.py --sluice $sluice --json" ;;
    python_sources) echo "$py bench/python_sources.py --stage $b/bindings/python/stage --rounds 5 --json" ;;
    torch_imagenet_train | torch_imagenet_eval)
        echo "$py bench/torch_pipeline.py --sluice $sluice --image-folder $photos --preset imagenet-${1#torch_imagenet_} --repeats 3 --json" ;;
    devices) echo "$sluice bench devices --repeats 3 --json" ;;
    devices_net) echo "$sluice bench devices --repeats 3 --sim-network 1,50 --json" ;;
    subnormal) echo "$sluice bench subnormal --json" ;;
    torch_dist) echo "$sluice bench dist --repeats 3 --torch bench/torch_ddp.py --json" ;;
    *) return 1 ;;
    esac
}

for name in "${names[@]}"; do
    if ! command_of "$name" >/dev/null; then
        echo "figures.sh: no figures named '$name' (known: ${all[*]} ${torch_all[*]})" >&2
        exit 2
    fi
    case " ${torch_all[*]} " in
    *" $name "*)
        if [ "$with_torch" -ne 1 ]; then
            echo "figures.sh: $name is a PyTorch comparison: add --with-torch" >&2
            exit 2
        fi
        ;;
    esac
done
if [ "$with_torch" -eq 1 ] && ! "$py" -c 'import torch, numpy' 2>/dev/null; then
    echo "figures.sh: --with-torch needs Debian's python3-torch and python3-numpy" >&2
    exit 1
fi
for name in "${names[@]}"; do
    case $name in
    torch_imagenet_*)
        if [ ! -d /usr/share/backgrounds ]; then
            echo "figures.sh: $name needs Debian's mate-backgrounds (/usr/share/backgrounds)" >&2
            exit 1
        fi
        if [ ! -d "$photos" ] && ! "$py" bench/make_jpeg_folder.py --out "$photos" --classes 12 \
            --per-class 167 --size 400 --photos /usr/share/backgrounds >&2; then
            echo "figures.sh: making $photos failed" >&2
            exit 1
        fi
        ;;
    sink_jpeg)
        if [ ! -d /usr/share/backgrounds/mate/nature ]; then
            echo "figures.sh: $name needs Debian's mate-backgrounds (/usr/share/backgrounds)" >&2
            exit 1
        fi
        if [ ! -d "$photos96" ] && ! "$py" bench/make_jpeg_folder.py --out "$photos96" \
            --photos /usr/share/backgrounds/mate/nature --classes 12 --per-class 100 \
            --size 96 --max-size 128 >&2; then
            echo "figures.sh: making $photos96 failed" >&2
            exit 1
        fi
        ;;
    esac
done
if [ ! -r /proc/cpuinfo ]; then
    echo "figures.sh: /proc/cpuinfo is not readable: the machine line comes from it" >&2
    exit 1
fi

version=$("$sluice" --version)
commit=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
mkdir -p docs/figures
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

for name in "${names[@]}"; do
    cmd=$(command_of "$name")
    date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    nproc=$(nproc)
    echo "figures.sh: [$date] $name: $env_prefix$cmd (load average $load)" >&2
    t0=$SECONDS
    # word splitting of $cmd is wanted: it is a command line without quotes
    # shellcheck disable=SC2086
    if ! $cmd >"$tmp"; then
        echo "figures.sh: $name failed: docs/figures/$name.json left as it was" >&2
        exit 1
    fi
    echo "figures.sh: $name took $((SECONDS - t0)) s" >&2
    "$py" - "$name" "$env_prefix$cmd" "$date" "$load" "$nproc" "$version" "$commit" \
        "$tmp" "docs/figures/$name.json" <<'EOF'
import json, os, sys

name, command, date, load, nproc, version, commit, raw, out = sys.argv[1:]
text = open(raw).read()
try:
    result = json.loads(text)
except ValueError:
    # a bench may print other lines before its JSON: take the last that parses
    result = None
    for line in reversed(text.splitlines()):
        if line.strip().startswith("{"):
            try:
                result = json.loads(line)
                break
            except ValueError:
                pass
if not isinstance(result, dict):
    sys.exit(f"figures.sh: {name}: the bench printed no JSON object: {out} left as it was")

cpu = {}
with open("/proc/cpuinfo") as f:
    for line in f:
        if not line.strip():
            if cpu:
                break  # the first processor is enough
            continue
        key, _, val = line.partition(":")
        cpu.setdefault(key.strip(), val.strip())


def integer(v):
    return int(v) if v is not None and v.isdigit() else v


flags = cpu.get("flags", "").split()
lines = version.splitlines()
machine = {"model_name": cpu.get("model name"), "cpu_family": integer(cpu.get("cpu family")),
           "model": integer(cpu.get("model")), "avx2": "avx2" in flags,
           "avx512f": "avx512f" in flags, "nproc": int(nproc), "loadavg": load}
missing = [k for k, v in machine.items() if v is None]
if missing:
    sys.exit(f"figures.sh: /proc/cpuinfo has no {', '.join(missing)}: {out} left as it was")
sluice = {"version": lines[0] if lines else version,
          "cpu_path": next((l.split(":", 1)[1].strip() for l in lines
                            if l.startswith("cpu path:")), None),
          "commit": commit}
doc = {"name": name, "command": command, "date": date, "machine": machine, "sluice": sluice,
       "result": result}
with open(out + ".tmp", "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
os.replace(out + ".tmp", out)
print(f"figures.sh: wrote {out}", file=sys.stderr)
EOF
done

"$py" bench/tables.py
