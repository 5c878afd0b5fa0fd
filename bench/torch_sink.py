#!/usr/bin/python3
"""PyTorch peer benchmark for `sluice bench sink`.

Trains LeNet5 end to end in PyTorch -- the model, initialisation, loss and
optimizer of bench/torch_train.py (imported from it): the seeds' LeNet5,
CrossEntropyLoss, SGD lr 0.01 momentum 0.9, batch 32 -- fed from
Fashion-MNIST train (--data, read with bench/idx.py) through the seeds'
preprocessing (resize 28->32 bilinear, align_corners=False, no antialias;
x/255; (x-0.1307)/0.3081; labels int64), in every reasonable configuration,
reports the best, and compares it with sluice's sinking executor.

Configurations (ids for --configs; each run in a fresh subprocess, as
OPENBLAS_NUM_THREADS only takes effect before torch is loaded):
  dl<W>-t<T>-<B>   (a) a standard DataLoader over a map-style Dataset that
                   preprocesses one sample per __getitem__ (tensor ops on a
                   (1,1,28,28) sample), shuffle=True, batch_size 32,
                   drop_last=True, default collate, num_workers W = 0 or 2
                   (persistent_workers=True when W > 0; PyTorch runs each
                   worker with 1 torch thread)
  vec-t<T>-<B>     (b) torch_train.py's hand-vectorised pipeline: a
                   BatchSampler over a RandomSampler hands 32 indices to a
                   Dataset that gathers them and transforms the batch with one
                   F.interpolate; DataLoader(batch_size=None), num_workers=0
  T = torch threads 1 or 2 (torch.set_num_threads; interop threads 1)
  B = pin: OPENBLAS_NUM_THREADS=1, or unpin: the caller's environment minus
      OPENBLAS_NUM_THREADS (OpenBLAS picks its own count, shown as "BLAS")
That is 12 configurations ("all"); the default set ("default") is these 9:
      dl0-t1-pin dl0-t2-pin dl0-t2-unpin dl2-t1-pin dl2-t2-pin
      vec-t1-pin vec-t1-unpin vec-t2-pin vec-t2-unpin
i.e. the vectorised pipeline in all 4 thread settings, and the DataLoader
in those that can win: 1 and 2 torch threads pinned, 2 unpinned, with 0
workers; with 2 workers (which take both cores) the trainer on 1 or 2
threads, OpenBLAS pinned.  Left out, as they only add threads to an
oversubscribed machine: dl0-t1-unpin, dl2-t1-unpin, dl2-t2-unpin.
Each configuration takes about 20 s at 1875 steps on an idle 2-core
machine, so one round of the default set is about 3 minutes (sluice's
five runs add ~20 s) and the default 3 rounds about 10 minutes; more on
shared cores.  For a quick look: --repeats 1 --steps 300.  --configs takes a comma list of ids,
shell-style patterns ("dl*", "*-pin"), "default" and "all".

Each run: load the dataset (gunzip + parse; timed apart and not counted);
--warmup training steps on a fixed random batch with a throw-away model plus
one pass of the preprocessing on a few samples (untimed; warms the allocator,
thread pools and kernels); then a fresh model trains --steps steps, timed
from creating the DataLoader iterator (worker start-up included) to the last
optimizer step.  A step is zero_grad(set_to_none=True), forward, loss,
backward, opt.step().  samples/s = steps * 32 / that time.  Epochs follow
each other if --steps exceeds one (1875 steps at batch 32).

Rounds: --repeats rounds, each running every configuration once and then
(with --sluice PATH) `PATH bench sink --json --devices cpu:0 --steps N
--repeats 1` once, so machine noise hits both alike; medians per
configuration across rounds.  The best PyTorch configuration is the one with
the highest median.  From sluice it reports the medians (cpu:0) of
sink_full (sink_size -1), sink_1000, nonsink, compute_only and data_only
samples/s, the hidden fraction h of sink_size -1 (each round's own, from
its runs; rounds the bench flags as noise are left out) or, from an older
sluice, the overlap efficiency, and the ratio
    sluice sink (sink_size -1) / best PyTorch end to end   (goal >= 2.5x)
plus the same ratio for sink_1000 and nonsink.

Exit status: 0; 1 if a torch or sluice run fails (its stderr is printed);
2 for usage errors.  --json prints one JSON object instead of the table:
  batch, steps, warmup, repeats, torch (version), cpus, wall_s;
  configs: list of {id, config (label), pipeline ("dataloader"|"vectorised"),
    workers, torch_threads, openblas ("pinned 1"|"unpinned"),
    openblas_threads (as OpenBLAS reported it, null if unknown),
    runs (samples/s per round), samples_per_s (median), ms_per_step,
    load_ms, loss_first50, loss_last50 (medians), best (bool)};
  best: {id, config, samples_per_s};
  sluice: null, or {cmd (list), runs (per round: {name: samples/s, ...,
    overlap_efficiency, hidden}), sink_full, sink_1000, nonsink, compute_only,
    data_only (median samples/s; data_only null if absent),
    overlap_efficiency (median, null if absent), hidden (median of the
    rounds that were not noise, null if none)};
  ratios: {sink_full_over_best_torch, sink_1000_over_best_torch,
    nonsink_over_best_torch} (with --sluice), goal: 2.5.
Progress goes to stderr, results to stdout.

Requires only Debian's python3-torch and python3-numpy; run with
/usr/bin/python3 (not the python3 first on PATH).
"""
import argparse, fnmatch, json, os, shlex, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_train as tt  # noqa: E402  (stdlib-only at import; torch loads in children)

