"""GeneratorDataset and NumpySlicesDataset (issue 31) against MindSpore's
documented semantics: column names, order without shuffle, seeded
shuffling, shards that partition the rows, len(), exceptions naming the
sample, generators and iterables read in order, dict input, rows that are
views of the caller's arrays, and a custom dataset feeding Model.train in
sink mode."""
import gc

import numpy as np
import pytest

import sluice
import sluice.dataset as ds
import sluice.nn as nn
from sluice import train


@pytest.fixture(autouse=True)
def seed():
    ds.config.set_seed(0)
    yield
    ds.config.set_seed(0)


def rows(d, **kw):
    return list(d.create_tuple_iterator(output_numpy=True, num_epochs=1, **kw))


class Squares:
    """A random-access source: row i is (i as int64 0-d, [i, i*i] float32)."""

    def __init__(self, n=10, fail_at=None):
        self.n, self.fail_at = n, fail_at

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise KeyError(f"no square {i}")
        return i, np.array([i, i * i], np.float32)


def test_generator_random_access_names_order_len():
    d = ds.GeneratorDataset(Squares(), column_names=["i", "sq"], shuffle=False)
    assert d.get_col_names() == ["i", "sq"]
    assert d.output_types() == ["int64", "float32"] and d.output_shapes() == [[], [2]]
    assert len(d) == 10 and d.get_dataset_size() == 10
    got = rows(d)
    assert [int(r[0]) for r in got] == list(range(10))
    assert got[3][0].shape == () and got[3][1].tolist() == [3.0, 9.0]
    assert ds.GeneratorDataset(Squares()).get_col_names() == ["column_0", "column_1"]


def test_generator_shuffle_seeded_and_shards_partition():
    first = [int(r[0]) for r in rows(ds.GeneratorDataset(Squares(), ["i", "sq"]))]
    again = [int(r[0]) for r in rows(ds.GeneratorDataset(Squares(), ["i", "sq"]))]
    assert first == again and sorted(first) == list(range(10)) and first != list(range(10))
    ds.config.set_seed(5)
    assert [int(r[0]) for r in rows(ds.GeneratorDataset(Squares(), ["i", "sq"]))] != first
    parts = [[int(r[0]) for r in rows(ds.GeneratorDataset(Squares(), ["i", "sq"], num_shards=3,
                                                         shard_id=k))] for k in range(3)]
    # 4 rows each (ceil(10 / 3)): the last shard wraps round, as the other sources'
    assert set(sum(parts, [])) == set(range(10))
    assert all(len(p) == 4 for p in parts)
    assert len(ds.GeneratorDataset(Squares(), ["i", "sq"], num_shards=3, shard_id=0)) == 4
    assert len(rows(ds.GeneratorDataset(Squares(), ["i", "sq"], num_samples=3))) == 3


def test_generator_exception_names_sample():
    d = ds.GeneratorDataset(Squares(fail_at=6), ["i", "sq"], shuffle=False)
    with pytest.raises(RuntimeError, match=r"generator: sample 6: KeyError: 'no square 6'"):
        rows(d)
    # A row unlike the first: refused, naming the sample.

    class Ragged(Squares):
        def __getitem__(self, i):
            return i, np.zeros(2 + (i == 4), np.float32)
    with pytest.raises(RuntimeError, match=r"sample 4: column 'sq' is float32 \(3,\), but the "
                       r"column is float32 \(2,\)"):
        rows(ds.GeneratorDataset(Ragged(), ["i", "sq"], shuffle=False))
    # A bad sample, as a corrupt file's: skipped when asked, a stand-in ends the epoch.
    it = d.set_error_samples("skip", max_bad_samples=1).create_tuple_iterator(
        num_epochs=1, output_numpy=True)
    got = [int(r[0]) for r in it]
    assert got[:9] == [0, 1, 2, 3, 4, 5, 7, 8, 9] and got[9] in got[:9]
    assert it.get_stats()["samples_skipped"] == 1
    with pytest.raises(ValueError, match="column_names .* name 3 columns; the data has 2"):
        ds.GeneratorDataset(Squares(), ["a", "b", "c"])


