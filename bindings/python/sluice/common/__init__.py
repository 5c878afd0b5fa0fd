"""sluice.common: what ``mindspore.common`` holds that sluice has: the
parameter initializers (:mod:`sluice.common.initializer`)."""
from sluice.common import initializer

__all__ = ["initializer"]