BATCH, OUT_HW, MEAN, STD = tt.BATCH, tt.OUT_HW, tt.MEAN, tt.STD
DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"
GOAL = 2.5
SLUICE_NEEDED = ("sink_full", "sink_1000", "nonsink", "compute_only")
SLUICE_NAMES = SLUICE_NEEDED + ("data_only",)
log, med = tt.log, tt.med


def all_configs():
    """Every configuration, in table order."""
    out = []
    for workers in (0, 2):
        for t in (1, 2):
            for pinned in (True, False):
                out.append({"id": f"dl{workers}-t{t}-{'pin' if pinned else 'unpin'}",
                            "pipeline": "dataloader", "workers": workers,
                            "torch_threads": t, "pinned": pinned})
    for t in (1, 2):
        for pinned in (True, False):
            out.append({"id": f"vec-t{t}-{'pin' if pinned else 'unpin'}",
                        "pipeline": "vectorised", "workers": 0,
                        "torch_threads": t, "pinned": pinned})
    for c in out:
        c["openblas"] = "pinned 1" if c["pinned"] else "unpinned"
        what = (f"DataLoader per-sample, {c['workers']} worker"
                f"{'' if c['workers'] == 1 else 's'}" if c["pipeline"] == "dataloader"
                else "vectorised per batch, 0 workers")
        c["config"] = (f"{what}, torch {c['torch_threads']} thread"
                       f"{'s' if c['torch_threads'] > 1 else ''}, OpenBLAS {c['openblas']}")
    return out


DEFAULT_IDS = ("dl0-t1-pin", "dl0-t2-pin", "dl0-t2-unpin", "dl2-t1-pin", "dl2-t2-pin",
               "vec-t1-pin", "vec-t1-unpin", "vec-t2-pin", "vec-t2-unpin")


def select_configs(spec):
    """The configurations --configs names (table order), or a usage error string."""
    every = all_configs()
    ids = [c["id"] for c in every]
    want = set()
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        if item == "all":
            want.update(ids)
        elif item == "default":
            want.update(DEFAULT_IDS)
        else:
            hit = fnmatch.filter(ids, item)
            if not hit:
                return f"--configs: {item!r} matches no configuration (ids: {', '.join(ids)})"
            want.update(hit)
    if not want:
        return "--configs: no configuration selected"
    return [c for c in every if c["id"] in want]


