#!/usr/bin/python3
"""PyTorch peer benchmark for `sluice bench train`.

Trains LeNet5 as MindSpore's seeds define it, in PyTorch, and measures
training throughput in samples/s:

    input (N,1,32,32); conv 1->6 5x5 valid, no bias; ReLU; maxpool 2/2;
    conv 6->16 5x5 valid, no bias; ReLU; maxpool 2/2; flatten 400;
    dense 400->120 ReLU; 120->84 ReLU; 84->10
    every weight and bias ~ normal(0, 0.02) truncated at +-2 sigma
    (trunc_normal_(std=0.02, a=-0.04, b=0.04)); CrossEntropyLoss (mean);
    SGD lr 0.01 momentum 0.9 (dampening 0, no Nesterov: PyTorch's
    buf = momentum*buf + grad; w -= lr*buf equals MindSpore's Momentum);
    batch 32

A step is zero_grad(set_to_none=True), forward, loss, backward, opt.step().

compute-only (headline): one fixed random batch (x float32 (32,1,32,32) from
randn, labels int64 in [0,10)) reused for every step; --warmup steps untimed,
then samples/s = --steps * 32 / wall time of those steps.  Four
configurations, each in its own fresh subprocess (OPENBLAS_NUM_THREADS only
takes effect if set before torch, hence OpenBLAS, is loaded):
    torch 1 or 2 threads (torch.set_num_threads; set_num_interop_threads(1))
  x OpenBLAS pinned 1 (OPENBLAS_NUM_THREADS=1) or unpinned (the caller's
    environment minus any OPENBLAS_NUM_THREADS; OpenBLAS then picks its own
    count, shown in the "BLAS" column as openblas_get_num_threads() reports).
The set of configurations is run --repeats rounds, interleaved round by round
(round 1 runs every configuration once, then round 2, ...) so machine noise
hits all alike; every run is printed plus the median per configuration, and
the best configuration is the one with the highest median.

end-to-end (skip with --no-e2e): in the best configuration, --e2e-steps steps
fed by a torch DataLoader (num_workers=0, in the training process) over
Fashion-MNIST train (--data, read with bench/idx.py) doing the seeds'
preprocessing vectorised per batch: a BatchSampler over a RandomSampler
(shuffle, batch 32, drop_last) hands 32 indices to the dataset, which gathers
them and does resize 28->32 bilinear (F.interpolate, align_corners=False, no
antialias; no uint8 rounding as OpenCV would do), x/255, (x-0.1307)/0.3081;
labels int64.  Timed from creating the DataLoader iterator to the last
optimizer step; dataset load (gunzip + parse) is timed separately and not
counted; --warmup steps on a random batch with a throw-away model come first,
untimed.  Run --repeats times after the compute-only rounds (median shown);
the mean loss of the first and last 50 steps is shown as a sanity check.

With --sluice PATH it also runs `PATH bench train --json [--sluice-args]` once
per round, after that round's torch runs.  sluice must print one JSON object
with (at least) the numbers compute_graph_samples_per_s,
compute_pynative_samples_per_s and end_to_end_samples_per_s; their medians are
reported with the ratios
    sluice compute_graph median / best torch compute-only median
    sluice end_to_end median / torch end-to-end median (unless --no-e2e).
With --inference it also times LeNet5's forward pass over the whole test
split (t10k), batch 256, each batch gathered, resized and normalized as
sluice's pipeline does it, eval mode and no_grad, in the best configuration
(median of 3 passes after one untimed, per round); with --sluice, each
round also runs `PATH bench eval --json` and the ratio
    sluice inference_images_per_s median / torch inference median
is reported.
A failing sluice run (or one printing no usable JSON) prints its stderr and
exits 1; so does a failing torch subprocess.  Usage errors exit 2.

--json prints one JSON object instead of the table, with keys:
  batch, steps, warmup, repeats, torch (version), cpus, wall_s;
  configs: list of {config (label), torch_threads, openblas ("pinned 1" or
    "unpinned"), openblas_threads (as OpenBLAS reported it, null if unknown),
    runs (samples/s per round), samples_per_s (median), loss_first, loss_last
    (fixed-batch loss at the first timed and last step, median)};
  best_config, best_samples_per_s;
  e2e: null, or {config, steps, runs, samples_per_s (median), load_ms,
    loss_first50, loss_last50 (medians)};
  sluice: null, or {cmd (list), runs (list of the three numbers per round),
    compute_graph_samples_per_s, compute_pynative_samples_per_s,
    end_to_end_samples_per_s (medians)};
  ratios: {sluice_graph_over_torch_compute, sluice_e2e_over_torch_e2e}
    (only those that could be computed);
  inference: null, or {config, batch, torch_runs, torch_images_per_s, and
    with --sluice sluice_runs, sluice_images_per_s, sluice_over_torch}.
Progress goes to stderr, results to stdout.

Requires only Debian's python3-torch and python3-numpy; run with
/usr/bin/python3 (not the python3 first on PATH).
"""
import argparse, json, os, shlex, statistics, subprocess, sys, time

