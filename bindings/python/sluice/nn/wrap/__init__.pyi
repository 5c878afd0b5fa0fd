"""Type stubs of sluice.nn.wrap."""
from sluice.nn.wrap import cell_wrapper as cell_wrapper
from sluice.nn.wrap.cell_wrapper import (TrainOneStepCell as TrainOneStepCell,
                                         WithLossCell as WithLossCell)
