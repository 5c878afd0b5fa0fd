"""sluice.common: what ``mindspore.common`` holds that sluice has: the
parameter initializers (:mod:`sluice.common.initializer`), the element type
names (:mod:`sluice.common.dtype`), :class:`~sluice.common.parameter.ParameterTuple`
(:mod:`sluice.common.parameter`) and :class:`~sluice.Tensor`
(:mod:`sluice.common.tensor`)."""
from sluice.common import dtype, initializer, parameter, tensor

__all__ = ["dtype", "initializer", "parameter", "tensor"]