BATCH, OUT_HW = 32, (32, 32)
INFER_BATCH = 256  # inference: as `sluice bench eval`
MEAN, STD = 0.1307, 0.3081
LR, MOMENTUM = 0.01, 0.9
THREADS = (1, 2)
HERE = os.path.dirname(os.path.abspath(__file__))
SLUICE_KEYS = ("compute_graph_samples_per_s", "compute_pynative_samples_per_s",
               "end_to_end_samples_per_s")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ================================================================ child side
# Everything below up to the parent side runs in a subprocess whose
# environment the parent has set up; torch is imported only here.

def make_net(torch):
    nn, F = torch.nn, torch.nn.functional

    class LeNet5(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 5, bias=False)    # valid padding
            self.conv2 = nn.Conv2d(6, 16, 5, bias=False)
            self.fc1 = nn.Linear(16 * 5 * 5, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)
            for p in self.parameters():                    # weights and biases
                nn.init.trunc_normal_(p, mean=0.0, std=0.02, a=-0.04, b=0.04)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), 2, 2)  # (N,6,14,14)
            x = F.max_pool2d(F.relu(self.conv2(x)), 2, 2)  # (N,16,5,5)
            x = torch.flatten(x, 1)                        # (N,400)
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            return self.fc3(x)

    net = LeNet5()
    opt = torch.optim.SGD(net.parameters(), lr=LR, momentum=MOMENTUM,
                          dampening=0, nesterov=False)
    return net, opt, nn.CrossEntropyLoss()


def openblas_threads():
    """Threads the loaded OpenBLAS will use, or None if it cannot be asked."""
    import ctypes
    for name in ("libopenblas.so.0", "libopenblas.so"):
        try:
            return int(ctypes.CDLL(name).openblas_get_num_threads())
        except (OSError, AttributeError):
            pass
    return None