# ================================================================ child side
def child_main(spec):
    import torch
    import torch.nn.functional as F
    from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler
    from idx import read_idx

    torch.set_num_interop_threads(1)
    torch.set_num_threads(spec["threads"])
    torch.manual_seed(spec["seed"])
    info = {"torch": torch.__version__, "torch_threads": torch.get_num_threads(),
            "openblas_threads": tt.openblas_threads(),
            "openblas_env": os.environ.get("OPENBLAS_NUM_THREADS")}

    t0 = time.perf_counter()
    imgs = read_idx(os.path.join(spec["data"], "train-images-idx3-ubyte"), 0x803)
    labs = read_idx(os.path.join(spec["data"], "train-labels-idx1-ubyte"), 0x801)
    if len(imgs) != len(labs) or len(imgs) < BATCH:
        raise ValueError(f"{spec['data']}: {len(imgs)} images, {len(labs)} labels")
    imgs = torch.from_numpy(imgs.copy())                     # (N,28,28) uint8
    labs = torch.from_numpy(labs.copy()).to(torch.int64)
    load_ms = (time.perf_counter() - t0) * 1e3

    def transform(u8):
        """(n,28,28) uint8 -> (n,1,32,32) float32: the seeds' preprocessing."""
        x = u8.unsqueeze(1).to(torch.float32)
        x = F.interpolate(x, size=OUT_HW, mode="bilinear", align_corners=False,
                          antialias=False)
        return x.mul_(1.0 / 255).sub_(MEAN).div_(STD)

    class PerSample(Dataset):
        """(a) map-style: one sample per __getitem__."""
        def __len__(self):
            return len(imgs)

        def __getitem__(self, i):
            return transform(imgs[i:i + 1])[0], labs[i]      # (1,32,32), int64

    class Batched(Dataset):
        """(b) as torch_train.py: indexed by a list of 32 indices."""
        def __len__(self):
            return len(imgs)

        def __getitem__(self, idx):
            idx = torch.as_tensor(idx)
            return transform(imgs[idx]), labs[idx]

    gen = torch.Generator().manual_seed(spec["seed"])
    if spec["pipeline"] == "dataloader":
        ds = PerSample()
        w = spec["workers"]

        def make_loader():
            return DataLoader(ds, batch_size=BATCH, shuffle=True, drop_last=True,
                              num_workers=w, persistent_workers=w > 0, generator=gen)
    else:
        ds = Batched()
        sampler = BatchSampler(RandomSampler(ds, generator=gen), BATCH, drop_last=True)

        def make_loader():
            return DataLoader(ds, batch_size=None, sampler=sampler, num_workers=0)

    def train(net, opt, loss_fn, batches, n, keep=None):
        for _ in range(n):
            x, y = next(batches)
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
            if keep is not None:
                keep.append(loss.detach())

    def repeat(x, y):
        while True:
            yield x, y

    # Untimed warm-up: training steps on a random batch with a throw-away
    # model, and the preprocessing on a few samples (both shapes used).
    wnet, wopt, wloss = tt.make_net(torch)
    train(wnet, wopt, wloss, repeat(torch.randn(BATCH, 1, *OUT_HW),
                                    torch.randint(0, 10, (BATCH,))), spec["warmup"])
    del wnet, wopt
    for i in range(4):
        PerSample()[i]
        Batched()[list(range(i * BATCH, (i + 1) * BATCH))]

    net, opt, loss_fn = tt.make_net(torch)
    losses = []
    holder = {}

    def batches():                     # epochs back to back if steps > 1 epoch
        loader = holder["loader"] = make_loader()
        while True:
            yield from loader          # persistent workers survive the epochs

    t0 = time.perf_counter()
    train(net, opt, loss_fn, batches(), spec["steps"], keep=losses)
    wall = time.perf_counter() - t0
    holder.clear()
    losses = torch.stack(losses)
    k = min(50, len(losses))
    info.update(samples_per_s=spec["steps"] * BATCH / wall, wall_s=wall,
                ms_per_step=wall * 1e3 / spec["steps"], load_ms=load_ms,
                loss_first50=losses[:k].mean().item(), loss_last50=losses[-k:].mean().item())
    return info


# ================================================================ parent side
def run_child(spec, pinned, what):
    """Runs this script in child mode (torch_train.py's runner)."""
    return tt.run_child(spec, pinned, what, script=os.path.abspath(__file__))


