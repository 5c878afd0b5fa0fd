"""sluice.dataset: datasets as in ``mindspore.dataset``, run by sluice's C engine.

A dataset describes a pipeline: a source (:class:`MnistDataset`,
:class:`ImageFolderDataset`, :class:`Cifar10Dataset`, :class:`Cifar100Dataset`,
:class:`NumpySlicesDataset` over arrays, :class:`GeneratorDataset` over
Python) followed by nodes (:meth:`Dataset.map`,
:meth:`~Dataset.shuffle`, :meth:`~Dataset.batch`, :meth:`~Dataset.repeat`,
:meth:`~Dataset.take`, :meth:`~Dataset.skip`, :meth:`~Dataset.project`,
:meth:`~Dataset.rename`), or other datasets combined (:meth:`~Dataset.concat`
or ``+``, :meth:`~Dataset.zip`, :func:`zip`). Each method returns a new
dataset and leaves its own unchanged. Nothing runs until an iterator is made
(:meth:`~Dataset.create_tuple_iterator`, :meth:`~Dataset.create_dict_iterator`,
:meth:`~Dataset.to_torch`, or a ``for`` loop over the dataset); it starts
the engine's threads, which read, transform, shuffle and batch in parallel
and in a fixed order for a given seed.

Rows hold :class:`sluice.Tensor` values (or numpy arrays, or torch tensors),
which share the engine's memory without a copy and keep it alive as long
as they live.

Errors: ``ValueError`` for bad arguments (and operators that cannot take a
column), ``FileNotFoundError`` / ``OSError`` for files that are missing,
unreadable or malformed when a source is made, ``RuntimeError`` for
failures while the pipeline runs (a corrupt JPEG, a label out of range),
each carrying the C engine's message, which names the file and the sample.
Ctrl-C while iterating stops the pipeline and joins its threads; so do
``break`` (once the iterator is dropped), ``del``, ``close()`` and garbage
collection.
"""
import atexit
import operator
import os
import weakref

from sluice import _sluice
from sluice.dataset import _split_batch
from sluice.dataset._split_batch import BatchInfo

__all__ = ["Dataset", "MnistDataset", "ImageFolderDataset", "Cifar10Dataset",
           "Cifar100Dataset", "NumpySlicesDataset", "GeneratorDataset", "BatchInfo", "Iterator",
           "TorchLoader", "config", "zip"]

#: The iterator type of :meth:`Dataset.create_tuple_iterator` and friends.
Iterator = _sluice.Iterator

# Every live iterator, so that the interpreter's exit stops their threads
# before it tears Python down (a Python map operation in a worker thread
# would otherwise wait for the GIL forever).
_live = weakref.WeakSet()


@atexit.register
def _close_live_iterators():
    for it in list(_live):
        it.close()


class _Config:
    """Settings new datasets start from, as ``mindspore.dataset.config``."""

    def __init__(self):
        self._seed = 0
        self._workers = None    # None: the thread budget's default

    def set_seed(self, seed):
        """Sets the seed of datasets made from now on (default 0): the order of
        their sources' shuffling, of shuffle nodes and of random operators.
        The same seed gives the same rows, whatever the number of workers."""
        seed = operator.index(seed)
        if seed < 0 or seed >= 1 << 64:
            raise ValueError(f"set_seed: seed must be in [0, 2^64), got {seed}")
        self._seed = seed

    def get_seed(self):
        """The seed new datasets get (see :meth:`set_seed`)."""
        return self._seed

    def set_num_parallel_workers(self, num):
        """The workers of a map or batch given no ``num_parallel_workers``,
        from now on (as MindSpore's; the default is the thread budget's: 2
        on 2 or more CPUs). None goes back to that default."""
        if num is not None:
            num = operator.index(num)
            if num < 1:
                raise ValueError(f"set_num_parallel_workers: num must be >= 1, got {num}")
        self._workers = num

    def get_num_parallel_workers(self):
        """The workers a map or batch gets without ``num_parallel_workers``."""
        return self._workers if self._workers is not None else _sluice.default_workers()[1]


    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(f"sluice.dataset.config has no {name!r}: it has set_seed, "
                             "get_seed, set_num_parallel_workers, get_num_parallel_workers")


#: Settings shared by datasets made later (``config.set_seed(seed)``).
config = _Config()


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"sluice.dataset has no {name!r}: it has {', '.join(__all__)}, and "
                         "the modules transforms and vision (sources: MnistDataset, "
                         "ImageFolderDataset, Cifar10Dataset, Cifar100Dataset, "
                         "NumpySlicesDataset, GeneratorDataset)")


def _int(value, name):
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(value).__name__}") from None


def _workers(value, what):
    """num_parallel_workers: None gives the thread budget's default (2 on 2 or
    more CPUs, as `sluice train` uses); the C engine checks the range."""
    if value is None:
        return config.get_num_parallel_workers()
    return _int(value, f"{what}: num_parallel_workers")


