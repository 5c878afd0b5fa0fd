"""sluice.nn.wrap.cell_wrapper: :class:`WithLossCell` and
:class:`TrainOneStepCell` under MindSpore's module path
(``from mindspore.nn.wrap.cell_wrapper import WithLossCell``); the same
classes as ``sluice.nn``'s."""
from sluice.nn import TrainOneStepCell, WithLossCell

__all__ = ["WithLossCell", "TrainOneStepCell"]
