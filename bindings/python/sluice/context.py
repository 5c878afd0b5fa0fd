"""sluice.context: the process-wide settings networks and models are made with,
as ``mindspore.context`` and ``mindspore.set_seed``.

:func:`set_context` says how a :class:`sluice.train.Model` runs (its mode
and device); :func:`set_seed` says how a network's parameters start. Both
are read when the object is made: changing them later leaves existing
networks and models as they are. They are also ``sluice.set_context``,
``sluice.GRAPH_MODE`` and so on.
"""
import operator

__all__ = ["GRAPH_MODE", "PYNATIVE_MODE", "set_context", "get_context", "set_seed", "get_seed"]

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
