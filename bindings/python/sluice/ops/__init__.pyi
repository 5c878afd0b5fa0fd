"""Type stubs of sluice.ops."""
from typing import Any, Sequence, Tuple, TypeVar, Union

from sluice import Tensor
from sluice.functional import GradOperation as GradOperation

_T = TypeVar("_T")


def reshape(input_x: Any, input_shape: Sequence[int]) -> Any: ...
def flatten(input: Any, order: str = ..., *, start_dim: int = ..., end_dim: int = ...) -> Any: ...
def relu(input: Any) -> Any: ...
def mean(x: Any, axis: Union[int, Sequence[int]] = ..., keep_dims: bool = ...) -> Any: ...


class Reshape:
    def __call__(self, input_x: Any, input_shape: Sequence[int]) -> Any: ...


class Flatten:
    def __call__(self, input_x: Any) -> Any: ...


class ReLU:
    def __call__(self, input_x: Any) -> Any: ...


class ReduceMean:
    keep_dims: bool
    def __init__(self, keep_dims: bool = ...) -> None: ...
    def __call__(self, input_x: Any, axis: Union[int, Sequence[int]] = ...) -> Any: ...


class DType:
    def __call__(self, input_x: Any) -> str: ...


class Shape:
    def __call__(self, input_x: Any) -> Tuple[int, ...]: ...


class Fill:
    def __call__(self, type: Any, shape: Sequence[int], value: float) -> Tensor: ...


def depend(value: _T, expr: Any) -> _T: ...
