"""sluice.nn.wrap: the cells that wrap a network for training, under
MindSpore's module path (``mindspore.nn.wrap``); also in :mod:`sluice.nn`."""
from sluice.nn.wrap import cell_wrapper
from sluice.nn.wrap.cell_wrapper import TrainOneStepCell, WithLossCell

__all__ = ["cell_wrapper", "WithLossCell", "TrainOneStepCell"]
