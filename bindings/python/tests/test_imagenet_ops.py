"""The ImageNet-style operators from Python: RandomResizedCrop's boxes
against torchvision's sampling (its get_params transcribed here with an
independent generator: the distributions must agree), CenterCrop and
Resize(int) against PIL, RandomColorAdjust against PIL's ImageEnhance and
torchvision's float HSV, and a pipeline with them being deterministic.
Tolerances are stated where the arithmetic differs (PIL rounds its own
way)."""
import math

import numpy as np
import pytest

import sluice.dataset as ds
import sluice.dataset.vision as vision

try:
    import PIL.Image as PIL
    from PIL import ImageEnhance
except ImportError:  # the README's test command installs it (python3-matplotlib needs it)
    pytest.fail("PIL is not installed: apt-get install -y python3-pil", pytrace=False)


def photo_like(h, w, seed=0):
    """Smooth gradients plus noise: closer to a photograph than noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255.0 / max(w - 1, 1), y * 255.0 / max(h - 1, 1),
                     (x + y) * 127.0 / max(h + w - 2, 1)], axis=-1)
    return np.clip(base + rng.normal(0, 12, base.shape), 0, 255).astype(np.uint8)


def test_refused_arguments():
    for make, words in [
            (lambda: vision.RandomResizedCrop(0), ["RandomResizedCrop", "(0, 0)"]),
            (lambda: vision.RandomResizedCrop(8, scale=(0.9, 0.1)), ["scale", "(0.9, 0.1)"]),
            (lambda: vision.RandomResizedCrop(8, ratio=(0, 1)), ["ratio", "(0, 1)"]),
            (lambda: vision.RandomResizedCrop(8, max_attempts=0), ["max_attempts", "0"]),
            (lambda: vision.CenterCrop((0, 4)), ["CenterCrop", "(0, 4)"]),
            (lambda: vision.Resize(0), ["Resize", "0"]),
            (lambda: vision.RandomColorAdjust(brightness=-1), ["brightness", "-1"]),
            (lambda: vision.RandomColorAdjust(contrast=(2, 1)), ["contrast", "(2, 1)"]),
            (lambda: vision.RandomColorAdjust(hue=0.7), ["hue", "0.7"]),
            (lambda: vision.RandomColorAdjust(hue=(-0.6, 0)), ["hue", "-0.6"])]:
        with pytest.raises(ValueError) as e:
            make()
        for word in words:
            assert word in str(e.value), (str(e.value), word)
    with pytest.raises(TypeError, match="scale"):
        vision.RandomResizedCrop(8, scale=0.5)
    with pytest.raises(ValueError, match="random_color_adjust"):
        vision.RandomColorAdjust(0.5)(np.zeros((4, 4), np.uint8))


def torchvision_box(rng, h, w, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    """torchvision.transforms.RandomResizedCrop.get_params, with numpy's
    generator in place of torch's."""
    area = h * w
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target_area = area * rng.uniform(scale[0], scale[1])
        aspect_ratio = math.exp(rng.uniform(log_ratio[0], log_ratio[1]))
        cw = int(round(math.sqrt(target_area * aspect_ratio)))
        ch = int(round(math.sqrt(target_area / aspect_ratio)))
        if 0 < cw <= w and 0 < ch <= h:
            return int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1)), ch, cw
    in_ratio = w / h
    if in_ratio < min(ratio):
        cw = w
        ch = int(round(cw / min(ratio)))
    elif in_ratio > max(ratio):
        ch = h
        cw = int(round(ch * max(ratio)))
    else:
        cw, ch = w, h
    return (h - ch) // 2, (w - cw) // 2, ch, cw