def child_main(spec):
    import torch
    torch.set_num_interop_threads(1)      # before any inter-op work starts
    torch.set_num_threads(spec["threads"])
    torch.manual_seed(spec["seed"])
    info = {"torch": torch.__version__, "torch_threads": torch.get_num_threads(),
            "interop_threads": torch.get_num_interop_threads(),
            "openblas_threads": openblas_threads(),
            "openblas_env": os.environ.get("OPENBLAS_NUM_THREADS")}

    def train(net, opt, loss_fn, batches, n, keep=None):
        """n steps over the iterator batches; returns the detached losses
        if keep, else (first, last) loss tensors."""
        first = loss = None
        for _ in range(n):
            x, y = next(batches)
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
            if keep is not None:
                keep.append(loss.detach())
            elif first is None:
                first = loss.detach()
        return first, loss

    def repeat(x, y):
        while True:
            yield x, y

    x = torch.randn(BATCH, 1, *OUT_HW)
    y = torch.randint(0, 10, (BATCH,), dtype=torch.int64)

    if spec["mode"] == "compute":
        net, opt, loss_fn = make_net(torch)
        it = repeat(x, y)
        train(net, opt, loss_fn, it, spec["warmup"])
        t0 = time.perf_counter()
        first, last = train(net, opt, loss_fn, it, spec["steps"])
        wall = time.perf_counter() - t0
        info.update(samples_per_s=spec["steps"] * BATCH / wall, wall_s=wall,
                    loss_first=first.item(), loss_last=last.item())
        return info

    if spec["mode"] == "inference":
        return inference(torch, spec, info)

    # ---- end-to-end
    import torch.nn.functional as F
    from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler
    sys.path.insert(0, HERE)
    from idx import read_idx

    t0 = time.perf_counter()
    imgs = read_idx(os.path.join(spec["data"], "train-images-idx3-ubyte.gz"), 0x803)
    labs = read_idx(os.path.join(spec["data"], "train-labels-idx1-ubyte.gz"), 0x801)
    if len(imgs) != len(labs) or len(imgs) < BATCH:
        raise ValueError(f"{spec['data']}: {len(imgs)} images, {len(labs)} labels")
    imgs = torch.from_numpy(imgs.copy())                     # (N,28,28) uint8
    labs = torch.from_numpy(labs.copy()).to(torch.int64)
    load_ms = (time.perf_counter() - t0) * 1e3

    class BatchedFashionMNIST(Dataset):
        """Indexed by a list of 32 indices: gather, then transform the batch."""
        def __len__(self):
            return len(imgs)

        def __getitem__(self, idx):
            idx = torch.as_tensor(idx)
            b = imgs[idx].unsqueeze(1).to(torch.float32)     # (32,1,28,28)
            b = F.interpolate(b, size=OUT_HW, mode="bilinear",
                              align_corners=False, antialias=False)
            b = b.mul_(1.0 / 255).sub_(MEAN).div_(STD)
            return b, labs[idx]

    ds = BatchedFashionMNIST()
    gen = torch.Generator().manual_seed(spec["seed"])
    sampler = BatchSampler(RandomSampler(ds, generator=gen), BATCH, drop_last=True)

    def batches():                     # epochs back to back if steps > 1 epoch
        while True:
            yield from DataLoader(ds, batch_size=None, sampler=sampler, num_workers=0)

    # Warm up (allocator, thread pools, kernels) on a throw-away model so the
    # timed model starts from its initialisation.
    wnet, wopt, wloss = make_net(torch)
    train(wnet, wopt, wloss, repeat(x, y), spec["warmup"])
    del wnet, wopt
    net, opt, loss_fn = make_net(torch)
    losses = []
    t0 = time.perf_counter()
    train(net, opt, loss_fn, batches(), spec["steps"], keep=losses)
    wall = time.perf_counter() - t0
    losses = torch.stack(losses)
    k = min(50, len(losses))
    info.update(samples_per_s=spec["steps"] * BATCH / wall, wall_s=wall, load_ms=load_ms,
                loss_first50=losses[:k].mean().item(), loss_last50=losses[-k:].mean().item())
    return info


def inference(torch, spec, info):
    """Images/s of LeNet5's forward pass over the whole test split, batch
    INFER_BATCH, each batch gathered, resized and normalized as sluice's
    pipeline does it (the IDX read is not counted); eval mode, no_grad; the
    median of spec["passes"] passes after one untimed pass."""
    import torch.nn.functional as F
    sys.path.insert(0, HERE)
    from idx import read_idx
    imgs = read_idx(os.path.join(spec["data"], "t10k-images-idx3-ubyte.gz"), 0x803)
    imgs = torch.from_numpy(imgs.copy())
    net, _, _ = make_net(torch)
    net.eval()
    rates = []
    with torch.no_grad():
        for p in range(spec["passes"] + 1):
            t0 = time.perf_counter()
            for i in range(0, len(imgs), INFER_BATCH):
                b = imgs[i:i + INFER_BATCH].unsqueeze(1).to(torch.float32)
                b = F.interpolate(b, size=OUT_HW, mode="bilinear", align_corners=False,
                                  antialias=False)
                b = b.mul_(1.0 / 255).sub_(MEAN).div_(STD)
                net(b).argmax(1)
            if p > 0:
                rates.append(len(imgs) / (time.perf_counter() - t0))
    info.update(images_per_s=statistics.median(rates), images=len(imgs))
    return info


