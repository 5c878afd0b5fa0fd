"""Datasets from Python: sources, nodes, iterators, shapes and values (equal
to the C engine's, through bench/dump_pipeline, a public-API C program),
determinism for a seed, epochs, and Python callables as map operations."""
import os
import subprocess
import sys

import numpy as np
import pytest

import sluice
import sluice.dataset as ds
import sluice.dataset.transforms as transforms
import sluice.dataset.vision as vision
from conftest import fashion_or_fail, labels, make_mnist, pixels, python_env


def lenet(d, workers=2):
    """The seeds' LeNet preprocessing, as the issue writes it."""
    d = d.map(operations=[vision.Resize((32, 32)), vision.Rescale(1 / 255, 0),
                          vision.Rescale(1 / 0.3081, -0.1307 / 0.3081), vision.HWC2CHW()],
              input_columns="image", num_parallel_workers=workers)
    return d.map(operations=transforms.TypeCast(sluice.int32), input_columns="label")


@pytest.fixture(autouse=True)
def seed_zero():
    ds.config.set_seed(0)
    yield
    ds.config.set_seed(0)


def test_source_shapes_and_file_order(mnist):
    d = ds.MnistDataset(mnist, usage="train", shuffle=False)
    assert d.get_dataset_size() == 100
    assert d.get_col_names() == ["image", "label"]
    assert d.output_types() == ["uint8", "uint32"]
    assert d.output_shapes() == [[28, 28, 1], []]
    rows = list(d)
    assert len(rows) == 100
    image, label = rows[7]
    assert isinstance(image, sluice.Tensor)
    assert image.shape == (28, 28, 1) and image.dtype == "uint8"
    assert np.array_equal(np.asarray(image)[:, :, 0], pixels(7, 1)[0])
    assert label.item() == 7 and label.shape == ()
    # usage test and all
    assert ds.MnistDataset(mnist, usage="test").get_dataset_size() == 20
    assert ds.MnistDataset(mnist).get_dataset_size() == 120


def test_lenet_pipeline_shapes(mnist):
    d = lenet(ds.MnistDataset(mnist, usage="train")).shuffle(50).batch(32, drop_remainder=True)
    assert d.get_dataset_size() == 3
    assert d.output_shapes() == [[32, 1, 32, 32], [32]]
    assert d.output_types() == ["float32", "int32"]
    n = 0
    for image, label in d.create_tuple_iterator(num_epochs=1):
        assert image.shape == (32, 1, 32, 32) and image.dtype == "float32"
        assert label.shape == (32,) and label.dtype == "int32"
        n += 1
    assert n == 3
    # keep_remainder: a last batch of 4
    sizes = [len(label) for _, label in lenet(ds.MnistDataset(mnist, usage="train")).batch(32)]
    assert sizes == [32, 32, 32, 4]


def test_issue_example_on_fashion_mnist():
    root = fashion_or_fail()
    d = ds.MnistDataset(root, usage="train")
    d = d.map(operations=[vision.Resize((32, 32)), vision.Rescale(1 / 255, 0),
                          vision.Rescale(1 / 0.3081, -0.1307 / 0.3081), vision.HWC2CHW()],
              input_columns="image", num_parallel_workers=2)
    d = d.map(operations=transforms.TypeCast("int32"), input_columns="label")
    d = d.shuffle(10000).batch(32, drop_remainder=True).repeat(1)
    assert d.get_dataset_size() == 1875
    seen = np.zeros(10, dtype=np.int64)
    n = 0
    for image, label in d.create_tuple_iterator(num_epochs=1):
        n += 1
        seen += np.bincount(np.asarray(label), minlength=10)
    assert n == 1875
    assert (seen == 6000).all()  # 60000 images, 6000 per class, 1875 * 32 = 60000
    for row in d.take(1).create_dict_iterator(num_epochs=1):
        assert sorted(row) == ["image", "label"]