def box_stats(boxes, h, w):
    b = np.array(boxes, dtype=np.float64)
    area = b[:, 2] * b[:, 3] / (h * w)
    logr = np.log(b[:, 3] / b[:, 2])
    centre_y = (b[:, 0] + b[:, 2] / 2) / h
    fallback = np.mean((b[:, 0] == (h - b[:, 2]) // 2) & (b[:, 1] == (w - b[:, 3]) // 2) &
                       ((b[:, 2] == h) | (b[:, 3] == w)))
    return area.mean(), logr.mean(), logr.std(), centre_y.mean(), fallback


@pytest.mark.parametrize("h,w,scale", [(375, 500, (0.08, 1.0)), (1000, 150, (0.08, 1.0)),
                                       (300, 300, (0.5, 1.0))])
def test_random_resized_crop_distribution_as_torchvision(h, w, scale):
    """sluice's boxes and torchvision's (independent generators, 6000 each)
    agree in mean area, mean and spread of log ratio, centre and fallback
    rate, within 4 standard errors (fixed seeds: the test is deterministic)."""
    n = 6000
    op = vision.RandomResizedCrop(224, scale=scale)
    ours = [op.get_box(h, w, seed) for seed in range(n)]
    rng = np.random.default_rng(1234)
    theirs = [torchvision_box(rng, h, w, scale) for _ in range(n)]
    for t, l, bh, bw in ours:
        assert 0 <= t and 0 <= l and 1 <= bh and 1 <= bw and t + bh <= h and l + bw <= w
    a, b = box_stats(ours, h, w), box_stats(theirs, h, w)
    # standard errors of the means: area in [0, 1] (sd <= 0.3), log ratio
    # (sd <= 0.3), centre (sd <= 0.3), a rate (sd <= 0.5)
    se = 4 * 0.3 / math.sqrt(n / 2)
    assert abs(a[0] - b[0]) < se, (a, b)
    assert abs(a[1] - b[1]) < se, (a, b)
    assert abs(a[2] - b[2]) < se, (a, b)
    assert abs(a[3] - b[3]) < se, (a, b)
    assert abs(a[4] - b[4]) < 4 * 0.5 / math.sqrt(n / 2), (a, b)


def test_random_resized_crop_is_crop_then_resize():
    img = photo_like(60, 90)
    op = vision.RandomResizedCrop((24, 32))
    assert vision.RandomResizedCrop(24)(img, seed=1).shape == (24, 24, 3)
    seen = set()
    for seed in range(40):
        t, l, bh, bw = op.get_box(60, 90, seed)
        seen.add((t, l, bh, bw))
        want = vision.Resize((24, 32))(np.ascontiguousarray(img[t:t + bh, l:l + bw]))
        assert np.array_equal(op(img, seed=seed), want), seed
    assert len(seen) > 30


def test_center_crop_against_pil():
    """Exactly PIL's crop at MindSpore's offsets (floor((H - h) / 2)), and
    zeros around the image when the window is larger."""
    for (h, w), (ch, cw) in [((256, 341), (224, 224)), ((7, 8), (4, 4)), ((9, 9), (4, 6))]:
        img = photo_like(h, w, seed=h)
        top, left = (h - ch) // 2, (w - cw) // 2
        want = np.asarray(PIL.fromarray(img).crop((left, top, left + cw, top + ch)))
        assert np.array_equal(vision.CenterCrop((ch, cw))(img), want)
    img = photo_like(5, 4)
    out = vision.CenterCrop((8, 7))(img)
    want = np.zeros((8, 7, 3), np.uint8)
    want[2:7, 2:6] = img  # 3 rows of padding: 2 on top; 3 columns: 2 on the left
    assert np.array_equal(out, want)


def test_resize_int_shorter_side():
    """The shorter side becomes the int and the longer MindSpore's
    lround(float32(longer / shorter) * size); where torchvision's truncation
    differs it is one pixel less. Pixels are those of Resize((h, w))."""
    for (h, w), size in [((480, 640), 256), ((500, 333), 256), ((300, 300), 256),
                         ((2, 3), 5), ((375, 500), 224)]:
        img = photo_like(h, w)
        out = vision.Resize(size)(img)
        ratio = np.float32(max(h, w)) / np.float32(min(h, w)) * np.float32(size)
        longer = int(math.floor(float(ratio) + 0.5))
        want = (size, longer) if h < w else (longer, size)
        assert out.shape[:2] == want, ((h, w), out.shape)
        torch_longer = int(size * max(h, w) / min(h, w))
        assert longer - torch_longer in (0, 1)
        assert np.array_equal(out, vision.Resize(want)(img))


def test_resize_int_against_pil_when_enlarging():
    """Enlarging, PIL's bilinear filter and OpenCV's INTER_LINEAR (sluice's)
    sample the same points; they round differently: at most 1 level apart.
    (Shrinking, PIL averages over the whole footprint while OpenCV's
    bilinear reads 2x2 pixels, so they are not compared.)"""
    img = photo_like(30, 40)
    out = vision.Resize(64)(img)
    assert out.shape == (64, 85, 3)
    want = np.asarray(PIL.fromarray(img).resize((85, 64), PIL.BILINEAR))
    diff = np.abs(out.astype(int) - want.astype(int))
    assert diff.max() <= 1, diff.max()


def hsv_turn(img, hue):
    """torchvision's adjust_hue on float RGB (its _rgb2hsv, _hsv2rgb),
    rounded to uint8."""
    rgb = img.astype(np.float64) / 255
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    maxc, minc = rgb.max(-1), rgb.min(-1)
    cr = maxc - minc
    s = cr / np.where(maxc == 0, 1, maxc)
    crd = np.where(cr == 0, 1, cr)
    rc, gc, bc = (maxc - r) / crd, (maxc - g) / crd, (maxc - b) / crd
    h = np.where(maxc == r, bc - gc, np.where(maxc == g, 2 + rc - bc, 4 + gc - rc))
    h = np.where(cr == 0, 0, h)
    h = (h / 6 + 1 + hue) % 1.0
    i = np.floor(h * 6) % 6
    f = h * 6 - np.floor(h * 6)
    v = maxc
    p, q, t = v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))
    out = np.select([(i == k)[..., None] for k in range(6)],
                    [np.stack(c, -1) for c in [(v, t, p), (q, v, p), (p, v, t), (p, q, v),
                                               (t, p, v), (v, p, q)]])
    return np.clip(np.floor(out * 255 + 0.5), 0, 255).astype(np.uint8)


