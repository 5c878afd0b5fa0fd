"""Type stubs of sluice.common.tensor."""
from sluice import Tensor as Tensor
