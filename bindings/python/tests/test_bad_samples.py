"""Bad samples from Python (Dataset.set_error_samples, mirroring the C
sl_error_samples_options): broken JPEGs and a Python operation's exception
are skipped or replaced, every epoch keeps its batches on each shard, the
iterator counts them, the cap raises, and bad arguments are refused."""
import os

import pytest

import sluice.dataset as ds
import sluice.dataset.vision as vision
from conftest import write_file


@pytest.fixture
def broken_folder(make_image_folder):
    """3 classes x 6 JPEGs of 16x16; samples 2 and 13 broken."""
    root = make_image_folder(3, 6, 16, 16)
    write_file(os.path.join(root, "class_0", "img_2.jpg"), b"not a JPEG")
    write_file(os.path.join(root, "class_2", "img_1.jpg"), b"")
    return root


def epochs(d, n=2):
    """Batches per epoch, all the bytes, and the stats, over n epochs."""
    it = d.create_tuple_iterator(num_epochs=n, output_numpy=True)
    counts, data = [], []
    for _ in range(n):
        batches = list(it)
        counts.append(len(batches))
        data += [a.tobytes() for row in batches for a in row]
    stats = it.get_stats()
    it.close()
    return counts, data, stats


def pipeline(root, mode, workers, shards=None, shard=None, **cap):
    d = ds.ImageFolderDataset(root, decode=True, num_parallel_workers=workers,
                              num_shards=shards, shard_id=shard)
    d = d.map(vision.Resize((8, 8)), input_columns="image", num_parallel_workers=workers)
    return d.batch(3, drop_remainder=True, num_parallel_workers=workers).set_error_samples(
        mode, **cap)


@pytest.mark.parametrize("mode", ["skip", "replace"])
def test_skip_and_replace_keep_every_batch(broken_folder, mode):
    for shards in (None, 2):
        for shard in ((None,) if shards is None else (0, 1)):
            runs = [epochs(pipeline(broken_folder, mode, w, shards, shard,
                                    max_bad_fraction=1.0)) for w in (1, 2)]
            size = pipeline(broken_folder, mode, 1, shards, shard).get_dataset_size()
            assert size == (6 if shards is None else 3)
            for counts, _, stats in runs:
                assert counts == [size, size]
                bad = stats["samples_skipped"] + stats["samples_replaced"]
                assert stats["samples_skipped" if mode == "skip" else "samples_replaced"] == bad
                if shards is None:
                    assert bad == 4  # two per epoch
            assert runs[0][1] == runs[1][1]  # the same rows on 1 and 2 workers


def test_python_operation_errors_are_bad_samples(mnist):
    def picky(x):
        if x[0, 0, 0] % 37 == 0:
            raise ValueError("picky about this one")
        return x
    d = ds.MnistDataset(mnist, usage="train", shuffle=False).map(picky, input_columns="image")
    with pytest.raises(RuntimeError, match="picky about this one"):
        list(d)
    rows = list(d.set_error_samples("skip", max_bad_samples=10).create_tuple_iterator(
        num_epochs=1, output_numpy=True))
    assert len(rows) == 100
    assert all(r[0][0, 0, 0] % 37 != 0 for r in rows)


def test_cap_and_arguments(broken_folder):
    d = pipeline(broken_folder, "replace", 2)  # default: 1% of 18 samples, so 1
    with pytest.raises(RuntimeError, match=r"too many bad samples: 2 in epoch 0.*img_[12]\.jpg"):
        epochs(d, 1)
    counts, _, _ = epochs(pipeline(broken_folder, "replace", 2, max_bad_samples=2), 1)
    assert counts == [6]
    with pytest.raises(ValueError, match="'raise', 'skip' or 'replace'"):
        pipeline(broken_folder, "drop", 1)
    with pytest.raises(ValueError, match="max_bad_fraction"):
        pipeline(broken_folder, "skip", 1, max_bad_fraction=1.5)
    with pytest.raises(ValueError, match="max_bad_samples"):
        pipeline(broken_folder, "skip", 1, max_bad_samples=-2)
    # raise, the default, fails as before
    with pytest.raises(RuntimeError, match=r"img_[12]\.jpg: decode: not a JPEG"):
        epochs(pipeline(broken_folder, "raise", 1), 1)
