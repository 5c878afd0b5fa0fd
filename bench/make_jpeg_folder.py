#!/usr/bin/python3
"""Make a deterministic ImageFolder of JPEGs for `sluice bench pipeline`.

Writes OUT/<class>/<index>.jpg, one sub-folder per class, for the ImageFolder
comparison in bench/torch_pipeline.py (--image-folder).  The pictures are
Fashion-MNIST train images (class folder = label) upscaled to --size with PIL
bilinear and tinted into RGB: a coloured garment, shaded by its own grey
levels, over a smooth two-colour gradient background with a little low-
frequency blotching and mild per-pixel grain, so every file is a genuine
3-channel, photo-like JPEG (no flat areas, realistic entropy-coded size).
Without the dataset a synthetic smooth pattern (sinusoids per class) is drawn
instead.

With --photos DIR the pictures are cut from the real photographs in DIR
(every *.jpg under it, e.g. Debian's mate-backgrounds in
/usr/share/backgrounds/mate/nature): class c takes photograph c (so at most
as many classes as photographs), each image a --size (or --size..--max-size)
window at a random place of it, re-encoded at --quality: real content,
real entropy-coded sizes.

The same arguments always give the same pixels (the per-image random numbers
come from numpy's seeded PCG64; PIL/libjpeg encoding is deterministic).  The
tool refuses to write into a non-empty folder unless --force is given.

Requires numpy and PIL (Debian's python3-numpy, python3-pil); run it with
/usr/bin/python3.
"""
import argparse, json, os, shutil, sys, time

import numpy as np
from PIL import Image

from idx import read_idx  # bench/idx.py, beside this script

FASHION = "/usr/share/datasets/fashion-mnist"
NAMES = ["tshirt", "trouser", "pullover", "dress", "coat",
         "sandal", "shirt", "sneaker", "bag", "boot"]
MARKER = ".make_jpeg_folder.json"   # dot file: ImageFolder readers skip it


def parse_size(s):
    """'256' or 'WxH' -> (width, height)."""
    try:
        parts = [int(p) for p in s.lower().split("x")]
    except ValueError:
        parts = []
    if len(parts) == 1:
        parts *= 2
    if len(parts) != 2 or min(parts) < 8 or max(parts) > 8192:
        raise argparse.ArgumentTypeError(f"expected N or WxH (8..8192), got '{s}'")
    return tuple(parts)


def upscale(gray_u8, size):
    """uint8 (h,w) -> float32 (H,W) in [0,1], PIL bilinear."""
    img = Image.fromarray(gray_u8, "L").resize(size, Image.BILINEAR)
    return np.asarray(img, np.float32) / 255.0


def smooth_field(rng, size, cells=6):
    """Low-frequency noise in [0,1]: a random cells x cells grid, bilinear up."""
    grid = (rng.random((cells, cells)) * 255).astype(np.uint8)
    return upscale(grid, size)


