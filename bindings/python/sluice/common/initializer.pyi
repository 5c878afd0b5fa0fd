"""Type stubs of sluice.common.initializer."""
from typing import Any, Optional, Sequence, Union


class Initializer:
    kind: Optional[str]
    sigma: float
    def __init__(self, sigma: float = ...) -> None: ...


class TruncatedNormal(Initializer):
    def __init__(self, sigma: float = ...) -> None: ...


class Normal(Initializer):
    mean: float
    def __init__(self, sigma: float = ..., mean: float = ...) -> None: ...


class Zero(Initializer): ...


class One(Initializer): ...


def initializer(init: Union[Initializer, str], shape: Optional[Sequence[int]] = ...,
                dtype: Optional[str] = ...) -> Initializer: ...