def test_color_adjust_against_pil_and_torchvision():
    """One adjustment at a time (a fixed factor): PIL's ImageEnhance for
    brightness, contrast and saturation (its "Color"), within 1 level (PIL
    rounds its blends its own way); torchvision's float HSV for hue, within
    1 level."""
    img = photo_like(40, 50, seed=3)
    pil = PIL.fromarray(img)
    for f in (0.3, 0.8, 1.6):
        for name, enhancer, kw in [("brightness", ImageEnhance.Brightness, "brightness"),
                                   ("contrast", ImageEnhance.Contrast, "contrast"),
                                   ("saturation", ImageEnhance.Color, "saturation")]:
            out = vision.RandomColorAdjust(**{kw: (f, f)})(img, seed=5)
            want = np.asarray(enhancer(pil).enhance(f))
            diff = np.abs(out.astype(int) - want.astype(int)).max()
            assert diff <= 1, (name, f, diff)
    for hue in (-0.4, -0.1, 0.25, 0.5):
        out = vision.RandomColorAdjust(hue=(hue, hue))(img, seed=5)
        diff = np.abs(out.astype(int) - hsv_turn(img, hue).astype(int)).max()
        assert diff <= 1, (hue, diff)
    assert np.array_equal(vision.RandomColorAdjust()(img, seed=9), img)


def test_color_adjust_factor_ranges():
    """A float f means [max(0, 1 - f), 1 + f] (hue: [-f, f]), as MindSpore:
    brightness 0.5 scales a pixel of 100 to somewhere in [50, 150], both ends
    reached over the seeds."""
    img = np.full((2, 2, 3), 100, np.uint8)
    got = {int(vision.RandomColorAdjust(brightness=0.5)(img, seed=s)[0, 0, 0])
           for s in range(300)}
    assert min(got) <= 53 and max(got) >= 147 and min(got) >= 50 and max(got) <= 150
    got = {int(vision.RandomColorAdjust(brightness=1.5)(img, seed=s)[0, 0, 0])
           for s in range(300)}
    assert min(got) <= 5  # clipped at 0, not at 1 - 1.5 < 0


def test_imagenet_pipelines_deterministic(make_image_folder):
    """The train transform (RandomResizedCrop, flip, colour) and the eval
    transform (Resize(int), CenterCrop) in a pipeline: fixed shapes, the
    same rows for a seed whatever the workers, other rows for another
    seed."""
    root = make_image_folder(2, 6, 48, 36)

    def train(workers, seed):
        ds.config.set_seed(seed)
        d = ds.ImageFolderDataset(root, decode=True, shuffle=False,
                                  num_parallel_workers=workers)
        d = d.map([vision.RandomResizedCrop(24), vision.RandomHorizontalFlip(),
                   vision.RandomColorAdjust(0.4, 0.4, 0.4, 0.1)], input_columns="image",
                  num_parallel_workers=workers).batch(4)
        return [img for img, _ in d.create_tuple_iterator(num_epochs=1, output_numpy=True)]

    one, two, other = train(1, 7), train(2, 7), train(2, 8)
    assert [b.shape for b in one] == [(4, 24, 24, 3)] * 3
    assert all(np.array_equal(a, b) for a, b in zip(one, two))
    assert not all(np.array_equal(a, b) for a, b in zip(one, other))

    d = ds.ImageFolderDataset(root, decode=True, shuffle=False)
    d = d.map([vision.Resize(30), vision.CenterCrop(28)], input_columns="image").batch(4)
    rows = [img for img, _ in d.create_tuple_iterator(num_epochs=1, output_numpy=True)]
    assert [b.shape for b in rows] == [(4, 28, 28, 3)] * 3
    # the decode fused with the resize and crop (the default) against the
    # separate ops: the same shapes, close values (36x48 -> 30x40 is within
    # 2x, so decoded at full scale: rounding only)
    exact = [img for img, _ in d.set_decode_fusion(False).create_tuple_iterator(
        num_epochs=1, output_numpy=True)]
    diff = [np.abs(a.astype(int) - b.astype(int)) for a, b in zip(rows, exact)]
    assert max(x.max() for x in diff) <= 1
    for mode in ("off", "crop", "scaled"):
        assert len(list(d.set_decode_fusion(mode).create_tuple_iterator(num_epochs=1))) == 3
    with pytest.raises(ValueError, match="'off', 'crop', 'scaled'"):
        d.set_decode_fusion("fast")
    plain = ds.ImageFolderDataset(root, decode=True, shuffle=False)
    by_hand = [vision.CenterCrop(28)(vision.Resize(30)(img))
               for img, _ in plain.create_tuple_iterator(num_epochs=1, output_numpy=True)]
    assert all(np.array_equal(e, h) for e, h in zip(np.concatenate(exact), by_hand))
