#!/usr/bin/python3
"""PyTorch peer benchmark for `sluice bench pipeline`.

Runs the MindSpore LeNet/MNIST preprocessing pipeline over one whole epoch of
Fashion-MNIST train (60000 images, 28x28 uint8) with PyTorch:

    Resize 28x28 -> 32x32 bilinear, half-pixel centres (OpenCV INTER_LINEAR)
    Rescale(1/255, 0); Rescale(1/0.3081, -0.1307/0.3081); HWC2CHW -> (1,32,32)
    label TypeCast -> int32; global shuffle; batch 32, drop_last -> 1875 batches

Configurations (each timed over a full epoch, --repeats times, medians shown):
  * DataLoader over a map-style Dataset doing per-sample transforms,
    num_workers = 0, 1, 2 (persistent_workers off, 1 torch thread per worker).
  * "vectorised": shuffle indices once, then gather + transform each batch of
    32 with one interpolate call (headline), plus a chunk=1024 variant.
images/s = 60000 / (wall time of the whole epoch INCLUDING iterator creation
and worker startup), i.e. the same convention as sluice; time to first batch
is reported separately.  Dataset load (gunzip + parse) is timed separately
and not counted.  Optionally runs `SLUICE bench pipeline --json --repeats N`
and prints sluice/torch ratios.

With --image-folder DIR it instead compares the ImageFolder (JPEG) pipeline
of `sluice bench pipeline --data DIR`:

    decode (PIL, RGB) -> Resize 224x224 bilinear -> RandomHorizontalFlip(0.5)
    -> float CHW -> Normalize(ImageNet mean/std); shuffle; batch 32, drop_last

as a DataLoader over a map-style Dataset of the folder's files (num_workers =
0, 1, 2), plus a decode-only line: PIL decode of every file once, single
thread, against sluice's closest decode-only pipeline.  Make a folder with
bench/make_jpeg_folder.py.  This mode also needs python3-pil.

--preset imagenet-train | imagenet-eval (with --image-folder) times ImageNet's
transforms instead, written with PIL as torchvision applies them to PIL
images (torchvision itself is not a Debian package):

    imagenet-train: RandomResizedCrop(224) (torchvision's get_params, then
        crop and resize with PIL's bilinear), RandomHorizontalFlip(0.5),
        ToTensor, Normalize(ImageNet)
    imagenet-eval: Resize(256) (shorter side; longer int(256 * long / short)),
        CenterCrop(224) (offsets rounded as torchvision), ToTensor, Normalize

and passes the same --preset to `sluice bench pipeline`.

Requires only Debian's python3-torch and python3-numpy; run with
/usr/bin/python3 (not the python3 first on PATH).
"""
import argparse, io, json, os, shlex, shutil, statistics, subprocess, sys, time

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

from idx import read_idx  # bench/idx.py, beside this script

try:  # only --image-folder needs PIL
    import PIL
    from PIL import Image
except ImportError:
    PIL = Image = None

BATCH, OUT_HW = 32, (32, 32)
MEAN, STD = 0.1307, 0.3081
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- data load
def load(data_dir):
    t0 = time.perf_counter()
    imgs = read_idx(os.path.join(data_dir, "train-images-idx3-ubyte.gz"), 0x803)
    labs = read_idx(os.path.join(data_dir, "train-labels-idx1-ubyte.gz"), 0x801)
    if len(imgs) != len(labs):
        raise ValueError("image/label count mismatch")
    # torch.from_numpy on a read-only buffer warns; copy once (part of load).
    imgs, labs = torch.from_numpy(imgs.copy()), torch.from_numpy(labs.copy())
    return imgs, labs, (time.perf_counter() - t0) * 1e3


# ---------------------------------------------------------------- transform
def transform(u8):
    """(N,28,28) uint8 -> (N,1,32,32) float32. Shared by both paths."""
    # HWC->CHW: with C=1 this is just inserting the channel axis.
    x = u8.unsqueeze(1).to(torch.float32)
    # Bilinear, half-pixel centres, no antialias == OpenCV INTER_LINEAR formula.
    x = F.interpolate(x, size=OUT_HW, mode="bilinear", align_corners=False,
                      antialias=False)
    # OpenCV resizes uint8->uint8: emulate its saturate_cast (round half-even,
    # clamp).  Note OpenCV uses 11-bit fixed-point weights internally, so rare
    # pixels may differ from this float formula by one uint8 step.
    x = x.round_().clamp_(0, 255)
    x = x.mul_(1.0 / 255)                           # Rescale(1/255, 0)
    return x.mul_(1.0 / STD).add_(-MEAN / STD)      # Rescale(1/std, -mean/std)


