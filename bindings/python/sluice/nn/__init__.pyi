"""Type stubs of sluice.nn."""
from typing import Any, Dict, Iterable, List, Tuple


from sluice.nn.cell import Cell as Cell, Parameter as Parameter
from sluice.nn.layers import (Conv2d as Conv2d, Dense as Dense, Flatten as Flatten,
                              MaxPool2d as MaxPool2d, ReLU as ReLU,
                              SequentialCell as SequentialCell)


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
    def construct(self, logits: Any, labels: Any) -> Any: ...


class CrossEntropyLoss(SoftmaxCrossEntropyWithLogits):
    ignore_index: int
    def __init__(self, weight: None = ..., ignore_index: int = ..., reduction: str = ...,
                 label_smoothing: float = ...) -> None: ...


class Optimizer(Cell):
    learning_rate: float
    @property
    def parameters(self) -> List[Parameter]: ...
    def __call__(self, grads: Tuple[Any, ...]) -> bool: ...


class Momentum(Optimizer):
    momentum: float
    def __init__(self, params: Iterable[Parameter], learning_rate: float,
                 momentum: float) -> None: ...


class SGD(Optimizer):
    def __init__(self, params: Iterable[Parameter], learning_rate: float = ...) -> None: ...


class WithLossCell(Cell):
    backbone: Cell
    loss_fn: SoftmaxCrossEntropyWithLogits
    def __init__(self, backbone: Cell, loss_fn: SoftmaxCrossEntropyWithLogits) -> None: ...
    def construct(self, data: Any, label: Any) -> Any: ...


class TrainOneStepCell(Cell):
    network: WithLossCell
    optimizer: Optimizer
    def __init__(self, network: WithLossCell, optimizer: Optimizer) -> None: ...
    def construct(self, data: Any, label: Any) -> Any: ...
from sluice.nn import wrap as wrap
from sluice.nn import metrics as metrics
from sluice.nn.metrics import Accuracy as Accuracy, Loss as Loss
