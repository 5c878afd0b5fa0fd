#!/usr/bin/python3
"""PyTorch DistributedDataParallel peer for `mpirun -np 2 sluice bench dist`.

Trains LeNet5 as MindSpore's seeds define it (bench/torch_train.py's make_net:
input (N,1,32,32); conv 1->6 5x5 no bias, ReLU, maxpool; conv 6->16 5x5 no
bias, ReLU, maxpool; dense 400->120->84->10; every weight and bias
trunc_normal std 0.02 at +-2 sigma; CrossEntropyLoss; SGD lr 0.01 momentum
0.9) data-parallel over --ranks processes (default 2) on the CPU:
torch.distributed, gloo, MASTER_ADDR 127.0.0.1 and a free port chosen per
round, processes spawned by this script (torch.multiprocessing, spawn).  Each
rank: torch.set_num_threads(--threads, default 1), set_num_interop_threads(1),
OPENBLAS_NUM_THREADS=1 set before torch loads (as torch_train.py's best
configurations), the same torch seed (DDP also broadcasts rank 0's weights).

Global batch --global-batch (default 64, as sluice's), global/ranks per rank
(one the ranks do not divide is a usage error).  Data: Fashion-MNIST train
(--data, read with bench/idx.py, load not timed), DistributedSampler(shuffle,
seed=--seed, drop_last) -> BatchSampler(drop_last) -> DataLoader(num_workers=0)
whose dataset gathers the batch's indices and preprocesses them vectorised as
torch_train.py's end-to-end does: resize 28->32 bilinear (F.interpolate,
align_corners=False, no antialias), x/255, (x-0.1307)/0.3081; labels int64.
Epochs follow each other (sampler.set_epoch): every step sees new, real data.

A step is next(batch), zero_grad(set_to_none=True), forward, loss, backward
(DDP's gradient all-reduce runs inside it; backward returns once it is done),
opt.step().  --warmup steps (default 50) run first, untimed, on the same model
and data stream; the timed window runs from a dist.barrier() to a
dist.barrier() after the last of --steps steps (default 600): samples/s =
steps * global_batch / wall (the largest of the ranks' walls), ms/step =
wall / steps.  "bwd+AR ms" is the ranks' mean wall time of loss.backward() per
step: backward plus the all-reduce DDP overlaps with it (this model's 61,684
parameters fit one bucket, so there is little to overlap).

All-reduce cost, measured on its own after the timed run: a float32 tensor of
as many elements as the model has parameters is dist.all_reduce'd (sum) 10
times untimed, then --steps times between two barriers; "allreduce us" is that
wall / steps (the largest of the ranks) and "% of step" that over ms/step: what
the all-reduce would add if nothing overlapped.  "loss last 50" is the ranks'
mean of their mean loss over the last 50 steps, a sanity check.

--single adds the non-distributed comparison: one process, no DDP,
--single-threads threads (default ranks*threads: the same cores as DDP), batch
= the global batch, the same data pipeline (one-replica DistributedSampler),
warm-up and timing (no barriers, no all-reduce).  Each round runs DDP, then
single, each in fresh processes.  --repeats rounds (default 3); every round is
printed (stderr), then the medians (stdout).

--json prints one JSON object instead of the table, keys: peer ("torch_ddp"),
ranks, threads_per_rank, global_batch, per_rank_batch, steps, warmup,
allreduce_floats, rounds (list of {samples_per_s, step_ms, backward_ms,
allreduce_us, allreduce_pct, loss_last50, wall_s}), median_samples_per_s,
median_step_ms, median_backward_ms, median_allreduce_us, median_allreduce_pct,
torch_version, openblas_threads, and single: null or {threads, batch, rounds,
median_samples_per_s, median_step_ms, median_backward_ms, ddp_over_single}.
Usage errors (a missing --data too) exit 2; a failing rank prints its
traceback and the script exits 1, as it does when a round outlives --timeout
seconds (the ranks dump their stacks first, then are killed).  Run with
/usr/bin/python3 (Debian's python3-torch).
"""
import argparse, datetime, json, os, socket, statistics, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from torch_train import MEAN, OUT_HW, STD, make_net, openblas_threads  # noqa: E402

