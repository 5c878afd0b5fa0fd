"""NumpySlicesDataset and GeneratorDataset: sources over Python's data.

Both run in sluice's C engine (shuffled, sharded, batched and mapped as
the file sources are). :class:`NumpySlicesDataset` hands out rows that are
read-only views of the arrays given (no copy where the layout allows).
:class:`GeneratorDataset` calls the user's Python from the pipeline's
threads, one call at a time since each holds the GIL: the Python work per
sample is not parallel (a map's C operators after it are), so a source
whose ``__getitem__`` costs 50 us reads at most about 20,000 samples/s
whatever ``num_parallel_workers`` says (``bench/python_sources.py``
measures it against PyTorch's DataLoader, whose workers are processes).
"""
import numpy as np

from sluice import _sluice
from sluice.dataset import Dataset, _int, _sampler_args, _source

#: numpy dtypes sluice holds; the others cast to the nearest that holds them.
_SUPPORTED = {np.dtype(t) for t in ("uint8", "int32", "uint32", "int64", "float32", "float64")}
_CAST = {np.dtype(k): np.dtype(v) for k, v in (
    ("bool", "uint8"), ("int8", "int32"), ("int16", "int32"), ("uint16", "int32"),
    ("float16", "float32"))}


def _array(value, what, dtype=None):
    """value (an array, a list, a Python or numpy scalar) as a C-contiguous
    array of a sluice dtype; scalars become 0-d arrays, as MindSpore's."""
    a = np.asarray(value)
    if dtype is not None:
        a = a.astype(np.dtype(dtype), copy=False)
    elif a.dtype not in _SUPPORTED:
        if a.dtype not in _CAST:
            raise TypeError(f"{what} is {a.dtype}; sluice holds uint8, int32, uint32, int64, "
                            "float32 and float64 (and casts bool, int8, int16, uint16, float16)")
        a = a.astype(_CAST[a.dtype])
    if a.dtype not in _SUPPORTED:
        raise TypeError(f"{what}: column type {a.dtype} is not one sluice holds")
    # Not np.ascontiguousarray, which makes a 0-d array 1-d.
    return a if a.flags.c_contiguous else a.copy(order="C")


def _columns(item):
    """A row's columns: a tuple or list holds several, anything else is one."""
    return tuple(item) if isinstance(item, (tuple, list)) else (item,)


def _check_workers(what, num_parallel_workers):
    workers = _int(num_parallel_workers, f"{what}: num_parallel_workers")
    if not 1 <= workers <= 256:
        raise ValueError(f"{what}: num_parallel_workers must be 1 to 256, got {workers}")


def _no_sampler(what, sampler):
    if sampler is not None:
        raise ValueError(f"{what}: sluice has no sampler objects; use shuffle, num_samples, "
                         "num_shards and shard_id")


def _names(what, column_names, n):
    if column_names is None:
        return [f"column_{i}" for i in range(n)]
    names = [column_names] if isinstance(column_names, str) else list(column_names)
    if len(names) != n or not all(isinstance(x, str) for x in names):
        raise ValueError(f"{what}: column_names {names!r} name {len(names)} columns; the data "
                         f"has {n}")
    return names


class NumpySlicesDataset(Dataset):
    """Rows sliced from arrays along their first dimension, as
    ``mindspore.dataset.NumpySlicesDataset``.

    Args:
        data: a dict ``{column name: array}``; a tuple of arrays (one column
            each); a list or a single ndarray (one column, sliced along its
            first dimension). Arrays may be numpy arrays or anything
            ``numpy.asarray`` takes (lists, nested lists).
        column_names ([str]): the columns' names (default the dict's keys,
            else ``column_0``, ``column_1``, ...).
        num_samples (int): at most this many rows per shard and epoch.
        num_parallel_workers (int): as MindSpore's (1 to 256); rows are
            views, read without work, so it changes nothing.
        shuffle (bool): a new random order each epoch (default True, as
            MindSpore's), fixed by ``config.set_seed``.
        sampler: None only (sluice has no sampler objects).
        num_shards (int), shard_id (int): read part ``shard_id`` of
            ``num_shards`` (both or neither).

    No copy: a C-contiguous numpy array of uint8, int32, uint32, int64,
    float32 or float64 is read in place, and each row is a read-only view
    of it (the dataset keeps the array alive as long as a row or the
    dataset lives; do not write to it meanwhile). Other arrays are copied
    once, here: non-contiguous ones, lists, and dtypes sluice does not hold
    (bool, int8, int16 and uint16 become int32 or uint8, float16 float32;
    others are refused).
    """

    __slots__ = ()

    def __init__(self, data, column_names=None, num_samples=None, num_parallel_workers=1,
                 shuffle=None, sampler=None, num_shards=None, shard_id=None):
        what = "NumpySlicesDataset"
        _check_workers(what, num_parallel_workers)
        _no_sampler(what, sampler)
        if isinstance(data, dict):
            names = list(data) if column_names is None else _names(what, column_names, len(data))
            values = list(data.values())
        else:
            values = list(data) if isinstance(data, tuple) else [data]
            names = _names(what, column_names, len(values))
        arrays = [_array(v, f"{what}: column {n!r}") for n, v in zip(names, values)]
        for n, a in zip(names, arrays):
            if a.ndim == 0:
                raise ValueError(f"{what}: column {n!r} is a scalar; it is sliced along its "
                                 "first dimension")
        sampler = _sampler_args(num_samples, shuffle, num_shards, shard_id)
        super().__init__(_source(_sluice.dataset_slices, list(zip(names, arrays)), *sampler))


class _Rows:
    """fetch(index) for a random-access source: the row as arrays."""

    def __init__(self, source, types):
        self._source = source
        self._types = types

    def __call__(self, index):
        return _row(self._source[index], self._types)