# ================================================================ parent side
def config_label(threads, pinned):
    return (f"torch {threads} thread{'s' if threads > 1 else ''}, OpenBLAS "
            + ("pinned 1" if pinned else "unpinned"))


def child_env(pinned):
    env = dict(os.environ)
    env.pop("OPENBLAS_NUM_THREADS", None)
    if pinned:
        env["OPENBLAS_NUM_THREADS"] = "1"
    return env


def run_child(spec, pinned, what, script=None):
    """Runs script (default: this one) in child mode; returns its result dict
    or exits 1."""
    cmd = [sys.executable, script or os.path.abspath(__file__), "--_child", json.dumps(spec)]
    try:
        p = subprocess.run(cmd, env=child_env(pinned), capture_output=True,
                           text=True, timeout=3600)
    except (OSError, subprocess.TimeoutExpired) as e:
        log(f"error: {what}: could not run the torch subprocess: {e}")
        sys.exit(1)
    if p.returncode != 0:
        log(f"error: {what}: torch subprocess exited {p.returncode}; its stderr:")
        log(p.stderr.rstrip())
        sys.exit(1)
    for line in p.stderr.splitlines():           # e.g. torch warnings
        log(f"    [{what}] {line}")
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        log(f"error: {what}: torch subprocess printed no result:\n{p.stdout}")
        sys.exit(1)


def last_json(stdout):
    """The JSON object sluice printed, tolerating chatter before it (the last
    line that parses), or None."""
    try:
        return json.loads(stdout)
    except ValueError:
        for line in reversed(stdout.splitlines()):
            if line.strip().startswith("{"):
                try:
                    return json.loads(line)
                except ValueError:
                    pass
    return None


def parse_sluice(stdout):
    """The sluice JSON object's three figures, or None if unusable."""
    out = last_json(stdout)
    if not isinstance(out, dict):
        return None
    vals = {k: out.get(k) for k in SLUICE_KEYS}
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool)
               for v in vals.values()):
        return None
    return {k: float(v) for k, v in vals.items()}


