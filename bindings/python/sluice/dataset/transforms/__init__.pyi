"""Type stubs of sluice.dataset.transforms."""
from typing import Any, Callable, Sequence, Union


class Operation:
    def __call__(self, array: Any, seed: int = ...) -> Any: ...


class TypeCast(Operation):
    def __init__(self, data_type: Any) -> None: ...


class OneHot(Operation):
    def __init__(self, num_classes: int, smoothing_rate: float = ...) -> None: ...


class Compose:
    transforms: list
    def __init__(self, transforms: Sequence[Union[Operation, Callable[[Any], Any]]]) -> None: ...
    def __call__(self, array: Any) -> Any: ...
