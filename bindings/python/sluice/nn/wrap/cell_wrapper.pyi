"""Type stubs of sluice.nn.wrap.cell_wrapper."""
from sluice.nn import TrainOneStepCell as TrainOneStepCell, WithLossCell as WithLossCell
