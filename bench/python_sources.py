#!/usr/bin/python3
"""sluice's sources over Python data against PyTorch's DataLoader (issue 31).

One map-style Python dataset (``__getitem__`` + ``__len__``): --samples
samples (default 20,000) of a 28x28 uint8 image and an int label, from two
numpy arrays; ``__getitem__(i)`` returns ``(images[i], int(labels[i]))``.
One epoch, shuffled, in batches of --batch (default 32, the last short
batch kept), through

  generator      sluice.dataset.GeneratorDataset(the dataset).batch(32):
                 sluice's pipeline threads call __getitem__, each call
                 holding the GIL, and batch in C
  numpy-slices   sluice.dataset.NumpySlicesDataset over the same two arrays
                 (no Python per sample: rows are views of the arrays)
  dataloader-W   torch.utils.data.DataLoader(the dataset, batch_size=32,
                 shuffle=True, num_workers=W), W = 0 and 2

each ending in torch tensors (sluice's through to_torch(), no copy).

What the GIL costs: GeneratorDataset's Python runs one call at a time,
whatever the workers, so its rate is bounded by 1 / (the time of one
__getitem__ plus the conversion of its result to a tensor); the engine's
threads overlap only the batching with it. DataLoader's workers are
processes, each with its own interpreter, so their Python runs in parallel
(on as many CPUs as there are) but every batch is pickled back through a
pipe. NumpySlicesDataset runs no Python per sample at all.

Each round runs every configuration once, in an order that rotates from
round to round, in this process; the table shows each one's median over
--rounds rounds (>= 3) of samples/s = samples / the wall time of the epoch,
from making the iterator (DataLoader's worker start-up included) to its
last batch.

    /usr/bin/python3 bench/python_sources.py [--rounds 5] [--json]

The sluice package comes from build/bindings/python/stage unless it is
importable already; --stage DIR picks another. Needs Debian's python3-torch
and python3-numpy.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
CONFIGS = ["generator", "numpy-slices", "dataloader-0", "dataloader-2"]


class Images:
    """The map-style dataset all configurations read."""

    def __init__(self, images, labels):
        self.images, self.labels = images, labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.images[i], int(self.labels[i])


def make_data(n, seed=0):
    import numpy as np
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, size=n).astype(np.int64)
    return images, labels


def epoch(config, data, batch):
    """Seconds of one epoch of config, and the samples it gave."""
    import sluice.dataset as ds
    images, labels = data
    t0 = time.perf_counter()
    if config.startswith("dataloader-"):
        import torch.utils.data
        loader = torch.utils.data.DataLoader(Images(images, labels), batch_size=batch,
                                             shuffle=True,
                                             num_workers=int(config.split("-")[1]))
    else:
        if config == "generator":
            d = ds.GeneratorDataset(Images(images, labels), ["image", "label"])
        else:
            d = ds.NumpySlicesDataset({"image": images, "label": labels})
        loader = d.batch(batch).to_torch(num_epochs=1)
    n = 0
    for image, _ in loader:
        n += image.shape[0]
    seconds = time.perf_counter() - t0
    if hasattr(loader, "close"):
        loader.close()
    return seconds, n


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--samples", type=int, default=20000)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--configs", default=",".join(CONFIGS),
                   help="comma-separated subset of " + ",".join(CONFIGS))
    p.add_argument("--stage", default=os.path.join(REPO, "build", "bindings", "python", "stage"))
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    a = p.parse_args()
    if a.rounds < 3:
        p.error("--rounds must be >= 3 (medians)")
    configs = a.configs.split(",")
    for c in configs:
        if c not in CONFIGS:
            p.error(f"unknown configuration {c!r}; known: {', '.join(CONFIGS)}")
    try:
        import sluice  # noqa: F401
    except ImportError:
        sys.path.insert(0, a.stage)
    import torch.utils.data  # noqa: F401  (imported before any timing: to_torch imports it)
    data = make_data(a.samples)
    rates = {c: [] for c in configs}
    for r in range(a.rounds):
        order = configs[r % len(configs):] + configs[:r % len(configs)]
        for c in order:
            seconds, n = epoch(c, data, a.batch)
            if n != a.samples:
                sys.exit(f"{c}: {n} samples in the epoch, expected {a.samples}")
            rates[c].append(n / seconds)
            print(f"round {r + 1}: {c}: {n / seconds:,.0f} samples/s", file=sys.stderr)
    result = {
        "samples": a.samples, "batch": a.batch, "rounds": a.rounds,
        "machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
        "configs": {c: {"median_samples_per_s": statistics.median(v), "runs": v}
                    for c, v in rates.items()},
    }
    if a.json:
        print(json.dumps(result, indent=1))
        return
    best_loader = max((statistics.median(v) for c, v in rates.items()
                       if c.startswith("dataloader-")), default=None)
    print(f"{a.samples} samples of 28x28 uint8 + label, batch {a.batch}, one shuffled epoch, "
          f"median of {a.rounds} rounds")
    print(f"{'configuration':<14} {'samples/s':>11} {'vs best DataLoader':>19}")
    for c in configs:
        m = statistics.median(rates[c])
        ratio = f"{m / best_loader:.2f}x" if best_loader else "-"
        print(f"{c:<14} {m:>11,.0f} {ratio:>19}")


if __name__ == "__main__":
    main()