LAST = 50          # steps averaged for the sanity loss
AR_WARMUP = 10     # untimed all-reduce calls before the timed ones


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ================================================================ child side
def data_stream(torch, spec, rank, world, batch):
    """Endless (x, y) batches for this rank: Fashion-MNIST train through a
    DistributedSampler + BatchSampler + DataLoader(num_workers=0)."""
    import torch.nn.functional as F
    from torch.utils.data import BatchSampler, DataLoader, Dataset, DistributedSampler
    from idx import read_idx
    imgs = read_idx(os.path.join(spec["data"], "train-images-idx3-ubyte"), 0x803)
    labs = read_idx(os.path.join(spec["data"], "train-labels-idx1-ubyte"), 0x801)
    if len(imgs) != len(labs) or len(imgs) // world < batch:
        raise ValueError(f"{spec['data']}: {len(imgs)} images, {len(labs)} labels")
    imgs = torch.from_numpy(imgs.copy())                     # (N,28,28) uint8
    labs = torch.from_numpy(labs.copy()).to(torch.int64)

    class BatchedFashionMNIST(Dataset):
        """Indexed by a list of indices: gather, then transform the batch."""
        def __len__(self):
            return len(imgs)

        def __getitem__(self, idx):
            idx = torch.as_tensor(idx)
            b = imgs[idx].unsqueeze(1).to(torch.float32)     # (B,1,28,28)
            b = F.interpolate(b, size=OUT_HW, mode="bilinear",
                              align_corners=False, antialias=False)
            return b.mul_(1.0 / 255).sub_(MEAN).div_(STD), labs[idx]

    ds = BatchedFashionMNIST()
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True,
                                 seed=spec["seed"], drop_last=True)
    loader = DataLoader(ds, batch_size=None, num_workers=0,
                        sampler=BatchSampler(sampler, batch, drop_last=True))
    epoch = 0
    while True:
        sampler.set_epoch(epoch)
        yield from loader
        epoch += 1


def child_main(rank, spec, outdir):
    import faulthandler
    faulthandler.dump_traceback_later(max(1, spec["timeout"] - 5))  # stacks, if stuck
    import torch
    torch.set_num_interop_threads(1)
    torch.set_num_threads(spec["threads"])
    torch.manual_seed(spec["seed"])
    world, ddp = spec["world"], spec["ddp"]
    dist = None
    if ddp:
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel
        os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(spec["port"])
        dist.init_process_group("gloo", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=spec["timeout"]))
    batch = spec["global_batch"] // world
    net, opt, loss_fn = make_net(torch)
    nparams = sum(p.numel() for p in net.parameters())
    model = DistributedDataParallel(net) if ddp else net
    it = data_stream(torch, spec, rank, world, batch)

    def steps(n, losses=None):
        bwd = 0.0
        for _ in range(n):
            x, y = next(it)
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            t = time.perf_counter()
            loss.backward()                 # with DDP: includes the all-reduce
            bwd += time.perf_counter() - t
            opt.step()
            if losses is not None:
                losses.append(loss.detach())
        return bwd

    steps(spec["warmup"])
    losses = []
    if ddp:
        dist.barrier()
    t0 = time.perf_counter()
    bwd = steps(spec["steps"], losses)
    if ddp:
        dist.barrier()
    wall = time.perf_counter() - t0
    res = {"rank": rank, "wall_s": wall, "backward_ms": bwd / spec["steps"] * 1e3,
           "loss_last50": torch.stack(losses[-LAST:]).mean().item(),
           "nparams": nparams, "torch": torch.__version__,
           "torch_threads": torch.get_num_threads(),
           "openblas_threads": openblas_threads()}
    if ddp:                                 # the separate all-reduce measurement
        buf = torch.zeros(nparams, dtype=torch.float32)   # zeros: sums stay finite
        for _ in range(AR_WARMUP):
            dist.all_reduce(buf)
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(spec["steps"]):
            dist.all_reduce(buf)
        dist.barrier()
        res["allreduce_us"] = (time.perf_counter() - t0) / spec["steps"] * 1e6
    with open(os.path.join(outdir, f"rank{rank}.json"), "w") as f:
        json.dump(res, f)
    if ddp:  # DDP's reducer holds the process group: drop it first (left to
             # the frame's teardown, about 1 run in 4 hung at exit on gloo here)
        del model
        dist.destroy_process_group()