def test_generator_function_and_iterable_in_order():
    def gen():
        for i in range(7):
            yield (np.array([i, -i], np.int32), np.float64(i / 2))
    d = ds.GeneratorDataset(gen, ["v", "h"])
    assert len(d) == 7   # counted by a pass when the dataset is made
    for _ in range(2):    # each epoch calls the function again
        got = rows(d)
        assert [r[0].tolist() for r in got] == [[i, -i] for i in range(7)]
        assert got[5][1].dtype == np.float64 and float(got[5][1]) == 2.5
    assert [r[0].shape for r in rows(d.batch(3))] == [(3, 2), (3, 2), (1, 2)]
    # An iterator object is read once when made, and kept.
    one_shot = ds.GeneratorDataset(iter([np.uint8(k) for k in range(4)]), "k")
    assert [int(r[0]) for r in rows(one_shot)] == [0, 1, 2, 3] == \
        [int(r[0]) for r in rows(one_shot)]
    with pytest.raises(ValueError, match="read in order: it cannot be shuffled or sharded"):
        ds.GeneratorDataset(gen, ["v", "h"], shuffle=True)
    with pytest.raises(ValueError, match="cannot be shuffled or sharded"):
        ds.GeneratorDataset(gen, ["v", "h"], num_shards=2, shard_id=0)

    def failing():
        yield (np.zeros(2, np.int32),)
        yield (np.ones(2, np.int32),)
        if failing.armed:
            raise OSError("the stream broke")
        yield (np.ones(2, np.int32),)
    failing.armed = False
    d = ds.GeneratorDataset(failing, ["v"])
    failing.armed = True
    with pytest.raises(RuntimeError, match="generator: sample 2: OSError: the stream broke"):
        rows(d)


def test_numpy_slices_dict_tuple_list_and_zero_copy():
    image = np.arange(6 * 4, dtype=np.uint8).reshape(6, 2, 2)
    label = np.arange(6, dtype=np.int32)
    d = ds.NumpySlicesDataset({"image": image, "label": label}, shuffle=False)
    assert d.get_col_names() == ["image", "label"] and len(d) == 6
    got = rows(d)
    assert [int(r[1]) for r in got] == list(range(6))
    assert all(np.shares_memory(r[0], image) for r in got)   # views, no copy
    assert not got[2][0].flags.writeable
    np.testing.assert_array_equal(got[2][0], image[2])
    # A tuple is one column per array, a list one column (MindSpore's rule).
    t = ds.NumpySlicesDataset((label, label * 2.0), column_names=["a", "b"], shuffle=False)
    assert t.output_types() == ["int32", "float64"]
    assert [float(r[1]) for r in rows(t)] == [2.0 * i for i in range(6)]
    lst = ds.NumpySlicesDataset([[1, 2], [3, 4], [5, 6]], shuffle=False)
    assert lst.get_col_names() == ["column_0"] and lst.output_shapes() == [[2]]
    assert [r[0].tolist() for r in rows(lst)] == [[1, 2], [3, 4], [5, 6]]
    # Shuffled by default, reproducibly; shards partition the rows.
    order = [int(r[1]) for r in rows(ds.NumpySlicesDataset({"i": image, "l": label}))]
    assert sorted(order) == list(range(6)) and order != list(range(6))
    assert order == [int(r[1]) for r in rows(ds.NumpySlicesDataset({"i": image, "l": label}))]
    parts = [[int(r[0]) for r in rows(ds.NumpySlicesDataset(label, num_shards=2, shard_id=k))]
             for k in range(2)]
    assert sorted(parts[0] + parts[1]) == list(range(6))
    # A strided array is copied once (and still right); mismatched rows refused.
    strided = ds.NumpySlicesDataset(image[:, :, 0], shuffle=False)
    assert [r[0].tolist() for r in rows(strided)] == image[:, :, 0].tolist()
    with pytest.raises(ValueError, match="column 'b' has 5 rows"):
        ds.NumpySlicesDataset({"a": label, "b": label[:5]})


def test_numpy_slices_keeps_array_alive():
    label = np.arange(5, dtype=np.int64) * 3
    d = ds.NumpySlicesDataset(label, shuffle=False)
    del label
    gc.collect()
    it = d.create_tuple_iterator(output_numpy=True, num_epochs=1)
    first = next(iter(it))[0]
    del d, it
    gc.collect()
    assert int(first) == 0 and first.base is not None


class Separable:
    """x float32 (4,), label int32: 1 when x[0] > 0."""

    def __init__(self, n=64):
        rng = np.random.default_rng(3)
        self.x = rng.standard_normal((n, 4)).astype(np.float32)
        self.y = (self.x[:, 0] > 0).astype(np.int32)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def test_generator_feeds_model_train_in_sink_mode():
    """The issue's "custom dataset through GeneratorDataset feeding
    Model.train in sink mode"."""
    sluice.set_seed(0)
    d = ds.GeneratorDataset(Separable(), column_names=["image", "label"])
    d = d.batch(8, drop_remainder=True)
    net = nn.Dense(4, 2)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = train.Model(net, loss, nn.Momentum(net.trainable_params(), 0.1, 0.9),
                        metrics={"accuracy"})
    model.train(4, d, dataset_sink_mode=True)
    acc = model.eval(d, dataset_sink_mode=False)["accuracy"]
    assert acc >= 0.9, acc


def test_unknown_name_lists_sources():
    with pytest.raises(AttributeError, match="NumpySlicesDataset, GeneratorDataset"):
        ds.TFRecordDataset   # noqa: B018