def _one_column(value, what):
    """A column name from a str or a list of one str (None stays None)."""
    if value is None or isinstance(value, str):
        return value
    names = list(value)
    if len(names) != 1 or not isinstance(names[0], str):
        raise ValueError(f"map: {what} must be one column name (sluice maps one column at a "
                         f"time), got {value!r}")
    return names[0]


def _sampler_args(num_samples, shuffle, num_shards, shard_id):
    if (num_shards is None) != (shard_id is None):
        raise ValueError("num_shards and shard_id must be given together")
    num_samples = 0 if num_samples is None else _int(num_samples, "num_samples")
    shuffle = True if shuffle is None else bool(shuffle)
    num_shards = 1 if num_shards is None else _int(num_shards, "num_shards")
    shard_id = 0 if shard_id is None else _int(shard_id, "shard_id")
    return num_samples, shuffle, config.get_seed(), num_shards, shard_id


def _no_sampler_or_cache(what, sampler, cache):
    """MindSpore's sampler and cache arguments: sluice has neither object,
    so only None is accepted (silently ignoring one would change what is
    read)."""
    if sampler is not None:
        raise ValueError(f"{what}: sluice has no sampler objects; use shuffle, num_samples, "
                         "num_shards and shard_id")
    if cache is not None:
        raise ValueError(f"{what}: sluice has no dataset cache; cache must be None")


def _c_op(op):
    """The C op of one operation: a sluice operator, or a Python callable
    wrapped in a custom op (the slow path)."""
    c = getattr(op, "_op", None)
    if isinstance(c, _sluice.Op):
        return [c]
    if isinstance(op, _sluice.Op):
        return [op]
    flatten = getattr(op, "_ops", None)  # transforms.Compose
    if flatten is not None:
        return [c for o in flatten() for c in _c_op(o)]
    if callable(op):
        return [_pyfunc_op(op)]
    raise TypeError(f"map: an operation must be a sluice operator or a callable, "
                    f"got {type(op).__name__}")


def _pyfunc_op(fn):
    import numpy as np

    def call(tensor):
        # The input is read-only: it may be the source's own memory.
        return np.ascontiguousarray(fn(np.asarray(tensor)))

    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    return _sluice.op_custom(call, name[:47])


