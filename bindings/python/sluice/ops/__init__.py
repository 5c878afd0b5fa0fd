"""sluice.ops: the operators a traced ``construct`` may call, as
``mindspore.ops``: :func:`reshape`, :func:`flatten`, :func:`relu` and their
primitive classes (``ops.Reshape()(x, shape)``). They work on the traced
tensors of a step sluice compiles (see :mod:`sluice.nn.cell`), not on data.
Any other name raises AttributeError naming it and what sluice has.
"""
import operator

from sluice.nn.cell import SUPPORTED, _sym

__all__ = ["reshape", "flatten", "relu", "Reshape", "Flatten", "ReLU"]


def reshape(input_x, input_shape):
    """The same elements in another shape; one size may be -1 (inferred)."""
    x = _sym(input_x, "ops.reshape")
    try:
        shape = tuple(operator.index(s) for s in input_shape)
    except TypeError:
        raise TypeError(f"ops.reshape: the shape must be a tuple of ints, got "
                        f"{input_shape!r}") from None
    return x._trace.op(f"ops.reshape to {shape}", x._trace.g.reshape, x._node, shape)


def flatten(input, order="C", *, start_dim=1, end_dim=-1):
    """(N, ...) -> (N, the product of the rest)."""
    if order != "C" or start_dim != 1 or end_dim != -1:
        raise ValueError("ops.flatten: sluice flattens everything after the first dimension "
                         "(order 'C', start_dim=1, end_dim=-1)")
    x = _sym(input, "ops.flatten")
    return x._trace.op("ops.flatten", x._trace.g.flatten, x._node)


def relu(input):
    """max(x, 0), elementwise."""
    x = _sym(input, "ops.relu")
    return x._trace.op("ops.relu", x._trace.g.relu, x._node)


class Reshape:
    """``ops.Reshape()(x, shape)``: :func:`reshape`."""

    def __call__(self, input_x, input_shape):
        return reshape(input_x, input_shape)


class Flatten:
    """``ops.Flatten()(x)``: :func:`flatten`."""

    def __call__(self, input_x):
        return flatten(input_x)


class ReLU:
    """``ops.ReLU()(x)``: :func:`relu`."""

    def __call__(self, input_x):
        return relu(input_x)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"sluice.ops has no {name!r}: a construct sluice traces may use "
                         f"{SUPPORTED}")
