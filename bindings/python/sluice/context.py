"""sluice.context: the process-wide settings networks and models are made with,
as ``mindspore.context`` and ``mindspore.set_seed``.

:func:`set_context` says how a :class:`sluice.train.Model` runs (its mode
and device); :func:`set_seed` says how a network's parameters start. Both
are read when the object is made: changing them later leaves existing
networks and models as they are. :func:`set_auto_parallel_context` says
whether ``Model.train`` trains across the job's ranks; it is read by each
``train``. They are also ``sluice.set_context``, ``sluice.GRAPH_MODE`` and
so on.
"""
import operator

__all__ = ["GRAPH_MODE", "PYNATIVE_MODE", "set_context", "get_context", "set_seed", "get_seed",
           "ParallelMode", "set_auto_parallel_context", "get_auto_parallel_context",
           "reset_auto_parallel_context"]

#: Compile each step once: memory planned up front, nothing allocated per step.
GRAPH_MODE = 0
#: Run the same operators one by one, allocating as they go. The numbers are
#: the same as GRAPH_MODE's, bit for bit.
PYNATIVE_MODE = 1

_DEVICES = ("CPU", "SIM")

_context = {
    "mode": GRAPH_MODE,
    "device_target": "CPU",
    "device_id": 0,
    "save_graphs": False,
    "save_graphs_path": ".",
}
_seed = [0]


def _check(key, value):
    if key == "mode":
        if value not in (GRAPH_MODE, PYNATIVE_MODE):
            raise ValueError(f"set_context: mode must be GRAPH_MODE (0) or PYNATIVE_MODE (1), "
                             f"got {value!r}")
        return value
    if key == "device_target":
        if not isinstance(value, str) or value.upper() not in _DEVICES:
            raise ValueError(f"set_context: device target {value!r} is not available: this "
                             f"build has CPU and SIM (a model of an accelerator)")
        return value.upper()
    if key == "device_id":
        value = operator.index(value)
        if not 0 <= value <= 63:
            raise ValueError(f"set_context: device_id {value} is outside [0, 63]")
        return value
    if key == "save_graphs":
        return bool(value)
    if key == "save_graphs_path":
        return str(value)
    raise ValueError(f"set_context: sluice has no setting '{key}' (it has "
                     f"{', '.join(sorted(_context))})")


def set_context(**kwargs):
    """Sets how models made from now on run.

    Args:
        mode: :data:`GRAPH_MODE` (the default) or :data:`PYNATIVE_MODE`.
        device_target (str): ``"CPU"`` (the default) or ``"SIM"``, a model of
            an accelerator across a PCIe bus (its copies and launches cost
            time, as a real one's do).
        device_id (int): the device's index, 0 to 63 (default 0).
        save_graphs (bool): write each model's compiled steps as ``.ir``
            text and Graphviz ``.dot`` files (default False)...
        save_graphs_path (str): ...into this folder (default ``"."``).

    An unknown key or a bad value raises ValueError; nothing is changed
    then.
    """
    checked = {key: _check(key, value) for key, value in kwargs.items()}
    _context.update(checked)


def get_context(attr_key):
    """The value of one setting of :func:`set_context` (``"mode"``, ...)."""
    if attr_key not in _context:
        raise ValueError(f"get_context: sluice has no setting '{attr_key}'")
    return _context[attr_key]


def set_seed(seed):
    """Sets the seed of the parameters of networks made from now on
    (default 0): a network made after ``set_seed(s)`` starts from the same
    values as ``sluice train --seed s``. The order of datasets has its own
    seed, ``sluice.dataset.config.set_seed``."""
    seed = operator.index(seed)
    if seed < 0 or seed >= 1 << 64:
        raise ValueError(f"set_seed: seed must be in [0, 2^64), got {seed}")
    _seed[0] = seed


def get_seed():
    """The seed networks made now get (see :func:`set_seed`)."""
    return _seed[0]


class ParallelMode:
    """The parallel modes' names, as ``mindspore.ParallelMode``. sluice has
    STAND_ALONE and DATA_PARALLEL; the others are refused by
    :func:`set_auto_parallel_context`."""
    STAND_ALONE = "stand_alone"
    DATA_PARALLEL = "data_parallel"
    HYBRID_PARALLEL = "hybrid_parallel"
    SEMI_AUTO_PARALLEL = "semi_auto_parallel"
    AUTO_PARALLEL = "auto_parallel"


_AUTO_DEFAULTS = {"parallel_mode": ParallelMode.STAND_ALONE, "gradients_mean": True,
                  "device_num": None}
