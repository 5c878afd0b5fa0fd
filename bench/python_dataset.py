#!/usr/bin/python3
"""sluice's Python iterator against PyTorch's input pipelines and sluice's C API.

One epoch of the seeds' MNIST pipeline (Fashion-MNIST train, 60000 images:
label TypeCast(int32); image Resize(32, 32) bilinear, Rescale(1/255, 0),
Rescale(1/0.3081, -0.1307/0.3081), HWC2CHW; shuffle; batch 32 dropping the
remainder: 1875 batches), through

  sluice-python  sluice.dataset from Python: create_tuple_iterator(), batches
                 as sluice.Tensor (the Python iterator)
  sluice-torch   the same pipeline through to_torch(): torch tensors (DLPack)
  dataloader-W   torch.utils.data.DataLoader over a map-style Dataset doing
                 the transforms per sample, num_workers W = 0, 1, 2
                 (bench/torch_pipeline.py's)
  vectorised     a hand-vectorised torch pipeline: shuffle the indices, then
                 gather and transform each batch of 32 with one interpolate
                 (bench/torch_pipeline.py's)
  c-api          `sluice bench pipeline --json`: the same pipeline through
                 the C API (sl_iterator_next), no Python at all

Each round runs every configuration once, in a fresh process (so each has
its own peak RSS and none inherits another's threads or memory), in an
order that rotates from round to round. A process times --epochs epochs
(--loader-epochs for the DataLoader, whose epochs take seconds), each from
a new iterator, and reports the median one; the table shows medians over
--rounds rounds.
images/s = 60000 / the wall time of the epoch, from making the iterator
(worker start-up included) to its last batch; reading the dataset files is
done before and not counted (sluice: an untimed warm-up iterator reads one
row, which loads the pixels; torch: bench/torch_pipeline.py's load()).
Peak RSS: the process's maximum resident set (plus, for the DataLoader,
that of its largest worker process).

    /usr/bin/python3 bench/python_dataset.py --sluice build/sluice   # ~3 minutes

The sluice package comes from build/bindings/python/stage unless it is
importable already (installed, or PYTHONPATH); --stage DIR picks another.
Needs Debian's python3-torch and python3-numpy; run with /usr/bin/python3.
Targets (issue 9): sluice-python >= 15x the best DataLoader, and >= 0.9x the
C API.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
CONFIGS = ["sluice-python", "sluice-torch", "dataloader-0", "dataloader-1", "dataloader-2",
           "vectorised", "c-api"]
TORCH_MODULE = "torch_pipeline"  # bench/torch_pipeline.py


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def peak_rss():
    """(this process's peak RSS, its largest finished child's) in bytes."""
    self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    child_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return self_kb * 1024, child_kb * 1024


def time_epochs(make_iterator, epochs):
    """The run with the median images/s of `epochs` epochs, each with an
    iterator of its own (as `sluice bench pipeline --repeats` runs)."""
    runs = sorted((time_epoch(make_iterator) for _ in range(epochs)),
                  key=lambda r: r["images_per_s"])
    return runs[len(runs) // 2]


def time_epoch(make_iterator):
    """One epoch, timed from making the iterator to its last batch."""
    t0 = time.perf_counter()
    it = make_iterator()
    first, images, batches = None, 0, 0
    for x, y in it:
        if first is None:
            first = time.perf_counter() - t0
        images += len(y)
        batches += 1
    wall = time.perf_counter() - t0
    del it
    return {"images_per_s": images / wall, "first_batch_ms": first * 1e3, "batches": batches,
            "images": images}


# --- the child: one configuration, one epoch --------------------------------------------

def child_sluice(args, torch_out):
    import sluice
    import sluice.dataset as ds
    import sluice.dataset.transforms as transforms
    import sluice.dataset.vision as vision
    d = ds.MnistDataset(args.data, usage="train")
    d = d.map(operations=transforms.TypeCast(sluice.int32), input_columns="label",
              num_parallel_workers=args.workers)
    d = d.map(operations=[vision.Resize((32, 32)), vision.Rescale(1 / 255, 0),
                          vision.Rescale(1 / 0.3081, -0.1307 / 0.3081), vision.HWC2CHW()],
              input_columns="image", num_parallel_workers=args.workers)
    d = d.shuffle(10000).batch(32, drop_remainder=True, num_parallel_workers=args.workers)
    warm = d.create_tuple_iterator(num_epochs=1)  # loads the pixels, kept by the dataset
    next(warm)
    warm.close()
    if torch_out:
        import torch  # noqa: F401  (loaded before the clock starts)
        return time_epochs(lambda: iter(d.to_torch(num_epochs=1)), args.epochs)
    return time_epochs(lambda: d.create_tuple_iterator(num_epochs=1), args.epochs)


def child_torch(args, name):
    sys.path.insert(0, BENCH)
    tp = __import__(TORCH_MODULE)
    import torch
    torch.set_num_threads(1)
    imgs, labs, _ = tp.load(args.data)
    if name == "vectorised":
        return time_epochs(tp.vectorised_iter(imgs, labs), args.epochs)
    workers = int(name.split("-")[1])
    return time_epochs(tp.dataloader_iter(tp.FashionMNIST(imgs, labs), workers),
                       args.loader_epochs)


def run_child(args):
    if args.child in ("sluice-python", "sluice-torch"):
        res = child_sluice(args, args.child == "sluice-torch")
    else:
        res = child_torch(args, args.child)
    res["peak_rss_bytes"], res["worker_peak_rss_bytes"] = peak_rss()
    print(json.dumps(res))


# --- the parent: rounds of children -------------------------------------------------------

def stage_env(args):
    env = dict(os.environ)
    probe = subprocess.run([sys.executable, "-c", "import sluice"], env=env, capture_output=True)
    if probe.returncode != 0 or args.stage:
        stage = args.stage or os.path.join(REPO, "build", "bindings", "python", "stage")
        env["PYTHONPATH"] = stage + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_config(args, name, env):
    if name == "c-api":
        cmd = [args.sluice, "bench", "pipeline", "--json", "--repeats", str(args.epochs),
               "--data", args.data, "--workers", str(args.workers)]
    else:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", name, "--data", args.data,
               "--workers", str(args.workers), "--epochs", str(args.epochs),
               "--loader-epochs", str(args.loader_epochs)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if p.returncode != 0:
        raise RuntimeError(f"{name}: exit status {p.returncode}: {p.stderr.strip()[-800:]}")
    out = json.loads(p.stdout.strip().splitlines()[-1])
    if name == "c-api":  # its images_per_s is already the median of its runs
        run = out["runs"][0]
        out = {"images_per_s": run["images_per_s"], "first_batch_ms": run["first_batch_ms"],
               "batches": run["batches"], "images": run["images"],
               "peak_rss_bytes": out["peak_rss_bytes"], "worker_peak_rss_bytes": 0}
    if out["batches"] != 1875 or out["images"] != 60000:
        raise RuntimeError(f"{name}: {out['batches']} batches of {out['images']} images, "
                           f"not 1875 of 60000")
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--sluice", default=os.path.join(REPO, "build", "sluice"),
                   help="the sluice program, for the C API run (default build/sluice)")
    p.add_argument("--stage", default=None, help="where the sluice package is (default: "
                   "importable already, else build/bindings/python/stage)")
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--workers", type=int, default=2, help="sluice's workers per map (default 2)")
    p.add_argument("--epochs", type=int, default=3,
                   help="epochs per process and round for sluice, the C API and the vectorised "
                   "pipeline; the median one counts (default 3)")
    p.add_argument("--loader-epochs", type=int, default=1,
                   help="the same for the DataLoader configurations, whose epochs take "
                   "seconds (default 1)")
    p.add_argument("--configs", default=",".join(CONFIGS),
                   help="comma list of: " + ", ".join(CONFIGS))
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        run_child(args)
        return 0
    configs = [c for c in args.configs.split(",") if c]
    for c in configs:
        if c not in CONFIGS:
            p.error(f"unknown configuration {c!r}")
    if args.rounds < 1 or args.epochs < 1 or args.loader_epochs < 1:
        p.error("--rounds, --epochs and --loader-epochs must be >= 1")
    env = stage_env(args)
    runs = {c: [] for c in configs}
    for r in range(args.rounds):
        order = configs[r % len(configs):] + configs[:r % len(configs)]
        for c in order:
            res = run_config(args, c, env)
            runs[c].append(res)
            log(f"round {r + 1}/{args.rounds}: {c:14s} {res['images_per_s']:12.0f} images/s")
    med = {c: {"images_per_s": statistics.median(x["images_per_s"] for x in runs[c]),
               "first_batch_ms": statistics.median(x["first_batch_ms"] for x in runs[c]),
               "peak_rss_bytes": max(x["peak_rss_bytes"] for x in runs[c]),
               "worker_peak_rss_bytes": max(x["worker_peak_rss_bytes"] for x in runs[c]),
               "all_images_per_s": [x["images_per_s"] for x in runs[c]]} for c in configs}
    ratios = {}
    loaders = [c for c in configs if c.startswith("dataloader")]
    if loaders:
        best = max(loaders, key=lambda c: med[c]["images_per_s"])
        for c in ("sluice-python", "sluice-torch"):
            if c in med:
                ratios[f"{c} / best DataLoader ({best})"] = (
                    med[c]["images_per_s"] / med[best]["images_per_s"])
    if "c-api" in med:
        for c in ("sluice-python", "sluice-torch"):
            if c in med:
                ratios[f"{c} / c-api"] = med[c]["images_per_s"] / med["c-api"]["images_per_s"]
    if args.json:
        print(json.dumps({"workers": args.workers, "rounds": args.rounds, "medians": med,
                          "ratios": ratios}))
        return 0
    print(f"one epoch of the seeds' MNIST pipeline (60000 images, 1875 batches of 32), "
          f"sluice with {args.workers} workers per map; medians of {args.rounds} rounds of "
          f"{args.epochs} epochs ({args.loader_epochs} for the DataLoader) per process")
    print(f"{'configuration':16s} {'images/s':>12s} {'first batch':>12s} {'peak RSS':>10s}  "
          f"all images/s")
    for c in configs:
        m = med[c]
        rss = f"{m['peak_rss_bytes'] / 1e6:.0f} MB"
        if m["worker_peak_rss_bytes"] and c.startswith("dataloader") and c != "dataloader-0":
            rss += f" + workers of {m['worker_peak_rss_bytes'] / 1e6:.0f} MB"
        print(f"{c:16s} {m['images_per_s']:12.0f} {m['first_batch_ms']:9.1f} ms {rss:>10s}  "
              + " ".join(f"{x:.0f}" for x in m["all_images_per_s"]))
    for k, v in ratios.items():
        goal = 15 if "DataLoader" in k else 0.9
        print(f"{k}: {v:.2f}x (target >= {goal}x: {'met' if v >= goal else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