def test_values_equal_the_c_engine(mnist, tmp_path):
    """bench/dump_pipeline runs the LeNet ops through the C API in file order;
    the Python iterator must give the same bytes."""
    dump = os.environ.get("SLUICE_TEST_DUMP_PIPELINE")
    if not dump or not os.path.exists(dump):
        pytest.skip("SLUICE_TEST_DUMP_PIPELINE is not set (run through make check)")
    img_out, lab_out = str(tmp_path / "images.f32"), str(tmp_path / "labels.i32")
    subprocess.run([dump, "--usage", "train", mnist, img_out, lab_out], check=True)
    want_images = np.fromfile(img_out, dtype=np.float32).reshape(-1, 1, 32, 32)
    want_labels = np.fromfile(lab_out, dtype=np.int32)
    assert len(want_images) == 100
    for workers in (1, 3):
        d = lenet(ds.MnistDataset(mnist, usage="train", shuffle=False), workers)
        got = list(d.create_tuple_iterator(num_epochs=1, output_numpy=True))
        images = np.stack([g[0] for g in got])
        assert images.tobytes() == want_images.tobytes()
        assert np.array_equal(np.array([g[1] for g in got]), want_labels)
    # batched, the same values, contiguous
    batches = list(lenet(ds.MnistDataset(mnist, usage="train", shuffle=False))
                   .batch(25).create_tuple_iterator(num_epochs=1, output_numpy=True))
    assert np.concatenate([b[0] for b in batches]).tobytes() == want_images.tobytes()


def test_eager_ops_equal_the_pipeline(mnist):
    resize = vision.Resize((32, 32))
    rescale = vision.Rescale(1 / 255, 0)
    row = next(iter(ds.MnistDataset(mnist, usage="train", shuffle=False)
                    .map([resize, rescale], input_columns="image")))
    eager = rescale(resize(pixels(0, 1)[0][:, :, None]))
    assert isinstance(eager, np.ndarray)
    assert eager.tobytes() == np.asarray(row[0]).tobytes()
    assert transforms.TypeCast(np.int64)(np.array([1.9, -2.5], dtype=np.float32)).tolist() == [1, -2]
    assert transforms.Compose([resize, vision.HWC2CHW()])(
        np.zeros((8, 8, 3), np.uint8)).shape == (3, 32, 32)


def test_functional_nodes(mnist):
    base = ds.MnistDataset(mnist, usage="train", shuffle=False)
    taken = base.take(10)
    assert base.get_dataset_size() == 100 and taken.get_dataset_size() == 10
    assert base.skip(95).get_dataset_size() == 5
    assert [lab.item() for _, lab in base.skip(95)] == [5, 6, 7, 8, 9]
    assert base.repeat(3).get_dataset_size() == 300
    assert base.repeat().get_dataset_size() == -1
    assert base.repeat().take(7).get_dataset_size() == 7
    assert len(list(base.take(4).repeat(2))) == 8
    renamed = base.map(vision.HWC2CHW(), input_columns=["image"], output_columns="chw")
    assert renamed.get_col_names() == ["chw", "label"] and base.get_col_names() == ["image", "label"]
    assert "take(10)" in taken.describe() and "mnist" in repr(taken)
    # columns chosen and reordered
    label, image = next(iter(base.create_tuple_iterator(columns=["label", "image"], num_epochs=1)))
    assert label.shape == () and image.shape == (28, 28, 1)


def test_epochs(mnist):
    d = ds.MnistDataset(mnist, usage="train").batch(10)
    it = d.create_tuple_iterator(num_epochs=2)
    first = [tuple(np.asarray(lab)) for _, lab in it]
    second = [tuple(np.asarray(lab)) for _, lab in it]
    assert len(first) == len(second) == 10
    assert first != second  # a new shuffle each epoch
    assert sorted(sum(first, ())) == sorted(sum(second, ())) == sorted(labels(0, 100))
    assert list(it) == []  # both epochs delivered


def test_determinism_for_a_seed(mnist):
    def order(workers, flip=True):
        d = ds.MnistDataset(mnist, usage="train")
        if flip:
            d = d.map(vision.RandomHorizontalFlip(0.5), input_columns="image",
                      num_parallel_workers=workers)
        d = d.shuffle(16).batch(10)
        return [np.asarray(img).tobytes() + np.asarray(lab).tobytes()
                for img, lab in d.create_tuple_iterator(num_epochs=1)]
    ds.config.set_seed(5)
    a, b = order(1), order(3)
    assert a == b
    ds.config.set_seed(6)
    assert order(2) != a
    assert ds.config.get_seed() == 6


