"""Cifar10Dataset and Cifar100Dataset from Python (issue 31): MindSpore's
signatures, columns and types; the rows are the file's CHW planes as HWC,
checked against numpy's own transpose of the bytes written; usage order,
shards and seeded shuffles; refusals as OSError/RuntimeError naming the
file; and a 3-channel LeNet5 trains a few steps on it through Model."""
import numpy as np
import pytest

import sluice
import sluice.dataset as ds
import sluice.dataset.transforms as transforms
import sluice.dataset.vision as vision
import sluice.nn as nn
from sluice import train
from conftest import values


@pytest.fixture(autouse=True)
def defaults():
    ds.config.set_seed(0)
    yield
    ds.config.set_seed(0)


def records(first, n, hundred, rng):
    """n random CHW images (ids first..) and their label bytes."""
    images = rng.integers(0, 256, size=(n, 3, 32, 32), dtype=np.uint8)
    ids = np.arange(first, first + n)
    if hundred:
        lab = np.stack([ids % 20, (ids * 7) % 100], axis=1).astype(np.uint8)
    else:
        lab = (ids % 10).astype(np.uint8)[:, None]
    return images, lab


def write(path, images, lab):
    with open(path, "wb") as f:
        for img, l in zip(images, lab):
            f.write(l.tobytes() + img.tobytes())


@pytest.fixture
def cifar10(tmp_path):
    """5 train batches of 3 records and a test batch of 4: (dir, CHW images, labels)."""
    rng = np.random.default_rng(5)
    all_images, all_labels = [], []
    names = [f"data_batch_{b}.bin" for b in range(1, 6)] + ["test_batch.bin"]
    for k, name in enumerate(names):
        n = 4 if name == "test_batch.bin" else 3
        images, lab = records(3 * k, n, False, rng)
        write(tmp_path / name, images, lab)
        all_images.append(images)
        all_labels.append(lab)
    return str(tmp_path), np.concatenate(all_images), np.concatenate(all_labels)


def rows(d, columns):
    return [[np.asarray(r[c]) for c in columns] for r in
            d.create_dict_iterator(num_epochs=1, output_numpy=True)]


def test_cifar10_rows_are_the_planes_as_hwc(cifar10):
    root, images, lab = cifar10
    d = ds.Cifar10Dataset(root, shuffle=False)
    assert d.get_col_names() == ["image", "label"]
    assert d.output_types() == ["uint8", "uint32"]
    assert d.output_shapes() == [[32, 32, 3], []]
    assert d.get_dataset_size() == 19
    got = rows(d, ["image", "label"])
    assert len(got) == 19
    for i, (img, label) in enumerate(got):
        assert img.shape == (32, 32, 3) and img.dtype == np.uint8
        np.testing.assert_array_equal(img, images[i].transpose(1, 2, 0))
        assert label.dtype == np.uint32 and label.shape == () and label == lab[i, 0]
    test = rows(ds.Cifar10Dataset(root, usage="test", shuffle=False), ["image"])
    np.testing.assert_array_equal(np.stack([t[0] for t in test]),
                                  images[15:].transpose(0, 2, 3, 1))


def test_cifar100_columns(tmp_path):
    rng = np.random.default_rng(9)
    tr, trl = records(0, 5, True, rng)
    te, tel = records(5, 2, True, rng)
    write(tmp_path / "train.bin", tr, trl)
    write(tmp_path / "test.bin", te, tel)
    d = ds.Cifar100Dataset(tmp_path, usage="all", shuffle=False)
    assert d.get_col_names() == ["image", "coarse_label", "fine_label"]
    got = rows(d, ["image", "coarse_label", "fine_label"])
    images, lab = np.concatenate([tr, te]), np.concatenate([trl, tel])
    assert len(got) == 7
    for i, (img, c, f) in enumerate(got):
        np.testing.assert_array_equal(img, images[i].transpose(1, 2, 0))
        assert (c, f) == (lab[i, 0], lab[i, 1]) and c.dtype == f.dtype == np.uint32


def test_cifar_shards_num_samples_and_seed(cifar10):
    root, images, _ = cifar10

    def ids(**kw):
        # Each image is random: its bytes identify it.
        keys = {images[i].transpose(1, 2, 0).tobytes(): i for i in range(len(images))}
        return [keys[r[0].tobytes()] for r in rows(ds.Cifar10Dataset(root, **kw), ["image"])]

    assert ids(usage="train", shuffle=False, num_shards=2, shard_id=1) == [1, 3, 5, 7, 9, 11,
                                                                           13, 0]
    assert ids(usage="test", shuffle=False, num_samples=2) == [15, 16]
    ds.config.set_seed(3)
    a, b = ids(), ids()
    assert a == b and sorted(a) == list(range(19)) and a != list(range(19))
    ds.config.set_seed(4)
    assert ids() != a


def test_cifar_refusals(cifar10, tmp_path_factory):
    root, _, _ = cifar10
    with pytest.raises(ValueError, match="usage must be 'train', 'test' or 'all'"):
        ds.Cifar10Dataset(root, usage="valid")
    with pytest.raises(ValueError, match="sluice has no sampler objects"):
        ds.Cifar100Dataset(root, sampler=object())
    empty = tmp_path_factory.mktemp("empty")
    with pytest.raises(FileNotFoundError, match="holds neither the CIFAR-100 train files "
                       r"\(train.bin\) nor its test file \(test.bin\)"):
        ds.Cifar100Dataset(empty)
    with open(f"{root}/data_batch_2.bin", "ab") as f:
        f.write(b"\0" * 7)
    with pytest.raises(OSError, match="data_batch_2.bin: truncated.*7 bytes left over"):
        ds.Cifar10Dataset(root, usage="train")
    with open(f"{root}/test_batch.bin", "r+b") as f:
        f.seek(3073)
        f.write(b"\x0a")
    d = ds.Cifar10Dataset(root, usage="test", shuffle=False)
    with pytest.raises(RuntimeError, match=r"test_batch.bin record 1: label 10 is out of range"):
        rows(d, ["label"])
    # A bad sample, as a corrupt JPEG is: skipped, the others move up and
    # the epoch keeps its length with a stand-in at its end.
    labels = [int(r[0]) for r in rows(d.set_error_samples("skip", max_bad_samples=1),
                                      ["label"])]
    assert labels[:3] == [5, 7, 8] and len(labels) == 4 and 10 not in labels


def test_lenet5_trains_on_cifar10(cifar10):
    """A few steps of the 3-channel LeNet5 through Model, as `sluice train
    --data FOLDER` does for a folder of colour images."""
    root, _, _ = cifar10
    d = ds.Cifar10Dataset(root, usage="train")
    d = d.map(operations=transforms.TypeCast(sluice.int32), input_columns="label")
    d = d.map(operations=[vision.Rescale(1.0 / 255.0, 0.0), vision.HWC2CHW()],
              input_columns="image")
    d = d.batch(5, drop_remainder=True)
    network = nn.LeNet5(10, num_channel=3, batch_size=5)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = train.Model(network, loss, nn.Momentum(network.trainable_params(), 0.01, 0.9),
                        metrics={"accuracy"})
    before = values(network)
    model.train(2, d, dataset_sink_mode=False)
    after = values(network)
    assert any(not np.array_equal(before[k], after[k]) for k in before)
    acc = model.eval(d, dataset_sink_mode=False)["accuracy"]
    assert 0.0 <= acc <= 1.0