def parse_sluice(stdout):
    """{name: samples/s for cpu:0, ..., overlap_efficiency}, or None if unusable."""
    out = tt.last_json(stdout)
    if not isinstance(out, dict) or not isinstance(out.get("runs"), list):
        return None
    res = {}
    for r in out["runs"]:
        if (isinstance(r, dict) and r.get("device") == "cpu:0"
                and r.get("name") in SLUICE_NAMES
                and isinstance(r.get("samples_per_s"), (int, float))
                and not isinstance(r.get("samples_per_s"), bool)):
            res[r["name"]] = float(r["samples_per_s"])
    if not all(k in res for k in SLUICE_NEEDED):
        return None
    oe = (out.get("overlap_by_device") or {}).get("cpu:0", out.get("overlap_efficiency"))
    res["overlap_efficiency"] = float(oe) if isinstance(oe, (int, float)) else None
    # the hidden fraction of this one round (null when the bench flagged it as noise)
    h = (((out.get("hidden_by_device") or {}).get("cpu:0") or {}).get("sink_full") or {}).get("median")
    res["hidden"] = float(h) if isinstance(h, (int, float)) and not isinstance(h, bool) else None
    res["hidden_noise"] = res["hidden"] is None and "hidden_by_device" in out
    return res


def run_sluice(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    except (OSError, subprocess.TimeoutExpired) as e:
        log(f"error: could not run sluice: {e}")
        sys.exit(1)
    res = parse_sluice(p.stdout) if p.returncode == 0 else None
    if res is None:
        why = (f"exited {p.returncode}" if p.returncode != 0 else
               "printed no JSON object with cpu:0 samples_per_s for "
               + ", ".join(SLUICE_NEEDED))
        log(f"error: sluice {why}; its stderr:")
        log(p.stderr.rstrip() or "(empty)")
        if p.returncode == 0:
            log("its stdout:\n" + (p.stdout.rstrip() or "(empty)"))
        sys.exit(1)
    return res


def main():
    ap = argparse.ArgumentParser(
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="PyTorch peer for `sluice bench sink`: LeNet5 (the seeds' "
        "definition, as bench/torch_train.py)\ntrained end to end on Fashion-MNIST "
        "in PyTorch in several configurations; the best\nis compared with sluice's "
        "data sinking (sink_size -1).",
        epilog="configurations (--configs ids; default marked *):\n" + "\n".join(
            f"  {'*' if c['id'] in DEFAULT_IDS else ' '} {c['id']:<14}{c['config']}"
            for c in all_configs())
        + "\n\nA default run (9 configurations + sluice, 3 rounds of 1875 steps) takes "
        "about\n10 minutes on an idle 2-core machine, ~3 per round; for a quick look\n"
        "use --repeats 1 --steps 300.  The module docstring gives the exact\n"
        "conventions and the JSON keys.")
    ap.add_argument("--steps", type=int, default=1875,
                    help="timed steps per run, torch and sluice alike (default "
                    "%(default)s: one epoch of Fashion-MNIST train at batch 32)")
    ap.add_argument("--warmup", type=int, default=100,
                    help="untimed warm-up steps per torch run (default %(default)s)")
    ap.add_argument("--repeats", type=int, default=3, metavar="R",
                    help="interleaved rounds; medians reported (default %(default)s)")
    ap.add_argument("--configs", default="default", metavar="LIST",
                    help="comma list of configuration ids or patterns, 'default' "
                    "or 'all' (default %(default)s)")
    ap.add_argument("--data", metavar="DIR",
                    help="directory with train-{images-idx3,labels-idx1}-ubyte[.gz] "
                    f"(default {DEFAULT_DATA}; passed on to sluice when given)")
    ap.add_argument("--sluice", metavar="PATH",
                    help="also run `PATH bench sink --json --devices cpu:0 --steps N "
                    "--repeats 1` once per round and print the ratios")
    ap.add_argument("--sluice-args", default="", metavar='"ARGS"',
                    help="extra arguments for sluice (split with shlex)")
    ap.add_argument("--seed", type=int, default=1, help="torch seed (default %(default)s)")
    ap.add_argument("--json", action="store_true",
                    help="print one JSON object (keys in the docstring) instead of the table")
    ap.add_argument("--_child", help=argparse.SUPPRESS)
    a = ap.parse_args()

    if a._child is not None:                  # internal: one measurement
        print(json.dumps(child_main(json.loads(a._child))), flush=True)
        return 0

    if a.repeats < 1 or a.steps < 1 or a.warmup < 0:
        ap.error("--repeats and --steps must be >= 1, --warmup >= 0")
    configs = select_configs(a.configs)
    if isinstance(configs, str):
        ap.error(configs)
    try:
        extra = shlex.split(a.sluice_args)
    except ValueError as e:
        ap.error(f"--sluice-args: {e}")
    if extra and not a.sluice:
        ap.error("--sluice-args needs --sluice")
    if a.sluice and not (os.path.isfile(a.sluice) and os.access(a.sluice, os.X_OK)):
        ap.error(f"--sluice {a.sluice}: not an executable file")
    data = a.data or DEFAULT_DATA
    for f in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"):
        p = os.path.join(data, f)
        if not (os.path.exists(p) or os.path.exists(p + ".gz")):
            ap.error(f"--data {data}: no {f}[.gz]")
    for v in ("OMP_NUM_THREADS", "GOTO_NUM_THREADS"):
        if v in os.environ:
            log(f"note: {v}={os.environ[v]} is set and also limits OpenBLAS in "
                "the unpinned runs")

    sluice_cmd = None
    if a.sluice:
        sluice_cmd = [a.sluice, "bench", "sink", "--json", "--devices", "cpu:0",
                      "--steps", str(a.steps), "--repeats", "1"]
        if a.data:
            sluice_cmd += ["--data", a.data]
        sluice_cmd += extra
    sluice_runs = []
    for c in configs:
        c["results"] = []

    t_start = time.perf_counter()
    log(f"{len(configs)} torch configuration{'s' if len(configs) > 1 else ''}"
        f"{' + sluice' if sluice_cmd else ''} x {a.repeats} round"
        f"{'s' if a.repeats > 1 else ''}; {a.warmup} warm-up + {a.steps} timed steps each")
    for r in range(1, a.repeats + 1):
        for c in configs:
            spec = {"pipeline": c["pipeline"], "workers": c["workers"],
                    "threads": c["torch_threads"], "steps": a.steps,
                    "warmup": a.warmup, "seed": a.seed, "data": os.path.abspath(data)}
            res = run_child(spec, c["pinned"], c["id"])
            c["results"].append(res)
            log(f"  round {r}: {c['id']:<13} {res['samples_per_s']:>8,.0f} samples/s "
                f"(BLAS {res['openblas_threads']}, load {res['load_ms']:.0f} ms not "
                f"counted, loss {res['loss_first50']:.3f} -> {res['loss_last50']:.3f})")
        if sluice_cmd:
            log("  round {}: {}".format(r, " ".join(map(shlex.quote, sluice_cmd))))
            sluice_runs.append(run_sluice(sluice_cmd))
            log(f"  round {r}: sluice " + ", ".join(
                f"{k} {v:,.0f}" for k, v in sluice_runs[-1].items()
                if k not in ("overlap_efficiency", "hidden", "hidden_noise") and v is not None))

    torch_version = configs[0]["results"][0]["torch"]
    out = []
    for c in configs:
        rs = c["results"]
        out.append({"id": c["id"], "config": c["config"], "pipeline": c["pipeline"],
                    "workers": c["workers"], "torch_threads": c["torch_threads"],
                    "openblas": c["openblas"],
                    "openblas_threads": rs[0]["openblas_threads"],
                    "runs": [x["samples_per_s"] for x in rs],
                    "samples_per_s": med(x["samples_per_s"] for x in rs),
                    "ms_per_step": med(x["ms_per_step"] for x in rs),
                    "load_ms": med(x["load_ms"] for x in rs),
                    "loss_first50": med(x["loss_first50"] for x in rs),
                    "loss_last50": med(x["loss_last50"] for x in rs),
                    "best": False})
    best = max(out, key=lambda c: c["samples_per_s"])
    best["best"] = True

    sluice, ratios = None, {}
    if sluice_cmd:
        sluice = {"cmd": sluice_cmd, "runs": sluice_runs}
        for k in SLUICE_NAMES + ("overlap_efficiency", "hidden"):
            vals = [x[k] for x in sluice_runs if x.get(k) is not None]
            sluice[k] = med(vals) if vals else None
        for k in ("sink_full", "sink_1000", "nonsink"):
            ratios[f"{k}_over_best_torch"] = sluice[k] / best["samples_per_s"]
    wall = time.perf_counter() - t_start

    if a.json:
        print(json.dumps({"batch": BATCH, "steps": a.steps, "warmup": a.warmup,
                          "repeats": a.repeats, "torch": torch_version,
                          "cpus": os.cpu_count(), "wall_s": wall, "configs": out,
                          "best": {"id": best["id"], "config": best["config"],
                                   "samples_per_s": best["samples_per_s"]},
                          "sluice": sluice, "ratios": ratios, "goal": GOAL}, indent=2))
        return 0

    R = a.repeats
    runs_hdr = "".join(f"{'run ' + str(i + 1):>10}" for i in range(R))
    print(f"LeNet5 (seeds) end to end on Fashion-MNIST train, batch {BATCH}, SGD lr "
          f"{tt.LR} momentum {tt.MOMENTUM}; torch {torch_version}, {os.cpu_count()} CPUs")
    print(f"{a.warmup} warm-up + {a.steps} timed steps per run (iterator creation to "
          f"last optimizer step; dataset load of ~{med(c['load_ms'] for c in out):.0f} ms "
          f"not counted), {R} interleaved round{'s' if R > 1 else ''}; samples/s")
    print(f"  {'configuration':<14}{'BLAS':>5}{runs_hdr}{'median':>10}{'ms/step':>9}")
    for c in out:
        blas = "?" if c["openblas_threads"] is None else str(c["openblas_threads"])
        print(f"{'*' if c['best'] else ' '} {c['id']:<14}{blas:>5}"
              + "".join(f"{x:>10,.0f}" for x in c["runs"])
              + f"{c['samples_per_s']:>10,.0f}{c['ms_per_step']:>9.3f}")
    print(f"* best PyTorch end to end: {best['id']} = {best['config']} "
          f"({best['samples_per_s']:,.0f} samples/s)")
    if sluice:
        print("\nsluice: " + " ".join(map(shlex.quote, sluice_cmd)))
        labels = {"sink_full": "sink, sink_size -1", "sink_1000": "sink, sink_size 1000",
                  "nonsink": "non-sink", "compute_only": "compute only",
                  "data_only": "data only (no step)"}
        for k in SLUICE_NAMES:
            if sluice[k] is None:
                continue
            print(f"  {k:<14}{'':>5}"
                  + "".join(f"{x.get(k, float('nan')):>10,.0f}" for x in sluice_runs)
                  + f"{sluice[k]:>10,.0f}   {labels[k]}")
        if sluice["overlap_efficiency"] is not None:
            print(f"  overlap efficiency (median) {sluice['overlap_efficiency']:.3f}")
        kept = sum(1 for x in sluice_runs if x.get("hidden") is not None)
        if sluice["hidden"] is not None:
            print(f"  hidden fraction h of sink, sink_size -1 (median of {kept} of "
                  f"{len(sluice_runs)} rounds; the others noise): {sluice['hidden']:.2f}")
        elif any(x.get("hidden_noise") for x in sluice_runs):
            print("  hidden fraction h of sink, sink_size -1: noise in every round")
        r = ratios["sink_full_over_best_torch"]
        print(f"\nsluice sink (sink_size -1) / best PyTorch end to end: {r:.2f}x "
              f"(goal >= {GOAL}x: {'met' if r >= GOAL else 'NOT met'})")
        print(f"sluice sink (sink_size 1000) / best PyTorch end to end: "
              f"{ratios['sink_1000_over_best_torch']:.2f}x")
        print(f"sluice non-sink / best PyTorch end to end: "
              f"{ratios['nonsink_over_best_torch']:.2f}x")
    print(f"\nbenchmarks took {wall:.1f} s")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        log("interrupted")
        sys.exit(130)