class Dataset:
    """A pipeline description. Made by a source (:class:`MnistDataset`,
    :class:`ImageFolderDataset`); each method returns a new dataset with one
    more node. Iterate it with :meth:`create_tuple_iterator`,
    :meth:`create_dict_iterator`, :meth:`to_torch` or a ``for`` loop (one
    epoch of tuples)."""

    __slots__ = ("_c", "_batch_size")

    def __init__(self, _c):
        if not isinstance(_c, _sluice.Dataset):
            raise TypeError("Dataset is made by a source (MnistDataset, ImageFolderDataset, "
                            "Cifar10Dataset, Cifar100Dataset, NumpySlicesDataset, "
                            "GeneratorDataset) and its methods")
        self._c = _c
        self._batch_size = 1    # the last batch node's, as get_batch_size says

    def _with(self, method, *args):
        c = self._c.copy()
        getattr(c, method)(*args)
        out = Dataset(c)
        out._batch_size = args[0] if method == "batch" else self._batch_size
        return out

    # --- nodes ---------------------------------------------------------------

    def map(self, operations, input_columns=None, output_columns=None, column_order=None,
            num_parallel_workers=None, python_multiprocessing=False, cache=None):
        """Applies ``operations`` in order to one column of every row.

        Args:
            operations: an operator (``vision.Resize((32, 32))``, ...), a
                Python callable taking and returning a numpy array, or a
                list of them. Callables are the slow path: they run in the
                map workers one at a time, each holding the GIL for its call.
            input_columns (str or [str]): the column (default: the first).
            output_columns (str or [str]): a new name for it (default: keep).
            column_order ([str]): as MindSpore's; sluice's map keeps every
                column where it was, so only that order (the columns'
                names after the map) is accepted, or None.
            num_parallel_workers (int): worker threads, 1 to 256 (default:
                the thread budget's, 2 on 2 or more CPUs).
            python_multiprocessing (bool): False only: Python callables run
                in the map's threads of this process.
            cache: None only (sluice has no dataset cache).

        The operators are checked against the column's type and shape now:
        one that cannot take it raises ValueError naming both. Rows keep
        their order whatever the number of workers; consecutive maps run
        in one stage.
        """
        ops = operations if isinstance(operations, (list, tuple)) else [operations]
        c_ops = [c for op in ops for c in _c_op(op)]
        column = _one_column(input_columns, "input_columns")
        if column is None:
            column = self._c.column_names()[0]
        out = _one_column(output_columns, "output_columns")
        if python_multiprocessing:
            raise ValueError("map: sluice runs Python operations in its worker threads, not in "
                             "processes; python_multiprocessing must be False")
        _no_sampler_or_cache("map", None, cache)
        mapped = self._with("map", c_ops, column, out, _workers(num_parallel_workers, "map"))
        if column_order is not None:
            order = [column_order] if isinstance(column_order, str) else list(column_order)
            names = mapped.get_col_names()
            if order != names:
                raise ValueError(f"map: sluice's map keeps the columns in their order; "
                                 f"column_order must be {names} or None, got {order}")
        return mapped

    def shuffle(self, buffer_size):
        """Buffered shuffle: keeps ``buffer_size`` rows (2 to 2^30) and emits a
        random one as each new row arrives; a new order every epoch, fixed by
        the seed (``config.set_seed``)."""
        return self._with("shuffle", _int(buffer_size, "shuffle: buffer_size"))

    def batch(self, batch_size, drop_remainder=False, num_parallel_workers=None, **kwargs):
        """Stacks ``batch_size`` rows (1 to 2^24) into contiguous
        ``(batch_size, ...)`` tensors; the last short batch of an epoch is
        dropped when ``drop_remainder`` is true. Rows of a batch must agree
        in shape and type, unless ``pad_info`` pads them.
        ``num_parallel_workers`` as in :meth:`map`.

        MindSpore's keyword arguments:

        - ``pad_info`` (dict): pad the rows of a batch to one shape, as
          :meth:`padded_batch` (MindSpore 1.x took it here).
        - ``python_multiprocessing``: False only (sluice's workers are
          threads); ``max_rowsize``: accepted and ignored (it sizes
          MindSpore's shared memory between processes, which sluice does
          not use).
        - ``per_batch_map`` (callable), ``input_columns``,
          ``output_columns``: the callable gets one list of numpy arrays
          (the batch's rows) per input column (default: every column) and
          a :class:`BatchInfo`, and returns one list of arrays, or one
          array of ``(rows, ...)``, per output column (a tuple when there
          are several); the rows it returns are then stacked. Its outputs
          (named ``output_columns``, default the input columns' names)
          take the first input column's place; the other input columns
          go. It runs in the batch workers, holding the GIL for the call
          as a Python map operation does; an exception fails the batch
          with RuntimeError naming it and carrying the message. Not with
          ``pad_info`` (pad in the function).

        Any other keyword raises TypeError naming what batch takes."""
        pad_info = kwargs.pop("pad_info", None)
        if kwargs.pop("python_multiprocessing", False):
            raise ValueError("batch: sluice runs batches in its worker threads, not in "
                             "processes; python_multiprocessing must be False")
        kwargs.pop("max_rowsize", None)
        per_batch_map = kwargs.pop("per_batch_map", None)
        input_columns = kwargs.pop("input_columns", None)
        output_columns = kwargs.pop("output_columns", None)
        if kwargs:
            raise TypeError(f"batch: sluice has no {', '.join(map(repr, kwargs))} argument; "
                            "batch takes batch_size, drop_remainder, num_parallel_workers, "
                            "per_batch_map, input_columns, output_columns, pad_info, "
                            "python_multiprocessing (False) and max_rowsize (ignored)")
        if per_batch_map is not None:
            if pad_info is not None:
                raise ValueError("batch: per_batch_map and pad_info together are not "
                                 "supported; pad in the per_batch_map (MindSpore 2's batch "
                                 "has no pad_info)")
            return _split_batch.batch_map(self, batch_size, drop_remainder,
                                          num_parallel_workers, per_batch_map, input_columns,
                                          output_columns)
        if input_columns is not None or output_columns is not None:
            raise ValueError("batch: input_columns and output_columns go with per_batch_map")
        if pad_info is not None:
            return self.padded_batch(batch_size, drop_remainder, num_parallel_workers, pad_info)
        return self._with("batch", _int(batch_size, "batch: batch_size"), bool(drop_remainder),
                          _workers(num_parallel_workers, "batch"))

    def padded_batch(self, batch_size, drop_remainder=False, num_parallel_workers=None,
                     pad_info=None):
        """:meth:`batch` whose rows may differ in shape, as MindSpore's
        ``padded_batch``: each row fills the start of its slot in the batch
        tensor and the rest holds a pad value.

        ``pad_info`` is ``{column: (shape, pad_value)}``: ``shape`` a list
        of the row's sizes to pad to (an entry None: the batch's largest)
        or None (every dimension to the batch's largest); ``pad_value`` a
        number (None: 0). Columns it does not name are padded to the batch's
        largest with 0; ``pad_info={}`` pads them all so, None pads nothing
        (a plain :meth:`batch`). A row
        larger than its shape raises RuntimeError while iterating, naming
        the batch, row, column and sizes."""
        return _split_batch.padded_batch(self, batch_size, drop_remainder, num_parallel_workers,
                                          pad_info)

    def split(self, sizes, randomize=True):
        """Splits the dataset into disjoint datasets that together hold every
        row, as MindSpore's ``split``; returns them as a tuple.

        Args:
            sizes ([int] or [float]): rows of each part, adding up to the
                dataset's size; or fractions in (0, 1] adding up to 1, each
                part getting ``round(f * size)`` rows: a part of 0 rows is
                an error, a sum short of the size gives the rest to the
                first part, one over it takes the excess from the first
                part that keeps at least one row.
            randomize (bool): rows drawn for the parts by one random
                permutation fixed by the seed (``config.set_seed``, default
                True); False: consecutive rows.

        A part is a dataset like any other (map, batch, iterate it, ...).
        Splitting a source (MnistDataset, ...), maybe followed by maps, is
        what MindSpore calls the mappable split: each part reads its rows
        as the source does, shuffled anew each epoch when the source
        shuffles, and maps them. After other operations (shuffle, batch,
        ...) only ``randomize=False`` works: the parts are ``skip``/``take``
        of the pipeline. A sharded dataset, or one with ``num_samples``, is
        refused (shard the parts)."""
        return _split_batch.split(self, sizes, randomize)

    def repeat(self, count=None):
        """Repeats what came before ``count`` times as one epoch; None or -1:
        without end."""
        return self._with("repeat", -1 if count is None else _int(count, "repeat: count"))

    def take(self, count=-1):
        """The first ``count`` rows of each epoch (-1: all). After an endless
        repeat, every ``count`` rows make an epoch."""
        return self._with("take", _int(count, "take: count"))

    def skip(self, count):
        """Every row of each epoch but the first ``count``."""
        return self._with("skip", _int(count, "skip: count"))

    def project(self, columns):
        """Keeps only ``columns`` (a name or a list of names), in that order.
        ValueError naming a column that does not exist or comes twice."""
        names = [columns] if isinstance(columns, str) else list(columns)
        return self._with("project", names)

    def rename(self, input_columns, output_columns):
        """Renames ``input_columns[k]`` to ``output_columns[k]`` (a name or a
        list each); every column keeps its place. ValueError naming a
        column that does not exist, comes twice, or whose new name another
        column has."""
        ins = [input_columns] if isinstance(input_columns, str) else list(input_columns)
        outs = [output_columns] if isinstance(output_columns, str) else list(output_columns)
        return self._with("rename", ins, outs)

    def _combine(self, what, datasets):
        parts = [datasets] if isinstance(datasets, Dataset) else datasets
        if not isinstance(parts, (list, tuple)) or not parts or \
                not all(isinstance(d, Dataset) for d in parts):
            raise TypeError(f"{what}: datasets must be a Dataset or a non-empty list or tuple "
                            f"of them, got {datasets!r}")
        out = self._with(what, [d._c for d in parts])
        out._batch_size = self._batch_size
        return out

    def concat(self, datasets):
        """The rows of this dataset, then those of ``datasets`` (a dataset or
        a list of them), in order, every epoch; ``ds1 + ds2`` is the same.
        The datasets must have the same column names in the same order and,
        column by column, the same type and rank (ValueError naming the
        first that differs). Each runs as a whole pipeline of its own (its
        maps, shuffles and batches) and every epoch restarts each of them;
        what is appended afterwards (``shuffle``, ``batch``, ...) works on
        the joined rows. ``get_dataset_size`` is the sum of theirs. None may
        be endless (``repeat()`` without a count: repeat the concat
        instead)."""
        return self._combine("concat", datasets)

    def __add__(self, other):
        """``ds1 + ds2``: :meth:`concat`."""
        if not isinstance(other, Dataset):
            return NotImplemented
        return self.concat(other)

    def zip(self, datasets):
        """The columns of this dataset and of ``datasets`` (a dataset or a
        tuple or list of them) side by side, row by row: an epoch ends with
        the shortest dataset's (the others' rows left in it are dropped, and
        each starts again next epoch). Column names must all differ
        (ValueError naming the column; :meth:`rename` one first), at most 8
        together. ``get_dataset_size`` is the smallest of theirs."""
        return self._combine("zip", datasets)

    def set_decode_budget(self, nbytes):
        """A new dataset whose iterators let their Decode workers hold at most
        ``nbytes`` of decoded images at once (a worker whose image does not
        fit waits for the others; an image larger than the whole budget is
        an error naming its file). 0, the default: the largest image the
        Decode ops accept, so however many workers decode, together they
        never hold more than one image of the largest size allowed."""
        nbytes = _int(nbytes, "set_decode_budget: nbytes")
        if nbytes < 0:
            raise ValueError(f"set_decode_budget: nbytes must be >= 0, got {nbytes}")
        return self._with("set_decode_budget", nbytes)

    _DECODE_FUSION = {False: 0, "off": 0, True: 1, "crop": 1, "scaled": 2}

    def set_decode_fusion(self, mode):
        """A new dataset whose Decode, when a RandomResizedCrop, Resize or
        CenterCrop follows it (in its map or at the start of the next one),
        runs as ``mode`` says:

        - ``"crop"`` or True (the default): one op decodes only the rows and
          columns the output reads, at full scale: the separate ops' values
          to within 1 level;
        - ``"scaled"``: also at 1/2, 1/4 or 1/8 scale where the output is
          that much smaller: faster, but detailed images shrunk 2x or more
          differ from the separate ops' by several levels on average (the
          scaled decode averages where their bilinear taps alias);
        - ``"off"`` or False: whole images decoded, then the ops as written
          (MindSpore's values)."""
        if isinstance(mode, bool) or mode in ("off", "crop", "scaled"):
            return self._with("set_decode_fusion", self._DECODE_FUSION[mode])
        raise ValueError(f"set_decode_fusion: expected 'off', 'crop', 'scaled' or a bool, "
                         f"got {mode!r}")

    _ERROR_SAMPLES = {"raise": 0, "skip": 1, "replace": 2}

    def set_error_samples(self, mode, max_bad_samples=-1, max_bad_fraction=0.01):
        """A new dataset whose iterators deal with bad samples (a read or a map
        before any batch failing with a data error: a corrupt JPEG, one over
        the decode limit, a wrong shape, a Python operation's exception) as
        ``mode`` says:

        - ``"raise"`` (the default): RuntimeError, after the rows before it;
        - ``"skip"``: it is dropped, and the epoch ends with a stand-in for
          it, so every epoch (and every shard) keeps its length;
        - ``"replace"``: a stand-in takes its place.

        A stand-in is another sample of the same epoch and shard, chosen
        from the seed, the epoch and the bad sample alone: the rows are the
        same whatever the number of workers. Once more than
        ``max_bad_samples`` (>= 0) samples of one epoch are bad, or, when it
        is -1, more than ``max_bad_fraction`` (in [0, 1], default 1%) of the
        epoch's samples, iterating raises RuntimeError naming the count and
        the last one. The iterator's ``get_stats()`` counts them
        (``samples_skipped``, ``samples_replaced``)."""
        if mode not in self._ERROR_SAMPLES:
            raise ValueError(f"set_error_samples: mode must be 'raise', 'skip' or 'replace', "
                             f"got {mode!r}")
        return self._with("set_error_samples", self._ERROR_SAMPLES[mode],
                          _int(max_bad_samples, "set_error_samples: max_bad_samples"),
                          float(max_bad_fraction))

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        have = sorted(n for n in dir(type(self)) if not n.startswith("_"))
        raise AttributeError(f"{type(self).__name__} has no {name!r}: it has "
                             f"{', '.join(have)}")

    def __bool__(self):
        return True     # a dataset, even an empty or endless one (not len()'s truth)

    def __len__(self):
        """MindSpore's ``len(dataset)``: :meth:`get_dataset_size`; TypeError
        for a dataset without end."""
        size = self.get_dataset_size()
        if size < 0:
            raise TypeError("len(): the dataset has no end (repeat without a count): "
                            "take(n) bounds it")
        return size

    # --- what it holds ---------------------------------------------------------

    def get_dataset_size(self):
        """Rows (or batches) per epoch, from the files' headers alone; -1 for
        an epoch without end (an endless repeat no take bounds)."""
        return self._c.get_dataset_size()

    def get_batch_size(self):
        """The rows of a batch: the last ``batch`` node's batch_size (a
        last short batch has fewer), 1 without one, as MindSpore's."""
        return self._batch_size

    def get_col_names(self):
        """The column names, in row order (``['image', 'label']``)."""
        return self._c.column_names()

    def output_types(self):
        """Each column's element type name (``['float32', 'int32']``)."""
        return [self._c.column_spec(i)[0] for i in range(len(self._c.column_names()))]

    def output_shapes(self):
        """Each column's shape as far as known without data; -1 marks a size
        known only then (a decoded image's height, a last short batch)."""
        return [list(self._c.column_spec(i)[1]) for i in range(len(self._c.column_names()))]

    def num_classes(self):
        """The number of classes of an ImageFolder source (None otherwise)."""
        classes = self._c.classes()
        return len(classes) if classes else None

    def get_class_indexing(self):
        """``{class name: label}`` of an ImageFolder source's classes
        (the folders' names); ``{}`` for a source whose labels have no
        names (MNIST)."""
        return {name: label for name, label, _ in (self._c.classes() or [])}

    def describe(self):
        """One line per node, source first (``mnist(train, 60000 rows)``)."""
        return self._c.describe()

    def __repr__(self):
        return "<sluice Dataset: " + self.describe().replace("\n", " -> ") + ">"

    # --- iterating ------------------------------------------------------------------

    def _iterator(self, mode, columns, num_epochs, convert=None, capsule=False, autotune=False):
        it = self._c.iterator(mode=mode, columns=columns, num_epochs=_int(num_epochs, "num_epochs"),
                              convert=convert, convert_capsule=capsule, autotune=bool(autotune))
        _live.add(it)
        return it

    def create_tuple_iterator(self, columns=None, num_epochs=-1, output_numpy=False,
                              do_copy=True, autotune=False):
        """An iterator of rows as tuples, one value per column.

        Args:
            columns ([str]): the columns to give, in this order (default all).
            num_epochs (int): epochs to run (-1: without end, MindSpore's
                default). Each pass over the iterator (a ``for`` loop) is one
                epoch and ends with StopIteration; the next pass continues
                with the next epoch.
            output_numpy (bool): numpy arrays instead of :class:`sluice.Tensor`
                (both share the engine's memory).
            do_copy: accepted for MindSpore's signature; sluice never copies.
            autotune (bool): tune the pipeline while it runs (sluice's own):
                every few rows the engine reads its stage counters and makes
                at most one change (the buffer pool's idle cap, a map's
                workers up to the CPUs, a queue's depth), undone if rows/s
                fell (but for the pool's cap, which costs memory, not
                speed). The iterator's ``autotune_log()`` says what it
                changed and why.

        The pipeline's threads start now. They stop when the last epoch is
        done, on an error, on Ctrl-C, or when the iterator is closed or
        dropped (``break`` then ``del``, or leaving the ``for`` loop that
        made it).
        """
        del do_copy
        return self._iterator(0, columns, num_epochs, _numpy_asarray() if output_numpy else None,
                              autotune=autotune)

    def create_dict_iterator(self, num_epochs=-1, output_numpy=False, do_copy=True,
                             autotune=False):
        """An iterator of rows as dicts ``{column name: value}``; arguments as
        :meth:`create_tuple_iterator`."""
        del do_copy
        return self._iterator(1, None, num_epochs, _numpy_asarray() if output_numpy else None,
                              autotune=autotune)

    def __iter__(self):
        """One epoch of tuples of :class:`sluice.Tensor`."""
        return self.create_tuple_iterator(num_epochs=1)

    def to_torch(self, columns=None, num_epochs=-1):
        """An iterable of tuples of torch tensors, to use where a
        ``torch.utils.data.DataLoader`` was: each ``for`` loop over it is one
        epoch (shuffled anew), ``len()`` is the batches per epoch. The tensors
        share the engine's memory through DLPack (no copy); two kinds of
        column come as copies: a read-only source row (an MNIST image no op
        copied), and a uint32 column (MNIST's raw labels), widened to int64
        since torch has no uint32 (``transforms.TypeCast(sluice.int32)`` on
        ``label`` avoids it). See :class:`TorchLoader`."""
        return TorchLoader(self, columns=columns, num_epochs=num_epochs)


