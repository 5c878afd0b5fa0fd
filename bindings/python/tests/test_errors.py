"""Every bad input of the C engine's tests (tests/check_bad_input.c) as a
Python exception carrying the C message: FileNotFoundError / OSError for
files when a source is made, ValueError for arguments and shapes, and
RuntimeError for failures while the pipeline runs, after the rows before
them, again on every later call."""
import gzip
import os
import struct

import numpy as np
import pytest

import sluice.dataset as ds
import sluice.dataset.transforms as transforms
import sluice.dataset.vision as vision
from conftest import (TRAIN_IMAGES, TRAIN_LABELS, idx1, idx3, make_mnist, pixels,
                      write_file)


def train_split(root, images, labels, gz=False):
    """An MNIST folder holding only the given train files' bytes."""
    os.makedirs(root, exist_ok=True)
    ext = ".gz" if gz else ""
    img = write_file(os.path.join(root, TRAIN_IMAGES + ext), images, gz)
    lab = write_file(os.path.join(root, TRAIN_LABELS + ext), labels, gz)
    return str(root), img, lab


def run(d):
    """Rows read before the error, and the error."""
    rows = 0
    with pytest.raises(RuntimeError) as err:
        for _ in d.create_tuple_iterator(num_epochs=1):
            rows += 1
    return rows, str(err.value)


# --- MNIST files -----------------------------------------------------------------

def test_missing_folder_and_files(tmp_path):
    missing = str(tmp_path / "no-such-folder")
    with pytest.raises(FileNotFoundError, match=missing):
        ds.MnistDataset(missing, usage="train")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match=TRAIN_IMAGES):
        ds.MnistDataset(empty, usage="train")
    write_file(empty / TRAIN_IMAGES, idx3(0x803, 2, 28, 28, bytes(2 * 784)))
    with pytest.raises(FileNotFoundError, match=TRAIN_LABELS) as err:
        ds.MnistDataset(empty, usage="train")
    assert err.value.errno == 2 and str(empty) in str(err.value)


@pytest.mark.parametrize("magic", [0x801, 0x903, 0x08030000])
def test_wrong_magic(tmp_path, magic):
    root, img, _ = train_split(tmp_path / "m", idx3(magic, 2, 28, 28, bytes(2 * 784)),
                               idx1(0x801, 2, bytes(2)))
    with pytest.raises(OSError, match="magic") as err:
        ds.MnistDataset(root, usage="train")
    assert img in str(err.value) and not isinstance(err.value, FileNotFoundError)


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("cut", [0, 4, 15])
def test_truncated_header(tmp_path, gz, cut):
    head = struct.pack(">IIII", 0x803, 2, 28, 28)[:cut]
    root, img, _ = train_split(tmp_path / "h", head, idx1(0x801, 2, bytes(2)), gz)
    with pytest.raises(OSError, match="truncated") as err:
        ds.MnistDataset(root, usage="train")
    assert img in str(err.value)


def test_truncated_pixels(tmp_path):
    # plain: the size is known, so the source refuses it
    root, img, _ = train_split(tmp_path / "p", idx3(0x803, 5, 28, 28, bytes(3 * 784 + 100)),
                               idx1(0x801, 5, bytes(5)))
    with pytest.raises(OSError, match="truncated"):
        ds.MnistDataset(root, usage="train")
    # gzip: only reading finds out, so the iterator does
    root, img, _ = train_split(tmp_path / "g", idx3(0x803, 5, 28, 28, bytes(3 * 784 + 100)),
                               idx1(0x801, 5, bytes(5)), gz=True)
    d = ds.MnistDataset(root, usage="train")
    assert d.get_dataset_size() == 5
    rows, msg = run(d)
    assert rows == 0 and img in msg and "truncated" in msg


def test_count_mismatch(tmp_path):
    root, img, lab = train_split(tmp_path / "c", idx3(0x803, 5, 28, 28, bytes(5 * 784)),
                                 idx1(0x801, 4, bytes(4)))
    with pytest.raises(OSError) as err:
        ds.MnistDataset(root, usage="train")
    assert img in str(err.value) and lab in str(err.value)


