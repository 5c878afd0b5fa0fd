"""Operators from Python: MindSpore's names and arguments, the C engine's
refusals as ValueError, and what each computes (called eagerly on numpy
arrays, against numpy)."""
import numpy as np
import pytest

import sluice
import sluice.dataset.transforms as transforms
import sluice.dataset.vision as vision


def image(h=6, w=5, c=3, dtype=np.uint8):
    return (np.arange(h * w * c).reshape(h, w, c) * 7 % 251).astype(dtype)


def test_refused_arguments():
    for make, word in [(lambda: vision.Resize((0, 32)), "Resize"),
                       (lambda: vision.Resize((32, -1)), "Resize"),
                       (lambda: vision.Resize((32, 32), interpolation=7), "interpolation"),
                       (lambda: vision.Rescale(float("inf"), 0), "Rescale"),
                       (lambda: vision.Rescale(1, float("nan")), "Rescale"),
                       (lambda: vision.Normalize([0.5], [0.0]), "std"),
                       (lambda: vision.Normalize([0.5, 0.5], [1.0]), "as many"),
                       (lambda: vision.Normalize([], []), "mean"),
                       (lambda: vision.Normalize([0.5], [1.0], is_hwc=False), "HWC"),
                       (lambda: vision.RandomCrop(0), "RandomCrop"),
                       (lambda: vision.RandomCrop(8, padding=-1), "padding"),
                       (lambda: vision.RandomCrop(8, padding=(1, 2)), "every side"),
                       (lambda: vision.RandomCrop(8, pad_if_needed=True), "pad_if_needed"),
                       (lambda: vision.RandomCrop(8, fill_value=3), "zeros"),
                       (lambda: vision.RandomHorizontalFlip(1.5), "prob"),
                       (lambda: vision.Decode(to_pil=True), "PIL"),
                       (lambda: transforms.OneHot(0), "num_classes"),
                       (lambda: transforms.OneHot(3, smoothing_rate=0.1), "smoothing"),
                       (lambda: transforms.TypeCast("int8"), "int8"),
                       (lambda: transforms.TypeCast(np.float16), "float16"),
                       (lambda: transforms.Compose([]), "Compose")]:
        with pytest.raises(ValueError, match=word):
            make()
    with pytest.raises(TypeError):
        vision.Resize("big")
    with pytest.raises(TypeError):
        transforms.TypeCast(object())


def test_wrong_input_when_applied():
    with pytest.raises(ValueError, match="hwc2chw"):
        vision.HWC2CHW()(np.zeros((4, 4), np.uint8))
    with pytest.raises(ValueError, match="(?i)jpeg"):
        vision.Decode()(np.frombuffer(b"not a jpeg at all", np.uint8))
    with pytest.raises(ValueError, match="outside"):
        transforms.OneHot(3)(np.array([0, 5], np.int32))


def test_values():
    img = image()
    out = vision.Rescale(0.5, -1)(img)
    assert out.dtype == np.float32 and np.allclose(out, img * 0.5 - 1)
    out = vision.Normalize([10, 20, 30], [2, 4, 5])(img)
    assert np.allclose(out, (img - np.array([10, 20, 30])) / np.array([2, 4, 5]), atol=1e-5)
    assert np.array_equal(vision.HWC2CHW()(img), img.transpose(2, 0, 1))
    assert np.array_equal(vision.RandomHorizontalFlip(1.0)(img), img[:, ::-1])
    assert np.array_equal(vision.RandomHorizontalFlip(0.0)(img), img)
    same = vision.Resize((6, 5), interpolation=vision.Inter.NEAREST)(img)
    assert np.array_equal(same, img)
    assert vision.Resize((12, 10))(img).shape == (12, 10, 3)
    crop = vision.RandomCrop((4, 3), padding=1)
    assert crop(img, seed=3).shape == (4, 3, 3)
    assert np.array_equal(crop(img, seed=3), crop(img, seed=3))
    assert any(not np.array_equal(crop(img, seed=3), crop(img, seed=s)) for s in range(4, 12))
    assert np.array_equal(transforms.OneHot(4)(np.array([1, 3], np.int32)),
                          np.array([[0, 1, 0, 0], [0, 0, 0, 1]], np.int32))
    for name in (sluice.int32, "int32", np.int32, np.dtype("int32")):
        assert transforms.TypeCast(name)(np.array([3.7], np.float64)).dtype == np.int32
    assert transforms.TypeCast("uint8")(np.array([300.0, -5.0, np.nan])).tolist() == [255, 0, 0]


def test_names_and_repr():
    assert vision.Inter.LINEAR == vision.Inter.BILINEAR == 0
    assert "Resize" in repr(vision.Resize((2, 2))) and "resize" in repr(vision.Resize((2, 2)))
    assert vision.HWC2CHW()._op.name == "hwc2chw"