def zip(datasets):  # noqa: A001 (MindSpore's name)
    """``mindspore.dataset.zip``: the datasets of the tuple (or list)
    ``datasets`` side by side, as :meth:`Dataset.zip`."""
    if isinstance(datasets, Dataset):
        raise TypeError("zip: datasets must be a tuple or list of at least two Datasets; "
                        "for one, use it as it is")
    parts = list(datasets) if isinstance(datasets, (list, tuple)) else None
    if not parts or len(parts) < 2 or not all(isinstance(d, Dataset) for d in parts):
        raise TypeError(f"zip: datasets must be a tuple or list of at least two Datasets, got "
                        f"{datasets!r}")
    return parts[0].zip(parts[1:])


def _numpy_asarray():
    import numpy as np
    return np.asarray


class TorchLoader:
    """Batches of a :class:`Dataset` as torch tensors, DataLoader-style.

    ``for images, labels in loader:`` runs one epoch; the next loop runs the
    next epoch of the same pipeline (a new shuffle), up to ``num_epochs``
    (-1: without end). A loop left early (``break``) drops the rest of its
    epoch when the next loop begins. ``len(loader)`` is the batches per epoch.
    The pipeline's threads run between epochs too (preparing the next one)
    until :meth:`close`, the end of ``with``, or the loader is dropped.
    """

    def __init__(self, dataset, columns=None, num_epochs=-1):
        from torch.utils.dlpack import from_dlpack
        self._dataset = dataset
        self._columns = columns
        self._num_epochs = num_epochs
        self._from_dlpack = from_dlpack
        self._it = None

    def __bool__(self):
        return True     # a dataset, even an empty or endless one (not len()'s truth)

    def __len__(self):
        n = self._dataset.get_dataset_size()
        if n < 0:
            raise TypeError("len(): the dataset's epoch has no end")
        return n

    def __iter__(self):
        if self._it is None:
            self._it = self._dataset._iterator(0, self._columns, self._num_epochs,
                                               self._from_dlpack, True)
        else:
            self._it.finish_epoch()
        return self._it

    def close(self):
        """Stops the pipeline and joins its threads."""
        if self._it is not None:
            self._it.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _source(fill, *args):
    c = _sluice.Dataset()
    fill(c, *args)
    c.set_seed(config.get_seed())
    return c


