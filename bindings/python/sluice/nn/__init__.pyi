"""Type stubs of sluice.nn."""
from typing import Any, Dict, Iterable, List, Tuple


class Parameter:
    name: str
    shape: Tuple[int, ...]
    requires_grad: bool
    @property
    def dtype(self) -> str: ...
    def asnumpy(self) -> Any: ...
    def set_data(self, data: Any) -> None: ...


class Cell:
    training: bool
    def set_train(self, mode: bool = ...) -> "Cell": ...


class LeNet5(Cell):
    num_class: int
    num_channel: int
    batch_size: int
    def __init__(self, num_class: int = ..., num_channel: int = ...,
                 batch_size: int = ...) -> None: ...
    def trainable_params(self) -> List[Parameter]: ...
    def parameters_dict(self) -> Dict[str, Parameter]: ...


class SoftmaxCrossEntropyWithLogits(Cell):
    sparse: bool
    reduction: str
    def __init__(self, sparse: bool = ..., reduction: str = ...) -> None: ...


class Optimizer(Cell):
    parameters: List[Parameter]
    learning_rate: float


class Momentum(Optimizer):
    momentum: float
    def __init__(self, params: Iterable[Parameter], learning_rate: float,
                 momentum: float) -> None: ...


class SGD(Optimizer):
    def __init__(self, params: Iterable[Parameter], learning_rate: float = ...) -> None: ...


class WithLossCell(Cell):
    backbone: LeNet5
    loss_fn: SoftmaxCrossEntropyWithLogits
    def __init__(self, backbone: LeNet5, loss_fn: SoftmaxCrossEntropyWithLogits) -> None: ...


class TrainOneStepCell(Cell):
    network: WithLossCell
    optimizer: Optimizer
    def __init__(self, network: WithLossCell, optimizer: Optimizer) -> None: ...