def tint(shape01, rng, size):
    """Grey shape in [0,1] (H,W) -> uint8 RGB (H,W,3) photo-like picture."""
    w, h = size
    f32 = np.float32
    # Background: a diagonal gradient between two muted colours ...
    c0, c1 = rng.uniform(40, 200, 3).astype(f32), rng.uniform(40, 200, 3).astype(f32)
    ang = rng.uniform(0, 2 * np.pi)
    t = (f32(np.sin(ang) / h) * np.arange(h, dtype=f32)[:, None]
         + f32(np.cos(ang) / w) * np.arange(w, dtype=f32)[None, :])
    t = (t - t.min()) / max(float(np.ptp(t)), 1e-6)
    bg = c0 + (c1 - c0) * t[..., None]
    # ... with soft blotches (lighting / texture).
    bg *= (0.8 + 0.4 * smooth_field(rng, size))[..., None]
    # Foreground: a saturated colour shaded by the shape's own grey levels.
    fg = rng.uniform(30, 255, 3).astype(f32) * (0.35 + 0.65 * shape01)[..., None]
    alpha = np.clip(shape01 * 1.6, 0, 1)[..., None]
    img = bg + (fg - bg) * alpha
    img += (rng.random(img.shape, dtype=f32) - f32(0.5)) * f32(10.0)  # grain, sd 2.9
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def synthetic_shape(rng, cls, size):
    """Smooth per-class pattern in [0,1] when Fashion-MNIST is absent."""
    w, h = size
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    fx, fy = 1 + cls % 4, 1 + (cls // 4) % 4
    ph = rng.uniform(0, 2 * np.pi, 2)
    v = (np.sin(2 * np.pi * fx * xx / w + ph[0]) * np.cos(2 * np.pi * fy * yy / h + ph[1])
         + smooth_field(rng, size, 5) - 0.5)
    return ((v - v.min()) / max(float(np.ptp(v)), 1e-6)).astype(np.float32)


def load_fashion(data_dir):
    """(images, labels) of Fashion-MNIST train, or None if absent/unreadable."""
    try:
        imgs = read_idx(os.path.join(data_dir, "train-images-idx3-ubyte.gz"), 0x803)
        labs = read_idx(os.path.join(data_dir, "train-labels-idx1-ubyte.gz"), 0x801)
    except (OSError, ValueError, EOFError) as e:
        print(f"note: Fashion-MNIST not usable ({e}); drawing synthetic patterns",
              file=sys.stderr)
        return None
    if len(imgs) != len(labs):
        print("note: Fashion-MNIST image/label counts differ; drawing synthetic "
              "patterns", file=sys.stderr)
        return None
    return imgs, labs


def class_names(n, fashion):
    width = len(str(n - 1))
    return [f"{c:0{width}d}" + (f"_{NAMES[c % 10]}" if fashion else "") for c in range(n)]


def prepare_out(out, force):
    """Refuse a non-empty folder unless --force; with --force remove what an
    earlier run of this tool recorded in its marker (nothing else)."""
    if not os.path.isdir(out):
        if os.path.exists(out):
            sys.exit(f"error: {out} exists and is not a directory")
        os.makedirs(out)
        return
    entries = os.listdir(out)
    if not entries:
        return
    if not force:
        sys.exit(f"error: {out} is not empty ({len(entries)} entries); "
                 "use --force to overwrite or choose another --out")
    try:
        with open(os.path.join(out, MARKER)) as f:
            made = json.load(f).get("classes", [])
    except (OSError, ValueError):
        made = []
    for name in made:
        p = os.path.join(out, name)
        if os.path.basename(name) == name and os.path.isdir(p):
            shutil.rmtree(p)
    left = [e for e in os.listdir(out) if e != MARKER]
    if left:
        print(f"warning: --force: {len(left)} entries in {out} were not made by this "
              f"tool and are kept (e.g. {sorted(left)[0]!r}); an ImageFolder reader "
              "will see them", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output folder (ImageFolder root)")
    ap.add_argument("--classes", type=int, default=10, help="class folders (default %(default)s)")
    ap.add_argument("--per-class", type=int, default=200, help="images per class (default %(default)s)")
    ap.add_argument("--size", type=parse_size, default=(256, 256),
                    help="image size, N or WIDTHxHEIGHT (default 256x256)")
    ap.add_argument("--max-size", type=parse_size, default=None,
                    help="mixed sizes: each image's width and height are drawn "
                    "uniformly between --size and this, N or WIDTHxHEIGHT")
    ap.add_argument("--quality", type=int, default=90, help="JPEG quality 1..95 (default %(default)s)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the tints (default %(default)s)")
    ap.add_argument("--data", default=FASHION, help="Fashion-MNIST folder (default %(default)s)")
    ap.add_argument("--synthetic", action="store_true", help="draw synthetic patterns even "
                    "if Fashion-MNIST is present")
    ap.add_argument("--photos", metavar="DIR", help="cut the images from the photographs "
                    "(*.jpg) under DIR, one photograph per class")
    ap.add_argument("--force", action="store_true", help="write into a non-empty folder "
                    "(removes the classes an earlier run of this tool made there)")
    a = ap.parse_args()
    if a.classes < 1 or a.per_class < 1 or not 1 <= a.quality <= 95 or a.seed < 0:
        ap.error("--classes and --per-class must be >= 1, --quality in 1..95, --seed >= 0")
    if a.max_size is not None and (a.max_size[0] < a.size[0] or a.max_size[1] < a.size[1]):
        ap.error("--max-size must be at least --size in both dimensions")

    t0 = time.perf_counter()
    photos = None
    if a.photos:
        paths = sorted(os.path.join(r, f) for r, _, fs in os.walk(a.photos) for f in fs
                       if f.lower().endswith((".jpg", ".jpeg")))
        if len(paths) < a.classes:
            sys.exit(f"error: --photos {a.photos}: {len(paths)} photographs, fewer than "
                     f"--classes {a.classes}")
        photos = [Image.open(p).convert("RGB") for p in paths[:a.classes]]
        small = [p for p, im in zip(paths, photos)
                 if im.width < (a.max_size or a.size)[0] or im.height < (a.max_size or a.size)[1]]
        if small:
            sys.exit(f"error: {small[0]} is smaller than the largest image asked for")
    fashion = None if a.synthetic or photos else load_fashion(a.data)
    picks = None
    if fashion is not None:
        imgs, labs = fashion
        # Class c takes label c % 10; classes beyond 10 take later images of it.
        by_label = [np.flatnonzero(labs == l) for l in range(10)]
        picks = []
        for c in range(a.classes):
            idx = by_label[c % 10]
            start = (c // 10) * a.per_class
            if start + a.per_class > len(idx):
                sys.exit(f"error: Fashion-MNIST label {c % 10} has {len(idx)} images, "
                         f"not enough for class {c} x {a.per_class} (lower --per-class)")
            picks.append(idx[start:start + a.per_class])
    names = class_names(a.classes, fashion is not None)
    prepare_out(a.out, a.force)

    total = 0
    for c, name in enumerate(names):
        d = os.path.join(a.out, name)
        os.makedirs(d, exist_ok=True)
        for i in range(a.per_class):
            rng = np.random.default_rng([a.seed, c, i])
            size = a.size
            if a.max_size is not None:
                size = (int(rng.integers(a.size[0], a.max_size[0] + 1)),
                        int(rng.integers(a.size[1], a.max_size[1] + 1)))
            path = os.path.join(d, f"{i:05d}.jpg")
            if photos is not None:
                im = photos[c]
                x = int(rng.integers(0, im.width - size[0] + 1))
                y = int(rng.integers(0, im.height - size[1] + 1))
                im.crop((x, y, x + size[0], y + size[1])).save(path, "JPEG", quality=a.quality)
                total += os.path.getsize(path)
                continue
            if picks is not None:
                shape = upscale(imgs[picks[c][i]], size)
            else:
                shape = synthetic_shape(rng, c, size)
            path = os.path.join(d, f"{i:05d}.jpg")
            Image.fromarray(tint(shape, rng, size), "RGB").save(
                path, "JPEG", quality=a.quality)
            total += os.path.getsize(path)
    with open(os.path.join(a.out, MARKER), "w") as f:
        json.dump({"classes": names, "per_class": a.per_class, "size": list(a.size),
                   "max_size": list(a.max_size) if a.max_size is not None else None,
                   "quality": a.quality, "seed": a.seed,
                   "source": ("photos:" + a.photos) if photos is not None else
                   "fashion-mnist" if picks is not None else "synthetic"}, f)
        f.write("\n")

    n = a.classes * a.per_class
    src = (f"windows of the photographs in {a.photos}, one per class" if photos is not None
           else f"Fashion-MNIST train ({a.data}), class folder = label"
           if picks is not None else "synthetic smooth patterns")
    print(f"made {n} JPEGs in {a.out}: {a.classes} classes ({names[0]} .. {names[-1]}) "
          f"x {a.per_class}, {a.size[0]}x{a.size[1]}"
          + (f" to {a.max_size[0]}x{a.max_size[1]}" if a.max_size is not None else "")
          + f" RGB, quality {a.quality}, seed {a.seed}")
    print(f"content: {src}" + ("" if photos is not None else
                                ", tinted RGB over gradient backgrounds"))
    print(f"size: {total / 2**20:.1f} MiB, mean {total / n / 1024:.1f} KiB per file; "
          f"took {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