class FashionMNIST(Dataset):
    """Map-style dataset doing the MindSpore transforms per sample."""
    def __init__(self, imgs, labs):
        self.imgs, self.labs = imgs, labs

    def __len__(self):
        return len(self.imgs)

    def __getitem__(self, i):
        return transform(self.imgs[i:i + 1])[0], self.labs[i].to(torch.int32)


def worker_init(_):
    torch.set_num_threads(1)  # 2 cores: avoid oversubscription in workers


# ---------------------------------------------------------------- runners
def time_epoch(batches):
    """Iterate an epoch; batches is a zero-arg callable returning an iterator
    (created inside the timed region so worker startup is counted)."""
    t0 = time.perf_counter()
    it = batches()
    first, n, nb = None, 0, 0
    for x, y in it:
        if first is None:
            first = time.perf_counter() - t0
        n += y.shape[0]   # minimal touch
        nb += 1
    wall = time.perf_counter() - t0
    del it
    return {"images_per_s": n / wall, "first_batch_ms": first * 1e3,
            "batches": nb, "images": n, "wall_s": wall}


def dataloader_iter(ds, workers, shuffle=True):
    return lambda: iter(DataLoader(
        ds, batch_size=BATCH, shuffle=shuffle, drop_last=True,
        num_workers=workers, persistent_workers=False,
        worker_init_fn=worker_init if workers else None))


def vectorised_iter(imgs, labs, chunk=BATCH, shuffle=True):
    def gen():
        nb = len(imgs) // BATCH                     # drop_last
        perm = torch.randperm(len(imgs)) if shuffle else torch.arange(len(imgs))
        perm = perm[:nb * BATCH]
        for c in range(0, len(perm), chunk):        # chunk is a multiple of 32
            idx = perm[c:c + chunk]
            x, y = transform(imgs[idx]), labs[idx].to(torch.int32)
            for b in range(0, len(idx), BATCH):
                yield x[b:b + BATCH], y[b:b + BATCH]
    return gen