class MnistDataset(Dataset):
    """The MNIST (or Fashion-MNIST) files of a folder, as ``mindspore.dataset.MnistDataset``.

    Yields ``image`` uint8 (28, 28, 1) and ``label`` uint32 ().

    Args:
        dataset_dir (str or path): holds ``train-images-idx3-ubyte`` and
            ``train-labels-idx1-ubyte`` (for usage train), ``t10k-...`` (test),
            plain or gzip (``.gz``).
        usage (str): ``"train"`` (60000 samples), ``"test"`` (10000) or
            ``"all"`` (the default, None: train then test, each split whose
            images file is in the folder, as MindSpore reads a folder that
            holds the train files alone).
        num_samples (int): at most this many samples per shard and epoch
            (None or 0: all).
        num_parallel_workers (int): as MindSpore's (None or 1 to 256). MNIST's
            samples are slices of files read once, with no per-sample work
            to spread, so sluice reads them on one thread whatever this says;
            give workers to the ``map`` calls that do the work.
        shuffle (bool): read in a new random order each epoch (default True).
        sampler: None only (sluice has no sampler objects: shuffle,
            num_samples and the shards choose what is read).
        num_shards (int), shard_id (int): read part ``shard_id`` of
            ``num_shards`` (both or neither).
        cache: None only (sluice has no dataset cache).

    The headers are read now: a missing folder or file raises
    FileNotFoundError, a malformed one OSError. The pixels are read once,
    by the first iterator, and shared by every later one.
    """

    __slots__ = ()

    _USAGE = {None: 0, "all": 0, "train": 1, "test": 2}

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None,
                 shuffle=None, sampler=None, num_shards=None, shard_id=None, cache=None):
        if usage not in self._USAGE:
            raise ValueError(f"MnistDataset: usage must be 'train', 'test' or 'all', got {usage!r}")
        if num_parallel_workers is not None:
            workers = _int(num_parallel_workers, "MnistDataset: num_parallel_workers")
            if not 1 <= workers <= 256:
                raise ValueError(f"MnistDataset: num_parallel_workers must be 1 to 256, "
                                 f"got {workers}")
        _no_sampler_or_cache("MnistDataset", sampler, cache)
        sampler = _sampler_args(num_samples, shuffle, num_shards, shard_id)
        super().__init__(_source(_sluice.Dataset.mnist, os.fspath(dataset_dir),
                                 self._USAGE[usage], *sampler))


