"""project, rename, concat (and +) and zip, with MindSpore's documented
semantics: project keeps the given columns in that order; rename renames
(unknown or repeated names are errors); concat appends datasets with the
same columns, in order (size: the sum); zip joins columns row by row up to
the shortest (size: the minimum), refusing repeated names; every epoch
restarts every part; a shuffle after a concat mixes the joined stream."""
import numpy as np
import pytest

import sluice.dataset as ds
import sluice.dataset.transforms as transforms
from conftest import baseline, fashion_or_fail, make_mnist, nthreads, settled


@pytest.fixture
def small(tmp_path):
    """train: samples 0..29, test: samples 30..41."""
    return make_mnist(tmp_path / "mnist", 30, 12)


def source(root, usage):
    return ds.MnistDataset(root, usage=usage, shuffle=False)


def sample(image):
    """The sample an image comes from: pixel (0, 0) is 31 i mod 256."""
    return int(np.asarray(image).reshape(-1)[0]) * 223 % 256


def epochs(d, n, column=0):
    """The samples of column `column`, epoch by epoch."""
    it = d.create_tuple_iterator(num_epochs=n)
    return [[sample(row[column]) for row in it] for _ in range(n)]


def test_project_and_rename(small):
    d = source(small, "train")
    p = d.project(["label", "image"])
    assert p.get_col_names() == ["label", "image"]
    label, image = next(iter(p))
    assert sample(image) == 0 and label.shape == ()
    assert d.project("image").get_col_names() == ["image"]
    r = d.rename(["image", "label"], ["x", "y"])
    assert r.get_col_names() == ["x", "y"] and r.get_dataset_size() == 30
    assert list(r.create_dict_iterator(num_epochs=1))[3]["y"].item() == 3
    assert d.rename("label", "y").get_col_names() == ["image", "y"]
    assert d.get_col_names() == ["image", "label"]      # unchanged
    with pytest.raises(ValueError, match="no column 'nope'"):
        d.project(["nope"])
    with pytest.raises(ValueError, match="'label' is named twice"):
        d.project(["label", "label"])
    with pytest.raises(ValueError, match="no column 'nope'"):
        d.rename("nope", "x")
    with pytest.raises(ValueError, match="two columns would be named 'label'"):
        d.rename("image", "label")
    with pytest.raises(ValueError, match="one new name per column"):
        d.rename(["image", "label"], ["x"])


def test_concat_and_plus(small):
    a, b = source(small, "train"), source(small, "test")
    for d in (a + b, a.concat(b), a.concat([b])):
        assert d.get_dataset_size() == 42 and len(d) == 42
        assert epochs(d, 2) == [list(range(42))] * 2     # each epoch restarts both
    three = a.concat([b, a])
    assert epochs(three, 1) == [list(range(42)) + list(range(30))]
    with pytest.raises(TypeError, match="datasets must be a Dataset"):
        a.concat([])
    with pytest.raises(TypeError):
        a + 1


def test_concat_of_pipelines_then_batch(small):
    """Each part keeps its own maps and batches; nodes after the concat
    work on the joined stream."""
    cast = transforms.TypeCast("int32")
    a = source(small, "train").map(cast, "label").batch(8)        # 4 batches (last 6)
    b = source(small, "test").map(cast, "label").batch(8, True)   # 1 batch
    d = a + b
    assert d.get_dataset_size() == 5
    shapes = [row[0].shape[0] for row in d.create_tuple_iterator(num_epochs=1)]
    assert shapes == [8, 8, 8, 6, 8]
    flat = source(small, "train").map(cast, "label") + source(small, "test").map(cast, "label")
    batched = flat.batch(10, drop_remainder=True)
    assert batched.get_dataset_size() == 4
    assert [sample(np.asarray(row[0])[0]) for row in batched] == [0, 10, 20, 30]


def test_concat_refusals(small):
    a, b = source(small, "train"), source(small, "test")
    with pytest.raises(ValueError, match="column 0 of dataset 2 is 'img'"):
        a + b.rename("image", "img")
    with pytest.raises(ValueError, match="dataset 2 has 1 columns"):
        a + b.project("image")
    with pytest.raises(ValueError, match="'label' of dataset 2 is int32"):
        a + b.map(transforms.TypeCast("int32"), "label")
    with pytest.raises(ValueError, match="dataset 2 has no end"):
        a + b.repeat()


