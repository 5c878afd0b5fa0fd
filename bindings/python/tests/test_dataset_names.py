"""What a MindSpore user reaches for in sluice.dataset (issue 31): a name
sluice lacks answers, as sluice.nn does, with what it has instead, never
Python's bare AttributeError or TypeError; len() and get_batch_size are
MindSpore's."""
import pytest

import sluice.dataset as ds
import sluice.dataset.transforms as transforms
import sluice.nn as nn


def test_missing_module_names_list_what_exists():
    for name in ("VOCDataset", "TFRecordDataset"):
        with pytest.raises(AttributeError, match=f"sluice.dataset has no '{name}': it has "
                           "Dataset, MnistDataset, ImageFolderDataset"):
            getattr(ds, name)
    with pytest.raises(AttributeError, match="config has no 'set_num_workers': it has "
                       "set_seed, get_seed, set_num_parallel_workers"):
        ds.config.set_num_workers(2)
    with pytest.raises(AttributeError, match="transforms has no 'Fill': it has Operation, "
                       "TypeCast, OneHot, Compose"):
        transforms.Fill
    with pytest.raises(AttributeError, match="sluice.nn has no 'Dropout': it has"):
        nn.Dropout
    assert not hasattr(ds, "__wrapped__") and not hasattr(ds.config, "_missing")


def test_missing_vision_names_list_what_exists():
    import sluice.dataset.vision as vision
    import sluice.dataset.vision.c_transforms as c_transforms
    with pytest.raises(AttributeError, match="sluice.dataset.vision has no 'RandomRotation': it "
                       "has Inter, Decode, Resize, .*RandomVerticalFlip.* \\(TypeCast"):
        vision.RandomRotation
    with pytest.raises(AttributeError, match="c_transforms has no 'Pad': it has Inter, Decode"):
        c_transforms.Pad
    with pytest.raises(AttributeError, match="Inter has no 'AREA': it has LINEAR, NEAREST, "
                       "BICUBIC, BILINEAR, CUBIC$"):
        vision.Inter.AREA
    assert vision.Inter.BILINEAR is vision.Inter.LINEAR and vision.Inter["CUBIC"] == 2
    assert list(vision.Inter) == [vision.Inter.LINEAR, vision.Inter.NEAREST,
                                  vision.Inter.BICUBIC]
    assert not hasattr(vision, "__wrapped__") and not hasattr(vision.Inter, "_private")


def test_missing_dataset_methods_list_what_exists(mnist):
    d = ds.MnistDataset(mnist, usage="train")
    for name in ("bucket_batch_by_length", "sync_wait"):
        with pytest.raises(AttributeError, match=f"MnistDataset has no '{name}': it has batch, "
                           ".*get_batch_size.*shuffle, skip, split, take"):
            getattr(d, name)
    with pytest.raises(TypeError, match="batch: sluice has no 'pad' argument; batch takes "
                       "batch_size, drop_remainder, num_parallel_workers, per_batch_map"):
        d.batch(32, pad=None)
    assert not hasattr(d, "_private") and hasattr(d, "map")


def test_len_and_get_batch_size(mnist):
    d = ds.MnistDataset(mnist, usage="train")        # 100 samples
    assert len(d) == 100 and d.get_batch_size() == 1
    b = d.batch(32)
    assert len(b) == 4 and b.get_batch_size() == 32
    assert len(d.batch(32, drop_remainder=True).repeat(2)) == 6
    assert d.batch(32).repeat(2).take(5).get_batch_size() == 32
    endless = b.repeat()
    assert bool(endless) and bool(d.take(0))       # a dataset is true, empty or endless
    with pytest.raises(TypeError, match="no end .* take"):
        len(endless)


@pytest.fixture
def default_workers():
    yield
    ds.config.set_num_parallel_workers(None)


def test_set_num_parallel_workers_is_the_default_of_later_maps(mnist, default_workers):
    """A map or batch given no num_parallel_workers takes the config's,
    from when it is made; the rows are the same whatever the workers."""
    import sluice.dataset.vision as vision

    def pipeline():
        return ds.MnistDataset(mnist, usage="train").map(vision.Rescale(1 / 255, 0), "image") \
            .batch(10)
    before = pipeline()
    ds.config.set_num_parallel_workers(1)
    assert ds.config.get_num_parallel_workers() == 1
    one = pipeline()
    assert "workers=1" in one.describe() and "workers=1" not in before.describe()
    assert "workers=3" in pipeline().map(vision.Rescale(2, 0), "image",
                                         num_parallel_workers=3).describe()
    rows = [[a.asnumpy() for a in row] for row in one.create_tuple_iterator(num_epochs=1)]
    again = [[a.asnumpy() for a in row] for row in before.create_tuple_iterator(num_epochs=1)]
    assert len(rows) == 10 and all((x == y).all() for r, s in zip(rows, again)
                                   for x, y in zip(r, s))
    with pytest.raises(ValueError, match="num must be >= 1"):
        ds.config.set_num_parallel_workers(0)


def test_get_class_indexing(mnist, make_image_folder):
    root = make_image_folder(3, 2, 8, 8)
    assert ds.ImageFolderDataset(root).get_class_indexing() == \
        {"class_0": 0, "class_1": 1, "class_2": 2}
    mine = {"class_2": 0, "class_0": 1, "class_1": 2}
    assert ds.ImageFolderDataset(root, class_indexing=mine).batch(2).get_class_indexing() == mine
    assert ds.MnistDataset(mnist).get_class_indexing() == {}