_auto_parallel = dict(_AUTO_DEFAULTS)


def _check_auto(key, value):
    what = "set_auto_parallel_context"
    if key == "parallel_mode":
        if value in (ParallelMode.STAND_ALONE, ParallelMode.DATA_PARALLEL):
            return value
        if value in (ParallelMode.HYBRID_PARALLEL, ParallelMode.SEMI_AUTO_PARALLEL,
                     ParallelMode.AUTO_PARALLEL):
            raise ValueError(f"{what}: sluice has no {value}: its one parallel mode is "
                             f"data_parallel (every rank holds the whole network and trains "
                             f"on its own shard of the data), or stand_alone")
        raise ValueError(f"{what}: parallel_mode must be 'data_parallel' or 'stand_alone', "
                         f"got {value!r}")
    if key == "gradients_mean":
        if not value:
            raise ValueError(f"{what}: gradients_mean={value!r}: sluice always averages the "
                             f"ranks' gradients (a step is the global batch's, its loss the "
                             f"mean); leave it out or pass True")
        return True
    if key == "device_num":
        if value is None:
            return None
        value = operator.index(value)
        if not 1 <= value <= 4096:
            raise ValueError(f"{what}: device_num must be in [1, 4096], got {value}")
        return value
    raise ValueError(f"{what}: sluice has no setting '{key}' (it has "
                     f"{', '.join(sorted(_AUTO_DEFAULTS))})")


def set_auto_parallel_context(**kwargs):
    """Says whether ``Model.train`` trains across the job's ranks.

    Args:
        parallel_mode (str): ``"data_parallel"``
            (:attr:`ParallelMode.DATA_PARALLEL`): after
            :func:`sluice.communication.init`, ``Model.train`` averages the
            gradients of every rank after every step, each rank training on
            its own shard of the data; ``"stand_alone"`` (the default)
            resets every setting here: each process trains alone. Other
            modes raise ValueError.
        gradients_mean (bool): True (the default here; MindSpore's is
            False): sluice always averages; False raises ValueError.
        device_num (int): the job's ranks, checked by ``Model.train``
            against ``mpirun -np``; None (the default): whatever they are.

    An unknown key or a bad value raises ValueError; nothing is changed
    then.
    """
    checked = {key: _check_auto(key, value) for key, value in kwargs.items()}
    if checked.get("parallel_mode") == ParallelMode.STAND_ALONE:
        _auto_parallel.update(_AUTO_DEFAULTS)
    _auto_parallel.update(checked)


def get_auto_parallel_context(attr_key):
    """The value of one setting of :func:`set_auto_parallel_context`."""
    if attr_key not in _auto_parallel:
        raise ValueError(f"get_auto_parallel_context: sluice has no setting '{attr_key}'")
    return _auto_parallel[attr_key]


def reset_auto_parallel_context():
    """Every setting of :func:`set_auto_parallel_context` back to its default
    (stand_alone)."""
    _auto_parallel.update(_AUTO_DEFAULTS)


def _data_parallel(what):
    """True when ``what`` (Model.train) is to train across the job's ranks:
    data_parallel after communication.init(). data_parallel without init
    raises RuntimeError (the process would train alone, unnoticed), a
    device_num that is not the job's ranks ValueError."""
    if _auto_parallel["parallel_mode"] != ParallelMode.DATA_PARALLEL:
        return False
    from sluice import _sluice
    if not _sluice.distributed_initialized():
        raise RuntimeError(f"{what}: parallel_mode is data_parallel, but this process has not "
                           f"joined the job's ranks: call sluice.communication.init() first "
                           f"(under mpirun), or set parallel_mode='stand_alone'")
    size = _sluice.distributed_size()
    if _auto_parallel["device_num"] not in (None, size):
        raise ValueError(f"{what}: set_auto_parallel_context(device_num="
                         f"{_auto_parallel['device_num']}), but the job has {size} ranks "
                         f"(mpirun -np {size})")
    return True


def _train_alone(what):
    """ValueError when data_parallel is set: ``what`` (data_sink, a
    DatasetHelper) trains this process alone, which the mode forbids."""
    if _auto_parallel["parallel_mode"] == ParallelMode.DATA_PARALLEL:
        raise ValueError(f"{what}: sluice trains data_parallel in Model.train only; here each "
                         f"rank would train alone (set_auto_parallel_context("
                         f"parallel_mode='stand_alone') to do that on purpose)")
