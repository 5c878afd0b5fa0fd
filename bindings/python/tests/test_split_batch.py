"""Dataset.split, batch's pad_info / padded_batch and per_batch_map (issue 31), against
MindSpore's documented semantics: split's parts are disjoint, cover the
dataset, are fixed by the seed, consecutive without randomize, sized from
fractions by MindSpore's rounding rules, refused when sharded; padded
batches pad to a given shape or the batch's largest with the pad value,
and a row too large fails naming it; per_batch_map gets the rows and its
BatchInfo and its outputs become columns, an exception failing the batch
by name; batch's other MindSpore arguments are
supported or refused with the reason; and a split's parts train and
evaluate a LeNet5."""
import numpy as np
import pytest

import sluice
import sluice.dataset as ds
import sluice.dataset.transforms as transforms
import sluice.dataset.vision as vision
import sluice.nn as nn
from sluice import train
from conftest import make_mnist


@pytest.fixture(autouse=True)
def defaults():
    ds.config.set_seed(0)
    yield
    ds.config.set_seed(0)


@pytest.fixture
def mnist20(tmp_path):
    return make_mnist(tmp_path / "m", 20, 1)


def sample_id(image):
    """The id of a generated MNIST image: its pixel (0, 0) is id * 31 mod 256."""
    return int(np.asarray(image).reshape(-1)[0]) * 223 % 256


def ids(d):
    return [sample_id(r[0]) for r in d.create_tuple_iterator(num_epochs=1, output_numpy=True)]


def source(root, shuffle=True):
    return ds.MnistDataset(root, usage="train", shuffle=shuffle)


# --- split -----------------------------------------------------------------------------------

def test_split_parts_disjoint_cover_and_seeded(mnist20):
    parts = source(mnist20).split([12, 5, 3])
    got = [ids(p) for p in parts]
    assert [len(g) for g in got] == [12, 5, 3]
    assert [p.get_dataset_size() for p in parts] == [12, 5, 3]
    assert sorted(sum(got, [])) == list(range(20))
    again = [sorted(ids(p)) for p in source(mnist20).split([12, 5, 3])]
    assert again == [sorted(g) for g in got]            # the seed fixes the parts
    ds.config.set_seed(1)
    other = [sorted(ids(p)) for p in source(mnist20).split([12, 5, 3])]
    assert other != again
    # randomize=False: consecutive rows; a part not shuffled reads them in order
    first, second = source(mnist20, shuffle=False).split([8, 12], randomize=False)
    assert ids(first) == list(range(8)) and ids(second) == list(range(8, 20))


def test_split_part_shuffles_within_itself(mnist20):
    part, _ = source(mnist20).split([10, 10])
    it = part.create_tuple_iterator(num_epochs=2, output_numpy=True)
    epochs = [[sample_id(r[0]) for r in it] for _ in range(2)]
    assert sorted(epochs[0]) == sorted(epochs[1])       # the same rows every epoch ...
    assert epochs[0] != epochs[1]                       # ... in a new order


def test_split_fractions_rounded_as_mindspore(mnist20, tmp_path):
    assert [p.get_dataset_size() for p in source(mnist20).split([0.5, 0.25, 0.25])] == \
        [10, 5, 5]
    ten = make_mnist(tmp_path / "ten", 10, 1)
    # round(2.5) = 2, 2, 5: one row short, given to the first part
    assert [p.get_dataset_size() for p in source(ten).split([0.25, 0.25, 0.5])] == [3, 2, 5]
    # round(3.5) = 4, 4, 3: one over, taken from the first part that keeps a row
    assert [p.get_dataset_size() for p in source(ten).split([0.35, 0.35, 0.3])] == [3, 4, 3]
    with pytest.raises(RuntimeError, match="a part of 0 rows"):
        source(ten).split([0.99, 0.01])
    with pytest.raises(ValueError, match="add up to 1"):
        source(ten).split([0.5, 0.6])


