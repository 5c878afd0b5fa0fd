"""Type stubs of sluice.train.model."""
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

from sluice.dataset import Dataset
from sluice.nn.metrics import Accuracy as Accuracy, Loss as Loss
from sluice.nn import LeNet5, Optimizer, SoftmaxCrossEntropyWithLogits, TrainOneStepCell


class Model:
    network: LeNet5
    loss_fn: Optional[SoftmaxCrossEntropyWithLogits]
    optimizer: Optional[Optimizer]
    def __init__(self, network: Union[LeNet5, TrainOneStepCell],
                 loss_fn: Optional[SoftmaxCrossEntropyWithLogits] = ...,
                 optimizer: Optional[Optimizer] = ...,
                 metrics: Union[Iterable[str], Dict[str, Any], None] = ...) -> None: ...
    def train(self, epoch: int, train_dataset: Dataset, callbacks: Any = ...,
              dataset_sink_mode: bool = ..., sink_size: int = ...,
              autotune: bool = ..., devices: Optional[Sequence[str]] = ...) -> None: ...
    def eval(self, valid_dataset: Dataset, callbacks: Any = ...,
             dataset_sink_mode: bool = ...) -> Dict[str, float]: ...
    def stage_stats(self) -> Dict[str, Any]: ...
    def autotune_log(self) -> List[str]: ...
