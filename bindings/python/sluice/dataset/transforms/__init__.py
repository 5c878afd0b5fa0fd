"""sluice.dataset.transforms: operators for any column, as ``mindspore.dataset.transforms``.

:class:`TypeCast`, :class:`OneHot` and :class:`Compose`; the image operators
are in :mod:`sluice.dataset.vision`. Every operator is immutable, may serve
many maps at once, and may be called on one numpy array directly
(``TypeCast("int32")(labels)``), which returns a numpy array.
"""
import operator

from sluice import _sluice

__all__ = ["Operation", "TypeCast", "OneHot", "Compose"]


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"sluice.dataset.transforms has no {name!r}: it has "
                         f"{', '.join(__all__)} (image operators: sluice.dataset.vision)")


class Operation:
    """The base of sluice's operators: one C operator, applied by
    :meth:`sluice.dataset.Dataset.map` to every row in the engine's worker
    threads (no GIL, no Python per sample)."""

    __slots__ = ("_op",)

    def __call__(self, array, seed=0):
        """Applies the operator to one array now and returns a numpy array
        (random operators draw from a generator seeded by ``seed``)."""
        import numpy as np
        return np.asarray(self._op.apply(array, seed))

    def __repr__(self):
        return f"<sluice {type(self).__name__} ({self._op.name})>"


def _dtype_name(data_type):
    """A dtype name from a str, a numpy dtype or type, or sluice.int32 & co."""
    if isinstance(data_type, str):
        return data_type
    try:
        import numpy as np
        return np.dtype(data_type).name
    except TypeError:
        raise TypeError(f"TypeCast: data_type must be a dtype name, a numpy dtype or "
                        f"sluice.int32 and the like, got {data_type!r}") from None


class TypeCast(Operation):
    """Casts a column to ``data_type`` (``sluice.int32``, ``"float32"``,
    ``numpy.int64``, ...): C conversions, floats truncated toward zero and
    saturated to the target's range (NaN becomes 0)."""

    __slots__ = ()

    def __init__(self, data_type):
        self._op = _sluice.op_type_cast(_dtype_name(data_type))


class OneHot(Operation):
    """Integer labels, scalar or (N,), to one-hot (num_classes) or
    (N, num_classes) of the same type; a label outside [0, num_classes) is an
    error naming the sample."""

    __slots__ = ()

    def __init__(self, num_classes, smoothing_rate=0.0):
        if smoothing_rate != 0.0:
            raise ValueError("OneHot: sluice has no label smoothing (smoothing_rate must be 0)")
        self._op = _sluice.op_one_hot(operator.index(num_classes))


class Compose:
    """Several operations (operators or Python callables) as one, in order.
    In a map it is the same as giving the list."""

    __slots__ = ("transforms",)

    def __init__(self, transforms):
        self.transforms = list(transforms)
        if not self.transforms:
            raise ValueError("Compose: give at least one operation")

    def _ops(self):
        return self.transforms

    def __call__(self, array):
        """Applies every operation in turn to one array; returns a numpy array."""
        import numpy as np
        for t in self.transforms:
            array = t(array)
        return np.asarray(array)