def test_split_after_operations_and_refusals(mnist20):
    mapped = source(mnist20).map(transforms.TypeCast(sluice.int32), "label")
    a, b = mapped.split([15, 5])                        # a source and maps: each part maps
    assert sorted(ids(a) + ids(b)) == list(range(20))
    assert next(iter(b.create_dict_iterator(num_epochs=1)))["label"].dtype == sluice.int32
    batched = source(mnist20, shuffle=False).batch(4)
    a, b = batched.split([3, 2], randomize=False)       # skip / take of the batches
    assert [len(x) for x in (a, b)] == [3, 2]
    assert sample_id(next(iter(b))[0].asnumpy()[0]) == 12
    with pytest.raises(RuntimeError, match="randomize=True needs a source followed by maps"):
        batched.split([3, 2])
    with pytest.raises(RuntimeError, match="add up to 19 but the dataset has 20 rows"):
        source(mnist20).split([10, 9])
    sharded = ds.MnistDataset(mnist20, usage="train", num_shards=2, shard_id=0)
    with pytest.raises(ValueError, match="sharded"):
        sharded.split([5, 5])
    with pytest.raises(ValueError, match="all ints or all floats"):
        source(mnist20).split([10, 0.5])


# --- padded batches ------------------------------------------------------------------------

def ragged(root):
    """Rows in file order whose image is its first id % 4 + 1 rows (k, 28, 1)."""
    def cut(image):
        return image[:sample_id(image) % 4 + 1]
    return source(root, shuffle=False).map(cut, "image")


def test_pad_info_pads_to_batch_largest_and_to_shape(mnist20):
    full = np.asarray([r[0] for r in source(mnist20, shuffle=False)
                       .create_tuple_iterator(num_epochs=1, output_numpy=True)])
    for d, width, fill in [(ragged(mnist20).batch(4, pad_info={}), 4, 0),
                           (ragged(mnist20).padded_batch(4, pad_info={"image": (None, 7)}), 4, 7),
                           (ragged(mnist20).batch(4, pad_info={"image": ([6, None, None], 9)},
                                                  num_parallel_workers=2), 6, 9)]:
        assert d.get_batch_size() == 4
        batches = list(d.create_tuple_iterator(num_epochs=1, output_numpy=True))
        assert len(batches) == 5
        for b, (image, label) in enumerate(batches):
            assert image.shape == (4, width, 28, 1) and label.shape == (4,)
            for r in range(4):
                k = (4 * b + r) % 4 + 1
                np.testing.assert_array_equal(image[r, :k], full[4 * b + r, :k])
                assert (image[r, k:] == fill).all()


def test_pad_info_errors(mnist20):
    d = ragged(mnist20).batch(4, pad_info={"image": ([2, 28, 1], 0)})
    with pytest.raises(RuntimeError, match=r"batch 0: row 2 has column 'image' of shape "
                                           r"\(3, 28, 1\), larger than its pad shape"):
        list(d.create_tuple_iterator(num_epochs=1))
    with pytest.raises(ValueError, match="names no column"):
        source(mnist20).batch(4, pad_info={"nope": (None, 0)})
    with pytest.raises(ValueError, match="has 1 dimensions but the column has 3"):
        source(mnist20).batch(4, pad_info={"image": ([5], 0)})
    with pytest.raises(RuntimeError, match="must agree"):          # no pad_info: as ever
        list(ragged(mnist20).batch(4).create_tuple_iterator(num_epochs=1))


def test_batch_mindspore_arguments(mnist20):
    d = source(mnist20)
    assert d.batch(5, max_rowsize=16, python_multiprocessing=False).get_dataset_size() == 4
    assert d.padded_batch(5).get_batch_size() == 5
    with pytest.raises(ValueError, match="per_batch_map and pad_info together"):
        d.batch(5, per_batch_map=lambda x, info: (x,), input_columns=["image"], pad_info={})
    with pytest.raises(ValueError, match="go with per_batch_map"):
        d.batch(5, input_columns=["image"])
    with pytest.raises(ValueError, match="python_multiprocessing must be False"):
        d.batch(5, python_multiprocessing=True)
    with pytest.raises(TypeError, match="no 'bogus' argument"):
        d.batch(5, bogus=1)