# ================================================================ parent side
def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_round(mp, spec, nprocs, what):
    """Spawns nprocs fresh processes running child_main; returns their result
    dicts, or prints why not and exits 1."""
    with tempfile.TemporaryDirectory(prefix="torch_ddp.") as outdir:
        ctx = mp.start_processes(child_main, args=(spec, outdir), nprocs=nprocs,
                                 join=False, start_method="spawn")
        deadline = time.monotonic() + spec["timeout"]
        why = None
        try:
            while not ctx.join(timeout=max(0.1, min(5.0, deadline - time.monotonic()))):
                if time.monotonic() >= deadline:
                    why = f"not done after {spec['timeout']} s; killed"
                    break
        except Exception as e:  # ProcessRaisedException / ProcessExitedException
            why = f"a process failed:\n{e}"
        if why:
            for p in ctx.processes:
                if p.is_alive():
                    p.kill()
            log(f"error: {what}: {why}")
            sys.exit(1)
        out = []
        for r in range(nprocs):
            try:
                with open(os.path.join(outdir, f"rank{r}.json")) as f:
                    out.append(json.load(f))
            except (OSError, ValueError) as e:
                log(f"error: {what}: rank {r} left no result: {e}")
                sys.exit(1)
    return out


def summarize(res, steps, global_batch):
    wall = max(r["wall_s"] for r in res)
    s = {"samples_per_s": steps * global_batch / wall, "step_ms": wall / steps * 1e3,
         "backward_ms": statistics.fmean(r["backward_ms"] for r in res),
         "loss_last50": statistics.fmean(r["loss_last50"] for r in res), "wall_s": wall}
    if "allreduce_us" in res[0]:
        s["allreduce_us"] = max(r["allreduce_us"] for r in res)
        s["allreduce_pct"] = s["allreduce_us"] / (s["step_ms"] * 1e3) * 100
    return s


def round_line(label, r, s):
    ar = (f"  allreduce {s['allreduce_us']:7.1f} us/call ({s['allreduce_pct']:4.1f}% of step)"
          if "allreduce_us" in s else "")
    return (f"  round {r} {label:<22} {s['samples_per_s']:>8,.0f} samples/s "
            f"{s['step_ms']:6.3f} ms/step  bwd+AR {s['backward_ms']:6.3f} ms{ar}"
            f"  loss last {LAST} {s['loss_last50']:.3f}")


def medians(rounds, keys):
    return {f"median_{k}": statistics.median(x[k] for x in rounds)
            for k in keys if k in rounds[0]}


