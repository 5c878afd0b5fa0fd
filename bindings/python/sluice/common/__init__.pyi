"""Type stubs of sluice.common."""
from sluice.common import initializer as initializer