def test_shuffle_after_concat(small):
    d = (source(small, "train") + source(small, "test")).shuffle(64)
    ds.config.set_seed(5)
    first = epochs(d, 2)
    ds.config.set_seed(5)
    again = epochs(d, 2)
    assert first == again
    assert all(sorted(e) == list(range(42)) for e in first)
    assert first[0] != first[1]
    assert any(s >= 30 for s in first[0][:21])      # mixed, not part after part


def test_zip(small):
    a = source(small, "train")
    b = source(small, "test").rename(["image", "label"], ["image2", "label2"])
    for d in (a.zip(b), ds.zip((a, b)), a.zip((b,))):
        assert d.get_col_names() == ["image", "label", "image2", "label2"]
        assert d.get_dataset_size() == 12
        assert epochs(d, 2) == [list(range(12))] * 2
        assert epochs(d, 1, column=2) == [list(range(30, 42))]
    with pytest.raises(ValueError, match="column 'image' of dataset 2.*rename"):
        a.zip(source(small, "test"))
    with pytest.raises(TypeError, match="at least two"):
        ds.zip(a)
    batched = a.zip(b).batch(5, drop_remainder=True)
    assert batched.get_dataset_size() == 2
    assert [row["image2"].shape for row in batched.create_dict_iterator(num_epochs=1)] == \
        [(5, 28, 28, 1)] * 2


def test_part_error_names_the_part(small):
    def fail_on_35(image):
        if sample(image) == 35:
            raise ValueError("sample 35 is bad on purpose")
        return image
    d = source(small, "train") + source(small, "test").map(fail_on_35, "image")
    with pytest.raises(RuntimeError, match=r"concat: dataset 2 of 2 \(mnist\(.*bad on purpose"):
        for _ in d:
            pass


def test_close_mid_epoch_joins_every_part(small):
    """The parts' threads count in the iterator's stats, run while it
    runs, and are joined when it is closed mid-epoch."""
    base = baseline()
    cast = transforms.TypeCast("float32")
    d = (source(small, "train").map(cast, "image", num_parallel_workers=2) +
         source(small, "test").map(cast, "image", num_parallel_workers=2)).repeat()
    for _ in range(3):
        it = d.create_tuple_iterator(num_epochs=1)
        next(it)
        threads = it.get_stats()["threads"]
        assert threads >= 1 + 2 * 2         # its source thread, each part's two workers
        assert nthreads() - base == threads
        it.close()
        assert settled(base) == base


def test_fashion_mnist_end_to_end():
    root = fashion_or_fail()
    train = ds.MnistDataset(root, usage="train", num_samples=64, shuffle=False)
    test = ds.MnistDataset(root, usage="test", num_samples=32, shuffle=False)
    both = (train + test).project(["label"]).batch(32)
    assert both.get_dataset_size() == 3
    labels = np.concatenate([np.asarray(row[0]) for row in both])
    want = np.concatenate([np.asarray(row[1]).reshape(1) for row in train] +
                          [np.asarray(row[1]).reshape(1) for row in test])
    assert np.array_equal(labels, want)


def test_model_trains_on_combined_datasets(tmp_path):
    """Model.train takes a concat in sink and non-sink mode, whether the
    batches are made after the concat or by the parts themselves."""
    import sluice
    import sluice.dataset.vision as vision
    from sluice import nn, train

    root = make_mnist(tmp_path / "lenet", 64, 32)

    def prepared(usage):
        d = source(root, usage).map(transforms.TypeCast(sluice.int32), "label")
        return d.map([vision.Resize((32, 32)), vision.Rescale(1 / 255, 0), vision.HWC2CHW()],
                     "image")
    after = (prepared("train") + prepared("test")).shuffle(16).batch(32, drop_remainder=True)
    parts = prepared("train").batch(32, True) + prepared("test").batch(32, True)
    for d, sink in ((after, True), (parts, False), (parts, True)):
        assert d.get_dataset_size() == 3
        network = nn.LeNet5(10)
        model = train.Model(network, nn.SoftmaxCrossEntropyWithLogits(sparse=True,
                                                                      reduction="mean"),
                            nn.Momentum(network.trainable_params(), 0.01, 0.9))
        steps = []

        class Count(train.Callback):
            def step_end(self, run_context):
                steps.append(run_context.original_args().cur_step_num)
        model.train(2, d, callbacks=[Count()], dataset_sink_mode=sink)
        assert steps[-1] == 6
