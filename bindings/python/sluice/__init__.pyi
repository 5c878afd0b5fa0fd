"""Type stubs of sluice (the C extension's Tensor, the dtype names, the
training names it re-exports)."""
from typing import Any, Optional, Tuple

from sluice import (common as common, communication as communication, context as context,
                    dataset as dataset, nn as nn, ops as ops, train as train)
from sluice.functional import JitConfig as JitConfig, value_and_grad as value_and_grad
from sluice.context import (GRAPH_MODE as GRAPH_MODE, PYNATIVE_MODE as PYNATIVE_MODE,
                            ParallelMode as ParallelMode,
                            get_auto_parallel_context as get_auto_parallel_context,
                            get_context as get_context, get_seed as get_seed,
                            reset_auto_parallel_context as reset_auto_parallel_context,
                            set_auto_parallel_context as set_auto_parallel_context,
                            set_context as set_context, set_seed as set_seed)
from sluice.common import dtype as dtype
from sluice.train import (Model as Model, data_sink as data_sink,
                          load_checkpoint as load_checkpoint,
                          load_param_into_net as load_param_into_net,
                          save_checkpoint as save_checkpoint)

__version__: str

uint8: str
int32: str
uint32: str
int64: str
float32: str
float64: str


class Tensor:
    """A dense, contiguous tensor made by sluice, sharing its memory with
    numpy (buffer protocol) and DLPack consumers."""

    def __init__(self, array: Any) -> None: ...
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def ndim(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def readonly(self) -> bool: ...
    def __len__(self) -> int: ...
    def __dlpack__(self, *, stream: Optional[int] = ...,
                   max_version: Optional[Tuple[int, int]] = ...,
                   dl_device: Optional[Tuple[int, int]] = ...,
                   copy: Optional[bool] = ...) -> Any: ...
    def __dlpack_device__(self) -> Tuple[int, int]: ...
    def data_ptr(self) -> int: ...
    def asnumpy(self) -> Any: ...
    def item(self) -> Any: ...
    def argmax(self, axis: Optional[int] = ..., keepdims: bool = ...) -> "Tensor": ...
    def __getitem__(self, key: Any) -> "Tensor": ...
    def __int__(self) -> int: ...
    def __float__(self) -> float: ...
    def __index__(self) -> int: ...