class _Stream:
    """fetch(index) for a source without __getitem__: read in order, each
    pass (index 0) from a new iterator."""

    def __init__(self, make_iter, num_rows, types):
        self._make = make_iter
        self._rows = num_rows
        self._types = types
        self._it = None
        self._next = 0

    def __call__(self, index):
        if index == 0:
            self._it = self._make()
        elif index != self._next or self._it is None:
            raise RuntimeError(f"a source without __getitem__ is read in order by one iterator "
                               f"at a time: sample {index} was asked for, {self._next} was "
                               "next")
        self._next = index + 1
        try:
            item = next(self._it)
        except StopIteration:
            raise RuntimeError(f"the source ended after {index} rows; it had {self._rows} when "
                               "the dataset was made") from None
        return _row(item, self._types)


def _row(item, types):
    cols = _columns(item)
    if len(cols) != len(types):
        raise ValueError(f"the row has {len(cols)} columns; the dataset has {len(types)}")
    return tuple(_array(c, f"column {i}", t) for i, (c, t) in enumerate(zip(cols, types)))


def _first_and_count(make_iter, what):
    """The first item and the count of a pass over a source without len()."""
    it = make_iter()
    first, n = None, 0
    for item in it:
        if n == 0:
            first = item
        n += 1
    if n == 0:
        raise ValueError(f"{what}: the source yields no rows")
    return first, n


class GeneratorDataset(Dataset):
    """Rows from Python, as ``mindspore.dataset.GeneratorDataset``.

    Args:
        source: a random-access object (``__getitem__`` and ``__len__``):
            ``source[i]`` is row i, read in the sampler's order (shuffled
            and sharded as the other sources); or a generator function
            (``source()`` gives an iterator) or an iterable
            (``iter(source)``): read in order each epoch, neither shuffled
            nor sharded, by one iterator at a time (a second one running
            at once fails, naming the sample it asked for). A row is a tuple (or list) of arrays, one per
            column, or one array; Python and numpy scalars become 0-d
            arrays (int int64, float float64), lists arrays.
        column_names ([str]): the columns' names (default ``column_0``, ...).
        column_types ([dtype]): cast each column to this type (a sluice
            dtype name such as ``sluice.float32``, or a numpy dtype).
        schema: None only (sluice has no Schema objects).
        num_samples (int): at most this many rows per shard and epoch.
        num_parallel_workers (int): 1 to 256, as MindSpore's; the Python
            runs one call at a time (the GIL) whatever it says.
        shuffle (bool): random-access sources only: a new random order each
            epoch (default True, as MindSpore's).
        sampler: None only (sluice has no sampler objects).
        num_shards (int), shard_id (int): random-access sources only.
        python_multiprocessing, max_rowsize: accepted for MindSpore's
            signature; sluice runs the Python in its pipeline's threads.

    The columns' types and shapes are the first row's, read now (and a
    source without ``__len__`` is counted now by a pass over it; a one-shot
    iterator, such as a generator object, is kept in memory by that pass,
    since it cannot be read twice). Every row must have the first row's
    types and shapes: a row that differs fails naming its sample, as does an
    exception from the source (iterating raises RuntimeError with
    ``generator: sample 17: ValueError: ...``).
    """

    __slots__ = ()

    def __init__(self, source, column_names=None, column_types=None, schema=None,
                 num_samples=None, num_parallel_workers=1, shuffle=None, sampler=None,
                 num_shards=None, shard_id=None, python_multiprocessing=False,
                 max_rowsize=None):
        what = "GeneratorDataset"
        _check_workers(what, num_parallel_workers)
        _no_sampler(what, sampler)
        if schema is not None:
            raise ValueError(f"{what}: sluice has no Schema objects; give column_names (and "
                             "column_types)")
        random_access = hasattr(source, "__getitem__") and hasattr(source, "__len__")
        if random_access:
            num_rows = len(source)
            first = source[0] if num_rows > 0 else None
        else:
            if shuffle or num_shards is not None:
                raise ValueError(f"{what}: a source without __getitem__ (a generator or an "
                                 "iterable) is read in order: it cannot be shuffled or sharded "
                                 "(give an object with __getitem__ and __len__)")
            if callable(source):
                make_iter = lambda: iter(source())  # noqa: E731
            elif hasattr(source, "__iter__"):
                if iter(source) is source and not hasattr(source, "__len__"):
                    source = list(source)   # a one-shot iterator: read once, kept
                make_iter = lambda: iter(source)  # noqa: E731
            else:
                raise TypeError(f"{what}: source must have __getitem__ and __len__, be "
                                f"iterable or callable; got {type(source).__name__}")
            if hasattr(source, "__len__"):
                num_rows = len(source)
                first = next(make_iter(), None)
            else:
                first, num_rows = _first_and_count(make_iter, what)
        if first is None:
            raise ValueError(f"{what}: the source has no rows, so the columns are unknown")
        ncols = len(_columns(first))
        names = _names(what, column_names, ncols)
        types = [None] * ncols if column_types is None else list(column_types)
        if len(types) != ncols:
            raise ValueError(f"{what}: column_types has {len(types)} types; the rows have "
                             f"{ncols} columns")
        try:
            row0 = _row(first, types)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{what}: sample 0: {e}") from None
        specs = [(str(a.dtype), tuple(a.shape)) for a in row0]
        if random_access:
            fetch = _Rows(source, types)
            sampler = _sampler_args(num_samples, shuffle, num_shards, shard_id)
        else:
            fetch = _Stream(make_iter, num_rows, types)
            sampler = _sampler_args(num_samples, False, None, None)
        super().__init__(_source(_sluice.dataset_generator, fetch, num_rows, names, specs,
                                 not random_access, *sampler))