def _cifar_source(what, hundred, dataset_dir, usage, num_samples, num_parallel_workers,
                  shuffle, sampler, num_shards, shard_id, cache):
    if usage not in MnistDataset._USAGE:
        raise ValueError(f"{what}: usage must be 'train', 'test' or 'all', got {usage!r}")
    if num_parallel_workers is not None:
        workers = _int(num_parallel_workers, f"{what}: num_parallel_workers")
        if not 1 <= workers <= 256:
            raise ValueError(f"{what}: num_parallel_workers must be 1 to 256, got {workers}")
    _no_sampler_or_cache(what, sampler, cache)
    args = _sampler_args(num_samples, shuffle, num_shards, shard_id)
    return _source(_sluice.Dataset.cifar, os.fspath(dataset_dir), hundred,
                   MnistDataset._USAGE[usage], *args)


class Cifar10Dataset(Dataset):
    """The CIFAR-10 binary files of a folder, as ``mindspore.dataset.Cifar10Dataset``.

    Yields ``image`` uint8 (32, 32, 3), HWC (the files hold CHW planes), and
    ``label`` uint32 (), MindSpore's columns and types.

    Args:
        dataset_dir (str or path): holds ``data_batch_1.bin`` ..
            ``data_batch_5.bin`` (usage train) and ``test_batch.bin`` (test),
            as the archive's ``cifar-10-batches-bin`` folder does.
        usage (str): ``"train"``, ``"test"`` or ``"all"`` (the default, None:
            train then test, each split of which a file is in the folder).
        num_samples (int): at most this many samples per shard and epoch
            (None or 0: all).
        num_parallel_workers (int): as MindSpore's (None or 1 to 256); the
            records are read by the pipeline's source stage whatever this
            says (give workers to the ``map`` calls that do the work).
        shuffle (bool): read in a new random order each epoch (default True).
        sampler: None only, as in :class:`MnistDataset`.
        num_shards (int), shard_id (int): as in :class:`MnistDataset`.
        cache: None only (sluice has no dataset cache).

    The files are checked now (FileNotFoundError names a missing one and
    the split's files, OSError a truncated one); each record is read when
    an iterator needs it, so memory does not grow with the dataset. A label
    out of range (>= 10) fails its sample with its file and record.
    """

    __slots__ = ()

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None,
                 shuffle=None, sampler=None, num_shards=None, shard_id=None, cache=None):
        super().__init__(_cifar_source("Cifar10Dataset", False, dataset_dir, usage, num_samples,
                                       num_parallel_workers, shuffle, sampler, num_shards,
                                       shard_id, cache))


