#!/usr/bin/python3
"""sluice as the per-rank data backend of PyTorch DistributedDataParallel.

--ranks processes (default 2) train lenet_torch.py's LeNet5 (the seeds'
network in torch) with DDP over gloo on the CPU. Each rank reads its own
shard of Fashion-MNIST through a sluice pipeline (MnistDataset(num_shards=
ranks, shard_id=rank), the seeds' maps, shuffle, batch 32) and takes the
batches as torch tensors without a copy (``Dataset.to_torch()``, DLPack),
where a DataLoader over a DistributedSampler would be; DDP averages the
gradients. Every rank runs --steps steps (its shard's epochs follow each
other), rank 0 prints its loss, and at the end the ranks check that they
hold the same parameters (exit status 1 if not).

The ranks are started by torch.multiprocessing.spawn, torch's own way,
rather than by mpirun: the parent picks the rendezvous (a file in a
temporary folder, so runs side by side never race for a port), the
script runs as it is with python3, and it needs nothing of sluice's MPI:
sluice only reads a shard here, so it works in a sluice built without
MPI too.

    PYTHONPATH=build/bindings/python/stage /usr/bin/python3 \\
        bindings/python/examples/torch_ddp_backend.py --steps 200

Needs python3-torch and python3-numpy (Debian's; run with /usr/bin/python3).
"""
import argparse
import datetime
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

import sluice
import sluice.dataset as ds
import sluice.dataset.transforms as transforms
import sluice.dataset.vision as vision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lenet_torch import MEAN, STD, LeNet5  # noqa: E402


def shard(data, rank, ranks):
    """This rank's part of the training set, as torch batches."""
    d = ds.MnistDataset(data, usage="train", num_shards=ranks, shard_id=rank)
    d = d.map(operations=[vision.Resize((32, 32)), vision.Rescale(1 / 255, 0),
                          vision.Rescale(1 / STD, -MEAN / STD), vision.HWC2CHW()],
              input_columns="image", num_parallel_workers=1)
    d = d.map(operations=transforms.TypeCast(sluice.int32), input_columns="label")
    return d.shuffle(10000).batch(32, drop_remainder=True).to_torch()


def run(rank, args, rendezvous):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank,
                            world_size=args.ranks,
                            timeout=datetime.timedelta(seconds=args.timeout))
    torch.manual_seed(args.seed)      # DDP starts every rank from rank 0's weights anyway
    ds.config.set_seed(args.seed)     # one order, split in shards
    model = DistributedDataParallel(LeNet5())
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    steps = 0
    with shard(args.data, rank, args.ranks) as loader:
        while steps < args.steps:
            for image, label in loader:          # one epoch of this rank's shard
                loss = F.cross_entropy(model(image), label.long())
                opt.zero_grad()
                loss.backward()                  # DDP's all-reduce of the gradients
                opt.step()
                steps += 1
                if rank == 0 and (steps % args.print_every == 0 or steps == args.steps):
                    print(f"step {steps}, loss is {loss.item():.6f} (rank 0's batch)",
                          flush=True)
                if steps == args.steps:
                    break
    mine = torch.cat([p.detach().flatten() for p in model.parameters()])
    rank0 = mine.clone()
    dist.broadcast(rank0, 0)
    same = torch.tensor([int(torch.equal(mine, rank0))])
    dist.all_reduce(same, op=dist.ReduceOp.MIN)
    if rank == 0:
        print(f"{args.ranks} ranks, {steps} steps each: "
              f"{'the same parameters' if same.item() else 'DIFFERENT parameters'}", flush=True)
    dist.destroy_process_group()
    if not same.item():
        sys.exit(1)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--steps", type=int, default=1000, help="steps of every rank")
    p.add_argument("--print-every", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=int, default=300,
                   help="seconds a rank waits for the others in a collective")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(run, args=(args, os.path.join(tmp, "rendezvous")), nprocs=args.ranks)


if __name__ == "__main__":
    main()