def main():
    ap = argparse.ArgumentParser(description=__doc__,  # --help says it all
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=2, metavar="N",
                    help="DDP world size (default %(default)s)")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads per rank (default %(default)s)")
    ap.add_argument("--global-batch", type=int, default=64,
                    help="samples per global step, split over the ranks (default %(default)s)")
    ap.add_argument("--steps", type=int, default=600,
                    help="timed global steps; also the timed all-reduce calls "
                    "(default %(default)s)")
    ap.add_argument("--warmup", type=int, default=50,
                    help="untimed steps before the timed ones (default %(default)s)")
    ap.add_argument("--repeats", type=int, default=3, metavar="R",
                    help="rounds, each a fresh spawn; medians reported (default %(default)s)")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist", metavar="DIR",
                    help="directory with train-{images-idx3,labels-idx1}-ubyte[.gz] "
                    "(default %(default)s)")
    ap.add_argument("--single", action="store_true",
                    help="also run the non-distributed comparison each round: one "
                    "process, batch = global batch, --single-threads threads, no DDP")
    ap.add_argument("--single-threads", type=int, metavar="T",
                    help="threads of the --single process (default ranks*threads)")
    ap.add_argument("--seed", type=int, default=1,
                    help="torch and sampler seed (default %(default)s)")
    ap.add_argument("--timeout", type=int, default=600, metavar="S",
                    help="seconds a round may take before its processes are killed "
                    "(exit 1; default %(default)s)")
    ap.add_argument("--json", action="store_true",
                    help="print one JSON object (keys in the docstring) instead of the table")
    a = ap.parse_args()

    if min(a.ranks, a.threads, a.global_batch, a.steps, a.repeats, a.timeout) < 1 \
            or a.warmup < 0 or (a.single_threads is not None and a.single_threads < 1):
        ap.error("--ranks, --threads, --single-threads, --global-batch, --steps, "
                 "--repeats and --timeout must be >= 1, --warmup >= 0")
    if a.global_batch % a.ranks:
        ap.error(f"--global-batch {a.global_batch} does not divide over {a.ranks} ranks")
    if not os.path.isdir(a.data):
        ap.error(f"--data {a.data}: no such directory")
    for f in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"):
        p = os.path.join(a.data, f)
        if not (os.path.exists(p) or os.path.exists(p + ".gz")):
            ap.error(f"--data {a.data}: no {p}[.gz]")
    single_threads = a.single_threads or a.ranks * a.threads

    os.environ["OPENBLAS_NUM_THREADS"] = "1"   # before torch loads, here and in the spawns
    import torch
    import torch.multiprocessing as mp
    base = {"global_batch": a.global_batch, "steps": a.steps, "warmup": a.warmup,
            "seed": a.seed, "timeout": a.timeout, "data": os.path.abspath(a.data)}
    ddp_label = f"DDP {a.ranks}x{a.threads}"
    one_label = f"single 1x{single_threads}"
    log(f"{ddp_label}" + (f" and {one_label}" if a.single else "") + f": {a.repeats} "
        f"round{'s' if a.repeats > 1 else ''} of {a.warmup} warm-up + {a.steps} timed "
        f"steps, global batch {a.global_batch}")
    ddp_rounds, one_rounds, first = [], [], None
    for r in range(1, a.repeats + 1):
        spec = dict(base, ddp=True, world=a.ranks, threads=a.threads, port=free_port())
        res = run_round(mp, spec, a.ranks, f"round {r} {ddp_label}")
        first = first or res[0]
        ddp_rounds.append(summarize(res, a.steps, a.global_batch))
        log(round_line(ddp_label, r, ddp_rounds[-1]))
        if a.single:
            spec = dict(base, ddp=False, world=1, threads=single_threads)
            res = run_round(mp, spec, 1, f"round {r} {one_label}")
            one_rounds.append(summarize(res, a.steps, a.global_batch))
            log(round_line(one_label, r, one_rounds[-1]))

    keys = ("samples_per_s", "step_ms", "backward_ms", "allreduce_us", "allreduce_pct")
    out = {"peer": "torch_ddp", "ranks": a.ranks, "threads_per_rank": a.threads,
           "global_batch": a.global_batch, "per_rank_batch": a.global_batch // a.ranks,
           "steps": a.steps, "warmup": a.warmup, "allreduce_floats": first["nparams"],
           "rounds": ddp_rounds, **medians(ddp_rounds, keys),
           "torch_version": torch.__version__,
           "openblas_threads": first["openblas_threads"], "single": None}
    if a.single:
        out["single"] = {"threads": single_threads, "batch": a.global_batch,
                         "rounds": one_rounds, **medians(one_rounds, keys)}
        out["single"]["ddp_over_single"] = (out["median_samples_per_s"]
                                            / out["single"]["median_samples_per_s"])
    if a.json:
        print(json.dumps(out, indent=2))
        return 0

    print(f"LeNet5 (MindSpore seeds), Fashion-MNIST, global batch {a.global_batch}, "
          f"SGD momentum; torch {out['torch_version']}, gloo, {os.cpu_count()} CPUs; "
          f"{a.warmup} warm-up + {a.steps} timed steps, {a.repeats} rounds, medians")
    print(f"{'configuration':<16}{'samples/s':>11}{'ms/step':>9}{'bwd+AR ms':>11}"
          f"{'allreduce us':>14}{'% of step':>11}")
    rows = [(ddp_label, out)] + ([(one_label, out["single"])] if a.single else [])
    for label, m in rows:
        ar = (f"{m['median_allreduce_us']:>14.1f}{m['median_allreduce_pct']:>10.1f}%"
              if "median_allreduce_us" in m else f"{'-':>14}{'-':>11}")
        print(f"{label:<16}{m['median_samples_per_s']:>11,.0f}{m['median_step_ms']:>9.3f}"
              f"{m['median_backward_ms']:>11.3f}{ar}")
    print(f"(all-reduce: {first['nparams']:,} float32 summed over {a.ranks} ranks, timed "
          "on its own after the run; per-rank batch "
          f"{a.global_batch // a.ranks})")
    for label, m in rows:
        print(f"{label} rounds, samples/s: "
              + ", ".join(f"{x['samples_per_s']:,.0f}" for x in m["rounds"]))
    if a.single:
        print(f"{ddp_label} / {one_label}: {out['single']['ddp_over_single']:.2f}x")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        log("interrupted")
        sys.exit(130)