class Cifar100Dataset(Dataset):
    """The CIFAR-100 binary files of a folder, as ``mindspore.dataset.Cifar100Dataset``.

    Yields ``image`` uint8 (32, 32, 3), HWC, ``coarse_label`` and
    ``fine_label``, uint32 (), MindSpore's columns and types.

    Args:
        dataset_dir (str or path): holds ``train.bin`` (usage train) and
            ``test.bin`` (test), as the archive's ``cifar-100-binary`` folder.
        usage, num_samples, num_parallel_workers, shuffle, sampler,
        num_shards, shard_id, cache: as in :class:`Cifar10Dataset`.

    A coarse label >= 20 or a fine label >= 100 fails its sample.
    """

    __slots__ = ()

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None,
                 shuffle=None, sampler=None, num_shards=None, shard_id=None, cache=None):
        super().__init__(_cifar_source("Cifar100Dataset", True, dataset_dir, usage, num_samples,
                                       num_parallel_workers, shuffle, sampler, num_shards,
                                       shard_id, cache))


class ImageFolderDataset(Dataset):
    """A folder with one sub-folder of images per class, as
    ``mindspore.dataset.ImageFolderDataset``.

    Yields ``image`` (the file's bytes, uint8 (n,), or with ``decode=True``
    the RGB image, uint8 (H, W, 3)) and ``label`` int32 () (classes numbered
    in sorted folder order unless ``class_indexing`` says otherwise).

    Args:
        dataset_dir (str or path): the folder.
        num_samples (int): at most this many samples per shard and epoch.
        num_parallel_workers (int): decoding workers when ``decode`` (1 to
            256; default 2).
        shuffle (bool): a new random order each epoch (default True).
        extensions ([str]): only files ending so (``[".jpg", ".jpeg"]``;
            default every file).
        class_indexing (dict): only these class folders, with these labels
            (``{"cat": 0, "dog": 1}``).
        sampler: None only, as in :class:`MnistDataset`.
        decode (bool): decode the JPEGs (default False: the bytes).
        num_shards (int), shard_id (int): as in :class:`MnistDataset`.
        cache: None only (sluice has no dataset cache).
        decode_max_pixels (int): with ``decode``, refuse JPEGs declaring more
            pixels (default None: 2^26, as ``vision.Decode``).
    """

    __slots__ = ()

    def __init__(self, dataset_dir, num_samples=None, num_parallel_workers=None, shuffle=None,
                 sampler=None, extensions=None, class_indexing=None, decode=False,
                 num_shards=None, shard_id=None, cache=None, decode_max_pixels=None):
        _no_sampler_or_cache("ImageFolderDataset", sampler, cache)
        sampler = _sampler_args(num_samples, shuffle, num_shards, shard_id)
        if isinstance(extensions, str):
            extensions = [extensions]
        names = indices = None
        if class_indexing is not None:
            if not isinstance(class_indexing, dict):
                raise TypeError("ImageFolderDataset: class_indexing must be a dict "
                                "{class folder: label}")
            names = list(class_indexing)
            indices = [_int(class_indexing[n], "class_indexing") for n in names]
        workers = 2 if num_parallel_workers is None else _int(
            num_parallel_workers, "ImageFolderDataset: num_parallel_workers")
        max_pixels = 0 if decode_max_pixels is None else _int(
            decode_max_pixels, "ImageFolderDataset: decode_max_pixels")
        if decode_max_pixels is not None and max_pixels < 1:
            raise ValueError(f"ImageFolderDataset: decode_max_pixels must be >= 1, "
                             f"got {max_pixels}")
        super().__init__(_source(_sluice.Dataset.image_folder, os.fspath(dataset_dir),
                                 None if extensions is None else list(extensions), names, indices,
                                 bool(decode), workers, *sampler, max_pixels))


# Last: they build on Dataset and the helpers above.
from sluice.dataset._python_sources import GeneratorDataset, NumpySlicesDataset  # noqa: E402