def test_corrupt_and_truncated_gzip(tmp_path):
    root = make_mnist(tmp_path / "z", 300, gz=True)
    path = os.path.join(root, TRAIN_IMAGES + ".gz")
    good = open(path, "rb").read()
    bad = bytearray(good)
    for i in range(len(bad) // 2, len(bad) // 2 + 4):
        bad[i] ^= 0xFF
    write_file(path, bytes(bad))
    rows, msg = run(ds.MnistDataset(root, usage="train"))
    assert rows == 0 and path in msg
    write_file(path, good[: len(good) - 8])  # no trailer
    rows, msg = run(ds.MnistDataset(root, usage="train"))
    assert rows == 0 and path in msg


@pytest.mark.parametrize("gz", [False, True])
def test_absurd_dimensions(tmp_path, gz):
    root, img, _ = train_split(tmp_path / "o", idx3(0x803, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF,
                                                    bytes(64)),
                               idx1(0x801, 0xFFFFFFFF, bytes(64)), gz)
    with pytest.raises(OSError) as err:
        ds.MnistDataset(root, usage="train")
    assert img in str(err.value)
    root, img, _ = train_split(tmp_path / "z", idx3(0x803, 0, 28, 28, b""), idx1(0x801, 0, b""),
                               gz)
    with pytest.raises(OSError, match="no samples"):
        ds.MnistDataset(root, usage="train")


# --- ImageFolder -----------------------------------------------------------------------

def test_image_folder_bad_trees(tmp_path, make_image_folder):
    with pytest.raises(FileNotFoundError):
        ds.ImageFolderDataset(tmp_path / "missing")
    (tmp_path / "noclass").mkdir()
    with pytest.raises(OSError, match=str(tmp_path / "noclass")):
        ds.ImageFolderDataset(tmp_path / "noclass")
    root = make_image_folder(2, 2, 16, 16)
    os.mkdir(os.path.join(root, "z_empty"))
    with pytest.raises(OSError, match="z_empty"):
        ds.ImageFolderDataset(root)
    with pytest.raises(OSError):
        ds.ImageFolderDataset(root, extensions=[".png"])


def test_image_folder_bad_jpegs(make_image_folder):
    root = make_image_folder(2, 3, 16, 12)
    bad = os.path.join(root, "class_1", "zz_fake.jpg")
    write_file(bad, b"this is not a JPEG, only text in a file named .jpg\n")
    rows, msg = run(ds.ImageFolderDataset(root, decode=True, shuffle=False))
    assert rows == 6 and bad in msg and "JPEG" in msg  # the good rows came first
    # without decode the bytes are only bytes
    assert len(list(ds.ImageFolderDataset(root))) == 7
    # a JPEG cut in half
    good = os.path.join(root, "class_0", "img_0.jpg")
    data = open(good, "rb").read()
    os.remove(bad)
    write_file(good, data[: len(data) // 2])
    rows, msg = run(ds.ImageFolderDataset(root, decode=True, shuffle=False))
    assert good in msg


def test_batch_of_unequal_images(make_image_folder, tmp_path):
    a = make_image_folder(1, 2, 16, 16)
    b = make_image_folder(1, 2, 20, 10)
    os.rename(os.path.join(b, "class_0"), os.path.join(a, "class_1"))
    d = ds.ImageFolderDataset(a, decode=True, shuffle=False).batch(4)
    rows, msg = run(d)
    assert rows == 0 and "batch" in msg and "(10, 20, 3)" in msg


# --- arguments ---------------------------------------------------------------------------

def test_bad_sampler_arguments(mnist):
    for shards, shard in [(0, 0), (-1, 0), (3, 3), (3, 7), (3, -1), (200, 0)]:
        with pytest.raises(ValueError, match="num_shards|shard_id") as err:
            ds.MnistDataset(mnist, usage="train", num_shards=shards, shard_id=shard)
        assert mnist in str(err.value)
    with pytest.raises(ValueError, match="together"):
        ds.MnistDataset(mnist, num_shards=2)
    with pytest.raises(ValueError, match="num_samples"):
        ds.MnistDataset(mnist, num_samples=-1)
    with pytest.raises(ValueError, match="usage"):
        ds.MnistDataset(mnist, usage="validation")
    with pytest.raises(ValueError, match="num_parallel_workers"):
        ds.ImageFolderDataset(mnist, decode=True, num_parallel_workers=0)
    # MindSpore's arguments sluice has no object for: refused, not ignored
    with pytest.raises(ValueError, match="num_parallel_workers"):
        ds.MnistDataset(mnist, num_parallel_workers=0)
    with pytest.raises(ValueError, match="no sampler objects"):
        ds.MnistDataset(mnist, sampler=object())
    with pytest.raises(ValueError, match="no dataset cache"):
        ds.MnistDataset(mnist, cache=object())
    with pytest.raises(ValueError, match="no sampler objects"):
        ds.ImageFolderDataset(mnist, sampler=object())
    assert ds.MnistDataset(mnist, "train", None, 2, False).get_dataset_size() == 100
    d = ds.MnistDataset(mnist, usage="train")
    with pytest.raises(ValueError, match=r"column_order must be \['image', 'label'\]"):
        d.map(vision.HWC2CHW(), input_columns="image", column_order=["label", "image"])
    assert d.map(vision.HWC2CHW(), "image", "img", ["img", "label"]).get_col_names() == \
        ["img", "label"]
    with pytest.raises(ValueError, match="python_multiprocessing"):
        d.map(vision.HWC2CHW(), python_multiprocessing=True)
    with pytest.raises(ValueError, match="no dataset cache"):
        d.map(vision.HWC2CHW(), cache=object())


def test_bad_node_arguments(mnist):
    d = ds.MnistDataset(mnist, usage="train")
    for call, word in [(lambda: d.batch(0), "batch_size"), (lambda: d.batch(-3), "batch_size"),
                       (lambda: d.shuffle(0), "buffer_size"), (lambda: d.shuffle(-5), "buffer_size"),
                       (lambda: d.repeat(0), "repeat"), (lambda: d.repeat(-2), "repeat"),
                       (lambda: d.take(-2), "take"), (lambda: d.skip(-1), "skip"),
                       (lambda: d.batch(2, num_parallel_workers=0), "num_parallel_workers"),
                       (lambda: d.map(vision.HWC2CHW(), num_parallel_workers=300),
                        "num_parallel_workers"),
                       (lambda: d.create_tuple_iterator(num_epochs=0), "num_epochs"),
                       (lambda: d.create_tuple_iterator(columns=["pixels"]), "pixels")]:
        with pytest.raises(ValueError, match=word):
            call()
    assert d.get_dataset_size() == 100  # refused nodes were not appended
    with pytest.raises(TypeError):
        d.batch("32")


def test_map_refused_when_described(mnist):
    d = ds.MnistDataset(mnist, usage="train")
    with pytest.raises(ValueError) as err:
        d.map(vision.HWC2CHW(), input_columns="label")
    assert "hwc2chw" in str(err.value) and "label" in str(err.value) and "uint32 ()" in str(err.value)
    with pytest.raises(ValueError, match="(1, 28, 28)"):
        d.map(vision.HWC2CHW()).map(vision.Decode())
    with pytest.raises(ValueError, match="'pixels'.*'image'"):
        d.map(vision.HWC2CHW(), input_columns="pixels")
    with pytest.raises(ValueError, match="one column"):
        d.map(vision.HWC2CHW(), input_columns=["image", "label"])
    with pytest.raises(TypeError):
        d.map(42)


def test_map_fails_while_running_then_stays_failed(mnist):
    for workers in (1, 3):
        d = ds.MnistDataset(mnist, usage="train", shuffle=False).map(
            transforms.OneHot(3), input_columns="label", num_parallel_workers=workers)
        it = d.create_tuple_iterator(num_epochs=1)
        rows = []
        with pytest.raises(RuntimeError) as err:
            for row in it:
                rows.append(row[1].item() if row[1].ndim == 0 else list(np.asarray(row[1])))
        msg = str(err.value)
        assert len(rows) == 3 and "sample 3" in msg and "one_hot" in msg and "label" in msg
        assert os.path.join(mnist, TRAIN_IMAGES) in msg
        for _ in range(3):  # sticky: the same error, every time
            with pytest.raises(RuntimeError) as again:
                next(it)
            assert str(again.value) == msg


def test_python_callable_errors(mnist):
    def cursed(x):
        if x[0, 0, 0] == pixels(4, 1)[0, 0, 0]:
            raise KeyError("pixel is cursed")
        return x
    rows, msg = run(ds.MnistDataset(mnist, usage="train", shuffle=False).map(cursed))
    assert rows == 4 and "cursed: KeyError: 'pixel is cursed'" in msg and "sample 4" in msg
    rows, msg = run(ds.MnistDataset(mnist, usage="train").map(lambda x: "text"))
    assert rows == 0 and "<lambda>" in msg and "format" in msg
    rows, msg = run(ds.MnistDataset(mnist, usage="train").map(lambda x: x.astype(np.float16)))
    assert rows == 0 and "float32" in msg


def test_gzip_reader_errors_name_the_file(tmp_path):
    """A gzip file whose data is fine but whose labels file is cut short."""
    root = make_mnist(tmp_path / "l", 50, gz=True)
    lab = os.path.join(root, TRAIN_LABELS + ".gz")
    write_file(lab, gzip.compress(idx1(0x801, 50, bytes(20))))
    rows, msg = run(ds.MnistDataset(root, usage="train"))
    assert rows == 0 and lab in msg


def test_decode_limits(make_image_folder):
    """JPEGs declaring more pixels than allowed, and images larger than the
    decode budget, are errors naming the file; nothing is decoded past them."""
    root = make_image_folder(1, 2, 64, 48)
    first = os.path.join(root, "class_0", "img_0.jpg")
    rows, msg = run(ds.ImageFolderDataset(root, decode=True, shuffle=False,
                                          decode_max_pixels=64 * 48 - 1))
    assert rows == 0 and first in msg
    assert len(list(ds.ImageFolderDataset(root, decode=True, decode_max_pixels=64 * 48))) == 2
    rows, msg = run(ds.ImageFolderDataset(root, decode=True, shuffle=False)
                    .set_decode_budget(64 * 48 * 3 - 1))
    assert rows == 0 and first in msg
    fits = ds.ImageFolderDataset(root, decode=True).set_decode_budget(64 * 48 * 3)
    assert len(list(fits)) == 2
    jpeg = np.fromfile(first, dtype=np.uint8)
    assert vision.Decode(max_pixels=64 * 48)(jpeg).shape == (48, 64, 3)
    with pytest.raises(ValueError, match="pixels"):
        vision.Decode(max_pixels=100)(jpeg)
    for bad in (lambda: vision.Decode(max_pixels=0), lambda: vision.Decode(max_pixels=1 << 40),
                lambda: ds.ImageFolderDataset(root, decode_max_pixels=0),
                lambda: ds.ImageFolderDataset(root, decode=True).set_decode_budget(-1)):
        with pytest.raises(ValueError):
            bad()
