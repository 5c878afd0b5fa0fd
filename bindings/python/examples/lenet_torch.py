#!/usr/bin/python3
"""PyTorch's LeNet trained on Fashion-MNIST batches from sluice, then the same
network trained from torch's own DataLoader, for comparison.

The data pipeline is the MindSpore docs' LeNet one (resize 28 -> 32
bilinear, rescale 1/255, normalize with 0.1307 / 0.3081, HWC -> CHW, label to
int32, shuffle, batch 32 dropping the remainder). sluice runs it in C
threads and hands each batch to torch through DLPack without a copy
(``dataset.to_torch()``); the DataLoader runs it per sample in Python.
Both runs start from the same initial weights and train the same number of
steps (SGD with momentum 0.9, lr 0.01); each model is then evaluated on all
10000 test images, read by sluice. The two accuracies should agree to
about a percent (the shuffles differ).

    /usr/bin/python3 bindings/python/examples/lenet_torch.py          # 1 epoch each, ~1 min
    /usr/bin/python3 bindings/python/examples/lenet_torch.py --epochs 2

Uninstalled, put the staged package first on the path:
PYTHONPATH=build/bindings/python/stage. Needs python3-torch and
python3-numpy (Debian's; run with /usr/bin/python3).
"""
import argparse
import copy
import gzip
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import sluice
import sluice.dataset as ds
import sluice.dataset.transforms as transforms
import sluice.dataset.vision as vision

MEAN, STD = 0.1307, 0.3081


# --- the network (as the seeds' LeNet5) -----------------------------------------------

class LeNet5(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, bias=False)
        self.conv2 = nn.Conv2d(6, 16, 5, bias=False)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, num_classes)
        for p in self.parameters():  # TruncatedNormal(0.02), weights and biases
            nn.init.trunc_normal_(p, std=0.02, a=-0.04, b=0.04)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


# --- the data, through sluice ------------------------------------------------------------

def sluice_dataset(data, usage, shuffle, workers):
    d = ds.MnistDataset(data, usage=usage, shuffle=shuffle)
    d = d.map(operations=[vision.Resize((32, 32)), vision.Rescale(1 / 255, 0),
                          vision.Rescale(1 / STD, -MEAN / STD), vision.HWC2CHW()],
              input_columns="image", num_parallel_workers=workers)
    d = d.map(operations=transforms.TypeCast(sluice.int32), input_columns="label")
    if shuffle:
        d = d.shuffle(10000)
    return d.batch(32, drop_remainder=shuffle)


# --- the same data, through torch's DataLoader ------------------------------------------------

def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = np.frombuffer(raw, ">u4", ndim, 4).astype(int)
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(dims)


class FashionMNIST(torch.utils.data.Dataset):
    """Map-style: the same transforms, per sample (bilinear with half-pixel
    centres is OpenCV's INTER_LINEAR up to the rounding of uint8)."""

    def __init__(self, data):
        images = read_idx(os.path.join(data, "train-images-idx3-ubyte.gz"))
        labels = read_idx(os.path.join(data, "train-labels-idx1-ubyte.gz"))
        self.images = torch.from_numpy(images.copy())  # writable, as torch wants
        self.labels = torch.from_numpy(labels.copy())

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        x = self.images[i].to(torch.float32)[None, None]
        x = F.interpolate(x, size=(32, 32), mode="bilinear", align_corners=False)
        x = x.round_().clamp_(0, 255)[0] / 255
        return (x - MEAN) / STD, int(self.labels[i])


# --- training and evaluation ----------------------------------------------------------------

def train(model, batches, steps):
    """SGD with momentum on `batches` (an iterable of (image, label)), at
    most `steps` steps; returns (steps, seconds)."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    model.train()
    n = 0
    t0 = time.perf_counter()
    for image, label in batches:
        loss = F.cross_entropy(model(image), label.long())
        opt.zero_grad()
        loss.backward()
        opt.step()
        n += 1
        if n == steps:
            break
    return n, time.perf_counter() - t0


def evaluate(model, test, max_batches):
    model.eval()
    right = total = 0
    with torch.no_grad():
        for k, (image, label) in enumerate(test):
            if max_batches and k == max_batches:
                break
            right += (model(image).argmax(1) == label.long()).sum().item()
            total += len(label)
    return right / total, total


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--workers", type=int, default=None,
                   help="sluice's map workers (default: the thread budget's)")
    p.add_argument("--max-steps", type=int, default=0, help="stop each run after N steps")
    p.add_argument("--eval-batches", type=int, default=0, help="evaluate on N batches only")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    torch.manual_seed(args.seed)
    ds.config.set_seed(args.seed)
    initial = LeNet5()
    test = sluice_dataset(args.data, "test", shuffle=False, workers=args.workers)
    test = test.to_torch(num_epochs=2)  # one pass per model
    results = []

    # sluice: one pipeline across the epochs (each pass is a new shuffle)
    model = copy.deepcopy(initial)
    loader = sluice_dataset(args.data, "train", shuffle=True, workers=args.workers).to_torch(
        num_epochs=args.epochs)
    steps = seconds = 0
    for _ in range(args.epochs):
        left = args.max_steps - steps if args.max_steps else 0
        n, s = train(model, loader, left)
        steps, seconds = steps + n, seconds + s
        if args.max_steps and steps >= args.max_steps:
            break
    loader.close()
    results.append(("sluice to_torch (DLPack)", steps, seconds,
                    *evaluate(model, test, args.eval_batches)))

    # torch's DataLoader, the same steps from the same weights
    model = copy.deepcopy(initial)
    dl = torch.utils.data.DataLoader(FashionMNIST(args.data), batch_size=32, shuffle=True,
                                     drop_last=True, num_workers=0)
    steps = seconds = 0
    for _ in range(args.epochs):
        left = args.max_steps - steps if args.max_steps else 0
        n, s = train(model, dl, left)
        steps, seconds = steps + n, seconds + s
        if args.max_steps and steps >= args.max_steps:
            break
    results.append(("torch DataLoader (num_workers=0)", steps, seconds,
                    *evaluate(model, test, args.eval_batches)))
    test.close()

    print(f"LeNet5 on {args.data}, batch 32, SGD(lr 0.01, momentum 0.9), "
          f"torch {torch.__version__} with {torch.get_num_threads()} threads")
    for name, steps, seconds, acc, total in results:
        rate = steps * 32 / seconds
        print(f"{name:34s} {steps:6d} steps in {seconds:6.1f} s ({rate:7.0f} samples/s)  "
              f"accuracy {acc:.4f} on {total} test images")
    print(f"accuracy difference: {abs(results[0][3] - results[1][3]):.4f}")


if __name__ == "__main__":
    main()
