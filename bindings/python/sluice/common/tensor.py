"""sluice.common.tensor: :class:`Tensor` under MindSpore's module path
(``from mindspore.common.tensor import Tensor``): the same class as
``sluice.Tensor``, an n-dimensional array numpy and PyTorch share
without a copy. ``Tensor(array)`` copies a numpy array (or anything with
the buffer protocol) into a new one."""
from sluice._sluice import Tensor

__all__ = ["Tensor"]
