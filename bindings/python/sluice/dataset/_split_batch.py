"""sluice.dataset's split, padded batches and per-batch functions: the
argument handling behind Dataset.split, Dataset.padded_batch and batch's
per_batch_map (MindSpore's rules), over the C engine's sl_dataset_split,
sl_dataset_batch_padded and sl_dataset_batch_map."""
from sluice import _sluice


def _names(value):
    return [value] if isinstance(value, str) else list(value)


class BatchInfo:
    """What a ``per_batch_map`` is told about its batch, as MindSpore's."""

    __slots__ = ("_batch", "_epoch")

    def __init__(self, batch_num, epoch_num):
        self._batch = batch_num
        self._epoch = epoch_num

    def get_batch_num(self):
        """The batch's number within its epoch, from 0."""
        return self._batch

    def get_epoch_num(self):
        """The epoch's number, from 0."""
        return self._epoch


def _per_batch(fn, nout):
    """fn as the C engine calls it: numpy rows in, and one list of
    contiguous rows per output column out, checked against the batch."""
    import numpy as np

    def call(batch_num, epoch_num, *columns):
        rows = len(columns[0])
        res = fn(*[[np.asarray(t) for t in col] for col in columns],
                 BatchInfo(batch_num, epoch_num))
        if not isinstance(res, tuple):
            res = (res,)
        if len(res) != nout:
            raise ValueError(f"per_batch_map returned {len(res)} columns but {nout} are "
                             f"expected (output_columns)")
        out = []
        for k, col in enumerate(res):
            col = list(col)
            if len(col) != rows:
                raise ValueError(f"per_batch_map's output {k} has {len(col)} rows but the "
                                 f"batch has {rows}")
            # asarray, not ascontiguousarray, which makes a 0-d row 1-d
            out.append([np.asarray(v, order="C") for v in col])
        return out

    return call


def _split_sizes(sizes, total):
    """split's sizes as row counts (MindSpore's rules for fractions)."""
    sizes = list(sizes)
    if not sizes:
        raise ValueError("split: sizes must not be empty")
    if all(isinstance(v, int) and not isinstance(v, bool) for v in sizes):
        if any(v < 1 for v in sizes):
            raise ValueError(f"split: every size must be >= 1, got {sizes}")
        if sum(sizes) != total:
            raise RuntimeError(f"split: the sizes add up to {sum(sizes)} but the dataset has "
                               f"{total} rows")
        return sizes
    if not all(isinstance(v, float) for v in sizes):
        raise ValueError(f"split: sizes must be all ints or all floats, got {sizes}")
    if any(not 0 < v <= 1 for v in sizes) or abs(sum(sizes) - 1) > 1e-6:
        raise ValueError(f"split: fractions must be in (0, 1] and add up to 1, got {sizes}")
    if total < 0:
        raise RuntimeError("split: the dataset has no end (repeat without a count)")
    rows = [round(f * total) for f in sizes]
    if any(n == 0 for n in rows):
        raise RuntimeError(f"split: fractions {sizes} of {total} rows give a part of 0 rows "
                           f"({rows})")
    excess = sum(rows) - total
    if excess < 0:
        rows[0] -= excess
    elif excess > 0:
        for i, n in enumerate(rows):
            if n > excess:
                rows[i] -= excess
                break
    return rows


def _dataset():
    from sluice.dataset import Dataset, _int, _workers    # a cycle: imported when called
    return Dataset, _int, _workers


def padded_batch(dataset, batch_size, drop_remainder, num_parallel_workers, pad_info):
    """Dataset.padded_batch."""
    Dataset, _int, _workers = _dataset()
    if pad_info is None:
        return dataset.batch(batch_size, drop_remainder, num_parallel_workers)
    if not isinstance(pad_info, dict):
        raise TypeError(f"padded_batch: pad_info must be a dict, got "
                        f"{type(pad_info).__name__}")
    pads = []
    for column, spec in pad_info.items():
        if not isinstance(column, str) or not isinstance(spec, (tuple, list)) or \
                len(spec) != 2:
            raise ValueError(f"padded_batch: pad_info must map a column name to "
                             f"(shape, pad_value), got {column!r}: {spec!r}")
        shape, value = spec
        if shape is not None:
            shape = [None if d is None else _int(d, f"pad_info[{column!r}] shape")
                     for d in shape]
        pads.append((column, shape, 0.0 if value is None else float(value)))
    c = dataset._c.copy()
    _sluice.dataset_batch_padded(c, _int(batch_size, "batch: batch_size"),
                                 bool(drop_remainder), _workers(num_parallel_workers, "batch"),
                                 pads)
    out = Dataset(c)
    out._batch_size = batch_size
    return out


def split(dataset, sizes, randomize):
    """Dataset.split."""
    Dataset, _, _ = _dataset()
    size = dataset.get_dataset_size()
    sizes = _split_sizes(sizes, size)
    lines = dataset._c.describe().split("\n")       # the source, then a line a node
    if all(line.startswith("map(") for line in lines[1:]):
        parts = _sluice.dataset_split(dataset._c, sizes, bool(randomize), None)
        return tuple(Dataset(c) for c in parts)
    if randomize:
        raise RuntimeError("split: randomize=True needs a source followed by maps alone "
                           "(split the MnistDataset, ... then shuffle and batch each "
                           "part); after other operations use randomize=False")
    if size < 0:
        raise RuntimeError("split: the dataset has no end (repeat without a count)")
    parts, first = [], 0
    for n in sizes:
        parts.append(dataset.skip(first).take(n))
        first += n
    return tuple(parts)


def batch_map(dataset, batch_size, drop_remainder, num_parallel_workers, fn, input_columns,
              output_columns):
    """Dataset.batch with a per_batch_map."""
    Dataset, _int, _workers = _dataset()
    if not callable(fn):
        raise TypeError(f"batch: per_batch_map must be callable, got {type(fn).__name__}")
    ins = dataset.get_col_names() if input_columns is None else _names(input_columns)
    outs = None if output_columns is None else _names(output_columns)
    c = dataset._c.copy()
    _sluice.dataset_batch_map(c, _int(batch_size, "batch: batch_size"), bool(drop_remainder),
                              _workers(num_parallel_workers, "batch"),
                              _per_batch(fn, len(ins if outs is None else outs)), ins, outs)
    out = Dataset(c)
    out._batch_size = batch_size
    return out