def test_shards(mnist):
    # 100 samples in 3 shards of 34: every sample in some shard (two read twice,
    # so that every shard has as many rows, as MindSpore's sampler pads).
    seen = set()
    for shard in range(3):
        d = ds.MnistDataset(mnist, usage="train", num_shards=3, shard_id=shard)
        rows = [lab.item() * 1000 + int(np.asarray(img)[0, 0, 0]) for img, lab in d]
        assert len(rows) == d.get_dataset_size() == 34
        seen.update(rows)
    assert len(seen) == 100


def test_image_folder(make_image_folder):
    root = make_image_folder(3, 4, 20, 12)
    raw = ds.ImageFolderDataset(root, shuffle=False)
    assert raw.get_dataset_size() == 12 and raw.num_classes() == 3
    image, label = next(iter(raw))
    assert image.dtype == "uint8" and image.ndim == 1 and label.dtype == "int32"
    d = ds.ImageFolderDataset(root, decode=True, shuffle=False, num_parallel_workers=2)
    rows = list(d.create_dict_iterator(num_epochs=1, output_numpy=True))
    assert [r["label"].item() for r in rows] == [0] * 4 + [1] * 4 + [2] * 4
    assert all(r["image"].shape == (12, 20, 3) for r in rows)
    assert np.array_equal(vision.Decode()(np.asarray(image)), rows[0]["image"])
    only = ds.ImageFolderDataset(root, class_indexing={"class_2": 0, "class_0": 5},
                                 extensions=[".jpg"], shuffle=False)
    assert sorted(lab.item() for _, lab in only) == [0] * 4 + [5] * 4
    crop = d.map(vision.RandomCrop((8, 8), padding=2), input_columns="image").batch(4)
    assert [img.shape for img, _ in crop] == [(4, 8, 8, 3)] * 3


def test_python_callable(mnist):
    seen = []

    def double(x):
        seen.append(x)  # kept past the call and the pipeline
        assert not x.flags.writeable
        return x.astype(np.float32) * 2
    d = (ds.MnistDataset(mnist, usage="train", shuffle=False)
         .map(double, input_columns="image", num_parallel_workers=3)
         .map(vision.HWC2CHW(), input_columns="image").batch(50))
    out = [np.asarray(img).copy() for img, _ in d]
    del d
    assert np.array_equal(np.concatenate(out)[:, 0], pixels(0, 100).astype(np.float32) * 2)
    assert len(seen) == 100
    assert sorted(int(s[0, 0, 0]) for s in seen) == sorted(int(p[0, 0]) for p in pixels(0, 100))
    # a lambda and a callable object; scalars and lists become arrays
    d = ds.MnistDataset(mnist, usage="train", shuffle=False).take(3)
    assert [lab.item() for _, lab in d.map(lambda x: int(x) + 1, input_columns="label")] == [1, 2, 3]

    class Flatten:
        def __call__(self, x):
            return x.reshape(-1)
    assert [img.shape for img, _ in d.map(transforms.Compose([Flatten()]))] == [(784,)] * 3
    # a Python op between C ops of one map
    fused = d.map([vision.Rescale(2, 0), lambda x: x + 1, vision.HWC2CHW()], input_columns="image")
    img = np.asarray(next(iter(fused))[0])
    assert img.shape == (1, 28, 28) and img[0, 0, 0] == 1.0


@pytest.mark.long
def test_lenet_torch_example_runs():
    """bindings/python/examples/lenet_torch.py, a few steps of each run."""
    pytest.importorskip("torch")
    root = fashion_or_fail()
    example = os.path.join(os.path.dirname(__file__), "..", "examples", "lenet_torch.py")
    out = subprocess.run([sys.executable, example, "--data", root, "--max-steps", "3",
                          "--eval-batches", "2"], check=True, capture_output=True, text=True,
                         env=python_env()).stdout
    assert "sluice to_torch (DLPack)" in out and "torch DataLoader" in out
    assert out.count("accuracy") == 3 and "on 64 test images" in out


def test_readme_example(capsys):
    """The Python block of README.md's "Python" section runs as written."""
    fashion_or_fail()
    readme = os.path.join(os.path.dirname(__file__), "..", "..", "..", "README.md")
    text = open(readme).read()
    section = text[text.index("## Python: sluice.dataset"):]
    code = section[section.index("```python\n") + 10:section.index("\n```\n")]
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out == ["1875 [[32, 1, 32, 32], [32]]", "True"]
