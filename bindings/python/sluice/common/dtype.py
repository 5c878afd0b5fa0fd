"""sluice.common.dtype: the element type names, as ``mindspore.common.dtype``
(``from sluice.common import dtype as mstype``; ``mstype.int32``). They are
the names sluice's tensors and operators use, the same objects as
``sluice.int32`` and friends."""
from sluice import float32, float64, int32, int64, uint8, uint32

__all__ = ["uint8", "int32", "uint32", "int64", "float32", "float64"]