# ---------------------------------------------------------------- check
def numpy_reference(img):
    """Straight OpenCV INTER_LINEAR formula in float64 for one 28x28 image."""
    def axis(n_in, n_out):
        src = np.maximum((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0)
        i0 = np.floor(src).astype(int)
        return i0, np.minimum(i0 + 1, n_in - 1), src - i0
    y0, y1, wy = axis(img.shape[0], OUT_HW[0])
    x0, x1, wx = axis(img.shape[1], OUT_HW[1])
    f = img.astype(np.float64)
    top = f[y0][:, x0] * (1 - wx) + f[y0][:, x1] * wx
    bot = f[y1][:, x0] * (1 - wx) + f[y1][:, x1] * wx
    out = np.clip(np.rint(top * (1 - wy)[:, None] + bot * wy[:, None]), 0, 255)
    return ((out / 255 - MEAN) / STD)[None].astype(np.float32)


def check(imgs, labs):
    dl_x, dl_y = next(dataloader_iter(FashionMNIST(imgs, labs), 0, False)())
    v_x, v_y = next(vectorised_iter(imgs, labs, shuffle=False)())
    ok = (dl_x.shape == v_x.shape == (BATCH, 1, 32, 32)
          and dl_x.dtype == v_x.dtype == torch.float32
          and dl_y.dtype == v_y.dtype == torch.int32 and torch.equal(dl_y, v_y))
    d0 = (dl_x[0] - v_x[0]).abs().max().item()
    dall = (dl_x - v_x).abs().max().item()
    ref = np.stack([numpy_reference(imgs[i].numpy()) for i in range(BATCH)])
    dref = np.abs(ref - dl_x.numpy()).max()
    step = 1 / 255 / STD   # one uint8 step after normalisation
    print(f"shapes {tuple(dl_x.shape)} {dl_x.dtype}, labels {dl_y.dtype}, "
          f"label[0]={int(dl_y[0])}")
    print(f"sample 0 DataLoader vs vectorised: max|diff| = {d0:.3g}")
    print(f"batch 0  DataLoader vs vectorised: max|diff| = {dall:.3g}")
    print(f"batch 0  vs float64 numpy reference: max|diff| = {dref:.3g} "
          f"(one uint8 step = {step:.4f})")
    ok = ok and d0 <= 1e-5 and dall <= 1e-5 and dref <= step + 1e-5
    print("CHECK", "PASSED" if ok else "FAILED")
    return ok


# ---------------------------------------------------------------- sluice
def run_sluice(path, repeats, extra):
    """Returns (summary dict, None) or (None, error message)."""
    if path is None:
        cand = os.path.join(REPO, "sluice")
        path = cand if os.path.isfile(cand) else shutil.which("sluice")
    if not path or not os.access(path, os.X_OK):
        return None, f"sluice binary not found ({path or 'not on PATH'})"
    cmd = [path, "bench", "pipeline", "--json", "--repeats", str(repeats)] + extra
    log("running:", " ".join(map(shlex.quote, cmd)))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"could not run sluice: {e}"
    if p.returncode != 0:
        return None, f"sluice exited {p.returncode}: {p.stderr.strip()[-500:]}"
    try:
        out = json.loads(p.stdout)
    except ValueError:  # tolerate chatter: take the last line that parses
        out = next((json.loads(l) for l in reversed(p.stdout.splitlines())
                    if l.strip().startswith("{")), None)
    if not isinstance(out, dict) or not out.get("runs"):
        return None, "sluice printed no usable JSON (expected {..., \"runs\": [...]})"
    by_w = {}
    for r in out["runs"]:
        by_w.setdefault(int(r["workers"]), []).append(r)
    out["medians"] = {w: {"images_per_s": statistics.median(r["images_per_s"] for r in rs),
                          "first_batch_ms": statistics.median(r.get("first_batch_ms", float("nan")) for r in rs)}
                      for w, rs in sorted(by_w.items())}
    return out, None


# ---------------------------------------------------------------- ImageFolder
# sluice's ImageFolder default: decode, Resize(224, 224), RandomHorizontalFlip
# (0.5), Normalize(ImageNet mean/std on the 0..255 scale), HWC2CHW, batch 32.
IMG_HW = 224
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def list_image_folder(root):
    """(classes, [(path, label)]) as sluice's ImageFolder lists them: one class
    per sub-folder, classes sorted by name and labelled 0.., files sorted by
    name within a class, dot entries skipped, every file taken (sluice's
    default has no extension filter)."""
    classes = sorted(e.name for e in os.scandir(root)
                     if e.is_dir() and not e.name.startswith("."))
    samples = []
    for label, c in enumerate(classes):
        d = os.path.join(root, c)
        samples += [(os.path.join(d, f), label) for f in sorted(os.listdir(d))
                    if not f.startswith(".") and os.path.isfile(os.path.join(d, f))]
    return classes, samples


def rrc_box(h, w, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    """torchvision.transforms.RandomResizedCrop.get_params, as it is."""
    import math
    area = h * w
    log_ratio = torch.log(torch.tensor(ratio))
    for _ in range(10):
        target_area = area * torch.empty(1).uniform_(scale[0], scale[1]).item()
        aspect_ratio = math.exp(torch.empty(1).uniform_(log_ratio[0], log_ratio[1]).item())
        cw = int(round(math.sqrt(target_area * aspect_ratio)))
        ch = int(round(math.sqrt(target_area / aspect_ratio)))
        if 0 < cw <= w and 0 < ch <= h:
            i = torch.randint(0, h - ch + 1, size=(1,)).item()
            j = torch.randint(0, w - cw + 1, size=(1,)).item()
            return i, j, ch, cw
    in_ratio = w / h
    if in_ratio < min(ratio):
        cw, ch = w, int(round(w / min(ratio)))
    elif in_ratio > max(ratio):
        ch, cw = h, int(round(h * max(ratio)))
    else:
        cw, ch = w, h
    return (h - ch) // 2, (w - cw) // 2, ch, cw


def imagenet_geometry(img, preset):
    """torchvision's PIL path for the preset's crop and resize."""
    if preset == "imagenet-train":
        i, j, ch, cw = rrc_box(img.height, img.width)
        return img.crop((j, i, j + cw, i + ch)).resize((IMG_HW, IMG_HW), Image.BILINEAR)
    w, h = img.size                                      # Resize(256): the shorter side
    if w <= h:
        size = (256, int(256 * h / w))
    else:
        size = (int(256 * w / h), 256)
    img = img.resize(size, Image.BILINEAR)
    top = int(round((img.height - IMG_HW) / 2.0))         # CenterCrop(224)
    left = int(round((img.width - IMG_HW) / 2.0))
    return img.crop((left, top, left + IMG_HW, top + IMG_HW))


class JpegFolder(Dataset):
    """Map-style dataset: read bytes, PIL decode, the torchvision-style
    transforms, per sample (what torchvision.datasets.ImageFolder +
    Resize/RandomHorizontalFlip/ToTensor/Normalize do, without needing
    torchvision; with a preset, ImageNet's transforms)."""
    def __init__(self, samples, preset=None):
        self.samples = samples
        self.preset = preset
        self.mean = torch.tensor(IMAGENET_MEAN).view(3, 1, 1)
        self.std = torch.tensor(IMAGENET_STD).view(3, 1, 1)

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        path, label = self.samples[i]
        with open(path, "rb") as f:
            data = f.read()
        img = Image.open(io.BytesIO(data)).convert("RGB")
        # PIL's BILINEAR is a support-based (convolution) filter: when
        # downscaling it widens the triangle kernel by the scale factor, i.e.
        # it antialiases, unlike OpenCV's INTER_LINEAR (2 taps, half-pixel
        # centres) that sluice implements.  Same geometry, not the same pixels,
        # and PIL reads ~1.14x more taps here (256 -> 224).  It is the path
        # people use: torchvision's Resize on a PIL image calls exactly this.
        if self.preset:
            img = imagenet_geometry(img, self.preset)
        else:
            img = img.resize((IMG_HW, IMG_HW), Image.BILINEAR)
        if self.preset != "imagenet-eval" and torch.rand(1).item() < 0.5:  # flip 0.5
            img = img.transpose(Image.FLIP_LEFT_RIGHT)
        # ToTensor: HWC uint8 -> CHW float in [0, 1]; then Normalize.  On the
        # 0..1 scale this equals sluice's (x - 255*mean) / (255*std).
        x = torch.from_numpy(np.array(img, np.uint8)).permute(2, 0, 1).contiguous()
        x = x.to(torch.float32).div_(255).sub_(self.mean).div_(self.std)
        return x, label


def pil_decode_epoch(samples):
    """Decode-only: read + PIL decode (convert('RGB')) every file once, in
    file order, in this thread.  Returns images/s."""
    t0 = time.perf_counter()
    for path, _ in samples:
        with open(path, "rb") as f:
            data = f.read()
        Image.open(io.BytesIO(data)).convert("RGB")
    return len(samples) / (time.perf_counter() - t0)


# sluice has no decode-only switch: an ImageFolder source always decodes when
# a pipeline runs, and op options only replace the ops after the decode.  Any
# op option drops the default image ops; --label-int32 is the lightest one (a
# cast of the scalar label, which is int32 already), so with --batch 0 the
# pipeline is read + decode + that cast per row.  --no-source-shuffle reads the
# files in the order PIL does.
SLUICE_DECODE_ARGS = ["--label-int32", "--batch", "0", "--no-source-shuffle"]
SLUICE_DECODE_NOTE = ("sluice cannot express decode-only; closest is `" +
                      " ".join(SLUICE_DECODE_ARGS) + "` = read + decode + an int32 "
                      "cast of the scalar label per row, unbatched, file order")


def check_sluice_counts(sl, want_batches, want_images, what):
    """Warnings (list of str) where sluice's counts differ from the folder's."""
    bad = []
    for r in sl["runs"]:
        got = (r.get("batches"), r.get("images"))
        if got != (want_batches, want_images):
            bad.append(f"sluice {what} workers={r['workers']}: {got[0]} batches / "
                       f"{got[1]} images, expected {want_batches} / {want_images}")
    return bad


def best_median(med):
    w = max(med, key=lambda k: med[k]["images_per_s"])
    return w, med[w]["images_per_s"]


def main_image_folder(a):
    root = a.image_folder
    if not os.path.isdir(root):
        log(f"error: --image-folder {root}: not a directory")
        return 2
    classes, samples = list_image_folder(root)
    n = len(samples)
    if n < BATCH:
        log(f"error: {root}: {n} files in {len(classes)} class folders; need at least "
            f"{BATCH} (make one with bench/make_jpeg_folder.py)")
        return 2
    nb = n // BATCH
    ds = JpegFolder(samples, a.preset)
    x0, y0 = ds[0]
    if tuple(x0.shape) != (3, IMG_HW, IMG_HW) or x0.dtype != torch.float32:
        log(f"error: transform gave {tuple(x0.shape)} {x0.dtype}")
        return 1
    log(f"{root}: {n} files, {len(classes)} classes; sample 0 -> {tuple(x0.shape)} "
        f"{x0.dtype}, label {y0}; torch {torch.__version__}, PIL {PIL.__version__}, "
        f"num_threads={torch.get_num_threads()}")

    t_start, results = time.perf_counter(), []
    for w in (0, 1, 2):
        name, runs = f"DataLoader workers={w}", []
        for r in range(a.repeats):
            runs.append(time_epoch(dataloader_iter(ds, w)))
            log(f"  {name} run {r + 1}: {runs[-1]['images_per_s']:,.0f} img/s, "
                f"first batch {runs[-1]['first_batch_ms']:.1f} ms")
            assert runs[-1]["batches"] == nb, runs[-1]
        results.append({"config": name, "workers": w, "runs": runs,
                        "images_per_s": statistics.median(x["images_per_s"] for x in runs),
                        "first_batch_ms": statistics.median(x["first_batch_ms"] for x in runs)})
    pil_runs = []
    for r in range(a.repeats):
        pil_runs.append(pil_decode_epoch(samples))
        log(f"  PIL decode run {r + 1}: {pil_runs[-1]:,.0f} img/s")
    pil_decode = statistics.median(pil_runs)
    torch_s = time.perf_counter() - t_start

    warnings = []
    if a.no_sluice:
        sl = sd = None
        sl_err = sd_err = "skipped (--no-sluice)"
    else:
        preset = ["--preset", a.preset] if a.preset else []
        sl, sl_err = run_sluice(a.sluice, a.repeats,
                                ["--data", root] + preset + shlex.split(a.sluice_args))
        sd, sd_err = run_sluice(a.sluice, a.repeats, ["--data", root] + SLUICE_DECODE_ARGS)
        for what, out, err in (("pipeline", sl, sl_err), ("decode", sd, sd_err)):
            if err:
                log(f"sluice {what}: {err}")
        if sl:
            warnings += check_sluice_counts(sl, nb, nb * BATCH, "pipeline")
        if sd:
            warnings += check_sluice_counts(sd, n, n, "decode")
        for wmsg in warnings:
            log("WARNING: " + wmsg)

    dl_best = max(results, key=lambda r: r["images_per_s"])
    ratios = {}
    if sl:
        med = sl["medians"]
        sw, best = best_median(med)
        ratios[f"sluice best ({sw}w) / DataLoader best ({dl_best['workers']}w)"] = \
            best / dl_best["images_per_s"]
        if 1 in med and 2 in med:
            ratios["sluice 2w / 1w scaling"] = med[2]["images_per_s"] / med[1]["images_per_s"]
    if sd and 1 in sd["medians"]:
        ratios["decode only: sluice 1w / PIL 1 thread"] = \
            sd["medians"][1]["images_per_s"] / pil_decode

    if a.json:
        print(json.dumps({"image_folder": root, "preset": a.preset, "files": n,
                          "classes": len(classes),
                          "batch": BATCH, "batches": nb, "torch": torch.__version__,
                          "pil": PIL.__version__, "num_threads": torch.get_num_threads(),
                          "repeats": a.repeats, "torch_bench_s": torch_s,
                          "results": results,
                          "pil_decode": {"images_per_s": pil_decode, "runs": pil_runs},
                          "sluice": sl, "sluice_error": sl_err,
                          "sluice_decode": sd, "sluice_decode_error": sd_err,
                          "sluice_decode_note": SLUICE_DECODE_NOTE,
                          "warnings": warnings, "ratios": ratios}, indent=2))
        return 0

    print(f"ImageFolder {root}: {n} files, {len(classes)} classes -> {nb} batches of "
          f"{BATCH} (drop_last); torch {torch.__version__}, PIL {PIL.__version__}, "
          f"num_threads={torch.get_num_threads()}, median of {a.repeats}, epoch incl. startup")
    what = {None: f"resize {IMG_HW}x{IMG_HW} bilinear, random hflip 0.5",
            "imagenet-train": f"RandomResizedCrop {IMG_HW}, random hflip 0.5",
            "imagenet-eval": f"Resize 256 (shorter side), CenterCrop {IMG_HW}"}[a.preset]
    print(f"pipeline: decode RGB, {what}, normalize ImageNet, CHW, batch {BATCH}\n"
          f"(torch: PIL bilinear, antialiased support filter; sluice: OpenCV-style "
          f"INTER_LINEAR, decoding only the rows and columns the crop reads; same sizes, "
          f"not the same pixels)")
    print(f"{'configuration':<36}{'images/s':>12}{'first batch ms':>16}")
    rows = [(r["config"], r["images_per_s"], r["first_batch_ms"]) for r in results]
    if sl:
        thr = {int(r["workers"]): r.get("threads") for r in sl["runs"]}
        rows += [(f"sluice workers={w} ({thr.get(w)} threads)", m["images_per_s"],
                  m["first_batch_ms"]) for w, m in sl["medians"].items()]
    for name, ips, fb in rows:
        print(f"{name:<36}{ips:>12,.0f}{fb:>16.1f}")
    if sl:
        print(f"sluice peak RSS {sl.get('peak_rss_bytes', 0) / 2**20:.0f} MiB")
    else:
        print(f"sluice: {sl_err}")

    print(f"\ndecode only: read + decode to RGB of every file once, median of {a.repeats}")
    print(f"{'PIL open().convert(RGB), 1 thread':<36}{pil_decode:>12,.0f}")
    if sd:
        thr = {int(r["workers"]): r.get("threads") for r in sd["runs"]}
        for w, m in sd["medians"].items():
            print(f"{f'sluice decode workers={w} ({thr.get(w)} threads)':<36}"
                  f"{m['images_per_s']:>12,.0f}")
        print("note: " + SLUICE_DECODE_NOTE)
    else:
        print(f"sluice decode: {sd_err}")

    for k, v in ratios.items():
        print(f"{k:<56}{v:>7.2f}x")
    for wmsg in warnings:
        print("WARNING: " + wmsg)
    print(f"torch/PIL benchmarks took {torch_s:.1f} s")
    return 0


# ---------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] + " One "
        "epoch of Fashion-MNIST train through the MindSpore LeNet pipeline, "
        "torch DataLoader (0/1/2 workers) and a vectorised torch loop.")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist",
                    help="directory with train-*-idx?-ubyte.gz (default %(default)s)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per config (median reported)")
    ap.add_argument("--sluice", metavar="PATH", help="sluice binary (default ./sluice in "
                    "the repo root if present, else `sluice` on PATH)")
    ap.add_argument("--sluice-args", default="", help="extra args for sluice (shell-quoted)")
    ap.add_argument("--no-sluice", action="store_true", help="skip the sluice run")
    ap.add_argument("--chunk", type=int, default=1024, help="vectorised variant chunk (multiple of 32; 0 = skip)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    ap.add_argument("--check", action="store_true", help="only verify DataLoader == vectorised (no shuffle) and exit")
    ap.add_argument("--image-folder", metavar="DIR", help="instead of MNIST, compare the "
                    "ImageFolder JPEG pipeline (decode, resize 224, flip, normalize) on DIR "
                    "(one sub-folder per class; see bench/make_jpeg_folder.py)")
    ap.add_argument("--preset", choices=("imagenet-train", "imagenet-eval"),
                    help="with --image-folder: ImageNet's train or eval transforms, here and "
                    "in sluice")
    a = ap.parse_args()
    if a.preset and a.image_folder is None:
        ap.error("--preset applies to --image-folder")
    if a.repeats < 1 or a.chunk % BATCH:
        ap.error("--repeats must be >= 1 and --chunk a multiple of 32")
    if a.image_folder is not None:
        if a.check:
            ap.error("--check applies to the MNIST comparison only")
        if Image is None:
            ap.error("--image-folder needs PIL (python3-pil); run with /usr/bin/python3")
        return main_image_folder(a)

    imgs, labs, load_ms = load(a.data)
    if a.check:
        return 0 if check(imgs, labs) else 1
    log(f"loaded {tuple(imgs.shape)} in {load_ms:.0f} ms; torch {torch.__version__}, "
        f"num_threads={torch.get_num_threads()}")

    ds = FashionMNIST(imgs, labs)
    configs = [(f"DataLoader workers={w}", w, dataloader_iter(ds, w)) for w in (0, 1, 2)]
    configs.append(("vectorised batch=32", None, vectorised_iter(imgs, labs)))
    if a.chunk:
        configs.append((f"vectorised chunk={a.chunk}", None, vectorised_iter(imgs, labs, a.chunk)))

    t_start, results = time.perf_counter(), []
    for name, w, make in configs:
        runs = []
        for r in range(a.repeats):
            runs.append(time_epoch(make))
            log(f"  {name} run {r + 1}: {runs[-1]['images_per_s']:,.0f} img/s, "
                f"first batch {runs[-1]['first_batch_ms']:.1f} ms")
            assert runs[-1]["batches"] == len(imgs) // BATCH
        results.append({"config": name, "workers": w, "runs": runs,
                        "images_per_s": statistics.median(x["images_per_s"] for x in runs),
                        "first_batch_ms": statistics.median(x["first_batch_ms"] for x in runs)})
    torch_s = time.perf_counter() - t_start

    sl, sl_err = (None, "skipped (--no-sluice)") if a.no_sluice else \
        run_sluice(a.sluice, a.repeats, shlex.split(a.sluice_args))
    if sl_err and not a.no_sluice:
        log("sluice: " + sl_err + " -- torch figures only")

    dl_best = max((r for r in results if r["workers"] is not None), key=lambda r: r["images_per_s"])
    vec = results[3]
    ratios = {}
    if sl:
        med = sl["medians"]
        sw = 2 if 2 in med else max(med, key=lambda w: med[w]["images_per_s"])
        best = med[sw]["images_per_s"]
        ratios[f"sluice best ({sw}w) / DataLoader best ({dl_best['workers']}w)"] = best / dl_best["images_per_s"]
        ratios[f"sluice best ({sw}w) / vectorised batch=32"] = best / vec["images_per_s"]
        if 1 in med and 2 in med:
            ratios["sluice 2w / 1w scaling"] = med[2]["images_per_s"] / med[1]["images_per_s"]

    if a.json:
        print(json.dumps({"dataset": a.data, "images": len(imgs), "batch": BATCH,
                          "load_ms": load_ms, "torch": torch.__version__,
                          "num_threads": torch.get_num_threads(), "repeats": a.repeats,
                          "torch_bench_s": torch_s, "results": results,
                          "sluice": sl, "sluice_error": sl_err, "ratios": ratios}, indent=2))
        return 0

    print(f"Fashion-MNIST train {tuple(imgs.shape)}, load {load_ms:.0f} ms (not counted); "
          f"torch {torch.__version__}, num_threads={torch.get_num_threads()}, "
          f"median of {a.repeats}, epoch incl. startup")
    print(f"{'configuration':<28}{'images/s':>12}{'first batch ms':>16}")
    rows = [(r["config"], r["images_per_s"], r["first_batch_ms"]) for r in results]
    if sl:
        rows += [(f"sluice workers={w}", m["images_per_s"], m["first_batch_ms"])
                 for w, m in sl["medians"].items()]
    for name, ips, fb in rows:
        print(f"{name:<28}{ips:>12,.0f}{fb:>16.1f}")
    if sl:
        print(f"sluice load {sl.get('load_ms', float('nan')):.0f} ms, "
              f"peak RSS {sl.get('peak_rss_bytes', 0) / 2**20:.0f} MiB")
        for k, v in ratios.items():
            print(f"{k:<56}{v:>7.2f}x")
    else:
        print(f"sluice: {sl_err}")
    print(f"torch benchmarks took {torch_s:.1f} s")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        log("interrupted")
        sys.exit(130)
