"""sluice.common.parameter: :class:`Parameter` and :class:`ParameterTuple`,
as ``mindspore.common.parameter``."""
from sluice.nn.cell import Parameter

__all__ = ["Parameter", "ParameterTuple"]


class ParameterTuple(tuple):
    """A tuple of :class:`Parameter` (``ParameterTuple(network.trainable_params())``),
    the weights of :class:`sluice.ops.GradOperation`. Anything else in it,
    or a parameter given twice, raises an error."""

    def __new__(cls, iterable):
        items = tuple(iterable)
        bad = [type(p).__name__ for p in items if not isinstance(p, Parameter)]
        if bad:
            raise TypeError(f"ParameterTuple: every item must be a Parameter, got {bad[0]}")
        if len({id(p) for p in items}) != len(items):
            raise ValueError("ParameterTuple: a parameter is given twice")
        return super().__new__(cls, items)