# --- per_batch_map ----------------------------------------------------------------------------

def test_per_batch_map_columns_values_and_info(mnist20):
    def double_and_tag(labels, info):
        assert all(isinstance(v, np.ndarray) for v in labels)
        tag = np.full(len(labels), info.get_epoch_num() * 100 + info.get_batch_num(), np.int64)
        return [(v * 2).astype(np.int32) for v in labels], tag
    d = source(mnist20, shuffle=False).batch(4, per_batch_map=double_and_tag,
                                              input_columns=["label"],
                                              output_columns=["label", "tag"],
                                              num_parallel_workers=2)
    assert d.get_col_names() == ["image", "label", "tag"] and d.get_batch_size() == 4
    it = d.create_dict_iterator(num_epochs=2, output_numpy=True)
    rows = list(it) + list(it)
    assert len(rows) == 10
    for i, row in enumerate(rows):
        epoch, b = divmod(i, 5)
        np.testing.assert_array_equal(row["label"], (np.arange(4 * b, 4 * b + 4) % 10) * 2)
        assert row["label"].dtype == np.int32 and row["image"].shape == (4, 28, 28, 1)
        np.testing.assert_array_equal(row["tag"], [epoch * 100 + b] * 4)
    # every column by default, one array per column back, names kept
    d = source(mnist20, shuffle=False).batch(
        5, per_batch_map=lambda images, labels, info: (np.stack(images)[:, :2], labels))
    image, label = next(iter(d.create_tuple_iterator(num_epochs=1, output_numpy=True)))
    assert image.shape == (5, 2, 28, 1) and list(label) == [0, 1, 2, 3, 4]


def test_per_batch_map_errors(mnist20):
    def fails_second(labels, info):
        if info.get_batch_num() == 1:
            raise ValueError("bad batch")
        return (labels,)
    d = source(mnist20).batch(4, per_batch_map=fails_second, input_columns="label")
    with pytest.raises(RuntimeError, match="batch 1 of epoch 0: per_batch_map: "
                                           "ValueError: bad batch"):
        list(d.create_tuple_iterator(num_epochs=1))
    d = source(mnist20).batch(4, per_batch_map=lambda labels, info: labels,
                              input_columns=["label"], output_columns=["a", "b"])
    with pytest.raises(RuntimeError, match="returned 1 columns but 2 are expected"):
        list(d.create_tuple_iterator(num_epochs=1))
    with pytest.raises(ValueError, match="names no column"):
        source(mnist20).batch(4, per_batch_map=lambda x, info: x, input_columns=["nope"])
    with pytest.raises(TypeError, match="must be callable"):
        source(mnist20).batch(4, per_batch_map=3)


# --- a split's parts train and evaluate ----------------------------------------------------------

def lenet_pipeline(d, batch_size):
    d = d.map(transforms.TypeCast(sluice.int32), "label")
    d = d.map([vision.Resize((32, 32)), vision.Rescale(1.0 / 255.0, 0.0), vision.HWC2CHW()],
              "image")
    return d.batch(batch_size, drop_remainder=True)


def test_split_parts_train_and_eval(tmp_path):
    root = make_mnist(tmp_path / "m", 96, 1)
    train_part, held_out = source(root).split([0.75, 0.25])
    network = nn.LeNet5(10, batch_size=8)
    model = train.Model(network, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                        nn.Momentum(network.trainable_params(), 0.01, 0.9),
                        metrics={"accuracy"})
    model.train(1, lenet_pipeline(train_part, 8), dataset_sink_mode=False)
    result = model.eval(lenet_pipeline(held_out, 8))
    assert list(result) == ["accuracy"] and 0.0 <= result["accuracy"] <= 1.0
    assert lenet_pipeline(held_out, 8).get_dataset_size() == 3
