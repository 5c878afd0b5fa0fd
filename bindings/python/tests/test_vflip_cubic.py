"""RandomVerticalFlip and Resize with Inter.BICUBIC from Python (issue 31):
MindSpore's names and arguments, against numpy (a double-precision Keys
reference written here) and, where python3-opencv is installed, against
cv2.resize INTER_CUBIC."""
import numpy as np
import pytest

import sluice.dataset as ds
import sluice.dataset.vision as vision
import sluice.dataset.vision.c_transforms as c_transforms


def noise(h, w, c, seed):
    return np.random.default_rng(seed).integers(0, 256, (h, w, c), dtype=np.uint8)


def test_vertical_flip_values_and_refusals():
    img = noise(5, 4, 3, 1)
    assert np.array_equal(vision.RandomVerticalFlip(1.0)(img), img[::-1])
    assert np.array_equal(vision.RandomVerticalFlip(0.0)(img), img)
    gray = np.ascontiguousarray(img[:, :, 0])
    assert np.array_equal(vision.RandomVerticalFlip(1.0)(gray), gray[::-1])
    assert c_transforms.RandomVerticalFlip is vision.RandomVerticalFlip
    assert "random_vertical_flip" in repr(vision.RandomVerticalFlip())
    with pytest.raises(ValueError, match="RandomVerticalFlip: the probability .* got 1.5"):
        vision.RandomVerticalFlip(1.5)
    # one seed, two coins: the decisions differ for some seeds, agree for others
    h, v = vision.RandomHorizontalFlip(), vision.RandomVerticalFlip()
    pairs = {(not np.array_equal(h(img, seed=s), img), not np.array_equal(v(img, seed=s), img))
             for s in range(40)}
    assert pairs == {(False, False), (False, True), (True, False), (True, True)}


def test_vertical_flip_in_a_pipeline():
    data = np.stack([noise(6, 4, 1, s) for s in range(16)])
    d = ds.NumpySlicesDataset({"image": data}, shuffle=False)
    d = d.map(vision.RandomVerticalFlip(0.5), "image")
    rows = [r[0].asnumpy() for r in d.create_tuple_iterator(num_epochs=1)]
    flipped = [np.array_equal(r, x[::-1]) for r, x in zip(rows, data)]
    assert all(f or np.array_equal(r, x) for f, r, x in zip(flipped, rows, data))
    assert 0 < sum(flipped) < 16


def keys(x):
    a = -0.75
    x = np.abs(x)
    return np.where(x <= 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                    np.where(x < 2, ((a * x - 5 * a) * x + 8 * a) * x - 4 * a, 0.0))


def cubic_matrix(n_in, n_out):
    """(n_out, n_in): OpenCV's INTER_CUBIC along one axis, border replicated."""
    f = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
    s = np.floor(f).astype(int)
    m = np.zeros((n_out, n_in))
    for k in range(-1, 3):
        np.add.at(m, (np.arange(n_out), np.clip(s + k, 0, n_in - 1)), keys(f - (s + k)))
    return m


def reference(img, oh, ow):
    out = np.einsum("yh,hwc,xw->yxc", cubic_matrix(img.shape[0], oh), img.astype(np.float64),
                    cubic_matrix(img.shape[1], ow))
    return np.clip(np.floor(out + 0.5), 0, 255)


SIZES = [((7, 5, 1), (13, 11)), ((9, 11, 3), (4, 5)), ((6, 8, 3), (12, 16)),
         ((20, 17, 3), (7, 31))]


def test_bicubic_against_the_reference():
    assert vision.Inter.BICUBIC == vision.Inter.CUBIC == 2
    for k, ((h, w, c), (oh, ow)) in enumerate(SIZES):
        img = noise(h, w, c, k)
        got = vision.Resize((oh, ow), interpolation=vision.Inter.BICUBIC)(img)
        assert got.shape == (oh, ow, c) and got.dtype == np.uint8
        assert np.abs(got.astype(int) - reference(img, oh, ow)).max() <= 1
    img = noise(12, 9, 3, 9)
    shorter = vision.Resize(6, interpolation=vision.Inter.BICUBIC)(img)
    assert np.array_equal(shorter, vision.Resize((8, 6), vision.Inter.BICUBIC)(img))
    crop = vision.RandomResizedCrop((5, 5), scale=(1, 1), ratio=(0.75, 0.75),
                                    interpolation=vision.Inter.BICUBIC)
    assert np.array_equal(crop(img), vision.Resize((5, 5), vision.Inter.BICUBIC)(img))


def test_bicubic_against_opencv():
    cv2 = pytest.importorskip("cv2")
    for k, ((h, w, c), (oh, ow)) in enumerate(SIZES):
        img = noise(h, w, c, k)
        got = vision.Resize((oh, ow), interpolation=vision.Inter.BICUBIC)(img)
        want = cv2.resize(img, (ow, oh), interpolation=cv2.INTER_CUBIC).reshape(got.shape)
        assert np.abs(got.astype(int) - want).max() <= 1
