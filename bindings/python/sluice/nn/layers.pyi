"""Type stubs of sluice.nn.layers."""
from typing import Any, Optional, Tuple, Union

from sluice.nn.cell import Cell, Parameter

_Size = Union[int, Tuple[int, int]]


class Conv2d(Cell):
    in_channels: int
    out_channels: int
    kernel_size: int
    stride: int
    pad: int
    pad_mode: str
    has_bias: bool
    weight: Parameter
    def __init__(self, in_channels: int, out_channels: int, kernel_size: _Size,
                 stride: _Size = ..., pad_mode: str = ..., padding: int = ...,
                 dilation: _Size = ..., group: int = ..., has_bias: bool = ...,
                 weight_init: Any = ..., bias_init: Any = ..., data_format: str = ...) -> None: ...
    def construct(self, x: Any) -> Any: ...


class Dense(Cell):
    in_channels: int
    out_channels: int
    has_bias: bool
    weight: Parameter
    bias: Parameter
    def __init__(self, in_channels: int, out_channels: int, weight_init: Any = ...,
                 bias_init: Any = ..., has_bias: bool = ...,
                 activation: Optional[Any] = ...) -> None: ...
    def construct(self, x: Any) -> Any: ...


class ReLU(Cell):
    def construct(self, x: Any) -> Any: ...


class MaxPool2d(Cell):
    kernel_size: int
    stride: int
    def __init__(self, kernel_size: _Size = ..., stride: _Size = ..., pad_mode: str = ...,
                 data_format: str = ...) -> None: ...
    def construct(self, x: Any) -> Any: ...


class Flatten(Cell):
    def construct(self, x: Any) -> Any: ...


class SequentialCell(Cell):
    def __init__(self, *args: Any) -> None: ...
    def __getitem__(self, index: int) -> Cell: ...
    def __len__(self) -> int: ...
    def construct(self, x: Any) -> Any: ...
