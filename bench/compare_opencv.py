#!/usr/bin/python3
"""Checks that sluice's MNIST LeNet pipeline gives MindSpore's numbers.

MindSpore's vision ops run on OpenCV; this script computes its pipeline with
cv2 + numpy, in file order, and compares it with what bench/dump_pipeline
(built by `make`) writes for the same folder:

    cv2.resize(img, (32, 32), interpolation=cv2.INTER_LINEAR)   (uint8)
    x * float32(1/255) + float32(0)                             (float32)
    x * float32(1/0.3081) + float32(-0.1307/0.3081)             (float32)
    HWC -> CHW (1, 32, 32); label astype int32

It reports the images compared, the pixels that differ and the largest
absolute difference, and separately the resize stage alone (uint8 pixels
that differ, from the uint8 values the float result implies). Exit status:
0 when everything agrees (within --tol), 1 when not, 2 on a setup error.

Needs Debian's python3-numpy and python3-opencv; run with /usr/bin/python3.
"""
import argparse, os, subprocess, sys, tempfile

import numpy as np

from idx import read_idx  # bench/idx.py, beside this script

try:
    import cv2
except ImportError:
    print("compare_opencv: cv2 is missing: apt-get install python3-opencv", file=sys.stderr)
    sys.exit(2)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
         "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--usage", choices=("train", "test"), default="train")
    ap.add_argument("--limit", type=int, default=0, help="first N images only (0: all)")
    ap.add_argument("--tol", type=float, default=0.0, help="largest abs difference accepted")
    ap.add_argument("--dump", help="the dump_pipeline program (default: build/bench/"
                    "dump_pipeline, else ./bench/dump_pipeline)")
    a = ap.parse_args()

    dump = a.dump
    if dump is None:
        for d in (os.path.join(ROOT, "build/bench/dump_pipeline"), "./bench/dump_pipeline"):
            if os.access(d, os.X_OK):
                dump = d
                break
        else:
            print("compare_opencv: no dump_pipeline found; build it (make) and pass --dump",
                  file=sys.stderr)
            return 2
    print(f"OpenCV {cv2.__version__}, numpy {np.__version__}; sluice: {dump}", flush=True)

    # MindSpore's pipeline, with OpenCV.
    try:
        images = read_idx(os.path.join(a.data, FILES[a.usage][0]))
        labels = read_idx(os.path.join(a.data, FILES[a.usage][1]))
    except (OSError, ValueError) as e:
        print(f"compare_opencv: {e}", file=sys.stderr)
        return 2
    if a.limit > 0:
        images, labels = images[:a.limit], labels[:a.limit]
    n = len(images)
    resized = np.stack([cv2.resize(img, (32, 32), interpolation=cv2.INTER_LINEAR)
                        for img in images])                       # (n, 32, 32) uint8
    x = resized.astype(np.float32) * np.float32(1 / 255) + np.float32(0)
    x = x * np.float32(1 / 0.3081) + np.float32(-1 * 0.1307 / 0.3081)
    want = x[:, None, :, :]                                      # HWC (32, 32, 1) -> CHW
    want_labels = labels.astype(np.int32)

    # sluice's pipeline, dumped in file order.
    with tempfile.TemporaryDirectory() as tmp:
        img_out, lab_out = os.path.join(tmp, "images.f32"), os.path.join(tmp, "labels.i32")
        cmd = [dump, "--usage", a.usage, "--limit", str(a.limit), a.data, img_out, lab_out]
        if subprocess.run(cmd).returncode != 0:
            print(f"compare_opencv: {' '.join(cmd)} failed", file=sys.stderr)
            return 1
        got = np.fromfile(img_out, np.float32)
        got_labels = np.fromfile(lab_out, np.int32)
    if got.size != want.size or got_labels.size != n:
        print(f"compare_opencv: sluice gave {got.size // 1024} images and "
              f"{got_labels.size} labels, OpenCV {n}", file=sys.stderr)
        return 1
    got = got.reshape(want.shape)

    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    # The resize stage alone: invert the two rescales and round back to uint8.
    got_u8 = np.rint((got[:, 0].astype(np.float64) * 0.3081 + 0.1307) * 255)
    resize_diff = int(np.count_nonzero(got_u8 != resized))
    label_diff = int(np.count_nonzero(got_labels != want_labels))
    max_diff = float(diff.max()) if diff.size else 0.0

    print(f"{a.usage}: {n} images of (1, 32, 32) float32, {a.data}")
    print(f"  resize (uint8)  : {resize_diff} of {resized.size} pixels differ")
    print(f"  final (float32) : {int(np.count_nonzero(diff > 0))} of {diff.size} values "
          f"differ, max abs diff {max_diff!r}; "
          f"{int(np.count_nonzero(diff > a.tol))} above --tol {a.tol!r}")
    print(f"  labels (int32)  : {label_diff} of {n} differ")
    ok = max_diff <= a.tol and label_diff == 0
    print("identical" if max_diff == 0 and label_diff == 0 else
          "within tolerance" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
