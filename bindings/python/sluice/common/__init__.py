"""sluice.common: what ``mindspore.common`` holds that sluice has: the
parameter initializers (:mod:`sluice.common.initializer`), the element type
names (:mod:`sluice.common.dtype`) and :class:`~sluice.common.parameter.ParameterTuple`
(:mod:`sluice.common.parameter`)."""
from sluice.common import dtype, initializer, parameter

__all__ = ["dtype", "initializer", "parameter"]
