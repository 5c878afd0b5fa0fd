"""sluice.ops: the operators a traced ``construct`` may call, as
``mindspore.ops``: :func:`reshape`, :func:`flatten`, :func:`relu`,
:func:`mean` and their primitive classes (``ops.Reshape()(x, shape)``,
``ops.ReduceMean(keep_dims=False)(x, (2, 3))``). They work on the traced
tensors of a step sluice compiles (see :mod:`sluice.nn.cell`), not on data.

A training Cell of the user's own (seed 004's TrainOneStepCell) also has
:class:`GradOperation` (the backward), :class:`Fill`, :class:`DType` and
:class:`Shape` (its ``sens``) and :func:`depend` (its result).

Any other name raises AttributeError naming it and what sluice has.
"""
import operator

import numpy as np

from sluice import _sluice
from sluice.functional import GradOperation
from sluice.nn.cell import SUPPORTED, _Sym, _sym

__all__ = ["reshape", "flatten", "relu", "mean", "Reshape", "Flatten", "ReLU", "ReduceMean",
           "GradOperation", "Fill", "DType", "Shape", "depend"]


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


def mean(x, axis=(), keep_dims=False):
    """The mean over ``axis`` (an int or a tuple of them, negative from the
    end; ``()``, the default: every axis), those axes dropped or, with
    ``keep_dims``, kept as size 1. sluice averages over trailing axes, from
    one axis to the last (``(2, 3)`` of an (N, C, H, W) tensor: global
    average pooling); other sets of axes raise ValueError."""
    t = _sym(x, "ops.mean")
    ndim = t.ndim
    try:
        axes = (operator.index(axis),) if not isinstance(axis, (tuple, list)) else \
            tuple(operator.index(a) for a in axis)
    except TypeError:
        raise TypeError(f"ops.mean: axis must be an int or a tuple of ints, got "
                        f"{axis!r}") from None
    bad = [a for a in axes if not -ndim <= a < ndim]
    if bad:
        raise ValueError(f"ops.mean: axis {bad[0]} is outside a {ndim}-D tensor")
    chosen = sorted({a % ndim for a in axes}) or list(range(ndim))
    if chosen != list(range(chosen[0], ndim)):
        raise ValueError(f"ops.mean: sluice averages over trailing axes only (from one axis to "
                         f"the last, as (2, 3) of (N, C, H, W)); axes {tuple(axes)} of a "
                         f"{ndim}-D tensor are not")
    return t._trace.op(f"ops.mean over {tuple(chosen)}", t._trace.g.reduce_mean, t._node,
                       chosen[0], bool(keep_dims))


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


class ReduceMean:
    """``ops.ReduceMean(keep_dims=False)(x, axis)``: :func:`mean`."""

    def __init__(self, keep_dims=False):
        self.keep_dims = bool(keep_dims)

    def __call__(self, input_x, axis=()):
        return mean(input_x, axis, self.keep_dims)


class DType:
    """``ops.DType()(x)``: the element type of x (a traced tensor, a
    :class:`sluice.Tensor` or an array), as sluice names it: ``"float32"``
    (the same as ``sluice.float32``)."""

    def __call__(self, input_x):
        if isinstance(input_x, _Sym) or isinstance(input_x, _sluice.Tensor):
            return input_x.dtype
        try:
            return np.asarray(input_x).dtype.name
        except (TypeError, ValueError):
            raise TypeError(f"ops.DType: give a tensor, got {type(input_x).__name__}") from None


class Shape:
    """``ops.Shape()(x)``: the shape of x (a traced tensor, a
    :class:`sluice.Tensor` or an array), a tuple of ints; a traced loss's
    is ``()``."""

    def __call__(self, input_x):
        if isinstance(input_x, _Sym) or isinstance(input_x, _sluice.Tensor):
            return tuple(input_x.shape)
        try:
            return np.shape(input_x)
        except (TypeError, ValueError):
            raise TypeError(f"ops.Shape: give a tensor, got {type(input_x).__name__}") from None


class Fill:
    """``ops.Fill()(type, shape, value)``: a new :class:`sluice.Tensor` of
    that element type (``ops.DType()(x)``, ``sluice.float32``) and shape,
    every element ``value``: a constant, made now, also inside a traced
    construct (where it is the ``sens`` of :class:`GradOperation`)."""

    def __call__(self, type, shape, value):
        if isinstance(value, _Sym) or any(isinstance(d, _Sym) for d in
                                          (shape if isinstance(shape, tuple) else ())):
            raise TypeError("ops.Fill: the value and shape must be constants, not traced "
                            "tensors")
        try:
            dtype = np.dtype(type)
            dims = tuple(operator.index(d) for d in shape)
        except TypeError:
            raise TypeError(f"ops.Fill: give a dtype name and a tuple of ints, got {type!r}, "
                            f"{shape!r}") from None
        return _sluice.Tensor(np.full(dims, value, dtype=dtype))


def depend(value, expr):
    """``ops.depend(value, expr)``: value, once expr has been computed. In a
    step sluice compiles the optimizer's updates always run after the rest
    of the step, so ``ops.depend(loss, self.optimizer(grads))`` returns the
    loss of the step, computed before the update."""
    return value


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"sluice.ops has no {name!r}: a construct sluice traces may use "
                         f"{SUPPORTED}")