def run_sluice(cmd):
    """One sluice run: its three figures, or print why not and exit 1."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    except (OSError, subprocess.TimeoutExpired) as e:
        log(f"error: could not run sluice: {e}")
        sys.exit(1)
    res = parse_sluice(p.stdout) if p.returncode == 0 else None
    if res is None:
        why = (f"exited {p.returncode}" if p.returncode != 0 else
               "printed no JSON object with numeric " + ", ".join(SLUICE_KEYS))
        log(f"error: sluice {why}; its stderr:")
        log(p.stderr.rstrip() or "(empty)")
        if p.returncode == 0:
            log("its stdout:\n" + (p.stdout.rstrip() or "(empty)"))
        sys.exit(1)
    return res


def med(xs):
    return statistics.median(xs)


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] + " LeNet5 (MindSpore seeds' "
        "definition) trained in PyTorch, batch 32, SGD momentum: compute-only "
        "samples/s on a fixed batch for torch 1/2 threads x OpenBLAS pinned/"
        "unpinned (each in a fresh subprocess, rounds interleaved), plus an "
        "end-to-end figure with a DataLoader over Fashion-MNIST. Read the "
        "module docstring for the exact conventions.")
    ap.add_argument("--steps", type=int, default=2000,
                    help="timed compute-only steps per run (default %(default)s)")
    ap.add_argument("--warmup", type=int, default=100,
                    help="untimed warm-up steps before each timed run (default %(default)s)")
    ap.add_argument("--repeats", type=int, default=3, metavar="R",
                    help="interleaved rounds; medians reported (default %(default)s)")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist", metavar="DIR",
                    help="directory with train-{images-idx3,labels-idx1}-ubyte[.gz] for "
                    "the end-to-end run (default %(default)s)")
    ap.add_argument("--e2e-steps", type=int, default=1000,
                    help="timed end-to-end steps per run (default %(default)s)")
    ap.add_argument("--no-e2e", action="store_true", help="skip the end-to-end run")
    ap.add_argument("--inference", action="store_true",
                    help="also time inference (batch 256 over the test split) in the "
                    "best configuration, against `sluice bench eval` with --sluice")
    ap.add_argument("--sluice", metavar="PATH",
                    help="also run `PATH bench train --json` once per round")
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

    if a.repeats < 1 or a.steps < 1 or a.warmup < 0 or a.e2e_steps < 1:
        ap.error("--repeats, --steps and --e2e-steps must be >= 1, --warmup >= 0")
    try:
        extra = shlex.split(a.sluice_args)
    except ValueError as e:
        ap.error(f"--sluice-args: {e}")
    if extra and not a.sluice:
        ap.error("--sluice-args needs --sluice")
    if a.sluice and not (os.path.isfile(a.sluice) and os.access(a.sluice, os.X_OK)):
        ap.error(f"--sluice {a.sluice}: not an executable file")
    if not a.no_e2e:
        for f in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"):
            p = os.path.join(a.data, f)
            if not (os.path.exists(p) or os.path.exists(p + ".gz")):
                ap.error(f"--data {a.data}: no {f}[.gz] (or pass --no-e2e)")
    for v in ("OMP_NUM_THREADS", "GOTO_NUM_THREADS"):
        if v in os.environ:
            log(f"note: {v}={os.environ[v]} is set and also limits OpenBLAS in "
                "the unpinned runs")

    configs = [{"config": config_label(t, pinned), "torch_threads": t,
                "pinned": pinned, "openblas": "pinned 1" if pinned else "unpinned",
                "results": []}
               for t in THREADS for pinned in (True, False)]
    sluice_cmd = [a.sluice, "bench", "train", "--json"] + extra if a.sluice else None
    sluice_runs = []

    t_start = time.perf_counter()
    log(f"compute-only: {len(configs)} configurations x {a.repeats} "
        f"round{'s' if a.repeats > 1 else ''}, "
        f"{a.warmup} warm-up + {a.steps} timed steps each")
    for r in range(1, a.repeats + 1):
        for c in configs:
            spec = {"mode": "compute", "threads": c["torch_threads"], "steps": a.steps,
                    "warmup": a.warmup, "seed": a.seed}
            res = run_child(spec, c["pinned"], c["config"])
            c["results"].append(res)
            log(f"  round {r}: {c['config']:<38} {res['samples_per_s']:>9,.0f} samples/s "
                f"(OpenBLAS threads {res['openblas_threads']}, loss "
                f"{res['loss_first']:.3f} -> {res['loss_last']:.3g})")
        if sluice_cmd:
            log("  round {}: running {}".format(r, " ".join(map(shlex.quote, sluice_cmd))))
            sluice_runs.append(run_sluice(sluice_cmd))
            log(f"  round {r}: sluice " + ", ".join(
                f"{k} {v:,.0f}" for k, v in sluice_runs[-1].items()))

    torch_version = configs[0]["results"][0]["torch"]
    out_configs = []
    for c in configs:
        rs = c["results"]
        out_configs.append({
            "config": c["config"], "torch_threads": c["torch_threads"],
            "openblas": c["openblas"],
            "openblas_threads": rs[0]["openblas_threads"],
            "runs": [x["samples_per_s"] for x in rs],
            "samples_per_s": med(x["samples_per_s"] for x in rs),
            "loss_first": med(x["loss_first"] for x in rs),
            "loss_last": med(x["loss_last"] for x in rs)})
    best_i = max(range(len(out_configs)), key=lambda i: out_configs[i]["samples_per_s"])
    best = out_configs[best_i]

    e2e = None
    if not a.no_e2e:
        log(f"end-to-end in the best configuration ({best['config']}): "
            f"{a.repeats} runs of {a.e2e_steps} steps")
        runs = []
        for r in range(1, a.repeats + 1):
            spec = {"mode": "e2e", "threads": best["torch_threads"], "steps": a.e2e_steps,
                    "warmup": a.warmup, "seed": a.seed, "data": os.path.abspath(a.data)}
            res = run_child(spec, configs[best_i]["pinned"], "end-to-end")
            runs.append(res)
            log(f"  run {r}: {res['samples_per_s']:>9,.0f} samples/s (load "
                f"{res['load_ms']:.0f} ms not counted; loss first 50 "
                f"{res['loss_first50']:.3f}, last 50 {res['loss_last50']:.3f})")
        e2e = {"config": best["config"], "steps": a.e2e_steps,
               "runs": [x["samples_per_s"] for x in runs],
               "samples_per_s": med(x["samples_per_s"] for x in runs),
               "load_ms": med(x["load_ms"] for x in runs),
               "loss_first50": med(x["loss_first50"] for x in runs),
               "loss_last50": med(x["loss_last50"] for x in runs)}

    infer = None
    if a.inference:
        log(f"inference in the best configuration ({best['config']}): {a.repeats} "
            "rounds" + (", each against sluice bench eval" if a.sluice else ""))
        runs, sl_runs = [], []
        for r in range(1, a.repeats + 1):
            spec = {"mode": "inference", "threads": best["torch_threads"], "passes": 3,
                    "seed": a.seed, "data": os.path.abspath(a.data)}
            res = run_child(spec, configs[best_i]["pinned"], "inference")
            runs.append(res["images_per_s"])
            log(f"  round {r}: torch {res['images_per_s']:>9,.0f} images/s")
            if a.sluice:
                cmd = [a.sluice, "bench", "eval", "--json", "--data", a.data]
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
                out = last_json(p.stdout) if p.returncode == 0 else None
                if not isinstance(out, dict) or "inference_images_per_s" not in out:
                    log(f"error: {' '.join(cmd)} failed: {p.stderr.strip()}")
                    sys.exit(1)
                sl_runs.append(float(out["inference_images_per_s"]))
                log(f"  round {r}: sluice {sl_runs[-1]:>9,.0f} images/s")
        infer = {"config": best["config"], "batch": INFER_BATCH, "torch_runs": runs,
                 "torch_images_per_s": med(runs)}
        if sl_runs:
            infer.update(sluice_runs=sl_runs, sluice_images_per_s=med(sl_runs),
                         sluice_over_torch=med(sl_runs) / med(runs))

    sluice, ratios = None, {}
    if sluice_cmd:
        sluice = {"cmd": sluice_cmd, "runs": sluice_runs}
        sluice.update({k: med(x[k] for x in sluice_runs) for k in SLUICE_KEYS})
        ratios["sluice_graph_over_torch_compute"] = \
            sluice["compute_graph_samples_per_s"] / best["samples_per_s"]
        if e2e:
            ratios["sluice_e2e_over_torch_e2e"] = \
                sluice["end_to_end_samples_per_s"] / e2e["samples_per_s"]
    wall = time.perf_counter() - t_start

    if a.json:
        print(json.dumps({"batch": BATCH, "steps": a.steps, "warmup": a.warmup,
                          "repeats": a.repeats, "torch": torch_version,
                          "cpus": os.cpu_count(), "wall_s": wall,
                          "configs": out_configs, "best_config": best["config"],
                          "best_samples_per_s": best["samples_per_s"], "e2e": e2e,
                          "sluice": sluice, "ratios": ratios, "inference": infer},
                         indent=2))
        return 0

    R = a.repeats
    name_w = 40
    runs_hdr = "".join(f"{'run ' + str(i + 1):>10}" for i in range(R))
    print(f"LeNet5 (MindSpore seeds) training, batch {BATCH}, SGD lr {LR} momentum "
          f"{MOMENTUM}; torch {torch_version}, {os.cpu_count()} CPUs")
    print(f"compute-only: one fixed random batch, {a.warmup} warm-up + {a.steps} timed "
          f"steps, {R} interleaved rounds; samples/s")
    print(f"{'configuration':<{name_w}}{'BLAS':>5}{runs_hdr}{'median':>10}")
    for c in out_configs:
        blas = "?" if c["openblas_threads"] is None else str(c["openblas_threads"])
        print(f"{c['config']:<{name_w}}{blas:>5}"
              + "".join(f"{x:>10,.0f}" for x in c["runs"])
              + f"{c['samples_per_s']:>10,.0f}")
    print(f"best: {best['config']} ({best['samples_per_s']:,.0f} samples/s)")
    if e2e:
        print(f"\nend-to-end: {best['config']}; DataLoader (num_workers=0, shuffle, "
              f"batch {BATCH} drop_last, resize/rescale/normalize per batch) + train step; "
              f"{a.e2e_steps} steps incl. iterator creation, load "
              f"{e2e['load_ms']:.0f} ms not counted")
        print(f"{'torch end-to-end':<{name_w}}{'':>5}"
              + "".join(f"{x:>10,.0f}" for x in e2e["runs"])
              + f"{e2e['samples_per_s']:>10,.0f}")
        print(f"(mean loss first 50 steps {e2e['loss_first50']:.3f}, "
              f"last 50 {e2e['loss_last50']:.3f})")
    else:
        print("\nend-to-end: skipped (--no-e2e)")
    if sluice:
        print("\nsluice: " + " ".join(map(shlex.quote, sluice_cmd)))
        for k in SLUICE_KEYS:
            print(f"{'sluice ' + k.replace('_samples_per_s', ''):<{name_w}}{'':>5}"
                  + "".join(f"{x[k]:>10,.0f}" for x in sluice_runs)
                  + f"{sluice[k]:>10,.0f}")
        print(f"{'sluice compute_graph / best torch compute-only':<56}"
              f"{ratios['sluice_graph_over_torch_compute']:>7.2f}x")
        if "sluice_e2e_over_torch_e2e" in ratios:
            print(f"{'sluice end_to_end / torch end-to-end':<56}"
                  f"{ratios['sluice_e2e_over_torch_e2e']:>7.2f}x")
        else:
            print("sluice end_to_end / torch end-to-end: no torch end-to-end (--no-e2e)")
    if infer:
        print(f"\ninference: {infer['config']}; batch {INFER_BATCH} over the test split, "
              "resize/rescale/normalize per batch, eval mode, no_grad; images/s")
        print(f"{'torch inference':<{name_w}}{'':>5}"
              + "".join(f"{x:>10,.0f}" for x in infer["torch_runs"])
              + f"{infer['torch_images_per_s']:>10,.0f}")
        if "sluice_runs" in infer:
            print(f"{'sluice bench eval':<{name_w}}{'':>5}"
                  + "".join(f"{x:>10,.0f}" for x in infer["sluice_runs"])
                  + f"{infer['sluice_images_per_s']:>10,.0f}")
            print(f"{'sluice inference / torch inference':<56}"
                  f"{infer['sluice_over_torch']:>7.2f}x")
    print(f"\nbenchmarks took {wall:.1f} s")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        log("interrupted")
        sys.exit(130)
