"""Type stubs of sluice.common."""
from sluice.common import dtype as dtype
from sluice.common import initializer as initializer
from sluice.common import parameter as parameter
from sluice.common import tensor as tensor
