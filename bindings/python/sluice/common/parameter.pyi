"""Type stubs of sluice.common.parameter."""
from typing import Iterable, Tuple

from sluice.nn.cell import Parameter as Parameter


class ParameterTuple(Tuple[Parameter, ...]):
    def __new__(cls, iterable: Iterable[Parameter]) -> "ParameterTuple": ...
